/* SPDX-License-Identifier: MIT */
#include "protect-absent.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "path-util.h"

int protect_literal(const char *glob, char **ret) {
        const char *g = glob;
        if (strncmp(g, "**/", 3) == 0)
                g += 3;
        while (*g == '/')
                g++;
        if (!*g || strpbrk(g, "*?[\\") || strstr(g, "//") || streq(g, ".") || strstr(g, "..")) {
                *ret = NULL;
                return 0;
        }
        size_t n = strlen(g);
        while (n > 0 && g[n - 1] == '/')
                n--;
        if (!(*ret = strndup(g, n)))
                return -ENOMEM;
        return 0;
}

VsAbsent protect_absent_kind(const char *literal, const char **ret_content) {
        const VsProtectDefault *d = protect_default_find(literal);
        const char *slash = strrchr(literal, '/');
        if (!d && slash)
                d = protect_default_find(slash + 1);
        *ret_content = d ? d->content : NULL;
        return d ? d->absent : VS_ABSENT_DIR;
}

static void chown_like_parent(int pfd, const char *name) {
        struct stat pst, st;
        if (fstat(pfd, &pst) == 0 && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (st.st_uid != pst.st_uid || st.st_gid != pst.st_gid))
                (void)!fchownat(pfd, name, pst.st_uid, pst.st_gid, AT_SYMLINK_NOFOLLOW);
}

static int make_leaf(int pfd, const char *name, VsAbsent kind, const char *content) {
        if (kind == VS_ABSENT_DIR) {
                if (mkdirat(pfd, name, 0755) < 0)
                        return errno == EEXIST ? 0 : -errno;
        } else {
                _cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0)
                        return errno == EEXIST ? 0 : -errno;
                int r = content && *content ? write_all(fd, content, strlen(content)) : 0;
                if (r < 0) {
                        (void)unlinkat(pfd, name, 0);
                        return r;
                }
        }
        chown_like_parent(pfd, name);
        return 1;
}

int protect_absent_make(const char *root, const char *rel, VsAbsent kind, const char *content) {
        if (kind == VS_ABSENT_REPORT)
                return 0;
        _cleanup_close_ int cur = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return -errno;
        _cleanup_free_ char *copy = strdup(rel);
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                bool last = !save || !*save;
                struct stat st;
                if (fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        if (last || !S_ISDIR(st.st_mode))
                                return 0;
                } else if (errno != ENOENT)
                        return -errno;
                else if (last)
                        return make_leaf(cur, c, kind, content);
                else if (mkdirat(cur, c, 0755) == 0)
                        chown_like_parent(cur, c);
                else if (errno != EEXIST)
                        return -errno;
                int next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
                safe_close(cur);
                cur = next;
        }
        return 0;
}

int protect_absent_fill(const VsPolicy *p, VsError **err) {
        for (char **g = p->protect; g && *g; g++) {
                _cleanup_free_ char *lit = NULL;
                int r = protect_literal(*g, &lit);
                if (r < 0)
                        return r;
                if (!lit)
                        continue;
                const char *content = NULL;
                VsAbsent kind = protect_absent_kind(lit, &content);
                for (size_t i = 0; i < p->n_rw; i++) {
                        const char *root = p->rw_paths[i].resolved;
                        if (!root)
                                continue;
                        r = protect_absent_make(root, lit, kind, content);
                        /* Not root: the jail runs as this same uid, with less,
                         * so what this process may not create there, the jail
                         * may not either. Root is refused only where the file
                         * system says so for root alone (NFS root_squash),
                         * while the jail's uid might be let in: fail closed. */
                        if ((r == -EACCES || r == -EPERM || r == -EROFS) && (geteuid() != 0 || r == -EROFS))
                                r = 0;
                        if (r < 0)
                                return vs_error_set_kind(err, r, "sandbox_unavailable",
                                                         "cannot make the placeholder %s/%s (so the jail cannot create it): %s",
                                                         root, lit, strerror(-r));
                }
        }
        return 0;
}
