#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""vectora-sandboxd bounded and clean under load, faults and long uptime
(issue 18), for real with bwrap: several daemons on one host, replies that
must stay deliverable, misbehaving clients, shutdown order, leftovers.

TAP output with a closing '# N passed, N failed, N skipped' comment. A check
that needs root (cgroups) says SKIP as another user; VECTORA_TEST_STRICT=1
turns skips into failures. Builds on the shared helpers in tests/lib."""

import base64
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import wait_for, CLI, DAEMON, OWNER, ROOT, Daemon, check, chown_tree, make_ws  # noqa: E402
from vdaemon import (CG_TOPS, SANDBOX, alive, comm, instance_groups, instance_id, proc_tree, rss_kib, term, worker_procs,  # noqa: E402
                     ws_groups)

# A sanitizer build (it also makes a static uninstrumented worker) keeps
# freed memory in quarantine: RSS says nothing there, the daemon's own
# counters of held bytes still do.
SANITIZED = os.path.exists(os.path.join(vtest.BUILD, "src/worker/vectora-worker-static"))
# A well-behaved client's worst call beside a misbehaving one: the bound is
# against a stall (a client held for the whole flood), not a measure of
# speed. A sanitizer build's daemon is several times slower (ASan's
# allocator fills the shadow of each 60 MiB payload buffer it hands out:
# 0.8-1.3 s on a quiet host where the plain build takes 35-400 ms). The
# plain build's bound was 2 s until a .ci/run saw 2.87 s as the user, the
# root suite's own flood running beside it on two cores: still far from a
# client held for a whole flood (ten seconds and more).
WORST_CALL_S = 5.0 if SANITIZED else 4.0

notes = []


Skip = vtest.Skip


def need_cgroups(d):
    if not ROOT:
        vtest.needs_root("cgroups need root (the daemon runs without them as a normal user)")
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


def group_names(sock):
    """The workspaces that have groups (v1: one in each hierarchy)."""
    return sorted({os.path.basename(g) for g in ws_groups(sock)})


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


def t_private_run_spares_live_jails(d, tmp):
    """A daemon started with a /run of its own (test-cli runs the README's
    root daemon on a private tmpfs /run; a container) cannot see a live
    daemon's lock: it must not take that instance for dead and SIGKILL its
    jails (before: "the worker ended unexpectedly (its jail was killed by
    signal 9 (Killed))", in whatever test the other daemon was serving).
    Both daemons here see only a cgroup directory of the test's own,
    bound over vectora-sandboxd in their mount namespaces: no other
    daemon's groups are within reach."""
    need_cgroups(d)
    if not shutil.which("unshare"):
        raise Skip("unshare (util-linux) is not installed")
    tops = [t for t in CG_TOPS if os.path.isdir(t)]
    mine = [os.path.join(os.path.dirname(t), "vs-test-%d-%s" % (os.getpid(), os.path.basename(tmp))) for t in tops]
    for m in mine:
        os.mkdir(m)
    binds = " && ".join("mount --bind %s %s" % (shlex.quote(m), shlex.quote(t)) for m, t in zip(mine, tops))

    def prefix(private_run):
        run = " && mount -t tmpfs -o mode=755 tmpfs /run" if private_run else ""
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", binds + run + ' && exec "$@"', "sh"]

    ws = make_ws(tmp, "live-ws", SANDBOX)
    a = Daemon(tmp, "live", prefix=prefix(False))
    b = None
    try:
        c = a.conn()
        check(term(c, ws, "true")["ok"], "warm")
        check(any(x.startswith("ws-") for m in mine for g in os.listdir(m) for x in
                  (os.listdir(os.path.join(m, g)) if os.path.isdir(os.path.join(m, g)) else [])),
              ("the live daemon's groups are not in the test's directory", [os.listdir(m) for m in mine]))
        c.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "sleep 2; echo survived"})
        time.sleep(0.5)
        b = Daemon(tmp, "private-run", prefix=prefix(True))
        r = c.recv()
        check(r.get("ok") and r["stdout"] == "survived\n", ("a daemon with a private /run ended a live jail", r))
        c.close()
    finally:
        if b:
            b.stop()
        a.stop()
        for m in mine:
            for dp, _, _ in sorted(os.walk(m), key=lambda x: -len(x[0])):
                try:
                    os.rmdir(dp)
                except OSError:
                    pass


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


# ---------------------------------------------------------------- backpressure


class Probe:
    """A well-behaved client timing small calls while others misbehave.
    Its workspace is warm before the timing starts: the first call starts
    the jail, and a cold start (slow under ASan on a loaded host, and
    then while the misbehaving clients compete for the CPU) is not the
    latency the bounds are about."""

    def __init__(self, d, ws):
        self.c, self.ws, self.lat, self.errors = d.conn(), ws, [], []
        r = term(self.c, ws, "true")
        check(r.get("ok"), ("the probe's workspace did not start", r))
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            r = term(self.c, self.ws, "echo hi")
            self.lat.append(time.monotonic() - t0)
            if r.get("stdout") != "hi\n":
                self.errors.append(r)
            time.sleep(0.02)

    def finish(self):
        self.stop.set()
        self.t.join(30)
        self.c.close()
        check(not self.errors and self.lat, ("the well-behaved client", self.errors[:2], len(self.lat)))
        return max(self.lat)


