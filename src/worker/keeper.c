/* SPDX-License-Identifier: MIT */
/* --keep -- PROGRAM [ARG...]: the local backend's process between its
 * starter (the daemon, or the CLI in embedded mode) and bubblewrap.
 *
 * Why it exists: bubblewrap's --die-with-parent binds the outer bwrap to
 * its starter, but the inner bwrap (pid 1 of the jail's pid namespace)
 * sets its own parent-death signal only once its setup is done. A starter
 * that dies, or kills the jail, while the jail is still being set up (its
 * mounts: seconds with hundreds of masks on a loaded machine) leaves the
 * inner bwrap running to the end of its setup and on into the worker, an
 * orphan that nothing ends. Measured: 20 jails starting under a daemon
 * that is SIGKILLed linger ~10 s.
 *
 * So this process is a child subreaper: when the outer bwrap dies, the
 * orphaned inner one becomes our child. When the starter dies (our
 * parent-death signal is SIGTERM) or sends SIGTERM, every child is
 * SIGKILLed at once, the inner bwrap included, which takes the jail's pid
 * namespace with it. When bwrap ends by itself, we end with its status.
 * Small and static (it is the worker binary), exec'd, not a forked copy of
 * the starter. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "launcher.h"
#include "log.h"
#include "macro.h"
#include "spawn-util.h"

/* SIGKILLs every child (the orphans reparented to us included) and reaps
 * them, until none is left. */
static void end_all(void) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
        for (;;) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                char buf[4096];
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (fd >= 0)
                        close(fd);
                if (n > 0) {
                        buf[n] = 0;
                        for (char *s = buf, *e; *s; s = e) {
                                long pid = strtol(s, &e, 10);
                                if (e == s)
                                        break;
                                if (pid > 0)
                                        (void)kill((pid_t)pid, SIGKILL);
                        }
                }
                /* Without /proc the reparented orphans are only waited for. */
                pid_t p = waitpid(-1, NULL, 0);
                if (p < 0 && errno == ECHILD)
                        return;
        }
}

_noreturn_ static void exit_like(int status) {
        if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                signal(sig, SIG_DFL);
                sigset_t one;
                sigemptyset(&one);
                sigaddset(&one, sig);
                sigprocmask(SIG_UNBLOCK, &one, NULL);
                raise(sig);
                _exit(128 + sig);
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

int keeper_main(int argc, char **argv) {
        if (argc < 4 || !streq(argv[2], "--")) {
                log_error("usage: vectora-worker --keep -- PROGRAM [ARG...]");
                return 2;
        }
        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGCHLD);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0) {
                log_error("sigprocmask: %m");
                return 125;
        }
        int sfd = signalfd(-1, &ss, SFD_CLOEXEC);
        if (sfd < 0) {
                log_error("signalfd: %m");
                return 125;
        }
        /* Our starter set SIGKILL as our parent-death signal before exec:
         * until here its death simply ends us (nothing is started yet).
         * From here it is a SIGTERM we handle (blocked: it waits in sfd). */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0) {
                log_error("prctl: %m");
                return 125;
        }
        pid_t child = spawn_fork(SIGKILL);
        if (child < 0) {
                log_error("fork: %s", strerror(-child));
                return 125;
        }
        if (child == 0) {
                execvp(argv[3], argv + 3);
                if (errno == ENOENT)
                        log_error("%s not found: the local backend needs bubblewrap (apt-get install bubblewrap)", argv[3]);
                else
                        log_error("cannot run %s: %m", argv[3]);
                _exit(errno == ENOENT ? 127 : 126);
        }
        /* The channel is the jail's: holding it would delay the starter's
         * end of file after the jail is gone. */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                (void)dup2(null, STDIN_FILENO);
                (void)dup2(null, STDOUT_FILENO);
                close(null);
        }

        for (;;) {
                struct signalfd_siginfo si;
                ssize_t n = read(sfd, &si, sizeof si);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != (ssize_t)sizeof si) {
                        (void)kill(child, SIGKILL);
                        end_all();
                        _exit(125);
                }
                if (si.ssi_signo != SIGCHLD) {
                        /* The starter died or ends the jail: at once. */
                        (void)kill(child, SIGKILL);
                        end_all();
                        _exit(128 + (int)si.ssi_signo);
                }
                int st;
                pid_t p;
                while ((p = waitpid(-1, &st, WNOHANG)) > 0)
                        if (p == child) {
                                /* bwrap is gone: so must be anything it left. */
                                end_all();
                                exit_like(st);
                        }
        }
}
