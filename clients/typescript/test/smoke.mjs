// SPDX-License-Identifier: MIT
// The TypeScript client against a real daemon (tests/integration/
// test_typescript_client.py starts it and reads these lines): one JSON line
// per check, {"name", "ok", "detail"}. Argument: a JSON object with the
// socket, the workspaces and where the package was installed.
import { createRequire } from "module";
import * as fs from "fs";
import * as path from "path";

const cfg = JSON.parse(process.argv[2]);
const require = createRequire(path.join(cfg.project, "index.js"));
const vs = require("vectora-sandbox");

function report(name, ok, detail) {
  process.stdout.write(JSON.stringify({ name, ok: Boolean(ok), detail: detail === undefined ? "" : String(detail) }) + "\n");
}

async function attempt(name, fn) {
  try {
    const r = await fn();
    report(name, true, r);
  } catch (e) {
    report(name, false, e && e.stack ? e.stack : String(e));
  }
}

function check(cond, what) {
  if (!cond) throw new Error(typeof what === "string" ? what : JSON.stringify(what));
}

function sleepers(n) {
  const out = [];
  for (const p of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const argv = fs.readFileSync(`/proc/${p}/cmdline`).toString("latin1").split("\0");
      if (argv[0] === "sleep" && argv[1] === String(n)) out.push(Number(p));
    } catch { /* gone */ }
  }
  return out;
}

const delay = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await delay(50);
  }
  return cond();
}

// The command `sleep N; touch MARKER` (N a little over 3 s, its fraction
// naming it on the host) ended: its sleep gone within 1 s of t0 (when the
// timeout ran out or the signal aborted; issue 30), the marker not written
// by when the command would have written it. Waited for up to 5 s so that a
// miss says by how much; the time it took, in ms.
async function stopped(ws, n, marker, t0) {
  await waitFor(() => sleepers(n).length === 0, 5000);
  const took = Date.now() - t0;
  check(sleepers(n).length === 0 && took < 1000, `sleep ${n} still ran ${took} ms after the cancel (bound 1000 ms)`);
  await delay(Number(n) * 1000 + 500);
  check(!fs.existsSync(path.join(ws, marker)), `${marker} appeared: the command ran on`);
  return took;
}

const { socket, ws, plain, netws, linesws } = cfg;

await attempt("defaultSocket follows the CLI's rule", async () => {
  const saved = process.env.VECTORA_SANDBOX_SOCKET;
  delete process.env.VECTORA_SANDBOX_SOCKET;
  const d = vs.defaultSocket();
  process.env.VECTORA_SANDBOX_SOCKET = "/x/y.sock";
  const e = vs.defaultSocket();
  if (saved === undefined) delete process.env.VECTORA_SANDBOX_SOCKET; else process.env.VECTORA_SANDBOX_SOCKET = saved;
  check(d === cfg.expect_default_socket && e === "/x/y.sock", [d, e, cfg.expect_default_socket]);
  return d;
});

const sb = new vs.Sandbox({ socket, workspace: ws });

await attempt("terminal: stdout, stderr, exit code, stdin, env, sandbox layers", async () => {
  const r = await sb.terminal("cat; echo err >&2; echo $FOO; exit 3", { stdin: "in\n", env: { FOO: "bar" } });
  check(r.exitCode === 3 && r.text() === "in\nbar\n" && r.stderr.toString() === "err\n", r);
  check(r.sandbox.sandboxed && r.sandbox.layers.includes("namespaces") && Array.isArray(r.sandbox.degraded), r.sandbox);
  check(Array.isArray(r.sandbox.hostRunFiles) && r.sandbox.policyPending === null, r.sandbox);
  return r.sandbox.layers.join(",");
});

await attempt("file tools: write (raw bytes), edit, read; a masked path is denied", async () => {
  const w = await sb.fileWrite("dir/new.txt", "hello\n", { createParents: true });
  check(w.created && w.size === 6, w);
  const e = await sb.fileEdit("dir/new.txt", "hello", "hello, world");
  check(e.replacements === 1, e);
  const bin = Buffer.from([0, 1, 2, 255, 10]);
  await sb.fileWrite("bin.dat", bin);
  check((await sb.fileRead("bin.dat")).content.equals(bin), "binary round trip");
  check((await sb.fileRead("dir/new.txt")).text() === "hello, world\n", "read back");
  try {
    await sb.fileRead(".env");
    throw new Error("a masked file was read");
  } catch (err) {
    check(err instanceof vs.SandboxError && err.code === vs.ErrorCode.DENIED, String(err));
  }
});

await attempt("list_dir, glob, grep with context, file_read by lines", async () => {
  const s2 = new vs.Sandbox({ socket, workspace: linesws });
  try {
    const ls = await s2.listDir();
    const names = ls.entries.map((x) => x.name);
    check(names.includes("a.ts") && names.includes("sub") && !names.includes(".env"), names);
    const g = await s2.glob("**/*.ts");
    check(JSON.stringify(g.paths.map((p) => p.name).sort()) === JSON.stringify(["a.ts", "sub/b.ts"]), g);
    const gr = await s2.grep("TODO", { context: 1 });
    check(gr.matchCount === 2 && gr.matches.some((m) => !m.match), gr);
    const fc = await s2.fileRead("notes.txt", { startLine: 5, maxLines: 3 });
    check(fc.text() === "line 5\nline 6\nline 7\n" && fc.startLine === 5, fc);
    check(fc.numbered().split("\n")[0] === "     5\tline 5", fc.numbered());
    const euro = await s2.fileRead("euro.txt");
    check(euro.text() === "\u20ac".repeat(1000) + "\n", "a UTF-8 file reads whole");
  } finally {
    s2.close();
  }
});

