/* SPDX-License-Identifier: MIT */
#pragma once

/* What undo-store.c and undo-restore.c share; no other file includes it. */

#include "undo-store.h"

typedef struct UndoBlob {
        char hash[SHA256_HEX_LEN + 1]; /* "" for an empty slot */
        uint64_t size;
        uint32_t refs; /* entries holding it: committed checkpoints and the one being built */
} UndoBlob;

struct UndoStore {
        int dir_fd, blobs_fd, cps_fd;
        UndoLimits limits;
        UndoManifest *cps; /* oldest first */
        uint64_t *cp_bytes; /* each manifest's file size */
        size_t n, cap;
        UndoBlob *blobs; /* open addressing by hash; a slot with refs 0 is a tombstone */
        size_t blobs_size, blobs_used, n_blobs; /* slots, slots taken, blobs held */
        uint64_t bytes;
        uint64_t next_seq;
};

struct UndoCheckpoint {
        UndoStore *s;
        UndoManifest m;
        uint64_t bytes; /* new blobs this checkpoint added */
};

/* What the filter says of rel, or of the nearest ancestor it says more of:
 * a path below a masked, protected or outside directory is that too. */
UndoPathClass undo_classify(UndoPathFilterFn filter, void *userdata, const char *rel);
/* Records what name (in the directory pfd, reached without a link) is,
 * under the path rel: undo_checkpoint_capture() once the parent is held. */
int undo_capture_at(UndoCheckpoint *cp, int pfd, const char *name, const char *rel, bool tree, UndoPathFilterFn filter,
                    void *userdata, VsError **err);
/* Opens blob hash for reading (-ENOENT when the store has none). */
int undo_blob_open(UndoStore *s, const char *hash);
/* Copies the regular file fd into out while hashing it, at most max
 * bytes (-EFBIG past them); *ret_hash, *ret_size: what was copied. */
int undo_copy_hashed(int fd, int out, uint64_t max, char ret_hash[SHA256_HEX_LEN + 1], uint64_t *ret_size);
/* A temporary name in dirfd: created O_EXCL, mode 0600; name written to tmp. */
int undo_tmp_create(int dirfd, char tmp[32]);
