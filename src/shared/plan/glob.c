/* SPDX-License-Identifier: MIT */
#include "glob.h"

#include <stdint.h>
#include <string.h>

/* A pattern compiles to a list of components. A component is either '**'
 * (zero or more path components) or a segment: a short program of tokens
 * matched against exactly one path component. Matching runs the list as an
 * NFA over the path's components (a set of live positions, no backtracking),
 * and a segment is matched with the two-pointer star algorithm, so the cost
 * is bounded by pattern length times path length whatever the input. */

typedef enum TokKind {
        TOK_LIT,
        TOK_ANY,   /* '?' */
        TOK_STAR,  /* '*' (and '**' inside a component) */
        TOK_CLASS, /* '[...]' */
} TokKind;

typedef struct Tok {
        uint8_t kind;
        uint8_t ch;   /* TOK_LIT */
        uint16_t cls; /* TOK_CLASS: index into classes */
} Tok;

typedef struct Comp {
        uint32_t tok_off;
        uint32_t tok_len;
        bool doublestar;
        bool has_star;
} Comp;

typedef struct ClassBits {
        uint64_t w[4];
} ClassBits;

struct VsGlob {
        char *pattern;
        Comp *comps;
        size_t n_comps;
        Tok *toks;
        size_t n_toks;
        ClassBits *classes;
        size_t n_classes;
        bool dir_only;
        bool anchored;
};

/* Upper bound on components: every explicit one costs at least one pattern
 * byte plus a '/', and compilation adds at most a leading '**' and splits a
 * trailing '**' in two. Live-state arrays are sized by this, on the stack. */
#define GLOB_MAX_COMPS (GLOB_MAX_PATTERN / 2 + 4)

static bool class_has(const ClassBits *c, uint8_t ch) {
        return (c->w[ch >> 6] >> (ch & 63)) & 1;
}

static void class_set(ClassBits *c, unsigned ch) {
        c->w[ch >> 6] |= UINT64_C(1) << (ch & 63);
}

static void class_clear(ClassBits *c, unsigned ch) {
        c->w[ch >> 6] &= ~(UINT64_C(1) << (ch & 63));
}

void glob_free(VsGlob *g) {
        if (!g)
                return;
        free(g->pattern);
        free(g->comps);
        free(g->toks);
        free(g->classes);
        free(g);
}

const char *glob_pattern(const VsGlob *g) {
        return g ? g->pattern : NULL;
}

/* POSIX bracket expressions ('[[:alpha:]]'), as git's wildmatch has them.
 * ASCII only and locale-independent: a mask must not change with LANG. */
static bool posix_class_fill(const char *name, size_t len, ClassBits *c) {
        static const char *const names[] = {
                "alnum", "alpha", "blank", "cntrl", "digit", "graph",
                "lower", "print", "punct", "space", "upper", "xdigit",
        };
        size_t k;
        for (k = 0; k < ELEMENTSOF(names); k++)
                if (strlen(names[k]) == len && memcmp(names[k], name, len) == 0)
                        break;
        if (k == ELEMENTSOF(names))
                return false;

        for (unsigned ch = 0; ch < 128; ch++) {
                bool upper = ch >= 'A' && ch <= 'Z', lower = ch >= 'a' && ch <= 'z';
                bool digit = ch >= '0' && ch <= '9';
                bool graph = ch > 0x20 && ch < 0x7f;
                bool in;
                switch (k) {
                case 0: in = upper || lower || digit; break;
                case 1: in = upper || lower; break;
                case 2: in = ch == ' ' || ch == '\t'; break;
                case 3: in = ch < 0x20 || ch == 0x7f; break;
                case 4: in = digit; break;
                case 5: in = graph; break;
                case 6: in = lower; break;
                case 7: in = graph || ch == ' '; break;
                case 8: in = graph && !upper && !lower && !digit; break;
                case 9: in = ch == ' ' || (ch >= '\t' && ch <= '\r'); break;
                case 10: in = upper; break;
                default: in = digit || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'); break;
                }
                if (in)
                        class_set(c, ch);
        }
        return true;
}

/* Reads one possibly escaped class member at *k. Returns false when the
 * pattern ends first (the class is then unterminated). */
static bool class_member(const char *p, size_t len, size_t *k, uint8_t *ret) {
        if (*k >= len)
                return false;
        if (p[*k] == '\\') {
                if (*k + 1 >= len)
                        return false;
                *ret = (uint8_t)p[*k + 1];
                *k += 2;
                return true;
        }
        *ret = (uint8_t)p[*k];
        *k += 1;
        return true;
}

