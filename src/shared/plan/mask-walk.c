/* SPDX-License-Identifier: MIT */
#include "mask-walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "chase.h"
#include "git-scan.h"
#include "path-util.h"
#include "time-util.h"
#include "walk-cache.h"

/* The walk holds one directory descriptor per level and opens each child
 * relative to its parent with O_NOFOLLOW, so a directory swapped for a
 * symlink while we walk is never followed out of the workspace. One path
 * buffer is reused for the whole walk, each entry is matched with one step
 * from its directory's state, and only matches allocate.
 *
 * One walk serves up to two pattern sets (lanes): the masks and the
 * protect globs, so a start reads the tree once. A lane that cannot match
 * below a directory leaves it; the walk goes in while any lane may match
 * there. With a cache (walk-cache.h) a directory whose device, inode,
 * mtime and ctime are those recorded is not read again: its recorded
 * matches and subdirectories stand for its entries.
 *
 * A writable root's walk has a third lane, the git scan (git-scan.h): it
 * goes into every directory, as git_scan() does, within the same bounds
 * (GIT_SCAN_MAX_DIRS, GIT_SCAN_MAX_DEPTH, PATH_MAX for the absolute path),
 * never through a symlink, and runs git_scan_look() where a ".git" or a
 * "HEAD" is among the entries. Its bounds cut the lane only: the masks
 * still go on below. Only git's bounds and errors are git's: where a mask
 * or protect lane reads a directory, an error there fails the walk as it
 * always did. A record keeps those two names (lane 2), so a cached
 * directory that has one is looked at afresh, and one without either
 * cannot hold a repository. */

#define N_LANES 2
#define GIT_LANE WALK_CACHE_LANE_GIT
#define GIT_BIT (1u << GIT_LANE)
#define GLOB_BITS ((1u << N_LANES) - 1)

typedef struct Lane {
        const VsGlobSet *set;
        size_t max_entries;
        bool follow_links; /* mask_walk_links(): descend a symlinked directory below a root, once */
        MaskList list;
        size_t cap;
        size_t n_sorted; /* mask_walk_made(): list[0..n_sorted) is the sorted list given, not added twice */
        /* Match states, one slot per depth (see glob_set_step). */
        unsigned char *states;
        size_t state_size;
} Lane;

typedef struct Walk {
        Lane lanes[N_LANES];
        const char *root;
        int root_fd;       /* a following lane: the root, for the targets' check */
        struct stat *also; /* the other roots a link may lead into (or onto) */
        size_t n_also;
        bool following;    /* inside a followed link now: no further link is followed */
        unsigned char *active; /* per depth: a bit per lane still matching there */
        size_t state_slots;
        WalkCache *old, *fresh; /* the cache read, the one written (NULL: none) */
        WalkCache caches[2];    /* what they point to */
        WalkCacheUse *use;      /* the counters, with a cache */
        size_t n_read;          /* directories this walk read */
        int64_t start_s;        /* the wall clock when it began (walk_cache_racy) */
        VsGitRepos *git;        /* the git lane's repositories (NULL: no git lane) */
        size_t git_root_len;    /* root without trailing slashes, as git_scan() names it */
        bool dedupe;            /* mask_walk_made(): a match already listed is not added again */
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

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const MaskEntry *)a)->relpath, ((const MaskEntry *)b)->relpath);
}

static bool listed(const Lane *l, const char *relpath) {
        MaskEntry key = { .relpath = (char *)relpath };
        if (bsearch(&key, l->list.items, l->n_sorted, sizeof key, entry_cmp))
                return true;
        for (size_t i = l->n_sorted; i < l->list.n; i++)
                if (streq(l->list.items[i].relpath, relpath))
                        return true;
        return false;
}

