#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""HTTP rules per host (issue 31, item 4): [[sandbox.http]] host = H,
allow = ["METHOD /glob", ...]. For real: a daemon, bwrap jails, curl in
the jail, HTTP and HTTPS servers on 127.0.0.1 (HTTPS with a test CA the
daemon trusts through its own SSL_CERT_FILE). A request no allow entry
matches gets a 403 naming the rule set, is in the call's network_denied
and the audit log, and never reaches the host; a path that could leave a
glob (dot segments, encoded slashes) is refused; a rules host the proxy
cannot see into (HTTPS without a secret) is refused outright; config
errors are located; widening the rules waits for allow; the embedded CLI,
which has no proxy, refuses to run a command under them.

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402

from vsecrets import CURL, Recorder, https_server, make_pki, out_of, set_secret, term  # noqa: E402

T = Tap()
VALUE = "ghp_REALtoken_" + os.urandom(8).hex()
RULES = '[[sandbox.http]]\nhost = "127.0.0.1"\nallow = ["GET /repos/me/**", "POST /repos/me/*/pulls"]\n'
ESCAPES = ["/repos/me/../other", "/repos/me/%2e%2e/other", "/repos/me/.%2E/other", "/repos/me/x%2F..%2F..%2Fother",
           "/repos/me/x%5c..%5cother", "/repos/me/..;/other", "/repos//me/x"]


