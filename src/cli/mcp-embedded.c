/* SPDX-License-Identifier: MIT */
/* vectora-sandbox mcp without a daemon: the MCP process keeps one worker
 * for its workspace over the core's blocking session, so calls after the
 * first are warm. Replies are built in the daemon API's shape. */
#include <string.h>

#include "api.h"
#include "fd-util.h"
#include "host-run-scan.h"
#include "json-util.h"
#include "mcp-serve.h"
#include "path-util.h"
#include "protocol.h"
#include "strv.h"
#include "tool-call.h"
#include "tools.h"

void mcp_embedded_done(McpEmbedded *e) {
        session_end(TAKE_PTR(e->session));
        policy_free(TAKE_PTR(e->policy));
        free(TAKE_PTR(e->pending));
        strv_free(TAKE_PTR(e->masked));
        host_run_scan_free(TAKE_PTR(e->host_run));
        free(TAKE_PTR(e->jail_pids));
}

/* Masks over time for a worker kept between calls: a masked path that
 * appeared since the session started (the host made a .env) was readable
 * to the session's commands; the next call then gets a new worker, whose
 * plan masks it. Within one call the window is the call itself, as for one
 * embedded action. A walk that fails ends the session too (fail closed). */
static bool masks_unchanged(const McpEmbedded *e) {
        _cleanup_strv_free_ char **now = NULL;
        if (!e->policy || tools_masked_now(e->policy, &now, NULL) < 0)
                return false;
        return strv_equal(now, e->masked);
}

/* What the call wrote of the files the host runs later, as the daemon's
 * watch reports it (host-run-scan.h); [] when nothing or unsandboxed. */
static int add_host_run(McpEmbedded *e, json_t *reply) {
        _cleanup_(host_run_scan_freep) VsHostRunScan *now = NULL;
        int r = e->host_run ? host_run_scan(e->policy, &now) : 0;
        if (r < 0)
                return r;
        if (host_run_files_add(reply, now ? host_run_scan_diff(e->host_run, now) : json_array()) < 0)
                return -ENOMEM;
        if (now) {
                host_run_scan_free(e->host_run);
                e->host_run = TAKE_PTR(now);
        }
        return 0;
}

static char *config_path(const McpEmbedded *e) {
        if (e->policy && e->policy->config_path)
                return strdup(e->policy->config_path);
        return path_join(e->policy ? e->policy->workspace : e->workspace, "vectora.toml");
}

/* Whether vectora.toml is still the file the session's policy came from. */
static bool config_unchanged(const McpEmbedded *e) {
        _cleanup_free_ char *p = config_path(e);
        struct stat st;
        bool present = p && stat(p, &st) == 0;
        if (present != e->config_present)
                return false;
        return !present || (st.st_dev == e->config_st.st_dev && st.st_ino == e->config_st.st_ino &&
                            st.st_size == e->config_st.st_size && st.st_mtim.tv_sec == e->config_st.st_mtim.tv_sec &&
                            st.st_mtim.tv_nsec == e->config_st.st_mtim.tv_nsec &&
                            st.st_ctim.tv_sec == e->config_st.st_ctim.tv_sec &&
                            st.st_ctim.tv_nsec == e->config_st.st_ctim.tv_nsec);
}

static json_t *error_reply(const char *code, const char *message) {
        return json_pack("{s:b,s:{s:s,s:s},s:b,s:{s:n,s:s}}", "ok", false, "error", "code", code, "message", message,
                         "sandboxed", false, "sandbox", "backend", "state", "refused");
}

/* The sandbox fields every reply carries (docs/protocol.md). */
static int add_sandbox(const McpEmbedded *e, json_t *reply) {
        _cleanup_strv_free_ char **layers = NULL;
        if (session_layers(e->session, &layers) < 0)
                return -ENOMEM;
        bool sb = e->policy->sandboxed;
        json_t *s = json_pack("{s:s,s:s,s:o,s:o}", "backend", sb ? vs_backend_name(e->policy->backend) : "none", "state",
                              sb ? "sandboxed" : "unsandboxed", "layers", json_strv(layers), "degraded",
                              json_strv(e->session->degraded));
        if (!s || json_object_set_new(reply, "sandbox", s) < 0 || json_object_set_new(reply, "sandboxed", json_boolean(sb)) < 0 ||
            json_object_set_new(reply, "policy_pending", e->pending ? json_string(e->pending) : json_null()) < 0)
                return -ENOMEM;
        return 0;
}

