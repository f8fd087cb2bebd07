/* SPDX-License-Identifier: MIT */
#include "peer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

bool peer_uid_allowed(uid_t uid) {
        return uid == geteuid() || uid == 0;
}

static int peer_pidfd(int fd, pid_t pid) {
        int pidfd = -1;
        socklen_t len = sizeof pidfd;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
                return pidfd;
        /* Kernels before 6.5: the pid as of connect(), opened now. */
        long r = syscall(SYS_pidfd_open, pid, 0);
        return r < 0 ? -errno : (int)r;
}

/* The pid a pidfd refers to in our namespace, from its fdinfo. */
static pid_t pidfd_pid(int pidfd) {
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t k = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (k <= 0)
                return -1;
        buf[k] = 0;
        const char *p = strstr(buf, "\nPid:");
        return p ? (pid_t)strtol(p + 5, NULL, 10) : -1;
}

int peer_check_namespaces(int fd, pid_t pid, char *why, size_t n) {
        _cleanup_close_ int pidfd = peer_pidfd(fd, pid);
        if (pidfd < 0) {
                snprintf(why, n, "cannot pin the peer process (pid %d): %s", (int)pid, strerror(-pidfd));
                return pidfd;
        }
        pid_t p = pidfd_pid(pidfd);
        if (p <= 0) {
                snprintf(why, n, "the peer (pid %d) has already exited", (int)pid);
                return -ESRCH;
        }
        static const char *const kinds[] = { "user", "pid" };
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                char mine[64], theirs[64];
                snprintf(mine, sizeof mine, "/proc/self/ns/%s", kinds[i]);
                snprintf(theirs, sizeof theirs, "/proc/%d/ns/%s", (int)p, kinds[i]);
                struct stat a, b;
                if (stat(mine, &a) < 0 || stat(theirs, &b) < 0) {
                        int e = errno;
                        snprintf(why, n, "cannot tell the %s namespace of pid %d: %s", kinds[i], (int)p, strerror(e));
                        return -e;
                }
                if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
                        snprintf(why, n, "pid %d is in another %s namespace (inside a jail or container)", (int)p,
                                 kinds[i]);
                        return -EPERM;
                }
        }
        /* Still the same process: the pid was not reused while we looked. */
        if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
                snprintf(why, n, "the peer (pid %d) exited while it was checked", (int)p);
                return -ESRCH;
        }
        return 0;
}