static int walk_add(Walk *w, size_t lane, MaskKind kind, VsError **err) {
        Lane *l = &w->lanes[lane];
        if (w->dedupe && listed(l, w->path))
                return 0;
        if (l->list.n >= l->max_entries)
                return vs_error_set(err, -E2BIG,
                                    "more than %zu masked paths under %s; narrow the mask patterns or mask a parent directory",
                                    l->max_entries, w->root);
        if (l->list.n == l->cap) {
                size_t ncap = l->cap ? l->cap * 2 : 16;
                MaskEntry *items = realloc(l->list.items, ncap * sizeof *items);
                if (!items)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                l->list.items = items;
                l->cap = ncap;
        }
        char *copy = strdup(w->path);
        if (!copy)
                return vs_error_set(err, -ENOMEM, "out of memory");
        l->list.items[l->list.n++] = (MaskEntry){ .relpath = copy, .kind = kind };
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
        for (size_t i = 0; i < N_LANES; i++) {
                if (!w->lanes[i].set)
                        continue;
                unsigned char *p = realloc(w->lanes[i].states, n * w->lanes[i].state_size);
                if (!p)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                w->lanes[i].states = p;
        }
        unsigned char *a = realloc(w->active, n);
        if (!a)
                return vs_error_set(err, -ENOMEM, "out of memory");
        w->active = a;
        w->state_slots = n;
        return 0;
}

static unsigned char *lane_state(Walk *w, size_t lane, size_t depth) {
        return w->lanes[lane].states + depth * w->lanes[lane].state_size;
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
static int walk_link(Walk *w, size_t lane, int pfd, const char *name, size_t plen, size_t depth, VsError **err) {
        const Lane *l = &w->lanes[lane];
        bool matched;
        bool below = glob_set_step(l->set, lane_state(w, lane, depth), name, strlen(name), true,
                                   lane_state(w, lane, depth + 1), &matched);
        if (matched) {
                /* A pattern for directories only (".vscode/"): the link
                 * names one if it leads to one; the caller protects that. */
                struct stat lst;
                return fstatat(pfd, name, &lst, 0) == 0 && S_ISDIR(lst.st_mode) ? walk_add(w, lane, MASK_SYMLINK, err) : 0;
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
        w->active[depth + 1] = (unsigned char)(1u << lane);
        int r = walk_dir(w, cfd, plen, depth + 1, err);
        w->following = false;
        return r;
}

/* The lanes that go into the directory name (below dir at depth), their
 * states stepped into depth + 1. */
static unsigned char step_into(Walk *w, size_t depth, const char *name, size_t nlen) {
        unsigned char into = 0;
        for (size_t i = 0; i < N_LANES; i++) {
                if (!(w->active[depth] & (1u << i)))
                        continue;
                bool matched;
                if (glob_set_step(w->lanes[i].set, lane_state(w, i, depth), name, nlen, true, lane_state(w, i, depth + 1),
                                  &matched) &&
                    !matched)
                        into |= (unsigned char)(1u << i);
        }
        return into;
}

static int set_path(Walk *w, size_t len, const char *name, size_t nlen, VsError **err) {
        size_t plen = len + (len > 0) + nlen;
        if (plen >= sizeof w->path) {
                w->path[len] = '\0';
                return vs_error_set(err, -ENAMETOOLONG,
                                    "path too long under %s/%s; masks cannot be checked there, shorten the tree", w->root,
                                    w->path);
        }
        if (len > 0)
                w->path[len] = '/';
        memcpy(w->path + len + (len > 0), name, nlen + 1);
        return (int)plen;
}

static int record_keep(Walk *w, WalkCacheDir *old) {
        WalkCacheDir d;
        walk_cache_take(old, &d);
        int r = walk_cache_add(w->fresh, &d);
        walk_cache_dir_done(&d);
        return r;
}

/* The length of the absolute path of w->path[0..len) as git_scan() spells
 * it (root, then "/" and the relative path). */
static size_t git_abs_len(const Walk *w, size_t len) {
        return w->git_root_len + (len > 0 ? 1 + len : 0);
}

/* git_scan_look() on the directory dfd, w->path[0..len). */
static int git_look(Walk *w, int dfd, size_t len, VsError **err) {
        char abs[PATH_MAX];
        size_t n = git_abs_len(w, len);
        if (n >= sizeof abs) {
                w->git->truncated = true;
                return 0;
        }
        memcpy(abs, w->root, w->git_root_len);
        if (len > 0) {
                abs[w->git_root_len] = '/';
                memcpy(abs + w->git_root_len + 1, w->path, len);
        }
        abs[n] = '\0';
        return git_scan_look(dfd, abs, w->git) < 0 ? vs_error_set(err, -ENOMEM, "out of memory") : 0;
}

/* Whether the git lane goes into the subdirectory name of w->path[0..len)
 * (noted as cut otherwise: git_scan() skips a path too long). */
static bool git_into(Walk *w, size_t depth, size_t len, size_t nlen) {
        if (!(w->active[depth] & GIT_BIT))
                return false;
        if (git_abs_len(w, len) + 1 + nlen >= PATH_MAX) {
                w->git->truncated = true;
                return false;
        }
        return true;
}

static bool has_git_name(const WalkCacheDir *rec) {
        for (size_t i = 0; i < rec->n_match; i++)
                if (rec->matches[i].lane == GIT_LANE)
                        return true;
        return false;
}

static int replay_matches(Walk *w, const WalkCacheDir *rec, size_t len, VsError **err) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < rec->n_match; i++) {
                const WalkCacheMatch *m = &rec->matches[i];
                if (m->lane >= N_LANES || !w->lanes[m->lane].set)
                        continue; /* the git names: git_look() */
                if ((r = set_path(w, len, m->name, strlen(m->name), err)) >= 0)
                        r = walk_add(w, m->lane, (MaskKind)m->kind, err);
        }
        w->path[len] = '\0';
        return r;
}

