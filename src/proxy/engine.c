/* SPDX-License-Identifier: MIT */
/* The network allowlist's proxy, in its own process (vectora-sandbox-proxy,
 * main.c): one listener per workspace with `network = [..]`, each a unix
 * socket the daemon made and passed over (it is mounted into the jail,
 * where the worker's relay forwards 127.0.0.1:3128 to it). It speaks HTTP
 * CONNECT and plain HTTP forwarding (TLS is opened only to a secret's
 * hosts: tls-intercept.h; every other tunnel stays closed) and decides
 * every request against the workspace's rules as the daemon last
 * committed them (an add or rules, its secrets and [[sandbox.http]]
 * rules, then a commit: proxy-ctl.h):
 *
 *   1. host and port must match an entry (net_match);
 *   2. the proxy resolves the name itself (uv_getaddrinfo, off the loop)
 *      and connects only to an address the entry may reach
 *      (net_address_allowed: no loopback, metadata, private... through a
 *      wildcard; none of this host's own addresses through a name,
 *      host-addrs.h);
 *   3. after a CONNECT, the TLS ClientHello's SNI must name the CONNECT
 *      host, so an allowed address cannot front for another name.
 *
 * A refusal is an HTTP 403 naming the host and the policy line to change
 * (or, past the CONNECT, a closed tunnel), and a denial sent to the daemon,
 * which audits it and keeps it in the workspace's recent denials (the
 * tool call that was running reports it as network_denied). Every wait is
 * bounded: head, connect and idle timeouts, 16 KiB for a head, 1 MiB
 * queued per direction. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "head-rewrite.h"
#include "host-addrs.h"
#include "inject.h"
#include "macro.h"
#include "net-policy.h"
#include "proxy-ctl.h"
#include "proxy-parse.h"
#include "splice-link.h"
#include "http-rules.h"
#include "tls-intercept.h"
#include "strbuf.h"
#include "time-util.h"

#define PROXY_MAX_CONNS 256          /* open connections per workspace */
#define PROXY_ACCEPT_MAX (2 * PROXY_MAX_CONNS) /* past it (503s pending), a workspace's listener waits */
#define PROXY_HEAD_TIMEOUT_MS 30000  /* to send a request head, or the ClientHello */
#define PROXY_CONNECT_TIMEOUT_MS 15000
#define PROXY_IDLE_TIMEOUT_MS 300000 /* a tunnel with no traffic either way */
#define PROXY_QUEUE_HIGH (1u << 20)  /* stop reading a side whose peer has this much queued */

typedef enum ConnState {
        CS_HEAD,       /* reading the request head */
        CS_RESOLVING,
        CS_CONNECTING,
        CS_HELLO,      /* CONNECT answered: reading the ClientHello */
        CS_SPLICE,     /* bytes both ways */
        CS_TLS,        /* a secret's host: TLS both ways on a thread (tls-intercept.h) */
        CS_ANSWER,     /* an answer of the proxy's own is being written; then the end */
        CS_CLOSING,
} ConnState;

typedef struct ProxyConn ProxyConn;
struct ProxyConn {
        Proxy *px;
        ProxyConn *next, *prev;
        ConnState state;
        uv_pipe_t client;
        uv_tcp_t upstream;
        uv_timer_t timer;
        uv_getaddrinfo_t gai;
        uv_connect_t creq;
        unsigned handles;      /* open handles; freed at 0 */
        bool upstream_init, gai_pending;
        bool client_reading, upstream_reading;
        bool client_eof, upstream_eof;
        char *buf;             /* head, then ClientHello (VS_HTTP_HEAD_MAX) */
        size_t len;
        size_t want;           /* CS_HEAD: bytes the head and a body to check need */
        VsHttpHead head;
        VsNetRule rule;        /* a copy of the matching entry (the policy may change meanwhile) */
        struct addrinfo *ai;
        SpliceLink *link;      /* the tunnel's bytes, moved by the kernel (splice-link.h) */
        TlsJob *tls;           /* CS_TLS: its thread */
        uv_async_t tls_done;   /* the thread is done */
        bool tls_done_init;
};

static void head_ready(ProxyConn *c);
static void upstream_ready(ProxyConn *c);
static void on_timer_state(ProxyConn *c);
static void on_connection(uv_stream_t *server, int status);
static void proxy_free(Proxy *px);

struct Proxy {
        uint64_t id;
        bool removed;
        uv_loop_t *loop;
        uv_pipe_t listener;
        bool listening;
        uid_t peer_uid;
        bool allow;
        char *config;
        VsNetRule *rules;
        size_t n_rules;
        SecretSet secrets; /* tls-intercept.h */
        HttpRuleSet http;  /* [[sandbox.http]], one a host (http-rules.h) */
        /* The set an add or rules began and its secret and http messages
         * fill; it replaces the one above whole at the commit, so that no
         * request is ever checked against half of it (before the first
         * commit the listener is not read: its connections wait). */
        struct Staged {
                bool allow;
                char *config;
                VsNetRule *rules;
                size_t n_rules;
                SecretSet secrets;
                HttpRuleSet http;
        } *staged;
        bool serving; /* committed once: the listener is read */
        ProxyConn *conns;
        unsigned open;
        uint64_t total;
        uint64_t lost; /* denials the daemon did not get yet (its socket full) */
        bool conns_changed; /* open or total changed since the daemon was told */
        bool accept_waits;  /* a connection waits in the listener: PROXY_ACCEPT_MAX were open */
        Proxy *next;
        ProxySend send;
};

