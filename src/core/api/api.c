/* SPDX-License-Identifier: MIT */
/* The daemon API's names and argument tables (api.h). */
#include <string.h>

#include "api.h"
#include "base64.h"
#include "macro.h"
#include "strv.h"

static const char *const tool_names[_API_TOOL_MAX] = {
        [API_TOOL_TERMINAL] = "terminal",
        [API_TOOL_FILE_READ] = "file_read",
        [API_TOOL_FILE_WRITE] = "file_write",
        [API_TOOL_FILE_EDIT] = "file_edit",
        [API_TOOL_TERMINAL_OPEN] = "terminal_open",
        [API_TOOL_TERMINAL_INPUT] = "terminal_input",
        [API_TOOL_TERMINAL_RESIZE] = "terminal_resize",
        [API_TOOL_TERMINAL_CLOSE] = "terminal_close",
        [API_TOOL_PROCESS_START] = "process_start",
        [API_TOOL_PROCESS_OUTPUT] = "process_output",
        [API_TOOL_PROCESS_INPUT] = "process_input",
        [API_TOOL_PROCESS_SIGNAL] = "process_signal",
        [API_TOOL_PROCESS_LIST] = "process_list",
        [API_TOOL_POLICY_ALLOW] = "policy_allow",
        [API_TOOL_STATUS] = "status",
        [API_TOOL_METRICS] = "metrics",
        [API_TOOL_CANCEL] = "cancel",
        [API_TOOL_LIST_DIR] = "list_dir",
        [API_TOOL_GLOB] = "glob",
        [API_TOOL_GREP] = "grep",
        [API_TOOL_SECRET_SET] = "secret_set",
        [API_TOOL_SECRET_LIST] = "secret_list",
        [API_TOOL_SECRET_DELETE] = "secret_delete",
};

const char *api_tool_name(ApiTool t) {
        return t >= 0 && t < _API_TOOL_MAX ? tool_names[t] : NULL;
}

ApiTool api_tool_from_name(const char *s) {
        for (int i = 0; s && i < _API_TOOL_MAX; i++)
                if (streq(tool_names[i], s))
                        return (ApiTool)i;
        return _API_TOOL_INVALID;
}

static const char *const error_names[_API_ERROR_MAX] = {
        [API_ERROR_BAD_REQUEST] = "bad_request",
        [API_ERROR_REQUEST_TOO_LARGE] = "request_too_large",
        [API_ERROR_FORBIDDEN] = "forbidden",
        [API_ERROR_BUSY] = "busy",
        [API_ERROR_UNKNOWN_TOOL] = "unknown_tool",
        [API_ERROR_WORKSPACE_NOT_FOUND] = "workspace_not_found",
        [API_ERROR_CONFIG_INVALID] = "config_invalid",
        [API_ERROR_SANDBOX_REQUIRED] = "sandbox_required",
        [API_ERROR_SANDBOX_UNAVAILABLE] = "sandbox_unavailable",
        [API_ERROR_WORKER_CRASHED] = "worker_crashed",
        [API_ERROR_WORKER_RECYCLED] = "worker_recycled",
        [API_ERROR_CONFLICT] = "conflict",
        [API_ERROR_PROCESS_ENDED] = "process_ended",
        [API_ERROR_DAEMON_REQUIRED] = "daemon_required",
        [API_ERROR_EDIT_NOT_FOUND] = "edit_not_found",
        [API_ERROR_EDIT_NOT_UNIQUE] = "edit_not_unique",
        [API_ERROR_SHUTTING_DOWN] = "shutting_down",
        [API_ERROR_INTERNAL] = "internal",
        [API_ERROR_NETWORK_DENIED] = "network_denied",
        [API_ERROR_INTERRUPTED] = "interrupted",
        [API_ERROR_UNKNOWN_OP] = "unknown_op",
        [API_ERROR_NOT_READY] = "not_ready",
        [API_ERROR_DENIED] = "denied",
        [API_ERROR_NOT_FOUND] = "not_found",
        [API_ERROR_EXISTS] = "exists",
        [API_ERROR_PRECONDITION_FAILED] = "precondition_failed",
        [API_ERROR_TOO_LARGE] = "too_large",
        [API_ERROR_IO] = "io",
        [API_ERROR_CANCELLED] = "cancelled",
        [API_ERROR_PROCESS_LIMIT] = "process_limit",
};

