/* SPDX-License-Identifier: MIT */
#include "head-rewrite.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http-rules.h"
#include "inject.h"
#include "time-util.h"

/* One audit record per secret put into a request: its name and where the
 * request went, never the value. Method and path as the jail sent them
 * (placeholders, not values), printable ASCII only so that they encode as
 * JSON, cut to fit. A record the daemon's full socket does not take is
 * lost (not counted, unlike denials). */
static void report_uses(const HeadRewrite *x, const VsHttpHead *h, const char *head, size_t len) {
        char method[PROXY_CTL_METHOD_MAX + 1], path[PROXY_CTL_PATH_MAX + 1];
        snprintf(method, sizeof method, "%s", h->method);
        snprintf(path, sizeof path, "%s", h->path);
        for (char *p = method; *p; p++)
                *p = *p < 0x20 || *p > 0x7e ? '?' : *p;
        for (char *p = path; *p; p++)
                *p = *p < 0x20 || *p > 0x7e ? '?' : *p;
        for (size_t i = 0; i < x->n; i++) {
                if (!inject_uses(&x->secrets[i], head, len, h->host, h->port))
                        continue;
                _cleanup_free_ char *s = proxy_ctl_encode(&(ProxyCtlMsg) {
                        .op = PROXY_CTL_SECRET_USE, .ws = x->ws, .time_us = now_us(), .host = h->host,
                        .port = h->port, .name = x->secrets[i].name, .method = method, .path = path });
                if (s)
                        (void)x->send(s);
        }
}

size_t head_answer(char *buf, size_t size, int status, const char *title, const char *body) {
        int n = snprintf(buf, size,
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
                         "Connection: close\r\nX-Vectora-Sandbox: network-policy\r\n\r\n%s\n",
                         status, title, strlen(body) + 1, body);
        return n < 0 ? 0 : MIN((size_t)n, size - 1);
}

bool head_host_ok(const char *head, size_t len, const char *host, uint16_t port, uint16_t default_port) {
        char bare[260], with_port[sizeof bare + 8];
        bool v6 = strchr(host, ':') != NULL;
        snprintf(bare, sizeof bare, v6 ? "[%s]" : "%s", host);
        snprintf(with_port, sizeof with_port, "%s:%u", bare, (unsigned)port);
        unsigned seen = 0;
        /* Past the request line: a method has no ':', so "host:" starts
         * a header line only. */
        const char *p = head, *v, *e;
        while (http_next_host_header(&p, head + len, &v, &e)) {
                size_t k = (size_t)(e - v);
                bool ok = (k == strlen(with_port) && strncasecmp(v, with_port, k) == 0) ||
                          (port == default_port && k == strlen(bare) && strncasecmp(v, bare, k) == 0);
                if (!ok)
                        return false;
                seen++;
        }
        return seen == 1;
}

bool head_refused(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host,
                  uint16_t port, uint16_t default_port, char *why, size_t size) {
        const ProxyCtlMsg *s = inject_refused(secrets, n, head, len, host, port);
        if (s) {
                snprintf(why, size, "the request carries the placeholder of secret %s, which goes only to its hosts",
                         s->name);
                return true;
        }
        if ((s = inject_in_target(secrets, n, head, len))) {
                snprintf(why, size,
                         "the request line (method, path, query) carries the placeholder of secret %s, "
                         "which goes in a header only (a host hands its paths back in redirects and error pages)",
                         s->name);
                return true;
        }
        if ((s = inject_outside_headers(secrets, n, head, len))) {
                snprintf(why, size,
                         "a header other than Authorization carries the placeholder of secret %s, which goes in "
                         "Authorization only and the headers the secret names (secret set --header; a host hands "
                         "other headers back: Origin, request ids)",
                         s->name);
                return true;
        }
        /* A value goes to the host the request names, not to another site
         * the same address serves (a CDN, a shared server route by Host). */
        for (size_t i = 0; i < n; i++)
                if (inject_uses(&secrets[i], head, len, host, port) &&
                    !head_host_ok(head, len, host, port, default_port)) {
                        snprintf(why, size, "the request's Host header is not %s, the host it is sent to (secret %s)",
                                 host, secrets[i].name);
                        return true;
                }
        return false;
}

int head_rewrite(const HeadRewrite *x, const VsHttpHead *h, StrBuf *out) {
        StrBuf head = {};
        int r = strbuf_appendf(&head, "%s %s %s\r\n%s\r\n", h->method, h->path, h->version, h->forward_headers);
        if (r >= 0)
                r = inject_head(x->secrets, x->n, head.data, head.len, h->host, h->port, out, NULL);
        if (r >= 0)
                report_uses(x, h, head.data, head.len);
        strbuf_done(&head);
        return r;
}
