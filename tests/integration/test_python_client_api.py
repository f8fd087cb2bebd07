#!/usr/bin/env python3
"""The Python client's whole surface against a real vectora-sandboxd (issue
30, item 6), beside test_python_client.py: every result field
(`network_denied`, `policy_pending`, `host_run_files`, `degraded`, the notes,
`timeout_capped_ms`), the find tools (list_dir, glob, grep) and line reads,
timeouts that cancel the command (a marker file the command would write
after the timeout never appears, and its `sleep` is gone from the host), and
the asyncio client: concurrent calls on one connection, its timeout and a
cancelled task ending the command, require_sandbox. TAP output."""
import asyncio
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import SRC, Daemon, Tap, check, chown_tree, make_ws, run_cases, sleepers, wait_for  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "clients/python/src"))
import vectora_sandbox as vs  # noqa: E402
from vectora_sandbox.aio import AsyncSandbox  # noqa: E402

tap = Tap()
SANDBOX = "[sandbox]\nenabled = true\n"


def gone(n, t0):
    """sleep N is gone within 1 s of t0, when the timeout ran out or the
    task was cancelled (issue 30); waited for up to 5 s so that a miss says
    by how much, the time taken noted."""
    while sleepers(n) and time.monotonic() - t0 < 5:
        time.sleep(0.01)
    dt = time.monotonic() - t0
    tap.note("sleep %s gone %.3f s after the cancel" % (n, dt))
    check(not sleepers(n) and dt < 1, "sleep %s still ran %.2f s after the cancel (bound 1 s)" % (n, dt))


def stopped(ws, n, marker):
    """The command `sleep N; touch MARKER` (N a little over 3 s, its
    fraction naming it on the host) was ended (gone() looked at the sleep),
    and the marker does not appear by when the command would have written
    it."""
    check(not sleepers(n), "sleep %s still runs after the cancel" % n)
    time.sleep(float(n) + 0.5)
    check(not os.path.exists(os.path.join(ws, marker)), "%s appeared: the command ran on" % marker)


def t_result_fields(tmp):
    """network_denied, policy_pending, host_run_files, notes (sealed_note),
    timeout_capped_ms and degraded reach the client's results."""
    ws = make_ws(tmp, "fields", SANDBOX + 'network = ["allowed.test"]\n[sandbox.limits]\ntimeout = 5\n', {})
    subprocess.run(["git", "init", "-q", ws], check=True, capture_output=True)
    chown_tree(ws)
    with Daemon(tmp, "fields") as d, vs.Sandbox(socket=d.sock, workspace=ws) as sb:
        r = sb.terminal("curl -sS -i http://denied.test/ 2>&1; true")
        nd = r.sandbox.network_denied
        check(nd and nd[0]["host"] == "denied.test" and "allowlist" in nd[0]["reason"], "network_denied: %r" % (r,))
        check(isinstance(r.sandbox.degraded, list) and r.sandbox.sandboxed, r.sandbox)
        r = sb.terminal("true", timeout=60)
        check(r.timeout_capped_ms == 5000, "timeout_capped_ms: %r" % (r,))
        # A new .idea: reported (and sealed at once, which may end the call).
        try:
            info = sb.terminal("mkdir .idea && echo '<project/>' > .idea/workspace.xml; sleep 2").sandbox
        except vs.SandboxError as e:
            info = vs.SandboxInfo.from_reply(e.reply)
        check(any(f.endswith("/.idea") for f in info.host_run_files), "host_run_files: %r" % (info,))
        r = sb.terminal("git config user.email x@y.test")
        check(r.exit_code != 0 and any("git config --global" in n for n in r.sandbox.notes), "notes: %r" % (r,))
        # A loosening (network widened) waits for approval: the call says so.
        text = open(os.path.join(ws, "vectora.toml")).read().replace('["allowed.test"]', '["allowed.test", "more.test"]')
        with open(os.path.join(ws, "vectora.toml"), "w") as f:
            f.write(text)
        r = sb.terminal("true")
        check(r.sandbox.policy_pending and "vectora-sandbox allow" in r.sandbox.policy_pending,
              "policy_pending: %r" % (r.sandbox,))


