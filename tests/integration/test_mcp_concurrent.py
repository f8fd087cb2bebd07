#!/usr/bin/env python3
"""vectora-sandbox mcp serving requests concurrently (issue 30, item 2),
driven by raw JSON-RPC over its stdio (timings) and by the official MCP
TypeScript SDK from npm when it can be installed: a ping answered within
100 ms while `sleep 5` runs (daemon and embedded), a file_read answered
while a command runs (daemon and embedded), progress
notifications for a call with a progressToken, the mode said once at start
(stderr and instructions), the tools a mode cannot serve not listed, a
daemon lost mid-session reported (never a silent switch to embedded), the
daemon found without $XDG_RUNTIME_DIR; multi_edit and apply_patch (diffs,
all or nothing, refusals through the jail), titles, annotations and
outputSchema. TAP."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI  # noqa: E402
from vmcp import Server  # noqa: E402

tap = vtest.Tap()
report, skip = tap.ok, tap.skip
ROOT = os.geteuid() == 0

TOML = '[sandbox]\nrw_paths = ["."]\nmask = [".env"]\nnetwork = false\n[sandbox.limits]\ntimeout = 60\n'
A_TXT = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
FILES = {".env": "TOPSECRET=1\n", "a.txt": A_TXT, ".envrc": "export X=1\n", "old.txt": "bye\n",
         "crlf.txt": "alpha\r\nbeta\r\n"}


def text_of(r):
    return "".join(c.get("text", "") for c in (r.get("result") or {}).get("content", [])[:1])


def make_ws(tmp, name):
    d = vtest.make_ws(tmp, name, TOML, FILES)
    vtest.chown_tree(d)
    return d


def ping_while_running(tag, s):
    """A ping and (through the daemon) a file_read while `sleep 5` runs."""
    rid, t0 = s.send("tools/call", {"name": "terminal", "arguments": {"command": "sleep 5; echo slept"}})
    time.sleep(0.5)  # the command is running
    pid, tp = s.send("ping")
    tpr, pr = s.wait(pid)
    report(tag + "ping answered within 100 ms while `sleep 5` runs (%.1f ms)" % ((tpr - tp) * 1000),
           pr.get("result") == {} and tpr - tp < 0.1, pr)
    lid, tl = s.send("tools/list")
    tlr, lr = s.wait(lid)
    report(tag + "tools/list answered within 100 ms while the command runs (%.1f ms)" % ((tlr - tl) * 1000),
           lr.get("result", {}).get("tools") and tlr - tl < 0.1, lr)
    fid, tf = s.send("tools/call", {"name": "file_read", "arguments": {"path": "a.txt"}})
    tfr, fr = s.wait(fid)
    trr, rr = s.wait(rid)
    took = tfr - tf
    # Both modes serve calls in parallel (embedded: test_mcp_embedded.py).
    report(tag + "a file_read is answered while the command runs (%.0f ms, before the command's end)" % (took * 1000),
           text_of(fr).startswith("one\ntwo") and took < 2.0 and tfr < trr, (fr, took))
    report(tag + "the command's own response still arrives", "slept" in text_of(rr), rr)


def progress(tag, s):
    rid, t0 = s.send("tools/call", {"name": "terminal", "arguments": {"command": "sleep 5"},
                                    "_meta": {"progressToken": "tok-" + tag}})
    tr, r = s.wait(rid)
    notes = [(t, m) for t, m in s.notes if m.get("method") == "notifications/progress"
             and m.get("params", {}).get("progressToken") == "tok-" + tag]
    vals = [m["params"].get("progress") for _, m in notes]
    report(tag + "notifications/progress while `sleep 5` runs: %d, increasing, with the elapsed time, before the response"
           % len(notes), len(notes) >= 2 and vals == sorted(set(vals)) and all(t < tr for t, _ in notes)
           and all("running for" in m["params"].get("message", "") for _, m in notes), (vals, r))
    rid, _ = s.send("tools/call", {"name": "terminal", "arguments": {"command": "sleep 3"}})
    s.wait(rid)
    report(tag + "no progress for a call without a progressToken",
           not [m for _, m in s.notes if m.get("method") == "notifications/progress"
                and m["params"].get("progressToken") != "tok-" + tag], s.notes)


def mode_and_list(tag, s, daemon):
    r = s.init()
    instr = r.get("result", {}).get("instructions", "")
    want = "Mode: daemon" if daemon else "Mode: embedded"
    report(tag + "initialize's instructions say the mode (%s) and end whole" % want,
           want in instr and instr.endswith("do not try to get around it."), instr)
    log = s.stderr()
    report(tag + "stderr says the mode once, at start", log.count("Mode: ") == 1 and want in log, log)
    r = s.request("tools/list")
    tools = {t["name"]: t for t in r.get("result", {}).get("tools", [])}
    procs = [n for n in tools if n.startswith("process_")]
    report(tag + ("the process tools are listed" if daemon else "the process tools are not listed (this mode cannot serve them)"),
           bool(procs) == daemon and "multi_edit" in tools and "apply_patch" in tools, sorted(tools))
    ann = {n: t.get("annotations", {}) for n, t in tools.items()}
    report(tag + "every tool has a title, readOnly/destructive/idempotent/openWorld hints and an outputSchema",
           tools and all(t.get("title") and t.get("outputSchema", {}).get("type") == "object"
                         and all(k in ann[n] for k in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"))
                         for n, t in tools.items()), tools)
    report(tag + "file_read is read-only, apply_patch destructive, no open world with network = false",
           ann.get("file_read", {}).get("readOnlyHint") is True and ann.get("apply_patch", {}).get("destructiveHint") is True
           and not any(a.get("openWorldHint") for a in ann.values()), ann)


def host(ws, name):
    try:
        with open(os.path.join(ws, name), newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None


def snapshot(ws):
    return {n: host(ws, n) for n in list(FILES) + ["vectora.toml", "b.txt", "new/b.txt", "moved.txt"]}


def edits(tag, s, ws):
    """multi_edit and apply_patch: diffs, all or nothing, refusals through the jail."""
    r = s.call("multi_edit", path="a.txt", edits=[{"old_string": "two\n", "new_string": "TWO\n"},
                                                  {"old_string": "ten", "new_string": "TEN"}])
    t = text_of(r)
    sc = r.get("result", {}).get("structuredContent", {})
    report(tag + "multi_edit: two replacements in one call, a unified diff of both (two hunks)",
           r["result"].get("isError") is False and "--- a/a.txt\n+++ b/a.txt\n" in t and "-two\n+TWO\n" in t
           and "-ten\n+TEN\n" in t and t.count("@@ -") == 2 and sc.get("diff", "").startswith("--- a/a.txt")
           and host(ws, "a.txt") == A_TXT.replace("two", "TWO").replace("ten", "TEN"), r)
    before = snapshot(ws)
    r = s.call("multi_edit", path="a.txt", edits=[{"old_string": "one", "new_string": "1"},
                                                  {"old_string": "absent", "new_string": "x"}])
    report(tag + "multi_edit with an edit that does not match: refused naming the edit, the file unchanged",
           r["result"].get("isError") is True and "edit 2 of 2" in text_of(r) and snapshot(ws) == before, r)
    r = s.call("multi_edit", path=".env", edits=[{"old_string": "TOPSECRET", "new_string": "x"}])
    report(tag + "multi_edit of a masked file: refused by the jail, nothing read or changed",
           r["result"].get("isError") is True and "refused (denied)" in text_of(r) and "TOPSECRET" not in json.dumps(r)
           and host(ws, ".env") == "TOPSECRET=1\n", r)

    patch = ("*** Begin Patch\n*** Update File: a.txt\n@@\n three\n-four\n+FOUR\n five\n"
             "*** Add File: new/b.txt\n+hello\n+world\n*** Delete File: old.txt\n"
             "*** Update File: crlf.txt\n*** Move to: moved.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch\n")
    r = s.call("apply_patch", patch=patch)
    t = text_of(r)
    report(tag + "apply_patch: update, add (with its directory), delete and move in one patch, with a unified diff",
           r["result"].get("isError") is False and "-four\n+FOUR\n" in t and "--- /dev/null\n+++ b/new/b.txt" in t
           and "--- a/old.txt\n+++ /dev/null" in t and "+++ b/moved.txt" in t
           and host(ws, "new/b.txt") == "hello\nworld\n" and host(ws, "old.txt") is None
           and host(ws, "crlf.txt") is None and host(ws, "moved.txt") == "alpha\r\nBETA\r\n"
           and "FOUR" in host(ws, "a.txt"), (r, host(ws, "moved.txt")))

    def refused(what, patch, words):
        before = snapshot(ws)
        r = s.call("apply_patch", patch=patch)
        t = text_of(r)
        report(tag + "apply_patch %s: refused, and no file changed" % what,
               r["result"].get("isError") is True and all(w in t for w in words) and snapshot(ws) == before
               and "TOPSECRET" not in json.dumps(r), (r, before, snapshot(ws)))

    refused("whose second hunk does not match",
            "*** Begin Patch\n*** Add File: b.txt\n+x\n*** Update File: a.txt\n@@\n-no such line\n+y\n*** End Patch",
            ["patch_mismatch", "no file was changed"])
    refused("updating a masked file (.env) after a good change",
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: .env\n@@\n-TOPSECRET=1\n+X=1\n"
            "*** End Patch", ["refused (denied)", ".env"])
    refused("deleting a masked file",
            "*** Begin Patch\n*** Add File: b.txt\n+x\n*** Delete File: .env\n*** End Patch", ["refused (denied)"])
    refused("rewriting vectora.toml (read-only in the jail) after a good change: the change before it is undone",
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: vectora.toml\n@@\n"
            "-network = false\n+network = true\n*** End Patch", ["refused (denied)", "vectora.toml", "no file was changed"])
    refused("writing a protected file (.envrc) after adding one: the added file is removed again",
            "*** Begin Patch\n*** Add File: b.txt\n+x\n*** Update File: .envrc\n@@\n-export X=1\n+export X=2\n"
            "*** End Patch", ["refused (denied)", ".envrc", "no file was changed"])
    refused("reaching outside the workspace",
            "*** Begin Patch\n*** Add File: /etc/vectora-test-patch\n+x\n*** End Patch", ["refused"])
    refused("that is not a patch", "--- a/x\n+++ b/x\n", ["bad_patch", "*** Begin Patch"])
    report(tag + "nothing was created outside the workspace", not os.path.exists("/etc/vectora-test-patch"))


def open_world(tmp, env):
    ws = vtest.make_ws(tmp, "netws", TOML.replace("network = false", "network = true"), {"a": "1\n"})
    vtest.chown_tree(ws)
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        tools = {t["name"]: t for t in s.request("tools/list").get("result", {}).get("tools", [])}
        report("a workspace with network = true: terminal's openWorldHint is true, file_read's false",
               tools["terminal"]["annotations"].get("openWorldHint") is True
               and tools["file_read"]["annotations"].get("openWorldHint") is False, tools.get("terminal"))
    finally:
        s.close()


def daemon_lost(tmp, base):
    d = vtest.Daemon(tmp, "lost", audit=False, log_level=None)
    ws = make_ws(tmp, "lost")
    s = Server(ws, dict(base, VECTORA_SANDBOX_SOCKET=d.sock))
    try:
        s.init()
        r = s.call("terminal", command="echo before")
        ok_before = "before" in text_of(r) and r["result"].get("structuredContent", {}).get("served_by") == "daemon"
        d.stop()
        r = s.call("terminal", command="echo after")
        t = text_of(r)
        report("a daemon gone mid-session: the next call is a tool error naming what to do, not run embedded",
               ok_before and r["result"].get("isError") is True and "daemon_unreachable" in t and "nothing ran" in t
               and "start vectora-sandboxd" in t and "after" not in t.split("\n")[0][:6], r)
        d = vtest.Daemon(tmp, "lost", audit=False, log_level=None)
        r = s.call("terminal", command="echo again")
        report("... and once a daemon answers there again, calls go through it",
               "again" in text_of(r) and r["result"].get("structuredContent", {}).get("served_by") == "daemon", r)
    finally:
        s.close()
        d.stop()


def no_xdg(tmp, base):
    """The daemon at its default socket found without $XDG_RUNTIME_DIR."""
    run = "/run/user/%d" % os.geteuid()
    if ROOT:
        # A root daemon's socket is /run/vectora-sandbox.sock whatever the
        # environment: the ordinary user's run (test-mcp-concurrent-as-user)
        # is where this applies.
        tap.not_applicable("the daemon found without XDG_RUNTIME_DIR (/run/user/UID)",
                           "root's default socket does not depend on XDG_RUNTIME_DIR; the as-user variant covers it")
        return
    if base.get("XDG_RUNTIME_DIR") != run or not os.path.isdir(run):
        skip("the daemon found without XDG_RUNTIME_DIR (/run/user/UID)",
             "needs an ordinary user whose XDG_RUNTIME_DIR is /run/user/UID")
        return
    d = vtest.Daemon(tmp, "def", audit=False, log_level=None, own_socket=False, env=base)
    ws = make_ws(tmp, "noxdg")
    env = {k: v for k, v in base.items() if k not in ("XDG_RUNTIME_DIR", "VECTORA_SANDBOX_SOCKET")}
    s = Server(ws, env)
    try:
        r = s.init()
        report("without XDG_RUNTIME_DIR the server finds the user's daemon at %s/vectora-sandbox.sock" % run,
               "Mode: daemon" in r.get("result", {}).get("instructions", ""), (r, s.stderr()))
    finally:
        s.close()
        d.stop()


SDK_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../helpers/mcp-sdk-client.cjs")


def install_sdk(tmp):
    """The official MCP TypeScript SDK from npm (vtest.npm_package)."""
    return vtest.npm_package(tmp, "mcp-sdk", "@modelcontextprotocol/sdk@1")


def sdk(tmp, base, d):
    prefix, why = install_sdk(tmp)
    if not prefix:
        skip("the official MCP TypeScript SDK drives the server", why)
        return
    for mode, env in (("embedded", dict(base, VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "nobody.sock"))),
                      ("daemon", dict(base, VECTORA_SANDBOX_SOCKET=d.sock))):
        tag = "[SDK, %s] " % mode
        ws = make_ws(tmp, "sdk-" + mode)
        p = subprocess.run(["node", SDK_CLIENT, prefix, CLI, ws], capture_output=True, env=env, timeout=120)
        try:
            out = json.loads(p.stdout)
        except ValueError:
            out = {"exception": p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")}
        if "exception" in out:
            report(tag + "Client over StdioClientTransport runs the session", False, out["exception"])
            continue
        report(tag + "connect, tools/list (each tool with a title, annotations and outputSchema), the mode in the "
               "instructions", out["all_have_output_schema"] and "apply_patch" in out["tools"]
               and ("Mode: " + mode) in (out.get("instructions") or "")
               and any(t.startswith("process_") for t in out["tools"]) == (mode == "daemon"), out)
        report(tag + "client.ping() while `sleep 5` runs: %d ms" % out["ping_ms"], out["ping_ms"] < 100, out)
        report(tag + "a file_read while it runs: %d ms" % out["read_ms"],
               out["read_ms"] < 2000 and out["read_text"].startswith("one\n"), out)
        report(tag + "a 5 s command with a 3 s request timeout completes: %d progress notifications reset the "
               "timeout (resetTimeoutOnProgress)" % len(out["progress"]),
               "slept" in out["long_text"] and len(out["progress"]) >= 2, out["progress"])
        report(tag + "multi_edit: its structuredContent passes the SDK's outputSchema check, a diff",
               out["multi_edit"]["isError"] is False and "-one\n+ONE\n" in (out["multi_edit"]["diff"] or ""), out)
        report(tag + "apply_patch through the SDK: update and add",
               out["apply_patch"]["isError"] is False and host(ws, "sdk.txt") == "from the sdk\n"
               and host(ws, "a.txt").startswith("uno\n"), out)
        report(tag + "apply_patch touching a masked file: refused, and a.txt not changed back",
               out["refused"]["isError"] is True and "refused (denied)" in out["refused"]["text"]
               and host(ws, "a.txt").startswith("uno\n") and host(ws, ".env") == "TOPSECRET=1\n", out)


def section(name, fn, *args):
    """fn's checks; an exception (a server that answers otherwise than
    expected) is a failure of the section, and the others still run."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        report("%s: ran to its end" % name, False, "%s: %s" % (type(e).__name__, e))


def main():
    tmp = tempfile.mkdtemp(prefix="vectora-mcpc-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    base = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    emb_env = dict(base, VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "nobody.sock"))
    d = None
    try:
        d = vtest.Daemon(tmp, "d", audit=False, log_level=None)
        for mode, env in (("embedded", emb_env), ("daemon", dict(base, VECTORA_SANDBOX_SOCKET=d.sock))):
            tag = "[%s] " % mode
            ws = make_ws(tmp, mode)
            s = Server(ws, env)
            try:
                section(tag + "mode", mode_and_list, tag, s, mode == "daemon")
                section(tag + "ping", ping_while_running, tag, s)
                section(tag + "progress", progress, tag, s)
                section(tag + "edits", edits, tag, s, ws)
            finally:
                s.close()
        section("SDK", sdk, tmp, base, d)
        section("open world", open_world, tmp, emb_env)
        section("daemon lost", daemon_lost, tmp, base)
        section("no XDG_RUNTIME_DIR", no_xdg, tmp, base)
    finally:
        if d:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
