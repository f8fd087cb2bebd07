#!/usr/bin/env python3
"""The agent's finding and writing tools (docs/protocol.md, docs/mcp.md),
each through the daemon API, the MCP server (embedded and through a
vectora-sandboxd) and the CLI: list_dir (names, types, sizes, bounded,
masked names left out, a symlink out of the workspace listed, not
followed); glob and grep in the worker (masked files never listed or
read, symlinks not followed, .git and binary files skipped, each limit hit
and said); env on terminal and process_start reaches that command and not
the next; binary writes (content_base64) round trip with NUL bytes. TAP."""
import base64
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, check  # noqa: E402
from vmcp import Mcp  # noqa: E402

tap = vtest.Tap()
TOML = '[sandbox]\nrw_paths = ["."]\nnetwork = false\nmask = [".env", "*.pem"]\n'
BLOB = bytes(range(256)) + b"\x00\x00end\x00"

_daemon = []


def base_env():
    return {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}


def modes(tmp):
    """(mode, env): embedded (a socket nobody listens on), then through one
    daemon shared by the cases."""
    yield "embedded", dict(base_env(), VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "nobody.sock"))
    if not _daemon:
        sys.stdout.flush()  # the daemon's fork must not print what is buffered again
        _daemon.append(vtest.Daemon(tmp, "find", audit=False, log_level=None))
    yield "daemon", dict(base_env(), VECTORA_SANDBOX_SOCKET=_daemon[0].sock)


def text_of(resp):
    res = resp.get("result") or {}
    return "".join(c.get("text", "") for c in res.get("content", [])[:1])


def session(ws, env):
    m = Mcp(ws, env)
    r = m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "test-find-tools", "version": "1"}})
    check("result" in r, r)
    m.notify("notifications/initialized")
    return m


def api(env, ws, req):
    c = vtest.Conn(env["VECTORA_SANDBOX_SOCKET"])
    try:
        return c.call(dict(req, workspace=ws))
    finally:
        c.close()


def cli(env, mode, ws, *args):
    return subprocess.run([CLI, "-w", ws] + (["--no-daemon"] if mode == "embedded" else []) + list(args),
                          env=env, capture_output=True, text=True)


def listing_ws(tmp, name):
    files = {"README.md": "hello\n", "src/main.c": "int main;\n", ".env": "SECRET=1\n", "key.pem": "PEM\n",
             "sub/deeper/.env": "S=2\n"}
    files.update({"many/f%04d.txt" % i: "x" * i for i in range(300)})
    ws = vtest.make_ws(tmp, name, TOML, files)
    os.symlink("/etc", os.path.join(ws, "etc-link"))
    return ws


