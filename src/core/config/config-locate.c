/* SPDX-License-Identifier: MIT */
/* Which vectora.toml governs a directory: the nearest ancestor (itself
 * included) holding one, as git finds its repository. Without that walk a
 * client naming a subdirectory of a sandboxed workspace found no policy
 * there and ran unsandboxed, seeing ../.env and the whole host. */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "config.h"
#include "path-util.h"
#include "strv.h"

/* A workspace root: a directory holding a vectora.toml (anything at the
 * name claims it, as config_locate() below). */
static bool holds_config(int dirfd, const char *path, void *userdata) {
        struct stat st;
        return fstatat(dirfd, VS_CONFIG_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The writable paths of sandboxed workspaces outside them, known by their
 * directories (device and inode): one the host also reaches under another
 * name (a bind mount of it) is the same directory, so the same root. */
typedef struct WritableDirs {
        size_t n;
        struct stat *st;
} WritableDirs;

static bool is_writable_dir(int dirfd, const WritableDirs *w) {
        struct stat st;
        if (!w->n || fstat(dirfd, &st) < 0)
                return false;
        for (size_t i = 0; i < w->n; i++)
                if (w->st[i].st_dev == st.st_dev && w->st[i].st_ino == st.st_ino)
                        return true;
        return false;
}

/* An untrusted root met on the way: a workspace root, or a writable path
 * a sandboxed workspace lists outside itself (the jails write there). */
static bool untrusted_root(int dirfd, const char *path, void *userdata) {
        return holds_config(dirfd, path, NULL) || is_writable_dir(dirfd, userdata);
}

/* A directory that lies, as written, in a workspace is served by that
 * workspace or refused: `-w ~/proj/escape` with the agent's `escape -> /`
 * must not find no config at / and run unsandboxed, nor `sub -> ~/other`
 * be served by ~/other's policy. The path as written is walked from /,
 * following the host's links, until a link inside a workspace met on the
 * way: where that leads must stay in that workspace. A writable path
 * that sandboxed workspaces list outside themselves counts as one (the
 * jails write there), under any name. canon is what dir resolves to. */
static int check_as_written(const char *dir, const char *canon, char *const *writable, VsError **err) {
        _cleanup_free_ char *cwd = NULL, *joined = NULL;
        if (dir[0] != '/' && !(cwd = getcwd(NULL, 0)))
                return vs_error_set_kind(err, -errno, "workspace_invalid", "workspace %s: the current directory: %m", dir);
        if (cwd && !(joined = path_join(cwd, dir)))
                return -ENOMEM;
        WritableDirs w = { 0 };
        _cleanup_free_ struct stat *sts = calloc(strv_length(writable) + 1, sizeof *sts);
        if (!sts)
                return -ENOMEM;
        /* What each names now (the host's own path, recorded canonical);
         * one gone names nothing. */
        for (char *const *p = writable; p && *p; p++)
                if (stat(*p, &sts[w.n]) == 0 && S_ISDIR(sts[w.n].st_mode))
                        w.n++;
        w.st = sts;
        ChaseResult cr;
        int r = chase_path_dynamic(joined ? joined : dir, NULL, untrusted_root, &w, &cr);
        if (r != -ELOOP || !cr.link_root || path_is_below_or_equal(canon, cr.link_root)) {
                chase_result_done(&cr);
                return 0;
        }
        struct stat st;
        _cleanup_free_ char *cfg = path_join(cr.link_root, VS_CONFIG_FILE);
        if (!cfg) {
                chase_result_done(&cr);
                return -ENOMEM;
        }
        if (lstat(cfg, &st) < 0)
                r = vs_error_set_kind(err, -EXDEV, "workspace_invalid",
                                      "workspace %s lies in %s as written, a writable path of a sandboxed workspace, but "
                                      "resolves through the symlink %s -> %s to %s, outside it; a link a jail can make "
                                      "never takes a tool out of the jail: name the directory by its real path",
                                      dir, cr.link_root, cr.link, cr.link_target, canon);
        else
                r = vs_error_set_kind(err, -EXDEV, "workspace_invalid",
                                      "workspace %s lies in the workspace %s as written, but resolves through the "
                                      "symlink %s -> %s to %s, outside it; a link never takes a tool out of its "
                                      "workspace's jail: name the directory by its real path",
                                      dir, cr.link_root, cr.link, cr.link_target, canon);
        chase_result_done(&cr);
        return r;
}

int config_locate(const char *dir, char **ret_root, char **ret_dir, VsError **err) {
        return config_locate_beneath(dir, NULL, ret_root, ret_dir, err);
}

int config_locate_beneath(const char *dir, char *const *writable, char **ret_root, char **ret_dir, VsError **err) {
        _cleanup_free_ char *canon = realpath(dir, NULL);
        if (!canon)
                return vs_error_set_kind(err, -errno, "workspace_not_found", "workspace %s: %m", dir);
        struct stat st;
        if (stat(canon, &st) < 0 || !S_ISDIR(st.st_mode))
                return vs_error_set_kind(err, -ENOTDIR, "workspace_invalid", "workspace %s is not a directory", canon);
        int r = check_as_written(dir, canon, writable, err);
        if (r < 0)
                return r;

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
