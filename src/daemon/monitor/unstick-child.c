/* SPDX-License-Identifier: MIT */
/* The watch's child (unstick.h): which FUSE connections hold the daemon,
 * and their end. It runs in a mount namespace of its own (fusectl
 * mounted there only) and its cost is bounded whatever users do: a user
 * can make tens of thousands of connections whose requests are never
 * answered (a mount in a user namespace whose INIT is never read), long
 * mount tables, many threads waiting for FUSE answers (attack review 9
 * ran an earlier child past its deadline with 30 000 such decoys, one
 * owner look of 90 us each). So: every mount table is read once, into a
 * sorted map of FUSE devices to who mounted them (root's own table with
 * no deadline, other processes' within UNSTICK_SCAN_MS, each mount
 * namespace once); the connections the hold is on are found from the
 * holder's side where they can be (a few, sampled closely); the end of a
 * long list is one write each; the log names UNSTICK_LOG_MAX and counts
 * the rest. */
#include "unstick.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "mount-util.h"
#include "time-util.h"

#define FUSECTL "/sys/fs/fuse/connections"
#define OWNED_MAX (1u << 18)  /* FUSE mounts remembered (a user's decoys past it: unknown, a user's) */
#define NS_MAX (1u << 16)     /* mount namespaces read */
#define WAITERS_MAX 65536     /* threads waiting for FUSE answers looked at */
#define CANDIDATES_MAX 64     /* connections looked at every 10 ms (more: as often as a look at all allows) */
#define UNSTICK_LOG_MAX 8     /* users whose ended connections the log names */

typedef struct Owned {
        unsigned long dev;
        long long uid; /* -1: not said */
        uint32_t seq;  /* the order found (the monitor's own table first) */
        char mnt[64];
} Owned;

/* A small kernel file below dirfd into buf (n - 1 bytes at most),
 * NUL-terminated: its length, or 0 (none, empty, unreadable). */
static size_t read_small_at(int dirfd, const char *name, char *buf, size_t n) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        ssize_t k = fd < 0 ? -1 : read_full(fd, buf, n - 1);
        buf[k > 0 ? k : 0] = 0;
        return k > 0 ? (size_t)k : 0;
}

/* One thread's state letter and context switches, from its status file
 * (the kernel escapes a newline in the name the server may set). */
