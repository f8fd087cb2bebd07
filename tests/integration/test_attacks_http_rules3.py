#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A third round of attacks on the HTTP rules per host ([[sandbox.http]],
issue 31), as a hostile agent in the jail makes them with raw bytes
(tests/lib/vsecrets.py RAW):

  - plain HTTP through a CONNECT tunnel to another allowed name of the
    rules host's server, with a first line the tunnel's detector did not
    take for HTTP but a server does: a byte above 0x7f in the target
    (nginx, Python and most servers take raw UTF-8 there), a vertical tab
    or form feed between the words or before the method (Python's
    http.server splits the line on any whitespace); and the forms it
    already caught (lowercase, h2c prior knowledge, HTTP/0.9, a first
    segment of one byte).
  - a form body carrying _method whose Content-Type has a ',' after the
    media type: Rack (Rails) and PHP (Laravel, Symfony) cut the type at
    ',' as at ';', so they read the body as a form, where the proxy did
    not; Content-Type in capitals, with a charset; the override headers
    in other cases and with '_'; a request pipelined after a checked body.

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import gzip
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402,F401
from vtest import Tap, check  # noqa: E402

from vdaemon import proxy_of, wait_until  # noqa: E402
from vsecrets import Recorder, run_main, term  # noqa: E402
from vhttprules import RULES, raw, reached, refused, with_https, with_plain  # noqa: E402

T = Tap()

# First lines a server runs as DELETE /repos/other (its Host naming the
# rules host), each with whether the detector already caught it.
TUNNEL_LINES = [
    "DELETE /repos/other?x=\\xc3\\xa9 HTTP/1.1",
    "DELETE /repos/other?x=\\xff HTTP/1.1",
    "DELETE\\x0b/repos/other\\x0bHTTP/1.1",
    "DELETE\\x0c/repos/other HTTP/1.1",
    "\\x0cDELETE /repos/other HTTP/1.1",
    "DELETE /repos/other\\x1fHTTP/1.1",
    "delete /repos/other http/1.1",
    "D<<PAUSE>>ELETE /repos/other HTTP/1.1",
    "GET\\t/repos/other?x=\\xc3\\xa9",
]


def t_tunnel_odd_first_line(tmp):
    """Plain HTTP in a CONNECT tunnel to 127.0.0.2 (no rules), Host naming
    the rules host 127.0.0.1 that the same server serves, its first line
    holding a byte above 0x7f or a whitespace other than space and tab:
    closed and reported (the request reached the host before the fix).
    A ClientHello-like binary first byte still passes (the server gets it
    and drops it)."""
    def body(d, ws, port):
        for line in TUNNEL_LINES:
            Recorder.seen.clear()
            r, out = raw(d, ws, "tunnel", "127.0.0.2:%d" % port, "%s\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % (line, port))
            check("200" in out.split("\n")[0], (line, "the CONNECT", out))
            check(not reached(port), (line, "the host got", Recorder.seen, r))
            check("plain HTTP inside a CONNECT tunnel" in json.dumps(r.get("network_denied")), (line, r))
        Recorder.seen.clear()
        r, out = raw(d, ws, "tunnel", "127.0.0.2:%d" % port, "\\x00\\x01binary\\r\\n")
        check(not r.get("network_denied"), r)
    with_plain(tmp, "odd-line", body, addr="0.0.0.0", extra_net=("127.0.0.2",))


FORM = "Content-Type: %s\\r\\n"
TYPES = ["application/x-www-form-urlencoded,x", "application/x-www-form-urlencoded , x",
         "APPLICATION/X-WWW-FORM-URLENCODED", "application/x-www-form-urlencoded;charset=utf-8",
         "Application/X-Www-Form-Urlencoded ;charset=\\\"utf-8\\\""]
# Laravel takes a body for JSON when its whole Content-Type, parameters
# too, holds "/json" or "+json", and reads _method from it.
JSON_TYPES = ["text/plain; x=/json", "application/octet-stream;v=+json"]


def t_form_type_spellings(tmp):
    """An allowed POST whose form body carries _method=DELETE under a
    Content-Type Rack or PHP reads as a form: cut at ',' (refused after
    the fix: it reached the host before), in capitals, with a charset;
    a JSON body with _method under a type whose parameters hold "/json"
    (Laravel reads it as JSON; it reached the host before)."""
    def body(d, ws, port):
        target = "http://127.0.0.1:%d/repos/me/a/pulls" % port
        b = "_method=DELETE"
        for t in TYPES:
            Recorder.seen.clear()
            r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n%s"
                         "Content-Length: %d\\r\\n\\r\\n%s" % (target, port, FORM % t, len(b), b))
            check(not reached(port), (t, "the host got", Recorder.seen, r))
            refused(r, out, t)
            check("_method" in json.dumps(r.get("network_denied")), (t, r))
        b = '{"_method": "DELETE"}'
        for t in JSON_TYPES:
            Recorder.seen.clear()
            r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n%s"
                         "Content-Length: %d\\r\\n\\r\\n%s" % (target, port, FORM % t, len(b), b))
            check(not reached(port), (t, "the host got", Recorder.seen, r))
            refused(r, out, t)
    with_plain(tmp, "form-types", body)


