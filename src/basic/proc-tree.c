/* SPDX-License-Identifier: MIT */
#include "proc-tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"

/* The children of every thread of pid (/proc/PID/task/TID/children), each
 * appended to *queue. The kernel lists a child under the thread that made it. */
static int children_of(pid_t pid, pid_t **queue, size_t *n, size_t *cap, size_t *threads) {
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno; /* gone meanwhile: no children */
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                (*threads)++;
                char path[64 + sizeof de->d_name + 16];
                snprintf(path, sizeof path, "%s/%s/children", dir, de->d_name);
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                if (!f)
                        continue; /* the thread ended meanwhile */
                long child;
                while (fscanf(f, "%ld", &child) == 1) {
                        if (*n == *cap) {
                                size_t nc = *cap ? *cap * 2 : 16;
                                pid_t *q = reallocarray(*queue, nc, sizeof *q);
                                if (!q)
                                        return -ENOMEM;
                                *queue = q;
                                *cap = nc;
                        }
                        (*queue)[(*n)++] = (pid_t)child;
                }
        }
        return 0;
}

static int pid_cmp(const void *a, const void *b) {
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

int proc_tree_pids(pid_t root, pid_t **ret, size_t *ret_threads) {
        *ret = NULL;
        size_t threads = 0;
        if (root <= 0 || kill(root, 0) < 0)
                return -ESRCH;
        _cleanup_free_ pid_t *queue = malloc(16 * sizeof *queue);
        if (!queue)
                return -ENOMEM;
        size_t n = 1, cap = 16;
        queue[0] = root;
        for (size_t i = 0; i < n; i++) {
                if (n > 1u << 20)
                        return -E2BIG;
                int r = children_of(queue[i], &queue, &n, &cap, &threads);
                if (r < 0)
                        return r;
        }
        qsort(queue, n, sizeof *queue, pid_cmp);
        *ret = TAKE_PTR(queue);
        if (ret_threads)
                *ret_threads = threads;
        return (int)n;
}

bool procs_any_active(const pid_t *pids, size_t n) {
        for (size_t i = 0; i < n; i++) {
                char path[64], text[512];
                snprintf(path, sizeof path, "/proc/%d/stat", (int)pids[i]);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        continue;
                ssize_t k = read(fd, text, sizeof text - 1);
                if (k <= 0)
                        continue;
                text[k] = 0;
                /* The state follows the command's closing parenthesis
                 * (the command may hold one itself: the last counts). */
                const char *at = strrchr(text, ')');
                if (at && at[1] == ' ' && (at[2] == 'R' || at[2] == 'D'))
                        return true;
        }
        return false;
}
