/* SPDX-License-Identifier: MIT */
#pragma once

/* A checkpoint's manifest: what each path a call changed was BEFORE the
 * call (its pre-image), so restoring a checkpoint puts every listed path
 * back as it was when the checkpoint began. Pure: no OS calls, so it is
 * unit-tested and fuzzed alone (tests/fuzz/fuzz-undo-manifest.c).
 *
 * The file is text, one record a line, fields split by one space:
 *
 *   vsundo 1
 *   seq N                      the checkpoint's number (1, 2, ...)
 *   time US                    when it was taken (microseconds since the epoch)
 *   label TEXT                 the call or turn it stands for
 *   e TYPE MODE SIZE HASH PATH TARGET     one per path, PATH strictly ascending
 *   end SHA256                 of every byte before this line
 *
 * TYPE is one letter (UndoType); MODE octal permission bits; HASH the
 * blob's SHA-256 or "-"; TARGET a symlink's text or "-". Text fields are
 * escaped: a byte outside 0x21..0x7e, and '%', as %XX; "-" alone stands for
 * an empty field (a name that is "-" is written %2D). A file without its
 * last line, or with any field out of place, is refused whole (-EBADMSG):
 * a torn or damaged manifest never restores half a checkpoint. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

typedef enum UndoType {
        UNDO_ABSENT = 'a',  /* nothing at the path: a restore removes what is there */
        UNDO_FILE = 'f',    /* a regular file: mode, size, the blob's hash */
        UNDO_DIR = 'd',     /* a directory: mode (its entries are entries of their own) */
        UNDO_SYMLINK = 'l', /* a symlink: its text, restored as text, never followed */
        UNDO_MASKED = 'm',  /* a masked file: its content never enters the store */
        UNDO_TOO_BIG = 'b', /* a file over the store's cap: mode and size only */
        UNDO_OTHER = 'o',   /* a FIFO, socket or device node: not restored */
        UNDO_LOST = 'u',    /* changed without a pre-image (through a descriptor opened
                             * before the checkpoint began): a restore lists it */
} UndoType;

#define UNDO_PATH_MAX 4096
#define UNDO_NAME_MAX 255
#define UNDO_LABEL_MAX 256
#define UNDO_ENTRIES_MAX (1u << 20)

typedef struct UndoEntry {
        char *path;     /* relative to the checkpoint's root, clean (undo_path_valid) */
        UndoType type;
        uint32_t mode;  /* permission bits (07777) */
        uint64_t size;
        char hash[SHA256_HEX_LEN + 1]; /* UNDO_FILE only, else "" */
        char *target;   /* UNDO_SYMLINK only, else NULL */
} UndoEntry;

typedef struct UndoManifest {
        uint64_t seq;
        int64_t time_us;
        char *label;
        UndoEntry *entries;
        size_t n, cap;
        size_t *table; /* open addressing over entries by path (index + 1, 0 empty) */
        size_t table_size;
} UndoManifest;

/* A relative path with no empty, "." or ".." component, no leading or
 * trailing '/', components of at most UNDO_NAME_MAX bytes, at most
 * UNDO_PATH_MAX bytes in all. */
bool undo_path_valid(const char *path);

/* Appends an entry (copies path and target). -EINVAL for an invalid path
 * or fields that do not fit the type, -EEXIST for a path already listed
 * (the first pre-image of a path in a checkpoint is the one that counts). */
int undo_manifest_add(UndoManifest *m, const char *path, UndoType type, uint32_t mode, uint64_t size,
                      const char *hash, const char *target);
/* The entry for path, or NULL. */
const UndoEntry *undo_manifest_find(const UndoManifest *m, const char *path);
bool undo_manifest_has(const UndoManifest *m, const char *path);
/* Sorts the entries by path (parents before their children). */
void undo_manifest_sort(UndoManifest *m);
int undo_manifest_set_label(UndoManifest *m, const char *label);

/* The file's bytes (entries sorted first). */
int undo_manifest_serialize(UndoManifest *m, char **ret, size_t *ret_len);
/* 0 with *ret filled, -EBADMSG (and *ret empty) for anything malformed,
 * -ENOMEM. */
int undo_manifest_parse(const char *buf, size_t len, UndoManifest *ret);
void undo_manifest_done(UndoManifest *m);
