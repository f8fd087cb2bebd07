#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the agent plants cannot redirect the jail (issue 25, sections 1 and 3).

The agent makes symlinks in its workspace with its own terminal, then the
host does what it does every day (edits vectora.toml, names a directory to
the tools). The host must never follow a link the agent made: a listed path
through one refuses the workspace with the entry and the link named; a
workspace path through one is served by the workspace it lies in as written,
or refused, never unsandboxed. Through the daemon, the embedded CLI and the
MCP server without a daemon; as root with a user-owned and a root-owned
workspace. TAP; a case that cannot run here says SKIP."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import AS_USER, CLI, DAEMON, OWNER, ROOT, Daemon, NotApplicable, Skip, Tap, needs_root, check, chown_tree, make_ws  # noqa: E402


EMBEDDED_STATE = {}


def cli(*args, stdin=None, sock=None):
    e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    e.update(EMBEDDED_STATE)
    pre = ["--no-daemon"]
    if sock:
        e["VECTORA_SANDBOX_SOCKET"] = sock
        pre = []
    return subprocess.run([CLI, *pre, *args], input=stdin, capture_output=True, text=True, env=e, timeout=60)


def mcp_terminal(ws, command, env=None):
    """One terminal call through `vectora-sandbox mcp -w WS` without a daemon
    (env: the whole environment instead)."""
    if env is None:
        e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
        e["XDG_RUNTIME_DIR"] = "/nonexistent-vs-test"  # no daemon to find
        e.update(EMBEDDED_STATE)
    else:
        e = env
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "terminal", "arguments": {"command": command}}},
    ]
    p = subprocess.run([CLI, "mcp", "-w", ws], input="".join(json.dumps(m) + "\n" for m in msgs),
                       capture_output=True, text=True, env=e, timeout=60)
    if p.returncode != 0 and not p.stdout:
        return {"startup_error": p.stderr.strip(), "rc": p.returncode}
    for line in p.stdout.splitlines():
        m = json.loads(line)
        if m.get("id") == 2:
            return m
    return {"no_reply": p.stdout + p.stderr}


def secret_dir(tmp, name, owner_uid=None, mode=0o755):
    """A directory the jail must never reach, with a file in it."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    with open(os.path.join(d, "authorized_keys"), "w") as f:
        f.write("ssh-ed25519 HOST-KEY\n")
    if owner_uid is not None:
        os.chown(d, owner_uid, owner_uid)
        os.chown(os.path.join(d, "authorized_keys"), owner_uid, owner_uid)
    os.chmod(d, mode)
    return d


def touch_config(ws):
    """What any host edit does: the policy is loaded again."""
    with open(os.path.join(ws, "vectora.toml"), "a") as f:
        f.write("# edited on the host\n")


def unchanged(path):
    with open(os.path.join(path, "authorized_keys")) as f:
        return f.read() == "ssh-ed25519 HOST-KEY\n"


LISTED = '[sandbox]\nrw_paths = [".", "build"]\nro_paths = ["lib"]\nmask = [".env"]\n'


def listed_link_case(run, ws, target, what):
    """run(command) -> (ran: bool, detail). The agent links build and lib to
    target; after a host edit of vectora.toml, nothing reaches target."""
    ran, detail = run("ln -s %s build && ln -s %s lib && echo linked" % (target, target))
    check(ran and "linked" in detail, "%s: the agent's first call: %s" % (what, detail))
    touch_config(ws)
    ran, detail = run("echo PWNED >> build/authorized_keys; cat lib/authorized_keys; echo done")
    check(not ran, "%s: the call after the links ran: %s" % (what, detail))
    check("goes through the symlink %s/build -> %s" % (ws, target) in detail, "%s: the refusal names the link: %s" % (what, detail))
    check(unchanged(target), "%s: %s/authorized_keys was written" % (what, target))
    c = cli("check", "-w", ws)
    check(c.returncode == 2 and "rw_paths[1]" in c.stderr and "symlink" in c.stderr, "%s: check: %s" % (what, c.stderr))


def t_listed_link_daemon(d, tmp):
    target = secret_dir(tmp, "home-d/.ssh", OWNER.pw_uid if ROOT else None)
    ws = make_ws(tmp, "listed-d", LISTED)
    c = d.conn()

    def run(cmd):
        r = c.call({"tool": "terminal", "workspace": ws, "command": cmd})
        if r.get("ok"):
            return True, r["stdout"] + r["stderr"]
        return False, json.dumps(r)
    listed_link_case(run, ws, target, "daemon")
    c.close()


def t_listed_link_embedded(d, tmp):
    target = secret_dir(tmp, "home-e/.ssh", OWNER.pw_uid if ROOT else None)
    ws = make_ws(tmp, "listed-e", LISTED)

    def run(cmd):
        p = cli("run", "-w", ws, cmd)
        return p.returncode == 0, p.stdout + p.stderr
    listed_link_case(run, ws, target, "embedded")


def t_listed_link_mcp(d, tmp):
    target = secret_dir(tmp, "home-m/.ssh", OWNER.pw_uid if ROOT else None)
    ws = make_ws(tmp, "listed-m", LISTED)

    def run(cmd):
        m = mcp_terminal(ws, cmd)
        res = m.get("result") or {}
        text = json.dumps(m)
        return bool(res) and not res.get("isError"), text
    listed_link_case(run, ws, target, "mcp")


def t_listed_link_root_owned(d, tmp):
    """A root-owned workspace: the idmapped mount must never turn the
    agent's link into writes as host root into a root-only directory."""
    if not ROOT:
        needs_root("a root-owned workspace needs a root daemon")
    target = secret_dir(tmp, "spool/crontabs", 0, mode=0o700)
    ws = os.path.join(tmp, "listed-root")
    os.makedirs(ws)
    os.chmod(ws, 0o755)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write(LISTED)
    c = d.conn()
    r = c.call({"tool": "terminal", "workspace": ws, "command": "ln -s %s build && echo linked" % target})
    check(r.get("ok") and "linked" in r["stdout"], r)
    touch_config(ws)
    r = c.call({"tool": "terminal", "workspace": ws, "command": "echo '* * * * * root id' > build/root; ls build"})
    check(not r.get("ok") and "symlink" in r["error"]["message"], r)
    check(os.listdir(target) == ["authorized_keys"], os.listdir(target))
    c.close()


