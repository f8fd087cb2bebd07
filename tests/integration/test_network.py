#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The network allowlist end to end (issue 14, "Done when"), for real: a
daemon, bwrap jails, HTTP and HTTPS servers on the host (the HTTPS one with
a self-signed certificate made here with openssl), and curl and Python's
urllib inside the jail going through the proxy variables.

The servers run on "another host" on this machine (Remote): a network
namespace of their own joined to this one by a veth pair, on addresses of
the documentation ranges (198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32),
which the policy treats as public and nothing routes off the machine. They
cannot run on this host's own address: no name may reach that (issue 25).

Names: the daemon runs in a private mount namespace whose /etc/hosts is the
test's own (the host's file is never edited), so "allowed.test" and friends
resolve to the remote's address, "loop.wild.test" to 127.0.0.1 (a wildcard
entry leading to loopback) and "own.wild.test" to one of this host's own
addresses. That needs root (CI runs as root); as a normal user the tests
say SKIP with the reason.

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, OWNER, ROOT, Conn, Tap, chown_tree  # noqa: E402,F401

T = Tap()


def tap(ok, name, detail=""):
    """A result, its detail shown either way (what was measured or refused)."""
    T.ok(name, ok, detail)
    if ok and detail:
        T.note(detail)


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(json.dumps(what, indent=1, default=str)[:4000] if not isinstance(what, str) else what)


def host_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]
    finally:
        s.close()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class Server6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


def serve(root, addr, context=None):
    handler = lambda *a, **k: Quiet(*a, directory=root, **k)  # noqa: E731
    srv = (Server6 if ":" in addr else http.server.ThreadingHTTPServer)((addr, 0), handler)
    if context:
        srv.socket = context.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


# The remote's servers: HTTP and HTTPS on its address, ports on stdout,
# until stdin closes.
REMOTE_SERVERS = r"""
import http.server, json, ssl, sys, threading
root, addr, crt, key = sys.argv[1:5]
print("in its namespace", flush=True)
sys.stdin.readline()
class Q(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
def serve(ctx=None):
    s = http.server.ThreadingHTTPServer((addr, 0), lambda *a, **k: Q(*a, directory=root, **k))
    if ctx:
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s.server_address[1]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(crt, key)
print(json.dumps([serve(), serve(ctx)]), flush=True)
sys.stdin.read()
"""


def ip(*args, ns=None):
    pre = ["nsenter", "-t", str(ns), "-n"] if ns else []
    r = subprocess.run(pre + ["ip", *args], capture_output=True, text=True, timeout=30)
    if r.returncode:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))


