#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on the network proxy as a process of its own
(vectora-sandbox-proxy): from a proxy taken over (its confinement, what it
inherits, what it may tell the daemon), from the jail (what it sends
through the proxy), and through the daemon's side (the rules it sends).

A proxy "taken over" is the real program, confined as usual, with a
library preloaded whose uv_run (called once the proxy has given up its
privileges, before it serves) tries what a proxy running the attacker's
code would: tests/integration/proxy-attacks/evil-proxy.c. It reports each
attempt on its stderr, which ends in the daemon's log.

  - what it inherits: its stderr must not be the daemon's log file (it
    could clear O_APPEND and rewrite the daemon's log), and no fd of the
    daemon's but the control socket; what it writes there reaches the
    daemon's log bounded and with control characters made visible;
  - its confinement, attempted from inside: no /etc/shadow, no read
    outside /etc /usr /lib, no write, no exec, no fork, no ptrace, no
    kill, no dumpable, no raw socket, no namespace, and no unix socket (one
    of its own uid's would be open to it: under a user daemon the daemon's
    own API);
  - a proxy that lies or misbehaves: a hello that claims a seccomp filter
    it does not have is not shown as one in status; descriptors it
    attaches to its messages are not kept by the daemon; messages for
    workspaces it was never given change nothing; a flood of well-formed
    messages leaves the daemon answering; one that reads nothing for 10 s
    is ended and restarted;
  - the rules: a policy whose rules do not fit one control message is not
    served with stale rules after a change, nor left unserved; a restart
    hands many workspaces' rules (more than a socket buffer) over without
    being taken for a stuck proxy;
  - from the jail: hostile bytes (malformed heads, a ClientHello past the
    bound, two SNIs, pipelining, unfinished heads) are answered and the
    proxy stays up; a loop of refused requests takes a bounded share of the
    audit log, yet every denial is counted there; a tunnel held by
    background work ends when its host leaves the list; a request head
    sent together with its body (one write, more than the 16 KiB the proxy
    reads for a head) reaches the upstream whole;
  - a policy narrowed while no proxy runs reaches the proxy that starts
    next.

