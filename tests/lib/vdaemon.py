# SPDX-License-Identifier: MIT
"""Helpers the daemon's tests share (test_daemon, test_reliability,
test_backends, test_integrity, test_host_run_files, the soak, test_proxy_process, test_secrets_memory): processes
seen through /proc, a terminal call, a real terminal on the CLI, the
daemon instance's cgroups. Here, and not in one of those tests, so that no
test module imports another. Python 3 stdlib only."""

import hashlib
import json
import os
import signal
import socket
import time

from vtest import CLI, check

def monitor_of(d):
    """A root daemon's status of its monitor (docs/protocol.md): running."""
    m = d.status()["daemon"].get("monitor")
    check(m and m.get("running") and m.get("pid", 0) > 0, "status names no running monitor: %s" % m)
    return m


def proc_tree(root):
    """pids of root's descendants (not root)."""
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(p))
    out, todo = [], [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def proc_status(pid):
    """/proc/PID/status as a dict (Uid, CapEff, NoNewPrivs, Seccomp, ...)."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def fd_targets(pid):
    """What each of a process's descriptors points at: {fd: target}."""
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        return int(st[st.rindex(")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def worker_procs(root):
    """The vectora-worker processes below root (a jail's bwrap): the worker
    itself, not a command it has just cloned, which bears the worker's
    name until its exec. Killing such a child instead of the worker kills
    the command (exit 137, the call ok): the soak's one wrong answer on
    80a6040 came from picking the newest process of that name."""
    return [p for p in proc_tree(root) if comm(p) == "vectora-worker" and comm(ppid(p)) != "vectora-worker"]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


SANDBOX = '[sandbox]\nenabled = true\nmask = [".env", "**/*.pem"]\n'


def term(c, ws, command, **kw):
    return c.call(dict({"tool": "terminal", "workspace": ws, "command": command}, **kw))


def pty_audit(audit, ws):
    """ws's terminal_open and terminal_exit lines of the audit log."""
    mine = [json.loads(l) for l in open(audit)]
    mine = [l for l in mine if l["workspace"] == os.path.realpath(ws)]
    return [l for l in mine if l["tool"] == "terminal_open"], [l for l in mine if l["tool"] == "terminal_exit"]


class PtyShell:
    """`vectora-sandbox shell` on a real terminal (pty.fork), 100x30."""

    def __init__(self, d, ws, rows=30, cols=100):
        import pty as ptymod
        self.pid, self.fd = ptymod.fork()
        if self.pid == 0:
            os.environ["VECTORA_SANDBOX_SOCKET"] = d.sock
            os.environ["TERM"] = "dumb"
            os.execv(CLI, [CLI, "shell", "-w", ws])
        self.winsize(rows, cols)
        self.buf = b""

    def winsize(self, rows, cols):
        import fcntl
        import struct
        import termios
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def resize(self, rows, cols):
        self.winsize(rows, cols)
        os.kill(self.pid, signal.SIGWINCH)

    def write(self, b):
        os.write(self.fd, b)

    def resize_seen(self, rows, cols):
        """Resized (SIGWINCH to the CLI): does `stty size` in the shell say so?"""
        self.resize(rows, cols)
        time.sleep(0.5)
        self.write(b"stty size; echo SIZED\n")
        return self.expect(b"%d %d\r\nSIZED" % (rows, cols))

    def expect(self, word, t=10):
        end = time.time() + t
        while word not in self.buf and time.time() < end:
            import select
            if not select.select([self.fd], [], [], max(0.0, end - time.time()))[0]:
                break
            try:
                self.buf += os.read(self.fd, 4096)
            except OSError:
                break
        return word in self.buf

    def wait(self, t=20):
        end = time.time() + t
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(st)
            self.expect(b"\0never\0", 0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, t=0):
    """GET /index.html on the host's 127.0.0.1:port: the body, or None when
    nothing answers (retried for t seconds)."""
    import urllib.request
    end = time.time() + t
    while True:
        try:
            return urllib.request.urlopen("http://127.0.0.1:%d/index.html" % port, timeout=5).read()
        except OSError:
            if time.time() >= end:
                return None
            time.sleep(0.1)


CG_TOPS = ["/sys/fs/cgroup/vectora-sandboxd", "/sys/fs/cgroup/pids/vectora-sandboxd",
           "/sys/fs/cgroup/memory/vectora-sandboxd"]


def instance_id(sock):
    """As the daemon derives it: sha256 of the socket's resolved path."""
    d, b = os.path.split(sock)
    return hashlib.sha256(os.path.join(os.path.realpath(d or "."), b).encode()).hexdigest()[:16]


def instance_groups(sock):
    return [os.path.join(t, instance_id(sock)) for t in CG_TOPS if os.path.isdir(t)]


def ws_groups(sock):
    out = []
    for g in instance_groups(sock):
        out += [os.path.join(g, x) for x in os.listdir(g) if x.startswith("ws-")]
    return out


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def proxy_of(d):
    """The daemon d's proxy process as its status says ({pid, uid,
    restarts, ...}); fails when none runs."""
    p = d.status()["daemon"].get("proxy")
    check(p and p.get("running") and p.get("pid", 0) > 0, "status names no running proxy: %s" % p)
    return p


def wait_until(cond, what, timeout=10):
    """cond()'s first true value within timeout seconds; fails naming what."""
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)
