/* SPDX-License-Identifier: MIT */
/* Memory: PSS of the daemon and of each idle workspace's jail processes
 * (bwrap and the worker), and the machine's memory delta for N idle
 * sandboxed workspaces (MemTotal - MemAvailable before and after, which
 * counts user and kernel memory: page tables, kernel stacks, slab for the
 * namespaces and mounts). Also how long starting the N took: the first
 * call of every workspace, 8 in flight at a time over 4 connections.
 * Usage: bench-memory [N]. */
#include <dirent.h>
#include <math.h>
#include <poll.h>
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
        long used, slab, pagetables, kstack;
} Mem;

static Mem mem_now(void) {
        return (Mem){
                .used = meminfo_kb("MemTotal") - meminfo_kb("MemAvailable"),
                .slab = meminfo_kb("Slab"),
                .pagetables = meminfo_kb("PageTables"),
                .kstack = meminfo_kb("KernelStack"),
        };
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
        nanosleep(&settle, NULL);
        long daemon_before = pss_kb(d.pid);
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

        nanosleep(&settle, NULL);
        Mem after = mem_now();
        long daemon_after = pss_kb(d.pid);

        size_t np;
        Proc *ps = all_procs(&np);
        Samples jail = { 0 }, procs = { 0 };
        for (size_t i = 0; i < np; i++)
                if (ps[i].ppid == d.pid) {
                        unsigned count;
                        long kb = tree_pss(ps, np, ps[i].pid, &count);
                        samples_add(&jail, 0, (double)kb);
                        samples_add(&procs, 0, count);
                }
        free(ps);
        if (jail.n < n_ws)
                bench_die("found %zu jails for %u workspaces", jail.n, n_ws);

        double per_ws = (double)(after.used - before.used) / n_ws;
        BenchOut out;
        bench_out_init(&out, "memory");
        Samples dpss = { 0 };
        samples_add(&dpss, 0, (double)daemon_before);
        bench_out_figure(&out, "memory.daemon_pss_1", "daemon PSS with one idle jail", "kB", &dpss);
        samples_done(&dpss);
        samples_add(&dpss, 0, (double)daemon_after);
        char label[160];
        snprintf(label, sizeof label, "daemon PSS with %u idle jails", n_ws);
        bench_out_figure(&out, "memory.daemon_pss_n", label, "kB", &dpss);
        bench_out_figure(&out, "memory.jail_pss", "PSS of one idle jail (bwrap + worker), across jails", "kB", &jail);
        Samples v = { 0 };
        samples_add(&v, 0, per_ws);
        bench_out_figure(&out, "memory.machine_per_ws", "machine memory delta per idle workspace (user + kernel)", "kB", &v);
        samples_done(&v);
        samples_add(&v, 0, (double)(after.slab - before.slab + after.pagetables - before.pagetables + after.kstack -
                                    before.kstack) / n_ws);
        bench_out_figure(&out, "memory.kernel_per_ws", "  of which slab + page tables + kernel stacks", "kB", &v);
        samples_done(&v);
        samples_add(&v, 0, start_s);
        snprintf(label, sizeof label, "time to start %u idle workspaces (first calls, %u in flight)", n_ws, N_CONN * WINDOW);
        bench_out_figure(&out, "memory.start_n", label, "s", &v);
        samples_done(&v);
        bench_out_value(&out, "memory.machine_per_ws_kb", per_ws);
        bench_out_value(&out, "memory.start_1000_s", n_ws == 1000 ? start_s : NAN);
        bench_out_value(&out, "memory.processes_per_jail", samples_median(&procs));
        bench_out_note(&out, "%u sandboxed workspaces (vectora.toml only, masks `.env`, `**/*.pem`, `**/.ssh/**`, `**/.aws/**`), one `terminal /bin/true` each, then idle. Processes per jail: %.0f. The machine delta is MemTotal - MemAvailable after minus before (1 s settle each), divided by %u; it includes the daemon's own growth and per-jail cgroups when the daemon can create them. Other load on the machine moves it too: treat it as an upper bound.",
                       n_ws, samples_median(&procs), n_ws);
        bench_out_print(&out);

        samples_done(&jail);
        samples_done(&procs);
        for (size_t i = 0; i < N_CONN; i++)
                bench_conn_close(&c[i]);
        double ts = now_us();
        bench_daemon_stop(&d);
        bench_log("memory: daemon and %u jails ended in %.1f s", n_ws, (now_us() - ts) / 1e6);
        for (unsigned i = 0; i < n_ws; i++)
                free(ws[i]);
        free(ws);
        bench_scratch_cleanup();
        return 0;
}