static int ensure_session(McpEmbedded *e, json_t **ret_refusal) {
        if (e->session && config_unchanged(e) && masks_unchanged(e))
                return 0;
        mcp_embedded_done(e);
        _cleanup_(vs_error_freep) VsError *err = NULL;
        /* The file as it is now: a change after this point is seen next call. */
        _cleanup_free_ char *cp = config_path(e);
        e->config_present = cp && stat(cp, &e->config_st) == 0;
        /* The masks' view before the worker's plan is made: a path that
         * appears after this is found by the next call's look. */
        _cleanup_(policy_freep) VsPolicy *before = NULL;
        int r = tools_load_policy(e->workspace, &before, NULL, NULL, NULL);
        if (r == -ENOMEM || (r >= 0 && (r = tools_masked_now(before, &e->masked, NULL)) == -ENOMEM))
                return -ENOMEM;
        r = tools_open(e->workspace, e->require_sandbox, &e->policy, &e->session, &e->pending, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                const char *kind = vs_error_kind(err);
                *ret_refusal = error_reply(kind ? kind : api_error_name(API_ERROR_SANDBOX_UNAVAILABLE), vs_error_message(err));
                return *ret_refusal ? 0 : -ENOMEM;
        }
        /* tools_open may have found the workspace root above the directory. */
        _cleanup_free_ char *cp2 = config_path(e);
        if (cp2 && (!cp || !streq(cp, cp2)))
                e->config_present = stat(cp2, &e->config_st) == 0;
        /* What the jail holds between calls: its own processes only. */
        e->n_jail_pids = session_jail_pids(e->session, &e->jail_pids);
        if (e->n_jail_pids == -ENOMEM)
                return -ENOMEM;
        /* After the launch: its placeholders are the host's, not a call's. */
        r = host_run_scan(e->policy, &e->host_run);
        return r == -ENOMEM ? r : 0;
}

/* Nothing of a call lives on in a worker kept between calls: a process
 * the agent detached (`setsid cmd &`, a double fork) would run in the gap
 * before the next call, when the host may create a secret that the next
 * call's plan would mask (masks_unchanged()), and copy it out. The daemon
 * watches the tree and recycles the jail at once; this server has no
 * watch, so a jail whose processes after a call are not the very ones it
 * had after its start (a stray added; or one of its own replaced, a
 * stray that killed the worker to keep the count) is ended now (its pid
 * namespace, strays with it) and the next call gets a fresh one. The
 * reply says so in jail_restarted. A look that fails ends the jail too
 * (fail closed). */
static int end_strays(McpEmbedded *e, json_t *reply) {
        if (!e->session || e->session->proc.pid <= 0 || e->n_jail_pids == -EOPNOTSUPP)
                return 0;
        _cleanup_free_ pid_t *now = NULL;
        int n = session_jail_pids(e->session, &now);
        if (n == -ENOMEM)
                return -ENOMEM;
        if (e->n_jail_pids >= 0 && n == e->n_jail_pids && memcmp(now, e->jail_pids, (size_t)n * sizeof *now) == 0)
                return 0;
        mcp_embedded_done(e);
        if (n == -ESRCH)
                return 0; /* it ended by itself: the next call starts one */
        return json_object_set_new(reply, "jail_restarted",
                                   json_string("processes the call left running were ended with the jail "
                                               "(the MCP server without a daemon keeps nothing running between "
                                               "calls; use the daemon's process tool)")) < 0 ? -ENOMEM : 0;
}

/* The call through the core's tool call (tool-call.h), as the daemon
 * serves it: the policy's limits as ceilings, file_edit's retry on a
 * concurrent write. */
