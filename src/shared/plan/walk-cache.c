/* SPDX-License-Identifier: MIT */
#include "walk-cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "path-util.h"
#include "sha256.h"
#include "time-util.h"

/* The file: MAGIC, the key, the number of records, the records, and the
 * SHA-256 (hex) of all that. Integers in the host's byte order (the file
 * never leaves the host). A record: dev, ino (u64), mtime (i64 s, u32 ns),
 * ctime (the same), rel (u32 length, bytes), the subdirectories (u32
 * count, each u32 length and bytes), the matches (u32 count, each u8 lane,
 * u8 kind, u32 length, bytes; lane 2, the git names, has kind 0). */
/* 02: a third lane (WALK_CACHE_LANE_GIT) and one file per root for the
 * masks, the protect globs and the git scan together; a 01 file (two
 * walks' records, each under its own key) is another key now and is never
 * read. */
static const char MAGIC[8] = { 'V', 'S', 'W', 'A', 'L', 'K', '0', '3' };
#define NAME_MAX_LEN 255

void walk_cache_key(const char *root, char *const *lists[], size_t n_lists, uint8_t key[WALK_CACHE_KEY_LEN]) {
        Sha256 s;
        char hex[SHA256_HEX_LEN + 1];
        sha256_begin(&s);
        sha256_feed(&s, MAGIC, sizeof MAGIC);
        sha256_feed(&s, root, strlen(root) + 1);
        for (size_t i = 0; i < n_lists; i++) {
                for (char *const *p = lists[i]; p && *p; p++)
                        sha256_feed(&s, *p, strlen(*p) + 1);
                sha256_feed(&s, "\n", 2); /* the end of one list: ("a","") differs from ("","a") */
        }
        sha256_end_hex(&s, hex);
        for (size_t i = 0; i < WALK_CACHE_KEY_LEN; i++) {
                unsigned v;
                sscanf(hex + 2 * i, "%2x", &v);
                key[i] = (uint8_t)v;
        }
}

void walk_cache_dir_done(WalkCacheDir *d) {
        if (!d)
                return;
        free(d->rel);
        for (size_t i = 0; i < d->n_sub; i++)
                free(d->subdirs[i]);
        free(d->subdirs);
        for (size_t i = 0; i < d->n_match; i++)
                free(d->matches[i].name);
        free(d->matches);
        *d = (WalkCacheDir){ 0 };
}

void walk_cache_done(WalkCache *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                walk_cache_dir_done(&c->dirs[i]);
        free(c->dirs);
        free(c->table);
        uint8_t key[WALK_CACHE_KEY_LEN];
        memcpy(key, c->key, sizeof key);
        *c = (WalkCache){ 0 };
        memcpy(c->key, key, sizeof key);
}

