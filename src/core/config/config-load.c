/* SPDX-License-Identifier: MIT */
/* Reading vectora.toml and resolving the paths it lists: the part of the
 * configuration that touches the OS (config.c and config-keys.c are pure). */

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "chase.h"
#include "fd-util.h"
#include "forbidden.h"
#include "glob.h"
#include "path-util.h"
#include "strv.h"
#include "time-util.h"
#include "toml.h"
#include "config-internal.h"

/* ---- resolution (touches the OS) ------------------------------------------ */

/* A listed path is resolved by the one resolver (basic/chase.h): a symlink
 * inside the workspace or a writable listed path is never followed (the
 * agent could have made it: `ln -s ~/.ssh build` would otherwise bind
 * ~/.ssh); the host's own symlinks elsewhere are. */
static int resolve_one(VsPolicy *p, VsPath *vp, const char *list, size_t idx, const VsConfigEnv *env,
                       char *const *untrusted, VsError **err) {
        _cleanup_free_ char *written_abs = config_path_absolute(vp->written, env);
        _cleanup_free_ char *abs = written_abs ? path_normalize(written_abs) : NULL;
        if (!abs)
                return -ENOMEM;
        ChaseResult cr;
        int r = chase_path(abs, untrusted, &cr);
        if (r == -ENOENT) {
                chase_result_done(&cr);
                if (p->lockdown)
                        return config_error(err, -ENOENT, vp->line, vp->col,
                                            "sandbox.%s[%zu]: \"%s\" (%s) does not exist; lockdown refuses a listed path that is missing: create it or remove it from the list",
                                            list, idx, vp->written, abs);
                vp->missing = true;
                free(vp->resolved);
                vp->resolved = NULL;
                free(vp->lexical);
                vp->lexical = TAKE_PTR(abs);
                return 0;
        }
        if (r == -ELOOP && cr.link) {
                r = config_error(err, -ELOOP, vp->line, vp->col,
                                 "sandbox.%s[%zu]: \"%s\" goes through the symlink %s -> %s, which lies in the workspace or a writable path, where the agent can make links; the host never follows one there: remove the link or list the real path",
                                 list, idx, vp->written, cr.link, cr.link_target);
                chase_result_done(&cr);
                return r;
        }
        if (r < 0) {
                chase_result_done(&cr);
                return config_error(err, r, vp->line, vp->col, "sandbox.%s[%zu]: \"%s\": cannot resolve %s: %s", list,
                                    idx, vp->written, abs, strerror(-r));
        }
        _cleanup_free_ char *real = TAKE_PTR(cr.path);
        chase_result_done(&cr);
        if (p->lockdown && !streq(real, abs))
                return config_error(err, -ELOOP, vp->line, vp->col,
                                    "sandbox.%s[%zu]: \"%s\" goes through a symlink (%s -> %s); lockdown refuses ambiguous paths: list the real path",
                                    list, idx, vp->written, abs, real);
        /* Again on the real path (a symlink may lead into /etc), and
         * against the host's accounts: another user's home, or a
         * directory holding the caller's home or runtime directory. */
        struct stat wst;
        char why[512];
        VsHomes homes = { 0 };
        int hr = forbidden_homes_of(stat(p->workspace, &wst) == 0 ? wst.st_uid : getuid(), &homes);
        if (hr < 0)
                return hr;
        homes.caller_home = env->home;
        homes.runtime_dir = getenv("XDG_RUNTIME_DIR");
        bool bad = forbidden_resolved(real, streq(list, "rw_paths"), &homes, why, sizeof why) != NULL;
        forbidden_homes_done(&homes);
        if (bad)
                return config_error(err, -EPERM, vp->line, vp->col,
                                    "sandbox.%s[%zu]: \"%s\" resolves to %s, which is %s; list the project directories the agent needs instead",
                                    list, idx, vp->written, real, why);
        vp->missing = false;
        free(vp->lexical);
        vp->lexical = NULL;
        free(vp->resolved);
        vp->resolved = TAKE_PTR(real);
        return 0;
}

/* The trees the jail can write: the workspace (what earlier jails may
 * have written, whatever rw_paths says now) and every writable listed
 * path as resolved so far. */
