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

#define CONFIG_MAX_SIZE (1u << 20)
#define CONFIG_MAX_PATHS 256
#define CONFIG_MAX_MASKS 4096

const char *vs_backend_name(VsBackend b) {
        static const char *const names[] = {
                [VS_BACKEND_LOCAL] = "local",
                [VS_BACKEND_DOCKER] = "docker",
                [VS_BACKEND_SSH] = "ssh",
                [VS_BACKEND_MODAL] = "modal",
        };
        return (unsigned)b < ELEMENTSOF(names) ? names[b] : "unknown";
}

static void vspath_done(VsPath *p) {
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
                vspath_done(&p->rw_paths[i]);
        free(p->rw_paths);
        for (size_t i = 0; i < p->n_ro; i++)
                vspath_done(&p->ro_paths[i]);
        free(p->ro_paths);
        strv_free(p->mask);
        strv_free(p->protect);
        for (size_t i = 0; i < p->n_net_rules; i++)
                net_rule_done(&p->net_rules[i]);
        free(p->net_rules);
        free(p->ports);
        free(p->docker.image);
        free(p->docker.docker);
        free(p->docker.host);
        free(p->ssh.host);
        free(p->ssh.user);
        free(p->ssh.identity_file);
        free(p->ssh.known_hosts);
        free(p->ssh.remote_root);
        free(p->ssh.worker_path);
        free(p->modal.app);
        free(p->modal.image);
        free(p->modal.region);
        free(p->modal.sync);
        free(p->modal.volume);
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

_printf_(5, 6) static int config_error(VsError **err, int code, unsigned line, unsigned col, const char *fmt, ...) {
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

typedef struct KeyCtx {
        VsPolicy *policy;
        const VsConfigEnv *env;
        const char *table; /* "sandbox", "sandbox.limits", ... */
        const char *key;
        const TomlKeyValue *kv;
} KeyCtx;

typedef int (*key_handler)(const KeyCtx *c, VsError **err);

/* A key whose handler checks the type itself ("memory": string or integer). */
#define TOML_ANY ((TomlType)-1)

typedef struct KeyDef {
        const char *name;
        TomlType type;
        key_handler handler;
} KeyDef;

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

static int dispatch_table(const TomlValue *t, const KeyDef *defs, size_t n_defs, KeyCtx base, VsError **err) {
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

static int get_uint(const KeyCtx *c, uint64_t min, uint64_t max, uint64_t *ret, VsError **err) {
        const TomlValue *v = c->kv->value;
        if (v->integer < 0 || (uint64_t)v->integer < min || (uint64_t)v->integer > max)
                return config_error(err, -ERANGE, v->line, v->col, "%s.%s must be between %llu and %llu, not %lld",
                                    c->table, c->key, (unsigned long long)min, (unsigned long long)max,
                                    (long long)v->integer);
        *ret = (uint64_t)v->integer;
        return 0;
}

static int get_string(const KeyCtx *c, bool allow_empty, char **ret, VsError **err) {
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

/* ---- [sandbox] keys ----------------------------------------------------- */

static int h_enabled(const KeyCtx *c, VsError **err) {
        c->policy->sandboxed = c->kv->value->boolean;
        return 0;
}

static int h_backend(const KeyCtx *c, VsError **err) {
        const TomlValue *v = c->kv->value;
        for (VsBackend b = VS_BACKEND_LOCAL; b <= VS_BACKEND_MODAL; b++)
                if (streq(v->string.ptr, vs_backend_name(b)) && strlen(v->string.ptr) == v->string.len) {
                        c->policy->backend = b;
                        return 0;
                }
        return config_error(err, -EINVAL, v->line, v->col,
                            "sandbox.backend: unknown backend \"%s\"; use one of \"local\", \"docker\", \"ssh\", \"modal\"",
                            v->string.ptr);
}

static int check_path_text(const KeyCtx *c, size_t idx, const TomlValue *v, const VsConfigEnv *env, VsError **err) {
        if (v->type != TOML_STRING)
                return config_error(err, -EINVAL, v->line, v->col, "%s.%s[%zu] must be a string, not %s", c->table,
                                    c->key, idx, toml_type_name(v->type));
        const char *s = v->string.ptr;
        if (strlen(s) != v->string.len)
                return config_error(err, -EINVAL, v->line, v->col, "%s.%s[%zu] must not contain NUL characters",
                                    c->table, c->key, idx);
        if (!*s)
                return config_error(err, -EINVAL, v->line, v->col,
                                    "%s.%s[%zu] is empty; use \".\" for the workspace root", c->table, c->key, idx);
        if (v->string.len >= PATH_MAX)
                return config_error(err, -ENAMETOOLONG, v->line, v->col, "%s.%s[%zu] is longer than %d bytes",
                                    c->table, c->key, idx, PATH_MAX - 1);
        if (s[0] == '~' && s[1] != 0 && s[1] != '/')
                return config_error(err, -EINVAL, v->line, v->col,
                                    "%s.%s[%zu]: \"%s\": only \"~\" or \"~/...\" (the user's own home) is supported",
                                    c->table, c->key, idx, s);
        if (s[0] == '~' && !env->home)
                return config_error(err, -EINVAL, v->line, v->col,
                                    "%s.%s[%zu]: \"%s\" uses ~ but the home directory is unknown; write an absolute path",
                                    c->table, c->key, idx, s);
        return 0;
}

/* Lexical absolute form of a written path (no OS calls). */
static char *path_absolute(const char *written, const VsConfigEnv *env) {
        _cleanup_free_ char *joined = NULL;
        if (written[0] == '/')
                joined = strdup(written);
        else if (written[0] == '~')
                joined = path_join(env->home, written + 1);
        else
                joined = path_join(env->workspace, written);
        if (!joined)
                return NULL;
        return path_normalize(joined);
}


static int h_paths(const KeyCtx *c, VsError **err) {
        const TomlValue *arr = c->kv->value;
        bool rw = streq(c->key, "rw_paths");
        VsPath **list = rw ? &c->policy->rw_paths : &c->policy->ro_paths;
        size_t *n = rw ? &c->policy->n_rw : &c->policy->n_ro;

        if (arr->array.n > CONFIG_MAX_PATHS)
                return config_error(err, -E2BIG, arr->line, arr->col, "%s.%s has more than %d entries", c->table,
                                    c->key, CONFIG_MAX_PATHS);
        for (size_t i = 0; i < *n; i++)
                vspath_done(&(*list)[i]);
        free(*list);
        *list = calloc(arr->array.n ? arr->array.n : 1, sizeof(VsPath));
        *n = 0;
        if (!*list)
                return -ENOMEM;
        for (size_t i = 0; i < arr->array.n; i++) {
                const TomlValue *v = arr->array.items[i];
                int r = check_path_text(c, i, v, c->env, err);
                if (r < 0)
                        return r;
                VsPath *p = &(*list)[(*n)++];
                p->written = strdup(v->string.ptr);
                p->line = v->line;
                p->col = v->col;
                if (!p->written)
                        return -ENOMEM;
                /* By prefix (forbidden.h): a system directory, or what
                 * shows the host's secrets or the daemon's socket. */
                _cleanup_free_ char *abs = path_absolute(v->string.ptr, c->env);
                if (!abs)
                        return -ENOMEM;
                char why[512];
                if (forbidden_lexical(abs, rw, why, sizeof why))
                        return config_error(err, -EPERM, v->line, v->col,
                                            "%s.%s[%zu]: \"%s\"%s%s%s is %s; list the project directories the agent needs instead",
                                            c->table, c->key, i, v->string.ptr, streq(abs, v->string.ptr) ? "" : " (",
                                            streq(abs, v->string.ptr) ? "" : abs, streq(abs, v->string.ptr) ? "" : ")", why);
        }
        return 0;
}

/* A list of globs (mask, protect), each compiled once to validate it. */
static int glob_list(const KeyCtx *c, char ***ret, VsError **err) {
        const TomlValue *arr = c->kv->value;
        if (arr->array.n > CONFIG_MAX_MASKS)
                return config_error(err, -E2BIG, arr->line, arr->col, "sandbox.%s has more than %d entries", c->key,
                                    CONFIG_MAX_MASKS);
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < arr->array.n; i++) {
                const TomlValue *v = arr->array.items[i];
                if (v->type != TOML_STRING)
                        return config_error(err, -EINVAL, v->line, v->col, "sandbox.%s[%zu] must be a string, not %s",
                                            c->key, i, toml_type_name(v->type));
                if (strlen(v->string.ptr) != v->string.len)
                        return config_error(err, -EINVAL, v->line, v->col,
                                            "sandbox.%s[%zu] must not contain NUL characters", c->key, i);
                _cleanup_(glob_freep) VsGlob *g = NULL;
                _cleanup_(vs_error_freep) VsError *gerr = NULL;
                int r = glob_compile(v->string.ptr, &g, &gerr);
                if (r < 0)
                        return config_error(err, r, v->line, v->col, "sandbox.%s[%zu]: \"%s\": %s", c->key, i,
                                            v->string.ptr, vs_error_message(gerr));
                r = strv_extend(&l, v->string.ptr);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int h_mask(const KeyCtx *c, VsError **err) {
        char **l = NULL;
        int r = glob_list(c, &l, err);
        if (r < 0)
                return r;
        strv_free(c->policy->mask);
        c->policy->mask = l;
        return 0;
}

static int h_protect(const KeyCtx *c, VsError **err) {
        char **l = NULL;
        int r = glob_list(c, &l, err);
        if (r < 0)
                return r;
        strv_free(c->policy->protect);
        c->policy->protect = l;
        return 0;
}

static int h_git_init(const KeyCtx *c, VsError **err) {
        c->policy->git_init = c->kv->value->boolean;
        return 0;
}

static int h_no_gpu(const KeyCtx *c, VsError **err) {
        c->policy->no_gpu = c->kv->value->boolean;
        return 0;
}
static int h_lockdown(const KeyCtx *c, VsError **err) {
        c->policy->lockdown = c->kv->value->boolean;
        return 0;
}
/* A port number 1..65535 from its text; 0 when it is not one. */
static uint16_t port_of(const char *s, size_t n) {
        unsigned v = 0;
        if (n == 0 || n > 5)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return 0;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        return v >= 1 && v <= 65535 ? (uint16_t)v : 0;
}

/* [3000, "8080:80"]: a host loopback port (the same in the jail), or a
 * "host:jail" pair. */
static int h_ports(const KeyCtx *c, VsError **err) {
        const TomlValue *arr = c->kv->value;
        VsPolicy *p = c->policy;
        if (arr->array.n > CONFIG_MAX_PORTS)
                return config_error(err, -E2BIG, arr->line, arr->col, "sandbox.ports has more than %d entries",
                                    CONFIG_MAX_PORTS);
        _cleanup_free_ VsPortForward *ports = calloc(arr->array.n + 1, sizeof *ports);
        if (!ports)
                return -ENOMEM;
        for (size_t i = 0; i < arr->array.n; i++) {
                const TomlValue *v = arr->array.items[i];
                VsPortForward *f = &ports[i];
                if (v->type == TOML_INTEGER) {
                        if (v->integer < 1 || v->integer > 65535)
                                return config_error(err, -EINVAL, v->line, v->col,
                                                    "sandbox.ports[%zu]: %lld is not a port (1..65535)", i,
                                                    (long long)v->integer);
                        f->host = f->jail = (uint16_t)v->integer;
                } else if (v->type == TOML_STRING) {
                        const char *s = v->string.ptr, *colon = memchr(s, ':', v->string.len);
                        f->host = port_of(s, colon ? (size_t)(colon - s) : v->string.len);
                        f->jail = colon ? port_of(colon + 1, v->string.len - (size_t)(colon + 1 - s)) : f->host;
                        if (!f->host || !f->jail)
                                return config_error(err, -EINVAL, v->line, v->col,
                                                    "sandbox.ports[%zu]: \"%s\" is not PORT or \"HOST:JAIL\" (ports 1..65535)",
                                                    i, s);
                } else
                        return config_error(err, -EINVAL, v->line, v->col,
                                            "sandbox.ports[%zu] must be a port (3000) or \"HOST:JAIL\" (\"8080:80\"), not %s", i,
                                            toml_type_name(v->type));
                f->line = v->line;
                f->col = v->col;
                for (size_t j = 0; j < i; j++)
                        if (ports[j].host == f->host)
                                return config_error(err, -EINVAL, v->line, v->col,
                                                    "sandbox.ports[%zu]: host port %u is already forwarded (ports[%zu])", i,
                                                    f->host, j);
        }
        free(p->ports);
        p->ports = TAKE_PTR(ports);
        p->n_ports = arr->array.n;
        return 0;
}

#define CONFIG_MAX_NET_RULES 1024

/* true | false | ["host", "*.suffix", "host:port", "10.0.0.5", "[fd00::1]:80"] */
static int h_network(const KeyCtx *c, VsError **err) {
        const TomlValue *arr = c->kv->value;
        VsPolicy *p = c->policy;
        if (arr->type == TOML_BOOL) {
                p->network = arr->boolean;
                return 0;
        }
        if (arr->type != TOML_ARRAY)
                return config_error(err, -EINVAL, arr->line, arr->col,
                                    "sandbox.network must be true, false or a list of hosts like [\"pypi.org\", \"*.npmjs.org\", \"github.com:443\"], not %s",
                                    toml_type_name(arr->type));
        if (arr->array.n > CONFIG_MAX_NET_RULES)
                return config_error(err, -E2BIG, arr->line, arr->col, "sandbox.network has more than %d entries",
                                    CONFIG_MAX_NET_RULES);
        VsNetRule *rules = calloc(arr->array.n + 1, sizeof *rules);
        if (!rules)
                return -ENOMEM;
        size_t n = 0;
        int r = 0;
        for (size_t i = 0; i < arr->array.n && r >= 0; i++) {
                const TomlValue *v = arr->array.items[i];
                _cleanup_(vs_error_freep) VsError *nerr = NULL;
                if (v->type != TOML_STRING)
                        r = config_error(err, -EINVAL, v->line, v->col, "sandbox.network[%zu] must be a string, not %s",
                                         i, toml_type_name(v->type));
                else if (strlen(v->string.ptr) != v->string.len)
                        r = config_error(err, -EINVAL, v->line, v->col,
                                         "sandbox.network[%zu] must not contain NUL characters", i);
                else if ((r = net_rule_parse(v->string.ptr, &rules[n], &nerr)) < 0) {
                        if (r != -ENOMEM)
                                r = config_error(err, r, v->line, v->col, "sandbox.network[%zu]: \"%s\": %s", i,
                                                 v->string.ptr, vs_error_message(nerr));
                } else {
                        rules[n].line = v->line;
                        rules[n].col = v->col;
                        if (!(rules[n++].written = strdup(v->string.ptr)))
                                r = -ENOMEM;
                }
        }
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        net_rule_done(&rules[i]);
                free(rules);
                return r;
        }
        for (size_t i = 0; i < p->n_net_rules; i++)
                net_rule_done(&p->net_rules[i]);
        free(p->net_rules);
        p->net_rules = rules;
        p->n_net_rules = n;
        p->net_allowlist = true;
        /* The jail keeps its own empty namespace; the proxy is its only way out. */
        p->network = false;
        return 0;
}
static int h_idle_timeout(const KeyCtx *c, VsError **err) {
        return get_uint(c, 1, 7 * 24 * 3600, &c->policy->idle_timeout_s, err);
}

/* ---- [sandbox.limits] --------------------------------------------------- */

static int h_lim_timeout(const KeyCtx *c, VsError **err) {
        return get_uint(c, 1, 7 * 24 * 3600, &c->policy->limits.timeout_s, err);
}
static int h_lim_background_timeout(const KeyCtx *c, VsError **err) {
        return get_uint(c, 1, 30 * 24 * 3600, &c->policy->limits.background_timeout_s, err);
}
static int h_lim_max_output(const KeyCtx *c, VsError **err) {
        return get_uint(c, 1024, 64u << 20, &c->policy->limits.max_output, err);
}
static int h_lim_pids(const KeyCtx *c, VsError **err) {
        return get_uint(c, 8, 1u << 22, &c->policy->limits.pids, err);
}
static int h_lim_memory(const KeyCtx *c, VsError **err) {
        const TomlValue *v = c->kv->value;
        uint64_t m = 0;
        if (v->type == TOML_INTEGER) {
                if (v->integer <= 0)
                        return config_error(err, -ERANGE, v->line, v->col,
                                            "sandbox.limits.memory must be positive (bytes, or a string like \"2G\")");
                m = (uint64_t)v->integer;
        } else if (v->type == TOML_STRING) {
                int r = parse_size(v->string.ptr, &m);
                if (r < 0 || strlen(v->string.ptr) != v->string.len)
                        return config_error(err, -EINVAL, v->line, v->col,
                                            "sandbox.limits.memory: \"%s\" is not a size; write e.g. \"512M\" or \"2G\"",
                                            v->string.ptr);
        } else
                return config_error(err, -EINVAL, v->line, v->col,
                                    "sandbox.limits.memory must be a string like \"2G\" or an integer, not %s",
                                    toml_type_name(v->type));
        if (m < (16u << 20))
                return config_error(err, -ERANGE, v->line, v->col,
                                    "sandbox.limits.memory must be at least 16M; a smaller jail cannot start");
        c->policy->limits.memory = m;
        return 0;
}


/* ---- [sandbox.docker] / [sandbox.ssh] / [sandbox.modal] ------------------ */

static int h_docker_image(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->docker.image, err);
}
static int h_docker_docker(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->docker.docker, err);
}
static int h_docker_host(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->docker.host, err);
}
static int h_ssh_host(const KeyCtx *c, VsError **err) {
        int r = get_string(c, false, &c->policy->ssh.host, err);
        if (r >= 0 && c->policy->ssh.host[0] == '-')
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.host must not start with '-'");
        return r;
}
static int h_ssh_user(const KeyCtx *c, VsError **err) {
        int r = get_string(c, false, &c->policy->ssh.user, err);
        if (r >= 0 && (c->policy->ssh.user[0] == '-' || strpbrk(c->policy->ssh.user, "@ \t")))
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.user must be a plain user name");
        return r;
}
static int h_ssh_port(const KeyCtx *c, VsError **err) {
        uint64_t p = 0;
        int r = get_uint(c, 1, 65535, &p, err);
        if (r >= 0)
                c->policy->ssh.port = (unsigned)p;
        return r;
}
static int h_ssh_identity(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->ssh.identity_file, err);
}
static int h_ssh_known_hosts(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->ssh.known_hosts, err);
}
static int h_ssh_remote_root(const KeyCtx *c, VsError **err) {
        int r = get_string(c, false, &c->policy->ssh.remote_root, err);
        if (r >= 0 && c->policy->ssh.remote_root[0] != '/')
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.remote_root must be an absolute path on the remote host");
        return r;
}
static int h_ssh_worker_path(const KeyCtx *c, VsError **err) {
        int r = get_string(c, false, &c->policy->ssh.worker_path, err);
        if (r >= 0 && c->policy->ssh.worker_path[0] != '/')
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.worker_path must be an absolute path on the remote host");
        return r;
}
static int h_modal_app(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->modal.app, err);
}
static int h_modal_image(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->modal.image, err);
}
static int h_modal_timeout(const KeyCtx *c, VsError **err) {
        return get_uint(c, 10, 24 * 3600, &c->policy->modal.timeout_s, err);
}
static int h_modal_region(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->modal.region, err);
}
static int h_modal_cpu(const KeyCtx *c, VsError **err) {
        const TomlValue *v = c->kv->value;
        double d = v->type == TOML_INTEGER ? (double)v->integer : v->floating;
        if (!(d >= 0.125 && d <= 64))
                return config_error(err, -ERANGE, v->line, v->col, "sandbox.modal.cpu must be between 0.125 and 64");
        c->policy->modal.cpu = d;
        return 0;
}
static int h_modal_memory(const KeyCtx *c, VsError **err) {
        return get_uint(c, 128, 1u << 20, &c->policy->modal.memory_mib, err);
}
static int h_modal_sync(const KeyCtx *c, VsError **err) {
        const TomlValue *v = c->kv->value;
        if (!streq(v->string.ptr, "upload") && !streq(v->string.ptr, "volume"))
                return config_error(err, -EINVAL, v->line, v->col,
                                    "sandbox.modal.sync must be \"upload\" or \"volume\", not \"%s\"", v->string.ptr);
        return get_string(c, false, &c->policy->modal.sync, err);
}
static int h_modal_volume(const KeyCtx *c, VsError **err) {
        return get_string(c, false, &c->policy->modal.volume, err);
}

