/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "forbidden.h"
#include "glob.h"
#include "path-util.h"
#include "strv.h"
#include "toml.h"
#include "config-internal.h"

void config_vspath_done(VsPath *p) {
        free(p->written);
        free(p->resolved);
}

void policy_free(VsPolicy *p) {
        if (!p)
                return;
        free(p->workspace);
        free(p->config_path);
        free(p->unsandboxed_reason);
        for (size_t i = 0; i < p->n_rw; i++)
                config_vspath_done(&p->rw_paths[i]);
        free(p->rw_paths);
        for (size_t i = 0; i < p->n_ro; i++)
                config_vspath_done(&p->ro_paths[i]);
        free(p->ro_paths);
        strv_free(p->mask);
        strv_free(p->protect);
        for (size_t i = 0; i < p->n_net_rules; i++)
                net_rule_done(&p->net_rules[i]);
        free(p->net_rules);
        free(p->ports);
        if (p->backend_config && p->backend && p->backend->config_done)
                p->backend->config_done(p->backend_config);
        free(p->backend_config);
        free(p);
}

int parse_size(const char *s, uint64_t *ret) {
        if (!s || !*s)
                return -EINVAL;
        const char *c = s;
        uint64_t v = 0;
        if (*c < '0' || *c > '9')
                return -EINVAL;
        for (; *c >= '0' && *c <= '9'; c++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(*c - '0');
        }
        uint64_t mul = 1;
        switch (*c) {
        case 0: break;
        case 'K': case 'k': mul = 1ull << 10; c++; break;
        case 'M': case 'm': mul = 1ull << 20; c++; break;
        case 'G': case 'g': mul = 1ull << 30; c++; break;
        case 'T': case 't': mul = 1ull << 40; c++; break;
        default: return -EINVAL;
        }
        if (mul > 1 && (*c == 'i' || *c == 'I'))
                c++;
        if (mul > 1 && (*c == 'B' || *c == 'b'))
                c++;
        if (*c)
                return -EINVAL;
        if (v > UINT64_MAX / mul)
                return -ERANGE;
        *ret = v * mul;
        return 0;
}

/* ---- located errors -------------------------------------------------- */

int config_error(VsError **err, int code, unsigned line, unsigned col, const char *fmt, ...) {
        char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return vs_error_set_kind(err, -ENOMEM, "config_invalid", "out of memory");
        if (line)
                vs_error_set_kind(err, code, "config_invalid", VS_CONFIG_FILE ":%u:%u: %s", line, col, msg);
        else
                vs_error_set_kind(err, code, "config_invalid", VS_CONFIG_FILE ": %s", msg);
        free(msg);
        return code;
}

static unsigned edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        if (la > 64 || lb > 64)
                return 99;
        unsigned d[65][65];
        for (size_t i = 0; i <= la; i++)
                d[i][0] = (unsigned)i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = (unsigned)j;
        for (size_t i = 1; i <= la; i++)
                for (size_t j = 1; j <= lb; j++) {
                        unsigned c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
                        c = MIN(c, d[i - 1][j] + 1);
                        c = MIN(c, d[i][j - 1] + 1);
                        d[i][j] = c;
                }
        return d[la][lb];
}

/* ---- table-driven decoding of TOML tables ------------------------------ */

static int want_type(const KeyCtx *c, TomlType t, VsError **err) {
        const TomlValue *v = c->kv->value;
        if (v->type == t || t == TOML_ANY)
                return 0;
        /* integers are acceptable where a float is expected */
        if (t == TOML_FLOAT && v->type == TOML_INTEGER)
                return 0;
        return config_error(err, -EINVAL, v->line, v->col, "%s.%s must be %s %s, not %s %s", c->table, c->key,
                            t == TOML_INTEGER || t == TOML_ARRAY ? "an" : "a", toml_type_name(t),
                            v->type == TOML_INTEGER || v->type == TOML_ARRAY ? "an" : "a", toml_type_name(v->type));
}

