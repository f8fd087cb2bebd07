/* SPDX-License-Identifier: MIT */
/* Memory: PSS of the daemon and of each idle workspace's jail processes
 * (bwrap, pid 1 of the jail's outer pid namespace, and the worker), and the machine's memory delta for N
 * idle sandboxed workspaces (MemTotal - MemAvailable before and after,
 * which counts user and kernel memory: page tables, kernel stacks, slab for
 * the namespaces and mounts). Also how long starting the N took: the first
 * call of every workspace, 8 in flight at a time over 4 connections.
 *
 * And what each piece costs: per process of a jail (by its role) its PSS,
 * private memory and page tables; the kernel's share split into slab (and
 * the slab caches that grew most, from /proc/slabinfo when readable), page
 * tables and kernel stacks; the daemon's own growth and its inotify watches
 * per workspace; each kind of namespace by itself (children that unshare
 * one kind each, against children that do not); and the CPU time each
 * piece took to start (schedstat), which with 2 CPUs bounds the start rate.
 * Usage: bench-memory [N]. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "stats.h"

#define N_CONN 4
#define WINDOW 2

static long meminfo_kb(const char *key) {
        FILE *f = fopen("/proc/meminfo", "re");
        if (!f)
                bench_die("/proc/meminfo: %m");
        char line[256];
        long v = -1;
        size_t kl = strlen(key);
        while (fgets(line, sizeof line, f))
                if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
                        v = atol(line + kl + 1);
                        break;
                }
        fclose(f);
        return v;
}

typedef struct Mem {
        long used, slab, sunreclaim, pagetables, kstack;
} Mem;

static Mem mem_now(void) {
        return (Mem){
                .used = meminfo_kb("MemTotal") - meminfo_kb("MemAvailable"),
                .slab = meminfo_kb("Slab"),
                .sunreclaim = meminfo_kb("SUnreclaim"),
                .pagetables = meminfo_kb("PageTables"),
                .kstack = meminfo_kb("KernelStack"),
        };
}

/* Returns the slab caches' empty pages (and their per-CPU partial lists)
 * to the page allocator (SLUB's /sys/kernel/slab/CACHE/shrink, root only):
 * otherwise a phase reuses the slab pages an earlier one left and looks
 * cheaper than it is (in one run, the same 200 bare jails measured 359 kB
 * each first and 70 kB right after another 200 were taken down). */
static void shrink_slabs(void) {
        /* Root only: as a normal user the baselines wait for MemAvailable
         * alone (the log says so once). */
        static bool told;
        if (geteuid() != 0) {
                if (!told)
                        bench_log("memory: not root: the slab caches are not shrunk before each baseline");
                told = true;
                return;
        }
        DIR *d = opendir("/sys/kernel/slab");
        if (!d)
                return;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                char p[300];
                snprintf(p, sizeof p, "/sys/kernel/slab/%s/shrink", e->d_name);
                int fd = open(p, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)!write(fd, "1", 1);
                        close(fd);
                }
        }
        closedir(d);
}

/* Until the kernel has finished taking down what an earlier phase (or run)
 * left: network namespaces, stacks and page tables are freed by
 * workqueues and after RCU grace periods, for seconds after their last
 * process (300 jails' end returned ~38 MB over 10 s here). A baseline taken
 * meanwhile counts that release against the next phase's growth. Shrinks
 * the slab caches, then waits until MemTotal - MemAvailable moved by less
 * than 512 kB in each of 3 seconds running (at most 90 s); returns the
 * seconds waited. */
static double settle_kernel(void) {
        struct timespec tick = { 1, 0 };
        double t0 = now_us();
        long prev = -1;
        for (int i = 0, quiet = 0; i < 90 && quiet < 3; i++) {
                shrink_slabs();
                nanosleep(&tick, NULL);
                long used = meminfo_kb("MemTotal") - meminfo_kb("MemAvailable");
                quiet = prev >= 0 && labs(used - prev) < 512 ? quiet + 1 : 0;
                prev = used;
        }
        return (now_us() - t0) / 1e6;
}

/* What the kernel charged to pid's memory cgroup (user pages and the
 * kernel memory it accounts to the group: slab objects of its namespaces,
 * mounts and files, page tables, kernel stacks, socket buffers), in kB; -1
 * without one. Unlike the machine delta this counts live objects, not slab
 * pages, so it does not depend on what an earlier phase freed. */
static long cg_charge_kb(pid_t pid) {
        char p[64], line[512], path[600];
        snprintf(p, sizeof p, "/proc/%d/cgroup", (int)pid);
        FILE *f = fopen(p, "re");
        if (!f)
                return -1;
        path[0] = 0;
        while (fgets(line, sizeof line, f)) {
                line[strcspn(line, "\n")] = 0;
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                *c2 = 0;
                bool v1 = streq(c1 + 1, "memory");
                if (v1 || (streq(line, "0") && c1[1] == 0 && !path[0]))
                        snprintf(path, sizeof path, v1 ? "/sys/fs/cgroup/memory%s/memory.usage_in_bytes" : "/sys/fs/cgroup%s/memory.current",
                                 c2 + 1);
                if (v1)
                        break;
        }
        fclose(f);
        if (!path[0] || streq(path, "/sys/fs/cgroup//memory.current"))
                return -1;
        f = fopen(path, "re");
        if (!f)
                return -1;
        unsigned long long b = 0;
        bool ok = fscanf(f, "%llu", &b) == 1;
        fclose(f);
        return ok ? (long)(b / 1024) : -1;
}

