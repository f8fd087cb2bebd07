/* SPDX-License-Identifier: MIT */
/* Fuzzes the checkpoint manifest parser (src/core/undo/undo-manifest.c):
 * the file lies in the daemon's state directory and a torn or damaged one
 * must be refused whole, never half restored. Input: one byte of mode,
 * then the file. Mode even: the bytes as they are (almost always refused
 * by the checksum). Mode odd: the bytes with "end " and the right
 * checksum appended, so the fuzzer reaches the record parser. Besides
 * crashes and hangs it checks that every path a parsed manifest hands a
 * restore is clean (relative, no "." or "..", no empty component), that
 * paths are strictly ascending, that each entry carries what its type
 * says and nothing else, and that a parsed manifest written again is the
 * same bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "undo-manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

static void check_path(const char *p) {
        check(undo_path_valid(p));
        check(p[0] != '/' && p[strlen(p) - 1] != '/' && !strstr(p, "//"));
        char *copy = strdup(p);
        check(copy != NULL);
        for (char *save = NULL, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                check(strcmp(c, ".") != 0 && strcmp(c, "..") != 0 && strlen(c) <= UNDO_NAME_MAX);
        free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > (1u << 20))
                return 0;
        bool fix = data[0] & 1;
        data++;
        size--;
        char *buf = malloc(size + SHA256_HEX_LEN + 6);
        check(buf != NULL);
        memcpy(buf, data, size);
        size_t len = size;
        if (fix) {
                char hex[SHA256_HEX_LEN + 1];
                sha256_hex(buf, len, hex);
                memcpy(buf + len, "end ", 4);
                memcpy(buf + len + 4, hex, SHA256_HEX_LEN);
                buf[len + 4 + SHA256_HEX_LEN] = '\n';
                len += 5 + SHA256_HEX_LEN;
        }
        UndoManifest m;
        int r = undo_manifest_parse(buf, len, &m);
        check(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0) {
                check(m.seq > 0 && m.time_us >= 0);
                check(!m.label || strlen(m.label) <= UNDO_LABEL_MAX);
                for (size_t i = 0; i < m.n; i++) {
                        const UndoEntry *e = &m.entries[i];
                        check_path(e->path);
                        if (i > 0)
                                check(strcmp(m.entries[i - 1].path, e->path) < 0);
                        check(undo_manifest_find(&m, e->path) == e);
                        check(e->mode <= 07777);
                        check((e->type == UNDO_FILE) == (e->hash[0] != 0));
                        check((e->type == UNDO_SYMLINK) == (e->target != NULL));
                        if (e->type == UNDO_FILE)
                                check(strlen(e->hash) == SHA256_HEX_LEN);
                        if (e->type == UNDO_ABSENT || e->type == UNDO_SYMLINK)
                                check(e->mode == 0 && e->size == 0);
                }
                char *out;
                size_t out_len;
                if (undo_manifest_serialize(&m, &out, &out_len) == 0) {
                        check(out_len == len && memcmp(out, buf, len) == 0);
                        free(out);
                }
                /* One byte less is a torn file: refused. */
                UndoManifest torn;
                check(undo_manifest_parse(buf, len - 1, &torn) == -EBADMSG);
                check(torn.n == 0);
        }
        undo_manifest_done(&m);
        free(buf);
        return 0;
}
