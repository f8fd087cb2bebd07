/* SPDX-License-Identifier: MIT */
/* What every part of the policy's parser uses, and nothing above it:
 * located errors, the key-table dispatch, typed values, sizes, and the
 * backend accessors each backend's settings use. config.c, config-keys.c,
 * backend.c and every backend-NAME.c call down to here, never the other
 * way (no call cycle: tests/check-calls.py). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "path-util.h"
#include "strv.h"
#include "toml.h"
#include "config-internal.h"

void config_vspath_done(VsPath *p) {
        free(p->written);
        free(p->resolved);
        free(p->lexical);
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

int config_get_uint(const KeyCtx *c, uint64_t min, uint64_t max, uint64_t *ret, VsError **err) {
        const TomlValue *v = c->kv->value;
        if (v->integer < 0 || (uint64_t)v->integer < min || (uint64_t)v->integer > max)
                return config_error(err, -ERANGE, v->line, v->col, "%s.%s must be between %llu and %llu, not %lld",
                                    c->table, c->key, (unsigned long long)min, (unsigned long long)max,
                                    (long long)v->integer);
        *ret = (uint64_t)v->integer;
        return 0;
}

int config_get_string(const KeyCtx *c, bool allow_empty, char **ret, VsError **err) {
        const TomlValue *v = c->kv->value;
        if (strlen(v->string.ptr) != v->string.len)
                return config_error(err, -EINVAL, v->line, v->col, "%s.%s must not contain NUL characters", c->table,
                                    c->key);
        if (!allow_empty && v->string.len == 0)
                return config_error(err, -EINVAL, v->line, v->col, "%s.%s must not be empty", c->table, c->key);
        char *s = strdup(v->string.ptr);
        if (!s)
                return -ENOMEM;
        free(*ret);
        *ret = s;
        return 0;
}

const char *vs_backend_name(const VsBackendDef *b) {
        return b ? b->name : "unknown";
}

const void *backend_config(const VsPolicy *p, const VsBackendDef *def) {
        return p && p->backend == def ? p->backend_config : NULL;
}
