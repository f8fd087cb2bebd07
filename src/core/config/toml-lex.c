/* SPDX-License-Identifier: MIT */
/* TOML lexing: the up-front validation of the input, error messages, strings
 * with their escapes, and (dotted) keys. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml-internal.h"
#include "utf8.h"

void toml_keypath_done(KeyPath *kp) {
        for (size_t i = 0; i < kp->n; i++)
                free(kp->k[i].s);
        free(kp->k);
        *kp = (KeyPath){};
}

int toml_fail(Parser *p, int code, unsigned line, unsigned col, const char *fmt, ...) {
        char msg[768];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        return vs_error_set(p->err, code, "%u:%u: %s", line, col, msg);
}


int toml_fail_oom(Parser *p) {
        return fail_here(p, -ENOMEM, "out of memory");
}

int toml_fail_depth(Parser *p, unsigned line, unsigned col) {
        return toml_fail(p, -E2BIG, line, col, "nesting deeper than %d levels", TOML_MAX_DEPTH);
}

/* What the parser is looking at, for messages. */
const char *toml_describe(const Parser *p, char buf[static 24]) {
        if (p->p >= p->end)
                return "end of input";
        unsigned char c = (unsigned char)*p->p;
        if (c == '\n' || c == '\r')
                return "end of line";
        if (c > 0x20 && c < 0x7f)
                snprintf(buf, 24, "'%c'", c);
        else if (c == ' ' || c == '\t')
                return "whitespace";
        else
                snprintf(buf, 24, "byte 0x%02x", c);
        return buf;
}

/* ---- input validation ---- */

/* Rejects invalid UTF-8 (overlongs, surrogates, > U+10FFFF, truncation),
 * control characters other than tab, and CR not followed by LF. */
int toml_validate_text(Parser *p) {
        const unsigned char *s = (const unsigned char *)p->p, *e = (const unsigned char *)p->end;
        const unsigned char *ls = s;
        unsigned line = 1;
        for (const unsigned char *q = s; q < e;) {
                unsigned char c = *q;
                unsigned col = (unsigned)(q - ls) + 1;
                if (c < 0x80) {
                        if (c == '\n') {
                                line++;
                                ls = ++q;
                                continue;
                        }
                        if (c == '\r') {
                                if (q + 1 < e && q[1] == '\n') {
                                        q++;
                                        continue;
                                }
                                return toml_fail(p, -EINVAL, line, col, "carriage return not followed by line feed");
                        }
                        if ((c < 0x20 && c != '\t') || c == 0x7f)
                                return toml_fail(p, -EINVAL, line, col, "control character U+%04X is not allowed", c);
                        q++;
                        continue;
                }
                uint32_t cp = 0;
                size_t len = 0;
                switch (utf8_decode((const char *)q, (size_t)(e - q), &cp, &len)) {
                case UTF8_OK:
                        break;
                case UTF8_BAD_BYTE:
                        return toml_fail(p, -EINVAL, line, col, "invalid UTF-8 (byte 0x%02x)", q[len]);
                case UTF8_TRUNCATED:
                        return toml_fail(p, -EINVAL, line, col, "invalid UTF-8 (truncated sequence)");
                case UTF8_OVERLONG:
                        return toml_fail(p, -EINVAL, line, col, "invalid UTF-8 (overlong encoding)");
                case UTF8_SURROGATE:
                        return toml_fail(p, -EINVAL, line, col, "invalid UTF-8 (encoded surrogate U+%04X)", cp);
                case UTF8_TOO_LARGE:
                        return toml_fail(p, -EINVAL, line, col, "invalid UTF-8 (code point beyond U+10FFFF)");
                }
                q += len;
        }
        return 0;
}

static int sb_err(Parser *p, int r) {
        return r == -ENOMEM ? toml_fail_oom(p) : fail_here(p, -E2BIG, "string too long");
}

static int append_utf8(StrBuf *b, uint32_t cp) {
        char u[4];
        size_t n;
        if (cp < 0x80) {
                u[0] = (char)cp, n = 1;
        } else if (cp < 0x800) {
                u[0] = (char)(0xc0 | (cp >> 6));
                u[1] = (char)(0x80 | (cp & 0x3f));
                n = 2;
        } else if (cp < 0x10000) {
                u[0] = (char)(0xe0 | (cp >> 12));
                u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[2] = (char)(0x80 | (cp & 0x3f));
                n = 3;
        } else {
                u[0] = (char)(0xf0 | (cp >> 18));
                u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[3] = (char)(0x80 | (cp & 0x3f));
                n = 4;
        }
        return strbuf_append(b, u, n);
}

int toml_hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* ---- strings ---- */

