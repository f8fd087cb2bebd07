/* SPDX-License-Identifier: MIT */
#include "jsonl.h"

#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "utf8.h"

/* A raw payload at least this big that arrived together with its header is
 * handed out by stealing the buffer instead of copying it. */
#define STEAL_MIN (64u * 1024u)
/* Default room offered by get_buffer(). */
#define READ_CHUNK (64u * 1024u)

struct JsonlReader {
        StrBuf buf;    /* bytes data[start..len) not yet returned */
        size_t start;
        size_t scan;   /* bytes after start already searched for '\n' */

        /* A header whose raw payload is still arriving: bytes go straight
         * into raw, so they are copied once. */
        json_t *pending;
        char *raw;
        size_t raw_len;
        size_t raw_have;

        int error;     /* sticky: framing lost */
};

void jsonl_msg_done(JsonlMsg *m) {
        if (!m)
                return;
        json_decref(m->obj);
        free(m->raw_owner);
        *m = (JsonlMsg) JSONL_MSG_INIT;
}

char *jsonl_msg_steal_raw(JsonlMsg *m, size_t *ret_len) {
        if (!m->has_raw || !m->raw)
                return NULL;
        char *p;
        if (m->raw == m->raw_owner) {
                p = m->raw_owner;
        } else {
                p = malloc(m->raw_len + 1);
                if (!p)
                        return NULL;
                memcpy(p, m->raw, m->raw_len);
                p[m->raw_len] = 0;
                free(m->raw_owner);
        }
        if (ret_len)
                *ret_len = m->raw_len;
        m->raw = NULL;
        m->raw_owner = NULL;
        m->raw_len = 0;
        m->has_raw = false;
        return p;
}