def t_idmap_only_the_workspace_tree(d, tmp):
    """A root-owned workspace listing a root-owned path outside it: the
    idmapped mount (which writes as host root) is made for the workspace's
    own tree only; the start is refused, nothing is written there."""
    if not ROOT:
        needs_root("a root-owned workspace needs a root daemon")
    target = secret_dir(tmp, "root-elsewhere", 0, mode=0o755)
    ws = os.path.join(tmp, "idmap-outside")
    os.makedirs(ws)
    os.chmod(ws, 0o755)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write('[sandbox]\nrw_paths = [".", "%s"]\n' % target)
    r = d.call({"tool": "terminal", "workspace": ws, "command": "echo x > %s/planted; echo ran" % target})
    check(not r.get("ok") and "outside the workspace" in r["error"]["message"], r)
    check(not os.path.exists(os.path.join(target, "planted")), os.listdir(target))
    p = cli("run", "-w", ws, "echo x > %s/planted; echo ran" % target)
    check(p.returncode == 125 and "outside the workspace" in p.stderr, p.stdout + p.stderr)
    check(not os.path.exists(os.path.join(target, "planted")), os.listdir(target))


def t_listed_path_below_link(d, tmp):
    """The link on the way, not at the end: ro_paths = ["sub/data"] with the
    agent's sub -> a secret tree."""
    target = secret_dir(tmp, "deep-secret/data", OWNER.pw_uid if ROOT else None)
    ws = make_ws(tmp, "listed-deep", '[sandbox]\nro_paths = ["sub/data"]\n')
    c = d.conn()
    r = c.call({"tool": "terminal", "workspace": ws, "command": "ln -s %s sub && echo linked" % os.path.dirname(target)})
    check(r.get("ok"), r)
    touch_config(ws)
    r = c.call({"tool": "terminal", "workspace": ws, "command": "cat sub/data/authorized_keys"})
    check(not r.get("ok") and "goes through the symlink %s/sub" % ws in r["error"]["message"], r)
    c.close()


ESCAPE = '[sandbox]\nmask = [".env"]\n'


def escape_ws(tmp, name, d=None):
    """A sandboxed workspace whose agent made escape -> / (by its terminal),
    and a marker path on the host the command would create."""
    ws = make_ws(tmp, name, ESCAPE)
    p = cli("run", "-w", ws, "ln -s / escape && echo linked")
    check(p.returncode == 0 and "linked" in p.stdout, p.stdout + p.stderr)
    marker = os.path.join(tmp, name + "-marker")
    return ws, os.path.join(ws, "escape"), marker


def t_workspace_through_link_daemon(d, tmp):
    ws, esc, marker = escape_ws(tmp, "esc-d")
    c = d.conn()
    for req in ({"tool": "terminal", "workspace": esc, "command": "touch %s" % marker},
                {"tool": "terminal", "workspace": esc + "/tmp", "command": "touch %s" % marker},
                {"tool": "file_write", "workspace": esc, "path": marker, "content": "x"}):
        r = c.call(req)
        check(not r.get("ok") and r["error"]["code"] == "workspace_not_found", r)
        check("lies in the workspace %s as written" % ws in r["error"]["message"], r)
        check(not os.path.exists(marker), "%s ran on the host" % req)
    # require_sandbox cannot be what saves it: without it, still refused.
    c.close()


def t_workspace_through_link_embedded(d, tmp):
    ws, esc, marker = escape_ws(tmp, "esc-e")
    for args in (("run", "-w", esc, "touch %s" % marker), ("run", "-w", esc + "/tmp", "touch %s" % marker),
                 ("write", "-w", esc, marker)):
        p = cli(*args, stdin="x")
        check(p.returncode == 125 and "as written" in p.stderr, (args, p.returncode, p.stderr))
        check(not os.path.exists(marker), "%s ran on the host" % (args,))
    # Relative, from inside the workspace.
    p = subprocess.run([CLI, "--no-daemon", "run", "-w", "escape", "touch %s" % marker], cwd=ws,
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 125 and not os.path.exists(marker), p.stderr)


def t_workspace_through_link_mcp(d, tmp):
    ws, esc, marker = escape_ws(tmp, "esc-m")
    m = mcp_terminal(esc, "touch %s" % marker)
    text = json.dumps(m)
    res = m.get("result") or {}
    check(("startup_error" in m or res.get("isError")) and "workspace" in text, text)
    check(not os.path.exists(marker), "the MCP server ran it on the host: " + text)


