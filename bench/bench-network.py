#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A 10 MiB download through the network allowlist's proxy against the same
download from the host, side by side (issue 14).

An HTTP server on the host's own address serves 10 MiB of random bytes; a
workspace with network = ["ADDR:PORT"] downloads it with curl inside the jail
(through HTTP_PROXY: the worker's relay, the daemon's proxy), and the host
downloads it with the same curl command directly. Both figures are curl's own
time_total, so the tool call around the jailed one is not counted. Beside
them, the floor: the host's curl through two zero-work splice relays (TCP, a
unix socket, TCP), what the relay and the proxy cost at the least. Rounds
alternate jail, host and floor. Prints one JSON line for bench/report.py."""
import fcntl
import http.server
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.environ.get("VECTORA_BUILD_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../build")
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
# The daemon finds the build tree's programs only through these.
os.environ.setdefault("VECTORA_WORKER", os.path.join(BUILD, "src/worker/vectora-worker"))
os.environ.setdefault("VECTORA_PROXY", os.path.join(BUILD, "src/proxy/vectora-sandbox-proxy"))
ROUNDS, PER_ROUND, SIZE = 5, 4, 10 << 20
CURL = "curl -s -f -o /dev/null -w '%{time_total} %{size_download}'"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def host_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]
    finally:
        s.close()


def call(sock, req):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps(dict(req, id=1)).encode() + b"\n")
    buf = b""
    while b"\n" not in buf:
        d = s.recv(1 << 20)
        if not d:
            raise RuntimeError("daemon closed the connection")
        buf += d
    s.close()
    return json.loads(buf.split(b"\n", 1)[0])


def splice_pump(src, dst):
    """One direction of a zero-work relay: blocking splice through a 1 MiB pipe."""
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError:
        pass
    try:
        while True:
            n = os.splice(src.fileno(), w, 1 << 20)
            if n == 0:
                break
            while n:
                n -= os.splice(r, dst.fileno(), n)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        os.close(r)
        os.close(w)


def relay(listener, connect):
    """Accepts on listener; each connection relayed both ways to a new socket from connect()."""
    while True:
        try:
            a, _ = listener.accept()
        except OSError:
            return
        b = connect()
        for x, y in ((a, b), (b, a)):
            threading.Thread(target=splice_pump, args=(x, y), daemon=True).start()


def floor_pair(tmp, addr, port):
    """The floor of two user-space relays: 127.0.0.1 -> a unix socket -> the server, each hop a
    zero-work splice relay (the jail's relay and the proxy without their policy). Its URL's port."""
    path = os.path.join(tmp, "floor.sock")
    u = socket.socket(socket.AF_UNIX)
    u.bind(path)
    u.listen(8)
    threading.Thread(target=relay, args=(u, lambda: socket.create_connection((addr, port))), daemon=True).start()

    def to_unix():
        c = socket.socket(socket.AF_UNIX)
        c.connect(path)
        return c
    t = socket.socket()
    t.bind(("127.0.0.1", 0))
    t.listen(8)
    threading.Thread(target=relay, args=(t, to_unix), daemon=True).start()
    return t.getsockname()[1]


def parse(out):
    t, n = out.split()
    if int(float(n)) != SIZE:
        raise RuntimeError(f"downloaded {n} bytes, not {SIZE}")
    return float(t) * 1e6


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-bench-network-")
    os.chmod(tmp, 0o755)
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    with open(os.path.join(www, "10m.bin"), "wb") as f:
        f.write(os.urandom(SIZE))
    addr = host_address()
    srv = http.server.ThreadingHTTPServer((addr, 0), lambda *a, **k: Quiet(*a, directory=www, **k))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://{addr}:{srv.server_address[1]}/10m.bin"
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write(f'[sandbox]\nnetwork = ["{addr}:{srv.server_address[1]}"]\n')
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        for p in (ws, os.path.join(ws, "vectora.toml")):
            os.chown(p, nobody.pw_uid, nobody.pw_gid)
    floor_url = f"http://127.0.0.1:{floor_pair(tmp, addr, srv.server_address[1])}/10m.bin"
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen([DAEMON, "--foreground", "--socket", sock, "--log-file", os.path.join(tmp, "d.log"),
                          "--audit-log", os.path.join(tmp, "d.audit")], stdin=subprocess.DEVNULL)
    try:
        for _ in range(500):
            try:
                socket.socket(socket.AF_UNIX).connect(sock)
                break
            except OSError:
                time.sleep(0.01)
        call(sock, {"tool": "terminal", "workspace": ws, "command": "true"})  # warm worker
        jail, host, floor = [], [], []
        for _ in range(ROUNDS):
            jr, hr, fr = [], [], []
            for _ in range(PER_ROUND):
                r = call(sock, {"tool": "terminal", "workspace": ws, "command": f"{CURL} {url}", "timeout": 120})
                if not r.get("ok") or r.get("exit_code") != 0:
                    raise RuntimeError(f"jailed download failed: {r}")
                jr.append(parse(r["stdout"]))
                out = subprocess.run(f"{CURL} --noproxy '*' {url}", shell=True, capture_output=True, text=True,
                                     check=True).stdout
                hr.append(parse(out))
                out = subprocess.run(f"{CURL} --noproxy '*' {floor_url}", shell=True, capture_output=True, text=True,
                                     check=True).stdout
                fr.append(parse(out))
            jail.append(jr)
            host.append(hr)
            floor.append(fr)
        mib = SIZE / (1 << 20)
        doc = {
            "bench": "network",
            "figures": [
                {"key": "network.proxy", "label": "10 MiB download in the jail, through the proxy (curl time_total)",
                 "unit": "us", "rounds": jail},
                {"key": "network.host", "label": "10 MiB download on the host, direct (curl time_total)",
                 "unit": "us", "rounds": host},
                {"key": "network.floor", "label": "10 MiB download on the host through two zero-work splice relays "
                 "(TCP, unix socket, TCP: the floor of the relay and the proxy)", "unit": "us", "rounds": floor},
                {"key": "network.proxy_mibs", "label": "through the proxy: throughput", "unit": "MiB/s",
                 "rounds": [[mib / (t / 1e6) for t in r] for r in jail]},
                {"key": "network.host_mibs", "label": "from the host: throughput", "unit": "MiB/s",
                 "rounds": [[mib / (t / 1e6) for t in r] for r in host]},
            ],
            "ratios": [{"key": "network.ratio", "label": "download time: through the proxy / from the host",
                        "num": "network.proxy", "den": "network.host"},
                       {"key": "network.floor_ratio", "label": "download time: through two zero-work relays / from the host",
                        "num": "network.floor", "den": "network.host"},
                       {"key": "network.proxy_floor", "label": "download time: through the proxy / through two zero-work relays",
                        "num": "network.proxy", "den": "network.floor"}],
            "notes": [f"An HTTP server on the host's own address ({addr}) serves 10 MiB of random bytes; the "
                      "workspace's network = [\"ADDR:PORT\"] lets the jail fetch it with `curl` through HTTP_PROXY "
                      "(the worker's relay on 127.0.0.1:3128 inside the jail, then the proxy process, vectora-sandbox-proxy); the host "
                      "runs the same `curl` with --noproxy. Figures are curl's own time_total. "
                      f"{ROUNDS} rounds of {PER_ROUND} downloads each way, alternating (ABAB).",
                      "The floor: the same curl on the host through two relays that do nothing but move bytes with "
                      "blocking splice(2) through 1 MiB pipes (Python threads, bench-network.py's floor_pair): "
                      "127.0.0.1 -> a unix socket -> the server, the hops of the jail's relay and the proxy without "
                      "their policy, event loop or jail; what two user-space relays cost at least."],
        }
        print(json.dumps(doc))
    finally:
        d.terminate()
        d.wait(10)
        srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
