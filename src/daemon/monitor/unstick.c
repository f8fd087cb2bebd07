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

#define FUSECTL "/sys/fs/fuse/connections"

void unstick_init(Unstick *u, pid_t pid, uint64_t after_ms) {
        *u = (Unstick){ .pid = pid, .after_ms = after_ms };
}

/* One thread's state letter and context switches, from its status file
 * (the kernel escapes a newline in the name the server may set). */
static bool thread_state(int taskfd, const char *tid, char *ret_state, uint64_t *ret_switches) {
        char path[300], buf[4096];
        snprintf(path, sizeof path, "%s/status", tid);
        _cleanup_close_ int fd = openat(taskfd, path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read_full(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return false;
        buf[n] = 0;
        *ret_state = 0;
        *ret_switches = 0;
        for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                unsigned long long v;
                if (strncmp(l, "State:\t", 7) == 0)
                        *ret_state = l[7];
                else if ((sscanf(l, "voluntary_ctxt_switches: %llu", &v) == 1 ||
                          sscanf(l, "nonvoluntary_ctxt_switches: %llu", &v) == 1))
                        *ret_switches += v;
        }
        return *ret_state != 0;
}

/* Whether a thread in interruptible sleep waits for a FUSE server's
 * answer (the kernel waits so first, until a signal: a lookup or read on
 * a FUSE mount shows 'S' there, not 'D'), by where it sleeps. */
static bool in_fuse(int taskfd, const char *tid) {
        char path[300], buf[128];
        snprintf(path, sizeof path, "%s/wchan", tid);
        _cleanup_close_ int fd = openat(taskfd, path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read_full(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return false;
        buf[n] = 0;
        return streq(buf, "request_wait_answer") || strncmp(buf, "fuse_", 5) == 0;
}

/* pid's threads into next (at most UNSTICK_THREADS in all), each held
 * since when the last look (u->t) saw it so. */
static void look_at(const Unstick *u, pid_t pid, uint64_t now, UnstickThread *next, size_t *n) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
        _cleanup_close_ int taskfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = taskfd < 0 ? NULL : fdopendir(fcntl(taskfd, F_DUPFD_CLOEXEC, 3));
        struct dirent *de;
        while (d && *n < UNSTICK_THREADS && (de = readdir(d))) {
                char *end;
                long tid = strtol(de->d_name, &end, 10);
                char state;
                uint64_t sw;
                if (*end || tid <= 0 || !thread_state(taskfd, de->d_name, &state, &sw))
                        continue;
                UnstickThread t = { .tid = (pid_t)tid, .switches = sw };
                t.fuse = (state == 'D' || state == 'S') && in_fuse(taskfd, de->d_name);
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

uint64_t unstick_held_ms(const Unstick *u, uint64_t now) {
        uint64_t held = 0;
        for (size_t i = 0; i < u->n; i++) {
                if (!u->t[i].seen_ms)
                        continue;
                /* Not run since since_ms; or seen held at every look since
                 * seen_ms, twice as long: a FUSE server that answers each
                 * request just before after_ms holds the thread as well. */
                uint64_t still = now - u->t[i].since_ms, seen = now - u->t[i].seen_ms;
                uint64_t h = seen >= 2 * u->after_ms && seen / 2 > still ? seen / 2 : still;
                held = h > held ? h : held;
        }
        return held;
}

typedef struct FuseOwner {
        unsigned major, minor;
        long long uid;
        char mnt[256];
        bool found;
} FuseOwner;

/* The child's whole look at other processes' mount tables ends then: a
 * user can make theirs long (100 000 mounts in a namespace of their own)
 * and have many, to run the child past its deadline; a connection not
 * found by then is taken for a user's. */
static uint64_t scan_deadline;

static int owner_line(char *line, void *userdata) {
        FuseOwner *o = userdata;
        if (now_ms() >= scan_deadline)
                return -ETIMEDOUT;
        if (!mountinfo_fuse_line(line, o->major, o->minor, &o->uid, o->mnt, sizeof o->mnt))
                return 0;
        o->found = true;
        return 1;
}

/* A process's real uid, as this user namespace (init's) sees it; -1. */
static long long proc_uid(long pid) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%ld/status", pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned u;
        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "Uid:\t%u", &u) == 1)
                        return u;
        return -1;
}

static bool same_userns(long pid) {
        char path[64];
        struct stat a, b;
        snprintf(path, sizeof path, "/proc/%ld/ns/user", pid);
        return stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino == b.st_ino &&
               a.st_dev == b.st_dev;
}

/* Who mounted connection dev: this mount namespace's table first (a
 * mount made in the host's user namespace: its user_id is the uid), then
 * any process's: a mount in a user namespace of a user's own shows the
 * uid as that namespace maps it (0 for its root), so there it is the
 * process's own uid. Not found (unmounted, its files still open):
 * unknown, -1. */
static void fuse_owner(unsigned long dev, FuseOwner *o) {
        *o = (FuseOwner){ .major = (unsigned)(dev >> 20), .minor = (unsigned)(dev & 0xfffff), .uid = -1 };
        if (mountinfo_each(owner_line, o) > 0)
                return;
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && !o->found && now_ms() < scan_deadline && (de = readdir(d))) {
                char path[64], *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0 || pid == getpid())
                        continue;
                snprintf(path, sizeof path, "/proc/%ld/mountinfo", pid);
                if (mountinfo_each_of(path, owner_line, o) > 0 && !same_userns(pid))
                        o->uid = proc_uid(pid);
        }
        if (d)
                closedir(d);
        if (!o->found)
                o->uid = -1;
}