def t_inflight_cap(d, tmp):
    """1 000 pipelined calls on one connection: at most 256 run at once,
    every one is answered (before: all 1 000 ran at once)."""
    ws = make_ws(tmp, "cap-ws", None)
    other = make_ws(tmp, "cap-other", SANDBOX)
    c = d.conn()
    check(term(c, ws, "true")["ok"], "warm")
    probe = Probe(d, other)
    N = 1000
    c.s.sendall(b"".join(json.dumps({"id": i, "tool": "terminal", "workspace": ws, "command": "sleep 1"}).encode()
                         + b"\n" for i in range(N)))
    peak = 0
    t0 = time.time()
    got = {}
    c.s.settimeout(0.2)
    while len(got) < N and time.time() - t0 < 120:
        w = d.ws_status(ws)["worker"]
        peak = max(peak, w["in_flight"] if w else 0)
        try:
            while True:
                r = c.recv()
                got[r["id"]] = r
        except (socket.timeout, BlockingIOError):
            pass
    c.s.settimeout(None)
    worst = probe.finish()
    check(len(got) == N and all(r["ok"] for r in got.values()), (len(got), [r for r in got.values() if not r["ok"]][:2]))
    check(200 <= peak <= 256, ("peak in flight", peak))
    check(worst < WORST_CALL_S, ("the other client's worst latency", worst))
    notes.append(f"1000 pipelined sleep 1: peak {peak} in flight, all answered in {time.time() - t0:.1f} s; "
                 f"another client's worst call {worst * 1000:.0f} ms")
    c.close()


def t_unread_replies_bounded(d, tmp):
    """A client that sends 300 calls with ~1 MiB replies and does not read:
    the daemon's memory stays bounded (replies past 32 MiB spooled, no new
    work taken past 8 MiB unsent), then everything arrives in full once it
    reads (before: 266 MB in the daemon and as much in the worker)."""
    s = Daemon(tmp, "unread")
    ws = make_ws(tmp, "unread-ws", SANDBOX + "[sandbox.limits]\npids = 4096\n", {"big.txt": "y\n" * 500000})
    other = make_ws(tmp, "unread-other", SANDBOX)
    try:
        c = s.conn()
        check(term(c, ws, "true")["ok"], "warm")
        base = rss_kib(s.p.pid)
        probe = Probe(s, other)
        N = 300
        c.s.sendall(b"".join(json.dumps({"id": i, "tool": "terminal", "workspace": ws, "command": "cat big.txt"})
                             .encode() + b"\n" for i in range(N)))
        # The daemon takes the first 256 (the in-flight cap; nothing was
        # unsent yet), then no more until the client reads.
        peak, t0 = 0, time.time()
        while time.time() - t0 < 120:
            peak = max(peak, rss_kib(s.p.pid))
            if s.ws_status(ws)["counters"]["ok"] >= 1 + 256:
                break
            time.sleep(0.1)
        time.sleep(1)
        peak = max(peak, rss_kib(s.p.pid))
        st = s.status()["daemon"]
        taken = s.ws_status(ws)["counters"]["requests"] - 1
        worst = probe.finish()
        check(SANITIZED or peak - base < 100 * 1024, ("daemon RSS grew by MiB", (peak - base) // 1024))
        check(st["replies_queued_bytes"] <= 40 << 20 and st["replies_spooled_bytes"] > 100 << 20, st)
        check(256 <= taken < N, ("requests taken while the replies were unread", taken))
        got = []
        for _ in range(N):
            r = c.recv()
            got.append(r)
        bad = [{k: v for k, v in r.items() if k != "stdout"} for r in got
               if not (r["ok"] and r["truncated"] and r["stdout_total"] == 1000000)]
        check(not bad, (len(bad), bad[:2]))
        check(sorted(r["id"] for r in got) == list(range(N)), "ids")
        st = s.status()["daemon"]
        check(st["replies_spooled_bytes"] == 0 and st["input_held_bytes"] < 1 << 20, st)
        check(worst < WORST_CALL_S, ("the other client's worst latency", worst))
        notes.append(f"unread replies: daemon RSS +{(peak - base) // 1024} MiB with ~{N} MiB of replies unread; "
                     f"another client's worst call {worst * 1000:.0f} ms")
        c.close()
    finally:
        s.stop()


def unperturbed_daemon(tmp, name, env=None):
    """A daemon without MALLOC_PERTURB_ (set by meson test): it fills every
    allocation, so a payload buffer would be resident before its bytes
    arrive; the memory bounds are about the daemon as deployed."""
    perturb = os.environ.pop("MALLOC_PERTURB_", None)
    try:
        return Daemon(tmp, name, env=env and {k: v for k, v in env.items() if k != "MALLOC_PERTURB_"})
    finally:
        if perturb is not None:
            os.environ["MALLOC_PERTURB_"] = perturb


def slow_start_env(tmp, seconds):
    """An environment whose PATH finds a bubblewrap that waits `seconds`
    before it execs the real one: every jail start of a daemon run with it
    takes longer than that (a cold start under ASan on a loaded CI host
    took 2.7 s)."""
    real = shutil.which("bwrap")
    d = os.path.join(tmp, "slow-bwrap")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    path = os.path.join(d, "bwrap")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nsleep %s\nexec %s \"$@\"\n" % (seconds, shlex.quote(real)))
    os.chmod(path, 0o755)
    return dict(os.environ, PATH=d + ":" + os.environ.get("PATH", "/usr/bin:/bin"))


def big_send_buffer(k):
    """A 4 MiB send buffer (as net.core.wmem_default on some hosts gives
    every socket): one read of the daemon then returns megabytes, which the
    input bound must count as one capped read, not whatever was queued."""
    try:
        k.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)  # SO_SNDBUFFORCE (root)
    except OSError:
        k.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)


