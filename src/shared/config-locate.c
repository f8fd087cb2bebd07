/* SPDX-License-Identifier: MIT */
/* Which vectora.toml governs a directory: the nearest ancestor (itself
 * included) holding one, as git finds its repository. Without that walk a
 * client naming a subdirectory of a sandboxed workspace found no policy
 * there and ran unsandboxed, seeing ../.env and the whole host. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "path-util.h"

int config_locate(const char *dir, char **ret_root, char **ret_dir, VsError **err) {
        _cleanup_free_ char *canon = realpath(dir, NULL);
        if (!canon)
                return vs_error_set_kind(err, -errno, "workspace_not_found", "workspace %s: %m", dir);
        struct stat st;
        if (stat(canon, &st) < 0 || !S_ISDIR(st.st_mode))
                return vs_error_set_kind(err, -ENOTDIR, "workspace_invalid", "workspace %s is not a directory", canon);

        _cleanup_free_ char *cur = strdup(canon);
        if (!cur)
                return -ENOMEM;
        for (;;) {
                _cleanup_free_ char *cfg = path_join(cur, VS_CONFIG_FILE);
                if (!cfg)
                        return -ENOMEM;
                /* lstat: whatever sits at the name (a symlink, a FIFO) claims
                 * the directory, and config_load then refuses it with its
                 * location; skipping it would fall through to a looser
                 * ancestor, or to none. */
                if (lstat(cfg, &st) == 0)
                        break;
                if (errno != ENOENT && errno != ENOTDIR)
                        return vs_error_set_kind(err, -errno, "config_invalid",
                                                 "%s: cannot tell whether it exists: %m; fix the permissions of %s", cfg, cur);
                if (streq(cur, "/")) {
                        /* None anywhere above: the directory itself, unsandboxed. */
                        free(cur);
                        cur = strdup(canon);
                        if (!cur)
                                return -ENOMEM;
                        break;
                }
                char *slash = strrchr(cur, '/');
                if (slash == cur)
                        slash[1] = 0;
                else
                        *slash = 0;
        }
        if (ret_dir)
                *ret_dir = TAKE_PTR(canon);
        *ret_root = TAKE_PTR(cur);
        return 0;
}
