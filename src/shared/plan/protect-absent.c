/* SPDX-License-Identifier: MIT */
#include "protect-absent.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "glob.h"
#include "host-make.h"
#include "mask-walk.h"
#include "path-util.h"
#include "strv.h"

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
                /* Whole when it appears (an unnamed file, written, then
                 * linked in; EEXIST as O_EXCL says it): the daemon's watch
                 * tells a placeholder by its content. */
                _cleanup_close_ int fd = openat(pfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        char proc[64];
                        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
                        int r = content && *content ? write_all(fd, content, strlen(content)) : 0;
                        if (r < 0)
                                return r;
                        if (linkat(AT_FDCWD, proc, pfd, name, AT_SYMLINK_FOLLOW) == 0)
                                goto made;
                        if (errno == EEXIST)
                                return 0;
                        if (errno != ENOENT)
                                return -errno;
                        /* no /proc: as below */
                } else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
                        return -errno;
                fd = safe_close(fd);
                fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0)
                        return errno == EEXIST ? 0 : -errno;
                int r = content && *content ? write_all(fd, content, strlen(content)) : 0;
                if (r < 0) {
                        (void)unlinkat(pfd, name, 0);
                        return r;
                }
        }
made:
        chown_like_parent(pfd, name);
        return 1;
}

/* What protect_absent_fill's first pass would have its maker make, asked
 * of it at once (make_many). */
typedef struct Batch {
        VsHostItem *items;
        size_t n;
} Batch;

static void batch_done(Batch *b) {
        for (size_t i = 0; i < b->n; i++)
                free((char *)b->items[i].rel);
        free(b->items);
}

/* The same through the thread's maker (host-make.h); with b, noted there
 * instead (once a rel). */
static int make_by(const VsHostMaker *m, const char *rel, VsAbsent kind, const char *content, Batch *b) {
        int text = kind == VS_ABSENT_DIR ? VS_HOST_TEXT_EMPTY : host_text_index(content);
        if (text < 0)
                return -EINVAL;
        unsigned flags = VS_HOST_MAKE_PARENTS | (kind == VS_ABSENT_DIR ? VS_HOST_MAKE_DIR : 0);
        if (b) {
                for (size_t i = 0; i < b->n; i++)
                        if (streq(b->items[i].rel, rel))
                                return 0;
                VsHostItem *more = reallocarray(b->items, b->n + 1, sizeof *more);
                if (!more)
                        return -ENOMEM;
                b->items = more;
                char *copy = strdup(rel);
                if (!copy)
                        return -ENOMEM;
                b->items[b->n++] = (VsHostItem){ .rel = copy, .flags = flags, .text = (VsHostText)text };
                return 0;
        }
        int r = m->make(m->userdata, rel, flags, (VsHostText)text, NULL);
        /* A symlink or a file on the way: nothing can be made below it. */
        return r == -ELOOP || r == -ENOTDIR ? 0 : r;
}

/* One component c of absent_make's walk in the directory cur: 2 to go
 * on into it (a directory there, or made), 0 when done (something else
 * there, or it was the last and there already), make_leaf's answer for
 * the last, else a negative errno. */
