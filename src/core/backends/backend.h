/* SPDX-License-Identifier: MIT */
#pragma once

/* The backend table and its lookups (backend.c over backend-list.h); a
 * backend's definition type is src/shared/plan/backend-def.h. */

#include <stdbool.h>

#include "backend-def.h"

/* The definitions in the table's order, NULL-terminated. */
extern const VsBackendDef *const vs_backend_defs[];

/* By name (n bytes of name, which need not be NUL-terminated); NULL when
 * unknown. */
const VsBackendDef *backend_def_find(const char *name, size_t n);
/* The default backend (the table's first: local). */
const VsBackendDef *backend_def_default(void);
/* b's name, "unknown" for NULL. */
const char *vs_backend_name(const VsBackendDef *b);
/* The names of the backends with a capability, as prose: "local and
 * docker", "a, b and c". *ret owned by the caller. */
int backend_names_with(bool (*has)(const VsBackendDef *b), char **ret);

/* The policy's own backend settings when p uses def, else NULL. */
const void *backend_config(const VsPolicy *p, const VsBackendDef *def);