/* The connections with requests waiting (fusectl's "waiting"), at most
 * max, into ids. */
static size_t waiting_connections(int dfd, unsigned long *ids, size_t max) {
        int d2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = d2 < 0 ? NULL : fdopendir(d2);
        size_t n = 0;
        struct dirent *de;
        if (d)
                rewinddir(d); /* the offset is dfd's too: the last look left it at the end */
        while (d && n < max && (de = readdir(d))) {
                char *end, path[300], buf[32];
                errno = 0;
                unsigned long id = strtoul(de->d_name, &end, 10);
                if (errno || *end || end == de->d_name)
                        continue;
                snprintf(path, sizeof path, "%s/waiting", de->d_name);
                _cleanup_close_ int w = openat(dfd, path, O_RDONLY | O_CLOEXEC);
                ssize_t k = w < 0 ? -1 : read_full(w, buf, sizeof buf - 1);
                if (k <= 0)
                        continue;
                buf[k] = 0;
                if (strtoul(buf, NULL, 10) > 0)
                        ids[n++] = id;
        }
        if (d)
                closedir(d);
        else if (d2 >= 0)
                close(d2);
        return n;
}

static bool has_id(const unsigned long *ids, size_t n, unsigned long id) {
        for (size_t i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

typedef struct Waiter {
        pid_t pid, tid;
        uint64_t switches;
} Waiter;

/* Every thread of the host waiting for a FUSE server's answer, into w
 * (at most max); false when there were more, or past the deadline. */
static bool fuse_waiters(Waiter *w, size_t max, size_t *n, uint64_t deadline) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        bool whole = d != NULL;
        *n = 0;
        while (d && (de = readdir(d))) {
                char *end, path[64];
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                if (now_ms() >= deadline) {
                        whole = false;
                        break;
                }
                snprintf(path, sizeof path, "/proc/%ld/task", pid);
                _cleanup_close_ int taskfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int t2 = taskfd < 0 ? -1 : fcntl(taskfd, F_DUPFD_CLOEXEC, 3);
                DIR *td = t2 < 0 ? NULL : fdopendir(t2);
                struct dirent *te;
                while (td && (te = readdir(td))) {
                        long tid = strtol(te->d_name, &end, 10);
                        char state;
                        uint64_t sw;
                        if (*end || tid <= 0 || !in_fuse(taskfd, te->d_name) ||
                            !thread_state(taskfd, te->d_name, &state, &sw))
                                continue;
                        if (*n == max) {
                                whole = false;
                                break;
                        }
                        w[(*n)++] = (Waiter){ .pid = (pid_t)pid, .tid = (pid_t)tid, .switches = sw };
                }
                if (td)
                        closedir(td);
                else if (t2 >= 0)
                        close(t2);
        }
        if (d)
                closedir(d);
        return whole;
}

/* Whether waiter w has not run since it was seen, still waiting. */
static bool stalled(const Waiter *w) {
        char path[64], tid[16], state;
        uint64_t sw;
        snprintf(path, sizeof path, "/proc/%d/task", (int)w->pid);
        snprintf(tid, sizeof tid, "%d", (int)w->tid);
        _cleanup_close_ int taskfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return taskfd >= 0 && in_fuse(taskfd, tid) && thread_state(taskfd, tid, &state, &sw) && sw == w->switches;
}

typedef struct MntDev {
        int id;
        unsigned long dev;
} MntDev;

static int mnt_line(char *line, void *userdata) {
        MntDev *m = userdata;
        unsigned major, minor;
        int id;
        if (sscanf(line, "%d %*d %u:%u ", &id, &major, &minor) == 3 && id == m->id) {
                m->dev = ((unsigned long)major << 20) | minor;
                return 1;
        }
        return 0;
}

/* Adds to devs (at most max) the devices of pid's mappings and open
 * files that are among the waiting connections: what its wait may be
 * on (a read into a mapping of a FUSE file, a FUSE file it reads). */
static void devices_of(pid_t pid, const unsigned long *waiting, size_t n_waiting, unsigned long *devs, size_t max,
                       size_t *n) {
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof line, f)) {
                unsigned major, minor;
                /* "7f..-7f.. r--p 00000000 00:2b 2  /path": the device in hex. */
                if (sscanf(line, "%*s %*s %*s %x:%x ", &major, &minor) != 2)
                        continue;
                unsigned long dev = ((unsigned long)major << 20) | minor;
                if (has_id(waiting, n_waiting, dev) && !has_id(devs, *n, dev) && *n < max)
                        devs[(*n)++] = dev;
                if (!strchr(line, '\n')) /* a long line's rest */
                        while (fgets(line, sizeof line, f) && !strchr(line, '\n'))
                                ;
        }
        snprintf(path, sizeof path, "/proc/%d/fdinfo", (int)pid);
        _cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int d2 = dfd < 0 ? -1 : fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = d2 < 0 ? NULL : fdopendir(d2);
        struct dirent *de;
        char mountinfo[64];
        snprintf(mountinfo, sizeof mountinfo, "/proc/%d/mountinfo", (int)pid);
        while (d && (de = readdir(d)) && now_ms() < scan_deadline) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int fi = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC);
                char buf[1024];
                ssize_t k = fi < 0 ? -1 : read_full(fi, buf, sizeof buf - 1);
                if (k <= 0)
                        continue;
                buf[k] = 0;
                const char *m = strstr(buf, "\nmnt_id:\t");
                MntDev md = { .id = m ? atoi(m + 9) : -1 };
                if (md.id < 0 || mountinfo_each_of(mountinfo, mnt_line, &md) <= 0)
                        continue;
                if (has_id(waiting, n_waiting, md.dev) && !has_id(devs, *n, md.dev) && *n < max)
                        devs[(*n)++] = md.dev;
        }
        if (d)
                closedir(d);
        else if (d2 >= 0)
                close(d2);
}

