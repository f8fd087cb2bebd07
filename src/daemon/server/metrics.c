/* SPDX-License-Identifier: MIT */
/* The Prometheus text exposition (version 0.0.4) of the daemon's figures.
 * Names follow Prometheus' conventions: one prefix, snake case, a unit
 * suffix in base units (_seconds, _bytes), _total on counters; labels
 * name what varies (tool, code, reason, state). A series whose count is
 * zero is left out, but for the gauges of state, which are always there. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "inotify-hub.h"
#include "macro.h"
#include "metrics.h"
#include "proxy.h"
#include "server.h"
#include "time-util.h"
#include "worker-link.h"
#include "workspace.h"

#define PREFIX "vectora_sandbox_"

static const uint64_t bucket_us[METRICS_BUCKETS] = {
        100,    250,     500,     1000,    2500,    5000,     10000,    25000,
        50000,  100000,  250000,  500000,  1000000, 5000000,  30000000, 120000000,
};

void metrics_record(Metrics *m, ApiTool tool, ApiError code, uint64_t duration_us) {
        size_t t = tool >= 0 && tool < _API_TOOL_MAX ? (size_t)tool : _API_TOOL_MAX;
        size_t c = code >= 0 && code < _API_ERROR_MAX ? (size_t)code : API_ERROR_INTERNAL;
        m->calls[t][c]++;
        size_t b = 0;
        while (b < METRICS_BUCKETS && duration_us > bucket_us[b])
                b++;
        m->latency[t][b]++;
        m->latency_sum_us[t] += duration_us;
}

static const char *tool_label(size_t t) {
        return t < _API_TOOL_MAX ? api_tool_name((ApiTool)t) : "unknown";
}

static const char *code_label(size_t c) {
        return c == API_OK ? "ok" : api_error_name((ApiError)c);
}

static int head(StrBuf *o, const char *name, const char *type, const char *help) {
        return strbuf_appendf(o, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s %s\n", name, help, name, type);
}

/* A series with no label, or with one label. */
static int one(StrBuf *o, const char *name, const char *type, const char *help, uint64_t v) {
        int r = head(o, name, type, help);
        return r < 0 ? r : strbuf_appendf(o, PREFIX "%s %llu\n", name, (unsigned long long)v);
}

static int labelled(StrBuf *o, const char *name, const char *label, const char *value, uint64_t v) {
        return strbuf_appendf(o, PREFIX "%s{%s=\"%s\"} %llu\n", name, label, value, (unsigned long long)v);
}

/* Seconds with microsecond precision and no trailing zeros ("0.0001",
 * "2.5", "120"), as Prometheus' own clients write bucket bounds. */
static int seconds(StrBuf *o, uint64_t us) {
        char frac[8];
        snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(us % 1000000));
        size_t n = strlen(frac);
        while (n > 0 && frac[n - 1] == '0')
                frac[--n] = 0;
        return strbuf_appendf(o, "%llu%s%s", (unsigned long long)(us / 1000000), n ? "." : "", frac);
}

static int calls(StrBuf *o, const Metrics *m) {
        int r = head(o, "calls_total", "counter", "Daemon API calls answered, by tool and result (ok or the error code).");
        for (size_t t = 0; r >= 0 && t <= _API_TOOL_MAX; t++)
                for (size_t c = 0; r >= 0 && c < _API_ERROR_MAX; c++)
                        if (m->calls[t][c])
                                r = strbuf_appendf(o, PREFIX "calls_total{tool=\"%s\",code=\"%s\"} %llu\n", tool_label(t),
                                                   code_label(c), (unsigned long long)m->calls[t][c]);
        /* Refusals by reason: the codes the audit log calls refused or
         * denied, over every tool. */
        if (r >= 0)
                r = head(o, "refusals_total", "counter",
                         "Calls refused (the policy, a missing isolation layer, a peer not allowed) or denied, by reason.");
        for (size_t c = 1; r >= 0 && c < _API_ERROR_MAX; c++) {
                const char *outcome = api_error_outcome((ApiError)c);
                if (!streq(outcome, "refused") && !streq(outcome, "denied"))
                        continue;
                uint64_t n = 0;
                for (size_t t = 0; t <= _API_TOOL_MAX; t++)
                        n += m->calls[t][c];
                if (n)
                        r = labelled(o, "refusals_total", "reason", code_label(c), n);
        }
        return r;
}

static int latency(StrBuf *o, const Metrics *m) {
        int r = head(o, "call_duration_seconds", "histogram",
                     "Time from a call's request line to its reply, by tool.");
        for (size_t t = 0; r >= 0 && t <= _API_TOOL_MAX; t++) {
                uint64_t count = 0;
                for (size_t b = 0; b <= METRICS_BUCKETS; b++)
                        count += m->latency[t][b];
                if (!count)
                        continue;
                uint64_t cum = 0;
                for (size_t b = 0; r >= 0 && b <= METRICS_BUCKETS; b++) {
                        cum += m->latency[t][b];
                        r = strbuf_appendf(o, PREFIX "call_duration_seconds_bucket{tool=\"%s\",le=\"", tool_label(t));
                        if (r >= 0)
                                r = b < METRICS_BUCKETS ? seconds(o, bucket_us[b]) : strbuf_appends(o, "+Inf");
                        if (r >= 0)
                                r = strbuf_appendf(o, "\"} %llu\n", (unsigned long long)cum);
                }
                if (r >= 0)
                        r = strbuf_appendf(o, PREFIX "call_duration_seconds_sum{tool=\"%s\"} ", tool_label(t));
                if (r >= 0)
                        r = seconds(o, m->latency_sum_us[t]);
                if (r >= 0)
                        r = strbuf_appendf(o, "\n" PREFIX "call_duration_seconds_count{tool=\"%s\"} %llu\n", tool_label(t),
                                           (unsigned long long)count);
        }
        return r;
}

