/* SPDX-License-Identifier: MIT */
#include "mcp-patch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "macro.h"
#include "mcp-diff.h"
#include "strbuf.h"

#define PATCH_FILES_MAX 100

static bool is(const McpPatchLine *l, const char *s) {
        return l->n == strlen(s) && memcmp(l->p, s, l->n) == 0;
}

/* The rest of l after prefix, or NULL. */
static char *after(const McpPatchLine *l, const char *prefix) {
        size_t k = strlen(prefix);
        if (l->n < k || memcmp(l->p, prefix, k) != 0)
                return NULL;
        size_t s = k, e = l->n;
        while (s < e && (l->p[s] == ' ' || l->p[s] == '\t'))
                s++;
        while (e > s && (l->p[e - 1] == ' ' || l->p[e - 1] == '\t'))
                e--;
        return strndup(l->p + s, e - s);
}

static int why(char **ret_why, const char *fmt, ...) _printf_(2, 3);
static int why(char **ret_why, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(ret_why, fmt, ap);
        va_end(ap);
        return k < 0 ? -ENOMEM : -EINVAL;
}

/* The patch's lines, a '\r' before a '\n' left out. */
static int split(const char *p, size_t n, McpPatchLine **ret, size_t *ret_n) {
        int r = mcp_split_lines(p, n, ret, ret_n);
        for (size_t i = 0; r >= 0 && i < *ret_n; i++)
                if ((*ret)[i].n && (*ret)[i].p[(*ret)[i].n - 1] == '\r')
                        (*ret)[i].n--;
        return r;
}

void mcp_patch_done(McpPatch *p) {
        for (size_t i = 0; i < p->n_files; i++) {
                free(p->files[i].path);
                free(p->files[i].move_to);
        }
        free(p->files);
        free(p->lines);
        *p = (McpPatch) {};
}

