/* SPDX-License-Identifier: MIT */
/* TOML 1.0.0 parser.
 *
 * One pass over the input after a first pass that validates UTF-8 and
 * rejects control characters (they are invalid everywhere in TOML except tab
 * and CRLF/LF, so checking them once up front keeps the lexer simple).
 *
 * Redefinition rules follow the spec and toml-test: every table node carries
 * how it came to exist (implicitly by a header path, explicitly by a header,
 * by dotted keys in a given [section], or frozen as an inline table or a
 * static array). Dotted-key tables become closed once their section ends.
 *
 * Values nest at most TOML_MAX_DEPTH deep; the value parser recurses only
 * into arrays and inline tables, so the stack use is bounded by that limit. */
#include "toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "strbuf.h"

enum {
        NODE_EXPLICIT = 1 << 0, /* table defined by [header] or an [[header]] element */
        NODE_DOTTED = 1 << 1,   /* table made or extended by dotted keys in node->section */
        NODE_FROZEN = 1 << 2,   /* inline table or static array: closed for good */
        NODE_AOT = 1 << 3,      /* array made by [[header]] */
};

/* Every value is allocated as a TomlNode; callers only see the TomlValue. */
typedef struct TomlNode {
        TomlValue v; /* first member */
        size_t cap;  /* allocated items of a table or an array */
        uint32_t *index; /* table key index: open addressing, item + 1, 0 = free */
        size_t index_cap; /* power of two, or 0 while the table is small */
        unsigned section;
        unsigned depth;
        unsigned flags;
} TomlNode;

#define INDEX_MIN_ITEMS 16

static TomlNode *node_of(TomlValue *v) {
        return (TomlNode *)v;
}

const char *toml_type_name(TomlType t) {
        switch (t) {
        case TOML_TABLE:
                return "table";
        case TOML_ARRAY:
                return "array";
        case TOML_STRING:
                return "string";
        case TOML_INTEGER:
                return "integer";
        case TOML_FLOAT:
                return "float";
        case TOML_BOOL:
                return "boolean";
        case TOML_DATETIME:
                return "offset date-time";
        case TOML_DATETIME_LOCAL:
                return "local date-time";
        case TOML_DATE_LOCAL:
                return "local date";
        case TOML_TIME_LOCAL:
                return "local time";
        }
        return "unknown";
}

void toml_free(TomlValue *v) {
        if (!v)
                return;
        TomlNode *n = node_of(v);
        switch (v->type) {
        case TOML_TABLE:
                for (size_t i = 0; i < v->table.n; i++) {
                        free(v->table.items[i].key);
                        toml_free(v->table.items[i].value);
                }
                free(v->table.items);
                free(n->index);
                break;
        case TOML_ARRAY:
                for (size_t i = 0; i < v->array.n; i++)
                        toml_free(v->array.items[i]);
                free(v->array.items);
                break;
        case TOML_STRING:
                free(v->string.ptr);
                break;
        case TOML_DATETIME:
        case TOML_DATETIME_LOCAL:
        case TOML_DATE_LOCAL:
        case TOML_TIME_LOCAL:
                free(v->datetime);
                break;
        default:
                break;
        }
        free(n);
}

static TomlNode *node_new(TomlType type, unsigned line, unsigned col, unsigned depth) {
        TomlNode *n = calloc(1, sizeof *n);
        if (!n)
                return NULL;
        n->v.type = type;
        n->v.line = line;
        n->v.col = col;
        n->depth = depth;
        return n;
}

/* ---- table index ---- */

/* FNV-1a with a per-table seed (the table's address, so it differs between
 * runs under ASLR) and a final avalanche, so crafted keys cannot easily pile
 * into one bucket. */
static uint64_t key_hash(const TomlNode *t, const char *key, size_t len) {
        uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ULL);
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)key[i];
                h *= 0x100000001b3ULL;
        }
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        return h;
}

static bool key_eq(const TomlKeyValue *kv, const char *key, size_t len) {
        return kv->key_len == len && memcmp(kv->key, key, len) == 0;
}

static void index_put(TomlNode *t, size_t item) {
        const TomlKeyValue *kv = &t->v.table.items[item];
        size_t mask = t->index_cap - 1;
        size_t i = key_hash(t, kv->key, kv->key_len) & mask;
        while (t->index[i])
                i = (i + 1) & mask;
        t->index[i] = (uint32_t)item + 1;
}

static int index_rebuild(TomlNode *t, size_t want) {
        size_t cap = INDEX_MIN_ITEMS * 2;
        while (cap < want * 2)
                cap *= 2;
        uint32_t *idx = calloc(cap, sizeof *idx);
        if (!idx)
                return -ENOMEM;
        free(t->index);
        t->index = idx;
        t->index_cap = cap;
        for (size_t i = 0; i < t->v.table.n; i++)
                index_put(t, i);
        return 0;
}

static TomlKeyValue *table_find(const TomlNode *t, const char *key, size_t len) {
        TomlKeyValue *items = t->v.table.items;
        if (!t->index) {
                for (size_t i = 0; i < t->v.table.n; i++)
                        if (key_eq(&items[i], key, len))
                                return &items[i];
                return NULL;
        }
        size_t mask = t->index_cap - 1;
        for (size_t i = key_hash(t, key, len) & mask; t->index[i]; i = (i + 1) & mask) {
                TomlKeyValue *kv = &items[t->index[i] - 1];
                if (key_eq(kv, key, len))
                        return kv;
        }
        return NULL;
}

/* Takes ownership of key and value on success only. */
static int table_add(TomlNode *t, char *key, size_t len, unsigned line, unsigned col, TomlValue *value) {
        size_t n = t->v.table.n;
        if (n == t->cap) {
                size_t ncap = t->cap ? t->cap * 2 : 4;
                TomlKeyValue *items = reallocarray(t->v.table.items, ncap, sizeof *items);
                if (!items)
                        return -ENOMEM;
                t->v.table.items = items;
                t->cap = ncap;
        }
        if (n + 1 >= INDEX_MIN_ITEMS && (n + 1) * 2 > t->index_cap) {
                int r = index_rebuild(t, n + 1);
                if (r < 0)
                        return r;
        }
        t->v.table.items[n] = (TomlKeyValue){
                .key = key, .key_len = len, .line = line, .col = col, .value = value,
        };
        t->v.table.n = n + 1;
        if (t->index)
                index_put(t, n);
        return 0;
}

