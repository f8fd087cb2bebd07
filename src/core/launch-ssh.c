/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: the ssh backend is being written. */
#include "launch-internal.h"

int launch_ssh_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        return vs_error_set_kind(err, -EOPNOTSUPP, "sandbox_unavailable",
                                 "backend \"ssh\" is not available in this build; use backend = \"local\"");
}
