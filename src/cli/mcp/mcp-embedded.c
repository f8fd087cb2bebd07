/* SPDX-License-Identifier: MIT */
/* vectora-sandbox mcp without a daemon: the MCP process keeps one worker
 * for its workspace over the core's blocking session, so calls after the
 * first are warm, and serves several calls on it at once (a shared
 * session, session.h). Replies are built in the daemon API's shape. */
#include <string.h>

#include "api-call.h"
#include "fd-util.h"
#include "host-run-scan.h"
#include "launch.h"
#include "mcp-serve.h"
#include "path-util.h"
#include "protocol.h"
#include "strv.h"
#include "time-util.h"
#include "tools.h"

void mcp_embedded_init(McpEmbedded *e, const char *workspace, bool require_sandbox) {
        *e = (McpEmbedded){ .workspace = workspace, .require_sandbox = require_sandbox };
        pthread_mutex_init(&e->lock, NULL);
        pthread_cond_init(&e->cond, NULL);
}

void mcp_embedded_done(McpEmbedded *e) {
        e->ending = false;
        free(TAKE_PTR(e->no_commands));
        session_end(TAKE_PTR(e->session));
        policy_free(TAKE_PTR(e->policy));
        free(TAKE_PTR(e->pending));
        strv_free(TAKE_PTR(e->masked));
        host_run_scan_free(TAKE_PTR(e->host_run));
        free(TAKE_PTR(e->jail_pids));
}