static long kernel_kb(const Mem *m) {
        return m->slab + m->pagetables + m->kstack;
}

static long pss_kb(pid_t pid) {
        char p[64], line[256];
        snprintf(p, sizeof p, "/proc/%d/smaps_rollup", (int)pid);
        FILE *f = fopen(p, "re");
        if (!f)
                return 0;
        long v = 0;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, "Pss:", 4) == 0) {
                        v = atol(line + 4);
                        break;
                }
        fclose(f);
        return v;
}

/* Sums the values (kB) of the lines of path that start with one of the
 * keys (each key with its ':'). */
static long sum_keys_kb(const char *path, const char *const *keys) {
        FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        char line[256];
        long v = 0;
        while (fgets(line, sizeof line, f))
                for (const char *const *k = keys; *k; k++)
                        if (strncmp(line, *k, strlen(*k)) == 0)
                                v += atol(line + strlen(*k));
        fclose(f);
        return v;
}

typedef struct ProcMem {
        long pss, priv, pte; /* kB */
        double cpu_us;       /* ran so far, its reaped children included */
} ProcMem;

/* Nanoseconds every thread of pid ran (schedstat), plus its reaped
 * children's user + system time (clock ticks). */
static double cpu_us(pid_t pid) {
        char p[64], buf[512];
        double ns = 0;
        snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
        DIR *d = opendir(p);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char sp[320];
                snprintf(sp, sizeof sp, "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
                FILE *f = fopen(sp, "re");
                unsigned long long run = 0;
                if (f && fscanf(f, "%llu", &run) == 1)
                        ns += (double)run;
                if (f)
                        fclose(f);
        }
        if (d)
                closedir(d);
        snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(p, "re");
        if (!f)
                return ns / 1e3;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *rp = strrchr(buf, ')');
        long long cu = 0, cs = 0;
        /* After the comm: state ppid pgrp session tty tpgid flags minflt
         * cminflt majflt cmajflt utime stime cutime cstime. */
        if (rp && sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %lld %lld", &cu, &cs) == 2)
                ns += (double)(cu + cs) * 1e9 / (double)sysconf(_SC_CLK_TCK);
        return ns / 1e3;
}

static ProcMem proc_mem(pid_t pid) {
        char p[64];
        snprintf(p, sizeof p, "/proc/%d/smaps_rollup", (int)pid);
        ProcMem m = { .pss = pss_kb(pid) };
        m.priv = sum_keys_kb(p, (const char *const[]){ "Private_Clean:", "Private_Dirty:", NULL });
        snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
        m.pte = sum_keys_kb(p, (const char *const[]){ "VmPTE:", NULL });
        m.cpu_us = cpu_us(pid);
        return m;
}

static bool comm_is(pid_t pid, const char *name) {
        char p[64], c[64] = "";
        snprintf(p, sizeof p, "/proc/%d/comm", (int)pid);
        FILE *f = fopen(p, "re");
        if (!f)
                return false;
        bool ok = fgets(c, sizeof c, f) && strncmp(c, name, strlen(name)) == 0 && c[strlen(name)] == '\n';
        fclose(f);
        return ok;
}

/* Inotify watches the daemon holds (fdinfo of its inotify descriptors). */
static long inotify_watches(pid_t pid) {
        char p[64];
        snprintf(p, sizeof p, "/proc/%d/fdinfo", (int)pid);
        DIR *d = opendir(p);
        if (!d)
                return 0;
        long n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                char fp[320], line[512];
                snprintf(fp, sizeof fp, "/proc/%d/fdinfo/%s", (int)pid, de->d_name);
                FILE *f = fopen(fp, "re");
                if (!f)
                        continue;
                while (fgets(line, sizeof line, f))
                        n += strncmp(line, "inotify wd:", 11) == 0;
                fclose(f);
        }
        closedir(d);
        return n;
}

/* /proc/slabinfo (root only): each cache's bytes (num_objs * objsize). */
#define MAX_SLABS 512
typedef struct Slabs {
        size_t n;
        char name[MAX_SLABS][40];
        double bytes[MAX_SLABS];
} Slabs;

static bool slabs_read(Slabs *s) {
        s->n = 0;
        FILE *f = fopen("/proc/slabinfo", "re");
        if (!f)
                return false;
        char line[512];
        while (s->n < MAX_SLABS && fgets(line, sizeof line, f)) {
                unsigned long active, num, size;
                if (sscanf(line, "%39s %lu %lu %lu", s->name[s->n], &active, &num, &size) == 4 && line[0] != '#')
                        s->bytes[s->n++] = (double)num * (double)size;
        }
        fclose(f);
        return s->n > 0;
}

static double slab_bytes(const Slabs *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->name[i], name) == 0)
                        return s->bytes[i];
        return 0;
}

/* The caches that grew most between two reads, per jail (other load on
 * the machine moves them too), as values KEY_PREFIX<cache>. Takes them
 * from after. */
static void slab_top(BenchOut *out, const char *key_prefix, const Slabs *before, Slabs *after, unsigned n) {
        for (unsigned top = 0; top < 10; top++) {
                size_t best = SIZE_MAX;
                double best_d = 0;
                for (size_t i = 0; i < after->n; i++) {
                        double dlt = after->bytes[i] - slab_bytes(before, after->name[i]);
                        if (dlt > best_d) {
                                best_d = dlt;
                                best = i;
                        }
                }
                if (best == SIZE_MAX)
                        break;
                char key[96];
                snprintf(key, sizeof key, "%s%s", key_prefix, after->name[best]);
                bench_out_value(out, key, best_d / 1024 / n);
                after->bytes[best] = slab_bytes(before, after->name[best]); /* taken */
        }
}

