/* SPDX-License-Identifier: MIT */
#include "inject.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "net-policy.h"

static bool may_go(const ProxyCtlMsg *s, const char *host, uint16_t port) {
        return net_match(s->rules, s->n_rules, host, port) != NULL;
}

const ProxyCtlMsg *inject_refused(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host,
                                  uint16_t port) {
        for (size_t i = 0; i < n; i++) {
                const ProxyCtlMsg *s = &secrets[i];
                if (s->placeholder && memmem(head, len, s->placeholder, strlen(s->placeholder)) && !may_go(s, host, port))
                        return s;
        }
        return NULL;
}

/* The secret whose (allowed) placeholder starts at p, or NULL. */
static const ProxyCtlMsg *at(const ProxyCtlMsg *secrets, size_t n, const char *p, size_t left, const char *host,
                             uint16_t port) {
        for (size_t i = 0; i < n; i++) {
                const char *ph = secrets[i].placeholder;
                size_t pl = ph ? strlen(ph) : 0;
                if (pl && pl <= left && memcmp(p, ph, pl) == 0 && may_go(&secrets[i], host, port))
                        return &secrets[i];
        }
        return NULL;
}

int inject_head(const ProxyCtlMsg *secrets, size_t n, const char *head, size_t len, const char *host, uint16_t port,
                StrBuf *out, unsigned *ret_used) {
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