#define CONNECTIONS_MAX 1024
#define WAITERS_MAX 4096

/* The child: the connections to end, those with requests waiting at
 * every look for UNSTICK_PAUSE_MS that root did not mount and that the
 * hold is on. direct (a held thread itself waits for a FUSE answer): any
 * such. Else (a held thread waits for a lock, which another process
 * holds, waiting for a FUSE answer): those used by a thread of the host
 * that waited for a FUSE answer through the pause without running (a
 * holder); were there too many such threads to look at, any. Its exit
 * status: how many it ended. */
static int end_connections(uint64_t held_ms, bool direct) {
        static unsigned long waiting[CONNECTIONS_MAX], still[CONNECTIONS_MAX], used[CONNECTIONS_MAX];
        static Waiter w[WAITERS_MAX];
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s, and the FUSE "
                            "connections cannot be looked at (a mount namespace: %m)",
                            (unsigned long long)(held_ms / 1000));
                return 0;
        }
        /* Over whatever is there (an empty directory where no one mounted
         * it): the one fusectl, in this namespace only. */
        (void)mount("fusectl", FUSECTL, "fusectl", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        _cleanup_close_ int dfd = open(FUSECTL, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s, and %s cannot "
                            "be read: %m",
                            (unsigned long long)(held_ms / 1000), FUSECTL);
                return 0;
        }
        size_t n_waiting = waiting_connections(dfd, waiting, CONNECTIONS_MAX), n_w = 0, n_used = 0;
        bool whole = n_waiting > 0 && !direct && fuse_waiters(w, WAITERS_MAX, &n_w, now_ms() + UNSTICK_SCAN_MS);
        /* Through the pause, looked at every 10 ms: those never without a
         * request waiting (a busy one that is answered has moments with
         * none; the one holding the daemon never). */
        size_t n_still = n_waiting;
        memcpy(still, waiting, n_waiting * sizeof *waiting);
        for (int k = 0; n_still > 0 && k < UNSTICK_PAUSE_MS / 10; k++) {
                static unsigned long now_waiting[CONNECTIONS_MAX];
                (void)usleep(10 * 1000);
                size_t n_now = waiting_connections(dfd, now_waiting, CONNECTIONS_MAX), kept = 0;
                for (size_t i = 0; i < n_still; i++)
                        if (has_id(now_waiting, n_now, still[i]))
                                still[kept++] = still[i];
                n_still = kept;
        }
        scan_deadline = now_ms() + UNSTICK_SCAN_MS;
        for (size_t i = 0; whole && i < n_w; i++)
                if (stalled(&w[i]))
                        devices_of(w[i].pid, still, n_still, used, CONNECTIONS_MAX, &n_used);
        if (!direct && !whole && n_waiting > 0)
                log_warning("monitor: too many threads wait for FUSE answers to tell which connection holds the "
                            "daemon: every one with requests unanswered but root's is ended");
        scan_deadline = now_ms() + UNSTICK_SCAN_MS;
        int ended = 0;
        for (size_t i = 0; i < n_still; i++) {
                unsigned long dev = still[i];
                if (whole && !has_id(used, n_used, dev))
                        continue;
                FuseOwner o;
                fuse_owner(dev, &o);
                if (o.uid == 0)
                        continue; /* root's own: trusted, never ended */
                char path[64];
                snprintf(path, sizeof path, "%lu/abort", dev);
                _cleanup_close_ int a = openat(dfd, path, O_WRONLY | O_CLOEXEC);
                if (a < 0 || write_all(a, "1", 1) < 0) {
                        log_warning("monitor: cannot end FUSE connection %lu: %m", dev);
                        continue;
                }
                char who[32];
                snprintf(who, sizeof who, "%lld", o.uid);
                log_warning("monitor: a thread of the daemon had been held in the kernel for %llu s; ended the FUSE "
                            "file system %s (connection %lu, mounted by uid %s), whose requests went unanswered",
                            (unsigned long long)(held_ms / 1000), o.found ? o.mnt : "(no longer mounted)", dev,
                            o.uid < 0 ? "unknown" : who);
                ended++;
        }
        if (!ended)
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s, and no FUSE "
                            "file system but root's holds it: not mended (a disk that does not answer?)",
                            (unsigned long long)(held_ms / 1000));
        return ended > 100 ? 100 : ended;
}

