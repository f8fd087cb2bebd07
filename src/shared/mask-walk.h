/* SPDX-License-Identifier: MIT */
#pragma once

/* Finds the existing paths under a workspace root that a mask set covers,
 * pruning directories below which nothing can match. Does not follow
 * symlinks; a matched directory is reported once and not descended. */

#include "glob.h"

typedef enum MaskKind { MASK_FILE, MASK_DIR, MASK_SYMLINK, MASK_OTHER } MaskKind;

typedef struct MaskEntry {
        char *relpath; /* relative to root */
        MaskKind kind;
} MaskEntry;

typedef struct MaskList {
        MaskEntry *items;
        size_t n;
} MaskList;

#define MASK_WALK_MAX_ENTRIES 100000

/* Walks root (absolute; root itself may be reached through a symlink,
 * nothing below it is followed). Returns -E2BIG (with *err) past
 * MASK_WALK_MAX_ENTRIES matches. Unreadable (EACCES/EPERM) or vanished
 * entries are skipped; any other error (EMFILE, ENOMEM, EIO, a path longer
 * than PATH_MAX) fails the walk, since skipping could leave a secret
 * unmasked. On success *ret is owned by the caller (mask_list_done()). */
int mask_walk(const char *root, const VsGlobSet *set, MaskList *ret, VsError **err);
void mask_list_done(MaskList *l);
/* As mask_walk, with a cap of max_entries matches instead of
 * MASK_WALK_MAX_ENTRIES. The result is sorted by relpath (strcmp); on
 * failure *ret is left untouched. */
int mask_walk_max(const char *root, const VsGlobSet *set, size_t max_entries, MaskList *ret, VsError **err);
