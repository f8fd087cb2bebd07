#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on host-held secrets (issue 31) by the agent in the jail, for
real: a daemon whose CAs are a test CA, bwrap jails, curl in the jail, and
local HTTP and HTTPS servers that answer as many real ones do.

t_path_reflected: the placeholder written into the request's path or
query, sent to the secret's own host. The proxy put the value there, and a
server hands a path back: a redirect's Location (a slash added, http to
https, a login page's return URL), an error page ("Cannot GET /..."),
so the value reached the jail. A secret goes in a header; a request whose
target carries a placeholder is refused.

t_proxy_not_dumpable: the proxy holds every secret's value. Under a
daemon run by an ordinary user it kept that user's uid (as it must) but
stayed dumpable: the user's other processes read the values from its
/proc/PID/mem, and only Landlock kept a crash's core file (core_pattern
"core": the working directory, the daemon's, here a workspace the jail
reads) from being written; a kernel without Landlock would have it.

t_plain_host_fronting: plain HTTP to the secret's host with a Host header
naming another site. A CDN or a shared server routes by Host: the value
went to that other site's origin. Inside TLS the proxy refused it already;
plain HTTP now refuses it the same way.

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import http.server
import json
import os
import resource
import shutil
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402

from vsecrets import CURL, https_server, make_pki, out_of, set_secret, term  # noqa: E402

T = Tap()
VALUE = "ghp_REALtoken_" + os.urandom(8).hex()


class Reflector(http.server.BaseHTTPRequestHandler):
    """Answers as many servers do: a path without a trailing slash is
    redirected to the same with one (Location names the path), any other
    is a 404 whose body names it; /ok/ is 200 "ok". Keeps every head."""
    seen = []

    def do_GET(self):
        Reflector.seen.append((self.server.server_address[1], self.path, str(self.headers)))
        if self.path == "/ok/":
            status, extra, body = 200, [], b"ok\n"
        elif not self.path.endswith("/"):
            status, extra, body = 301, [("Location", self.path + "/")], b""
        else:
            status, extra, body = 404, [], ("Cannot GET %s\n" % self.path).encode()
        self.send_response(status)
        # As many hosts do: the request's Origin back in
        # Access-Control-Allow-Origin, its request id back as it came.
        for h, back in (("Origin", "Access-Control-Allow-Origin"), ("X-Request-Id", "X-Request-Id")):
            if self.headers.get(h):
                extra = extra + [(back, self.headers[h])]
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def plain_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reflector)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


