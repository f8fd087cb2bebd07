#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-held secrets over HTTPS for the clients an agent runs (issue 31,
"pip and Node fetch in the jail trust the bundle"), for real: a daemon,
bwrap jails, HTTPS servers (Python's ssl) on 127.0.0.1 with certificates
from a test CA the daemon's proxy trusts (its own SSL_CERT_FILE), and the
host's pip and node run in the jail.

  - pip: `pip download` from a simple index on a secret's host, with the
    placeholder as the index URL's password: the index gets the value in
    Basic credentials, the wheel arrives whole; pip verified the proxy's
    leaf against the jail's bundle (REQUESTS_CA_BUNDLE, and Debian's pip
    reads the bundle bound at the system path when the variable is unset);
    pointed at the bundle without the workspace's CA it fails on the
    certificate.
  - Node: the global fetch (Node 20's ignores the proxy variables; undici's
    EnvHttpProxyAgent from npm, as a user would, or the node's own
    NODE_USE_ENV_PROXY where it has it) reaches the secret's host with the
    value, trusting the workspace's CA through NODE_EXTRA_CA_CERTS; without
    that variable (Node does not read the system file) and to a host whose
    certificate is not from the bundle it fails on the certificate.
  - The docker backend (issue 31, item 6; the harness's private dockerd,
    root only): curl in the container, whose image has no CA file, sends
    the placeholder over HTTPS and the host gets the value, curl trusting
    the bundle mounted at /run/vectora/ca-bundle.pem through SSL_CERT_FILE;
    without the variables it finds no CA file.

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import base64
import hashlib
import http.server
import io
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import ROOT, Tap, check, make_ws  # noqa: E402

from vsecrets import CURL, Recorder, https_server, make_pki, out_of, run_main, set_secret, term  # noqa: E402

