#!/usr/bin/env python3
"""The CLI's verbs in embedded mode (no daemon): check, plan, exec, run,
read, write, edit, with the exit codes DESIGN.md fixes (the command's own
status, 128+N for a signal, 125 when the sandbox refused, 2 for a usage
error and from check on a refused config, 1 when the tool itself failed);
then the first hour of a new user: stdin, whole-file reads, parents,
options anywhere, --json on every verb, help, init, --require-sandbox,
colour, completion, the daemon's start (detach, log, journald, readiness,
the default socket the CLI finds) and the README's daemon section followed
literally as root and as an ordinary user. TAP output."""
import hashlib
import json
import os
import pty
import re
import signal
import socket
import shutil
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("VECTORA_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "../../build"))
CLI = os.path.join(BUILD, "src/cli/vectora-sandbox")
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
ROOT = os.geteuid() == 0
STRICT = os.environ.get("VECTORA_TEST_STRICT") == "1"


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402

tap = vtest.Tap()
report, skip = tap.ok, tap.skip


def Daemon(tmp, name="d"):
    """A daemon in the foreground on a private socket (tests/lib/vtest.py),
    for the CLI's daemon mode: env names its socket."""
    d = vtest.Daemon(tmp, name, env=base_env(), audit=False, log_level=None)
    d.env = {"VECTORA_SANDBOX_SOCKET": d.sock}
    return d


def base_env(env=None):
    e = {k: v for k, v in os.environ.items()
         if k not in ("VECTORA_SANDBOX_SOCKET", "VECTORA_REQUIRE_SANDBOX", "NO_COLOR", "JOURNAL_STREAM", "NOTIFY_SOCKET")}
    e.update(env or {})
    return e


def cli(*args, stdin=None, env=None, daemon=False, text=True):
    """Embedded unless daemon (then env names the socket): --no-daemon keeps a
    daemon someone runs at the default socket out of the embedded tests."""
    pre = [] if daemon else ["--no-daemon"]
    return subprocess.run([CLI] + pre + list(args), input=stdin if stdin is not None else ("" if text else b""),
                          capture_output=True, text=text, env=base_env(env), timeout=120)


def jload(s):
    try:
        return json.loads(s)
    except ValueError:
        return None


def cli_with_fd(fd, *args):
    """The CLI started with fd left open, as by a shell's `exec 9<~`."""
    e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    return subprocess.run([CLI] + list(args), capture_output=True, text=True, env=e, timeout=60, pass_fds=(fd,))


def ws(tmp, name, toml, files=None):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    if toml is not None:
        with open(os.path.join(d, "vectora.toml"), "w") as f:
            f.write(toml)
    for k, v in (files or {}).items():
        p = os.path.join(d, k)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(v)
    if ROOT:
        # The jail never runs as host root: give the workspace an owner.
        for root, dirs, fs in os.walk(d):
            for x in dirs + fs:
                os.lchown(os.path.join(root, x), 65534, 65534)
        os.chown(d, 65534, 65534)
    return d


SANDBOX = '[sandbox]\nrw_paths = ["."]\nmask = [".env"]\nnetwork = false\n'


def t_stdin(tmp, sb, plain):
    r = cli("run", "-w", sb, "cat", stdin="hello\n")
    report("run: stdin reaches the command (echo hello | run cat)", r.returncode == 0 and r.stdout == "hello\n", r)
    r = cli("exec", "-w", sb, "--", "wc", "-c", stdin="x" * 100000)
    report("exec: 100 kB of stdin arrive whole", r.returncode == 0 and r.stdout.strip() == "100000", r)
    r = cli("run", "-w", plain, "cat", stdin="host\n")
    report("run unsandboxed: stdin too", r.returncode == 0 and r.stdout == "host\n", r)
    r = cli("run", "--no-stdin", "-w", sb, "cat; echo end", stdin="dropped\n")
    report("run --no-stdin: the command reads /dev/null", r.returncode == 0 and r.stdout == "end\n", r)
    # A terminal as stdin is not read (it would wait for the user): /dev/null.
    mfd, sfd = pty.openpty()
    try:
        p = subprocess.run([CLI, "--no-daemon", "run", "-w", sb, "cat; echo end"], stdin=sfd, capture_output=True,
                           text=True, env=base_env(), timeout=30)
        report("run with a terminal as stdin: not read, the command gets /dev/null",
               p.returncode == 0 and p.stdout == "end\n", p)
    except subprocess.TimeoutExpired as e:
        report("run with a terminal as stdin: not read, the command gets /dev/null", False, e)
    finally:
        os.close(mfd)
        os.close(sfd)


def big_file(ws_dir, name, size):
    h = hashlib.sha256()
    block = bytes(range(256)) * 4096  # 1 MiB
    with open(os.path.join(ws_dir, name), "wb") as f:
        left = size
        i = 0
        while left:
            b = block[:min(left, len(block))]
            b = bytes([i % 251]) + b[1:]  # each MiB differs
            f.write(b)
            h.update(b)
            left -= len(b)
            i += 1
    if ROOT:
        os.chown(os.path.join(ws_dir, name), 65534, 65534)
    return h.hexdigest()


def t_read_whole(tmp, sb, env=None, daemon=False, label="embedded"):
    size = 100 * 1000 * 1000
    digest = big_file(sb, "big-%s.bin" % label, size)
    r = cli("read", "-w", sb, "big-%s.bin" % label, text=False, env=env, daemon=daemon)
    report("read of a 100 MB file (%s): every byte, exit 0" % label,
           r.returncode == 0 and len(r.stdout) == size and hashlib.sha256(r.stdout).hexdigest() == digest,
           (r.returncode, len(r.stdout), r.stderr[-300:]))
    r = cli("read", "-w", sb, "big-%s.bin" % label, "--offset", str(size - 10), text=False, env=env, daemon=daemon)
    report("read --offset (%s): from there to the end" % label, r.returncode == 0 and len(r.stdout) == 10,
           (r.returncode, len(r.stdout)))
    r = cli("read", "-w", sb, "big-%s.bin" % label, "--offset", "3", "--limit", str(70 * 1024 * 1024), text=False,
            env=env, daemon=daemon)
    report("read --limit over one 64 MiB piece (%s): exactly that many bytes" % label,
           r.returncode == 0 and len(r.stdout) == 70 * 1024 * 1024, (r.returncode, len(r.stdout)))
    os.unlink(os.path.join(sb, "big-%s.bin" % label))


def t_write_parents(sb):
    r = cli("write", "-w", sb, "newdir/sub/a.txt", stdin="deep\n")
    p = os.path.join(sb, "newdir/sub/a.txt")
    report("write creates missing parent directories",
           r.returncode == 0 and os.path.exists(p) and open(p).read() == "deep\n", r)
    r = cli("write", "-w", sb, "other/b.txt", "--no-parents", stdin="x")
    report("write --no-parents: a missing parent is not_found, exit 1",
           r.returncode == 1 and "not_found" in r.stderr and not os.path.exists(os.path.join(sb, "other")), r)


def t_exit_codes(sb):
    cases = [
        (["run", "-w", sb, "--bogus", "true"], "unknown option"),
        (["read", "-w", sb], "missing"),
        (["read", "-w", sb, "f.txt", "--limit", "abc"], "--limit"),
        (["read", "-w", sb, "f.txt", "--offset", "-1"], "--offset"),
        (["run", "-w", sb, "--timeout", "0", "true"], "--timeout"),
        (["run", "-w", sb, "echo", "two"], "one argument"),
        (["frobnicate"], "unknown verb"),
        (["exec", "-w", sb], "missing a command"),
        (["edit", "-w", sb, "f.txt", "--old", "x"], "--new"),
        (["run", "-w"], "needs an argument"),
    ]
    for args, want in cases:
        r = cli(*args)
        report("usage error exits 2 and says so: %s" % " ".join(a for a in args if a != sb),
               r.returncode == 2 and want in r.stderr and r.stderr.startswith("vectora-sandbox: "), r)
    r = cli("read", "-w", sb, "no-such-file")
    report("read of a missing file: exit 1 (the tool's failure), code named", r.returncode == 1 and "not_found" in r.stderr, r)
    r = cli("edit", "-w", sb, "f.txt", "--old", "absent text", "--new", "x")
    report("edit of an absent text: exit 1, edit_not_found", r.returncode == 1 and "edit_not_found" in r.stderr, r)
    r = cli("read", "-w", sb, ".env")
    report("read of a masked path: exit 125 (denied)", r.returncode == 125 and "denied" in r.stderr, r)
    r = cli("run", "-w", os.path.join(sb, "no-such-dir"), "true")
    report("a -w that does not exist: 125, never an unsandboxed run",
           r.returncode == 125 and "no-such-dir" in r.stderr, r)


def t_subdirectory(sb, env=None, daemon=False, label="embedded"):
    sub = os.path.join(sb, "subdir")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "s.txt"), "w") as f:
        f.write("in sub\n")
    if ROOT:
        os.chown(sub, 65534, 65534)
        os.chown(os.path.join(sub, "s.txt"), 65534, 65534)
    r = cli("run", "-w", sub, "pwd; cat s.txt", env=env, daemon=daemon)
    report("-w a subdirectory (%s): its workspace's jail, cwd and paths from the subdirectory" % label,
           r.returncode == 0 and r.stdout == sub + "\nin sub\n", r)
    r = cli("read", "-w", sub, "s.txt", env=env, daemon=daemon)
    r2 = cli("write", "-w", sub, "w/new.txt", stdin="x\n", env=env, daemon=daemon)
    report("read/write -w a subdirectory (%s): relative to it" % label,
           r.stdout == "in sub\n" and r2.returncode == 0 and os.path.exists(os.path.join(sub, "w/new.txt")), (r, r2))


