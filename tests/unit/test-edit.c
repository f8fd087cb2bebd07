/* SPDX-License-Identifier: MIT */
/* file_edit's replacement (tool_edit_apply, src/core/api/tools.c), pure: an
 * exact match replaced once, several matches refused unless replace_all
 * (then every one, counted), absent text refused, an empty old text
 * refused, matches counted without overlap the way they are replaced, and
 * content that is not UTF-8 or holds NULs edited byte for byte, never cut
 * at a NUL; a CRLF file edited with text copied with LF. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools.h"

/* Applies the edit; on success *ret (owned) and its length. On failure
 * the negative errno and the error kind in kind. */
static int edit(const char *content, size_t len, const char *old_text, const char *new_text, bool all, char **ret,
                size_t *ret_len, size_t *ret_count, char kind[64]) {
        VsError *err = NULL;
        int k = tool_edit_apply(content, len, old_text, new_text, all, ret, ret_len, ret_count, &err);
        if (k < 0) {
                assert_non_null(err);
                strncpy(kind, vs_error_kind(err) ? vs_error_kind(err) : "", 63);
                kind[63] = 0;
                vs_error_free(err);
        } else
                assert_null(err);
        return k;
}

static void assert_edits_to(const char *content, const char *old_text, const char *new_text, bool all,
                            const char *want, size_t want_count) {
        char *out = NULL, kind[64] = "";
        size_t n = 0, count = 0;
        assert_int_equal(edit(content, strlen(content), old_text, new_text, all, &out, &n, &count, kind), 0);
        assert_int_equal(n, strlen(want));
        assert_memory_equal(out, want, n);
        assert_int_equal(count, want_count);
        free(out);
}

static void assert_refused(const char *content, const char *old_text, bool all, int want_errno, const char *want_kind) {
        char *out = (char *) "untouched", kind[64] = "";
        size_t n = 99, count = 99;
        assert_int_equal(edit(content, strlen(content), old_text, "x", all, &out, &n, &count, kind), -want_errno);
        assert_string_equal(kind, want_kind);
        /* Outputs are written only on success. */
        assert_string_equal(out, "untouched");
        assert_int_equal(n, 99);
        assert_int_equal(count, 99);
}

static void test_unique_match(void **state) {
        assert_edits_to("one two three\n", "two", "2", false, "one 2 three\n", 1);
        assert_edits_to("abc", "abc", "", false, "", 1);                /* the whole file, to nothing */
        assert_edits_to("abc", "c", "cde", false, "abcde", 1);          /* at the very end */
        assert_edits_to("line1\nline2\n", "1\nl", "1\n\nl", false, "line1\n\nline2\n", 1); /* across lines */
}

static void test_refusals(void **state) {
        assert_refused("a a", "a", false, ENOTUNIQ, "edit_not_unique");
        assert_refused("abc", "x", false, ENOENT, "edit_not_found");
        assert_refused("abc", "x", true, ENOENT, "edit_not_found");
        assert_refused("abc", "", false, EINVAL, "bad_request");
        assert_refused("", "a", false, ENOENT, "edit_not_found");
        /* Case and whitespace are not normalized: exact bytes only. */
        assert_refused("Hello world", "hello world", false, ENOENT, "edit_not_found");
        /* Line endings are the one exception (test_crlf); an LF file does
         * not match CRLF text. */
        assert_refused("a\nb", "a\r\nb", false, ENOENT, "edit_not_found");
}

static void test_replace_all(void **state) {
        assert_edits_to("a-a-a", "a", "bb", true, "bb-bb-bb", 3);
        assert_edits_to("only once", "once", "twice", true, "only twice", 1);
        /* Without overlap, left to right, as counted: "aaa" holds one "aa"
         * (then "a"), so it is unique and replaced once. */
        assert_edits_to("aaa", "aa", "b", false, "ba", 1);
        assert_edits_to("aaaa", "aa", "b", true, "bb", 2);
        assert_refused("aaaa", "aa", false, ENOTUNIQ, "edit_not_unique");
        /* The new text holding the old one is not matched again. */
        assert_edits_to("x y x", "x", "xx", true, "xx y xx", 2);
}

static void test_bytes(void **state) {
        /* NULs and bytes that are not UTF-8 around the match stay as they were. */
        static const char content[] = { 'a', 0, '\xff', 'O', 'L', 'D', '\xc3', 0, 'z' };
        static const char want[] = { 'a', 0, '\xff', 'n', 'e', 'w', '!', '\xc3', 0, 'z' };
        char *out = NULL, kind[64] = "";
        size_t n = 0, count = 0;
        assert_int_equal(edit(content, sizeof content, "OLD", "new!", false, &out, &n, &count, kind), 0);
        assert_int_equal(n, sizeof want);
        assert_memory_equal(out, want, n);
        free(out);
        /* A match after a NUL is found: the content is not a C string. */
        static const char late[] = { 0, 0, 'k', 'e', 'y' };
        assert_int_equal(edit(late, sizeof late, "key", "K", false, &out, &n, &count, kind), 0);
        assert_int_equal(n, 3);
        assert_memory_equal(out, "\0\0K", 3);
        free(out);
        /* UTF-8 text is matched as bytes: a multi-byte character whole. */
        assert_edits_to("caf\xc3\xa9 cr\xc3\xa8me", "\xc3\xa9", "e", false, "cafe cr\xc3\xa8me", 1);
        /* A match inside a larger character's bytes is still a byte match:
         * the worker's write keeps whatever the agent asked for. */
        assert_edits_to("\xe2\x82\xac", "\x82", "", false, "\xe2\xac", 1);
}

/* A CRLF file edited with text copied as LF: matched, and the
 * replacement written with CRLF; text that already has the CR, and an
 * LF file, are matched as they are. */
static void test_crlf(void **state) {
        (void)state;
        assert_edits_to("a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\nz\n", false, "x\r\ny\r\nz\r\nc\r\n", 1);
        assert_edits_to("a\r\nb\r\n", "a\r\nb", "q\r\nr", false, "q\r\nr\r\n", 1);
        assert_edits_to("a\r\nb\r\na\r\nb\r\n", "a\nb", "c", true, "c\r\nc\r\n", 2);
        char *out = NULL, kind[64] = "";
        size_t n = 0, count = 0;
        assert_int_equal(edit("a\nb\n", 4, "a\r\nb", "c", false, &out, &n, &count, kind), -ENOENT);
        assert_string_equal(kind, "edit_not_found");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unique_match),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_replace_all),
                cmocka_unit_test(test_bytes),
                cmocka_unit_test(test_crlf),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