const char *api_error_name(ApiError e) {
        return e > API_OK && e < _API_ERROR_MAX ? error_names[e] : NULL;
}

ApiError api_error_from_name(const char *s) {
        for (int i = API_OK + 1; s && i < _API_ERROR_MAX; i++)
                if (streq(error_names[i], s))
                        return (ApiError)i;
        return _API_ERROR_INVALID;
}

ApiError api_error_from_kind(const char *kind, ApiError fallback) {
        if (!kind)
                return fallback;
        /* config_locate's word for a workspace path that is not a
         * directory: the API has one code for a workspace it cannot use. */
        if (streq(kind, "workspace_invalid"))
                return API_ERROR_WORKSPACE_NOT_FOUND;
        ApiError e = api_error_from_name(kind);
        return e < 0 ? API_ERROR_IO : e;
}

bool api_error_is(const char *code, ApiError e) {
        return code && api_error_name(e) && streq(code, api_error_name(e));
}

json_t *api_error_json(ApiError e, const char *message) {
        const char *name = api_error_name(e) ? api_error_name(e) : api_error_name(API_ERROR_INTERNAL);
        return json_pack("{s:s,s:s}", "code", name, "message", message ? message : name);
}

const char *api_error_outcome(ApiError e) {
        switch (e) {
        case API_OK:
                return "ok";
        case API_ERROR_CONFIG_INVALID:
        case API_ERROR_SANDBOX_UNAVAILABLE:
        case API_ERROR_FORBIDDEN:
        case API_ERROR_SANDBOX_REQUIRED:
                return "refused";
        case API_ERROR_DENIED:
                return "denied";
        default:
                return "error";
        }
}

/* ---- tool arguments ---- */

/* Every request's envelope: read by the dispatcher, not the tool. */
#define ENVELOPE                                                                                                      \
        { "id", JSON_FIELD_IGNORE, 0, 0, NULL }, { "tool", JSON_FIELD_IGNORE, 0, 0, NULL },                          \
                { "workspace", JSON_FIELD_IGNORE, 0, 0, NULL },                                                       \
                { "require_sandbox", JSON_FIELD_IGNORE, 0, 0, NULL },                                                 \
                { "detach", JSON_FIELD_IGNORE, 0, 0, NULL }

const JsonField api_run_table[] = {
        ENVELOPE,
        { "command", JSON_FIELD_STRING, offsetof(ApiRunArgs, command), 0, NULL },
        { "argv", JSON_FIELD_STRV, offsetof(ApiRunArgs, argv), 0, NULL },
        { "cwd", JSON_FIELD_STRING, offsetof(ApiRunArgs, cwd), JSON_FIELD_NULLABLE, NULL },
        { "env", JSON_FIELD_STRMAP, offsetof(ApiRunArgs, env), JSON_FIELD_NULLABLE, NULL },
        { "stdin", JSON_FIELD_STRING, offsetof(ApiRunArgs, stdin_text), JSON_FIELD_NULLABLE, NULL },
        { "stdin_base64", JSON_FIELD_STRING, offsetof(ApiRunArgs, stdin_base64), JSON_FIELD_NULLABLE, NULL },
        { "timeout", JSON_FIELD_UINT64, offsetof(ApiRunArgs, timeout), JSON_FIELD_NULLABLE, NULL },
        /* terminal only (api_run_terminal_only) */
        { "timeout_ms", JSON_FIELD_UINT64, offsetof(ApiRunArgs, timeout_ms), JSON_FIELD_NULLABLE, NULL },
        { "max_output", JSON_FIELD_UINT64, offsetof(ApiRunArgs, max_output), JSON_FIELD_NULLABLE, NULL },
        { "binary", JSON_FIELD_BOOL, offsetof(ApiRunArgs, binary), 0, NULL },
        {},
};

const char *api_run_terminal_only(json_t *obj) {
        static const char *const only[] = { "timeout_ms", "max_output", "binary" };
        for (size_t i = 0; i < ELEMENTSOF(only); i++)
                if (json_object_get(obj, only[i]))
                        return only[i];
        return NULL;
}

static int bad(VsError **err, const char *why) {
        return vs_error_set_kind(err, -EINVAL, "bad_request", "%s", why);
}

