#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Peer projects' attack cases against this jail: the cases that
Anthropic's sandbox-runtime (test/sandbox/*.test.ts), OpenAI Codex
(codex-rs/linux-sandbox/tests/suite/landlock.rs), nono and ai-jail publish
for their own sandboxes, each run for real here, one TAP test per case and
per way in: the embedded CLI (`vectora-sandbox exec -w WS -- ...`) and the
daemon (the same call through a daemon of the same identity).

Only the cases tests/escape/test_escape.py does not already run are here
(its workspaces, planted secrets, identities and probe are reused, from
tests/lib/vescape.py); the report of the peer-case review lists the covered ones.
Each case fails if the jail let the attack through: the in-jail refusal is
asserted and so is the host side (the target untouched, no process left).

Run as root: as root and as uid 65534 (as test_escape.py); as an ordinary
user: that user (tests/helpers/as-user). A case this machine cannot run
(a kernel without the i386 entry: not applicable, saying why; without
x32, only the filter's kill counts)."""

import os
import re
import secrets
import shlex
import shutil
import subprocess
import socket
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vescape as te  # noqa: E402

T = te.T
Fail = te.Fail


class Skip(Exception):
    pass


class NotApplicable(Exception):
    """The attack has no way in on this host (never a failure, strict or not)."""


CASES = []


def case(name):
    def deco(fn):
        CASES.append((name, fn))
        return fn
    return deco


def run(c, via, ws, script, timeout=120):
    """`sh -c SCRIPT` in the jail of WS, embedded or through the daemon."""
    extra = {"VECTORA_SANDBOX_SOCKET": c.allow_sock} if via == "daemon" else None
    return c.cli(["exec", "-w", ws, "--", "/bin/sh", "-c", script], extra, timeout=timeout)


def host_procs_with(token):
    """Host pids whose command line holds TOKEN (outside any jail's view:
    the test runs in the host's pid namespace)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(int(p))
        except OSError:
            pass
    return found


def jailed(pid):
    """Whether host pid PID is confined as a jail's process: in a pid
    namespace below the host's, seccomp filter on, no new privileges."""
    try:
        with open(f"/proc/{pid}/status") as f:
            st = dict(ln.rstrip("\n").split(":\t", 1) for ln in f if ":\t" in ln)
    except OSError:
        return True  # gone meanwhile
    return (len(st.get("NSpid", "").split()) > 1 and st.get("Seccomp") == "2"
            and st.get("NoNewPrivs") == "1")


def left_behind(c, via, token, what):
    """Embedded: nothing of the call may outlive it. Through the daemon the
    jail is warm and kept between calls (docs/protocol.md: a double fork's
    grandchild ends with the jail): what is left must still be jailed, and
    must end with the daemon (checked once the daemon stops, in main)."""
    if via == "daemon":
        left = host_procs_with(token)
        free = [p for p in left if not jailed(p)]
        if free:
            wait_gone(token, 0)
            raise Fail(f"ESCAPED: host pids {free} run `sleep {token}` outside any jail {what}")
        c.daemon_tokens.append(token)
        return f"{len(left)} left in the warm jail, all jailed (they must end with the daemon)"
    left = wait_gone(token)
    if left:
        raise Fail(f"ESCAPED: host pids {left} still run `sleep {token}` {what}")
    return "no process left"


def wait_gone(token, bound_s=15):
    """Waits (bounded) until no host process holds TOKEN; the survivors."""
    left = host_procs_with(token)
    for _ in range(bound_s * 10):
        if not left:
            break
        os.system("sleep 0.1")
        left = host_procs_with(token)
    for pid in left:  # the test's own cleanup
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return left


# ---------------------------------------------------------------- the cases

@case("sandbox-runtime 'symlink-based filesystem escape': write through an agent-made link to a host path")
def _(c, via):
    """sandbox-runtime, integration.test.ts, 'should prevent symlink-based
    filesystem escape attempts': `ln -s OUTSIDE link && echo escaped >
    link`. Targets: a new file in the host's /tmp, and one in a sibling
    directory the jail's uid owns on the host (only the sandbox stands in
    the way). Neither may exist on the host afterwards."""
    tag = secrets.token_hex(4)
    targets = [f"/tmp/vectora-peer-{tag}", os.path.join(c.sibling, f"planted-{tag}")]
    for i, t in enumerate(targets):
        link = f"escape-link-{tag}-{i}"
        run(c, via, c.ws, f"ln -s {shlex.quote(t)} {link} && echo escaped > {link}")
        if os.path.lexists(t):
            raise Fail(f"ESCAPED: the host has {t}: {te.read_host(t)!r}")
        os.unlink(os.path.join(c.ws, link)) if os.path.lexists(os.path.join(c.ws, link)) else None
    return "no host file written through either link"


@case("sandbox-runtime 'special file types': hard link /etc/passwd and a ro_path file into the workspace, write")
def _(c, via):
    """sandbox-runtime, integration.test.ts, 'should prevent creation of
    special file types that could bypass restrictions' (its `ln
    /etc/passwd hardlink.txt`). A hard link that succeeded would make a
    read-only host file writable through the workspace: link /etc/passwd
    and the ro_path's lib.txt, then append to the link. Both host files
    must be unchanged."""
    tag = secrets.token_hex(4)
    lib = os.path.join(c.rodata, "lib.txt")
    before = {p: te.read_host(p) for p in ("/etc/passwd", lib)}
    for i, src in enumerate(before):
        run(c, via, c.ws, f"ln {shlex.quote(src)} hl-{tag}-{i} && echo pwned-{tag} >> hl-{tag}-{i}")
    for p, b in before.items():
        if te.read_host(p) != b:
            raise Fail(f"ESCAPED: the host's {p} changed through a hard link")
    return "both links refused or harmless; /etc/passwd and lib.txt unchanged"


@case("sandbox-runtime 'privilege escalation': a copied shell made setuid runs as the jail's uid")
def _(c, via):
    """sandbox-runtime, integration.test.ts, 'should prevent privilege
    escalation attempts': `cp /bin/bash x && chmod u+s x && ./x -p -c 'id
    -u'`. The copy must not end up setuid on the host, and whatever runs
    must not be uid 0 (test_escape.py's privfile cases cover each call that
    sets the bit; this is the peer's end-to-end form)."""
    tag = secrets.token_hex(4)
    name = f"suid-{tag}"
    r = run(c, via, c.ws, f"cp /bin/sh {name}; chmod u+s {name}; ./{name} -p -c 'id -u'; id -u")
    path = os.path.join(c.ws, name)
    if os.path.exists(path) and os.stat(path).st_mode & 0o6000:
        raise Fail(f"ESCAPED: on the host {path} is mode {os.stat(path).st_mode:o}")
    ids = [ln for ln in r.stdout.decode(errors="replace").split() if ln.isdigit()]
    if not ids:
        raise Fail(f"the commands did not run (exit {r.returncode}):\n{te.out_of(r)}")
    if "0" in ids:
        raise Fail(f"ESCAPED: a command ran as uid 0:\n{te.out_of(r)}")
    return f"uids seen: {', '.join(sorted(set(ids)))}"


@case("sandbox-runtime 'terminate background processes when sandbox exits': setsid + nohup survive nothing")
def _(c, via):
    """sandbox-runtime, integration.test.ts, 'should terminate background
    processes when sandbox exits' (and Codex's core exec tests of
    detached children): a setsid'd, nohup'd, double-forked sleeper left
    behind by a call that returns at once. Once the call has returned, no
    host process may still run it (the wait for the kernel to reap is
    bounded; no timing is asserted)."""
    token = str(3_000_000 + secrets.randbelow(900_000))
    r = run(c, via, c.ws, f"( setsid nohup sleep {token} </dev/null >/dev/null 2>&1 & ) ; echo started")
    if b"started" not in r.stdout:
        raise Fail(f"the call did not run (exit {r.returncode}):\n{te.out_of(r)}")
    return left_behind(c, via, token, "after the call returned")


@case("sandbox-runtime 'no orphan processes after timeout kills sandbox'")
def _(c, via):
    """sandbox-runtime, integration.test.ts, 'should not leave orphan
    processes after timeout kills sandbox': a call that outlives its
    timeout (limits.timeout = 2) after detaching a sleeper. The call is
    ended by the timeout and nothing it started may survive it."""
    ws = getattr(c, "ws_short", None)
    if ws is None:
        ws = c.ws_short = c.make_ws("ws-short", network=False)
        toml = os.path.join(ws, "vectora.toml")
        with open(toml) as f:
            text = f.read().replace("timeout = 60", "timeout = 2")
        with open(toml, "w") as f:
            f.write(text)
    token = str(3_000_000 + secrets.randbelow(900_000))
    r = run(c, via, ws, f"( setsid sleep {token} </dev/null >/dev/null 2>&1 & ) ; sleep 300")
    if r.returncode == 0:
        raise Fail(f"the call was not ended by its timeout (exit 0):\n{te.out_of(r)}")
    return f"call ended (exit {r.returncode}); " + left_behind(c, via, token, "after the timeout")


@case("codex 'sandbox_blocks_ping': ICMP (ping socket and raw) to the host's address, network = false")
def _(c, via):
    """Codex, linux-sandbox/tests/suite/landlock.rs, sandbox_blocks_ping:
    `ping -c 1 8.8.8.8` must fail. Here the ICMP echo goes to the host's
    own non-loopback address (no packet leaves the machine): through an
    unprivileged ping socket (SOCK_DGRAM, IPPROTO_ICMP) and a raw socket.
    Both must fail in the jail without network."""
    prog = (
        "import socket,sys\n"
        "ok=[]\n"
        "for t in (socket.SOCK_DGRAM, socket.SOCK_RAW):\n"
        "    try:\n"
        "        s=socket.socket(socket.AF_INET,t,socket.IPPROTO_ICMP)\n"
        "        s.settimeout(3)\n"
        "        s.sendto(b'\\x08\\x00\\xf7\\xff\\x00\\x00\\x00\\x00',(sys.argv[1],0))\n"
        "        s.recv(64)\n"
        "        ok.append(t)\n"
        "    except OSError as e:\n"
        "        print('refused', t, e)\n"
        "print('REPLIED' if ok else 'NOREPLY', ok)\n")
    r = run(c, via, c.ws, f"python3 -c {shlex.quote(prog)} {c.host_addr}")
    out = r.stdout.decode(errors="replace")
    if "REPLIED" in out:
        raise Fail(f"ESCAPED: an ICMP echo to {c.host_addr} was answered:\n{out}")
    if "NOREPLY" not in out:
        raise Skip(f"python3 did not run in the jail (exit {r.returncode}): {te.out_of(r)[-300:]}")
    return out.strip().replace("\n", "; ")


@case("codex 'sandbox_blocks_dev_tcp_redirection': bash /dev/tcp to a host listener, network = false")
def _(c, via):
    """Codex, linux-sandbox/tests/suite/landlock.rs,
    sandbox_blocks_dev_tcp_redirection: `echo hi > /dev/tcp/127.0.0.1/80`.
    Here to a listener of the test on the host's 127.0.0.1 and on its
    non-loopback address: the redirection must fail and neither listener
    may see a connection."""
    if not os.access("/bin/bash", os.X_OK):
        raise Skip("bash is not installed")
    ls = []
    for addr in ("127.0.0.1", c.host_addr):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((addr, 0))
        s.listen(4)
        s.setblocking(False)
        ls.append(s)
    try:
        script = "; ".join(
            f"bash -c 'echo hi > /dev/tcp/{s.getsockname()[0]}/{s.getsockname()[1]}' 2>/dev/null && echo SENT"
            for s in ls) + "; echo done"
        r = run(c, via, c.ws, script)
        if b"done" not in r.stdout:
            raise Fail(f"the call did not run (exit {r.returncode}):\n{te.out_of(r)}")
        for s in ls:
            try:
                conn, peer = s.accept()
                conn.close()
                raise Fail(f"ESCAPED: {s.getsockname()} accepted a connection from {peer}")
            except BlockingIOError:
                pass
        if b"SENT" in r.stdout:
            raise Fail(f"ESCAPED: a /dev/tcp redirection succeeded:\n{te.out_of(r)}")
    finally:
        for s in ls:
            s.close()
    return "both redirections failed, no listener saw a connection"


@case("ai-jail/nono '/proc and /sys writes': core_pattern, sysrq-trigger, uevent_helper")
def _(c, via):
    """ai-jail's and nono's /proc and /sys hardening (the container-escape
    classic: a written /proc/sys/kernel/core_pattern runs a program as host
    root on the next crash; /proc/sysrq-trigger; /sys/kernel/uevent_helper).
    Every write must fail and the host's core_pattern stay as it was."""
    before = te.read_host("/proc/sys/kernel/core_pattern")
    targets = ["/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/sys/kernel/uevent_helper",
               "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches"]
    script = "; ".join(f"(printf x > {t}) 2>/dev/null && echo WROTE:{t}" for t in targets) + "; echo done"
    r = run(c, via, c.ws, script)
    if b"done" not in r.stdout:
        raise Fail(f"the call did not run (exit {r.returncode}):\n{te.out_of(r)}")
    if b"WROTE:" in r.stdout or te.read_host("/proc/sys/kernel/core_pattern") != before:
        raise Fail(f"ESCAPED: a write went through:\n{te.out_of(r)}")
    return "every write refused; core_pattern unchanged"


@case("nono/ai-jail '/proc/*/root': the host ~/.ssh/id_rsa through /proc/self/root and /proc/1/root")
def _(c, via):
    """nono's and ai-jail's /proc cases: a path through /proc/self/root,
    /proc/1/root, /proc/self/cwd/.. or /proc/thread-self/root reaches the
    jail's own root, never the host's: the fake home's key stays out."""
    key = os.path.join(c.home, ".ssh/id_rsa")
    paths = [f"/proc/self/root{key}", f"/proc/1/root{key}", f"/proc/thread-self/root{key}",
             f"/proc/self/cwd/../home/.ssh/id_rsa", f"/proc/1/cwd/../home/.ssh/id_rsa"]
    r = run(c, via, c.ws, "; ".join(f"cat {shlex.quote(p)} 2>/dev/null" for p in paths) + "; echo done")
    if c.m["ssh"].encode() in r.stdout + r.stderr:
        raise Fail(f"ESCAPED: the key's marker came out:\n{te.out_of(r)}")
    if b"done" not in r.stdout:
        raise Fail(f"the call did not run (exit {r.returncode}):\n{te.out_of(r)}")
    return "no path gave the key"


@case("sandbox-runtime/codex 'unix sockets': every socket the host lists in /proc/net/unix is unreachable")
def _(c, via):
    """sandbox-runtime, seccomp-filter.test.ts 'should block Unix socket
    creation' and integration.test.ts 'should block Unix socket
    connections', Codex's managed_proxy_unix_sockets_tests.rs: a jail
    reaching a host socket (a session bus, docker's, another agent's
    daemon) is out. Each filesystem socket the host has bound (its
    /proc/net/unix, the test's own daemon's included) is tried from the
    jail by its host path; none may connect."""
    paths = set()
    with open("/proc/net/unix") as f:
        next(f)
        for ln in f:
            parts = ln.split()
            if len(parts) >= 8 and parts[7].startswith("/"):
                paths.add(parts[7])
    paths = sorted(p for p in paths if not p.startswith(c.t + "/ws"))
    if not paths:
        raise Skip("the host has no filesystem unix socket")
    prog = (
        "import socket,sys\n"
        "for p in sys.argv[1:]:\n"
        "    for t in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):\n"
        "        try:\n"
        "            s=socket.socket(socket.AF_UNIX,t); s.settimeout(2); s.connect(p)\n"
        "            print('CONNECTED', p); s.close(); break\n"
        "        except OSError:\n"
        "            pass\n"
        "print('done')\n")
    r = run(c, via, c.ws, f"python3 -c {shlex.quote(prog)} " + " ".join(shlex.quote(p) for p in paths))
    out = r.stdout.decode(errors="replace")
    if "CONNECTED" in out:
        raise Fail("ESCAPED: " + "; ".join(ln for ln in out.splitlines() if "CONNECTED" in ln))
    if "done" not in out:
        raise Skip(f"python3 did not run in the jail (exit {r.returncode}): {te.out_of(r)[-300:]}")
    return f"{len(paths)} host sockets tried, none reached"


@case("ai-jail 'host shared memory': the host's SysV IPC objects and /dev/shm files are out of reach")
def _(c, via):
    """ai-jail's 'Host shared memory: off' (`--host-shm` enables host
    cross-process IPC): a SysV message queue and shared memory segment the
    host made world-readable (mode 0666), and a world-readable file in the
    host's /dev/shm. The jail must list none of them, read none and write
    none (its IPC namespace and /dev/shm are its own)."""
    for tool in ("ipcmk", "ipcs", "ipcrm"):
        if not shutil.which(tool):
            raise Skip(f"{tool} is not installed (util-linux)")
    tag = secrets.token_hex(4)
    ids = []
    try:
        for flag in ("-Q", "-M"):
            args = ["ipcmk", flag] + (["4096"] if flag == "-M" else []) + ["-p", "0666"]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode != 0 or not r.stdout.split():
                raise Skip(f"ipcmk {flag} failed on the host: {r.stderr.strip()}")
            ids.append((flag, r.stdout.split()[-1]))
        shm = f"/dev/shm/vectora-peer-{tag}"
        te.write(shm, c.m["sibling"], 0o666)
        qid, mid = ids[0][1], ids[1][1]
        script = (f"ipcs -q -m 2>&1; ipcrm -q {qid} 2>/dev/null && echo REMOVED:q; "
                  f"ipcrm -m {mid} 2>/dev/null && echo REMOVED:m; cat {shm} 2>/dev/null; "
                  f"echo x > /dev/shm/vectora-peer-{tag}-w; echo done")
        r = run(c, via, c.ws, script)
        out = r.stdout.decode(errors="replace")
        if "done" not in out:
            raise Fail(f"the call did not run (exit {r.returncode}):\n{te.out_of(r)}")
        seen = [f"{flag} {i}" for flag, i in ids if re.search(rf"(?m)^\S+\s+{i}\s", out)]
        if seen or "REMOVED" in out or c.m["sibling"] in out:
            raise Fail(f"ESCAPED: the jail saw or touched the host's IPC objects ({seen}):\n{out}")
        if os.path.exists(f"/dev/shm/vectora-peer-{tag}-w"):
            raise Fail("ESCAPED: the jail's write landed in the host's /dev/shm")
        live = subprocess.run(["ipcs", "-q", "-m"], capture_output=True, text=True).stdout
        if not all(re.search(rf"(?m)^\S+\s+{i}\s", live) for _f, i in ids):
            raise Fail(f"ESCAPED: a host IPC object is gone:\n{live}")
        return "none listed, read, removed or written"
    finally:
        for flag, i in ids:
            subprocess.run(["ipcrm", "-q" if flag == "-Q" else "-m", i], capture_output=True)
        for p in (f"/dev/shm/vectora-peer-{tag}", f"/dev/shm/vectora-peer-{tag}-w"):
            try:
                os.unlink(p)
            except OSError:
                pass


@case("sandbox-runtime 'empty allowedDomains': network = [] is no network, not an open one")
def _(c, via):
    """sandbox-runtime, integration.test.ts, 'Empty allowedDomains Network
    Blocking' (an empty allowlist had meant unrestricted network there):
    a workspace with `network = []` must reach neither a host listener on
    the host's own address nor one on 127.0.0.1 by TCP, and the listeners
    must see nothing. Embedded, such a workspace is refused (exit 125: the
    allowlist is the daemon's proxy), which holds too."""
    ws = getattr(c, "ws_empty_allow", None)
    if ws is None:
        ws = c.ws_empty_allow = c.make_ws("ws-empty-allow", network=[])
    ls = []
    for addr in (c.host_addr, "127.0.0.1"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((addr, 0))
        s.listen(4)
        s.setblocking(False)
        ls.append(s)
    try:
        verdicts = []
        for s in ls:
            addr, port = s.getsockname()
            r = c.cli(["exec", "-w", ws, "--", c.probe_path(ws), "tcp", addr, str(port)],
                      {"VECTORA_SANDBOX_SOCKET": c.allow_sock} if via == "daemon" else None)
            if r.returncode == te.EXIT_REFUSED:
                verdicts.append(f"{addr}: the call was refused: {r.stderr.decode(errors='replace').strip()[:200]}")
                continue
            verdicts.append(te.expect_blocked(r))
        for s in ls:
            try:
                conn, peer = s.accept()
                conn.close()
                raise Fail(f"ESCAPED: {s.getsockname()} accepted a connection from {peer}")
            except BlockingIOError:
                pass
    finally:
        for s in ls:
            s.close()
    return "; ".join(verdicts)


def compat_case(abi):
    how = "int $0x80" if abi == "i386" else "syscall numbers with the x32 bit"
    @case(f"seccomp bypass through the {abi} system-call entry ({how})")
    def _(c, via):
        """The peers' seccomp cases (sandbox-runtime seccomp-filter.test.ts's
        architecture checks, Codex's seccomp filter for its own
        architecture only, nono's and ai-jail's denylists): the calls the
        filter denies, made through the other entry an x86_64 process has
        (int $0x80 as i386, or the x32 bit). The filter must kill or deny
        each (the probe's `compat` attempt); a kernel without that entry is
        a skip."""
        ctl = subprocess.run([te.PROBE, "compat", abi, "control"], capture_output=True)
        first = ctl.stdout.decode(errors="replace").strip().splitlines()[:1]
        extra = []
        if ctl.returncode == 3 and first and first[0].startswith("SKIP:"):
            if abi == "i386":
                # The kernel refuses int $0x80 before any filter sees it:
                # the way around the filter does not exist here.
                raise NotApplicable(first[0][5:].strip())
            # The filter still sees x32 numbers first: only its kill counts.
            extra = ["sigsys"]
        elif ctl.returncode != 0:
            raise Fail(f"the control outside the jail failed (exit {ctl.returncode}):\n{te.out_of(ctl)}")
        if via == "daemon":
            c.via = "bg"
        try:
            r = c.probe(c.ws, "compat", abi, *extra)
        finally:
            c.via = None
        lines = te.probe_lines(r)
        bad = [ln for ln in lines if ln.startswith("ESCAPED:")]
        if bad:
            raise Fail("\n".join(bad))
        if r.returncode != 0 or not lines:
            raise Fail(f"the probe did not run as expected (exit {r.returncode}):\n{te.out_of(r)}")
        return f"{len(lines)} calls denied" + (" (by SIGSYS: this kernel has no x32 entry)" if extra else "")


for _abi in ("i386", "x32"):
    compat_case(_abi)


# ---------------------------------------------------------------- main

def run_case(name, fn, c, via):
    try:
        te.tap(True, name, fn(c, via))
    except Skip as e:
        T.skip(name, str(e))
    except NotApplicable as e:
        T.not_applicable(name, str(e))
    except Fail as e:
        te.tap(False, name, str(e))
    except Exception:
        te.tap(False, name, traceback.format_exc())


def main():
    # Arguments: only the cases whose name holds one of them.
    if sys.argv[1:]:
        CASES[:] = [(n, f) for n, f in CASES if any(a in n for a in sys.argv[1:])]
    why = te.preflight()
    if te.BACKEND.name != "local":
        why = why or "the peer cases run on the local backend"
    idents = te.identities()
    if why:
        for ident in idents:
            for name, _fn in CASES:
                for via in ("embedded", "daemon"):
                    T.skip(f"[{ident.name}] {via}: {name}", why)
        sys.exit(T.finish())
    if not te.ROOT:
        T.root_only("[root] the peer cases as root", "not running as root")
    for ident in idents:
        c = te.Ctx(ident)
        c.daemon_tokens = []
        prefix = f"[{ident.name}] "
        try:
            c.host_addr = te.host_address()
            c.start_daemon()
            r = c.cli(["exec", "-w", c.ws, "--", c.probe_path(c.ws), "status", "NoNewPrivs=1"])
            if r.returncode != 0:
                te.tap(False, f"{prefix}the jail starts", f"exit {r.returncode}:\n{te.out_of(r)}")
                continue
            te.tap(True, f"{prefix}the jail starts")
            for via in ("embedded", "daemon"):
                for name, fn in CASES:
                    run_case(f"{prefix}{via}: {name}", fn, c, via)
        except Exception:
            te.tap(False, f"{prefix}setup", traceback.format_exc())
        finally:
            c.cleanup()
            if c.daemon_tokens:
                # The daemon stopped (cleanup): its jails with it.
                left = {t: wait_gone(t) for t in c.daemon_tokens}
                left = {t: p for t, p in left.items() if p}
                te.tap(not left, f"{prefix}daemon: what calls left in its warm jail ends with the daemon",
                       f"ESCAPED: still running after the daemon stopped: {left}" if left else
                       f"{len(c.daemon_tokens)} sleepers gone")
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
