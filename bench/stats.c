/* SPDX-License-Identifier: MIT */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int samples_add(Samples *s, unsigned round, double value) {
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 64;
                double *v = realloc(s->v, cap * sizeof *v);
                if (!v)
                        return -ENOMEM;
                s->v = v;
                unsigned *r = realloc(s->round, cap * sizeof *r);
                if (!r)
                        return -ENOMEM;
                s->round = r;
                s->cap = cap;
        }
        s->v[s->n] = value;
        s->round[s->n] = round;
        s->n++;
        return 0;
}

void samples_done(Samples *s) {
        free(s->v);
        free(s->round);
        *s = (Samples){ 0 };
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

double samples_pct(const Samples *s, double p) {
        if (s->n == 0)
                return NAN;
        double *c = malloc(s->n * sizeof *c);
        if (!c)
                return NAN;
        memcpy(c, s->v, s->n * sizeof *c);
        qsort(c, s->n, sizeof *c, cmp_double);
        /* Nearest rank, the same definition bench/report.py uses. */
        size_t k = (size_t)ceil(p / 100.0 * (double)s->n);
        if (k > 0)
                k--;
        if (k >= s->n)
                k = s->n - 1;
        double v = c[k];
        free(c);
        return v;
}

double samples_min(const Samples *s) {
        double m = INFINITY;
        for (size_t i = 0; i < s->n; i++)
                m = fmin(m, s->v[i]);
        return s->n ? m : NAN;
}

double samples_max(const Samples *s) {
        double m = -INFINITY;
        for (size_t i = 0; i < s->n; i++)
                m = fmax(m, s->v[i]);
        return s->n ? m : NAN;
}

int bench_out_init(BenchOut *o, const char *bench) {
        o->doc = json_pack("{s:s,s:[],s:[],s:[],s:{}}", "bench", bench, "figures", "ratios", "notes", "values");
        return o->doc ? 0 : -ENOMEM;
}

int bench_out_figure(BenchOut *o, const char *key, const char *label, const char *unit, const Samples *s) {
        unsigned nr = 0;
        for (size_t i = 0; i < s->n; i++)
                if (s->round[i] + 1 > nr)
                        nr = s->round[i] + 1;
        json_t *rounds = json_array();
        if (!rounds)
                return -ENOMEM;
        for (unsigned r = 0; r < nr; r++) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < s->n; i++)
                        if (s->round[i] == r)
                                json_array_append_new(a, json_real(s->v[i]));
                if (!a || json_array_append_new(rounds, a) < 0) {
                        json_decref(rounds);
                        return -ENOMEM;
                }
        }
        json_t *f = json_pack("{s:s,s:s,s:s,s:o}", "key", key, "label", label, "unit", unit, "rounds", rounds);
        if (!f || json_array_append_new(json_object_get(o->doc, "figures"), f) < 0)
                return -ENOMEM;
        return 0;
}

int bench_out_ratio(BenchOut *o, const char *key, const char *label, const char *num, const char *den) {
        json_t *r = json_pack("{s:s,s:s,s:s,s:s}", "key", key, "label", label, "num", num, "den", den);
        if (!r || json_array_append_new(json_object_get(o->doc, "ratios"), r) < 0)
                return -ENOMEM;
        return 0;
}

int bench_out_note(BenchOut *o, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        json_t *j = json_string(s);
        free(s);
        if (!j || json_array_append_new(json_object_get(o->doc, "notes"), j) < 0)
                return -ENOMEM;
        return 0;
}

int bench_out_value(BenchOut *o, const char *key, double v) {
        return json_object_set_new(json_object_get(o->doc, "values"), key, json_real(v)) < 0 ? -ENOMEM : 0;
}

int bench_out_print(BenchOut *o) {
        int r = json_dumpf(o->doc, stdout, JSON_COMPACT) < 0 ? -EIO : 0;
        putchar('\n');
        fflush(stdout);
        json_decref(o->doc);
        o->doc = NULL;
        return r;
}
