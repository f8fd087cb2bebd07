/* SPDX-License-Identifier: MIT */
#include "proxy-ctl.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "http-rules.h"
#include "macro.h"
#include "secret-header.h"
#include "strv.h"

static const char *const op_names[] = {
        [PROXY_CTL_ADD] = "add",       [PROXY_CTL_RULES] = "rules",   [PROXY_CTL_PEER] = "peer",
        [PROXY_CTL_REMOVE] = "remove", [PROXY_CTL_DENIAL] = "denial", [PROXY_CTL_CONNS] = "conns",
        [PROXY_CTL_HELLO] = "hello",   [PROXY_CTL_SECRET] = "secret", [PROXY_CTL_SECRET_USE] = "secret_use",
        [PROXY_CTL_HTTP] = "http",     [PROXY_CTL_COMMIT] = "commit",
};

void proxy_ctl_msg_done(ProxyCtlMsg *m) {
        for (size_t i = 0; i < m->n_rules; i++)
                net_rule_done(&m->rules[i]);
        free(m->rules);
        free(m->config);
        free(m->host);
        free(m->reason);
        free(m->name);
        free(m->placeholder);
        free(m->method);
        free(m->path);
        strv_free(m->http_allow);
        strv_free(m->headers);
        free(m->cert);
        if (m->key)
                explicit_bzero(m->key, strlen(m->key));
        free(m->key);
        if (m->value)
                explicit_bzero(m->value, m->value_len);
        free(m->value);
        *m = (ProxyCtlMsg) {};
}

