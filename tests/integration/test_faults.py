#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Faults that must not lose data, lie, or open the sandbox (issue 26):
restarts, full disks, leftovers. Each case performs the fault against a
real daemon. TAP; a case that cannot run here says SKIP."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, DAEMON, Daemon, Skip, Tap, needs_root, check, chown_tree, make_ws, run_cases  # noqa: E402

SANDBOX = '[sandbox]\nmask = [".env"]\n'


def daemon(tmp, name, state):
    return Daemon(tmp, name, extra=("--state-dir", state))


def t_process_ids_not_reused(tmp):
    """Background-process ids restarted at 1 with the daemon: an old id read
    and killed an unrelated new process. Ids differ across lives, so does
    status's boot_id."""
    state = os.path.join(tmp, "ids-state")
    ws = make_ws(tmp, "ids", SANDBOX)
    d = daemon(tmp, "ids1", state)
    try:
        r = d.call({"tool": "process_start", "workspace": ws, "command": "sleep 60"})
        check(r.get("ok"), r)
        old = r["process"]
        boot1 = d.status()["daemon"]["boot_id"]
    finally:
        d.stop()
    d = Daemon(tmp, "ids1", extra=("--state-dir", state))
    try:
        r = d.call({"tool": "process_start", "workspace": ws, "command": "sleep 60"})
        check(r.get("ok"), r)
        new = r["process"]
        check(new != old, "the restarted daemon reused process id %s" % old)
        r = d.call({"tool": "process_signal", "workspace": ws, "process": old, "signal": "KILL"})
        check(not r.get("ok") and r["error"]["code"] == "not_found", r)
        r = d.call({"tool": "process_list", "workspace": ws})
        check(any(p["process"] == new and p["running"] for p in r["processes"]), r)
        boot2 = d.status()["daemon"]["boot_id"]
        check(boot1 != boot2 and len(boot2) == 32, (boot1, boot2))
        check(d.status()["daemon"]["instance"], "instance missing")
    finally:
        d.stop()



