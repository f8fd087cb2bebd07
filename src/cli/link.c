/* SPDX-License-Identifier: MIT */
/* Daemon API calls, to vectora-sandboxd or embedded. The embedded side
 * maps the request onto the core's tool call (tool-call.h), driven over
 * one VsSession. */
#include <limits.h>
#include <string.h>

#include "client.h"
#include "fd-util.h"
#include "host-run-scan.h"
#include "json-util.h"
#include "link.h"
#include "protocol.h"
#include "strv.h"
#include "tool-call.h"
#include "tools.h"

struct CliLink {
        const CliArgs *args;
        char *workspace;     /* absolute; NULL when -w does not exist */
        int workspace_errno;
        /* daemon */
        const char *socket;
        int fd;
        JsonlReader *reader;
        uint64_t next_id;
        /* embedded */
        VsPolicy *policy;
        VsSession *session;
        char *pending;       /* a loosening waiting for `vectora-sandbox allow`, or NULL */
        char *open_code;     /* the embedded worker could not start: why, for every call */
        char *open_message;
        VsHostRunScan *host_run; /* the files the host runs later as the last call left them */
};

int cli_link_new(const CliArgs *a, CliLink **ret) {
        CliLink *l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        l->args = a;
        l->fd = -EBADF;
        l->socket = cli_socket(a);
        l->workspace = cli_workspace_abs(a);
        l->workspace_errno = l->workspace ? 0 : errno;
        *ret = l;
        return 0;
}

void cli_link_free(CliLink *l) {
        if (!l)
                return;
        safe_close(l->fd);
        jsonl_reader_free(l->reader);
        session_end(l->session);
        policy_free(l->policy);
        host_run_scan_free(l->host_run);
        free(l->pending);
        free(l->workspace);
        free(l->open_code);
        free(l->open_message);
        free(l);
}

bool cli_link_daemon(const CliLink *l) {
        return l->socket != NULL;
}

/* A failed result, shaped like the daemon's. */
static int fail_result(JsonlMsg *ret, const char *code, const char *message) {
        json_t *o = json_pack("{s:b,s:{s:s,s:s},s:b}", "ok", 0, "error", "code", code, "message", message, "sandboxed", 0);
        if (!o)
                return -ENOMEM;
        *ret = (JsonlMsg)JSONL_MSG_INIT;
        ret->obj = o;
        return 0;
}

/* ---- daemon ---- */

static int daemon_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        if (l->fd < 0) {
                _cleanup_free_ char *why = NULL;
                int r = client_connect(l->socket, &l->fd, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail_result(ret, "daemon_unreachable", why);
                if (jsonl_reader_new(&l->reader) < 0)
                        return -ENOMEM;
        }
        json_object_set_new(req, "id", json_integer((json_int_t)++l->next_id));
        int r = client_send(l->fd, req, raw, raw_len);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                char msg[512];
                snprintf(msg, sizeof msg, "sending to vectora-sandboxd at %s: %s", l->socket, strerror(-r));
                return fail_result(ret, "daemon_unreachable", msg);
        }
        r = client_recv(l->fd, l->reader, ret);
        if (r < 0) {
                /* The request was sent: the daemon may have started it
                 * before it ended. Never "nothing ran" (125). */
                char msg[512];
                snprintf(msg, sizeof msg,
                         "vectora-sandboxd at %s ended while the call was in flight (%s); the command may have run: "
                         "check its effects before running it again",
                         l->socket, r == -EPIPE || r == 0 ? "connection closed" : strerror(-r));
                return fail_result(ret, "daemon_lost", msg);
        }
        json_object_del(ret->obj, "id");
        return 0;
}

/* ---- embedded ---- */

