#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-held secrets in headers the secret names (issue 31, item 3):
`vectora-sandbox secret set KEY --host H --header X-Api-Key` lets the
proxy put KEY's value in place of its placeholder in X-Api-Key (any case)
as well as in Authorization, on KEY's hosts only, over plain HTTP and
inside intercepted HTTPS. A placeholder in any other header is refused as
before (hosts hand headers such as Origin back), and so is the named
header sent to a host that is not the secret's.

What the proxy cannot promise: a host that echoes the named header back
(in its body or a header of its answer) hands the value to the jail. The
user named the host and the header; the value is given to that host, and
what it does with it is the user's trust in it (docs/threat-model.md).
t_reflection_is_the_hosts checks both sides of that line: the echo of a
named header reaches the jail (the documented limit, so the document
stays true), an echo through a header not named stays refused.

For real: a daemon whose CAs are a test CA, bwrap jails, curl in the
jail, local HTTP and HTTPS servers (tests/lib/vsecrets.py).

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import http.server
import json
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402

from vsecrets import CURL, http_server, https_server, make_pki, out_of, set_secret, term  # noqa: E402

T = Tap()
VALUE = "sk-REALkey_" + os.urandom(8).hex()
VALUE2 = "other_REALtoken_" + os.urandom(8).hex()


class Echo(http.server.BaseHTTPRequestHandler):
    """Keeps every request head; answers 200 with the request's headers in
    its body, and X-Api-Key back as X-Echo-Api-Key (as debugging
    endpoints and some gateways do)."""
    seen = []

    def do_GET(self):
        Echo.seen.append((self.server.server_address[1], self.path, str(self.headers)))
        body = ("seen\n" + str(self.headers)).encode()
        self.send_response(200)
        if self.headers.get("X-Api-Key"):
            self.send_header("X-Echo-Api-Key", self.headers["X-Api-Key"])
        if self.headers.get("Origin"):
            self.send_header("Access-Control-Allow-Origin", self.headers["Origin"])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *a):
        pass


