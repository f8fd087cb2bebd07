/* SPDX-License-Identifier: MIT */
/* The proxy's request path (engine-internal.h): a request head read from
 * the jail, checked against the workspace's network rules, secrets and
 * [[sandbox.http]] rules (a form body read whole for its _method when the
 * host has rules), the name resolved off the loop and only an address
 * the entry may reach connected; then a CONNECT is answered and its
 * ClientHello awaited (engine.c), a plain request sent on in origin form. */
#include <arpa/inet.h>
#include <string.h>

#include "engine-internal.h"
#include "head-rewrite.h"
#include "host-addrs.h"
#include "inject.h"
#include "strbuf.h"

static void upstream_ready(ProxyConn *c);

/* ---- upstream connection ----------------------------------------------------- */

static void on_connected(uv_connect_t *req, int status) {
        ProxyConn *c = req->data;
        if (c->state == CS_CLOSING)
                return;
        if (status < 0) {
                conn_respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot connect to %s port %u: %s", c->head.host,
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
                conn_timer_state(c);
                r = uv_tcp_connect(&c->creq, &c->upstream, a->ai_addr, on_connected);
                if (r < 0)
                        conn_respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot connect to %s port %u: %s",
                                c->head.host, (unsigned)c->head.port, uv_strerror(r));
                return;
        }
        conn_respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot connect to %s port %u", c->head.host,
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
                conn_respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot resolve %s: %s", c->head.host,
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
                conn_respond(c, 503, "Service Unavailable",
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
                conn_deny(c, c->head.host, c->head.port, reason, true);
                return;
        }
        connect_first(c, own, n_own);
}

static void upstream_ready(ProxyConn *c) {
        if (c->head.connect) {
                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                if (conn_send_copy(c, (uv_stream_t *)&c->client, ok, sizeof ok - 1, false) < 0) {
                        conn_close(c);
                        return;
                }
                /* The bytes after the head are the start of the ClientHello. */
                size_t extra = c->len - c->head.head_len;
                memmove(c->buf, c->buf + c->head.head_len, extra);
                c->len = extra;
                c->state = CS_HELLO;
                conn_timer_state(c);
                /* The server may speak first (some protocols do): its bytes
                 * flow at once; the client's wait for the hello check. */
                conn_resume_reading(c);
                c->client_reading = uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_on_client_read) == 0;
                if (c->len)
                        conn_check_hello(c);
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
        conn_start_splice(c, out.data, out.len);
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

void engine_request_init(void) {
        engine_set_head_step(conn_head_ready);
}

void conn_head_ready(ProxyConn *c) {
        if (c->len < c->want)
                return; /* the rest of a body http_rules_body() reads */
        http_head_done(&c->head); /* parsed already, when a body was waited for */
        int64_t end = http_head_end(c->buf, c->len);
        if (end == 0)
                return;
        if (end < 0) {
                conn_respond(c, 431, "Request Header Fields Too Large", "vectora-sandbox: the request head exceeds %d bytes",
                        VS_HTTP_HEAD_MAX);
                return;
        }
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = http_head_parse(c->buf, (size_t)end, &c->head, &err);
        if (r < 0) {
                conn_respond(c, 400, "Bad Request", "vectora-sandbox: %s",
                        err ? vs_error_message(err) : strerror(-r));
                return;
        }
        uv_read_stop((uv_stream_t *)&c->client);
        c->client_reading = false;
        Proxy *px = c->px;
        if (!px->allow) {
                conn_deny(c, c->head.host, c->head.port, "the workspace's policy has no network allowlist now", true);
                return;
        }
        const VsNetRule *rule = net_match(px->rules, px->n_rules, c->head.host, c->head.port);
        if (!rule) {
                conn_deny(c, c->head.host, c->head.port, "not in the workspace's network allowlist", true);
                return;
        }
        char why[240];
        if (head_refused(px->secrets.inject.items, px->secrets.inject.n, c->buf, c->head.head_len, c->head.host,
                         c->head.port, 80, why, sizeof why)) {
                conn_record_denial(c, c->head.host, c->head.port, why);
                conn_respond(c, 403, "Forbidden", "vectora-sandbox: %s port %u is refused: %s (vectora-sandbox secret list).",
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
                conn_record_denial(c, c->head.host, c->head.port, hwhy);
                conn_respond(c, 403, "Forbidden", "vectora-sandbox: %s.", hwhy);
                return;
        }
        if (b > 0) {
                /* A form body to look into: read on (conn_alloc_cb keeps it
                 * within c->buf), and decide again once it is whole. */
                c->want = c->head.head_len + need;
                c->client_reading = uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_on_client_read) == 0;
                return;
        }
        c->rule = (VsNetRule) { .kind = rule->kind, .port = rule->port, .line = rule->line, .col = rule->col,
                                .host = strdup(rule->host), .written = strdup(rule->written ? rule->written : rule->host) };
        if (!c->rule.host || !c->rule.written) {
                conn_respond(c, 503, "Service Unavailable", "vectora-sandbox: out of memory");
                return;
        }
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                  .ai_flags = rule->kind == VS_NET_IP ? AI_NUMERICHOST : AI_ADDRCONFIG };
        c->gai.data = c;
        c->state = CS_RESOLVING;
        conn_timer_state(c);
        r = uv_getaddrinfo(px->loop, &c->gai, on_resolved, c->head.host, NULL, &hints);
        if (r < 0) {
                conn_respond(c, 502, "Bad Gateway", "vectora-sandbox: cannot resolve %s: %s", c->head.host, uv_strerror(r));
                return;
        }
        c->gai_pending = true;
}
