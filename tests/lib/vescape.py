# SPDX-License-Identifier: MIT
"""What the escape suites share (tests/escape/test_escape.py and
tests/escape/test_peer_cases.py): the identities, the fixture with its
workspaces, planted secrets and daemon (Ctx), the probe's verdicts. The
static probe (tests/helpers/probe.c) runs inside the jail."""

import json
import os
import pty
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import traceback

from vtest import BUILD, CLI, STRICT, WORKER, Daemon, Tap  # noqa: E402
# A sanitizer build's worker cannot run as a command under the jail's
# RLIMIT_DATA (the sanitizer reserves terabytes of address space), and this
# suite tests the jail, not the worker's memory safety (test-worker and
# test-daemon run the instrumented worker): use the uninstrumented static
# worker such a build makes.
if os.path.exists(os.path.join(BUILD, "src/worker/vectora-worker-static")):
    WORKER = os.path.join(BUILD, "src/worker/vectora-worker-static")
    os.environ["VECTORA_WORKER"] = WORKER
PROBE = os.path.join(BUILD, "tests/helpers/vectora-probe")
ROOT = os.geteuid() == 0
NOBODY = 65534
EXIT_REFUSED = 125

# VECTORA_ESCAPE_BACKEND=docker|ssh: the same list against that backend
# (tests/helpers/backends/escape_backend.py starts the server).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../helpers/backends"))
import escape_backend  # noqa: E402
BACKEND = escape_backend.Backend(os.environ.get("VECTORA_ESCAPE_BACKEND", "local"))

# What the jail's environment may contain (src/shared/plan/backend-local.c,
# backend_local_jail_env(); GIT_CONFIG_SYSTEM names the read-only identity
# file on the local backend, src/core/launch/jail-home.h).
ENV_ALLOWLIST = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR", "GIT_CONFIG_SYSTEM"]

MASK = '[".env", "**/*.pem", "**/.ssh/**", "**/.aws/**", "config/prod/secret.key"]'

T = Tap()


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def tap(ok, name, detail=None, skip=None):
    """One verdict through the shared harness; a passing attempt's detail
    (what the probe saw) is shown too."""
    if skip is not None:
        T.skip(name, skip)
        return
    T.ok(name, ok, detail)
    if ok and detail:
        T.note(detail)


# ---------------------------------------------------------------- fixtures

def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(path, mode)


def chown_tree(path, uid, gid):
    if not ROOT:
        return
    os.lchown(path, uid, gid)
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(d, n), uid, gid)


