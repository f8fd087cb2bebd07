/* SPDX-License-Identifier: MIT */
#include "paths.h"

#include "forbidden.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "vs-build-config.h"
#include "path-util.h"

int vs_worker_path(char **ret, VsError **err) {
        /* The installed worker, or the one VECTORA_WORKER names (the test
         * suite's, from the build tree): never a path compiled in from the
         * tree this program was built in (an older worker, or one a user
         * can rewrite). */
        const char *e = getenv("VECTORA_WORKER");
        const char *cands[] = { e, VS_LIBEXECDIR "/vectora-worker" };
        for (size_t i = 0; i < ELEMENTSOF(cands); i++) {
                if (!cands[i] || !cands[i][0])
                        continue;
                if (access(cands[i], X_OK) == 0) {
                        *ret = strdup(cands[i]);
                        return *ret ? 0 : -ENOMEM;
                }
                if (i == 0)
                        return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                                 "VECTORA_WORKER=%s is not an executable file", e);
        }
        return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                 "vectora-worker not found in %s; reinstall vectora-sandbox or set VECTORA_WORKER",
                                 VS_LIBEXECDIR);
}

int vs_static_worker_path(const char *worker, char **ret) {
        const char *e = getenv("VECTORA_WORKER_STATIC");
        if (e && *e) {
                *ret = strdup(e);
                return *ret ? 0 : -ENOMEM;
        }
        _cleanup_free_ char *dir = strdup(worker);
        if (!dir)
                return -ENOMEM;
        char *slash = strrchr(dir, '/');
        if (slash) {
                *slash = 0;
                _cleanup_free_ char *cand = path_join(*dir ? dir : "/", "vectora-worker-static");
                if (!cand)
                        return -ENOMEM;
                if (access(cand, X_OK) == 0) {
                        *ret = TAKE_PTR(cand);
                        return 0;
                }
        }
        *ret = strdup(worker);
        return *ret ? 0 : -ENOMEM;
}

/* $XDG_RUNTIME_DIR when it is a directory of ours (a `su` keeps the other
 * user's), else /run/user/UID when that is ours (what a login makes: a
 * client started without the variable, e.g. an MCP client's default
 * environment, finds the same daemon), else NULL. */
static const char *user_runtime_base(void) {
        static _Thread_local char run_user[64]; /* the thread pool's starts ask too */
        const char *x = getenv("XDG_RUNTIME_DIR");
        struct stat st;
        if (x && x[0] == '/' && stat(x, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
                return x;
        if (x && *x)
                return NULL; /* named, and not ours: not overridden by a guess */
        snprintf(run_user, sizeof run_user, "/run/user/%u", (unsigned)geteuid());
        if (lstat(run_user, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022))
                return run_user;
        return NULL;
}

static bool have_run(void) {
        struct stat st;
        return stat("/run", &st) == 0 && S_ISDIR(st.st_mode);
}

int vs_runtime_dir(char **ret, VsError **err) {
        return vs_runtime_dir_named(NULL, ret, err);
}

int vs_runtime_dir_named(const char *want, char **ret, VsError **err) {
        const char *x = user_runtime_base();
        char *d = NULL;
        /* As root the jails run as other users, who must reach the empty
         * mask sources here: never under a 0700 /run/user/0. */
        if (want) {
                if (want[0] != '/')
                        return vs_error_set(err, -EINVAL, "the runtime directory must be an absolute path, not '%s'", want);
                d = path_normalize(want);
        } else if (geteuid() == 0) {
                d = strdup(have_run() ? "/run/vectora-sandbox" : "/tmp/vectora-sandbox-0");
                if (!d)
                        return -ENOMEM;
        } else if (x)
                d = path_join(x, "vectora-sandbox");
        if (!d && asprintf(&d, "/tmp/vectora-sandbox-%u", (unsigned)geteuid()) < 0)
                d = NULL;
        if (!d)
                return -ENOMEM;
        if (mkdir(d, 0755) < 0 && errno != EEXIST) {
                int r = vs_error_set(err, -errno, "cannot create runtime directory %s: %m", d);
                free(d);
                return r;
        }
        /* In a shared /tmp another user could have planted it first. */
        struct stat st;
        if (lstat(d, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
                int r = vs_error_set(err, -EPERM,
                                     "runtime directory %s is not a directory owned by uid %u and writable only by it; remove it",
                                     d, (unsigned)geteuid());
                free(d);
                return r;
        }
        *ret = d;
        return 0;
}

int vs_default_socket(char **ret) {
        const char *e = getenv("VECTORA_SANDBOX_SOCKET");
        char *s = NULL;
        if (e && *e)
                s = strdup(e);
        else if (geteuid() == 0 && have_run())
                /* What the systemd socket unit's %t/vectora-sandbox.sock is for the system manager. */
                s = strdup("/run/vectora-sandbox.sock");
        else if (geteuid() != 0 && user_runtime_base())
                /* ... and for a user's manager. */
                s = path_join(user_runtime_base(), "vectora-sandbox.sock");
        else if (asprintf(&s, "/tmp/vectora-sandbox-%u/sock", (unsigned)geteuid()) < 0)
                s = NULL;
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static void reserve(const char *dir, bool below_too) {
        (void)forbidden_reserve(dir, below_too);
        _cleanup_free_ char *real = realpath(dir, NULL);
        if (real)
                (void)forbidden_reserve(real, below_too);
}

void vs_reserve_own_dirs(const char *socket_path) {
        _cleanup_free_ char *rt = NULL, *sock = NULL;
        if (vs_runtime_dir(&rt, NULL) >= 0)
                reserve(rt, true);
        if ((!socket_path || !*socket_path) && vs_default_socket(&sock) >= 0)
                socket_path = sock;
        if (!socket_path || socket_path[0] != '/')
                return;
        _cleanup_free_ char *dir = strdup(socket_path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (!slash)
                return;
        if (slash == dir)
                slash[1] = 0;
        else
                *slash = 0;
        reserve(dir, false);
        /* The socket itself, as named and through its real directory (it
         * may not exist yet). */
        (void)forbidden_reserve_socket(socket_path);
        const char *base = strrchr(socket_path, '/') + 1;
        _cleanup_free_ char *real = realpath(dir, NULL), *real_sock = real && *base ? path_join(real, base) : NULL;
        if (real_sock)
                (void)forbidden_reserve_socket(real_sock);
}