static int send_msg(Proxy *px, const ProxyCtlMsg *m) {
        _cleanup_free_ char *s = proxy_ctl_encode(m);
        return s ? px->send(s) : -ENOMEM;
}

static Proxy *proxies;
static uv_check_t conns_check;
static bool conns_check_init;
/* A descriptor kept spare for shed(): an eventfd, since the confined
 * proxy may open no path (libuv's own spare is /dev/null or /, which it
 * cannot take again once used). */
static int spare_fd = -1;

static void flush_conns(uv_check_t *h) {
        uv_check_stop(h);
        if (spare_fd < 0)
                spare_fd = eventfd(0, EFD_CLOEXEC);
        for (Proxy *px = proxies; px; px = px->next) {
                if (!px->conns_changed)
                        continue;
                /* With the denials lost so far: the daemon counts and
                 * audits them (as not itemized) once this arrives. */
                if (send_msg(px, &(ProxyCtlMsg) { .op = PROXY_CTL_CONNS, .ws = px->id, .open = px->open,
                                                  .total = px->total, .lost = px->lost }) >= 0) {
                        px->lost = 0;
                        px->conns_changed = false;
                }
        }
}

/* The counts go to the daemon once a loop turn, not once a connection: a
 * jail that opens and closes connections in a loop would otherwise send
 * two messages each, fill the control socket, and every workspace's
 * denials sent meanwhile would be lost (counted, not itemized, missing
 * from their calls' network_denied). */
static void check_later(Proxy *px) {
        if (!conns_check_init) {
                if (uv_check_init(px->loop, &conns_check) < 0)
                        return;
                uv_unref((uv_handle_t *)&conns_check);
                conns_check_init = true;
        }
        (void)uv_check_start(&conns_check, flush_conns);
}

static void send_conns(Proxy *px) {
        px->conns_changed = true;
        check_later(px);
}

/* ---- denials -------------------------------------------------------------- */

static void record_denial(ProxyConn *c, const char *host, uint16_t port, const char *reason) {
        char h[256], why[400];
        snprintf(h, sizeof h, "%s", host ? host : "");
        snprintf(why, sizeof why, "%s", reason);
        if (send_msg(c->px, &(ProxyCtlMsg) { .op = PROXY_CTL_DENIAL, .ws = c->px->id, .time_us = now_us(), .host = h,
                                             .port = port, .reason = why }) < 0)
                c->px->lost++;
}

/* ---- connection lifetime -------------------------------------------------- */

static void conn_free(ProxyConn *c) {
        Proxy *px = c->px;
        if (c->prev)
                c->prev->next = c->next;
        else
                px->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        px->open--;
        free(c->buf);
        http_head_done(&c->head);
        net_rule_done(&c->rule);
        if (c->ai)
                uv_freeaddrinfo(c->ai);
        free(c);
        if (px->removed && !px->conns && !px->listening)
                proxy_free(px);
        else if (!px->removed) {
                send_conns(px);
                if (px->accept_waits && px->open < PROXY_ACCEPT_MAX) {
                        px->accept_waits = false;
                        on_connection((uv_stream_t *)&px->listener, 0);
                }
        }
}

static void on_handle_closed(uv_handle_t *h) {
        ProxyConn *c = h->data;
        if (--c->handles == 0 && !c->gai_pending)
                conn_free(c);
}

static void conn_close(ProxyConn *c) {
        if (c->state == CS_CLOSING)
                return;
        c->state = CS_CLOSING;
        splice_link_free(TAKE_PTR(c->link));
        tls_intercept_release(TAKE_PTR(c->tls));
        if (c->tls_done_init)
                uv_close((uv_handle_t *)&c->tls_done, on_handle_closed);
        if (c->gai_pending)
                uv_cancel((uv_req_t *)&c->gai);
        uv_close((uv_handle_t *)&c->client, on_handle_closed);
        uv_close((uv_handle_t *)&c->timer, on_handle_closed);
        if (c->upstream_init)
                uv_close((uv_handle_t *)&c->upstream, on_handle_closed);
}

typedef struct WriteReq {
        uv_write_t req;
        ProxyConn *conn;
        bool close_after;
        char data[];
} WriteReq;

static void resume_reading(ProxyConn *c);

static void on_written(uv_write_t *w, int status) {
        WriteReq *wr = (WriteReq *)w;
        ProxyConn *c = wr->conn;
        bool close_after = wr->close_after;
        free(wr);
        if (c->state == CS_CLOSING)
                return;
        if (status < 0 || close_after) {
                conn_close(c);
                return;
        }
        resume_reading(c);
}

/* Queues a copy of data on s. */
static int send_copy(ProxyConn *c, uv_stream_t *s, const void *data, size_t len, bool close_after) {
        WriteReq *wr = malloc(sizeof *wr + len);
        if (!wr)
                return -ENOMEM;
        wr->conn = c;
        wr->close_after = close_after;
        memcpy(wr->data, data, len);
        uv_buf_t b = uv_buf_init(wr->data, (unsigned)len);
        int r = uv_write(&wr->req, s, &b, 1, on_written);
        if (r < 0)
                free(wr);
        return r;
}

