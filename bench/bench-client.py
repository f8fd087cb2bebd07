#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon as a Python agent platform calls it (issue 15): standard
library only, one persistent connection, requests encoded with json.dumps
and replies decoded with json.loads on every call, against the direct
paths such a platform has (os.posix_spawn, subprocess.run, open/read).

Interleaved call by call (A B C ...), rounds of CALLS; ratios are taken
round by round by bench/report.py. Also measured in the same rounds: the
client's own encoding and decoding of one call (in-process), a socket
round trip to an echoing process, the same through a zero-work relay
process (4 hops: the floor of a client -> daemon -> worker design, for a
terminal call's sizes and a 4 KiB read's), a request the daemon answers by
itself, and the worker alone (started directly on a socket pair, as the daemon
starts it in an unsandboxed workspace) with its own duration_us: the
pieces of the per-stage breakdown. Prints one JSON line for report.py.

Usage: bench-client.py [ROUNDS [CALLS]]"""
import json
import os
import pwd
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("VECTORA_BUILD_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../build")
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
WORKER = os.path.join(BUILD, "src/worker/vectora-worker")
os.environ.setdefault("VECTORA_WORKER", WORKER)  # the daemon finds its worker there (no build path compiled in)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
TRUE = "/bin/true"
# The error codes' names, from the Python client's table (itself checked
# against the daemon's by test-docs); the client itself is not used.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../clients/python/src"))
from vectora_sandbox.errors import ErrorCode  # noqa: E402
now = time.perf_counter


class Conn:
    """A line-oriented client as a platform writes it: header line, then
    "raw" bytes when the header says so."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""
        self.id = 0

    def send(self, req):
        self.id += 1
        self.s.sendall(json.dumps(dict(req, id=self.id)).encode() + b"\n")

    def recv(self):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                break
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        msg = json.loads(self.buf[:i])
        self.buf = self.buf[i + 1:]
        raw = None
        if "raw" in msg:
            n = msg["raw"]
            while len(self.buf) < n:
                d = self.s.recv(1 << 20)
                if not d:
                    raise EOFError("connection closed")
                self.buf += d
            raw, self.buf = self.buf[:n], self.buf[n:]
        return msg, raw

    def call(self, req):
        self.send(req)
        return self.recv()


def timed(f):
    t0 = now()
    r = f()
    return (now() - t0) * 1e6, r


def spawn_true():
    pid = os.posix_spawn(TRUE, [TRUE], os.environ)
    if os.waitpid(pid, 0)[1] != 0:
        raise RuntimeError("/bin/true failed")


def subprocess_true():
    subprocess.run([TRUE], check=True)


def jail_owner():
    if os.geteuid() != 0:
        return None
    nobody = pwd.getpwnam("nobody")
    return nobody.pw_uid, nobody.pw_gid


def make_ws(tmp, name, toml, files=()):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    if toml:
        with open(os.path.join(d, "vectora.toml"), "w") as f:
            f.write(toml)
    for fn, data in files:
        with open(os.path.join(d, fn), "wb") as f:
            f.write(data)
    own = jail_owner()
    if own:
        for dp, dns, fns in os.walk(d):
            os.chown(dp, *own)
            for fn in fns:
                os.chown(os.path.join(dp, fn), *own)
    return d


def recv_n(s, n):
    """Reads exactly n bytes; False at the peer's end."""
    while n > 0:
        d = s.recv(n)
        if not d:
            return False
        n -= len(d)
    return True


def echo_serve(s, req_len, reply):
    """In a child: answers each req_len-byte message with reply, until the end."""
    try:
        while recv_n(s, req_len):
            s.sendall(reply)
    finally:
        os._exit(0)


def echo_child():
    """A process that answers each request-sized message with a reply-sized one."""
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        a.close()
        echo_serve(b, 128, b"r" * 384)
    b.close()
    return a, pid


def echo_round_trip(a):
    a.sendall(b"q" * 128)
    if not recv_n(a, 384):
        raise EOFError("echo child gone")


def relay_child(req_len, reply_len):
    """A relay process forwarding whatever arrives on one side to the
    other (polling both, as the daemon's loop does), with an echo process
    behind it answering each req_len-byte message with a reply_len-byte one.
    Returns this side's socket and the two pids."""
    up_a, up_b = socket.socketpair()
    down_a, down_b = socket.socketpair()
    echo = os.fork()
    if echo == 0:
        up_a.close(), up_b.close(), down_a.close()
        echo_serve(down_b, req_len, b"r" * (reply_len - 1) + b"\n")
    down_b.close()
    relay = os.fork()
    if relay == 0:
        up_a.close()
        try:
            p = select.poll()
            other = {up_b.fileno(): down_a, down_a.fileno(): up_b}
            socks = {up_b.fileno(): up_b, down_a.fileno(): down_a}
            for fd in other:
                p.register(fd, select.POLLIN)
            while True:
                for fd, _ in p.poll():
                    d = socks[fd].recv(65536)
                    if not d:
                        os._exit(0)
                    other[fd].sendall(d)
        finally:
            os._exit(0)
    up_b.close()
    down_a.close()
    return up_a, (echo, relay), req_len, reply_len