static int array_add(TomlNode *a, TomlValue *value) {
        size_t n = a->v.array.n;
        if (n == a->cap) {
                size_t ncap = a->cap ? a->cap * 2 : 4;
                TomlValue **items = reallocarray(a->v.array.items, ncap, sizeof *items);
                if (!items)
                        return -ENOMEM;
                a->v.array.items = items;
                a->cap = ncap;
        }
        a->v.array.items[n] = value;
        a->v.array.n = n + 1;
        return 0;
}

const TomlKeyValue *toml_table_get(const TomlValue *t, const char *key) {
        if (!t || !key || t->type != TOML_TABLE)
                return NULL;
        return table_find((const TomlNode *)t, key, strlen(key));
}

/* ---- parser state and errors ---- */

typedef struct Key {
        char *s;
        size_t len;
        unsigned line, col;
} Key;

typedef struct KeyPath {
        Key *k;
        size_t n, cap;
} KeyPath;

/* Adds a copy of key k with value v (owned by the table on success only). */
static int table_add_key(TomlNode *t, const Key *k, TomlValue *v) {
        char *s = malloc(k->len + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, k->s, k->len);
        s[k->len] = 0;
        int r = table_add(t, s, k->len, k->line, k->col, v);
        if (r < 0)
                free(s);
        return r;
}

static void keypath_done(KeyPath *kp) {
        for (size_t i = 0; i < kp->n; i++)
                free(kp->k[i].s);
        free(kp->k);
        *kp = (KeyPath){};
}

typedef struct Parser {
        const char *p, *end;
        const char *line_start;
        unsigned line;
        unsigned section; /* bumped by every [header] and [[header]] */
        TomlNode *root, *cur;
        VsError **err;
} Parser;

static unsigned pcol(const Parser *p) {
        return (unsigned)(p->p - p->line_start) + 1;
}

_printf_(5, 6) static int fail(Parser *p, int code, unsigned line, unsigned col, const char *fmt, ...) {
        char msg[768];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        return vs_error_set(p->err, code, "%u:%u: %s", line, col, msg);
}

#define fail_here(p, code, ...) fail((p), (code), (p)->line, pcol(p), __VA_ARGS__)

static int fail_oom(Parser *p) {
        return fail_here(p, -ENOMEM, "out of memory");
}

static int fail_depth(Parser *p, unsigned line, unsigned col) {
        return fail(p, -E2BIG, line, col, "nesting deeper than %d levels", TOML_MAX_DEPTH);
}

/* What the parser is looking at, for messages. */
static const char *describe(const Parser *p, char buf[static 24]) {
        if (p->p >= p->end)
                return "end of input";
        unsigned char c = (unsigned char)*p->p;
        if (c == '\n' || c == '\r')
                return "end of line";
        if (c > 0x20 && c < 0x7f)
                snprintf(buf, 24, "'%c'", c);
        else if (c == ' ' || c == '\t')
                return "whitespace";
        else
                snprintf(buf, 24, "byte 0x%02x", c);
        return buf;
}

static bool is_bare(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
}

/* Appends a key as written in TOML: bare if possible, quoted otherwise;
 * long keys are cut, since this is only for messages. */
static void append_key(StrBuf *b, const char *s, size_t len) {
        bool bare = len > 0;
        for (size_t i = 0; i < len && bare; i++)
                bare = is_bare((unsigned char)s[i]);
        size_t shown = MIN(len, (size_t)64);
        if (bare) {
                (void)strbuf_append(b, s, shown);
        } else {
                (void)strbuf_appendc(b, '"');
                for (size_t i = 0; i < shown; i++) {
                        unsigned char c = (unsigned char)s[i];
                        if (c == '"' || c == '\\')
                                (void)strbuf_appendf(b, "\\%c", c);
                        else if (c < 0x20 || c == 0x7f)
                                (void)strbuf_appendf(b, "\\u%04X", c);
                        else
                                (void)strbuf_appendc(b, (char)c);
                }
                if (shown == len)
                        (void)strbuf_appendc(b, '"');
        }
        if (shown < len)
                (void)strbuf_appends(b, "...");
}

/* The dotted path kp->k[0..upto] as text (static storage for messages). */
static const char *path_text(const KeyPath *kp, size_t upto, StrBuf *b) {
        strbuf_clear(b);
        for (size_t i = 0; i <= upto && i < kp->n && b->len < 256; i++) {
                if (i > 0)
                        (void)strbuf_appendc(b, '.');
                append_key(b, kp->k[i].s, kp->k[i].len);
        }
        return b->data ? b->data : "?";
}

/* ---- input validation ---- */

/* Rejects invalid UTF-8 (overlongs, surrogates, > U+10FFFF, truncation),
 * control characters other than tab, and CR not followed by LF. */
static int validate_text(Parser *p) {
        const unsigned char *s = (const unsigned char *)p->p, *e = (const unsigned char *)p->end;
        const unsigned char *ls = s;
        unsigned line = 1;
        for (const unsigned char *q = s; q < e;) {
                unsigned char c = *q;
                unsigned col = (unsigned)(q - ls) + 1;
                if (c < 0x80) {
                        if (c == '\n') {
                                line++;
                                ls = ++q;
                                continue;
                        }
                        if (c == '\r') {
                                if (q + 1 < e && q[1] == '\n') {
                                        q++;
                                        continue;
                                }
                                return fail(p, -EINVAL, line, col, "carriage return not followed by line feed");
                        }
                        if ((c < 0x20 && c != '\t') || c == 0x7f)
                                return fail(p, -EINVAL, line, col, "control character U+%04X is not allowed", c);
                        q++;
                        continue;
                }
                size_t need;
                uint32_t cp, min;
                if (c >= 0xc2 && c <= 0xdf) {
                        need = 1, cp = c & 0x1f, min = 0x80;
                } else if (c >= 0xe0 && c <= 0xef) {
                        need = 2, cp = c & 0x0f, min = 0x800;
                } else if (c >= 0xf0 && c <= 0xf4) {
                        need = 3, cp = c & 0x07, min = 0x10000;
                } else
                        return fail(p, -EINVAL, line, col, "invalid UTF-8 (byte 0x%02x)", c);
                if ((size_t)(e - q) <= need)
                        return fail(p, -EINVAL, line, col, "invalid UTF-8 (truncated sequence)");
                for (size_t i = 1; i <= need; i++) {
                        if ((q[i] & 0xc0) != 0x80)
                                return fail(p, -EINVAL, line, col, "invalid UTF-8 (byte 0x%02x)", q[i]);
                        cp = (cp << 6) | (q[i] & 0x3f);
                }
                if (cp < min)
                        return fail(p, -EINVAL, line, col, "invalid UTF-8 (overlong encoding)");
                if (cp >= 0xd800 && cp <= 0xdfff)
                        return fail(p, -EINVAL, line, col, "invalid UTF-8 (encoded surrogate U+%04X)", cp);
                if (cp > 0x10ffff)
                        return fail(p, -EINVAL, line, col, "invalid UTF-8 (code point beyond U+10FFFF)");
                q += need + 1;
        }
        return 0;
}

