/* SPDX-License-Identifier: MIT */
/* read_file, write_file, stat, list_dir. Each resolves its path through
 * resolve.c first (policy on every call), then acts relative to the
 * directory descriptor it got, never by path again. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "sha256.h"
#include "worker.h"

#define CHUNK (256u * 1024u)

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

static int io_error(VsError **err, int k, const char *path) {
        return vs_error_set(err, k, "%s: %s", path, strerror(-k));
}

/* Opens the resolved target for reading; only regular files (a FIFO would
 * block the worker, a device is not a file). */
static int open_regular(const Resolved *r, struct stat *st, VsError **err) {
        int fd = openat(r->dir_fd, r->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return io_error(err, negative_errno(), r->path);
        if (fstat(fd, st) < 0) {
                int k = negative_errno();
                safe_close(fd);
                return io_error(err, k, r->path);
        }
        if (!S_ISREG(st->st_mode)) {
                safe_close(fd);
                return vs_error_set_kind(err, -EINVAL, "bad_request", "%s: not a regular file", r->path);
        }
        return fd;
}

/* What read_file returns: the bytes [offset, offset+limit), or from the
 * start of line start_line at most max_lines lines and limit bytes; and the
 * line the window starts in (lines counted as the file streams past, so a
 * line read costs one pass like any other). */
typedef struct Window {
        uint64_t offset, limit, start_line, max_lines;
        bool started, full;
        uint64_t start;     /* where the data starts */
        uint64_t line;      /* the line at the current position (1-based) */
        uint64_t first_line;
        uint64_t lines;     /* newlines taken */
        StrBuf *data;
} Window;

static uint64_t count_nl(const char *p, size_t n) {
        uint64_t k = 0;
        for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))); p++)
                k++;
        return k;
}

static int window_feed(Window *w, const char *buf, size_t n, uint64_t pos) {
        size_t i = 0;
        if (!w->started) {
                if (w->start_line) {
                        while (i < n && w->line < w->start_line) {
                                const char *nl = memchr(buf + i, '\n', n - i);
                                if (!nl)
                                        return 0;
                                w->line++;
                                i = (size_t)(nl - buf) + 1;
                        }
                        if (w->line < w->start_line)
                                return 0;
                } else {
                        if (pos + n <= w->offset) {
                                w->line += count_nl(buf, n);
                                return 0;
                        }
                        i = w->offset > pos ? (size_t)(w->offset - pos) : 0;
                        w->line += count_nl(buf, i);
                }
                w->started = true;
                w->start = pos + i;
                w->first_line = w->line;
        }
        if (w->full || i >= n)
                return 0;
        size_t take = n - i;
        if (take > w->limit - w->data->len)
                take = (size_t)(w->limit - w->data->len);
        if (w->max_lines)
                for (const char *p = buf + i, *e = buf + i + take; (p = memchr(p, '\n', (size_t)(e - p))); p++)
                        if (++w->lines == w->max_lines) {
                                take = (size_t)(p - (buf + i)) + 1;
                                w->full = true;
                                break;
                        }
        if (w->data->len + take == w->limit)
                w->full = true;
        return strbuf_append(w->data, buf + i, take);
}

/* Hashes the whole file; fills *w when given. */
static int hash_and_window(int fd, char out_hex[SHA256_HEX_LEN + 1], Window *w) {
        _cleanup_free_ char *buf = malloc(CHUNK);
        Sha256 h;
        uint64_t pos = 0;

        if (!buf)
                return -ENOMEM;
        sha256_begin(&h);
        for (;;) {
                ssize_t n = read(fd, buf, CHUNK);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                sha256_feed(&h, buf, (size_t) n);
                if (w) {
                        int k = window_feed(w, buf, (size_t) n, pos);
                        if (k < 0)
                                return k;
                }
                pos += (uint64_t) n;
        }
        if (w && !w->started) { /* past the end */
                w->start = w->start_line ? pos : w->offset;
                w->first_line = w->line;
        }
        sha256_end_hex(&h, out_hex);
        return 0;
}