def read_host(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return e.__class__.__name__


class Identity:
    """Who invokes the CLI: argv prefix and environment."""

    def __init__(self, name, uid, gid, prefix):
        self.name, self.uid, self.gid, self.prefix = name, uid, gid, prefix


class Ctx:
    """One identity's fixture: workspaces, planted secrets, listeners."""

    def __init__(self, ident):
        self.ident = ident
        base = "/var/tmp" if os.path.isdir("/var/tmp") else None
        self.t = tempfile.mkdtemp(prefix=f"vectora-escape-{ident.name}-", dir=base)
        os.chmod(self.t, 0o755)
        self.jail_uid, self.jail_gid = BACKEND.jail_ids(NOBODY if ROOT else os.geteuid(),
                                                        NOBODY if ROOT else os.getegid())
        tag = secrets.token_hex(6)
        self.m = {k: f"VECTORA-SECRET-{k}-{tag}" for k in
                  ("ssh", "rootssh", "env", "pem", "sshcfg", "sibling", "ropem", "anchored", "envvar")}
        t = self.t
        # The host's secrets, outside every allowed path.
        self.home = os.path.join(t, "home")
        write(os.path.join(self.home, ".ssh/id_rsa"), self.m["ssh"], 0o600)
        write(os.path.join(self.home, ".aws/credentials"), self.m["ssh"], 0o600)
        chown_tree(self.home, self.jail_uid, self.jail_gid)
        self.roothome = os.path.join(t, "roothome")
        write(os.path.join(self.roothome, ".ssh/id_rsa"), self.m["rootssh"], 0o644)
        self.sibling = os.path.join(t, "sibling")
        write(os.path.join(self.sibling, "secret"), self.m["sibling"], 0o644)
        chown_tree(self.sibling, self.jail_uid, self.jail_gid)
        # A read-only path with a masked file in it.
        self.rodata = os.path.join(t, "rodata")
        write(os.path.join(self.rodata, "lib.txt"), "read only data\n")
        write(os.path.join(self.rodata, "deploy.pem"), self.m["ropem"])
        # The CLI's own runtime: HOME and XDG_RUNTIME_DIR owned by the caller.
        self.cli_home = os.path.join(t, "cli-home")
        self.xdg = os.path.join(t, "xdg")
        for d in (self.cli_home, self.xdg):
            os.makedirs(d)
        os.chmod(self.xdg, 0o700)
        if ROOT and ident.uid != 0:
            chown_tree(self.cli_home, ident.uid, ident.gid)
            chown_tree(self.xdg, ident.uid, ident.gid)
        self.ws = self.make_ws("ws", network=False)
        self.ws_net = self.make_ws("ws-net", network=True)
        self.ws_lock = self.make_ws("ws-lock", network=False, lockdown=True)
        self.listeners = []
        self.sleeper = None
        self.daemon = None
        self.ws_allow = None
        self.via = None  # "pty": c.probe runs the probe in a jail terminal; "bg": as a background process

    def make_ws(self, name, network, lockdown=False):
        ws = os.path.join(self.t, name)
        ro = f'ro_paths = ["{self.rodata}"]\n'
        write(os.path.join(ws, "vectora.toml"),
              f"[sandbox]\nenabled = true\nbackend = \"{BACKEND.name}\"\nrw_paths = [\".\"]\n" + ro +
              f"mask = {MASK}\nno_gpu = true\n"
              f"lockdown = {'true' if lockdown else 'false'}\n"
              f"network = {json.dumps(network) if isinstance(network, list) else 'true' if network else 'false'}\n"
              "[sandbox.limits]\ntimeout = 60\n" + BACKEND.toml())
        write(os.path.join(ws, ".env"), f"API_KEY={self.m['env']}\n", 0o600)
        write(os.path.join(ws, "a/b/key.pem"), self.m["pem"], 0o600)
        write(os.path.join(ws, "x/.ssh/config"), self.m["sshcfg"], 0o600)
        write(os.path.join(ws, ".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n", 0o755)
        write(os.path.join(ws, ".git/config"), "[core]\n\tbare = false\n")
        write(os.path.join(ws, ".git/HEAD"), "ref: refs/heads/main\n")
        write(os.path.join(ws, "src/main.c"), "int main(void) { return 0; }\n")
        write(os.path.join(ws, "config/prod/secret.key"), self.m["anchored"], 0o600)
        os.makedirs(os.path.join(ws, ".probe"))
        shutil.copy(PROBE, os.path.join(ws, ".probe/vectora-probe"))
        os.chmod(os.path.join(ws, ".probe/vectora-probe"), 0o755)
        if not lockdown:
            # Planted symlinks: to a host secret, to masked files, outside.
            os.symlink(os.path.join(self.home, ".ssh/id_rsa"), os.path.join(ws, "link-host"))
            os.symlink(".env", os.path.join(ws, "link-env"))
            os.symlink("a/b/key.pem", os.path.join(ws, "link-pem"))
            os.symlink("../sibling/secret", os.path.join(ws, "link-sibling"))
            os.symlink("/", os.path.join(ws, "link-root"))
            os.symlink("vectora.toml", os.path.join(ws, "link-toml"))
            os.symlink(".git/hooks", os.path.join(ws, "link-hooks"))
        chown_tree(ws, self.jail_uid, self.jail_gid)
        return ws

    def probe_path(self, ws):
        return os.path.join(ws, ".probe/vectora-probe")

    def env(self, extra=None):
        e = {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
            "HOME": self.cli_home if self.ident.uid != 0 else self.roothome,
            "LANG": "C.UTF-8",
            "VECTORA_WORKER": WORKER,
            # The allowlist's proxy process (the build tree's, as the worker).
            "VECTORA_PROXY": os.environ.get("VECTORA_PROXY", os.path.join(BUILD, "src/proxy/vectora-sandbox-proxy")),
            # The daemon's/CLI's own secrets: none may reach the jail.
            "VECTORA_TEST_SECRET": self.m["envvar"],
            "AWS_SECRET_ACCESS_KEY": self.m["envvar"],
            "SSH_AUTH_SOCK": os.path.join(self.xdg, "ssh-agent.sock"),
        }
        if self.ident.uid != 0:
            e["XDG_RUNTIME_DIR"] = self.xdg
        if extra:
            e.update(extra)
        return e

    def cli(self, args, extra_env=None, stdin=b"", timeout=120):
        # Embedded unless a daemon is named: the listener planted at the
        # default socket below is bait for the jail, not a daemon for the CLI.
        named = bool((extra_env or {}).get("VECTORA_SANDBOX_SOCKET"))
        cmd = self.ident.prefix + [CLI] + ([] if named else ["--no-daemon"]) + args
        return subprocess.run(cmd, env=self.env(extra_env), input=stdin, capture_output=True, timeout=timeout)

    def probe(self, ws, *args, extra_env=None):
        if self.via == "pty":
            return self.pty_probe(ws, *args, extra_env=extra_env)
        if self.via == "bg":
            return self.bg_probe(ws, *args, extra_env=extra_env)
        if ws == self.ws_allow:
            # A network allowlist is served by the daemon's proxy.
            extra_env = dict(extra_env or {}, VECTORA_SANDBOX_SOCKET=self.allow_sock)
        return self.cli(["exec", "-w", ws, "--", self.probe_path(ws)] + list(args), extra_env)

    def shell(self, ws, typed, extra_env=None, timeout=120):
        """`vectora-sandbox shell` through the daemon, typed ahead on its
        stdin; stdout with the terminal's CRLF as LF."""
        r = self.cli(["shell", "-w", ws], dict(extra_env or {}, VECTORA_SANDBOX_SOCKET=self.allow_sock),
                     stdin=typed.encode(), timeout=timeout)
        r.stdout = r.stdout.replace(b"\r\n", b"\n")
        return r

    def pty_probe(self, ws, *args, extra_env=None):
        """The probe as the shell of a terminal in the jail: its exit is the
        session's."""
        r = self.shell(ws, "exec " + " ".join(shlex.quote(a) for a in [self.probe_path(ws), *args]) + "\n",
                       extra_env)
        # The shell's prompt ("$ ") shares a line with what follows it.
        r.stdout = re.sub(rb"(?m)^(\$ )+", b"", r.stdout)
        return r

    def bg_probe(self, ws, *args, extra_env=None):
        """The probe as a background process in the jail (`start`, then
        `logs --follow` until it ends): its exit is the process's."""
        env = dict(extra_env or {}, VECTORA_SANDBOX_SOCKET=self.allow_sock)
        r = self.cli(["start", "-w", ws, "exec " + " ".join(shlex.quote(a) for a in [self.probe_path(ws), *args])],
                     env)
        if r.returncode != 0:
            return r
        return self.cli(["logs", "-w", ws, r.stdout.decode().strip(), "--follow"], env)

    def start_allowlist(self):
        """A workspace whose allowlist names the host's own address and one
        port, and a daemon (as this identity) to serve its proxy."""
        self.ws_allow = self.make_ws("ws-allow", network=[f"{self.host_addr}:{self.tcp_any_port}"])
        self.start_daemon()

    def start_daemon(self):
        """A daemon as this identity: the allowlist's proxy, the terminals."""
        if self.daemon:
            return
        try:
            self.daemon = Daemon(self.xdg, name="allow-daemon", env=self.env(), audit=False, log_level=None,
                                 prefix=self.ident.prefix)
        except RuntimeError as e:
            raise Fail("the daemon for the allowlisted workspace did not start: " + str(e)[-2000:])
        self.allow_sock = self.daemon.sock

    def listen_tcp(self, family=socket.AF_INET, addr="127.0.0.1"):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.bind((addr, 0))
        s.listen(8)
        self.listeners.append(s)
        return s.getsockname()[1]

    def listen_unix(self, path=None, abstract=None):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path if path else "\0" + abstract)
        if path:
            os.chmod(path, 0o777)
        s.listen(8)
        self.listeners.append(s)

    def start_sleeper(self):
        """A host process of the jail's own uid, outside the jail."""
        pre = ["setpriv", f"--reuid={self.jail_uid}", f"--regid={self.jail_gid}", "--clear-groups"] if ROOT else []
        self.sleeper = subprocess.Popen(pre + ["sleep", "600"])
        return self.sleeper.pid

    def cleanup(self):
        if self.daemon:
            self.daemon.stop()
        for s in self.listeners:
            s.close()
        if self.sleeper and self.sleeper.poll() is None:
            self.sleeper.kill()
            self.sleeper.wait()
        shutil.rmtree(self.t, ignore_errors=True)


# ---------------------------------------------------------------- verdicts

def out_of(r):
    return (r.stdout + r.stderr).decode(errors="replace")


def probe_lines(r):
    return [ln for ln in r.stdout.decode(errors="replace").splitlines() if ln.startswith(("BLOCKED:", "ESCAPED:"))]


def expect_blocked(r):
    """The probe ran and says BLOCKED; an ESCAPED or anything else fails."""
    lines = probe_lines(r)
    if r.returncode == 1 and lines and lines[0].startswith("ESCAPED:"):
        raise Fail(lines[0])
    if r.returncode != 0 or len(lines) != 1 or not lines[0].startswith("BLOCKED:"):
        raise Fail(f"the probe did not run as expected (exit {r.returncode}):\n{out_of(r)}")
    return lines[0]


def expect_escaped(r):
    """For controls: the probe ran and the attempt worked (the allowed case)."""
    lines = probe_lines(r)
    if r.returncode != 1 or len(lines) != 1 or not lines[0].startswith("ESCAPED:"):
        raise Fail(f"control failed, expected the allowed operation to work (exit {r.returncode}):\n{out_of(r)}")
    return lines[0]


def expect_refused(r, *words, markers=()):
    """A file tool refused: exit 125, a reason on stderr, nothing secret."""
    text = out_of(r)
    for m in markers:
        if m in text:
            raise Fail(f"ESCAPED: the secret's marker is in the output:\n{text}")
    if r.returncode != EXIT_REFUSED:
        raise Fail(f"expected exit 125 (refused), got {r.returncode}:\n{text}")
    err = r.stderr.decode(errors="replace")
    if not err.startswith("vectora-sandbox: ") or not any(w in err for w in words or ("denied",)):
        raise Fail(f"no clear reason on stderr (want one of {words or ('denied',)}):\n{err}")
    return err.strip()




def host_address():
    """The address the host would send from (no packet is sent)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]
    except OSError as e:
        raise RuntimeError(f"the host has no address outside loopback to test the jail against: {e}")
    finally:
        s.close()


def identities():
    if ROOT:
        return [Identity("root", 0, 0, []),
                Identity("uid65534", NOBODY, NOBODY,
                         ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"])]
    return [Identity(f"uid{os.geteuid()}", os.geteuid(), os.getegid(), [])]


def preflight():
    for p in (CLI, WORKER, PROBE):
        if not os.access(p, os.X_OK):
            return f"{p} is not built (ninja -C build)"
    if not shutil.which("bwrap"):
        return "bwrap is not installed (apt-get install bubblewrap)"
    if ROOT and not shutil.which("setpriv"):
        return "setpriv is not installed (util-linux)"
    return None
