// SPDX-License-Identifier: MIT
// Everything that talks to Modal, through the official SDK only. Each call
// is bounded (bounded()); a failure before the worker runs terminates the
// Sandbox so nothing is left running and billed.
import { open, readFile, writeFile, rename, unlink, lstat, mkdir } from "node:fs/promises";
import { constants } from "node:fs";
import path from "node:path";
import { bounded, Unavailable } from "./errors.mjs";
import { sandboxParams } from "./args.mjs";
import { uploadPlan, planWriteBack, isBelowOrEqual } from "./manifest.mjs";

export const WORKER_PATH = "/run/vectora/vectora-worker";
export const JAIL_HOME = "/home/sandbox";
const CONNECT_MS = 10000; // first contact: fail fast without network or credentials
const CREATE_MS = 120000;
const CALL_MS = 60000;
const MAX_FILE = 64 << 20;

function describe(e) {
  const m = e && e.message ? e.message : String(e);
  return m.split("\n")[0];
}

// Reads a host file without following a symlink planted after the walk.
async function readNoFollow(p) {
  const fh = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new Error("no longer a regular file");
    if (st.size > MAX_FILE) throw new Error(`larger than ${MAX_FILE >> 20} MiB`);
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

async function execChecked(sb, argv, what) {
  const p = await bounded(sb.exec(argv, { mode: "binary", stdout: "ignore" }), CALL_MS, what);
  const code = await bounded(p.wait(), CALL_MS, what);
  if (code !== 0) throw new Unavailable(`${what}: \`${argv[0]}\` exited with ${code} in the Sandbox (does the image have coreutils?)`);
}

async function inBatches(items, size, fn) {
  for (let i = 0; i < items.length; i += size) await fn(items.slice(i, i + size));
}

async function parallel(items, limit, fn) {
  let next = 0;
  const run = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

export async function uploadWorkspace(sb, manifest, log) {
  const plan = uploadPlan(manifest);
  for (const d of plan.dirs)
    await bounded(sb.filesystem.makeDirectory(d.path, { createParents: true }), CALL_MS, `creating ${d.path} in the Sandbox`);
  let skipped = 0;
  await parallel(plan.files, 8, async (f) => {
    let data;
    try {
      data = await readNoFollow(f.path);
    } catch (e) {
      skipped++;
      log(`not uploaded: ${f.path}: ${describe(e)}`);
      return;
    }
    await bounded(sb.filesystem.writeBytes(data, f.path), CALL_MS, `uploading ${f.path}`);
  });
  for (const l of plan.links) await execChecked(sb, ["ln", "-sfn", "--", l.target, l.path], `creating the symlink ${l.path}`);
  await inBatches(plan.executables, 200, (b) => execChecked(sb, ["chmod", "+x", "--", ...b], "marking uploaded files executable"));
  return { files: plan.files.length - skipped, dirs: plan.dirs.length, links: plan.links.length, skipped };
}

export async function startSandbox(modal, o, manifest, log) {
  const client = new modal.ModalClient({ timeoutMs: CONNECT_MS, maxRetries: 1 });
  let sb;
  try {
    const app = await bounded(client.apps.fromName(o.app, { createIfMissing: true }), CONNECT_MS, `looking up the Modal App "${o.app}"`);
    const image = client.images.fromRegistry(o.image);
    let volumes;
    if (o.sync === "volume") {
      const vol = await bounded(client.volumes.fromName(o.volume), CONNECT_MS, `looking up the Modal Volume "${o.volume}"`);
      volumes = { [o.workspace]: vol };
    }
    sb = await bounded(client.sandboxes.create(app, image, sandboxParams(o, volumes)), CREATE_MS, `creating the Sandbox from "${o.image}"`);
    log(`sandbox ${sb.sandboxId} created (app ${o.app}, image ${o.image}, network ${o.network})`);
    const worker = await readFile(o.worker);
    await bounded(sb.filesystem.writeBytes(worker, WORKER_PATH), CALL_MS, "copying the worker into the Sandbox");
    await execChecked(sb, ["chmod", "755", WORKER_PATH], "making the worker executable");
    await bounded(sb.filesystem.makeDirectory(JAIL_HOME, { createParents: true }), CALL_MS, "creating the jail home");
    let mark = 0;
    if (manifest) {
      const s = await uploadWorkspace(sb, manifest, log);
      log(`uploaded ${s.files} file(s), ${s.dirs} dir(s), ${s.links} link(s)${s.skipped ? `, ${s.skipped} skipped` : ""}`);
      // The Sandbox's own clock marks the upload, so write-back compares
      // times from one clock.
      await bounded(sb.filesystem.writeBytes(new Uint8Array(0), "/run/vectora/upload-mark"), CALL_MS, "marking the upload");
      mark = (await bounded(sb.filesystem.stat("/run/vectora/upload-mark"), CALL_MS, "marking the upload")).modifiedTime;
    }
    // No env: the worker's environment comes from init, never from ours.
    const proc = await bounded(sb.exec([WORKER_PATH], { mode: "binary", stdout: "pipe", stderr: "pipe", workdir: "/" }), CALL_MS, "starting the worker");
    return { client, sb, proc, mark };
  } catch (e) {
    if (sb) await bounded(sb.terminate(), 5000, "terminating the Sandbox").catch(() => {});
    client.close?.();
    if (e instanceof Unavailable) throw e;
    throw new Unavailable(`could not create the Modal Sandbox: ${describe(e)} (check network access to api.modal.com and the Modal credentials)`);
  }
}

async function listRemote(sb, root, since, out, depth = 0) {
  if (depth > 64) return;
  let items;
  try {
    items = await bounded(sb.filesystem.listFiles(root), CALL_MS, `listing ${root}`);
  } catch {
    return;
  }
  for (const f of items) {
    if (f.type === "directory") await listRemote(sb, f.path, since, out, depth + 1);
    else if (f.modifiedTime >= since) out.push(f);
  }
}

function hostKind(p) {
  return lstat(p).then(
    (st) => (st.isSymbolicLink() ? "symlink" : st.isFile() ? "file" : st.isDirectory() ? "dir" : "other"),
    () => null,
  );
}

// Writes files changed in the Sandbox since the upload back to the host,
// under the rules of planWriteBack(); each file atomically (temp + rename).
export async function writeBack(sb, manifest, mark, log) {
  const remote = [];
  for (const root of manifest.rwRoots) await listRemote(sb, root, mark, remote);
  const kinds = new Map();
  for (const r of remote) {
    for (let d = r.path; ; d = path.dirname(d)) {
      if (!kinds.has(d)) kinds.set(d, await hostKind(d));
      if (d === "/" || !manifest.rwRoots.some((x) => isBelowOrEqual(d, x))) break;
    }
  }
  const plan = planWriteBack(manifest, remote, (p) => (kinds.has(p) ? kinds.get(p) : null));
  for (const s of plan.skipped) log(`write-back skipped ${s.path}: ${s.reason}`);
  let n = 0;
  for (const w of plan.write) {
    const data = await bounded(sb.filesystem.readBytes(w.path), CALL_MS, `reading ${w.path}`);
    await mkdir(path.dirname(w.path), { recursive: true });
    // Re-check just before writing: the host may have changed meanwhile.
    const now = await hostKind(w.path);
    if (now !== null && now !== "file") continue;
    const tmp = `${path.dirname(w.path)}/.vectora-writeback-${process.pid}-${n}`;
    const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, w.mode);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, w.path).catch(async (e) => {
      await unlink(tmp).catch(() => {});
      throw e;
    });
    n++;
  }
  log(`write-back: ${n} file(s) written, ${plan.skipped.length} skipped`);
  return n;
}