/* Parses the class whose '[' is at p[start]; on success *ret_end is the
 * index after its ']'. */
static int parse_class(const char *p, size_t len, size_t start, ClassBits *c, size_t *ret_end,
                       VsError **err) {
        size_t k = start + 1;
        bool negate = false, first = true;

        memset(c, 0, sizeof *c);
        if (k < len && (p[k] == '!' || p[k] == '^')) {
                negate = true;
                k++;
        }
        for (;;) {
                if (k >= len)
                        return vs_error_set(err, -EINVAL,
                                            "column %zu: unterminated '['; close it with ']' or write '\\[' for a literal '['",
                                            start + 1);
                if (p[k] == ']' && !first) {
                        k++;
                        break;
                }
                first = false;

                if (p[k] == '[' && k + 1 < len && p[k + 1] == ':') {
                        const char *end = NULL;
                        for (size_t j = k + 2; j + 1 < len; j++)
                                if (p[j] == ':' && p[j + 1] == ']') {
                                        end = p + j;
                                        break;
                                }
                        if (end) {
                                const char *name = p + k + 2;
                                if (!posix_class_fill(name, (size_t)(end - name), c))
                                        return vs_error_set(err, -EINVAL,
                                                            "column %zu: unknown character class '[:%.*s:]'; use alnum, alpha, blank, cntrl, digit, graph, lower, print, punct, space, upper or xdigit",
                                                            k + 1, (int)(end - name), name);
                                k = (size_t)(end - p) + 2;
                                continue;
                        }
                        /* No closing ":]": the '[' is an ordinary member. */
                }

                size_t col = k + 1;
                uint8_t lo, hi;
                if (!class_member(p, len, &k, &lo)) {
                        k = len; /* reported as unterminated above */
                        continue;
                }
                if (lo == '/')
                        return vs_error_set(err, -EINVAL,
                                            "column %zu: '/' inside '[...]' never matches, '/' separates components; remove it from the brackets",
                                            col);
                hi = lo;
                if (k + 1 < len && p[k] == '-' && p[k + 1] != ']') {
                        size_t k2 = k + 1;
                        if (!class_member(p, len, &k2, &hi)) {
                                k = len;
                                continue;
                        }
                        if (hi < lo)
                                return vs_error_set(err, -EINVAL,
                                                    "column %zu: range '%.*s' is empty (its end comes before its start); swap the ends",
                                                    col, (int)(k2 - col + 1), p + col - 1);
                        k = k2;
                }
                for (unsigned ch = lo; ch <= hi; ch++)
                        class_set(c, ch);
        }

        if (negate)
                for (size_t w = 0; w < ELEMENTSOF(c->w); w++)
                        c->w[w] = ~c->w[w];
        /* A class never matches '/' (nor NUL, which no path holds). */
        class_clear(c, '/');
        class_clear(c, 0);
        *ret_end = k;
        return 0;
}

static void push_comp(VsGlob *g, uint32_t tok_off, uint32_t tok_len, bool doublestar, bool has_star) {
        /* '**' twice in a row means the same as once. */
        if (doublestar && g->n_comps > 0 && g->comps[g->n_comps - 1].doublestar)
                return;
        g->comps[g->n_comps++] = (Comp){
                .tok_off = tok_off,
                .tok_len = tok_len,
                .doublestar = doublestar,
                .has_star = has_star,
        };
}

