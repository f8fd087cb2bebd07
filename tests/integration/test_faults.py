#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Faults that must not lose data, lie, or open the sandbox (issue 26):
restarts, full disks, leftovers. Each case performs the fault against a
real daemon. TAP; a case that cannot run here says SKIP."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, DAEMON, Daemon, Skip, Tap, check, make_ws  # noqa: E402

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


TESTS = [t_process_ids_not_reused]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip("faults", "%s or %s not built" % (DAEMON, CLI))
        sys.exit(tap.finish())
    if not shutil.which("bwrap"):
        tap.skip("faults", "bwrap not installed")
        sys.exit(tap.finish())
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="vs-faults-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    try:
        for t in TESTS:
            if not only or t.__name__ in only:
                tap.case(t, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
