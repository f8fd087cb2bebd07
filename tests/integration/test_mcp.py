#!/usr/bin/env python3
"""vectora-sandbox mcp driven by a plain JSON-RPC client over its stdio, in
embedded mode (no daemon: the MCP process keeps one worker) and through a
real vectora-sandboxd: initialize and revision negotiation, tools/list,
tools/call of each tool, a refused call, a masked read, warm calls, protocol
errors that stay protocol errors and refusals that stay tool errors. TAP."""
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("VECTORA_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "../../build"))
CLI = os.path.join(BUILD, "src/cli/vectora-sandbox")
DAEMON = os.path.join(BUILD, "src/daemon/vectora-sandboxd")
ROOT = os.geteuid() == 0

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vmcp import Mcp  # noqa: E402

tap = vtest.Tap()
report, skip = tap.ok, tap.skip


def Daemon(tmp, name="d"):
    """A daemon in the foreground on a private socket (tests/lib/vtest.py)."""
    return vtest.Daemon(tmp, name, audit=False, log_level=None)


def text_of(resp):
    res = resp.get("result") or {}
    return "".join(c.get("text", "") for c in res.get("content", [])[:1])


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
        # The jail never runs as host root: give the workspace an owner.
        for r, dirs, fs in os.walk(d):
            for x in dirs + fs:
                os.lchown(os.path.join(r, x), 65534, 65534)
        os.chown(d, 65534, 65534)
    return d


TOML = '[sandbox]\nrw_paths = ["."]\nmask = [".env", "**/*.pem"]\nnetwork = false\n'


def conversation(mode, ws, env):
    m = Mcp(ws, env)
    tag = "[%s] " % mode
    try:
        r = m.request("tools/list")
        report(tag + "tools/list before initialize is a protocol error (-32002)",
               r.get("error", {}).get("code") == -32002, r)

        r = m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "test-mcp", "version": "1"}})
        res = r.get("result", {})
        report(tag + "initialize: revision 2025-06-18 agreed, tools capability, server info",
               res.get("protocolVersion") == "2025-06-18" and "tools" in res.get("capabilities", {})
               and res.get("serverInfo", {}).get("name") == "vectora-sandbox", r)
        m.notify("notifications/initialized")

        r = m.request("tools/list")
        tools = {t["name"]: t for t in r.get("result", {}).get("tools", [])}
        procs = {"process_start", "process_output", "process_input", "process_signal", "process_list"}
        report(tag + "tools/list: terminal, the file tools and (through the daemon only) the background-process tools",
               set(tools) == {"terminal", "file_read", "file_write", "file_edit", "multi_edit", "apply_patch", "list_dir",
                              "glob", "grep"} | (procs if mode == "daemon" else set()), r)
        report(tag + "each tool has a description and an object schema refusing unknown arguments",
               tools and all(len(t.get("description", "")) > 80 and t["inputSchema"].get("type") == "object"
                   and t["inputSchema"].get("additionalProperties") is False
                   and (t["inputSchema"].get("required") or n in ("process_list", "list_dir"))
                   for n, t in tools.items()), tools)

        r = m.call("terminal", command="echo out; echo err >&2; exit 3")
        res = r.get("result", {})
        sc = res.get("structuredContent", {})
        report(tag + "terminal: output, stderr and exit code in the text; not a tool error",
               res.get("isError") is False and text_of(r).startswith("out\n[stderr]\nerr\n[exit code 3]"), r)
        report(tag + "terminal: the result says it ran sandboxed, with its layers, and what served it",
               sc.get("sandboxed") is True and sc.get("exit_code") == 3 and "namespaces" in sc.get("sandbox", {}).get("layers", [])
               and sc.get("served_by") == mode and "[sandbox: local jail (namespaces" in text_of(r), r)

        r = m.call("terminal", command="cat .env; echo rc=$?")
        report(tag + "terminal: a masked file reads as empty inside the jail",
               "TOPSECRET" not in json.dumps(r) and "rc=0" in text_of(r), r)

        r = m.call("file_read", path=".env")
        res = r.get("result", {})
        report(tag + "file_read of a masked file: a tool error (isError) naming the refusal, not a protocol error",
               "error" not in r and res.get("isError") is True and "refused (denied)" in text_of(r)
               and "TOPSECRET" not in json.dumps(r), r)

        r = m.call("file_write", path="vectora.toml", content="[sandbox]\nenabled = false\n")
        res = r.get("result", {})
        report(tag + "file_write of vectora.toml (turning the sandbox off) is refused as a tool error",
               res.get("isError") is True and "denied" in text_of(r), r)
        with open(os.path.join(ws, "vectora.toml")) as f:
            report(tag + "... and vectora.toml is unchanged", f.read() == TOML)

        r = m.call("file_write", path="notes/todo.txt", content="one\ntwo\nthree\n", create_parents=True)
        report(tag + "file_write: creates the file (with parents)",
               r.get("result", {}).get("isError") is False and "created notes/todo.txt: 14 bytes" in text_of(r), r)
        r = m.call("file_edit", path="notes/todo.txt", old_string="two", new_string="deux")
        report(tag + "file_edit: one replacement", "edited notes/todo.txt: 1 replacement" in text_of(r)
               and r["result"].get("structuredContent", {}).get("replacements") == 1, r)
        r = m.call("file_read", path="notes/todo.txt")
        report(tag + "file_read: the edited content", text_of(r).startswith("one\ndeux\nthree\n"), r)
        with open(os.path.join(ws, "notes/todo.txt")) as f:
            report(tag + "the host sees the written and edited file", f.read() == "one\ndeux\nthree\n")
        r = m.call("file_edit", path="notes/todo.txt", old_string="nowhere", new_string="x")
        report(tag + "file_edit of absent text: a tool error saying what to do",
               r.get("result", {}).get("isError") is True and "edit_not_found" in text_of(r)
               and "read the file again" in text_of(r), r)
        r = m.call("file_read", path="notes/todo.txt", offset=4, limit=4)
        report(tag + "file_read with offset and limit says where to go on",
               text_of(r).startswith("deux\n[7 more bytes: call file_read with offset 8") , r)

        big = ("0123456789abcdef" * 64 + "\n") * 3072  # 3 MiB: over the daemon's 1 MiB header line
        r = m.call("file_write", path="big.txt", content=big)
        r2 = m.call("terminal", command="sha256sum big.txt")
        report(tag + "file_write of 3 MiB in one MCP line arrives intact",
               r.get("result", {}).get("isError") is False and hashlib.sha256(big.encode()).hexdigest() in text_of(r2), (r, r2))

        r = m.call("terminal", command="echo x", bogus=1)
        report(tag + "an unknown argument: a tool error naming it (the agent can correct it)",
               r.get("result", {}).get("isError") is True and "bogus" in text_of(r), r)
        r = m.request("tools/call", {"name": "rm_rf", "arguments": {}})
        report(tag + "an unknown tool: JSON-RPC invalid params (-32602)", r.get("error", {}).get("code") == -32602, r)
        r = m.request("resources/list")
        report(tag + "an unknown method: -32601", r.get("error", {}).get("code") == -32601, r)
        m.send_line("{not json")
        r = m.recv()
        report(tag + "a line that is not JSON: parse error (-32700) with id null, and the session goes on",
               r.get("error", {}).get("code") == -32700 and r.get("id") is None, r)
        r = m.request("ping")
        report(tag + "ping after a bad line", r.get("result") == {}, r)

        # Background processes: through the daemon they run across calls;
        # embedded, nothing would keep them, so they are refused.
        r = m.call("process_start", command="echo up; read l; echo got-$l; sleep 100")
        if mode == "daemon":
            sc = r.get("result", {}).get("structuredContent", {})
            pid_ = sc.get("process")
            report(tag + "process_start: an id at once, sandboxed",
                   r["result"].get("isError") is False and pid_ and sc.get("sandboxed") is True
                   and "started background process %s" % pid_ in text_of(r), r)
            m.call("process_input", process=pid_, data="typed\n")
            r = m.call("process_output", process=pid_, wait_ms=5000)
            t = text_of(r)
            for _ in range(20):
                if "got-typed" in t:
                    break
                sc = r["result"]["structuredContent"]
                r = m.call("process_output", process=pid_, wait_ms=2000, stdout_offset=sc["stdout_offset"])
                t += text_of(r)
            report(tag + "process_input then process_output: its output across calls, and that it runs",
                   "up\n" in t and "got-typed" in t and "running; next offsets: stdout_offset" in t, t)
            r = m.call("process_list")
            report(tag + "process_list: it is listed, running", ("%s: running" % pid_) in text_of(r), r)
            r = m.call("process_signal", process=pid_, signal="KILL")
            r2 = m.call("process_output", process=pid_, wait_ms=5000, stdout_offset=10000)
            report(tag + "process_signal KILL: it ends (exit 137)",
                   "exited with code 137" in text_of(r2), (r, r2))
        else:
            report(tag + "process_start without a daemon: the tool error daemon_required",
                   r.get("result", {}).get("isError") is True and "daemon_required" in text_of(r), r)

        # Warm: the worker (or the daemon's) lives across calls.
        m.call("terminal", command="true")
        t0 = time.monotonic()
        for _ in range(10):
            m.call("terminal", command="true")
        per = (time.monotonic() - t0) / 10
        r = m.call("terminal", command="echo $$ > /tmp/pid; cat /proc/1/comm")
        r2 = m.call("terminal", command="cat /tmp/pid /proc/1/comm")
        report(tag + "calls are warm: one jail serves the session (its /tmp persists; %.1f ms per call)" % (per * 1000),
               "[exit code 0]" in text_of(r2) and text_of(r2).split("\n")[0].isdigit(), (r, r2))

        # The host tightens the policy mid-session: the next call obeys it.
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write(TOML.replace('"**/*.pem"]', '"**/*.pem", "notes/**"]'))
        r = m.call("file_read", path="notes/todo.txt")
        report(tag + "vectora.toml tightened mid-session (notes/** masked): the next call is refused",
               r.get("result", {}).get("isError") is True and "denied" in text_of(r), r)
        r = m.call("terminal", command="cat notes/todo.txt | wc -c")
        report(tag + "... and the jail serving the session masks it too", text_of(r).startswith("0\n"), r)
    finally:
        rc = m.close()
    report(tag + "EOF on stdin ends the server cleanly (exit 0)", rc == 0, m.stderr())
    return m.stderr()


