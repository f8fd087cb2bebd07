#!/usr/bin/env python3
"""The approval record's fsyncs run off the daemon's event loop (issue 29).

A workspace seen for the first time has its approved policy recorded; the
record's fsyncs run on the thread pool, the jail starts meanwhile, and the
workspace's calls reach the worker only once the record is durable. The
daemon runs with tests/helpers/fsync-gate.c preloaded: its fsyncs wait
while a gate file exists, or fail with EIO while a fail file exists. The
test holds the sync as long as it likes, so nothing here depends on timing
(the joins' limits only keep a hang from lasting forever)."""
import os
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from vtest import BUILD, CLI, DAEMON, Daemon, Tap, check, make_ws, run_cases  # noqa: E402

SANDBOX = '[sandbox]\nmask = [".env"]\n'
SHIM = os.path.join(BUILD, "tests/helpers/vs-fsync-gate.so")
HANG = 120  # seconds: a guard against a hang, not a timed assertion


def daemon(tmp, name, gate=None, fail=None):
    state = os.path.join(tmp, name + "-state")
    env = dict(os.environ, LD_PRELOAD=SHIM)
    # A sanitizer build's runtime would refuse a library loaded before it.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
    if gate:
        env["VS_FSYNC_GATE"] = gate
    if fail:
        env["VS_FSYNC_FAIL"] = fail
    return Daemon(tmp, name, extra=("--state-dir", state), env=env)


def wait_for(what, cond):
    for _ in range(HANG * 100):
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError("never: " + what)


def call_in_thread(d, req):
    out = {}

    def run():
        try:
            out["r"] = d.call(req)
        except Exception as e:  # noqa: BLE001: reported by the case
            out["r"] = {"exception": repr(e)}

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def t_sync_does_not_hold_the_loop(tmp):
    """While a new workspace's record sync is held: another workspace's calls
    and status are answered, the new workspace's jail starts and becomes
    ready, and its first call does not run; released, it runs."""
    gate = os.path.join(tmp, "gate")
    d = daemon(tmp, "loop", gate=gate)
    try:
        b = make_ws(tmp, "loop-b", SANDBOX)
        r = d.call({"tool": "terminal", "workspace": b, "command": "echo b"})
        check(r.get("ok") and r["stdout"] == "b\n", r)
        open(gate, "w").close()
        a = make_ws(tmp, "loop-a", SANDBOX)
        ta, out = call_in_thread(d, {"tool": "terminal", "workspace": a, "command": "touch ran; echo a"})
        wait_for("the record's sync held", lambda: os.path.exists(gate + ".waiting"))
        # The loop is free: it answers the other workspace (its fsync on
        # the loop would have held this until the gate went).
        tb, outb = call_in_thread(d, {"tool": "terminal", "workspace": b, "command": "echo b2"})
        tb.join(HANG)
        check(not tb.is_alive(), "the other workspace's call waited for the held sync (the loop is blocked)")
        check(outb["r"].get("ok") and outb["r"]["stdout"] == "b2\n", outb["r"])
        # The jail starts meanwhile; the call waits for the record.
        wait_for("a's jail ready while its record is held",
                 lambda: ((d.ws_status(a) or {}).get("worker") or {}).get("state") == "ready")
        check(ta.is_alive() and "r" not in out, "a's call was answered before its record was durable: %s" % out)
        check(not os.path.exists(os.path.join(a, "ran")), "a's command ran before its record was durable")
        os.unlink(gate)
        ta.join(HANG)
        check(not ta.is_alive(), "a's call never ran after the sync was released")
        check(out["r"].get("ok") and out["r"]["stdout"] == "a\n", out["r"])
    finally:
        if os.path.exists(gate):
            os.unlink(gate)
        d.stop()


def t_sync_failure_fails_closed(tmp):
    """A record whose fsync fails refuses the workspace's calls with a clear
    error, again on the next call (the record on disk is not durable, it is
    not a baseline to serve from), and serves once the sync succeeds."""
    fail = os.path.join(tmp, "fail")
    d = daemon(tmp, "fail", fail=fail)
    try:
        open(fail, "w").close()
        ws = make_ws(tmp, "fail-ws", SANDBOX)
        for _ in range(2):
            r = d.call({"tool": "terminal", "workspace": ws, "command": "touch ran; echo hi"})
            check(not r.get("ok"), "served with its record not durable: %s" % r)
            msg = r["error"]["message"]
            check("state directory" in msg and os.strerror(5) in msg, r)
        check(not os.path.exists(os.path.join(ws, "ran")), "a command ran with its record not durable")
        os.unlink(fail)
        r = d.call({"tool": "terminal", "workspace": ws, "command": "echo hi"})
        check(r.get("ok") and r["stdout"] == "hi\n" and r["sandboxed"], "still refused once the sync succeeds: %s" % r)
    finally:
        if os.path.exists(fail):
            os.unlink(fail)
        d.stop()


TESTS = [t_sync_does_not_hold_the_loop, t_sync_failure_fails_closed]


def main():
    tap = Tap()
    for p in (DAEMON, CLI, SHIM):
        if not os.path.exists(p):
            tap.skip("approval-sync", "%s not built" % p)
            sys.exit(tap.finish())
    if not shutil.which("bwrap"):
        tap.skip("approval-sync", "bwrap not installed")
        sys.exit(tap.finish())
    sys.exit(run_cases(tap, TESTS, "vs-approval-sync-"))


if __name__ == "__main__":
    main()
