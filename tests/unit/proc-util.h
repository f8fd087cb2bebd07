/* SPDX-License-Identifier: MIT */
#pragma once

/* What a unit test reads of another process in /proc (cmocka asserts). */

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

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

/* Whether process pid's writable memory (its heap, stacks, data) holds
 * needle anywhere: read through /proc/PID/mem (root, or its own user). */
static inline bool proc_mem_holds(pid_t pid, const char *needle) {
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
        FILE *maps = fopen(path, "re");
        assert_non_null(maps);
        snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
        int mem = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(mem >= 0);
        size_t n = strlen(needle);
        bool found = false;
        while (!found && fgets(line, sizeof line, maps)) {
                unsigned long lo, hi;
                char perms[8];
                if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' || perms[1] != 'w' ||
                    hi - lo > (256ul << 20))
                        continue;
                char *buf = malloc(hi - lo);
                assert_non_null(buf);
                ssize_t k = pread(mem, buf, hi - lo, (off_t)lo);
                found = k > 0 && memmem(buf, (size_t)k, needle, n) != NULL;
                free(buf);
        }
        close(mem);
        fclose(maps);
        return found;
}
