/* SPDX-License-Identifier: MIT */
#include "undo-manifest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

bool undo_path_valid(const char *path) {
        if (!path || !*path)
                return false;
        size_t total = strlen(path);
        if (total > UNDO_PATH_MAX)
                return false;
        const char *c = path;
        for (;;) {
                size_t len = strcspn(c, "/");
                if (len == 0 || len > UNDO_NAME_MAX || (len == 1 && c[0] == '.') ||
                    (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[len])
                        return true;
                c += len + 1;
        }
}

static bool hash_valid(const char *h) {
        if (!h || strlen(h) != SHA256_HEX_LEN)
                return false;
        for (const char *p = h; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static bool type_known(int t) {
        return t == UNDO_ABSENT || t == UNDO_FILE || t == UNDO_DIR || t == UNDO_SYMLINK || t == UNDO_MASKED ||
               t == UNDO_TOO_BIG || t == UNDO_OTHER || t == UNDO_LOST;
}

/* What each type carries, and nothing else: a hash for a file only, a
 * target for a symlink only, no mode or size where there is none. */
static bool fields_fit(UndoType type, uint32_t mode, uint64_t size, const char *hash, const char *target) {
        if (mode > 07777 || (type == UNDO_FILE) != (hash != NULL) || (type == UNDO_SYMLINK) != (target != NULL))
                return false;
        if (hash && !hash_valid(hash))
                return false;
        if (target && (!*target || strlen(target) > UNDO_PATH_MAX))
                return false;
        switch (type) {
        case UNDO_ABSENT:
        case UNDO_SYMLINK:
        case UNDO_LOST:
                return mode == 0 && size == 0;
        case UNDO_DIR:
                return size == 0;
        default:
                return true;
        }
}

/* FNV-1a: the table only spreads paths, nothing depends on its secrecy
 * (a crafted manifest makes lookups slower, not wrong; entries are capped). */
static size_t path_hash(const char *p) {
        uint64_t h = 1469598103934665603u;
        for (; *p; p++)
                h = (h ^ (uint8_t)*p) * 1099511628211u;
        return (size_t)h;
}

static int table_grow(UndoManifest *m) {
        size_t size = m->table_size ? m->table_size * 2 : 64;
        size_t *t = calloc(size, sizeof *t);
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < m->n; i++) {
                size_t k = path_hash(m->entries[i].path) & (size - 1);
                while (t[k])
                        k = (k + 1) & (size - 1);
                t[k] = i + 1;
        }
        free(m->table);
        m->table = t;
        m->table_size = size;
        return 0;
}

const UndoEntry *undo_manifest_find(const UndoManifest *m, const char *path) {
        if (!m->table_size)
                return NULL;
        for (size_t k = path_hash(path) & (m->table_size - 1); m->table[k]; k = (k + 1) & (m->table_size - 1))
                if (streq(m->entries[m->table[k] - 1].path, path))
                        return &m->entries[m->table[k] - 1];
        return NULL;
}

bool undo_manifest_has(const UndoManifest *m, const char *path) {
        return undo_manifest_find(m, path) != NULL;
}

int undo_manifest_add(UndoManifest *m, const char *path, UndoType type, uint32_t mode, uint64_t size,
                      const char *hash, const char *target) {
        if (!undo_path_valid(path) || !type_known((int)type) || !fields_fit(type, mode, size, hash, target))
                return -EINVAL;
        if (m->n >= UNDO_ENTRIES_MAX)
                return -E2BIG;
        if (undo_manifest_has(m, path))
                return -EEXIST;
        if ((m->n + 1) * 2 > m->table_size) {
                int r = table_grow(m);
                if (r < 0)
                        return r;
        }
        if (m->n == m->cap) {
                size_t cap = m->cap ? m->cap * 2 : 16;
                UndoEntry *e = realloc(m->entries, cap * sizeof *e);
                if (!e)
                        return -ENOMEM;
                m->entries = e;
                m->cap = cap;
        }
        UndoEntry e = { .type = type, .mode = mode, .size = size };
        e.path = strdup(path);
        e.target = target ? strdup(target) : NULL;
        if (!e.path || (target && !e.target)) {
                free(e.path);
                free(e.target);
                return -ENOMEM;
        }
        if (hash)
                memcpy(e.hash, hash, SHA256_HEX_LEN + 1);
        m->entries[m->n++] = e;
        size_t k = path_hash(path) & (m->table_size - 1);
        while (m->table[k])
                k = (k + 1) & (m->table_size - 1);
        m->table[k] = m->n;
        return 0;
}

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const UndoEntry *)a)->path, ((const UndoEntry *)b)->path);
}

void undo_manifest_sort(UndoManifest *m) {
        if (m->n < 2)
                return;
        qsort(m->entries, m->n, sizeof *m->entries, entry_cmp);
        /* The indices moved: rebuild the table at its size (cannot fail). */
        memset(m->table, 0, m->table_size * sizeof *m->table);
        for (size_t i = 0; i < m->n; i++) {
                size_t k = path_hash(m->entries[i].path) & (m->table_size - 1);
                while (m->table[k])
                        k = (k + 1) & (m->table_size - 1);
                m->table[k] = i + 1;
        }
}

