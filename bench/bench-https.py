#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""HTTPS through the proxy, intercepted beside the plain tunnel (issue 31:
"make bench reports the intercepted throughput beside the plain
tunnel's").

Two HTTPS servers on 127.0.0.1 (Python's ssl, certificates from a test CA
made here by openssl, which the daemon gets as its CAs through its own
SSL_CERT_FILE) serve 32 MiB of random bytes each. A workspace lists both;
a secret belongs to the first, so the proxy terminates the jail's TLS to
it with the workspace's CA, checks the server's certificate, puts the
value in the Authorization header and encrypts again (a thread per
connection, OpenSSL); the second is a plain CONNECT tunnel checked by SNI
whose bytes the kernel splices. curl in the jail fetches each with the
same command (the placeholder in Authorization) through the proxy; the
host fetches the same from the second server directly, for reference.
Figures are curl's own time_total. Rounds alternate intercepted, tunnel
and host (ABAB). Prints one JSON line for bench/report.py."""
import json
import os
import subprocess
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("VECTORA_BUILD_ROOT", os.path.join(HERE, "../build"))
BUILD = os.environ["VECTORA_BUILD_ROOT"]
# The daemon finds the build tree's programs only through these.
os.environ.setdefault("VECTORA_WORKER", os.path.join(BUILD, "src/worker/vectora-worker"))
os.environ.setdefault("VECTORA_PROXY", os.path.join(BUILD, "src/proxy/vectora-sandbox-proxy"))
# The test PKI, the HTTPS servers and the daemon the secrets tests use.
sys.path.insert(0, os.path.join(HERE, "../tests/lib"))
import vtest  # noqa: E402
from vsecrets import CURL, Blob, https_server, make_pki, set_secret  # noqa: E402

ROUNDS, PER_ROUND, SIZE = 5, 3, 32 << 20
FETCH = CURL + "-f -o /dev/null -w '%{time_total} %{size_download}' "


def us(out):
    """curl's time_total in us, once it got every byte."""
    if out.split()[1:] != [str(SIZE)]:
        raise RuntimeError(f"downloaded {out!r}, not {SIZE} bytes")
    return float(out.split()[0]) * 1e6


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-bench-https-")
    os.chmod(tmp, 0o755)
    Blob.body = os.urandom(SIZE)
    pki = make_pki(tmp)
    servers = [https_server(pki("srv.crt"), pki("srv.key"), Blob) for _ in range(2)]
    secret, plain = (s.server_address[1] for s in servers)
    state = os.path.join(tmp, "state")
    os.makedirs(state, mode=0o700)
    d = vtest.Daemon(tmp, extra=["--state-dir", state], env=dict(os.environ, SSL_CERT_FILE=pki("ca.crt")),
                     log_level="info")
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % secret], "bench-" + os.urandom(8).hex())
        ws = vtest.make_ws(tmp, "ws", '[sandbox]\nnetwork = ["127.0.0.1:%d", "127.0.0.1:%d"]\nsecrets = ["TOK"]\n'
                           % (secret, plain))
        auth = '-H "Authorization: Bearer $TOK" '

        def jailed(port):
            r = d.call({"tool": "terminal", "workspace": ws, "timeout": 120,
                        "command": FETCH + auth + "https://127.0.0.1:%d/big" % port})
            if not r.get("ok") or r.get("exit_code") != 0:
                raise RuntimeError(f"jailed download failed: {json.dumps(r)[:2000]}")
            return us(r["stdout"])

        def host():
            out = subprocess.run("curl -sS -f -o /dev/null -w '%%{time_total} %%{size_download}' --noproxy '*' "
                                 "--cacert %s -H 'Authorization: Bearer x' https://127.0.0.1:%d/big"
                                 % (pki("ca.crt"), plain), shell=True, capture_output=True, text=True,
                                 check=True).stdout
            return us(out)
        jailed(secret)  # a warm worker, the workspace's leaf made
        jailed(plain)
        inter, tunnel, direct = [], [], []
        for _ in range(ROUNDS):
            a, b, c = [], [], []
            for _ in range(PER_ROUND):
                a.append(jailed(secret))
                b.append(jailed(plain))
                c.append(host())
            inter.append(a)
            tunnel.append(b)
            direct.append(c)
        mib = SIZE / (1 << 20)

        def rate(rounds):
            return [[mib / (t / 1e6) for t in r] for r in rounds]
        doc = {
            "bench": "https",
            "figures": [
                {"key": "https.intercepted", "label": "32 MiB over HTTPS in the jail from a secret's host, "
                 "intercepted (curl time_total)", "unit": "us", "rounds": inter},
                {"key": "https.tunnel", "label": "32 MiB over HTTPS in the jail from another host, a plain tunnel "
                 "(curl time_total)", "unit": "us", "rounds": tunnel},
                {"key": "https.host", "label": "32 MiB over HTTPS on the host, direct (curl time_total)",
                 "unit": "us", "rounds": direct},
                {"key": "https.intercepted_mibs", "label": "intercepted: throughput", "unit": "MiB/s",
                 "rounds": rate(inter)},
                {"key": "https.tunnel_mibs", "label": "plain tunnel: throughput", "unit": "MiB/s",
                 "rounds": rate(tunnel)},
                {"key": "https.host_mibs", "label": "from the host: throughput", "unit": "MiB/s",
                 "rounds": rate(direct)},
            ],
            "ratios": [{"key": "https.ratio", "label": "download time: intercepted / plain tunnel",
                        "num": "https.intercepted", "den": "https.tunnel"},
                       {"key": "https.ratio_host", "label": "download time: plain tunnel / from the host",
                        "num": "https.tunnel", "den": "https.host"}],
            "notes": ["Two HTTPS servers on 127.0.0.1 (Python's ssl, a test CA's certificates; the daemon gets the "
                      "CA through its own SSL_CERT_FILE) serve 32 MiB of random bytes. A secret belongs to the "
                      "first: the proxy terminates the jail's TLS with the workspace's CA, verifies the server, "
                      "puts the value in Authorization and encrypts again (OpenSSL, a thread per connection). The "
                      "second is a plain CONNECT tunnel checked by SNI, its bytes spliced by the kernel. curl in "
                      "the jail sends the same request to each through the proxy (`-x http://127.0.0.1:3128`, the "
                      "placeholder in Authorization); the host's curl fetches from the second directly. Figures "
                      "are curl's own time_total; the Python server's own TLS is in every figure. "
                      f"{ROUNDS} rounds of {PER_ROUND} downloads each way, alternating (ABAB). "
                      "Alone: `python3 bench/bench-https.py` (after `ninja -C build`)."],
        }
        print(json.dumps(doc))
    finally:
        d.stop(check_exit=False)
        for s in servers:
            s.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