def t_encoded_form(tmp):
    """An allowed POST whose form body carrying _method=DELETE is sent
    gzip'd (Content-Encoding: gzip): a server that inflates request bodies
    (Apache's DEFLATE input filter, ASP.NET Core's request decompression
    before its method override) reads the _method the proxy could not.
    Refused (it reached the host before); identity passes."""
    def body(d, ws, port):
        target = "http://127.0.0.1:%d/repos/me/a/pulls" % port
        gz = gzip.compress(b"_method=DELETE")
        for enc, b, n in (("gzip", "".join("\\x%02x" % c for c in gz), len(gz)),
                          ("identity", "title=x", 7)):
            Recorder.seen.clear()
            r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                         "Content-Type: application/x-www-form-urlencoded\\r\\nContent-Encoding: %s\\r\\n"
                         "Content-Length: %d\\r\\n\\r\\n%s" % (target, port, enc, n, b))
            if enc == "gzip":
                check(not reached(port), ("gzip form: the host got", Recorder.seen, r))
                refused(r, out, "gzip form")
            else:
                check(reached(port) == ["/repos/me/a/pulls"], ("identity form", Recorder.seen, r))
    with_plain(tmp, "encoded", body)


def t_underscore_content_type(tmp):
    """An allowed POST with Content-Type: application/octet-stream (a body
    the proxy does not read) and Content_Type naming a form, its body
    carrying _method: gunicorn and CGI servers read Content_Type as the
    type. Refused as two Content-Types (it reached the host before)."""
    def body(d, ws, port):
        target = "http://127.0.0.1:%d/repos/me/a/pulls" % port
        b = "_method=DELETE"
        Recorder.seen.clear()
        r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Content-Type: application/octet-stream\\r\\nContent_Type: application/x-www-form-urlencoded"
                     "\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (target, port, len(b), b))
        check(not reached(port), ("Content_Type: the host got", Recorder.seen, r))
        refused(r, out, "Content_Type")
    with_plain(tmp, "underscore", body)


def t_override_in_trailer(tmp):
    """X-HTTP-Method-Override in the trailer of an allowed chunked POST
    whose body the proxy does not read (application/octet-stream, as git
    pushes): a server that merges trailers into the headers (Apache with
    MergeTrailers on) would run it as a DELETE. The proxy splices such a
    body unread, so the trailer passes: OPEN, said in the output while the
    host gets it (and the threat model must say so)."""
    def body(d, ws, port):
        target = "http://127.0.0.1:%d/repos/me/a/pulls" % port
        Recorder.seen.clear()
        r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Content-Type: application/octet-stream\\r\\nTransfer-Encoding: chunked\\r\\n"
                     "Trailer: X-HTTP-Method-Override\\r\\n\\r\\n3\\r\\nabc\\r\\n0\\r\\n"
                     "X-HTTP-Method-Override: DELETE\\r\\n\\r\\n" % (target, port))
        if reached(port):
            # The known limit as docs/threat-model.md states it (open):
            # said in the output every run, and the test fails once the
            # proxy refuses it without the doc saying so.
            with open(os.path.join(vtest.SRC, "docs/threat-model.md")) as f:
                check("MergeTrailers" in f.read(), "the trailer reaches the host and docs/threat-model.md does not say so")
            T.note("OPEN (docs/threat-model.md): an override header in the trailer of a chunked body the proxy "
                   "does not read (octet-stream) reaches the rules host; a server merging trailers into headers "
                   "(Apache MergeTrailers on) runs another method than the rule checked")
            return
        refused(r, out, "trailer")
    with_plain(tmp, "trailer", body)


