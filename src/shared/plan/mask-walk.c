/* SPDX-License-Identifier: MIT */
#include "mask-walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* The walk holds one directory descriptor per level and opens each child
 * relative to its parent with O_NOFOLLOW, so a directory swapped for a
 * symlink while we walk is never followed out of the workspace. One path
 * buffer is reused for the whole walk, each entry is matched with one step
 * from its directory's state, and only matches allocate. */

typedef struct Walk {
        const VsGlobSet *set;
        const char *root;
        size_t max_entries;
        int root_fd;       /* follow_links: the root, for the targets' check */
        bool follow_links; /* mask_walk_links(): descend a symlinked directory below a root, once */
        struct stat *also; /* follow_links: the other roots a link may lead into (or onto) */
        size_t n_also;
        bool following;    /* inside one now: no further link is followed */
        MaskList list;
        size_t cap;
        /* Match states, one slot per depth (see glob_set_step). */
        unsigned char *states;
        size_t state_size, state_slots;
        char path[PATH_MAX];
} Walk;

void mask_list_done(MaskList *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].relpath);
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

static int walk_add(Walk *w, MaskKind kind, VsError **err) {
        if (w->list.n >= w->max_entries)
                return vs_error_set(err, -E2BIG,
                                    "more than %zu masked paths under %s; narrow the mask patterns or mask a parent directory",
                                    w->max_entries, w->root);
        if (w->list.n == w->cap) {
                size_t ncap = w->cap ? w->cap * 2 : 16;
                MaskEntry *items = realloc(w->list.items, ncap * sizeof *items);
                if (!items)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                w->list.items = items;
                w->cap = ncap;
        }
        char *copy = strdup(w->path);
        if (!copy)
                return vs_error_set(err, -ENOMEM, "out of memory");
        w->list.items[w->list.n++] = (MaskEntry){ .relpath = copy, .kind = kind };
        return 0;
}

static MaskKind kind_from_dtype(unsigned char t) {
        switch (t) {
        case DT_REG:
                return MASK_FILE;
        case DT_DIR:
                return MASK_DIR;
        case DT_LNK:
                return MASK_SYMLINK;
        default:
                return MASK_OTHER;
        }
}

static unsigned char dtype_from_mode(mode_t m) {
        if (S_ISREG(m))
                return DT_REG;
        if (S_ISDIR(m))
                return DT_DIR;
        if (S_ISLNK(m))
                return DT_LNK;
        return DT_FIFO; /* stands for every other kind */
}

/* Errors that mean "this entry is gone or not ours to read": skipped.
 * Anything else (EMFILE, ENOMEM, EIO...) aborts the walk, because skipping
 * it would silently leave a secret unmasked. */
static bool skippable(int r) {
        return r == -EACCES || r == -EPERM || r == -ENOENT || r == -ENOTDIR || r == -ELOOP;
}

static int ensure_slots(Walk *w, size_t slots, VsError **err) {
        if (slots <= w->state_slots)
                return 0;
        size_t n = MAX(slots, w->state_slots * 2);
        unsigned char *p = realloc(w->states, n * w->state_size);
        if (!p)
                return vs_error_set(err, -ENOMEM, "out of memory");
        w->states = p;
        w->state_slots = n;
        return 0;
}

static int walk_dir(Walk *w, int dfd, size_t len, size_t depth, VsError **err);

/* Whether st is the directory s names. */
static bool same_inode(const struct stat *st, const struct stat *s) {
        return st->st_dev == s->st_dev && st->st_ino == s->st_ino;
}

/* A symlink that names a directory below the root, or below (or at) one
 * of the other roots, where the patterns could match below it as a
 * directory (.vscode -> shared-vscode with "**" "/.vscode/tasks.json"):
 * walked under the link's name, so a match is found by the name the
 * host's tools use; the caller protects what it resolves to. A link
 * leading anywhere else is not followed (the jail does not see there), nor
 * one inside a followed directory (no loops), nor one onto the root. */
