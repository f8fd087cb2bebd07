#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Policy integrity on a live host (issue 10): the agent cannot switch its
sandbox off. Each test performs the attack, against a daemon (run as root in
CI, with the workspaces owned by an ordinary user) and, where the attack
applies to it, the CLI's embedded mode. TAP output; a test that cannot run
says SKIP with the reason (a failure under VECTORA_TEST_STRICT=1)."""

import functools
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vdaemon import term  # noqa: E402
from vtest import CLI, DAEMON, OWNER, ROOT, Daemon, Skip, Tap, needs_root, check, chown_tree, make_ws  # noqa: E402,F401

SANDBOX = '[sandbox]\nenabled = true\nmask = [".env"]\n'


def cli(*args, stdin=None, timeout=60, sock=None, env=None):
    """Embedded (--no-daemon) unless sock names this test's daemon: a daemon
    someone runs at the default socket (/run/vectora-sandbox.sock as root;
    another checkout's test-cli starts one) is not the code under test."""
    e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    e.update(env or {})
    if sock:
        e["VECTORA_SANDBOX_SOCKET"] = sock
    pre = [] if sock else ["--no-daemon"]
    return subprocess.run([CLI, *pre, *args], input=stdin, capture_output=True, text=True, env=e, timeout=timeout)


# ---------------------------------------------------------------- config reading


def t_fifo_config_does_not_block(d, tmp):
    """A FIFO named vectora.toml (the agent can make one in any directory it
    writes) once blocked the daemon's only loop in open(): every workspace
    stopped answering. Now it is a located fail-closed error, at once."""
    fifo = make_ws(tmp, "fifo")
    os.mkfifo(os.path.join(fifo, "vectora.toml"))
    other = make_ws(tmp, "fifo-other", SANDBOX, {"a.txt": "fine\n"})
    c = d.conn()
    c.s.settimeout(20)  # before the fix the reply never came
    t0 = time.monotonic()
    r = term(c, fifo, "echo ran", timeout=None)
    check(not r["ok"] and r["error"]["code"] == "config_invalid" and "is a FIFO" in r["error"]["message"]
          and os.path.join(fifo, "vectora.toml") in r["error"]["message"], r)
    check(time.monotonic() - t0 < 10, "took %.1f s" % (time.monotonic() - t0))
    # The loop is free: another workspace answers, and so does this one again.
    r = term(c, other, "cat a.txt")
    check(r["ok"] and r["stdout"] == "fine\n" and r["sandboxed"] is True, r)
    r = c.call({"tool": "file_read", "workspace": fifo, "path": "x"})
    check(r["error"]["code"] == "config_invalid", r)
    c.close()
    # A subdirectory of it is governed by it too (it claims the directory).
    os.makedirs(os.path.join(fifo, "sub"))
    r = cli("check", "-w", os.path.join(fifo, "sub"), timeout=20)
    check(r.returncode == 2 and "is a FIFO" in r.stderr, r)


def t_socket_and_device_config(d, tmp):
    """A socket or a device node named vectora.toml: refused, located."""
    sk = make_ws(tmp, "sockcfg")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(sk, "vectora.toml"))
    r = cli("check", "-w", sk, timeout=20)
    check(r.returncode == 2 and "is a socket" in r.stderr, r)
    c = d.conn()
    r = term(c, sk, "echo ran")
    check(r["error"]["code"] == "config_invalid" and "is a socket" in r["error"]["message"], r)
    s.close()
    if ROOT:
        dev = make_ws(tmp, "devcfg")
        os.mknod(os.path.join(dev, "vectora.toml"), 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero
        r = term(c, dev, "echo ran")
        check(r["error"]["code"] == "config_invalid" and "is a device" in r["error"]["message"], r)
    c.close()


# ---------------------------------------------------------------- workspace resolution


def t_subdirectory_runs_in_parent_jail(d, tmp):
    """-w ~/proj/sub once found no vectora.toml in sub/ and ran unsandboxed,
    reading ../.env. Now the nearest ancestor's policy governs, with that
    directory as the cwd, through the daemon and in embedded mode."""
    ws = make_ws(tmp, "walk", SANDBOX, {".env": "SECRET=walk\n", "sub/f.txt": "in sub\n", "sub/deeper/g.txt": "g\n"})
    sub = os.path.join(ws, "sub")
    c = d.conn()
    r = term(c, sub, "pwd; cat f.txt; cat ../.env; true")
    check(r["ok"] and r["sandboxed"] is True and r["sandbox"]["backend"] == "local", r)
    check(r["stdout"].startswith(sub + "\nin sub\n") and "SECRET" not in r["stdout"], r)
    r = term(c, sub, "pwd", cwd="deeper")
    check(r["stdout"] == os.path.join(sub, "deeper") + "\n", r)
    r = c.call({"tool": "file_read", "workspace": sub, "path": "../.env"})
    check(not r["ok"] and r["error"]["code"] == "denied", r)
    r = c.call({"tool": "file_read", "workspace": os.path.join(sub, "deeper"), "path": "g.txt"})
    check(r["ok"] and r["content"] == "g\n" and r["sandboxed"] is True, r)
    r = c.call({"tool": "file_write", "workspace": sub, "path": "new.txt", "content": "x"})
    check(r["ok"] and os.path.exists(os.path.join(sub, "new.txt")), r)
    # One workspace, one jail: the subdirectory did not make a second one.
    st = c.call({"tool": "status"})
    paths = [w["path"] for w in st["workspaces"]]
    check(ws in paths and sub not in paths, paths)
    c.close()
    # Embedded mode.
    r = cli("run", "-w", sub, "pwd; cat f.txt; cat ../.env; true")
    check(r.returncode == 0 and r.stdout.startswith(sub + "\nin sub\n") and "SECRET" not in r.stdout, r)
    r = cli("read", "-w", sub, "../.env")
    check(r.returncode == 125 and "SECRET" not in r.stdout, r)
    r = cli("read", "-w", sub, "f.txt")
    check(r.returncode == 0 and r.stdout == "in sub\n", r)


def own_daemon(t):
    """Runs the test against a daemon of its own, stopped after it: each
    workspace of the shared daemon holds inotify instances until the end
    (the limit, fs.inotify.max_user_instances, 128 by default, is per user),
    and a test that makes several workspaces would use up what later tests
    need."""
    @functools.wraps(t)
    def run(d, tmp):
        own = start_daemon(tmp, t.__name__)
        try:
            t(own, tmp)
        finally:
            own.stop()
    return run


@own_daemon
def t_workspace_path_swapped_between_calls(d, tmp):
    """The daemon remembers where a request's workspace path led and checks
    it with a stat or two instead of walking it again: a symlink on that
    path re-pointed between two calls, or the root itself moved away with a
    symlink to it left in its place, must send the next call where the full
    walk sends it."""
    a = make_ws(tmp, "pathswap-a", SANDBOX, {"who.txt": "a\n"})
    b = make_ws(tmp, "pathswap-b", SANDBOX, {"who.txt": "b\n"})
    link = os.path.join(tmp, "pathswap")
    os.symlink(a, link)
    c = d.conn()
    for _ in range(3):
        r = term(c, link, "cat who.txt")
        check(r["ok"] and r["stdout"] == "a\n", r)
    os.symlink(b, link + ".new")
    os.rename(link + ".new", link)
    r = term(c, link, "cat who.txt")
    check(r["ok"] and r["stdout"] == "b\n", r)
    for _ in range(3):
        r = term(c, a, "pwd")
        check(r["ok"] and r["stdout"] == a + "\n", r)
    os.rename(a, a + ".moved")
    os.symlink(a + ".moved", a)
    r = term(c, a, "pwd")
    check(r["ok"] and r["stdout"] == a + ".moved\n", r)
    c.close()


def t_check_says_which_file_governs(d, tmp):
    ws = make_ws(tmp, "governs", SANDBOX, {"a/b/x": ""})
    deep = os.path.join(ws, "a", "b")
    r = cli("check", "-w", deep)
    check(r.returncode == 0 and ("config       %s/vectora.toml" % ws) in r.stdout
          and ("directory    %s" % deep) in r.stdout and "sandboxed    yes" in r.stdout, r)
    r = cli("check", "--json", "-w", deep)
    j = json.loads(r.stdout)
    check(j["config"] == os.path.join(ws, "vectora.toml") and j["directory"] == deep and j["sandboxed"] is True, j)
    # Without one anywhere above: the directory itself, unsandboxed.
    plain = make_ws(tmp, "governs-none", None, {"s/t": ""})
    r = cli("check", "--json", "-w", os.path.join(plain, "s"))
    j = json.loads(r.stdout)
    if not any(os.path.exists(os.path.join(p, "vectora.toml")) for p in ("/", "/var", "/var/tmp", tmp)):
        check(j["sandboxed"] is False and j["workspace"] == os.path.join(plain, "s"), j)


# ---------------------------------------------------------------- approval of loosening changes


def save(ws, text):
    """Writes vectora.toml as editors do: a temp file renamed over it."""
    tmp = os.path.join(ws, ".vectora.toml.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    if ROOT:
        os.lchown(tmp, OWNER.pw_uid, OWNER.pw_gid)
    os.rename(tmp, os.path.join(ws, "vectora.toml"))


def allow(d, ws, *extra):
    return cli("allow", "-w", ws, *extra, sock=d.sock)


def t_loosening_waits_for_approval(d, tmp):
    ws = make_ws(tmp, "loosen", SANDBOX, {".env": "SECRET=loosen\n"})
    c = d.conn()
    r = term(c, ws, "cat .env; echo ran")
    check(r["ok"] and r["stdout"] == "ran\n" and r["policy_pending"] is None and r["sandboxed"] is True, r)
    g1 = r["sandbox"]["generation"]
    save(ws, '[sandbox]\nenabled = true\nmask = []\n')
    r = term(c, ws, "cat .env; echo ran")
    check(r["ok"] and "SECRET" not in r["stdout"] and r["sandbox"]["generation"] == g1, r)
    check(r["policy_pending"] and 'mask: ".env" is removed' in r["policy_pending"]
          and ("vectora-sandbox allow -w %s" % ws) in r["policy_pending"], r)
    r = c.call({"tool": "file_read", "workspace": ws, "path": ".env"})
    check(r["error"]["code"] == "denied" and r["policy_pending"], r)
    st = c.call({"tool": "status", "workspace": ws})
    check(st["workspaces"][0]["policy_pending"] == r["policy_pending"], st)
    # The CLI through the daemon shows the pending change on every call.
    rr = cli("run", "-w", ws, "true", sock=d.sock)
    check(rr.returncode == 0 and "loosens the sandbox" in rr.stderr, rr)
    # The host user approves: the difference first, then it applies.
    a = allow(d, ws)
    check(a.returncode == 0 and 'mask: ".env" is removed' in a.stdout and '-mask = [".env"]' in a.stdout
          and "+mask = []" in a.stdout and ("approved: %s" % ws) in a.stdout, a)
    r = term(c, ws, "cat .env")
    check(r["ok"] and r["stdout"] == "SECRET=loosen\n" and r["policy_pending"] is None
          and r["sandbox"]["generation"] > g1 and r["sandboxed"] is True, r)
    a = allow(d, ws)
    check(a.returncode == 0 and "nothing to approve" in a.stdout, a)
    c.close()


def t_tightening_applies_at_once(d, tmp):
    ws = make_ws(tmp, "tighten", '[sandbox]\nenabled = true\nnetwork = true\n', {"secret.txt": "TIGHT\n"})
    c = d.conn()
    r = term(c, ws, "cat secret.txt")
    check(r["stdout"] == "TIGHT\n", r)
    g1 = r["sandbox"]["generation"]
    save(ws, '[sandbox]\nenabled = true\nnetwork = false\nmask = ["secret.txt"]\n')
    r = term(c, ws, "cat secret.txt; echo ran")
    check(r["ok"] and r["stdout"] == "ran\n" and r["policy_pending"] is None and r["sandbox"]["generation"] > g1, r)
    # And back: that loosens again, so it waits.
    save(ws, '[sandbox]\nenabled = true\nnetwork = true\n')
    r = term(c, ws, "cat secret.txt; echo ran")
    check(r["stdout"] == "ran\n" and "network: false -> true" in r["policy_pending"]
          and 'mask: "secret.txt" is removed' in r["policy_pending"], r)
    c.close()


def t_sandbox_removed_is_pending(d, tmp):
    """Removing [sandbox], enabled = false, an empty file or no file at all:
    each is a loosening that waits; the approved sandbox keeps serving."""
    ws = make_ws(tmp, "removed", SANDBOX, {".env": "SECRET=removed\n"})
    c = d.conn()
    check(term(c, ws, "true")["sandboxed"] is True, "first call")
    for text in ("", "[other]\nx = 1\n", "[sandbox]\nenabled = false\n", None):
        if text is None:
            os.unlink(os.path.join(ws, "vectora.toml"))
        else:
            save(ws, text)
        r = term(c, ws, "cat .env; id -u")
        check(r["ok"] and r["sandboxed"] is True and "SECRET" not in r["stdout"]
              and "the sandbox is switched off" in (r["policy_pending"] or ""), (text, r))
        # The CLI's check says the same.
        k = cli("check", "--json", "-w", ws, sock=d.sock, env={"VECTORA_SANDBOX_STATE_DIR": d.state})
        j = json.loads(k.stdout)
        check(j["sandboxed"] is True and "switched off" in j["policy_pending"], (text, j))
    # Approved: the workspace runs unsandboxed, as the host user chose.
    a = allow(d, ws)
    check(a.returncode == 0 and "the sandbox is switched off" in a.stdout and "UNSANDBOXED" in a.stdout, a)
    r = term(c, ws, "cat .env")
    check(r["ok"] and r["sandboxed"] is False and r["stdout"] == "SECRET=removed\n" and r["policy_pending"] is None, r)
    c.close()


def t_first_seen_applies_at_once(d, tmp):
    ws = make_ws(tmp, "first", SANDBOX, {".env": "SECRET=first\n"})
    c = d.conn()
    r = term(c, ws, "cat .env; echo ran")
    check(r["stdout"] == "ran\n" and r["sandboxed"] is True and r["policy_pending"] is None, r)
    entry = os.path.join(d.state, "approved-%s.toml" % hashlib.sha256(ws.encode()).hexdigest())
    check(open(entry).read() == SANDBOX, entry)
    check((os.stat(d.state).st_mode & 0o777) == 0o700, oct(os.stat(d.state).st_mode))
    c.close()


def t_inplace_rewrite_has_no_window(d, tmp):
    """A host program that rewrites vectora.toml in place (truncate, then
    line by line) once let calls in that window run unsandboxed or under a
    prefix lacking the mask line."""
    text = '[sandbox]\nenabled = true\nrw_paths = ["."]\nmask = [".env"]\nnetwork = true\n'
    ws = make_ws(tmp, "inplace", text, {".env": "SECRET=inplace\n"})
    c = d.conn()
    check(term(c, ws, "true")["sandboxed"] is True, "first call")
    stop = threading.Event()
    rewrites = [0]

    def writer():
        path = os.path.join(ws, "vectora.toml")
        while not stop.is_set():
            with open(path, "r+") as f:
                f.truncate(0)
                f.flush()
                for line in text.splitlines(True):
                    f.write(line)
                    f.flush()
                    time.sleep(0.0005)
            rewrites[0] += 1

    th = threading.Thread(target=writer)
    th.start()
    calls = leaks = unsandboxed = 0
    t_end = time.monotonic() + 6
    try:
        while time.monotonic() < t_end:
            r = term(c, ws, "cat .env 2>/dev/null; echo .")
            calls += 1
            if r.get("error", {}).get("code") == "config_invalid":
                continue
            leaks += "SECRET" in r.get("stdout", "")
            unsandboxed += r["sandboxed"] is not True
    finally:
        stop.set()
        th.join()
    print("# in-place rewrites: %d rewrites, %d calls, %d leaks, %d unsandboxed" % (rewrites[0], calls, leaks, unsandboxed))
    check(rewrites[0] > 20 and calls > 20, (rewrites[0], calls))
    check(leaks == 0 and unsandboxed == 0, (leaks, unsandboxed))
    c.close()


def t_nested_config_needs_approval(d, tmp):
    """The agent writes sub/vectora.toml without a sandbox and names sub/:
    the enclosing workspace's policy keeps governing until the host user
    approves the nested one."""
    ws = make_ws(tmp, "nested", SANDBOX, {".env": "SECRET=nested\n", "sub/x": ""})
    sub = os.path.join(ws, "sub")
    c = d.conn()
    r = term(c, ws, "printf '# mine now\\n' > sub/vectora.toml && echo planted")
    check(r["ok"] and r["stdout"] == "planted\n", r)
    r = term(c, sub, "cat ../.env; pwd")
    check(r["ok"] and r["sandboxed"] is True and "SECRET" not in r["stdout"] and r["stdout"].endswith(sub + "\n"), r)
    check(("vectora-sandbox allow -w %s" % sub) in (r["policy_pending"] or ""), r)
    r = cli("run", "-w", sub, "cat ../.env; true", env={"VECTORA_SANDBOX_STATE_DIR": d.state})
    check(r.returncode == 0 and "SECRET" not in r.stdout and "has not been approved" in r.stderr, r)
    a = allow(d, sub)
    check(a.returncode == 0 and ("approved: %s" % sub) in a.stdout, a)
    r = term(c, sub, "cat ../.env")
    check(r["ok"] and r["sandboxed"] is False and r["policy_pending"] is None, r)
    c.close()


def t_embedded_mode_approval(d, tmp):
    state = os.path.join(tmp, "embedded-state")
    env = {"VECTORA_SANDBOX_STATE_DIR": state}
    ws = make_ws(tmp, "embedded", SANDBOX, {".env": "SECRET=embedded\n"})
    r = cli("run", "-w", ws, "cat .env; echo ran", env=env)
    # No pending change is warned of (the one warning is in-process
    # calls' memory limit, docs/protocol.md).
    warned = [x for x in r.stderr.splitlines() if "warning" in x and "memory: not enforced per workspace" not in x]
    check(r.returncode == 0 and r.stdout == "ran\n" and not warned, r)
    save(ws, "[sandbox]\nenabled = false\n")
    r = cli("run", "-w", ws, "cat .env; echo ran", env=env)
    check(r.returncode == 0 and r.stdout == "ran\n" and "the sandbox is switched off" in r.stderr, r)
    r = cli("check", "-w", ws, env=env)
    check(r.returncode == 0 and "sandboxed    yes" in r.stdout and "pending      " in r.stdout, r)
    r = cli("allow", "--json", "-w", ws, env=env)
    j = json.loads(r.stdout)
    check(r.returncode == 0 and j["approved"] == ws and j["changed"] is True and j["approved_sandboxed"] is False
          and "+enabled = false" in j["difference"], j)
    r = cli("run", "-w", ws, "cat .env", env=env)
    check(r.returncode == 0 and r.stdout == "SECRET=embedded\n", r)


def t_store_refused_as_listed_path(d, tmp):
    state = os.path.join(tmp, "listed-state")
    env = {"VECTORA_SANDBOX_STATE_DIR": state}
    ws = make_ws(tmp, "listed", '[sandbox]\nenabled = true\nro_paths = ["%s"]\n' % tmp)
    r = cli("check", "-w", ws, env=env)
    check(r.returncode == 2 and "approved-policy store" in r.stderr and "vectora.toml:3:" in r.stderr, r)
    c = d.conn()
    ws2 = make_ws(tmp, "listed2", '[sandbox]\nenabled = true\nro_paths = ["%s"]\n' % d.state)
    r = term(c, ws2, "ls %s" % d.state)
    check(r["error"]["code"] == "config_invalid" and "approved-policy store" in r["error"]["message"], r)
    c.close()


def t_result_describes_the_serving_worker(d, tmp):
    """A call finished by a draining worker once said "refused" (the state
    at reply time); it says how that worker ran it."""
    ws = make_ws(tmp, "drain", SANDBOX)
    c = d.conn()
    check(term(c, ws, "true")["sandboxed"] is True, "first call")
    c.send({"id": 500, "tool": "terminal", "workspace": ws, "command": "sleep 1.5; echo done"})
    time.sleep(0.5)
    # In place (same inode: the jail's read-only mount stays, so the
    # worker drains rather than being recycled).
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write("[sandbox]\nbogus = 1\n")
    c2 = d.conn()
    r2 = term(c2, ws, "true")
    check(r2["error"]["code"] == "config_invalid", r2)
    while True:
        r = c.recv()
        if r.get("id") == 500:
            break
    check(r["ok"] and r["stdout"] == "done\n" and r["sandboxed"] is True and r["sandbox"]["state"] == "sandboxed"
          and r["sandbox"]["backend"] == "local", r)
    c.close()
    c2.close()


# ---------------------------------------------------------------- host-side replacement of protected paths


def host_git(ws, *args):
    subprocess.run(["git", "-c", "safe.directory=*", "-C", ws, *args], check=True, capture_output=True)
    chown_tree(ws)


WRITE_PROTECTED = ("for f in vectora.toml .git/config .git/hooks/pre-commit; do "
                   "if printf '# planted\\n' >> $f 2>/dev/null; then echo WROTE $f; fi; done; echo end")


def unchanged(ws):
    for rel in ("vectora.toml", ".git/config"):
        with open(os.path.join(ws, rel)) as f:
            check("planted" not in f.read(), rel + " was written from the jail")
    check(not os.path.exists(os.path.join(ws, ".git/hooks/pre-commit")), "a hook was planted")


def t_host_save_keeps_protection(d, tmp):
    """Editors and git save by rename; that detached the jail's read-only
    mount, and the running jail could then write vectora.toml and append a
    core.fsmonitor to .git/config. The worker is now recycled before the
    next call (and at once on the inotify event)."""
    ws = make_ws(tmp, "hostsave", SANDBOX, {".env": "SECRET=save\n"})
    host_git(ws, "init", "-q")
    c = d.conn()
    r = term(c, ws, WRITE_PROTECTED)
    check(r["ok"] and r["stdout"] == "end\n", r)
    pid1 = c.call({"tool": "status", "workspace": ws})["workspaces"][0]["worker"]["pid"]
    save(ws, SANDBOX)                                   # an editor's save
    host_git(ws, "config", "user.name", "host")         # git's own lockfile rename
    shutil.rmtree(os.path.join(ws, ".git/hooks"))       # hooks replaced whole
    os.mkdir(os.path.join(ws, ".git/hooks"))
    chown_tree(ws)
    r = term(c, ws, WRITE_PROTECTED)
    check(r["ok"] and r["stdout"] == "end\n" and r["sandboxed"] is True, r)
    unchanged(ws)
    pid2 = c.call({"tool": "status", "workspace": ws})["workspaces"][0]["worker"]["pid"]
    check(pid2 != pid1, "the worker was not recycled")
    c.close()


def t_git_appearing_later_is_protected(d, tmp):
    """A git init on the host after the jail started: its config and hooks
    were writable in the running jail."""
    ws = make_ws(tmp, "lategit", SANDBOX)
    c = d.conn()
    check(term(c, ws, "true")["ok"], "first call")
    host_git(ws, "init", "-q")
    r = term(c, ws, WRITE_PROTECTED)
    check(r["ok"] and r["stdout"] == "end\n", r)
    unchanged(ws)
    c.close()


def worker_pid(c, ws):
    return c.call({"tool": "status", "workspace": ws})["workspaces"][0]["worker"]["pid"]


@own_daemon
def t_root_replaced_from_above(d, tmp):
    """Each call reads the watch's queue instead of lstat'ing every
    protected path. Moving a directory above the workspace queues no event
    on any watch (the watched directories move along with it): a copy put
    in its place must still be seen before the next call, which runs in the
    copy, under a new jail that protects the copy's files."""
    base = os.path.join(tmp, "rootswap")
    os.makedirs(base)
    ws = make_ws(base, "ws", SANDBOX)
    host_git(ws, "init", "-q")
    c = d.conn()
    for _ in range(3):  # what the jail's start queued on the watch is drained
        check(term(c, ws, "true")["ok"], "quiet call")
    pid1 = worker_pid(c, ws)
    os.rename(base, base + ".old")
    shutil.copytree(base + ".old", base, symlinks=True)
    host_write(os.path.join(ws, "fresh.txt"), "fresh\n")
    chown_tree(ws)
    r = term(c, ws, "cat fresh.txt")
    check(r["ok"] and r["stdout"] == "fresh\n", r)
    check(worker_pid(c, ws) != pid1, "the old jail served the replaced workspace")
    r = term(c, ws, WRITE_PROTECTED)
    check(r["ok"] and r["stdout"] == "end\n", r)
    unchanged(ws)
    c.close()


@own_daemon
def t_git_replaced_whole_then_saved(d, tmp):
    """A .git replaced whole by a copy recycles the worker; the new jail's
    watch must be on the new .git: a git save inside it (an event only
    there) recycles again before the next call."""
    ws = make_ws(tmp, "gitswap", SANDBOX)
    host_git(ws, "init", "-q")
    c = d.conn()
    check(term(c, ws, "true")["ok"], "first call")
    pid1 = worker_pid(c, ws)
    git = os.path.join(ws, ".git")
    # Copied outside: a repository that appears under the writable paths
    # while a jail runs is taken as the jail's and put aside
    # (test_planted_git.py).
    copy = os.path.join(tmp, "gitswap.git.new")
    shutil.copytree(git, copy, symlinks=True)
    os.rename(git, git + ".old")
    os.rename(copy, git)
    chown_tree(ws)
    check(term(c, ws, "true")["ok"], "after the swap")
    pid2 = worker_pid(c, ws)
    check(pid2 != pid1, "not recycled after .git was replaced")
    for i in range(3):  # quiet calls: the same jail serves them
        check(term(c, ws, "true")["ok"], "quiet call")
    check(worker_pid(c, ws) == pid2, "recycled with nothing changed")
    host_git(ws, "config", "user.name", "host")
    r = term(c, ws, WRITE_PROTECTED)
    check(r["ok"] and r["stdout"] == "end\n", r)
    check(worker_pid(c, ws) != pid2, "not recycled after a save in the new .git")
    unchanged(ws)
    c.close()


@own_daemon
def t_host_mount_over_protected_path(d, tmp):
    """A mount made on the host over a protected path (a bind of another
    file over .git/config) changes what the path is with no inotify event:
    the next call must still be served by a new jail, whose read-only
    mount covers what the path is now."""
    if not ROOT:
        needs_root("needs root to mount on the host")
    ws = make_ws(tmp, "hostmount", SANDBOX)
    host_git(ws, "init", "-q")
    other = os.path.join(tmp, "hostmount-config")
    shutil.copy(os.path.join(ws, ".git/config"), other)
    os.lchown(other, OWNER.pw_uid, OWNER.pw_gid)
    c = d.conn()
    for _ in range(3):
        check(term(c, ws, "true")["ok"], "quiet call")
    pid1 = worker_pid(c, ws)
    target = os.path.join(ws, ".git/config")
    subprocess.run(["mount", "--bind", other, target], check=True)
    try:
        r = term(c, ws, "printf '# planted\\n' >> .git/config 2>/dev/null && echo WROTE; echo end")
        check(r["ok"] and r["stdout"] == "end\n", r)
        check(worker_pid(c, ws) != pid1, "the jail from before the mount served the call")
        with open(target) as f:
            check("planted" not in f.read(), ".git/config was written from the jail")
    finally:
        subprocess.run(["umount", target], check=True)
    c.close()


def t_host_git_stays_quiet(d, tmp):
    """The placeholders made for missing control files change nothing the
    host's git says: after a sandboxed call, `git status` and `git log` on
    the host print no hint or warning (an info/grafts, even empty, makes
    every git command print a deprecation hint), and the jail cannot write
    an existing info/grafts."""
    ws = make_ws(tmp, "quietgit", SANDBOX)
    host_git(ws, "init", "-q")
    c = d.conn()
    r = term(c, ws, "printf 'x\\n' >> .git/info/attributes 2>/dev/null && echo WROTE; echo end")
    check(r["ok"] and r["stdout"] == "end\n", r)
    check(not os.path.exists(os.path.join(ws, ".git/info/grafts")), "info/grafts was made on the host")
    for args in (["status"], ["-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "x"],
                 ["log", "--oneline", "-1"]):
        p = subprocess.run(["git", "-c", "safe.directory=*", "-C", ws, *args], capture_output=True, text=True)
        check(p.returncode == 0 and p.stderr == "", (args, p.returncode, p.stderr))
    chown_tree(ws)
    host_write(os.path.join(ws, ".git/info/grafts"), "")
    c.close()
    c = d.conn()
    r = term(c, ws, "printf 'a b\\n' >> .git/info/grafts 2>/dev/null && echo WROTE; echo end")
    check(r["ok"] and r["stdout"] == "end\n", r)
    check(open(os.path.join(ws, ".git/info/grafts")).read() == "", "info/grafts written from the jail")
    c.close()


def t_recycle_window(d, tmp):
    """A command already running when the host saves: how long until the
    jail is gone. Measured, reported, and bounded."""
    ws = make_ws(tmp, "window", SANDBOX)
    host_git(ws, "init", "-q")
    c = d.conn()
    check(term(c, ws, "true")["ok"], "first call")
    loop = ("while :; do if printf '# in\\n' >> .git/config 2>/dev/null; then echo WROTE; exit 0; fi; done")
    windows, wrote = [], 0
    for i in range(5):
        c.send({"id": 900 + i, "tool": "terminal", "workspace": ws, "command": loop, "timeout": 20})
        time.sleep(0.3)
        t0 = time.monotonic()
        host_git(ws, "config", "user.name", "host%d" % i)  # renames config.lock over config, then exits
        t1 = time.monotonic()
        while True:
            r = c.recv()
            if r.get("id") == 900 + i:
                break
        t2 = time.monotonic()
        windows.append(((t2 - t1) * 1000, (t2 - t0) * 1000))
        if r.get("ok"):
            wrote += r.get("stdout") == "WROTE\n"
        else:
            check(r["error"]["code"] == "worker_recycled" and ".git/config changed on the host" in r["error"]["message"], r)
        # Whatever landed in the window, the next call's jail protects it again.
        r2 = term(c, ws, "printf '# after\\n' >> .git/config 2>/dev/null && echo WROTE; echo end")
        check(r2["stdout"] == "end\n", r2)
    lo = sorted(w[0] for w in windows)
    hi = sorted(w[1] for w in windows)
    print("# recycle window (host rename -> the running command's jail ended): between %.1f ms (from git's exit) and "
          "%.1f ms (from git's start), median of %d; max %.1f ms; %d of %d busy-loop writers got a write in"
          % (lo[len(lo) // 2], hi[len(hi) // 2], len(windows), hi[-1], wrote, len(windows)))
    check(hi[-1] < 5000, windows)
    c.close()


def t_embedded_action_ends_on_host_save(d, tmp):
    """Embedded mode: one jail for one action, so the window is the
    action's length; a host save during it ends the action. The command
    says when it runs and waits for the test's go, so the host's save falls
    inside the action whatever the load (a fixed sleep once let the save
    land before the jail existed), and --no-daemon keeps the action in this
    build (without it the CLI took a daemon at the default socket, once
    another checkout's, whose jail let the write through)."""
    ws = make_ws(tmp, "embsave", SANDBOX)
    host_git(ws, "init", "-q")
    env = {"VECTORA_SANDBOX_STATE_DIR": os.path.join(tmp, "embsave-state")}
    started, go = os.path.join(ws, "started"), os.path.join(ws, "go")
    p = subprocess.Popen([CLI, "--no-daemon", "run", "-w", ws,
                          "touch started; while [ ! -e go ]; do sleep 0.02; done; "
                          "printf '# planted\\n' >> .git/config && echo WROTE"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict({k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}, **env))
    deadline = time.monotonic() + 60
    while not os.path.exists(started) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    check(os.path.exists(started), "the command did not start: %r" % (p.poll(),))
    host_git(ws, "config", "user.name", "host")
    time.sleep(0.5)  # the reaction asked for (t_recycle_window measures it)
    open(go, "w").close()
    out, err = p.communicate(timeout=60)
    check(p.returncode == 125 and "WROTE" not in out and ".git/config changed on the host" in err, (p.returncode, out, err))
    unchanged(ws)


SPARE_UID = 64999  # no process of this uid runs but the test's own


def as_spare(*argv):
    return ["setpriv", "--reuid=%d" % SPARE_UID, "--regid=%d" % SPARE_UID, "--clear-groups", *argv]


def live_write_ends(ws, argv_prefix, env):
    """A command in the jail waits for the test's go, then appends to
    .git/config; the host renames a new .git/config in first (git's own
    save). Returns (exit, stdout, stderr) of the CLI."""
    started, go = os.path.join(ws, "started"), os.path.join(ws, "go")
    for f in (started, go):
        if os.path.exists(f):
            os.unlink(f)
    p = subprocess.Popen(argv_prefix + ["exec", "-w", ws, "--", "sh", "-c",
                                        "touch started; while [ ! -e go ]; do sleep 0.02; done; "
                                        "printf '# planted\\n' >> .git/config && echo WROTE; exit 0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not os.path.exists(started) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    if not os.path.exists(started):
        p.kill()
        check(False, "the command did not start: %r" % (p.communicate(timeout=10),))
    cfg = os.path.join(ws, ".git/config")
    with open(cfg + ".lock", "w") as f:
        f.write("[core]\n\tbare = false\n[user]\n\tname = host\n")
    os.chown(cfg + ".lock", SPARE_UID, SPARE_UID)
    os.rename(cfg + ".lock", cfg)
    # The jail must be gone within this (10 ms polling, or inotify's event;
    # t_recycle_window measures the real window): the write then comes after.
    time.sleep(0.5)
    open(go, "w").close()
    out, err = p.communicate(timeout=60)
    check("planted" not in open(cfg).read(), ".git/config written from the jail after the host's save: %r" % err)
    return p.returncode, out, err


def t_running_command_watched_without_inotify(d, tmp):
    """The inotify instance limit (fs.inotify.max_user_instances, 128 by
    default) is per user, shared by every process of that uid. Once it was
    reached (test suites running side by side as root), the protected-path
    watch could not be made and a command already running wrote .git/config
    after the host's save, exit 0 (embedded; the daemon only logged it). The
    paths are now looked at every 10 ms instead, embedded and in the daemon."""
    if not ROOT:
        needs_root("needs root to run as a spare uid whose inotify instances it can use up")
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    base = os.path.join(tmp, "noinotify")
    ws = os.path.join(base, "ws")
    for rel, text in (("vectora.toml", SANDBOX), (".git/HEAD", "ref: refs/heads/main\n"),
                      (".git/config", "[core]\n\tbare = false\n")):
        os.makedirs(os.path.dirname(os.path.join(ws, rel)), exist_ok=True)
        with open(os.path.join(ws, rel), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(base, "home"))
    os.makedirs(os.path.join(base, "run"), mode=0o700)
    for dp, dirs, files in os.walk(base):
        for n in [dp] + [os.path.join(dp, f) for f in files]:
            os.lchown(n, SPARE_UID, SPARE_UID)
    hold = ("import ctypes, sys, time\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "fds = [fd for fd in iter(lambda: libc.inotify_init1(0), -1)]\n"
            "print(len(fds), flush=True)\n"
            "sys.stdin.read()\n")
    holder = subprocess.Popen(as_spare(py, "-c", hold), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    daemon = None
    env = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    env.update(HOME=os.path.join(base, "home"), XDG_RUNTIME_DIR=os.path.join(base, "run"))
    try:
        check(int(holder.stdout.readline()) > 0, "no inotify instance held")
        rc, out, err = live_write_ends(ws, as_spare(CLI, "--no-daemon"), env)
        check(rc == 125 and "WROTE" not in out and "changed on the host" in err, (rc, out, err))
        sock = os.path.join(base, "run", "d.sock")
        log = os.path.join(base, "d.log")
        daemon = subprocess.Popen(as_spare(DAEMON, "--foreground", "--socket", sock, "--log-file", log,
                                           "--state-dir", os.path.join(base, "state")),
                                  env=env, stdin=subprocess.DEVNULL)
        for _ in range(1000):
            if os.path.exists(sock) or daemon.poll() is not None:
                break
            time.sleep(0.01)
        check(daemon.poll() is None, "the daemon did not start")
        rc, out, err = live_write_ends(ws, as_spare(CLI), dict(env, VECTORA_SANDBOX_SOCKET=sock))
        check(rc == 125 and "WROTE" not in out and "worker_recycled" in err, (rc, out, err))
        check("looking at them every 10 ms" in open(log).read(), "the daemon did not say it fell back")
        # Masks over time have no watch either: every result says so (it
        # said nothing, and lockdown served), and lockdown refuses.
        r = subprocess.run(as_spare(CLI, "--json", "run", "-w", ws, "true"), capture_output=True, text=True,
                           env=dict(env, VECTORA_SANDBOX_SOCKET=sock), timeout=60)
        res = json.loads(r.stdout)
        check(any("not watched" in x for x in res["sandbox"]["degraded"]), res)
        with open(os.path.join(ws, "vectora.toml"), "a") as f:
            f.write("lockdown = true\n")
        r = subprocess.run(as_spare(CLI, "run", "-w", ws, "echo ran"), capture_output=True, text=True,
                           env=dict(env, VECTORA_SANDBOX_SOCKET=sock), timeout=60)
        check(r.returncode == 125 and "ran" not in r.stdout and "inotify" in r.stderr, r)
    finally:
        holder.stdin.close()
        holder.wait()
        if daemon:
            daemon.terminate()
            daemon.wait(10)


def t_placeholder_where_the_jail_cannot_write(d, tmp):
    """A .git the caller cannot write (cloned by root, used by a user whose
    CLI runs the jail as that user): the placeholders of its missing
    control files cannot be made, and need not be (the jail, the same uid
    with less, cannot create them either). Every call was refused."""
    if not ROOT:
        needs_root("needs root to make a .git owned by another uid than the caller")
    base = os.path.join(tmp, "rootgit")
    ws = os.path.join(base, "ws")
    os.makedirs(os.path.join(ws, ".git"))
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write(SANDBOX)
    with open(os.path.join(ws, ".git/HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    os.makedirs(os.path.join(base, "home"))
    for n in (base, ws, os.path.join(ws, "vectora.toml"), os.path.join(base, "home")):
        os.lchown(n, SPARE_UID, SPARE_UID)
    env = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    env.update(HOME=os.path.join(base, "home"))
    r = subprocess.run(as_spare(CLI, "--no-daemon", "run", "-w", ws,
                                "echo ran; printf x > .git/config.worktree 2>/dev/null && echo WROTE; true"),
                       capture_output=True, text=True, env=env, timeout=60)
    check(r.returncode == 0 and r.stdout == "ran\n", r)
    check(not os.path.exists(os.path.join(ws, ".git/config.worktree")), "a placeholder or a write appeared")


def t_git_state_writable_control_sealed(d, tmp):
    """All of .git is read-only in the jail but git's own state: git add,
    commit, checkout and gc work, while config, config.worktree, hooks,
    info/attributes, commondir, remotes, objects/info/alternates can be
    neither written nor created, also where they were missing (the host
    gets an empty placeholder; commondir's says "." and the host's git
    still works). The file tools refuse them too."""
    ws = make_ws(tmp, "gitctl", SANDBOX, {"f.txt": "one\n"})
    host_git(ws, "init", "-q")
    for rel in (".git/hooks", ".git/info"):
        shutil.rmtree(os.path.join(ws, rel), ignore_errors=True)
    c = d.conn()
    control = [".git/config", ".git/config.worktree", ".git/hooks/pre-commit", ".git/info/attributes",
               ".git/info/exclude", ".git/commondir", ".git/remotes/origin", ".git/branches/origin",
               ".git/objects/info/alternates"]
    r = term(c, ws, "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b; "
                    "git add f.txt && git commit -qm one && git checkout -qb topic && echo two >> f.txt && "
                    "git commit -qam two && git checkout -q - && git gc -q 2>/dev/null; git log --oneline --all | wc -l; "
                    "for f in %s; do printf '[core]\\n\\tfsmonitor = evil\\n' >> $f 2>/dev/null && echo WROTE $f; done; "
                    "echo end" % " ".join(control))
    check(r["ok"] and r["stdout"] == "2\nend\n", r)
    for rel in control:
        p = os.path.join(ws, rel)
        check(not os.path.exists(p) or "evil" not in open(p).read(), rel + " was written from the jail")
    check(os.listdir(os.path.join(ws, ".git/hooks")) == [], "hooks placeholder not empty")
    with open(os.path.join(ws, ".git/commondir")) as f:
        check(f.read() == ".", "commondir placeholder")
    st = os.stat(os.path.join(ws, ".git/config.worktree"))
    check(st.st_uid == os.stat(ws).st_uid, "the placeholder is not the workspace owner's")
    out = subprocess.run(["git", "-c", "safe.directory=*", "-C", ws, "log", "--oneline", "topic"],
                         capture_output=True, text=True)
    check(out.returncode == 0 and len(out.stdout.splitlines()) == 2, out)
    for rel in (".git/info/attributes", ".git/commondir", ".git/config.worktree"):
        r = c.call({"tool": "file_write", "workspace": ws, "path": rel, "content": "x\n"})
        check(not r["ok"] and r["error"]["code"] == "denied" and "protected" in r["error"]["message"], (rel, r))
    c.close()


def fsmonitor_plant(marker):
    """Jail commands that try to make the host's git run `touch marker`:
    git init, then core.fsmonitor in .git/config (by hand and by git
    config), core.hooksPath, and hooks git runs on commit and checkout."""
    run = "touch %s; :" % marker
    hook = "#!/bin/sh\\ntouch %s\\n" % marker
    return ("git init -q 2>/dev/null; "
            "printf '[core]\\n\\tfsmonitor = \"%s\"\\n' >> .git/config 2>/dev/null && echo WROTE; "
            "git config core.fsmonitor '%s' 2>/dev/null && echo WROTE; "
            "git config core.hooksPath /tmp 2>/dev/null && echo WROTE; "
            "mkdir -p .git/hooks 2>/dev/null; "
            "for h in pre-commit post-checkout; do printf '%s' > .git/hooks/$h 2>/dev/null && echo WROTE; done; "
            "echo end") % (run, run, hook)


def host_git_runs_nothing(ws, marker):
    """The host user's git status, commit and checkout in ws: nothing
    planted runs (marker stays absent)."""
    for args in (["status", "--short"], ["-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q",
                                          "--allow-empty", "-m", "host"], ["checkout", "-q", "-b", "hostside"],
                 ["checkout", "-q", "-"]):
        out = subprocess.run(["git", "-c", "safe.directory=*", "-C", ws, *args], capture_output=True, text=True)
        check(out.returncode == 0, (args, out))
    chown_tree(ws)
    check(not os.path.exists(marker), "the host's git ran what the jail planted in " + ws)


def t_git_init_in_jail(d, tmp):
    """In a workspace without .git that lets the agent make its repository
    (git_init = true; by default the placeholder refuses git init, see
    t_git_init_refused_by_default), git init in the jail followed by writes
    to .git/config and .git/hooks succeeded; the host user's next git
    status there ran what was planted. The daemon then ended the jail when
    it noticed the new .git: a race, lost at times (up to 2 in 5 planted).
    Now the repository is made on the host, by the host's git as the
    workspace's owner, before the jail starts: the first command already
    finds its config and hooks read-only, the agent's git init fails
    against them (the repository stays usable), and the agent's add and
    commit work."""
    marker = os.path.join(tmp, "gitinit-fsmonitor-ran")
    # The probe is live: a repository whose config names the fsmonitor
    # makes the host's git status run it.
    live = make_ws(tmp, "gitinit-live")
    host_git(live, "init", "-q")
    host_git(live, "config", "core.fsmonitor", "touch %s; :" % marker)
    subprocess.run(["git", "-c", "safe.directory=*", "-C", live, "status"], capture_output=True)
    check(os.path.exists(marker), "the fsmonitor probe did not run")
    os.unlink(marker)

    planted = 0
    c = d.conn()
    for i in range(5):
        ws = make_ws(tmp, "gitinit%d" % i, SANDBOX + "git_init = true\n", {"f.txt": "one\n"})
        r = term(c, ws, fsmonitor_plant(marker))
        # The first command: no recycle, nothing written.
        check(r["ok"] and r["stdout"] == "end\n" and r["sandboxed"] is True, r)
        pid = worker_pid(c, ws)
        gd = os.path.join(ws, ".git")
        check(os.path.isfile(os.path.join(gd, "HEAD")) and os.stat(gd).st_uid == os.stat(ws).st_uid,
              "no repository of the workspace's owner")
        with open(os.path.join(gd, "config")) as f:
            cfg = f.read()
        planted += "fsmonitor" in cfg or "hooksPath" in cfg or bool(os.listdir(os.path.join(gd, "hooks")))
        host_git_runs_nothing(ws, marker)
        # The agent's git works for normal use: objects, refs, index.
        r = term(c, ws, "git add f.txt && git -c user.name=a -c user.email=a@a commit -q -m agent && git log --format=%s")
        check(r["ok"] and r["stdout"].startswith("agent\n"), r)
        check(worker_pid(c, ws) == pid, "the worker was recycled after the host made the repository")
    print("# git init in the jail with git_init = true: %d of 5 planted" % planted)
    check(planted == 0, ("planted", planted))
    out = subprocess.run(["git", "-c", "safe.directory=*", "-C", ws, "log", "--format=%s"], capture_output=True,
                         text=True)
    check(out.stdout == "agent\nhost\n", out)
    # The agent's own git init: the repository's config and hooks are
    # read-only, so it fails (status 128); the repository is unchanged.
    r = term(c, ws, "git init; echo status=$?; git init --template=; echo status=$?")
    check(r["ok"] and r["stdout"].count("status=128") == 2 and "Read-only file system" in r["stderr"]
          and "could not write config file" in r["stderr"], r)
    c.close()


def t_git_init_without_host_git(d, tmp):
    """git_init = true makes the repository before the jail starts, and no
    git runs for it: the project writes what `git init --template=` writes
    (a git run on the path .git followed a symlink put there meanwhile). So
    a host without git gets the repository all the same: here /usr/bin/git
    is hidden under /dev/null in a mount namespace of the CLI's own
    (embedded mode), and the jail starts with a repository whose config
    and hooks it cannot write."""
    if not ROOT:
        needs_root("hiding /usr/bin/git needs a mount namespace (root)")
    ws = make_ws(tmp, "nogit-cli", SANDBOX + "git_init = true\n")
    hide = "".join("mount --bind /dev/null %s && " % g for g in ("/usr/bin/git", "/usr/local/bin/git")
                   if os.path.exists(g) and not os.path.islink(g))
    e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        hide + 'exec "$@"', "sh", CLI, "--no-daemon", "run", "-w", ws,
                        "git --version >/dev/null 2>&1 && echo GIT; "
                        "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config 2>/dev/null && echo WROTE; "
                        "mkdir -p .git/hooks 2>/dev/null && printf x > .git/hooks/pre-commit 2>/dev/null && echo HOOK; "
                        "echo ran"],
                       capture_output=True, text=True, env=e, timeout=60)
    check(r.returncode == 0 and r.stdout == "ran\n", r)
    check(open(os.path.join(ws, ".git/HEAD")).read() == "ref: refs/heads/master\n", "no repository made")
    check("evil" not in open(os.path.join(ws, ".git/config")).read(), "config written")
    check(not os.path.exists(os.path.join(ws, ".git/hooks/pre-commit")), "hook planted")
    check(os.stat(os.path.join(ws, ".git/config")).st_uid == os.stat(ws).st_uid, "not the owner's")
    # The host's git takes it as a repository.
    g = subprocess.run(["git", "-c", "safe.directory=*", "-C", ws, "rev-parse", "--git-dir"], capture_output=True,
                       text=True)
    check(g.returncode == 0 and g.stdout == ".git\n", ("not a repository for git", g))


def t_git_init_refused_by_default(d, tmp):
    """A workspace without .git: the jail could git init and plant config
    and hooks before the daemon noticed (a race). Now a missing root .git is
    an empty read-only directory in the jail: git init fails and nothing is
    planted; on the host the empty .git changes nothing for git (it looks
    further up). git_init = true lets the agent make the repository."""
    ws = make_ws(tmp, "noinit", SANDBOX)
    c = d.conn()
    r = term(c, ws, "git init -q 2>/dev/null && echo INIT; mkdir .git/hooks 2>/dev/null && echo MKDIR; "
                    "printf '[core]\\n\\tfsmonitor = evil\\n' > .git/config 2>/dev/null && echo WROTE; echo end")
    check(r["ok"] and r["stdout"] == "end\n", r)
    check(os.path.isdir(os.path.join(ws, ".git")) and os.listdir(os.path.join(ws, ".git")) == [], "the placeholder")
    check(os.stat(os.path.join(ws, ".git")).st_uid == os.stat(ws).st_uid, "the placeholder is not the owner's")
    r = c.call({"tool": "file_write", "workspace": ws, "path": ".git/HEAD", "content": "ref: refs/heads/x\n"})
    check(not r["ok"] and r["error"]["code"] == "denied", r)
    # The host's git init still works in it, and the next call is served by a
    # jail that protects the new repository's control files.
    host_git(ws, "init", "-q")
    r = term(c, ws, "printf x >> .git/config 2>/dev/null && echo WROTE; git status --short >/dev/null && echo STATUS")
    check(r["ok"] and r["stdout"] == "STATUS\n", r)
    # git_init = true: no placeholder but a repository (t_git_init_in_jail),
    # also where the placeholder of git_init = false was left.
    ws2 = make_ws(tmp, "yesinit", SANDBOX + "git_init = true\n")
    os.mkdir(os.path.join(ws2, ".git"))
    chown_tree(ws2)
    check(term(c, ws2, "true")["ok"], "first call")
    check(os.path.isfile(os.path.join(ws2, ".git/HEAD")), "git_init = true left the empty placeholder")
    c.close()


def t_protect_globs(d, tmp):
    """protect = [...] (default: .envrc, .vscode/tasks.json and
    settings.json, .mcp.json, .claude/settings*.json at any depth): existing
    ones are read-only in the jail and cannot be moved aside; the file tools
    refuse to write or create them; a written list replaces the default."""
    ws = make_ws(tmp, "protect", SANDBOX, {".envrc": "echo host\n", "sub/.vscode/tasks.json": "{}\n",
                                           ".claude/settings.json": "{}\n", "Makefile": "all:\n"})
    c = d.conn()
    r = term(c, ws, "for f in .envrc sub/.vscode/tasks.json .claude/settings.json; do "
                    "printf x >> $f 2>/dev/null && echo WROTE $f; done; mv sub/.vscode sub/v 2>/dev/null && echo MOVED; "
                    "mv .claude c 2>/dev/null && echo MOVED; printf x >> Makefile && echo MAKE; echo end")
    check(r["ok"] and r["stdout"] == "MAKE\nend\n", r)
    for rel, text in ((".envrc", "echo host\n"), ("sub/.vscode/tasks.json", "{}\n"), (".claude/settings.json", "{}\n")):
        check(open(os.path.join(ws, rel)).read() == text, rel + " was written")
    for rel in (".envrc", "other/.envrc", ".mcp.json", "x/.vscode/settings.json", ".claude/settings.local.json"):
        r = c.call({"tool": "file_write", "workspace": ws, "path": rel, "content": "x\n"})
        check(not r["ok"] and r["error"]["code"] == "denied" and "protected" in r["error"]["message"], (rel, r))
    # A list of its own replaces the default (first seen: applies at once).
    ws2 = make_ws(tmp, "protect2", SANDBOX + 'protect = ["Makefile"]\n', {".envrc": "echo host\n", "Makefile": "all:\n"})
    r = term(c, ws2, "printf x >> Makefile 2>/dev/null && echo MAKE; printf '#\\n' >> .envrc && echo ENVRC")
    check(r["ok"] and r["stdout"] == "ENVRC\n", r)
    c.close()


def t_host_run_files_reported(d, tmp):
    """Files the host runs later that a call creates or changes (a .git
    below the root, .envrc, .vscode/tasks.json, .mcp.json, .claude/...) are
    listed in that call's result and in the audit log."""
    # protect = []: these would be read-only (existing) or refused by the
    # file tools (t_protect_globs); reporting holds whatever protect says.
    ws = make_ws(tmp, "hostrun", SANDBOX + "protect = []\n", {"sub/keep": "", ".vscode/tasks.json": "{}\n"})
    c = d.conn()
    r = term(c, ws, "echo plain > notes.txt")
    check(r["ok"] and r["host_run_files"] == [], r)
    # A repository made in the jail ends it and is put aside
    # (test_planted_git.py): reported as sub/.git and where its HEAD went.
    r = term(c, ws, "git init -q sub && echo x")
    check(not r["ok"] and r["error"]["code"] == "worker_recycled" and os.path.join(ws, "sub/.git") in r["host_run_files"]
          and os.path.join(ws, "sub/.git/HEAD.vectora-quarantine") in r["host_run_files"], r)
    cases = [
        ("printf 'echo hi' > .envrc", [os.path.join(ws, ".envrc")]),
        ("printf '{}' > .vscode/tasks.json", [os.path.join(ws, ".vscode/tasks.json")]),
        ("mkdir -p sub/.claude && printf '{}' > sub/.claude/settings.json", [os.path.join(ws, "sub/.claude/settings.json")]),
        ("printf '{}' > .mcp.json", [os.path.join(ws, ".mcp.json")]),
    ]
    for cmd, want in cases:
        r = term(c, ws, cmd)
        check(r["ok"] and all(w in r["host_run_files"] for w in want), (cmd, r))
        # A new repository is one entry, not one per file git wrote in it
        # (a ring of notes that per-file entries could overflow).
        check(not any("/.git/" in p for p in r["host_run_files"]), (cmd, r))
    r = c.call({"tool": "file_write", "workspace": ws, "path": "sub/.envrc", "content": "echo hi\n"})
    check(r["ok"] and os.path.join(ws, "sub/.envrc") in r["host_run_files"], r)
    c.close()
    with open(d.audit) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    listed = set(p for rec in recs if rec.get("workspace") == ws for p in rec.get("host_run_files", []))
    check(os.path.join(ws, ".envrc") in listed and os.path.join(ws, "sub/.envrc") in listed, listed)


# ---------------------------------------------------------------- masks over time


def host_write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    chown_tree(os.path.dirname(path))


def eventually_masked(c, ws, command, secret):
    """The watcher recycles on the inotify event; give it a moment."""
    for _ in range(50):
        r = term(c, ws, command)
        if secret not in r.get("stdout", ""):
            return r
        time.sleep(0.1)
    raise AssertionError(("still readable", r))


def t_rename_into_masked_name(d, tmp):
    """mkdir d; mv d .aws in the jail, then the host fills .aws: the watcher
    once kept the old name and the new secret was readable through run."""
    ws = make_ws(tmp, "renamemask", '[sandbox]\nenabled = true\nmask = ["**/.aws/**"]\n')
    c = d.conn()
    r = term(c, ws, "mkdir d && echo made")
    check(r["stdout"] == "made\n", r)
    # The daemon watches d now; the rename keeps that watch (same inode).
    r = term(c, ws, "mv d .aws && echo moved")
    check(r.get("stdout") == "moved\n" or r["error"]["code"] == "worker_recycled", r)
    check(os.path.isdir(os.path.join(ws, ".aws")), "the rename did not happen")
    host_write(os.path.join(ws, ".aws/credentials"), "AWS=renamed\n")
    eventually_masked(c, ws, "cat .aws/credentials 2>/dev/null; true", "AWS=")
    r = c.call({"tool": "file_read", "workspace": ws, "path": ".aws/credentials"})
    check(r["error"]["code"] == "denied", r)
    c.close()


def t_masks_under_other_roots(d, tmp):
    """The file tools re-checked masks only under the workspace root: a key
    created later under another listed root was readable through file_read."""
    other = make_ws(tmp, "otherroot", None, {"lib.txt": "data\n"})
    ws = make_ws(tmp, "rootsmask", '[sandbox]\nenabled = true\nro_paths = ["%s"]\nmask = ["**/*.pem"]\n' % other)
    c = d.conn()
    r = c.call({"tool": "file_read", "workspace": ws, "path": os.path.join(other, "lib.txt")})
    check(r["ok"] and r["content"] == "data\n", r)
    host_write(os.path.join(other, "sub/new.pem"), "PEM=later\n")
    r = c.call({"tool": "file_read", "workspace": ws, "path": os.path.join(other, "sub/new.pem")})
    check(not r["ok"] and r["error"]["code"] == "denied" and "masked" in r["error"]["message"], r)
    eventually_masked(c, ws, "cat %s 2>/dev/null; true" % os.path.join(other, "sub/new.pem"), "PEM=")
    c.close()


def t_watch_limit_is_reported(d, tmp):
    """Past the old watch limit of 4096 directories (a normal node_modules
    reaches it) new secrets were readable with only a daemon log line; then
    every result said so and lockdown refused. Now the tree is watched
    whole (root: fanotify; an ordinary user: inotify within half of
    fs.inotify.max_user_watches, test_mask_scale.py): no note, lockdown
    serves."""
    files = {"node_modules/p%04d/index.js" % i: "" for i in range(4200)}
    ws = make_ws(tmp, "manydirs", SANDBOX, files)
    c = d.conn()
    r = term(c, ws, "true")
    check(r["ok"] and not any("masks over time" in x for x in r["sandbox"]["degraded"]), r)
    lock = make_ws(tmp, "manydirs-lock", SANDBOX + "lockdown = true\n", files)
    r = term(c, lock, "echo ran")
    check(r["ok"] and r["stdout"] == "ran\n", r)
    c.close()


TESTS = [
    t_fifo_config_does_not_block,
    t_socket_and_device_config,
    t_subdirectory_runs_in_parent_jail,
    t_check_says_which_file_governs,
    t_workspace_path_swapped_between_calls,
    t_loosening_waits_for_approval,
    t_tightening_applies_at_once,
    t_sandbox_removed_is_pending,
    t_first_seen_applies_at_once,
    t_inplace_rewrite_has_no_window,
    t_nested_config_needs_approval,
    t_embedded_mode_approval,
    t_store_refused_as_listed_path,
    t_result_describes_the_serving_worker,
    t_host_save_keeps_protection,
    t_git_appearing_later_is_protected,
    t_root_replaced_from_above,
    t_git_replaced_whole_then_saved,
    t_host_mount_over_protected_path,
    t_host_git_stays_quiet,
    t_recycle_window,
    t_embedded_action_ends_on_host_save,
    t_running_command_watched_without_inotify,
    t_placeholder_where_the_jail_cannot_write,
    t_git_state_writable_control_sealed,
    t_git_init_refused_by_default,
    t_protect_globs,
    t_git_init_in_jail,
    t_git_init_without_host_git,
    t_host_run_files_reported,
    t_rename_into_masked_name,
    t_masks_under_other_roots,
    t_watch_limit_is_reported,
]


def start_daemon(tmp, name="d"):
    """A daemon with its own approved-policy store."""
    state = os.path.join(tmp, name + "-state")
    d = Daemon(tmp, name, extra=("--state-dir", state))
    d.state = state
    return d


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip("integrity", "%s or %s not built" % (DAEMON, CLI))
        sys.exit(tap.finish())
    if not shutil.which("bwrap"):
        tap.skip("integrity", "bwrap not installed")
        sys.exit(tap.finish())
    only = set(sys.argv[1:])
    tests = [t for t in TESTS if not only or t.__name__ in only]
    tmp = tempfile.mkdtemp(prefix="vs-integrity-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    d = start_daemon(tmp)
    try:
        for n, t in enumerate(tests, 1):
            tap.case(t, d, tmp)
            if d.p.poll() is not None:
                tap.ok("%s: the daemon survives it" % t.__name__, False, "log tail:\n" + d.log_text()[-3000:])
                d = start_daemon(tmp, "d%d" % n)
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
