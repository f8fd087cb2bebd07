#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The start walk's cache (the scale issue, item 2): the masks and the
protect globs come from one walk of the tree, and what it learnt of each
directory is kept in the daemon's state directory, so a restarted daemon
reads only the directories that changed (status: daemon.walk.dirs_read /
dirs_reused). The cache never weakens a mask: a .env or .pem made while
the daemon was stopped, with its directory's mtime set back by the host
(touch -d), is masked all the same (the ctime, which nobody can set back,
says the directory changed), and a damaged or truncated cache is ignored
(every directory read again). The file is the daemon's own, mode 0600.
A masked file appearing under a running jail (masks over time) recycles
it, and the walks before the next jail (the sweep for repositories the
old jail made, then the new start's walk) take every unchanged directory
from the cache: neither reads the tree again, and a restart after is
still served from the cache with the new file masked.
Run as root and, through tests/helpers/as-user, as an ordinary user. TAP
output."""

import os
import shutil
import stat
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vdaemon import term  # noqa: E402
from vtest import CLI, DAEMON, OWNER, ROOT, Daemon, Tap, check, chown_tree, make_ws, run_cases  # noqa: E402

TOML = ('[sandbox]\nenabled = true\nmask = [".env", "**/.env", "**/*.pem"]\n'
        'protect = ["**/.vscode/tasks.json"]\n')
N1, N2 = 20, 20
N_DIRS = 1 + 1 + N1 + N1 * N2  # the root, tree/, tree/dNN, tree/dNN/eMM
notes = []


def make_tree(tmp):
    """A case's own directory below tmp, its workspace and state directory."""
    tmp = tempfile.mkdtemp(dir=tmp)
    os.chmod(tmp, 0o755)
    ws = make_ws(tmp, "ws", TOML, {"a.txt": "a\n", "tree/d03/e04/.vscode/tasks.json": "{}\n"})
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


def walk_counts(d):
    w = d.status()["daemon"]["walk"]
    check(w["cached"] is True, ("no walk cache", w))
    return w["dirs_read"], w["dirs_reused"]


def start_and_call(tmp, name, state, ws, command="true"):
    """A daemon on state, one call in ws: (the reply, dirs read, dirs
    reused, the daemon, stopped)."""
    d = Daemon(tmp, name, extra=["--state-dir", state], log_level="info")
    try:
        r = term(d.conn(), ws, command)
        n_read, n_reused = walk_counts(d)
    finally:
        d.stop()
    return r, n_read, n_reused


def plant_with_old_mtime(path, text):
    """A file made as the host would hide it: its directory's mtime set
    back to what it was (touch -d); the ctime moves on regardless."""
    parent = os.path.dirname(path)
    st = os.stat(parent)
    with open(path, "w") as f:
        f.write(text)
    if ROOT:
        os.lchown(path, OWNER.pw_uid, OWNER.pw_gid)
    os.utime(parent, ns=(st.st_atime_ns, st.st_mtime_ns))
    check(os.stat(parent).st_mtime_ns == st.st_mtime_ns, "mtime not restored")


def cached_once(tmp, ws, state):
    r, n_read, n_reused = start_and_call(tmp, "first", state, ws, "cat tree/d01/e01/old.pem; echo end")
    check(r["ok"] and "OLDPEM" not in r["stdout"], r)
    check(n_read >= N_DIRS, ("the first walk read fewer directories than there are", n_read))
    return n_read


def t_restart_reads_only_changed(tmp):
    """A restart with the tree unchanged reads (almost) no directory; one
    after three directories changed reads those; masks and protect globs
    found through the cache hold."""
    tmp, ws, state = make_tree(tmp)
    first = cached_once(tmp, ws, state)
    r, n_read, n_reused = start_and_call(tmp, "again", state, ws,
                                         "cat tree/d01/e01/old.pem; echo x >> tree/d03/e04/.vscode/tasks.json; echo end")
    check("OLDPEM" not in r["stdout"] and r["stdout"].endswith("end\n"), r)
    with open(os.path.join(ws, "tree/d03/e04/.vscode/tasks.json")) as f:
        check(f.read() == "{}\n", "a protected file found through the cache was written")
    # The root and the .git placeholder the first start made (so changed
    # just before its walk: not recorded) are read again; the tree is not.
    check(n_read <= 10 and n_reused >= N_DIRS - 2, ("unchanged tree, dirs read/reused", n_read, n_reused))
    notes.append("restart, tree unchanged: %d of %d directories read, %d reused" % (n_read, first, n_reused))
    # (Only what is new changes hands: a chown moves a ctime on.)
    with open(os.path.join(ws, "tree", "d05", "e05", "x.txt"), "w") as f:
        f.write("x\n")
    if ROOT:
        os.lchown(os.path.join(ws, "tree", "d05", "e05", "x.txt"), OWNER.pw_uid, OWNER.pw_gid)
    os.makedirs(os.path.join(ws, "tree", "d06", "new"))
    with open(os.path.join(ws, "tree", "d06", "new", ".env"), "w") as f:
        f.write("NEWENV\n")
    chown_tree(os.path.join(ws, "tree", "d06", "new"))
    r, n_read, n_reused = start_and_call(tmp, "changed", state, ws, "cat tree/d06/new/.env; echo end")
    check("NEWENV" not in r["stdout"] and r["stdout"].endswith("end\n"), r)
    # Each changed directory once (the masks, the protect globs and the git
    # scan in one walk); the root and .git again while they are within 2 s
    # of a change.
    check(3 <= n_read <= 16, ("three directories changed, dirs read", n_read))
    notes.append("restart, 3 directories changed: %d read" % n_read)


def t_masked_appearing_reads_changed_only(tmp):
    """A .pem made deep in the tree while a jail runs: the next call
    cannot read it, and the two walks before that call's jail (the sweep
    of the old jail's repositories and the start's walk) read only the
    directories that changed, each taking the rest from the cache. A
    restart after reads the cache those walks left: the .pem still masked,
    the tree not read again."""
    tmp, ws, state = make_tree(tmp)
    first = cached_once(tmp, ws, state)
    d = Daemon(tmp, "running", extra=["--state-dir", state], log_level="info")
    try:
        c = d.conn()
        r = term(c, ws, "true")
        check(r["ok"], r)
        read0, reused0 = walk_counts(d)
        pem = os.path.join(ws, "tree", "d17", "e18", "late.pem")
        with open(pem, "w") as f:
            f.write("LATEPEM\n")
        if ROOT:
            os.lchown(pem, OWNER.pw_uid, OWNER.pw_gid)
        r = term(c, ws, "cat tree/d17/e18/late.pem; echo end")
        out = r.get("stdout", "")
        check("LATEPEM" not in out and out.endswith("end\n"), ("a .pem made under a running jail was read", r))
        read1, reused1 = walk_counts(d)
    finally:
        d.stop()
    n_read, n_reused = read1 - read0, reused1 - reused0
    # Two walks: each reads the changed directory (and the root and .git
    # while they are within 2 s of a change) and takes the others.
    check(n_read <= 20, ("the walks after a masked file appeared read the tree again", n_read, n_reused))
    check(n_reused >= 2 * (N_DIRS - 10), ("a walk after a masked file appeared did not use the cache", n_read, n_reused))
    notes.append("masks over time: the walks after a .pem appeared read %d directories, took %d of 2 x %d from the "
                 "cache" % (n_read, n_reused, first))
    r, n_read, n_reused = start_and_call(tmp, "restarted", state, ws, "cat tree/d17/e18/late.pem; echo end")
    check("LATEPEM" not in r["stdout"] and r["stdout"].endswith("end\n"), ("readable after a restart", r))
    check(n_read <= 10 and n_reused >= N_DIRS - 2, ("the restart after did not use the cache", n_read, n_reused))


def t_secret_added_with_mtime_set_back(tmp):
    """While the daemon is stopped, a .env and a .pem are made deep in the
    cached tree and their directories' mtimes set back: both are masked
    after the restart."""
    tmp, ws, state = make_tree(tmp)
    cached_once(tmp, ws, state)
    plant_with_old_mtime(os.path.join(ws, "tree", "d07", "e08", ".env"), "HIDDENENV\n")
    plant_with_old_mtime(os.path.join(ws, "tree", "d19", "e19", "k.pem"), "HIDDENPEM\n")
    r, n_read, _ = start_and_call(tmp, "after", state, ws, "cat tree/d07/e08/.env tree/d19/e19/k.pem; echo end")
    out = r.get("stdout", "")
    check("HIDDENENV" not in out and "HIDDENPEM" not in out and out.endswith("end\n"), ("readable in the jail", r))
    check(n_read >= 2, ("the changed directories were not read", n_read))


def damage(state, how):
    cdir = os.path.join(state, "walk-cache")
    files = [os.path.join(cdir, f) for f in os.listdir(cdir)]
    check(files, "no cache file")
    for p in files:
        with open(p, "r+b") as f:
            data = bytearray(f.read())
            if how == "flip":
                data[len(data) // 2] ^= 0x40
            else:
                data = data[:len(data) // 2]
            f.seek(0)
            f.truncate()
            f.write(bytes(data))


def corrupt_case(tmp, how):
    tmp, ws, state = make_tree(tmp)
    first = cached_once(tmp, ws, state)
    plant_with_old_mtime(os.path.join(ws, "tree", "d11", "e12", "c.pem"), "CORRUPTPEM\n")
    damage(state, how)
    r, n_read, n_reused = start_and_call(tmp, "after", state, ws, "cat tree/d11/e12/c.pem; echo end")
    check("CORRUPTPEM" not in r["stdout"] and r["stdout"].endswith("end\n"), ("readable in the jail", r))
    check(n_read >= first and n_reused == 0, ("a damaged cache was used", n_read, n_reused))


def t_flipped_cache_is_ignored(tmp):
    """A cache with one byte changed: every directory read again, the
    .pem made meanwhile masked."""
    corrupt_case(tmp, "flip")


def t_truncated_cache_is_ignored(tmp):
    """A cache cut in half (a torn write): the same."""
    corrupt_case(tmp, "truncate")


def t_cache_is_private(tmp):
    """The cache directory is 0700 and its files 0600, the daemon's own;
    a cache file another user could have written is not read."""
    tmp, ws, state = make_tree(tmp)
    first = cached_once(tmp, ws, state)
    cdir = os.path.join(state, "walk-cache")
    st = os.stat(cdir)
    check(stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid(), oct(st.st_mode))
    for f in os.listdir(cdir):
        st = os.stat(os.path.join(cdir, f))
        check(stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid(), (f, oct(st.st_mode)))
        os.chmod(os.path.join(cdir, f), 0o666)
    _, n_read, n_reused = start_and_call(tmp, "after", state, ws)
    check(n_read >= first and n_reused == 0, ("a cache file open to others was used", n_read, n_reused))


CASES = [t_restart_reads_only_changed, t_masked_appearing_reads_changed_only, t_secret_added_with_mtime_set_back, t_flipped_cache_is_ignored,
         t_truncated_cache_is_ignored, t_cache_is_private]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK) or not shutil.which("bwrap"):
        tap.skip("walk-cache", "the daemon, the CLI or bwrap is missing")
        sys.exit(tap.finish())
    rc = run_cases(tap, CASES, "vs-walk-cache-")
    for n in notes:
        print("# " + n)
    sys.exit(rc)


if __name__ == "__main__":
    main()
