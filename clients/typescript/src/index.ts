// SPDX-License-Identifier: MIT
// A client of vectora-sandboxd (docs/protocol.md, "Daemon API") for Node.js:
// JSON lines over the daemon's unix socket, one connection carrying many
// calls at once (each answered by its id, in any order), file content and
// command output as raw bytes after the JSON header. No runtime
// dependencies. The same surface as the Python client (clients/python).

import * as fs from "fs";
import * as net from "net";
import * as path from "path";

import {
  CallTimeout, DaemonUnavailable, DirListing, EditResult, ErrorCode, FileContent, GlobResult, GrepResult, ProcessInfo,
  ProcessOutput, Reply, SandboxError, TerminalResult, WriteResult, fileContent, processInfo, processOutput,
  sandboxInfo, terminalResult,
} from "./results";

export * from "./results";

/** A header line longer than this ends the connection (the daemon's limit). */
export const MAX_LINE = 1024 * 1024;
/** The largest raw payload either side accepts (64 MiB). */
export const MAX_RAW = 64 * 1024 * 1024;
/** How long a cancelled call waits for the daemon's answer to its cancel. */
const CANCEL_WAIT_MS = 5000;

/** The socket the daemon listens on by default, as the CLI finds it
 * (src/core/launch/paths.c): $VECTORA_SANDBOX_SOCKET; else, as root,
 * /run/vectora-sandbox.sock; else $XDG_RUNTIME_DIR/vectora-sandbox.sock when
 * that is a directory of this user's; else, with $XDG_RUNTIME_DIR unset or
 * empty, /run/user/UID/vectora-sandbox.sock when that directory is this
 * user's and writable by no one else; else /tmp/vectora-sandbox-UID/sock. */
export function defaultSocket(): string {
  const env = process.env.VECTORA_SANDBOX_SOCKET;
  if (env) return env;
  const uid = process.geteuid ? process.geteuid() : -1;
  const isDir = (p: string) => { try { return fs.statSync(p); } catch { return null; } };
  const run = isDir("/run");
  if (uid === 0 && run && run.isDirectory()) return "/run/vectora-sandbox.sock";
  const xdg = process.env.XDG_RUNTIME_DIR;
  if (uid !== 0 && xdg && xdg.startsWith("/")) {
    const st = isDir(xdg);
    if (st && st.isDirectory() && st.uid === uid) return path.join(xdg, "vectora-sandbox.sock");
  }
  if (uid !== 0 && !xdg) {
    const runUser = `/run/user/${uid}`;
    let st: fs.Stats | null = null;
    try { st = fs.lstatSync(runUser); } catch { st = null; }
    if (st && st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0) return path.join(runUser, "vectora-sandbox.sock");
  }
  return `/tmp/vectora-sandbox-${uid}/sock`;
}

export interface SandboxOptions {
  /** The daemon's socket (default: defaultSocket()). */
  socket?: string;
  /** The default workspace directory (default: the current directory at each call). */
  workspace?: string;
  /** Bounds each call in milliseconds: past it the call is cancelled in the daemon and rejects with CallTimeout. */
  timeoutMs?: number;
  /** Every call (but status) is refused with sandbox_required when the workspace would run unsandboxed. */
  requireSandbox?: boolean;
}

/** What every call takes. */
export interface CallOptions {
  workspace?: string;
  requireSandbox?: boolean;
  /** Aborting cancels the call in the daemon (a command it runs is killed); it rejects with CallTimeout. */
  signal?: AbortSignal;
}

export interface TerminalOptions extends CallOptions {
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  /** Seconds before the command's whole process group is killed (capped by the workspace's limit). */
  timeout?: number;
  maxOutput?: number;
}

type Pending = { resolve: (r: [Reply, Buffer]) => void; reject: (e: Error) => void };

/** One connection to the daemon, many calls in flight. */
class Connection {
  private sock: net.Socket;
  private buf: Buffer = Buffer.alloc(0);
  private header: Reply | null = null;
  private want = 0;
  readonly pending = new Map<number, Pending>();
  closed = false;
  ready: Promise<void>;

