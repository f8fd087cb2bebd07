#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-held secrets over HTTPS (issue 31, item 3): for a secret's hosts
the proxy terminates the jail's TLS with a leaf from the workspace's CA
(which the jail trusts through the bundle bound at the system path and
named by SSL_CERT_FILE and the like), checks the host's certificate
against the daemon's CAs and the host's name, and puts the value in
place of the placeholder. For real: a daemon, bwrap jails, curl in the
jail, HTTPS servers (Python's ssl) on 127.0.0.1 with certificates from a
test CA made by openssl here; the daemon (and so its proxy) gets that CA
as its system CAs through its own SSL_CERT_FILE, which no jail sets.

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import base64
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402

from vsecrets import CURL, Blob, Recorder, https_server, make_pki, out_of, set_secret, term  # noqa: E402

T = Tap()
VALUE = "ghp_REALtoken_" + os.urandom(8).hex()
VALUE2 = "other_REALtoken_" + os.urandom(8).hex()


class Setup:
    """Three HTTPS servers: TOK's host (test CA), TOK's host whose
    certificate nothing vouches for, and an allowed host no secret goes to
    (test CA); a second secret TOK2 for another host; a daemon whose CAs
    are the test CA; a workspace allowing them all and using both secrets."""

    def __init__(self, tmp, name):
        self.pki = make_pki(tmp)
        self.good = https_server(self.pki("srv.crt"), self.pki("srv.key"))
        self.bad = https_server(self.pki("bad.crt"), self.pki("bad.key"))
        self.other = https_server(self.pki("srv.crt"), self.pki("srv.key"))
        self.port, self.bport, self.oport = (s.server_address[1] for s in (self.good, self.bad, self.other))
        state = os.path.join(tmp, name + "-state")
        os.makedirs(state, mode=0o700, exist_ok=True)
        self.state = state
        # The daemon's own CAs: the test CA (the jail never sets this).
        env = dict(os.environ, SSL_CERT_FILE=self.pki("ca.crt"))
        self.d = vtest.Daemon(tmp, name=name, extra=["--state-dir", state], env=env)
        try:
            set_secret(self.d, "TOK", ["127.0.0.1:%d" % self.port, "127.0.0.1:%d" % self.bport], VALUE)
            set_secret(self.d, "TOK2", ["127.0.0.1:%d" % self.oport], VALUE2)
            net = ", ".join('"127.0.0.1:%d"' % p for p in (self.port, self.bport, self.oport))
            self.ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = [%s]\nsecrets = ["TOK"]\n' % net)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        self.d.stop()
        for s in (self.good, self.bad, self.other):
            s.shutdown()

    def heads(self, port):
        return [h for p, _, h in Recorder.seen if p == port]


def t_https_inject(tmp):
    """curl in the jail, trusting only what the jail's bundle holds, sends
    Authorization: Bearer $TOK over HTTPS: the host gets the value, the
    jail never sees it (not in its output, environment or files), the CA's
    key is nowhere in the jail, and the use is audited without the value."""
    s = Setup(tmp, "inj")
    try:
        Recorder.seen.clear()
        r = term(s.d, s.ws, CURL + '-H "Authorization: Bearer $TOK" https://127.0.0.1:%d/repo?x=1' % s.port)
        check(r.get("ok") is True and "seen" in out_of(r), r)
        heads = s.heads(s.port)
        check(heads and "Authorization: Bearer %s" % VALUE in heads[-1], heads)
        check("vsph_" not in heads[-1], heads[-1])
        check(VALUE not in out_of(r), "the value came back to the jail")
        # Connections at once, each on a thread of the proxy's.
        Recorder.seen.clear()
        r = term(s.d, s.ws, "for i in $(seq 24); do " + CURL + '-H "Authorization: Bearer $TOK" '
                            "https://127.0.0.1:%d/many$i & done; wait" % s.port, timeout=120)
        heads = s.heads(s.port)
        check(out_of(r).count("seen") == 24 and len(heads) == 24 and
              all("Bearer %s" % VALUE in h for h in heads), (r, len(heads)))
        # Python's urllib (OpenSSL's default paths: SSL_CERT_FILE) trusts the bundle too (NO_PROXY
        # names 127.0.0.1 for the jail's own services).
        Recorder.seen.clear()
        r = term(s.d, s.ws, "NO_PROXY= no_proxy= python3 -c 'import os, urllib.request as u; print(u.urlopen(u.Request("
                            "\"https://127.0.0.1:%d/py\", headers={\"Authorization\": \"Bearer \" + "
                            "os.environ[\"TOK\"]})).read().decode())'" % s.port)
        check("seen" in out_of(r) and s.heads(s.port) and "Bearer %s" % VALUE in s.heads(s.port)[-1], r)
        r = term(s.d, s.ws, 'echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE $GIT_SSL_CAINFO"; '
                            'grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt; '
                            'cmp /etc/ssl/certs/ca-certificates.crt /run/vectora/ca-bundle.pem && echo same')
        check(out_of(r).split()[:4] == ["/run/vectora/ca-bundle.pem"] * 4 and "same" in out_of(r), r)
        # The bundle is read-only: the jail adds no CA of its own for others to trust.
        r = term(s.d, s.ws, "for f in /etc/ssl/certs/ca-certificates.crt /run/vectora/ca-bundle.pem; do "
                            "echo x >> $f 2>/dev/null && echo wrote $f; done; echo checked")
        check(r.get("stdout", "").split() == ["checked"], r)
        # HTTP/2 asked for: the proxy offers http/1.1 alone, and the value still goes in.
        Recorder.seen.clear()
        r = term(s.d, s.ws, CURL + "--http2 -o /dev/null -w '%%{http_version}' -H \"Authorization: Bearer $TOK\" "
                                   "https://127.0.0.1:%d/h2" % s.port)
        # (the test server answers in HTTP/1.0: curl says "1")
        check(out_of(r).strip() in ("1", "1.1") and "Bearer %s" % VALUE in s.heads(s.port)[-1], r)
        r = term(s.d, s.ws, "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '%s' ; "
                            "grep -rlsE -- '%s|PRIVATE KEY' /proc/self/environ /etc /tmp /var/tmp /run /home \"$HOME\" "
                            ". 2>/dev/null | head -5; echo done" % (VALUE, VALUE), timeout=120)
        check(r.get("stdout", "").split() == ["0", "done"], r)
    finally:
        s.stop()
    key = [f for f in os.listdir(os.path.join(s.state, "ca")) if f.endswith(".key")]
    check(len(key) == 1 and os.stat(os.path.join(s.state, "ca", key[0])).st_mode & 0o777 == 0o600, key)
    text = open(s.d.audit).read()
    uses = [r for r in map(json.loads, text.splitlines())
            if isinstance(r.get("target"), dict) and r["target"].get("secret") == "TOK"]
    check(uses and uses[0]["target"] == {"host": "127.0.0.1", "port": s.port, "method": "GET", "path": "/repo?x=1",
                                         "secret": "TOK"}, uses)
    # (The jail's grep for the value has it in its command line.)
    for what in (text, s.d.log_text()):
        leaks = [line for line in what.splitlines() if VALUE in line and "grep -rlsE" not in line]
        check(not leaks, leaks[:3])


def t_https_upstream_unverified(tmp):
    """TOK's other host presents a certificate no CA of the daemon's
    vouches for: refused with a 502 naming the reason, reported, and the
    host never gets a request head."""
    s = Setup(tmp, "bad")
    try:
        Recorder.seen.clear()
        r = term(s.d, s.ws, CURL + '-H "Authorization: Bearer $TOK" https://127.0.0.1:%d/x' % s.bport)
        out = out_of(r)
        check("does not verify" in out and "self-signed" in out, r)
        check(not s.heads(s.bport), Recorder.seen)
        check("does not verify" in json.dumps(r.get("network_denied")), r)
        check(VALUE not in out, out)
    finally:
        s.stop()


def t_https_other_secret_refused(tmp):
    """The placeholder of a secret for other hosts, sent inside TLS to
    TOK's host (as written, or in Basic credentials), is refused with a 403
    naming it; a Host header naming another host is refused too."""
    s = Setup(tmp, "ref")
    try:
        with open(os.path.join(s.ws, "vectora.toml"), "w") as f:
            f.write('[sandbox]\nnetwork = [%s]\nsecrets = ["TOK", "TOK2"]\n'
                    % ", ".join('"127.0.0.1:%d"' % p for p in (s.port, s.bport, s.oport)))
        s.d.call({"tool": "policy_allow", "workspace": s.ws})
        Recorder.seen.clear()
        r = term(s.d, s.ws, CURL + '-H "Authorization: Bearer $TOK2" https://127.0.0.1:%d/steal' % s.port)
        check("secret TOK2" in out_of(r) and not s.heads(s.port), (r, Recorder.seen))
        r = term(s.d, s.ws, CURL + '-u "x:$TOK2" https://127.0.0.1:%d/steal' % s.port)
        check("secret TOK2" in out_of(r) and not s.heads(s.port), (r, Recorder.seen))
        r = term(s.d, s.ws, CURL + '-H "Host: evil.example" -H "Authorization: Bearer $TOK" '
                                   'https://127.0.0.1:%d/front' % s.port)
        check("Host header" in out_of(r) and not s.heads(s.port), (r, Recorder.seen))
        check(VALUE not in out_of(r) and VALUE2 not in out_of(r), r)
    finally:
        s.stop()


def t_https_other_host_blind(tmp):
    """A host no secret of the workspace goes to stays a blind tunnel: the
    jail sees that host's own certificate (the test CA's, not the
    workspace's), and $TOK reaches it as the placeholder, never the value."""
    s = Setup(tmp, "blind")
    try:
        Recorder.seen.clear()
        r = term(s.d, s.ws, CURL + '-v -H "Authorization: Bearer $TOK" https://127.0.0.1:%d/plain' % s.oport)
        out = out_of(r)
        check("seen" in out and "vs-test-upstream-ca" in out and "vectora-sandbox workspace CA" not in out, out)
        heads = s.heads(s.oport)
        check(heads and re.search(r"Bearer vsph_[0-9a-f]{32}", heads[-1]) and VALUE not in heads[-1], heads)
        # TOK's host, for contrast: the workspace's CA speaks for it.
        r = term(s.d, s.ws, CURL + "-v https://127.0.0.1:%d/mitm" % s.port)
        check("vectora-sandbox workspace CA" in out_of(r) and "seen" in out_of(r), r)
    finally:
        s.stop()


class GitBackend(http.server.BaseHTTPRequestHandler):
    """git's smart HTTP (git http-backend as a CGI) for the repositories
    under root, which wants Basic x-access-token:VALUE (else 401 asking for
    it); every Authorization it got is kept."""
    root = None
    auth = []

    def handle_one(self):
        got = self.headers.get("Authorization")
        GitBackend.auth.append(got)
        if got != basic("x-access-token", VALUE):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        env = dict(os.environ, GIT_PROJECT_ROOT=GitBackend.root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                   QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_USER="x-access-token",
                   REMOTE_ADDR="127.0.0.1", CONTENT_TYPE=self.headers.get("Content-Type") or "",
                   CONTENT_LENGTH=str(len(body)))
        out = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, timeout=60).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    do_GET = do_POST = handle_one

    def log_message(self, *a):
        pass


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def t_git_push_https(tmp):
    """git in the jail clones from and pushes to a smart-HTTP server over
    HTTPS that wants the token: the environment's credential helper gives
    the placeholder, the proxy puts the value in the Basic credentials
    inside TLS; with the helper taken away the push is refused (401)."""
    if not shutil.which("git"):
        T.skip("git push over HTTPS", "git is not installed")
        return
    pki = make_pki(tmp)
    root = os.path.join(tmp, "git-root")
    os.makedirs(root)
    subprocess.run(["git", "init", "-q", "--bare", os.path.join(root, "repo.git")], check=True)
    subprocess.run(["git", "-C", os.path.join(root, "repo.git"), "config", "http.receivepack", "true"], check=True)
    GitBackend.root = root
    GitBackend.auth.clear()
    srv = https_server(pki("srv.crt"), pki("srv.key"), GitBackend)
    port = srv.server_address[1]
    state = os.path.join(tmp, "git-state")
    os.makedirs(state, mode=0o700)
    d = vtest.Daemon(tmp, name="git", extra=["--state-dir", state], env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port], VALUE)
        ws = make_ws(tmp, "ws-git", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\nsecrets = ["TOK"]\n' % port)
        url = "https://127.0.0.1:%d/repo.git" % port
        git = "NO_PROXY= no_proxy= GIT_TERMINAL_PROMPT=0 git -c user.name=a -c user.email=a@b -c init.defaultBranch=main "
        r = term(d, ws, git + "clone -q %s /tmp/c && cd /tmp/c && echo one > f && git add f && " % url +
                 git + "commit -qm one && " + git + "push -q origin HEAD:main && echo pushed", timeout=120)
        check("pushed" in out_of(r), r)
        log = subprocess.run(["git", "-C", os.path.join(root, "repo.git"), "log", "--format=%s", "main"],
                             capture_output=True, text=True)
        check(log.stdout.split() == ["one"], log)
        check(basic("x-access-token", VALUE) in GitBackend.auth and VALUE not in out_of(r), (GitBackend.auth, r))
        check(not [a for a in GitBackend.auth if a and "vsph_" in base64.b64decode(a.split()[1]).decode()],
              GitBackend.auth)
        r = term(d, ws, "cd /tmp/c && echo two > f && git -c user.name=a -c user.email=a@b commit -qam two && "
                        "env -u GIT_CONFIG_COUNT NO_PROXY= no_proxy= GIT_TERMINAL_PROMPT=0 git push -q origin "
                        "HEAD:main; echo rc=$?", timeout=120)
        check("rc=0" not in out_of(r), r)
        log = subprocess.run(["git", "-C", os.path.join(root, "repo.git"), "log", "--format=%s", "main"],
                             capture_output=True, text=True)
        check(log.stdout.split() == ["one"], log)
    finally:
        d.stop()
        srv.shutdown()


def t_bundle_from_system_cas(tmp):
    """A daemon without SSL_CERT_FILE: the jail's bundle is the system file
    OpenSSL names (on Debian a link, /usr/lib/ssl/cert.pem) and the
    workspace's CA, one certificate more than the host's own list."""
    system = "/etc/ssl/certs/ca-certificates.crt"
    if not os.path.exists(system):
        T.skip("bundle from the system CAs", system + " is missing (ca-certificates)")
        return
    state = os.path.join(tmp, "sys-state")
    os.makedirs(state, mode=0o700)
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    d = vtest.Daemon(tmp, name="sys", extra=["--state-dir", state], env=env)
    try:
        set_secret(d, "TOK", ["127.0.0.1:9"], VALUE)
        ws = make_ws(tmp, "ws-sys", '[sandbox]\nnetwork = ["127.0.0.1:9"]\nsecrets = ["TOK"]\n')
        r = term(d, ws, "grep -c 'BEGIN CERTIFICATE' /run/vectora/ca-bundle.pem")
        want = open(system).read().count("BEGIN CERTIFICATE") + 1
        check(r.get("ok") is True and out_of(r).split() == [str(want)], (want, r))
    finally:
        d.stop()


def t_large_body(tmp):
    """16 MiB over HTTPS from a secret's host (the proxy decrypts and
    encrypts again) and from another host (a plain tunnel) arrive whole.
    (The throughput of both, side by side: bench/bench-https.py, in make
    bench.)"""
    Blob.body = os.urandom(16 << 20)
    want = hashlib.sha256(Blob.body).hexdigest()
    pki = make_pki(tmp)
    servers = [https_server(pki("srv.crt"), pki("srv.key"), Blob) for _ in range(2)]
    secret, plain = (s.server_address[1] for s in servers)
    state = os.path.join(tmp, "big-state")
    os.makedirs(state, mode=0o700)
    d = vtest.Daemon(tmp, name="big", extra=["--state-dir", state], env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")))
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % secret], VALUE)
        ws = make_ws(tmp, "ws-big", '[sandbox]\nnetwork = ["127.0.0.1:%d", "127.0.0.1:%d"]\nsecrets = ["TOK"]\n'
                     % (secret, plain))
        for port in (secret, plain):
            r = term(d, ws, CURL + '-f -H "Authorization: Bearer $TOK" https://127.0.0.1:%d/big | sha256sum' % port,
                     timeout=120)
            check(r.get("exit_code") == 0 and r["stdout"].split()[0] == want, (port, r))
    finally:
        d.stop()
        for s in servers:
            s.shutdown()


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("secrets-https", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "curl", "openssl"):
        if not shutil.which(tool):
            T.skip("secrets-https", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_https_inject, t_https_upstream_unverified, t_https_other_secret_refused,
                                 t_https_other_host_blind, t_git_push_https,
                                 t_bundle_from_system_cas, t_large_body], "vs-secrets-https-"))


if __name__ == "__main__":
    main()
