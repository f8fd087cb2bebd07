/* SPDX-License-Identifier: MIT */
#pragma once

/* UTF-8 decoding: the one decoder of the project (the JSON-lines texts,
 * the audit's ASCII JSON, Modal's manifest names). Pure. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why bytes are not UTF-8 (utf8_decode()). */
typedef enum Utf8Error {
        UTF8_OK,
        UTF8_BAD_BYTE,  /* p[*ret_len] cannot be there: no lead byte, or no continuation byte */
        UTF8_TRUNCATED, /* the sequence runs past n */
        UTF8_OVERLONG,  /* *ret_cp in more bytes than it takes */
        UTF8_SURROGATE, /* *ret_cp in U+D800..U+DFFF */
        UTF8_TOO_LARGE, /* *ret_cp past U+10FFFF */
} Utf8Error;

/* Decodes the code point starting p[0..n) (n >= 1): UTF8_OK with it in
 * *ret_cp and its length in *ret_len, or why the bytes there are not
 * valid UTF-8, with the offending byte's offset or the value decoded, as
 * the error says (for a located message). */
Utf8Error utf8_decode(const char *p, size_t n, uint32_t *ret_cp, size_t *ret_len);
/* The code point starting p[0..n) (n >= 1) and its length in *ret_len, or
 * -1 when the bytes there are not valid UTF-8 (an overlong form, a
 * surrogate, a value past U+10FFFF, a sequence cut short). */
int32_t utf8_next(const char *p, size_t n, size_t *ret_len);
/* Whether c continues a sequence (10xxxxxx): a cut before it splits a
 * character. */
static inline bool utf8_is_continuation(char c) {
        return ((unsigned char)c & 0xc0) == 0x80;
}
/* Whether p[0..n) is valid UTF-8 throughout. NUL bytes are valid. ASCII
 * runs are checked eight bytes at a time. */
bool utf8_valid(const char *p, size_t n);
/* A window p[0..n) cut out of a longer text may start and end inside a
 * character: true when, without at most 3 continuation bytes at its start
 * (*ret_skip) and, unless at_end (the window ends the text), a character
 * cut short at its end, it is valid UTF-8 (*ret_len bytes from
 * p + *ret_skip); false when it is not text (nothing is written). */
bool utf8_whole_window(const char *p, size_t n, bool at_end, size_t *ret_skip, size_t *ret_len);