static pid_t ppid_of(pid_t pid) {
        char p[64], buf[512];
        snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(p, "re");
        if (!f)
                return -1;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *rp = strrchr(buf, ')');
        if (!rp)
                return -1;
        char state;
        int ppid;
        if (sscanf(rp + 2, "%c %d", &state, &ppid) != 2)
                return -1;
        return ppid;
}

typedef struct Proc {
        pid_t pid, ppid;
} Proc;

static Proc *all_procs(size_t *ret_n) {
        DIR *d = opendir("/proc");
        if (!d)
                bench_die("/proc: %m");
        Proc *v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                pid_t pid = atoi(de->d_name);
                if (pid <= 0)
                        continue;
                if (n == cap) {
                        cap = cap ? cap * 2 : 1024;
                        v = realloc(v, cap * sizeof *v);
                        if (!v)
                                bench_die("out of memory");
                }
                v[n++] = (Proc){ pid, ppid_of(pid) };
        }
        closedir(d);
        *ret_n = n;
        return v;
}

/* PSS of pid and all its descendants; *ret_count processes. */
static long tree_pss(const Proc *ps, size_t n, pid_t root, unsigned *ret_count) {
        long sum = pss_kb(root);
        unsigned count = 1;
        for (size_t i = 0; i < n; i++)
                if (ps[i].ppid == root) {
                        unsigned c;
                        sum += tree_pss(ps, n, ps[i].pid, &c);
                        count += c;
                }
        *ret_count = count;
        return sum;
}

/* Kernel memory (slab + page tables + kernel stacks, kB) per child of k
 * children that each unshare flags (0: none) and wait; measured while they
 * all wait. Not root: every set takes a user namespace too (the caller
 * subtracts the user namespace's own cost). */
#define NS_CHILDREN 200
#define NS_ROUNDS 3
static double ns_kernel_kb(int flags) {
        if (flags && geteuid() != 0)
                flags |= CLONE_NEWUSER;
        int ready[2], go[2];
        if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
                bench_die("pipe: %m");
        struct timespec settle = { 0, 300 * 1000 * 1000 };
        nanosleep(&settle, NULL);
        Mem before = mem_now();
        pid_t kids[NS_CHILDREN];
        for (unsigned i = 0; i < NS_CHILDREN; i++) {
                kids[i] = fork();
                if (kids[i] < 0)
                        bench_die("fork: %m");
                if (kids[i] == 0) {
                        close(go[1]);
                        char c = flags && unshare(flags) < 0 ? 'x' : 'o';
                        (void)!write(ready[1], &c, 1);
                        (void)!read(go[0], &c, 1);
                        _exit(0);
                }
        }
        close(ready[1]);
        close(go[0]);
        for (unsigned i = 0; i < NS_CHILDREN; i++) {
                char c;
                if (read(ready[0], &c, 1) != 1 || c != 'o')
                        bench_die("unshare(0x%x) failed in a child", flags);
        }
        nanosleep(&settle, NULL);
        Mem after = mem_now();
        close(go[1]);
        close(ready[0]);
        for (unsigned i = 0; i < NS_CHILDREN; i++)
                waitpid(kids[i], NULL, 0);
        return (double)(kernel_kb(&after) - kernel_kb(&before)) / NS_CHILDREN;
}

typedef struct NsKind {
        const char *key, *label;
        int flag;
} NsKind;

/* The namespaces a local jail is given (src/shared/plan/backend-local.c; net
 * only with the network off), each measured by itself, then all at once. */
static void ns_costs(BenchOut *out) {
        static const NsKind kinds[] = {
                { "user", "user", CLONE_NEWUSER },  { "mnt", "mount (a copy of the host's table)", CLONE_NEWNS },
                { "pid", "pid", CLONE_NEWPID },     { "net", "net (loopback only)", CLONE_NEWNET },
                { "ipc", "ipc", CLONE_NEWIPC },     { "uts", "uts", CLONE_NEWUTS },
                { "cgroup", "cgroup", CLONE_NEWCGROUP },
                { "all", "all seven at once",
                  CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP },
        };
        /* Rounds interleaved with their own baseline: other load on the
         * machine moves slab by more than one namespace costs. */
        Samples v[ELEMENTSOF(kinds)] = {};
        for (unsigned round = 0; round < NS_ROUNDS; round++) {
                double base = ns_kernel_kb(0);
                /* Not root, each set came with a user namespace: take it off. */
                double user = geteuid() != 0 ? ns_kernel_kb(CLONE_NEWUSER) - base : 0;
                for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                        samples_add(&v[i], round,
                                    ns_kernel_kb(kinds[i].flag) - base - (kinds[i].flag & CLONE_NEWUSER ? 0 : user));
        }
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                char key[64], label[160];
                snprintf(key, sizeof key, "memory.ns.%s", kinds[i].key);
                snprintf(label, sizeof label, "  kernel memory of a namespace: %s", kinds[i].label);
                bench_out_figure(out, key, label, "kB", &v[i]);
                samples_done(&v[i]);
        }
}

