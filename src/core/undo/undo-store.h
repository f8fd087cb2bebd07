/* SPDX-License-Identifier: MIT */
#pragma once

/* The undo store of one writable root (docs/undo.md): content-addressed
 * blobs (SHA-256, one file per distinct content, shared by every
 * checkpoint that holds it) and one manifest per checkpoint
 * (undo-manifest.h), under a directory the caller opened: the daemon's
 * state directory, outside every path a jail can list or write.
 *
 *   DIR/blobs/HASH             a pre-image's bytes, 0600
 *   DIR/checkpoints/SEQ        a manifest (SEQ: 20 decimal digits), 0600
 *
 * A checkpoint is built by capturing the state of each path a call is
 * about to change (or has changed, for a path whose old state the capture
 * still holds) and committed once: a checkpoint that captured nothing
 * writes nothing (a call that changes nothing costs 0 bytes). The caps
 * (bytes of blobs and manifests, number of checkpoints) drop the oldest
 * checkpoints first, and with them the blobs no other checkpoint holds;
 * the newest checkpoint is never dropped, and no one checkpoint takes
 * more than max_bytes (a file that would not fit is recorded as too big).
 *
 * Every path below the root is reached from the root's descriptor through
 * basic/chase.h or one O_NOFOLLOW step at a time: no symlink in the tree
 * (which the agent shapes) is ever followed, in a capture or a restore.
 * Library code: no logging; one store is used by one thread at a time. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "undo-manifest.h"

typedef struct UndoLimits {
        uint64_t max_bytes; /* blobs and manifests; 0: UNDO_DEFAULT_MAX_BYTES */
        unsigned max_count; /* checkpoints kept; 0: UNDO_DEFAULT_MAX_COUNT */
} UndoLimits;
#define UNDO_DEFAULT_MAX_BYTES (1024ull * 1024 * 1024)
#define UNDO_DEFAULT_MAX_COUNT 200u

/* What the policy says of a path below the root (the caller's filter over
 * the masks and protected paths, docs/undo.md "Threat model"). */
typedef enum UndoPathClass {
        UNDO_PATH_OK,
        UNDO_PATH_MASKED,    /* content never stored, never restored, never touched by a restore */
        UNDO_PATH_PROTECTED, /* captured, but a restore never rewrites or removes it */
        UNDO_PATH_OUTSIDE,   /* not in the writable paths: a restore does not touch it */
} UndoPathClass;
/* Asked of a path and of each of its ancestors: what it says of a
 * directory holds for everything below it (a key under a masked .ssh/ is
 * masked even if the filter's globs name only the directory). */
typedef UndoPathClass (*UndoPathFilterFn)(const char *rel, void *userdata);

typedef struct UndoStore UndoStore;
typedef struct UndoCheckpoint UndoCheckpoint;

/* Opens the store in dirfd (borrowed; duplicated), making blobs/ and
 * checkpoints/ (0700) where missing. Every manifest is read; one that
 * does not parse is removed (a crash tore it, or it was damaged: it can
 * restore nothing), and so are blobs no manifest holds and temporary
 * files a crash left. limits may be NULL (the defaults). */