/* An HTTP answer to the client, then the end of the connection. */
_printf_(4, 5) static void respond(ProxyConn *c, int status, const char *title, const char *fmt, ...) {
        char body[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(body, sizeof body, fmt, ap);
        va_end(ap);
        char msg[1400];
        size_t n = head_answer(msg, sizeof msg, status, title, body);
        if (c->client_reading) {
                uv_read_stop((uv_stream_t *)&c->client);
                c->client_reading = false;
        }
        c->state = CS_ANSWER;
        on_timer_state(c);
        if (send_copy(c, (uv_stream_t *)&c->client, msg, n, true) < 0)
                conn_close(c);
}

/* A refusal: recorded, audited, answered with 403 while the client still
 * speaks HTTP; past a CONNECT's 200, the tunnel is closed. */
static void deny(ProxyConn *c, const char *host, uint16_t port, const char *reason, bool http) {
        record_denial(c, host, port, reason);
        if (!http) {
                conn_close(c);
                return;
        }
        const char *config = c->px->config ? c->px->config : "vectora.toml";
        respond(c, 403, "Forbidden",
                "vectora-sandbox: %s port %u is refused by the workspace's network policy: %s. "
                "To allow it, add \"%s\" (or \"%s:%u\") to network = [...] in %s.",
                host, (unsigned)port, reason, host, host, (unsigned)port, config);
}

/* ---- splicing --------------------------------------------------------------- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
        (void)suggested;
        ProxyConn *c = h->data;
        /* While the head or the ClientHello is gathered, no more than
         * c->buf has room for: what a read takes past it would be lost
         * (a body sent with its head); the rest waits in the socket for
         * the splice. */
        size_t n = 65536;
        if (h == (uv_handle_t *)&c->client && (c->state == CS_HEAD || c->state == CS_HELLO))
                n = MIN(n, VS_HTTP_HEAD_MAX - c->len);
        /* Room for a WriteReq header in front, so the bytes read are
         * written on without a copy. */
        WriteReq *wr = malloc(sizeof *wr + n);
        *b = wr ? uv_buf_init(wr->data, (unsigned)n) : uv_buf_init(NULL, 0);
}

static WriteReq *req_of(const uv_buf_t *b) {
        return b->base ? (WriteReq *)(b->base - offsetof(WriteReq, data)) : NULL;
}

static void on_client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);
static void on_upstream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void resume_reading(ProxyConn *c) {
        if ((c->state != CS_SPLICE && c->state != CS_HELLO) || c->link)
                return;
        if (c->state == CS_SPLICE && !c->client_reading && !c->client_eof &&
            uv_stream_get_write_queue_size((uv_stream_t *)&c->upstream) < PROXY_QUEUE_HIGH / 4)
                c->client_reading = uv_read_start((uv_stream_t *)&c->client, alloc_cb, on_client_read) == 0;
        if (!c->upstream_reading && !c->upstream_eof &&
            uv_stream_get_write_queue_size((uv_stream_t *)&c->client) < PROXY_QUEUE_HIGH / 4)
                c->upstream_reading = uv_read_start((uv_stream_t *)&c->upstream, alloc_cb, on_upstream_read) == 0;
}

static void on_shutdown(uv_shutdown_t *req, int status) {
        (void)status;
        free(req);
}

/* Moves one read from one side to the other; EOF half-closes. */
static void forward(ProxyConn *c, uv_stream_t *from, uv_stream_t *to, bool *reading, bool *eof, ssize_t n,
                    const uv_buf_t *b) {
        WriteReq *wr = req_of(b);
        if (n <= 0) {
                free(wr);
                if (n == 0)
                        return;
                if (n != UV_EOF) {
                        conn_close(c);
                        return;
                }
                *eof = true;
                uv_read_stop(from);
                *reading = false;
                if (c->client_eof && c->upstream_eof) {
                        conn_close(c);
                        return;
                }
                uv_shutdown_t *sd = malloc(sizeof *sd);
                if (!sd || uv_shutdown(sd, to, on_shutdown) < 0)
                        free(sd);
                return;
        }
        uv_timer_again(&c->timer);
        wr->conn = c;
        wr->close_after = false;
        uv_buf_t out = uv_buf_init(wr->data, (unsigned)n);
        if (uv_write(&wr->req, to, &out, 1, on_written) < 0) {
                free(wr);
                conn_close(c);
                return;
        }
        if (uv_stream_get_write_queue_size(to) > PROXY_QUEUE_HIGH) {
                uv_read_stop(from);
                *reading = false;
        }
}

static void check_hello(ProxyConn *c);

static void on_client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
        ProxyConn *c = s->data;
        if (c->state == CS_CLOSING || c->state == CS_ANSWER) {
                free(req_of(b));
                return;
        }
        if (c->state == CS_SPLICE) {
                forward(c, s, (uv_stream_t *)&c->upstream, &c->client_reading, &c->client_eof, n, b);
                return;
        }
        /* Head or ClientHello: gathered in c->buf, bounded. */
        WriteReq *wr = req_of(b);
        if (n < 0) {
                free(wr);
                conn_close(c);
                return;
        }
        size_t room = VS_HTTP_HEAD_MAX - c->len;
        size_t k = (size_t)n < room ? (size_t)n : room;
        if (k)
                memcpy(c->buf + c->len, b->base, k);
        c->len += k;
        free(wr);
        if (c->state == CS_HEAD)
                head_ready(c);
        else if (c->state == CS_HELLO)
                check_hello(c);
}

