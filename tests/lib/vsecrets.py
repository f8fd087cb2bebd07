# SPDX-License-Identifier: MIT
"""What the secrets tests share (test_secrets.py, test_secrets_https.py,
test_http_rules.py, test_secrets_clients.py, test_secrets_memory.py,
bench/bench-https.py, test_attacks_http_rules.py,
test_attacks_secret_headers.py): the jail's raw HTTP client, an HTTP(S)
handler that keeps the request heads it got, one that serves the same bytes to every GET, curl through the jail's
proxy, a terminal call and its output, a test PKI and HTTPS servers, a
secret set through the daemon, a test's start."""
import http.server
import os
import ssl
import shutil
import subprocess
import sys
import threading

from vtest import CLI, DAEMON, check

CURL = "curl -sS --noproxy '' -x http://127.0.0.1:3128 "

# Runs in the jail: sends argv[3] (Python escapes) through the proxy:
# plain, inside TLS after a CONNECT to argv[2], or inside a CONNECT
# tunnel as it is ("tunnel"). "<<PAUSE>>" in the data: the bytes before
# it go first, the rest 300 ms later. Prints the answer.
RAW = r'''
import os, socket, ssl, sys, time
mode, authority = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
if mode in ("tls", "tunnel"):
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority.encode(), authority.encode()))
    r = b""
    while b"\r\n\r\n" not in r:
        k = s.recv(4096)
        if not k:
            break
        r += k
    print("CONNECT:", r.split(b"\r\n")[0].decode())
if mode == "tls":
    ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
    s = ctx.wrap_socket(s, server_hostname=authority.rsplit(":", 1)[0])
parts = data.split(b"<<PAUSE>>")
for i, p in enumerate(parts):
    if i:
        time.sleep(0.3)
    s.sendall(p)
out = b""
try:
    while True:
        k = s.recv(65536)
        if not k:
            break
        out += k
except Exception as e:
    out += b"\n[client: " + repr(e).encode() + b"]"
print(out.decode("latin-1"))
'''


class Recorder(http.server.BaseHTTPRequestHandler):
    """Keeps every request head it got; answers 200 "seen"."""
    seen = []

    def do_GET(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        Recorder.seen.append((self.server.server_address[1], self.path, str(self.headers)))
        body = b"seen\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_DELETE = do_GET

    def log_message(self, *a):
        pass


class Blob(http.server.BaseHTTPRequestHandler):
    """The same bytes (Blob.body) for any GET."""
    body = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(Blob.body)))
        self.end_headers()
        self.wfile.write(Blob.body)

    def log_message(self, *a):
        pass


def term(d, ws, command, timeout=60):
    return d.call({"tool": "terminal", "workspace": ws, "command": command, "timeout": timeout})


def out_of(r):
    return r.get("stdout", "") + r.get("stderr", "")


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)


def make_pki(tmp):
    """A test CA, a server certificate from it for IP 127.0.0.1, and a
    self-signed one that no CA vouches for."""
    d = os.path.join(tmp, "pki")
    os.makedirs(d, exist_ok=True)
    p = lambda n: os.path.join(d, n)  # noqa: E731
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=vs-test-upstream-ca", "-keyout", p("ca.key"), "-out", p("ca.crt"),
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", p("srv.key"), "-out", p("srv.csr"))
    with open(p("ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", p("srv.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"), "-CAcreateserial",
            "-days", "2", "-extfile", p("ext"), "-out", p("srv.crt"))
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=vs-test-self-signed", "-keyout", p("bad.key"), "-out", p("bad.crt"),
            "-addext", "subjectAltName=IP:127.0.0.1")
    return p


def http_server(handler=Recorder):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def https_server(cert, key, handler=Recorder):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def set_secret(d, name, hosts, value, headers=()):
    r = subprocess.run([CLI, "--socket", d.sock, "secret", "set", name] + sum((["--host", h] for h in hosts), []) +
                       sum((["--header", h] for h in headers), []),
                       input=value + "\n", capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "secret set: %s %s" % (r.stdout, r.stderr))


def run_main(tap, name, tools, cases):
    """A secrets test's main: one skip (and the exit) without the built
    programs or a tool, else its cases (vtest.run_cases)."""
    import vtest
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip(name, "%s or %s not built" % (DAEMON, CLI))
        sys.exit(tap.finish())
    for tool in ("bwrap",) + tuple(tools):
        if not shutil.which(tool):
            tap.skip(name, "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(tap.finish())
    sys.exit(vtest.run_cases(tap, cases, "vs-%s-" % name))
