/* SPDX-License-Identifier: MIT */
#pragma once

/* For unit tests of the worker's library: a temp directory to play the
 * jail's tree in, and the worker's Policy from an init as the daemon would
 * send it. Include after <cmocka.h>. */

#include <stdio.h>
#include <stdlib.h>

#include "worker.h"

/* root: a char[64] filled with "/tmp/vs-NAME-XXXXXX", made. */
static inline void fixture_tmp(char *root, const char *name) {
        snprintf(root, 64, "/tmp/vs-%s-XXXXXX", name);
        assert_non_null(mkdtemp(root));
}

static inline int fixture_tmp_remove(const char *root) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

static inline void fixture_policy(Policy *p, const ProtocolInit *init) {
        VsError *err = NULL;
        if (policy_init(p, init, &err) < 0)
                fail_msg("policy_init: %s", vs_error_message(err));
}