def t_find_tools(tmp):
    """list_dir, glob, grep (with context) and file_read by lines."""
    lines = "".join("line %d\n" % i for i in range(1, 21))
    ws = make_ws(tmp, "find", SANDBOX + 'mask = ["secret.txt"]\n',
                 {"a.py": "import os\n# TODO one\n", "sub/b.py": "x = 1\n# TODO two\n", "notes.txt": lines,
                  "secret.txt": "TODO hidden\n", "euro.txt": "\u20ac" * 1000 + "\n"})
    with Daemon(tmp, "find") as d, vs.Sandbox(socket=d.sock, workspace=ws) as sb:
        ls = sb.list_dir()
        names = [e.name for e in ls.entries]
        check("a.py" in names and "sub" in names and "secret.txt" not in names, names)
        check([e.type for e in ls.entries if e.name == "sub"] == ["dir"], ls)
        g = sb.glob("**/*.py")
        check(sorted(p.name for p in g.paths) == ["a.py", "sub/b.py"], g)
        gr = sb.grep("TODO", context=1)
        hits = sorted((m.path, m.line) for m in gr.matches if m.match)
        check(hits == [("a.py", 2), ("sub/b.py", 2)] and gr.match_count == 2, gr)
        check(any(not m.match for m in gr.matches), "context lines: %r" % (gr,))
        fc = sb.file_read("notes.txt", start_line=5, max_lines=3)
        check(fc.text() == "line 5\nline 6\nline 7\n" and fc.start_line == 5, fc)
        check(fc.numbered().splitlines()[0] == "     5\tline 5", fc.numbered())
        check(sb.file_read("euro.txt").text() == "\u20ac" * 1000 + "\n", "a UTF-8 file reads whole")


def t_timeout_cancels(tmp):
    """Sandbox(timeout=) cancels the call: CallTimeout (confirmed by the
    daemon), the command's sleep gone, its marker never written."""
    ws = make_ws(tmp, "tmo", SANDBOX, {})
    with Daemon(tmp, "tmo") as d, vs.Sandbox(socket=d.sock, workspace=ws, timeout=1) as sb:
        t0 = time.monotonic()
        try:
            sb.terminal("sleep 3.4101; touch marker-sync")
            raise AssertionError("the call returned")
        except vs.CallTimeout as e:
            check(e.code == vs.ErrorCode.CANCELLED and e.confirmed, "the timeout: %r" % (e,))
        check(time.monotonic() - t0 < 3, "the timeout took %.1f s" % (time.monotonic() - t0))
        gone("3.4101", t0 + 1)  # timeout=1 ran out at t0 + 1
        stopped(ws, "3.4101", "marker-sync")
        check(sb.terminal("echo again").stdout == b"again\n", "the next call works")


def t_async_concurrent(tmp):
    """AsyncSandbox: calls gathered on one connection run at once; results
    carry the same fields; require_sandbox refuses an unsandboxed workspace."""
    ws = make_ws(tmp, "aio", SANDBOX, {"f.txt": "hello\n"})
    plain = make_ws(tmp, "aio-plain", None, {})

    async def main(sock):
        async with AsyncSandbox(socket=sock, workspace=ws) as sb:
            t0 = time.monotonic()
            rs = await asyncio.gather(*[sb.terminal("sleep 1; echo %d" % i) for i in range(4)],
                                      sb.file_read("f.txt"), sb.list_dir())
            took = time.monotonic() - t0
            check([r.stdout for r in rs[:4]] == [b"%d\n" % i for i in range(4)], rs)
            check(rs[4].content == b"hello\n" and rs[4].sandbox.sandboxed, rs[4])
            check(took < 3.5, "four 1 s commands took %.1f s: not concurrent" % took)
            await sb.file_write("g.txt", "x\n")
            await sb.file_edit("g.txt", "x", "y")
            check((await sb.file_read("g.txt")).content == b"y\n", "write/edit/read")
            try:
                await sb.terminal("echo ran", workspace=plain, require_sandbox=True)
                raise AssertionError("an unsandboxed workspace ran")
            except vs.SandboxError as e:
                check(e.code == vs.ErrorCode.SANDBOX_REQUIRED, e)
    with Daemon(tmp, "aio") as d:
        asyncio.run(main(d.sock))


