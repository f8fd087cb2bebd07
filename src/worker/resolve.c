/* SPDX-License-Identifier: MIT */
/* Path policy for the file operations. A path is normalized lexically (so
 * ".." can only name what the string says), matched to the longest allowed
 * root that contains it, then opened below that root without following
 * symlinks: openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) when the kernel has
 * it, else one O_NOFOLLOW component at a time. A symlink met on the way is
 * read and its target spliced into the path, which then goes through the
 * whole check again: a link can only lead where a plain path could go. Every
 * path form met is checked against the masks, on every call, so secrets
 * created after init are refused too. */
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "mask-walk.h"
#include "path-util.h"
#include "strv.h"
#include "worker.h"

#define MAX_SYMLINK_HOPS 40

static int denied(VsError **err, const char *fmt, const char *path) _printf_(2, 0);
static int denied(VsError **err, const char *fmt, const char *path) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        return vs_error_set_kind(err, -EACCES, "denied", fmt, path);
#pragma GCC diagnostic pop
}

static int normalize_all(char *const *in, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        for (char *const *s = in; s && *s; s++) {
                char *n = path_normalize(*s);
                if (!n || strv_consume(&l, n) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int policy_init(Policy *p, const ProtocolInit *init, VsError **err) {
        Policy n = { .mode = init->mode };
        int k;

        n.workspace = path_normalize(init->workspace);
        if (!n.workspace)
                return vs_error_set(err, -ENOMEM, "out of memory");
        if (init->mode == PROTOCOL_MODE_DIRECT) {
                /* An unsandboxed workspace: the whole host, as the agent would see it. */
                if (strv_extend(&n.rw, "/") < 0) {
                        policy_done(&n);
                        return vs_error_set(err, -ENOMEM, "out of memory");
                }
                *p = n;
                return 0;
        }
        if (normalize_all(init->rw_paths, &n.rw) < 0 || normalize_all(init->ro_paths, &n.ro) < 0 ||
            normalize_all(init->protected_paths, &n.protected_paths) < 0) {
                policy_done(&n);
                return vs_error_set(err, -ENOMEM, "out of memory");
        }
        if ((k = mask_set_compile(init->mask, "mask", &n.masks, err)) < 0 ||
            (k = mask_set_compile(init->protect, "protect", &n.protect, err)) < 0) {
                policy_done(&n);
                return k;
        }
        *p = n;
        return 0;
}

void policy_done(Policy *p) {
        if (!p)
                return;
        free(p->workspace);
        strv_free(p->rw);
        strv_free(p->ro);
        strv_free(p->protected_paths);
        glob_set_free(p->masks);
        glob_set_free(p->protect);
        *p = (Policy) {};
}

void resolved_done(Resolved *r) {
        if (!r)
                return;
        safe_close(r->dir_fd);
        free(r->name);
        free(r->path);
        *r = (Resolved) RESOLVED_INIT;
}

static bool matched_below(const VsGlobSet *set, const char *root, const char *abs, bool is_dir) {
        const char *rel = path_startswith(abs, root);
        return rel && *rel && glob_set_masks(set, rel, is_dir);
}

/* The patterns apply below every listed root, relative to it, as the
 * launch applies them (jail_facts_collect): a path created later under a
 * ro_path outside the workspace is matched too. */
static bool set_matches(const Policy *p, const VsGlobSet *set, const char *abs, bool is_dir) {
        if (!set)
                return false;
        if (matched_below(set, p->workspace, abs, is_dir))
                return true;
        for (char **s = p->rw; s && *s; s++)
                if (matched_below(set, *s, abs, is_dir))
                        return true;
        for (char **s = p->ro; s && *s; s++)
                if (matched_below(set, *s, abs, is_dir))
                        return true;
        return false;
}

bool policy_is_masked(const Policy *p, const char *abs, bool is_dir) {
        return set_matches(p, p->masks, abs, is_dir);
}

/* A protected path, or one a protect glob names, itself or a directory
 * above it (a missing .envrc the agent would create is refused too). */
static bool is_protected(const Policy *p, const char *abs) {
        for (char **s = p->protected_paths; s && *s; s++)
                if (path_is_below_or_equal(abs, *s))
                        return true;
        if (!p->protect)
                return false;
        _cleanup_free_ char *cur = strdup(abs);
        if (!cur)
                return true; /* fail closed */
        for (bool dir = false;; dir = true) {
                if (set_matches(p, p->protect, cur, dir) || (!dir && set_matches(p, p->protect, cur, true)))
                        return true;
                char *slash = strrchr(cur, '/');
                if (!slash || slash == cur)
                        return false;
                *slash = 0;
        }
}

/* The longest allowed root containing abs; on a tie ro wins (the stricter). */
static const char *find_root(const Policy *p, const char *abs, bool *ret_rw) {
        const char *best = NULL;
        size_t best_len = 0;
        bool rw = false;

        for (char **s = p->rw; s && *s; s++)
                if (path_is_below_or_equal(abs, *s) && (!best || strlen(*s) > best_len)) {
                        best = *s;
                        best_len = strlen(*s);
                        rw = true;
                }
        for (char **s = p->ro; s && *s; s++)
                if (path_is_below_or_equal(abs, *s) && (!best || strlen(*s) >= best_len)) {
                        best = *s;
                        best_len = strlen(*s);
                        rw = false;
                }
        *ret_rw = rw;
        return best;
}

static int to_absolute(const Policy *p, const char *path, char **ret) {
        _cleanup_free_ char *j = NULL;
        if (path[0] != '/') {
                j = path_join(p->workspace, path);
                if (!j)
                        return -ENOMEM;
                path = j;
        }
        char *n = path_normalize(path);
        if (!n)
                return -ENOMEM;
        *ret = n;
        return 0;
}

static int open_beneath(int dirfd, const char *rel, int oflags) {
        static bool no_openat2 = false;
        if (!no_openat2) {
                struct open_how how = {
                        .flags = (uint64_t) oflags | O_CLOEXEC,
                        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS,
                };
                long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
                if (fd >= 0)
                        return (int) fd;
                if (errno != ENOSYS && errno != EPERM) /* EPERM: a seccomp filter that predates it */
                        return -errno;
                no_openat2 = true;
        }
        return -ENOSYS;
}

/* Reads the symlink name in dirfd and returns the absolute path it leads to
 * from directory base, followed by rest (may be ""). */
static int splice_link(int dirfd, const char *name, const char *base, const char *rest, char **ret) {
        char target[4096];
        ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
        if (n < 0)
                return -errno;
        if ((size_t) n >= sizeof target - 1)
                return -ENAMETOOLONG;
        target[n] = 0;
        _cleanup_free_ char *a = target[0] == '/' ? strdup(target) : path_join(base, target);
        if (!a)
                return -ENOMEM;
        _cleanup_free_ char *b = *rest ? path_join(a, rest) : strdup(a);
        if (!b)
                return -ENOMEM;
        char *c = path_normalize(b);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

static int io_error(VsError **err, int k, const char *path) {
        return vs_error_set(err, k, "%s: %s", path, strerror(-k));
}

/* A write under a directory that does not exist: the message says what
 * creates it, or an agent tries the same write again. */
static int parent_error(VsError **err, int k, const char *path, unsigned flags) {
        if (k == -ENOENT && (flags & PATH_WRITE))
                return vs_error_set(err, k, "%s: a parent directory does not exist; write with create_parents: true "
                                            "to create it", path);
        return io_error(err, k, path);
}

static int resolve_abs(const Policy *p, const char *abs, unsigned flags, unsigned hops, Resolved *ret,
                       VsError **err) {
        bool write = flags & PATH_WRITE, root_rw;
        int k;

        if (hops > MAX_SYMLINK_HOPS)
                return vs_error_set(err, -ELOOP, "%s: too many levels of symbolic links", abs);
        const char *root = find_root(p, abs, &root_rw);
        if (!root)
                return denied(err, "'%s' is outside the allowed paths", abs);
        if (write && !root_rw)
                return denied(err, "'%s' is read-only", abs);
        if (write && is_protected(p, abs))
                return denied(err, "'%s' is protected", abs);
        if (policy_is_masked(p, abs, false))
                return denied(err, "'%s' is masked", abs);

        _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return io_error(err, negative_errno(), root);

        const char *rel = path_startswith(abs, root);
        if (!*rel) {
                /* The root itself. */
                Resolved r = RESOLVED_INIT;
                r.name = strdup(".");
                r.path = strdup(abs);
                r.exists = true;
                if (!r.name || !r.path) {
                        resolved_done(&r);
                        return vs_error_set(err, -ENOMEM, "out of memory");
                }
                r.dir_fd = write ? openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : TAKE_FD(rootfd);
                if (r.dir_fd < 0) {
                        k = negative_errno();
                        resolved_done(&r);
                        return io_error(err, k, abs);
                }
                *ret = r;
                return 0;
        }

        const char *slash = strrchr(rel, '/');
        const char *last = slash ? slash + 1 : rel;
        _cleanup_free_ char *parent_rel = slash ? strndup(rel, (size_t) (slash - rel)) : NULL;
        if (slash && !parent_rel)
                return vs_error_set(err, -ENOMEM, "out of memory");

        _cleanup_close_ int dirfd = -EBADF;
        if (!parent_rel) {
                dirfd = TAKE_FD(rootfd);
        } else {
                k = open_beneath(rootfd, parent_rel, O_PATH | O_DIRECTORY);
                if (k >= 0)
                        dirfd = k;
                else if (k != -ENOSYS && k != -ELOOP && !(k == -ENOENT && (flags & PATH_CREATE_PARENTS)))
                        return parent_error(err, k, abs, flags);
        }

        if (dirfd < 0) {
                /* One component at a time, never following a link blindly. */
                _cleanup_free_ char *cur_path = strdup(root);
                _cleanup_free_ char *comps = strdup(parent_rel);
                if (!cur_path || !comps)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                _cleanup_close_ int cur = TAKE_FD(rootfd);
                char *save = NULL;
                for (char *c = strtok_r(comps, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                        int fd = openat(cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        if (fd < 0 && errno == ENOENT && write && (flags & PATH_CREATE_PARENTS)) {
                                if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
                                        return io_error(err, negative_errno(), abs);
                                fd = openat(cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        }
                        if (fd < 0)
                                return parent_error(err, negative_errno(), abs, flags);
                        _cleanup_close_ int cfd = fd;
                        struct stat st;
                        if (fstat(cfd, &st) < 0)
                                return io_error(err, negative_errno(), abs);
                        if (S_ISLNK(st.st_mode)) {
                                /* rest: what follows c in rel */
                                const char *rest = rel + (size_t) (c - comps) + strlen(c);
                                while (*rest == '/')
                                        rest++;
                                _cleanup_free_ char *next = NULL;
                                k = splice_link(cur, c, cur_path, rest, &next);
                                if (k < 0)
                                        return io_error(err, k, abs);
                                return resolve_abs(p, next, flags, hops + 1, ret, err);
                        }
                        if (!S_ISDIR(st.st_mode))
                                return io_error(err, -ENOTDIR, abs);
                        char *np = path_join(cur_path, c);
                        if (!np)
                                return vs_error_set(err, -ENOMEM, "out of memory");
                        free(cur_path);
                        cur_path = np;
                        safe_close(cur);
                        cur = TAKE_FD(cfd);
                }
                dirfd = TAKE_FD(cur);
        }

        struct stat st;
        bool exists = fstatat(dirfd, last, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!exists && errno != ENOENT)
                return io_error(err, negative_errno(), abs);
        if (exists && S_ISLNK(st.st_mode) && (flags & PATH_FOLLOW_FINAL)) {
                _cleanup_free_ char *base = parent_rel ? path_join(root, parent_rel) : strdup(root);
                _cleanup_free_ char *next = NULL;
                if (!base)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                k = splice_link(dirfd, last, base, "", &next);
                if (k < 0)
                        return io_error(err, k, abs);
                return resolve_abs(p, next, flags, hops + 1, ret, err);
        }
        if (exists && S_ISDIR(st.st_mode) && policy_is_masked(p, abs, true))
                return denied(err, "'%s' is masked", abs);

        Resolved r = RESOLVED_INIT;
        r.name = strdup(last);
        r.path = strdup(abs);
        r.exists = exists;
        if (!r.name || !r.path) {
                resolved_done(&r);
                return vs_error_set(err, -ENOMEM, "out of memory");
        }
        if (write) {
                /* fsync of the directory needs a real descriptor. */
                r.dir_fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (r.dir_fd < 0) {
                        k = negative_errno();
                        resolved_done(&r);
                        return io_error(err, k, abs);
                }
        } else
                r.dir_fd = TAKE_FD(dirfd);
        *ret = r;
        return 0;
}

int resolve_path(const Policy *p, const char *path, unsigned flags, Resolved *ret, VsError **err) {
        _cleanup_free_ char *abs = NULL;
        if (!path || !*path)
                return vs_error_set_kind(err, -EINVAL, "bad_request", "empty path");
        if (strlen(path) >= 4096)
                return vs_error_set_kind(err, -ENAMETOOLONG, "bad_request", "path too long");
        if (to_absolute(p, path, &abs) < 0)
                return vs_error_set(err, -ENOMEM, "out of memory");
        return resolve_abs(p, abs, flags, 0, ret, err);
}

int resolve_cwd(const Policy *p, const char *cwd, int *ret_fd, VsError **err) {
        _cleanup_free_ char *abs = NULL;
        if (to_absolute(p, cwd ? cwd : ".", &abs) < 0)
                return vs_error_set(err, -ENOMEM, "out of memory");
        if (policy_is_masked(p, abs, true))
                return denied(err, "'%s' is masked", abs);
        int fd = open(abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return io_error(err, negative_errno(), abs);
        *ret_fd = fd;
        return 0;
}
