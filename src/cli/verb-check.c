/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "policy-json.h"
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
        printf("%-13s%s\n%-13s%s\n", "no_gpu", p->no_gpu ? "true" : "false", "lockdown", p->lockdown ? "true" : "false");
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
        if (p->backend == VS_BACKEND_DOCKER)
                printf("%-13simage=%s docker=%s host=%s\n", "docker", p->docker.image, p->docker.docker,
                       p->docker.host ? p->docker.host : "(default)");
        if (p->backend == VS_BACKEND_SSH)
                printf("%-13shost=%s user=%s port=%u identity_file=%s known_hosts=%s remote_root=%s worker_path=%s\n",
                       "ssh", p->ssh.host, p->ssh.user ? p->ssh.user : "(default)", p->ssh.port,
                       p->ssh.identity_file ? p->ssh.identity_file : "(default)",
                       p->ssh.known_hosts ? p->ssh.known_hosts : "(default)",
                       p->ssh.remote_root ? p->ssh.remote_root : "(same paths)", p->ssh.worker_path);
        if (p->backend == VS_BACKEND_MODAL)
                printf("%-13sapp=%s image=%s timeout=%llus region=%s sync=%s%s%s\n", "modal", p->modal.app,
                       p->modal.image, (unsigned long long)p->modal.timeout_s,
                       p->modal.region ? p->modal.region : "(default)", p->modal.sync,
                       p->modal.volume ? " volume=" : "", p->modal.volume ? p->modal.volume : "");
}

int verb_check(int argc, char **argv) {
        static const struct option opts[] = {
                { "workspace", required_argument, NULL, 'w' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *ws = ".";
        bool json = false;
        int c;
        while ((c = getopt_long(argc, argv, "w:h", opts, NULL)) >= 0)
                switch (c) {
                case 'w': ws = optarg; break;
                case 'j': json = true; break;
                case 'h':
                        printf("usage: vectora-sandbox check [-w DIR] [--json]\n");
                        return 0;
                default: return EXIT_CONFIG;
                }
        if (optind < argc)
                return cli_fail(EXIT_CONFIG, "check: unexpected argument '%s'", argv[optind]);

        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *dir = NULL, *pending = NULL;
        int r = tools_load_policy(ws, &p, &dir, &pending, &err);
        if (r < 0) {
                if (json) {
                        json_t *o = json_pack("{s:b, s:s, s:s}", "ok", 0, "error", vs_error_kind(err), "message",
                                              vs_error_message(err));
                        if (o) {
                                json_dumpf(o, stdout, JSON_INDENT(2));
                                printf("\n");
                                json_decref(o);
                        }
                }
                /* The located reason, and what happens meanwhile (rule 2). */
                return cli_fail(EXIT_CONFIG, "%s (every tool call in this workspace is refused until this is fixed)",
                                vs_error_message(err));
        }
        if (json) {
                json_t *o = policy_to_json(p);
                if (!o)
                        return cli_fail(EXIT_REFUSED, "out of memory");
                /* Which file governs the directory asked about, and
                 * whether a loosening waits for approval. */
                json_object_set_new(o, "directory", json_string(dir));
                json_object_set_new(o, "policy_pending", pending ? json_string(pending) : json_null());
                json_dumpf(o, stdout, JSON_INDENT(2));
                printf("\n");
                json_decref(o);
                return 0;
        }
        print_policy(p, dir);
        if (pending)
                printf("%-13s%s\n", "pending", pending);
        return 0;
}