/* Workspaces by state and their jails, counted over the whole table. */
static int state(StrBuf *o, Server *srv) {
        uint64_t by_state[3] = { 0 }, running = 0, draining = 0, queued = 0;
        for (Workspace *w = srv->workspaces; w; w = w->next) {
                by_state[w->state <= WS_REFUSED ? w->state : WS_REFUSED]++;
                running += !!w->link;
                for (WorkerLink *l = w->draining; l; l = l->next_draining)
                        draining++;
                queued += w->n_queued;
        }
        static const char *const names[3] = { [WS_SANDBOXED] = "sandboxed", [WS_UNSANDBOXED] = "unsandboxed",
                                              [WS_REFUSED] = "refused" };
        int r = head(o, "workspaces", "gauge", "Workspaces the daemon holds, by state.");
        for (size_t s = 0; r >= 0 && s < ELEMENTSOF(names); s++)
                r = labelled(o, "workspaces", "state", names[s], by_state[s]);
        if (r >= 0)
                r = head(o, "jails", "gauge", "Workers (one jail each), serving or draining after a policy change.");
        if (r >= 0)
                r = labelled(o, "jails", "state", "serving", running);
        if (r >= 0)
                r = labelled(o, "jails", "state", "draining", draining);
        if (r >= 0)
                r = one(o, "calls_queued", "gauge", "Calls waiting for their workspace's worker.", queued);
        return r;
}

static int counters(StrBuf *o, const Counters *c) {
        static const struct {
                const char *name, *help;
                size_t off;
        } rows[] = {
                { "jail_starts_total", "Workers started.", offsetof(Counters, spawns) },
                { "jail_start_failures_total", "Worker starts that failed.", offsetof(Counters, spawn_failures) },
                { "jail_crashes_total", "Workers that ended unexpectedly.", offsetof(Counters, crashes) },
                { "jail_recycles_total", "Workers replaced (a policy change, a masked path appearing, leftovers).",
                  offsetof(Counters, recycles) },
                { "jail_idle_ends_total", "Workers ended after their idle timeout.", offsetof(Counters, idle_ends) },
        };
        int r = 0;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(rows); i++)
                r = one(o, rows[i].name, "counter", rows[i].help, *(const uint64_t *)((const char *)c + rows[i].off));
        return r;
}

int metrics_render(Server *srv, StrBuf *o) {
        uint64_t watches = 0, lost = 0, in_flight = 0;
        for (size_t i = 0; i < INOTIFY_HUBS; i++)
                if (srv->hubs[i])
                        watches += hub_n_watches(srv->hubs[i]);
        for (Client *c = srv->clients; c; c = c->next)
                in_flight += c->inflight;
        int audit_err = audit_failure(&lost);
        uint64_t restarts = 0;
        bool proxy_up = false;
        proxy_process_counts(&proxy_up, &restarts);
        struct timespec wall = now_wall();
        uint64_t start_s = (uint64_t)wall.tv_sec - (now_ms() - srv->started_ms) / 1000;

        int r = one(o, "start_time_seconds", "gauge", "When the daemon started, in seconds since the epoch.", start_s);
        if (r >= 0)
                r = one(o, "clients", "gauge", "Client connections open.", srv->n_clients);
        if (r >= 0)
                r = one(o, "calls_in_flight", "gauge", "Calls taken and not yet answered.", in_flight);
        if (r >= 0)
                r = state(o, srv);
        if (r >= 0)
                r = counters(o, &srv->counters);
        if (r >= 0)
                r = calls(o, &srv->metrics);
        if (r >= 0)
                r = latency(o, &srv->metrics);
        if (r >= 0)
                r = one(o, "inotify_watches", "gauge", "Directories the daemon's inotify instances watch (masks over time).",
                        watches);
        if (r >= 0)
                r = one(o, "input_held_bytes", "gauge", "Request bytes of calls in flight held in memory.", srv->in_bytes);
        if (r >= 0)
                r = one(o, "replies_queued_bytes", "gauge", "Reply bytes queued in memory for clients.", srv->out_bytes);
        if (r >= 0)
                r = one(o, "replies_spooled_bytes", "gauge", "Reply bytes spooled to disk for slow clients.",
                        srv->spool_bytes);
        if (r >= 0)
                r = one(o, "audit_records_lost_total", "counter", "Audit records that could not be written.", lost);
        if (r >= 0)
                r = one(o, "audit_log_writable", "gauge", "1 while the audit log can be written, else 0.", !audit_err);
        if (r >= 0)
                r = one(o, "proxy_up", "gauge", "1 while the network allowlist's proxy process runs, else 0.", proxy_up);
        if (r >= 0)
                r = one(o, "proxy_restarts_total", "counter", "Times the proxy process was started again after it ended.",
                        restarts);
        return r;
}
