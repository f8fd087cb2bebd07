#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""vectora-sandboxd end to end, for real with bwrap: the "Done when" list of
the daemon issue, one test each. Python 3 stdlib only.

TAP, each case a subtest (tests/lib/vtest.py); with VECTORA_TEST_STRICT=1 a
skip counts as a failure. Run as root (CI) the workspaces are chowned to an
unprivileged user, since the jail never runs as host root; run as a normal
user they stay the caller's."""

import base64
import collections
import json
import os
import pwd
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import (CLI, DAEMON, OWNER, ROOT, Daemon, Rewriting, Skip, Tap, needs_root, check, chown_tree,  # noqa: E402,F401
                   make_ws, sanitized, wait_for)
from vdaemon import (SANDBOX, PtyShell, alive, comm, fd_targets, free_port, http_get, proc_tree, pty_audit,  # noqa: E402
                     term, worker_procs)

notes = []


# ---------------------------------------------------------------- tests


def t_tools_basic(d, tmp):
    sb = make_ws(tmp, "basic-sb", SANDBOX, {"a.txt": "hello\n", ".env": "SECRET=1\n"})
    un = make_ws(tmp, "basic-un", None, {"a.txt": "plain\n"})
    c = d.conn()
    r = term(c, sb, "cat a.txt; cat .env; echo err >&2; exit 3")
    check(r["ok"] and r["exit_code"] == 3 and r["stdout"] == "hello\n" and r["stderr"] == "err\n", r)
    check(r["sandboxed"] is True and r["sandbox"]["backend"] == "local" and "namespaces" in r["sandbox"]["layers"], r)
    check(r["sandbox"]["generation"] >= 1 and isinstance(r["sandbox"]["degraded"], list), r)
    r = c.call({"tool": "terminal", "workspace": sb, "argv": ["/bin/sh", "-c", "kill -9 $$"]})
    check(r["exit_code"] == 137 and r["signal"] == 9, r)
    r = term(c, sb, "printf '\\377\\376'")
    check("stdout_base64" in r and base64.b64decode(r["stdout_base64"]) == b"\xff\xfe", r)
    r = term(c, sb, "cat", stdin="piped input")
    check(r["stdout"] == "piped input", r)
    r = term(c, sb, "pwd; echo $FOO", cwd="sub" if False else None, env={"FOO": "bar"})
    check(r["stdout"].endswith("bar\n"), r)
    r = term(c, sb, "sleep 5", timeout=1)
    check(r["timed_out"] is True, r)
    r = c.call({"tool": "file_read", "workspace": sb, "path": ".env"})
    check(not r["ok"] and r["error"]["code"] == "denied", r)
    r = term(c, un, "cat a.txt; id -u")
    check(r["ok"] and r["stdout"].startswith("plain\n") and r["sandboxed"] is False and r["sandbox"]["backend"] == "none", r)
    r = c.call({"tool": "nope", "workspace": sb})
    check(r["error"]["code"] == "unknown_tool", r)
    r = c.call({"tool": "terminal", "workspace": sb, "command": "true", "bogus": 1})
    check(r["error"]["code"] == "bad_request" and "bogus" in r["error"]["message"], r)
    r = c.call({"tool": "terminal", "workspace": "relative/path", "command": "true"})
    check(r["error"]["code"] == "bad_request", r)
    # A workspace path that is not a directory: the documented code (the
    # daemon sent config_locate's undocumented "workspace_invalid" before).
    r = c.call({"tool": "terminal", "workspace": os.path.join(sb, "a.txt"), "command": "true"})
    check(not r["ok"] and r["error"]["code"] == "workspace_not_found" and "not a directory" in r["error"]["message"], r)
    r = c.call({"tool": "terminal", "workspace": os.path.join(tmp, "no-such-dir"), "command": "true"})
    check(not r["ok"] and r["error"]["code"] == "workspace_not_found", r)
    # One argument table with terminal's: what only a finished command's
    # reply has is refused, and nothing starts.
    for k, v in (("binary", True), ("max_output", 10), ("timeout_ms", 100)):
        r = c.call({"tool": "process_start", "workspace": sb, "command": "touch started-anyway", k: v})
        check(not r["ok"] and r["error"]["code"] == "bad_request" and k in r["error"]["message"], r)
    check(not os.path.exists(os.path.join(sb, "started-anyway")), "a refused process_start ran")
    c.close()


def t_file_tools(d, tmp):
    sb = make_ws(tmp, "files-sb", SANDBOX, {"f.txt": "one two two\n"})
    un = make_ws(tmp, "files-un", None, {})
    c = d.conn()
    for ws in (sb, un):
        r = c.call({"tool": "file_write", "workspace": ws, "path": "w.txt", "content": "abc\n"})
        check(r["ok"] and r["created"] and r["size"] == 4, r)
        r = c.call({"tool": "file_read", "workspace": ws, "path": "w.txt"})
        check(r["ok"] and r["content"] == "abc\n", r)
        r = c.call({"tool": "file_write", "workspace": ws, "path": "bin.dat"}, raw=b"\x00\xff")
        check(r["ok"], r)
        r = c.call({"tool": "file_read", "workspace": ws, "path": "bin.dat"})
        check(base64.b64decode(r["content_base64"]) == b"\x00\xff", r)
        # A 1 MiB text file comes back in pieces of at most 256 KiB, with
        # eof false until the end; reassembled it is the file.
        big = ("0123456789abcde\n" * 65536).encode()
        r = c.call({"tool": "file_write", "workspace": ws, "path": "big.txt"}, raw=big)
        check(r["ok"] and r["size"] == len(big), r)
        got, off = b"", 0
        while True:
            r = c.call({"tool": "file_read", "workspace": ws, "path": "big.txt", "offset": off})
            check(r["ok"] and r["length"] <= 256 * 1024 and r["id"] is not None, {k: v for k, v in r.items() if k != "content"})
            got += r["content"].encode()
            off += r["length"]
            if r["eof"]:
                break
        check(got == big and off == len(big), ("reassembled", len(got)))
        # Six-fold escaping of control characters: refused with the id kept.
        ctl = b"\x01" * (200 * 1024)
        check(c.call({"tool": "file_write", "workspace": ws, "path": "ctl.txt"}, raw=ctl)["ok"], "ctl write")
        r = c.call({"tool": "file_read", "workspace": ws, "path": "ctl.txt"})
        check(r["ok"] and base64.b64decode(r["content_base64"]) == ctl or
              (not r["ok"] and r["error"]["code"] == "too_large" and r["id"] is not None), {k: v for k, v in r.items() if "content" not in k})
    r = c.call({"tool": "file_edit", "workspace": sb, "path": "f.txt", "old_string": "one", "new_string": "1"})
    check(r["ok"] and r["replacements"] == 1, r)
    r = c.call({"tool": "file_edit", "workspace": sb, "path": "f.txt", "old_string": "two", "new_string": "2"})
    check(r["error"]["code"] == "edit_not_unique", r)
    r = c.call({"tool": "file_edit", "workspace": sb, "path": "f.txt", "old_string": "two", "new_string": "2",
                "replace_all": True})
    check(r["ok"] and r["replacements"] == 2, r)
    r = c.call({"tool": "file_edit", "workspace": sb, "path": "f.txt", "old_string": "zzz", "new_string": "2"})
    check(r["error"]["code"] == "edit_not_found", r)
    check(open(os.path.join(sb, "f.txt")).read() == "1 2 2\n", "edit result on disk")
    r = c.call({"tool": "file_write", "workspace": sb, "path": "vectora.toml", "content": "[sandbox]\nenabled=false\n"})
    check(not r["ok"] and r["error"]["code"] == "denied", r)
    c.close()


def t_concurrent_edits(d, tmp):
    n = 16
    sb = make_ws(tmp, "edits", SANDBOX, {"e.txt": "".join(f"line{i}=old\n" for i in range(n))})
    errs = []

    def edit(i):
        c = d.conn()
        r = c.call({"tool": "file_edit", "workspace": sb, "path": "e.txt", "old_string": f"line{i}=old",
                    "new_string": f"line{i}=new"})
        if not r["ok"]:
            errs.append(r)
        c.close()

    th = [threading.Thread(target=edit, args=(i,)) for i in range(n)]
    [t.start() for t in th]
    [t.join() for t in th]
    check(not errs, errs)
    text = open(os.path.join(sb, "e.txt")).read()
    check(text == "".join(f"line{i}=new\n" for i in range(n)), "lost update: " + text)


def t_many_workspaces(d, tmp):
    sbs = [make_ws(tmp, f"many-sb{i}", SANDBOX, {"id.txt": f"sb{i}\n"}) for i in range(20)]
    uns = [make_ws(tmp, f"many-un{i}", None, {"id.txt": f"un{i}\n"}) for i in range(5)]
    wss = sbs + uns
    failures = []
    per_ws = 50

    def client(k):
        c = d.conn()
        pending = {}
        nid = 0
        # Pipelined: every workspace's calls interleaved, up to 64 in flight.
        work = [(ws, j) for j in range(per_ws) for ws in wss]
        while work or pending:
            while work and len(pending) < 64:
                ws, j = work.pop()
                nid += 1
                tag = f"{k}-{j}"
                kind = j % 3
                if kind == 0:
                    req = {"tool": "terminal", "workspace": ws, "command": f"cat id.txt; echo {tag}"}
                elif kind == 1:
                    req = {"tool": "file_read", "workspace": ws, "path": "id.txt"}
                else:
                    req = {"tool": "file_write", "workspace": ws, "path": f"out-{k}.txt", "content": tag}
                req["id"] = nid
                pending[nid] = (ws, kind, tag)
                c.send(req)
            m = c.recv()
            ws, kind, tag = pending.pop(m["id"])
            want = open(os.path.join(ws, "id.txt")).read()
            ok = m.get("ok") and m["sandboxed"] == (ws in sbs)
            if kind == 0:
                ok = ok and m["stdout"] == want + tag + "\n"
            elif kind == 1:
                ok = ok and m["content"] == want
            if not ok:
                failures.append((ws, kind, m))
        c.close()

    t0 = time.time()
    th = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    [t.start() for t in th]
    [t.join() for t in th]
    dt = time.time() - t0
    check(not failures, failures[:3])
    total = 4 * per_ws * len(wss)
    notes.append(f"many workspaces: {total} calls over 25 workspaces from 4 clients in {dt:.1f} s")
    st = d.status()
    by = {w["path"]: w for w in st["workspaces"]}
    for ws in sbs:
        w = by[os.path.realpath(ws)]
        check(w["worker"] and w["worker"]["state"] == "ready" and w["counters"]["spawns"] == 1, w)
    bwraps = [p for p in proc_tree(d.p.pid) if comm(p) == "bwrap"]
    # Each jail is one bwrap outside plus its namespace child.
    outer = [p for p in bwraps if comm(int(open(f"/proc/{p}/stat").read().split(") ")[1].split()[1])) != "bwrap"]
    check(len(outer) == len([w for w in st["workspaces"] if w["state"] == "sandboxed" and w["worker"]]), (outer, len(sbs)))


def find_worker(d, ws):
    w = d.ws_status(ws)
    bw = w["worker"]["pid"]
    return bw, worker_procs(bw)


def t_spawn_burst(d, tmp):
    # 60 first calls in flight at once: jails start a few at a time (the
    # daemon's spawn limit) instead of all timing out together; every call
    # is answered correctly and each workspace gets exactly one worker.
    wss = [make_ws(tmp, f"burst{i}", SANDBOX) for i in range(60)]
    c = d.conn()
    t0 = time.time()
    for i, ws in enumerate(wss):
        c.send({"id": 1000 + i, "tool": "terminal", "workspace": ws, "command": f"echo {i}"})
    got = {}
    while len(got) < len(wss):
        m = c.recv()
        got[m["id"]] = m
    for i in range(len(wss)):
        r = got[1000 + i]
        check(r["ok"] and r["stdout"] == f"{i}\n" and r["sandboxed"], r)
    pids = [d.ws_status(ws)["worker"]["pid"] for ws in wss]
    check(len(set(pids)) == len(wss) and all(pids), pids)
    notes.append(f"spawn burst: 60 first calls answered in {time.time() - t0:.1f} s")
    c.close()


def t_worker_crash(d, tmp):
    sb = make_ws(tmp, "crash", SANDBOX)
    c = d.conn()
    check(term(c, sb, "true")["ok"], "warm-up")
    bw, kids = find_worker(d, sb)
    check(kids, "no worker process found below bwrap")
    c.send({"id": 99, "tool": "terminal", "workspace": sb, "command": "sleep 30"})
    time.sleep(0.3)
    os.kill(kids[0], signal.SIGKILL)
    t0 = time.time()
    r = c.recv()
    check(r["id"] == 99 and not r["ok"] and r["error"]["code"] == "worker_crashed", r)
    # How it ended, not only "end of its output" (two unexplained crashes
    # said no more): SIGKILL of the jail's pid 1, which bwrap reports as 128+9.
    check("status 137" in r["error"]["message"] or "signal 9" in r["error"]["message"], r)
    check(time.time() - t0 < 5, "crash noticed late")
    r = term(c, sb, "echo again")
    check(r["ok"] and r["stdout"] == "again\n", r)
    w = d.ws_status(sb)
    check(w["worker"]["pid"] != bw and w["counters"]["crashes"] >= 1 and w["last_error"], w)
    c.close()


def sigkill_and_wait(d, bound):
    """SIGKILLs the daemon; returns (processes of its tree left after bound
    seconds, ms until the last was gone)."""
    tree = proc_tree(d.p.pid)
    d.p.send_signal(signal.SIGKILL)
    d.p.wait()
    t0 = time.time()
    while time.time() - t0 < bound and any(alive(p) for p in tree):
        time.sleep(0.005)
    gone_ms = (time.time() - t0) * 1000
    return [(p, comm(p)) for p in tree if alive(p)], gone_ms, tree


def t_restart_limit_names_cause_once(d0, tmp):
    # A worker that dies in every handshake: after RESTART_MAX failures the
    # daemon stops restarting it, and every refusal names the first cause,
    # once (each refused call becomes the workspace's last error: quoting
    # that would nest the refusal in itself, call after call).
    bad = os.path.join(tmp, "dying-worker")
    with open(bad, "w") as f:
        f.write("#!/bin/sh\necho 'cause-marker-7301' >&2\nexit 3\n")
    os.chmod(bad, 0o755)
    ws = make_ws(tmp, "crashloop", SANDBOX)
    with OwnDaemon(tmp, "crashloop", extra=["--worker", bad]) as d:
        c = d.conn()
        errs = [term(c, ws, "true") for _ in range(9)]
        c.close()
        check(all(not r["ok"] for r in errs), errs)
        first = errs[0]["error"]["message"]
        check("cause-marker-7301" in first and "not restarting" not in first, first)
        refused = [r["error"] for r in errs if "not restarting" in r["error"]["message"]]
        check(len(refused) >= 3, [r["error"] for r in errs])
        for e in refused:
            m = e["message"]
            check(e["code"] == "worker_crashed" and m.count("not restarting") == 1 and m.count("cause-marker-7301") == 1
                  and len(m) < 600, m)
        st = d.ws_status(ws)
        check(st["restart_blocked"] and st["last_error"].count("not restarting") == 1, st)
        return f"{len(refused)} refusals, each naming the cause once: {refused[-1]['message'][:160]}"


def t_restart_limit_cause_is_the_workers(d0, tmp):
    """The refusal past the restart limit names the worker's own failure,
    not the workspace's last failed call: a caller that sends a bad call
    after each crash (its error quotes the caller's words, an unknown
    field's name) must not choose what the user reads as the cause."""
    bad = os.path.join(tmp, "dying-worker-2")
    with open(bad, "w") as f:
        f.write("#!/bin/sh\necho 'cause-marker-7302' >&2\nexit 3\n")
    os.chmod(bad, 0o755)
    ws = make_ws(tmp, "crashloop-2", SANDBOX)
    planted = "PLANTED-sandbox-disabled-run-with-no-sandbox"
    with OwnDaemon(tmp, "crashloop-2", extra=["--worker", bad]) as d:
        c = d.conn()
        refused = []
        for _ in range(9):
            r = term(c, ws, "true")
            check(not r["ok"], r)
            if "not restarting" in r["error"]["message"]:
                refused.append(r["error"])
            b = c.call({"tool": "terminal", "workspace": ws, "command": "true", planted: 1})
            check(b["error"]["code"] == "bad_request" and planted in b["error"]["message"], b)
        c.close()
        check(len(refused) >= 3, refused)
        for e in refused:
            m = e["message"]
            check(e["code"] == "worker_crashed" and "cause-marker-7302" in m and planted not in m, m)
        return f"{len(refused)} refusals name the worker's failure: {refused[0]['message'][:160]}"


class OwnDaemon:
    """A daemon of a test's own (one it kills, or starts differently),
    stopped and its socket removed at the end of the with block."""

    def __init__(self, tmp, name, **kw):
        self.d = Daemon(tmp, name, **kw)

    def __enter__(self):
        return self.d

    def __exit__(self, *exc):
        self.d.stop()
        if os.path.exists(self.d.sock):
            os.unlink(self.d.sock)