def t_list_dir(tmp):
    for mode, env in modes(tmp):
        ws = listing_ws(tmp, "ls-" + mode)
        m = session(ws, env)
        try:
            r = m.call("list_dir")
            t = text_of(r)
            check(not r["result"]["isError"], "[%s] %r" % (mode, r))
            # The jail's placeholders (.mcp.json, .envrc/, ...) are listed as it shows them.
            check("\nREADME.md\t6\netc-link@\nmany/\n" in t and "\nsrc/\nsub/\n" in t, "[%s] %r" % (mode, t))
            names = [ln.split("\t")[0] for ln in t.split("\n")]
            check(".env" not in names and "key.pem" not in names and "SECRET" not in t, "[%s] masked names: %r" % (mode, t))
            sc = r["result"]["structuredContent"]
            check(sc["total"] == len(sc["entries"]) and not sc["truncated"], "[%s] %r" % (mode, sc))
            t = text_of(m.call("list_dir", path="many"))
            check(t.count(".txt\t") == 200 and "[200 of 300 entries shown" in t and t.startswith("f0000.txt\t0\n"),
                  "[%s] MCP default 200: %r" % (mode, t[-200:]))
            t = text_of(m.call("list_dir", path="many", max_entries=2))
            check(t == "f0000.txt\t0\nf0001.txt\t1\n[2 of 300 entries shown: raise max_entries (at most 2000), "
                  "or list a subdirectory]\n" + t.split("\n", 3)[3], "[%s] %r" % (mode, t))
            t = text_of(m.call("list_dir", path="sub/deeper"))
            check(t.startswith("[0 entries in sub/deeper]"), "[%s] only a masked name: %r" % (mode, t))
            r = m.call("list_dir", path="etc-link")
            check(r["result"]["isError"], "[%s] a symlink out of the workspace is not followed: %r" % (mode, text_of(r)))
            r = m.call("list_dir", path=".env")
            check(r["result"]["isError"] and "denied" in text_of(r), "[%s] %r" % (mode, text_of(r)))
            r = m.call("list_dir", max_entries=2001)
            check(r["result"]["isError"] and "max_entries" in text_of(r), "[%s] %r" % (mode, text_of(r)))
        finally:
            m.close()
        if mode == "daemon":
            r = api(env, ws, {"tool": "list_dir", "path": "many", "max_entries": 3})
            check(r["ok"] and [e["name"] for e in r["entries"]] == ["f0000.txt", "f0001.txt", "f0002.txt"]
                  and r["entries"][2] == {"name": "f0002.txt", "type": "file", "size": 2}
                  and r["total"] == 300 and r["truncated"], r)
            r = api(env, ws, {"tool": "list_dir"})
            check(r["ok"] and {"name": "src", "type": "dir"} in r["entries"] and len(r["entries"]) == r["total"], r)
            r = api(env, ws, {"tool": "list_dir", "max_entries": 5000})
            check(r["error"]["code"] == "bad_request", r)
        out = cli(env, mode, ws, "ls")
        check(out.returncode == 0 and "\nREADME.md\t6\netc-link@\nmany/\n" in out.stdout and ".env\n" not in out.stdout,
              "[%s] CLI: %r" % (mode, out))
        out = cli(env, mode, ws, "ls", "many", "--max-entries", "1")
        check(out.returncode == 0 and out.stdout == "f0000.txt\t0\n" and "1 of 300" in out.stderr, "[%s] CLI: %r" % (mode, out))


def find_ws(tmp, name):
    files = {"src/a.c": "int hello;\nfoo\nHELLO again\nbar\n", "src/deep/x/y.c": "hello deep\n",
             "src/notes.txt": "hello text\n", ".env": "SECRET=hello\n", "certs/key.pem": "SECRET hello pem\n",
             "bin.dat": b"hello\x00SECRET", ".git/config": "hello SECRET\n"}
    files.update({"many/f%03d.txt" % i: "match %d\n" % i for i in range(50)})
    ws = vtest.make_ws(tmp, name, TOML, files)
    os.symlink("/etc", os.path.join(ws, "etc-link"))
    return ws


def t_glob(tmp):
    for mode, env in modes(tmp):
        ws = find_ws(tmp, "glob-" + mode)
        m = session(ws, env)
        try:
            t = text_of(m.call("glob", pattern="**/*.c"))
            check(t.startswith("src/a.c\nsrc/deep/x/y.c\n[2 paths]"), "[%s] %r" % (mode, t))
            t = text_of(m.call("glob", pattern="*.pem"))
            check(t.startswith("[0 paths]"), "[%s] a masked name is not found: %r" % (mode, t))
            t = text_of(m.call("glob", pattern="*"))
            names = t.split("\n")
            check("etc-link@" in names and "src/deep/x/" in names and ".env" not in names and "certs/key.pem" not in names
                  and not any(n.startswith("etc-link/") or n.startswith(".git/") for n in names),
                  "[%s] masked left out, the symlink listed and not followed, .git not entered: %r" % (mode, t))
            t = text_of(m.call("glob", pattern="f*.txt", path="many", max_results=5))
            check(t.startswith("f000.txt\nf001.txt\nf002.txt\nf003.txt\nf004.txt\n[5 paths; stopped at the limit: "
                               "raise max_results"), "[%s] %r" % (mode, t))
            r = m.call("glob", pattern="[z-a]")
            check(r["result"]["isError"] and "pattern" in text_of(r), "[%s] a bad glob: %r" % (mode, text_of(r)))
            r = m.call("glob", pattern="*", path="etc-link")
            check(r["result"]["isError"] and "denied" in text_of(r), "[%s] %r" % (mode, text_of(r)))
        finally:
            m.close()
        if mode == "daemon":
            r = api(env, ws, {"tool": "glob", "pattern": "*.txt", "max_results": 3})
            check(r["ok"] and r["truncated"] and r["limit"] == "max_results" and len(r["paths"]) == 3
                  and r["paths"][0] == {"path": "many/f000.txt", "type": "file", "size": 8}, r)
            r = api(env, ws, {"tool": "glob", "pattern": "*", "max_files": 4})
            check(r["ok"] and r["limit"] == "max_files" and r["entries_visited"] == 4, r)
            r = api(env, ws, {"tool": "glob", "pattern": "*", "max_results": 5001})
            check(r["error"]["code"] == "bad_request", r)
        out = cli(env, mode, ws, "glob", "**/*.c")
        check(out.returncode == 0 and out.stdout == "src/a.c\nsrc/deep/x/y.c\n" and "[2 paths]" in out.stderr,
              "[%s] CLI: %r" % (mode, out))