# Multipart bodies naming _method in the spellings lax parsers take.
MULTIPART = [
    ('"b"', '--b\\r\\nContent-Disposition: form-data; name="_method"\\r\\n\\r\\nDELETE\\r\\n--b--\\r\\n'),
    ('b', '--b\\nContent-Disposition: form-data; name=_method\\n\\nDELETE\\n--b--\\n'),
    ('b', "--b\\r\\ncontent-disposition: form-data; name*=UTF-8''%5Fmethod\\r\\n\\r\\nDELETE\\r\\n--b--\\r\\n"),
    ('b', '--b\\r\\nContent-Disposition: form-data;name = "_METHOD"; filename="x"\\r\\n\\r\\nDELETE\\r\\n--b--\\r\\n'),
]


def t_expect_and_multipart(tmp):
    """An allowed POST with Expect: 100-continue whose form body carrying
    _method comes 300 ms after the head, and multipart bodies naming
    _method with a quoted boundary, LF-only lines, RFC 2231 name*, no ';'
    space and capitals: refused, the host gets none."""
    def body(d, ws, port):
        target = "http://127.0.0.1:%d/repos/me/a/pulls" % port
        cases = [("Content-Type: application/x-www-form-urlencoded\\r\\nExpect: 100-continue\\r\\n",
                  "<<PAUSE>>_method=DELETE")]
        cases += [("Content-Type: multipart/form-data; boundary=%s\\r\\n" % bd, b) for bd, b in MULTIPART]
        for head, b in cases:
            n = len(b.replace("<<PAUSE>>", "").encode().decode("unicode_escape"))
            Recorder.seen.clear()
            r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n%s"
                         "Content-Length: %d\\r\\n\\r\\n%s" % (target, port, head, n, b))
            check(not reached(port), (head, b, "the host got", Recorder.seen, r))
            refused(r, out, b)
    with_plain(tmp, "expect-mp", body)


OVERRIDES = ["x-http-method-override", "X_HTTP_METHOD_OVERRIDE", "X-Http-Method", "x-method-override",
             "X-Original-URL"]


def t_override_headers_and_pipelining(tmp):
    """The override headers in other cases and with '_' (CGI's spelling):
    refused. A DELETE pipelined after an allowed POST's body in the same
    write: the first passes (with Connection: close), the second never
    reaches the host."""
    def body(d, ws, port):
        target = "http://127.0.0.1:%d/repos/me/a/pulls" % port
        for h in OVERRIDES:
            Recorder.seen.clear()
            r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                         "%s: DELETE\\r\\nContent-Length: 0\\r\\n\\r\\n" % (target, port, h))
            check(not reached(port), (h, "the host got", Recorder.seen, r))
            refused(r, out, h)
        Recorder.seen.clear()
        r, out = raw(d, ws, "plain", "127.0.0.1:%d" % port,
                     "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nContent-Type: text/plain\\r\\nContent-Length: 3\\r\\n"
                     "\\r\\nabcDELETE http://127.0.0.1:%d/repos/other HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Content-Length: 0\\r\\n\\r\\n" % (target, port, port, port))
        # The proxy sends the checked request with Connection: close and
        # reads nothing after its body: the DELETE is dropped unsent.
        check(reached(port) == ["/repos/me/a/pulls"], ("pipelined: the host got", Recorder.seen, r, out))
        check("Connection: close" in Recorder.seen[0][2], Recorder.seen)
    with_plain(tmp, "overrides", body)


# Runs in the jail: a TLS connection through the proxy to argv[1]
# offering ALPN h2 first; prints what was chosen, then sends the h2
# preface and prints the answer.
ALPN = r'''
import os, socket, ssl, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (sys.argv[1].encode(), sys.argv[1].encode()))
r = b""
while b"\r\n\r\n" not in r:
    r += s.recv(4096)
ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
ctx.set_alpn_protocols(["h2", "http/1.1"])
s = ctx.wrap_socket(s, server_hostname=sys.argv[1].rsplit(":", 1)[0])
print("ALPN:", s.selected_alpn_protocol())
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
out = b""
try:
    while True:
        k = s.recv(65536)
        if not k:
            break
        out += k
except Exception as e:
    out += repr(e).encode()
print(out.decode("latin-1"))
'''


