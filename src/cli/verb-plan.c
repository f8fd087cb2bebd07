/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdio.h>

#include "backend-local.h"
#include "cli.h"
#include "config.h"
#include "launch.h"
#include "paths.h"
#include "strv.h"
#include "tools.h"

int verb_plan(int argc, char **argv) {
        static const struct option opts[] = {
                { "workspace", required_argument, NULL, 'w' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *ws = ".";
        int c;
        while ((c = getopt_long(argc, argv, "w:h", opts, NULL)) >= 0)
                switch (c) {
                case 'w': ws = optarg; break;
                case 'h':
                        printf("usage: vectora-sandbox plan [-w DIR]\n");
                        return 0;
                default: return EXIT_CONFIG;
                }
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *pending = NULL;
        int r = tools_load_policy(ws, &p, NULL, &pending, &err);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "%s", vs_error_message(err));
        if (pending)
                fprintf(stderr, "vectora-sandbox: warning: %s\n", pending);
        _cleanup_free_ char *worker = NULL, *rt = NULL;
        if (vs_worker_path(&worker, &err) < 0)
                return cli_fail(EXIT_REFUSED, "%s", vs_error_message(err));
        if (p->sandboxed && vs_runtime_dir(&rt, &err) < 0)
                return cli_fail(EXIT_REFUSED, "%s", vs_error_message(err));
        VsLaunchOptions o = { .worker_path = worker, .bwrap = getenv("VECTORA_BWRAP"), .runtime_dir = rt };
        _cleanup_(launch_freep) VsLaunch *l = NULL;
        if (launch_prepare(p, &o, &l, &err) < 0)
                return cli_fail(EXIT_REFUSED, "%s", vs_error_message(err));
        _cleanup_free_ char *q = argv_quote(l->argv);
        if (!q)
                return cli_fail(EXIT_REFUSED, "out of memory");
        if (!l->sandboxed)
                printf("# unsandboxed (%s): the worker runs directly on the host\n", p->unsandboxed_reason);
        else if (l->notes) {
                for (char **n = l->notes; *n; n++)
                        printf("# %s\n", *n);
                for (char **d = l->degraded; d && *d; d++)
                        printf("# degraded: %s\n", *d);
        } else {
                printf("# local backend (bubblewrap), jail uid %u gid %u%s; %zu masked path(s)\n", (unsigned)l->uid,
                       (unsigned)l->gid, l->switch_user ? " (dropped from root)" : "", l->n_masked);
                printf("# then, inside, the worker applies: no_new_privs, Landlock (writable: ");
                for (char **d = l->landlock_rw; d && *d; d++)
                        printf("%s%s", d == l->landlock_rw ? "" : ", ", *d);
                printf("), seccomp (%zu BPF instructions)\n", l->bpf_len / 8);
                for (char **d = l->degraded; d && *d; d++)
                        printf("# degraded: %s\n", *d);
        }
        printf("%s\n", q);
        return 0;
}