static int untrusted_roots(const VsPolicy *p, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        if (strv_extend(&l, p->workspace) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved && !strv_contains(l, p->rw_paths[i].resolved) &&
                    strv_extend(&l, p->rw_paths[i].resolved) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

int config_resolve(VsPolicy *p, VsError **err) {
        if (!p->sandboxed)
                return 0;
        const char *home = getenv("HOME");
        VsConfigEnv env = { .workspace = p->workspace, .home = home && home[0] == '/' ? home : NULL };
        /* A writable path found through a host symlink makes a new tree the
         * jail can write, which may hold another listed path: resolve again
         * until the writable trees stop growing (each round adds one at
         * least, or ends). */
        _cleanup_strv_free_ char **roots = NULL;
        int r = untrusted_roots(p, &roots);
        for (size_t round = 0; r >= 0 && round <= p->n_rw; round++) {
                for (size_t i = 0; r >= 0 && i < p->n_rw; i++)
                        r = resolve_one(p, &p->rw_paths[i], "rw_paths", i, &env, roots, err);
                _cleanup_strv_free_ char **now = NULL;
                if (r < 0 || (r = untrusted_roots(p, &now)) < 0)
                        return r;
                bool same = strv_length(now) == strv_length(roots);
                strv_free(roots);
                roots = TAKE_PTR(now);
                if (same)
                        break;
        }
        for (size_t i = 0; r >= 0 && i < p->n_ro; i++)
                r = resolve_one(p, &p->ro_paths[i], "ro_paths", i, &env, roots, err);
        /* One path in both lists: the jail bound it writable (the later
         * bind of the two at one depth), while the daemon's look at what a
         * jail may have written took it for read-only (a repository made
         * there was left for the host's git); `ro_paths = ["."]` alone
         * left the workspace writable by the default rw_paths. Refused. */
        for (size_t i = 0; r >= 0 && i < p->n_ro; i++)
                for (size_t k = 0; r >= 0 && p->ro_paths[i].resolved && k < p->n_rw; k++)
                        if (p->rw_paths[k].resolved && streq(p->rw_paths[k].resolved, p->ro_paths[i].resolved))
                                r = config_error(err, -EINVAL, p->ro_paths[i].line, p->ro_paths[i].col,
                                                 "sandbox.ro_paths[%zu]: \"%s\" resolves to %s, which rw_paths lists too%s; a "
                                                 "path is writable or read-only, not both: list it in one of them",
                                                 i, p->ro_paths[i].written, p->ro_paths[i].resolved,
                                                 p->rw_paths[k].line ? ""
                                                                     : " (rw_paths is [\".\"] when not given: "
                                                                       "rw_paths = [] makes the workspace read-only)");
        return r;
}

#define NOT_REGULAR_FMT                                                                                              \
        VS_CONFIG_FILE ": %s is %s, not a regular file; replace it with a regular file (every tool call in this "     \
                       "workspace is refused until then)"

static const char *file_type_name(mode_t m) {
        if (S_ISFIFO(m))
                return "a FIFO";
        if (S_ISSOCK(m))
                return "a socket";
        if (S_ISCHR(m) || S_ISBLK(m))
                return "a device";
        if (S_ISDIR(m))
                return "a directory";
        return "not a regular file";
}

int config_from_text(const char *workspace, const char *text, size_t len, VsPolicy **ret, VsError **err) {
        const char *home = getenv("HOME");
        VsConfigEnv env = { .workspace = workspace, .home = home && home[0] == '/' ? home : NULL };
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        int r = config_parse(text, len, &env, &p, err);
        if (r < 0)
                return r;
        if ((r = config_resolve(p, err)) < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

int config_load(const char *workspace_dir, VsPolicy **ret, VsError **err) {
        return config_load_text(workspace_dir, ret, NULL, NULL, err);
}

int config_load_text(const char *workspace_dir, VsPolicy **ret, char **ret_text, size_t *ret_len, VsError **err) {
        _cleanup_free_ char *ws = realpath(workspace_dir, NULL);
        if (!ws)
                return vs_error_set_kind(err, -errno, "workspace_invalid", "workspace %s: %m", workspace_dir);
        struct stat st;
        if (stat(ws, &st) < 0 || !S_ISDIR(st.st_mode))
                return vs_error_set_kind(err, -ENOTDIR, "workspace_invalid", "workspace %s is not a directory", ws);

        _cleanup_free_ char *cfg = path_join(ws, VS_CONFIG_FILE);
        if (!cfg)
                return -ENOMEM;
        /* O_NONBLOCK: a FIFO named vectora.toml (anything the agent can
         * write can hold one) must not block the daemon's only loop in
         * open(); O_NOFOLLOW: the policy is this file, not what a link in
         * the tree points at. The type is checked before reading. */
        _cleanup_close_ int fd = open(cfg, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT) {
                _cleanup_(policy_freep) VsPolicy *p = calloc(1, sizeof *p);
                if (!p)
                        return -ENOMEM;
                p->workspace = TAKE_PTR(ws);
                p->config_path = TAKE_PTR(cfg);
                p->backend = backend_def_default(); /* never NULL in a policy (config.h) */
                p->unsandboxed_reason = strdup("no vectora.toml in the workspace");
                if (!p->unsandboxed_reason)
                        return -ENOMEM;
                *ret = TAKE_PTR(p);
                if (ret_text)
                        *ret_text = NULL;
                if (ret_len)
                        *ret_len = 0;
                return 0;
        }
        if (fd < 0) {
                /* A socket fails open() with ENXIO: say what it is instead. */
                struct stat lst;
                if (errno == ENXIO && lstat(cfg, &lst) == 0 && !S_ISREG(lst.st_mode))
                        return vs_error_set_kind(err, -EINVAL, "config_invalid", NOT_REGULAR_FMT, cfg,
                                                 file_type_name(lst.st_mode));
                if (errno == ELOOP)
                        return vs_error_set_kind(err, -ELOOP, "config_invalid",
                                                 VS_CONFIG_FILE ": is a symlink; the policy file must be a regular file in the workspace");
                return vs_error_set_kind(err, -errno, "config_invalid", VS_CONFIG_FILE ": cannot open %s: %m", cfg);
        }
        if (fstat(fd, &st) < 0)
                return vs_error_set_kind(err, -errno, "config_invalid", VS_CONFIG_FILE ": %m");
        if (!S_ISREG(st.st_mode))
                return vs_error_set_kind(err, -EINVAL, "config_invalid", NOT_REGULAR_FMT, cfg, file_type_name(st.st_mode));

        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_fd_all(fd, CONFIG_MAX_SIZE, &text, &len);
        if (r == -EFBIG)
                return vs_error_set_kind(err, r, "config_invalid", VS_CONFIG_FILE ": larger than %u bytes",
                                         CONFIG_MAX_SIZE);
        if (r < 0)
                return vs_error_set_kind(err, r, "config_invalid", VS_CONFIG_FILE ": read failed: %s", strerror(-r));
        /* The file as it was once read: a change during the read shows
         * in its times (and so does not look settled). */
        struct timespec read_at = now_wall();
        if (fstat(fd, &st) < 0)
                return vs_error_set_kind(err, -errno, "config_invalid", VS_CONFIG_FILE ": %m");

        _cleanup_(policy_freep) VsPolicy *p = NULL;
        if ((r = config_from_text(ws, text, len, &p, err)) < 0)
                return r;
        p->config_stat = st;
        p->has_config_stat = true;
        p->config_read_at = read_at;
        *ret = TAKE_PTR(p);
        if (ret_len)
                *ret_len = len;
        if (ret_text)
                *ret_text = TAKE_PTR(text);
        return 0;
}

/* VS_PROTECT_DEFAULT: protect-defaults.c, one row per file with its reason. */

int config_protected_paths(const VsPolicy *p, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        /* vectora.toml: the agent must not switch its own sandbox off.
         * The .git control files: what git executes or obeys (hooks
         * directly; config through core.hooksPath, core.fsmonitor,
         * core.sshCommand and friends; commondir moves both elsewhere).
         * These are the root .git's; the jail plan adds those of a .git
         * file's target, submodules and worktrees (git-control.h). */
        static const char *const rel[] = { VS_CONFIG_FILE,
                                           ".git/hooks",
                                           ".git/config",
                                           ".git/config.worktree",
                                           ".git/info/attributes",
                                           ".git/info/exclude",
                                           ".git/info/sparse-checkout",
                                           ".git/info/grafts",
                                           ".git/commondir",
                                           ".git/remotes",
                                           ".git/branches",
                                           ".git/objects/info/alternates" };
        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                int r = strv_consume(&l, path_join(p->workspace, rel[i]));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
