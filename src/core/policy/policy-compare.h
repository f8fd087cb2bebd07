/* SPDX-License-Identifier: MIT */
#pragma once

/* Whether a policy change loosens the sandbox (rule 7): a loosening waits
 * for the host user's approval, anything else applies at once. Pure. */

#include "config.h"

/* Lines saying how proposed is looser than approved ("mask: \".env\" is
 * removed", "rw_paths: /srv is new"); *ret is an empty list when proposed
 * is as tight or tighter. A setting this code does not know how to order
 * (a backend's own table, a key added later) counts as a loosening when it
 * changes: unknown is never read as safe. */
int policy_loosenings(const VsPolicy *approved, const VsPolicy *proposed, char ***ret);
