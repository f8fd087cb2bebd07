/* SPDX-License-Identifier: MIT */
/* vectora-sandbox mcp without a daemon: the MCP process keeps one worker
 * for its workspace over the core's blocking session, so calls after the
 * first are warm. Replies are built in the daemon API's shape. */
#include <string.h>

#include "api-call.h"
#include "fd-util.h"
#include "host-run-scan.h"
#include "mcp-serve.h"
#include "path-util.h"
#include "protocol.h"
#include "strv.h"
#include "time-util.h"
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

/* A session for the next call; a workspace that cannot get one: *ret_code
 * and *ret_message (malloc'd) say why, and the call is refused. */
static int ensure_session(McpEmbedded *e, char **ret_code, char **ret_message) {
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
                *ret_code = strdup(vs_error_kind(err) ?: api_error_name(API_ERROR_SANDBOX_UNAVAILABLE));
                *ret_message = strdup(vs_error_message(err));
                return *ret_code && *ret_message ? 0 : -ENOMEM;
        }
        /* tools_open may have found the workspace root above the directory. */
        _cleanup_free_ char *cp2 = config_path(e);
        if (cp2 && (!cp || !streq(cp, cp2)))
                e->config_present = stat(cp2, &e->config_st) == 0;
        /* What the jail holds between calls: its own processes only. */
        e->n_jail_pids = session_jail_pids(e->session, &e->jail_pids);
        if (e->n_jail_pids == -ENOMEM)
                return -ENOMEM;
        e->generation++;
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

/* The call as the daemon serves it (api-call.h): the request the MCP
 * server would send the daemon, decoded once through the API's tables, the
 * policy's limits as ceilings, file_edit's retry on a concurrent write,
 * the one result envelope, audited. */
static int run_call(McpEmbedded *e, const McpCall *mc, uint64_t t0, json_t **ret_reply, char **ret_raw,
                    size_t *ret_raw_len) {
        JsonlMsg in = JSONL_MSG_INIT;
        const char *raw = NULL;
        size_t raw_len = 0;
        if (mcp_call_request(mc, e->workspace, &in.obj, &raw, &raw_len) < 0)
                return -ENOMEM;
        in.has_raw = raw != NULL;
        in.raw = (char *)raw;
        in.raw_len = raw_len;
        VsApiSession s = {
                .session = e->session,
                .policy = e->policy,
                .pending = e->pending,
                .host_run = &e->host_run,
                .generation = e->generation,
        };
        JsonlMsg m;
        /* Relative paths start at the directory the server was given, as
         * through the daemon. */
        int r = api_call_run(&s, &in, e->workspace, t0, &m);
        in.raw = NULL; /* borrowed from mc */
        jsonl_msg_done(&in);
        if (r < 0)
                return r;
        /* A worker that died, or broke the protocol, is ended: the next
         * call starts a fresh one. The envelope said which worker served
         * the call before this look may end it. */
        const char *code = json_string_value(json_object_get(json_object_get(m.obj, "error"), "code"));
        if (code && strncmp(code, "worker_", 7) == 0)
                mcp_embedded_done(e);
        else if (end_strays(e, m.obj) < 0) {
                jsonl_msg_done(&m);
                return -ENOMEM;
        }
        bool has_raw = m.has_raw && m.raw;
        *ret_raw = has_raw ? jsonl_msg_steal_raw(&m, ret_raw_len) : NULL;
        *ret_reply = TAKE_PTR(m.obj);
        jsonl_msg_done(&m);
        if (has_raw && !*ret_raw) {
                json_decref(TAKE_PTR(*ret_reply));
                return -ENOMEM;
        }
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

int mcp_embedded_call(McpEmbedded *e, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        uint64_t t0 = now_us();
        *ret_reply = NULL;
        *ret_raw = NULL;
        *ret_raw_len = 0;
        _cleanup_free_ char *code = NULL, *message = NULL;
        int r = ensure_session(e, &code, &message);
        /* Background processes are refused before this (verb-mcp.c). */
        if (r >= 0 && code &&
            !(*ret_reply = api_call_refuse(e->workspace, mcp_tool_name(c->tool), code, message, t0)))
                r = -ENOMEM;
        else if (r >= 0 && !code) {
                e->session->cancel_fd = e->cancel_fd;
                r = run_call(e, c, t0, ret_reply, ret_raw, ret_raw_len);
        }
        forward_worker_log(e);
        return r;
}
