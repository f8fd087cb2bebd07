/* SPDX-License-Identifier: MIT */
#pragma once

/* SHA-256 as lowercase hex, over nettle. */

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

typedef struct Sha256 {
        _Alignas(16) uint8_t state[160]; /* holds a struct sha256_ctx (size checked in sha256.c) */
} Sha256;

void sha256_begin(Sha256 *s);
void sha256_feed(Sha256 *s, const void *p, size_t n);
/* Writes 64 hex chars and a NUL. */
void sha256_end_hex(Sha256 *s, char out[SHA256_HEX_LEN + 1]);
void sha256_hex(const void *p, size_t n, char out[SHA256_HEX_LEN + 1]);