static const KeyDef limits_keys[] = {
        { "timeout", TOML_INTEGER, h_lim_timeout },
        { "max_output", TOML_INTEGER, h_lim_max_output },
        { "pids", TOML_INTEGER, h_lim_pids },
        { "memory", TOML_ANY, h_lim_memory },
        { "background_timeout", TOML_INTEGER, h_lim_background_timeout },
};
static const KeyDef docker_keys[] = {
        { "image", TOML_STRING, h_docker_image },
        { "docker", TOML_STRING, h_docker_docker },
        { "host", TOML_STRING, h_docker_host },
};
static const KeyDef ssh_keys[] = {
        { "host", TOML_STRING, h_ssh_host },
        { "user", TOML_STRING, h_ssh_user },
        { "port", TOML_INTEGER, h_ssh_port },
        { "identity_file", TOML_STRING, h_ssh_identity },
        { "known_hosts", TOML_STRING, h_ssh_known_hosts },
        { "remote_root", TOML_STRING, h_ssh_remote_root },
        { "worker_path", TOML_STRING, h_ssh_worker_path },
};
static const KeyDef modal_keys[] = {
        { "app", TOML_STRING, h_modal_app },
        { "image", TOML_STRING, h_modal_image },
        { "timeout", TOML_INTEGER, h_modal_timeout },
        { "region", TOML_STRING, h_modal_region },
        { "cpu", TOML_FLOAT, h_modal_cpu },
        { "memory", TOML_INTEGER, h_modal_memory },
        { "sync", TOML_STRING, h_modal_sync },
        { "volume", TOML_STRING, h_modal_volume },
};

