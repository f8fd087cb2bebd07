/* SPDX-License-Identifier: MIT */
/* --launch-jail POLICY_HEX: on the remote host of an ssh workspace.
 *
 * The remote's own paths and masks are only known there: this walks the
 * masks with the same code as the daemon, builds the bubblewrap command with
 * the same builder as the local backend, and execs it with this binary as
 * the jailed worker. Without bubblewrap the worker runs as the remote user
 * alone (reported degraded), except under lockdown, which refuses. A refusal
 * is told through the normal handshake (hello, then init_failed), so the
 * daemon reports it like any other start failure. */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backend-local.h"
#include "backend-ssh.h"
#include "fd-util.h"
#include "glob.h"
#include "launcher.h"
#include "log.h"
#include "mask-walk.h"
#include "path-util.h"
#include "strv.h"

_printf_(1, 2) _noreturn_ static void refuse(const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        log_error("%s", msg);

        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        struct utsname u;
        ProtocolHello h = { .version = PROTOCOL_VERSION, .arch = uname(&u) == 0 ? u.machine : "unknown", .pid = getpid() };
        if (protocol_encode_hello(&out, &h) >= 0)
                (void)!write_all(STDOUT_FILENO, out.data, out.len);
        /* Wait for init (whatever it says) so the refusal is its answer. */
        for (;;) {
                char c;
                ssize_t k = read(STDIN_FILENO, &c, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0 || c == '\n')
                        break;
        }
        strbuf_clear(&out);
        if (protocol_encode_init_failed(&out, msg) >= 0)
                (void)!write_all(STDOUT_FILENO, out.data, out.len);
        _exit(125);
}

