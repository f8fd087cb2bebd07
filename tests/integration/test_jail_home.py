#!/usr/bin/env python3
"""Git and caches that work in the jail (issue 30, item 5; docs/config.md,
"The jail's home and git identity"): `git commit` in a fresh jail, daemon
and embedded, with the host user's identity (user.name and user.email
only, never through a link) or the neutral default; a write refused by a
sealed .git/config explained in the result (`sealed_note`); the jail's
home kept per workspace across jail restarts (`git config --global`, a
cache file), owned by the jail's uid, 0700, never visible to another
workspace's jail; `persistent_home = false` keeps the old tmpfs. TAP
output."""
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import time
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vmcp import Mcp  # noqa: E402
from vtest import CLI, OWNER, ROOT, Daemon, Tap, check, chown_tree, make_ws, needs_root, run_cases, wait_for  # noqa: E402

tap = Tap()
SANDBOX = "[sandbox]\nenabled = true\n"
DEFAULT_IDENT = "vectora agent/agent@vectora.invalid"
COMMIT = "git add -A && git commit -qm one && git log -1 --format=%an/%ae"


def git_ws(tmp, name, toml=SANDBOX, owner=None):
    """A workspace with a repository the host made (as its owner would)."""
    d = make_ws(tmp, name, toml, {"a.txt": "a\n"})
    subprocess.run(["git", "init", "-q", d], check=True, capture_output=True)
    if owner:
        for root, dirs, files in os.walk(d):
            for n in [root] + [os.path.join(root, f) for f in files]:
                os.lchown(n, owner.pw_uid, owner.pw_gid)
    else:
        chown_tree(d)
    return d


def state_dir(tmp):
    """The store the daemon and the CLI use by default (approval.c): the
    system store as root (0711, so the jail's uid reaches its home), else
    the user's own."""
    if ROOT:
        return "/var/lib/vectora-sandbox"
    x = os.environ.get("XDG_STATE_HOME")
    if x and os.path.isdir(x):
        return os.path.join(x, "vectora-sandbox")
    return os.path.expanduser("~/.local/state/vectora-sandbox")


MADE = []  # workspaces whose homes this run leaves in the store


def env_embedded(tmp):
    e = dict(os.environ)
    e.pop("VECTORA_SANDBOX_STATE_DIR", None)
    e["VECTORA_SANDBOX_SOCKET"] = "/nonexistent/vectora-sandbox.sock"
    return e


def run_embedded(tmp, ws, line):
    MADE.append(ws)
    r = subprocess.run([CLI, "--no-daemon", "run", "--json", "-w", ws, line], capture_output=True, text=True,
                       env=env_embedded(tmp), timeout=120, stdin=subprocess.DEVNULL)
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise AssertionError("run --json: %r" % (r,))


def daemon(tmp, name, extra=()):
    return Daemon(tmp, name, extra=extra)


def run_daemon(d, ws, line):
    MADE.append(ws)
    return d.call({"tool": "terminal", "workspace": ws, "command": line})


def home_of(tmp, ws, store=None):
    return os.path.join(store or state_dir(tmp), "homes", hashlib.sha256(os.path.realpath(ws).encode()).hexdigest())


def forget_homes():
    for ws in set(MADE):
        h = home_of(None, ws)
        shutil.rmtree(h, ignore_errors=True)
        for f in (h + ".gitconfig",):
            if os.path.exists(f):
                os.unlink(f)


def owner_identity():
    """What the jail should see for OWNER: its own git identity on the host, or the default."""
    home = OWNER.pw_dir
    name = email = None
    for f in (os.path.join(home, ".config/git/config"), os.path.join(home, ".gitconfig")):
        if os.path.isfile(f) and not os.path.islink(f):
            for k in ("name", "email"):
                r = subprocess.run(["git", "config", "--file", f, "user." + k], capture_output=True, text=True)
                if r.returncode == 0 and r.stdout.strip():
                    if k == "name":
                        name = r.stdout.strip()
                    else:
                        email = r.stdout.strip()
    return "%s/%s" % (name or "vectora agent", email or "agent@vectora.invalid")


