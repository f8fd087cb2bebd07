/* SPDX-License-Identifier: MIT */
/* vectora-sandbox mcp: an MCP server over stdio (JSON-RPC 2.0, one message
 * per line) exposing the workspace's tools. The mode is chosen once, at
 * start: through vectora-sandboxd when its socket answers then (each call
 * on a connection of its own, served in parallel), otherwise a worker this
 * process keeps for the session (src/cli/mcp/mcp-embedded.c; its calls
 * served in parallel too, each on a thread of its own). Standard output
 * carries only protocol messages; diagnostics go to standard error. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "audit.h"
#include "cli.h"
#include "client.h"
#include "fd-util.h"
#include "jsonl.h"
#include "jsonrpc.h"
#include "mcp-input.h"
#include "mcp-edit.h"
#include "mcp-serve.h"
#include "policy.h"
#include "time-util.h"
#include "tools.h"
#include "vs-build-config.h"

/* MCP: a request other than ping before initialize. */
#define MCP_NOT_INITIALIZED -32002
/* After the client went away, how long its cancelled calls may take to
 * end before the embedded worker is ended under them. */
#define MCP_GONE_GRACE_MS 5000
/* tools/call served at once; the next waits for one of them to end. */
#define MCP_CALLS_MAX 32

typedef struct McpServer {
        char *workspace;     /* absolute */
        const char *version; /* negotiated; NULL before initialize */
        char *socket;        /* the daemon's (daemon mode), or NULL */
        bool daemon;         /* the mode, chosen once at start: never switched */
        char *mode_line;     /* the mode as said at start (stderr and instructions) */
        bool require_sandbox; /* every request carries "require_sandbox": true */
        McpEmbedded emb;
        McpInput *in;        /* stdin, read while calls run */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned calls;      /* tools/calls running or queued */
        struct McpJob *queue; /* embedded: the calls waiting for the session's thread */
        bool emb_started;
        bool stopping;       /* the session thread ends when its queue is empty */
        pthread_t emb_thread; /* the session thread (it starts the workers), joined at the end */
} McpServer;

/* One tools/call in flight: its thread's work. */
typedef struct McpJob {
        struct McpJob *next; /* in the embedded queue */
        McpServer *s;
        McpRun *run;
        json_t *msg;         /* the message: the call's strings borrow from it */
        json_t *id;          /* borrowed from msg */
        McpCall call;
        int fd;              /* its own daemon connection, or -EBADF */
        JsonlReader *rd;
        uint64_t next_id;
        McpEmbHold hold;     /* embedded: the session it runs on */
        bool held;
} McpJob;

static void job_close(McpJob *j) {
        if (j->fd >= 0)
                mcp_input_call_fd(j->s->in, j->run, -1); /* before the descriptor can be reused */
        j->fd = safe_close(j->fd);
        jsonl_reader_free(TAKE_PTR(j->rd));
}

/* One daemon API call on the job's own connection (the daemon serves
 * connections in parallel). A daemon that does not answer is an error
 * naming what to do, never a switch to embedded mode: background
 * processes and the daemon's watch would be lost without a word. */