/* The directory open as dfd, unchanged since rec was taken: its matches
 * from rec, its subdirectories each checked against their own record
 * (a leaf's with one fstatat, without opening it). */
static int walk_cached(Walk *w, int dfd, WalkCacheDir *rec, size_t len, size_t depth, VsError **err) {
        atomic_fetch_add_explicit(&w->use->n_reused, 1, memory_order_relaxed);
        int r = replay_matches(w, rec, len, err);
        if (r >= 0 && (w->active[depth] & GIT_BIT) && has_git_name(rec))
                r = git_look(w, dfd, len, err);
        bool clean = true;
        for (size_t i = 0; r >= 0 && i < rec->n_sub; i++) {
                const char *name = rec->subdirs[i];
                size_t nlen = strlen(name);
                unsigned char into = 0;
                if (!(w->active[depth] & GLOB_BITS) && !git_into(w, depth, len, nlen)) {
                        clean = false; /* only the git lane here, and the path too long for it */
                        continue;
                }
                int plen = set_path(w, len, name, nlen, err);
                if (plen < 0) {
                        r = plen;
                        break;
                }
                into = step_into(w, depth, name, nlen);
                if (git_into(w, depth, len, nlen))
                        into |= GIT_BIT;
                else if (w->active[depth] & GIT_BIT)
                        clean = false;
                if (!into)
                        continue;
                w->active[depth + 1] = into;
                WalkCacheDir *sub = walk_cache_find(w->old, w->path);
                struct stat st;
                bool git = into & GIT_BIT;
                if (sub && sub->n_sub == 0 && (!git || (!has_git_name(sub) && w->git->dirs + 1 < GIT_SCAN_MAX_DIRS &&
                                                        depth + 1 < GIT_SCAN_MAX_DEPTH)) &&
                    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && walk_cache_dir_matches(sub, &st)) {
                        atomic_fetch_add_explicit(&w->use->n_reused, 1, memory_order_relaxed);
                        if (git)
                                w->git->dirs++;
                        if ((r = replay_matches(w, sub, (size_t)plen, err)) >= 0)
                                r = record_keep(w, sub);
                        continue;
                }
                int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0) {
                        int k = negative_errno();
                        if (skippable(k) || !(into & GLOB_BITS)) {
                                clean = false;
                                continue;
                        }
                        r = vs_error_set(err, k, "cannot open directory %s/%s: %s", w->root, w->path, strerror(-k));
                        break;
                }
                r = walk_dir(w, cfd, (size_t)plen, depth + 1, err);
        }
        w->path[len] = '\0';
        if (r >= 0 && clean)
                r = record_keep(w, rec);
        return r;
}

/* The git lane's bounds at the directory dfd, as git_scan()'s: counted,
 * and past a bound looked at but not gone into (*ret_cut). */
