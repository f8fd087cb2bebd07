# SPDX-License-Identifier: MIT
"""The requests each tool sends and how its reply becomes a result: pure
functions shared by the blocking client (client.py) and the asyncio one
(aio.py), so both send the same fields and read the same results."""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import ErrorCode
from .results import FileContent, SandboxError, SandboxInfo

#: A header line longer than this ends the connection (the daemon's limit).
MAX_LINE = 1024 * 1024
#: The largest raw payload either side accepts (64 MiB).
MAX_RAW = 64 * 1024 * 1024
#: How long a client waits for the daemon's answer to its cancel.
CANCEL_WAIT = 5.0

Bytes = Union[bytes, bytearray, memoryview]
Request = Tuple[Dict[str, Any], Optional[Bytes]]


def default_socket() -> str:
    """The socket the daemon listens on by default, as the CLI finds it
    (src/core/launch/paths.c, ``vs_default_socket``).

    ``$VECTORA_SANDBOX_SOCKET``; else, as root, ``/run/vectora-sandbox.sock``;
    else ``$XDG_RUNTIME_DIR/vectora-sandbox.sock`` when that is a directory of
    this user's; else, with ``$XDG_RUNTIME_DIR`` unset or empty,
    ``/run/user/UID/vectora-sandbox.sock`` when that directory is this user's
    and writable by no one else (what a login makes); else
    ``/tmp/vectora-sandbox-UID/sock``.
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
    if uid != 0 and not xdg:
        run_user = "/run/user/%d" % uid
        try:
            st = os.lstat(run_user)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o022:
            return os.path.join(run_user, "vectora-sandbox.sock")
    return "/tmp/vectora-sandbox-%d/sock" % uid


def unreachable(path: str, e: OSError) -> str:
    return ("cannot reach vectora-sandboxd at %s: %s; start the daemon (vectora-sandboxd, or its systemd "
            "socket unit) or pass socket=" % (path, e.strerror or e))


def encode(req: Dict[str, Any], raw: Optional[Bytes]) -> bytes:
    """The request line (and its raw payload's length in it)."""
    if raw is not None:
        if len(raw) > MAX_RAW:
            raise SandboxError(ErrorCode.REQUEST_TOO_LARGE, "%d bytes is over the 64 MiB limit of one call" % len(raw))
        req = dict(req, raw=len(raw))
    line = json.dumps(req, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
    if len(line) > MAX_LINE:
        raise SandboxError(ErrorCode.REQUEST_TOO_LARGE, "the request line is over 1 MiB; send bulk data as content")
    return line


def decode_header(line: bytes) -> Tuple[Dict[str, Any], int]:
    """A reply line: the object and the raw payload's length that follows (0: none)."""
    from .results import DaemonUnavailable
    if not line:
        raise DaemonUnavailable("vectora-sandboxd closed the connection")
    if not line.endswith(b"\n"):
        raise DaemonUnavailable("a reply line over 1 MiB: the stream is out of sync")
    reply = json.loads(line)
    n = reply.pop("raw", None)
    if n is None:
        return reply, 0
    if not isinstance(n, int) or n < 0 or n > MAX_RAW:
        raise DaemonUnavailable("a reply with a bad raw length")
    return reply, n


def cancel_request(cid: Union[int, str], target: Union[int, str]) -> bytes:
    return encode({"id": cid, "tool": "cancel", "target": target}, None)


def timeout_message(timeout: Optional[float], confirmed: bool) -> str:
    return ("no reply within the client's timeout of %ss: the call was cancelled%s" %
            (timeout, " (the daemon confirmed: a command it ran was killed)" if confirmed else
             " (its connection closed, which cancels it in the daemon)"))


def check(reply: Dict[str, Any], require: bool = True) -> Dict[str, Any]:
    if require and not reply.get("ok"):
        err = reply.get("error") or {}
        raise SandboxError(str(err.get("code", "error")), str(err.get("message", "failed")), reply)
    return reply


def with_sandbox(req: Dict[str, Any], require_sandbox: bool) -> Dict[str, Any]:
    # The daemon decides, before anything runs: checking the result's
    # "sandboxed" afterwards would be too late for a command.
    if require_sandbox and req.get("tool") != "status":
        return dict(req, require_sandbox=True)
    return req


def _raw(data: Optional[Union[str, Bytes]]) -> Optional[Bytes]:
    if data is None:
        return None
    return data.encode("utf-8") if isinstance(data, str) else data


def _command(req: Dict[str, Any], command: Union[str, Sequence[str]]) -> None:
    if isinstance(command, str):
        req["command"] = command
    else:
        req["argv"] = list(command)


def terminal(ws: str, command: Union[str, Sequence[str]], cwd: Optional[str], env: Optional[Mapping[str, str]],
             stdin: Optional[Union[str, Bytes]], timeout: Optional[float], max_output: Optional[int]) -> Request:
    req: Dict[str, Any] = {"tool": "terminal", "workspace": ws, "binary": True}
    _command(req, command)
    if cwd is not None:
        req["cwd"] = cwd
    if env:
        req["env"] = dict(env)
    if timeout is not None:
        req["timeout_ms"] = max(1, int(timeout * 1000))
    if max_output is not None:
        req["max_output"] = int(max_output)
    return req, _raw(stdin)


def file_write(ws: str, path: str, content: Union[str, Bytes], mode: Optional[int], create_parents: bool,
               if_sha256: Optional[str]) -> Request:
    req: Dict[str, Any] = {"tool": "file_write", "workspace": ws, "path": path}
    if mode is not None:
        req["mode"] = int(mode)
    if create_parents:
        req["create_parents"] = True
    if if_sha256 is not None:
        req["if_sha256"] = if_sha256
    return req, _raw(content)


def file_edit(ws: str, path: str, old: str, new: str, replace_all: bool) -> Request:
    return {"tool": "file_edit", "workspace": ws, "path": path, "old_string": old, "new_string": new,
            "replace_all": bool(replace_all)}, None


def _opt(req: Dict[str, Any], **kw: Any) -> Dict[str, Any]:
    for k, v in kw.items():
        if v is not None:
            req[k] = v
    return req


def list_dir(ws: str, path: Optional[str], max_entries: Optional[int]) -> Request:
    return _opt({"tool": "list_dir", "workspace": ws}, path=path, max_entries=max_entries), None


def glob(ws: str, pattern: str, path: Optional[str], max_results: Optional[int], max_files: Optional[int],
         timeout: Optional[float]) -> Request:
    return _opt({"tool": "glob", "workspace": ws, "pattern": pattern}, path=path, max_results=max_results,
                max_files=max_files, timeout_ms=None if timeout is None else max(1, int(timeout * 1000))), None


def grep(ws: str, pattern: str, path: Optional[str], glob: Optional[str], ignore_case: Optional[bool],
         fixed: Optional[bool], context: Optional[int], max_matches: Optional[int], max_files: Optional[int],
         max_bytes: Optional[int], timeout: Optional[float]) -> Request:
    return _opt({"tool": "grep", "workspace": ws, "pattern": pattern}, path=path, glob=glob,
                ignore_case=ignore_case, fixed=fixed, context=context, max_matches=max_matches,
                max_files=max_files, max_bytes=max_bytes,
                timeout_ms=None if timeout is None else max(1, int(timeout * 1000))), None


def process_start(ws: str, command: Union[str, Sequence[str]], cwd: Optional[str],
                  env: Optional[Mapping[str, str]], stdin: Optional[Union[str, Bytes]],
                  timeout: Optional[int]) -> Request:
    req: Dict[str, Any] = {"tool": "process_start", "workspace": ws}
    _command(req, command)
    _opt(req, cwd=cwd, env=dict(env) if env else None, timeout=None if timeout is None else int(timeout))
    return req, _raw(stdin)


def process_output(ws: str, process: int, stdout_offset: int, stderr_offset: int, wait: Optional[float]) -> Request:
    req: Dict[str, Any] = {"tool": "process_output", "workspace": ws, "process": int(process),
                           "stdout_offset": int(stdout_offset), "stderr_offset": int(stderr_offset)}
    if wait:
        req["wait_ms"] = min(60000, max(0, int(wait * 1000)))
    return req, None


def process_input(ws: str, process: int, data: Union[str, Bytes], eof: bool) -> Request:
    return {"tool": "process_input", "workspace": ws, "process": int(process), "eof": bool(eof)}, _raw(data)


def process_signal(ws: str, process: int, signal: Union[str, int]) -> Request:
    return {"tool": "process_signal", "workspace": ws, "process": int(process), "signal": signal}, None


def status(ws: Optional[str], after: Optional[str] = None) -> Request:
    return _opt({"tool": "status"}, workspace=ws, after=after), None


class StatusPages:
    """status as a sequence of calls: the daemon answers a page of
    workspaces at a time (100, or fewer where one more would not fit a
    line), sorted by path, and ``next_after`` names where the next starts.
    The result is the first page's ``daemon`` and ``summary`` with every
    page's ``workspaces``."""

    def __init__(self, ws: Optional[str]) -> None:
        self.ws = ws
        self.result: Optional[Dict[str, Any]] = None
        self.after: Optional[str] = None

    def request(self) -> Request:
        return status(self.ws, self.after)

    def add(self, reply: Dict[str, Any]) -> bool:
        """Takes one page; True while another is to be asked for."""
        reply.pop("id", None)
        nxt = reply.pop("next_after", None)
        reply.pop("next_offset", None)
        reply.pop("offset", None)
        if self.result is None:
            self.result = reply
        else:
            self.result["workspaces"].extend(reply.get("workspaces", []))
        # Paths only grow from page to page: one that does not is a
        # daemon's fault, and asking again would never end.
        if nxt is None or (self.after is not None and nxt <= self.after):
            return False
        self.after = nxt
        return True


class FileReader:
    """file_read as a sequence of calls: the whole file from ``offset`` in
    64 MiB pieces, or one window (``limit``, ``max_lines``). ``start_line``
    (1-based) starts at that line in place of ``offset``."""

    def __init__(self, ws: str, path: str, offset: int, limit: Optional[int], start_line: Optional[int],
                 max_lines: Optional[int]) -> None:
        self.ws, self.path, self.limit, self.max_lines = ws, path, limit, max_lines
        self.start_line = start_line
        self.offset = offset
        self.pos = offset
        self.chunks: List[bytes] = []
        self.first: Optional[Dict[str, Any]] = None

    def request(self) -> Request:
        req: Dict[str, Any] = {"tool": "file_read", "workspace": self.ws, "path": self.path, "binary": True}
        if self.first is None and self.start_line is not None:
            req["start_line"] = int(self.start_line)
        else:
            req["offset"] = self.pos
        if self.limit is not None:
            req["limit"] = max(0, self.limit - (self.pos - self.offset))
        if self.max_lines is not None:
            req["max_lines"] = int(self.max_lines)
        return req, None

    def feed(self, reply: Dict[str, Any], payload: bytes) -> Optional[FileContent]:
        """The result once the read is complete, else None (send request() again)."""
        if self.first is None:
            self.first = reply
            # A read by line starts where the daemon says the line starts.
            self.offset = self.pos = int(reply.get("offset", self.pos))
        self.chunks.append(payload)
        self.pos += len(payload)
        if reply.get("eof") or self.limit is not None or self.max_lines is not None or not payload:
            first = self.first
            return FileContent(content=b"".join(self.chunks), size=int(reply.get("size", 0)),
                               sha256=str(reply.get("sha256", "")), offset=self.offset, eof=bool(reply.get("eof")),
                               sandbox=SandboxInfo.from_reply(first), start_line=first.get("start_line"))
        return None
