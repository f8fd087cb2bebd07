#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""vectora-sandboxd bounded and clean under load, faults and long uptime
(issue 18), for real with bwrap: several daemons on one host, replies that
must stay deliverable, misbehaving clients, shutdown order, leftovers.

TAP output with a closing '# N passed, N failed, N skipped' comment. A check
that needs root (cgroups) says SKIP as another user; VECTORA_TEST_STRICT=1
turns skips into failures. Builds on test_daemon.py's helpers."""

import base64
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_daemon  # noqa: E402
from test_daemon import (DAEMON, ROOT, SANDBOX, STRICT, Conn, alive, check, comm, make_ws,  # noqa: E402
                         proc_tree, term)

CG_TOPS = ["/sys/fs/cgroup/vectora-sandboxd", "/sys/fs/cgroup/pids/vectora-sandboxd",
           "/sys/fs/cgroup/memory/vectora-sandboxd"]

results = {"passed": 0, "failed": 0, "skipped": 0}
notes = []
n = 0


class Skip(Exception):
    pass


class Daemon(test_daemon.Daemon):
    def conn(self):
        # The socket file exists from bind(), a moment before listen().
        for _ in range(100):
            try:
                return Conn(self.sock)
            except ConnectionRefusedError:
                time.sleep(0.02)
        return Conn(self.sock)


def instance_id(sock):
    """As the daemon derives it: sha256 of the socket's resolved path."""
    d, b = os.path.split(sock)
    return hashlib.sha256(os.path.join(os.path.realpath(d or "."), b).encode()).hexdigest()[:16]


def instance_groups(sock):
    return [os.path.join(t, instance_id(sock)) for t in CG_TOPS if os.path.isdir(t)]


def need_cgroups(d):
    if not ROOT:
        raise Skip("cgroups need root (the daemon runs without them as a normal user)")
    if not d.status()["daemon"].get("cgroups"):
        raise Skip("no writable cgroup hierarchy here: " + str(d.status()["daemon"].get("cgroups_unavailable")))


def jail_cgroup(d, c, ws):
    """The cgroups of the workspace's jail, seen from the host (inside, a
    cgroup namespace shows "/")."""
    check(term(c, ws, "true")["ok"], "warm")
    with open(f"/proc/{d.ws_status(ws)['worker']['pid']}/cgroup") as f:
        return f.read()


