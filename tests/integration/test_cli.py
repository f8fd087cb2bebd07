#!/usr/bin/env python3
"""The CLI's verbs in embedded mode (no daemon): check, plan, exec, run,
read, write, edit, with the exit codes DESIGN.md fixes (the command's own
status, 128+N for a signal, 125 when the sandbox refused, 2 from check on a
refused config). TAP output."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("VECTORA_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "../../build"))
CLI = os.path.join(BUILD, "src/cli/vectora-sandbox")
ROOT = os.geteuid() == 0

n = failed = 0


def report(name, ok, detail=None):
    global n, failed
    n += 1
    failed += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
    if not ok and detail is not None:
        for line in str(detail).splitlines()[:20]:
            print("#   " + line)


def cli(*args, stdin=None, env=None):
    e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    e.update(env or {})
    return subprocess.run([CLI] + list(args), input=stdin, capture_output=True, text=True, env=e, timeout=60)


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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % n)
    print("# %d passed, %d failed, 0 skipped" % (n - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