def t_big_uploads_bounded(d, tmp):
    """20 connections each pushing a 60 MiB raw payload they never finish
    for 10 s: the daemon holds at most its input budget (before: 1.23 GB),
    and a small client is served meanwhile: its worst call stays under 2 s
    (WORST_CALL_S; one held behind the uploads would wait the whole 10 s).
    Each turn of the daemon's loop reads each stream once: before, libuv's
    32 reads in a row per readable stream took 2 MiB of each uploader per
    turn, and the leader one read of all its socket held (49 MiB, 228 ms);
    the small client's worst call was 0.8-1 s on a quiet host and 8.2 s in
    a CI run beside other tests, now 35 ms on a quiet host (100 ms with
    both cores busy, where the old code took 2.07 s). The jail starts
    slower than that bound (6 s): the small client's latency is a warm
    workspace's, which a cold start must not be counted in."""
    s = unperturbed_daemon(tmp, "uploads", slow_start_env(tmp, 6))
    ws = make_ws(tmp, "up-ws", SANDBOX)
    try:
        base = rss_kib(s.p.pid)
        # Made before the probe starts: 60 MiB filled under the test's own
        # lock (and MALLOC_PERTURB_) held the probe's thread for 270 ms.
        payload = memoryview(b"z" * (60 << 20))
        probe = Probe(s, ws)
        conns = []
        for i in range(20):
            k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            big_send_buffer(k)
            k.connect(s.sock)
            k.sendall(json.dumps({"id": i, "tool": "file_write", "workspace": ws, "path": f"u{i}",
                                  "raw": (60 << 20) + 1}).encode() + b"\n")
            k.setblocking(False)
            conns.append([k, 0])
        t0, peak = time.time(), 0
        while time.time() - t0 < 10:
            moved = 0
            for e in conns:
                try:
                    n = e[0].send(payload[e[1]:e[1] + (1 << 20)])
                    e[1] += n
                    moved += n
                except BlockingIOError:
                    pass
            peak = max(peak, rss_kib(s.p.pid))
            if not moved:
                time.sleep(0.05)
        held = s.status()["daemon"]["input_held_bytes"]
        sent = sum(e[1] for e in conns)
        worst = probe.finish()
        for e in conns:
            e[0].close()
        # The daemon frees each connection's input as it reads the hang-up;
        # on a loaded machine that takes more than a moment.
        after = input_released(s, 30)
        # Every figure in each failure's message: a failure on a loaded CI
        # host must say which bound it missed and what the others were.
        seen = {"rss_growth_mib": (peak - base) // 1024, "sent_mib": sent >> 20, "held_mib": held >> 20,
                "held_after_close": after, "worst_s": round(worst, 3),
                "slowest_s": sorted((round(x, 3) for x in probe.lat), reverse=True)[:5], "calls": len(probe.lat)}
        check(SANITIZED or peak - base < 450 * 1024, ("daemon RSS grew past 450 MiB", seen))
        # The budget, one leader's whole message (a line and a raw payload),
        # 2 MiB for each small holder, and each client's last read (64 KiB).
        check(held <= ((256 + 65 + 40) << 20) + 20 * 65536, ("held past the budget", seen))
        check(after == 0, ("input still counted after the clients left", seen))
        check(worst < WORST_CALL_S, ("the small client's worst latency", seen))
        notes.append(f"20 unfinished 60 MiB uploads: {sent >> 20} MiB accepted, {held >> 20} MiB held, daemon RSS "
                     f"+{(peak - base) // 1024} MiB; a small client's worst call {worst * 1000:.0f} ms")
    finally:
        s.stop()


# ---------------------------------------------------------------- leftovers


def temps(ws):
    return [os.path.join(dp, f) for dp, _, fs in os.walk(ws) for f in fs if f.startswith(".vectora-tmp-")]


def open_uploads(s, ws, n, size):
    """n connections, each with a file_write header announcing size raw
    bytes (bigN), non-blocking, as [socket, bytes sent] entries."""
    out = []
    for i in range(n):
        k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A fixed send buffer (the kernel doubles it): what a connection the
        # daemon stopped reading still absorbs must not depend on the host's
        # net.core.wmem_default (4 MiB on some).
        k.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 << 10)
        k.connect(s.sock)
        k.sendall(json.dumps({"id": i, "tool": "file_write", "workspace": ws, "path": f"big{i}",
                              "raw": size}).encode() + b"\n")
        k.setblocking(False)
        out.append([k, 0])
    return out


def pump(entries, payload, cap, quiet, limit):
    """Sends payload to each [socket, sent] entry up to cap bytes, 1 MiB at
    a time, until all have cap, or nothing moved for quiet s (after
    something moved), or limit s in all."""
    start = last = time.time()
    while time.time() - start < limit:
        if time.time() - last >= quiet and (last > start or time.time() - start >= limit):
            break
        for e in entries:
            want = cap - e[1]
            if want <= 0:
                continue
            try:
                e[1] += e[0].send(payload[e[1]:e[1] + min(want, 1 << 20)])
                last = time.time()
            except BlockingIOError:
                pass
        if all(e[1] >= cap for e in entries):
            break
        time.sleep(0.01)


def input_released(s, timeout):
    """The daemon's input_held_bytes once it is 0, or after timeout s."""
    deadline = time.time() + timeout
    after = s.status()["daemon"]["input_held_bytes"]
    while after and time.time() < deadline:
        time.sleep(0.2)
        after = s.status()["daemon"]["input_held_bytes"]
    return after