static char *find_in_path(const char *name) {
        const char *path = getenv("PATH");
        _cleanup_free_ char *all = NULL;
        if (asprintf(&all, "%s:/usr/bin:/bin:/usr/local/bin", path ? path : "") < 0)
                return NULL;
        char *save = NULL;
        for (char *d = strtok_r(all, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                if (d[0] != '/')
                        continue;
                char *f = path_join(d, name);
                if (f && access(f, X_OK) == 0)
                        return f;
                free(f);
        }
        return NULL;
}

static int ensure_empty(const char *dir, char **ret_file, char **ret_dir) {
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_free_ char *f = path_join(dir, "empty-file"), *d = path_join(dir, "empty-dir");
        if (!f || !d)
                return -ENOMEM;
        struct stat st;
        if (lstat(f, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != 0) {
                unlink(f);
                int fd = open(f, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
                if (fd < 0 && errno != EEXIST)
                        return -errno;
                safe_close(fd);
        }
        if (lstat(d, &st) < 0 || !S_ISDIR(st.st_mode)) {
                unlink(d);
                if (mkdir(d, 0555) < 0 && errno != EEXIST)
                        return -errno;
        }
        *ret_file = TAKE_PTR(f);
        *ret_dir = TAKE_PTR(d);
        return 0;
}

/* Resolves the listed paths here; a missing one is skipped, or refused
 * under lockdown (rule 5). */
static VsPath *resolve_list(char **in, bool lockdown, size_t *ret_n) {
        size_t n = strv_length(in), k = 0;
        VsPath *out = calloc(n + 1, sizeof *out);
        if (!out)
                refuse("out of memory");
        for (size_t i = 0; i < n; i++) {
                char buf[PATH_MAX];
                if (!realpath(in[i], buf)) {
                        if (lockdown)
                                refuse("lockdown: %s does not exist on the remote host (%m)", in[i]);
                        continue;
                }
                if (lockdown && !streq(buf, in[i]))
                        refuse("lockdown: %s is a symlink on the remote host (to %s)", in[i], buf);
                out[k].written = in[i];
                if (!(out[k].resolved = strdup(buf)))
                        refuse("out of memory");
                k++;
        }
        *ret_n = k;
        return out;
}

static void collect_masks(const VsPolicy *p, VsMaskPath **ret, size_t *ret_n) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (backend_collect_masks(p, ret, ret_n, &err) < 0)
                refuse("finding the paths to mask on the remote host: %s", vs_error_message(err));
}

int launch_jail_main(int argc, char **argv) {
        if (argc != 3) {
                log_error("usage: vectora-worker --launch-jail POLICY_HEX");
                return 2;
        }
        _cleanup_(vs_error_freep) VsError *err = NULL;
        VsRemoteJail j = { 0 };
        json_t *obj = NULL;
        if (backend_ssh_jail_decode(argv[2], &j, &obj, &err) < 0)
                refuse("the remote launcher got a bad policy: %s", vs_error_message(err));

        char self[PATH_MAX];
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k <= 0)
                refuse("cannot find the worker's own path on the remote host: %m");
        self[k] = 0;

        if (getuid() == 0 || getgid() == 0)
                refuse("the remote user is root; the jail never runs as root: set sandbox.ssh.user to an unprivileged user");
        struct stat st;
        if (stat(j.workspace, &st) < 0 || !S_ISDIR(st.st_mode))
                refuse("the workspace %s does not exist on the remote host (set sandbox.ssh.remote_root to its checkout there)",
                       j.workspace);

        /* VECTORA_BWRAP (from the remote's sshd or profile): a bwrap to use,
         * or "none" to act as a host without one. */
        const char *want = getenv("VECTORA_BWRAP");
        _cleanup_free_ char *bwrap = want && streq(want, "none") ? NULL
                                     : want && want[0] == '/' ? (access(want, X_OK) == 0 ? strdup(want) : NULL)
                                                              : find_in_path("bwrap");
        if (!bwrap) {
                if (j.lockdown)
                        refuse("lockdown refuses a remote host without bubblewrap: install it there (apt-get install bubblewrap), or turn lockdown off to run the worker as the remote user alone");
                /* Degraded: the worker alone, as the remote user. */
                char *nargv[] = { self, (char *)"--unjailed",
                                  (char *)"namespaces: the remote host has no bubblewrap; the worker runs as the remote user alone (no mount, pid or network isolation; masks hold for the file tools only)",
                                  NULL };
                if (chdir(j.workspace) < 0)
                        refuse("cannot enter %s on the remote host: %m", j.workspace);
                execv(self, nargv);
                refuse("cannot run the worker %s on the remote host: %m", self);
        }

        VsPolicy p = {
                .workspace = (char *)j.workspace,
                .sandboxed = true,
                .backend = VS_BACKEND_LOCAL,
                .mask = j.mask,
                .no_gpu = j.no_gpu,
                .lockdown = j.lockdown,
                .network = j.network,
        };
        p.rw_paths = resolve_list(j.rw, j.lockdown, &p.n_rw);
        p.ro_paths = resolve_list(j.ro, j.lockdown, &p.n_ro);

        VsMaskPath *masks = NULL;
        size_t n_masks = 0;
        collect_masks(&p, &masks, &n_masks);

        /* The empty mask sources live beside the deployed worker. */
        _cleanup_free_ char *dir = strndup(self, (size_t)(strrchr(self, '/') - self));
        _cleanup_free_ char *rt = dir ? path_join(dir, "run") : NULL;
        _cleanup_free_ char *empty_file = NULL, *empty_dir = NULL;
        int r = rt ? ensure_empty(rt, &empty_file, &empty_dir) : -ENOMEM;
        if (r < 0)
                refuse("cannot create the empty mask sources in %s on the remote host: %s", rt ? rt : "?", strerror(-r));

        _cleanup_strv_free_ char **prot = calloc(1, sizeof(char *));
        for (char **pp = j.protected_paths; prot && pp && *pp; pp++)
                if (lstat(*pp, &st) == 0 && !S_ISLNK(st.st_mode) && strv_extend(&prot, *pp) < 0)
                        refuse("out of memory");

        VsLocalEnv env = {
                .bwrap = bwrap,
                .worker_path = self,
                .empty_file = empty_file,
                .empty_dir = empty_dir,
                .uid = getuid(),
                .gid = getgid(),
                .masks = masks,
                .n_masks = n_masks,
                .protected_existing = prot,
                .env = j.env,
        };
        char **bargv = NULL;
        if (backend_local_probe(&env, &err) < 0 || backend_local_argv(&p, &env, &bargv, &err) < 0)
                refuse("building the jail on the remote host: %s", vs_error_message(err));
        execv(bargv[0], bargv);
        refuse("cannot run %s on the remote host: %m", bargv[0]);
}
