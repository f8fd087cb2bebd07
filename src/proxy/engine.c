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
 * queued per direction. A request's head, its checks and the upstream
 * connection are engine-request.c's; what both files share is
 * engine-internal.h. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine-internal.h"
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

static void on_connection(uv_stream_t *server, int status);
static void proxy_free(Proxy *px);

static int send_msg(Proxy *px, const ProxyCtlMsg *m) {
        _cleanup_free_ char *s = proxy_ctl_encode(m);
        return s ? px->send(s) : -ENOMEM;
}

static Proxy *proxies;

/* No request path installed: a head is answered, not read. */
static void no_head_step(ProxyConn *c) {
        conn_respond(c, 500, "Internal Server Error", "the proxy's request path is not installed\n");
}
static ConnHeadStep head_step = no_head_step;

void engine_set_head_step(ConnHeadStep step) {
        head_step = step ? step : no_head_step;
}
static uv_check_t conns_check;
static uv_timer_t conns_timer;
static bool conns_check_init;

/* What one workspace may send the daemon, whatever its jail does: its
 * counts at most every CONNS_INTERVAL_US, and DENIAL_PER_S denials a
 * second itemized (DENIAL_BURST at once); the rest are counted as lost
 * and go with the counts (audited as not itemized). The daemon reads the
 * one control socket of every workspace in order: a jail making refused
 * requests in a loop filled it, and another workspace's denial, behind
 * thousands, reached the daemon after its call was answered (missing from
 * that call's network_denied) or was lost. */
#define CONNS_INTERVAL_US (100u * 1000u)
#define DENIAL_PER_S 32u
#define DENIAL_BURST 32u
/* A descriptor kept spare for shed(): an eventfd, since the confined
 * proxy may open no path (libuv's own spare is /dev/null or /, which it
 * cannot take again once used). */
static int spare_fd = -1;

static void flush_conns(uv_check_t *h);

/* Straight to the flush: a check started here would wait for the next
 * I/O (a check handle does not keep the loop's poll from blocking), and
 * after a jail's last connection the last counts, with its lost denials,
 * would never go. */
static void on_conns_timer(uv_timer_t *t) {
        (void)t;
        flush_conns(&conns_check);
}

static void flush_conns(uv_check_t *h) {
        uv_check_stop(h);
        if (spare_fd < 0)
                spare_fd = eventfd(0, EFD_CLOEXEC);
        uint64_t now = now_us(), next = UINT64_MAX;
        for (Proxy *px = proxies; px; px = px->next) {
                if (!px->conns_changed)
                        continue;
                if (px->conns_sent_us && now < px->conns_sent_us + CONNS_INTERVAL_US) {
                        next = MIN(next, px->conns_sent_us + CONNS_INTERVAL_US);
                        continue;
                }
                /* With the denials lost so far: the daemon counts and
                 * audits them (as not itemized) once this arrives. */
                if (send_msg(px, &(ProxyCtlMsg) { .op = PROXY_CTL_CONNS, .ws = px->id, .open = px->open,
                                                  .total = px->total, .lost = px->lost }) >= 0) {
                        px->lost = 0;
                        px->conns_changed = false;
                        px->conns_sent_us = now;
                } else
                        next = MIN(next, now + CONNS_INTERVAL_US); /* the daemon's end full: again */
        }
        if (next != UINT64_MAX)
                (void)uv_timer_start(&conns_timer, on_conns_timer, (next - now + 999) / 1000, 0);
}

/* The counts go to the daemon once a loop turn, not once a connection: a
 * jail that opens and closes connections in a loop would otherwise send
 * two messages each, fill the control socket, and every workspace's
 * denials sent meanwhile would be lost (counted, not itemized, missing
 * from their calls' network_denied). */
static void check_later(Proxy *px) {
        if (!conns_check_init) {
                if (uv_check_init(px->loop, &conns_check) < 0 || uv_timer_init(px->loop, &conns_timer) < 0)
                        return;
                uv_unref((uv_handle_t *)&conns_check);
                uv_unref((uv_handle_t *)&conns_timer);
                conns_check_init = true;
        }
        (void)uv_check_start(&conns_check, flush_conns);
}

static void send_conns(Proxy *px) {
        px->conns_changed = true;
        check_later(px);
}

/* ---- denials -------------------------------------------------------------- */

/* A token for one itemized denial of px, or false (DENIAL_PER_S). */
static bool denial_token(Proxy *px, uint64_t now) {
        if (!px->denial_fill_us) {
                px->denial_tokens = DENIAL_BURST;
                px->denial_fill_us = now;
        }
        uint64_t add = (now - px->denial_fill_us) * DENIAL_PER_S / 1000000u;
        if (add) {
                px->denial_tokens = (unsigned)MIN((uint64_t)DENIAL_BURST, px->denial_tokens + add);
                px->denial_fill_us = px->denial_tokens == DENIAL_BURST ? now
                                                                       : px->denial_fill_us + add * 1000000u / DENIAL_PER_S;
        }
        if (!px->denial_tokens)
                return false;
        px->denial_tokens--;
        return true;
}

void conn_record_denial(ProxyConn *c, const char *host, uint16_t port, const char *reason) {
        uint64_t now = now_us();
        if (!denial_token(c->px, now)) {
                c->px->lost++;
                send_conns(c->px);
                return;
        }
        char h[256], why[400];
        snprintf(h, sizeof h, "%s", host ? host : "");
        snprintf(why, sizeof why, "%s", reason);
        if (send_msg(c->px, &(ProxyCtlMsg) { .op = PROXY_CTL_DENIAL, .ws = c->px->id, .time_us = now, .host = h,
                                             .port = port, .reason = why }) < 0) {
                c->px->lost++;
                send_conns(c->px);
        }
}