static json_t *daemon_serve(McpJob *j, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        McpServer *s = j->s;
        if (j->fd < 0) {
                _cleanup_free_ char *why = NULL; /* the CLI's advice, not the agent's */
                int r = client_connect(s->socket, &j->fd, &why);
                if (r < 0 || (r = jsonl_reader_new(&j->rd)) < 0) {
                        job_close(j);
                        _cleanup_free_ char *msg = NULL;
                        if (r == -ENOMEM ||
                            asprintf(&msg, "vectora-sandboxd does not answer at %s (%s); nothing ran. This server "
                                           "serves through the daemon for its whole session and does not switch "
                                           "to a worker of its own. Ask the user to start vectora-sandboxd again "
                                           "(or to restart this MCP server), then retry",
                                     s->socket, strerror(-r)) < 0)
                                return NULL;
                        return mcp_tool_error("daemon_unreachable", msg);
                }
                mcp_input_call_fd(s->in, j->run, j->fd);
        }
        json_t *req = NULL;
        const char *in = NULL;
        size_t in_len = 0;
        if (mcp_call_request(c, s->workspace, &req, &in, &in_len) < 0)
                return NULL;
        if (s->require_sandbox && json_object_set_new(req, "require_sandbox", json_true()) < 0) {
                json_decref(req);
                return NULL;
        }
        JsonlMsg m = JSONL_MSG_INIT;
        bool sent;
        int r = client_call(j->fd, j->rd, ++j->next_id, req, in, in_len, &m, &sent);
        json_decref(req);
        if (r == -ENOMEM)
                return NULL;
        if (r < 0) {
                job_close(j);
                if (mcp_input_call_cancelled(s->in, j->run)) /* closed by us: the daemon cancelled it */
                        return mcp_tool_error("cancelled", "the call was cancelled");
                fprintf(stderr, "vectora-sandbox: mcp: lost vectora-sandboxd at %s: %s\n", s->socket, strerror(-r));
                return sent ? mcp_tool_error("daemon_lost",
                                             "the connection to vectora-sandboxd was lost during the call; it may or "
                                             "may not have run. Check its effect before retrying; if the daemon is "
                                             "gone, ask the user to start it again")
                            : mcp_tool_error("daemon_unreachable",
                                             "the call could not be sent to vectora-sandboxd; nothing ran. Retry it; "
                                             "if the daemon is gone, ask the user to start it again");
        }
        *ret_reply = TAKE_PTR(m.obj);
        *ret_raw = m.has_raw ? jsonl_msg_steal_raw(&m, ret_raw_len) : NULL;
        jsonl_msg_done(&m);
        return NULL;
}

/* One file or command operation through the mode's jail: a reply shaped
 * like the daemon API's, or a tool error result (*ret_error) when nothing
 * could be asked. -ENOMEM only. Embedded: the job holds the session. */
static int serve_op(void *userdata, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len,
                    json_t **ret_error) {
        McpJob *j = userdata;
        *ret_reply = NULL;
        *ret_raw = NULL;
        *ret_raw_len = 0;
        *ret_error = NULL;
        if (j->s->daemon) {
                *ret_error = daemon_serve(j, c, ret_reply, ret_raw, ret_raw_len);
                return *ret_error || *ret_reply ? 0 : -ENOMEM;
        }
        return mcp_embedded_call(&j->s->emb, &j->hold, c, mcp_input_call_cancel_fd(j->s->in, j->run), ret_reply,
                                 ret_raw, ret_raw_len);
}

static json_t *serve_call(McpJob *j) {
        McpServer *s = j->s;
        const McpCall *c = &j->call;
        if (!s->daemon && mcp_tool_needs_daemon(c->tool)) {
                if (j->held)
                        mcp_embedded_release(&s->emb, &j->hold);
                j->held = false;
                return mcp_tool_error(api_error_name(API_ERROR_DAEMON_REQUIRED),
                                      "background processes are kept by vectora-sandboxd, and this server runs without "
                                      "it (said at its start); run the command with the terminal tool instead");
        }
        /* Embedded: the one jail session, held by the session's thread
         * for the job (job_start()), or here for a call served in place. */
        if (!s->daemon && !j->held) {
                if (mcp_embedded_acquire(&s->emb, &j->hold) < 0)
                        return NULL;
                j->held = true;
        }
        /* The agent's commands need what the mode may lack (no_commands);
         * an edit tool's own `rm` of a file it deletes does not. */
        j->hold.edit_steps = mcp_tool_is_edit(c->tool);
        if (!s->daemon && mcp_input_call_cancelled(s->in, j->run)) {
                mcp_embedded_release(&s->emb, &j->hold);
                j->held = false;
                return mcp_tool_error("cancelled", "the call was cancelled");
        }
        json_t *res = NULL;
        if (mcp_tool_is_edit(c->tool))
                (void)mcp_edit_serve(c, serve_op, j, mcp_version_has_structured(s->version), &res);
        else {
                json_t *reply = NULL, *error = NULL;
                _cleanup_free_ char *raw = NULL;
                size_t raw_len = 0;
                if (serve_op(j, c, &reply, &raw, &raw_len, &error) >= 0) {
                        if (error)
                                res = error;
                        else
                                (void)mcp_call_result(c, reply, raw, raw_len, s->daemon ? "daemon" : "embedded",
                                                      mcp_version_has_structured(s->version), &res);
                }
                json_decref(reply);
        }
        if (j->held) {
                mcp_embedded_release(&s->emb, &j->hold);
                j->held = false;
        }
        job_close(j);
        return res;
}