  constructor(socketPath: string, private onGone: (c: Connection) => void) {
    this.sock = net.createConnection({ path: socketPath });
    this.ready = new Promise((resolve, reject) => {
      this.sock.once("connect", () => resolve());
      this.sock.once("error", (e: NodeJS.ErrnoException) => reject(new DaemonUnavailable(
        `cannot reach vectora-sandboxd at ${socketPath}: ${e.code ?? e.message}; start the daemon ` +
        "(vectora-sandboxd, or its systemd socket unit) or pass socket")));
    });
    this.ready.catch(() => undefined);
    this.sock.on("data", (d: Buffer) => this.feed(d));
    this.sock.on("error", () => undefined);
    this.sock.on("close", () => this.gone(new DaemonUnavailable("vectora-sandboxd closed the connection")));
  }

  private gone(why: Error): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) p.reject(why);
    this.pending.clear();
    this.sock.destroy();
    this.onGone(this);
  }

  close(): void {
    this.gone(new DaemonUnavailable("the client was closed"));
  }

  private feed(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    for (;;) {
      if (this.header === null) {
        const nl = this.buf.indexOf(0x0a);
        if (nl < 0) {
          if (this.buf.length > MAX_LINE) this.gone(new DaemonUnavailable("a reply line over 1 MiB: the stream is out of sync"));
          return;
        }
        let reply: Reply;
        try {
          reply = JSON.parse(this.buf.subarray(0, nl).toString("utf8"));
        } catch {
          this.gone(new DaemonUnavailable("a reply that is not JSON: the stream is out of sync"));
          return;
        }
        this.buf = this.buf.subarray(nl + 1);
        const n = reply.raw;
        delete reply.raw;
        if (n !== undefined && (!Number.isInteger(n) || n < 0 || n > MAX_RAW)) {
          this.gone(new DaemonUnavailable("a reply with a bad raw length"));
          return;
        }
        this.header = reply;
        this.want = n ?? 0;
      }
      if (this.buf.length < this.want) return;
      const payload = Buffer.from(this.buf.subarray(0, this.want));
      this.buf = this.buf.subarray(this.want);
      const reply = this.header;
      this.header = null;
      const p = typeof reply.id === "number" ? this.pending.get(reply.id) : undefined;
      if (p) {
        this.pending.delete(reply.id);
        this.idle();
        p.resolve([reply, payload]);
      }
      // Anything else (a cancel's own answer, an event) is not kept.
    }
  }

  /** An idle connection does not keep the process alive (a script ends
   * without close()); one with calls in flight does. */
  idle(): void {
    if (this.pending.size === 0) this.sock.unref();
  }

  send(req: Reply, raw: Uint8Array | null): void {
    const line = Buffer.from(JSON.stringify(req) + "\n", "utf8");
    if (line.length > MAX_LINE)
      throw new SandboxError(ErrorCode.REQUEST_TOO_LARGE, "the request line is over 1 MiB; send bulk data as content");
    this.sock.ref();
    // One write: the line and its payload are never split by another call's.
    this.sock.write(raw && raw.length ? Buffer.concat([line, raw]) : line);
  }
}

/** A client of vectora-sandboxd. Results say how each call ran (`sandbox`)
 * and what the caller must act on (policyPending, hostRunFiles,
 * networkDenied, degraded, notes). Close it when done. */
export class Sandbox {
  readonly socket: string;
  workspace?: string;
  timeoutMs?: number;
  requireSandbox: boolean;
  private conn: Connection | null = null;
  private nextId = 0;
  private closed = false;

  constructor(opts: SandboxOptions = {}) {
    this.socket = opts.socket ?? defaultSocket();
    this.workspace = opts.workspace;
    this.timeoutMs = opts.timeoutMs;
    this.requireSandbox = Boolean(opts.requireSandbox);
  }

  /** Closes the connection: calls still in flight are cancelled in the daemon. */
  close(): void {
    this.closed = true;
    this.conn?.close();
    this.conn = null;
  }

  private ws(workspace?: string): string {
    const w = workspace ?? this.workspace ?? process.cwd();
    try { return fs.realpathSync(w); } catch { return path.resolve(w); }
  }