def nofile_limits(pid):
    """(soft, hard) 'Max open files' of pid, from /proc/PID/limits."""
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no 'Max open files' in /proc/%d/limits" % pid)


def t_descriptor_limit_raised(d0, tmp):
    """A daemon started with a small soft descriptor limit (a service
    starts at 1 024 under systemd) raises it to the hard one, and so does
    its monitor, while what it starts (a jail's commands, a terminal's
    shell) gets the soft limit the daemon was given. Before, at 1 024 the
    daemon refused jails past about 200 workspaces ("pipe: Too many open
    files"); here 64 stands for it and 24 workspaces need more."""
    with OwnDaemon(tmp, "nofile", prefix=["prlimit", "--nofile=64:", "--"]) as d:
        soft, hard = nofile_limits(d.pid)
        check(soft == hard and soft > 64, ("the daemon's soft limit was not raised", soft, hard))
        c = d.conn()
        for i in range(24):
            ws = make_ws(tmp, "nofile-%d" % i, SANDBOX)
            r = term(c, ws, "echo L$(ulimit -Sn)L")
            check(r["ok"] and r["stdout"] == "L64L\n", (i, "the jail's command", r))
        monitors = [p for p in proc_tree(d.pid) if comm(p) == "vsd-monitor"]
        for m in monitors:
            check(nofile_limits(m)[0] == hard, ("the monitor's soft limit", nofile_limits(m)))
        if os.geteuid() == 0:
            check(len(monitors) == 1, ("no monitor under a root daemon", monitors))
        sh = PtyShell(d, ws)
        sh.write(b"echo P$(ulimit -Sn)P\n")
        check(sh.expect(b"P64P"), ("the terminal's shell", sh.buf[-300:]))
        sh.write(b"exit\n")
        check(sh.wait() == 0, "the terminal's shell did not exit")
        c.close()
    return "daemon %d of %d, 24 workspaces, jail and terminal at 64, %d monitor(s) raised" % (soft, hard, len(monitors))


def t_daemon_sigkill(d0, tmp):
    # 20 live jails, each running a command: a SIGKILLed daemon leaves none
    # of their processes after 200 ms.
    with OwnDaemon(tmp, "killme") as d:
        wss = [make_ws(tmp, f"kill{i}", SANDBOX) for i in range(20)]
        c = d.conn()
        for ws in wss:
            check(term(c, ws, "true")["ok"], "warm-up")
        for i, ws in enumerate(wss):
            c.send({"id": 100 + i, "tool": "terminal", "workspace": ws, "command": "sleep 60"})
        time.sleep(0.5)
        tree = proc_tree(d.p.pid)
        check(len([p for p in tree if comm(p) == "bwrap"]) >= 20, [comm(p) for p in tree])
        left, ms, tree = sigkill_and_wait(d, 0.2)
        check(not left, f"left after 200 ms: {left}")
        notes.append(f"daemon SIGKILL: {len(tree)} processes of 20 live jails gone in {ms:.0f} ms")


def start_slow_jails(d, tmp, name, n, command):
    """n workspaces with 300 masks each (seconds of bwrap setup under
    load), a first call sent to each without waiting; (conn, workspaces)."""
    files = {f"m{i}/.env": "S=1\n" for i in range(300)}
    wss = [make_ws(tmp, f"{name}{i}", SANDBOX, files) for i in range(n)]
    c = d.conn()
    for i, ws in enumerate(wss):
        c.send({"id": 200 + i, "tool": "terminal", "workspace": ws, "command": command})
    return c, wss


def t_daemon_sigkill_starting(d0, tmp):
    # Jails still being set up (hundreds of masks to mount) when the daemon
    # is SIGKILLed: bubblewrap's --die-with-parent does not reach the inner
    # bwrap before its setup is done (it lingered ~10 s here); the outer
    # bwrap, pid 1 of the jail's outer pid namespace, takes it with it.
    with OwnDaemon(tmp, "killstart") as d:
        start_slow_jails(d, tmp, "kstart", 8, "sleep 60")
        for _ in range(500):
            if any(comm(p) == "bwrap" for p in proc_tree(d.p.pid)):
                break
            time.sleep(0.01)
        time.sleep(0.2)
        left, ms, tree = sigkill_and_wait(d, 1.0)
        check(not left, f"left after 1 s: {left}")
        notes.append(f"daemon SIGKILL while jails start: {len(tree)} processes gone in {ms:.0f} ms")


