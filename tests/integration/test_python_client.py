#!/usr/bin/env python3
"""The Python client (clients/python) against a real vectora-sandboxd:
`pip install` of the package, each tool, raw payloads of 10 MiB both ways,
concurrent edits of one file from several threads, errors as exceptions
carrying the API's code, require_sandbox (per client and per call) refusing
an unsandboxed workspace before anything runs, the default socket as the
CLI's, and an unreachable daemon. TAP output."""
import hashlib
import inspect
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.environ.get("VECTORA_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "../../build"))
SOURCE = os.environ.get("VECTORA_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "../.."))
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
CLIENT = os.path.join(SOURCE, "clients/python")
ROOT = os.geteuid() == 0
STRICT = os.environ.get("VECTORA_TEST_STRICT") == "1"


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402

tap = vtest.Tap()
report, skip = tap.ok, tap.skip


def Daemon(tmp, name="d"):
    """A daemon in the foreground on a private socket (tests/lib/vtest.py)."""
    return vtest.Daemon(tmp, name, audit=False, log_level=None)


def install(tmp):
    """pip install ./clients/python, from a copy so the source tree stays clean.
    Offline: the build backend (setuptools) must be installed already."""
    src = os.path.join(tmp, "client-src")
    shutil.copytree(CLIENT, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = os.path.join(tmp, "site")
    py = shutil.which("python3", path="/usr/bin") or sys.executable
    # setuptools first: importing pip first trips Debian's distutils shim.
    probe = subprocess.run([py, "-c", "import setuptools, wheel, pip"], capture_output=True, text=True)
    if probe.returncode:
        skip("pip install ./clients/python", "%s has no pip/setuptools/wheel (python3-pip, python3-setuptools, "
             "python3-wheel; scripts/install-deps installs them)" % py)
        return None
    r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index",
                        "--target", target, src], capture_output=True, text=True, timeout=300)
    report("pip install ./clients/python (standard library only: nothing else is pulled in)",
           r.returncode == 0 and sorted(os.listdir(target)) == ["vectora_sandbox", "vectora_sandbox-0.1.0.dist-info"],
           r.stdout + r.stderr + str(os.listdir(target) if os.path.isdir(target) else ""))
    report("the package ships py.typed (typed for checkers)",
           os.path.exists(os.path.join(target, "vectora_sandbox/py.typed")))
    return target


def make_ws(tmp, name, toml, files):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    if toml is not None:
        with open(os.path.join(d, "vectora.toml"), "w") as f:
            f.write(toml)
    for k, v in files.items():
        p = os.path.join(d, k)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(v)
    if ROOT:
        for r, dirs, fs in os.walk(d):
            for x in dirs + fs:
                os.lchown(os.path.join(r, x), 65534, 65534)
        os.chown(d, 65534, 65534)
    return d


def expect_error(fn, code):
    from vectora_sandbox import SandboxError
    try:
        fn()
    except SandboxError as e:
        return e.code is code, e
    return False, "no exception"


def tools(vs, sock, ws):
    sb = vs.Sandbox(socket=sock, workspace=ws)
    r = sb.terminal("echo out; echo err >&2; exit 3")
    report("terminal: a command line; stdout, stderr (bytes) and the exit code",
           r.exit_code == 3 and r.stdout == b"out\n" and r.stderr == b"err\n" and not r.ok, r)
    report("terminal: the result says it ran sandboxed and which layers",
           r.sandbox.sandboxed and r.sandbox.backend == "local" and "namespaces" in r.sandbox.layers
           and r.sandbox.generation is not None, r.sandbox)
    r = sb.terminal(["sh", "-c", 'printf "%s|%s" "$(cat)" "$GREETING"; pwd'], stdin=b"from stdin",
                    env={"GREETING": "hi"}, cwd="src")
    report("terminal: an argv, stdin as a raw payload, env and cwd",
           r.stdout == ("from stdin|hi" + os.path.join(ws, "src") + "\n").encode(), r)
    r = sb.terminal("sleep 10", timeout=0.5)
    report("terminal: timeout kills it and says so", r.timed_out and r.exit_code != 0, r)
    r = sb.terminal("cat .env; echo rc=$?")
    report("terminal: a masked file reads as empty inside the jail", b"TOPSECRET" not in r.stdout and b"rc=0" in r.stdout, r)

    ok, e = expect_error(lambda: sb.file_read(".env"), vs.ErrorCode.DENIED)
    report("file_read of a masked file raises SandboxError with code 'denied' and the reason",
           ok and "TOPSECRET" not in str(e) and getattr(e, "reply", {}).get("sandboxed") is True, e)
    ok, e = expect_error(lambda: sb.file_write("vectora.toml", "[sandbox]\nenabled = false\n"), vs.ErrorCode.DENIED)
    report("file_write of vectora.toml raises 'denied'", ok, e)

    w = sb.file_write("notes/a.txt", "alpha\nbeta\n", create_parents=True)
    report("file_write: creates (with parents); size and sha256",
           w.created and w.size == 11 and w.sha256 == hashlib.sha256(b"alpha\nbeta\n").hexdigest(), w)
    e = sb.file_edit("notes/a.txt", "beta", "gamma")
    report("file_edit: one replacement", e.replacements == 1, e)
    c = sb.file_read("notes/a.txt")
    report("file_read: the edited content, eof, sha256",
           c.content == b"alpha\ngamma\n" and c.eof and c.sha256 == hashlib.sha256(c.content).hexdigest(), c)
    c = sb.file_read("notes/a.txt", offset=6, limit=3)
    report("file_read with offset and limit", c.content == b"gam" and not c.eof and c.size == 12, c)
    ok, e = expect_error(lambda: sb.file_edit("notes/a.txt", "nowhere", "x"), vs.ErrorCode.EDIT_NOT_FOUND)
    report("file_edit of absent text raises 'edit_not_found'", ok, e)
    ok, e = expect_error(lambda: sb.file_write("notes/a.txt", "x", if_sha256=""), vs.ErrorCode.PRECONDITION_FAILED)
    report("file_write with if_sha256='' (must not exist) on an existing file raises 'precondition_failed'", ok, e)

    st = sb.status()
    paths = [w.get("path") for w in st.get("workspaces", [])]
    report("status: the daemon and this workspace", st.get("daemon", {}).get("pid") and ws in paths, st)
    return sb


def processes(vs, sb, ws):
    pid_ = sb.process_start("echo up; read l; echo got-$l; echo oops >&2; exit 5")
    sb.process_input(pid_, "typed\n")
    out = err = b""
    o = e = 0
    for _ in range(30):
        r = sb.process_output(pid_, stdout_offset=o, stderr_offset=e, wait=2)
        out, err, o, e = out + r.stdout, err + r.stderr, r.stdout_offset, r.stderr_offset
        if not r.info.running and o == r.info.stdout_total and e == r.info.stderr_total:
            break
    report("process_start/input/output: its output as bytes across calls, and its exit code",
           out == b"up\ngot-typed\n" and err == b"oops\n" and r.info.exit_code == 5 and not r.info.running, (out, err, r))
    p2 = sb.process_start(["sleep", "100"])
    sb.process_signal(p2, "TERM")
    r = sb.process_output(p2, wait=5)
    report("process_signal: TERM ends it (exit 143)", r.info.exit_code == 143 and r.info.signal == 15, r)
    ok, e = expect_error(lambda: sb.process_input(p2, "x"), vs.ErrorCode.PROCESS_ENDED)
    report("process_input to an ended process raises 'process_ended'", ok, e)
    ids = [(p.process, p.running) for p in sb.process_list()]
    report("process_list: both, oldest first", ids[-2:] == [(pid_, False), (p2, False)], ids)


def bulk(sb, ws):
    data = os.urandom(10 * 1024 * 1024)
    t0 = time.monotonic()
    w = sb.file_write("bulk.bin", data)
    t1 = time.monotonic()
    c = sb.file_read("bulk.bin")
    t2 = time.monotonic()
    report("10 MiB of binary data written as a raw payload (%.0f ms)" % ((t1 - t0) * 1000),
           w.size == len(data) and w.sha256 == hashlib.sha256(data).hexdigest(), w)
    report("... read back whole and intact (%.0f ms)" % ((t2 - t1) * 1000), c.content == data and c.eof, len(c.content))
    with open(os.path.join(ws, "bulk.bin"), "rb") as f:
        report("... and the host sees the same bytes", f.read() == data)
    r = sb.terminal("sha256sum bulk.bin")
    report("... and so does the jail", hashlib.sha256(data).hexdigest().encode() in r.stdout, r)


def concurrent_edits(sb, ws):
    lines = ["line %02d\n" % i for i in range(16)]
    sb.file_write("shared.txt", "".join(lines))
    errors = []
    start = threading.Barrier(16)

    def edit(i):
        try:
            start.wait()
            sb.file_edit("shared.txt", "line %02d\n" % i, "edited %02d\n" % i)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    content = sb.file_read("shared.txt").text()
    report("16 threads editing one file at once: every edit lands (none lost)",
           not errors and content == "".join("edited %02d\n" % i for i in range(16)), (errors, content))


def refused(vs, sock, tmp):
    ws = make_ws(tmp, "broken", "[sandbox]\nro_path = []\n", {"f": "x"})
    sb = vs.Sandbox(socket=sock)
    ok, e = expect_error(lambda: sb.terminal("touch ran", workspace=ws), vs.ErrorCode.CONFIG_INVALID)
    report("a refused vectora.toml raises 'config_invalid' with the located reason; nothing ran",
           ok and "vectora.toml:2:1" in str(e) and not os.path.exists(os.path.join(ws, "ran")), e)
    sb.close()


def require_sandbox(vs, sock, tmp, sandboxed):
    """require_sandbox, per client and per call: the daemon refuses a call
    in an unsandboxed workspace before anything runs (a platform that only
    looked at ``sandboxed`` afterwards would have run it on the host)."""
    un = make_ws(tmp, "unsandboxed", None, {"f.txt": "original\n"})
    f = os.path.join(un, "f.txt")
    sb = vs.Sandbox(socket=sock, workspace=un)
    r = sb.terminal("touch control")
    report("control: without require_sandbox an unsandboxed workspace runs the command on the host, "
           "and only the result says so afterwards",
           r.ok and r.sandbox.sandboxed is False and os.path.exists(os.path.join(un, "control")), r)

    strict = vs.Sandbox(socket=sock, workspace=un, require_sandbox=True)
    calls = [
        ("terminal", lambda c, **k: c.terminal("touch ran-terminal", **k), "ran-terminal"),
        ("process_start", lambda c, **k: c.process_start("touch ran-process", **k), "ran-process"),
        ("file_write", lambda c, **k: c.file_write("ran-write", "x", **k), "ran-write"),
        ("file_edit", lambda c, **k: c.file_edit("f.txt", "original", "edited", **k), None),
        ("file_read", lambda c, **k: c.file_read("f.txt", **k), None),
        ("process_list", lambda c, **k: c.process_list(**k), None),
    ]
    for how, client, kw in (("per client (Sandbox(require_sandbox=True))", strict, {}),
                            ("per call (require_sandbox=True)", sb, {"require_sandbox": True})):
        for name, call, marker in calls:
            ok, e = expect_error(lambda: call(client, **kw), vs.ErrorCode.SANDBOX_REQUIRED)
            time.sleep(0.05 if name == "process_start" else 0)
            ran = marker and os.path.exists(os.path.join(un, marker))
            report("%s %s: an unsandboxed workspace raises 'sandbox_required' and nothing ran" % (how, name),
                   ok and not ran and open(f).read() == "original\n" and "unsandboxed" in str(e),
                   (e, "marker present" if ran else ""))
    # A call cannot lift the client's requirement.
    ok, e = expect_error(lambda: strict.terminal("touch ran-lifted", require_sandbox=False),
                         vs.ErrorCode.SANDBOX_REQUIRED)
    report("require_sandbox=False on one call does not lift the client's",
           ok and not os.path.exists(os.path.join(un, "ran-lifted")), e)
    r = strict.terminal("echo in-jail", workspace=sandboxed)
    report("a sandboxed workspace is served as before under require_sandbox",
           r.ok and r.stdout == b"in-jail\n" and r.sandbox.sandboxed, r)
    st = strict.status()
    report("status still answers a client that requires a sandbox", st.get("daemon", {}).get("pid"), st)
    for c in (sb, strict):
        c.close()


def default_socket(vs, tmp):
    """default_socket() is where the CLI (and the daemon) look: the CLI's
    help names its default."""
    cli = os.path.join(BUILD, "src/cli/vectora-sandbox")
    if not os.access(cli, os.X_OK):
        skip("default_socket() agrees with the CLI", "%s is not built" % cli)
        return
    py = shutil.which("python3", path="/usr/bin") or sys.executable
    src = os.path.dirname(os.path.dirname(vs.__file__))
    mine = os.path.join(tmp, "xdg-mine")
    os.makedirs(mine, mode=0o700)
    other_uid = 65534 if ROOT else None
    if other_uid is not None:
        os.chown(mine, other_uid, other_uid)
    cases = [("$VECTORA_SANDBOX_SOCKET", {"VECTORA_SANDBOX_SOCKET": os.path.join(tmp, "named.sock")}, None),
             ("$XDG_RUNTIME_DIR unset", {}, None),
             ("$XDG_RUNTIME_DIR of this user", {"XDG_RUNTIME_DIR": mine}, other_uid),
             ("$XDG_RUNTIME_DIR not this user's", {"XDG_RUNTIME_DIR": "/"}, other_uid)]
    if ROOT:
        cases.append(("root with a $XDG_RUNTIME_DIR", {"XDG_RUNTIME_DIR": mine}, None))
    for what, extra, uid in cases:
        env = {k: v for k, v in os.environ.items() if k not in ("VECTORA_SANDBOX_SOCKET", "XDG_RUNTIME_DIR")}
        env.update(extra)
        pre = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--"] if uid is not None else []
        c = subprocess.run(pre + [cli, "help"], capture_output=True, text=True, env=env, timeout=30)
        m = re.search(r"default socket,\s+(\S+)\);", c.stdout)
        p = subprocess.run(pre + [py, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import vectora_sandbox; "
                                  "print(vectora_sandbox.default_socket())", src],
                           capture_output=True, text=True, env=env, timeout=30)
        report("default_socket() is the CLI's default socket: %s" % what,
               m and p.stdout.strip() == m.group(1), (c.stdout[:400], p.stdout, p.stderr))


def unreachable(vs, tmp):
    sb = vs.Sandbox(socket=os.path.join(tmp, "nobody.sock"))
    try:
        sb.terminal("true", workspace=tmp)
        ok, e = False, "no exception"
    except vs.DaemonUnavailable as ex:
        ok, e = ex.code is vs.ErrorCode.DAEMON_UNAVAILABLE and isinstance(ex, ConnectionError) and "nobody.sock" in str(ex), ex
    report("no daemon: DaemonUnavailable (a ConnectionError) naming the socket", ok, e)


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-py-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    d = None
    try:
        site = install(tmp)
        sys.path.insert(0, site or os.path.join(CLIENT, "src"))
        import vectora_sandbox as vs
        report("the tests use the installed package" if site else "the tests use the source tree's package",
               os.path.dirname(vs.__file__).startswith(site or CLIENT), vs.__file__)
        untyped = []
        for name, fn in vars(vs.Sandbox).items():
            if callable(fn) and not name.startswith("_") or name == "__init__":
                sig = inspect.signature(fn)
                untyped += ["%s.%s" % (name, p) for p, v in sig.parameters.items()
                            if p != "self" and v.annotation is inspect.Parameter.empty]
                if sig.return_annotation is inspect.Signature.empty:
                    untyped.append(name + " -> ?")
                if not fn.__doc__ and name != "__init__":
                    untyped.append(name + " (no docstring)")
        report("every public method is annotated and documented", not untyped, untyped)
        known, new = vs.SandboxError("denied", "m"), vs.SandboxError("from_a_newer_daemon", "m")
        report("an error's code is an ErrorCode (also equal to its name on the wire); an unknown one stays a str",
               known.code is vs.ErrorCode.DENIED and known.code == "denied" and str(known) == "denied: m"
               and new.code == "from_a_newer_daemon" and str(new) == "from_a_newer_daemon: m",
               (known.code, str(known), new.code))
        d = Daemon(tmp)
        ws = make_ws(tmp, "ws", '[sandbox]\nrw_paths = ["."]\nmask = [".env"]\n',
                     {".env": "TOPSECRET=1\n", "src/main.c": "int main(void) { return 0; }\n"})
        with tools(vs, d.sock, ws) as sb:
            bulk(sb, ws)
            processes(vs, sb, ws)
            concurrent_edits(sb, ws)
        refused(vs, d.sock, tmp)
        for case, args in ((require_sandbox, (vs, d.sock, tmp, ws)), (default_socket, (vs, tmp))):
            try:
                case(*args)
            except Exception:  # noqa: BLE001 - reported
                import traceback
                report(case.__name__, False, traceback.format_exc())
        unreachable(vs, tmp)
    finally:
        if d:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
