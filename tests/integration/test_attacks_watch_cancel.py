#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on masks over time (fan-hub.c, watch.c: the fanotify group as
root, inotify as an ordinary user) and on cancellation (server.c,
request.c, the MCP server), as the agent inside a jail and as another
client of the daemon. Each case is an attack; those that found a hole
failed before their fix. TAP output."""

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vdaemon import SANDBOX, term  # noqa: E402
from vtest import CLI, DAEMON, Daemon, Tap, Skip, check, chown_tree, make_ws, run_cases  # noqa: E402

notes = []

# A background process in the jail that renames a directory back and forth
# for SECS seconds as fast as it can (python3: the host's, seen read-only).
RENAME_FLOOD = r"""python3 -c '
import os, time
end = time.time() + %d
n = 0
while time.time() < end:
    os.rename("t", "u"); os.rename("u", "t"); n += 2
print(n)'"""


def t_tree_rename_flood_spares_others(tmp):
    """The jail renames a directory holding 2 000 directories back and
    forth from a background process. Each move made the daemon walk the
    moved tree at once, on its loop, inside the drain that reads until the
    queue is empty: the drain never ended while the flood ran (a background
    process has no timeout), and another workspace's call waited the whole
    flood (13 s of 15 measured). The walk of a moved directory now happens
    once per read of the queue, whatever the number of moves: the other
    workspace's call is answered at once, and a .pem the host makes in the
    flooding workspace meanwhile is still masked."""
    if not shutil.which("python3"):
        raise Skip("no python3 on the host for the jail's flood")
    a = make_ws(tmp, "flooder", SANDBOX, {"x.txt": "x\n"})
    b = make_ws(tmp, "victim", SANDBOX, {"y.txt": "y\n"})
    for i in range(2000):
        os.makedirs(os.path.join(a, "t", "d%02d" % (i // 100), "e%03d" % (i % 100)))
    chown_tree(a)
    d = Daemon(tmp, "rename-d", log_level="info")
    try:
        c, cb = d.conn(), d.conn()
        check(term(c, a, "true")["ok"] and term(cb, b, "true")["ok"], "jails")
        r = c.call({"tool": "process_start", "workspace": a, "command": RENAME_FLOOD % 15})
        check(r.get("ok"), r)
        time.sleep(2)
        worst = 0.0
        for _ in range(3):
            t0 = time.monotonic()
            r = term(cb, b, "cat y.txt")
            took = time.monotonic() - t0
            worst = max(worst, took)
            check(r.get("ok") and r.get("stdout") == "y\n", r)
            time.sleep(0.5)
        notes.append("another workspace's call during a rename flood of a 2000-directory tree: worst %.2f s" % worst)
        check(worst < 3, "another workspace's call waited %.1f s while the jail renamed its tree" % worst)
        # The flood is still running: a .pem the host makes now, deep in the
        # tree being renamed, is masked by the next call.
        made = False
        for _ in range(1000):
            try:
                fd = os.open(os.path.join(a, "t" if _ % 2 == 0 else "u", "d19", "e099", "key.pem"), os.O_CREAT | os.O_WRONLY)
            except FileNotFoundError:
                continue  # renamed away meanwhile
            os.write(fd, b"PEMSECRET\n")
            os.close(fd)
            made = True
            break
        check(made, "the .pem could not be made during the flood")
        r = term(c, a, "cat t/d19/e099/key.pem u/d19/e099/key.pem 2>/dev/null; echo end")
        check("PEMSECRET" not in r.get("stdout", ""), ("the .pem is readable during the flood", r))
        c.close()
        cb.close()
    finally:
        d.stop()


# The jail makes xN/sub, then swaps xN for a symlink to a directory it
# cannot see, at once: the daemon's walk of what appeared must not go
# through the symlink (ATTACKS.md: the host never follows a path the agent
# shaped).
SWAP = r"""python3 -c '
import os
for i in range(300):
    d = "x%%d" %% i
    os.makedirs(d + "/sub")
    os.rename(d, d + ".old")
    os.symlink("%s", d)
print("done")'"""


def t_walk_never_follows_a_swapped_symlink(tmp):
    """A directory the jail cannot see (outside the workspace, not
    mounted in the jail) holds sub/.envrc. The jail makes xN/sub and swaps
    xN for a symlink to that directory before the daemon reads the queue
    (300 times): the daemon's walk of the new directory xN/sub opened the
    path by name, following the symlink, and reported the hidden
    sub/.envrc in host_run_files (and, as an ordinary user, put inotify
    watches on the hidden directory). The walk opens each directory
    beneath its root without following symlinks now."""
    if not shutil.which("python3"):
        raise Skip("no python3 on the host for the jail's script")
    a = make_ws(tmp, "swapper", SANDBOX, {"x.txt": "x\n"})
    priv = os.path.join(tmp, "private")
    os.makedirs(os.path.join(priv, "sub"))
    with open(os.path.join(priv, "sub", ".envrc"), "w") as f:
        f.write("export HIDDEN=1\n")
    os.chmod(priv, 0o700)
    d = Daemon(tmp, "swap-d", log_level="debug")
    try:
        c = d.conn()
        r = term(c, a, "test -e %s && echo visible; true" % priv)
        check(r["ok"] and "visible" not in r["stdout"], ("the hidden directory is visible in the jail", r))
        reported = []
        r = term(c, a, SWAP % priv)
        reported += r.get("host_run_files") or []
        reported += [(r.get("error") or {}).get("message", "")]
        r = term(c, a, "true")
        reported += r.get("host_run_files") or []
        leaked = [p for p in reported if "sub/.envrc" in p]
        check(not leaked, ("the daemon walked through the jail's symlink and reported", leaked))
        check(".envrc" not in d.log_text(), "the daemon's log names the hidden .envrc")
        c.close()
    finally:
        d.stop()


CASES = [t_tree_rename_flood_spares_others, t_walk_never_follows_a_swapped_symlink]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK) or not shutil.which("bwrap"):
        tap.skip("attacks-watch-cancel", "the daemon, the CLI or bwrap is missing")
        sys.exit(tap.finish())
    rc = run_cases(tap, CASES, "vs-attacks-wc-")
    for n in notes:
        print("# " + n)
    sys.exit(rc)


if __name__ == "__main__":
    main()
