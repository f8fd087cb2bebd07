/* SPDX-License-Identifier: MIT */
#pragma once

/* Fitting output into one reply line (reply-fit.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Bytes a reply line has for its output strings, given the client's id. */
size_t reply_budget(json_t *id);
/* Whether p[0..n) goes out as text (valid UTF-8 fitting budget escaped)
 * rather than base64. */
bool reply_bytes_as_text(const char *p, size_t n, size_t budget);
/* What p[0..n) takes in the line, as text or base64 (as above). */
size_t reply_bytes_cost(const char *p, size_t n, size_t budget);
/* Cuts captured output (p[0..n) kept of total produced, maybe already cut
 * by the worker) to a head and a tail with the marker so that it costs at
 * most budget; *ret_owned is the new buffer (NULL when nothing was cut),
 * the caller frees it. */
int reply_fit_output(const char *p, size_t n, uint64_t total, size_t budget, const char **ret_p, size_t *ret_n,
                     char **ret_owned);
/* Shares budget between two strings costing a and b: each keeps what it
 * needs when the other leaves room, else half. */
void reply_split_budget(size_t budget, size_t cost_a, size_t cost_b, size_t *ret_a, size_t *ret_b);
