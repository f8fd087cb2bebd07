/* SPDX-License-Identifier: MIT */
/* Mask globs (gitignore semantics) and the mask walker. Expected values come
 * from the gitignore documentation and glob.h, not from running the code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <string.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "glob.h"
#include "mask-walk.h"
#include "path-util.h"
#include "strv.h"

typedef struct MatchCase {
        const char *pattern;
        const char *path;
        bool is_dir;
        bool expected;
} MatchCase;

#define F false
#define D true

static void check_cases(const MatchCase *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_(vs_error_freep) VsError *err = NULL;
                _cleanup_(glob_freep) VsGlob *g = NULL;
                int r = glob_compile(cases[i].pattern, &g, &err);
                if (r < 0)
                        fail_msg("pattern '%s' refused: %s", cases[i].pattern, vs_error_message(err));
                bool got = glob_match(g, cases[i].path, cases[i].is_dir);
                if (got != cases[i].expected)
                        fail_msg("glob_match('%s', '%s', %s) = %d, expected %d", cases[i].pattern, cases[i].path,
                                 cases[i].is_dir ? "dir" : "file", got, cases[i].expected);
        }
}

static void test_basename_any_depth(void **state) {
        static const MatchCase cases[] = {
                { ".env", ".env", F, true },
                { ".env", "a/b/.env", F, true },
                { ".env", ".env", D, true }, /* no trailing '/': directories too */
                { ".env", ".env.local", F, false },
                { ".env", "x.env", F, false },
                { ".env", ".env/x", F, false }, /* exact match only; ancestors are glob_set_masks' job */
                { "*.pem", "key.pem", F, true },
                { "*.pem", "a/b/key.pem", F, true },
                { "*.pem", ".pem", F, true }, /* '*' matches the empty string */
                { "*.pem", "key.pem.bak", F, false },
                { "*.pem", "key.PEM", F, false }, /* case-sensitive */
                { "*.pem", "a.pem/b", F, false },
                { "*", ".hidden", F, true }, /* no special case for dotfiles */
                { "*", "a/b/c", F, true },
                { "a*", ".a", F, false },
                { "a?c", "abc", F, true },
                { "a?c", "ac", F, false },
                { "a?c", "abbc", F, false },
                { "a?c", "a/c", F, false }, /* '?' never matches '/' */
                { "*.txt", "a.txt/b", F, false },
                { "#x", "#x", F, true }, /* no comments: a mask list has one pattern per element */
                { "a b", "a b", F, true },
        };
        check_cases(cases, ELEMENTSOF(cases));
}

static void test_classes(void **state) {
        static const MatchCase cases[] = {
                { "[abc].txt", "b.txt", F, true },
                { "[abc].txt", "d.txt", F, false },
                { "[a-c]x", "bx", F, true },
                { "[a-c]x", "dx", F, false },
                { "[!a-c]x", "dx", F, true },
                { "[!a-c]x", "ax", F, false },
                { "[^a-c]x", "dx", F, true },
                { "[^a-c]x", "bx", F, false },
                { "[]]x", "]x", F, true }, /* ']' first is a member */
                { "[]]x", "ax", F, false },
                { "[!]]x", "ax", F, true },
                { "[!]]x", "]x", F, false },
                { "[a-]x", "-x", F, true }, /* '-' last is a member */
                { "[a-]x", "bx", F, false },
                { "[\\]]", "]", F, true },
                { "[\\-]", "-", F, true },
                { "[[:digit:]]x", "5x", F, true },
                { "[[:digit:]]x", "ax", F, false },
                { "[[:upper:][:digit:]]", "Q", F, true },
                { "[[:upper:][:digit:]]", "q", F, false },
                { "[!x]", "y", F, true },
                { "[!x]", "yy", F, false },
                { "k[0-9][0-9]", "k42", F, true },
                { "k[0-9][0-9]", "k4a", F, false },
                { "a[!b]c", "a/c", F, false }, /* a negated class never matches '/' */
        };
        check_cases(cases, ELEMENTSOF(cases));
}

static void test_escapes(void **state) {
        static const MatchCase cases[] = {
                { "\\*", "*", F, true },
                { "\\*", "a", F, false },
                { "\\?", "?", F, true },
                { "\\?", "a", F, false },
                { "\\[a]", "[a]", F, true },
                { "\\[a]", "a", F, false },
                { "\\!important", "!important", F, true },
                { "a\\\\b", "a\\b", F, true },
                { "\\a", "a", F, true },
        };
        check_cases(cases, ELEMENTSOF(cases));
}

static void test_anchored(void **state) {
        static const MatchCase cases[] = {
                { "/.env", ".env", F, true },
                { "/.env", "a/.env", F, false },
                { "a/b", "a/b", F, true },
                { "a/b", "x/a/b", F, false }, /* a '/' in the middle anchors */
                { "a/b", "a/b/c", F, false },
                { "/a/b", "a/b", F, true },
                { "a/*.txt", "a/x.txt", F, true },
                { "a/*.txt", "a/b/x.txt", F, false }, /* '*' does not cross '/' */
                { "docs/*/x", "docs/a/x", F, true },
                { "docs/*/x", "docs/a/b/x", F, false },
                { "docs/*/x", "docs/x", F, false },
        };
        check_cases(cases, ELEMENTSOF(cases));
}

