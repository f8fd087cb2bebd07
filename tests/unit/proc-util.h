/* SPDX-License-Identifier: MIT */
#pragma once

/* What a unit test reads of another process in /proc (cmocka asserts). */

#include <dirent.h>
#include <stdio.h>
#include <sys/types.h>

/* The number of descriptors process pid holds. */
static inline int proc_fd_count(pid_t pid) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
        DIR *d = opendir(path);
        assert_non_null(d);
        int n = 0;
        for (struct dirent *de; (de = readdir(d));)
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}
