/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon API (docs/protocol.md, "Daemon API"): its tools, the tables
 * that decode their arguments and its error codes, each named once. The
 * daemon decodes with these tables; the CLI client, the MCP server and the
 * benchmarks name tools and codes through them, so a wire name is spelt in
 * one place. Pure: no OS calls. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"
#include "json-util.h"
#include "jsonl.h"

typedef enum ApiTool {
        API_TOOL_TERMINAL,
        API_TOOL_FILE_READ,
        API_TOOL_FILE_WRITE,
        API_TOOL_FILE_EDIT,
        API_TOOL_TERMINAL_OPEN,
        API_TOOL_TERMINAL_INPUT,
        API_TOOL_TERMINAL_RESIZE,
        API_TOOL_TERMINAL_CLOSE,
        API_TOOL_PROCESS_START,
        API_TOOL_PROCESS_OUTPUT,
        API_TOOL_PROCESS_INPUT,
        API_TOOL_PROCESS_SIGNAL,
        API_TOOL_PROCESS_LIST,
        API_TOOL_POLICY_ALLOW,
        API_TOOL_STATUS,
        API_TOOL_METRICS,
        API_TOOL_CANCEL, /* the daemon's: a call in flight on the same connection */
        API_TOOL_LIST_DIR,
        API_TOOL_GLOB,
        API_TOOL_GREP,
        API_TOOL_SECRET_SET, /* the host user's secret store (secret-store.h); never a value back */
        API_TOOL_SECRET_LIST,
        API_TOOL_SECRET_DELETE,
        _API_TOOL_MAX,
        _API_TOOL_INVALID = -EINVAL,
} ApiTool;

/* The wire name; NULL for a value out of range. */
const char *api_tool_name(ApiTool t);
/* _API_TOOL_INVALID for NULL or a name not in the table. */
ApiTool api_tool_from_name(const char *s);

/* Every code a daemon reply's "error" may carry. API_OK (0) is no error,
 * so a result's code reads as a truth value. The worker's own codes
 * (protocol.h) pass through under the same names. */
typedef enum ApiError {
        API_OK = 0,
        API_ERROR_BAD_REQUEST,
        API_ERROR_REQUEST_TOO_LARGE,
        API_ERROR_FORBIDDEN,
        API_ERROR_BUSY,
        API_ERROR_UNKNOWN_TOOL,
        API_ERROR_WORKSPACE_NOT_FOUND,
        API_ERROR_CONFIG_INVALID,
        API_ERROR_SANDBOX_REQUIRED,
        API_ERROR_SANDBOX_UNAVAILABLE,
        API_ERROR_WORKER_CRASHED,
        API_ERROR_WORKER_RECYCLED,
        API_ERROR_CONFLICT,
        API_ERROR_PROCESS_ENDED,
        API_ERROR_DAEMON_REQUIRED,
        API_ERROR_EDIT_NOT_FOUND,
        API_ERROR_EDIT_NOT_UNIQUE,
        API_ERROR_SHUTTING_DOWN,
        API_ERROR_INTERNAL,
        API_ERROR_NETWORK_DENIED,
        API_ERROR_INTERRUPTED, /* the daemon stopped while the call ran: it ran in part */
        /* the worker's, passed through */
        API_ERROR_UNKNOWN_OP,
        API_ERROR_NOT_READY,
        API_ERROR_DENIED,
        API_ERROR_NOT_FOUND,
        API_ERROR_EXISTS,
        API_ERROR_PRECONDITION_FAILED,
        API_ERROR_TOO_LARGE,
        API_ERROR_IO,
        API_ERROR_CANCELLED,
        API_ERROR_PROCESS_LIMIT,
        _API_ERROR_MAX,
        _API_ERROR_INVALID = -EINVAL,
} ApiError;

/* The wire name; NULL for API_OK and values out of range. */
const char *api_error_name(ApiError e);
/* _API_ERROR_INVALID for NULL or a name not in the table. */
ApiError api_error_from_name(const char *s);
/* The code a lower layer's error kind (vs_error_kind) becomes on the wire:
 * its own when it names one, fallback when it has none, and io (the
 * protocol's rule for a code the receiver does not know) otherwise. */
ApiError api_error_from_kind(const char *kind, ApiError fallback);
/* Whether code (a wire name, may be NULL) is e. */
bool api_error_is(const char *code, ApiError e);
/* The reply's "error" object: {code, message} (message defaults to the
 * code; a value out of range reads as internal). New reference, NULL on
 * OOM. */
json_t *api_error_json(ApiError e, const char *message);
/* What the audit log and the counters call a result with this code:
 * ok, refused (nothing ran: the sandbox layer said no), denied (the
 * policy) or error. */
const char *api_error_outcome(ApiError e);

/* ---- tool arguments ---- */

/* terminal and process_start: one command. process_start takes the same
 * fields except the terminal-only ones (api_run_terminal_only). */
