// SPDX-License-Identifier: MIT
// What the daemon's calls return (docs/protocol.md, "Requests and results"),
// typed, and the errors the client raises. The same surface as the Python
// client (clients/python/src/vectora_sandbox/results.py).

/** The daemon API's error codes (docs/protocol.md, "Error codes"), plus the
 * client's own `daemon_unavailable`. */
export const ErrorCode = {
  BAD_REQUEST: "bad_request",
  REQUEST_TOO_LARGE: "request_too_large",
  FORBIDDEN: "forbidden",
  BUSY: "busy",
  UNKNOWN_TOOL: "unknown_tool",
  WORKSPACE_NOT_FOUND: "workspace_not_found",
  CONFIG_INVALID: "config_invalid",
  SANDBOX_REQUIRED: "sandbox_required",
  SANDBOX_UNAVAILABLE: "sandbox_unavailable",
  WORKER_CRASHED: "worker_crashed",
  WORKER_RECYCLED: "worker_recycled",
  CONFLICT: "conflict",
  PROCESS_ENDED: "process_ended",
  DAEMON_REQUIRED: "daemon_required",
  EDIT_NOT_FOUND: "edit_not_found",
  EDIT_NOT_UNIQUE: "edit_not_unique",
  SHUTTING_DOWN: "shutting_down",
  INTERNAL: "internal",
  NETWORK_DENIED: "network_denied",
  INTERRUPTED: "interrupted",
  UNKNOWN_OP: "unknown_op",
  NOT_READY: "not_ready",
  DENIED: "denied",
  NOT_FOUND: "not_found",
  EXISTS: "exists",
  PRECONDITION_FAILED: "precondition_failed",
  TOO_LARGE: "too_large",
  IO: "io",
  CANCELLED: "cancelled",
  PROCESS_LIMIT: "process_limit",
  DAEMON_UNAVAILABLE: "daemon_unavailable",
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** A reply as it came: the JSON header of one line. */
export type Reply = { [key: string]: any };

/** The daemon refused or failed a call: `code` is the API's error code,
 * `message` says why and what to do, `reply` is the whole reply. */
export class SandboxError extends Error {
  readonly code: string;
  readonly reply: Reply;
  constructor(code: string, message: string, reply?: Reply) {
    super(`${code}: ${message}`);
    this.name = "SandboxError";
    this.code = code;
    this.reply = reply ?? {};
  }
}

/** The daemon's socket could not be reached, or the connection broke (a
 * call sent before may or may not have run). */
export class DaemonUnavailable extends SandboxError {
  constructor(message: string) {
    super(ErrorCode.DAEMON_UNAVAILABLE, message);
    this.name = "DaemonUnavailable";
  }
}

/** The client's timeout ran out, or the caller's AbortSignal fired: the
 * call was cancelled in the daemon (the API's `cancel`: a command it ran is
 * killed, whole process group). `confirmed`: the daemon answered the
 * cancel before the client stopped waiting for it. */
export class CallTimeout extends SandboxError {
  readonly confirmed: boolean;
  constructor(message: string, confirmed: boolean) {
    super(ErrorCode.CANCELLED, message);
    this.name = "CallTimeout";
    this.confirmed = confirmed;
  }
}

/** A refusal of the workspace's network proxy while the call ran. */
export interface NetworkDenial {
  host: string;
  port: number;
  reason: string;
  [key: string]: any;
}

/** How a call was served, and what the caller must act on: every result
 * carries one. */
export interface SandboxInfo {
  sandboxed: boolean;
  backend: string | null;
  state: string | null;
  layers: string[];
  degraded: string[];
  generation: number | null;
  /** A loosening of vectora.toml waits for `vectora-sandbox allow`; the call ran under the approved policy. */
  policyPending: string | null;
  /** Files the host runs later that the jail made while the call ran: review them. */
  hostRunFiles: string[];
  /** What the workspace's proxy refused while the call ran. */
  networkDenied: NetworkDenial[];
  /** The daemon's words on the output: network_note, sealed_note, jail_restarted. */
  notes: string[];
}

export function sandboxInfo(reply: Reply): SandboxInfo {
  const s = reply.sandbox ?? {};
  const notes: string[] = [];
  for (const k of ["network_note", "sealed_note"])
    if (typeof reply[k] === "string") notes.push(reply[k]);
  if (reply.jail_restarted)
    notes.push(typeof reply.jail_restarted === "string" ? reply.jail_restarted
      : `the jail was restarted after this call: ${JSON.stringify(reply.jail_restarted)}`);
  return {
    sandboxed: Boolean(reply.sandboxed),
    backend: s.backend ?? null,
    state: s.state ?? null,
    layers: s.layers ?? [],
    degraded: s.degraded ?? [],
    generation: s.generation ?? null,
    policyPending: reply.policy_pending ?? null,
    hostRunFiles: reply.host_run_files ?? [],
    networkDenied: reply.network_denied ?? [],
    notes,
  };
}

/** A command's outcome; `exitCode` is 128+N when killed by signal N. */
export interface TerminalResult {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  signal: number;
  timedOut: boolean;
  cancelled: boolean;
  truncated: boolean;
  stdoutTotal: number;
  stderrTotal: number;
  /** The workspace's limit that held where `timeout` asked for longer. */
  timeoutCappedMs: number | null;
  durationUs: number;
  sandbox: SandboxInfo;
  /** stdout as UTF-8. */
  text(): string;
}

export function terminalResult(reply: Reply, payload: Buffer): TerminalResult {
  const nOut = Number(reply.stdout_len ?? 0), nErr = Number(reply.stderr_len ?? 0);
  const stdout = payload.subarray(0, nOut);
  return {
    exitCode: Number(reply.exit_code ?? 0),
    stdout,
    stderr: payload.subarray(nOut, nOut + nErr),
    signal: Number(reply.signal ?? 0),
    timedOut: Boolean(reply.timed_out),
    cancelled: Boolean(reply.cancelled),
    truncated: Boolean(reply.truncated),
    stdoutTotal: Number(reply.stdout_total ?? nOut),
    stderrTotal: Number(reply.stderr_total ?? nErr),
    timeoutCappedMs: reply.timeout_capped_ms ?? null,
    durationUs: Number(reply.duration_us ?? 0),
    sandbox: sandboxInfo(reply),
    text: () => stdout.toString("utf8"),
  };
}

/** file_read's outcome: `content` from `offset`; `startLine` is the line it starts in. */
export interface FileContent {
  content: Buffer;
  size: number;
  sha256: string;
  offset: number;
  eof: boolean;
  startLine: number | null;
  sandbox: SandboxInfo;
  text(): string;
  /** The content with line numbers (`cat -n` style), from startLine. */
  numbered(): string;
}

export function fileContent(first: Reply, last: Reply, content: Buffer, offset: number): FileContent {
  const startLine: number | null = first.start_line ?? null;
  return {
    content, size: Number(last.size ?? 0), sha256: String(last.sha256 ?? ""), offset, eof: Boolean(last.eof),
    startLine, sandbox: sandboxInfo(first),
    text: () => content.toString("utf8"),
    numbered: () => {
      const lines = content.toString("utf8").split("\n");
      if (lines.length && lines[lines.length - 1] === "") lines.pop();
      return lines.map((l, i) => `${String((startLine ?? 1) + i).padStart(6)}\t${l}\n`).join("");
    },
  };
}

export interface WriteResult { size: number; sha256: string; created: boolean; sandbox: SandboxInfo }
export interface EditResult { replacements: number; size: number; sha256: string; retries: number; sandbox: SandboxInfo }

/** An entry of list_dir (`name`) or glob (`name` is the path below the directory searched). */
export interface DirEntry { name: string; type: "file" | "dir" | "symlink" | "other" | string; size: number | null }
export interface DirListing { entries: DirEntry[]; total: number; truncated: boolean; sandbox: SandboxInfo }
export interface GlobResult {
  paths: DirEntry[]; entriesVisited: number; truncated: boolean; limit: string | null; sandbox: SandboxInfo;
}
/** A line: a match, or (`match` false) a context line around one. */
export interface GrepMatch { path: string; line: number; text: string; match: boolean }
export interface GrepResult {
  matches: GrepMatch[]; matchCount: number; filesMatched: number; filesSearched: number; filesSkipped: number;
  truncated: boolean; limit: string | null; sandbox: SandboxInfo;
}

/** A background process: running, or ended with exitCode. */
export interface ProcessInfo {
  process: number; pid: number; command: string | string[]; running: boolean; exitCode: number | null;
  signal: number | null; timedOut: boolean; ended: string | null; message: string | null; runtimeMs: number;
  stdoutTotal: number; stderrTotal: number;
}

export function processInfo(r: Reply): ProcessInfo {
  return {
    process: Number(r.process ?? 0), pid: Number(r.pid ?? 0), command: r.command ?? "", running: Boolean(r.running),
    exitCode: r.exit_code ?? null, signal: r.signal ?? null, timedOut: Boolean(r.timed_out), ended: r.ended ?? null,
    message: r.message ?? null, runtimeMs: Number(r.runtime_ms ?? 0), stdoutTotal: Number(r.stdout_total ?? 0),
    stderrTotal: Number(r.stderr_total ?? 0),
  };
}

/** What a background process wrote past the offsets asked for. */
export interface ProcessOutput {
  info: ProcessInfo; stdout: Buffer; stderr: Buffer; stdoutOffset: number; stderrOffset: number;
  stdoutDropped: number; stderrDropped: number;
}

function stream(reply: Reply, key: string): Buffer {
  if (typeof reply[key] === "string") return Buffer.from(reply[key], "utf8");
  return Buffer.from(String(reply[key + "_base64"] ?? ""), "base64");
}

export function processOutput(reply: Reply): ProcessOutput {
  return {
    info: processInfo(reply), stdout: stream(reply, "stdout"), stderr: stream(reply, "stderr"),
    stdoutOffset: Number(reply.stdout_offset ?? 0), stderrOffset: Number(reply.stderr_offset ?? 0),
    stdoutDropped: Number(reply.stdout_dropped ?? 0), stderrDropped: Number(reply.stderr_dropped ?? 0),
  };
}
