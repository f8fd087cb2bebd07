/* SPDX-License-Identifier: MIT */
#include "backend-local.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "mask-walk.h"
#include "path-util.h"
#include "strv.h"

static int add(char ***a, const char *s) {
        return strv_extend(a, s);
}

static int add2(char ***a, const char *x, const char *y) {
        int r = strv_extend(a, x);
        return r < 0 ? r : strv_extend(a, y);
}

static int add3(char ***a, const char *x, const char *y, const char *z) {
        int r = add2(a, x, y);
        return r < 0 ? r : strv_extend(a, z);
}

static int cmp_bind(const void *a, const void *b) {
        /* Shallower first, so a nested path is mounted over its parent. */
        size_t la = strlen(((const VsBind *)a)->path), lb = strlen(((const VsBind *)b)->path);
        return la < lb ? -1 : la > lb;
}

static int cmp_depth(const void *a, const void *b) {
        size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
        return la < lb ? -1 : la > lb;
}

int backend_binds(const VsPolicy *p, VsBind **ret, size_t *ret_n) {
        size_t nb = 0;
        VsBind *binds = calloc(p->n_rw + p->n_ro + 1, sizeof(VsBind));
        if (!binds)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_ro; i++)
                if (p->ro_paths[i].resolved)
                        binds[nb++] = (VsBind){ p->ro_paths[i].resolved, false };
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved)
                        binds[nb++] = (VsBind){ p->rw_paths[i].resolved, true };
        bool covered = false;
        for (size_t i = 0; i < nb; i++)
                covered |= path_startswith(p->workspace, binds[i].path) != NULL;
        if (!covered)
                binds[nb++] = (VsBind){ p->workspace, false };
        qsort(binds, nb, sizeof(VsBind), cmp_bind);
        *ret = binds;
        *ret_n = nb;
        return 0;
}

