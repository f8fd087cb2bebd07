/* SPDX-License-Identifier: MIT */
/* The jail checks itself before `ready`: every masked path is the empty
 * read-only file or directory the plan mounted there, and every protected
 * path is on a read-only mount, each reached with no symlink on the way.
 *
 * Why: masks and pins are mount points inside the workspace, which the
 * agent (or a still-running earlier jail of the workspace) can change, and
 * bubblewrap before 0.12 follows a symlinked parent when it creates a mount
 * point (CVE-2026-87766): a directory swapped for a symlink between the
 * daemon's walk and bwrap's setup would put the mask somewhere else and
 * leave the secret readable at its path. What the jail sees is checked here,
 * after the fact, and the worker fails closed when it is not the plan. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fd-util.h"
#include "worker.h"

/* path (absolute) opened O_PATH, no component a symlink. */
static int open_no_symlinks(const char *path, int *ret_fd) {
        _cleanup_close_ int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        const char *s = path;
        char name[256];
        while (*s) {
                while (*s == '/')
                        s++;
                if (!*s)
                        break;
                size_t len = strcspn(s, "/");
                if (len >= sizeof name)
                        return -ENAMETOOLONG;
                memcpy(name, s, len);
                name[len] = 0;
                s += len;
                int next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                safe_close(fd);
                fd = next;
                struct stat st;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode))
                        return -ELOOP;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static bool on_readonly_mount(int fd) {
        struct statfs sf;
        return fstatfs(fd, &sf) == 0 && (sf.f_flags & ST_RDONLY);
}

static int dir_is_empty(int pathfd) {
        int fd = openat(pathfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(d);
        return n == 0;
}

static int check_one(const char *path, bool empty, VsError **err) {
        _cleanup_close_ int fd = -EBADF;
        int r = open_no_symlinks(path, &fd);
        if (r == -ELOOP)
                return vs_error_set_kind(err, -ELOOP, "init_failed",
                                         "%s %s is reached through a symlink: the jail's mounts are not what was planned (a path swapped during setup?)",
                                         empty ? "masked path" : "protected path", path);
        if (r < 0)
                return vs_error_set_kind(err, r, "init_failed", "%s %s cannot be checked: %s",
                                         empty ? "masked path" : "protected path", path, strerror(-r));
        if (!on_readonly_mount(fd))
                return vs_error_set_kind(err, -EROFS, "init_failed",
                                         "%s %s is not on a read-only mount: the jail's mounts are not what was planned",
                                         empty ? "masked path" : "protected path", path);
        if (!empty)
                return 0;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return vs_error_set_kind(err, -errno, "init_failed", "masked path %s: %m", path);
        bool ok = (S_ISREG(st.st_mode) && st.st_size == 0) || (S_ISDIR(st.st_mode) && dir_is_empty(fd) == 1);
        if (!ok)
                return vs_error_set_kind(err, -EEXIST, "init_failed",
                                         "masked path %s is not the empty file or directory mounted over it: the jail's mounts are not what was planned",
                                         path);
        return 0;
}

int verify_mounts(const ProtocolInit *init, VsError **err) {
        for (char **p = init->verify_empty; p && *p; p++) {
                int r = check_one(*p, true, err);
                if (r < 0)
                        return r;
        }
        for (char **p = init->verify_readonly; p && *p; p++) {
                int r = check_one(*p, false, err);
                if (r < 0)
                        return r;
        }
        return 0;
}
