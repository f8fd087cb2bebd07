#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Workspace size (the scale issue, item 4): a workspace's first call and
masks over time against the size of its tree, each beside a `find` over
the same tree, in one run, interleaved.

Trees of 1 000, 20 000 and 200 000 files (ten files a directory, the
example masks of docs/config.md and protect = ["**/.vscode/tasks.json"]).
Per size and round, in an order that rotates round by round:

 - first: a daemon on an empty state directory (no walk cache) and the
   first call (`terminal` /bin/true) in the workspace: the config, the one
   walk (masks and protect globs), the watch, bwrap, the worker, the call.
 - restart: the same daemon stopped and started again on the same state
   directory, tree unchanged: the first call again (the walk cache read).
 - find: `find WS -name '*.pem'` over the same tree (its output discarded).
 - mot: masks over time: a .pem made in the tree's last directory, then
   the next call, which must not read it (its time is the figure).
 - warm: a call with nothing changed, for scale.

Then, with `many=NxD` among the arguments: N workspaces of D directories
each (empty directories, a hundred to a directory above the leaves) on one
daemon within the kernel's default limits: every workspace's first call,
then a .pem made in each one's last directory while its jail runs, and a
call in each that must not read it (the run fails if one does); the
figures are the time to start them all and to make the calls after, and
the watch budget used.

