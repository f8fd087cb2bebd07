/* SPDX-License-Identifier: MIT */
#pragma once

/* TOML 1.0.0 parser. Pure: no OS calls. Input must be the whole document.
 *
 * The tree is owned by the root value; toml_free() releases it. Every value
 * and every key records where it starts (1-based line and column, columns
 * counted in bytes), so callers can report "vectora.toml:LINE:COL: ...". */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TOML_MAX_INPUT (8u * 1024 * 1024) /* bytes */
#define TOML_MAX_DEPTH 64                 /* nested arrays/inline tables/table headers */

typedef enum TomlType {
        TOML_TABLE,
        TOML_ARRAY,
        TOML_STRING,
        TOML_INTEGER,
        TOML_FLOAT,
        TOML_BOOL,
        TOML_DATETIME,       /* offset date-time */
        TOML_DATETIME_LOCAL, /* local date-time */
        TOML_DATE_LOCAL,
        TOML_TIME_LOCAL,
} TomlType;

typedef struct TomlValue TomlValue;

typedef struct TomlKeyValue {
        char *key; /* UTF-8, NUL-terminated (a key containing U+0000 is kept as is in key_len) */
        size_t key_len;
        unsigned line, col; /* where the key was written (first definition) */
        TomlValue *value;
} TomlKeyValue;

struct TomlValue {
        TomlType type;
        unsigned line, col; /* where the value starts ([header] for tables made by a header) */
        union {
                struct {
                        char *ptr; /* NUL-terminated; may contain NULs, see len */
                        size_t len;
                } string;
                int64_t integer;
                double floating;
                bool boolean;
                /* Date-times keep their text as written, with the 'T'/space
                 * separator normalized to 'T' and 'z' to 'Z'. */
                char *datetime;
                struct {
                        TomlValue **items;
                        size_t n;
                } array;
                struct {
                        TomlKeyValue *items; /* in definition order */
                        size_t n;
                } table;
        };
};

/* Parses data[0..len) (need not be NUL-terminated; a leading UTF-8 BOM is
 * skipped). On success *ret is the root table, owned by the caller. On
 * failure returns a negative errno (-EINVAL for invalid TOML, -E2BIG over
 * TOML_MAX_INPUT or TOML_MAX_DEPTH, -ENOMEM), leaves *ret untouched and sets
 * *err to "LINE:COL: reason", e.g.
 * "3:1: duplicate key 'a' (first defined at 1:1)". */
int toml_parse(const char *data, size_t len, TomlValue **ret, VsError **err);

void toml_free(TomlValue *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(TomlValue *, toml_free);

/* Looks up key in a table (hashed for large tables); NULL if absent or t is
 * not a table. Borrows: the result lives as long as the tree. A key that
 * contains U+0000 cannot be named here; scan table.items for it. */
const TomlKeyValue *toml_table_get(const TomlValue *t, const char *key);

/* "table", "array", "string", "integer", "float", "boolean",
 * "offset date-time", "local date-time", "local date", "local time". */
const char *toml_type_name(TomlType t);