def t_concurrent_edits(tmp, rounds=50):
    """Two embedded edits of one file at once, each its own process and
    jail: both land, every round (the core's file_edit writes only over the
    content it read, and applies the edit again when the other got in)."""
    d = ws(tmp, "edits", SANDBOX, {"e.txt": "".join("a%d b%d\n" % (i, i) for i in range(rounds))})
    lost, retries = [], 0
    for i in range(rounds):
        # "a7 " -> "A7 " and " b7\n" -> " B7\n": each unique in the file.
        edits = [("a%d " % i, "A%d " % i), (" b%d\n" % i, " B%d\n" % i)]
        ps = [subprocess.Popen([CLI, "--no-daemon", "edit", "--json", "-w", d, "e.txt", "--old", o, "--new", n],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=base_env()) for o, n in edits]
        outs = [p.communicate(timeout=120) + (p.returncode,) for p in ps]
        for out, err, rc in outs:
            j = jload(out) or {}
            retries += j.get("retries", 0)
            if rc != 0:
                lost.append((i, rc, err))
    with open(os.path.join(d, "e.txt")) as f:
        got = f.read()
    want = "".join("A%d B%d\n" % (i, i) for i in range(rounds))
    report("two concurrent embedded edits of one file both land, %d rounds (%d retries)" % (rounds, retries),
           not lost and got == want, (lost[:3], got[:400]))


def t_options_anywhere(sb):
    r = cli("run", "pwd", "-w", sb)
    report("run 'pwd' -w DIR: options after the command line", r.returncode == 0 and r.stdout.strip() == sb, r)
    r = cli("-w", sb, "run", "pwd")
    report("-w before the verb", r.returncode == 0 and r.stdout.strip() == sb, r)
    r = cli("read", "f.txt", "-w", sb, "--limit", "3")
    report("read PATH -w DIR --limit N", r.returncode == 0 and r.stdout == "one", r)
    r = cli("exec", "-w", sb, "sh", "-c", "echo $0 $1", "-w", "x")
    report("exec: everything from the command on is the command's (its own -w)",
           r.returncode == 0 and r.stdout.strip() == "-w x", r)


def t_messages(sb):
    r = cli("edit", "-w", sb, "f.txt", "--old", "o", "--new", "0")
    report("edit: a non-unique text suggests --all (the CLI's flag), not replace_all",
           r.returncode == 1 and "--all" in r.stderr and "replace_all" not in r.stderr, r)
    r = cli("run", "-w", os.path.join(sb, "nope"), "true")
    report("run's errors name run, not exec", r.stderr.startswith("vectora-sandbox: run:"), r)
    r = cli("read", "-w", sb, "../../etc/passwd")
    report("read outside the workspace: denied, the path shown normalized (no '//')",
           r.returncode == 125 and "//" not in r.stderr and "/etc/passwd" in r.stderr, r)
    r = cli("read", "-w", sb, "k/../f.txt")
    report("read of sub/../file: the file (.. after a directory normalizes cleanly)", r.returncode == 0 and r.stdout == "one two two\n", r)
    r = cli("read", "-w", sb, "k/../.env")
    report("read of sub/../.env: still masked", r.returncode == 125 and "masked" in r.stderr, r)