def t_commit_daemon(tmp):
    """git commit works in a fresh jail through the daemon, with the owner's identity or the default."""
    ws = git_ws(tmp, "commit-d")
    with daemon(tmp, "commit") as d:
        r = run_daemon(d, ws, COMMIT)
    check(r.get("ok") and r.get("exit_code") == 0, "git commit in the jail: %r" % r)
    check(r["stdout"].strip() == owner_identity(), "the commit's author: %r" % r["stdout"])
    # The identity file is read-only in the jail: not written, replaced or removed.
    with daemon(tmp, "commit-ro") as d:
        r = run_daemon(d, ws, 'f=$GIT_CONFIG_SYSTEM; echo "[core]" >> $f || echo W; rm -f $f || echo R; '
                       'mv $f $f.x 2>/dev/null || echo M; cat $f | grep -c "\\[core\\]"')
    check(r["stdout"].split() == ["W", "R", "M", "0"], "the identity file from the jail: %r" % r)


def t_commit_embedded(tmp):
    """The same with --no-daemon."""
    ws = git_ws(tmp, "commit-e")
    r = run_embedded(tmp, ws, COMMIT)
    check(r.get("ok") and r.get("exit_code") == 0, "git commit in the jail: %r" % r)
    check(r["stdout"].strip() == owner_identity(), "the commit's author: %r" % r["stdout"])


def with_owner_config(fn):
    """Runs fn(owner) with a workspace owner whose ~/.gitconfig the test
    may write: vectora-test (scripts/install-deps), as root only."""
    if not ROOT:
        needs_root("writing another account's ~/.gitconfig for the jail to read")
    try:
        u = pwd.getpwnam("vectora-test")
    except KeyError:
        raise AssertionError("no account vectora-test (scripts/install-deps creates it)")
    cfg = os.path.join(u.pw_dir, ".gitconfig")
    if os.path.lexists(cfg):
        raise AssertionError("%s exists already; this case writes its own" % cfg)
    try:
        fn(u, cfg)
    finally:
        if os.path.lexists(cfg):
            os.unlink(cfg)


def t_host_identity(tmp):
    """The owner's user.name/user.email reach the jail, nothing else of its
    config (an alias, core.editor); a ~/.gitconfig that is a link to a
    root-only file is not followed as root, and a root daemon reads none
    the owner cannot read (the default identity)."""
    def case(u, cfg):
        with open(cfg, "w") as f:
            f.write('[user]\n\tname = "Host \\"Q\\" Person"\n\temail = host@example.test\n'
                    '[alias]\n\tleak = !echo host-alias\n[core]\n\teditor = host-editor\n')
        os.chown(cfg, u.pw_uid, u.pw_gid)
        ws = git_ws(tmp, "ident", owner=u)
        line = COMMIT + "; git config --get alias.leak; git config --get core.editor; echo end"
        with daemon(tmp, "ident") as d:
            r = run_daemon(d, ws, line)
        check(r.get("ok") and r["stdout"] == 'Host "Q" Person/host@example.test\nend\n', "host identity: %r" % r)
        r = run_embedded(tmp, ws, "git log -1 --format=%an/%ae")
        check(r["stdout"] == 'Host "Q" Person/host@example.test\n', "embedded: %r" % r)
        # A root daemon's monitor reads it as the owner, never root: one
        # the owner cannot read (root could) gives the default identity.
        os.chmod(cfg, 0)
        ws0 = git_ws(tmp, "ident-unreadable", owner=u)
        with daemon(tmp, "ident0") as d:
            r = run_daemon(d, ws0, COMMIT)
        check(r.get("exit_code") == 0 and r["stdout"].strip() == DEFAULT_IDENT, "mode 0, daemon: %r" % r)
        # A link to a root-only file: not read.
        os.unlink(cfg)
        secret = os.path.join(tmp, "root-only.gitconfig")
        with open(secret, "w") as f:
            f.write("[user]\n\tname = root-secret\n\temail = root@secret.test\n")
        os.chmod(secret, 0o600)
        os.symlink(secret, cfg)
        ws2 = git_ws(tmp, "ident-link", owner=u)
        r = run_embedded(tmp, ws2, COMMIT)
        check(r.get("exit_code") == 0 and r["stdout"].strip() == DEFAULT_IDENT, "through a link: %r" % r)
    with_owner_config(case)