def nspids(pid):
    """The pid in each pid namespace, the outermost first ([] if gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return [int(x) for l in f if l.startswith("NSpid:") for x in l.split()[1:]]
    except OSError:
        return []


def t_outer_bwrap_killed_starting(d0, tmp):
    # A local jail's outer bwrap is pid 1 of a pid namespace of its own, so
    # its end (the daemon's SIGKILL, the OOM killer, a user's kill) ends the
    # inner bwrap at once, even one still mounting hundreds of masks, where
    # bubblewrap's --die-with-parent does not reach it yet (it ran on ~10 s).
    with OwnDaemon(tmp, "killouter") as d:
        c, wss = start_slow_jails(d, tmp, "kouter", 4, "echo up")
        outer = []
        for _ in range(500):
            outer = [p for p in proc_tree(d.p.pid) if comm(p) == "bwrap" and len(nspids(p)) == 2]
            if len(outer) >= 2 and all(proc_tree(p) for p in outer):
                break
            time.sleep(0.01)
        check(outer, [(p, comm(p), nspids(p)) for p in proc_tree(d.p.pid)])
        for p in outer:
            check(nspids(p)[1] == 1, ("the outer bwrap is not pid 1 of its namespace", nspids(p)))
            below = proc_tree(p)
            check(all(len(nspids(k)) >= 2 for k in below if nspids(k)), ("a jail process outside the namespace", below))
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                # It ended between the look and the kill (a CI run saw it):
                # its jail must be gone all the same.
                pass
            t0 = time.time()
            while time.time() - t0 < 1.0 and any(alive(k) for k in below):
                time.sleep(0.005)
            check(not any(alive(k) for k in below), ("left after 1 s", [(k, comm(k)) for k in below if alive(k)]))
        notes.append(f"outer bwrap SIGKILLed while {len(outer)} jails start: each jail gone at once")
        # The calls in flight fail or were served; the next call on each
        # workspace gets a jail again.
        for i, ws in enumerate(wss):
            r = c.call({"tool": "terminal", "workspace": ws, "command": "echo again"})
            check(r["ok"] and r["stdout"] == "again\n", r)


def t_inherited_fd(d0, tmp):
    # A daemon started with a descriptor left open (`exec 9<dir` in the
    # shell that started it): no jail it starts may reach that directory
    # through /proc/self/fd/9. The directory is readable by the jail's uid;
    # only the mount namespace hides it.
    secret = os.path.join(tmp, "fd-secret")
    os.makedirs(os.path.join(secret, ".ssh"))
    with open(os.path.join(secret, ".ssh/id_rsa"), "w") as f:
        f.write("DAEMON-HOST-KEY\n")
    for p in (secret, os.path.join(secret, ".ssh")):
        os.chmod(p, 0o755)
    fd = os.open(secret, os.O_RDONLY | os.O_DIRECTORY)
    os.dup2(fd, 9)
    os.close(fd)
    try:
        own = OwnDaemon(tmp, "fds", pass_fds=(9,))
    finally:
        os.close(9)
    with own as d:
        sb = make_ws(tmp, "fd-sb", SANDBOX)
        c = d.conn()
        r = term(c, sb, "ls /proc/self/fd; cat /proc/self/fd/9/.ssh/id_rsa")
        c.close()
        check(r["ok"] and "DAEMON-HOST-KEY" not in r["stdout"] and r["exit_code"] != 0 and
              "9" not in r["stdout"].split(), r)


def t_config_reload(d, tmp):
    sb = make_ws(tmp, "reload", SANDBOX, {"secret.txt": "TOPSECRET\n"})
    c = d.conn()
    r = term(c, sb, "cat secret.txt")
    check(r["stdout"] == "TOPSECRET\n", r)
    gen = r["sandbox"]["generation"]
    cfg = os.path.join(sb, "vectora.toml")
    with open(cfg, "w") as f:
        f.write('[sandbox]\nenabled = true\nmask = [".env", "**/*.pem", "secret.txt"]\n')
    r = term(c, sb, "cat secret.txt")
    check(r["ok"] and "TOPSECRET" not in r["stdout"] and r["sandbox"]["generation"] > gen, r)
    r = c.call({"tool": "file_read", "workspace": sb, "path": "secret.txt"})
    check(r["error"]["code"] == "denied", r)
    with open(cfg, "w") as f:
        f.write('[sandbox]\nenabled = true\nmask = [".env"\n')
    r = term(c, sb, "echo hi")
    check(not r["ok"] and r["error"]["code"] == "config_invalid" and r["error"]["message"].startswith("vectora.toml:"), r)
    check(r["sandboxed"] is False, r)
    with open(cfg, "w") as f:
        f.write('[sandbox]\nenabled = true\nmask = [".env"]\nbogus = 1\n')
    r = term(c, sb, "echo hi")
    check(r["error"]["code"] == "config_invalid" and "vectora.toml:4:" in r["error"]["message"], r)
    with open(cfg, "w") as f:
        f.write('[sandbox]\nenabled = true\nmask = [".env", "**/*.pem", "secret.txt"]\n')
    r = term(c, sb, "echo back; cat secret.txt")
    check(r["ok"] and r["stdout"] == "back\n" and r["sandboxed"], r)
    # Removing the file loosens: it waits for the host user's approval.
    os.unlink(cfg)
    r = term(c, sb, "echo still; cat secret.txt")
    check(r["ok"] and r["sandboxed"] is True and r["stdout"] == "still\n" and r["policy_pending"], r)
    a = subprocess.run([CLI, "--socket", d.sock, "allow", "-w", sb], capture_output=True, text=True, timeout=60)
    check(a.returncode == 0 and "the sandbox is switched off" in a.stdout, a)
    r = term(c, sb, "cat secret.txt")
    check(r["ok"] and r["sandboxed"] is False and r["stdout"] == "TOPSECRET\n", r)
    c.close()


def t_policy_drain(d, tmp):
    sb = make_ws(tmp, "drain", SANDBOX)
    c1, c2 = d.conn(), d.conn()
    check(term(c1, sb, "true")["ok"], "warm")
    c1.send({"id": 7, "tool": "terminal", "workspace": sb, "command": "sleep 1; echo finished"})
    time.sleep(0.2)
    with open(os.path.join(sb, "vectora.toml"), "w") as f:
        f.write(SANDBOX + "network = false\n")
    r2 = term(c2, sb, "echo new")
    r1 = c1.recv()
    check(r1["ok"] and r1["stdout"] == "finished\n", ("in-flight call must finish on the old policy", r1))
    check(r2["ok"] and r2["sandbox"]["generation"] == r1["sandbox"]["generation"] + 1, (r1, r2))
    c1.close()
    c2.close()


def t_drain_then_start(d, tmp):
    # A policy change: the old jail finishes its in-flight call, is ended and
    # reaped, and only then is the next jail walked and started (a hostile
    # command still running in the old jail could otherwise race the new
    # jail's mounts). The new call is answered after the old one, by the new
    # generation, and no process of the old jail is left when it runs.
    sb = make_ws(tmp, "drain-start", SANDBOX)
    c1, c2 = d.conn(), d.conn()
    check(term(c1, sb, "true")["ok"], "warm")
    old = d.ws_status(sb)["worker"]["pid"]
    c1.send({"id": 8, "tool": "terminal", "workspace": sb, "command": "sleep 1.5; echo finished"})
    time.sleep(0.2)
    with open(os.path.join(sb, "vectora.toml"), "w") as f:
        f.write(SANDBOX + "network = false\n")
    got = []

    def second():
        got.append((term(c2, sb, "echo new"), time.time()))
    t = threading.Thread(target=second)
    t.start()
    r1 = c1.recv()
    t1 = time.time()
    t.join(30)
    check(got, "the second call was not answered")
    r2, t2 = got[0]
    check(r1["ok"] and r1["stdout"] == "finished\n", r1)
    check(r2["ok"] and r2["stdout"] == "new\n" and r2["sandbox"]["generation"] == r1["sandbox"]["generation"] + 1,
          (r1, r2))
    check(t2 >= t1, ("the new jail served before the old one had finished", t1, t2))
    check(not alive(old) and not [p for p in proc_tree(old) if alive(p)], ("old jail still alive", old))
    c1.close()
    c2.close()


def t_mask_appears(d, tmp):
    sb = make_ws(tmp, "maskover", SANDBOX, {"sub/keep.txt": "k\n"})
    c = d.conn()
    check(term(c, sb, "true")["ok"], "warm")
    c2 = d.conn()
    worker = d.ws_status(sb)["worker"]["pid"]
    # c2's command must be running when .env appears: a call the daemon
    # takes after that is rightly served by the rebuilt jail (it waited
    # 20 s for "sleep 20" there). A daemon slow to take it (starved of the
    # CPU on a loaded host: the sleep of 0.2 s that stood here was not
    # enough) is made here: stopped for 0.5 s from the send on.
    os.kill(d.pid, signal.SIGSTOP)
    resume = threading.Timer(0.5, os.kill, (d.pid, signal.SIGCONT))
    resume.start()
    try:
        c2.send({"id": 5, "tool": "terminal", "workspace": sb, "command": "sleep 20"})
        end = time.time() + 30
        while time.time() < end and not any(comm(p) == "sleep" for p in proc_tree(worker)):
            time.sleep(0.01)
    finally:
        resume.join()
        os.kill(d.pid, signal.SIGCONT)
    check(any(comm(p) == "sleep" for p in proc_tree(worker)), "c2's sleep 20 did not start in the jail")
    path = os.path.join(sb, "sub", ".env")
    t0 = time.monotonic()
    with open(path, "w") as f:
        f.write("LEAK=1\n")
    os.chown(path, OWNER.pw_uid, OWNER.pw_gid)
    r = c.call({"tool": "file_read", "workspace": sb, "path": "sub/.env"})
    check(r["error"]["code"] == "denied", r)
    seen = None
    for _ in range(200):
        r = term(c, sb, "cat sub/.env")
        if r["ok"] and "LEAK" not in r["stdout"]:
            seen = time.monotonic() - t0
            break
        time.sleep(0.005)
    check(seen is not None, "the new .env stayed readable through terminal")
    r = c2.recv()
    check(r["error"]["code"] == "worker_recycled", r)
    # A rename into a masked name counts too.
    with open(os.path.join(sb, "key.txt"), "w") as f:
        f.write("PEM\n")
    term(c, sb, "true")
    os.rename(os.path.join(sb, "key.txt"), os.path.join(sb, "key.pem"))
    ok = False
    for _ in range(200):
        r = term(c, sb, "cat key.pem")
        if r["ok"] and "PEM" not in r["stdout"]:
            ok = True
            break
        time.sleep(0.005)
    check(ok, "renamed key.pem stayed readable")
    notes.append(f"mask window: .env created -> unreadable through terminal in {seen * 1000:.1f} ms")
    c.close()
    c2.close()


def t_limits(d, tmp):
    lim = '[sandbox.limits]\ntimeout = 6\npids = 64\nmemory = "256M"\nmax_output = 65536\n'
    bomb = make_ws(tmp, "bomb", SANDBOX + lim)
    other = make_ws(tmp, "other", SANDBOX)
    c, c2 = d.conn(), d.conn()
    check(term(c2, other, "true")["ok"], "warm")
    check(term(c, bomb, "true")["ok"], "warm")
    w = d.ws_status(bomb)
    notes.append("limits: " + "; ".join(w["limits"]))
    # Where the daemon reports a cgroup, the jail's processes are in it
    # from the start (the spawned child joins it before exec).
    if any("cgroup" in x for x in w["limits"]) and not any("pids: RLIMIT" in x for x in w["limits"]):
        import glob as _g
        # vectora-sandboxd/INSTANCE/ws-HASH (docs/protocol.md, "Daemon instances")
        procs = [p for p in _g.glob("/sys/fs/cgroup/pids/vectora-sandboxd/*/ws-*/cgroup.procs")
                 + _g.glob("/sys/fs/cgroup/vectora-sandboxd/*/ws-*/cgroup.procs")]
        members = set()
        for p in procs:
            members |= set(open(p).read().split())
        check(len(members) >= 2, ("no jail process in any workspace cgroup", procs))
        r = term(c, bomb, "cat /proc/self/cgroup")
        check(r["ok"] and ("pids:/" in r["stdout"] or "0::/" in r["stdout"]), r)
    rss0 = int([l for l in open(f"/proc/{d.p.pid}/status") if l.startswith("VmRSS")][0].split()[1])

    def during(label, command, check_result):
        c.send({"id": 1, "tool": "terminal", "workspace": bomb, "command": command})
        time.sleep(0.5)
        t0 = time.time()
        r = term(c2, other, "echo alive")
        dt = time.time() - t0
        check(r["ok"] and r["stdout"] == "alive\n" and dt < 3, (label, "other workspace stalled", dt, r))
        res = c.recv()
        check_result(res)
        notes.append(f"{label}: other workspace answered in {dt * 1000:.0f} ms")

    during("fork bomb", "b() { b | b & }; b; sleep 2", lambda r: check(r["ok"] or r["error"]["code"] in ("worker_crashed", "worker_recycled"), r))
    during("memory hog", "head -c 2000000000 /dev/zero | tail > /dev/null; echo rc=$?",
           lambda r: check(r["ok"] and "rc=0" not in r["stdout"], ("hog was not stopped", r)))
    # Address space only reserved is not used memory: V8 reserves 10 GiB
    # per WebAssembly memory, and Node's fetch failed under RLIMIT_AS.
    r = term(c, bomb, "python3 -c 'import mmap; m = mmap.mmap(-1, 16 << 30, flags=mmap.MAP_PRIVATE, "
                      "prot=0); print(\"reserved\")'")
    check(r["ok"] and r["stdout"] == "reserved\n", ("a 16 GiB reservation was refused under memory = 256M", r))
    during("yes flood", "yes", lambda r: check(r["ok"] and r["timed_out"] and r["truncated"]
                                                and len(r["stdout"]) <= 65536 + 100, {k: v for k, v in r.items() if k != "stdout"}))
    rss1 = int([l for l in open(f"/proc/{d.p.pid}/status") if l.startswith("VmRSS")][0].split()[1])
    check(rss1 - rss0 < 64 * 1024, f"daemon RSS grew from {rss0} to {rss1} kB")
    r = term(c, bomb, "echo still-serving")
    check(r["ok"] and r["stdout"] == "still-serving\n", r)
    c.close()
    c2.close()


def t_peer_uid(d, tmp):
    if not ROOT:
        needs_root("needs root to connect as another uid")
    other = pwd.getpwnam("nobody")
    code = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
            "try:\n s.connect(sys.argv[1])\nexcept OSError as e:\n print('EACCES' if e.errno==13 else e); sys.exit(0)\n"
            "s.sendall(b'{\"id\":1,\"tool\":\"status\"}\\n')\nprint(s.makefile().readline().strip())\n")

    def run_as():
        py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
        return subprocess.run([py, "-c", code, d.sock], capture_output=True, text=True, timeout=10,
                              preexec_fn=lambda: (os.setgid(other.pw_gid), os.setuid(other.pw_uid))).stdout.strip()

    check(oct(os.stat(d.sock).st_mode & 0o777) == "0o600", oct(os.stat(d.sock).st_mode))
    check(run_as() == "EACCES", "socket mode did not keep another uid out")
    os.chmod(d.sock, 0o666)
    try:
        out = run_as()
    finally:
        os.chmod(d.sock, 0o600)
    check('"forbidden"' in out or out == "", out)
    check("refused a connection from uid %d" % other.pw_uid in open(d.log).read(), "refusal not logged")


def t_peer_namespace(d, tmp):
    # A process in another user or pid namespace (a jail, a container) that
    # reaches the socket runs as an accepted uid, so SO_PEERCRED alone let
    # it in: it could ask for a command in an unsandboxed workspace. The
    # daemon refuses it now, whatever its uid.
    if not shutil.which("unshare"):
        raise Skip("unshare (util-linux) is not installed")
    un = make_ws(tmp, "peer-ns-un", None, {})
    # The refusal may come (and the connection close) before the request
    # is sent: the reply is read either way.
    code = ("import json,socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
            "try:\n s.sendall((json.dumps({'id':1,'tool':'terminal','workspace':sys.argv[2],'command':'id -u'})+'\\n').encode())\n"
            "except OSError:\n pass\n"
            "print(s.makefile().readline().strip())\n")
    py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    variants = [("user namespace", ["unshare", "--user", "--map-current-user"]),
                ("user and pid namespaces", ["unshare", "--user", "--map-current-user", "--pid", "--fork"])]
    if ROOT:
        variants.append(("pid namespace", ["unshare", "--pid", "--fork"]))
    # Control: the same client from the daemon's own namespaces is served.
    r = subprocess.run([py, "-c", code, d.sock, un], capture_output=True, text=True, timeout=20)
    check('"ok":true' in r.stdout.replace(" ", ""), ("control", r.stdout, r.stderr))
    for what, pre in variants:
        r = subprocess.run(pre + [py, "-c", code, d.sock, un], capture_output=True, text=True, timeout=20)
        if r.returncode != 0 and "unshare" in r.stderr:
            raise Skip(f"this host refuses {what}s to this user: {r.stderr.strip()}")
        check('"forbidden"' in r.stdout and '"ok":true' not in r.stdout.replace(" ", ""), (what, r.stdout, r.stderr))
    log = open(d.log).read()
    check("in another user namespace" in log, "refusal not logged with its reason")


def t_big_and_garbage(d, tmp):
    sb = make_ws(tmp, "big", SANDBOX)
    good = d.conn()
    check(term(good, sb, "true")["ok"], "warm")
    bad = d.conn()
    bad.s.sendall(b"this is not json\n")
    r = bad.recv()
    check(r["error"]["code"] == "bad_request" and r["id"] is None, r)
    r = bad.call({"tool": "status"})
    check(r["ok"], "connection unusable after garbage")
    stop = threading.Event()
    errs = []

    def hammer():
        while not stop.is_set():
            r = term(good, sb, "echo ok")
            if not r.get("ok"):
                errs.append(r)

    th = threading.Thread(target=hammer)
    th.start()
    big = d.conn()
    chunk = b"x" * (1 << 20)
    sent = 0
    try:
        big.s.sendall(b'{"id":1,"tool":"terminal","workspace":"' + sb.encode() + b'","command":"')
        while sent < 100 * (1 << 20):
            big.s.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        r = big.recv()
        check(r["error"]["code"] == "request_too_large", r)
    except (EOFError, ConnectionResetError):
        pass
    stop.set()
    th.join()
    check(not errs, errs[:2])
    check(sent < 100 * (1 << 20) or True, sent)
    notes.append(f"100 MB line: refused after {sent >> 20} MiB sent")
    check(d.p.poll() is None, "daemon died")
    check(term(good, sb, "echo fine")["stdout"] == "fine\n", "other client harmed")
    for c in (good, bad, big):
        c.close()


def t_pty(d, tmp):
    un = make_ws(tmp, "pty-un", None)
    sb = make_ws(tmp, "pty-sb", SANDBOX)
    env = dict(os.environ, VECTORA_SANDBOX_SOCKET=d.sock)
    p = subprocess.run([CLI, "shell", "-w", un], input="echo PTY-$((6*7))\nexit 5\n", capture_output=True, text=True,
                       env=env, timeout=20)
    check(p.returncode == 5 and "PTY-42" in p.stdout, (p.returncode, p.stdout, p.stderr))
    # Sandboxed: the shell runs in the jail (t_pty_jail has the rest).
    p = subprocess.run([CLI, "shell", "-w", sb], input="echo JAIL-$((6*7)); exit 9\n", capture_output=True, text=True,
                       env=env, timeout=20)
    check(p.returncode == 9 and "JAIL-42" in p.stdout, (p.returncode, p.stdout, p.stderr))
    # A real terminal: raw mode and resize on SIGWINCH.
    t = PtyShell(d, un)
    time.sleep(0.5)
    t.write(b"stty size; echo M1\n")
    check(t.expect(b"M1"), t.buf)
    check(t.resize_seen(40, 120), t.buf)
    t.write(b"exit 7\n")
    check(t.wait() == 7, t.buf)
    # Each terminal's start and end are in the audit log, the exit status with it.
    for ws, codes, sandboxed in ((un, [5, 7], False), (sb, [9], True)):
        opens, ends = pty_audit(d.audit, ws)
        check(len(opens) == len(codes) and all(l["outcome"] == "ok" and l["sandboxed"] is sandboxed for l in opens),
              opens)
        check(sorted(l["target"]["exit_code"] for l in ends) == codes
              and all(l["sandboxed"] is sandboxed and l["outcome"] == "ok" for l in ends), ends)
        # The start line names the terminal its end line does.
        check(sorted(l["target"]["pty"] for l in opens) == sorted(l["target"]["pty"] for l in ends), (opens, ends))


def t_pty_typeahead(d, tmp):
    """What the user types before the prompt appears runs (as with ssh):
    the terminal goes raw without a flush."""
    un = make_ws(tmp, "pty-typeahead", None)
    t = PtyShell(d, un)
    # At once: the CLI has not even connected to the daemon yet.
    t.write(b"echo TYPED-$((6*7)); exit 4\n")
    check(t.expect(b"TYPED-42"), t.buf)
    check(t.wait() == 4, t.buf)


def t_pty_host_start(d, tmp):
    """A host terminal starts as execvp() would start it in a shell that
    ran setenv(): the program looked up in the client's own PATH (past a
    file that cannot be run), a file with no #! run by /bin/sh, 127 when
    nothing is found; TERM xterm-256color unless the client names one, PWD
    the workspace, the client's variables over the daemon's."""
    prog = "#!/bin/sh\necho \"RAN $0 FOO=$FOO TERM=$TERM PWD=$PWD\"; exit 3\n"
    ws = make_ws(tmp, "pty-start", None, {"bin1/prog": "not a program\n", "bin2/prog": prog,
                                          "bin2/plain": "echo PLAIN-$((6*7)); exit 5\n"})
    os.chmod(os.path.join(ws, "bin1/prog"), 0o644)
    for f in ("bin2/prog", "bin2/plain"):
        os.chmod(os.path.join(ws, f), 0o755)
    path = "%s/bin1:%s/bin2:/usr/bin:/bin" % (ws, ws)

    def run(argv, **extra):
        c = d.conn()
        r = c.call(dict({"tool": "terminal_open", "workspace": ws, "cols": 80, "rows": 24, "argv": argv}, **extra))
        check(r.get("ok"), r)
        out, ex = pty_events(c, r["pty"], None, t=20)
        c.close()
        return out, ex and ex.get("exit_code")

    out, code = run(["prog"], env={"PATH": path, "FOO": "bar", "TERM": "from-env"}, term="vt100")
    check(code == 3 and b"RAN %s/bin2/prog FOO=bar TERM=from-env PWD=%s" % (ws.encode(), ws.encode()) in out,
          (code, out))
    out, code = run(["prog"], env={"PATH": path})
    check(code == 3 and b"TERM=xterm-256color" in out, (code, out))
    out, code = run(["plain"], env={"PATH": path}, term="vt100")
    check(code == 5 and b"PLAIN-42" in out, (code, out))
    out, code = run(["%s/bin2/prog" % ws], term="vt100")
    check(code == 3 and b"TERM=vt100" in out, (code, out))
    out, code = run(["no-such-program-here"], env={"PATH": path})
    check(code == 127, (code, out))


def pty_events(c, pty, until, t=10):
    """terminal_output of pty (joined) until a terminal_exit or until is seen."""
    out, end = b"", time.time() + t
    c.s.settimeout(t)
    try:
        while time.time() < end:
            m = c.recv()
            if m.get("event") == "terminal_output" and m["pty"] == pty:
                out += m["_raw"]
                if until and until in out:
                    return out, None
            elif m.get("event") == "terminal_exit" and m["pty"] == pty:
                return out, m
    finally:
        c.s.settimeout(None)
    raise AssertionError(("no", until, out))


def t_pty_jail(d, tmp):
    """A terminal in a sandboxed workspace is a PTY of the jail's own devpts,
    as the jail's user: what a one-shot command cannot do, it cannot either."""
    sb = make_ws(tmp, "pty-jail", SANDBOX, {".env": "SECRET=1\n", "a.txt": "hello\n"})
    c = d.conn()
    r = term(c, sb, "id -u; id -g")
    check(r["ok"], r)
    jail_ids = r["stdout"].split()
    t = PtyShell(d, sb)
    t.write(b"echo TYPED-$((6*7))\n")  # typeahead, before the jail has even started
    check(t.expect(b"TYPED-42", 30), t.buf)
    t.write(b"echo U=$(id -u):$(id -g):$(tty); cat .env; echo END$((0+1))\n")
    check(t.expect(b"END1\r\n", 15) and b"SECRET" not in t.buf, t.buf)
    m = re.search(rb"U=(\d+):(\d+):(/dev/pts/\d+)", t.buf)
    check(m and [m.group(1).decode(), m.group(2).decode()] == jail_ids, (t.buf, jail_ids))
    check(m.group(1) != b"0" or not ROOT, t.buf)
    t.write(b"echo x >> vectora.toml; echo RC=$?; pwd; echo END$((1+1))\n")
    check(t.expect(b"END2\r\n", 10) and (os.path.realpath(sb) + "\r\n").encode() in t.buf, t.buf)
    check(re.search(rb"RC=[1-9]", t.buf), t.buf)
    check(open(os.path.join(sb, "vectora.toml")).read() == SANDBOX, "vectora.toml was written")
    check(t.resize_seen(40, 120), t.buf)
    # A status call meanwhile: the worker is busy with a terminal, not idle.
    w = d.ws_status(sb)["worker"]
    t.write(b"exit 7\n")
    check(t.wait() == 7, t.buf)
    check(w and w["state"] == "ready", w)
    lines = [json.loads(l) for l in open(d.audit)]
    ends = [l for l in lines if l["tool"] == "terminal_exit" and l["workspace"] == os.path.realpath(sb)]
    check(ends and ends[-1]["target"]["exit_code"] == 7 and ends[-1]["outcome"] == "ok" and ends[-1]["sandboxed"], ends)
    c.close()


def t_pty_jail_api(d, tmp):
    """Several terminals per workspace; not idle while one is open; closed
    with the connection; ended with a clear event when the policy changes."""
    sb = make_ws(tmp, "pty-jail-api", SANDBOX + "idle_timeout = 1\n")
    c = d.conn()
    o1 = c.call({"tool": "terminal_open", "workspace": sb, "cols": 80, "rows": 24, "argv": ["/bin/sh"]})
    o2 = c.call({"tool": "terminal_open", "workspace": sb, "cols": 80, "rows": 24})
    check(o1["ok"] and o2["ok"] and o1["sandboxed"] and o1["pty"] != o2["pty"], (o1, o2))
    c.send({"tool": "terminal_input", "pty": o1["pty"]}, b"echo one-$((1+1))\n")
    out, _ = pty_events(c, o1["pty"], b"one-2")
    r = c.call({"tool": "terminal_input", "pty": o2["pty"], "data": "echo two-$((1+2))\n"})
    check(r["ok"], r)
    out, _ = pty_events(c, o2["pty"], b"two-3")
    pid = d.ws_status(sb)["worker"]["pid"]
    time.sleep(2.5)  # past idle_timeout: a terminal is open
    w = d.ws_status(sb)
    check(w["worker"] and w["worker"]["pid"] == pid and w["counters"]["idle_ends"] == 0, w)
    r = c.call({"tool": "terminal_resize", "pty": o1["pty"], "cols": 0, "rows": 5})
    check(not r["ok"] and r["error"]["code"] == "bad_request", r)
    r = c.call({"tool": "terminal_close", "pty": o2["pty"]})
    check(r["ok"], r)
    _, ex = pty_events(c, o2["pty"], None)
    check(ex["signal"] == 9 and "ended" not in ex, ex)
    # Another connection cannot touch this one's terminal.
    c2 = d.conn()
    r = c2.call({"tool": "terminal_input", "pty": o1["pty"], "data": "exit\n"})
    check(not r["ok"] and r["error"]["code"] == "not_found", r)
    c2.close()
    # A tighter policy: the terminal ends with its jail, saying so.
    with open(os.path.join(sb, "vectora.toml"), "w") as f:
        f.write(SANDBOX.replace('"**/*.pem"', '"**/*.pem", "x"') + "idle_timeout = 1\n")
    c2 = d.conn()
    r = term(c2, sb, "echo new")
    c2.close()
    check(r["ok"] and r["stdout"] == "new\n", r)
    _, ex = pty_events(c, o1["pty"], None)
    check(ex["ended"] == "worker_recycled" and ex["exit_code"] == 125 and "jail" in ex["message"], ex)
    r = c.call({"tool": "terminal_input", "pty": o1["pty"], "data": "x"})
    check(not r["ok"] and r["error"]["code"] == "not_found", r)
    # Closing the connection ends its terminals; then the worker idles out.
    o3 = c.call({"tool": "terminal_open", "workspace": sb, "cols": 80, "rows": 24,
                 "argv": ["/bin/sh", "-c", "echo $$ > shell.pid; exec sleep 1000"]})
    check(o3["ok"], o3)
    for _ in range(100):
        if os.path.exists(os.path.join(sb, "shell.pid")):
            break
        time.sleep(0.05)
    c.close()
    time.sleep(2.5)
    w = d.ws_status(sb)
    check(w["worker"] is None and w["counters"]["idle_ends"] >= 1, w)