def t_json_every_verb(tmp, sb, plain):
    ini = ws(tmp, "json-init", None)
    calls = {
        "check": ["check", "-w", sb],
        "plan": ["plan", "-w", sb],
        "exec": ["exec", "--json", "-w", sb, "--", "echo", "hi"],
        "run": ["run", "-w", sb, "echo hi"],
        "read": ["read", "-w", sb, "f.txt"],
        "write": ["write", "-w", sb, "j.txt"],
        "edit": ["edit", "-w", sb, "j.txt", "--old", "a", "--new", "b"],
        "init": ["init", "-w", ini],
        "help": ["help"],
        "status": ["status"],
    }
    for verb, args in calls.items():
        r = cli(*args, *([] if "--json" in args else ["--json"]), stdin="a\n")
        j = jload(r.stdout)
        report("--json on %s: one JSON object on stdout" % verb, isinstance(j, dict) and "ok" in j, (r.stdout[:300], r.stderr))
    r = cli("exec", "-w", sb, "--json", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    j = jload(r.stdout) or {}
    report("exec --json: output and status as fields, exit status kept",
           r.returncode == 3 and j.get("stdout") == "out\n" and j.get("stderr") == "err\n" and j.get("exit_code") == 3
           and j.get("sandboxed") is True, r)
    r = cli("read", "-w", sb, "f.txt", "--json")
    j = jload(r.stdout) or {}
    report("read --json: content, size, sha256", j.get("content") == "one two two\n" and j.get("size") == 12 and
           len(j.get("sha256", "")) == 64, r.stdout)
    r = cli("read", "-w", sb, "missing.txt", "--json")
    j = jload(r.stdout) or {}
    report("read --json of a missing file: the API's error shape, exit 1",
           r.returncode == 1 and j.get("ok") is False and j.get("error", {}).get("code") == "not_found", r)
    r = cli("status", "--json")
    j = jload(r.stdout) or {}
    report("status --json without a daemon: still JSON (daemon_unreachable), exit 125",
           r.returncode == 125 and j.get("error", {}).get("code") == "daemon_unreachable", r)
    bad = ws(tmp, "json-bad", "[sandbox]\nrw_paths = 3\n")
    r = cli("check", "-w", bad, "--json")
    j = jload(r.stdout) or {}
    report("check --json of a refused config: the API's error shape (config_invalid, located), exit 2",
           r.returncode == 2 and j.get("ok") is False and j["error"]["code"] == "config_invalid" and
           j["error"]["message"].startswith("vectora.toml:2:"), r)
    r = cli("run", "-w", sb, "--bogus", "x", "--json")
    j = jload(r.stdout) or {}
    report("a usage error with --json: JSON too (code usage), exit 2",
           r.returncode == 2 and j.get("error", {}).get("code") == "usage", r)


def t_help():
    r = cli("help")
    verbs = ["check", "plan", "exec", "run", "read", "write", "edit", "shell", "status", "mcp", "allow", "init", "help"]
    report("help lists every verb", r.returncode == 0 and all(re.search(r"^  %s " % v, r.stdout, re.M) for v in verbs), r.stdout)
    j = jload(cli("help", "--json").stdout) or {"verbs": []}
    bad = []
    for v in j["verbs"]:
        h1 = cli("help", v["name"])
        h2 = cli(v["name"], "--help")
        if h1.returncode or h1.stdout != h2.stdout or h2.returncode:
            bad.append((v["name"], "help VERB != VERB --help"))
        for o in v["options"]:
            if "--" + o["name"] not in h1.stdout:
                bad.append((v["name"], o["name"]))
    report("help VERB and VERB --help agree and list every option the verb takes", j["verbs"] and not bad, bad)
    r = cli("help", "read")
    report("help read shows the exit statuses", "125" in r.stdout and "not_found" in r.stdout, r.stdout)
    r = cli("help", "nosuchverb")
    report("help of an unknown verb: usage error, exit 2", r.returncode == 2, r)
    # Every option a verb's help lists is accepted by it.
    r = cli("read", "-w", "/nonexistent", "x", "--offset", "1", "--limit", "1", "--require-sandbox", "--json")
    report("the options help lists are accepted", r.returncode == 125, r)


def t_init(tmp):
    d = ws(tmp, "init", None)
    r = cli("init", "-w", d)
    p = os.path.join(d, "vectora.toml")
    text = open(p).read() if os.path.exists(p) else ""
    report("init writes vectora.toml", r.returncode == 0 and text.startswith("#") and "[sandbox]" in text, r)
    keys = ["enabled", "backend", "rw_paths", "ro_paths", "mask", "no_gpu", "lockdown", "network", "idle_timeout",
            "timeout", "max_output", "pids", "memory"]
    uncommented = [k for k in keys if not re.search(r"(#[^\n]*\n%s =|^%s = [^\n]*#)" % (k, k), text, re.M)]
    report("init: every key set and commented", not uncommented, uncommented)
    j = jload(cli("check", "-w", d, "--json").stdout) or {}
    report("init: safe defaults (sandboxed, network off, .env and keys masked, no GPU)",
           j.get("sandboxed") is True and j.get("network") is False and ".env" in j.get("mask", []) and
           "**/*.pem" in j.get("mask", []) and j.get("no_gpu") is True, j)
    r = cli("run", "-w", d, "echo jailed")
    report("init: the workspace then runs jailed", r.returncode == 0 and r.stdout == "jailed\n", r)
    with open(p, "a") as f:
        f.write("# mine\n")
    r = cli("init", "-w", d)
    report("init over an existing vectora.toml: kept, exit 1 (exists)",
           r.returncode == 1 and "exists" in r.stderr and open(p).read().endswith("# mine\n"), r)
    r = cli("init", "-w", d, "--force")
    report("init --force replaces it", r.returncode == 0 and not open(p).read().endswith("# mine\n"), r)


def t_require_sandbox(tmp, sb, plain):
    marker = os.path.join(plain, "ran")
    r = cli("run", "-w", plain, "--require-sandbox", "touch ran")
    report("--require-sandbox in an unsandboxed workspace: 125, nothing ran",
           r.returncode == 125 and "sandbox_required" in r.stderr and not os.path.exists(marker), r)
    r = cli("run", "-w", plain, "touch ran", env={"VECTORA_REQUIRE_SANDBOX": "1"})
    report("VECTORA_REQUIRE_SANDBOX=1: the same", r.returncode == 125 and not os.path.exists(marker), r)
    for verb in (["read", "f.txt"], ["write", "x.txt"], ["edit", "f.txt", "--old", "h", "--new", "j"], ["check"], ["plan"]):
        r = cli(*verb, "-w", plain, "--require-sandbox", stdin="x")
        report("--require-sandbox refuses %s in an unsandboxed workspace" % verb[0], r.returncode == 125, r)
    off = ws(tmp, "req-off", "[sandbox]\nenabled = false\n")
    r = cli("run", "-w", off, "--require-sandbox", "true")
    report("--require-sandbox: enabled = false is refused too", r.returncode == 125, r)
    r = cli("run", "-w", sb, "--require-sandbox", "echo ok")
    report("--require-sandbox in a sandboxed workspace runs", r.returncode == 0 and r.stdout == "ok\n", r)
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "terminal", "arguments": {"command": "touch ran-mcp"}}}]
    r = cli("mcp", "-w", plain, "--require-sandbox", stdin="".join(json.dumps(m) + "\n" for m in msgs))
    replies = [jload(l) or {} for l in r.stdout.splitlines()]
    call = [x for x in replies if x.get("id") == 2]
    report("mcp --require-sandbox: a tool call in an unsandboxed workspace is an error result, nothing ran",
           call and call[0].get("result", {}).get("isError") is True and "sandbox_required" in json.dumps(call[0])
           and not os.path.exists(os.path.join(plain, "ran-mcp")), r)
    r = cli("run", "-w", plain, "touch ran", env={"VECTORA_REQUIRE_SANDBOX": "0"})
    report("VECTORA_REQUIRE_SANDBOX=0 does not require", r.returncode == 0 and os.path.exists(marker), r)