/* At a backslash inside a basic string. */
static int parse_escape(Parser *p, bool multiline, StrBuf *out) {
        unsigned line = p->line, col = pcol(p);
        p->p++; /* backslash */
        if (at_eof(p))
                return toml_fail(p, -EINVAL, line, col, "unterminated string");
        char c = *p->p;
        const char *simple = NULL;
        switch (c) {
        case 'b': simple = "\b"; break;
        case 't': simple = "\t"; break;
        case 'n': simple = "\n"; break;
        case 'f': simple = "\f"; break;
        case 'r': simple = "\r"; break;
        case '"': simple = "\""; break;
        case '\\': simple = "\\"; break;
        default: break;
        }
        if (simple) {
                p->p++;
                int r = strbuf_appendc(out, *simple);
                return r < 0 ? sb_err(p, r) : 0;
        }
        if (c == 'u' || c == 'U') {
                size_t n = c == 'u' ? 4 : 8;
                p->p++;
                uint32_t cp = 0;
                for (size_t i = 0; i < n; i++) {
                        int h = p->p + i < p->end ? toml_hexval(p->p[i]) : -1;
                        if (h < 0)
                                return toml_fail(p, -EINVAL, line, col,
                                            "escape \\%c needs exactly %zu hexadecimal digits", c, n);
                        cp = (cp << 4) | (uint32_t)h;
                }
                if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                        return toml_fail(p, -EINVAL, line, col,
                                    "escape \\%c%.*s is not a Unicode scalar value", c, (int)n, p->p);
                p->p += n;
                int r = append_utf8(out, cp);
                return r < 0 ? sb_err(p, r) : 0;
        }
        if (multiline && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
                /* Line-ending backslash: only whitespace may follow it on its line. */
                skip_ws(p);
                if (!at_newline(p))
                        return toml_fail(p, -EINVAL, line, col,
                                    "a line-ending backslash must be followed only by whitespace");
                for (;;) {
                        skip_ws(p);
                        if (!at_newline(p))
                                break;
                        eat_newline(p);
                }
                return 0;
        }
        if ((unsigned char)c > 0x20 && (unsigned char)c < 0x7f)
                return toml_fail(p, -EINVAL, line, col, "invalid escape sequence '\\%c'", c);
        return toml_fail(p, -EINVAL, line, col, "invalid escape sequence");
}

/* At the opening quote(s). Fills out with the decoded content. */
int toml_parse_string(Parser *p, StrBuf *out) {
        unsigned line = p->line, col = pcol(p);
        char q = *p->p;
        bool literal = q == '\'';
        bool multiline = starts(p, literal ? "'''" : "\"\"\"");
        int r;

        out->max = TOML_MAX_INPUT;
        /* strbuf_reserve() does not write the terminating NUL, and an empty
         * string must still come out as "" */
        if (!out->data) {
                if ((r = strbuf_reserve(out, 0)) < 0)
                        return sb_err(p, r);
                strbuf_clear(out);
        }
        p->p += multiline ? 3 : 1;
        if (multiline && at_newline(p))
                eat_newline(p); /* a newline right after the delimiter is trimmed */

        for (;;) {
                if (at_eof(p))
                        return toml_fail(p, -EINVAL, line, col, "unterminated string");
                char c = *p->p;
                if (c == q) {
                        if (!multiline) {
                                p->p++;
                                return 0;
                        }
                        size_t n = 0;
                        while (p->p + n < p->end && p->p[n] == q)
                                n++;
                        if (n >= 3) {
                                /* Up to two quotes may sit right before the closing delimiter. */
                                if (n > 5)
                                        return toml_fail(p, -EINVAL, p->line, pcol(p) + 3,
                                                    "three quotes in a row end the string here; escape them");
                                if ((r = strbuf_append(out, p->p, n - 3)) < 0)
                                        return sb_err(p, r);
                                p->p += n;
                                return 0;
                        }
                        if ((r = strbuf_append(out, p->p, n)) < 0)
                                return sb_err(p, r);
                        p->p += n;
                        continue;
                }
                if (at_newline(p)) {
                        if (!multiline)
                                return toml_fail(p, -EINVAL, line, col, "unterminated string (newline before the closing quote)");
                        eat_newline(p);
                        if ((r = strbuf_appendc(out, '\n')) < 0)
                                return sb_err(p, r);
                        continue;
                }
                if (c == '\\' && !literal) {
                        if ((r = parse_escape(p, multiline, out)) < 0)
                                return r;
                        continue;
                }
                /* Copy a run of ordinary bytes at once. */
                const char *s = p->p;
                while (p->p < p->end && *p->p != q && *p->p != '\n' && *p->p != '\r' &&
                       (literal || *p->p != '\\'))
                        p->p++;
                if ((r = strbuf_append(out, s, (size_t)(p->p - s))) < 0)
                        return sb_err(p, r);
        }
}

/* ---- keys ---- */

static int parse_simple_key(Parser *p, Key *ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];

        if (at(p, '"') || at(p, '\'')) {
                if (starts(p, "\"\"\"") || starts(p, "'''"))
                        return fail_here(p, -EINVAL, "a key cannot be a multi-line string");
                _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
                int r = toml_parse_string(p, &b);
                if (r < 0)
                        return r;
                size_t len = b.len;
                *ret = (Key){ .s = strbuf_steal(&b), .len = len, .line = line, .col = col };
                return 0;
        }
        const char *s = p->p;
        while (p->p < p->end && is_bare((unsigned char)*p->p))
                p->p++;
        if (p->p == s)
                return fail_here(p, -EINVAL, "expected a key, found %s", toml_describe(p, buf));
        char *k = strndup(s, (size_t)(p->p - s));
        if (!k)
                return toml_fail_oom(p);
        *ret = (Key){ .s = k, .len = (size_t)(p->p - s), .line = line, .col = col };
        return 0;
}

/* Parses a possibly dotted key, with whitespace around the dots. */
int toml_parse_key(Parser *p, KeyPath *kp) {
        for (;;) {
                skip_ws(p);
                if (kp->n >= TOML_MAX_DEPTH)
                        return toml_fail_depth(p, p->line, pcol(p));
                if (kp->n == kp->cap) {
                        size_t ncap = kp->cap ? kp->cap * 2 : 4;
                        Key *k = reallocarray(kp->k, ncap, sizeof *k);
                        if (!k)
                                return toml_fail_oom(p);
                        kp->k = k;
                        kp->cap = ncap;
                }
                int r = parse_simple_key(p, &kp->k[kp->n]);
                if (r < 0)
                        return r;
                kp->n++;
                skip_ws(p);
                if (!at(p, '.'))
                        return 0;
                p->p++;
        }
}