int walk_cache_dir_add_sub(WalkCacheDir *d, const char *name) {
        char **n = realloc(d->subdirs, (d->n_sub + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        d->subdirs = n;
        if (!(n[d->n_sub] = strdup(name)))
                return -ENOMEM;
        d->n_sub++;
        return 0;
}

int walk_cache_dir_add_match(WalkCacheDir *d, unsigned lane, unsigned kind, const char *name) {
        WalkCacheMatch *n = realloc(d->matches, (d->n_match + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        d->matches = n;
        n[d->n_match] = (WalkCacheMatch){ .lane = (uint8_t)lane, .kind = (uint8_t)kind, .name = strdup(name) };
        if (!n[d->n_match].name)
                return -ENOMEM;
        d->n_match++;
        return 0;
}

void walk_cache_take(WalkCacheDir *src, WalkCacheDir *ret) {
        /* The record moves; its slot in the old cache is found no more
         * (walk_cache_find skips a slot without rel). */
        *ret = *src;
        *src = (WalkCacheDir){ 0 };
}

int walk_cache_add(WalkCache *c, WalkCacheDir *d) {
        if (c->n == c->cap) {
                size_t ncap = c->cap ? c->cap * 2 : 64;
                WalkCacheDir *n = realloc(c->dirs, ncap * sizeof *n);
                if (!n)
                        return -ENOMEM;
                c->dirs = n;
                c->cap = ncap;
        }
        c->dirs[c->n++] = *d;
        *d = (WalkCacheDir){ 0 };
        return 0;
}

static uint64_t hash_str(const char *s) {
        uint64_t h = 0xcbf29ce484222325u;
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 0x100000001b3u;
        return h;
}

int walk_cache_index(WalkCache *c) {
        free(c->table);
        c->table = NULL;
        size_t size = 16;
        while (size < c->n * 2)
                size *= 2;
        if (!(c->table = malloc(size * sizeof *c->table)))
                return -ENOMEM;
        c->table_size = size;
        for (size_t i = 0; i < size; i++)
                c->table[i] = SIZE_MAX;
        for (size_t i = 0; i < c->n; i++) {
                size_t h = hash_str(c->dirs[i].rel) & (size - 1);
                while (c->table[h] != SIZE_MAX) {
                        if (streq(c->dirs[c->table[h]].rel, c->dirs[i].rel))
                                return -EBADMSG; /* a directory twice: not a file this code wrote */
                        h = (h + 1) & (size - 1);
                }
                c->table[h] = i;
        }
        return 0;
}

WalkCacheDir *walk_cache_find(const WalkCache *c, const char *rel) {
        if (!c || !c->table)
                return NULL;
        for (size_t h = hash_str(rel) & (c->table_size - 1); c->table[h] != SIZE_MAX; h = (h + 1) & (c->table_size - 1))
                if (c->dirs[c->table[h]].rel && streq(c->dirs[c->table[h]].rel, rel))
                        return &c->dirs[c->table[h]];
        return NULL;
}

bool walk_cache_dir_matches(const WalkCacheDir *d, const struct stat *st) {
        return S_ISDIR(st->st_mode) && d->dev == (uint64_t)st->st_dev && d->ino == (uint64_t)st->st_ino &&
               d->mtime_sec == (int64_t)st->st_mtim.tv_sec && d->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec &&
               d->ctime_sec == (int64_t)st->st_ctim.tv_sec && d->ctime_nsec == (uint32_t)st->st_ctim.tv_nsec;
}

bool walk_cache_racy(const struct stat *st, int64_t walk_start_s) {
        return (int64_t)st->st_ctim.tv_sec >= walk_start_s - WALK_CACHE_RACY_S ||
               (int64_t)st->st_mtim.tv_sec >= walk_start_s - WALK_CACHE_RACY_S;
}

/* ---- parsing: every length checked against what is left ---- */

typedef struct Reader {
        const uint8_t *p;
        size_t left;
} Reader;

static bool take(Reader *r, void *out, size_t n) {
        if (r->left < n)
                return false;
        memcpy(out, r->p, n);
        r->p += n;
        r->left -= n;
        return true;
}

/* A name the walk may hand to openat(): one component, no NUL. */
static bool name_ok(const char *s, size_t n) {
        return n > 0 && n <= NAME_MAX_LEN && !memchr(s, '/', n) && !memchr(s, 0, n) &&
               !(s[0] == '.' && (n == 1 || (n == 2 && s[1] == '.')));
}

static bool rel_ok(const char *s, size_t n) {
        if (n == 0)
                return true;
        if (n >= PATH_MAX || memchr(s, 0, n))
                return false;
        for (size_t i = 0; i < n;) {
                const char *e = memchr(s + i, '/', n - i);
                size_t len = e ? (size_t)(e - (s + i)) : n - i;
                if (!name_ok(s + i, len))
                        return false;
                i += len + 1;
                if (e && i == n)
                        return false; /* a trailing slash */
        }
        return true;
}

static char *take_str(Reader *r, size_t max, bool is_name) {
        uint32_t n;
        if (!take(r, &n, sizeof n) || n > max || r->left < n)
                return NULL;
        const char *s = (const char *)r->p;
        if (is_name ? !name_ok(s, n) : !rel_ok(s, n))
                return NULL;
        char *out = strndup(s, n);
        if (out) {
                r->p += n;
                r->left -= n;
        }
        return out;
}

static int parse_dir(Reader *r, WalkCacheDir *d) {
        uint32_t n_sub, n_match;
        if (!take(r, &d->dev, 8) || !take(r, &d->ino, 8) || !take(r, &d->mtime_sec, 8) || !take(r, &d->mtime_nsec, 4) ||
            !take(r, &d->ctime_sec, 8) || !take(r, &d->ctime_nsec, 4))
                return -EBADMSG;
        if (d->mtime_nsec >= 1000000000u || d->ctime_nsec >= 1000000000u)
                return -EBADMSG;
        if (!(d->rel = take_str(r, PATH_MAX - 1, false)))
                return -EBADMSG;
        /* Each entry takes 5 bytes or more: a count past that is a lie. */
        if (!take(r, &n_sub, 4) || n_sub > r->left / 5)
                return -EBADMSG;
        if (n_sub && !(d->subdirs = calloc(n_sub, sizeof(char *))))
                return -ENOMEM;
        for (; d->n_sub < n_sub; d->n_sub++)
                if (!(d->subdirs[d->n_sub] = take_str(r, NAME_MAX_LEN, true)))
                        return -EBADMSG;
        if (!take(r, &n_match, 4) || n_match > r->left / 7)
                return -EBADMSG;
        if (n_match && !(d->matches = calloc(n_match, sizeof *d->matches)))
                return -ENOMEM;
        for (; d->n_match < n_match; d->n_match++) {
                WalkCacheMatch *m = &d->matches[d->n_match];
                if (!take(r, &m->lane, 1) || !take(r, &m->kind, 1) || m->lane > WALK_CACHE_LANE_GIT || m->kind > 3 ||
                    (m->lane == WALK_CACHE_LANE_GIT && m->kind != 0) ||
                    !(m->name = take_str(r, NAME_MAX_LEN, true)))
                        return -EBADMSG;
        }
        return 0;
}

int walk_cache_parse(const void *buf, size_t len, const uint8_t key[WALK_CACHE_KEY_LEN], WalkCache *ret) {
        WalkCache c = { 0 };
        memcpy(c.key, key, WALK_CACHE_KEY_LEN);
        *ret = c;
        if (len < sizeof MAGIC + WALK_CACHE_KEY_LEN + 8 + SHA256_HEX_LEN)
                return -EBADMSG;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(buf, len - SHA256_HEX_LEN, hex);
        if (memcmp(hex, (const uint8_t *)buf + len - SHA256_HEX_LEN, SHA256_HEX_LEN) != 0)
                return -EBADMSG;
        Reader r = { buf, len - SHA256_HEX_LEN };
        uint8_t magic[sizeof MAGIC], k[WALK_CACHE_KEY_LEN];
        uint64_t n;
        if (!take(&r, magic, sizeof magic) || memcmp(magic, MAGIC, sizeof MAGIC) != 0 || !take(&r, k, sizeof k) ||
            memcmp(k, key, sizeof k) != 0 || !take(&r, &n, 8) || n > r.left / 48)
                return -EBADMSG;
        int rr = 0;
        for (uint64_t i = 0; rr >= 0 && i < n; i++) {
                WalkCacheDir d = { 0 };
                if ((rr = parse_dir(&r, &d)) >= 0)
                        rr = walk_cache_add(&c, &d);
                walk_cache_dir_done(&d);
        }
        if (rr >= 0 && r.left != 0)
                rr = -EBADMSG;
        if (rr >= 0)
                rr = walk_cache_index(&c);
        if (rr < 0) {
                walk_cache_done(&c);
                return rr == -ENOMEM ? rr : -EBADMSG;
        }
        *ret = c;
        return 0;
}

/* ---- writing ---- */

typedef struct Writer {
        uint8_t *buf;
        size_t len, cap;
        bool failed;
} Writer;

static void put(Writer *w, const void *p, size_t n) {
        if (w->failed)
                return;
        if (w->len + n > w->cap) {
                size_t ncap = MAX(w->cap * 2, w->len + n + 4096);
                uint8_t *b = realloc(w->buf, ncap);
                if (!b) {
                        w->failed = true;
                        return;
                }
                w->buf = b;
                w->cap = ncap;
        }
        memcpy(w->buf + w->len, p, n);
        w->len += n;
}

static void put_str(Writer *w, const char *s) {
        uint32_t n = (uint32_t)strlen(s);
        put(w, &n, 4);
        put(w, s, n);
}

int walk_cache_serialize(const WalkCache *c, uint8_t **ret, size_t *ret_len) {
        Writer w = { 0 };
        uint64_t n = c->n;
        put(&w, MAGIC, sizeof MAGIC);
        put(&w, c->key, WALK_CACHE_KEY_LEN);
        put(&w, &n, 8);
        for (size_t i = 0; i < c->n; i++) {
                const WalkCacheDir *d = &c->dirs[i];
                put(&w, &d->dev, 8);
                put(&w, &d->ino, 8);
                put(&w, &d->mtime_sec, 8);
                put(&w, &d->mtime_nsec, 4);
                put(&w, &d->ctime_sec, 8);
                put(&w, &d->ctime_nsec, 4);
                put_str(&w, d->rel);
                uint32_t k = (uint32_t)d->n_sub;
                put(&w, &k, 4);
                for (size_t j = 0; j < d->n_sub; j++)
                        put_str(&w, d->subdirs[j]);
                k = (uint32_t)d->n_match;
                put(&w, &k, 4);
                for (size_t j = 0; j < d->n_match; j++) {
                        put(&w, &d->matches[j].lane, 1);
                        put(&w, &d->matches[j].kind, 1);
                        put_str(&w, d->matches[j].name);
                }
        }
        char hex[SHA256_HEX_LEN + 1];
        if (!w.failed)
                sha256_hex(w.buf, w.len, hex);
        put(&w, hex, SHA256_HEX_LEN);
        if (w.failed) {
                free(w.buf);
                return -ENOMEM;
        }
        *ret = w.buf;
        *ret_len = w.len;
        return 0;
}

/* ---- the file ---- */

bool walk_cache_changed(const WalkCache *old, const WalkCache *fresh, size_t n_read) {
        /* Nothing read: each fresh record is a copy of an old one, and
         * as many means all of them. */
        return n_read > 0 || fresh->n != old->n;
}

static char *file_name(const char *dir, const uint8_t key[WALK_CACHE_KEY_LEN]) {
        char name[2 * 16 + 1];
        for (size_t i = 0; i < 16; i++)
                snprintf(name + 2 * i, 3, "%02x", key[i]);
        return path_join(dir, name);
}

int walk_cache_load(const char *dir, const uint8_t key[WALK_CACHE_KEY_LEN], WalkCache *ret) {
        *ret = (WalkCache){ 0 };
        memcpy(ret->key, key, WALK_CACHE_KEY_LEN);
        _cleanup_free_ char *p = file_name(dir, key);
        if (!p)
                return -ENOMEM;
        _cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        /* Only a file of the daemon's own, written by it (0600) counts. */
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
            st.st_size > (off_t)1 << 31)
                return 0;
        size_t len = (size_t)st.st_size;
        _cleanup_free_ uint8_t *buf = malloc(len ? len : 1);
        if (!buf)
                return -ENOMEM;
        size_t got = 0;
        while (got < len) {
                ssize_t k = read(fd, buf + got, len - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return 0;
                got += (size_t)k;
        }
        int r = walk_cache_parse(buf, len, key, ret);
        return r == -ENOMEM ? r : 0;
}

int walk_cache_save(const char *dir, const WalkCache *c) {
        _cleanup_free_ char *p = file_name(dir, c->key), *tmp = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        if (!p || asprintf(&tmp, "%s.XXXXXX", p) < 0)
                return -ENOMEM;
        int r = walk_cache_serialize(c, &buf, &len);
        if (r < 0)
                return r;
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* No fsync: a cache lost in a crash costs one full walk, and a
         * torn one fails its checksum. */
        r = write_all(fd, buf, len);
        if (r >= 0 && fchmod(fd, 0600) < 0)
                r = -errno;
        safe_close(fd);
        if (r >= 0 && rename(tmp, p) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

/* A temp file this old is a save a crash or a kill interrupted. */
#define STALE_TEMP_S (60 * 60)

/* Once at start: files of another format (the key hashes MAGIC in, so a
 * daemon of this format never reads or rewrites an older one's, which
 * would stay for good) and temp files a crash left. Everything in the
 * directory is the daemon's own; nothing here is followed. */
static void sweep(int dfd) {
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        WalkDirReader rd;
        if (walk_dir_reader_open(&rd, fd) < 0) {
                safe_close(fd);
                return;
        }
        const char *name;
        unsigned char type;
        time_t now = now_wall().tv_sec;
        while (walk_dir_reader_next(&rd, &name, &type) > 0) {
                struct stat st;
                if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
                    st.st_uid != geteuid())
                        continue;
                bool drop;
                if (strchr(name, '.'))
                        drop = now - st.st_mtime > STALE_TEMP_S;
                else {
                        char magic[sizeof MAGIC];
                        _cleanup_close_ int f = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                        drop = f >= 0 && (read(f, magic, sizeof magic) != (ssize_t)sizeof magic ||
                                          memcmp(magic, MAGIC, sizeof MAGIC) != 0);
                }
                if (drop)
                        (void)unlinkat(dfd, name, 0);
        }
        walk_dir_reader_close(&rd);
}

int walk_cache_use_init(WalkCacheUse *u, const char *state_dir) {
        _cleanup_free_ char *d = path_join(state_dir, "walk-cache");
        if (!d)
                return -ENOMEM;
        if (mkdir(d, 0700) < 0 && errno != EEXIST)
                return -errno;
        struct stat st;
        if (lstat(d, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
                return -EPERM; /* not the daemon's own: no cache */
        _cleanup_close_ int dfd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd >= 0 && fstat(dfd, &st) >= 0 && st.st_uid == geteuid() && !(st.st_mode & 077))
                sweep(dfd);
        free(u->dir);
        u->dir = TAKE_PTR(d);
        return 0;
}

void walk_cache_use_done(WalkCacheUse *u) {
        if (!u)
                return;
        free(u->dir);
        u->dir = NULL;
}

#define READER_BUF (32u << 10)

int walk_dir_reader_open(WalkDirReader *d, int fd) {
        *d = (WalkDirReader){ .fd = fd, .buf = malloc(READER_BUF) };
        return d->buf ? 0 : -ENOMEM;
}

int walk_dir_reader_next(WalkDirReader *d, const char **ret_name, unsigned char *ret_type) {
        for (;;) {
                if (d->pos >= d->len) {
                        ssize_t n = getdents64(d->fd, d->buf, READER_BUF);
                        if (n < 0)
                                return -errno;
                        if (n == 0)
                                return 0;
                        d->pos = 0;
                        d->len = (size_t)n;
                }
                /* The kernel's struct linux_dirent64: d_ino, d_off, d_reclen,
                 * d_type, d_name. */
                struct dirent64 *de = (struct dirent64 *)(void *)(d->buf + d->pos);
                d->pos += de->d_reclen;
                const char *name = de->d_name;
                if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
                        continue;
                *ret_name = name;
                *ret_type = de->d_type;
                return 1;
        }
}

void walk_dir_reader_close(WalkDirReader *d) {
        safe_close(d->fd);
        d->fd = -EBADF;
        free(d->buf);
        d->buf = NULL;
}
