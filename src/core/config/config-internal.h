/* SPDX-License-Identifier: MIT */
#pragma once

/* What the vectora.toml parser's files share: config.c (the entry points,
 * defaults, cross-key rules, located errors and the table-driven decoding),
 * config-keys.c (every key's handler and the key tables) and
 * config-load.c (resolving the listed paths and reading the file: the part
 * that touches the OS), and the backends' own [sandbox.NAME] keys
 * (backend-NAME.c). Nothing else includes this. */

#include "config.h"
#include "toml.h"

#define CONFIG_MAX_SIZE (1u << 20)
#define CONFIG_MAX_PATHS 256
#define CONFIG_MAX_MASKS 4096
#define CONFIG_MAX_NET_RULES 1024

typedef struct KeyCtx {
        VsPolicy *policy;
        const VsConfigEnv *env;
        const char *table; /* "sandbox", "sandbox.limits", ... */
        const char *key;
        const TomlKeyValue *kv;
        /* In [sandbox.NAME]: that backend's settings (backend.h). */
        void *backend_config;
        /* In [sandbox]: one settings object per backend table met, in
         * vs_backend_defs' order (config_parse owns them). */
        void **backend_configs;
} KeyCtx;

typedef int (*key_handler)(const KeyCtx *c, VsError **err);

/* A key whose handler checks the type itself ("memory": string or integer). */
#define TOML_ANY ((TomlType)-1)

typedef struct KeyDef {
        const char *name;
        TomlType type;
        key_handler handler;
} KeyDef;

/* Sets *err to "vectora.toml:LINE:COL: message" (kind "config_invalid";
 * without a line when line is 0) and returns code. */
_printf_(5, 6) int config_error(VsError **err, int code, unsigned line, unsigned col, const char *fmt, ...);
/* Decodes table t through defs: unknown keys refused (with the nearest
 * allowed one suggested), each value type-checked, then its handler run. */
int config_dispatch_table(const TomlValue *t, const KeyDef *defs, size_t n_defs, KeyCtx base, VsError **err);

/* The value as an integer in [min, max], or a string (not empty unless
 * allow_empty; *ret replaced), with located errors naming table.key. */
int config_get_uint(const KeyCtx *c, uint64_t min, uint64_t max, uint64_t *ret, VsError **err);
int config_get_string(const KeyCtx *c, bool allow_empty, char **ret, VsError **err);

/* Lexical absolute form of a written path (no OS calls). */
char *config_path_absolute(const char *written, const VsConfigEnv *env);
/* Frees what a VsPath holds (not the VsPath). */
void config_vspath_done(VsPath *p);

/* The [sandbox] table's own keys (config-keys.c), without the backends'
 * tables ([sandbox.NAME], added by config_parse from backend.h); the
 * sub-tables' are theirs. */
extern const KeyDef config_sandbox_keys[];
extern const size_t config_n_sandbox_keys;
/* The handler of a backend's [sandbox.NAME] row (c->key is NAME). */
int config_backend_table(const KeyCtx *c, VsError **err);
/* [[sandbox.http]] (config-http.c): the key's handler, the cross-key
 * check (validate_policy) and the free. */
int config_http_table(const KeyCtx *c, VsError **err);
int config_http_validate(const VsPolicy *p, VsError **err);
void config_http_done(VsPolicy *p);