class Setup:
    """KEY (headers X-Api-Key) goes to an HTTPS server and a plain-HTTP
    one; TOK2 (no headers) to the same HTTPS server and a third HTTPS
    server (so the proxy opens that one's TLS too); a fourth, plain HTTP,
    is allowed and no secret goes to it. The daemon's CAs are the test CA;
    the workspace allows all four and uses both secrets."""

    def __init__(self, tmp, name):
        pki = make_pki(tmp)
        self.https = https_server(pki("srv.crt"), pki("srv.key"), Echo)
        self.http = http_server(Echo)
        self.other = https_server(pki("srv.crt"), pki("srv.key"), Echo)
        self.plain_other = http_server(Echo)
        self.servers = (self.https, self.http, self.other, self.plain_other)
        self.sport, self.pport, self.oport, self.qport = (s.server_address[1] for s in self.servers)
        state = os.path.join(tmp, name + "-state")
        os.makedirs(state, mode=0o700, exist_ok=True)
        self.d = vtest.Daemon(tmp, name=name, extra=["--state-dir", state],
                              env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
        try:
            set_secret(self.d, "KEY", ["127.0.0.1:%d" % self.sport, "127.0.0.1:%d" % self.pport], VALUE,
                       headers=["X-Api-Key"])
            set_secret(self.d, "TOK2", ["127.0.0.1:%d" % self.sport, "127.0.0.1:%d" % self.oport], VALUE2)
            net = ", ".join('"127.0.0.1:%d"' % p for p in (self.sport, self.pport, self.oport, self.qport))
            self.ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = [%s]\nsecrets = ["KEY", "TOK2"]\n' % net)
        except BaseException:
            self.stop()
            raise

    def urls(self):
        return ("https://127.0.0.1:%d" % self.sport, "http://127.0.0.1:%d" % self.pport)

    def stop(self):
        self.d.stop()
        for s in self.servers:
            s.shutdown()


def heads(port):
    return [h for p, _, h in Echo.seen if p == port]


def t_named_header_injected(tmp):
    """curl -H "X-Api-Key: $KEY" (and x-api-key, any case) to KEY's host,
    HTTPS and plain HTTP: the host gets the value, no placeholder; the use
    is audited without the value. Authorization still works beside it."""
    s = Setup(tmp, "inj")
    try:
        for url, port in zip(s.urls(), (s.sport, s.pport)):
            for h in ("X-Api-Key", "x-api-key"):
                Echo.seen.clear()
                r = term(s.d, s.ws, CURL + '-o /dev/null -w "%%{http_code}" -H "%s: $KEY" %s/v1/models' % (h, url))
                got = heads(port)
                check(out_of(r).strip() == "200" and got and "%s: %s" % (h, VALUE) in got[-1], (url, h, r, got))
                check("vsph_" not in got[-1], got[-1])
            Echo.seen.clear()
            r = term(s.d, s.ws, CURL + '-o /dev/null -H "X-Api-Key: $KEY" -H "Authorization: Bearer $KEY" %s/both' % url)
            got = heads(port)
            check(got and "X-Api-Key: %s" % VALUE in got[-1] and "Authorization: Bearer %s" % VALUE in got[-1], (r, got))
    finally:
        s.stop()
    text = open(s.d.audit).read()
    uses = [r for r in map(json.loads, text.splitlines())
            if isinstance(r.get("target"), dict) and r["target"].get("secret") == "KEY"]
    check(uses and uses[0]["target"]["path"] == "/v1/models", uses[:2])
    check(VALUE not in text and VALUE not in s.d.log_text(), "the value in the audit log or the daemon's log")


def t_other_header_refused(tmp):
    """KEY's placeholder in a header KEY does not name (X-Other-Key,
    Origin), or TOK2's (which names none) in X-Api-Key: refused with a 403
    naming the secret, reported in network_denied; the host never sees the
    request."""
    s = Setup(tmp, "other")
    try:
        for url, port in zip(s.urls(), (s.sport, s.pport)):
            for h, name in (("X-Other-Key", "KEY"), ("Origin", "KEY"), ("X-Api-Key", "TOK2")):
                if name == "TOK2" and port != s.sport:
                    continue
                Echo.seen.clear()
                r = term(s.d, s.ws, CURL + '-i -H "%s: $%s" %s/x' % (h, name, url))
                out = out_of(r)
                check("403" in out and "secret %s" % name in out and "--header" in out, (url, h, out))
                check(any(name in json.dumps(x) for x in r.get("network_denied") or []), (url, h, r))
                check(not heads(port), (url, h, "the host got the request", Echo.seen))
                check(VALUE not in out and VALUE2 not in out, out)
    finally:
        s.stop()


def t_named_header_other_host(tmp):
    """X-Api-Key: $KEY to an allowed host that is not KEY's, over HTTPS the
    proxy opens (TOK2's host) and plain HTTP: refused (403 naming KEY),
    that host never sees the request; without the placeholder it is
    served. (A host no secret goes to over HTTPS is a blind tunnel: the
    placeholder reaches it, never the value: test_secrets_https.py.)"""
    s = Setup(tmp, "host")
    try:
        for url, port in (("https://127.0.0.1:%d" % s.oport, s.oport), ("http://127.0.0.1:%d" % s.qport, s.qport)):
            Echo.seen.clear()
            r = term(s.d, s.ws, CURL + '-i -H "X-Api-Key: $KEY" %s/steal' % url)
            check("403" in out_of(r) and "secret KEY" in out_of(r) and VALUE not in out_of(r), (url, r))
            check(not heads(port), (url, Echo.seen))
            check("secret KEY" in json.dumps(r.get("network_denied")), (url, r))
            r = term(s.d, s.ws, CURL + '-H "X-Api-Key: plain" %s/fine' % url)
            check("seen" in out_of(r) and heads(port), (url, r))
    finally:
        s.stop()


def t_reflection_is_the_hosts(tmp):
    """A host that echoes the named header back (X-Echo-Api-Key, and the
    body) hands the value to the jail: the proxy gives the value to the
    host the user named, in the header the user named, and does not read
    the answers (docs/threat-model.md). An echo through a header the
    secret does not name (Origin into Access-Control-Allow-Origin) stays
    refused before anything is sent."""
    s = Setup(tmp, "echo")
    try:
        url = s.urls()[0]
        r = term(s.d, s.ws, CURL + '-i -H "X-Api-Key: $KEY" %s/echo' % url)
        out = out_of(r)
        check("X-Echo-Api-Key: %s" % VALUE in out, ("the documented limit no longer holds: update the threat model", out))
        T.note("a host that echoes a named header hands the value back (documented): seen")
        Echo.seen.clear()
        r = term(s.d, s.ws, CURL + '-i -H "Origin: $KEY" %s/echo' % url)
        check("403" in out_of(r) and VALUE not in out_of(r) and not heads(s.sport), r)
    finally:
        s.stop()


def cli(args, env=None, stdin=None, sock=None):
    argv = [CLI] + (["--socket", sock] if sock else ["--no-daemon"]) + args
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120)


