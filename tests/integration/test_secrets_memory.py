#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A secret's value is in the proxy's memory (it puts it in requests),
never within the jail's reach (issue 31, "the jail cannot find the value
... the proxy's memory, core dumps"). For real: a daemon, a bwrap jail, an
HTTPS server on 127.0.0.1 with a test CA the daemon's proxy trusts; the
proxy has put the value in a request before each check.

  - Root reads the value in the proxy's memory (/proc/PID/mem): what the
    refusals below keep is really there.
  - From inside the jail: no process of the jail's pid namespace is the
    proxy; its host pid names nothing there (/proc/PID/mem and environ,
    ptrace, kill: ENOENT or ESRCH).
  - As the jail's uid on the host (nobody under a root daemon, whose proxy
    runs as vectora-sandbox; the user itself under a user daemon, whose
    proxy has the same uid): /proc/PID/mem and environ are refused, and
    ptrace too: the proxy is not dumpable (prctl PR_SET_DUMPABLE 0).
  - A crash: SIGQUIT (a core-dumping signal) to the proxy with RLIMIT_CORE unlimited and a
    working directory it could write (core_pattern "core" writes there)
    leaves no core file; a dumpable process of the same uid, limit and
    directory holding the value leaves one with the value in it (the
    check sees a core when there is one). The kernel writes none for a
    process that is not dumpable while fs.suid_dumpable is 0. (Built
    without PR_SET_DUMPABLE the proxy still left none here, root or user:
    under a root daemon the kernel makes it not dumpable as it changes
    uid; under a user daemon the core file would be a write its Landlock
    domain refuses, as far as the project can tell. The memory checks as
    the user do fail without it.)

Root and, through tests/helpers/as-user, an ordinary user. TAP."""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../lib"))
import vtest  # noqa: E402
from vtest import OWNER, ROOT, Tap, check, make_ws  # noqa: E402

from vdaemon import proxy_of, wait_until  # noqa: E402
from vsecrets import CURL, Recorder, https_server, make_pki, out_of, run_main, set_secret, term  # noqa: E402

T = Tap()
# For the processes run as another uid (root's pyenv is not theirs to run).
PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable
VALUE = "ghp_MEMtoken_" + os.urandom(8).hex()

# What a process tries against a pid: its /proc files, ptrace, a signal 0.
# Prints JSON: the errno names (or what it got) and the processes it sees.
PROBE = r"""
import ctypes, errno, json, os, sys
pid = int(sys.argv[1])
out = {"uid": os.getuid(), "procs": {}}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                out["procs"][p] = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            out["procs"][p] = None
for name in ("mem", "environ"):
    try:
        with open("/proc/%d/%s" % (pid, name), "rb") as f:
            out[name] = "read %d bytes" % len(f.read(4096) if name == "environ" else f.read(0))
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
libc = ctypes.CDLL(None, use_errno=True)
for name, call in (("ptrace", lambda: libc.ptrace(16, pid, None, None)), ("kill", lambda: libc.kill(pid, 0))):
    r = call()
    out[name] = "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(out))
"""


class Setup:
    """A daemon (in directory cwd, RLIMIT_CORE unlimited: what its proxy
    inherits) whose CAs are the test CA, an HTTPS server on 127.0.0.1 for
    the secret TOK, a workspace using TOK; one injected request made."""

    def __init__(self, tmp, name, cwd):
        self.pki = make_pki(tmp)
        self.srv = https_server(self.pki("srv.crt"), self.pki("srv.key"))
        self.port = self.srv.server_address[1]
        state = os.path.join(tmp, name + "-state")
        os.makedirs(state, mode=0o700)
        self.d = vtest.Daemon(tmp, name=name, extra=["--state-dir", state],
                              env=dict(os.environ, SSL_CERT_FILE=self.pki("ca.crt")),
                              prefix=["sh", "-c", 'cd "$0" && ulimit -c unlimited && exec "$@"', cwd])
        try:
            set_secret(self.d, "TOK", ["127.0.0.1:%d" % self.port], VALUE)
            self.ws = make_ws(tmp, "ws-" + name, '[sandbox]\nnetwork = ["127.0.0.1:%d"]\nsecrets = ["TOK"]\n'
                              % self.port)
            self.inject()
        except BaseException:
            self.stop()
            raise

    def inject(self):
        Recorder.seen.clear()
        r = term(self.d, self.ws, CURL + '-H "Authorization: Bearer $TOK" https://127.0.0.1:%d/mem' % self.port)
        check("seen" in out_of(r) and Recorder.seen and "Bearer " + VALUE in Recorder.seen[-1][2], (r, Recorder.seen))

    def stop(self):
        self.d.stop(check_exit=False)
        self.srv.shutdown()


def in_memory(pid, needle):
    """Whether needle is in the process's writable private memory (root)."""
    with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps:
            f = line.split()
            if not f[1].startswith("rw"):
                continue
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if hi - lo > 1 << 30:
                continue  # a sanitizer's shadow, reserved, not the heap
            try:
                mem.seek(lo)
                if needle in mem.read(hi - lo):
                    return True
            except (OSError, OverflowError, ValueError):
                pass
    return False


def as_jail_uid():
    """subprocess arguments that run a command as the jail's uid."""
    return dict(user=OWNER.pw_uid, group=OWNER.pw_gid, extra_groups=[]) if ROOT else {}


