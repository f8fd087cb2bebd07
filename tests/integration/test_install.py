#!/usr/bin/env python3
"""Installed as a package installs it: `meson install` paths, the systemd
units and the man pages agree (a build configured with prefix /usr, as the
Debian package is), and an installed program never picks up the worker of
the build tree it was built in. TAP, a subtest per check (tests/lib/vtest.py)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import BUILD, CLI, Tap  # noqa: E402
from vtest import SRC as SOURCE  # noqa: E402

tap = Tap()
report = tap.ok


def unit_field(path, key):
    with open(path) as f:
        for line in f:
            if line.startswith(key + "="):
                return line[len(key) + 1:].strip()
    return None


def man_text(name):
    with open(os.path.join(SOURCE, "docs/man", name)) as f:
        # troff escapes out: \- is a dash, \fB..\fR fonts.
        return re.sub(r"\\f[BIRP]", "", f.read()).replace("\\-", "-")


def layout(tmp):
    usr = os.path.join(tmp, "usr-build")
    r = subprocess.run(["meson", "setup", "--prefix=/usr", "-Dtests=false", usr, SOURCE],
                       capture_output=True, text=True, timeout=120)
    report("meson setup --prefix=/usr", r.returncode == 0, r.stdout + r.stderr)
    if r.returncode:
        return
    r = subprocess.run(["meson", "introspect", "--installed", usr], capture_output=True, text=True, timeout=60)
    installed = json.loads(r.stdout) if r.returncode == 0 else {}
    dests = set(installed.values())
    want = {
        "/usr/bin/vectora-sandbox": "the CLI",
        "/usr/sbin/vectora-sandboxd": "the daemon",
        "/usr/libexec/vectora-worker": "the worker",
        "/usr/libexec/vectora-sandbox-proxy": "the network proxy",
        "/usr/lib/sysusers.d/vectora-sandbox.conf": "the network proxy's system user",
        "/usr/share/man/man1/vectora-sandbox.1": "the CLI's man page",
        "/usr/share/man/man8/vectora-sandboxd.8": "the daemon's man page",
        "/usr/share/man/man8/vectora-worker.8": "the worker's man page",
        "/usr/share/man/man8/vectora-sandbox-proxy.8": "the network proxy's man page",
        "/usr/lib/systemd/system/vectora-sandboxd.service": "the system service",
        "/usr/lib/systemd/system/vectora-sandboxd.socket": "the system socket",
        "/usr/lib/systemd/user/vectora-sandboxd.service": "the user service",
        "/usr/lib/systemd/user/vectora-sandboxd.socket": "the user socket",
        "/usr/share/bash-completion/completions/vectora-sandbox": "the bash completion",
        "/usr/share/zsh/vendor-completions/_vectora-sandbox": "the zsh completion",
    }
    for path, what in want.items():
        report("meson install puts %s at %s" % (what, path), path in dests, "\n".join(sorted(dests)))
    report("nothing else is installed (no benchmark or test program)", dests <= set(want), sorted(dests - set(want)))

    by_dest = {v: k for k, v in installed.items()}
    daemon = "/usr/sbin/vectora-sandboxd"
    for kind in ("system", "user"):
        unit = by_dest.get("/usr/lib/systemd/%s/vectora-sandboxd.service" % kind)
        if not unit:
            continue
        start = unit_field(unit, "ExecStart") or ""
        report("%s unit: ExecStart runs the installed daemon (%s)" % (kind, daemon),
               start.split()[0] == daemon if start else False, start)
        report("%s unit: runs in the foreground with the audit log in its LogsDirectory" % kind,
               "--foreground" in start and "${LOGS_DIRECTORY}/audit.log" in start
               and unit_field(unit, "LogsDirectory") == "vectora-sandboxd", start)
        report("%s unit: installed for the right target" % kind,
               unit_field(unit, "WantedBy") == ("multi-user.target" if kind == "system" else "default.target"),
               unit_field(unit, "WantedBy"))
        sock = by_dest.get("/usr/lib/systemd/%s/vectora-sandboxd.socket" % kind)
        if sock:
            report("%s socket: %%t/vectora-sandbox.sock, mode 0600" % kind,
                   unit_field(sock, "ListenStream") == "%t/vectora-sandbox.sock"
                   and unit_field(sock, "SocketMode") == "0600")

    man = man_text("vectora-sandboxd.8")
    files = man[man.find(".SH FILES"):]
    for path in ("/usr/sbin/vectora-sandboxd", "/usr/libexec/vectora-worker", "/usr/libexec/vectora-sandbox-proxy",
                 "/usr/lib/sysusers.d/vectora-sandbox.conf",
                 "/usr/lib/systemd/system/vectora-sandboxd.service", "/usr/lib/systemd/system/vectora-sandboxd.socket",
                 "/usr/lib/systemd/user/vectora-sandboxd.service", "/usr/lib/systemd/user/vectora-sandboxd.socket"):
        report("vectora-sandboxd(8) FILES names %s, and meson installs it there" % path,
               path in files and path in dests, files)
    report("vectora-sandboxd(8) names the audit log the system unit writes",
           "/var/log/vectora-sandboxd/audit.log" in files)


def worker_choice(tmp):
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write('[sandbox]\nrw_paths = ["."]\n')
    env = {k: v for k, v in os.environ.items() if k not in ("VECTORA_WORKER", "VECTORA_SANDBOX_SOCKET")}
    build_worker = os.path.realpath(os.path.join(BUILD, "src/worker/vectora-worker"))
    r = subprocess.run([CLI, "plan", "-w", ws], capture_output=True, text=True, env=dict(env, VECTORA_WORKER=build_worker),
                       timeout=60)
    report("VECTORA_WORKER names the worker (how the tests use the tree's)", build_worker in r.stdout,
           r.stdout + r.stderr)
    # Nothing about the tree is compiled in: even run from it, without the
    # variable the CLI looks for the installed worker only.
    r = subprocess.run([CLI, "plan", "-w", ws], capture_output=True, text=True, env=env, timeout=60)
    text = r.stdout + r.stderr
    report("the CLI run from the build tree without VECTORA_WORKER does not use the tree's worker",
           build_worker not in text and os.path.realpath(BUILD) not in text and
           ((r.returncode == 0 and "/libexec/vectora-worker" in r.stdout)
            or (r.returncode == 125 and re.search(r"vectora-worker not found in /\S*libexec; reinstall", r.stderr))), text)
    # The same binary, copied out of the tree as `meson install` would.
    out = os.path.join(tmp, "bin")
    os.makedirs(out)
    copy = os.path.join(out, "vectora-sandbox")
    shutil.copy2(CLI, copy)
    r = subprocess.run([copy, "plan", "-w", ws], capture_output=True, text=True, env=env, timeout=60)
    text = r.stdout + r.stderr
    report("an installed CLI never uses the build tree's worker", build_worker not in text and
           os.path.realpath(BUILD) not in text, text)
    report("it uses the libexec worker, or says where it looked and what to do",
           (r.returncode == 0 and "/libexec/vectora-worker" in r.stdout)
           or (r.returncode == 125 and re.search(r"vectora-worker not found in /\S*libexec; reinstall", r.stderr)), text)


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-install-")
    try:
        layout(tmp)
        worker_choice(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
