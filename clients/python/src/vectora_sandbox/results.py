# SPDX-License-Identifier: MIT
"""What the daemon's calls return (docs/protocol.md, "Requests and results"),
as typed values shared by the blocking and the asyncio client, and the
exceptions they raise."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

from .errors import ErrorCode

__all__ = [
    "SandboxError",
    "DaemonUnavailable",
    "CallTimeout",
    "SandboxInfo",
    "TerminalResult",
    "FileContent",
    "WriteResult",
    "EditResult",
    "DirEntry",
    "DirListing",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "ProcessInfo",
    "ProcessOutput",
]


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


class CallTimeout(SandboxError, TimeoutError):
    """The client's ``timeout`` ran out before the reply: the call was
    cancelled in the daemon (the API's ``cancel``, then the connection
    closed), so a command it ran is killed, whole process group. ``code`` is
    ``ErrorCode.CANCELLED``; ``confirmed`` says whether the daemon answered
    the cancel before the client gave up waiting for it."""

    def __init__(self, message: str, confirmed: bool) -> None:
        SandboxError.__init__(self, ErrorCode.CANCELLED, message)
        self.confirmed = confirmed


def _notes(reply: Mapping[str, Any]) -> List[str]:
    out = []
    for k in ("network_note", "sealed_note"):
        if isinstance(reply.get(k), str):
            out.append(reply[k])
    jr = reply.get("jail_restarted")
    if jr:
        out.append(jr if isinstance(jr, str) else "the jail was restarted after this call: %s" % (jr,))
    return out


@dataclass(frozen=True)
class SandboxInfo:
    """How a call was served, and what it left for the caller to act on:
    every result carries one (docs/protocol.md, "Requests and results").

    ``policy_pending``: a loosening of ``vectora.toml`` waits for the host's
    approval (the call ran under the approved policy). ``host_run_files``:
    files the host runs later that the jail made while the call ran (review
    them). ``network_denied``: what the workspace's proxy refused meanwhile
    (``host``, ``port``, ``reason``). ``notes``: the daemon's words on the
    output (``network_note``, ``sealed_note``, ``jail_restarted``)."""

    sandboxed: bool
    backend: Optional[str]
    state: Optional[str]
    layers: List[str] = field(default_factory=list)
    degraded: List[str] = field(default_factory=list)
    generation: Optional[int] = None
    policy_pending: Optional[str] = None
    host_run_files: List[Any] = field(default_factory=list)
    network_denied: List[Dict[str, Any]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "SandboxInfo":
        s = reply.get("sandbox") or {}
        return cls(sandboxed=bool(reply.get("sandboxed")), backend=s.get("backend"), state=s.get("state"),
                   layers=list(s.get("layers") or []), degraded=list(s.get("degraded") or []),
                   generation=s.get("generation"), policy_pending=reply.get("policy_pending"),
                   host_run_files=list(reply.get("host_run_files") or []),
                   network_denied=list(reply.get("network_denied") or []), notes=_notes(reply))


@dataclass(frozen=True)
class TerminalResult:
    """A command's outcome. ``exit_code`` is 128+N when killed by signal N.
    ``timeout_capped_ms``: the workspace's limit that held where ``timeout``
    asked for longer; ``*_total``: bytes the command wrote (more than kept
    when ``truncated``)."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    signal: int
    timed_out: bool
    truncated: bool
    duration_us: int
    sandbox: SandboxInfo
    cancelled: bool = False
    stdout_total: int = 0
    stderr_total: int = 0
    timeout_capped_ms: Optional[int] = None

    @property
    def ok(self) -> bool:
        """Whether the command exited 0."""
        return self.exit_code == 0

    def text(self, errors: str = "replace") -> str:
        """stdout decoded as UTF-8."""
        return self.stdout.decode("utf-8", errors)

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any], payload: bytes) -> "TerminalResult":
        n_out = int(reply.get("stdout_len", 0))
        n_err = int(reply.get("stderr_len", 0))
        return cls(exit_code=int(reply.get("exit_code", 0)), stdout=bytes(payload[:n_out]),
                   stderr=bytes(payload[n_out:n_out + n_err]), signal=int(reply.get("signal", 0)),
                   timed_out=bool(reply.get("timed_out")), truncated=bool(reply.get("truncated")),
                   duration_us=int(reply.get("duration_us", 0)), sandbox=SandboxInfo.from_reply(reply),
                   cancelled=bool(reply.get("cancelled")), stdout_total=int(reply.get("stdout_total", n_out)),
                   stderr_total=int(reply.get("stderr_total", n_err)),
                   timeout_capped_ms=reply.get("timeout_capped_ms"))


