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
 * into arrays and inline tables, so the stack use is bounded by that limit.
 *
 * This file holds the document's lines (headers, key-value lines);
 * toml-tree.c the tree (nodes, the table index, dotted keys and the
 * redefinition rules); toml-lex.c the validation, messages, strings and
 * keys; toml-value.c numbers, date-times, arrays and inline tables. */
#include "toml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "toml-internal.h"

/* At '['. Handles [table] and [[array of tables]]. */
static int parse_header(Parser *p) {
        unsigned line = p->line, col = pcol(p);
        _cleanup_(toml_keypath_done) KeyPath kp = {};
        _cleanup_strbuf_ StrBuf pb = STRBUF_INIT;
        char buf[24];
        int r;

        bool aot = starts(p, "[[");
        p->p += aot ? 2 : 1;
        if ((r = toml_parse_key(p, &kp)) < 0)
                return r;
        if (!starts(p, aot ? "]]" : "]"))
                return fail_here(p, -EINVAL, "expected '%s' to close the table header, found %s",
                                 aot ? "]]" : "]", toml_describe(p, buf));
        p->p += aot ? 2 : 1;

        p->section++;
        TomlNode *t = p->root;
        for (size_t i = 0; i + 1 < kp.n; i++) {
                Key *k = &kp.k[i];
                TomlKeyValue *kv = toml_table_find(t, k->s, k->len);
                if (!kv) {
                        if ((r = toml_table_add_child(p, t, k, &t)) < 0)
                                return r;
                        continue;
                }
                TomlNode *c = node_of(kv->value);
                if (c->v.type == TOML_ARRAY && (c->flags & NODE_AOT)) {
                        t = node_of(c->v.array.items[c->v.array.n - 1]);
                        continue;
                }
                if (c->v.type != TOML_TABLE)
                        return toml_fail(p, -EINVAL, k->line, k->col,
                                    "cannot use '%s' as a table: it is already %s (defined at %u:%u)",
                                    toml_path_text(&kp, i, &pb), toml_describe_node(c), kv->line, kv->col);
                if (c->flags & NODE_FROZEN)
                        return toml_fail(p, -EINVAL, k->line, k->col,
                                    "cannot add keys to inline table '%s' (defined at %u:%u)",
                                    toml_path_text(&kp, i, &pb), kv->line, kv->col);
                t = c;
        }

        Key *k = &kp.k[kp.n - 1];
        TomlKeyValue *kv = toml_table_find(t, k->s, k->len);
        const char *path = toml_path_text(&kp, kp.n - 1, &pb);
        if (!aot) {
                if (!kv) {
                        if (t->depth + 1 > TOML_MAX_DEPTH)
                                return toml_fail_depth(p, k->line, k->col);
                        TomlNode *child = toml_node_new(TOML_TABLE, line, col, t->depth + 1);
                        if (!child)
                                return toml_fail_oom(p);
                        child->flags = NODE_EXPLICIT;
                        if (toml_table_add_key(t, k, &child->v) < 0) {
                                toml_free(&child->v);
                                return toml_fail_oom(p);
                        }
                        p->cur = child;
                        return 0;
                }
                TomlNode *c = node_of(kv->value);
                if (c->v.type == TOML_ARRAY && (c->flags & NODE_AOT))
                        return toml_fail(p, -EINVAL, line, col,
                                    "cannot define table '%s': it is already an array of tables (defined at %u:%u)",
                                    path, kv->line, kv->col);
                if (c->v.type != TOML_TABLE)
                        return toml_fail(p, -EINVAL, line, col,
                                    "cannot define table '%s': it is already %s (defined at %u:%u)", path,
                                    toml_describe_node(c), kv->line, kv->col);
                if (c->flags & NODE_FROZEN)
                        return toml_fail(p, -EINVAL, line, col,
                                    "cannot define table '%s': it is already an inline table (defined at %u:%u)",
                                    path, kv->line, kv->col);
                if (c->flags & NODE_EXPLICIT)
                        return toml_fail(p, -EINVAL, line, col, "table '%s' already defined at %u:%u", path,
                                    c->v.line, c->v.col);
                if (c->flags & NODE_DOTTED)
                        return toml_fail(p, -EINVAL, line, col, "table '%s' already defined by dotted keys at %u:%u",
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
                        return toml_fail_depth(p, k->line, k->col);
                arr = toml_node_new(TOML_ARRAY, line, col, t->depth + 1);
                if (!arr)
                        return toml_fail_oom(p);
                arr->flags = NODE_AOT;
                if (toml_table_add_key(t, k, &arr->v) < 0) {
                        toml_free(&arr->v);
                        return toml_fail_oom(p);
                }
        } else {
                arr = node_of(kv->value);
                if (arr->v.type != TOML_ARRAY)
                        return toml_fail(p, -EINVAL, line, col,
                                    "cannot define array of tables '%s': it is already %s (defined at %u:%u)", path,
                                    toml_describe_node(arr), kv->line, kv->col);
                if (!(arr->flags & NODE_AOT))
                        return toml_fail(p, -EINVAL, line, col,
                                    "cannot append to static array '%s' (defined at %u:%u)", path, kv->line, kv->col);
        }
        TomlNode *elem = toml_node_new(TOML_TABLE, line, col, arr->depth + 1);
        if (!elem)
                return toml_fail_oom(p);
        elem->flags = NODE_EXPLICIT;
        if (toml_array_add(arr, &elem->v) < 0) {
                toml_free(&elem->v);
                return toml_fail_oom(p);
        }
        p->cur = elem;
        return 0;
}

static int parse_keyval_line(Parser *p) {
        _cleanup_(toml_keypath_done) KeyPath kp = {};
        char buf[24];
        int r;

        if ((r = toml_parse_key(p, &kp)) < 0)
                return r;
        if (!at(p, '='))
                return fail_here(p, -EINVAL, "expected '=' after a key, found %s", toml_describe(p, buf));
        p->p++;
        skip_ws(p);
        if (p->cur->depth + kp.n > TOML_MAX_DEPTH)
                return toml_fail_depth(p, kp.k[0].line, kp.k[0].col);
        TomlNode *value = NULL;
        if ((r = toml_parse_value(p, p->cur->depth + (unsigned)kp.n, &value)) < 0)
                return r;
        return toml_insert_keyval(p, p->cur, &kp, value);
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
        if ((r = toml_validate_text(&p)) < 0)
                return r;

        _cleanup_(toml_freep) TomlValue *root = NULL;
        p.root = toml_node_new(TOML_TABLE, 1, 1, 0);
        if (!p.root)
                return toml_fail_oom(&p);
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
                        return fail_here(&p, -EINVAL, "expected the end of the line, found %s", toml_describe(&p, buf));
        }
        *ret = TAKE_PTR(root);
        return 0;
}
