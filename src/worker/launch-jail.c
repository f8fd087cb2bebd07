/* SPDX-License-Identifier: MIT */
/* --launch-jail POLICY_HEX: on the remote host of an ssh workspace.
 *
 * The remote's own paths and masks are only known there: this builds the
 * jail plan there with the same code as the daemon (jail-plan.h), renders
 * it with the same bubblewrap renderer as the local backend, and execs it with this binary as
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
#include "jail-plan.h"
#include "launcher.h"
#include "log.h"
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
        ProtocolHello h = { .version = PROTOCOL_VERSION, .arch = uname(&u) == 0 ? u.machine : "unknown", .pid = getpid(),
                           .uid = -1, .gid = -1 };
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
                                                              : path_find_executable_os("bwrap", getenv("PATH"));
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

        /* The empty mask sources live beside the deployed worker. */
        _cleanup_free_ char *dir = strndup(self, (size_t)(strrchr(self, '/') - self));
        _cleanup_free_ char *rt = dir ? path_join(dir, "run") : NULL;
        _cleanup_free_ char *empty_file = NULL, *empty_dir = NULL;
        if (!rt)
                refuse("out of memory");
        if (jail_empty_sources(rt, &empty_file, &empty_dir, &err) < 0)
                refuse("cannot create the empty mask sources on the remote host: %s", vs_error_message(err));

        /* The same plan as the daemon's host would make: the same mask
         * walk, protected paths (a symlinked or missing one included),
         * pins and order. */
        _cleanup_(jail_plan_freep) VsJailPlan *plan = NULL;
        if (jail_plan_remote(&j, empty_file, empty_dir, &plan, &err) < 0)
                refuse("planning the jail on the remote host: %s", vs_error_message(err));

        VsPolicy p = {
                .workspace = (char *)j.workspace,
                .sandboxed = true,
                .no_gpu = j.no_gpu,
                .lockdown = j.lockdown,
                .network = j.network,
        };
        VsLocalEnv env = {
                .bwrap = bwrap,
                .worker_path = self,
                .uid = getuid(),
                .gid = getgid(),
                .plan = plan,
        };
        char **bargv = NULL;
        if (backend_local_probe(&env, &err) < 0 || backend_local_argv(&p, &env, &bargv, &err) < 0)
                refuse("building the jail on the remote host: %s", vs_error_message(err));
        execv(bargv[0], bargv);
        refuse("cannot run %s on the remote host: %m", bargv[0]);
}
