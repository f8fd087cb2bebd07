/* SPDX-License-Identifier: MIT */
/* The store: blobs by hash with reference counts, manifests on disk, the
 * caps, and capturing a path's state into a checkpoint. Restores are in
 * undo-restore.c. Every path operation is relative to a descriptor the
 * store holds (its own directories) or one reached from the root without
 * following a link (the tree the jail writes). */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "time-util.h"
#include "undo-internal.h"
#include "walk-cache.h"

#define COPY_CHUNK (256u * 1024u)
#define MANIFEST_MAX (256u * 1024u * 1024u)
#define TREE_DEPTH_MAX 512

/* ---- blobs ---- */

static size_t blob_slot(const char *hash, size_t size) {
        /* The hash is already uniform: its first 16 hex digits index. */
        size_t v = 0;
        for (int i = 0; i < 16; i++)
                v = v * 16 + (size_t)(hash[i] <= '9' ? hash[i] - '0' : hash[i] - 'a' + 10);
        return v & (size - 1);
}

static UndoBlob *blob_find(UndoStore *s, const char *hash) {
        if (!s->blobs_size)
                return NULL;
        for (size_t k = blob_slot(hash, s->blobs_size);; k = (k + 1) & (s->blobs_size - 1)) {
                if (!s->blobs[k].hash[0])
                        return NULL;
                if (streq(s->blobs[k].hash, hash))
                        return &s->blobs[k];
        }
}

static int blob_insert(UndoStore *s, const char *hash, uint64_t size, UndoBlob **ret) {
        if ((s->blobs_used + 1) * 2 > s->blobs_size) {
                size_t size_new = s->blobs_size ? s->blobs_size * 2 : 256;
                UndoBlob *t = calloc(size_new, sizeof *t);
                if (!t)
                        return -ENOMEM;
                for (size_t i = 0; i < s->blobs_size; i++) {
                        if (!s->blobs[i].hash[0] || !s->blobs[i].refs)
                                continue;
                        size_t k = blob_slot(s->blobs[i].hash, size_new);
                        while (t[k].hash[0])
                                k = (k + 1) & (size_new - 1);
                        t[k] = s->blobs[i];
                }
                free(s->blobs);
                s->blobs = t;
                s->blobs_size = size_new;
                s->blobs_used = s->n_blobs;
        }
        size_t k = blob_slot(hash, s->blobs_size);
        while (s->blobs[k].hash[0])
                k = (k + 1) & (s->blobs_size - 1);
        memcpy(s->blobs[k].hash, hash, sizeof s->blobs[k].hash);
        s->blobs[k].size = size;
        s->blobs[k].refs = 0;
        s->blobs_used++;
        *ret = &s->blobs[k];
        return 0;
}

/* One reference less; at none the blob's file goes. The slot stays (an
 * entry with refs 0 keeps the probe chains whole) until the table grows. */
static void blob_unref(UndoStore *s, const char *hash) {
        UndoBlob *b = blob_find(s, hash);
        if (!b || !b->refs || --b->refs)
                return;
        if (unlinkat(s->blobs_fd, hash, 0) == 0 || errno == ENOENT)
                s->bytes -= MIN(s->bytes, b->size);
        s->n_blobs--;
}

