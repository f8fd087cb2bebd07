// Stream joining against a TEST DOUBLE of the SDK's ContainerProcess
// (FakeContainerProcess below): web streams in binary mode, as
// sb.exec(argv, { mode: "binary" }) returns them. No Modal involved.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable, Writable, PassThrough } from "node:stream";
import { createHash, randomBytes } from "node:crypto";
import { joinProcess, pumpIn, pumpOut } from "../lib/join.mjs";

// Test double of modal's ContainerProcess<Uint8Array>: stdin is a
// WritableStream whose sink the test controls; stdout/stderr are
// ReadableStreams the test feeds. `echo` wires stdin to stdout.
class FakeContainerProcess {
  constructor({ echo = false, stdinHighWaterMark = 4, sinkDelay = null } = {}) {
    this.received = [];
    this.stdinClosed = false;
    let outCtl, errCtl;
    this.stdout = new ReadableStream({ start: (c) => { outCtl = c; } }, { highWaterMark: 0 });
    this.stderr = new ReadableStream({ start: (c) => { errCtl = c; } });
    this.outCtl = outCtl;
    this.errCtl = errCtl;
    this.stdin = new WritableStream(
      {
        write: async (chunk) => {
          if (sinkDelay) await sinkDelay();
          this.received.push(Buffer.from(chunk));
          if (echo) outCtl.enqueue(new Uint8Array(chunk));
        },
        close: () => {
          this.stdinClosed = true;
          if (echo) outCtl.close();
          errCtl.close();
        },
      },
      new CountQueuingStrategy({ highWaterMark: stdinHighWaterMark }),
    );
  }
  async wait() { return 0; }
}

function collector() {
  const chunks = [];
  const w = new Writable({ write(c, _e, cb) { chunks.push(Buffer.from(c)); cb(); } });
  w.bytes = () => Buffer.concat(chunks);
  return w;
}

const sha = (b) => createHash("sha256").update(b).digest("hex");

test("every byte value passes both ways unchanged through the test double", async () => {
  const payload = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));
  const proc = new FakeContainerProcess({ echo: true });
  const hostOut = collector(), hostErr = collector();
  const j = joinProcess(proc, { hostIn: Readable.from([payload.subarray(0, 1000), payload.subarray(1000)]), hostOut, hostErr });
  assert.equal(await j.input, 4096);
  assert.equal(await j.output, 4096);
  assert.deepEqual(hostOut.bytes(), payload);
  assert.deepEqual(Buffer.concat(proc.received), payload);
});

test("a 32 MiB payload each way arrives whole and in order", async () => {
  const big = randomBytes(32 << 20);
  const proc = new FakeContainerProcess({ echo: true });
  const chunks = [];
  for (let i = 0; i < big.length; i += 65536) chunks.push(big.subarray(i, i + 65536));
  const hostOut = collector();
  const j = joinProcess(proc, { hostIn: Readable.from(chunks), hostOut, hostErr: collector() });
  await Promise.all([j.input, j.output]);
  assert.equal(sha(hostOut.bytes()), sha(big));
});

test("end of the daemon's input closes the worker's stdin, and the worker's end of output ends ours", async () => {
  const proc = new FakeContainerProcess({ echo: false });
  const hostIn = new PassThrough();
  const hostOut = collector();
  let finished = false;
  hostOut.on("finish", () => { finished = true; });
  const j = joinProcess(proc, { hostIn, hostOut, hostErr: collector() });
  hostIn.write("hello\n");
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(proc.stdinClosed, false);
  hostIn.end();
  await j.input;
  assert.equal(proc.stdinClosed, true, "EOF reached the worker");
  assert.equal(finished, false, "our output stays open until the worker's ends");
  proc.outCtl.enqueue(new Uint8Array(Buffer.from("bye\n")));
  proc.outCtl.close();
  await j.output;
  assert.equal(finished, true);
  assert.equal(hostOut.bytes().toString(), "bye\n");
});

test("worker stderr goes to our stderr, which stays open", async () => {
  const proc = new FakeContainerProcess();
  const hostErr = collector();
  let ended = false;
  hostErr.on("finish", () => { ended = true; });
  const j = joinProcess(proc, { hostIn: Readable.from([]), hostOut: collector(), hostErr });
  proc.errCtl.enqueue(new Uint8Array(Buffer.from("log line\n")));
  await j.input; // closes stdin, which closes the double's stderr
  await j.errors;
  assert.equal(hostErr.bytes().toString(), "log line\n");
  assert.equal(ended, false);
});

test("backpressure: a slow daemon socket stops reads from the worker's stdout", async () => {
  let pulled = 0;
  const chunk = new Uint8Array(16384);
  const total = 1000;
  const src = new ReadableStream(
    { pull(c) { if (pulled >= total) return c.close(); pulled++; c.enqueue(chunk); } },
    { highWaterMark: 0 },
  );
  const pending = [];
  const out = new Writable({ highWaterMark: 65536, write(c, _e, cb) { pending.push(cb); } });
  const done = pumpOut(src, out);
  await new Promise((r) => setTimeout(r, 100));
  // Nothing was consumed: at most the Writable's buffer (64 KiB) plus one chunk was pulled.
  assert.ok(pulled <= 6, `pulled ${pulled} chunks while the consumer was stalled`);
  out._write = (c, _e, cb) => cb();
  pending.splice(0).forEach((cb) => cb());
  assert.equal(await done, total * chunk.byteLength);
});

test("backpressure: a slow Sandbox stdin stops reads from the daemon", async () => {
  let produced = 0;
  const hostIn = new Readable({
    highWaterMark: 16384,
    read() { produced++; this.push(Buffer.alloc(16384)); if (produced >= 1000) this.push(null); },
  });
  let release;
  const gate = new Promise((r) => { release = r; });
  const proc = new FakeContainerProcess({ stdinHighWaterMark: 2, sinkDelay: () => gate });
  const done = pumpIn(hostIn, proc.stdin);
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(produced <= 8, `read ${produced} chunks from the daemon while the Sandbox took none`);
  release();
  assert.equal(await done, 1000 * 16384);
  // Node may coalesce chunks; the bytes must all arrive.
  assert.equal(Buffer.concat(proc.received).length, 1000 * 16384);
});

test("the daemon going away cancels the worker's output instead of buffering it", async () => {
  let cancelled = false;
  const src = new ReadableStream({ pull(c) { c.enqueue(new Uint8Array(65536)); }, cancel() { cancelled = true; } }, { highWaterMark: 0 });
  const out = new Writable({ highWaterMark: 1024, write(_c, _e, _cb) { /* never completes */ } });
  const done = pumpOut(src, out);
  await new Promise((r) => setTimeout(r, 20));
  out.destroy();
  await assert.rejects(done);
  assert.equal(cancelled, true);
});
