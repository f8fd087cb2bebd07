#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The modal backend, as far as it can be tested without reaching Modal:
the bridge's own suite (node --test, with the SDK installed from the
lockfile), `check` and `plan` for backend = "modal", and the failure path
for real: no credentials, or credentials and no route to Modal, refuse with
exit 125 and sandbox_unavailable within bounded time, in embedded mode and
through the daemon, and nothing ever runs unsandboxed.

TAP, a subtest per case (tests/lib/vtest.py); VECTORA_TEST_STRICT=1 turns
skips into failures."""

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("VECTORA_SOURCE_ROOT") or os.path.join(HERE, "../..")
BUILD = os.environ.get("VECTORA_BUILD_ROOT") or os.path.join(SRC, "build")
CLI = os.path.join(BUILD, "src/cli/vectora-sandbox")
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
BRIDGE_DIR = os.path.join(SRC, "bridge/modal")
STRICT = os.environ.get("VECTORA_TEST_STRICT") == "1"
ROOT = os.geteuid() == 0
OWNER = pwd.getpwnam("nobody") if ROOT else pwd.getpwuid(os.geteuid())

sys.path.insert(0, os.path.join(HERE, "../lib"))
from vtest import Daemon, Skip, Tap  # noqa: E402

tap = Tap()


def case(fn):
    tap.case(fn, name=fn.__name__[5:])


def need_node():
    if not shutil.which("node"):
        raise Skip("node is not installed (scripts/install-deps installs it)")
    if not os.path.exists(os.path.join(BRIDGE_DIR, "node_modules/modal/package.json")):
        raise Skip("the bridge's dependencies are not installed (scripts/install-deps)")


TMP = tempfile.mkdtemp(prefix="vs-modal-")
os.chmod(TMP, 0o755)
HOME = os.path.join(TMP, "home")  # no ~/.modal.toml here
os.makedirs(HOME)
os.chmod(HOME, 0o755)


def base_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODAL_") and k != "VECTORA_SANDBOX_SOCKET"}
    env["HOME"] = HOME
    env["XDG_RUNTIME_DIR"] = ""
    env.update(extra)
    return env


def make_ws(name, toml, files=None):
    d = os.path.join(TMP, name)
    os.makedirs(d)
    with open(os.path.join(d, "vectora.toml"), "w") as f:
        f.write(toml)
    for rel, text in (files or {}).items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    if ROOT:
        for root, dirs, fs in os.walk(d):
            for x in [root] + [os.path.join(root, y) for y in dirs + fs]:
                os.lchown(x, OWNER.pw_uid, OWNER.pw_gid)
    return d


MODAL_TOML = """[sandbox]
backend = "modal"
mask = [".env", "**/*.pem", "**/.ssh/**"]
[sandbox.modal]
image = "debian:12"
region = "us-east"
cpu = 1.5
memory = 2048
"""
WS = make_ws("ws", MODAL_TOML, {"a.txt": "hello\n", ".env": "SECRET=1\n", "k/key.pem": "pem\n",
                                "sub/.ssh/id_rsa": "key\n", "src/main.c": "int main;\n"})


def cli(*args, env=None, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run([CLI, *args], capture_output=True, text=True, errors="replace", env=env or base_env(),
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return p, time.monotonic() - t0


def test_bridge_suite():
    need_node()
    p = subprocess.run(["node", "--test", "test/"], cwd=BRIDGE_DIR, capture_output=True, text=True, timeout=300,
                       env=base_env())
    m = re.search(r"^# pass (\d+)$", p.stdout, re.M)
    f = re.search(r"^# fail (\d+)$", p.stdout, re.M)
    assert p.returncode == 0 and m and f and f.group(1) == "0", p.stdout[-4000:] + p.stderr[-2000:]
    print("# bridge: %s node tests passed" % m.group(1))


def test_check_accepts_modal():
    p, _ = cli("check", "-w", WS)
    assert p.returncode == 0, p.stderr
    assert re.search(r"^backend\s+modal$", p.stdout, re.M), p.stdout
    assert "image=debian:12" in p.stdout and "sync=upload" in p.stdout, p.stdout


def test_check_refuses_modal_without_image():
    d = make_ws("noimage", '[sandbox]\nbackend = "modal"\n')
    p, _ = cli("check", "-w", d)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert 'vectora.toml:1:1: sandbox: backend = "modal" needs sandbox.modal.image' in p.stderr, p.stderr


def test_check_refuses_volume_sync_without_volume():
    d = make_ws("novol", '[sandbox]\nbackend = "modal"\n[sandbox.modal]\nimage = "x"\nsync = "volume"\n')
    p, _ = cli("check", "-w", d)
    assert p.returncode == 2 and 'sync = "volume" needs volume = "NAME"' in p.stderr, p.stderr


def plan_argv(out):
    line = [l for l in out.splitlines() if l and not l.startswith("#")][-1]
    return line.split(" ")


def test_plan_shows_bridge_and_sandbox():
    need_node()
    env = base_env(MODAL_TOKEN_ID="ak-plan-id", MODAL_TOKEN_SECRET="as-plan-secret")
    p, _ = cli("plan", "-w", WS, env=env)
    assert p.returncode == 0, p.stderr
    o = p.stdout
    assert '# modal backend: a Modal Sandbox in app "vectora-sandbox" from registry image "debian:12"' in o, o
    assert "# sandbox: lifetime 3600s, region us-east, cpu 1.5, memory 2048 MiB, gpu none, outbound network allowed" in o, o
    assert "ak-plan-id" not in o and "as-plan-secret" not in o, "credentials on the command line"
    argv = plan_argv(o)
    assert argv[1].endswith("bridge/modal/bridge.mjs"), argv
    for a in ("--app=vectora-sandbox", "--image=debian:12", "--timeout=3600", "--region=us-east", "--cpu=1.5",
              "--memory=2048", "--network=on", "--gpu=off", "--workspace=" + os.path.realpath(WS), "--sync=upload"):
        assert a in argv, (a, argv)
    # The manifest: masked files are never in it.
    man = [a for a in argv if a.startswith("--manifest=")][0].split("=", 1)[1]
    st = os.stat(man)
    assert st.st_mode & 0o777 == 0o600, oct(st.st_mode)
    m = json.load(open(man))
    paths = {e["path"][len(os.path.realpath(WS)):] for e in m["entries"]}
    assert {"", "/a.txt", "/src", "/src/main.c", "/vectora.toml", "/k", "/sub", "/sub/.ssh"} <= paths, paths
    for secret in ("/.env", "/k/key.pem", "/sub/.ssh/id_rsa"):
        assert secret not in paths, secret
    assert os.path.realpath(WS) + "/vectora.toml" in m["protected"]


def test_protected_set_is_the_jail_plans():
    """The manifest's protected list (never written back by the bridge,
    refused by the worker) is the jail plan's, as on every other backend:
    with .git/hooks a symlink, its target too; what a protect glob matches
    below the workspace too. Before, modal had only the fixed list, so a
    hook written through the symlink in the Sandbox came back to the host."""
    need_node()
    d = make_ws("gitws", MODAL_TOML, {"a.txt": "x\n", ".git/HEAD": "ref: refs/heads/main\n",
                                      ".git/real-hooks/README": "hooks\n", "sub/.envrc": "export A=1\n"})
    os.symlink("real-hooks", os.path.join(d, ".git/hooks"))
    p, _ = cli("plan", "-w", d, env=base_env(MODAL_TOKEN_ID="ak-x", MODAL_TOKEN_SECRET="as-x"))
    assert p.returncode == 0, p.stderr
    man = [a for a in plan_argv(p.stdout) if a.startswith("--manifest=")][0].split("=", 1)[1]
    prot = set(json.load(open(man))["protected"])
    ws = os.path.realpath(d)
    for rel in ("vectora.toml", ".git/hooks", ".git/real-hooks", ".git/config", "sub/.envrc"):
        assert os.path.join(ws, rel) in prot, (rel, sorted(prot))


def test_git_init_repository_made_on_the_host():
    """git_init = true and no .git: the host's git makes the repository
    before the Sandbox starts (the files live on this host), so its config
    and hooks are in the protected set the bridge never writes back. Left
    to the Sandbox, a config or hook the agent wrote there came back."""
    need_node()
    d = make_ws("gitinit", MODAL_TOML.replace("[sandbox]\n", "[sandbox]\ngit_init = true\n", 1), {"a.txt": "x\n"})
    p, _ = cli("plan", "-w", d, env=base_env(MODAL_TOKEN_ID="ak-x", MODAL_TOKEN_SECRET="as-x"))
    assert p.returncode == 0, p.stderr
    ws = os.path.realpath(d)
    assert os.path.isfile(os.path.join(ws, ".git/HEAD")), "no repository was made"
    assert os.stat(os.path.join(ws, ".git")).st_uid == os.stat(ws).st_uid
    m = json.load(open([a for a in plan_argv(p.stdout) if a.startswith("--manifest=")][0].split("=", 1)[1]))
    for rel in (".git/config", ".git/hooks", ".git/info/attributes"):
        assert os.path.join(ws, rel) in m["protected"], (rel, sorted(m["protected"]))
    assert os.path.join(ws, ".git/HEAD") in {e["path"] for e in m["entries"]}


def test_plan_lockdown_blocks_network():
    need_node()
    d = make_ws("lock", '[sandbox]\nbackend = "modal"\nlockdown = true\nnetwork = true\n[sandbox.modal]\nimage = "debian:12"\n')
    p, _ = cli("plan", "-w", d)
    if p.returncode == 125 and "lockdown refuses" in p.stderr:
        raise Skip("lockdown is refused on this host before the backend: " + p.stderr.strip())
    assert p.returncode == 0, p.stderr
    assert "--network=off" in plan_argv(p.stdout) and "outbound network blocked" in p.stdout, p.stdout


def test_exec_without_credentials_refuses_fast():
    need_node()
    p, dt = cli("exec", "-w", WS, "--", "sh", "-c", "echo RAN-UNSANDBOXED")
    assert p.returncode == 125, (p.returncode, p.stdout, p.stderr)
    assert "RAN-UNSANDBOXED" not in p.stdout
    assert p.stderr.startswith("vectora-sandbox: exec: sandbox_unavailable: the jail could not start: "
                               "vectora-modal-bridge: no Modal credentials: "
                               "MODAL_TOKEN_ID/MODAL_TOKEN_SECRET are not in the daemon's environment"), p.stderr
    assert dt < 10, dt


def test_exec_with_credentials_and_no_network_refuses_in_bounded_time():
    need_node()
    p, dt = cli("exec", "-w", WS, "--", "sh", "-c", "echo RAN-UNSANDBOXED",
                env=base_env(MODAL_TOKEN_ID="ak-fake", MODAL_TOKEN_SECRET="as-fake"))
    assert p.returncode == 125, (p.returncode, p.stdout, p.stderr)
    assert "RAN-UNSANDBOXED" not in p.stdout
    assert "vectora-modal-bridge: " in p.stderr and "as-fake" not in p.stderr, p.stderr
    assert dt < 30, dt


def daemon_call(sock, req, timeout=60):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock)
    s.sendall((json.dumps(req) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return json.loads(buf)


def test_daemon_without_credentials_reports_sandbox_unavailable():
    need_node()
    d = Daemon(TMP, env=base_env(), log_level=None)
    sock = d.sock
    try:
        t0 = time.monotonic()
        r = daemon_call(sock, {"tool": "terminal", "workspace": os.path.realpath(WS),
                               "command": "echo RAN-UNSANDBOXED"})
        dt = time.monotonic() - t0
        text = json.dumps(r)
        assert "RAN-UNSANDBOXED" not in text, text
        err = r.get("error") or {}
        assert err.get("code") == "sandbox_unavailable", r
        assert "no Modal credentials" in err.get("message", ""), r
        assert dt < 10, dt
        # The CLI through the daemon: exit 125 and the same reason.
        p, dt = cli("--socket", sock, "run", "-w", WS, "echo RAN-UNSANDBOXED")
        assert p.returncode == 125 and "RAN-UNSANDBOXED" not in p.stdout, (p.returncode, p.stdout, p.stderr)
        assert "no Modal credentials" in p.stderr, p.stderr
        assert dt < 10, dt
    finally:
        d.stop()


for t in [test_bridge_suite, test_check_accepts_modal, test_check_refuses_modal_without_image,
          test_check_refuses_volume_sync_without_volume, test_plan_shows_bridge_and_sandbox,
          test_protected_set_is_the_jail_plans, test_git_init_repository_made_on_the_host,
          test_plan_lockdown_blocks_network, test_exec_without_credentials_refuses_fast,
          test_exec_with_credentials_and_no_network_refuses_in_bounded_time,
          test_daemon_without_credentials_reports_sandbox_unavailable]:
    case(t)
shutil.rmtree(TMP, ignore_errors=True)
sys.exit(tap.finish())
