/* SPDX-License-Identifier: MIT */
#include "inject.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "macro.h"
#include "net-policy.h"
#include "secret-header.h"

bool inject_may_go(const ProxyCtlMsg *s, const char *host, uint16_t port) {
        for (size_t i = 0; i < s->n_rules; i++)
                if ((s->rules[i].port || port == 443 || port == 80) && net_match(&s->rules[i], 1, host, port))
                        return true;
        return false;
}

static bool ws(char c) {
        return c == ' ' || c == '\t';
}

/* The next Basic credentials at or after from: an "Authorization:" line
 * whose value is "Basic TOKEN"; [*b, *e) the token (curl -u, git's
 * credential helper: the placeholder is inside the base64). false when
 * none. */
bool inject_next_basic(const char *head, size_t len, size_t from, size_t *b, size_t *e) {
        static const char name[] = "authorization:", scheme[] = "basic";
        for (size_t i = from; i < len; i++) {
                if (i > 0 && head[i - 1] != '\n')
                        continue;
                size_t p = i;
                if (len - p < sizeof name - 1 || strncasecmp(head + p, name, sizeof name - 1) != 0)
                        continue;
                p += sizeof name - 1;
                while (p < len && ws(head[p]))
                        p++;
                if (len - p < sizeof scheme || strncasecmp(head + p, scheme, sizeof scheme - 1) != 0 ||
                    !ws(head[p + sizeof scheme - 1]))
                        continue;
                p += sizeof scheme - 1;
                while (p < len && ws(head[p]))
                        p++;
                size_t t = p;
                while (t < len && !ws(head[t]) && head[t] != '\r' && head[t] != '\n')
                        t++;
                if (t == p)
                        continue;
                *b = p;
                *e = t;
                return true;
        }
        return false;
}

/* Whether s's placeholder is in head[0..len), as written or inside Basic
 * credentials. */
static bool carries(const ProxyCtlMsg *s, const char *head, size_t len) {
        if (!s->placeholder)
                return false;
        size_t pl = strlen(s->placeholder);
        bool in = memmem(head, len, s->placeholder, pl) != NULL;
        for (size_t b, e, from = 0; !in && inject_next_basic(head, len, from, &b, &e); from = e) {
                _cleanup_free_ char *dec = NULL;
                size_t dl;
                if (base64_decode_alloc(head + b, e - b, &dec, &dl) < 0)
                        continue;
                in = memmem(dec, dl, s->placeholder, pl) != NULL;
                explicit_bzero(dec, dl);
        }
        return in;
}

const ProxyCtlMsg *inject_refused(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host,
                                  uint16_t port) {
        for (size_t i = 0; i < n; i++)
                if (!inject_may_go(&secrets[i], host, port) && carries(&secrets[i], head, len))
                        return &secrets[i];
        return NULL;
}

const ProxyCtlMsg *inject_in_target(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len) {
        const char *eol = memchr(head, '\n', len);
        size_t ll = eol ? (size_t)(eol - head) : len;
        for (size_t i = 0; i < n; i++)
                if (secrets[i].placeholder && memmem(head, ll, secrets[i].placeholder, strlen(secrets[i].placeholder)))
                        return &secrets[i];
        return NULL;
}

const ProxyCtlMsg *inject_outside_headers(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len) {
        static const char auth[] = "authorization:";
        const char *eol = memchr(head, '\n', len);
        /* Each header line after the request line (inject_in_target's).
         * A line is a header of its own or nothing: a folded continuation
         * (leading space) names no header, so a placeholder there is
         * refused. */
        for (size_t p = eol ? (size_t)(eol - head) + 1 : len; p < len;) {
                const char *e = memchr(head + p, '\n', len - p);
                size_t ll = e ? (size_t)(e - head) - p : len - p;
                bool is_auth = ll >= sizeof auth - 1 && strncasecmp(head + p, auth, sizeof auth - 1) == 0;
                for (size_t i = 0; !is_auth && i < n; i++)
                        if (secrets[i].placeholder &&
                            memmem(head + p, ll, secrets[i].placeholder, strlen(secrets[i].placeholder)) &&
                            !secret_header_line_is(secrets[i].headers, head + p, ll))
                                return &secrets[i];
                p += ll + 1;
        }
        return NULL;
}

bool inject_uses(const ProxyCtlMsg *s, const char *head, size_t len, const char *host, uint16_t port) {
        return inject_may_go(s, host, port) && carries(s, head, len);
}