def t_identity_follows_the_owners_file(tmp):
    """A root daemon keeps an owner's identity between starts while the
    owner's git config files stay as they were, and reads it again once
    one changed: one daemon, the file rewritten (same length) and then
    made unreadable to the owner, each settled past the 2 s in which a
    change is never trusted to show; each new workspace's jail sees the
    file as it is now."""
    def case(u, cfg):
        def write(name):
            with open(cfg, "w") as f:
                f.write("[user]\n\tname = %s\n\temail = kept@example.test\n" % name)
            os.chown(cfg, u.pw_uid, u.pw_gid)
            time.sleep(2.5)
        write("Name One")
        with daemon(tmp, "ident-kept") as d:
            seen = []
            for i, change in enumerate((None, lambda: write("Name Two"), lambda: (os.chmod(cfg, 0), time.sleep(2.5)))):
                if change:
                    change()
                ws = git_ws(tmp, "ident-kept-%d" % i, owner=u)
                r = run_daemon(d, ws, COMMIT)
                seen.append(r.get("stdout", "").strip())
        check(seen == ["Name One/kept@example.test", "Name Two/kept@example.test", DEFAULT_IDENT], seen)
    with_owner_config(case)


def t_owner_config_tells_nothing_of_root_files(tmp):
    """A root host reading the owner's global git config (to seal the
    paths it names) reads only the owner's own files: an include of a
    root-only file, or a ~/.gitconfig that is a link to one, is taken as
    missing, so a start tells the owner neither whether such a file exists
    nor its first line git cannot parse (attack review 11: refused with
    "/root/...:1: a line git config reading here does not understand").
    The owner's own file is still read: a hooksPath it names in the
    workspace is sealed."""
    def case(u, cfg):
        secret = os.path.join(tmp, "root-only-bad.gitconfig")
        with open(secret, "w") as f:
            f.write("[core]\n\thooksPath = hooks\nnot git config at all [\n")
        os.chmod(secret, 0o600)
        for how in ("include", "link"):
            if os.path.lexists(cfg):
                os.unlink(cfg)
            if how == "include":
                with open(cfg, "w") as f:
                    f.write("[include]\n\tpath = %s\n" % secret)
                os.chown(cfg, u.pw_uid, u.pw_gid)
            else:
                os.symlink(secret, cfg)
            ws = git_ws(tmp, "root-file-" + how, owner=u)
            r = run_embedded(tmp, ws, "echo ran")
            check(r.get("exit_code") == 0 and r.get("stdout") == "ran\n" and secret not in json.dumps(r),
                  "%s of a root-only file: %r" % (how, r))
        # The owner's .git file naming a gitdir of root's outside the
        # workspace: its config is not read for the owner either.
        os.unlink(cfg)
        gd = os.path.join(tmp, "root-gitdir")
        os.makedirs(os.path.join(gd, "objects"))
        os.makedirs(os.path.join(gd, "refs"))
        with open(os.path.join(gd, "HEAD"), "w") as f:
            f.write("ref: refs/heads/main\n")
        with open(os.path.join(gd, "config"), "w") as f:
            f.write("[core]\n\tbare = false\nnot git config at all [\n")
        os.chmod(gd, 0o700)
        ws = make_ws(tmp, "root-gitdir-ws", SANDBOX, {".git": "gitdir: %s\n" % gd})
        for root, dirs, files in os.walk(ws):
            for n in [root] + [os.path.join(root, f) for f in files]:
                os.lchown(n, u.pw_uid, u.pw_gid)
        r = run_embedded(tmp, ws, "echo ran")
        check(r.get("exit_code") == 0 and r.get("stdout") == "ran\n" and gd not in json.dumps(r),
              ".git naming a gitdir of root's: %r" % r)
        # The owner's own: read, what it names sealed.
        with open(cfg, "w") as f:
            f.write("[core]\n\thooksPath = .myhooks\n")
        os.chown(cfg, u.pw_uid, u.pw_gid)
        ws = git_ws(tmp, "own-hooks", owner=u)
        os.mkdir(os.path.join(ws, ".myhooks"))
        os.chown(os.path.join(ws, ".myhooks"), u.pw_uid, u.pw_gid)
        r = run_embedded(tmp, ws, "touch .myhooks/pre-commit 2>/dev/null && echo wrote || echo sealed")
        check(r.get("stdout") == "sealed\n", "the owner's hooksPath: %r" % r)
    with_owner_config(case)


