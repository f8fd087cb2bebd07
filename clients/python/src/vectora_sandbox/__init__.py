# SPDX-License-Identifier: MIT
"""Python client for vectora-sandboxd: an AI agent's terminal and file tools,
run in each workspace's jail as its ``vectora.toml`` declares.

    from vectora_sandbox import Sandbox, SandboxError

    with Sandbox(workspace="/home/me/proj") as sb:
        r = sb.terminal("make test")
        print(r.exit_code, r.text(), r.sandbox.layers)
        sb.file_write("notes.txt", "hello\\n")
        sb.file_edit("notes.txt", "hello", "hello, world")
        try:
            sb.file_read(".env")
        except SandboxError as e:
            print(e.code)          # denied (e.code == ErrorCode.DENIED)

An asyncio client with the same methods is :class:`AsyncSandbox`
(``vectora_sandbox.aio``).

Standard library only. The protocol is docs/protocol.md, "Daemon API".
"""

from .errors import ErrorCode
from .client import Sandbox, default_socket
from .aio import AsyncSandbox
from .results import (
    CallTimeout,
    DaemonUnavailable,
    DirEntry,
    DirListing,
    EditResult,
    FileContent,
    GlobResult,
    GrepMatch,
    GrepResult,
    ProcessInfo,
    ProcessOutput,
    SandboxError,
    SandboxInfo,
    TerminalResult,
    WriteResult,
)

__version__ = "0.1.0"

__all__ = [
    "Sandbox",
    "AsyncSandbox",
    "SandboxError",
    "CallTimeout",
    "ErrorCode",
    "DaemonUnavailable",
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
    "default_socket",
    "__version__",
]
