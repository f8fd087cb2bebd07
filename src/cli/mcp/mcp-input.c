/* SPDX-License-Identifier: MIT */
/* The MCP server's standard input, read on a thread of its own while the
 * calls run on threads of theirs (mcp-input.h). The thread only
 * reads, parses small lines, writes to stdout under the lock, and calls
 * shutdown() and write() on descriptors: it never forks, and the main
 * thread's forks (an embedded worker's start, spawn-util.h) do only
 * async-signal-safe work in the child. It starts with every signal
 * blocked, so signals reach the main thread as before. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "jsonrpc.h"
#include "mcp-input.h"
#include "strbuf.h"
#include "time-util.h"

/* A line longer than this is handed on unread: ping and
 * notifications/cancelled are small, a 64 MiB file_write is not. */
#define PEEK_MAX (64u * 1024u)
/* Ids of notifications/cancelled for calls not begun yet (queued behind
 * the running ones), kept until the call comes up; the newest so many. */
#define CANCELLED_MAX 64
/* Lines read but not taken yet by the main thread (which takes the next
 * only when fewer than MCP_CALLS_MAX calls run), in bytes with their
 * bookkeeping: past this the reader stops reading, so a client that keeps
 * writing blocks in its write instead of growing this process without
 * bound. Two of the largest lines (a 64 MiB file write each). */
#define QUEUED_MAX (2u * (size_t)JSONRPC_MAX_LINE)
#define LINE_COST(n) ((n) + sizeof(Line) + 16u)

typedef struct Line {
        struct Line *next;
        char *data;
        size_t len;
} Line;

struct McpRun {
        McpRun *next;
        json_t *id;           /* its JSON-RPC id (a copy of its own) */
        json_t *progress;     /* _meta.progressToken (a copy), or NULL */
        uint64_t started_us;
        uint64_t last_progress; /* seconds reported last */
        bool cancelled;       /* a notifications/cancelled named it, or the client went away */
        int fd;               /* the daemon connection it runs on, or -1 */
        int efd;              /* embedded: its own eventfd, written on its cancel (session_call()), or -1 */
};

struct McpInput {
        pthread_t thread, ticker;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_cond_t room;  /* the main thread took a line, or stopped */
        pthread_mutex_t out_lock;
        Line *head, *tail;
        size_t queued;        /* LINE_COST of the lines from head to tail */
        bool eof;
        bool done;            /* the main thread stops serving */
        uint64_t gone_us;     /* when the client went away (watch_stdout), or 0 */
        McpRun *running;      /* the tools/calls being served */
        json_t *early;        /* ids cancelled before their call began */
};

int mcp_output(McpInput *in, const char *p, size_t n) {
        pthread_mutex_lock(&in->out_lock);
        int r = write_all(STDOUT_FILENO, p, n);
        pthread_mutex_unlock(&in->out_lock);
        return r;
}

/* With in->lock held. */
static void cancel_run(McpInput *in, McpRun *c) {
        c->cancelled = true;
        /* Through the daemon: the connection closes both ways, the daemon
         * cancels the call (docs/protocol.md), the call's read of the
         * reply ends. shutdown(), not close(): the call's thread owns the
         * descriptor and closes it after mcp_input_call_fd(-1). */
        if (c->fd >= 0)
                (void)shutdown(c->fd, SHUT_RDWR);
        uint64_t one = 1;
        if (c->efd >= 0)
                (void)!write(c->efd, &one, sizeof one);
}

static void on_cancelled(McpInput *in, json_t *params) {
        json_t *target = json_object_get(params, "requestId");
        if (!json_is_integer(target) && !json_is_string(target))
                return;
        pthread_mutex_lock(&in->lock);
        McpRun *c = in->running;
        while (c && !json_equal(c->id, target))
                c = c->next;
        if (c)
                cancel_run(in, c);
        else {
                /* Most are cancels that came after their call ended (a
                 * cancel racing the reply), never taken: the oldest goes,
                 * or they would fill the list for good and a call still
                 * queued would run on after its cancel. */
                if (json_array_size(in->early) >= CANCELLED_MAX)
                        json_array_remove(in->early, 0);
                json_array_append_new(in->early, json_deep_copy(target));
        }
        pthread_mutex_unlock(&in->lock);
}

/* ping and notifications/cancelled are taken here, while a call runs:
 * true when the line was one of them. */
static bool take_now(McpInput *in, const char *p, size_t n) {
        if (n > PEEK_MAX)
                return false;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_(json_decrefp) json_t *v = NULL;
        if (jsonrpc_parse_line(p, n, &v, &err) < 0 || !json_is_object(v))
                return false; /* the main thread answers the error */
        JsonRpcMessage m;
        json_t *id = NULL;
        if (jsonrpc_decode(v, &m, &id, &err) < 0)
                return false;
        if (m.kind == JSONRPC_NOTIFICATION && streq(m.method, "notifications/cancelled")) {
                on_cancelled(in, m.params);
                return true;
        }
        if (m.kind != JSONRPC_REQUEST || !streq(m.method, "ping"))
                return false;
        _cleanup_(json_decrefp) json_t *empty = json_object();
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        if (!empty || jsonrpc_encode_result(&out, m.id, empty) < 0)
                return false;
        (void)mcp_output(in, out.data, out.len);
        return true;
}