class Setup:
    """TOK goes to an HTTPS server (test CA) and a plain-HTTP one, both
    Reflectors; the daemon's CAs are the test CA."""

    def __init__(self, tmp, name, cwd=None):
        pki = make_pki(tmp)
        self.https = https_server(pki("srv.crt"), pki("srv.key"), Reflector)
        self.http = plain_server()
        self.sport, self.pport = self.https.server_address[1], self.http.server_address[1]
        state = os.path.join(tmp, name + "-state")
        os.makedirs(state, mode=0o700, exist_ok=True)
        hosts = ["127.0.0.1:%d" % p for p in (self.sport, self.pport)]
        self.ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = [%s]\nsecrets = ["TOK"]\n'
                          % ", ".join('"%s"' % h for h in hosts))
        # The daemon (and so its proxy) started in the workspace, as one
        # the CLI starts from a project directory would be.
        here = os.getcwd()
        os.chdir(self.ws if cwd == "ws" else here)
        try:
            self.d = vtest.Daemon(tmp, name=name, extra=["--state-dir", state],
                                  env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
        finally:
            os.chdir(here)
        try:
            set_secret(self.d, "TOK", hosts, VALUE)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        self.d.stop()
        self.https.shutdown()
        self.http.shutdown()


def t_path_reflected(tmp):
    """The placeholder in the path, the query or the method, to the secret's own host
    (HTTPS, intercepted, and plain HTTP): the host's redirect and error
    page name the path; the jail must not get the value back, and the
    value must not be in a request target (servers log those). The same
    secret in Authorization still reaches the host."""
    s = Setup(tmp, "path")
    try:
        Reflector.seen.clear()
        for url in ("https://127.0.0.1:%d" % s.sport, "http://127.0.0.1:%d" % s.pport):
            for tail in ("/x/$TOK", "/x/$TOK/", "/x/?t=$TOK", "/x?access_token=$TOK"):
                r = term(s.d, s.ws, CURL + '-i "%s%s"' % (url, tail))
                out = out_of(r)
                check(VALUE not in out, "the value came back to the jail: %s%s: %s" % (url, tail, out))
                check("403" in out and "placeholder" in out, (url, tail, out))
            # The method is in the request line too (a 501 names it).
            r = term(s.d, s.ws, CURL + '-i -X "$TOK" %s/ok/' % url)
            check(VALUE not in out_of(r) and "403" in out_of(r), (url, "-X", out_of(r)))
        targets = [p for _, p, _ in Reflector.seen]
        check(not [p for p in targets if VALUE in p], "the value went into a request target: %s" % targets)
        # A header still carries it (over HTTPS and plain HTTP).
        for url in ("https://127.0.0.1:%d" % s.sport, "http://127.0.0.1:%d" % s.pport):
            Reflector.seen.clear()
            r = term(s.d, s.ws, CURL + '-H "Authorization: Bearer $TOK" %s/ok/' % url)
            check("ok" in out_of(r) and Reflector.seen and "Bearer %s" % VALUE in Reflector.seen[-1][2],
                  (url, r, Reflector.seen))
    finally:
        s.stop()


def t_header_reflected(tmp):
    """The placeholder in a header other than Authorization, to the
    secret's own host (HTTPS and plain HTTP): hosts echo such headers back
    (Origin into Access-Control-Allow-Origin, request ids), so the value
    would reach the jail. Refused (403 naming the secret, network_denied);
    the host never sees the value there. Authorization still carries it."""
    s = Setup(tmp, "hdr")
    try:
        for url in ("https://127.0.0.1:%d" % s.sport, "http://127.0.0.1:%d" % s.pport):
            for h in ("Origin", "X-Request-Id", "X-Api-Key"):
                Reflector.seen.clear()
                r = term(s.d, s.ws, CURL + '-i -H "%s: $TOK" %s/ok/' % (h, url))
                out = out_of(r)
                check(VALUE not in out, "%s: the host echoed the value to the jail: %s" % (h, out))
                check("403" in out and "Authorization only" in out and "TOK" in out, (url, h, out))
                check(any("TOK" in json.dumps(x) for x in r.get("network_denied") or []), (url, h, r))
                check(not [x for x in Reflector.seen if VALUE in x[2]], (url, h, "the value reached the host"))
            Reflector.seen.clear()
            r = term(s.d, s.ws, CURL + '-H "Authorization: Bearer $TOK" %s/ok/' % url)
            check("ok" in out_of(r) and Reflector.seen and "Bearer %s" % VALUE in Reflector.seen[-1][2],
                  (url, r, Reflector.seen))
    finally:
        s.stop()


def t_plain_host_fronting(tmp):
    """Plain HTTP to the secret's host whose Host header names another
    site, or the host twice: refused with a 403, the host gets no value.
    curl's own Host and one written with the port still go."""
    s = Setup(tmp, "front")
    try:
        Reflector.seen.clear()
        auth = '-H "Authorization: Bearer $TOK" '
        for hdrs in ('-H "Host: evil.example" ', '-H "Host: evil.example:%d" ' % s.pport):
            r = term(s.d, s.ws, CURL + "-i " + hdrs + auth + "http://127.0.0.1:%d/ok/" % s.pport)
            check("403" in out_of(r) and "Host" in out_of(r), (hdrs, r))
        # Two Host headers (curl sends one): which would the host believe?
        raw = ("import os, socket; s = socket.create_connection(('127.0.0.1', 3128)); "
               "s.sendall(('GET http://127.0.0.1:%d/ok/ HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nHost: evil.example\\r\\n"
               "Authorization: Bearer ' + os.environ['TOK'] + '\\r\\n\\r\\n').encode()); "
               "print(s.recv(4096).decode())" % (s.pport, s.pport))
        r = s.d.call({"tool": "terminal", "workspace": s.ws, "command": 'python3 -c "$C"', "env": {"C": raw},
                      "timeout": 60})
        check("403" in out_of(r) and "Host" in out_of(r), ("two Host headers", r))
        leaked = [h for _, _, h in Reflector.seen if VALUE in h]
        check(not leaked, "the value went to another site through the secret's host: %s" % leaked)
        for hdrs in ("", '-H "Host: 127.0.0.1:%d" ' % s.pport):
            Reflector.seen.clear()
            r = term(s.d, s.ws, CURL + hdrs + auth + "http://127.0.0.1:%d/ok/" % s.pport)
            check("ok" in out_of(r) and Reflector.seen and VALUE in Reflector.seen[-1][2], (hdrs, r))
    finally:
        s.stop()


def proxy_pid(d):
    p = d.status()["daemon"].get("proxy") or {}
    return p.get("pid", 0) if p.get("running") else 0


def t_proxy_not_dumpable(tmp):
    """The proxy, holding the value, is not dumpable, as root (another
    uid) and under an ordinary user's daemon (the same uid): its /proc
    files are root's, its memory unreadable to the daemon's user, and a
    crash leaves no core file (core files on: RLIMIT_CORE raised before
    the daemon starts; the daemon's working directory is the workspace)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    try:
        s = Setup(tmp, "dump", cwd="ws")
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))
    try:
        r = term(s.d, s.ws, CURL + '-H "Authorization: Bearer $TOK" http://127.0.0.1:%d/ok/' % s.pport)
        check("ok" in out_of(r), r)
        pid = proxy_pid(s.d)
        check(pid > 0, s.d.status())
        check(os.stat("/proc/%d/mem" % pid).st_uid == 0,
              "the proxy (uid %d) is dumpable: its /proc/PID/mem is uid %d's"
              % (os.stat("/proc/%d" % pid).st_uid, os.stat("/proc/%d/mem" % pid).st_uid))
        if os.geteuid() != 0:
            try:
                with open("/proc/%d/mem" % pid, "rb"):
                    pass
                check(False, "the daemon's user opens the proxy's memory")
            except PermissionError:
                pass
        with open("/proc/sys/kernel/core_pattern") as f:
            pattern = f.read().strip()
        if pattern.startswith("|") or pattern.startswith("/"):
            T.note("core_pattern %r does not write into the working directory: crash not tried" % pattern)
            return
        os.kill(pid, signal.SIGSEGV)
        end = time.time() + 15
        while time.time() < end and proxy_pid(s.d) in (0, pid):
            time.sleep(0.1)
        time.sleep(0.5)
        cores = [n for n in os.listdir(s.ws) if n.startswith("core")]
        check(not cores, "the proxy's crash wrote %s into the workspace" % cores)
        r = term(s.d, s.ws, "grep -rlsaF -- '%s' . ; echo done" % VALUE[:20])
        check(r.get("stdout", "").split() == ["done"], r)
    finally:
        s.stop()


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("attacks-secrets", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "curl", "openssl"):
        if not shutil.which(tool):
            T.skip("attacks-secrets", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_path_reflected, t_header_reflected, t_proxy_not_dumpable, t_plain_host_fronting], "vs-attacks-secrets-"))


if __name__ == "__main__":
    main()
