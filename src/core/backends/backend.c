/* SPDX-License-Identifier: MIT */
/* The policy's half of the backend table (backend-list.h). */
#include "backend.h"

#include <string.h>

#include "backend-list.h"
#include "config.h"
#include "strbuf.h"

#define DECLARE(n) extern const VsBackendDef backend_##n##_def;
VS_BACKEND_LIST(DECLARE)
#undef DECLARE

#define ENTRY(n) &backend_##n##_def,
const VsBackendDef *const vs_backend_defs[] = { VS_BACKEND_LIST(ENTRY) NULL };
#undef ENTRY

const VsBackendDef *backend_def_find(const char *name, size_t n) {
        for (const VsBackendDef *const *b = vs_backend_defs; *b; b++)
                if (strlen((*b)->name) == n && memcmp((*b)->name, name, n) == 0)
                        return *b;
        return NULL;
}

const VsBackendDef *backend_def_default(void) {
        return vs_backend_defs[0];
}

int backend_names_with(bool (*has)(const VsBackendDef *b), char **ret) {
        _cleanup_strbuf_ StrBuf s = STRBUF_INIT;
        size_t n = 0, k = 0;
        for (const VsBackendDef *const *b = vs_backend_defs; *b; b++)
                n += has(*b);
        for (const VsBackendDef *const *b = vs_backend_defs; *b; b++) {
                if (!has(*b))
                        continue;
                const char *sep = k == 0 ? "" : k + 1 == n ? " and " : ", ";
                k++;
                if (strbuf_appendf(&s, "%s%s", sep, (*b)->name) < 0)
                        return -ENOMEM;
        }
        char *t = n ? strbuf_steal(&s) : strdup("");
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}
