#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Refusing privileges must not break ordinary tools (issue 25, section 8).

The real tools run in the jail: coreutils chown/chgrp/install/cp -p, tar
extracting an archive that carries ownership (--same-owner), Python's
os.chown family and shutil, git, and npm when installed. chown to the
jail's own uid and gid, or to -1, works (build scripts and installers
expect it); any other id is refused (by the filter itself: a chown of a
missing path to another id says EPERM, not ENOENT); xattrs stay refused
whatever their name (EOPNOTSUPP, which the tools take for "no xattrs
here": the filter cannot read the name, docs/threat-model.md).

Each combination runs once: through the CLI embedded (--no-daemon) and
through a daemon; invoked as root (the jail runs as the workspace's owner,
and, for a root-owned workspace, as the idmap uid through an idmapped
mount) and as an ordinary user (uid 65534 through setpriv when the suite
runs as root). In the jail a Python driver runs the tools and prints one
JSON line per check; each becomes a TAP subtest. The host then checks what
lies on disk.

As root, the docker and ssh backends too (the test servers' own dockerd and
sshd, as test-backends starts them; skipped loudly when unavailable), with
coreutils chown/chgrp: on ssh the jail's ids are the remote login's, which
only the worker's hello tells the host (the workspace's owner, for which
the launch compiled the program, is another user).

TAP through tests/lib/vtest.py; a case that cannot run here is a loud
SKIP (a failure under VECTORA_TEST_STRICT=1)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, ROOT, Daemon, Tap  # noqa: E402

T = Tap()
NOBODY = 65534
IDMAP_ID = 2147483646  # VS_IDMAP_UID, src/core/launch/idmap.h

