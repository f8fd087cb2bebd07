#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a jail's start costs where the root monitor starts it: N
sandboxed workspaces owned by an ordinary user (uid 65534 when run as
root: the case the monitor's jail_spawn serves; a root-owned workspace's
jail is still started by the daemon itself), one first call
(`terminal true`) each, WINDOW in flight over as many connections; the
time from the first request to the last reply, and each call's latency.
Then the same N workspaces' warm calls, one at a time (the monitor is off
that path: the figure must not move).

For one or more builds side by side: each build runs RUNS times, builds
interleaved run by run; every run's figures are printed (total seconds;
first-call median, p90 and max in ms; warm median). Not part of
`make bench` (it compares builds); docs/benchmarks.md quotes it.

Usage: start-owner.py [-n N] BUILD_DIR...   (as root)"""
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemonconn import Conn, pct, start_daemon  # noqa: E402

RUNS = 3
WINDOW = 8
WARM = 200


def one_run(build, n):
    tmp = tempfile.mkdtemp(prefix="vectora-start-owner-")
    os.chmod(tmp, 0o755)
    wss = []
    for i in range(n):
        ws = os.path.join(tmp, "ws%04d" % i)
        os.makedirs(ws)
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nenabled = true\nidle_timeout = 3600\n")
        for p in (ws, os.path.join(ws, "vectora.toml")):
            os.lchown(p, 65534, 65534)
        wss.append(ws)
    d, sock, _c = start_daemon(build, tmp)
    try:
        lat, lock, todo = [], threading.Lock(), list(wss)

        def worker():
            c = Conn(sock)
            while True:
                with lock:
                    if not todo:
                        return
                    ws = todo.pop()
                t = time.monotonic()
                r = c.call({"tool": "terminal", "workspace": ws, "argv": ["/bin/true"]})
                if not r.get("ok"):
                    raise SystemExit("a first call failed: %s" % r)
                with lock:
                    lat.append((time.monotonic() - t) * 1e3)

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker) for _ in range(WINDOW)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total = time.monotonic() - t0
        if len(lat) != n:
            raise SystemExit("only %d of %d first calls answered" % (len(lat), n))
        c = Conn(sock)
        warm = []
        for i in range(WARM):
            t = time.monotonic()
            c.call({"tool": "terminal", "workspace": wss[i % n], "argv": ["/bin/true"]})
            warm.append((time.monotonic() - t) * 1e3)
        return total, lat, warm
    finally:
        d.terminate()
        d.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    args = sys.argv[1:]
    n = 100
    if args[:1] == ["-n"]:
        n, args = int(args[1]), args[2:]
    if not args or os.geteuid() != 0:
        raise SystemExit(__doc__)
    res = {b: [] for b in args}
    for run in range(RUNS):
        for b in args:
            total, lat, warm = one_run(b, n)
            res[b].append(total)
            print("%s run %d: %d first calls in %.2f s; first call median %.1f ms, p90 %.1f, max %.1f; "
                  "warm median %.2f ms" % (b, run + 1, n, total, statistics.median(lat), pct(lat, 0.9), max(lat),
                                          statistics.median(warm)), flush=True)
    for b in args:
        print("%s: total median %.2f s (min %.2f, max %.2f)" % (b, statistics.median(res[b]), min(res[b]), max(res[b])))


if __name__ == "__main__":
    main()
