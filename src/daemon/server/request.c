/* SPDX-License-Identifier: MIT */
/* A request's end, whatever tool it was: the reply (the result or the
 * error, how it ran, the network refusals and host-run files seen while it
 * ran), the counters, the audit record, then the request freed and its
 * client's budgets released. Every tool's code ends here, so this file
 * calls none of them. */
#include <string.h>

#include "api-result.h"
#include "audit.h"
#include "base64.h"
#include "proxy.h"
#include "request.h"
#include "server.h"
#include "watch.h"
#include "worker-link.h"
#include "workspace.h"

json_t *b64_json(const void *p, size_t n) {
        size_t len = 0;
        _cleanup_free_ char *out = base64_encode_alloc(p, n, &len);
        return out ? json_stringn(out, len) : NULL;
}

static bool sandboxed_of(Request *r, WorkerLink *l) {
        if (l)
                return l->launch->sandboxed;
        return r->ws && r->ws->state == WS_SANDBOXED;
}

void request_unlist(Request *r) {
        if (!r->listed)
                return;
        *r->call_pprev = r->next_call;
        if (r->next_call)
                r->next_call->call_pprev = r->call_pprev;
        r->next_call = NULL;
        r->call_pprev = NULL;
        r->listed = false;
}

void request_list(Request *r) {
        if (r->listed)
                return;
        Request **head = &r->client->calls;
        r->next_call = *head;
        if (*head)
                (*head)->call_pprev = &r->next_call;
        *head = r;
        r->call_pprev = head;
        r->listed = true;
}

static void request_free(Request *r) {
        request_unlist(r);
        if (r->args && r->free_args)
                r->free_args(r->args);
        if (r->args && r->args_table)
                json_dispatch_done(r->args_table, r->args);
        free(r->args);
        json_decref(r->id);
        json_decref(r->target);
        free(r->dir);
        free(r->dir_path);
        free(r->settle_path);
        free(r->pending);
        jsonl_msg_done(&r->msg);
        if (r->ws)
                r->ws->refs--;
        free(r->owned[0]);
        free(r->owned[1]);
        api_call_done(&r->ac);
        free(r);
}

/* Network allowlist: what the proxy refused while the call ran, and a
 * word on a direct connection's ENETUNREACH (strerror's text, as tools
 * print it), so the agent sees why a download failed. */
static void network_result(Request *r, json_t *o) {
        json_t *d = proxy_denials_since(r->ws->proxy, r->t0_us);
        if (d)
                json_object_set_new(o, "network_denied", d);
        /* The proxy process ended meanwhile: the connections it carried
         * were cut, which the tool may report as a plain network error. */
        const char *lost = proxy_lost_since(r->ws->proxy, r->t0_us);
        json_t *deg = lost ? json_object_get(json_object_get(o, "sandbox"), "degraded") : NULL;
        if (json_is_array(deg))
                json_array_append_new(deg, json_string(lost));
        for (size_t i = 0; i < r->n_texts; i++)
                if (r->texts[i].data && memmem(r->texts[i].data, r->texts[i].len, "Network is unreachable", 22)) {
                        json_object_set_new(o, "network_note",
                                            json_string("the jail has no direct network: only the hosts in network = [...] are reachable, through the proxy that HTTP_PROXY/HTTPS_PROXY name (http://127.0.0.1:3128)"));
                        break;
                }
}

/* While records cannot be written, every result says so: a call that left
 * no trace is not silent about it. */
static void audit_note(json_t *o) {
        uint64_t lost = 0;
        int e = audit_failure(&lost);
        json_t *deg = e ? json_object_get(json_object_get(o, "sandbox"), "degraded") : NULL;
        if (!json_is_array(deg))
                return;
        char msg[256];
        snprintf(msg, sizeof msg, "audit: the audit log cannot be written (%s); %llu record(s) lost", strerror(e),
                 (unsigned long long)lost);
        json_array_append_new(deg, json_string(msg));
}