def t_workspace_link_to_another_workspace(d, tmp):
    """`sub -> ~/other`, a workspace with a vectora.toml and no sandbox: the
    link's own vectora.toml look-up must not make it a workspace as written."""
    other = make_ws(tmp, "other-plain", "# no sandbox\n", {".env": "SECRET=1\n"})
    ws = make_ws(tmp, "redirected", ESCAPE)
    p = cli("run", "-w", ws, "ln -s %s sub && echo linked" % other)
    check(p.returncode == 0, p.stderr)
    sub = os.path.join(ws, "sub")
    p = cli("run", "-w", sub, "cat .env")
    check(p.returncode == 125 and "SECRET" not in p.stdout and "as written" in p.stderr, p.stdout + p.stderr)
    r = d.call({"tool": "terminal", "workspace": sub, "command": "cat .env"})
    check(not r.get("ok") and "as written" in r["error"]["message"] and "SECRET" not in json.dumps(r), r)


def t_link_inside_same_workspace_served(d, tmp):
    """A link that stays inside its workspace is served by that jail."""
    ws = make_ws(tmp, "inside", ESCAPE, {"sub/a.txt": "A\n"})
    p = cli("run", "-w", ws, "ln -s sub alias && echo linked")
    check(p.returncode == 0, p.stderr)
    p = cli("run", "-w", os.path.join(ws, "alias"), "cat a.txt")
    check(p.returncode == 0 and p.stdout == "A\n", p.stdout + p.stderr)
    r = d.call({"tool": "terminal", "workspace": os.path.join(ws, "alias"), "command": "cat a.txt"})
    check(r.get("ok") and r["stdout"] == "A\n" and r["sandboxed"] is True, r)



# ---------------------------------------------------------------- the approval store (section 4)


def run_json(ws, cmd):
    p = cli("run", "--json", "-w", ws, cmd)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"unparsed": p.stdout + p.stderr, "rc": p.returncode}


def t_allow_without_config_refused(d, tmp):
    """`allow` typed where there is no vectora.toml records nothing, so a
    sandbox made below later applies at once."""
    top = make_ws(tmp, "allow-top")
    p = cli("allow", "-w", top)
    check(p.returncode != 0 and "nothing to approve" in p.stderr, p.stdout + p.stderr)
    ws = make_ws(tmp, "allow-top/proj", '[sandbox]\nmask = [".env"]\n', {".env": "SECRET=1\n"})
    r = run_json(ws, "cat .env; echo done")
    check(r.get("sandboxed") is True and "SECRET" not in json.dumps(r), r)
    # Through the daemon too.
    r = d.call({"tool": "policy_allow", "workspace": top})
    check(not r.get("ok") and "nothing to approve" in json.dumps(r), r)


def t_sandbox_below_unsandboxed_entry(d, tmp):
    """An approved unsandboxed workspace (a vectora.toml with no [sandbox],
    allowed) holding a sandboxed one: the inner sandbox is a tightening."""
    top = make_ws(tmp, "plain-top", "# no sandbox here\n")
    p = cli("allow", "-w", top)
    check(p.returncode == 0, p.stdout + p.stderr)
    ws = make_ws(tmp, "plain-top/inner", '[sandbox]\nmask = [".env"]\n', {".env": "SECRET=1\n"})
    r = run_json(ws, "cat .env; echo done")
    check(r.get("sandboxed") is True and "SECRET" not in json.dumps(r), r)
    top2 = make_ws(tmp, "plain-top-d", "# no sandbox here\n")
    r = d.call({"tool": "policy_allow", "workspace": top2})
    check(r.get("ok"), r)
    ws2 = make_ws(tmp, "plain-top-d/inner", '[sandbox]\nmask = [".env"]\n', {".env": "SECRET=1\n"})
    r = d.call({"tool": "terminal", "workspace": ws2, "command": "cat .env; echo done"})
    check(r.get("ok") and r["sandboxed"] is True and "SECRET" not in r["stdout"], r)


def moved_case(run, tmp, name):
    ws = make_ws(tmp, name, '[sandbox]\nmask = [".env"]\n', {".env": "SECRET=1\n"})
    r = run(ws, "cat .env; echo first")
    check(r.get("sandboxed") is True and "SECRET" not in json.dumps(r), r)
    with open(os.path.join(ws, "vectora.toml"), "w") as f:
        f.write("[sandbox]\nmask = []\n")
    r = run(ws, "cat .env; echo pending")
    check(r.get("policy_pending") and "SECRET" not in json.dumps(r), r)
    moved = ws + "-moved"
    os.rename(ws, moved)
    r = run(moved, "cat .env; echo moved")
    check("SECRET" not in json.dumps(r), "the loosening applied after a rename: %s" % r)
    check(r.get("policy_pending"), r)


def t_moved_workspace_keeps_pending_embedded(d, tmp):
    moved_case(run_json, tmp, "moved-e")


def t_moved_workspace_keeps_pending_daemon(d, tmp):
    c = d.conn()
    moved_case(lambda ws, cmd: c.call({"tool": "terminal", "workspace": ws, "command": cmd}), tmp, "moved-d")
    c.close()


