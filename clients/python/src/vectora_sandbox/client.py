# SPDX-License-Identifier: MIT
"""The daemon API client (docs/protocol.md, "Daemon API") over its unix socket.

One JSON object per line; a header may carry ``"raw": N`` and then exactly N
bytes follow, which is how file content and command output travel here (no
base64, no JSON escaping). A :class:`Sandbox` keeps a small pool of
connections so that calls from several threads run at the same time. The
asyncio client is :class:`vectora_sandbox.aio.AsyncSandbox`.
"""

from __future__ import annotations

import os
import socket as _socket
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _calls
from ._calls import CANCEL_WAIT, MAX_LINE, MAX_RAW, Bytes, default_socket
from .errors import ErrorCode
from .results import (CallTimeout, DaemonUnavailable, DirListing, EditResult, FileContent, GlobResult, GrepResult,
                      ProcessInfo, ProcessOutput, SandboxError, SandboxInfo, TerminalResult, WriteResult)

__all__ = [
    "Sandbox",
    "SandboxError",
    "DaemonUnavailable",
    "CallTimeout",
    "SandboxInfo",
    "TerminalResult",
    "FileContent",
    "WriteResult",
    "EditResult",
    "DirListing",
    "GlobResult",
    "GrepResult",
    "ProcessInfo",
    "ProcessOutput",
    "default_socket",
    "MAX_LINE",
    "MAX_RAW",
]


class _Conn:
    """One connection: one request at a time (the pool gives each thread its own)."""

    def __init__(self, path: str) -> None:
        self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError as e:
            self.sock.close()
            raise DaemonUnavailable(_calls.unreachable(path, e)) from e
        # Read by hand, not through makefile(): a file object refuses
        # every read after one timed out, and the cancel's answer comes
        # after that.
        self.buf = bytearray()
        self.next_id = 0

    def close(self) -> None:
        self.sock.close()

    def _fill(self) -> None:
        data = self.sock.recv(256 * 1024)
        if not data:
            raise DaemonUnavailable("vectora-sandboxd closed the connection")
        self.buf += data

    def _readline(self) -> bytes:
        start = 0
        while True:
            i = self.buf.find(b"\n", start)
            if i >= 0:
                line = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                return line
            if len(self.buf) > MAX_LINE:
                return bytes(self.buf[:MAX_LINE + 1])  # decode_header: out of sync
            start = len(self.buf)
            self._fill()

    def _read(self, n: int) -> bytes:
        if len(self.buf) >= n:
            out = bytes(self.buf[:n])
            del self.buf[:n]
            return out
        # A payload straight into its own buffer: no growing and shifting
        # of the line buffer for megabytes.
        got = bytearray(n)
        have = len(self.buf)
        got[:have] = self.buf
        self.buf.clear()
        view = memoryview(got)
        while have < n:
            k = self.sock.recv_into(view[have:], n - have)
            if k == 0:
                raise DaemonUnavailable("vectora-sandboxd closed the connection inside a reply")
            have += k
        # The result slices or joins it into bytes: one copy, not two.
        return got  # type: ignore[return-value]

    def call(self, req: Dict[str, Any], raw: Optional[Bytes],
             timeout: Optional[float]) -> Tuple[Dict[str, Any], bytes]:
        self.next_id += 1
        rid = self.next_id
        line = _calls.encode(dict(req, id=rid), raw)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.sock.settimeout(timeout)
            self.sock.sendall(line)
            if raw is not None and len(raw) > 0:
                self.sock.sendall(raw)
            while True:
                if deadline is not None:
                    self.sock.settimeout(max(0.001, deadline - time.monotonic()))
                reply, payload = self._recv()
                if reply.get("id") == rid:
                    return reply, payload
                # Anything else on this connection (an event) is not ours to keep.
        except _socket.timeout as e:
            confirmed = self._cancel(rid)
            raise CallTimeout(_calls.timeout_message(timeout, confirmed), confirmed) from e
        except OSError as e:
            raise DaemonUnavailable("the connection to vectora-sandboxd broke: %s" % (e.strerror or e)) from e

    def _cancel(self, rid: int) -> bool:
        """The API's cancel for rid; True once the daemon answered it (or
        the call itself). The caller closes the connection in any case,
        which cancels too."""
        try:
            self.next_id += 1
            self.sock.settimeout(CANCEL_WAIT)
            self.sock.sendall(_calls.cancel_request(self.next_id, rid))
            while True:
                reply, _ = self._recv()
                if reply.get("id") == rid:
                    return True
        except (OSError, SandboxError, ValueError):
            return False

    def _recv(self) -> Tuple[Dict[str, Any], bytes]:
        reply, n = _calls.decode_header(self._readline())
        return reply, self._read(n) if n else b""