def pty_burst(d, sb, argvs, typed, t=30):
    """One terminal per connection, all at once, each typing ahead typed(i)
    as soon as it is open: [(output, terminal_exit or None)] in order."""
    import selectors
    conns, res, sel = [], [], selectors.DefaultSelector()
    for i, argv in enumerate(argvs):
        c = d.conn()
        c.send(dict({"tool": "terminal_open", "workspace": sb, "cols": 80, "rows": 24, "id": 1},
                    **({"argv": argv} if argv else {})))
        conns.append(c)
        res.append([b"", None])
        sel.register(c.s, selectors.EVENT_READ, i)
    left, end = len(conns), time.time() + t
    try:
        while left and time.time() < end:
            for key, _ in sel.select(max(0.0, end - time.time())):
                i, c = key.data, conns[key.data]
                try:
                    c._fill()
                except EOFError:
                    sel.unregister(c.s)
                    left -= 1
                    continue
                while b"\n" in c.buf:
                    head = json.loads(c.buf.split(b"\n", 1)[0])
                    if len(c.buf.split(b"\n", 1)[1]) < head.get("raw", 0):
                        break
                    m = c.recv()
                    if m.get("id") == 1 and m.get("ok"):
                        c.send({"tool": "terminal_input", "pty": m["pty"]}, typed(i).encode())
                    elif m.get("id") == 1 or m.get("event") == "terminal_exit":
                        res[i][1] = m
                        sel.unregister(c.s)
                        left -= 1
                        break
                    elif m.get("event") == "terminal_output":
                        res[i][0] += m["_raw"]
    finally:
        sel.close()
        for c in conns:
            c.close()
    return res


def t_pty_last_output(d, tmp):
    """A terminal's last output comes before its exit, whatever the process
    did with its terminal meanwhile, on the host and in a jail. The master
    side reads EIO whenever no open of the slave side is left, even for a
    while as the process runs; that was taken for the end of the output and
    what the process wrote after was lost (the escape suite's pty probes,
    rarely: `exec probe` typed ahead, exit 0, no BLOCKED line)."""
    for ws in (make_ws(tmp, "pty-last-un", None), make_ws(tmp, "pty-last-sb", SANDBOX)):
        # Every descriptor of the terminal closed, then /dev/tty (still its
        # controlling terminal) opened again: the line written there arrives.
        r = pty_burst(d, ws, [["/bin/sh", "-c", "exec </dev/null >/dev/null 2>&1; sleep 0.3; "
                               "echo LAST-$((6*7)) >/dev/tty; exit 3"]], lambda i: "")
        out, ex = r[0]
        check(ex and ex.get("event") == "terminal_exit" and ex["exit_code"] == 3 and b"LAST-42" in out, (ws, r))
        # Many at once, typed ahead of the shell (some shells start late):
        # each line's command prints one line and exits at once; every line
        # arrives and every exit is the command's.
        for rnd in range(3):
            n = 16
            argvs = [None if i % 2 else ["/bin/sh", "-c", "sleep 0.%d; exec /bin/sh -i" % (i % 3)] for i in range(n)]
            r = pty_burst(d, ws, argvs, lambda i: "exec /bin/sh -c 'echo MARK-$((40+2))-%d; exit 3'\n" % i)
            bad = [(i, out[-200:], ex) for i, (out, ex) in enumerate(r)
                   if not ex or ex.get("event") != "terminal_exit" or ex["exit_code"] != 3
                   or (b"MARK-42-%d\r\n" % i) not in out]
            check(not bad, (ws, rnd, bad))


def t_pty_left_job_ends(d, tmp):
    """A shell that exits leaving a job that ignores SIGHUP and keeps the
    terminal open still ends its terminal, on the host and in a jail: its
    last output and its own exit code arrive, in a few seconds, not when
    the job ends (the host terminal waited for the job's last close)."""
    for ws in (make_ws(tmp, "pty-job-un", None), make_ws(tmp, "pty-job-sb", SANDBOX)):
        t0 = time.time()
        r = pty_burst(d, ws, [["/bin/sh", "-c", "trap '' HUP; sleep 20 & trap - HUP; echo JOB=$!; "
                               "echo BYE-$((6*7)); exit 4"]], lambda i: "", t=15)
        out, ex = r[0]
        took = time.time() - t0
        m = re.search(rb"JOB=(\d+)", out)
        if ws.endswith("-un") and m:
            try:
                os.kill(int(m.group(1)), signal.SIGKILL)
            except ProcessLookupError:
                pass
        check(ex and ex.get("event") == "terminal_exit" and ex["exit_code"] == 4 and b"BYE-42" in out
              and took < 10, (ws, took, r))


def t_pty_cycles_leak_nothing(d, tmp):
    """Terminals opened and ended over and over, every way they end (the
    shell exits, terminal_close, the client drops the connection, the shell
    leaves a job holding the terminal): the daemon and the worker hold the
    same descriptors after as before (each terminal holds its master and
    an open of its slave until the reap; a close path that missed one
    would leak a descriptor per terminal)."""
    def one(ws, how):
        c = d.conn()
        argv = {"exit": ["/bin/sh", "-c", "exit 0"], "job": ["/bin/sh", "-c", "trap '' HUP; sleep 0.5 & exit 0"]}
        r = c.call({"tool": "terminal_open", "workspace": ws, "cols": 80, "rows": 24,
                    "argv": argv.get(how, ["/bin/sh"])})
        check(r.get("ok"), r)
        if how == "drop":
            return c.close()
        if how == "close":
            c.send({"tool": "terminal_close", "pty": r["pty"]})
        end = time.time() + 20
        while time.time() < end and c.recv().get("event") != "terminal_exit":
            pass
        check(time.time() < end, (ws, how, "no terminal_exit"))
        c.close()

    def settled(pids, want):
        end = time.time() + 10
        while time.time() < end and [term_fds(p) for p in pids] != want:
            time.sleep(0.1)
        return [term_fds(p) for p in pids]

    def term_fds(pid):
        # Another workspace's cgroup files (pids.current, pids.events)
        # open and close with its own jails, which the suite's earlier
        # cases left running and which may idle out or restart while this
        # one runs: they are not this test's to count. A terminal's own
        # descriptors (ptmx, pts, sockets, pipes, pidfds) never live there.
        return sorted(t for t in fd_targets(pid).values() if not t.startswith("/sys/fs/cgroup/"))

    kinds = ("exit", "close", "drop", "job")
    n = 200
    for ws in (make_ws(tmp, "pty-cyc-un", None), make_ws(tmp, "pty-cyc-sb", SANDBOX + "idle_timeout = 600\n")):
        for k in kinds:
            one(ws, k)
        worker = d.ws_status(ws).get("worker") or {}
        pids = [d.pid] + ([worker["pid"]] if worker.get("pid") else [])
        time.sleep(1)
        before = [term_fds(p) for p in pids]
        for i in range(n):
            one(ws, kinds[i % len(kinds)])
        after = settled(pids, before)
        check(after == before, (ws, n, [("gained", len(a) - len(b), sorted(set(a) - set(b))[:5], "lost", sorted(set(b) - set(a))[:5])
                                        for a, b in zip(after, before)]))
        if ws.endswith("-sb"):
            check((d.ws_status(ws).get("worker") or {}).get("pid") == pids[1], "the same worker throughout")


def proc_wait(c, ws, pid_, want_exit=True, t=20, **offs):
    """process_output until the process ended (or t seconds)."""
    end = time.time() + t
    out = err = ""
    o = {"stdout_offset": 0, "stderr_offset": 0}
    o.update(offs)
    while time.time() < end:
        r = c.call({"tool": "process_output", "workspace": ws, "process": pid_, "wait_ms": 2000, **o})
        check(r["ok"], r)
        out += r["stdout"]
        err += r["stderr"]
        o = {"stdout_offset": r["stdout_offset"], "stderr_offset": r["stderr_offset"]}
        if not r["running"] and r["stdout_offset"] == r["stdout_total"] and r["stderr_offset"] == r["stderr_total"]:
            return r, out, err
    raise AssertionError(("still running", pid_, out, err))


def t_process(d, tmp):
    """Background processes: output across calls, input, signals, the ring
    with its dropped count, the list, the per-process timeout, the jail's
    limits, not idle while one runs, ended with the jail."""
    lim = '[sandbox.limits]\nmax_output = 4096\npids = 64\nbackground_timeout = 30\n'
    sb = make_ws(tmp, "proc", SANDBOX + "idle_timeout = 1\n" + lim, {".env": "SECRET=1\n"})
    c = d.conn()
    r = c.call({"tool": "process_start", "workspace": sb,
                "command": "echo start; cat .env; read l; echo got-$l; echo err >&2; id -u; exit 3"})
    check(r["ok"] and r["sandboxed"] and r["process"] >= 1 and r["pid"] > 0, r)
    p1 = r["process"]
    r = c.call({"tool": "process_output", "workspace": sb, "process": p1, "wait_ms": 5000})
    check(r["ok"] and r["running"] and r["stdout"].startswith("start\n") and "SECRET" not in r["stdout"], r)
    check(term(c, sb, "echo between")["stdout"] == "between\n", "a one-shot call meanwhile")
    r = c.call({"tool": "process_input", "workspace": sb, "process": p1, "data": "typed\n"})
    check(r["ok"], r)
    r, out, err = proc_wait(c, sb, p1)
    jail_uid = term(c, sb, "id -u")["stdout"]
    check(out == "start\ngot-typed\n" + jail_uid and err == "err\n", (out, err))
    check(r["exit_code"] == 3 and r["signal"] == 0 and r["timed_out"] is False and "ended" not in r, r)
    # The ring keeps the last max_output bytes and says how many went.
    r = c.call({"tool": "process_start", "workspace": sb, "command": "seq 1 20000"})
    p2 = r["process"]
    r, out, _ = proc_wait(c, sb, p2)
    total = len("".join(f"{i}\n" for i in range(1, 20001)))
    r = c.call({"tool": "process_output", "workspace": sb, "process": p2})
    check(r["stdout_total"] == total and r["stdout_dropped"] == total - 4096 and len(r["stdout"]) == 4096
          and r["stdout"].endswith("19999\n20000\n") and r["stdout_offset"] == total, {k: v for k, v in r.items() if k != "stdout"})
    r = c.call({"tool": "process_output", "workspace": sb, "process": p2, "stdout_offset": total - 6})
    check(r["stdout"] == "20000\n" and r["stdout_dropped"] == 0, r)
    # Signals, by name and number; the whole group.
    r = c.call({"tool": "process_start", "workspace": sb, "command": "sleep 100 & sleep 100"})
    p3 = r["process"]
    r = c.call({"tool": "process_signal", "workspace": sb, "process": p3, "signal": "TERM"})
    check(r["ok"], r)
    r, _, _ = proc_wait(c, sb, p3)
    check(r["signal"] == 15 and r["exit_code"] == 143, r)
    r = c.call({"tool": "process_signal", "workspace": sb, "process": p3, "signal": 9})
    check(not r["ok"] and r["error"]["code"] == "process_ended", r)
    r = c.call({"tool": "process_signal", "workspace": sb, "process": p1, "signal": "BOGUS"})
    check(not r["ok"] and r["error"]["code"] == "bad_request", r)
    r = c.call({"tool": "process_output", "workspace": sb, "process": 99999})
    check(not r["ok"] and r["error"]["code"] == "not_found", r)
    r = c.call({"tool": "process_start", "workspace": sb, "command": "x", "argv": ["y"]})
    check(not r["ok"] and r["error"]["code"] == "bad_request", r)
    # A fork bomb in the background stays inside the workspace's pids limit.
    r = c.call({"tool": "process_start", "workspace": sb, "command": "b() { b | b & }; b; sleep 100"})
    p4 = r["process"]
    time.sleep(2)
    # The bomb holds the limit: a command now may not even start (EAGAIN).
    r = term(c, sb, "echo alive")
    check(r["ok"] or r["error"]["code"] in ("worker_recycled", "io"), r)
    # The worker may itself fail to fork under the bomb and end the jail
    # (under ASan it did): then nothing of it is left, which holds too.
    w = d.ws_status(sb)["worker"]
    jail = proc_tree(w["pid"]) if w else []
    check(len(jail) <= 64 + 2, (len(jail), [comm(p) for p in jail][:10]))  # + the worker, the shell
    c.call({"tool": "process_signal", "workspace": sb, "process": p4, "signal": "KILL"})
    proc_wait(c, sb, p4)
    # Not idle while one runs (idle_timeout = 1); the list shows them all.
    r = c.call({"tool": "process_start", "workspace": sb, "argv": ["sleep", "1000"]})
    p5 = r["process"]
    pid = d.ws_status(sb)["worker"]["pid"]
    time.sleep(2.5)
    w = d.ws_status(sb)
    check(w["worker"] and w["worker"]["pid"] == pid, w)
    r = c.call({"tool": "process_list", "workspace": sb})
    ids = [(p["process"], p["running"]) for p in r["processes"]]
    check(ids == [(p1, False), (p2, False), (p3, False), (p4, False), (p5, True)], r)
    # A policy change ends it with the jail, saying so.
    with open(os.path.join(sb, "vectora.toml"), "w") as f:
        f.write(SANDBOX.replace('"**/*.pem"', '"**/*.pem", "y"') + "idle_timeout = 1\n" + lim)
    check(term(c, sb, "true")["ok"], "after the change")
    r, _, _ = proc_wait(c, sb, p5)
    check(r["ended"] == "worker_recycled" and r["signal"] == 9, r)
    # Now nothing runs: the worker idles out.
    time.sleep(2.5)
    check(d.ws_status(sb)["worker"] is None, d.ws_status(sb))
    lines = [json.loads(l) for l in open(d.audit)]
    ends = [l for l in lines if l["tool"] == "process_exit" and l["workspace"] == os.path.realpath(sb)]
    check(len(ends) == 5 and ends[0]["target"]["exit_code"] == 3 and ends[-1]["error_code"] == "worker_recycled", ends)
    starts = [l for l in lines if l["tool"] == "process_start" and l["workspace"] == os.path.realpath(sb)]
    check(len(starts) == 6 and [x["outcome"] for x in starts].count("error") == 1 and starts[0]["outcome"] == "ok",
          starts)
    c.close()


def t_process_timeout_and_shutdown(d0, tmp):
    """background_timeout kills it; the daemon's shutdown ends every
    background process (no process of the daemon's tree survives)."""
    d = Daemon(tmp, "proc-term")
    try:
        ws = make_ws(tmp, "proc-term-ws", SANDBOX + "[sandbox.limits]\nbackground_timeout = 1\n")
        un = make_ws(tmp, "proc-term-un", None)
        c = d.conn()
        r = c.call({"tool": "process_start", "workspace": ws, "argv": ["sleep", "100"], "timeout": 50})
        r, _, _ = proc_wait(c, ws, r["process"])
        check(r["timed_out"] is True and r["signal"] == 9 and 900 <= r["runtime_ms"] < 30000, r)
        r1 = c.call({"tool": "process_start", "workspace": ws, "argv": ["sleep", "100"], "timeout": 0})
        r2 = c.call({"tool": "process_start", "workspace": un, "command": "sleep 100; true"})
        check(r1["ok"] and r2["ok"] and r2["sandboxed"] is False, (r1, r2))
        # Both sleeps run (the shell may not have started its sleep yet).
        end = time.time() + 20
        while time.time() < end:
            tree = proc_tree(d.p.pid)
            if len([p for p in tree if comm(p) == "sleep"]) == 2:
                break
            time.sleep(0.05)
        check(len([p for p in tree if comm(p) == "sleep"]) == 2, [comm(p) for p in tree])
        d.p.send_signal(signal.SIGTERM)
        check(d.p.wait(30) == 0, "exit status")
        t0 = time.time()
        while time.time() - t0 < 10.0 and any(alive(p) for p in tree):
            time.sleep(0.02)
        check(not any(alive(p) for p in tree), [comm(p) for p in tree if alive(p)])
        c.close()
    finally:
        d.stop()


