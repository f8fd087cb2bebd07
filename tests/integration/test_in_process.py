"""What the in-process servers (the CLI's --no-daemon, the MCP server
without a daemon) share through core (api-call.h: api_call_run and
api_call_refuse; tools_embedded_sandbox): a call refused before any worker
ran it is audited in both as the daemon audits it; the result's
sandbox.generation says which worker served it (the MCP server's count
moves when its jail is ended and started again; the CLI has one worker per
process). And the CLI's `stop`, whose grace before SIGKILL is measured on
time-util's clock. TAP; cases may be named on the command line."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vmcp import Mcp  # noqa: E402
from vtest import CLI, check, make_ws  # noqa: E402

tap = vtest.Tap()
TOML = "[sandbox]\nrw_paths = [\".\"]\nnetwork = false\n"
# A key the config refuses: every call is refused before a worker starts.
TYPO = "[sandbox]\nro_path = []\n"


def base_env(tmp):
    """No daemon anywhere: a socket path nobody listens on."""
    return dict(os.environ, VECTORA_SANDBOX_SOCKET=os.path.join(tmp, "nobody.sock"))


def audited(path, ws):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip() and json.loads(x).get("workspace") == ws]


def mcp_reply(r):
    return r.get("result", {}).get("structuredContent") or {}


def t_refusal_audited(tmp):
    """A workspace whose vectora.toml is refused: the call is refused before
    any worker runs it, and both in-process servers audit it
    (api_call_refuse) as terminal, refused with config_invalid, the reason
    located in the file."""
    env = base_env(tmp)
    ws = make_ws(tmp, "refused-cli", TYPO)
    log = os.path.join(tmp, "refused-cli.audit")
    p = subprocess.run([CLI, "--no-daemon", "--json", "--audit-log", log, "run", "-w", ws, "echo ran > ran.txt"],
                       capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 125 and not os.path.exists(os.path.join(ws, "ran.txt")), (p.returncode, p.stdout, p.stderr))
    recs = audited(log, ws)
    check(len(recs) == 1 and recs[0]["tool"] == "terminal" and recs[0]["error_code"] == "config_invalid"
          and recs[0]["outcome"] == "refused" and "vectora.toml:2:1" in (recs[0].get("denial_reason") or ""), recs)

    ws = make_ws(tmp, "refused-mcp", TYPO)
    log = os.path.join(tmp, "refused-mcp.audit")
    m = Mcp(ws, env, ["--audit-log", log])
    try:
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        r = m.call("terminal", command="echo ran > ran.txt")
        check(r.get("result", {}).get("isError") is True and not os.path.exists(os.path.join(ws, "ran.txt")), r)
    finally:
        m.close()
    recs2 = audited(log, ws)
    check(len(recs2) == 1 and [(x["tool"], x["outcome"], x["error_code"]) for x in recs2] ==
          [(x["tool"], x["outcome"], x["error_code"]) for x in recs], {"cli": recs, "mcp": recs2})


def t_generation(tmp):
    """sandbox.generation: the CLI's one worker is 1; the MCP server's first
    worker is 1, a warm call keeps it, and after a call that left a process
    running (its jail ended, jail_restarted) the next call's worker is 2."""
    env = base_env(tmp)
    ws = make_ws(tmp, "gen", TOML)
    p = subprocess.run([CLI, "--no-daemon", "--json", "run", "-w", ws, "true"], capture_output=True, text=True,
                       env=env, timeout=60)
    res = json.loads(p.stdout or "{}")
    check(res.get("ok") is True and res.get("sandbox", {}).get("generation") == 1, (p.stdout, p.stderr))
    m = Mcp(ws, env)
    try:
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        gens = []
        for cmd in ("true", "true", "setsid sleep 30 >/dev/null 2>&1 < /dev/null &", "true"):
            r = mcp_reply(m.call("terminal", command=cmd))
            check(r.get("ok") is True, r)
            gens.append((r["sandbox"]["generation"], "jail_restarted" in r))
        check(gens == [(1, False), (1, False), (1, True), (2, False)], gens)
    finally:
        m.close()


def t_stop_grace(tmp):
    """`stop` of a process that ignores SIGTERM: SIGKILL after the grace
    (STOP_GRACE_MS, 5 s, counted on time-util's now_ms()), not at once and
    not never."""
    d = vtest.Daemon(tmp, "stop", log_level=None)
    try:
        ws = make_ws(tmp, "stop", TOML)
        env = dict(os.environ, VECTORA_SANDBOX_SOCKET=d.sock)

        def cli(*a):
            return subprocess.run([CLI, *a], capture_output=True, text=True, env=env, timeout=60)

        p = cli("start", "-w", ws, "trap '' TERM; while :; do sleep 1; done")
        check(p.returncode == 0 and p.stdout.strip().isdigit(), (p.returncode, p.stdout, p.stderr))
        pid = p.stdout.strip()
        time.sleep(0.5)  # the shell has set its trap
        t0 = time.monotonic()
        p = cli("stop", "-w", ws, pid)
        took = time.monotonic() - t0
        check(p.returncode == 0 and "SIGKILL after SIGTERM was ignored" in p.stdout, (p.returncode, p.stdout, p.stderr))
        check(4.5 <= took < 30, "stop took %.1f s (the grace is 5 s)" % took)
    finally:
        d.stop()


CASES = [t_refusal_audited, t_generation, t_stop_grace]


def main():
    if not shutil.which("bwrap"):
        tap.skip("in-process", "bwrap not installed")
        return tap.finish()
    return vtest.run_cases(tap, CASES, "vectora-inproc-")


if __name__ == "__main__":
    sys.exit(main())
