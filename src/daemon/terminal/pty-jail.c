/* SPDX-License-Identifier: MIT */
/* terminal_open in a sandboxed workspace: the terminal is a PTY of the
 * jail's own devpts, its shell a session in the workspace's worker
 * (jail-session.h), as the jail's user with the jail's environment. The client
 * sees the same messages as for a host terminal (pty.c): terminal_output
 * and terminal_exit events, terminal_input/resize/close requests. When the
 * jail ends under it (a policy change, a protected file saved on the host,
 * a crash) the terminal ends with a terminal_exit that says why; it is
 * never moved to another jail. */
#include <signal.h>
#include <string.h>

#include "audit.h"
#include "jail-session.h"
#include "log.h"
#include "pty-jail.h"
#include "request.h"
#include "server.h"
#include "strv.h"
#include "worker-link.h"
#include "workspace.h"

#define JAIL_PTY_INPUT_MAX (1u << 20)

typedef struct JailPty JailPty;
struct JailPty {
        JailSession s; /* first: the session callbacks get &s */
        JailPty *next;
        Client *client; /* referenced */
        uint64_t id;    /* the client's name for it */
        char *workspace;
        uint64_t generation;
        uint64_t t0_us;
        /* until the worker answered session_open */
        ApiTerminalOpenArgs a;
        char **envv;
        char *cwd;
};

static JailPty *all_jail_ptys;

static void jail_pty_free(JailPty *p) {
        if (!p)
                return;
        if (p->client)
                client_unref(p->client);
        json_dispatch_done(api_terminal_open_table, &p->a);
        strv_free(p->envv);
        free(p->cwd);
        free(p->workspace);
        free(p);
}

static void unlink_pty(JailPty *p) {
        for (JailPty **pp = &all_jail_ptys; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        return;
                }
}

static void on_output(JailSession *s, bool is_stderr, const char *data, size_t len) {
        JailPty *p = (JailPty *)s;
        client_send_json(p->client, json_pack("{s:s,s:I}", "event", "terminal_output", "pty", (json_int_t)p->id), data,
                         len);
        /* Backpressure: a client that does not read stops the shell's
         * output in the jail (and then the shell). */
        if (p->client->out_bytes > CLIENT_OUT_HIGH)
                jail_session_pause(s, true);
}

static void on_ended(JailSession *s, const ProtocolSessionEvent *e, ApiError code, const char *why) {
        JailPty *p = (JailPty *)s;
        /* 125: the sandbox layer ended it, as for a refused command. */
        int exit_code = e ? (int)e->exit_code : 125, sig = e ? (int)e->signal : 0;
        json_t *o = json_pack("{s:s,s:I,s:i,s:i}", "event", "terminal_exit", "pty", (json_int_t)p->id, "exit_code",
                              exit_code, "signal", sig);
        const char *name = api_error_name(code);
        if (o && code) {
                char msg[512];
                snprintf(msg, sizeof msg, "the terminal was ended with its jail (%s); a new terminal runs under the current policy",
                         why ? why : name);
                json_object_set_new(o, "ended", json_string(name));
                json_object_set_new(o, "message", json_string(msg));
        }
        client_send_json(p->client, o, NULL, 0);
        json_t *target = json_pack("{s:I,s:i,s:i}", "pty", (json_int_t)p->id, "exit_code", exit_code, "signal", sig);
        AuditRecord a = {
                .uid = p->client->uid,
                .pid = p->client->pid,
                .workspace = p->workspace,
                .tool = "terminal_exit",
                .target = target,
                .sandboxed = true,
                .generation = p->generation,
                .outcome = code ? "error" : "ok",
                .code = name,
                .reason = why,
                .duration_ms = (now_us() - p->t0_us) / 1000,
        };
        audit_write(&a);
        json_decref(target);
        log_info("workspace %s: jail terminal %llu ended (exit %d%s%s)", p->workspace, (unsigned long long)p->id,
                 exit_code, code ? ", " : "", code ? name : "");
        unlink_pty(p);
        jail_pty_free(p);
}

static const JailSessionOps jail_pty_ops = { on_output, on_ended };

static char *default_shell[] = { (char *)"/bin/sh", (char *)"-i", NULL };

static int jail_pty_build(Call *c, uint64_t wid, StrBuf *out) {
        JailPty *p = c->req->args;
        ProtocolSessionOpenRequest req = {
                .argv = p->a.argv && p->a.argv[0] ? p->a.argv : default_shell,
                .cwd = p->cwd,
                .env = p->envv,
                .pty = true,
                .cols = p->a.cols,
                .rows = p->a.rows,
        };
        return protocol_encode_session_open_request(out, wid, &req);
}

static void jail_pty_args_free(void *args) {
        /* Only while the open is pending: then r->args is taken. */
        JailPty *p = args;
        json_dispatch_done(api_terminal_open_table, &p->a);
        p->a = (ApiTerminalOpenArgs){ 0 };
        strv_free(TAKE_PTR(p->envv));
        free(TAKE_PTR(p->cwd));
        free(TAKE_PTR(p->workspace));
}