bool unstick_thread_state(int taskfd, const char *tid, char *ret_state, uint64_t *ret_switches) {
        char path[300], buf[4096];
        snprintf(path, sizeof path, "%s/status", tid);
        if (!read_small_at(taskfd, path, buf, sizeof buf))
                return false;
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
bool unstick_in_fuse(int taskfd, const char *tid) {
        char path[300], buf[128];
        snprintf(path, sizeof path, "%s/wchan", tid);
        if (!read_small_at(taskfd, path, buf, sizeof buf))
                return false;
        return streq(buf, "request_wait_answer") || strncmp(buf, "fuse_", 5) == 0;
}

DIR *unstick_opendir_dup(int fd) {
        int d2 = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = d2 < 0 ? NULL : fdopendir(d2);
        if (!d && d2 >= 0)
                close(d2);
        if (d)
                rewinddir(d); /* the offset is fd's too: a last look may have left it at the end */
        return d;
}

/* The kernel's dev_t of major:minor (what fusectl names a connection by). */
static unsigned long kdev(unsigned major, unsigned minor) {
        return ((unsigned long)major << 20) | minor;
}

uint64_t unstick_scan_ms = UNSTICK_SCAN_MS;

static Owned *owned;
static size_t n_owned;
static uint64_t deadline;

typedef struct TableCtx {
        long long uid; /* -2: the line's user_id; else this (a user namespace's process's uid) */
        bool timed;    /* stop at the deadline */
} TableCtx;

static int table_line(char *line, void *userdata) {
        const TableCtx *c = userdata;
        if (c->timed && now_ms() >= deadline)
                return -ETIMEDOUT;
        unsigned major, minor;
        long long uid;
        char mnt[64];
        if (!mountinfo_fuse_line(line, &major, &minor, &uid, mnt, sizeof mnt))
                return 0;
        if (n_owned == OWNED_MAX)
                return -E2BIG;
        Owned *o = &owned[n_owned];
        *o = (Owned){ .dev = kdev(major, minor), .uid = c->uid == -2 ? uid : c->uid,
                      .seq = (uint32_t)n_owned };
        memcpy(o->mnt, mnt, sizeof mnt);
        n_owned++;
        return 0;
}

static int by_dev(const void *a, const void *b) {
        const Owned *x = a, *y = b;
        return x->dev != y->dev ? (x->dev < y->dev ? -1 : 1) : (x->seq < y->seq ? -1 : x->seq > y->seq);
}

static long long status_uid(int pidfd) {
        char buf[4096];
        if (!read_small_at(pidfd, "status", buf, sizeof buf))
                return -1;
        const char *u = strstr(buf, "\nUid:\t");
        return u ? atoll(u + 6) : -1;
}

/* Whether ino is in set (NS_MAX slots), adding it if not; a full set
 * (a user's 65 536 namespaces) reads as seen: no more are read. */
static bool seen_ns(uint64_t *set, uint64_t ino) {
        static size_t used;
        if (used >= NS_MAX / 2)
                return true;
        for (size_t h = (size_t)(ino * 0x9e3779b97f4a7c15ULL) & (NS_MAX - 1);; h = (h + 1) & (NS_MAX - 1)) {
                if (set[h] == ino)
                        return true;
                if (!set[h]) {
                        set[h] = ino;
                        used++;
                        return false;
                }
        }
}

/* Who mounted each FUSE file system any process sees. The monitor's own
 * table (the host's: what root and fusermount mounted, user_id the uid)
 * in whole; then every other mount namespace once, root's processes'
 * first (their tables are root's own; a user's long ones cannot push
 * them past the deadline), a mount there that a process in a user
 * namespace of its own sees taken for that process's uid (its user_id
 * is the namespace's own 0). Each process is read through its /proc
 * directory, opened once: one that ended meanwhile reads as nothing, not
 * as its pid's next owner (attack review 9). */
static bool owners_read(void) {
        owned = calloc(OWNED_MAX, sizeof *owned);
        uint64_t *ns = calloc(NS_MAX, sizeof *ns);
        if (!owned || !ns) {
                free(ns);
                return false; /* without it, root's could not be told */
        }
        struct stat me_user, me_mnt;
        TableCtx own = { .uid = -2 };
        if (stat("/proc/self/ns/user", &me_user) < 0 || stat("/proc/self/ns/mnt", &me_mnt) < 0) {
                free(ns);
                return false;
        }
        (void)seen_ns(ns, (uint64_t)me_mnt.st_ino);
        int r = mountinfo_each(table_line, &own);
        if (r < 0 && r != -E2BIG) {
                free(ns);
                return false; /* root's own table unread: root's could not be told */
        }
        deadline = now_ms() + unstick_scan_ms;
        for (int pass = 0; pass < 2 && now_ms() < deadline; pass++) {
                DIR *d = opendir("/proc");
                struct dirent *de;
                while (d && (de = readdir(d)) && now_ms() < deadline && n_owned < OWNED_MAX) {
                        char *end;
                        long pid = strtol(de->d_name, &end, 10);
                        if (*end || pid <= 0)
                                continue;
                        _cleanup_close_ int pfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        long long uid = pfd < 0 ? -1 : status_uid(pfd);
                        struct stat u, m;
                        if (uid < 0 || (pass == 0) != (uid == 0) || fstatat(pfd, "ns/user", &u, 0) < 0 ||
                            fstatat(pfd, "ns/mnt", &m, 0) < 0 || seen_ns(ns, (uint64_t)m.st_ino))
                                continue;
                        TableCtx c = { .uid = u.st_ino == me_user.st_ino && u.st_dev == me_user.st_dev ? -2 : uid,
                                       .timed = true };
                        (void)mountinfo_each_at(pfd, "mountinfo", table_line, &c);
                }
                if (d)
                        closedir(d);
        }
        free(ns);
        if (n_owned)
                qsort(owned, n_owned, sizeof *owned, by_dev);
        return true;
}

/* The first (the monitor's own table's, else the first found) of dev. */
static const Owned *owner_of(unsigned long dev) {
        size_t lo = 0, hi = n_owned;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (owned[mid].dev < dev)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n_owned && owned[lo].dev == dev ? &owned[lo] : NULL;
}

static bool conn_waiting(int dfd, unsigned long id) {
        char path[64], buf[32];
        snprintf(path, sizeof path, "%lu/waiting", id);
        return read_small_at(dfd, path, buf, sizeof buf) && strtoul(buf, NULL, 10) > 0;
}

typedef struct Waiter {
        pid_t pid, tid;
        uint64_t switches;
} Waiter;

/* Every thread of the host waiting for a FUSE server's answer, into w;
 * false when there were more than WAITERS_MAX or past the deadline. */
static bool fuse_waiters(Waiter *w, size_t *n) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        bool whole = d != NULL;
        *n = 0;
        while (whole && (de = readdir(d))) {
                char *end, path[64];
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                if (now_ms() >= deadline) {
                        whole = false;
                        break;
                }
                snprintf(path, sizeof path, "%ld/task", pid);
                _cleanup_close_ int taskfd = openat(dirfd(d), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                DIR *td = unstick_opendir_dup(taskfd);
                struct dirent *te;
                while (td && (te = readdir(td))) {
                        long tid = strtol(te->d_name, &end, 10);
                        char state;
                        uint64_t sw;
                        if (*end || tid <= 0 || !unstick_in_fuse(taskfd, te->d_name) ||
                            !unstick_thread_state(taskfd, te->d_name, &state, &sw))
                                continue;
                        if (*n == WAITERS_MAX) {
                                whole = false;
                                break;
                        }
                        w[(*n)++] = (Waiter){ .pid = (pid_t)pid, .tid = (pid_t)tid, .switches = sw };
                }
                if (td)
                        closedir(td);
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
        return taskfd >= 0 && unstick_in_fuse(taskfd, tid) && unstick_thread_state(taskfd, tid, &state, &sw) &&
               sw == w->switches;
}

typedef struct Ids {
        unsigned long *v;
        size_t n, cap;
        bool overflow; /* more than IDS_MAX, or no memory */
} Ids;

#define IDS_MAX (1u << 20)

static void ids_add(Ids *s, unsigned long id) {
        if (s->n && s->v[s->n - 1] == id)
                return; /* the same file's mappings, one after another */
        if (s->n == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 256;
                unsigned long *v = cap <= IDS_MAX ? realloc(s->v, cap * sizeof *v) : NULL;
                if (!v) {
                        s->overflow = true;
                        return;
                }
                s->v = v;
                s->cap = cap;
        }
        s->v[s->n++] = id;
}

static int by_id(const void *a, const void *b) {
        unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
        return x < y ? -1 : x > y;
}

/* Sorted, each once. */
static void ids_unique(Ids *s) {
        if (s->n == 0)
                return; /* s->v may be NULL */
        qsort(s->v, s->n, sizeof *s->v, by_id);
        size_t k = 0;
        for (size_t i = 0; i < s->n; i++)
                if (!k || s->v[k - 1] != s->v[i])
                        s->v[k++] = s->v[i];
        s->n = k;
}

static void add_connection(int dfd, unsigned long dev, Ids *c) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "%lu", dev);
        if (fstatat(dfd, path, &st, 0) == 0) /* else no FUSE connection */
                ids_add(c, dev);
}

