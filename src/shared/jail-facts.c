/* SPDX-License-Identifier: MIT */
/* The host-touching half of the jail plan: the mask walk, the protected
 * paths as they exist, the empty mount sources. The same code runs on the
 * daemon's host (local, docker) and on an ssh remote (its launcher). */
#include "jail-plan.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "git-control.h"
#include "git-init.h"
#include "git-scan.h"
#include "glob.h"
#include "mask-walk.h"
#include "path-util.h"
#include "strv.h"

static void mask_paths_free(VsMaskPath *m, size_t n) {
        for (size_t k = 0; k < n; k++)
                free(m[k].path);
        free(m);
}

void jail_facts_done(VsJailFacts *f) {
        if (!f)
                return;
        mask_paths_free(f->masks, f->n_masks);
        mask_paths_free(f->protected_missing, f->n_missing);
        strv_free(f->protected_existing);
        strv_free(f->git_controls);
        strv_free(f->protect_matches);
        if (f->git_base) {
                git_repos_done(f->git_base);
                free(f->git_base);
        }
        *f = (VsJailFacts){ 0 };
}

static int add_mask_path(VsMaskPath **a, size_t *n, char *path, bool dir) {
        if (!path)
                return -ENOMEM;
        VsMaskPath *nn = realloc(*a, (*n + 1) * sizeof *nn);
        if (!nn) {
                free(path);
                return -ENOMEM;
        }
        *a = nn;
        nn[(*n)++] = (VsMaskPath){ path, dir };
        return 0;
}

/* Every resolved listed root walked with the mask patterns, relative to
 * it. */
