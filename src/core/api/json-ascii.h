/* SPDX-License-Identifier: MIT */
#pragma once

/* Compact, ASCII-only JSON written straight into a buffer: the same bytes
 * as json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY),
 * without jansson's pack/dump machinery (a format parse, an allocation per
 * value and a snprintf per integer). The daemon writes one audit line per
 * call with it. Pure. */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "strbuf.h"

/* p[0..n) as a quoted JSON string: '"' and '\\' escaped, \b \f \n \r \t,
 * other bytes below 0x20 as \u00XX, code points above U+007F as \uXXXX
 * (a surrogate pair above U+FFFF), upper-case hex as jansson writes it.
 * A byte that does not start valid UTF-8 is written as \uFFFD (jansson
 * would refuse the whole value; a record is never lost for it). */
int json_ascii_append_string(StrBuf *out, const char *p, size_t n);
/* The same for a NUL-terminated string, or null for NULL. */
int json_ascii_append_cstr(StrBuf *out, const char *s);
int json_ascii_append_int(StrBuf *out, int64_t v);
/* Any value; a real number goes through jansson (same bytes). -EINVAL for
 * NULL or what jansson cannot dump. */
int json_ascii_append(StrBuf *out, const json_t *v);