await attempt("network_denied and timeoutCappedMs reach the result", async () => {
  const s3 = new vs.Sandbox({ socket, workspace: netws });
  try {
    const r = await s3.terminal("curl -sS -i http://denied.test/ 2>&1; true");
    const nd = r.sandbox.networkDenied;
    check(nd.length && nd[0].host === "denied.test", r.sandbox);
    const t = await s3.terminal("true", { timeout: 60 });
    check(t.timeoutCappedMs === 5000, t);
    return JSON.stringify(nd[0]);
  } finally {
    s3.close();
  }
});

await attempt("concurrent calls on one connection run at once", async () => {
  const t0 = Date.now();
  const rs = await Promise.all([0, 1, 2, 3].map((i) => sb.terminal(`sleep 1; echo ${i}`)));
  const took = Date.now() - t0;
  check(rs.map((r) => r.text()).join("") === "0\n1\n2\n3\n", rs.map((r) => r.text()));
  check(took < 3500, `four 1 s commands took ${took} ms`);
  return `${took} ms`;
});

await attempt("timeoutMs cancels the command (CallTimeout, confirmed; sleep gone, marker never written)", async () => {
  const s4 = new vs.Sandbox({ socket, workspace: ws, timeoutMs: 1000 });
  try {
    const t0 = Date.now() + 1000; // when timeoutMs runs out
    try {
      await s4.terminal("sleep 3.4203; touch marker-ts-timeout");
      throw new Error("the call returned");
    } catch (err) {
      check(err instanceof vs.CallTimeout && err.code === vs.ErrorCode.CANCELLED && err.confirmed, String(err));
    }
    const took = await stopped(ws, "3.4203", "marker-ts-timeout", t0);
    check((await s4.terminal("echo again")).text() === "again\n", "the connection serves on");
    return `sleep gone ${took} ms after the timeout`;
  } finally {
    s4.close();
  }
});

await attempt("an AbortSignal cancels the command", async () => {
  const ac = new AbortController();
  const p = sb.terminal("sleep 3.4204; touch marker-ts-abort", { signal: ac.signal });
  check(await waitFor(() => sleepers("3.4204").length > 0, 20000), "sleep 3.4204 did not start");
  const t0 = Date.now();
  ac.abort();
  try {
    await p;
    throw new Error("the call returned");
  } catch (err) {
    check(err instanceof vs.CallTimeout, String(err));
  }
  return `sleep gone ${await stopped(ws, "3.4204", "marker-ts-abort", t0)} ms after the abort`;
});

await attempt("requireSandbox refuses an unsandboxed workspace before anything runs", async () => {
  const s5 = new vs.Sandbox({ socket, workspace: plain, requireSandbox: true });
  try {
    await s5.terminal("touch ran-anyway");
    throw new Error("it ran");
  } catch (err) {
    check(err instanceof vs.SandboxError && err.code === vs.ErrorCode.SANDBOX_REQUIRED, String(err));
  } finally {
    s5.close();
  }
  check(!fs.existsSync(path.join(plain, "ran-anyway")), "the command ran");
});

await attempt("status returns every workspace, not the daemon's first page", async () => {
  const s7 = new vs.Sandbox({ socket });
  try {
    for (const w of cfg.many) {
      try {
        await s7.terminal("true", { workspace: w });
        throw new Error("a refused config ran");
      } catch (err) {
        check(err instanceof vs.SandboxError && err.code === "config_invalid", String(err));
      }
    }
    const st = await s7.status();
    const got = st.workspaces.map((w) => w.path).filter((p) => cfg.many.includes(p));
    check(got.length === cfg.many.length && got.every((p, i) => p === cfg.many[i]), { got: got.length });
    check(!("next_after" in st) && !("next_offset" in st), Object.keys(st));
    return `${st.workspaces.length} workspaces`;
  } finally {
    s7.close();
  }
});

await attempt("an unreachable daemon rejects with DaemonUnavailable", async () => {
  const s6 = new vs.Sandbox({ socket: "/nonexistent/vs.sock" });
  try {
    await s6.status();
    throw new Error("status answered");
  } catch (err) {
    check(err instanceof vs.DaemonUnavailable && err.code === "daemon_unavailable", String(err));
  }
});

await attempt("a script that never calls close() still ends once its calls are done", async () => {
  const { spawnSync } = await import("child_process");
  const code = `const vs = require(${JSON.stringify(path.join(cfg.project, "node_modules/vectora-sandbox"))});` +
    `new vs.Sandbox({ socket: ${JSON.stringify(socket)}, workspace: ${JSON.stringify(ws)} })` +
    `.terminal("echo done").then((r) => process.stdout.write(r.text()));`;
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ["-e", code], { timeout: 20000, encoding: "utf8" });
  check(r.status === 0 && r.stdout === "done\n", r);
  return `${Date.now() - t0} ms`;
});

sb.close();
