/* SPDX-License-Identifier: MIT */
#pragma once

/* The mask walk's state, shared by its two halves: the walk of a
 * directory (mask-walk.c) and what sets one up and runs it
 * (mask-walk-run.c). Not for other callers: mask-walk.h is the API. */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "git-scan.h"
#include "mask-walk.h"
#include "walk-cache.h"

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
        size_t n_over;   /* symlinks listed past max_entries (mw_walk_add) */
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
        /* The first failure the walk went on past (a path too long:
         * mw_set_path_or_skip; a lane past its cap: mw_walk_add; a
         * directory that cannot be stat'ed, opened or read, an entry that
         * cannot be stat'ed: mw_defer; out of memory alone ends it at
         * once), and its error: the walk fails with it at its end. */
        int deferred;
        VsError *deferred_err;
        char path[PATH_MAX];
} Walk;

int mw_entry_cmp(const void *a, const void *b);
/* w->path as a match of lane (not twice with w->dedupe). Past the lane's
 * cap the walk goes on and fails at its end with -E2BIG (w->deferred);
 * only symlinks are still listed, up to the cap again, so that a start the
 * cap refuses still puts them aside (the masked links found beside a flood
 * of masked files). */
int mw_walk_add(Walk *w, size_t lane, MaskKind kind, VsError **err);
MaskKind mw_kind_from_dtype(unsigned char t);
unsigned char mw_dtype_from_mode(mode_t m);
/* Errors that mean "this entry is gone or not ours to read". */
bool mw_skippable(int r);
int mw_ensure_slots(Walk *w, size_t slots, VsError **err);
unsigned char *mw_lane_state(Walk *w, size_t lane, size_t depth);
/* w->path set to w->path[0..len) "/" name: its length, or -ENAMETOOLONG with err. */
int mw_set_path(Walk *w, size_t len, const char *name, size_t nlen, VsError **err);
/* mw_set_path(), where a path too long skips that entry: the walk goes on
 * past it (w->deferred), so that what lies beside a tree too deep is still
 * found (a masked link there put aside though the start is refused:
 * attack review 10); the walk fails at its end. */
int mw_set_path_or_skip(Walk *w, size_t len, const char *name, size_t nlen);
/* Walks the directory open as dfd (taken over) at w->path[0..len), depth. */
int mw_walk_dir(Walk *w, int dfd, size_t len, size_t depth, VsError **err);
