import { test } from "node:test";
import assert from "node:assert/strict";
import { parseArgs, sandboxParams } from "../lib/args.mjs";
import { findCredentials } from "../lib/credentials.mjs";
import { parseManifest, planWriteBack, uploadPlan } from "../lib/manifest.mjs";
import { bounded, Unavailable, UsageError } from "../lib/errors.mjs";

const base = ["--app=vs", "--image=debian:12", "--timeout=600", "--network=off", "--workspace=/w", "--worker=/x/vectora-worker"];

test("args: upload with a manifest, network off -> blockNetwork, region/cpu/memory passed", () => {
  const o = parseArgs([...base, "--sync=upload", "--manifest=/m.json", "--region=us-east", "--cpu=1.5", "--memory=2048"]);
  assert.deepEqual(sandboxParams(o), {
    timeoutMs: 600000, blockNetwork: true, workdir: "/", tags: { "vectora-sandbox": "worker" },
    regions: ["us-east"], cpu: 1.5, memoryMiB: 2048,
  });
});

test("args: network on leaves outbound open; no env or secrets are ever set", () => {
  const o = parseArgs([...base.map((a) => (a === "--network=off" ? "--network=on" : a)), "--sync=volume", "--volume=data"]);
  const p = sandboxParams(o, { "/w": "VOL" });
  assert.equal(p.blockNetwork, false);
  assert.deepEqual(p.volumes, { "/w": "VOL" });
  assert.equal("env" in p, false);
  assert.equal("secrets" in p, false);
});

test("args: refusals", () => {
  assert.throws(() => parseArgs(base), UsageError); // no --sync
  assert.throws(() => parseArgs([...base, "--sync=upload"]), /needs --manifest/);
  assert.throws(() => parseArgs([...base, "--sync=volume", "--volume=bad name"]), /Volume name/);
  assert.throws(() => parseArgs([...base, "--sync=upload", "--manifest=/m", "--token=x"]), UsageError);
  assert.throws(() => parseArgs([...base.slice(1), "--app=a b", "--sync=upload", "--manifest=/m"]), /App name/);
  assert.throws(() => parseArgs([...base, "--sync=upload", "--manifest=/m", "positional"]), UsageError);
});

const noFile = () => { throw Object.assign(new Error("nope"), { code: "ENOENT" }); };

test("credentials: the environment pair", () => {
  assert.deepEqual(findCredentials({ MODAL_TOKEN_ID: "ak", MODAL_TOKEN_SECRET: "as" }, "/h", noFile), { source: "environment" });
});

test("credentials: half a pair says which half is missing", () => {
  assert.throws(() => findCredentials({ MODAL_TOKEN_ID: "ak" }, "/h", noFile), /MODAL_TOKEN_SECRET is not set/);
});