static void job_free(McpJob *j) {
        if (j->held)
                mcp_embedded_release(&j->s->emb, &j->hold);
        job_close(j);
        json_decref(j->msg);
        free(j);
}

/* The response to a tools/call, unless it was cancelled. */
static void job_answer(McpJob *j, json_t *result) {
        bool cancelled = mcp_input_call_end(j->s->in, j->run);
        if (cancelled) {
                json_decref(result);
                return;
        }
        _cleanup_(json_decrefp) json_t *resp =
                jsonrpc_response(j->id, result, result ? 0 : JSONRPC_INTERNAL_ERROR, "out of memory");
        json_decref(result);
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        if (resp && jsonrpc_encode_line(&out, resp) >= 0)
                (void)mcp_output(j->s->in, out.data, out.len);
}

static void job_run(McpJob *j) {
        McpServer *s = j->s;
        job_answer(j, serve_call(j));
        job_free(j);
        pthread_mutex_lock(&s->lock);
        s->calls--;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

static void *job_thread(void *arg) {
        job_run(arg);
        return NULL;
}

/* ret NULL: detached. */
static int start_thread(void *(*fn)(void *), void *arg, pthread_t *ret) {
        pthread_attr_t attr;
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        /* Signals stay the main thread's. */
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, ret ? PTHREAD_CREATE_JOINABLE : PTHREAD_CREATE_DETACHED);
        int r = pthread_create(ret ?: &t, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return -r;
}

/* Embedded: one thread takes the session's calls in order and holds the
 * session for each (starting its worker when needed: the worker dies with
 * the thread that started it, PR_SET_PDEATHSIG follows the parent thread,
 * so not a call's thread); each call then runs on a thread of its own,
 * alongside the others. */
static void *emb_thread(void *arg) {
        McpServer *s = arg;
        for (;;) {
                pthread_mutex_lock(&s->lock);
                while (!s->queue && !s->stopping)
                        pthread_cond_wait(&s->cond, &s->lock);
                McpJob *j = s->queue;
                if (!j) {
                        pthread_mutex_unlock(&s->lock);
                        return NULL;
                }
                s->queue = j->next;
                pthread_mutex_unlock(&s->lock);
                /* Out of memory: the job answers so in place. */
                j->held = mcp_embedded_acquire(&s->emb, &j->hold) >= 0;
                if (!j->held || start_thread(job_thread, j, NULL) < 0)
                        job_run(j);
        }
        return NULL;
}

/* A tools/call on a thread of its own (daemon), or queued for the
 * session's thread (embedded); false when it could not start (then the
 * caller serves it in place). */
static bool job_start(McpJob *j) {
        McpServer *s = j->s;
        pthread_mutex_lock(&s->lock);
        while (s->calls >= MCP_CALLS_MAX)
                pthread_cond_wait(&s->cond, &s->lock);
        if (!s->daemon) {
                if (!s->emb_started && start_thread(emb_thread, s, &s->emb_thread) < 0) {
                        pthread_mutex_unlock(&s->lock);
                        return false;
                }
                s->emb_started = true;
                McpJob **p = &s->queue;
                while (*p)
                        p = &(*p)->next;
                *p = j;
                s->calls++;
                pthread_cond_broadcast(&s->cond);
                pthread_mutex_unlock(&s->lock);
                return true;
        }
        s->calls++;
        pthread_mutex_unlock(&s->lock);
        if (start_thread(job_thread, j, NULL) == 0)
                return true;
        pthread_mutex_lock(&s->lock);
        s->calls--;
        pthread_mutex_unlock(&s->lock);
        return false;
}

/* tools/call: NULL when answered elsewhere (its thread, or cancelled),
 * else the result to answer with now (a batch's calls run in place). */
static json_t *on_call(McpServer *s, json_t *msg, JsonRpcMessage *m, bool in_place, int *ret_code,
                       const char **ret_msg, VsError **err) {
        McpCall c;
        if (mcp_decode_call(m->params, &c, err) < 0) {
                if (streq_ptr(vs_error_kind(*err), "bad_arguments"))
                        return mcp_tool_error("bad_arguments", vs_error_message(*err));
                *ret_code = JSONRPC_INVALID_PARAMS;
                *ret_msg = vs_error_message(*err);
                return NULL;
        }
        McpJob *j = calloc(1, sizeof *j);
        if (!j)
                return NULL;
        *j = (McpJob) { .s = s, .msg = json_incref(msg), .id = m->id, .call = c, .fd = -EBADF };
        json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
        if (!json_is_string(token) && !json_is_integer(token))
                token = NULL;
        int r = mcp_input_call_begin(s->in, m->id, token, &j->run);
        if (r <= 0) { /* 0: cancelled (notifications/cancelled): no response */
                json_decref(j->msg);
                free(j);
                if (r == 0)
                        *ret_code = -1;
                return NULL;
        }
        if (!in_place && job_start(j)) {
                *ret_code = -1;
                return NULL;
        }
        json_t *res = serve_call(j);
        if (mcp_input_call_end(s->in, j->run)) {
                json_decref(res);
                res = NULL;
                *ret_code = -1;
        }
        j->run = NULL;
        job_free(j);
        return res;
}

static json_t *on_initialize(McpServer *s, json_t *params, int *ret_code, const char **ret_msg, VsError **err) {
        McpInitialize in;
        if (mcp_decode_initialize(params, &in, err) < 0) {
                *ret_code = JSONRPC_INVALID_PARAMS;
                *ret_msg = vs_error_message(*err);
                return NULL;
        }
        s->version = mcp_negotiate_version(in.protocol_version);
        _cleanup_free_ char *text = NULL;
        if (asprintf(&text,
                     "These tools act on the workspace %s inside its sandbox (vectora.toml's [sandbox]). %s Use "
                     "terminal to run commands and the file tools to read and change files. Each result ends with "
                     "a line saying how it was sandboxed. A refusal (masked secret, read-only path, path outside "
                     "the workspace) is final: report it, do not try to get around it.",
                     s->workspace, s->mode_line) < 0)
                return NULL;
        return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s},s:s}", "protocolVersion", s->version, "capabilities", "tools",
                         "listChanged", false, "serverInfo", "name", "vectora-sandbox", "version", VS_VERSION,
                         "instructions", text);
}

