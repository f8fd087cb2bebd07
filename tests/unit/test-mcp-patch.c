/* SPDX-License-Identifier: MIT */
/* The apply_patch format and the unified diff of the MCP edit tools
 * (src/cli/mcp/mcp-patch.h, mcp-diff.h): pure. Expected values follow
 * Codex's apply_patch format and diff(1)'s unified output. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mcp-diff.h"
#include "mcp-patch.h"

/* The new content of old after the patch's first file (an update). */
static char *update(const char *patch, const char *old, char **ret_why) {
        McpPatch p = {};
        char *why = NULL;
        assert_int_equal(mcp_patch_parse(patch, &p, &why), 0);
        assert_int_equal(p.files[0].kind, MCP_PATCH_UPDATE);
        char *out = NULL;
        size_t n = 0;
        int r = mcp_patch_update(&p, &p.files[0], old, strlen(old), &out, &n, ret_why);
        mcp_patch_done(&p);
        if (r < 0) {
                assert_int_equal(r, -EINVAL);
                return NULL;
        }
        assert_int_equal(strlen(out), n);
        return out;
}

static void test_parse(void **state) {
        McpPatch p = {};
        char *why = NULL;
        assert_int_equal(mcp_patch_parse("*** Begin Patch\r\n*** Add File: a/b.txt\r\n+x\r\n*** Delete File: c\r\n"
                                         "*** Update File: d\r\n*** Move to: e\r\n@@\r\n-1\r\n+2\r\n*** End Patch\r\n",
                                         &p, &why), 0);
        assert_int_equal(p.n_files, 3);
        assert_string_equal(p.files[0].path, "a/b.txt");
        assert_int_equal(p.files[1].kind, MCP_PATCH_DELETE);
        assert_string_equal(p.files[2].move_to, "e");
        char *c = NULL;
        size_t n;
        assert_int_equal(mcp_patch_added(&p, &p.files[0], &c, &n), 0);
        assert_string_equal(c, "x\n");
        free(c);
        mcp_patch_done(&p);

        static const char *const bad[] = {
                "--- a/x\n+++ b/x\n",
                "*** Begin Patch\n*** Add File: x\n+y\n",
                "*** Begin Patch\n*** End Patch\n",
                "*** Begin Patch\n*** Add File: x\ny\n*** End Patch\n",
                "*** Begin Patch\n*** Update File: x\n*** End Patch\n",
                "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch\n",
                "*** Begin Patch\n*** Add File:\n+x\n*** End Patch\n",
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
                assert_int_equal(mcp_patch_parse(bad[i], &p, &why), -EINVAL);
                assert_non_null(why);
                free(why);
                why = NULL;
        }
}

static void test_update(void **state) {
#define P(body) "*** Begin Patch\n*** Update File: f\n" body "*** End Patch"
        static const struct {
                const char *patch, *old, *want;
        } cases[] = {
                /* Two hunks, the second found after the first. */
                { P("@@\n a\n-b\n+B\n@@\n-a\n+A\n"), "a\nb\nc\na\n", "a\nB\nc\nA\n" },
                /* An anchor line found first; trailing white space forgiven. */
                { P("@@ def g():\n-    return 1\n+    return 2\n"), "def f():\n    return 1\ndef g():\n    return 1   \n",
                  "def f():\n    return 1\ndef g():\n    return 2\n" },
                /* CRLF kept; no final newline kept. */
                { P("@@\n-y\n+z\n"), "x\r\ny\r\n", "x\r\nz\r\n" },
                { P("@@\n-y\n+z\n"), "x\ny", "x\nz" },
                /* End of File: the last match, not the first. */
                { P("@@\n-x\n+END\n*** End of File\n"), "x\nx\n", "x\nEND\n" },
                /* A pure addition goes at the end. */
                { P("@@\n+new\n"), "a\n", "a\nnew\n" },
        };
        char *why = NULL;
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                char *out = update(cases[i].patch, cases[i].old, &why);
                assert_non_null(out);
                assert_string_equal(out, cases[i].want);
                free(out);
        }
        /* A hunk that does not match, named. */
        assert_null(update(P("@@\n-nope\n+x\n"), "a\n", &why));
        assert_non_null(strstr(why, "hunk 1 of f does not match"));
        free(why);
#undef P
}

static void test_diff(void **state) {
        StrBuf b = STRBUF_INIT;
        assert_int_equal(mcp_unified_diff("f", "a\nb\nc\n", 6, "f", "a\nB\nc\n", 6, &b), 0);
        assert_string_equal(b.data, "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        strbuf_clear(&b);
        assert_int_equal(mcp_unified_diff(NULL, "", 0, "n", "x\n", 2, &b), 0);
        assert_string_equal(b.data, "--- /dev/null\n+++ b/n\n@@ -0,0 +1,1 @@\n+x\n");
        strbuf_clear(&b);
        assert_int_equal(mcp_unified_diff("f", "x", 1, "f", "x\n", 2, &b), 0);
        assert_string_equal(b.data, "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-x\n\\ No newline at end of file\n+x\n");
        strbuf_clear(&b);
        /* Changes 7 lines apart: two hunks. */
        const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", *c = "X\n2\n3\n4\n5\n6\n7\n8\n9\nY\n";
        assert_int_equal(mcp_unified_diff("f", a, strlen(a), "f", c, strlen(c), &b), 0);
        assert_string_equal(b.data, "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+Y\n");
        strbuf_clear(&b);
        assert_int_equal(mcp_unified_diff("f", "same\n", 5, "f", "same\n", 5, &b), 0);
        assert_int_equal(b.len, 0);
        strbuf_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_update),
                cmocka_unit_test(test_diff),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
