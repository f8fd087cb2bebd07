// The bridge as the daemon runs it: a real process on this machine's Node,
// with the SDK installed from the lockfile. Modal cannot be reached from
// here, so these are the failure paths; they must be fast and say why.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const bridge = path.join(here, "..", "bridge.mjs");
const tmp = mkdtempSync(path.join(tmpdir(), "vs-modal-"));
const manifest = path.join(tmp, "m.json");
writeFileSync(manifest, JSON.stringify({ version: 1, rw_roots: [tmp], ro_roots: [], protected: [], entries: [] }));
const args = ["--app=vectora-test", "--image=debian:12", "--timeout=60", "--network=off", `--workspace=${tmp}`, `--worker=${process.execPath}`, "--sync=upload", `--manifest=${manifest}`];

function run(argv, env) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const c = spawn(process.execPath, [bridge, ...argv], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "", err = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (err += d));
    c.on("close", (code) => resolve({ code, out, err, ms: Date.now() - t0 }));
  });
}

const cleanEnv = { PATH: process.env.PATH, HOME: tmp };

test("the SDK is installed from the lockfile and loads on this Node", async () => {
  const modal = await import("modal");
  assert.equal(typeof modal.ModalClient, "function");
  assert.equal(typeof modal.Sandbox, "function");
});

test("without credentials: exit 69 within seconds, saying what is missing, nothing on stdout", async () => {
  const r = await run(args, cleanEnv);
  assert.equal(r.code, 69);
  assert.match(r.err, /^vectora-modal-bridge: no Modal credentials: MODAL_TOKEN_ID\/MODAL_TOKEN_SECRET are not in the daemon's environment and .*\.modal\.toml does not exist/);
  assert.equal(r.out, "");
  assert.ok(r.ms < 5000, `took ${r.ms} ms`);
});

test("with fake credentials and no route to Modal: exit 69 in bounded time", async () => {
  const r = await run(args, { ...cleanEnv, MODAL_TOKEN_ID: "ak-fake", MODAL_TOKEN_SECRET: "as-fake" });
  assert.equal(r.code, 69);
  assert.match(r.err, /vectora-modal-bridge: (could not create the Modal Sandbox|looking up the Modal App)/);
  assert.doesNotMatch(r.err, /as-fake/, "the secret is never echoed");
  assert.equal(r.out, "");
  assert.ok(r.ms < 20000, `took ${r.ms} ms`);
});

test("a bad command line is a usage error (64), not a hang", async () => {
  const r = await run(["--app=x"], cleanEnv);
  assert.equal(r.code, 64);
  assert.match(r.err, /usage: /);
});
