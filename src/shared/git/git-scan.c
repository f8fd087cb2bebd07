/* SPDX-License-Identifier: MIT */
/* Finding the repositories git would take in a tree, and putting new ones
 * aside (git-scan.h). */
#include "chase.h"
#include "git-scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "git-control.h"
#include "host-aside.h"
#include "path-util.h"
#include "policy.h"
#include "strv.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

void git_repos_done(VsGitRepos *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n; i++)
                free(r->items[i].dir);
        free(r->items);
        for (size_t i = 0; i < r->n_links; i++)
                free(r->links[i].path);
        free(r->links);
        *r = (VsGitRepos){ 0 };
}

void git_link_digest(int dfd, const char *name, char text[SHA256_HEX_LEN + 1]) {
        char buf[PATH_MAX];
        ssize_t n = readlinkat(dfd, name, buf, sizeof buf);
        if (n < 0 || (size_t)n >= sizeof buf) {
                text[0] = 0;
                return;
        }
        sha256_hex(buf, (size_t)n, text);
}

static int push(VsGitRepos *out, const char *dir, VsGitRepoKind kind, const struct stat *st, int dfd) {
        VsGitRepo *n = realloc(out->items, (out->n + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        out->items = n;
        char *d = strdup(dir);
        if (!d)
                return -ENOMEM;
        n[out->n++] = (VsGitRepo){ .dir = d, .kind = kind, .dev = st->st_dev, .ino = st->st_ino,
                                   .link = S_ISLNK(st->st_mode) };
        if (S_ISLNK(st->st_mode))
                git_link_digest(dfd, ".git", n[out->n - 1].text);
        return 0;
}

static bool is_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
                        return false;
        return true;
}

/* git's validate_headref(), wider: a symlink is taken whatever it says
 * (git takes one to refs/...), a file that starts "ref:" whatever follows
 * (git wants refs/ after the blanks), or one that starts with 40 or 64
 * hex digits (an object name, detached). */
static bool head_valid(int dfd) {
        struct stat st;
        if (fstatat(dfd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return false;
        if (S_ISLNK(st.st_mode))
                return true;
        if (!S_ISREG(st.st_mode))
                return false;
        _cleanup_close_ int fd = openat(dfd, "HEAD", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return false;
        char buf[256];
        ssize_t n = read_full(fd, buf, sizeof buf - 1);
        if (n < 0)
                return false;
        buf[n] = 0;
        if (strncmp(buf, "ref:", 4) == 0)
                return true;
        return (n >= 40 && is_hex(buf, 40)) || (n >= 64 && is_hex(buf, 64));
}

static bool entry_exists(int dfd, const char *name) {
        struct stat st;
        return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* git's is_git_directory() on the directory held by dfd: a valid HEAD,
 * and objects/ and refs/ (any kind of entry: git's access(X_OK) follows
 * a symlink, this never does but says yes), or a commondir file (git then
 * looks for objects/ and refs/ where it points). */
static bool is_git_directory_at(int dfd) {
        if (!head_valid(dfd))
                return false;
        if (entry_exists(dfd, "commondir"))
                return true;
        return entry_exists(dfd, "objects") && entry_exists(dfd, "refs");
}

/* What dfd (the directory dir) and its .git make; *ret_dotgit_dir: .git
 * is a real directory (the walk then looks inside it like any other). */
int git_scan_look(int dfd, const char *dir, VsGitRepos *out) {
        struct stat st, dst;
        int r = 0;
        if (fstatat(dfd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
                        /* git reads "gitdir: PATH", or follows the link. */
                        r = push(out, dir, VS_GIT_DOTGIT_LINK, &st, dfd);
                else if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int gfd = openat(dfd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (gfd >= 0 && is_git_directory_at(gfd))
                                r = push(out, dir, VS_GIT_DOTGIT, &st, dfd);
                }
        }
        if (r >= 0 && is_git_directory_at(dfd) && fstat(dfd, &dst) == 0)
                r = push(out, dir, VS_GIT_BARE, &dst, dfd);
        return r;
}

static int walk(int dfd, char *path, size_t len, unsigned depth, VsGitRepos *out) {
        int r = git_scan_look(dfd, path, out);
        if (r < 0)
                return r;
        if (++out->dirs >= GIT_SCAN_MAX_DIRS || depth >= GIT_SCAN_MAX_DEPTH) {
                out->truncated = true;
                return 0;
        }
        int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                size_t nl = strlen(de->d_name);
                if (len + 1 + nl >= PATH_MAX) {
                        out->truncated = true;
                        continue;
                }
                _cleanup_close_ int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        continue; /* not a directory (or a symlink to one): git does not look in it from here */
                path[len] = '/';
                memcpy(path + len + 1, de->d_name, nl + 1);
                r = walk(sub, path, len + 1 + nl, depth + 1, out);
                path[len] = 0;
        }
        closedir(d);
        return r;
}

/* The walk of root. */
static int scan_root(const char *root, VsGitRepos *out) {
        _cleanup_close_ int fd = chase_open_dir(root);
        if (fd < 0)
                return fd;
        /* O_PATH cannot be read: the directory itself, held. */
        _cleanup_close_ int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        char path[PATH_MAX];
        size_t len = strlen(root);
        if (len >= sizeof path)
                return -ENAMETOOLONG;
        memcpy(path, root, len + 1);
        while (len > 1 && path[len - 1] == '/')
                path[--len] = 0;
        return walk(dfd, path, len, 0, out);
}

int git_scan(const char *root, VsGitRepos *out) {
        return scan_root(root, out);
}

int git_scan_dir(const char *dir, VsGitRepos *out) {
        _cleanup_close_ int fd = chase_open_dir(dir);
        if (fd < 0)
                return fd;
        _cleanup_close_ int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dfd < 0 ? -errno : git_scan_look(dfd, dir, out);
}

bool git_repos_has(const VsGitRepos *base, const VsGitRepo *r) {
        /* DIR/.git tested as a bare repository is DIR's .git. */
        const char *slash = strrchr(r->dir, '/');
        bool in_dotgit = r->kind == VS_GIT_BARE && slash && streq(slash + 1, ".git");
        size_t plen = slash ? (size_t)(slash - r->dir) : 0;
        for (size_t i = 0; base && i < base->n; i++) {
                const VsGitRepo *b = &base->items[i];
                /* The same inode: a repository the host had, wherever it is
                 * now (the host renamed it: the jail cannot, its sealed
                 * files pin it). */
                if (b->kind == r->kind && b->dev == r->dev && b->ino == r->ino && b->link == r->link &&
                    (!b->link || streq(b->text, r->text)))
                        return true;
                /* A .git the host had in that directory: sealed or pinned
                 * in the jail, so whatever .git is there now the host put
                 * there (a .git replaced whole). Not a symlink: no mount
                 * holds one, and the jail swapped its own repository in
                 * for it with renameat2's exchange, which the next start
                 * then sealed as the host's (the host's git status ran
                 * its core.fsmonitor: an attack review). */
                if (b->link)
                        continue;
                if (b->kind != VS_GIT_BARE && r->kind != VS_GIT_BARE && streq(b->dir, r->dir))
                        return true;
                if (b->kind != VS_GIT_BARE && in_dotgit && strlen(b->dir) == plen && strncmp(b->dir, r->dir, plen) == 0)
                        return true;
        }
        return false;
}

int git_quarantine(const VsGitRepo *r, const VsHostMaker *maker, char **ret_moved, VsError **err) {
        /* A .git file or symlink is renamed itself; a repository directory
         * loses its HEAD (the .git directory renamed whole would still be
         * a repository, under another name), whose identity noted is its
         * directory's. */
        bool link = r->kind == VS_GIT_DOTGIT_LINK;
        _cleanup_free_ char *dir = r->kind == VS_GIT_DOTGIT ? path_join(r->dir, ".git") : strdup(r->dir);
        if (!dir)
                return -ENOMEM;
        return host_put_aside(maker, dir, link ? ".git" : "HEAD", !link, false, r->dev, r->ino, ret_moved, err);
}

int git_scan_policy(const VsPolicy *p, bool base, VsGitRepos *out) {
        for (size_t i = 0; i < p->n_rw; i++) {
                if (!p->rw_paths[i].resolved)
                        continue;
                int r = scan_root(p->rw_paths[i].resolved, out);
                if (r < 0 && r != -ENOENT && r != -ENOTDIR && r != -ELOOP)
                        return r;
        }
        return base ? git_scan_base_standin(p, out) : 0;
}

int git_scan_base_standin(const VsPolicy *p, VsGitRepos *out) {
        /* The root's .git is never the jail's: a placeholder or a
         * repository, sealed or pinned in the jail (git-control.h), or made
         * by the host (git_init) after this look. A stand-in (no identity)
         * says so; only a symlinked .git, which the jail could replace, is
         * left to its identity. */
        _cleanup_close_ int wfd = chase_open_dir(p->workspace);
        struct stat st;
        if (wfd >= 0 && fstatat(wfd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                return 0;
        return push(out, p->workspace, VS_GIT_DOTGIT, &(struct stat){ 0 }, -EBADF);
}

/* The directory part of path (absolute) and its last component. */
static int split_last(const char *path, char **ret_dir, const char **ret_name) {
        const char *slash = strrchr(path, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        *ret_dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
        *ret_name = slash + 1;
        return *ret_dir ? 0 : -ENOMEM;
}

int git_links_note(VsGitRepos *base, const char *path, const struct stat *st) {
        for (size_t i = 0; i < base->n_links; i++)
                if (streq(base->links[i].path, path))
                        return 0;
        _cleanup_free_ char *dir = NULL;
        const char *name;
        if (split_last(path, &dir, &name) < 0)
                return -ENOMEM;
        _cleanup_close_ int dfd = chase_open_dir(dir);
        if (dfd < 0)
                return dfd == -ENOMEM ? dfd : 0;
        struct stat own;
        if (!st) {
                if (fstatat(dfd, name, &own, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(own.st_mode))
                        return 0;
                st = &own;
        }
        VsGitLink *n = reallocarray(base->links, base->n_links + 1, sizeof *n);
        if (!n)
                return -ENOMEM;
        base->links = n;
        char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        n[base->n_links] = (VsGitLink){ .path = copy, .dev = st->st_dev, .ino = st->st_ino };
        git_link_digest(dfd, name, n[base->n_links++].text);
        return 0;
}

size_t git_links_put_aside(const VsGitRepos *base, const VsHostMaker *maker,
                           bool (*could_write)(const char *dir, void *ud), void (*before)(void *ud), void *ud,
                           char ***moved, char ***failed) {
        size_t n = 0;
        bool began = false;
        for (size_t i = 0; base && i < base->n_links; i++) {
                const VsGitLink *l = &base->links[i];
                _cleanup_free_ char *dir = NULL;
                const char *name;
                if (split_last(l->path, &dir, &name) < 0)
                        continue;
                _cleanup_close_ int dfd = chase_open_dir(dir);
                struct stat st;
                /* Gone with its directory, or still the link: nothing to
                 * put aside. */
                if (dfd < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                char text[SHA256_HEX_LEN + 1];
                if (S_ISLNK(st.st_mode))
                        git_link_digest(dfd, name, text);
                /* The same inode number is not enough: a link the jail
                 * made after removing this one may take it. */
                if (S_ISLNK(st.st_mode) && st.st_dev == l->dev && st.st_ino == l->ino && *text && streq(text, l->text))
                        continue;
                if (could_write && !could_write(dir, ud))
                        continue;
                if (!began && before)
                        before(ud);
                began = true;
                _cleanup_free_ char *to = NULL;
                int r = host_put_aside(maker, dir, name, false, true, st.st_dev, st.st_ino, &to, NULL);
                if (r == -ESTALE)
                        continue;
                if (r < 0) {
                        if (failed)
                                (void)strv_extend(failed, l->path);
                        continue;
                }
                if (moved && strv_extend(moved, l->path) >= 0)
                        (void)strv_extend(moved, to ? to : "");
                n++;
        }
        return n;
}