def t_color(sb):
    def on_pty(env):
        mfd, sfd = pty.openpty()
        try:
            p = subprocess.run([CLI, "--no-daemon", "read", "-w", sb, "no-such"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=sfd, env=base_env(env), timeout=30)
            os.close(sfd)
            sfd = -1
            out = b""
            while True:
                try:
                    k = os.read(mfd, 4096)
                except OSError:
                    break
                if not k:
                    break
                out += k
            return out.decode(errors="replace")
        finally:
            os.close(mfd)
            if sfd >= 0:
                os.close(sfd)
    out = on_pty({"TERM": "xterm"})
    report("colour on a terminal", "\x1b[" in out, repr(out))
    out = on_pty({"TERM": "xterm", "NO_COLOR": "1"})
    report("no colour with NO_COLOR", "\x1b[" not in out and "not_found" in out, repr(out))
    r = cli("read", "-w", sb, "no-such", env={"TERM": "xterm"})
    report("no colour when stderr is not a terminal", "\x1b[" not in r.stderr, repr(r.stderr))


def t_completion():
    j = jload(cli("help", "--json").stdout) or {"verbs": []}
    bash = os.path.join(SRC, "completion/vectora-sandbox.bash")
    zsh = os.path.join(SRC, "completion/_vectora-sandbox")
    for path, name in ((bash, "bash"), (zsh, "zsh")):
        text = open(path).read() if os.path.exists(path) else ""
        missing = [v["name"] for v in j["verbs"] if not re.search(r"\b%s\b" % v["name"], text)]
        missing += ["--" + o["name"] for v in j["verbs"] for o in v["options"] if "--" + o["name"] not in text]
        report("%s completion knows every verb and option" % name, text and not missing, sorted(set(missing)))

    def complete(line):
        script = ('source %s\nCOMP_LINE=%s\nread -ra COMP_WORDS <<< "$COMP_LINE"\n'
                  '[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")\nCOMP_CWORD=$((${#COMP_WORDS[@]}-1))\n'
                  'COMP_POINT=${#COMP_LINE}\n_vectora_sandbox\nprintf "%%s\\n" "${COMPREPLY[@]}"\n'
                  % (bash, shlex_quote(line)))
        return subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True).stdout.split()
    got = complete("vectora-sandbox re")
    report("bash completion: verbs", sorted(got) == ["read"], got)
    got = complete("vectora-sandbox write x --no-")
    report("bash completion: the verb's options", "--no-parents" in got and "--no-daemon" in got and
           "--no-stdin" not in got, got)