int api_run_args_prepare(ApiRunArgs *a, JsonlMsg *msg, VsError **err) {
        if (!!a->command == !!a->argv || (a->argv && !a->argv[0]))
                return bad(err, "give exactly one of \"command\" (a shell command line) or \"argv\" (non-empty)");
        if (a->env) {
                const char *k;
                json_t *v;
                json_object_foreach(a->env, k, v) {
                        if (!*k || strchr(k, '='))
                                return bad(err, "\"env\" keys must be non-empty and have no '='");
                        if (strv_extendf(&a->envv, "%s=%s", k, json_string_value(v)) < 0)
                                return -ENOMEM;
                }
        }
        if (!!a->stdin_text + !!a->stdin_base64 + msg->has_raw > 1)
                return bad(err, "give stdin once: \"stdin\", \"stdin_base64\" or a raw payload");
        if (a->stdin_text) {
                a->stdin_len = strlen(a->stdin_text);
                if (!(a->stdin_data = strdup(a->stdin_text)))
                        return -ENOMEM;
        } else if (a->stdin_base64) {
                int r = base64_decode_alloc(a->stdin_base64, strlen(a->stdin_base64), &a->stdin_data, &a->stdin_len);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return bad(err, "\"stdin_base64\" is not valid base64");
        } else if (msg->has_raw && !(a->stdin_data = jsonl_msg_steal_raw(msg, &a->stdin_len)))
                return -ENOMEM;
        a->sh[0] = (char *)"/bin/sh";
        a->sh[1] = (char *)"-c";
        a->sh[2] = (char *)a->command;
        a->sh[3] = NULL;
        return 0;
}

char **api_run_argv(ApiRunArgs *a) {
        return a->command ? a->sh : a->argv;
}

void api_run_args_done(ApiRunArgs *a) {
        strv_free(a->envv);
        a->envv = NULL;
        free(a->stdin_data);
        a->stdin_data = NULL;
}

json_t *api_run_target(const ApiRunArgs *a) {
        if (a->command)
                return json_string(a->command);
        json_t *t = json_array();
        for (char **s = a->argv; t && s && *s; s++)
                if (json_array_append_new(t, json_string(*s)) < 0)
                        return json_decref(t), NULL;
        return t;
}

const JsonField api_terminal_open_table[] = {
        ENVELOPE,
        { "cols", JSON_FIELD_UINT64, offsetof(ApiTerminalOpenArgs, cols), JSON_FIELD_NULLABLE, NULL },
        { "rows", JSON_FIELD_UINT64, offsetof(ApiTerminalOpenArgs, rows), JSON_FIELD_NULLABLE, NULL },
        { "argv", JSON_FIELD_STRV, offsetof(ApiTerminalOpenArgs, argv), JSON_FIELD_NULLABLE, NULL },
        { "env", JSON_FIELD_STRMAP, offsetof(ApiTerminalOpenArgs, env), JSON_FIELD_NULLABLE, NULL },
        { "term", JSON_FIELD_STRING, offsetof(ApiTerminalOpenArgs, term), JSON_FIELD_NULLABLE, NULL },
        {},
};

const JsonField api_file_read_table[] = {
        ENVELOPE,
        { "path", JSON_FIELD_STRING, offsetof(ApiReadArgs, path), JSON_FIELD_REQUIRED, NULL },
        { "offset", JSON_FIELD_UINT64, offsetof(ApiReadArgs, offset), JSON_FIELD_NULLABLE, NULL },
        { "limit", JSON_FIELD_UINT64, offsetof(ApiReadArgs, limit), JSON_FIELD_NULLABLE, NULL },
        { "start_line", JSON_FIELD_UINT64, offsetof(ApiReadArgs, start_line), JSON_FIELD_NULLABLE, NULL },
        { "max_lines", JSON_FIELD_UINT64, offsetof(ApiReadArgs, max_lines), JSON_FIELD_NULLABLE, NULL },
        { "binary", JSON_FIELD_BOOL, offsetof(ApiReadArgs, binary), 0, NULL },
        { "text", JSON_FIELD_BOOL, offsetof(ApiReadArgs, text), 0, NULL },
        {},
};

