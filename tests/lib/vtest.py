# SPDX-License-Identifier: MIT
"""The integration tests' shared harness: where the build is, TAP results
(ok / not ok / SKIP, with VECTORA_TEST_STRICT=1 turning a skip into a
failure), a daemon started and stopped for a test, and a daemon API
connection. Python 3 stdlib only.

Programs run from the build tree find the tree's worker through
VECTORA_WORKER only (nothing about the tree is compiled into them): meson
sets it, and so does this module for a test run by hand."""

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("VECTORA_SOURCE_ROOT") or os.path.normpath(os.path.join(HERE, "../.."))
BUILD = os.path.abspath(os.environ.get("VECTORA_BUILD_ROOT") or os.path.join(SRC, "build"))
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
CLI = os.path.join(BUILD, "src/cli/vectora-sandbox")
WORKER = os.path.join(BUILD, "src/worker/vectora-worker")
PROXY = os.path.join(BUILD, "src/proxy/vectora-sandbox-proxy")
STRICT = os.environ.get("VECTORA_TEST_STRICT") == "1"
ROOT = os.geteuid() == 0
# Set by tests/helpers/as-user: this run is the ordinary account
# vectora-test with its real $HOME and $XDG_RUNTIME_DIR, under a suite
# that also runs every case as root.
AS_USER = os.environ.get("VECTORA_TEST_AS_USER") == "1"
# The jail never runs as host root: as root, workspaces get this owner.
OWNER = pwd.getpwnam("nobody") if ROOT else pwd.getpwuid(os.geteuid())

os.environ.setdefault("VECTORA_WORKER", WORKER)
os.environ.setdefault("VECTORA_PROXY", PROXY)
os.environ.setdefault("VECTORA_MODAL_BRIDGE", os.path.join(SRC, "bridge/modal/bridge.mjs"))


class Skip(Exception):
    """Raised by a case that cannot run here; the reason is reported."""


def sanitized(pid):
    """Whether the process runs a sanitizer build (its RSS and its memory's
    layout say nothing then: ASan's quarantine and shadow). A process that
    is not dumpable hides its maps from an ordinary user: then the build's
    own b_sanitize option says."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "asan" in f.read()
    except OSError:
        try:
            with open(os.path.join(BUILD, "meson-info", "intro-buildoptions.json")) as f:
                opts = json.load(f)
        except (OSError, ValueError):
            return False
        return any(o.get("name") == "b_sanitize" and o.get("value") not in ("none", "", None) for o in opts)


class NotApplicable(Skip):
    """Raised by a case that does not apply to this run (said, counted,
    never a failure, strict or not)."""


def needs_root(why):
    """A case that needs root: under tests/helpers/as-user the same suite's
    root run has it (not applicable here); anywhere else a skip."""
    if AS_USER:
        raise NotApplicable(why + "; the suite's run as root covers it")
    raise Skip(why)


class Tap:
    """TAP results: one line per case, the plan and a summary at the end."""

    def __init__(self):
        self.n = self.failed = self.skipped = self.not_applicable_n = 0

    def ok(self, name, ok, detail=None):
        self.n += 1
        self.failed += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", self.n, name), flush=True)
        if not ok and detail is not None:
            for line in str(detail).splitlines()[-40:]:
                print("#   " + line)
        if not ok:
            # Also on stderr: `meson test --print-errorlogs` shows only that.
            print("not ok %d - %s" % (self.n, name), file=sys.stderr)
            for line in str(detail if detail is not None else "").splitlines()[-40:]:
                print("#   " + line, file=sys.stderr)
            sys.stderr.flush()
        return ok

    def skip(self, name, why):
        self.n += 1
        self.skipped += 1
        if STRICT:
            self.failed += 1
            print("not ok %d - %s # SKIP under VECTORA_TEST_STRICT: %s" % (self.n, name, why), flush=True)
        else:
            print("ok %d - %s # SKIP %s" % (self.n, name, why), flush=True)

    def not_applicable(self, name, why):
        """A case that does not apply to this configuration (a backend
        without the feature): said, counted, never a failure, strict or
        not, unlike a skip for something missing here."""
        self.n += 1
        self.not_applicable_n += 1
        print("ok %d - %s # SKIP not applicable: %s" % (self.n, name, why), flush=True)

    def root_only(self, name, why):
        """A case that needs root (see needs_root): not applicable under
        tests/helpers/as-user, a skip anywhere else."""
        if AS_USER:
            self.not_applicable(name, why + "; the suite's run as root covers it")
        else:
            self.skip(name, why)

    def note(self, text):
        for line in str(text).splitlines():
            print("# " + line)

    def case(self, fn, *args, name=None):
        """Runs fn(*args) as one subtest: passes unless it raises; Skip
        reports a skip."""
        name = name or fn.__name__
        start = time.monotonic()
        try:
            fn(*args)
            return self.ok(name, True)
        except NotApplicable as e:
            self.not_applicable(name, str(e))
        except Skip as e:
            self.skip(name, str(e))
        except Exception:
            return self.ok(name, False, traceback.format_exc())
        finally:
            # Where a slow run spent its time (meson's log keeps it).
            print("# %s: %.1f s" % (name, time.monotonic() - start), flush=True)

    def finish(self):
        """Prints the plan and the summary; the process's exit status."""
        print("1..%d" % self.n)
        passed = self.n - self.failed - self.not_applicable_n - (self.skipped if not STRICT else 0)
        print("# %d passed, %d failed, %d skipped" % (passed, self.failed, self.skipped) +
              (", %d not applicable" % self.not_applicable_n if self.not_applicable_n else ""))
        return 1 if self.failed else 0


