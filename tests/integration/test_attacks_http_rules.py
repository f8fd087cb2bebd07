#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on the HTTP rules per host ([[sandbox.http]], issue 31 item 4),
as a hostile agent in the jail would make them: raw bytes written to the
proxy by a Python client in the jail (curl cleans up what it sends), to a
rules host over plain HTTP and inside the TLS the proxy intercepts for a
secret's host. Each case sends a request the rules do not allow, written
so that the proxy could read it as an allowed one, and checks that it is
refused (403, in network_denied) and never reaches the host.

  - a '#' in the request target: the proxy matched the path before it,
    the host got all of it ("/repos/me/x#/../../other": a host that takes
    '#' as a path character, as a request target has no fragment, and
    resolves the dot segments serves /repos/other);
  - an overlong UTF-8 '.' (%c0%ae): a dot segment to a host whose decoder
    accepts it;
  - a plain-HTTP request with no Host header, to another allowed name of
    the rules host's server: the server routes it to its default site.

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import http.server
import json
import os
import shutil
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402

from vsecrets import RAW, Recorder, https_server, make_pki, out_of, set_secret, term  # noqa: E402

T = Tap()
VALUE = "ghp_REALtoken_" + os.urandom(8).hex()
RULES = '[[sandbox.http]]\nhost = "127.0.0.1"\nallow = ["GET /repos/me/**", "POST /repos/me/*/pulls"]\n'


class Recorder11(Recorder):
    """Recorder speaking HTTP/1.1 (keep-alive unless told to close)."""
    protocol_version = "HTTP/1.1"


def daemon(tmp, name, env=None):
    state = os.path.join(tmp, name + "-state")
    os.makedirs(state, mode=0o700, exist_ok=True)
    return vtest.Daemon(tmp, name=name, extra=["--state-dir", state], env=env)


def raw(d, ws, mode, authority, data):
    r = term(d, ws, "python3 raw.py %s %s '%s'" % (mode, authority, data.replace("'", "'\\''")))
    return r, out_of(r)


def refused(r, out, what):
    check("403 Forbidden" in out and r.get("network_denied"), (what, r))


def reached(port):
    return [path for p, path, _ in Recorder.seen if p == port]


def plain_server(addr="127.0.0.1"):
    srv = http.server.ThreadingHTTPServer((addr, 0), Recorder11)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def with_https(tmp, name, body):
    """A rules host with a secret (its HTTPS intercepted) and a workspace
    using it; body(d, ws, port)."""
    pki = make_pki(tmp)
    srv = https_server(pki("srv.crt"), pki("srv.key"), Recorder11)
    port = srv.server_address[1]
    d = daemon(tmp, name, env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port], VALUE)
        ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = ["127.0.0.1:%d"]\nsecrets = ["TOK"]\n%s' % (port, RULES),
                     files={"raw.py": RAW})
        vtest.chown_tree(ws)
        body(d, ws, port)
    finally:
        d.stop()
        srv.shutdown()


def with_plain(tmp, name, body, addr="127.0.0.1", extra_net=()):
    srv = plain_server(addr)
    port = srv.server_address[1]
    d = daemon(tmp, name)
    net = ", ".join('"%s:%d"' % (h, port) for h in ("127.0.0.1",) + tuple(extra_net))
    try:
        ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = [%s]\n%s' % (net, RULES), files={"raw.py": RAW})
        vtest.chown_tree(ws)
        body(d, ws, port)
    finally:
        d.stop()
        srv.shutdown()