static void on_upstream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
        ProxyConn *c = s->data;
        if (c->state == CS_CLOSING || c->state == CS_ANSWER) {
                free(req_of(b));
                return;
        }
        forward(c, s, (uv_stream_t *)&c->client, &c->upstream_reading, &c->upstream_eof, n, b);
}

/* ---- CONNECT: the ClientHello ------------------------------------------------ */

static void on_link(void *userdata, bool ended) {
        ProxyConn *c = userdata;
        if (ended)
                conn_close(c);
        else
                uv_timer_again(&c->timer);
}

/* Hands the tunnel to the kernel once nothing is queued in libuv on
 * either side (what libuv holds would be overtaken); false: the copying
 * path goes on. */
static bool splice_by_kernel(ProxyConn *c) {
        uv_os_fd_t a, b;
        if (uv_stream_get_write_queue_size((uv_stream_t *)&c->client) ||
            uv_stream_get_write_queue_size((uv_stream_t *)&c->upstream) ||
            uv_fileno((uv_handle_t *)&c->client, &a) < 0 || uv_fileno((uv_handle_t *)&c->upstream, &b) < 0)
                return false;
        uv_read_stop((uv_stream_t *)&c->client);
        uv_read_stop((uv_stream_t *)&c->upstream);
        c->client_reading = c->upstream_reading = false;
        return splice_link_start(c->px->loop, a, b, on_link, c, &c->link) >= 0;
}

static void start_splice(ProxyConn *c, const char *pending, size_t len) {
        c->state = CS_SPLICE;
        on_timer_state(c);
        /* What was read with the head or the ClientHello goes first,
         * written at once when the new connection takes it (it does,
         * but for a head that a full socket buffer would not). */
        size_t sent = 0;
        if (len) {
                uv_buf_t b = uv_buf_init((char *)pending, (unsigned)len);
                int r = uv_try_write((uv_stream_t *)&c->upstream, &b, 1);
                sent = r > 0 ? (size_t)r : 0;
        }
        if (sent == len && splice_by_kernel(c))
                return;
        if (len > sent && send_copy(c, (uv_stream_t *)&c->upstream, pending + sent, len - sent, false) < 0) {
                conn_close(c);
                return;
        }
        resume_reading(c);
}

static void on_tls_done(uv_async_t *a) {
        conn_close(a->data);
}

/* A secret's host: TLS with the jail (the secret's leaf) and with the
 * host, on a thread over copies of both sockets; the loop keeps the
 * handles until it is done. */
static void intercept(ProxyConn *c, SSL_CTX *leaf) {
        uv_os_fd_t a, b;
        /* Nothing of libuv's may still be on its way to either side. */
        if (uv_stream_get_write_queue_size((uv_stream_t *)&c->client) ||
            uv_stream_get_write_queue_size((uv_stream_t *)&c->upstream) ||
            uv_fileno((uv_handle_t *)&c->client, &a) < 0 || uv_fileno((uv_handle_t *)&c->upstream, &b) < 0 ||
            uv_async_init(c->px->loop, &c->tls_done, on_tls_done) < 0) {
                conn_close(c);
                return;
        }
        c->tls_done.data = c;
        c->tls_done_init = true;
        c->handles++;
        uv_read_stop((uv_stream_t *)&c->client);
        uv_read_stop((uv_stream_t *)&c->upstream);
        c->client_reading = c->upstream_reading = false;
        uv_timer_stop(&c->timer);
        c->state = CS_TLS;
        int cfd = fcntl(a, F_DUPFD_CLOEXEC, 3), ufd = fcntl(b, F_DUPFD_CLOEXEC, 3);
        if (cfd < 0 || ufd < 0) {
                safe_close(cfd);
                safe_close(ufd);
                conn_close(c);
                return;
        }
        Proxy *px = c->px;
        TlsJobArgs args = { .client_fd = cfd, .upstream_fd = ufd, .leaf = leaf, .host = c->head.host,
                            .port = c->head.port, .hello = c->buf, .hello_len = c->len, .send = px->send,
                            .ws = px->id, .secrets = px->secrets.inject.items, .n_secrets = px->secrets.inject.n,
                            .http = http_rules_find(px->http.items, px->http.n, c->head.host),
                            .done = &c->tls_done };
        if (tls_intercept_start(&args, &c->tls) < 0)
                conn_close(c);
}