void request_finish(Request *r, WorkerLink *l, json_t *result, const void *raw, size_t raw_len, ApiError code,
                    const char *message) {
        Server *srv = r->srv;
        bool sandboxed = sandboxed_of(r, l);
        /* Files the host runs later written while this call ran (by it, or
         * by anything else in the jail meanwhile). */
        json_t *host_run = r->ws ? workspace_host_run_since(r->ws, r->t0_us) : NULL;
        const char *code_name = code ? api_error_name(code) ?: api_error_name(API_ERROR_INTERNAL) : NULL;
        /* policy_pending: a loosening of vectora.toml waiting for the
         * host's approval; this call ran under the approved policy. */
        json_t *o = api_result_close(result, code_name, message, sandboxed, r->pending, host_run,
                                     r->ws ? workspace_sandbox_json(r->ws, l) : NULL);
        if (o) {
                json_object_set(o, "id", r->id ? r->id : json_null());
                if (r->ws && r->ws->proxy)
                        network_result(r, o);
        }
        const char *outcome = api_error_outcome(code);
        metrics_record(&srv->metrics, r->which, code, now_us() - r->t0_us);
        Counters *cs[2] = { &srv->counters, r->ws ? &r->ws->counters : NULL };
        for (int i = 0; i < 2; i++)
                if (cs[i]) {
                        if (!code)
                                cs[i]->ok++;
                        else if (streq(outcome, "refused"))
                                cs[i]->refused++;
                        else if (streq(outcome, "denied"))
                                cs[i]->denied++;
                        else
                                cs[i]->errors++;
                }
        if (code && r->ws && code != API_ERROR_DENIED && code != API_ERROR_CONFIG_INVALID)
                workspace_set_error(r->ws, "%s: %s: %s", r->tool, api_error_name(code), message ? message : "");
        AuditRecord a = {
                .uid = r->client->uid,
                .pid = r->client->pid,
                .workspace = r->ws ? r->ws->path : r->settle_path,
                .tool = r->tool,
                .target = r->target,
                .sandboxed = sandboxed,
                .generation = l ? l->generation : r->ws ? r->ws->generation : 0,
                .outcome = outcome,
                .code = api_error_name(code),
                .reason = code ? message : NULL,
                .duration_ms = (now_us() - r->t0_us) / 1000,
                .host_run = json_array_size(host_run) ? host_run : NULL,
        };
        /* The audit record is written before the reply leaves: a client
         * that has its result can find the call in the log. */
        audit_write(&a);
        audit_note(o);
        json_decref(host_run);
        client_send_json_texts(r->client, o, r->texts, code ? 0 : r->n_texts, code ? NULL : raw, code ? 0 : raw_len);
        r->n_texts = 0;
        Client *c = r->client;
        c->inflight--;
        size_t in_bytes = r->in_bytes;
        request_free(r);
        client_release_input(c, in_bytes);
        client_update_reading(c);
        client_maybe_close(c);
        client_unref(c);
}

bool request_session_opened(Request *r, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message,
                            int64_t *ret_pid) {
        ProtocolReplyHead h;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (!m)
                request_finish(r, l, NULL, NULL, 0, code, message);
        else if (protocol_decode_reply_head(m->obj, &h, &err) < 0)
                request_finish(r, l, NULL, NULL, 0, API_ERROR_WORKER_CRASHED, "the worker sent a malformed reply");
        else if (!h.ok)
                request_finish(r, l, NULL, NULL, 0, api_error_from_kind(h.error_code_name, API_ERROR_IO),
                               h.error_message ? h.error_message : "the worker could not start it");
        else if (protocol_decode_session_open_reply(m->obj, ret_pid, &err) < 0)
                request_finish(r, l, NULL, NULL, 0, API_ERROR_WORKER_CRASHED, "the worker sent a malformed reply");
        else
                return true;
        return false;
}

bool request_lockdown_refuses(Request *r) {
        Workspace *ws = r->ws;
        const char *gap = ws->policy && ws->policy->lockdown ? watch_gap(ws) : NULL;
        if (!gap)
                return false;
        char why[1024];
        snprintf(why, sizeof why, "lockdown: %s; %s", gap,
                 ws->watch ? "list narrower paths or mask the large trees"
                           : "raise fs.inotify.max_user_instances or end processes of this user that hold inotify instances");
        request_finish(r, NULL, NULL, NULL, 0, API_ERROR_SANDBOX_UNAVAILABLE, why);
        return true;
}

void audit_target_pty(Request *r, uint64_t id) {
        json_t *t = json_pack("{s:I}", "pty", (json_int_t)id);
        if (t) {
                json_decref(r->target);
                r->target = t;
        }
}
