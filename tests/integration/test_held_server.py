#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A root daemon's server held in the kernel by a workspace owner's FUSE
file system, and let go by the root monitor's watch
(src/daemon/monitor/unstick.c; docs/threat-model.md, Known limits).

Run alone (meson's is_parallel): the watch ends every user's FUSE
connection with requests unanswered, another test's held mount too.
Runs as root (skipped otherwise, said). TAP."""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI, DAEMON, Tap, check, make_ws  # noqa: E402
from vdaemon import SANDBOX, monitor_of, term  # noqa: E402

T = Tap()


def start(tmp, name="d"):
    return vtest.Daemon(tmp, name=name)


def root_daemon():
    if os.geteuid() != 0:
        vtest.needs_root("a root daemon's monitor")


FUSE_HOLD = os.path.join(vtest.BUILD, "tests/helpers/vs-fuse-hold")


def t_held_directory_ended(tmp):
    """The owner of a workspace holds its directory (getdents64 into a
    buffer mapped from a file of a FUSE file system of their own user
    namespace, never answered) with a mkdir of theirs queued there: the
    daemon's lookup of a name not in the kernel's cache there waits in the
    kernel, uninterruptibly (attack review 8b, N8: every workspace's calls
    stopped for good, SIGKILL could not end the daemon, a new one could not
    start). The monitor sees the server's thread held and ends the user's
    FUSE connection: the call and another client's status are answered,
    the holder's read fails, status counts the connection ended."""
    root_daemon()
    if not os.access(FUSE_HOLD, os.X_OK):
        vtest.needs_root(FUSE_HOLD + " (not built)")
    d = start(tmp, "held")
    ws = make_ws(tmp, "ws-held", SANDBOX)
    st = os.stat(ws)
    if st.st_uid == 0:
        vtest.needs_root("a workspace owned by an ordinary user (tests/helpers/as-user's account)")
    # A FUSE device node of the test's own, open to all as a distribution's
    # /dev/fuse is (this host's may be 0600).
    dev = os.path.join(tmp, "fuse-dev")
    try:
        os.mknod(dev, 0o666 | 0o020000, os.makedev(10, 229))
    except OSError as e:
        vtest.needs_root("a FUSE device node (%s)" % e)
    os.chmod(dev, 0o666)
    mnt = os.path.join(tmp, "held-mnt")
    os.mkdir(mnt)
    os.chmod(mnt, 0o777)
    holder = subprocess.Popen([FUSE_HOLD, dev, mnt, ws, str(st.st_uid), str(st.st_gid)], stdout=subprocess.PIPE,
                              text=True)
    fs_pid = 0
    queued = None
    try:
        line = holder.stdout.readline().split()
        check(line[:1] == ["holding"], ("the holder could not hold", line, holder.poll()))
        fs_pid = int(line[1])
        time.sleep(0.3)
        # The owner's mkdir, queued behind the read.
        queued = subprocess.Popen(["setpriv", "--reuid=%d" % st.st_uid, "--regid=%d" % st.st_gid, "--clear-groups",
                                   "mkdir", os.path.join(ws, "queued")])
        time.sleep(0.3)
        check(queued.poll() is None, "the mkdir was not held")
        # Names out of the kernel's cache (the attacker renames them away).
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("2")
        t0 = time.monotonic()
        out = {}

        def call():
            try:
                c = d.conn()
                c.s.settimeout(40)
                out["r"] = term(c, ws, "echo up")
                c.close()
            except Exception as e:  # noqa: BLE001
                out["e"] = repr(e)
        th = threading.Thread(target=call, daemon=True)
        th.start()
        time.sleep(1.5)
        # Another client, meanwhile: the whole daemon waited before.
        c2 = d.conn()
        c2.s.settimeout(40)
        status = c2.call({"tool": "status"})
        c2.close()
        th.join(40)
        took = time.monotonic() - t0
        check(out.get("r", {}).get("ok") and out["r"].get("stdout") == "up\n", ("the held workspace's call", out))
        check(status.get("ok", True) and "daemon" in status, ("status", status))
        T.note("answered after %.1f s (the monitor acts on a thread held for 5 s)" % took)
        check(took < 30, "the call took %.1f s" % took)
        check(holder.wait(10) == 1, "the holder's read did not fail with its connection")
        check(queued.wait(10) == 0, "the queued mkdir did not end")
        check(monitor_of(d).get("fuse_connections_ended") == 1, ("status counts no connection ended", monitor_of(d)))
        check("FUSE connection(s) of uid %d" % st.st_uid in d.log_text(),
              "the daemon's log does not say whose connection it ended")
    finally:
        if fs_pid:
            try:
                os.kill(fs_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in (holder, queued):
            if p:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        d.stop()



def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        T.skip("held server", f"{DAEMON} or {CLI} not built")
        return sys.exit(T.finish())
    if not shutil.which("bwrap"):
        T.skip("held server", "bwrap is not installed (scripts/install-deps)")
        return sys.exit(T.finish())
    sys.exit(vtest.run_cases(T, [t_held_directory_ended], "vs-held-"))


if __name__ == "__main__":
    main()