def run_cases(tap, cases, prefix):
    """Runs each case(tmp) of cases, those named on the command line (all
    when none), in one temp dir under /var/tmp removed at the end; the
    process's exit status."""
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    os.chmod(tmp, 0o755)
    try:
        for t in cases:
            if not only or t.__name__ in only:
                tap.case(t, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def chown_tree(path):
    if not ROOT:
        return
    for d, dirs, files in os.walk(path):
        os.lchown(d, OWNER.pw_uid, OWNER.pw_gid)
        for f in files:
            os.lchown(os.path.join(d, f), OWNER.pw_uid, OWNER.pw_gid)


# The rewriting loop, in a process of its own: a thread of the test's
# shared the interpreter's lock with the test's own busy loops and, on a
# loaded machine, stalled for more than the daemon's settling time between
# truncating the file and writing it (the daemon then read an empty
# config and served the workspace unsandboxed: a CI failure of
# t_settling_config_holds_no_other). It reports the longest time the file
# stood unchanged, so that a test can tell a stalled writer from a daemon
# that read a changing file.
_REWRITE = r"""
import os, select, sys, time
path, text, every = sys.argv[1], sys.argv[2].encode(), float(sys.argv[3])
try:
    os.nice(-10)
except OSError:
    pass
last, gap = None, 0.0
while True:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, text)
    os.close(fd)
    now = time.monotonic()
    if last is None:
        print("ready", flush=True)
    else:
        gap = max(gap, now - last)
    last = now
    if select.select([sys.stdin], [], [], every)[0]:
        break
print("%.4f" % gap, flush=True)
"""


class Rewriting:
    """Rewrites path with text (truncate, then one write) every `every`
    seconds in a process of its own until stop() (or the end of a with
    block): the host writing a workspace's vectora.toml over and over, so
    that it never settles. The file exists when the constructor returns;
    stop() returns the longest time (s) the file stood unchanged, also
    kept as .max_gap."""

    def __init__(self, path, text, every=0.02):
        self.max_gap = None
        self.p = subprocess.Popen([sys.executable, "-c", _REWRITE, path, text, str(every)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            self.p.kill()
            self.p.wait()
            raise RuntimeError("the rewriting process did not start")

    def stop(self):
        if self.max_gap is None:
            try:
                self.p.stdin.write("stop\n")
                self.p.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
            out = self.p.stdout.read().strip()
            self.p.wait()
            self.max_gap = float(out) if out else float("inf")
        return self.max_gap

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def make_ws(tmp, name, toml=None, files=None):
    """A workspace directory: vectora.toml (when given) and files, owned by
    OWNER."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    if toml is not None:
        with open(os.path.join(d, "vectora.toml"), "w") as f:
            f.write(toml)
    for k, v in (files or {}).items():
        p = os.path.join(d, k)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb" if isinstance(v, bytes) else "w") as f:
            f.write(v)
    chown_tree(d)
    return d


class Conn:
    """One daemon API connection: JSON lines, raw payloads after a header
    that gives their length (returned as "_raw")."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""
        self.next_id = 0

    def send(self, req, raw=None):
        if raw is not None:
            req = dict(req, raw=len(raw))
        self.s.sendall(json.dumps(req).encode() + b"\n" + (raw or b""))

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError("daemon closed the connection")
        self.buf += d

    def recv(self):
        while b"\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line)
        n = msg.pop("raw", None)
        if n is not None:
            while len(self.buf) < n:
                self._fill()
            msg["_raw"], self.buf = self.buf[:n], self.buf[n:]
        return msg

    def call(self, req, raw=None):
        self.next_id += 1
        req = dict(req, id=self.next_id)
        self.send(req, raw)
        while True:
            m = self.recv()
            if m.get("id") == self.next_id:
                return m

    def close(self):
        self.s.close()


class Daemon:
    """vectora-sandboxd in the foreground on its own socket in tmp, logging
    to tmp/NAME.log (and auditing to tmp/NAME.audit unless audit is
    False); ready once it accepts a connection. prefix: a command that
    execs the daemon's command line given after it (a namespace to run in)."""

    def __init__(self, tmp, name="d", extra=(), pass_fds=(), env=None, audit=True, log_level="debug", prefix=(),
                 own_socket=True):
        # own_socket False: the daemon's default, $XDG_RUNTIME_DIR/vectora-sandbox.sock.
        self.sock = os.path.join(tmp, name + ".sock") if own_socket else \
            os.path.join((env or os.environ)["XDG_RUNTIME_DIR"], "vectora-sandbox.sock")
        self.log = os.path.join(tmp, name + ".log")
        self.audit = os.path.join(tmp, name + ".audit") if audit else None
        argv = [DAEMON, "--foreground"] + (["--socket", self.sock] if own_socket else []) + ["--log-file", self.log]
        if log_level:
            argv += ["--log-level", log_level]
        if self.audit:
            argv += ["--audit-log", self.audit]
        # Its stderr (sanitizer reports land there) is kept, and stop()
        # fails on a report or an unclean exit (issue 26).
        self.stderr_path = os.path.join(tmp, name + ".stderr")
        self._stderr = open(self.stderr_path, "ab")
        self.p = subprocess.Popen(list(prefix) + argv + list(extra), stdin=subprocess.DEVNULL, pass_fds=pass_fds,
                                  env=env, stderr=self._stderr)
        # Wait until it accepts, not until the file exists: a killed
        # daemon's stale socket file is there before this one started.
        for _ in range(1000):
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.sock)
                return
            except OSError:
                pass
            if self.p.poll() is not None:
                raise RuntimeError("the daemon exited: " + self.log_text())
            time.sleep(0.01)
        raise RuntimeError("the daemon did not listen on its socket: " + self.log_text())

    @property
    def pid(self):
        return self.p.pid

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def conn(self):
        # The socket file exists from bind(), a moment before listen().
        for _ in range(100):
            try:
                return Conn(self.sock)
            except ConnectionRefusedError:
                time.sleep(0.02)
        return Conn(self.sock)

    def call(self, req, raw=None):
        """One request on a connection of its own."""
        c = self.conn()
        try:
            return c.call(req, raw)
        finally:
            c.close()

    def status(self):
        return self.call({"tool": "status"})

    def ws_status(self, path):
        for w in self.call({"tool": "status"})["workspaces"]:
            if w["path"] == os.path.realpath(path):
                return w
        return None

    def stderr_text(self):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, timeout=10, check_exit=True):
        """SIGTERM and wait. Fails (AssertionError) when the daemon does not
        exit 0 on it, or when its stderr holds a sanitizer report (ASan,
        LeakSanitizer, UBSan), whichever way it ended: under make test-asan a
        daemon-side leak or error must fail the test that ran it. A test that
        killed the daemon on purpose passes check_exit=False."""
        stopped_here = self.p.poll() is None
        if stopped_here:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                if check_exit:
                    raise AssertionError("the daemon did not exit within %ss of SIGTERM; log tail:\n%s" %
                                         (timeout, self.log_text()[-2000:]))
        if not self._stderr.closed:
            self._stderr.close()
        err = self.stderr_text()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer"):
            if marker in err:
                raise AssertionError("the daemon's stderr has a sanitizer report:\n" + err[-4000:])
        if check_exit and stopped_here and self.p.returncode != 0:
            raise AssertionError("the daemon exited %s on SIGTERM; stderr:\n%s\nlog tail:\n%s" %
                                 (self.p.returncode, err[-2000:], self.log_text()[-2000:]))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()



def wait_for(cond, t):
    """Whether cond() became true within t seconds (polled every 50 ms)."""
    end = time.monotonic() + t
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def sleepers(arg):
    """pids of the host's processes running `sleep ARG` (a jail's processes
    are the host's too): how a test finds the command it started."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    if f.read().split(b"\0")[:2] == [b"sleep", str(arg).encode()]:
                        out.append(int(p))
            except OSError:
                pass
    return out


def npm_package(tmp, kept, spec):
    """An npm package (spec, e.g. "undici@6") under a prefix: the one a run
    before left in the build tree (BUILD/kept; a run as another user, whose
    clean environment may not reach the registry, uses it read-only), else
    installed there or in tmp. (prefix, None), or (None, the reason) when
    node, npm or the registry is not there."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None, "node and npm are not installed"
    name = spec.rsplit("@", 1)[0] if spec.rfind("@") > 0 else spec
    prefix = os.path.join(BUILD, kept)
    if os.path.exists(os.path.join(prefix, "node_modules", name, "package.json")):
        return prefix, None
    if not os.access(BUILD, os.W_OK):
        prefix = os.path.join(tmp, "npm-" + kept)
    os.makedirs(prefix, exist_ok=True)
    try:
        p = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline", "--prefix", prefix,
                            spec], capture_output=True, timeout=240)
    except subprocess.TimeoutExpired:
        return None, "npm install %s timed out" % spec
    if p.returncode != 0:
        return None, "npm install %s failed: %s" % (spec, p.stderr.decode(errors="replace")[-300:])
    return prefix, None