static int git_enter(Walk *w, int dfd, size_t len, size_t depth, bool *ret_cut, VsError **err) {
        *ret_cut = false;
        if (!(w->active[depth] & GIT_BIT))
                return 0;
        if (++w->git->dirs < GIT_SCAN_MAX_DIRS && depth < GIT_SCAN_MAX_DEPTH)
                return 0;
        w->git->truncated = true;
        w->active[depth] &= (unsigned char)~GIT_BIT;
        *ret_cut = true;
        return git_look(w, dfd, len, err);
}

/* Walks the directory open as dfd (taken over) whose relative path is
 * w->path[0..len) and whose match states are slot depth of the lanes
 * active[depth] names. */
static int walk_dir(Walk *w, int dfd, size_t len, size_t depth, VsError **err) {
        int r = ensure_slots(w, depth + 2, err);
        if (r < 0) {
                safe_close(dfd);
                return r;
        }
        bool git_here = w->active[depth] & GIT_BIT;
        /* The record this read makes, if the directory is read whole. A
         * directory the git lane should have reached but did not (cut at a
         * bound above) is neither recorded nor taken from a record: its
         * record would lack what that lane finds. */
        WalkCacheDir rec = { 0 };
        bool recording = w->fresh && !w->following && (!w->git || git_here);
        if (recording) {
                struct stat st;
                if (fstat(dfd, &st) < 0) {
                        r = negative_errno();
                        safe_close(dfd);
                        return vs_error_set(err, r, "cannot stat directory %s/%s: %s", w->root, w->path, strerror(-r));
                }
                WalkCacheDir *old = walk_cache_find(w->old, w->path);
                if (old && walk_cache_dir_matches(old, &st) &&
                    (!git_here || (w->git->dirs + 1 < GIT_SCAN_MAX_DIRS && depth < GIT_SCAN_MAX_DEPTH))) {
                        if (git_here)
                                w->git->dirs++;
                        r = walk_cached(w, dfd, old, len, depth, err);
                        safe_close(dfd);
                        return r;
                }
                recording = !walk_cache_racy(&st, w->start_s);
                rec = (WalkCacheDir){ .rel = strdup(w->path), .dev = st.st_dev, .ino = st.st_ino,
                                      .mtime_sec = st.st_mtim.tv_sec, .mtime_nsec = (uint32_t)st.st_mtim.tv_nsec,
                                      .ctime_sec = st.st_ctim.tv_sec, .ctime_nsec = (uint32_t)st.st_ctim.tv_nsec };
                if (!rec.rel) {
                        safe_close(dfd);
                        return vs_error_set(err, -ENOMEM, "out of memory");
                }
        }
        bool cut;
        if ((r = git_enter(w, dfd, len, depth, &cut, err)) < 0 || (cut && !(w->active[depth] & GLOB_BITS))) {
                safe_close(dfd);
                walk_cache_dir_done(&rec);
                return r;
        }
        if (cut)
                recording = false;
        /* Where only the git lane reads, git's rule: an error skips. */
        bool globs = w->active[depth] & GLOB_BITS, looked = false;
        if (w->fresh) {
                atomic_fetch_add_explicit(&w->use->n_read, 1, memory_order_relaxed);
                w->n_read++;
        }
        WalkDirReader d;
        if ((r = walk_dir_reader_open(&d, dfd)) < 0) {
                safe_close(dfd);
                walk_cache_dir_done(&rec);
                return vs_error_set(err, r, "out of memory");
        }

        for (;;) {
                const char *name;
                unsigned char type;
                int more = walk_dir_reader_next(&d, &name, &type);
                if (more < 0) {
                        recording = false;
                        if (!skippable(more) && globs)
                                r = vs_error_set(err, more, "cannot read directory %s/%s: %s", w->root, w->path,
                                                 strerror(-more));
                }
                if (more <= 0)
                        break;

                size_t nlen = strlen(name);
                if (!globs && git_abs_len(w, len) + 1 + nlen >= PATH_MAX) {
                        w->git->truncated = true; /* git_scan() skips it */
                        recording = false;
                        continue;
                }
                int plen = set_path(w, len, name, nlen, err);
                if (plen < 0) {
                        r = plen;
                        break;
                }

                if (type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(d.fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                int k = negative_errno();
                                recording = false;
                                if (skippable(k) || !globs)
                                        continue;
                                r = vs_error_set(err, k, "cannot stat %s/%s: %s", w->root, w->path,
                                                 strerror(-k));
                                break;
                        }
                        type = dtype_from_mode(st.st_mode);
                }
                bool is_dir = type == DT_DIR;

                /* A name git's discovery reads in this directory: looked
                 * at once, and kept in the record. */
                if ((w->active[depth] & GIT_BIT) && (streq(name, ".git") || streq(name, "HEAD"))) {
                        if (!looked)
                                r = git_look(w, d.fd, len, err);
                        looked = true;
                        if (r >= 0 && recording)
                                r = walk_cache_dir_add_match(&rec, GIT_LANE, 0, name) < 0
                                            ? vs_error_set(err, -ENOMEM, "out of memory")
                                            : 0;
                        if (r < 0)
                                break;
                }

                /* No ancestor of this entry matched in a lane still active
                 * (a lane leaves a matched directory), so only the entry
                 * itself is in question. */
                unsigned char into = 0, links = 0;
                for (size_t i = 0; r >= 0 && i < N_LANES; i++) {
                        if (!(w->active[depth] & (1u << i)))
                                continue;
                        bool matched;
                        bool below = glob_set_step(w->lanes[i].set, lane_state(w, i, depth), name, nlen, is_dir,
                                                   lane_state(w, i, depth + 1), &matched);
                        if (matched) {
                                r = walk_add(w, i, kind_from_dtype(type), err);
                                if (r >= 0 && recording)
                                        r = walk_cache_dir_add_match(&rec, (unsigned)i, kind_from_dtype(type), name);
                        } else if (type == DT_LNK && w->lanes[i].follow_links && !w->following)
                                links |= (unsigned char)(1u << i);
                        else if (is_dir && below)
                                into |= (unsigned char)(1u << i);
                }
                if (r < 0)
                        break;
                if (is_dir && git_into(w, depth, len, nlen))
                        into |= GIT_BIT;
                else if (is_dir && (w->active[depth] & GIT_BIT))
                        recording = false; /* the path too long for git: cut, read again next time */
                /* What a link leads to can change with no change here. */
                if (links)
                        recording = false;
                for (size_t i = 0; r >= 0 && i < N_LANES; i++)
                        if (links & (1u << i))
                                r = walk_link(w, i, d.fd, name, (size_t)plen, depth, err);
                if (r < 0)
                        break;
                if (!into)
                        continue;

                int cfd = openat(d.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0) {
                        int k = negative_errno();
                        if (skippable(k) || !(into & GLOB_BITS)) {
                                recording = false;
                                continue; /* unreadable, vanished or swapped for a non-directory */
                        }
                        r = vs_error_set(err, k, "cannot open directory %s/%s: %s", w->root, w->path,
                                         strerror(-k));
                        break;
                }
                if (recording && walk_cache_dir_add_sub(&rec, name) < 0) {
                        safe_close(cfd);
                        r = vs_error_set(err, -ENOMEM, "out of memory");
                        break;
                }
                w->active[depth + 1] = into;
                r = walk_dir(w, cfd, (size_t)plen, depth + 1, err);
                if (r < 0)
                        break;
        }
        w->path[len] = '\0';
        walk_dir_reader_close(&d);
        if (r >= 0 && recording && walk_cache_add(w->fresh, &rec) < 0)
                r = vs_error_set(err, -ENOMEM, "out of memory");
        walk_cache_dir_done(&rec);
        return r;
}

