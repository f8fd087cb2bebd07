#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""More attacks on the HTTP rules per host ([[sandbox.http]], issue 31),
as a hostile agent in the jail makes them: raw bytes written to the proxy
by a Python client in the jail, over plain HTTP, inside the TLS the proxy
intercepts for a secret's host, and through a CONNECT tunnel.

  - `_method` in the query or a form body: Rails, Laravel and Symfony run
    a POST carrying `_method=DELETE` as a DELETE, so a rule allowing
    `POST /x` let a DELETE of /x through. Refused in the query (any case,
    percent-encoded) and in a form, multipart or JSON body the proxy reads
    whole (a body sent in two pieces too); such a body sent chunked, or
    longer than the proxy reads, is refused; a form without `_method`
    passes, its body whole.
  - plain HTTP through a CONNECT tunnel to another allowed host, with a
    Host header naming the rules host that the same server serves: the
    proxy read nothing in a tunnel to a host without rules. Refused while
    the workspace has rules; another protocol in a tunnel still passes.

(The rules re-send race, the first hole of the same review, is tested by
the unit test test-proxy-engine: a live race between the daemon's control
messages and a jail's request is microseconds wide and not hit reliably.)

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check  # noqa: E402

from vsecrets import Recorder  # noqa: E402
from vhttprules import Recorder11, raw, reached, refused, with_https, with_plain  # noqa: E402

T = Tap()

QUERIES = ["_method=DELETE", "a=1&_method=DELETE", "_METHOD=delete", "%5Fmethod=DELETE", "_%6D%65thod=DELETE",
           "a=1;_method=DELETE", ".method=DELETE", "_method[]=DELETE"]


def t_method_query(tmp):
    """POST /repos/me/a/pulls?_method=DELETE (allowed as a POST, run as a
    DELETE by Rails, Laravel, Symfony), in every spelling a framework
    decodes: refused, plain HTTP and HTTPS; another query passes."""
    def check_all(d, ws, mode, port):
        base = "/repos/me/a/pulls" if mode == "tls" else "http://127.0.0.1:%d/repos/me/a/pulls" % port
        for q in QUERIES:
            Recorder.seen.clear()
            r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s?%s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                         "Content-Length: 0\\r\\n\\r\\n" % (base, q, port))
            check(not reached(port), (q, "the host got", Recorder.seen, r))
            refused(r, out, q)
            check("_method" in json.dumps(r.get("network_denied")), r)
        Recorder.seen.clear()
        r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s?method=x&my_method=y HTTP/1.1\\r\\n"
                     "Host: 127.0.0.1:%d\\r\\nContent-Length: 0\\r\\n\\r\\n" % (base, port))
        check("seen" in out and reached(port) == ["/repos/me/a/pulls?method=x&my_method=y"], (r, Recorder.seen))
    with_https(tmp, "mq-tls", lambda d, ws, port: check_all(d, ws, "tls", port))
    with_plain(tmp, "mq-plain", lambda d, ws, port: check_all(d, ws, "plain", port))


MP = "--b\\r\\nContent-Disposition: form-data; name=\\\"_method\\\"\\r\\n\\r\\nDELETE\\r\\n--b--\\r\\n"
BODIES = [("", "_method=DELETE"),
          ("Content-Type: application/x-www-form-urlencoded\\r\\n", "title=x&%5Fmethod=DELETE"),
          ("Content-Type: application/x-www-form-urlencoded\\r\\n", "title=x&_meth<<PAUSE>>od=DELETE"),
          ("Content-Type: multipart/form-data; boundary=b\\r\\n", MP),
          ("Content-Type: application/json\\r\\n", '{"title": "x", "_method": "DELETE"}')]


def body_len(b):
    """The length of a body as RAW sends it (escapes read, pauses out)."""
    return len(b.replace("<<PAUSE>>", "").encode().decode("unicode_escape").encode("latin-1"))