/* ---- connection lifetime -------------------------------------------------- */

void conn_free(ProxyConn *c) {
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

void conn_close(ProxyConn *c) {
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
        conn_resume_reading(c);
}

/* Queues a copy of data on s. */
int conn_send_copy(ProxyConn *c, uv_stream_t *s, const void *data, size_t len, bool close_after) {
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
void conn_respond(ProxyConn *c, int status, const char *title, const char *fmt, ...) {
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
        conn_timer_state(c);
        if (conn_send_copy(c, (uv_stream_t *)&c->client, msg, n, true) < 0)
                conn_close(c);
}

/* A refusal: recorded, audited, answered with 403 while the client still
 * speaks HTTP; past a CONNECT's 200, the tunnel is closed. */
void conn_deny(ProxyConn *c, const char *host, uint16_t port, const char *reason, bool http) {
        conn_record_denial(c, host, port, reason);
        if (!http) {
                conn_close(c);
                return;
        }
        const char *config = c->px->config ? c->px->config : "vectora.toml";
        conn_respond(c, 403, "Forbidden",
                "vectora-sandbox: %s port %u is refused by the workspace's network policy: %s. "
                "To allow it, add \"%s\" (or \"%s:%u\") to network = [...] in %s.",
                host, (unsigned)port, reason, host, host, (unsigned)port, config);
}

/* ---- splicing --------------------------------------------------------------- */

void conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
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

static void on_upstream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

void conn_resume_reading(ProxyConn *c) {
        if ((c->state != CS_SPLICE && c->state != CS_HELLO) || c->link)
                return;
        if (c->state == CS_SPLICE && !c->client_reading && !c->client_eof &&
            uv_stream_get_write_queue_size((uv_stream_t *)&c->upstream) < PROXY_QUEUE_HIGH / 4)
                c->client_reading = uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_on_client_read) == 0;
        if (!c->upstream_reading && !c->upstream_eof &&
            uv_stream_get_write_queue_size((uv_stream_t *)&c->client) < PROXY_QUEUE_HIGH / 4)
                c->upstream_reading = uv_read_start((uv_stream_t *)&c->upstream, conn_alloc_cb, on_upstream_read) == 0;
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


void conn_on_client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
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
                head_step(c);
        else if (c->state == CS_HELLO)
                conn_check_hello(c);
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

void conn_start_splice(ProxyConn *c, const char *pending, size_t len) {
        c->state = CS_SPLICE;
        conn_timer_state(c);
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
        if (len > sent && conn_send_copy(c, (uv_stream_t *)&c->upstream, pending + sent, len - sent, false) < 0) {
                conn_close(c);
                return;
        }
        conn_resume_reading(c);
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

void conn_check_hello(ProxyConn *c) {
        _cleanup_free_ char *sni = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = tls_client_hello_sni((const uint8_t *)c->buf, c->len, &sni, &err);
        if (r == 0) {
                if (c->len >= VS_HTTP_HEAD_MAX)
                        conn_deny(c, c->head.host, c->head.port, "the TLS ClientHello is larger than the proxy reads", false);
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
                        conn_deny(c, c->head.host, c->head.port, why, false);
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
                        conn_deny(c, c->head.host, c->head.port, why, false);
                        return;
                }
                conn_start_splice(c, c->buf, c->len);
                return;
        }
        if (r < 0) {
                char why[300];
                snprintf(why, sizeof why, "malformed TLS ClientHello: %s", err ? vs_error_message(err) : strerror(-r));
                conn_deny(c, c->head.host, c->head.port, why, false);
                return;
        }
        if (sni && !streq(sni, c->head.host)) {
                char why[400];
                snprintf(why, sizeof why,
                         "the TLS server name (SNI) \"%s\" differs from the CONNECT host: one allowed address may not front for another name",
                         sni);
                conn_deny(c, c->head.host, c->head.port, why, false);
                return;
        }
        SSL_CTX *leaf = secret_set_leaf(&c->px->secrets, c->head.host, c->head.port);
        if (leaf) {
                intercept(c, leaf);
                return;
        }
        conn_start_splice(c, c->buf, c->len);
}

/* ---- timers, accept, start/stop --------------------------------------------------- */

static void on_timer(uv_timer_t *t) {
        ProxyConn *c = t->data;
        if (c->state == CS_CONNECTING || c->state == CS_RESOLVING)
                conn_respond(c, 504, "Gateway Timeout", "vectora-sandbox: %s port %u did not answer in time",
                        c->head.host ? c->head.host : "?", (unsigned)c->head.port);
        else
                conn_close(c); /* no head, no hello, an answer not taken, or an idle tunnel */
}

void conn_timer_state(ProxyConn *c) {
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
                conn_respond(c, 503, "Service Unavailable",
                        "vectora-sandbox: the workspace has %d connections open through the proxy; close some",
                        PROXY_MAX_CONNS);
                return;
        }
        conn_timer_state(c);
        c->client_reading = uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_on_client_read) == 0;
}

/* ---- the daemon's requests ------------------------------------------------------ */

static void proxy_free(Proxy *px) {
        proxy_rules_clear(px);
        proxy_staged_free(px);
        free(px);
}

/* The staged set in force; the listener read from the first commit on. */
static int commit_rules(Proxy *px, VsError **err) {
        int r = proxy_rules_commit(px, err);
        if (r < 0)
                return r;
        if (!px->serving && px->listening) {
                r = uv_listen((uv_stream_t *)&px->listener, 64, on_connection);
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
                int r = proxy_rules_stage(px, m);
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
                return px ? proxy_rules_stage(px, m) : 0;
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