/* tools/list for this mode and the workspace's policy: the tools'
 * openWorldHint where it gives the jail a network (the host's or an
 * allowlist); without the daemon, no terminal under an allowlist (its
 * commands need the daemon's proxy: embedded_note). */
static json_t *tools_list(McpServer *s) {
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        bool loaded = tools_load_policy(s->workspace, &p, NULL, NULL, NULL) >= 0;
        bool open_world = loaded && (p->network || p->net_allowlist);
        bool commands = s->daemon || !loaded || !p->sandboxed || !p->net_allowlist;
        return mcp_tools_list(s->daemon, commands, open_world, mcp_version_has_structured(s->version));
}

/* What the mode line adds in embedded mode: commands under network =
 * [...] need the daemon's proxy (the file tools work without). */
static const char *embedded_note(McpServer *s) {
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        if (tools_load_policy(s->workspace, &p, NULL, NULL, NULL) < 0 || !p->sandboxed || !p->net_allowlist)
                return "";
        return " The workspace's network = [...] is served by the daemon's proxy: terminal is refused here (start "
               "vectora-sandboxd for commands); the file tools work.";
}

/* One message; the response to send, or NULL for none (a notification, a
 * response, or out of memory). */
static json_t *on_message(McpServer *s, json_t *msg, bool in_place) {
        JsonRpcMessage m;
        json_t *id = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (jsonrpc_decode(msg, &m, &id, &err) < 0)
                return jsonrpc_response(id, NULL, JSONRPC_INVALID_REQUEST, vs_error_message(err));
        if (m.kind != JSONRPC_REQUEST)
                return NULL; /* notifications/initialized, cancelled, progress: nothing to answer */
        json_t *result = NULL;
        int code = 0;
        const char *why = NULL;
        if (streq(m.method, "initialize"))
                result = on_initialize(s, m.params, &code, &why, &err);
        else if (streq(m.method, "ping"))
                result = json_object();
        else if (!s->version) {
                code = MCP_NOT_INITIALIZED;
                why = "send initialize first";
        } else if (streq(m.method, "tools/list"))
                /* Only what this mode serves: no process tools without the daemon. */
                result = tools_list(s);
        else if (streq(m.method, "tools/call")) {
                result = on_call(s, msg, &m, in_place, &code, &why, &err);
                if (code == -1)
                        return NULL; /* answered by its thread, or cancelled */
        } else {
                code = JSONRPC_METHOD_NOT_FOUND;
                why = "this server has: initialize, ping, tools/list, tools/call";
        }
        if (!result && !code) {
                code = JSONRPC_INTERNAL_ERROR;
                why = "out of memory";
        }
        json_t *resp = jsonrpc_response(m.id, result, code, why);
        json_decref(result);
        return resp;
}

