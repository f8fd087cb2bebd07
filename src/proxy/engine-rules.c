/* SPDX-License-Identifier: MIT */
/* A workspace's rule sets in the proxy (engine-internal.h): the one in
 * force, against which every request is checked, and the one an add or
 * rules begins, which the secret and http messages fill and the commit
 * puts in force whole, so that no request is ever checked against half of
 * a set (the daemon's re-send of a workspace's rules once left its http
 * rules empty between two messages). */
#include <stdlib.h>

#include "engine-internal.h"

void proxy_staged_free(Proxy *px) {
        struct Staged *st = TAKE_PTR(px->staged);
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

void proxy_rules_clear(Proxy *px) {
        for (size_t i = 0; i < px->n_rules; i++)
                net_rule_done(&px->rules[i]);
        free(px->rules);
        px->rules = NULL;
        px->n_rules = 0;
        free(px->config);
        px->config = NULL;
        secret_set_clear(&px->secrets);
        http_rule_set_clear(&px->http);
}

int proxy_rules_stage(Proxy *px, ProxyCtlMsg *m) {
        struct Staged *st = calloc(1, sizeof *st);
        if (!st)
                return -ENOMEM;
        proxy_staged_free(px);
        px->staged = st;
        st->allow = m->allow;
        st->config = TAKE_PTR(m->config);
        st->rules = TAKE_PTR(m->rules);
        st->n_rules = m->n_rules;
        m->n_rules = 0;
        return 0;
}

int proxy_rules_commit(Proxy *px, VsError **err) {
        struct Staged *st = TAKE_PTR(px->staged);
        if (!st)
                return vs_error_set(err, -EINVAL, "commit %llu: no add or rules before it", (unsigned long long)px->id);
        proxy_rules_clear(px);
        px->allow = st->allow;
        px->config = TAKE_PTR(st->config);
        px->rules = TAKE_PTR(st->rules);
        px->n_rules = st->n_rules;
        px->secrets = st->secrets;
        px->http = st->http;
        free(st);
        return 0;
}