def older_revisions(ws, env):
    m = Mcp(ws, env)
    try:
        r = m.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                     "clientInfo": {"name": "old", "version": "0"}})
        report("an older client (2024-11-05) is served in its revision",
               r.get("result", {}).get("protocolVersion") == "2024-11-05", r)
        r = m.call("terminal", command="echo hi")
        res = r.get("result", {})
        report("... its results have no structuredContent (not in that revision)",
               "structuredContent" not in res and text_of(r).startswith("hi\n"), r)
    finally:
        m.close()
    m = Mcp(ws, env)
    try:
        r = m.request("initialize", {"protocolVersion": "2099-01-01", "capabilities": {}})
        report("an unknown revision is answered with the latest this server has",
               r.get("result", {}).get("protocolVersion") == "2025-06-18", r)
    finally:
        m.close()
    m = Mcp(ws, env)
    try:
        m.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}})
        m.send_line(json.dumps([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
                                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                {"jsonrpc": "2.0", "id": "b", "method": "tools/list"}]))
        r = m.recv()
        report("2025-03-26: a batch gets one array of responses (none for the notification)",
               isinstance(r, list) and [x.get("id") for x in r] == ["a", "b"], r)
    finally:
        m.close()


def refused_workspace(tmp, env):
    ws = make_ws(tmp, "broken", "[sandbox]\nro_path = []\n", {"f": "x"})
    m = Mcp(ws, env)
    try:
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        r = m.call("terminal", command="echo ran > ran.txt")
        report("a refused config: the call is a tool error with the located reason, nothing ran",
               r.get("result", {}).get("isError") is True and "vectora.toml:2:1" in text_of(r)
               and not os.path.exists(os.path.join(ws, "ran.txt")), r)
    finally:
        m.close()