static int collect_masks(const VsPolicy *p, VsJailFacts *f, VsError **err) {
        _cleanup_(glob_set_freep) VsGlobSet *set = NULL;
        int r = mask_set_compile(p->mask, "mask", &set, err);
        if (r < 0)
                return r;
        for (size_t pass = 0; pass < 2; pass++) {
                const VsPath *list = pass ? p->ro_paths : p->rw_paths;
                size_t nl = pass ? p->n_ro : p->n_rw;
                for (size_t i = 0; i < nl; i++) {
                        if (!list[i].resolved)
                                continue;
                        MaskList ml = { 0 };
                        if ((r = mask_walk(list[i].resolved, set, &ml, err)) < 0)
                                return r;
                        for (size_t k = 0; r >= 0 && k < ml.n; k++)
                                /* Symlinks are not mounted over: bwrap would follow them.
                                 * Their targets are masked in their own right if they match. */
                                if (ml.items[k].kind != MASK_SYMLINK)
                                        r = add_mask_path(&f->masks, &f->n_masks,
                                                          path_join(list[i].resolved, ml.items[k].relpath),
                                                          ml.items[k].kind == MASK_DIR);
                        mask_list_done(&ml);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* An existing protected path is protected (a symlinked one where it
 * leads). */
static int add_existing(VsJailFacts *f, const char *path, const struct stat *st) {
        if (!S_ISLNK(st->st_mode))
                return strv_contains(f->protected_existing, path) ? 0 : strv_extend(&f->protected_existing, path);
        _cleanup_free_ char *real = realpath(path, NULL);
        if (!real || strv_contains(f->protected_existing, real))
                return 0;
        return strv_extend(&f->protected_existing, real);
}

static bool below_rw(const VsPolicy *p, const char *path) {
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved && path_is_below_or_equal(path, p->rw_paths[i].resolved))
                        return true;
        return false;
}

/* The .git control files (git-control.h): an existing one is protected;
 * a missing one where the jail could create it gets its placeholder
 * first, then is protected like the others. With git_init = true a
 * missing root .git where the jail could create one is a repository
 * first (git-init.h), whose control files are then those. */
static int collect_git(const VsPolicy *p, VsJailFacts *f, VsError **err) {
        VsGitControls gc = { 0 };
        _cleanup_free_ char *dotgit = path_join(p->workspace, ".git");
        if (!dotgit)
                return -ENOMEM;
        /* The repositories there now: the host's (git-scan.h), sealed
         * below, and what the jail adds is put aside later. One walk. */
        if (!(f->git_base = calloc(1, sizeof *f->git_base)))
                return -ENOMEM;
        int r = git_scan_policy(p, true, f->git_base);
        if (r < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "cannot list the repositories under %s: %s",
                                         p->workspace, strerror(-r));
        r = p->git_init && below_rw(p, dotgit) ? git_repo_make(p->workspace, err) : 0;
        if (r < 0)
                return r;
        r = git_controls_collect_scan(p->workspace, f->git_base, &gc);
        if (r == -EBADMSG) {
                r = vs_error_set_kind(err, r, "sandbox_unavailable", "%s", gc.error ? gc.error : "a git config cannot be read");
                git_controls_done(&gc);
                return r;
        }
        if (r == -E2BIG)
                return vs_error_set_kind(err, r, "sandbox_unavailable",
                                         "%s/.git: too many nested git directories (submodules, worktrees) to protect",
                                         p->workspace);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < gc.n; i++) {
                const VsGitControl *c = &gc.items[i];
                struct stat st;
                if ((r = strv_extend(&f->git_controls, c->path)) < 0)
                        break;
                if (lstat(c->path, &st) < 0 && errno == ENOENT && c->placeholder && below_rw(p, c->path)) {
                        _cleanup_(vs_error_freep) VsError *perr = NULL;
                        r = git_control_make_placeholder(c, &perr);
                        /* Not root: the jail runs as this same uid, with less
                         * (Landlock, no capabilities), so what this process
                         * may not create there (a .git owned by root), the
                         * jail may not either. Root is refused only where the
                         * file system says so for root alone (NFS root_squash),
                         * while the jail's uid might be let in: fail closed. */
                        if (r == -EACCES || r == -EPERM || r == -EROFS) {
                                if (geteuid() != 0 || r == -EROFS)
                                        r = 0;
                        }
                        if (r < 0) {
                                if (err && perr)
                                        *err = TAKE_PTR(perr);
                                break;
                        }
                }
                if (lstat(c->path, &st) == 0)
                        r = add_existing(f, c->path, &st);
        }
        git_controls_done(&gc);
        return r;
}

/* What the protect globs name below the writable roots, found by the
 * same walk as the masks (a matched directory is sealed whole). Under a
 * read-only root everything is read-only already. A missing one is not
 * made: an empty .envrc or tasks.json would itself change what direnv or
 * the editor does; the file tools refuse to create it and the daemon
 * reports one a command creates (host_run_files). */
static int collect_protect_globs(const VsPolicy *p, VsJailFacts *f, VsError **err) {
        if (!(f->protect_matches = calloc(1, sizeof(char *))))
                return -ENOMEM;
        if (!p->protect || !p->protect[0])
                return 0;
        _cleanup_(glob_set_freep) VsGlobSet *set = NULL;
        int r = mask_set_compile(p->protect, "protect", &set, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n_rw; i++) {
                if (!p->rw_paths[i].resolved)
                        continue;
                MaskList ml = { 0 };
                if ((r = mask_walk(p->rw_paths[i].resolved, set, &ml, err)) < 0)
                        return vs_error_prefix(err, "finding the paths to protect");
                for (size_t k = 0; r >= 0 && k < ml.n; k++) {
                        _cleanup_free_ char *path = path_join(p->rw_paths[i].resolved, ml.items[k].relpath);
                        struct stat st;
                        if (!path)
                                r = -ENOMEM;
                        else if (lstat(path, &st) == 0 && (r = add_existing(f, path, &st)) >= 0 &&
                                 !strv_contains(f->protect_matches, path))
                                r = strv_extend(&f->protect_matches, path);
                }
                mask_list_done(&ml);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Each protected path: an existing one is protected (a symlinked one where
 * it leads); a missing one whose parent directory exists is recorded, so
 * the plan seals it with an empty mount and the agent cannot create it.
 * Those under .git are the git controls' (collect_git). */
static int collect_protected(const VsPolicy *p, char *const *protected_paths, VsJailFacts *f, VsError **err) {
        if (!(f->protected_existing = calloc(1, sizeof(char *))) || !(f->git_controls = calloc(1, sizeof(char *))))
                return -ENOMEM;
        _cleanup_free_ char *dotgit = path_join(p->workspace, ".git");
        if (!dotgit)
                return -ENOMEM;
        for (char *const *pp = protected_paths; pp && *pp; pp++) {
                struct stat st;
                int r = 0;
                if (path_startswith(*pp, dotgit))
                        continue;
                if (lstat(*pp, &st) == 0)
                        r = add_existing(f, *pp, &st);
                else if (errno == ENOENT) {
                        _cleanup_free_ char *parent = strdup(*pp);
                        char *slash = parent ? strrchr(parent, '/') : NULL;
                        if (!slash)
                                return -ENOMEM;
                        *slash = 0;
                        if (lstat(parent, &st) == 0 && S_ISDIR(st.st_mode))
                                r = add_mask_path(&f->protected_missing, &f->n_missing, strdup(*pp), false);
                }
                if (r < 0)
                        return r;
        }
        int r = collect_git(p, f, err);
        return r < 0 ? r : collect_protect_globs(p, f, err);
}

int jail_facts_collect(const VsPolicy *p, char *const *protected_paths, VsJailFacts *ret, VsError **err) {
        VsJailFacts f = { 0 };
        int r = collect_masks(p, &f, err);
        if (r < 0) {
                jail_facts_done(&f);
                return vs_error_prefix(err, "finding the paths to mask");
        }
        if ((r = collect_protected(p, protected_paths, &f, err)) < 0) {
                jail_facts_done(&f);
                return r;
        }
        *ret = f;
        return 0;
}

int jail_empty_sources(const char *dir, char **ret_file, char **ret_dir, VsError **err) {
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create runtime directory %s: %m", dir);
        _cleanup_free_ char *f = path_join(dir, "empty-file");
        _cleanup_free_ char *d = path_join(dir, "empty-dir");
        if (!f || !d)
                return -ENOMEM;
        struct stat st;
        if (lstat(f, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != 0) {
                unlink(f);
                int fd = open(f, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
                if (fd < 0 && errno != EEXIST)
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create %s: %m", f);
                safe_close(fd);
        }
        if (lstat(d, &st) < 0 || !S_ISDIR(st.st_mode)) {
                unlink(d);
                if (mkdir(d, 0555) < 0 && errno != EEXIST)
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create %s: %m", d);
        }
        /* The jail may run as another uid than the daemon: keep them readable. */
        chmod(dir, 0755);
        *ret_file = TAKE_PTR(f);
        *ret_dir = TAKE_PTR(d);
        return 0;
}

/* The listed paths as this host resolves them; a missing one is left out,
 * or refused under lockdown (rule 5), as is one that is a symlink here. */
static int resolve_remote_list(char *const *in, bool lockdown, VsPath **ret, size_t *ret_n, VsError **err) {
        size_t n = strv_length(in), k = 0;
        VsPath *out = calloc(n + 1, sizeof *out);
        if (!out)
                return -ENOMEM;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                char *real = realpath(in[i], NULL);
                if (!real) {
                        if (lockdown)
                                r = vs_error_set_kind(err, -errno, "sandbox_unavailable",
                                                      "lockdown: %s does not exist on the remote host (%m)", in[i]);
                        continue;
                }
                if (lockdown && !streq(real, in[i])) {
                        r = vs_error_set_kind(err, -ELOOP, "sandbox_unavailable",
                                              "lockdown: %s is a symlink on the remote host (to %s)", in[i], real);
                        free(real);
                        break;
                }
                out[k].written = in[i];
                out[k++].resolved = real;
        }
        if (r < 0) {
                for (size_t i = 0; i < k; i++)
                        free(out[i].resolved);
                free(out);
                return r;
        }
        *ret = out;
        *ret_n = k;
        return 0;
}

static void remote_list_free(VsPath *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                free(l[i].resolved);
        free(l);
}

int jail_plan_remote(const VsRemoteJail *j, const char *empty_file, const char *empty_dir, VsJailPlan **ret,
                     VsError **err) {
        VsPolicy p = {
                .workspace = (char *)j->workspace,
                .sandboxed = true,
                .backend = VS_BACKEND_LOCAL,
                .mask = j->mask,
                .protect = j->protect,
                .git_init = j->git_init,
                .no_gpu = j->no_gpu,
                .lockdown = j->lockdown,
                .network = j->network,
        };
        int r = resolve_remote_list(j->rw, j->lockdown, &p.rw_paths, &p.n_rw, err);
        if (r >= 0)
                r = resolve_remote_list(j->ro, j->lockdown, &p.ro_paths, &p.n_ro, err);
        VsJailFacts f = { 0 };
        if (r >= 0)
                r = jail_facts_collect(&p, j->protected_paths, &f, err);
        if (r >= 0)
                r = jail_plan_build(&p, j->protected_paths, &f, empty_file, empty_dir, j->env, ret);
        jail_facts_done(&f);
        remote_list_free(p.rw_paths, p.n_rw);
        remote_list_free(p.ro_paths, p.n_ro);
        return r;
}