int undo_store_open(int dirfd, const UndoLimits *limits, UndoStore **ret, VsError **err);
void undo_store_free(UndoStore *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(UndoStore *, undo_store_free);

/* The checkpoints kept, oldest first (index 0 .. count-1). */
size_t undo_store_count(const UndoStore *s);
const UndoManifest *undo_store_get(const UndoStore *s, size_t i);
/* The checkpoint numbered seq, or NULL (dropped, or never was). */
const UndoManifest *undo_store_find(const UndoStore *s, uint64_t seq);
/* Bytes the store holds: its blobs and manifests. */
uint64_t undo_store_bytes(const UndoStore *s);
size_t undo_store_n_blobs(const UndoStore *s);

/* A checkpoint being built. label: the call or turn (copied; may be NULL). */
int undo_checkpoint_begin(UndoStore *s, const char *label, UndoCheckpoint **ret);
/* Records what rel (below rootfd, borrowed) is now, unless this checkpoint
 * holds rel already (the first state captured is the one before the
 * call). tree: a directory's entries too, all the way down (what an
 * `rm -rf` or a restore over it would lose). A symlink on the way to rel
 * is not followed: rel is then absent from the real tree, and recorded
 * so. filter may be NULL (every path UNDO_PATH_OK). */
int undo_checkpoint_capture(UndoCheckpoint *cp, int rootfd, const char *rel, bool tree, UndoPathFilterFn filter,
                            void *userdata, VsError **err);
/* Records rel as the regular file open on fd (borrowed, read from its
 * start with pread, its offset untouched): the copy-before-write of a
 * file whose descriptor the worker hands over as the agent opens it for
 * writing, so what is saved is the very file written, never a path
 * looked up again. Unless this checkpoint holds rel already. -EINVAL for
 * a descriptor that is not a regular file. */
int undo_checkpoint_capture_fd(UndoCheckpoint *cp, const char *rel, int fd, UndoPathFilterFn filter, void *userdata,
                               VsError **err);
/* Records that rel changed in this checkpoint without a pre-image (the
 * watch saw a write no open of this checkpoint preceded: a descriptor
 * opened earlier), unless this checkpoint holds rel already; a restore
 * to this checkpoint or before lists rel instead of guessing. */
int undo_checkpoint_mark_lost(UndoCheckpoint *cp, const char *rel, VsError **err);
/* Whether this checkpoint holds rel (a caller capturing a path once). */
bool undo_checkpoint_has(const UndoCheckpoint *cp, const char *rel);
size_t undo_checkpoint_n_entries(const UndoCheckpoint *cp);
/* Writes the manifest (a temporary file renamed into place), applies the
 * caps and frees cp (in every case). *ret_seq: its number, or 0 when it
 * captured nothing (nothing written). */
int undo_checkpoint_commit(UndoCheckpoint *cp, uint64_t *ret_seq, VsError **err);
/* Abandons cp: the blobs only it added are removed. */
void undo_checkpoint_free(UndoCheckpoint *cp);
DEFINE_TRIVIAL_CLEANUP_FUNC(UndoCheckpoint *, undo_checkpoint_free);

/* A path a restore could not put back, and why (never skipped silently). */
typedef struct UndoProblem {
        char *path;
        char *reason;
} UndoProblem;

typedef struct UndoRestoreOptions {
        UndoPathFilterFn filter; /* may be NULL */
        void *userdata;
        /* The owner of what a restore makes (a root daemon restoring a
         * user's workspace); -1: the caller's. */
        uid_t uid;
        gid_t gid;
} UndoRestoreOptions;

typedef struct UndoRestoreReport {
        uint64_t seq;      /* the checkpoint the restore made of what it replaced (its own undo), 0 if none */
        size_t n_restored; /* paths changed back */
        UndoProblem *problems;
        size_t n_problems;
} UndoRestoreReport;

/* Puts the root back as it was when checkpoint seq began: every path a
 * checkpoint from seq on holds gets the state the earliest of them
 * recorded. Two passes: the first changes nothing and commits a new
 * checkpoint of what will be replaced (ret->seq), so the restore can
 * itself be undone, even one that stops half way; the second replaces or
 * removes only what that checkpoint holds with its content. Paths the
 * filter calls masked, protected or outside, entries without content
 * (masked, too big, other types), damaged blobs, paths below a symlink or
 * a non-directory, and what could not be saved first (over the cap, or
 * appeared meanwhile) are listed in ret->problems and left as they are.
 * -ENOENT: no checkpoint seq; an error from the first pass changed
 * nothing. ret is filled on success; free it with
 * undo_restore_report_done(). The caller stops the jail's commands first:
 * a restore racing them stays inside the root, but may list more. */
int undo_restore(UndoStore *s, uint64_t seq, int rootfd, const UndoRestoreOptions *opts, UndoRestoreReport *ret,
                 VsError **err);
void undo_restore_report_done(UndoRestoreReport *r);