# The same calls in every mode (issue 27: one API call in core). What may
# differ by mode, and why: the one table.
MODE_KEYS = {
    "api": {"id", "_raw"},                          # the daemon's reply names the request; its payload (vtest)
    "cli": {"stdout", "stderr", "content"},         # --json prints the payload as text...
    "mcp": {"served_by"},                           # structuredContent says which way served it
}
CLI_DROPS = {"stdout_len", "stderr_len"}            # ...in place of its lengths
VALUE_DIFFERS = {"duration_us", "generation"}       # a clock; which of the workspace's workers served it
# sandbox.degraded's memory entry: only a root daemon's cgroup holds the
# memory limit per workspace; a daemon without cgroups and every in-process
# call say it is not enforced (checked below, not compared).
MEMORY_NOTE = "memory: not enforced per workspace"
SAME_CALLS = [
    # (name, daemon API request minus workspace, its raw payload, CLI verb argv, its stdin, MCP tool and arguments)
    ("terminal", {"tool": "terminal", "command": "echo hi", "binary": True}, None,
     ["run", "echo hi"], None, ("terminal", {"command": "echo hi"})),
    ("file_write", {"tool": "file_write", "path": "notes.txt"}, b"one\n",
     ["write", "notes.txt"], b"one\n", ("file_write", {"path": "notes.txt", "content": "one\n"})),
    ("file_read", {"tool": "file_read", "path": "notes.txt", "binary": True}, None,
     ["read", "notes.txt"], None, ("file_read", {"path": "notes.txt"})),
    ("file_edit", {"tool": "file_edit", "path": "notes.txt", "old_string": "one", "new_string": "two"}, None,
     ["edit", "notes.txt", "--old", "one", "--new", "two"], None,
     ("file_edit", {"path": "notes.txt", "old_string": "one", "new_string": "two"})),
    ("a refused write outside the workspace", {"tool": "file_write", "path": "/etc/vectora-modes"}, b"x",
     ["write", "/etc/vectora-modes"], b"x", ("file_write", {"path": "/etc/vectora-modes", "content": "x"})),
    ("a masked read", {"tool": "file_read", "path": ".env", "binary": True}, None,
     ["read", ".env"], None, ("file_read", {"path": ".env"})),
]


