# SPDX-License-Identifier: MIT
"""What the secrets tests share (test_secrets.py, test_secrets_https.py):
an HTTP(S) handler that keeps the request heads it got, curl through the
jail's proxy, a terminal call and its output."""
import http.server

CURL = "curl -sS --noproxy '' -x http://127.0.0.1:3128 "


class Recorder(http.server.BaseHTTPRequestHandler):
    """Keeps every request head it got; answers 200 "seen"."""
    seen = []

    def do_GET(self):
        Recorder.seen.append((self.server.server_address[1], self.path, str(self.headers)))
        body = b"seen\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def term(d, ws, command, timeout=60):
    return d.call({"tool": "terminal", "workspace": ws, "command": command, "timeout": timeout})


def out_of(r):
    return r.get("stdout", "") + r.get("stderr", "")
