/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "config.h"

/* The effective policy as a JSON object (new reference; NULL on OOM).
 * Used by `check --json` and the daemon's status. */
json_t *policy_to_json(const VsPolicy *p);
