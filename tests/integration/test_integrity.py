#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Policy integrity on a live host (issue 10): the agent cannot switch its
sandbox off. Each test performs the attack, against a daemon (run as root in
CI, with the workspaces owned by an ordinary user) and, where the attack
applies to it, the CLI's embedded mode. TAP output; a test that cannot run
says SKIP with the reason (a failure under VECTORA_TEST_STRICT=1)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The daemon harness (Conn, Daemon, make_ws) is test_daemon.py's own.
from test_daemon import CLI, DAEMON, ROOT, STRICT, Daemon, check, make_ws, term  # noqa: E402

SANDBOX = '[sandbox]\nenabled = true\nmask = [".env"]\n'


class Skip(Exception):
    pass


def cli(*args, stdin=None, timeout=60, sock=None):
    e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    if sock:
        e["VECTORA_SANDBOX_SOCKET"] = sock
    return subprocess.run([CLI, *args], input=stdin, capture_output=True, text=True, env=e, timeout=timeout)


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


TESTS = [
    t_fifo_config_does_not_block,
    t_socket_and_device_config,
    t_subdirectory_runs_in_parent_jail,
    t_check_says_which_file_governs,
]


def main():
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        print("1..0 # SKIP %s or %s not built" % (DAEMON, CLI))
        sys.exit(1 if STRICT else 0)
    if not shutil.which("bwrap"):
        print("1..0 # SKIP bwrap not installed")
        sys.exit(1 if STRICT else 0)
    only = set(sys.argv[1:])
    tests = [t for t in TESTS if not only or t.__name__ in only]
    print("1..%d" % len(tests))
    tmp = tempfile.mkdtemp(prefix="vs-integrity-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    d = Daemon(tmp)
    failed = skipped = 0
    try:
        for n, t in enumerate(tests, 1):
            try:
                t(d, tmp)
                print("ok %d - %s" % (n, t.__name__))
            except Skip as e:
                skipped += 1
                print("%s %d - %s # SKIP %s" % ("not ok" if STRICT else "ok", n, t.__name__, e))
                failed += STRICT
            except Exception:
                failed += 1
                print("not ok %d - %s" % (n, t.__name__))
                for line in traceback.format_exc().splitlines():
                    print("#   " + line)
            if d.p.poll() is not None:
                print("# daemon died; log tail:")
                for line in open(d.log).read()[-3000:].splitlines():
                    print("#   " + line)
                failed += 1
                d = Daemon(tmp, "d%d" % n)
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("# %d passed, %d failed, %d skipped" % (len(tests) - failed - skipped, failed, skipped))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
