#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on the tunnels whose bytes move with splice(2) through pipes,
in the network proxy (vectora-sandbox-proxy, one process for every
workspace) and in the jail's relay (the worker's child on 127.0.0.1:3128).

  - a jail that opens and closes connections to the proxy's socket in a
    loop (each one changed the counts the proxy sends the daemon): another
    workspace's refused request still appears in its call's
    network_denied (the counts now go once a loop turn; before, the
    control socket filled and the denial was lost, counted only);
  - the same flood held the proxy's loop in accept(2) (libuv accepts until
    EAGAIN) while the descriptors of the connections the jail closed
    piled up to the open-files limit; then accept failed with EMFILE
    forever, a spin that ended every workspace's traffic: now a workspace
    past twice its connection cap waits in its backlog, and out of
    descriptors the proxy sheds what waits with a spare descriptor
    (out_of_fds, a proxy with a limit of 160);
  - spin: an upstream that sends in small segments to a jailed client
    that does not read. A pipe holds 16 pages whatever their fill, so
    small segments fill it long before its byte size; splice into it then
    fails with EAGAIN while the source stays readable. The proxy (and the
    relay) must stop polling that source until the pipe drained, not wake
    on it forever: the proxy's CPU time over a few seconds stays small.
    The jail's client then reads everything: every byte, in order.