static void check_hello(ProxyConn *c) {
        _cleanup_free_ char *sni = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = tls_client_hello_sni((const uint8_t *)c->buf, c->len, &sni, &err);
        if (r == 0) {
                if (c->len >= VS_HTTP_HEAD_MAX)
                        deny(c, c->head.host, c->head.port, "the TLS ClientHello is larger than the proxy reads", false);
                return; /* more to come */
        }
        if (r == -EPROTO) {
                /* Not TLS: another protocol to an allowed host and port.
                 * Not to a [[sandbox.http]] host: plain HTTP in a tunnel
                 * would pass its rules unread. */
                if (http_rules_find(c->px->http.items, c->px->http.n, c->head.host)) {
                        char why[400];
                        snprintf(why, sizeof why,
                                 "[[sandbox.http]] has rules for %s, and the tunnel to it does not carry TLS the proxy intercepts "
                                 "(send plain HTTP as a request to the proxy, not through CONNECT)", c->head.host);
                        deny(c, c->head.host, c->head.port, why, false);
                        return;
                }
                /* Nor plain HTTP to another host while the workspace has
                 * rules: its Host header could name a rules host that the
                 * same front end serves, and the proxy reads no head in a
                 * tunnel (nor the ones after the first). A request sent to
                 * the proxy as plain HTTP is checked instead. */
                int k = c->px->http.n ? http_request_like(c->buf, c->len, c->len >= VS_HTTP_HEAD_MAX) : 0;
                if (k == -EAGAIN)
                        return; /* the first line has not ended */
                if (k > 0) {
                        char why[400];
                        snprintf(why, sizeof why,
                                 "plain HTTP inside a CONNECT tunnel to %s while the workspace has [[sandbox.http]] rules: the "
                                 "proxy does not read heads in a tunnel, and their Host could name a rules host the same server "
                                 "fronts (send plain HTTP as a request to the proxy, not through CONNECT)", c->head.host);
                        deny(c, c->head.host, c->head.port, why, false);
                        return;
                }
                start_splice(c, c->buf, c->len);
                return;
        }
        if (r < 0) {
                char why[300];
                snprintf(why, sizeof why, "malformed TLS ClientHello: %s", err ? vs_error_message(err) : strerror(-r));
                deny(c, c->head.host, c->head.port, why, false);
                return;
        }
        if (sni && !streq(sni, c->head.host)) {
                char why[400];
                snprintf(why, sizeof why,
                         "the TLS server name (SNI) \"%s\" differs from the CONNECT host: one allowed address may not front for another name",
                         sni);
                deny(c, c->head.host, c->head.port, why, false);
                return;
        }
        SSL_CTX *leaf = secret_set_leaf(&c->px->secrets, c->head.host, c->head.port);
        if (leaf) {
                intercept(c, leaf);
                return;
        }
        start_splice(c, c->buf, c->len);
}

/* ---- upstream connection ----------------------------------------------------- */

static void on_connected(uv_connect_t *req, int status) {
        ProxyConn *c = req->data;
        if (c->state == CS_CLOSING)
                return;
        if (status < 0) {
                respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot connect to %s port %u: %s", c->head.host,
                        (unsigned)c->head.port, uv_strerror(status));
                return;
        }
        upstream_ready(c);
}

/* Connects to the first address the entry may reach (getaddrinfo's order,
 * which prefers what this host can route). */