def group_procs(group):
    try:
        with open(os.path.join(group, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def ws_groups(sock):
    out = []
    for g in instance_groups(sock):
        out += [os.path.join(g, x) for x in os.listdir(g) if x.startswith("ws-")]
    return out


def wait_exit(p, timeout):
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


# ---------------------------------------------------------------- instances


def t_second_daemon_same_socket(d, tmp):
    """A second daemon on the same socket refuses, even once the socket
    file was removed under the first (before: it replaced the socket and
    shared the first one's cgroups)."""
    a = Daemon(tmp, "same")
    try:
        os.unlink(a.sock)
        other = os.path.join(tmp, ".", "same.sock")  # another spelling of the same path
        p = subprocess.run([DAEMON, "--foreground", "--socket", other], capture_output=True, text=True, timeout=20)
        check(p.returncode == 1, (p.returncode, p.stderr))
        check("already serves the socket" in p.stderr and f"pid {a.p.pid}" in p.stderr and "--socket" in p.stderr,
              p.stderr)
        check(a.p.poll() is None, "the first daemon died")
    finally:
        a.stop()
    # Once the first one is gone, the socket is free again.
    b = Daemon(tmp, "same")
    b.stop()
    check(b.p.returncode == 0, b.p.returncode)


def t_instances_own_cgroups(d, tmp):
    """Two daemons serving one workspace put its jails in different groups,
    and neither removes the other's (before: both used
    vectora-sandboxd/ws-HASH and swept each other's groups at start)."""
    need_cgroups(d)
    ws = make_ws(tmp, "shared-ws", SANDBOX)
    a = Daemon(tmp, "inst-a")
    b = None
    try:
        ca = a.conn()
        ga = jail_cgroup(a, ca, ws)
        check(instance_id(a.sock) in ga, (instance_id(a.sock), ga))
        mine = ws_groups(a.sock)
        check(mine, "no workspace group under the instance's group")
        b = Daemon(tmp, "inst-b")  # its start sweeps only its own and dead instances
        check(all(os.path.isdir(g) for g in mine), "the second daemon removed the first one's groups")
        cb = b.conn()
        gb = jail_cgroup(b, cb, ws)
        check(instance_id(b.sock) in gb and ga != gb, (ga, gb))
        cb.close()
        b.stop()
        check(b.p.returncode == 0, "b exit status")
        check(not any(os.path.exists(g) for g in instance_groups(b.sock)), "b's groups left after a clean exit")
        check(all(os.path.isdir(g) for g in mine), "b's exit removed a's groups")
        check(term(ca, ws, "echo still")["stdout"] == "still\n", "a stopped serving")
        ca.close()
    finally:
        if b:
            b.stop()
        a.stop()
    check(not any(os.path.exists(g) for g in instance_groups(a.sock)), "a's groups left after a clean exit")


def t_dead_instance_swept(d, tmp):
    """The groups of a daemon that was SIGKILLed (its lock is free) are
    removed by the next daemon to start, with what still ran in them."""
    need_cgroups(d)
    ws = make_ws(tmp, "dead-ws", SANDBOX)
    k = Daemon(tmp, "dead")
    c = k.conn()
    check(term(c, ws, "true")["ok"], "warm")
    groups = instance_groups(k.sock)
    check(groups and ws_groups(k.sock), "no groups")
    k.p.send_signal(signal.SIGKILL)
    k.p.wait()
    c.close()
    os.unlink(k.sock)
    n2 = Daemon(tmp, "after-dead")
    try:
        left = [g for g in groups if os.path.exists(g)]
        check(not left, f"a dead instance's groups were kept: {left}")
    finally:
        n2.stop()


# ---------------------------------------------------------------- replies


MARKER = re.compile(r"\n\[\.\.\. (\d+) bytes omitted \.\.\.\]\n")


def check_cut(r, key, total):
    """A stream cut to head + marker + tail: the marker counts exactly what
    is missing."""
    text = r[key]
    m = MARKER.search(text)
    check(m, (key, len(text), text[:80]))
    kept = len(text.encode()) - len(m.group(0))
    check(int(m.group(1)) + kept == total, (key, m.group(1), kept, total))


def t_flood_reply_delivered(d, tmp):
    """Output over what one reply line can carry comes back cut with the
    marker, exit_code and timed_out intact (before: too_large, no output)."""
    sb = make_ws(tmp, "flood-sb", SANDBOX)
    un = make_ws(tmp, "flood-un", None)
    c = d.conn()
    for ws in (sb, un):
        r = term(c, ws, "yes | head -c 1100000; exit 7")
        check(r["ok"] and r["exit_code"] == 7 and r["truncated"] and r["stdout_total"] == 1100000,
              {k: v for k, v in r.items() if k not in ("stdout", "stderr")})
        check(r["stdout"].startswith("y\ny\n") and r["stdout"].endswith("y\n"), "head and tail")
        check_cut(r, "stdout", 1100000)
        r = term(c, ws, "yes | head -c 600000; yes | head -c 600000 >&2")
        check(r["ok"] and r["exit_code"] == 0 and r["truncated"], {k: v for k, v in r.items() if k not in ("stdout", "stderr")})
        check_cut(r, "stdout", 600000)
        check_cut(r, "stderr", 600000)
        # NUL bytes are valid UTF-8 but take six bytes each escaped: whole
        # as base64 where that fits, else cut too.
        r = term(c, ws, "head -c 400000 /dev/zero")
        check(r["ok"] and not r["truncated"] and base64.b64decode(r["stdout_base64"]) == b"\0" * 400000, "NULs")
        r = term(c, ws, "head -c 900000 /dev/zero; exit 3")
        check(r["ok"] and r["truncated"] and r["exit_code"] == 3, "NULs cut")
        check(r["stdout"].startswith("\0\0") and r["stdout"].endswith("\0\0"), "NULs as text")
        check_cut(r, "stdout", 900000)
        r = term(c, ws, "yes", timeout=3)
        check(r["ok"] and r["timed_out"] is True and r["truncated"] and r["stdout_total"] > 1000000,
              {k: v for k, v in r.items() if k not in ("stdout", "stderr")})
        check(MARKER.search(r["stdout"]), "marker")
        # Small output is untouched.
        r = term(c, ws, "echo small")
        check(r["stdout"] == "small\n" and r["truncated"] is False, r)
    # A 256 KiB file of control bytes is valid UTF-8 that would escape to
    # 1.5 MiB: it comes as base64 instead of failing.
    with open(os.path.join(sb, "ctl.bin"), "wb") as f:
        f.write(b"\x01" * (256 * 1024))
    r = c.call({"tool": "file_read", "workspace": sb, "path": "ctl.bin"})
    check(r["ok"] and base64.b64decode(r["content_base64"]) == b"\x01" * (256 * 1024),
          {k: v for k, v in r.items() if k != "content_base64"})
    c.close()


# ---------------------------------------------------------------- shutdown


def t_shutdown_order(d, tmp):
    """SIGTERM with calls in flight: each gets "shutting_down" (before: bare
    EOF); every process of every jail ends, also one that left the worker's
    tree; then the groups go (before: removed first, and left behind)."""
    s = Daemon(tmp, "order")
    wss = [make_ws(tmp, f"order{i}", SANDBOX) for i in range(3)]
    conns = [s.conn() for _ in wss]
    try:
        for c, ws in zip(conns, wss):
            check(term(c, ws, "true")["ok"], "warm")
        # A process that escapes the worker's sight: double fork, new session.
        check(term(conns[0], wss[0], "setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 &")["ok"], "detach")
        for i, (c, ws) in enumerate(zip(conns, wss)):
            for j in range(3):
                c.send({"id": 1000 + j, "tool": "terminal", "workspace": ws, "command": "sleep 60"})
        time.sleep(1.0)
        groups = ws_groups(s.sock) if ROOT else []
        jailed = [p for g in groups for p in group_procs(g)]
        tree = proc_tree(s.p.pid)
        s.p.send_signal(signal.SIGTERM)
        codes = []
        for c in conns:
            for _ in range(3):
                try:
                    r = c.recv()
                    codes.append((r.get("error") or {}).get("code"))
                except (EOFError, OSError) as e:
                    codes.append("EOF: " + str(e))
        check(codes == ["shutting_down"] * 9, codes)
        check(wait_exit(s.p, 10) == 0, "exit status")
        t0 = time.time()
        while time.time() - t0 < 1.0 and any(alive(p) for p in tree + jailed):
            time.sleep(0.02)
        left = [(p, comm(p)) for p in tree + jailed if alive(p)]
        check(not left, f"processes left after a clean exit: {left}")
        if ROOT and groups:
            check(len(jailed) >= 3 * 3, jailed)
            check(not any(os.path.exists(g) for g in groups + instance_groups(s.sock)),
                  "cgroups left after a clean exit")
        elif ROOT:
            raise Skip("no cgroups here: the jails' groups cannot be checked")
    finally:
        for c in conns:
            c.close()
        s.stop()


TESTS = [t_second_daemon_same_socket, t_instances_own_cgroups, t_dead_instance_swept, t_flood_reply_delivered,
         t_shutdown_order]


def report(name, ok, skip=None, detail=""):
    global n
    n += 1
    if skip is not None:
        results["skipped"] += 1
        print(f"ok {n} - {name} # SKIP {skip}")
        return
    results["passed" if ok else "failed"] += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
    for line in str(detail).splitlines() if not ok else []:
        print("#   " + line)


def main():
    if not os.access(DAEMON, os.X_OK) or not shutil.which("bwrap"):
        print("1..0 # SKIP the daemon is not built or bwrap is missing")
        return 1 if STRICT else 0
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="vs-rel-test-")
    os.chmod(tmp, 0o755)
    d = Daemon(tmp)
    try:
        for t in TESTS:
            if only and t.__name__ not in only:
                continue
            try:
                t(d, tmp)
                report(t.__name__, True)
            except Skip as e:
                report(t.__name__, True, skip=str(e))
            except Exception:
                report(t.__name__, False, detail=traceback.format_exc())
            if d.p.poll() is not None:
                report("the shared daemon survived " + t.__name__, False, detail=open(d.log).read()[-3000:])
                d = Daemon(tmp, "d-again-%d" % n)
    finally:
        d.stop()
        if results["failed"] and os.environ.get("VECTORA_TEST_KEEP"):
            print("# kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for line in notes:
        print("# " + line)
    print("1..%d" % n)
    print("# %d passed, %d failed, %d skipped" % (results["passed"], results["failed"], results["skipped"]))
    return 1 if results["failed"] or (STRICT and results["skipped"]) else 0


if __name__ == "__main__":
    sys.exit(main())
