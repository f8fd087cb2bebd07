/* SPDX-License-Identifier: MIT */
/* The TOML tree: nodes, the table index, arrays, and key-value insertion
 * under the redefinition rules (dotted keys, implicit and explicit tables,
 * frozen inline tables and static arrays). toml.c parses the document's
 * lines into it, toml-value.c the values; both build it through here. */
#include "toml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "toml-internal.h"

#define INDEX_MIN_ITEMS 16

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

TomlNode *toml_node_new(TomlType type, unsigned line, unsigned col, unsigned depth) {
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

TomlKeyValue *toml_table_find(const TomlNode *t, const char *key, size_t len) {
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

int toml_array_add(TomlNode *a, TomlValue *value) {
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
        return toml_table_find((const TomlNode *)t, key, strlen(key));
}

/* ---- parser state and errors ---- */

/* Adds a copy of key k with value v (owned by the table on success only). */
int toml_table_add_key(TomlNode *t, const Key *k, TomlValue *v) {
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
const char *toml_path_text(const KeyPath *kp, size_t upto, StrBuf *b) {
        strbuf_clear(b);
        for (size_t i = 0; i <= upto && i < kp->n && b->len < 256; i++) {
                if (i > 0)
                        (void)strbuf_appendc(b, '.');
                append_key(b, kp->k[i].s, kp->k[i].len);
        }
        return b->data ? b->data : "?";
}

/* ---- tree building ---- */

/* "an integer", "an inline table"... for messages. */
int toml_table_add_child(Parser *p, TomlNode *t, const Key *k, TomlNode **ret) {
        if (t->depth + 1 > TOML_MAX_DEPTH)
                return toml_fail_depth(p, k->line, k->col);
        TomlNode *child = toml_node_new(TOML_TABLE, k->line, k->col, t->depth + 1);
        if (!child)
                return toml_fail_oom(p);
        if (toml_table_add_key(t, k, &child->v) < 0) {
                toml_free(&child->v);
                return toml_fail_oom(p);
        }
        *ret = child;
        return 0;
}

const char *toml_describe_node(const TomlNode *n) {
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
int toml_insert_keyval(Parser *p, TomlNode *table, KeyPath *kp, TomlNode *value) {
        _cleanup_(toml_freep) TomlValue *v = &value->v;
        _cleanup_strbuf_ StrBuf pb = STRBUF_INIT;
        TomlNode *t = table;
        int r;

        for (size_t i = 0; i + 1 < kp->n; i++) {
                Key *k = &kp->k[i];
                TomlKeyValue *kv = toml_table_find(t, k->s, k->len);
                if (!kv) {
                        TomlNode *child;
                        if ((r = toml_table_add_child(p, t, k, &child)) < 0)
                                return r;
                        child->flags = NODE_DOTTED;
                        child->section = p->section;
                        t = child;
                        continue;
                }
                TomlNode *c = node_of(kv->value);
                if (c->v.type != TOML_TABLE)
                        return toml_fail(p, -EINVAL, k->line, k->col,
                                    "cannot use '%s' as a table: it is already %s (defined at %u:%u)",
                                    toml_path_text(kp, i, &pb), toml_describe_node(c), kv->line, kv->col);
                if (c->flags & NODE_FROZEN)
                        return toml_fail(p, -EINVAL, k->line, k->col,
                                    "cannot add keys to inline table '%s' (defined at %u:%u)",
                                    toml_path_text(kp, i, &pb), kv->line, kv->col);
                if ((c->flags & NODE_EXPLICIT) || ((c->flags & NODE_DOTTED) && c->section != p->section))
                        return toml_fail(p, -EINVAL, k->line, k->col,
                                    "cannot add keys to table '%s' with dotted keys here: it was defined at %u:%u",
                                    toml_path_text(kp, i, &pb), c->v.line, c->v.col);
                c->flags |= NODE_DOTTED;
                c->section = p->section;
                t = c;
        }

        Key *k = &kp->k[kp->n - 1];
        TomlKeyValue *kv = toml_table_find(t, k->s, k->len);
        if (kv)
                return toml_fail(p, -EINVAL, k->line, k->col, "duplicate key '%s' (first defined at %u:%u)",
                            toml_path_text(kp, kp->n - 1, &pb), kv->line, kv->col);
        if ((r = toml_table_add_key(t, k, v)) < 0)
                return toml_fail_oom(p);
        TAKE_PTR(v);
        return 0;
}