int config_dispatch_table(const TomlValue *t, const KeyDef *defs, size_t n_defs, KeyCtx base, VsError **err) {
        for (size_t i = 0; i < t->table.n; i++) {
                const TomlKeyValue *kv = &t->table.items[i];
                const KeyDef *def = NULL;
                for (size_t j = 0; j < n_defs; j++)
                        if (strlen(defs[j].name) == kv->key_len && memcmp(defs[j].name, kv->key, kv->key_len) == 0) {
                                def = &defs[j];
                                break;
                        }
                if (!def) {
                        _cleanup_free_ char *allowed = NULL;
                        const char *best = NULL;
                        unsigned best_d = 3;
                        {
                                size_t total = 1;
                                for (size_t j = 0; j < n_defs; j++)
                                        total += strlen(defs[j].name) + 2;
                                allowed = calloc(1, total);
                                if (!allowed)
                                        return -ENOMEM;
                                for (size_t j = 0; j < n_defs; j++) {
                                        if (j)
                                                strcat(allowed, ", ");
                                        strcat(allowed, defs[j].name);
                                        unsigned d = edit_distance(kv->key, defs[j].name);
                                        if (d < best_d) {
                                                best_d = d;
                                                best = defs[j].name;
                                        }
                                }
                        }
                        if (best)
                                return config_error(err, -EINVAL, kv->line, kv->col,
                                                    "%s: unknown key '%s' (did you mean '%s'?); allowed keys: %s",
                                                    base.table, kv->key, best, allowed);
                        return config_error(err, -EINVAL, kv->line, kv->col,
                                            "%s: unknown key '%s'; allowed keys: %s", base.table, kv->key, allowed);
                }
                KeyCtx c = base;
                c.key = def->name;
                c.kv = kv;
                int r = want_type(&c, def->type, err);
                if (r < 0)
                        return r;
                r = def->handler(&c, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void policy_defaults(VsPolicy *p) {
        p->sandboxed = true;
        p->backend = backend_def_default();
        p->no_gpu = true;
        p->lockdown = false;
        p->network = true;
        p->idle_timeout_s = 600;
        p->limits.timeout_s = 120;
        p->limits.max_output = 1u << 20;
        p->limits.pids = 512;
        p->limits.memory = 2ull << 30;
}

/* The backend's settings: those of its [sandbox.NAME] table, else its
 * defaults. The other backends' tables were parsed (their keys checked)
 * and are refused by validate_policy(). */
static int take_backend_config(VsPolicy *p, void **cfgs) {
        for (size_t i = 0; vs_backend_defs[i]; i++)
                if (vs_backend_defs[i] == p->backend) {
                        p->backend_config = TAKE_PTR(cfgs[i]);
                        break;
                }
        const VsBackendDef *b = p->backend;
        if (p->backend_config || !b->config_size)
                return 0;
        if (!(p->backend_config = calloc(1, b->config_size)))
                return -ENOMEM;
        return b->config_init ? b->config_init(p->backend_config) : 0;
}

static void backend_configs_free(void **cfgs) {
        for (size_t i = 0; cfgs && vs_backend_defs[i]; i++) {
                if (cfgs[i] && vs_backend_defs[i]->config_done)
                        vs_backend_defs[i]->config_done(cfgs[i]);
                free(cfgs[i]);
        }
        free(cfgs);
}

/* Cross-key rules, located at the [sandbox] table. */
static int validate_policy(VsPolicy *p, const TomlValue *sandbox, VsError **err) {
        int r = p->backend->config_check ? p->backend->config_check(p->backend_config, sandbox->line, sandbox->col, err) : 0;
        if (r < 0)
                return r;
        /* A table for another backend than the chosen one: a backend switched
         * without its settings, or settings believed in force. Refused,
         * located, rather than silently ignored. */
        for (const VsBackendDef *const *b = vs_backend_defs; *b; b++) {
                const char *name = (*b)->name;
                const TomlKeyValue *kv = (*b)->n_keys ? toml_table_get(sandbox, name) : NULL;
                if (kv && p->backend != *b)
                        return config_error(err, -EINVAL, kv->line, kv->col,
                                            "sandbox.%s: settings for the %s backend, but backend = \"%s\"; set backend = \"%s\" or remove [sandbox.%s]",
                                            name, name, vs_backend_name(p->backend), name, name);
        }
        if (p->lockdown) {
                /* Rule 5: lockdown turns network and GPU off whatever else is written. */
                p->network = false;
                p->no_gpu = true;
                p->net_allowlist = false;
        }
        if (p->n_ports && p->lockdown)
                return config_error(err, -EINVAL, p->ports[0].line, p->ports[0].col,
                                    "sandbox.ports: lockdown allows no inet sockets in the jail, so nothing there can serve a forwarded port; remove ports or lockdown");
        if (p->n_ports && p->network)
                return config_error(err, -EINVAL, p->ports[0].line, p->ports[0].col,
                                    "sandbox.ports: with network = true the jail shares the host's network and its servers are on the host's loopback already; forwarded ports are for network = false or a list of hosts");
        return 0;
}

int config_parse(const char *text, size_t len, const VsConfigEnv *env, VsPolicy **ret, VsError **err) {
        _cleanup_(policy_freep) VsPolicy *p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        policy_defaults(p);
        p->workspace = strdup(env->workspace);
        p->config_path = path_join(env->workspace, VS_CONFIG_FILE);
        if (!p->workspace || !p->config_path)
                return -ENOMEM;

        if (len > CONFIG_MAX_SIZE)
                return config_error(err, -E2BIG, 0, 0, "file is larger than %u bytes", CONFIG_MAX_SIZE);

        _cleanup_(toml_freep) TomlValue *root = NULL;
        _cleanup_(vs_error_freep) VsError *terr = NULL;
        int r = toml_parse(text, len, &root, &terr);
        if (r < 0)
                return vs_error_set_kind(err, r, "config_invalid", VS_CONFIG_FILE ":%s", vs_error_message(terr));

        const TomlKeyValue *sb = toml_table_get(root, "sandbox");
        if (!sb) {
                p->sandboxed = false;
                p->unsandboxed_reason = strdup("vectora.toml has no [sandbox] table");
                if (!p->unsandboxed_reason)
                        return -ENOMEM;
                *ret = TAKE_PTR(p);
                return 0;
        }
        if (sb->value->type != TOML_TABLE)
                return config_error(err, -EINVAL, sb->value->line, sb->value->col,
                                    "sandbox must be a table ([sandbox]), not %s", toml_type_name(sb->value->type));

        /* [sandbox]'s own keys, then one table per backend with settings. */
        size_t n_defs = 0, n_keys = config_n_sandbox_keys;
        while (vs_backend_defs[n_defs])
                n_defs++;
        _cleanup_free_ KeyDef *keys = calloc(n_keys + n_defs, sizeof *keys);
        void **cfgs = calloc(n_defs + 1, sizeof *cfgs);
        if (!keys || !cfgs) {
                free(cfgs);
                return -ENOMEM;
        }
        memcpy(keys, config_sandbox_keys, n_keys * sizeof *keys);
        for (size_t i = 0; i < n_defs; i++)
                if (vs_backend_defs[i]->n_keys)
                        keys[n_keys++] = (KeyDef) { vs_backend_defs[i]->name, TOML_TABLE, config_backend_table };
        KeyCtx base = { .policy = p, .env = env, .table = "sandbox", .backend_configs = cfgs };
        r = config_dispatch_table(sb->value, keys, n_keys, base, err);
        if (r >= 0)
                r = take_backend_config(p, cfgs);
        backend_configs_free(cfgs);
        if (r < 0)
                return r;
        if (!p->sandboxed) {
                p->unsandboxed_reason = strdup("[sandbox] has enabled = false");
                if (!p->unsandboxed_reason)
                        return -ENOMEM;
                *ret = TAKE_PTR(p);
                return 0;
        }
        if (!p->rw_paths) {
                /* Default: the workspace itself is writable. */
                p->rw_paths = calloc(1, sizeof(VsPath));
                if (!p->rw_paths || !(p->rw_paths[0].written = strdup(".")))
                        return -ENOMEM;
                p->n_rw = 1;
        }
        if (!p->mask && !(p->mask = calloc(1, sizeof(char *))))
                return -ENOMEM;
        if (!p->protect) {
                if (!(p->protect = calloc(1, sizeof(char *))))
                        return -ENOMEM;
                for (const char *const *d = VS_PROTECT_DEFAULT; *d; d++)
                        if ((r = strv_extend(&p->protect, *d)) < 0)
                                return r;
        }
        r = validate_policy(p, sb->value, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