# Runs in the jail (/usr/bin/python3 of the host's read-only /usr). One
# JSON line per check: {"name", "ok", "detail"} or {"name", "skip"}.
DRIVER = r'''
import errno, json, os, shutil, subprocess, sys, tarfile, tempfile

uid, gid = os.geteuid(), os.getegid()
other_uid = 0 if uid != 0 else 1
other_gid = 0 if gid != 0 else 1
work = sys.argv[1]
os.makedirs(work)
os.chdir(work)

def say(name, ok, detail=""):
    print(json.dumps({"name": name, "ok": bool(ok), "detail": str(detail)[-2000:]}), flush=True)

def run(*argv, **kw):
    return subprocess.run(list(argv), capture_output=True, text=True, **kw)

def res(r):
    return f"exit {r.returncode}: {r.stdout}{r.stderr}"

def owner(p):
    st = os.lstat(p)
    return (st.st_uid, st.st_gid)

def mk(p, data="x\n"):
    with open(p, "w") as f:
        f.write(data)

def raises(fn, err):
    try:
        fn()
    except OSError as e:
        return e.errno == err, f"errno {e.errno} ({e.strerror})"
    return False, "succeeded"

say("the jail's ids (from the inside)", True, f"uid {uid} gid {gid}")

# -- coreutils
mk("f"); os.makedirs("d/e"); mk("d/e/g")
r = run("chown", f"{uid}:{gid}", "f")
say("coreutils: chown $(id -u):$(id -g) f", r.returncode == 0 and not r.stderr, res(r))
r = run("chown", str(uid), "f")
say("coreutils: chown $(id -u) f", r.returncode == 0 and not r.stderr, res(r))
r = run("chgrp", str(gid), "f")
say("coreutils: chgrp $(id -g) f", r.returncode == 0 and not r.stderr, res(r))
r = run("chown", "-R", f"{uid}:{gid}", "d")
say("coreutils: chown -R $(id -u):$(id -g) d", r.returncode == 0 and not r.stderr, res(r))
r = run("chown", "-h", f":{gid}", "f")
say("coreutils: chown -h :$(id -g) f", r.returncode == 0 and not r.stderr, res(r))
r = run("install", "-o", str(uid), "-g", str(gid), "-m", "0644", "f", "f.installed")
say("coreutils: install -o $(id -u) -g $(id -g)", r.returncode == 0 and os.path.exists("f.installed"), res(r))
r = run("cp", "-p", "f", "f.copied")
say("coreutils: cp -p", r.returncode == 0 and not r.stderr, res(r))
r = run("chown", f"{other_uid}", "f")
say("coreutils: chown to another uid is refused",
    r.returncode != 0 and "Operation not permitted" in r.stderr and owner("f") == (uid, gid), res(r))
r = run("chgrp", f"{other_gid}", "f")
say("coreutils: chgrp to another group is refused",
    r.returncode != 0 and "Operation not permitted" in r.stderr and owner("f") == (uid, gid), res(r))

# -- tar: an archive carrying the jail's own ownership, and one carrying root's
os.makedirs("src/sub"); mk("src/sub/a"); mk("src/b")
r = run("tar", "--numeric-owner", f"--owner={uid}", f"--group={gid}", "-cf", "own.tar", "src")
r2 = run("tar", f"--owner={other_uid}", f"--group={other_gid}", "--numeric-owner", "-cf", "other.tar", "src")
if r.returncode or r2.returncode:
    say("tar: making the archives", False, res(r) + res(r2))
os.makedirs("x-own"); os.makedirs("x-other"); os.makedirs("x-default")
r = run("tar", "--same-owner", "--numeric-owner", "-xf", "own.tar", "-C", "x-own")
say("tar: --same-owner extracts an archive owned by the jail's own ids",
    r.returncode == 0 and not r.stderr and owner("x-own/src/sub/a") == (uid, gid), res(r))
r = run("tar", "--same-owner", "--numeric-owner", "-xf", "other.tar", "-C", "x-other")
say("tar: --same-owner of an archive owned by other ids fails (as for any user), files stay the jail's",
    r.returncode != 0 and "Cannot change ownership" in r.stderr and owner("x-other/src/b") == (uid, gid), res(r))
r = run("tar", "-xf", "other.tar", "-C", "x-default")
say("tar: a plain extraction of that archive works", r.returncode == 0 and not r.stderr, res(r))

# -- Python
mk("p"); os.symlink("p", "p.link")
steps = [
    ("os.chown(own)", lambda: os.chown("p", uid, gid)),
    ("os.chown(-1, -1)", lambda: os.chown("p", -1, -1)),
    ("os.chown(own uid, -1)", lambda: os.chown("p", uid, -1)),
    ("os.lchown(own)", lambda: os.lchown("p.link", uid, gid)),
    ("os.chown(follow_symlinks=False)", lambda: os.chown("p.link", -1, gid, follow_symlinks=False)),
    ("shutil.chown(user, group)", lambda: shutil.chown("p", uid, gid)),
]
fd = os.open("p", os.O_RDONLY)
steps.append(("os.fchown(own)", lambda: os.fchown(fd, uid, gid)))
steps.append(("os.chown(dir_fd=...)", lambda: os.chown("p", uid, gid, dir_fd=os.open(".", os.O_RDONLY))))
for what, fn in steps:
    try:
        fn()
        say(f"python: {what}", owner("p") == (uid, gid), owner("p"))
    except OSError as e:
        say(f"python: {what}", False, e)
for what, fn, err in [
        ("os.chown to another uid is refused", lambda: os.chown("p", other_uid, -1), errno.EPERM),
        ("os.chown to another gid is refused", lambda: os.chown("p", -1, other_gid), errno.EPERM),
        ("os.fchown to another uid is refused", lambda: os.fchown(fd, other_uid, gid), errno.EPERM),
        ("os.lchown to another gid is refused", lambda: os.lchown("p.link", uid, other_gid), errno.EPERM),
        # The filter refuses before the kernel looks at the path.
        ("the refusal is the filter's (a missing path: EPERM, not ENOENT)",
         lambda: os.chown("/nonexistent/f", other_uid, -1), errno.EPERM),
        ("own ids pass the filter (a missing path: ENOENT)",
         lambda: os.chown("/nonexistent/f", uid, gid), errno.ENOENT),
        # xattrs: the name is in memory, the filter cannot tell user.* apart.
        ("os.setxattr('user.x') says EOPNOTSUPP (xattrs stay refused)",
         lambda: os.setxattr("p", "user.x", b"1"), errno.EOPNOTSUPP),
        ("os.setxattr('security.capability') is refused",
         lambda: os.setxattr("p", "security.capability", b"\x01\x00\x00\x02" + b"\x00" * 16), errno.EOPNOTSUPP),
        ("os.setxattr('trusted.x') is refused", lambda: os.setxattr("p", "trusted.x", b"1"), errno.EOPNOTSUPP),
        ("os.setxattr('SECURITY.capability') is refused",
         lambda: os.setxattr("p", "SECURITY.capability", b"1"), errno.EOPNOTSUPP),
        ("os.setxattr on a descriptor is refused", lambda: os.setxattr(fd, "security.selinux", b"x"), errno.EOPNOTSUPP),
        ("os.setxattr without following links is refused",
         lambda: os.setxattr("p.link", "trusted.x", b"1", follow_symlinks=False), errno.EOPNOTSUPP)]:
    ok, detail = raises(fn, err)
    say(f"python: {what}", ok and owner("p") == (uid, gid), detail)
try:
    shutil.copy2("p", "p.copy2")
    say("python: shutil.copy2 (copies xattrs where it can)", os.path.exists("p.copy2"))
except OSError as e:
    say("python: shutil.copy2 (copies xattrs where it can)", False, e)
# Copies of a file that carries a user.* xattr (set on the host): the tools
# that only preserve xattrs where they can carry on without them.
xsrc = os.path.join(os.path.dirname(os.getcwd()), "xsrc")
try:
    has_x = "user.note" in os.listxattr(xsrc)
except OSError:
    has_x = False
if not has_x:
    for n in ("coreutils: cp -a of a file with a user.* xattr", "tar: --xattrs of a file with a user.* xattr"):
        print(json.dumps({"name": n, "skip": "the host could not set user.note on the workspace's file"}), flush=True)
else:
    r = run("cp", "-a", xsrc, "xcopy")
    say("coreutils: cp -a of a file with a user.* xattr", r.returncode == 0 and os.path.exists("xcopy"), res(r))
    r = run("sh", "-c", f"tar --xattrs -cf x.tar -C {os.path.dirname(xsrc)} xsrc && mkdir xt && tar --xattrs -xf x.tar -C xt")
    say("tar: --xattrs of a file with a user.* xattr (a warning, exit 0)",
        r.returncode == 0 and os.path.exists("xt/xsrc"), res(r))
with tarfile.open("own.tar") as t:
    os.makedirs("x-py")
    try:
        t.extractall("x-py", numeric_owner=True)
        say("python: tarfile.extractall", owner("x-py/src/sub/a") == (uid, gid))
    except OSError as e:
        say("python: tarfile.extractall", False, e)

# -- git
env = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a",
           GIT_COMMITTER_EMAIL="a@b", GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
# In the jail's own /tmp: a repository the jail makes under the writable
# paths is put aside for the host's sake (docs/config.md rule 6).
gitdir = tempfile.mkdtemp(prefix="git-")
r = run("sh", "-c", "cd %s && git init -q repo && cd repo && echo hi > a && git add a && git commit -qm one && "
        "cd .. && git clone -q repo clone && git -C clone log --oneline" % gitdir, env=env)
say("git: init, add, commit, clone", r.returncode == 0 and "one" in r.stdout, res(r))

# -- npm
if not shutil.which("npm"):
    print(json.dumps({"name": "npm: pack and install a local package", "skip": "npm is not installed"}), flush=True)
else:
    os.makedirs("npm/pkg"); os.makedirs("npm/app")
    mk("npm/pkg/package.json", '{"name":"vs-pkg","version":"1.0.0"}')
    mk("npm/pkg/index.js", "module.exports = 1;\n")
    mk("npm/app/package.json", "{}")
    e = dict(os.environ, HOME=os.path.abspath("npm"), npm_config_cache=os.path.abspath("npm/cache"))
    r = run("sh", "-c", "cd npm/pkg && npm pack --silent && cd ../app && "
            "npm install --offline --no-audit --no-fund ../pkg/vs-pkg-1.0.0.tgz", env=e)
    say("npm: pack and install a local package",
        r.returncode == 0 and os.path.exists("npm/app/node_modules/vs-pkg/index.js"), res(r))
'''


