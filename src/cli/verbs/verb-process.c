/* SPDX-License-Identifier: MIT */
/* start, logs, stop, ps: background processes in the workspace's jail
 * (process_start, process_output, process_signal, process_list). They
 * outlive this command, so they need the daemon: embedded mode has no one
 * to keep them and refuses. */
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fd-util.h"
#include "link.h"
#include "time-util.h"

/* How long `stop` waits after SIGTERM before SIGKILL. */
#define STOP_GRACE_MS 5000

static int oom(void) {
        return cli_fail(EXIT_REFUSED, "out of memory");
}

/* The link, refusing embedded mode. */
static int open_link(const CliArgs *a, CliLink **ret) {
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return oom();
        if (!cli_link_daemon(l) && a->val[OPT_NO_DAEMON])
                return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_DAEMON_REQUIRED),
                                     "%s: background processes are kept by the daemon only; drop --no-daemon, or run the "
                                     "command in the foreground with vectora-sandbox run",
                                     a->verb->name);
        if (!cli_link_daemon(l))
                return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_DAEMON_REQUIRED),
                                     "%s: background processes are kept by the daemon, and none listens at %s; start "
                                     "vectora-sandboxd (or pass --socket), or run the command in the foreground with "
                                     "vectora-sandbox run",
                                     a->verb->name, cli_default_socket());
        *ret = TAKE_PTR(l);
        return 0;
}

/* One call; a failed result is printed (its status returned), else 0. */
static int call(const CliArgs *a, CliLink *l, json_t *req, JsonlMsg *m) {
        if (!req)
                return oom();
        if (cli_link_call(l, req, NULL, 0, m) < 0)
                return oom();
        if (!json_is_true(json_object_get(m->obj, "ok"))) {
                int r = cli_print_error(a, m->obj);
                jsonl_msg_done(m);
                return r;
        }
        return 0;
}

static int parse_id(const CliArgs *a, json_int_t *ret) {
        const char *s = a->pos[0];
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (!*s || *s == '-' || *end || errno || v == 0 || v > (1ull << 53))
                return cli_fail_code(a, EXIT_USAGE, "usage",
                                     "%s: '%s' is not a process id; vectora-sandbox ps lists them", a->verb->name, s);
        *ret = (json_int_t)v;
        return 0;
}

int verb_start(const CliArgs *a) {
        json_t *req = json_pack("{s:s,s:s}", "tool", api_tool_name(API_TOOL_PROCESS_START), "command", a->pos[0]);
        if (!req)
                return oom();
        if (a->val[OPT_CWD])
                json_object_set_new(req, "cwd", json_string(a->val[OPT_CWD]));
        if (a->val[OPT_TIMEOUT]) {
                char *end;
                unsigned long long t = strtoull(a->val[OPT_TIMEOUT], &end, 10);
                if (!*a->val[OPT_TIMEOUT] || *end || t == 0 || t > 30ull * 24 * 3600) {
                        json_decref(req);
                        return cli_fail_code(a, EXIT_USAGE, "usage",
                                             "start: --timeout takes seconds (1..2592000), not '%s'", a->val[OPT_TIMEOUT]);
                }
                json_object_set_new(req, "timeout", json_integer((json_int_t)t));
        }
        if (a->env) {
                json_t *e = json_object();
                for (char **s = a->env; e && *s; s++) {
                        char *eq = strchr(*s, '=');
                        _cleanup_free_ char *k = strndup(*s, (size_t)(eq - *s));
                        if (k)
                                json_object_set_new(e, k, json_string(eq + 1));
                }
                json_object_set_new(req, "env", e);
        }
        if (a->require_sandbox)
                json_object_set_new(req, "require_sandbox", json_true());
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        int r = open_link(a, &l);
        if (r) {
                json_decref(req);
                return r;
        }
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = call(a, l, req, &m)))
                return r;
        cli_warn_degraded(m.obj);
        if (a->json)
                cli_print_json(m.obj);
        else
                printf("%lld\n", (long long)json_integer_value(json_object_get(m.obj, "process")));
        jsonl_msg_done(&m);
        return 0;
}

static void write_stream(json_t *o, const char *key, int fd) {
        const char *s = json_string_value(json_object_get(o, key));
        if (s) {
                (void)!write_all(fd, s, strlen(s));
                return;
        }
        /* Not UTF-8: key_base64, decoded by the daemon's own rules is not
         * at hand here; say so rather than print base64 as output. */
        char k[32];
        snprintf(k, sizeof k, "%s_base64", key);
        if (json_object_get(o, k))
                cli_fail(0, "logs: %s holds bytes that are not UTF-8; vectora-sandbox logs --json shows them as %s", key, k);
}

