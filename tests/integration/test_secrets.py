#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-held secrets (issue 31), the part built so far: the store and its
CLI and API, sandbox.secrets and its config errors and loosening, the
jail's placeholders, and the proxy putting the value into plain-HTTP
request heads for the secret's hosts only. For real: a daemon, bwrap
jails, curl in the jail, HTTP servers on the host's 127.0.0.1 listed as
literal addresses (an IP entry may reach loopback).

Whose store: the daemon's (or the embedded CLI's) user's, whoever owns
the workspace (a daemon serves its own user and root only).

TAP output. VECTORA_TEST_STRICT=1 turns a skip into a failure."""
import base64
import http.server
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402
from vsecrets import CURL, Recorder, out_of, term  # noqa: E402

T = Tap()
VALUE = "ghp_REALtoken_" + os.urandom(8).hex()
def server(handler=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler or Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def state_env(tmp):
    """The embedded CLI's own state directory, not the caller's real one."""
    d = os.path.join(tmp, "cli-state")
    os.makedirs(d, mode=0o700, exist_ok=True)
    return dict(os.environ, VECTORA_SANDBOX_STATE_DIR=d), d


def cli(args, env=None, stdin=None, sock=None):
    argv = [CLI] + (["--socket", sock] if sock else ["--no-daemon"]) + args
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120)


def daemon(tmp, name):
    state = os.path.join(tmp, name + "-state")
    os.makedirs(state, mode=0o700, exist_ok=True)
    return vtest.Daemon(tmp, name=name, extra=["--state-dir", state]), state


def set_secret(d, name, hosts, value=VALUE):
    r = cli(["secret", "set", name] + sum((["--host", h] for h in hosts), []), stdin=value + "\n", sock=d.sock)
    check(r.returncode == 0, "secret set: %s %s" % (r.stdout, r.stderr))


def t_cli_embedded(tmp):
    """secret set (stdin, --from-env, --from-file) / list / delete embedded:
    mode 0600, values never listed."""
    env, state = state_env(tmp)
    r = cli(["secret", "set", "GITHUB_TOKEN", "--host", "github.com", "--host", "api.github.com"], env=env,
            stdin=VALUE + "\n")
    check(r.returncode == 0, r.stderr)
    f = os.path.join(state, "secrets-%d.json" % os.geteuid())
    st = os.stat(f)
    check(stat.S_IMODE(st.st_mode) == 0o600, "mode %o" % st.st_mode)
    check(VALUE not in open(f).read(), "the value is stored as base64, not as text")
    env2 = dict(env, MY_TOKEN="from-env-value")
    check(cli(["secret", "set", "OTHER", "--host", "x.example", "--from-env", "MY_TOKEN"], env=env2).returncode == 0,
          "from-env")
    vf = os.path.join(tmp, "value-file")
    with open(vf, "w") as fh:
        fh.write("from-file-value\n")
    check(cli(["secret", "set", "THIRD", "--host", "y.example", "--from-file", vf], env=env).returncode == 0,
          "from-file")
    for args in (["secret", "list"], ["secret", "list", "--json"]):
        r = cli(args, env=env)
        check(r.returncode == 0, r.stderr)
        for v in (VALUE, "from-env-value", "from-file-value"):
            check(v not in r.stdout + r.stderr, "a value listed: " + r.stdout)
    j = json.loads(cli(["secret", "list", "--json"], env=env).stdout)
    names = {s["name"]: s["hosts"] for s in j["secrets"]}
    check(names == {"GITHUB_TOKEN": ["github.com", "api.github.com"], "OTHER": ["x.example"], "THIRD": ["y.example"]},
          j)
    check(all(set(s) == {"name", "hosts", "headers"} and s["headers"] == [] for s in j["secrets"]), j)
    for bad, why in ((["secret", "set", "lower", "--host", "a.example"], "NAME must match"),
                     (["secret", "set", "NOHOST"], "--host"),
                     (["secret", "set", "BADHOST", "--host", "a b"], "not a host name")):
        r = cli(bad, env=env, stdin="x\n")
        check(r.returncode != 0 and why in r.stderr, (bad, r.stderr))
    check(cli(["secret", "delete", "OTHER"], env=env).returncode == 0, "delete")
    r = cli(["secret", "delete", "OTHER"], env=env)
    check(r.returncode != 0 and "no secret named" in r.stderr, r.stderr)
    j = json.loads(cli(["secret", "list", "--json"], env=env).stdout)
    check(sorted(s["name"] for s in j["secrets"]) == ["GITHUB_TOKEN", "THIRD"], j)
    check(stat.S_IMODE(os.stat(f).st_mode) == 0o600, "mode after rewrite")


def t_api_daemon(tmp):
    """secret_set / secret_list / secret_delete through the daemon: values
    never in a reply, the log or the audit log; the CLI through it too."""
    d, state = daemon(tmp, "api")
    try:
        r = d.call({"tool": "secret_set", "name": "API_KEY", "hosts": ["api.example.org"], "value": VALUE})
        check(r.get("ok") is True and VALUE not in json.dumps(r), r)
        r = d.call({"tool": "secret_list"})
        check(r.get("ok") is True and r["secrets"] == [{"name": "API_KEY", "hosts": ["api.example.org"],
                                                                  "headers": []}], r)
        check(VALUE not in json.dumps(r), r)
        f = os.path.join(state, "secrets-%d.json" % os.geteuid())
        check(stat.S_IMODE(os.stat(f).st_mode) == 0o600, "mode")
        r = d.call({"tool": "secret_set", "name": "bad", "hosts": ["a.example"], "value": "x"})
        check(r.get("ok") is False and r["error"]["code"] == "bad_request", r)
        r = d.call({"tool": "secret_set", "name": "NOHOSTS", "hosts": [], "value": "x"})
        check(r.get("ok") is False, r)
        r = cli(["secret", "list"], sock=d.sock)
        check(r.returncode == 0 and "API_KEY  api.example.org" in r.stdout and VALUE not in r.stdout, r.stdout)
        r = d.call({"tool": "secret_delete", "name": "API_KEY"})
        check(r.get("ok") is True, r)
        check(d.call({"tool": "secret_list"})["secrets"] == [], "deleted")
        r = d.call({"tool": "secret_delete", "name": "API_KEY"})
        check(r.get("ok") is False, r)
    finally:
        d.stop()
    logs = d.log_text() + (open(d.audit).read() if d.audit and os.path.exists(d.audit) else "")
    check(VALUE not in logs, "the value in the daemon's log or audit")


def t_config_errors(tmp):
    """sandbox.secrets without network = [...], with a host network does not
    list, naming an unknown secret, on ssh: located config errors."""
    d, _ = daemon(tmp, "cfg")
    cases = [
        ('[sandbox]\nnetwork = false\nsecrets = ["TOK"]\n', "vectora.toml:3:12: sandbox.secrets needs network = [...]"),
        ('[sandbox]\nnetwork = ["example.org"]\nsecrets = ["TOK"]\n',
         'vectora.toml:3:12: sandbox.secrets[0]: secret TOK goes to \\"api.example.org\\", which sandbox.network does '
         'not list; add \\"api.example.org\\" to network'),
        ('[sandbox]\nnetwork = ["api.example.org"]\nsecrets = ["NOPE"]\n', "holds no secret NOPE"),
        ('[sandbox]\nnetwork = ["api.example.org"]\nsecrets = ["bad-name"]\n', "sandbox.secrets[0] must be"),
        ('[sandbox]\nbackend = "ssh"\nnetwork = ["api.example.org"]\nsecrets = ["TOK"]\n[sandbox.ssh]\nhost = "h"\n',
         "the ssh backend cannot keep secrets"),
    ]
    try:
        set_secret(d, "TOK", ["api.example.org"])
        for i, (toml, want) in enumerate(cases):
            ws = make_ws(tmp, "cfg%d" % i, toml)
            r = term(d, ws, "true")
            check(r.get("ok") is False and r["error"]["code"] == "config_invalid" and want in json.dumps(r), (toml, r))
    finally:
        d.stop()


def jail_ws(tmp, d, name, port, extra_net=()):
    net = ['"127.0.0.1:%d"' % port] + ['"%s"' % h for h in extra_net]
    return make_ws(tmp, name, '[sandbox]\nnetwork = [%s]\nsecrets = ["TOK"]\n' % ", ".join(net))


def t_jail_placeholder(tmp):
    """The jail's environment holds a placeholder, never the value: not in
    any /proc/*/environ it can read, nor in files it can read."""
    srv = server()
    port = srv.server_address[1]
    d, _ = daemon(tmp, "ph")
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port])
        ws = jail_ws(tmp, d, "ws-ph", port)
        r = term(d, ws, 'echo "TOK=$TOK"')
        check(r.get("ok") is True, r)
        out = out_of(r)
        m = re.search(r"TOK=(vsph_[0-9a-f]{32})", out)
        check(m and VALUE not in out, out)
        first = m.group(1)
        r = term(d, ws, "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '%s' ; "
                        "grep -rls -- '%s' /proc/self/environ /etc /tmp /var/tmp /run /home \"$HOME\" . 2>/dev/null | "
                        "head -5; echo done" % (VALUE, VALUE), timeout=120)
        lines = r.get("stdout", "").split()
        check(lines == ["0", "done"], r)
        # A new jail, a new placeholder.
        d.call({"tool": "policy_allow", "workspace": ws})
        with open(os.path.join(ws, "vectora.toml"), "a") as f:
            f.write("mask = [\"nothing-here\"]\n")
        r = term(d, ws, 'echo "TOK=$TOK"')
        m = re.search(r"TOK=(vsph_[0-9a-f]{32})", out_of(r))
        check(m and m.group(1) != first, out_of(r))
    finally:
        d.stop()
        srv.shutdown()


def t_inject_plain_http(tmp):
    """A plain-HTTP request from the jail to the secret's host reaches it
    with the real value where the placeholder was; status names the secret
    (never its value); also through a proxy restarted after SIGKILL."""
    srv = server()
    port = srv.server_address[1]
    d, _ = daemon(tmp, "inj")
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port])
        ws = jail_ws(tmp, d, "ws-inj", port)
        Recorder.seen.clear()
        r = term(d, ws, CURL + '-H "Authorization: Bearer $TOK" http://127.0.0.1:%d/repo?x=1' % port)
        check(r.get("ok") is True and "seen" in out_of(r), r)
        heads = [h for p, path, h in Recorder.seen if p == port]
        check(heads and "Authorization: Bearer %s" % VALUE in heads[-1], heads)
        check("vsph_" not in heads[-1], heads[-1])
        check(VALUE not in out_of(r), "the value came back to the jail")
        st = d.ws_status(ws)
        check(st and st["policy"].get("secrets") == ["TOK"] and VALUE not in json.dumps(d.status()), st)
        # A restarted proxy gets the secrets again with the rules.
        old = d.status()["daemon"]["proxy"]["pid"]
        os.kill(old, signal.SIGKILL)
        for _ in range(500):
            p = d.status()["daemon"]["proxy"]
            if p.get("running") and p.get("pid") != old:
                break
            time.sleep(0.02)
        check(p.get("running") and p.get("pid") != old, p)
        Recorder.seen.clear()
        r = term(d, ws, CURL + '-H "Authorization: Bearer $TOK" http://127.0.0.1:%d/again' % port)
        heads = [h for p_, path, h in Recorder.seen if p_ == port]
        check(heads and "Authorization: Bearer %s" % VALUE in heads[-1], (r, heads))
    finally:
        d.stop()
        srv.shutdown()


def two_hosts(tmp, name):
    """The secret TOK's host and another allowed host (their servers and
    ports), a daemon whose store has TOK, a workspace allowing both."""
    srv, other = server(), server()
    port, oport = srv.server_address[1], other.server_address[1]
    d, _ = daemon(tmp, name)
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port])
        ws = jail_ws(tmp, d, "ws-" + name, port, extra_net=["127.0.0.1:%d" % oport])
    except BaseException:
        d.stop()
        srv.shutdown()
        other.shutdown()
        raise
    return srv, other, port, oport, d, ws


def t_placeholder_elsewhere_refused(tmp):
    """The placeholder sent to another allowed host is refused (403 naming
    the secret), reported in network_denied and the audit log, without the
    value; that host never sees the request."""
    srv, other, port, oport, d, ws = two_hosts(tmp, "ref")
    try:
        Recorder.seen.clear()
        r = term(d, ws, CURL + '-H "Authorization: Bearer $TOK" http://127.0.0.1:%d/steal' % oport)
        out = out_of(r)
        check("secret TOK" in out, r)
        check(not [1 for p, _, _ in Recorder.seen if p == oport], Recorder.seen)
        denied = json.dumps(r.get("network_denied"))
        check("secret TOK" in denied, r)
        # Without the placeholder the same host is served.
        r = term(d, ws, CURL + "http://127.0.0.1:%d/plain" % oport)
        check("seen" in out_of(r), r)
    finally:
        d.stop()
        srv.shutdown()
        other.shutdown()
    audit = open(d.audit).read()
    check("secret TOK" in audit and VALUE not in audit, "audit")


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def t_basic_credentials(tmp):
    """curl -u x:$TOK: the placeholder inside Basic credentials becomes the
    value for the secret's host; the same credentials to another allowed
    host are refused (403 naming the secret), that host never sees them."""
    srv, other, port, oport, d, ws = two_hosts(tmp, "basic")
    try:
        Recorder.seen.clear()
        r = term(d, ws, CURL + '-u "x:$TOK" http://127.0.0.1:%d/basic' % port)
        check(r.get("ok") is True and "seen" in out_of(r), r)
        heads = [h for p, _, h in Recorder.seen if p == port]
        check(heads and "Authorization: %s" % basic("x", VALUE) in heads[-1], heads)
        check(VALUE not in out_of(r), "the value came back to the jail")
        r = term(d, ws, CURL + '-u "x:$TOK" http://127.0.0.1:%d/steal' % oport)
        check("secret TOK" in out_of(r), r)
        check(not [1 for p, _, _ in Recorder.seen if p == oport], Recorder.seen)
    finally:
        d.stop()
        srv.shutdown()
        other.shutdown()
    # Each use is audited: where, which secret, never the value.
    text = open(d.audit).read()
    uses = [r for r in map(json.loads, text.splitlines())
            if isinstance(r.get("target"), dict) and r["target"].get("secret") == "TOK"]
    check(uses and uses[0]["target"] == {"host": "127.0.0.1", "port": port, "method": "GET", "path": "/basic",
                                         "secret": "TOK"} and uses[0]["outcome"] == "ok", uses)
    check(len(uses) == 1 and VALUE not in text, (uses, "the value in the audit log"))


class GitAuth(http.server.BaseHTTPRequestHandler):
    """A smart-HTTP remote that wants Basic credentials: 401 without them,
    keeps the Authorization it gets, then 404 (only the header matters)."""
    auth = []

    def do_GET(self):
        a = self.headers.get("Authorization")
        if a:
            GitAuth.auth.append(a)
        self.send_response(404 if a else 401)
        if not a:
            self.send_header("WWW-Authenticate", 'Basic realm="repo"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


def t_git_credential(tmp):
    """git in the jail, with no configuration of its own, sends the value as
    its Basic password to the secret's host: the environment's credential
    helper prints the placeholder, the proxy puts the value in its place."""
    if not shutil.which("git"):
        T.skip("git credential", "git is not installed")
        return
    srv = server(GitAuth)
    port = srv.server_address[1]
    d, _ = daemon(tmp, "git")
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port])
        ws = jail_ws(tmp, d, "ws-git", port)
        GitAuth.auth.clear()
        # NO_PROXY names 127.0.0.1 for the jail's own services.
        r = term(d, ws, "NO_PROXY= no_proxy= GIT_TERMINAL_PROMPT=0 git ls-remote http://127.0.0.1:%d/repo" % port)
        check(GitAuth.auth and GitAuth.auth[-1] == basic("x-access-token", VALUE), (r, GitAuth.auth))
        check(VALUE not in out_of(r), "the value came back to the jail")
    finally:
        d.stop()
        srv.shutdown()


def t_loosening_waits(tmp):
    """Adding a secret to a served policy is a loosening: the approved
    policy keeps serving (no placeholder) until allow."""
    srv = server()
    port = srv.server_address[1]
    d, _ = daemon(tmp, "loose")
    try:
        set_secret(d, "TOK", ["127.0.0.1:%d" % port])
        ws = make_ws(tmp, "ws-loose", '[sandbox]\nnetwork = ["127.0.0.1:%d"]\n' % port)
        r = term(d, ws, 'echo "TOK=[$TOK]"')
        check("TOK=[]" in out_of(r), r)
        with open(os.path.join(ws, "vectora.toml"), "a") as f:
            f.write('secrets = ["TOK"]\n')
        r = term(d, ws, 'echo "TOK=[$TOK]"')
        check("TOK=[]" in out_of(r) and "secrets: TOK is used" in json.dumps(r), r)
        r = d.call({"tool": "policy_allow", "workspace": ws})
        check(r.get("ok") is True and "secrets: TOK is used" in json.dumps(r), r)
        r = term(d, ws, 'echo "TOK=[$TOK]"')
        check(re.search(r"TOK=\[vsph_[0-9a-f]{32}\]", out_of(r)), r)
    finally:
        d.stop()
        srv.shutdown()


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("secrets", f"{DAEMON} or {CLI} not built")
        sys.exit(T.finish())
    if not shutil.which("bwrap") or not shutil.which("curl"):
        T.skip("secrets", "bwrap or curl is not installed (scripts/install-deps)")
        sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_cli_embedded, t_api_daemon, t_config_errors, t_jail_placeholder,
                                 t_inject_plain_http, t_placeholder_elsewhere_refused, t_loosening_waits,
                                 t_basic_credentials, t_git_credential],
                             "vs-secrets-"))


if __name__ == "__main__":
    main()