def user_prefix(uid, gid):
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]


class Setup:
    """Who runs the CLI (and the daemon), and whose workspace."""

    def __init__(self, name, prefix, ws_owner, jail_ids):
        self.name, self.prefix, self.ws_owner, self.jail_ids = name, prefix, ws_owner, jail_ids


def setups():
    if not ROOT:
        me = (os.geteuid(), os.getegid())
        return [Setup("as an ordinary user", [], me, me)]
    return [
        Setup("as root, a workspace owned by nobody", [], (NOBODY, NOBODY), (NOBODY, NOBODY)),
        Setup("as root, a root-owned workspace (idmapped)", [], (0, 0), (IDMAP_ID, IDMAP_ID)),
        Setup("as an ordinary user (uid 65534)", user_prefix(NOBODY, NOBODY), (NOBODY, NOBODY), (NOBODY, NOBODY)),
    ]


def chown_tree(path, ids):
    for d, dirs, files in os.walk(path):
        os.lchown(d, *ids)
        for n in files:
            os.lchown(os.path.join(d, n), *ids)


def env_for(home, xdg, sock=None):
    e = {k: v for k, v in os.environ.items()
         if k not in ("VECTORA_SANDBOX_SOCKET", "XDG_RUNTIME_DIR", "HOME")}
    e.update(HOME=home, XDG_RUNTIME_DIR=xdg)
    if sock:
        e["VECTORA_SANDBOX_SOCKET"] = sock
    return e


