/* SPDX-License-Identifier: MIT */
#pragma once

/* Standard base64 (RFC 4648, padded), for the JSON fields that carry
 * bytes: the init message's seccomp program, and outputs and file content
 * that are not UTF-8. */

#include <stddef.h>

/* A NUL-terminated encoding of p[0..n); *ret_len (may be NULL) its length.
 * NULL on OOM. */
char *base64_encode_alloc(const void *p, size_t n, size_t *ret_len);
/* Decodes s[0..n) into a malloc'd buffer (NUL after the bytes). -EINVAL
 * when s is not base64; -ENOMEM. */
int base64_decode_alloc(const char *s, size_t n, char **ret, size_t *ret_len);
