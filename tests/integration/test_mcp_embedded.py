#!/usr/bin/env python3
"""vectora-sandbox mcp without a daemon (embedded mode) serving calls in
parallel on its one worker (issue 30): while `sleep 5` runs, a file_read, a
list_dir and a second terminal are answered within 1 s and a ping within
100 ms; a notifications/cancelled ends exactly the call it names (the
other command runs on and answers, the cancelled one's next step never
runs); a repository made for the host's git beside a running call is put
aside and the other call told why; a worker to replace (vectora.toml
changed) serves its running call to the end first; and a workspace with network = [...] (the daemon's proxy) serves the
file tools while terminal is refused as the CLI's embedded exec refuses it,
naming the daemon. Raw JSON-RPC over stdio, timed. TAP."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
import vtest  # noqa: E402
from vtest import CLI  # noqa: E402
from vmcp import Server  # noqa: E402

tap = vtest.Tap()
report = tap.ok

TOML = '[sandbox]\nrw_paths = ["."]\nmask = [".env"]\nnetwork = false\n[sandbox.limits]\ntimeout = 60\n'
NET_TOML = '[sandbox]\nrw_paths = ["."]\nnetwork = ["example.com"]\n'
FILES = {".env": "TOPSECRET=1\n", "a.txt": "one\ntwo\nthree\n", "sub/b.txt": "bee\n"}


def text_of(r):
    return "".join(c.get("text", "") for c in (r.get("result") or {}).get("content", [])[:1])


def structured(r):
    return (r.get("result") or {}).get("structuredContent") or {}


def make_ws(tmp, name, toml=TOML):
    d = vtest.make_ws(tmp, name, toml, FILES)
    vtest.chown_tree(d)
    return d


def call(s, tool, **args):
    return s.send("tools/call", {"name": tool, "arguments": args})


def while_running(tmp, env):
    """Calls answered while `sleep 5` runs in the same embedded session."""
    ws = make_ws(tmp, "par")
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        # A warm worker first: the measures below are of serving, not of a jail's start.
        s.wait(call(s, "file_read", path="a.txt")[0])
        rid, t0 = call(s, "terminal", command="sleep 5; echo slept")
        time.sleep(0.5)  # the command is running
        pid, tp = s.send("ping")
        tpr, pr = s.wait(pid)
        report("[embedded] a ping is answered within 100 ms while `sleep 5` runs (%.1f ms)" % ((tpr - tp) * 1000),
               pr.get("result") == {} and tpr - tp < 0.1, pr)
        fid, tf = call(s, "file_read", path="a.txt")
        tfr, fr = s.wait(fid)
        lid, tl = call(s, "list_dir", path="sub")
        tlr, lr = s.wait(lid)
        eid, te = call(s, "terminal", command="echo second")
        ter, er = s.wait(eid)
        trr, rr = s.wait(rid)
        report("[embedded] a file_read is answered within 1 s while `sleep 5` runs (%.0f ms; the command's own "
               "answer came %.1f s after its start)" % ((tfr - tf) * 1000, trr - t0),
               text_of(fr).startswith("one\ntwo\nthree") and tfr - tf < 1.0 and tfr < trr, (fr, tfr - tf))
        report("[embedded] a list_dir is answered within 1 s while the command runs (%.0f ms)" % ((tlr - tl) * 1000),
               "b.txt" in text_of(lr) and tlr - tl < 1.0 and tlr < trr, lr)
        report("[embedded] a second terminal runs and is answered within 1 s while the first runs (%.0f ms)"
               % ((ter - te) * 1000), "second" in text_of(er) and structured(er).get("exit_code") == 0
               and ter - te < 1.0 and ter < trr, er)
        report("[embedded] the first command still answers, after its 5 s, on the same worker",
               "slept" in text_of(rr) and trr - t0 >= 4.5
               and structured(rr).get("sandbox", {}).get("generation") == structured(fr).get("sandbox", {}).get("generation"),
               (rr, structured(fr).get("sandbox")))
        # The same refusals as one at a time: a masked file read while a command runs.
        rid, _ = call(s, "terminal", command="sleep 2")
        time.sleep(0.3)
        mid, _ = call(s, "file_read", path=".env")
        _, mr = s.wait(mid)
        s.wait(rid)
        report("[embedded] a masked file read while a command runs is refused as before (denied)",
               mr.get("result", {}).get("isError") is True and "TOPSECRET" not in json.dumps(mr)
               and structured(mr).get("error", {}).get("code") == "denied", mr)
    finally:
        s.close()


def cancel_one(tmp, env):
    """notifications/cancelled ends the call it names, not the other one."""
    ws = make_ws(tmp, "cancel")
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        aid, _ = call(s, "terminal", command="sleep 3; touch cancelled-ran")
        bid, tb = call(s, "terminal", command="sleep 4; touch other-ran; echo other")
        time.sleep(0.7)
        s.send("notifications/cancelled", {"requestId": aid, "reason": "test"}, notify=True)
        tbr, br = s.wait(bid, timeout=30)
        # A late answer to the cancelled call would have come by now.
        time.sleep(0.3)
        pid, _ = s.send("ping")
        s.wait(pid)
        report("[embedded] the call not cancelled runs to its end and answers",
               "other" in text_of(br) and os.path.exists(os.path.join(ws, "other-ran")) and tbr - tb >= 3.5, br)
        report("[embedded] the cancelled call gets no response and its command's next step never ran",
               aid not in s.responses and not os.path.exists(os.path.join(ws, "cancelled-ran")),
               (s.responses.get(aid), os.listdir(ws)))
        fid, _ = call(s, "file_read", path="a.txt")
        _, fr = s.wait(fid)
        report("[embedded] the session serves on after the cancel", text_of(fr).startswith("one\n"), fr)
    finally:
        s.close()


def repository_beside(tmp, env):
    """A call that makes a repository for the host's git while another
    runs: the jail ends (both calls' commands with it), the repository is
    put aside and listed in the maker's result, the other call is told why
    (worker_recycled), the next call gets a fresh jail."""
    ws = make_ws(tmp, "repo")
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        aid, _ = call(s, "terminal", command="sleep 3; touch a-ran")
        time.sleep(0.5)
        bid, _ = call(s, "terminal", command="mkdir -p r/objects r/refs && echo 'ref: refs/heads/main' > r/HEAD")
        _, br = s.wait(bid)
        _, ar = s.wait(aid)
        files = structured(br).get("host_run_files", [])
        report("[embedded] a repository made while another call runs is put aside and listed in the maker's result",
               any(f.endswith("r/HEAD") for f in files) and os.path.exists(os.path.join(ws, "r/HEAD.vectora-quarantine"))
               and not os.path.exists(os.path.join(ws, "r/HEAD")), br)
        err = structured(ar).get("error", {})
        report("[embedded] the call beside it ends with worker_recycled saying why, its command ended with the jail",
               err.get("code") == "worker_recycled" and "repository" in err.get("message", "")
               and not os.path.exists(os.path.join(ws, "a-ran")), ar)
        fid, _ = call(s, "file_read", path="a.txt")
        _, fr = s.wait(fid)
        report("[embedded] the next call runs in a fresh jail",
               text_of(fr).startswith("one\n") and structured(fr).get("sandbox", {}).get("generation", 0)
               > structured(br).get("sandbox", {}).get("generation", 0), (fr, br))
    finally:
        s.close()


def masked_link_put_aside(tmp, env):
    """A masked link the next jail's start would refuse (into a system
    directory, where no mask is put and another jail may read), made
    by a call, is put aside when this server starts its next jail, and
    listed in that call's host_run_files; the call runs."""
    ws = make_ws(tmp, "aside")
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        _, r = s.wait(call(s, "terminal", command="ln -s /etc/vs-put-aside-missing.env sub/.env && echo linked")[0])
        report("[embedded] the agent's link is made", text_of(r).startswith("linked"), r)
        _, r = s.wait(call(s, "terminal", command="ls -a; echo end")[0])
        files = structured(r).get("host_run_files", [])
        moved = os.path.join(ws, "sub/.env.vectora-quarantine")
        report("[embedded] the next jail's start puts the refused link aside and lists it",
               "end" in text_of(r) and os.path.join(ws, "sub/.env") in files and moved in files
               and os.path.islink(moved) and not os.path.lexists(os.path.join(ws, "sub/.env")), (r, os.listdir(ws + "/sub")))
    finally:
        s.close()


