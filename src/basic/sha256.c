/* SPDX-License-Identifier: MIT */
#include "sha256.h"

#include <nettle/sha2.h>

_Static_assert(sizeof(struct sha256_ctx) <= sizeof(((Sha256 *)0)->state), "Sha256 too small");

void sha256_begin(Sha256 *s) {
        nettle_sha256_init((struct sha256_ctx *)s->state);
}

void sha256_feed(Sha256 *s, const void *p, size_t n) {
        nettle_sha256_update((struct sha256_ctx *)s->state, n, p);
}

void sha256_end_hex(Sha256 *s, char out[SHA256_HEX_LEN + 1]) {
        static const char hex[] = "0123456789abcdef";
        uint8_t d[SHA256_DIGEST_SIZE];
        nettle_sha256_digest((struct sha256_ctx *)s->state, sizeof d, d);
        for (size_t i = 0; i < sizeof d; i++) {
                out[2 * i] = hex[d[i] >> 4];
                out[2 * i + 1] = hex[d[i] & 15];
        }
        out[SHA256_HEX_LEN] = 0;
}

void sha256_hex(const void *p, size_t n, char out[SHA256_HEX_LEN + 1]) {
        Sha256 s;
        sha256_begin(&s);
        sha256_feed(&s, p, n);
        sha256_end_hex(&s, out);
}