static int walk_link(Walk *w, int pfd, const char *name, size_t plen, size_t depth, VsError **err) {
        const unsigned char *state = w->states + depth * w->state_size;
        unsigned char *child = w->states + (depth + 1) * w->state_size;
        bool matched;
        bool below = glob_set_step(w->set, state, name, strlen(name), true, child, &matched);
        if (matched) {
                /* A pattern for directories only (".vscode/"): the link
                 * names one if it leads to one; the caller protects that. */
                struct stat lst;
                return fstatat(pfd, name, &lst, 0) == 0 && S_ISDIR(lst.st_mode) ? walk_add(w, MASK_SYMLINK, err) : 0;
        }
        if (!below)
                return 0;
        int cfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cfd < 0)
                return 0; /* dangling, or no directory: nothing below it */
        struct stat rst, st;
        bool inside = false;
        /* Below a root: the target's ancestors reach the root's inode. */
        if (fstat(w->root_fd, &rst) == 0) {
                int up = fcntl(cfd, F_DUPFD_CLOEXEC, 3);
                for (int k = 0; up >= 0 && k < 256 && fstat(up, &st) == 0; k++) {
                        if (same_inode(&st, &rst)) {
                                inside = k > 0;
                                break;
                        }
                        for (size_t i = 0; i < w->n_also && !inside; i++)
                                inside = same_inode(&st, &w->also[i]);
                        if (inside)
                                break;
                        int next = openat(up, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        struct stat nst;
                        bool top = next >= 0 && fstat(next, &nst) == 0 && nst.st_ino == st.st_ino && nst.st_dev == st.st_dev;
                        safe_close(up);
                        up = top ? safe_close(next) : next;
                }
                safe_close(up);
        }
        if (!inside) {
                safe_close(cfd);
                return 0;
        }
        w->following = true;
        int r = walk_dir(w, cfd, plen, depth + 1, err);
        w->following = false;
        return r;
}

/* Walks the directory open as dfd (taken over) whose relative path is
 * w->path[0..len) and whose match state is slot depth. */
static int walk_dir(Walk *w, int dfd, size_t len, size_t depth, VsError **err) {
        int r = ensure_slots(w, depth + 2, err);
        if (r < 0) {
                safe_close(dfd);
                return r;
        }
        DIR *d = fdopendir(dfd);
        if (!d) {
                r = negative_errno();
                safe_close(dfd);
                return vs_error_set(err, r, "cannot read directory %s/%s: %s", w->root, w->path,
                                    strerror(-r));
        }

        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno != 0 && !skippable(-errno))
                                r = vs_error_set(err, -errno, "cannot read directory %s/%s: %s", w->root,
                                                 w->path, strerror(errno));
                        break;
                }
                const char *name = de->d_name;
                if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
                        continue;

                size_t nlen = strlen(name);
                size_t plen = len + (len > 0) + nlen;
                if (plen >= sizeof w->path) {
                        w->path[len] = '\0';
                        r = vs_error_set(err, -ENAMETOOLONG,
                                         "path too long under %s/%s; masks cannot be checked there, shorten the tree",
                                         w->root, w->path);
                        break;
                }
                if (len > 0)
                        w->path[len] = '/';
                memcpy(w->path + len + (len > 0), name, nlen + 1);

                unsigned char type = de->d_type;
                if (type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                int k = negative_errno();
                                if (skippable(k))
                                        continue;
                                r = vs_error_set(err, k, "cannot stat %s/%s: %s", w->root, w->path,
                                                 strerror(-k));
                                break;
                        }
                        type = dtype_from_mode(st.st_mode);
                }
                bool is_dir = type == DT_DIR;

                /* No ancestor of this entry matched (matched directories are
                 * not descended), so only the entry itself is in question. */
                const unsigned char *state = w->states + depth * w->state_size;
                unsigned char *child = w->states + (depth + 1) * w->state_size;
                bool matched;
                bool below = glob_set_step(w->set, state, name, nlen, is_dir, child, &matched);
                if (matched) {
                        r = walk_add(w, kind_from_dtype(type), err);
                        if (r < 0)
                                break;
                        continue;
                }
                if (type == DT_LNK && w->follow_links && !w->following) {
                        r = walk_link(w, dirfd(d), name, plen, depth, err);
                        if (r < 0)
                                break;
                        continue;
                }
                if (!is_dir || !below)
                        continue;

                int cfd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0) {
                        int k = negative_errno();
                        if (skippable(k))
                                continue; /* unreadable, vanished or swapped for a non-directory */
                        r = vs_error_set(err, k, "cannot open directory %s/%s: %s", w->root, w->path,
                                         strerror(-k));
                        break;
                }
                r = walk_dir(w, cfd, plen, depth + 1, err);
                if (r < 0)
                        break;
        }
        w->path[len] = '\0';
        closedir(d);
        return r;
}

