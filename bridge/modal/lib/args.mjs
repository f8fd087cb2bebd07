// SPDX-License-Identifier: MIT
// The bridge's command line, as built by src/core/backends/backend-modal.c: one
// --key=value per Sandbox parameter. Nothing secret is ever on it.
import { parseArgs as nodeParseArgs } from "node:util";
import { UsageError } from "./errors.mjs";

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

export function parseArgs(argv) {
  let values;
  try {
    ({ values } = nodeParseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        app: { type: "string" },
        image: { type: "string" },
        timeout: { type: "string" },
        region: { type: "string" },
        cpu: { type: "string" },
        memory: { type: "string" },
        network: { type: "string" },
        gpu: { type: "string" },
        workspace: { type: "string" },
        worker: { type: "string" },
        sync: { type: "string" },
        manifest: { type: "string" },
        volume: { type: "string" },
      },
    }));
  } catch (e) {
    throw new UsageError(e.message);
  }
  const need = (k) => {
    if (values[k] === undefined || values[k] === "") throw new UsageError(`--${k} is required`);
    return values[k];
  };
  const o = {
    app: need("app"),
    image: need("image"),
    timeoutS: Number(need("timeout")),
    region: values.region,
    cpu: values.cpu === undefined ? undefined : Number(values.cpu),
    memoryMiB: values.memory === undefined ? undefined : Number(values.memory),
    network: need("network"),
    gpu: values.gpu ?? "off",
    workspace: need("workspace"),
    worker: need("worker"),
    sync: need("sync"),
    manifest: values.manifest,
    volume: values.volume,
  };
  if (!NAME.test(o.app)) throw new UsageError(`--app: "${o.app}" is not a Modal App name`);
  if (!Number.isInteger(o.timeoutS) || o.timeoutS < 10 || o.timeoutS > 86400)
    throw new UsageError("--timeout must be an integer number of seconds in 10..86400");
  if (o.cpu !== undefined && !(o.cpu > 0)) throw new UsageError("--cpu must be a positive number");
  if (o.memoryMiB !== undefined && !(Number.isInteger(o.memoryMiB) && o.memoryMiB > 0))
    throw new UsageError("--memory must be a positive integer (MiB)");
  if (o.network !== "on" && o.network !== "off") throw new UsageError("--network must be on or off");
  if (o.gpu !== "on" && o.gpu !== "off") throw new UsageError("--gpu must be on or off");
  if (!o.workspace.startsWith("/")) throw new UsageError("--workspace must be absolute");
  if (!o.worker.startsWith("/")) throw new UsageError("--worker must be absolute");
  if (o.sync === "upload") {
    if (!o.manifest) throw new UsageError("--sync=upload needs --manifest");
  } else if (o.sync === "volume") {
    if (!o.volume || !NAME.test(o.volume)) throw new UsageError("--sync=volume needs --volume=NAME (a Modal Volume name)");
  } else throw new UsageError("--sync must be upload or volume");
  return o;
}

// What the SDK's sandboxes.create() gets. Outbound network is blocked unless
// the policy allows it (lockdown forces --network=off upstream); no env, no
// secrets: nothing of the daemon's environment enters the Sandbox.
export function sandboxParams(o, volumes) {
  const p = {
    timeoutMs: o.timeoutS * 1000,
    blockNetwork: o.network === "off",
    workdir: "/",
    tags: { "vectora-sandbox": "worker" },
  };
  if (o.region) p.regions = [o.region];
  if (o.cpu !== undefined) p.cpu = o.cpu;
  if (o.memoryMiB !== undefined) p.memoryMiB = o.memoryMiB;
  if (volumes) p.volumes = volumes;
  return p;
}