BAD_HEADERS = (("Host", "Host names the site"), ("content-length", "frames the request"),
               ("Transfer-Encoding", "frames the request"), ("Connection", "hop-by-hop"),
               ("Upgrade", "hop-by-hop"), ("Proxy-Authorization", "Proxy-*"), ("Cookie", "Cookie"),
               ("Origin", "Origin"), ("X-Forwarded-For", "routing"), ("Authorization", "always carries"),
               ("X Api", "token"), ("X-Api-Key:", "token"))


def t_store_cli_api(tmp):
    """--header through the CLI (daemon and embedded) and headers through
    the API: stored with the secret, listed (never the value), names
    checked (RFC 9110 token; Host, framing, hop-by-hop, Proxy-*, Cookie,
    Origin, forwarding headers and Authorization itself refused; twice in
    any case refused). A store written before headers existed still loads:
    its secrets list headers []."""
    env = dict(os.environ, VECTORA_SANDBOX_STATE_DIR=os.path.join(tmp, "cli-state"))
    os.makedirs(env["VECTORA_SANDBOX_STATE_DIR"], mode=0o700)
    state = os.path.join(tmp, "api-state")
    os.makedirs(state, mode=0o700)
    d = vtest.Daemon(tmp, name="api", extra=["--state-dir", state])
    try:
        for sock, e, f in ((d.sock, None, state), (None, env, env["VECTORA_SANDBOX_STATE_DIR"])):
            r = cli(["secret", "set", "KEY", "--host", "api.example.com", "--header", "X-Api-Key", "--header",
                     "anthropic-version"], env=e, stdin=VALUE + "\n", sock=sock)
            check(r.returncode == 0, (sock, r.stderr))
            r = cli(["secret", "list", "--json"], env=e, sock=sock)
            j = json.loads(r.stdout)
            check(j["secrets"] == [{"name": "KEY", "hosts": ["api.example.com"],
                                    "headers": ["X-Api-Key", "anthropic-version"]}], j)
            r = cli(["secret", "list"], env=e, sock=sock)
            check("KEY  api.example.com  headers: X-Api-Key, anthropic-version" in r.stdout and VALUE not in r.stdout,
                  r.stdout)
            for h, why in BAD_HEADERS + (("x-api-KEY", "listed twice"),):
                extra = ["--header", "X-Api-Key"] if why == "listed twice" else []
                r = cli(["secret", "set", "BAD", "--host", "a.example"] + extra + ["--header", h], env=e, stdin="v\n",
                        sock=sock)
                check(r.returncode != 0 and why in r.stderr, (sock, h, r.stderr))
            r = cli(["secret", "list", "--header", "X-Api-Key"], env=e, sock=sock)
            check(r.returncode != 0 and "belong to secret set" in r.stderr, r.stderr)
            text = open(os.path.join(f, "secrets-%d.json" % os.geteuid())).read()
            check('"headers"' in text and VALUE not in text, text)
        r = d.call({"tool": "secret_set", "name": "API", "hosts": ["a.example"], "headers": ["X-Api-Key"], "value": "v"})
        check(r.get("ok") is True, r)
        r = d.call({"tool": "secret_set", "name": "API2", "hosts": ["a.example"], "headers": ["Host"], "value": "v"})
        check(r.get("ok") is False and r["error"]["code"] == "bad_request" and "Host" in r["error"]["message"], r)
        r = d.call({"tool": "secret_set", "name": "API3", "hosts": ["a.example"], "headers": "X-Api-Key", "value": "v"})
        check(r.get("ok") is False and r["error"]["code"] == "bad_request", r)
        # Replacing a secret without --header drops its headers.
        check(cli(["secret", "set", "KEY", "--host", "api.example.com"], stdin="v2\n", sock=d.sock).returncode == 0, "set")
        lst = {x["name"]: x for x in d.call({"tool": "secret_list"})["secrets"]}
        check(lst["KEY"]["headers"] == [] and lst["API"]["headers"] == ["X-Api-Key"], lst)
    finally:
        d.stop()
    # A store as an older daemon wrote it: no "headers".
    old = os.path.join(tmp, "old-state")
    os.makedirs(old, mode=0o700)
    f = os.path.join(old, "secrets-%d.json" % os.geteuid())
    with open(f, "w") as fh:
        fh.write('{"version": 1, "secrets": [{"name": "OLD", "hosts": ["github.com"], "value": "dmFsdWU="}]}')
    os.chmod(f, stat.S_IRUSR | stat.S_IWUSR)
    r = cli(["secret", "list", "--json"], env=dict(os.environ, VECTORA_SANDBOX_STATE_DIR=old))
    check(r.returncode == 0 and json.loads(r.stdout)["secrets"] == [{"name": "OLD", "hosts": ["github.com"],
                                                                      "headers": []}], (r.stdout, r.stderr))