int undo_manifest_set_label(UndoManifest *m, const char *label) {
        if (label && strlen(label) > UNDO_LABEL_MAX)
                return -EINVAL;
        char *l = label ? strdup(label) : NULL;
        if (label && !l)
                return -ENOMEM;
        free(m->label);
        m->label = l;
        return 0;
}

void undo_manifest_done(UndoManifest *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++) {
                free(m->entries[i].path);
                free(m->entries[i].target);
        }
        free(m->entries);
        free(m->table);
        free(m->label);
        *m = (UndoManifest){ 0 };
}

/* ---- the file ---- */

static int put_escaped(StrBuf *b, const char *s) {
        if (!s || !*s)
                return strbuf_appends(b, "-");
        if (streq(s, "-"))
                return strbuf_appends(b, "%2D");
        for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
                int r = (*p < 0x21 || *p > 0x7e || *p == '%') ? strbuf_appendf(b, "%%%02X", *p)
                                                                  : strbuf_appendc(b, (char)*p);
                if (r < 0)
                        return r;
        }
        return 0;
}

int undo_manifest_serialize(UndoManifest *m, char **ret, size_t *ret_len) {
        undo_manifest_sort(m);
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        int r = strbuf_appendf(&b, "vsundo 1\nseq %" PRIu64 "\ntime %" PRId64 "\nlabel ", m->seq, m->time_us);
        if (r >= 0)
                r = put_escaped(&b, m->label);
        if (r >= 0)
                r = strbuf_appendc(&b, '\n');
        for (size_t i = 0; r >= 0 && i < m->n; i++) {
                const UndoEntry *e = &m->entries[i];
                r = strbuf_appendf(&b, "e %c %04o %" PRIu64 " %s ", (char)e->type, (unsigned)e->mode, e->size,
                                   e->hash[0] ? e->hash : "-");
                if (r >= 0)
                        r = put_escaped(&b, e->path);
                if (r >= 0)
                        r = strbuf_appendc(&b, ' ');
                if (r >= 0)
                        r = put_escaped(&b, e->target);
                if (r >= 0)
                        r = strbuf_appendc(&b, '\n');
        }
        if (r < 0)
                return r;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(b.data, b.len, hex);
        r = strbuf_appendf(&b, "end %s\n", hex);
        if (r < 0)
                return r;
        size_t len = b.len;
        char *out = strbuf_steal(&b);
        if (!out)
                return -ENOMEM;
        *ret = out;
        *ret_len = len;
        return 0;
}

/* ---- parsing: every field checked, anything out of place refuses the whole file ---- */

typedef struct Cursor {
        const char *p, *end;
} Cursor;

/* The next line without its '\n' (which must be there), or false. */
static bool next_line(Cursor *c, const char **ret, size_t *ret_len) {
        const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
        if (!nl)
                return false;
        *ret = c->p;
        *ret_len = (size_t)(nl - c->p);
        c->p = nl + 1;
        return true;
}

/* The next field of a line (split by one space): false when none is left. */
static bool next_field(const char **line, const char *end, const char **ret, size_t *ret_len) {
        if (*line > end)
                return false;
        const char *sp = memchr(*line, ' ', (size_t)(end - *line));
        const char *stop = sp ? sp : end;
        *ret = *line;
        *ret_len = (size_t)(stop - *line);
        *line = sp ? sp + 1 : end + 1;
        return *ret_len > 0;
}

