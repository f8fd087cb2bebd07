#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One walk at a jail's start (the scale issue, item 2): each writable
root is read once for the masks, the protect globs AND the repositories
git would take there (git-scan.h), with one cache record per directory.

- A first start reads each directory once (it read each twice: the mask
  walk, then the git scan), and a restart with the tree unchanged reuses
  each record once.
- The cache never hides a repository: one made deep while the daemon was
  stopped, its parent's mtime set back (touch -d), is found after the
  restart, so its control files are sealed and it is not put aside as the
  jail's; and a .git that was no repository at the first start (no HEAD)
  and became one meanwhile, in a directory whose record is unchanged, is
  looked at afresh and found too.
- What the host makes after the walk is matched as if the walk came
  last: git_init's repository under a mask naming one of its files, a
  protect placeholder under its protect glob.
Daemon mode (the cache is the daemon's) and embedded mode where it applies.
Run as root and, through tests/helpers/as-user, as an ordinary user. TAP
output."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vdaemon import term  # noqa: E402
from vtest import CLI, DAEMON, OWNER, ROOT, Daemon, Tap, check, chown_tree, make_ws, run_cases  # noqa: E402

TOML = ('[sandbox]\nenabled = true\nmask = [".env", "**/.env", "**/*.pem"]\n'
        'protect = ["**/.vscode/tasks.json"]\n')
N1, N2 = 10, 10
N_DIRS = 1 + 1 + N1 + N1 * N2  # the root, tree/, tree/dNN, tree/dNN/eMM
notes = []


def make_tree(tmp, toml=TOML):
    """A case's own directory below tmp, its workspace and state directory."""
    tmp = tempfile.mkdtemp(dir=tmp)
    os.chmod(tmp, 0o755)
    ws = make_ws(tmp, "ws", toml, {"a.txt": "a\n"})
    for i in range(N1):
        for j in range(N2):
            os.makedirs(os.path.join(ws, "tree", "d%02d" % i, "e%02d" % j), exist_ok=True)
    with open(os.path.join(ws, "tree", "d01", "e01", "old.pem"), "w") as f:
        f.write("OLDPEM\n")
    chown_tree(ws)
    # A directory changed in the 2 s before a walk is read but not
    # recorded (walk_cache_racy): the tree settles first.
    time.sleep(3.1)
    return tmp, ws, os.path.join(tmp, "state")


def start_and_call(tmp, name, state, ws, command="true"):
    """A daemon on state, one call in ws: (the reply, dirs read, dirs
    reused), the daemon stopped."""
    d = Daemon(tmp, name, extra=["--state-dir", state], log_level="info")
    try:
        r = term(d.conn(), ws, command)
        w = d.status()["daemon"]["walk"]
        check(w["cached"] is True, ("no walk cache", w))
    finally:
        d.stop()
    return r, w["dirs_read"], w["dirs_reused"]


def embedded(ws, command):
    p = subprocess.run([CLI, "--no-daemon", "--json", "run", "-w", ws, command], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, VECTORA_SANDBOX_SOCKET="/nonexistent/vectora.sock"))
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"ok": False, "stdout": "", "stderr": p.stderr[-2000:], "exit": p.returncode}


def git_dir(path, head=True):
    """A minimal gitdir at path: what git checks for, and a config."""
    os.makedirs(os.path.join(path, "objects", "info"), exist_ok=True)
    os.makedirs(os.path.join(path, "refs", "heads"), exist_ok=True)
    with open(os.path.join(path, "config"), "w") as f:
        f.write("[core]\n\tbare = false\n")
    if head:
        with open(os.path.join(path, "HEAD"), "w") as f:
            f.write("ref: refs/heads/main\n")


def with_mtime_kept(parent, make):
    """make() run, then parent's mtime set back to what it was (touch -d);
    its ctime moves on regardless."""
    st = os.stat(parent)
    make()
    os.utime(parent, ns=(st.st_atime_ns, st.st_mtime_ns))
    check(os.stat(parent).st_mtime_ns == st.st_mtime_ns, "mtime not restored")