static void connect_first(ProxyConn *c, const VsNetAddr *own, size_t n_own) {
        for (struct addrinfo *a = c->ai; a; a = a->ai_next) {
                const char *why = NULL;
                if (!net_address_allowed(&c->rule, a->ai_addr, own, n_own, &why))
                        continue;
                int r = uv_tcp_init(c->px->loop, &c->upstream);
                if (r < 0)
                        break;
                c->upstream.data = c;
                c->upstream_init = true;
                c->handles++;
                c->creq.data = c;
                c->state = CS_CONNECTING;
                on_timer_state(c);
                r = uv_tcp_connect(&c->creq, &c->upstream, a->ai_addr, on_connected);
                if (r < 0)
                        respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot connect to %s port %u: %s",
                                c->head.host, (unsigned)c->head.port, uv_strerror(r));
                return;
        }
        respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot connect to %s port %u", c->head.host,
                (unsigned)c->head.port);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
        ProxyConn *c = req->data;
        c->gai_pending = false;
        if (c->state == CS_CLOSING) {
                if (res)
                        uv_freeaddrinfo(res);
                if (c->handles == 0)
                        conn_free(c);
                return;
        }
        if (status < 0) {
                respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot resolve %s: %s", c->head.host,
                        uv_strerror(status));
                return;
        }
        c->ai = res;
        /* Read now, after the name resolved: an interface that came up
         * meanwhile counts. */
        const VsNetAddr *own = NULL;
        size_t n_own = 0;
        int r = host_addrs_get(&own, &n_own);
        if (r < 0) {
                respond(c, 503, "Service Unavailable",
                        "vectora-sandbox: cannot read this host's own addresses to keep %s from reaching them: %s",
                        c->head.host, strerror(-r));
                return;
        }
        /* Some address must be one the entry may reach; say why not. */
        const char *why = NULL, *first_why = NULL;
        char first_addr[INET6_ADDRSTRLEN] = "";
        bool any = false;
        for (struct addrinfo *a = res; a; a = a->ai_next) {
                if (a->ai_family == AF_INET)
                        ((struct sockaddr_in *)a->ai_addr)->sin_port = htons(c->head.port);
                else if (a->ai_family == AF_INET6)
                        ((struct sockaddr_in6 *)a->ai_addr)->sin6_port = htons(c->head.port);
                if (net_address_allowed(&c->rule, a->ai_addr, own, n_own, &why))
                        any = true;
                else if (!first_why) {
                        first_why = why;
                        const void *ad = a->ai_family == AF_INET ? (void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
                                                                : (void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
                        inet_ntop(a->ai_family, ad, first_addr, sizeof first_addr);
                }
        }
        if (!any) {
                char reason[400];
                snprintf(reason, sizeof reason,
                         "%s resolves to %s (%s), which the entry \"%s\" may not reach (%s)", c->head.host,
                         first_addr, first_why ? first_why : "no address",
                         c->rule.written ? c->rule.written : c->rule.host,
                         c->rule.kind == VS_NET_WILDCARD ? "a wildcard reaches public addresses only, never this host's own; list the literal address to reach it"
                                                         : "list the literal address to reach it");
                deny(c, c->head.host, c->head.port, reason, true);
                return;
        }
        connect_first(c, own, n_own);
}

static void upstream_ready(ProxyConn *c) {
        if (c->head.connect) {
                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                if (send_copy(c, (uv_stream_t *)&c->client, ok, sizeof ok - 1, false) < 0) {
                        conn_close(c);
                        return;
                }
                /* The bytes after the head are the start of the ClientHello. */
                size_t extra = c->len - c->head.head_len;
                memmove(c->buf, c->buf + c->head.head_len, extra);
                c->len = extra;
                c->state = CS_HELLO;
                on_timer_state(c);
                /* The server may speak first (some protocols do): its bytes
                 * flow at once; the client's wait for the hello check. */
                resume_reading(c);
                c->client_reading = uv_read_start((uv_stream_t *)&c->client, alloc_cb, on_client_read) == 0;
                if (c->len)
                        check_hello(c);
                return;
        }
        /* Plain HTTP: the request in origin form, then whatever followed;
         * the secrets' placeholders become their values here. */
        StrBuf out = {};
        const HeadRewrite x = { .send = c->px->send, .ws = c->px->id, .secrets = c->px->secrets.inject.items,
                                .n = c->px->secrets.inject.n };
        if (head_rewrite(&x, &c->head, &out) < 0 ||
            strbuf_append(&out, c->buf + c->head.head_len, c->len - c->head.head_len) < 0) {
                strbuf_done(&out);
                conn_close(c);
                return;
        }
        start_splice(c, out.data, out.len);
        explicit_bzero(out.data, out.len);
        strbuf_done(&out);
}

/* ---- the request head ----------------------------------------------------------- */

/* [[sandbox.http]]: checked here for plain HTTP and inside the TLS of an
 * intercepted host (tls-intercept.c); a tunnel the proxy does not open
 * cannot be checked, so it is refused. true with why[size] if refused. */
static bool http_refused(ProxyConn *c, char *why, size_t size) {
        Proxy *px = c->px;
        const HttpRules *hr = http_rules_find(px->http.items, px->http.n, c->head.host);
        if (c->head.connect) {
                if (!hr || secret_set_leaf(&px->secrets, c->head.host, c->head.port))
                        return false;
                snprintf(why, size,
                         "[[sandbox.http]] has rules for %s, which the proxy cannot check inside a TLS tunnel it does not "
                         "terminate: it intercepts only the hosts of the workspace's secrets (give the host a secret, or use "
                         "plain HTTP)", c->head.host);
                return true;
        }
        return http_rules_fronted(px->http.items, px->http.n, c->head.host, c->head.forward_headers, why, size) ||
               (hr && (http_rules_headers_refused(c->head.forward_headers, why, size) ||
                       !http_rules_check(hr, c->head.method, c->head.path, why, size)));
}

static void head_ready(ProxyConn *c) {
        if (c->len < c->want)
                return; /* the rest of a body http_rules_body() reads */
        http_head_done(&c->head); /* parsed already, when a body was waited for */
        int64_t end = http_head_end(c->buf, c->len);
        if (end == 0)
                return;
        if (end < 0) {
                respond(c, 431, "Request Header Fields Too Large", "vectora-sandbox: the request head exceeds %d bytes",
                        VS_HTTP_HEAD_MAX);
                return;
        }
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = http_head_parse(c->buf, (size_t)end, &c->head, &err);
        if (r < 0) {
                respond(c, 400, "Bad Request", "vectora-sandbox: %s",
                        err ? vs_error_message(err) : strerror(-r));
                return;
        }
        uv_read_stop((uv_stream_t *)&c->client);
        c->client_reading = false;
        Proxy *px = c->px;
        if (!px->allow) {
                deny(c, c->head.host, c->head.port, "the workspace's policy has no network allowlist now", true);
                return;
        }
        const VsNetRule *rule = net_match(px->rules, px->n_rules, c->head.host, c->head.port);
        if (!rule) {
                deny(c, c->head.host, c->head.port, "not in the workspace's network allowlist", true);
                return;
        }
        char why[240];
        if (head_refused(px->secrets.inject.items, px->secrets.inject.n, c->buf, c->head.head_len, c->head.host,
                         c->head.port, 80, why, sizeof why)) {
                record_denial(c, c->head.host, c->head.port, why);
                respond(c, 403, "Forbidden", "vectora-sandbox: %s port %u is refused: %s (vectora-sandbox secret list).",
                        c->head.host, (unsigned)c->head.port, why);
                return;
        }
        char hwhy[600];
        size_t need = 0;
        int b = 0;
        if (http_refused(c, hwhy, sizeof hwhy) ||
            (!c->head.connect && http_rules_find(px->http.items, px->http.n, c->head.host) &&
             (b = http_rules_body(c->head.forward_headers, c->buf + c->head.head_len, c->len - c->head.head_len,
                                  VS_HTTP_HEAD_MAX - c->head.head_len, &need, hwhy, sizeof hwhy)) < 0)) {
                record_denial(c, c->head.host, c->head.port, hwhy);
                respond(c, 403, "Forbidden", "vectora-sandbox: %s.", hwhy);
                return;
        }
        if (b > 0) {
                /* A form body to look into: read on (alloc_cb keeps it
                 * within c->buf), and decide again once it is whole. */
                c->want = c->head.head_len + need;
                c->client_reading = uv_read_start((uv_stream_t *)&c->client, alloc_cb, on_client_read) == 0;
                return;
        }
        c->rule = (VsNetRule) { .kind = rule->kind, .port = rule->port, .line = rule->line, .col = rule->col,
                                .host = strdup(rule->host), .written = strdup(rule->written ? rule->written : rule->host) };
        if (!c->rule.host || !c->rule.written) {
                respond(c, 503, "Service Unavailable", "vectora-sandbox: out of memory");
                return;
        }
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                  .ai_flags = rule->kind == VS_NET_IP ? AI_NUMERICHOST : AI_ADDRCONFIG };
        c->gai.data = c;
        c->state = CS_RESOLVING;
        on_timer_state(c);
        r = uv_getaddrinfo(px->loop, &c->gai, on_resolved, c->head.host, NULL, &hints);
        if (r < 0) {
                respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot resolve %s: %s", c->head.host, uv_strerror(r));
                return;
        }
        c->gai_pending = true;
}