def normal(mode, res):
    """A result with what the table lets differ taken out: its key set, and
    sandbox's fields with their values (VALUE_DIFFERS blanked)."""
    extra = MODE_KEYS[mode] - {"_raw"} - set(res) if mode != "cli" else set()
    keys = set(res) - set().union(*MODE_KEYS.values()) - CLI_DROPS - VALUE_DIFFERS
    sb = {k: ("*" if k in VALUE_DIFFERS else v) for k, v in (res.get("sandbox") or {}).items()}
    deg = sb.get("degraded") or []
    memory = [d for d in deg if d.startswith(MEMORY_NOTE)]
    if "degraded" in sb:
        sb["degraded"] = [d for d in deg if not d.startswith(MEMORY_NOTE)]
    err = (res.get("error") or {}).get("code")
    return {"keys": sorted(keys), "sandbox": sb, "ok": res.get("ok"), "error": err, "missing_mode_keys": sorted(extra),
            "memory_note": bool(memory)}


def audited(path, ws):
    """What the audit log at path says of the calls on ws, minus what a clock
    or a process decides."""
    with open(path) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    return [(r["tool"], r["outcome"], r["error_code"], r["sandboxed"], r["target"]) for r in recs
            if r["workspace"] == ws]


def rel_targets(recs, ws):
    """Targets with the workspace's path taken out: each mode has its own."""
    return [(t, o, c, s, json.loads(json.dumps(tg).replace(ws + "/", ""))) for t, o, c, s, tg in recs]


def same_result_every_mode(tmp, base):
    files = {".env": "TOPSECRET=1\n"}
    got = {}
    audits = {}
    d = vtest.Daemon(tmp, "same", log_level=None)
    try:
        same_modes(tmp, base, d, files, got, audits)
    finally:
        d.stop()
    ref = audits.pop("daemon API")
    report("the daemon audits each of the %d calls" % len(SAME_CALLS), len(ref) == len(SAME_CALLS), ref)
    for label, recs in audits.items():
        report("%s audits the same records as the daemon (--audit-log)" % label, recs == ref, {"daemon": ref, label: recs})