const JsonField api_file_write_table[] = {
        ENVELOPE,
        { "path", JSON_FIELD_STRING, offsetof(ApiWriteArgs, path), JSON_FIELD_REQUIRED, NULL },
        { "content", JSON_FIELD_STRING, offsetof(ApiWriteArgs, content), JSON_FIELD_NULLABLE, NULL },
        { "content_base64", JSON_FIELD_STRING, offsetof(ApiWriteArgs, content_base64), JSON_FIELD_NULLABLE, NULL },
        { "mode", JSON_FIELD_UINT64, offsetof(ApiWriteArgs, mode), JSON_FIELD_NULLABLE, NULL },
        { "create_parents", JSON_FIELD_BOOL, offsetof(ApiWriteArgs, create_parents), 0, NULL },
        { "if_sha256", JSON_FIELD_STRING, offsetof(ApiWriteArgs, if_sha256), JSON_FIELD_NULLABLE, NULL },
        {},
};

int api_write_args_prepare(ApiWriteArgs *a, json_t *obj, JsonlMsg *msg, VsError **err) {
        a->has_mode = json_object_get(obj, "mode") && !json_is_null(json_object_get(obj, "mode"));
        if (a->has_mode && a->mode > 07777)
                return bad(err, "\"mode\" takes permission bits (at most 07777)");
        if (!!a->content + !!a->content_base64 + msg->has_raw != 1)
                return bad(err, "give the content once: \"content\", \"content_base64\" or a raw payload");
        if (a->content) {
                a->len = strlen(a->content);
                if (!(a->data = strdup(a->content)))
                        return -ENOMEM;
        } else if (a->content_base64) {
                int r = base64_decode_alloc(a->content_base64, strlen(a->content_base64), &a->data, &a->len);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return bad(err, "\"content_base64\" is not valid base64");
        } else if (!(a->data = jsonl_msg_steal_raw(msg, &a->len)))
                return -ENOMEM;
        return 0;
}

const JsonField api_file_edit_table[] = {
        ENVELOPE,
        { "path", JSON_FIELD_STRING, offsetof(ApiEditArgs, path), JSON_FIELD_REQUIRED, NULL },
        { "old_string", JSON_FIELD_STRING, offsetof(ApiEditArgs, old_string), JSON_FIELD_REQUIRED, NULL },
        { "new_string", JSON_FIELD_STRING, offsetof(ApiEditArgs, new_string), JSON_FIELD_REQUIRED, NULL },
        { "replace_all", JSON_FIELD_BOOL, offsetof(ApiEditArgs, replace_all), 0, NULL },
        {},
};

const JsonField api_list_dir_table[] = {
        ENVELOPE,
        { "path", JSON_FIELD_STRING, offsetof(ApiListArgs, path), JSON_FIELD_NULLABLE, NULL },
        { "max_entries", JSON_FIELD_UINT64, offsetof(ApiListArgs, max_entries), JSON_FIELD_NULLABLE, NULL },
        {},
};

#define FIND_COMMON                                                                                                    \
        { "path", JSON_FIELD_STRING, offsetof(ApiFindArgs, path), JSON_FIELD_NULLABLE, NULL },                        \
                { "pattern", JSON_FIELD_STRING, offsetof(ApiFindArgs, pattern), JSON_FIELD_REQUIRED, NULL },          \
                { "max_files", JSON_FIELD_UINT64, offsetof(ApiFindArgs, max_files), JSON_FIELD_NULLABLE, NULL },      \
                { "timeout_ms", JSON_FIELD_UINT64, offsetof(ApiFindArgs, timeout_ms), JSON_FIELD_NULLABLE, NULL }

const JsonField api_glob_table[] = {
        ENVELOPE,
        FIND_COMMON,
        { "max_results", JSON_FIELD_UINT64, offsetof(ApiFindArgs, max_results), JSON_FIELD_NULLABLE, NULL },
        {},
};

const JsonField api_grep_table[] = {
        ENVELOPE,
        FIND_COMMON,
        { "glob", JSON_FIELD_STRING, offsetof(ApiFindArgs, glob), JSON_FIELD_NULLABLE, NULL },
        { "fixed", JSON_FIELD_BOOL, offsetof(ApiFindArgs, fixed), JSON_FIELD_NULLABLE, NULL },
        { "ignore_case", JSON_FIELD_BOOL, offsetof(ApiFindArgs, ignore_case), JSON_FIELD_NULLABLE, NULL },
        { "context", JSON_FIELD_UINT64, offsetof(ApiFindArgs, context), JSON_FIELD_NULLABLE, NULL },
        { "max_matches", JSON_FIELD_UINT64, offsetof(ApiFindArgs, max_results), JSON_FIELD_NULLABLE, NULL },
        { "max_bytes", JSON_FIELD_UINT64, offsetof(ApiFindArgs, max_bytes), JSON_FIELD_NULLABLE, NULL },
        {},
};