  private async connection(): Promise<Connection> {
    if (this.closed) throw new SandboxError("closed", "this Sandbox was closed");
    if (!this.conn || this.conn.closed)
      this.conn = new Connection(this.socket, (c) => { if (this.conn === c) this.conn = null; });
    const c = this.conn;
    await c.ready;
    return c;
  }

  /** One call: its reply and raw payload; rejects on a refusal (SandboxError). */
  private async call(req: Reply, raw: Uint8Array | null, o: CallOptions = {}, check = true): Promise<[Reply, Buffer]> {
    if ((this.requireSandbox || o.requireSandbox) && req.tool !== "status") req.require_sandbox = true;
    if (raw && raw.length > MAX_RAW)
      throw new SandboxError(ErrorCode.REQUEST_TOO_LARGE, `${raw.length} bytes is over the 64 MiB limit of one call`);
    if (raw) req.raw = raw.length;
    if (o.signal?.aborted) throw new CallTimeout("the call was aborted before it was sent", false);
    const c = await this.connection();
    const id = ++this.nextId;
    req.id = id;
    const done = new Promise<[Reply, Buffer]>((resolve, reject) => c.pending.set(id, { resolve, reject }));
    try {
      c.send(req, raw);
    } catch (e) {
      c.pending.delete(id);
      c.idle();
      throw e;
    }
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<string>((resolve) => {
      if (this.timeoutMs !== undefined)
        timer = setTimeout(() => resolve(`no reply within the client's timeout of ${this.timeoutMs} ms`), this.timeoutMs);
      if (o.signal) {
        onAbort = () => resolve("the caller aborted the call");
        o.signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    try {
      const first = await Promise.race([done.then((r) => ({ r })), stop.then((why) => ({ why }))]);
      if ("r" in first) return this.checked(first.r, check);
      // Cancel in the daemon, and wait a little for its word that it did.
      c.send({ id: ++this.nextId, tool: "cancel", target: id }, null);
      const confirmed = await Promise.race([
        done.then(() => true, () => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), CANCEL_WAIT_MS).unref()),
      ]);
      c.pending.delete(id);
      c.idle();
      throw new CallTimeout(`${first.why}: the call was cancelled` +
        (confirmed ? " (the daemon confirmed: a command it ran was killed)" : ""), confirmed);
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort) o.signal?.removeEventListener("abort", onAbort);
    }
  }

  private checked(r: [Reply, Buffer], check: boolean): [Reply, Buffer] {
    const [reply] = r;
    if (check && !reply.ok) {
      const e = reply.error ?? {};
      throw new SandboxError(String(e.code ?? "error"), String(e.message ?? "failed"), reply);
    }
    return r;
  }

  private static raw(d: string | Uint8Array | undefined): Uint8Array | null {
    if (d === undefined) return null;
    return typeof d === "string" ? Buffer.from(d, "utf8") : d;
  }

