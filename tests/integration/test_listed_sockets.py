#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon's socket and $XDG_RUNTIME_DIR as listed paths (issue 25,
section 7): a jail that can reach the daemon's socket could ask it for
commands in an unsandboxed workspace, and the runtime directory holds that
socket (its default place) and the session's (D-Bus, keyring, agents). So
neither the socket (whatever path the daemon listens on, named directly or
through a symlink), nor any directory holding it, nor $XDG_RUNTIME_DIR or
anything below it, nor another instance's default socket or /tmp fallback,
nor /tmp as a whole may be listed in rw_paths or ro_paths. Each is refused
by `vectora-sandbox check`, by embedded mode and by the daemon, with the
entry named and what to do, and nothing runs: the command would create a
marker file, which stays absent. TAP output."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, DAEMON, OWNER, ROOT, Daemon, Skip, Tap, check, chown_tree, make_ws  # noqa: E402

FIX = "list the project directories the agent needs instead"


def bind_socket(path):
    """A listening unix socket at path (what a daemon's looks like)."""
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(1)
    return s


class Host:
    """A daemon socket directory, a runtime directory and the CLI's
    environment naming them."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.sockdir = os.path.join(tmp, "sockdir")
        self.xdg = os.path.join(tmp, "xdg")
        os.makedirs(self.sockdir)
        os.makedirs(os.path.join(self.xdg, "proj"))
        os.chmod(self.xdg, 0o700)
        self.sock = os.path.join(self.sockdir, "d.sock")
        self.beside = os.path.join(self.sockdir, "beside")
        os.makedirs(self.beside)
        self.n = 0

    def env(self):
        e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
        e.update(VECTORA_SANDBOX_SOCKET=self.sock, XDG_RUNTIME_DIR=self.xdg)
        return e

    def ws(self, key, entry, link=None):
        """A workspace listing entry in key (rw_paths or ro_paths); link:
        a symlink in the workspace, named by the entry, leading there."""
        self.n += 1
        name = "ws%d" % self.n
        d = make_ws(self.tmp, name, '[sandbox]\nenabled = true\n%s = ["%s"]\n' % (key, entry))
        if link:
            # A link the host made beside the workspace (one in the
            # workspace is refused as the agent's before this rule:
            # test-planted).
            at = entry if os.path.isabs(entry) else os.path.join(d, entry)
            if not os.path.lexists(at):
                os.symlink(link, at)
            chown_tree(d)
        return d


def refusals(h):
    """(what, key, entry, link): each must be refused."""
    default_sock = os.path.join(h.xdg, "vectora-sandbox.sock")
    return [
        ("the daemon's socket, read-only", "ro_paths", h.sock, None),
        ("the daemon's socket, writable", "rw_paths", h.sock, None),
        ("the daemon's socket through a host symlink", "ro_paths", os.path.join(h.tmp, "sock-link"), h.sock),
        ("the directory holding the socket", "ro_paths", h.sockdir, None),
        ("$XDG_RUNTIME_DIR itself", "ro_paths", h.xdg, None),
        ("a directory below $XDG_RUNTIME_DIR, writable", "rw_paths", os.path.join(h.xdg, "proj"), None),
        ("a directory below $XDG_RUNTIME_DIR through a symlink", "ro_paths", os.path.join(h.tmp, "xdg-link"),
         os.path.join(h.xdg, "proj")),
        ("the default socket $XDG_RUNTIME_DIR/vectora-sandbox.sock", "ro_paths", default_sock, None),
        ("another instance's /tmp fallback runtime directory", "ro_paths", "/tmp/vectora-sandbox-65534", None),
        ("/tmp as a whole", "ro_paths", "/tmp", None),
    ]


def t_check(h, tap):
    held = [bind_socket(h.sock), bind_socket(os.path.join(h.xdg, "vectora-sandbox.sock"))]
    try:
        for what, key, entry, link in refusals(h):
            ws = h.ws(key, entry, link)
            r = subprocess.run([CLI, "--no-daemon", "check", "-w", ws], capture_output=True, text=True,
                               env=h.env(), timeout=60)
            tap.ok("check refuses %s (%s)" % (what, key),
                   r.returncode == 2 and '%s[0]: "%s"' % (key, entry) in r.stderr and FIX in r.stderr,
                   "rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
            if r.returncode == 2:
                tap.note(r.stderr.strip())
        # Control: what is beside the socket is a project like any other.
        ws = h.ws("rw_paths", h.beside)
        r = subprocess.run([CLI, "--no-daemon", "check", "-w", ws], capture_output=True, text=True, env=h.env(),
                           timeout=60)
        tap.ok("check accepts a directory beside the socket", r.returncode == 0,
               "rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    finally:
        for s in held:
            s.close()
        for p in (h.sock, os.path.join(h.xdg, "vectora-sandbox.sock")):
            if os.path.exists(p):
                os.unlink(p)


def t_embedded(h, tap):
    held = bind_socket(h.sock)
    try:
        for what, key, entry, link in refusals(h)[:3] + refusals(h)[4:7]:
            ws = h.ws(key, entry, link)
            marker = os.path.join(ws, "RAN")
            r = subprocess.run([CLI, "--no-daemon", "exec", "-w", ws, "--", "touch", marker], capture_output=True,
                               text=True, env=h.env(), timeout=60)
            tap.ok("embedded exec refuses %s (%s) and runs nothing" % (what, key),
                   r.returncode == 125 and '%s[0]: "%s"' % (key, entry) in r.stderr and FIX in r.stderr and
                   not os.path.exists(marker),
                   "rc %d, marker %s\n%s%s" % (r.returncode, os.path.exists(marker), r.stdout, r.stderr))
    finally:
        held.close()
        os.unlink(h.sock)


def t_daemon(h, tap):
    env = dict(h.env())
    env.pop("VECTORA_SANDBOX_SOCKET")
    d = Daemon(h.sockdir, "d", env=env, audit=False, log_level=None)
    try:
        check(d.sock == h.sock, (d.sock, h.sock))
        for what, key, entry, link in refusals(h)[:3] + refusals(h)[4:7]:
            ws = h.ws(key, entry, link)
            marker = os.path.join(ws, "RAN")
            r = d.call({"tool": "terminal", "workspace": ws, "command": "touch RAN"})
            err = r.get("error") or {}
            tap.ok("the daemon refuses %s (%s) and runs nothing" % (what, key),
                   not r.get("ok") and err.get("code") == "config_invalid" and
                   '%s[0]: "%s"' % (key, entry) in err.get("message", "") and FIX in err.get("message", "") and
                   not os.path.exists(marker),
                   "marker %s\n%s" % (os.path.exists(marker), r))
        ws = h.ws("ro_paths", h.beside)
        r = d.call({"tool": "terminal", "workspace": ws, "command": "touch RAN"})
        tap.ok("the daemon serves a workspace listing a directory beside its socket",
               r.get("ok") and r.get("exit_code") == 0 and os.path.exists(os.path.join(ws, "RAN")), r)
    finally:
        d.stop()


def t_ordinary_user(h, tap):
    """As an ordinary user with a runtime directory of their own and no
    socket named: the default socket is $XDG_RUNTIME_DIR/vectora-sandbox.sock,
    and without the runtime directory /tmp/vectora-sandbox-UID/sock."""
    uid, gid = OWNER.pw_uid, OWNER.pw_gid
    if ROOT:
        os.chown(h.xdg, uid, gid)
        for d, dirs, files in os.walk(h.xdg):
            for x in dirs:
                os.chown(os.path.join(d, x), uid, gid)
    pre = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups", "--"] if ROOT else []
    if ROOT and not shutil.which("setpriv"):
        raise Skip("setpriv (util-linux) is not installed")
    base = {k: v for k, v in os.environ.items() if k not in ("VECTORA_SANDBOX_SOCKET", "XDG_RUNTIME_DIR")}
    base["HOME"] = h.tmp
    held = bind_socket(os.path.join(h.xdg, "vectora-sandbox.sock"))
    try:
        cases = [("the default socket in their runtime directory", "ro_paths",
                  os.path.join(h.xdg, "vectora-sandbox.sock"), {"XDG_RUNTIME_DIR": h.xdg}),
                 ("a directory below their runtime directory", "rw_paths", os.path.join(h.xdg, "proj"),
                  {"XDG_RUNTIME_DIR": h.xdg}),
                 ("the fallback socket without a runtime directory", "ro_paths",
                  "/tmp/vectora-sandbox-%d/sock" % uid, {})]
        for what, key, entry, extra in cases:
            ws = h.ws(key, entry)
            env = dict(base, **extra)
            r = subprocess.run(pre + [CLI, "check", "-w", ws], capture_output=True, text=True, env=env, timeout=60)
            tap.ok("an ordinary user's check refuses %s (%s)" % (what, key),
                   r.returncode == 2 and '%s[0]: "%s"' % (key, entry) in r.stderr and FIX in r.stderr,
                   "rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    finally:
        held.close()
        os.unlink(os.path.join(h.xdg, "vectora-sandbox.sock"))


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip("listed sockets", "%s or %s not built" % (DAEMON, CLI))
        sys.exit(tap.finish())
    if not shutil.which("bwrap"):
        tap.skip("listed sockets", "bwrap not installed")
        sys.exit(tap.finish())
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="vs-listed-sockets-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    try:
        for t in (t_check, t_embedded, t_daemon, t_ordinary_user):
            if only and t.__name__ not in only:
                continue
            sub = os.path.join(tmp, t.__name__)
            os.makedirs(sub)
            os.chmod(sub, 0o755)
            try:
                t(Host(sub), tap)
            except Skip as e:
                tap.skip(t.__name__, str(e))
            except Exception as e:  # noqa: BLE001
                import traceback
                tap.ok(t.__name__, False, "%s\n%s" % (e, traceback.format_exc()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