static void queue_line(McpInput *in, const char *p, size_t n) {
        Line *l = calloc(1, sizeof *l);
        if (l && !(l->data = malloc(n + 1))) {
                free(l);
                l = NULL;
        }
        pthread_mutex_lock(&in->lock);
        while (l && in->queued >= QUEUED_MAX && !in->done)
                pthread_cond_wait(&in->room, &in->lock);
        if (l) {
                in->queued += LINE_COST(n);
                memcpy(l->data, p, n);
                l->data[n] = 0;
                l->len = n;
                if (in->tail)
                        in->tail->next = l;
                else
                        in->head = l;
                in->tail = l;
        } else
                in->eof = true; /* out of memory: stop as at EOF */
        pthread_cond_signal(&in->cond);
        pthread_mutex_unlock(&in->lock);
}

/* After EOF on stdin: a client that closed only its end of our input
 * still reads what we answer (as a half-closed daemon connection), but one
 * that went away (stdout's reader closed too) cancels the call running. */
static void watch_stdout(McpInput *in) {
        for (;;) {
                pthread_mutex_lock(&in->lock);
                bool done = in->done;
                pthread_mutex_unlock(&in->lock);
                if (done)
                        return;
                struct pollfd p = { .fd = STDOUT_FILENO, .events = 0 };
                if (poll(&p, 1, 250) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
                        pthread_mutex_lock(&in->lock);
                        in->gone_us = now_us();
                        for (McpRun *c = in->running; c; c = c->next)
                                cancel_run(in, c);
                        pthread_cond_broadcast(&in->cond);
                        pthread_mutex_unlock(&in->lock);
                        return;
                }
        }
}

static void *reader(void *arg) {
        McpInput *in = arg;
        _cleanup_strbuf_ StrBuf buf = STRBUF_INIT;
        bool skipping = false; /* inside a line over the limit */
        size_t scanned = 0;    /* bytes of buf known to hold no newline */
        for (;;) {
                if (strbuf_reserve(&buf, 64 * 1024) < 0)
                        break;
                ssize_t k = read(STDIN_FILENO, buf.data + buf.len, buf.cap - buf.len - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                buf.len += (size_t)k;
                size_t start = 0;
                /* Only the new bytes can hold the next newline. */
                char *nl = memchr(buf.data + scanned, '\n', buf.len - scanned);
                for (; nl; nl = memchr(buf.data + start, '\n', buf.len - start)) {
                        size_t n = (size_t)(nl - (buf.data + start));
                        if (!skipping && !take_now(in, buf.data + start, n))
                                queue_line(in, buf.data + start, n);
                        skipping = false;
                        start += n + 1;
                }
                strbuf_consume(&buf, start);
                scanned = buf.len;
                if (!skipping && buf.len > JSONRPC_MAX_LINE) {
                        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
                        if (jsonrpc_encode_error(&out, NULL, JSONRPC_PARSE_ERROR, "message over the line limit") < 0 ||
                            mcp_output(in, out.data, out.len) < 0)
                                break;
                        skipping = true;
                }
                if (skipping) {
                        strbuf_clear(&buf);
                        scanned = 0;
                }
        }
        pthread_mutex_lock(&in->lock);
        in->eof = true;
        pthread_cond_signal(&in->cond);
        pthread_mutex_unlock(&in->lock);
        watch_stdout(in);
        return NULL;
}

/* With in->lock held: notifications/progress for each call that asked
 * for them (_meta.progressToken) and has run another interval. Written
 * under the lock, so none follows its call's response (the call leaves
 * the list before it answers). */
static void send_progress(McpInput *in, uint64_t now) {
        for (McpRun *c = in->running; c; c = c->next) {
                uint64_t s = (now - c->started_us) / 1000000u;
                if (!c->progress || c->cancelled || s < c->last_progress + MCP_PROGRESS_INTERVAL_S)
                        continue;
                c->last_progress = s;
                char msg[96];
                snprintf(msg, sizeof msg, "running for %llu s", (unsigned long long)s);
                _cleanup_(json_decrefp) json_t *n =
                        json_pack("{s:s,s:s,s:{s:O,s:I,s:s}}", "jsonrpc", "2.0", "method", "notifications/progress",
                                  "params", "progressToken", c->progress, "progress", (json_int_t)s, "message", msg);
                _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
                if (n && jsonrpc_encode_line(&out, n) >= 0)
                        (void)mcp_output(in, out.data, out.len);
        }
}

static void *ticker(void *arg) {
        McpInput *in = arg;
        for (;;) {
                /* A quarter second: each progress within its interval. */
                (void)poll(NULL, 0, 250);
                pthread_mutex_lock(&in->lock);
                bool done = in->done;
                if (!done)
                        send_progress(in, now_us());
                pthread_mutex_unlock(&in->lock);
                if (done)
                        return NULL;
        }
}

int mcp_input_start(McpInput **ret) {
        McpInput *in = calloc(1, sizeof *in);
        if (!in)
                return -ENOMEM;
        in->early = json_array();
        if (!in->early) {
                free(in);
                return -ENOMEM;
        }
        pthread_mutex_init(&in->lock, NULL);
        pthread_mutex_init(&in->out_lock, NULL);
        pthread_cond_init(&in->cond, NULL);
        pthread_cond_init(&in->room, NULL);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int r = pthread_create(&in->thread, NULL, reader, in);
        int r2 = r == 0 ? pthread_create(&in->ticker, NULL, ticker, in) : 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0 || r2 != 0) {
                /* A reader already started keeps its McpInput: leaked, and
                 * the process exits next. */
                if (r != 0) {
                        json_decref(in->early);
                        free(in);
                }
                return -(r ?: r2);
        }
        /* Never joined: they may sit in read() or a wait when the server exits. */
        pthread_detach(in->thread);
        pthread_detach(in->ticker);
        *ret = in;
        return 0;
}

