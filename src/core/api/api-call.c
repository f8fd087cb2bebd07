/* SPDX-License-Identifier: MIT */
#include "api-call.h"

#include <stddef.h>
#include <stdlib.h>

#include "api-result.h"
#include "audit.h"
#include "host-run-scan.h"
#include "path-util.h"
#include "time-util.h"
#include "tools.h"

/* A text (JSON string) reply must fit one header line (JSONL_MAX_LINE):
 * without "binary", a read returns at most this much, with "eof": false
 * telling the client to go on from offset + length. */
#define TEXT_READ_MAX (256u * 1024u)

/* ---- terminal ---- */

static int terminal_prepare(VsApiCall *c, JsonlMsg *msg, VsError **err) {
        ApiRunArgs *a = c->args;
        int k = api_run_args_prepare(a, msg, err);
        if (k < 0)
                return k;
        c->binary = a->binary;
        c->target = api_run_target(a);
        return c->target ? 0 : -ENOMEM;
}

static void terminal_args(VsApiCall *c, VsToolArgs *ret) {
        ApiRunArgs *a = c->args;
        *ret = (VsToolArgs){
                .tool = VS_TOOL_TERMINAL,
                .argv = api_run_argv(a),
                .cwd = a->cwd,
                .env = a->envv,
                .timeout_ms = a->timeout_ms ? a->timeout_ms : a->timeout * 1000,
                .max_output = a->max_output,
                .data = a->stdin_data,
                .data_len = a->stdin_len,
        };
}

static void terminal_free(void *a) {
        api_run_args_done(a);
}

/* ---- file_read ---- */

static int read_prepare(VsApiCall *c, JsonlMsg *msg, VsError **err) {
        ApiReadArgs *a = c->args;
        if (a->start_line && json_integer_value(json_object_get(msg->obj, "offset")))
                return vs_error_set_kind(err, -EINVAL, api_error_name(API_ERROR_BAD_REQUEST),
                                         "give \"offset\" or \"start_line\", not both");
        c->binary = a->binary;
        c->target = json_string(a->path);
        return c->target ? 0 : -ENOMEM;
}

static void read_args(VsApiCall *c, VsToolArgs *ret) {
        ApiReadArgs *a = c->args;
        uint64_t limit = a->limit;
        if (!a->binary && (limit == 0 || limit > TEXT_READ_MAX))
                limit = TEXT_READ_MAX;
        /* Without binary the content is a JSON string: text, trimmed to
         * whole characters; with it, text only when asked. */
        *ret = (VsToolArgs){ .tool = VS_TOOL_FILE_READ, .path = a->path, .offset = a->offset, .limit = limit,
                             .start_line = a->start_line, .max_lines = a->max_lines, .text = a->text || !a->binary };
}

/* ---- file_write ---- */

static int write_prepare(VsApiCall *c, JsonlMsg *msg, VsError **err) {
        ApiWriteArgs *a = c->args;
        int k = api_write_args_prepare(a, msg->obj, msg, err);
        if (k < 0)
                return k;
        c->target = json_string(a->path);
        return c->target ? 0 : -ENOMEM;
}

static void write_args(VsApiCall *c, VsToolArgs *ret) {
        ApiWriteArgs *a = c->args;
        *ret = (VsToolArgs){
                .tool = VS_TOOL_FILE_WRITE,
                .path = a->path,
                .has_mode = a->has_mode,
                .mode = a->mode,
                .create_parents = a->create_parents,
                .if_sha256 = a->if_sha256,
                .data = a->data,
                .data_len = a->len,
        };
}

static void write_free(void *a) {
        free(((ApiWriteArgs *)a)->data);
}

/* ---- file_edit ---- */

static int edit_prepare(VsApiCall *c, JsonlMsg *msg, VsError **err) {
        ApiEditArgs *a = c->args;
        if (!a->old_string[0])
                return vs_error_set_kind(err, -EINVAL, api_error_name(API_ERROR_BAD_REQUEST), "\"old_string\" must not be empty");
        c->target = json_string(a->path);
        return c->target ? 0 : -ENOMEM;
}

/* Read, apply, write if unchanged, again when another writer got in
 * between: the core's (tool-call.h). */
static void edit_args(VsApiCall *c, VsToolArgs *ret) {
        ApiEditArgs *a = c->args;
        *ret = (VsToolArgs){ .tool = VS_TOOL_FILE_EDIT, .path = a->path, .old_text = a->old_string,
                             .new_text = a->new_string, .replace_all = a->replace_all };
}

/* ---- list_dir ---- */

