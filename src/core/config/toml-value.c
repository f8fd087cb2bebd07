/* SPDX-License-Identifier: MIT */
/* TOML values: numbers, date-times, arrays and inline tables. The value parser
 * recurses only into arrays and inline tables, each call one level deeper, so
 * the stack use is bounded by TOML_MAX_DEPTH. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml-internal.h"

/* ---- scalar values ---- */

static int digit_in_base(char c, int base) {
        int v = toml_hexval(c);
        return v >= 0 && v < base ? v : -1;
}

/* Reads DIGIT ('_'? DIGIT)* from s; returns where it stopped (s if no digit).
 * An underscore not between two digits is left unread, so the caller sees it. */
static const char *scan_digits(const char *s, const char *e, int base) {
        if (s >= e || digit_in_base(*s, base) < 0)
                return s;
        s++;
        for (;;) {
                if (s < e && digit_in_base(*s, base) >= 0)
                        s++;
                else if (s + 1 < e && *s == '_' && digit_in_base(s[1], base) >= 0)
                        s += 2;
                else
                        return s;
        }
}

static int parse_number(Parser *p, unsigned line, unsigned col, TomlNode **ret) {
        const char *s = p->p, *e = s;
        /* The token: sign, alphanumerics, '_', '.', and a sign right after an exponent 'e'. */
        if (e < p->end && (*e == '+' || *e == '-'))
                e++;
        while (e < p->end) {
                char c = *e;
                if (is_bare((unsigned char)c) || c == '.' ||
                    ((c == '+' || c == '-') && (e[-1] == 'e' || e[-1] == 'E')))
                        e++;
                else
                        break;
        }
        int tlen = (int)MIN(e - s, 64);
        const char *q = s;
        bool neg = false, sign = false;
        if (*q == '+' || *q == '-') {
                neg = *q == '-';
                sign = true;
                q++;
        }

        if (e - q == 3 && (memcmp(q, "inf", 3) == 0 || memcmp(q, "nan", 3) == 0)) {
                TomlNode *n = toml_node_new(TOML_FLOAT, line, col, 0);
                if (!n)
                        return toml_fail_oom(p);
                n->v.floating = q[0] == 'i' ? INFINITY : NAN;
                if (neg)
                        n->v.floating = -n->v.floating;
                p->p = e;
                *ret = n;
                return 0;
        }

        if (e - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'o' || q[1] == 'b')) {
                int base = q[1] == 'x' ? 16 : q[1] == 'o' ? 8 : 2;
                if (sign)
                        return toml_fail(p, -EINVAL, line, col, "a sign is not allowed on %s integer",
                                    base == 16 ? "a hexadecimal" : base == 8 ? "an octal" : "a binary");
                const char *d = q + 2, *de = scan_digits(d, e, base);
                if (de == d || de != e)
                        return toml_fail(p, -EINVAL, line, col, "invalid %s integer '%.*s'",
                                    base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary", tlen, s);
                uint64_t x = 0;
                for (; d < de; d++) {
                        if (*d == '_')
                                continue;
                        uint64_t dv = (uint64_t)digit_in_base(*d, base);
                        if (x > ((uint64_t)INT64_MAX - dv) / (uint64_t)base)
                                return toml_fail(p, -EINVAL, line, col, "integer '%.*s' does not fit in 64 bits", tlen, s);
                        x = x * (uint64_t)base + dv;
                }
                TomlNode *n = toml_node_new(TOML_INTEGER, line, col, 0);
                if (!n)
                        return toml_fail_oom(p);
                n->v.integer = (int64_t)x;
                p->p = e;
                *ret = n;
                return 0;
        }

        /* Decimal integer or float: int-part [ '.' digits ] [ e [sign] digits ] */
        const char *ie = scan_digits(q, e, 10);
        if (ie == q)
                return toml_fail(p, -EINVAL, line, col, "invalid number '%.*s'", tlen, s);
        if (q[0] == '0' && ie - q > 1)
                return toml_fail(p, -EINVAL, line, col, "leading zeros are not allowed in '%.*s'", tlen, s);
        const char *t = ie;
        bool is_float = false;
        if (t < e && *t == '.') {
                const char *fe = scan_digits(t + 1, e, 10);
                if (fe == t + 1)
                        return toml_fail(p, -EINVAL, line, col, "a decimal point must be followed by digits in '%.*s'", tlen, s);
                t = fe;
                is_float = true;
        }
        if (t < e && (*t == 'e' || *t == 'E')) {
                const char *x = t + 1;
                if (x < e && (*x == '+' || *x == '-'))
                        x++;
                const char *xe = scan_digits(x, e, 10);
                if (xe == x)
                        return toml_fail(p, -EINVAL, line, col, "an exponent needs digits in '%.*s'", tlen, s);
                t = xe;
                is_float = true;
        }
        if (t != e) {
                if (*t == '_' || t[-1] == '_')
                        return toml_fail(p, -EINVAL, line, col, "an underscore must sit between two digits in '%.*s'", tlen, s);
                return toml_fail(p, -EINVAL, line, col, "invalid number '%.*s'", tlen, s);
        }

        if (is_float) {
                /* strtod on a copy without underscores; TOML floats use '.'
                 * whatever the locale, and the programs never call setlocale(). */
                _cleanup_free_ char *clean = malloc((size_t)(e - s) + 1);
                if (!clean)
                        return toml_fail_oom(p);
                size_t k = 0;
                for (const char *c = s; c < e; c++)
                        if (*c != '_')
                                clean[k++] = *c;
                clean[k] = 0;
                char *endp;
                errno = 0;
                double d = strtod(clean, &endp);
                if (*endp != 0)
                        return toml_fail(p, -EINVAL, line, col, "invalid float '%.*s'", tlen, s);
                if (isinf(d))
                        return toml_fail(p, -EINVAL, line, col, "float '%.*s' is out of range", tlen, s);
                TomlNode *n = toml_node_new(TOML_FLOAT, line, col, 0);
                if (!n)
                        return toml_fail_oom(p);
                n->v.floating = d;
                p->p = e;
                *ret = n;
                return 0;
        }

        uint64_t x = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (const char *d = q; d < ie; d++) {
                if (*d == '_')
                        continue;
                uint64_t dv = (uint64_t)(*d - '0');
                if (x > (lim - dv) / 10)
                        return toml_fail(p, -EINVAL, line, col, "integer '%.*s' does not fit in 64 bits", tlen, s);
                x = x * 10 + dv;
        }
        TomlNode *n = toml_node_new(TOML_INTEGER, line, col, 0);
        if (!n)
                return toml_fail_oom(p);
        n->v.integer = neg ? (int64_t)(0 - x) : (int64_t)x;
        p->p = e;
        *ret = n;
        return 0;
}