static void test_doublestar(void **state) {
        static const MatchCase cases[] = {
                { "**/foo", "foo", F, true },
                { "**/foo", "a/b/foo", F, true },
                { "**/foo", "a/foo/b", F, false },
                { "**/foo/bar", "foo/bar", F, true },
                { "**/foo/bar", "x/y/foo/bar", F, true },
                { "**/foo/bar", "foo/x/bar", F, false },
                { "a/**/b", "a/b", F, true }, /* zero components */
                { "a/**/b", "a/x/b", F, true },
                { "a/**/b", "a/x/y/b", F, true },
                { "a/**/b", "b", F, false },
                { "a/**/b", "x/a/b", F, false },
                { "a/**/b", "a/x/y/bc", F, false },
                { "a/**", "a", D, false }, /* everything inside, not a itself */
                { "a/**", "a/x", F, true },
                { "a/**", "a/x/y", F, true },
                { "a/**", "b/x", F, false },
                { "**/.ssh/**", ".ssh/id_rsa", F, true },
                { "**/.ssh/**", "home/u/.ssh/id_rsa", F, true },
                { "**/.ssh/**", ".ssh", D, false },
                { "**/.ssh/**", "x/.sshx/a", F, false },
                { "**", "a", F, true },
                { "**", "a/b/c", F, true },
                { "/**", "a/b", D, true },
                { "**/*.pem", "k.pem", F, true },
                { "**/*.pem", "a/b/k.pem", F, true },
                { "a/**/**/b", "a/b", F, true },
                { "a/**/x/**/b", "a/1/x/2/3/b", F, true },
                { "a/**/x/**/b", "a/1/2/3/b", F, false },
                /* '**' not a whole component is an ordinary '*'. */
                { "a**b", "axxb", F, true },
                { "a**b", "a/b", F, false },
                { "x/a**b", "x/a/b", F, false },
                { "**foo", "barfoo", F, true },
                { "**foo", "bar/foo", F, true }, /* basename "foo" matches "*foo" */
                { "foo**/bar", "foox/bar", F, true },
                { "foo**/bar", "foo/x/bar", F, false },
        };
        check_cases(cases, ELEMENTSOF(cases));
}

static void test_dir_only(void **state) {
        static const MatchCase cases[] = {
                { "build/", "build", D, true },
                { "build/", "build", F, false },
                { "build/", "a/build", D, true }, /* trailing '/' alone does not anchor */
                { "build/", "build/x", F, false },
                { "/build/", "build", D, true },
                { "/build/", "a/build", D, false },
                { "a/b/", "a/b", D, true },
                { "a/b/", "a/b", F, false },
                { "**/", "x/y", D, true },
                { "**/", "x/y", F, false },
                { "a/**/", "a/b/c", D, true },
                { "a/**/", "a/b/c", F, false },
        };
        check_cases(cases, ELEMENTSOF(cases));
}

static void test_path_forms(void **state) {
        /* Paths are normally clean; stray separators and "." must not hide
         * a match, and the root itself never matches. */
        static const MatchCase cases[] = {
                { "a/b", "a//b", F, true },
                { "a/b", "./a/b", F, true },
                { "/.env", "/.env", F, true },
                { "a/b", "a/b/", F, true },
                { "**", "", D, false },
                { "*", ".", D, false },
        };
        check_cases(cases, ELEMENTSOF(cases));
}

typedef struct ErrCase {
        const char *pattern;
        const char *message;
} ErrCase;

static void check_refused(const char *pattern, size_t len, const char *message) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        VsGlob *g = NULL;
        int r = glob_compile_len(pattern, len, &g, &err);
        if (r != -EINVAL)
                fail_msg("pattern '%.*s' gave %d, expected -EINVAL", (int)len, pattern, r);
        assert_null(g);
        assert_non_null(err);
        if (!streq(vs_error_message(err), message))
                fail_msg("pattern '%.*s':\n  got      %s\n  expected %s", (int)len, pattern, vs_error_message(err),
                         message);
}