int verb_logs(const CliArgs *a) {
        json_int_t id;
        int r = parse_id(a, &id);
        if (r)
                return r;
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if ((r = open_link(a, &l)))
                return r;
        bool follow = a->val[OPT_FOLLOW];
        json_int_t out_off = 0, err_off = 0;
        for (;;) {
                JsonlMsg m = JSONL_MSG_INIT;
                json_t *req = json_pack("{s:s,s:I,s:I,s:I,s:I}", "tool", api_tool_name(API_TOOL_PROCESS_OUTPUT), "process", id, "stdout_offset",
                                        out_off, "stderr_offset", err_off, "wait_ms", (json_int_t)(follow ? 30000 : 0));
                if ((r = call(a, l, req, &m)))
                        return r;
                json_t *o = m.obj;
                if (a->json && !follow) {
                        cli_print_json(o);
                        jsonl_msg_done(&m);
                        return 0;
                }
                if (a->json)
                        cli_print_json(o);
                else {
                        fflush(stdout);
                        write_stream(o, "stdout", STDOUT_FILENO);
                        write_stream(o, "stderr", STDERR_FILENO);
                }
                json_int_t dropped = json_integer_value(json_object_get(o, "stdout_dropped")) +
                                     json_integer_value(json_object_get(o, "stderr_dropped"));
                if (dropped && !a->json)
                        cli_fail(0, "logs: %lld bytes of output were dropped before this (each stream keeps the last "
                                 "max_output bytes)", (long long)dropped);
                json_int_t new_out = json_integer_value(json_object_get(o, "stdout_offset"));
                json_int_t new_err = json_integer_value(json_object_get(o, "stderr_offset"));
                bool running = json_is_true(json_object_get(o, "running"));
                bool more = new_out < json_integer_value(json_object_get(o, "stdout_total")) ||
                            new_err < json_integer_value(json_object_get(o, "stderr_total"));
                int status = (int)json_integer_value(json_object_get(o, "exit_code"));
                const char *ended = json_string_value(json_object_get(o, "message"));
                if (ended && !running && !more && !a->json)
                        cli_fail(0, "logs: process %lld ended with its jail: %s", (long long)id, ended);
                jsonl_msg_done(&m);
                out_off = new_out;
                err_off = new_err;
                if (more)
                        continue;
                if (!follow)
                        return 0;
                if (!running)
                        return status;
        }
}

int verb_stop(const CliArgs *a) {
        json_int_t id;
        int r = parse_id(a, &id);
        if (r)
                return r;
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if ((r = open_link(a, &l)))
                return r;
        JsonlMsg m = JSONL_MSG_INIT;
        r = call(a, l, json_pack("{s:s,s:I}", "tool", api_tool_name(API_TOOL_PROCESS_OUTPUT), "process", id), &m);
        if (r)
                return r;
        if (!json_is_true(json_object_get(m.obj, "running"))) {
                if (a->json)
                        cli_print_json(m.obj);
                else
                        printf("process %lld had already ended (exit %lld)\n", (long long)id,
                               (long long)json_integer_value(json_object_get(m.obj, "exit_code")));
                jsonl_msg_done(&m);
                return 0;
        }
        jsonl_msg_done(&m);
        static const char *const sigs[] = { "TERM", "KILL" };
        for (size_t i = 0; i < 2; i++) {
                r = call(a, l, json_pack("{s:s,s:I,s:s}", "tool", api_tool_name(API_TOOL_PROCESS_SIGNAL), "process", id, "signal", sigs[i]), &m);
                if (r)
                        return r;
                jsonl_msg_done(&m);
                /* Wait for the end (output is not read here: logs has it). */
                uint64_t t0 = now_ms();
                for (;;) {
                        r = call(a, l,
                                 json_pack("{s:s,s:I,s:I,s:I,s:I}", "tool", api_tool_name(API_TOOL_PROCESS_OUTPUT), "process", id, "wait_ms",
                                           (json_int_t)500, "stdout_offset", (json_int_t)INT64_MAX >> 11,
                                           "stderr_offset", (json_int_t)INT64_MAX >> 11),
                                 &m);
                        if (r)
                                return r;
                        if (!json_is_true(json_object_get(m.obj, "running"))) {
                                if (a->json)
                                        cli_print_json(m.obj);
                                else
                                        printf("process %lld stopped (%s%s, exit %lld)\n", (long long)id,
                                               i ? "SIGKILL" : "SIGTERM", i ? " after SIGTERM was ignored" : "",
                                               (long long)json_integer_value(json_object_get(m.obj, "exit_code")));
                                jsonl_msg_done(&m);
                                return 0;
                        }
                        jsonl_msg_done(&m);
                        if (now_ms() - t0 > STOP_GRACE_MS)
                                break;
                }
        }
        return cli_fail_code(a, EXIT_TOOL, api_error_name(API_ERROR_IO), "stop: process %lld is still running after SIGKILL", (long long)id);
}

int verb_ps(const CliArgs *a) {
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        int r = open_link(a, &l);
        if (r)
                return r;
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = call(a, l, json_pack("{s:s}", "tool", api_tool_name(API_TOOL_PROCESS_LIST)), &m)))
                return r;
        if (a->json) {
                cli_print_json(m.obj);
                jsonl_msg_done(&m);
                return 0;
        }
        json_t *list = json_object_get(m.obj, "processes");
        size_t i;
        json_t *p;
        if (json_array_size(list))
                printf("%-6s %-8s %-16s %-10s %s\n", "ID", "PID", "STATE", "RUNTIME", "COMMAND");
        json_array_foreach(list, i, p) {
                char state[32];
                if (json_is_true(json_object_get(p, "running")))
                        snprintf(state, sizeof state, "running");
                else if (json_object_get(p, "ended"))
                        snprintf(state, sizeof state, "ended with jail");
                else
                        snprintf(state, sizeof state, "exited %lld",
                                 (long long)json_integer_value(json_object_get(p, "exit_code")));
                json_t *cmd = json_object_get(p, "command");
                _cleanup_free_ char *c = json_is_string(cmd) ? strdup(json_string_value(cmd))
                                                              : json_dumps(cmd, JSON_COMPACT);
                printf("%-6lld %-8lld %-16s %-10.1f %s\n", (long long)json_integer_value(json_object_get(p, "process")),
                       (long long)json_integer_value(json_object_get(p, "pid")), state,
                       (double)json_integer_value(json_object_get(p, "runtime_ms")) / 1000.0, c ? c : "?");
        }
        if (!json_array_size(list))
                printf("no background processes in this workspace\n");
        jsonl_msg_done(&m);
        return 0;
}
