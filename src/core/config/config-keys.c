/* SPDX-License-Identifier: MIT */
/* vectora.toml's keys: one handler per key, and the tables that name them
 * (what test_docs.py checks against docs/config.md). */

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "forbidden.h"
#include "glob.h"
#include "path-util.h"
#include "secret-store.h"
#include "strbuf.h"
#include "strv.h"
#include "toml.h"
#include "config-internal.h"

/* ---- [sandbox] keys ----------------------------------------------------- */

static int h_enabled(const KeyCtx *c, VsError **err) {
        c->policy->sandboxed = c->kv->value->boolean;
        return 0;
}

static int h_backend(const KeyCtx *c, VsError **err) {
        const TomlValue *v = c->kv->value;
        const VsBackendDef *b = backend_def_find(v->string.ptr, v->string.len);
        if (b) {
                c->policy->backend = b;
                return 0;
        }
        _cleanup_strbuf_ StrBuf names = STRBUF_INIT;
        for (const VsBackendDef *const *d = vs_backend_defs; *d; d++)
                if (strbuf_appendf(&names, "%s\"%s\"", d == vs_backend_defs ? "" : ", ", (*d)->name) < 0)
                        return -ENOMEM;
        return config_error(err, -EINVAL, v->line, v->col, "sandbox.backend: unknown backend \"%s\"; use one of %s",
                            v->string.ptr, names.data ? names.data : "");
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
char *config_path_absolute(const char *written, const VsConfigEnv *env) {
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
                config_vspath_done(&(*list)[i]);
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
                _cleanup_free_ char *abs = config_path_absolute(v->string.ptr, c->env);
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
        /* Filled in place: one strv_extend per entry walked and grew the
         * list each time (quadratic in the entries). */
        _cleanup_strv_free_ char **l = calloc(arr->array.n + 1, sizeof(char *));
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
                if (!(l[i] = strdup(v->string.ptr)))
                        return -ENOMEM;
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

static int h_persistent_home(const KeyCtx *c, VsError **err) {
        c->policy->persistent_home = c->kv->value->boolean;
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
/* ["GITHUB_TOKEN", ...]: names of the host-held secrets (secret-store.h). */
static int h_secrets(const KeyCtx *c, VsError **err) {
        const TomlValue *arr = c->kv->value;
        VsPolicy *p = c->policy;
        if (arr->array.n > CONFIG_MAX_SECRETS)
                return config_error(err, -E2BIG, arr->line, arr->col, "sandbox.secrets has more than %d entries",
                                    CONFIG_MAX_SECRETS);
        _cleanup_free_ VsSecretUse *list = calloc(arr->array.n + 1, sizeof *list);
        if (!list)
                return -ENOMEM;
        size_t n = 0;
        int r = 0;
        for (size_t i = 0; i < arr->array.n && r >= 0; i++) {
                const TomlValue *v = arr->array.items[i];
                if (v->type != TOML_STRING || strlen(v->string.ptr) != v->string.len || !secret_name_valid(v->string.ptr))
                        r = config_error(err, -EINVAL, v->line, v->col,
                                         "sandbox.secrets[%zu] must be a secret's name ([A-Z_][A-Z0-9_]*, as given to "
                                         "vectora-sandbox secret set)", i);
                for (size_t j = 0; r >= 0 && j < n; j++)
                        if (streq(list[j].name, v->string.ptr))
                                r = config_error(err, -EINVAL, v->line, v->col, "sandbox.secrets[%zu]: %s is listed twice", i,
                                                 v->string.ptr);
                if (r >= 0 && !(list[n].name = strdup(v->string.ptr)))
                        r = -ENOMEM;
                if (r >= 0) {
                        list[n].line = v->line;
                        list[n++].col = v->col;
                }
        }
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(list[i].name);
                return r;
        }
        for (size_t i = 0; i < p->n_secrets; i++)
                free(p->secrets[i].name);
        free(p->secrets);
        p->secrets = TAKE_PTR(list);
        p->n_secrets = n;
        return 0;
}

static int h_idle_timeout(const KeyCtx *c, VsError **err) {
        return config_get_uint(c, 1, 7 * 24 * 3600, &c->policy->idle_timeout_s, err);
}

/* ---- [sandbox.limits] --------------------------------------------------- */

static int h_lim_timeout(const KeyCtx *c, VsError **err) {
        return config_get_uint(c, 1, 7 * 24 * 3600, &c->policy->limits.timeout_s, err);
}
static int h_lim_background_timeout(const KeyCtx *c, VsError **err) {
        return config_get_uint(c, 1, 30 * 24 * 3600, &c->policy->limits.background_timeout_s, err);
}
static int h_lim_max_output(const KeyCtx *c, VsError **err) {
        return config_get_uint(c, 1024, 64u << 20, &c->policy->limits.max_output, err);
}
static int h_lim_pids(const KeyCtx *c, VsError **err) {
        return config_get_uint(c, 8, 1u << 22, &c->policy->limits.pids, err);
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

static const KeyDef limits_keys[] = {
        { "timeout", TOML_INTEGER, h_lim_timeout },
        { "max_output", TOML_INTEGER, h_lim_max_output },
        { "pids", TOML_INTEGER, h_lim_pids },
        { "memory", TOML_ANY, h_lim_memory },
        { "background_timeout", TOML_INTEGER, h_lim_background_timeout },
};
static int sub_table(const KeyCtx *c, const KeyDef *defs, size_t n, const char *name, VsError **err) {
        KeyCtx base = *c;
        base.table = name;
        return config_dispatch_table(c->kv->value, defs, n, base, err);
}
static int h_limits(const KeyCtx *c, VsError **err) {
        return sub_table(c, limits_keys, ELEMENTSOF(limits_keys), "sandbox.limits", err);
}

const KeyDef config_sandbox_keys[] = {
        { "enabled", TOML_BOOL, h_enabled },
        { "backend", TOML_STRING, h_backend },
        { "rw_paths", TOML_ARRAY, h_paths },
        { "ro_paths", TOML_ARRAY, h_paths },
        { "mask", TOML_ARRAY, h_mask },
        { "protect", TOML_ARRAY, h_protect },
        { "git_init", TOML_BOOL, h_git_init },
        { "no_gpu", TOML_BOOL, h_no_gpu },
        { "persistent_home", TOML_BOOL, h_persistent_home },
        { "lockdown", TOML_BOOL, h_lockdown },
        { "network", TOML_ANY, h_network },
        { "idle_timeout", TOML_INTEGER, h_idle_timeout },
        { "ports", TOML_ARRAY, h_ports },
        { "secrets", TOML_ARRAY, h_secrets },
        { "http", TOML_ARRAY, config_http_table },
        { "limits", TOML_TABLE, h_limits },
};
const size_t config_n_sandbox_keys = ELEMENTSOF(config_sandbox_keys);

/* [sandbox.NAME]: a backend's own keys (backend.h), into its settings
 * object, made with its defaults the first time the table is met. */
int config_backend_table(const KeyCtx *c, VsError **err) {
        size_t i = 0;
        while (vs_backend_defs[i] && !streq(vs_backend_defs[i]->name, c->key))
                i++;
        const VsBackendDef *b = vs_backend_defs[i];
        if (!b)
                return -EINVAL;
        if (!c->backend_configs[i]) {
                void *cfg = calloc(1, b->config_size);
                if (!cfg)
                        return -ENOMEM;
                int r = b->config_init ? b->config_init(cfg) : 0;
                c->backend_configs[i] = cfg;
                if (r < 0)
                        return r;
        }
        _cleanup_free_ char *table = NULL;
        if (asprintf(&table, "sandbox.%s", b->name) < 0)
                return -ENOMEM;
        KeyCtx base = *c;
        base.table = table;
        base.backend_config = c->backend_configs[i];
        return config_dispatch_table(c->kv->value, b->keys, b->n_keys, base, err);
}
