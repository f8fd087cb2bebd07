/* SPDX-License-Identifier: MIT */
#include "backend-local.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "jail-plan.h"
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
            (r = add2(&a, "--tmpfs", "/dev/shm")) < 0 || (r = add2(&a, "--tmpfs", "/tmp")) < 0)
                return r;
        /* The workspace's kept home (its uid's own directory, outside every
         * workspace), else a fresh tmpfs each start. */
        if ((r = env->home_dir ? add3(&a, "--bind", env->home_dir, VS_JAIL_HOME) : add2(&a, "--tmpfs", VS_JAIL_HOME)) < 0)
                return r;

        /* The plan's mounts in its order: listed paths (parents first),
         * pins, protected paths, then masks over everything (empty and
         * read-only, never a tmpfs the agent could plant a file in). */
        for (size_t i = 0; i < env->plan->n_mounts; i++) {
                const VsJailMount *m = &env->plan->mounts[i];
                bool writable = m->kind == VS_MOUNT_RW || m->kind == VS_MOUNT_PIN;
                if ((r = add3(&a, writable ? "--bind" : "--ro-bind", m->src, m->dest)) < 0)
                        return r;
        }

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
        /* The host user's git identity, read-only (GIT_CONFIG_SYSTEM names it). */
        if (env->git_config && env->git_config_dest &&
            (r = add3(&a, "--ro-bind", env->git_config, env->git_config_dest)) < 0)
                return r;
        /* The workspace's CA among the system's (secrets over HTTPS):
         * read-only, so the jail cannot add a CA of its own for the host. */
        if (env->ca_bundle && ((r = add3(&a, "--ro-bind", env->ca_bundle, VS_JAIL_CA_BUNDLE)) < 0 ||
                               (env->ca_over_system && (r = add3(&a, "--ro-bind", env->ca_bundle, VS_SYSTEM_CA_FILE)) < 0)))
                return r;
        /* The allowlist's only way out; connect() on a socket is not a
         * write to the mount, so read-only is enough. */
        if (env->proxy_socket && (r = add3(&a, "--ro-bind", env->proxy_socket, VS_JAIL_PROXY_SOCKET)) < 0)
                return r;

        /* A minimal environment: nothing of the daemon's leaks in. */
        if ((r = add(&a, "--clearenv")) < 0)
                return r;
        for (char **e = env->plan->env; e && *e; e++) {
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

/* What a shell and a toolchain need, read-only. /etc is included for
 * passwd, resolv.conf, ld.so.cache, certificates: files a non-root uid
 * could read on the host anyway. */
const char *const vs_local_system_dirs[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                             "/etc", "/opt", NULL };

int backend_local_probe(VsLocalEnv *env, VsError **err) {
        const char *const *sys = vs_local_system_dirs;
        static const char *const gpu_prefixes[] = { "nvidia", "dri", "kfd" };
        _cleanup_strv_free_ char **dirs = calloc(1, sizeof(char *));
        _cleanup_strv_free_ char **gpu = calloc(1, sizeof(char *));
        if (!dirs || !gpu)
                return -ENOMEM;
        VsSymlink *links = NULL;
        size_t n_links = 0;
        int r;

        for (size_t i = 0; sys[i]; i++) {
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

const VsBackendDef backend_local_def = {
        .name = "local",
        .host_files = true,
        .has_proxy = true,
        .needs_bwrap = true,
};