def shlex_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def t_daemon_mode(tmp, sb, plain):
    d = Daemon(tmp)
    try:
        dc = lambda *a, **k: cli(*a, env=d.env, daemon=True, **k)
        r = dc("run", "-w", sb, "cat", stdin="through the daemon\n")
        report("daemon: stdin reaches the command", r.returncode == 0 and r.stdout == "through the daemon\n", r)
        r = dc("write", "-w", sb, "d1/d2/f.txt", stdin="p\n")
        report("daemon: write creates parents", r.returncode == 0 and open(os.path.join(sb, "d1/d2/f.txt")).read() == "p\n", r)
        r = dc("write", "-w", sb, "d3/f.txt", "--no-parents", stdin="p\n")
        report("daemon: write --no-parents refuses, exit 1", r.returncode == 1 and "not_found" in r.stderr, r)
        t_read_whole(tmp, sb, env=d.env, daemon=True, label="daemon")
        r = dc("run", "-w", plain, "--require-sandbox", "touch ran-d")
        report("daemon: --require-sandbox refused with 125, nothing ran",
               r.returncode == 125 and "sandbox_required" in r.stderr and not os.path.exists(os.path.join(plain, "ran-d")), r)
        j = d.call({"id": 1, "tool": "terminal", "workspace": plain, "command": "touch ran-api", "require_sandbox": True})
        report("API: require_sandbox on an unsandboxed workspace fails sandbox_required",
               j.get("ok") is False and j["error"]["code"] == "sandbox_required" and
               not os.path.exists(os.path.join(plain, "ran-api")), j)
        j = d.call({"id": 2, "tool": "terminal", "workspace": sb, "command": "echo fine", "require_sandbox": True})
        report("API: require_sandbox on a sandboxed workspace runs", j.get("ok") is True and j.get("stdout") == "fine\n", j)
        j = d.call({"id": 3, "tool": "file_read", "workspace": sb, "path": "f.txt", "require_sandbox": "yes"})
        report("API: require_sandbox must be a boolean", j.get("ok") is False and j["error"]["code"] == "bad_request", j)
        t_subdirectory(sb, env=d.env, daemon=True, label="daemon")
        r = dc("edit", "-w", sb, "f.txt", "--old", "o", "--new", "0")
        report("daemon: edit suggests --all", r.returncode == 1 and "--all" in r.stderr and "replace_all" not in r.stderr, r)

        # status: counters that add up, states at a glance.
        bad = ws(tmp, "status-bad", "[sandbox]\nenabled = tru\n")
        d2 = Daemon(tmp, "counts")
        try:
            e2 = d2.env
            outcomes = [cli("run", "-w", sb, "true", env=e2, daemon=True),
                        cli("run", "-w", sb, "exit 3", env=e2, daemon=True),
                        cli("read", "-w", sb, ".env", env=e2, daemon=True),
                        cli("read", "-w", sb, "no-such", env=e2, daemon=True),
                        cli("run", "-w", bad, "true", env=e2, daemon=True)]
            r = cli("status", env=e2, daemon=True)
            m = re.search(r"calls +(\d+) answered = (\d+) ok \+ (\d+) failed \+ (\d+) refused \+ (\d+) denied", r.stdout)
            nums = [int(x) for x in m.groups()] if m else []
            report("status: the call counters add up (5 calls: 2 ok, 1 failed, 1 refused, 1 denied)",
                   nums == [5, 2, 1, 1, 1], (nums, r.stdout, [o.returncode for o in outcomes]))
            report("status at a glance: workspaces by state, each with its state, worker and layers",
                   "workspaces 2: 1 sandboxed, 0 unsandboxed, 1 refused" in r.stdout and
                   re.search(r"^  state +sandboxed", r.stdout, re.M) and re.search(r"^  layers +namespaces", r.stdout, re.M)
                   and re.search(r"^  refused +vectora.toml:2:", r.stdout, re.M), r.stdout)
            r = cli("status", "--json", env=e2, daemon=True)
            report("status --json through the daemon", (jload(r.stdout) or {}).get("ok") is True, r.stdout[:200])
        finally:
            d2.stop()
    finally:
        d.stop()