test("credentials: nothing at all names both sources", () => {
  assert.throws(() => findCredentials({}, "/h", noFile), /MODAL_TOKEN_ID\/MODAL_TOKEN_SECRET are not in the daemon's environment and \/h\/\.modal\.toml does not exist/);
});

test("credentials: ~/.modal.toml active profile, MODAL_PROFILE, incomplete profile", () => {
  const toml = '[a]\ntoken_id = "ak"\ntoken_secret = "as"\nactive = true\n[b]\ntoken_id = "x"\n';
  assert.deepEqual(findCredentials({}, "/h", () => toml), { source: '/h/.modal.toml profile "a"' });
  assert.throws(() => findCredentials({ MODAL_PROFILE: "b" }, "/h", () => toml), /profile "b" .* lacks token_id\/token_secret/);
  assert.throws(() => findCredentials({}, "/h", () => '[a]\ntoken_id = "ak"\n'), /no active profile/);
  assert.throws(() => findCredentials({}, "/h", () => "not toml ="), /not valid TOML/);
  assert.deepEqual(findCredentials({ MODAL_CONFIG_PATH: "/c.toml" }, "/h", (p) => (p === "/c.toml" ? toml : noFile())), { source: '/c.toml profile "a"' });
});

test("bounded: a call that never answers fails as Unavailable in time", async () => {
  const t0 = Date.now();
  await assert.rejects(bounded(new Promise(() => {}), 50, "looking up"), (e) => e instanceof Unavailable && /looking up: no answer/.test(e.message));
  assert.ok(Date.now() - t0 < 1000);
});

const manifest = parseManifest(JSON.stringify({
  version: 1,
  rw_roots: ["/w"],
  ro_roots: ["/ro"],
  protected: ["/w/vectora.toml", "/w/.git/hooks"],
  entries: [
    { path: "/w", kind: "dir", mode: 0o755 },
    { path: "/w/src", kind: "dir", mode: 0o755 },
    { path: "/w/src/a.c", kind: "file", mode: 0o644, size: 1 },
    { path: "/w/run.sh", kind: "file", mode: 0o755, size: 1 },
    { path: "/w/l", kind: "symlink", mode: 0o777, target: "src" },
    { path: "/w/vectora.toml", kind: "file", mode: 0o644, size: 1 },
    { path: "/w/src/a.c", kind: "file", mode: 0o644, size: 1 },
    { path: "/ro", kind: "dir", mode: 0o755 },
    { path: "/ro/r.txt", kind: "file", mode: 0o644, size: 1 },
  ],
}));

test("manifest: duplicates are uploaded once; directories first; executables noted", () => {
  const p = uploadPlan(manifest);
  assert.deepEqual(p.dirs.map((d) => d.path), ["/ro", "/w", "/w/src"]);
  assert.deepEqual(p.files.map((f) => f.path), ["/w/src/a.c", "/w/run.sh", "/w/vectora.toml", "/ro/r.txt"]);
  assert.deepEqual(p.executables, ["/w/run.sh"]);
  assert.deepEqual(p.links.map((l) => [l.path, l.target]), [["/w/l", "src"]]);
});

test("manifest: refuses relative or unnormalized paths", () => {
  const bad = (path) => JSON.stringify({ version: 1, rw_roots: [], ro_roots: [], protected: [], entries: [{ path, kind: "file", mode: 0 }] });
  assert.throws(() => parseManifest(bad("w/a")), /absolute/);
  assert.throws(() => parseManifest(bad("/w/../etc/passwd")), /normalized/);
  assert.throws(() => parseManifest('{"version":2}'), /version/);
});

test("write-back never overwrites a masked file, never writes protected or ro paths, never below a masked dir", () => {
  const host = new Map([
    ["/w", "dir"], ["/w/src", "dir"], ["/w/src/a.c", "file"], ["/w/run.sh", "file"], ["/w/vectora.toml", "file"],
    ["/w/.env", "file"],            // masked: on the host, not uploaded
    ["/w/.ssh", "dir"],             // masked directory
    ["/w/lnk", "symlink"],          // a host symlink
    ["/ro", "dir"], ["/ro/r.txt", "file"],
  ]);
  const lst = (p) => (host.has(p) ? host.get(p) : null);
  const f = (path, mode = 0o644) => ({ path, type: "file", mode });
  const { write, skipped } = planWriteBack(manifest, [
    f("/w/src/a.c"),              // changed, uploaded: written
    f("/w/src/new.c"),            // new below an uploaded dir: written
    f("/w/src/deep/er/x.c"),      // new dirs below an uploaded dir: written
    f("/w/.env"),                 // masked on the host: never
    f("/w/.ssh/authorized_keys"), // below a masked dir: never
    f("/w/vectora.toml"),         // protected
    f("/w/.git/hooks/pre-commit"),// protected dir
    f("/ro/r.txt"),               // read-only root
    f("/w/lnk/x"),                // through a host symlink
    f("/w/run.sh", 0o4755),       // setuid bit dropped
    { path: "/w/src/s", type: "symlink", mode: 0o777 },
    f("/w/../etc/passwd"),
  ], lst);
  assert.deepEqual(write.map((w) => [w.path, w.mode, w.created]), [
    ["/w/src/a.c", 0o644, false],
    ["/w/src/new.c", 0o644, true],
    ["/w/src/deep/er/x.c", 0o644, true],
    ["/w/run.sh", 0o755, false],
  ]);
  assert.deepEqual(skipped.map((s) => s.path), [
    "/w/.env", "/w/.ssh/authorized_keys", "/w/vectora.toml", "/w/.git/hooks/pre-commit", "/ro/r.txt", "/w/lnk/x", "/w/src/s", "/w/../etc/passwd",
  ]);
});
