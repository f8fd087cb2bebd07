/* SPDX-License-Identifier: MIT */
#pragma once

/* A request head as the proxy sends it upstream, for plain HTTP (engine.c)
 * and inside TLS to a secret's host (tls-intercept.c) alike: origin form,
 * hop-by-hop headers dropped, Connection: close, and the secrets' values
 * in place of their placeholders (inject.h), each use reported to the
 * daemon for the audit log. */

#include "engine.h"
#include "proxy-parse.h"
#include "strbuf.h"

typedef struct HeadRewrite {
        ProxySend send;             /* to the daemon */
        uint64_t ws;
        const ProxyCtlMsg *secrets; /* PROXY_CTL_SECRET messages */
        size_t n;
} HeadRewrite;

/* An answer of the proxy's own to the jail (status, a plain-text body,
 * Connection: close) in buf[size]; its length. */
size_t head_answer(char *buf, size_t size, int status, const char *title, const char *body);

/* Whether head[0..len) has one Host header and it names host:port (the
 * port may be left out when it is default_port: 80, or 443 inside TLS). */
bool head_host_ok(const char *head, size_t len, const char *host, uint16_t port, uint16_t default_port);

/* Whether the jail's head[0..len) (as the jail sent it) may not go to
 * host:port: a placeholder of a secret that may not go there, one in the
 * request target or in a header other than Authorization and those the
 * secret names, or a value to
 * put in while the Host header names
 * another site (head_host_ok()); why in why[size] (the secret's name,
 * never a value). */
bool head_refused(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host,
                  uint16_t port, uint16_t default_port, char *why, size_t size);

/* Appends h's head to out with the values of the secrets that may go to
 * h->host:h->port. 0 or -ENOMEM. */
int head_rewrite(const HeadRewrite *x, const VsHttpHead *h, StrBuf *out);
