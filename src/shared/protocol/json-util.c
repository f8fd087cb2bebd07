/* SPDX-License-Identifier: MIT */
#include "json-util.h"

#include <inttypes.h>
#include <string.h>

#include "macro.h"

#define FIELD_PTR(target, f) ((void *) ((char *) (target) + (f)->offset))

const char *json_type_name(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "object";
        case JSON_ARRAY:
                return "array";
        case JSON_STRING:
                return "string";
        case JSON_INTEGER:
                return "integer";
        case JSON_REAL:
                return "number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "boolean";
        case JSON_NULL:
                return "null";
        }
        return "value";
}

static int type_error(VsError **err, const JsonField *f, const char *what) {
        return vs_error_set_kind(err, -EINVAL, "bad_request", "field '%s' must be %s", f->name, what);
}

static int string_limits(VsError **err, const JsonField *f, const char *s) {
        if ((f->flags & JSON_FIELD_NONEMPTY) && !s[0])
                return vs_error_set_kind(err, -EINVAL, "bad_request", "field '%s' must not be empty", f->name);
        if ((f->flags & JSON_FIELD_ABSOLUTE) && s[0] != '/')
                return vs_error_set_kind(err, -EINVAL, "bad_request", "field '%s' must be an absolute path", f->name);
        return 0;
}

static int range_error(VsError **err, const JsonField *f) {
        return vs_error_set_kind(err, -EINVAL, "bad_request", "field '%s' must be from %" PRId64 " to %" PRIu64,
                                 f->name, f->min, f->max);
}

static int strv_limits(VsError **err, const JsonField *f, char **l) {
        if ((f->flags & JSON_FIELD_NONEMPTY) && (!l[0] || !l[0][0]))
                return type_error(err, f, "a non-empty array");
        if (f->flags & JSON_FIELD_ABSOLUTE)
                for (char **e = l; *e; e++)
                        if ((*e)[0] != '/')
                                return vs_error_set_kind(err, -EINVAL, "bad_request",
                                                         "field '%s': path '%.256s' is not absolute", f->name, *e);
        return 0;
}

static void field_done(const JsonField *f, void *target) {
        if (f->type == JSON_FIELD_STRV) {
                char ***p = FIELD_PTR(target, f);
                free(*p);
                *p = NULL;
        } else if (f->type == JSON_FIELD_OBJECT && f->sub)
                json_dispatch_done(f->sub, FIELD_PTR(target, f));
}

static int dispatch_one(const JsonField *f, json_t *v, void *target, VsError **err) {
        if (f->type == JSON_FIELD_IGNORE) /* target may be NULL for tables of only these */
                return 0;
        void *p = FIELD_PTR(target, f);

        if (json_is_null(v) && (f->flags & JSON_FIELD_NULLABLE))
                return 0;

        switch (f->type) {
        case JSON_FIELD_STRING_OR_NULL:
                if (json_is_null(v)) {
                        *(const char **) p = NULL;
                        return 0;
                }
                __attribute__((fallthrough));
        case JSON_FIELD_STRING:
                if (!json_is_string(v))
                        return type_error(err, f, f->type == JSON_FIELD_STRING ? "a string" : "a string or null");
                if (string_limits(err, f, json_string_value(v)) < 0)
                        return -EINVAL;
                *(const char **) p = json_string_value(v);
                return 0;
        case JSON_FIELD_UINT64:
                if (!json_is_integer(v) || json_integer_value(v) < 0)
                        return type_error(err, f, "a non-negative integer");
                if (f->max && ((int64_t) json_integer_value(v) < f->min || (uint64_t) json_integer_value(v) > f->max))
                        return range_error(err, f);
                *(uint64_t *) p = (uint64_t) json_integer_value(v);
                return 0;
        case JSON_FIELD_INT64:
                if (!json_is_integer(v))
                        return type_error(err, f, "an integer");
                if (f->max && ((int64_t) json_integer_value(v) < f->min ||
                               (json_integer_value(v) > 0 && (uint64_t) json_integer_value(v) > f->max)))
                        return range_error(err, f);
                *(int64_t *) p = (int64_t) json_integer_value(v);
                return 0;
        case JSON_FIELD_BOOL:
                if (!json_is_boolean(v))
                        return type_error(err, f, "a boolean");
                *(bool *) p = json_is_true(v);
                return 0;
        case JSON_FIELD_STRV: {
                if (!json_is_array(v))
                        return type_error(err, f, "an array of strings");
                size_t n = json_array_size(v);
                char **l = calloc(n + 1, sizeof(char *));
                if (!l)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                for (size_t i = 0; i < n; i++) {
                        json_t *e = json_array_get(v, i);
                        if (!json_is_string(e)) {
                                free(l);
                                return type_error(err, f, "an array of strings");
                        }
                        l[i] = (char *) json_string_value(e);
                }
                if (strv_limits(err, f, l) < 0) {
                        free(l);
                        return -EINVAL;
                }
                free(*(char ***) p);
                *(char ***) p = l;
                return 0;
        }
        case JSON_FIELD_STRMAP: {
                if (!json_is_object(v))
                        return type_error(err, f, "an object of strings");
                const char *k;
                json_t *e;
                json_object_foreach(v, k, e)
                        if (!json_is_string(e))
                                return type_error(err, f, "an object of strings");
                *(json_t **) p = v;
                return 0;
        }
        case JSON_FIELD_IGNORE:
                return 0;
        case JSON_FIELD_OBJECT:
                if (!json_is_object(v))
                        return type_error(err, f, (f->flags & JSON_FIELD_NULLABLE) ? "an object or null" : "an object");
                if (!f->sub) {
                        *(json_t **) p = v;
                        return 0;
                }
                int k = json_dispatch(v, f->sub, p, err);
                if (k < 0)
                        return vs_error_prefix(err, "field '%s'", f->name);
                return 0;
        }
        return vs_error_set(err, -EINVAL, "field '%s': bad table", f->name);
}