/* ---- timers, accept, start/stop --------------------------------------------------- */

static void on_timer(uv_timer_t *t) {
        ProxyConn *c = t->data;
        if (c->state == CS_CONNECTING || c->state == CS_RESOLVING)
                respond(c, 504, "Gateway Timeout", "vectora-sandbox: %s port %u did not answer in time",
                        c->head.host ? c->head.host : "?", (unsigned)c->head.port);
        else
                conn_close(c); /* no head, no hello, an answer not taken, or an idle tunnel */
}

static void on_timer_state(ProxyConn *c) {
        uint64_t ms = c->state == CS_SPLICE ? PROXY_IDLE_TIMEOUT_MS
                      : c->state == CS_CONNECTING || c->state == CS_RESOLVING ? PROXY_CONNECT_TIMEOUT_MS
                                                                               : PROXY_HEAD_TIMEOUT_MS;
        uv_timer_start(&c->timer, on_timer, ms, c->state == CS_SPLICE ? PROXY_IDLE_TIMEOUT_MS : 0);
}

/* Out of descriptors: libuv's listener retries accept(2) without end
 * (accept fails with EMFILE before it looks for a connection), so the
 * loop never came back to close what the jails had closed: every
 * workspace's traffic stopped, for good. The spare is given up, what
 * waits on this listener is accepted and dropped, and the free slot makes
 * libuv's next accept say EAGAIN: the loop goes on, and takes the spare
 * again at the end of its turn. Without a spare (a connection took the
 * slot meanwhile), this workspace's newest connection is dropped instead. */
static void shed(Proxy *px) {
        uv_os_fd_t lfd;
        if (uv_fileno((uv_handle_t *)&px->listener, &lfd) < 0)
                return;
        if (spare_fd >= 0)
                spare_fd = safe_close(spare_fd);
        else if (px->conns && px->conns->state != CS_CLOSING)
                conn_close(px->conns); /* its socket is closed at once */
        for (int fd; (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;)
                close(fd);
        check_later(px);
}

static void on_connection(uv_stream_t *server, int status) {
        Proxy *px = server->data;
        if (status == UV_EMFILE || status == UV_ENFILE) {
                shed(px);
                return;
        }
        if (status < 0 || px->removed)
                return;
        /* Not accepted now, libuv stops watching the listener until the
         * workspace's connections fall below the bound (conn_free): the
         * jail's connects wait in the backlog, and an endless stream of
         * them no longer holds the loop in accept(2) while the
         * descriptors of those it closed pile up. */
        if (px->open >= PROXY_ACCEPT_MAX) {
                px->accept_waits = true;
                return;
        }
        ProxyConn *c = calloc(1, sizeof *c);
        if (!c || !(c->buf = malloc(VS_HTTP_HEAD_MAX))) {
                free(c);
                /* Accept and drop, or the listener would spin; without a
                 * libuv handle, which would need memory (and one on the
                 * stack would be closed after this returns). */
                uv_os_fd_t lfd;
                if (uv_fileno((uv_handle_t *)server, &lfd) == 0) {
                        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                        if (fd >= 0)
                                close(fd);
                }
                return;
        }
        c->px = px;
        c->next = px->conns;
        if (c->next)
                c->next->prev = c;
        px->conns = c;
        px->open++;
        px->total++;
        send_conns(px);
        uv_pipe_init(px->loop, &c->client, 0);
        uv_timer_init(px->loop, &c->timer);
        c->client.data = c->timer.data = c;
        c->handles = 2;
        c->state = CS_HEAD;
        if (uv_accept(server, (uv_stream_t *)&c->client) < 0) {
                conn_close(c);
                return;
        }
        /* Only the jail's own uid: the socket file is reachable on the host. */
        struct ucred cred;
        socklen_t clen = sizeof cred;
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->client, &fd) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != px->peer_uid) {
                conn_close(c);
                return;
        }
        if (px->open > PROXY_MAX_CONNS) {
                respond(c, 503, "Service Unavailable",
                        "vectora-sandbox: the workspace has %d connections open through the proxy; close some",
                        PROXY_MAX_CONNS);
                return;
        }
        on_timer_state(c);
        c->client_reading = uv_read_start((uv_stream_t *)&c->client, alloc_cb, on_client_read) == 0;
}

/* ---- the daemon's requests ------------------------------------------------------ */

static void staged_free(struct Staged *st) {
        if (!st)
                return;
        for (size_t i = 0; i < st->n_rules; i++)
                net_rule_done(&st->rules[i]);
        free(st->rules);
        free(st->config);
        secret_set_clear(&st->secrets);
        http_rule_set_clear(&st->http);
        free(st);
}

