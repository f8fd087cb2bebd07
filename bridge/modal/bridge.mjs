#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// vectora-sandbox's modal bridge: creates a Modal Sandbox with Modal's
// official JavaScript SDK, puts the static worker into it, runs it with
// exec, and joins its stdin/stdout to ours, so the daemon speaks the
// unchanged worker protocol through this process. Our stderr is for logs
// and, before the worker runs, for the one-line reason it could not
// (exit 69: the daemon reports sandbox_unavailable with that line).
//
// Signals: SIGUSR1 writes files changed in the Sandbox back to the host
// (sync = "upload"); SIGTERM/SIGINT terminate the Sandbox and exit.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { parseArgs } from "./lib/args.mjs";
import { findCredentials } from "./lib/credentials.mjs";
import { parseManifest } from "./lib/manifest.mjs";
import { joinProcess } from "./lib/join.mjs";
import { bounded, Unavailable, UsageError, EXIT_UNAVAILABLE, EXIT_USAGE, EXIT_SOFTWARE } from "./lib/errors.mjs";

const PREFIX = "vectora-modal-bridge: ";
const log = (msg) => process.stderr.write(PREFIX + msg + "\n");

function fail(code, msg) {
  process.stderr.write(PREFIX + msg + "\n", () => process.exit(code));
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  try {
    findCredentials(process.env, homedir(), (p) => readFileSync(p, "utf8"));
  } catch (e) {
    throw new Unavailable(e.message);
  }
  let manifest = null;
  if (o.sync === "upload") {
    try {
      manifest = parseManifest(readFileSync(o.manifest, "utf8"));
    } catch (e) {
      throw new Unavailable(`reading the upload manifest ${o.manifest}: ${e.message}`);
    }
  }
  let modal;
  try {
    modal = await import("modal");
  } catch (e) {
    throw new Unavailable(`the modal npm package is not installed beside the bridge: run scripts/install-deps (${e.message.split("\n")[0]})`);
  }
  const { startSandbox, writeBack } = await import("./lib/sandbox.mjs");
  const { client, sb, proc, mark } = await startSandbox(modal, o, manifest, log);

  let ending = false;
  const terminate = async () => {
    await bounded(sb.terminate(), 10000, "terminating the Sandbox").catch((e) => log(e.message));
    client.close?.();
  };
  let syncing = Promise.resolve();
  process.on("SIGUSR1", () => {
    if (!manifest) return log("write-back: sync = \"volume\" has nothing to write back");
    syncing = syncing.then(() => writeBack(sb, manifest, mark, log)).catch((e) => log(`write-back failed: ${e.message}`));
  });
  for (const s of ["SIGTERM", "SIGINT", "SIGHUP"])
    process.on(s, () => {
      if (ending) return;
      ending = true;
      terminate().finally(() => process.exit(128 + (s === "SIGINT" ? 2 : s === "SIGHUP" ? 1 : 15)));
    });

  const pumps = joinProcess(proc, { hostIn: process.stdin, hostOut: process.stdout, hostErr: process.stderr });
  pumps.input.catch((e) => log(`input to the worker: ${e.message}`));
  pumps.errors.catch(() => {});
  const outDone = pumps.output.catch((e) => log(`output from the worker: ${e.message}`));
  const code = await proc.wait().catch((e) => {
    log(`waiting for the worker: ${e.message}`);
    return EXIT_SOFTWARE;
  });
  await outDone;
  await syncing;
  ending = true;
  await terminate();
  return code;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    if (e instanceof UsageError) fail(EXIT_USAGE, `usage: ${e.message}`);
    else if (e instanceof Unavailable) fail(EXIT_UNAVAILABLE, e.message);
    else fail(EXIT_SOFTWARE, `internal error: ${e && e.stack ? e.stack : e}`);
  },
);
