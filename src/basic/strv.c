/* SPDX-License-Identifier: MIT */
#include "strv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}

int strv_consume(char ***l, char *s) {
        if (!s)
                return -ENOMEM;
        size_t n = strv_length(*l);
        char **nl = realloc(*l, (n + 2) * sizeof(char *));
        if (!nl) {
                free(s);
                return -ENOMEM;
        }
        nl[n] = s;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        return strv_consume(l, strdup(s));
}

int strv_extendf(char ***l, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return strv_consume(l, s);
}

bool strv_contains(char *const *l, const char *s) {
        if (l)
                for (char *const *i = l; *i; i++)
                        if (streq(*i, s))
                                return true;
        return false;
}

char **strv_copy(char *const *l) {
        size_t n = strv_length(l);
        char **c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i]) {
                        strv_free(c);
                        return NULL;
                }
        }
        return c;
}

char *strv_join(char *const *l, const char *sep) {
        size_t n = 0, sl = strlen(sep);
        for (size_t i = 0; l && l[i]; i++)
                n += strlen(l[i]) + sl;
        char *r = malloc(n + 1), *p = r;
        if (!r)
                return NULL;
        for (size_t i = 0; l && l[i]; i++) {
                if (i) {
                        memcpy(p, sep, sl);
                        p += sl;
                }
                size_t k = strlen(l[i]);
                memcpy(p, l[i], k);
                p += k;
        }
        *p = 0;
        return r;
}

bool strv_equal(char *const *a, char *const *b) {
        for (; a && *a; a++, b++)
                if (!b || !*b || strcmp(*a, *b) != 0)
                        return false;
        return !b || !*b;
}

const char *strv_env_get(char *const *env, const char *k) {
        size_t kl = strlen(k);
        for (char *const *e = env; e && *e; e++)
                if (strncmp(*e, k, kl) == 0 && (*e)[kl] == '=')
                        return *e + kl + 1;
        return NULL;
}

int strv_env_set(char ***env, const char *k, const char *v) {
        size_t kl = strlen(k);
        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, k, kl) == 0 && (*e)[kl] == '=') {
                        char *n = NULL;
                        if (asprintf(&n, "%s=%s", k, v) < 0)
                                return -ENOMEM;
                        free(*e);
                        *e = n;
                        return 0;
                }
        return strv_extendf(env, "%s=%s", k, v);
}

static int cmp_str(const void *x, const void *y) {
        return strcmp(*(const char *const *)x, *(const char *const *)y);
}

int strv_difference(char *const *a, char *const *b, char ***ret) {
        size_t na = strv_length(a), nb = strv_length(b), n = 0;
        _cleanup_free_ const char **sorted = calloc(nb ? nb : 1, sizeof *sorted);
        _cleanup_strv_free_ char **out = calloc(na + 1, sizeof *out);
        if (!sorted || !out)
                return -ENOMEM;
        for (size_t i = 0; i < nb; i++)
                sorted[i] = b[i];
        qsort(sorted, nb, sizeof *sorted, cmp_str);
        for (size_t i = 0; i < na; i++)
                if (!bsearch(&a[i], sorted, nb, sizeof *sorted, cmp_str) && !(out[n++] = strdup(a[i])))
                        return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}