char *mcp_input_next(McpInput *in, size_t *ret_len) {
        pthread_mutex_lock(&in->lock);
        while (!in->head && !in->eof)
                pthread_cond_wait(&in->cond, &in->lock);
        Line *l = in->head;
        if (l) {
                in->head = l->next;
                if (!in->head)
                        in->tail = NULL;
                in->queued -= LINE_COST(l->len);
                pthread_cond_signal(&in->room);
        }
        pthread_mutex_unlock(&in->lock);
        if (!l)
                return NULL;
        char *p = l->data;
        *ret_len = l->len;
        free(l);
        return p;
}

int mcp_input_call_begin(McpInput *in, json_t *id, json_t *progress_token, McpRun **ret) {
        pthread_mutex_lock(&in->lock);
        size_t i;
        json_t *v;
        json_array_foreach(in->early, i, v)
                if (json_equal(v, id)) {
                        json_array_remove(in->early, i);
                        pthread_mutex_unlock(&in->lock);
                        return 0;
                }
        McpRun *c = calloc(1, sizeof *c);
        if (c && (!(c->id = json_deep_copy(id)) ||
                  (progress_token && !(c->progress = json_deep_copy(progress_token))))) {
                json_decref(c->id);
                free(TAKE_PTR(c));
        }
        if (c) {
                c->fd = c->efd = -1;
                c->started_us = now_us();
                c->next = in->running;
                in->running = c;
        }
        pthread_mutex_unlock(&in->lock);
        *ret = c;
        return c ? 1 : -ENOMEM;
}

void mcp_input_call_fd(McpInput *in, McpRun *c, int fd) {
        pthread_mutex_lock(&in->lock);
        c->fd = fd;
        if (fd >= 0 && c->cancelled)
                (void)shutdown(fd, SHUT_RDWR);
        pthread_mutex_unlock(&in->lock);
}

int mcp_input_call_cancel_fd(McpInput *in, McpRun *c) {
        pthread_mutex_lock(&in->lock);
        if (c->efd < 0 && (c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
                c->efd = -errno;
        int fd = c->efd;
        uint64_t one = 1;
        if (fd >= 0 && c->cancelled) /* before: it is read as soon as the call runs */
                (void)!write(fd, &one, sizeof one);
        if (fd < 0)
                c->efd = -1;
        pthread_mutex_unlock(&in->lock);
        return fd;
}

bool mcp_input_call_cancelled(McpInput *in, McpRun *c) {
        pthread_mutex_lock(&in->lock);
        bool cancelled = c->cancelled;
        pthread_mutex_unlock(&in->lock);
        return cancelled;
}

bool mcp_input_call_end(McpInput *in, McpRun *c) {
        pthread_mutex_lock(&in->lock);
        McpRun **p = &in->running;
        while (*p && *p != c)
                p = &(*p)->next;
        if (*p)
                *p = c->next;
        bool cancelled = c->cancelled;
        pthread_mutex_unlock(&in->lock);
        safe_close(c->efd);
        json_decref(c->id);
        json_decref(c->progress);
        free(c);
        return cancelled;
}

uint64_t mcp_input_gone_us(McpInput *in) {
        pthread_mutex_lock(&in->lock);
        uint64_t t = in->gone_us;
        pthread_mutex_unlock(&in->lock);
        return t;
}

void mcp_input_stop(McpInput *in) {
        if (!in)
                return;
        pthread_mutex_lock(&in->lock);
        in->done = true;
        pthread_cond_broadcast(&in->room);
        pthread_mutex_unlock(&in->lock);
        /* The reader may still be in read() or poll(): the process exits
         * next, and the McpInput stays allocated for it until then. */
}
