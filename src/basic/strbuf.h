/* SPDX-License-Identifier: MIT */
#pragma once

/* A growable byte buffer with a hard cap. Owns its storage; always keeps a
 * NUL after the last byte so text content can be used as a C string. */

#include <stdarg.h>
#include <stdint.h>

#include "macro.h"

typedef struct StrBuf {
        char *data;
        size_t len;
        size_t cap;
        size_t max; /* 0 = SIZE_MAX/2 */
} StrBuf;

#define STRBUF_INIT { NULL, 0, 0, 0 }

/* Ensure room for extra bytes; -ENOBUFS past max, -ENOMEM on allocation. */
int strbuf_reserve(StrBuf *b, size_t extra);
int strbuf_append(StrBuf *b, const void *p, size_t n);
int strbuf_appends(StrBuf *b, const char *s);
int strbuf_appendc(StrBuf *b, char c);
int strbuf_appendf(StrBuf *b, const char *fmt, ...) _printf_(2, 3);
/* Drop the first n bytes. */
void strbuf_consume(StrBuf *b, size_t n);
void strbuf_clear(StrBuf *b);
/* Hands the storage out (NUL-terminated, never NULL on success). */
char *strbuf_steal(StrBuf *b);
void strbuf_done(StrBuf *b);
static inline void strbuf_donep(StrBuf *b) {
        strbuf_done(b);
}
#define _cleanup_strbuf_ _cleanup_(strbuf_donep)