def t_async_timeout(tmp):
    """AsyncSandbox(timeout=): CallTimeout, the command ended, the
    connection still serves the next call."""
    ws = make_ws(tmp, "aio-tmo", SANDBOX, {})

    async def main(sock):
        async with AsyncSandbox(socket=sock, workspace=ws, timeout=1) as sb:
            t0 = time.monotonic() + 1  # when timeout=1 runs out
            try:
                await sb.terminal("sleep 3.4102; touch marker-async")
                raise AssertionError("the call returned")
            except vs.CallTimeout as e:
                check(e.confirmed, e)
            gone("3.4102", t0)
            r = await sb.terminal("echo next")
            check(r.stdout == b"next\n", r)
    with Daemon(tmp, "aio-tmo") as d:
        asyncio.run(main(d.sock))
        stopped(ws, "3.4102", "marker-async")


def t_async_task_cancel(tmp):
    """A cancelled task (asyncio.wait_for, task.cancel()) sends the API's
    cancel: the command is gone while the client stays connected."""
    ws = make_ws(tmp, "aio-cancel", SANDBOX, {})

    async def main(sock):
        async with AsyncSandbox(socket=sock, workspace=ws) as sb:
            task = asyncio.ensure_future(sb.terminal("sleep 3.4103; touch marker-task"))
            check(await asyncio.get_event_loop().run_in_executor(None, wait_for, lambda: sleepers("3.4103"), 20),
                  "sleep 3.4103 did not start")
            t0 = time.monotonic()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            # The connection is still open: the cancel is the API's.
            await asyncio.get_event_loop().run_in_executor(None, gone, "3.4103", t0)
            check((await sb.terminal("echo alive")).stdout == b"alive\n", "the connection serves on")
    with Daemon(tmp, "aio-cancel") as d:
        asyncio.run(main(d.sock))
        stopped(ws, "3.4103", "marker-task")


def t_status_every_page(tmp):
    """status() returns every workspace, not the daemon's first page (100
    by path): 250 workspaces (a refused config each: an entry without a
    worker), through the blocking and the asyncio client."""
    base = os.path.join(tmp, "many")
    os.makedirs(base)
    paths = []
    for i in range(250):
        p = os.path.join(base, "w%03d" % i)
        os.makedirs(p)
        with open(os.path.join(p, "vectora.toml"), "w") as f:
            f.write("[sandbox]\nbogus = 1\n")
        paths.append(p)
    chown_tree(base)
    with Daemon(tmp, "pages") as d:
        with vs.Sandbox(socket=d.sock) as sb:
            for p in paths:
                try:
                    sb.terminal("true", workspace=p)
                except vs.SandboxError as e:
                    check(e.code == "config_invalid", e)
            st = sb.status()
            got = [w["path"] for w in st["workspaces"]]
            check(got == paths and st["summary"]["workspaces"] == 250,
                  ("blocking client: workspaces", len(got), st["summary"]))
            check("next_after" not in st and "next_offset" not in st, sorted(st))
            one = sb.status(paths[7])
            check([w["path"] for w in one["workspaces"]] == [paths[7]], one["workspaces"])

        async def main():
            async with AsyncSandbox(socket=d.sock) as sb:
                st = await sb.status()
                check([w["path"] for w in st["workspaces"]] == paths, ("asyncio client", len(st["workspaces"])))
        asyncio.run(main())
        tap.note("status through the Python clients: 250 workspaces in 3 pages, all returned")


if __name__ == "__main__":
    sys.exit(run_cases(tap, [t_result_fields, t_find_tools, t_timeout_cancels, t_async_concurrent, t_async_timeout,
                             t_async_task_cancel, t_status_every_page], "vs-pyapi-"))