def t_proxy_memory(tmp):
    """The value is in the proxy's memory (root reads it); from the jail
    the proxy is not there at all; as the jail's uid on the host its
    /proc/PID/mem and environ and ptrace are refused."""
    cwd = os.path.join(tmp, "mem-cwd")
    os.makedirs(cwd)
    s = Setup(tmp, "mem", cwd)
    try:
        p = proxy_of(s.d)
        pid = p["pid"]
        if ROOT:
            check(in_memory(pid, VALUE.encode()), "the value is not in the proxy's memory: the check below is void")
        else:
            T.note("(as a user the value in the proxy's memory is checked by the root run)")
        # From inside the jail.
        r = s.d.call({"tool": "terminal", "workspace": s.ws, "command": 'python3 -c "$P" %d' % pid,
                      "env": {"P": PROBE}, "timeout": 60})
        check(r.get("exit_code") == 0, r)
        jail = json.loads(r["stdout"])
        check(not [c for c in jail["procs"].values() if c and "vectora-sandbox-proxy" in c], jail["procs"])
        if str(pid) not in jail["procs"]:
            check(jail["mem"] == "ENOENT" and jail["environ"] == "ENOENT" and jail["kill"] == "ESRCH" and
                  jail["ptrace"] in ("ESRCH", "EPERM"), jail)
        T.note("in the jail (uid %d): pids %s; the proxy's pid %d: mem %s, environ %s, ptrace %s, kill %s" %
               (jail["uid"], sorted(int(x) for x in jail["procs"]), pid, jail["mem"], jail["environ"],
                jail["ptrace"], jail["kill"]))
        # On the host, as the jail's uid.
        h = subprocess.run([PYTHON, "-c", PROBE, str(pid)], capture_output=True, text=True, timeout=60,
                           **as_jail_uid())
        check(h.returncode == 0, h)
        host = json.loads(h.stdout)
        check(host["mem"] in ("EACCES", "EPERM") and host["environ"] in ("EACCES", "EPERM") and
              host["ptrace"] == "EPERM", host)
        st = os.stat("/proc/%d/environ" % pid)
        T.note("on the host as uid %d (the proxy's uid %d; its /proc/%d/environ owned by %d:%d, as for a process that is "
               "not dumpable): mem %s, environ %s, ptrace %s" % (host["uid"], p["uid"], pid, st.st_uid, st.st_gid,
                                                                 host["mem"], host["environ"], host["ptrace"]))
    finally:
        s.stop()


def t_core_dump(tmp):
    """SIGQUIT to the proxy (RLIMIT_CORE unlimited, a directory it can
    write, core_pattern "core"): no core file; a dumpable process of the
    same uid, limit and directory leaves one holding the value."""
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    with open("/proc/sys/fs/suid_dumpable") as f:
        suid_dumpable = f.read().strip()
    if pattern.startswith("|") or "/" in pattern:
        raise vtest.Skip("core_pattern is %r: cores go to a handler or another directory, not the process's own, "
                         "which this test looks at (the kernel's setting is the host's, not changed here)" % pattern)
    cwd = os.path.join(tmp, "core-cwd")
    os.makedirs(cwd)
    os.chmod(cwd, 0o1777)
    s = Setup(tmp, "core", cwd)
    try:
        p = proxy_of(s.d)
        pid = p["pid"]
        if ROOT:
            check(os.readlink("/proc/%d/cwd" % pid) == cwd, "the proxy works in %s" % os.readlink("/proc/%d/cwd" % pid))
        with open("/proc/%d/limits" % pid) as f:
            core_limit = [ln.split()[4] for ln in f if ln.startswith("Max core file size")][0]
        # The control: a dumpable process like the proxy (its uid, limit
        # and directory) with the value in its memory.
        uid = p["uid"]
        kw = dict(user=uid, group=uid, extra_groups=[]) if ROOT else {}
        c = subprocess.run([PYTHON, "-c", "import os, signal\nv = os.environ['V'] + '!'\n"
                            "os.kill(os.getpid(), signal.SIGSEGV)"], cwd=cwd, env={"V": VALUE}, capture_output=True,
                           timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (-1, -1)), **kw)
        cores = [f for f in os.listdir(cwd) if f.startswith("core")]
        if not cores:
            raise vtest.Skip("a dumpable process (rc %d) left no core in its directory here (core_pattern %r, "
                             "RLIMIT_CORE unlimited): no core to look for" % (c.returncode, pattern))
        with open(os.path.join(cwd, cores[0]), "rb") as f:
            check((VALUE + "!").encode() in f.read(), "the control's core holds no value")
        for f in cores:
            os.unlink(os.path.join(cwd, f))
        # The proxy, crashed.
        s.inject()
        # SIGQUIT: a signal that dumps core, which a sanitizer build does
        # not catch (its SIGSEGV handler reports and exits 1).
        os.kill(pid, signal.SIGQUIT)
        new = wait_until(lambda: (lambda x: x.get("running") and x["pid"] != pid and x)(s.d.status()["daemon"]["proxy"]),
                       "a new proxy")
        check(new.get("last_exit") == "signal %d" % signal.SIGQUIT, new)
        time.sleep(0.5)
        left = os.listdir(cwd)
        check(not left, "the proxy's crash left %s in its directory" % left)
        for what in (s.d.log_text(),):
            check(VALUE not in what, "the value is in the daemon's log")
        T.note("core_pattern %r, fs.suid_dumpable %s, the proxy's core limit %s: a dumpable process's core held "
               "the value; the proxy's SIGQUIT (%s) left nothing" % (pattern, suid_dumpable, core_limit,
                                                                     new["last_exit"]))
        # The restarted proxy serves the secret again.
        s.inject()
    finally:
        s.stop()


def main():
    run_main(T, 'secrets-memory', ("curl", "openssl", "python3"), [t_proxy_memory, t_core_dump])


if __name__ == "__main__":
    main()
