/* SPDX-License-Identifier: MIT */
#include "proxy-secrets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "audit.h"
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
                m->headers = TAKE_PTR(x->headers);
                m->n_headers = strv_length(m->headers);
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

/* The URL host part git's credential.<url> matches for rule r ("*.x"
 * matches names below x, as the rule does); NULL when none fits. */
static char *git_url_host(const VsNetRule *r) {
        char *h = NULL;
        bool v6 = r->kind == VS_NET_IP && strchr(r->host, ':');
        char port[8] = "";
        if (r->port)
                snprintf(port, sizeof port, ":%u", (unsigned)r->port);
        return asprintf(&h, "%s%s%s%s%s", r->kind == VS_NET_WILDCARD ? "*." : "", v6 ? "[" : "", r->host, v6 ? "]" : "",
                        port) < 0
                       ? NULL
                       : h;
}

void proxy_secret_use_audit(uid_t uid, const char *workspace, uint64_t generation, const ProxyCtlMsg *m) {
        json_t *target = json_pack("{s:s, s:i, s:s, s:s, s:s}", "host", m->host, "port", (int)m->port, "method",
                                   m->method, "path", m->path, "secret", m->name);
        char why[128];
        snprintf(why, sizeof why, "secret %s put into the request", m->name);
        audit_write(&(AuditRecord) { .uid = uid, .workspace = workspace, .tool = "network", .target = target,
                                     .sandboxed = true, .generation = generation, .outcome = "ok",
                                     .reason = why });
        json_decref(target);
}

int proxy_secrets_env(const ProxySecrets *ps, char ***env) {
        unsigned n_git = 0;
        for (size_t i = 0; i < ps->n; i++) {
                int r = strv_extendf(env, "%s=%s", ps->msgs[i].name, ps->msgs[i].placeholder);
                if (r < 0)
                        return r;
        }
        /* git asks its credential helper for the secret's hosts: one that
         * prints the placeholder, which the proxy replaces in the Basic
         * credentials git sends. Through the environment only (git >=
         * 2.31), never a file the jail could change into something the
         * host runs; GIT_CONFIG_SYSTEM (the user's identity) is left as it
         * is. The placeholder is hex: nothing for the shell to read. */
        for (size_t i = 0; i < ps->n; i++)
                for (size_t k = 0; k < ps->msgs[i].n_rules; k++) {
                        _cleanup_free_ char *host = git_url_host(&ps->msgs[i].rules[k]);
                        if (!host)
                                return -ENOMEM;
                        static const char *const schemes[] = { "https", "http" };
                        for (size_t s = 0; s < ELEMENTSOF(schemes); s++) {
                                int r = strv_extendf(env, "GIT_CONFIG_KEY_%u=credential.%s://%s.helper", n_git, schemes[s],
                                                     host);
                                if (r >= 0)
                                        r = strv_extendf(env,
                                                         "GIT_CONFIG_VALUE_%u=!f() { test \"$1\" = get && printf 'username=x-access-token\\npassword=%%s\\n' %s; }; f",
                                                         n_git, ps->msgs[i].placeholder);
                                if (r < 0)
                                        return r;
                                n_git++;
                        }
                }
        return n_git ? strv_extendf(env, "GIT_CONFIG_COUNT=%u", n_git) : 0;
}
