/* SPDX-License-Identifier: MIT */
/* Fuzzes the root monitor's check of a jail's argv (jail-argv.c): the
 * server's bytes, split at NULs as the monitor splits its memfd. Besides
 * crashes it checks that an argv the check passes is what the check
 * promises: the monitor's bwrap first, the worker alone after "--", the
 * settings that make a jail and the worker's bind among the options. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend-local.h"
#include "jail-argv.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

static bool has(char *const *argv, size_t end, const char *a, const char *b) {
        for (size_t i = 1; i < end; i++)
                if (streq(argv[i], a) && (!b || (i + 1 < end && streq(argv[i + 1], b))))
                        return true;
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 16384)
                return 0;
        char *buf = malloc(size + 1);
        char **argv = calloc(size + 2, sizeof *argv);
        if (!buf || !argv) {
                free(buf);
                free(argv);
                return 0;
        }
        memcpy(buf, data, size);
        buf[size] = 0;
        size_t argc = 0;
        for (size_t i = 0; i <= size; i += strlen(buf + i) + 1)
                argv[argc++] = buf + i;
        argv[argc] = NULL;
        static const JailArgvRules rules = { .bwrap = "/usr/bin/bwrap",
                                             .worker = "/usr/libexec/vectora-worker",
                                             .homes = "/var/lib/vectora-sandbox/homes",
                                             .uid = 1000,
                                             .gid = 1000 };
        char why[256];
        if (jail_argv_check(argv, &rules, why, sizeof why) == 0) {
                check(argc >= 3 && streq(argv[0], rules.bwrap));
                check(streq(argv[argc - 2], "--") && streq(argv[argc - 1], VS_JAIL_WORKER_PATH));
                size_t end = argc - 2;
                check(has(argv, end, "--disable-userns", NULL) && has(argv, end, "--cap-drop", "ALL") &&
                      has(argv, end, "--uid", "1000") && has(argv, end, "--gid", "1000"));
                check(has(argv, end, "--ro-bind", rules.worker));
        } else
                check(strnlen(why, sizeof why) < sizeof why && why[0]);
        free(argv);
        free(buf);
        return 0;
}
