/* SPDX-License-Identifier: MIT */
#include "secret-store.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "fd-util.h"
#include "json-util.h"
#include "macro.h"
#include "net-policy.h"
#include "path-util.h"
#include "secret-header.h"
#include "policy.h"
#include "strv.h"

bool secret_name_valid(const char *name) {
        if (!name || !*name || strlen(name) > SECRET_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
                        return false;
        return true;
}

int secret_host_check(const char *host, VsError **err) {
        VsNetRule rule = {};
        if (!host)
                return vs_error_set(err, -EINVAL, "a host must be a string");
        int r = net_rule_parse(host, &rule, err);
        net_rule_done(&rule);
        return r;
}

static void secret_done(VsSecret *s) {
        free(s->name);
        strv_free(s->hosts);
        strv_free(s->headers);
        /* The value must not outlive its use in freed heap pages. */
        if (s->value)
                explicit_bzero(s->value, s->value_len);
        free(s->value);
        *s = (VsSecret){};
}

void secret_store_done(VsSecretStore *s) {
        for (size_t i = 0; i < s->n; i++)
                secret_done(&s->items[i]);
        free(s->items);
        *s = (VsSecretStore){};
}

const VsSecret *secret_store_find(const VsSecretStore *s, const char *name) {
        for (size_t i = 0; name && i < s->n; i++)
                if (streq(s->items[i].name, name))
                        return &s->items[i];
        return NULL;
}

static int check_hosts(const char *name, char *const *hosts, VsError **err) {
        size_t n = 0;
        for (char *const *h = hosts; h && *h; h++, n++) {
                _cleanup_(vs_error_freep) VsError *herr = NULL;
                if (secret_host_check(*h, &herr) < 0)
                        return vs_error_set(err, -EINVAL, "secret %s: host \"%s\": %s", name, *h, vs_error_message(herr));
                for (char *const *o = hosts; o < h; o++)
                        if (streq(*o, *h))
                                return vs_error_set(err, -EINVAL, "secret %s: host \"%s\" is listed twice", name, *h);
        }
        if (n == 0)
                return vs_error_set(err, -EINVAL, "secret %s has no host: name each host it may be sent to (--host)", name);
        if (n > SECRET_HOSTS_MAX)
                return vs_error_set(err, -E2BIG, "secret %s has more than %d hosts", name, SECRET_HOSTS_MAX);
        return 0;
}

static int check_value(const char *name, const char *value, size_t len, VsError **err) {
        if (len == 0)
                return vs_error_set(err, -EINVAL, "secret %s: the value is empty", name);
        if (len > SECRET_VALUE_MAX)
                return vs_error_set(err, -E2BIG, "secret %s: the value is longer than %d bytes", name, SECRET_VALUE_MAX);
        /* It is spliced into an HTTP head: a line break or NUL there would
         * let the value add headers or end the head. */
        for (size_t i = 0; i < len; i++)
                if (value[i] == '\r' || value[i] == '\n' || value[i] == '\0')
                        return vs_error_set(err, -EINVAL,
                                            "secret %s: the value holds a line break or NUL; it is sent in an HTTP header", name);
        return 0;
}

/* Absent: Authorization only (a store written before headers existed). */
static int parse_headers(json_t *a, VsSecret *s, VsError **err) {
        if (!a)
                return 0;
        if (!json_is_array(a) || json_array_size(a) > SECRET_HEADERS_MAX)
                return vs_error_set(err, -EINVAL, "secret %s: \"headers\" must be a list of at most %d header names",
                                    s->name, SECRET_HEADERS_MAX);
        if (!(s->headers = calloc(1, sizeof(char *))))
                return -ENOMEM;
        size_t k;
        json_t *v;
        json_array_foreach(a, k, v) {
                if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
                        return vs_error_set(err, -EINVAL, "secret %s: headers[%zu] must be a string", s->name, k);
                if (strv_extend(&s->headers, json_string_value(v)) < 0)
                        return -ENOMEM;
        }
        return secret_headers_check(s->name, s->headers, err);
}

static json_t *strv_json(char *const *l) {
        json_t *a = json_array();
        for (char *const *h = l; a && h && *h; h++)
                if (json_array_append_new(a, json_string(*h)) < 0) {
                        json_decref(a);
                        a = NULL;
                }
        return a;
}

static int parse_one(json_t *o, size_t i, VsSecret *s, VsError **err) {
        const char *key;
        json_t *v;
        if (!json_is_object(o))
                return vs_error_set(err, -EINVAL, "secrets[%zu] must be an object", i);
        json_object_foreach(o, key, v) {
                if (!streq(key, "name") && !streq(key, "hosts") && !streq(key, "headers") && !streq(key, "value"))
                        return vs_error_set(err, -EINVAL, "secrets[%zu]: unknown field \"%s\"", i, key);
        }
        const char *name = json_string_value(json_object_get(o, "name"));
        if (!secret_name_valid(name))
                return vs_error_set(err, -EINVAL, "secrets[%zu]: the name must match [A-Z_][A-Z0-9_]* (at most %d)", i,
                                    SECRET_NAME_MAX);
        if (!(s->name = strdup(name)))
                return -ENOMEM;
        json_t *hosts = json_object_get(o, "hosts");
        if (!json_is_array(hosts) || json_array_size(hosts) > SECRET_HOSTS_MAX)
                return vs_error_set(err, -EINVAL, "secret %s: \"hosts\" must be a list of at most %d hosts", name,
                                    SECRET_HOSTS_MAX);
        if (!(s->hosts = calloc(1, sizeof(char *))))
                return -ENOMEM;
        size_t k;
        json_array_foreach(hosts, k, v) {
                if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
                        return vs_error_set(err, -EINVAL, "secret %s: hosts[%zu] must be a string", name, k);
                if (strv_extend(&s->hosts, json_string_value(v)) < 0)
                        return -ENOMEM;
        }
        int r = check_hosts(name, s->hosts, err);
        if (r < 0 || (r = parse_headers(json_object_get(o, "headers"), s, err)) < 0)
                return r;
        json_t *val = json_object_get(o, "value");
        if (!json_is_string(val))
                return vs_error_set(err, -EINVAL, "secret %s: \"value\" must be a base64 string", name);
        r = base64_decode_alloc(json_string_value(val), json_string_length(val), &s->value, &s->value_len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return vs_error_set(err, -EINVAL, "secret %s: \"value\" is not base64", name);
        return check_value(name, s->value, s->value_len, err);
}

int secret_store_parse(const char *text, size_t len, VsSecretStore *ret, VsError **err) {
        json_error_t je;
        _cleanup_(json_decrefp) json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!root || !json_is_object(root))
                return vs_error_set(err, -EINVAL, "not a JSON object (line %d: %s)", je.line, root ? "" : je.text);
        json_t *ver = json_object_get(root, "version"), *list = json_object_get(root, "secrets");
        if (!json_is_integer(ver) || json_integer_value(ver) != 1)
                return vs_error_set(err, -EINVAL, "\"version\" must be 1");
        if (json_object_size(root) != 2 || !json_is_array(list))
                return vs_error_set(err, -EINVAL, "the store holds exactly \"version\" and \"secrets\" (a list)");
        if (json_array_size(list) > SECRET_STORE_MAX_SECRETS)
                return vs_error_set(err, -E2BIG, "more than %d secrets", SECRET_STORE_MAX_SECRETS);
        VsSecretStore s = { .items = calloc(json_array_size(list) + 1, sizeof(VsSecret)) };
        if (!s.items)
                return -ENOMEM;
        size_t i;
        json_t *o;
        json_array_foreach(list, i, o) {
                int r = parse_one(o, i, &s.items[s.n++], err);
                if (r >= 0 && secret_store_find(&(VsSecretStore){ s.items, s.n - 1 }, s.items[s.n - 1].name))
                        r = vs_error_set(err, -EINVAL, "secret %s is listed twice", s.items[s.n - 1].name);
                if (r < 0) {
                        secret_store_done(&s);
                        return r;
                }
        }
        *ret = s;
        return 0;
}

int secret_store_format(const VsSecretStore *s, char **ret) {
        _cleanup_(json_decrefp) json_t *list = json_array();
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < s->n; i++) {
                const VsSecret *x = &s->items[i];
                _cleanup_free_ char *b64 = base64_encode_alloc(x->value, x->value_len, NULL);
                json_t *hosts = strv_json(x->hosts);
                json_t *o = b64 && hosts ? json_pack("{s:s,s:o,s:s}", "name", x->name, "hosts", hosts, "value", b64) : NULL;
                if (b64)
                        explicit_bzero(b64, strlen(b64));
                /* json_pack's "o" takes hosts even when it fails. */
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
                /* Only when there are some: see secret-store.h. */
                if (x->headers && x->headers[0] && json_object_set_new(o, "headers", strv_json(x->headers)) < 0)
                        return -ENOMEM;
        }
        _cleanup_(json_decrefp) json_t *root = json_pack("{s:i,s:O}", "version", 1, "secrets", list);
        char *t = root ? json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

char *secret_store_path(const char *state_dir, uid_t uid) {
        char name[64];
        snprintf(name, sizeof name, "secrets-%u.json", (unsigned)uid);
        return path_join(state_dir, name);
}

int secret_store_load(const char *state_dir, uid_t uid, VsSecretStore *ret, VsError **err) {
        _cleanup_free_ char *p = secret_store_path(state_dir, uid), *text = NULL;
        if (!p)
                return -ENOMEM;
        _cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                *ret = (VsSecretStore){};
                return 0;
        }
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot open the secret store %s: %m", p);
        /* Only its owner (the daemon's user) may have written or read it. */
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
                return vs_error_set_kind(err, -EPERM, "sandbox_unavailable",
                                         "the secret store %s must be a file of uid %u with mode 0600; fix or remove it", p,
                                         (unsigned)geteuid());
        size_t len = 0;
        int r = read_fd_all(fd, SECRET_STORE_FILE_MAX, &text, &len);
        if (r < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "cannot read the secret store %s: %s", p, strerror(-r));
        r = secret_store_parse(text, len, ret, err);
        explicit_bzero(text, len);
        if (r < 0 && r != -ENOMEM)
                return vs_error_prefix(err, "the secret store %s", p);
        return r;
}