def t_ports(d, tmp):
    """ports = [...] with network = false: a dev server in the jail answers
    on the host's loopback through the daemon, across calls, both ways,
    bounded; a port the host cannot bind is a clear refusal."""
    import urllib.request
    p1, p2 = free_port(), free_port()
    sb = make_ws(tmp, "ports", SANDBOX + 'network = false\nports = [%d, "%d:8000"]\n' % (p1, p2),
                 {"index.html": "hello from the jail\n", "big.bin": "x" * (3 << 20)})
    c = d.conn()
    r = c.call({"tool": "process_start", "workspace": sb, "command": "python3 -m http.server %d --bind 127.0.0.1" % p1})
    check(r["ok"], r)
    web = r["process"]
    body = None
    for _ in range(100):
        try:
            body = urllib.request.urlopen("http://127.0.0.1:%d/index.html" % p1, timeout=5).read()
            break
        except OSError:
            time.sleep(0.1)
    check(body == b"hello from the jail\n", body)
    check(term(c, sb, "echo between")["stdout"] == "between\n", "a tool call meanwhile")
    big = urllib.request.urlopen("http://127.0.0.1:%d/big.bin" % p1, timeout=30).read()
    check(big == b"x" * (3 << 20), len(big))
    # The jail has no network: its own curl of the host fails, the forward works.
    r = term(c, sb, "python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:%d/index.html\", timeout=3)' 2>&1; echo rc=$?" % p1)
    check("rc=0" in r["stdout"], r)  # inside, 127.0.0.1 is the jail's own loopback: its server
    # Both ways through "HOST:JAIL": an echo server on the jail's port 8000.
    echo = ("import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', 8000)); s.listen(1); c, _ = s.accept()\n"
            "while True:\n    b = c.recv(65536)\n    if not b: break\n    c.sendall(b)\n")
    r = c.call({"tool": "process_start", "workspace": sb, "argv": ["python3", "-c", echo]})
    check(r["ok"], r)
    conn = None
    for _ in range(100):
        try:
            conn = socket.create_connection(("127.0.0.1", p2), timeout=10)
            conn.sendall(b"ping")
            if conn.recv(4) == b"ping":
                break
        except OSError:
            pass
        conn and conn.close()
        conn = None
        time.sleep(0.1)
    check(conn is not None, "the echo server was not reached")
    payload = os.urandom(1 << 20)
    got = bytearray()
    th = threading.Thread(target=lambda: conn.sendall(payload))
    th.start()
    while len(got) < len(payload):
        b = conn.recv(65536)
        if not b:
            break
        got += b
    th.join()
    conn.shutdown(socket.SHUT_WR)
    check(bytes(got) == payload and conn.recv(1) == b"", len(got))
    conn.close()
    w = d.ws_status(sb)
    check(w["policy"]["ports"] == [{"host": p1, "jail": p1}, {"host": p2, "jail": 8000}]
          and [(x["host"], x["listening"]) for x in w["ports"]] == [(p1, True), (p2, True)]
          and w["ports"][0]["accepted"] >= 2, w)
    r = c.call({"tool": "process_list", "workspace": sb})
    check(r["processes"][0]["process"] == web and r["processes"][0]["running"], r)
    r = c.call({"tool": "process_output", "workspace": sb, "process": web})
    check('"GET /index.html HTTP/1.1" 200' in r["stderr"], r)
    # Stopped: the port no longer reaches a server.
    c.call({"tool": "process_signal", "workspace": sb, "process": web, "signal": "TERM"})
    proc_wait(c, sb, web)
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/index.html" % p1, timeout=5).read()
        check(False, "still served after stop")
    except OSError:
        pass
    # A port the host cannot bind: refused, saying which.
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    hp = held.getsockname()[1]
    busy = make_ws(tmp, "ports-busy", SANDBOX + "network = false\nports = [%d]\n" % hp)
    r = term(c, busy, "echo never")
    held.close()
    check(not r["ok"] and r["error"]["code"] == "sandbox_unavailable"
          and "cannot listen on 127.0.0.1:%d" % hp in r["error"]["message"], r)
    # network = true: the jail shares the host's loopback, so ports are refused.
    bad = make_ws(tmp, "ports-net", SANDBOX + "ports = [%d]\n" % free_port())
    r = term(c, bad, "true")
    check(not r["ok"] and r["error"]["code"] == "config_invalid" and "network = true" in r["error"]["message"], r)
    c.close()


def start_listening(c, ws, script):
    """A python3 server started in the background; returns its process id
    once it printed "listening"."""
    r = c.call({"tool": "process_start", "workspace": ws, "argv": ["python3", "-c", script]})
    check(r["ok"], r)
    deadline = time.time() + 30
    while time.time() < deadline:
        out = c.call({"tool": "process_output", "workspace": ws, "process": r["process"], "wait_ms": 500})
        if "listening" in out.get("stdout", ""):
            return r["process"]
    raise AssertionError(("the server in the jail did not start listening", out))


def t_ports_busy_server(d, tmp):
    """A server in the jail that never accepts (backlog full) and a burst of
    host connections to its port: each is refused after a bounded wait, and
    the workspace's other calls keep answering (before: the worker blocked
    in connect through the SYN retries, about two minutes, serving nothing)."""
    port = free_port()
    sb = make_ws(tmp, "ports-busy-srv", SANDBOX + "network = false\nports = [%d]\n" % port)
    c = d.conn()
    sleeper = ("import socket, time\ns = socket.socket(); s.bind(('127.0.0.1', %d)); s.listen(0)\n"
               "print('listening', flush=True)\ntime.sleep(600)\n" % port)
    proc = start_listening(c, sb, sleeper)
    conns = []
    for _ in range(12):
        k = socket.create_connection(("127.0.0.1", port), timeout=5)
        conns.append(k)
    time.sleep(0.2)
    c.s.settimeout(30)
    t0 = time.monotonic()
    try:
        r = term(c, sb, "echo still-here")
    except socket.timeout:
        r = {"timeout": True}
    took = time.monotonic() - t0
    check(r.get("stdout") == "still-here\n" and took < 10,
          ("a call while 12 connections wait on a server that never accepts", took, r))
    for k in conns:
        k.close()
    c.call({"tool": "process_signal", "workspace": sb, "process": proc, "signal": "KILL"})
    notes.append(f"12 connections to a jail server that never accepts: a call meanwhile took {took * 1000:.0f} ms")
    c.close()


def t_ports_connection_cap(d, tmp):
    """Host-side connections to a forwarded port take at most 32 of the
    worker's 64 sessions: past them new ones are closed at once, and the
    agent's background processes still start (before: 64 idle connections
    from any local user left process_start refused)."""
    port = free_port()
    sb = make_ws(tmp, "ports-cap", SANDBOX + "network = false\nports = [%d]\n" % port)
    c = d.conn()
    greeter = ("import socket\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
               "s.bind(('127.0.0.1', %d)); s.listen(128); print('listening', flush=True); held = []\n"
               "while True:\n    k, _ = s.accept(); k.sendall(b'hi\\n'); held.append(k)\n" % port)
    proc = start_listening(c, sb, greeter)
    conns, greeted, closed = [], 0, 0
    for _ in range(40):
        k = socket.create_connection(("127.0.0.1", port), timeout=10)
        conns.append(k)
        try:
            b = k.recv(3)
        except OSError:
            b = b""
        if b == b"hi\n":
            greeted += 1
        else:
            closed += 1
    check(greeted == 32 and closed == 8, ("greeted", greeted, "closed", closed))
    r = c.call({"tool": "process_start", "workspace": sb, "command": "echo started"})
    check(r.get("ok"), r)
    for k in conns:
        k.close()
    c.call({"tool": "process_signal", "workspace": sb, "process": proc, "signal": "KILL"})
    c.close()


def t_ports_slow_reader(d, tmp):
    """A jail server writing 24 MiB to a host client that reads nothing for
    3 s: the worker is paused, the daemon holds a bounded amount (a worker
    ignoring the pause past 8 MiB is cut off), and every byte arrives."""
    port = free_port()
    sb = make_ws(tmp, "ports-slow", SANDBOX + "network = false\nports = [%d]\n" % port)
    c = d.conn()
    writer = ("import socket\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
              "s.bind(('127.0.0.1', %d)); s.listen(4); print('listening', flush=True)\n"
              "k, _ = s.accept(); k.sendall(b'y' * (24 << 20)); k.close()\n" % port)
    proc = start_listening(c, sb, writer)
    k = socket.create_connection(("127.0.0.1", port), timeout=30)
    time.sleep(3)
    got = 0
    while True:
        b = k.recv(1 << 20)
        if not b:
            break
        got += len(b)
    k.close()
    check(got == 24 << 20, ("bytes received", got))
    c.close()


def t_ports_entry_freed(d, tmp):
    """A workspace entry freed (its directory gone) closes its forwarded
    ports: a connection then is refused, never handed to the freed entry
    (the daemon crashed on it), and the directory back, the next call
    listens on the same port again (the old listener held it before)."""
    port = free_port()
    sb = make_ws(tmp, "ports-freed", SANDBOX + "network = false\nidle_timeout = 1\nports = [%d]\n" % port)
    real = os.path.realpath(sb)
    c = d.conn()
    check(term(c, sb, "echo one")["stdout"] == "one\n", "the first call")
    w = d.ws_status(sb)
    check(w and [(x["host"], x["listening"]) for x in w["ports"]] == [(port, True)], w)
    away = sb + "-away"
    os.rename(sb, away)
    deadline = time.time() + 30
    while time.time() < deadline and any(x["path"] == real for x in d.call({"tool": "status"})["workspaces"]):
        time.sleep(0.2)
    check(not any(x["path"] == real for x in d.call({"tool": "status"})["workspaces"]), "the entry was not freed")
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        refused = False
    except OSError:
        refused = True
    check(d.p.poll() is None, "the daemon died on a connection to a freed workspace's port")
    check(refused, "the freed workspace's port still accepts connections")
    os.rename(away, sb)
    r = term(c, sb, "echo two")
    check(r.get("stdout") == "two\n", r)
    w = d.ws_status(sb)
    check(w and [(x["host"], x["listening"]) for x in w["ports"]] == [(port, True)], w)
    c.close()


def t_ports_cli(d0, tmp):
    """The dev server of the issue through the CLI verbs: `start` prints its
    id, `ps` lists it, `logs` has its requests, `stop` ends it and the port
    stops answering; with nothing running the worker idles out; a second
    server ends with the daemon's shutdown (its process gone, the port
    closed). Each start and end is in the audit log."""
    port = free_port()
    with OwnDaemon(tmp, "ports-cli") as d:
        ws = make_ws(tmp, "ports-cli", SANDBOX + "network = false\nidle_timeout = 1\nports = [%d]\n" % port,
                     {"index.html": "dev server\n"})
        env = dict(os.environ, VECTORA_SANDBOX_SOCKET=d.sock)

        def cli(*a):
            return subprocess.run([CLI, *a], capture_output=True, text=True, env=env, timeout=60)

        def servers():
            return [p for p in proc_tree(d.p.pid) if comm(p) and comm(p).startswith("python3")]

        serve = "exec python3 -m http.server %d --bind 127.0.0.1" % port
        p = cli("start", "-w", ws, serve)
        check(p.returncode == 0 and p.stdout.strip().isdigit(), (p.returncode, p.stdout, p.stderr))
        pid1 = p.stdout.strip()
        check(http_get(port, 30) == b"dev server\n", "the forwarded port did not answer")
        check(cli("run", "-w", ws, "echo between").stdout == "between\n", "a tool call meanwhile")
        check(http_get(port) == b"dev server\n", "not served after another call")
        p = cli("ps", "-w", ws)
        row = [l for l in p.stdout.splitlines() if l.split()[:1] == [pid1]]
        check(p.returncode == 0 and row and "running" in row[0] and "http.server" in row[0], p.stdout)
        p = cli("logs", "-w", ws, pid1)
        check(p.returncode == 0 and '"GET /index.html HTTP/1.1" 200' in p.stderr, (p.stdout, p.stderr))
        check(len(servers()) == 1, [comm(x) for x in proc_tree(d.p.pid)])
        p = cli("stop", "-w", ws, pid1)
        check(p.returncode == 0 and "stopped (SIGTERM" in p.stdout, (p.returncode, p.stdout, p.stderr))
        check(http_get(port) is None, "still served after stop")
        check(servers() == [], "the server's process outlived stop")
        p = cli("ps", "-w", ws)
        row = [l for l in p.stdout.splitlines() if l.split()[:1] == [pid1]]
        check(row and "running" not in row[0], p.stdout)
        # Nothing runs now: the worker idles out (a running one would hold it, t_process).
        time.sleep(2.5)
        w = d.ws_status(ws)
        check(w["worker"] is None and w["counters"]["idle_ends"] >= 1, w)
        check(http_get(port) is None, "a server answered after the idle end")
        # Another one, then the daemon's shutdown ends it and the listener.
        p = cli("start", "-w", ws, serve)
        check(p.returncode == 0, (p.stdout, p.stderr))
        pid2 = p.stdout.strip()
        check(http_get(port, 30) == b"dev server\n", "the second server did not answer")
        tree = proc_tree(d.p.pid)
        check(len(servers()) == 1, [comm(x) for x in tree])
        d.p.send_signal(signal.SIGTERM)
        check(d.p.wait(30) == 0, "exit status")
        end = time.time() + 10
        while time.time() < end and any(alive(x) for x in tree):
            time.sleep(0.02)
        check(not any(alive(x) for x in tree), [comm(x) for x in tree if alive(x)])
        check(http_get(port) is None, "the port answered after the daemon's shutdown")
        lines = [json.loads(l) for l in open(d.audit)]
        mine = [l for l in lines if l["workspace"] == os.path.realpath(ws)]
        starts = [l["target"] for l in mine if l["tool"] == "process_start" and l["outcome"] == "ok"]
        ends = [l for l in mine if l["tool"] == "process_exit"]
        check(starts == [{"process": int(pid1), "command": serve}, {"process": int(pid2), "command": serve}], starts)
        check([e["target"]["process"] for e in ends] == [int(pid1), int(pid2)]
              and ends[0]["target"]["signal"] == 15 and ends[0]["outcome"] == "ok"
              and ends[1]["error_code"] == "interrupted", ends)


def t_idle(d, tmp):
    sb = make_ws(tmp, "idle", SANDBOX + "idle_timeout = 1\n")
    c = d.conn()
    check(term(c, sb, "true")["ok"], "warm")
    bw = d.ws_status(sb)["worker"]["pid"]
    time.sleep(2.0)
    w = d.ws_status(sb)
    check(w["worker"] is None and w["counters"]["idle_ends"] == 1 and not alive(bw), w)
    check(term(c, sb, "echo back")["stdout"] == "back\n", "no respawn after idle")
    c.close()


def t_audit_and_cli(d, tmp):
    sb = make_ws(tmp, "cli-sb", SANDBOX, {"r.txt": "read me\n"})
    bad = make_ws(tmp, "cli-bad", "[sandbox]\nenabled = tru\n")
    env = dict(os.environ, VECTORA_SANDBOX_SOCKET=d.sock)

    def cli(*a, inp=None):
        p = subprocess.run([CLI, *a], input=inp, capture_output=True, text=True, env=env, timeout=30)
        # Degradation warnings (e.g. no cgroups for an unprivileged daemon) are expected here.
        p.stderr = "".join(l for l in p.stderr.splitlines(True) if not l.startswith("vectora-sandbox: warning:"))
        return p

    p = cli("exec", "-w", sb, "--", "sh", "-c", "echo out; echo err >&2; exit 4")
    check(p.returncode == 4 and p.stdout == "out\n" and p.stderr == "err\n", (p.returncode, p.stdout, p.stderr))
    p = cli("run", "-w", sb, "kill -TERM $$")
    check(p.returncode == 143, p.returncode)
    p = cli("run", "-w", bad, "echo never")
    check(p.returncode == 125 and "vectora.toml:2:" in p.stderr and p.stdout == "", (p.returncode, p.stderr))
    p = cli("read", "-w", sb, "r.txt")
    check(p.returncode == 0 and p.stdout == "read me\n", p)
    p = cli("write", "-w", sb, "w.txt", inp="written\n")
    check(p.returncode == 0 and open(os.path.join(sb, "w.txt")).read() == "written\n", p)
    p = cli("edit", "-w", sb, "w.txt", "--old", "written", "--new", "edited")
    check(p.returncode == 0 and open(os.path.join(sb, "w.txt")).read() == "edited\n", p)
    p = cli("status")
    check(p.returncode == 0 and sb in p.stdout and "sandboxed" in p.stdout, p.stdout)
    p = cli("status", "--json")
    check(p.returncode == 0 and json.loads(p.stdout)["ok"], p.stdout[:200])
    p = subprocess.run([CLI, "--socket", os.path.join(tmp, "nope.sock"), "run", "-w", sb, "true"], capture_output=True,
                       text=True)
    check(p.returncode == 125 and p.stderr.startswith("vectora-sandbox: "), p.stderr)
    lines = [json.loads(l) for l in open(d.audit)]
    want = {"time", "uid", "workspace", "tool", "target", "sandboxed", "outcome", "duration_ms", "denial_reason"}
    check(all(want <= set(l) for l in lines), lines[-1])
    refused = [l for l in lines if l["workspace"] == os.path.realpath(bad)]
    check(refused and refused[-1]["outcome"] == "refused" and refused[-1]["denial_reason"].startswith("vectora.toml:"),
          refused)
    ex = [l for l in lines if l["workspace"] == os.path.realpath(sb) and l["tool"] == "terminal"]
    check(ex[0]["target"] == ["sh", "-c", "echo out; echo err >&2; exit 4"] and ex[0]["sandboxed"] is True, ex[0])
    # The line's exact bytes (docs/protocol.md, "Audit log"): keys in the
    # documented order, compact, ASCII only (\uXXXX upper-case, a surrogate
    # pair above U+FFFF, DEL as itself), one line per record.
    argv = ["printf", "%s", "\u00e9\t\x01\x7f\"q\"\\/\U0001F600"]
    c = d.conn()
    check(c.call({"tool": "terminal", "workspace": sb, "argv": argv})["ok"], "the odd argv ran")
    c.close()
    raw = open(d.audit, "rb").read().split(b"\n")
    check(raw[-1] == b"", "the log does not end with a newline")
    mine = [l for l in raw[:-1] if json.loads(l).get("target") == argv]
    check(len(mine) == 1, mine)
    rec = json.loads(mine[0])
    order = ["time", "uid", "pid", "workspace", "tool", "target", "sandboxed", "generation", "outcome", "error_code",
             "denial_reason", "duration_ms"]
    check(list(rec) == order, list(rec))
    want = json.dumps(rec, separators=(",", ":"), ensure_ascii=True)
    want = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), want).replace("\\u007F", "\x7f")
    check(mine[0] == want.encode(), (mine[0], want))
    check(re.fullmatch(rb'\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",.*', mine[0]), mine[0][:40])


