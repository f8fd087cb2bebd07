/* SPDX-License-Identifier: MIT */
#pragma once

/* NULL-terminated string vectors. A strv owns its strings. */

#include "macro.h"

size_t strv_length(char *const *l);
void strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)
/* Appends a copy of s; *l may be NULL. */
int strv_extend(char ***l, const char *s);
/* Appends s, taking ownership (freed on failure). */
int strv_consume(char ***l, char *s);
int strv_extendf(char ***l, const char *fmt, ...) _printf_(2, 3);
bool strv_contains(char *const *l, const char *s);
/* The strings of a that b lacks, copied, in a's order (an empty list, not
 * NULL, when there are none). Sorted and searched, for long lists:
 * strv_contains per string is quadratic. */
int strv_difference(char *const *a, char *const *b, char ***ret);
/* Same strings in the same order (NULL equals an empty list). */
bool strv_equal(char *const *a, char *const *b);
char **strv_copy(char *const *l);
/* Joins with sep; returns NULL on OOM. */
char *strv_join(char *const *l, const char *sep);
/* An environment list ("K=V" entries): the value of k, borrowed, or NULL. */
const char *strv_env_get(char *const *env, const char *k);
/* setenv(k, v, 1) on an environment list: the entry named k replaced where
 * it stands, or "k=v" appended. */
int strv_env_set(char ***env, const char *k, const char *v);
