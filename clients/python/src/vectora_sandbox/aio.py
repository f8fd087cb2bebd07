# SPDX-License-Identifier: MIT
"""The asyncio client: the same tools and results as :class:`Sandbox`, over
one connection that carries many calls at once (the daemon answers each by
its ``id``, in any order).

    from vectora_sandbox.aio import AsyncSandbox

    async with AsyncSandbox(workspace="/home/me/proj") as sb:
        r, s = await asyncio.gather(sb.terminal("make test"), sb.grep("TODO"))

Cancelling a call's task (``task.cancel()``, ``asyncio.wait_for``, a
``timeout=`` on the client) sends the API's ``cancel`` for it: the daemon
kills the command it runs (whole process group) or drops a call not yet
started. Closing the client closes the connection, which cancels every call
still in flight.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _calls
from ._calls import CANCEL_WAIT, MAX_LINE, Bytes, default_socket
from .results import (CallTimeout, DaemonUnavailable, DirListing, EditResult, FileContent, GlobResult, GrepResult,
                      ProcessInfo, ProcessOutput, SandboxError, TerminalResult, WriteResult)

__all__ = ["AsyncSandbox"]


class AsyncSandbox:
    """An asyncio client of ``vectora-sandboxd``: the arguments, methods and
    results of :class:`vectora_sandbox.Sandbox`, each method a coroutine.

    ``timeout`` bounds each call in seconds: past it the call is cancelled
    in the daemon and raises :class:`CallTimeout`. Calls made concurrently
    run concurrently in the daemon.
    """

    def __init__(self, socket: Optional[str] = None, workspace: Optional[str] = None,
                 timeout: Optional[float] = None, require_sandbox: bool = False) -> None:
        self.socket = socket or default_socket()
        self.workspace = workspace
        self.timeout = timeout
        self.require_sandbox = bool(require_sandbox)
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._task: Optional["asyncio.Task[None]"] = None
        self._pending: Dict[int, "asyncio.Future[Tuple[Dict[str, Any], bytes]]"] = {}
        self._next_id = 0
        # Made on first use, inside the caller's event loop.
        self._connect_lock: Optional[asyncio.Lock] = None
        self._write_lock: Optional[asyncio.Lock] = None
        self._closed = False

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the connection: calls still in flight are cancelled in the daemon."""
        self._closed = True
        await self._drop(DaemonUnavailable("the client was closed"))

    # -- plumbing

    def _ws(self, workspace: Optional[str]) -> str:
        return os.path.realpath(workspace or self.workspace or os.getcwd())

    async def _connect(self) -> None:
        if self._connect_lock is None:
            self._connect_lock, self._write_lock = asyncio.Lock(), asyncio.Lock()
        async with self._connect_lock:
            if self._writer is not None:
                return
            try:
                self._reader, self._writer = await asyncio.open_unix_connection(self.socket, limit=MAX_LINE + 2)
            except OSError as e:
                raise DaemonUnavailable(_calls.unreachable(self.socket, e)) from e
            self._task = asyncio.ensure_future(self._read_loop(self._reader))

    async def _drop(self, why: SandboxError) -> None:
        w, self._writer, self._reader = self._writer, None, None
        task, self._task = self._task, None
        pending, self._pending = self._pending, {}
        for f in pending.values():
            if not f.done():
                f.set_exception(why)
        if w is not None:
            w.close()
            try:
                await w.wait_closed()
            except (OSError, AttributeError):
                pass
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as e:
                    line = e.partial
                except asyncio.LimitOverrunError:
                    line = b"x"  # not a whole line: decode_header says the stream is out of sync
                reply, n = _calls.decode_header(line)
                payload = await reader.readexactly(n) if n else b""
                f = self._pending.pop(reply.get("id"), None) if isinstance(reply.get("id"), int) else None
                if f is not None and not f.done():
                    f.set_result((reply, payload))
                # Anything else (a cancel's own answer, an event) is not kept.
        except asyncio.CancelledError:
            raise
        except (SandboxError, OSError, ValueError, asyncio.IncompleteReadError) as e:
            why = e if isinstance(e, SandboxError) else DaemonUnavailable(
                "the connection to vectora-sandboxd broke: %s" % (e,))
            await self._drop(why)

    async def _send(self, line: bytes, raw: Optional[Bytes]) -> None:
        assert self._write_lock is not None
        async with self._write_lock:
            w = self._writer
            if w is None:
                raise DaemonUnavailable("the connection to vectora-sandboxd closed")
            w.write(line)
            if raw is not None and len(raw) > 0:
                w.write(bytes(raw))
            await w.drain()

    async def _cancel(self, rid: int) -> None:
        self._next_id += 1
        try:
            await self._send(_calls.cancel_request(self._next_id, rid), None)
        except (OSError, SandboxError):
            pass  # the connection is gone, which cancels the call as well

    async def _call(self, call: _calls.Request, check: bool = True,
                    require_sandbox: bool = False) -> Tuple[Dict[str, Any], bytes]:
        if self._closed:
            raise SandboxError("closed", "this AsyncSandbox was closed")
        req, raw = call
        req = _calls.with_sandbox(req, self.require_sandbox or require_sandbox)
        await self._connect()
        self._next_id += 1
        rid = self._next_id
        line = _calls.encode(dict(req, id=rid), raw)
        fut: "asyncio.Future[Tuple[Dict[str, Any], bytes]]" = asyncio.get_event_loop().create_future()
        self._pending[rid] = fut
        try:
            await self._send(line, raw)
            reply, payload = await asyncio.wait_for(asyncio.shield(fut), self.timeout)
        except asyncio.TimeoutError:
            await self._cancel(rid)
            try:
                await asyncio.wait_for(asyncio.shield(fut), CANCEL_WAIT)
                confirmed = True
            except (asyncio.TimeoutError, SandboxError):
                confirmed = False
            self._pending.pop(rid, None)
            raise CallTimeout(_calls.timeout_message(self.timeout, confirmed), confirmed) from None
        except asyncio.CancelledError:
            # The caller gave up on this call: the daemon ends it too.
            self._pending.pop(rid, None)
            await asyncio.shield(self._cancel(rid))
            raise
        except OSError as e:
            self._pending.pop(rid, None)
            raise DaemonUnavailable("the connection to vectora-sandboxd broke: %s" % (e.strerror or e)) from e
        return _calls.check(reply, check), payload

    # -- tools (see Sandbox for each one's arguments and result)

    async def terminal(self, command: Union[str, Sequence[str]], *, workspace: Optional[str] = None,
                       cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                       stdin: Optional[Union[str, Bytes]] = None, timeout: Optional[float] = None,
                       max_output: Optional[int] = None, require_sandbox: bool = False) -> TerminalResult:
        reply, payload = await self._call(_calls.terminal(self._ws(workspace), command, cwd, env, stdin, timeout,
                                                          max_output), require_sandbox=require_sandbox)
        return TerminalResult.from_reply(reply, payload)

    async def file_read(self, path: str, *, workspace: Optional[str] = None, offset: int = 0,
                        limit: Optional[int] = None, start_line: Optional[int] = None,
                        max_lines: Optional[int] = None, require_sandbox: bool = False) -> FileContent:
        reader = _calls.FileReader(self._ws(workspace), path, offset, limit, start_line, max_lines)
        while True:
            reply, payload = await self._call(reader.request(), require_sandbox=require_sandbox)
            done = reader.feed(reply, payload)
            if done is not None:
                return done

    async def file_write(self, path: str, content: Union[str, Bytes], *, workspace: Optional[str] = None,
                         mode: Optional[int] = None, create_parents: bool = False,
                         if_sha256: Optional[str] = None, require_sandbox: bool = False) -> WriteResult:
        reply, _ = await self._call(_calls.file_write(self._ws(workspace), path, content, mode, create_parents,
                                                      if_sha256), require_sandbox=require_sandbox)
        return WriteResult.from_reply(reply)

    async def file_edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
                        workspace: Optional[str] = None, require_sandbox: bool = False) -> EditResult:
        reply, _ = await self._call(_calls.file_edit(self._ws(workspace), path, old, new, replace_all),
                                    require_sandbox=require_sandbox)
        return EditResult.from_reply(reply)

    async def list_dir(self, path: Optional[str] = None, *, max_entries: Optional[int] = None,
                       workspace: Optional[str] = None, require_sandbox: bool = False) -> DirListing:
        reply, _ = await self._call(_calls.list_dir(self._ws(workspace), path, max_entries),
                                    require_sandbox=require_sandbox)
        return DirListing.from_reply(reply)

    async def glob(self, pattern: str, *, path: Optional[str] = None, max_results: Optional[int] = None,
                   max_files: Optional[int] = None, timeout: Optional[float] = None,
                   workspace: Optional[str] = None, require_sandbox: bool = False) -> GlobResult:
        reply, _ = await self._call(_calls.glob(self._ws(workspace), pattern, path, max_results, max_files, timeout),
                                    require_sandbox=require_sandbox)
        return GlobResult.from_reply(reply)

    async def grep(self, pattern: str, *, path: Optional[str] = None, glob: Optional[str] = None,
                   ignore_case: Optional[bool] = None, fixed: Optional[bool] = None, context: Optional[int] = None,
                   max_matches: Optional[int] = None, max_files: Optional[int] = None,
                   max_bytes: Optional[int] = None, timeout: Optional[float] = None,
                   workspace: Optional[str] = None, require_sandbox: bool = False) -> GrepResult:
        reply, _ = await self._call(_calls.grep(self._ws(workspace), pattern, path, glob, ignore_case, fixed,
                                                context, max_matches, max_files, max_bytes, timeout),
                                    require_sandbox=require_sandbox)
        return GrepResult.from_reply(reply)

    async def process_start(self, command: Union[str, Sequence[str]], *, workspace: Optional[str] = None,
                            cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                            stdin: Optional[Union[str, Bytes]] = None, timeout: Optional[int] = None,
                            require_sandbox: bool = False) -> int:
        reply, _ = await self._call(_calls.process_start(self._ws(workspace), command, cwd, env, stdin, timeout),
                                    require_sandbox=require_sandbox)
        return int(reply["process"])

    async def process_output(self, process: int, *, workspace: Optional[str] = None, stdout_offset: int = 0,
                             stderr_offset: int = 0, wait: Optional[float] = None,
                             require_sandbox: bool = False) -> ProcessOutput:
        reply, _ = await self._call(_calls.process_output(self._ws(workspace), process, stdout_offset,
                                                          stderr_offset, wait), require_sandbox=require_sandbox)
        return ProcessOutput.from_reply(reply)

    async def process_input(self, process: int, data: Union[str, Bytes], *, eof: bool = False,
                            workspace: Optional[str] = None, require_sandbox: bool = False) -> None:
        await self._call(_calls.process_input(self._ws(workspace), process, data, eof),
                         require_sandbox=require_sandbox)

    async def process_signal(self, process: int, signal: Union[str, int] = "TERM", *,
                             workspace: Optional[str] = None, require_sandbox: bool = False) -> None:
        await self._call(_calls.process_signal(self._ws(workspace), process, signal), require_sandbox=require_sandbox)

    async def process_list(self, *, workspace: Optional[str] = None,
                           require_sandbox: bool = False) -> List[ProcessInfo]:
        reply, _ = await self._call(({"tool": "process_list", "workspace": self._ws(workspace)}, None),
                                    require_sandbox=require_sandbox)
        return [ProcessInfo.from_reply(p) for p in reply.get("processes", [])]

    async def status(self, workspace: Optional[str] = None) -> Dict[str, Any]:
        pages = _calls.StatusPages(None if workspace is None else self._ws(workspace))
        while pages.add((await self._call(pages.request()))[0]):
            pass
        assert pages.result is not None
        return pages.result