int glob_compile_len(const char *pattern, size_t len, VsGlob **ret, VsError **err) {
        _cleanup_(glob_freep) VsGlob *g = NULL;
        const char *p = pattern;
        size_t n_brackets = 0, n_slashes = 0;

        if (len == 0)
                return vs_error_set(err, -EINVAL, "column 1: empty pattern; remove it or write a name such as '.env'");
        if (len > GLOB_MAX_PATTERN)
                return vs_error_set(err, -EINVAL, "column %d: pattern longer than %d bytes; shorten it",
                                    GLOB_MAX_PATTERN + 1, GLOB_MAX_PATTERN);
        for (size_t i = 0; i < len; i++) {
                if (p[i] == '\0')
                        return vs_error_set(err, -EINVAL, "column %zu: NUL byte in pattern; remove it", i + 1);
                if (p[i] == '[')
                        n_brackets++;
                else if (p[i] == '/')
                        n_slashes++;
        }
        if (p[0] == '!')
                return vs_error_set(err, -EINVAL,
                                    "column 1: negation ('!pattern') is not supported, a mask cannot be un-masked; remove the '!' (write '\\!' for a name that starts with '!')");

        g = calloc(1, sizeof *g);
        if (!g)
                return vs_error_set(err, -ENOMEM, "out of memory");
        g->pattern = strndup(pattern, len);
        /* A component per '/' and one more, at most a leading '**' added
         * and a trailing '**' split in two: sized for this pattern (a
         * config's thousands of masks each held ~24 KiB while compiled, and
         * wrote it, when sized for the longest pattern possible). */
        g->comps = calloc(n_slashes + 4, sizeof *g->comps);
        g->toks = calloc(len + 1, sizeof *g->toks);
        g->classes = calloc(n_brackets ? n_brackets : 1, sizeof *g->classes);
        if (!g->pattern || !g->comps || !g->toks || !g->classes)
                return vs_error_set(err, -ENOMEM, "out of memory");

        size_t i = 0;
        bool saw_inner_slash = false;
        if (p[0] == '/') {
                g->anchored = true;
                i = 1;
                if (i == len)
                        return vs_error_set(err, -EINVAL,
                                            "column 1: '/' alone names the workspace root itself; name a path below it");
        }

        bool last_doublestar = false;
        for (;;) {
                size_t start = i;
                uint32_t tok_off = (uint32_t)g->n_toks;
                bool has_star = false, all_literal = true;

                if (p[i] == '/')
                        return vs_error_set(err, -EINVAL, "column %zu: empty path component ('//'); use a single '/'",
                                            i + 1);

                while (i < len && p[i] != '/') {
                        Tok t = { .kind = TOK_LIT };
                        switch (p[i]) {
                        case '\\':
                                if (i + 1 >= len)
                                        return vs_error_set(err, -EINVAL,
                                                            "column %zu: trailing backslash escapes nothing; remove it or write '\\\\' for a literal backslash",
                                                            i + 1);
                                if (p[i + 1] == '/')
                                        return vs_error_set(err, -EINVAL,
                                                            "column %zu: '\\/' cannot escape '/', which always separates components; remove the backslash",
                                                            i + 1);
                                t.ch = (uint8_t)p[i + 1];
                                i += 2;
                                break;
                        case '*':
                                i++;
                                all_literal = false;
                                has_star = true;
                                /* Runs of '*' inside a component are one '*'. */
                                if (g->n_toks > tok_off && g->toks[g->n_toks - 1].kind == TOK_STAR)
                                        continue;
                                t.kind = TOK_STAR;
                                break;
                        case '?':
                                i++;
                                all_literal = false;
                                t.kind = TOK_ANY;
                                break;
                        case '[': {
                                size_t end = len;
                                int r = parse_class(p, len, i, &g->classes[g->n_classes], &end, err);
                                if (r < 0)
                                        return r;
                                t.kind = TOK_CLASS;
                                t.cls = (uint16_t)g->n_classes++;
                                all_literal = false;
                                i = end;
                                break;
                        }
                        default:
                                t.ch = (uint8_t)p[i];
                                i++;
                                break;
                        }
                        g->toks[g->n_toks++] = t;
                }

                size_t clen = i - start;
                uint32_t tok_len = (uint32_t)g->n_toks - tok_off;
                bool doublestar = clen == 2 && p[start] == '*' && p[start + 1] == '*';
                if (all_literal && tok_len <= 2) {
                        bool dot = tok_len == 1 && g->toks[tok_off].ch == '.';
                        bool dotdot = tok_len == 2 && g->toks[tok_off].ch == '.' && g->toks[tok_off + 1].ch == '.';
                        if (dot)
                                return vs_error_set(err, -EINVAL,
                                                    "column %zu: '.' component is ambiguous in a mask; remove it",
                                                    start + 1);
                        if (dotdot)
                                return vs_error_set(err, -EINVAL,
                                                    "column %zu: '..' component is ambiguous in a mask; write the path without it",
                                                    start + 1);
                }

                if (doublestar) {
                        g->n_toks = tok_off;
                        push_comp(g, 0, 0, true, false);
                } else
                        push_comp(g, tok_off, tok_len, false, has_star);
                last_doublestar = doublestar;

                if (i >= len)
                        break;
                /* p[i] == '/' */
                i++;
                if (i == len) {
                        g->dir_only = true;
                        break;
                }
                saw_inner_slash = true;
        }

        if (saw_inner_slash)
                g->anchored = true;

        if (!g->anchored) {
                /* A name without '/' matches at any depth: the same as '**' + '/' + name. */
                memmove(g->comps + 1, g->comps, g->n_comps * sizeof *g->comps);
                g->comps[0] = (Comp){ .doublestar = true };
                g->n_comps++;
                if (g->n_comps >= 2 && g->comps[1].doublestar) {
                        memmove(g->comps + 1, g->comps + 2, (g->n_comps - 2) * sizeof *g->comps);
                        g->n_comps--;
                }
        }

        if (last_doublestar) {
                /* A trailing '**' matches everything inside, not the directory
                 * itself: one component of anything, then zero or more. */
                Tok star = { .kind = TOK_STAR };
                g->toks[g->n_toks] = star;
                g->comps[g->n_comps - 1] = (Comp){
                        .tok_off = (uint32_t)g->n_toks,
                        .tok_len = 1,
                        .has_star = true,
                };
                g->n_toks++;
                g->comps[g->n_comps++] = (Comp){ .doublestar = true };
        }

        *ret = TAKE_PTR(g);
        return 0;
}