static void reap(Unstick *u, uint64_t now) {
        int status;
        if (u->child && waitpid(u->child, &status, WNOHANG) == u->child) {
                if (WIFEXITED(status) && WEXITSTATUS(status) <= 100)
                        u->ended += (uint64_t)WEXITSTATUS(status);
                u->child = 0;
        } else if (u->child && now >= u->child_deadline) {
                (void)kill(u->child, SIGKILL);
                if (u->n_left == ELEMENTSOF(u->left))
                        u->n_left--; /* the oldest stays a zombie until the monitor ends */
                memmove(u->left + 1, u->left, u->n_left * sizeof *u->left);
                u->left[0] = u->child;
                u->n_left++;
                u->child = 0;
        }
        for (size_t i = u->n_left; i-- > 0;)
                if (waitpid(u->left[i], NULL, WNOHANG) == u->left[i])
                        u->left[i] = u->left[--u->n_left];
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
        if (held < u->after_ms || u->child || (u->tried_ms && now - u->tried_ms < u->after_ms) || (may_fork && !may_fork()))
                return;
        pid_t pid = spawn_fork(SIGKILL);
        if (pid < 0) {
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s; cannot fork: %s",
                            (unsigned long long)(held / 1000), strerror((int)-pid));
                return;
        }
        bool direct = false;
        for (size_t i = 0; i < u->n; i++)
                direct |= u->t[i].seen_ms && u->t[i].fuse;
        if (pid == 0)
                _exit(end_connections(held, direct));
        u->child = pid;
        u->child_deadline = now + UNSTICK_CHILD_MS;
        u->tried_ms = now;
}

uint64_t unstick_next(const Unstick *u) {
        if (u->pid <= 0)
                return UINT64_MAX;
        /* A child's end is looked for every 100 ms. */
        if (u->child || u->n_left) {
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