enum { ROLE_BWRAP, ROLE_WORKER, N_ROLES };
static const char *const role_key[N_ROLES] = { "bwrap", "worker" };
static const char *const role_label[N_ROLES] = { "bwrap (outer: its monitor, pid 1 of the jail's outer pid namespace)",
                                                 "worker (pid 1 of the jail)" };

typedef struct RoleStats {
        Samples pss, priv, pte, cpu;
} RoleStats;

/* Each process of the jail from root down by its role: bwrap by its name,
 * the worker (with anything it started) below it. */
static void jail_roles(const Proc *ps, size_t n, pid_t root, RoleStats *rs) {
        int role = comm_is(root, "bwrap") ? ROLE_BWRAP : ROLE_WORKER;
        ProcMem m = proc_mem(root);
        samples_add(&rs[role].pss, 0, (double)m.pss);
        samples_add(&rs[role].priv, 0, (double)m.priv);
        samples_add(&rs[role].pte, 0, (double)m.pte);
        samples_add(&rs[role].cpu, 0, m.cpu_us);
        for (size_t i = 0; i < n; i++)
                if (ps[i].ppid == root)
                        jail_roles(ps, n, ps[i].pid, rs);
}

/* Several processes of one role in one jail (a worker's relay) count as
 * separate samples: fine for an idle workspace, which has one each. */
static void role_figures(BenchOut *out, RoleStats *rs) {
        for (int r = 0; r < N_ROLES; r++) {
                if (rs[r].pss.n == 0)
                        continue;
                static const char *const what[] = { "pss", "private", "pagetables", "start_cpu" };
                static const char *const wl[] = { "PSS", "private (clean + dirty)", "page tables",
                                                  "CPU time to start (and one /bin/true)" };
                Samples *sv[] = { &rs[r].pss, &rs[r].priv, &rs[r].pte, &rs[r].cpu };
                for (size_t k = 0; k < ELEMENTSOF(sv); k++) {
                        char key[64], label[160];
                        snprintf(key, sizeof key, "memory.%s.%s", role_key[r], what[k]);
                        snprintf(label, sizeof label, "  %s: %s", role_label[r], wl[k]);
                        bench_out_figure(out, key, label, k == 3 ? "us" : "kB", sv[k]);
                        bench_out_value(out, key, samples_median(sv[k]));
                }
        }
}

/* The floor's jails get the per-workspace limits the daemon sets
 * (src/daemon/workspace/cgroup.c): a pids and a memory group each (v2: one group
 * with both; v1: one in each hierarchy), joined before bwrap runs. They
 * are part of what a workspace must cost (the memory group alone is
 * ~80-100 kB of kernel memory on cgroup v1). Root only; without a
 * writable cgroupfs the floor runs without them and says so. */
#define FLOOR_CG "vectora-bench-floor"