static int sub_table(const KeyCtx *c, const KeyDef *defs, size_t n, const char *name, VsError **err) {
        KeyCtx base = *c;
        base.table = name;
        return dispatch_table(c->kv->value, defs, n, base, err);
}
static int h_limits(const KeyCtx *c, VsError **err) {
        return sub_table(c, limits_keys, ELEMENTSOF(limits_keys), "sandbox.limits", err);
}
static int h_docker(const KeyCtx *c, VsError **err) {
        return sub_table(c, docker_keys, ELEMENTSOF(docker_keys), "sandbox.docker", err);
}
static int h_ssh(const KeyCtx *c, VsError **err) {
        return sub_table(c, ssh_keys, ELEMENTSOF(ssh_keys), "sandbox.ssh", err);
}
static int h_modal(const KeyCtx *c, VsError **err) {
        return sub_table(c, modal_keys, ELEMENTSOF(modal_keys), "sandbox.modal", err);
}

static const KeyDef sandbox_keys[] = {
        { "enabled", TOML_BOOL, h_enabled },
        { "backend", TOML_STRING, h_backend },
        { "rw_paths", TOML_ARRAY, h_paths },
        { "ro_paths", TOML_ARRAY, h_paths },
        { "mask", TOML_ARRAY, h_mask },
        { "protect", TOML_ARRAY, h_protect },
        { "git_init", TOML_BOOL, h_git_init },
        { "no_gpu", TOML_BOOL, h_no_gpu },
        { "lockdown", TOML_BOOL, h_lockdown },
        { "network", TOML_ANY, h_network },
        { "idle_timeout", TOML_INTEGER, h_idle_timeout },
        { "ports", TOML_ARRAY, h_ports },
        { "limits", TOML_TABLE, h_limits },
        { "docker", TOML_TABLE, h_docker },
        { "ssh", TOML_TABLE, h_ssh },
        { "modal", TOML_TABLE, h_modal },
};