static int embedded_open(CliLink *l) {
        if (l->session || l->open_code)
                return 0;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = tools_open(l->workspace ? l->workspace : (l->args->val[OPT_WORKSPACE] ?: "."),
                           l->args->require_sandbox, &l->policy, &l->session, &l->pending, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                l->open_code = strdup(vs_error_kind(err) ? vs_error_kind(err) : api_error_name(API_ERROR_SANDBOX_UNAVAILABLE));
                l->open_message = strdup(vs_error_message(err));
                if (!l->open_code || !l->open_message)
                        return -ENOMEM;
                return 0;
        }
        /* After the launch: its placeholders are the host's, not the call's. */
        r = host_run_scan(l->policy, &l->host_run);
        return r == -ENOMEM ? r : 0;
}

/* What the call wrote of the files the host runs later, as the daemon's
 * watch reports it (host-run-scan.h); [] when nothing or unsandboxed. */
static int embedded_host_run(CliLink *l, json_t *result) {
        _cleanup_(host_run_scan_freep) VsHostRunScan *now = NULL;
        int r = l->host_run ? host_run_scan(l->policy, &now) : 0;
        if (r < 0)
                return r;
        if (host_run_files_add(result, now ? host_run_scan_diff(l->host_run, now) : json_array()) < 0)
                return -ENOMEM;
        if (now) {
                host_run_scan_free(l->host_run);
                l->host_run = TAKE_PTR(now);
        }
        return 0;
}

static json_t *embedded_sandbox(CliLink *l) {
        _cleanup_strv_free_ char **layers = NULL;
        if (session_layers(l->session, &layers) < 0)
                return NULL;
        json_t *o = json_pack("{s:s,s:s,s:o,s:o}", "backend",
                              l->session->sandboxed ? vs_backend_name(l->policy->backend) : "none", "state",
                              l->session->sandboxed ? "sandboxed" : "unsandboxed", "layers", json_strv(layers),
                              "degraded", json_strv(l->session->degraded));
        return o;
}

/* The call's worker requests through the core's tool call (tool-call.h):
 * the policy's limits as ceilings, file_edit's retry on a concurrent
 * write. */
