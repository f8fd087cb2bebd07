/* SPDX-License-Identifier: MIT */
/* The one compile of a policy's patterns (config.h: policy_compile_sets).
 * Apart from config.c so that what the worker links (the remote jail
 * plan) does not pull in the config parser. */
#include "policy.h"

#include "glob.h"
#include "mask-walk.h"
#include "protect-defaults.h"
#include "strv.h"

int policy_compile_sets(VsPolicy *p, VsError **err) {
        policy_sets_done(p);
        /* The files the host runs later: the default protect names, the
         * protect globs, and a .git at any depth. */
        _cleanup_strv_free_ char **host_run = NULL;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < VS_N_PROTECT_DEFAULTS; i++)
                r = strv_extend(&host_run, VS_PROTECT_DEFAULTS[i].glob);
        for (char **g = p->protect; r >= 0 && g && *g; g++)
                r = strv_contains(host_run, *g) ? 0 : strv_extend(&host_run, *g);
        if (r < 0 || (r = strv_extend(&host_run, "**/.git")) < 0)
                return vs_error_set(err, r, "out of memory");
        if ((r = mask_set_compile(p->mask, "mask", &p->mask_set, err)) < 0 ||
            (r = mask_set_compile(p->protect, "protect", &p->protect_set, err)) < 0 ||
            (r = mask_set_compile(host_run, "protect", &p->host_run_set, err)) < 0) {
                policy_sets_done(p);
                return r;
        }
        p->sets_compiled = true;
        return 0;
}

void policy_sets_done(VsPolicy *p) {
        glob_set_free(TAKE_PTR(p->mask_set));
        glob_set_free(TAKE_PTR(p->protect_set));
        glob_set_free(TAKE_PTR(p->host_run_set));
        p->sets_compiled = false;
}

int policy_sets_check(const VsPolicy *p, VsError **err) {
        if (!p->sandboxed || p->sets_compiled)
                return 0;
        return vs_error_set_kind(err, -EINVAL, "internal", "the policy's mask and protect patterns were not compiled");
}

