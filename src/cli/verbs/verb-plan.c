/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "backend-local.h"
#include "cli.h"
#include "config.h"
#include "launch.h"
#include "paths.h"
#include "json-util.h"
#include "strv.h"
#include "tools.h"

static int plan_fail(const CliArgs *a, const VsError *err) {
        ApiError code = api_error_from_kind(vs_error_kind(err), API_ERROR_SANDBOX_UNAVAILABLE);
        return cli_fail_code(a, EXIT_REFUSED, api_error_name(code), "plan: %s",
                             vs_error_message(err));
}

static int plan_json(const CliArgs *a, const VsPolicy *p, const VsLaunch *l) {
        json_t *o = json_pack("{s:b,s:b,s:s,s:o,s:o,s:o}", "ok", 1, "sandboxed", l->sandboxed, "backend",
                              l->sandboxed ? vs_backend_name(p->backend) : "none", "argv", json_strv(l->argv), "notes",
                              json_strv(l->notes), "degraded", json_strv(l->degraded));
        if (!o)
                return cli_fail(EXIT_REFUSED, "out of memory");
        if (!l->sandboxed)
                json_object_set_new(o, "unsandboxed_reason", json_string(p->unsandboxed_reason));
        cli_print_json(o);
        json_decref(o);
        return 0;
}

int verb_plan(const CliArgs *a) {
        const char *ws = a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".";
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *pending = NULL;
        int r = tools_load_policy(ws, &p, NULL, &pending, &err);
        if (r < 0)
                return plan_fail(a, err);
        if (pending)
                cli_warn_pending(pending);
        if (a->require_sandbox && !p->sandboxed)
                return cli_refuse_unsandboxed(a, p);
        _cleanup_free_ char *worker = NULL, *rt = NULL;
        if (vs_worker_path(&worker, &err) < 0)
                return plan_fail(a, err);
        if (p->sandboxed && vs_runtime_dir(&rt, &err) < 0)
                return plan_fail(a, err);
        VsLaunchOptions o = { .worker_path = worker, .bwrap = getenv("VECTORA_BWRAP"), .runtime_dir = rt };
        _cleanup_(launch_freep) VsLaunch *l = NULL;
        if (launch_prepare(p, &o, &l, &err) < 0)
                return plan_fail(a, err);
        if (a->json)
                return plan_json(a, p, l);
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