def read_reply(k, timeout):
    """The one reply line on k (blocking), decoded; None at a hang-up."""
    k.setblocking(True)
    k.settimeout(timeout)
    line = b""
    while not line.endswith(b"\n"):
        b = k.recv(65536)
        if not b:
            break
        line += b
    return json.loads(line) if line else None


def t_leader_finishes_past_small_holders(d, tmp):
    """Over the input budget, many small holders (under 2 MiB each, always
    read) push the total past 321 MiB while a big upload leads: the leader
    is still read to the end of its message, every big upload lands in turn,
    and the input is released (before: the leader stopped at a fixed total,
    every big holder with it, and nothing was read again, hang-ups included)."""
    s = unperturbed_daemon(tmp, "leader")
    ws = make_ws(tmp, "leader-ws", SANDBOX)
    big_size, small_raw, small_sent = 60 << 20, 4 << 20, (1 << 20) + (900 << 10)
    big, small = [], []
    try:
        check(term(s.conn(), ws, "echo warm")["stdout"] == "warm\n", "the workspace starts")
        payload = memoryview(b"b" * big_size)
        big += open_uploads(s, ws, 5, big_size)
        # Phase 1: 52 MiB to each big upload, until the daemon stops reading.
        pump(big, payload, 52 << 20, 1.5, 30)
        over = s.status()["daemon"]["input_held_bytes"]
        check(over >= 256 << 20, ("the budget was not reached", over >> 20))
        # Phase 2: 45 small holders, each under 2 MiB: always read.
        for i in range(45):
            k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            k.settimeout(30)
            k.connect(s.sock)
            k.sendall(json.dumps({"id": 100 + i, "tool": "file_write", "workspace": ws, "path": f"small{i}",
                                  "raw": small_raw}).encode() + b"\n" + b"s" * small_sent)
            small.append(k)
        deadline = time.time() + 10
        held = s.status()["daemon"]["input_held_bytes"]
        while held < over + 45 * small_sent - (8 << 20) and time.time() < deadline:
            time.sleep(0.1)
            held = s.status()["daemon"]["input_held_bytes"]
        check(held > (256 + 1 + 64) << 20, ("the small holders did not push the total past 321 MiB", held >> 20))
        # Phase 3: the rest of every big upload; each must land.
        pump(big, payload, big_size, 120, 120)
        check(all(e[1] == big_size for e in big),
              ("big uploads stalled (MiB sent)", [e[1] >> 20 for e in big], "held MiB",
               s.status()["daemon"]["input_held_bytes"] >> 20))
        for e in big:
            r = read_reply(e[0], 60)
            check(r and r.get("ok"), r)
        for i in range(5):
            check(os.path.getsize(os.path.join(ws, f"big{i}")) == big_size, f"big{i} was not written whole")
        for e in big:
            e[0].close()
        for k in small:
            k.close()
        after = input_released(s, 20)
        check(after == 0, ("input still counted after the clients left", after))
        notes.append(f"5 x 60 MiB uploads past 45 small holders: all landed; {held >> 20} MiB held at the peak")
    finally:
        for e in big:
            e[0].close()
        for k in small:
            k.close()
        s.stop()


def t_stalled_leader_demoted(d, tmp):
    """Over the input budget only one big holder (the leader) is read; a
    leader that stops sending mid-message and holds its connection open is
    disconnected after 30 s with `busy` (its partial request dropped, its
    input released), and the other big uploads then land (before: they
    waited until the staller hung up, for ever)."""
    s = unperturbed_daemon(tmp, "staller")
    ws = make_ws(tmp, "staller-ws", SANDBOX)
    big_size = 60 << 20
    big = []

    try:
        check(term(s.conn(), ws, "echo warm")["stdout"] == "warm\n", "the workspace starts")
        payload = memoryview(b"b" * big_size)
        big += open_uploads(s, ws, 5, big_size)

        # 52 MiB each: over the 256 MiB budget, the daemon reads one leader only.
        pump(big, payload, 52 << 20, 1.5, 60)
        over = s.status()["daemon"]["input_held_bytes"]
        check(over >= 256 << 20, ("the budget was not reached", over >> 20))
        # The leader is the one that can still send: 6 MiB more goes only
        # there (the others stop at their socket buffer).
        before = [e[1] for e in big]
        pump(big, payload, 58 << 20, 1.0, 30)
        moved = [e[1] - b for e, b in zip(big, before)]
        leader = max(range(5), key=lambda i: moved[i])
        check(moved[leader] >= 5 << 20 and sorted(moved)[-2] < 2 << 20,
              ("no single leader took the input (MiB moved)", [m >> 20 for m in moved]))
        # The leader stalls (connection open, nothing sent): within about 30 s
        # it is cut off, and the rest land.
        others = [e for i, e in enumerate(big) if i != leader]
        t0 = time.time()
        pump(others, payload, big_size, 20, 120)
        check(all(e[1] == big_size for e in others),
              ("the others stalled behind a silent leader (MiB sent)", [e[1] >> 20 for e in others],
               "held MiB", s.status()["daemon"]["input_held_bytes"] >> 20))
        took = time.time() - t0
        check(25 < took < 110, ("the staller was cut off after (s)", took))
        for e in others:
            r = read_reply(e[0], 60)
            check(r and r.get("ok"), r)
        r = read_reply(big[leader][0], 10)
        check(r and r["error"]["code"] == "busy" and "30 s" in r["error"]["message"], ("the staller's reply", r))
        check(not os.path.exists(os.path.join(ws, f"big{leader}")), "the staller's partial upload was written")
        for i in range(5):
            if i != leader:
                check(os.path.getsize(os.path.join(ws, f"big{i}")) == big_size, f"big{i} was not written whole")
        after = input_released(s, 20)
        check(after == 0, ("input still counted after the uploads", after))
        notes.append(f"a leader silent mid-upload was cut off; the other 4 x 60 MiB uploads landed {took:.0f} s later")
    finally:
        for e in big:
            e[0].close()
        s.stop()