/* ---- lexing helpers ---- */

static bool at_eof(const Parser *p) {
        return p->p >= p->end;
}

static bool at(const Parser *p, char c) {
        return p->p < p->end && *p->p == c;
}

/* Bare CR was rejected up front, so CR here always starts CRLF. */
static bool at_newline(const Parser *p) {
        return p->p < p->end && (*p->p == '\n' || *p->p == '\r');
}

static void eat_newline(Parser *p) {
        if (*p->p == '\r')
                p->p++;
        p->p++;
        p->line++;
        p->line_start = p->p;
}

static void skip_ws(Parser *p) {
        while (p->p < p->end && (*p->p == ' ' || *p->p == '\t'))
                p->p++;
}

static void skip_comment(Parser *p) {
        if (at(p, '#'))
                while (p->p < p->end && !at_newline(p))
                        p->p++;
}

static void skip_ws_comments_newlines(Parser *p) {
        for (;;) {
                skip_ws(p);
                skip_comment(p);
                if (!at_newline(p))
                        return;
                eat_newline(p);
        }
}

static bool starts(const Parser *p, const char *s) {
        size_t n = strlen(s);
        return (size_t)(p->end - p->p) >= n && memcmp(p->p, s, n) == 0;
}

static int sb_err(Parser *p, int r) {
        return r == -ENOMEM ? fail_oom(p) : fail_here(p, -E2BIG, "string too long");
}

static int append_utf8(StrBuf *b, uint32_t cp) {
        char u[4];
        size_t n;
        if (cp < 0x80) {
                u[0] = (char)cp, n = 1;
        } else if (cp < 0x800) {
                u[0] = (char)(0xc0 | (cp >> 6));
                u[1] = (char)(0x80 | (cp & 0x3f));
                n = 2;
        } else if (cp < 0x10000) {
                u[0] = (char)(0xe0 | (cp >> 12));
                u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[2] = (char)(0x80 | (cp & 0x3f));
                n = 3;
        } else {
                u[0] = (char)(0xf0 | (cp >> 18));
                u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[3] = (char)(0x80 | (cp & 0x3f));
                n = 4;
        }
        return strbuf_append(b, u, n);
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* ---- strings ---- */

/* At a backslash inside a basic string. */
static int parse_escape(Parser *p, bool multiline, StrBuf *out) {
        unsigned line = p->line, col = pcol(p);
        p->p++; /* backslash */
        if (at_eof(p))
                return fail(p, -EINVAL, line, col, "unterminated string");
        char c = *p->p;
        const char *simple = NULL;
        switch (c) {
        case 'b': simple = "\b"; break;
        case 't': simple = "\t"; break;
        case 'n': simple = "\n"; break;
        case 'f': simple = "\f"; break;
        case 'r': simple = "\r"; break;
        case '"': simple = "\""; break;
        case '\\': simple = "\\"; break;
        default: break;
        }
        if (simple) {
                p->p++;
                int r = strbuf_appendc(out, *simple);
                return r < 0 ? sb_err(p, r) : 0;
        }
        if (c == 'u' || c == 'U') {
                size_t n = c == 'u' ? 4 : 8;
                p->p++;
                uint32_t cp = 0;
                for (size_t i = 0; i < n; i++) {
                        int h = p->p + i < p->end ? hexval(p->p[i]) : -1;
                        if (h < 0)
                                return fail(p, -EINVAL, line, col,
                                            "escape \\%c needs exactly %zu hexadecimal digits", c, n);
                        cp = (cp << 4) | (uint32_t)h;
                }
                if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                        return fail(p, -EINVAL, line, col,
                                    "escape \\%c%.*s is not a Unicode scalar value", c, (int)n, p->p);
                p->p += n;
                int r = append_utf8(out, cp);
                return r < 0 ? sb_err(p, r) : 0;
        }
        if (multiline && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
                /* Line-ending backslash: only whitespace may follow it on its line. */
                skip_ws(p);
                if (!at_newline(p))
                        return fail(p, -EINVAL, line, col,
                                    "a line-ending backslash must be followed only by whitespace");
                for (;;) {
                        skip_ws(p);
                        if (!at_newline(p))
                                break;
                        eat_newline(p);
                }
                return 0;
        }
        if ((unsigned char)c > 0x20 && (unsigned char)c < 0x7f)
                return fail(p, -EINVAL, line, col, "invalid escape sequence '\\%c'", c);
        return fail(p, -EINVAL, line, col, "invalid escape sequence");
}

/* At the opening quote(s). Fills out with the decoded content. */
static int parse_string(Parser *p, StrBuf *out) {
        unsigned line = p->line, col = pcol(p);
        char q = *p->p;
        bool literal = q == '\'';
        bool multiline = starts(p, literal ? "'''" : "\"\"\"");
        int r;

        out->max = TOML_MAX_INPUT;
        /* strbuf_reserve() does not write the terminating NUL, and an empty
         * string must still come out as "" */
        if (!out->data) {
                if ((r = strbuf_reserve(out, 0)) < 0)
                        return sb_err(p, r);
                strbuf_clear(out);
        }
        p->p += multiline ? 3 : 1;
        if (multiline && at_newline(p))
                eat_newline(p); /* a newline right after the delimiter is trimmed */

        for (;;) {
                if (at_eof(p))
                        return fail(p, -EINVAL, line, col, "unterminated string");
                char c = *p->p;
                if (c == q) {
                        if (!multiline) {
                                p->p++;
                                return 0;
                        }
                        size_t n = 0;
                        while (p->p + n < p->end && p->p[n] == q)
                                n++;
                        if (n >= 3) {
                                /* Up to two quotes may sit right before the closing delimiter. */
                                if (n > 5)
                                        return fail(p, -EINVAL, p->line, pcol(p) + 3,
                                                    "three quotes in a row end the string here; escape them");
                                if ((r = strbuf_append(out, p->p, n - 3)) < 0)
                                        return sb_err(p, r);
                                p->p += n;
                                return 0;
                        }
                        if ((r = strbuf_append(out, p->p, n)) < 0)
                                return sb_err(p, r);
                        p->p += n;
                        continue;
                }
                if (at_newline(p)) {
                        if (!multiline)
                                return fail(p, -EINVAL, line, col, "unterminated string (newline before the closing quote)");
                        eat_newline(p);
                        if ((r = strbuf_appendc(out, '\n')) < 0)
                                return sb_err(p, r);
                        continue;
                }
                if (c == '\\' && !literal) {
                        if ((r = parse_escape(p, multiline, out)) < 0)
                                return r;
                        continue;
                }
                /* Copy a run of ordinary bytes at once. */
                const char *s = p->p;
                while (p->p < p->end && *p->p != q && *p->p != '\n' && *p->p != '\r' &&
                       (literal || *p->p != '\\'))
                        p->p++;
                if ((r = strbuf_append(out, s, (size_t)(p->p - s))) < 0)
                        return sb_err(p, r);
        }
}

/* ---- keys ---- */

static int parse_simple_key(Parser *p, Key *ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];

        if (at(p, '"') || at(p, '\'')) {
                if (starts(p, "\"\"\"") || starts(p, "'''"))
                        return fail_here(p, -EINVAL, "a key cannot be a multi-line string");
                _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
                int r = parse_string(p, &b);
                if (r < 0)
                        return r;
                size_t len = b.len;
                *ret = (Key){ .s = strbuf_steal(&b), .len = len, .line = line, .col = col };
                return 0;
        }
        const char *s = p->p;
        while (p->p < p->end && is_bare((unsigned char)*p->p))
                p->p++;
        if (p->p == s)
                return fail_here(p, -EINVAL, "expected a key, found %s", describe(p, buf));
        char *k = strndup(s, (size_t)(p->p - s));
        if (!k)
                return fail_oom(p);
        *ret = (Key){ .s = k, .len = (size_t)(p->p - s), .line = line, .col = col };
        return 0;
}

