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

/* The whole of a small /proc file (of ours or a peer's): its length, or
 * a negative errno. */
static ssize_t read_small(const char *path, char *buf, size_t n) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, buf, n - 1);
        if (k < 0)
                return -errno;
        buf[k] = 0;
        return k;
}

int peer_check_by_maps(pid_t p, char *why, size_t n) {
        char path[64], status[4096];
        snprintf(path, sizeof path, "/proc/%d/status", (int)p);
        ssize_t k = read_small(path, status, sizeof status);
        const char *ns = k > 0 ? strstr(status, "\nNSpid:") : NULL;
        if (!ns) {
                snprintf(why, n, "cannot tell the pid namespace of pid %d: %s", (int)p,
                         k < 0 ? strerror((int)-k) : "no NSpid line");
                return k < 0 ? (int)k : -EIO;
        }
        /* One pid: a member of our /proc's pid namespace, no deeper. */
        const char *end = strchr(ns + 1, '\n');
        size_t len = end ? (size_t)(end - ns) : strlen(ns);
        if (memchr(ns + 7, ' ', len - 7) || memchr(ns + 7 + 1, '\t', len - 8)) {
                snprintf(why, n, "pid %d is in another pid namespace (inside a jail or container)", (int)p);
                return -EPERM;
        }
        static const char *const maps[] = { "uid_map", "gid_map" };
        for (size_t i = 0; i < ELEMENTSOF(maps); i++) {
                char mine[1024], theirs[1024];
                snprintf(path, sizeof path, "/proc/self/%s", maps[i]);
                ssize_t a = read_small(path, mine, sizeof mine);
                snprintf(path, sizeof path, "/proc/%d/%s", (int)p, maps[i]);
                ssize_t b = read_small(path, theirs, sizeof theirs);
                if (a < 0 || b < 0) {
                        snprintf(why, n, "cannot tell the user namespace of pid %d: %s", (int)p,
                                 strerror((int)-(a < 0 ? a : b)));
                        return (int)(a < 0 ? a : b);
                }
                if (a != b || memcmp(mine, theirs, (size_t)a) != 0) {
                        snprintf(why, n, "pid %d is in another user namespace (inside a jail or container)", (int)p);
                        return -EPERM;
                }
        }
        return 0;
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
                int e = stat(mine, &a) < 0 || stat(theirs, &b) < 0 ? errno : 0;
                if (e == EACCES) {
                        /* A server without root's rights and a root peer:
                         * from what anyone may read instead. */
                        int r = peer_check_by_maps(p, why, n);
                        if (r < 0)
                                return r;
                        break;
                }
                if (e) {
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
