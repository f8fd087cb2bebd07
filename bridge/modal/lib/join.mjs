// SPDX-License-Identifier: MIT
// Joins the worker's stdin/stdout in the Sandbox (web streams of the SDK's
// ContainerProcess, binary mode) to the bridge's own stdin/stdout (Node
// streams on the daemon's socket), byte for byte, in both directions, with
// backpressure: a side is read only as fast as the other side takes it, so
// neither the bridge nor the Sandbox buffers without bound. End of input is
// passed on as end of input; the worker's end of output as ours.

function waitDrain(out) {
  return new Promise((resolve, reject) => {
    const done = (err) => {
      out.off("drain", onDrain);
      out.off("error", onError);
      out.off("close", onClose);
      err ? reject(err) : resolve();
    };
    const onDrain = () => done();
    const onError = (e) => done(e);
    const onClose = () => done(Object.assign(new Error("output closed"), { code: "EPIPE" }));
    out.on("drain", onDrain);
    out.on("error", onError);
    out.on("close", onClose);
  });
}

function endWritable(out) {
  return new Promise((resolve, reject) => {
    if (out.writableFinished) return resolve();
    out.once("error", reject);
    out.end(() => resolve());
  });
}

// Node Readable -> WritableStream. Resolves with the byte count after the
// destination was closed (EOF delivered).
export async function pumpIn(hostIn, dest) {
  const writer = dest.getWriter();
  let n = 0;
  try {
    for await (const chunk of hostIn) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      // ready settles when the destination's queue is below its high-water
      // mark; until then hostIn is not read, and the kernel socket buffer
      // pushes back on the daemon.
      await writer.ready;
      writer.write(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)).catch(() => {});
      n += bytes.byteLength;
    }
    await writer.close();
  } catch (e) {
    await writer.abort(e).catch(() => {});
    throw e;
  } finally {
    writer.releaseLock();
  }
  return n;
}

// ReadableStream -> Node Writable. Resolves with the byte count after out
// was ended (when end is true).
export async function pumpOut(src, out, { end = true } = {}) {
  const reader = src.getReader();
  let n = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (!value || value.byteLength === 0) continue;
      n += value.byteLength;
      if (!out.write(value)) await waitDrain(out);
    }
  } catch (e) {
    await reader.cancel(e).catch(() => {});
    throw e;
  } finally {
    reader.releaseLock();
  }
  if (end) await endWritable(out);
  return n;
}

// proc: { stdin: WritableStream, stdout: ReadableStream, stderr: ReadableStream }.
// Returns { input, output, errors }: promises of the three pumps.
export function joinProcess(proc, { hostIn, hostOut, hostErr }) {
  const input = pumpIn(hostIn, proc.stdin);
  const output = pumpOut(proc.stdout, hostOut, { end: true });
  const errors = pumpOut(proc.stderr, hostErr, { end: false });
  return { input, output, errors };
}