int glob_compile(const char *pattern, VsGlob **ret, VsError **err) {
        if (!pattern)
                return vs_error_set(err, -EINVAL, "column 1: empty pattern; remove it or write a name such as '.env'");
        return glob_compile_len(pattern, strnlen(pattern, GLOB_MAX_PATTERN + 1), ret, err);
}

static bool tok_match(const VsGlob *g, const Tok *t, uint8_t ch) {
        switch (t->kind) {
        case TOK_LIT:
                return t->ch == ch;
        case TOK_ANY:
                return true;
        case TOK_CLASS:
                return class_has(&g->classes[t->cls], ch);
        default:
                return false;
        }
}

/* Matches one segment against one path component s[0..n) (no '/' in it).
 * Two-pointer star algorithm: on a mismatch only the most recent '*' is
 * retried one byte further, which is enough because '*' cannot cross a
 * component; worst case O(tokens * n), never exponential. */
static bool seg_match(const VsGlob *g, const Comp *c, const char *s, size_t n) {
        const Tok *t = g->toks + c->tok_off;
        size_t nt = c->tok_len;

        if (!c->has_star) {
                if (nt != n)
                        return false;
                for (size_t i = 0; i < n; i++)
                        if (!tok_match(g, &t[i], (uint8_t)s[i]))
                                return false;
                return true;
        }

        size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
        while (si < n) {
                if (pi < nt && t[pi].kind == TOK_STAR) {
                        star_p = pi++;
                        star_s = si;
                } else if (pi < nt && tok_match(g, &t[pi], (uint8_t)s[si])) {
                        pi++;
                        si++;
                } else if (star_p != SIZE_MAX) {
                        pi = star_p + 1;
                        si = ++star_s;
                } else
                        return false;
        }
        while (pi < nt && t[pi].kind == TOK_STAR)
                pi++;
        return pi == nt;
}

/* Adds the positions reachable without consuming a component: past any '**'. */
static void close_states(const VsGlob *g, bool *live) {
        for (size_t i = 0; i < g->n_comps; i++)
                if (live[i] && g->comps[i].doublestar)
                        live[i + 1] = true;
}

/* Iterates the components of a relative path, skipping empty and "."
 * components so that "a//b", "./a" and "a/" mean what they say. */
static bool next_component(const char **cursor, const char **ret_s, size_t *ret_n) {
        const char *p = *cursor;
        for (;;) {
                while (*p == '/')
                        p++;
                if (!*p)
                        return false;
                const char *e = strchrnul(p, '/');
                if (e - p == 1 && p[0] == '.') {
                        p = e;
                        continue;
                }
                *ret_s = p;
                *ret_n = (size_t)(e - p);
                *cursor = e;
                return true;
        }
}

/* Consumes one path component: next = positions reachable from live.
 * Returns false when none is. */
static bool step(const VsGlob *g, const bool *live, const char *s, size_t n, bool *next) {
        size_t nc = g->n_comps;
        bool alive = false;

        memset(next, 0, nc + 1);
        for (size_t i = 0; i < nc; i++) {
                if (!live[i])
                        continue;
                if (g->comps[i].doublestar)
                        next[i] = alive = true;
                else if (seg_match(g, &g->comps[i], s, n))
                        next[i + 1] = alive = true;
        }
        if (alive)
                close_states(g, next);
        return alive;
}

