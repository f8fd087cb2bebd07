#!/usr/bin/env python3
"""Cancellation end to end (docs/protocol.md, "cancel" and "Connection"):
a command stopped by the daemon API's cancel, by its client's connection
closing (not when the call asked "detach": true), by MCP's
notifications/cancelled (through the daemon and with --no-daemon; no
response for it, and a ping answered while a command runs), by Ctrl-C of
`vectora-sandbox run`, and by the Python client's timeout. Each command is
`sleep N` with an N of its own, found on the host through /proc: the jail's
processes are the host's too. TAP output."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, SRC, Daemon, Rewriting, Tap, check, make_ws, run_cases, sleepers, wait_for  # noqa: E402
from vmcp import Mcp  # noqa: E402

tap = Tap()
SANDBOX = "[sandbox]\nenabled = true\n"




def started(n, t=20):
    check(wait_for(lambda: sleepers(n), t), "sleep %s did not start" % n)


GONE_S = 1.0  # issue 30: a cancelled command is gone within a second


def gone(n, t0, bound=GONE_S):
    """sleep N is gone from the host within bound seconds of t0 (when the
    cancel was sent, the connection closed, the client's timeout fired).
    Waited for up to 5 s so that a miss says by how much; the time taken is
    noted in the TAP output."""
    while sleepers(n) and time.monotonic() - t0 < 5:
        time.sleep(0.01)
    dt = time.monotonic() - t0
    tap.note("sleep %s gone %.3f s after the cancel" % (n, dt))
    check(not sleepers(n) and dt < bound, "sleep %s still ran %.2f s after the cancel (bound %.1f s)" % (n, dt, bound))


def replies(c, n):
    """The next n replies on c, by id (a call and its cancel answer in
    either order)."""
    got = {}
    while len(got) < n:
        m = c.recv()
        got[m["id"]] = m
    return got


def env_for(d=None):
    e = dict(os.environ)
    if d:
        e["VECTORA_SANDBOX_SOCKET"] = d.sock
    else:
        e["VECTORA_SANDBOX_SOCKET"] = "/nonexistent/vectora-sandbox.sock"
    return e


def t_api_cancel(tmp):
    """The daemon API's cancel by id: the call answers cancelled, the
    command is gone, cancel says found; an unknown id is not found."""
    ws = make_ws(tmp, "api", SANDBOX)
    with Daemon(tmp, "api") as d:
        c = d.conn()
        c.send({"id": 7, "tool": "terminal", "workspace": ws, "command": "sleep 3001"})
        started(3001)
        t0 = time.monotonic()
        c.send({"id": 8, "tool": "cancel", "target": 7})
        got = replies(c, 2)
        check(got[8].get("ok") and got[8].get("found") is True, "cancel's reply: %r" % got[8])
        check(not got[7]["ok"] and got[7]["error"]["code"] == "cancelled", "the call's reply: %r" % got[7])
        gone(3001, t0)
        r = c.call({"tool": "cancel", "target": 12345})
        check(r["ok"] and r["found"] is False, "an unknown target: %r" % r)
        r = c.call({"tool": "cancel", "target": [1]})
        check(not r["ok"] and r["error"]["code"] == "bad_request", "a bad target: %r" % r)
        # A call still waiting for its workspace's worker (a first call
        # starts it) is dropped: nothing ran.
        ws2 = make_ws(tmp, "api-queued", SANDBOX)
        c.s.sendall(json.dumps({"id": 20, "tool": "terminal", "workspace": ws2, "command": "sleep 3011"}).encode() +
                    b"\n" + json.dumps({"id": 21, "tool": "cancel", "target": 20}).encode() + b"\n")
        got = replies(c, 2)
        check(got[21].get("found") is True, "cancel's reply: %r" % got[21])
        check(got[20]["error"]["code"] == "cancelled" and "before it ran" in got[20]["error"]["message"],
              "the queued call's reply: %r" % got[20])
        check(not sleepers(3011), "the queued command ran")
        # The connection goes on: the next command runs.
        r = c.call({"tool": "terminal", "workspace": ws, "command": "echo after"})
        check(r["ok"] and r["stdout"] == "after\n", "a call after the cancel: %r" % r)
        c.close()
        audit = [json.loads(line) for line in open(d.audit)]
        check(any(a["target"] == "sleep 3001" and a["error_code"] == "cancelled" and
                  "cancelled by the client" in a["denial_reason"] for a in audit), "the cancelled call is audited")
        check(any(a["tool"] == "cancel" and a["target"] == {"request": 7} for a in audit), "the cancel is audited")


def t_cancel_while_config_settles(tmp):
    """A first call to a workspace whose vectora.toml the host keeps
    rewriting waits (on a timer, up to a second) for the file to settle.
    A cancel naming it finds it and it answers cancelled at once, nothing
    run (a waiting call whose connection closes: test_daemon's
    t_settling_config_holds_no_other). Before, a waiting
    call was not among its client's calls: the cancel answered found:
    false and the call went on (refused "keeps changing" after a second,
    or run once the file settled)."""
    w = None
    try:
        with Daemon(tmp, "settling") as d:
            # A writer the machine's load stalled past the settling time
            # leaves a settled file, which the daemon rightly reads (the
            # call then runs): such an attempt is void and made again
            # (noted); a cancel that does not find the waiting call fails
            # every attempt.
            for attempt in range(3):
                ws = make_ws(tmp, "settling-%d" % attempt, SANDBOX)
                w = Rewriting(os.path.join(ws, "vectora.toml"), SANDBOX)
                c = d.conn()
                c.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "touch ran"})
                time.sleep(0.3)
                t0 = time.monotonic()
                c.send({"id": 2, "tool": "cancel", "target": 1})
                got = replies(c, 2)
                took = time.monotonic() - t0
                c.close()
                gap = w.stop()
                if gap < 0.09:
                    break
                tap.note("attempt %d void: the writer stood still %.3f s" % (attempt + 1, gap))
            check(gap < 0.09, "the writer stalled in every attempt (longest pause %.3f s)" % gap)
            tap.note("a waiting call cancelled in %.3f s" % took)
            check(got[2].get("ok") and got[2].get("found") is True, "cancel's reply: %r" % got[2])
            check(not got[1]["ok"] and got[1]["error"]["code"] == "cancelled" and
                  "before it ran" in got[1]["error"]["message"], "the call's reply: %r" % got[1])
            check(took < 0.4, "the cancelled call answered after %.2f s" % took)
            time.sleep(0.2)
            check(not os.path.exists(os.path.join(ws, "ran")), "the cancelled call ran")
            c = d.conn()
            r = c.call({"tool": "terminal", "workspace": ws, "command": "echo after"})
            check(r["ok"] and r["stdout"] == "after\n" and r["sandboxed"], "a call once settled: %r" % r)
            c.close()
            audit = [json.loads(line) for line in open(d.audit)]
            check(any(a["workspace"] == ws and a["tool"] == "terminal" and a["error_code"] == "cancelled" and
                      "cancelled by the client" in a["denial_reason"] for a in audit), "the cancelled call is audited")
    finally:
        if w:
            w.stop()


def t_tree_left_the_group(tmp):
    """What a command started and moved out of its process group (setsid,
    a pipeline's setpgid) goes with it when a cancel or a timeout ends it:
    the worker stops the tree below the command, then kills it. Before,
    only the group was killed and these lived on in the jail."""
    ws = make_ws(tmp, "tree", SANDBOX)
    with Daemon(tmp, "tree") as d:
        c = d.conn()
        c.send({"id": 1, "tool": "terminal", "workspace": ws,
                "command": "setsid sleep 3021 </dev/null >/dev/null 2>&1 & "
                           "(set -m; sleep 3022 </dev/null >/dev/null 2>&1 &) ; sleep 3023"})
        started(3021)
        started(3023)
        t0 = time.monotonic()
        c.send({"id": 2, "tool": "cancel", "target": 1})
        got = replies(c, 2)
        check(got[1]["error"]["code"] == "cancelled", "the call's reply: %r" % got[1])
        gone(3023, t0)
        gone(3021, t0)
        # A timeout the same way (t0: when the 2 s limit ran out, measured
        # from the call sent, so a little early).
        t0 = time.monotonic() + 2
        r = c.call({"tool": "terminal", "workspace": ws, "timeout": 2,
                    "command": "setsid sleep 3024 </dev/null >/dev/null 2>&1 & sleep 3025"})
        check(r["ok"] and r["timed_out"], "the timed-out call: %r" % r)
        gone(3025, t0)
        gone(3024, t0)
        r = c.call({"tool": "terminal", "workspace": ws, "command": "echo after"})
        check(r["ok"] and r["stdout"] == "after\n", "a call after: %r" % r)
        c.close()


def t_close_cancels(tmp):
    """A client that closes its connection (exits, crashes) ends its
    command; one that asked "detach": true leaves it running; one that only
    half-closes still gets its result."""
    ws = make_ws(tmp, "close", SANDBOX)
    with Daemon(tmp, "close") as d:
        c = d.conn()
        c.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "sleep 3002"})
        started(3002)
        t0 = time.monotonic()
        c.close()
        gone(3002, t0)
        # Audited: the call, cancelled, and why.
        check(wait_for(lambda: any(a["target"] == "sleep 3002" and a["error_code"] == "cancelled" and
                                   "connection closed" in (a["denial_reason"] or "")
                                   for a in map(json.loads, open(d.audit))), 3),
              "the cancelled call's audit record")
        c = d.conn()
        c.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "sleep 4.003; echo done > detached.out",
                "detach": True})
        started("4.003")
        c.close()
        time.sleep(1.5)
        check(sleepers("4.003"), "a detached command was ended by its connection closing")
        # It runs to its end, audited as ok.
        out = os.path.join(ws, "detached.out")
        check(wait_for(lambda: os.path.exists(out), 10), "the detached command did not run to its end")
        check(wait_for(lambda: any(a["target"].startswith("sleep 4.003") and a["outcome"] == "ok"
                                   for a in map(json.loads, open(d.audit))), 3), "the detached call's audit record")
        c = d.conn()
        c.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "sleep 1; echo half"})
        import socket as sk
        c.s.shutdown(sk.SHUT_WR)
        m = c.recv()
        check(m["ok"] and m["stdout"] == "half\n", "a half-closed client's result: %r" % m)
        c.close()
        # Half-closed, then gone while its command runs: the command ends
        # too (the daemon looks every 200 ms; it was each second, and a close
        # just after a look left the command up to 1 s more).
        c = d.conn()
        c.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "sleep 3010"})
        started(3010)
        c.s.shutdown(sk.SHUT_WR)
        # Closed just after the daemon's look at 1 s (the worst moment when
        # it looked each second: gone ~1 s later); bound 0.5 s, room for a
        # loaded machine above the 200 ms.
        time.sleep(1.05)
        check(sleepers(3010), "a half-closed client's command was ended")
        t0 = time.monotonic()
        c.close()
        gone(3010, t0, 0.5)


def mcp_cancel(tmp, d, n, tag):
    """tools/call `sleep n`, a ping answered while it runs, then
    notifications/cancelled: the command is gone, no response with its id
    ever comes, and the server serves the next call."""
    ws = make_ws(tmp, "mcp-" + tag, SANDBOX)
    m = Mcp(ws, env_for(d), () if d else ("--no-daemon",))
    try:
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
        m.notify("notifications/initialized")
        m.send_line(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
                                "params": {"name": "terminal", "arguments": {"command": "sleep %d" % n}}}))
        started(n)
        t0 = time.monotonic()
        m.send_line(json.dumps({"jsonrpc": "2.0", "id": 101, "method": "ping"}))
        r = m.recv()
        dt = time.monotonic() - t0
        check(r.get("id") == 101 and r.get("result") == {}, "the ping's response: %r" % r)
        check(dt < 1, "the ping was answered in %.2f s while the command ran" % dt)
        tap.note("%s: ping answered in %.3f s while a command ran" % (tag, dt))
        # A call waiting behind the running one, cancelled first, never runs.
        m.send_line(json.dumps({"jsonrpc": "2.0", "id": 103, "method": "tools/call",
                                "params": {"name": "terminal", "arguments": {"command": "sleep %d" % (n + 500)}}}))
        m.notify("notifications/cancelled", {"requestId": 103})
        t0 = time.monotonic()
        m.notify("notifications/cancelled", {"requestId": 100, "reason": "the user pressed stop"})
        gone(n, t0)
        time.sleep(0.5)
        check(not sleepers(n + 500), "a call cancelled before it began ran")
        r = m.call("terminal", command="echo next")
        check(r.get("id") == m.next_id and not r["result"].get("isError"), "the call after the cancel: %r" % r)
        text = json.dumps(r["result"])
        check("next" in text, "the call after the cancel ran: %r" % r)
        # The next call's response came first, and none with id 100 before it.
        m.send_line(json.dumps({"jsonrpc": "2.0", "id": 102, "method": "ping"}))
        r = m.recv()
        check(r.get("id") == 102, "a response for the cancelled request: %r" % r)
        check("lost vectora-sandboxd" not in m.stderr(), "a cancel reported as a lost daemon: " + m.stderr())
    finally:
        m.close()


def mcp_disconnect(tmp, d, n, tag):
    """The client goes away (its pipes closed) while a call runs: the
    command is gone."""
    ws = make_ws(tmp, "mcpgone-" + tag, SANDBOX)
    m = Mcp(ws, env_for(d), () if d else ("--no-daemon",))
    try:
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
        m.send_line(json.dumps({"jsonrpc": "2.0", "id": 200, "method": "tools/call",
                                "params": {"name": "terminal", "arguments": {"command": "sleep %d" % n}}}))
        started(n)
        t0 = time.monotonic()
        m.p.stdin.close()
        m.p.stdout.close()
        gone(n, t0)
    finally:
        m.p.kill()
        m.p.wait()


def t_mcp_daemon(tmp):
    with Daemon(tmp, "mcp") as d:
        mcp_cancel(tmp, d, 3004, "daemon")
        mcp_disconnect(tmp, d, 3005, "daemon")


def t_mcp_embedded(tmp):
    mcp_cancel(tmp, None, 3006, "embedded")
    mcp_disconnect(tmp, None, 3007, "embedded")


def t_cli_sigint(tmp):
    """Ctrl-C of `vectora-sandbox run` through the daemon ends the command."""
    ws = make_ws(tmp, "cli", SANDBOX)
    with Daemon(tmp, "cli") as d:
        p = subprocess.Popen([CLI, "run", "-w", ws, "sleep 3008"], env=env_for(d), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            started(3008)
            t0 = time.monotonic()
            p.send_signal(signal.SIGINT)
            p.wait(10)
            gone(3008, t0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


def t_python_timeout(tmp):
    """The Python client's timeout= cancels the call: the command is gone."""
    sys.path.insert(0, os.path.join(SRC, "clients/python/src"))
    import vectora_sandbox
    ws = make_ws(tmp, "py", SANDBOX)
    with Daemon(tmp, "py") as d:
        with vectora_sandbox.Sandbox(socket=d.sock, workspace=ws, timeout=3) as sb:
            t0 = time.monotonic()
            try:
                sb.terminal("sleep 3009")
                raise AssertionError("the call returned")
            except vectora_sandbox.SandboxError as e:
                err = e
            check(time.monotonic() - t0 < 10, "the timeout took %.1f s" % (time.monotonic() - t0))
            gone(3009, t0 + 3)  # the client's timeout=3 ran out at t0 + 3
            check("cancelled" in str(err), "the timeout's message: %s" % err)
            r = sb.terminal("echo again")
            check(r.stdout == b"again\n", "the next call: %r" % r)


def main():
    return run_cases(tap, [t_api_cancel, t_cancel_while_config_settles, t_tree_left_the_group, t_close_cancels, t_mcp_daemon, t_mcp_embedded, t_cli_sigint, t_python_timeout], "vs-cancel-")


if __name__ == "__main__":
    sys.exit(main())
