/* SPDX-License-Identifier: MIT */
#include "strbuf.h"

#include <stdio.h>
#include <string.h>

int strbuf_reserve(StrBuf *b, size_t extra) {
        size_t max = b->max ? b->max : SIZE_MAX / 2;
        if (extra > max || b->len > max - extra)
                return -ENOBUFS;
        size_t need = b->len + extra + 1;
        if (need <= b->cap)
                return 0;
        size_t ncap = b->cap ? b->cap : 64;
        while (ncap < need)
                ncap = ncap > SIZE_MAX / 4 ? need : ncap * 2;
        char *n = realloc(b->data, ncap);
        if (!n)
                return -ENOMEM;
        b->data = n;
        b->cap = ncap;
        /* Keep the promise of strbuf.h: always NUL-terminated. */
        b->data[b->len] = 0;
        return 0;
}

int strbuf_append(StrBuf *b, const void *p, size_t n) {
        int r = strbuf_reserve(b, n);
        if (r < 0)
                return r;
        if (n)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = 0;
        return 0;
}

int strbuf_appends(StrBuf *b, const char *s) {
        return strbuf_append(b, s, strlen(s));
}

int strbuf_appendc(StrBuf *b, char c) {
        return strbuf_append(b, &c, 1);
}

int strbuf_appendf(StrBuf *b, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        int r = strbuf_reserve(b, (size_t)n);
        if (r < 0)
                return r;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t)n;
        return 0;
}

void strbuf_consume(StrBuf *b, size_t n) {
        if (n >= b->len) {
                b->len = 0;
        } else {
                memmove(b->data, b->data + n, b->len - n);
                b->len -= n;
        }
        if (b->data)
                b->data[b->len] = 0;
}

void strbuf_clear(StrBuf *b) {
        b->len = 0;
        if (b->data)
                b->data[0] = 0;
}

char *strbuf_steal(StrBuf *b) {
        if (!b->data && strbuf_reserve(b, 0) < 0)
                return NULL;
        char *d = b->data;
        b->data = NULL;
        b->len = b->cap = 0;
        return d;
}

void strbuf_done(StrBuf *b) {
        free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
}