/* Reads exactly n digits at *s; -1 if not there. */
static int fixed_digits(const char **s, const char *e, size_t n) {
        int v = 0;
        if ((size_t)(e - *s) < n)
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit((*s)[i]))
                        return -1;
                v = v * 10 + ((*s)[i] - '0');
        }
        *s += n;
        return v;
}

static bool is_leap(int y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* HH:MM:SS[.frac] at *s. */
static int scan_time(Parser *p, const char **s, const char *e, unsigned line, unsigned col) {
        const char *t = *s;
        int h = fixed_digits(&t, e, 2);
        if (h < 0 || t >= e || *t != ':')
                return toml_fail(p, -EINVAL, line, col, "invalid time: expected HH:MM:SS");
        t++;
        int m = fixed_digits(&t, e, 2);
        if (m < 0 || t >= e || *t != ':')
                return toml_fail(p, -EINVAL, line, col, "invalid time: expected HH:MM:SS (seconds are required)");
        t++;
        int sec = fixed_digits(&t, e, 2);
        if (sec < 0)
                return toml_fail(p, -EINVAL, line, col, "invalid time: expected HH:MM:SS");
        if (h > 23 || m > 59 || sec > 60)
                return toml_fail(p, -EINVAL, line, col, "invalid time %02d:%02d:%02d: out of range", h, m, sec);
        if (t < e && *t == '.') {
                t++;
                if (t >= e || !is_digit(*t))
                        return toml_fail(p, -EINVAL, line, col, "invalid time: a '.' must be followed by digits");
                while (t < e && is_digit(*t))
                        t++;
        }
        *s = t;
        return 0;
}

static int parse_datetime(Parser *p, unsigned line, unsigned col, TomlNode **ret) {
        const char *s = p->p, *t = s, *e = p->end;
        TomlType type;
        int r;

        if (e - s >= 3 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':') {
                if ((r = scan_time(p, &t, e, line, col)) < 0)
                        return r;
                type = TOML_TIME_LOCAL;
        } else {
                int y = fixed_digits(&t, e, 4);
                if (y < 0 || t >= e || *t != '-')
                        return toml_fail(p, -EINVAL, line, col, "invalid date: expected YYYY-MM-DD");
                t++;
                int mo = fixed_digits(&t, e, 2);
                if (mo < 0 || t >= e || *t != '-')
                        return toml_fail(p, -EINVAL, line, col, "invalid date: expected YYYY-MM-DD");
                t++;
                int d = fixed_digits(&t, e, 2);
                if (d < 0)
                        return toml_fail(p, -EINVAL, line, col, "invalid date: expected YYYY-MM-DD");
                static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
                if (mo < 1 || mo > 12)
                        return toml_fail(p, -EINVAL, line, col, "invalid date: month %02d is out of range", mo);
                int dim = mdays[mo - 1] + (mo == 2 && is_leap(y));
                if (d < 1 || d > dim)
                        return toml_fail(p, -EINVAL, line, col, "invalid date: day %02d is out of range for %04d-%02d",
                                    d, y, mo);
                type = TOML_DATE_LOCAL;
                /* 'T' or a space followed by a digit starts the time. */
                if (t < e && (*t == 'T' || *t == 't' || (*t == ' ' && t + 1 < e && is_digit(t[1])))) {
                        t++;
                        if ((r = scan_time(p, &t, e, line, col)) < 0)
                                return r;
                        type = TOML_DATETIME_LOCAL;
                        if (t < e && (*t == 'Z' || *t == 'z')) {
                                t++;
                                type = TOML_DATETIME;
                        } else if (t < e && (*t == '+' || *t == '-')) {
                                t++;
                                int oh = fixed_digits(&t, e, 2);
                                if (oh < 0 || t >= e || *t != ':')
                                        return toml_fail(p, -EINVAL, line, col, "invalid time offset: expected +HH:MM");
                                t++;
                                int om = fixed_digits(&t, e, 2);
                                if (om < 0)
                                        return toml_fail(p, -EINVAL, line, col, "invalid time offset: expected +HH:MM");
                                if (oh > 23 || om > 59)
                                        return toml_fail(p, -EINVAL, line, col, "invalid time offset: out of range");
                                type = TOML_DATETIME;
                        }
                }
        }
        if (t < e && (is_bare((unsigned char)*t) || *t == '.' || *t == ':' || *t == '+'))
                return toml_fail(p, -EINVAL, line, col, "invalid date-time '%.*s'", (int)MIN(t - s + 1, 64), s);

        char *text = strndup(s, (size_t)(t - s));
        if (!text)
                return toml_fail_oom(p);
        if (type == TOML_DATETIME || type == TOML_DATETIME_LOCAL)
                text[10] = 'T';
        if (type == TOML_DATETIME && text[t - s - 1] == 'z')
                text[t - s - 1] = 'Z';
        TomlNode *n = toml_node_new(type, line, col, 0);
        if (!n) {
                free(text);
                return toml_fail_oom(p);
        }
        n->v.datetime = text;
        p->p = t;
        *ret = n;
        return 0;
}

/* ---- values ---- */

static int parse_array(Parser *p, unsigned depth, TomlNode **ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];
        _cleanup_(toml_freep) TomlValue *a = NULL;
        TomlNode *n = toml_node_new(TOML_ARRAY, line, col, depth);
        if (!n)
                return toml_fail_oom(p);
        n->flags = NODE_FROZEN;
        a = &n->v;
        p->p++; /* [ */
        for (;;) {
                skip_ws_comments_newlines(p);
                if (at(p, ']'))
                        break;
                if (at_eof(p))
                        return toml_fail(p, -EINVAL, line, col, "unterminated array");
                TomlNode *item = NULL;
                int r = toml_parse_value(p, depth + 1, &item);
                if (r < 0)
                        return r;
                if (toml_array_add(n, &item->v) < 0) {
                        toml_free(&item->v);
                        return toml_fail_oom(p);
                }
                skip_ws_comments_newlines(p);
                if (at(p, ','))
                        p->p++;
                else if (at(p, ']'))
                        break;
                else if (at_eof(p))
                        return toml_fail(p, -EINVAL, line, col, "unterminated array");
                else
                        return fail_here(p, -EINVAL, "expected ',' or ']' in array, found %s", toml_describe(p, buf));
        }
        p->p++; /* ] */
        TAKE_PTR(a);
        *ret = n;
        return 0;
}