def t_killed_write_temp_swept(d, tmp):
    """A write killed mid-way leaves its temp file; the next worker removes
    it at start (before: 44 files after 200 killed writes, never swept).
    The temp file of a live write (its writer holds the flock) and a
    lookalike name stay."""
    ws = make_ws(tmp, "sweep-ws", SANDBOX, {"sub/keep.txt": "k\n"})
    c = d.conn()
    check(term(c, ws, "true")["ok"], "warm")
    old = time.time() - 60
    stale = os.path.join(ws, "sub", ".vectora-tmp-AbC123")      # as a crash leaves it
    lookalike = os.path.join(ws, ".vectora-tmp-toolong1")
    live = os.path.join(ws, "sub", ".vectora-tmp-LiVe01")        # a write in progress elsewhere
    for path in (stale, lookalike, live):
        with open(path, "w") as f:
            f.write("partial")
        chown_file(path)
        os.utime(path, (old, old))
    held = open(live, "rb")
    fcntl.flock(held, fcntl.LOCK_EX)
    keep = {lookalike, live}
    big = b"x" * (48 << 20)
    killed, seen = 0, set()
    for attempt in range(5):
        c2 = d.conn()
        c2.send({"id": 1, "tool": "file_write", "workspace": ws, "path": f"big{attempt}.bin"}, raw=big)
        t0 = time.time()
        while not [t for t in temps(ws) if t not in keep and t != stale] and time.time() - t0 < 10:
            time.sleep(0.002)
        w = d.ws_status(ws)["worker"]
        kids = worker_procs(w["pid"]) if w else []
        if kids:
            os.kill(kids[-1], signal.SIGKILL)
        try:
            killed += not c2.recv()["ok"]
        except (EOFError, OSError):
            pass
        c2.close()
        # Seen now: a later attempt's fresh worker may sweep it already.
        seen.update(t for t in temps(ws) if t not in keep)
        # Each kill counts against the 5 restarts a minute allows: stop
        # once a killed write left its file, before the limit blocks the
        # worker that is to sweep it (a loaded machine kills every try).
        if killed >= 2 and seen:
            break
    left = sorted(seen)
    check(killed >= 1 and left, ("no write was caught mid-way", killed, left))
    time.sleep(2.5)  # older than a write's create-to-lock window
    r = term(c, ws, "ls -a sub")  # a fresh worker: it sweeps as it starts (once idle, just after)
    check(r["ok"], r)
    t0 = time.time()
    while set(temps(ws)) != keep and time.time() - t0 < 10:
        time.sleep(0.05)
    rest = set(temps(ws))
    check(rest == keep, ("after the sweep", sorted(rest)))
    held.close()
    r = c.call({"tool": "file_write", "workspace": ws, "path": "after.txt", "content": "ok"})
    check(r["ok"], r)
    notes.append(f"temp sweep: {len(left)} temp files of killed writes removed by the next worker")
    c.close()


def t_young_temp_swept_by_the_same_worker(d, tmp):
    """A write killed just before the next worker started left a temp file
    too new for that worker's start-up sweep to judge; it stayed until some
    later worker (the 30-minute soak ended with 2). The worker that found
    it young looks again once it is old enough, without another call."""
    ws = make_ws(tmp, "young-sweep-ws", SANDBOX, {"keep.txt": "k\n"})
    young = os.path.join(ws, ".vectora-tmp-YoUnG1")
    with open(young, "w") as f:
        f.write("partial")
    chown_file(young)
    c = d.conn()
    check(term(c, ws, "true")["ok"], "the first call (its worker starts now)")
    check(os.path.exists(young), "swept while still new: a write just begun could lose its file")
    for _ in range(100):  # SWEEP_MIN_AGE_S (2 s) + 1 s after the start, then at most 7 s more
        if not os.path.exists(young):
            break
        time.sleep(0.1)
    check(not os.path.exists(young), "the young temp file is still there 10 s after the worker started")
    check(d.ws_status(ws)["worker"] is not None, "the worker ended meanwhile (the sweep must be its own)")
    c.close()


def t_temp_swept_when_the_worker_ends(d, tmp):
    """A temp file too new at the worker's first sweep was looked at again
    3 s later: a worker idle-ended before that (the soak's 3 s timeout) left
    it for some later worker, and the soak's end found one. The second look
    now comes as soon as the newest such file is old enough (2 s after it
    was made), before a 3 s idle timeout."""
    ws = make_ws(tmp, "exit-sweep-ws", SANDBOX + "idle_timeout = 3\n", {"keep.txt": "k\n"})
    young = os.path.join(ws, ".vectora-tmp-ExIt01")
    with open(young, "w") as f:
        f.write("partial")
    chown_file(young)
    c = d.conn()
    check(term(c, ws, "true")["ok"], "the first call (its worker starts now)")
    time.sleep(0.6)  # the start's sweep (300 ms after ready) found it too new
    check(os.path.exists(young), "swept while still new")
    gone = wait_for(lambda: not os.path.exists(young), 2.5)
    check(d.ws_status(ws)["worker"] is not None, "the worker ended first: the test cannot tell")
    check(gone, "the temp file is still there 3 s after it was made")
    c.close()


