/* SPDX-License-Identifier: MIT */
/* The MCP server's standard input, read on a thread of its own while the
 * main thread serves one call at a time (mcp-input.h). The thread only
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

/* A line longer than this is handed on unread: ping and
 * notifications/cancelled are small, a 64 MiB file_write is not. */
#define PEEK_MAX (64u * 1024u)
/* Ids of notifications/cancelled for calls not begun yet (queued behind
 * the running one), kept until the call comes up. */
#define CANCELLED_MAX 64

typedef struct Line {
        struct Line *next;
        char *data;
        size_t len;
} Line;

struct McpInput {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_mutex_t out_lock;
        Line *head, *tail;
        bool eof;
        bool done;            /* the main thread stops serving */
        json_t *running;      /* the tools/call id being served (a copy of its own), or NULL */
        bool cancelled;       /* a notifications/cancelled named it, or the client went away */
        int call_fd;          /* the daemon connection it runs on, or -1 */
        int cancel_efd;       /* the embedded session's cancel_fd */
        json_t *early;        /* ids cancelled before their call began */
};

int mcp_output(McpInput *in, const char *p, size_t n) {
        pthread_mutex_lock(&in->out_lock);
        int r = write_all(STDOUT_FILENO, p, n);
        pthread_mutex_unlock(&in->out_lock);
        return r;
}

/* With in->lock held. */
static void cancel_running(McpInput *in) {
        in->cancelled = true;
        /* Through the daemon: the connection closes both ways, the daemon
         * cancels the call (docs/protocol.md), the main thread's read of
         * the reply ends. shutdown(), not close(): the main thread owns
         * the descriptor and closes it after mcp_input_call_fd(-1). */
        if (in->call_fd >= 0)
                (void)shutdown(in->call_fd, SHUT_RDWR);
        uint64_t one = 1;
        if (in->cancel_efd >= 0)
                (void)!write(in->cancel_efd, &one, sizeof one);
}

static void on_cancelled(McpInput *in, json_t *params) {
        json_t *target = json_object_get(params, "requestId");
        if (!json_is_integer(target) && !json_is_string(target))
                return;
        pthread_mutex_lock(&in->lock);
        if (in->running && json_equal(in->running, target))
                cancel_running(in);
        else if (json_array_size(in->early) < CANCELLED_MAX)
                json_array_append_new(in->early, json_deep_copy(target));
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
        if (l) {
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
                        if (in->running)
                                cancel_running(in);
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

int mcp_input_start(McpInput **ret) {
        McpInput *in = calloc(1, sizeof *in);
        if (!in)
                return -ENOMEM;
        in->call_fd = -1;
        in->early = json_array();
        in->cancel_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!in->early || in->cancel_efd < 0) {
                int r = in->early ? -errno : -ENOMEM;
                json_decref(in->early);
                safe_close(in->cancel_efd);
                free(in);
                return r;
        }
        pthread_mutex_init(&in->lock, NULL);
        pthread_mutex_init(&in->out_lock, NULL);
        pthread_cond_init(&in->cond, NULL);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int r = pthread_create(&in->thread, NULL, reader, in);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                json_decref(in->early);
                safe_close(in->cancel_efd);
                free(in);
                return -r;
        }
        /* Never joined: it may sit in read() when the server exits. */
        pthread_detach(in->thread);
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
        }
        pthread_mutex_unlock(&in->lock);
        if (!l)
                return NULL;
        char *p = l->data;
        *ret_len = l->len;
        free(l);
        return p;
}

bool mcp_input_call_begin(McpInput *in, json_t *id) {
        pthread_mutex_lock(&in->lock);
        bool go = true;
        size_t i;
        json_t *v;
        json_array_foreach(in->early, i, v)
                if (json_equal(v, id)) {
                        json_array_remove(in->early, i);
                        go = false;
                        break;
                }
        if (go) {
                in->running = json_deep_copy(id);
                in->cancelled = false;
        }
        pthread_mutex_unlock(&in->lock);
        return go;
}

void mcp_input_call_fd(McpInput *in, int fd) {
        pthread_mutex_lock(&in->lock);
        in->call_fd = fd;
        if (fd >= 0 && in->cancelled)
                (void)shutdown(fd, SHUT_RDWR);
        pthread_mutex_unlock(&in->lock);
}

bool mcp_input_call_cancelled(McpInput *in) {
        pthread_mutex_lock(&in->lock);
        bool cancelled = in->cancelled;
        pthread_mutex_unlock(&in->lock);
        return cancelled;
}

bool mcp_input_call_end(McpInput *in) {
        pthread_mutex_lock(&in->lock);
        bool cancelled = in->cancelled;
        json_decref(TAKE_PTR(in->running));
        in->cancelled = false;
        in->call_fd = -1;
        uint64_t n;
        (void)!read(in->cancel_efd, &n, sizeof n); /* a count left by a cancel the session did not see */
        pthread_mutex_unlock(&in->lock);
        return cancelled;
}

int mcp_input_cancel_fd(McpInput *in) {
        return in->cancel_efd;
}

void mcp_input_stop(McpInput *in) {
        if (!in)
                return;
        pthread_mutex_lock(&in->lock);
        in->done = true;
        pthread_mutex_unlock(&in->lock);
        /* The thread may still be in read() or poll(): the process exits
         * next, and the McpInput stays allocated for it until then. */
}