static int on_line(McpServer *s, const char *p, size_t n, StrBuf *out) {
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
                n--;
        if (n == 0)
                return 0;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_(json_decrefp) json_t *v = NULL;
        int r = jsonrpc_parse_line(p, n, &v, &err);
        if (r == -ENOMEM)
                return r;
        _cleanup_(json_decrefp) json_t *id = r == -EBADMSG ? jsonrpc_salvage_id(p, n) : NULL;
        if (id)
                return jsonrpc_encode_error(out, id, JSONRPC_INVALID_PARAMS,
                                            "a string holds \\u0000 (a NUL byte) or a lone UTF-16 surrogate, which "
                                            "file content and commands cannot carry; send the text without it (write "
                                            "bytes like these with the terminal tool, e.g. printf)");
        if (r < 0)
                return jsonrpc_encode_error(out, NULL, r == -EINVAL ? JSONRPC_INVALID_REQUEST : JSONRPC_PARSE_ERROR,
                                            vs_error_message(err));
        if (json_is_object(v)) {
                _cleanup_(json_decrefp) json_t *resp = on_message(s, v, false);
                return resp ? jsonrpc_encode_line(out, resp) : 0;
        }
        /* A batch: part of revision 2025-03-26 only. */
        if (!s->version || !streq(s->version, "2025-03-26"))
                return jsonrpc_encode_error(out, NULL, JSONRPC_INVALID_REQUEST,
                                            "batches are not part of the negotiated MCP revision; send one message per line");
        _cleanup_(json_decrefp) json_t *all = json_array();
        size_t i;
        json_t *msg;
        json_array_foreach(v, i, msg) {
                json_t *resp = on_message(s, msg, true);
                if (resp && json_array_append_new(all, resp) < 0)
                        return -ENOMEM;
        }
        return json_array_size(all) ? jsonrpc_encode_line(out, all) : 0;
}