static void test_compile_errors(void **state) {
        static const ErrCase cases[] = {
                { "", "column 1: empty pattern; remove it or write a name such as '.env'" },
                { "!x", "column 1: negation ('!pattern') is not supported, a mask cannot be un-masked; remove the '!' (write '\\!' for a name that starts with '!')" },
                { "a[bc", "column 2: unterminated '['; close it with ']' or write '\\[' for a literal '['" },
                { "x/[", "column 3: unterminated '['; close it with ']' or write '\\[' for a literal '['" },
                { "[]", "column 1: unterminated '['; close it with ']' or write '\\[' for a literal '['" },
                { "[a\\", "column 1: unterminated '['; close it with ']' or write '\\[' for a literal '['" },
                { "ab\\", "column 3: trailing backslash escapes nothing; remove it or write '\\\\' for a literal backslash" },
                { "a/../b", "column 3: '..' component is ambiguous in a mask; write the path without it" },
                { "..", "column 1: '..' component is ambiguous in a mask; write the path without it" },
                { "./a", "column 1: '.' component is ambiguous in a mask; remove it" },
                { "a/.", "column 3: '.' component is ambiguous in a mask; remove it" },
                { "a/\\.", "column 3: '.' component is ambiguous in a mask; remove it" },
                { "/", "column 1: '/' alone names the workspace root itself; name a path below it" },
                { "a//b", "column 3: empty path component ('//'); use a single '/'" },
                { "//a", "column 2: empty path component ('//'); use a single '/'" },
                { "a//", "column 3: empty path component ('//'); use a single '/'" },
                { "[z-a]", "column 2: range 'z-a' is empty (its end comes before its start); swap the ends" },
                { "x[a/b]", "column 4: '/' inside '[...]' never matches, '/' separates components; remove it from the brackets" },
                { "a\\/b", "column 2: '\\/' cannot escape '/', which always separates components; remove the backslash" },
                { "[[:foo:]]", "column 2: unknown character class '[:foo:]'; use alnum, alpha, blank, cntrl, digit, graph, lower, print, punct, space, upper or xdigit" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                check_refused(cases[i].pattern, strlen(cases[i].pattern), cases[i].message);

        check_refused("a\0b", 3, "column 2: NUL byte in pattern; remove it");
}

static void test_compile_length_limit(void **state) {
        _cleanup_free_ char *p = malloc(GLOB_MAX_PATTERN + 2);
        assert_non_null(p);
        memset(p, 'a', GLOB_MAX_PATTERN + 1);
        p[GLOB_MAX_PATTERN + 1] = '\0';
        check_refused(p, GLOB_MAX_PATTERN + 1, "column 4097: pattern longer than 4096 bytes; shorten it");

        /* Exactly the limit is accepted, and the NUL-terminated entry point
         * refuses the longer one too. */
        _cleanup_(vs_error_freep) VsError *err = NULL;
        VsGlob *g = NULL;
        assert_int_equal(glob_compile(p, &g, &err), -EINVAL);
        assert_null(g);
        p[GLOB_MAX_PATTERN] = '\0';
        assert_int_equal(glob_compile(p, &g, NULL), 0);
        assert_true(glob_match(g, p, false));
        assert_string_equal(glob_pattern(g), p);
        glob_free(g);

        /* The most components a pattern can have: "a/a/.../a". */
        for (size_t i = 1; i < GLOB_MAX_PATTERN; i += 2)
                p[i] = '/';
        p[GLOB_MAX_PATTERN - 1] = '\0';
        assert_int_equal(glob_compile(p, &g, NULL), 0);
        assert_true(glob_match(g, p, false));
        assert_false(glob_match(g, "a/a", false));
        glob_free(g);

        /* The same ending in "**", which compiles to one component more
         * than it has (the table is sized from the pattern's '/'s: run
         * under ASan, a bound too small is a heap overflow here). */
        p[GLOB_MAX_PATTERN - 3] = '*';
        p[GLOB_MAX_PATTERN - 2] = '*';
        p[GLOB_MAX_PATTERN - 1] = '\0';
        assert_int_equal(glob_compile(p, &g, NULL), 0);
        assert_true(glob_match(g, p, false));
        glob_free(g);
        /* And led by a double star: the pairs collapse, nothing is lost. */
        p[0] = '*';
        p[1] = '*';
        p[2] = '/';
        p[3] = 'a'; /* two stars, a slash, "aa", and on as before */
        assert_int_equal(glob_compile(p, &g, NULL), 0);
        glob_free(g);
        const char *few[] = { "**", "a/", "/a", "/**", "**/", "a/**", "**/a", "a/**/**/b/", "[a]/**" };
        for (size_t i = 0; i < ELEMENTSOF(few); i++) {
                assert_int_equal(glob_compile(few[i], &g, NULL), 0);
                glob_free(g);
        }
}

static bool compile_ok(const char *pattern, VsGlob **ret) {
        return glob_compile(pattern, ret, NULL) == 0;
}

static void test_hostile_patterns_fast(void **state) {
        VsGlob *g = NULL;
        char path[4001];
        memset(path, 'a', sizeof path - 1);
        path[sizeof path - 1] = '\0';

        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);

        assert_true(compile_ok("*a*a*a*a*a*a*a*b", &g));
        for (int i = 0; i < 100; i++)
                assert_false(glob_match(g, path, false));
        glob_free(g);

        /* The same at component level: many '**' against a deep path. */
        _cleanup_free_ char *deep = malloc(4001);
        assert_non_null(deep);
        for (size_t i = 0; i < 4000; i++)
                deep[i] = i % 2 ? '/' : 'a';
        deep[3999] = 'a';
        deep[4000] = '\0';
        assert_true(compile_ok("**/a/**/a/**/a/**/a/**/a/**/a/**/a/**/b", &g));
        for (int i = 0; i < 100; i++)
                assert_false(glob_match(g, deep, false));
        assert_true(glob_could_match_below(g, deep));
        glob_free(g);

        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        /* Backtracking would take years here; the bound is loose for slow CI. */
        if (ms > 2000)
                fail_msg("hostile patterns took %.0f ms", ms);
}

typedef struct BelowCase {
        const char *pattern;
        const char *dir;
        bool expected;
} BelowCase;

static void test_could_match_below(void **state) {
        static const BelowCase cases[] = {
                { "/a/b/c", "", true },
                { "/a/b/c", "a", true },
                { "/a/b/c", "a/b", true },
                { "/a/b/c", "a/b/c", true }, /* the directory itself */
                { "/a/b/c", "a/b/c/d", false },
                { "/a/b/c", "x", false },
                { "/a/b/c", "a/x", false },
                { "/a/*/c", "a/zzz", true },
                { "/a/*/c", "b", false },
                { "[ab]/x", "a", true },
                { "[ab]/x", "c", false },
                { "/build/", "build", true },
                { "/build/", "other", false },
                { "a/**", "a", true },
                { "a/**", "a/q/r", true },
                { "a/**", "b", false },
                { "src/**/*.pem", "src/a/b", true },
                { "src/**/*.pem", "lib", false },
                { "a/**/b/c", "a/x/y/z", true },
                { "a/**/b/c", "a/b/c/d/e", true }, /* '**' may still absorb "b/c/d" */
                { ".env", "any/where", true }, /* no '/': any depth */
                { "docs/", "x/y", true },
                { "*", "x", true },
                { "**/x", "a/b/c", true },
                { "**/.ssh/**", "deep/er", true },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(glob_freep) VsGlob *g = NULL;
                assert_true(compile_ok(cases[i].pattern, &g));
                bool got = glob_could_match_below(g, cases[i].dir);
                if (got != cases[i].expected)
                        fail_msg("glob_could_match_below('%s', '%s') = %d, expected %d", cases[i].pattern,
                                 cases[i].dir, got, cases[i].expected);
        }
}

/* Reference matcher straight from the gitignore rules: per component with
 * fnmatch(3), '**' components by plain recursion (exponential, fine for the
 * small generated cases). */
typedef struct RefPattern {
        char comps[8][16];
        size_t n;
        bool anchored, dir_only;
} RefPattern;

static bool ref_rec(const RefPattern *p, size_t ci, char path_comps[][8], size_t ns, size_t si) {
        if (ci == p->n)
                return si == ns;
        if (streq(p->comps[ci], "**")) {
                if (ci + 1 == p->n)
                        return ns > si; /* trailing: one or more */
                for (size_t k = si; k <= ns; k++)
                        if (ref_rec(p, ci + 1, path_comps, ns, k))
                                return true;
                return false;
        }
        return si < ns && fnmatch(p->comps[ci], path_comps[si], 0) == 0 && ref_rec(p, ci + 1, path_comps, ns, si + 1);
}

static bool ref_match(const RefPattern *p, char path_comps[][8], size_t ns, bool is_dir) {
        if (ns == 0 || (p->dir_only && !is_dir))
                return false;
        if (!p->anchored)
                return fnmatch(p->comps[0], path_comps[ns - 1], 0) == 0;
        return ref_rec(p, 0, path_comps, ns, 0);
}

static const char *const vocab[] = { "a", "b", "*", "?", "[ab]", "a*", "*b", "**", "[!a]", "ab", "a?", "**" };
static const char *const names[] = { "a", "b", "ab", "ba" };

static unsigned rng_state = 12345;
static unsigned rnd(unsigned n) {
        rng_state = rng_state * 1103515245u + 12345u;
        return (rng_state >> 16) % n;
}

static void random_pattern(RefPattern *p, char *text, size_t size) {
        memset(p, 0, sizeof *p);
        p->n = 1 + rnd(4);
        bool lead = rnd(3) == 0;
        p->dir_only = rnd(4) == 0;
        size_t off = 0;
        if (lead)
                text[off++] = '/';
        for (size_t i = 0; i < p->n; i++) {
                snprintf(p->comps[i], sizeof p->comps[i], "%s", vocab[rnd(ELEMENTSOF(vocab))]);
                off += (size_t)snprintf(text + off, size - off, "%s%s", i ? "/" : "", p->comps[i]);
        }
        if (p->dir_only)
                off += (size_t)snprintf(text + off, size - off, "/");
        p->anchored = lead || p->n > 1;
}

/* All paths of up to depth 4 over names[], as component arrays. */
typedef struct Tree {
        char comps[400][4][8];
        size_t depth[400];
        char text[400][4 * 8 + 4]; /* four components and their slashes */
        size_t n;
} Tree;

static void tree_build(Tree *t, size_t depth, char stack[4][8], size_t max) {
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                snprintf(stack[depth], 8, "%s", names[i]);
                size_t k = t->n++;
                memcpy(t->comps[k], stack, sizeof t->comps[k]);
                t->depth[k] = depth + 1;
                size_t off = 0;
                for (size_t j = 0; j <= depth; j++)
                        off += (size_t)snprintf(t->text[k] + off, sizeof t->text[k] - off, "%s%s", j ? "/" : "",
                                                stack[j]);
                if (depth + 1 < max)
                        tree_build(t, depth + 1, stack, max);
        }
}