static int floor_cg_version(void) {
        if (geteuid() != 0)
                return 0;
        if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
                int fd = open("/sys/fs/cgroup/cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
                bool ok = fd >= 0 && write(fd, "+pids +memory", 13) == 13;
                if (fd >= 0)
                        close(fd);
                if (!ok || (mkdir("/sys/fs/cgroup/" FLOOR_CG, 0755) < 0 && errno != EEXIST))
                        return 0;
                fd = open("/sys/fs/cgroup/" FLOOR_CG "/cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
                ok = fd >= 0 && write(fd, "+pids +memory", 13) == 13;
                if (fd >= 0)
                        close(fd);
                return ok ? 2 : 0;
        }
        if (access("/sys/fs/cgroup/pids/cgroup.procs", W_OK) == 0 && access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0 &&
            (mkdir("/sys/fs/cgroup/pids/" FLOOR_CG, 0755) == 0 || errno == EEXIST) &&
            (mkdir("/sys/fs/cgroup/memory/" FLOOR_CG, 0755) == 0 || errno == EEXIST))
                return 1;
        return 0;
}

static const char *floor_cg_parent(int version, int k) {
        if (version == 2)
                return k == 0 ? "/sys/fs/cgroup/" FLOOR_CG : NULL;
        return k == 0 ? "/sys/fs/cgroup/pids/" FLOOR_CG : "/sys/fs/cgroup/memory/" FLOOR_CG;
}

static bool put_value(const char *dir, const char *file, uint64_t v) {
        char p[256], text[32];
        if (snprintf(p, sizeof p, "%s/%s", dir, file) >= (int)sizeof p)
                return false;
        snprintf(text, sizeof text, "%llu", (unsigned long long)v);
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
        if (fd >= 0)
                close(fd);
        return ok;
}

/* Makes jail i's groups with the limits and opens their cgroup.procs
 * files into fds; how many. */
static size_t floor_cg_make(int version, unsigned i, uint64_t pids, uint64_t memory, int fds[2]) {
        size_t n = 0;
        for (int k = 0; k < 2 && floor_cg_parent(version, k); k++) {
                char dir[256], procs[300];
                snprintf(dir, sizeof dir, "%s/j%u", floor_cg_parent(version, k), i);
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        bench_die("%s: %m", dir);
                bool ok = version == 2 ? put_value(dir, "pids.max", pids) && put_value(dir, "memory.max", memory)
                          : k == 0     ? put_value(dir, "pids.max", pids)
                                       : put_value(dir, "memory.limit_in_bytes", memory);
                if (!ok)
                        bench_die("%s: cannot set the limits: %m", dir);
                snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
                if ((fds[n] = open(procs, O_WRONLY | O_CLOEXEC)) < 0)
                        bench_die("%s: %m", procs);
                n++;
        }
        return n;
}

/* Removes the groups once their processes are gone (a killed jail's pid 1
 * dies with bwrap a moment later). */
static void floor_cg_remove(int version, unsigned n) {
        for (int k = 0; k < 2 && floor_cg_parent(version, k); k++) {
                for (unsigned i = 0; i < n; i++) {
                        char dir[256];
                        snprintf(dir, sizeof dir, "%s/j%u", floor_cg_parent(version, k), i);
                        for (int tries = 0; rmdir(dir) < 0 && errno == EBUSY && tries < 500; tries++) {
                                struct timespec ts = { 0, 10 * 1000 * 1000 };
                                nanosleep(&ts, NULL);
                        }
                }
                (void)rmdir(floor_cg_parent(version, k));
        }
}

/* The floor: the same jails without the project. For each workspace, bwrap
 * with the daemon's own argv for it (namespaces, binds, masks, uid, the
 * same seccomp filter; bench_percall_prepare), started the cheapest way
 * (a vfork-style clone), running a shell that says it is up and then
 * sleeps: no daemon, no outer pid namespace, no worker, no Landlock. As many start at
 * once as the daemon phase had first calls in flight. What it takes to
 * start them all and what each costs the machine bound what a workspace
 * can cost while it is a bwrap jail. */
/* Floor `pfx` ("memory.floor." or, with own_pid_ns, "memory.floor_ns."):
 * n bare bwrap jails with the daemon's argv; with own_pid_ns each bwrap is
 * pid 1 of a pid namespace of its own with its /proc, as the daemon starts
 * it (what ends a jail with its set-up when the daemon dies). */
static void bare_floor(BenchOut *out, char **ws, unsigned n, bool own_pid_ns) {
        const char *pfx = own_pid_ns ? "memory.floor_ns." : "memory.floor.";
        const char *what = own_pid_ns ? "bare bwrap jails in their own pid namespace" : "bare bwrap jails";
        char key[96];
        BenchPercall *pc = calloc(n, sizeof *pc);
        pid_t *pids = calloc(n, sizeof *pids);
        if (!pc || !pids)
                bench_die("out of memory");
        for (unsigned i = 0; i < n; i++) {
                bench_percall_prepare(&pc[i], ws[i]);
                /* One filter for all (same policy): keep the first's memfd. */
                if (i > 0)
                        pc[i].bpf_fd = safe_close(pc[i].bpf_fd);
        }
        int up[2];
        if (pipe2(up, O_CLOEXEC) < 0)
                bench_die("pipe: %m");
        char *cmd[] = { (char *)"/bin/sh", (char *)"-c", (char *)"printf r; exec sleep 100000", NULL };
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", pc[0].bpf_fd);
        int cg = floor_cg_version();
        struct timespec settle = { 1, 0 };
        bench_log("memory: %s: the kernel settled in %.0f s", what, settle_kernel());
        static Slabs slabs_before, slabs_after;
        bool have_slabs = slabs_read(&slabs_before);
        Mem before = mem_now();
        double t0 = now_us();
        unsigned spawned = 0, ready = 0;
        while (ready < n) {
                for (; spawned < n && spawned - ready < N_CONN * WINDOW; spawned++) {
                        /* Each bwrap reads the filter from its own offset:
                         * a description of its own. */
                        int fd = open(self, O_RDONLY | O_CLOEXEC);
                        if (fd < 0)
                                bench_die("%s: %m", self);
                        int keep = pc[spawned].bpf_fd;
                        pc[spawned].bpf_fd = fd;
                        int cgfds[2] = { -EBADF, -EBADF };
                        size_t ncg = cg ? floor_cg_make(cg, spawned, pc[spawned].launch->pids, pc[spawned].launch->memory, cgfds) : 0;
                        pids[spawned] = bench_percall_spawn_in(&pc[spawned], cmd, -1, up[1], cgfds, ncg, own_pid_ns);
                        pc[spawned].bpf_fd = keep;
                        close(fd);
                        for (size_t k = 0; k < ncg; k++)
                                close(cgfds[k]);
                }
                char buf[64];
                ssize_t k = read(up[0], buf, sizeof buf);
                if (k <= 0)
                        bench_die("bare jails: %s", k < 0 ? strerror(errno) : "EOF");
                ready += (unsigned)k;
        }
        double start_s = (now_us() - t0) / 1e6;
        nanosleep(&settle, NULL);
        Mem after = mem_now();
        have_slabs = have_slabs && slabs_read(&slabs_after);
        bench_log("memory: floor: %u %s started in %.2f s, %.0f kB each", n, what, start_s,
                  (double)(after.used - before.used) / n);
        /* The same split as the workspaces', to compare piece by piece. */
        const struct {
                const char *key;
                long delta;
        } kparts[] = {
                { "kernel.slab", after.slab - before.slab },
                { "kernel.sunreclaim", after.sunreclaim - before.sunreclaim },
                { "kernel.pagetables", after.pagetables - before.pagetables },
                { "kernel.kstack", after.kstack - before.kstack },
        };
        for (size_t i = 0; i < ELEMENTSOF(kparts); i++) {
                snprintf(key, sizeof key, "%s%s", pfx, kparts[i].key);
                bench_out_value(out, key, (double)kparts[i].delta / n);
        }
        if (have_slabs) {
                snprintf(key, sizeof key, "%sslab.", pfx);
                slab_top(out, key, &slabs_before, &slabs_after, n);
        }
        Samples charged = { 0 };
        for (unsigned i = 0; i < n; i++) {
                long ch = cg_charge_kb(pids[i]);
                if (ch >= 0)
                        samples_add(&charged, 0, (double)ch);
        }
        if (charged.n) {
                char label2[200];
                snprintf(label2, sizeof label2, "floor: charged to its memory cgroup, per one of the %s", what);
                snprintf(key, sizeof key, "%scharged_per_jail", pfx);
                bench_out_figure(out, key, label2, "kB", &charged);
                snprintf(key, sizeof key, "%scharged_per_jail_kb", pfx);
                bench_out_value(out, key, samples_median(&charged));
        }
        samples_done(&charged);
        for (unsigned i = 0; i < n; i++)
                (void)kill(pids[i], SIGKILL);
        for (unsigned i = 0; i < n; i++)
                (void)bench_wait(pids[i]);
        if (cg)
                floor_cg_remove(cg, n);
        close(up[0]);
        close(up[1]);
        for (unsigned i = 0; i < n; i++)
                bench_percall_done(&pc[i]);
        free(pc);
        free(pids);

        Samples v = { 0 };
        char label[200];
        samples_add(&v, 0, start_s);
        snprintf(label, sizeof label, "floor: time to start %u %s, the daemon's argv for each workspace (%u at once)", n,
                 what, N_CONN * WINDOW);
        snprintf(key, sizeof key, "%sstart_n", pfx);
        bench_out_figure(out, key, label, "s", &v);
        samples_done(&v);
        samples_add(&v, 0, (double)(after.used - before.used) / n);
        snprintf(label, sizeof label, "floor: machine memory delta per one of the %s (user + kernel)", what);
        snprintf(key, sizeof key, "%smachine_per_jail", pfx);
        bench_out_figure(out, key, label, "kB", &v);
        samples_done(&v);
        snprintf(key, sizeof key, "%sstart_1000_s", pfx);
        bench_out_value(out, key, n == 1000 ? start_s : NAN);
        snprintf(key, sizeof key, "%smachine_per_jail_kb", pfx);
        bench_out_value(out, key, (double)(after.used - before.used) / n);
        bench_out_note(out, "Floor (%s): for each workspace, bwrap with the daemon's own argv for it (namespaces, binds, masks, uid, the same seccomp filter), started by a vfork-style clone%s, running `/bin/sh -c 'printf r; exec sleep ...'` (up when its byte arrives), %s: no daemon, %sworker or Landlock, %u starting at once; measured once the kernel settled from what ran before, as the workspaces are.",
                       what,
                       own_pid_ns ? " as pid 1 of a pid namespace of its own with that namespace's /proc, as the daemon starts bwrap (the mechanism that ends a jail with its set-up when the daemon dies)" : "",
                       cg ? (cg == 2 ? "each in a cgroup v2 group of its own with the workspace's pids.max and memory.max, as the daemon makes"
                                     : "each in a pids and a memory cgroup (v1) of its own with the workspace's limits, as the daemon makes")
                          : "without per-jail cgroups (not root, or no writable cgroupfs: the daemon phase may have had them)",
                       own_pid_ns ? "" : "outer pid namespace, ", N_CONN * WINDOW);
}

/* The project's own: n_ws sandboxed workspaces through the daemon, each
 * started by one call, then idle; their memory by piece. */
static void workspaces_phase(BenchOut *out, char **ws, unsigned n_ws) {
        BenchDaemon d;
        bench_daemon_start(&d, n_ws + 16);
        BenchConn c[N_CONN];
        for (size_t i = 0; i < N_CONN; i++)
                bench_connect(&c[i], d.socket);
        /* One jail first, so the once-per-process costs (libseccomp, filter
         * compile) are in the daemon's baseline. */
        _cleanup_free_ char *warm = bench_workspace("warm", "[sandbox]\nenabled = true\n");
        JsonlMsg m = JSONL_MSG_INIT;
        json_t *o = json_pack("{s:s,s:s,s:[s]}", "tool", api_tool_name(API_TOOL_TERMINAL), "workspace", warm, "argv", "/bin/true");
        bench_call(&c[0], o, NULL, 0, &m, "warm-up");
        json_decref(o);
        jsonl_msg_done(&m);

        struct timespec settle = { 1, 0 };
        bench_log("memory: workspaces: the kernel settled in %.0f s", settle_kernel());
        long daemon_before = pss_kb(d.pid), watches_before = inotify_watches(d.pid);
        double daemon_cpu_before = cpu_us(d.pid);
        static Slabs slabs_before, slabs_after;
        bool have_slabs = slabs_read(&slabs_before);
        Mem before = mem_now();

        /* Start them all, WINDOW first calls in flight per connection: with
         * all 1 000 in flight at once the daemon spawns every jail at the
         * same moment and handshakes time out (see the report). */
        double t0 = now_us();
        unsigned next = 0, done = 0, inflight[N_CONN] = { 0 };
        while (done < n_ws) {
                for (size_t i = 0; i < N_CONN; i++)
                        for (; inflight[i] < WINDOW && next < n_ws; inflight[i]++, next++) {
                                o = json_pack("{s:s,s:s,s:[s]}", "tool", api_tool_name(API_TOOL_TERMINAL), "workspace", ws[next], "argv",
                                              "/bin/true");
                                bench_send(&c[i], o, NULL, 0);
                                json_decref(o);
                        }
                struct pollfd pf[N_CONN];
                for (size_t i = 0; i < N_CONN; i++)
                        pf[i] = (struct pollfd){ .fd = c[i].fd, .events = POLLIN };
                if (poll(pf, N_CONN, 30000) <= 0)
                        bench_die("no reply from the daemon in 30 s");
                for (size_t i = 0; i < N_CONN; i++) {
                        if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        if (jsonl_reader_read_fd(c[i].rd, c[i].fd) == 0)
                                bench_die("the daemon closed a connection");
                        while (bench_try_next(&c[i], &m) == 0) {
                                bench_check_ok(&m, "first call");
                                jsonl_msg_done(&m);
                                inflight[i]--;
                                done++;
                        }
                }
        }
        double start_s = (now_us() - t0) / 1e6;
        bench_log("memory: %u workspaces started in %.2f s", n_ws, start_s);

        double daemon_cpu_after = cpu_us(d.pid);
        nanosleep(&settle, NULL);
        Mem after = mem_now();
        have_slabs = have_slabs && slabs_read(&slabs_after);
        long daemon_after = pss_kb(d.pid), watches_after = inotify_watches(d.pid);

        size_t np;
        Proc *ps = all_procs(&np);
        Samples jail = { 0 }, procs = { 0 }, charged = { 0 };
        RoleStats roles[N_ROLES] = {};
        for (size_t i = 0; i < np; i++)
                if (ps[i].ppid == d.pid) {
                        long ch = cg_charge_kb(ps[i].pid);
                        if (ch >= 0)
                                samples_add(&charged, 0, (double)ch);
                        unsigned count;
                        long kb = tree_pss(ps, np, ps[i].pid, &count);
                        samples_add(&jail, 0, (double)kb);
                        samples_add(&procs, 0, count);
                        jail_roles(ps, np, ps[i].pid, roles);
                }
        free(ps);
        if (jail.n < n_ws)
                bench_die("found %zu jails for %u workspaces", jail.n, n_ws);

        double per_ws = (double)(after.used - before.used) / n_ws;
        Samples dpss = { 0 };
        samples_add(&dpss, 0, (double)daemon_before);
        bench_out_figure(out, "memory.daemon_pss_1", "daemon PSS with one idle jail", "kB", &dpss);
        samples_done(&dpss);
        samples_add(&dpss, 0, (double)daemon_after);
        char label[160];
        snprintf(label, sizeof label, "daemon PSS with %u idle jails", n_ws);
        bench_out_figure(out, "memory.daemon_pss_n", label, "kB", &dpss);
        bench_out_figure(out, "memory.jail_pss", "PSS of one idle jail (all its processes), across jails", "kB", &jail);
        role_figures(out, roles);
        for (int r = 0; r < N_ROLES; r++) {
                samples_done(&roles[r].pss);
                samples_done(&roles[r].priv);
                samples_done(&roles[r].pte);
                samples_done(&roles[r].cpu);
        }
        Samples v = { 0 };
        samples_add(&v, 0, per_ws);
        bench_out_figure(out, "memory.machine_per_ws", "machine memory delta per idle workspace (user + kernel)", "kB", &v);
        samples_done(&v);
        samples_add(&v, 0, (double)(after.slab - before.slab + after.pagetables - before.pagetables + after.kstack -
                                    before.kstack) / n_ws);
        bench_out_figure(out, "memory.kernel_per_ws", "  of which slab + page tables + kernel stacks", "kB", &v);
        samples_done(&v);
        const struct {
                const char *key, *label;
                long delta;
        } kparts[] = {
                { "memory.kernel.slab", "    slab", after.slab - before.slab },
                { "memory.kernel.sunreclaim", "      of which unreclaimable", after.sunreclaim - before.sunreclaim },
                { "memory.kernel.pagetables", "    page tables", after.pagetables - before.pagetables },
                { "memory.kernel.kstack", "    kernel stacks", after.kstack - before.kstack },
                { "memory.daemon_per_ws", "  the daemon's own growth (PSS)", daemon_after - daemon_before },
        };
        for (size_t i = 0; i < ELEMENTSOF(kparts); i++) {
                samples_add(&v, 0, (double)kparts[i].delta / n_ws);
                bench_out_figure(out, kparts[i].key, kparts[i].label, "kB", &v);
                bench_out_value(out, kparts[i].key, (double)kparts[i].delta / n_ws);
                samples_done(&v);
        }
        bench_out_value(out, "memory.inotify_watches_per_ws", (double)(watches_after - watches_before) / n_ws);
        if (charged.n) {
                /* Order-independent: what each jail's cgroup was charged, plus
                 * the daemon's own growth per workspace. */
                double dws = (double)(daemon_after - daemon_before) / n_ws;
                bench_out_figure(out, "memory.charged_per_jail", "charged to the workspace's memory cgroup (user + accounted kernel), per jail", "kB", &charged);
                bench_out_value(out, "memory.charged_per_ws_kb", samples_median(&charged) + dws);
        }
        samples_done(&charged);
        if (have_slabs)
                slab_top(out, "memory.slab.", &slabs_before, &slabs_after, n_ws);
        samples_add(&v, 0, (daemon_cpu_after - daemon_cpu_before) / n_ws);
        bench_out_figure(out, "memory.daemon.start_cpu", "  the daemon: CPU time per workspace started", "us", &v);
        bench_out_value(out, "memory.daemon.start_cpu", samples_median(&v));
        samples_done(&v);
        samples_add(&v, 0, start_s);
        snprintf(label, sizeof label, "time to start %u idle workspaces (first calls, %u in flight)", n_ws, N_CONN * WINDOW);
        bench_out_figure(out, "memory.start_n", label, "s", &v);
        samples_done(&v);
        bench_out_value(out, "memory.machine_per_ws_kb", per_ws);
        bench_out_value(out, "memory.start_1000_s", n_ws == 1000 ? start_s : NAN);
        bench_out_value(out, "memory.processes_per_jail", samples_median(&procs));
        ns_costs(out);
        bench_out_note(out, "Per piece: each jail process's PSS, private memory (Private_Clean + Private_Dirty of smaps_rollup) and page tables (VmPTE), by role; the kernel's share split by /proc/meminfo; the daemon's PSS growth divided by the workspaces; inotify watches per workspace: %.2f. CPU time to start: schedstat of every thread plus reaped children, summed per process over its life (an idle jail's life is its start and one `/bin/true`). Namespaces: kernel memory (slab + page tables + kernel stacks) per child of %d children that each unshare one kind and wait, minus children that unshare nothing%s; the mount namespace copies the host's mount table, which is larger than a jail's.",
                       (double)(watches_after - watches_before) / n_ws, NS_CHILDREN,
                       geteuid() != 0 ? " (not root: each with a user namespace, whose own cost is taken off)" : "");
        bench_out_note(out, "%u sandboxed workspaces (vectora.toml only, masks `.env`, `**/*.pem`, `**/.ssh/**`, `**/.aws/**`), one `terminal /bin/true` each, then idle. Processes per jail: %.0f. The machine delta is MemTotal - MemAvailable after minus before, divided by %u; the baseline is taken once the kernel settled from what ran before (the slab caches shrunk, MemAvailable steady for 3 s: the kernel frees an ended jail's namespaces, stacks and page tables for seconds after it), and `make bench` measures the workspaces and each floor first in a run of their own. It includes the daemon's own growth and per-jail cgroups when the daemon can create them. Other load on the machine moves it too. The cgroup charge is each jail's memory cgroup usage (v1 `memory.usage_in_bytes`, v2 `memory.current`: its pages and the kernel memory accounted to it), median over the jails, plus the daemon's own growth per workspace.",
                       n_ws, samples_median(&procs), n_ws);
        samples_done(&jail);
        samples_done(&procs);
        for (size_t i = 0; i < N_CONN; i++)
                bench_conn_close(&c[i]);
        double ts = now_us();
        bench_daemon_stop(&d);
        bench_log("memory: daemon and %u jails ended in %.1f s", n_ws, (now_us() - ts) / 1e6);
}

int main(int argc, char **argv) {
        unsigned n_ws = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
        bench_scratch();
        double tb = now_us();
        char **ws = calloc(n_ws, sizeof *ws);
        if (!ws)
                bench_die("out of memory");
        for (unsigned i = 0; i < n_ws; i++) {
                char name[32];
                snprintf(name, sizeof name, "ws%04u", i);
                ws[i] = bench_workspace(name, "[sandbox]\nenabled = true\n"
                                              "mask = [\".env\", \"**/*.pem\", \"**/.ssh/**\", \"**/.aws/**\"]\n");
        }
        bench_log("memory: %u workspaces created in %.1f s", n_ws, (now_us() - tb) / 1e6);

        /* VECTORA_BENCH_MEMORY_PHASES: which of the workspaces ("ws") and
         * the two floors ("bare", "ns") to measure, in that order (default
         * all three). Each phase reuses some of the kernel memory the one
         * before it freed (see shrink_slabs()), so `make bench` runs each
         * first, in a run of its own. */
        const char *phases = getenv("VECTORA_BENCH_MEMORY_PHASES");
        if (!phases || !*phases)
                phases = "ws,bare,ns";
        _cleanup_free_ char *list = strdup(phases);
        if (!list)
                bench_die("out of memory");
        /* "memory" when the workspaces are measured, else "memory-FLOOR". */
        char name[64];
        size_t first = strcspn(list, ",");
        bool ws_first = first == 2 && strncmp(list, "ws", 2) == 0;
        snprintf(name, sizeof name, "memory%s%.*s", ws_first ? "" : "-", ws_first ? 0 : (int)first, list);
        BenchOut out;
        bench_out_init(&out, name);
        char *save = NULL;
        for (char *phase = strtok_r(list, ",", &save); phase; phase = strtok_r(NULL, ",", &save)) {
                if (streq(phase, "ws"))
                        workspaces_phase(&out, ws, n_ws);
                else if (streq(phase, "bare"))
                        bare_floor(&out, ws, n_ws, false);
                /* The daemon's way needs root here (mount in the new
                 * namespace); as a normal user the daemon adds a user
                 * namespace of its own. */
                else if (streq(phase, "ns") && geteuid() == 0)
                        bare_floor(&out, ws, n_ws, true);
                else if (streq(phase, "ns"))
                        bench_log("memory: floor in their own pid namespace: not measured (not root)");
                else
                        bench_die("VECTORA_BENCH_MEMORY_PHASES: unknown phase '%s' (ws, bare, ns)", phase);
        }
        bench_out_print(&out);
        for (unsigned i = 0; i < n_ws; i++)
                free(ws[i]);
        free(ws);
        bench_scratch_cleanup();
        return 0;
}