static void walk_free(Walk *w) {
        if (!w)
                return;
        safe_close(w->root_fd);
        free(w->also);
        free(w->states);
        free(w);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Walk *, walk_free);

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const MaskEntry *)a)->relpath, ((const MaskEntry *)b)->relpath);
}

static int walk_run(const char *root, const VsGlobSet *set, size_t max_entries, bool follow_links,
                    char *const *also, MaskList *ret, VsError **err) {
        _cleanup_(walk_freep) Walk *w = NULL;

        if (!root || root[0] != '/')
                return vs_error_set(err, -EINVAL, "mask walk root must be an absolute path");

        w = calloc(1, sizeof *w);
        if (!w)
                return vs_error_set(err, -ENOMEM, "out of memory");
        w->set = set;
        w->root = root;
        w->max_entries = max_entries;
        w->root_fd = -EBADF;
        w->follow_links = follow_links;
        for (char *const *a = also; a && *a; a++) {
                struct stat st;
                if (stat(*a, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue; /* a root that is not there has nothing to protect */
                struct stat *n = realloc(w->also, (w->n_also + 1) * sizeof *n);
                if (!n)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                w->also = n;
                n[w->n_also++] = st;
        }

        if (glob_set_could_match_below(set, "")) {
                /* The root itself is the caller's choice and may be reached
                 * through a symlink; nothing inside it is followed. */
                int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        int r = negative_errno();
                        return vs_error_set(err, r, "cannot open workspace root %s: %s", root, strerror(-r));
                }
                w->state_size = glob_set_state_size(set);
                int r = ensure_slots(w, 2, err);
                if (r < 0) {
                        safe_close(fd);
                        return r;
                }
                glob_set_state_init(set, w->states);
                if (follow_links && (w->root_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
                        r = negative_errno();
                        safe_close(fd);
                        return vs_error_set(err, r, "cannot open workspace root %s: %s", root, strerror(-r));
                }
                r = walk_dir(w, fd, 0, 0, err);
                if (r < 0) {
                        mask_list_done(&w->list);
                        return r;
                }
        }

        /* A stable order keeps the generated backend invocation reproducible. */
        if (w->list.n > 1)
                qsort(w->list.items, w->list.n, sizeof *w->list.items, entry_cmp);
        *ret = w->list;
        return 0;
}

int mask_walk_max(const char *root, const VsGlobSet *set, size_t max_entries, MaskList *ret, VsError **err) {
        return walk_run(root, set, max_entries, false, NULL, ret, err);
}

int mask_walk_links(const char *root, const VsGlobSet *set, char *const *also, MaskList *ret, VsError **err) {
        return walk_run(root, set, MASK_WALK_MAX_ENTRIES, true, also, ret, err);
}

int mask_walk(const char *root, const VsGlobSet *set, MaskList *ret, VsError **err) {
        return mask_walk_max(root, set, MASK_WALK_MAX_ENTRIES, ret, err);
}

int mask_set_compile(char *const *patterns, const char *key, VsGlobSet **ret, VsError **err) {
        if (!patterns || !patterns[0]) {
                *ret = NULL;
                return 0;
        }
        return glob_set_new_named(patterns, key, ret, err);
}
