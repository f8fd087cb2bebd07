#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Repositories the agent plants do not run code in the host's git (issue
25, section 2). Git takes any directory holding HEAD, objects/ and refs/ as
a (bare) repository, and DIR/.git as a directory or a "gitdir:" file; the
jail can make any of these wherever it writes, and point the repository's
config (core.fsmonitor, hooks, diff.external, remote uploadpack) at a
program of its own. Each route is planted from the jail, then the host's
real git (status, diff, log -p, commit, fetch from a local remote) runs in
the workspace root and in a subdirectory: the program must not run (a
marker file it would create stays absent). Through the daemon and in
embedded mode (--no-daemon); as root, with a workspace of an ordinary user
(OWNER) and a root-owned one (served through an idmapped mount). The
planted probe is shown live first: the same plant made on the host runs.

TAP; a case that cannot run says SKIP (a failure under
VECTORA_TEST_STRICT=1)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, DAEMON, OWNER, ROOT, Daemon, Skip, Tap, check  # noqa: E402

SANDBOX = '[sandbox]\nenabled = true\nmask = [".env"]\n'
# The host user's HOME, for the daemon and the CLI too: their global git
# config is the one the host's git reads.
HOST_HOME = [None]


class Host:
    """The host user's git: a HOME whose global config trusts every
    directory (the host user owns them; as root the test runs git for
    them) and names nothing else, no system config."""

    def __init__(self, tmp):
        self.home = os.path.join(tmp, "host-home")
        self.markers = os.path.join(tmp, "markers")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.markers, exist_ok=True)
        os.chmod(self.markers, 0o1777)
        self.reset_global()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(HOME=self.home, GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=os.path.join(self.home, ".config"),
                        GIT_TERMINAL_PROMPT="0")
        self.remote = os.path.join(tmp, "remote.git")
        if not os.path.isdir(self.remote):
            self.git(tmp, "init", "-q", "--bare", self.remote)

    def reset_global(self):
        with open(os.path.join(self.home, ".gitconfig"), "w") as f:
            f.write("[safe]\n\tdirectory = *\n[user]\n\tname = host\n\temail = host@example.org\n"
                    "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")

    def git(self, cwd, *args, check_rc=False):
        p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=self.env, timeout=60)
        if check_rc and p.returncode:
            raise AssertionError(("git", args, p.stderr))
        return p

    def marker(self, name):
        return os.path.join(self.markers, name)

    def runs_nothing(self, ws, marker, dirs=("", "sub")):
        """status, diff, log -p, commit, fetch in each directory: marker
        stays absent."""
        for rel in dirs:
            d = os.path.join(ws, rel)
            if not os.path.isdir(d):
                continue
            with open(os.path.join(d, "touched.txt"), "a") as f:
                f.write("x\n")
            for args in (["status"], ["diff"], ["diff", "HEAD"], ["log", "-p", "-1"],
                         ["commit", "-q", "--allow-empty", "-m", "host"], ["fetch", "-q", "origin"],
                         ["fetch", "-q", self.remote]):
                self.git(d, *args)
                check(not os.path.exists(marker), "host `git %s` in %s ran the planted program" % (" ".join(args), d))


def own(ws, owner):
    """owner None: root-owned (as it is made); else chown the tree."""
    if owner is None or not ROOT:
        return
    for d, dirs, files in os.walk(ws):
        os.lchown(d, owner.pw_uid, owner.pw_gid)
        for f in files:
            os.lchown(os.path.join(d, f), owner.pw_uid, owner.pw_gid)


# ---------------------------------------------------------------- the plants
# Shell run in the jail (or, for the liveness probe, on the host): M is the
# marker; every program it names touches M.