T = Tap()
VALUE = "pypi-REALtoken_" + os.urandom(8).hex()
# The jail's clients talk to 127.0.0.1, which the jail's NO_PROXY names
# for its own services: cleared, so that they go through the proxy.
NOPROXY = "NO_PROXY= no_proxy= "


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def make_wheel():
    """A pure-Python wheel (vspkg 1.0) written here, with its RECORD."""
    files = {"vspkg/__init__.py": b"MARK = 'vspkg from the test index'\n",
             "vspkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: vspkg\nVersion: 1.0\n",
             "vspkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: vectora-test\nRoot-Is-Purelib: true\n"
                                          b"Tag: py3-none-any\n"}
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (name, digest, len(data))
    files["vspkg-1.0.dist-info/RECORD"] = (record + "vspkg-1.0.dist-info/RECORD,,\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


class Index(http.server.BaseHTTPRequestHandler):
    """A PEP 503 simple index of one wheel that wants Basic
    __token__:VALUE (else 401); every Authorization it got is kept."""
    wheel = b""
    auth = []

    def do_GET(self):
        got = self.headers.get("Authorization")
        Index.auth.append(got)
        name = "vspkg-1.0-py3-none-any.whl"
        if got != basic("__token__", VALUE):
            code, ctype, body = 401, "text/plain", b"token wanted\n"
        elif self.path.rstrip("/") == "/simple/vspkg":
            code, ctype = 200, "text/html"
            body = ('<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>\n'
                    % (name, hashlib.sha256(Index.wheel).hexdigest(), name)).encode()
        elif self.path == "/files/" + name:
            code, ctype, body = 200, "application/octet-stream", Index.wheel
        else:
            code, ctype, body = 404, "text/plain", b"no such page\n"
        self.send_response(code)
        if code == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="index"')
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class Setup:
    """A daemon whose CAs are the test CA; servers on 127.0.0.1: the
    secret's host (handler), and an allowed host no secret goes to (a
    blind tunnel: the jail sees that host's own certificate, a self-signed
    one no bundle holds); a workspace using TOK. (The jail's bundle is the
    daemon's CAs, here the test CA, and the workspace's CA.)"""

    def __init__(self, tmp, name, handler, extra="", backend=None):
        self.pki = make_pki(tmp)
        self.srv = https_server(self.pki("srv.crt"), self.pki("srv.key"), handler)
        self.other = https_server(self.pki("bad.crt"), self.pki("bad.key"))
        self.port, self.oport = self.srv.server_address[1], self.other.server_address[1]
        self.state = os.path.join(tmp, name + "-state")
        os.makedirs(self.state, mode=0o700, exist_ok=True)
        self.d = vtest.Daemon(tmp, name=name, extra=["--state-dir", self.state],
                              env=dict(os.environ, SSL_CERT_FILE=self.pki("ca.crt")))
        try:
            set_secret(self.d, "TOK", ["127.0.0.1:%d" % self.port], VALUE)
            self.ws = make_ws(tmp, "ws-" + name, '[sandbox]\n%snetwork = ["127.0.0.1:%d", "127.0.0.1:%d"]\n'
                              'secrets = ["TOK"]\n%s' % ('backend = "%s"\n' % backend if backend else "",
                                                         self.port, self.oport, extra))
        except BaseException:
            self.stop()
            raise

    def stop(self):
        self.d.stop()
        self.srv.shutdown()
        self.other.shutdown()


# The bundle without its last certificate (the workspace's CA, which the
# daemon appends to the host's list): what the jail would trust without it.
WITHOUT_CA = ("awk '/BEGIN CERTIFICATE/{n++} {c[n]=c[n] $0 \"\\n\"} END {for (i = 1; i < n; i++) printf \"%s\", c[i]}' "
              "/run/vectora/ca-bundle.pem > /tmp/no-ws-ca.pem; ")


def t_pip(tmp):
    """pip download from a simple index on the secret's host, the
    placeholder as the index URL's password: the value arrives in Basic
    credentials, the wheel whole. With REQUESTS_CA_BUNDLE and
    CURL_CA_BUNDLE unset pip's default file is the bind at the system
    path; pointed at the bundle without the workspace's CA it refuses the
    certificate (and the index gets nothing)."""
    r = subprocess.run(["python3", "-m", "pip", "--version"], capture_output=True, text=True,
                       env=dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin"))
    if r.returncode != 0:
        T.skip("pip in the jail", "the host's python3 has no pip (scripts/install-deps installs python3-pip)")
        return
    Index.wheel = make_wheel()
    Index.auth.clear()
    s = Setup(tmp, "pip", Index)
    try:
        pip = (NOPROXY + "PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip download -q --no-cache-dir --no-deps "
               "--index-url \"https://__token__:$TOK@127.0.0.1:%d/simple/\" " % s.port)
        r = term(s.d, s.ws, pip + "-d /tmp/dl vspkg && sha256sum /tmp/dl/*.whl", timeout=180)
        check(r.get("exit_code") == 0 and hashlib.sha256(Index.wheel).hexdigest() in out_of(r), r)
        check(basic("__token__", VALUE) in Index.auth and VALUE not in out_of(r), (Index.auth, r))
        check(not [a for a in Index.auth if a and "vsph_" in base64.b64decode(a.split()[1]).decode()], Index.auth)
        # Without the variables: pip's own default is the system path,
        # where the bundle is bound.
        r = term(s.d, s.ws, "env -u REQUESTS_CA_BUNDLE -u CURL_CA_BUNDLE sh -c '"
                            "python3 -c \"from pip._vendor import certifi; print(certifi.where())\"; "
                            "cmp /etc/ssl/certs/ca-certificates.crt /run/vectora/ca-bundle.pem && echo same; " +
                            pip + "-d /tmp/dl2 vspkg && ls /tmp/dl2'", timeout=180)
        check(out_of(r).split()[:2] == ["/etc/ssl/certs/ca-certificates.crt", "same"] and
              "vspkg-1.0-py3-none-any.whl" in out_of(r), r)
        # The bundle without the workspace's CA: a certificate error.
        n = len(Index.auth)
        r = term(s.d, s.ws, WITHOUT_CA + "REQUESTS_CA_BUNDLE=/tmp/no-ws-ca.pem " + pip +
                 "-v --retries 0 -d /tmp/dl3 vspkg; echo rc=$?", timeout=180)
        check("rc=0" not in out_of(r) and "CERTIFICATE_VERIFY_FAILED" in out_of(r) and len(Index.auth) == n, r)
    finally:
        s.stop()


NODE_FETCH = r"""
const [url, auth, prefix] = process.argv.slice(2);
async function main() {
  if (!process.features.proxy_env) {
    // Node 20's fetch ignores the proxy variables: undici from npm.
    const { EnvHttpProxyAgent, setGlobalDispatcher } = require(require.resolve("undici", { paths: [prefix] }));
    setGlobalDispatcher(new EnvHttpProxyAgent());
  }
  try {
    const r = await fetch(url, { headers: auth ? { Authorization: "Bearer " + process.env.TOK } : {} });
    console.log("status", r.status, (await r.text()).trim());
  } catch (e) {
    console.log("failed", e.cause ? e.cause.code || e.cause.message : e.message);
  }
}
main();
"""


# OpenSSL's verdicts as Node names them: a leaf the workspace's CA signed
# with that CA missing, a chain to a CA the bundle does not hold, a
# self-signed certificate.
NODE_CERT_ERRORS = [["failed", c] for c in ("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
                                                   "DEPTH_ZERO_SELF_SIGNED_CERT")]


def t_node_fetch(tmp):
    """Node's fetch in the jail, through the proxy: the secret's host gets
    the value, Node trusting the workspace's CA through
    NODE_EXTRA_CA_CERTS; without it, and to a host whose certificate is not
    from the bundle, a certificate error."""
    if not shutil.which("node"):
        T.skip("Node fetch in the jail", "node is not installed (scripts/install-deps)")
        return
    prefix, why = vtest.npm_package(tmp, "undici", "undici@6")
    if not prefix:
        T.skip("Node fetch in the jail", why)
        return
    Recorder.seen.clear()
    # The default limits: Node 20's fetch (undici's HTTP parser in
    # WebAssembly) reserves about 10 GiB of address space for each Wasm
    # memory, and failed before any connection ("Cannot allocate Wasm
    # memory") while limits.memory was RLIMIT_AS; it is RLIMIT_DATA now.
    s = Setup(tmp, "node", Recorder)
    try:
        # The jail reads the workspace: undici goes there, as an agent's
        # npm install would put it.
        shutil.copytree(os.path.join(prefix, "node_modules"), os.path.join(s.ws, "node_modules"))
        with open(os.path.join(s.ws, "fetch.js"), "w") as f:
            f.write(NODE_FETCH)
        vtest.chown_tree(s.ws)
        node = NOPROXY + "node fetch.js "
        r = term(s.d, s.ws, node + "https://127.0.0.1:%d/node auth ." % s.port)
        heads = [h for p, _, h in Recorder.seen if p == s.port]
        check(out_of(r).split()[:3] == ["status", "200", "seen"], r)
        check(heads and "Authorization: Bearer %s" % VALUE in heads[-1] and VALUE not in out_of(r), (heads, r))
        n = len(Recorder.seen)
        r = term(s.d, s.ws, "env -u NODE_EXTRA_CA_CERTS " + node + "https://127.0.0.1:%d/no-ca auth ." % s.port)
        check(out_of(r).split()[:2] in NODE_CERT_ERRORS, r)
        r = term(s.d, s.ws, node + "https://127.0.0.1:%d/blind '' ." % s.oport)
        check(out_of(r).split()[:2] in NODE_CERT_ERRORS, r)
        check(len(Recorder.seen) == n, Recorder.seen[n:])
    finally:
        s.stop()


def curl_image(engine, tmp):
    """The harness's busybox image with the host's curl and the libraries
    it loads (no registry): an image whose system CA file is absent, so
    that curl trusts what the jail's bundle holds or nothing."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../helpers/backends"))
    import servers
    tar = servers.busybox_rootfs(tmp)
    curl = shutil.which("curl", path="/usr/bin:/bin")
    libs = [curl]
    for line in subprocess.run(["ldd", curl], capture_output=True, text=True, check=True).stdout.splitlines():
        f = line.split()
        path = f[2] if len(f) > 2 and f[1] == "=>" else f[0]
        if path.startswith("/"):
            libs.append(path)
    with tarfile.open(tar, "a") as t:
        done = set()
        for path in libs:
            name = "bin/curl" if path == curl else path.lstrip("/")
            parent = os.path.dirname(name)
            while parent and parent not in done and parent not in ("bin", "usr", "usr/bin"):
                done.add(parent)
                ti = tarfile.TarInfo(parent)
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                t.addfile(ti)
                parent = os.path.dirname(parent)
            t.add(os.path.realpath(path), name)
    engine.run(["import", tar, "vectora-test:curl"])
    return "vectora-test:curl"


def t_docker_inject(tmp):
    """backend = "docker" (the harness's private dockerd, an image with
    curl and no CA file of its own): curl in the container sends the
    placeholder over HTTPS to the secret's host through the proxy; the
    host gets the value, curl trusting the workspace's CA through the
    bundle mounted at /run/vectora/ca-bundle.pem and named by
    SSL_CERT_FILE; with the variables unset curl finds no CA and fails."""
    if not ROOT:
        raise vtest.NotApplicable("the harness's dockerd needs root (the root run has this case)")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../helpers/backends"))
    import servers
    try:
        engine = servers.DockerEngine(tmp)
    except servers.Unavailable as e:
        raise vtest.Skip("Docker engine unavailable: %s" % e)
    try:
        image = curl_image(engine, tmp)
        Recorder.seen.clear()
        s = Setup(tmp, "docker", Recorder, '[sandbox.docker]\nimage = "%s"\nhost = "%s"\n' % (image, engine.host),
                  backend="docker")
        try:
            curl = CURL + '-H "Authorization: Bearer $TOK" https://127.0.0.1:%d/docker' % s.port
            r = term(s.d, s.ws, 'echo "$SSL_CERT_FILE"; ls /etc/ssl 2>&1; ' + curl, timeout=120)
            check(r.get("exit_code") == 0 and (r.get("sandbox") or {}).get("backend") == "docker", r)
            check(out_of(r).split()[0] == "/run/vectora/ca-bundle.pem" and "seen" in out_of(r), r)
            T.note("docker: " + out_of(r).strip().replace("\n", " / "))
            heads = [h for p, _, h in Recorder.seen if p == s.port]
            check(heads and "Authorization: Bearer %s" % VALUE in heads[-1] and VALUE not in out_of(r), (heads, r))
            n = len(Recorder.seen)
            r = term(s.d, s.ws, "env -u SSL_CERT_FILE -u CURL_CA_BUNDLE " + curl + "; echo rc=$?", timeout=120)
            check("rc=77" in out_of(r) or "rc=60" in out_of(r), r)
            check(len(Recorder.seen) == n, Recorder.seen[n:])
            T.note("docker, without the bundle's variables: " + out_of(r).strip().replace("\n", " / "))
        finally:
            s.stop()
    finally:
        engine.stop()


def main():
    run_main(T, 'secrets-clients', ("openssl", "python3"), [t_pip, t_node_fetch, t_docker_inject])


if __name__ == "__main__":
    main()