static int store_write(const char *state_dir, uid_t uid, const VsSecretStore *s, VsError **err) {
        _cleanup_free_ char *p = secret_store_path(state_dir, uid), *tmp = NULL, *text = NULL;
        if (!p || asprintf(&tmp, "%s.tmp.XXXXXX", p) < 0)
                return -ENOMEM;
        int r = secret_store_format(s, &text);
        if (r < 0)
                return r;
        /* mkostemp makes it 0600 before a byte is written. */
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0 || fchmod(fd, 0600) < 0 || (r = write_all(fd, text, strlen(text))) < 0 || fsync(fd) < 0 ||
            rename(tmp, p) < 0) {
                r = r < 0 ? r : -errno;
                if (fd >= 0)
                        unlink(tmp);
        }
        explicit_bzero(text, strlen(text));
        if (r < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "cannot write the secret store %s: %s", p, strerror(-r));
        _cleanup_close_ int dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void)fsync(dfd);
        return 0;
}

int secret_store_set(const char *state_dir, uid_t uid, const char *name, char *const *hosts, char *const *headers,
                     const char *value, size_t value_len, VsError **err) {
        if (!secret_name_valid(name))
                return vs_error_set_kind(err, -EINVAL, "bad_request",
                                         "secret name \"%s\" must match [A-Z_][A-Z0-9_]* (at most %d characters)",
                                         name ? name : "", SECRET_NAME_MAX);
        /* The caller's mistake, not the daemon's: bad_request. */
        _cleanup_(vs_error_freep) VsError *why = NULL;
        int r = check_hosts(name, hosts, &why);
        if (r >= 0)
                r = secret_headers_check(name, headers, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return vs_error_set_kind(err, r, "bad_request", "%s", vs_error_message(why));
        if ((r = check_value(name, value, value_len, err)) < 0)
                return r;
        _cleanup_(secret_store_done) VsSecretStore s = {};
        if ((r = secret_store_load(state_dir, uid, &s, err)) < 0)
                return r;
        VsSecret *x = (VsSecret *)secret_store_find(&s, name);
        if (!x) {
                if (s.n >= SECRET_STORE_MAX_SECRETS)
                        return vs_error_set_kind(err, -E2BIG, "bad_request", "the store already holds %d secrets",
                                                 SECRET_STORE_MAX_SECRETS);
                VsSecret *items = realloc(s.items, (s.n + 1) * sizeof *items);
                if (!items)
                        return -ENOMEM;
                s.items = items;
                x = &s.items[s.n++];
                *x = (VsSecret){};
        } else
                secret_done(x);
        if (!(x->name = strdup(name)) || !(x->hosts = strv_copy(hosts)) ||
            (headers && !(x->headers = strv_copy(headers))) || !(x->value = malloc(value_len + 1)))
                return -ENOMEM;
        memcpy(x->value, value, value_len);
        x->value[value_len] = 0;
        x->value_len = value_len;
        return store_write(state_dir, uid, &s, err);
}

int secret_store_delete(const char *state_dir, uid_t uid, const char *name, VsError **err) {
        _cleanup_(secret_store_done) VsSecretStore s = {};
        int r = secret_store_load(state_dir, uid, &s, err);
        if (r < 0)
                return r;
        VsSecret *x = (VsSecret *)secret_store_find(&s, name);
        if (!x)
                return vs_error_set_kind(err, -ENOENT, "bad_request", "no secret named \"%s\"", name ? name : "");
        secret_done(x);
        memmove(x, x + 1, (size_t)(s.items + s.n - (x + 1)) * sizeof *x);
        s.n--;
        return store_write(state_dir, uid, &s, err);
}

json_t *secret_store_list_json(const VsSecretStore *s) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < s->n; i++) {
                json_t *hosts = strv_json(s->items[i].hosts), *headers = strv_json(s->items[i].headers);
                json_t *o = hosts && headers ? json_pack("{s:s,s:o,s:o}", "name", s->items[i].name, "hosts", hosts,
                                                         "headers", headers)
                                             : (json_decref(hosts), json_decref(headers), NULL);
                if (!o || json_array_append_new(list, o) < 0) {
                        json_decref(list);
                        return NULL;
                }
        }
        return list ? json_pack("{s:o}", "secrets", list) : NULL;
}