/* An unsigned integer field in [0, max]. */
static int get_uint(json_t *o, const char *key, uint64_t max, uint64_t *ret, VsError **err) {
        json_t *v = json_object_get(o, key);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
                return vs_error_set(err, -EBADMSG, "proxy control: \"%s\" must be an integer in [0, %llu]", key,
                                    (unsigned long long)max);
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

static int get_str(json_t *o, const char *key, size_t max, char **ret, VsError **err) {
        json_t *v = json_object_get(o, key);
        if (!json_is_string(v) || json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
                return vs_error_set(err, -EBADMSG, "proxy control: \"%s\" must be a string of at most %zu bytes", key,
                                    max);
        return (*ret = strdup(json_string_value(v))) ? 0 : -ENOMEM;
}

static int get_rules(json_t *o, ProxyCtlMsg *m, size_t max, VsError **err) {
        json_t *a = json_object_get(o, "rules");
        if (!json_is_array(a) || json_array_size(a) > max)
                return vs_error_set(err, -EBADMSG, "proxy control: \"rules\" must be an array of at most %zu", max);
        if (json_array_size(a) && !(m->rules = calloc(json_array_size(a), sizeof *m->rules)))
                return -ENOMEM;
        size_t i;
        json_t *e;
        json_array_foreach(a, i, e) {
                VsNetRule *r = &m->rules[m->n_rules];
                uint64_t kind = 0, port = 0, line = 0, col = 0;
                int k;
                if (!json_is_object(e))
                        return vs_error_set(err, -EBADMSG, "proxy control: a rule must be an object");
                m->n_rules++;
                if ((k = get_uint(e, "kind", VS_NET_IP, &kind, err)) < 0 ||
                    (k = get_uint(e, "port", UINT16_MAX, &port, err)) < 0 ||
                    (k = get_uint(e, "line", UINT32_MAX, &line, err)) < 0 ||
                    (k = get_uint(e, "col", UINT32_MAX, &col, err)) < 0 ||
                    (k = get_str(e, "host", VS_NET_HOST_MAX + 2, &r->host, err)) < 0 ||
                    (k = get_str(e, "written", 1024, &r->written, err)) < 0)
                        return k;
                r->kind = (VsNetKind)kind;
                r->port = (uint16_t)port;
                r->line = (unsigned)line;
                r->col = (unsigned)col;
        }
        return 0;
}

static bool secret_name_ok(const char *s) {
        if (!*s || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
                        return false;
        return true;
}

/* A secret's headers: absent is none (Authorization only); each one the
 * store would take (secret_header_refusal()), none twice. */
static int get_headers(json_t *a, ProxyCtlMsg *m, VsError **err) {
        if (!a)
                return 0;
        if (!json_is_array(a) || json_array_size(a) > SECRET_HEADERS_MAX)
                return vs_error_set(err, -EBADMSG, "proxy control: \"headers\" must be an array of at most %d",
                                    SECRET_HEADERS_MAX);
        if (!(m->headers = calloc(json_array_size(a) + 1, sizeof(char *))))
                return -ENOMEM;
        size_t i;
        json_t *e;
        json_array_foreach(a, i, e) {
                if (!json_is_string(e) || json_string_length(e) > SECRET_HEADER_NAME_MAX ||
                    strlen(json_string_value(e)) != json_string_length(e))
                        return vs_error_set(err, -EBADMSG, "proxy control: a header must be a string of at most %d bytes",
                                            SECRET_HEADER_NAME_MAX);
                if (!(m->headers[i] = strdup(json_string_value(e))))
                        return -ENOMEM;
                m->n_headers++;
        }
        if (secret_headers_check(m->name, m->headers, NULL) < 0)
                return vs_error_set(err, -EBADMSG, "proxy control: a secret's headers are malformed");
        return 0;
}

/* The value is spliced into a request head: no byte may end a line. */
static int get_secret(json_t *o, ProxyCtlMsg *m, VsError **err) {
        _cleanup_free_ char *b64 = NULL;
        int r;
        if ((r = get_str(o, "name", PROXY_CTL_SECRET_NAME_MAX, &m->name, err)) < 0 ||
            (r = get_str(o, "placeholder", PROXY_CTL_PLACEHOLDER_MAX, &m->placeholder, err)) < 0 ||
            (r = get_str(o, "value", (PROXY_CTL_SECRET_VALUE_MAX + 2) / 3 * 4, &b64, err)) < 0 ||
            (r = get_rules(o, m, PROXY_CTL_SECRET_HOSTS_MAX, err)) < 0)
                return r;
        /* The proxy finds placeholders by this prefix (src/proxy/inject.c). */
        if (!secret_name_ok(m->name) || strlen(m->placeholder) < 16 || strncmp(m->placeholder, "vsph_", 5) != 0)
                return vs_error_set(err, -EBADMSG, "proxy control: a secret's name or placeholder is malformed");
        for (const char *p = m->placeholder; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
                        return vs_error_set(err, -EBADMSG, "proxy control: a placeholder is [a-z0-9_]");
        r = base64_decode_alloc(b64, strlen(b64), &m->value, &m->value_len);
        explicit_bzero(b64, strlen(b64));
        if (r == -ENOMEM)
                return r;
        if (r < 0 || m->value_len == 0 || m->value_len > PROXY_CTL_SECRET_VALUE_MAX)
                return vs_error_set(err, -EBADMSG, "proxy control: a secret's value is not base64 of 1..%d bytes",
                                    PROXY_CTL_SECRET_VALUE_MAX);
        for (size_t i = 0; i < m->value_len; i++)
                if (m->value[i] == '\r' || m->value[i] == '\n' || m->value[i] == '\0')
                        return vs_error_set(err, -EBADMSG, "proxy control: a secret's value holds a line break or NUL");
        if (m->n_rules == 0)
                return vs_error_set(err, -EBADMSG, "proxy control: a secret without hosts");
        if ((r = get_headers(json_object_get(o, "headers"), m, err)) < 0)
                return r;
        /* The leaf the proxy terminates TLS with for the secret's hosts
         * (HTTPS interception): both or neither. */
        if (json_object_get(o, "cert") || json_object_get(o, "key")) {
                if ((r = get_str(o, "cert", PROXY_CTL_PEM_MAX, &m->cert, err)) < 0 ||
                    (r = get_str(o, "key", PROXY_CTL_PEM_MAX, &m->key, err)) < 0)
                        return r;
        }
        return 0;
}

/* One [[sandbox.http]] entry; http_rules_new() checks each entry's form. */
static int get_http(json_t *o, ProxyCtlMsg *m, VsError **err) {
        int r;
        if ((r = get_str(o, "host", 255, &m->host, err)) < 0 || (r = get_str(o, "config", 4096, &m->config, err)) < 0)
                return r;
        json_t *a = json_object_get(o, "allow");
        if (!json_is_array(a) || json_array_size(a) > HTTP_RULES_MAX_ALLOW)
                return vs_error_set(err, -EBADMSG, "proxy control: \"allow\" must be an array of at most %d", HTTP_RULES_MAX_ALLOW);
        if (!(m->http_allow = calloc(json_array_size(a) + 1, sizeof(char *))))
                return -ENOMEM;
        size_t i;
        json_t *e;
        json_array_foreach(a, i, e) {
                if (!json_is_string(e) || json_string_length(e) > HTTP_RULE_MAX ||
                    strlen(json_string_value(e)) != json_string_length(e))
                        return vs_error_set(err, -EBADMSG, "proxy control: an allow entry must be a string of at most %d bytes",
                                            HTTP_RULE_MAX);
                if (!(m->http_allow[i] = strdup(json_string_value(e))))
                        return -ENOMEM;
                m->n_http_allow++;
        }
        return 0;
}

static int decode(json_t *o, ProxyCtlMsg *m, VsError **err) {
        const char *op = json_string_value(json_object_get(o, "op"));
        size_t i = 0;
        while (i < ELEMENTSOF(op_names) && !(op && streq(op, op_names[i])))
                i++;
        if (i == ELEMENTSOF(op_names))
                return vs_error_set(err, -EBADMSG, "proxy control: unknown op");
        m->op = (ProxyCtlOp)i;
        uint64_t v = 0;
        int r = get_uint(o, "ws", UINT32_MAX, &m->ws, err);
        if (r < 0)
                return r;
        switch (m->op) {
        case PROXY_CTL_ADD:
        case PROXY_CTL_RULES:
                if (!json_is_boolean(json_object_get(o, "allow")))
                        return vs_error_set(err, -EBADMSG, "proxy control: \"allow\" must be a boolean");
                m->allow = json_is_true(json_object_get(o, "allow"));
                if ((r = get_str(o, "config", 4096, &m->config, err)) < 0 || (r = get_rules(o, m, PROXY_CTL_MAX_RULES, err)) < 0)
                        return r;
                if (m->op == PROXY_CTL_RULES)
                        break;
                __attribute__((fallthrough));
        case PROXY_CTL_PEER:
                if ((r = get_uint(o, "peer", UINT32_MAX, &v, err)) < 0)
                        return r;
                m->peer = (uid_t)v;
                break;
        case PROXY_CTL_REMOVE:
        case PROXY_CTL_COMMIT:
                break;
        case PROXY_CTL_DENIAL:
                if ((r = get_uint(o, "time_us", INT64_MAX, &m->time_us, err)) < 0 ||
                    (r = get_str(o, "host", 255, &m->host, err)) < 0 ||
                    (r = get_uint(o, "port", UINT16_MAX, &v, err)) < 0 ||
                    (r = get_str(o, "reason", 399, &m->reason, err)) < 0)
                        return r;
                m->port = (uint16_t)v;
                break;
        case PROXY_CTL_CONNS:
                if ((r = get_uint(o, "open", UINT32_MAX, &m->open, err)) < 0 ||
                    (r = get_uint(o, "total", INT64_MAX, &m->total, err)) < 0 ||
                    (json_object_get(o, "lost") && (r = get_uint(o, "lost", UINT32_MAX, &m->lost, err)) < 0))
                        return r;
                break;
        case PROXY_CTL_HELLO:
                if (!json_is_boolean(json_object_get(o, "seccomp")))
                        return vs_error_set(err, -EBADMSG, "proxy control: \"seccomp\" must be a boolean");
                m->seccomp = json_is_true(json_object_get(o, "seccomp"));
                if ((r = get_uint(o, "landlock", 64, &m->landlock, err)) < 0)
                        return r;
                break;
        case PROXY_CTL_SECRET:
                return get_secret(o, m, err);
        case PROXY_CTL_HTTP:
                return get_http(o, m, err);
        case PROXY_CTL_SECRET_USE:
                if ((r = get_uint(o, "time_us", INT64_MAX, &m->time_us, err)) < 0 ||
                    (r = get_str(o, "host", 255, &m->host, err)) < 0 ||
                    (r = get_uint(o, "port", UINT16_MAX, &v, err)) < 0 ||
                    (r = get_str(o, "name", PROXY_CTL_SECRET_NAME_MAX, &m->name, err)) < 0 ||
                    (r = get_str(o, "method", PROXY_CTL_METHOD_MAX, &m->method, err)) < 0 ||
                    (r = get_str(o, "path", PROXY_CTL_PATH_MAX, &m->path, err)) < 0)
                        return r;
                m->port = (uint16_t)v;
                break;
        }
        return 0;
}

int proxy_ctl_decode(const char *buf, size_t len, ProxyCtlMsg *ret, VsError **err) {
        *ret = (ProxyCtlMsg) {};
        if (len > PROXY_CTL_MAX)
                return vs_error_set(err, -EBADMSG, "proxy control: a message of %zu bytes", len);
        json_error_t je;
        json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(o)) {
                json_decref(o);
                return vs_error_set(err, -EBADMSG, "proxy control: not a JSON object");
        }
        int r = decode(o, ret, err);
        json_decref(o);
        if (r < 0)
                proxy_ctl_msg_done(ret);
        return r == -ENOMEM ? r : r < 0 ? -EBADMSG : 0;
}

static json_t *rules_json(const ProxyCtlMsg *m) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < m->n_rules; i++) {
                const VsNetRule *r = &m->rules[i];
                json_array_append_new(a, json_pack("{s:i, s:s, s:i, s:s, s:I, s:I}", "kind", (int)r->kind, "host",
                                                   r->host, "port", (int)r->port, "written",
                                                   r->written ? r->written : r->host, "line", (json_int_t)r->line,
                                                   "col", (json_int_t)r->col));
        }
        return a;
}

char *proxy_ctl_encode(const ProxyCtlMsg *m) {
        json_t *o = json_pack("{s:s, s:I}", "op", op_names[m->op], "ws", (json_int_t)m->ws);
        if (!o)
                return NULL;
        switch (m->op) {
        case PROXY_CTL_ADD:
        case PROXY_CTL_RULES:
                json_object_set_new(o, "allow", json_boolean(m->allow));
                json_object_set_new(o, "config", json_string(m->config ? m->config : "vectora.toml"));
                json_object_set_new(o, "rules", rules_json(m));
                if (m->op == PROXY_CTL_RULES)
                        break;
                __attribute__((fallthrough));
        case PROXY_CTL_PEER:
                json_object_set_new(o, "peer", json_integer((json_int_t)m->peer));
                break;
        case PROXY_CTL_REMOVE:
        case PROXY_CTL_COMMIT:
                break;
        case PROXY_CTL_DENIAL:
                json_object_set_new(o, "time_us", json_integer((json_int_t)m->time_us));
                json_object_set_new(o, "host", json_string(m->host ? m->host : ""));
                json_object_set_new(o, "port", json_integer(m->port));
                json_object_set_new(o, "reason", json_string(m->reason ? m->reason : ""));
                break;
        case PROXY_CTL_CONNS:
                json_object_set_new(o, "open", json_integer((json_int_t)m->open));
                json_object_set_new(o, "total", json_integer((json_int_t)m->total));
                json_object_set_new(o, "lost", json_integer((json_int_t)m->lost));
                break;
        case PROXY_CTL_HELLO:
                json_object_set_new(o, "seccomp", json_boolean(m->seccomp));
                json_object_set_new(o, "landlock", json_integer((json_int_t)m->landlock));
                break;
        case PROXY_CTL_SECRET: {
                char *b64 = base64_encode_alloc(m->value ? m->value : "", m->value_len, NULL);
                json_object_set_new(o, "name", json_string(m->name ? m->name : ""));
                json_object_set_new(o, "placeholder", json_string(m->placeholder ? m->placeholder : ""));
                json_object_set_new(o, "value", b64 ? json_string(b64) : NULL);
                json_object_set_new(o, "rules", rules_json(m));
                if (m->n_headers) {
                        json_t *h = json_array();
                        for (size_t i = 0; h && i < m->n_headers; i++)
                                json_array_append_new(h, json_string(m->headers[i]));
                        json_object_set_new(o, "headers", h);
                }
                if (m->cert && m->key) {
                        json_object_set_new(o, "cert", json_string(m->cert));
                        json_object_set_new(o, "key", json_string(m->key));
                }
                if (b64)
                        explicit_bzero(b64, strlen(b64));
                free(b64);
                break;
        }
        case PROXY_CTL_HTTP: {
                json_t *a = json_array();
                for (size_t i = 0; a && i < m->n_http_allow; i++)
                        json_array_append_new(a, json_string(m->http_allow[i]));
                json_object_set_new(o, "host", json_string(m->host ? m->host : ""));
                json_object_set_new(o, "config", json_string(m->config ? m->config : "vectora.toml"));
                json_object_set_new(o, "allow", a);
                break;
        }
        case PROXY_CTL_SECRET_USE:
                json_object_set_new(o, "time_us", json_integer((json_int_t)m->time_us));
                json_object_set_new(o, "host", json_string(m->host ? m->host : ""));
                json_object_set_new(o, "port", json_integer(m->port));
                json_object_set_new(o, "name", json_string(m->name ? m->name : ""));
                json_object_set_new(o, "method", json_string(m->method ? m->method : ""));
                json_object_set_new(o, "path", json_string(m->path ? m->path : ""));
                break;
        }
        char *s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        return s;
}