def t_method_body(tmp):
    """An allowed POST whose form body (urlencoded, no Content-Type, which
    Rack reads as a form, multipart, JSON) carries _method: refused, plain
    HTTP and HTTPS, a body sent in two pieces too. A form body sent
    chunked is refused (not read); a form without _method passes whole."""
    def check_all(d, ws, mode, port):
        target = "/repos/me/a/pulls" if mode == "tls" else "http://127.0.0.1:%d/repos/me/a/pulls" % port
        for ctype, b in BODIES:
            Recorder.seen.clear()
            r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n%s"
                         "Content-Length: %d\\r\\n\\r\\n%s" % (target, port, ctype, body_len(b), b))
            check(not reached(port), (ctype, b, "the host got", Recorder.seen, r))
            refused(r, out, b)
            check("_method" in json.dumps(r.get("network_denied")), r)
        Recorder.seen.clear()
        r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Content-Type: application/x-www-form-urlencoded\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n"
                     "e\\r\\n_method=DELETE\\r\\n0\\r\\n\\r\\n" % (target, port))
        check(not reached(port), ("chunked form: the host got", Recorder.seen, r))
        refused(r, out, "chunked form")
        Recorder.seen.clear()
        Recorder11.bodies.clear()
        b = "title=x&<<PAUSE>>body=y"
        r, out = raw(d, ws, mode, "127.0.0.1:%d" % port, "POST %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                     "Content-Type: application/x-www-form-urlencoded\\r\\nContent-Length: %d\\r\\n\\r\\n%s"
                     % (target, port, body_len(b), b))
        check("seen" in out and reached(port) == ["/repos/me/a/pulls"] and Recorder11.bodies == [b"title=x&body=y"],
              (r, Recorder.seen, Recorder11.bodies))
    with_https(tmp, "mb-tls", lambda d, ws, port: check_all(d, ws, "tls", port))
    with_plain(tmp, "mb-plain", lambda d, ws, port: check_all(d, ws, "plain", port))


def t_tunnel_plain_http(tmp):
    """A server on every address, reached by a CONNECT to a second allowed
    name (127.0.0.2, no rules), then plain HTTP in the tunnel whose Host
    names the rules host (127.0.0.1): the server routes by Host. Closed and
    reported while the workspace has rules, blank lines before the request
    line too; a line of another protocol still goes through."""
    def body(d, ws, port):
        for pre in ("", "\\r\\n\\r\\n"):
            Recorder.seen.clear()
            r, out = raw(d, ws, "tunnel", "127.0.0.2:%d" % port, "%sDELETE /repos/other HTTP/1.1\\r\\n"
                         "Host: 127.0.0.1:%d\\r\\n\\r\\n" % (pre, port))
            check("200" in out.split("\n")[0], ("the CONNECT", out))
            check(not reached(port), (repr(pre), "the host got", Recorder.seen, r))
            check("plain HTTP inside a CONNECT tunnel" in json.dumps(r.get("network_denied")), r)
        # Not HTTP: the server answers it (400), the proxy let it through.
        Recorder.seen.clear()
        r, out = raw(d, ws, "tunnel", "127.0.0.2:%d" % port, "HELO x\\r\\n")
        check("400" in out and not r.get("network_denied"), r)
    with_plain(tmp, "tunnel", body, addr="0.0.0.0", extra_net=("127.0.0.2",))


def t_tunnel_plain_no_rules(tmp):
    """Without [[sandbox.http]] rules, plain HTTP in a tunnel passes as
    before (nothing to front for)."""
    def body(d, ws, port):
        Recorder.seen.clear()
        r, out = raw(d, ws, "tunnel", "127.0.0.2:%d" % port, "GET /x HTTP/1.1\\r\\nHost: 127.0.0.2:%d\\r\\n"
                     "Connection: close\\r\\n\\r\\n" % port)
        check("seen" in out and reached(port) == ["/x"], (r, Recorder.seen))
    with_plain(tmp, "tunnel-norules", body, addr="0.0.0.0", extra_net=("127.0.0.2",), rules="")


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("attacks-http-rules2", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    for tool in ("bwrap", "openssl", "python3"):
        if not shutil.which(tool):
            T.skip("attacks-http-rules2", "%s is not installed (scripts/install-deps)" % tool)
            sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_method_query, t_method_body, t_tunnel_plain_http, t_tunnel_plain_no_rules],
                             "vs-atk-http-rules2-"))


if __name__ == "__main__":
    main()
