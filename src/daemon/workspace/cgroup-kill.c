/* SPDX-License-Identifier: MIT */
/* Ending what a cgroup holds, and sweeping an instance's groups: for the
 * daemon (cgroup.c) and for the root monitor once the daemon is gone
 * (monitor-link.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-kill.h"
#include "fd-util.h"
#include "macro.h"
#include "path-util.h"
#include "time-util.h"

/* The monitor's cleanup of a gone daemon's groups, all of it. */
#define INSTANCE_END_MS 300

/* Sends SIGKILL to every process in the group dirfd until it is empty: a
 * jail's processes may fork while we read the list, and a process that
 * left the worker's sight (an inner bwrap reparented away) is still
 * counted here. Gives up after about two seconds (a task stuck in the
 * kernel). */
bool cgroup_kill_at(int dirfd, bool wait) {
        /* cgroup v2 (5.14+) kills the whole group in one step. */
        {
                _cleanup_close_ int k = openat(dirfd, "cgroup.kill", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (k >= 0)
                        (void)!write(k, "1", 1);
        }
        for (int round = 0; round < 200; round++) {
                _cleanup_free_ char *text = NULL;
                size_t len;
                if (read_file_at(dirfd, "cgroup.procs", 4u << 20, &text, &len) < 0)
                        return errno == ENOENT;
                bool any = false;
                for (char *p = text, *end; *p; p = end) {
                        long pid = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        if (pid > 1 && pid != getpid()) {
                                (void)kill((pid_t)pid, SIGKILL);
                                any = true;
                        }
                        while (*end == '\n')
                                end++;
                }
                if (!any)
                        return true;
                if (!wait)
                        return false;
                nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        return false;
}

bool cgroup_kill_path(const char *group, bool wait) {
        _cleanup_close_ int fd = open(group, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? errno == ENOENT : cgroup_kill_at(fd, wait);
}

/* Removes the workspace groups under parent (an instance's group) that an
 * earlier run left, killing what still runs in them when kill is set
 * (waiting until each is empty, about two seconds at most, when wait is
 * set; else one pass). Whether every group went. */
bool cgroup_sweep(const char *parent, bool kill, bool wait) {
        DIR *d = opendir(parent);
        if (!d)
                return errno == ENOENT; /* else (out of descriptors) it is not known to be empty */
        bool all = true;
        struct dirent *de;
        while ((de = readdir(d)))
                /* Workspaces' groups, and the unsandboxed workers' ("host"). */
                if (!strncmp(de->d_name, "ws-", 3) || streq(de->d_name, "host")) {
                        _cleanup_free_ char *p = path_join(parent, de->d_name);
                        if (!p)
                                continue;
                        if (kill)
                                (void)cgroup_kill_path(p, wait);
                        if (rmdir(p) < 0 && errno != ENOENT)
                                all = false;
                }
        closedir(d);
        return all;
}

void cgroup_instance_end(char *const parents[2]) {
        /* Bounded as a whole, not per group: the monitor holds the instance
         * lock meanwhile, and a daemon started again on the same socket
         * waits for it for a second. What a process stuck in the kernel
         * keeps is left to that start's own sweep. */
        uint64_t end = now_ms() + INSTANCE_END_MS;
        for (;;) {
                bool all = true;
                for (int i = 0; i < 2; i++)
                        if (parents[i])
                                all &= cgroup_sweep(parents[i], true, false);
                if (all || now_ms() >= end)
                        break;
                nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        for (int i = 0; i < 2; i++)
                if (parents[i])
                        (void)rmdir(parents[i]);
}

