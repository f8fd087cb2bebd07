/* SPDX-License-Identifier: MIT */
#pragma once

/* A maker (host-make.h) for unit tests that makes what it is asked below
 * its userdata (the workspace's path), as the monitor would (parents, a
 * directory, or a file holding its text), one at a time or in a batch; the batch may
 * fail at an item (batch_fail_at), having made those before it. Counts:
 * made_one (make() calls), batches, batch_items. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-make.h"

static int made_one, batches, batch_items, batch_fail_at = -1;
static int disk_make(void *userdata, const char *rel, unsigned flags, VsHostText text, VsError **err) {
        (void)err;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", (const char *)userdata, rel);
        for (char *c = strchr(p + strlen((const char *)userdata) + 1, '/'); c && (flags & VS_HOST_MAKE_PARENTS);
             c = strchr(c + 1, '/')) {
                *c = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *c = '/';
        }
        made_one++;
        if (flags & VS_HOST_MAKE_DIR)
                return mkdir(p, 0755) == 0 ? 1 : errno == EEXIST ? 0 : -errno;
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
                return errno == EEXIST ? 0 : -errno;
        size_t len = strlen(vs_host_texts[text]);
        ssize_t k = write(fd, vs_host_texts[text], len);
        close(fd);
        return k == (ssize_t)len ? 1 : -EIO;
}
static int disk_make_many(void *userdata, const VsHostItem *items, size_t n, VsError **err) {
        batches++;
        batch_items += (int)n;
        int count = 0;
        for (size_t i = 0; i < n; i++) {
                if ((int)i == batch_fail_at)
                        return -ETIMEDOUT;
                int r = disk_make(userdata, items[i].rel, items[i].flags, items[i].text, err);
                made_one--; /* counted as the batch's */
                if (r < 0)
                        return r;
                count += r;
        }
        return count;
}

