#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Masks over time at scale (the scale issue): a tree of 20 000
directories is watched whole (root: one fanotify mark per filesystem; an
ordinary user: inotify within the workspace's share of
fs.inotify.max_user_watches, said in status), and one workspace that
floods its watch queue does not recycle another's jail. Before: past 4096
directories every result said "degraded: masks over time: more than 4096
directories" and a .pem the host made deeper was readable by commands; an
inotify overflow in one workspace recycled every workspace on its
instance. Run as root and, through tests/helpers/as-user, as an ordinary
user. TAP output."""

import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vdaemon import SANDBOX, comm, proc_tree, term  # noqa: E402
from vtest import CLI, DAEMON, ROOT, Daemon, Skip, Tap, check, chown_tree, make_ws, needs_root, run_cases  # noqa: E402

N_DIRS = 20000
notes = []


def many_dirs(ws):
    """N_DIRS directories, 200 x 100, two levels down: the inotify walk met
    the last ones well past its first 4096."""
    for i in range(N_DIRS):
        os.makedirs(os.path.join(ws, "tree", "d%03d" % (i // 100), "e%02d" % (i % 100)))
    chown_tree(ws)


def plant_deep_pem(c, ws):
    """A .pem the host makes in the last directory of many_dirs(): the next
    call cannot read it."""
    with open(os.path.join(ws, "tree", "d199", "e99", "key.pem"), "w") as f:
        f.write("PEMSECRET\n")
    r = term(c, ws, "cat tree/d199/e99/key.pem; echo end")
    check("PEMSECRET" not in r.get("stdout", ""), ("readable in the jail", r))
    return r


def masks_notes(r):
    return [x for x in r.get("sandbox", {}).get("degraded", []) if x.startswith("masks over time")]


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def t_deep_secret_is_masked(tmp):
    """20 000 directories: no result says the watch is partial, and a .pem
    the host makes in the last directory and a .env in a new directory are
    not readable by the next terminal call."""
    ws = make_ws(tmp, "scale", SANDBOX, {"a.txt": "a\n"})
    many_dirs(ws)
    d = Daemon(tmp, "scale-d", log_level="info")
    try:
        c = d.conn()
        t0 = time.monotonic()
        r = term(c, ws, "cat a.txt")
        first = time.monotonic() - t0
        check(r["ok"] and r["stdout"] == "a\n", r)
        check(not masks_notes(r), ("a masks-over-time note", masks_notes(r)))
        st = d.ws_status(ws)
        check(st["watching_masks"] is True, st)
        mw = st["masks_watch"]
        check(mw["kind"] == ("fanotify" if ROOT else "inotify"), mw)
        if mw["kind"] == "inotify":
            check(N_DIRS < mw["used"] <= mw["budget"], mw)
        deep = os.path.join(ws, "tree", "d199", "e99", "key.pem")
        with open(deep, "w") as f:
            f.write("PEMSECRET\n")
        os.makedirs(os.path.join(ws, "fresh", "dir"))
        with open(os.path.join(ws, "fresh", "dir", ".env"), "w") as f:
            f.write("ENVSECRET=1\n")
        chown_tree(os.path.join(ws, "fresh"))
        # The very next call: the queue is read before it is served.
        r = term(c, ws, "cat tree/d199/e99/key.pem fresh/dir/.env; echo end")
        out = r.get("stdout", "")
        check("PEMSECRET" not in out and "ENVSECRET" not in out, ("readable in the jail", r))
        check(not masks_notes(r), ("a masks-over-time note", r))
        r = term(c, ws, "cat tree/d199/e99/key.pem fresh/dir/.env; echo end")
        check(r["ok"] and "SECRET" not in r["stdout"] and r["stdout"].endswith("end\n"), r)
        check(not masks_notes(r), r)
        notes.append("first call on %d directories (%s): %.0f ms" % (N_DIRS, mw["kind"], first * 1000))
        # What unrelated activity on the same filesystem costs the daemon:
        # 20 000 files made and removed outside any workspace.
        junk = os.path.join(tmp, "junk")
        os.makedirs(junk)
        before = cpu_ticks(d.pid)
        t0 = time.monotonic()
        for i in range(20000):
            p = os.path.join(junk, "f%d" % i)
            with open(p, "w") as f:
                f.write("x")
            os.unlink(p)
        spent = time.monotonic() - t0
        term(c, ws, "true")
        ticks = cpu_ticks(d.pid) - before
        notes.append("20000 files made and removed beside the workspace in %.2f s: the daemon spent %d ms of CPU (%s)" %
                     (spent, ticks * 1000 // os.sysconf("SC_CLK_TCK"), mw["kind"]))
        c.close()
    finally:
        d.stop()


def t_flood_spares_other_workspace(tmp):
    """Five workspaces (on a daemon with 4 inotify instances the first and
    the fifth share one): the fifth's queue overflows (20 000 files made
    while the daemon is stopped) while the first runs a command; that
    command finishes ok, and a masked file made during the flood in the
    fifth is masked in its jail all the same."""
    wss = [make_ws(tmp, "flood%d" % i, SANDBOX, {"a.txt": "a\n"}) for i in range(5)]
    victim, flooder = wss[0], wss[4]
    # A repository of the host's in the victim: the walk after the overflow
    # meets its names (HEAD, objects, refs) and must not take it for new.
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", victim], check=True)
        chown_tree(victim)
    d = Daemon(tmp, "flood-d", log_level="info")
    try:
        c = d.conn()
        for w in wss:
            r = term(c, w, "true")
            check(r["ok"], r)
        # The flooded directory is watched before the flood (inotify: a
        # directory made while the daemon is stopped has no watch yet).
        fl = os.path.join(flooder, "flood")
        os.makedirs(fl)
        chown_tree(fl)
        check(term(c, flooder, "true")["ok"], "flooder")
        worker = d.ws_status(victim)["worker"]["pid"]
        c2 = d.conn()
        c2.send({"id": 7, "tool": "terminal", "workspace": victim, "command": "sleep 3; echo done"})
        end = time.time() + 30
        while time.time() < end and not any(comm(p) == "sleep" for p in proc_tree(worker)):
            time.sleep(0.01)
        check(any(comm(p) == "sleep" for p in proc_tree(worker)), "the victim's sleep did not start")
        os.kill(d.pid, signal.SIGSTOP)
        try:
            for i in range(20000):
                with open(os.path.join(fl, "f%05d.txt" % i), "w") as f:
                    f.write("x")
            with open(os.path.join(flooder, "flood", "during.pem"), "w") as f:
                f.write("PEMSECRET\n")
            chown_tree(fl)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        r = c2.recv()
        check(r.get("ok") and r.get("stdout") == "done\n", ("the other workspace's command", r))
        if d.ws_status(victim)["masks_watch"]["kind"] == "inotify":
            check("walking the listed paths again" in d.log_text(), "the flood did not overflow the queue")
        r = term(c, flooder, "cat flood/during.pem; echo end")
        check("PEMSECRET" not in r.get("stdout", ""), ("the .pem made during the flood is readable", r))
        c.close()
        c2.close()
    finally:
        d.stop()


def t_mount_below_the_workspace(tmp):
    """A filesystem mounted below the workspace (a tmpfs here) is a
    filesystem of its own: its mark is made too, so a .pem the host makes
    on it is masked in the running jail (the inotify walk entered it; one
    mark on the workspace's filesystem alone does not see it)."""
    if not ROOT:
        needs_root("needs root to mount a tmpfs below the workspace")
    ws = make_ws(tmp, "submount", SANDBOX, {"a.txt": "a\n"})
    mnt = os.path.join(ws, "mnt")
    os.makedirs(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "vs-mask-scale", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("cannot mount a tmpfs: " + r.stderr.strip())
    d = Daemon(tmp, "submount-d", log_level="info")
    try:
        os.makedirs(os.path.join(mnt, "sub"))
        chown_tree(ws)
        c = d.conn()
        r = term(c, ws, "ls mnt")
        check(r["ok"] and r["stdout"] == "sub\n", r)
        with open(os.path.join(mnt, "sub", "key.pem"), "w") as f:
            f.write("PEMSECRET\n")
        r = term(c, ws, "cat mnt/sub/key.pem; echo end")
        check("PEMSECRET" not in r.get("stdout", ""), ("the .pem on the mounted filesystem is readable", r))
        c.close()
    finally:
        d.stop()
        subprocess.run(["umount", "-l", mnt])


def t_big_tree_among_small_ones(tmp):
    """24 small workspaces watched first, then one of 20 000 directories:
    an even share of the inotify budget (half of max_user_watches / 25)
    would leave the big one partial; what the small ones leave unused is
    its to take, so no result says the watch is partial and a .pem made in
    its last directory is masked. Under fanotify (root) there is no budget
    at all."""
    small = [make_ws(tmp, "small%02d" % i, SANDBOX, {"a.txt": "a\n"}) for i in range(24)]
    big = make_ws(tmp, "big", SANDBOX, {"a.txt": "a\n"})
    many_dirs(big)
    d = Daemon(tmp, "big-d", extra=["--max-workers", "40"], log_level="info")
    try:
        c = d.conn()
        for w in small:
            check(term(c, w, "true")["ok"], w)
        r = term(c, big, "true")
        check(r["ok"] and not masks_notes(r), ("a masks-over-time note", r))
        mw = d.ws_status(big)["masks_watch"]
        if mw["kind"] == "inotify":
            check(N_DIRS < mw["used"] <= mw["budget"], mw)
        plant_deep_pem(c, big)
        c.close()
    finally:
        d.stop()


CASES = [t_deep_secret_is_masked, t_flood_spares_other_workspace, t_mount_below_the_workspace, t_big_tree_among_small_ones]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK) or not shutil.which("bwrap"):
        tap.skip("mask-scale", "the daemon, the CLI or bwrap is missing")
        sys.exit(tap.finish())
    rc = run_cases(tap, CASES, "vs-mask-scale-")
    for n in notes:
        print("# " + n)
    sys.exit(rc)


if __name__ == "__main__":
    main()
