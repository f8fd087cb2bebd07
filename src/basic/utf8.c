/* SPDX-License-Identifier: MIT */
#include "utf8.h"

#include <string.h>

Utf8Error utf8_decode(const char *p, size_t n, uint32_t *ret_cp, size_t *ret_len) {
        const unsigned char *s = (const unsigned char *)p;
        unsigned char c = s[0];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
                *ret_cp = c;
                *ret_len = 1;
                return UTF8_OK;
        }
        /* 0xc0, 0xc1 (only overlong forms) and 0xf5.. (only past
         * U+10FFFF) start nothing. */
        if (c >= 0xc2 && c <= 0xdf)
                len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
                len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
                len = 4, cp = c & 0x07, min = 0x10000;
        else {
                *ret_len = 0;
                return UTF8_BAD_BYTE;
        }
        if (len > n)
                return UTF8_TRUNCATED;
        for (size_t i = 1; i < len; i++) {
                if (!utf8_is_continuation((char)s[i])) {
                        *ret_len = i;
                        return UTF8_BAD_BYTE;
                }
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        *ret_cp = cp;
        *ret_len = len;
        if (cp < min)
                return UTF8_OVERLONG;
        if (cp >= 0xd800 && cp <= 0xdfff)
                return UTF8_SURROGATE;
        if (cp > 0x10ffff)
                return UTF8_TOO_LARGE;
        return UTF8_OK;
}

int32_t utf8_next(const char *p, size_t n, size_t *ret_len) {
        uint32_t cp;
        size_t len;
        if (utf8_decode(p, n, &cp, &len) != UTF8_OK)
                return -1;
        *ret_len = len;
        return (int32_t)cp;
}

bool utf8_valid(const char *p, size_t n) {
        const char *e = p + n;
        while (p < e) {
                while (e - p >= 8) {
                        uint64_t w;
                        memcpy(&w, p, 8);
                        if (w & 0x8080808080808080ull)
                                break;
                        p += 8;
                }
                if (p >= e)
                        break;
                size_t len;
                if (utf8_next(p, (size_t)(e - p), &len) < 0)
                        return false;
                p += len;
        }
        return true;
}

bool utf8_whole_window(const char *p, size_t n, bool at_end, size_t *ret_skip, size_t *ret_len) {
        size_t skip = 0;
        while (skip < n && skip < 3 && utf8_is_continuation(p[skip]))
                skip++;
        size_t len = n - skip;
        if (!at_end) {
                /* Back to the last lead byte; drop it and its continuation
                 * bytes when they are fewer than it announces. */
                size_t i = len, k = 0;
                while (i > 0 && k < 4 && utf8_is_continuation(p[skip + i - 1]))
                        i--, k++;
                if (i > 0) {
                        unsigned char c = (unsigned char)p[skip + i - 1];
                        size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
                        if (want > 1 && k + 1 < want)
                                len = i - 1;
                }
        }
        if (!utf8_valid(p + skip, len))
                return false;
        *ret_skip = skip;
        *ret_len = len;
        return true;
}
