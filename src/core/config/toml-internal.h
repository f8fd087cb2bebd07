/* SPDX-License-Identifier: MIT */
/* The TOML parser's insides, shared by its three files: toml.c (the tree:
 * nodes, tables, headers, redefinition rules), toml-lex.c (input validation,
 * errors, strings, keys) and toml-value.c (numbers, date-times, arrays, inline
 * tables). Nothing outside those files includes this. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "strbuf.h"
#include "toml.h"

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

typedef struct Key {
        char *s;
        size_t len;
        unsigned line, col;
} Key;

typedef struct KeyPath {
        Key *k;
        size_t n, cap;
} KeyPath;

typedef struct Parser {
        const char *p, *end;
        const char *line_start;
        unsigned line;
        unsigned section; /* bumped by every [header] and [[header]] */
        TomlNode *root, *cur;
        VsError **err;
} Parser;

/* ---- lexing helpers ---- */

static inline TomlNode *node_of(TomlValue *v) {
        return (TomlNode *)v;
}

static inline unsigned pcol(const Parser *p) {
        return (unsigned)(p->p - p->line_start) + 1;
}

static inline bool is_bare(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
}

static inline bool at_eof(const Parser *p) {
        return p->p >= p->end;
}

static inline bool at(const Parser *p, char c) {
        return p->p < p->end && *p->p == c;
}

/* Bare CR was rejected up front, so CR here always starts CRLF. */
static inline bool at_newline(const Parser *p) {
        return p->p < p->end && (*p->p == '\n' || *p->p == '\r');
}

static inline void eat_newline(Parser *p) {
        if (*p->p == '\r')
                p->p++;
        p->p++;
        p->line++;
        p->line_start = p->p;
}

static inline void skip_ws(Parser *p) {
        while (p->p < p->end && (*p->p == ' ' || *p->p == '\t'))
                p->p++;
}

static inline void skip_comment(Parser *p) {
        if (at(p, '#'))
                while (p->p < p->end && !at_newline(p))
                        p->p++;
}

static inline void skip_ws_comments_newlines(Parser *p) {
        for (;;) {
                skip_ws(p);
                skip_comment(p);
                if (!at_newline(p))
                        return;
                eat_newline(p);
        }
}

static inline bool starts(const Parser *p, const char *s) {
        size_t n = strlen(s);
        return (size_t)(p->end - p->p) >= n && memcmp(p->p, s, n) == 0;
}

static inline bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* ---- across the three files ---- */

/* Sets *p->err to "line:col: message" and returns code. */
_printf_(5, 6) int toml_fail(Parser *p, int code, unsigned line, unsigned col, const char *fmt, ...);
#define fail_here(p, code, ...) toml_fail((p), (code), (p)->line, pcol(p), __VA_ARGS__)
int toml_fail_oom(Parser *p);
int toml_fail_depth(Parser *p, unsigned line, unsigned col);
/* What the parser is looking at, for messages (in buf or static). */
const char *toml_describe(const Parser *p, char buf[static 24]);
int toml_hexval(char c);
int toml_validate_text(Parser *p);
void toml_keypath_done(KeyPath *kp);
int toml_parse_key(Parser *p, KeyPath *kp);
int toml_parse_string(Parser *p, StrBuf *out);
/* Parses the value at p into a new node of the given depth (*ret owned by the caller). */
int toml_parse_value(Parser *p, unsigned depth, TomlNode **ret);
TomlNode *toml_node_new(TomlType type, unsigned line, unsigned col, unsigned depth);
int toml_array_add(TomlNode *a, TomlValue *value);
/* Inserts value (owned; freed on failure) at the dotted key kp in table. */
int toml_insert_keyval(Parser *p, TomlNode *table, KeyPath *kp, TomlNode *value);
/* The tree's lookups and insertion (toml-tree.c), for the header parser. */
TomlKeyValue *toml_table_find(const TomlNode *t, const char *key, size_t len);
int toml_table_add_key(TomlNode *t, const Key *k, TomlValue *v);
/* A new, implicitly defined table below t under k (a header path's or a
 * dotted key's), *ret borrowed from t; fails p (depth, OOM). */
int toml_table_add_child(Parser *p, TomlNode *t, const Key *k, TomlNode **ret);
/* kp's first upto keys as TOML would write them, in b. */
const char *toml_path_text(const KeyPath *kp, size_t upto, StrBuf *b);
/* What a node is, for a redefinition message ("a table", ...). */
const char *toml_describe_node(const TomlNode *n);