The daemons' start-up is not timed (each is listening before its first
call). Prints one JSON line for report.py; notes carry the watch budget
used and the walk counters. Usage: bench-tree.py [ROUNDS [SIZES...] [many=NxD]]."""
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("VECTORA_BUILD_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../build")
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
os.environ.setdefault("VECTORA_WORKER", os.path.join(BUILD, "src/worker/vectora-worker"))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
SIZES = [int(x) for x in sys.argv[2:] if not x.startswith("many=")] or [1000, 20000, 200000]
MANY = [tuple(int(v) for v in x[5:].split("x")) for x in sys.argv[2:] if x.startswith("many=")]
PER_DIR = 10
TOML = ('[sandbox]\nenabled = true\nmask = [".env", "**/*.pem", "**/.ssh/**", "**/.aws/**"]\n'
        'protect = ["**/.vscode/tasks.json"]\n')
now = time.perf_counter


def owner():
    if os.geteuid() != 0:
        return None
    p = pwd.getpwnam("nobody")
    return p.pw_uid, p.pw_gid


def make_tree(tmp, n_files):
    """n_files files, PER_DIR a directory, in a/bNNN/ (a hundred to a
    directory above the leaves): the shape of a package tree."""
    ws = os.path.join(tmp, "ws%d" % n_files)
    os.makedirs(ws)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write(TOML)
    n_dirs = max(1, n_files // PER_DIR)
    own = owner()
    leaves = []
    for i in range(n_dirs):
        d = os.path.join(ws, "t", "a%03d" % (i // 100), "b%02d" % (i % 100))
        os.makedirs(d)
        leaves.append(d)
        for j in range(PER_DIR):
            fd = os.open(os.path.join(d, "f%d.js" % j), os.O_WRONLY | os.O_CREAT, 0o644)
            if own:
                os.fchown(fd, *own)
            os.close(fd)
    if own:
        for dp, dns, fns in os.walk(ws):
            os.chown(dp, *own)
        os.chown(os.path.join(ws, "vectora.toml"), *own)
    return ws, leaves[-1]


def make_dirs(tmp, name, n_dirs):
    """A workspace of n_dirs empty directories in t/aNNN/bNN; only the
    root and vectora.toml are given to the owner (the jail's identity)."""
    ws = os.path.join(tmp, name)
    os.makedirs(os.path.join(ws, "t"))
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write(TOML)
    for i in range(n_dirs):
        if i % 100 == 0:
            os.mkdir(os.path.join(ws, "t", "a%03d" % (i // 100)))
        os.mkdir(os.path.join(ws, "t", "a%03d" % (i // 100), "b%02d" % (i % 100)))
    own = owner()
    if own:
        os.chown(ws, *own)
        os.chown(os.path.join(ws, "vectora.toml"), *own)
    return ws, os.path.join(ws, "t", "a%03d" % ((n_dirs - 1) // 100), "b%02d" % ((n_dirs - 1) % 100))


class Daemon:
    def __init__(self, tmp, state, name, extra=()):
        self.sock = os.path.join(tmp, name + ".sock")
        self.p = subprocess.Popen([DAEMON, "--foreground", "--socket", self.sock, "--log-file",
                                   os.path.join(tmp, name + ".log"), "--log-level", "warning", "--audit-log",
                                   os.path.join(tmp, name + ".audit"), "--state-dir", state, *extra],
                                  stdin=subprocess.DEVNULL)
        for _ in range(2000):
            try:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.connect(self.sock)
                break
            except OSError:
                self.s.close()
                time.sleep(0.005)
        else:
            raise RuntimeError("the daemon did not listen")
        self.buf = b""
        self.id = 0

    def call(self, req):
        self.id += 1
        self.s.sendall(json.dumps(dict(req, id=self.id)).encode() + b"\n")
        while b"\n" not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("the daemon closed the connection")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def term(self, ws, command):
        return self.call({"tool": "terminal", "workspace": ws, "command": command})

    def stop(self):
        self.s.close()
        self.p.terminate()
        self.p.wait(60)


def timed_first(tmp, state, ws, name):
    d = Daemon(tmp, state, name)
    try:
        t0 = now()
        r = d.term(ws, "true")
        dt = now() - t0
        if not r.get("ok"):
            raise RuntimeError("first call failed: %s" % r)
        st = d.call({"tool": "status"})
    except BaseException:
        d.stop()
        raise
    return d, dt, st


def timed_find(ws):
    t0 = now()
    subprocess.run(["find", ws, "-name", "*.pem"], stdout=subprocess.DEVNULL, check=True)
    return now() - t0


def many(tmp, n_ws, n_dirs, out, notes):
    """n_ws workspaces of n_dirs directories on one daemon: all started,
    then masks over time in each while its jail runs."""
    t0 = now()
    trees = [make_dirs(tmp, "many%03d" % i, n_dirs) for i in range(n_ws)]
    notes.append("%d workspaces of %d directories made in %.1f s" % (n_ws, n_dirs, now() - t0))
    time.sleep(3)
    d = Daemon(tmp, os.path.join(tmp, "state-many"), "many", ("--max-workers", str(n_ws + 16)))
    try:
        t0 = now()
        for ws, _ in trees:
            r = d.term(ws, "true")
            if not r.get("ok"):
                raise RuntimeError("first call failed in %s: %s" % (ws, r))
        started = now() - t0
        for k, (ws, last) in enumerate(trees):
            with open(os.path.join(last, "k.pem"), "w") as f:
                f.write("SECRET\n")
        t0 = now()
        held = 0
        for ws, last in trees:
            r = d.term(ws, "cat %s/k.pem; true" % os.path.relpath(last, ws))
            if not r.get("ok") or "SECRET" in r.get("stdout", ""):
                raise RuntimeError("a .pem made after the start was readable in %s: %s" % (ws, r))
            held += 1
        after = now() - t0
        st = d.call({"tool": "status"})
        spawns = sum(w.get("counters", {}).get("spawns", 0) for w in st["workspaces"])
        mws = [w["masks_watch"] for w in st["workspaces"] if w.get("masks_watch")]
        kinds = sorted({m.get("kind") for m in mws})
        used = sum(m.get("used") or 0 for m in mws)
        budgets = sorted({m.get("budget") for m in mws}, key=str)
    finally:
        d.stop()
    try:
        limit = open("/proc/sys/fs/inotify/max_user_watches").read().strip()
    except OSError:
        limit = "?"
    out["values"].update({"tree.many.workspaces": n_ws, "tree.many.dirs": n_dirs, "tree.many.held": held,
                          "tree.many.start_s": started, "tree.many.mot_s": after})
    notes.append("%d workspaces of %d directories on one daemon: all %d first calls in %.2f s, %d of %d masks over time "
                 "held (the calls after a .pem appeared in each: %.2f s); watch %s, %s watches used in all, budget %s "
                 "(fs.inotify.max_user_watches %s); %s jail starts" %
                 (n_ws, n_dirs, n_ws, started, held, n_ws, after, "/".join(str(k) for k in kinds), used,
                  "/".join(str(b) for b in budgets), limit, spawns))


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-bench-tree.")
    os.chmod(tmp, 0o755)
    figs, notes = {}, []
    out = {"bench": "tree", "figures": [], "ratios": [], "values": {}, "notes": notes}
    kinds = ("first", "restart", "find", "mot", "warm")
    try:
        trees = {}
        for n in SIZES:
            t0 = now()
            trees[n] = make_tree(tmp, n)
            notes.append("tree of %d files in %d directories made in %.1f s" % (n, n // PER_DIR, now() - t0))
            for k in kinds:
                figs[(n, k)] = [[] for _ in range(ROUNDS)]
        # Settled: a directory changed in the 2 s before a walk is not
        # recorded in the walk cache (walk_cache_racy).
        time.sleep(3)
        walk_notes = {}
        held_dirs = 0
        for rnd in range(ROUNDS):
            for n in SIZES:
                ws, last = trees[n]
                state = os.path.join(tmp, "state-%d-%d" % (n, rnd))
                order = ["first", "find", "restart", "find2"]
                order = order[rnd % len(order):] + order[:rnd % len(order)]
                # The restart needs the first's cache: a rotation that puts
                # it first makes its own cache with an untimed start.
                if order.index("restart") < order.index("first"):
                    d, _, _ = timed_first(tmp, state, ws, "pre")
                    d.stop()
                for step in order:
                    if step.startswith("find"):
                        figs[(n, "find")][rnd].append(timed_find(ws))
                    elif step == "first":
                        shutil.rmtree(state, ignore_errors=True)
                        d, dt, st = timed_first(tmp, state, ws, "first")
                        figs[(n, "first")][rnd].append(dt)
                        w = d.call({"tool": "status"})
                        mw = [x for x in w["workspaces"] if x["path"] == os.path.realpath(ws)][0]["masks_watch"]
                        walk_notes.setdefault(n, {})["watch"] = mw
                        walk_notes[n]["first"] = w["daemon"]["walk"]
                        # Masks over time, on the same daemon.
                        with open(os.path.join(last, "k%d.pem" % rnd), "w") as f:
                            f.write("SECRET\n")
                        t0 = now()
                        r = d.term(ws, "cat %s/k%d.pem; true" % (os.path.relpath(last, ws), rnd))
                        figs[(n, "mot")][rnd].append(now() - t0)
                        if not r.get("ok") or "SECRET" in r.get("stdout", ""):
                            raise RuntimeError("a .pem made after the start was readable at %d files" % n)
                        held_dirs = max(held_dirs, n // PER_DIR)
                        os.unlink(os.path.join(last, "k%d.pem" % rnd))
                        t0 = now()
                        d.term(ws, "true")
                        figs[(n, "warm")][rnd].append(now() - t0)
                        d.stop()
                    else:
                        d, dt, st = timed_first(tmp, state, ws, "restart")
                        figs[(n, "restart")][rnd].append(dt)
                        walk_notes.setdefault(n, {})["restart"] = d.call({"tool": "status"})["daemon"]["walk"]
                        d.stop()
                shutil.rmtree(state, ignore_errors=True)
        for n in SIZES:
            wn = walk_notes.get(n, {})
            mw = wn.get("watch") or {}
            notes.append("%d files: masks watch %s, %s of a budget of %s; first start read %s directories, a restart "
                         "read %s and took %s from the walk cache" %
                         (n, mw.get("kind"), mw.get("used"), mw.get("budget"), wn.get("first", {}).get("dirs_read"),
                          wn.get("restart", {}).get("dirs_read"), wn.get("restart", {}).get("dirs_reused")))
        out["values"]["tree.mot_held_dirs"] = held_dirs
        for n_ws, n_dirs in MANY:
            many(tmp, n_ws, n_dirs, out, notes)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    labels = {"first": "first call, new daemon and no walk cache", "restart": "first call after a daemon restart, tree unchanged",
              "find": "`find WS -name '*.pem'`", "mot": "masks over time: the call after a .pem appeared deep",
              "warm": "a warm call, nothing changed"}
    for n in SIZES:
        for k in kinds:
            out["figures"].append({"key": "tree.%d.%s" % (n, k), "label": "%d files: %s" % (n, labels[k]), "unit": "us",
                                   "rounds": [[x * 1e6 for x in r] for r in figs[(n, k)]]})
        for k in ("first", "restart", "mot"):
            out["ratios"].append({"key": "tree.%d.%s_vs_find" % (n, k), "label": "%d files: %s / find" % (n, labels[k]),
                                  "num": "tree.%d.%s" % (n, k), "den": "tree.%d.find" % n})
    out["values"]["tree.sizes"] = SIZES
    out["values"]["tree.loadavg"] = open("/proc/loadavg").read().split()[:3]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