def t_grep(tmp):
    for mode, env in modes(tmp):
        ws = find_ws(tmp, "grep-" + mode)
        m = session(ws, env)
        try:
            t = text_of(m.call("grep", pattern="SECRET"))
            check(t.startswith("[0 matching lines in 0 files;") and "1 binary" in t,
                  "[%s] masked files, .git and a binary file are not searched: %r" % (mode, t))
            t = text_of(m.call("grep", pattern="hello", ignore_case=True, context=1, path="src"))
            check(t.startswith("a.c:1:int hello;\na.c-2-foo\na.c:3:HELLO again\na.c-4-bar\n--\n"
                               "deep/x/y.c:1:hello deep\n--\nnotes.txt:1:hello text\n[4 matching lines in 3 files; 3 searched]"),
                  "[%s] %r" % (mode, t))
            t = text_of(m.call("grep", pattern="hel+o", glob="**/*.c"))
            check(t.startswith("src/a.c:1:int hello;\nsrc/deep/x/y.c:1:hello deep\n[2 matching lines in 2 files; 2 searched]"),
                  "[%s] glob filter: %r" % (mode, t))
            t = text_of(m.call("grep", pattern="l+o", fixed=True))
            check(t.startswith("[0 matching lines"), "[%s] fixed: %r" % (mode, t))
            t = text_of(m.call("grep", pattern="match", path="many", max_matches=3))
            check(t.startswith("f000.txt:1:match 0\nf001.txt:1:match 1\nf002.txt:1:match 2\n[3 matching lines in 3 files; "
                               "4 searched; stopped at the limit: raise max_matches"), "[%s] %r" % (mode, t))
            t = text_of(m.call("grep", pattern="hello", path="src/a.c"))
            check(t.startswith("a.c:1:int hello;\n[1 matching line in 1 file; 1 searched]"), "[%s] one file: %r" % (mode, t))
            for path in (".env", "certs/key.pem", "etc-link", "etc-link/passwd"):
                r = m.call("grep", pattern="root", path=path)
                check(r["result"]["isError"] and "denied" in text_of(r), "[%s] %s: %r" % (mode, path, text_of(r)))
            r = m.call("grep", pattern="a(")
            check(r["result"]["isError"] and "pattern" in text_of(r), "[%s] a bad regex: %r" % (mode, text_of(r)))
        finally:
            m.close()
        if mode == "daemon":
            r = api(env, ws, {"tool": "grep", "pattern": "match", "path": "many", "max_files": 2})
            check(r["ok"] and r["limit"] == "max_files" and r["files_searched"] == 2 and r["match_count"] == 2, r)
            r = api(env, ws, {"tool": "grep", "pattern": "match", "path": "many", "max_bytes": 20})
            check(r["ok"] and r["limit"] == "max_bytes" and r["match_count"] == 2, r)
            r = api(env, ws, {"tool": "grep", "pattern": "match", "max_bytes": 20})
            check(r["ok"] and r["limit"] == "max_bytes", r)
            r = api(env, ws, {"tool": "grep", "pattern": "hello", "path": "src/a.c", "context": 1})
            check(r["ok"] and r["matches"] == [{"path": "a.c", "line": 1, "text": "int hello;", "match": True},
                                               {"path": "a.c", "line": 2, "text": "foo", "match": False}]
                  and not r["truncated"], r)
            r = api(env, ws, {"tool": "grep", "pattern": "x", "context": 11})
            check(r["error"]["code"] == "bad_request", r)
        out = cli(env, mode, ws, "grep", "-i", "HELLO", "src", "-g", "*.txt")
        check(out.returncode == 0 and out.stdout == "notes.txt:1:hello text\n" and "1 matching line" in out.stderr,
              "[%s] CLI: %r" % (mode, out))
        out = cli(env, mode, ws, "grep", "SECRET")
        check(out.returncode == 1 and out.stdout == "", "[%s] CLI, nothing found: %r" % (mode, out))