class Sandbox:
    """A client of ``vectora-sandboxd``.

    ``socket`` is the daemon's socket (default: :func:`default_socket`, the
    CLI's rule: as root the system daemon's ``/run/vectora-sandbox.sock``).
    ``workspace`` is the default workspace directory for calls (default: the
    current directory at each call); every method also takes ``workspace=``.
    ``timeout`` bounds each call in seconds (``None``: no limit; a command's
    own limit is the ``timeout`` of :meth:`terminal`). A call that gets no
    reply in time is cancelled in the daemon (the API's ``cancel``, then its
    connection closed: a command it ran is killed, whole process group) and
    raises :class:`CallTimeout`; an interrupted call (``KeyboardInterrupt``)
    closes its connection, which cancels it too.
    ``require_sandbox``: every call (but :meth:`status`) asks the daemon to
    refuse it when the workspace, as resolved, runs unsandboxed (no
    ``vectora.toml``, no ``[sandbox]``, ``enabled = false``): it raises
    :class:`SandboxError` ``sandbox_required`` and nothing ran. Every method
    also takes ``require_sandbox=True`` for that call alone; a call cannot
    lift the client's.

    Every result's ``sandbox`` (:class:`SandboxInfo`) says how it ran and what
    the caller must act on: ``policy_pending``, ``host_run_files``,
    ``network_denied``, ``degraded``, ``notes``.

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

    def _call(self, call: _calls.Request, check: bool = True,
              require_sandbox: bool = False) -> Tuple[Dict[str, Any], bytes]:
        req, raw = call
        req = _calls.with_sandbox(req, self.require_sandbox or require_sandbox)
        with self._lock:
            if self._closed:
                raise SandboxError("closed", "this Sandbox was closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = _Conn(self.socket)
        try:
            reply, payload = conn.call(req, raw, self.timeout)
        except BaseException:
            # Closing cancels whatever the call still runs in the daemon.
            conn.close()
            raise
        with self._lock:
            if self._closed or len(self._idle) >= 8:
                conn.close()
            else:
                self._idle.append(conn)
        return _calls.check(reply, check), payload

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
        capped by the workspace's limit (``timeout_capped_ms`` says so). A
        non-zero exit is a result, not an exception; a refusal (config
        invalid, jail unavailable, an unsandboxed workspace with
        ``require_sandbox``) raises.
        """
        reply, payload = self._call(_calls.terminal(self._ws(workspace), command, cwd, env, stdin, timeout,
                                                    max_output), require_sandbox=require_sandbox)
        return TerminalResult.from_reply(reply, payload)

    def file_read(self, path: str, *, workspace: Optional[str] = None, offset: int = 0,
                  limit: Optional[int] = None, start_line: Optional[int] = None, max_lines: Optional[int] = None,
                  require_sandbox: bool = False) -> FileContent:
        """Reads a file through the jail's file tool.

        Without ``limit`` or ``max_lines`` the whole file from ``offset`` (or
        from line ``start_line``, 1-based) is returned (in 64 MiB pieces joined
        here); with them, at most ``limit`` bytes / ``max_lines`` lines.
        ``FileContent.start_line`` is the line the content starts in;
        ``numbered()`` shows it with line numbers. Masked,
        protected-for-reading and out-of-policy paths raise
        :class:`SandboxError` with code ``denied``.
        """
        reader = _calls.FileReader(self._ws(workspace), path, offset, limit, start_line, max_lines)
        while True:
            reply, payload = self._call(reader.request(), require_sandbox=require_sandbox)
            done = reader.feed(reply, payload)
            if done is not None:
                return done

    def file_write(self, path: str, content: Union[str, Bytes], *, workspace: Optional[str] = None,
                   mode: Optional[int] = None, create_parents: bool = False,
                   if_sha256: Optional[str] = None, require_sandbox: bool = False) -> WriteResult:
        """Writes a file atomically (temporary file, fsync, rename).

        ``content`` travels as raw bytes (up to 64 MiB). ``if_sha256`` makes
        the write conditional on the current content's hash (``""``: the file
        must not exist); a mismatch raises with code ``precondition_failed``.
        """
        reply, _ = self._call(_calls.file_write(self._ws(workspace), path, content, mode, create_parents, if_sha256),
                              require_sandbox=require_sandbox)
        return WriteResult.from_reply(reply)

    def file_edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
                  workspace: Optional[str] = None, require_sandbox: bool = False) -> EditResult:
        """Replaces exact text in a file, safe against concurrent writers.

        ``old`` must occur exactly once unless ``replace_all``; otherwise
        :class:`SandboxError` with ``edit_not_found`` / ``edit_not_unique``.
        A change made meanwhile by another writer is re-read and the edit
        re-applied (``conflict`` if that keeps failing).
        """
        reply, _ = self._call(_calls.file_edit(self._ws(workspace), path, old, new, replace_all),
                              require_sandbox=require_sandbox)
        return EditResult.from_reply(reply)

    def list_dir(self, path: Optional[str] = None, *, max_entries: Optional[int] = None,
                 workspace: Optional[str] = None, require_sandbox: bool = False) -> DirListing:
        """A directory's entries (default: the workspace), masked paths left out."""
        reply, _ = self._call(_calls.list_dir(self._ws(workspace), path, max_entries), require_sandbox=require_sandbox)
        return DirListing.from_reply(reply)

    def glob(self, pattern: str, *, path: Optional[str] = None, max_results: Optional[int] = None,
             max_files: Optional[int] = None, timeout: Optional[float] = None, workspace: Optional[str] = None,
             require_sandbox: bool = False) -> GlobResult:
        """Paths below ``path`` (default: the workspace) matching ``pattern`` (``**/*.py``)."""
        reply, _ = self._call(_calls.glob(self._ws(workspace), pattern, path, max_results, max_files, timeout),
                              require_sandbox=require_sandbox)
        return GlobResult.from_reply(reply)

    def grep(self, pattern: str, *, path: Optional[str] = None, glob: Optional[str] = None,
             ignore_case: Optional[bool] = None, fixed: Optional[bool] = None, context: Optional[int] = None,
             max_matches: Optional[int] = None, max_files: Optional[int] = None, max_bytes: Optional[int] = None,
             timeout: Optional[float] = None, workspace: Optional[str] = None,
             require_sandbox: bool = False) -> GrepResult:
        """Lines matching ``pattern`` (POSIX extended regex, or text with
        ``fixed``) in the files below ``path``, ``context`` lines around."""
        reply, _ = self._call(_calls.grep(self._ws(workspace), pattern, path, glob, ignore_case, fixed, context,
                                          max_matches, max_files, max_bytes, timeout),
                              require_sandbox=require_sandbox)
        return GrepResult.from_reply(reply)

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
        reply, _ = self._call(_calls.process_start(self._ws(workspace), command, cwd, env, stdin, timeout),
                              require_sandbox=require_sandbox)
        return int(reply["process"])

    def process_output(self, process: int, *, workspace: Optional[str] = None, stdout_offset: int = 0,
                       stderr_offset: int = 0, wait: Optional[float] = None,
                       require_sandbox: bool = False) -> ProcessOutput:
        """What the process wrote past the offsets (both 0: everything kept).

        ``wait`` (seconds, at most 60): when there is nothing new and it runs,
        wait that long for output or its end.
        """
        reply, _ = self._call(_calls.process_output(self._ws(workspace), process, stdout_offset, stderr_offset, wait),
                              require_sandbox=require_sandbox)
        return ProcessOutput.from_reply(reply)

    def process_input(self, process: int, data: Union[str, Bytes], *, eof: bool = False,
                      workspace: Optional[str] = None, require_sandbox: bool = False) -> None:
        """Writes to the process's stdin (closed afterwards with ``eof``).

        An ended process raises :class:`SandboxError` ``process_ended``.
        """
        self._call(_calls.process_input(self._ws(workspace), process, data, eof), require_sandbox=require_sandbox)

    def process_signal(self, process: int, signal: Union[str, int] = "TERM", *,
                       workspace: Optional[str] = None, require_sandbox: bool = False) -> None:
        """Sends a signal (a name like ``"TERM"``/``"KILL"`` or a number) to the process's group."""
        self._call(_calls.process_signal(self._ws(workspace), process, signal), require_sandbox=require_sandbox)

    def process_list(self, *, workspace: Optional[str] = None, require_sandbox: bool = False) -> List[ProcessInfo]:
        """The workspace's background processes, oldest first (running, and the last ended ones)."""
        reply, _ = self._call(({"tool": "process_list", "workspace": self._ws(workspace)}, None),
                              require_sandbox=require_sandbox)
        return [ProcessInfo.from_reply(p) for p in reply.get("processes", [])]

    def status(self, workspace: Optional[str] = None) -> Dict[str, Any]:
        """The daemon's status: ``daemon`` (pid, counters, ...), ``summary``
        and ``workspaces`` (every one: the daemon's pages, fetched in turn).

        With ``workspace``, only that one. The shape is docs/protocol.md's
        ``status`` result, without its paging fields.
        """
        pages = _calls.StatusPages(None if workspace is None else self._ws(workspace))
        while pages.add(self._call(pages.request())[0]):
            pass
        assert pages.result is not None
        return pages.result