int verb_mcp(const CliArgs *a) {
        const char *ws = a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".";
        if (a->json)
                return cli_fail_code(a, EXIT_USAGE, "usage", "mcp: its standard output is JSON-RPC already; drop --json");
        /* As written: the core checks a path through a symlink against the
         * workspace it lies in as spelled (config_locate()). */
        _cleanup_free_ char *abs = cli_workspace_abs(a);
        if (!abs)
                return cli_fail(EXIT_REFUSED, "mcp: workspace %s: %s", ws, strerror(errno));
        /* Calls served here are audited here; through the daemon, by it. */
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (a->val[OPT_AUDIT_LOG] && audit_open(a->val[OPT_AUDIT_LOG], &err) < 0)
                return cli_fail(EXIT_REFUSED, "mcp: %s", vs_error_message(err));
        McpServer s = { .workspace = abs, .require_sandbox = a->require_sandbox };
        mcp_embedded_init(&s.emb, abs, a->require_sandbox);
        pthread_mutex_init(&s.lock, NULL);
        pthread_cond_init(&s.cond, NULL);
        /* The mode, once: the daemon named, or the one at the default
         * socket (cli_socket() checks that socket is the caller's own),
         * when it answers now; else a worker of our own for the whole
         * session. */
        _cleanup_free_ char *sock = NULL, *mode_line = NULL;
        if (cli_socket(a) && !(sock = strdup(cli_socket(a))))
                return cli_fail(EXIT_REFUSED, "mcp: out of memory");
        _cleanup_free_ char *why = NULL; /* not said: the mode line says it all */
        int probe = -EBADF;
        if (sock && client_connect(sock, &probe, &why) >= 0) {
                s.daemon = true;
                s.socket = sock;
        }
        safe_close(probe);
        const char *def = cli_default_socket();
        int k;
        if (s.daemon)
                k = asprintf(&mode_line, "Mode: daemon: calls are served through vectora-sandboxd at %s, in parallel; background processes (process_*) are available.", sock);
        else if (a->val[OPT_NO_DAEMON])
                k = asprintf(&mode_line, "Mode: embedded (--no-daemon): this server serves with its own worker, calls "
                                         "in parallel; background processes (process_*) are not available.%s",
                             embedded_note(&s));
        else
                k = asprintf(&mode_line, "Mode: embedded (no vectora-sandboxd answers at %s): this server serves "
                                         "with its own worker, calls in parallel, for its whole session; background "
                                         "processes (process_*) are not available.%s",
                             sock ? sock : def ? def : "the default socket", embedded_note(&s));
        if (k < 0)
                return cli_fail(EXIT_REFUSED, "mcp: out of memory");
        s.mode_line = mode_line;
        fprintf(stderr, "vectora-sandbox: mcp: serving %s. %s\n", abs, mode_line);
        /* A client that goes away ends us through EOF or EPIPE, not a signal. */
        signal(SIGPIPE, SIG_IGN);

        int rc = 0;
        int r = mcp_input_start(&s.in);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "mcp: cannot start reading standard input: %s", strerror(-r));
        for (;;) {
                size_t n = 0;
                _cleanup_free_ char *line = mcp_input_next(s.in, &n);
                if (!line)
                        break;
                _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
                if ((r = on_line(&s, line, n, &out)) < 0) {
                        rc = cli_fail(EXIT_REFUSED, "mcp: %s", strerror(-r));
                        break;
                }
                /* Answer each message as it is done: a client may wait for it. */
                if (out.len && mcp_output(s.in, out.data, out.len) < 0)
                        break;
        }
        /* At EOF the calls running still answer (a client may close its
         * end of our input and read on). */
        pthread_mutex_lock(&s.lock);
        bool ended = false;
        while (s.calls > 0) {
                /* A client gone for good cancelled its calls; a worker that
                 * answers no cancel (one a process in the jail stalled)
                 * would keep this server, its jail and what runs there
                 * forever: it is ended after a grace, its calls fail. */
                uint64_t gone = mcp_input_gone_us(s.in);
                if (!ended && !s.daemon && gone && now_us() - gone > MCP_GONE_GRACE_MS * 1000u) {
                        pthread_mutex_unlock(&s.lock);
                        mcp_embedded_stop(&s.emb);
                        pthread_mutex_lock(&s.lock);
                        ended = true;
                        continue;
                }
                struct timespec ts = now_wall(); /* the condition's clock */
                ts.tv_sec++;
                (void)pthread_cond_timedwait(&s.cond, &s.lock, &ts);
        }
        s.stopping = true;
        pthread_cond_broadcast(&s.cond);
        pthread_mutex_unlock(&s.lock);
        if (s.emb_started)
                pthread_join(s.emb_thread, NULL);
        mcp_input_stop(s.in);
        mcp_embedded_done(&s.emb);
        return rc;
}
