#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on masks over time (fan-hub.c, watch.c: the fanotify group as
root, inotify as an ordinary user) and on cancellation (server.c,
request.c, the MCP server), as the agent inside a jail, as the host racing
it, and as another client of the daemon. Each case is an attack. Those
that found a hole failed before their fix: a tree renamed back and forth
stalled the daemon (t_tree_rename_flood_spares_others), the walk of a new
directory went through a symlink the jail swapped in
(t_walk_never_follows_a_swapped_symlink), a bind-mounted workspace missed
its events (t_bind_mounted_workspace_after_cache), an .env saved over the
masked one during a flood was readable (t_atomic_save_during_overflow), a
file name forged log lines (t_names_cannot_forge_log_lines), the walk
after lost events missed a tree renamed under it
(t_rewalk_during_rename_flood), or a directory moved between two
directories between their reads (t_cross_dir_move_during_rewalk), or
a directory of mode 0300 hid what was below it (t_unreadable_directory).
The others held and stay as tests. Run as root and, through tests/helpers/as-user, as
an ordinary user. TAP output."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vdaemon import SANDBOX, term  # noqa: E402
from vtest import CLI, DAEMON, ROOT, Daemon, NotApplicable, Tap, Skip, check, chown_tree, make_ws, needs_root, run_cases, sleepers, wait_for  # noqa: E402
from vmcp import Mcp  # noqa: E402

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


def pem_in_flood(a):
    """Makes t|u/d19/e099/key.pem in a's tree while the jail renames t and u."""
    for k in range(1000):
        try:
            fd = os.open(os.path.join(a, "t" if k % 2 == 0 else "u", "d19", "e099", "key.pem"), os.O_CREAT | os.O_WRONLY)
        except FileNotFoundError:
            continue  # renamed away meanwhile
        os.write(fd, b"PEMSECRET\n")
        os.close(fd)
        return
    check(False, "the .pem could not be made during the flood")


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
        check(worst < (9 if sanitized(d.pid) else 3),
              "another workspace's call waited %.1f s while the jail renamed its tree" % worst)
        # The flood is still running: a .pem the host makes now, deep in the
        # tree being renamed, is masked by the next call.
        pem_in_flood(a)
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




def replies(c, ids, t=60):
    """One reply for each id of ids, keyed by id; a second reply for an id fails."""
    got = {}
    c.s.settimeout(t)
    while len(got) < len(ids):
        m = c.recv()
        check(m.get("id") not in got, ("two replies for one id", m, got.get(m.get("id"))))
        got[m.get("id")] = m
    c.s.settimeout(None)
    return got


def t_cancel_is_per_connection(tmp):
    """Another connection (another client, same uid) sends cancel naming
    the id of a call in flight on the first: not found, the command runs
    on; the same id as a string is another id; the owner's cancel ends it."""
    ws = make_ws(tmp, "cancel-owner", SANDBOX)
    d = Daemon(tmp, "cancel-owner-d", log_level="info")
    try:
        a, b = d.conn(), d.conn()
        a.send({"id": 1, "tool": "terminal", "workspace": ws, "command": "sleep 3101"})
        check(wait_for(lambda: sleepers(3101), 30), "sleep 3101 did not start")
        r = b.call({"tool": "cancel", "target": 1})
        check(r.get("ok") and r.get("found") is False, ("another connection's cancel found the call", r))
        a.send({"id": 2, "tool": "cancel", "target": "1"})
        got = replies(a, [2])
        check(got[2].get("found") is False, ("a string id cancelled an integer one", got))
        time.sleep(0.5)
        check(sleepers(3101), "the command ended after another connection's cancel")
        a.send({"id": 3, "tool": "cancel", "target": 1})
        got = replies(a, [1, 3])
        check(got[3].get("found") is True and got[1]["error"]["code"] == "cancelled", got)
        check(wait_for(lambda: not sleepers(3101), 5), "sleep 3101 still runs")
        a.close()
        b.close()
    finally:
        d.stop()


def t_cancel_races(tmp):
    """Cancels sent with their call in one write, so some land before the
    worker got it, some while it runs, some after its reply: exactly one
    reply per id, never a crash; a file_edit answered cancelled wrote
    nothing and one answered ok wrote all; a cancel sent 2 000 times for
    one call is harmless; connections closed while their workspace's first
    worker starts leave the daemon serving."""
    ws = make_ws(tmp, "cancel-race", SANDBOX, {"f.txt": "v0\n"})
    d = Daemon(tmp, "cancel-race-d", log_level="info")
    try:
        c = d.conn()
        check(c.call({"tool": "terminal", "workspace": ws, "command": "true"})["ok"], "first call")
        v = 0
        outcomes = {}
        for i in range(150):
            cid, kid = 1000 + 2 * i, 1001 + 2 * i
            if i % 2:
                call = {"id": cid, "tool": "terminal", "workspace": ws, "command": "echo %d" % i}
            else:
                call = {"id": cid, "tool": "file_edit", "workspace": ws, "path": "f.txt",
                        "old_string": "v%d" % v, "new_string": "v%d" % (v + 1)}
            # Some cancels a little later: after the worker got the call.
            delay = (i % 5) * 0.0005
            c.s.sendall(json.dumps(call).encode() + b"\n")
            if delay:
                time.sleep(delay)
            c.s.sendall(json.dumps({"id": kid, "tool": "cancel", "target": cid}).encode() + b"\n")
            got = replies(c, [cid, kid])
            code = "ok" if got[cid].get("ok") else got[cid]["error"]["code"]
            outcomes[code] = outcomes.get(code, 0) + 1
            check(code in ("ok", "cancelled"), got[cid])
            check(got[kid].get("ok"), got[kid])
            if call["tool"] == "file_edit":
                with open(os.path.join(ws, "f.txt")) as f:
                    now = f.read()
                if code == "ok":
                    v += 1
                check(now == "v%d\n" % v, ("file_edit answered %s but the file holds %r" % (code, now), got[cid]))
        notes.append("150 calls each cancelled at once or a moment later: %r" % outcomes)
        # 2 000 cancels of one running call.
        c.send({"id": 5000, "tool": "terminal", "workspace": ws, "command": "sleep 3102"})
        check(wait_for(lambda: sleepers(3102), 30), "sleep 3102 did not start")
        c.s.sendall(b"".join(json.dumps({"id": 6000 + k, "tool": "cancel", "target": 5000}).encode() + b"\n"
                             for k in range(2000)))
        got = replies(c, [5000] + [6000 + k for k in range(2000)])
        check(got[5000]["error"]["code"] == "cancelled", got[5000])
        check(all(got[6000 + k].get("ok") for k in range(2000)), "a cancel failed")
        check(wait_for(lambda: not sleepers(3102), 5), "sleep 3102 still runs")
        # Connections closed while their workspace's first worker starts.
        for k in range(20):
            w = make_ws(tmp, "cancel-spawn%02d" % k, SANDBOX)
            cc = d.conn()
            cc.send({"id": 1, "tool": "terminal", "workspace": w, "command": "sleep 3103"})
            cc.send({"id": 2, "tool": "cancel", "target": 1})
            if k % 2:
                time.sleep(0.01 * k)
            cc.close()
        time.sleep(1)
        r = c.call({"tool": "terminal", "workspace": ws, "command": "echo alive"})
        check(r.get("ok") and r.get("stdout") == "alive\n", r)
        check(wait_for(lambda: not sleepers(3103), 10), "a command of a closed connection still runs")
        check(d.p.poll() is None, "the daemon exited")
        c.close()
    finally:
        d.stop()


