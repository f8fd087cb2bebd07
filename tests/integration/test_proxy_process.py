#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The network proxy apart (privilege separation, item 3): the bytes the
jail sends through the allowlist's proxy are parsed by a process of its
own, vectora-sandbox-proxy, not by the daemon.

  - status names it (pid, uid, restarts); as a root daemon its uid is not
    0; either way CapEff 0, NoNewPrivs 1, Seccomp 2 (a filter), and its
    parent is the daemon;
  - it still serves: an allowed request goes through, an unlisted name
    gets its 403 and appears in the call's network_denied and the audit
    log; a policy change reaches it;
  - SIGKILL it in the middle of a download: the download fails visibly and
    the call says so in degraded; the daemon starts another (restarts 1),
    the next request works, the jail's worker is the same process, the old
    proxy is gone;
  - while it cannot start again, a connection gets a 503 at once, not a
    hang, and it comes back once it can;
  - a root daemon's proxy runs as the system user vectora-sandbox when
    there is one (a passwd file of the test's own, in a mount namespace);
  - the daemon stopping (SIGTERM) or killed (SIGKILL) leaves no proxy.

The upstream server listens on the host's 127.0.0.1, listed as a literal
address (the one way a policy reaches loopback), and the jail's curl names
the proxy with -x: no other host, namespace or /etc/hosts is needed, so the
test runs as root and, through tests/helpers/as-user, as an ordinary user.
With VECTORA_PROXY_BENCH=1 it also times a 10 MiB download through the
proxy (the figure in the report). TAP."""
import ctypes
import hashlib
import http.server
import json
import os
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
from vtest import CLI, DAEMON, ROOT, Tap, check, make_ws  # noqa: E402
from vdaemon import proc_status, proxy_of, wait_until as wait_for  # noqa: E402

T = Tap()
BIG = 10 << 20


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the kill cuts a download on purpose


def serve(root):
    srv = Server(("127.0.0.1", 0), lambda *a, **k: Quiet(*a, directory=root, **k))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def alive(pid):
    """A process, not a zombie, with this pid."""
    try:
        return proc_status(pid).get("State", "").split()[0] != "Z"
    except (OSError, IndexError):
        return False


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("proxy process", f"{DAEMON} or {CLI} not built")
        return finish()
    for tool in ("bwrap", "curl"):
        if not shutil.which(tool):
            T.skip("proxy process", f"{tool} is not installed (scripts/install-deps)")
            return finish()
    tmp = tempfile.mkdtemp(prefix="vs-proxy-proc-")
    os.chmod(tmp, 0o755)
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    with open(os.path.join(www, "hello.txt"), "w") as f:
        f.write("hello from the host\n")
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.write(os.urandom(BIG))
    # Larger than every buffer between the server and curl (socket
    # buffers, the proxy's queues, the worker's relay): the kill finds
    # most of it still to come.
    with open(os.path.join(www, "huge.bin"), "wb") as f:
        for _ in range(8):
            f.write(os.urandom(BIG))
    srv = serve(www)
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
    ws = make_ws(tmp, "ws", '[sandbox]\nnetwork = ["%s", "other.test"]\n' % up)
    curl = "curl -sS --noproxy '' -x http://127.0.0.1:3128 "
    # The daemon starts its proxy from a copy, so that a case can make the
    # restart fail for a while.
    prog = os.path.join(tmp, "vectora-sandbox-proxy")
    shutil.copy2(os.environ["VECTORA_PROXY"], prog)
    # A service's usual start: a soft open-files limit of 1024 below the
    # hard one (the proxy raises its own: `bulk`).
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > 1024:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))
    d = vtest.Daemon(tmp, env=dict(os.environ, VECTORA_PROXY=prog, MODAL_TOKEN_SECRET="not-for-the-proxy"))
    st = {}

    def term(command, timeout=60):
        return d.call({"tool": "terminal", "workspace": ws, "command": command, "timeout": timeout})

    def allowed():
        r = term(curl + "-f http://%s/hello.txt" % up)
        check(r.get("exit_code") == 0 and r.get("stdout") == "hello from the host\n" and "network_denied" not in r,
              r)

    def separate():
        p = proxy_of(d)
        pid = p["pid"]
        check(pid != d.pid, "the proxy is the daemon itself")
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv0 = f.read().split(b"\0")[0].decode()
        check(os.path.basename(argv0) == "vectora-sandbox-proxy", "pid %d is %r" % (pid, argv0))
        s = proc_status(pid)
        uid = int(s["Uid"].split()[0])
        check(int(s["PPid"]) == d.pid, "its parent is %s, not the daemon %d" % (s["PPid"], d.pid))
        if ROOT:
            check(all(int(x) != 0 for x in s["Uid"].split() + s["Gid"].split()),
                  "a root daemon's proxy runs as Uid %s Gid %s" % (s["Uid"], s["Gid"]))
            check(s.get("Groups", "") == "", "supplementary groups %r" % s.get("Groups"))
        else:
            check(uid == os.geteuid(), "a user daemon's proxy runs as %d" % uid)
        check(int(s["CapEff"], 16) == 0 and int(s["CapPrm"], 16) == 0, "CapEff %s CapPrm %s" % (s["CapEff"],
                                                                                                 s["CapPrm"]))
        if ROOT:
            check(int(s["CapBnd"], 16) == 0, "CapBnd %s" % s["CapBnd"])
        check(s.get("NoNewPrivs") == "1", "NoNewPrivs %s" % s.get("NoNewPrivs"))
        check(s.get("Seccomp") == "2", "Seccomp %s (2: a filter)" % s.get("Seccomp"))
        check(p["uid"] == uid, "status says uid %s, /proc %d" % (p["uid"], uid))
        # Not dumpable (it holds the secrets' values): under a user daemon
        # the user's own processes cannot read its environment at all.
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            check(ROOT, "the daemon's user reads the proxy's environment: it is dumpable")
        except PermissionError:
            check(not ROOT, "root cannot read the proxy's environment")
            env = []
        check(not [e for e in env if e.startswith(b"MODAL_TOKEN_SECRET=")] and len(env) <= 8,
              "the proxy got the daemon's environment: %s" % [e.split(b"=")[0] for e in env])
        check(p.get("seccomp") is True, "the proxy reports no seccomp filter: %s" % p)
        # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
        abi = ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)
        check(p.get("landlock_abi") == max(abi, 0),
              "the kernel's Landlock ABI is %d; the proxy reports %s" % (abi, p.get("landlock_abi")))
        st["pid"] = pid
        T.note("proxy pid %d: Uid %s, CapEff %s, NoNewPrivs %s, Seccomp %s, Landlock ABI %d" %
               (pid, s["Uid"], s["CapEff"], s["NoNewPrivs"], s["Seccomp"], p["landlock_abi"]))

    def denied():
        r = term(curl + "-i http://denied.test:%d/hello.txt" % port)
        out = r.get("stdout", "")
        check("HTTP/1.1 403" in out and "denied.test" in out and "hello from the host" not in out, r)
        nd = r.get("network_denied") or []
        check(nd and nd[0]["host"] == "denied.test" and nd[0]["port"] == port and
              "not in the workspace's network allowlist" in nd[0]["reason"], r)
        time.sleep(0.2)
        audit = [json.loads(ln) for ln in open(d.audit)]
        check([a for a in audit if a.get("tool") == "network" and a.get("outcome") == "denied" and
               "denied.test" in json.dumps(a)], audit[-3:])

    def killed():
        worker = d.ws_status(ws)["worker"]["pid"]
        old = proxy_of(d)["pid"]
        res = {}

        def download():
            res["r"] = term(curl + "--limit-rate 2M -o /dev/null http://%s/huge.bin; echo rc=$?" % up)
        t = threading.Thread(target=download)
        t.start()
        wait_for(lambda: proxy_of(d)["pid"] == old and d.ws_status(ws)["network"]["open"] >= 1,
                 "the download's connection")
        time.sleep(1)
        os.kill(old, signal.SIGKILL)
        t.join(60)
        r = res.get("r") or {}
        out = r.get("stdout", "")
        check("rc=0" not in out and "rc=" in out, r)
        deg = (r.get("sandbox") or {}).get("degraded") or []
        check(any("proxy process ended" in x for x in deg), r)
        new = wait_for(lambda: (lambda p: p.get("running") and p["pid"] != old and p)(d.status()["daemon"]["proxy"]),
                       "a new proxy")
        check(new["restarts"] == 1 and new.get("last_exit") == "signal 9", new)
        check(not alive(old), "the old proxy %d is still there" % old)
        allowed()
        check(d.ws_status(ws)["worker"]["pid"] == worker, "the jail's worker changed")
        st["pid"] = new["pid"]
        c = subprocess.run([CLI, "--socket", d.sock, "status"], capture_output=True, text=True, timeout=60)
        check("pid %d" % new["pid"] in c.stdout and "1 restart(s), the last one after signal 9" in c.stdout,
              {"status": c.stdout, "stderr": c.stderr})
        T.note("download: %s; degraded: %s; new proxy pid %d" % (out.strip() + " " + r.get("stderr", "").strip(),
                                                                 deg[-1], new["pid"]))

    def down():
        old = proxy_of(d)["pid"]
        os.rename(prog, prog + ".away")
        try:
            os.kill(old, signal.SIGKILL)
            wait_for(lambda: not d.status()["daemon"]["proxy"]["running"], "the daemon to see the proxy gone")
            t0 = time.time()
            r = term(curl + "-i --max-time 20 http://%s/hello.txt" % up)
            took = time.time() - t0
            out = r.get("stdout", "")
            check("HTTP/1.1 503" in out and "network proxy is restarting" in out and took < 10, (took, r))
            check(not d.status()["daemon"]["proxy"]["running"], "it restarted meanwhile")
        finally:
            os.rename(prog + ".away", prog)
        new = wait_for(lambda: (lambda p: p.get("running") and p)(d.status()["daemon"]["proxy"]), "the proxy back",
                       timeout=20)
        check(new["restarts"] >= 2, new)
        allowed()
        st["pid"] = new["pid"]
        T.note(out.strip().splitlines()[-1] + " (%.2f s); back after %d restarts" % (took, new["restarts"]))

    def policy_change():
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write('[sandbox]\nnetwork = ["other.test"]\n')
        vtest.chown_tree(ws)
        # Any change of the list waits for the host's approval.
        a = subprocess.run([CLI, "--socket", d.sock, "allow", "-w", ws], capture_output=True, text=True, timeout=60)
        check(a.returncode == 0, {"allow": a.returncode, "stdout": a.stdout, "stderr": a.stderr})
        last = {}

        def narrowed():
            last["r"] = term(curl + "-i http://%s/hello.txt" % up)
            return last["r"].get("network_denied") and last["r"]
        try:
            r = wait_for(narrowed, "the narrowed policy to reach the proxy")
        except AssertionError:
            raise AssertionError("the proxy still lets it through: %s" % json.dumps(last.get("r"))[:3000])
        check("HTTP/1.1 403" in r.get("stdout", "") and r["network_denied"][0]["host"] == "127.0.0.1", r)

    def stop_leaves_none():
        pid = st["pid"]
        check(alive(pid), "no proxy before the stop")
        d.stop()
        wait_for(lambda: not alive(pid), "the proxy to go with the daemon", timeout=5)

    def kill_leaves_none():
        ws2 = make_ws(tmp, "ws2", '[sandbox]\nnetwork = ["%s"]\n' % up)
        d2 = vtest.Daemon(tmp, name="d2")
        try:
            r = d2.call({"tool": "terminal", "workspace": ws2, "command": curl + "-f http://%s/hello.txt" % up})
            check(r.get("exit_code") == 0, r)
            pid = proxy_of(d2)["pid"]
            os.kill(d2.pid, signal.SIGKILL)
            wait_for(lambda: not alive(pid), "the proxy to die with its daemon (PR_SET_PDEATHSIG)", timeout=5)
        finally:
            d2.stop(check_exit=False)

    def system_user():
        # A root daemon uses the system user vectora-sandbox when there is
        # one (the package makes it): shown with a passwd and group file of
        # the test's own, bound over the host's in a mount namespace of the
        # daemon's (the host's files are never edited).
        if not ROOT:
            vtest.needs_root("a root daemon's proxy user")
        uid = 64123
        etc = {}
        for name, line in (("passwd", "vectora-sandbox:x:%d:%d::/nonexistent:/usr/sbin/nologin\n" % (uid, uid)),
                           ("group", "vectora-sandbox:x:%d:\n" % uid)):
            etc[name] = os.path.join(tmp, name)
            with open("/etc/" + name) as src, open(etc[name], "w") as f:
                # Without the host's own vectora-sandbox (the package's,
                # left by a purge: Debian keeps system users), which would
                # be found first.
                f.write("".join(l for l in src if not l.startswith("vectora-sandbox:")) + line)
        ws3 = make_ws(tmp, "ws3", '[sandbox]\nnetwork = ["%s"]\n' % up)
        d3 = vtest.Daemon(tmp, name="d3", prefix=[
            "unshare", "-m", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /etc/passwd && mount --bind "$1" /etc/group && shift && exec "$@"',
            etc["passwd"], etc["group"]])
        try:
            r = d3.call({"tool": "terminal", "workspace": ws3, "command": curl + "-f http://%s/hello.txt" % up})
            check(r.get("exit_code") == 0, r)
            s3 = proc_status(proxy_of(d3)["pid"])
            check(s3["Uid"].split() == [str(uid)] * 4 and s3["Gid"].split() == [str(uid)] * 4,
                  "Uid %s Gid %s, not vectora-sandbox's %d" % (s3["Uid"], s3["Gid"], uid))
        finally:
            d3.stop()

    def hostile():
        # A proxy taken over writes what it likes on its control socket:
        # the daemon ends it, starts another, and goes on serving.
        fake = os.path.join(tmp, "fake-proxy")
        with open(fake, "w") as f:
            f.write("#!%s\nimport socket, time\n"
                    "s = socket.socket(fileno=3)\n"
                    "s.send(b'{\"op\":\"denial\",\"ws\":1,\"time_us\":1,\"host\":\"x\",\"port\":99999,\"reason\":\"r\"}')\n"
                    "time.sleep(30)\n" % sys.executable)
        os.chmod(fake, 0o755)
        ws4 = make_ws(tmp, "ws4", '[sandbox]\nnetwork = ["%s"]\n' % up)
        d4 = vtest.Daemon(tmp, name="d4", env=dict(os.environ, VECTORA_PROXY=fake))
        try:
            r = d4.call({"tool": "terminal", "workspace": ws4, "command": "echo still-serving"})
            check(r.get("exit_code") == 0 and r.get("stdout") == "still-serving\n", r)
            p = wait_for(lambda: (lambda x: x.get("restarts", 0) >= 2 and x)(d4.status()["daemon"]["proxy"]),
                         "the daemon to end and restart the misbehaving proxy")
            check(p.get("last_exit") == "signal 9", p)
            check("malformed message" in d4.log_text(), d4.log_text()[-2000:])
            r = d4.call({"tool": "terminal", "workspace": ws4, "command": "echo still-serving"})
            check(r.get("exit_code") == 0, r)
        finally:
            d4.stop()

    def bulk():
        # Both ways through a CONNECT tunnel at once, past every buffer,
        # with the client's half-close: all bytes arrive, in order, and
        # the answer after the EOF too. While the upstream holds back, the
        # tunnel's bytes wait in the proxy's pipes (moved by splice, not
        # read into the proxy).
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(1)
        eport = lsock.getsockname()[1]
        go, got = threading.Event(), {}

        def echo():
            c, _ = lsock.accept()
            go.wait(30)
            h, n = hashlib.sha256(), 0
            while True:
                b = c.recv(1 << 16)
                if not b:
                    break
                h.update(b)
                n += len(b)
            got["n"] = n
            reply = hashlib.sha256(b"seed").digest() * ((8 << 20) // 32)
            c.sendall(h.hexdigest().encode() + b"\n" + reply)
            got["reply"] = hashlib.sha256(reply).hexdigest()
            c.close()
        threading.Thread(target=echo, daemon=True).start()
        wsb = make_ws(tmp, "ws-bulk", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n' % eport)
        client = ("import socket, hashlib, os\n"
                  "s = socket.create_connection(('127.0.0.1', 3128))\n"
                  "s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n')\n"
                  "head = b''\n"
                  "while not head.endswith(b'\\r\\n\\r\\n'):\n"
                  "    head += s.recv(1)\n"
                  "assert b' 200 ' in head, head\n"
                  "data = b'BULK' + os.urandom(24 << 20)\n"
                  "s.sendall(data)\n"
                  "s.shutdown(socket.SHUT_WR)\n"
                  "got = bytearray()\n"
                  "while True:\n"
                  "    b = s.recv(1 << 16)\n"
                  "    if not b:\n"
                  "        break\n"
                  "    got += b\n"
                  "line, rest = bytes(got).split(b'\\n', 1)\n"
                  "print(line.decode() == hashlib.sha256(data).hexdigest(), len(data), len(rest), "
                  "hashlib.sha256(rest).hexdigest())\n") % (eport, eport)
        res = {}
        pid = proxy_of(d)["pid"]

        def pipes():
            # Only root lists a proxy's descriptors (it is not dumpable):
            # an ordinary user does not wait for the tunnel's pipes.
            if not ROOT:
                return 0
            n = 0
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("pipe:")
                except OSError:
                    pass
            return n
        base = pipes()
        t = threading.Thread(target=lambda: res.update(r=d.call({"tool": "terminal", "workspace": wsb,
                                                                  "command": "python3 -c \"$C\"", "env": {"C": client},
                                                                  "timeout": 60})))
        t.start()
        try:
            wait_for(lambda: not ROOT or pipes() >= base + 4, "the tunnel's two pipes in the proxy (%d pipe ends before)" % base,
                     timeout=20)
            held = pipes() - base
        finally:
            go.set()
            t.join(90)
            lsock.close()
        r = res.get("r") or {}
        check(r.get("exit_code") == 0, r)
        ok, sent, n, digest = r["stdout"].split()
        check(ok == "True" and int(sent) == got.get("n"), "the upstream got %s of %s bytes, or other bytes: %s" %
              (got.get("n"), sent, r["stdout"]))
        check(int(n) == 8 << 20 and digest == got.get("reply"), "the answer after the half-close: %s" % r["stdout"])
        T.note("24 MiB up, 8 MiB down through a CONNECT tunnel; the proxy held %d pipe ends meanwhile" % held)
        # Eight descriptors a tunnel: the proxy raised its soft limit to
        # the hard one (a service's soft 1024 would hold 128 tunnels).
        with open("/proc/%d/limits" % pid) as f:
            soft, hard = [ln.split()[3:5] for ln in f if ln.startswith("Max open files")][0]
        check(soft == hard and soft != "1024", "the proxy's open-files limit is %s of %s" % (soft, hard))
        r = term("curl -sS --noproxy '' -x http://127.0.0.1:3128 -f http://%s/big.bin | sha256sum" % up)
        with open(os.path.join(tmp, "www", "big.bin"), "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        check(r.get("exit_code") == 0 and r["stdout"].split()[0] == want, ("plain HTTP download", r))

    def bench():
        if os.environ.get("VECTORA_PROXY_BENCH") != "1":
            raise vtest.NotApplicable("set VECTORA_PROXY_BENCH=1 to time a 10 MiB download through the proxy")
        times = []
        for _ in range(5):
            r = term(curl + "-f -o /dev/null -w '%%{time_total}' http://%s/big.bin" % up)
            check(r.get("exit_code") == 0, r)
            times.append(float(r["stdout"]))
        times.sort()
        T.note("10 MiB through the proxy, 5 runs: median %.3f s (%.0f MiB/s), min %.3f s" %
               (times[2], 10 / times[2], times[0]))

    try:
        T.case(allowed, name="an allowed request goes through the proxy")
        T.case(separate, name="the proxy is a process of its own: status names it; not root under a root daemon; "
               "CapEff 0, NoNewPrivs 1, Seccomp 2, Landlock, none of the daemon's environment")
        T.case(denied, name="an unlisted name: 403, network_denied, audit record (reported by the proxy process)")
        T.case(system_user, name="a root daemon's proxy runs as the system user vectora-sandbox when it exists")
        T.case(hostile, name="a proxy that sends a malformed control message is ended and restarted; the daemon "
               "serves on")
        T.case(bulk, name="a tunnel moves 24 MiB up and 8 MiB down after the client's half-close, whole and in order, "
               "through the proxy's pipes (splice); a 10 MiB plain HTTP download arrives whole")
        T.case(bench, name="bench: a 10 MiB download through the proxy")
        T.case(killed, name="SIGKILL the proxy mid-download: the download fails, degraded says so, the daemon "
               "restarts it, the next request works, same worker, old proxy gone")
        T.case(down, name="while the proxy cannot start, a request gets a 503 at once (not a hang); it comes back")
        T.case(policy_change, name="a policy change reaches the proxy process")
        T.case(stop_leaves_none, name="the daemon stopping leaves no proxy process")
        T.case(kill_leaves_none, name="the daemon killed (SIGKILL) leaves no proxy process")
    finally:
        d.stop(check_exit=False)
        if T.failed:
            print("# daemon log tail:\n" + "\n".join("#   " + ln for ln in d.log_text()[-3000:].splitlines()))
            print("# daemon stderr tail:\n" + "\n".join("#   " + ln for ln in d.stderr_text()[-2000:].splitlines()))


if __name__ == "__main__":
    main()