static void policy_defaults(VsPolicy *p) {
        p->sandboxed = true;
        p->backend = VS_BACKEND_LOCAL;
        p->no_gpu = true;
        p->lockdown = false;
        p->network = true;
        p->idle_timeout_s = 600;
        p->limits.timeout_s = 120;
        p->limits.max_output = 1u << 20;
        p->limits.pids = 512;
        p->limits.memory = 2ull << 30;
        p->ssh.port = 22;
        p->modal.timeout_s = 3600;
}

static int set_default_strings(VsPolicy *p) {
        if (!p->docker.docker && !(p->docker.docker = strdup("docker")))
                return -ENOMEM;
        if (!p->modal.app && !(p->modal.app = strdup("vectora-sandbox")))
                return -ENOMEM;
        if (!p->modal.sync && !(p->modal.sync = strdup("upload")))
                return -ENOMEM;
        if (!p->ssh.worker_path && !(p->ssh.worker_path = strdup("~/.cache/vectora-sandbox/vectora-worker")))
                return -ENOMEM;
        return 0;
}

/* Cross-key rules, located at the [sandbox] table. */
static int validate_policy(VsPolicy *p, const TomlValue *sandbox, VsError **err) {
        if (p->backend == VS_BACKEND_DOCKER && !p->docker.image)
                return config_error(err, -EINVAL, sandbox->line, sandbox->col,
                                    "sandbox: backend = \"docker\" needs sandbox.docker.image (a local image name, e.g. image = \"debian:12\")");
        if (p->backend == VS_BACKEND_SSH && !p->ssh.host)
                return config_error(err, -EINVAL, sandbox->line, sandbox->col,
                                    "sandbox: backend = \"ssh\" needs sandbox.ssh.host");
        if (p->backend == VS_BACKEND_MODAL && !p->modal.image)
                return config_error(err, -EINVAL, sandbox->line, sandbox->col,
                                    "sandbox: backend = \"modal\" needs sandbox.modal.image (a registry image name)");
        /* A table for another backend than the chosen one: a backend switched
         * without its settings, or settings believed in force. Refused,
         * located, rather than silently ignored. */
        static const VsBackend tabled[] = { VS_BACKEND_DOCKER, VS_BACKEND_SSH, VS_BACKEND_MODAL };
        for (size_t i = 0; i < ELEMENTSOF(tabled); i++) {
                const char *name = vs_backend_name(tabled[i]);
                const TomlKeyValue *kv = toml_table_get(sandbox, name);
                if (kv && p->backend != tabled[i])
                        return config_error(err, -EINVAL, kv->line, kv->col,
                                            "sandbox.%s: settings for the %s backend, but backend = \"%s\"; set backend = \"%s\" or remove [sandbox.%s]",
                                            name, name, vs_backend_name(p->backend), name, name);
        }
        if (p->modal.sync && streq(p->modal.sync, "volume") && !p->modal.volume)
                return config_error(err, -EINVAL, sandbox->line, sandbox->col,
                                    "sandbox.modal: sync = \"volume\" needs volume = \"NAME\"");
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

        KeyCtx base = { .policy = p, .env = env, .table = "sandbox" };
        r = dispatch_table(sb->value, sandbox_keys, ELEMENTSOF(sandbox_keys), base, err);
        if (r < 0)
                return r;
        r = set_default_strings(p);
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

/* ---- resolution (touches the OS) ------------------------------------------ */

static int resolve_one(VsPolicy *p, VsPath *vp, const char *list, size_t idx, const VsConfigEnv *env, VsError **err) {
        _cleanup_free_ char *abs = path_absolute(vp->written, env);
        if (!abs)
                return -ENOMEM;
        struct stat st;
        if (lstat(abs, &st) < 0) {
                if (errno != ENOENT)
                        return config_error(err, -errno, vp->line, vp->col, "sandbox.%s[%zu]: \"%s\": cannot inspect %s: %m",
                                            list, idx, vp->written, abs);
                if (p->lockdown)
                        return config_error(err, -ENOENT, vp->line, vp->col,
                                            "sandbox.%s[%zu]: \"%s\" (%s) does not exist; lockdown refuses a listed path that is missing: create it or remove it from the list",
                                            list, idx, vp->written, abs);
                vp->missing = true;
                return 0;
        }
        char *real = realpath(abs, NULL);
        if (!real)
                return config_error(err, -errno, vp->line, vp->col, "sandbox.%s[%zu]: \"%s\": cannot resolve %s: %m", list,
                                    idx, vp->written, abs);
        if (p->lockdown && !streq(real, abs)) {
                int r = config_error(err, -ELOOP, vp->line, vp->col,
                                     "sandbox.%s[%zu]: \"%s\" goes through a symlink (%s -> %s); lockdown refuses ambiguous paths: list the real path",
                                     list, idx, vp->written, abs, real);
                free(real);
                return r;
        }
        /* Again on the real path (a symlink may lead into /etc), and
         * against the host's accounts: another user's home, or a
         * directory holding the caller's home or runtime directory. */
        struct stat wst;
        char why[512];
        VsHomes homes = { 0 };
        int hr = forbidden_homes_of(stat(p->workspace, &wst) == 0 ? wst.st_uid : getuid(), &homes);
        if (hr < 0) {
                free(real);
                return hr;
        }
        homes.caller_home = env->home;
        homes.runtime_dir = getenv("XDG_RUNTIME_DIR");
        bool bad = forbidden_resolved(real, streq(list, "rw_paths"), &homes, why, sizeof why) != NULL;
        forbidden_homes_done(&homes);
        if (bad) {
                int r = config_error(err, -EPERM, vp->line, vp->col,
                                     "sandbox.%s[%zu]: \"%s\" resolves to %s, which is %s; list the project directories the agent needs instead",
                                     list, idx, vp->written, real, why);
                free(real);
                return r;
        }
        free(vp->resolved);
        vp->resolved = real;
        return 0;
}

int config_resolve(VsPolicy *p, VsError **err) {
        if (!p->sandboxed)
                return 0;
        const char *home = getenv("HOME");
        VsConfigEnv env = { .workspace = p->workspace, .home = home && home[0] == '/' ? home : NULL };
        for (size_t i = 0; i < p->n_rw; i++) {
                int r = resolve_one(p, &p->rw_paths[i], "rw_paths", i, &env, err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < p->n_ro; i++) {
                int r = resolve_one(p, &p->ro_paths[i], "ro_paths", i, &env, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

#define NOT_REGULAR_FMT                                                                                              \
        VS_CONFIG_FILE ": %s is %s, not a regular file; replace it with a regular file (every tool call in this "     \
                       "workspace is refused until then)"

static const char *file_type_name(mode_t m) {
        if (S_ISFIFO(m))
                return "a FIFO";
        if (S_ISSOCK(m))
                return "a socket";
        if (S_ISCHR(m) || S_ISBLK(m))
                return "a device";
        if (S_ISDIR(m))
                return "a directory";
        return "not a regular file";
}

int config_from_text(const char *workspace, const char *text, size_t len, VsPolicy **ret, VsError **err) {
        const char *home = getenv("HOME");
        VsConfigEnv env = { .workspace = workspace, .home = home && home[0] == '/' ? home : NULL };
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        int r = config_parse(text, len, &env, &p, err);
        if (r < 0)
                return r;
        if ((r = config_resolve(p, err)) < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

int config_load(const char *workspace_dir, VsPolicy **ret, VsError **err) {
        return config_load_text(workspace_dir, ret, NULL, NULL, err);
}

int config_load_text(const char *workspace_dir, VsPolicy **ret, char **ret_text, size_t *ret_len, VsError **err) {
        _cleanup_free_ char *ws = realpath(workspace_dir, NULL);
        if (!ws)
                return vs_error_set_kind(err, -errno, "workspace_invalid", "workspace %s: %m", workspace_dir);
        struct stat st;
        if (stat(ws, &st) < 0 || !S_ISDIR(st.st_mode))
                return vs_error_set_kind(err, -ENOTDIR, "workspace_invalid", "workspace %s is not a directory", ws);

        _cleanup_free_ char *cfg = path_join(ws, VS_CONFIG_FILE);
        if (!cfg)
                return -ENOMEM;
        /* O_NONBLOCK: a FIFO named vectora.toml (anything the agent can
         * write can hold one) must not block the daemon's only loop in
         * open(); O_NOFOLLOW: the policy is this file, not what a link in
         * the tree points at. The type is checked before reading. */
        _cleanup_close_ int fd = open(cfg, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT) {
                _cleanup_(policy_freep) VsPolicy *p = calloc(1, sizeof *p);
                if (!p)
                        return -ENOMEM;
                p->workspace = TAKE_PTR(ws);
                p->config_path = TAKE_PTR(cfg);
                p->unsandboxed_reason = strdup("no vectora.toml in the workspace");
                if (!p->unsandboxed_reason)
                        return -ENOMEM;
                *ret = TAKE_PTR(p);
                if (ret_text)
                        *ret_text = NULL;
                if (ret_len)
                        *ret_len = 0;
                return 0;
        }
        if (fd < 0) {
                /* A socket fails open() with ENXIO: say what it is instead. */
                struct stat lst;
                if (errno == ENXIO && lstat(cfg, &lst) == 0 && !S_ISREG(lst.st_mode))
                        return vs_error_set_kind(err, -EINVAL, "config_invalid", NOT_REGULAR_FMT, cfg,
                                                 file_type_name(lst.st_mode));
                if (errno == ELOOP)
                        return vs_error_set_kind(err, -ELOOP, "config_invalid",
                                                 VS_CONFIG_FILE ": is a symlink; the policy file must be a regular file in the workspace");
                return vs_error_set_kind(err, -errno, "config_invalid", VS_CONFIG_FILE ": cannot open %s: %m", cfg);
        }
        if (fstat(fd, &st) < 0)
                return vs_error_set_kind(err, -errno, "config_invalid", VS_CONFIG_FILE ": %m");
        if (!S_ISREG(st.st_mode))
                return vs_error_set_kind(err, -EINVAL, "config_invalid", NOT_REGULAR_FMT, cfg, file_type_name(st.st_mode));

        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_fd_all(fd, CONFIG_MAX_SIZE, &text, &len);
        if (r == -EFBIG)
                return vs_error_set_kind(err, r, "config_invalid", VS_CONFIG_FILE ": larger than %u bytes",
                                         CONFIG_MAX_SIZE);
        if (r < 0)
                return vs_error_set_kind(err, r, "config_invalid", VS_CONFIG_FILE ": read failed: %s", strerror(-r));

        _cleanup_(policy_freep) VsPolicy *p = NULL;
        if ((r = config_from_text(ws, text, len, &p, err)) < 0)
                return r;
        p->config_stat = st;
        p->has_config_stat = true;
        *ret = TAKE_PTR(p);
        if (ret_len)
                *ret_len = len;
        if (ret_text)
                *ret_text = TAKE_PTR(text);
        return 0;
}

/* Files the host (its editor, direnv, agents) runs or obeys later, at any
 * depth: a subdirectory is opened as a project too. */
const char *const VS_PROTECT_DEFAULT[] = {
        ".envrc",          "**/.vscode/tasks.json",    "**/.vscode/settings.json",
        ".mcp.json",       "**/.claude/settings.json", "**/.claude/settings.local.json",
        NULL,
};

int config_protected_paths(const VsPolicy *p, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        /* vectora.toml: the agent must not switch its own sandbox off.
         * The .git control files: what git executes or obeys (hooks
         * directly; config through core.hooksPath, core.fsmonitor,
         * core.sshCommand and friends; commondir moves both elsewhere).
         * These are the root .git's; the jail plan adds those of a .git
         * file's target, submodules and worktrees (git-control.h). */
        static const char *const rel[] = { VS_CONFIG_FILE,
                                           ".git/hooks",
                                           ".git/config",
                                           ".git/config.worktree",
                                           ".git/info/attributes",
                                           ".git/info/exclude",
                                           ".git/info/sparse-checkout",
                                           ".git/info/grafts",
                                           ".git/commondir",
                                           ".git/remotes",
                                           ".git/branches",
                                           ".git/objects/info/alternates" };
        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                int r = strv_consume(&l, path_join(p->workspace, rel[i]));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