def t_sealed_note(tmp):
    """`git config user.email` fails EBUSY on the sealed .git/config: the
    result says why (sealed_note), daemon and embedded; a command without
    EBUSY has none."""
    ws = git_ws(tmp, "sealed")
    line = "git config user.email x@y.test"
    with daemon(tmp, "sealed") as d:
        r = run_daemon(d, ws, line)
        ok = run_daemon(d, ws, "true")
    check(r["exit_code"] != 0 and "Device or resource busy" in r["stderr"], "the sealed write: %r" % r)
    check("sealed" in r.get("sealed_note", "") and "git config --global" in r["sealed_note"], "daemon: %r" % r)
    check("sealed_note" not in ok, "a plain command: %r" % ok)
    r = run_embedded(tmp, ws, line)
    check("git config --global" in r.get("sealed_note", ""), "embedded: %r" % r)
    # The MCP server puts it in the text the model reads (embedded here).
    m = Mcp(ws, env_embedded(tmp), ("--no-daemon",))
    try:
        init = m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "test-jail-home", "version": "1"}})
        check("result" in init, init)
        m.notify("notifications/initialized")
        resp = m.call("terminal", command=line)
        text = "".join(c.get("text", "") for c in (resp.get("result") or {}).get("content", [])[:1])
        check("[sealed: " in text and "git config --global" in text, "the MCP text: %r" % resp)
    finally:
        m.close()
    # vectora-sandbox run (not --json) says it after the command's output.
    p = subprocess.run([CLI, "--no-daemon", "run", "-w", ws, line], capture_output=True, text=True,
                       env=env_embedded(tmp), timeout=120, stdin=subprocess.DEVNULL)
    err = p.stderr
    check(p.returncode != 0 and "note: " in err and err.index("Device or resource busy") < err.index("note: ") and
          "git config --global" in err, "run's stderr: %r" % err)


def t_global_survives_daemon(tmp):
    """`git config --global` and a cache file survive a daemon (and jail)
    restart, and the global identity wins over the host's."""
    ws = git_ws(tmp, "keep-d")
    with daemon(tmp, "keep1") as d:
        r = run_daemon(d, ws, "git config --global user.name 'Agent Set' && mkdir -p ~/.cache/npm && "
                       "echo cached > ~/.cache/npm/entry")
        check(r.get("exit_code") == 0, r)
    with daemon(tmp, "keep2") as d:
        r = run_daemon(d, ws, "cat ~/.cache/npm/entry; " + COMMIT)
    check(r.get("exit_code") == 0 and r["stdout"].splitlines()[0] == "cached", "after the restart: %r" % r)
    check(r["stdout"].splitlines()[1].startswith("Agent Set/"), "the jail's --global wins: %r" % r)
    h = home_of(tmp, ws)
    st = os.stat(h)
    check(st.st_mode & 0o7777 == 0o700 and st.st_uid == OWNER.pw_uid, "the home on the host: %o uid %d" %
          (st.st_mode, st.st_uid))


def t_global_survives_embedded(tmp):
    """Each --no-daemon run is a fresh jail: the home is kept between them."""
    ws = git_ws(tmp, "keep-e")
    r = run_embedded(tmp, ws, "git config --global alias.st status")
    check(r.get("exit_code") == 0, r)
    r = run_embedded(tmp, ws, "git config --global alias.st")
    check(r["stdout"] == "status\n", "the next jail: %r" % r)


def t_other_workspace(tmp):
    """Another workspace's jail (same owner) sees its own home only: not
    the first's files, not its host path."""
    a = git_ws(tmp, "ws-a")
    b = git_ws(tmp, "ws-b")
    with daemon(tmp, "two") as d:
        r = run_daemon(d, a, "echo secret-a > ~/a-only && ls ~")
        check(r.get("exit_code") == 0, r)
        ha = home_of(tmp, a)
        r = run_daemon(d, b, "ls -a ~; cat %s/a-only; ls %s" % (ha, os.path.dirname(ha)))
    check("a-only" not in r["stdout"] and "secret-a" not in r["stdout"], "b's jail: %r" % r)
    r = run_embedded(tmp, b, "cat ~/a-only; cat %s/a-only" % ha)
    check("secret-a" not in r["stdout"], "b's jail, embedded: %r" % r)
    check(os.path.exists(os.path.join(ha, "a-only")), "a's file is on the host, in a's home")