static void walk_free(Walk *w) {
        if (!w)
                return;
        safe_close(w->root_fd);
        free(w->also);
        for (size_t i = 0; i < N_LANES; i++) {
                free(w->lanes[i].states);
                mask_list_done(&w->lanes[i].list);
        }
        free(w->active);
        walk_cache_done(&w->caches[0]);
        walk_cache_done(&w->caches[1]);
        free(w);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Walk *, walk_free);

typedef struct WalkSpec {
        const VsGlobSet *sets[N_LANES];
        size_t max_entries[N_LANES];
        bool follow_links[N_LANES];
        char *const *also;
        char *const *const *key_lists;
        size_t n_key_lists;
        WalkCacheUse *cache; /* NULL: none */
        VsGitRepos *git;     /* the git lane's repositories (NULL: no git lane) */
        char *const *made;   /* mask_walk_made(): only these paths (and the lists given are added to) */
} WalkSpec;

/* mask_walk_made(): rel (below the root open as rootfd), made by the host
 * after the walk, matched afresh component by component from the root, as
 * the walk would have come down to it (an ancestor already listed is not
 * listed twice; a lane stops where it matched); a directory some lane
 * goes into is walked whole. A component not there, or no directory, ends
 * it. */
static int walk_made(Walk *w, int rootfd, const char *rel, unsigned char active, VsError **err) {
        int dfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3), r = 0;
        if (dfd < 0) {
                r = negative_errno();
                return vs_error_set(err, r, "cannot open workspace root %s: %s", w->root, strerror(-r));
        }
        size_t len = 0, depth = 0;
        w->active[0] = active;
        for (const char *c = rel; r >= 0 && *c;) {
                size_t clen = strcspn(c, "/");
                const char *next = c[clen] ? c + clen + 1 : c + clen;
                char name[NAME_MAX + 1];
                if (clen == 0 || clen > NAME_MAX || (c[0] == '.' && (clen == 1 || (clen == 2 && c[1] == '.'))))
                        break;
                memcpy(name, c, clen);
                name[clen] = '\0';
                struct stat st;
                if ((r = ensure_slots(w, depth + 2, err)) < 0)
                        break;
                if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        int k = negative_errno();
                        if (!skippable(k))
                                r = vs_error_set(err, k, "cannot stat %s/%s: %s", w->root, rel, strerror(-k));
                        break;
                }
                int plen = set_path(w, len, name, clen, err);
                if (plen < 0) {
                        r = plen;
                        break;
                }
                bool is_dir = S_ISDIR(st.st_mode);
                unsigned char into = 0;
                for (size_t i = 0; r >= 0 && i < N_LANES; i++) {
                        if (!(w->active[depth] & (1u << i)))
                                continue;
                        bool matched;
                        bool below = glob_set_step(w->lanes[i].set, lane_state(w, i, depth), name, clen, is_dir,
                                                   lane_state(w, i, depth + 1), &matched);
                        if (matched)
                                r = walk_add(w, i, kind_from_dtype(dtype_from_mode(st.st_mode)), err);
                        else if (is_dir && below)
                                into |= (unsigned char)(1u << i);
                }
                if (r < 0 || !into)
                        break;
                int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0) {
                        int k = negative_errno();
                        if (!skippable(k))
                                r = vs_error_set(err, k, "cannot open directory %s/%s: %s", w->root, w->path, strerror(-k));
                        break;
                }
                w->active[depth + 1] = into;
                if (!*next) {
                        r = walk_dir(w, cfd, (size_t)plen, depth + 1, err);
                        break;
                }
                safe_close(dfd);
                dfd = cfd;
                len = (size_t)plen;
                depth++;
                c = next;
        }
        safe_close(dfd);
        w->path[0] = '\0';
        return r;
}

