/* SPDX-License-Identifier: MIT */
#pragma once

/* Table-driven decoding of a JSON object into a typed struct (systemd's
 * json_dispatch style): step two of reading untrusted JSON, after jsonl.h
 * built the tree under size and depth limits.
 *
 * Ownership: strings are BORROWED from the json_t (valid while it lives;
 * keep the object referenced as long as the struct is used). Arrays of
 * strings (JSON_FIELD_STRV) are a malloc'd NULL-terminated vector (char **,
 * so it fits the strv.h helpers) of borrowed pointers: free the vector with
 * json_dispatch_done() or free(), never the strings. JSON_FIELD_OBJECT and
 * JSON_FIELD_STRMAP give a borrowed json_t * (STRMAP is checked to hold only
 * strings). A sub-table (JsonField.sub) decodes a nested object into a
 * nested struct at offset.
 *
 * Errors (-EINVAL, *err): "unknown field 'x'", "field 'x' must be a string",
 * "missing field 'x'", "field 'a' : ..." for nested tables, and the limits
 * a field's flags, min and max set ("field 'x' must be from 1 to 64"). null is accepted
 * only by *_OR_NULL types or with JSON_FIELD_NULLABLE, and leaves the target
 * at its previous (zero) value. Targets of absent fields are not touched:
 * zero the struct first. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

typedef enum JsonFieldType {
        JSON_FIELD_STRING,         /* const char * */
        JSON_FIELD_STRING_OR_NULL, /* const char *, NULL for null */
        JSON_FIELD_UINT64,         /* uint64_t: an integer >= 0 */
        JSON_FIELD_INT64,          /* int64_t */
        JSON_FIELD_BOOL,           /* bool */
        JSON_FIELD_STRV,           /* char ** (NULL-terminated; vector malloc'd, strings borrowed) */
        JSON_FIELD_STRMAP,         /* json_t *: object whose values are all strings */
        JSON_FIELD_OBJECT,         /* json_t * (sub == NULL) or nested struct (sub != NULL) */
        JSON_FIELD_IGNORE,         /* accepted, not checked or stored: for fields the caller
                                    * validated already (e.g. "id" and "op" of a request) */
} JsonFieldType;

enum {
        JSON_FIELD_REQUIRED = 1u << 0,
        JSON_FIELD_NULLABLE = 1u << 1, /* null accepted as absent */
        JSON_FIELD_NONEMPTY = 1u << 2, /* STRING: not ""; STRV: at least one entry, the first not "" */
        JSON_FIELD_ABSOLUTE = 1u << 3, /* STRING, each STRV entry: starts with '/' */
        JSON_FIELD_OMIT_EMPTY = 1u << 4, /* json_build: left out when 0, false or NULL */
};

typedef struct JsonField {
        const char *name;
        JsonFieldType type;
        size_t offset;
        unsigned flags;
        const struct JsonField *sub; /* JSON_FIELD_OBJECT only: nested table */
        /* UINT64 and INT64, when max != 0: the value must lie in min..max. */
        int64_t min;
        uint64_t max;
} JsonField;

/* Flags for json_dispatch_full(). */
enum {
        JSON_DISPATCH_ALLOW_UNKNOWN = 1u << 0, /* ignore fields not in the table */
};

/* Decodes obj into target through table (terminated by an entry with
 * name == NULL, at most 64 entries). Returns 0 or -EINVAL (with *err) or
 * -ENOMEM. On failure, arrays already allocated are freed again. */
int json_dispatch(json_t *obj, const JsonField table[], void *target, VsError **err);
int json_dispatch_full(json_t *obj, const JsonField table[], unsigned flags, void *target,
                       VsError **err);
/* Frees what json_dispatch allocated in target (string vectors, nested). */
void json_dispatch_done(const JsonField table[], void *target);

/* The encoding direction of json_dispatch, from the same table: sets on
 * obj each field of table read from src (UINT64, INT64, BOOL, STRING, STRV
 * as arrays; STRING NULL as "", STRING_OR_NULL NULL as null; STRMAP and
 * OBJECT without sub as the json_t * held, {} or null (NULLABLE) for NULL;
 * OBJECT with sub as a nested object). IGNORE fields are the caller's to
 * write. Fields flagged JSON_FIELD_OMIT_EMPTY are left out when empty.
 * Returns 0 or -ENOMEM. */
int json_build(json_t *obj, const JsonField table[], const void *src);

/* Name of a json type for messages: "string", "integer", "object"... */
const char *json_type_name(const json_t *v);

/* A JSON array of the strings of l (NULL-terminated; NULL gives []). New
 * reference, NULL on OOM. The encoding direction of JSON_FIELD_STRV. */
json_t *json_strv(char *const *l);
