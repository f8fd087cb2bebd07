/* SPDX-License-Identifier: MIT */
#include "mcp.h"

#include <stddef.h>
#include <string.h>

#include "api.h"
#include "json-util.h"
#include "jsonl.h"
#include "mcp-edit.h"
#include "mcp-find.h"
#include "mcp-text.h"
#include "strbuf.h"
#include "utf8.h"

/* Every revision this server can serve, newest first. 2025-03-26 added
 * tool annotations (and batches, which jsonrpc.h accepts); 2025-06-18 added
 * structuredContent and removed batches. The tools themselves are the same
 * in all of them. */
static const char *const versions[] = { "2025-06-18", "2025-03-26", "2024-11-05" };

static const char *const tool_names[_MCP_TOOL_MAX] = {
        [MCP_TOOL_TERMINAL] = "terminal",
        [MCP_TOOL_FILE_READ] = "file_read",
        [MCP_TOOL_FILE_WRITE] = "file_write",
        [MCP_TOOL_FILE_EDIT] = "file_edit",
        [MCP_TOOL_LIST_DIR] = "list_dir",
        [MCP_TOOL_GLOB] = "glob",
        [MCP_TOOL_GREP] = "grep",
        [MCP_TOOL_MULTI_EDIT] = "multi_edit",
        [MCP_TOOL_APPLY_PATCH] = "apply_patch",
        [MCP_TOOL_PROCESS_START] = "process_start",
        [MCP_TOOL_PROCESS_OUTPUT] = "process_output",
        [MCP_TOOL_PROCESS_INPUT] = "process_input",
        [MCP_TOOL_PROCESS_SIGNAL] = "process_signal",
        [MCP_TOOL_PROCESS_LIST] = "process_list",
};

/* The daemon API tool each serves through (api.h). */
static const ApiTool api_tools[_MCP_TOOL_MAX] = {
        [MCP_TOOL_TERMINAL] = API_TOOL_TERMINAL,
        [MCP_TOOL_FILE_READ] = API_TOOL_FILE_READ,
        [MCP_TOOL_FILE_WRITE] = API_TOOL_FILE_WRITE,
        [MCP_TOOL_FILE_EDIT] = API_TOOL_FILE_EDIT,
        [MCP_TOOL_LIST_DIR] = API_TOOL_LIST_DIR,
        [MCP_TOOL_GLOB] = API_TOOL_GLOB,
        [MCP_TOOL_GREP] = API_TOOL_GREP,
        [MCP_TOOL_PROCESS_START] = API_TOOL_PROCESS_START,
        [MCP_TOOL_PROCESS_OUTPUT] = API_TOOL_PROCESS_OUTPUT,
        [MCP_TOOL_PROCESS_INPUT] = API_TOOL_PROCESS_INPUT,
        [MCP_TOOL_PROCESS_SIGNAL] = API_TOOL_PROCESS_SIGNAL,
        [MCP_TOOL_PROCESS_LIST] = API_TOOL_PROCESS_LIST,
};

bool mcp_tool_needs_daemon(McpTool t) {
        return t >= MCP_TOOL_PROCESS_START && t < _MCP_TOOL_MAX;
}

const char *mcp_tool_name(McpTool t) {
        return t < _MCP_TOOL_MAX ? tool_names[t] : NULL;
}

const char *mcp_negotiate_version(const char *requested) {
        for (size_t i = 0; requested && i < ELEMENTSOF(versions); i++)
                if (streq(requested, versions[i]))
                        return versions[i];
        return MCP_PROTOCOL_LATEST;
}

bool mcp_version_has_structured(const char *version) {
        /* Revisions are dates: later ones sort after. */
        return version && strcmp(version, "2025-06-18") >= 0;
}

typedef struct InitParams {
        const char *protocol_version;
        json_t *capabilities;
        json_t *client_info;
} InitParams;

int mcp_decode_initialize(json_t *params, McpInitialize *ret, VsError **err) {
        static const JsonField fields[] = {
                { "protocolVersion", JSON_FIELD_STRING, offsetof(InitParams, protocol_version), JSON_FIELD_REQUIRED },
                { "capabilities", JSON_FIELD_OBJECT, offsetof(InitParams, capabilities), 0 },
                { "clientInfo", JSON_FIELD_OBJECT, offsetof(InitParams, client_info), 0 },
                {},
        };
        if (!json_is_object(params))
                return vs_error_set_kind(err, -EINVAL, "invalid_params", "initialize needs params (an object)");
        InitParams p = {};
        int r = json_dispatch_full(params, fields, JSON_DISPATCH_ALLOW_UNKNOWN, &p, err);
        if (r < 0)
                return r;
        /* clientInfo's name is only logged: anything but a string is ignored. */
        *ret = (McpInitialize) { .protocol_version = p.protocol_version,
                                 .client_name = json_string_value(json_object_get(p.client_info, "name")) };
        return 0;
}

