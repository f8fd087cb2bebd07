/* SPDX-License-Identifier: MIT */
#include "idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "spawn-util.h"

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
struct mount_attr {
        __u64 attr_set;
        __u64 attr_clr;
        __u64 propagation;
        __u64 userns_fd;
};
#endif

static int write_file(const char *path, const char *text) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write_all(fd, text, strlen(text));
}

/* A user namespace mapping from_uid/from_gid (as files have them on
 * disk) -> uid/gid (as a mount idmapped with it shows them), held by a
 * child that waits; returns an fd on it. */
static int make_userns(uid_t from_uid, gid_t from_gid, uid_t uid, gid_t gid, VsError **err) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return vs_error_set(err, -errno, "pipe: %m");
        _cleanup_close_ int rd = p[0], wr = p[1];
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return vs_error_set(err, -errno, "pipe: %m");
        _cleanup_close_ int ready_r = ready[0], ready_w = ready[1];
        pid_t c = spawn_fork(0);
        if (c < 0)
                return vs_error_set(err, c, "fork: %s", strerror(-c));
        if (c == 0) {
                char b;
                /* Its two pipe ends and nothing else: not the parent's
                 * clients, jails or channels (a fork keeps every
                 * descriptor, close-on-exec or not), and only the
                 * parent's copy of the write end keeps the pipe open. */
                const int keep[] = { rd, ready_w };
                if (close_all_fds_except(keep, ELEMENTSOF(keep)) < 0)
                        _exit(1);
                int ok = unshare(CLONE_NEWUSER) == 0;
                (void) !write(ready_w, ok ? "1" : "0", 1);
                (void) !read(rd, &b, 1);
                _exit(0);
        }
        ready_w = safe_close(ready_w);
        rd = safe_close(rd);
        char b = '0';
        int r = 0;
        if (read(ready_r, &b, 1) != 1 || b != '1')
                r = vs_error_set(err, -EPERM, "cannot create a user namespace for the idmapped mount");
        char path[64], map[64];
        int nsfd = -EBADF;
        if (r >= 0) {
                snprintf(map, sizeof map, "%u %u 1\n", (unsigned)from_uid, (unsigned)uid);
                snprintf(path, sizeof path, "/proc/%d/uid_map", (int)c);
                if ((r = write_file(path, map)) >= 0) {
                        snprintf(path, sizeof path, "/proc/%d/setgroups", (int)c);
                        (void)write_file(path, "deny");
                        snprintf(map, sizeof map, "%u %u 1\n", (unsigned)from_gid, (unsigned)gid);
                        snprintf(path, sizeof path, "/proc/%d/gid_map", (int)c);
                        r = write_file(path, map);
                }
                if (r < 0)
                        vs_error_set(err, r, "writing the idmap: %s", strerror(-r));
                else {
                        snprintf(path, sizeof path, "/proc/%d/ns/user", (int)c);
                        nsfd = open(path, O_RDONLY | O_CLOEXEC);
                        if (nsfd < 0)
                                r = vs_error_set(err, -errno, "opening the user namespace: %m");
                }
        }
        wr = safe_close(wr); /* lets the child exit */
        (void)spawn_wait(c);
        return r < 0 ? r : nsfd;
}

static int clone_with(int srcfd, const char *src, int ns, uint64_t attrs, int *ret_fd, VsError **err) {
        _cleanup_close_ int tree = (int)syscall(SYS_open_tree, srcfd, "",
                                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
        if (tree < 0)
                return vs_error_set(err, -errno, "open_tree(%s): %m", src);
        struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP | attrs, .userns_fd = (uint64_t)ns };
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0)
                return vs_error_set(err, -errno, "the filesystem of %s (or one mounted below it) does not support idmapped mounts: %m", src);
        *ret_fd = TAKE_FD(tree);
        return 0;
}

int idmap_prepare_fd(int srcfd, const char *src, uid_t uid, gid_t gid, int *ret_fd, VsError **err) {
        _cleanup_close_ int ns = make_userns(0, 0, uid, gid, err);
        if (ns < 0)
                return ns;
        return clone_with(srcfd, src, ns, 0, ret_fd, err);
}

int idmap_userns(uid_t owner, gid_t group, uid_t uid, gid_t gid, VsError **err) {
        return make_userns(owner, group, uid, gid, err);
}

/* In a child of the caller (system calls only): the view clone made the
 * root of a private mount namespace (attached over /tmp there, then
 * pivot_root into it, the old root detached), then that namespace copied
 * into a new one owned by a new user namespace: a copy into a less
 * privileged namespace locks every mount's flags (read-only, nosuid,
 * nodev, noexec) and place. Says so on sock, then waits for the caller
 * to have taken the copy's root (/proc/PID/root: ".." there stays there)
 * and the namespace (/proc/PID/ns/mnt) before it ends. */
