/* SPDX-License-Identifier: MIT */
/* --unjailed REASON: the worker runs without a jail around it (an ssh
 * remote without bubblewrap). It still applies no_new_privs, Landlock and
 * seccomp, and says it is degraded, with REASON, in ready. */
#include <fcntl.h>
#include <unistd.h>

#include "fd-util.h"
#include "launcher.h"
#include "strv.h"

static const char *unjailed_reason;

void unjailed_set(const char *reason) {
        unjailed_reason = reason;
}

void unjailed_adjust_init(ProtocolInit *init) {
        if (!unjailed_reason || !init->landlock_rw)
                return;
        /* The jail's private home and the like do not exist here; a rule
         * that cannot be added would fail the whole layer. The vector's
         * strings are kept by the decoded message: compact in place. */
        size_t k = 0;
        for (size_t i = 0; init->landlock_rw[i]; i++) {
                _cleanup_close_ int fd = open(init->landlock_rw[i], O_PATH | O_CLOEXEC);
                if (fd >= 0)
                        init->landlock_rw[k++] = init->landlock_rw[i];
        }
        init->landlock_rw[k] = NULL;
}

int unjailed_degraded(char ***degraded) {
        if (!unjailed_reason || strv_contains(*degraded, unjailed_reason))
                return 0;
        return strv_extend(degraded, unjailed_reason);
}

bool unjailed(void) {
        return unjailed_reason != NULL;
}