/* ---- the catalogue ---- */

#define SANDBOX_NOTE                                                                                            \
        " It runs inside the workspace's sandbox as its vectora.toml declares: only the declared paths are "  \
        "visible, writes outside rw_paths fail, masked files (secrets) are refused or read as empty, and "    \
        "vectora.toml, .git control files and protected paths are read-only. A refusal is reported as a "     \
        "tool error with the reason; do not try to work around it."

typedef struct ToolDef {
        const char *description;
        const char *schema; /* JSON text of the inputSchema */
        bool read_only;
        bool destructive;
} ToolDef;

static const ToolDef tool_defs[_MCP_TOOL_MAX] = {
        [MCP_TOOL_TERMINAL] = {
                "Run a shell command line (/bin/sh -c COMMAND) in the workspace and return its exit code, "
                "stdout and stderr. Each call is a new shell: only files persist between calls (cd and "
                "variables do not). The working directory is the workspace root unless cwd is given. At the "
                "timeout the command's whole process group is killed. Very long output keeps its head and "
                "tail with a marker in between." SANDBOX_NOTE,
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"command\"],\"properties\":{"
                "\"command\":{\"type\":\"string\",\"description\":\"The command line, e.g. \\\"make test 2>&1 | tail -50\\\"\"},"
                "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory, relative to the workspace root (default: the root)\"},"
                "\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":604800,\"description\":\"Seconds before the command is killed (default and cap: the workspace's limit, 120 s unless configured)\"},"
                "\"stdin\":{\"type\":\"string\",\"description\":\"Text given to the command on standard input (default: none)\"},"
                "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"description\":\"Environment variables added for this command only, e.g. {\\\"RUST_LOG\\\":\\\"debug\\\"}\"},"
                "\"max_output\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":8388608,\"description\":\"Most bytes of output to return, head and tail kept (default 24576; the workspace's max_output caps it)\"}}}",
                false, true,
        },
        [MCP_TOOL_FILE_READ] = {
                "Read a text file of the workspace. Returns up to limit bytes from offset (default: the first "
                "24 KiB), or from line start_line at most max_lines lines; with line_numbers each line is shown "
                "after its number (as cat -n). A window never splits a character. When the file goes on, the "
                "result says where to continue. Binary content is not shown; inspect it with the terminal tool."
                SANDBOX_NOTE,
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\"],\"properties\":{"
                "\"path\":{\"type\":\"string\",\"description\":\"File path, relative to the workspace root or absolute\"},"
                "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Byte offset to start at (default 0)\"},"
                "\"start_line\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Line to start at, the first being 1 (instead of offset)\"},"
                "\"max_lines\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Most lines to return (default: as many as limit holds)\"},"
                "\"line_numbers\":{\"type\":\"boolean\",\"description\":\"Show each line after its number, as cat -n (default false)\"},"
                "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":8388608,\"description\":\"Most bytes to return (default 24576)\"}}}",
                true, false,
        },
        [MCP_TOOL_FILE_WRITE] = {
                "Create or replace a file of the workspace with the given content, atomically (a reader sees "
                "the old or the new content, never a mix). To change part of a file, prefer file_edit." SANDBOX_NOTE,
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\"],\"properties\":{"
                "\"path\":{\"type\":\"string\",\"description\":\"File path, relative to the workspace root or absolute\"},"
                "\"content\":{\"type\":\"string\",\"description\":\"The whole new content of the file (text)\"},"
                "\"content_base64\":{\"type\":\"string\",\"description\":\"Instead of content: the whole new content in base64, for binary files (at most 768 KiB decoded)\"},"
                "\"create_parents\":{\"type\":\"boolean\",\"description\":\"Create missing parent directories (default true)\"}}}",
                false, true,
        },
        [MCP_TOOL_FILE_EDIT] = {
                "Replace an exact piece of text in a file of the workspace. old_string must occur exactly "
                "once (include surrounding lines to make it unique) unless replace_all is true; copy it "
                "exactly from a file_read, including indentation. Safe against concurrent writers: a "
                "change made meanwhile is re-read and the edit applied to it." SANDBOX_NOTE,
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"old_string\",\"new_string\"],\"properties\":{"
                "\"path\":{\"type\":\"string\",\"description\":\"File path, relative to the workspace root or absolute\"},"
                "\"old_string\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The exact text to replace\"},"
                "\"new_string\":{\"type\":\"string\",\"description\":\"The text to put in its place\"},"
                "\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence (default false: exactly one must exist)\"}}}",
                false, true,
        },
        [MCP_TOOL_LIST_DIR] = { MCP_LIST_DIR_DESCRIPTION SANDBOX_NOTE, MCP_LIST_DIR_SCHEMA, true, false },
        [MCP_TOOL_GLOB] = { MCP_GLOB_DESCRIPTION SANDBOX_NOTE, MCP_GLOB_SCHEMA, true, false },
        [MCP_TOOL_GREP] = { MCP_GREP_DESCRIPTION SANDBOX_NOTE, MCP_GREP_SCHEMA, true, false },
        [MCP_TOOL_MULTI_EDIT] = { MCP_MULTI_EDIT_DESCRIPTION SANDBOX_NOTE, MCP_MULTI_EDIT_SCHEMA, false, true },
        [MCP_TOOL_APPLY_PATCH] = { MCP_APPLY_PATCH_DESCRIPTION SANDBOX_NOTE, MCP_APPLY_PATCH_SCHEMA, false, true },
        [MCP_TOOL_PROCESS_START] = {
                "Start a long-running command (a dev server, a watcher, a REPL) in the background with "
                "/bin/sh -c COMMAND and return its process id at once. It keeps running across tool calls "
                "until it exits, is signalled, or the sandbox is restarted; read its output with "
                "process_output. Needs the vectora-sandboxd daemon." SANDBOX_NOTE,
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"command\"],\"properties\":{"
                "\"command\":{\"type\":\"string\",\"description\":\"The command line, e.g. \\\"npm run dev\\\"\"},"
                "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory, relative to the workspace root (default: the root)\"},"
                "\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":2592000,\"description\":\"Seconds before it is killed (default: none, or the workspace's background_timeout)\"},"
                "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"description\":\"Environment variables added for this command only, e.g. {\\\"RUST_LOG\\\":\\\"debug\\\"}\"},"
                "\"stdin\":{\"type\":\"string\",\"description\":\"Text given on standard input, which is then closed (default: left open for process_input)\"}}}",
                false, true,
        },
        [MCP_TOOL_PROCESS_OUTPUT] = {
                "Read what a background process wrote since the given offsets (stdout and stderr apart), "
                "optionally waiting up to wait_ms for more or for its end, and whether it still runs. The "
                "result says the offsets to read on from and how many bytes were dropped (each stream keeps "
                "the last bytes of a fixed-size buffer).",
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"process\"],\"properties\":{"
                "\"process\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The id process_start returned\"},"
                "\"stdout_offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Read stdout from here (default 0)\"},"
                "\"stderr_offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Read stderr from here (default 0)\"},"
                "\"wait_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000,\"description\":\"Wait this long for new output or the end (default 0)\"}}}",
                true, false,
        },
        [MCP_TOOL_PROCESS_INPUT] = {
                "Write text to the standard input of a background process started with process_start (for a "
                "REPL or a prompt); with eof its input is closed afterwards.",
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"process\",\"data\"],\"properties\":{"
                "\"process\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The id process_start returned\"},"
                "\"data\":{\"type\":\"string\",\"description\":\"The text to write\"},"
                "\"eof\":{\"type\":\"boolean\",\"description\":\"Close its standard input after the text (default false)\"}}}",
                false, true,
        },
        [MCP_TOOL_PROCESS_SIGNAL] = {
                "Send a signal to a background process's whole process group: TERM (the default) to stop "
                "it, KILL when it does not stop, INT, HUP, ...",
                "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"process\"],\"properties\":{"
                "\"process\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The id process_start returned\"},"
                "\"signal\":{\"type\":\"string\",\"enum\":[\"TERM\",\"KILL\",\"INT\",\"HUP\",\"QUIT\",\"USR1\",\"USR2\",\"CONT\",\"STOP\",\"WINCH\"],\"description\":\"The signal (default TERM)\"}}}",
                false, true,
        },
        [MCP_TOOL_PROCESS_LIST] = {
                "List the workspace's background processes: running ones and the last ended ones, with their "
                "ids, commands and exit status.",
                "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
                true, false,
        },
};

