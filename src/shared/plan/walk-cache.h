/* SPDX-License-Identifier: MIT */
#pragma once

/* What a mask walk learnt about each directory it read, kept between
 * daemon runs so that a restart re-reads only the directories that
 * changed. A record is used only when the directory's device, inode,
 * mtime AND ctime are those recorded: a name added, removed or renamed in
 * a directory changes its mtime and ctime, and no process can set a
 * ctime back (touch -d sets the mtime only), so a stale record is never
 * used. The file is checked whole (magic, key, lengths, names, a SHA-256
 * over the body); anything wrong and it is ignored: the walk reads every
 * directory, as with no cache. */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define WALK_CACHE_KEY_LEN 32

/* The lane of a record's ".git" or "HEAD" entry: the directory is one
 * git-scan's look() must test (git-scan.h), afresh each walk. */
#define WALK_CACHE_LANE_GIT 2

typedef struct WalkCacheMatch {
        uint8_t lane; /* which pattern set matched (0 mask, 1 protect, 2 git) */
        uint8_t kind; /* MaskKind */
        char *name;   /* an entry of the directory */
} WalkCacheMatch;

typedef struct WalkCacheDir {
        char *rel; /* relative to the walk's root, "" for the root */
        uint64_t dev, ino;
        int64_t mtime_sec, ctime_sec;
        uint32_t mtime_nsec, ctime_nsec;
        char **subdirs; /* the child directories the walk went into */
        size_t n_sub;
        WalkCacheMatch *matches;
        size_t n_match;
} WalkCacheDir;

typedef struct WalkCache {
        uint8_t key[WALK_CACHE_KEY_LEN]; /* what was walked with what (walk_cache_key) */
        WalkCacheDir *dirs;
        size_t n, cap;
        size_t *table; /* open addressing over dirs by rel, built by walk_cache_index */
        size_t table_size;
} WalkCache;

/* The key of a walk: the root and every pattern (a NULL-terminated list
 * each, may be NULL) that shaped it. */
void walk_cache_key(const char *root, char *const *lists[], size_t n_lists, uint8_t key[WALK_CACHE_KEY_LEN]);

/* Parses buf as a cache for key: 0 and *ret filled, or -EBADMSG (and *ret
 * empty) for anything malformed, truncated or for another key. */
int walk_cache_parse(const void *buf, size_t len, const uint8_t key[WALK_CACHE_KEY_LEN], WalkCache *ret);
/* The file's bytes for c. */
int walk_cache_serialize(const WalkCache *c, uint8_t **ret, size_t *ret_len);

/* Appends a record (its strings taken over on success). */
int walk_cache_add(WalkCache *c, WalkCacheDir *d);
/* Builds the lookup table; walk_cache_find needs it. */
int walk_cache_index(WalkCache *c);
WalkCacheDir *walk_cache_find(const WalkCache *c, const char *rel);
bool walk_cache_dir_matches(const WalkCacheDir *d, const struct stat *st);
/* A directory changed in the last WALK_CACHE_RACY_S seconds before a walk
 * began is read but not recorded: a name added in the same clock tick as
 * the change the walk saw leaves ctime as it was (the kernel's file times
 * are coarse), so its record could hide the name. The next walk reads it
 * again. walk_start_s: the wall clock's seconds when the walk began. */
#define WALK_CACHE_RACY_S 2
bool walk_cache_racy(const struct stat *st, int64_t walk_start_s);
void walk_cache_dir_done(WalkCacheDir *d);
/* Moves src's record (of an old cache, used by a walk) into *ret, so a
 * walk that reads nothing copies nothing; src is then found no more. */
void walk_cache_take(WalkCacheDir *src, WalkCacheDir *ret);
/* One more subdirectory, or match, noted in a record being made. */
int walk_cache_dir_add_sub(WalkCacheDir *d, const char *name);
int walk_cache_dir_add_match(WalkCacheDir *d, unsigned lane, unsigned kind, const char *name);
void walk_cache_done(WalkCache *c);

/* Whether fresh, made by a walk that read n_read directories and took
 * every other record from old, differs from old (then it is written). */
bool walk_cache_changed(const WalkCache *old, const WalkCache *fresh, size_t n_read);

/* The file for key in dir (the daemon's state directory's walk-cache/):
 * read (missing, unreadable or malformed: an empty cache, never an error)
 * and written (a temporary file renamed over it, mode 0600). */
int walk_cache_load(const char *dir, const uint8_t key[WALK_CACHE_KEY_LEN], WalkCache *ret);
int walk_cache_save(const char *dir, const WalkCache *c);

/* Where a daemon's walks keep their caches (its state directory's
 * walk-cache/, 0700), and what they did: directories read with getdents,
 * and directories whose record was used (status shows both). Owned by the
 * daemon and handed to each launch (VsLaunchOptions); without one (the
 * CLI, a remote launcher) no cache is read or written. */
typedef struct WalkCacheUse {
        char *dir;
        _Atomic uint64_t n_read, n_reused;
} WalkCacheUse;

/* dir set to state_dir/walk-cache, made 0700 if missing; -EPERM when it
 * is not a directory of this user's with that mode (then no cache). */
int walk_cache_use_init(WalkCacheUse *u, const char *state_dir);
void walk_cache_use_done(WalkCacheUse *u);

/* A directory's entries read with getdents64 on a descriptor the walks
 * hold: no fdopendir (its fcntl and fstat per directory), one 32 KiB
 * buffer a level. */
typedef struct WalkDirReader {
        int fd;
        uint8_t *buf;
        size_t pos, len;
} WalkDirReader;

/* Takes fd over on success (-ENOMEM: the caller still owns it). */
int walk_dir_reader_open(WalkDirReader *d, int fd);
/* 1 with the next entry's name and d_type ("." and ".." skipped), 0 at
 * the end, or a negative errno. The name lasts until the next call. */
int walk_dir_reader_next(WalkDirReader *d, const char **ret_name, unsigned char *ret_type);
/* Closes the descriptor and frees the buffer. */
void walk_dir_reader_close(WalkDirReader *d);
