#!/usr/bin/env python3
"""The agent's finding and writing tools (docs/protocol.md, docs/mcp.md),
each through the daemon API, the MCP server (embedded and through a
vectora-sandboxd) and the CLI: env on terminal and process_start reaches
that command and not the next; binary writes (content_base64) round trip
with NUL bytes. TAP."""
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
        return vtest.run_cases(tap, [t_env_reaches_one_command, t_base64_write_round_trip], "vectora-find-")
    finally:
        for d in _daemon:
            d.stop()


if __name__ == "__main__":
    sys.exit(main())
