/* SPDX-License-Identifier: MIT */
#include "error.h"

#include <stdarg.h>
#include <string.h>

static VsError oom_error = { .code = -ENOMEM, .kind = (char *)"internal", .message = (char *)"out of memory" };

static bool is_static(const VsError *e) {
        return e == &oom_error;
}

void vs_error_free(VsError *err) {
        if (!err || is_static(err))
                return;
        free(err->kind);
        free(err->message);
        free(err);
}

_printf_(4, 0) static int vset(VsError **err, int code, const char *kind, const char *fmt, va_list ap) {
        if (code >= 0)
                code = -EIO;
        if (!err)
                return code;
        vs_error_free(*err);
        *err = NULL;

        VsError *e = calloc(1, sizeof *e);
        if (!e) {
                *err = &oom_error;
                return code;
        }
        e->code = code;
        if (vasprintf(&e->message, fmt, ap) < 0)
                e->message = NULL;
        if (kind)
                e->kind = strdup(kind);
        if (!e->message || (kind && !e->kind)) {
                vs_error_free(e);
                *err = &oom_error;
                return code;
        }
        *err = e;
        return code;
}

int vs_error_set(VsError **err, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = vset(err, code, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int vs_error_set_kind(VsError **err, int code, const char *kind, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = vset(err, code, kind, fmt, ap);
        va_end(ap);
        return r;
}

int vs_error_prefix(VsError **err, const char *fmt, ...) {
        if (!err || !*err)
                return -EIO;
        if (is_static(*err))
                return (*err)->code;

        char *prefix = NULL, *joined = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&prefix, fmt, ap);
        va_end(ap);
        if (r < 0)
                return (*err)->code;
        if (asprintf(&joined, "%s: %s", prefix, (*err)->message) < 0) {
                free(prefix);
                return (*err)->code;
        }
        free(prefix);
        free((*err)->message);
        (*err)->message = joined;
        return (*err)->code;
}

const char *vs_error_message(const VsError *err) {
        return err && err->message ? err->message : "unknown error";
}

const char *vs_error_kind(const VsError *err) {
        return err && err->kind ? err->kind : "internal";
}
