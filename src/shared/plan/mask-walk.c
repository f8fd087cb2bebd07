/* SPDX-License-Identifier: MIT */
#include "mask-walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "mask-walk-private.h"

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

void mask_list_done(MaskList *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].relpath);
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

int mw_entry_cmp(const void *a, const void *b) {
        return strcmp(((const MaskEntry *)a)->relpath, ((const MaskEntry *)b)->relpath);
}

static bool listed(const Lane *l, const char *relpath) {
        MaskEntry key = { .relpath = (char *)relpath };
        /* bsearch wants an array, even of none. */
        if (l->n_sorted && bsearch(&key, l->list.items, l->n_sorted, sizeof key, mw_entry_cmp))
                return true;
        for (size_t i = l->n_sorted; i < l->list.n; i++)
                if (streq(l->list.items[i].relpath, relpath))
                        return true;
        return false;
}

/* A failure (r, *err) in one part of the tree: the first is kept for the
 * walk's end (w->deferred), the walk goes on with the rest, and 0 comes
 * back; out of memory alone ends it at once. So what the rest holds is
 * still listed (a masked link beside an unreadable corner is still put
 * aside) and the walk fails all the same. */
static int mw_defer(Walk *w, int r, VsError **err) {
        if (r >= 0 || r == -ENOMEM)
                return r;
        if (!w->deferred) {
                w->deferred = r;
                w->deferred_err = err ? TAKE_PTR(*err) : NULL;
        } else if (err) {
                vs_error_free(*err);
                *err = NULL;
        }
        return 0;
}

int mw_walk_add(Walk *w, size_t lane, MaskKind kind, VsError **err) {
        Lane *l = &w->lanes[lane];
        if (w->dedupe && listed(l, w->path))
                return 0;
        if (l->list.n >= l->max_entries) {
                _cleanup_(vs_error_freep) VsError *e = NULL;
                if (!w->deferred)
                        (void)mw_defer(w,
                                       vs_error_set(&e, -E2BIG,
                                                    "more than %zu %s paths under %s; narrow the %s patterns or name a "
                                                    "parent directory",
                                                    l->max_entries, lane ? "protected" : "masked", w->root,
                                                    lane ? "protect" : "mask"),
                                       &e);
                if (kind != MASK_SYMLINK || l->n_over >= l->max_entries)
                        return 0;
                l->n_over++;
        }
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

MaskKind mw_kind_from_dtype(unsigned char t) {
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

unsigned char mw_dtype_from_mode(mode_t m) {
        if (S_ISREG(m))
                return DT_REG;
        if (S_ISDIR(m))
                return DT_DIR;
        if (S_ISLNK(m))
                return DT_LNK;
        return DT_FIFO; /* stands for every other kind */
}

/* Errors that mean "this entry is gone or not ours to read": skipped
 * (but a directory a glob lane looks into that cannot be read is masked
 * whole: subdir_open_failed). Anything else (EMFILE, ENOMEM, EIO...)
 * aborts the walk, because skipping it would silently leave a secret
 * unmasked. */
bool mw_skippable(int r) {
        return r == -EACCES || r == -EPERM || r == -ENOENT || r == -ENOTDIR || r == -ELOOP;
}

/* A directory below a root that a lane would look into but that cannot be
 * read (EACCES, EPERM: no read permission for the walker, while the jail
 * may still open names in it: a directory of mode 0300 is the jail's to
 * make, and to turn readable again at will): whatever it holds is unknown,
 * so it counts for each such lane as a match of its own (masked: the jail
 * sees it empty; protected: read-only). w->path names it. */
static int unreadable_dir(Walk *w, unsigned char globs, VsError **err) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < N_LANES; i++)
                if (globs & (1u << i))
                        r = mw_walk_add(w, i, MASK_DIR, err);
        return r;
}

/* A subdirectory (w->path) that could not be opened (k, the lanes that
 * look into it in into): unreadable for a glob lane, masked whole
 * (unreadable_dir); gone, swapped, unreadable, or only the git sweep's:
 * skipped; anything else aborts the walk. Its directory's record is not
 * kept either way (the caller's). */
static int subdir_open_failed(Walk *w, int k, unsigned char into, VsError **err) {
        unsigned char globs = into & GLOB_BITS;
        if ((k == -EACCES || k == -EPERM) && globs)
                return unreadable_dir(w, globs, err);
        if (mw_skippable(k) || !globs)
                return 0;
        return vs_error_set(err, k, "cannot open directory %s/%s: %s", w->root, w->path, strerror(-k));
}

