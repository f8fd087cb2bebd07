/* SPDX-License-Identifier: MIT */
#pragma once

/* Samples of one figure, tagged with the round they were taken in, so
 * that alternatives measured in interleaved rounds (ABAB) can be compared
 * round by round; and the JSON every benchmark prints for bench/report.py. */

#include <stddef.h>

#include <jansson.h>

typedef struct Samples {
        double *v;
        unsigned *round;
        size_t n, cap;
} Samples;

int samples_add(Samples *s, unsigned round, double value);
void samples_done(Samples *s);

/* Percentile p in [0, 100] (nearest rank on a sorted copy); NAN when empty. */
double samples_pct(const Samples *s, double p);
static inline double samples_median(const Samples *s) {
        return samples_pct(s, 50);
}
double samples_min(const Samples *s);
double samples_max(const Samples *s);

/* The document a benchmark prints on stdout:
 * {"bench": NAME, "figures": [...], "ratios": [...], "notes": [...], "values": {...}} */
typedef struct BenchOut {
        json_t *doc;
} BenchOut;

int bench_out_init(BenchOut *o, const char *bench);
/* A figure: key (stable id used by the report's targets), label, unit,
 * and the samples as "rounds": [[...], [...]]. Copies s. */
int bench_out_figure(BenchOut *o, const char *key, const char *label, const char *unit, const Samples *s);
/* A ratio the report computes round by round: median(num)/median(den) of
 * the samples of each round. */
int bench_out_ratio(BenchOut *o, const char *key, const char *label, const char *num, const char *den);
int bench_out_note(BenchOut *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A single number (e.g. how many files were masked). */
int bench_out_value(BenchOut *o, const char *key, double v);
/* Prints the document on stdout and releases it. */
int bench_out_print(BenchOut *o);