static int embedded_run(CliLink *l, const VsToolArgs *args, JsonlMsg *ret) {
        VsToolCall c;
        tool_call_init(&c, args, l->policy);
        json_t *result = NULL;
        JsonlMsg m = JSONL_MSG_INIT;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        /* One call per process: its jail ends with it, then what it made
         * that git takes as a repository is put aside (git-scan.h) and
         * listed in the result. */
        l->session->no_sweep_per_call = true;
        int r = tool_call_run(l->session, &c, &result, &m, &err);
        tool_call_done(&c);
        /* A read makes nothing, and its content may still be on its way
         * from the worker (a passed descriptor): its jail ends with the
         * session (session_end() sweeps then). */
        _cleanup_strv_free_ char **moved = NULL;
        if (args->tool != VS_TOOL_FILE_READ) {
                session_stop(l->session);
                if (session_git_sweep(l->session, &moved) > 0 && r >= 0 && result &&
                    json_object_set_new(result, "host_run_files", json_strv(moved)) < 0)
                        r = -ENOMEM;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if ((r = fail_result(ret, vs_error_kind(err) ?: api_error_name(API_ERROR_WORKER_CRASHED),
                                     vs_error_message(err))) < 0)
                        return r;
                return embedded_host_run(l, ret->obj);
        }
        json_decref(m.obj);
        m.obj = result;
        if (json_object_set_new(result, "ok", json_true()) < 0 || embedded_host_run(l, result) < 0) {
                jsonl_msg_done(&m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

static int embedded_terminal(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        const char *command = json_string_value(json_object_get(req, "command"));
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        if (command) {
                if (strv_extend(&argv, "/bin/sh") < 0 || strv_extend(&argv, "-c") < 0 || strv_extend(&argv, command) < 0)
                        return -ENOMEM;
        } else {
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(req, "argv"), i, v) if (strv_extend(&argv, json_string_value(v)) < 0) return -ENOMEM;
        }
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(req, "env"), k, v) if (strv_extendf(&env, "%s=%s", k, json_string_value(v)) < 0) return -ENOMEM;
        /* Relative to the directory asked about, which may lie below the
         * workspace root (the nearest vectora.toml above it governs). */
        _cleanup_free_ char *cwd = NULL;
        VsToolArgs a = {
                .tool = VS_TOOL_TERMINAL,
                .argv = argv,
                .cwd = tools_in_dir(l->workspace, json_string_value(json_object_get(req, "cwd")), &cwd),
                .env = env,
                .timeout_ms = (uint64_t)json_integer_value(json_object_get(req, "timeout")) * 1000,
                .data = raw,
                .data_len = raw_len,
        };
        return embedded_run(l, &a, ret);
}

static int embedded_file(CliLink *l, VsToolKind tool, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        _cleanup_free_ char *abs = NULL;
        VsToolArgs a = {
                .tool = tool,
                .path = tools_in_dir(l->workspace, json_string_value(json_object_get(req, "path")), &abs),
                .offset = (uint64_t)json_integer_value(json_object_get(req, "offset")),
                .limit = (uint64_t)json_integer_value(json_object_get(req, "limit")),
                .create_parents = json_is_true(json_object_get(req, "create_parents")),
                .old_text = json_string_value(json_object_get(req, "old_string")),
                .new_text = json_string_value(json_object_get(req, "new_string")),
                .replace_all = json_is_true(json_object_get(req, "replace_all")),
                .data = raw,
                .data_len = raw_len,
        };
        return embedded_run(l, &a, ret);
}

static int embedded_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        int r = embedded_open(l);
        if (r < 0)
                return r;
        if (l->open_code)
                return fail_result(ret, l->open_code, l->open_message);
        const char *tool = json_string_value(json_object_get(req, "tool"));
        if (streq(tool, "terminal"))
                r = embedded_terminal(l, req, raw, raw_len, ret);
        else if (streq(tool, "file_read"))
                r = embedded_file(l, VS_TOOL_FILE_READ, req, NULL, 0, ret);
        else if (streq(tool, "file_write"))
                r = embedded_file(l, VS_TOOL_FILE_WRITE, req, raw, raw_len, ret);
        else if (streq(tool, "file_edit"))
                r = embedded_file(l, VS_TOOL_FILE_EDIT, req, NULL, 0, ret);
        else
                r = fail_result(ret, api_error_name(API_ERROR_UNKNOWN_TOOL), "this tool is served by the daemon only");
        if (r < 0)
                return r;
        json_object_set_new(ret->obj, "sandboxed", json_boolean(l->session->sandboxed));
        json_object_set_new(ret->obj, "sandbox", embedded_sandbox(l));
        json_object_set_new(ret->obj, "policy_pending", l->pending ? json_string(l->pending) : json_null());
        return 0;
}

static int link_call(CliLink *l, json_t *q, const void *raw, size_t raw_len, JsonlMsg *ret) {
        const char *tool = json_string_value(json_object_get(q, "tool"));
        if (!streq(tool, "status")) {
                if (!l->workspace) {
                        char msg[PATH_MAX + 128];
                        snprintf(msg, sizeof msg, "workspace %s: %s", l->args->val[OPT_WORKSPACE] ?: ".",
                                 strerror(l->workspace_errno));
                        return fail_result(ret, api_error_name(API_ERROR_WORKSPACE_NOT_FOUND), msg);
                }
                json_object_set_new(q, "workspace", json_string(l->workspace));
        }
        if (l->socket) {
                if (l->args->require_sandbox)
                        json_object_set_new(q, "require_sandbox", json_true());
                if (streq(tool, "terminal") || streq(tool, "file_read"))
                        json_object_set_new(q, "binary", json_true());
                return daemon_call(l, q, raw, raw_len, ret);
        }
        return embedded_call(l, q, raw, raw_len, ret);
}

int cli_link_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        if (!req)
                return -ENOMEM;
        int r = link_call(l, req, raw, raw_len, ret);
        json_decref(req);
        return r;
}
