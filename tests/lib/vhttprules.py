# SPDX-License-Identifier: MIT
"""What the attacks on [[sandbox.http]] share (test_attacks_http_rules.py,
test_attacks_http_rules2.py): a raw client the jail runs (plain HTTP,
inside the TLS the proxy intercepts, or through a CONNECT tunnel as it
is), HTTP/1.1 servers that keep what they got, and a daemon with a
workspace whose rules name the server, over plain HTTP or HTTPS with a
secret for it."""
import http.server
import os
import threading

import vtest
from vtest import check, make_ws

from vsecrets import RAW, Recorder, https_server, make_pki, out_of, set_secret, term
VALUE = "ghp_REALtoken_" + os.urandom(8).hex()
RULES = '[[sandbox.http]]\nhost = "127.0.0.1"\nallow = ["GET /repos/me/**", "POST /repos/me/*/pulls"]\n'

class Recorder11(Recorder):
    """Recorder speaking HTTP/1.1, keeping each request's body too."""
    protocol_version = "HTTP/1.1"
    bodies = []

    def do_GET(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        Recorder11.bodies.append(body)
        Recorder.seen.append((self.server.server_address[1], self.path, str(self.headers)))
        out = b"seen\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_POST = do_PUT = do_DELETE = do_GET


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


def with_plain(tmp, name, body, addr="127.0.0.1", extra_net=(), rules=RULES):
    srv = plain_server(addr)
    port = srv.server_address[1]
    d = daemon(tmp, name)
    net = ", ".join('"%s:%d"' % (h, port) for h in ("127.0.0.1",) + tuple(extra_net))
    try:
        ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = [%s]\n%s' % (net, rules), files={"raw.py": RAW})
        vtest.chown_tree(ws)
        body(d, ws, port)
    finally:
        d.stop()
        srv.shutdown()
