#!/usr/bin/env python3
"""Root-owned workspaces under a root caller (DESIGN.md: the jail never runs
as host uid 0): served through idmapped mounts as a dedicated uid (not nobody,
which other processes on the host run as), the idmapped tree attached only in
the jail's own mount namespace.

TAP, a subtest per check (tests/lib/vtest.py). Needs root; as another user it
says SKIP (a failure under VECTORA_TEST_STRICT=1)."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, SRC, Daemon, Tap  # noqa: E402

JAIL_ID = "2147483646"  # VS_IDMAP_UID in src/core/launch/idmap.h

tap = Tap()
report = tap.ok


def cli(ws, *args, env=None, stdin=None):
    e = dict(os.environ)
    e.pop("VECTORA_SANDBOX_SOCKET", None)
    if env:
        e.update(env)
    return subprocess.run([CLI] + list(args[:1]) + ["-w", ws] + list(args[1:]), input=stdin,
                          capture_output=True, text=True, env=e, timeout=60)


def idmapped_mounts():
    """Idmapped mounts in the host's mount namespace (the test's own)."""
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if "idmapped" in l.split(" - ")[0].split()[5].split(",") or "/idmap-" in l]


def make_ws(tmp):
    ws = os.path.join(tmp, "ws")
    shutil.copytree(os.path.join(SRC, "examples/demo-workspace"), ws)
    os.chmod(tmp, 0o755)
    os.chmod(ws, 0o755)
    with open(os.path.join(ws, "root-only.txt"), "w") as f:
        f.write("owner-only-content\n")
    os.chmod(os.path.join(ws, "root-only.txt"), 0o600)
    return ws


def main():
    if os.geteuid() != 0:
        tap.skip("idmapped workspaces", "they need a root caller (run the suite as root)")
        return tap.finish()
    tmp = tempfile.mkdtemp(prefix="vectora-idmap-", dir="/var/tmp")
    try:
        ws = make_ws(tmp)
        st = os.stat(ws)
        report("the test workspace is root-owned", st.st_uid == 0 and st.st_gid == 0, st)

        r = cli(ws, "run", "id -u; id -g")
        report("the jail runs as the dedicated uid/gid, not host root nor nobody",
               r.returncode == 0 and r.stdout.split() == [JAIL_ID, JAIL_ID], r)

        r = cli(ws, "run", "echo made-in-jail > created.txt && stat -c '%u %g' created.txt")
        host = os.stat(os.path.join(ws, "created.txt"))
        report("a file created in the jail appears as the jail's own",
               r.returncode == 0 and r.stdout.strip() == JAIL_ID + " " + JAIL_ID, r)
        report("the same file stays root's on disk", host.st_uid == 0 and host.st_gid == 0, host)

        r = cli(ws, "exec", "--", "cat", "root-only.txt")
        report("root's 0600 files are readable and writable to the jail",
               r.returncode == 0 and "owner-only-content" in r.stdout, r)

        r = cli(ws, "exec", "--", "cat", ".env")
        report("masks still hold on the idmapped workspace",
               r.returncode == 0 and "demo-secret" not in r.stdout and r.stdout == "", r)

        r = cli(ws, "run", "echo x > /etc/x")
        report("writes outside rw_paths are still refused", r.returncode != 0, r)

        r = cli(ws, "write", "vectora.toml", stdin="[sandbox]\nenabled = false\n")
        report("vectora.toml stays protected", r.returncode == 125, r)

        # git_init = true: the host's git makes the repository before the
        # jail starts, as the workspace's owner (root here): root's on disk,
        # its config read-only, and the jail commits in it.
        gws = os.path.join(tmp, "gitinit")
        os.mkdir(gws, 0o755)
        with open(os.path.join(gws, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nenabled = true\ngit_init = true\n")
        r = cli(gws, "run", "printf x >> .git/config 2>/dev/null && echo WROTE; echo x > f && git add f && "
                            "git -c user.name=a -c user.email=a@a commit -q -m jail && git log --format=%s")
        heads = os.path.join(gws, ".git/refs/heads")
        report("git_init = true in a root-owned workspace: a root-owned repository the jail commits in",
               r.returncode == 0 and r.stdout == "jail\n" and os.stat(os.path.join(gws, ".git/HEAD")).st_uid == 0
               and all(os.stat(os.path.join(heads, b)).st_uid == 0 for b in os.listdir(heads)), r)

        # The attack: while a jail of the root-owned workspace starts, its
        # idmapped tree was staged under /run/vectora-sandbox where any
        # process running as the jail's uid (then nobody) could write
        # through it, creating root-owned files. Now it never appears in the
        # host's mount namespace at all.
        seen, stop = [], threading.Event()

        def watch():
            while not stop.is_set():
                m = idmapped_mounts()
                if m:
                    seen.extend(m)
                    return
        t = threading.Thread(target=watch)
        t.start()
        try:
            for _ in range(5):
                cli(ws, "exec", "--", "true")
        finally:
            stop.set()
            t.join()
        report("no idmapped mount of the workspace is ever visible on the host while jails start", seen == [], seen)

        # Through the daemon: the staging mount is released after hello,
        # while the worker keeps serving from its own copy.
        with Daemon(tmp, audit=False, log_level=None) as d:
            env = {"VECTORA_SANDBOX_SOCKET": d.sock}
            e = dict(os.environ, **env)
            r1 = subprocess.run([CLI, "run", "-w", ws, "echo warm > warm.txt; id -u"], capture_output=True,
                                text=True, env=e, timeout=60)
            left = idmapped_mounts()
            r2 = subprocess.run([CLI, "run", "-w", ws, "cat warm.txt"], capture_output=True, text=True, env=e,
                                timeout=60)
            report("through the daemon the jail runs as the dedicated uid", r1.returncode == 0 and r1.stdout.strip() == JAIL_ID, r1)
            report("with a warm jail, the host's mount namespace holds no idmapped mount", left == [], left)
            report("the warm worker keeps serving the workspace", r2.returncode == 0 and r2.stdout.strip() == "warm", r2)
            report("files written through the daemon stay root's on disk",
                   os.stat(os.path.join(ws, "warm.txt")).st_uid == 0)
        # Staging lives in the runtime directory or, for a daemon, its instance's (d-*).
        leftovers = [os.path.join(d, x) for d, dirs, files in os.walk("/run/vectora-sandbox")
                     for x in dirs + files if x.startswith("idmap-")] if os.path.isdir("/run/vectora-sandbox") else []
        report("no staging directory is left behind", leftovers == [], leftovers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