int mw_ensure_slots(Walk *w, size_t slots, VsError **err) {
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

unsigned char *mw_lane_state(Walk *w, size_t lane, size_t depth) {
        return w->lanes[lane].states + depth * w->lanes[lane].state_size;
}


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
        bool below = glob_set_step(l->set, mw_lane_state(w, lane, depth), name, strlen(name), true,
                                   mw_lane_state(w, lane, depth + 1), &matched);
        if (matched) {
                /* A pattern for directories only (".vscode/"): the link
                 * names one if it leads to one; the caller protects that. */
                struct stat lst;
                return fstatat(pfd, name, &lst, 0) == 0 && S_ISDIR(lst.st_mode) ? mw_walk_add(w, lane, MASK_SYMLINK, err) : 0;
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
        int r = mw_walk_dir(w, cfd, plen, depth + 1, err);
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
                if (glob_set_step(w->lanes[i].set, mw_lane_state(w, i, depth), name, nlen, true, mw_lane_state(w, i, depth + 1),
                                  &matched) &&
                    !matched)
                        into |= (unsigned char)(1u << i);
        }
        return into;
}

int mw_set_path(Walk *w, size_t len, const char *name, size_t nlen, VsError **err) {
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

int mw_set_path_or_skip(Walk *w, size_t len, const char *name, size_t nlen) {
        _cleanup_(vs_error_freep) VsError *e = NULL;
        int plen = mw_set_path(w, len, name, nlen, w->deferred ? NULL : &e);
        if (plen == -ENAMETOOLONG)
                (void)mw_defer(w, plen, &e);
        return plen;
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
                if (mw_set_path_or_skip(w, len, m->name, strlen(m->name)) >= 0)
                        r = mw_walk_add(w, m->lane, (MaskKind)m->kind, err);
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
                int plen = mw_set_path_or_skip(w, len, name, nlen);
                if (plen < 0) {
                        clean = false;
                        continue;
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
                        clean = false;
                        if ((r = mw_defer(w, subdir_open_failed(w, negative_errno(), into, err), err)) < 0)
                                break;
                        continue;
                }
                r = mw_walk_dir(w, cfd, (size_t)plen, depth + 1, err);
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
int mw_walk_dir(Walk *w, int dfd, size_t len, size_t depth, VsError **err) {
        int r = mw_ensure_slots(w, depth + 2, err);
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
                        return mw_defer(w, vs_error_set(err, r, "cannot stat directory %s/%s: %s", w->root, w->path,
                                                        strerror(-r)), err);
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
                        if (!mw_skippable(more) && globs)
                                r = mw_defer(w, vs_error_set(err, more, "cannot read directory %s/%s: %s", w->root,
                                                             w->path, strerror(-more)), err);
                }
                if (more <= 0)
                        break;

                size_t nlen = strlen(name);
                if (!globs && git_abs_len(w, len) + 1 + nlen >= PATH_MAX) {
                        w->git->truncated = true; /* git_scan() skips it */
                        recording = false;
                        continue;
                }
                int plen = mw_set_path_or_skip(w, len, name, nlen);
                if (plen < 0) {
                        recording = false;
                        continue;
                }

                if (type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(d.fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                int k = negative_errno();
                                recording = false;
                                if (mw_skippable(k) || !globs)
                                        continue;
                                r = mw_defer(w, vs_error_set(err, k, "cannot stat %s/%s: %s", w->root, w->path,
                                                             strerror(-k)), err);
                                if (r < 0)
                                        break;
                                continue;
                        }
                        type = mw_dtype_from_mode(st.st_mode);
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
                        bool below = glob_set_step(w->lanes[i].set, mw_lane_state(w, i, depth), name, nlen, is_dir,
                                                   mw_lane_state(w, i, depth + 1), &matched);
                        if (matched) {
                                r = mw_walk_add(w, i, mw_kind_from_dtype(type), err);
                                if (r >= 0 && recording)
                                        r = walk_cache_dir_add_match(&rec, (unsigned)i, mw_kind_from_dtype(type), name);
                        } else if (type == DT_LNK && w->lanes[i].follow_links && !w->following)
                                links |= (unsigned char)(1u << i);
                        else if (type == DT_LNK && !w->lanes[i].follow_links && glob_set_link_matters(w->lanes[i].set, w->path)) {
                                /* A link whose name, as a directory, masks
                                 * what lands below it (`.ssh -> keys`): its
                                 * target is masked whole (jail-facts.c). */
                                r = mw_walk_add(w, i, MASK_SYMLINK, err);
                                if (r >= 0 && recording)
                                        r = walk_cache_dir_add_match(&rec, (unsigned)i, MASK_SYMLINK, name);
                        } else if (is_dir && below)
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
                        recording = false;
                        if ((r = mw_defer(w, subdir_open_failed(w, negative_errno(), into, err), err)) < 0)
                                break;
                        continue;
                }
                if (recording && walk_cache_dir_add_sub(&rec, name) < 0) {
                        safe_close(cfd);
                        r = vs_error_set(err, -ENOMEM, "out of memory");
                        break;
                }
                w->active[depth + 1] = into;
                r = mw_walk_dir(w, cfd, (size_t)plen, depth + 1, err);
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

int mask_set_compile(char *const *patterns, const char *key, VsGlobSet **ret, VsError **err) {
        if (!patterns || !patterns[0]) {
                *ret = NULL;
                return 0;
        }
        return glob_set_new_named(patterns, key, ret, err);
}