def replaced_worker(tmp, env):
    """vectora.toml changed while a command runs: the command runs on to
    its end in its jail, the next call waits for it and gets a fresh jail
    (also after a call refused before any jail served it)."""
    ws = make_ws(tmp, "stale")
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        pid, _ = call(s, "process_list")
        _, pr = s.wait(pid)
        report("[embedded] a process tool is refused (daemon_required)",
               pr.get("result", {}).get("isError") is True and "daemon_required" in text_of(pr), pr)
        rid, t0 = call(s, "terminal", command="sleep 2; echo first")
        time.sleep(0.5)
        with open(os.path.join(ws, "vectora.toml"), "a") as f:
            f.write("# changed\n")
        fid, tf = call(s, "file_read", path="a.txt")
        tfr, fr = s.wait(fid, timeout=20)
        trr, rr = s.wait(rid)
        g = lambda r: structured(r).get("sandbox", {}).get("generation", 0)  # noqa: E731
        report("[embedded] vectora.toml changed under a running command: it ends in its jail, the next call runs in "
               "a fresh one after it (generation %d -> %d)" % (g(rr), g(fr)),
               "first" in text_of(rr) and text_of(fr).startswith("one\n") and g(fr) == g(rr) + 1 and tfr >= trr,
               (rr, fr))
    finally:
        s.close()