typedef struct MntDevs {
        Ids ids; /* mount ids of a process's open files, sorted, each once */
        Ids *c;
        int dfd;
} MntDevs;

static int mnt_line(char *line, void *userdata) {
        MntDevs *m = userdata;
        if (now_ms() >= deadline)
                return -ETIMEDOUT; /* a user's long table */
        unsigned major, minor;
        int id;
        if (sscanf(line, "%d %*d %u:%u ", &id, &major, &minor) != 3)
                return 0;
        unsigned long key = (unsigned long)id;
        if (id >= 0 && bsearch(&key, m->ids.v, m->ids.n, sizeof key, by_id))
                add_connection(m->dfd, kdev(major, minor), m->c);
        return 0;
}

/* What waiter pid's wait may be on: the FUSE connections of its mappings
 * (a read into a mapping of a FUSE file) and of its open files, until the
 * deadline (c->overflow past it: a user's long maps). */
static void devices_of(int dfd, pid_t pid, Ids *c) {
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%d", (int)pid);
        _cleanup_close_ int pfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int mfd = pfd < 0 ? -1 : openat(pfd, "maps", O_RDONLY | O_CLOEXEC);
        _cleanup_fclose_ FILE *f = mfd < 0 ? NULL : fdopen(mfd, "re");
        if (!f && mfd >= 0)
                close(mfd);
        unsigned long last = 0;
        while (f && fgets(line, sizeof line, f)) {
                if (now_ms() >= deadline) {
                        c->overflow = true;
                        return;
                }
                unsigned major, minor;
                /* "7f..-7f.. r--p 00000000 00:2b 2  /path": the device in hex. */
                if (sscanf(line, "%*s %*s %*s %x:%x ", &major, &minor) == 2 && (major || minor)) {
                        unsigned long dev = kdev(major, minor);
                        if (dev != last)
                                add_connection(dfd, dev, c);
                        last = dev;
                }
                if (!strchr(line, '\n')) /* a long line's rest */
                        while (fgets(line, sizeof line, f) && !strchr(line, '\n'))
                                ;
        }
        /* Its open files' mounts, each once, then its table read once for
         * their devices. */
        _cleanup_close_ int ifd = pfd < 0 ? -1 : openat(pfd, "fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = unstick_opendir_dup(ifd);
        MntDevs md = { .c = c, .dfd = dfd };
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (now_ms() >= deadline) {
                        c->overflow = true;
                        break;
                }
                if (de->d_name[0] == '.')
                        continue;
                char buf[1024];
                if (!read_small_at(ifd, de->d_name, buf, sizeof buf))
                        continue;
                const char *m = strstr(buf, "\nmnt_id:\t");
                int id = m ? atoi(m + 9) : -1;
                if (id >= 0)
                        ids_add(&md.ids, (unsigned long)id);
        }
        if (d)
                closedir(d);
        if (md.ids.overflow)
                c->overflow = true; /* some unseen: as too many to tell */
        ids_unique(&md.ids);
        if (md.ids.n && !c->overflow && mountinfo_each_at(pfd, "mountinfo", mnt_line, &md) == -ETIMEDOUT)
                c->overflow = true;
        free(md.ids.v);
}