static bool is_at_or_below(const char *p, const char *dir) {
        size_t n = strlen(dir);
        return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static void test_random_vs_reference(void **state) {
        static Tree t;
        char stack[4][8];
        t.n = 0;
        tree_build(&t, 0, stack, 4);
        assert_int_equal(t.n, 4 + 16 + 64 + 256);

        for (int iter = 0; iter < 3000; iter++) {
                RefPattern rp;
                char text[128];
                random_pattern(&rp, text, sizeof text);
                _cleanup_(glob_freep) VsGlob *g = NULL;
                if (!compile_ok(text, &g))
                        fail_msg("generated pattern '%s' refused", text);

                for (size_t k = 0; k < t.n; k++)
                        for (int d = 0; d < 2; d++) {
                                bool want = ref_match(&rp, t.comps[k], t.depth[k], d);
                                if (glob_match(g, t.text[k], d) != want)
                                        fail_msg("'%s' vs '%s' (%s): reference says %d", text, t.text[k],
                                                 d ? "dir" : "file", want);
                        }

                /* The walker's incremental stepping agrees with both. */
                char *one[] = { text, NULL };
                _cleanup_(glob_set_freep) VsGlobSet *set = NULL;
                assert_int_equal(glob_set_new(one, &set, NULL), 0);
                size_t ss = glob_set_state_size(set);
                _cleanup_free_ unsigned char *st = malloc(5 * ss);
                assert_non_null(st);
                for (size_t k = 0; k < t.n; k++) {
                        unsigned char *cur = st, *nxt = st + ss;
                        glob_set_state_init(set, cur);
                        char prefix[24] = "";
                        for (size_t j = 0; j < t.depth[k]; j++) {
                                const char *c = t.comps[k][j];
                                snprintf(prefix + strlen(prefix), sizeof prefix - strlen(prefix), "%s%s",
                                         j ? "/" : "", c);
                                bool md, mf;
                                bool below = glob_set_step(set, cur, c, strlen(c), true, nxt, &md);
                                assert_int_equal(glob_set_step(set, cur, c, strlen(c), false, st + 4 * ss, &mf),
                                                 below);
                                if (below != glob_could_match_below(g, prefix) ||
                                    md != glob_match(g, prefix, true) || mf != glob_match(g, prefix, false))
                                        fail_msg("stepping '%s' to '%s' disagrees", text, prefix);
                                cur = cur == st ? st + ss : st;
                                nxt = nxt == st ? st + ss : st;
                        }
                }

                /* could_match_below must be true wherever something at or
                 * below the directory matches (depth 3 dirs, so below has room). */
                for (size_t k = 0; k < t.n; k++) {
                        if (t.depth[k] > 3)
                                continue;
                        bool truth = false;
                        for (size_t j = 0; j < t.n && !truth; j++)
                                if (is_at_or_below(t.text[j], t.text[k]))
                                        truth = glob_match(g, t.text[j], true) || glob_match(g, t.text[j], false);
                        if (truth && !glob_could_match_below(g, t.text[k]))
                                fail_msg("could_match_below('%s', '%s') is false but something below matches",
                                         text, t.text[k]);
                }
        }
}

static void test_set_masks_ancestors(void **state) {
        char *patterns[] = { (char *)"build/", (char *)"/secret", (char *)"**/.aws/**", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);
        assert_int_equal(glob_set_size(s), 3);

        assert_true(glob_set_masks(s, "build", true));
        assert_false(glob_set_masks(s, "build", false)); /* a file named build is not a directory */
        assert_true(glob_set_masks(s, "build/x.o", false)); /* below a matched directory */
        assert_true(glob_set_masks(s, "src/build/a/b.o", false));
        assert_true(glob_set_masks(s, "secret", false));
        assert_true(glob_set_masks(s, "secret/inner/key", false));
        assert_false(glob_set_masks(s, "x/secret", false));
        assert_true(glob_set_masks(s, "h/.aws/credentials", false));
        assert_false(glob_set_masks(s, "h/.aws", true));
        assert_false(glob_set_masks(s, "src/main.c", false));
        assert_false(glob_set_masks(s, "", true));
        /* ".." cannot be judged lexically: fail closed. */
        assert_true(glob_set_masks(s, "src/../x", false));

        assert_true(glob_set_could_match_below(s, "anything"));
}

/* A link that leads masked names below it elsewhere (glob_set_link_matters)
 * and whether its target is masked the same (glob_set_link_covered). */
static void test_set_link_matters(void **state) {
        char *patterns[] = { (char *)"**/.ssh/id_*", (char *)"**/.aws/**", (char *)"**/*.pem", (char *)"/secret/",
                             (char *)"/conf/prod.yaml", (char *)"/deploy/*/secrets.yaml", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);
        assert_true(glob_set_link_matters(s, ".ssh"));
        assert_true(glob_set_link_matters(s, "deep/er/.ssh"));
        assert_true(glob_set_link_matters(s, "x/.aws"));
        assert_true(glob_set_link_matters(s, "secret"));      /* matched itself, as a directory */
        assert_true(glob_set_link_matters(s, "conf"));        /* anchored: conf/prod.yaml below */
        assert_true(glob_set_link_matters(s, "deploy/prod")); /* a wildcard's position: any name */
        assert_false(glob_set_link_matters(s, "x/conf"));     /* not at the root */
        assert_false(glob_set_link_matters(s, "keys"));       /* only *.pem below: by the file's own name */
        assert_false(glob_set_link_matters(s, "node_modules/pkg"));
        assert_false(glob_set_link_matters(s, "secret/inner")); /* below a matched directory: masked whole */
        assert_false(glob_set_link_matters(s, ""));
        assert_false(glob_set_link_matters(NULL, ".ssh"));
        /* Covered: the target has every such position live too. */
        assert_true(glob_set_link_covered(s, "keys", "elsewhere"));
        assert_true(glob_set_link_covered(s, "a/.ssh", "b/.ssh"));
        assert_true(glob_set_link_covered(s, "deploy/prod", "deploy/staging"));
        assert_false(glob_set_link_covered(s, ".ssh", "keys"));
        assert_false(glob_set_link_covered(s, "deploy/prod", "x/y"));
        assert_false(glob_set_link_covered(s, "conf", "conf2"));
        assert_true(glob_set_link_covered(s, "keys", NULL));
        assert_false(glob_set_link_covered(s, ".ssh", NULL));
}

static void test_set_errors(void **state) {
        char *patterns[] = { (char *)"ok", (char *)"fine/*", (char *)"x[", NULL };
        _cleanup_(vs_error_freep) VsError *err = NULL;
        VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, &err), -EINVAL);
        assert_null(s);
        assert_string_equal(vs_error_message(err),
                            "mask[2]: column 2: unterminated '['; close it with ']' or write '\\[' for a literal '['");

        char *none[] = { NULL };
        assert_int_equal(glob_set_new(none, &s, NULL), 0);
        assert_int_equal(glob_set_size(s), 0);
        assert_false(glob_set_masks(s, "a", false));
        assert_false(glob_set_masks(s, "a/../b", false));
        assert_false(glob_set_could_match_below(s, ""));
        glob_set_free(s);
}

