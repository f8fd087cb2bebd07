/* SPDX-License-Identifier: MIT */
/* [[sandbox.http]]: HTTP rules per host (http-rules.h). Each entry is a
 * table { host = "...", allow = ["METHOD /glob", ...] }; one entry a host. */

#include <string.h>

#include "http-rules.h"
#include "net-policy.h"
#include "strv.h"
#include "toml.h"
#include "config-internal.h"

void config_http_done(VsPolicy *p) {
        for (size_t i = 0; i < p->n_http; i++) {
                free(p->http[i].host);
                strv_free(p->http[i].allow);
        }
        free(TAKE_PTR(p->http));
        p->n_http = 0;
}

static int h_host(const KeyCtx *c, VsError **err) {
        VsHttpRule *e = c->backend_config;
        const TomlValue *v = c->kv->value;
        _cleanup_free_ char *h = strndup(v->string.ptr, v->string.len);
        if (!h)
                return -ENOMEM;
        if (strlen(h) != v->string.len || strchr(h, '*') || strchr(h, ':') || net_host_normalize(h) < 0)
                return config_error(err, -EINVAL, v->line, v->col,
                                    "%s.host: \"%s\" is not a host name (one host, no wildcard and no port: the rules hold for "
                                    "every port of it)", c->table, v->string.ptr);
        free(e->host);
        e->host = TAKE_PTR(h);
        return 0;
}

static int h_allow(const KeyCtx *c, VsError **err) {
        VsHttpRule *e = c->backend_config;
        const TomlValue *arr = c->kv->value;
        if (arr->array.n > HTTP_RULES_MAX_ALLOW)
                return config_error(err, -E2BIG, arr->line, arr->col, "%s.allow has more than %d entries", c->table,
                                    HTTP_RULES_MAX_ALLOW);
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < arr->array.n; i++) {
                const TomlValue *v = arr->array.items[i];
                _cleanup_(vs_error_freep) VsError *rerr = NULL;
                int r;
                if (v->type != TOML_STRING)
                        return config_error(err, -EINVAL, v->line, v->col,
                                            "%s.allow[%zu] must be a string like \"GET /repos/me/**\", not %s", c->table, i,
                                            toml_type_name(v->type));
                if (strlen(v->string.ptr) != v->string.len)
                        return config_error(err, -EINVAL, v->line, v->col, "%s.allow[%zu] must not contain NUL characters",
                                            c->table, i);
                if ((r = http_allow_check(v->string.ptr, &rerr)) < 0)
                        return r == -ENOMEM ? r
                                            : config_error(err, r, v->line, v->col, "%s.allow[%zu]: %s", c->table, i,
                                                           vs_error_message(rerr));
                if ((r = strv_extend(&l, v->string.ptr)) < 0)
                        return r;
        }
        strv_free(e->allow);
        e->allow = TAKE_PTR(l);
        e->n_allow = arr->array.n;
        return 0;
}

static const KeyDef http_keys[] = {
        { "host", TOML_STRING, h_host },
        { "allow", TOML_ARRAY, h_allow },
};

int config_http_table(const KeyCtx *c, VsError **err) {
        const TomlValue *arr = c->kv->value;
        VsPolicy *p = c->policy;
        if (arr->array.n > HTTP_RULES_MAX_HOSTS)
                return config_error(err, -E2BIG, arr->line, arr->col, "sandbox.http has more than %d entries",
                                    HTTP_RULES_MAX_HOSTS);
        config_http_done(p);
        if (!(p->http = calloc(arr->array.n + 1, sizeof *p->http)))
                return -ENOMEM;
        for (size_t i = 0; i < arr->array.n; i++) {
                const TomlValue *t = arr->array.items[i];
                if (t->type != TOML_TABLE)
                        return config_error(err, -EINVAL, t->line, t->col,
                                            "sandbox.http must be tables ([[sandbox.http]] with host and allow), not %s",
                                            toml_type_name(t->type));
                VsHttpRule *e = &p->http[p->n_http++];
                e->line = t->line;
                e->col = t->col;
                char table[48];
                snprintf(table, sizeof table, "sandbox.http[%zu]", i);
                KeyCtx base = *c;
                base.table = table;
                base.backend_config = e;
                int r = config_dispatch_table(t, http_keys, ELEMENTSOF(http_keys), base, err);
                if (r < 0)
                        return r;
                if (!e->host || !e->allow)
                        return config_error(err, -EINVAL, t->line, t->col,
                                            "%s needs host = \"...\" and allow = [\"METHOD /path\", ...] (an empty allow "
                                            "refuses every request to the host)", table);
                for (size_t j = 0; j < i; j++)
                        if (streq(p->http[j].host, e->host))
                                return config_error(err, -EINVAL, t->line, t->col,
                                                    "%s: host \"%s\" already has rules (sandbox.http[%zu], line %u); "
                                                    "one entry a host", table, e->host, j, p->http[j].line);
        }
        return 0;
}

/* Rules act in the proxy: an allowlist must send the host through it. A
 * host the allowlist does not reach would make rules no request meets,
 * most likely a typing error, so it is refused too. */
int config_http_validate(const VsPolicy *p, VsError **err) {
        if (!p->n_http)
                return 0;
        if (!p->net_allowlist)
                return config_error(err, -EINVAL, p->http[0].line, p->http[0].col,
                                    "sandbox.http needs network = [...] listing its hosts: the rules are applied by the "
                                    "proxy, which %s", p->lockdown ? "lockdown turns off" : p->network ? "network = true goes around" : "network = false never reaches");
        for (size_t i = 0; i < p->n_http; i++) {
                const VsHttpRule *e = &p->http[i];
                bool reached = false;
                for (size_t j = 0; j < p->n_net_rules && !reached; j++)
                        reached = net_match(&p->net_rules[j], 1, e->host, p->net_rules[j].port ? p->net_rules[j].port : 443);
                if (!reached)
                        return config_error(err, -EINVAL, e->line, e->col,
                                            "sandbox.http[%zu]: host \"%s\" is not in network = [...], so no request reaches "
                                            "it; add it there or remove the rules", i, e->host);
        }
        return 0;
}
