/* SPDX-License-Identifier: MIT */
#pragma once

/* Leaf macros: cleanup attributes, ownership transfer, small helpers.
 * Pattern: a local declared _cleanup_free_ is freed on scope exit unless its
 * ownership is handed out with TAKE_PTR(). */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _pure_ __attribute__((pure))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand out ownership of a pointer: returns it and clears the local. */
#define TAKE_PTR(p)                                                            \
        ({                                                                     \
                __typeof__(p) _tp = (p);                                       \
                (p) = NULL;                                                    \
                _tp;                                                           \
        })

/* Same for a file descriptor: returns it and sets the local to -EBADF. */
#define TAKE_FD(fd)                                                            \
        ({                                                                     \
                int _tf = (fd);                                                \
                (fd) = -EBADF;                                                 \
                _tf;                                                           \
        })

static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* Close fd if valid, keeping errno; returns -EBADF so callers can write
 * fd = safe_close(fd). */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Define TYPE##_freep-style cleanup for a destructor that accepts NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                \
        static inline void func##p(type *p) {                                  \
                if (*p)                                                        \
                        func(*p);                                              \
        }

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        while (*a && *a == *b)
                a++, b++;
        return *a == *b;
}
#define streq(a, b) (__builtin_strcmp((a), (b)) == 0)

/* Return a negative errno from the current errno, never 0. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
