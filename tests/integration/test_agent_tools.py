#!/usr/bin/env python3
"""What an agent's tools need from the MCP server and the clients, each in
embedded mode (no daemon) and through a real vectora-sandboxd: read windows
that never split a UTF-8 character, reads by lines with line numbers,
results sized for a model's context, the notes an agent must see in the
text, errors that say how to succeed, and JSON-RPC errors that keep the
request's id. TAP."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, check  # noqa: E402
from vmcp import Mcp  # noqa: E402

tap = vtest.Tap()
TOML = '[sandbox]\nrw_paths = ["."]\nnetwork = false\n'
EURO = "€" * 100000  # 300 000 bytes
LINES = "".join("line %d é\n" % i for i in range(1, 101))

_daemon = []


def base_env():
    return {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}


def modes(tmp):
    """(mode, env): embedded (a socket nobody listens on), then through one
    daemon shared by the cases."""
    yield "embedded", dict(base_env(), VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "nobody.sock"))
    if not _daemon:
        sys.stdout.flush()  # the daemon's fork must not print what is buffered again
        _daemon.append(vtest.Daemon(tmp, "agent", audit=False, log_level=None))
    yield "daemon", dict(base_env(), VECTORA_SANDBOX_SOCKET=_daemon[0].sock)


def text_of(resp):
    res = resp.get("result") or {}
    return "".join(c.get("text", "") for c in res.get("content", [])[:1])


def session(ws, env, version="2025-06-18"):
    m = Mcp(ws, env)
    r = m.request("initialize", {"protocolVersion": version, "capabilities": {},
                                 "clientInfo": {"name": "test-agent-tools", "version": "1"}})
    check("result" in r, r)
    m.notify("notifications/initialized")
    return m, r["result"]


def api(mode, env, ws, req):
    """One daemon API call: over the socket, or the CLI's --json in embedded
    mode is not the API; through the daemon only."""
    c = vtest.Conn(env["VECTORA_SANDBOX_SOCKET"])
    try:
        return c.call(dict(req, workspace=ws))
    finally:
        c.close()


def t_read_never_splits_a_character(tmp):
    for mode, env in modes(tmp):
        ws = vtest.make_ws(tmp, "utf8-" + mode, TOML, {"euro.txt": EURO, "bin.dat": b"\xff\xfe" * 8})
        m, _ = session(ws, env)
        try:
            t = text_of(m.call("file_read", path="euro.txt", limit=10))
            check(t.startswith("€€€\n[") and "offset 9 " in t, "[%s] limit 10: %r" % (mode, t[:200]))
            t = text_of(m.call("file_read", path="euro.txt", offset=1, limit=10))
            check(t.startswith("€€\n[") and "offset 9 " in t, "[%s] offset 1: %r" % (mode, t[:200]))
            r = m.call("file_read", path="euro.txt", offset=299998)
            check(r["result"]["structuredContent"]["offset"] == 300000, "[%s] %r" % (mode, r))
            t = text_of(m.call("file_read", path="euro.txt", limit=262145))
            check(t.startswith("€€€") and "binary" not in t, "[%s] default window: %r" % (mode, t[-300:]))
            t = text_of(m.call("file_read", path="bin.dat"))
            check(t.startswith("[binary content"), "[%s] real binary: %r" % (mode, t))
        finally:
            m.close()
        if mode == "daemon":
            r = api(mode, env, ws, {"tool": "file_read", "path": "euro.txt", "offset": 1, "limit": 10})
            check(r.get("content") == "€€" and r["offset"] == 3 and r["length"] == 6 and not r["eof"], r)
            r = api(mode, env, ws, {"tool": "file_read", "path": "bin.dat"})
            check("content_base64" in r, r)


def t_read_by_lines(tmp):
    for mode, env in modes(tmp):
        ws = vtest.make_ws(tmp, "lines-" + mode, TOML, {"lines.txt": LINES})
        m, _ = session(ws, env)
        try:
            t = text_of(m.call("file_read", path="lines.txt", start_line=5, max_lines=3, line_numbers=True))
            check(t.startswith("     5\tline 5 é\n     6\tline 6 é\n     7\tline 7 é\n[") and "start_line 8" in t,
                  "[%s] %r" % (mode, t))
            t = text_of(m.call("file_read", path="lines.txt", offset=10, limit=10, line_numbers=True))
            check(t.startswith("     2\tline 2 é"), "[%s] by offset, numbered: %r" % (mode, t))
            t = text_of(m.call("file_read", path="lines.txt", start_line=200))
            check(not m.call("file_read", path="lines.txt", start_line=200)["result"]["isError"], t)
        finally:
            m.close()
        if mode == "daemon":
            r = api(mode, env, ws, {"tool": "file_read", "path": "lines.txt", "start_line": 99, "max_lines": 5})
            check(r.get("content") == "line 99 é\nline 100 é\n" and r["start_line"] == 99 and r["eof"], r)
        out = subprocess.run([CLI, "-w", ws] + (["--no-daemon"] if mode == "embedded" else []) +
                             ["read", "lines.txt", "--start-line", "10", "--max-lines", "2"], env=env, capture_output=True, text=True)
        check(out.returncode == 0 and out.stdout == "line 10 é\nline 11 é\n", "[%s] CLI: %r" % (mode, out))


def t_results_sized_for_a_model(tmp):
    capped = TOML + "[sandbox.limits]\nmax_output = 4096\n"
    for mode, env in modes(tmp):
        ws = vtest.make_ws(tmp, "size-" + mode, TOML, {"euro.txt": EURO})
        m, _ = session(ws, env)
        try:
            t = text_of(m.call("terminal", command="seq 1 2000000"))  # 14.9 MB
            check(len(t.encode()) < 26000 and t.startswith("1\n2\n") and "2000000\n" in t
                  and "output truncated to 24576 bytes" in t and "file_read" in t, "[%s] %d: %r" % (mode, len(t), t[-600:]))
            t = text_of(m.call("terminal", command="seq 1 2000000", max_output=2000))
            check(len(t.encode()) < 3000 and "2000000\n" in t, "[%s] max_output 2000: %d" % (mode, len(t)))
            t = text_of(m.call("terminal", command="seq 1 100; seq 1 100000 >&2", max_output=3000))
            check(t.startswith("1\n2\n") and "\n100\n[stderr]\n1\n" in t and "100000\n" in t and len(t) < 4000,
                  "[%s] the streams share: %r" % (mode, t))
            t = text_of(m.call("file_read", path="euro.txt"))
            check(len(t.encode()) < 25000 and "call file_read with offset 24576" in t, "[%s] %d" % (mode, len(t)))
        finally:
            m.close()
        ws = vtest.make_ws(tmp, "capped-" + mode, capped, {})
        m, _ = session(ws, env)
        try:
            t = text_of(m.call("terminal", command="seq 1 100000", max_output=100000))
            check(len(t) < 5000 and "100000\n" in t, "[%s] the policy caps max_output: %d" % (mode, len(t)))
        finally:
            m.close()
        out = subprocess.run([CLI, "-w", ws] + (["--no-daemon"] if mode == "embedded" else []) +
                             ["run", "--max-output", "100", "seq 1 1000"], env=env, capture_output=True, text=True)
        check(out.returncode == 0 and len(out.stdout) < 200 and out.stdout.startswith("1\n")
              and out.stdout.endswith("1000\n") and "omitted" in out.stdout, "[%s] CLI: %r" % (mode, out))


def t_notes_in_the_text(tmp):
    """A capped timeout and a pending loosening reach the text under every
    revision; through the daemon, so do the proxy's refusals, and Node is
    told to use the proxy."""
    toml = TOML + 'mask = [".env"]\n[sandbox.limits]\ntimeout = 2\n'
    for mode, env in modes(tmp):
        for version in ("2024-11-05", "2025-03-26", "2025-06-18"):
            ws = vtest.make_ws(tmp, "notes-%s-%s" % (mode, version), toml, {".env": "SECRET=1\n"})
            m, _ = session(ws, env, version)
            try:
                t = text_of(m.call("terminal", command="sleep 3", timeout=100))
                check("[timeout capped at 2 s by the workspace's [sandbox.limits] timeout]" in t,
                      "[%s %s] %r" % (mode, version, t))
                with open(os.path.join(ws, "vectora.toml"), "w") as f:
                    f.write(TOML + "[sandbox.limits]\ntimeout = 2\n")
                t = text_of(m.call("terminal", command="true"))
                check("\n[policy pending: " in t and "vectora-sandbox allow" in t, "[%s %s] %r" % (mode, version, t))
            finally:
                m.close()
        if mode != "daemon":
            continue
        ws = vtest.make_ws(tmp, "net-" + mode, '[sandbox]\nrw_paths = ["."]\nnetwork = ["allowed.test"]\n', {})
        m, _ = session(ws, env, "2024-11-05")
        try:
            t = text_of(m.call("terminal", command="echo $NODE_USE_ENV_PROXY; curl -sS -o /dev/null http://denied.test/x"))
            if "sandbox_unavailable" in t:
                raise vtest.Skip("this daemon cannot serve a network allowlist here: " + t)
            check(t.startswith("1\n") and "\n[network: the proxy refused denied.test:80 (" in t
                  and "network = [...]" in t, "[%s] %r" % (mode, t))
        finally:
            m.close()


def t_errors_say_how_to_succeed(tmp):
    for mode, env in modes(tmp):
        ws = vtest.make_ws(tmp, "err-" + mode, TOML, {"dos.txt": b"one\r\ntwo\r\nthree\r\n"})
        m, _ = session(ws, env)
        try:
            r = m.call("file_write", path="new/dir/a.txt", content="hi\n")
            check(not r["result"]["isError"] and open(os.path.join(ws, "new/dir/a.txt")).read() == "hi\n",
                  "[%s] create_parents by default: %r" % (mode, r))
            t = text_of(m.call("file_write", path="other/a.txt", content="hi\n", create_parents=False))
            check("not_found" in t and "create_parents" in t, "[%s] %r" % (mode, t))
            r = m.call("file_edit", path="dos.txt", old_string="one\ntwo\n", new_string="1\n2\n")
            check(not r["result"]["isError"], "[%s] %r" % (mode, r))
            with open(os.path.join(ws, "dos.txt"), "rb") as f:
                got = f.read()
            check(got == b"1\r\n2\r\nthree\r\n", "[%s] %r" % (mode, got))
        finally:
            m.close()
        if mode == "daemon":
            r = api(mode, env, ws, {"tool": "file_write", "path": "third/a.txt", "content": "x"})
            check(r["error"]["code"] == "not_found" and "create_parents" in r["error"]["message"], r)


def t_jsonrpc_answers_what_it_cannot_carry(tmp):
    """The transport is the same in both modes: embedded."""
    mode, env = next(modes(tmp))
    ws = vtest.make_ws(tmp, "rpc", TOML, {})
    m, res = session(ws, env, "2024-11-05")
    try:
        ins = res.get("instructions", "")
        check(ins.startswith("These tools act on the workspace " + ws + " inside its sandbox") and
              ins.endswith("is final: report it, do not try to get around it."), ins)
        for n, text in ((7, "x\\u0000y"), (8, "x\\ud800y"), ("s", "x\\udc00\\ud800y")):
            line = ('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"file_write",'
                    '"arguments":{"path":"a.txt","content":"%s"}}}' % (json.dumps(n), text))
            m.send_line(line)
            r = m.recv()
            check(r.get("id") == n and r.get("error", {}).get("code") == -32602 and
                  "\\u0000" in r["error"]["message"], (line, r))
        # A pair is one character, and an escaped backslash before "u0000" is text.
        r = m.call("file_write", path="ok.txt", content="\U0001f600 \\u0000")
        check(not r["result"]["isError"], r)
        with open(os.path.join(ws, "ok.txt"), encoding="utf-8") as f:
            check(f.read() == "\U0001f600 \\u0000", "content")
        m.send_line('{"jsonrpc":"2.0","id":9,"method":"ping"')
        r = m.recv()
        check(r.get("id") is None and r["error"]["code"] == -32700, r)
    finally:
        m.close()


def main():
    try:
        return vtest.run_cases(tap, [t_read_never_splits_a_character, t_read_by_lines, t_results_sized_for_a_model,
                                    t_notes_in_the_text, t_errors_say_how_to_succeed,
                                    t_jsonrpc_answers_what_it_cannot_carry], "vectora-agent-")
    finally:
        for d in _daemon:
            d.stop()


if __name__ == "__main__":
    sys.exit(main())