def relay_round_trip(r):
    s, _, req_len, reply_len = r
    s.sendall(b"q" * (req_len - 1) + b"\n")
    if not recv_n(s, reply_len):
        raise EOFError("relay child gone")


def relay_stop(r):
    r[0].close()
    for pid in r[1]:
        os.waitpid(pid, 0)


def worker_direct(ws):
    """The worker alone on a socket pair, in direct mode (as the daemon runs
    it for an unsandboxed workspace): the daemon and its hop taken out."""
    mine, theirs = socket.socketpair()
    p = subprocess.Popen([WORKER], stdin=theirs, stdout=theirs, stderr=subprocess.DEVNULL, close_fds=True)
    theirs.close()
    w = Conn(mine)
    w.recv()  # hello
    mine.sendall(json.dumps({"type": "init", "mode": "direct", "workspace": ws,
                             "env": {"PATH": "/usr/bin:/bin"}, "seccomp_bpf": None, "landlock": None}).encode() + b"\n")
    w.recv()  # ready
    return w, p


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-bench-client-")
    os.chmod(tmp, 0o755)
    data4k = bytes((i * 7 + 13) % 95 + 32 for i in range(4096))
    ws = make_ws(tmp, "ws", "[sandbox]\nenabled = true\n", [("f4k.txt", data4k)])
    ws_un = make_ws(tmp, "ws-un", None)
    direct_file = os.path.join(tmp, "direct4k.txt")
    with open(direct_file, "wb") as f:
        f.write(data4k)
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen([DAEMON, "--foreground", "--socket", sock, "--log-file", os.path.join(tmp, "d.log"),
                          "--log-level", "warning", "--audit-log", os.path.join(tmp, "d.audit"),
                          "--state-dir", os.path.join(tmp, "state")], stdin=subprocess.DEVNULL)
    echo, echo_pid = None, None
    relays = []
    worker = None
    try:
        for _ in range(1000):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)
                break
            except OSError:
                s.close()
                if d.poll() is not None:
                    raise RuntimeError("the daemon exited at start")
                time.sleep(0.01)
        c = Conn(s)
        echo, echo_pid = echo_child()
        relays.append(relay_child(128, 384))
        relays.append(relay_child(128, 4096 + 128))
        worker, wproc = worker_direct(ws_un)

        term = {"tool": "terminal", "workspace": ws, "argv": [TRUE]}
        term_un = {"tool": "terminal", "workspace": ws_un, "argv": [TRUE]}
        read_text = {"tool": "file_read", "workspace": ws, "path": "f4k.txt"}
        read_raw = {"tool": "file_read", "workspace": ws, "path": "f4k.txt", "binary": True}
        bad = {"tool": "terminal", "workspace": ws, "argv": TRUE}  # answered bad_request by the daemon
        wexec = {"op": "exec", "argv": [TRUE]}

        def warm(req, sandboxed):
            m, _ = c.call(req)
            if not m.get("ok") or m.get("exit_code") != 0 or m.get("sandboxed") is not sandboxed:
                raise RuntimeError(f"terminal failed: {m}")
            return m["duration_us"]

        def read(req, raw):
            m, b = c.call(req)
            content = b if raw else m.get("content", "").encode()
            if not m.get("ok") or content != data4k:
                raise RuntimeError(f"file_read failed: {m}")

        def daemon_only():
            m, _ = c.call(bad)
            if m.get("ok") or m["error"]["code"] != ErrorCode.BAD_REQUEST:
                raise RuntimeError(f"the daemon-only probe: {m}")

        def worker_exec():
            worker.send(wexec)
            m, _ = worker.recv()
            if not m.get("ok") or m.get("exit_code") != 0:
                raise RuntimeError(f"worker exec failed: {m}")
            return m["duration_us"]

        def direct_read():
            with open(direct_file, "rb") as f:
                if f.read() != data4k:
                    raise RuntimeError("direct read")

        # One reply of each kind, to time the client's own JSON work on it.
        c.send(term)
        term_line = None
        while b"\n" not in c.buf:
            c.buf += c.s.recv(1 << 20)
        term_line, c.buf = c.buf.split(b"\n", 1)
        read_line = json.dumps(c.call(read_text)[0]).encode()

        def codec(req, line):
            json.dumps(dict(req, id=1)).encode()
            json.loads(line)

        alts = {
            "spawn": lambda: timed(spawn_true)[0],
            "subprocess": lambda: timed(subprocess_true)[0],
            "warm": None, "un": None,
            "read_text": lambda: timed(lambda: read(read_text, False))[0],
            "read_raw": lambda: timed(lambda: read(read_raw, True))[0],
            "read_direct": lambda: timed(direct_read)[0],
            "hop": lambda: timed(lambda: echo_round_trip(echo))[0],
            "relay": lambda: timed(lambda: relay_round_trip(relays[0]))[0],
            "relay_read": lambda: timed(lambda: relay_round_trip(relays[1]))[0],
            "daemon_only": lambda: timed(daemon_only)[0],
            "codec_term": lambda: timed(lambda: codec(term, term_line))[0],
            "codec_read": lambda: timed(lambda: codec(read_text, read_line))[0],
        }
        samples = {k: [] for k in list(alts) + ["warm_worker", "un_worker", "worker", "worker_exec"]}
        for _ in range(20):  # warm-up
            warm(term, True)
            warm(term_un, False)
            worker_exec()
            for k, f in alts.items():
                if f:
                    f()
        for r in range(ROUNDS):
            row = {k: [] for k in samples}
            for _ in range(CALLS):
                for k, f in alts.items():
                    if k == "warm":
                        t, du = timed(lambda: warm(term, True))
                        row["warm"].append(t)
                        row["warm_worker"].append(du)
                    elif k == "un":
                        t, du = timed(lambda: warm(term_un, False))
                        row["un"].append(t)
                        row["un_worker"].append(du)
                    else:
                        row[k].append(f())
                t, du = timed(worker_exec)
                row["worker"].append(t)
                row["worker_exec"].append(du)
            for k in samples:
                samples[k].append(row[k])
            print(f"  client round {r + 1}/{ROUNDS}: posix_spawn {sorted(row['spawn'])[CALLS // 2]:.0f} us, "
                  f"warm {sorted(row['warm'])[CALLS // 2]:.0f} us", file=sys.stderr)

        labels = [
            ("spawn", "os.posix_spawn + waitpid of /bin/true (Python, direct)"),
            ("subprocess", "subprocess.run([\"/bin/true\"]) (Python, direct)"),
            ("warm", "terminal /bin/true, warm sandboxed workspace (Python client)"),
            ("warm_worker", "  of which the worker's own exec (duration_us)"),
            ("un", "terminal /bin/true, unsandboxed workspace (Python client)"),
            ("un_worker", "  of which the worker's own exec (duration_us)"),
            ("read_text", "file_read 4 KiB, text (\"content\"), warm sandboxed (Python client)"),
            ("read_raw", "file_read 4 KiB, raw bytes (\"binary\"), warm sandboxed (Python client)"),
            ("read_direct", "direct open+read+close 4 KiB (Python)"),
            ("hop", "socket round trip to an echoing process (2 hops, Python both ends)"),
            ("relay", "the same through a zero-work relay process (4 hops: client -> relay -> echo -> relay -> "
                      "client; Python throughout)"),
            ("relay_read", "zero-work relay floor, a 4 KiB read's sizes (4 hops; Python throughout)"),
            ("daemon_only", "request answered by the daemon itself (decode, resolve, bad_request; Python client)"),
            ("worker", "exec /bin/true sent to the worker alone (direct mode, socket pair; Python)"),
            ("worker_exec", "  of which the worker's own exec (duration_us)"),
            ("codec_term", "client JSON work of one terminal call: json.dumps request + json.loads reply"),
            ("codec_read", "client JSON work of one 4 KiB text file_read: json.dumps + json.loads"),
        ]
        doc = {
            "bench": "client",
            "figures": [{"key": "client." + k, "label": lab, "unit": "us", "rounds": samples[k]} for k, lab in labels],
            "ratios": [
                {"key": "client.ratio.warm_spawn", "label": "warm sandboxed / os.posix_spawn (Python client)",
                 "num": "client.warm", "den": "client.spawn"},
                {"key": "client.ratio.warm_subprocess", "label": "warm sandboxed / subprocess.run (Python client)",
                 "num": "client.warm", "den": "client.subprocess"},
                {"key": "client.ratio.un_spawn", "label": "unsandboxed via daemon / os.posix_spawn (Python client)",
                 "num": "client.un", "den": "client.spawn"},
                {"key": "client.ratio.read_text_raw", "label": "file_read 4 KiB text / raw (Python client)",
                 "num": "client.read_text", "den": "client.read_raw"},
            ],
            "notes": [f"Python {sys.version.split()[0]}, standard library only, one persistent connection; every "
                      "call encodes its request with json.dumps and decodes the reply with json.loads (no "
                      "pre-encoding). " f"{ROUNDS} rounds of {CALLS} calls of each alternative, interleaved call "
                      "by call. The daemon runs with --audit-log on."],
        }
        print(json.dumps(doc))
    finally:
        # Newest first: each forked child holds copies of the sockets
        # made before it, so an older child sees its end only once the
        # newer ones are gone.
        for r in reversed(relays):
            relay_stop(r)
        if worker:
            worker.s.close()
            wproc.wait(10)
        if echo:
            echo.close()
            os.waitpid(echo_pid, 0)
        d.terminate()
        d.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