def t_first_sight_of_half_written_config(d, tmp):
    """The host rewrites vectora.toml in place while a client's first call
    reads it: the prefix without the mask line must not apply."""
    import threading
    import time
    for mode in ("daemon", "embedded"):
        ws = make_ws(tmp, "half-" + mode, None, {".env": "SECRET=1\n"})
        cfg = os.path.join(ws, "vectora.toml")
        with open(cfg, "w") as f:
            f.write("[sandbox]\nenabled = true\n")
            f.flush()

            def finish():
                time.sleep(0.03)
                f.write('mask = [".env"]\n')
                f.flush()
            t = threading.Thread(target=finish)
            t.start()
            if mode == "daemon":
                r = d.call({"tool": "terminal", "workspace": ws, "command": "cat .env; echo done"})
            else:
                r = run_json(ws, "cat .env; echo done")
            t.join()
        check("SECRET" not in json.dumps(r), "%s: the half-written config applied: %s" % (mode, r))


# ---------------------------------------------------------------- masks over time (section 5)


def t_hard_link_of_masked_file(d, tmp):
    """A masked file's other names (hard links the host made) are masked
    too, through a command and the file tools, daemon and embedded."""
    ws = make_ws(tmp, "hardlink", '[sandbox]\nmask = [".env", ".aws"]\n',
                 {".env": "SECRET=1\n", ".aws/credentials": "AWSKEY\n"})
    os.link(os.path.join(ws, ".env"), os.path.join(ws, "notes.txt"))
    os.makedirs(os.path.join(ws, "deep/er"))
    os.link(os.path.join(ws, ".aws/credentials"), os.path.join(ws, "deep/er/creds"))
    chown_tree(ws)
    r = d.call({"tool": "terminal", "workspace": ws, "command": "cat notes.txt deep/er/creds; echo end"})
    check(r.get("ok") and "SECRET" not in r["stdout"] and "AWSKEY" not in r["stdout"], r)
    for path in ("notes.txt", "deep/er/creds"):
        r = d.call({"tool": "file_read", "workspace": ws, "path": path})
        check("SECRET" not in json.dumps(r) and "AWSKEY" not in json.dumps(r), r)
    p = cli("run", "-w", ws, "cat notes.txt deep/er/creds; echo end")
    check(p.returncode == 0 and "SECRET" not in p.stdout and "AWSKEY" not in p.stdout, p.stdout + p.stderr)


# A tight loop of link(2) attempts: it wins the race against the daemon's
# re-mask (a reaction of a millisecond or so) every time.
LINKER = ("import os, time\n"
          "end = time.monotonic() + 30\n"
          "while time.monotonic() < end:\n"
          "    try:\n"
          "        os.link(\"sub/.env\", \"sub/alias\"); break\n"
          "    except OSError:\n"
          "        pass\n")


def t_hard_link_made_in_the_remask_window(d, tmp):
    """The jail links a masked file the moment the host makes it, before the
    daemon re-masks: after the re-mask the link is masked too. The race is
    the jail's to win (a tight loop against a reaction of a millisecond);
    it is tried again when it was lost."""
    import time
    for attempt in range(8):
        ws = make_ws(tmp, "remask-link-%d" % attempt, '[sandbox]\nmask = [".env"]\n', {"sub/keep.txt": "k\n"})
        c = d.conn()
        r = c.call({"tool": "process_start", "workspace": ws, "command": "exec python3 -c '%s'" % LINKER})
        check(r.get("ok"), r)
        time.sleep(0.5)
        # Made whole (owner included: protected_hardlinks refuses a link to
        # someone else's file) outside the workspace, then renamed in.
        staged = os.path.join(tmp, "staged-env-%d" % attempt)
        with open(staged, "w") as f:
            f.write("LEAK=1\n")
        os.chown(staged, OWNER.pw_uid, OWNER.pw_gid)
        os.rename(staged, os.path.join(ws, "sub", ".env"))
        linked = False
        for _ in range(100):
            if os.path.exists(os.path.join(ws, "sub", "alias")):
                linked = True
                break
            time.sleep(0.01)
        if not linked:
            c.close()
            continue
        leaked = None
        for _ in range(100):
            r = c.call({"tool": "terminal", "workspace": ws, "command": "cat sub/alias sub/.env; echo end"})
            if r.get("ok"):
                leaked = "LEAK" in r["stdout"]
                if not leaked:
                    break
            time.sleep(0.02)
        c.close()
        check(leaked is False, "the jail's hard link kept the secret readable after the re-mask: %s" % r)
        return
    raise Skip("the jail's link lost the race against the re-mask 8 times (nothing to check)")



class McpSession:
    """`vectora-sandbox mcp -w WS` without a daemon, one process for many
    terminal calls (its worker kept between them)."""

    def __init__(self, ws):
        e = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
        e["XDG_RUNTIME_DIR"] = "/nonexistent-vs-test"
        e.update(EMBEDDED_STATE)
        self.p = subprocess.Popen([CLI, "mcp", "-w", ws], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=e, text=True)
        self.next_id = 1
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}})
        self.p.stdout.readline()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()

    def call(self, command):
        """The tool's result (structuredContent when there is one) as JSON text."""
        self.next_id += 1
        i = self.next_id
        self.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                   "params": {"name": "terminal", "arguments": {"command": command}}})
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == i:
                return m

    def close(self):
        self.p.stdin.close()
        self.p.wait(20)


