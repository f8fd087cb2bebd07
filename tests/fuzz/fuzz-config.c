/* SPDX-License-Identifier: MIT */
/* The config loader's pure half on arbitrary input: never crashes, leaks or
 * reads out of bounds; an accepted policy is internally consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const VsConfigEnv env = { .workspace = "/ws", .home = "/home/u" };
        VsPolicy *p = NULL;
        VsError *err = NULL;
        int r = config_parse((const char *)data, size, &env, &p, &err);
        if (r < 0) {
                /* Every refusal is located in the file. */
                if (!err || strncmp(vs_error_message(err), "vectora.toml", 12) != 0)
                        abort();
                vs_error_free(err);
                return 0;
        }
        if (!p || err)
                abort();
        if (p->sandboxed) {
                /* rw_paths = [] is allowed (a read-only workspace), but the
                 * list itself always exists once sandboxed. */
                if (!p->rw_paths || !p->mask)
                        abort();
                if (p->lockdown && (p->network || !p->no_gpu))
                        abort();
                char **prot = NULL;
                if (config_protected_paths(p, &prot) == 0)
                        strv_free(prot);
        } else if (!p->unsandboxed_reason)
                abort();
        policy_free(p);
        return 0;
}
