/* SPDX-License-Identifier: MIT */
/* The daemon API's tools: route a client request by its tool, decode it
 * (the argument tables of api.h, which reject unknown fields), turn it into
 * worker calls, turn the worker's replies into results; request.c sends
 * each result and audits it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api-call.h"
#include "approval.h"
#include "audit.h"
#include "base64.h"
#include "cgroup.h"
#include "daemon-tools.h"
#include "log.h"
#include "metrics.h"
#include "path-util.h"
#include "process.h"
#include "proxy.h"
#include "monitor-link.h"
#include "reply-fit.h"
#include "request.h"
#include "server.h"
#include "strv.h"
#include "terminal.h"
#include "tools.h"
#include "walk-cache.h"
#include "watch.h"
#include "worker-link.h"
#include "workspace.h"

void tools_reply_bad_line(Client *c, ApiError code, const char *message) {
        c->srv->counters.errors++;
        client_send_json(c, json_pack("{s:n,s:b,s:o}", "id", "ok", 0, "error", api_error_json(code, message)), NULL, 0);
}

/* A result string: valid UTF-8 that fits budget escaped goes out as text,
 * escaped straight into the reply line by request_finish (p must live until
 * then: it points into the worker's reply, which outlives the done
 * callback's request_finish, or into r->owned); anything else as
 * KEY_base64. */
static void set_bytes(Request *r, json_t *o, const char *key, const char *p, size_t n, size_t budget) {
        if (reply_bytes_as_text(p, n, budget) && r->n_texts < ELEMENTSOF(r->texts)) {
                r->texts[r->n_texts++] = (JsonlText){ key, p ? p : "", n };
                return;
        }
        char k[64];
        snprintf(k, sizeof k, "%s_base64", key);
        json_object_set_new(o, k, b64_json(p, n));
}

/* ---- the worker calls: the core's tool call (tool-call.h) ---- */

/* The next worker request of r's call. The policy's limits are taken now,
 * from the policy serving the workspace when the request goes out. */
static int call_build(Call *c, uint64_t wid, StrBuf *out) {
        Request *r = c->req;
        tool_call_ceilings(&r->ac.tc, r->ws ? r->ws->policy : NULL);
        return tool_call_encode(&r->ac.tc, wid, out);
}

/* The tool's own shaping of a finished call's result (defined with the
 * tool table below). */
static void tool_shape(Request *r, WorkerLink *l, JsonlMsg *m, json_t *o);

#define LEFTOVERS_HELD "leftover processes held the workspace's process limit"

/* A command that could not start because the jail is at its process limit
 * (a fork bomb's leftovers, grown again after the last call's look at the
 * count): nothing ran, so the jail is restarted and the command sent to
 * the fresh one, once, when no other call runs in it. A command that needs
 * more than the limit gets process_limit then. */
static bool limit_restart(Request *r, WorkerLink *l, const VsError *err) {
        if (r->limit_restarted || r->cancelled || r->which != API_TOOL_TERMINAL || !r->ws || !l || l != r->ws->link ||
            l->n_inflight != 0 || !streq_ptr(vs_error_kind(err), "process_limit"))
                return false;
        log_warning("workspace %s: a command found the jail at its process limit; restarting the jail", r->ws->path);
        r->limit_restarted = true;
        workspace_recycle(r->ws, API_ERROR_WORKER_RECYCLED, LEFTOVERS_HELD);
        workspace_submit(r->ws, &r->call);
        return true;
}

