/* SPDX-License-Identifier: MIT */
#include "jsonrpc.h"

#include <stdlib.h>
#include <string.h>

#include "jsonl.h"

static bool id_ok(json_t *id) {
        return json_is_integer(id) || json_is_string(id);
}

static int hex4(const char *p, size_t n) {
        unsigned v = 0;
        if (n < 4)
                return -1;
        for (size_t i = 0; i < 4; i++) {
                char c = p[i];
                unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                             : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
                if (d > 15)
                        return -1;
                v = v * 16 + d;
        }
        return (int)v;
}

json_t *jsonrpc_salvage_id(const char *p, size_t n) {
        if (n > JSONRPC_MAX_LINE || !jsonl_depth_ok(p, n, JSONRPC_MAX_DEPTH))
                return NULL;
        _cleanup_free_ char *c = malloc(n ? n : 1);
        if (!c)
                return NULL;
        memcpy(c, p, n);
        bool changed = false, in_string = false;
        for (size_t i = 0; i < n; i++) {
                if (c[i] == '"') {
                        in_string = !in_string;
                        continue;
                }
                if (!in_string || c[i] != '\\' || i + 1 >= n)
                        continue;
                int cp = c[i + 1] == 'u' ? hex4(c + i + 2, n - i - 2) : -1;
                if (cp < 0) {
                        i++; /* \" \\ \n ...: the next byte is escaped */
                        continue;
                }
                int lo = cp >= 0xd800 && cp <= 0xdbff && i + 7 < n && c[i + 6] == '\\' && c[i + 7] == 'u'
                                 ? hex4(c + i + 8, n - i - 8) : -1;
                if (lo >= 0xdc00 && lo <= 0xdfff) {
                        i += 11; /* a pair: one character */
                        continue;
                }
                if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff)) {
                        memcpy(c + i + 2, "fffd", 4);
                        changed = true;
                }
                i += 5;
        }
        if (!changed)
                return NULL;
        _cleanup_(json_decrefp) json_t *v = json_loadb(c, n, JSON_REJECT_DUPLICATES, NULL);
        json_t *id = json_object_get(v, "id");
        return id_ok(id) ? json_incref(id) : NULL;
}

int jsonrpc_parse_line(const char *p, size_t n, json_t **ret, VsError **err) {
        if (n > JSONRPC_MAX_LINE)
                return vs_error_set(err, -EMSGSIZE, "message longer than %u bytes", JSONRPC_MAX_LINE);
        if (!jsonl_depth_ok(p, n, JSONRPC_MAX_DEPTH))
                return vs_error_set(err, -EBADMSG, "JSON nested deeper than %d", JSONRPC_MAX_DEPTH);
        json_error_t jerr;
        json_t *v = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
        if (!v)
                return vs_error_set(err, -EBADMSG, "invalid JSON at column %d: %s", jerr.column, jerr.text);
        if (json_is_array(v) && (json_array_size(v) == 0 || json_array_size(v) > JSONRPC_MAX_BATCH)) {
                size_t k = json_array_size(v);
                json_decref(v);
                if (k == 0)
                        return vs_error_set(err, -EINVAL, "an empty batch");
                return vs_error_set(err, -EINVAL, "a batch of %zu messages; at most %d are accepted", k,
                                    JSONRPC_MAX_BATCH);
        }
        if (!json_is_object(v) && !json_is_array(v)) {
                json_decref(v);
                return vs_error_set(err, -EBADMSG, "a JSON-RPC message must be an object or a batch (array)");
        }
        *ret = v;
        return 0;
}


int jsonrpc_decode(json_t *msg, JsonRpcMessage *ret, json_t **ret_id, VsError **err) {
        if (ret_id)
                *ret_id = NULL;
        if (!json_is_object(msg))
                return vs_error_set(err, -EINVAL, "a JSON-RPC message must be an object");
        json_t *id = json_object_get(msg, "id");
        if (ret_id && id_ok(id))
                *ret_id = id;
        const char *key;
        json_t *v;
        json_object_foreach(msg, key, v) {
                if (!streq(key, "jsonrpc") && !streq(key, "id") && !streq(key, "method") && !streq(key, "params") &&
                    !streq(key, "result") && !streq(key, "error"))
                        return vs_error_set(err, -EINVAL, "unknown member '%s'", key);
        }
        const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
        if (!version || !streq(version, "2.0"))
                return vs_error_set(err, -EINVAL, "\"jsonrpc\" must be \"2.0\"");
        if (id && !id_ok(id))
                return vs_error_set(err, -EINVAL, "\"id\" must be an integer or a string");
        json_t *method = json_object_get(msg, "method");
        json_t *params = json_object_get(msg, "params");
        bool has_result = json_object_get(msg, "result"), has_error = json_object_get(msg, "error");
        if (!method) {
                if (!id || has_result == has_error || params)
                        return vs_error_set(err, -EINVAL, "\"method\" is missing");
                *ret = (JsonRpcMessage) { .kind = JSONRPC_RESPONSE, .id = id };
                return 0;
        }
        if (!json_is_string(method))
                return vs_error_set(err, -EINVAL, "\"method\" must be a string");
        if (has_result || has_error)
                return vs_error_set(err, -EINVAL, "a request cannot carry \"result\" or \"error\"");
        if (params && !json_is_object(params) && !json_is_array(params))
                return vs_error_set(err, -EINVAL, "\"params\" must be an object or an array");
        *ret = (JsonRpcMessage) {
                .kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION,
                .id = id,
                .method = json_string_value(method),
                .params = params,
        };
        return 0;
}

json_t *jsonrpc_response(json_t *id, json_t *result, int code, const char *message) {
        json_t *o = json_object();
        if (!o)
                return NULL;
        int r = json_object_set_new(o, "jsonrpc", json_string("2.0"));
        r |= json_object_set(o, "id", id ? id : json_null());
        if (result)
                r |= json_object_set(o, "result", result);
        else
                r |= json_object_set_new(o, "error", json_pack("{s:i,s:s}", "code", code, "message", message ? message : ""));
        if (r) {
                json_decref(o);
                return NULL;
        }
        return o;
}

int jsonrpc_encode_line(StrBuf *out, json_t *v) {
        /* JSON_COMPACT never emits a raw newline: strings are escaped. */
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!s)
                return -ENOMEM;
        size_t n = strlen(s);
        int r = strbuf_reserve(out, n + 1);
        if (r < 0)
                return r;
        strbuf_append(out, s, n);
        return strbuf_appendc(out, '\n');
}

static int encode_response(StrBuf *out, json_t *id, json_t *result, int code, const char *message) {
        json_t *o = jsonrpc_response(id, result, code, message);
        if (!o)
                return -ENOMEM;
        int r = jsonrpc_encode_line(out, o);
        json_decref(o);
        return r;
}

int jsonrpc_encode_result(StrBuf *out, json_t *id, json_t *result) {
        return encode_response(out, id, result, 0, NULL);
}

int jsonrpc_encode_error(StrBuf *out, json_t *id, int code, const char *message) {
        return encode_response(out, id, NULL, code, message);
}