def plain_server(addr="127.0.0.1"):
    srv = http.server.ThreadingHTTPServer((addr, 0), Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def daemon(tmp, name, env=None):
    state = os.path.join(tmp, name + "-state")
    os.makedirs(state, mode=0o700, exist_ok=True)
    return vtest.Daemon(tmp, name=name, extra=["--state-dir", state], env=env)


def seen(port):
    return [path for p, path, _ in Recorder.seen if p == port]


def audit_denials(d):
    return [r for r in map(json.loads, open(d.audit).read().splitlines())
            if r.get("tool") == "network" and r.get("outcome") == "denied"]


def check_refusals(d, ws, scheme, port, header=""):
    """The allowed requests pass, the others are refused and reported."""
    base = "%s://127.0.0.1:%d" % (scheme, port)
    Recorder.seen.clear()
    r = term(d, ws, CURL + header + "%s/repos/me/proj/issues?state=open" % base)
    check(r.get("ok") is True and "seen" in out_of(r) and seen(port) == ["/repos/me/proj/issues?state=open"], r)
    r = term(d, ws, CURL + header + "-X POST -d x=1 %s/repos/me/proj/pulls" % base)
    check("seen" in out_of(r) and seen(port)[-1] == "/repos/me/proj/pulls", r)
    Recorder.seen.clear()
    # POST where only GET is allowed; GET outside the glob; '*' is one segment.
    for method, path in (("POST", "/repos/me/proj/issues"), ("GET", "/repos/other/x"), ("POST", "/repos/me/a/b/pulls"),
                         ("DELETE", "/repos/me/proj")):
        r = term(d, ws, CURL + header + "-X %s -d x=1 -w '\\n%%{http_code}\\n' %s%s" % (method, base, path))
        out = out_of(r)
        check("403" in out.split() and '[[sandbox.http]] host = \\"127.0.0.1\\"' in json.dumps(out)
              and "vectora.toml line" in out and "no allow entry matches" in out, (method, path, r))
        denied = json.dumps(r.get("network_denied"))
        check("no allow entry matches" in denied and (method + " " + path) in denied, r)
    for path in ESCAPES:
        r = term(d, ws, CURL + header + "--path-as-is -w '\\n%%{http_code}\\n' '%s%s'" % (base, path))
        out = out_of(r)
        check("403" in out.split() and ("segment" in out or "encoded" in out), (path, r))
    check(Recorder.seen == [], ("the host got refused requests", Recorder.seen))
    reasons = [a.get("denial_reason", "") for a in audit_denials(d)]
    check(any("POST /repos/me/proj/issues" in x and "no allow entry matches" in x for x in reasons), reasons[-5:])
    check(any("/repos/me/../other" in x and "segment" in x for x in reasons), reasons[-5:])


def t_https_rules(tmp):
    """Through a secret's host (its HTTPS intercepted): GET under the glob
    passes with the token put in; POST where only GET is allowed, a path
    outside, and dot-segment or encoded-slash escapes get 403 naming the
    rule, are in network_denied and the audit log, and never reach it."""
    pki = make_pki(tmp)
    srv = https_server(pki("srv.crt"), pki("srv.key"))
    port = srv.server_address[1]
    d = daemon(tmp, "https", env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port], VALUE)
        ws = make_ws(tmp, "ws-https", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\nsecrets = ["TOK"]\n%s' % (port, RULES))
        Recorder.seen.clear()
        r = term(d, ws, CURL + '-H "Authorization: Bearer $TOK" https://127.0.0.1:%d/repos/me/x' % port)
        heads = [h for p, _, h in Recorder.seen if p == port]
        check("seen" in out_of(r) and heads and "Authorization: Bearer %s" % VALUE in heads[-1], (r, heads))
        check_refusals(d, ws, "https", port, header='-H "Authorization: Bearer $TOK" ')
    finally:
        d.stop()
        srv.shutdown()


def t_plain_http_rules(tmp):
    """A plain-HTTP host with rules: the same checks on the head the proxy
    parses, no secret needed; a host without rules is unaffected."""
    srv, other = plain_server(), plain_server("127.0.0.2")
    port, oport = srv.server_address[1], other.server_address[1]
    d = daemon(tmp, "plain")
    try:
        ws = make_ws(tmp, "ws-plain", '[sandbox]\nnetwork = ["127.0.0.1:%d", "127.0.0.2:%d"]\n%s' % (port, oport, RULES))
        check_refusals(d, ws, "http", port)
        Recorder.seen.clear()
        r = term(d, ws, CURL + "--path-as-is -X DELETE http://127.0.0.2:%d/anything/../at/all" % oport)
        check("seen" in out_of(r) and seen(oport), r)
        # The host without rules fronting for the one with: refused, not sent.
        Recorder.seen.clear()
        r = term(d, ws, CURL + "-H 'Host: 127.0.0.1:%d' -X POST http://127.0.0.2:%d/repos/other/x" % (port, oport))
        check("the Host header names 127.0.0.1" in out_of(r) and not Recorder.seen, (r, Recorder.seen))
        check("the Host header names" in json.dumps(r.get("network_denied")), r)
    finally:
        d.stop()
        srv.shutdown()
        other.shutdown()


def t_tunnel_refused(tmp):
    """A rules host reached by CONNECT without a secret (a TLS tunnel the
    proxy does not open) cannot be checked: refused with a 403 saying so,
    and the host sees no connection's request."""
    pki = make_pki(tmp)
    srv = https_server(pki("srv.crt"), pki("srv.key"))
    port = srv.server_address[1]
    d = daemon(tmp, "tunnel", env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
    try:
        ws = make_ws(tmp, "ws-tunnel", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n%s' % (port, RULES))
        Recorder.seen.clear()
        r = term(d, ws, CURL + "-k -v https://127.0.0.1:%d/repos/me/x" % port)
        out = out_of(r)
        check("403" in out, r)
        check("cannot check inside a TLS tunnel" in json.dumps(r.get("network_denied")), r)
        check(not seen(port), Recorder.seen)
    finally:
        d.stop()
        srv.shutdown()


def t_tunnel_plaintext_refused(tmp):
    """A CONNECT to a rules host the proxy intercepts (it has a secret),
    carrying plain HTTP instead of TLS (curl --proxytunnel to an http://
    URL): the tunnel would pass the head unread, so it is closed, and the
    host gets nothing."""
    srv = plain_server()
    port = srv.server_address[1]
    d = daemon(tmp, "ptun")
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port], VALUE)
        ws = make_ws(tmp, "ws-ptun", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\nsecrets = ["TOK"]\n%s' % (port, RULES))
        Recorder.seen.clear()
        r = term(d, ws, CURL + "-p -X POST http://127.0.0.1:%d/repos/other/x" % port)
        check("seen" not in out_of(r) and not seen(port), (r, Recorder.seen))
        check("[[sandbox.http]]" in json.dumps(r.get("network_denied")), r)
    finally:
        d.stop()
        srv.shutdown()


def t_config_errors(tmp):
    """Bad [[sandbox.http]] entries: located config errors."""
    d = daemon(tmp, "cfg")
    net = '[sandbox]\nnetwork = ["api.example.org"]\n'
    cases = [
        (net + '[[sandbox.http]]\nhost = "api.example.org"\nallow = ["get /x"]\n',
         'vectora.toml:5:10: sandbox.http[0].allow[0]: \\"get /x\\" is not \\"METHOD /path\\"'),
        (net + '[[sandbox.http]]\nhost = "api.example.org"\nallow = ["GET repos"]\n',
         "vectora.toml:5:10: sandbox.http[0].allow[0]: \\\"GET repos\\\": the path glob must start with"),
        (net + '[[sandbox.http]]\nhost = "api.example.org"\nallow = ["GET /a?b=1"]\n', "without its query"),
        (net + '[[sandbox.http]]\nhost = "api.example.org"\nallow = ["GET /a/../b"]\n', "segment"),
        (net + '[[sandbox.http]]\nhost = "api.example.org"\nallow = ["GET /a/[z-a]"]\n', "the path glob:"),
        (net + '[[sandbox.http]]\nhost = "other.example.org"\nallow = []\n',
         'vectora.toml:3:1: sandbox.http[0]: host \\"other.example.org\\" is not in network'),
        (net + '[[sandbox.http]]\nhost = "*.example.org"\nallow = []\n', "vectora.toml:4:8: sandbox.http[0].host"),
        (net + '[[sandbox.http]]\nhost = "api.example.org"\n', "sandbox.http[0] needs host"),
        (net + '[[sandbox.http]]\nhost = "api.example.org"\nallow = []\nmethods = 1\n',
         "vectora.toml:6:1: sandbox.http[0]: unknown key 'methods'"),
        (net + '[[sandbox.http]]\nhost = "api.example.org"\nallow = []\n[[sandbox.http]]\nhost = "API.example.org"\n'
         'allow = []\n', "already has rules"),
        ('[sandbox]\nnetwork = true\n[[sandbox.http]]\nhost = "a.org"\nallow = []\n',
         "vectora.toml:3:1: sandbox.http needs network = [...]"),
    ]
    try:
        for i, (toml, want) in enumerate(cases):
            ws = make_ws(tmp, "cfg%d" % i, toml)
            r = term(d, ws, "true")
            check(r.get("ok") is False and r["error"]["code"] == "config_invalid" and want in json.dumps(r), (toml, r))
    finally:
        d.stop()


def t_loosening_waits(tmp):
    """Adding an allow entry, or removing a host's rules, waits for allow
    (the approved rules keep refusing); removing an entry applies at once."""
    srv = plain_server()
    port = srv.server_address[1]
    d = daemon(tmp, "loose")
    url = "http://127.0.0.1:%d" % port
    toml = '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n' % port
    try:
        ws = make_ws(tmp, "ws-loose", toml + '[[sandbox.http]]\nhost = "127.0.0.1"\nallow = ["GET /a/**", "GET /b/**"]\n')
        write = lambda text: open(os.path.join(ws, "vectora.toml"), "w").write(text)  # noqa: E731
        r = term(d, ws, CURL + "-X POST %s/a/x" % url)
        check("no allow entry matches" in out_of(r), r)
        write(toml + '[[sandbox.http]]\nhost = "127.0.0.1"\nallow = ["GET /a/**", "GET /b/**", "POST /a/**"]\n')
        r = term(d, ws, CURL + "-X POST %s/a/x" % url)
        check("no allow entry matches" in out_of(r) and 'http: 127.0.0.1 allows \\"POST /a/**\\"' in json.dumps(r), r)
        r = d.call({"tool": "policy_allow", "workspace": ws})
        check(r.get("ok") is True, r)
        r = term(d, ws, CURL + "-X POST %s/a/x" % url)
        check("seen" in out_of(r), r)
        # Pure removal tightens: served without allow.
        write(toml + '[[sandbox.http]]\nhost = "127.0.0.1"\nallow = ["GET /a/**"]\n')
        r = term(d, ws, CURL + "%s/b/x" % url)
        check("no allow entry matches" in out_of(r) and "allows" not in json.dumps(r.get("policy_pending")), r)
        # The host's rules removed: any request would pass, so it waits.
        write(toml)
        r = term(d, ws, CURL + "%s/b/x" % url)
        check("no allow entry matches" in out_of(r) and "the rules for 127.0.0.1 are removed" in json.dumps(r), r)
    finally:
        d.stop()
        srv.shutdown()


def t_embedded_refused(tmp):
    """Without the daemon there is no proxy to apply the rules: the
    embedded CLI refuses to run a command under them (as under any
    network = [...]), never runs it with the rules unapplied."""
    srv = plain_server()
    port = srv.server_address[1]
    try:
        ws = make_ws(tmp, "ws-emb", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n%s' % (port, RULES))
        state = os.path.join(tmp, "emb-state")
        os.makedirs(state, mode=0o700)
        Recorder.seen.clear()
        p = subprocess.run([CLI, "--no-daemon", "run", "-w", ws, CURL + "-X POST http://127.0.0.1:%d/repos/me/x" % port],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, VECTORA_SANDBOX_STATE_DIR=state))
        check(p.returncode != 0 and "daemon's proxy" in p.stderr and not seen(port), (p, Recorder.seen))
    finally:
        srv.shutdown()


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("http-rules", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "curl", "openssl"):
        if not shutil.which(tool):
            T.skip("http-rules", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_https_rules, t_plain_http_rules, t_tunnel_refused, t_tunnel_plaintext_refused, t_config_errors,
                                 t_loosening_waits, t_embedded_refused], "vs-http-rules-"))


if __name__ == "__main__":
    main()
