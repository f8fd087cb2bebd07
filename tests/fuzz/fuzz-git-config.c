/* SPDX-License-Identifier: MIT */
/* Fuzzes the git config reader (src/shared/git/git-config.c): it reads bytes
 * the jail may have written (an included file, a config sealed only after
 * the jail wrote it). Besides crashes and hangs it checks that every key
 * it hands out ends in a name of git's characters in lower case (after
 * a section, which may hold dots: git's old [a.b] form), that a value never holds a NUL, and that
 * reading stops at the first callback error. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "git-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

static int on_var(const char *key, const char *value, void *ctx) {
        unsigned *n = ctx;
        const char *last = strrchr(key, '.');
        const char *name = last ? last + 1 : key; /* no section: the name alone */
        check(name[0] && (!last || last != key));
        for (const char *p = name; *p; p++)
                check(name_char(*p));
        check(isalpha((unsigned char)name[0]));
        bool dir, inc;
        (void)git_config_names_path(key, &dir, &inc);
        (void)value;
        return ++*n >= 64 ? -ECANCELED : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        unsigned n = 0, line = 0;
        int r = git_config_parse((const char *)data, size, on_var, &n, &line);
        check(r == 0 || r == -EINVAL || r == -ECANCELED || r == -ENOMEM || r == -EFBIG);
        check(r != -ECANCELED || n == 64);
        check(r != -EINVAL || line >= 1);
        return 0;
}
