/* SPDX-License-Identifier: MIT */
#include "json-ascii.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static const char hex[] = "0123456789ABCDEF";

static size_t put_u(char *q, unsigned u) {
        q[0] = '\\';
        q[1] = 'u';
        for (int i = 0; i < 4; i++)
                q[2 + i] = hex[(u >> (12 - 4 * i)) & 0xf];
        return 6;
}

int json_ascii_append_string(StrBuf *out, const char *p, size_t n) {
        /* At most 6 bytes out per byte in: \u00XX for a control byte or
         * an invalid one, 12 for the 4 bytes of a surrogate pair. */
        if (n > (SIZE_MAX - 2) / 6)
                return -ENOBUFS;
        int r = strbuf_reserve(out, n * 6 + 2);
        if (r < 0)
                return r;
        char *q = out->data + out->len, *start = q;
        const unsigned char *s = (const unsigned char *)p;
        *q++ = '"';
        for (size_t i = 0; i < n;) {
                unsigned char c = s[i];
                if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
                        *q++ = (char)c;
                        i++;
                        continue;
                }
                if (c < 0x80) {
                        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                                      : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
                        if (e) {
                                *q++ = e[0];
                                *q++ = e[1];
                        } else
                                q += put_u(q, c);
                        i++;
                        continue;
                }
                size_t len;
                int32_t cp = utf8_next((const char *)s + i, n - i, &len);
                if (cp < 0) {
                        cp = 0xfffd;
                        len = 1;
                }
                if (cp > 0xffff) {
                        cp -= 0x10000;
                        q += put_u(q, 0xd800 | ((unsigned)cp >> 10));
                        q += put_u(q, 0xdc00 | ((unsigned)cp & 0x3ff));
                } else
                        q += put_u(q, (unsigned)cp);
                i += len;
        }
        *q++ = '"';
        out->len += (size_t)(q - start);
        out->data[out->len] = 0;
        return 0;
}

int json_ascii_append_cstr(StrBuf *out, const char *s) {
        return s ? json_ascii_append_string(out, s, strlen(s)) : strbuf_append(out, "null", 4);
}

int json_ascii_append_int(StrBuf *out, int64_t v) {
        char buf[24], *q = buf + sizeof buf;
        /* Negated as unsigned: INT64_MIN has no positive counterpart. */
        uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
        do
                *--q = (char)('0' + u % 10);
        while ((u /= 10) > 0);
        if (v < 0)
                *--q = '-';
        return strbuf_append(out, q, (size_t)(buf + sizeof buf - q));
}

static int append_real(StrBuf *out, const json_t *v) {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
        if (!d)
                return -EINVAL;
        int r = strbuf_appends(out, d);
        free(d);
        return r;
}

int json_ascii_append(StrBuf *out, const json_t *v) {
        int r = 0;
        if (!v)
                return -EINVAL;
        switch (json_typeof(v)) {
        case JSON_STRING:
                return json_ascii_append_string(out, json_string_value(v), json_string_length(v));
        case JSON_INTEGER:
                return json_ascii_append_int(out, json_integer_value(v));
        case JSON_REAL:
                return append_real(out, v);
        case JSON_TRUE:
                return strbuf_append(out, "true", 4);
        case JSON_FALSE:
                return strbuf_append(out, "false", 5);
        case JSON_NULL:
                return strbuf_append(out, "null", 4);
        case JSON_ARRAY: {
                size_t i;
                json_t *e;
                r = strbuf_appendc(out, '[');
                json_array_foreach((json_t *)v, i, e) {
                        if (r >= 0 && i > 0)
                                r = strbuf_appendc(out, ',');
                        if (r >= 0)
                                r = json_ascii_append(out, e);
                }
                return r < 0 ? r : strbuf_appendc(out, ']');
        }
        case JSON_OBJECT: {
                const char *k;
                json_t *e;
                bool first = true;
                r = strbuf_appendc(out, '{');
                /* Insertion order, as json_dumps() without JSON_SORT_KEYS. */
                json_object_foreach((json_t *)v, k, e) {
                        if (r >= 0 && !first)
                                r = strbuf_appendc(out, ',');
                        first = false;
                        if (r >= 0)
                                r = json_ascii_append_cstr(out, k);
                        if (r >= 0)
                                r = strbuf_appendc(out, ':');
                        if (r >= 0)
                                r = json_ascii_append(out, e);
                }
                return r < 0 ? r : strbuf_appendc(out, '}');
        }
        }
        return -EINVAL;
}