static void call_done(Call *c, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message) {
        Request *r = c->req;
        if (!m)
                return request_finish(r, l, NULL, NULL, 0, code, message);
        json_t *o = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int k = tool_call_feed(&r->ac.tc, m, &o, &err);
        if (k == TOOL_CALL_AGAIN && r->cancelled)
                return request_finish(r, l, NULL, NULL, 0, API_ERROR_CANCELLED,
                                      "cancelled between its steps: the first ran, the next did not");
        if (k == TOOL_CALL_AGAIN)
                /* file_edit's next step (its write, or a read again after
                 * another writer got in). */
                return workspace_submit(r->ws, &r->call);
        /* The worker killed the command for our cancel; a call that ended
         * before the cancel reached it keeps its own result. */
        if (k >= 0 && r->cancelled && json_is_true(json_object_get(o, "cancelled"))) {
                json_decref(o);
                return request_finish(r, l, NULL, NULL, 0, API_ERROR_CANCELLED, r->cancel_why);
        }
        if (k == -ENOMEM)
                return request_finish(r, l, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        if (k < 0 && limit_restart(r, l, err))
                return;
        if (k < 0)
                return request_finish(r, l, NULL, NULL, 0, api_error_from_kind(vs_error_kind(err), API_ERROR_WORKER_CRASHED),
                                      vs_error_message(err));
        tool_shape(r, l, m, o);
}

/* Results without a payload: the fields as the core shaped them. */
static void shape_fields(Request *r, WorkerLink *l, JsonlMsg *m, json_t *o) {
        request_finish(r, l, o, NULL, 0, API_OK, NULL);
}

/* ---- terminal ---- */

static void terminal_reply(Request *r, WorkerLink *l, const char *raw, size_t raw_len, json_t *o, bool restart) {
        if (restart) {
                log_warning("workspace %s: leftover processes hold the process limit; restarting the jail", r->ws->path);
                json_object_set_new(o, "jail_restarted", json_string(LEFTOVERS_HELD));
                workspace_recycle(r->ws, API_ERROR_WORKER_RECYCLED, LEFTOVERS_HELD);
        } else if (r->limit_restarted)
                json_object_set_new(o, "jail_restarted", json_string(LEFTOVERS_HELD " when the command came: it ran in the new jail"));
        if (api_call_binary(&r->ac))
                return request_finish(r, l, o, raw, raw_len, API_OK, NULL);
        /* As text both streams share one line: cut what would not fit, so
         * the reply goes out with exit_code and timed_out intact. */
        size_t out_len = (size_t)json_integer_value(json_object_get(o, "stdout_len"));
        size_t err_len = (size_t)json_integer_value(json_object_get(o, "stderr_len"));
        json_object_del(o, "stdout_len");
        json_object_del(o, "stderr_len");
        const char *sp[2] = { raw, raw ? raw + out_len : NULL };
        size_t sn[2] = { out_len, err_len }, sb[2];
        uint64_t st[2] = { (uint64_t)json_integer_value(json_object_get(o, "stdout_total")),
                           (uint64_t)json_integer_value(json_object_get(o, "stderr_total")) };
        size_t budget = reply_budget(r->id);
        reply_split_budget(budget, reply_bytes_cost(sp[0], sn[0], budget), reply_bytes_cost(sp[1], sn[1], budget), &sb[0],
                           &sb[1]);
        bool truncated = false;
        for (int i = 0; i < 2; i++) {
                if (reply_fit_output(sp[i], sn[i], st[i], sb[i], &sp[i], &sn[i], &r->owned[i]) < 0) {
                        json_decref(o);
                        return request_finish(r, l, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
                }
                truncated = truncated || st[i] > sn[i] || r->owned[i];
        }
        json_object_set_new(o, "truncated", json_boolean(truncated));
        set_bytes(r, o, "stdout", sp[0], sn[0], sb[0]);
        set_bytes(r, o, "stderr", sp[1], sn[1], sb[1]);
        request_finish(r, l, o, NULL, 0, API_OK, NULL);
}

/* A terminal call whose reply waits for the looks at its jail's processes
 * (cgroup_pids_look was not conclusive): they go on a timer, 1 to 16 ms
 * apart, and the loop serves every other workspace between
 * them (slept through on the loop, they held it 7 to 8 ms a call). One
 * per workspace at a time; the command is done, so a cancel or the
 * connection's end finds nothing to cancel. */
struct PidsWait {
        uv_timer_t timer;
        Request *r;
        json_t *o;
        char *raw; /* the worker's output, copied: its reply is gone by then */
        size_t raw_len;
        uint64_t generation; /* the link that ran the command */
        PidsLooks looks;
};

static void pids_wait_free(uv_handle_t *h) {
        PidsWait *w = h->data;
        free(w->raw);
        free(w);
}

/* The reply, with the jail restarted when saturated and it is still the
 * workspace's jail with nothing else running in it. */
static void pids_wait_end(PidsWait *w, bool saturated) {
        Request *r = w->r;
        Workspace *ws = r->ws;
        ws->pids_wait = NULL;
        pids_looks_done(&w->looks);
        uv_timer_stop(&w->timer);
        WorkerLink *l = ws->link && ws->link->generation == w->generation ? ws->link : NULL;
        terminal_reply(r, l, w->raw, w->raw_len, w->o, saturated && l && l->n_inflight == 0);
        uv_close((uv_handle_t *)&w->timer, pids_wait_free);
}

static void on_pids_look(uv_timer_t *t) {
        PidsWait *w = t->data;
        int v = pids_looks_next(&w->looks);
        if (v != -EAGAIN)
                pids_wait_end(w, v == 1);
        else
                uv_timer_start(&w->timer, on_pids_look, pids_looks_delay(&w->looks), 0);
}

static bool pids_wait_start(Request *r, WorkerLink *l, JsonlMsg *m, json_t *o, PidsLooks *st) {
        PidsWait *w = calloc(1, sizeof *w);
        if (!w)
                return false;
        if (m->raw_len > 0) {
                if (!(w->raw = malloc(m->raw_len))) {
                        free(w);
                        return false;
                }
                memcpy(w->raw, m->raw, m->raw_len);
        }
        w->raw_len = m->raw_len;
        w->r = r;
        w->o = o;
        w->generation = l->generation;
        w->looks = *st;
        *st = (PidsLooks){ 0 };
        request_unlist(r);
        uv_timer_init(r->srv->loop, &w->timer);
        w->timer.data = w;
        uv_timer_start(&w->timer, on_pids_look, pids_looks_delay(&w->looks), 0);
        r->ws->pids_wait = w;
        return true;
}

static void settle_forget(Workspace *ws);

void tools_forget_workspace(Workspace *ws) {
        if (ws->pids_wait)
                pids_wait_end(ws->pids_wait, false);
        settle_forget(ws);
}

static void terminal_shape(Request *r, WorkerLink *l, JsonlMsg *m, json_t *o) {
        /* Leftovers of a fork bomb keep the jail at its process limit after
         * the command returned: restart the jail once nothing else runs. */
        bool restart = false;
        if (r->ws && l && l == r->ws->link && l->n_inflight == 0 && !r->ws->pids_wait) {
                PidsLooks st;
                int v = cgroup_pids_look(r->ws, l, &st);
                if (v == -EAGAIN && pids_wait_start(r, l, m, o, &st))
                        return;
                pids_looks_done(&st);
                restart = v == 1;
        }
        terminal_reply(r, l, m->raw, m->raw_len, o, restart);
}

/* ---- file_read ---- */

static void read_shape(Request *r, WorkerLink *l, JsonlMsg *m, json_t *o) {
        if (api_call_binary(&r->ac))
                return request_finish(r, l, o, m->raw, m->raw_len, API_OK, NULL);
        set_bytes(r, o, "content", m->raw, m->raw_len, reply_budget(r->id));
        request_finish(r, l, o, NULL, 0, API_OK, NULL);
}

/* ---- status ---- */

#define STATUS_DEFAULT_LIMIT 100
#define STATUS_MAX_LIMIT 1000

static int cmp_ws_path(const void *a, const void *b) {
        return strcmp((*(Workspace *const *)a)->path, (*(Workspace *const *)b)->path);
}

/* Counts by state for the whole table: what a summary needs at any scale. */
static json_t *status_summary(Server *srv, size_t *ret_total) {
        size_t total = 0, by_state[3] = { 0 }, workers = 0, draining = 0, queued = 0;
        for (Workspace *w = srv->workspaces; w; w = w->next) {
                total++;
                by_state[w->state <= WS_REFUSED ? w->state : WS_REFUSED]++;
                workers += !!w->link;
                for (WorkerLink *l = w->draining; l; l = l->next_draining)
                        draining++;
                queued += w->n_queued;
        }
        *ret_total = total;
        return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "workspaces", (json_int_t)total, "sandboxed",
                         (json_int_t)by_state[WS_SANDBOXED], "unsandboxed", (json_int_t)by_state[WS_UNSANDBOXED],
                         "refused", (json_int_t)by_state[WS_REFUSED], "with_worker", (json_int_t)workers, "draining",
                         (json_int_t)draining, "queued", (json_int_t)queued);
}

/* One page of workspaces sorted by path, from offset or past the path
 * `after` names: at most limit, and never more than one reply line
 * carries (then next_offset and next_after say where to go on). A cursor
 * by path holds while the table changes between pages (an entry that went
 * before an offset would shift the rest by one: one never seen); the
 * offset stays for the clients that use it. */
static void status_reply(Request *r) {
        Server *srv = r->srv;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ApiStatusArgs a = { 0 };
        if (json_dispatch(r->msg.obj, api_status_table, &a, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        if (a.after && a.offset) {
                json_dispatch_done(api_status_table, &a);
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST,
                                      "status: give \"offset\" or \"after\" (the last path of the page before), not both");
        }
        uint64_t limit = a.limit ? a.limit : STATUS_DEFAULT_LIMIT;
        if (limit > STATUS_MAX_LIMIT)
                limit = STATUS_MAX_LIMIT;
        json_t *o = json_object();
        json_t *d = json_pack("{s:i,s:i,s:I,s:i,s:i,s:i,s:i,s:s?,s:s?,s:s,s:s}", "pid", (int)getpid(), "uid",
                              (int)geteuid(), "uptime_s", (json_int_t)((now_ms() - srv->started_ms) / 1000), "clients",
                              (int)srv->n_clients, "workers", (int)srv->n_workers, "max_workers",
                              (int)srv->opt.max_workers, "max_clients", (int)srv->opt.max_clients, "socket",
                              srv->opt.socket_path, "audit_log", srv->opt.audit_path, "instance", srv->instance_id,
                              "boot_id", srv->boot_id);
        json_t *pp = d ? proxy_process_status() : NULL;
        if (pp)
                json_object_set_new(d, "proxy", pp);
        if (d)
                json_object_set_new(d, "monitor", monitor_link_status(srv));
        if (d) {
                json_object_set_new(d, "counters", daemon_counters_json(&srv->counters));
                uint64_t lost = 0;
                int ae = audit_failure(&lost);
                json_object_set_new(d, "audit_lost", json_integer((json_int_t)lost));
                json_object_set_new(d, "audit_error", ae ? json_string(strerror(ae)) : json_null());
                json_object_set_new(d, "cgroups", srv->cgroup_version ? json_integer(srv->cgroup_version) : json_null());
                if (srv->cgroup_why_not)
                        json_object_set_new(d, "cgroups_unavailable", json_string(srv->cgroup_why_not));
                /* What the backpressure bounds hold right now. */
                uint64_t in_flight = 0;
                for (Client *c = srv->clients; c; c = c->next)
                        in_flight += c->inflight;
                json_object_set_new(d, "calls_in_flight", json_integer((json_int_t)in_flight));
                json_object_set_new(d, "input_held_bytes", json_integer((json_int_t)srv->in_bytes));
                json_object_set_new(d, "replies_queued_bytes", json_integer((json_int_t)srv->out_bytes));
                json_object_set_new(d, "replies_spooled_bytes", json_integer((json_int_t)srv->spool_bytes));
                /* The start walks' directories: read, or taken from the
                 * walk cache unchanged (walk-cache.h). */
                json_object_set_new(d, "walk", json_pack("{s:I,s:I,s:b}", "dirs_read", (json_int_t)srv->walk_cache.n_read,
                                                         "dirs_reused", (json_int_t)srv->walk_cache.n_reused, "cached",
                                                         srv->walk_cache.dir != NULL));
        }
        size_t total = 0;
        json_t *summary = status_summary(srv, &total);
        char canon[4096];
        if (a.workspace && !realpath(a.workspace, canon))
                snprintf(canon, sizeof canon, "%s", a.workspace);
        _cleanup_free_ Workspace **all = calloc(total ? total : 1, sizeof *all);
        size_t n = 0;
        for (Workspace *w = srv->workspaces; all && w; w = w->next)
                if (!a.workspace || streq(w->path, canon))
                        all[n++] = w;
        if (all)
                qsort(all, n, sizeof *all, cmp_ws_path);
        json_t *ws = json_array();
        size_t budget = reply_budget(r->id), used = 4096, i = a.offset;
        if (a.after) {
                /* The first path that sorts after it (the table is sorted:
                 * a binary search), whether or not it is still there. */
                size_t lo = 0, hi = n;
                while (all && lo < hi) {
                        size_t mid = lo + (hi - lo) / 2;
                        if (strcmp(all[mid]->path, a.after) <= 0)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                i = lo;
        }
        for (; ws && all && i < n && json_array_size(ws) < limit; i++) {
                json_t *e = workspace_status(all[i]);
                size_t len = e ? json_dumpb(e, NULL, 0, JSON_COMPACT) : 0;
                if (json_array_size(ws) > 0 && used + len + 1 > budget) {
                        json_decref(e);
                        break;
                }
                used += len + 1;
                json_array_append_new(ws, e);
        }
        if (o) {
                json_object_set_new(o, "daemon", d);
                json_object_set_new(o, "summary", summary);
                json_object_set_new(o, "workspaces", ws);
                json_object_set_new(o, "offset", json_integer((json_int_t)a.offset));
                json_object_set_new(o, "next_offset", i < n ? json_integer((json_int_t)i) : json_null());
                /* A page holds one entry at least (limit >= 1, and the
                 * first goes whatever its size). */
                json_object_set_new(o, "next_after",
                                    i < n && json_array_size(ws) ? json_string(all[i - 1]->path) : json_null());
        } else {
                json_decref(d);
                json_decref(summary);
                json_decref(ws);
        }
        json_dispatch_done(api_status_table, &a);
        r->target = json_null();
        request_finish(r, NULL, o, NULL, 0, API_OK, NULL);
}

/* ---- metrics ---- */

/* The daemon's figures in the Prometheus text format (metrics.c), as the
 * result's "metrics" string: what `vectora-sandbox metrics` prints. */
static void metrics_reply(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (json_dispatch(r->msg.obj, api_no_args_table, NULL, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        _cleanup_(strbuf_donep) StrBuf text = STRBUF_INIT;
        if (metrics_render(r->srv, &text) < 0 || strbuf_appendc(&text, 0) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        r->target = json_null();
        request_finish(r, NULL, json_pack("{s:s}", "metrics", text.data), NULL, 0, API_OK, NULL);
}

/* ---- policy_allow ---- */

/* The host user approves the current vectora.toml of the workspace the
 * request names (approval.h). Peers inside a jail never get here (the
 * server refuses them); an agent backend must not expose this tool. */
static void policy_allow_reply(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        char none;
        if (json_dispatch(r->msg.obj, api_no_args_table, &none, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        const char *wsp = json_string_value(json_object_get(r->msg.obj, "workspace"));
        r->target = json_string(wsp);
        VsAllowResult a = {};
        if (approval_allow(r->srv->opt.state_dir, r->dir ? r->dir : r->ws->path, &a, &err) < 0) {
                return request_finish(r, NULL, NULL, NULL, 0, api_error_from_kind(vs_error_kind(err), API_ERROR_CONFIG_INVALID),
                                      vs_error_message(err));
        }
        log_info("workspace %s: policy approved by uid %u%s", a.root, (unsigned)r->client->uid,
                 a.changed ? "" : " (no change)");
        json_t *o = approval_allow_to_json(&a);
        approval_allow_result_done(&a);
        /* The approval applies from the next call: re-read now, so the
         * worker is recycled under the approved policy. */
        workspace_reload(r->ws);
        free(r->pending);
        r->pending = r->ws->pending ? strdup(r->ws->pending) : NULL;
        if (!o)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        request_finish(r, NULL, o, NULL, 0, API_OK, NULL);
}

/* ---- cancel ---- */

/* r's worker call stops: dropped from the queue (r is finished then) or
 * the worker cancels it (r is finished with its reply). */
static const char cancel_by_client[] = "cancelled by the client (cancel); the command's processes were killed";
static void settle_unpark(Request *r);

static bool request_cancel(Request *r, const char *why) {
        if (r->cancelled)
                return true;
        r->cancelled = true;
        r->cancel_why = why;
        if (r->settle_ws) {
                /* Waiting for its workspace's config to settle: nothing
                 * ran, nothing will. */
                log_info("workspace %s: %s of client %d (uid %u), waiting for its vectora.toml to settle: %s",
                         r->settle_ws->path, r->tool, (int)r->client->pid, (unsigned)r->client->uid, why);
                settle_unpark(r);
                request_finish(r, NULL, NULL, NULL, 0, API_ERROR_CANCELLED,
                               why == cancel_by_client
                                       ? "cancelled by the client (cancel) before it ran, while its workspace's "
                                         "vectora.toml settled; nothing ran"
                                       : "cancelled: its connection closed before it ran, while its workspace's "
                                         "vectora.toml settled; nothing ran");
                return true;
        }
        log_info("workspace %s: %s of client %d (uid %u): %s", r->ws->path, r->tool, (int)r->client->pid,
                 (unsigned)r->client->uid, why);
        return workspace_cancel(r->ws, &r->call);
}

/* The client's connection closed: nobody reads what its calls return, so
 * they stop, except those that asked to run on ("detach": true). */
static void cancel_client_calls(Client *c) {
        for (Request *r = c->calls, *next; r; r = next) {
                next = r->next_call; /* cancelling may finish r, never another */
                /* A parked call never started, so it does not start,
                 * "detach" or not (a terminal_open then had no client to
                 * own its session: a host shell left running, attack
                 * review 13). */
                if (!r->detach || r->settle_ws)
                        (void)request_cancel(r, "cancelled: its connection closed; the command's processes were killed");
        }
}

void tools_client_closing(Client *c) {
        cancel_client_calls(c);
        pty_close_all(c);
}

/* {"tool":"cancel","target":ID}: the call with that id in flight on this
 * connection is cancelled; its own reply says cancelled (or its result,
 * when it ended first). This reply says whether it was found. */
static void cancel_reply(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        char none;
        if (json_dispatch(r->msg.obj, api_cancel_table, &none, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        json_t *target = json_object_get(r->msg.obj, "target");
        if (!json_is_integer(target) && !json_is_string(target))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST,
                                      "\"target\" must be the id (an integer or a string) of a call in flight on this connection");
        r->target = json_pack("{s:O}", "request", target);
        bool found = false;
        for (Request *q = r->client->calls; q; q = q->next_call)
                if (q->id && json_equal(q->id, target)) {
                        found = request_cancel(q, cancel_by_client);
                        break;
                }
        request_finish(r, NULL, json_pack("{s:b}", "found", found), NULL, 0, API_OK, NULL);
}

/* ---- dispatch ---- */

/* How a worker tool's result is shaped once the core is done (payload,
 * reply fitting); decoding is the core's (api-call.h). */
typedef void (*ToolShape)(Request *r, WorkerLink *l, JsonlMsg *m, json_t *o);
static const ToolShape shapes[_API_TOOL_MAX] = {
        [API_TOOL_TERMINAL] = terminal_shape,
        [API_TOOL_FILE_READ] = read_shape,
        [API_TOOL_FILE_WRITE] = shape_fields,
        [API_TOOL_FILE_EDIT] = shape_fields,
        [API_TOOL_LIST_DIR] = shape_fields,
        [API_TOOL_GLOB] = shape_fields,
        [API_TOOL_GREP] = shape_fields,
};

static void tool_shape(Request *r, WorkerLink *l, JsonlMsg *m, json_t *o) {
        shapes[r->which](r, l, m, o);
}

static void worker_tool(Request *r);

static void terminal_open(Request *r) {
        pty_open(r, r->msg.obj);
}

/* Where each tool goes once named. */
typedef struct Route {
        bool pty_message;      /* an open terminal's input, resize or close: no request of its own */
        bool no_workspace;     /* answered before a workspace is looked up */
        bool any_sandbox;      /* runs nothing in the workspace: require_sandbox does not refuse it */
        void (*run)(Request *r);
} Route;

static const Route routes[_API_TOOL_MAX] = {
        [API_TOOL_TERMINAL] = { .run = worker_tool },
        [API_TOOL_FILE_READ] = { .run = worker_tool },
        [API_TOOL_FILE_WRITE] = { .run = worker_tool },
        [API_TOOL_FILE_EDIT] = { .run = worker_tool },
        [API_TOOL_TERMINAL_OPEN] = { .run = terminal_open },
        [API_TOOL_TERMINAL_INPUT] = { .pty_message = true },
        [API_TOOL_TERMINAL_RESIZE] = { .pty_message = true },
        [API_TOOL_TERMINAL_CLOSE] = { .pty_message = true },
        [API_TOOL_PROCESS_START] = { .run = process_tool },
        [API_TOOL_PROCESS_OUTPUT] = { .run = process_tool },
        [API_TOOL_PROCESS_INPUT] = { .run = process_tool },
        [API_TOOL_PROCESS_SIGNAL] = { .run = process_tool },
        [API_TOOL_PROCESS_LIST] = { .run = process_tool },
        [API_TOOL_POLICY_ALLOW] = { .any_sandbox = true, .run = policy_allow_reply },
        [API_TOOL_STATUS] = { .no_workspace = true, .run = status_reply },
        [API_TOOL_METRICS] = { .no_workspace = true, .run = metrics_reply },
        [API_TOOL_CANCEL] = { .no_workspace = true, .run = cancel_reply },
        [API_TOOL_LIST_DIR] = { .run = worker_tool },
        [API_TOOL_GLOB] = { .run = worker_tool },
        [API_TOOL_GREP] = { .run = worker_tool },
        [API_TOOL_SECRET_SET] = { .no_workspace = true, .run = secret_set_reply },
        [API_TOOL_SECRET_LIST] = { .no_workspace = true, .run = secret_list_reply },
        [API_TOOL_SECRET_DELETE] = { .no_workspace = true, .run = secret_delete_reply },
};

static void with_workspace(Request *r);

void tools_handle(Client *c, JsonlMsg *m) {
        Server *srv = c->srv;
        json_t *id = json_object_get(m->obj, "id");
        const char *tool = json_string_value(json_object_get(m->obj, "tool"));
        ApiTool which = api_tool_from_name(tool);
        const Route *route = which >= 0 ? &routes[which] : NULL;
        /* Shutting down, a request still buffered is answered, nothing
         * run (server_drain_clients): a terminal's message too, but only
         * one with an id is answered at all (docs/protocol.md). */
        if (route && route->pty_message && (!srv->shutting_down || !id)) {
                if (!srv->shutting_down)
                        pty_message(c, id, tool, m->obj, m);
                jsonl_msg_done(m);
                return;
        }
        srv->counters.requests++;
        Request *r = calloc(1, sizeof *r);
        if (!r) {
                jsonl_msg_done(m);
                tools_reply_bad_line(c, API_ERROR_INTERNAL, "out of memory");
                return;
        }
        r->srv = srv;
        r->client = c;
        client_ref(c);
        c->inflight++;
        r->in_bytes = c->msg_bytes;
        c->in_held += r->in_bytes;
        r->id = id ? json_incref(id) : NULL;
        r->msg = *m;
        *m = (JsonlMsg)JSONL_MSG_INIT;
        r->t0_us = now_us();
        r->call.req = r;
        r->tool = tool ? tool : "?";
        r->which = which;
        if (id && !json_is_integer(id) && !json_is_string(id) && !json_is_null(id))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, "\"id\" must be an integer or a string");
        if (!tool)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, "missing \"tool\" (a string)");
        if (srv->shutting_down)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_SHUTTING_DOWN, "the daemon is shutting down; nothing ran");
        if (route && route->no_workspace)
                return route->run(r);
        with_workspace(r);
}

/* ---- waiting for a first-seen vectora.toml to settle ---- */

/* One timer per workspace for all its waiting calls. A timer per call
 * woke each of them every 100 ms to look its workspace up again: 8 000
 * waiting calls held another workspace's call 1.2 s (attack review 14). */
typedef struct SettleTimer {
        uv_timer_t t;
        Workspace *ws; /* NULL once the entry is gone: then only closed */
} SettleTimer;

static void settle_timer_closed(uv_handle_t *h) {
        free(h->data);
}

static void settle_timer_close(Workspace *ws) {
        if (!ws->settle_timer)
                return;
        ws->settle_timer->ws = NULL;
        uv_close((uv_handle_t *)&ws->settle_timer->t, settle_timer_closed);
        ws->settle_timer = NULL;
}

static void settle_push(Request **head, Request *r) {
        r->next_settle = *head;
        if (*head)
                (*head)->settle_pprev = &r->next_settle;
        *head = r;
        r->settle_pprev = head;
}

static void settle_remove(Request *r) {
        *r->settle_pprev = r->next_settle;
        if (r->next_settle)
                r->next_settle->settle_pprev = r->settle_pprev;
        r->next_settle = NULL;
        r->settle_pprev = NULL;
}

/* Out of its workspace's waiters (or those being gone through) and its
 * client's calls. */
static void settle_unpark(Request *r) {
        settle_remove(r);
        r->settle_ws = NULL;
        request_unlist(r);
}

static void settle_fire(uv_timer_t *t);

/* r waits (again) for ws's config, on ws's timer, unless it has waited a
 * second already: then it is refused, "keeps changing". */
static void settle_wait(Request *r, Workspace *ws) {
        uint64_t now = now_ms();
        if (r->srv->shutting_down)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_SHUTTING_DOWN, "the daemon is shutting down; nothing ran");
        if (!r->settle_since_ms)
                r->settle_since_ms = now;
        /* Its audit record names the workspace, whatever ends it. */
        if (!r->settle_path && !(r->settle_path = strdup(ws->path)))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        if (now - r->settle_since_ms >= APPROVAL_STABLE_LIMIT_MS) {
                _cleanup_(vs_error_freep) VsError *e = NULL;
                (void)approval_keeps_changing(ws->path, &e);
                return request_finish(r, NULL, NULL, NULL, 0, api_error_from_kind(vs_error_kind(e), API_ERROR_SANDBOX_UNAVAILABLE),
                                      vs_error_message(e));
        }
        if (!ws->settle_timer) {
                SettleTimer *st = calloc(1, sizeof *st);
                if (!st)
                        return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
                uv_timer_init(r->srv->loop, &st->t);
                st->t.data = st;
                st->ws = ws;
                ws->settle_timer = st;
        }
        /* Cancellable while it waits (request_cancel). */
        request_list(r);
        r->settle_ws = ws;
        settle_push(&ws->settle_waiters, r);
        if (!uv_is_active((uv_handle_t *)&ws->settle_timer->t))
                uv_timer_start(&ws->settle_timer->t, settle_fire, ws->settle_until_ms > now ? ws->settle_until_ms - now : 1, 0);
}

/* When ws's config may have settled: the first waiting call looks the
 * workspace up again (which reads the file once, workspace.c refresh);
 * if it still changes, the others wait on, each put back as it was (no
 * look of its own, still among its client's calls) unless its second is
 * over; else each goes on as any call (its own look, then its tool). In
 * the order they came. They are gone through from a list of the
 * workspace's own (settle_firing): answering one may close its client,
 * which cancels that client's other waiting calls, and a cancel takes a
 * call out of whichever list holds it. */
static void settle_fire(uv_timer_t *t) {
        SettleTimer *st = t->data;
        Workspace *ws = st->ws;
        if (!ws)
                return;
        while (ws->settle_waiters) {
                Request *r = ws->settle_waiters;
                settle_remove(r);
                settle_push(&ws->settle_firing, r);
        }
        for (bool first = true; ws->settle_firing; first = false) {
                Request *r = ws->settle_firing;
                uint64_t now = now_ms();
                /* Looked at already this fire, and not due for another look. */
                bool still = !first && ws->settle_ms && now < ws->settle_until_ms;
                if (still && !r->srv->shutting_down && now - r->settle_since_ms < APPROVAL_STABLE_LIMIT_MS) {
                        settle_remove(r);
                        settle_push(&ws->settle_waiters, r);
                        continue;
                }
                settle_unpark(r); /* with_workspace lists it again, as any call */
                if (r->srv->shutting_down)
                        request_finish(r, NULL, NULL, NULL, 0, API_ERROR_SHUTTING_DOWN, "the daemon is shutting down; nothing ran");
                else if (still)
                        settle_wait(r, ws); /* its second is over: refused */
                else
                        with_workspace(r);
        }
        if (ws->settle_waiters && !uv_is_active((uv_handle_t *)&st->t)) {
                uint64_t now = now_ms();
                uv_timer_start(&st->t, settle_fire, ws->settle_until_ms > now ? ws->settle_until_ms - now : 1, 0);
        }
        /* Nobody waits: the timer goes until a call waits again. */
        if (!ws->settle_waiters)
                settle_timer_close(ws);
}

/* The entry goes (the daemon's shutdown: no entry with waiting calls is
 * freed otherwise, workspace.c ws_unused): its calls are answered, its
 * timer closed. */
static void settle_forget(Workspace *ws) {
        while (ws->settle_waiters || ws->settle_firing) {
                Request *r = ws->settle_waiters ? ws->settle_waiters : ws->settle_firing;
                settle_unpark(r);
                request_finish(r, NULL, NULL, NULL, 0, r->srv->shutting_down ? API_ERROR_SHUTTING_DOWN : API_ERROR_INTERNAL,
                               r->srv->shutting_down ? "the daemon is shutting down; nothing ran"
                                                     : "its workspace's entry went away while its vectora.toml settled; nothing ran");
        }
        settle_timer_close(ws);
}

/* The request's workspace found (its policy read, the jail's start asked
 * for), then the tool run: at once, or once a first-seen vectora.toml has
 * settled (workspace.h, settle_ms): the request waits on its workspace's
 * timer (settle_wait), the loop serves everything else meanwhile (before,
 * the loop slept up to a second per such request, every workspace with
 * it). */
static void with_workspace(Request *r) {
        Server *srv = r->srv;
        const Route *route = r->which >= 0 ? &routes[r->which] : NULL;
        free(r->dir);
        free(r->pending);
        r->dir = r->pending = NULL;
        if (!route)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_UNKNOWN_TOOL,
                                      "unknown tool; known: terminal, file_read, file_write, file_edit, terminal_open, "
                                      "process_start, process_output, process_input, process_signal, process_list, "
                                      "policy_allow, status, metrics, cancel, list_dir, glob, grep, secret_set, secret_list, "
                                      "secret_delete");

        const char *wsp = json_string_value(json_object_get(r->msg.obj, "workspace"));
        if (!wsp)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, "missing \"workspace\" (an absolute path)");
        _cleanup_(vs_error_freep) VsError *err = NULL;
        Workspace *ws = NULL;
        if (workspace_get(srv, wsp, &ws, &r->dir, &r->pending, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, api_error_from_kind(vs_error_kind(err), API_ERROR_BAD_REQUEST),
                                      vs_error_message(err));
        if (ws->settle_ms)
                return settle_wait(r, ws);
        r->ws = ws;
        ws->refs++;
        if (!r->pending && ws->pending && !(r->pending = strdup(ws->pending)))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        /* A platform that must never run unsandboxed says so per call: the
         * workspace as resolved now (a wrong path, a missing or
         * section-less vectora.toml) is refused rather than run on the host.
         * policy_allow runs nothing in the workspace, so it is not refused. */
        json_t *req_sb = json_object_get(r->msg.obj, "require_sandbox");
        if (req_sb && !json_is_boolean(req_sb))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, "\"require_sandbox\" must be a boolean");
        if (route->any_sandbox)
                return route->run(r);
        /* --audit-required: a call that could leave no record does not
         * run. Its refusal is audited like any; once that record is
         * written, the log works again and the next call runs. */
        uint64_t lost = 0;
        int ae = r->srv->opt.audit_required ? audit_failure(&lost) : 0;
        if (ae && ws->state == WS_SANDBOXED) {
                char msg[512];
                snprintf(msg, sizeof msg,
                         "the audit log cannot be written (%s; %llu record(s) lost) and the daemon runs with --audit-required: free space where the audit log lives (or fix it), then call again; nothing ran",
                         strerror(ae), (unsigned long long)lost);
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_SANDBOX_UNAVAILABLE, msg);
        }
        if (json_is_true(req_sb) && ws->state == WS_UNSANDBOXED)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_SANDBOX_REQUIRED,
                                      "this workspace runs unsandboxed (no [sandbox] table in a vectora.toml, or enabled = false) and the request requires a sandbox; nothing ran");

        route->run(r);
}

/* terminal, file_read, file_write, file_edit: one call of the core's
 * (tool-call.h) on the workspace's worker. */
static void worker_tool(Request *r) {
        Workspace *ws = r->ws;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int k = api_call_decode(&r->ac, r->which, &r->msg, r->dir, &err);
        json_decref(r->target);
        r->target = json_incref(r->ac.target);
        if (k == -ENOMEM)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        if (k < 0)
                return request_finish(r, NULL, NULL, NULL, 0, api_error_from_kind(vs_error_kind(err), API_ERROR_BAD_REQUEST),
                                      vs_error_message(err));
        if (ws->state == WS_REFUSED)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_CONFIG_INVALID, vs_error_message(ws->config_error));
        /* Lockdown refuses a guarantee it cannot keep (rule 5). */
        if (request_lockdown_refuses(r))
                return;
        json_t *detach = json_object_get(r->msg.obj, "detach");
        if (detach && !json_is_boolean(detach))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, "\"detach\" must be a boolean");
        /* Cancellable from now on: by a cancel naming its id, or by its
         * connection closing. */
        r->detach = json_is_true(detach);
        request_list(r);
        /* The ceilings: when each request goes out (call_build). */
        r->call.build = call_build;
        r->call.done = call_done;
        workspace_submit(ws, &r->call);
}
