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

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import http.server
import os
import shutil
import sys
import threading

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

    def __init__(self, tmp, name):
        pki = make_pki(tmp)
        self.https = https_server(pki("srv.crt"), pki("srv.key"), Reflector)
        self.http = plain_server()
        self.sport, self.pport = self.https.server_address[1], self.http.server_address[1]
        state = os.path.join(tmp, name + "-state")
        os.makedirs(state, mode=0o700, exist_ok=True)
        self.d = vtest.Daemon(tmp, name=name, extra=["--state-dir", state],
                              env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
        try:
            hosts = ["127.0.0.1:%d" % p for p in (self.sport, self.pport)]
            set_secret(self.d, "TOK", hosts, VALUE)
            self.ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = [%s]\nsecrets = ["TOK"]\n'
                              % ", ".join('"%s"' % h for h in hosts))
        except BaseException:
            self.stop()
            raise

    def stop(self):
        self.d.stop()
        self.https.shutdown()
        self.http.shutdown()


def t_path_reflected(tmp):
    """The placeholder in the path or the query, to the secret's own host
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


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("attacks-secrets", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "curl", "openssl"):
        if not shutil.which(tool):
            T.skip("attacks-secrets", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_path_reflected], "vs-attacks-secrets-"))


if __name__ == "__main__":
    main()