/* Parses a possibly dotted key, with whitespace around the dots. */
static int parse_key(Parser *p, KeyPath *kp) {
        for (;;) {
                skip_ws(p);
                if (kp->n >= TOML_MAX_DEPTH)
                        return fail_depth(p, p->line, pcol(p));
                if (kp->n == kp->cap) {
                        size_t ncap = kp->cap ? kp->cap * 2 : 4;
                        Key *k = reallocarray(kp->k, ncap, sizeof *k);
                        if (!k)
                                return fail_oom(p);
                        kp->k = k;
                        kp->cap = ncap;
                }
                int r = parse_simple_key(p, &kp->k[kp->n]);
                if (r < 0)
                        return r;
                kp->n++;
                skip_ws(p);
                if (!at(p, '.'))
                        return 0;
                p->p++;
        }
}

/* ---- scalar values ---- */

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static int digit_in_base(char c, int base) {
        int v = hexval(c);
        return v >= 0 && v < base ? v : -1;
}

/* Reads DIGIT ('_'? DIGIT)* from s; returns where it stopped (s if no digit).
 * An underscore not between two digits is left unread, so the caller sees it. */
static const char *scan_digits(const char *s, const char *e, int base) {
        if (s >= e || digit_in_base(*s, base) < 0)
                return s;
        s++;
        for (;;) {
                if (s < e && digit_in_base(*s, base) >= 0)
                        s++;
                else if (s + 1 < e && *s == '_' && digit_in_base(s[1], base) >= 0)
                        s += 2;
                else
                        return s;
        }
}

