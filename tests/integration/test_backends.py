#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The docker and ssh backends against real servers (issue 5's "Done
when"), through the real daemon, side by side with the local backend.

The harness (tests/helpers/backends/servers.py) starts a private dockerd
(own socket, data root and exec root under a temp dir; an image imported
from a busybox-static rootfs, no registry) and sshd on loopback ports (a
generated host key, one authorized key, a known_hosts file; a second sshd
whose sessions see no bubblewrap). Both are stopped at the end.

Podman runs rootless only here: its cases run as the ordinary account
vectora-test (tests/helpers/as-user; meson's test-backends-podman runs
this file so, with the argument "podman"), with a storage of its own
(servers.Podman); run as root they are not applicable and say where they
run.

Where a server cannot start here, its tests print "SKIP: reason" and count
as skipped; with VECTORA_TEST_STRICT=1 a skip is a failure. Run as root the
local and docker workspaces belong to nobody and the ssh workspace to the
sshd test user (scripts/install-deps creates it); the jail never runs as
root. Prints TAP, then "N passed, N failed, N skipped"; with
VECTORA_BENCH_OUT=FILE the measurements are written there too.

Python 3 stdlib only."""

import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../helpers/backends"))
import servers  # noqa: E402

BUILD = os.path.abspath(os.environ.get("VECTORA_BUILD_ROOT") or os.path.join(HERE, "../../build"))
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
CLI = os.path.join(BUILD, "src/cli/vectora-sandbox")
WORKER = os.path.join(BUILD, "src/worker/vectora-worker")
# What the backends deploy: the static worker (a sanitizer build makes an
# uninstrumented static one beside the instrumented worker).
DEPLOYED_WORKER = WORKER
if os.path.exists(os.path.join(BUILD, "src/worker/vectora-worker-static")):
    DEPLOYED_WORKER = os.path.join(BUILD, "src/worker/vectora-worker-static")
STRICT = os.environ.get("VECTORA_TEST_STRICT") == "1"
ROOT = os.geteuid() == 0
OWNER = pwd.getpwnam("nobody") if ROOT else pwd.getpwuid(os.geteuid())

sys.path.insert(0, os.path.join(HERE, "../lib"))
from vtest import Conn, NotApplicable, Skip, Tap, check  # noqa: E402,F401
import vtest  # noqa: E402
from vdaemon import PtyShell, free_port, http_get, pty_audit  # noqa: E402  (shared with the local backend's tests)

notes = []
T = Tap()


def tap(name, fn):
    T.case(fn, name=name)


class Daemon(vtest.Daemon):
    def status(self, ws):
        return self.ws_status(ws)

    def stop(self):
        # Containers are removed as their workers end: give them time.
        super().stop(timeout=20)


def chown_tree(path, uid, gid):
    if not ROOT:
        return
    for d, dirs, files in os.walk(path):
        os.lchown(d, uid, gid)
        for f in files:
            os.lchown(os.path.join(d, f), uid, gid)


def make_ws(parent, name, toml, owner, files=None):
    d = os.path.join(parent, name)
    os.makedirs(d)
    files = dict({"a.txt": "hello from %s\n" % name, ".env": "SECRET=%s\n" % name}, **(files or {}))
    if toml is not None:
        files["vectora.toml"] = toml
    for k, v in files.items():
        p = os.path.join(d, k)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(v)
    chown_tree(d, owner[0], owner[1])
    return d


BASE = '[sandbox]\nenabled = true\nbackend = "%s"\nmask = [".env", "**/*.pem"]\n'


def term(c, ws, command, **kw):
    return c.call(dict({"tool": "terminal", "workspace": ws, "command": command}, **kw))


def ok(r, what):
    check(r.get("ok"), "%s: %s" % (what, json.dumps(r)[:800]))
    return r


class Env:
    pass


E = Env()


def setup(tmp, only=None):
    E.tmp = tmp
    E.owner = (OWNER.pw_uid, OWNER.pw_gid)
    E.docker = E.docker_err = E.ssh = E.ssh_err = E.ssh_nobwrap = E.podman = E.podman_err = None
    setup_podman(tmp)
    if only and "podman" in only:
        # The podman run (as vectora-test): no dockerd or sshd to start.
        E.docker_err = E.ssh_err = "not started for a podman-only run"
        E.d = Daemon(tmp)
        return
    try:
        E.docker = servers.DockerEngine(tmp)
        E.image = E.docker.import_busybox(tmp)
    except (servers.Unavailable, RuntimeError) as e:
        E.docker_err = str(e)
        if E.docker:
            E.docker.stop()
            E.docker = None
    try:
        ssh_user = pwd.getpwnam(servers.SSH_TEST_USER) if ROOT else OWNER
        E.ssh_owner = (ssh_user.pw_uid, ssh_user.pw_gid)
        E.ssh = servers.SshServer(tmp, "sshd", client_owner=E.ssh_owner)
        E.ssh_nobwrap = servers.SshServer(tmp, "sshd-nobwrap", client_owner=E.ssh_owner,
                                          setenv={"VECTORA_BWRAP": "none"})
        E.remote = os.path.join(tmp, "remote")  # the ssh "host"'s side: workspaces and the deployed worker
        os.makedirs(E.remote)
        chown_tree(E.remote, *E.ssh_owner)
    except (servers.Unavailable, KeyError) as e:
        E.ssh_err = str(e)
    E.d = Daemon(tmp)


def setup_podman(tmp):
    if ROOT:
        E.podman_err = ("rootful podman cannot run here; the podman cases run rootless as the ordinary account "
                        "vectora-test (meson test test-backends-podman: tests/helpers/as-user test_backends.py podman)")
        return
    try:
        E.podman = servers.Podman(tmp)
        E.podman.import_busybox(tmp)
    except (servers.Unavailable, RuntimeError) as e:
        E.podman_err = str(e)
        if E.podman:
            E.podman.stop()
            E.podman = None


def need_podman():
    if ROOT:
        raise NotApplicable(E.podman_err)
    if not E.podman:
        raise Skip("podman unavailable: " + E.podman_err)


def need_docker():
    if not E.docker:
        raise Skip("Docker engine unavailable: " + E.docker_err)


def need_ssh():
    if not E.ssh:
        raise Skip("sshd unavailable: " + E.ssh_err)


def docker_toml(extra=""):
    return BASE % "docker" + extra + '[sandbox.docker]\nimage = "%s"\nhost = "%s"\n' % (E.image, E.docker.host)


def ssh_ws(name, server=None, extra="", remote_files=None):
    """An ssh workspace: the local checkout (with vectora.toml) and its
    remote_root on the "remote host", with the same files."""
    server = server or E.ssh
    remote = os.path.join(E.remote, name)
    wpath = os.path.join(E.remote, "bin", "vectora-worker")
    toml = BASE % "ssh" + extra + server.toml(remote_root=remote, worker_path=wpath)
    local = make_ws(E.tmp, name, toml, E.ssh_owner)
    make_ws(E.remote, name, toml, E.ssh_owner, remote_files)
    return local, remote


# ------------------------------------------------------------------ tests


def four_tools(c, ws, on_disk):
    """terminal, file_read, file_write, file_edit on ws; on_disk is where the
    files really are (the remote_root for ssh)."""
    name = os.path.basename(on_disk)
    r = ok(term(c, ws, "cat a.txt; cat .env; echo out-$(id -u)"), "terminal")
    check(r["exit_code"] == 0, r)
    check(r["stdout"].startswith("hello from %s\n" % name), r["stdout"])
    check("SECRET" not in r["stdout"], "the mask did not hold in the terminal: " + r["stdout"])
    check(r["stdout"].strip().endswith("out-%d" % os.stat(on_disk).st_uid) or not ROOT, r["stdout"])
    check(r["sandboxed"] and r["sandbox"]["state"] == "sandboxed", r["sandbox"])
    r = ok(c.call({"tool": "file_read", "workspace": ws, "path": "a.txt"}), "file_read")
    check(r["content"] == "hello from %s\n" % name, r)
    r = c.call({"tool": "file_read", "workspace": ws, "path": ".env"})
    check(not r.get("ok"), "file_read of a masked path: " + json.dumps(r))
    ok(c.call({"tool": "file_write", "workspace": ws, "path": "new.txt", "content": "one two\n"}), "file_write")
    r = ok(c.call({"tool": "file_edit", "workspace": ws, "path": "new.txt", "old_string": "two",
                   "new_string": "three"}), "file_edit")
    check(r["replacements"] == 1, r)
    with open(os.path.join(on_disk, "new.txt")) as f:
        check(f.read() == "one three\n", "file_edit did not land at " + on_disk)
    return r


def t_side_by_side():
    need_docker()
    need_ssh()
    local = make_ws(E.tmp, "side-local", BASE % "local", E.owner)
    dock = make_ws(E.tmp, "side-docker", docker_toml(), E.owner)
    sshl, sshr = ssh_ws("side-ssh")
    c = E.d.conn()
    backends = {}
    for ws, disk in ((local, local), (dock, dock), (sshl, sshr)):
        four_tools(c, ws, disk)
        r = ok(term(c, ws, "true"), "terminal")
        backends[r["sandbox"]["backend"]] = r["sandbox"]
    check(set(backends) == {"local", "docker", "ssh"}, backends)
    for b, s in backends.items():
        check("seccomp" in s["layers"], "%s: %s" % (b, s))
    # All three workers alive at once.
    for ws in (local, dock, sshl):
        st = E.d.status(ws)
        check(st and st["worker"] and st["worker"]["state"] == "ready", st)
    c.close()


def t_podman_side_by_side():
    """A rootless podman workspace beside a local one through the daemon
    (the four tools, the mask, both workers alive at once), and the same
    podman workspace in embedded mode (--no-daemon)."""
    need_podman()
    local = make_ws(E.tmp, "podman-side-local", BASE % "local", E.owner)
    pod = make_ws(E.tmp, "podman-side", BASE % "podman" + E.podman.toml(), E.owner)
    c = E.d.conn()
    backends = {}
    for ws in (local, pod):
        four_tools(c, ws, ws)
        r = ok(term(c, ws, "true"), "terminal")
        backends[r["sandbox"]["backend"]] = r["sandbox"]
    check(set(backends) == {"local", "podman"}, backends)
    check("seccomp" in backends["podman"]["layers"], backends["podman"])
    for ws in (local, pod):
        st = E.d.status(ws)
        check(st and st["worker"] and st["worker"]["state"] == "ready", st)
    c.close()
    # Embedded, a workspace of its own: the daemon's container of pod
    # still runs, under the name an embedded call on pod would take.
    emb = make_ws(E.tmp, "podman-embedded", BASE % "podman" + E.podman.toml(), E.owner)
    env = dict(os.environ, VECTORA_SANDBOX_SOCKET=os.path.join(E.tmp, "nobody.sock"))
    p = subprocess.run([CLI, "--no-daemon", "--json", "run", "-w", emb, "cat a.txt; cat .env"], capture_output=True,
                       text=True, env=env, timeout=300)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        r = {}
    check(r.get("ok") and r.get("sandbox", {}).get("backend") == "podman"
          and r.get("stdout") == "hello from podman-embedded\n", (p.returncode, p.stdout, p.stderr[-2000:]))


def t_docker_container_shape():
    need_docker()
    ws = make_ws(E.tmp, "docker-shape", docker_toml(), E.owner)
    c = E.d.conn()
    r = ok(term(c, ws, "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp_filters)' /proc/self/status; "
                "touch /usr/x 2>&1; touch /tmp/ok && echo tmp-ok; echo x > vectora.toml 2>&1; cat /proc/1/cmdline"),
           "terminal")
    out = r["stdout"]
    check(out.splitlines()[0] == str(E.owner[0]) or not ROOT, out)
    check("CapEff:\t0000000000000000" in out, out)
    check("NoNewPrivs:\t1" in out, out)
    filters = int(out.split("Seccomp_filters:")[1].split()[0])
    check(filters >= 2, "the engine's profile and the worker's filter should both be loaded: " + out)
    check("Read-only file system" in out and "tmp-ok" in out, out)
    check("vectora-worker" in out, out)
    with open(os.path.join(ws, "vectora.toml")) as f:
        check(f.read().startswith("[sandbox]"), "vectora.toml was rewritten from inside the container")
    names = E.docker.run(["ps", "--format", "{{.Names}}"]).stdout.split()
    check(any(n.startswith("vectora-") for n in names), names)
    c.close()


def t_missing_hooks_protected():
    # A repository without .git/hooks (or .git/config): the jail must not be
    # able to create them and plant a hook the host runs later, on the local
    # backend and on docker alike.
    backends = [("local", BASE % "local")]
    if E.docker:
        backends.append(("docker", docker_toml()))
    c = E.d.conn()
    for name, toml in backends:
        ws = make_ws(E.tmp, "nohooks-" + name, toml, E.owner, {".git/HEAD": "ref: refs/heads/main\n"})
        r = term(c, ws, "mkdir -p .git/hooks 2>&1; echo evil > .git/hooks/pre-commit 2>&1; "
                        "echo '[core] fsmonitor = evil' >> .git/config 2>&1; echo done")
        check(r.get("ok"), (name, r))
        check(not os.path.exists(os.path.join(ws, ".git/hooks/pre-commit")), (name, "a hook was planted", r))
        cfg = os.path.join(ws, ".git/config")
        check(not os.path.exists(cfg) or "fsmonitor" not in open(cfg).read(), (name, ".git/config was written", r))
    c.close()


def t_docker_lockdown_no_network():
    need_docker()
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("0.0.0.0", 0))
    lst.listen(16)
    port = lst.getsockname()[1]
    ips = {"127.0.0.1"}
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
        ips.update(ip for ip in out if ":" not in ip)
    except OSError:
        pass
    ws = make_ws(E.tmp, "docker-lockdown", docker_toml("lockdown = true\n"), E.owner)
    c = E.d.conn()
    try:
        # Control: the listener accepts from the host.
        socket.create_connection(("127.0.0.1", port), 2).close()
        lst.settimeout(2)
        lst.accept()[0].close()
        script = "; ".join("nc -w 2 %s %d </dev/null && echo CONNECTED-%s || echo refused-%s" % (ip, port, ip, ip)
                           for ip in sorted(ips))
        r = ok(term(c, ws, script + "; cat /proc/net/dev"), "terminal")
        check("CONNECTED" not in r["stdout"], "the locked-down container reached a host listener: " + r["stdout"])
        devs = [l.split(":")[0].strip() for l in r["stdout"].splitlines() if ":" in l and "|" not in l
                and not l.startswith("refused")]
        check(devs == ["lo"], "network devices in the container: %s" % devs)
        check(r["sandbox"]["backend"] == "docker", r["sandbox"])
        lst.settimeout(0.2)
        try:
            lst.accept()
            raise AssertionError("the listener saw a connection from the container")
        except socket.timeout:
            pass
    finally:
        lst.close()
        c.close()


def host_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]
    finally:
        s.close()


def t_docker_network_allowlist():
    """The same relay in a --network none container: busybox wget through
    http_proxy reaches the listed address and port, is refused another port
    with a 403 that lands in network_denied, and a direct connection has no
    route. (Names and HTTPS are covered on the local backend by
    test-network; the proxy is the same.)"""
    need_docker()
    import http.server
    host = host_address()
    www = os.path.join(E.tmp, "net-www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "hello.txt"), "w") as f:
        f.write("hello through the proxy\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer((host, 0), lambda *a, **k: Quiet(*a, directory=www, **k))
    other = socket.socket()
    other.bind((host, 0))
    other.listen(4)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port, oport = srv.server_address[1], other.getsockname()[1]
    ws = make_ws(E.tmp, "docker-allowlist", docker_toml('network = ["%s:%d"]\n' % (host, port)), E.owner)
    c = E.d.conn()
    try:
        r = ok(term(c, ws, "wget -q -O - http://%s:%d/hello.txt" % (host, port)), "terminal")
        check(r["exit_code"] == 0 and r["stdout"] == "hello through the proxy\n" and r["sandbox"]["backend"] == "docker",
              r)
        r = ok(term(c, ws, "wget -q -O - http://%s:%d/ 2>&1; echo rc=$?" % (host, oport)), "terminal")
        nd = r.get("network_denied") or []
        check("403" in r["stdout"] and nd and nd[0]["host"] == host and nd[0]["port"] == oport, r)
        r = ok(term(c, ws, "wget -Y off -q -O - http://%s:%d/hello.txt 2>&1; echo rc=$?" % (host, port)), "terminal")
        check("Network is unreachable" in r["stdout"] and "no direct network" in r.get("network_note", ""), r)
    finally:
        c.close()
        srv.shutdown()
        other.close()


def t_ssh_network_allowlist_refused():
    need_ssh()
    ws, _ = ssh_ws("ssh-allowlist", extra='network = ["pypi.org"]\n')
    c = E.d.conn()
    try:
        r = term(c, ws, "true")
        check(not r.get("ok") and r["error"]["code"] == "sandbox_unavailable" and
              "not supported on the ssh backend" in r["error"]["message"], r)
    finally:
        c.close()


def t_docker_killed_container():
    need_docker()
    ws = make_ws(E.tmp, "docker-kill", docker_toml(), E.owner)
    c = E.d.conn()
    ok(term(c, ws, "true"), "first call")
    import hashlib as _h
    # The first container of a workspace is NAME-a (NAME-b after a recycle).
    cname = "vectora-" + _h.sha256(os.path.realpath(ws).encode()).hexdigest()[:16] + "-a"
    # The worker answers as soon as its process runs; the engine may list
    # the container as running a moment later (seen under ASan on 2 cores).
    deadline = time.time() + 10
    while True:
        name = [n for n in E.docker.run(["ps", "--format", "{{.Names}}"]).stdout.split()
                if n.startswith("vectora-")]
        if cname in name or time.time() > deadline:
            break
        time.sleep(0.1)
    check(cname in name, (cname, name))
    res = {}

    def inflight():
        c2 = E.d.conn()
        res["r"] = term(c2, ws, "sleep 60")
        c2.close()
    th = threading.Thread(target=inflight)
    th.start()
    time.sleep(0.5)
    t0 = time.time()
    E.docker.run(["kill", cname])
    th.join(30)
    check(not th.is_alive(), "the in-flight call did not end")
    r = res["r"]
    check(not r.get("ok") and r["error"]["code"] == "worker_crashed", r)
    notes.append("docker: container killed -> in-flight call failed in %.0f ms (%s)"
                 % ((time.time() - t0) * 1000, r["error"]["message"]))
    r = ok(term(c, ws, "echo back"), "the call after the kill")
    check(r["stdout"] == "back\n", r)
    c.close()


def t_docker_leftover_removed():
    need_docker()
    ws = make_ws(E.tmp, "docker-leftover", docker_toml(), E.owner)
    base = "vectora-" + hashlib.sha256(os.path.realpath(ws).encode()).hexdigest()[:16]
    # What a crashed earlier daemon could have left: containers under the
    # names a workspace's containers take (NAME-a is the first start's, so
    # without the clean-up the start would fail on a name conflict).
    left = [E.docker.run(["run", "-d", "--name", cname, E.image, "sleep", "600"]).stdout.strip()
            for cname in (base + "-a", base + "-b")]
    check(all(len(x) == 64 for x in left), ("docker run -d did not print the containers' ids", left))
    c = E.d.conn()
    r = ok(term(c, ws, "echo fresh"), "a start over leftover containers")
    check(r["stdout"] == "fresh\n", r)
    # By id, not by name: the new container may take NAME-b itself (a
    # start discarded for a policy read anew is followed by the next
    # instance's): a run of .ci/run saw the name listed after the start,
    # whose container it was unknown.
    ids = E.docker.run(["ps", "-a", "--no-trunc", "--format", "{{.ID}}"]).stdout.split()
    check(not set(left) & set(ids), ("a leftover container was not removed", [x[:12] for x in set(left) & set(ids)]))
    c.close()


def t_docker_policy_change_drains():
    # Rule 7 on docker: a changed policy starts a new container while the
    # old one finishes its in-flight call (alternating container names).
    need_docker()
    ws = make_ws(E.tmp, "docker-drain", docker_toml(), E.owner)
    c, c2 = E.d.conn(), E.d.conn()
    ok(term(c, ws, "true"), "warm")
    c.send({"id": 77, "tool": "terminal", "workspace": ws, "command": "sleep 2; echo finished"})
    time.sleep(0.5)
    cfg = os.path.join(ws, "vectora.toml")
    with open(cfg) as f:
        text = f.read()
    with open(cfg, "w") as f:
        f.write(text.replace('mask = [".env", "**/*.pem"]', 'mask = [".env", "**/*.pem", "*.key"]'))
    r2 = ok(term(c2, ws, "echo new-generation"), "a call under the new policy")
    check(r2["stdout"] == "new-generation\n", r2)
    r1 = c.recv()
    check(r1.get("id") == 77 and r1.get("ok") and r1.get("stdout") == "finished\n",
          ("the in-flight call on the old container did not finish", r1))
    check(r1["sandbox"]["generation"] < r2["sandbox"]["generation"], (r1["sandbox"], r2["sandbox"]))
    c.close()
    c2.close()


def t_docker_errors():
    need_docker()
    c = E.d.conn()
    ws = make_ws(E.tmp, "docker-noimage", BASE % "docker" + '[sandbox.docker]\nimage = "vectora-test:missing"\nhost = "%s"\n'
                 % E.docker.host, E.owner)
    r = term(c, ws, "true")
    check(not r.get("ok") and r["error"]["code"] == "sandbox_unavailable", r)
    check("not on the engine" in r["error"]["message"], r["error"]["message"])
    ws = make_ws(E.tmp, "docker-down", BASE % "docker" + '[sandbox.docker]\nimage = "x"\nhost = "unix://%s/nonexistent.sock"\n'
                 % E.tmp, E.owner)
    r = term(c, ws, "true")
    check(not r.get("ok") and r["error"]["code"] == "sandbox_unavailable", r)
    check("engine is not running" in r["error"]["message"], r["error"]["message"])
    ws = make_ws(E.tmp, "docker-nobin", BASE % "docker" + '[sandbox.docker]\nimage = "x"\ndocker = "/nonexistent/docker"\n',
                 E.owner)
    r = term(c, ws, "true")
    check(not r.get("ok") and "docker client" in r["error"]["message"], r)
    c.close()


def t_ssh_deploy_by_hash():
    need_ssh()
    wpath = os.path.join(E.remote, "bin", "vectora-worker")
    local, remote = ssh_ws("ssh-deploy")
    c = E.d.conn()
    ok(term(c, local, "true"), "first call")
    with open(DEPLOYED_WORKER, "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    with open(wpath, "rb") as f:
        check(hashlib.sha256(f.read()).hexdigest() == want, "the deployed worker differs")
    st1 = os.stat(wpath)
    # A second workspace: the hash matches, nothing is uploaded.
    local2, _ = ssh_ws("ssh-deploy2")
    ok(term(c, local2, "true"), "second workspace")
    st2 = os.stat(wpath)
    check((st1.st_ino, st1.st_mtime_ns) == (st2.st_ino, st2.st_mtime_ns), "the worker was uploaded again")
    # A corrupted remote copy is replaced (atomically: a new inode).
    with open(wpath, "rb") as f:
        data = bytearray(f.read())
    data[1000:1007] = b"garbage"
    with open(wpath + ".bad", "wb") as f:
        f.write(data)
    os.chmod(wpath + ".bad", 0o755)
    os.rename(wpath + ".bad", wpath)
    st2 = os.stat(wpath)
    local3, _ = ssh_ws("ssh-deploy3")
    ok(term(c, local3, "true"), "third workspace over a corrupted copy")
    with open(wpath, "rb") as f:
        check(hashlib.sha256(f.read()).hexdigest() == want, "the corrupted worker was not replaced")
    check(os.stat(wpath).st_ino != st2.st_ino, "the worker was not replaced by a rename")
    c.close()


def t_ssh_unknown_host_key():
    need_ssh()
    local, _ = ssh_ws("ssh-hostkey")
    kh = os.path.join(E.tmp, "other_known_hosts")
    with open(E.ssh.known_hosts) as f:
        host = f.read().split()[0]
    # A key of the right type that is not the server's.
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(E.tmp, "wrongkey")], check=True)
    with open(os.path.join(E.tmp, "wrongkey.pub")) as f:
        kt, kb = f.read().split()[:2]
    with open(kh, "w") as f:
        f.write("%s %s %s\n" % (host, kt, kb))
    os.chmod(kh, 0o644)
    toml_path = os.path.join(local, "vectora.toml")
    with open(toml_path) as f:
        t = f.read().replace(E.ssh.known_hosts, kh)
    with open(toml_path, "w") as f:
        f.write(t)
    c = E.d.conn()
    r = term(c, local, "true")
    check(not r.get("ok") and r["error"]["code"] == "sandbox_unavailable", r)
    check("known_hosts" in r["error"]["message"], r["error"]["message"])
    # An empty known_hosts: unknown, never accepted.
    with open(kh, "w") as f:
        pass
    r = term(c, local, "true")
    check(not r.get("ok") and "known_hosts" in r["error"]["message"], r)
    with open(kh) as f:
        check(f.read() == "", "the unknown host key was written to known_hosts")
    c.close()


def t_ssh_lockdown_refuses_no_bwrap():
    need_ssh()
    local, _ = ssh_ws("ssh-lockdown-nobwrap", server=E.ssh_nobwrap, extra="lockdown = true\n")
    c = E.d.conn()
    r = term(c, local, "echo ran")
    check(not r.get("ok") and r["error"]["code"] == "sandbox_unavailable", r)
    check("without bubblewrap" in r["error"]["message"], r["error"]["message"])
    check("ran" not in json.dumps(r), r)
    # The same remote with bubblewrap: lockdown runs.
    local2, _ = ssh_ws("ssh-lockdown", extra="lockdown = true\n")
    r = ok(term(c, local2, "echo ran"), "lockdown with bubblewrap")
    check(r["stdout"] == "ran\n" and r["sandbox"]["degraded"] == [], r)
    c.close()


def t_ssh_no_bwrap_degraded():
    need_ssh()
    local, remote = ssh_ws("ssh-nobwrap", server=E.ssh_nobwrap)
    c = E.d.conn()
    r = ok(term(c, local, "echo ran"), "no bubblewrap, no lockdown")
    check(r["stdout"] == "ran\n", r)
    deg = " ".join(r["sandbox"]["degraded"])
    check("no bubblewrap" in deg, r["sandbox"])
    # Without bwrap there are no namespaces: the layers must not claim them.
    check("namespaces" not in r["sandbox"]["layers"], r["sandbox"])
    st = E.d.status(local)
    check(st and "no bubblewrap" in " ".join(st["worker"]["degraded"]), st)
    # The file tools still hold the masks.
    r = c.call({"tool": "file_read", "workspace": local, "path": ".env"})
    check(not r.get("ok"), r)
    c.close()


def t_ssh_dropped_connection():
    need_ssh()
    local, _ = ssh_ws("ssh-drop")
    c = E.d.conn()
    ok(term(c, local, "true"), "first call")
    res = {}

    def inflight():
        c2 = E.d.conn()
        res["r"] = term(c2, local, "sleep 60")
        c2.close()
    th = threading.Thread(target=inflight)
    th.start()
    time.sleep(0.5)
    # The per-connection sshd processes (not the sessions' own children:
    # the remote jail is ended by the connection's end, as it would be).
    sess = [p for p in E.ssh.sessions() if (servers.comm(p) or "").startswith("sshd")]
    check(sess, "no sshd session to drop")
    t0 = time.time()
    for pid in sess:
        os.kill(pid, signal.SIGKILL)
    th.join(30)
    check(not th.is_alive(), "the in-flight call did not end")
    r = res["r"]
    check(not r.get("ok") and r["error"]["code"] == "worker_crashed", r)
    notes.append("ssh: connection dropped -> in-flight call failed in %.0f ms (%s)"
                 % ((time.time() - t0) * 1000, r["error"]["message"]))
    r = ok(term(c, local, "echo back"), "the call after the drop")
    check(r["stdout"] == "back\n", r)
    c.close()


def t_plan_prints_commands():
    need_docker()
    need_ssh()
    dock = make_ws(E.tmp, "plan-docker", docker_toml(), E.owner)
    r = subprocess.run([CLI, "plan", "-w", dock], capture_output=True, text=True)
    check(r.returncode == 0 and " run -i --rm --name vectora-" in r.stdout and "--cap-drop ALL" in r.stdout, r.stdout)
    local, _ = ssh_ws("plan-ssh")
    r = subprocess.run([CLI, "plan", "-w", local], capture_output=True, text=True)
    check(r.returncode == 0 and "StrictHostKeyChecking=yes" in r.stdout and "--launch-jail" in r.stdout, r.stdout)


def t_docker_pty_cli():
    """`vectora-sandbox shell` on a real terminal (pty.fork) in a docker
    workspace: the checks t_pty_jail makes on the local backend."""
    need_docker()
    ws = make_ws(E.tmp, "docker-pty", docker_toml(), E.owner)
    c = E.d.conn()
    jail_ids = ok(term(c, ws, "id -u; id -g"), "terminal")["stdout"].split()
    check(jail_ids[0] != "0" or not ROOT, jail_ids)
    t = PtyShell(E.d, ws)
    # Typed at once: before the CLI has even reached the daemon.
    t.write(b"echo TYPED-$((6*7))\n")
    check(t.expect(b"TYPED-42", 60), t.buf)
    t.write(b"echo U=$(id -u):$(id -g):$(tty) LEN=$(wc -c < .env); echo END$((0+1))\n")
    check(t.expect(b"END1\r\n", 15) and b"SECRET" not in t.buf, t.buf)
    m = re.search(rb"U=(\d+):(\d+):(/dev/pts/\d+) LEN=0\r\n", t.buf)
    check(m and [m.group(1).decode(), m.group(2).decode()] == jail_ids, (t.buf, jail_ids))
    t.write(b"echo x >> vectora.toml; echo RC=$?; pwd; echo END$((1+1))\n")
    check(t.expect(b"END2\r\n", 15) and (os.path.realpath(ws) + "\r\n").encode() in t.buf, t.buf)
    check(re.search(rb"RC=[1-9]", t.buf), t.buf)
    with open(os.path.join(ws, "vectora.toml")) as f:
        check(f.read() == docker_toml(), "vectora.toml was written from the container's terminal")
    check(t.resize_seen(40, 120), t.buf)
    t.write(b"exit 7\n")
    check(t.wait() == 7, t.buf)
    opens, ends = pty_audit(E.d.audit, ws)
    check(len(opens) == 1 and opens[0]["outcome"] == "ok" and opens[0]["sandboxed"], opens)
    check(len(ends) == 1 and ends[0]["target"] == {"pty": opens[0]["target"]["pty"], "exit_code": 7, "signal": 0}
          and ends[0]["sandboxed"], ends)
    c.close()


def ports_roundtrip(c, ws, command, port, body):
    """A server started in the background answers on the host's forwarded
    port across tool calls, is listed, and stops answering once stopped."""
    r = ok(c.call({"tool": "process_start", "workspace": ws, "command": command}), "process_start")
    check(r["sandboxed"], r)
    web = r["process"]
    check(http_get(port, 60) == body, "first GET")
    check(ok(term(c, ws, "echo between"), "terminal")["stdout"] == "between\n", "a tool call meanwhile")
    check(http_get(port) == body, "second GET, after another call")
    st = E.d.status(ws)
    check([(x["host"], x["listening"]) for x in st["ports"]] == [(port, True)] and st["ports"][0]["accepted"] >= 2, st)
    r = ok(c.call({"tool": "process_list", "workspace": ws}), "process_list")
    check([(p["process"], p["running"]) for p in r["processes"]] == [(web, True)], r)
    ok(c.call({"tool": "process_signal", "workspace": ws, "process": web, "signal": "KILL"}), "process_signal")
    end = time.time() + 20
    while ok(c.call({"tool": "process_output", "workspace": ws, "process": web, "wait_ms": 1000}),
             "process_output")["running"] and time.time() < end:
        pass
    check(http_get(port) is None, "still served after the server was stopped")


def t_docker_ports():
    """ports = [N] with network = false on docker (--network none): the
    relay over the worker channel reaches busybox httpd on the container's
    own loopback."""
    need_docker()
    port = free_port()
    ws = make_ws(E.tmp, "docker-ports", docker_toml("network = false\nports = [%d]\n" % port), E.owner,
                 {"index.html": "hello from the container\n"})
    c = E.d.conn()
    ports_roundtrip(c, ws, "exec httpd -f -p 127.0.0.1:%d -h ." % port, port, b"hello from the container\n")
    r = ok(term(c, ws, "cat /proc/net/dev"), "terminal")
    devs = [l.split(":")[0].strip() for l in r["stdout"].splitlines() if ":" in l and "|" not in l]
    check(devs == ["lo"], "network devices in the container: %s" % devs)
    c.close()


def t_ssh_ports():
    """ports on ssh: the relay over the same ssh connection reaches a server
    in the remote jail's own network namespace (the remote here is this
    host: on the host's network the server could not even bind the port the
    daemon listens on). A remote without bubblewrap has no namespace of the
    jail's: each connection is refused, saying why, and nothing loops back."""
    need_ssh()
    port = free_port()
    extra = "network = false\nports = [%d]\n" % port
    local, _ = ssh_ws("ssh-ports", extra=extra, remote_files={"index.html": "hello from the remote jail\n"})
    c = E.d.conn()
    ports_roundtrip(c, local, "exec python3 -m http.server %d --bind 127.0.0.1" % port, port,
                    b"hello from the remote jail\n")
    port2 = free_port()
    nb, _ = ssh_ws("ssh-ports-nobwrap", server=E.ssh_nobwrap, extra="network = false\nports = [%d]\n" % port2)
    ok(term(c, nb, "true"), "the unjailed worker starts")
    with socket.create_connection(("127.0.0.1", port2), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        s.settimeout(10)
        try:
            got = s.recv(100)
        except ConnectionResetError:  # closed with the request unread
            got = b""
        check(got == b"", "a connection was relayed to the remote host's own loopback: %r" % got)
    end = time.time() + 10
    while "need the jail's own network namespace" not in E.d.log_text() and time.time() < end:
        time.sleep(0.1)
    check("need the jail's own network namespace" in E.d.log_text(), E.d.log_text()[-2000:])
    st = E.d.status(nb)
    check(st["ports"][0]["connections"] == 0 and st["ports"][0]["accepted"] == 1, st["ports"])
    c.close()


def measure():
    """Cold start (first call on a fresh workspace: spawn, handshake, the
    call) and warm `exec /bin/true` round trips through the daemon."""
    need_docker()
    need_ssh()
    c = E.d.conn()
    rows = []
    for backend in ("local", "docker", "ssh"):
        cold, warm = [], []
        for i in range(5):
            name = "bench-%s-%d" % (backend, i)
            if backend == "local":
                ws = make_ws(E.tmp, name, BASE % "local", E.owner)
            elif backend == "docker":
                ws = make_ws(E.tmp, name, docker_toml(), E.owner)
            else:
                ws, _ = ssh_ws(name)
            t0 = time.perf_counter()
            ok(c.call({"tool": "terminal", "workspace": ws, "argv": ["/bin/true"]}), "cold")
            cold.append(time.perf_counter() - t0)
        for _ in range(200):
            t0 = time.perf_counter()
            ok(c.call({"tool": "terminal", "workspace": ws, "argv": ["/bin/true"]}), "warm")
            warm.append(time.perf_counter() - t0)
        warm.sort()
        rows.append((backend, statistics.median(cold) * 1000, statistics.median(warm) * 1000, warm[180] * 1000))
    c.close()
    lines = ["%-7s cold start median %7.1f ms   warm exec /bin/true median %6.2f ms (p90 %6.2f ms)" % r for r in rows]
    for l in lines:
        notes.append(l)
    out = os.environ.get("VECTORA_BENCH_OUT")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")


TESTS = [
    ("daemon serves local, docker and ssh workspaces side by side (terminal, file_read, file_write, file_edit)",
     t_side_by_side),
    ("rootless podman beside local through the daemon (the four tools), and embedded", t_podman_side_by_side),
    ("docker: no capabilities, no_new_privs, stacked seccomp, read-only root, protected vectora.toml",
     t_docker_container_shape),
    ("docker: lockdown has no network (a host listener is unreachable)", t_docker_lockdown_no_network),
    ("docker: a network allowlist through the relay in a --network none container", t_docker_network_allowlist),
    ("ssh: a network allowlist is refused with a clear error", t_ssh_network_allowlist_refused),
    ("docker: a killed container fails the in-flight call; the next call recovers", t_docker_killed_container),
    ("docker: a leftover container of the same name is removed at start", t_docker_leftover_removed),
    ("docker: a policy change lets the in-flight call finish on the old container", t_docker_policy_change_drains),
    ("docker: clear errors for a missing image, an engine down, a missing client", t_docker_errors),
    ("ssh: the worker is deployed by sha256 (only when it differs, atomically)", t_ssh_deploy_by_hash),
    ("ssh: an unknown or wrong host key is refused, never accepted", t_ssh_unknown_host_key),
    ("ssh: lockdown refuses a remote without bubblewrap", t_ssh_lockdown_refuses_no_bwrap),
    ("ssh: without bubblewrap the worker runs degraded, reported in the result and status", t_ssh_no_bwrap_degraded),
    ("ssh: a dropped connection fails the in-flight call; the next call reconnects", t_ssh_dropped_connection),
    ("plan prints the docker and ssh command lines", t_plan_prints_commands),
    ("a missing .git/hooks or .git/config cannot be created from the jail (local, docker)", t_missing_hooks_protected),
    ("docker: the CLI's shell on a real terminal (uid, mask, vectora.toml, resize, typeahead, exit, audit)",
     t_docker_pty_cli),
    ("docker: a forwarded port reaches a server in a --network none container", t_docker_ports),
    ("ssh: a forwarded port reaches a server in the remote jail; without bubblewrap it is refused", t_ssh_ports),
    ("cold start and warm exec /bin/true, local vs docker vs ssh", measure),
]


def main():
    for p in (DAEMON, CLI, WORKER):
        if not os.access(p, os.X_OK):
            print(f"Bail out! {p} not built")
            return 1
    tmp = tempfile.mkdtemp(prefix="vectora-backends-")
    os.chmod(tmp, 0o755)
    try:
        only = os.environ.get("VECTORA_TEST_ONLY") or (sys.argv[1] if len(sys.argv) > 1 else None)
        setup(tmp, only)
        if E.podman_err:
            print(f"# SKIP: podman tests: {E.podman_err}", flush=True)
        if E.docker_err:
            print(f"# SKIP: docker tests: {E.docker_err}", flush=True)
        if E.ssh_err:
            print(f"# SKIP: ssh tests: {E.ssh_err}", flush=True)
        for name, fn in TESTS:
            if only and only not in fn.__name__:
                continue
            tap(name, fn)
    finally:
        for s in ("d", "docker", "ssh", "ssh_nobwrap", "podman"):
            obj = getattr(E, s, None)
            if obj:
                try:
                    obj.stop()
                except Exception:
                    traceback.print_exc()
        shutil.rmtree(tmp, ignore_errors=True)
    for n in notes:
        T.note(n)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
