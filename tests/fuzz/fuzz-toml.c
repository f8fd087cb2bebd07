/* SPDX-License-Identifier: MIT */
/* Fuzz target for the TOML parser: parse, and on success walk the whole tree
 * (every key must be found again through the index), then free. On failure
 * the error must carry a "LINE:COL: " prefix. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const TomlValue *v, unsigned depth) {
        size_t n = 1;
        if (depth > TOML_MAX_DEPTH + 2)
                abort();
        switch (v->type) {
        case TOML_TABLE:
                for (size_t i = 0; i < v->table.n; i++) {
                        const TomlKeyValue *kv = &v->table.items[i];
                        /* Keys with a NUL inside cannot be looked up as C strings. */
                        if (strlen(kv->key) == kv->key_len && toml_table_get(v, kv->key) != kv)
                                abort();
                        if (kv->line == 0 || kv->col == 0)
                                abort();
                        n += walk(kv->value, depth + 1);
                }
                break;
        case TOML_ARRAY:
                for (size_t i = 0; i < v->array.n; i++)
                        n += walk(v->array.items[i], depth + 1);
                break;
        case TOML_STRING:
                if (v->string.ptr[v->string.len] != 0)
                        abort();
                break;
        case TOML_DATETIME:
        case TOML_DATETIME_LOCAL:
        case TOML_DATE_LOCAL:
        case TOML_TIME_LOCAL:
                if (strlen(v->datetime) < 8)
                        abort();
                break;
        default:
                break;
        }
        if (v->line == 0 || v->col == 0 || !toml_type_name(v->type))
                abort();
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        TomlValue *root = NULL;
        VsError *err = NULL;

        int r = toml_parse((const char *)data, size, &root, &err);
        if (r < 0) {
                const char *m = vs_error_message(err);
                if (root || !m || m[0] < '1' || m[0] > '9' || !strchr(m, ':'))
                        abort();
                vs_error_free(err);
                return 0;
        }
        if (err || !root || root->type != TOML_TABLE)
                abort();
        (void)walk(root, 0);
        toml_free(root);
        return 0;
}