static int view_child(int clone_fd, int sock) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 1;
        int tmp = chase_beneath_root("/tmp", O_PATH | O_DIRECTORY);
        if (tmp < 0 ||
            syscall(SYS_move_mount, clone_fd, "", tmp, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return 2;
        /* By paths that ask nothing of the view's root itself: root may
         * not search it (its group unmapped, others without x). The old
         * root ends up stacked on the new one, and is detached. */
        if (chdir("/") < 0 || syscall(SYS_pivot_root, "/tmp", "/tmp") < 0 || umount2("/", MNT_DETACH) < 0)
                return 3;
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                return 4;
        /* The caller opens the view itself (/proc/PID/root): a file this
         * child opened now would carry its credentials, and with them a
         * reference to the new user namespace for as long as the server
         * holds it, past ws_close (attack review 7b used up root's user
         * namespaces that way). */
        char b;
        if (write(sock, "r", 1) != 1)
                return 5;
        return read(sock, &b, 1) == 1 ? 0 : 6;
}

int idmap_view(int srcfd, const char *src, int userns, int deadline_ms, pid_t *ret_held, int *ret_view, int *ret_ns,
               VsError **err) {
        *ret_held = 0;
        _cleanup_close_ int clone_fd = -EBADF;
        int r = clone_with(srcfd, src, userns, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                           &clone_fd, err);
        if (r < 0)
                return r;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return vs_error_set(err, -errno, "socketpair: %m");
        _cleanup_close_ int mine = sv[0], theirs = sv[1];
        /* Ended with the caller; holding nothing of the caller's but the
         * clone and its socket (a lock of the caller's, its other end
         * included: attack review 8b left one held by a child that
         * outlived its parent). */
        pid_t c = spawn_fork(SIGKILL);
        if (c < 0)
                return vs_error_set(err, c, "fork: %s", strerror(-c));
        if (c == 0) {
                int keep[] = { clone_fd, theirs };
                _exit(close_all_fds_except(keep, 2) < 0 ? 7 : view_child(clone_fd, theirs));
        }
        theirs = safe_close(theirs);
        char b;
        int view = -EBADF, ns = -EBADF;
        /* Its root (the view) and its mount namespace, while the child is
         * in it, opened by this process; in deadline_ms: the move onto
         * /tmp waits while another process holds /tmp (any user can). */
        struct pollfd p = { .fd = mine, .events = POLLIN };
        int k;
        while ((k = poll(&p, 1, deadline_ms)) < 0 && errno == EINTR)
                ;
        if (k == 0) {
                (void)kill(c, SIGKILL);
                if (waitpid(c, NULL, WNOHANG) == 0)
                        *ret_held = c;
                return vs_error_set(err, -ETIMEDOUT, "the view of %s was not made in %d ms (/tmp held by another process?)", src, deadline_ms);
        }
        if (read(mine, &b, 1) == 1) {
                char path[64];
                snprintf(path, sizeof path, "/proc/%d/root", (int)c);
                view = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
                snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)c);
                ns = open(path, O_RDONLY | O_CLOEXEC);
        }
        (void)!write(mine, "x", 1);
        int st = spawn_wait(c);
        if (view < 0 || ns < 0 || st != 0) {
                safe_close(view);
                safe_close(ns);
                return vs_error_set(err, -EIO, "the view of %s could not be locked (step %d)", src, st);
        }
        *ret_view = view;
        *ret_ns = ns;
        return 0;
}

int idmap_attach(const int *fds, char *const *paths, size_t n) {
        if (n == 0)
                return 0;
        /* A mount namespace of the jail's own, nothing propagating back to
         * the host's: the idmapped trees exist there and nowhere else. */
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        for (size_t i = 0; i < n; i++) {
                /* Attached over the very directory it is a clone of, found
                 * again in this namespace without following a link: by its
                 * path alone, a link put on the way since the tree was
                 * checked would have taken root's attach anywhere on the
                 * host (over /proc, /usr/bin: attack review 6). */
                int t = chase_beneath_root(paths[i], O_PATH | O_DIRECTORY);
                if (t < 0) {
                        errno = -t;
                        return t;
                }
                struct stat tree, at;
                int r = fstat(fds[i], &tree) < 0 || fstat(t, &at) < 0 ? -errno
                        : tree.st_dev != at.st_dev || tree.st_ino != at.st_ino ? -EXDEV
                        : syscall(SYS_move_mount, fds[i], "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0
                                ? -errno
                                : 0;
                close(t);
                if (r < 0) {
                        errno = -r;
                        return r;
                }
        }
        return 0;
}
