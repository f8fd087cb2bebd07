# SPDX-License-Identifier: MIT
"""The daemon API client (docs/protocol.md, "Daemon API") over its unix socket.

One JSON object per line; a header may carry ``"raw": N`` and then exactly N
bytes follow, which is how file content and command output travel here (no
base64, no JSON escaping). A :class:`Sandbox` keeps a small pool of
connections so that calls from several threads run at the same time.
"""

from __future__ import annotations

import base64
import json
import os
import socket as _socket
import stat
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import ErrorCode

__all__ = [
    "Sandbox",
    "SandboxError",
    "DaemonUnavailable",
    "SandboxInfo",
    "TerminalResult",
    "FileContent",
    "WriteResult",
    "EditResult",
    "ProcessInfo",
    "ProcessOutput",
    "default_socket",
]

#: A header line longer than this ends the connection (the daemon's limit).
MAX_LINE = 1024 * 1024
#: The largest raw payload either side accepts (64 MiB).
MAX_RAW = 64 * 1024 * 1024

Bytes = Union[bytes, bytearray, memoryview]


class SandboxError(Exception):
    """The daemon refused or failed a call.

    ``code`` is the API's error code, an :class:`ErrorCode` (``DENIED``,
    ``CONFIG_INVALID``, ``SANDBOX_UNAVAILABLE``, ``EDIT_NOT_FOUND``, ... as
    listed in docs/protocol.md, "Error codes"; a code this client does not
    know, from a newer daemon, stays the string it sent); ``message`` says
    why and what to do; ``reply`` is the whole reply, with its ``sandbox``
    status.
    """

    def __init__(self, code: str, message: str, reply: Optional[Dict[str, Any]] = None) -> None:
        try:
            code = ErrorCode(code)
        except ValueError:
            pass
        super().__init__("%s: %s" % (code, message))
        self.code: str = code
        self.message = message
        self.reply: Dict[str, Any] = reply or {}


class DaemonUnavailable(SandboxError, ConnectionError):
    """The daemon's socket could not be reached, or the connection broke.

    ``code`` is ``ErrorCode.DAEMON_UNAVAILABLE``. A call that was sent before the
    connection broke may or may not have run.
    """

    def __init__(self, message: str) -> None:
        SandboxError.__init__(self, ErrorCode.DAEMON_UNAVAILABLE, message)


@dataclass(frozen=True)
class SandboxInfo:
    """How a call was served: every result carries one."""

    sandboxed: bool
    backend: Optional[str]
    state: Optional[str]
    layers: List[str] = field(default_factory=list)
    degraded: List[str] = field(default_factory=list)
    generation: Optional[int] = None

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "SandboxInfo":
        s = reply.get("sandbox") or {}
        return cls(sandboxed=bool(reply.get("sandboxed")), backend=s.get("backend"), state=s.get("state"),
                   layers=list(s.get("layers") or []), degraded=list(s.get("degraded") or []),
                   generation=s.get("generation"))


@dataclass(frozen=True)
class TerminalResult:
    """A command's outcome. ``exit_code`` is 128+N when killed by signal N."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    signal: int
    timed_out: bool
    truncated: bool
    duration_us: int
    sandbox: SandboxInfo

    @property
    def ok(self) -> bool:
        """Whether the command exited 0."""
        return self.exit_code == 0

    def text(self, errors: str = "replace") -> str:
        """stdout decoded as UTF-8."""
        return self.stdout.decode("utf-8", errors)


@dataclass(frozen=True)
class FileContent:
    """What file_read returned: ``content`` from ``offset``; ``eof`` when it reaches the end."""

    content: bytes
    size: int
    sha256: str
    offset: int
    eof: bool
    sandbox: SandboxInfo

    def text(self, errors: str = "strict") -> str:
        """The content decoded as UTF-8."""
        return self.content.decode("utf-8", errors)


@dataclass(frozen=True)
class WriteResult:
    """file_write's outcome: the new size and sha256, and whether the file was created."""

    size: int
    sha256: str
    created: bool
    sandbox: SandboxInfo


@dataclass(frozen=True)
class EditResult:
    """file_edit's outcome; ``retries`` counts re-applications after concurrent changes."""

    replacements: int
    size: int
    sha256: str
    retries: int
    sandbox: SandboxInfo


