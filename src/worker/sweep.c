/* SPDX-License-Identifier: MIT */
/* Stale temp files of killed writes. write_file writes to
 * ".vectora-tmp-XXXXXX" beside its target and renames it into place; a
 * worker killed in between (crash, recycle, daemon SIGKILL) leaves the temp
 * file behind. Each write holds an exclusive flock on its temp file, which
 * the kernel drops when the writer dies: so a temp file this uid owns,
 * whose lock can be taken, and that is not brand new, belongs to no live
 * write (of this worker, another worker or another daemon) and goes.
 *
 * Run as the worker starts, once it is first idle a moment after ready
 * (so also after a crash: the next worker starts; the first call does not
 * wait for the walk), and once more when that left files too new to judge (a
 * write killed just before: the soak's end found them until some later
 * worker), inside the jail with its rules in force, over the writable
 * roots (the workspace alone in direct mode), bounded in entries and depth
 * so a huge tree cannot delay the worker. Never follows symlinks, never
 * enters a masked directory or another filesystem. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "path-util.h"
#include "time-util.h"
#include "worker.h"

#define SWEEP_MAX_ENTRIES 100000
#define SWEEP_MAX_DEPTH 32

bool sweep_is_temp_name(const char *name) {
        static const char prefix[] = ".vectora-tmp-";
        if (strncmp(name, prefix, sizeof prefix - 1) != 0)
                return false;
        const char *s = name + sizeof prefix - 1;
        size_t n = 0;
        for (; s[n]; n++)
                if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9')))
                        return false;
        return n == 6;
}

typedef struct Sweep {
        const Policy *policy;
        size_t entries;
        size_t removed;
        size_t young;
        time_t newest_young; /* the newest of them (st_mtime) */
        time_t now;
} Sweep;

static void sweep_temp(Sweep *s, int dfd, const char *name, const struct stat *st) {
        if (!S_ISREG(st->st_mode) || st->st_uid != geteuid())
                return;
        /* SWEEP_MIN_AGE_S: between a write's create and its flock. */
        if (st->st_mtime > s->now - SWEEP_MIN_AGE_S) {
                s->young++;
                if (st->st_mtime > s->newest_young)
                        s->newest_young = st->st_mtime;
                return;
        }
        int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return;
        struct stat fst;
        /* Still the file we looked at, and no writer holds it. */
        if (fstat(fd, &fst) == 0 && fst.st_ino == st->st_ino && fst.st_dev == st->st_dev &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 && unlinkat(dfd, name, 0) == 0)
                s->removed++;
        safe_close(fd);
}

static void sweep_dir(Sweep *s, int fd0, const char *path, dev_t dev, unsigned depth) {
        DIR *d = fdopendir(fd0);
        if (!d) {
                safe_close(fd0);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)) && s->entries < SWEEP_MAX_ENTRIES) {
                s->entries++;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                bool temp = sweep_is_temp_name(de->d_name);
                if (!temp && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (temp) {
                        sweep_temp(s, dirfd(d), de->d_name, &st);
                        continue;
                }
                if (!S_ISDIR(st.st_mode) || st.st_dev != dev || depth >= SWEEP_MAX_DEPTH)
                        continue;
                _cleanup_free_ char *sub = path_join(path, de->d_name);
                if (!sub || policy_is_masked(s->policy, sub, true))
                        continue;
                int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0)
                        sweep_dir(s, fd, sub, dev, depth + 1);
        }
        closedir(d);
}

size_t sweep_temp_files(const Policy *p, size_t *young, time_t *newest_young) {
        Sweep s = { .policy = p, .now = now_wall().tv_sec };
        char *direct[] = { p->workspace, NULL };
        char **roots = p->mode == PROTOCOL_MODE_DIRECT ? direct : p->rw;
        for (char **r = roots; r && *r; r++) {
                int fd = open(*r, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0)
                        continue;
                if (fstat(fd, &st) < 0) {
                        safe_close(fd);
                        continue;
                }
                sweep_dir(&s, fd, *r, st.st_dev, 0);
        }
        if (young)
                *young = s.young;
        if (newest_young)
                *newest_young = s.newest_young;
        return s.removed;
}