def same_modes(tmp, base, d, files, got, audits):
    # The daemon API, raw.
    ws = make_ws(tmp, "same-api", TOML, files)
    got["daemon API"] = [normal("api", d.call(dict(req, workspace=ws), raw)) for _, req, raw, *_ in SAME_CALLS]
    audits["daemon API"] = rel_targets(audited(d.audit, ws), ws)
    # The CLI, --json, embedded and through the daemon.
    for label, flags in (("embedded CLI", ["--no-daemon"]), ("CLI through the daemon", ["--socket", d.sock])):
        ws = make_ws(tmp, "same-cli-" + flags[0].strip("-"), TOML, files)
        log = os.path.join(tmp, "same-cli-%s.audit" % flags[0].strip("-"))
        out = []
        for _, _, _, argv, stdin, _ in SAME_CALLS:
            p = subprocess.run([CLI, "--json", "-w", ws, "--audit-log", log] + flags + argv, input=stdin or b"",
                               capture_output=True, env=base, timeout=60)
            res = json.loads(p.stdout)
            out.append(normal("cli", res))
        got[label] = out
        if "--no-daemon" in flags:
            audits[label] = rel_targets(audited(log, ws), ws)
    # The MCP server, embedded and through the daemon (structuredContent: the reply).
    for label, env in (("embedded MCP", dict(base, VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "nobody.sock"))),
                       ("MCP through the daemon", dict(base, VECTORA_SANDBOX_SOCKET=d.sock))):
        ws = make_ws(tmp, "same-mcp-" + label.split()[0], TOML, files)
        log = os.path.join(tmp, "same-mcp-%s.audit" % label.split()[0])
        m = Mcp(ws, env, ["--audit-log", log])
        try:
            m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
            out = []
            for _, _, _, _, _, (tool, args) in SAME_CALLS:
                r = m.call(tool, **args)
                out.append(normal("mcp", r.get("result", {}).get("structuredContent") or {}))
            got[label] = out
        finally:
            m.close()
        if label.startswith("embedded"):
            audits[label] = rel_targets(audited(log, ws), ws)
    ref = got["daemon API"]
    for label, res in got.items():
        if label.startswith("embedded"):
            report("%s says the memory limit is not enforced per workspace (no cgroup in-process)" % label,
                   all(r["memory_note"] for r in res), [r["sandbox"] for r in res])
    for label, res in got.items():
        for r in res:
            r.pop("memory_note")
    for i, (name, *_) in enumerate(SAME_CALLS):
        report("%s: the daemon API's result is what it should be (ok %s, sandbox local)" % (name, ref[i]["ok"]),
               ref[i]["sandbox"].get("backend") == "local" and ref[i]["ok"] == (i < 4)
               and (i < 4 or ref[i]["error"] == "denied"), ref[i])
        for label, res in got.items():
            if label != "daemon API":
                report("%s: %s finds the same result keys and sandbox fields as the daemon API" % (name, label),
                       res[i] == ref[i], {"daemon API": ref[i], label: res[i]})


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-mcp-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    files = {".env": "TOPSECRET=1\n", "src/main.c": "int main(void) { return 0; }\n"}
    base = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    # No daemon anywhere: a socket path nobody listens on.
    emb_env = dict(base, VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "nobody.sock"))
    d = None
    try:
        ws = make_ws(tmp, "emb", TOML, files)
        log = conversation("embedded", ws, emb_env)
        report("[embedded] the log says it serves with its own worker", "with its own worker" in log, log)
        older_revisions(ws, emb_env)
        refused_workspace(tmp, emb_env)

        d = Daemon(tmp)
        ws = make_ws(tmp, "dmn", TOML, files)
        log = conversation("daemon", ws, dict(base, VECTORA_SANDBOX_SOCKET=d.sock))
        report("[daemon] the log says it serves through vectora-sandboxd", "through vectora-sandboxd" in log, log)
        same_result_every_mode(tmp, base)
    finally:
        if d:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