@dataclass(frozen=True)
class FileContent:
    """What file_read returned: ``content`` from ``offset``; ``eof`` when it
    reaches the end; ``start_line``: the line (1-based) ``content`` starts in."""

    content: bytes
    size: int
    sha256: str
    offset: int
    eof: bool
    sandbox: SandboxInfo
    start_line: Optional[int] = None

    def text(self, errors: str = "strict") -> str:
        """The content decoded as UTF-8."""
        return self.content.decode("utf-8", errors)

    def numbered(self) -> str:
        """The content as text with line numbers (``cat -n`` style), from ``start_line``."""
        first = self.start_line or 1
        lines = self.text("replace").splitlines()
        return "".join("%6d\t%s\n" % (first + i, l) for i, l in enumerate(lines))


@dataclass(frozen=True)
class WriteResult:
    """file_write's outcome: the new size and sha256, and whether the file was created."""

    size: int
    sha256: str
    created: bool
    sandbox: SandboxInfo

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "WriteResult":
        return cls(size=int(reply.get("size", 0)), sha256=str(reply.get("sha256", "")),
                   created=bool(reply.get("created")), sandbox=SandboxInfo.from_reply(reply))


@dataclass(frozen=True)
class EditResult:
    """file_edit's outcome; ``retries`` counts re-applications after concurrent changes."""

    replacements: int
    size: int
    sha256: str
    retries: int
    sandbox: SandboxInfo

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "EditResult":
        return cls(replacements=int(reply.get("replacements", 0)), size=int(reply.get("size", 0)),
                   sha256=str(reply.get("sha256", "")), retries=int(reply.get("retries", 0)),
                   sandbox=SandboxInfo.from_reply(reply))


@dataclass(frozen=True)
class DirEntry:
    """One entry of list_dir or glob: ``type`` is ``file``, ``dir``,
    ``symlink`` or ``other``; ``size`` for a file."""

    name: str
    type: str
    size: Optional[int] = None


@dataclass(frozen=True)
class DirListing:
    """list_dir's outcome: ``entries`` sorted by name (masked paths left
    out), ``total`` in the directory, ``truncated`` when ``max_entries`` cut."""

    entries: List[DirEntry]
    total: int
    truncated: bool
    sandbox: SandboxInfo

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "DirListing":
        return cls(entries=[DirEntry(str(e.get("name", "")), str(e.get("type", "")), e.get("size"))
                            for e in reply.get("entries") or []],
                   total=int(reply.get("total", 0)), truncated=bool(reply.get("truncated")),
                   sandbox=SandboxInfo.from_reply(reply))


@dataclass(frozen=True)
class GlobResult:
    """glob's outcome: ``paths`` (``DirEntry.name`` is the path relative to
    the directory searched); ``limit`` names the limit that stopped the walk."""

    paths: List[DirEntry]
    entries_visited: int
    truncated: bool
    limit: Optional[str]
    sandbox: SandboxInfo

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "GlobResult":
        return cls(paths=[DirEntry(str(e.get("path", "")), str(e.get("type", "")), e.get("size"))
                          for e in reply.get("paths") or []],
                   entries_visited=int(reply.get("entries_visited", 0)), truncated=bool(reply.get("truncated")),
                   limit=reply.get("limit"), sandbox=SandboxInfo.from_reply(reply))


@dataclass(frozen=True)
class GrepMatch:
    """A line: a match, or (``match`` false) a context line around one."""

    path: str
    line: int
    text: str
    match: bool


@dataclass(frozen=True)
class GrepResult:
    """grep's outcome; nothing found is a result with no matches."""

    matches: List[GrepMatch]
    match_count: int
    files_matched: int
    files_searched: int
    files_skipped: int
    truncated: bool
    limit: Optional[str]
    sandbox: SandboxInfo

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "GrepResult":
        return cls(matches=[GrepMatch(str(m.get("path", "")), int(m.get("line", 0)), str(m.get("text", "")),
                                      bool(m.get("match", True))) for m in reply.get("matches") or []],
                   match_count=int(reply.get("match_count", 0)), files_matched=int(reply.get("files_matched", 0)),
                   files_searched=int(reply.get("files_searched", 0)),
                   files_skipped=int(reply.get("files_skipped", 0)), truncated=bool(reply.get("truncated")),
                   limit=reply.get("limit"), sandbox=SandboxInfo.from_reply(reply))


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


def _stream(reply: Mapping[str, Any], key: str) -> bytes:
    if key in reply:
        return str(reply[key]).encode("utf-8")
    return base64.b64decode(reply.get(key + "_base64", ""))


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

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "ProcessOutput":
        return cls(info=ProcessInfo.from_reply(reply), stdout=_stream(reply, "stdout"),
                   stderr=_stream(reply, "stderr"), stdout_offset=int(reply.get("stdout_offset", 0)),
                   stderr_offset=int(reply.get("stderr_offset", 0)),
                   stdout_dropped=int(reply.get("stdout_dropped", 0)),
                   stderr_dropped=int(reply.get("stderr_dropped", 0)))
