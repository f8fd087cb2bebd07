/* SPDX-License-Identifier: MIT */
/* Setting a mask walk up and running it (mask-walk.h): the lanes, the root
 * (and whether the git lane walks it), the cache file read and written,
 * and the paths the host made after a walk (mask_walk_made). */
#include "mask-walk-private.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "path-util.h"
#include "time-util.h"

static void mw_walk_free(Walk *w) {
        if (!w)
                return;
        safe_close(w->root_fd);
        vs_error_free(w->deferred_err);
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
DEFINE_TRIVIAL_CLEANUP_FUNC(Walk *, mw_walk_free);

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
                if ((r = mw_ensure_slots(w, depth + 2, err)) < 0)
                        break;
                if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        int k = negative_errno();
                        if (!mw_skippable(k))
                                r = vs_error_set(err, k, "cannot stat %s/%s: %s", w->root, rel, strerror(-k));
                        break;
                }
                int plen = mw_set_path(w, len, name, clen, err);
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
                        bool below = glob_set_step(w->lanes[i].set, mw_lane_state(w, i, depth), name, clen, is_dir,
                                                   mw_lane_state(w, i, depth + 1), &matched);
                        if (matched)
                                r = mw_walk_add(w, i, mw_kind_from_dtype(mw_dtype_from_mode(st.st_mode)), err);
                        else if (is_dir && below)
                                into |= (unsigned char)(1u << i);
                }
                if (r < 0 || !into)
                        break;
                int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0) {
                        int k = negative_errno();
                        if (!mw_skippable(k))
                                r = vs_error_set(err, k, "cannot open directory %s/%s: %s", w->root, w->path, strerror(-k));
                        break;
                }
                w->active[depth + 1] = into;
                if (!*next) {
                        r = mw_walk_dir(w, cfd, (size_t)plen, depth + 1, err);
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
        _cleanup_(mw_walk_freep) Walk *w = NULL;

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

        int r = 0;
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
                r = mw_ensure_slots(w, 2, err);
                if (r < 0) {
                        safe_close(fd);
                        return r;
                }
                for (size_t i = 0; i < N_LANES; i++)
                        if (w->lanes[i].set)
                                glob_set_state_init(w->lanes[i].set, mw_lane_state(w, i, 0));
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
                        r = active ? mw_walk_dir(w, fd, 0, 0, err) : (safe_close(fd), 0);
                if (r < 0)
                        return r;
                if (w->deferred) {
                        /* The walk fails, with what it found past the
                         * failure in the lists (mask-walk.h). */
                        r = w->deferred;
                        if (err && !*err)
                                *err = TAKE_PTR(w->deferred_err);
                } else if (w->fresh && walk_cache_changed(w->old, w->fresh, w->n_read) &&
                           walk_cache_index(w->fresh) >= 0)
                        (void)walk_cache_save(cdir, w->fresh); /* best effort: without it the next walk reads everything */
        }

        for (size_t i = 0; i < N_LANES; i++) {
                if (!ret[i])
                        continue;
                MaskList *l = &w->lanes[i].list;
                /* A stable order keeps the generated backend invocation reproducible. */
                if (l->n > 1)
                        qsort(l->items, l->n, sizeof *l->items, mw_entry_cmp);
                *ret[i] = *l;
                *l = (MaskList){ 0 };
        }
        return r;
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
        *ret_mask = (MaskList){ 0 };
        *ret_protect = (MaskList){ 0 };
        return walk_run(root, &spec, (MaskList *[N_LANES]){ ret_mask, ret_protect }, err);
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