def t_sigterm(d0, tmp):
    d = Daemon(tmp, "term")
    ws = make_ws(tmp, "term-ws", SANDBOX)
    c = d.conn()
    check(term(c, ws, "true")["ok"], "warm")
    tree = proc_tree(d.p.pid)
    # Rotated as logrotate does: moved aside, then SIGHUP. The new file
    # at the path gets what follows (its descriptor number is the old
    # one's: a pool thread writing meanwhile never hits a reused number),
    # the moved one nothing more.
    os.rename(d.log, d.log + ".1")
    fds = fd_targets(d.p.pid)
    d.p.send_signal(signal.SIGHUP)
    time.sleep(0.2)
    check("logs reopened" in open(d.log).read(), "SIGHUP")
    moved = open(d.log + ".1").read()
    check(term(c, ws, "true")["ok"], "after the reopen")
    check(open(d.log + ".1").read() == moved, "a line went to the moved log")
    now = fd_targets(d.p.pid)
    logs = [fd for fd, t in now.items() if t == os.path.realpath(d.log)]
    check(logs and all(fds.get(fd, "").startswith(os.path.realpath(d.log)) for fd in logs),
          ("the log's descriptor number changed", fds, now))
    d.p.send_signal(signal.SIGTERM)
    check(d.p.wait(5) == 0, "exit status")
    t0 = time.time()
    while time.time() - t0 < 1.0 and any(alive(p) for p in tree):
        time.sleep(0.02)
    check(not any(alive(p) for p in tree), [comm(p) for p in tree if alive(p)])
    check(not os.path.exists(d.sock), "socket left behind")
    c.close()


def t_sighup_during_stop(d0, tmp):
    """A log rotation's SIGHUP that lands while the daemon drains its
    clients at a stop (SIGTERM, a client with a 20 MB reply it does not
    read) does not kill it: the stop ends cleanly, exit status 0."""
    d = Daemon(tmp, "hupstop")
    ws = make_ws(tmp, "hupstop-ws", SANDBOX)
    ok = False
    try:
        c = d.conn()
        check(term(c, ws, "true")["ok"], "warm")
        slow = socket.socket(socket.AF_UNIX)
        slow.connect(d.sock)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(json.dumps({"id": 1, "tool": "terminal", "workspace": ws,
                                 "command": "head -c 20000000 /dev/zero"}).encode() + b"\n")
        time.sleep(1.5)
        d.p.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        check(d.p.poll() is None, "the daemon did not wait for the slow client (the case needs its drain)")
        d.p.send_signal(signal.SIGHUP)
        rc = d.p.wait(15)
        check(rc == 0, ("exit status after SIGHUP during the stop", rc, d.log_text()[-1500:]))
        check("exited cleanly" in d.log_text(), "no clean exit in the log")
        slow.close()
        ok = True
    finally:
        d.stop(check_exit=not ok)


def t_log_fifo_on_sighup(d0, tmp):
    """A FIFO put at the log's path, then SIGHUP: the daemon does not wait
    for a reader (it went on serving nothing until one came): it keeps its
    old log, says why there, and answers at once."""
    d = Daemon(tmp, "fifo")
    try:
        os.unlink(d.log)
        os.mkfifo(d.log)
        old = [l for l in os.listdir("/proc/%d/fd" % d.pid)]
        d.p.send_signal(signal.SIGHUP)
        time.sleep(0.5)  # the loop takes the signal first
        c = d.conn()
        c.s.settimeout(5)
        try:
            r = c.call({"tool": "status"})
        except socket.timeout:
            r = "no answer within 5 s"
        check(isinstance(r, dict) and r.get("ok"), ("status after SIGHUP with a FIFO at the log's path", r))
        kept = [f for f in os.listdir("/proc/%d/fd" % d.pid)
                if f in old and os.readlink("/proc/%d/fd/%s" % (d.pid, f)).startswith(d.log + " (deleted)")]
        check(kept, "the old log is not kept")
        text = open("/proc/%d/fd/%s" % (d.pid, kept[0])).read()
        check("not a regular file" in text, ("the old log does not say why it was kept", text[-500:]))
    finally:
        if os.path.exists(d.log) and not os.path.isfile(d.log):
            # A daemon still waiting in open() for a reader gets one.
            fd = os.open(d.log, os.O_RDONLY | os.O_NONBLOCK)
            time.sleep(0.2)
            os.close(fd)
            os.unlink(d.log)
        d.stop()


def t_perf(d, tmp):
    sb = make_ws(tmp, "perf", SANDBOX)
    c = d.conn()
    term(c, sb, "true")
    lat = []
    for _ in range(200):
        t0 = time.perf_counter()
        r = c.call({"tool": "terminal", "workspace": sb, "argv": ["/bin/true"]})
        lat.append(time.perf_counter() - t0)
        check(r["ok"], r)
    direct = []
    for _ in range(200):
        t0 = time.perf_counter()
        subprocess.run(["/bin/true"])
        direct.append(time.perf_counter() - t0)
    notes.append(f"warm terminal /bin/true through the daemon: median {statistics.median(lat) * 1000:.2f} ms "
                 f"(p90 {sorted(lat)[180] * 1000:.2f}); direct fork+exec from Python: median "
                 f"{statistics.median(direct) * 1000:.2f} ms")
    c.close()


def t_slow_walk_holds_no_other(d0, tmp):
    """Starts are prepared side by side: while one workspace's first start
    walks a tree of 60 000 directories (its masks), another workspace's
    first start, asked 0.3 s later, answers first. One lock for every
    start once let an owner's slow start (a git config made slow to read:
    attack review 12) hold every other owner's start behind it."""
    big = make_ws(tmp, "big-walk", '[sandbox]\nrw_paths = ["."]\nmask = ["**/*.pem"]\n')
    for i in range(300):
        a = os.path.join(big, "d%d" % i)
        os.mkdir(a)
        for j in range(200):
            os.mkdir(os.path.join(a, "e%d" % j))
    chown_tree(big)
    small = make_ws(tmp, "small-walk", SANDBOX)
    d = Daemon(tmp, "walks")
    try:
        done = []
        def go(name, w):
            r = term(d.conn(), w, "true")
            done.append((name, time.time(), r.get("ok")))
        t0 = time.time()
        a = threading.Thread(target=go, args=("big", big))
        a.start()
        time.sleep(0.3)
        go("small", small)
        a.join()
        check(all(ok for _, _, ok in done), done)
        notes.append("slow walk: %s" % ", ".join("%s after %.2f s" % (n, t - t0) for n, t, _ in done))
        check([n for n, _, _ in done] == ["small", "big"], ("the small start waited for the big one", done))
    finally:
        d.stop()


def worst_read(c, ws, secs):
    """The slowest of file_read calls of y.txt in ws on c, one every 50 ms
    for secs seconds."""
    worst = 0.0
    t_end = time.time() + secs
    while time.time() < t_end:
        t0 = time.time()
        r = c.call({"tool": "file_read", "workspace": ws, "path": "y.txt"})
        worst = max(worst, time.time() - t0)
        check(r.get("ok"), r)
        time.sleep(0.05)
    return worst


def t_settling_config_holds_no_other(d0, tmp):
    """A vectora.toml seen for the first time is read once it has not
    changed for 100 ms (a half-written file must not apply), a second at
    most: the request waits on a timer, not the loop. While a client's
    first calls to a workspace whose config the host keeps rewriting wait
    (and are refused after a second, "keeps changing"), another
    workspace's calls are answered at once; once the rewriting stops the
    workspace is served; a call whose connection closes while it waits
    runs nothing. Before, the loop slept through each such wait:
    another workspace's call waited up to a second per request."""
    other = make_ws(tmp, "settle-other", SANDBOX, {"y.txt": "y\n"})
    d = Daemon(tmp, "settle")
    try:
        co = d.conn()
        check(term(co, other, "true")["ok"], "the other workspace")
        # The refusal holds only while the host really keeps changing the
        # file: a writer that the machine's load stalled for the settling
        # time left a settled file, which the daemon rightly read. Such an
        # attempt proves nothing and is tried again (noted); a daemon that
        # read a file changing every 20 ms fails.
        for attempt in range(3):
            busy = make_ws(tmp, "settle-busy-%d" % attempt, None, {"x.txt": "x\n"})
            w = Rewriting(os.path.join(busy, "vectora.toml"), SANDBOX)
            answers = []

            def busy_calls():
                cb = d.conn()
                for _ in range(2):
                    t0 = time.time()
                    answers.append((term(cb, busy, "cat x.txt"), time.time() - t0))
                cb.close()
            b = threading.Thread(target=busy_calls)
            b.start()
            time.sleep(0.2)
            # status says the busy workspace's config is not read yet, the
            # other's is.
            st = {x["path"]: x for x in co.call({"tool": "status"})["workspaces"]}
            settling = {k: v.get("config_settling") for k, v in st.items()}
            worst = worst_read(co, other, 1.6)
            b.join()
            gap = w.stop()
            notes.append("settling config: the other workspace's worst call %.3f s; the busy one's: %s; "
                         "the writer's longest pause %.3f s" % (worst, ", ".join("%.2f s" % t for _, t in answers), gap))
            if gap < 0.09:
                break
            notes.append("settling config: attempt %d void, the writer stood still %.3f s" % (attempt + 1, gap))
        check(gap < 0.09, "the writer stalled in every attempt (longest pause %.3f s)" % gap)
        check(settling.get(busy) is True and settling.get(other) is False,
              "status while a config settles: %r" % settling)
        for r, t in answers:
            check(not r["ok"] and "keeps changing" in r["error"]["message"] and t >= 0.9, (r, t))
        check(worst < 0.5, "another workspace's call waited %.2f s behind a settling config" % worst)
        time.sleep(0.15)
        r = term(co, busy, "cat x.txt")
        check(r["ok"] and r["stdout"] == "x\n" and r["sandboxed"], r)
        st = {x["path"]: x for x in co.call({"tool": "status"})["workspaces"]}
        check(st[busy]["config_settling"] is False and st[busy]["state"] == "sandboxed", st[busy])
        # A call whose connection closes while it waits for its config
        # runs nothing, as a call in flight is cancelled then.
        gone = make_ws(tmp, "settle-gone", SANDBOX)
        cg = d.conn()
        cg.send({"tool": "terminal", "workspace": gone, "command": "touch ran", "id": 1})
        cg.close()
        time.sleep(0.6)
        check(not os.path.exists(os.path.join(gone, "ran")), "a call whose connection closed ran")
        check(term(co, gone, "true")["ok"], "the workspace after")
        # "detach" or not: a host terminal of an unsandboxed workspace was
        # left running with nobody to own it (attack review 13).
        loose = make_ws(tmp, "settle-detached", "[sandbox]\nenabled = false\n")
        cg = d.conn()
        cg.send({"tool": "terminal_open", "workspace": loose, "detach": True, "id": 1,
                 "argv": ["/bin/sh", "-c", "touch opened; exec sleep 30"]})
        cg.close()
        time.sleep(0.6)
        check(not os.path.exists(os.path.join(loose, "opened")), "a detached terminal_open whose connection closed ran")
        co.close()
    finally:
        d.stop()


def t_settling_config_read_once(d0, tmp):
    """However many calls wait for a first-seen config to settle, it is
    read again once per wait, not once per call: 120 first calls waiting on
    a large config the host keeps touching held another workspace's calls
    10 s when each call read and parsed it (attack review 13)."""
    busy = make_ws(tmp, "once-busy", None)
    other = make_ws(tmp, "once-other", SANDBOX, {"y.txt": "y\n"})
    cfg = os.path.join(busy, "vectora.toml")
    masks = ", ".join('"m%d/**/*.k%d"' % (i, i) for i in range(4000))
    text = "[sandbox]\nenabled = true\nmask = [%s]\n" % masks
    text += "# %s\n" % ("x" * (900 * 1024 - len(text)))
    with open(cfg, "w") as f:
        f.write(text)
    d = Daemon(tmp, "once")
    try:
        co = d.conn()
        check(term(co, other, "true")["ok"], "the other workspace")
        stop = threading.Event()

        def touch():
            while not stop.is_set():
                os.utime(cfg)
                time.sleep(0.03)
        w = threading.Thread(target=touch)
        w.start()
        conns = [d.conn() for _ in range(4)]
        for k in range(120):
            conns[k % 4].send({"tool": "terminal", "workspace": busy, "command": "true", "id": k})
        worst = worst_read(co, other, 1.5)
        # Touched until every call is answered (a slow build reaches some
        # only after the measure above).
        refused, other = 0, []
        for k in range(120):
            r = conns[k % 4].recv()
            if not r["ok"] and "keeps changing" in r["error"]["message"]:
                refused += 1
            else:
                other.append(r)
        stop.set()
        w.join()
        notes.append("settling config read once: the other workspace's worst call %.3f s; %d of 120 waiting calls "
                     "refused" % (worst, refused))
        check(refused == 120, (refused, other[:2]))
        check(worst < (3 if sanitized(d.pid) else 1), "another workspace's call waited %.2f s" % worst)
        for c in conns + [co]:
            c.close()
    finally:
        d.stop()


