/* SPDX-License-Identifier: MIT */
#include "base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <nettle/base64.h>

char *base64_encode_alloc(const void *p, size_t n, size_t *ret_len) {
        size_t len = BASE64_ENCODE_RAW_LENGTH(n);
        char *out = malloc(len + 1);
        if (!out)
                return NULL;
        base64_encode_raw(out, n, p);
        out[len] = 0;
        if (ret_len)
                *ret_len = len;
        return out;
}

int base64_decode_alloc(const char *s, size_t n, char **ret, size_t *ret_len) {
        size_t len = BASE64_DECODE_LENGTH(n);
        char *out = malloc(len + 1);
        if (!out)
                return -ENOMEM;
        struct base64_decode_ctx ctx;
        base64_decode_init(&ctx);
        if (!base64_decode_update(&ctx, &len, (uint8_t *)out, n, s) || !base64_decode_final(&ctx)) {
                free(out);
                return -EINVAL;
        }
        out[len] = 0;
        *ret = out;
        *ret_len = len;
        return 0;
}