The upstream server listens on the host's 127.0.0.1, listed as a literal
address, as in test_proxy_process.py. TAP."""
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402
from vdaemon import proc_tree  # noqa: E402

T = Tap()
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def workers(daemon):
    """The daemon's vectora-worker processes (the jail's worker and its
    relay), not other tests' that run beside this one."""
    out = {}
    for p in proc_tree(daemon.p.pid):
        try:
            with open("/proc/%d/cmdline" % p, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
            if os.path.basename(argv0) == b"vectora-worker":
                out[p] = cpu_seconds(p)
        except (OSError, IndexError):
            pass
    return out


def run(tmp):
    d = vtest.Daemon(tmp)
    try:
        cases(tmp, d)
    finally:
        d.stop()
    T.case(out_of_fds, tmp, name="a jail holds more connections than the proxy has descriptors: the proxy does not "
           "spin in accept(2); once the jail lets go, another workspace is served")


def out_of_fds(tmp):
    # A proxy whose hard open-files limit is 160 (the daemon's, inherited):
    # one jail opens 600 connections to the proxy's socket and holds them.
    if not shutil.which("prlimit"):
        raise vtest.Skip("prlimit (util-linux) is not installed")
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    eport = lsock.getsockname()[1]

    def serve():
        while True:
            try:
                c, _ = lsock.accept()
            except OSError:
                return
            c.recv(4096)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nyes")
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    d = vtest.Daemon(tmp, name="dfd", prefix=["prlimit", "--nofile=160:160", "--"])
    try:
        wsa = make_ws(tmp, "ws-fds", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n' % eport)
        wsb = make_ws(tmp, "ws-fds-other", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n' % eport)
        check(d.call({"tool": "terminal", "workspace": wsb, "command": "true"}).get("exit_code") == 0, "warm-up")
        pid = d.status()["daemon"]["proxy"]["pid"]
        # "held" is opened before the connects and renamed after them: the
        # jail's own limit is the daemon's 160 too, and once its connects
        # had spent it the file could not be made (EMFILE), so the case
        # waited its 30 s for a file that never came.
        hold = ("import os, socket, time\n"
                "h = open('held.part', 'w')\n"
                "ss = []\n"
                "for i in range(600):\n"
                "    try:\n"
                "        s = socket.socket(socket.AF_UNIX)\n"
                "        s.settimeout(2)\n"
                "        s.connect('/run/vectora/proxy.sock')\n"
                "        ss.append(s)\n"
                "    except OSError:\n"
                "        pass\n"
                "print(len(ss), flush=True)\n"
                "os.rename('held.part', 'held')\n"
                "time.sleep(5)\n")
        res = {}
        t = threading.Thread(target=lambda: res.update(r=d.call({"tool": "terminal", "workspace": wsa,
                                                                 "command": "python3 -c \"$C\"", "env": {"C": hold},
                                                                 "timeout": 60})))
        t.start()
        # Measured once the jail's connects are over (each one costs the
        # proxy some work, a spin does not end).
        end = time.time() + 30
        while not os.path.exists(os.path.join(wsa, "held")) and time.time() < end:
            time.sleep(0.1)
        check(os.path.exists(os.path.join(wsa, "held")), "the jail's connects did not end within 30 s")
        time.sleep(0.5)
        c0 = cpu_seconds(pid)
        time.sleep(2)
        spun = cpu_seconds(pid) - c0
        t.join(60)
        r = d.call({"tool": "terminal", "workspace": wsb, "timeout": 30, "command":
                    "curl -sS -m 10 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:%d/" % eport})
        T.note("the jail held %s connections; the proxy used %.2f s of CPU in 2 s meanwhile" %
               ((res.get("r") or {}).get("stdout", "").strip(), spun))
        check(spun < 1.0, "the proxy spun (%.2f s of CPU in 2 s) out of descriptors" % spun)
        check(r.get("stdout") == "yes", "the other workspace, after the jail let go: %s" % r)
    finally:
        d.stop()
        lsock.close()


def cases(tmp, d):
    def proxy_pid():
        p = d.status()["daemon"].get("proxy") or {}
        check(p.get("running") and p.get("pid", 0) > 0, "status names no running proxy: %s" % p)
        return p["pid"]

    def spin(via):
        # Segments of 16 bytes, eight every 0.5 ms or so, for 7 s; the
        # jailed client reads nothing for 8 s, then everything.
        seg = 16
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(1)
        eport = lsock.getsockname()[1]
        sent = {}

        def trickle():
            c, _ = lsock.accept()
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.settimeout(60)
            # The client speaks first (not TLS): the tunnel is spliced
            # from then on.
            c.recv(3)
            n, i, end = 0, 0, time.time() + 7
            try:
                while time.time() < end:
                    c.sendall(b"%015d\n" % i)
                    i += 1
                    n += seg
                    if i % 8 == 0:
                        time.sleep(0.0005)
            except OSError as e:
                sent["error"] = str(e)
            sent["n"] = n
            c.close()
        threading.Thread(target=trickle, daemon=True).start()
        ws = make_ws(tmp, "ws-spin-" + via, '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n' % eport)
        # Through the relay, or straight to the proxy's socket (the relay
        # decides nothing; the jail may skip it).
        connect = ("s = socket.socket()\n"
                   "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)\n"
                   "s.connect(('127.0.0.1', 3128))\n") if via == "relay" else (
                   "s = socket.socket(socket.AF_UNIX)\n"
                   "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)\n"
                   "s.connect('/run/vectora/proxy.sock')\n")
        client = ("import socket, time, hashlib\n" + connect +
                  "s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n')\n"
                  "head = b''\n"
                  "while not head.endswith(b'\\r\\n\\r\\n'):\n"
                  "    head += s.recv(1)\n"
                  "assert b' 200 ' in head, head\n"
                  "s.sendall(b'go\\n')\n"
                  "print('open', flush=True)\n"
                  "time.sleep(8)\n"
                  "got = bytearray()\n"
                  "while True:\n"
                  "    b = s.recv(1 << 16)\n"
                  "    if not b:\n"
                  "        break\n"
                  "    got += b\n"
                  "want = b''.join(b'%%015d\\n' %% i for i in range(len(got) // 16))\n"
                  "print(len(got), got == want)\n") % (eport, eport)
        # The proxy starts with the first workspace that lists a host.
        check(d.call({"tool": "terminal", "workspace": ws, "command": "true"}).get("exit_code") == 0, "warm-up")
        pid = proxy_pid()
        res = {}
        t = threading.Thread(target=lambda: res.update(r=d.call({"tool": "terminal", "workspace": ws,
                                                                 "command": "python3 -c \"$C\"", "env": {"C": client},
                                                                 "timeout": 90})))
        t.start()
        try:
            # The buffers between the upstream and the client fill within
            # a second or two; then measure.
            time.sleep(3.5)
            p0, w0 = cpu_seconds(pid), workers(d)
            time.sleep(3)
            p1, w1 = cpu_seconds(pid), workers(d)
        finally:
            t.join(120)
            lsock.close()
        proxy_cpu = p1 - p0
        relay_cpu = max([w1[k] - w0[k] for k in w1 if k in w0] or [0])
        T.note("over 3 s with a stalled reader: the proxy used %.2f s of CPU, the busiest worker process %.2f s; %s bytes"
               % (proxy_cpu, relay_cpu, sent.get("n")))
        r = res.get("r") or {}
        check(r.get("exit_code") == 0, r)
        check(r["stdout"].split() == ["open", str(sent.get("n")), "True"],
              "the client got other bytes than the upstream sent (%s): %s" % (sent, r["stdout"]))
        check(proxy_cpu < 1.0, "the proxy spun: %.2f s of CPU in 3 s while its tunnel's reader stalled" % proxy_cpu)
        check(relay_cpu < 1.0, "the jail's relay spun: %.2f s of CPU in 3 s while its reader stalled" % relay_cpu)

    def flood_script(kind):
        # Eight processes open and close connections to the proxy's
        # socket as fast as they can for 12 s (two control messages each,
        # to the daemon); with kind "deny" each sends a refused request.
        return ("import os, socket, time\n"
                "end = time.time() + 12\n"
                "for _ in range(3):\n"
                "    os.fork()\n"
                "n = 0\n"
                "while time.time() < end:\n"
                "    try:\n"
                "        s = socket.socket(socket.AF_UNIX)\n"
                "        s.connect('/run/vectora/proxy.sock')\n"
                + ("        s.sendall(b'GET http://flood-%d.test/ HTTP/1.1\\r\\n\\r\\n' % n)\n"
                   "        s.recv(100)\n" if kind == "deny" else "") +
                "        s.close()\n"
                "        n += 1\n"
                "    except OSError:\n"
                "        pass\n"
                "print(n)\n")

    def ctl_flood_stalled_daemon():
        # The same flood while the daemon does not read for 3 s (a busy
        # or descheduled daemon, as under ASan beside other tests): the
        # proxy's messages pile up in the one control socket. Another
        # workspace's refusal in that time must not be lost behind them
        # or reach the daemon after its call's answer: the proxy sends a
        # workspace's counts at most every 100 ms and itemizes 32 of its
        # denials a second, the rest counted, so one workspace cannot
        # fill the socket.
        wsa = make_ws(tmp, "ws-flood-stall", '[sandbox]\nnetwork = ["127.0.0.1:9"]\n')
        wsb = make_ws(tmp, "ws-victim-stall", '[sandbox]\nnetwork = ["127.0.0.1:9"]\n')
        check(d.call({"tool": "terminal", "workspace": wsb, "command": "true"})["ok"], "warm")
        log_from = len(d.log_text())
        res, vic = {}, {}
        t = threading.Thread(target=lambda: res.update(r=d.call({"tool": "terminal", "workspace": wsa,
                                                                 "command": "python3 -c \"$C\"",
                                                                 "env": {"C": flood_script("deny")}, "timeout": 60})))
        t.start()
        try:
            time.sleep(2)
            v = threading.Thread(target=lambda: vic.update(r=d.call({"tool": "terminal", "workspace": wsb, "command":
                                 "sleep 1.5; curl -sS --noproxy '' -x http://127.0.0.1:3128 http://stalled.test/"})))
            v.start()
            time.sleep(0.5)
            os.kill(d.p.pid, signal.SIGSTOP)
            try:
                time.sleep(3)
            finally:
                os.kill(d.p.pid, signal.SIGCONT)
            v.join(30)
        finally:
            t.join(60)
        r = vic.get("r") or {}
        hosts = [x.get("host") for x in r.get("network_denied") or []]
        check("is refused" in r.get("stdout", "") and "stalled.test" in hosts,
              ("the victim's refusal, made while the daemon did not read, is missing from its call", r))
        lost = [x for x in d.log_text()[log_from:].splitlines() if "a message to the daemon was lost" in x]
        check(not lost, ("the flood filled the control socket while the daemon did not read: %d messages lost, "
                         "any of them could have been another workspace's" % len(lost), lost[:2]))

    def ctl_flood_denial(kind):
        # One workspace's jail opens and closes connections to the
        # proxy's socket as fast as eight processes can (two control
        # messages each, to the daemon); another workspace's refused
        # request meanwhile still shows in its call's network_denied.
        wsa = make_ws(tmp, "ws-flood-" + kind, '[sandbox]\nnetwork = ["127.0.0.1:9"]\n')
        wsb = make_ws(tmp, "ws-victim-" + kind, '[sandbox]\nnetwork = ["127.0.0.1:9"]\n')
        flood = flood_script(kind)
        res = {}
        t = threading.Thread(target=lambda: res.update(r=d.call({"tool": "terminal", "workspace": wsa,
                                                                 "command": "python3 -c \"$C\"", "env": {"C": flood},
                                                                 "timeout": 60})))
        t.start()
        missing, took = [], []
        try:
            time.sleep(2)
            for i in range(6):
                t0 = time.time()
                r = d.call({"tool": "terminal", "workspace": wsb, "command":
                            "curl -sS --noproxy '' -x http://127.0.0.1:3128 http://denied-%d.test/" % i})
                took.append(time.time() - t0)
                hosts = [x.get("host") for x in r.get("network_denied") or []]
                if "is refused" not in r.get("stdout", "") or "denied-%d.test" % i not in hosts:
                    missing.append((i, r.get("stdout", "")[:60], r.get("network_denied")))
        finally:
            t.join(60)
        T.note("during the flood: %s opened; the victim's calls took %s s" %
               ((res.get("r") or {}).get("stdout", "").split(), ["%.2f" % x for x in took]))
        fr = res.get("r") or {}
        check(fr.get("exit_code") == 0 and len(fr.get("stdout", "").split()) == 8,
              "the flooding call did not end by itself (the proxy stopped accepting: held in accept(2) while "
              "descriptors piled up): %s" % fr)
        check(not missing, "refusals the victim's call did not report: %s" % missing)
        check(max(took) < 5, "a call of another workspace took %.2f s during the flood" % max(took))

    T.case(ctl_flood_denial, "connect", name="a jail that floods the proxy with connections (control messages to "
           "the daemon): another workspace's refusal still shows in its call's network_denied; its calls stay quick")
    T.case(ctl_flood_denial, "deny", name="a jail that floods the proxy with refused requests: the same")
    T.case(ctl_flood_stalled_daemon, name="the same flood while the daemon reads nothing for 3 s: another "
           "workspace's refusal in that time still shows in its call's network_denied")
    T.case(spin, "unix", name="an upstream sending small segments to a jailed client on the proxy's socket that "
           "stops reading: the proxy does not spin on the full pipe; every byte arrives in order")
    T.case(spin, "relay", name="the same through the jail's relay: neither the proxy nor the relay spins")


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("splice attacks", f"{DAEMON} or {CLI} not built")
        return T.finish()
    if not shutil.which("bwrap"):
        T.skip("splice attacks", "bwrap is not installed (scripts/install-deps)")
        return T.finish()
    tmp = tempfile.mkdtemp(prefix="vs-attacks-splice-")
    os.chmod(tmp, 0o755)
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