The upstream server listens on the host's 127.0.0.1, listed as a literal
address, as in test_proxy_process.py. Run a subset by naming the cases'
functions on the command line. TAP."""
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, ROOT, Tap, check, make_ws  # noqa: E402
from vdaemon import wait_until as wait_for  # noqa: E402

T = Tap()
HERE = os.path.dirname(os.path.abspath(__file__))
CURL = "curl -sS --noproxy '' -x http://127.0.0.1:3128 "


class Upstream(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        body = b"hello from the host\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        # The length and digest of the body it got (a short body: what
        # came within 5 s).
        n = int(self.headers.get("Content-Length", "0"))
        got = b""
        self.connection.settimeout(5)
        try:
            while len(got) < n:
                k = self.rfile.read1(n - len(got))
                if not k:
                    break
                got += k
        except OSError:
            pass
        body = ("%d %s\n" % (len(got), hashlib.sha256(got).hexdigest())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def proc_fds(pid):
    """pid's descriptors; none for an ordinary user when pid is a proxy
    (not dumpable: only root lists them; the root run checks them)."""
    out = {}
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except PermissionError:
        check(not ROOT, "root cannot list /proc/%d/fd" % pid)
        T.note("/proc/%d/fd is root's alone (the proxy is not dumpable): not looked at" % pid)
        return out
    for fd in names:
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def fake_proxy(tmp, name, body):
    """A program in place of the proxy: python with the control socket as
    `s` (fd 3)."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("#!%s\nimport json, os, socket, sys, time\ns = socket.socket(fileno=3)\n%s\n" %
                (sys.executable, body))
    os.chmod(path, 0o755)
    return path


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("proxy attacks", f"{DAEMON} or {CLI} not built")
        return finish()
    for tool in ("bwrap", "curl"):
        if not shutil.which(tool):
            T.skip("proxy attacks", f"{tool} is not installed (scripts/install-deps)")
            return finish()
    tmp = tempfile.mkdtemp(prefix="vs-proxy-attacks-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        run(tmp, srv.server_address[1])
    finally:
        srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


def finish():
    sys.exit(T.finish())


def run(tmp, port):
    up = "127.0.0.1:%d" % port
    only = set(sys.argv[1:])
    daemons = []

    def daemon(name, **kw):
        d = vtest.Daemon(tmp, name=name, **kw)
        daemons.append(d)
        return d

    def term(d, ws, command, timeout=60):
        return d.call({"tool": "terminal", "workspace": ws, "command": command, "timeout": timeout})

    evil = {}

    def evil_so():
        """The preloaded library, built once; a skip without a compiler."""
        if "so" in evil:
            return evil["so"]
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if not cc:
            raise vtest.Skip("no C compiler to build the taken-over proxy's library")
        so = os.path.join(tmp, "evil-proxy.so")
        r = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", so, os.path.join(HERE, "proxy-attacks/evil-proxy.c"),
                            "-ldl"], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("building evil-proxy.so: " + r.stderr)
        evil["so"] = so
        return so

    def asan_first():
        """A sanitizer build's proxy must have the ASan runtime first among
        its libraries: preloading an uninstrumented library before it ends
        the proxy at its start ("ASan runtime does not come first"), so the
        runtime the proxy links is preloaded ahead of it."""
        r = subprocess.run(["ldd", os.environ["VECTORA_PROXY"]], capture_output=True, text=True)
        return [f.split("=>")[1].split()[0] for f in r.stdout.splitlines() if "libasan" in f and "=>" in f]

    def taken_over(name, extra_env):
        """A daemon whose proxy is the real one with evil-proxy.so
        preloaded; returns (daemon, workspace, the attempts' results)."""
        so = ":".join(asan_first() + [evil_so()])
        wrap = os.path.join(tmp, name + "-proxy")
        env = " ".join("%s=%s" % kv for kv in dict(extra_env, LD_PRELOAD=so).items())
        with open(wrap, "w") as f:
            f.write("#!/bin/sh\nexec env %s %s\n" % (env, os.environ["VECTORA_PROXY"]))
        os.chmod(wrap, 0o755)
        ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = ["%s"]\n' % up)
        d = daemon(name, env=dict(os.environ, VECTORA_PROXY=wrap))
        return d, ws

    def results(d):
        out = {}

        def done():
            for ln in d.log_text().splitlines():
                i = ln.find("EVIL ")
                if i >= 0:
                    parts = ln[i:].split()
                    if len(parts) >= 4:
                        out[parts[1]] = (int(parts[2]), int(parts[3]))
            return "done" in out
        wait_for(done, "the taken-over proxy's report in the daemon's log")
        return out

    def with_fake(name, body):
        """A daemon whose proxy is fake_proxy(body), started by a first
        call in a workspace with an allowlist; returns (daemon, workspace)."""
        fake = fake_proxy(tmp, name, body)
        ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = ["%s"]\n' % up)
        d = daemon(name, env=dict(os.environ, VECTORA_PROXY=fake))
        r = term(d, ws, "echo serving")
        check(r.get("exit_code") == 0, r)
        return d, ws

    def log_not_rewritable():
        # Its stderr was the daemon's log file, opened O_APPEND; fcntl
        # (allowed) clears O_APPEND on the shared open file, lseek and
        # write (allowed) then rewrite what the daemon logged.
        d, ws = taken_over("logw", {"EVIL_REWRITE_STDERR": "1"})
        # Its first line in the file before the attempt (under load the
        # daemon may answer a connection before it is written).
        wait_for(lambda: "listening on" in d.log_text(), "the daemon's first log line")
        with open(d.log, "rb") as f:
            before = f.read(120)
        r = term(d, ws, CURL + "-f http://%s/" % up)
        check(r.get("exit_code") == 0, r)
        res = results(d)
        with open(d.log, "rb") as f:
            after = f.read(120)
        check(after == before, "the taken-over proxy rewrote the daemon's log: it began %r, now %r (attempts: %s)" %
              (before, after, res))
        check("vectora-sandbox-proxy: serving (uid" in d.log_text(), "the proxy's own log lines are lost")
        pid = d.status()["daemon"]["proxy"]["pid"]
        fds = proc_fds(pid)
        mine = [p for p in fds.values() if p in (d.log, d.audit, d.stderr_path, d.sock)]
        check(not mine, "the proxy holds the daemon's files: %s" % fds)

    def log_flood():
        # A proxy that writes its stderr without end: the daemon's log
        # takes a bounded share, with control characters made visible.
        d, ws = taken_over("flood", {"EVIL_LOG_FLOOD": "100000"})
        r = term(d, ws, "echo serving")
        check(r.get("exit_code") == 0, r)
        time.sleep(2)
        text = d.log_text()
        n = text.count("FLOOD line")
        check(n <= 1000, "%d of the proxy's 100000 lines reached the daemon's log" % n)
        check("\033" not in text, "a control character from the proxy reached the daemon's log")
        T.note("%d of 100000 lines logged; log %d bytes" % (n, len(text)))

    def confined():
        victim = subprocess.Popen(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "sleep",
                                   "120"]) if ROOT and shutil.which("setpriv") else None
        outside = os.path.join(tmp, "readable-by-all")
        with open(outside, "w") as f:
            f.write("not for the proxy\n")
        os.chmod(outside, 0o644)
        try:
            env = {"EVIL_READ": outside, "EVIL_WRITE": os.path.join(tmp, "written-by-proxy"),
                   "EVIL_DPID": str(os.getpid()), "EVIL_TCP": str(port)}
            if victim:
                env["EVIL_VICTIM"] = str(victim.pid)
            d, ws = taken_over("conf", env)
            r = term(d, ws, CURL + "-f http://%s/" % up)
            check(r.get("exit_code") == 0, r)
            res = results(d)
        finally:
            if victim:
                victim.kill()
                victim.wait()
        must_fail = ["open-read-outside", "open-write", "open-daemon-environ", "kill-daemon", "ptrace-daemon",
                     "set-dumpable", "execve", "fork", "mkdir", "socket-packet", "unshare", "open-shadow"]
        if victim:
            must_fail.append("ptrace-victim")
        got = {k: res.get(k) for k in must_fail}
        check(all(v and v[0] < 0 for v in got.values()), "a taken-over proxy did: %s" % got)
        check(not os.path.exists(os.path.join(tmp, "written-by-proxy")), "it wrote a file")
        T.note("taken-over proxy: %s" % ", ".join("%s %s" % (k, "refused (errno %d)" % v[1] if v[0] < 0 else "done")
                                                 for k, v in sorted(res.items()) if k != "done"))

    def no_unix_sockets():
        # A unix socket of the proxy's own uid (under a user daemon: the
        # user's session bus, ssh agent, the daemon's own API socket;
        # under a root daemon: other services running as nobody) is as
        # open to it as to its owner: the proxy makes no unix socket.
        lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = os.path.join(tmp, "same-uid.sock")
        lst.bind(path)
        lst.listen(4)
        puid = 65534 if ROOT else os.geteuid()
        os.chown(path, puid, -1)
        os.chmod(path, 0o600)
        name = "unix"
        sock = os.path.join(tmp, name + ".sock")
        ws = os.path.join(tmp, "ws-" + name)  # taken_over makes it
        req = json.dumps({"tool": "terminal", "workspace": ws, "command": "touch proxy-was-here"})
        try:
            d, ws2 = taken_over(name, {"EVIL_UNIX": path, "EVIL_API": sock, "EVIL_API_REQ": "'%s'" % req})
            r = term(d, ws2, CURL + "-f http://%s/" % up)
            check(r.get("exit_code") == 0, r)
            res = results(d)
        finally:
            lst.close()
        check(res.get("connect-unix", (0,))[0] < 0, "the proxy connected to a unix socket of uid %d: %s" % (puid, res))
        check(res.get("connect-daemon-api", (0,))[0] < 0,
              "the proxy connected to the daemon's API socket: %s" % res)
        time.sleep(1)
        check(not os.path.exists(os.path.join(ws, "proxy-was-here")), "the proxy ran a command through the daemon's API")

    def hello_lie():
        # A proxy (taken over, or a program that is not the proxy) says it
        # has a seccomp filter; status must not repeat it unchecked.
        d, _ = with_fake("liar", "s.send(json.dumps({'op': 'hello', 'ws': 0, 'seccomp': True, "
                                 "'landlock': 5}).encode())\nwhile s.recv(70000):\n    pass\n")
        p = wait_for(lambda: (lambda x: x and x.get("running") and x)(d.status()["daemon"].get("proxy")),
                     "the fake proxy")
        time.sleep(0.3)
        p = d.status()["daemon"]["proxy"]
        with open("/proc/%d/status" % p["pid"]) as f:
            real = [ln.split()[1] for ln in f if ln.startswith("Seccomp:")][0]
        check(real == "0", "the fake proxy has a filter after all: Seccomp %s" % real)
        check(p.get("seccomp") is False, "status says the proxy has a seccomp filter on its word alone: %s" % p)

    def fds_and_strangers():
        # Descriptors attached to the proxy's messages, messages for
        # workspaces it was never given, counts at their bounds: the
        # daemon keeps none of the descriptors, records nothing for the
        # unknown workspace, and serves on without ending the proxy.
        body = ("import array\n"
                "fds = [os.open('/dev/null', os.O_RDONLY) for _ in range(100)]\n"
                "for i in range(20):\n"
                "    socket.send_fds(s, [json.dumps({'op': 'conns', 'ws': 1, 'open': 4294967295, "
                "'total': 9223372036854775807}).encode()], fds)\n"
                "s.send(json.dumps({'op': 'denial', 'ws': 999, 'time_us': 1, 'host': 'stranger.test', "
                "'port': 1, 'reason': 'forged'}).encode())\n"
                "s.send(json.dumps({'op': 'conns', 'ws': 4294967295, 'open': 1, 'total': 1}).encode())\n"
                "while s.recv(70000):\n    pass\n")
        fake = fake_proxy(tmp, "fds", body)
        ws = make_ws(tmp, "ws-fds", '[sandbox]\nnetwork = ["%s"]\n' % up)
        d = daemon("fds", env=dict(os.environ, VECTORA_PROXY=fake))
        before = len(proc_fds(d.pid))
        r = term(d, ws, "echo serving")
        check(r.get("exit_code") == 0, r)
        time.sleep(1)
        p = d.status()["daemon"]["proxy"]
        check(p.get("running") and p.get("restarts") == 0, "the daemon ended a proxy that sent well-formed "
              "messages: %s" % p)
        st = d.ws_status(ws)
        after = len(proc_fds(d.pid))
        check(after < before + 40, "the daemon kept the descriptors the proxy attached: %d fds before, %d after" %
              (before, after))
        audit = open(d.audit).read()
        check("stranger.test" not in audit and "stranger.test" not in d.log_text(),
              "a denial for a workspace the proxy was never given was recorded")
        T.note("daemon fds %d -> %d; the workspace's network status: %s" % (before, after, st.get("network")))

    def ctl_flood():
        # A proxy that sends well-formed messages without pause (counts,
        # denials for a workspace it was never given): the daemon keeps
        # answering, and its audit log does not grow with them.
        body = ("m1 = json.dumps({'op': 'conns', 'ws': 1, 'open': 1, 'total': 1}).encode()\n"
                "m2 = json.dumps({'op': 'denial', 'ws': 77, 'time_us': 1, 'host': 'x', 'port': 1, "
                "'reason': 'r'}).encode()\n"
                "os.fork()\nos.fork()\n"
                "while True:\n    s.send(m1)\n    s.send(m2)\n")
        # Four senders on the one socket: together faster than the
        # daemon reads, so a reader that drains until the socket is empty
        # never returns to its loop.
        d, ws = with_fake("chatty", body)
        worst = 0
        for _ in range(5):
            t0 = time.time()
            d.status()
            r = term(d, ws, "echo serving")
            check(r.get("exit_code") == 0, r)
            worst = max(worst, time.time() - t0)
            time.sleep(0.3)
        check(worst < 3, "a call took %.2f s while the proxy flooded its control socket" % worst)
        check(os.path.getsize(d.audit) < 100000, "the audit log grew to %d bytes" % os.path.getsize(d.audit))
        T.note("slowest status + call during the flood: %.2f s" % worst)

    def big_rules(n):
        # Entries that parse, reach nothing, and make the rules message
        # larger than PROXY_CTL_MAX (64 KiB) once encoded.
        return ["h%04d.%s.invalid" % (i, "x" * 40) for i in range(n)]

    def big_policy_served():
        rules = [up] + big_rules(900)
        ws = make_ws(tmp, "ws-big", "[sandbox]\nnetwork = [%s]\n" % ", ".join(json.dumps(x) for x in rules))
        d = daemon("big")
        r = term(d, ws, CURL + "--max-time 10 -i http://%s/" % up)
        out = r.get("stdout", "")
        check("hello from the host" in out or "HTTP/1.1 403" in out or "HTTP/1.1 503" in out,
              "a policy of %d entries: the request got no answer at all (the proxy never served the listener): %s" %
              (len(rules), json.dumps(r)[:1500]))
        check("longer than the proxy takes" in out and "HTTP/1.1 403" in out,
              "the refusal does not say the list is too long: %s" % out[:1500])

    def big_policy_change():
        ws = make_ws(tmp, "ws-change", '[sandbox]\nnetwork = ["%s"]\n' % up)
        d = daemon("change")
        r = term(d, ws, CURL + "-f http://%s/" % up)
        check(r.get("exit_code") == 0, r)
        # The host narrows the list: the upstream is no longer in it, but
        # many other names are.
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nnetwork = [%s]\n" % ", ".join(json.dumps(x) for x in big_rules(900)))
        vtest.chown_tree(ws)
        a = subprocess.run([CLI, "--socket", d.sock, "allow", "-w", ws], capture_output=True, text=True, timeout=60)
        check(a.returncode == 0, {"allow": a.returncode, "stdout": a.stdout, "stderr": a.stderr})
        time.sleep(1)
        r = term(d, ws, CURL + "--max-time 10 -i http://%s/" % up)
        check("hello from the host" not in r.get("stdout", ""),
              "after the policy changed to a list without %s, the proxy still lets it through (stale rules): %s" %
              (up, json.dumps(r)[:1500]))

    def restart_many():
        # Several workspaces whose rules each fill most of a control
        # message: a restart hands them all over at once, before the new
        # proxy reads a byte. More than the socket's send buffer must not
        # end the new proxy (and the next, and the next). The proxy here
        # takes half a second to start, as on a loaded host.
        slow = os.path.join(tmp, "slow-proxy")
        with open(slow, "w") as f:
            f.write("#!/bin/sh\nsleep 0.5\nexec %s\n" % os.environ["VECTORA_PROXY"])
        os.chmod(slow, 0o755)
        d = daemon("many", env=dict(os.environ, VECTORA_PROXY=slow))
        wss = []
        for i in range(6):
            rules = [up] + big_rules(380)
            ws = make_ws(tmp, "ws-many%d" % i, "[sandbox]\nnetwork = [%s]\n" % ", ".join(json.dumps(x) for x in rules))
            r = term(d, ws, CURL + "-f http://%s/" % up)
            check(r.get("exit_code") == 0, r)
            wss.append(ws)
        old = d.status()["daemon"]["proxy"]["pid"]
        os.kill(old, 9)
        wait_for(lambda: (lambda p: p.get("running") and p["pid"] != old)(d.status()["daemon"]["proxy"]),
                 "a new proxy")
        time.sleep(3)
        p = d.status()["daemon"]["proxy"]
        check(p["restarts"] == 1, "the proxy restarted %d times after one kill: %s" % (p["restarts"], p))
        for ws in wss:
            r = term(d, ws, CURL + "--max-time 10 -f http://%s/" % up)
            check(r.get("exit_code") == 0, r)

    def narrowed_cuts_tunnels():
        # A tunnel opened while the host was listed must not outlive the
        # host's removal from the list: the jail would keep its way to a
        # host the policy no longer names for as long as it keeps the
        # tunnel busy.
        echo = socket.socket()
        echo.bind(("127.0.0.1", 0))
        echo.listen(8)

        def serve_echo():
            while True:
                try:
                    c, _ = echo.accept()
                except OSError:
                    return

                def one(c):
                    with c:
                        while True:
                            b = c.recv(4096)
                            if not b:
                                return
                            c.sendall(b)
                threading.Thread(target=one, args=(c,), daemon=True).start()
        threading.Thread(target=serve_echo, daemon=True).start()
        eport = echo.getsockname()[1]
        ws = make_ws(tmp, "ws-narrow", '[sandbox]\nnetwork = ["127.0.0.1:%d", "%s"]\n' % (eport, up))
        d = daemon("narrow")
        script = ("import socket, time, sys\n"
                  "s = socket.create_connection(('127.0.0.1', 3128))\n"
                  "s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n')\n"
                  "print(s.recv(4096).split(b'\\r\\n')[0].decode(), flush=True)\n"
                  "s.settimeout(2)\n"
                  "for i in range(30):\n"
                  "    try:\n"
                  "        s.sendall(b'ping%%d' %% i)\n"
                  "        print(s.recv(100).decode() or 'closed', flush=True)\n"
                  "    except OSError as e:\n"
                  "        print('closed', e, flush=True)\n"
                  "        break\n"
                  "    time.sleep(0.5)\n" % (eport, eport))
        with open(os.path.join(ws, "tunnel.py"), "w") as f:
            f.write(script)
        vtest.chown_tree(ws)
        # Held by a process that outlives the call (the agent's own
        # background work); the change is approved, and the next call
        # makes the daemon read it.
        r = term(d, ws, "(setsid python3 tunnel.py > tunnel.out 2>&1 &); sleep 2; cat tunnel.out")
        check("200" in r.get("stdout", "") and "ping1" in r.get("stdout", ""), r)

        def echoes():
            with open(os.path.join(ws, "tunnel.out")) as f:
                return len([x for x in f.read().split() if x.startswith("ping")])
        n0 = echoes()
        time.sleep(1.5)
        if echoes() <= n0:
            raise vtest.NotApplicable("a process of the jail's does not outlive its call here")
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write('[sandbox]\nnetwork = ["%s"]\n' % up)
        vtest.chown_tree(ws)
        a = subprocess.run([CLI, "--socket", d.sock, "allow", "-w", ws], capture_output=True, text=True, timeout=60)
        check(a.returncode == 0, {"allow": a.returncode, "stdout": a.stdout, "stderr": a.stderr})
        r = term(d, ws, "cat tunnel.out")
        applied = time.time()
        check(r.get("exit_code") == 0, r)
        time.sleep(3)
        with open(os.path.join(ws, "tunnel.out")) as f:
            out = f.read()
        n_before = len([x for x in r.get("stdout", "").split() if x.startswith("ping")])
        n_after = len([x for x in out.split() if x.startswith("ping")])
        echo.close()
        check(n_after <= n_before + 1,
              "the tunnel to a host taken off the list carried on for %.1f s after the new list applied "
              "(%d echoes then, %d now): %s" % (time.time() - applied, n_before, n_after, out.split()))
        T.note("the tunnel after the change: %s" % out.split()[-3:])

    def denial_flood():
        # The jail loops refused requests as fast as it can: the audit log
        # and the daemon's log take a bounded share, yet every denial is
        # counted in them; another workspace is served meanwhile.
        ws = make_ws(tmp, "ws-dflood", '[sandbox]\nnetwork = ["%s"]\n' % up)
        ws2 = make_ws(tmp, "ws-dflood2", '[sandbox]\nnetwork = ["%s"]\n' % up)
        script = ("import socket, threading, time\n"
                  "n = [0]\n"
                  "end = time.time() + 4\n"
                  "def w():\n"
                  "    while time.time() < end:\n"
                  "        try:\n"
                  "            s = socket.create_connection(('127.0.0.1', 3128))\n"
                  "            s.sendall(b'GET http://denied-%d.test/ HTTP/1.1\\r\\n\\r\\n' % n[0])\n"
                  "            if s.recv(2000).startswith(b'HTTP/1.1 403'):\n"
                  "                n[0] += 1\n"
                  "            s.close()\n"
                  "        except OSError:\n"
                  "            pass\n"
                  "ts = [threading.Thread(target=w) for _ in range(8)]\n"
                  "[t.start() for t in ts]\n"
                  "[t.join() for t in ts]\n"
                  "print(n[0])\n")
        with open(os.path.join(ws, "flood.py"), "w") as f:
            f.write(script)
        vtest.chown_tree(ws)
        d = daemon("dflood", log_level="info")
        res = {}
        t = threading.Thread(target=lambda: res.setdefault("r", term(d, ws, "python3 flood.py")))
        t.start()
        time.sleep(2)
        t0 = time.time()
        r2 = term(d, ws2, CURL + "-f http://%s/" % up)
        took = time.time() - t0
        t.join(60)
        check(r2.get("exit_code") == 0 and took < 5, "the other workspace: %.2f s, %s" % (took, r2))
        r = res.get("r") or {}
        sent = int(r.get("stdout", "0").strip() or 0)
        check(sent > 300, "the flood made only %d requests: %s" % (sent, r))
        # The proxy sends the denials it did not itemize with its
        # connection counts, at most every 100 ms (docs/protocol.md): the
        # last ones reach the daemon a moment after the flood's call.
        for _ in range(100):
            if d.ws_status(ws)["network"]["denied"] >= sent:
                break
            time.sleep(0.05)
        # A call of that workspace's end writes the summary of what the
        # last window held.
        check(term(d, ws, "true").get("exit_code") == 0, "a call after the flood")
        denied = d.ws_status(ws)["network"]["denied"]
        itemized = not_itemized = 0
        for ln in open(d.audit):
            a = json.loads(ln)
            if a.get("tool") != "network" or a.get("workspace") != ws:
                continue
            tg = a.get("target") or {}
            if "not_itemized" in tg:
                not_itemized += tg["not_itemized"]
            else:
                itemized += 1
        check(itemized <= 200, "%d denials audited one by one in 4 s" % itemized)
        check(itemized + not_itemized == denied == sent,
              "the jail saw %d refusals; the audit accounts for %d + %d, status counts %d" %
              (sent, itemized, not_itemized, denied))
        T.note("%d requests refused in 4 s: %d audited one by one, %d counted in a summary; the other workspace's "
               "call took %.2f s; audit log %d bytes" % (sent, itemized, not_itemized, took, os.path.getsize(d.audit)))

    def hostile_bytes():
        # What the jail may send the proxy: malformed heads, a ClientHello
        # past the bound, two SNIs, pipelined requests, 200 connections
        # that never finish their head. The proxy answers each, stays the
        # same process, and serves a good request meanwhile.
        ws = make_ws(tmp, "ws-bytes", '[sandbox]\nnetwork = ["%s"]\n' % up)
        script = r'''
import socket, struct, sys, time
UP = "%s"
def ask(data, wait=3):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.settimeout(wait)
    got = b""
    try:
        s.sendall(data)
        while True:
            k = s.recv(65536)
            if not k:
                break
            got += k
    except OSError as e:
        got += ("error %%s" %% e).encode()
    s.close()
    if got == b"HTTP/1.1 200 Connection established\r\n\r\n":
        return "tunnel-closed"
    return got.split(b"\r\n")[0].decode(errors="replace") or "closed"
def hello(names, size=0):
    ext = b""
    for n in names:
        n = n.encode()
        sni = struct.pack("!BH", 0, len(n)) + n
        ext += struct.pack("!HH", 0, len(sni) + 2) + struct.pack("!H", len(sni)) + sni
    ext += struct.pack("!HH", 21, size) + b"\0" * size
    body = b"\3\3" + b"r" * 32 + b"\0" + b"\0\2\0\x2f" + b"\1\0" + struct.pack("!H", len(ext)) + ext
    hs = b"\1" + struct.pack("!I", len(body))[1:] + body
    out = b""
    while hs:
        out += b"\x16\3\1" + struct.pack("!H", len(hs[:16000])) + hs[:16000]
        hs = hs[16000:]
    return out
C = ("CONNECT %%s HTTP/1.1\r\n\r\n" %% UP).encode()
cases = {
  "nul": b"GET http://" + UP.encode() + b"/\0 HTTP/1.1\r\n\r\n",
  "huge-head": b"GET http://" + UP.encode() + b"/ HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n",
  "folded": b"GET http://" + UP.encode() + b"/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
  "no-port": b"CONNECT example.com HTTP/1.1\r\n\r\n",
  "bad-v6": b"GET http://[::1/ HTTP/1.1\r\n\r\n",
  "ctl-in-host": b"GET http://a\x01b.test/ HTTP/1.1\r\n\r\n",
  "http2": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
  "huge-hello": C + hello(["127.0.0.1"], 30000),
  "two-sni": C + hello(["127.0.0.1", "127.0.0.1"]),
  "sni-mismatch": C + hello(["evil.test"]),
  "pipelined": (b"GET http://" + UP.encode() + b"/ HTTP/1.1\r\n\r\n") * 50,
}
for k, v in cases.items():
    print(k, ask(v), flush=True)
slow = []
for i in range(200):
    try:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"GET http://" + UP.encode() + b"/ HTTP/1.1\r\nX-Slow: ")
        slow.append(s)
    except OSError:
        break
print("slow", len(slow), flush=True)
print("meanwhile", ask(b"GET http://" + UP.encode() + b"/ HTTP/1.1\r\n\r\n", 10), flush=True)
''' % up
        with open(os.path.join(ws, "bytes.py"), "w") as f:
            f.write(script)
        vtest.chown_tree(ws)
        d = daemon("bytes")
        r = term(d, ws, CURL + "-f http://%s/" % up)
        check(r.get("exit_code") == 0, r)
        pid = d.status()["daemon"]["proxy"]["pid"]
        r = term(d, ws, "python3 bytes.py", timeout=120)
        out = dict(ln.split(" ", 1) for ln in r.get("stdout", "").splitlines() if " " in ln)
        p = d.status()["daemon"]["proxy"]
        check(p["pid"] == pid and p["restarts"] == 0, "the proxy did not survive the jail's bytes: %s; %s" % (p, r))
        for k in ("nul", "folded", "no-port", "bad-v6", "ctl-in-host", "http2"):
            check(out.get(k, "").startswith("HTTP/1.1 4"), "%s: %s" % (k, out.get(k)))
        check(out.get("huge-head", "").startswith("HTTP/1.1 431"), out)
        for k in ("huge-hello", "two-sni", "sni-mismatch"):
            # 200 to the CONNECT, then the tunnel closed with nothing from
            # the upstream (which would answer a hello it got with a 400).
            check(out.get(k) == "tunnel-closed", "%s: %s" % (k, out.get(k)))
        check(out.get("slow") == "200" and out.get("meanwhile", "").startswith("HTTP/1.0 200"), out)
        T.note(", ".join("%s: %s" % kv for kv in out.items()))

    def stuck_proxy():
        # A proxy that never reads its control socket: what the daemon has
        # for it waits, then, once nothing was taken for 10 s, the next
        # message ends it and another starts.
        fake = fake_proxy(tmp, "stuck", "time.sleep(600)\n")
        d = daemon("stuck", env=dict(os.environ, VECTORA_PROXY=fake))
        for i in range(5):
            rules = [up] + big_rules(380)
            ws = make_ws(tmp, "ws-stuck%d" % i, "[sandbox]\nnetwork = [%s]\n" % ", ".join(json.dumps(x) for x in rules))
            r = term(d, ws, "echo serving")
            check(r.get("exit_code") == 0, r)
        p = d.status()["daemon"]["proxy"]
        check(p["restarts"] == 0, "the daemon ended the proxy at once: %s" % p)
        time.sleep(10.5)
        ws = make_ws(tmp, "ws-stuck-last", '[sandbox]\nnetwork = ["%s"]\n' % up)
        r = term(d, ws, "echo serving")
        check(r.get("exit_code") == 0, r)
        p = wait_for(lambda: (lambda x: x.get("restarts", 0) >= 1 and x)(d.status()["daemon"]["proxy"]),
                     "the stuck proxy to be ended and started again")
        check("stopped reading its control socket" in d.log_text(), d.log_text()[-1500:])

    def change_while_down():
        # The policy narrows while no proxy runs (the daemon cannot send
        # it then): the proxy that starts next must get the new rules, not
        # serve the old ones or none.
        prog = os.path.join(tmp, "proxy-copy")
        shutil.copy2(os.environ["VECTORA_PROXY"], prog)
        ws = make_ws(tmp, "ws-down", '[sandbox]\nnetwork = ["%s", "other.test"]\n' % up)
        d = daemon("down", env=dict(os.environ, VECTORA_PROXY=prog))
        r = term(d, ws, CURL + "-f http://%s/" % up)
        check(r.get("exit_code") == 0, r)
        old = d.status()["daemon"]["proxy"]["pid"]
        os.rename(prog, prog + ".away")
        try:
            os.kill(old, 9)
            wait_for(lambda: not d.status()["daemon"]["proxy"]["running"], "the proxy gone")
            with open(os.path.join(ws, "vectora.toml"), "w") as f:
                f.write('[sandbox]\nnetwork = ["other.test"]\n')
            vtest.chown_tree(ws)
            a = subprocess.run([CLI, "--socket", d.sock, "allow", "-w", ws], capture_output=True, text=True,
                               timeout=60)
            check(a.returncode == 0, {"allow": a.returncode, "stdout": a.stdout, "stderr": a.stderr})
            r = term(d, ws, CURL + "-i --max-time 10 http://%s/" % up)
            check("hello from the host" not in r.get("stdout", ""), "served while no proxy ran: %s" % r)
        finally:
            os.rename(prog + ".away", prog)
        wait_for(lambda: d.status()["daemon"]["proxy"]["running"], "the proxy back", timeout=25)
        r = term(d, ws, CURL + "-i --max-time 10 http://%s/" % up)
        out = r.get("stdout", "")
        check("HTTP/1.1 403" in out and "hello from the host" not in out,
              "the restarted proxy did not apply the policy changed while it was down: %s" % out[:800])

    def body_with_head():
        ws = make_ws(tmp, "ws-body", '[sandbox]\nnetwork = ["%s"]\n' % up)
        d = daemon("body")
        size = 300000
        cmd = ("head -c %d /dev/urandom > /tmp/b && sha256sum /tmp/b | cut -d' ' -f1 && "
               "python3 -c \"import socket;d=open('/tmp/b','rb').read();"
               "s=socket.create_connection(('127.0.0.1',3128));"
               "s.sendall(b'POST http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\nContent-Length: %%d\\r\\n\\r\\n' %% len(d) + d);"
               "a=b''\nwhile True:\n k=s.recv(65536)\n if not k: break\n a+=k\n"
               "print(a.decode().splitlines()[-1])\"" % (size, up, up))
        if not shutil.which("python3"):
            raise vtest.Skip("no python3")
        r = term(d, ws, cmd)
        lines = r.get("stdout", "").split()
        check(len(lines) == 3, r)
        check(lines[1] == str(size) and lines[2] == lines[0],
              "the upstream got %s of %d bytes of a body sent with its head (digest %s, sent %s)" %
              (lines[1], size, lines[2][:12], lines[0][:12]))

    cases = [
        (log_not_rewritable, "a taken-over proxy cannot rewrite the daemon's log through its stderr; it holds none "
                             "of the daemon's files"),
        (log_flood, "a taken-over proxy writing its stderr without end takes a bounded share of the daemon's log"),
        (confined, "a taken-over proxy, confined: no shadow, no read outside /etc /usr /lib, no write, exec, fork, "
                   "ptrace, kill, dumpable, raw socket or namespace"),
        (no_unix_sockets, "a taken-over proxy reaches no unix socket of its uid's: not the daemon's API, not a "
                          "session bus"),
        (hello_lie, "a proxy that claims a seccomp filter it lacks is not shown with one in status"),
        (fds_and_strangers, "descriptors a proxy attaches are not kept; denials for a workspace it was never given "
                            "are not recorded; counts at their bounds are taken"),
        (ctl_flood, "a proxy flooding its control socket with well-formed messages: the daemon keeps answering"),
        (big_policy_served, "a policy larger than one control message is still served (an answer, not a hang)"),
        (big_policy_change, "a policy change larger than one control message does not leave the old rules in the "
                            "proxy"),
        (restart_many, "a restart hands over the listeners and rules of many workspaces, more than one socket "
                       "buffer, and stays up"),
        (narrowed_cuts_tunnels, "a tunnel to a host taken off the list is cut when the change is approved"),
        (denial_flood, "a jail's loop of refused requests: a bounded share of the audit log that still counts "
                       "every denial; another workspace is served"),
        (hostile_bytes, "malformed heads, a ClientHello past the bound, two SNIs, pipelining, 200 unfinished "
                        "heads: each answered, the proxy stays up and serves"),
        (stuck_proxy, "a proxy that reads nothing of its control socket for 10 s is ended and started again"),
        (change_while_down, "a policy narrowed while no proxy runs reaches the proxy that starts next"),
        (body_with_head, "a request body sent in one write with its head reaches the upstream whole"),
    ]
    try:
        for fn, name in cases:
            if only and fn.__name__ not in only:
                continue
            T.case(fn, name=name)
    finally:
        for d in daemons:
            d.stop(check_exit=False)
        if T.failed:
            for d in daemons:
                print("# %s log tail:\n" % d.log + "\n".join("#   " + ln for ln in d.log_text()[-1500:].splitlines()))


if __name__ == "__main__":
    main()