static int absent_step(int cur, const char *c, bool last, VsAbsent kind, const char *content) {
        struct stat st;
        if (fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return last || !S_ISDIR(st.st_mode) ? 0 : 2;
        if (errno != ENOENT)
                return -errno;
        if (last)
                return make_leaf(cur, c, kind, content);
        if (mkdirat(cur, c, 0755) == 0)
                chown_like_parent(cur, c);
        else if (errno != EEXIST)
                return -errno;
        return 2;
}

/* The link text t read in the directory dir (absolute, reached from root
 * without a link), as an absolute path read lexically, or NULL: a ".."
 * after another component (what it climbs out of may itself be a link,
 * which the kernel would follow first), or no memory. */
static char *link_lexical(const char *dir, const char *t) {
        bool named = false;
        for (const char *c = t; *c;) {
                size_t n = strcspn(c, "/");
                if (n == 2 && c[0] == '.' && c[1] == '.') {
                        if (named || t[0] == '/')
                                return NULL;
                } else if (n && !(n == 1 && c[0] == '.'))
                        named = true;
                c += n + (c[n] == '/');
        }
        _cleanup_free_ char *joined = t[0] == '/' ? strdup(t) : path_join(dir, t);
        return joined ? path_normalize(joined) : NULL;
}

/* path (absolute, lexical, out of root) read through the host's own
 * links on its way (chase_path: none inside untrusted, nor inside root,
 * is followed), as far as it exists, with what is missing after it: a
 * link written through an alias of the workspace (`$PWD/cfg/envrc` with
 * $PWD reached through ~/code -> /data/code) leads into it (an attack
 * review). 0 with *ret; -ELOOP when a link inside those trees is met. */
static int host_canonical(const char *path, const char *root, char *const *untrusted, char **ret) {
        _cleanup_strv_free_ char **trees = strv_copy(untrusted);
        if (!trees || (!strv_contains(trees, root) && strv_extend(&trees, root) < 0))
                return -ENOMEM;
        ChaseResult cr = { .fd = -1 };
        int r = chase_path(path, trees, &cr);
        if ((r == 0 || r == -ENOENT) && cr.path)
                *ret = TAKE_PTR(cr.path);
        else if (r >= 0 || r == -ENOENT)
                r = -ENOMEM;
        chase_result_done(&cr);
        return r == -ENOENT ? 0 : r;
}

int protect_absent_resolve(const char *root, const char *rel, char **ret, char ***links) {
        return protect_absent_resolve_in(root, rel, NULL, ret, links);
}

int protect_absent_resolve_in(const char *root, const char *rel, char *const *untrusted, char **ret, char ***links) {
        _cleanup_free_ char *path = path_join(root, rel);
        if (!path)
                return -ENOMEM;
        bool canonical = false;
        for (unsigned hops = 0; hops <= VS_ABSENT_MAX_LINKS; hops++) {
                const char *r = path_startswith(path, root);
                if (!r && !canonical) {
                        _cleanup_free_ char *c = NULL;
                        int k = host_canonical(path, root, untrusted, &c);
                        if (k < 0)
                                return k;
                        canonical = true;
                        free(path);
                        path = TAKE_PTR(c);
                        r = path_startswith(path, root);
                }
                if (!r) {
                        *ret = TAKE_PTR(path);
                        return -EXDEV;
                }
                canonical = false;
                if (!*r)
                        return 0; /* root itself: there */
                _cleanup_close_ int cur = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (cur < 0)
                        return -errno;
                _cleanup_free_ char *next = NULL;
                for (size_t off = (size_t)(r - path); path[off] && !next;) {
                        size_t n = strcspn(path + off, "/");
                        _cleanup_free_ char *c = strndup(path + off, n);
                        if (!c)
                                return -ENOMEM;
                        bool last = !path[off + n];
                        struct stat st;
                        /* Missing, or anything unforeseen: made (or
                         * refused) by the walk that never follows a link. */
                        if (fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode)) {
                                int fd = !last && fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)
                                                 ? openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                                 : -1;
                                if (fd < 0)
                                        break;
                                safe_close(cur);
                                cur = fd;
                                off += n + 1;
                                continue;
                        }
                        char t[PATH_MAX];
                        ssize_t k = readlinkat(cur, c, t, sizeof t - 1);
                        if (k <= 0)
                                return 0;
                        t[k] = 0;
                        /* Noted first, whatever it says: the jail may
                         * replace a link on the way with its own, which
                         * the next start would read (an attack review). */
                        _cleanup_free_ char *link = strndup(path, off + n);
                        if (!link || (links && !strv_contains(*links, link) && strv_extend(links, link) < 0))
                                return -ENOMEM;
                        _cleanup_free_ char *dir = strndup(path, off > 1 ? off - 1 : 1);
                        _cleanup_free_ char *to = dir ? link_lexical(dir, t) : NULL;
                        if (!to)
                                return dir ? -ELOOP : -ENOMEM;
                        next = last ? TAKE_PTR(to) : path_join(to, path + off + n + 1);
                        if (!next)
                                return -ENOMEM;
                }
                if (!next)
                        return (*ret = strdup(r)) ? 1 : -ENOMEM;
                free(path);
                path = TAKE_PTR(next);
        }
        return -ELOOP;
}