/* What a client shows and how it may treat each tool: titles, and whether
 * a repeat with the same arguments has no further effect. */
static const struct {
        const char *title;
        bool idempotent;
        const char *output; /* the structuredContent members of its own, JSON text */
} tool_meta[_MCP_TOOL_MAX] = {
        [MCP_TOOL_TERMINAL] = { "Run a command (jailed)", false,
                                "\"exit_code\":{\"type\":\"integer\"},\"timed_out\":{\"type\":\"boolean\"}" },
        [MCP_TOOL_FILE_READ] = { "Read a file (jailed)", true, "\"size\":{\"type\":\"integer\"},\"eof\":{\"type\":\"boolean\"}" },
        [MCP_TOOL_FILE_WRITE] = { "Write a file (jailed)", true, "\"size\":{\"type\":\"integer\"},\"created\":{\"type\":\"boolean\"}" },
        [MCP_TOOL_FILE_EDIT] = { "Edit a file (jailed)", false, "\"replacements\":{\"type\":\"integer\"}" },
        [MCP_TOOL_MULTI_EDIT] = { "Edit a file in several places (jailed)", false,
                                  "\"diff\":{\"type\":\"string\"},\"files\":{\"type\":\"array\"}" },
        [MCP_TOOL_APPLY_PATCH] = { "Apply a patch (jailed)", false,
                                   "\"diff\":{\"type\":\"string\"},\"files\":{\"type\":\"array\"}" },
        [MCP_TOOL_LIST_DIR] = { "List a directory (jailed)", true, "" },
        [MCP_TOOL_GLOB] = { "Find files by name (jailed)", true, "" },
        [MCP_TOOL_GREP] = { "Search file contents (jailed)", true, "" },
        [MCP_TOOL_PROCESS_START] = { "Start a background process (jailed)", false, "\"process\":{\"type\":\"integer\"}" },
        [MCP_TOOL_PROCESS_OUTPUT] = { "Read a background process's output", true, "\"process\":{\"type\":\"integer\"}" },
        [MCP_TOOL_PROCESS_INPUT] = { "Write to a background process", false, "" },
        [MCP_TOOL_PROCESS_SIGNAL] = { "Signal a background process", false, "" },
        [MCP_TOOL_PROCESS_LIST] = { "List background processes", true, "\"processes\":{\"type\":\"array\"}" },
};

