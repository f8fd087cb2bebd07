#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The harness's own checks (issue 26): Daemon.stop() fails a test whose
daemon leaked or erred under the sanitizers, or exited uncleanly on
SIGTERM, instead of ignoring both. The daemon is wrapped in a shell that
adds the fault after it exits. TAP."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import DAEMON, Daemon, Tap, check  # noqa: E402


def wrapped(tmp, name, after):
    """A daemon whose wrapper runs `after` (shell) once it has exited."""
    script = ('"$@" & pid=$!; trap \'kill -TERM $pid\' TERM; '
              'wait $pid; rc=$?; [ $rc -gt 128 ] && { wait $pid; rc=$?; }; ' + after)
    return Daemon(tmp, name, prefix=("/bin/sh", "-c", script, "sh"), audit=False)


def raises(fn):
    try:
        fn()
    except AssertionError as e:
        return str(e)
    return None


def t_clean_stop_passes(tmp):
    d = wrapped(tmp, "clean", "exit $rc")
    check(raises(d.stop) is None, "a clean daemon's stop() failed")


def t_sanitizer_report_fails(tmp):
    for i, report in enumerate(("ERROR: LeakSanitizer: detected memory leaks",
                                "ERROR: AddressSanitizer: heap-use-after-free on address 0x1",
                                "src/daemon/x.c:1:2: runtime error: signed integer overflow")):
        d = wrapped(tmp, "asan%d" % i, "echo '%s' >&2; exit 0" % report)
        why = raises(d.stop)
        check(why and "sanitizer report" in why, "stop() ignored %r: %r" % (report, why))


def t_unclean_exit_fails(tmp):
    d = wrapped(tmp, "exit3", "exit 3")
    why = raises(d.stop)
    check(why and "exited 3" in why, why)
    # A test that killed it on purpose says so.
    d = wrapped(tmp, "killed", "exit 3")
    check(raises(lambda: d.stop(check_exit=False)) is None, "check_exit=False still failed")


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK):
        tap.skip("harness", "%s not built" % DAEMON)
        sys.exit(tap.finish())
    tmp = tempfile.mkdtemp(prefix="vs-harness-")
    try:
        for t in (t_clean_stop_passes, t_sanitizer_report_fails, t_unclean_exit_fails):
            tap.case(t, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