def config_text(m, worktree=None, hooks=None):
    run = "touch %s; false" % m
    t = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"%s\"\n" % run
    if worktree:
        t += "\tworktree = %s\n" % worktree
    if hooks:
        t += "\thooksPath = %s\n" % hooks
    t += "[diff]\n\texternal = \"touch %s; true\"\n" % m
    t += "[remote \"origin\"]\n\turl = .\n\tuploadpack = \"touch %s; git-upload-pack\"\n" % m
    t += "[alias]\n\tst = \"!touch %s\"\n" % m
    return t


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def bare_plant(d, m, worktree, hooks_dir):
    """A bare repository in directory d (relative to the cwd) whose config
    names the program, with its worktree and hooks."""
    hook = "#!/bin/sh\ntouch %s\n" % m
    return ("mkdir -p {d}/objects/info {d}/refs/heads {hd} && printf 'ref: refs/heads/main\\n' > {d}/HEAD.new && "
            "printf %s > {d}/config && "
            "for h in pre-commit post-commit reference-transaction post-index-change fsmonitor-watchman; do "
            "printf %s > {hd}/$h && chmod +x {hd}/$h; done && mv {d}/HEAD.new {d}/HEAD"
            .format(d=d, hd=hooks_dir) % (sh_quote(config_text(m, worktree, hooks_dir)), sh_quote(hook)))


ROUTES = {}


def route(name, needs_repo, static=False, setup=None):
    """needs_repo: the host has a repository at the root first; static:
    the jail's writes are refused (read-only), nothing is put aside;
    setup(host, ws): what the host has besides."""
    def deco(fn):
        ROUTES[name] = (fn, needs_repo, static, setup)
        return fn
    return deco


@route("root-bare", needs_repo=False)
def plant_root_bare(ws, m):
    """HEAD, objects/, refs/, config at the workspace root: the .git
    placeholder (an empty directory) is no repository, so git goes on to
    the root itself."""
    return bare_plant(".", m, ws, os.path.join(ws, ".hk"))


@route("root-bare-head-aside", needs_repo=True)
def plant_root_head_aside(ws, m):
    """A real repository: its HEAD is git's writable state; moved aside,
    .git is no repository and git goes on to the root."""
    return "mv .git/HEAD .git/HEAD.aside && " + bare_plant(".", m, ws, os.path.join(ws, ".hk"))


@route("sub-bare", needs_repo=False)
def plant_sub_bare(ws, m):
    return bare_plant("sub", m, os.path.join(ws, "sub"), os.path.join(ws, "sub/.hk"))


@route("sub-bare-in-repo", needs_repo=True)
def plant_sub_bare_repo(ws, m):
    return bare_plant("sub", m, os.path.join(ws, "sub"), os.path.join(ws, "sub/.hk"))


@route("sub-dotgit", needs_repo=True)
def plant_sub_dotgit(ws, m):
    """git init in a subdirectory, its config then the jail's."""
    return ("git init -q sub && printf %s >> sub/.git/config && mkdir -p sub/.git/hooks && "
            "printf '#!/bin/sh\\ntouch %s\\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit"
            % (sh_quote(config_text(m)), m))


@route("sub-gitfile", needs_repo=False)
def plant_sub_gitfile(ws, m):
    """sub/.git a "gitdir:" file naming a repository elsewhere in the tree."""
    return (bare_plant("other/.r", m, os.path.join(ws, "sub"), os.path.join(ws, "other/.hk")) +
            " && printf 'gitdir: ../other/.r\\n' > sub/.git")


@route("submodule", needs_repo=True)
def plant_submodule(ws, m):
    """A submodule under the trusted repository: .git/modules/lib with the
    jail's config, lib/.git pointing there, a gitlink in the index: the
    host's plain git status at the root recurses into it."""
    return (bare_plant(".git/modules/lib", m, os.path.join(ws, "lib"), os.path.join(ws, ".git/modules/lib/hooks")) +
            " && mkdir -p lib && printf 'gitdir: ../.git/modules/lib\\n' > lib/.git && "
            "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),lib")


def hook_writes(m, paths):
    """Each path written as a hook that touches m, whatever else fails."""
    return "; ".join("mkdir -p $(dirname %s) 2>/dev/null; printf '#!/bin/sh\\ntouch %s\\n' > %s && chmod +x %s"
                     % (p, m, p, p) for p in paths) + "; true"


