/* SPDX-License-Identifier: MIT */
#include "chase.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "mount-util.h"
#include "path-util.h"
#include "strv.h"

#define CHASE_MAX_HOPS 40

static int neg_errno(int fd) {
        return fd < 0 ? -errno : fd;
}

static bool has_dotdot(const char *rel) {
        for (const char *s = rel; *s;) {
                while (*s == '/')
                        s++;
                size_t n = strcspn(s, "/");
                if (n == 2 && s[0] == '.' && s[1] == '.')
                        return true;
                s += n;
        }
        return false;
}

/* The kernel's own walk, when it has one. -ENOSYS (or -EPERM from a
 * seccomp filter that refuses openat2) sends the caller to the slow walk. */
static int beneath_openat2(int dirfd, const char *rel, int flags) {
        struct open_how how = {
                .flags = (unsigned)(flags | O_CLOEXEC | O_NOFOLLOW),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        for (int tries = 0; tries < 8; tries++) {
                long fd = syscall(SYS_openat2, dirfd, *rel ? rel : ".", &how, sizeof how);
                if (fd >= 0)
                        return (int)fd;
                /* EAGAIN: a rename raced the walk; the kernel asks for a retry. */
                if (errno != EAGAIN)
                        return -errno;
        }
        return -EAGAIN;
}

/* The next component of *p that is not "." (its length in *len, *p past
 * it), or NULL at the end. */
static const char *next_component(const char **p, size_t *len) {
        for (;;) {
                while (**p == '/')
                        (*p)++;
                if (!**p)
                        return NULL;
                const char *c = *p;
                *len = strcspn(c, "/");
                *p += *len;
                if (!(*len == 1 && c[0] == '.'))
                        return c;
        }
}

/* One component at a time: every directory on the way opened O_PATH |
 * O_NOFOLLOW relative to the one before. System calls and a stack buffer
 * only: a child between fork and exec may walk (idmap_attach). */
static int beneath_slow(int dirfd, const char *rel, int flags) {
        char name[NAME_MAX + 1];
        const char *p = rel;
        size_t len = 0;
        const char *c = next_component(&p, &len);
        if (!c)
                return neg_errno(openat(dirfd, ".", flags | O_CLOEXEC));
        int cur = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return -errno;
        for (;;) {
                if (len > NAME_MAX) {
                        close(cur);
                        return -ENAMETOOLONG;
                }
                memcpy(name, c, len);
                name[len] = 0;
                size_t next_len = 0;
                const char *after = c + len;
                const char *next = next_component(&p, &next_len);
                if (!next) {
                        /* "f/" or "f/." names a directory, as the kernel's
                         * walk reads it: a file there is ENOTDIR, a link
                         * ELOOP (attack review 7: this walk opened the file). */
                        int fl = flags | O_CLOEXEC | O_NOFOLLOW | (*after ? O_DIRECTORY : 0);
                        int r = neg_errno(openat(cur, name, fl));
                        struct stat st;
                        if ((r == -ENOTDIR || r == -ELOOP) && fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                            S_ISLNK(st.st_mode))
                                r = -ELOOP;
                        close(cur);
                        return r;
                }
                int fd = openat(cur, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        /* A symlink where a directory is needed: say ELOOP, as openat2 does. */
                        int r = -errno;
                        struct stat st;
                        if (r == -ENOTDIR && fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                                r = -ELOOP;
                        close(cur);
                        return r;
                }
                close(cur);
                cur = fd;
                c = next;
                len = next_len;
        }
}

int chase_beneath(int dirfd, const char *rel, int flags) {
        if (!rel || rel[0] == '/' || has_dotdot(rel))
                return -EXDEV;
        int fd = beneath_openat2(dirfd, rel, flags);
        if (fd == -ENOSYS || fd == -EPERM)
                fd = beneath_slow(dirfd, rel, flags);
        if (fd < 0)
                return fd;
        /* O_PATH | O_NOFOLLOW opens a final symlink itself: not followed,
         * but not what the caller asked for either. */
        struct stat st;
        if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
                int r = S_ISLNK(st.st_mode) ? -ELOOP : -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

void chase_result_done(ChaseResult *r) {
        if (!r)
                return;
        safe_close(r->fd);
        free(r->path);
        free(r->link);
        free(r->link_target);
        free(r->link_root);
        *r = (ChaseResult){ .fd = -1 };
}

/* The deepest root of either list that dir lies at or below, or NULL. */
static const char *untrusted_root(const char *dir, char *const *untrusted, char *const *found) {
        const char *best = NULL;
        for (int k = 0; k < 2; k++)
                for (char *const *u = k ? found : untrusted; u && *u; u++)
                        if (path_is_below_or_equal(dir, *u) && (!best || strlen(*u) > strlen(best)))
                                best = *u;
        return best;
}

static char *read_link_fd(int fd) {
        size_t n = 256;
        for (;;) {
                char *buf = malloc(n);
                if (!buf)
                        return NULL;
                ssize_t k = readlinkat(fd, "", buf, n);
                if (k < 0) {
                        free(buf);
                        return NULL;
                }
                if ((size_t)k < n) {
                        buf[k] = 0;
                        return buf;
                }
                free(buf);
                if (n >= 65536)
                        return NULL;
                n *= 2;
        }
}

/* done + "/" + name, for canonical paths ("/" + "a" is "/a"). */
static int done_push(char **done, const char *name, size_t len) {
        size_t dl = strlen(*done);
        char *n = malloc(dl + len + 2);
        if (!n)
                return -ENOMEM;
        memcpy(n, *done, dl);
        if (dl > 1)
                n[dl++] = '/';
        memcpy(n + dl, name, len);
        n[dl + len] = 0;
        free(*done);
        *done = n;
        return 0;
}

static void done_pop(char *done) {
        char *slash = strrchr(done, '/');
        if (slash == done)
                done[1] = 0;
        else if (slash)
                *slash = 0;
}

int chase_path(const char *path, char *const *untrusted, ChaseResult *ret) {
        return chase_path_dynamic(path, untrusted, NULL, NULL, ret);
}

int chase_path_dynamic(const char *path, char *const *untrusted, ChaseUntrustedFn is_untrusted, void *userdata,
                       ChaseResult *ret) {
        *ret = (ChaseResult){ .fd = -1 };
        _cleanup_strv_free_ char **found = NULL;
        if (!path || path[0] != '/')
                return -EINVAL;
        _cleanup_free_ char *todo = strdup(path), *done = strdup("/");
        if (!todo || !done)
                return -ENOMEM;
        _cleanup_close_ int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return -errno;
        unsigned hops = 0;
        size_t at = 0;
        for (;;) {
                while (todo[at] == '/')
                        at++;
                if (!todo[at])
                        break;
                const char *comp = todo + at;
                size_t len = strcspn(comp, "/");
                const char *rest = comp + len;
                if (len == 1 && comp[0] == '.') {
                        at += len;
                        continue;
                }
                if (len == 2 && comp[0] == '.' && comp[1] == '.') {
                        /* done has no symlink in it: its parent is its text's parent. */
                        int fd = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                        if (fd < 0)
                                return -errno;
                        safe_close(cur);
                        cur = fd;
                        done_pop(done);
                        at += len;
                        continue;
                }
                _cleanup_free_ char *name = strndup(comp, len);
                if (!name)
                        return -ENOMEM;
                int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        int e = -errno;
                        if (done_push(&done, comp, strlen(comp)) < 0)
                                return -ENOMEM;
                        ret->path = TAKE_PTR(done);
                        return e;
                }
                struct stat st;
                if (fstat(fd, &st) < 0) {
                        int e = -errno;
                        safe_close(fd);
                        return e;
                }
                if (S_ISLNK(st.st_mode)) {
                        _cleanup_free_ char *target = read_link_fd(fd);
                        safe_close(fd);
                        if (!target)
                                return -errno ? -errno : -ENOMEM;
                        const char *root = untrusted_root(done, untrusted, found);
                        if (root || ++hops > CHASE_MAX_HOPS) {
                                if ((root && !(ret->link_root = strdup(root))) || done_push(&done, name, len) < 0)
                                        return -ENOMEM;
                                ret->link = TAKE_PTR(done);
                                ret->link_target = TAKE_PTR(target);
                                return -ELOOP;
                        }
                        /* The target replaces the link in what is left to walk. */
                        char *nt = NULL;
                        if (asprintf(&nt, "%s%s", target, rest) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = nt;
                        at = 0;
                        if (target[0] == '/') {
                                int top = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                                if (top < 0)
                                        return -errno;
                                safe_close(cur);
                                cur = top;
                                done[1] = 0;
                        }
                        continue;
                }
                if (*rest && !S_ISDIR(st.st_mode)) {
                        safe_close(fd);
                        return -ENOTDIR;
                }
                safe_close(cur);
                cur = fd;
                if (done_push(&done, name, len) < 0)
                        return -ENOMEM;
                if (is_untrusted && S_ISDIR(st.st_mode) && is_untrusted(cur, done, userdata) &&
                    strv_extend(&found, done) < 0)
                        return -ENOMEM;
                at += len;
        }
        ret->fd = TAKE_FD(cur);
        ret->path = TAKE_PTR(done);
        return 0;
}

int chase_beneath_root(const char *abs, int flags) {
        if (!abs || abs[0] != '/')
                return -EXDEV;
        int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        int fd = chase_beneath(root, abs + 1, flags);
        close(root);
        return fd;
}

int chase_open_dir(const char *path) {
        struct open_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
        if (fd >= 0)
                return (int)fd;
        if (errno != ENOSYS && errno != EPERM)
                return -errno;
        /* No openat2: one component at a time. */
        _cleanup_close_ int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return -errno;
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                safe_close(cur);
                cur = next;
        }
        return TAKE_FD(cur);
}

/* Whether the mount fd lies on is one a process serves; *last caches the
 * last id found not to be (a walk crosses few mounts). */
static int on_user_served(int fd, int *last) {
        int id, r = fd_mount_id(fd, &id);
        if (r < 0)
                return r;
        if (id == *last)
                return 0;
        char type[64];
        r = mount_fstype(id, type, sizeof type);
        if (r == -ENOENT || r == -ENAMETOOLONG)
                return 1; /* not in the table (detached): not vouched for */
        if (r < 0)
                return r;
        if (fstype_is_user_served(type))
                return 1;
        *last = id;
        return 0;
}

int chase_open_dir_local(const char *path) {
        if (!path || path[0] != '/')
                return -EINVAL;
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        return chase_open_dir_local_at(root, path + 1);
}

int chase_open_dir_local_at(int dirfd, const char *rel) {
        if (!rel || rel[0] == '/')
                return -EXDEV;
        _cleanup_close_ int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        int last = -1;
        _cleanup_free_ char *copy = strdup(rel);
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save);; c = strtok_r(NULL, "/", &save)) {
                int r = on_user_served(cur, &last);
                if (r < 0)
                        return r;
                if (r > 0)
                        return -EREMOTE;
                if (!c)
                        break;
                if (streq(c, "."))
                        continue;
                if (streq(c, ".."))
                        return -EXDEV;
                int next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0) {
                        /* A symlink, or another file (a FUSE mount on a
                         * file included: its root is another file system's,
                         * so only the kernel's cache is asked). */
                        int e = errno;
                        struct statx sx;
                        if (e == ENOTDIR &&
                            statx(cur, c, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE, &sx) == 0 &&
                            (sx.stx_mask & STATX_TYPE) && S_ISLNK(sx.stx_mode))
                                return -ELOOP;
                        return -e;
                }
                safe_close(cur);
                cur = next;
        }
        return TAKE_FD(cur);
}