static void proxy_free(Proxy *px) {
        for (size_t i = 0; i < px->n_rules; i++)
                net_rule_done(&px->rules[i]);
        free(px->rules);
        free(px->config);
        secret_set_clear(&px->secrets);
        http_rule_set_clear(&px->http);
        staged_free(px->staged);
        free(px);
}

/* An add or rules: a new set begins (one begun and not committed is
 * dropped); the rules in force stay until the commit. */
static int stage_rules(Proxy *px, ProxyCtlMsg *m) {
        struct Staged *st = calloc(1, sizeof *st);
        if (!st)
                return -ENOMEM;
        staged_free(px->staged);
        px->staged = st;
        st->allow = m->allow;
        st->config = TAKE_PTR(m->config);
        st->rules = TAKE_PTR(m->rules);
        st->n_rules = m->n_rules;
        m->n_rules = 0;
        return 0;
}

/* The staged set replaces the one in force, in one step of the loop. */
static int commit_rules(Proxy *px, VsError **err) {
        struct Staged *st = TAKE_PTR(px->staged);
        if (!st)
                return vs_error_set(err, -EINVAL, "commit %llu: no add or rules before it", (unsigned long long)px->id);
        for (size_t i = 0; i < px->n_rules; i++)
                net_rule_done(&px->rules[i]);
        free(px->rules);
        free(px->config);
        secret_set_clear(&px->secrets);
        http_rule_set_clear(&px->http);
        px->allow = st->allow;
        px->config = TAKE_PTR(st->config);
        px->rules = TAKE_PTR(st->rules);
        px->n_rules = st->n_rules;
        px->secrets = st->secrets;
        px->http = st->http;
        free(st);
        if (!px->serving && px->listening) {
                int r = uv_listen((uv_stream_t *)&px->listener, 64, on_connection);
                if (r < 0)
                        return vs_error_set(err, r, "add %llu: listening: %s", (unsigned long long)px->id, uv_strerror(r));
                px->serving = true;
        }
        return 0;
}

static Proxy *find(uint64_t id) {
        for (Proxy *px = proxies; px; px = px->next)
                if (px->id == id)
                        return px;
        return NULL;
}

static void on_listener_closed(uv_handle_t *h) {
        Proxy *px = h->data;
        px->listening = false;
        if (!px->conns)
                proxy_free(px);
}

static void remove_proxy(Proxy *px) {
        for (Proxy **p = &proxies; *p; p = &(*p)->next)
                if (*p == px) {
                        *p = px->next;
                        break;
                }
        px->removed = true;
        for (ProxyConn *c = px->conns; c; c = c->next)
                conn_close(c);
        if (px->listening)
                uv_close((uv_handle_t *)&px->listener, on_listener_closed);
        else if (!px->conns)
                proxy_free(px);
}

int engine_handle(uv_loop_t *loop, ProxyCtlMsg *m, int fd, ProxySend send, VsError **err) {
        Proxy *px = find(m->ws);
        switch (m->op) {
        case PROXY_CTL_ADD: {
                if (px || fd < 0)
                        return vs_error_set(err, -EINVAL, "add %llu: %s", (unsigned long long)m->ws,
                                            px ? "already there" : "no listener attached");
                px = calloc(1, sizeof *px);
                if (!px)
                        return -ENOMEM;
                if (spare_fd < 0)
                        spare_fd = eventfd(0, EFD_CLOEXEC);
                px->id = m->ws;
                px->loop = loop;
                px->peer_uid = m->peer;
                px->send = send;
                int r = stage_rules(px, m);
                if (r < 0) {
                        proxy_free(px);
                        return r;
                }
                r = uv_pipe_init(loop, &px->listener, 0);
                if (r < 0) {
                        proxy_free(px);
                        return vs_error_set(err, r, "add: %s", uv_strerror(r));
                }
                px->listener.data = px;
                px->listening = true;
                px->next = proxies;
                proxies = px;
                /* Listened on at the commit, with the rules in force. */
                r = uv_pipe_open(&px->listener, fd);
                if (r < 0) {
                        remove_proxy(px);
                        return vs_error_set(err, r, "add %llu: listening: %s", (unsigned long long)m->ws,
                                            uv_strerror(r));
                }
                return 1; /* the fd is the listener's now */
        }
        case PROXY_CTL_RULES:
                return px ? stage_rules(px, m) : 0;
        case PROXY_CTL_COMMIT:
                return px ? commit_rules(px, err) : 0;
        case PROXY_CTL_PEER:
                if (px)
                        px->peer_uid = m->peer;
                return 0;
        case PROXY_CTL_REMOVE:
                if (px)
                        remove_proxy(px);
                return 0;
        /* Into the set being staged: never into the one in force. */
        case PROXY_CTL_SECRET:
        case PROXY_CTL_HTTP:
                if (!px)
                        return 0;
                if (!px->staged)
                        return vs_error_set(err, -EINVAL, "%s for %llu outside an add or rules", m->op == PROXY_CTL_HTTP ? "http" : "secret",
                                            (unsigned long long)m->ws);
                return m->op == PROXY_CTL_SECRET ? secret_set_add(&px->staged->secrets, m, err)
                                                 : http_rule_set_add(&px->staged->http, m->host, m->config, m->http_allow,
                                                                     m->n_http_allow, err);
        default:
                return vs_error_set(err, -EINVAL, "unexpected op %d from the daemon", (int)m->op);
        }
}