int fileops_read_file(const Policy *p, json_t *obj, StrBuf *out, VsError **err) {
        ProtocolReadFileRequest req;
        _cleanup_(resolved_done) Resolved r = RESOLVED_INIT;
        char hex[SHA256_HEX_LEN + 1];
        struct stat st;
        int k;

        k = protocol_decode_read_file_request(obj, &req, err);
        if (k < 0)
                return k;
        uint64_t limit = req.limit ? req.limit : JSONL_MAX_RAW;
        if (limit > JSONL_MAX_RAW)
                return vs_error_set_kind(err, -EFBIG, "too_large", "limit over %u bytes", JSONL_MAX_RAW);
        k = resolve_path(p, req.path, PATH_FOLLOW_FINAL, &r, err);
        if (k < 0)
                return k;
        if (!r.exists)
                return io_error(err, -ENOENT, r.path);
        _cleanup_close_ int fd = open_regular(&r, &st, err);
        if (fd < 0)
                return fd;
        _cleanup_strbuf_ StrBuf win = STRBUF_INIT;
        Window w = { .offset = req.offset, .limit = limit, .start_line = req.start_line,
                     .max_lines = req.max_lines, .line = 1, .data = &win };
        k = hash_and_window(fd, hex, &w);
        if (k < 0)
                return io_error(err, k, r.path);
        ProtocolReadFileReply rep = {
                .size = (uint64_t) st.st_size,
                .sha256 = hex,
                .offset = w.start,
                .eof = w.start + win.len >= (uint64_t) st.st_size,
                .start_line = w.first_line,
        };
        /* Hashing read the file as it is now; report that size. */
        return protocol_encode_read_file_reply(out, req.head.id, &rep, win.data ? win.data : "", win.len);
}

static int hash_existing(const Resolved *r, char hex[SHA256_HEX_LEN + 1], VsError **err) {
        struct stat st;
        _cleanup_close_ int fd = open_regular(r, &st, err);
        if (fd < 0)
                return fd;
        int k = hash_and_window(fd, hex, NULL);
        if (k < 0)
                return io_error(err, k, r->path);
        return 0;
}

/* The file is still the one with sha256 want: hashed again right before
 * the rename, after the new content is written and synced, so that a writer
 * outside the lock (a process in the jail, the host) that changed it while
 * the caller computed its edit, or while this write ran, is not overwritten.
 * What is left is the time from this hash to the rename (microseconds for
 * a small file): Linux has no rename that compares content. */
static int precondition_holds(const Resolved *r, const char *want, VsError **err) {
        char hex[SHA256_HEX_LEN + 1];
        _cleanup_(vs_error_freep) VsError *why = NULL;
        int k = hash_existing(r, hex, &why);
        if (k == -ENOMEM)
                return vs_error_set(err, k, "%s: out of memory", r->path);
        if (k < 0)
                return vs_error_set_kind(err, -ESTALE, "precondition_failed", "%s: changed (%s)", r->path,
                                         vs_error_message(why));
        if (!streq(hex, want))
                return vs_error_set_kind(err, -ESTALE, "precondition_failed", "%s: content changed (sha256 %s)",
                                         r->path, hex);
        return 0;
}

/* The rename; must_be_new (if_sha256 ""): never over a file, also one made
 * after the check above (RENAME_NOREPLACE; a filesystem without it gets
 * the check again right before a plain rename). */