def t_env_reaches_one_command(tmp):
    for mode, env in modes(tmp):
        ws = vtest.make_ws(tmp, "env-" + mode, TOML, {})
        m = session(ws, env)
        try:
            t = text_of(m.call("terminal", command="echo \"[$FIND_VAR]\"", env={"FIND_VAR": "one two"}))
            check(t.startswith("[one two]\n"), "[%s] MCP terminal env: %r" % (mode, t))
            t = text_of(m.call("terminal", command="echo \"[$FIND_VAR]\""))
            check(t.startswith("[]\n"), "[%s] not in the next command: %r" % (mode, t))
            r = m.call("terminal", command="true", env={"A=B": "x"})
            check(r["result"]["isError"] and "env" in text_of(r), "[%s] a name with '=': %r" % (mode, r))
            if mode == "daemon":
                r = m.call("process_start", command="echo \"[$FIND_VAR]\"", env={"FIND_VAR": "bg"})
                pid = r["result"]["structuredContent"]["process"]
                t = text_of(m.call("process_output", process=pid, wait_ms=5000))
                check(t.startswith("[bg]\n"), "[%s] MCP process_start env: %r" % (mode, t))
        finally:
            m.close()
        if mode == "daemon":
            r = api(env, ws, {"tool": "terminal", "command": "echo \"[$FIND_VAR]\"", "env": {"FIND_VAR": "api"}})
            check(r["ok"] and r["stdout"] == "[api]\n", r)
            r = api(env, ws, {"tool": "terminal", "command": "true", "env": {"A=B": "x"}})
            check(r["error"]["code"] == "bad_request", r)
        out = cli(env, mode, ws, "run", "--env", "FIND_VAR=cli", "echo \"[$FIND_VAR]\"")
        check(out.returncode == 0 and out.stdout == "[cli]\n", "[%s] CLI: %r" % (mode, out))


def t_base64_write_round_trip(tmp):
    b64 = base64.b64encode(BLOB).decode()
    for mode, env in modes(tmp):
        ws = vtest.make_ws(tmp, "b64-" + mode, TOML, {})
        m = session(ws, env)
        try:
            r = m.call("file_write", path="bin/blob.dat", content_base64=b64)
            check(not r["result"]["isError"], "[%s] %r" % (mode, r))
            with open(os.path.join(ws, "bin/blob.dat"), "rb") as f:
                check(f.read() == BLOB, "[%s] MCP: the bytes as sent, NULs included" % mode)
            r = m.call("file_write", path="x", content="a", content_base64="YQ==")
            check(r["result"]["isError"] and "content_base64" in text_of(r), "[%s] both: %r" % (mode, r))
            r = m.call("file_write", path="x", content_base64="not base64!")
            check(r["result"]["isError"] and "base64" in text_of(r), "[%s] bad base64: %r" % (mode, r))
        finally:
            m.close()
        if mode == "daemon":
            r = api(env, ws, {"tool": "file_write", "path": "api.dat", "content_base64": b64})
            check(r["ok"] and r["size"] == len(BLOB), r)
            r = api(env, ws, {"tool": "file_read", "path": "api.dat"})
            check(base64.b64decode(r["content_base64"]) == BLOB, "API round trip")


def main():
    try:
        return vtest.run_cases(tap, [t_list_dir, t_glob, t_grep, t_env_reaches_one_command, t_base64_write_round_trip], "vectora-find-")
    finally:
        for d in _daemon:
            d.stop()


if __name__ == "__main__":
    sys.exit(main())
