/* SPDX-License-Identifier: MIT */
#pragma once

/* Finds the existing paths under a workspace root that a mask set covers,
 * pruning directories below which nothing can match. Does not follow
 * symlinks; a matched directory is reported once and not descended. */

#include "glob.h"

struct WalkCacheUse;
struct VsGitRepos;

typedef enum MaskKind { MASK_FILE, MASK_DIR, MASK_SYMLINK, MASK_OTHER } MaskKind;

typedef struct MaskEntry {
        char *relpath; /* relative to root */
        MaskKind kind;
} MaskEntry;

typedef struct MaskList {
        MaskEntry *items;
        size_t n;
} MaskList;

/* The one place the sandbox's mask and protect patterns become a set: the
 * jail's facts, the daemon's watch, the worker's path checks and the Modal
 * manifest all compile them here, so they cannot come to read a list
 * differently. key ("mask" or "protect") names the list in errors:
 * "protect[2]: column 3: ...". An empty or NULL list gives *ret = NULL, a set
 * that matches nothing (every glob_set_* call and mask_walk accept it). On
 * success *ret is owned by the caller (glob_set_free()). */
int mask_set_compile(char *const *patterns, const char *key, VsGlobSet **ret, VsError **err);

#define MASK_WALK_MAX_ENTRIES 100000

/* Walks root (absolute; root itself may be reached through a symlink,
 * nothing below it is followed). Returns -E2BIG (with *err) past
 * MASK_WALK_MAX_ENTRIES matches. Unreadable (EACCES/EPERM) or vanished
 * entries are skipped; any other error (EMFILE, ENOMEM, EIO, a path longer
 * than PATH_MAX) fails the walk, since skipping could leave a secret
 * unmasked. A path too long, or more than MASK_WALK_MAX_ENTRIES matches,
 * fails it at its end: the walk goes on past it, and *ret holds what it
 * found beside the tree too deep, or the symlinks it found past the cap
 * (up to that many again), with -ENAMETOOLONG or -E2BIG only: a caller
 * that puts masked links aside still meets them (attack review 10). *ret
 * is owned by the caller (mask_list_done()), whatever the walk returns. */
int mask_walk(const char *root, const VsGlobSet *set, MaskList *ret, VsError **err);
void mask_list_done(MaskList *l);
/* As mask_walk, with a cap of max_entries matches instead of
 * MASK_WALK_MAX_ENTRIES. The result is sorted by relpath (strcmp); on
 * failure other than -ENAMETOOLONG and -E2BIG *ret is left untouched. */
int mask_walk_max(const char *root, const VsGlobSet *set, size_t max_entries, MaskList *ret, VsError **err);
/* As mask_walk, and a symlink to a directory below root, or below or at
 * one of also (NULL-terminated, may be NULL: the other roots the jail
 * sees), is walked too, under the link's name (not below another such
 * link): for the protect globs, which the host's tools apply to the names
 * they open. A match found through a link has a relpath that resolves
 * elsewhere; the caller protects its target. */
int mask_walk_links(const char *root, const VsGlobSet *set, char *const *also, MaskList *ret, VsError **err);
/* The masks (mask_walk) and the protect globs (mask_walk_links, with also)
 * of one root in one walk of it. With cache (the daemon's, walk-cache.h;
 * may be NULL) the cache is read and written, under a key made of root and
 * the pattern texts given (those the sets were compiled from). Either set may
 * be NULL (an empty list in return). */
int mask_walk_both(const char *root, const VsGlobSet *mask, const VsGlobSet *protect, char *const *also,
                   char *const *mask_patterns, char *const *protect_patterns, struct WalkCacheUse *cache,
                   MaskList *ret_mask, MaskList *ret_protect, VsError **err);
/* As mask_walk_both, and the same walk finds the repositories git_scan()
 * finds under root (git-scan.h; appended to *git, whose dirs and truncated
 * count on across calls as git_scan_policy()'s do): one read of each
 * directory, one cache record of it, one cache file per root. git NULL:
 * mask_walk_both. A root reached through a symlink, which git_scan()
 * refuses, gets no git lane. */
int mask_walk_all(const char *root, const VsGlobSet *mask, const VsGlobSet *protect, char *const *also,
                  char *const *mask_patterns, char *const *protect_patterns, struct WalkCacheUse *cache,
                  struct VsGitRepos *git, MaskList *ret_mask, MaskList *ret_protect, VsError **err);
/* What the host made below root after a mask_walk_all (a git_init
 * repository, placeholders; made: absolute paths, each with the missing
 * directories above it that making it may have created): each path and
 * its ancestors matched afresh, and a made directory walked whole, so the
 * lists (mask_list and protect_list, sorted, as mask_walk_all returned
 * them) are what a walk after the making would have found. A path
 * already listed is not added again. No cache, no git lane. On failure
 * the lists are freed and left empty (-ENAMETOOLONG: as mask_walk). */
int mask_walk_made(const char *root, const VsGlobSet *mask, const VsGlobSet *protect, char *const *also,
                   char *const *made, MaskList *mask_list, MaskList *protect_list, VsError **err);