static bool field_is(const char *f, size_t len, const char *word) {
        return len == strlen(word) && memcmp(f, word, len) == 0;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Unescapes into a new string; "-" is NULL (an empty field). Refuses a
 * byte the writer would have escaped, a NUL, a bad or lowercase escape
 * (one text, one spelling: a parsed manifest written again is the same
 * bytes). */
static int unescape(const char *f, size_t len, size_t max, char **ret) {
        *ret = NULL;
        if (field_is(f, len, "-"))
                return 0;
        _cleanup_free_ char *s = malloc(len + 1);
        if (!s)
                return -ENOMEM;
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                uint8_t ch = (uint8_t)f[i];
                if (ch == '%') {
                        if (len - i < 3)
                                return -EBADMSG;
                        int hi = hexval(f[i + 1]), lo = hexval(f[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -EBADMSG;
                        ch = (uint8_t)(hi * 16 + lo);
                        /* Only what the writer escapes: a byte outside
                         * 0x21..0x7e, '%', and the '-' of a field that is "-". */
                        bool lone_dash = ch == '-' && len == 3;
                        if (ch == 0 || (ch >= 0x21 && ch <= 0x7e && ch != '%' && !lone_dash))
                                return -EBADMSG;
                        i += 2;
                } else if (ch < 0x21 || ch > 0x7e)
                        return -EBADMSG;
                s[o++] = (char)ch;
        }
        s[o] = 0;
        if (o > max)
                return -EBADMSG;
        *ret = TAKE_PTR(s);
        return 0;
}

/* A decimal u64 with no sign, no leading zero (but "0"), no overflow. */
static bool parse_u64(const char *f, size_t len, uint64_t *ret) {
        if (len == 0 || len > 20 || (len > 1 && f[0] == '0'))
                return false;
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++) {
                if (f[i] < '0' || f[i] > '9')
                        return false;
                unsigned d = (unsigned)(f[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return false;
                v = v * 10 + d;
        }
        *ret = v;
        return true;
}

/* "%04o" as the writer prints it: exactly four octal digits, at most 07777. */
static bool parse_mode(const char *f, size_t len, uint32_t *ret) {
        if (len != 4)
                return false;
        uint32_t v = 0;
        for (size_t i = 0; i < 4; i++) {
                if (f[i] < '0' || f[i] > '7')
                        return false;
                v = v * 8 + (uint32_t)(f[i] - '0');
        }
        *ret = v;
        return true;
}

static int parse_entry(UndoManifest *m, const char *line, size_t len, const char **prev) {
        const char *end = line + len, *f[8];
        size_t fl[8];
        size_t n = 0;
        if (len == 0 || line[len - 1] == ' ')
                return -EBADMSG; /* one spelling: no trailing separator */
        while (n < 8 && next_field(&line, end, &f[n], &fl[n]))
                n++;
        if (n != 7 || line <= end || !field_is(f[0], fl[0], "e") || fl[1] != 1 || !type_known(f[1][0]))
                return -EBADMSG;
        UndoType type = (UndoType)f[1][0];
        uint32_t mode;
        uint64_t size;
        if (!parse_mode(f[2], fl[2], &mode) || !parse_u64(f[3], fl[3], &size))
                return -EBADMSG;
        char hash[SHA256_HEX_LEN + 1] = "";
        if (!field_is(f[4], fl[4], "-")) {
                if (fl[4] != SHA256_HEX_LEN)
                        return -EBADMSG;
                memcpy(hash, f[4], SHA256_HEX_LEN);
                hash[SHA256_HEX_LEN] = 0;
                if (!hash_valid(hash))
                        return -EBADMSG; /* a NUL in it would read as no hash */
        }
        _cleanup_free_ char *path = NULL, *target = NULL;
        int r = unescape(f[5], fl[5], UNDO_PATH_MAX, &path);
        if (r < 0)
                return r;
        r = unescape(f[6], fl[6], UNDO_PATH_MAX, &target);
        if (r < 0)
                return r;
        if (!path || (*prev && strcmp(*prev, path) >= 0))
                return -EBADMSG; /* strictly ascending: sorted, no duplicate */
        r = undo_manifest_add(m, path, type, mode, size, hash[0] ? hash : NULL, target);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return -EBADMSG;
        *prev = m->entries[m->n - 1].path;
        return 0;
}

static int parse_body(const char *buf, size_t len, UndoManifest *m) {
        Cursor c = { buf, buf + len };
        const char *line, *f, *at, *prev = NULL;
        size_t ll, flen;
        if (!next_line(&c, &line, &ll) || !field_is(line, ll, "vsundo 1"))
                return -EBADMSG;
        if (!next_line(&c, &line, &ll) || ll < 5 || memcmp(line, "seq ", 4) != 0 ||
            !parse_u64(line + 4, ll - 4, &m->seq) || m->seq == 0)
                return -EBADMSG;
        uint64_t t;
        if (!next_line(&c, &line, &ll) || ll < 6 || memcmp(line, "time ", 5) != 0 || !parse_u64(line + 5, ll - 5, &t) ||
            t > (uint64_t)INT64_MAX)
                return -EBADMSG;
        m->time_us = (int64_t)t;
        if (!next_line(&c, &line, &ll) || ll < 7 || memcmp(line, "label ", 6) != 0)
                return -EBADMSG;
        at = line + 6;
        if (!next_field(&at, line + ll, &f, &flen) || at <= line + ll)
                return -EBADMSG;
        int r = unescape(f, flen, UNDO_LABEL_MAX, &m->label);
        if (r < 0)
                return r;
        for (;;) {
                const char *start = c.p;
                if (!next_line(&c, &line, &ll))
                        return -EBADMSG;
                if (ll >= 4 && memcmp(line, "end ", 4) == 0) {
                        if (ll != 4 + SHA256_HEX_LEN || c.p != c.end)
                                return -EBADMSG;
                        char hex[SHA256_HEX_LEN + 1];
                        sha256_hex(buf, (size_t)(start - buf), hex);
                        return memcmp(hex, line + 4, SHA256_HEX_LEN) == 0 ? 0 : -EBADMSG;
                }
                r = parse_entry(m, line, ll, &prev);
                if (r < 0)
                        return r;
        }
}

int undo_manifest_parse(const char *buf, size_t len, UndoManifest *ret) {
        *ret = (UndoManifest){ 0 };
        int r = parse_body(buf, len, ret);
        if (r < 0) {
                undo_manifest_done(ret);
                return r == -ENOMEM ? r : -EBADMSG;
        }
        return 0;
}