def own(path):
    if ROOT:
        os.lchown(path, OWNER.pw_uid, OWNER.pw_gid)


def quarantined(ws):
    return [os.path.join(d, n) for d, dirs, files in os.walk(ws) for n in dirs + files if ".vectora-quarantine" in n]


SEAL_PROBE = "echo '[core]\n\tfsmonitor = touch /tmp/x' >> {0}/config 2>/dev/null && echo WROTE; cat {0}/HEAD; echo end"


def check_sealed(r, ws, rel):
    """The repository at rel was the host's for the jail: its config not
    written (sealed read-only), its HEAD readable and not put aside."""
    check(r["ok"] and "WROTE" not in r["stdout"] and "ref: refs/heads/main" in r["stdout"], ("not sealed", rel, r))
    with open(os.path.join(ws, rel, "config")) as f:
        check("fsmonitor" not in f.read(), ("the config was written", rel))
    check(not quarantined(ws), ("a host repository was put aside as the jail's", quarantined(ws)))


def t_first_start_reads_each_directory_once(tmp):
    """A first start reads every directory of the writable root once (the
    masks, the protect globs and the git scan from one walk); a restart
    with nothing changed reuses each record once and reads (almost) no
    directory."""
    tmp, ws, state = make_tree(tmp)
    r, n_read, n_reused = start_and_call(tmp, "first", state, ws, "cat tree/d01/e01/old.pem; echo end")
    check(r["ok"] and "OLDPEM" not in r["stdout"] and r["stdout"].endswith("end\n"), r)
    # The root's .git placeholder is made after the walk: not read by it.
    check(N_DIRS <= n_read <= N_DIRS + 2, ("each directory read once at the first start", n_read, N_DIRS))
    r, n_read2, n_reused2 = start_and_call(tmp, "again", state, ws, "cat tree/d01/e01/old.pem; echo end")
    check(r["ok"] and "OLDPEM" not in r["stdout"], r)
    check(n_read2 <= 4 and N_DIRS - 2 <= n_reused2 <= N_DIRS + 2, ("restart: read, reused", n_read2, n_reused2))
    notes.append("%d directories: first start read %d, restart read %d and reused %d"
                 % (N_DIRS, n_read, n_read2, n_reused2))


def t_repo_made_deep_while_stopped(tmp):
    """A repository made deep while the daemon was stopped, its parent's
    mtime set back: after the restart it is the host's (sealed, not put
    aside), as a fresh uncached walk finds it; and a .pem made beside it
    the same way is masked."""
    tmp, ws, state = make_tree(tmp)
    start_and_call(tmp, "first", state, ws)
    parent = os.path.join(ws, "tree", "d07", "e08")
    with_mtime_kept(parent, lambda: git_dir(os.path.join(parent, "sub", ".git")))
    chown_tree(os.path.join(parent, "sub"))  # (a chown moves only the new entries' ctimes)
    pem = os.path.join(ws, "tree", "d03", "e02", "k.pem")
    with_mtime_kept(os.path.dirname(pem), lambda: open(pem, "w").write("HIDDENPEM\n"))
    own(pem)
    rel = "tree/d07/e08/sub/.git"
    r, n_read, _ = start_and_call(tmp, "after", state, ws, "cat tree/d03/e02/k.pem; " + SEAL_PROBE.format(rel))
    check("HIDDENPEM" not in r["stdout"], ("a .pem made while stopped is readable", r))
    check_sealed(r, ws, rel)
    # Embedded mode (no cache): the same walk, the same answer.
    r = embedded(ws, SEAL_PROBE.format(rel))
    check_sealed(r, ws, rel)