/* protect_absent_make; with b, only what its maker would be asked is
 * noted there. */
static int absent_make(const char *root, const char *rel, VsAbsent kind, const char *content, const VsHostMaker *maker,
                       Batch *b) {
        if (kind == VS_ABSENT_REPORT)
                return 0;
        /* Where the symlinks on its way lead, below root: a dangling
         * .envrc -> cfg/envrc has its placeholder made at cfg/envrc, else
         * the jail would create it there (an attack review). */
        _cleanup_free_ char *resolved = NULL;
        int k = protect_absent_resolve(root, rel, &resolved, NULL);
        if (k == -EXDEV || k == -ELOOP)
                return 0; /* nothing made here: protect_absent_fill weighs it */
        if (k <= 0)
                return k;
        rel = resolved;
        _cleanup_free_ char *abs = path_join(root, rel);
        const char *wrel;
        const VsHostMaker *m = abs ? host_maker_for(maker, abs, &wrel) : NULL;
        struct stat there;
        /* There already (every start after the first): nothing to ask. */
        if (m)
                return lstat(abs, &there) == 0 ? 0 : make_by(m, wrel, kind, content, b);
        if (b)
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
                mode_t was = 0;
                /* A directory of this uid's that its mode alone closes is
                 * opened for the step and given its mode back: a jail of
                 * the same uid would chmod it and make the name. */
                int r = absent_step(cur, c, last, kind, content), up = 0;
                if (r == -EACCES && (up = host_dir_open_up(cur, &was)) > 0)
                        r = absent_step(cur, c, last, kind, content);
                int next = r == 2 ? openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -EBADF;
                if (r == 2 && next < 0)
                        r = errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
                if (up > 0)
                        host_dir_restore(cur, was);
                if (r != 2)
                        return r;
                safe_close(cur);
                cur = next;
        }
        return 0;
}

int protect_absent_make(const char *root, const char *rel, VsAbsent kind, const char *content, const VsHostMaker *maker) {
        return absent_make(root, rel, kind, content, maker, NULL);
}

const VsProtectDefault *protect_tool_dir(const char *literal, size_t *ret_len) {
        for (const char *c = literal, *slash; (slash = strchr(c, '/')); c = slash + 1) {
                _cleanup_free_ char *name = strndup(c, (size_t)(slash - c));
                const VsProtectDefault *d = name ? protect_default_find(name) : NULL;
                if (d && strncmp(d->glob, "**/", 3) == 0) {
                        *ret_len = (size_t)(slash - literal);
                        return d;
                }
        }
        return NULL;
}

/* root/rel is missing and lies in a tool's configuration directory: that
 * directory is sealed whole (made first where missing, unless its row
 * makes none), so the file cannot be created in it. The directory's path
 * is added to *sealed. */
static int seal_tool_dir(const char *root, const char *rel, const VsProtectDefault *d, size_t len,
                         const VsHostMaker *maker, Batch *b, char ***sealed) {
        _cleanup_free_ char *abs = path_join(root, rel);
        _cleanup_free_ char *dir_rel = strndup(rel, len);
        _cleanup_free_ char *dir = dir_rel ? path_join(root, dir_rel) : NULL;
        if (!abs || !dir)
                return -ENOMEM;
        struct stat st;
        if (lstat(abs, &st) == 0)
                return 0; /* there: protected in its own right */
        int r = absent_make(root, dir_rel, d->absent, d->content, maker, b);
        if (r < 0 || b)
                return r;
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || strv_contains(*sealed, dir))
                return 0; /* not made (.idea), or a symlink: the walk follows that */
        return strv_extend(sealed, dir);
}