static int replace(const Resolved *r, const char *tmp, bool must_be_new, VsError **err) {
        if (must_be_new) {
                if (syscall(SYS_renameat2, r->dir_fd, tmp, r->dir_fd, r->name, RENAME_NOREPLACE) == 0)
                        return 0;
                if (errno == EEXIST)
                        return vs_error_set_kind(err, -EEXIST, "precondition_failed", "%s: exists", r->path);
                if (errno != EINVAL && errno != ENOSYS)
                        return io_error(err, negative_errno(), r->path);
                struct stat st;
                if (fstatat(r->dir_fd, r->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return vs_error_set_kind(err, -EEXIST, "precondition_failed", "%s: exists", r->path);
        }
        return renameat(r->dir_fd, tmp, r->dir_fd, r->name) < 0 ? io_error(err, negative_errno(), r->path) : 0;
}

static void temp_name(char name[static 32], const uint8_t rnd[6]) {
        static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        char suffix[7];
        for (size_t i = 0; i < 6; i++)
                suffix[i] = chars[rnd[i] % (sizeof chars - 1)];
        suffix[6] = 0;
        snprintf(name, 32, ".vectora-tmp-%s", suffix);
}

/* The temporary file, locked before it has a name: made with O_TMPFILE,
 * locked, then linked under a free name. The lock is held until the
 * write ends: a sweeper (sweep.c) that can take it knows the writer died.
 * A file made with a name first was opened and locked by a process in the
 * jail the moment it appeared (inotify; it is the jail's uid's file), and
 * the worker's flock() then waited, serving nothing else and timing out
 * no command, for as long as that process chose. -EOPNOTSUPP: the
 * filesystem has no O_TMPFILE (or /proc is not there to link it). */
static int temp_open_unnamed(int dirfd, char name[static 32]) {
        _cleanup_close_ int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
                return errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL ? -EOPNOTSUPP : negative_errno();
        (void) flock(fd, LOCK_EX); /* nobody else has it: never waits */
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        for (int attempt = 0; attempt < 100; attempt++) {
                uint8_t rnd[6];
                if (getrandom(rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
                        return negative_errno();
                temp_name(name, rnd);
                if (linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) == 0)
                        return TAKE_FD(fd);
                if (errno == ENOENT)
                        return -EOPNOTSUPP;
                if (errno != EEXIST)
                        return negative_errno();
        }
        return -EEXIST;
}

static int temp_open(int dirfd, char name[static 32]) {
        int fd = temp_open_unnamed(dirfd, name);
        if (fd != -EOPNOTSUPP)
                return fd;
        for (int attempt = 0; attempt < 100; attempt++) {
                uint8_t rnd[6];
                if (getrandom(rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
                        return negative_errno();
                temp_name(name, rnd);
                fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0 && errno != EEXIST)
                        return negative_errno();
                if (fd < 0)
                        continue;
                /* Never waited for (see above): a holder gets the file
                 * removed and another name is taken. A filesystem without
                 * locks: written without, as before. */
                if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
                        return fd;
                (void) unlinkat(dirfd, name, 0);
                safe_close(fd);
        }
        return -EEXIST;
}

/* Writers in one directory take turns from the precondition check to the
 * rename: two workers (two embedded calls, each in its own jail) editing
 * one file would otherwise both pass the sha256 check and one edit would be
 * lost. The lock is advisory and anything in the jail can hold it, so it
 * is waited for briefly only (LOCK_WAIT_MS). 0: held; -EWOULDBLOCK: still
 * held by another after the wait; another negative errno: the filesystem
 * has no locks (nothing to wait for). */
#define LOCK_WAIT_MS 2000
static int dir_lock(int dir_fd) {
        for (unsigned waited = 0;; waited += 5) {
                if (flock(dir_fd, LOCK_EX | LOCK_NB) == 0)
                        return 0;
                if (errno == EINTR)
                        continue;
                if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
                        return -errno;
                (void) nanosleep(&(struct timespec){ .tv_nsec = 5 * 1000 * 1000 }, NULL);
        }
}

int fileops_write_file(const Policy *p, json_t *obj, const char *data, size_t len, StrBuf *out,
                       VsError **err) {
        ProtocolWriteFileRequest req;
        _cleanup_(resolved_done) Resolved r = RESOLVED_INIT;
        char tmp[32];
        struct stat st;
        int k;

        k = protocol_decode_write_file_request(obj, &req, err);
        if (k < 0)
                return k;
        unsigned flags = PATH_WRITE | PATH_FOLLOW_FINAL | (req.create_parents ? PATH_CREATE_PARENTS : 0);
        k = resolve_path(p, req.path, flags, &r, err);
        if (k < 0)
                return k;

        /* Released when r.dir_fd closes, after the rename. A plain write
         * promises nothing about what it replaces: it goes ahead without the
         * lock; a conditional one is refused, and the caller reads again. */
        k = dir_lock(r.dir_fd);
        if (k == -EWOULDBLOCK && req.if_sha256)
                return vs_error_set_kind(err, k, "precondition_failed",
                                         "%s: another writer holds its directory's lock", r.path);

        bool exists = r.exists && fstatat(r.dir_fd, r.name, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (exists && S_ISDIR(st.st_mode))
                return io_error(err, -EISDIR, r.path);
        if (exists && !S_ISREG(st.st_mode))
                return vs_error_set_kind(err, -EINVAL, "bad_request", "%s: not a regular file", r.path);
        /* The cheap refusals first; the content is compared just before
         * the rename (precondition_holds). */
        if (req.if_sha256 && !req.if_sha256[0] && exists)
                return vs_error_set_kind(err, -EEXIST, "precondition_failed", "%s: exists", r.path);
        if (req.if_sha256 && req.if_sha256[0] && !exists)
                return vs_error_set_kind(err, -ENOENT, "precondition_failed", "%s: does not exist", r.path);

        mode_t mode;
        if (req.has_mode)
                mode = (mode_t) req.mode;
        else if (exists)
                mode = st.st_mode & 07777;
        else {
                /* Read by setting one with S_IWOTH (the filter refuses a
                 * umask without it), then put back. */
                mode_t um = umask(S_IWOTH);
                umask(um);
                mode = 0666 & ~um;
        }

        _cleanup_close_ int fd = temp_open(r.dir_fd, tmp);
        if (fd < 0)
                return io_error(err, fd, r.path);
        k = write_all(fd, data, len);
        if (k >= 0 && fchmod(fd, mode) < 0)
                k = negative_errno();
        if (k >= 0 && exists && (st.st_uid != geteuid() || st.st_gid != getegid()))
                (void) !fchown(fd, st.st_uid, st.st_gid); /* best effort: keep the owner */
        if (k >= 0 && fsync(fd) < 0)
                k = negative_errno();
        if (k < 0) {
                unlinkat(r.dir_fd, tmp, 0);
                return io_error(err, k, r.path);
        }
        /* Both set err themselves. */
        if (req.if_sha256 && req.if_sha256[0])
                k = precondition_holds(&r, req.if_sha256, err);
        if (k >= 0)
                k = replace(&r, tmp, req.if_sha256 && !req.if_sha256[0], err);
        if (k < 0) {
                unlinkat(r.dir_fd, tmp, 0);
                return k;
        }
        /* The rename is durable only once the directory is. */
        if (fsync(r.dir_fd) < 0)
                return io_error(err, negative_errno(), r.path);

        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(data, len, hex);
        ProtocolWriteFileReply rep = { .size = len, .sha256 = hex, .created = !exists };
        return protocol_encode_write_file_reply(out, req.head.id, &rep);
}

int fileops_stat(const Policy *p, json_t *obj, StrBuf *out, VsError **err) {
        ProtocolPathRequest req;
        _cleanup_(resolved_done) Resolved r = RESOLVED_INIT;
        struct stat st;
        int k;

        k = protocol_decode_stat_request(obj, &req, err);
        if (k < 0)
                return k;
        k = resolve_path(p, req.path, 0, &r, err);
        if (k < 0)
                return k;
        if (fstatat(r.dir_fd, r.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return io_error(err, negative_errno(), r.path);
        ProtocolStatReply rep = {
                .type = protocol_file_type_from_mode(st.st_mode),
                .size = (uint64_t) st.st_size,
                .mode = st.st_mode & 07777,
                .mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
        };
        return protocol_encode_stat_reply(out, req.head.id, &rep);
}

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const ProtocolDirEntry *) a)->name, ((const ProtocolDirEntry *) b)->name);
}

int fileops_list_dir(const Policy *p, json_t *obj, StrBuf *out, VsError **err) {
        ProtocolListDirRequest req;
        _cleanup_(resolved_done) Resolved r = RESOLVED_INIT;
        ProtocolDirEntry *entries = NULL;
        size_t n = 0, cap = 0;
        int k;

        k = protocol_decode_list_dir_request(obj, &req, err);
        if (k < 0)
                return k;
        k = resolve_path(p, req.path, PATH_FOLLOW_FINAL, &r, err);
        if (k < 0)
                return k;
        int fd = openat(r.dir_fd, r.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return io_error(err, negative_errno(), r.path);
        DIR *d = fdopendir(fd);
        if (!d) {
                k = negative_errno();
                safe_close(fd);
                return io_error(err, k, r.path);
        }

        struct dirent *de;
        k = 0;
        while ((errno = 0, de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                /* One fstatat per entry: the size is what a listing is
                 * for, and it gives the type d_type may not. */
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile */
                ProtocolFileType t = protocol_file_type_from_mode(st.st_mode);
                char *child = NULL;
                if (asprintf(&child, "%s/%s", streq(r.path, "/") ? "" : r.path, de->d_name) < 0) {
                        k = -ENOMEM;
                        break;
                }
                bool masked = policy_is_masked(p, child, t == PROTOCOL_FILE_DIR);
                free(child);
                if (masked)
                        continue;
                if (n == cap) {
                        size_t nc = cap ? cap * 2 : 64;
                        ProtocolDirEntry *ne = realloc(entries, nc * sizeof *ne);
                        if (!ne) {
                                k = -ENOMEM;
                                break;
                        }
                        entries = ne;
                        cap = nc;
                }
                char *name = strdup(de->d_name);
                if (!name) {
                        k = -ENOMEM;
                        break;
                }
                entries[n++] = (ProtocolDirEntry) { .name = name, .type = t, .size = (uint64_t) st.st_size };
        }
        if (k == 0 && errno != 0)
                k = negative_errno();
        closedir(d);
        if (k == 0) {
                if (n)
                        qsort(entries, n, sizeof *entries, entry_cmp);
                /* Sorted first, then cut: the same call shows the same
                 * entries. */
                bool cut = req.max_entries && n > req.max_entries;
                ProtocolListDirReply rep = { .entries = entries, .n_entries = cut ? (size_t) req.max_entries : n,
                                             .total = n, .truncated = cut };
                k = protocol_encode_list_dir_reply(out, req.head.id, &rep);
                if (k < 0)
                        vs_error_set(err, k, "%s: cannot encode the reply", r.path);
        } else
                io_error(err, k, r.path);
        for (size_t i = 0; i < n; i++)
                free((char *) entries[i].name);
        free(entries);
        return k;
}