int mcp_patch_parse(const char *text, McpPatch *ret, char **ret_why) {
        McpPatch p = {};
        int r = split(text, strlen(text), &p.lines, &p.n_lines);
        if (r < 0)
                return r;
        size_t s = 0, e = p.n_lines;
        while (s < e && p.lines[s].n == 0)
                s++;
        while (e > s && p.lines[e - 1].n == 0)
                e--;
        if (s == e || !is(&p.lines[s], "*** Begin Patch")) {
                mcp_patch_done(&p);
                return why(ret_why, "a patch starts with the line '*** Begin Patch'");
        }
        if (!is(&p.lines[e - 1], "*** End Patch")) {
                mcp_patch_done(&p);
                return why(ret_why, "a patch ends with the line '*** End Patch'");
        }
        if (!(p.files = calloc(PATCH_FILES_MAX, sizeof *p.files))) {
                mcp_patch_done(&p);
                return -ENOMEM;
        }
        r = 0;
        for (size_t i = s + 1; i < e - 1 && r == 0;) {
                McpPatchLine *l = &p.lines[i];
                McpPatchFile f = {};
                if ((f.path = after(l, "*** Add File:")))
                        f.kind = MCP_PATCH_ADD;
                else if ((f.path = after(l, "*** Delete File:")))
                        f.kind = MCP_PATCH_DELETE;
                else if ((f.path = after(l, "*** Update File:")))
                        f.kind = MCP_PATCH_UPDATE;
                else {
                        r = why(ret_why, "line %zu of the patch: expected '*** Add File:', '*** Delete File:' or "
                                         "'*** Update File:', found '%.*s'", i + 1, (int)MIN(l->n, (size_t)80), l->p);
                        break;
                }
                if (!f.path[0]) {
                        free(f.path);
                        r = why(ret_why, "line %zu of the patch: the file's path is missing", i + 1);
                        break;
                }
                i++;
                if (f.kind == MCP_PATCH_UPDATE && i < e - 1 && (f.move_to = after(&p.lines[i], "*** Move to:")))
                        i++;
                f.first = i;
                while (i < e - 1 && !(p.lines[i].n >= 4 && memcmp(p.lines[i].p, "*** ", 4) == 0 &&
                                      !is(&p.lines[i], "*** End of File")))
                        i++;
                f.end = i;
                if (p.n_files == PATCH_FILES_MAX) {
                        free(f.path);
                        free(f.move_to);
                        r = why(ret_why, "a patch changes at most %d files", PATCH_FILES_MAX);
                        break;
                }
                p.files[p.n_files++] = f;
                for (size_t k = f.first; k < f.end && r == 0; k++) {
                        McpPatchLine *b = &p.lines[k];
                        if (f.kind == MCP_PATCH_ADD && (b->n == 0 || b->p[0] != '+'))
                                r = why(ret_why, "line %zu of the patch: each line of an added file starts with '+'", k + 1);
                        else if (f.kind == MCP_PATCH_DELETE)
                                r = why(ret_why, "line %zu of the patch: '*** Delete File:' has no lines after it", k + 1);
                        else if (f.kind == MCP_PATCH_UPDATE && b->n && !strchr(" -+@", b->p[0]) && !is(b, "*** End of File"))
                                r = why(ret_why, "line %zu of the patch: a hunk's lines start with ' ', '-' or '+' "
                                                 "(or '@@' for a new hunk)", k + 1);
                }
                if (r == 0 && f.kind == MCP_PATCH_UPDATE && f.first == f.end && !f.move_to)
                        r = why(ret_why, "'*** Update File: %s' has no hunk", f.path);
        }
        if (r == 0 && p.n_files == 0)
                r = why(ret_why, "the patch changes no file");
        if (r < 0) {
                mcp_patch_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

int mcp_patch_added(const McpPatch *p, const McpPatchFile *f, char **ret, size_t *ret_len) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        int r = strbuf_reserve(&b, 1);
        for (size_t k = f->first; k < f->end; k++) {
                r |= strbuf_append(&b, p->lines[k].p + 1, p->lines[k].n - 1);
                r |= strbuf_appendc(&b, '\n');
        }
        if (r < 0)
                return -ENOMEM;
        *ret_len = b.len;
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

typedef struct Text {
        const char *p;
        size_t n;
} Text;

/* Equal in mode 0 (exactly), 1 (trailing white space aside), 2 (white
 * space at both ends aside). */
static bool match(Text a, Text b, int mode) {
        if (mode >= 1) {
                while (a.n && (a.p[a.n - 1] == ' ' || a.p[a.n - 1] == '\t'))
                        a.n--;
                while (b.n && (b.p[b.n - 1] == ' ' || b.p[b.n - 1] == '\t'))
                        b.n--;
        }
        if (mode >= 2) {
                while (a.n && (*a.p == ' ' || *a.p == '\t'))
                        a.p++, a.n--;
                while (b.n && (*b.p == ' ' || *b.p == '\t'))
                        b.p++, b.n--;
        }
        return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* Where old[0..n_old) lies in file[from..), or -1; eof: at the end first. */
static ssize_t find(const Text *file, size_t n_file, size_t from, const Text *old, size_t n_old, bool eof) {
        for (int mode = 0; mode < 3; mode++) {
                if (eof && n_file >= n_old && n_file - n_old >= from) {
                        size_t at = n_file - n_old, k = 0;
                        while (k < n_old && match(file[at + k], old[k], mode))
                                k++;
                        if (k == n_old)
                                return (ssize_t)at;
                }
                for (size_t at = from; at + n_old <= n_file; at++) {
                        size_t k = 0;
                        while (k < n_old && match(file[at + k], old[k], mode))
                                k++;
                        if (k == n_old)
                                return (ssize_t)at;
                }
        }
        return -1;
}

typedef struct Hunk {
        Text anchor; /* p NULL: none */
        Text *old, *new;
        size_t n_old, n_new;
        bool eof;
} Hunk;

int mcp_patch_update(const McpPatch *p, const McpPatchFile *f, const char *old, size_t old_len, char **ret,
                     size_t *ret_len, char **ret_why) {
        /* The file's lines, without their ending; a CRLF file's come back
         * with it. */
        size_t cap = 1;
        for (size_t i = 0; i < old_len; i++)
                cap += old[i] == '\n';
        _cleanup_free_ Text *file = calloc(cap, sizeof *file);
        size_t hunk_lines = f->end - f->first + 1;
        _cleanup_free_ Text *olds = calloc(hunk_lines, sizeof *olds), *news = calloc(hunk_lines, sizeof *news);
        if (!file || !olds || !news)
                return -ENOMEM;
        size_t n_file = 0, crlf = 0;
        for (size_t i = 0; i < old_len;) {
                const char *nl = memchr(old + i, '\n', old_len - i);
                size_t e = nl ? (size_t)(nl - old) : old_len;
                Text t = { old + i, e - i };
                if (nl && t.n && t.p[t.n - 1] == '\r') {
                        t.n--;
                        crlf++;
                }
                file[n_file++] = t;
                i = e + 1;
        }
        bool final_nl = old_len == 0 || old[old_len - 1] == '\n';
        const char *eol = n_file && crlf == n_file - !final_nl ? "\r\n" : "\n";
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        size_t pos = 0, n_hunk = 0, k = f->first;
        int r = 0;
        while (k < f->end) {
                Hunk h = { .old = olds, .new = news };
                const McpPatchLine *l = &p->lines[k];
                if (l->n >= 2 && memcmp(l->p, "@@", 2) == 0) {
                        size_t s = 2;
                        while (s < l->n && l->p[s] == ' ')
                                s++;
                        if (s < l->n)
                                h.anchor = (Text) { l->p + s, l->n - s };
                        k++;
                }
                for (; k < f->end; k++) {
                        l = &p->lines[k];
                        if (l->n >= 2 && memcmp(l->p, "@@", 2) == 0)
                                break;
                        if (l->n >= 4 && memcmp(l->p, "*** ", 4) == 0) { /* *** End of File */
                                h.eof = true;
                                continue;
                        }
                        Text t = l->n ? (Text) { l->p + 1, l->n - 1 } : (Text) { l->p, 0 };
                        char c = l->n ? l->p[0] : ' ';
                        if (c != '+')
                                h.old[h.n_old++] = t;
                        if (c != '-')
                                h.new[h.n_new++] = t;
                }
                n_hunk++;
                if (h.anchor.p) {
                        ssize_t at = find(file, n_file, pos, &h.anchor, 1, false);
                        if (at < 0)
                                return why(ret_why, "hunk %zu of %s: the line '@@ %.*s' was not found in the file; "
                                                    "file_read it and make the patch again",
                                           n_hunk, f->path, (int)MIN(h.anchor.n, (size_t)80), h.anchor.p);
                        /* Its lines copied as they are; the hunk starts after it. */
                        for (; pos <= (size_t)at; pos++)
                                r |= strbuf_append(&out, file[pos].p, file[pos].n) | strbuf_appends(&out, eol);
                }
                ssize_t at = h.n_old ? find(file, n_file, pos, h.old, h.n_old, h.eof)
                                     : (ssize_t)(h.anchor.p && !h.eof ? pos : n_file);
                if (at < 0)
                        return why(ret_why, "hunk %zu of %s does not match the file (its first line: '%.*s'); "
                                            "file_read the file and make the patch again from its current text",
                                   n_hunk, f->path, (int)MIN(h.old[0].n, (size_t)80), h.old[0].p);
                for (; pos < (size_t)at; pos++)
                        r |= strbuf_append(&out, file[pos].p, file[pos].n) | strbuf_appends(&out, eol);
                for (size_t i = 0; i < h.n_new; i++)
                        r |= strbuf_append(&out, h.new[i].p, h.new[i].n) | strbuf_appends(&out, eol);
                pos += h.n_old;
        }
        for (; pos < n_file; pos++)
                r |= strbuf_append(&out, file[pos].p, file[pos].n) | strbuf_appends(&out, eol);
        /* A file that had no final newline keeps it that way. */
        if (r < 0 || strbuf_reserve(&out, 1) < 0)
                return -ENOMEM;
        if (!final_nl && out.len >= strlen(eol))
                out.len -= strlen(eol);
        out.data[out.len] = 0;
        *ret_len = out.len;
        *ret = strbuf_steal(&out);
        return *ret ? 0 : -ENOMEM;
}
