/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "policy-json.h"
#include "protect-absent.h"
#include "strv.h"
#include "tools.h"

static void print_paths(const char *name, const VsPath *l, size_t n) {
        printf("%-13s", name);
        if (n == 0)
                printf("(none)");
        for (size_t i = 0; i < n; i++)
                printf("%s%s%s%s%s", i ? ", " : "", l[i].resolved ? l[i].resolved : l[i].written,
                       l[i].resolved && !streq(l[i].resolved, l[i].written) ? " (\"" : "",
                       l[i].resolved && !streq(l[i].resolved, l[i].written) ? l[i].written : "",
                       l[i].missing ? " (missing: ignored)" : l[i].resolved && !streq(l[i].resolved, l[i].written) ? "\")" : "");
        printf("\n");
}

static void print_policy(const VsPolicy *p, const char *dir) {
        printf("%-13s%s\n%-13s%s\n", "workspace", p->workspace, "config", p->config_path);
        if (!streq(dir, p->workspace))
                printf("%-13s%s (a subdirectory: it runs in this workspace's jail, with that cwd)\n", "directory", dir);
        if (!p->sandboxed) {
                printf("%-13sno: unsandboxed (%s); tools act directly on the host\n", "sandboxed",
                       p->unsandboxed_reason);
                return;
        }
        printf("%-13syes\n%-13s%s\n", "sandboxed", "backend", vs_backend_name(p->backend));
        print_paths("rw_paths", p->rw_paths, p->n_rw);
        print_paths("ro_paths", p->ro_paths, p->n_ro);
        _cleanup_free_ char *m = strv_join(p->mask, ", ");
        printf("%-13s%s\n", "mask", m && *m ? m : "(none)");
        _cleanup_strv_free_ char **prot = NULL;
        if (config_protected_paths(p, &prot) >= 0) {
                _cleanup_free_ char *j = strv_join(prot, ", ");
                printf("%-13s%s (read-only)\n", "protected", j ? j : "");
        }
        _cleanup_free_ char *g = strv_join(p->protect, ", ");
        printf("%-13s%s (read-only; a missing one a glob spells out gets a placeholder so the jail cannot create it)\n", "protect",
               g && *g ? g : "(none)");
        /* What they name now, a symlinked one by where it leads (sealed there). */
        _cleanup_strv_free_ char **now = NULL;
        if (protect_matches_describe(p, &now, NULL) >= 0) {
                _cleanup_free_ char *j = strv_join(now, ", ");
                printf("%-13s%s\n", "protect now", j && *j ? j : "(nothing yet)");
        }
        printf("%-13s%s\n", "git_init",
               p->git_init ? "true (a missing root .git is a repository the host's git makes before the jail starts)"
                           : "false (a missing root .git is a read-only empty directory in the jail)");
        printf("%-13s%s\n%-13s%s\n", "no_gpu", p->no_gpu ? "true" : "false", "lockdown", p->lockdown ? "true" : "false");
        printf("%s %s\n", "persistent_home", /* wider than the column */
               p->persistent_home ? "true (the jail's home is kept for this workspace, outside it)"
                                  : "false (an empty home each time the jail starts)");
        if (p->net_allowlist) {
                printf("%-13sallowlist through the daemon's proxy (no direct network):", "network");
                for (size_t i = 0; i < p->n_net_rules; i++)
                        printf("%s %s", i ? "," : "", p->net_rules[i].written);
                printf("%s\n", p->n_net_rules ? "" : " (empty: nothing)");
        } else
                printf("%-13s%s%s\n", "network", p->network ? "true" : "false",
                       p->lockdown ? " (forced off by lockdown)" : "");
        printf("%-13s%llus\n", "idle_timeout", (unsigned long long)p->idle_timeout_s);
        printf("%-13stimeout=%llus max_output=%llu pids=%llu memory=%llu\n", "limits",
               (unsigned long long)p->limits.timeout_s, (unsigned long long)p->limits.max_output,
               (unsigned long long)p->limits.pids, (unsigned long long)p->limits.memory);
        if (p->backend->config_describe && p->backend_config) {
                _cleanup_free_ char *line = p->backend->config_describe(p->backend_config);
                printf("%-13s%s\n", vs_backend_name(p->backend), line ? line : "(out of memory)");
        }
}

/* --require-sandbox where the policy is unsandboxed: the refusal every
 * tool call would meet. */
int cli_refuse_unsandboxed(const CliArgs *a, const VsPolicy *p) {
        return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_SANDBOX_REQUIRED),
                             "%s: workspace %s would run unsandboxed (%s) and a sandbox is required (--require-sandbox or VECTORA_REQUIRE_SANDBOX); add a [sandbox] table to its vectora.toml (vectora-sandbox init)",
                             a->verb->name, p->workspace, p->unsandboxed_reason);
}

int verb_check(const CliArgs *a) {
        const char *ws = a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".";
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *dir = NULL, *pending = NULL;
        int r = tools_load_policy(ws, &p, &dir, &pending, &err);
        if (r == -ENOMEM)
                return cli_fail(EXIT_REFUSED, "out of memory");
        if (r < 0) {
                const char *kind = vs_error_kind(err) ? vs_error_kind(err) : api_error_name(API_ERROR_CONFIG_INVALID);
                /* Not a config at all (a -w that does not exist): nothing to check. */
                if (!api_error_is(kind, API_ERROR_CONFIG_INVALID))
                        return cli_fail_code(a, EXIT_REFUSED, api_error_name(api_error_from_kind(kind, API_ERROR_CONFIG_INVALID)),
                                             "check: %s", vs_error_message(err));
                /* The located reason, and what happens meanwhile (rule 2). */
                return cli_fail_code(a, EXIT_CONFIG, kind,
                                     "%s (every tool call in this workspace is refused until this is fixed)",
                                     vs_error_message(err));
        }
        if (a->require_sandbox && !p->sandboxed)
                return cli_refuse_unsandboxed(a, p);
        if (a->json) {
                json_t *o = policy_to_json(p);
                if (!o)
                        return cli_fail(EXIT_REFUSED, "out of memory");
                json_object_set_new(o, "ok", json_true());
                /* Which file governs the directory asked about, and
                 * whether a loosening waits for approval. */
                json_object_set_new(o, "directory", json_string(dir));
                json_object_set_new(o, "policy_pending", pending ? json_string(pending) : json_null());
                _cleanup_strv_free_ char **now = NULL;
                if (p->sandboxed && protect_matches_describe(p, &now, NULL) >= 0)
                        json_object_set_new(o, "protect_matches", json_strv(now));
                cli_print_json(o);
                json_decref(o);
                return 0;
        }
        print_policy(p, dir);
        if (pending)
                printf("%-13s%s\n", "pending", pending);
        return 0;
}
