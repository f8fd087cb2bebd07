/* SPDX-License-Identifier: MIT */
/* The host's half of the backend table (src/core/backends/backend-list.h). */
#include "backend-ops.h"

#include "backend-list.h"

#define DECLARE(n) extern const VsBackendOps backend_##n##_ops;
VS_BACKEND_LIST(DECLARE)
#undef DECLARE

#define ENTRY(n) &backend_##n##_ops,
static const VsBackendOps *const ops[] = { VS_BACKEND_LIST(ENTRY) NULL };
#undef ENTRY

const VsBackendOps *backend_ops(const VsBackendDef *def) {
        for (const VsBackendOps *const *o = ops; *o; o++)
                if ((*o)->def == def)
                        return *o;
        return NULL;
}

const char *backend_diagnose(const VsBackendDef *def, const char *t) {
        if (!t)
                return NULL;
        const VsBackendOps *own = backend_ops(def);
        const char *d = own && own->diagnose ? own->diagnose(t) : NULL;
        for (const VsBackendOps *const *o = ops; !d && *o; o++)
                if (*o != own && (*o)->diagnose)
                        d = (*o)->diagnose(t);
        return d;
}
