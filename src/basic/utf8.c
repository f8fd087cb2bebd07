/* SPDX-License-Identifier: MIT */
#include "utf8.h"

#include <string.h>

int32_t utf8_next(const char *p, size_t n, size_t *ret_len) {
        const unsigned char *s = (const unsigned char *)p;
        unsigned char c = s[0];
        size_t len;
        int32_t cp, min;
        if (c < 0x80) {
                *ret_len = 1;
                return c;
        } else if ((c & 0xe0) == 0xc0) {
                len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
                len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
                len = 4, cp = c & 0x07, min = 0x10000;
        } else
                return -1;
        if (len > n)
                return -1;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return -1;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return -1;
        *ret_len = len;
        return cp;
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
