/* SPDX-License-Identifier: MIT */
/* Fuzzes the /proc/self/mountinfo line parser the root monitor uses to
 * tell a FUSE mount (mount-util.c). The kernel writes the lines, but a
 * mount point's path and a FUSE source are a user's text (escaped by the
 * kernel): besides crashes it checks that a parsed type is non-empty,
 * NUL-terminated within the buffer, free of spaces, and that a line whose
 * type was parsed parses the same again; and that undoing a line's
 * escapes never makes it longer. */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "mount-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 8192)
                return 0;
        /* The first byte picks the buffer's size (a type longer is refused). */
        size_t n = data[0] % 70;
        char *line = malloc(size);
        if (!line)
                return 0;
        memcpy(line, data + 1, size - 1);
        line[size - 1] = 0;
        char type[70];
        memset(type, 'x', sizeof type);
        int id = -1;
        if (mountinfo_line_parse(line, &id, type, n)) {
                size_t len = strnlen(type, n);
                check(len > 0 && len < n && id >= 0);
                check(!strchr(type, ' ') && !strchr(type, '\n'));
                char again[70];
                int id2 = -1;
                check(mountinfo_line_parse(line, &id2, again, n) && id2 == id && strcmp(again, type) == 0);
                (void)fstype_is_user_served(type);
        }
        /* A FUSE mount's line (the monitor's watch, unstick-child.c): a
         * match has a uid that fits, a device the line names, and a mount
         * point NUL-terminated within n, with no space. */
        long long uid = -2;
        char mnt[70];
        memset(mnt, 'x', sizeof mnt);
        unsigned major = 0, minor = 0;
        if (mountinfo_fuse_line(line, &major, &minor, &uid, mnt, n)) {
                check(uid >= -1 && uid <= 0xffffffffLL);
                check(n == 0 || (strnlen(mnt, n) < n && !strchr(mnt, ' ')));
                char dev[32];
                snprintf(dev, sizeof dev, " %u:%u ", major, minor);
                check(strstr(line, dev) != NULL);
        }
        /* The octal escapes undone in place: never longer, never past
         * its end. */
        size_t before = strlen(line);
        mountinfo_unescape(line);
        check(strlen(line) <= before);
        free(line);
        return 0;
}
