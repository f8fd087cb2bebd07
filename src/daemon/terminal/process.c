/* SPDX-License-Identifier: MIT */
/* Background processes (process_start, process_output, process_input,
 * process_signal, process_list): a session with pipes in the workspace's
 * worker (jail-session.h), so the jail, its cgroup and its limits hold for it,
 * except the per-command timeout (limits.background_timeout instead,
 * default none). It belongs to the workspace, not to the connection that
 * started it: any client of the daemon may read its output or stop it,
 * and it ends with its jail (a policy change, the daemon's shutdown). Each
 * stream is kept in a ring of the policy's max_output bytes; a reader names
 * the offset it has read to and learns how many bytes it missed. */
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "audit.h"
#include "base64.h"
#include "jail-session.h"
#include "log.h"
#include "path-util.h"
#include "process.h"
#include "request.h"
#include "server.h"
#include "strv.h"
#include "time-util.h"
#include "utf8.h"
#include "worker-link.h"
#include "workspace.h"

/* Ended processes kept per workspace for process_output and process_list. */
#define PROCESS_KEEP_ENDED 32
#define PROCESS_RING_DEFAULT (1u << 20)
/* What one process_output returns per stream at most, and waits at most. */
#define PROCESS_OUTPUT_MAX (1u << 20)
#define PROCESS_WAIT_MAX_MS 60000