def t_remote_backends_refuse(tmp):
    """Item 6 of issue 31: a workspace with secrets on the ssh or Modal
    backend (whose jail does not go out through this host's proxy) is
    refused with a located config_invalid naming the backend, through the
    daemon and embedded alike; nothing runs. (Behaviour older than
    headers: test_secrets.py covered ssh through the daemon only.)"""
    state = os.path.join(tmp, "remote-state")
    os.makedirs(state, mode=0o700)
    d = vtest.Daemon(tmp, name="remote", extra=["--state-dir", state])
    env = dict(os.environ, VECTORA_SANDBOX_STATE_DIR=os.path.join(tmp, "remote-cli"))
    os.makedirs(env["VECTORA_SANDBOX_STATE_DIR"], mode=0o700)
    try:
        for backend, table in (("ssh", '[sandbox.ssh]\nhost = "h"\n'), ("modal", '[sandbox.modal]\nimage = "x"\n')):
            ws = make_ws(tmp, "ws-" + backend, '[sandbox]\nbackend = "%s"\nnetwork = ["api.example.org"]\n'
                         'secrets = ["KEY"]\n%s' % (backend, table))
            want = "vectora.toml:4:12: sandbox.secrets: the %s backend cannot keep secrets" % backend
            r = term(d, ws, "touch ran")
            check(r.get("ok") is False and r["error"]["code"] == "config_invalid" and want in r["error"]["message"],
                  (backend, r))
            r = cli(["exec", "-w", ws, "--", "touch", "ran"], env=env)
            check(r.returncode != 0 and want in r.stderr, (backend, r.returncode, r.stderr))
            check(not os.path.exists(os.path.join(ws, "ran")), (backend, "the command ran"))
    finally:
        d.stop()


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("secret-headers", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "curl", "openssl"):
        if not shutil.which(tool):
            T.skip("secret-headers", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_store_cli_api, t_named_header_injected, t_other_header_refused,
                                 t_named_header_other_host, t_reflection_is_the_hosts, t_remote_backends_refuse],
                             "vs-secret-headers-"))


if __name__ == "__main__":
    main()
