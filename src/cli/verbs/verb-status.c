/* SPDX-License-Identifier: MIT */
/* status and metrics. status: the daemon's status result, for a person at a glance (a summary
 * line first, then one block per workspace), or as JSON. Call counts are
 * shown as the sum of their outcomes, so they always add up; calls still in
 * flight are counted apart. */
#include <string.h>

#include "cli.h"
#include "link.h"

#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define RED "\033[31m"
#define RESET "\033[0m"

static json_int_t num(json_t *o, const char *k) {
        return json_integer_value(json_object_get(o, k));
}

static void print_list(const char *label, json_t *a, const char *none) {
        size_t i;
        json_t *v;
        printf("  %-10s", label);
        if (!json_array_size(a))
                printf("%s", none);
        json_array_foreach(a, i, v) printf("%s%s", i ? ", " : "", json_string_value(v));
        printf("\n");
}

static void print_calls(const char *indent, json_t *c) {
        json_int_t ok = num(c, "ok"), err = num(c, "errors"), ref = num(c, "refused"), den = num(c, "denied");
        printf("%scalls     %lld answered = %lld ok + %lld failed + %lld refused + %lld denied\n", indent,
               (long long)(ok + err + ref + den), (long long)ok, (long long)err, (long long)ref, (long long)den);
}

