/* SPDX-License-Identifier: MIT */
/* Fuzzes the walk cache reader (src/shared/plan/walk-cache.c): the file
 * lies in the daemon's state directory and a torn or damaged one must be
 * refused whole, never half read. Input: one byte of mode, then the file.
 * Mode even: the bytes as they are (almost always refused by the
 * checksum). Mode odd: the bytes with the right checksum appended, so the
 * fuzzer reaches the record parser. Besides crashes and hangs it checks
 * that every name a parsed cache hands the walk is one component (no '/',
 * not "." or "..": the walk opens it relative to a directory), that every
 * rel is a clean relative path, and that a parsed cache written again
 * reads back to the same records. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "walk-cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

static void check_name(const char *s) {
        check(s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && strlen(s) <= 255);
}

static void check_rel(const char *s) {
        if (!*s)
                return;
        check(s[0] != '/' && s[strlen(s) - 1] != '/' && !strstr(s, "//"));
        char *copy = strdup(s);
        check(copy != NULL);
        for (char *save = NULL, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                check_name(c);
        free(copy);
}

static bool same(const WalkCache *a, const WalkCache *b) {
        if (a->n != b->n || memcmp(a->key, b->key, WALK_CACHE_KEY_LEN) != 0)
                return false;
        for (size_t i = 0; i < a->n; i++) {
                const WalkCacheDir *x = &a->dirs[i], *y = &b->dirs[i];
                if (strcmp(x->rel, y->rel) != 0 || x->dev != y->dev || x->ino != y->ino || x->mtime_sec != y->mtime_sec ||
                    x->mtime_nsec != y->mtime_nsec || x->ctime_sec != y->ctime_sec || x->ctime_nsec != y->ctime_nsec ||
                    x->n_sub != y->n_sub || x->n_match != y->n_match)
                        return false;
                for (size_t j = 0; j < x->n_sub; j++)
                        if (strcmp(x->subdirs[j], y->subdirs[j]) != 0)
                                return false;
                for (size_t j = 0; j < x->n_match; j++)
                        if (x->matches[j].lane != y->matches[j].lane || x->matches[j].kind != y->matches[j].kind ||
                            strcmp(x->matches[j].name, y->matches[j].name) != 0)
                                return false;
        }
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > (1u << 20))
                return 0;
        bool fix = data[0] & 1;
        data++;
        size--;
        uint8_t *buf = malloc(size + SHA256_HEX_LEN + 1);
        check(buf != NULL);
        memcpy(buf, data, size);
        size_t len = size;
        if (fix) {
                char hex[SHA256_HEX_LEN + 1];
                sha256_hex(buf, len, hex);
                memcpy(buf + len, hex, SHA256_HEX_LEN);
                len += SHA256_HEX_LEN;
        }
        /* The key the file says it is for (bytes 8..40), so a fixed-up
         * input is not refused for its key alone. */
        uint8_t key[WALK_CACHE_KEY_LEN] = { 0 };
        if (len >= 8 + WALK_CACHE_KEY_LEN)
                memcpy(key, buf + 8, WALK_CACHE_KEY_LEN);
        WalkCache c;
        int r = walk_cache_parse(buf, len, key, &c);
        check(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0) {
                for (size_t i = 0; i < c.n; i++) {
                        check_rel(c.dirs[i].rel);
                        check(walk_cache_find(&c, c.dirs[i].rel) == &c.dirs[i]);
                        check(c.dirs[i].mtime_nsec < 1000000000u && c.dirs[i].ctime_nsec < 1000000000u);
                        for (size_t j = 0; j < c.dirs[i].n_sub; j++)
                                check_name(c.dirs[i].subdirs[j]);
                        for (size_t j = 0; j < c.dirs[i].n_match; j++) {
                                check_name(c.dirs[i].matches[j].name);
                                check(c.dirs[i].matches[j].lane <= 1 && c.dirs[i].matches[j].kind <= 3);
                        }
                }
                uint8_t *out;
                size_t out_len;
                if (walk_cache_serialize(&c, &out, &out_len) == 0) {
                        WalkCache again;
                        check(walk_cache_parse(out, out_len, key, &again) == 0);
                        check(same(&c, &again));
                        walk_cache_done(&again);
                        free(out);
                }
                /* One byte less is a torn file: refused. */
                WalkCache torn;
                check(walk_cache_parse(buf, len - 1, key, &torn) == -EBADMSG);
                check(torn.n == 0);
        }
        walk_cache_done(&c);
        free(buf);
        return 0;
}
