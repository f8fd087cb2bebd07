/* SPDX-License-Identifier: MIT */
#include "unstick.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "mount-util.h"
#include "spawn-util.h"
#include "time-util.h"

void unstick_init(Unstick *u, pid_t pid, uint64_t after_ms) {
        *u = (Unstick){ .pid = pid, .after_ms = after_ms };
}

/* pid's threads into next (at most UNSTICK_THREADS in all), each held
 * since when the last look (u->t) saw it so. */
static void look_at(const Unstick *u, pid_t pid, uint64_t now, UnstickThread *next, size_t *n) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
        _cleanup_close_ int taskfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = unstick_opendir_dup(taskfd);
        struct dirent *de;
        while (d && *n < UNSTICK_THREADS && (de = readdir(d))) {
                char *end;
                long tid = strtol(de->d_name, &end, 10);
                char state;
                uint64_t sw;
                if (*end || tid <= 0 || !unstick_thread_state(taskfd, de->d_name, &state, &sw))
                        continue;
                UnstickThread t = { .tid = (pid_t)tid, .switches = sw };
                t.fuse = (state == 'D' || state == 'S') && unstick_in_fuse(taskfd, de->d_name);
                if (state == 'D' || t.fuse) {
                        t.since_ms = t.seen_ms = now;
                        for (size_t i = 0; i < u->n; i++) {
                                if (u->t[i].tid != t.tid || !u->t[i].seen_ms)
                                        continue;
                                t.seen_ms = u->t[i].seen_ms;
                                if (u->t[i].switches == sw)
                                        t.since_ms = u->t[i].since_ms;
                        }
                }
                next[(*n)++] = t;
        }
        if (d)
                closedir(d);
}

static void look(Unstick *u, const pid_t *also, size_t n_also, uint64_t now) {
        UnstickThread next[UNSTICK_THREADS];
        size_t n = 0;
        look_at(u, u->pid, now, next, &n);
        for (size_t i = 0; i < n_also; i++)
                look_at(u, also[i], now, next, &n);
        memcpy(u->t, next, n * sizeof *next);
        u->n = n;
}

/* How long thread t has been held: not run since since_ms; or seen held
 * at every look since seen_ms, twice as long (a FUSE server that answers
 * each request just before after_ms holds the thread as well). */
static uint64_t held_for(const Unstick *u, const UnstickThread *t, uint64_t now) {
        if (!t->seen_ms)
                return 0;
        uint64_t still = now - t->since_ms, seen = now - t->seen_ms;
        return seen >= 2 * u->after_ms && seen / 2 > still ? seen / 2 : still;
}

uint64_t unstick_held_ms(const Unstick *u, uint64_t now) {
        uint64_t held = 0;
        for (size_t i = 0; i < u->n; i++) {
                uint64_t h = held_for(u, &u->t[i], now);
                held = h > held ? h : held;
        }
        return held;
}

static void reap(Unstick *u, uint64_t now) {
        int status;
        if (u->child && waitpid(u->child, &status, WNOHANG) == u->child) {
                if (WIFEXITED(status) && WEXITSTATUS(status) <= 100)
                        u->ended += (uint64_t)WEXITSTATUS(status);
                u->child = 0;
        } else if (u->child && now >= u->child_deadline) {
                log_warning("monitor: the watch's child %d did not finish in %d s; killed (the next looks wider)",
                            (int)u->child, UNSTICK_CHILD_MS / 1000);
                (void)kill(u->child, SIGKILL);
                if (u->n_left == ELEMENTSOF(u->left))
                        u->n_left--; /* the oldest stays a zombie until the monitor ends */
                memmove(u->left + 1, u->left, u->n_left * sizeof *u->left);
                u->left[0] = u->child;
                u->n_left++;
                u->child = 0;
        }
        for (size_t i = u->n_left; i-- > 0;)
                if (waitpid(u->left[i], NULL, WNOHANG) == u->left[i]) {
                        memmove(u->left + i, u->left + i + 1, (u->n_left - i - 1) * sizeof *u->left);
                        u->n_left--; /* newest first still */
                }
}

void unstick_step(Unstick *u, uint64_t now, const pid_t *also, size_t n_also, bool (*may_fork)(void)) {
        if (u->pid <= 0)
                return;
        reap(u, now);
        if (now < u->next_ms)
                return;
        u->next_ms = now + UNSTICK_TICK_MS;
        look(u, also, n_also, now);
        uint64_t held = unstick_held_ms(u, now);
        if (held < u->after_ms)
                u->level = 0; /* no hold (any more): the next starts narrow */
        if (held < u->after_ms || u->child || (u->tried_ms && now - u->tried_ms < u->after_ms) || (may_fork && !may_fork()))
                return;
        /* Direct: a thread held that long waits for a FUSE answer itself
         * (else for a lock, which a holder keeps). */
        bool direct = false;
        for (size_t i = 0; i < u->n; i++)
                direct |= u->t[i].fuse && held_for(u, &u->t[i], now) >= u->after_ms;
        pid_t pid = spawn_fork(SIGKILL);
        if (pid < 0) {
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s; cannot fork: %s",
                            (unsigned long long)(held / 1000), strerror((int)-pid));
                return;
        }
        if (pid == 0)
                _exit(unstick_end_connections(held, direct, u->level));
        u->level++;
        u->child = pid;
        u->child_deadline = now + UNSTICK_CHILD_MS;
        u->tried_ms = now;
}

uint64_t unstick_next(const Unstick *u) {
        if (u->pid <= 0)
                return UINT64_MAX;
        /* A child's end is looked for every 100 ms (those killed and held
         * at each look only). */
        if (u->child) {
                uint64_t soon = now_ms() + 100;
                return soon < u->next_ms ? soon : u->next_ms;
        }
        return u->next_ms;
}

void unstick_done(Unstick *u) {
        if (u->child) {
                (void)kill(u->child, SIGKILL); /* not waited for: it may be held too */
                (void)waitpid(u->child, NULL, WNOHANG);
                u->child = 0;
        }
}