def t_home_off(tmp):
    """persistent_home = false: a fresh tmpfs home each jail, as before."""
    ws = git_ws(tmp, "off", SANDBOX + "persistent_home = false\n")
    r = run_embedded(tmp, ws, "echo x > ~/kept")
    check(r.get("exit_code") == 0, r)
    r = run_embedded(tmp, ws, "cat ~/kept 2>&1; " + COMMIT)
    check("No such file" in r["stdout"] and r["stdout"].strip().endswith(owner_identity()), "home off: %r" % r)
    check(not os.path.exists(home_of(tmp, ws)), "no kept home is made")


def t_private_store(tmp):
    """A root daemon's --state-dir kept 0700 stays 0700: its jails keep a
    tmpfs home (nothing is made in the store) and still run."""
    if not ROOT:
        needs_root("a store the jail's uid cannot reach needs a daemon as root")
    st = os.path.join(tmp, "private-state")
    os.makedirs(st, mode=0o700)
    ws = git_ws(tmp, "private")
    with daemon(tmp, "private", ("--state-dir", st)) as d:
        r = d.call({"tool": "terminal", "workspace": ws, "command": "echo x > ~/f && cat ~/f && echo $GIT_CONFIG_SYSTEM"})
    check(r.get("exit_code") == 0 and r["stdout"] == "x\n\n", r)
    check(os.stat(st).st_mode & 0o777 == 0o700 and not os.path.exists(os.path.join(st, "homes")),
          "the store: %o %r" % (os.stat(st).st_mode, os.listdir(st)))


def t_prune_gone(tmp):
    """A daemon starting removes the homes of workspaces that are gone, and
    only those; a link the jail left in a home is removed as a link, never
    followed (the host file it names stays)."""
    keep_dir = os.path.join(tmp, "prune-target")
    os.makedirs(keep_dir)
    with open(os.path.join(keep_dir, "precious"), "w") as f:
        f.write("host file\n")
    os.chmod(keep_dir, 0o755)
    gone, stays = git_ws(tmp, "prune-gone"), git_ws(tmp, "prune-stays")
    # A store of its own (0711, as the system store): no other daemon on
    # this host prunes it meanwhile.
    st = os.path.join(tmp, "prune-state")
    os.makedirs(st)
    os.chmod(st, 0o711)
    with daemon(tmp, "prune1", ("--state-dir", st)) as d:
        r = run_daemon(d, gone, "mkdir -p ~/.cache/a/b && echo x > ~/.cache/a/b/c && ln -s %s ~/link && "
                       "ln -s %s/precious ~/flink" % (keep_dir, keep_dir))
        check(r.get("exit_code") == 0, r)
        check(run_daemon(d, stays, "echo y > ~/y").get("exit_code") == 0, "the other workspace")
    hg, hs = home_of(tmp, gone, st), home_of(tmp, stays, st)
    check(os.path.isdir(hg) and os.path.isdir(hs), "both homes exist")
    shutil.rmtree(gone)
    with daemon(tmp, "prune2", ("--state-dir", st)) as d:
        ok = wait_for(lambda: "removed the kept homes" in d.log_text(), 10)
        log = d.log_text()
    check(ok and not os.path.lexists(hg) and not os.path.exists(hg + ".gitconfig") and
          not os.path.exists(hg + ".workspace"),
          "the gone workspace's home: %r" % (os.listdir(os.path.dirname(hg)) if os.path.isdir(hg) else "removed",))
    check(os.path.exists(os.path.join(hs, "y")), "the live workspace's home was kept")
    check(open(os.path.join(keep_dir, "precious")).read() == "host file\n", "a linked host file was touched")
    check("removed the kept homes of 1 workspace" in log, "the daemon's log: %s" % log[-500:])



if __name__ == "__main__":
    if not shutil.which("git"):
        tap.skip("git", "git is not installed")
        sys.exit(tap.finish())
    try:
        rc = run_cases(tap, [t_commit_daemon, t_commit_embedded, t_host_identity, t_identity_follows_the_owners_file,
                             t_owner_config_tells_nothing_of_root_files,
                             t_sealed_note,
                             t_global_survives_daemon, t_global_survives_embedded, t_other_workspace,
                             t_home_off, t_private_store, t_prune_gone], "vs-jail-home-")
    finally:
        forget_homes()
    sys.exit(rc)