def t_mcp_session_masks_over_time(d, tmp):
    """`vectora-sandbox mcp` without a daemon keeps one worker for its
    session: a .env the host creates between two calls is masked for the
    second (it was readable through terminal)."""
    ws = make_ws(tmp, "mcp-session", '[sandbox]\nmask = [".env", "**/*.pem"]\n', {"sub/keep.txt": "k\n"})
    s = McpSession(ws)
    try:
        r = s.call("echo warm")
        check("warm" in json.dumps(r), r)
        for n, rel in enumerate((".env", "sub/deeper/key.pem")):
            path = os.path.join(ws, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("LEAKED-%d\n" % n)
            if ROOT:  # the new file and directory only: vectora.toml's ctime must not change
                os.chown(path, OWNER.pw_uid, OWNER.pw_gid)
                os.chown(os.path.dirname(path), OWNER.pw_uid, OWNER.pw_gid)
            r = s.call("cat %s; echo end" % rel)
            check("end" in json.dumps(r) and "LEAKED" not in json.dumps(r), "%s readable in the session: %s" % (rel, r))
    finally:
        s.close()


def t_mcp_session_keeps_nothing_running(d, tmp):
    """The MCP server without a daemon has no watch: a process the agent
    detached in one call (setsid, a double fork) ran on in the session's
    worker between calls and copied a .env the host created meanwhile
    into the workspace. Now a call that leaves a process behind ends its
    jail (jail_restarted), and a call that leaves nothing keeps the warm
    worker."""
    thief = "while :; do cat .env >> stolen.txt 2>/dev/null; sleep 0.02; done"
    for n, start in enumerate(("setsid sh -c '%s' </dev/null >/dev/null 2>&1 &" % thief,
                               "(sh -c '%s' </dev/null >/dev/null 2>&1 &);" % thief,
                               "nohup sh -c '%s' </dev/null >/dev/null 2>&1 &" % thief)):
        ws = make_ws(tmp, "mcp-strays-%d" % n, '[sandbox]\nmask = [".env"]\n')
        s = McpSession(ws)
        try:
            first = s.call("echo warm")
            again = s.call("echo warm")
            check("jail_restarted" not in json.dumps(first) + json.dumps(again),
                  "a call that left nothing restarted the jail: %s" % again)
            r = s.call(start + " echo started")
            check("started" in json.dumps(r), "variant %d: the call that left a process: %s" % (n, r))
            path = os.path.join(ws, ".env")
            with open(path, "w") as f:
                f.write("SECRET-%d\n" % n)
            if ROOT:
                os.chown(path, OWNER.pw_uid, OWNER.pw_gid)
            time.sleep(0.5)
            stolen = os.path.join(ws, "stolen.txt")
            got = open(stolen).read() if os.path.exists(stolen) else ""
            check("SECRET" not in got, "variant %d: the detached process copied the secret: %r" % (n, got))
            check("jail_restarted" in json.dumps(r), "variant %d: the reply does not say the jail ended: %s" % (n, r))
            text = " ".join(c.get("text", "") for c in r["result"]["content"])
            check("[jail restarted:" in text, "variant %d: the text an MCP client shows does not say it: %s" % (n, text))
            r = s.call("cat .env; echo end")
            check("end" in json.dumps(r) and "SECRET" not in json.dumps(r), r)
        finally:
            s.close()


def repointed_case(run, tmp, name):
    host = os.path.join(tmp, name + "-host")
    os.makedirs(os.path.join(host, "a"))
    os.makedirs(os.path.join(host, "b"))
    with open(os.path.join(host, "a", "f.txt"), "w") as f:
        f.write("approved-target\n")
    with open(os.path.join(host, "b", "f.txt"), "w") as f:
        f.write("OTHER-TARGET\n")
    chown_tree(host)
    os.symlink(os.path.join(host, "a"), os.path.join(host, "alias"))
    ws = make_ws(tmp, name, '[sandbox]\nro_paths = ["%s/alias"]\n' % host)
    r = run(ws, "cat %s/a/f.txt" % host)  # bound at its real path
    check("approved-target" in json.dumps(r), r)
    os.unlink(os.path.join(host, "alias"))
    os.symlink(os.path.join(host, "b"), os.path.join(host, "alias"))
    touch_config(ws)  # the policy is loaded again (any edit, a restart)
    r = run(ws, "cat %s/b/f.txt; echo end" % host)
    text = json.dumps(r)
    check("OTHER-TARGET" not in text, "the re-pointed listed path was served without approval: %s" % text)
    check(r.get("policy_pending") and "now resolves to %s/b" % host in r["policy_pending"], r)
    return ws, host


def t_listed_path_repointed_needs_approval(d, tmp):
    """What a listed path resolves to is part of what was approved: a host
    link re-pointed is a loosening that waits for allow."""
    c = d.conn()
    ws, host = repointed_case(lambda w, cmd: c.call({"tool": "terminal", "workspace": w, "command": cmd}), tmp, "repoint-d")
    r = c.call({"tool": "policy_allow", "workspace": ws})
    check(r.get("ok"), r)
    r = c.call({"tool": "terminal", "workspace": ws, "command": "cat %s/b/f.txt" % host})
    check(r.get("ok") and "OTHER-TARGET" in r["stdout"] and not r.get("policy_pending"), r)
    c.close()
    repointed_case(run_json, tmp, "repoint-e")


def t_uncovered_workspace_is_masked(d, tmp):
    """rw_paths = ["sub"]: the jail sees the workspace read-only (its cwd),
    and its masks must hold there too (they applied to listed roots only:
    .env at the root was readable)."""
    import time
    ws = make_ws(tmp, "uncovered", '[sandbox]\nrw_paths = ["sub"]\nmask = [".env", "**/*.pem"]\n',
                 {".env": "SECRET=1\n", "sub/keep.txt": "k\n", "deep/k.pem": "PEM\n"})
    r = d.call({"tool": "terminal", "workspace": ws, "command": "cat .env deep/k.pem; echo end"})
    check(r.get("ok") and "SECRET" not in r["stdout"] and "PEM" not in r["stdout"], r)
    p = cli("run", "-w", ws, "cat .env deep/k.pem; echo end")
    check(p.returncode == 0 and "SECRET" not in p.stdout and "PEM" not in p.stdout, p.stdout + p.stderr)
    # Masks over time there too.
    with open(os.path.join(ws, "deep", "late.pem"), "w") as f:
        f.write("LATE\n")
    chown_tree(os.path.join(ws, "deep"))
    seen = None
    for _ in range(100):
        r = d.call({"tool": "terminal", "workspace": ws, "command": "cat deep/late.pem; echo end"})
        if r.get("ok"):
            seen = "LATE" in r["stdout"]
            if not seen:
                break
        time.sleep(0.02)
    check(seen is False, "a .pem made later at the read-only workspace stayed readable: %s" % r)


def t_repository_in_an_outside_writable_path(d, tmp):
    """rw_paths = [".", "/srv/shared"] where the outside path is a git
    repository: its .git/config and hooks are sealed like the workspace's
    (the jail appended core.fsmonitor and wrote a pre-commit hook, and the
    owner's git status and commit ran both)."""
    git = shutil.which("git")
    if not git:
        raise Skip("git is not installed")
    for mode in ("daemon", "embedded"):
        shared = os.path.join(tmp, "outside-repo-" + mode)
        os.makedirs(shared)
        genv = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=tmp, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b",
                    GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@b")
        subprocess.run([git, "init", "-q", shared], check=True, env=genv)
        subprocess.run([git, "-C", shared, "commit", "-q", "--allow-empty", "-m", "i"], check=True, env=genv)
        chown_tree(shared)
        ws = make_ws(tmp, "outside-ws-" + mode, '[sandbox]\nrw_paths = [".", "%s"]\n' % shared)
        marker = os.path.join(tmp, "outside-pwned-" + mode)
        cmd = ("printf '[core]\\n\\tfsmonitor = \"touch %s; false\"\\n' >> %s/.git/config; "
               "printf '#!/bin/sh\\ntouch %s\\n' > %s/.git/hooks/pre-commit; chmod +x %s/.git/hooks/pre-commit; echo done"
               % (marker, shared, marker, shared, shared))
        if mode == "daemon":
            r = d.call({"tool": "terminal", "workspace": ws, "command": cmd})
            check(r.get("ok") and "done" in r["stdout"], r)
        else:
            p = cli("run", "-w", ws, cmd)
            check(p.returncode == 0 and "done" in p.stdout, p.stdout + p.stderr)
        subprocess.run([git, "-C", shared, "-c", "safe.directory=*", "status"], capture_output=True, env=genv)
        subprocess.run([git, "-C", shared, "-c", "safe.directory=*", "commit", "-q", "--allow-empty", "-m", "x"],
                       capture_output=True, env=genv)
        check(not os.path.exists(marker), "%s: the host's git ran the jail's program" % mode)


def t_link_in_an_outside_writable_path(d, tmp):
    """rw_paths = [".", "/srv/shared"]: the agent makes /srv/shared/escape
    -> / and a platform passes the agent's working directory
    (`-w /srv/shared/escape`). It found no vectora.toml at / and ran
    unsandboxed on the host. A link met in a writable path that a
    sandboxed workspace lists outside itself is refused like one in the
    workspace, through the daemon, the embedded CLI and the MCP server;
    a real directory there without a vectora.toml is still served as one
    (it is no workspace). As root also through a bind mount of the shared
    path (the same directory under another name)."""
    for mode in ("daemon", "embedded", "mcp"):
        shared = os.path.join(tmp, "outside-rw-" + mode)
        os.makedirs(os.path.join(shared, "real"))
        chown_tree(shared)
        ws = make_ws(tmp, "outside-rw-ws-" + mode, '[sandbox]\nrw_paths = [".", "%s"]\n' % shared)
        marker = "/var/tmp/vs-outside-rw-%s-%d" % (mode, os.getpid())
        plant = "ln -s / %s/escape && echo planted" % shared
        escape = os.path.join(shared, "escape")
        host_cmd = "touch %s; id -u" % marker

        if mode == "daemon":
            def run(w, cmd):
                r = d.call({"tool": "terminal", "workspace": w, "command": cmd})
                return bool(r.get("ok")), json.dumps(r)
        elif mode == "embedded":
            def run(w, cmd):
                p = cli("run", "--json", "-w", w, cmd)
                return p.returncode == 0, p.stdout + p.stderr
        else:
            def run(w, cmd):
                m = mcp_terminal(w, cmd)
                res = m.get("result") or {}
                return bool(res) and not res.get("isError"), json.dumps(m)
        ran, out = run(ws, plant)
        check(ran and "planted" in out, "%s: the agent's call: %s" % (mode, out))
        names = [escape]
        alias = os.path.join(tmp, "outside-rw-alias-" + mode)
        if ROOT:
            # The host reaches the same directory under a second name (a
            # bind mount): still the jail's writable path (review finding).
            os.makedirs(alias)
            subprocess.run(["mount", "--bind", shared, alias], check=True)
            names.append(os.path.join(alias, "escape"))
        try:
            for name in names:
                ran, out = run(name, host_cmd)
                try:
                    check(not os.path.exists(marker), "%s: -w %s ran on the host: %s" % (mode, name, out))
                    check(not ran and "a writable path of a sandboxed workspace" in out and "symlink" in out,
                          "%s: the refusal of %s: %s" % (mode, name, out))
                finally:
                    if os.path.exists(marker):
                        os.unlink(marker)
        finally:
            if ROOT:
                subprocess.run(["umount", alias])
        # A real directory there, named by its real path: no workspace, served as any directory is.
        ran, out = run(os.path.join(shared, "real"), "echo served")
        check(ran and "served" in out, "%s: the real directory: %s" % (mode, out))


def t_two_stores_one_truth(d, tmp):
    """The root daemon's store and a user's embedded store: a loosening
    pending in one is pending in the other, not "first seen" (it applied at
    once in embedded mode)."""
    import pwd
    if not ROOT:
        needs_root("the system store and a second user need root")
    try:
        user = pwd.getpwnam("vectora-test")  # scripts/install-deps makes it, with a real home
    except KeyError:
        raise Skip("no account vectora-test with a home (scripts/install-deps creates it)")
    uid, home = user.pw_uid, user.pw_dir
    pre = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % user.pw_gid, "--clear-groups", "--"]
    uenv = {k: v for k, v in os.environ.items() if k not in ("VECTORA_SANDBOX_SOCKET", "VECTORA_SANDBOX_STATE_DIR")}
    uenv.update(HOME=home, XDG_STATE_HOME="", USER=user.pw_name)

    def owned(path):
        for dd, dirs, files in os.walk(path):
            os.lchown(dd, uid, user.pw_gid)
            for f in files:
                os.lchown(os.path.join(dd, f), uid, user.pw_gid)

    def user_run(ws, cmd):
        p = subprocess.run(pre + [CLI, "--no-daemon", "run", "--json", "-w", ws, cmd], capture_output=True, text=True,
                           env=uenv, timeout=60)
        try:
            return json.loads(p.stdout)
        except ValueError:
            return {"unparsed": p.stdout + p.stderr}
    # The root daemon on the system store (no --state-dir) saw it first.
    sysd = Daemon(tmp, "sysstore", env={k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_STATE_DIR"})
    try:
        ws = make_ws(tmp, "stores-a", '[sandbox]\nmask = [".env"]\n', {".env": "SECRET=1\n"})
        owned(ws)
        r = sysd.call({"tool": "terminal", "workspace": ws, "command": "cat .env; echo a"})
        check(r.get("ok") and "SECRET" not in r["stdout"], r)
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nmask = []\n")
        r = sysd.call({"tool": "terminal", "workspace": ws, "command": "cat .env; echo b"})
        check(r.get("policy_pending") and "SECRET" not in r["stdout"], r)
        r = user_run(ws, "cat .env; echo c")
        check("SECRET" not in json.dumps(r) and r.get("policy_pending"), "the user's embedded mode applied it: %s" % r)
        # The other way: the user's CLI saw it first, then the root daemon.
        ws2 = make_ws(tmp, "stores-b", '[sandbox]\nmask = [".env"]\n', {".env": "SECRET=1\n"})
        owned(ws2)
        r = user_run(ws2, "cat .env; echo d")
        check(r.get("sandboxed") and "SECRET" not in json.dumps(r), r)
        with open(os.path.join(ws2, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nmask = []\n")
        r = sysd.call({"tool": "terminal", "workspace": ws2, "command": "cat .env; echo e"})
        check(r.get("policy_pending") and "SECRET" not in r["stdout"], "the root daemon applied it: %s" % r)
    finally:
        sysd.stop()


def real_home_case(ud, tmp, mode, name, target, env, keys, store):
    ws = make_ws(tmp, "real-home-%s-%s" % (mode, name), LISTED)
    menv = dict(env)
    if mode != "daemon":
        menv["XDG_RUNTIME_DIR"] = "/nonexistent-vs-test"  # no daemon to find: embedded
    before = set(os.listdir(store)) if os.path.isdir(store) else set()

    def run(cmd):
        if mode == "mcp":
            m = mcp_terminal(ws, cmd, env=menv)
            res = m.get("result") or {}
            return bool(res) and not res.get("isError"), json.dumps(m)
        p = subprocess.run([CLI, "run", "-w", ws, cmd], capture_output=True, text=True, env=menv, timeout=60)
        return p.returncode == 0, p.stdout + p.stderr
    what = "%s, build -> %s" % (mode, target)
    ran, out = run("ln -s %s build && echo linked" % target)
    check(ran and "linked" in out, "%s: the agent's first call: %s" % (what, out))
    if mode == "daemon":
        check(ud.ws_status(ws) is not None, "%s: the call did not reach the user's daemon: %s" % (what, ud.status()))
    touch_config(ws)
    ran, out = run("echo PWNED >> build/authorized_keys; touch build/PLANTED; echo done")
    check(not ran and "goes through the symlink %s/build -> %s" % (ws, target) in out,
          "%s: the call after the link: %s" % (what, out))
    with open(keys) as f:
        check(f.read() == "ssh-ed25519 HOST-KEY\n", "%s: ~/.ssh/authorized_keys was written" % what)
    after = set(os.listdir(store)) if os.path.isdir(store) else set()
    check("PLANTED" not in after and "authorized_keys" not in after, "%s: a file was planted in the approval store" % what)
    check(before <= after, "%s: the approval store lost entries: %s" % (what, before - after))


def t_real_home_every_mode(d, tmp):
    """As an ordinary user with a real home (tests/helpers/as-user): the
    agent links the listed build to the user's own ~/.ssh, or to the user's
    own approval store, through the user's default daemon (its socket in
    $XDG_RUNTIME_DIR, its store in ~/.local/state), the embedded CLI and
    the MCP server, all on the user's default paths. Nothing is written to
    ~/.ssh/authorized_keys and the store gains no file."""
    if not AS_USER:
        raise NotApplicable("the real home of the account vectora-test (tests/helpers/as-user runs this)")
    home = os.environ["HOME"]
    check(os.stat(home).st_uid == os.geteuid(), "HOME %s is not this user's" % home)
    ssh = os.path.join(home, ".ssh")
    os.makedirs(ssh, mode=0o700, exist_ok=True)
    keys = os.path.join(ssh, "authorized_keys")
    with open(keys, "w") as f:
        f.write("ssh-ed25519 HOST-KEY\n")
    store = os.path.join(home, ".local/state/vectora-sandbox")
    env = {k: v for k, v in os.environ.items()
           if k not in ("VECTORA_SANDBOX_SOCKET", "VECTORA_SANDBOX_STATE_DIR", "XDG_STATE_HOME")}
    sock = os.path.join(os.environ["XDG_RUNTIME_DIR"], "vectora-sandbox.sock")
    # The user's own daemon, every path its default.
    ud = Daemon(tmp, "user-default", own_socket=False, env=env)
    try:
        check(ud.sock == sock and os.path.exists(sock), "the default socket: %s" % ud.sock)
        for mode in ("daemon", "embedded", "mcp"):
            for name, target in (("ssh", ssh), ("store", store)):
                real_home_case(ud, tmp, mode, name, target, env, keys, store)
    finally:
        ud.stop()


def t_error_lines_carry_no_control_bytes(d, tmp):
    """An error line quotes what vectora.toml says: an escape sequence the
    agent put there (a TOML "\u001b" in a key) reached the host user's
    terminal raw. It is shown as \x1b."""
    ws = make_ws(tmp, "esc-key", '[sandbox]\n"\\u001b]0;owned\\u0007\\u001b[31mred" = 1\n')
    p = cli("check", "-w", ws)
    check(p.returncode == 2 and "unknown key" in p.stderr, p.stderr)
    check("\x1b" not in p.stderr and "\x07" not in p.stderr and "\\x1b" in p.stderr, repr(p.stderr))

TESTS = [
    t_listed_link_daemon,
    t_listed_link_embedded,
    t_listed_link_mcp,
    t_listed_link_root_owned,
    t_idmap_only_the_workspace_tree,
    t_listed_path_below_link,
    t_workspace_through_link_daemon,
    t_workspace_through_link_embedded,
    t_workspace_through_link_mcp,
    t_workspace_link_to_another_workspace,
    t_link_inside_same_workspace_served,
    t_allow_without_config_refused,
    t_sandbox_below_unsandboxed_entry,
    t_moved_workspace_keeps_pending_embedded,
    t_moved_workspace_keeps_pending_daemon,
    t_first_sight_of_half_written_config,
    t_hard_link_of_masked_file,
    t_hard_link_made_in_the_remask_window,
    t_mcp_session_masks_over_time,
    t_mcp_session_keeps_nothing_running,
    t_listed_path_repointed_needs_approval,
    t_uncovered_workspace_is_masked,
    t_repository_in_an_outside_writable_path,
    t_link_in_an_outside_writable_path,
    t_two_stores_one_truth,
    t_error_lines_carry_no_control_bytes,
    t_real_home_every_mode,
]


def main():
    tap = Tap()
    if not os.access(DAEMON, os.X_OK) or not os.access(CLI, os.X_OK):
        tap.skip("planted", "%s or %s not built" % (DAEMON, CLI))
        sys.exit(tap.finish())
    if not shutil.which("bwrap"):
        tap.skip("planted", "bwrap not installed")
        sys.exit(tap.finish())
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="vs-planted-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    state = os.path.join(tmp, "state")
    # Embedded calls keep their approvals here, not in the host's store.
    EMBEDDED_STATE["VECTORA_SANDBOX_STATE_DIR"] = os.path.join(tmp, "state-embedded")
    d = Daemon(tmp, "d", extra=("--state-dir", state))
    try:
        for t in TESTS:
            if not only or t.__name__ in only:
                tap.case(t, d, tmp)
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