/* Whether path (absolute, lexical) lies below one of p's writable
 * listed paths and is missing there (reached without a link, as the plan
 * seals an existing one: jail-facts.c add_existing): a jail of p could
 * make it. */
static bool writable_elsewhere(const VsPolicy *p, const char *path) {
        for (size_t i = 0; path && i < p->n_rw; i++) {
                const char *root = p->rw_paths[i].resolved;
                const char *rel = root ? path_startswith(path, root) : NULL;
                if (!rel)
                        continue;
                _cleanup_close_ int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                _cleanup_close_ int fd = rfd < 0 ? -errno : chase_beneath(rfd, rel, O_PATH);
                return fd < 0;
        }
        return false;
}

int protect_absent_fill(const VsPolicy *p, const VsHostMaker *maker, const VsHostItem *also, size_t n_also,
                        char ***ret_sealed, char ***ret_made, char ***ret_links, VsError **err) {
        _cleanup_strv_free_ char **sealed = calloc(1, sizeof(char *)), **made = calloc(1, sizeof(char *)),
                                 **links = calloc(1, sizeof(char *)), **rw_roots = calloc(1, sizeof(char *));
        if (!sealed || !made || !links || !rw_roots)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved && strv_extend(&rw_roots, p->rw_paths[i].resolved) < 0)
                        return -ENOMEM;
        /* A maker that takes a batch is first asked for everything the
         * pass below would ask it for, at once; the pass then finds it
         * there, and asks one by one only for what the batch did not
         * make (each failure then answered for itself). */
        _cleanup_(batch_done) Batch batch = {};
        for (int pass = maker && maker->make_many ? 0 : 1; pass < 2; pass++) {
                Batch *b = pass == 0 ? &batch : NULL;
                for (char **g = p->protect; g && *g; g++) {
                        _cleanup_free_ char *lit = NULL;
                        int r = protect_literal(*g, &lit);
                        if (r < 0)
                                return r;
                        if (!lit)
                                continue;
                        const char *content = NULL;
                        VsAbsent kind = protect_absent_kind(lit, &content);
                        size_t len = 0;
                        const VsProtectDefault *tool = protect_tool_dir(lit, &len);
                        for (size_t i = 0; i < p->n_rw; i++) {
                                const char *root = p->rw_paths[i].resolved;
                                /* The project's own tree only: a writable
                                 * path elsewhere (a cache, /tmp/build) is no
                                 * directory the host opens as a project, and
                                 * is not the user's to fill with
                                 * placeholders; the watch covers it. */
                                if (!root || !path_is_below_or_equal(root, p->workspace))
                                        continue;
                                /* What may be made: noted when missing now. */
                                _cleanup_free_ char *rel = tool ? strndup(lit, len) : strdup(lit), *res = NULL;
                                _cleanup_strv_free_ char **passed = NULL;
                                int k = rel ? protect_absent_resolve_in(root, rel, rw_roots, &res, &passed) : -ENOMEM;
                                /* Links the walk cannot read safely (a ".."
                                 * after a name, too many), or leading into a
                                 * writable path elsewhere: the jail could
                                 * make what they lead to, and no placeholder
                                 * stands there (an attack review). */
                                if (k == -ELOOP || (k == -EXDEV && writable_elsewhere(p, res)))
                                        return vs_error_set_kind(
                                                err, -ELOOP, "sandbox_unavailable",
                                                "%s/%s is a symlink the jail could complete: %s; make what it leads to "
                                                "exist, or point it straight at a path inside %s",
                                                root, rel,
                                                k == -ELOOP ? "its text climbs (\"..\") after a name, leads through a link "
                                                              "the jail could replace, or more than 16 links lead on"
                                                            : "it leads to a path missing in another writable path",
                                                root);
                                if (k == -EXDEV)
                                        k = 0;
                                if (k < 0)
                                        return k;
                                _cleanup_free_ char *target = path_join(root, k > 0 ? res : rel);
                                struct stat st;
                                if (!target)
                                        return -ENOMEM;
                                bool there = lstat(target, &st) == 0;
                                if (!there && errno == ENOENT && !strv_contains(made, target) &&
                                    strv_extend(&made, target) < 0)
                                        return -ENOMEM;
                                r = tool ? seal_tool_dir(root, lit, tool, len, maker, b, &sealed)
                                         : absent_make(root, lit, kind, content, maker, b);
                                /* A read-only file system is read-only to
                                 * the jail too. A refusal by permission is
                                 * no proof the jail would meet one: it may
                                 * move another account's directory aside
                                 * and make the name in one of its own. */
                                if (r == -EROFS)
                                        r = 0;
                                if (r == -ENOMEM)
                                        return r;
                                /* Made (or there) where a link leads: sealed
                                 * there, and the links noted (the jail can
                                 * replace a link: jail-facts.c). */
                                if ((there || r > 0) && !b && k > 0 && passed && !strv_contains(sealed, target) &&
                                    strv_extend(&sealed, target) < 0)
                                        return -ENOMEM;
                                for (char **l = passed; !b && l && *l; l++)
                                        if (!strv_contains(links, *l) && strv_extend(&links, *l) < 0)
                                                return -ENOMEM;
                                if (r < 0)
                                        return vs_error_set_kind(
                                                err, r, "sandbox_unavailable",
                                                "cannot make the placeholder %s/%s (so the jail cannot create it): %s%s",
                                                root, lit, strerror(-r), host_closed_hint(r));
                        }
                }
                /* What fails here is asked again in the next pass (also's,
                 * by the caller). */
                if (b && b->n + n_also > 1) {
                        _cleanup_free_ VsHostItem *all = calloc(b->n + n_also, sizeof *all);
                        if (!all)
                                return -ENOMEM;
                        if (n_also)
                                memcpy(all, also, n_also * sizeof *all);
                        if (b->n)
                                memcpy(all + n_also, b->items, b->n * sizeof *all);
                        (void)maker->make_many(maker->userdata, all, b->n + n_also, NULL);
                }
        }
        if (ret_sealed)
                *ret_sealed = TAKE_PTR(sealed);
        if (ret_made)
                *ret_made = TAKE_PTR(made);
        if (ret_links)
                *ret_links = TAKE_PTR(links);
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int protect_matches_describe(const VsPolicy *p, char ***ret, VsError **err) {
        _cleanup_strv_free_ char **out = calloc(1, sizeof(char *)), **roots = calloc(1, sizeof(char *));
        if (!out || !roots)
                return -ENOMEM;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_rw; i++)
                if (p->rw_paths[i].resolved)
                        r = strv_extend(&roots, p->rw_paths[i].resolved);
        if (r < 0 || (r = policy_sets_check(p, err)) < 0)
                return r;
        const VsGlobSet *set = p->protect_set;
        for (char **root = roots; set && *root; root++) {
                MaskList ml = { 0 };
                if ((r = mask_walk_links(*root, set, roots, &ml, err)) < 0) {
                        mask_list_done(&ml);
                        return r;
                }
                for (size_t k = 0; r >= 0 && k < ml.n; k++) {
                        _cleanup_free_ char *path = path_join(*root, ml.items[k].relpath);
                        _cleanup_free_ char *real = path ? realpath(path, NULL) : NULL;
                        if (!path)
                                r = -ENOMEM;
                        else if (real && !streq(real, path))
                                r = strv_extendf(&out, "%s -> %s", path, real);
                        else
                                r = strv_extend(&out, path);
                }
                mask_list_done(&ml);
                if (r < 0)
                        return r;
        }
        qsort(out, strv_length(out), sizeof(char *), cmp_str);
        *ret = TAKE_PTR(out);
        return 0;
}