int secret_store_owner(const VsPolicy *p, uid_t *ret, VsError **err) {
        /* A daemon serves its own uid and root only (peer_uid_allowed):
         * one user's secrets, kept under that user's uid, whoever owns
         * the workspace directory. */
        (void)p;
        (void)err;
        *ret = geteuid();
        return 0;
}

/* Whether the allowlist lets the proxy reach every address the secret's
 * host h may be sent to. */
static bool host_listed(const VsPolicy *p, const VsNetRule *h) {
        for (size_t i = 0; i < p->n_net_rules; i++) {
                const VsNetRule *n = &p->net_rules[i];
                if (n->kind == h->kind && streq(n->host, h->host) && (n->port == 0 || n->port == h->port))
                        return true;
        }
        return h->kind == VS_NET_NAME && h->port && net_match(p->net_rules, p->n_net_rules, h->host, h->port);
}

static int load_for(const char *state_dir, const VsPolicy *p, VsSecretStore *ret, VsError **err) {
        uid_t uid;
        int r = secret_store_owner(p, &uid, err);
        if (r < 0)
                return r;
        if ((r = secret_store_load(state_dir, uid, ret, err)) < 0)
                return r;
        for (size_t i = 0; i < p->n_secrets; i++) {
                const VsSecretUse *u = &p->secrets[i];
                const VsSecret *s = secret_store_find(ret, u->name);
                if (!s) {
                        secret_store_done(ret);
                        return vs_error_set_kind(err, -ENOENT, "config_invalid",
                                                 VS_CONFIG_FILE ":%u:%u: sandbox.secrets[%zu]: uid %u holds no secret %s; run "
                                                 "vectora-sandbox secret set %s --host HOST",
                                                 u->line, u->col, i, (unsigned)uid, u->name, u->name);
                }
                for (char **h = s->hosts; *h; h++) {
                        VsNetRule rule = {};
                        bool ok = net_rule_parse(*h, &rule, NULL) >= 0 && host_listed(p, &rule);
                        net_rule_done(&rule);
                        if (!ok) {
                                r = vs_error_set_kind(err, -EPERM, "config_invalid",
                                                      VS_CONFIG_FILE ":%u:%u: sandbox.secrets[%zu]: secret %s goes to \"%s\", "
                                                      "which sandbox.network does not list; add \"%s\" to network",
                                                      u->line, u->col, i, u->name, *h, *h);
                                secret_store_done(ret);
                                return r;
                        }
                }
        }
        return 0;
}

int secret_check_policy(const char *state_dir, const VsPolicy *p, VsError **err) {
        if (!p->sandboxed || !p->n_secrets)
                return 0;
        _cleanup_(secret_store_done) VsSecretStore s = {};
        return load_for(state_dir, p, &s, err);
}

int secret_store_for_policy(const char *state_dir, const VsPolicy *p, VsSecretStore *ret, VsError **err) {
        *ret = (VsSecretStore){};
        if (!p->sandboxed || !p->n_secrets)
                return 0;
        _cleanup_(secret_store_done) VsSecretStore all = {};
        int r = load_for(state_dir, p, &all, err);
        if (r < 0)
                return r;
        VsSecretStore used = { .items = calloc(p->n_secrets + 1, sizeof(VsSecret)) };
        if (!used.items)
                return -ENOMEM;
        /* Moved, not copied: one copy of each value in memory. */
        for (size_t i = 0; i < p->n_secrets; i++) {
                VsSecret *s = (VsSecret *)secret_store_find(&all, p->secrets[i].name);
                used.items[used.n++] = *s;
                *s = (VsSecret){ .name = strdup(s->name) };
        }
        *ret = used;
        return 0;
}