static int parse_number(Parser *p, unsigned line, unsigned col, TomlNode **ret) {
        const char *s = p->p, *e = s;
        /* The token: sign, alphanumerics, '_', '.', and a sign right after an exponent 'e'. */
        if (e < p->end && (*e == '+' || *e == '-'))
                e++;
        while (e < p->end) {
                char c = *e;
                if (is_bare((unsigned char)c) || c == '.' ||
                    ((c == '+' || c == '-') && (e[-1] == 'e' || e[-1] == 'E')))
                        e++;
                else
                        break;
        }
        int tlen = (int)MIN(e - s, 64);
        const char *q = s;
        bool neg = false, sign = false;
        if (*q == '+' || *q == '-') {
                neg = *q == '-';
                sign = true;
                q++;
        }

        if (e - q == 3 && (memcmp(q, "inf", 3) == 0 || memcmp(q, "nan", 3) == 0)) {
                TomlNode *n = node_new(TOML_FLOAT, line, col, 0);
                if (!n)
                        return fail_oom(p);
                n->v.floating = q[0] == 'i' ? INFINITY : NAN;
                if (neg)
                        n->v.floating = -n->v.floating;
                p->p = e;
                *ret = n;
                return 0;
        }

        if (e - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'o' || q[1] == 'b')) {
                int base = q[1] == 'x' ? 16 : q[1] == 'o' ? 8 : 2;
                if (sign)
                        return fail(p, -EINVAL, line, col, "a sign is not allowed on %s integer",
                                    base == 16 ? "a hexadecimal" : base == 8 ? "an octal" : "a binary");
                const char *d = q + 2, *de = scan_digits(d, e, base);
                if (de == d || de != e)
                        return fail(p, -EINVAL, line, col, "invalid %s integer '%.*s'",
                                    base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary", tlen, s);
                uint64_t x = 0;
                for (; d < de; d++) {
                        if (*d == '_')
                                continue;
                        uint64_t dv = (uint64_t)digit_in_base(*d, base);
                        if (x > ((uint64_t)INT64_MAX - dv) / (uint64_t)base)
                                return fail(p, -EINVAL, line, col, "integer '%.*s' does not fit in 64 bits", tlen, s);
                        x = x * (uint64_t)base + dv;
                }
                TomlNode *n = node_new(TOML_INTEGER, line, col, 0);
                if (!n)
                        return fail_oom(p);
                n->v.integer = (int64_t)x;
                p->p = e;
                *ret = n;
                return 0;
        }

        /* Decimal integer or float: int-part [ '.' digits ] [ e [sign] digits ] */
        const char *ie = scan_digits(q, e, 10);
        if (ie == q)
                return fail(p, -EINVAL, line, col, "invalid number '%.*s'", tlen, s);
        if (q[0] == '0' && ie - q > 1)
                return fail(p, -EINVAL, line, col, "leading zeros are not allowed in '%.*s'", tlen, s);
        const char *t = ie;
        bool is_float = false;
        if (t < e && *t == '.') {
                const char *fe = scan_digits(t + 1, e, 10);
                if (fe == t + 1)
                        return fail(p, -EINVAL, line, col, "a decimal point must be followed by digits in '%.*s'", tlen, s);
                t = fe;
                is_float = true;
        }
        if (t < e && (*t == 'e' || *t == 'E')) {
                const char *x = t + 1;
                if (x < e && (*x == '+' || *x == '-'))
                        x++;
                const char *xe = scan_digits(x, e, 10);
                if (xe == x)
                        return fail(p, -EINVAL, line, col, "an exponent needs digits in '%.*s'", tlen, s);
                t = xe;
                is_float = true;
        }
        if (t != e) {
                if (*t == '_' || t[-1] == '_')
                        return fail(p, -EINVAL, line, col, "an underscore must sit between two digits in '%.*s'", tlen, s);
                return fail(p, -EINVAL, line, col, "invalid number '%.*s'", tlen, s);
        }

        if (is_float) {
                /* strtod on a copy without underscores; TOML floats use '.'
                 * whatever the locale, and the programs never call setlocale(). */
                _cleanup_free_ char *clean = malloc((size_t)(e - s) + 1);
                if (!clean)
                        return fail_oom(p);
                size_t k = 0;
                for (const char *c = s; c < e; c++)
                        if (*c != '_')
                                clean[k++] = *c;
                clean[k] = 0;
                char *endp;
                errno = 0;
                double d = strtod(clean, &endp);
                if (*endp != 0)
                        return fail(p, -EINVAL, line, col, "invalid float '%.*s'", tlen, s);
                if (isinf(d))
                        return fail(p, -EINVAL, line, col, "float '%.*s' is out of range", tlen, s);
                TomlNode *n = node_new(TOML_FLOAT, line, col, 0);
                if (!n)
                        return fail_oom(p);
                n->v.floating = d;
                p->p = e;
                *ret = n;
                return 0;
        }

        uint64_t x = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (const char *d = q; d < ie; d++) {
                if (*d == '_')
                        continue;
                uint64_t dv = (uint64_t)(*d - '0');
                if (x > (lim - dv) / 10)
                        return fail(p, -EINVAL, line, col, "integer '%.*s' does not fit in 64 bits", tlen, s);
                x = x * 10 + dv;
        }
        TomlNode *n = node_new(TOML_INTEGER, line, col, 0);
        if (!n)
                return fail_oom(p);
        n->v.integer = neg ? (int64_t)(0 - x) : (int64_t)x;
        p->p = e;
        *ret = n;
        return 0;
}

/* Reads exactly n digits at *s; -1 if not there. */
static int fixed_digits(const char **s, const char *e, size_t n) {
        int v = 0;
        if ((size_t)(e - *s) < n)
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit((*s)[i]))
                        return -1;
                v = v * 10 + ((*s)[i] - '0');
        }
        *s += n;
        return v;
}

