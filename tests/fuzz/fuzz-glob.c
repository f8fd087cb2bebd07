/* SPDX-License-Identifier: MIT */
/* Fuzzes the mask glob compiler and matcher. Input: PATTERN '\n' PATH (the
 * pattern may hold NUL bytes, which must be refused). Besides crashes and
 * hangs it checks the properties the mask code relies on:
 *  - a match implies could_match_below (pruning never hides a match);
 *  - could_match_below is monotonic: false for a directory means false
 *    and no match for everything below it;
 *  - glob_set_masks is exactly "the path or an ancestor directory matches";
 *  - stepping a set state component by component (the walker's way)
 *    agrees with glob_match and glob_could_match_below on every prefix;
 *  - the path, written as an escaped anchored literal, matches itself. */
#include <stdint.h>
#include <string.h>

#include "glob.h"
#include "macro.h"
#include "path-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PREFIXES 48

static void check(bool cond) {
        if (!cond)
                abort();
}

/* A clean relative path: non-empty components, no "." or "..". */
static bool path_is_clean(const char *p) {
        if (!*p)
                return false;
        for (const char *c = p;;) {
                const char *e = strchrnul(c, '/');
                size_t n = (size_t)(e - c);
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!*e)
                        return true;
                c = e + 1;
        }
}

static void check_literal_self_match(const char *path) {
        size_t n = strlen(path);
        if (!path_is_clean(path) || 1 + 2 * n > GLOB_MAX_PATTERN)
                return;
        char *pat = malloc(2 + 2 * n);
        if (!pat)
                return;
        size_t k = 0;
        pat[k++] = '/';
        for (size_t i = 0; i < n; i++) {
                if (path[i] != '/')
                        pat[k++] = '\\';
                pat[k++] = path[i];
        }
        pat[k] = '\0';
        VsGlob *g = NULL;
        check(glob_compile(pat, &g, NULL) == 0);
        check(glob_match(g, path, false));
        check(glob_match(g, path, true));
        glob_free(g);
        free(pat);
}

/* Does p hold a component other than "" and "."? */
static bool has_component(const char *p) {
        for (const char *c = p;;) {
                const char *e = strchrnul(c, '/');
                if (e - c > 1 || (e - c == 1 && c[0] != '.'))
                        return true;
                if (!*e)
                        return false;
                c = e + 1;
        }
}

static bool has_dotdot(const char *p) {
        for (const char *c = p;;) {
                const char *e = strchrnul(c, '/');
                if (e - c == 2 && c[0] == '.' && c[1] == '.')
                        return true;
                if (!*e)
                        return false;
                c = e + 1;
        }
}

static void check_steps(const VsGlobSet *s, const VsGlob *g, char *path) {
        size_t ss = glob_set_state_size(s);
        unsigned char *st = calloc(3, ss ? ss : 1);
        if (!st)
                return;
        unsigned char *a = st, *b = st + ss, *c = st + 2 * ss;
        glob_set_state_init(s, a);
        size_t steps = 0;
        for (char *p = path; *p && steps < MAX_PREFIXES;) {
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                char *e = strchrnul(p, '/');
                size_t n = (size_t)(e - p);
                if (n == 1 && p[0] == '.') {
                        p = e;
                        continue;
                }
                steps++;
                bool md, mf;
                bool below = glob_set_step(s, a, p, n, true, b, &md);
                check(glob_set_step(s, a, p, n, false, c, &mf) == below);
                check(memcmp(b, c, ss) == 0); /* the next state does not depend on is_dir */
                char saved = *e;
                *e = '\0';
                check(below == glob_could_match_below(g, path));
                check(md == glob_match(g, path, true));
                check(mf == glob_match(g, path, false));
                *e = saved;
                unsigned char *t = a;
                a = b;
                b = t;
                p = e;
        }
        free(st);
}

/* Whether path is one or more names with no ".", ".." or empty component
 * (what the walks and the watch ask glob_set_link_matters about). */
static bool clean_components(const char *path) {
        if (!*path)
                return false;
        for (const char *c = path;;) {
                size_t len = strcspn(c, "/");
                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[len])
                        return true;
                c += len + 1;
        }
}

/* glob_set_link_covered() is sound: for a link at a proper prefix of path
 * (not masked whole), a target it calls covered is masked below as the
 * link would be, for the rest of path as a file and as a directory; and a
 * link always covers itself. Targets: the path's other prefixes and a few
 * names the patterns in the corpus use. */