int undo_blob_open(UndoStore *s, const char *hash) {
        UndoBlob *b = blob_find(s, hash);
        if (!b || !b->refs)
                return -ENOENT;
        int fd = openat(s->blobs_fd, hash, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int undo_tmp_create(int dirfd, char tmp[32]) {
        for (int tries = 0; tries < 16; tries++) {
                uint64_t r;
                if (getrandom(&r, sizeof r, 0) != sizeof r)
                        return -EIO;
                snprintf(tmp, 32, ".vsundo-%016" PRIx64, r);
                int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0 || errno != EEXIST)
                        return fd < 0 ? -errno : fd;
        }
        return -EEXIST;
}

int undo_copy_hashed(int fd, int out, uint64_t max, char ret_hash[SHA256_HEX_LEN + 1], uint64_t *ret_size) {
        _cleanup_free_ uint8_t *buf = malloc(COPY_CHUNK);
        if (!buf)
                return -ENOMEM;
        Sha256 h;
        sha256_begin(&h);
        uint64_t total = 0;
        for (;;) {
                /* pread: a descriptor the agent shares keeps its offset. */
                ssize_t k = pread(fd, buf, COPY_CHUNK, (off_t)total);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                total += (uint64_t)k;
                if (total > max)
                        return -EFBIG;
                sha256_feed(&h, buf, (size_t)k);
                if (out >= 0) {
                        int r = write_all(out, buf, (size_t)k);
                        if (r < 0)
                                return r;
                }
        }
        sha256_end_hex(&h, ret_hash);
        *ret_size = total;
        return 0;
}

/* Stores the regular file fd's bytes as a blob held by cp: *ret_hash and
 * *ret_size, or -EFBIG when it would take cp over the store's cap. */
static int blob_put(UndoCheckpoint *cp, int fd, char ret_hash[SHA256_HEX_LEN + 1], uint64_t *ret_size) {
        UndoStore *s = cp->s;
        uint64_t room = s->limits.max_bytes > cp->bytes ? s->limits.max_bytes - cp->bytes : 0;
        char tmp[32];
        _cleanup_close_ int out = undo_tmp_create(s->blobs_fd, tmp);
        if (out < 0)
                return out;
        char hash[SHA256_HEX_LEN + 1];
        uint64_t size = 0;
        int r = undo_copy_hashed(fd, out, room, hash, &size);
        UndoBlob *b = r < 0 ? NULL : blob_find(s, hash);
        if (r < 0 || (b && b->refs)) {
                /* Failed, or the store has this content already: dedup. */
                unlinkat(s->blobs_fd, tmp, 0);
                if (r < 0)
                        return r;
                b->refs++;
        } else {
                if (renameat(s->blobs_fd, tmp, s->blobs_fd, hash) < 0) {
                        r = -errno;
                        unlinkat(s->blobs_fd, tmp, 0);
                        return r;
                }
                if (!b) {
                        r = blob_insert(s, hash, size, &b);
                        if (r < 0) {
                                unlinkat(s->blobs_fd, hash, 0);
                                return r;
                        }
                }
                b->size = size;
                b->refs = 1;
                s->n_blobs++;
                s->bytes += size;
                cp->bytes += size;
        }
        memcpy(ret_hash, hash, SHA256_HEX_LEN + 1);
        *ret_size = size;
        return 0;
}

/* ---- capture ---- */

UndoPathClass undo_classify(UndoPathFilterFn filter, void *userdata, const char *rel) {
        if (!filter)
                return UNDO_PATH_OK;
        char buf[UNDO_PATH_MAX + 1];
        size_t len = strlen(rel);
        if (len > UNDO_PATH_MAX)
                return UNDO_PATH_OUTSIDE;
        memcpy(buf, rel, len + 1);
        /* From the top: the outermost directory that says more wins. */
        for (char *slash = strchr(buf, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                UndoPathClass c = filter(buf, userdata);
                *slash = '/';
                if (c != UNDO_PATH_OK)
                        return c;
        }
        return filter(buf, userdata);
}

int undo_checkpoint_begin(UndoStore *s, const char *label, UndoCheckpoint **ret) {
        UndoCheckpoint *cp = calloc(1, sizeof *cp);
        if (!cp)
                return -ENOMEM;
        cp->s = s;
        int r = undo_manifest_set_label(&cp->m, label);
        if (r < 0) {
                free(cp);
                return r;
        }
        *ret = cp;
        return 0;
}

bool undo_checkpoint_has(const UndoCheckpoint *cp, const char *rel) {
        return undo_manifest_has(&cp->m, rel);
}

size_t undo_checkpoint_n_entries(const UndoCheckpoint *cp) {
        return cp->m.n;
}

static char *join_rel(const char *dir, const char *name) {
        size_t a = strlen(dir), b = strlen(name);
        char *p = malloc(a + b + 2);
        if (!p)
                return NULL;
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
        return a ? p : memmove(p, p + 1, b + 1);
}

static int add_entry(UndoCheckpoint *cp, const char *rel, UndoType type, uint32_t mode, uint64_t size,
                     const char *hash, const char *target, VsError **err) {
        int r = undo_manifest_add(&cp->m, rel, type, mode, size, hash, target);
        if (r < 0 && hash)
                blob_unref(cp->s, hash);
        if (r == -EINVAL)
                return vs_error_set(err, r, "%s: not a path the store can hold", rel);
        return r < 0 ? vs_error_set(err, r, "%s: %s", rel, strerror(-r)) : 0;
}

static int capture_at(UndoCheckpoint *cp, int pfd, const char *name, const char *rel, bool tree, unsigned depth,
                      UndoPathFilterFn filter, void *userdata, VsError **err);

/* The regular file open on fd (st: its fstat) as a blob, or as too big
 * when it would take the checkpoint over the store's cap. */
static int capture_file(UndoCheckpoint *cp, int fd, const struct stat *st, const char *rel, VsError **err) {
        uint32_t mode = st->st_mode & 07777;
        if ((uint64_t)st->st_size > cp->s->limits.max_bytes - MIN(cp->bytes, cp->s->limits.max_bytes))
                return add_entry(cp, rel, UNDO_TOO_BIG, mode, (uint64_t)st->st_size, NULL, NULL, err);
        char hash[SHA256_HEX_LEN + 1];
        uint64_t size = 0;
        int r = blob_put(cp, fd, hash, &size);
        if (r == -EFBIG)
                return add_entry(cp, rel, UNDO_TOO_BIG, mode, (uint64_t)st->st_size, NULL, NULL, err);
        if (r < 0)
                return vs_error_set(err, r, "%s: %s", rel, strerror(-r));
        return add_entry(cp, rel, UNDO_FILE, mode, size, hash, NULL, err);
}

static int capture_children(UndoCheckpoint *cp, int pfd, const char *name, const char *rel, unsigned depth,
                            UndoPathFilterFn filter, void *userdata, VsError **err) {
        if (depth >= TREE_DEPTH_MAX)
                return vs_error_set(err, -ELOOP, "%s: deeper than %d directories", rel, TREE_DEPTH_MAX);
        int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return vs_error_set(err, -errno, "%s: %s", rel, strerror(errno));
        WalkDirReader d;
        int r = walk_dir_reader_open(&d, fd);
        if (r < 0) {
                safe_close(fd);
                return vs_error_set(err, r, "%s: %s", rel, strerror(-r));
        }
        const char *child;
        unsigned char type;
        while ((r = walk_dir_reader_next(&d, &child, &type)) > 0) {
                _cleanup_free_ char *crel = join_rel(rel, child);
                if (!crel) {
                        r = -ENOMEM;
                        break;
                }
                r = capture_at(cp, d.fd, child, crel, true, depth + 1, filter, userdata, err);
                if (r < 0)
                        break;
        }
        walk_dir_reader_close(&d);
        if (r < 0 && !(err && *err))
                return vs_error_set(err, r, "%s: %s", rel, strerror(-r));
        return r < 0 ? r : 0;
}

/* Records what name (in the directory pfd, reached without a link) is. */
static int capture_at(UndoCheckpoint *cp, int pfd, const char *name, const char *rel, bool tree, unsigned depth,
                      UndoPathFilterFn filter, void *userdata, VsError **err) {
        if (undo_manifest_has(&cp->m, rel))
                return 0;
        unsigned tries = 0;
again:;
        struct stat st;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        return add_entry(cp, rel, UNDO_ABSENT, 0, 0, NULL, NULL, err);
                return vs_error_set(err, -errno, "%s: %s", rel, strerror(errno));
        }
        uint32_t mode = st.st_mode & 07777;
        /* A masked path's content never enters the store: not a file's
         * bytes, not a link's text, nothing below a directory (whatever
         * the filter would say of its entries). */
        if (undo_classify(filter, userdata, rel) == UNDO_PATH_MASKED)
                return add_entry(cp, rel, UNDO_MASKED, mode, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0, NULL,
                                 NULL, err);
        if (S_ISDIR(st.st_mode)) {
                int r = add_entry(cp, rel, UNDO_DIR, mode, 0, NULL, NULL, err);
                if (r < 0 || !tree)
                        return r;
                return capture_children(cp, pfd, name, rel, depth, filter, userdata, err);
        }
        if (S_ISLNK(st.st_mode)) {
                char target[UNDO_PATH_MAX + 2];
                ssize_t k = readlinkat(pfd, name, target, sizeof target - 1);
                if (k < 0)
                        return vs_error_set(err, -errno, "%s: %s", rel, strerror(errno));
                target[k] = 0;
                if (k == 0 || (size_t)k > UNDO_PATH_MAX)
                        return add_entry(cp, rel, UNDO_OTHER, 0, 0, NULL, NULL, err);
                return add_entry(cp, rel, UNDO_SYMLINK, 0, 0, NULL, target, err);
        }
        if (!S_ISREG(st.st_mode))
                return add_entry(cp, rel, UNDO_OTHER, mode, 0, NULL, NULL, err);
        _cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st2;
        if (fd < 0 || fstat(fd, &st2) < 0)
                return vs_error_set(err, -errno, "%s: %s", rel, strerror(errno));
        if (st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
                /* Replaced between the two looks (a rename over it): look
                 * again, a few times. */
                if (++tries < 4) {
                        fd = safe_close(fd);
                        goto again;
                }
                return vs_error_set(err, -EAGAIN, "%s: replaced while it was captured", rel);
        }
        return capture_file(cp, fd, &st2, rel, err);
}

int undo_checkpoint_capture(UndoCheckpoint *cp, int rootfd, const char *rel, bool tree, UndoPathFilterFn filter,
                            void *userdata, VsError **err) {
        if (!undo_path_valid(rel))
                return vs_error_set(err, -EINVAL, "%s: not a clean relative path", rel);
        if (undo_manifest_has(&cp->m, rel))
                return 0;
        const char *slash = strrchr(rel, '/');
        _cleanup_free_ char *parent = slash ? strndup(rel, (size_t)(slash - rel)) : strdup(".");
        if (!parent)
                return -ENOMEM;
        _cleanup_close_ int pfd = chase_beneath(rootfd, parent, O_PATH | O_DIRECTORY);
        /* A symlink, a non-directory or nothing on the way: nothing is at
         * rel in the real tree (the link itself is its own path). */
        if (pfd == -ENOENT || pfd == -ELOOP || pfd == -ENOTDIR)
                return add_entry(cp, rel, UNDO_ABSENT, 0, 0, NULL, NULL, err);
        if (pfd < 0)
                return vs_error_set(err, pfd, "%s: %s", parent, strerror(-pfd));
        return capture_at(cp, pfd, slash ? slash + 1 : rel, rel, tree, 0, filter, userdata, err);
}

int undo_capture_at(UndoCheckpoint *cp, int pfd, const char *name, const char *rel, bool tree, UndoPathFilterFn filter,
                    void *userdata, VsError **err) {
        if (!undo_path_valid(rel))
                return vs_error_set(err, -EINVAL, "%s: not a clean relative path", rel);
        return capture_at(cp, pfd, name, rel, tree, 0, filter, userdata, err);
}

int undo_checkpoint_capture_fd(UndoCheckpoint *cp, const char *rel, int fd, UndoPathFilterFn filter, void *userdata,
                               VsError **err) {
        if (!undo_path_valid(rel))
                return vs_error_set(err, -EINVAL, "%s: not a clean relative path", rel);
        if (undo_manifest_has(&cp->m, rel))
                return 0;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return vs_error_set(err, -errno, "%s: %s", rel, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return vs_error_set(err, -EINVAL, "%s: not a regular file", rel);
        uint32_t mode = st.st_mode & 07777;
        if (undo_classify(filter, userdata, rel) == UNDO_PATH_MASKED)
                return add_entry(cp, rel, UNDO_MASKED, mode, (uint64_t)st.st_size, NULL, NULL, err);
        return capture_file(cp, fd, &st, rel, err);
}

int undo_checkpoint_mark_lost(UndoCheckpoint *cp, const char *rel, VsError **err) {
        if (!undo_path_valid(rel))
                return vs_error_set(err, -EINVAL, "%s: not a clean relative path", rel);
        if (undo_manifest_has(&cp->m, rel))
                return 0;
        return add_entry(cp, rel, UNDO_LOST, 0, 0, NULL, NULL, err);
}

void undo_checkpoint_free(UndoCheckpoint *cp) {
        if (!cp)
                return;
        for (size_t i = 0; i < cp->m.n; i++)
                if (cp->m.entries[i].type == UNDO_FILE)
                        blob_unref(cp->s, cp->m.entries[i].hash);
        undo_manifest_done(&cp->m);
        free(cp);
}

/* ---- manifests on disk, the caps ---- */

static int seq_name(uint64_t seq, char name[24]) {
        return snprintf(name, 24, "%020" PRIu64, seq);
}

/* A manifest's file name: exactly 20 digits. */
static bool parse_seq_name(const char *name, uint64_t *ret) {
        if (strlen(name) != 20)
                return false;
        uint64_t v = 0;
        for (const char *p = name; *p; p++) {
                if (*p < '0' || *p > '9')
                        return false;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        *ret = v;
        return v > 0;
}

static int refs_add(UndoStore *s, const UndoManifest *m) {
        for (size_t i = 0; i < m->n; i++) {
                if (m->entries[i].type != UNDO_FILE)
                        continue;
                UndoBlob *b = blob_find(s, m->entries[i].hash);
                if (!b) {
                        int r = blob_insert(s, m->entries[i].hash, 0, &b);
                        if (r < 0)
                                return r;
                }
                if (b->refs++ == 0)
                        s->n_blobs++;
        }
        return 0;
}

static int cps_push(UndoStore *s, UndoManifest *m, uint64_t bytes) {
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 16;
                UndoManifest *c = realloc(s->cps, cap * sizeof *c);
                if (!c)
                        return -ENOMEM;
                s->cps = c;
                uint64_t *b = realloc(s->cp_bytes, cap * sizeof *b);
                if (!b)
                        return -ENOMEM;
                s->cp_bytes = b;
                s->cap = cap;
        }
        s->cps[s->n] = *m;
        s->cp_bytes[s->n] = bytes;
        s->n++;
        *m = (UndoManifest){ 0 };
        return 0;
}

static void drop_oldest(UndoStore *s) {
        char name[24];
        seq_name(s->cps[0].seq, name);
        /* The manifest first: a crash between the two leaves blobs no
         * manifest holds, which the next open removes. */
        if (unlinkat(s->cps_fd, name, 0) == 0 || errno == ENOENT)
                s->bytes -= MIN(s->bytes, s->cp_bytes[0]);
        for (size_t i = 0; i < s->cps[0].n; i++)
                if (s->cps[0].entries[i].type == UNDO_FILE)
                        blob_unref(s, s->cps[0].entries[i].hash);
        undo_manifest_done(&s->cps[0]);
        memmove(s->cps, s->cps + 1, (s->n - 1) * sizeof *s->cps);
        memmove(s->cp_bytes, s->cp_bytes + 1, (s->n - 1) * sizeof *s->cp_bytes);
        s->n--;
}

static void apply_caps(UndoStore *s) {
        while (s->n > 1 && (s->n > s->limits.max_count || s->bytes > s->limits.max_bytes))
                drop_oldest(s);
}

int undo_checkpoint_commit(UndoCheckpoint *cp, uint64_t *ret_seq, VsError **err) {
        _cleanup_(undo_checkpoint_freep) UndoCheckpoint *owned = cp;
        UndoStore *s = cp->s;
        if (cp->m.n == 0) {
                *ret_seq = 0;
                return 0;
        }
        cp->m.seq = s->next_seq;
        struct timespec ts = now_wall();
        cp->m.time_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = undo_manifest_serialize(&cp->m, &text, &len);
        if (r < 0)
                return vs_error_set(err, r, "checkpoint manifest: %s", strerror(-r));
        char tmp[32], name[24];
        _cleanup_close_ int fd = undo_tmp_create(s->cps_fd, tmp);
        if (fd < 0)
                return vs_error_set(err, fd, "checkpoint manifest: %s", strerror(-fd));
        r = write_all(fd, text, len);
        seq_name(cp->m.seq, name);
        if (r >= 0 && renameat(s->cps_fd, tmp, s->cps_fd, name) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(s->cps_fd, tmp, 0);
                return vs_error_set(err, r, "checkpoint manifest %s: %s", name, strerror(-r));
        }
        r = cps_push(s, &cp->m, len);
        if (r < 0) {
                unlinkat(s->cps_fd, name, 0);
                return vs_error_set(err, r, "checkpoint: %s", strerror(-r));
        }
        /* Its blobs now belong to the store's list. */
        owned = NULL;
        free(cp);
        s->bytes += len;
        s->next_seq++;
        apply_caps(s);
        *ret_seq = s->next_seq - 1;
        return 0;
}

/* ---- open, look, free ---- */

static int open_subdir(int dirfd, const char *name) {
        if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || fchmod(fd, 0700) < 0) {
                int r = errno ? -errno : -EPERM;
                safe_close(fd);
                return r ? r : -EPERM;
        }
        return fd;
}

static bool is_tmp(const char *name) {
        return strncmp(name, ".vsundo-", 8) == 0;
}

static int cp_cmp(const void *a, const void *b) {
        uint64_t x = ((const UndoManifest *)a)->seq, y = ((const UndoManifest *)b)->seq;
        return x < y ? -1 : x > y;
}

/* A DIR over a copy of a store directory's descriptor. */
static int dir_open(int fd, DIR **ret) {
        int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return -errno;
        *ret = fdopendir(dfd);
        if (!*ret) {
                int r = -errno;
                safe_close(dfd);
                return r;
        }
        return 0;
}

static int load_manifests(UndoStore *s) {
        _cleanup_(closedirp) DIR *d = NULL;
        int r = dir_open(s->cps_fd, &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                uint64_t seq;
                if (is_tmp(de->d_name)) {
                        unlinkat(s->cps_fd, de->d_name, 0);
                        continue;
                }
                if (!parse_seq_name(de->d_name, &seq))
                        continue;
                _cleanup_free_ char *text = NULL;
                size_t len;
                UndoManifest m;
                int fd = openat(s->cps_fd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                r = fd < 0 ? -errno : read_fd_all(fd, MANIFEST_MAX, &text, &len);
                safe_close(fd);
                if (r >= 0)
                        r = undo_manifest_parse(text, len, &m);
                if (r >= 0 && m.seq != seq) {
                        undo_manifest_done(&m);
                        r = -EBADMSG;
                }
                if (r == -EFBIG || r == -ELOOP || r == -EISDIR || r == -EAGAIN)
                        r = -EBADMSG; /* too big, a link, a directory, a FIFO: not a manifest */
                /* Out of memory or an I/O error is never a reason to remove
                 * one: the open fails instead (skipping it would free the
                 * blobs it holds). */
                if (r < 0 && r != -EBADMSG)
                        return r;
                if (r < 0) {
                        /* Torn or damaged: it can restore nothing. */
                        unlinkat(s->cps_fd, de->d_name, 0);
                        continue;
                }
                r = cps_push(s, &m, len);
                if (r < 0) {
                        undo_manifest_done(&m);
                        return r;
                }
                s->bytes += len;
        }
        if (errno)
                return -errno;
        if (s->n)
                qsort(s->cps, s->n, sizeof *s->cps, cp_cmp);
        /* cp_bytes was pushed in directory order: re-read the sizes in seq order. */
        for (size_t i = 0; i < s->n; i++) {
                char name[24];
                struct stat st;
                seq_name(s->cps[i].seq, name);
                s->cp_bytes[i] = fstatat(s->cps_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)st.st_size : 0;
                r = refs_add(s, &s->cps[i]);
                if (r < 0)
                        return r;
        }
        s->next_seq = s->n ? s->cps[s->n - 1].seq + 1 : 1;
        return 0;
}

/* Sizes of the blobs the manifests hold; files none holds (a crash between
 * a blob and its manifest, or a manifest removed as damaged) go. */
static int load_blobs(UndoStore *s) {
        _cleanup_(closedirp) DIR *d = NULL;
        int r = dir_open(s->blobs_fd, &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                UndoBlob *b = strlen(de->d_name) == SHA256_HEX_LEN ? blob_find(s, de->d_name) : NULL;
                struct stat st;
                if (!b || !b->refs || fstatat(s->blobs_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode)) {
                        unlinkat(s->blobs_fd, de->d_name, 0);
                        continue;
                }
                b->size = (uint64_t)st.st_size;
                s->bytes += b->size;
        }
        return errno ? -errno : 0;
}

int undo_store_open(int dirfd, const UndoLimits *limits, UndoStore **ret, VsError **err) {
        UndoStore *s = calloc(1, sizeof *s);
        if (!s)
                return vs_error_set(err, -ENOMEM, "undo store: out of memory");
        _cleanup_(undo_store_freep) UndoStore *owned = s;
        s->dir_fd = s->blobs_fd = s->cps_fd = -EBADF;
        s->limits.max_bytes = limits && limits->max_bytes ? limits->max_bytes : UNDO_DEFAULT_MAX_BYTES;
        s->limits.max_count = limits && limits->max_count ? limits->max_count : UNDO_DEFAULT_MAX_COUNT;
        s->dir_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (s->dir_fd < 0)
                return vs_error_set(err, -errno, "undo store: %s", strerror(errno));
        s->blobs_fd = open_subdir(s->dir_fd, "blobs");
        if (s->blobs_fd < 0)
                return vs_error_set(err, s->blobs_fd, "undo store: blobs/: %s", strerror(-s->blobs_fd));
        s->cps_fd = open_subdir(s->dir_fd, "checkpoints");
        if (s->cps_fd < 0)
                return vs_error_set(err, s->cps_fd, "undo store: checkpoints/: %s", strerror(-s->cps_fd));
        int r = load_manifests(s);
        if (r >= 0)
                r = load_blobs(s);
        if (r < 0)
                return vs_error_set(err, r, "undo store: %s", strerror(-r));
        apply_caps(s);
        *ret = TAKE_PTR(owned);
        return 0;
}

void undo_store_free(UndoStore *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                undo_manifest_done(&s->cps[i]);
        free(s->cps);
        free(s->cp_bytes);
        free(s->blobs);
        safe_close(s->dir_fd);
        safe_close(s->blobs_fd);
        safe_close(s->cps_fd);
        free(s);
}

size_t undo_store_count(const UndoStore *s) {
        return s->n;
}

const UndoManifest *undo_store_get(const UndoStore *s, size_t i) {
        return i < s->n ? &s->cps[i] : NULL;
}

const UndoManifest *undo_store_find(const UndoStore *s, uint64_t seq) {
        for (size_t i = 0; i < s->n; i++)
                if (s->cps[i].seq == seq)
                        return &s->cps[i];
        return NULL;
}

uint64_t undo_store_bytes(const UndoStore *s) {
        return s->bytes;
}

size_t undo_store_n_blobs(const UndoStore *s) {
        return s->n_blobs;
}