int jsonl_reader_new(JsonlReader **ret) {
        JsonlReader *r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

void jsonl_reader_free(JsonlReader *r) {
        if (!r)
                return;
        strbuf_done(&r->buf);
        json_decref(r->pending);
        free(r->raw);
        free(r);
}

void jsonl_reader_release(JsonlReader *r) {
        if (r->pending || r->start < r->buf.len)
                return;
        strbuf_done(&r->buf);
        r->start = r->scan = 0;
}

size_t jsonl_reader_pending(const JsonlReader *r) {
        return (r->buf.len - r->start) + (r->pending ? r->raw_have : 0);
}

bool jsonl_reader_failed(const JsonlReader *r) {
        return r->error != 0;
}

/* Drops consumed bytes: free when everything was consumed, a memmove only
 * when the consumed prefix dominates (amortized O(1) per byte). */
static void compact(JsonlReader *r) {
        if (r->start == 0)
                return;
        if (r->start >= r->buf.len) {
                strbuf_clear(&r->buf);
                r->start = 0;
        } else if (r->start >= READ_CHUNK && r->start >= r->buf.len / 2) {
                strbuf_consume(&r->buf, r->start);
                r->start = 0;
        }
}

int jsonl_reader_feed(JsonlReader *r, const void *data, size_t len) {
        const char *p = data;

        if (r->error)
                return r->error;
        if (r->pending && r->raw_have < r->raw_len) {
                size_t n = MIN(len, r->raw_len - r->raw_have);
                memcpy(r->raw + r->raw_have, p, n);
                r->raw_have += n;
                p += n;
                len -= n;
        }
        if (len == 0)
                return 0;
        compact(r);
        return strbuf_append(&r->buf, p, len);
}

int jsonl_reader_get_buffer(JsonlReader *r, size_t hint, void **ret_p, size_t *ret_len) {
        if (r->error)
                return r->error;
        if (r->pending && r->raw_have < r->raw_len) {
                *ret_p = r->raw + r->raw_have;
                *ret_len = r->raw_len - r->raw_have;
                return 0;
        }
        compact(r);
        int k = strbuf_reserve(&r->buf, hint ? hint : READ_CHUNK);
        if (k < 0)
                return k;
        *ret_p = r->buf.data + r->buf.len;
        *ret_len = r->buf.cap - r->buf.len - 1; /* keep the NUL's byte */
        return 0;
}

void jsonl_reader_commit(JsonlReader *r, size_t n) {
        if (r->pending && r->raw_have < r->raw_len) {
                r->raw_have += MIN(n, r->raw_len - r->raw_have);
                return;
        }
        r->buf.len += n;
        r->buf.data[r->buf.len] = 0;
}

ssize_t jsonl_reader_read_fd(JsonlReader *r, int fd) {
        void *p = NULL;
        size_t n = 0;
        int k = jsonl_reader_get_buffer(r, READ_CHUNK, &p, &n);
        if (k < 0)
                return k;
        ssize_t l;
        do
                l = read(fd, p, n);
        while (l < 0 && errno == EINTR);
        if (l < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : negative_errno();
        jsonl_reader_commit(r, (size_t) l);
        return l;
}

static int fail(JsonlReader *r, int code, VsError **err, const char *what) {
        r->error = code;
        return vs_error_set_kind(err, code, "protocol", "%s", what);
}

/* Nesting depth before parsing, so a deep line costs no allocation and
 * jansson's recursion stays shallow. Exact for valid JSON; for invalid
 * JSON the parser rejects the line anyway. */
bool jsonl_depth_ok(const char *p, size_t n, int max_depth) {
        int depth = 0;
        bool in_str = false;

        for (size_t i = 0; i < n; i++) {
                char c = p[i];
                if (in_str) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_str = false;
                        continue;
                }
                switch (c) {
                case '"':
                        in_str = true;
                        break;
                case '{':
                case '[':
                        if (++depth > max_depth)
                                return false;
                        break;
                case '}':
                case ']':
                        depth--;
                        break;
                default:
                        break;
                }
        }
        return true;
}

static void emit(JsonlMsg *ret, json_t *obj, bool has_raw, char *raw, size_t raw_len, void *owner) {
        *ret = (JsonlMsg) {
                .obj = obj,
                .has_raw = has_raw,
                .raw = raw,
                .raw_len = raw_len,
                .raw_owner = owner,
        };
}

int jsonl_reader_next(JsonlReader *r, JsonlMsg *ret, VsError **err) {
        if (r->error)
                return vs_error_set_kind(err, r->error, "protocol", "stream already failed");

        if (r->pending) {
                if (r->raw_have < r->raw_len)
                        return -EAGAIN;
                r->raw[r->raw_len] = 0;
                emit(ret, TAKE_PTR(r->pending), true, r->raw, r->raw_len, r->raw);
                r->raw = NULL;
                r->raw_len = r->raw_have = 0;
                return 0;
        }

        size_t avail = r->buf.len - r->start;
        if (avail == 0)
                return -EAGAIN;
        char *p = r->buf.data + r->start;
        char *nl = memchr(p + r->scan, '\n', avail - r->scan);
        if (!nl) {
                r->scan = avail;
                if (avail > JSONL_MAX_LINE)
                        return fail(r, -EMSGSIZE, err, "line longer than JSONL_MAX_LINE");
                return -EAGAIN;
        }
        size_t line_len = (size_t) (nl - p);
        if (line_len > JSONL_MAX_LINE)
                return fail(r, -EMSGSIZE, err, "line longer than JSONL_MAX_LINE");
        r->start += line_len + 1;
        r->scan = 0;

        if (!jsonl_depth_ok(p, line_len, JSONL_MAX_DEPTH))
                return vs_error_set_kind(err, -EBADMSG, "bad_request",
                                         "JSON nested deeper than %d", JSONL_MAX_DEPTH);
        json_error_t jerr;
        json_t *obj = json_loadb(p, line_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj)
                return vs_error_set_kind(err, -EBADMSG, "bad_request", "invalid JSON at column %d: %s",
                                         jerr.column, jerr.text);
        if (!json_is_object(obj)) {
                json_decref(obj);
                return vs_error_set_kind(err, -EBADMSG, "bad_request", "message is not a JSON object");
        }

        json_t *rv = json_object_get(obj, "raw");
        if (!rv) {
                emit(ret, obj, false, NULL, 0, NULL);
                return 0;
        }
        if (!json_is_integer(rv) || json_integer_value(rv) < 0) {
                json_decref(obj);
                return fail(r, -EPROTO, err, "\"raw\" must be a non-negative integer");
        }
        if ((uint64_t) json_integer_value(rv) > JSONL_MAX_RAW) {
                json_decref(obj);
                return fail(r, -EMSGSIZE, err, "\"raw\" larger than JSONL_MAX_RAW");
        }
        size_t raw_len = (size_t) json_integer_value(rv);
        json_object_del(obj, "raw");

        avail = r->buf.len - r->start;
        if (avail >= raw_len) {
                size_t tail = avail - raw_len;
                if (raw_len >= STEAL_MIN && tail <= raw_len) {
                        /* Hand the buffer over; only the (smaller) tail
                         * that follows is copied. */
                        StrBuf nb = STRBUF_INIT;
                        if (strbuf_append(&nb, r->buf.data + r->start + raw_len, tail) < 0) {
                                json_decref(obj);
                                return fail(r, -ENOMEM, err, "out of memory");
                        }
                        char *owner = r->buf.data;
                        char *raw = owner + r->start;
                        raw[raw_len] = 0;
                        r->buf = nb;
                        r->start = 0;
                        emit(ret, obj, true, raw, raw_len, owner);
                        return 0;
                }
                char *raw = malloc(raw_len + 1);
                if (!raw) {
                        json_decref(obj);
                        return fail(r, -ENOMEM, err, "out of memory");
                }
                memcpy(raw, r->buf.data + r->start, raw_len);
                raw[raw_len] = 0;
                r->start += raw_len;
                emit(ret, obj, true, raw, raw_len, raw);
                return 0;
        }

        /* The payload is still arriving: give it its own storage now. */
        r->raw = malloc(raw_len + 1);
        if (!r->raw) {
                json_decref(obj);
                return fail(r, -ENOMEM, err, "out of memory");
        }
        memcpy(r->raw, r->buf.data + r->start, avail);
        r->raw_len = raw_len;
        r->raw_have = avail;
        r->start += avail;
        r->pending = obj;
        return -EAGAIN;
}

int jsonl_encode_header(json_t *obj, bool with_raw, size_t raw_len, StrBuf *out) {
        if (!json_is_object(obj) || json_object_get(obj, "raw"))
                return -EINVAL;
        if (raw_len > JSONL_MAX_RAW)
                return -EMSGSIZE;
        with_raw = with_raw || raw_len > 0;

        size_t old = out->len, guess = 256, n;
        for (;;) {
                /* 32: room for ,"raw":N} and the '\n'. */
                int k = strbuf_reserve(out, guess + 32);
                if (k < 0)
                        return k;
                size_t room = out->cap - out->len - 1 - 32;
                n = json_dumpb(obj, out->data + out->len, room, JSON_COMPACT);
                if (n == 0)
                        return -ENOMEM;
                if (n <= room)
                        break;
                guess = n;
        }
        char *end = out->data + old + n - 1; /* the closing '}' */
        if (with_raw)
                n += (size_t) sprintf(end, "%s\"raw\":%zu}", n > 2 ? "," : "", raw_len) - 1;
        if (n > JSONL_MAX_LINE) {
                out->data[old] = 0;
                return -EMSGSIZE;
        }
        out->data[old + n] = '\n';
        out->len = old + n + 1;
        out->data[out->len] = 0;
        return 0;
}

int jsonl_encode(json_t *obj, const void *raw, size_t raw_len, StrBuf *out) {
        size_t old = out->len;
        int k = jsonl_encode_header(obj, raw != NULL, raw_len, out);
        if (k < 0)
                return k;
        k = strbuf_append(out, raw, raw_len);
        if (k < 0) {
                out->len = old;
                if (out->data)
                        out->data[old] = 0;
                return k;
        }
        return 0;
}

/* What append_escaped() makes of one byte: itself, a two-character escape,
 * or \u00XX. */
static size_t escaped_cost(unsigned char c) {
        if (c >= 0x20 && c != '"' && c != '\\')
                return 1;
        switch (c) {
        case '"': case '\\': case '\n': case '\r': case '\t': case '\b': case '\f':
                return 2;
        default:
                return 6;
        }
}

size_t jsonl_escaped_len(const char *p, size_t n) {
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
                total += escaped_cost((unsigned char) p[i]);
        return total;
}

size_t jsonl_escaped_prefix(const char *p, size_t n, size_t budget) {
        size_t i = 0, used = 0;
        while (i < n && used + escaped_cost((unsigned char) p[i]) <= budget)
                used += escaped_cost((unsigned char) p[i++]);
        while (i > 0 && i < n && utf8_is_continuation(p[i]))
                i--;
        return i;
}

size_t jsonl_escaped_suffix(const char *p, size_t n, size_t budget) {
        size_t i = n, used = 0;
        while (i > 0 && used + escaped_cost((unsigned char) p[i - 1]) <= budget)
                used += escaped_cost((unsigned char) p[--i]);
        while (i < n && utf8_is_continuation(p[i]))
                i++;
        return n - i;
}

/* Escapes data as the inside of a JSON string: only '"', '\\' and control
 * characters change; valid UTF-8 passes through as it is. */
static int append_escaped(StrBuf *out, const char *data, size_t len) {
        static const char hex[] = "0123456789abcdef";
        const char *p = data, *e = data + len, *run = p;
        while (p < e) {
                unsigned char c = (unsigned char) *p;
                if (c >= 0x20 && c != '"' && c != '\\') {
                        p++;
                        continue;
                }
                int k = strbuf_append(out, run, (size_t) (p - run));
                if (k < 0)
                        return k;
                char esc[7] = { '\\', 0 };
                size_t el = 2;
                switch (c) {
                case '"': esc[1] = '"'; break;
                case '\\': esc[1] = '\\'; break;
                case '\n': esc[1] = 'n'; break;
                case '\r': esc[1] = 'r'; break;
                case '\t': esc[1] = 't'; break;
                case '\b': esc[1] = 'b'; break;
                case '\f': esc[1] = 'f'; break;
                default:
                        esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
                        el = 6;
                }
                k = strbuf_append(out, esc, el);
                if (k < 0)
                        return k;
                run = ++p;
        }
        return strbuf_append(out, run, (size_t) (p - run));
}

int jsonl_encode_texts(json_t *obj, const JsonlText *texts, size_t n_texts, const void *raw, size_t raw_len,
                       StrBuf *out) {
        size_t old = out->len;
        int k;
        for (size_t i = 0; i < n_texts; i++) {
                if (!texts[i].key || json_object_get(obj, texts[i].key))
                        return -EINVAL;
                if (!utf8_valid(texts[i].data, texts[i].len))
                        return -EILSEQ;
        }
        k = jsonl_encode_header(obj, raw != NULL, raw_len, out);
        if (k < 0)
                return k;
        /* Reopen the object: drop its "}\n" and append the texts. */
        out->len -= 2;
        bool empty = out->len == old + 1; /* "{" */
        for (size_t i = 0; k >= 0 && i < n_texts; i++) {
                k = strbuf_appendf(out, "%s\"%s\":\"", empty && i == 0 ? "" : ",", texts[i].key);
                if (k >= 0)
                        k = append_escaped(out, texts[i].data, texts[i].len);
                if (k >= 0)
                        k = strbuf_appendc(out, '"');
                if (k >= 0 && out->len - old > JSONL_MAX_LINE)
                        k = -EMSGSIZE;
        }
        if (k >= 0)
                k = strbuf_append(out, "}\n", 2);
        if (k >= 0 && out->len - old - 1 > JSONL_MAX_LINE)
                k = -EMSGSIZE;
        if (k >= 0 && raw_len)
                k = strbuf_append(out, raw, raw_len);
        if (k < 0) {
                out->len = old;
                if (out->data)
                        out->data[old] = 0;
                return k;
        }
        return 0;
}
