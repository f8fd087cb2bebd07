/* SPDX-License-Identifier: MIT */
#pragma once

/* The jail plan of a policy from fixed host facts, for the renderers'
 * unit tests: masks and existing protected paths as given, empty sources
 * at /run/vs/empty-file and /run/vs/empty-dir. */

#include "jail-plan.h"

static inline VsJailPlan *fixture_plan(const VsPolicy *p, const VsMaskPath *masks, size_t n_masks, char **prot,
                                       char **env) {
        VsJailFacts f = { .masks = (VsMaskPath *)masks, .n_masks = n_masks, .protected_existing = prot };
        VsJailPlan *plan = NULL;
        assert_int_equal(jail_plan_build(p, prot, &f, "/run/vs/empty-file", "/run/vs/empty-dir", env, &plan), 0);
        return plan;
}