def network_allowlist(tmp, env):
    """network = [...] without the daemon: file tools served, commands refused as the CLI refuses them."""
    ws = make_ws(tmp, "net", NET_TOML)
    s = Server(ws, env, ["--no-daemon"])
    try:
        r = s.init()
        fid, _ = call(s, "file_read", path="a.txt")
        _, fr = s.wait(fid)
        report("[embedded, network = [..]] file_read works",
               text_of(fr).startswith("one\n") and not fr.get("result", {}).get("isError"), fr)
        lid, _ = call(s, "list_dir", path=".")
        _, lr = s.wait(lid)
        wid, _ = call(s, "file_write", path="new/w.txt", content="written\n")
        _, wr = s.wait(wid)
        report("[embedded, network = [..]] list_dir and file_write work",
               "a.txt" in text_of(lr) and not wr.get("result", {}).get("isError")
               and open(os.path.join(ws, "new/w.txt")).read() == "written\n", (lr, wr))
        patch = "*** Begin Patch\n*** Delete File: sub/b.txt\n*** End Patch\n"
        pid, _ = call(s, "apply_patch", patch=patch)
        _, pr = s.wait(pid)
        report("[embedded, network = [..]] apply_patch deletes a file (its rm in the jail is no agent command)",
               not pr.get("result", {}).get("isError") and not os.path.exists(os.path.join(ws, "sub/b.txt")), pr)
        tid, _ = call(s, "terminal", command="touch ran")
        _, tr = s.wait(tid)
        err = structured(tr).get("error", {})
        cli = subprocess.run([CLI, "--no-daemon", "--json", "exec", "-w", ws, "--", "touch", "ran"],
                             capture_output=True, env=env, timeout=60)
        try:
            cli_err = json.loads(cli.stdout).get("error", {})
        except ValueError:
            cli_err = {"raw": cli.stdout.decode(errors="replace") + cli.stderr.decode(errors="replace")}
        report("[embedded, network = [..]] terminal is refused as the CLI's embedded exec refuses it (the same code "
               "and message, naming vectora-sandboxd), and nothing ran",
               tr.get("result", {}).get("isError") is True and err.get("code") == "sandbox_unavailable"
               and "vectora-sandboxd" in err.get("message", "") and err.get("code") == cli_err.get("code")
               and err.get("message") == cli_err.get("message") and not os.path.exists(os.path.join(ws, "ran")),
               (tr, cli_err))
        names = [t.get("name") for t in s.request("tools/list").get("result", {}).get("tools", [])]
        report("[embedded, network = [..]] tools/list offers the file tools, not terminal (it cannot be served here)",
               "file_read" in names and "apply_patch" in names and "terminal" not in names, names)
        rd = subprocess.run([CLI, "--no-daemon", "read", "-w", ws, "a.txt"], capture_output=True, env=env, timeout=60)
        report("[embedded, network = [..]] the CLI's embedded read serves the file as the MCP server does",
               rd.returncode == 0 and rd.stdout.startswith(b"one\n"), rd)
        instr = r.get("result", {}).get("instructions", "")
        report("[embedded, network = [..]] the mode said at start names what is refused and why",
               "terminal is refused here" in instr and "vectora-sandboxd" in instr, instr)
    finally:
        s.close()


def input_bounded(tmp, env):
    """What the client writes while the server takes no more calls (32 run)
    waited in the server's memory without bound: a client writing on grew
    the server without end. Now the server stops reading past two of the
    largest lines (160 MiB), and the client's write blocks."""
    ws = make_ws(tmp, "bounded")
    s = Server(ws, env, ["--no-daemon"])
    try:
        s.init()
        s.wait(call(s, "file_read", path="a.txt")[0])
        for _ in range(33):  # 32 run; the 33rd holds the server's main thread
            call(s, "terminal", command="sleep 20")
        time.sleep(1)
        pad = b"A" * (1 << 20)
        line = b'{"jsonrpc":"2.0","method":"notifications/pad","params":{"p":"' + pad + b'"}}\n'
        written = [0]

        def writer():
            try:
                for _ in range(800):
                    s.p.stdin.write(line)
                    written[0] += len(line)
                s.p.stdin.flush()
            except (OSError, ValueError):
                pass

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        t.join(8)
        with open("/proc/%d/status" % s.p.pid) as f:
            rss = int([x for x in f if x.startswith("VmRSS")][0].split()[1]) // 1024
        mib = written[0] >> 20
        report("[embedded] a client writing 800 MiB while 32 calls run is held back by the server (%d MiB taken, "
               "server RSS %d MiB; bound 160 MiB queued plus a line being read)" % (mib, rss),
               t.is_alive() and mib < 400 and rss < 400, (mib, rss))
    finally:
        s.p.kill()
        s.close()


def section(name, fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        report("%s: ran to its end" % name, False, "%s: %s" % (type(e).__name__, e))


def main():
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="vectora-mcpe-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    env = {k: v for k, v in os.environ.items() if k != "VECTORA_SANDBOX_SOCKET"}
    env["VECTORA_SANDBOX_SOCKET"] = os.path.join(tmp, "nobody.sock")
    try:
        for fn in (while_running, cancel_one, repository_beside, masked_link_put_aside, replaced_worker, network_allowlist, input_bounded):
            if not only or fn.__name__ in only:
                section(fn.__name__, fn, tmp, env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