static int parse_inline_table(Parser *p, unsigned depth, TomlNode **ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];
        _cleanup_(toml_freep) TomlValue *t = NULL;
        TomlNode *n = toml_node_new(TOML_TABLE, line, col, depth);
        if (!n)
                return toml_fail_oom(p);
        t = &n->v;
        p->p++; /* { */
        skip_ws(p);
        if (at(p, '}')) {
                p->p++;
                n->flags = NODE_FROZEN;
                TAKE_PTR(t);
                *ret = n;
                return 0;
        }
        for (;;) {
                _cleanup_(toml_keypath_done) KeyPath kp = {};
                skip_ws(p);
                if (at_newline(p) || at_eof(p))
                        return fail_here(p, -EINVAL, "an inline table must be on one line (opened at %u:%u)", line, col);
                int r = toml_parse_key(p, &kp);
                if (r < 0)
                        return r;
                if (!at(p, '='))
                        return fail_here(p, -EINVAL, "expected '=' after a key, found %s", toml_describe(p, buf));
                p->p++;
                skip_ws(p);
                if (depth + kp.n > TOML_MAX_DEPTH)
                        return toml_fail_depth(p, kp.k[0].line, kp.k[0].col);
                TomlNode *value = NULL;
                if ((r = toml_parse_value(p, depth + (unsigned)kp.n, &value)) < 0)
                        return r;
                if ((r = toml_insert_keyval(p, n, &kp, value)) < 0)
                        return r;
                skip_ws(p);
                if (at(p, ',')) {
                        p->p++;
                        skip_ws(p);
                        if (at(p, '}'))
                                return fail_here(p, -EINVAL, "trailing comma not allowed in an inline table");
                        continue;
                }
                if (at(p, '}'))
                        break;
                if (at_newline(p) || at_eof(p))
                        return fail_here(p, -EINVAL, "an inline table must be on one line (opened at %u:%u)", line, col);
                return fail_here(p, -EINVAL, "expected ',' or '}' in inline table, found %s", toml_describe(p, buf));
        }
        p->p++; /* } */
        n->flags = NODE_FROZEN;
        TAKE_PTR(t);
        *ret = n;
        return 0;
}