def mcp_env(d):
    e = dict(os.environ)
    e["VECTORA_SANDBOX_SOCKET"] = d.sock if d else "/nonexistent/vectora-sandbox.sock"
    return e


def mcp_cancel_abuse(tmp, d, n, tag):
    """notifications/cancelled naming an unknown id, a string for the
    running call's integer id, and an id already answered; 2 000 pings
    while a call runs: all answered, the call runs on until its own cancel;
    the client going away (stdin and stdout closed) while a call runs ends
    the command and the server."""
    ws = make_ws(tmp, "mcp-abuse-" + tag, SANDBOX)
    m = Mcp(ws, mcp_env(d), () if d else ("--no-daemon",))
    try:
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
        m.notify("notifications/initialized")
        r = m.call("terminal", command="echo first")
        check(not r["result"].get("isError"), r)
        old = m.next_id
        m.send_line(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
                                "params": {"name": "terminal", "arguments": {"command": "sleep %d" % n}}}))
        check(wait_for(lambda: sleepers(n), 30), "sleep %d did not start" % n)
        for bad in (999, "100", old, None, {"x": 1}):
            m.notify("notifications/cancelled", {"requestId": bad})
        m.p.stdin.write(b"".join(json.dumps({"jsonrpc": "2.0", "id": 10000 + k, "method": "ping"}).encode() + b"\n"
                                 for k in range(2000)))
        m.p.stdin.flush()
        seen = set()
        while len(seen) < 2000:
            r = m.recv()
            check(r.get("id") != 100, ("the call was answered after a wrong cancel", r))
            check(r.get("result") == {}, r)
            seen.add(r["id"])
        check(sleepers(n), "the call ended after cancels naming other ids")
        m.notify("notifications/cancelled", {"requestId": 100})
        check(wait_for(lambda: not sleepers(n), 5), "sleep %d still runs after its cancel" % n)
        m.send_line(json.dumps({"jsonrpc": "2.0", "id": 101, "method": "tools/call",
                                "params": {"name": "terminal", "arguments": {"command": "sleep %d" % (n + 1)}}}))
        check(wait_for(lambda: sleepers(n + 1), 30), "sleep %d did not start" % (n + 1))
        # A client that only closed our stdin still reads the answer
        # (docs/mcp.md); one gone for good closed our stdout too.
        m.p.stdin.close()
        m.p.stdout.close()
        check(wait_for(lambda: not sleepers(n + 1), 5), "sleep %d still runs after the client went" % (n + 1))
        try:
            m.p.wait(15)
        except Exception:
            check(False, "the server runs on after its client went")
    finally:
        if m.p.poll() is None:
            m.p.kill()
        m.p.wait()


def t_mcp_cancel_abuse(tmp):
    d = Daemon(tmp, "mcp-abuse-d", log_level="info")
    try:
        mcp_cancel_abuse(tmp, d, 3111, "daemon")
    finally:
        d.stop()
    mcp_cancel_abuse(tmp, None, 3121, "embedded")