static bool is_leap(int y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* HH:MM:SS[.frac] at *s. */
static int scan_time(Parser *p, const char **s, const char *e, unsigned line, unsigned col) {
        const char *t = *s;
        int h = fixed_digits(&t, e, 2);
        if (h < 0 || t >= e || *t != ':')
                return fail(p, -EINVAL, line, col, "invalid time: expected HH:MM:SS");
        t++;
        int m = fixed_digits(&t, e, 2);
        if (m < 0 || t >= e || *t != ':')
                return fail(p, -EINVAL, line, col, "invalid time: expected HH:MM:SS (seconds are required)");
        t++;
        int sec = fixed_digits(&t, e, 2);
        if (sec < 0)
                return fail(p, -EINVAL, line, col, "invalid time: expected HH:MM:SS");
        if (h > 23 || m > 59 || sec > 60)
                return fail(p, -EINVAL, line, col, "invalid time %02d:%02d:%02d: out of range", h, m, sec);
        if (t < e && *t == '.') {
                t++;
                if (t >= e || !is_digit(*t))
                        return fail(p, -EINVAL, line, col, "invalid time: a '.' must be followed by digits");
                while (t < e && is_digit(*t))
                        t++;
        }
        *s = t;
        return 0;
}

static int parse_datetime(Parser *p, unsigned line, unsigned col, TomlNode **ret) {
        const char *s = p->p, *t = s, *e = p->end;
        TomlType type;
        int r;

        if (e - s >= 3 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':') {
                if ((r = scan_time(p, &t, e, line, col)) < 0)
                        return r;
                type = TOML_TIME_LOCAL;
        } else {
                int y = fixed_digits(&t, e, 4);
                if (y < 0 || t >= e || *t != '-')
                        return fail(p, -EINVAL, line, col, "invalid date: expected YYYY-MM-DD");
                t++;
                int mo = fixed_digits(&t, e, 2);
                if (mo < 0 || t >= e || *t != '-')
                        return fail(p, -EINVAL, line, col, "invalid date: expected YYYY-MM-DD");
                t++;
                int d = fixed_digits(&t, e, 2);
                if (d < 0)
                        return fail(p, -EINVAL, line, col, "invalid date: expected YYYY-MM-DD");
                static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
                if (mo < 1 || mo > 12)
                        return fail(p, -EINVAL, line, col, "invalid date: month %02d is out of range", mo);
                int dim = mdays[mo - 1] + (mo == 2 && is_leap(y));
                if (d < 1 || d > dim)
                        return fail(p, -EINVAL, line, col, "invalid date: day %02d is out of range for %04d-%02d",
                                    d, y, mo);
                type = TOML_DATE_LOCAL;
                /* 'T' or a space followed by a digit starts the time. */
                if (t < e && (*t == 'T' || *t == 't' || (*t == ' ' && t + 1 < e && is_digit(t[1])))) {
                        t++;
                        if ((r = scan_time(p, &t, e, line, col)) < 0)
                                return r;
                        type = TOML_DATETIME_LOCAL;
                        if (t < e && (*t == 'Z' || *t == 'z')) {
                                t++;
                                type = TOML_DATETIME;
                        } else if (t < e && (*t == '+' || *t == '-')) {
                                t++;
                                int oh = fixed_digits(&t, e, 2);
                                if (oh < 0 || t >= e || *t != ':')
                                        return fail(p, -EINVAL, line, col, "invalid time offset: expected +HH:MM");
                                t++;
                                int om = fixed_digits(&t, e, 2);
                                if (om < 0)
                                        return fail(p, -EINVAL, line, col, "invalid time offset: expected +HH:MM");
                                if (oh > 23 || om > 59)
                                        return fail(p, -EINVAL, line, col, "invalid time offset: out of range");
                                type = TOML_DATETIME;
                        }
                }
        }
        if (t < e && (is_bare((unsigned char)*t) || *t == '.' || *t == ':' || *t == '+'))
                return fail(p, -EINVAL, line, col, "invalid date-time '%.*s'", (int)MIN(t - s + 1, 64), s);

        char *text = strndup(s, (size_t)(t - s));
        if (!text)
                return fail_oom(p);
        if (type == TOML_DATETIME || type == TOML_DATETIME_LOCAL)
                text[10] = 'T';
        if (type == TOML_DATETIME && text[t - s - 1] == 'z')
                text[t - s - 1] = 'Z';
        TomlNode *n = node_new(type, line, col, 0);
        if (!n) {
                free(text);
                return fail_oom(p);
        }
        n->v.datetime = text;
        p->p = t;
        *ret = n;
        return 0;
}

/* ---- values ---- */

static int parse_value(Parser *p, unsigned depth, TomlNode **ret);
static int insert_keyval(Parser *p, TomlNode *table, KeyPath *kp, TomlNode *value);

static int parse_array(Parser *p, unsigned depth, TomlNode **ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];
        _cleanup_(toml_freep) TomlValue *a = NULL;
        TomlNode *n = node_new(TOML_ARRAY, line, col, depth);
        if (!n)
                return fail_oom(p);
        n->flags = NODE_FROZEN;
        a = &n->v;
        p->p++; /* [ */
        for (;;) {
                skip_ws_comments_newlines(p);
                if (at(p, ']'))
                        break;
                if (at_eof(p))
                        return fail(p, -EINVAL, line, col, "unterminated array");
                TomlNode *item = NULL;
                int r = parse_value(p, depth + 1, &item);
                if (r < 0)
                        return r;
                if (array_add(n, &item->v) < 0) {
                        toml_free(&item->v);
                        return fail_oom(p);
                }
                skip_ws_comments_newlines(p);
                if (at(p, ','))
                        p->p++;
                else if (at(p, ']'))
                        break;
                else if (at_eof(p))
                        return fail(p, -EINVAL, line, col, "unterminated array");
                else
                        return fail_here(p, -EINVAL, "expected ',' or ']' in array, found %s", describe(p, buf));
        }
        p->p++; /* ] */
        TAKE_PTR(a);
        *ret = n;
        return 0;
}

static int parse_inline_table(Parser *p, unsigned depth, TomlNode **ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];
        _cleanup_(toml_freep) TomlValue *t = NULL;
        TomlNode *n = node_new(TOML_TABLE, line, col, depth);
        if (!n)
                return fail_oom(p);
        t = &n->v;
        p->p++; /* { */
        skip_ws(p);
        if (at(p, '}')) {
                p->p++;
                n->flags = NODE_FROZEN;
                TAKE_PTR(t);
                *ret = n;
                return 0;
        }
        for (;;) {
                _cleanup_(keypath_done) KeyPath kp = {};
                skip_ws(p);
                if (at_newline(p) || at_eof(p))
                        return fail_here(p, -EINVAL, "an inline table must be on one line (opened at %u:%u)", line, col);
                int r = parse_key(p, &kp);
                if (r < 0)
                        return r;
                if (!at(p, '='))
                        return fail_here(p, -EINVAL, "expected '=' after a key, found %s", describe(p, buf));
                p->p++;
                skip_ws(p);
                if (depth + kp.n > TOML_MAX_DEPTH)
                        return fail_depth(p, kp.k[0].line, kp.k[0].col);
                TomlNode *value = NULL;
                if ((r = parse_value(p, depth + (unsigned)kp.n, &value)) < 0)
                        return r;
                if ((r = insert_keyval(p, n, &kp, value)) < 0)
                        return r;
                skip_ws(p);
                if (at(p, ',')) {
                        p->p++;
                        skip_ws(p);
                        if (at(p, '}'))
                                return fail_here(p, -EINVAL, "trailing comma not allowed in an inline table");
                        continue;
                }
                if (at(p, '}'))
                        break;
                if (at_newline(p) || at_eof(p))
                        return fail_here(p, -EINVAL, "an inline table must be on one line (opened at %u:%u)", line, col);
                return fail_here(p, -EINVAL, "expected ',' or '}' in inline table, found %s", describe(p, buf));
        }
        p->p++; /* } */
        n->flags = NODE_FROZEN;
        TAKE_PTR(t);
        *ret = n;
        return 0;
}