def fill(fs):
    """Fills the file system at fs to the last byte."""
    with open(os.path.join(fs, "filler"), "wb", buffering=0) as f:
        for size in (4096, 64, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass


def audit_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    check(lines[-1] == b"", "the audit log ends in a torn record: %r" % lines[-1][-200:])
    out = []
    for line in lines[:-1]:
        try:
            out.append(json.loads(line))
        except ValueError:
            raise AssertionError("a torn or fused audit record: %r" % line[:300])
    return out


def t_audit_on_a_full_disk(tmp):
    """Records on a full file system are whole or absent, the loss is
    counted and shown (status, every result's degraded), and
    --audit-required refuses sandboxed calls while it lasts."""
    if os.geteuid() != 0:
        needs_root("a small file system of its own (tmpfs) needs root")
    fs = os.path.join(tmp, "auditfs")
    os.makedirs(fs)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", fs], check=True)
    try:
        log = os.path.join(fs, "audit.log")
        ws = make_ws(tmp, "audited", SANDBOX)
        d = Daemon(tmp, "aud1", extra=("--state-dir", os.path.join(tmp, "aud-state"), "--audit-log", log), audit=False)
        try:
            c = d.conn()
            check(c.call({"tool": "terminal", "workspace": ws, "command": "true"})["ok"], "warm")
            fill(fs)
            results = [c.call({"tool": "terminal", "workspace": ws, "command": "echo x%d" % i}) for i in range(40)]
            check(all(r.get("ok") for r in results), [r for r in results if not r.get("ok")][:1])
            recs = audit_lines(log)
            st = d.status()["daemon"]
            lost = 41 - len(recs)
            check(lost > 0, "nothing was lost on a full disk? %d records" % len(recs))
            check(st["audit_lost"] == lost and st["audit_error"], st)
            check(any("audit" in x for x in results[-1]["sandbox"]["degraded"]), results[-1])
            os.unlink(os.path.join(fs, "filler"))
            r = c.call({"tool": "terminal", "workspace": ws, "command": "echo back"})
            check(r.get("ok") and not any("audit" in x for x in r["sandbox"]["degraded"]), r)
            check(audit_lines(log)[-1]["tool"] == "terminal" and d.status()["daemon"]["audit_error"] is None,
                  "records did not resume")
            c.close()
        finally:
            d.stop()
        os.unlink(log)
        d = Daemon(tmp, "aud2", extra=("--state-dir", os.path.join(tmp, "aud-state"), "--audit-log", log,
                                       "--audit-required"), audit=False)
        try:
            c = d.conn()
            check(c.call({"tool": "terminal", "workspace": ws, "command": "true"})["ok"], "warm")
            fill(fs)
            # Until a record fails (the log's last page holds a few more).
            failed = False
            for _ in range(40):
                r = c.call({"tool": "terminal", "workspace": ws, "command": "echo a-long-enough-line-to-overflow-the-page"})
                if any("audit" in x for x in r["sandbox"]["degraded"]):
                    failed = True
                    break
            check(failed, "no record failed on a full disk")
            marker = os.path.join(ws, "ran")
            r = c.call({"tool": "terminal", "workspace": ws, "command": "touch ran"})
            check(not r.get("ok") and r["error"]["code"] == "sandbox_unavailable" and "audit" in r["error"]["message"], r)
            check(not os.path.exists(marker), "the command ran while its record could not be written")
            os.unlink(os.path.join(fs, "filler"))
            ok = False
            for _ in range(3):
                r = c.call({"tool": "terminal", "workspace": ws, "command": "touch ran"})
                if r.get("ok"):
                    ok = True
                    break
            check(ok and os.path.exists(marker), "calls did not resume once the log could be written: %s" % r)
            audit_lines(log)
            c.close()
        finally:
            d.stop()
    finally:
        subprocess.run(["umount", fs])


def t_runtime_dir_option(tmp):
    """--runtime-dir moves the daemon's runtime directory (several
    instances and test runs need not share /run/vectora-sandbox); it is
    checked like the default and refused as a listed path."""
    rt = os.path.join(tmp, "rt-own")
    ws = make_ws(tmp, "rt-ws", SANDBOX)
    bad = make_ws(tmp, "rt-bad", '[sandbox]\nro_paths = ["%s"]\n' % rt)
    d = Daemon(tmp, "rt", extra=("--state-dir", os.path.join(tmp, "rt-state"), "--runtime-dir", rt))
    try:
        r = d.call({"tool": "terminal", "workspace": ws, "command": "echo hi"})
        check(r.get("ok") and r["stdout"] == "hi\n", r)
        check(os.listdir(rt), "nothing of the daemon's in %s" % rt)
        r = d.call({"tool": "terminal", "workspace": bad, "command": "ls %s" % rt})
        check(not r.get("ok") and r["error"]["code"] == "config_invalid", r)
    finally:
        d.stop()
    # A daemon on the default runtime directory starting meanwhile must not
    # take this one's jails for a dead instance's (its lock is where every
    # daemon of the uid looks, whatever --runtime-dir says).
    d = Daemon(tmp, "rt", extra=("--state-dir", os.path.join(tmp, "rt-state"), "--runtime-dir", rt))
    try:
        r = d.call({"tool": "process_start", "workspace": ws, "command": "sleep 60"})
        check(r.get("ok"), r)
        pid = r["process"]
        other = Daemon(tmp, "rt-other", extra=("--state-dir", os.path.join(tmp, "rt-state2")))
        try:
            check(other.call({"tool": "terminal", "workspace": ws, "command": "true"}).get("ok"), "other daemon")
        finally:
            other.stop()
        time.sleep(0.3)
        r = d.call({"tool": "process_list", "workspace": ws})
        check(any(p["process"] == pid and p["running"] for p in r["processes"]),
              "another daemon's start ended this one's jail: %s" % r)
    finally:
        d.stop()
    # Another user's (or a world-writable) directory is refused at start.
    loose = os.path.join(tmp, "rt-loose")
    os.makedirs(loose)
    os.chmod(loose, 0o777)
    p = subprocess.run([DAEMON, "--foreground", "--socket", os.path.join(tmp, "rt2.sock"), "--runtime-dir", loose],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode != 0 and "writable only by it" in p.stderr, p.stderr)


def t_daemon_lost_is_not_nothing_ran(tmp):
    """A daemon stopped or killed while the command runs: the CLI says the
    command may have run (daemon_lost, exit 255), never 125 ("nothing
    ran"); one that was never there stays 125."""
    import signal
    ws = make_ws(tmp, "lost", SANDBOX)
    for how in ("kill", "term"):
        d = Daemon(tmp, "lost-" + how, extra=("--state-dir", os.path.join(tmp, "lost-state")))
        marker = os.path.join(ws, "ran-" + how)
        env = dict(os.environ, VECTORA_SANDBOX_SOCKET=d.sock)
        p = subprocess.Popen([CLI, "run", "-w", ws, "touch ran-%s; sleep 20" % how], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            if os.path.exists(marker):
                break
            time.sleep(0.02)
        check(os.path.exists(marker), "the command did not start")
        if how == "kill":
            d.p.send_signal(signal.SIGKILL)
            d.p.wait()
            d.stop(check_exit=False)
        else:
            d.stop()
        out, err = p.communicate(timeout=30)
        check(p.returncode == 255 and ("daemon_lost" in err or "interrupted" in err) and "may have run" in err,
              "%s: exit %d: %s" % (how, p.returncode, err))
    p = subprocess.run([CLI, "run", "-w", ws, "touch never"], env=dict(os.environ, VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "none.sock")),
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 125 and not os.path.exists(os.path.join(ws, "never")), (p.returncode, p.stderr))


# Takes every inotify watch it can: 32k directories in the jail's own /tmp,
# each watched in as many instances as the kernel gives, then holds them.
HOG = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("/tmp/hog", exist_ok=True)
dirs = []
for i in range(32768):
    d = "/tmp/hog/%d" % i
    os.mkdir(d)
    dirs.append(d.encode())
fds, watches = [], 0
done = False
while not done:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
    for d in dirs:
        if libc.inotify_add_watch(fd, d, 0x100) < 0:
            done = ctypes.get_errno() == 28  # ENOSPC: no watch left
            break
        watches += 1
print("watches=%d instances=%d" % (watches, len(fds)), flush=True)
time.sleep(120)
"""


def t_jail_cannot_starve_the_daemons_watches(tmp):
    """A daemon run as an ordinary user shares the user's inotify budget
    with its jails: a jail that took every watch switched masks over time
    off silently. A jail now has a quarter of the budget at most, and the
    daemon's watch keeps working."""
    if os.geteuid() != 0:
        needs_root("needs root to run the daemon as another ordinary user (setpriv)")
    uid = 65534
    home = os.path.join(tmp, "starve-home")
    xdg = os.path.join(tmp, "starve-xdg")
    for dd in (home, xdg):
        os.makedirs(dd, mode=0o700)
        os.chown(dd, uid, uid)
    ws = make_ws(tmp, "starve", SANDBOX)
    env = dict(os.environ, HOME=home, XDG_RUNTIME_DIR=xdg)
    pre = ("setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--")
    logdir = os.path.join(tmp, "starve-log")
    os.makedirs(logdir)
    os.chown(logdir, uid, uid)
    d = Daemon(logdir, "d", extra=("--state-dir", os.path.join(home, "state")), prefix=pre, env=env)
    cenv = dict(env, VECTORA_SANDBOX_SOCKET=d.sock)

    def cli_as(*args):
        """The daemon serves its own uid only: the CLI as that user."""
        return subprocess.run(list(pre) + [CLI, *args], capture_output=True, text=True, env=cenv, timeout=120)
    try:
        p = cli_as("start", "-w", ws, "exec python3 -c '%s'" % HOG.replace("'", "'\\''"))
        check(p.returncode == 0 and p.stdout.strip(), p.stdout + p.stderr)
        pid = p.stdout.split()[-1]
        out = ""
        for _ in range(300):
            out = cli_as("logs", "-w", ws, pid).stdout
            if "watches=" in out:
                break
            time.sleep(0.1)
        check("watches=" in out, "the hog did not report: %s" % out)
        with open("/proc/sys/fs/inotify/max_user_watches") as f:
            limit = int(f.read())
        took = int(out.split("watches=")[1].split()[0])
        check(took <= limit // 4 + 64, "the jail took %d of the user's %d watches" % (took, limit))
        # The daemon still watches: a new directory with a secret in it.
        os.makedirs(os.path.join(ws, "later"))
        with open(os.path.join(ws, "later", ".env"), "w") as f:
            f.write("LEAK=1\n")
        chown_tree(ws)
        seen = None
        for _ in range(100):
            t = cli_as("run", "-w", ws, "cat later/.env; echo end")
            if t.returncode == 0:
                seen = "LEAK" in t.stdout
                if not seen:
                    break
            time.sleep(0.05)
        check(seen is False, "the secret made after the jail took the watches stayed readable: %s" % (t.stdout + t.stderr))
    finally:
        d.stop()


def t_full_spool_fails_one_reply(tmp):
    """Replies a client has not read yet go to a spool under /var/tmp; a
    full spool dropped the whole connection (a truncated message, EOF).
    Now the reply that could not be spooled gets an error of its own and
    the connection goes on."""
    if os.geteuid() != 0:
        needs_root("a small /var/tmp of the daemon's own (a mount namespace) needs root")
    base = tempfile.mkdtemp(prefix="vs-spool-", dir="/tmp")  # not under the /var/tmp replaced
    os.chmod(base, 0o755)
    try:
        size = 20 << 20
        ws = make_ws(base, "spool", SANDBOX, {"big%d.bin" % i: os.urandom(1024) * (size // 1024) for i in range(3)})
        pre = ("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
               'mount -t tmpfs -o size=1m tmpfs /var/tmp && exec "$@"', "sh")
        d = Daemon(base, "spool", extra=("--state-dir", os.path.join(base, "state")), prefix=pre)
        try:
            c = d.conn()
            check(c.call({"tool": "terminal", "workspace": ws, "command": "true"})["ok"], "warm")
            # Three big replies asked for before any is read: past 32 MiB
            # in memory the later ones must be spooled, and cannot be.
            for i in range(3):
                c.send({"id": 100 + i, "tool": "file_read", "workspace": ws, "path": "big%d.bin" % i, "binary": True,
                        "limit": size})
            time.sleep(3)
            got = {}
            for _ in range(3):
                m = c.recv()
                got[m["id"]] = m
            ok = [i for i in got if got[i].get("ok") and len(got[i].get("_raw", b"")) == size]
            failed = [got[i] for i in got if not got[i].get("ok")]
            check(len(ok) >= 1 and failed, "ok %s, failed %s" % (ok, [f.get("error") for f in failed]))
            check(all(f["error"]["code"] == "io" and "spool" in f["error"]["message"] for f in failed),
                  [f["error"] for f in failed])
            r = c.call({"tool": "terminal", "workspace": ws, "command": "echo still"})
            check(r.get("ok") and r["stdout"] == "still\n", "the connection did not go on: %s" % r)
            c.close()
        finally:
            d.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def t_deleted_config_is_not_recreated(tmp):
    """Deleting vectora.toml on the host made the next call recreate it, as
    a 0-byte read-only file in the user's tree (the protected path's mount
    point). A deleted config is a pending loosening, nothing more."""
    ws = make_ws(tmp, "deleted-cfg", SANDBOX, {".env": "SECRET=1\n"})
    d = daemon(tmp, "delcfg", os.path.join(tmp, "delcfg-state"))
    try:
        c = d.conn()
        check(c.call({"tool": "terminal", "workspace": ws, "command": "true"})["ok"], "warm")
        os.unlink(os.path.join(ws, "vectora.toml"))
        r = c.call({"tool": "terminal", "workspace": ws, "command": "cat .env; ls -a; echo end"})
        check(r.get("policy_pending") and "SECRET" not in json.dumps(r), r)
        check(not os.path.lexists(os.path.join(ws, "vectora.toml")), "vectora.toml was made again on the host")
        c.close()
    finally:
        d.stop()
    p = subprocess.run([CLI, "--no-daemon", "run", "-w", ws, "true"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, VECTORA_SANDBOX_STATE_DIR=os.path.join(tmp, "delcfg-state")))
    check(not os.path.lexists(os.path.join(ws, "vectora.toml")), "embedded: vectora.toml was made again: %s" % p.stderr)


def t_full_state_dir_recovers_on_the_next_call(tmp):
    """A full state directory refuses a first-seen workspace (its approval
    cannot be recorded); once space returns the next call is served (it
    stayed refused until allow or an edit of vectora.toml)."""
    if os.geteuid() != 0:
        needs_root("a small state directory of its own (tmpfs) needs root")
    state = os.path.join(tmp, "fullstate")
    os.makedirs(state)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", state], check=True)
    try:
        os.chmod(state, 0o700)
        d = daemon(tmp, "fullstate", state)
        try:
            c = d.conn()
            fill(state)
            ws = make_ws(tmp, "fullstate-ws", SANDBOX)
            r = c.call({"tool": "terminal", "workspace": ws, "command": "echo hi"})
            check(not r.get("ok") and "state directory" in r["error"]["message"], r)
            os.unlink(os.path.join(state, "filler"))
            r = c.call({"tool": "terminal", "workspace": ws, "command": "echo hi"})
            check(r.get("ok") and r["stdout"] == "hi\n" and r["sandboxed"], "still refused after the space came back: %s" % r)
            c.close()
        finally:
            d.stop()
    finally:
        subprocess.run(["umount", state])


def t_two_daemons_share_one_state_dir(tmp):
    """Two daemons on one state directory share it: what one records the
    other sees (a loosening pending at one is pending at the other, an
    allow through one applies at the other), nothing is torn."""
    state = os.path.join(tmp, "shared-state")
    ws = make_ws(tmp, "shared-ws", SANDBOX, {".env": "SECRET=1\n"})
    a = daemon(tmp, "share-a", state)
    b = daemon(tmp, "share-b", state)
    try:
        ra = a.call({"tool": "terminal", "workspace": ws, "command": "cat .env; echo a"})
        rb = b.call({"tool": "terminal", "workspace": ws, "command": "cat .env; echo b"})
        check(ra.get("ok") and rb.get("ok") and "SECRET" not in ra["stdout"] + rb["stdout"], (ra, rb))
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nmask = []\n")
        for d in (a, b):
            r = d.call({"tool": "terminal", "workspace": ws, "command": "cat .env; echo x"})
            check(r.get("policy_pending") and "SECRET" not in r["stdout"], r)
        r = a.call({"tool": "policy_allow", "workspace": ws})
        check(r.get("ok"), r)
        r = b.call({"tool": "terminal", "workspace": ws, "command": "cat .env"})
        check(r.get("ok") and "SECRET" in r["stdout"] and not r.get("policy_pending"),
              "the allow through one daemon did not apply at the other: %s" % r)
        # Many first sights at once through both: every entry whole.
        wss = [make_ws(tmp, "shared-many%d" % i, SANDBOX) for i in range(20)]
        ca, cb = a.conn(), b.conn()
        for i, w in enumerate(wss):
            ca.send({"id": i, "tool": "terminal", "workspace": w, "command": "true"})
            cb.send({"id": i, "tool": "terminal", "workspace": w, "command": "true"})
        for c in (ca, cb):
            for _ in wss:
                m = c.recv()
                check(m.get("ok"), m)
        for n in os.listdir(state):
            if n.endswith(".toml"):
                with open(os.path.join(state, n)) as f:
                    check(f.read() in (SANDBOX, "[sandbox]\nmask = []\n"), n)
        check(not [n for n in os.listdir(state) if ".tmp." in n], os.listdir(state))
        ca.close()
        cb.close()
    finally:
        # Both, whatever the first one's stop says (a failed check must not
        # leave the other daemon running).
        try:
            a.stop()
        finally:
            b.stop()


def pids_running(marker):
    """Processes whose command line holds marker."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if marker.encode() in f.read():
                        out.append(int(pid))
            except OSError:
                pass
    return out


def t_unsandboxed_processes_end_with_the_daemon(tmp):
    """Unsandboxed workspaces' commands run on the host (as root under a
    root daemon); their children outlived the daemon, by a clean stop or
    a SIGKILL. A daemon that ends ends what it started, sandboxed or not."""
    import signal
    if os.geteuid() != 0:
        needs_root("the daemon's cgroups need root")
    ws = make_ws(tmp, "plain-host")  # no vectora.toml: unsandboxed
    for n, how in enumerate(("term", "kill")):
        # A sleep of a length of its own is the marker (dash has no exec -a).
        marker = "30%d.%d" % (n, os.getpid())
        d = daemon(tmp, "host-" + how, os.path.join(tmp, "host-state"))
        c = None
        try:
            c = d.conn()
            r = c.call({"tool": "terminal", "workspace": ws,
                        "command": "setsid sleep %s1 </dev/null >/dev/null 2>&1 & echo started" % marker})
            check(r.get("ok") and r["sandboxed"] is False, r)
            c.send({"id": 77, "tool": "terminal", "workspace": ws, "command": "sleep %s2" % marker})
            for _ in range(100):
                if len(pids_running("sleep\0" + marker)) >= 2:
                    break
                time.sleep(0.05)
            check(len(pids_running("sleep\0" + marker)) >= 2, "the commands did not start")
        finally:
            if how == "term" or d.p.poll() is not None:
                d.stop()
            else:
                d.p.send_signal(signal.SIGKILL)
                d.p.wait()
                d.stop(check_exit=False)
                # The next daemon's start sweeps the dead instance's groups.
                d2 = daemon(tmp, "host-next", os.path.join(tmp, "host-state"))
                d2.stop()
            if c:
                c.close()
        left = []
        for _ in range(60):
            left = pids_running("sleep\0" + marker)
            if not left:
                break
            time.sleep(0.05)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        check(not left, "%s: the unsandboxed commands outlived the daemon: %s" % (how, left))


def t_stale_start_is_made_again(tmp):
    """A jail start racing a host that makes and removes a masked file
    failed the call (sandbox_unavailable, 5 in a soak). A failed start is
    made again from a fresh plan, twice at most, then the call fails."""
    fake = os.path.join(tmp, "fake-bwrap")
    os.makedirs(fake)
    os.chmod(fake, 0o777)  # bwrap runs as the workspace's owner: its counter is written as that user
    real = shutil.which("bwrap")
    for fails in (2, 100):
        counter = os.path.join(fake, "count-%d" % fails)
        with open(os.path.join(fake, "bwrap"), "w") as f:
            f.write("#!/bin/sh\n"
                    "n=$(cat %s 2>/dev/null || echo 0); echo $((n+1)) > %s\n"
                    "if [ \"$n\" -lt %d ]; then\n"
                    "  echo \"bwrap: Can't create file at /ws/.env: No such file or directory\" >&2; exit 1\n"
                    "fi\n"
                    "exec %s \"$@\"\n" % (counter, counter, fails, real))
        os.chmod(os.path.join(fake, "bwrap"), 0o755)
        ws = make_ws(tmp, "stale-%d" % fails, SANDBOX)
        env = dict(os.environ, PATH=fake + ":" + os.environ.get("PATH", ""))
        d = Daemon(tmp, "stale-%d" % fails, extra=("--state-dir", os.path.join(tmp, "stale-state")), env=env)
        try:
            r = d.call({"tool": "terminal", "workspace": ws, "command": "echo hi"})
        finally:
            d.stop()
        with open(counter) as f:
            starts = int(f.read())
        if fails == 2:
            check(r.get("ok") and r["stdout"] == "hi\n" and starts == 3, "after two failed starts: %s (%d starts)" % (r, starts))
        else:
            check(not r.get("ok") and r["error"]["code"] == "sandbox_unavailable" and starts == 3,
                  "a start that keeps failing: %s (%d starts)" % (r, starts))


def t_watch_failure_is_reported(tmp):
    """The user's other programs spend every inotify watch: a directory the
    daemon cannot watch is a hole, said in every result's degraded and in
    status (watching_masks false), and refused under lockdown (it was
    ignored: degraded empty, watching_masks true, lockdown served)."""
    if os.geteuid() != 0:
        needs_root("needs root to run the daemon and a watch hog as another ordinary user (setpriv)")
    uid = 65534
    home = os.path.join(tmp, "wf-home")
    xdg = os.path.join(tmp, "wf-xdg")
    hogdir = os.path.join(tmp, "wf-hog")
    for dd in (home, xdg, hogdir):
        os.makedirs(dd, mode=0o700)
        os.chown(dd, uid, uid)
    ws = make_ws(tmp, "wf", SANDBOX)
    lock = make_ws(tmp, "wf-lock", SANDBOX + "lockdown = true\n")
    env = dict(os.environ, HOME=home, XDG_RUNTIME_DIR=xdg)
    pre = ("setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--")
    logdir = os.path.join(tmp, "wf-log")
    os.makedirs(logdir)
    os.chown(logdir, uid, uid)
    d = Daemon(logdir, "d", extra=("--state-dir", os.path.join(home, "state")), prefix=pre, env=env)
    cenv = dict(env, VECTORA_SANDBOX_SOCKET=d.sock)

    def cli_as(*args):
        return subprocess.run(list(pre) + [CLI, *args], capture_output=True, text=True, env=cenv, timeout=120)
    hog = None
    try:
        for w in (ws, lock):
            p = cli_as("run", "-w", w, "true")
            check(p.returncode == 0, p.stderr)
        # A program of the same user, on the host, takes every watch left.
        hog = subprocess.Popen(list(pre) + [sys.executable, "-c", HOG.replace("/tmp/hog", hogdir)],
                               stdout=subprocess.PIPE, text=True, env=env)
        line = hog.stdout.readline()
        check("watches=" in line, "the hog did not report: %r" % line)
        for w in (ws, lock):
            os.makedirs(os.path.join(w, "later", "deeper"))
            chown_tree(w)
        time.sleep(0.3)
        p = cli_as("run", "--json", "-w", ws, "true")
        r = json.loads(p.stdout)
        check(any("could not be watched" in x for x in r["sandbox"]["degraded"]), r)
        st = json.loads(cli_as("status", "--json").stdout)
        mine = [w for w in st["workspaces"] if w["path"] == os.path.realpath(ws)]
        check(mine and mine[0]["watching_masks"] is False, mine)
        p = cli_as("run", "-w", lock, "echo ran")
        check(p.returncode == 125 and "could not be watched" in p.stderr and "ran" not in p.stdout, p.stdout + p.stderr)
    finally:
        if hog:
            hog.kill()
            hog.wait()
        d.stop()

def t_read_only_proc_sys(tmp):
    """In a container whose /proc/sys is mounted read-only (systemd-nspawn,
    docker), an ordinary user's jail cannot start: the kernel refuses a
    user namespace's own /proc there (bwrap's too). Found by running the
    units under a real systemd in systemd-nspawn: the refusal said only
    "mapping the caller's uid and gid ...: Read-only file system". It is
    refused (nothing runs) with the reason and what to do."""
    if os.geteuid() != 0:
        needs_root("a read-only /proc/sys of its own needs a mount namespace (root)")
    uid = 65534
    ws = make_ws(tmp, "ro-proc-sys", SANDBOX, {".env": "SECRET=1\n"})
    state = os.path.join(tmp, "ro-proc-sys-state")
    os.makedirs(state)
    os.chown(state, uid, uid)
    env = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    env.update(HOME=state, XDG_RUNTIME_DIR="/nonexistent-vs-test", VECTORA_SANDBOX_STATE_DIR=state)
    script = ('mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && '
              'exec setpriv --reuid=%d --regid=%d --clear-groups -- "$@"' % (uid, uid))
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh",
                        CLI, "--no-daemon", "run", "--json", "-w", ws, "cat .env; echo ran"],
                       capture_output=True, text=True, env=env, timeout=120)
    check(p.returncode == 125, "not refused (125: nothing ran): %s" % (p.stdout + p.stderr))
    check("mounts over parts of /proc" in p.stdout + p.stderr and "run vectora-sandboxd as root" in p.stdout + p.stderr,
          "the refusal does not say why: %s" % (p.stdout + p.stderr))


TESTS = [t_process_ids_not_reused, t_read_only_proc_sys, t_audit_on_a_full_disk, t_runtime_dir_option, t_daemon_lost_is_not_nothing_ran,
         t_jail_cannot_starve_the_daemons_watches, t_full_spool_fails_one_reply,
         t_deleted_config_is_not_recreated, t_full_state_dir_recovers_on_the_next_call,
         t_two_daemons_share_one_state_dir, t_unsandboxed_processes_end_with_the_daemon,
         t_stale_start_is_made_again, t_watch_failure_is_reported]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip("faults", "%s or %s not built" % (DAEMON, CLI))
        sys.exit(tap.finish())
    if not shutil.which("bwrap"):
        tap.skip("faults", "bwrap not installed")
        sys.exit(tap.finish())
    sys.exit(run_cases(tap, TESTS, "vs-faults-"))


if __name__ == "__main__":
    main()
