/* SPDX-License-Identifier: MIT */
/* toml-test decoder: TOML on stdin, the suite's tagged JSON on stdout.
 * Exit 0 on success, 1 with the reason on stderr for invalid TOML. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"
#include "toml.h"

#define _cleanup_json_ _cleanup_(json_decrefp) /* jansson's own helper */

static json_t *tagged(const char *type, const char *value) {
        return json_pack("{s:s, s:s}", "type", type, "value", value);
}

/* Shortest "%.Ng" that reads back as the same double. */
static void format_float(double d, char buf[static 64]) {
        if (isnan(d)) {
                strcpy(buf, "nan");
                return;
        }
        if (isinf(d)) {
                strcpy(buf, d < 0 ? "-inf" : "inf");
                return;
        }
        for (int prec = 1; prec <= 17; prec++) {
                snprintf(buf, 64, "%.*g", prec, d);
                if (strtod(buf, NULL) == d)
                        return;
        }
}

static json_t *to_json(const TomlValue *v) {
        char buf[64];

        switch (v->type) {
        case TOML_TABLE: {
                _cleanup_json_ json_t *o = json_object();
                if (!o)
                        return NULL;
                for (size_t i = 0; i < v->table.n; i++) {
                        const TomlKeyValue *kv = &v->table.items[i];
                        json_t *c = to_json(kv->value);
                        if (!c || json_object_setn_new(o, kv->key, kv->key_len, c) < 0)
                                return NULL;
                }
                return TAKE_PTR(o);
        }
        case TOML_ARRAY: {
                _cleanup_json_ json_t *a = json_array();
                if (!a)
                        return NULL;
                for (size_t i = 0; i < v->array.n; i++) {
                        json_t *c = to_json(v->array.items[i]);
                        if (!c || json_array_append_new(a, c) < 0)
                                return NULL;
                }
                return TAKE_PTR(a);
        }
        case TOML_STRING:
                return json_pack("{s:s, s:s%}", "type", "string", "value", v->string.ptr, v->string.len);
        case TOML_INTEGER:
                snprintf(buf, sizeof buf, "%" PRId64, v->integer);
                return tagged("integer", buf);
        case TOML_FLOAT:
                format_float(v->floating, buf);
                return tagged("float", buf);
        case TOML_BOOL:
                return tagged("bool", v->boolean ? "true" : "false");
        case TOML_DATETIME:
                return tagged("datetime", v->datetime);
        case TOML_DATETIME_LOCAL:
                return tagged("datetime-local", v->datetime);
        case TOML_DATE_LOCAL:
                return tagged("date-local", v->datetime);
        case TOML_TIME_LOCAL:
                return tagged("time-local", v->datetime);
        }
        return NULL;
}

int main(void) {
        _cleanup_strbuf_ StrBuf in = STRBUF_INIT;
        char chunk[65536];
        size_t n;

        in.max = TOML_MAX_INPUT + 1;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
                if (strbuf_append(&in, chunk, n) < 0) {
                        fprintf(stderr, "toml-test-decoder: input too large\n");
                        return 1;
                }
        if (ferror(stdin)) {
                fprintf(stderr, "toml-test-decoder: cannot read stdin\n");
                return 1;
        }

        _cleanup_(toml_freep) TomlValue *root = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (toml_parse(in.data, in.len, &root, &err) < 0) {
                fprintf(stderr, "toml-test-decoder: %s\n", vs_error_message(err));
                return 1;
        }
        _cleanup_json_ json_t *j = to_json(root);
        if (!j) {
                fprintf(stderr, "toml-test-decoder: out of memory\n");
                return 2;
        }
        if (json_dumpf(j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) < 0 || fputc('\n', stdout) == EOF ||
            fflush(stdout) == EOF)
                return 2;
        return 0;
}
