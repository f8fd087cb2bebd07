#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on host-held secrets that still break the jail (not registered
in meson: each case fails today; see docs/threat-model.md, "Host-held
secrets", Not yet). Run by hand:

  VECTORA_BUILD_ROOT=build VECTORA_SOURCE_ROOT=. python3 tests/integration/test_attacks_secrets_open.py

t_header_reflected: the proxy puts the value in place of the placeholder
in any header of a request to the secret's host, and hosts echo request
headers back as a matter of course: a CORS answer's
Access-Control-Allow-Origin is the request's Origin, many APIs and
routers return the client's X-Request-Id, an echo endpoint returns them
all. `curl -H "Origin: $TOK" https://api.example.org/` printed the value
in the jail. What would hold: the value only in the headers a secret names
(issue 31: "Authorization, Basic credentials, other headers named in the
secret"; Authorization by default), a placeholder in any other header
refused as one in the path is; the response head scrubbed of the value
as a second line (a body that echoes a header stays the host's doing).

TAP output."""
import http.server
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402

from vsecrets import CURL, https_server, make_pki, out_of, set_secret, term  # noqa: E402

T = Tap()
VALUE = "ghp_REALtoken_" + os.urandom(8).hex()


class Echo(http.server.BaseHTTPRequestHandler):
    """Answers as many hosts do: Origin back in Access-Control-Allow-Origin,
    X-Request-Id back as it came."""

    def do_GET(self):
        body = b"hi\n"
        self.send_response(200)
        if self.headers.get("Origin"):
            self.send_header("Access-Control-Allow-Origin", self.headers["Origin"])
        if self.headers.get("X-Request-Id"):
            self.send_header("X-Request-Id", self.headers["X-Request-Id"])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def t_header_reflected(tmp):
    pki = make_pki(tmp)
    srv = https_server(pki("srv.crt"), pki("srv.key"), Echo)
    port = srv.server_address[1]
    state = os.path.join(tmp, "state")
    os.makedirs(state, mode=0o700)
    d = vtest.Daemon(tmp, name="echo", extra=["--state-dir", state], env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port], VALUE)
        ws = make_ws(tmp, "ws", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\nsecrets = ["TOK"]\n' % port)
        for h in ("Origin", "X-Request-Id"):
            r = term(d, ws, CURL + '-i -H "%s: $TOK" https://127.0.0.1:%d/' % (h, port))
            check(VALUE not in out_of(r), "%s: the host echoed the value to the jail: %s" % (h, out_of(r)))
    finally:
        d.stop()
        srv.shutdown()


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("attacks-secrets-open", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "curl", "openssl"):
        if not shutil.which(tool):
            T.skip("attacks-secrets-open", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_header_reflected], "vs-attacks-secrets-open-"))


if __name__ == "__main__":
    main()