def t_tls_pipelining_and_h2(tmp):
    """Inside the TLS the proxy opens for a rules host with a secret: a
    DELETE pipelined after an allowed POST's body never reaches the host;
    ALPN h2 is not chosen (the proxy speaks HTTP/1.1 only) and the h2
    preface is refused, not passed on."""
    def body(d, ws, port):
        Recorder.seen.clear()
        r, out = raw(d, ws, "tls", "127.0.0.1:%d" % port,
                     "POST /repos/me/a/pulls HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nContent-Type: text/plain\\r\\n"
                     "Content-Length: 3\\r\\n\\r\\nabcDELETE /repos/other HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Content-Length: 0\\r\\n\\r\\n" % (port, port))
        check(reached(port) == ["/repos/me/a/pulls"], ("pipelined in TLS: the host got", Recorder.seen, r, out))
        with open(os.path.join(ws, "alpn.py"), "w") as f:
            f.write(ALPN)
        vtest.chown_tree(ws)
        Recorder.seen.clear()
        r = term(d, ws, "python3 alpn.py 127.0.0.1:%d" % port)
        out = r.get("stdout", "") + r.get("stderr", "")
        print("# h2 attempt:", out.strip().splitlines()[:2])
        check("ALPN: h2" not in out and not reached(port), ("h2: the host got", Recorder.seen, r))
        check("400" in out or "403" in out, ("the h2 preface was not refused", r))
    with_https(tmp, "tls-pipe", body)


# Runs in the jail: refused DELETEs, one connection each, for argv[1]
# seconds; prints how many got which status line.
STORM = r'''
import socket, sys, time
port, end, counts = int(sys.argv[2]), time.time() + float(sys.argv[1]), {}
while time.time() < end:
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
        s.sendall(b"DELETE http://127.0.0.1:%d/repos/other HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                  b"Content-Length: 0\r\n\r\n" % (port, port))
        k = s.recv(64).split(b"\r\n")[0].decode("latin-1") or "closed"
        s.close()
    except OSError as e:
        k = type(e).__name__
    counts[k] = counts.get(k, 0) + 1
print(counts)
'''

TIGHT = '[[sandbox.http]]\nhost = "127.0.0.1"\nallow = ["GET /repos/me/**"]\n'


def t_restart_and_reload_storm(tmp):
    """A jail sends refused DELETEs in a loop for 8 s while the proxy is
    killed three times (the daemon starts it again and hands it every
    listener and rule set) and vectora.toml switches between two rule
    sets that both refuse them: no request is checked against no rules
    or a half-sent set, the host gets none."""
    def body(d, ws, port):
        with open(os.path.join(ws, "storm.py"), "w") as f:
            f.write(STORM)
        vtest.chown_tree(ws)
        Recorder.seen.clear()
        got = {}
        t = threading.Thread(target=lambda: got.update(r=term(d, ws, "python3 storm.py 8 %d" % port, timeout=60)))
        t.start()
        time.sleep(1)
        net = '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n' % port
        for i in range(3):
            with open(os.path.join(ws, "vectora.toml"), "w") as f:
                f.write(net + (TIGHT if i % 2 == 0 else RULES))
            old = proxy_of(d)["pid"]
            os.kill(old, signal.SIGKILL)
            wait_until(lambda: (d.status()["daemon"].get("proxy") or {}).get("pid") not in (None, 0, old),
                       "the proxy started again", timeout=15)
            time.sleep(1)
        t.join(70)
        r = got.get("r") or {}
        out = r.get("stdout", "")
        print("# the jail's answers:", out.strip())
        check("403" in out, ("no request was refused", r))
        check(not reached(port), ("the host got", Recorder.seen, out))
    with_plain(tmp, "storm", body)


def main():
    run_main(T, "atk-http-rules3", ("openssl", "python3"),
             [t_tunnel_odd_first_line, t_form_type_spellings, t_override_headers_and_pipelining,
              t_restart_and_reload_storm, t_tls_pipelining_and_h2, t_encoded_form,
              t_underscore_content_type, t_override_in_trailer,
              t_expect_and_multipart])


if __name__ == "__main__":
    main()