static void check_link_covered(const VsGlobSet *s, const char *path) {
        static const char *const fixed[] = { "x", "x/y", "deploy", ".ssh", "a/.ssh", "config/a/b", "secrets" };
        if (!clean_components(path))
                return;
        size_t len = strlen(path), n_links = 0;
        for (size_t i = 0; i < len && n_links < MAX_PREFIXES; i++) {
                if (path[i] != '/')
                        continue;
                n_links++;
                char *link = strndup(path, i);
                const char *rest = path + i + 1;
                if (!link)
                        return;
                if (!glob_set_masks(s, link, true)) {
                        check(glob_set_link_covered(s, link, link));
                        for (size_t t = 0; t < ELEMENTSOF(fixed) + n_links; t++) {
                                char *target = t < ELEMENTSOF(fixed) ? strdup(fixed[t]) : NULL;
                                if (t >= ELEMENTSOF(fixed)) { /* an earlier prefix of path */
                                        size_t want = t - ELEMENTSOF(fixed), seen = 0;
                                        for (size_t k = 0; k < i && !target; k++)
                                                if (path[k] == '/' && seen++ == want)
                                                        target = strndup(path, k);
                                }
                                if (!target || !glob_set_link_covered(s, link, target)) {
                                        free(target);
                                        continue;
                                }
                                char *from = path_join(link, rest), *to = path_join(target, rest);
                                for (int d = 0; from && to && d < 2; d++)
                                        if (glob_set_masks(s, from, d))
                                                check(glob_set_masks(s, to, d));
                                free(from);
                                free(to);
                                free(target);
                        }
                }
                free(link);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t plen = nl ? (size_t)(nl - data) : size;
        size_t rest = nl ? size - plen - 1 : 0;

        char *path = malloc(rest + 1);
        if (!path)
                return 0;
        if (rest)
                memcpy(path, nl + 1, rest);
        path[rest] = '\0';

        VsGlob *g = NULL;
        VsError *err = NULL;
        int r = glob_compile_len((const char *)data, plen, &g, &err);
        if (r < 0) {
                check(r == -EINVAL && !g && err);
                check(strncmp(vs_error_message(err), "column ", 7) == 0);
                vs_error_free(err);
                check_literal_self_match(path);
                free(path);
                return 0;
        }
        check(!err && g);
        check(memcmp(glob_pattern(g), data, plen) == 0 && glob_pattern(g)[plen] == '\0');

        bool mf = glob_match(g, path, false), md = glob_match(g, path, true);
        bool below = glob_could_match_below(g, path);
        check(!mf || md);
        check(!(mf || md) || below);

        /* Ancestors: every proper prefix that ends before a '/'. */
        size_t len = strlen(path), n_prefixes = 0;
        bool ancestor_matched = false;
        for (size_t i = 0; i < len && n_prefixes < MAX_PREFIXES; i++) {
                if (path[i] != '/' || !has_component(path + i + 1))
                        continue;
                n_prefixes++;
                path[i] = '\0';
                bool a_below = glob_could_match_below(g, path);
                if (glob_match(g, path, true))
                        ancestor_matched = true;
                path[i] = '/';
                if (!a_below)
                        check(!mf && !md && !below);
        }

        /* glob_set_masks against the definition (prefix scan was complete). */
        if (n_prefixes < MAX_PREFIXES && plen > 0 && memchr(data, '\0', plen) == NULL) {
                char *pattern = strndup((const char *)data, plen);
                char *patterns[] = { pattern, NULL };
                VsGlobSet *s = NULL;
                if (pattern && glob_set_new(patterns, &s, NULL) == 0) {
                        check(glob_set_size(s) == 1);
                        for (int d = 0; d < 2; d++) {
                                bool want = has_dotdot(path) || ancestor_matched || (d ? md : mf);
                                check(glob_set_masks(s, path, d) == want);
                        }
                        check(glob_set_could_match_below(s, path) == below);
                        /* A name that matters is matched as a directory,
                         * or something could match below it. */
                        if (clean_components(path) && glob_set_link_matters(s, path))
                                check(md || below);
                        check_link_covered(s, path);
                        check_steps(s, g, path);
                        glob_set_free(s);
                }
                free(pattern);
        }

        check_literal_self_match(path);
        glob_free(g);
        free(path);
        return 0;
}