/* The connections of the waiters w (stalled_only: those that did not run
 * through the pause), each process looked at once. */
static void waiters_connections(int dfd, const Waiter *w, size_t n_w, bool stalled_only, Ids *c) {
        pid_t last = 0;
        for (size_t i = 0; i < n_w && !c->overflow; i++) {
                if (w[i].pid == last || (stalled_only && !stalled(&w[i])))
                        continue;
                /* w is in /proc's order: a process's threads together. */
                last = w[i].pid;
                devices_of(dfd, w[i].pid, c);
        }
}

/* c narrowed to the connections never without a request waiting through
 * UNSTICK_PAUSE_MS: looked at every 10 ms while they are few, as often
 * as a look at all of them allows while many (a busy file system whose
 * requests are answered has moments with none; the one holding the
 * daemon never). At least two looks. */
static void sample(int dfd, Ids *c) {
        uint64_t end = now_ms() + UNSTICK_PAUSE_MS;
        int looks = 0;
        do {
                size_t kept = 0;
                for (size_t i = 0; i < c->n; i++)
                        if (conn_waiting(dfd, c->v[i]))
                                c->v[kept++] = c->v[i];
                c->n = kept;
                looks++;
                if (c->n <= CANDIDATES_MAX)
                        (void)usleep(10 * 1000);
        } while (c->n > 0 && (now_ms() < end || looks < 2));
}

/* Every connection with requests waiting, into c, until the deadline. */
static void all_waiting(int dfd, Ids *c) {
        DIR *d = unstick_opendir_dup(dfd);
        struct dirent *de;
        while (d && !c->overflow && (de = readdir(d)) && now_ms() < deadline) {
                char *end;
                errno = 0;
                unsigned long id = strtoul(de->d_name, &end, 10);
                if (!errno && *end == 0 && end != de->d_name && conn_waiting(dfd, id))
                        ids_add(c, id);
        }
        if (d)
                closedir(d);
}

typedef struct ByUid {
        long long uid;
        int count;
        char mnt[64];
} ByUid;