def run_driver(s, tmp, transport):
    """Runs the driver in a fresh workspace; returns (workspace, records, completed)."""
    base = os.path.join(tmp, f"{len(os.listdir(tmp))}")
    os.makedirs(base)
    os.chmod(base, 0o755)
    ws = os.path.join(base, "ws")
    home, xdg = os.path.join(base, "home"), os.path.join(base, "xdg")
    for d in (ws, home, xdg):
        os.makedirs(d)
    os.chmod(xdg, 0o700)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write('[sandbox]\nenabled = true\nrw_paths = ["."]\nnetwork = false\nno_gpu = true\n'
                "[sandbox.limits]\ntimeout = 120\n")
    with open(os.path.join(ws, "driver.py"), "w") as f:
        f.write(DRIVER)
    with open(os.path.join(ws, "xsrc"), "w") as f:
        f.write("carries a user xattr\n")
    try:
        os.setxattr(os.path.join(ws, "xsrc"), "user.note", b"1")
    except OSError:
        pass  # the driver says skip
    if ROOT:
        chown_tree(ws, s.ws_owner)
        caller = (NOBODY, NOBODY) if s.prefix else (0, 0)
        chown_tree(home, caller)
        chown_tree(xdg, caller)
    d = None
    try:
        if transport == "daemon":
            # Its socket and log in the caller's own runtime directory.
            d = Daemon(xdg, prefix=s.prefix, env=env_for(home, xdg))
            e = env_for(home, xdg, d.sock)
            args = [CLI]
        else:
            e = env_for(home, xdg)
            args = [CLI, "--no-daemon"]
        r = subprocess.run(s.prefix + args + ["exec", "-w", ws, "--", "python3", "driver.py",
                                              os.path.join(ws, "work")],
                           capture_output=True, text=True, env=e, timeout=300)
    finally:
        if d:
            d.stop()
    records = []
    for line in r.stdout.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            pass
    return ws, records, r