@dataclass(frozen=True)
class ProcessInfo:
    """A background process: ``running``, or ended with ``exit_code`` (128+N
    for signal N). ``ended`` names what ended its jail under it (e.g.
    ``"worker_recycled"``), with ``message``; ``None`` when it ended itself."""

    process: int
    pid: int
    command: Union[str, List[str]]
    running: bool
    exit_code: Optional[int]
    signal: Optional[int]
    timed_out: bool
    ended: Optional[str]
    message: Optional[str]
    runtime_ms: int
    stdout_total: int
    stderr_total: int

    @classmethod
    def from_reply(cls, r: Mapping[str, Any]) -> "ProcessInfo":
        return cls(process=int(r.get("process", 0)), pid=int(r.get("pid", 0)), command=r.get("command", ""),
                   running=bool(r.get("running")), exit_code=r.get("exit_code"), signal=r.get("signal"),
                   timed_out=bool(r.get("timed_out")), ended=r.get("ended"), message=r.get("message"),
                   runtime_ms=int(r.get("runtime_ms", 0)), stdout_total=int(r.get("stdout_total", 0)),
                   stderr_total=int(r.get("stderr_total", 0)))


@dataclass(frozen=True)
class ProcessOutput:
    """What a background process wrote past the offsets asked for. Pass
    ``stdout_offset``/``stderr_offset`` to the next call to read on;
    ``*_dropped`` counts bytes lost to the daemon's ring before these."""

    info: ProcessInfo
    stdout: bytes
    stderr: bytes
    stdout_offset: int
    stderr_offset: int
    stdout_dropped: int
    stderr_dropped: int


def _stream(reply: Mapping[str, Any], key: str) -> bytes:
    if key in reply:
        return str(reply[key]).encode("utf-8")
    return base64.b64decode(reply.get(key + "_base64", ""))


def default_socket() -> str:
    """The socket the daemon listens on by default, as the CLI finds it
    (src/core/launch/paths.c, ``vs_default_socket``).

    ``$VECTORA_SANDBOX_SOCKET``; else, as root, ``/run/vectora-sandbox.sock``;
    else ``$XDG_RUNTIME_DIR/vectora-sandbox.sock`` when that is a directory of
    this user's; else ``/tmp/vectora-sandbox-UID/sock``.
    """
    env = os.environ.get("VECTORA_SANDBOX_SOCKET")
    if env:
        return env
    uid = os.geteuid()
    if uid == 0 and os.path.isdir("/run"):
        return "/run/vectora-sandbox.sock"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if uid != 0 and xdg and xdg.startswith("/"):
        try:
            st = os.stat(xdg)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
            return os.path.join(xdg, "vectora-sandbox.sock")
    return "/tmp/vectora-sandbox-%d/sock" % uid