/* structuredContent: the daemon API's reply (docs/protocol.md) with
 * served_by; members a tool adds are listed, others are allowed. */
static json_t *output_schema(McpTool t) {
        _cleanup_free_ char *text = NULL;
        if (asprintf(&text,
                     "{\"type\":\"object\",\"required\":[\"ok\"],\"properties\":{\"ok\":{\"type\":\"boolean\"},"
                     "\"sandboxed\":{\"type\":\"boolean\"},\"sandbox\":{\"type\":\"object\"},"
                     "\"error\":{\"type\":\"object\"},\"served_by\":{\"type\":\"string\"}%s%s}}",
                     *tool_meta[t].output ? "," : "", tool_meta[t].output) < 0)
                return NULL;
        return json_loads(text, 0, NULL);
}

json_t *mcp_tools_list(bool with_daemon, bool commands, bool open_world, bool structured) {
        json_t *tools = json_array();
        for (size_t t = 0; tools && t < _MCP_TOOL_MAX; t++) {
                /* What this mode cannot serve is not offered. */
                if ((!with_daemon && mcp_tool_needs_daemon((McpTool)t)) || (!commands && t == MCP_TOOL_TERMINAL))
                        continue;
                json_t *schema = json_loads(tool_defs[t].schema, 0, NULL);
                /* Process tools reach the jail's processes, not the network themselves. */
                bool world = open_world && (t == MCP_TOOL_TERMINAL || t == MCP_TOOL_PROCESS_START);
                json_t *tool = schema ? json_pack("{s:s,s:s,s:s,s:o,s:{s:s,s:b,s:b,s:b,s:b}}", "name", tool_names[t],
                                                  "title", tool_meta[t].title, "description", tool_defs[t].description,
                                                  "inputSchema", schema, "annotations", "title", tool_meta[t].title,
                                                  "readOnlyHint", tool_defs[t].read_only, "destructiveHint",
                                                  tool_defs[t].destructive, "idempotentHint", tool_meta[t].idempotent,
                                                  "openWorldHint", world)
                                      : NULL;
                json_t *out = tool && structured ? output_schema((McpTool)t) : NULL;
                if (!tool || (structured && (!out || json_object_set_new(tool, "outputSchema", out) < 0)) ||
                    json_array_append_new(tools, tool) < 0) {
                        json_decref(tools);
                        return NULL;
                }
        }
        return tools ? json_pack("{s:o}", "tools", tools) : NULL;
}

/* ---- tools/call ---- */

typedef struct CallParams {
        const char *name;
        json_t *arguments;
        json_t *meta;
} CallParams;