def t_dotgit_becomes_repo_in_cached_dir(tmp):
    """A .git whose HEAD names nothing at the first start (no repository:
    git looks further up) gets a valid HEAD, rewritten in place, while
    the daemon is stopped. No directory changed, so every record is used;
    the records keep the names .git and HEAD, so those directories are
    looked at afresh: the repository is found, sealed and not put aside."""
    tmp, ws, state = make_tree(tmp)
    rel = "tree/d04/e05/.git"
    git_dir(os.path.join(ws, rel))
    with open(os.path.join(ws, rel, "HEAD"), "w") as f:
        f.write("no repository yet\n")
    chown_tree(ws)
    time.sleep(3.1)
    start_and_call(tmp, "first", state, ws)
    start_and_call(tmp, "second", state, ws)  # the records of the settled tree written
    with open(os.path.join(ws, rel, "HEAD"), "r+") as f:
        f.write("ref: refs/heads/main\n")
        f.truncate()
    r, n_read, n_reused = start_and_call(tmp, "after", state, ws, SEAL_PROBE.format(rel))
    check(n_reused >= N_DIRS, ("the tree's records were not used", n_read, n_reused))
    check_sealed(r, ws, rel)


def call_in(tmp, mode, toml, files, command):
    """A fresh workspace of toml and files, one call in it in mode
    ("daemon": a daemon of its own with a state directory, or
    "embedded"): (the workspace, the reply)."""
    tmp = tempfile.mkdtemp(dir=tmp)
    os.chmod(tmp, 0o755)
    ws = make_ws(tmp, "ws", toml, files)
    chown_tree(ws)
    if mode == "daemon":
        return ws, start_and_call(tmp, "d", os.path.join(tmp, "state"), ws, command)[0]
    return ws, embedded(ws, command)


def t_git_init_repo_is_masked(tmp):
    """git_init = true makes the root's repository after the walk; a mask
    naming one of its files (HEAD) covers it in the jail, daemon and
    embedded, as it did when the walk came after the making."""
    for mode in ("daemon", "embedded"):
        ws, r = call_in(tmp, mode, '[sandbox]\nenabled = true\ngit_init = true\nmask = ["**/.git/HEAD"]\n',
                        {"a.txt": "a\n"}, "cat .git/HEAD; echo end")
        check(os.path.isfile(os.path.join(ws, ".git", "HEAD")), (mode, "no repository made"))
        check(r["ok"] and "ref:" not in r["stdout"] and r["stdout"].endswith("end\n"),
              (mode, "git_init's HEAD is not masked", r))


def t_protect_placeholder_is_sealed(tmp):
    """A protect glob naming a missing path of the user's (cfg/local.d)
    gets a placeholder (an empty directory) after the walk; it is sealed
    like a match of the walk: nothing can be created in it."""
    for mode in ("daemon", "embedded"):
        ws, r = call_in(tmp, mode, '[sandbox]\nenabled = true\nprotect = ["cfg/local.d"]\n', {"cfg/a.txt": "a\n"},
                        "echo x > cfg/local.d/planted 2>/dev/null && echo WROTE; echo end")
        check(os.path.isdir(os.path.join(ws, "cfg", "local.d")), (mode, "no placeholder made"))
        check(r["ok"] and "WROTE" not in r["stdout"] and r["stdout"].endswith("end\n"), (mode, "not sealed", r))
        check(not os.path.exists(os.path.join(ws, "cfg", "local.d", "planted")), (mode, "planted"))


CASES = [t_first_start_reads_each_directory_once, t_repo_made_deep_while_stopped, t_dotgit_becomes_repo_in_cached_dir,
         t_git_init_repo_is_masked, t_protect_placeholder_is_sealed]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK) or not shutil.which("bwrap"):
        tap.skip("one-walk", "the daemon, the CLI or bwrap is missing")
        sys.exit(tap.finish())
    rc = run_cases(tap, CASES, "vs-one-walk-")
    for n in notes:
        print("# " + n)
    sys.exit(rc)


if __name__ == "__main__":
    main()
