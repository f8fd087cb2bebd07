/* SPDX-License-Identifier: MIT */
/* --ssh-launch LOCAL_WORKER UPLOAD_CMD -- SSH... HOST RUN_CMD
 *
 * Runs on the daemon's host as the backend process of an ssh workspace.
 * ssh inherits our stdin/stdout (the protocol); the remote RUN_CMD exits
 * VS_SSH_EXIT_DEPLOY, writing nothing, when the deployed worker's sha256
 * differs: then the worker is uploaded (UPLOAD_CMD, the file on ssh's
 * stdin) and RUN_CMD tried once more. Otherwise ssh's status is ours. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend-ssh.h"
#include "fd-util.h"
#include "log.h"
#include "launcher.h"
#include "macro.h"
#include "spawn-util.h"

static int run_ssh(char **argv, int in_fd, int out_fd) {
        /* ssh dies with us, and we die with the daemon. */
        pid_t pid = spawn_fork(SIGKILL);
        if (pid < 0) {
                log_error("fork: %s", strerror(-pid));
                return -1;
        }
        if (pid == 0) {
                if ((in_fd >= 0 && dup2(in_fd, STDIN_FILENO) < 0) || (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0))
                        _exit(125);
                execvp(argv[0], argv);
                if (errno == ENOENT)
                        log_error("%s not found: the ssh backend needs the ssh client (apt-get install openssh-client)", argv[0]);
                else
                        log_error("cannot run %s: %m", argv[0]);
                _exit(127);
        }
        return spawn_wait(pid);
}

int ssh_launch_main(int argc, char **argv) {
        /* argv: [0] self, [1] --ssh-launch, [2] local worker, [3] upload command, [4] --, [5..] ssh ... run command */
        if (argc < 8 || !streq(argv[4], "--")) {
                log_error("usage: vectora-worker --ssh-launch LOCAL_WORKER UPLOAD_CMD -- SSH... HOST RUN_CMD");
                return 2;
        }
        char **ssh = argv + 5;
        int n = argc - 5;
        char *run_cmd = ssh[n - 1];
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);

        for (int attempt = 0;; attempt++) {
                int st = run_ssh(ssh, -1, -1);
                if (st != VS_SSH_EXIT_DEPLOY)
                        return st < 0 ? 125 : st;
                if (attempt > 0) {
                        log_error("the remote host still reports a different vectora-worker after the upload (is sha256sum installed there?)");
                        return 125;
                }
                _cleanup_close_ int in = open(argv[2], O_RDONLY | O_CLOEXEC);
                if (in < 0) {
                        log_error("cannot read the worker %s to deploy it: %m", argv[2]);
                        return 125;
                }
                /* The upload's own output must not reach the protocol stream. */
                ssh[n - 1] = argv[3];
                st = run_ssh(ssh, in, STDERR_FILENO);
                ssh[n - 1] = run_cmd;
                if (st != 0) {
                        log_error("deploying vectora-worker to the remote host failed (ssh status %d)", st);
                        return 125;
                }
                log_info("deployed vectora-worker to the remote host");
        }
}