static const JsonField terminal_fields[] = {
        { "command", JSON_FIELD_STRING, offsetof(McpCall, command), JSON_FIELD_REQUIRED },
        { "cwd", JSON_FIELD_STRING, offsetof(McpCall, cwd), JSON_FIELD_NULLABLE },
        { "timeout", JSON_FIELD_UINT64, offsetof(McpCall, timeout_s), JSON_FIELD_NULLABLE },
        { "stdin", JSON_FIELD_STRING, offsetof(McpCall, stdin_text), JSON_FIELD_NULLABLE },
        { "max_output", JSON_FIELD_UINT64, offsetof(McpCall, max_output), JSON_FIELD_NULLABLE }, /* terminal only */
        { "env", JSON_FIELD_STRMAP, offsetof(McpCall, env), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField file_read_fields[] = {
        { "path", JSON_FIELD_STRING, offsetof(McpCall, path), JSON_FIELD_REQUIRED },
        { "offset", JSON_FIELD_UINT64, offsetof(McpCall, offset), JSON_FIELD_NULLABLE },
        { "limit", JSON_FIELD_UINT64, offsetof(McpCall, limit), JSON_FIELD_NULLABLE },
        { "start_line", JSON_FIELD_UINT64, offsetof(McpCall, start_line), JSON_FIELD_NULLABLE },
        { "max_lines", JSON_FIELD_UINT64, offsetof(McpCall, max_lines), JSON_FIELD_NULLABLE },
        { "line_numbers", JSON_FIELD_BOOL, offsetof(McpCall, line_numbers), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField file_write_fields[] = {
        { "path", JSON_FIELD_STRING, offsetof(McpCall, path), JSON_FIELD_REQUIRED },
        { "content", JSON_FIELD_STRING, offsetof(McpCall, content), JSON_FIELD_NULLABLE },
        { "content_base64", JSON_FIELD_STRING, offsetof(McpCall, content_base64), JSON_FIELD_NULLABLE },
        { "create_parents", JSON_FIELD_BOOL, offsetof(McpCall, create_parents), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField file_edit_fields[] = {
        { "path", JSON_FIELD_STRING, offsetof(McpCall, path), JSON_FIELD_REQUIRED },
        { "old_string", JSON_FIELD_STRING, offsetof(McpCall, old_string), JSON_FIELD_REQUIRED },
        { "new_string", JSON_FIELD_STRING, offsetof(McpCall, new_string), JSON_FIELD_REQUIRED },
        { "replace_all", JSON_FIELD_BOOL, offsetof(McpCall, replace_all), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField list_dir_fields[] = {
        { "path", JSON_FIELD_STRING, offsetof(McpCall, path), JSON_FIELD_NULLABLE },
        { "max_entries", JSON_FIELD_UINT64, offsetof(McpCall, max_entries), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField glob_fields[] = {
        { "pattern", JSON_FIELD_STRING, offsetof(McpCall, pattern), JSON_FIELD_REQUIRED },
        { "path", JSON_FIELD_STRING, offsetof(McpCall, path), JSON_FIELD_NULLABLE },
        { "max_results", JSON_FIELD_UINT64, offsetof(McpCall, max_results), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField grep_fields[] = {
        { "pattern", JSON_FIELD_STRING, offsetof(McpCall, pattern), JSON_FIELD_REQUIRED },
        { "path", JSON_FIELD_STRING, offsetof(McpCall, path), JSON_FIELD_NULLABLE },
        { "glob", JSON_FIELD_STRING, offsetof(McpCall, glob), JSON_FIELD_NULLABLE },
        { "fixed", JSON_FIELD_BOOL, offsetof(McpCall, fixed), JSON_FIELD_NULLABLE },
        { "ignore_case", JSON_FIELD_BOOL, offsetof(McpCall, ignore_case), JSON_FIELD_NULLABLE },
        { "context", JSON_FIELD_UINT64, offsetof(McpCall, context), JSON_FIELD_NULLABLE },
        { "max_matches", JSON_FIELD_UINT64, offsetof(McpCall, max_results), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField multi_edit_fields[] = {
        { "path", JSON_FIELD_STRING, offsetof(McpCall, path), JSON_FIELD_REQUIRED },
        { "edits", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED }, /* mcp_edit_check() */
        {},
};
static const JsonField apply_patch_fields[] = {
        { "patch", JSON_FIELD_STRING, offsetof(McpCall, patch), JSON_FIELD_REQUIRED },
        {},
};
static const JsonField process_output_fields[] = {
        { "process", JSON_FIELD_UINT64, offsetof(McpCall, process), JSON_FIELD_REQUIRED },
        { "stdout_offset", JSON_FIELD_UINT64, offsetof(McpCall, stdout_offset), JSON_FIELD_NULLABLE },
        { "stderr_offset", JSON_FIELD_UINT64, offsetof(McpCall, stderr_offset), JSON_FIELD_NULLABLE },
        { "wait_ms", JSON_FIELD_UINT64, offsetof(McpCall, wait_ms), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField process_input_fields[] = {
        { "process", JSON_FIELD_UINT64, offsetof(McpCall, process), JSON_FIELD_REQUIRED },
        { "data", JSON_FIELD_STRING, offsetof(McpCall, data), JSON_FIELD_REQUIRED },
        { "eof", JSON_FIELD_BOOL, offsetof(McpCall, eof), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField process_signal_fields[] = {
        { "process", JSON_FIELD_UINT64, offsetof(McpCall, process), JSON_FIELD_REQUIRED },
        { "signal", JSON_FIELD_STRING, offsetof(McpCall, signal), JSON_FIELD_NULLABLE },
        {},
};
static const JsonField process_list_fields[] = {
        {},
};
static const JsonField *const arg_tables[_MCP_TOOL_MAX] = {
        [MCP_TOOL_PROCESS_START] = terminal_fields, /* the same arguments, run in the background */
        [MCP_TOOL_PROCESS_OUTPUT] = process_output_fields,
        [MCP_TOOL_PROCESS_INPUT] = process_input_fields,
        [MCP_TOOL_PROCESS_SIGNAL] = process_signal_fields,
        [MCP_TOOL_PROCESS_LIST] = process_list_fields,
        [MCP_TOOL_TERMINAL] = terminal_fields,
        [MCP_TOOL_FILE_READ] = file_read_fields,
        [MCP_TOOL_FILE_WRITE] = file_write_fields,
        [MCP_TOOL_FILE_EDIT] = file_edit_fields,
        [MCP_TOOL_LIST_DIR] = list_dir_fields,
        [MCP_TOOL_GLOB] = glob_fields,
        [MCP_TOOL_GREP] = grep_fields,
        [MCP_TOOL_MULTI_EDIT] = multi_edit_fields,
        [MCP_TOOL_APPLY_PATCH] = apply_patch_fields,
};

static int bad_arguments(VsError **err, const char *tool, const char *why) {
        return vs_error_set_kind(err, -EINVAL, "bad_arguments", "%s: %s", tool, why);
}

int mcp_decode_call(json_t *params, McpCall *ret, VsError **err) {
        static const JsonField fields[] = {
                { "name", JSON_FIELD_STRING, offsetof(CallParams, name), JSON_FIELD_REQUIRED },
                { "arguments", JSON_FIELD_OBJECT, offsetof(CallParams, arguments), JSON_FIELD_NULLABLE },
                { "_meta", JSON_FIELD_OBJECT, offsetof(CallParams, meta), JSON_FIELD_NULLABLE },
                {},
        };
        if (!json_is_object(params))
                return vs_error_set_kind(err, -EINVAL, "invalid_params", "tools/call needs params (an object)");
        CallParams p = {};
        _cleanup_(vs_error_freep) VsError *e = NULL;
        if (json_dispatch(params, fields, &p, &e) < 0)
                return vs_error_set_kind(err, -EINVAL, "invalid_params", "tools/call: %s", vs_error_message(e));
        McpTool tool = _MCP_TOOL_MAX;
        for (size_t t = 0; t < _MCP_TOOL_MAX; t++)
                if (streq(p.name, tool_names[t]))
                        tool = (McpTool)t;
        if (tool == _MCP_TOOL_MAX)
                return vs_error_set_kind(err, -ENOENT, api_error_name(API_ERROR_UNKNOWN_TOOL),
                                         "unknown tool '%s'; tools/list names the tools of this server", p.name);
        McpCall c = { .tool = tool };
        json_t *args = p.arguments;
        _cleanup_(json_decrefp) json_t *empty = NULL;
        if (!args && !(args = empty = json_object()))
                return -ENOMEM;
        int r = json_dispatch(args, arg_tables[tool], &c, &e);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return bad_arguments(err, p.name, vs_error_message(e));
        if (tool == MCP_TOOL_TERMINAL && c.timeout_s > MCP_TIMEOUT_MAX_S)
                return bad_arguments(err, p.name, "timeout is in seconds, at most 604800");
        if (tool == MCP_TOOL_PROCESS_START && c.timeout_s > 30u * 24u * 3600u)
                return bad_arguments(err, p.name, "timeout is in seconds, at most 2592000");
        if ((tool == MCP_TOOL_TERMINAL || tool == MCP_TOOL_PROCESS_START) && json_object_get(args, "timeout") &&
            c.timeout_s == 0)
                return bad_arguments(err, p.name, "timeout must be at least 1 second");
        if (tool == MCP_TOOL_PROCESS_OUTPUT && c.wait_ms > 60000)
                return bad_arguments(err, p.name, "wait_ms is at most 60000");
        if (mcp_tool_needs_daemon(tool) && tool != MCP_TOOL_PROCESS_START && tool != MCP_TOOL_PROCESS_LIST &&
            c.process == 0)
                return bad_arguments(err, p.name, "process must be an id that process_start returned");
        if (tool == MCP_TOOL_PROCESS_START && json_object_get(args, "max_output"))
                return bad_arguments(err, p.name, "max_output is for terminal; process_output reads what a background process keeps");
        if (tool == MCP_TOOL_TERMINAL) {
                if (!json_object_get(args, "max_output") || json_is_null(json_object_get(args, "max_output")))
                        c.max_output = MCP_OUTPUT_DEFAULT;
                if (c.max_output == 0 || c.max_output > MCP_READ_MAX_LIMIT)
                        return bad_arguments(err, p.name, "max_output must be 1..8388608 bytes");
        }
        if (tool == MCP_TOOL_FILE_READ) {
                if (!json_object_get(args, "limit") || json_is_null(json_object_get(args, "limit")))
                        c.limit = MCP_READ_DEFAULT_LIMIT;
                if (c.limit == 0 || c.limit > MCP_READ_MAX_LIMIT)
                        return bad_arguments(err, p.name, "limit must be 1..8388608 bytes");
                if (c.start_line && c.offset)
                        return bad_arguments(err, p.name, "give offset or start_line, not both");
        }
        /* An agent writing a new file means its directory too (the CLI's
         * write does the same). */
        if (tool == MCP_TOOL_FILE_WRITE && (!json_object_get(args, "create_parents") ||
                                            json_is_null(json_object_get(args, "create_parents"))))
                c.create_parents = true;
        if (tool == MCP_TOOL_FILE_WRITE && !c.content == !c.content_base64)
                return bad_arguments(err, p.name, "give the content once: content (text) or content_base64 (binary)");
        /* It travels in the request's header line (raw would need it
         * decoded here); the line's limit bounds it. */
        if (c.content_base64 && strlen(c.content_base64) > MCP_WRITE_BASE64_MAX)
                return bad_arguments(err, p.name, "content_base64 is at most 1 MiB of base64 (768 KiB decoded)");
        if (c.env) {
                const char *k;
                json_t *v;
                json_object_foreach(c.env, k, v) {
                        if (!*k || strchr(k, '='))
                                return bad_arguments(err, p.name, "env names must be non-empty and have no '='");
                }
        }
        if (tool == MCP_TOOL_FILE_EDIT && !c.old_string[0])
                return bad_arguments(err, p.name, "old_string must not be empty");
        const char *why = mcp_find_check(&c, args);
        if (!why)
                why = mcp_edit_check(&c, args);
        if (why)
                return bad_arguments(err, p.name, why);
        if (c.path && !c.path[0])
                return bad_arguments(err, p.name, "path must not be empty");
        if (c.content)
                c.content_len = json_string_length(json_object_get(args, "content"));
        /* The strings borrow from params, which the caller keeps. */
        *ret = c;
        return 0;
}

int mcp_call_request(const McpCall *c, const char *workspace, json_t **ret, const char **ret_raw,
                     size_t *ret_raw_len) {
        json_t *o = json_pack("{s:s,s:s}", "tool", api_tool_name(api_tools[c->tool]), "workspace", workspace);
        if (!o)
                return -ENOMEM;
        int r = 0;
        *ret_raw = NULL;
        *ret_raw_len = 0;
        switch (c->tool) {
        case MCP_TOOL_TERMINAL:
                r |= json_object_set_new(o, "command", json_string(c->command));
                if (c->cwd)
                        r |= json_object_set_new(o, "cwd", json_string(c->cwd));
                if (c->timeout_s)
                        r |= json_object_set_new(o, "timeout", json_integer((json_int_t)c->timeout_s));
                if (c->stdin_text)
                        r |= json_object_set_new(o, "stdin", json_string(c->stdin_text));
                if (c->env)
                        r |= json_object_set(o, "env", c->env);
                /* Per stream; the policy's max_output caps it (tool-call.c). */
                r |= json_object_set_new(o, "max_output", json_integer((json_int_t)c->max_output));
                r |= json_object_set_new(o, "binary", json_true());
                break;
        case MCP_TOOL_FILE_READ:
                r |= json_object_set_new(o, "path", json_string(c->path));
                r |= json_object_set_new(o, "offset", json_integer((json_int_t)c->offset));
                r |= json_object_set_new(o, "limit", json_integer((json_int_t)c->limit));
                if (c->start_line)
                        r |= json_object_set_new(o, "start_line", json_integer((json_int_t)c->start_line));
                if (c->max_lines)
                        r |= json_object_set_new(o, "max_lines", json_integer((json_int_t)c->max_lines));
                r |= json_object_set_new(o, "binary", json_true());
                r |= json_object_set_new(o, "text", json_true());
                break;
        case MCP_TOOL_FILE_WRITE:
                r |= json_object_set_new(o, "path", json_string(c->path));
                if (c->create_parents)
                        r |= json_object_set_new(o, "create_parents", json_true());
                if (c->if_sha256)
                        r |= json_object_set_new(o, "if_sha256", json_string(c->if_sha256));
                if (c->content_base64) {
                        r |= json_object_set_new(o, "content_base64", json_string(c->content_base64));
                        break;
                }
                /* Raw: a header line is limited to 1 MiB, content is not. */
                *ret_raw = c->content;
                *ret_raw_len = c->content_len;
                break;
        case MCP_TOOL_FILE_EDIT:
                r |= json_object_set_new(o, "path", json_string(c->path));
                r |= json_object_set_new(o, "old_string", json_string(c->old_string));
                r |= json_object_set_new(o, "new_string", json_string(c->new_string));
                r |= json_object_set_new(o, "replace_all", json_boolean(c->replace_all));
                break;
        case MCP_TOOL_PROCESS_START:
                r |= json_object_set_new(o, "command", json_string(c->command));
                if (c->cwd)
                        r |= json_object_set_new(o, "cwd", json_string(c->cwd));
                if (c->timeout_s)
                        r |= json_object_set_new(o, "timeout", json_integer((json_int_t)c->timeout_s));
                if (c->stdin_text)
                        r |= json_object_set_new(o, "stdin", json_string(c->stdin_text));
                if (c->env)
                        r |= json_object_set(o, "env", c->env);
                break;
        case MCP_TOOL_PROCESS_OUTPUT:
                r |= json_object_set_new(o, "process", json_integer((json_int_t)c->process));
                r |= json_object_set_new(o, "stdout_offset", json_integer((json_int_t)c->stdout_offset));
                r |= json_object_set_new(o, "stderr_offset", json_integer((json_int_t)c->stderr_offset));
                r |= json_object_set_new(o, "wait_ms", json_integer((json_int_t)c->wait_ms));
                break;
        case MCP_TOOL_PROCESS_INPUT:
                r |= json_object_set_new(o, "process", json_integer((json_int_t)c->process));
                r |= json_object_set_new(o, "data", json_string(c->data));
                r |= json_object_set_new(o, "eof", json_boolean(c->eof));
                break;
        case MCP_TOOL_PROCESS_SIGNAL:
                r |= json_object_set_new(o, "process", json_integer((json_int_t)c->process));
                r |= json_object_set_new(o, "signal", json_string(c->signal ? c->signal : "TERM"));
                break;
        case MCP_TOOL_PROCESS_LIST:
                break;
        case MCP_TOOL_LIST_DIR:
        case MCP_TOOL_GLOB:
        case MCP_TOOL_GREP:
                r |= mcp_find_request(c, o);
                break;
        default:
                r = -1;
        }
        if (r) {
                json_decref(o);
                return -ENOMEM;
        }
        *ret = o;
        return 0;
}

/* ---- results ---- */

json_t *mcp_tool_error(const char *code, const char *message) {
        _cleanup_strbuf_ StrBuf t = STRBUF_INIT;
        if (strbuf_appendf(&t, "error (%s): %s", code, message) < 0)
                return NULL;
        return json_pack("{s:[{s:s,s:s%}],s:b}", "content", "type", "text", "text", t.data, t.len, "isError", true);
}

int mcp_call_result(const McpCall *c, json_t *reply, const char *raw, size_t raw_len, const char *served_by,
                    bool structured, json_t **ret) {
        _cleanup_strbuf_ StrBuf t = STRBUF_INIT;
        bool ok = json_is_true(json_object_get(reply, "ok"));
        int r;
        if (ok)
                r = mcp_result_text(c, reply, raw ? raw : "", raw ? raw_len : 0, &t);
        else {
                json_t *e = json_object_get(reply, "error");
                const char *code = json_string_value(json_object_get(e, "code"));
                const char *msg = json_string_value(json_object_get(e, "message"));
                r = strbuf_appendf(&t, "%s (%s): %s", api_error_is(code, API_ERROR_DENIED) ? "refused" : "error", code ? code : "error",
                                   msg ? msg : "failed");
        }
        if (r < 0 || strbuf_appendc(&t, '\n') < 0 || mcp_append_status(&t, reply) < 0)
                return -ENOMEM;
        _cleanup_(json_decrefp) json_t *res = json_pack("{s:[{s:s,s:s%}],s:b}", "content", "type", "text", "text", t.data,
                                                        t.len, "isError", !ok);
        if (!res)
                return -ENOMEM;
        if (structured) {
                _cleanup_(json_decrefp) json_t *s = json_deep_copy(reply);
                if (!s || !json_is_object(s))
                        return -ENOMEM;
                json_object_del(s, "id");
                if (json_object_set_new(s, "served_by", json_string(served_by)) < 0)
                        return -ENOMEM;
                /* Revisions with structuredContent ask for its JSON text as well. */
                _cleanup_free_ char *text = json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS);
                json_t *blk = text ? json_pack("{s:s,s:s}", "type", "text", "text", text) : NULL;
                if (!blk || json_array_append_new(json_object_get(res, "content"), blk) < 0 ||
                    json_object_set(res, "structuredContent", s) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(res);
        return 0;
}