static int parse_value(Parser *p, unsigned depth, TomlNode **ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];
        int r;

        if (depth > TOML_MAX_DEPTH)
                return fail_depth(p, line, col);
        if (at_eof(p) || at_newline(p))
                return fail_here(p, -EINVAL, "expected a value, found %s", describe(p, buf));

        TomlNode *n = NULL;
        char c = *p->p;
        switch (c) {
        case '"':
        case '\'': {
                _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
                if ((r = parse_string(p, &b)) < 0)
                        return r;
                n = node_new(TOML_STRING, line, col, depth);
                if (!n)
                        return fail_oom(p);
                n->v.string.len = b.len;
                n->v.string.ptr = strbuf_steal(&b);
                break;
        }
        case '[':
                if ((r = parse_array(p, depth, &n)) < 0)
                        return r;
                break;
        case '{':
                if ((r = parse_inline_table(p, depth, &n)) < 0)
                        return r;
                break;
        case 't':
        case 'f': {
                bool b = c == 't';
                if (!starts(p, b ? "true" : "false") ||
                    (p->p + (b ? 4 : 5) < p->end && is_bare((unsigned char)p->p[b ? 4 : 5])))
                        return fail_here(p, -EINVAL, "expected a value (true, false, a number, a string...), found %s",
                                         describe(p, buf));
                p->p += b ? 4 : 5;
                n = node_new(TOML_BOOL, line, col, depth);
                if (!n)
                        return fail_oom(p);
                n->v.boolean = b;
                break;
        }
        default:
                if (is_digit(c) && p->end - p->p >= 3 &&
                    ((is_digit(p->p[1]) && p->p[2] == ':') ||
                     (p->end - p->p >= 5 && is_digit(p->p[1]) && is_digit(p->p[2]) && is_digit(p->p[3]) &&
                      p->p[4] == '-'))) {
                        if ((r = parse_datetime(p, line, col, &n)) < 0)
                                return r;
                } else if (is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n') {
                        if ((r = parse_number(p, line, col, &n)) < 0)
                                return r;
                } else
                        return fail_here(p, -EINVAL, "expected a value, found %s", describe(p, buf));
                n->depth = depth;
                break;
        }
        *ret = n;
        return 0;
}

/* ---- tree building ---- */

/* "an integer", "an inline table"... for messages. */
static const char *describe_node(const TomlNode *n) {
        switch (n->v.type) {
        case TOML_TABLE:
                return n->flags & NODE_FROZEN ? "an inline table" : "a table";
        case TOML_ARRAY:
                return n->flags & NODE_AOT ? "an array of tables" : "an array";
        case TOML_STRING:
                return "a string";
        case TOML_INTEGER:
                return "an integer";
        case TOML_FLOAT:
                return "a float";
        case TOML_BOOL:
                return "a boolean";
        case TOML_DATETIME:
                return "an offset date-time";
        case TOML_DATETIME_LOCAL:
                return "a local date-time";
        case TOML_DATE_LOCAL:
                return "a local date";
        case TOML_TIME_LOCAL:
                return "a local time";
        }
        return "a value";
}

/* Inserts value (owned; freed on failure) at the dotted key kp in table. */
static int insert_keyval(Parser *p, TomlNode *table, KeyPath *kp, TomlNode *value) {
        _cleanup_(toml_freep) TomlValue *v = &value->v;
        _cleanup_strbuf_ StrBuf pb = STRBUF_INIT;
        TomlNode *t = table;
        int r;

        for (size_t i = 0; i + 1 < kp->n; i++) {
                Key *k = &kp->k[i];
                TomlKeyValue *kv = table_find(t, k->s, k->len);
                if (!kv) {
                        if (t->depth + 1 > TOML_MAX_DEPTH)
                                return fail_depth(p, k->line, k->col);
                        TomlNode *child = node_new(TOML_TABLE, k->line, k->col, t->depth + 1);
                        if (!child)
                                return fail_oom(p);
                        child->flags = NODE_DOTTED;
                        child->section = p->section;
                        if (table_add_key(t, k, &child->v) < 0) {
                                toml_free(&child->v);
                                return fail_oom(p);
                        }
                        t = child;
                        continue;
                }
                TomlNode *c = node_of(kv->value);
                if (c->v.type != TOML_TABLE)
                        return fail(p, -EINVAL, k->line, k->col,
                                    "cannot use '%s' as a table: it is already %s (defined at %u:%u)",
                                    path_text(kp, i, &pb), describe_node(c), kv->line, kv->col);
                if (c->flags & NODE_FROZEN)
                        return fail(p, -EINVAL, k->line, k->col,
                                    "cannot add keys to inline table '%s' (defined at %u:%u)",
                                    path_text(kp, i, &pb), kv->line, kv->col);
                if ((c->flags & NODE_EXPLICIT) || ((c->flags & NODE_DOTTED) && c->section != p->section))
                        return fail(p, -EINVAL, k->line, k->col,
                                    "cannot add keys to table '%s' with dotted keys here: it was defined at %u:%u",
                                    path_text(kp, i, &pb), c->v.line, c->v.col);
                c->flags |= NODE_DOTTED;
                c->section = p->section;
                t = c;
        }

        Key *k = &kp->k[kp->n - 1];
        TomlKeyValue *kv = table_find(t, k->s, k->len);
        if (kv)
                return fail(p, -EINVAL, k->line, k->col, "duplicate key '%s' (first defined at %u:%u)",
                            path_text(kp, kp->n - 1, &pb), kv->line, kv->col);
        if ((r = table_add_key(t, k, v)) < 0)
                return fail_oom(p);
        TAKE_PTR(v);
        return 0;
}