void mcp_embedded_stop(McpEmbedded *e) {
        pthread_mutex_lock(&e->lock);
        if (e->session) {
                session_stop(e->session);
                e->ending = true;
        }
        pthread_mutex_unlock(&e->lock);
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
 * and *ret_message (malloc'd) say why, and the call is refused. With
 * e->lock held and no call on the session. */
static int start_session(McpEmbedded *e, char **ret_code, char **ret_message) {
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
        /* network = [...] is the daemon's proxy: the file tools are served
         * by a jail without a network, commands are refused as the CLI's
         * exec refuses them. */
        r = tools_open(e->workspace, e->require_sandbox, true, &e->policy, &e->session, &e->pending, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret_code = strdup(vs_error_kind(err) ?: api_error_name(API_ERROR_SANDBOX_UNAVAILABLE));
                *ret_message = strdup(vs_error_message(err));
                return *ret_code && *ret_message ? 0 : -ENOMEM;
        }
        e->session->shared = true;
        if (e->policy->sandboxed && e->policy->net_allowlist && !(e->no_commands = strdup(LAUNCH_ALLOWLIST_NEEDS_DAEMON)))
                return -ENOMEM;
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

int mcp_embedded_acquire(McpEmbedded *e, McpEmbHold *h) {
        *h = (McpEmbHold){};
        pthread_mutex_lock(&e->lock);
        int r = 0;
        for (;;) {
                /* A worker that died, a vectora.toml that changed, a masked
                 * path that appeared: the calls on it end first (each
                 * within its own call's window, as one call alone), then a
                 * fresh one starts. */
                if (e->session && !e->ending &&
                    (!session_worker_alive(e->session) || !config_unchanged(e) || !masks_unchanged(e)))
                        e->ending = true;
                if (e->session && !e->ending)
                        break;
                if (e->busy > 0) {
                        pthread_cond_wait(&e->cond, &e->lock);
                        continue;
                }
                r = start_session(e, &h->code, &h->message);
                break;
        }
        if (r >= 0 && e->session) {
                h->session = e->session;
                h->generation = e->generation;
                /* The scan the host-run report compares with: one call at a
                 * time takes it, the others report nothing, and the next
                 * call's look covers what they made. */
                h->host_run = TAKE_PTR(e->host_run);
                h->counted = true;
                e->busy++;
                e->strays_looked = false;
        }
        pthread_mutex_unlock(&e->lock);
        return r;
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
        if (!e->session || !session_worker_alive(e->session) || e->n_jail_pids == -EOPNOTSUPP || e->busy > 1)
                return 0;
        _cleanup_free_ pid_t *now = NULL;
        int n = session_jail_pids(e->session, &now);
        if (n == -ENOMEM)
                return -ENOMEM;
        if (e->n_jail_pids >= 0 && n == e->n_jail_pids && memcmp(now, e->jail_pids, (size_t)n * sizeof *now) == 0)
                return 0;
        mcp_embedded_done(e);
        if (n == -ESRCH || !reply)
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
static int run_call(McpEmbedded *e, McpEmbHold *h, const McpCall *mc, int cancel_fd, uint64_t t0,
                    json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        JsonlMsg in = JSONL_MSG_INIT;
        const char *raw = NULL;
        size_t raw_len = 0;
        if (mcp_call_request(mc, e->workspace, &in.obj, &raw, &raw_len) < 0)
                return -ENOMEM;
        in.has_raw = raw != NULL;
        in.raw = (char *)raw;
        in.raw_len = raw_len;
        /* The policy and pending are replaced only when no call holds the
         * session. */
        VsApiSession s = {
                .session = h->session,
                .policy = e->policy,
                .pending = e->pending,
                .host_run = &h->host_run,
                .generation = h->generation,
                .cancel_fd = cancel_fd > 0 ? cancel_fd : 0,
        };
        JsonlMsg m;
        /* Relative paths start at the directory the server was given, as
         * through the daemon. */
        int r = api_call_run(&s, &in, e->workspace, t0, &m);
        in.raw = NULL; /* borrowed from mc */
        jsonl_msg_done(&in);
        if (r < 0)
                return r;
        /* A worker that died, or broke the protocol, is ended once the
         * calls on it are done: the next call starts a fresh one. The
         * envelope said which worker served the call before this look may
         * end it. A repository the jail made ended its worker
         * (tool_call_run()) the same way. */
        const char *code = json_string_value(json_object_get(json_object_get(m.obj, "error"), "code"));
        pthread_mutex_lock(&e->lock);
        if ((code && strncmp(code, "worker_", 7) == 0) || !session_worker_alive(h->session))
                e->ending = true;
        else if (e->busy == 1 && (r = end_strays(e, m.obj)) >= 0)
                e->strays_looked = true;
        if (!e->session)
                h->session = NULL; /* ended with its strays: nothing else held it */
        pthread_mutex_unlock(&e->lock);
        if (r < 0) {
                jsonl_msg_done(&m);
                return r;
        }
        bool has_raw = m.has_raw && m.raw;
        *ret_raw = has_raw ? jsonl_msg_steal_raw(&m, ret_raw_len) : NULL;
        *ret_reply = TAKE_PTR(m.obj);
        jsonl_msg_done(&m);
        if (has_raw && !*ret_raw) {
                json_decref(TAKE_PTR(*ret_reply));
                return -ENOMEM;
        }
        return 0;
}

/* The worker's own log (its stderr pipe) goes to ours: nobody else reads
 * it in a long session, and a full pipe would stall the worker. With
 * e->lock held. */
static void forward_worker_log(McpEmbedded *e) {
        if (!e->session || e->session->proc.stderr_fd < 0)
                return;
        fd_set_nonblock(e->session->proc.stderr_fd, true);
        char buf[4096];
        ssize_t k;
        while ((k = read(e->session->proc.stderr_fd, buf, sizeof buf)) > 0)
                (void)!write_all(STDERR_FILENO, buf, (size_t)k);
}

int mcp_embedded_call(McpEmbedded *e, McpEmbHold *h, const McpCall *c, int cancel_fd, json_t **ret_reply,
                      char **ret_raw, size_t *ret_raw_len) {
        uint64_t t0 = now_us();
        *ret_reply = NULL;
        *ret_raw = NULL;
        *ret_raw_len = 0;
        const char *code = h->code, *message = h->message;
        /* Background processes are refused before this (verb-mcp.c). */
        if (!code && !h->session) {
                code = api_error_name(API_ERROR_WORKER_RECYCLED);
                message = "the jail serving this call was ended between its steps (processes an earlier step left "
                          "running); nothing more ran: run the call again";
        } else if (!code && c->tool == MCP_TOOL_TERMINAL && e->no_commands && !h->edit_steps) {
                code = api_error_name(API_ERROR_SANDBOX_UNAVAILABLE);
                message = e->no_commands;
        }
        if (code)
                return (*ret_reply = api_call_refuse(e->workspace, mcp_tool_name(c->tool), code, message, t0)) ? 0
                                                                                                              : -ENOMEM;
        return run_call(e, h, c, cancel_fd, t0, ret_reply, ret_raw, ret_raw_len);
}

void mcp_embedded_release(McpEmbedded *e, McpEmbHold *h) {
        pthread_mutex_lock(&e->lock);
        if (h->counted)
                e->busy--;
        h->counted = false;
        if (h->host_run) {
                host_run_scan_free(e->host_run);
                e->host_run = TAKE_PTR(h->host_run);
        }
        /* The last call out: what outlived the calls is looked at now, a
         * worker to end is ended. */
        if (e->busy == 0 && e->session) {
                if (e->ending)
                        mcp_embedded_done(e);
                else if (!e->strays_looked)
                        (void)end_strays(e, NULL);
        }
        forward_worker_log(e);
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
        free(TAKE_PTR(h->code));
        free(TAKE_PTR(h->message));
        h->session = NULL;
}
