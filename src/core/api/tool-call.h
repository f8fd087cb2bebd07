/* SPDX-License-Identifier: MIT */
#pragma once

/* One daemon API tool call (terminal, file_read, file_write, file_edit)
 * against one worker, as a state machine that does no I/O: the caller asks
 * tool_call_encode() for the next worker request, sends it however it
 * talks to the worker, and gives the reply to tool_call_feed(), until the
 * call is done. file_edit takes several rounds (read, write if unchanged,
 * again when another writer got in between); the others take one.
 *
 * The policy's limits are ceilings here, whoever drives the call: a
 * request may lower the timeout or the output kept, never raise them.
 *
 * tool_call_run() is the blocking driver over a VsSession (the CLI's
 * embedded mode, the MCP server without a daemon). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "jsonl.h"
#include "session.h"
#include "sha256.h"
#include "strbuf.h"

/* How often file_edit re-reads and re-applies when the file changed
 * between its read and its write, before it gives up ("conflict"). */
#define TOOL_EDIT_MAX_ATTEMPTS 16

typedef enum VsToolKind {
        VS_TOOL_TERMINAL,
        VS_TOOL_FILE_READ,
        VS_TOOL_FILE_WRITE,
        VS_TOOL_FILE_EDIT,
        VS_TOOL_LIST_DIR,
        VS_TOOL_GLOB,
        VS_TOOL_GREP,
} VsToolKind;

/* What the caller asks; every pointer is borrowed and must outlive the
 * call. Paths and cwd are as the worker resolves them (absolute, or
 * relative to the workspace root). */
typedef struct VsToolArgs {
        VsToolKind tool;
        /* terminal */
        char **argv;          /* non-empty */
        const char *cwd;      /* NULL: the workspace root */
        char **env;           /* "K=V" */
        uint64_t timeout_ms;  /* 0: the policy's */
        uint64_t max_output;  /* 0: the policy's */
        /* file tools */
        const char *path;
        uint64_t offset, limit;       /* file_read; limit 0: up to JSONL_MAX_RAW */
        uint64_t start_line, max_lines; /* file_read by lines (start_line > 0; offset is then unused) */
        bool text;                    /* file_read: trim the window to whole UTF-8 characters */
        bool has_mode;                /* file_write */
        uint64_t mode;
        bool create_parents;
        const char *if_sha256;
        const char *old_text, *new_text; /* file_edit */
        bool replace_all;
        uint64_t max_entries;            /* list_dir */
        ProtocolFindRequest find;        /* glob, grep: all but path (above) and the head */
        /* terminal: stdin (NULL and 0: /dev/null); file_write: content */
        const void *data;
        size_t data_len;
} VsToolArgs;

typedef struct VsToolCall {
        VsToolArgs a;
        /* Ceilings from the policy (0: none, the worker's own default). */
        uint64_t max_timeout_ms;
        uint64_t max_output;
        /* file_edit */
        unsigned stage;       /* 0: read next, 1: write next */
        unsigned attempts;    /* writes refused because the file changed */
        char sha[SHA256_HEX_LEN + 1];
        char *edited;
        size_t edited_len;
        size_t count;
} VsToolCall;

/* Copies args (not what they point to). policy (may be NULL: no
 * ceilings) gives the limits when it is sandboxed. */
void tool_call_init(VsToolCall *c, const VsToolArgs *args, const VsPolicy *policy);
/* The ceilings from policy (NULL or unsandboxed: none), for a driver that
 * takes them when each request goes out (the daemon: the policy may have
 * been tightened since the call was taken). */
void tool_call_ceilings(VsToolCall *c, const VsPolicy *policy);
/* Frees what the call built. The call may be initialized again. */
void tool_call_done(VsToolCall *c);

/* The next worker request, framed, with id wid, appended to out.
 * -EMSGSIZE/-ENOBUFS: over the protocol's limits; -ENOMEM. */
int tool_call_encode(VsToolCall *c, uint64_t wid, StrBuf *out);

#define TOOL_CALL_AGAIN 1
/* Feeds the worker's reply (borrowed) to the request last encoded.
 * Returns TOOL_CALL_AGAIN: encode and send the next request; 0: done,
 * *ret_result the tool's result fields (new reference; no "ok", "id" or
 * "sandbox": the caller adds how it ran), the raw payload (command
 * output: stdout_len bytes of stdout then stderr_len of stderr; file
 * content) staying in m; < 0: failed, *err's kind the API error code (the
 * worker's own code passed on, "worker_crashed" for a malformed reply,
 * "too_large", "conflict", "edit_not_found", "edit_not_unique"). */
int tool_call_feed(VsToolCall *c, JsonlMsg *m, json_t **ret_result, VsError **err);

/* Blocking driver: runs c to its end over s (cancel_fd: session_call's,
 * < 0 none). On success *ret_result as
 * tool_call_feed's and *ret_msg the last reply (its raw payload the
 * result's data; release with jsonl_msg_done()). On failure *err's kind
 * is the API error code (a dead worker: session_call's kinds). */
int tool_call_run(VsSession *s, VsToolCall *c, int cancel_fd, json_t **ret_result, JsonlMsg *ret_msg, VsError **err);

/* Puts aside what the session's jail made that git takes as a repository
 * (session_git_sweep(); its worker ended first) and adds those paths to
 * result's "host_run_files" (result may be NULL: put aside, not listed). */
int tool_call_sweep(VsSession *s, json_t *result);