/* At '['. Handles [table] and [[array of tables]]. */
static int parse_header(Parser *p) {
        unsigned line = p->line, col = pcol(p);
        _cleanup_(keypath_done) KeyPath kp = {};
        _cleanup_strbuf_ StrBuf pb = STRBUF_INIT;
        char buf[24];
        int r;

        bool aot = starts(p, "[[");
        p->p += aot ? 2 : 1;
        if ((r = parse_key(p, &kp)) < 0)
                return r;
        if (!starts(p, aot ? "]]" : "]"))
                return fail_here(p, -EINVAL, "expected '%s' to close the table header, found %s",
                                 aot ? "]]" : "]", describe(p, buf));
        p->p += aot ? 2 : 1;

        p->section++;
        TomlNode *t = p->root;
        for (size_t i = 0; i + 1 < kp.n; i++) {
                Key *k = &kp.k[i];
                TomlKeyValue *kv = table_find(t, k->s, k->len);
                if (!kv) {
                        if (t->depth + 1 > TOML_MAX_DEPTH)
                                return fail_depth(p, k->line, k->col);
                        TomlNode *child = node_new(TOML_TABLE, k->line, k->col, t->depth + 1);
                        if (!child)
                                return fail_oom(p);
                        if (table_add_key(t, k, &child->v) < 0) {
                                toml_free(&child->v);
                                return fail_oom(p);
                        }
                        t = child;
                        continue;
                }
                TomlNode *c = node_of(kv->value);
                if (c->v.type == TOML_ARRAY && (c->flags & NODE_AOT)) {
                        t = node_of(c->v.array.items[c->v.array.n - 1]);
                        continue;
                }
                if (c->v.type != TOML_TABLE)
                        return fail(p, -EINVAL, k->line, k->col,
                                    "cannot use '%s' as a table: it is already %s (defined at %u:%u)",
                                    path_text(&kp, i, &pb), describe_node(c), kv->line, kv->col);
                if (c->flags & NODE_FROZEN)
                        return fail(p, -EINVAL, k->line, k->col,
                                    "cannot add keys to inline table '%s' (defined at %u:%u)",
                                    path_text(&kp, i, &pb), kv->line, kv->col);
                t = c;
        }

        Key *k = &kp.k[kp.n - 1];
        TomlKeyValue *kv = table_find(t, k->s, k->len);
        const char *path = path_text(&kp, kp.n - 1, &pb);
        if (!aot) {
                if (!kv) {
                        if (t->depth + 1 > TOML_MAX_DEPTH)
                                return fail_depth(p, k->line, k->col);
                        TomlNode *child = node_new(TOML_TABLE, line, col, t->depth + 1);
                        if (!child)
                                return fail_oom(p);
                        child->flags = NODE_EXPLICIT;
                        if (table_add_key(t, k, &child->v) < 0) {
                                toml_free(&child->v);
                                return fail_oom(p);
                        }
                        p->cur = child;
                        return 0;
                }
                TomlNode *c = node_of(kv->value);
                if (c->v.type == TOML_ARRAY && (c->flags & NODE_AOT))
                        return fail(p, -EINVAL, line, col,
                                    "cannot define table '%s': it is already an array of tables (defined at %u:%u)",
                                    path, kv->line, kv->col);
                if (c->v.type != TOML_TABLE)
                        return fail(p, -EINVAL, line, col,
                                    "cannot define table '%s': it is already %s (defined at %u:%u)", path,
                                    describe_node(c), kv->line, kv->col);
                if (c->flags & NODE_FROZEN)
                        return fail(p, -EINVAL, line, col,
                                    "cannot define table '%s': it is already an inline table (defined at %u:%u)",
                                    path, kv->line, kv->col);
                if (c->flags & NODE_EXPLICIT)
                        return fail(p, -EINVAL, line, col, "table '%s' already defined at %u:%u", path,
                                    c->v.line, c->v.col);
                if (c->flags & NODE_DOTTED)
                        return fail(p, -EINVAL, line, col, "table '%s' already defined by dotted keys at %u:%u",
                                    path, c->v.line, c->v.col);
                c->flags |= NODE_EXPLICIT;
                c->v.line = line;
                c->v.col = col;
                p->cur = c;
                return 0;
        }

        TomlNode *arr;
        if (!kv) {
                if (t->depth + 2 > TOML_MAX_DEPTH)
                        return fail_depth(p, k->line, k->col);
                arr = node_new(TOML_ARRAY, line, col, t->depth + 1);
                if (!arr)
                        return fail_oom(p);
                arr->flags = NODE_AOT;
                if (table_add_key(t, k, &arr->v) < 0) {
                        toml_free(&arr->v);
                        return fail_oom(p);
                }
        } else {
                arr = node_of(kv->value);
                if (arr->v.type != TOML_ARRAY)
                        return fail(p, -EINVAL, line, col,
                                    "cannot define array of tables '%s': it is already %s (defined at %u:%u)", path,
                                    describe_node(arr), kv->line, kv->col);
                if (!(arr->flags & NODE_AOT))
                        return fail(p, -EINVAL, line, col,
                                    "cannot append to static array '%s' (defined at %u:%u)", path, kv->line, kv->col);
        }
        TomlNode *elem = node_new(TOML_TABLE, line, col, arr->depth + 1);
        if (!elem)
                return fail_oom(p);
        elem->flags = NODE_EXPLICIT;
        if (array_add(arr, &elem->v) < 0) {
                toml_free(&elem->v);
                return fail_oom(p);
        }
        p->cur = elem;
        return 0;
}

static int parse_keyval_line(Parser *p) {
        _cleanup_(keypath_done) KeyPath kp = {};
        char buf[24];
        int r;

        if ((r = parse_key(p, &kp)) < 0)
                return r;
        if (!at(p, '='))
                return fail_here(p, -EINVAL, "expected '=' after a key, found %s", describe(p, buf));
        p->p++;
        skip_ws(p);
        if (p->cur->depth + kp.n > TOML_MAX_DEPTH)
                return fail_depth(p, kp.k[0].line, kp.k[0].col);
        TomlNode *value = NULL;
        if ((r = parse_value(p, p->cur->depth + (unsigned)kp.n, &value)) < 0)
                return r;
        return insert_keyval(p, p->cur, &kp, value);
}

int toml_parse(const char *data, size_t len, TomlValue **ret, VsError **err) {
        char buf[24];
        int r;

        if (len > TOML_MAX_INPUT)
                return vs_error_set(err, -E2BIG, "1:1: input is %zu bytes, more than the limit of %u", len,
                                    TOML_MAX_INPUT);
        if (!data)
                data = "";
        Parser p = {
                .p = data, .end = data + len, .line_start = data, .line = 1, .err = err,
        };
        if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
                p.p = p.line_start = data + 3; /* a UTF-8 byte order mark */
        if ((r = validate_text(&p)) < 0)
                return r;

        _cleanup_(toml_freep) TomlValue *root = NULL;
        p.root = node_new(TOML_TABLE, 1, 1, 0);
        if (!p.root)
                return fail_oom(&p);
        p.root->flags = NODE_EXPLICIT;
        root = &p.root->v;
        p.cur = p.root;

        for (;;) {
                skip_ws(&p);
                skip_comment(&p);
                if (at_eof(&p))
                        break;
                if (at_newline(&p)) {
                        eat_newline(&p);
                        continue;
                }
                if (at(&p, '['))
                        r = parse_header(&p);
                else
                        r = parse_keyval_line(&p);
                if (r < 0)
                        return r;
                skip_ws(&p);
                skip_comment(&p);
                if (!at_eof(&p) && !at_newline(&p))
                        return fail_here(&p, -EINVAL, "expected the end of the line, found %s", describe(&p, buf));
        }
        *ret = TAKE_PTR(root);
        return 0;
}
