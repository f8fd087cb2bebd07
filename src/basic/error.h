/* SPDX-License-Identifier: MIT */
#pragma once

/* The error object passed last to functions that can fail.
 *
 * Convention: a function returns a negative errno and, only then, sets
 * *err (if err is non-NULL) to a human-readable reason. Each layer on the way
 * up may add context with vs_error_prefix(), giving messages like
 * "vectora.toml:12:5: sandbox.mask[2]: unterminated '['".
 *
 * The caller owns *err and frees it with vs_error_free() (or
 * _cleanup_(vs_error_freep)). Library code never logs; programs print
 * vs_error_message() once, where they decide. */

#include "macro.h"

typedef struct VsError {
        int code;       /* negative errno */
        char *kind;     /* optional machine-readable code, e.g. "config_invalid" */
        char *message;
} VsError;

/* Sets *err (freeing a previous one) and returns code (a negative errno).
 * On allocation failure *err is set to a static out-of-memory error. */
int vs_error_set(VsError **err, int code, const char *fmt, ...) _printf_(3, 4);
/* As vs_error_set, with a machine-readable kind (copied). */
int vs_error_set_kind(VsError **err, int code, const char *kind, const char *fmt, ...)
        _printf_(4, 5);
/* Prepends "PREFIX: " to the message of *err; returns (*err)->code, or
 * -EIO if *err is NULL. No-op when err is NULL. */
int vs_error_prefix(VsError **err, const char *fmt, ...) _printf_(2, 3);

const char *vs_error_message(const VsError *err);
const char *vs_error_kind(const VsError *err);
void vs_error_free(VsError *err);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsError *, vs_error_free);
