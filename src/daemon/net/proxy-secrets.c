/* SPDX-License-Identifier: MIT */
#include "proxy-secrets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "macro.h"
#include "net-policy.h"
#include "secret-store.h"
#include "strv.h"

void proxy_secrets_done(ProxySecrets *ps) {
        for (size_t i = 0; i < ps->n; i++)
                proxy_ctl_msg_done(&ps->msgs[i]);
        free(ps->msgs);
        *ps = (ProxySecrets){};
}

/* 128 random bits: the jail cannot guess another jail's placeholder, and
 * one never occurs in a request by chance. */
static int make_placeholder(char **ret) {
        uint8_t b[16];
        if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
                return -errno;
        char *s = malloc(sizeof PROXY_PLACEHOLDER_PREFIX + 2 * sizeof b);
        if (!s)
                return -ENOMEM;
        char *p = stpcpy(s, PROXY_PLACEHOLDER_PREFIX);
        for (size_t i = 0; i < sizeof b; i++)
                p += sprintf(p, "%02x", b[i]);
        *ret = s;
        return 0;
}

static int hosts_rules(char *const *hosts, ProxyCtlMsg *m, VsError **err) {
        size_t n = strv_length(hosts);
        if (!(m->rules = calloc(n + 1, sizeof *m->rules)))
                return -ENOMEM;
        for (char *const *h = hosts; *h; h++) {
                int r = net_rule_parse(*h, &m->rules[m->n_rules], err);
                if (r < 0)
                        return r;
                if (!(m->rules[m->n_rules++].written = strdup(*h)))
                        return -ENOMEM;
        }
        return 0;
}

int proxy_secrets_load(ProxySecrets *ret, const char *state_dir, const VsPolicy *p, VsError **err) {
        _cleanup_(secret_store_done) VsSecretStore s = {};
        int r = secret_store_for_policy(state_dir, p, &s, err);
        if (r < 0)
                return r;
        ProxySecrets ps = { .msgs = calloc(s.n + 1, sizeof(ProxyCtlMsg)) };
        if (!ps.msgs)
                return -ENOMEM;
        for (size_t i = 0; i < s.n && r >= 0; i++) {
                ProxyCtlMsg *m = &ps.msgs[ps.n++];
                VsSecret *x = &s.items[i];
                m->op = PROXY_CTL_SECRET;
                m->name = TAKE_PTR(x->name);
                m->value = TAKE_PTR(x->value);
                m->value_len = x->value_len;
                r = make_placeholder(&m->placeholder);
                if (r >= 0)
                        r = hosts_rules(x->hosts, m, err);
        }
        if (r < 0) {
                proxy_secrets_done(&ps);
                return r;
        }
        *ret = ps;
        return 0;
}

int proxy_secrets_env(const ProxySecrets *ps, char ***env) {
        for (size_t i = 0; i < ps->n; i++) {
                int r = strv_extendf(env, "%s=%s", ps->msgs[i].name, ps->msgs[i].placeholder);
                if (r < 0)
                        return r;
        }
        return 0;
}