typedef enum EvalMode {
        EVAL_EXACT,     /* the path itself */
        EVAL_ANCESTORS, /* the path itself, or one of its ancestors as a directory */
        EVAL_BELOW,     /* the path or anything below it */
} EvalMode;

static bool glob_eval(const VsGlob *g, const char *path, bool is_dir, EvalMode mode) {
        bool a[GLOB_MAX_COMPS + 1], b[GLOB_MAX_COMPS + 1];
        bool *live = a, *next = b;
        size_t nc = g->n_comps;
        const char *cursor = path, *s;
        size_t n;
        bool any_component = false;

        memset(live, 0, nc + 1);
        live[0] = true;
        close_states(g, live);

        while (next_component(&cursor, &s, &n)) {
                /* Reaching here with the previous prefix matched means an
                 * ancestor matched as a directory. */
                if (mode == EVAL_ANCESTORS && any_component && live[nc])
                        return true;
                any_component = true;

                if (!step(g, live, s, n, next))
                        return false;
                bool *tmp = live;
                live = next;
                next = tmp;
        }

        if (mode == EVAL_BELOW)
                return true; /* some position is live: a completion below can reach the end */
        if (!any_component)
                return false; /* the root itself is never matched */
        return live[nc] && (is_dir || !g->dir_only);
}

bool glob_match(const VsGlob *g, const char *relpath, bool is_dir) {
        if (!g || !relpath)
                return false;
        return glob_eval(g, relpath, is_dir, EVAL_EXACT);
}

bool glob_could_match_below(const VsGlob *g, const char *reldir) {
        if (!g || !reldir)
                return false;
        return glob_eval(g, reldir, true, EVAL_BELOW);
}

/* A path that goes through ".." cannot be matched lexically with any
 * confidence; a mask set treats it as masked (fail closed). */
static bool has_dotdot(const char *path) {
        const char *cursor = path, *s;
        size_t n;
        while (next_component(&cursor, &s, &n))
                if (n == 2 && s[0] == '.' && s[1] == '.')
                        return true;
        return false;
}

struct VsGlobSet {
        unsigned n_ref;
        VsGlob **globs;
        size_t n;
};

VsGlobSet *glob_set_ref(VsGlobSet *s) {
        if (s)
                s->n_ref++;
        return s;
}

void glob_set_free(VsGlobSet *s) {
        if (!s || --s->n_ref > 0)
                return;
        for (size_t i = 0; i < s->n; i++)
                glob_free(s->globs[i]);
        free(s->globs);
        free(s);
}

int glob_set_new(char *const *patterns, VsGlobSet **ret, VsError **err) {
        return glob_set_new_named(patterns, "mask", ret, err);
}

