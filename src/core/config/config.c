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

void policy_free(VsPolicy *p) {
        if (!p)
                return;
        policy_sets_done(p);
        free(p->workspace);
        free(p->config_path);
        free(p->unsandboxed_reason);
        for (size_t i = 0; i < p->n_rw; i++)
                config_vspath_done(&p->rw_paths[i]);
        free(p->rw_paths);
        for (size_t i = 0; i < p->n_ro; i++)
                config_vspath_done(&p->ro_paths[i]);
        free(p->ro_paths);
        strv_free(p->pending_listed);
        strv_free(p->mask);
        strv_free(p->protect);
        for (size_t i = 0; i < p->n_net_rules; i++)
                net_rule_done(&p->net_rules[i]);
        free(p->net_rules);
        free(p->ports);
        for (size_t i = 0; i < p->n_secrets; i++)
                free(p->secrets[i].name);
        free(p->secrets);
        config_http_done(p);
        if (p->backend_config && p->backend && p->backend->config_done)
                p->backend->config_done(p->backend_config);
        free(p->backend_config);
        free(p);
}

/* ---- located errors -------------------------------------------------- */

/* ---- table-driven decoding of TOML tables ------------------------------ */

static void policy_defaults(VsPolicy *p) {
        p->sandboxed = true;
        p->backend = backend_def_default();
        p->no_gpu = true;
        p->persistent_home = true;
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

/* secrets = [...] need the proxy: an allowlist (which of its entries
 * each secret's hosts need is checked against the store,
 * approval_check_secrets()), on a backend whose jail goes out through
 * this host's proxy. */
static int validate_secrets(const VsPolicy *p, VsError **err) {
        if (!p->n_secrets)
                return 0;
        const VsSecretUse *s = &p->secrets[0];
        /* ssh and Modal run the jail elsewhere: its requests never pass
         * the proxy that would put the value in. */
        if (streq(vs_backend_name(p->backend), "ssh") || streq(vs_backend_name(p->backend), "modal"))
                return config_error(err, -EINVAL, s->line, s->col,
                                    "sandbox.secrets: the %s backend cannot keep secrets out of its jail yet (the value is put in by "
                                    "this host's proxy); use backend = \"local\" or \"docker\", or remove secrets",
                                    vs_backend_name(p->backend));
        if (p->lockdown)
                return config_error(err, -EINVAL, s->line, s->col,
                                    "sandbox.secrets: lockdown allows no network, so no secret can be used; remove secrets or lockdown");
        if (!p->net_allowlist)
                return config_error(err, -EINVAL, s->line, s->col,
                                    "sandbox.secrets needs network = [...] listing each secret's hosts (the proxy puts the value in "
                                    "only there); network = %s %s", p->network ? "true" : "false",
                                    p->network ? "goes around the proxy" : "reaches no host");
        return 0;
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
        if ((r = validate_secrets(p, err)) < 0 || (r = config_http_validate(p, err)) < 0)
                return r;
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
        if ((r = policy_compile_sets(p, err)) < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