typedef struct ApiRunArgs {
        const char *command;
        char **argv;
        const char *cwd;
        json_t *env;
        const char *stdin_text;
        const char *stdin_base64;
        uint64_t timeout;
        uint64_t timeout_ms;
        uint64_t max_output;
        bool binary;
        /* built by api_run_args_prepare */
        char *sh[4];          /* /bin/sh -c command */
        char **envv;
        char *stdin_data;
        size_t stdin_len;
} ApiRunArgs;
extern const JsonField api_run_table[];
/* The field of obj only terminal takes (a finished command's output
 * limits and form), or NULL. */
const char *api_run_terminal_only(json_t *obj);
/* Checks the decoded arguments and builds argv, the environment and stdin
 * (from "stdin", "stdin_base64" or msg's raw payload, which it takes).
 * -EINVAL with *err (kind bad_request) saying what to give; -ENOMEM. */
int api_run_args_prepare(ApiRunArgs *a, JsonlMsg *msg, VsError **err);
/* The argv to run: a->argv, or /bin/sh -c command. */
char **api_run_argv(ApiRunArgs *a);
/* What api_run_args_prepare built (the decoded fields: json_dispatch_done). */
void api_run_args_done(ApiRunArgs *a);
/* The audit target: the command line or the argv array (new reference). */
json_t *api_run_target(const ApiRunArgs *a);

/* terminal_open: a terminal in the jail, or on the host when unsandboxed. */
typedef struct ApiTerminalOpenArgs {
        uint64_t cols, rows;
        char **argv;
        json_t *env;
        const char *term;
} ApiTerminalOpenArgs;
extern const JsonField api_terminal_open_table[];

typedef struct ApiReadArgs {
        const char *path;
        uint64_t offset;
        uint64_t limit;
        uint64_t start_line, max_lines;
        bool binary;
        bool text;
} ApiReadArgs;
extern const JsonField api_file_read_table[];

typedef struct ApiWriteArgs {
        const char *path;
        const char *content;
        const char *content_base64;
        bool has_mode;
        uint64_t mode;
        bool create_parents;
        const char *if_sha256;
        /* built by api_write_args_prepare */
        char *data;
        size_t len;
} ApiWriteArgs;
extern const JsonField api_file_write_table[];
/* Checks mode and that the content comes once, and takes it (from
 * "content", "content_base64" or msg's raw payload). -EINVAL with *err;
 * -ENOMEM. */
int api_write_args_prepare(ApiWriteArgs *a, json_t *obj, JsonlMsg *msg, VsError **err);

typedef struct ApiEditArgs {
        const char *path;
        const char *old_string;
        const char *new_string;
        bool replace_all;
} ApiEditArgs;
extern const JsonField api_file_edit_table[];

/* list_dir: "path" (default the workspace root), "max_entries" (default
 * API_LIST_DEFAULT, at most API_LIST_MAX: the reply is one line). */
#define API_LIST_DEFAULT 500u
#define API_LIST_MAX 2000u
typedef struct ApiListArgs {
        const char *path;
        uint64_t max_entries;
} ApiListArgs;
extern const JsonField api_list_dir_table[];

/* glob and grep: a walk in the worker (docs/protocol.md). Limits given as
 * 0 or left out are the worker's defaults; max_results is "max_matches"
 * on grep. */
typedef struct ApiFindArgs {
        const char *path;
        const char *pattern;
        const char *glob;
        bool fixed, ignore_case;
        uint64_t context;
        uint64_t max_results, max_files, max_bytes;
        uint64_t timeout_ms;
} ApiFindArgs;
#define API_FIND_MAX_RESULTS 5000u
#define API_FIND_MAX_TIMEOUT_MS 60000u
extern const JsonField api_glob_table[];
extern const JsonField api_grep_table[];

typedef struct ApiStatusArgs {
        const char *workspace;
        uint64_t offset;
        const char *after; /* a cursor: the page starts past this path (in place of offset) */
        uint64_t limit;
} ApiStatusArgs;
extern const JsonField api_status_table[];

/* cancel: "target" only, read by the daemon. */
extern const JsonField api_cancel_table[];

/* secret_set: "name", "hosts" (network entries), "headers" (optional:
 * request headers besides Authorization, secret-header.h), "value" (text;
 * never returned by any call). secret_delete: "name". secret_list:
 * nothing. */
typedef struct ApiSecretArgs {
        const char *name;
        char **hosts;
        char **headers;
        const char *value;
} ApiSecretArgs;
extern const JsonField api_secret_set_table[];
extern const JsonField api_secret_delete_table[];

/* policy_allow and process_list: no arguments of their own. */
extern const JsonField api_no_args_table[];

typedef struct ApiOutputArgs {
        uint64_t process;
        uint64_t stdout_offset, stderr_offset;
        uint64_t wait_ms;
        uint64_t max_bytes;
} ApiOutputArgs;
extern const JsonField api_process_output_table[];

/* process_input and process_signal. */
typedef struct ApiControlArgs {
        uint64_t process;
        const char *data;
        bool eof;
} ApiControlArgs;
extern const JsonField api_process_input_table[];
extern const JsonField api_process_signal_table[]; /* "signal": a number or a name, read by the caller */
