/* SPDX-License-Identifier: MIT */
#pragma once

/* The jail plan of a policy from fixed host facts, for the renderers'
 * unit tests: masks and existing protected paths as given, empty sources
 * at /run/vs/empty-file and /run/vs/empty-dir. */

#include <string.h>

#include "config.h"
#include "jail-plan.h"

/* text parsed as the vectora.toml of env->workspace ("/ws"), its listed
 * paths "resolved" as config_resolve would where they exist ("." is
 * /ws). Fails the test on a config error. */
static inline VsPolicy *fixture_policy(const char *text, const VsConfigEnv *env) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        if (config_parse(text, strlen(text), env, &p, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        for (size_t i = 0; i < p->n_rw; i++)
                p->rw_paths[i].resolved = strdup(streq(p->rw_paths[i].written, ".") ? "/ws" : p->rw_paths[i].written);
        for (size_t i = 0; i < p->n_ro; i++)
                p->ro_paths[i].resolved = strdup(p->ro_paths[i].written);
        return p;
}

static inline VsJailPlan *fixture_plan(const VsPolicy *p, const VsMaskPath *masks, size_t n_masks, char **prot,
                                       char **env) {
        VsJailFacts f = { .masks = (VsMaskPath *)masks, .n_masks = n_masks, .protected_existing = prot };
        VsJailPlan *plan = NULL;
        assert_int_equal(jail_plan_build(p, prot, &f, "/run/vs/empty-file", "/run/vs/empty-dir", env, &plan), 0);
        return plan;
}
