/* SPDX-License-Identifier: MIT */
#pragma once

/* The host-held secret store (issue 31): STATE/secrets-UID.json, one file
 * per user of the daemon, mode 0600, rewritten atomically. It lives in the
 * approval store's directory, which no jail may list (approval.c's
 * check_store_unlisted() refuses a policy whose paths reach it).
 *
 *   {"version": 1, "secrets": [{"name": "GITHUB_TOKEN",
 *     "hosts": ["github.com", "api.github.com"], "value": "BASE64"},
 *    {"name": "API_KEY", "hosts": ["api.example.com"],
 *     "headers": ["X-Api-Key"], "value": "BASE64"}]}
 *
 * "headers" (secret-header.h) is left out when there are none: a store
 * written before it existed reads the same (Authorization only), and one
 * without headers stays readable by an older daemon.
 *
 * A value never leaves through secret_store_list_json(); it is read only
 * by the daemon to hand a jail's placeholder map to the proxy. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define SECRET_NAME_MAX 64
#define SECRET_VALUE_MAX 8192
#define SECRET_HOSTS_MAX 32
#define SECRET_STORE_MAX_SECRETS 256
#define SECRET_STORE_FILE_MAX (4u << 20)

typedef struct VsSecret {
        char *name;
        char **hosts;  /* network entries ("api.github.com", "*.example.org", "10.0.0.5:8080"), NULL-terminated */
        char **headers; /* request headers besides Authorization it may go in, as written; NULL-terminated or NULL */
        char *value;   /* value_len bytes, NUL after them */
        size_t value_len;
} VsSecret;

typedef struct VsSecretStore {
        VsSecret *items;
        size_t n;
} VsSecretStore;

/* [A-Z_][A-Z0-9_]*, at most SECRET_NAME_MAX characters. */
bool secret_name_valid(const char *name);

/* Validates a host as a network entry would be (net_rule_parse()); -EINVAL
 * with *err saying why. */
int secret_host_check(const char *host, VsError **err);

/* Parses the store file's text (untrusted: fuzzed). Every name, host and
 * value is checked; -EINVAL with *err on anything else. */
int secret_store_parse(const char *text, size_t len, VsSecretStore *ret, VsError **err);
/* The file's text. */
int secret_store_format(const VsSecretStore *s, char **ret);
void secret_store_done(VsSecretStore *s);
const VsSecret *secret_store_find(const VsSecretStore *s, const char *name);

/* STATE/secrets-UID.json */
char *secret_store_path(const char *state_dir, uid_t uid);
/* A missing file is an empty store. */
int secret_store_load(const char *state_dir, uid_t uid, VsSecretStore *ret, VsError **err);
/* Adds or replaces NAME; hosts must not be empty; headers (NULL for
 * none) as secret_headers_check() allows. */
int secret_store_set(const char *state_dir, uid_t uid, const char *name, char *const *hosts, char *const *headers,
                     const char *value, size_t value_len, VsError **err);
/* -ENOENT (with *err) when NAME is not there. */
int secret_store_delete(const char *state_dir, uid_t uid, const char *name, VsError **err);

/* {"secrets": [{"name": ..., "hosts": [...], "headers": [...]}]}: never
 * a value; "headers" always there ([] for Authorization only). */
json_t *secret_store_list_json(const VsSecretStore *s);

struct VsPolicy;
/* The store whose secrets a workspace uses: this process's user's. */
int secret_store_owner(const struct VsPolicy *p, uid_t *ret, VsError **err);
/* Every sandbox.secrets name of p is in the store of the workspace's owner,
 * and each of its hosts is listed in sandbox.network; otherwise a located
 * config_invalid error saying what to add. */
int secret_check_policy(const char *state_dir, const struct VsPolicy *p, VsError **err);
/* The secrets p uses, from the store (values included): what a jail's
 * placeholders stand for. Empty when p uses none. */
int secret_store_for_policy(const char *state_dir, const struct VsPolicy *p, VsSecretStore *ret, VsError **err);
