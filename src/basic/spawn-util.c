/* SPDX-License-Identifier: MIT */
#include "spawn-util.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t spawn_fork(int pdeath_sig) {
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid > 0)
                return pid;

        /* Dispositions first, then the mask: a signal left pending while
         * blocked is delivered to a default handler, not the parent's. */
        for (int s = 1; s < NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void)signal(s, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        if (pdeath_sig) {
                if (prctl(PR_SET_PDEATHSIG, pdeath_sig) < 0)
                        _exit(125);
                /* The parent may have died between fork and the request. */
                if (getppid() != parent)
                        _exit(125);
        }
        return 0;
}

int spawn_wait(pid_t pid) {
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(st))
                return WEXITSTATUS(st);
        return 128 + WTERMSIG(st);
}

void spawn_killp(pid_t *pid) {
        if (!pid || *pid <= 0)
                return;
        (void)kill(*pid, SIGKILL);
        (void)spawn_wait(*pid);
        *pid = 0;
}