static void print_duration(json_int_t s) {
        if (s >= 86400)
                printf("%lldd %lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
        else if (s >= 3600)
                printf("%lldh %lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
        else if (s >= 60)
                printf("%lldm %llds", (long long)(s / 60), (long long)(s % 60));
        else
                printf("%llds", (long long)s);
}

static const char *state_color(const char *state) {
        if (!state)
                return "";
        if (streq(state, "sandboxed"))
                return cli_color(stdout, GREEN);
        if (streq(state, "unsandboxed"))
                return cli_color(stdout, YELLOW);
        return cli_color(stdout, RED);
}

/* A change waiting for the host user's approval (rule 7), under whatever
 * key the daemon reports it. */
static bool pending_of(json_t *w) {
        const char *k;
        json_t *v;
        json_object_foreach(w, k, v) if (!strncmp(k, "pending", 7) && !json_is_null(v) && !json_is_false(v) &&
                                         !(json_is_integer(v) && json_integer_value(v) == 0)) return true;
        return false;
}

static void print_workspace(json_t *w) {
        const char *state = json_string_value(json_object_get(w, "state"));
        const char *on = state_color(state);
        printf("\n%s\n  %-10s%s%s%s", json_string_value(json_object_get(w, "path")), "state", on, state ? state : "?",
               *on ? RESET : "");
        if (state && streq(state, "sandboxed"))
                printf(" (policy generation %lld, backend %s)", (long long)num(w, "generation"),
                       json_string_value(json_object_get(json_object_get(w, "sandbox"), "backend")) ?: "?");
        printf("\n");
        if (json_object_get(w, "config_error"))
                printf("  %-10s%s\n", "refused", json_string_value(json_object_get(w, "config_error")));
        json_t *wk = json_object_get(w, "worker");
        if (json_is_object(wk)) {
                printf("  %-10s%s, pid %lld, %lld call(s) in flight, idle ", "worker",
                       json_string_value(json_object_get(wk, "state")), (long long)num(wk, "pid"),
                       (long long)num(wk, "in_flight"));
                print_duration(num(wk, "idle_ms") / 1000);
                printf("\n");
                print_list("layers", json_object_get(wk, "layers"), "(none: runs on the host)");
                print_list("degraded", json_object_get(wk, "degraded"), "no");
        } else
                printf("  %-10snone (started by the next call)\n", "worker");
        if (pending_of(w))
                printf("  %-10sa loosening of the policy waits for approval: vectora-sandbox allow -w %s\n", "pending",
                       json_string_value(json_object_get(w, "path")));
        if (json_array_size(json_object_get(w, "limits")))
                print_list("limits", json_object_get(w, "limits"), "");
        print_calls("  ", json_object_get(w, "counters"));
        if (num(w, "restarts_last_minute") || json_is_true(json_object_get(w, "restart_blocked")))
                printf("  %-10s%lld in the last minute%s\n", "restarts", (long long)num(w, "restarts_last_minute"),
                       json_is_true(json_object_get(w, "restart_blocked")) ? " (paused until the minute passes)" : "");
        if (json_string_value(json_object_get(w, "last_error")))
                printf("  %-10s%s\n", "error", json_string_value(json_object_get(w, "last_error")));
}

static void print_status(json_t *res) {
        json_t *d = json_object_get(res, "daemon");
        json_t *c = json_object_get(d, "counters");
        json_t *wss = json_object_get(res, "workspaces");
        size_t i, n[3] = {}, degraded = 0, pending = 0;
        json_int_t in_flight = 0;
        json_t *w;
        json_array_foreach(wss, i, w) {
                const char *st = json_string_value(json_object_get(w, "state"));
                n[st && streq(st, "sandboxed") ? 0 : st && streq(st, "unsandboxed") ? 1 : 2]++;
                json_t *wk = json_object_get(w, "worker");
                degraded += json_array_size(json_object_get(wk, "degraded")) > 0;
                in_flight += num(wk, "in_flight");
                pending += pending_of(w);
        }
        printf("vectora-sandboxd pid %lld (uid %lld), up ", (long long)num(d, "pid"), (long long)num(d, "uid"));
        print_duration(num(d, "uptime_s"));
        printf(", socket %s\n", json_string_value(json_object_get(d, "socket")) ?: "?");
        printf("  workspaces %zu: %zu sandboxed, %zu unsandboxed, %zu refused; %zu degraded; %zu pending approval\n",
               json_array_size(wss), n[0], n[1], n[2], degraded, pending);
        printf("  workers   %lld live (max %lld), %lld client(s) connected\n", (long long)num(d, "workers"),
               (long long)num(d, "max_workers"), (long long)num(d, "clients"));
        print_calls("  ", c);
        if (in_flight)
                printf("  %-10s%lld call(s) in flight\n", "", (long long)in_flight);
        printf("  %-10s%lld started, %lld failed to start, %lld crashed, %lld recycled, %lld ended idle\n", "jails",
               (long long)num(c, "spawns"), (long long)num(c, "spawn_failures"), (long long)num(c, "crashes"),
               (long long)num(c, "recycles"), (long long)num(c, "idle_ends"));
        json_t *px = json_object_get(d, "proxy");
        if (px) {
                printf("  %-10s", "proxy");
                if (json_is_true(json_object_get(px, "running")))
                        printf("pid %lld (uid %lld), seccomp %s, Landlock ABI %lld", (long long)num(px, "pid"),
                               (long long)num(px, "uid"), json_is_true(json_object_get(px, "seccomp")) ? "on" : "OFF",
                               (long long)num(px, "landlock_abi"));
                else
                        printf("not running");
                printf("; %lld restart(s)", (long long)num(px, "restarts"));
                if (json_is_string(json_object_get(px, "last_exit")))
                        printf(", the last one after %s", json_string_value(json_object_get(px, "last_exit")));
                printf("\n");
        }
        json_t *mon = json_object_get(d, "monitor");
        if (json_is_true(json_object_get(mon, "running")))
                printf("  %-10sroot monitor pid %lld, %lld workspace(s) open\n", "monitor", (long long)num(mon, "pid"),
                       (long long)num(mon, "workspaces"));
        else if (json_is_string(json_object_get(mon, "why")))
                printf("  %-10snone: %s\n", "monitor", json_string_value(json_object_get(mon, "why")));
        if (json_object_get(d, "cgroups_unavailable"))
                printf("  %-10sper-workspace pids/memory limits degraded: %s\n", "limits",
                       json_string_value(json_object_get(d, "cgroups_unavailable")));
        json_array_foreach(wss, i, w) print_workspace(w);
}

/* status comes in pages (a daemon may serve thousands of workspaces, and
 * one reply line carries only so much): fetch them all and show them as
 * one result. A failed page is returned as it came. */
static int status_all_pages(CliLink *l, const char *ws, JsonlMsg *ret) {
        JsonlMsg m = JSONL_MSG_INIT;
        /* Paged by the last path seen: an entry that goes meanwhile shifts
         * nothing. */
        _cleanup_free_ char *after = NULL;
        for (unsigned page = 0; page < 100000; page++) {
                json_t *req = json_pack("{s:s,s:i}", "tool", api_tool_name(API_TOOL_STATUS), "limit", 1000);
                if (req && ws)
                        json_object_set_new(req, "workspace", json_string(ws));
                if (req && after)
                        json_object_set_new(req, "after", json_string(after));
                JsonlMsg p = JSONL_MSG_INIT;
                if (cli_link_call(l, req, NULL, 0, &p) < 0) {
                        jsonl_msg_done(&m);
                        return -ENOMEM;
                }
                if (!json_is_true(json_object_get(p.obj, "ok"))) {
                        jsonl_msg_done(&m);
                        *ret = p;
                        return 0;
                }
                const char *nx = json_string_value(json_object_get(p.obj, "next_after"));
                free(after);
                after = nx ? strdup(nx) : NULL;
                if (nx && !after) {
                        jsonl_msg_done(&p);
                        jsonl_msg_done(&m);
                        return -ENOMEM;
                }
                if (!m.obj)
                        m = p;
                else {
                        json_array_extend(json_object_get(m.obj, "workspaces"), json_object_get(p.obj, "workspaces"));
                        jsonl_msg_done(&p);
                }
                if (!after)
                        break;
        }
        json_object_del(m.obj, "next_offset");
        json_object_del(m.obj, "next_after");
        json_object_del(m.obj, "offset");
        *ret = m;
        return 0;
}

int verb_status(const CliArgs *a) {
        if (!cli_socket(a))
                return cli_fail_code(a, EXIT_REFUSED, "daemon_unreachable",
                                     "status: no daemon listens at %s; start vectora-sandboxd (or pass --socket)",
                                     cli_default_socket());
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        _cleanup_free_ char *ws = NULL;
        if (a->val[OPT_WORKSPACE]) {
                ws = cli_workspace_abs(a);
                if (!ws)
                        return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_WORKSPACE_NOT_FOUND), "status: workspace %s: %m",
                                             a->val[OPT_WORKSPACE]);
        }
        JsonlMsg m = JSONL_MSG_INIT;
        if (status_all_pages(l, ws, &m) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        int r = 0;
        if (!json_is_true(json_object_get(m.obj, "ok")))
                r = cli_print_error(a, m.obj);
        else if (a->json)
                cli_print_json(m.obj);
        else
                print_status(m.obj);
        jsonl_msg_done(&m);
        return r;
}

/* metrics: the daemon's figures in the Prometheus text format, as the
 * daemon renders them (a scraper's textfile collector can read the
 * output; --json gives the whole result). */
int verb_metrics(const CliArgs *a) {
        if (!cli_socket(a))
                return cli_fail_code(a, EXIT_REFUSED, "daemon_unreachable",
                                     "metrics: no daemon listens at %s; start vectora-sandboxd (or pass --socket)",
                                     cli_default_socket());
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        JsonlMsg m = JSONL_MSG_INIT;
        if (cli_link_call(l, json_pack("{s:s}", "tool", api_tool_name(API_TOOL_METRICS)), NULL, 0, &m) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        int r = 0;
        const char *text = json_string_value(json_object_get(m.obj, "metrics"));
        if (!json_is_true(json_object_get(m.obj, "ok")) || !text)
                r = cli_print_error(a, m.obj);
        else if (a->json)
                cli_print_json(m.obj);
        else
                fputs(text, stdout);
        jsonl_msg_done(&m);
        return r;
}