static int add_pins(char ***pins, const VsBind *binds, size_t nb, const char *path) {
        const VsBind *root = NULL;
        for (size_t i = 0; i < nb; i++)
                if (path_is_below_or_equal(path, binds[i].path) &&
                    (!root || strlen(binds[i].path) > strlen(root->path)))
                        root = &binds[i];
        if (!root || !root->rw)
                return 0;
        size_t rl = strlen(root->path);
        if (strcmp(root->path, "/") == 0)
                rl = 0;
        for (const char *slash = strchr(path + rl + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                _cleanup_free_ char *dir = strndup(path, (size_t)(slash - path));
                if (!dir)
                        return -ENOMEM;
                if (!strv_contains(*pins, dir)) {
                        int r = strv_extend(pins, dir);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int backend_pins(const VsBind *binds, size_t nb, char *const *protected_existing, const VsMaskPath *masks,
                 size_t n_masks, char ***ret) {
        _cleanup_strv_free_ char **pins = calloc(1, sizeof(char *));
        if (!pins)
                return -ENOMEM;
        int r;
        for (char *const *pp = protected_existing; pp && *pp; pp++)
                if ((r = add_pins(&pins, binds, nb, *pp)) < 0)
                        return r;
        for (size_t i = 0; i < n_masks; i++)
                if ((r = add_pins(&pins, binds, nb, masks[i].path)) < 0)
                        return r;
        qsort(pins, strv_length(pins), sizeof(char *), cmp_depth);
        *ret = TAKE_PTR(pins);
        return 0;
}

/* A pin's source: below its root's source when that root is bound from
 * elsewhere (an idmapped staging mount), else the path itself. */
static char *pin_source(const VsLocalEnv *env, const VsBind *binds, size_t nb, const char *pin) {
        const VsBind *root = NULL;
        for (size_t i = 0; i < nb; i++)
                if (path_is_below_or_equal(pin, binds[i].path) && (!root || strlen(binds[i].path) > strlen(root->path)))
                        root = &binds[i];
        for (size_t k = 0; root && k < env->n_bind_sources; k++)
                if (streq(env->bind_sources[k].dest, root->path)) {
                        char *s = NULL;
                        return asprintf(&s, "%s%s", env->bind_sources[k].src, pin + strlen(root->path)) < 0 ? NULL : s;
                }
        return strdup(pin);
}

int backend_local_argv(const VsPolicy *p, const VsLocalEnv *env, char ***ret_argv, VsError **err) {
        _cleanup_strv_free_ char **a = NULL;
        int r;

        if (!p->sandboxed)
                return vs_error_set_kind(err, -EINVAL, "internal", "workspace %s is not sandboxed", p->workspace);
        if (env->uid == 0 || env->gid == 0)
                return vs_error_set_kind(err, -EPERM, "sandbox_unavailable",
                                         "refusing to run a jail as host uid/gid 0; run the jail as an unprivileged user");

        char ids[2][32];
        snprintf(ids[0], sizeof ids[0], "%u", (unsigned)env->uid);
        snprintf(ids[1], sizeof ids[1], "%u", (unsigned)env->gid);

        /* Namespaces: everything but the network unless network is off. The
         * user namespace is also sealed (--disable-userns) so the jail cannot
         * nest a new one to regain capabilities. */
        if ((r = add(&a, env->bwrap)) < 0 || (r = add(&a, "--unshare-user")) < 0 || (r = add(&a, "--disable-userns")) < 0 ||
            (r = add(&a, "--unshare-pid")) < 0 || (r = add(&a, "--unshare-ipc")) < 0 || (r = add(&a, "--unshare-uts")) < 0 ||
            (r = add(&a, "--unshare-cgroup")) < 0)
                return r;
        if (!p->network && (r = add(&a, "--unshare-net")) < 0)
                return r;
        /* The worker is pid 1 (it reaps orphans); the jail dies with us and
         * has no controlling terminal (TIOCSTI). */
        if ((r = add(&a, "--as-pid-1")) < 0 || (r = add(&a, "--die-with-parent")) < 0 || (r = add(&a, "--new-session")) < 0 ||
            (r = add2(&a, "--cap-drop", "ALL")) < 0 || (r = add2(&a, "--uid", ids[0])) < 0 ||
            (r = add2(&a, "--gid", ids[1])) < 0 || (r = add2(&a, "--hostname", "vectora-sandbox")) < 0)
                return r;

        /* System directories, read-only. */
        for (char **d = env->system_dirs; d && *d; d++)
                if ((r = add3(&a, "--ro-bind", *d, *d)) < 0)
                        return r;
        for (size_t i = 0; i < env->n_symlinks; i++)
                if ((r = add3(&a, "--symlink", env->symlinks[i].target, env->symlinks[i].path)) < 0)
                        return r;
        /* Fresh /proc for the pid namespace, a minimal /dev (null, zero,
         * full, random, urandom, tty, pts) with a private /dev/shm, private
         * /tmp and home. */
        if ((r = add2(&a, "--proc", "/proc")) < 0 || (r = add2(&a, "--dev", "/dev")) < 0 ||
            (r = add2(&a, "--tmpfs", "/dev/shm")) < 0 || (r = add2(&a, "--tmpfs", "/tmp")) < 0 ||
            (r = add2(&a, "--tmpfs", VS_JAIL_HOME)) < 0)
                return r;

        /* rw_paths and ro_paths at their real paths, parents before children. */
        size_t nb = 0;
        _cleanup_free_ VsBind *binds = NULL;
        if ((r = backend_binds(p, &binds, &nb)) < 0)
                return r;
        for (size_t i = 0; i < nb; i++) {
                const char *src = binds[i].path;
                for (size_t k = 0; k < env->n_bind_sources; k++)
                        if (streq(env->bind_sources[k].dest, binds[i].path))
                                src = env->bind_sources[k].src;
                if ((r = add3(&a, binds[i].rw ? "--bind" : "--ro-bind", src, binds[i].path)) < 0)
                        return r;
        }

        /* Pin the directories leading to protected and masked paths. */
        _cleanup_strv_free_ char **pins = NULL;
        if ((r = backend_pins(binds, nb, env->protected_existing, env->masks, env->n_masks, &pins)) < 0)
                return r;
        for (char **pp = pins; pp && *pp; pp++) {
                _cleanup_free_ char *src = pin_source(env, binds, nb, *pp);
                if (!src)
                        return -ENOMEM;
                if ((r = add3(&a, "--bind", src, *pp)) < 0)
                        return r;
        }

        /* Protected paths over the binds: the agent cannot rewrite its own
         * policy or plant code the host runs later. */
        for (char **pp = env->protected_existing; pp && *pp; pp++)
                if ((r = add3(&a, "--ro-bind", *pp, *pp)) < 0)
                        return r;

        /* Masks last, over everything: empty and read-only, never a tmpfs
         * (a writable tmpfs would let the agent plant a file there). */
        for (size_t i = 0; i < env->n_masks; i++)
                if ((r = add3(&a, "--ro-bind", env->masks[i].dir ? env->empty_dir : env->empty_file,
                              env->masks[i].path)) < 0)
                        return r;

        /* GPU only when asked: device nodes and a read-only /sys. */
        if (!p->no_gpu) {
                for (char **g = env->gpu_nodes; g && *g; g++)
                        if ((r = add3(&a, "--dev-bind", *g, *g)) < 0)
                                return r;
                if ((r = add3(&a, "--ro-bind", "/sys", "/sys")) < 0)
                        return r;
        }

        if ((r = add3(&a, "--ro-bind", env->worker_path, VS_JAIL_WORKER_PATH)) < 0)
                return r;

        /* A minimal environment: nothing of the daemon's leaks in. */
        if ((r = add(&a, "--clearenv")) < 0)
                return r;
        for (char **e = env->env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq)
                        continue;
                _cleanup_free_ char *k = strndup(*e, (size_t)(eq - *e));
                if (!k || (r = add3(&a, "--setenv", k, eq + 1)) < 0)
                        return k ? r : -ENOMEM;
        }
        if ((r = add2(&a, "--chdir", p->workspace)) < 0 || (r = add(&a, "--")) < 0 ||
            (r = add(&a, VS_JAIL_WORKER_PATH)) < 0)
                return r;

        *ret_argv = TAKE_PTR(a);
        return 0;
}

int backend_collect_masks(const VsPolicy *p, VsMaskPath **ret, size_t *ret_n, VsError **err) {
        _cleanup_(glob_set_freep) VsGlobSet *set = NULL;
        int r = glob_set_new(p->mask, &set, err);
        if (r < 0)
                return r;
        VsMaskPath *out = NULL;
        size_t n = 0;
        /* The same patterns apply below every listed root, relative to it. */
        for (size_t pass = 0; pass < 2; pass++) {
                const VsPath *list = pass ? p->ro_paths : p->rw_paths;
                size_t nl = pass ? p->n_ro : p->n_rw;
                for (size_t i = 0; i < nl; i++) {
                        if (!list[i].resolved)
                                continue;
                        MaskList ml = { 0 };
                        r = mask_walk(list[i].resolved, set, &ml, err);
                        if (r < 0)
                                goto fail;
                        VsMaskPath *nn = realloc(out, (n + ml.n + 1) * sizeof *nn);
                        if (!nn) {
                                mask_list_done(&ml);
                                r = -ENOMEM;
                                goto fail;
                        }
                        out = nn;
                        for (size_t k = 0; k < ml.n; k++) {
                                /* Symlinks are not mounted over: bwrap would follow them.
                                 * Their targets are masked in their own right if they match. */
                                if (ml.items[k].kind == MASK_SYMLINK)
                                        continue;
                                out[n].path = path_join(list[i].resolved, ml.items[k].relpath);
                                out[n].dir = ml.items[k].kind == MASK_DIR;
                                if (!out[n].path) {
                                        mask_list_done(&ml);
                                        r = -ENOMEM;
                                        goto fail;
                                }
                                n++;
                        }
                        mask_list_done(&ml);
                }
        }
        *ret = out;
        *ret_n = n;
        return 0;
fail:
        for (size_t k = 0; k < n; k++)
                free(out[k].path);
        free(out);
        return r;
}

/* ---- host facts -------------------------------------------------------- */

void backend_local_env_done(VsLocalEnv *env) {
        strv_free(env->system_dirs);
        env->system_dirs = NULL;
        for (size_t i = 0; i < env->n_symlinks; i++) {
                free(env->symlinks[i].target);
                free(env->symlinks[i].path);
        }
        free(env->symlinks);
        env->symlinks = NULL;
        env->n_symlinks = 0;
        strv_free(env->gpu_nodes);
        env->gpu_nodes = NULL;
}

int backend_local_probe(VsLocalEnv *env, VsError **err) {
        /* What a shell and a toolchain need, read-only. /etc is included for
         * passwd, resolv.conf, ld.so.cache, certificates: files a non-root
         * uid could read on the host anyway. */
        static const char *const sys[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                           "/etc", "/opt" };
        static const char *const gpu_prefixes[] = { "nvidia", "dri", "kfd" };
        _cleanup_strv_free_ char **dirs = calloc(1, sizeof(char *));
        _cleanup_strv_free_ char **gpu = calloc(1, sizeof(char *));
        if (!dirs || !gpu)
                return -ENOMEM;
        VsSymlink *links = NULL;
        size_t n_links = 0;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(sys); i++) {
                struct stat st;
                if (lstat(sys[i], &st) < 0)
                        continue;
                if (S_ISLNK(st.st_mode)) {
                        char target[4096];
                        ssize_t k = readlink(sys[i], target, sizeof target - 1);
                        if (k <= 0)
                                continue;
                        target[k] = 0;
                        VsSymlink *n = realloc(links, (n_links + 1) * sizeof *n);
                        if (!n)
                                goto oom;
                        links = n;
                        links[n_links].target = strdup(target);
                        links[n_links].path = strdup(sys[i]);
                        n_links++;
                        if (!links[n_links - 1].target || !links[n_links - 1].path)
                                goto oom;
                } else if (S_ISDIR(st.st_mode)) {
                        if ((r = strv_extend(&dirs, sys[i])) < 0)
                                goto fail;
                }
        }

        DIR *d = opendir("/dev");
        if (d) {
                struct dirent *de;
                while ((de = readdir(d)))
                        for (size_t i = 0; i < ELEMENTSOF(gpu_prefixes); i++)
                                if (strncmp(de->d_name, gpu_prefixes[i], strlen(gpu_prefixes[i])) == 0) {
                                        if ((r = strv_extendf(&gpu, "/dev/%s", de->d_name)) < 0) {
                                                closedir(d);
                                                goto fail;
                                        }
                                        break;
                                }
                closedir(d);
        }

        env->system_dirs = TAKE_PTR(dirs);
        env->gpu_nodes = TAKE_PTR(gpu);
        env->symlinks = links;
        env->n_symlinks = n_links;
        return 0;
oom:
        r = -ENOMEM;
fail:
        for (size_t i = 0; i < n_links; i++) {
                free(links[i].target);
                free(links[i].path);
        }
        free(links);
        return vs_error_set(err, r, "probing the host's system directories: %s", strerror(-r));
}

int backend_local_jail_env(const char *user, char ***ret) {
        _cleanup_strv_free_ char **e = NULL;
        int r;
        if ((r = strv_extend(&e, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")) < 0 ||
            (r = strv_extend(&e, "HOME=" VS_JAIL_HOME)) < 0 || (r = strv_extendf(&e, "USER=%s", user)) < 0 ||
            (r = strv_extendf(&e, "LOGNAME=%s", user)) < 0 || (r = strv_extend(&e, "SHELL=/bin/sh")) < 0 ||
            (r = strv_extend(&e, "TERM=dumb")) < 0 || (r = strv_extend(&e, "LANG=C.UTF-8")) < 0 ||
            (r = strv_extend(&e, "TMPDIR=/tmp")) < 0)
                return r;
        *ret = TAKE_PTR(e);
        return 0;
}

static bool needs_quote(const char *s) {
        if (!*s)
                return true;
        for (; *s; s++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *s))
                        return true;
        return false;
}

char *argv_quote(char *const *argv) {
        size_t n = 1;
        for (char *const *a = argv; a && *a; a++)
                n += strlen(*a) * 4 + 3;
        char *out = malloc(n), *o = out;
        if (!out)
                return NULL;
        for (char *const *a = argv; a && *a; a++) {
                if (a != argv)
                        *o++ = ' ';
                if (!needs_quote(*a)) {
                        o = stpcpy(o, *a);
                        continue;
                }
                *o++ = '\'';
                for (const char *c = *a; *c; c++) {
                        if (*c == '\'') {
                                o = stpcpy(o, "'\\''");
                        } else
                                *o++ = *c;
                }
                *o++ = '\'';
        }
        *o = 0;
        return out;
}