def chown_file(path):
    if ROOT:
        os.lchown(path, OWNER.pw_uid, OWNER.pw_gid)


def host_git(ws, *args):
    subprocess.run(["git", "-c", "safe.directory=*", "-C", ws, *args], check=True, capture_output=True)
    chown_tree(ws)


def t_workspaces_freed(d, tmp):
    """Workspace entries, their cgroups and watches are freed once unused:
    at once when the directory is gone, else 30 s after the last call once
    the worker ended (before: 601 entries listed after their directories
    were deleted, 806 cgroup dirs after 400 cycles). Never freed: an entry
    whose loosening waits for approval (status keeps listing it), nor one
    whose jail is alive with its protected-path snapshot (a host rename
    over .git/config after the GC ran still ends its command)."""
    s = Daemon(tmp, "gc", extra=("--state-dir", os.path.join(tmp, "gc-state")))
    try:
        toml = T_SANDBOX_IDLE1
        wss = [make_ws(tmp, f"gc{i}", toml) for i in range(30)]
        c = s.conn()
        for ws in wss:
            r = term(c, ws, "true")
            check(r["ok"], r)
        # A loosening (the mask removed) that waits for the host's approval.
        pend = make_ws(tmp, "gc-pending", toml, {".env": "SECRET=gc\n"})
        check(term(c, pend, "true")["policy_pending"] is None, "first seen")
        with open(os.path.join(pend, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nenabled = true\nidle_timeout = 1\nmask = []\n")
        r = term(c, pend, "cat .env; echo ran")
        check(r["stdout"] == "ran\n" and 'mask: ".env" is removed' in (r["policy_pending"] or ""), r)
        # A jail kept alive by a long command past every GC round.
        prot = make_ws(tmp, "gc-protect", toml)
        host_git(prot, "init", "-q")
        lc = s.conn()
        lc.send({"id": 7, "tool": "terminal", "workspace": prot, "command": "sleep 100; echo slept", "timeout": 110})
        t_wait = time.time()
        while time.time() - t_wait < 20 and not (s.ws_status(prot) or {}).get("worker"):
            time.sleep(0.2)
        before = s.status()["summary"]["workspaces"]
        groups_before = len(group_names(s.sock)) if ROOT else 0
        check(before == 32, before)
        gone, kept = wss[:20], wss[20:]
        for ws in gone:
            shutil.rmtree(ws)
        t0 = time.time()
        while time.time() - t0 < 20 and s.status()["summary"]["workspaces"] > 12:
            time.sleep(0.5)
        left = [w["path"] for w in s.status()["workspaces"]]
        check(sorted(left) == sorted(os.path.realpath(w) for w in kept + [pend, prot]),
              ("entries of deleted dirs kept", len(left)))
        if ROOT and groups_before:
            check(groups_before == 32 and len(group_names(s.sock)) == 12, (groups_before, group_names(s.sock)))
        # The rest: unused for 30 s (their workers idle-ended after 1 s).
        while time.time() - t0 < 60 and s.status()["summary"]["workspaces"] > 2:
            time.sleep(1)
        time.sleep(6)  # one more GC round past the point the others went
        st = s.status()["workspaces"]
        check(sorted(w["path"] for w in st) == sorted(os.path.realpath(w) for w in (pend, prot)),
              ("unused entries kept, or the pending / live ones freed", [w["path"] for w in st]))
        check('mask: ".env" is removed' in (s.ws_status(pend)["policy_pending"] or ""), s.ws_status(pend))
        if ROOT and groups_before:
            check(group_names(s.sock) and len(group_names(s.sock)) <= 2, group_names(s.sock))
        # The live jail's snapshot is still the one checked: git renames
        # config.lock over .git/config and the command's jail ends.
        host_git(prot, "config", "user.name", "gc-host")
        r = lc.recv()
        check(r.get("id") == 7 and not r["ok"] and r["error"]["code"] == "worker_recycled"
              and ".git/config changed on the host" in r["error"]["message"], r)
        lc.close()
        r = term(c, pend, "cat .env; echo ran")  # still pending, still masked
        check(r["stdout"] == "ran\n" and r["policy_pending"], r)
        r = term(c, kept[0], "echo back")  # a freed entry comes back on the next call
        check(r["ok"] and r["stdout"] == "back\n" and r["sandboxed"], r)
        c.close()
    finally:
        s.stop()


T_SANDBOX_IDLE1 = SANDBOX + "idle_timeout = 1\n"


def t_idle_workspace_memory(d, tmp):
    """What an idle sandboxed workspace costs the daemon: its entry, its
    compiled masks and protected list, its link to the worker. Each compiled
    pattern held a ~24 KiB array sized for the longest pattern possible
    (248 kB per workspace with these 8 masks); measured now: 65-68 kB (below)."""
    s = unperturbed_daemon(tmp, "idle-mem")
    toml = ('[sandbox]\nenabled = true\nmask = [".env", "**/*.pem", "**/.ssh/**", "**/.aws/**", "*.key", '
            '"secrets/**", "**/id_*", "*.p12"]\n')
    n = 24
    wss = [make_ws(tmp, f"idle-mem{i}", toml) for i in range(n + 1)]
    try:
        c = s.conn()
        check(term(c, wss[0], "true")["ok"], "warm-up")
        time.sleep(0.5)
        base = rss_kib(s.p.pid)
        for ws in wss[1:]:
            r = term(c, ws, "true")
            check(r["ok"] and r["sandboxed"], r)
        time.sleep(0.5)
        per = (rss_kib(s.p.pid) - base) / n
        notes.append(f"daemon RSS per idle sandboxed workspace (8 masks): {per:.0f} kB")
        # 65-68 kB as root and as a user since dd3550e. Before, 90-97 kB:
        # a root daemon's fanotify cache was a fixed table of 640 KiB (736
        # from d96057f, +4 kB here) written whole by the first flush after
        # the base was read, and a user daemon allocated it, failed to get
        # a group and freed it (glibc's mmap threshold rose: +11 kB here).
        check(SANITIZED or per < 76, ("daemon RSS per idle workspace, kB", per))
        c.close()
    finally:
        s.stop()


def t_leftover_killed_with_last_jail(d, tmp):
    """A process in a workspace's cgroup that is outside its jail's process
    tree (as an inner bwrap left with ppid 1 was, after ~490 spawns) ends
    when the workspace's last jail ends, not only at the daemon's exit."""
    need_cgroups(d)
    ws = make_ws(tmp, "leftover-ws", T_SANDBOX_IDLE1)
    c = d.conn()
    check(term(c, ws, "true")["ok"], "warm")
    # A call in flight keeps the jail from idling out (1 s) while the
    # stray is put in its group: on a loaded machine the steps below took
    # longer than that, and the group was gone before the write.
    busy = d.conn()
    busy.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "sleep 5"})
    groups = [g for g in ws_groups(d.sock) if "/pids/" in g or "/memory/" not in g]
    pid = d.ws_status(ws)["worker"]["pid"]
    mine = [g for g in groups if pid in group_procs(g)]
    check(mine, ("the jail's group", groups))
    stray = subprocess.Popen(["sleep", "300"])
    try:
        with open(os.path.join(mine[0], "cgroup.procs"), "w") as f:
            f.write(str(stray.pid))
        check(busy.recv().get("ok"), "the call that kept the jail busy")
        busy.close()
        t0 = time.time()  # the worker idle-ends after 1 s
        while time.time() - t0 < 10 and stray.poll() is None:
            time.sleep(0.1)
        check(stray.poll() is not None, "the stray process outlived the workspace's last jail")
        check(term(c, ws, "echo again")["stdout"] == "again\n", "the next call")
    finally:
        if stray.poll() is None:
            stray.kill()
        stray.wait()
    c.close()