def t_fragment_https(tmp):
    """'#' in the target inside the intercepted TLS: refused, not sent."""
    def body(d, ws, port):
        Recorder.seen.clear()
        r, out = raw(d, ws, "tls", "127.0.0.1:%d" % port,
                     "GET /repos/me/x#/../../other/y HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % port)
        check(not reached(port), ("the host got", Recorder.seen, r))
        refused(r, out, "fragment")
    with_https(tmp, "frag-tls", body)


def t_fragment_plain(tmp):
    """'#' in the target of a plain-HTTP request: refused, not sent."""
    def body(d, ws, port):
        Recorder.seen.clear()
        r, out = raw(d, ws, "plain", "-", "GET http://127.0.0.1:%d/repos/me/x#/../../other HTTP/1.1\\r\\n"
                     "Host: 127.0.0.1:%d\\r\\n\\r\\n" % (port, port))
        check(not reached(port), ("the host got", Recorder.seen, r))
        refused(r, out, "fragment")
    with_plain(tmp, "frag-plain", body)


def t_overlong_dot(tmp):
    """%c0%ae (an overlong '.', not UTF-8) in a segment: refused, plain
    HTTP and HTTPS; a well-formed UTF-8 path still passes."""
    def https(d, ws, port):
        Recorder.seen.clear()
        r, out = raw(d, ws, "tls", "127.0.0.1:%d" % port,
                     "GET /repos/me/%%c0%%ae%%c0%%ae/other HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % port)
        check(not reached(port), ("the host got", Recorder.seen, r))
        refused(r, out, "overlong")

    def plain(d, ws, port):
        Recorder.seen.clear()
        r, out = raw(d, ws, "plain", "-", "GET http://127.0.0.1:%d/repos/me/%%e0%%80%%ae%%c0%%ae/other HTTP/1.1\\r\\n"
                     "Host: 127.0.0.1:%d\\r\\n\\r\\n" % (port, port))
        check(not reached(port), ("the host got", Recorder.seen, r))
        refused(r, out, "overlong")
        r, out = raw(d, ws, "plain", "-", "GET http://127.0.0.1:%d/repos/me/caf%%c3%%a9 HTTP/1.1\\r\\n"
                     "Host: 127.0.0.1:%d\\r\\n\\r\\n" % (port, port))
        check("seen" in out and reached(port) == ["/repos/me/caf%c3%a9"], (r, Recorder.seen))
    with_https(tmp, "overlong-tls", https)
    with_plain(tmp, "overlong-plain", plain)


def t_no_host_header(tmp):
    """A server on every address (0.0.0.0) reached by a second allowed
    name (127.0.0.2) without a Host header: it would serve the request as
    its default site, the rules host's. Refused while the workspace has
    rules; with a Host header naming the target it passes."""
    def body(d, ws, port):
        Recorder.seen.clear()
        r, out = raw(d, ws, "plain", "-", "DELETE http://127.0.0.2:%d/repos/other HTTP/1.1\\r\\n\\r\\n" % port)
        check(not reached(port), ("the host got", Recorder.seen, r))
        refused(r, out, "no Host")
        check("Host header" in json.dumps(r.get("network_denied")), r)
        r, out = raw(d, ws, "plain", "-", "DELETE http://127.0.0.2:%d/x HTTP/1.1\\r\\nHost: 127.0.0.2:%d\\r\\n\\r\\n"
                     % (port, port))
        check("seen" in out and reached(port) == ["/x"], (r, Recorder.seen))
    with_plain(tmp, "nohost", body, addr="0.0.0.0", extra_net=("127.0.0.2",))


def t_host_unreadable(tmp):
    """A plain request to another allowed name of the rules host's server
    whose Host header the proxy cannot read as a name ("x@127.0.0.1",
    "127.0.0.1 " with a blank before the port) but a lenient server may
    route to the rules host: refused while the workspace has rules."""
    def body(d, ws, port):
        for host in ("x@127.0.0.1:%d" % port, "127.0.0.1 :%d" % port, "127.0.0.1_:%d" % port):
            Recorder.seen.clear()
            r, out = raw(d, ws, "plain", "-", "DELETE http://127.0.0.2:%d/repos/other HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n"
                         % (port, host))
            check(not reached(port), (host, "the host got", Recorder.seen, r))
            refused(r, out, host)
    with_plain(tmp, "hostname", body, addr="0.0.0.0", extra_net=("127.0.0.2",))


def t_dot_space_segment(tmp):
    """A segment of dots and blanks ("..%20", "...", ". ."): a server that
    trims a name's trailing dots and spaces (Windows) reads it as "..".
    Refused, plain HTTP and HTTPS."""
    paths = ["/repos/me/..%20/other", "/repos/me/.../other", "/repos/me/.%20./other", "/repos/me/..%09/other"]

    def check_all(d, ws, mode, port):
        for path in paths:
            Recorder.seen.clear()
            target = path if mode == "tls" else "http://127.0.0.1:%d%s" % (port, path)
            r, out = raw(d, ws, mode, "127.0.0.1:%d" % port,
                         "GET %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % (target, port))
            check(not reached(port), (path, "the host got", Recorder.seen, r))
            refused(r, out, path)
    with_https(tmp, "dots-tls", lambda d, ws, port: check_all(d, ws, "tls", port))
    with_plain(tmp, "dots-plain", lambda d, ws, port: check_all(d, ws, "plain", port))


def t_double_encoding(tmp):
    """An encoded escape ("%252e%252e": "%2e%2e" once decoded) to a host
    that decodes twice reads ".."; refused, plain HTTP and HTTPS. A lone
    encoded '%' ("100%25") passes."""
    def check_all(d, ws, mode, port):
        for path in ("/repos/me/%252e%252e/other", "/repos/me/x%252F..%252F..%252Fother"):
            Recorder.seen.clear()
            target = path if mode == "tls" else "http://127.0.0.1:%d%s" % (port, path)
            r, out = raw(d, ws, mode, "127.0.0.1:%d" % port,
                         "GET %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % (target, port))
            check(not reached(port), (path, "the host got", Recorder.seen, r))
            refused(r, out, path)
        Recorder.seen.clear()
        target = "/repos/me/100%25" if mode == "tls" else "http://127.0.0.1:%d/repos/me/100%%25" % port
        r, out = raw(d, ws, mode, "127.0.0.1:%d" % port,
                     "GET %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % (target, port))
        check("seen" in out and reached(port) == ["/repos/me/100%25"], (r, Recorder.seen))
    with_https(tmp, "dbl-tls", lambda d, ws, port: check_all(d, ws, "tls", port))
    with_plain(tmp, "dbl-plain", lambda d, ws, port: check_all(d, ws, "plain", port))


OVERRIDES = ["X-HTTP-Method-Override: DELETE", "X-HTTP-Method: DELETE", "X-Method-Override: DELETE",
             "X-Original-URL: /repos/other/x", "X-Rewrite-URL: /repos/other/x",
             # CGI, PHP and WSGI servers name a header by its name with "-" as "_".
             "X_HTTP_Method_Override: DELETE"]
# A front end and the server behind it may read these bodies' ends
# differently; what one takes for the body, the other runs as a request.
FRAMINGS = ["Content-Length: 41\\r\\nTransfer-Encoding: chunked",
            "Content-Length: 0\\r\\nContent-Length: 41",
            "Content-Length: 0, 41",
            "Transfer-Encoding: chunked\\r\\nTransfer-Encoding: identity",
            "Transfer-Encoding: xchunked"]
SMUGGLED = "0\\r\\n\\r\\nDELETE /repos/other HTTP/1.1\\r\\nX: y"


def t_method_override(tmp):
    """An allowed POST carrying a header that makes many frameworks run
    another method (X-HTTP-Method-Override: DELETE) or another path
    (X-Original-URL): refused, plain HTTP and HTTPS."""
    def check_all(d, ws, mode, port):
        for h in OVERRIDES:
            Recorder.seen.clear()
            target = "/repos/me/a/pulls" if mode == "tls" else "http://127.0.0.1:%d/repos/me/a/pulls" % port
            r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n%s\\r\\n"
                         "Content-Length: 0\\r\\n\\r\\n" % (target, port, h))
            check(not reached(port), (h, "the host got", Recorder.seen, r))
            refused(r, out, h)
    with_https(tmp, "override-tls", lambda d, ws, port: check_all(d, ws, "tls", port))
    with_plain(tmp, "override-plain", lambda d, ws, port: check_all(d, ws, "plain", port))


def t_ambiguous_framing(tmp):
    """An allowed POST whose body's end a front end and its back end may
    read differently (Content-Length with Transfer-Encoding, two lengths,
    a coding other than chunked): the rest of the body would run as an
    unchecked request. Refused, plain HTTP and HTTPS; one Content-Length
    or chunked alone passes."""
    def check_all(d, ws, mode, port):
        target = "/repos/me/a/pulls" if mode == "tls" else "http://127.0.0.1:%d/repos/me/a/pulls" % port
        for h in FRAMINGS:
            Recorder.seen.clear()
            r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n%s\\r\\n"
                         "\\r\\n%s" % (target, port, h, SMUGGLED))
            check(not reached(port), (h, "the host got", Recorder.seen, r))
            refused(r, out, h)
            check("body" in json.dumps(r.get("network_denied")), r)
        Recorder.seen.clear()
        r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Content-Length: 3\\r\\n\\r\\nx=1" % (target, port))
        check("seen" in out and reached(port) == ["/repos/me/a/pulls"], (r, Recorder.seen))
        Recorder.seen.clear()
        r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Transfer-Encoding: Chunked\\r\\n\\r\\n0\\r\\n\\r\\n" % (target, port))
        check("403" not in out and "body" not in json.dumps(r.get("network_denied")), (r, Recorder.seen))
    with_https(tmp, "framing-tls", lambda d, ws, port: check_all(d, ws, "tls", port))
    with_plain(tmp, "framing-plain", lambda d, ws, port: check_all(d, ws, "plain", port))


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("attacks-http-rules", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "openssl", "python3"):
        if not shutil.which(tool):
            T.skip("attacks-http-rules", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_fragment_https, t_fragment_plain, t_overlong_dot, t_no_host_header, t_method_override,
                                 t_ambiguous_framing, t_host_unreadable, t_dot_space_segment,
                                 t_double_encoding],
                             "vs-atk-http-rules-"))


if __name__ == "__main__":
    main()