/* The root open for the walk: with the git lane, reached as git_scan()
 * reaches it (no symlink on the way: chase_open_dir); a root it cannot
 * reach so (missing, or through a symlink) has no git lane, as
 * git_scan_policy() skipped it. *ret_git: the lane is on. */
static int open_root(const char *root, bool want_git, bool *ret_git, VsError **err) {
        *ret_git = false;
        if (want_git) {
                int cfd = chase_open_dir(root), fd = -EBADF;
                if (cfd >= 0) {
                        fd = openat(cfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (fd < 0)
                                fd = negative_errno();
                        safe_close(cfd);
                } else
                        fd = cfd;
                if (fd >= 0) {
                        *ret_git = true;
                        return fd;
                }
                if (fd != -ENOENT && fd != -ENOTDIR && fd != -ELOOP)
                        return vs_error_set(err, fd, "cannot list the repositories under %s: %s", root, strerror(-fd));
        }
        /* The root itself is the caller's choice and may be reached
         * through a symlink; nothing inside it is followed. */
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                int r = negative_errno();
                return vs_error_set(err, r, "cannot open workspace root %s: %s", root, strerror(-r));
        }
        return fd;
}

static int walk_run(const char *root, const WalkSpec *spec, MaskList *ret[N_LANES], VsError **err) {
        _cleanup_(walk_freep) Walk *w = NULL;

        if (!root || root[0] != '/')
                return vs_error_set(err, -EINVAL, "mask walk root must be an absolute path");

        w = calloc(1, sizeof *w);
        if (!w)
                return vs_error_set(err, -ENOMEM, "out of memory");
        w->root = root;
        w->root_fd = -EBADF;
        unsigned char active = 0;
        bool follow = false;
        for (size_t i = 0; i < N_LANES; i++) {
                if (!spec->sets[i] || !glob_set_could_match_below(spec->sets[i], ""))
                        continue;
                w->lanes[i] = (Lane){ .set = spec->sets[i], .max_entries = spec->max_entries[i],
                                      .follow_links = spec->follow_links[i],
                                      .state_size = glob_set_state_size(spec->sets[i]) };
                active |= (unsigned char)(1u << i);
                follow |= spec->follow_links[i];
        }
        /* mask_walk_made(): the lists given are added to, a path in them not twice. */
        for (size_t i = 0; spec->made && i < N_LANES; i++) {
                if (!ret[i])
                        continue;
                w->lanes[i].list = *ret[i];
                w->lanes[i].cap = w->lanes[i].n_sorted = ret[i]->n;
                *ret[i] = (MaskList){ 0 };
                w->dedupe = true;
        }
        for (char *const *a = spec->also; follow && a && *a; a++) {
                struct stat st;
                if (stat(*a, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue; /* a root that is not there has nothing to protect */
                struct stat *n = realloc(w->also, (w->n_also + 1) * sizeof *n);
                if (!n)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                w->also = n;
                n[w->n_also++] = st;
        }

        if (active || (spec->git && !spec->made)) {
                bool git;
                int fd = open_root(root, spec->git && !spec->made, &git, err);
                if (fd < 0)
                        return fd;
                if (git) {
                        active |= GIT_BIT;
                        w->git = spec->git;
                        w->git_root_len = strlen(root);
                        while (w->git_root_len > 1 && root[w->git_root_len - 1] == '/')
                                w->git_root_len--;
                }
                int r = ensure_slots(w, 2, err);
                if (r < 0) {
                        safe_close(fd);
                        return r;
                }
                for (size_t i = 0; i < N_LANES; i++)
                        if (w->lanes[i].set)
                                glob_set_state_init(w->lanes[i].set, lane_state(w, i, 0));
                w->active[0] = active;
                if (follow && (w->root_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
                        r = negative_errno();
                        safe_close(fd);
                        return vs_error_set(err, r, "cannot open workspace root %s: %s", root, strerror(-r));
                }
                const char *cdir = spec->cache && spec->key_lists && !spec->made ? spec->cache->dir : NULL;
                if (cdir && active) {
                        /* The git lane's walk is another walk: its own key. */
                        char *const git_tag[] = { (char *)"git-scan", NULL };
                        char *const *lists[8];
                        size_t n = 0;
                        for (; n < spec->n_key_lists && n < ELEMENTSOF(lists) - 1; n++)
                                lists[n] = spec->key_lists[n];
                        if (git)
                                lists[n++] = git_tag;
                        uint8_t key[WALK_CACHE_KEY_LEN];
                        walk_cache_key(root, lists, n, key);
                        memcpy(w->caches[1].key, key, sizeof key);
                        if ((r = walk_cache_load(cdir, key, &w->caches[0])) < 0) {
                                safe_close(fd);
                                return vs_error_set(err, r, "out of memory");
                        }
                        w->use = spec->cache;
                        w->start_s = now_wall().tv_sec;
                        w->old = &w->caches[0];
                        w->fresh = &w->caches[1];
                }
                if (spec->made) {
                        for (char *const *m = spec->made; r >= 0 && active && *m; m++) {
                                const char *rel = path_startswith(*m, root);
                                if (rel && *rel)
                                        r = walk_made(w, fd, rel, active, err);
                        }
                        safe_close(fd);
                } else
                        r = active ? walk_dir(w, fd, 0, 0, err) : (safe_close(fd), 0);
                if (r < 0)
                        return r;
                /* Best effort: without it the next walk reads everything. */
                if (w->fresh && walk_cache_changed(w->old, w->fresh, w->n_read) &&
                    walk_cache_index(w->fresh) >= 0)
                        (void)walk_cache_save(cdir, w->fresh);
        }

        for (size_t i = 0; i < N_LANES; i++) {
                if (!ret[i])
                        continue;
                MaskList *l = &w->lanes[i].list;
                /* A stable order keeps the generated backend invocation reproducible. */
                if (l->n > 1)
                        qsort(l->items, l->n, sizeof *l->items, entry_cmp);
                *ret[i] = *l;
                *l = (MaskList){ 0 };
        }
        return 0;
}

int mask_walk_max(const char *root, const VsGlobSet *set, size_t max_entries, MaskList *ret, VsError **err) {
        WalkSpec spec = { .sets = { set }, .max_entries = { max_entries } };
        return walk_run(root, &spec, (MaskList *[N_LANES]){ ret, NULL }, err);
}

int mask_walk_links(const char *root, const VsGlobSet *set, char *const *also, MaskList *ret, VsError **err) {
        WalkSpec spec = { .sets = { NULL, set }, .max_entries = { 0, MASK_WALK_MAX_ENTRIES },
                          .follow_links = { false, true }, .also = also };
        return walk_run(root, &spec, (MaskList *[N_LANES]){ NULL, ret }, err);
}

int mask_walk(const char *root, const VsGlobSet *set, MaskList *ret, VsError **err) {
        return mask_walk_max(root, set, MASK_WALK_MAX_ENTRIES, ret, err);
}

int mask_walk_all(const char *root, const VsGlobSet *mask, const VsGlobSet *protect, char *const *also,
                  char *const *mask_patterns, char *const *protect_patterns, WalkCacheUse *cache, VsGitRepos *git,
                  MaskList *ret_mask, MaskList *ret_protect, VsError **err) {
        char *const *keys[3] = { mask_patterns, protect_patterns, also };
        WalkSpec spec = { .sets = { mask, protect }, .max_entries = { MASK_WALK_MAX_ENTRIES, MASK_WALK_MAX_ENTRIES },
                          .follow_links = { false, true }, .also = also, .key_lists = keys, .n_key_lists = 3,
                          .cache = cache, .git = git };
        MaskList m = { 0 }, p = { 0 };
        int r = walk_run(root, &spec, (MaskList *[N_LANES]){ &m, &p }, err);
        if (r < 0)
                return r;
        *ret_mask = m;
        *ret_protect = p;
        return 0;
}

int mask_walk_both(const char *root, const VsGlobSet *mask, const VsGlobSet *protect, char *const *also,
                   char *const *mask_patterns, char *const *protect_patterns, WalkCacheUse *cache,
                   MaskList *ret_mask, MaskList *ret_protect, VsError **err) {
        return mask_walk_all(root, mask, protect, also, mask_patterns, protect_patterns, cache, NULL, ret_mask,
                             ret_protect, err);
}

int mask_walk_made(const char *root, const VsGlobSet *mask, const VsGlobSet *protect, char *const *also,
                   char *const *made, MaskList *mask_list, MaskList *protect_list, VsError **err) {
        WalkSpec spec = { .sets = { mask, protect }, .max_entries = { MASK_WALK_MAX_ENTRIES, MASK_WALK_MAX_ENTRIES },
                          .follow_links = { false, true }, .also = also, .made = made };
        return walk_run(root, &spec, (MaskList *[N_LANES]){ mask_list, protect_list }, err);
}

int mask_set_compile(char *const *patterns, const char *key, VsGlobSet **ret, VsError **err) {
        if (!patterns || !patterns[0]) {
                *ret = NULL;
                return 0;
        }
        return glob_set_new_named(patterns, key, ret, err);
}