def t_daemon_start(tmp, sb):
    r = subprocess.run([DAEMON, "--socket", os.path.join(tmp, "no/such/dir/d.sock")], capture_output=True, text=True,
                       env=base_env(), timeout=30)
    report("daemon: a missing socket directory is named, with what to do, once",
           r.returncode == 1 and "does not exist" in r.stderr and "mkdir -p" in r.stderr and
           r.stderr.count("vectora-sandboxd:") == 1, r)

    sock, log, pidf = (os.path.join(tmp, x) for x in ("bg.sock", "bg.log", "bg.pid"))
    t0 = time.time()
    try:
        r = subprocess.run([DAEMON, "--socket", sock, "--log-file", log, "--pidfile", pidf], capture_output=True,
                           text=True, env=base_env(), timeout=30)
    except subprocess.TimeoutExpired as e:
        report("daemon: without --foreground it detaches and releases the terminal", False, e)
        return
    pid = int(open(pidf).read()) if os.path.exists(pidf) else 0
    report("daemon: without --foreground it returns once listening (exit 0, pid, socket and log said)",
           r.returncode == 0 and os.path.exists(sock) and pid > 0 and ("pid %d" % pid) in r.stdout and sock in r.stdout
           and r.stderr == "" and time.time() - t0 < 15, r)
    try:
        r2 = cli("status", env={"VECTORA_SANDBOX_SOCKET": sock}, daemon=True)
        report("daemon: the detached daemon serves", r2.returncode == 0 and "pid %d" % pid in r2.stdout, r2)
        r3 = subprocess.run([DAEMON, "--socket", sock, "--log-file", log], capture_output=True, text=True,
                            env=base_env(), timeout=30)
        report("daemon: a second daemon on a live socket says so once and leaves the first serving",
               r3.returncode == 1 and r3.stderr.count("another vectora-sandboxd is listening") == 1 and
               cli("status", env={"VECTORA_SANDBOX_SOCKET": sock}, daemon=True).returncode == 0, r3)
        lines = open(log).read().splitlines()
        stamped = [l for l in lines if re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z vectora-sandboxd: \w+: ", l)]
        report("daemon: every log line starts with its UTC time", lines and len(stamped) == len(lines), lines[:5])
    finally:
        if pid:
            os.kill(pid, signal.SIGTERM)
            # Up to 20 s: 5 s was not always enough for the daemon to exit
            # while another suite loaded the machine.
            deadline = time.monotonic() + 20
            while os.path.exists(pidf) and time.monotonic() < deadline:
                time.sleep(0.01)
    report("daemon: SIGTERM removes the pidfile and the socket", not os.path.exists(pidf) and not os.path.exists(sock))

    # Under systemd: readiness on NOTIFY_SOCKET, priorities for journald.
    nsock = os.path.join(tmp, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(nsock)
    ns.settimeout(20)
    errf = os.path.join(tmp, "journal-stream")
    with open(errf, "w") as ef:
        st = os.fstat(ef.fileno())
        env = base_env({"NOTIFY_SOCKET": nsock, "JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)})
        p = subprocess.Popen([DAEMON, "--foreground", "--socket", os.path.join(tmp, "sd.sock")], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=ef, env=env)
        try:
            msg = ns.recv(4096).decode()
        except socket.timeout:
            msg = ""
        p.send_signal(signal.SIGTERM)
        p.wait(10)
    ns.close()
    report("daemon under systemd: READY=1 on NOTIFY_SOCKET once listening", "READY=1" in msg, msg)
    lines = open(errf).read().splitlines()
    report("daemon on journald's stream: '<N>' priorities, no timestamps (the journal adds them)",
           lines and all(re.match(r"^<[3-7]>vectora-sandboxd: ", l) for l in lines) and
           any(l.startswith("<6>vectora-sandboxd: info: listening") for l in lines), lines[:4])


def readme_daemon_block():
    text = open(os.path.join(SRC, "README.md")).read()
    sec = text.split("\n## The daemon\n", 1)[1]
    return sec.split("```sh\n", 1)[1].split("```", 1)[0]


def t_readme(tmp):
    """The README's daemon section, line for line, in a fresh environment:
    no --socket, no VECTORA_SANDBOX_SOCKET; the CLI must find the daemon."""
    block = readme_daemon_block()
    report("README: the daemon section starts the daemon bare and uses the CLI without --socket",
           re.search(r"^vectora-sandboxd\s", block, re.M) and "--socket" not in block and
           "VECTORA_SANDBOX_SOCKET" not in block, block)
    path = "%s:%s:/usr/local/bin:/usr/bin:/bin" % (os.path.join(BUILD, "src/daemon"), os.path.join(BUILD, "src/cli"))

    def run_as(label, home, pre, env):
        proj = os.path.join(home, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, "vectora.toml"), "w") as f:
            f.write(SANDBOX)
        with open(os.path.join(proj, "Makefile"), "w") as f:
            f.write("test:\n\t@echo tests-pass-$$(id -u)\n")
        for root, dirs, files in os.walk(home):
            for x in [root] + [os.path.join(root, f) for f in files]:
                os.lchown(x, env["_uid"], env["_uid"]) if ROOT else None
        script = os.path.join(home, "readme.sh")
        out = os.path.join(home, "status.json")
        with open(script, "w") as f:
            f.write("set -e\n" + block + "\nvectora-sandbox status --json > %s\n" % out)
        # The one variable an uninstalled build needs (an installed one finds its worker itself).
        e = {"PATH": path, "HOME": home, "LANG": "C.UTF-8", "VECTORA_WORKER": os.path.join(BUILD, "src/worker/vectora-worker")}
        e.update({k: v for k, v in env.items() if not k.startswith("_")})
        p = subprocess.run(pre + ["sh", script], capture_output=True, text=True, env=e, timeout=120)
        st = jload(open(out).read()) if os.path.exists(out) else None
        pid = (st or {}).get("daemon", {}).get("pid")
        try:
            served = [w for w in (st or {}).get("workspaces", []) if w["path"] == proj]
            report("README daemon section as %s: runs as written, `make test` passes in the jail" % label,
                   p.returncode == 0 and "tests-pass-" in p.stdout and "vectora-sandboxd pid" in p.stdout, p)
            report("README as %s: the CLI found the daemon at %s without --socket" % (label, env.get("_sock")),
                   bool(served) and served[0]["counters"]["ok"] >= 1 and served[0]["state"] == "sandboxed" and
                   st["daemon"]["socket"] == env.get("_sock"), st)
        finally:
            if pid:
                os.kill(pid, signal.SIGTERM)

    if ROOT:
        home = os.path.join(tmp, "root-home")
        os.makedirs(home)
        os.chmod(home, 0o755)
        # /run is the root daemon's; a private one keeps parallel runs apart.
        pre = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
               'mount -t tmpfs -o mode=755 tmpfs /run && exec "$@"', "sh"]
        run_as("root", home, pre, {"_uid": 65534, "_sock": "/run/vectora-sandbox.sock"})
        uid = 65534
        home = os.path.join(tmp, "user-home")
        os.makedirs(home)
        xdg = os.path.join(tmp, "user-xdg")
        os.makedirs(xdg, mode=0o700)
        os.chown(xdg, uid, uid)
        pre = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--"]
        run_as("an ordinary user", home, pre, {"_uid": uid, "XDG_RUNTIME_DIR": xdg,
                                                "_sock": os.path.join(xdg, "vectora-sandbox.sock")})
    else:
        tap.root_only("README daemon section as root", "the suite does not run as root")
        home = os.path.join(tmp, "user-home")
        os.makedirs(home)
        xdg = tempfile.mkdtemp(prefix="xdg-", dir=tmp)
        run_as("an ordinary user", home, [], {"_uid": os.geteuid(), "XDG_RUNTIME_DIR": xdg,
                                              "_sock": os.path.join(xdg, "vectora-sandbox.sock")})


def t_demo(tmp):
    """make demo: each secret shown on the host before the jail is shown not
    to see it; the plan one option per line; every command it prints is the
    one it runs (a recording CLI stands in for the real one)."""
    fake = os.path.join(tmp, "fakebuild/src/cli")
    os.makedirs(fake)
    log = os.path.join(tmp, "demo-argv.log")
    with open(os.path.join(fake, "vectora-sandbox"), "w") as f:
        f.write("#!/usr/bin/env python3\nimport json, os, sys\n"
                "open(%r, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
                "os.execv(%r, [%r] + sys.argv[1:])\n" % (log, CLI, CLI))
    os.chmod(os.path.join(fake, "vectora-sandbox"), 0o755)
    p = subprocess.run([os.path.join(SRC, "scripts/demo"), os.path.join(tmp, "fakebuild")], cwd=SRC,
                       capture_output=True, text=True, env=base_env({"NO_COLOR": "1"}), timeout=300)
    out = p.stdout
    secret, key = "demo-secret-do-not-leak", "demo-private-key-do-not-leak"
    masked = out.find("== inside the jail")
    report("demo: each secret is shown on the host before the jail is shown not to see it",
           p.returncode == 0 and 0 <= out.find(secret) < masked and 0 <= out.find(key) < masked and
           secret not in out[masked:] and key not in out[masked:], out[-2000:])
    plan = out.split("nothing runs\n", 1)[-1].split("\n== ", 1)[0].splitlines()[1:]
    body = [l for l in plan if not l.startswith("#")]
    report("demo: the plan is printed one option per line, no word cut",
           body and all(len(l) < 120 and (l.endswith(" \\") or l is body[-1]) for l in body), body[:5])
    import shlex
    shown = []
    for l in out.splitlines():
        if l.startswith("$ ") and "vectora-sandbox " in l:
            shown.append(shlex.split(l.split("vectora-sandbox ", 1)[1]))
    ran = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
    report("demo: every vectora-sandbox command it prints is the one it runs, in order",
           shown and shown == ran, (shown, ran))


def t_install_deps_modes(tmp):
    """install-deps demo installs what building and running needs, not the
    test suite's docker, sshd, node and npm packages."""
    bin_ = os.path.join(tmp, "fakebin")
    os.makedirs(bin_)
    log = os.path.join(tmp, "deps.log")
    for name, body in (("dpkg-query", "exit 1"), ("apt-get", 'echo "apt-get $*" >> %s' % log),
                       ("npm", 'echo "npm $*" >> %s' % log), ("id", "echo 0"), ("getent", "exit 0"),
                       ("useradd", 'echo "useradd $*" >> %s' % log), ("usermod", "exit 0")):
        with open(os.path.join(bin_, name), "w") as f:
            f.write("#!/bin/sh\n%s\n" % body)
        os.chmod(os.path.join(bin_, name), 0o755)
    env = base_env({"PATH": bin_ + ":/usr/bin:/bin"})
    got = {}
    for mode in ("demo", "all"):
        if os.path.exists(log):
            os.unlink(log)
        p = subprocess.run(["sh", os.path.join(SRC, "scripts/install-deps"), mode], capture_output=True, text=True,
                           env=env, timeout=60)
        got[mode] = (p.returncode, open(log).read() if os.path.exists(log) else "")
    demo = got["demo"][1]
    report("install-deps demo: the build's packages, not docker, sshd, clang or the npm bridge",
           got["demo"][0] == 0 and "bubblewrap" in demo and "meson" in demo and
           not any(x in demo for x in ("docker.io", "openssh-server", "nodejs", "npm ", "clang", "busybox")), got["demo"])
    report("install-deps (all) still installs the test suite's", "docker.io" in got["all"][1] and
           "openssh-server" in got["all"][1], got["all"])
    p = subprocess.run(["sh", os.path.join(SRC, "scripts/install-deps"), "bogus"], capture_output=True, text=True,
                       env=env, timeout=60)
    report("install-deps with an unknown mode: exit 2, the modes named", p.returncode == 2 and "demo" in p.stderr, p)
    mk = subprocess.run(["make", "-n", "-C", SRC, "demo"], capture_output=True, text=True, timeout=60)
    report("make demo asks install-deps for the demo's packages only", "install-deps demo" in mk.stdout, mk.stdout)


def t_untrusted_default_socket(tmp):
    """Another user who plants /tmp/vectora-sandbox-UID/sock first gets no
    connection from UID's CLI: the default socket is used only when its
    directory is UID's (or root's) and not writable by others."""
    if not ROOT:
        tap.root_only("a planted default socket is not used", "planting another user's socket needs root")
        return
    victim, attacker = 65533, 65532
    d = "/tmp/vectora-sandbox-%d" % victim
    if os.path.exists(d):
        skip("a planted default socket is not used", "%s exists already on this machine" % d)
        return
    os.mkdir(d, 0o755)
    try:
        os.chown(d, attacker, attacker)
        bait = socket.socket(socket.AF_UNIX)
        bait.bind(os.path.join(d, "sock"))
        os.chown(os.path.join(d, "sock"), attacker, attacker)
        bait.listen(4)
        bait.setblocking(False)
        p = subprocess.run(["setpriv", "--reuid=%d" % victim, "--regid=%d" % victim, "--clear-groups", CLI, "status"],
                           capture_output=True, text=True, env=base_env({"XDG_RUNTIME_DIR": ""}), timeout=30)
        try:
            bait.accept()
            connected = True
        except BlockingIOError:
            connected = False
        bait.close()
        report("a default socket planted by another user is not used (no connection; 'no daemon')",
               not connected and p.returncode == 125 and "no daemon listens at %s/sock" % d in p.stderr, (connected, p))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-cli-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    try:
        typo = ws(tmp, "typo", "[sandbox]\nro_path = []\n")
        r = cli("check", "-w", typo)
        report("check: a typo'd key exits 2", r.returncode == 2, r)
        report("check: the reason names line and column and the fix",
               r.stderr.startswith("vectora-sandbox: vectora.toml:2:1: sandbox: unknown key 'ro_path' (did you mean 'ro_paths'?)"), r.stderr)
        r = cli("exec", "-w", typo, "--", "true")
        report("exec in a refused workspace: 125 and the located reason, nothing runs",
               r.returncode == 125 and "vectora.toml:2:1" in r.stderr, r)
        r = cli("plan", "-w", typo)
        report("plan in a refused workspace: 125", r.returncode == 125, r)

        plain = ws(tmp, "plain", None, {"f.txt": "hello\n"})
        r = cli("check", "-w", plain)
        report("check without vectora.toml: unsandboxed and why, exit 0",
               r.returncode == 0 and "unsandboxed (no vectora.toml in the workspace)" in r.stdout, r)
        nosb = ws(tmp, "nosb", "[other]\nx = 1\n")
        r = cli("check", "-w", nosb)
        report("check without [sandbox]: unsandboxed and why",
               r.returncode == 0 and "unsandboxed (vectora.toml has no [sandbox] table)" in r.stdout, r)

        toml = ('[sandbox]\nrw_paths = ["."]\nmask = [".env", "**/*.pem"]\nnetwork = false\n'
                '[sandbox.limits]\ntimeout = 5\nmemory = "1G"\n')
        sb = ws(tmp, "sb", toml, {".env": "SECRET=cli-test-secret\n", "k/a.pem": "PEM-SECRET\n", "f.txt": "one two two\n"})
        r = cli("check", "-w", sb)
        fields = ["workspace", "config", "sandboxed", "backend", "rw_paths", "ro_paths", "mask", "protected",
                  "no_gpu", "lockdown", "network", "idle_timeout", "limits"]
        missing = [f for f in fields if not any(l.startswith(f + " ") for l in r.stdout.splitlines())]
        report("check with a valid section prints every effective field", r.returncode == 0 and not missing,
               (missing, r.stdout))
        report("check shows the effective values",
               "network      false" in r.stdout and "timeout=5s" in r.stdout and "memory=1073741824" in r.stdout, r.stdout)
        r = cli("check", "-w", sb, "--json")
        try:
            j = json.loads(r.stdout)
        except ValueError:
            j = {}
        report("check --json is the policy as JSON",
               j.get("sandboxed") is True and j.get("network") is False and j.get("limits", {}).get("timeout") == 5 and
               j.get("mask") == [".env", "**/*.pem"], r.stdout)
        r = cli("plan", "-w", sb)
        report("plan prints the bwrap command line, with --unshare-net when network is off",
               r.returncode == 0 and "bwrap " in r.stdout and "--unshare-net" in r.stdout and "--die-with-parent" in r.stdout, r)

        r = cli("exec", "-w", sb, "--", "cat", ".env", "k/a.pem")
        report("exec: masked files read as empty", r.returncode == 0 and "SECRET" not in r.stdout, r)
        r = cli("read", "-w", sb, ".env")
        report("read of a masked path: refused with the reason, 125",
               r.returncode == 125 and "masked" in r.stderr and "SECRET" not in r.stdout, r)
        r = cli("exec", "-w", sb, "--", "sh", "-c", "echo x > /etc/x")
        report("exec: a write to /etc fails", r.returncode != 0, r)
        r = cli("run", "-w", sb, "exit 7")
        report("run: the command's exit status", r.returncode == 7, r)
        r = cli("run", "-w", sb, "kill -TERM $$")
        report("run: killed by signal N -> 128+N", r.returncode == 128 + 15, r)
        r = cli("exec", "-w", sb, "--", "no-such-command-here")
        report("exec: not found -> 127", r.returncode == 127, r)
        r = cli("run", "-w", sb, "--timeout", "1", "sleep 30")
        report("run --timeout: the group is killed, 128+9 and a note", r.returncode == 137 and "timed out" in r.stderr, r)
        capped = ws(tmp, "capped", "[sandbox]\n[sandbox.limits]\ntimeout = 2\n")
        t0 = time.monotonic()
        r = cli("exec", "-w", capped, "--timeout", "10", "--", "sleep", "8")
        dt = time.monotonic() - t0
        report("exec --timeout 10 under timeout = 2: the policy's ceiling holds (killed at ~2 s)",
               r.returncode == 137 and "timed out" in r.stderr and dt < 6, (r, dt))

        # A descriptor the caller left open (a directory of the host user's
        # that the jail cannot otherwise see) never reaches the jail.
        secret = os.path.join(tmp, "host-secret")
        os.makedirs(os.path.join(secret, ".ssh"))
        with open(os.path.join(secret, ".ssh/id_rsa"), "w") as f:
            f.write("HOST-PRIVATE-KEY\n")
        # Readable by the jail's uid: only the mount namespace hides it, so
        # an inherited descriptor would be the whole attack.
        chmod_tree = [secret, os.path.join(secret, ".ssh")]
        for p in chmod_tree:
            os.chmod(p, 0o755)
        fd = os.open(secret, os.O_RDONLY | os.O_DIRECTORY)
        os.dup2(fd, 9)
        os.close(fd)
        try:
            r = cli_with_fd(9, "run", "-w", sb, "ls /proc/self/fd; cat /proc/self/fd/9/.ssh/id_rsa")
        finally:
            os.close(9)
        report("embedded: a descriptor left open by the caller (exec 9<dir) is closed before the jail",
               "HOST-PRIVATE-KEY" not in r.stdout and r.returncode != 0 and "9" not in r.stdout.split(), r)
        r = cli("exec", "-w", sb, "--env", "GREETING=hi", "--", "sh", "-c", "echo $GREETING $VECTORA_CLI_SECRET",
                env={"VECTORA_CLI_SECRET": "leaked"})
        report("exec --env adds a variable; the CLI's own environment stays out",
               r.returncode == 0 and r.stdout.strip() == "hi", r)
        r = cli("write", "-w", sb, "new.txt", stdin="written\n")
        r2 = cli("read", "-w", sb, "new.txt")
        report("write then read through the jail", r.returncode == 0 and r2.stdout == "written\n", (r, r2))
        r = cli("edit", "-w", sb, "f.txt", "--old", "two", "--new", "2")
        report("edit: a non-unique old text is refused", r.returncode == 1 and "2 times" in r.stderr, r)
        r = cli("edit", "-w", sb, "f.txt", "--old", "two", "--new", "2", "--all")
        with open(os.path.join(sb, "f.txt")) as f:
            report("edit --all replaces every occurrence", r.returncode == 0 and f.read() == "one 2 2\n", r)
        r = cli("write", "-w", sb, "vectora.toml", stdin="[sandbox]\nenabled = false\n")
        report("write to vectora.toml: refused, 125", r.returncode == 125 and "protected" in r.stderr, r)

        # Unsandboxed: the same verbs act on the host, as without this layer.
        r = cli("run", "-w", plain, "echo $VECTORA_CLI_SECRET > out.txt; cat f.txt", env={"VECTORA_CLI_SECRET": "host-env"})
        with open(os.path.join(plain, "out.txt")) as f:
            out = f.read()
        report("unsandboxed run acts on the host with the caller's environment",
               r.returncode == 0 and r.stdout == "hello\n" and out == "host-env\n", (r, out))
        r = cli("read", "-w", plain, "/etc/passwd")
        report("unsandboxed read is not limited to the workspace", r.returncode == 0, r)

        with open(os.path.join(sb, "f.txt"), "w") as f:
            f.write("one two two\n")
        t_stdin(tmp, sb, plain)
        t_read_whole(tmp, sb)
        t_write_parents(sb)
        t_exit_codes(sb)
        t_options_anywhere(sb)
        t_concurrent_edits(tmp)
        t_subdirectory(sb)
        t_messages(sb)
        t_json_every_verb(tmp, sb, plain)
        t_help()
        t_init(tmp)
        t_require_sandbox(tmp, sb, plain)
        t_color(sb)
        t_completion()
        other = ws(tmp, "other-backend", '[sandbox]\nbackend = "local"\n[sandbox.docker]\nimage = "debian:12"\n')
        r = cli("check", "-w", other)
        report("a [sandbox.docker] table with backend = \"local\" is refused, located (exit 2)",
               r.returncode == 2 and "vectora.toml:3:10: sandbox.docker:" in r.stderr and 'backend = \"local\"' in r.stderr, r)
        t_untrusted_default_socket(tmp)
        t_demo(tmp)
        t_install_deps_modes(tmp)
        t_daemon_mode(tmp, sb, plain)
        t_daemon_start(tmp, sb)
        t_readme(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