static void test_set_could_match_below_anchored(void **state) {
        char *patterns[] = { (char *)"/a/b/*.pem", (char *)"/build/", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);
        assert_true(glob_set_could_match_below(s, ""));
        assert_true(glob_set_could_match_below(s, "a"));
        assert_true(glob_set_could_match_below(s, "a/b"));
        assert_false(glob_set_could_match_below(s, "a/c"));
        assert_false(glob_set_could_match_below(s, "src"));
        assert_true(glob_set_could_match_below(s, "build"));
}

/* The one compile of the sandbox's lists: errors name the list and the
 * entry, an empty list is a NULL set that matches nothing, a real one
 * matches as glob_set_new's would. */
static void test_mask_set_compile(void **state) {
        char *bad[] = { (char *)".env", (char *)"x[", NULL };
        _cleanup_(vs_error_freep) VsError *err = NULL;
        VsGlobSet *s = (VsGlobSet *)&err; /* must stay untouched on failure */
        assert_int_equal(mask_set_compile(bad, "protect", &s, &err), -EINVAL);
        assert_ptr_equal(s, (VsGlobSet *)&err);
        assert_string_equal(vs_error_message(err),
                            "protect[1]: column 2: unterminated '['; close it with ']' or write '\\[' for a literal '['");
        vs_error_free(TAKE_PTR(err));
        assert_int_equal(mask_set_compile(bad, "mask", &s, &err), -EINVAL);
        assert_true(strncmp(vs_error_message(err), "mask[1]: ", 9) == 0);

        char *none[] = { NULL };
        assert_int_equal(mask_set_compile(none, "mask", &s, NULL), 0);
        assert_null(s);
        assert_int_equal(mask_set_compile(NULL, "mask", &s, NULL), 0);
        assert_null(s);
        assert_false(glob_set_masks(s, "a/.env", false));
        assert_false(glob_set_could_match_below(s, ""));

        char *good[] = { (char *)".env", (char *)"/secrets/", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *g = NULL;
        assert_int_equal(mask_set_compile(good, "mask", &g, NULL), 0);
        assert_int_equal(glob_set_size(g), 2);
        assert_true(glob_set_masks(g, "deep/dir/.env", false));
        assert_true(glob_set_masks(g, "secrets/key", false));
        assert_false(glob_set_masks(g, "src/secrets/key", false));
        assert_false(glob_set_masks(g, "env", false));
}

/* ---- mask_walk ---- */

static char *mkfile(const char *root, const char *rel) {
        char *p = path_join(root, rel);
        assert_non_null(p);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
        return p;
}

static void mkdirs(const char *root, const char *rel) {
        _cleanup_free_ char *p = path_join(root, rel);
        assert_non_null(p);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void mksymlink(const char *root, const char *rel, const char *target) {
        _cleanup_free_ char *p = path_join(root, rel);
        assert_non_null(p);
        assert_int_equal(symlink(target, p), 0);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void rm_rf(const char *path) {
        nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

typedef struct WalkFixture {
        char root[64];
        char outside[64];
} WalkFixture;

static int walk_setup(void **state) {
        WalkFixture *f = calloc(1, sizeof *f);
        if (!f)
                return -1;
        snprintf(f->root, sizeof f->root, "/tmp/test-glob-XXXXXX");
        snprintf(f->outside, sizeof f->outside, "/tmp/test-glob-out-XXXXXX");
        if (!mkdtemp(f->root) || !mkdtemp(f->outside))
                return -1;
        *state = f;
        return 0;
}

static int walk_teardown(void **state) {
        WalkFixture *f = *state;
        rm_rf(f->root);
        rm_rf(f->outside);
        free(f);
        return 0;
}

/* The tree of the walk tests: secrets at several depths, a matched
 * directory with content, symlinks that must not be followed, a fifo. */
static void build_tree(const WalkFixture *f) {
        const char *r = f->root;
        free(mkfile(r, ".env"));
        mkdirs(r, "a");
        free(mkfile(r, "a/.env"));
        mkdirs(r, "a/b");
        free(mkfile(r, "a/b/key.pem"));
        free(mkfile(r, "a/b/notes.txt"));
        mkdirs(r, ".ssh");
        free(mkfile(r, ".ssh/id_rsa"));
        free(mkfile(r, ".ssh/known_hosts"));
        mkdirs(r, "build");
        free(mkfile(r, "build/x.pem")); /* inside a matched directory: not listed */
        mkdirs(r, "build/sub");
        free(mkfile(r, "build/sub/.env"));
        mkdirs(r, "src");
        free(mkfile(r, "src/main.c"));
        free(mkfile(r, "src/.envrc"));
        mksymlink(r, "link.pem", "/etc/passwd");
        /* A symlink to a directory full of secrets outside the tree. */
        free(mkfile(f->outside, ".env"));
        free(mkfile(f->outside, "x.pem"));
        mksymlink(r, "outlink", f->outside);
        _cleanup_free_ char *fifo = path_join(r, "pipe.pem");
        assert_int_equal(mkfifo(fifo, 0600), 0);
}

typedef struct Expect {
        const char *relpath;
        MaskKind kind;
} Expect;

static void check_list(const MaskList *l, const Expect *want, size_t n) {
        for (size_t i = 0; i < l->n && i < n; i++)
                if (!streq(l->items[i].relpath, want[i].relpath) || l->items[i].kind != want[i].kind)
                        fail_msg("entry %zu: got '%s' kind %d, expected '%s' kind %d", i, l->items[i].relpath,
                                 l->items[i].kind, want[i].relpath, want[i].kind);
        if (l->n != n)
                fail_msg("got %zu entries, expected %zu", l->n, n);
}

static void test_walk_tree(void **state) {
        WalkFixture *f = *state;
        build_tree(f);

        char *patterns[] = { (char *)".env", (char *)"**/*.pem", (char *)"**/.ssh/**", (char *)"build/", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);

        MaskList l = { 0 };
        _cleanup_(vs_error_freep) VsError *err = NULL;
        assert_int_equal(mask_walk(f->root, s, &l, &err), 0);
        static const Expect want[] = {
                { ".env", MASK_FILE },
                { ".ssh/id_rsa", MASK_FILE },
                { ".ssh/known_hosts", MASK_FILE },
                { "a/.env", MASK_FILE },
                { "a/b/key.pem", MASK_FILE },
                { "build", MASK_DIR },
                { "link.pem", MASK_SYMLINK },
                { "pipe.pem", MASK_OTHER },
        };
        check_list(&l, want, ELEMENTSOF(want));
        mask_list_done(&l);
        assert_null(l.items);
        assert_int_equal(l.n, 0);
        mask_list_done(NULL);
}

static void test_walk_cap(void **state) {
        WalkFixture *f = *state;
        build_tree(f);
        char *patterns[] = { (char *)".env", (char *)"**/*.pem", (char *)"**/.ssh/**", (char *)"build/", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);

        MaskList l = { 0 };
        assert_int_equal(mask_walk_max(f->root, s, 8, &l, NULL), 0); /* exactly at the cap */
        assert_int_equal(l.n, 8);
        mask_list_done(&l);

        /* Past the cap the walk goes on and fails at its end; the
         * symlinks it meets are still listed, wherever they come in the
         * walk's order, so that a start refused for the flood still puts
         * them aside. */
        _cleanup_(vs_error_freep) VsError *err = NULL;
        assert_int_equal(mask_walk_max(f->root, s, 7, &l, &err), -E2BIG);
        assert_true(l.n == 7 || l.n == 8);
        bool link = false;
        for (size_t i = 0; i < l.n; i++)
                link = link || (streq(l.items[i].relpath, "link.pem") && l.items[i].kind == MASK_SYMLINK);
        assert_true(link);
        mask_list_done(&l);
        char want[256];
        snprintf(want, sizeof want,
                 "more than 7 masked paths under %s; narrow the mask patterns or name a parent directory", f->root);
        assert_string_equal(vs_error_message(err), want);
}

/* A chain of directories deeper than a path the walk can name: the walk
 * goes on past it and fails at its end, with what lies beside it (before
 * and after it in the walk's order) in the list, so that a masked link
 * there is still put aside (attack review 10). */
static void test_walk_too_deep(void **state) {
        WalkFixture *f = *state;
        free(mkfile(f->root, ".env"));
        mkdirs(f->root, "a");
        mkdirs(f->root, "z");
        free(mkfile(f->root, "z/.env"));
        char name[251];
        memset(name, 'd', 250);
        name[250] = 0;
        int fds[21];
        fds[0] = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fds[0] >= 0);
        assert_int_equal(mkdirat(fds[0], "m", 0755), 0);
        for (int i = 1; i <= 20; i++) {
                fds[i] = openat(fds[i - 1], i == 1 ? "m" : name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(fds[i] >= 0);
                assert_int_equal(mkdirat(fds[i], name, 0755), 0);
        }
        char *patterns[] = { (char *)"**/.env", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);
        MaskList l = { 0 };
        _cleanup_(vs_error_freep) VsError *err = NULL;
        assert_int_equal(mask_walk(f->root, s, &l, &err), -ENAMETOOLONG);
        assert_non_null(strstr(vs_error_message(err), "path too long under"));
        static const Expect want[] = { { ".env", MASK_FILE }, { "z/.env", MASK_FILE } };
        check_list(&l, want, ELEMENTSOF(want));
        mask_list_done(&l);
        for (int i = 20; i >= 1; i--) {
                assert_int_equal(unlinkat(fds[i], name, AT_REMOVEDIR), 0);
                close(fds[i]);
        }
        assert_int_equal(unlinkat(fds[0], "m", AT_REMOVEDIR), 0);
        close(fds[0]);
}

/* A directory the walk cannot open for a reason other than its mode (here
 * EMFILE: the descriptor limit below the chain's depth) fails the walk at
 * its end, the rest of the tree still walked and listed: the siblings'
 * masked names beside the chain, whichever readdir gives first. */
static void test_walk_past_open_failure(void **state) {
        WalkFixture *f = *state;
        char rel[64] = "a";
        mkdirs(f->root, "a");
        for (int i = 0; i < 12; i++) {
                strcat(rel, "/a");
                mkdirs(f->root, rel);
        }
        for (int i = 0; i < 10; i++) {
                char sib[16];
                snprintf(sib, sizeof sib, "y%d", i);
                mkdirs(f->root, sib);
                snprintf(sib, sizeof sib, "y%d/.env", i);
                free(mkfile(f->root, sib));
        }
        char *patterns[] = { (char *)"**/.env", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);
        MaskList l = { 0 };
        _cleanup_(vs_error_freep) VsError *err = NULL;
        struct rlimit old, low;
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
        int probe = dup(0);
        assert_true(probe >= 0);
        close(probe);
        low = old;
        low.rlim_cur = (rlim_t)probe + 6;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        int r = mask_walk(f->root, s, &l, &err);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
        assert_int_equal(r, -EMFILE);
        assert_non_null(strstr(vs_error_message(err), "cannot open directory"));
        static const Expect want[] = { { "y0/.env", MASK_FILE }, { "y1/.env", MASK_FILE }, { "y2/.env", MASK_FILE },
                                       { "y3/.env", MASK_FILE }, { "y4/.env", MASK_FILE }, { "y5/.env", MASK_FILE },
                                       { "y6/.env", MASK_FILE }, { "y7/.env", MASK_FILE }, { "y8/.env", MASK_FILE },
                                       { "y9/.env", MASK_FILE } };
        check_list(&l, want, ELEMENTSOF(want));
        mask_list_done(&l);
}

static void test_walk_errors(void **state) {
        WalkFixture *f = *state;
        char *patterns[] = { (char *)".env", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        assert_int_equal(glob_set_new(patterns, &s, NULL), 0);
        MaskList l = { 0 };

        assert_int_equal(mask_walk("relative/dir", s, &l, NULL), -EINVAL);
        _cleanup_free_ char *missing = path_join(f->root, "missing");
        _cleanup_(vs_error_freep) VsError *err = NULL;
        assert_int_equal(mask_walk(missing, s, &l, &err), -ENOENT);
        assert_non_null(err);

        /* An empty tree, and an empty set, give empty lists. */
        assert_int_equal(mask_walk(f->root, s, &l, NULL), 0);
        assert_int_equal(l.n, 0);
        mask_list_done(&l);

        char *none[] = { NULL };
        _cleanup_(glob_set_freep) VsGlobSet *empty = NULL;
        assert_int_equal(glob_set_new(none, &empty, NULL), 0);
        free(mkfile(f->root, ".env"));
        assert_int_equal(mask_walk(f->root, empty, &l, NULL), 0);
        assert_int_equal(l.n, 0);
        mask_list_done(&l);

        /* mask_set_compile's set for an empty list is NULL: it masks nothing either. */
        assert_int_equal(mask_walk(f->root, NULL, &l, NULL), 0);
        assert_int_equal(l.n, 0);
        mask_list_done(&l);
}

static int walk_locked(const char *root) {
        char *patterns[] = { (char *)".env", NULL };
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        if (glob_set_new(patterns, &s, NULL) < 0)
                return -1;
        MaskList l = { 0 };
        int r = mask_walk(root, s, &l, NULL);
        /* The readable ".env", and "locked" whole: what it holds is not
         * known, and its owner (the jail's user, under a user daemon) may
         * make it readable again at will. Not an error. */
        bool env = false, locked = false;
        for (size_t i = 0; r == 0 && i < l.n; i++) {
                env |= streq(l.items[i].relpath, ".env") && l.items[i].kind == MASK_FILE;
                locked |= streq(l.items[i].relpath, "locked") && l.items[i].kind == MASK_DIR;
        }
        bool ok = r == 0 && l.n == 2 && env && locked;
        mask_list_done(&l);
        return ok ? 0 : -1;
}

static void test_walk_unreadable_dir(void **state) {
        WalkFixture *f = *state;
        mkdirs(f->root, "locked");
        free(mkfile(f->root, "locked/.env"));
        free(mkfile(f->root, ".env"));
        _cleanup_free_ char *locked = path_join(f->root, "locked");
        assert_int_equal(chmod(locked, 0), 0);

        if (geteuid() != 0) {
                int r = walk_locked(f->root);
                chmod(locked, 0755);
                assert_int_equal(r, 0);
                return;
        }
        /* root reads mode-000 directories anyway: walk as nobody. */
        assert_int_equal(chmod(f->root, 0755), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(2);
                _exit(walk_locked(f->root) == 0 ? 0 : 1);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        chmod(locked, 0755);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* Brute force for the pruning: every path (no symlink followed) that is
 * masked while its parent is not must be in the walk's list, and nothing else. */
static const VsGlobSet *bf_set;
static size_t bf_root_len;
static char **bf_found;

static int bf_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        if (ftw->level == 0)
                return 0;
        const char *rel = path + bf_root_len + 1;
        bool is_dir = flag == FTW_D || flag == FTW_DP;
        _cleanup_free_ char *parent = strdup(rel);
        char *slash = strrchr(parent, '/');
        if (slash)
                *slash = '\0';
        bool parent_masked = slash && glob_set_masks(bf_set, parent, true);
        if (!parent_masked && glob_set_masks(bf_set, rel, is_dir))
                assert_int_equal(strv_extend(&bf_found, rel), 0);
        return 0;
}

static int strp_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_walk_pruning_vs_brute_force(void **state) {
        WalkFixture *f = *state;
        /* A generated tree: names from a small alphabet, three levels. */
        static const char *const n[] = { "a", "b", "x.pem", ".env", "build" };
        char rel[64];
        for (size_t i = 0; i < ELEMENTSOF(n); i++) {
                mkdirs(f->root, n[i]);
                for (size_t j = 0; j < ELEMENTSOF(n); j++) {
                        snprintf(rel, sizeof rel, "%s/%s", n[i], n[j]);
                        if ((i + j) % 2) {
                                free(mkfile(f->root, rel));
                                continue;
                        }
                        mkdirs(f->root, rel);
                        for (size_t k = 0; k < ELEMENTSOF(n); k++) {
                                snprintf(rel, sizeof rel, "%s/%s/%s", n[i], n[j], n[k]);
                                free(mkfile(f->root, rel));
                        }
                }
        }

        static const char *const pool[] = {
                "/a/b/*.pem", "/build/", "a/**/x.pem", "**/b/.env", "/*/a/", ".env", "b/a", "/x.pem/**",
                "a/*/build", "build/**/*.pem", "/a", "[ab]/[ab]/[ab]", "**/build/.env",
        };
        for (int iter = 0; iter < 60; iter++) {
                char *patterns[4] = { NULL };
                size_t np = 1 + rnd(3);
                for (size_t i = 0; i < np; i++)
                        patterns[i] = (char *)pool[rnd(ELEMENTSOF(pool))];
                _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
                assert_int_equal(glob_set_new(patterns, &s, NULL), 0);

                MaskList l = { 0 };
                assert_int_equal(mask_walk(f->root, s, &l, NULL), 0);

                bf_set = s;
                bf_root_len = strlen(f->root);
                bf_found = NULL;
                assert_int_equal(nftw(f->root, bf_cb, 16, FTW_PHYS), 0);
                size_t nf = strv_length(bf_found);
                if (nf > 1)
                        qsort(bf_found, nf, sizeof *bf_found, strp_cmp);

                if (nf != l.n)
                        fail_msg("iteration %d (%s %s %s): walk found %zu, brute force %zu", iter, patterns[0],
                                 patterns[1] ? patterns[1] : "", patterns[2] ? patterns[2] : "", l.n, nf);
                for (size_t i = 0; i < nf; i++)
                        assert_string_equal(l.items[i].relpath, bf_found[i]);
                strv_free(bf_found);
                bf_found = NULL;
                mask_list_done(&l);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_basename_any_depth),
                cmocka_unit_test(test_classes),
                cmocka_unit_test(test_escapes),
                cmocka_unit_test(test_anchored),
                cmocka_unit_test(test_doublestar),
                cmocka_unit_test(test_dir_only),
                cmocka_unit_test(test_path_forms),
                cmocka_unit_test(test_compile_errors),
                cmocka_unit_test(test_compile_length_limit),
                cmocka_unit_test(test_hostile_patterns_fast),
                cmocka_unit_test(test_could_match_below),
                cmocka_unit_test(test_random_vs_reference),
                cmocka_unit_test(test_set_masks_ancestors),
                cmocka_unit_test(test_set_errors),
                cmocka_unit_test(test_set_link_matters),
                cmocka_unit_test(test_set_could_match_below_anchored),
                cmocka_unit_test(test_mask_set_compile),
                cmocka_unit_test_setup_teardown(test_walk_tree, walk_setup, walk_teardown),
                cmocka_unit_test_setup_teardown(test_walk_cap, walk_setup, walk_teardown),
                cmocka_unit_test_setup_teardown(test_walk_errors, walk_setup, walk_teardown),
                cmocka_unit_test_setup_teardown(test_walk_past_open_failure, walk_setup, walk_teardown),
                cmocka_unit_test_setup_teardown(test_walk_too_deep, walk_setup, walk_teardown),
                cmocka_unit_test_setup_teardown(test_walk_unreadable_dir, walk_setup, walk_teardown),
                cmocka_unit_test_setup_teardown(test_walk_pruning_vs_brute_force, walk_setup, walk_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
