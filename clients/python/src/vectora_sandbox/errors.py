# SPDX-License-Identifier: MIT
"""The daemon API's error codes (docs/protocol.md, "Error codes"), one name
each: compare :attr:`SandboxError.code` with these rather than with string
literals, so a misspelt code is an AttributeError, not a branch never taken.

The daemon's codes mirror src/core/api/api.c's table (test-docs fails when the
two differ); ``DAEMON_UNAVAILABLE`` is the client's own.
"""

import enum


class ErrorCode(str, enum.Enum):
    """An error code; a ``str``, so it also equals its name on the wire
    (``ErrorCode.DENIED == "denied"``)."""

    BAD_REQUEST = "bad_request"
    REQUEST_TOO_LARGE = "request_too_large"
    FORBIDDEN = "forbidden"
    BUSY = "busy"
    UNKNOWN_TOOL = "unknown_tool"
    WORKSPACE_NOT_FOUND = "workspace_not_found"
    CONFIG_INVALID = "config_invalid"
    SANDBOX_REQUIRED = "sandbox_required"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    WORKER_CRASHED = "worker_crashed"
    WORKER_RECYCLED = "worker_recycled"
    CONFLICT = "conflict"
    PROCESS_ENDED = "process_ended"
    DAEMON_REQUIRED = "daemon_required"
    EDIT_NOT_FOUND = "edit_not_found"
    EDIT_NOT_UNIQUE = "edit_not_unique"
    SHUTTING_DOWN = "shutting_down"
    INTERNAL = "internal"
    NETWORK_DENIED = "network_denied"
    INTERRUPTED = "interrupted"
    UNKNOWN_OP = "unknown_op"
    NOT_READY = "not_ready"
    DENIED = "denied"
    NOT_FOUND = "not_found"
    EXISTS = "exists"
    PRECONDITION_FAILED = "precondition_failed"
    TOO_LARGE = "too_large"
    IO = "io"
    CANCELLED = "cancelled"
    PROCESS_LIMIT = "process_limit"
    # The client's own: the daemon's socket cannot be reached, or the
    # connection broke.
    DAEMON_UNAVAILABLE = "daemon_unavailable"

    def __str__(self) -> str:
        return self.value


#: Codes no daemon sends: the client raises them itself.
CLIENT_ONLY = frozenset({ErrorCode.DAEMON_UNAVAILABLE})
