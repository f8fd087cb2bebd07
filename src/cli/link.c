/* SPDX-License-Identifier: MIT */
/* Daemon API calls, to vectora-sandboxd or embedded. The embedded side
 * maps the request onto the core's tool call (tool-call.h), driven over
 * one VsSession. */
#include <limits.h>
#include <string.h>

#include "api-call.h"
#include "api-result.h"
#include "audit.h"
#include "client.h"
#include "fd-util.h"
#include "host-run-scan.h"
#include "link.h"
#include "protocol.h"
#include "time-util.h"
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
        /* Served here, the call is audited here (a daemon keeps its own
         * log). A log asked for that cannot be opened refuses every call. */
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (!l->socket && a->val[OPT_AUDIT_LOG] && audit_open(a->val[OPT_AUDIT_LOG], &err) < 0) {
                l->open_code = strdup(api_error_name(API_ERROR_SANDBOX_UNAVAILABLE));
                l->open_message = strdup(vs_error_message(err));
                if (!l->open_code || !l->open_message) {
                        cli_link_free(l);
                        return -ENOMEM;
                }
        }
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
        json_t *o = api_result_close(NULL, code, message, false, NULL, NULL, NULL);
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
        bool sent;
        int r = client_call(l->fd, l->reader, ++l->next_id, req, raw, raw_len, ret, &sent);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && !sent) {
                char msg[512];
                snprintf(msg, sizeof msg, "sending to vectora-sandboxd at %s: %s", l->socket, strerror(-r));
                return fail_result(ret, "daemon_unreachable", msg);
        }
        if (r < 0) {
                /* The request was sent: the daemon may have started it
                 * before it ended. Never "nothing ran" (125). */
                char msg[512];
                snprintf(msg, sizeof msg,
                         "vectora-sandboxd at %s ended while the call was in flight (%s); the command may have run: "
                         "check its effects before running it again",
                         l->socket, r == -EPIPE || r == -ECONNRESET ? "connection closed" : strerror(-r));
                return fail_result(ret, "daemon_lost", msg);
        }
        json_object_del(ret->obj, "id");
        return 0;
}

/* ---- embedded ---- */

/* commands: the call runs one (terminal). A file tool in a workspace with a
 * network allowlist gets a jail with no network at all (there is no proxy
 * without the daemon), as the MCP server's file tools do; a command there
 * is refused (LAUNCH_ALLOWLIST_NEEDS_DAEMON), never run with less or more
 * network than the policy says. */
static int embedded_open(CliLink *l, bool commands) {
        if (l->session || l->open_code)
                return 0;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = tools_open(l->workspace ? l->workspace : (l->args->val[OPT_WORKSPACE] ?: "."),
                           l->args->require_sandbox, !commands, &l->policy, &l->session, &l->pending, &err);
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

/* The call as the daemon serves it (api-call.h): decoded once through the
 * API's tables, the policy's limits as ceilings, file_edit's retry on a
 * concurrent write, the one result envelope; audited, refusals included,
 * as the daemon does (audit.h; a no-op without --audit-log). */
static int embedded_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        uint64_t t0 = now_us();
        const char *tool = json_string_value(json_object_get(req, "tool"));
        ApiTool which = api_tool_from_name(tool);
        int r = embedded_open(l, which == API_TOOL_TERMINAL);
        if (r < 0)
                return r;
        if (l->open_code || !api_call_serves(which)) {
                *ret = (JsonlMsg)JSONL_MSG_INIT;
                ret->obj = api_call_refuse(l->policy ? l->policy->workspace : l->workspace, tool,
                                           l->open_code ?: api_error_name(API_ERROR_UNKNOWN_TOOL),
                                           l->open_code ? l->open_message : "this tool is served by the daemon only", t0);
                return ret->obj ? 0 : -ENOMEM;
        }
        /* The bytes travel as the raw payload, as the CLI asks the daemon. */
        if ((which == API_TOOL_TERMINAL || which == API_TOOL_FILE_READ) &&
            json_object_set_new(req, "binary", json_true()) < 0)
                return -ENOMEM;
        /* One call per process: its jail ends with it, then what it made
         * that git takes as a repository is put aside (git-scan.h) and
         * listed in the result. */
        VsApiSession s = {
                .session = l->session,
                .policy = l->policy,
                .pending = l->pending,
                .host_run = &l->host_run,
                .generation = 1, /* one worker per process */
                .one_call = true,
        };
        JsonlMsg in = { .obj = req, .has_raw = raw != NULL, .raw = (char *)raw, .raw_len = raw_len };
        /* Relative to the directory asked about, which may lie below the
         * workspace root (the nearest vectora.toml above it governs). */
        return api_call_run(&s, &in, l->workspace, t0, ret);
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