  private static opt(req: Reply, fields: Reply): Reply {
    for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null) req[k] = v;
    return req;
  }

  /** Runs a command (a shell line, or an argv) in the workspace's jail. A
   * non-zero exit is a result, not an error. */
  async terminal(command: string | string[], o: TerminalOptions = {}): Promise<TerminalResult> {
    const req: Reply = { tool: "terminal", workspace: this.ws(o.workspace), binary: true };
    if (typeof command === "string") req.command = command; else req.argv = [...command];
    Sandbox.opt(req, {
      cwd: o.cwd, env: o.env, max_output: o.maxOutput,
      timeout_ms: o.timeout === undefined ? undefined : Math.max(1, Math.round(o.timeout * 1000)),
    });
    const [reply, payload] = await this.call(req, Sandbox.raw(o.stdin), o);
    return terminalResult(reply, payload);
  }

  /** Reads a file: the whole of it from `offset` (or line `startLine`), or
   * a window (`limit` bytes, `maxLines` lines). */
  async fileRead(file: string, o: CallOptions & { offset?: number; limit?: number; startLine?: number; maxLines?: number } = {}):
    Promise<FileContent> {
    const ws = this.ws(o.workspace);
    const chunks: Buffer[] = [];
    let first: Reply | null = null, offset = o.offset ?? 0, pos = offset;
    for (;;) {
      const req: Reply = { tool: "file_read", workspace: ws, path: file, binary: true };
      if (first === null && o.startLine !== undefined) req.start_line = o.startLine; else req.offset = pos;
      if (o.limit !== undefined) req.limit = Math.max(0, o.limit - (pos - offset));
      if (o.maxLines !== undefined) req.max_lines = o.maxLines;
      const [reply, payload] = await this.call(req, null, o);
      if (first === null) {
        first = reply;
        offset = pos = Number(reply.offset ?? pos);
      }
      chunks.push(payload);
      pos += payload.length;
      if (reply.eof || o.limit !== undefined || o.maxLines !== undefined || payload.length === 0)
        return fileContent(first, reply, Buffer.concat(chunks), offset);
    }
  }

  /** Writes a file atomically; `ifSha256` makes it conditional ("": must not exist). */
  async fileWrite(file: string, content: string | Uint8Array,
    o: CallOptions & { mode?: number; createParents?: boolean; ifSha256?: string } = {}): Promise<WriteResult> {
    const req = Sandbox.opt({ tool: "file_write", workspace: this.ws(o.workspace), path: file },
      { mode: o.mode, create_parents: o.createParents || undefined, if_sha256: o.ifSha256 });
    const [reply] = await this.call(req, Sandbox.raw(content) ?? Buffer.alloc(0), o);
    return { size: Number(reply.size ?? 0), sha256: String(reply.sha256 ?? ""), created: Boolean(reply.created),
      sandbox: sandboxInfo(reply) };
  }

  /** Replaces exact text, lost-update safe; `old` must be unique unless `replaceAll`. */
  async fileEdit(file: string, oldText: string, newText: string, o: CallOptions & { replaceAll?: boolean } = {}):
    Promise<EditResult> {
    const [reply] = await this.call({ tool: "file_edit", workspace: this.ws(o.workspace), path: file,
      old_string: oldText, new_string: newText, replace_all: Boolean(o.replaceAll) }, null, o);
    return { replacements: Number(reply.replacements ?? 0), size: Number(reply.size ?? 0),
      sha256: String(reply.sha256 ?? ""), retries: Number(reply.retries ?? 0), sandbox: sandboxInfo(reply) };
  }

  /** A directory's entries (default: the workspace), masked paths left out. */
  async listDir(dir?: string, o: CallOptions & { maxEntries?: number } = {}): Promise<DirListing> {
    const [reply] = await this.call(Sandbox.opt({ tool: "list_dir", workspace: this.ws(o.workspace) },
      { path: dir, max_entries: o.maxEntries }), null, o);
    return { entries: (reply.entries ?? []).map((e: Reply) => ({ name: e.name, type: e.type, size: e.size ?? null })),
      total: Number(reply.total ?? 0), truncated: Boolean(reply.truncated), sandbox: sandboxInfo(reply) };
  }

  /** Paths below `path` (default: the workspace) matching `pattern` ("**\/*.ts"). */
  async glob(pattern: string, o: CallOptions & { path?: string; maxResults?: number; maxFiles?: number; timeout?: number } = {}):
    Promise<GlobResult> {
    const [reply] = await this.call(Sandbox.opt({ tool: "glob", workspace: this.ws(o.workspace), pattern },
      { path: o.path, max_results: o.maxResults, max_files: o.maxFiles,
        timeout_ms: o.timeout === undefined ? undefined : Math.max(1, Math.round(o.timeout * 1000)) }), null, o);
    return { paths: (reply.paths ?? []).map((e: Reply) => ({ name: e.path, type: e.type, size: e.size ?? null })),
      entriesVisited: Number(reply.entries_visited ?? 0), truncated: Boolean(reply.truncated),
      limit: reply.limit ?? null, sandbox: sandboxInfo(reply) };
  }

  /** Lines matching `pattern` (POSIX extended regex, or text with `fixed`), `context` lines around. */
  async grep(pattern: string, o: CallOptions & { path?: string; glob?: string; ignoreCase?: boolean; fixed?: boolean;
    context?: number; maxMatches?: number; maxFiles?: number; maxBytes?: number; timeout?: number } = {}): Promise<GrepResult> {
    const [reply] = await this.call(Sandbox.opt({ tool: "grep", workspace: this.ws(o.workspace), pattern }, {
      path: o.path, glob: o.glob, ignore_case: o.ignoreCase, fixed: o.fixed, context: o.context,
      max_matches: o.maxMatches, max_files: o.maxFiles, max_bytes: o.maxBytes,
      timeout_ms: o.timeout === undefined ? undefined : Math.max(1, Math.round(o.timeout * 1000)),
    }), null, o);
    return {
      matches: (reply.matches ?? []).map((m: Reply) => ({ path: m.path, line: Number(m.line), text: m.text,
        match: m.match !== false })),
      matchCount: Number(reply.match_count ?? 0), filesMatched: Number(reply.files_matched ?? 0),
      filesSearched: Number(reply.files_searched ?? 0), filesSkipped: Number(reply.files_skipped ?? 0),
      truncated: Boolean(reply.truncated), limit: reply.limit ?? null, sandbox: sandboxInfo(reply),
    };
  }

  /** Starts a background process in the workspace's jail; its id at once. */
  async processStart(command: string | string[], o: CallOptions & { cwd?: string; env?: Record<string, string>;
    stdin?: string | Uint8Array; timeout?: number } = {}): Promise<number> {
    const req: Reply = { tool: "process_start", workspace: this.ws(o.workspace) };
    if (typeof command === "string") req.command = command; else req.argv = [...command];
    Sandbox.opt(req, { cwd: o.cwd, env: o.env, timeout: o.timeout });
    const [reply] = await this.call(req, Sandbox.raw(o.stdin), o);
    return Number(reply.process);
  }

  /** What the process wrote past the offsets; `wait` seconds (at most 60) for more. */
  async processOutput(proc: number, o: CallOptions & { stdoutOffset?: number; stderrOffset?: number; wait?: number } = {}):
    Promise<ProcessOutput> {
    const [reply] = await this.call(Sandbox.opt({ tool: "process_output", workspace: this.ws(o.workspace), process: proc,
      stdout_offset: o.stdoutOffset ?? 0, stderr_offset: o.stderrOffset ?? 0 },
    { wait_ms: o.wait ? Math.min(60000, Math.round(o.wait * 1000)) : undefined }), null, o);
    return processOutput(reply);
  }

  async processInput(proc: number, data: string | Uint8Array, o: CallOptions & { eof?: boolean } = {}): Promise<void> {
    await this.call({ tool: "process_input", workspace: this.ws(o.workspace), process: proc, eof: Boolean(o.eof) },
      Sandbox.raw(data), o);
  }

  async processSignal(proc: number, signal: string | number = "TERM", o: CallOptions = {}): Promise<void> {
    await this.call({ tool: "process_signal", workspace: this.ws(o.workspace), process: proc, signal }, null, o);
  }

  async processList(o: CallOptions = {}): Promise<ProcessInfo[]> {
    const [reply] = await this.call({ tool: "process_list", workspace: this.ws(o.workspace) }, null, o);
    return (reply.processes ?? []).map(processInfo);
  }

  /**
   * The daemon's status (docs/protocol.md, "status"): `daemon`, `summary`
   * and every workspace (the daemon answers pages of them, sorted by path;
   * each is fetched in turn), without the paging fields. With `workspace`,
   * only that one.
   */
  async status(workspace?: string): Promise<Reply> {
    const ws = workspace === undefined ? undefined : this.ws(workspace);
    let result: Reply | undefined;
    let after: string | undefined;
    for (let page = 0; ; page++) {
      const [reply] = await this.call(Sandbox.opt({ tool: "status" }, { workspace: ws, after }), null);
      const next = reply.next_after;
      for (const k of ["id", "next_after", "next_offset", "offset"]) delete reply[k];
      if (result === undefined) result = reply;
      else result.workspaces.push(...(reply.workspaces ?? []));
      // Each page starts past the last: a cursor that does not move would
      // never end (JavaScript orders strings by UTF-16 units, the daemon
      // by bytes, so only "the same again" is looked at, and the count).
      if (typeof next !== "string" || next === after || page > 1_000_000) return result;
      after = next;
    }
  }
}
