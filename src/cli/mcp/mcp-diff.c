/* SPDX-License-Identifier: MIT */
#include "mcp-diff.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define CONTEXT 3
/* The LCS table's cells at most (after the common head and tail are cut). */
#define LCS_MAX_CELLS (4u * 1024u * 1024u)

typedef McpLine Line;

typedef struct Op {
        char kind; /* ' ', '-', '+' */
        size_t a, b; /* line indexes in a and b (the one its kind uses) */
} Op;

int mcp_split_lines(const char *p, size_t n, Line **ret, size_t *ret_n) {
        size_t k = 0, cap = 16;
        Line *l = malloc(cap * sizeof *l);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n;) {
                const char *nl = memchr(p + i, '\n', n - i);
                size_t e = nl ? (size_t)(nl - p) : n;
                if (k == cap) {
                        Line *m = reallocarray(l, cap *= 2, sizeof *l);
                        if (!m) {
                                free(l);
                                return -ENOMEM;
                        }
                        l = m;
                }
                l[k++] = (Line) { p + i, e - i, nl != NULL };
                i = e + 1;
        }
        *ret = l;
        *ret_n = k;
        return 0;
}

static bool same(const Line *x, const Line *y) {
        return x->n == y->n && x->nl == y->nl && memcmp(x->p, y->p, x->n) == 0;
}

/* The edit script turning a into b: a common head and tail, and between
 * them a longest common subsequence when it is small enough. */
static int script(const Line *a, size_t na, const Line *b, size_t nb, Op **ret, size_t *ret_n) {
        Op *ops = calloc(na + nb + 1, sizeof *ops);
        if (!ops)
                return -ENOMEM;
        size_t k = 0, head = 0, tail = 0;
        while (head < na && head < nb && same(&a[head], &b[head]))
                head++;
        while (tail < na - head && tail < nb - head && same(&a[na - 1 - tail], &b[nb - 1 - tail]))
                tail++;
        for (size_t i = 0; i < head; i++)
                ops[k++] = (Op) { ' ', i, i };
        size_t ma = na - head - tail, mb = nb - head - tail;
        uint32_t *t = NULL;
        if (ma && mb && (ma + 1) * (mb + 1) <= LCS_MAX_CELLS && !(t = calloc((ma + 1) * (mb + 1), sizeof *t))) {
                free(ops);
                return -ENOMEM;
        }
        if (t) {
                /* t[i][j]: the LCS of a's middle from i and b's from j. */
#define T(i, j) t[(size_t)(i) * (mb + 1) + (j)]
                for (size_t i = ma; i-- > 0;)
                        for (size_t j = mb; j-- > 0;)
                                T(i, j) = same(&a[head + i], &b[head + j]) ? T(i + 1, j + 1) + 1
                                                                           : MAX(T(i + 1, j), T(i, j + 1));
                size_t i = 0, j = 0;
                while (i < ma || j < mb) {
                        if (i < ma && j < mb && same(&a[head + i], &b[head + j])) {
                                ops[k++] = (Op) { ' ', head + i++, head + j++ };
                        } else if (i < ma && (j == mb || T(i + 1, j) >= T(i, j + 1)))
                                ops[k++] = (Op) { '-', head + i++, head + j }; /* removed lines first, as diff(1) */
                        else
                                ops[k++] = (Op) { '+', head + i, head + j++ };
                }
#undef T
                free(t);
        } else {
                for (size_t i = 0; i < ma; i++)
                        ops[k++] = (Op) { '-', head + i, head };
                for (size_t j = 0; j < mb; j++)
                        ops[k++] = (Op) { '+', head + ma, head + j };
        }
        for (size_t i = 0; i < tail; i++)
                ops[k++] = (Op) { ' ', na - tail + i, nb - tail + i };
        *ret = ops;
        *ret_n = k;
        return 0;
}

static int line_out(StrBuf *out, char kind, const Line *l) {
        int r = strbuf_appendc(out, kind);
        r |= strbuf_append(out, l->p, l->n);
        r |= strbuf_appendc(out, '\n');
        if (!l->nl)
                r |= strbuf_appends(out, "\\ No newline at end of file\n");
        return r;
}

int mcp_unified_diff(const char *a_path, const char *a, size_t a_len, const char *b_path, const char *b, size_t b_len,
                     StrBuf *out) {
        _cleanup_free_ Line *la = NULL, *lb = NULL;
        _cleanup_free_ Op *ops = NULL;
        size_t na = 0, nb = 0, n = 0;
        if (mcp_split_lines(a, a_len, &la, &na) < 0 || mcp_split_lines(b, b_len, &lb, &nb) < 0 || script(la, na, lb, nb, &ops, &n) < 0)
                return -ENOMEM;
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
                any = ops[i].kind != ' ';
        if (!any)
                return 0;
        int r = 0;
        if (a_path)
                r |= strbuf_appendf(out, "--- a/%s\n", a_path);
        else
                r |= strbuf_appends(out, "--- /dev/null\n");
        if (b_path)
                r |= strbuf_appendf(out, "+++ b/%s\n", b_path);
        else
                r |= strbuf_appends(out, "+++ /dev/null\n");
        for (size_t i = 0; i < n;) {
                while (i < n && ops[i].kind == ' ')
                        i++;
                if (i == n)
                        break;
                /* A hunk: from CONTEXT lines before this change to CONTEXT
                 * after the last change that lies within 2*CONTEXT of the
                 * one before it. */
                size_t s = i > CONTEXT ? i - CONTEXT : 0, e = i;
                for (;;) {
                        while (e < n && ops[e].kind != ' ')
                                e++;
                        size_t eq = e;
                        while (eq < n && ops[eq].kind == ' ')
                                eq++;
                        if (eq < n && eq - e <= 2 * CONTEXT)
                                e = eq;
                        else {
                                e = MIN(e + CONTEXT, n);
                                break;
                        }
                }
                size_t ca = 0, cb = 0;
                for (size_t k = s; k < e; k++) {
                        ca += ops[k].kind != '+';
                        cb += ops[k].kind != '-';
                }
                /* An empty side names the line before it (0 at the top). */
                size_t sa = ops[s].a + (ca ? 1 : 0), sb = ops[s].b + (cb ? 1 : 0);
                r |= strbuf_appendf(out, "@@ -%zu,%zu +%zu,%zu @@\n", sa, ca, sb, cb);
                for (size_t k = s; k < e; k++)
                        r |= line_out(out, ops[k].kind, ops[k].kind == '+' ? &lb[ops[k].b] : &la[ops[k].a]);
                i = e;
        }
        return r < 0 ? -ENOMEM : 0;
}