/* The secret whose (allowed) placeholder starts at p, or NULL. */
static const ProxyCtlMsg *at(const ProxyCtlMsg *secrets, size_t n, const char *p, size_t left, const char *host,
                             uint16_t port) {
        for (size_t i = 0; i < n; i++) {
                const char *ph = secrets[i].placeholder;
                size_t pl = ph ? strlen(ph) : 0;
                if (pl && pl <= left && memcmp(p, ph, pl) == 0 && inject_may_go(&secrets[i], host, port))
                        return &secrets[i];
        }
        return NULL;
}

static int inject_plain(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host,
                        uint16_t port, StrBuf *out, unsigned *ret_used) {
        unsigned used = 0;
        size_t i = 0, copied = 0;
        /* Every placeholder begins with the same prefix: only there can
         * one start. */
        static const char prefix[] = "vsph_";
        while (n && i < len) {
                const char *hit = memmem(head + i, len - i, prefix, sizeof prefix - 1);
                if (!hit)
                        break;
                i = (size_t)(hit - head);
                const ProxyCtlMsg *s = at(secrets, n, hit, len - i, host, port);
                if (!s) {
                        i++;
                        continue;
                }
                int r = strbuf_append(out, head + copied, i - copied);
                if (r < 0 || (r = strbuf_append(out, s->value, s->value_len)) < 0)
                        return r;
                i += strlen(s->placeholder);
                copied = i;
                used++;
        }
        int r = strbuf_append(out, head + copied, len - copied);
        if (r < 0)
                return r;
        if (ret_used)
                *ret_used = used;
        return 0;
}

/* Basic credentials: decoded, their placeholders replaced, encoded again.
 * Credentials that do not decode are plain text (a placeholder in them is
 * replaced as written). */
static int inject_basic(const ProxyCtlMsg *secrets, size_t n, const char *tok, size_t len, const char *host,
                        uint16_t port, StrBuf *out, unsigned *used) {
        _cleanup_free_ char *dec = NULL;
        size_t dl;
        int r = base64_decode_alloc(tok, len, &dec, &dl);
        if (r == -EINVAL)
                return inject_plain(secrets, n, tok, len, host, port, out, used);
        if (r < 0)
                return r;
        StrBuf plain = STRBUF_INIT;
        r = inject_plain(secrets, n, dec, dl, host, port, &plain, used);
        explicit_bzero(dec, dl);
        if (r >= 0 && *used) {
                size_t el;
                _cleanup_free_ char *enc = base64_encode_alloc(plain.data ? plain.data : "", plain.len, &el);
                r = enc ? strbuf_append(out, enc, el) : -ENOMEM;
                if (enc)
                        explicit_bzero(enc, el);
        } else if (r >= 0)
                r = strbuf_append(out, tok, len);
        if (plain.data)
                explicit_bzero(plain.data, plain.len);
        strbuf_done(&plain);
        return r;
}

int inject_head(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host, uint16_t port,
                StrBuf *out, unsigned *ret_used) {
        unsigned used = 0;
        size_t pos = 0;
        int r;
        for (size_t b, e; n && inject_next_basic(head, len, pos, &b, &e); pos = e) {
                unsigned u1 = 0, u2 = 0;
                if ((r = inject_plain(secrets, n, head + pos, b - pos, host, port, out, &u1)) < 0 ||
                    (r = inject_basic(secrets, n, head + b, e - b, host, port, out, &u2)) < 0)
                        return r;
                used += u1 + u2;
        }
        unsigned u = 0;
        if ((r = inject_plain(secrets, n, head + pos, len - pos, host, port, out, &u)) < 0)
                return r;
        if (ret_used)
                *ret_used = used + u;
        return 0;
}

void inject_set_clear(InjectSet *s) {
        for (size_t i = 0; i < s->n; i++)
                proxy_ctl_msg_done(&s->items[i]);
        free(s->items);
        *s = (InjectSet){};
}

int inject_set_add(InjectSet *s, ProxyCtlMsg *m) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->items[i].name, m->name)) {
                        proxy_ctl_msg_done(&s->items[i]);
                        s->items[i] = *m;
                        *m = (ProxyCtlMsg){};
                        return 0;
                }
        ProxyCtlMsg *items = realloc(s->items, (s->n + 1) * sizeof *items);
        if (!items)
                return -ENOMEM;
        s->items = items;
        s->items[s->n++] = *m;
        *m = (ProxyCtlMsg){};
        return 0;
}
