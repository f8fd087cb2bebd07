/* SPDX-License-Identifier: MIT */
#pragma once

/* Secrets in request heads (issue 31): the jail holds placeholders; the
 * proxy puts a secret's value in place of its placeholder only in a
 * request to one of that secret's hosts, in Authorization or a header the
 * secret names, and refuses a request that carries a placeholder anywhere
 * else. Pure (no I/O): fuzzed by
 * tests/fuzz/fuzz-inject.c. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy-ctl.h"
#include "strbuf.h"

/* Whether s's value may go to host:port: one of its hosts names it, and
 * a host written without a port means the web's ports only (443, and 80
 * for plain HTTP). The network entry such a host matches reaches every
 * port, and another service of the same host that is not HTTP (SMTP and
 * FTP servers answer a line they cannot read with the line) handed the
 * named header back to the jail. */
bool inject_may_go(const ProxyCtlMsg *s, const char *host, uint16_t port);

/* The secret (a PROXY_CTL_SECRET message: name, placeholder, value,
 * rules = its hosts) whose placeholder occurs in head[0..len) but which
 * may not go to host:port, or NULL when none does. host normalized. */
const ProxyCtlMsg *inject_refused(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host,
                                  uint16_t port);

/* The secret whose placeholder occurs in head's request line (the
 * target: path, query), whatever the host, or NULL. A value goes in a
 * header only: a server hands its path back (a redirect's Location, an
 * error page) and logs it. */
const ProxyCtlMsg *inject_in_target(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len);

/* The secret whose placeholder occurs in a header other than
 * Authorization and the headers that secret names (its message's
 * headers: `secret set --header X-Api-Key`), whatever the host, or NULL.
 * Hosts echo headers back (Origin into Access-Control-Allow-Origin,
 * request ids, debugging endpoints): a value in one of them would come
 * back to the jail. A named header is the user's word that the host
 * takes it as a credential. */
const ProxyCtlMsg *inject_outside_headers(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len);

/* Whether inject_head() puts s's value into head[0..len) for host:port
 * (its placeholder there, as written, inside Basic credentials or in a
 * header it names): what
 * the proxy reports for the audit log. */
bool inject_uses(const ProxyCtlMsg *s, const char *head, size_t len, const char *host, uint16_t port);

/* Appends head[0..len) to out with every placeholder of a secret that may
 * go to host:port replaced by its value (the others left as they are:
 * inject_refused() refused the request first). *ret_used: how many were
 * replaced. 0 or -ENOMEM. */
int inject_head(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host, uint16_t port,
                StrBuf *out, unsigned *ret_used);

/* The next Basic credentials in head at or after from ("Authorization:
 * Basic TOKEN" at a line's start, any case): [*b, *e) the token, as
 * written (base64 of user:password). false when none. inject_refused()
 * and inject_head() look inside them too. */
bool inject_next_basic(const char *head, size_t len, size_t from, size_t *b, size_t *e);

/* A workspace's secrets as the proxy keeps them: dropped with each rules
 * message, one added by each secret message that follows (its fields
 * taken from m). */
typedef struct InjectSet {
        ProxyCtlMsg *items;
        size_t n;
} InjectSet;
void inject_set_clear(InjectSet *s);
int inject_set_add(InjectSet *s, ProxyCtlMsg *m);