int toml_parse_value(Parser *p, unsigned depth, TomlNode **ret) {
        unsigned line = p->line, col = pcol(p);
        char buf[24];
        int r;

        if (depth > TOML_MAX_DEPTH)
                return toml_fail_depth(p, line, col);
        if (at_eof(p) || at_newline(p))
                return fail_here(p, -EINVAL, "expected a value, found %s", toml_describe(p, buf));

        TomlNode *n = NULL;
        char c = *p->p;
        switch (c) {
        case '"':
        case '\'': {
                _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
                if ((r = toml_parse_string(p, &b)) < 0)
                        return r;
                n = toml_node_new(TOML_STRING, line, col, depth);
                if (!n)
                        return toml_fail_oom(p);
                n->v.string.len = b.len;
                n->v.string.ptr = strbuf_steal(&b);
                break;
        }
        case '[':
                if ((r = parse_array(p, depth, &n)) < 0)
                        return r;
                break;
        case '{':
                if ((r = parse_inline_table(p, depth, &n)) < 0)
                        return r;
                break;
        case 't':
        case 'f': {
                bool b = c == 't';
                if (!starts(p, b ? "true" : "false") ||
                    (p->p + (b ? 4 : 5) < p->end && is_bare((unsigned char)p->p[b ? 4 : 5])))
                        return fail_here(p, -EINVAL, "expected a value (true, false, a number, a string...), found %s",
                                         toml_describe(p, buf));
                p->p += b ? 4 : 5;
                n = toml_node_new(TOML_BOOL, line, col, depth);
                if (!n)
                        return toml_fail_oom(p);
                n->v.boolean = b;
                break;
        }
        default:
                if (is_digit(c) && p->end - p->p >= 3 &&
                    ((is_digit(p->p[1]) && p->p[2] == ':') ||
                     (p->end - p->p >= 5 && is_digit(p->p[1]) && is_digit(p->p[2]) && is_digit(p->p[3]) &&
                      p->p[4] == '-'))) {
                        if ((r = parse_datetime(p, line, col, &n)) < 0)
                                return r;
                } else if (is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n') {
                        if ((r = parse_number(p, line, col, &n)) < 0)
                                return r;
                } else
                        return fail_here(p, -EINVAL, "expected a value, found %s", toml_describe(p, buf));
                n->depth = depth;
                break;
        }
        *ret = n;
        return 0;
}