int unstick_end_connections(uint64_t held_ms, bool direct, unsigned level) {
        static Waiter w[WAITERS_MAX];
        unsigned long long held_s = (unsigned long long)(held_ms / 1000);
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s, and the FUSE "
                            "connections cannot be looked at (a mount namespace: %m)",
                            held_s);
                return 0;
        }
        /* Over whatever is there (an empty directory where no one mounted
         * it): the one fusectl, in this namespace only. */
        (void)mount("fusectl", FUSECTL, "fusectl", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        _cleanup_close_ int dfd = open(FUSECTL, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s, and %s cannot "
                            "be read: %m",
                            held_s, FUSECTL);
                return 0;
        }
        /* Held behind a lock: the holders' connections. At the hold's
         * first try those of the threads that wait for a FUSE answer and
         * do not run through the pause; none such, or at the next try
         * (the hold went on: a holder whose file system answers each page
         * of a long read just in time runs between them, and a stalled
         * bystander may have been all the first try found), those of
         * every thread waiting for one; from the third, or too many to
         * look at in time, every connection with requests waiting. A
         * held thread that waits for a FUSE answer itself: every one. */
        Ids c = {};
        size_t n_w = 0;
        bool wide = direct || level >= 2;
        deadline = now_ms() + unstick_scan_ms;
        if (!wide && !fuse_waiters(w, &n_w))
                wide = true;
        /* Through which a stalled waiter does not run (the first try's
         * look; the sampling below has a second of its own). */
        if (!wide && level == 0)
                (void)usleep(UNSTICK_PAUSE_MS * 1000);
        deadline = now_ms() + unstick_scan_ms;
        if (!wide && level == 0)
                waiters_connections(dfd, w, n_w, true, &c);
        if (!wide && c.n == 0 && !c.overflow)
                waiters_connections(dfd, w, n_w, false, &c);
        if (c.overflow)
                wide = true;
        if (wide) {
                free(c.v);
                c = (Ids){};
                deadline = now_ms() + unstick_scan_ms;
                all_waiting(dfd, &c);
        }
        ids_unique(&c);
        sample(dfd, &c);
        if (c.n == 0) {
                free(c.v);
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s, and no FUSE "
                            "file system holds it: not mended (a disk that does not answer?)",
                            held_s);
                return 0;
        }
        if (!owners_read()) {
                free(c.v);
                log_warning("monitor: a thread of the daemon has been held in the kernel for %llu s; out of memory "
                            "or /proc to tell root's FUSE connections from users': none ended",
                            held_s);
                return 0;
        }
        /* Ended, counted by who mounted them: each user named. */
        ByUid by[UNSTICK_LOG_MAX];
        size_t n_by = 0, spared = 0;
        int ended = 0, unnamed = 0;
        for (size_t i = 0; i < c.n; i++) {
                const Owned *o = owner_of(c.v[i]);
                if (o && o->uid == 0) {
                        spared++; /* root's own: trusted, never ended */
                        continue;
                }
                char path[64];
                snprintf(path, sizeof path, "%lu/abort", c.v[i]);
                _cleanup_close_ int a = openat(dfd, path, O_WRONLY | O_CLOEXEC);
                if (a < 0 || write_all(a, "1", 1) < 0)
                        continue;
                ended++;
                long long uid = o ? o->uid : -1;
                size_t k = 0;
                while (k < n_by && by[k].uid != uid)
                        k++;
                if (k == n_by && n_by < UNSTICK_LOG_MAX) {
                        by[n_by] = (ByUid){ .uid = uid };
                        snprintf(by[n_by].mnt, sizeof by[n_by].mnt, "%s", o ? o->mnt : "(not found mounted)");
                        n_by++;
                }
                if (k < n_by)
                        by[k].count++;
                else
                        unnamed++;
        }
        free(c.v);
        for (size_t k = 0; k < n_by; k++)
                log_warning("monitor: a thread of the daemon had been held in the kernel for %llu s; ended %d FUSE "
                            "connection(s) of uid %lld, whose requests went unanswered (%s%s)",
                            held_s, by[k].count, by[k].uid, by[k].mnt, by[k].count > 1 ? " and others" : "");
        if (unnamed || spared)
                log_warning("monitor: ended %d FUSE connection(s) in all (%d of uids not named above); left %zu of "
                            "root's",
                            ended, unnamed, spared);
        return ended > 100 ? 100 : ended;
}
