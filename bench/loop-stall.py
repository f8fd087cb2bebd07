#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What one busy jail costs every other client of the daemon: the
latency of `status` (answered on the daemon's loop) from one connection
while another connection runs `terminal true` back to back in a workspace
whose jail holds more than a quarter of its process limit in threads (a
dev server, a build: 20 sleeping threads against `pids = 64`), where each
call ends with the looks at the jail's processes that tell a fork bomb's
leftovers from a steady load. Also that workspace's own call latency.

For one or more builds side by side: each build runs RUNS times, builds
interleaved run by run; every run's figures are printed (median, p90,
p99, max in ms). Not part of `make bench` (it compares builds);
bench/analysis.md quotes it.

Usage: loop-stall.py BUILD_DIR...   (as root or as an ordinary user)"""
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
STATUS_CALLS = 300
OWN_CALLS = 40
BUSY = ("nohup python3 -c 'import threading, time\n"
        "for i in range(20): threading.Thread(target=time.sleep, args=(1e6,), daemon=True).start()\n"
        "time.sleep(1e6)' >/dev/null 2>&1 &")


def one_run(build):
    tmp = tempfile.mkdtemp(prefix="vectora-loop-stall-")
    os.chmod(tmp, 0o755)
    busy, other = os.path.join(tmp, "busy"), os.path.join(tmp, "other")
    for ws, toml in ((busy, "[sandbox]\nenabled = true\n[sandbox.limits]\npids = 64\n"),
                     (other, "[sandbox]\nenabled = true\n")):
        os.makedirs(ws)
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write(toml)
        if os.geteuid() == 0:  # the jail never runs as host uid 0
            for p in (ws, os.path.join(ws, "vectora.toml")):
                os.lchown(p, 65534, 65534)
    d, sock, c = start_daemon(build, tmp)
    try:
        r = c.call({"tool": "terminal", "workspace": busy, "command": BUSY})
        assert r.get("ok"), r
        assert c.call({"tool": "terminal", "workspace": other, "command": "true"}).get("ok")
        time.sleep(1)
        own = []
        for _ in range(OWN_CALLS):
            t0 = time.perf_counter()
            assert c.call({"tool": "terminal", "workspace": busy, "command": "true"}).get("ok")
            own.append((time.perf_counter() - t0) * 1000)
        stop = []

        def hammer():
            h = Conn(sock)
            while not stop:
                h.call({"tool": "terminal", "workspace": busy, "command": "true"})

        th = threading.Thread(target=hammer)
        th.start()
        s = Conn(sock)
        lat = []
        for _ in range(STATUS_CALLS):
            t0 = time.perf_counter()
            s.call({"tool": "status"})
            lat.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.002)
        stop.append(1)
        th.join()
        return own, lat
    finally:
        d.terminate()
        d.wait(20)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    builds = sys.argv[1:]
    if not builds:
        sys.exit(__doc__)
    for run in range(RUNS):
        for b in builds:
            own, lat = one_run(os.path.abspath(b))
            print("%-28s run %d  status meanwhile: median %.2f p90 %.2f p99 %.2f max %.2f ms;"
                  "  the busy jail's own call: median %.2f ms" %
                  (b, run + 1, statistics.median(lat), pct(lat, 0.9), pct(lat, 0.99), max(lat),
                   statistics.median(own)), flush=True)


if __name__ == "__main__":
    main()
