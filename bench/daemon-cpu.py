#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon's own CPU per call, for one or more builds side by side:
`perf stat -e task-clock` on the daemon's pid over N warm calls of one
kind from one persistent connection, divided by N, and the calls' median
(client-side). Each build runs RUNS times, builds interleaved run by run;
the middle run of each is printed. Not part of `make bench` (it needs perf
and compares builds); bench/analysis.md quotes it.

Usage: daemon-cpu.py term|read|readtext N BUILD_DIR...   (run as root or
with perf_event_paranoid allowing it; a sandboxed git workspace is made
for each run)"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

RUNS = 3


def one_run(build, mode, n):
    # The daemon takes only absolute paths for what a jail binds (the
    # worker's among them): a relative build directory made every start fail.
    build = os.path.abspath(build)
    env = dict(os.environ, VECTORA_BUILD_ROOT=build, VECTORA_WORKER=os.path.join(build, "src/worker/vectora-worker"))
    tmp = tempfile.mkdtemp(prefix="vectora-daemon-cpu-")
    os.chmod(tmp, 0o755)
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write("[sandbox]\nenabled = true\n")
    with open(os.path.join(ws, "f4k.txt"), "wb") as f:
        f.write(b"x" * 4096)
    subprocess.run(["git", "init", "-q", ws], check=True)
    if os.geteuid() == 0:  # the jail never runs as host uid 0
        for dp, _, fns in os.walk(ws):
            for p in [dp] + [os.path.join(dp, fn) for fn in fns]:
                os.lchown(p, 65534, 65534)
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen([os.path.join(build, "src/daemon/vectora-sandboxd"), "--foreground", "--socket", sock,
                          "--log-file", os.path.join(tmp, "d.log"), "--log-level", "warning",
                          "--audit-log", os.path.join(tmp, "d.audit"), "--state-dir", os.path.join(tmp, "state")],
                         stdin=subprocess.DEVNULL, env=env)
    try:
        for _ in range(1000):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(sock)
                break
            except OSError:
                s.close()
                time.sleep(0.01)
        f = s.makefile("rb")
        req = {"term": {"tool": "terminal", "workspace": ws, "argv": ["/bin/true"]},
               "read": {"tool": "file_read", "workspace": ws, "path": "f4k.txt", "binary": True},
               "readtext": {"tool": "file_read", "workspace": ws, "path": "f4k.txt"}}[mode]
        line = (json.dumps(req) + "\n").encode()

        def call():
            s.sendall(line)
            h = json.loads(f.readline())
            if not h.get("ok"):
                raise RuntimeError(h)
            if "raw" in h:
                f.read(h["raw"])

        for _ in range(200):
            call()
        out = os.path.join(tmp, "perf.txt")
        p = subprocess.Popen(["perf", "stat", "-e", "task-clock", "-p", str(d.pid), "-o", out])
        time.sleep(0.5)
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            call()
            ts.append((time.perf_counter() - t0) * 1e6)
        p.send_signal(2)
        p.wait()
        with open(out) as pf:
            ms = float(re.search(r"([\d.,]+)\s+msec task-clock", pf.read()).group(1).replace(",", ""))
        s.close()
    finally:
        d.terminate()
        d.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    ts.sort()
    return ms * 1000 / n, ts[len(ts) // 2]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    mode, n, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    res = {b: [] for b in builds}
    for _ in range(RUNS):
        for b in builds:
            res[b].append(one_run(b, mode, n))
    for b in builds:
        cpu = sorted(x[0] for x in res[b])
        med = sorted(x[1] for x in res[b])
        print(f"{mode} {b}: daemon CPU per call {cpu[RUNS // 2]:.1f} us (runs {', '.join('%.1f' % x for x in cpu)}); "
              f"call median {med[RUNS // 2]:.0f} us (runs {', '.join('%.0f' % x for x in med)})")


if __name__ == "__main__":
    main()