static int run_call(McpEmbedded *e, const VsToolArgs *args, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        VsToolCall c;
        tool_call_init(&c, args, e->policy);
        json_t *result = NULL;
        JsonlMsg m = JSONL_MSG_INIT;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = tool_call_run(e->session, &c, &result, &m, &err);
        tool_call_done(&c);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                const char *kind = vs_error_kind(err) ? vs_error_kind(err) : api_error_name(API_ERROR_WORKER_CRASHED);
                /* A worker that died, or broke the protocol, is ended: the
                 * next call starts a fresh one. */
                if (strncmp(kind, "worker_", 7) == 0) {
                        *ret_reply = error_reply(kind, vs_error_message(err));
                        mcp_embedded_done(e);
                        return *ret_reply ? 0 : -ENOMEM;
                }
                *ret_reply = error_reply(kind, vs_error_message(err));
                if (*ret_reply && (add_sandbox(e, *ret_reply) < 0 || add_host_run(e, *ret_reply) < 0 ||
                                   end_strays(e, *ret_reply) < 0))
                        return -ENOMEM;
                return *ret_reply ? 0 : -ENOMEM;
        }
        if (json_object_set_new(result, "ok", json_true()) < 0 || add_sandbox(e, result) < 0 ||
            add_host_run(e, result) < 0 || end_strays(e, result) < 0) {
                json_decref(result);
                jsonl_msg_done(&m);
                return -ENOMEM;
        }
        bool has_raw = m.has_raw && m.raw;
        *ret_raw = has_raw ? jsonl_msg_steal_raw(&m, ret_raw_len) : NULL;
        jsonl_msg_done(&m);
        if (has_raw && !*ret_raw) {
                json_decref(result);
                return -ENOMEM;
        }
        *ret_reply = result;
        /* A repository the jail made ended its worker (tool_call_run()):
         * the next call starts a fresh one instead of failing. */
        if (e->session && e->session->proc.pid <= 0)
                mcp_embedded_done(e);
        return 0;
}

/* The worker's own log (its stderr pipe) goes to ours: nobody else reads
 * it in a long session, and a full pipe would stall the worker. */
static void forward_worker_log(McpEmbedded *e) {
        if (!e->session || e->session->proc.stderr_fd < 0)
                return;
        fd_set_nonblock(e->session->proc.stderr_fd, true);
        char buf[4096];
        ssize_t k;
        while ((k = read(e->session->proc.stderr_fd, buf, sizeof buf)) > 0)
                (void)!write_all(STDERR_FILENO, buf, (size_t)k);
}

static int embedded_call(McpEmbedded *e, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        *ret_raw = NULL;
        *ret_raw_len = 0;
        json_t *refusal = NULL;
        int r = ensure_session(e, &refusal);
        if (r < 0 || refusal) {
                *ret_reply = refusal;
                return r;
        }
        char *sh[] = { (char *)"/bin/sh", (char *)"-c", (char *)c->command, NULL };
        VsToolArgs a = {
                .argv = sh,
                .cwd = c->cwd,
                .timeout_ms = c->timeout_s * 1000,
                .path = c->path,
                .offset = c->offset,
                .limit = c->limit,
                .create_parents = c->create_parents,
                .old_text = c->old_string,
                .new_text = c->new_string,
                .replace_all = c->replace_all,
        };
        switch (c->tool) {
        case MCP_TOOL_TERMINAL:
                a.tool = VS_TOOL_TERMINAL;
                a.data = c->stdin_text;
                a.data_len = c->stdin_text ? strlen(c->stdin_text) : 0;
                break;
        case MCP_TOOL_FILE_READ:
                a.tool = VS_TOOL_FILE_READ;
                break;
        case MCP_TOOL_FILE_WRITE:
                a.tool = VS_TOOL_FILE_WRITE;
                a.data = c->content;
                a.data_len = c->content_len;
                break;
        case MCP_TOOL_FILE_EDIT:
                a.tool = VS_TOOL_FILE_EDIT;
                break;
        default:
                /* Background processes are refused before this (verb-mcp.c). */
                return -EINVAL;
        }
        return run_call(e, &a, ret_reply, ret_raw, ret_raw_len);
}

int mcp_embedded_call(McpEmbedded *e, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        int r = embedded_call(e, c, ret_reply, ret_raw, ret_raw_len);
        forward_worker_log(e);
        return r;
}