def t_bind_mounted_workspace_after_cache(tmp):
    """Workspace B is a bind mount of a directory inside workspace A (one
    directory, two paths): the fanotify group turned a directory handle
    into one path, A's (the first below a root, kept in its cache), so a
    .pem the host made in B was never B's news and B's running jail read
    it. Each directory's paths through every marked mount are kept now,
    and each subscriber gets the event by the path below its roots."""
    if not ROOT:
        needs_root("needs root to bind-mount a workspace (and fanotify)")
    a = make_ws(tmp, "bind-a", SANDBOX, {"a.txt": "a\n"})
    other = make_ws(a, "other", SANDBOX, {"b.txt": "b\n", "x/old.txt": "o\n"})
    b = os.path.join(tmp, "bind-b")
    os.makedirs(b)
    r = subprocess.run(["mount", "--bind", other, b], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("cannot bind-mount: " + r.stderr.strip())
    d = Daemon(tmp, "bind-d", log_level="info")
    try:
        c = d.conn()
        check(term(c, a, "true")["ok"], "workspace a")
        if d.ws_status(a)["masks_watch"]["kind"] != "fanotify":
            raise Skip("no fanotify group: " + str(d.ws_status(a)["masks_watch"]))
        # The host writes in other/x: read while only a is watched.
        with open(os.path.join(other, "x", "junk.txt"), "w") as f:
            f.write("j\n")
        check(term(c, a, "true")["ok"], "workspace a again")
        r = term(c, b, "cat b.txt")
        check(r["ok"] and r["stdout"] == "b\n", r)
        with open(os.path.join(b, "x", "key.pem"), "w") as f:
            f.write("PEMSECRET\n")
        r = term(c, b, "cat x/key.pem; echo end")
        check("PEMSECRET" not in r.get("stdout", ""), ("the .pem made in the bind-mounted workspace is readable", r))
        # The same directory is a's too, by its other path.
        r = term(c, a, "cat other/x/key.pem; echo end")
        check("PEMSECRET" not in r.get("stdout", ""), ("the .pem is readable in the workspace that holds it", r))
        c.close()
    finally:
        try:
            d.stop()
        finally:
            subprocess.run(["umount", "-l", b])


def t_tmpfs_and_overlay_workspaces(tmp):
    """A workspace on a tmpfs (it has an fsid: fanotify) and one on an
    overlayfs (fanotify refuses it: inotify, said in status and the log):
    in both, a .pem the host makes in a new directory and an .env at the
    root are masked for the next call."""
    if not ROOT:
        needs_root("needs root to mount a tmpfs and an overlayfs")
    mnts, wss = [], {}
    d = None
    try:
        for kind in ("tmpfs", "overlay"):
            base = os.path.join(tmp, "fs-" + kind)
            os.makedirs(base)
            if kind == "tmpfs":
                argv = ["mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "vs-attacks", base]
            else:
                parts = [os.path.join(tmp, "ovl-" + x) for x in ("lower", "upper", "work")]
                for x in parts:
                    os.makedirs(x)
                argv = ["mount", "-t", "overlay", "vs-attacks", "-o",
                        "lowerdir=%s,upperdir=%s,workdir=%s" % tuple(parts), base]
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode != 0:
                raise Skip("cannot mount a %s: %s" % (kind, r.stderr.strip()))
            mnts.append(base)
            os.chmod(base, 0o755)
            wss[kind] = make_ws(base, "ws", SANDBOX, {"a.txt": "a\n"})
        d = Daemon(tmp, "fs-d", log_level="info")
        c = d.conn()
        for kind, ws in wss.items():
            r = term(c, ws, "cat a.txt")
            check(r["ok"] and r["stdout"] == "a\n", (kind, r))
            mw = d.ws_status(ws)["masks_watch"]
            check(mw["kind"] == ("fanotify" if kind == "tmpfs" else "inotify"), (kind, mw))
            os.makedirs(os.path.join(ws, "new", "deep"))
            chown_tree(os.path.join(ws, "new"))
            with open(os.path.join(ws, "new", "deep", "k.pem"), "w") as f:
                f.write("PEMSECRET\n")
            with open(os.path.join(ws, ".env"), "w") as f:
                f.write("ENVSECRET=1\n")
            r = term(c, ws, "cat new/deep/k.pem .env; echo end")
            check(r.get("ok") and "SECRET" not in r.get("stdout", ""), ("a secret is readable on the " + kind, r))
        check("cannot be watched whole" in d.log_text(), "the overlayfs fallback is not logged")
        c.close()
    finally:
        try:
            if d:
                d.stop()
        finally:
            for m in mnts:
                subprocess.run(["umount", "-l", m])


MKDIRS = r"""python3 -c '
import os
for i in range(%d):
    os.makedirs("many/d%%03d/e%%03d" %% (i // 1000, i %% 1000))
print("made")'"""


def t_jail_spends_the_watch_budget(tmp):
    """The jail makes 4 000 directories more than half of
    fs.inotify.max_user_watches (25 000 under fanotify). As an ordinary
    user (inotify, that half for the daemon) that is more than the
    workspace's budget: a lockdown
    workspace's next call is refused and says why (masks over time), an
    ordinary one's result says so in degraded, and another workspace keeps
    its masks and says nothing. As root (fanotify) nothing is partial: the
    lockdown workspace serves."""
    if not shutil.which("python3"):
        raise Skip("no python3 on the host for the jail's script")
    with open("/proc/sys/fs/inotify/max_user_watches") as f:
        limit = int(f.read())
    # The as-user twin lowers the limit for its run (as-user
    # --inotify-watches): 100 000 directories per jail under the default
    # limit took 227 s of the sanitizer run alone.
    if limit // 2 + 4000 > 104000:
        raise Skip("fs.inotify.max_user_watches is %d: more than 100 000 directories per jail to pass half of it" % limit)
    lock = make_ws(tmp, "budget-lock", SANDBOX + "lockdown = true\n", {"a.txt": "a\n"})
    plain = make_ws(tmp, "budget-plain", SANDBOX, {"a.txt": "a\n"})
    other = make_ws(tmp, "budget-other", SANDBOX, {"a.txt": "a\n"})
    d = Daemon(tmp, "budget-d", log_level="info")
    slow_stop = sanitized(d.pid)
    try:
        c = d.conn()
        for w in (lock, plain, other):
            r = term(c, w, "true")
            check(r["ok"], (w, r))
        kind = d.ws_status(lock)["masks_watch"]["kind"]
        # Under fanotify (no watch per directory) past 20 000 is the bound
        # the scale issue names; 100 000 there cost the root run 49 s of
        # making and about 60 s of removing the two trees.
        n = 25000 if kind == "fanotify" else limit // 2 + 4000
        r = term(c, lock, MKDIRS % n, timeout=600)
        check("made" in r.get("stdout", "") or r.get("error"), r)
        r = term(c, lock, "echo ran")
        if kind == "inotify":
            check(not r.get("ok") and "masks over time" in json.dumps(r.get("error")), ("lockdown served a partial watch", r))
        else:
            check(r.get("ok") and r.get("stdout") == "ran\n", ("lockdown refused under fanotify", r))
        r = term(c, plain, MKDIRS % n, timeout=600)
        r = term(c, plain, "echo ran")
        notes_ = [x for x in r.get("sandbox", {}).get("degraded", []) if x.startswith("masks over time")]
        check(bool(notes_) == (kind == "inotify"), ("the degraded note", kind, r))
        # The other workspace still watches what the host makes.
        os.makedirs(os.path.join(other, "fresh", "dir"))
        chown_tree(os.path.join(other, "fresh"))
        with open(os.path.join(other, "fresh", "dir", "key.pem"), "w") as f:
            f.write("PEMSECRET\n")
        r = term(c, other, "cat fresh/dir/key.pem; echo end")
        check(r.get("ok") and "PEMSECRET" not in r.get("stdout", ""), ("the other workspace's .pem is readable", r))
        check(not [x for x in r["sandbox"]["degraded"] if x.startswith("masks over time")], ("a note in the other", r))
        st = d.ws_status(other)["masks_watch"]
        notes.append("%d directories made by each of two jails (%s): the other workspace's watch %r" % (n, kind, st))
        c.close()
    finally:
        # ~96 000 inotify watches to drop: a sanitizer build's daemon takes
        # longer than the default 10 s to stop under load.
        d.stop(timeout=90 if slow_stop else 10)


def t_moved_in_and_linked_secrets(tmp):
    """What the host does to a workspace whose jail runs: a directory made
    outside the workspace on the same filesystem (its handle named outside
    any root when its .env was made) moved in whole; a directory of the
    workspace renamed under a masked name's parent; a hard link named .env
    to a file the jail could read: none of the secrets is readable by the
    next call (the moved directory is walked, the rename empties the
    handle cache, the jail's rebuild masks the other names of a masked
    file)."""
    ws = make_ws(tmp, "moved-in", SANDBOX, {"a.txt": "a\n", "notes.txt": "LINKSECRET\n", "sub/deep/x.txt": "x\n"})
    outside = os.path.join(tmp, "outside-dir")
    os.makedirs(os.path.join(outside, "inner"))
    d = Daemon(tmp, "moved-d", log_level="info")
    try:
        c = d.conn()
        check(term(c, ws, "cat a.txt sub/deep/x.txt")["ok"], "first call")
        # Named (cached) outside any root first: an event there.
        with open(os.path.join(outside, "inner", ".env"), "w") as f:
            f.write("MOVEDSECRET=1\n")
        check(term(c, ws, "true")["ok"], "a call between")
        with open(os.path.join(outside, "inner", "later.pem"), "w") as f:
            f.write("LATERSECRET\n")
        os.rename(outside, os.path.join(ws, "came"))
        r = term(c, ws, "cat came/inner/.env came/inner/later.pem; echo end")
        check("SECRET" not in r.get("stdout", ""), ("a secret in a directory moved in is readable", r))
        # A directory renamed, then a secret made in it by its new path.
        os.rename(os.path.join(ws, "sub"), os.path.join(ws, "renamed"))
        with open(os.path.join(ws, "renamed", "deep", "k.pem"), "w") as f:
            f.write("RENAMEDSECRET\n")
        r = term(c, ws, "cat renamed/deep/k.pem; echo end")
        check("SECRET" not in r.get("stdout", ""), ("a secret in a renamed directory is readable", r))
        # A hard link named .env to a file the jail reads.
        os.link(os.path.join(ws, "notes.txt"), os.path.join(ws, ".env"))
        r = term(c, ws, "cat notes.txt .env; echo end")
        check("LINKSECRET" not in r.get("stdout", ""), ("the masked file is readable by its other name", r))
        c.close()
    finally:
        d.stop()


CREATE_FLOOD = r"""python3 -c '
import os, time
os.makedirs("p%d", exist_ok=True)
os.chdir("p%d")
end = time.time() + %d
n = 0
while time.time() < end:
    fd = os.open("f%%d" %% n, os.O_CREAT | os.O_WRONLY)
    os.write(fd, b"x")
    os.close(fd)
    os.unlink("f%%d" %% n)
    n += 1
print(n)'"""


def sanitized(pid):
    """Whether the daemon runs a sanitizer build (its memory says nothing then)."""
    with open("/proc/%d/maps" % pid) as f:
        return "asan" in f.read()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def t_create_flood_memory_and_latency(tmp):
    """Two background processes of one jail make and remove files with new
    names as fast as they can for 20 s (every event distinct: nothing
    merges in the queue): the daemon's memory stays flat, another
    workspace's calls are answered at once, and a .env the host makes in
    the flooding workspace meanwhile is masked. (Measured on the reference
    machine over 30 s: 4.2 to 4.3 MB, calls under 10 ms, the daemon at 15%
    of a core.)"""
    if not shutil.which("python3"):
        raise Skip("no python3 on the host for the jail's flood")
    a = make_ws(tmp, "cflood", SANDBOX, {"x.txt": "x\n"})
    b = make_ws(tmp, "cflood-victim", SANDBOX, {"y.txt": "y\n"})
    d = Daemon(tmp, "cflood-d", log_level="info")
    try:
        c, cb = d.conn(), d.conn()
        check(term(c, a, "true")["ok"] and term(cb, b, "true")["ok"], "jails")
        before = rss_kib(d.pid)
        for k in range(2):
            r = c.call({"tool": "process_start", "workspace": a, "command": CREATE_FLOOD % (k, k, 20)})
            check(r.get("ok"), r)
        worst, peak = 0.0, before
        end = time.monotonic() + 18
        while time.monotonic() < end:
            t0 = time.monotonic()
            r = term(cb, b, "cat y.txt")
            worst = max(worst, time.monotonic() - t0)
            check(r.get("ok") and r.get("stdout") == "y\n", r)
            peak = max(peak, rss_kib(d.pid))
            time.sleep(1)
        with open(os.path.join(a, ".env"), "w") as f:
            f.write("ENVSECRET=1\n")
        r = term(c, a, "cat .env; echo end")
        check("ENVSECRET" not in r.get("stdout", ""), ("the .env is readable during the flood", r))
        notes.append("create flood, 2 processes, 20 s: daemon RSS %d -> peak %d KiB, another workspace's worst call %.3f s"
                     % (before, peak, worst))
        # A sanitizer build's daemon is several times slower: the bound is
        # against a stall (13 s before the fix), not a measure of speed.
        check(worst < (6 if sanitized(d.pid) else 2), "another workspace's call waited %.1f s" % worst)
        check(sanitized(d.pid) or peak - before < 16 * 1024, "the daemon grew by %d KiB" % (peak - before))
        c.close()
        cb.close()
    finally:
        d.stop()


def t_detached_calls_are_bounded(tmp):
    """Connections that each send 256 detached calls (`sleep`, a 4 s
    timeout) and close at once, four times over: the calls outlive their
    connections (no in-flight cap follows them) but the jail's process
    limit and each call's timeout bound them: at most the jail's pids run,
    all are gone after the timeout, the daemon's memory stays flat, and
    another workspace is served meanwhile."""
    ws = make_ws(tmp, "detach", SANDBOX)
    other = make_ws(tmp, "detach-other", SANDBOX, {"y.txt": "y\n"})
    d = Daemon(tmp, "detach-d", log_level="info")
    try:
        c = d.conn()
        check(c.call({"tool": "terminal", "workspace": ws, "command": "true"})["ok"], "first call")
        check(c.call({"tool": "terminal", "workspace": other, "command": "true"})["ok"], "other")
        before = rss_kib(d.pid)
        most = 0
        for k in range(4):
            cc = d.conn()
            cc.s.sendall(b"".join(json.dumps({"id": i + 1, "tool": "terminal", "workspace": ws, "command": "sleep 3131",
                                              "detach": True, "timeout": 4}).encode() + b"\n" for i in range(256)))
            time.sleep(0.3)
            cc.close()
            most = max(most, len(sleepers(3131)))
        t0 = time.monotonic()
        r = c.call({"tool": "terminal", "workspace": other, "command": "cat y.txt"})
        check(r.get("ok") and r.get("stdout") == "y\n" and time.monotonic() - t0 < 5, r)
        most = max(most, len(sleepers(3131)))
        check(most <= 512, "%d detached commands ran at once" % most)
        check(wait_for(lambda: not sleepers(3131), 15), "detached commands outlived their timeout")
        grew = rss_kib(d.pid) - before
        notes.append("1024 detached calls over 4 closed connections: at most %d ran at once; the daemon grew %d KiB" % (most, grew))
        check(sanitized(d.pid) or grew < 16 * 1024, "the daemon grew by %d KiB" % grew)
        c.close()
    finally:
        d.stop()


def t_atomic_save_during_overflow(tmp):
    """The jail's .env is masked; the host saves a new .env the way editors
    do (a new file renamed over it: the kernel drops the jail's mount on
    the old one) while the watch's queue is flooded (as an ordinary user
    it overflows; as root the read takes long enough to be skimmed). The
    walk that replaces the lost events took .env for masked already (the
    launch masked that path), so the jail read the new .env. A path the
    launch masked counts as masked only while it is the file the launch
    saw."""
    ws = make_ws(tmp, "atomic", SANDBOX, {".env": "OLDSECRET=1\n", "a.txt": "a\n"})
    os.makedirs(os.path.join(ws, "flood"))
    chown_tree(ws)
    d = Daemon(tmp, "atomic-d", log_level="info")
    try:
        c = d.conn()
        r = term(c, ws, "cat .env; echo end")
        check(r["ok"] and "OLDSECRET" not in r["stdout"], ("the .env is not masked at start", r))
        os.kill(d.pid, signal.SIGSTOP)
        try:
            fl = os.path.join(ws, "flood")
            for i in range(60000):
                p = os.path.join(fl, "f%05d" % i)
                with open(p, "w") as f:
                    f.write("x")
            tmpf = os.path.join(ws, ".env.tmp")
            with open(tmpf, "w") as f:
                f.write("NEWSECRET=1\n")
            os.rename(tmpf, os.path.join(ws, ".env"))
            chown_tree(ws)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        r = term(c, ws, "cat .env; echo end")
        check("NEWSECRET" not in r.get("stdout", ""), ("the .env saved during the flood is readable", r))
        notes.append("atomic save during a flood: %s" % ("walked again" if "walking the listed paths again" in d.log_text()
                                                         else "no overflow, no skim"))
        c.close()
    finally:
        d.stop()


def t_rewalk_during_rename_flood(tmp):
    """Events are lost (the daemon is stopped while the jail renames a tree
    of 2 000 directories back and forth, so the queue overflows) and the
    host makes a .pem deep in that tree meanwhile: its event is among the
    lost. The walk that replaces them opened each directory by its path
    from the root, so a directory renamed during the walk was not walked:
    the .pem was readable (a CI run under ASan). The walk goes by
    descriptor from each parent now, and a tree that changes under every
    walk ends the jail: the next call never reads the .pem."""
    if not shutil.which("python3"):
        raise Skip("no python3 on the host for the jail's flood")
    a = make_ws(tmp, "reflood", SANDBOX, {"x.txt": "x\n"})
    for i in range(2000):
        os.makedirs(os.path.join(a, "t", "d%02d" % (i // 100), "e%03d" % (i % 100)))
    chown_tree(a)
    d = Daemon(tmp, "reflood-d", log_level="info")
    try:
        c = d.conn()
        check(term(c, a, "true")["ok"], "jail")
        r = c.call({"tool": "process_start", "workspace": a, "command": RENAME_FLOOD % 30})
        check(r.get("ok"), r)
        time.sleep(1)
        os.kill(d.pid, signal.SIGSTOP)
        try:
            time.sleep(1)  # the flood fills the queue past its end
            pem_in_flood(a)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        r = term(c, a, "cat t/d19/e099/key.pem u/d19/e099/key.pem 2>/dev/null; echo end")
        check("PEMSECRET" not in r.get("stdout", ""), ("the .pem made while events were lost is readable", r))
        log = d.log_text()
        notes.append("rename flood with lost events: %s" % (
            "the tree kept changing: the jail ended" if "kept changing while the watch walked it" in log
            else "walked again" if "walking the listed paths again" in log else "no overflow, no skim"))
        # The next jail starts after a walk no jail moves: the .pem is
        # masked, the tree is there.
        r = term(c, a, "cat t/d19/e099/key.pem u/d19/e099/key.pem 2>/dev/null; ls -d t/d00 u/d00 2>/dev/null; echo end")
        check(r.get("ok") and "PEMSECRET" not in r["stdout"] and "d00" in r["stdout"], r)
        c.close()
    finally:
        d.stop()


# The jail moves D between a and z, timed to the daemon's walk: each move
# waits until the walk has read the directory it leaves D in (its atime
# moves: relatime updates it once after each change), so D is always in
# the directory not yet read. A second process keeps the queue
# overflowing with writes to two files (no directory changes).
XDIR_MOVER = r"""python3 -c '
import os, time
end = time.time() + %d
early, late = [n for n in os.listdir(".") if n in ("a", "z")]
for d in (early, late):
    open(d + "/.arm", "w").close(); os.unlink(d + "/.arm")
at = lambda p: os.stat(p).st_atime_ns
while time.time() < end:
    a0 = at(early)
    while at(early) == a0 and time.time() < end: time.sleep(0.0003)
    time.sleep(0.002)
    try: os.rename(late + "/D", early + "/D")
    except OSError: pass
    z0 = at(late)
    while at(late) == z0 and time.time() < end: time.sleep(0.0003)
    time.sleep(0.002)
    try: os.rename(early + "/D", late + "/D")
    except OSError: pass'"""

WRITE_FLOOD = r"""python3 -c '
import os, time
end = time.time() + %d
while time.time() < end:
    for i in range(1000):
        os.close(os.open("flood/f0", os.O_WRONLY)); os.close(os.open("flood/f1", os.O_WRONLY))'"""


def t_cross_dir_move_during_rewalk(tmp):
    """Found by an attack review: after lost events, the walk checked each
    directory only while it was read, so a directory the jail moved from
    one not yet read into one read already, between the two reads, was
    never walked, and a .pem the host made in it (its event lost) stayed
    readable to every later call (10 of 10, 5 of 8 runs as the user). The
    walk now looks at every directory it read again once it is over, and a
    reply waits until a walk saw the tree stand still (watch_settle())."""
    if not shutil.which("python3"):
        raise Skip("no python3 on the host for the jail's mover")
    ws = make_ws(tmp, "xdir", SANDBOX, {"x.txt": "x\n"})
    for top in ("a", "z"):
        for i in range(4000):
            os.makedirs(os.path.join(ws, top, "big", "d%02d" % (i // 100), "e%03d" % (i % 100)))
    os.makedirs(os.path.join(ws, "flood"))
    for f in ("f0", "f1"):
        open(os.path.join(ws, "flood", f), "w").close()
    early, late = [n for n in os.listdir(ws) if n in ("a", "z")]
    os.makedirs(os.path.join(ws, late, "D"))
    chown_tree(ws)
    d = Daemon(tmp, "xdir-d", log_level="info")
    try:
        c = d.conn()
        check(term(c, ws, "true")["ok"], "jail")
        for prog in (XDIR_MOVER, WRITE_FLOOD):
            r = c.call({"tool": "process_start", "workspace": ws, "command": prog % 30})
            check(r.get("ok"), r)
        time.sleep(3)
        os.kill(d.pid, signal.SIGSTOP)
        try:
            time.sleep(0.5)
            made = False
            for k in range(200):
                top = (late, early)[k % 2]
                try:
                    fd = os.open(os.path.join(ws, top, "D", "key.pem"), os.O_CREAT | os.O_WRONLY)
                except FileNotFoundError:
                    continue
                os.write(fd, b"PEMSECRET\n")
                os.close(fd)
                made = True
                break
            check(made, "the .pem could not be made")
        finally:
            os.kill(d.pid, signal.SIGCONT)
        time.sleep(1)
        res = []
        for k in range(10):
            r = term(c, ws, "cat a/D/key.pem z/D/key.pem 2>/dev/null; echo end")
            res.append("PEM" if "PEMSECRET" in r.get("stdout", "") else (r.get("error") or {}).get("code", "masked"))
            time.sleep(0.3)
        log = d.log_text()
        notes.append("cross-directory move during the walk: %s; walked again %d times, tree kept changing %d" % (
            " ".join(res), log.count("walking the listed paths again"), log.count("kept changing")))
        check("PEM" not in res, ("the .pem was read", res))
        c.close()
    finally:
        d.stop()


def t_unreadable_directory(tmp):
    """Found by an attack review (as an ordinary user): a directory of mode
    0300 can be looked up in but not listed. A user daemon is the jail's
    uid, so it could neither watch nor walk such a directory, and took
    that silently: a .pem the host wrote into one the jail made was
    readable (3 of 3 calls), and a directory the jail turned 0300 kept
    what the next jail's plan should have masked below it (.env and .pem
    masked at the start read by the next jail after a recycle). The jail
    can no longer make one (seccomp: chmod, mkdir, umask); one it meets
    anyway (the host's, or a jail without the filter) counts as masked
    whole: the jail sees it empty, and one that appears while a jail
    runs rebuilds the jail."""
    ws = make_ws(tmp, "unread", SANDBOX, {"x.txt": "x\n", "deep/.env": "ENVSECRET=1\n",
                                           "deep/k.pem": "PEMSECRET\n"})
    chown_tree(ws)
    d = Daemon(tmp, "unread-d", log_level="info")
    try:
        c = d.conn()
        r = term(c, ws, "cat deep/.env deep/k.pem 2>/dev/null; echo end")
        check(r.get("ok") and "SECRET" not in r["stdout"], ("masked at the start", r))
        # The jail cannot make a directory it may enter but the daemon not list.
        r = term(c, ws, "chmod 0300 deep; echo $?; mkdir -m 0300 sub; echo $?; (umask 0422 && mkdir sub2 && stat -c %a sub2)")
        out = r.get("stdout", "").split()
        check(r.get("ok") and out[:2] == ["1", "1"] and not os.path.exists(os.path.join(ws, "sub"))
              and out[2:] == ["755"], ("the jail made an unlistable directory", r))
        # One the jail meets anyway: the host's. Below one that was masked
        # at the start, after the jail is rebuilt (a .pem the host makes).
        os.chmod(os.path.join(ws, "deep"), 0o300)
        with open(os.path.join(ws, "trigger.pem"), "w") as f:
            f.write("x\n")
        chown_tree(ws)
        for _ in range(3):
            r = term(c, ws, "cat deep/.env deep/k.pem 2>/dev/null; echo end")
            check("SECRET" not in r.get("stdout", ""), ("read below a directory the daemon cannot read", r))
        # One that appears while the jail runs, and a .pem written into it.
        os.mkdir(os.path.join(ws, "sub"), 0o300)
        chown_tree(os.path.join(ws, "sub"))
        with open(os.path.join(ws, "sub", "key.pem"), "w") as f:
            f.write("PEMSECRET\n")
        chown_tree(os.path.join(ws, "sub"))
        for _ in range(3):
            r = term(c, ws, "cat sub/key.pem 2>/dev/null; echo end")
            check("PEMSECRET" not in r.get("stdout", ""), ("a .pem in a directory made 0300 is readable", r))
        r = term(c, ws, "cat x.txt")
        check(r.get("ok") and r["stdout"] == "x\n", r)
        c.close()
    finally:
        for sub in ("deep", "sub"):
            try:
                os.chmod(os.path.join(ws, sub), 0o755)
            except OSError:
                pass
        d.stop()


CHURN = """python3 -c '
import os, sys, time
n, k, pause = %d, %d, %r
pids = []
for j in range(k):
    pid = os.fork()
    if pid == 0:
        for i in range(n):
            os.mkdir("t%%d" %% j)
            os.rmdir("t%%d" %% j)
            if pause:
                time.sleep(pause)
        os._exit(0)
    pids.append(pid)
bad = [p for p in pids if os.waitpid(p, 0)[1]]
print("made" if not bad else "failed")
'"""


def t_dir_churn_keeps_the_watch_budget(tmp):
    """A directory made and removed again and again (a build's scratch
    directory, `npm ci` run over and over, or a jail doing it on purpose)
    holds one inotify watch at a time: the kernel's IN_IGNORED gives each
    removed one's back. Before, the daemon kept an entry for every
    directory it ever watched, counted against the workspace's share of
    fs.inotify.max_user_watches (1 527 held after 32 000 made and removed
    with nothing left in the tree; past the share, masks over time go
    partial and a lockdown workspace refuses every call). Also when an
    overflow lost the removals' IN_IGNORED: the kernel's list of live
    watches (fdinfo) says which went (before: 3 000 held for good)."""
    if not shutil.which("python3"):
        raise Skip("no python3 on the host for the jail's script")
    ws = make_ws(tmp, "churn", SANDBOX + "lockdown = true\n", {"a.txt": "a\n", "flood/f0": "", "flood/f1": ""})
    for i in range(3000):
        os.makedirs(os.path.join(ws, "old", "d%04d" % i))
    chown_tree(ws)
    d = Daemon(tmp, "churn-d", log_level="info")
    try:
        c = d.conn()
        check(term(c, ws, "true")["ok"], "jail")
        st = d.ws_status(ws)["masks_watch"]
        if st["kind"] != "inotify":
            raise NotApplicable("the daemon watches with %s, which holds no watch per directory" % st["kind"])
        base = st["used"]
        check(base >= 3000, ("the tree's directories are not watched", st))
        # One at a time, each seen (the daemon keeps up), then 4 at once.
        n = 20000
        r = term(c, ws, CHURN % (n, 1, 0.0005), timeout=600)
        check(r.get("ok") and r.get("stdout") == "made\n", r)
        r = term(c, ws, CHURN % (3000, 4, 0), timeout=600)
        check(r.get("ok") and r.get("stdout") == "made\n", r)
        r = term(c, ws, "echo ran")
        check(r.get("ok") and r.get("stdout") == "ran\n", ("the lockdown workspace refused after the churn", r))
        st = d.ws_status(ws)["masks_watch"]
        check(st["used"] <= base + 8, ("watches held after %d directories made and removed" % (n + 12000), base, st))
        churned = st["used"]
        # The queue overflows first (the daemon stopped), then the 3 000
        # directories go: their IN_IGNORED events are lost.
        overflow_then(d, ws, lambda: shutil.rmtree(os.path.join(ws, "old")))
        r = term(c, ws, "echo ran")
        check(r.get("ok") and r.get("stdout") == "ran\n", r)
        st = d.ws_status(ws)["masks_watch"]
        check(st["used"] <= base - 3000 + 8, ("watches held after the removed directories' events were lost", base, st))
        notes.append("%d directories made and removed one at a time: the watch holds %d (budget %d); 3 000 removed "
                     "while the queue overflowed: %d -> %d" % (n + 12000, churned, st["budget"], base, st["used"]))
        c.close()
    finally:
        d.stop()


def overflow_then(d, ws, host_step):
    """Stops the daemon, makes its queue overflow (distinct events: the
    same event twice in a row merges), runs host_step, continues it, and
    waits for the walk after lost events."""
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        qmax = int(f.read())
    seen = d.log_text().count("walking the listed paths again")
    os.kill(d.pid, signal.SIGSTOP)
    try:
        for i in range(qmax + 1000):
            with open(os.path.join(ws, "flood", "f%d" % (i % 2)), "w"):
                pass
        host_step()
    finally:
        os.kill(d.pid, signal.SIGCONT)
    check(wait_for(lambda: d.log_text().count("walking the listed paths again") > seen, 20),
          "no overflow: the case did not test the walk")


def t_listed_path_moved_during_overflow(tmp):
    """Found by an attack review of a give-back of the watches a walk
    after lost events no longer met (as the user, 3 of 3; the give-back
    was withdrawn): a listed path the host moved away while events were
    lost was taken as gone, and the walk gave back every watch below it;
    the running jail's mount follows the directory, so a .pem the host
    then wrote there (moved back, or where it went) was readable. Also a
    listed path replaced by a new directory (the jail still shows the old
    one). Only the kernel's IN_IGNORED (the directory removed) frees a
    watch now."""
    for variant in ("moved back", "moved away", "replaced"):
        shared = os.path.join(tmp, "shared-" + variant.replace(" ", "-"))
        os.makedirs(os.path.join(shared, "sub"))
        chown_tree(shared)
        ws = make_ws(tmp, "outmv-" + variant.replace(" ", "-"), SANDBOX + 'rw_paths = [".", "%s"]\n' % shared,
                     {"a.txt": "a\n", "flood/f0": "", "flood/f1": ""})
        d = Daemon(tmp, "outmv-d-" + variant.replace(" ", "-"), log_level="info")
        try:
            c = d.conn()
            check(term(c, ws, "true")["ok"], "jail")
            if d.ws_status(ws)["masks_watch"]["kind"] != "inotify":
                raise NotApplicable("the daemon watches with fanotify, which holds no watch per directory")
            away = shared + ".away"

            def step():
                os.rename(shared, away)
                if variant == "replaced":
                    os.makedirs(os.path.join(shared, "sub"))
                    chown_tree(shared)
            overflow_then(d, ws, step)
            time.sleep(0.5)
            if variant == "moved back":
                os.rename(away, shared)
            where = shared if variant == "moved back" else away
            with open(os.path.join(where, "sub", "key.pem"), "w") as f:
                f.write("PEMSECRET\n")
            chown_tree(where)
            time.sleep(0.5)
            r = term(c, ws, "cat %s/sub/key.pem 2>/dev/null; echo end" % shared)
            check("PEMSECRET" not in r.get("stdout", ""), (variant, "the .pem is readable", r))
            c.close()
        finally:
            d.stop()


def t_moved_out_during_overflow_still_the_jails(tmp):
    """The two other ways the attack reviews found for a directory to
    leave the listed paths while the jail keeps it, each moved during an
    overflow (a walk after lost events then no longer meets it): a listed
    path moved into another one (its entry relabelled under that one), a
    new one made in its place, then moved out of both (the jail's mount
    still shows the old one); and a directory a jail process holds as its
    working directory, moved out of the workspace. A .pem the host then
    writes in it stays unreadable to the jail."""
    A, B = os.path.join(tmp, "mo-A"), os.path.join(tmp, "mo-B")
    os.makedirs(os.path.join(A, "deep"))
    os.makedirs(B)
    chown_tree(A)
    chown_tree(B)
    ws = make_ws(tmp, "mo", SANDBOX + 'rw_paths = [".", "%s", "%s"]\n' % (A, B),
                 {"a.txt": "a\n", "flood/f0": "", "flood/f1": "", "keep/in/x.txt": "x\n"})
    d = Daemon(tmp, "mo-d", log_level="info")
    try:
        c = d.conn()
        check(term(c, ws, "true")["ok"], "jail")
        if d.ws_status(ws)["masks_watch"]["kind"] != "inotify":
            raise NotApplicable("the daemon watches with fanotify, which holds no watch per directory")
        # A jail process sits in keep/in, and prints what a file there
        # holds once it appears.
        r = c.call({"tool": "process_start", "workspace": ws, "command":
                    "cd keep/in && for i in $(seq 600); do cat key.pem 2>/dev/null && break; sleep 0.05; done; echo done"})
        check(r.get("ok"), r)
        pid = r.get("process")
        os.rename(A, os.path.join(B, "A"))
        os.makedirs(A)
        chown_tree(A)
        time.sleep(1)
        away, out = os.path.join(tmp, "mo-away"), os.path.join(tmp, "mo-out")

        def step():
            os.rename(os.path.join(B, "A"), away)
            os.rename(os.path.join(ws, "keep", "in"), out)
        overflow_then(d, ws, step)
        time.sleep(0.5)
        for where in (os.path.join(away, "deep"), out):
            with open(os.path.join(where, "key.pem"), "w") as f:
                f.write("PEMSECRET\n")
            chown_tree(where)
        time.sleep(0.5)
        r = term(c, ws, "cat %s/deep/key.pem 2>/dev/null; echo end" % A)
        check("PEMSECRET" not in r.get("stdout", ""), ("a listed path moved in, then out: the .pem is readable", r))
        r = c.call({"tool": "process_output", "workspace": ws, "process": pid, "wait_ms": 3000})
        check("PEMSECRET" not in json.dumps(r), ("read through a working directory moved out", r))
        c.close()
    finally:
        d.stop()


def t_names_cannot_forge_log_lines(tmp):
    """The jail makes a file whose name holds a newline and a line of the
    daemon's log format, ending in .pem (the daemon logs the masked path
    that appeared) and one named .envrc below such a directory (logged as
    a file the host runs later): the log shows the names escaped, never a
    line of the jail's making."""
    ws = make_ws(tmp, "logname", SANDBOX, {"a.txt": "a\n"})
    d = Daemon(tmp, "logname-d", log_level="info")
    try:
        c = d.conn()
        check(term(c, ws, "true")["ok"], "first call")
        r = term(c, ws, "n=$(printf 'x\\nFORGED vectora-sandboxd: error: forged line'); mkdir \"$n.d\"; "
                        ": > \"$n.d/.envrc\"; : > \"$n.pem\"; echo made")
        check("made" in r.get("stdout", "") or r.get("error"), r)
        term(c, ws, "true")
        lines = d.log_text().splitlines()
        check(not [l for l in lines if l.startswith("FORGED")], ("a log line of the jail's making", lines[-8:]))
        check(any("forged line" in l for l in lines), ("the names were not logged at all", lines[-8:]))
        c.close()
    finally:
        d.stop()


CASES = [t_moved_out_during_overflow_still_the_jails, t_listed_path_moved_during_overflow, t_dir_churn_keeps_the_watch_budget, t_names_cannot_forge_log_lines, t_unreadable_directory, t_rewalk_during_rename_flood, t_cross_dir_move_during_rewalk, t_atomic_save_during_overflow, t_detached_calls_are_bounded, t_create_flood_memory_and_latency, t_moved_in_and_linked_secrets, t_jail_spends_the_watch_budget, t_tmpfs_and_overlay_workspaces, t_bind_mounted_workspace_after_cache, t_tree_rename_flood_spares_others, t_walk_never_follows_a_swapped_symlink, t_cancel_is_per_connection, t_cancel_races,
         t_mcp_cancel_abuse]


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
