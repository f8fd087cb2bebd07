/* SPDX-License-Identifier: MIT */
/* The checkpoint manifest (src/core/undo/undo-manifest.c): entries added
 * as the store adds them (the first state of a path kept, unclean paths
 * and fields that do not fit the type refused), the file read back as
 * written with names holding spaces, newlines, '%' and a lone "-", the
 * same bytes when written again, and refused whole for any changed byte
 * or cut. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "undo-manifest.h"

static void test_manifest(void **state) {
        (void)state;
        UndoManifest m = { .seq = 7, .time_us = 1733140000123456 };
        char h[SHA256_HEX_LEN + 1];
        sha256_hex("x", 1, h);
        assert_int_equal(undo_manifest_set_label(&m, "terminal rm -rf src"), 0);
        assert_int_equal(undo_manifest_add(&m, "src/b c", UNDO_FILE, 0644, 1, h, NULL), 0);
        assert_int_equal(undo_manifest_add(&m, "src", UNDO_DIR, 0755, 0, NULL, NULL), 0);
        assert_int_equal(undo_manifest_add(&m, "-", UNDO_SYMLINK, 0, 0, NULL, "../%etc\n"), 0);
        assert_int_equal(undo_manifest_add(&m, "new\nline", UNDO_ABSENT, 0, 0, NULL, NULL), 0);
        assert_int_equal(undo_manifest_add(&m, ".env", UNDO_MASKED, 0600, 12, NULL, NULL), 0);
        /* The first pre-image of a path is the one that counts. */
        assert_int_equal(undo_manifest_add(&m, "src", UNDO_ABSENT, 0, 0, NULL, NULL), -EEXIST);
        /* Paths and fields the store refuses. */
        assert_int_equal(undo_manifest_add(&m, "../x", UNDO_ABSENT, 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "/etc/passwd", UNDO_ABSENT, 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "a//b", UNDO_ABSENT, 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "a/./b", UNDO_ABSENT, 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "f", UNDO_FILE, 0644, 1, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "f", UNDO_DIR, 0644, 0, h, NULL), -EINVAL);
        char *text;
        size_t len;
        assert_int_equal(undo_manifest_serialize(&m, &text, &len), 0);
        UndoManifest p;
        assert_int_equal(undo_manifest_parse(text, len, &p), 0);
        assert_int_equal(p.seq, 7);
        assert_int_equal(p.time_us, 1733140000123456);
        assert_string_equal(p.label, "terminal rm -rf src");
        assert_int_equal(p.n, 5);
        assert_string_equal(p.entries[0].path, "-");
        assert_string_equal(p.entries[0].target, "../%etc\n");
        assert_string_equal(undo_manifest_find(&p, "new\nline")->path, "new\nline");
        assert_int_equal(undo_manifest_find(&p, "src/b c")->mode, 0644);
        assert_string_equal(undo_manifest_find(&p, "src/b c")->hash, h);
        char *again;
        size_t again_len;
        assert_int_equal(undo_manifest_serialize(&p, &again, &again_len), 0);
        assert_int_equal(again_len, len);
        assert_memory_equal(again, text, len);
        /* One byte changed anywhere, or the file cut short: refused whole. */
        for (size_t i = 0; i < len; i++) {
                UndoManifest q;
                text[i] ^= 0x01;
                assert_int_equal(undo_manifest_parse(text, len, &q), -EBADMSG);
                assert_int_equal(q.n, 0);
                text[i] ^= 0x01;
                assert_int_equal(undo_manifest_parse(text, i, &q), -EBADMSG);
        }
        free(again);
        free(text);
        undo_manifest_done(&p);
        undo_manifest_done(&m);
}

/* What each type may carry, and the path limits. */
static void test_fields(void **state) {
        (void)state;
        UndoManifest m = { 0 };
        assert_int_equal(undo_manifest_add(&m, "log", UNDO_LOST, 0, 0, NULL, NULL), 0);
        assert_int_equal(undo_manifest_add(&m, "a", UNDO_LOST, 0644, 0, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "a", UNDO_ABSENT, 0, 1, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "a", UNDO_SYMLINK, 0, 0, NULL, ""), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "a", UNDO_SYMLINK, 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "a", UNDO_DIR, 010000, 0, NULL, NULL), -EINVAL);
        assert_int_equal(undo_manifest_add(&m, "a", (UndoType)'z', 0, 0, NULL, NULL), -EINVAL);
        char name[UNDO_NAME_MAX + 2];
        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = 0;
        assert_int_equal(undo_manifest_add(&m, name, UNDO_ABSENT, 0, 0, NULL, NULL), -EINVAL);
        name[UNDO_NAME_MAX] = 0;
        assert_int_equal(undo_manifest_add(&m, name, UNDO_ABSENT, 0, 0, NULL, NULL), 0);
        char *longp = malloc(UNDO_PATH_MAX + 2);
        for (size_t i = 0; i < UNDO_PATH_MAX + 1; i++)
                longp[i] = i % 100 == 99 ? '/' : 'p';
        longp[UNDO_PATH_MAX + 1] = 0;
        assert_int_equal(undo_manifest_add(&m, longp, UNDO_ABSENT, 0, 0, NULL, NULL), -EINVAL);
        free(longp);
        assert_false(undo_path_valid("a/"));
        assert_false(undo_path_valid(""));
        assert_false(undo_path_valid("a/.."));
        assert_true(undo_path_valid("..a/b.."));
        char h[SHA256_HEX_LEN + 1];
        sha256_hex("x", 1, h);
        h[3] = 'A'; /* uppercase hex: not the writer's spelling */
        assert_int_equal(undo_manifest_add(&m, "f", UNDO_FILE, 0644, 1, h, NULL), -EINVAL);
        undo_manifest_done(&m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_manifest),
                cmocka_unit_test(test_fields),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