class Remote:
    """Another host on this machine: a network namespace (unshare -n) joined
    to this one by a veth pair, a random /30 of 198.51.100.0/24 (this end
    .1, the remote .2 of it) and a /64 of 2001:db8::/32 on this end, so that
    concurrent runs do not collide. The remote's servers serve www. The
    namespace and both ends of the pair go when its process ends."""

    def __init__(self, www, crt, key):
        k = 4 * (os.getpid() % 63 + 1)
        self.here, self.addr = "198.51.100.%d" % (k + 1), "198.51.100.%d" % (k + 2)
        self.here6 = "2001:db8:%x::1" % (os.getpid() % 65536)
        self.late = "203.0.113.%d" % (os.getpid() % 250 + 1)
        self.link = "vsnet%dh" % (os.getpid() % 100000)
        py = shutil.which("python3", path="/usr/bin") or sys.executable
        self.p = subprocess.Popen(["unshare", "--net", "--", py, "-c", REMOTE_SERVERS, www, self.addr, crt, key],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            # Only once unshare has made the namespace (and run python in
            # it) may the pair's far end move there.
            if self.p.stdout.readline().strip() != "in its namespace":
                raise RuntimeError("the remote's process did not start")
            check(os.readlink("/proc/%d/ns/net" % self.p.pid) != os.readlink("/proc/self/ns/net"),
                  "the remote shares this network namespace")
            ip("link", "add", self.link, "type", "veth", "peer", "name", "vsnet-r", "netns", str(self.p.pid))
            ip("addr", "add", self.here + "/30", "dev", self.link)
            ip("link", "set", self.link, "up")
            ip("link", "set", "lo", "up", ns=self.p.pid)
            ip("addr", "add", self.addr + "/30", "dev", "vsnet-r", ns=self.p.pid)
            ip("link", "set", "vsnet-r", "up", ns=self.p.pid)
            try:
                ip("-6", "addr", "add", self.here6 + "/64", "dev", self.link, "nodad")
            except RuntimeError as e:
                self.here6 = None
                T.note("no IPv6 on the veth pair: %s" % e)
            self.p.stdin.write("up\n")
            self.p.stdin.flush()
            self.port, self.sport = json.loads(self.p.stdout.readline())
        except Exception:
            self.close()
            raise

    def close(self):
        subprocess.run(["ip", "link", "del", self.link], capture_output=True)
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class Daemon(vtest.Daemon):
    """The daemon in a private mount namespace with the test's /etc/hosts."""

    def __init__(self, tmp, hosts):
        super().__init__(tmp, prefix=["unshare", "-m", "--propagation", "private", "sh", "-c",
                                      'mount --bind "$0" /etc/hosts && exec "$@"', hosts])

    def run(self, ws, command, timeout=60):
        return self.call({"tool": "terminal", "workspace": ws, "command": command, "timeout": timeout})


def make_ws(tmp, name, toml, files=None):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    with open(os.path.join(d, "vectora.toml"), "w") as f:
        f.write(toml)
    for k, v in (files or {}).items():
        with open(os.path.join(d, k), "w") as f:
            f.write(v)
    chown_tree(d)
    return d


# Inside the jail: serve and connect on 127.0.0.1 as a test suite's fixture
# would (an HTTP server and urllib, no proxy for loopback: NO_PROXY).
LOOPBACK_SUITE = r"""
import http.server, threading, urllib.request
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"fixture ok")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=s.serve_forever, daemon=True).start()
print(urllib.request.urlopen("http://127.0.0.1:%d/" % s.server_address[1], timeout=10).read().decode())
"""

# CONNECT to an allowed host, then a TLS hello naming another.
SNI_MISMATCH = r"""
import socket, ssl, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT secure.test:%s HTTP/1.1\r\nHost: secure.test:%s\r\n\r\n" % (sys.argv[1].encode(), sys.argv[1].encode()))
head = s.recv(4096)
print("proxy said:", head.split(b"\r\n")[0].decode())
ctx = ssl.create_default_context(cafile="ca.pem")
ctx.check_hostname = False
try:
    t = ctx.wrap_socket(s, server_hostname="other.test")
    print("HANDSHAKE COMPLETED")
except (ssl.SSLError, OSError) as e:
    print("handshake failed:", type(e).__name__)
"""

URLLIB = r"""
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile="ca.pem")
for url in sys.argv[1:]:
    print(urllib.request.urlopen(url, timeout=20, context=ctx).read().decode().strip())
"""

DIRECT = r"""
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
    print("CONNECTED")
except OSError as e:
    print("direct connect failed:", e)
    sys.exit(7)
"""


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("network allowlist", f"{DAEMON} or {CLI} not built")
        return finish()
    for tool in ("bwrap", "curl", "openssl", "unshare", "nsenter", "ip"):
        if not shutil.which(tool):
            T.skip("network allowlist", f"{tool} is not installed (scripts/install-deps)")
            return finish()
    if not ROOT:
        T.skip("network allowlist", "needs root: the daemon runs in a private mount namespace with the test's "
             "/etc/hosts (CI runs as root)")
        return finish()
    tmp = tempfile.mkdtemp(prefix="vs-network-test-")
    os.chmod(tmp, 0o755)
    servers, d = [], None
    try:
        run_all(tmp, servers)
    except Exception:  # noqa: BLE001 - the setup's failure, reported with its cause
        tap(False, "network test setup", traceback.format_exc())
    finally:
        for s in servers:
            s.shutdown() if hasattr(s, "shutdown") else s.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


def finish():
    sys.exit(T.finish())


def run_all(tmp, servers):
    host = host_address()
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    with open(os.path.join(www, "hello.txt"), "w") as f:
        f.write("hello from the host\n")
    # A self-signed certificate for secure.test (and nothing else).
    key, crt = os.path.join(tmp, "key.pem"), os.path.join(tmp, "crt.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                    "-days", "2", "-subj", "/CN=secure.test", "-addext", "subjectAltName=DNS:secure.test"],
                   check=True, capture_output=True)
    remote = Remote(www, crt, key)
    servers.append(remote)
    port, sport = remote.port, remote.sport
    hosts = os.path.join(tmp, "hosts")
    with open(hosts, "w") as f:
        f.write(f"127.0.0.1 localhost\n{remote.addr} allowed.test denied.test secure.test other.test pub.wild.test\n"
                "127.0.0.1 loop.wild.test\n169.254.169.254 meta.wild.test\n"
                f"{remote.here} own.wild.test own.test\n{host} eth.wild.test\n{remote.late} late.wild.test\n" +
                (f"{remote.here6} own6.wild.test\n" if remote.here6 else ""))
    ca = open(crt).read()
    allow = make_ws(tmp, "allow", '[sandbox]\nnetwork = ["allowed.test", "secure.test", "*.wild.test"]\n',
                    {"ca.pem": ca})
    own = make_ws(tmp, "own", '[sandbox]\nnetwork = ["*.wild.test", "own.test", "%s"]\n' % remote.here)
    off = make_ws(tmp, "off", "[sandbox]\nnetwork = false\n")
    lock = make_ws(tmp, "lock", "[sandbox]\nlockdown = true\n")
    with open(os.path.join(tmp, "suite.py"), "w") as f:
        f.write(LOOPBACK_SUITE)
    for ws in (allow, off, lock):
        for name, text in (("suite.py", LOOPBACK_SUITE), ("sni.py", SNI_MISMATCH), ("fetch.py", URLLIB),
                           ("direct.py", DIRECT)):
            with open(os.path.join(ws, name), "w") as f:
                f.write(text)
        chown_tree(ws)
    d = Daemon(tmp, hosts)
    try:
        tests(d, tmp, remote.addr, port, sport, allow, off, lock)
        own_address_tests(d, www, host, remote, own, servers)
    finally:
        d.stop()
        if T.failed:
            print("# daemon log tail:\n" + "\n".join("#   " + ln for ln in open(d.log).read()[-3000:].splitlines()))


def attempt(name, fn):
    try:
        detail = fn()
        tap(True, name, detail or "")
    except vtest.Skip as e:
        T.skip(name, str(e))
    except Exception as e:
        tap(False, name, str(e) if isinstance(e, Fail) else traceback.format_exc())


def tests(d, tmp, host, port, sport, allow, off, lock):
    def loopback(ws, want):
        def t():
            r = d.run(ws, "python3 suite.py")
            if want:
                check(r.get("ok") and r.get("exit_code") == 0 and "fixture ok" in r.get("stdout", ""), r)
            else:
                check(r.get("ok") and r.get("exit_code") != 0 and "fixture ok" not in r.get("stdout", ""), r)
            return (r.get("stdout", "") + r.get("stderr", "")).strip()[-300:]
        return t

    attempt("network = false: a test suite serving and connecting on 127.0.0.1 in the jail passes", loopback(off, True))
    attempt("allowlist: the same test suite passes", loopback(allow, True))
    attempt("lockdown: the test suite cannot even create an inet socket", loopback(lock, False))

    def env_set():
        r = d.run(allow, "env | grep -i _proxy= | sort")
        want = [f"{k}=http://127.0.0.1:3128" for k in ("ALL_PROXY", "HTTPS_PROXY", "HTTP_PROXY")] + \
            ["NO_PROXY=localhost,127.0.0.1"] + \
            [f"{k}=http://127.0.0.1:3128" for k in ("all_proxy", "http_proxy", "https_proxy")] + \
            ["no_proxy=localhost,127.0.0.1"] + \
            ["NODE_USE_ENV_PROXY=1"]  # Node's fetch reads the variables only with this (docs/config.md)
        check(r.get("ok") and sorted(r["stdout"].split()) == sorted(want), r)
        return r["stdout"].strip()
    attempt("allowlist: the proxy variables, both cases, NO_PROXY and NODE_USE_ENV_PROXY", env_set)

    def allowed_curl():
        r = d.run(allow, f"curl -sS -f http://allowed.test:{port}/hello.txt")
        check(r.get("exit_code") == 0 and r["stdout"] == "hello from the host\n" and "network_denied" not in r, r)
        return r["stdout"].strip()
    attempt("curl: an allowed name over HTTP works", allowed_curl)

    def allowed_https():
        r = d.run(allow, f"curl -sS -f --cacert ca.pem https://secure.test:{sport}/hello.txt")
        check(r.get("exit_code") == 0 and r["stdout"] == "hello from the host\n", r)
        return r["stdout"].strip()
    attempt("curl: an allowed name over HTTPS (CONNECT, self-signed certificate) works", allowed_https)

    def urllib_both():
        r = d.run(allow, f"python3 fetch.py http://allowed.test:{port}/hello.txt https://secure.test:{sport}/hello.txt")
        check(r.get("exit_code") == 0 and r["stdout"] == "hello from the host\nhello from the host\n", r)
        return r["stdout"].strip()
    attempt("Python urllib: HTTP and HTTPS through the environment work", urllib_both)

    def denied():
        r = d.run(allow, f"curl -sS -i http://denied.test:{port}/hello.txt")
        out = r.get("stdout", "")
        check(r.get("ok") and "HTTP/1.1 403" in out and "denied.test" in out and "network = [...]" in out and
              "hello from the host" not in out, r)
        nd = r.get("network_denied")
        check(nd and nd[0]["host"] == "denied.test" and nd[0]["port"] == port and
              "not in the workspace's network allowlist" in nd[0]["reason"], r)
        time.sleep(0.2)
        audit = [json.loads(ln) for ln in open(d.audit)]
        hits = [a for a in audit if a.get("tool") == "network" and "denied.test" in json.dumps(a)]
        check(hits and hits[-1].get("outcome") == "denied", audit[-5:])
        return out.splitlines()[-1] + "\n" + json.dumps(nd)
    attempt("an unlisted name: 403 naming the host and the policy line, network_denied, audit log", denied)

    def denied_https():
        r = d.run(allow, f"curl -sS --cacert ca.pem https://other.test:{sport}/hello.txt")
        check(r.get("exit_code") != 0 and r.get("network_denied") and r["network_denied"][0]["host"] == "other.test", r)
        return r.get("stderr", "").strip()
    attempt("an unlisted name over HTTPS: CONNECT refused, in network_denied", denied_https)

    def wildcard():
        r = d.run(allow, f"curl -sS -f http://pub.wild.test:{port}/hello.txt")
        check(r.get("exit_code") == 0 and r["stdout"] == "hello from the host\n", ("control failed", r))
        for name, cls in (("loop.wild.test", "loopback"), ("meta.wild.test", "link-local")):
            r = d.run(allow, f"curl -sS -i http://{name}:{port}/hello.txt")
            nd = r.get("network_denied") or []
            check("HTTP/1.1 403" in r.get("stdout", "") and nd and nd[0]["host"] == name and cls in nd[0]["reason"],
                  r)
        return nd[0]["reason"]
    attempt("a wildcard name resolving to loopback or 169.254.169.254 is refused (a public one works)", wildcard)

    def sni():
        r = d.run(allow, f"python3 sni.py {sport}")
        out = r.get("stdout", "")
        check("proxy said: HTTP/1.1 200" in out and "HANDSHAKE COMPLETED" not in out, r)
        nd = r.get("network_denied") or []
        check(nd and nd[0]["host"] == "secure.test" and "SNI" in nd[0]["reason"] and "other.test" in nd[0]["reason"],
              r)
        return nd[0]["reason"]
    attempt("a CONNECT whose TLS SNI differs from its host is refused", sni)

    def direct():
        r = d.run(allow, f"python3 direct.py {host} {port}")
        check(r.get("exit_code") == 7 and "Network is unreachable" in r.get("stdout", ""), r)
        check("no direct network" in r.get("network_note", ""), r)
        return r["stdout"].strip() + "\n" + r["network_note"]
    attempt("a direct connect() gets ENETUNREACH and the result says the jail has no direct network", direct)

    def embedded_and_check():
        env = dict(os.environ)
        env.pop("VECTORA_SANDBOX_SOCKET", None)
        r = subprocess.run([CLI, "exec", "-w", allow, "--", "true"], capture_output=True, text=True, env=env,
                           timeout=60)
        check(r.returncode == 125 and "served by the daemon's proxy" in r.stderr and "vectora-sandboxd" in r.stderr,
              {"rc": r.returncode, "stderr": r.stderr})
        c = subprocess.run([CLI, "check", "-w", allow], capture_output=True, text=True, env=env, timeout=60)
        check(c.returncode == 0 and "allowlist through the daemon's proxy" in c.stdout and "*.wild.test" in c.stdout,
              {"rc": c.returncode, "stdout": c.stdout, "stderr": c.stderr})
        j = json.loads(subprocess.run([CLI, "check", "-w", allow, "--json"], capture_output=True, text=True,
                                      env=env, timeout=60).stdout)
        check(j.get("network") is False and j.get("network_allow") == ["allowed.test", "secure.test", "*.wild.test"], j)
        return r.stderr.strip()
    attempt("embedded mode (no daemon) refuses an allowlist with exit 125 and says what to run; check shows it",
            embedded_and_check)

    def status():
        # The proxy sends its counts at most every 100 ms: the last
        # connection shows a moment after its call.
        for _ in range(40):
            w = d.ws_status(allow)
            n = w.get("network") if w else None
            if n and n["connections"] >= 10:
                break
            time.sleep(0.05)
        check(n and n["allow"] == ["allowed.test", "secure.test", "*.wild.test"] and n["denied"] >= 5 and
              n["connections"] >= 10 and n["open"] >= 0, w)
        return json.dumps(n)
    attempt("status: the allowlist, connections and denials of the workspace", status)


def own_address_tests(d, www, eth, remote, ws, servers):
    """Issue 25: a name whose address is one of this host's own (an
    interface's) reached every service the host had bound to 0.0.0.0, as
    loopback would; a wildcard reached it when that address was public, an
    exact name always. Now no name reaches one, IPv4 or IPv6, including an
    address that came up after the proxy first looked; a literal address
    entry still does (the remedy the refusal names)."""
    here = serve(www, remote.here)
    servers.append(here)
    hport = here.server_address[1]

    def refused(name, addr, port):
        r = d.run(ws, f"curl -sS -i --max-time 20 http://{name}:{port}/hello.txt")
        out = r.get("stdout", "")
        nd = r.get("network_denied") or []
        check("HTTP/1.1 403" in out and "hello from the host" not in out and nd and nd[0]["host"] == name and
              "this host's own address" in nd[0]["reason"] and addr in nd[0]["reason"] and
              "list the literal address" in nd[0]["reason"], r)
        return nd[0]["reason"]

    def own_v4():
        return "\n".join([refused("own.wild.test", remote.here, hport), refused("own.test", remote.here, hport)])
    attempt("a wildcard or exact name resolving to this host's own public address is refused", own_v4)

    def literal():
        r = d.run(ws, f"curl -sS -f --max-time 20 http://{remote.here}:{hport}/hello.txt")
        check(r.get("exit_code") == 0 and r["stdout"] == "hello from the host\n", r)
        return r["stdout"].strip()
    attempt("the host's own address listed as a literal is reached", literal)

    def own_v6():
        if not remote.here6:
            raise vtest.Skip("no IPv6 address could be added here")
        srv = serve(www, remote.here6)
        servers.append(srv)
        return refused("own6.wild.test", remote.here6, srv.server_address[1])
    attempt("a wildcard name resolving to this host's own IPv6 address is refused", own_v6)

    def late():
        # The proxy has looked at the addresses (above); this one comes after.
        ip("addr", "add", remote.late + "/32", "dev", remote.link)
        try:
            srv = serve(www, remote.late)
            servers.append(srv)
            return refused("late.wild.test", remote.late, srv.server_address[1])
        finally:
            subprocess.run(["ip", "addr", "del", remote.late + "/32", "dev", remote.link], capture_output=True)
    attempt("an address added to this host after the proxy started is refused too", late)

    def primary():
        # The machine's own primary address: refused as private, or as its own.
        srv = serve(www, eth)
        servers.append(srv)
        r = d.run(ws, f"curl -sS -i --max-time 20 http://eth.wild.test:{srv.server_address[1]}/hello.txt")
        nd = r.get("network_denied") or []
        check(nd and nd[0]["host"] == "eth.wild.test" and
              ("this host's own address" in nd[0]["reason"] or "private" in nd[0]["reason"]), r)
        return nd[0]["reason"]
    attempt("a wildcard name resolving to this host's primary address (%s) is refused" % eth, primary)


if __name__ == "__main__":
    main()