def check_setup(s, tmp, transport):
    label = f"{transport}, {s.name}"
    ws, records, r = run_driver(s, tmp, transport)
    if not records:
        T.ok(f"{label}: the driver ran in the jail", False, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        return
    first = records[0]
    T.ok(f"{label}: the jail runs as {s.jail_ids[0]}:{s.jail_ids[1]}",
         first["detail"] == f"uid {s.jail_ids[0]} gid {s.jail_ids[1]}", first["detail"])
    for rec in records[1:]:
        if "skip" in rec:
            T.skip(f"{label}: {rec['name']}", rec["skip"])
        else:
            T.ok(f"{label}: {rec['name']}", rec["ok"], rec["detail"])
    names = {rec["name"] for rec in records}
    T.ok(f"{label}: the driver got to its end (git and npm reported)",
         any(n.startswith("git:") for n in names) and any(n.startswith("npm:") for n in names),
         f"exit {r.returncode}\n{r.stderr}")
    # What the host sees: the jail's own ids, which on an idmapped
    # workspace are root's on disk; nothing given to anyone else.
    work = os.path.join(ws, "work")
    bad = []
    for d, dirs, files in os.walk(work):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if (st.st_uid, st.st_gid) != s.ws_owner:
                bad.append(f"{p}: {st.st_uid}:{st.st_gid}")
    T.ok(f"{label}: on the host every file is the workspace owner's ({s.ws_owner[0]}:{s.ws_owner[1]})",
         not bad and os.path.isdir(work), "\n".join(bad[:20]))


# -- other backends: the jail's ids are the container's (--user) or the ssh
# remote login's, which the host learns only from the worker's hello. With
# the local workspace owned by nobody and the remote login another user,
# the program compiled at launch (for nobody) is replaced before init.

BACKEND_SCRIPT = r"""
: > own-$$; f=own-$$
echo "ids $(id -u) $(id -g)"
chown "$(id -u):$(id -g)" $f && echo CHOWN-OWN-OK
chgrp "$(id -g)" $f && echo CHGRP-OWN-OK
chown 0:0 $f 2>/dev/null || echo CHOWN-OTHER-REFUSED
rm -f $f
"""
# (chown(1) looks at the file before calling chown(2), so a missing path
# cannot tell the filter's refusal from the kernel's here: the local cases
# above do that with Python.)
BACKEND_WANT = ["CHOWN-OWN-OK", "CHGRP-OWN-OK", "CHOWN-OTHER-REFUSED"]


def backend_case(label, ws, want_ids, home, xdg):
    r = subprocess.run([CLI, "--no-daemon", "exec", "-w", ws, "--", "sh", "-c", BACKEND_SCRIPT],
                       capture_output=True, text=True, env=env_for(home, xdg), timeout=300)
    out = r.stdout.split()
    T.ok(f"{label}: the jail runs as {want_ids[0]}:{want_ids[1]}",
         f"ids {want_ids[0]} {want_ids[1]}" in r.stdout, f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    for w in BACKEND_WANT:
        T.ok(f"{label}: {w.lower().replace('-', ' ')}", w in out, f"exit {r.returncode}\n{r.stdout}{r.stderr}")


def check_backends(tmp):
    """As root only: the test servers run a dockerd and sshd of their own."""
    if not ROOT:
        T.not_applicable("docker and ssh backends", "the test's dockerd and sshd need root")
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../helpers/backends"))
    import pwd
    import servers
    base = os.path.join(tmp, "backends")
    os.makedirs(base)
    os.chmod(base, 0o755)
    home, xdg = os.path.join(base, "home"), os.path.join(base, "xdg")
    os.makedirs(home)
    os.makedirs(xdg, mode=0o700)
    toml = '[sandbox]\nenabled = true\nrw_paths = ["."]\nbackend = "%s"\n'

    def ws(parent, name, text, owner):
        d = os.path.join(parent, name)
        os.makedirs(d)
        with open(os.path.join(d, "vectora.toml"), "w") as f:
            f.write(text)
        chown_tree(d, owner)
        return d

    try:
        ssh_user = pwd.getpwnam(servers.SSH_TEST_USER)
        ssh_ids = (ssh_user.pw_uid, ssh_user.pw_gid)
        remote = os.path.join(base, "remote")
        os.makedirs(os.path.join(remote, "bin"))
        chown_tree(remote, ssh_ids)
        for name, setenv in (("ssh", None), ("ssh without bwrap on the remote", {"VECTORA_BWRAP": "none"})):
            srv = servers.SshServer(base, "sshd-%d" % len(os.listdir(base)), client_owner=(0, 0), setenv=setenv)
            try:
                os.chmod(srv.identity, 0o644)
                n = "ssh%d" % len(os.listdir(base))
                text = toml % "ssh" + srv.toml(worker_path=os.path.join(remote, "bin", "vectora-worker"))
                # The "remote" is this host: the same path. The launch
                # compiles for its owner, nobody; the remote login is
                # another user, who may write there.
                local = ws(base, n, text, (NOBODY, NOBODY))
                os.chmod(local, 0o777)
                backend_case(f"embedded, {name} (remote uid {ssh_ids[0]}, local owner {NOBODY})", local, ssh_ids,
                             home, xdg)
            finally:
                srv.stop()
    except (servers.Unavailable, KeyError, RuntimeError) as e:
        T.skip("ssh backend: chown to the remote login's own ids", str(e))

    eng = None
    try:
        eng = servers.DockerEngine(base)
        image = eng.import_busybox(base)
        text = toml % "docker" + '[sandbox.docker]\nimage = "%s"\nhost = "%s"\n' % (image, eng.host)
        backend_case("embedded, docker (--user, no user namespace)", ws(base, "ws-docker", text, (NOBODY, NOBODY)),
                     (NOBODY, NOBODY), home, xdg)
    except (servers.Unavailable, RuntimeError) as e:
        T.skip("docker backend: chown to the container's own ids", str(e))
    finally:
        if eng:
            eng.stop()


def main():
    if not shutil.which("bwrap"):
        T.skip("tools in the jail", "bubblewrap is not installed")
        return T.finish()
    if not os.path.exists("/usr/bin/python3"):
        T.skip("tools in the jail", "/usr/bin/python3 is missing: the in-jail driver needs it")
        return T.finish()
    if ROOT and not shutil.which("setpriv"):
        T.skip("tools in the jail as an ordinary user", "setpriv is not installed (util-linux)")
    tmp = tempfile.mkdtemp(prefix="vectora-tools-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    os.chmod(tmp, 0o755)
    only = sys.argv[1:]
    try:
        for s in setups():
            if s.prefix and not shutil.which("setpriv"):
                continue
            for transport in ("embedded", "daemon"):
                if only and not any(o in f"{transport}, {s.name}" for o in only):
                    continue
                try:
                    check_setup(s, tmp, transport)
                except Exception:
                    T.ok(f"{transport}, {s.name}", False, traceback.format_exc())
        if not only or any(o in "backends" for o in only):
            try:
                check_backends(tmp)
            except Exception:
                T.ok("docker and ssh backends", False, traceback.format_exc())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
