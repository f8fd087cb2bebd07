#!/usr/bin/env python3
"""Attacks on the MCP server's calls served in parallel on one worker
(embedded, and through the daemon where the worker is the same): a process
in the jail that stalls the one-threaded worker stalls every call, their
cancels and the commands' timeouts, and with a call in flight the server
never exits, its jail with it, even after the client went away.

- tmp_lock_grab: a process in the jail watches the workspace with inotify
  and takes the lock of a write's temporary file the moment it appears
  (it is the jail's uid's file). The worker took that lock with a blocking
  flock(): the process won within a few writes and the worker, the server
  and the jail hung for good. Each write must now be answered.
- stalled_worker_client_gone: whatever stalls the worker (stopped from the
  host here), a client that went away has the embedded server end the
  worker after a grace and exit, with nothing of its jail left.
- stale_cancels: 64 cancels that came after their calls ended (a cancel
  racing the reply) made the server drop every later cancel of a call
  still queued: the call ran.
- undo_through_swapped_link: the undo of a refused apply_patch never
  writes through a link a command swapped in meanwhile (held).

TAP."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import Daemon, Tap, check, run_cases  # noqa: E402
from vmcp import Server  # noqa: E402

tap = Tap()
WRITES = 60
TOML = '[sandbox]\nrw_paths = ["."]\nnetwork = false\n[sandbox.limits]\ntimeout = 120\n'

# Takes the lock of every temporary file of a write it sees appear, and
# holds the first it gets until killed.
GRAB = r'''
import ctypes, fcntl, os, struct, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
libc.inotify_add_watch(fd, b".", 0x100)  # IN_CREATE
open("grab.ready", "w").close()
held = []
while True:
    buf = os.read(fd, 65536)
    i = 0
    while i + 16 <= len(buf):
        n = struct.unpack_from("iIII", buf, i)[3]
        name = buf[i + 16:i + 16 + n].split(b"\0")[0]
        i += 16 + n
        if not name.startswith(b".vectora-tmp-"):
            continue
        try:
            f = os.open(name, os.O_RDONLY)
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue
        held.append(f)
        with open("grab.got", "a") as out:
            out.write(name.decode() + "\n")
'''


def text_of(r):
    return "".join(c.get("text", "") for c in (r.get("result") or {}).get("content", [])[:1])


def call(s, tool, **args):
    return s.send("tools/call", {"name": tool, "arguments": args})


def modes(tmp):
    """(label, extra arguments, environment, daemon or None) for each mode."""
    env = dict(os.environ)
    env["VECTORA_SANDBOX_SOCKET"] = os.path.join(tmp, "nobody.sock")
    yield "embedded", ["--no-daemon"], env, None
    d = Daemon(tmp, "atk-mcp")
    try:
        denv = dict(os.environ)
        denv["VECTORA_SANDBOX_SOCKET"] = d.sock
        yield "daemon", [], denv, d
    finally:
        d.stop()


def tmp_lock_grab(tmp):
    for label, extra, env, _ in modes(tmp):
        ws = vtest.make_ws(tmp, "grab-" + label, TOML, {"a.txt": "one\n", "grab.py": GRAB})
        vtest.chown_tree(ws)
        s = Server(ws, env, extra)
        try:
            s.init()
            gid, _ = call(s, "terminal", command="exec python3 grab.py", timeout=120)
            check(vtest.wait_for(lambda: os.path.exists(os.path.join(ws, "grab.ready")), 20),
                  "[%s] the grabber did not start: %s" % (label, s.stderr()))
            got = lambda: os.path.exists(os.path.join(ws, "grab.got"))  # noqa: E731
            # Before the fix the grabber won within the first ten writes.
            for n in range(1, WRITES + 1):
                rid, _ = call(s, "file_write", path="w%d.txt" % (n % 4), content="round %d\n" % n)
                _, r = s.wait(rid, timeout=15)
                check(not r.get("result", {}).get("isError") and open(os.path.join(ws, "w%d.txt" % (n % 4))).read()
                      == "round %d\n" % n, "[%s] write %d: %s" % (label, n, r))
            rid, _ = call(s, "file_read", path="a.txt")
            _, r = s.wait(rid, timeout=15)
            check(text_of(r).startswith("one\n"), "[%s] a read after the writes: %s" % (label, r))
            tap.note("[%s] %d writes answered; the grabber took %d temporary files' locks"
                     % (label, WRITES, len(open(os.path.join(ws, "grab.got")).read().split()) if got() else 0))
            s.send("notifications/cancelled", {"requestId": gid}, notify=True)
            stray = [f for f in os.listdir(ws) if f.startswith(".vectora-tmp-")]
            check(not stray, "[%s] temporary files left: %s" % (label, stray))
        finally:
            s.p.kill()
            s.p.wait()
            shutil.rmtree(ws, ignore_errors=True)


def descendants(pid):
    """Every process below pid (children of any of its threads)."""
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tasks:
        try:
            kids = open("/proc/%d/task/%s/children" % (pid, t)).read().split()
        except OSError:
            continue
        for k in map(int, kids):
            out += [k] + descendants(k)
    return out


def stalled_worker_client_gone(tmp):
    """A worker that answers nothing (stopped here from the host, as a
    process in the jail stalled it before the fix above) while a call
    runs, and the client goes away: the server ends the worker after its
    grace and exits, and nothing of the jail is left."""
    env = dict(os.environ)
    env["VECTORA_SANDBOX_SOCKET"] = os.path.join(tmp, "nobody.sock")
    ws = vtest.make_ws(tmp, "stall", TOML, {"a.txt": "one\n"})
    vtest.chown_tree(ws)
    p = subprocess.Popen([vtest.CLI, "mcp", "-w", ws, "--no-daemon"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    try:
        def send(o):
            p.stdin.write((json.dumps(o) + "\n").encode())
            p.stdin.flush()
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}})
        json.loads(p.stdout.readline())
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "terminal", "arguments": {"command": "sleep 3107", "timeout": 120}}})
        check(vtest.wait_for(lambda: any(b"sleep\x003107" in open("/proc/%d/cmdline" % k, "rb").read()
                                         for k in descendants(p.pid) if os.path.exists("/proc/%d" % k)), 20),
              "the command did not start")
        jail = descendants(p.pid)
        workers = [k for k in jail if b"vectora-worker" in open("/proc/%d/cmdline" % k, "rb").read()]
        check(workers, "no worker below the server: %s" % jail)
        for w in workers:
            os.kill(w, signal.SIGSTOP)
        p.stdin.close()
        p.stdout.close()
        t0 = time.monotonic()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError("the server still runs 30 s after its client went away, its worker stalled")
        left = [k for k in jail if os.path.exists("/proc/%d" % k)
                and open("/proc/%d/stat" % k).read().split()[2] != "Z"]
        check(not left, "left behind: %s" % left)
        tap.note("the server exited %.1f s after its client went away" % (time.monotonic() - t0))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def stale_cancels(tmp):
    """A cancel racing the reply arrives after its call ended (the client
    may send it; the server keeps it for a call not begun yet). 64 of them
    filled that list for good, and a cancel of a call still queued behind
    the 32 running was then dropped: the call ran and was answered."""
    env = dict(os.environ)
    env["VECTORA_SANDBOX_SOCKET"] = os.path.join(tmp, "nobody.sock")
    ws = vtest.make_ws(tmp, "stale", TOML, {"a.txt": "one\n"})
    vtest.chown_tree(ws)
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        done = [call(s, "file_read", path="a.txt")[0] for _ in range(80)]
        for d in done:
            s.wait(d)
        for d in done:
            s.send("notifications/cancelled", {"requestId": d, "reason": "too late"}, notify=True)
        busy = [call(s, "terminal", command="sleep 3")[0] for _ in range(32)]
        time.sleep(0.5)
        q, _ = call(s, "terminal", command="touch queued-ran")
        s.send("notifications/cancelled", {"requestId": q}, notify=True)
        for b in busy:
            s.wait(b)
        pid, _ = s.send("ping")
        s.wait(pid)
        time.sleep(1)
        check(not os.path.exists(os.path.join(ws, "queued-ran")) and q not in s.responses,
              "a queued call cancelled after 80 late cancels ran: %s" % (s.responses.get(q),))
    finally:
        s.close()


# In the jail beside an apply_patch: keeps changing f2 (its write is then
# refused and the call undone) and swaps f1, once the call wrote it, for a
# link to argv[1] (the undo puts f1's old content back).
SWAP = r'''
import os, sys, time
end = time.time() + 20
while time.time() < end:
    try:
        if open("f1").read() == "NEW\n":
            os.symlink(sys.argv[1], "f1.l")
            os.replace("f1.l", "f1")
            print("swapped", flush=True)
            break
    except OSError:
        pass
    with open("f2", "a") as f:
        f.write("x")
'''


def undo_through_swapped_link(tmp):
    """The undo of a refused apply_patch (in parallel with a command that
    swaps the file it wrote for a link to a path outside the workspace, or
    to a masked one) writes through no link: both keep their content (the
    result then names f1 as not put back). Held."""
    env = dict(os.environ)
    env["VECTORA_SANDBOX_SOCKET"] = os.path.join(tmp, "nobody.sock")
    toml = TOML.replace("network = false", 'network = false\nmask = [".env"]')
    for target in ("../outside.txt", ".env"):
        d = os.path.join(tmp, "undo-%d" % len(target))
        os.makedirs(d)
        outside = os.path.join(d, "outside.txt")
        with open(outside, "w") as f:
            f.write("OUTSIDE\n")
        ws = vtest.make_ws(d, "ws", toml, {"a.txt": "one\n", "f1": "OLD\n", "f2": "two\n", ".env": "S=1\n",
                                             "swap.py": SWAP})
        vtest.chown_tree(ws)
        s = Server(ws, env, ["--no-daemon"])
        try:
            s.init()
            s.wait(call(s, "file_read", path="a.txt")[0])
            g, _ = call(s, "terminal", command="python3 swap.py %s" % target)
            time.sleep(0.3)
            x, _ = call(s, "apply_patch", patch="*** Begin Patch\n*** Update File: f1\n@@\n-OLD\n+NEW\n"
                                               "*** Update File: f2\n@@\n-two\n+TWO\n*** End Patch\n")
            _, r = s.wait(x)
            _, gr = s.wait(g)
            check(r.get("result", {}).get("isError"), "the patch was not refused: %s" % r)
            with open(outside) as f, open(os.path.join(ws, ".env")) as e:
                check(f.read() == "OUTSIDE\n" and e.read() == "S=1\n", "the undo wrote through the link to " + target)
            # The swap may also come just after the undo: then nothing is
            # left to say, and only the content above is the property.
            tap.note("[%s] swapped: %s; the result said it could not undo f1: %s"
                     % (target, "swapped" in text_of(gr), "could not undo the change of: f1" in text_of(r)))
        finally:
            s.close()


if __name__ == "__main__":
    sys.exit(run_cases(tap, [tmp_lock_grab, stalled_worker_client_gone, stale_cancels, undo_through_swapped_link],
                       "vectora-atk-mcpe-"))