static void jail_pty_done(Call *c, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message) {
        Request *r = c->req;
        JailPty *p = r->args;
        int64_t pid;
        if (!request_session_opened(r, l, m, code, message, &pid))
                return;
        const char *shell = p->a.argv && p->a.argv[0] ? p->a.argv[0] : default_shell[0];
        json_t *result = json_pack("{s:I,s:I,s:s}", "pty", (json_int_t)(r->srv->next_pty_id + 1), "pid",
                                   (json_int_t)pid, "shell", shell);
        /* Taken from the request: the open arguments' strings are the
         * request's and go with it. */
        r->args = NULL;
        jail_pty_args_free(p);
        p->id = ++r->srv->next_pty_id;
        p->client = r->client;
        client_ref(p->client);
        p->generation = l->generation;
        p->t0_us = r->t0_us;
        p->workspace = strdup(r->ws->path);
        p->s.ops = &jail_pty_ops;
        jail_session_attach(&p->s, l, c->wid, pid);
        p->next = all_jail_ptys;
        all_jail_ptys = p;
        log_info("workspace %s: jail terminal %llu (pid %lld in the jail) for client pid %d", r->ws->path,
                 (unsigned long long)p->id, (long long)pid, (int)r->client->pid);
        bool gone = r->client->closed;
        audit_target_pty(r, p->id);
        request_finish(r, l, result, NULL, 0, API_OK, NULL);
        if (gone) {
                /* Its client left while it started. */
                jail_session_detach(&p->s);
                unlink_pty(p);
                jail_pty_free(p);
        }
}

void jail_pty_open(Request *r, json_t *obj) {
        Workspace *ws = r->ws;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (request_lockdown_refuses(r))
                return;
        JailPty *p = calloc(1, sizeof *p);
        if (!p)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        r->args = p;
        r->free_args = jail_pty_args_free;
        if (json_dispatch(obj, api_terminal_open_table, &p->a, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        p->a.cols = p->a.cols && p->a.cols <= PROTOCOL_SESSION_MAX_WINSIZE ? p->a.cols : 80;
        p->a.rows = p->a.rows && p->a.rows <= PROTOCOL_SESSION_MAX_WINSIZE ? p->a.rows : 24;
        int k = strv_extendf(&p->envv, "TERM=%s", p->a.term ? p->a.term : "xterm-256color");
        const char *key;
        json_t *v;
        if (p->a.env)
                json_object_foreach(p->a.env, key, v) {
                        if (!*key || strchr(key, '='))
                                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST,
                                                      "\"env\" keys must be non-empty and have no '='");
                        if (k >= 0)
                                k = strv_extendf(&p->envv, "%s=%s", key, json_string_value(v));
                }
        /* A subdirectory the client named is the shell's cwd. */
        if (k < 0 || (r->dir && !(p->cwd = strdup(r->dir))))
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        r->call.build = jail_pty_build;
        r->call.done = jail_pty_done;
        workspace_submit(ws, &r->call);
}

static JailPty *find(Client *c, json_t *jp) {
        if (!json_is_integer(jp))
                return NULL;
        for (JailPty *p = all_jail_ptys; p; p = p->next)
                if (p->client == c && (json_int_t)p->id == json_integer_value(jp))
                        return p;
        return NULL;
}

static void reply_error(Client *c, json_t *id, ApiError code, const char *msg) {
        if (id)
                client_send_json(c, json_pack("{s:O,s:b,s:o}", "id", id, "ok", 0, "error", api_error_json(code, msg)), NULL,
                                 0);
}

bool jail_pty_message(Client *c, json_t *id, const char *tool, json_t *obj, JsonlMsg *m) {
        JailPty *p = find(c, json_object_get(obj, "pty"));
        if (!p)
                return false;
        ProtocolSessionRequest req = { 0 };
        if (streq(tool, "terminal_input")) {
                const char *data = json_string_value(json_object_get(obj, "data"));
                size_t len = data ? strlen(data) : 0;
                if (m->has_raw) {
                        data = m->raw;
                        len = m->raw_len;
                }
                if (len > JAIL_PTY_INPUT_MAX)
                        reply_error(c, id, API_ERROR_TOO_LARGE, "the terminal is not taking input that fast");
                else
                        jail_session_send(&p->s, PROTOCOL_OP_SESSION_INPUT, &req, data, len, c, id);
        } else if (streq(tool, "terminal_resize")) {
                json_int_t cols = json_integer_value(json_object_get(obj, "cols"));
                json_int_t rows = json_integer_value(json_object_get(obj, "rows"));
                if (cols <= 0 || rows <= 0 || cols > PROTOCOL_SESSION_MAX_WINSIZE || rows > PROTOCOL_SESSION_MAX_WINSIZE)
                        return reply_error(c, id, API_ERROR_BAD_REQUEST, "\"cols\" and \"rows\" must be 1..10000"), true;
                req.cols = (uint64_t)cols;
                req.rows = (uint64_t)rows;
                jail_session_send(&p->s, PROTOCOL_OP_SESSION_RESIZE, &req, NULL, 0, c, id);
        } else {
                /* terminal_close: the whole group, at once (a SIGHUP first
                 * would race the shell's exit with the SIGKILL). */
                req.signal = SIGKILL;
                jail_session_send(&p->s, PROTOCOL_OP_SESSION_SIGNAL, &req, NULL, 0, c, id);
        }
        return true;
}

void jail_pty_close_all(Client *c) {
        for (JailPty **pp = &all_jail_ptys; *pp;) {
                JailPty *p = *pp;
                if (p->client != c) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                jail_session_detach(&p->s);
                jail_pty_free(p);
        }
}

void jail_pty_resume(Client *c) {
        for (JailPty *p = all_jail_ptys; p; p = p->next)
                if (p->client == c && p->s.paused && c->out_bytes < CLIENT_OUT_LOW)
                        jail_session_pause(&p->s, false);
}