def setup_hookspath(host, ws):
    host.git(ws, "config", "core.hooksPath", ".githooks", check_rc=True)
    os.makedirs(os.path.join(ws, ".githooks"))
    with open(os.path.join(ws, ".githooks/pre-commit"), "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(os.path.join(ws, ".githooks/pre-commit"), 0o755)


@route("hookspath", needs_repo=True, static=True, setup=setup_hookspath)
def plant_hookspath(ws, m):
    """core.hooksPath = .githooks in the sealed config (husky, lefthook):
    the jail rewrites a hook there, the host's next commit runs it."""
    return hook_writes(m, [".githooks/pre-commit", ".githooks/post-commit"])


def setup_hookspath_missing(host, ws):
    host.git(ws, "config", "core.hooksPath", ".husky/_", check_rc=True)


@route("hookspath-missing", needs_repo=True, static=True, setup=setup_hookspath_missing)
def plant_hookspath_missing(ws, m):
    """The same where the directory does not exist yet: the jail would
    create it."""
    return hook_writes(m, [".husky/_/pre-commit", ".husky/_/post-commit"])


def setup_include(host, ws):
    host.git(ws, "config", "include.path", "../.gitconfig", check_rc=True)
    host.git(ws, "config", "includeIf.gitdir:/.path", "../.gitconfig-if", check_rc=True)


@route("include", needs_repo=True, static=True, setup=setup_include)
def plant_include(ws, m):
    """include.path = ../.gitconfig (and an includeIf) in the sealed
    config: the jail writes core.fsmonitor into what it names."""
    cfg = sh_quote("[core]\n\tfsmonitor = \"touch %s; false\"\n[core]\n\thooksPath = %s/.hk\n" % (m, ws))
    return ("printf %s > .gitconfig; printf %s > .gitconfig-if; " % (cfg, cfg)) + hook_writes(m, [".hk/pre-commit"])


def setup_global_hookspath(host, ws):
    with open(os.path.join(host.home, ".gitconfig"), "a") as f:
        f.write("[core]\n\thooksPath = %s/tools/hooks\n" % ws)


@route("global-hookspath", needs_repo=True, static=True, setup=setup_global_hookspath)
def plant_global_hookspath(ws, m):
    """The host user's global config names hooks inside the workspace."""
    return hook_writes(m, ["tools/hooks/pre-commit", "tools/hooks/post-commit"])


def setup_programs(host, ws):
    os.makedirs(os.path.join(ws, "tools"))
    for name in ("fsmon.sh", "ext.sh"):
        with open(os.path.join(ws, "tools", name), "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(os.path.join(ws, "tools", name), 0o755)
    host.git(ws, "config", "core.fsmonitor", os.path.join(ws, "tools/fsmon.sh"), check_rc=True)
    host.git(ws, "config", "diff.external", "tools/ext.sh --flag", check_rc=True)


@route("programs-in-workspace", needs_repo=True, static=True, setup=setup_programs)
def plant_programs(ws, m):
    """The sealed config names programs that live in the workspace
    (core.fsmonitor by its absolute path, diff.external relative to the
    root): the jail rewrites them."""
    return hook_writes(m, ["tools/fsmon.sh", "tools/ext.sh"])


def setup_global_relative(host, ws):
    setup_nested(host, ws)
    with open(os.path.join(host.home, ".gitconfig"), "a") as f:
        f.write("[core]\n\thooksPath = .hooks\n")


@route("global-hookspath-relative", needs_repo=True, static=True, setup=setup_global_relative)
def plant_global_relative(ws, m):
    """A relative core.hooksPath in the host user's global config: each
    repository's own work tree (the root's, and a nested one's) holds its
    hooks."""
    return hook_writes(m, [".hooks/pre-commit", ".hooks/post-commit", "sub/.hooks/pre-commit", "sub/.hooks/post-commit"])


def setup_nested(host, ws):
    host.git(os.path.join(ws, "sub"), "init", "-q", check_rc=True)
    host.git(os.path.join(ws, "sub"), "add", "-A", check_rc=True)
    host.git(os.path.join(ws, "sub"), "commit", "-q", "-m", "nested", check_rc=True)


@route("nested-existing", needs_repo=True, static=True, setup=setup_nested)
def plant_nested_existing(ws, m):
    """A repository the host has below the root (a nested clone): its
    config and hooks are sealed like the root's."""
    return ("printf %s >> sub/.git/config; " % sh_quote(config_text(m))) + hook_writes(m, ["sub/.git/hooks/pre-commit"])


# ---------------------------------------------------------------- the runs


def make(tmp, name, host, needs_repo, owner, setup=None):
    ws = os.path.join(tmp, name)
    host.reset_global()
    os.makedirs(os.path.join(ws, "sub"))
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write(SANDBOX)
    with open(os.path.join(ws, "sub/f.txt"), "w") as f:
        f.write("one\n")
    if needs_repo:
        host.git(ws, "init", "-q", check_rc=True)
        host.git(ws, "add", "-A", check_rc=True)
        host.git(ws, "commit", "-q", "-m", "host", check_rc=True)
        host.git(ws, "remote", "add", "origin", host.remote, check_rc=True)
    if setup:
        setup(host, ws)
    own(ws, owner)
    return ws


def in_jail(mode, d, ws, cmd):
    """The plant from the jail; the result (daemon: the call's, then the
    next call's; embedded: --json) and every host_run_files reported."""
    if mode == "daemon":
        c = d.conn()
        r = c.call({"tool": "terminal", "workspace": ws, "command": cmd})
        r2 = c.call({"tool": "terminal", "workspace": ws, "command": "true"})
        c.close()
        return r, set(r.get("host_run_files", [])) | set(r2.get("host_run_files", []))
    e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    e["HOME"] = HOST_HOME[0]
    if mode == "mcp":
        return mcp_call(ws, cmd, e)
    p = subprocess.run([CLI, "--no-daemon", "--json", "run", "-w", ws, cmd], capture_output=True, text=True,
                       env=e, timeout=120)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        raise AssertionError(("no JSON from the CLI", p.returncode, p.stdout, p.stderr))
    return r, set(r.get("host_run_files", []))


def mcp_call(ws, cmd, env):
    """The MCP server without a daemon (one warm worker): the call, then
    a second one, the server still running while the host's git runs."""
    p = subprocess.Popen([CLI, "mcp", "-w", ws], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, text=True)

    def rpc(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    r = rpc(2, "tools/call", {"name": "terminal", "arguments": {"command": cmd}})
    # The next call is served (by a fresh worker when this one was ended).
    r2 = rpc(3, "tools/call", {"name": "terminal", "arguments": {"command": "echo next"}})
    check(not r2.get("result", {}).get("isError") and "next" in json.dumps(r2), ("the call after", r2))
    MCP_OPEN.append(p)
    sc = r.get("result", {}).get("structuredContent", {})
    return {"ok": True, "mcp": r}, set(sc.get("host_run_files", []))


MCP_OPEN = []


def quarantined_on_disk(ws):
    for d, dirs, files in os.walk(ws):
        if any(".vectora-quarantine" in n for n in dirs + files):
            return True
    return False


def probe_live(tmp, host, name):
    """The plant made on the host (no jail) runs the program: the probe
    works, so its absence below means something."""
    fn, needs_repo, static, setup = ROUTES[name]
    ws = make(tmp, "live-" + name, host, needs_repo, None, setup)
    m = host.marker("live-" + name)
    p = subprocess.run(["sh", "-c", fn(ws, m)], cwd=ws, capture_output=True, text=True, env=host.env)
    check(p.returncode == 0, ("plant on the host", p.stderr))
    for rel in ("", "sub"):
        host.git(os.path.join(ws, rel), "status")
        host.git(os.path.join(ws, rel), "commit", "-q", "--allow-empty", "-m", "x")
    check(os.path.exists(m), "the planted program did not run on the host: the probe is dead")


def case(name, mode, owner_kind, d, tmp, host):
    fn, needs_repo, static, setup = ROUTES[name]
    tag = "%s-%s-%s" % (name, mode, owner_kind)
    owner = OWNER if owner_kind == "user" else None
    ws = make(tmp, tag, host, needs_repo, owner, setup)
    m = host.marker(tag)
    r, reported = in_jail(mode, d, ws, fn(ws, m) + " && echo PLANTED")
    if not r.get("ok"):
        # The daemon may end the jail under the call: that is the point.
        check(r.get("error", {}).get("code") == "worker_recycled", r)
    check(not os.path.exists(m), "the plant ran the program inside the jail (the probe is broken)")
    try:
        host.runs_nothing(ws, m)
    finally:
        while MCP_OPEN:  # the MCP server's worker lived on while the host's git ran
            q = MCP_OPEN.pop()
            q.stdin.close()
            q.wait(30)
    if not static:
        check(quarantined_on_disk(ws), "nothing was put aside")
        check(any(".vectora-quarantine" in p for p in reported), ("not reported in host_run_files", reported, r))


def background(d, tmp, host, owner_kind):
    """A background process of the jail plants a repository while no call
    runs (after process_start returned): the daemon ends the jail and puts
    it aside on the watch's event; the next result lists it."""
    tag = "background-" + owner_kind
    owner = OWNER if owner_kind == "user" else None
    ws = make(tmp, tag, host, False, owner)
    m = host.marker(tag)
    c = d.conn()
    r = c.call({"tool": "process_start", "workspace": ws,
                "command": "sleep 0.5; " + plant_sub_bare(ws, m) + "; sleep 30"})
    check(r.get("ok"), r)
    deadline = time.time() + 10
    while time.time() < deadline and not quarantined_on_disk(ws):
        time.sleep(0.05)
    host.runs_nothing(ws, m)
    r2 = c.call({"tool": "terminal", "workspace": ws, "command": "true"})
    c.close()
    check(any(p.endswith("sub/HEAD.vectora-quarantine") for p in r2.get("host_run_files", [])), r2)


def file_tools(d, tmp, host, mode, owner_kind):
    """The file tools alone plant one: objects/, refs/, a config naming the
    program, then HEAD, each a file_write with its parents made."""
    tag = "filetools-%s-%s" % (mode, owner_kind)
    owner = OWNER if owner_kind == "user" else None
    ws = make(tmp, tag, host, False, owner)
    m = host.marker(tag)
    writes = [("sub/objects/info/packs", ""), ("sub/refs/heads/.keep", ""),
              ("sub/config", config_text(m, os.path.join(ws, "sub"))), ("sub/HEAD", "ref: refs/heads/main\n")]
    reported = set()
    if mode == "daemon":
        c = d.conn()
        for path, text in writes:
            r = c.call({"tool": "file_write", "workspace": ws, "path": path, "content": text, "create_parents": True})
            check(r.get("ok") or r.get("error", {}).get("code") == "worker_recycled", r)
            reported |= set(r.get("host_run_files", []))
        c.close()
    else:
        e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
        e["HOME"] = HOST_HOME[0]
        for path, text in writes:
            p = subprocess.run([CLI, "--no-daemon", "--json", "write", "-w", ws, path], input=text,
                               capture_output=True, text=True, env=e, timeout=60)
            r = json.loads(p.stdout)
            check(r.get("ok"), r)
            reported |= set(r.get("host_run_files", []))
    host.runs_nothing(ws, m)
    check(any(p.endswith("sub/HEAD.vectora-quarantine") for p in reported), reported)


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip("planted-git", "%s or %s not built" % (DAEMON, CLI))
        sys.exit(tap.finish())
    if not shutil.which("bwrap") or not shutil.which("git"):
        tap.skip("planted-git", "bwrap or git not installed")
        sys.exit(tap.finish())
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="vs-plantgit-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    host = Host(tmp)
    HOST_HOME[0] = host.home
    tap.note("host git: " + host.git(tmp, "--version").stdout.strip())
    denv = dict(os.environ, HOME=host.home)
    d = Daemon(tmp, "d", extra=("--state-dir", os.path.join(tmp, "state")), env=denv)
    try:
        for name in ROUTES:
            if only and not any(o in name for o in only):
                continue
            tap.case(probe_live, tmp, host, name, name="probe-live " + name)
            for mode in ("daemon", "embedded", "mcp"):
                for owner_kind in (("user", "root") if ROOT else ("user",)):
                    tap.case(case, name, mode, owner_kind, d, tmp, host,
                             name="%s %s %s-owned" % (name, mode, owner_kind))
                    if d.p.poll() is not None:
                        tap.ok("the daemon survives it", False, d.log_text()[-3000:])
                        d = Daemon(tmp, "d2", extra=("--state-dir", os.path.join(tmp, "state")), env=denv)
        if not only or "file-tools" in only:
            for mode in ("daemon", "embedded"):
                for owner_kind in (("user", "root") if ROOT else ("user",)):
                    tap.case(file_tools, d, tmp, host, mode, owner_kind,
                             name="file tools plant one, %s, %s-owned" % (mode, owner_kind))
        if not only or "background" in only:
            for owner_kind in (("user", "root") if ROOT else ("user",)):
                tap.case(background, d, tmp, host, owner_kind, name="background process, daemon, %s-owned" % owner_kind)
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