class _Conn:
    """One connection: one request at a time (the pool gives each thread its own)."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as e:
            self.sock.close()
            raise DaemonUnavailable("cannot reach vectora-sandboxd at %s: %s; start the daemon "
                                    "(vectora-sandboxd, or its systemd socket unit) or pass socket=" %
                                    (path, e.strerror or e)) from e
        self.rfile = self.sock.makefile("rb", buffering=256 * 1024)
        self.next_id = 0

    def close(self) -> None:
        try:
            self.rfile.close()
        finally:
            self.sock.close()

    def call(self, req: Dict[str, Any], raw: Optional[Bytes]) -> Tuple[Dict[str, Any], bytes]:
        self.next_id += 1
        req = dict(req, id=self.next_id)
        if raw is not None:
            if len(raw) > MAX_RAW:
                raise SandboxError(ErrorCode.REQUEST_TOO_LARGE, "%d bytes is over the 64 MiB limit of one call" % len(raw))
            req["raw"] = len(raw)
        line = json.dumps(req, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        if len(line) > MAX_LINE:
            raise SandboxError(ErrorCode.REQUEST_TOO_LARGE, "the request line is over 1 MiB; send bulk data as content")
        try:
            if raw is not None and len(raw) > 0:
                self.sock.sendall(line)
                self.sock.sendall(raw)
            else:
                self.sock.sendall(line)
            while True:
                reply, payload = self._recv()
                if reply.get("id") == self.next_id:
                    return reply, payload
                # Anything else on this connection (an event) is not ours to keep.
        except _socket.timeout as e:
            # The caller closes this connection (Sandbox._call), which the
            # daemon takes as a cancel: the command does not run on.
            raise DaemonUnavailable("no reply within the timeout of %ss: the call was cancelled (a command "
                                    "it ran was killed)" % self.sock.gettimeout()) from e
        except OSError as e:
            raise DaemonUnavailable("the connection to vectora-sandboxd broke: %s" % (e.strerror or e)) from e

    def _recv(self) -> Tuple[Dict[str, Any], bytes]:
        line = self.rfile.readline(MAX_LINE + 2)
        if not line:
            raise DaemonUnavailable("vectora-sandboxd closed the connection")
        if not line.endswith(b"\n"):
            raise DaemonUnavailable("a reply line over 1 MiB: the stream is out of sync")
        reply = json.loads(line)
        n = reply.pop("raw", None)
        if n is None:
            return reply, b""
        if not isinstance(n, int) or n < 0 or n > MAX_RAW:
            raise DaemonUnavailable("a reply with a bad raw length")
        payload = self.rfile.read(n)
        if len(payload) != n:
            raise DaemonUnavailable("vectora-sandboxd closed the connection inside a reply")
        return reply, payload


class Sandbox:
    """A client of ``vectora-sandboxd``.

    ``socket`` is the daemon's socket (default: :func:`default_socket`).
    ``workspace`` is the default workspace directory for calls (default: the
    current directory at each call); every method also takes ``workspace=``.
    ``timeout`` bounds each socket operation in seconds (``None``: no limit;
    a command's own limit is the ``timeout`` of :meth:`terminal`). A call
    that gets no reply in time raises :class:`DaemonUnavailable` and is
    cancelled: its connection is closed, and the daemon then kills the
    command it runs (an interrupted call, ``KeyboardInterrupt``, too).
    ``require_sandbox``: every call (but :meth:`status`) asks the daemon to
    refuse it when the workspace, as resolved, runs unsandboxed (no
    ``vectora.toml``, no ``[sandbox]``, ``enabled = false``): it raises
    :class:`SandboxError` ``sandbox_required`` and nothing ran. Every method
    also takes ``require_sandbox=True`` for that call alone; a call cannot
    lift the client's.

    Thread-safe: each thread's call uses its own connection from a small pool,
    so calls run concurrently in the daemon. Use as a context manager, or call
    :meth:`close`.

    Failures raise :class:`SandboxError` with the API's error code;
    an unreachable daemon raises :class:`DaemonUnavailable`.
    """

    def __init__(self, socket: Optional[str] = None, workspace: Optional[str] = None,
                 timeout: Optional[float] = None, require_sandbox: bool = False) -> None:
        self.socket = socket or default_socket()
        self.workspace = workspace
        self.timeout = timeout
        self.require_sandbox = bool(require_sandbox)
        self._idle: List[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the idle connections; calls in flight finish on theirs."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    # -- plumbing

    def _ws(self, workspace: Optional[str]) -> str:
        return os.path.realpath(workspace or self.workspace or os.getcwd())

    def _call(self, req: Dict[str, Any], raw: Optional[Bytes] = None, check: bool = True,
              require_sandbox: bool = False) -> Tuple[Dict[str, Any], bytes]:
        # The daemon decides, before anything runs: checking the result's
        # "sandboxed" afterwards would be too late for a command.
        if (self.require_sandbox or require_sandbox) and req.get("tool") != "status":
            req = dict(req, require_sandbox=True)
        with self._lock:
            if self._closed:
                raise SandboxError("closed", "this Sandbox was closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = _Conn(self.socket, self.timeout)
        try:
            reply, payload = conn.call(req, raw)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if self._closed or len(self._idle) >= 8:
                conn.close()
            else:
                self._idle.append(conn)
        if check and not reply.get("ok"):
            err = reply.get("error") or {}
            raise SandboxError(str(err.get("code", "error")), str(err.get("message", "failed")), reply)
        return reply, payload

    # -- tools

    def terminal(self, command: Union[str, Sequence[str]], *, workspace: Optional[str] = None,
                 cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 stdin: Optional[Union[str, Bytes]] = None, timeout: Optional[float] = None,
                 max_output: Optional[int] = None, require_sandbox: bool = False) -> TerminalResult:
        """Runs a command in the workspace's jail and returns its outcome.

        ``command`` is a shell command line (run as ``/bin/sh -c``) or an argv
        list. ``cwd`` is relative to the workspace; ``env`` is added to the
        jail's environment; ``stdin`` is given on standard input (else
        ``/dev/null``); ``timeout`` (seconds) kills the whole process group,
        capped by the workspace's limit. A non-zero exit is a result, not an
        exception; a refusal (config invalid, jail unavailable, an unsandboxed
        workspace with ``require_sandbox``) raises.
        """
        req: Dict[str, Any] = {"tool": "terminal", "workspace": self._ws(workspace), "binary": True}
        if isinstance(command, str):
            req["command"] = command
        else:
            req["argv"] = list(command)
        if cwd is not None:
            req["cwd"] = cwd
        if env:
            req["env"] = dict(env)
        if timeout is not None:
            req["timeout_ms"] = max(1, int(timeout * 1000))
        if max_output is not None:
            req["max_output"] = int(max_output)
        raw: Optional[Bytes] = None
        if stdin is not None:
            raw = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        reply, payload = self._call(req, raw, require_sandbox=require_sandbox)
        n_out = int(reply.get("stdout_len", 0))
        n_err = int(reply.get("stderr_len", 0))
        return TerminalResult(exit_code=int(reply.get("exit_code", 0)), stdout=payload[:n_out],
                              stderr=payload[n_out:n_out + n_err], signal=int(reply.get("signal", 0)),
                              timed_out=bool(reply.get("timed_out")), truncated=bool(reply.get("truncated")),
                              duration_us=int(reply.get("duration_us", 0)), sandbox=SandboxInfo.from_reply(reply))

    def file_read(self, path: str, *, workspace: Optional[str] = None, offset: int = 0,
                  limit: Optional[int] = None, require_sandbox: bool = False) -> FileContent:
        """Reads a file through the jail's file tool.

        Without ``limit`` the whole file from ``offset`` is returned (in 64 MiB
        pieces joined here); with it, at most ``limit`` bytes. Masked,
        protected-for-reading and out-of-policy paths raise
        :class:`SandboxError` with code ``denied``.
        """
        ws = self._ws(workspace)
        chunks: List[bytes] = []
        pos, first = offset, None
        while True:
            req: Dict[str, Any] = {"tool": "file_read", "workspace": ws, "path": path, "offset": pos,
                                   "binary": True}
            if limit is not None:
                req["limit"] = max(0, limit - (pos - offset))
            reply, payload = self._call(req, require_sandbox=require_sandbox)
            first = first or reply
            chunks.append(payload)
            pos += len(payload)
            done = reply.get("eof") or limit is not None or not payload
            if done:
                data = b"".join(chunks)
                return FileContent(content=data, size=int(reply.get("size", 0)), sha256=str(reply.get("sha256", "")),
                                   offset=offset, eof=bool(reply.get("eof")), sandbox=SandboxInfo.from_reply(first))

    def file_write(self, path: str, content: Union[str, Bytes], *, workspace: Optional[str] = None,
                   mode: Optional[int] = None, create_parents: bool = False,
                   if_sha256: Optional[str] = None, require_sandbox: bool = False) -> WriteResult:
        """Writes a file atomically (temporary file, fsync, rename).

        ``content`` travels as raw bytes (up to 64 MiB). ``if_sha256`` makes
        the write conditional on the current content's hash (``""``: the file
        must not exist); a mismatch raises with code ``precondition_failed``.
        """
        data = content.encode("utf-8") if isinstance(content, str) else content
        req: Dict[str, Any] = {"tool": "file_write", "workspace": self._ws(workspace), "path": path}
        if mode is not None:
            req["mode"] = int(mode)
        if create_parents:
            req["create_parents"] = True
        if if_sha256 is not None:
            req["if_sha256"] = if_sha256
        reply, _ = self._call(req, data, require_sandbox=require_sandbox)
        return WriteResult(size=int(reply.get("size", 0)), sha256=str(reply.get("sha256", "")),
                           created=bool(reply.get("created")), sandbox=SandboxInfo.from_reply(reply))

    def file_edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
                  workspace: Optional[str] = None, require_sandbox: bool = False) -> EditResult:
        """Replaces exact text in a file, safe against concurrent writers.

        ``old`` must occur exactly once unless ``replace_all``; otherwise
        :class:`SandboxError` with ``edit_not_found`` / ``edit_not_unique``.
        A change made meanwhile by another writer is re-read and the edit
        re-applied (``conflict`` if that keeps failing).
        """
        req = {"tool": "file_edit", "workspace": self._ws(workspace), "path": path, "old_string": old,
               "new_string": new, "replace_all": bool(replace_all)}
        reply, _ = self._call(req, require_sandbox=require_sandbox)
        return EditResult(replacements=int(reply.get("replacements", 0)), size=int(reply.get("size", 0)),
                          sha256=str(reply.get("sha256", "")), retries=int(reply.get("retries", 0)),
                          sandbox=SandboxInfo.from_reply(reply))

    # -- background processes (the daemon keeps them; docs/protocol.md, process_start)

    def process_start(self, command: Union[str, Sequence[str]], *, workspace: Optional[str] = None,
                      cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                      stdin: Optional[Union[str, Bytes]] = None, timeout: Optional[int] = None,
                      require_sandbox: bool = False) -> int:
        """Starts a background process in the workspace's jail; returns its id at once.

        ``command`` is a shell command line or an argv list. It runs under the
        jail's limits without the per-command timeout (``timeout`` seconds, or
        the workspace's ``background_timeout``, bound it) until it exits, is
        signalled, or its jail ends. ``stdin`` is written and then closed;
        without it stdin stays open for :meth:`process_input`.
        """
        req: Dict[str, Any] = {"tool": "process_start", "workspace": self._ws(workspace)}
        if isinstance(command, str):
            req["command"] = command
        else:
            req["argv"] = list(command)
        if cwd is not None:
            req["cwd"] = cwd
        if env:
            req["env"] = dict(env)
        if timeout is not None:
            req["timeout"] = int(timeout)
        raw: Optional[Bytes] = None
        if stdin is not None:
            raw = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        reply, _ = self._call(req, raw, require_sandbox=require_sandbox)
        return int(reply["process"])

    def process_output(self, process: int, *, workspace: Optional[str] = None, stdout_offset: int = 0,
                       stderr_offset: int = 0, wait: Optional[float] = None,
                       require_sandbox: bool = False) -> ProcessOutput:
        """What the process wrote past the offsets (both 0: everything kept).

        ``wait`` (seconds, at most 60): when there is nothing new and it runs,
        wait that long for output or its end.
        """
        req: Dict[str, Any] = {"tool": "process_output", "workspace": self._ws(workspace), "process": int(process),
                               "stdout_offset": int(stdout_offset), "stderr_offset": int(stderr_offset)}
        if wait:
            req["wait_ms"] = min(60000, max(0, int(wait * 1000)))
        reply, _ = self._call(req, require_sandbox=require_sandbox)
        return ProcessOutput(info=ProcessInfo.from_reply(reply), stdout=_stream(reply, "stdout"),
                             stderr=_stream(reply, "stderr"), stdout_offset=int(reply.get("stdout_offset", 0)),
                             stderr_offset=int(reply.get("stderr_offset", 0)),
                             stdout_dropped=int(reply.get("stdout_dropped", 0)),
                             stderr_dropped=int(reply.get("stderr_dropped", 0)))

    def process_input(self, process: int, data: Union[str, Bytes], *, eof: bool = False,
                      workspace: Optional[str] = None, require_sandbox: bool = False) -> None:
        """Writes to the process's stdin (closed afterwards with ``eof``).

        An ended process raises :class:`SandboxError` ``process_ended``.
        """
        raw = data.encode("utf-8") if isinstance(data, str) else data
        req = {"tool": "process_input", "workspace": self._ws(workspace), "process": int(process), "eof": bool(eof)}
        self._call(req, raw, require_sandbox=require_sandbox)

    def process_signal(self, process: int, signal: Union[str, int] = "TERM", *,
                       workspace: Optional[str] = None, require_sandbox: bool = False) -> None:
        """Sends a signal (a name like ``"TERM"``/``"KILL"`` or a number) to the process's group."""
        req = {"tool": "process_signal", "workspace": self._ws(workspace), "process": int(process), "signal": signal}
        self._call(req, require_sandbox=require_sandbox)

    def process_list(self, *, workspace: Optional[str] = None, require_sandbox: bool = False) -> List[ProcessInfo]:
        """The workspace's background processes, oldest first (running, and the last ended ones)."""
        reply, _ = self._call({"tool": "process_list", "workspace": self._ws(workspace)},
                              require_sandbox=require_sandbox)
        return [ProcessInfo.from_reply(p) for p in reply.get("processes", [])]

    def status(self, workspace: Optional[str] = None) -> Dict[str, Any]:
        """The daemon's status: ``daemon`` (pid, counters, ...) and ``workspaces``.

        With ``workspace``, only that one. The shape is docs/protocol.md's
        ``status`` result.
        """
        req: Dict[str, Any] = {"tool": "status"}
        if workspace is not None:
            req["workspace"] = self._ws(workspace)
        reply, _ = self._call(req)
        reply.pop("id", None)
        return reply
