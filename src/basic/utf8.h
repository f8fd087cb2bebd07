/* SPDX-License-Identifier: MIT */
#pragma once

/* UTF-8 decoding: the one decoder of the project (the JSON-lines texts,
 * the audit's ASCII JSON, Modal's manifest names). Pure. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The code point starting p[0..n) (n >= 1) and its length in *ret_len, or
 * -1 when the bytes there are not valid UTF-8 (an overlong form, a
 * surrogate, a value past U+10FFFF, a sequence cut short). */
int32_t utf8_next(const char *p, size_t n, size_t *ret_len);
/* Whether p[0..n) is valid UTF-8 throughout. NUL bytes are valid. ASCII
 * runs are checked eight bytes at a time. */
bool utf8_valid(const char *p, size_t n);
