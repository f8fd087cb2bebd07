/* SPDX-License-Identifier: MIT */
/* Fuzzes the proxy's rewriting of request heads with secrets
 * (src/proxy/inject.h): the head is the jail's, the host it names too.
 * Input: a host line, then the head. Two secrets with fixed placeholders,
 * values and hosts. Besides crashes, leaks and hangs it checks: a head
 * that holds a placeholder of a secret that may not go to its host is
 * refused; one let through is rewritten as a plain left-to-right
 * replacement of the placeholders of the secrets that may go there would
 * (text the jail wrote before a placeholder may form another placeholder
 * with the start of the value put in: that is the placeholder's text, not
 * a value, and is not scanned again); a value of a secret that may not go
 * there is in the output no more often than it was in the head. The same
 * inside Basic credentials ("Authorization: Basic base64(user:pass)"):
 * one that holds a placeholder of a secret that may not go there is
 * refused; in one let through, no placeholder of a secret that may go
 * there is left, and a value of one that may not is no more often than
 * in the head's. A placeholder in the request line is found by
 * inject_in_target(), and only one there; one on a header line other
 * than Authorization and the headers its secret names (B names
 * X-Api-Key, A none) by inject_outside_headers(), and only one there;
 * in a head let through, B's placeholder in X-Api-Key is replaced like
 * any other. */
#include <stdint.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "inject.h"
#include "net-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

static size_t count(const char *h, size_t n, const char *needle) {
        size_t k = 0, nl = strlen(needle);
        for (const char *p = h; n >= nl && (p = memmem(p, n - (size_t)(p - h), needle, nl)); p++)
                k++;
        return k;
}

/* The reference: left to right, an allowed placeholder where one starts. */
static void reference(const ProxyCtlMsg *s, const char *head, size_t len, const char *host, uint16_t port, StrBuf *out) {
        for (size_t i = 0; i < len;) {
                const ProxyCtlMsg *hit = NULL;
                for (size_t k = 0; k < 2 && !hit; k++) {
                        size_t pl = strlen(s[k].placeholder);
                        if (pl <= len - i && memcmp(head + i, s[k].placeholder, pl) == 0 && net_match(s[k].rules, 1, host, port))
                                hit = &s[k];
                }
                if (hit) {
                        check(strbuf_append(out, hit->value, hit->value_len) == 0);
                        i += strlen(hit->placeholder);
                } else
                        check(strbuf_append(out, head + i++, 1) == 0);
        }
}

/* How often needle occurs in the Basic credentials of h, decoded. */
static size_t in_basic(const char *h, size_t n, const char *needle) {
        size_t k = 0;
        for (size_t b, e, from = 0; inject_next_basic(h, n, from, &b, &e); from = e) {
                char *dec;
                size_t dl;
                if (base64_decode_alloc(h + b, e - b, &dec, &dl) < 0)
                        continue;
                k += count(dec, dl, needle);
                free(dec);
        }
        return k;
}

static void secret(ProxyCtlMsg *m, const char *name, const char *ph, const char *value, const char *host,
                   const char *header) {
        *m = (ProxyCtlMsg){ .op = PROXY_CTL_SECRET, .name = strdup(name), .placeholder = strdup(ph),
                            .value = strdup(value), .value_len = strlen(value), .rules = calloc(1, sizeof(VsNetRule)),
                            .n_rules = 1, .headers = calloc(2, sizeof(char *)) };
        check(m->headers && net_rule_parse(host, &m->rules[0], NULL) == 0);
        if (header) {
                m->headers[0] = strdup(header);
                m->n_headers = 1;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *nl = memchr(data, '\n', size < 256 ? size : 256);
        if (!nl)
                return 0;
        char host[256];
        memcpy(host, data, (size_t)(nl - data));
        host[nl - data] = 0;
        if (strlen(host) != (size_t)(nl - data) || net_host_normalize(host) < 0)
                return 0;
        const char *head = (const char *)nl + 1;
        size_t len = size - (size_t)(nl + 1 - data);
        uint16_t port = 80;
        ProxyCtlMsg s[2];
        secret(&s[0], "A", "vsph_00000000000000000000000000000000", "value-a", "a.example", NULL);
        secret(&s[1], "B", "vsph_0000000000000000000000000000000b", "VALUE-B", "*.example:80", "X-Api-Key");
        const ProxyCtlMsg *refused = inject_refused(s, 2, head, len, host, port);
        /* A placeholder in the request line (up to the first '\n') is
         * found there, whatever the host; none there, none found. */
        const char *eol = memchr(head, '\n', len);
        size_t ll = eol ? (size_t)(eol - head) : len;
        bool in_line = false;
        for (size_t i = 0; i < 2; i++)
                in_line |= memmem(head, ll, s[i].placeholder, strlen(s[i].placeholder)) != NULL;
        check(in_line == (inject_in_target(s, 2, head, len) != NULL));
        /* A placeholder on a header line that does not start
         * "Authorization:" (any case), nor "X-Api-Key:" for B's, is found
         * by inject_outside_headers(); none there, none found. */
        bool outside = false;
        for (size_t p = eol ? ll + 1 : len; p < len;) {
                const char *e = memchr(head + p, '\n', len - p);
                size_t hl = e ? (size_t)(e - head) - p : len - p;
                bool auth = hl >= 14 && strncasecmp(head + p, "authorization:", 14) == 0;
                bool named = hl >= 10 && strncasecmp(head + p, "x-api-key:", 10) == 0;
                for (size_t i = 0; !auth && i < 2; i++)
                        outside |= !(i == 1 && named) &&
                                   memmem(head + p, hl, s[i].placeholder, strlen(s[i].placeholder)) != NULL;
                p += hl + 1;
        }
        check(outside == (inject_outside_headers(s, 2, head, len) != NULL));
        bool basic_allowed = false;
        for (size_t i = 0; i < 2; i++) {
                bool in = memmem(head, len, s[i].placeholder, strlen(s[i].placeholder)) != NULL;
                bool in_b = in_basic(head, len, s[i].placeholder) > 0;
                bool may = net_match(s[i].rules, 1, host, port) != NULL;
                if ((in || in_b) && !may)
                        check(refused != NULL);
                basic_allowed |= in_b && may;
        }
        if (!refused) {
                StrBuf out = STRBUF_INIT;
                unsigned used = 0;
                check(inject_head(s, 2, head, len, host, port, &out, &used) == 0);
                StrBuf want = STRBUF_INIT;
                reference(s, head, len, host, port, &want);
                /* Credentials rewritten inside differ from the reference. */
                if (!basic_allowed)
                        check(want.len == out.len && (!out.len || memcmp(want.data, out.data, out.len) == 0));
                strbuf_done(&want);
                const char *o = out.data ? out.data : "";
                for (size_t i = 0; i < 2; i++)
                        if (!net_match(s[i].rules, 1, host, port)) {
                                check(count(o, out.len, s[i].value) == count(head, len, s[i].value));
                                check(in_basic(o, out.len, s[i].value) <= in_basic(head, len, s[i].value));
                        } else
                                check(in_basic(o, out.len, s[i].placeholder) == 0);
                check(used > 0 || (out.len == len && (!len || memcmp(out.data, head, len) == 0)));
                strbuf_done(&out);
        }
        for (size_t i = 0; i < 2; i++)
                proxy_ctl_msg_done(&s[i]);
        return 0;
}