# ---------------------------------------------------------------- status


def inotify_instances(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            pass
    return n


def t_many_workspaces_watched(d, tmp):
    """140 warm sandboxed workspaces (more than fs.inotify.max_user_instances'
    default 128, which every process of the user shares): the daemon holds
    at most 4 inotify instances, no workspace reports its masks over time
    unwatched, and a masked file the host creates in the last one is masked
    in its jail (before: two instances per workspace; from about the 60th
    workspace on, masks over time were degraded and the protected paths
    were polled every 10 ms)."""
    N = 140
    s = Daemon(tmp, "many-watched", extra=["--max-workers", str(N + 10)], log_level="info")
    try:
        wss = [make_ws(tmp, f"mw{i:03d}", SANDBOX, {"a.txt": "a\n"}) for i in range(N)]
        c = s.conn()
        for chunk in range(0, N, 10):
            for i in range(chunk, min(N, chunk + 10)):
                c.send({"id": i, "tool": "terminal", "workspace": wss[i], "command": "cat a.txt"})
            for _ in range(chunk, min(N, chunk + 10)):
                r = c.recv()
                check(r.get("ok") and r["stdout"] == "a\n", r)
                # As an ordinary user memory is never enforced per workspace
                # (no cgroups): that note is expected; any other (a watch
                # that could not be added) is not.
                worse = [x for x in r["sandbox"]["degraded"] if ROOT or not x.startswith("memory: not enforced")]
                check(not worse, ("degraded", r["id"], r["sandbox"]["degraded"]))
        held = inotify_instances(s.pid)
        check(1 <= held <= 4, ("inotify instances held by the daemon", held))
        last = wss[-1]
        with open(os.path.join(last, ".env"), "w") as f:
            f.write("SECRET=1\n")
        chown_file(os.path.join(last, ".env"))
        deadline = time.time() + 10
        out = None
        while time.time() < deadline:
            r = term(c, last, "cat .env; echo end")
            out = r.get("stdout")
            if r.get("ok") and out == "end\n":
                break
            time.sleep(0.1)
        check(out == "end\n", ("the .env the host made is readable in the running jail", out))
        notes.append(f"{N} warm sandboxed workspaces: {held} inotify instances in the daemon")
        c.close()
    finally:
        s.stop()


def t_status_at_scale(d, tmp):
    """status with 10 000 workspaces: a summary and pages that each fit a
    line (before: too_large from 1 500 on, with a hint that did not apply).
    Paged by offset, an entry that goes meanwhile shifts the later ones
    (one may be on no page); paged by cursor, none is missed."""
    base = os.path.join(tmp, "many")
    os.makedirs(base)
    N = 10000
    paths = []
    for i in range(N):
        p = os.path.join(base, f"w{i:05d}")
        os.makedirs(p)
        with open(os.path.join(p, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nbogus = 1\n")  # refused at once: no worker needed
        paths.append(p)
    c = d.conn()
    sent = 0
    for chunk in range(0, N, 200):
        for p in paths[chunk:chunk + 200]:
            c.send({"id": sent, "tool": "terminal", "workspace": p, "command": "true"})
            sent += 1
        for _ in range(200):
            r = c.recv()
            check(r["error"]["code"] == "config_invalid", r)
    t0 = time.time()
    st = c.call({"tool": "status"})
    check(st["ok"] and st["summary"]["workspaces"] >= N and st["summary"]["refused"] >= N, st.get("summary"))
    seen, off, pages = [], 0, 0
    while off is not None:
        c.send({"id": "p", "tool": "status", "offset": off, "limit": 1000})
        line = b""
        while b"\n" not in c.buf:
            c._fill()
        line = c.buf.split(b"\n", 1)[0]
        r = c.recv()
        check(r["ok"] and len(line) <= 1 << 20, (len(line), r.get("error")))
        seen += [w["path"] for w in r["workspaces"]]
        off = r["next_offset"]
        pages += 1
    took = time.time() - t0
    # The daemon is the file's shared one: the other cases' few entries may
    # come or go while the pages are read (an ASan run saw the summary
    # taken before the pages differ from them), so the count is checked
    # against the summaries before and after, not one of them.
    after = c.call({"tool": "status", "limit": 1})["summary"]["workspaces"]
    before = st["summary"]["workspaces"]
    check(len(seen) == len(set(seen)), ("a workspace on two pages", len(seen), len(set(seen))))
    check(seen == sorted(seen), "the pages are not in path order")
    check(N <= len(seen) <= max(before, after) and min(before, after) - len(seen) <= before - N,
          ("workspaces seen, summary before and after", len(seen), before, after))
    # Pages by offset skip one entry for each that goes before their
    # place while they are read (an ASan run: a GC tick freed an earlier
    # case's entry, and one of these was on no page): at most as many as
    # the other cases had; the pages by cursor below must hold all.
    missing = set(paths) - set(seen)
    check(len(missing) <= before - N, ("missing workspaces", len(missing), before, after))
    # The same pages by cursor (the last path of the page before): a path
    # no longer in the table (one that went) still says where to go on.
    by_cursor, cursor = [], None
    while True:
        req = {"tool": "status", "limit": 1000}
        if cursor is not None:
            req["after"] = cursor
        r = c.call(req)
        check(r["ok"], r.get("error"))
        by_cursor += [w["path"] for w in r["workspaces"]]
        cursor = r["next_after"]
        if cursor is None:
            break
    check(set(paths) <= set(by_cursor) and len(by_cursor) == len(set(by_cursor)) and by_cursor == sorted(by_cursor),
          ("the pages by cursor", len(by_cursor)))
    r = c.call({"tool": "status", "after": paths[1233] + "-gone", "limit": 2})
    check([w["path"] for w in r["workspaces"]] == paths[1234:1236] and r["next_after"] == paths[1235],
          ("a cursor past a path not in the table", [w["path"] for w in r["workspaces"]], r.get("next_after")))
    r = c.call({"tool": "status", "after": paths[0], "offset": 3})
    check(not r["ok"] and r["error"]["code"] == "bad_request" and "not both" in r["error"]["message"], r)
    r = c.call({"tool": "status", "workspace": paths[1234]})
    check([w["path"] for w in r["workspaces"]] == [paths[1234]] and r["next_offset"] is None and r["next_after"] is None,
          r["workspaces"])
    cli = subprocess.run([CLI, "status", "--json"], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, VECTORA_SANDBOX_SOCKET=d.sock))
    check(cli.returncode == 0, cli.stderr)
    # The CLI reads its pages later still: the same bounds hold (entries of
    # other cases may have gone since; this case adds none of its own).
    via_cli = [w["path"] for w in json.loads(cli.stdout)["workspaces"]]
    check(len(via_cli) == len(set(via_cli)) and set(paths) <= set(via_cli)
          and len(via_cli) <= max(before, after),
          ("workspaces through the CLI, summary before and after", len(via_cli), before, after))
    notes.append(f"status over {len(seen)} workspaces: {pages} pages in {took:.2f} s")
    c.close()


# ---------------------------------------------------------------- shutdown


def t_shutdown_order(d, tmp):
    """SIGTERM with calls in flight: each gets "interrupted" (it was running;
    a queued one would get "shutting_down"; before either: bare
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
        check(codes == ["interrupted"] * 9, codes)
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


TESTS = [t_second_daemon_same_socket, t_instances_own_cgroups, t_dead_instance_swept, t_private_run_spares_live_jails,
         t_flood_reply_delivered,
         t_inflight_cap, t_unread_replies_bounded, t_big_uploads_bounded, t_leader_finishes_past_small_holders,
         t_stalled_leader_demoted, t_killed_write_temp_swept, t_young_temp_swept_by_the_same_worker, t_temp_swept_when_the_worker_ends,
         t_workspaces_freed, t_idle_workspace_memory, t_leftover_killed_with_last_jail, t_many_workspaces_watched,
         t_status_at_scale, t_shutdown_order]


def main():
    tap = vtest.Tap()
    if not os.access(DAEMON, os.X_OK) or not shutil.which("bwrap"):
        tap.skip("vectora-sandboxd reliability", "the daemon is not built or bwrap is missing")
        return tap.finish()
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="vs-rel-test-")
    os.chmod(tmp, 0o755)
    d = Daemon(tmp)
    try:
        for t in TESTS:
            if only and t.__name__ not in only:
                continue
            tap.case(t, d, tmp)
            if d.p.poll() is not None:
                tap.ok("the shared daemon survived " + t.__name__, False, open(d.log).read()[-3000:])
                d = Daemon(tmp, "d-again-%d" % tap.n)
    finally:
        d.stop()
        if tap.failed and os.environ.get("VECTORA_TEST_KEEP"):
            tap.note("kept " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for line in notes:
        tap.note(line)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