static int list_prepare(VsApiCall *c, JsonlMsg *msg, VsError **err) {
        ApiListArgs *a = c->args;
        if (a->max_entries > API_LIST_MAX)
                return vs_error_set_kind(err, -EINVAL, api_error_name(API_ERROR_BAD_REQUEST),
                                         "\"max_entries\" is at most %u", API_LIST_MAX);
        if (a->path && !a->path[0])
                return vs_error_set_kind(err, -EINVAL, api_error_name(API_ERROR_BAD_REQUEST), "\"path\" must not be empty");
        c->target = json_string(a->path ? a->path : ".");
        return c->target ? 0 : -ENOMEM;
}

static void list_args(VsApiCall *c, VsToolArgs *ret) {
        ApiListArgs *a = c->args;
        *ret = (VsToolArgs){ .tool = VS_TOOL_LIST_DIR, .path = a->path ? a->path : ".",
                             .max_entries = a->max_entries ? a->max_entries : API_LIST_DEFAULT };
}

/* ---- glob, grep ---- */

static int find_prepare(VsApiCall *c, JsonlMsg *msg, VsError **err) {
        ApiFindArgs *a = c->args;
        const char *bad = !a->pattern[0]                                  ? "\"pattern\" must not be empty"
                          : a->path && !a->path[0]                        ? "\"path\" must not be empty"
                          : a->glob && !a->glob[0]                        ? "\"glob\" must not be empty"
                          : a->max_results > API_FIND_MAX_RESULTS         ? "\"max_results\" / \"max_matches\" is at most 5000"
                          : a->timeout_ms > API_FIND_MAX_TIMEOUT_MS       ? "\"timeout_ms\" is at most 60000"
                          : a->context > 10                               ? "\"context\" is at most 10 lines"
                                                                          : NULL;
        if (bad)
                return vs_error_set_kind(err, -EINVAL, api_error_name(API_ERROR_BAD_REQUEST), "%s", bad);
        c->target = json_string(a->pattern);
        return c->target ? 0 : -ENOMEM;
}

static void find_args(VsApiCall *c, VsToolArgs *ret) {
        ApiFindArgs *a = c->args;
        *ret = (VsToolArgs){ .tool = c->which == API_TOOL_GLOB ? VS_TOOL_GLOB : VS_TOOL_GREP,
                             .path = a->path ? a->path : ".",
                             .find = { .pattern = a->pattern, .glob = a->glob, .fixed = a->fixed,
                                       .ignore_case = a->ignore_case, .context = a->context,
                                       .max_results = a->max_results, .max_files = a->max_files,
                                       .max_bytes = a->max_bytes, .deadline_ms = a->timeout_ms } };
}

/* ---- the table ---- */

typedef struct Tool {
        const JsonField *table;
        size_t args_size;
        /* Checks and builds what the table decoded; *err's kind is the code. */
        int (*prepare)(VsApiCall *c, JsonlMsg *msg, VsError **err);
        /* The call for the core (tool-call.h), borrowing from c->args. */
        void (*args)(VsApiCall *c, VsToolArgs *ret);
        void (*free_args)(void *a);
        size_t path_offset; /* the const char * argument relative to the named directory (path or cwd) */
} Tool;

static const Tool tools[_API_TOOL_MAX] = {
        [API_TOOL_TERMINAL] = { api_run_table, sizeof(ApiRunArgs), terminal_prepare, terminal_args, terminal_free,
                                offsetof(ApiRunArgs, cwd) },
        [API_TOOL_FILE_READ] = { api_file_read_table, sizeof(ApiReadArgs), read_prepare, read_args, NULL,
                                 offsetof(ApiReadArgs, path) },
        [API_TOOL_FILE_WRITE] = { api_file_write_table, sizeof(ApiWriteArgs), write_prepare, write_args, write_free,
                                  offsetof(ApiWriteArgs, path) },
        [API_TOOL_FILE_EDIT] = { api_file_edit_table, sizeof(ApiEditArgs), edit_prepare, edit_args, NULL,
                                 offsetof(ApiEditArgs, path) },
        [API_TOOL_LIST_DIR] = { api_list_dir_table, sizeof(ApiListArgs), list_prepare, list_args, NULL,
                                offsetof(ApiListArgs, path) },
        [API_TOOL_GLOB] = { api_glob_table, sizeof(ApiFindArgs), find_prepare, find_args, NULL,
                            offsetof(ApiFindArgs, path) },
        [API_TOOL_GREP] = { api_grep_table, sizeof(ApiFindArgs), find_prepare, find_args, NULL,
                            offsetof(ApiFindArgs, path) },
};

bool api_call_serves(ApiTool which) {
        return which >= 0 && which < _API_TOOL_MAX && tools[which].table;
}

bool api_call_binary(const VsApiCall *c) {
        return c->binary;
}