/* status names no workspace of its own unless asked: "workspace" is its
 * argument, not the envelope's. */
const JsonField api_status_table[] = {
        { "id", JSON_FIELD_IGNORE, 0, 0, NULL },
        { "tool", JSON_FIELD_IGNORE, 0, 0, NULL },
        { "workspace", JSON_FIELD_STRING, offsetof(ApiStatusArgs, workspace), JSON_FIELD_NULLABLE, NULL },
        { "offset", JSON_FIELD_UINT64, offsetof(ApiStatusArgs, offset), JSON_FIELD_NULLABLE, NULL },
        { "after", JSON_FIELD_STRING, offsetof(ApiStatusArgs, after), JSON_FIELD_NULLABLE, NULL },
        { "limit", JSON_FIELD_UINT64, offsetof(ApiStatusArgs, limit), JSON_FIELD_NULLABLE, NULL },
        {},
};

/* cancel: "target" is the id of a call in flight on the same connection,
 * an integer or a string (the daemon checks which). */
const JsonField api_cancel_table[] = {
        ENVELOPE,
        { "target", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED, NULL },
        {},
};

const JsonField api_secret_set_table[] = {
        ENVELOPE,
        { "name", JSON_FIELD_STRING, offsetof(ApiSecretArgs, name), JSON_FIELD_REQUIRED | JSON_FIELD_NONEMPTY, NULL },
        { "hosts", JSON_FIELD_STRV, offsetof(ApiSecretArgs, hosts), JSON_FIELD_REQUIRED | JSON_FIELD_NONEMPTY, NULL },
        { "headers", JSON_FIELD_STRV, offsetof(ApiSecretArgs, headers), 0, NULL },
        { "value", JSON_FIELD_STRING, offsetof(ApiSecretArgs, value), JSON_FIELD_REQUIRED | JSON_FIELD_NONEMPTY, NULL },
        {},
};

const JsonField api_secret_delete_table[] = {
        ENVELOPE,
        { "name", JSON_FIELD_STRING, offsetof(ApiSecretArgs, name), JSON_FIELD_REQUIRED | JSON_FIELD_NONEMPTY, NULL },
        {},
};

const JsonField api_no_args_table[] = {
        ENVELOPE,
        {},
};

const JsonField api_process_output_table[] = {
        ENVELOPE,
        { "process", JSON_FIELD_UINT64, offsetof(ApiOutputArgs, process), JSON_FIELD_REQUIRED, NULL },
        { "stdout_offset", JSON_FIELD_UINT64, offsetof(ApiOutputArgs, stdout_offset), JSON_FIELD_NULLABLE, NULL },
        { "stderr_offset", JSON_FIELD_UINT64, offsetof(ApiOutputArgs, stderr_offset), JSON_FIELD_NULLABLE, NULL },
        { "wait_ms", JSON_FIELD_UINT64, offsetof(ApiOutputArgs, wait_ms), JSON_FIELD_NULLABLE, NULL },
        { "max_bytes", JSON_FIELD_UINT64, offsetof(ApiOutputArgs, max_bytes), JSON_FIELD_NULLABLE, NULL },
        {},
};

const JsonField api_process_input_table[] = {
        ENVELOPE,
        { "process", JSON_FIELD_UINT64, offsetof(ApiControlArgs, process), JSON_FIELD_REQUIRED, NULL },
        { "data", JSON_FIELD_STRING, offsetof(ApiControlArgs, data), JSON_FIELD_NULLABLE, NULL },
        { "eof", JSON_FIELD_BOOL, offsetof(ApiControlArgs, eof), 0, NULL },
        {},
};

const JsonField api_process_signal_table[] = {
        ENVELOPE,
        { "process", JSON_FIELD_UINT64, offsetof(ApiControlArgs, process), JSON_FIELD_REQUIRED, NULL },
        { "signal", JSON_FIELD_IGNORE, 0, 0, NULL }, /* a number or a name: read by the caller */
        {},
};
