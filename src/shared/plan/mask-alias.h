/* SPDX-License-Identifier: MIT */
#pragma once

/* Other names of masked files. A regular file with more than one link has
 * the same content under every name: a hard link the jail made while a
 * masked file was briefly visible (the re-mask window), or one the host
 * made, would keep the secret readable under a name no pattern matches.
 * The jail plan masks each such name too. Pure enough for the walk: no
 * symlink is followed, each directory is opened relative to its parent. */

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "mask-walk.h"

typedef struct MaskInode {
        dev_t dev;
        ino_t ino;
} MaskInode;

typedef struct MaskInodes {
        MaskInode *items;
        size_t n;
} MaskInodes;

/* Adds path's inode when it is a regular file with more than one link
 * (one with a single link has no other name). */
int mask_inodes_add_if_linked(MaskInodes *set, const char *path);
void mask_inodes_done(MaskInodes *set);

/* The same for every regular file below the directory path (a masked
 * directory: its files' other names must not show them either). */
/* links (may be NULL): every symlink below path, relative to it (a masked
 * directory's links: what the host writes through them lands at their
 * targets, jail-facts.c). */
int mask_inodes_add_tree(MaskInodes *set, const char *path, MaskList *links, VsError **err);

/* Appends to *ret (relative to root, kind MASK_FILE) every regular file
 * below root whose inode is in set, once. Walks the whole tree (a link can
 * be anywhere), matching getdents' inode number first so only candidates
 * are stat'ed. */
int mask_alias_walk(const char *root, const MaskInodes *set, MaskList *ret, VsError **err);