def cpu_s(pid):
    """User and system CPU seconds process pid has used (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def t_settling_waiters_share_a_timer(d0, tmp):
    """Calls waiting for a first-seen vectora.toml wait on one timer per
    workspace: while the file still changes, a wake reads it once and the
    waiting calls wait on, each at no cost of its own. With a timer per
    call, every call woke every 100 ms to look its workspace up again:
    8 000 waiting calls held another workspace's call 1.2 s (attack review
    14). The daemon's CPU while 2 000 calls wait is the measure (not a
    latency): all of it (0.61 s in 0.6 s) with a timer per call, 0.02 s
    with one per workspace."""
    d = Daemon(tmp, "waiters")
    n = 250
    try:
        # The window needs all 2 000 calls waiting at once: a writer the
        # machine's load stalled past the settling time (the daemon then
        # rightly reads a settled file), or a sanitized build too loaded to
        # read them all within the second a call waits, gives no such
        # window. Such an attempt is void and made again (noted); a daemon
        # that does not hold the calls, or wakes each on a timer of its
        # own, fails every attempt.
        for attempt in range(3):
            busy = make_ws(tmp, "waiters-busy-%d" % attempt, None, {"x.txt": "x\n"})
            w = Rewriting(os.path.join(busy, "vectora.toml"), SANDBOX)
            time.sleep(0.05)
            conns = [d.conn() for _ in range(8)]
            for c in conns:
                c.s.sendall(b"".join(json.dumps({"id": i, "tool": "file_read", "workspace": busy, "path": "x.txt"}).encode() +
                                     b"\n" for i in range(n)))
            # The window starts once the daemon has taken all 2 000 (a
            # sanitized build under load took more than 0.35 s for that: a
            # fixed sleep measured the reading too), asked on a connection
            # of its own.
            probe = d.conn()
            deadline = time.monotonic() + 30
            peak = 0
            while True:
                taken = probe.call({"tool": "status", "limit": 1})["daemon"]["calls_in_flight"]
                peak = max(peak, taken)
                if taken >= 8 * n or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            used = None
            if taken >= 8 * n:
                time.sleep(0.05)
                c0 = cpu_s(d.pid)
                time.sleep(0.5)
                used = cpu_s(d.pid) - c0
            codes = collections.Counter()
            for c in conns:
                for _ in range(n):
                    r = c.recv()
                    codes["ok" if r["ok"] else r["error"]["code"]] += 1
            gap = w.stop()
            for c in conns + [probe]:
                c.close()
            if taken >= 8 * n and gap < 0.09:
                break
            notes.append("waiting calls: attempt %d void (the daemon held at most %d of %d at once; the writer's longest "
                         "pause %.3f s; answers %s)" % (attempt + 1, peak, 8 * n, gap, dict(codes)))
        check(taken >= 8 * n, "the daemon held at most %d of %d calls at once in every attempt" % (peak, 8 * n))
        check(gap < 0.09, "the writer stalled in every attempt (longest pause %.3f s)" % gap)
        notes.append("2 000 calls waiting for a config: the daemon's CPU over 0.5 s of their wait %.2f s" % used)
        check(codes == {"sandbox_unavailable": 8 * n}, codes)
        check(used < (0.3 if sanitized(d.pid) else 0.1), "the daemon used %.2f s of CPU in 0.5 s of waiting" % used)
    finally:
        d.stop()


def t_flood_takes_turns(d0, tmp):
    """A client's burst of requests waits its turn: one loop turn takes at
    most a few of one client's requests, then the others' (server.c,
    "taking in turn"). Before, a turn took every request a read brought
    (64 KiB, about 650 calls here): a client that sent its one call while
    another's 3 000 were being answered waited behind hundreds of them
    (32 such clients held another's call 2.6-2.8 s: attack review 14, F2).
    The measure is the daemon's own order, the audit log's (not a latency):
    how many of the burst's calls were answered before the other client's,
    sent once the burst's first ten replies were back."""
    ws = make_ws(tmp, "turns", "[sandbox\nnot toml\n", {"a.txt": "a\n"})
    d = Daemon(tmp, "turns")
    try:
        a, b = d.conn(), d.conn()
        n = 3000
        blob = b"".join(json.dumps({"id": i, "tool": "file_read", "workspace": ws, "path": "a.txt"}).encode() + b"\n"
                        for i in range(n))
        threading.Thread(target=a.s.sendall, args=(blob,), daemon=True).start()
        for _ in range(10):
            r = a.recv()
            check(not r["ok"] and r["error"]["code"] == "config_invalid", r)
        b.send({"id": "b", "tool": "file_read", "workspace": ws, "path": "b.txt"})
        r = b.recv()
        check(not r["ok"] and r["error"]["code"] == "config_invalid", r)
        for _ in range(n - 10):
            a.recv()
        targets = []
        deadline = time.time() + 10
        while len(targets) < n + 1 and time.time() < deadline:
            with open(d.audit) as f:
                targets = [rec["target"] for rec in map(json.loads, f) if rec.get("workspace") == ws]
            time.sleep(0.05)
        check(len(targets) == n + 1, ("audit records of the calls", len(targets)))
        before = targets.index("b.txt")
        notes.append("a burst of %d calls: %d of them answered before another client's one call" % (n, before))
        check(before < 300, "%d of the burst's calls went before the other client's" % before)
        a.close()
        b.close()
    finally:
        d.stop()


def stopped_by_sigterm(d):
    """Waits for a daemon the case sent SIGTERM itself (a second one while it
    stops would kill it) and checks it exited 0: stop() checks the exit of
    its own SIGTERM only (and the sanitizer reports, whoever stopped it)."""
    d.p.wait(30)
    check(d.p.returncode == 0, ("the daemon exited %s on SIGTERM" % d.p.returncode, d.log_text()[-2000:]))
    d.stop()


def replies_until_eof(c, timeout=10):
    """Every reply c gets until the daemon closes it (or timeout s of quiet)."""
    c.s.settimeout(timeout)
    out = []
    while True:
        try:
            out.append(c.recv())
        except (EOFError, OSError):
            return out


def t_shutdown_answers_queued_requests(d0, tmp):
    """Requests the daemon has read but not yet taken (waiting their turn in
    the take queue) when it stops are each answered shutting_down, nothing
    run: the drain dropped them unanswered, and the client heard nothing
    more of most of its 200 ids (164 here). The burst is one write of under 64 KiB
    (one read takes it whole); SIGTERM goes once its first reply is back."""
    ws = make_ws(tmp, "drain-queued", "[sandbox\nnot toml\n", {"a.txt": "a\n"})
    d = Daemon(tmp, "drain-queued")
    try:
        a = d.conn()
        n = 200
        blob = b"".join(json.dumps({"id": i, "tool": "file_read", "workspace": ws, "path": "a.txt"}).encode() + b"\n"
                        for i in range(n))
        check(len(blob) < 65536, len(blob))
        a.s.sendall(blob)
        got = {}
        r = a.recv()
        got[r["id"]] = r
        d.p.send_signal(signal.SIGTERM)
        for r in replies_until_eof(a):
            got[r["id"]] = r
        stopped_by_sigterm(d)
        codes = {}
        for r in got.values():
            code = r["error"]["code"] if not r.get("ok") else "ok"
            codes[code] = codes.get(code, 0) + 1
        notes.append("200 requests read, SIGTERM after the first reply: answered %s" % codes)
        check(sorted(got) == list(range(n)), ("ids never answered", sorted(set(range(n)) - set(got))[:10], codes))
        check(set(codes) <= {"config_invalid", "shutting_down"}, codes)
        check(codes.get("shutting_down", 0) > 0, ("nothing was still queued at the stop: the case proved nothing", codes))
        a.close()
    finally:
        d.stop()


def t_stop_reads_nothing_more(d0, tmp):
    """Once the stop began nothing more is read: requests sent after the
    daemon logged SIGTERM get no answer, however the drain answered those
    read before (attack review 18: a reply to a drained request turned the
    client's reads back on, 606 MiB read from one client during the stop,
    and 100 requests sent after SIGTERM answered). The client keeps its
    replies unread (a small receive buffer) so that the connection stays."""
    ws = make_ws(tmp, "drain-late", "[sandbox\nnot toml\n", {"a.txt": "a\n"})
    d = Daemon(tmp, "drain-late")
    try:
        a = d.conn()
        a.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        req = lambda i: json.dumps({"id": i, "tool": "file_read", "workspace": ws, "path": "a.txt"}).encode() + b"\n"
        a.s.sendall(b"".join(req(i) for i in range(3000)))
        d.p.send_signal(signal.SIGTERM)
        check(wait_for(lambda: "SIGTERM" in d.log_text(), 10), "no SIGTERM in the log")
        time.sleep(0.1)
        try:
            a.s.sendall(b"".join(req(100000 + i) for i in range(100)))
            a.s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # closed already: nothing more was read either
        late = sum(isinstance(r.get("id"), int) and r["id"] >= 100000 for r in replies_until_eof(a))
        stopped_by_sigterm(d)
        check(late == 0, "%d requests sent after the stop began were answered" % late)
        a.close()
    finally:
        d.stop()


def t_stop_answers_no_pty_message_without_id(d0, tmp):
    """A terminal_input (resize, close) with no id is never answered
    (docs/protocol.md), and not at a stop either: buffered then, each got a
    reply {"id": null, ... shutting_down} and an audit record (attack
    review 18)."""
    ws = make_ws(tmp, "drain-pty", "[sandbox\nnot toml\n", {"a.txt": "a\n"})
    d = Daemon(tmp, "drain-pty")
    try:
        a = d.conn()
        lines = []
        for i in range(100):
            lines.append(json.dumps({"id": i, "tool": "file_read", "workspace": ws, "path": "a.txt"}).encode())
            lines.append(json.dumps({"tool": "terminal_input", "pty": 7, "data": "x\n"}).encode())
        blob = b"\n".join(lines) + b"\n"
        check(len(blob) < 65536, len(blob))
        a.s.sendall(blob)
        got = [a.recv()]
        d.p.send_signal(signal.SIGTERM)
        got += replies_until_eof(a)
        stopped_by_sigterm(d)
        nulls = [r for r in got if r.get("id") is None]
        check(not nulls, ("replies to messages with no id", len(nulls), nulls[:1]))
        check(sorted(r["id"] for r in got) == list(range(100)), ("the calls' replies", len(got)))
        with open(d.audit) as f:
            check("terminal_input" not in f.read(), "a terminal_input with no id was audited as a call")
        a.close()
    finally:
        d.stop()


def t_stop_drain_is_bounded(d0, tmp):
    """The stop answers 4 096 buffered requests in all, then stops taking:
    half-closed clients were queued again past the cap and taken 4 096 more
    each pass until the 3 s deadline (attack review 18: 47 944 answered,
    the stop 0.83 s; 3.96 s under ASan). 20 clients each send 60 KiB of
    small requests and half-close; the count of shutting_down replies is
    the daemon's own, not a latency."""
    d = Daemon(tmp, "drain-cap")
    try:
        line = b'{"tool":"x"}\n'  # refused at once: 94 000 of them, most still queued after 0.1 s
        conns = []
        for k in range(20):
            c = d.conn()
            c.s.sendall(line * (60 * 1024 // len(line)))
            c.s.shutdown(socket.SHUT_WR)
            conns.append(c)
        time.sleep(0.1)  # read, mostly still queued
        d.p.send_signal(signal.SIGTERM)
        down = sum(not r.get("ok") and r.get("error", {}).get("code") == "shutting_down"
                   for c in conns for r in replies_until_eof(c))
        stopped_by_sigterm(d)
        notes.append("20 half-closed clients x 60 KiB of requests at a stop: %d answered shutting_down" % down)
        check(0 < down <= 4096, "%d requests answered shutting_down at the stop (at most 4 096)" % down)
        for c in conns:
            c.close()
    finally:
        d.stop()


def t_half_closed_burst_answered(d0, tmp):
    """A client that sends a batch and half-closes (shutdown(SHUT_WR), as
    `nc -N` does) gets every reply, its requests run, however many wait
    their turn: with the take queue, a call answered at once closed the
    connection from request_finish while the rest of the batch waited
    (attack review 16: 37 of 200 answered; 60 file_writes behind 40 status
    calls neither answered nor written)."""
    bad = make_ws(tmp, "hc-bad", "[sandbox\nnot toml\n", {"a.txt": "a\n"})
    un = make_ws(tmp, "hc-un", None)
    d = Daemon(tmp, "hc")
    try:
        c = d.conn()
        reqs = [{"id": "s%d" % i, "tool": "status"} for i in range(40)]
        reqs += [{"id": "b%d" % i, "tool": "file_read", "workspace": bad, "path": "a.txt"} for i in range(300)]
        reqs += [{"id": "w%d" % i, "tool": "file_write", "workspace": un, "path": "f%d.txt" % i, "content": "x"}
                 for i in range(60)]
        c.s.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
        c.s.shutdown(socket.SHUT_WR)
        ids = collections.Counter()
        while True:
            try:
                r = c.recv()
            except (EOFError, ConnectionError, ValueError):
                break
            if r is None:
                break
            ids[r["id"][0]] += 1
        check(ids == {"s": 40, "b": 300, "w": 60}, ("replies by kind before EOF", dict(ids)))
        made = sum(os.path.exists(os.path.join(un, "f%d.txt" % i)) for i in range(60))
        check(made == 60, "%d of 60 files written" % made)
    finally:
        d.stop()


def t_half_closed_queued_then_gone(d0, tmp):
    """A half-closed client whose requests still wait their turn is watched
    for going away like one with calls in flight: its EOF was read while
    nothing was in flight yet, no watch started, and a command taken from
    the queue later ran on after the client closed (attack review 17:
    100 calls then a `sleep`, the sleeper still running 5 s after the
    close; 0.1 s before the queue)."""
    bad = make_ws(tmp, "hq-bad", "[sandbox\nnot toml\n", {"a.txt": "a\n"})
    un = make_ws(tmp, "hq-un", None)
    d = Daemon(tmp, "hq")
    tag = "%d.%d" % (3000 + os.getpid() % 1000, int(time.time() * 1000) % 1000)

    def sleepers():
        return subprocess.run(["pgrep", "-f", "^sleep " + re.escape(tag) + "$"], capture_output=True,
                              text=True).stdout.split()
    try:
        c = d.conn()
        c.s.sendall(b"".join(json.dumps({"id": i, "tool": "file_read", "workspace": bad, "path": "a.txt"}).encode() +
                             b"\n" for i in range(100)) +
                    json.dumps({"id": "T", "tool": "terminal", "workspace": un, "command": "sleep " + tag}).encode() +
                    b"\n")
        c.s.shutdown(socket.SHUT_WR)
        for _ in range(100):
            r = c.recv()
            check(not r["ok"] and r["error"]["code"] == "config_invalid", r)
        deadline = time.time() + 10
        while not sleepers() and time.time() < deadline:
            time.sleep(0.05)
        check(sleepers(), "the command did not start")
        c.s.close()
        deadline = time.time() + 3
        while sleepers() and time.time() < deadline:
            time.sleep(0.05)
        check(not sleepers(), "the command runs on after its client closed")
    finally:
        d.stop()
        for pid in sleepers():
            os.kill(int(pid), signal.SIGKILL)


def t_flood_input_bounded(d0, tmp):
    """A connection whose requests wait their turn is read meanwhile only
    while it holds under one read (64 KiB), so a flood of small calls
    (3 MiB, its replies read) stays out of the daemon's memory, in the
    client's socket: with the take queue read on, 64 KiB a turn and 4
    calls taken, 5 such clients held 273-280 MiB and the input-budget
    leader was cut off as stalled (attack review 16). The input the daemon
    holds is sampled from `status` during the flood (128 KiB at most)."""
    ws = make_ws(tmp, "inb", "[sandbox\nnot toml\n", {"a.txt": "a\n"})
    d = Daemon(tmp, "inb")
    try:
        a, probe = d.conn(), d.conn()
        line = json.dumps({"id": 1, "tool": "file_read", "workspace": ws, "path": "a.txt"}).encode() + b"\n"
        n = (3 << 20) // len(line)
        threading.Thread(target=a.s.sendall, args=(line * n,), daemon=True).start()
        got = [0]

        def drain():
            f = a.s.makefile("rb")
            while got[0] < n and f.readline():
                got[0] += 1
        t = threading.Thread(target=drain, daemon=True)
        t.start()
        most = 0
        while t.is_alive():
            st = probe.call({"tool": "status"})
            most = max(most, st["daemon"]["input_held_bytes"])
            time.sleep(0.01)
        notes.append("3 MiB of calls on one connection: the daemon held at most %d bytes of input" % most)
        check(got[0] == n, "%d of %d answered" % (got[0], n))
        check(most < (1 << 20), "the daemon held %d bytes of the flood's input" % most)
    finally:
        d.stop()


def t_thread_pool(d0, tmp):
    """The daemon's thread pool holds 16 threads from its start (libuv's 4
    were one owner's whole share of starts, so four slow starts of one
    owner held every other's), and what it sets for that reaches no
    command: an unsandboxed workspace's environment has no
    UV_THREADPOOL_SIZE."""
    un = make_ws(tmp, "pool-un", None)
    env = dict(os.environ)
    env.pop("UV_THREADPOOL_SIZE", None)
    d = Daemon(tmp, "pool", env=env)
    try:
        r = term(d.conn(), un, "env")
        check(r["ok"] and "PATH=" in r["stdout"], r)
        check("UV_THREADPOOL_SIZE" not in r["stdout"], ("the pool's size reached a command", r["stdout"]))
        threads = len(os.listdir("/proc/%d/task" % d.pid))
        notes.append("thread pool: the daemon has %d threads" % threads)
        check(threads >= 17, ("fewer threads than the pool's 16 and the loop", threads))
    finally:
        d.stop()


def t_slow_start(d0, tmp):
    """A start is prepared off the loop thread: while one workspace's start
    is slow (its docker client takes 3 s to remove a leftover container),
    calls on a warm workspace keep answering promptly. A masked path created
    while that start is prepared is masked in the jail it starts: the
    prepared plan is discarded and made again."""
    log = os.path.join(tmp, "slow-docker.log")
    fake = os.path.join(tmp, "slow-docker")
    with open(fake, "w") as f:
        f.write('#!/bin/sh\necho "$*" >> %s\ncase "$1" in rm) sleep 3; exit 0;; esac\n'
                'echo "slow-docker: no engine here" >&2\nexit 1\n' % log)
    os.chmod(fake, 0o755)
    slow = make_ws(tmp, "slow-start", '[sandbox]\nenabled = true\nbackend = "docker"\nmask = ["**/*.pem"]\n'
                   '[sandbox.docker]\nimage = "vectora-test:none"\ndocker = "%s"\n' % fake)
    warm = make_ws(tmp, "warm", SANDBOX)
    # Its own daemon: the one of the earlier cases holds an inotify
    # instance per workspace, and without one masks over time are not kept.
    d = Daemon(tmp, "slow")
    c, c2 = d.conn(), d.conn()
    check(term(c2, warm, "true")["ok"], "warm")
    t0 = time.time()
    c.send({"id": 1, "tool": "terminal", "workspace": slow, "command": "true"})
    time.sleep(0.5)
    with open(os.path.join(slow, "late.pem"), "w") as f:
        f.write("-----BEGIN PRIVATE KEY-----\n")
    chown_tree(slow)
    worst, n = 0.0, 0
    while time.time() - t0 < 2.5:
        t1 = time.time()
        r = term(c2, warm, "echo alive")
        worst = max(worst, time.time() - t1)
        n += 1
        check(r["ok"] and r["stdout"] == "alive\n", r)
    res = c.recv()
    took = time.time() - t0
    notes.append(f"slow start: {n} calls on a warm workspace meanwhile, slowest {worst * 1000:.0f} ms")
    check(worst < 1.0, ("the warm workspace stalled behind a slow start", worst))
    check(not res["ok"] and res["error"]["code"] == "sandbox_unavailable" and "no engine here" in res["error"]["message"], res)
    with open(log) as f:
        lines = f.read().splitlines()
    rms = [x for x in lines if x.startswith("rm ")]
    runs = [x for x in lines if x.startswith("run ")]
    if any("masks over time" in x for x in res["sandbox"]["degraded"]):
        # No inotify instance left for this user (other processes of the
        # machine hold them): the documented degradation, reported.
        notes.append("slow start: masks over time not kept here (%s)" % res["sandbox"]["degraded"])
    else:
        # The start under way when late.pem appeared was discarded (its
        # removal ran, its run did not); the next one masks late.pem.
        check(len(rms) >= 2 and len(runs) >= 1 and "late.pem" in runs[-1] and took >= 5.5, (took, lines))
    c.close()
    c2.close()
    d.stop()


def t_leftovers_in_a_trough_restart_jail(d, tmp):
    """Leftovers that hit the process limit and then fall back (a fork
    bomb's swing, caught in its trough) were missed by a look at
    pids.current alone, and the next call could not fork ("Cannot fork",
    t_limits under load). Forks refused at the limit since the last look,
    with more than the idle jail still running, restart it too."""
    ws = make_ws(tmp, "trough-ws", SANDBOX + "[sandbox.limits]\npids = 32\n")
    c = d.conn()
    check(term(c, ws, "true")["ok"], "warm")
    if not any(x.startswith("pids: cgroup") for x in d.ws_status(ws)["limits"]):
        needs_root("the daemon has no pids cgroup here (" + "; ".join(d.ws_status(ws)["limits"]) + ")")
    # A batch past the limit that ends at once, then a pause: at the
    # reply the jail holds the loop and its sleep only.
    # (Python: a shell whose fork fails ends, a bomb's copies go on.)
    loop = ("import os, time\n"
            "while True:\n"
            "    for _ in range(40):\n"
            "        try:\n"
            "            if os.fork() == 0:\n"
            "                time.sleep(0.05); os._exit(0)\n"
            "        except OSError:\n"
            "            pass\n"
            "    while True:\n"
            "        try:\n"
            "            os.wait()\n"
            "        except ChildProcessError:\n"
            "            break\n"
            "    time.sleep(3)\n")
    swing = "python3 -c '%s' </dev/null >/dev/null 2>&1 & sleep 1.5; echo left" % loop
    r = term(c, ws, swing)
    check(r["ok"] and r["stdout"] == "left\n", r)
    check("jail_restarted" in r, ("the leftovers were not seen", {k: v for k, v in r.items() if k not in ("stdout", "stderr")}))
    r = term(c, ws, "for i in $(seq 20); do sleep 0.01 & done; wait; echo forked")
    check(r["ok"] and r["stdout"] == "forked\n" and "Cannot fork" not in r["stderr"], r)
    c.close()


def pids_limited_ws(d, tmp, name, limits_toml):
    """A warm sandboxed workspace with limits_toml, a connection and its
    status's limits; skipped where the daemon enforces no pids limit."""
    ws = make_ws(tmp, name, SANDBOX + limits_toml)
    c = d.conn()
    check(term(c, ws, "true")["ok"], "warm")
    limits = d.ws_status(ws)["limits"]
    if not any(x.startswith("pids: cgroup") or x.startswith("pids: RLIMIT_NPROC") for x in limits):
        needs_root("the daemon enforces no pids limit here (" + "; ".join(limits) + ")")
    return ws, c, limits


def bomb_shells(d, ws):
    """The shells running in ws's jail now (a fork bomb's), from its
    outer bwrap's process tree."""
    w = d.ws_status(ws)["worker"]
    return [p for p in proc_tree(w["pid"]) if comm(p) == "sh"] if w and w.get("pid") else []


def t_fork_bomb_restarts_under_load(d, tmp):
    """A fork bomb left behind by its call restarts the jail at the reply
    even on a loaded host. Without cgroups (a daemon run as an ordinary
    user) one look at the jail's pid namespace caught the bomb in a trough
    of its swing as often as not (5 of 6 missed with both cores busy), and
    a later command's own fork failed ("Cannot fork", t_limits in CI): now
    a look past a quarter of the limit looks again. The command waits
    (up to 3 s more) until its bomb has 40 processes: under ASan, as the
    user, beside the suite's other tests and these busy loops, a bomb
    starved of the CPU had fewer than a quarter of the limit when the
    command's one second ended, and 34 shells by the time the test looked
    (a bomb still growing, not one at its limit: the case is the
    latter)."""
    ws, c, limits = pids_limited_ws(d, tmp, "bomb-load-ws", "[sandbox.limits]\ntimeout = 6\npids = 64\n")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        for round in range(3):
            r = term(c, ws, "b() { b | b & }; b; sleep 1; n=0; while [ $n -lt 30 ]; do set -- /proc/[0-9]*; "
                     "[ $# -ge 40 ] && break; sleep 0.1; n=$((n + 1)); done")
            # A bomb whose every shell ended on a failed fork before the
            # reply left nothing behind (none can come back from none):
            # then no restart is owed. Else the reply must have restarted it.
            left = [] if "jail_restarted" in r else bomb_shells(d, ws)
            check(r["ok"] and ("jail_restarted" in r or not left),
                  ("the bomb's leftovers were not seen", round, len(left),
                   {k: v for k, v in r.items() if k not in ("stdout", "stderr")}))
            r = term(c, ws, "sh -c 'echo forked'")
            check(r["ok"] and r["stdout"] == "forked\n" and "Cannot fork" not in r["stderr"], (round, r))
    finally:
        for p in busy:
            p.kill()
            p.wait()
    c.close()


def t_quiet_leftovers_keep_jail(d, tmp):
    """Leftovers past a quarter of the process limit that stand still (a
    server's threads) are looked at after each call and do not restart
    the jail: the restart is for what keeps forking or holds the limit.
    A look that took any change for a bomb would kill the server."""
    ws, c, limits = pids_limited_ws(d, tmp, "quiet-ws", "[sandbox.limits]\npids = 64\n")
    server = ("import threading, time\n"
              "[threading.Thread(target=time.sleep, args=(300,)).start() for _ in range(27)]\n"
              "time.sleep(300)\n")
    r = term(c, ws, "setsid python3 -c '%s' </dev/null >/dev/null 2>&1 & sleep 0.5; echo up" % server)
    check(r["ok"] and r["stdout"] == "up\n", r)
    worker = d.ws_status(ws)["worker"]["pid"]
    threads = sum(int(open("/proc/%d/status" % p).read().split("Threads:")[1].split()[0])
                  for p in proc_tree(worker) if os.path.exists("/proc/%d/status" % p))
    check(16 <= threads < 48, ("the server is not between a quarter and three quarters of the limit", threads))
    for i in range(4):
        r = term(c, ws, "echo %d" % i)
        check(r["ok"] and r["stdout"] == "%d\n" % i and "jail_restarted" not in r, (i, r))
    check(d.ws_status(ws)["worker"]["pid"] == worker, "the jail was restarted under a quiet server")
    c.close()


def pids_events_file(pid):
    """The pids.events file of pid's pids cgroup (v1 or v2)."""
    for line in open("/proc/%d/cgroup" % pid).read().splitlines():
        _, ctrl, path = line.split(":", 2)
        base = {"pids": "/sys/fs/cgroup/pids", "": "/sys/fs/cgroup"}.get(ctrl)
        if base and os.path.exists(base + path + "/pids.events"):
            return base + path + "/pids.events"
    raise AssertionError("no pids cgroup for pid %d" % pid)


def pids_events_max(events):
    return int(open(events).read().split("max ")[1].split()[0])


def t_pids_cgroup_holds_limit(d, tmp):
    """Where a pids cgroup holds the limit, the jail's RLIMIT_NPROC is past
    it: the group refuses the fork at the limit and counts it in
    pids.events, which the look after each call reads. At the same value
    the rlimit, checked first in fork, refused a fork bomb's forks and the
    count stayed near 0 (46 shells left after a reply, ASan as root). And
    the count an earlier jail left in a group kept for the next one is not
    this jail's: a server left by its first call does not restart it."""
    ws = make_ws(tmp, "held-ws", SANDBOX + "[sandbox.limits]\npids = 32\n")
    c = d.conn()
    check(term(c, ws, "true")["ok"], "warm")
    if not any(x.startswith("pids: cgroup") for x in d.ws_status(ws)["limits"]):
        needs_root("the daemon has no pids cgroup here (" + "; ".join(d.ws_status(ws)["limits"]) + ")")
    r = term(c, ws, "grep 'Max processes' /proc/self/limits")
    check(r["ok"] and int(r["stdout"].split()[2]) > 32, ("the jail's RLIMIT_NPROC is not past pids.max", r))
    # A bomb: the jail is restarted at its reply unless every shell ended
    # on a failed fork before it (dash ends on "Cannot fork": none come
    # back from none; CI under ASan saw such a bomb, whose count of the
    # group's refusals was then as small as the rlimit's was: 16).
    events = pids_events_file(d.ws_status(ws)["worker"]["pid"])
    before = pids_events_max(events)
    r = term(c, ws, "b() { b | b & }; b; sleep 1")
    left = [] if "jail_restarted" in r else bomb_shells(d, ws)
    check(r["ok"] and ("jail_restarted" in r or not left),
          ("the bomb's leftovers were not seen", len(left), {k: v for k, v in r.items() if k not in ("stdout", "stderr")}))
    after = pids_events_max(events)
    print("# pids cgroup: a bomb's second at pids = 32: %d forks refused by the group" % (after - before))
    check(after > before, ("the bomb's forks were not refused by the group", before, after))
    # Leftovers that hold the limit and keep forking (every 1 ms while
    # refused) are counted by the group, not refused by the rlimit first
    # (at the same value the rlimit's refusals left the count near 0),
    # and restart the jail every time; the group (the workspace's for
    # its life, the same events file) counts their refusals on. The new
    # jail's first call then leaves a process and keeps its jail.
    fill = ("import os, time\n"
            "while True:\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(300); os._exit(0)\n"
            "    except OSError:\n"
            "        time.sleep(0.001)\n")
    r = term(c, ws, "setsid python3 -c '%s' </dev/null >/dev/null 2>&1 & sleep 1; echo held" % fill)
    check(r["ok"] and "jail_restarted" in r, ("leftovers at the limit did not restart the jail",
                                              {k: v for k, v in r.items() if k not in ("stdout", "stderr")}))
    held = pids_events_max(events) - after
    print("# pids cgroup: leftovers forking at pids = 32 for a second: %d forks refused by the group" % held)
    check(held >= 64, ("the leftovers' forks were not refused by the group", after, held))
    r = term(c, ws, "sleep 30 </dev/null >/dev/null 2>&1 & echo started")
    check(r["ok"] and r["stdout"] == "started\n" and "jail_restarted" not in r,
          ("a new jail's first call was taken for the earlier jail's refusals", {k: v for k, v in r.items() if k not in ("stdout", "stderr")}))
    c.close()


def t_leftovers_grow_back_restart_jail(d, tmp):
    """Leftovers that fill the process limit only after their call's reply
    (a fork bomb growing back after the daemon's look) left the next
    command unable to start ("cannot start /bin/sh: Resource temporarily
    unavailable", t_limits under load). The worker says process_limit,
    nothing ran, and the daemon restarts the jail and runs the command in
    the new one."""
    ws, c, limits = pids_limited_ws(d, tmp, "grow-back-ws", "[sandbox.limits]\npids = 24\n")
    # Quiet when the reply goes out; a second later it holds every slot,
    # and takes back any slot that frees (a shell whose fork fails ends).
    fill = ("import os, time\n"
            "time.sleep(1)\n"
            "while True:\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(300); os._exit(0)\n"
            "    except OSError:\n"
            "        time.sleep(0.005)\n")
    r = term(c, ws, "setsid python3 -c '%s' </dev/null >/dev/null 2>&1 & echo left" % fill)
    check(r["ok"] and r["stdout"] == "left\n" and "jail_restarted" not in r,
          ("the jail was restarted before the leftovers grew", {k: v for k, v in r.items() if k != "sandbox"}))
    worker = d.ws_status(ws)["worker"]["pid"]
    time.sleep(2.5)
    r = term(c, ws, "echo ran")
    check(r["ok"] and r["stdout"] == "ran\n", ("the command did not run in a new jail", r))
    check("when the command came" in r.get("jail_restarted", ""), ("the restart was not reported", r))
    check(d.ws_status(ws)["worker"]["pid"] != worker, "the worker was not replaced")
    r = term(c, ws, "for i in 1 2 3; do sleep 0.01 & done; wait; echo forked")
    check(r["ok"] and r["stdout"] == "forked\n" and "jail_restarted" not in r, r)
    c.close()


def t_leftovers_restart_jail(d, tmp):
    """Processes a command leaves behind out of its group that hold the
    workspace's pids limit restart the jail after the call
    (`jail_restarted`), and again after the next such call: the daemon's
    kept-open pids.current follows the new jail's group. Without cgroups
    (a daemon run as an ordinary user: RLIMIT_NPROC holds the limit) the
    daemon counts the jail's pid namespace instead; before it did, the
    leftovers stayed and the next call could not fork."""
    ws, c, limits = pids_limited_ws(d, tmp, "leftover-ws", "[sandbox.limits]\npids = 32\n")
    notes.append("leftovers: " + [x for x in limits if x.startswith("pids:")][0])
    pids = []
    for round in range(2):
        r = term(c, ws, "for i in $(seq 24); do setsid sleep 300 </dev/null >/dev/null 2>&1 & done; true")
        check(r["ok"] and "jail_restarted" in r, (round, {k: v for k, v in r.items() if k not in ("stdout", "stderr")}))
        r = term(c, ws, "echo fresh")
        check(r["ok"] and r["stdout"] == "fresh\n" and "jail_restarted" not in r, (round, r))
        pids.append(d.ws_status(ws)["worker"]["pid"])
    check(pids[0] != pids[1], ("the second restart did not happen", pids))
    c.close()


def t_leftover_threads_restart_jail(d, tmp):
    """One leftover process holding the pids limit with its threads (both
    RLIMIT_NPROC and a pids cgroup count threads) restarts the jail like
    many leftover processes do; before, a user daemon counted processes
    only and the next call could not fork."""
    ws, c, limits = pids_limited_ws(d, tmp, "leftover-threads", "[sandbox.limits]\npids = 32\n")
    prog = ("import threading, time\n"
            "for _ in range(26):\n"
            "    threading.Thread(target=time.sleep, args=(300,), daemon=True).start()\n"
            "time.sleep(300)\n")
    r = term(c, ws, "setsid python3 -c '%s' </dev/null >/dev/null 2>&1 & sleep 1; true" % prog)
    check(r["ok"] and "jail_restarted" in r, {k: v for k, v in r.items() if k not in ("stdout", "stderr")})
    r = term(c, ws, "for i in 1 2 3; do sleep 0.01 & done; wait; echo forked")
    check(r["ok"] and r["stdout"] == "forked\n", r)
    c.close()


TESTS = [t_tools_basic, t_file_tools, t_concurrent_edits, t_many_workspaces, t_worker_crash, t_restart_limit_names_cause_once, t_restart_limit_cause_is_the_workers, t_daemon_sigkill,
         t_daemon_sigkill_starting, t_outer_bwrap_killed_starting, t_inherited_fd,
         t_config_reload, t_policy_drain, t_drain_then_start, t_mask_appears, t_limits, t_leftovers_restart_jail, t_leftover_threads_restart_jail, t_leftovers_in_a_trough_restart_jail, t_fork_bomb_restarts_under_load, t_quiet_leftovers_keep_jail, t_pids_cgroup_holds_limit, t_descriptor_limit_raised, t_leftovers_grow_back_restart_jail, t_peer_uid, t_peer_namespace, t_big_and_garbage, t_pty, t_pty_typeahead, t_pty_host_start, t_pty_jail, t_pty_jail_api, t_pty_last_output, t_pty_left_job_ends, t_pty_cycles_leak_nothing, t_process, t_process_timeout_and_shutdown, t_ports, t_ports_cli, t_ports_entry_freed, t_ports_busy_server, t_ports_connection_cap, t_ports_slow_reader, t_idle,
         t_audit_and_cli, t_sigterm, t_sighup_during_stop, t_log_fifo_on_sighup, t_perf, t_spawn_burst, t_slow_start,
         t_slow_walk_holds_no_other, t_settling_config_holds_no_other, t_settling_config_read_once,
         t_settling_waiters_share_a_timer,
         t_flood_takes_turns, t_half_closed_burst_answered, t_half_closed_queued_then_gone,
         t_shutdown_answers_queued_requests, t_stop_reads_nothing_more, t_stop_answers_no_pty_message_without_id,
         t_stop_drain_is_bounded,
         t_flood_input_bounded, t_thread_pool]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip("vectora-sandboxd end to end", f"{DAEMON} or {CLI} not built")
    elif not shutil.which("bwrap"):
        tap.skip("vectora-sandboxd end to end", "bwrap not installed")
    else:
        only = set(sys.argv[1:])
        tmp = tempfile.mkdtemp(prefix="vs-daemon-test-")
        os.chmod(tmp, 0o755)
        d = Daemon(tmp)
        restarts = 0
        try:
            for t in TESTS:
                if only and t.__name__ not in only:
                    continue
                tap.case(t, d, tmp)
                if d.p.poll() is not None:
                    tap.ok(f"{t.__name__}: the daemon survives it", False, "log tail:\n" + d.log_text()[-3000:])
                    restarts += 1
                    d = Daemon(tmp, "d%d" % (restarts + 1))
        finally:
            d.stop()
            if tap.failed and os.environ.get("VECTORA_TEST_KEEP"):
                tap.note("kept " + tmp)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    for n in notes:
        tap.note(n)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