int api_call_decode(VsApiCall *c, ApiTool which, JsonlMsg *msg, const char *dir, VsError **err) {
        if (!api_call_serves(which))
                return vs_error_set_kind(err, -EINVAL, api_error_name(API_ERROR_UNKNOWN_TOOL), "not a worker tool");
        const Tool *t = &tools[which];
        api_call_done(c);
        c->which = which;
        c->req = json_incref(msg->obj);
        if (!(c->args = calloc(1, t->args_size)))
                return -ENOMEM;
        int r = json_dispatch(msg->obj, t->table, c->args, err);
        if (r < 0) {
                json_dispatch_done(t->table, c->args);
                free(TAKE_PTR(c->args));
                return r;
        }
        /* A subdirectory was named: relative paths and the cwd start there
         * (the worker resolves relative paths against the workspace root). */
        const char **rel = (const char **)((char *)c->args + t->path_offset);
        if (dir && (!*rel || (*rel)[0] != '/')) {
                if (!(c->dir_path = path_join(dir, *rel ? *rel : ".")))
                        return -ENOMEM;
                *rel = c->dir_path;
        }
        if ((r = t->prepare(c, msg, err)) < 0)
                return r;
        VsToolArgs ta;
        t->args(c, &ta);
        tool_call_init(&c->tc, &ta, NULL);
        return 0;
}

void api_call_done(VsApiCall *c) {
        if (c->args && api_call_serves(c->which)) {
                const Tool *t = &tools[c->which];
                if (t->free_args)
                        t->free_args(c->args);
                json_dispatch_done(t->table, c->args);
        }
        free(c->args);
        json_decref(c->req);
        free(c->dir_path);
        json_decref(c->target);
        tool_call_done(&c->tc);
        *c = VS_API_CALL_INIT;
}

json_t *api_call_refuse(const char *workspace, const char *tool, const char *code, const char *message,
                        uint64_t start_us) {
        json_t *o = api_result_close(NULL, code, message, false, NULL, NULL, NULL);
        if (o)
                audit_result(workspace, tool ? tool : "?", NULL, o, (now_us() - start_us) / 1000);
        return o;
}

/* The call over the session, its result closed; *ret_target: what the
 * audit names. */
static int run_call(const VsApiSession *s, JsonlMsg *msg, const char *dir, JsonlMsg *ret, json_t **ret_target) {
        _cleanup_(api_call_done) VsApiCall call = VS_API_CALL_INIT;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ApiTool which = api_tool_from_name(json_string_value(json_object_get(msg->obj, "tool")));
        int r = api_call_decode(&call, which, msg, dir, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                ret->obj = api_result_close(NULL, vs_error_kind(err) ?: api_error_name(API_ERROR_BAD_REQUEST),
                                            vs_error_message(err), false, NULL, NULL, NULL);
                return ret->obj ? 0 : -ENOMEM;
        }
        tool_call_ceilings(&call.tc, s->policy);
        json_t *result = NULL;
        JsonlMsg m = JSONL_MSG_INIT;
        s->session->no_sweep_per_call = s->one_call;
        r = tool_call_run(s->session, &call.tc, s->cancel_fd > 0 ? s->cancel_fd : -EBADF, &result, &m, &err);
        if (s->one_call && which != API_TOOL_FILE_READ) {
                session_stop(s->session);
                if (tool_call_sweep(s->session, r >= 0 ? result : NULL) < 0)
                        r = -ENOMEM;
        }
        const char *code = r < 0 && r != -ENOMEM ? vs_error_kind(err) ?: api_error_name(API_ERROR_WORKER_CRASHED) : NULL;
        if (r < 0) {
                json_decref(TAKE_PTR(result));
                jsonl_msg_done(&m); /* a failure carries no payload */
        }
        if (r == -ENOMEM || !(result = result ? result : json_object()) ||
            host_run_report(s->policy, s->host_run, result) < 0 ||
            !(result = api_result_close(result, code, vs_error_message(err), s->session->sandboxed, s->pending, NULL,
                                        tools_embedded_sandbox(s->session, s->policy, s->generation)))) {
                json_decref(result);
                jsonl_msg_done(&m);
                return -ENOMEM;
        }
        json_decref(m.obj);
        m.obj = result;
        *ret = m;
        *ret_target = json_incref(call.target);
        return 0;
}

int api_call_run(const VsApiSession *s, JsonlMsg *msg, const char *dir, uint64_t start_us, JsonlMsg *ret) {
        _cleanup_(json_decrefp) json_t *target = NULL;
        *ret = (JsonlMsg)JSONL_MSG_INIT;
        int r = run_call(s, msg, dir, ret, &target);
        if (r < 0)
                return r;
        const char *tool = json_string_value(json_object_get(msg->obj, "tool"));
        audit_result(s->policy->workspace, tool ? tool : "?", target, ret->obj, (now_us() - start_us) / 1000);
        return 0;
}
