# SPDX-License-Identifier: MIT
"""A client connection to vectora-sandboxd for the Python benchmarks
(one request at a time, its reply by id), and a percentile."""
import json
import socket


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rb")
        self.n = 0

    def call(self, req):
        self.n += 1
        self.s.sendall(json.dumps(dict(req, id=self.n)).encode() + b"\n")
        while True:
            r = json.loads(self.f.readline())
            if r.get("id") == self.n:
                return r


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]


def start_daemon(build, tmp):
    """BUILD's vectora-sandboxd on tmp/d.sock (log tmp/d.log), in the
    foreground; the process and a first connection once it answers."""
    import os
    import subprocess
    import time
    sock = os.path.join(tmp, "d.sock")
    env = dict(os.environ, VECTORA_BUILD_ROOT=build, VECTORA_WORKER=os.path.join(build, "src/worker/vectora-worker"))
    d = subprocess.Popen([os.path.join(build, "src/daemon/vectora-sandboxd"), "--foreground", "--socket", sock,
                          "--log-file", os.path.join(tmp, "d.log")], env=env, stdin=subprocess.DEVNULL)
    for _ in range(500):
        try:
            return d, sock, Conn(sock)
        except OSError:
            time.sleep(0.01)
    d.kill()
    d.wait()
    raise SystemExit("the daemon of %s did not answer" % build)