int json_dispatch_full(json_t *obj, const JsonField table[], unsigned flags, void *target,
                       VsError **err) {
        uint64_t seen = 0;
        size_t n = 0;

        while (table[n].name)
                n++;
        if (n > 64)
                return vs_error_set(err, -EINVAL, "dispatch table too long");
        if (!json_is_object(obj))
                return vs_error_set_kind(err, -EINVAL, "bad_request", "expected an object, got %s",
                                         json_type_name(obj));

        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v) {
                size_t i;
                for (i = 0; i < n; i++)
                        if (streq(table[i].name, key))
                                break;
                if (i == n) {
                        if (flags & JSON_DISPATCH_ALLOW_UNKNOWN)
                                continue;
                        for (size_t j = 0; j < n; j++)
                                if (seen & (UINT64_C(1) << j))
                                        field_done(&table[j], target);
                        return vs_error_set_kind(err, -EINVAL, "bad_request", "unknown field '%.64s'", key);
                }
                int k = dispatch_one(&table[i], v, target, err);
                if (k < 0) {
                        for (size_t j = 0; j < n; j++)
                                if (seen & (UINT64_C(1) << j))
                                        field_done(&table[j], target);
                        return k;
                }
                seen |= UINT64_C(1) << i;
        }

        for (size_t i = 0; i < n; i++)
                if ((table[i].flags & JSON_FIELD_REQUIRED) && !(seen & (UINT64_C(1) << i))) {
                        for (size_t j = 0; j < n; j++)
                                if (seen & (UINT64_C(1) << j))
                                        field_done(&table[j], target);
                        return vs_error_set_kind(err, -EINVAL, "bad_request", "missing field '%s'",
                                                 table[i].name);
                }
        return 0;
}

int json_dispatch(json_t *obj, const JsonField table[], void *target, VsError **err) {
        return json_dispatch_full(obj, table, 0, target, err);
}

void json_dispatch_done(const JsonField table[], void *target) {
        if (!target)
                return;
        for (size_t i = 0; table[i].name; i++)
                field_done(&table[i], target);
}

#define FIELD_CPTR(src, f) ((const void *) ((const char *) (src) + (f)->offset))

int json_build(json_t *obj, const JsonField table[], const void *src) {
        for (const JsonField *f = table; f->name; f++) {
                const void *p = FIELD_CPTR(src, f);
                json_t *v = NULL;
                bool empty = false;

                switch (f->type) {
                case JSON_FIELD_IGNORE:
                        continue;
                case JSON_FIELD_STRING:
                case JSON_FIELD_STRING_OR_NULL: {
                        const char *s = *(const char *const *) p;
                        empty = !s;
                        v = s ? json_string(s) : f->type == JSON_FIELD_STRING ? json_string("") : json_null();
                        break;
                }
                case JSON_FIELD_UINT64:
                        empty = *(const uint64_t *) p == 0;
                        v = json_integer((json_int_t) *(const uint64_t *) p);
                        break;
                case JSON_FIELD_INT64:
                        empty = *(const int64_t *) p == 0;
                        v = json_integer((json_int_t) *(const int64_t *) p);
                        break;
                case JSON_FIELD_BOOL:
                        empty = !*(const bool *) p;
                        v = json_boolean(*(const bool *) p);
                        break;
                case JSON_FIELD_STRV: {
                        char *const *l = *(char *const *const *) p;
                        empty = !l;
                        v = json_strv(l);
                        break;
                }
                case JSON_FIELD_STRMAP:
                case JSON_FIELD_OBJECT: {
                        if (f->sub) {
                                v = json_object();
                                if (v && json_build(v, f->sub, p) < 0)
                                        v = (json_decref(v), NULL);
                                break;
                        }
                        json_t *o = *(json_t *const *) p;
                        empty = !o;
                        v = o ? json_incref(o) : (f->flags & JSON_FIELD_NULLABLE) ? json_null() : json_object();
                        break;
                }
                }
                if ((f->flags & JSON_FIELD_OMIT_EMPTY) && empty) {
                        json_decref(v);
                        continue;
                }
                if (!v || json_object_set_new(obj, f->name, v) < 0)
                        return -ENOMEM;
        }
        return 0;
}

json_t *json_strv(char *const *l) {
        json_t *a = json_array();
        for (char *const *s = l; a && s && *s; s++)
                if (json_array_append_new(a, json_string(*s)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}