int glob_set_new_named(char *const *patterns, const char *name, VsGlobSet **ret, VsError **err) {
        _cleanup_(glob_set_freep) VsGlobSet *s = NULL;
        size_t n = 0;

        while (patterns && patterns[n])
                n++;
        s = calloc(1, sizeof *s);
        if (!s)
                return vs_error_set(err, -ENOMEM, "out of memory");
        s->n_ref = 1;
        s->globs = calloc(n ? n : 1, sizeof *s->globs);
        if (!s->globs)
                return vs_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
                int r = glob_compile(patterns[i], &s->globs[i], err);
                if (r < 0) {
                        vs_error_prefix(err, "%s[%zu]", name, i);
                        return r;
                }
                s->n++;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

size_t glob_set_size(const VsGlobSet *s) {
        return s ? s->n : 0;
}

bool glob_set_masks(const VsGlobSet *s, const char *relpath, bool is_dir) {
        if (!s || !relpath)
                return false;
        if (s->n > 0 && has_dotdot(relpath))
                return true;
        for (size_t i = 0; i < s->n; i++)
                if (glob_eval(s->globs[i], relpath, is_dir, EVAL_ANCESTORS))
                        return true;
        return false;
}

bool glob_set_could_match_below(const VsGlobSet *s, const char *reldir) {
        if (!s || !reldir)
                return false;
        for (size_t i = 0; i < s->n; i++)
                if (glob_could_match_below(s->globs[i], reldir))
                        return true;
        return false;
}

/* The state of the directory reldir ("": the root) into state; false when
 * nothing can match at or below it, or an ancestor is matched (masked
 * whole: what lies below is the ancestor's). */
static bool state_of_dir(const VsGlobSet *s, const char *reldir, unsigned char *state, unsigned char *tmp) {
        size_t n = glob_set_state_size(s);
        glob_set_state_init(s, state);
        for (const char *c = reldir; *c;) {
                size_t len = strcspn(c, "/");
                bool matched = false;
                bool last = !c[len] || !c[len + strspn(c + len, "/")];
                if (len > 0) {
                        bool alive = glob_set_step(s, state, c, len, true, tmp, &matched);
                        memcpy(state, tmp, n);
                        if (!last && (!alive || matched))
                                return false;
                        if (last)
                                return alive || matched;
                }
                c += len;
                c += strspn(c, "/");
        }
        return true;
}

/* Whether position k of g is live below every directory: only `**` before
 * it (the leading `**` of a pattern without a '/'). */
static bool anywhere(const VsGlob *g, size_t k) {
        for (size_t i = 0; i < k; i++)
                if (!g->comps[i].doublestar)
                        return false;
        return true;
}

/* The positions live at link_rel that are not live below every directory,
 * checked against target (NULL: none may be live). */
static bool link_positions(const VsGlobSet *s, const unsigned char *link, const unsigned char *target) {
        const bool *l = (const bool *)link, *t = (const bool *)target;
        for (size_t i = 0; i < s->n; i++) {
                const VsGlob *g = s->globs[i];
                for (size_t k = 0; k <= g->n_comps; k++)
                        if (l[k] && !anywhere(g, k) && (!t || !t[k]))
                                return false;
                l += g->n_comps + 1;
                if (t)
                        t += g->n_comps + 1;
        }
        return true;
}

bool glob_set_link_matters(const VsGlobSet *s, const char *link_rel) {
        size_t n = glob_set_state_size(s);
        if (!s || !link_rel || !*link_rel || n == 0)
                return false;
        unsigned char *st = malloc(2 * n);
        if (!st)
                return true; /* out of memory: taken as mattering (the caller masks more) */
        bool matters = state_of_dir(s, link_rel, st, st + n) && !link_positions(s, st, NULL);
        free(st);
        return matters;
}

bool glob_set_link_covered(const VsGlobSet *s, const char *link_rel, const char *target_rel) {
        size_t n = glob_set_state_size(s);
        if (!s || !link_rel || !*link_rel || n == 0)
                return true;
        unsigned char *st = malloc(3 * n);
        if (!st)
                return false; /* out of memory: not covered (the caller masks more) */
        bool covered = !state_of_dir(s, link_rel, st, st + 2 * n) || link_positions(s, st, NULL);
        if (!covered && target_rel) {
                /* A target below a matched directory is masked whole already;
                 * one where nothing can match below is not covered. */
                bool alive = state_of_dir(s, target_rel, st + n, st + 2 * n);
                covered = alive && link_positions(s, st, st + n);
        }
        free(st);
        return covered;
}

/* A set state is, per pattern, its live positions as bytes (n_comps + 1
 * each), concatenated in pattern order. */
size_t glob_set_state_size(const VsGlobSet *s) {
        size_t n = 0;
        for (size_t i = 0; s && i < s->n; i++)
                n += s->globs[i]->n_comps + 1;
        return n;
}

void glob_set_state_init(const VsGlobSet *s, unsigned char *state) {
        bool *live = (bool *)state;
        for (size_t i = 0; s && i < s->n; i++) {
                const VsGlob *g = s->globs[i];
                memset(live, 0, g->n_comps + 1);
                live[0] = true;
                close_states(g, live);
                live += g->n_comps + 1;
        }
}

bool glob_set_step(const VsGlobSet *s, const unsigned char *state, const char *name, size_t len, bool is_dir,
                   unsigned char *next, bool *ret_matched) {
        const bool *live = (const bool *)state;
        bool *out = (bool *)next;
        bool any_alive = false, matched = false;

        for (size_t i = 0; s && i < s->n; i++) {
                const VsGlob *g = s->globs[i];
                size_t nc = g->n_comps;
                bool dead = true;
                for (size_t k = 0; k <= nc; k++)
                        if (live[k]) {
                                dead = false;
                                break;
                        }
                if (dead)
                        memset(out, 0, nc + 1);
                else if (step(g, live, name, len, out)) {
                        any_alive = true;
                        if (out[nc] && (is_dir || !g->dir_only))
                                matched = true;
                }
                live += nc + 1;
                out += nc + 1;
        }
        *ret_matched = matched;
        return any_alive;
}