/* daemon.h drops MIN (uv.h's and macro.h's clash). */
static uint64_t umin(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

/* A stream's last cap bytes. The buffer grows as the stream does
 * (doubling, linear until it first fills) and shrinks to what it holds when
 * the process ends: 32 ended processes kept per workspace held 2 MiB each
 * however little they wrote, and the allocator kept it after (a soak's idle
 * daemon held 118 MB). */
typedef struct Ring {
        char *buf;
        size_t cap;            /* the most kept */
        size_t alloc;          /* bytes of buf: the ring's size (cap once it has wrapped) */
        size_t len, head;      /* head: where the oldest kept byte is */
        uint64_t total;        /* bytes ever written: the offset of the end */
} Ring;

typedef struct BgProcess BgProcess;
typedef struct Waiter Waiter;

struct BgProcess {
        JailSession s; /* first: the session callbacks get &s */
        BgProcess *next;
        Workspace *ws;
        uint64_t id;
        json_t *target; /* the command line or argv */
        uint64_t t0_us, start_wall_ms, end_us;
        uint64_t generation;
        bool sandboxed;
        bool running;
        int exit_code, signal;
        bool timed_out;
        ApiError ended_code;    /* its jail ended under it: why */
        char *ended_why;
        Ring out, err;
        Waiter *waiters;
        uid_t uid;
        pid_t client_pid;
};

/* A process_output waiting for output or the end. */
struct Waiter {
        uv_timer_t timer;
        Waiter *next;
        Request *r;
        BgProcess *p;
};

static BgProcess *all_procs;
static uint64_t next_process_id;

/* Ids are never reused across the daemon's lives: a client that kept an
 * id from before a restart must find nothing, not an unrelated process
 * (it read and killed one). Each life starts at a random multiple of 2^32
 * (below 2^53, exact in any JSON reader). */
static uint64_t process_id_next(void) {
        if (next_process_id == 0) {
                uint32_t r = 0;
                if (getrandom(&r, sizeof r, 0) != sizeof r)
                        r = (uint32_t)now_us() ^ (uint32_t)getpid();
                next_process_id = ((uint64_t)(r % ((1u << 21) - 1)) + 1) << 32;
        }
        return ++next_process_id;
}

/* ---- rings ---- */

static void ring_grow(Ring *g, size_t need) {
        if (g->alloc >= g->cap || g->head != 0 || need <= g->alloc)
                return;
        size_t want = g->alloc ? g->alloc : 4096;
        while (want < need && want < g->cap)
                want *= 2;
        if (want > g->cap)
                want = g->cap;
        char *nb = realloc(g->buf, want);
        if (nb) { /* else the oldest bytes go sooner */
                g->buf = nb;
                g->alloc = want;
        }
}

static void ring_append(Ring *g, const char *p, size_t n) {
        g->total += n;
        if (g->cap == 0)
                return;
        ring_grow(g, g->len + n);
        size_t size = g->alloc;
        if (size == 0)
                return;
        if (n >= size) {
                /* Only the last size bytes survive. */
                memcpy(g->buf, p + n - size, size);
                g->head = 0;
                g->len = size;
                return;
        }
        size_t tail = (g->head + g->len) % size;
        size_t first = umin(n, size - tail);
        memcpy(g->buf + tail, p, first);
        memcpy(g->buf, p + first, n - first);
        if (g->len + n > size) {
                size_t drop = g->len + n - size;
                g->head = (g->head + drop) % size;
                g->len = size;
        } else
                g->len += n;
}

/* Once the process ended: a buffer that never wrapped keeps what it holds. */
static char *mfree_ptr(char *p) {
        free(p);
        return NULL;
}

static void ring_shrink(Ring *g) {
        if (g->head != 0 || g->len >= g->alloc)
                return;
        if (g->len == 0) {
                g->buf = mfree_ptr(g->buf);
                g->alloc = 0;
                return;
        }
        char *nb = realloc(g->buf, g->len);
        if (nb) {
                g->buf = nb;
                g->alloc = g->len;
        }
}

/* Up to max bytes from offset (clamped to what is kept) into out;
 * *ret_from: where they start, *ret_dropped: bytes between offset and
 * the oldest kept one. */
static int ring_read(const Ring *g, uint64_t offset, size_t max, StrBuf *out, uint64_t *ret_from,
                     uint64_t *ret_dropped) {
        uint64_t first = g->total - g->len;
        uint64_t from = offset < first ? first : umin(offset, g->total);
        *ret_dropped = offset < first ? first - offset : 0;
        *ret_from = from;
        size_t n = (size_t)umin(max, g->total - from);
        size_t at = (g->head + (size_t)(from - first)) % (g->alloc ? g->alloc : 1);
        size_t a = umin(n, g->alloc - at);
        int k = strbuf_append(out, g->buf + at, a);
        if (k >= 0 && n > a)
                k = strbuf_append(out, g->buf, n - a);
        return k;
}

/* ---- lifecycle ---- */

static void waiter_closed(uv_handle_t *h) {
        free(h->data);
}

static void process_output_reply(Request *r, BgProcess *p);

/* Answers every waiting process_output (new output or the end). */
static void wake(BgProcess *p) {
        while (p->waiters) {
                Waiter *w = p->waiters;
                p->waiters = w->next;
                uv_timer_stop(&w->timer);
                uv_close((uv_handle_t *)&w->timer, waiter_closed);
                process_output_reply(w->r, p);
        }
}

static void process_free(BgProcess *p) {
        wake(p);
        json_decref(p->target);
        free(p->ended_why);
        free(p->out.buf);
        free(p->err.buf);
        free(p);
}

/* Keeps the last PROCESS_KEEP_ENDED ended processes of ws. */
static void trim_ended(Workspace *ws) {
        size_t n = 0;
        for (BgProcess **pp = &all_procs; *pp;) {
                BgProcess *p = *pp;
                /* Newest first: the ones past the limit are the oldest. */
                if (p->ws == ws && !p->running && ++n > PROCESS_KEEP_ENDED) {
                        *pp = p->next;
                        process_free(p);
                        continue;
                }
                pp = &p->next;
        }
}

static void on_output(JailSession *s, bool is_stderr, const char *data, size_t len) {
        BgProcess *p = (BgProcess *)s;
        ring_append(is_stderr ? &p->err : &p->out, data, len);
        wake(p);
}

static void on_ended(JailSession *s, const ProtocolSessionEvent *e, ApiError code, const char *why) {
        BgProcess *p = (BgProcess *)s;
        p->running = false;
        p->end_us = now_us();
        ring_shrink(&p->out);
        ring_shrink(&p->err);
        if (e) {
                p->exit_code = (int)e->exit_code;
                p->signal = (int)e->signal;
                p->timed_out = e->timed_out;
        } else {
                /* Killed with its jail. */
                p->exit_code = 128 + SIGKILL;
                p->signal = SIGKILL;
                p->ended_code = code ? code : API_ERROR_WORKER_RECYCLED;
                p->ended_why = why ? strdup(why) : NULL;
        }
        json_t *target = json_pack("{s:I,s:O,s:i,s:i,s:b}", "process", (json_int_t)p->id, "command", p->target,
                                   "exit_code", p->exit_code, "signal", p->signal, "timed_out", p->timed_out);
        AuditRecord a = {
                .uid = p->uid,
                .pid = p->client_pid,
                .workspace = p->ws->path,
                .tool = "process_exit",
                .target = target,
                .sandboxed = p->sandboxed,
                .generation = p->generation,
                .outcome = code ? "error" : "ok",
                .code = api_error_name(code),
                .reason = why,
                .duration_ms = (p->end_us - p->t0_us) / 1000,
        };
        audit_write(&a);
        json_decref(target);
        log_info("workspace %s: background process %llu ended (exit %d%s%s)", p->ws->path, (unsigned long long)p->id,
                 p->exit_code, code ? ", " : "", code ? api_error_name(code) : "");
        wake(p);
        trim_ended(p->ws);
}

static const JailSessionOps process_ops = { on_output, on_ended };

void process_forget_workspace(Workspace *ws) {
        for (BgProcess **pp = &all_procs; *pp;) {
                BgProcess *p = *pp;
                if (p->ws != ws) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                if (p->s.link)
                        jail_session_detach(&p->s);
                process_free(p);
        }
}

static BgProcess *find(Workspace *ws, uint64_t id) {
        for (BgProcess *p = all_procs; p; p = p->next)
                if (p->ws == ws && p->id == id)
                        return p;
        return NULL;
}

/* ---- process_start ---- */

static void start_args_free(void *args) {
        api_run_args_done(args);
}

static int start_build(Call *c, uint64_t wid, StrBuf *out) {
        Request *r = c->req;
        ApiRunArgs *a = r->args;
        /* The request may ask for less than the policy's ceiling, never more. */
        uint64_t ceiling = r->ws->policy ? r->ws->policy->limits.background_timeout_s : 0;
        uint64_t t = a->timeout && ceiling ? umin(a->timeout, ceiling) : a->timeout ? a->timeout : ceiling;
        ProtocolSessionOpenRequest req = {
                .argv = api_run_argv(a),
                .cwd = r->dir_path ? r->dir_path : a->cwd,
                .env = a->envv,
                .timeout_ms = t * 1000,
        };
        return protocol_encode_session_open_request(out, wid, &req);
}

static void start_done(Call *c, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message) {
        Request *r = c->req;
        ApiRunArgs *a = r->args;
        int64_t pid;
        if (!request_session_opened(r, l, m, code, message, &pid))
                return;
        BgProcess *p = calloc(1, sizeof *p);
        size_t cap = r->ws->policy && r->ws->policy->sandboxed && r->ws->policy->limits.max_output
                             ? r->ws->policy->limits.max_output
                             : PROCESS_RING_DEFAULT;
        if (!p) {
                /* It runs, but nothing can follow it: end it. */
                JailSession tmp = { 0 };
                jail_session_attach(&tmp, l, c->wid, pid);
                jail_session_detach(&tmp);
                return request_finish(r, l, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        }
        p->out.cap = p->err.cap = cap;
        p->id = process_id_next();
        p->ws = r->ws;
        p->target = json_incref(r->target);
        p->t0_us = now_us();
        p->start_wall_ms = (uint64_t)now_wall().tv_sec * 1000;
        p->generation = l->generation;
        p->sandboxed = l->launch->sandboxed;
        p->running = true;
        p->uid = r->client->uid;
        p->client_pid = r->client->pid;
        p->s.ops = &process_ops;
        jail_session_attach(&p->s, l, c->wid, pid);
        p->next = all_procs;
        all_procs = p;
        if (a->stdin_data) {
                /* Its initial input, then end of input. */
                ProtocolSessionRequest in = { .eof = true };
                jail_session_send(&p->s, PROTOCOL_OP_SESSION_INPUT, &in, a->stdin_data, a->stdin_len, NULL, NULL);
        }
        log_info("workspace %s: background process %llu (pid %lld in the %s) for client pid %d", r->ws->path,
                 (unsigned long long)p->id, (long long)pid, p->sandboxed ? "jail" : "worker", (int)r->client->pid);
        /* Its audit line names the id its process_exit line will carry. */
        json_t *t = json_pack("{s:I,s:O}", "process", (json_int_t)p->id, "command", p->target);
        if (t) {
                json_decref(r->target);
                r->target = t;
        }
        request_finish(r, l, json_pack("{s:I,s:I}", "process", (json_int_t)p->id, "pid", (json_int_t)pid), NULL, 0, API_OK, NULL);
}

static void process_start(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ApiRunArgs *a = calloc(1, sizeof *a);
        if (!a)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        r->args = a;
        if (json_dispatch(r->msg.obj, api_run_table, a, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        r->args_table = api_run_table;
        r->free_args = start_args_free;
        /* Its output is kept and read with process_output, its timeout is
         * in seconds: terminal's output limits and form do not apply. */
        const char *only = api_run_terminal_only(r->msg.obj);
        if (only) {
                char msg[160];
                snprintf(msg, sizeof msg, "\"%s\" is terminal's; a background process takes \"timeout\" (seconds) and "
                         "its output is read with process_output", only);
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, msg);
        }
        int k = api_run_args_prepare(a, &r->msg, &err);
        if (k == -ENOMEM)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        if (k < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        r->target = api_run_target(a);
        /* A subdirectory was named: the cwd starts there. */
        if (r->dir && (!a->cwd || a->cwd[0] != '/') && !(r->dir_path = path_join(r->dir, a->cwd ? a->cwd : ".")))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        if (request_lockdown_refuses(r))
                return;
        r->call.build = start_build;
        r->call.done = start_done;
        workspace_submit(r->ws, &r->call);
}

/* ---- process_output ---- */

/* One stream's part of the result. */
static int stream_json(Request *r, json_t *o, const char *key, const Ring *g, uint64_t offset, size_t max) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        uint64_t from, dropped;
        char k[32];
        if (ring_read(g, offset, max, &b, &from, &dropped) < 0)
                return -ENOMEM;
        if (utf8_valid(b.data ? b.data : "", b.len))
                json_object_set_new(o, key, json_stringn(b.data ? b.data : "", b.len));
        else {
                snprintf(k, sizeof k, "%s_base64", key);
                json_object_set_new(o, k, b64_json(b.data ? b.data : "", b.len));
        }
        snprintf(k, sizeof k, "%s_offset", key);
        json_object_set_new(o, k, json_integer((json_int_t)(from + b.len)));
        snprintf(k, sizeof k, "%s_dropped", key);
        json_object_set_new(o, k, json_integer((json_int_t)dropped));
        snprintf(k, sizeof k, "%s_total", key);
        json_object_set_new(o, k, json_integer((json_int_t)g->total));
        return 0;
}

static json_t *status_json(BgProcess *p) {
        json_t *o = json_pack("{s:I,s:I,s:O,s:b,s:I,s:I}", "process", (json_int_t)p->id, "pid", (json_int_t)p->s.pid,
                              "command", p->target, "running", p->running, "started_ms", (json_int_t)p->start_wall_ms,
                              "runtime_ms", (json_int_t)(((p->running ? now_us() : p->end_us) - p->t0_us) / 1000));
        if (!o)
                return NULL;
        if (p->running) {
                json_object_set_new(o, "exit_code", json_null());
                json_object_set_new(o, "signal", json_null());
        } else {
                json_object_set_new(o, "exit_code", json_integer(p->exit_code));
                json_object_set_new(o, "signal", json_integer(p->signal));
                json_object_set_new(o, "timed_out", json_boolean(p->timed_out));
                if (p->ended_code) {
                        const char *ended = api_error_name(p->ended_code);
                        json_object_set_new(o, "ended", json_string(ended));
                        json_object_set_new(o, "message", json_string(p->ended_why ? p->ended_why : ended));
                }
        }
        json_object_set_new(o, "stdout_total", json_integer((json_int_t)p->out.total));
        json_object_set_new(o, "stderr_total", json_integer((json_int_t)p->err.total));
        return o;
}

static void process_output_reply(Request *r, BgProcess *p) {
        ApiOutputArgs *a = r->args;
        size_t max = a->max_bytes && a->max_bytes < PROCESS_OUTPUT_MAX ? (size_t)a->max_bytes : PROCESS_OUTPUT_MAX;
        json_t *o = status_json(p);
        if (!o || stream_json(r, o, "stdout", &p->out, a->stdout_offset, max) < 0 ||
            stream_json(r, o, "stderr", &p->err, a->stderr_offset, max) < 0) {
                json_decref(o);
                return request_finish(r, p->s.link, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        }
        request_finish(r, p->s.link, o, NULL, 0, API_OK, NULL);
}

static void on_wait_timeout(uv_timer_t *t) {
        Waiter *w = t->data;
        BgProcess *p = w->p;
        for (Waiter **pp = &p->waiters; *pp; pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        break;
                }
        uv_close((uv_handle_t *)&w->timer, waiter_closed);
        process_output_reply(w->r, p);
}

static void process_output(Request *r, BgProcess *p) {
        ApiOutputArgs *a = r->args;
        bool news = p->out.total > a->stdout_offset || p->err.total > a->stderr_offset;
        if (news || !p->running || a->wait_ms == 0)
                return process_output_reply(r, p);
        Waiter *w = calloc(1, sizeof *w);
        if (!w)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        w->r = r;
        w->p = p;
        uv_timer_init(r->srv->loop, &w->timer);
        w->timer.data = w;
        uv_timer_start(&w->timer, on_wait_timeout, umin(a->wait_ms, (uint64_t)PROCESS_WAIT_MAX_MS), 0);
        w->next = p->waiters;
        p->waiters = w;
}

/* ---- process_input, process_signal ---- */

typedef struct ControlArgs {
        ApiControlArgs in; /* first: the api.h tables decode into it */
        /* built */
        ProtocolOp op;
        ProtocolSessionRequest req;
        const char *bytes;
        size_t len;
} ControlArgs;

static const struct {
        const char *name;
        int sig;
} signal_names[] = {
        { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
        { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "WINCH", SIGWINCH },
};

/* "TERM", "SIGTERM" or 15 (default TERM); 0 when unknown. */
static int signal_of(json_t *v) {
        if (!v || json_is_null(v))
                return SIGTERM;
        if (json_is_integer(v))
                return json_integer_value(v) >= 1 && json_integer_value(v) <= 64 ? (int)json_integer_value(v) : 0;
        const char *s = json_string_value(v);
        if (!s)
                return 0;
        if (strncmp(s, "SIG", 3) == 0)
                s += 3;
        for (size_t i = 0; i < ELEMENTSOF(signal_names); i++)
                if (streq(s, signal_names[i].name))
                        return signal_names[i].sig;
        return 0;
}

static int control_build(Call *c, uint64_t wid, StrBuf *out) {
        ControlArgs *a = c->req->args;
        return protocol_encode_session_request(out, wid, a->op, &a->req, a->bytes, a->len);
}

static void control_done(Call *c, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message) {
        Request *r = c->req;
        if (!m)
                return request_finish(r, l, NULL, NULL, 0, code, message);
        ProtocolReplyHead h;
        if (protocol_decode_reply_head(m->obj, &h, NULL) < 0)
                return request_finish(r, l, NULL, NULL, 0, API_ERROR_WORKER_CRASHED, "the worker sent a malformed reply");
        if (!h.ok)
                return request_finish(r, l, NULL, NULL, 0, api_error_from_kind(h.error_code_name, API_ERROR_IO),
                                      h.error_message ? h.error_message : "the worker refused");
        request_finish(r, l, NULL, NULL, 0, API_OK, NULL);
}

static void process_control(Request *r, BgProcess *p) {
        ControlArgs *a = r->args;
        if (!p->running || !p->s.link || p->s.link->state != LINK_READY || p->s.link->draining) {
                char msg[128];
                snprintf(msg, sizeof msg, "background process %llu has ended", (unsigned long long)p->id);
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_PROCESS_ENDED, msg);
        }
        a->req.session = p->s.wid;
        r->call.build = control_build;
        r->call.done = control_done;
        link_send(p->s.link, &r->call);
}

/* ---- process_list ---- */

static void process_list(Request *r) {
        json_t *a = json_array();
        /* Oldest first. */
        for (BgProcess *p = all_procs; a && p; p = p->next)
                if (p->ws == r->ws)
                        json_array_insert_new(a, 0, status_json(p));
        if (!a)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        request_finish(r, NULL, json_pack("{s:o}", "processes", a), NULL, 0, API_OK, NULL);
}

/* ---- dispatch ---- */

void process_tool(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (r->ws->state == WS_REFUSED)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_CONFIG_INVALID, vs_error_message(r->ws->config_error));
        if (r->which == API_TOOL_PROCESS_START)
                return process_start(r);
        if (r->which == API_TOOL_PROCESS_LIST) {
                if (json_dispatch(r->msg.obj, api_no_args_table, NULL, &err) < 0)
                        return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
                return process_list(r);
        }
        bool output = r->which == API_TOOL_PROCESS_OUTPUT, input = r->which == API_TOOL_PROCESS_INPUT;
        const JsonField *table = output ? api_process_output_table : input ? api_process_input_table
                                                                           : api_process_signal_table;
        void *a = calloc(1, output ? sizeof(ApiOutputArgs) : sizeof(ControlArgs));
        if (!a)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        r->args = a;
        if (json_dispatch(r->msg.obj, table, a, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        r->args_table = table;
        uint64_t id = output ? ((ApiOutputArgs *)a)->process : ((ControlArgs *)a)->in.process;
        BgProcess *p = find(r->ws, id);
        r->target = json_pack("{s:I}", "process", (json_int_t)id);
        if (!p) {
                char msg[160];
                snprintf(msg, sizeof msg, "no background process %llu in this workspace (process_list shows them)",
                         (unsigned long long)id);
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_NOT_FOUND, msg);
        }
        if (output)
                return process_output(r, p);
        ControlArgs *c = a;
        if (input) {
                c->op = PROTOCOL_OP_SESSION_INPUT;
                c->req.eof = c->in.eof;
                c->bytes = r->msg.has_raw ? r->msg.raw : c->in.data;
                c->len = r->msg.has_raw ? r->msg.raw_len : c->in.data ? strlen(c->in.data) : 0;
                if (r->msg.has_raw && c->in.data)
                        return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST,
                                              "give the input once: \"data\" or a raw payload");
        } else {
                c->op = PROTOCOL_OP_SESSION_SIGNAL;
                int sig = signal_of(json_object_get(r->msg.obj, "signal"));
                if (!sig)
                        return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST,
                                              "\"signal\" must be a number 1..64 or a name (TERM, KILL, INT, HUP, ...)");
                c->req.signal = (uint64_t)sig;
        }
        process_control(r, p);
}
