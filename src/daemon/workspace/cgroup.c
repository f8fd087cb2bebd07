/* SPDX-License-Identifier: MIT */
/* Per-workspace pids and memory limits.
 *
 * Preferred: a cgroup per workspace (v2: /sys/fs/cgroup/vectora-sandboxd/
 * INSTANCE/ws-HASH with pids.max and memory.max; v1: the same under the
 * pids and memory hierarchies; INSTANCE is the daemon's, instance.c). The
 * root monitor makes a workspace's groups and hands over descriptors of
 * them (monitor-link.h, cgroup_make): nothing here names their paths. The
 * spawned child joins them before it execs
 * (src/core/launch/worker-spawn.c), so the whole jail is counted from its first
 * process, and nothing has to scan /proc for its tree.
 *
 * Without cgroups (an unprivileged daemon, a read-only cgroupfs), the worker
 * still sets RLIMIT_NPROC (counted per user namespace, i.e. per jail) and
 * RLIMIT_DATA per command (the `limits` of init): memory is then not limited
 * per workspace, and status and every result report that as degraded, never
 * silently. */
#include <ctype.h>
#include <signal.h>
#include <time.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cgroup-kill.h"
#include "cgroup.h"
#include "fd-util.h"
#include "instance.h"
#include "log.h"
#include "monitor-link.h"
#include "monitor-proto.h"
#include "path-util.h"
#include "proc-tree.h"
#include "server.h"
#include "strv.h"
#include "time-util.h"
#include "workspace.h"
#include "worker-link.h"

#define CG_ROOT "/sys/fs/cgroup"
#define CG_NAME "vectora-sandboxd"

static int write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, text, strlen(text));
        safe_close(fd);
        return r;
}

static bool has_word(const char *text, const char *w) {
        size_t n = strlen(w);
        for (const char *p = text; (p = strstr(p, w)); p += n)
                if ((p == text || isspace((unsigned char)p[-1])) && (!p[n] || isspace((unsigned char)p[n])))
                        return true;
        return false;
}

static void set_why(Server *srv, const char *why) {
        free(srv->cgroup_why_not);
        srv->cgroup_why_not = strdup(why);
}

static int make_group(const char *parent, const char *name, char **ret);

static const char *srv_group_kind(const Server *srv, int i) {
        return srv->cgroup_version == 2 ? "cgroup" : i == 0 ? "pids cgroup" : "memory cgroup";
}

static bool is_instance_name(const char *s) {
        if (strlen(s) != INSTANCE_ID_LEN)
                return false;
        for (const char *p = s; *p; p++)
                if (!isxdigit((unsigned char)*p))
                        return false;
        return true;
}

/* Instance groups whose daemon is gone (its lock is free): their jails
 * serve nobody any more. A live instance's groups are never touched. */
static void sweep_dead_instances(Server *srv, const char *top) {
        DIR *d = opendir(top);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!is_instance_name(de->d_name) || streq(de->d_name, srv->instance_id) ||
                    instance_alive(srv->opt.lock_root, de->d_name))
                        continue;
                _cleanup_free_ char *p = path_join(top, de->d_name);
                if (!p)
                        continue;
                (void)cgroup_sweep(p, true, true);
                (void)rmdir(p);
        }
        closedir(d);
}

/* Creates top/ID, with the controllers delegated on v2, and cleans up. */
static int make_instance_group(Server *srv, const char *top, bool v2, char **ret) {
        if (mkdir(top, 0755) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_free_ char *ctl = path_join(top, "cgroup.subtree_control");
        /* A group with no process of its own may delegate to its children. */
        if (v2 && (!ctl || write_file(ctl, "+pids +memory") < 0))
                return -EPERM;
        sweep_dead_instances(srv, top);
        _cleanup_free_ char *g = NULL;
        int r = make_group(top, srv->instance_id, &g);
        if (r < 0)
                return r;
        free(ctl);
        ctl = path_join(g, "cgroup.subtree_control");
        if (v2 && (!ctl || write_file(ctl, "+pids +memory") < 0))
                return -EPERM;
        /* Ours alone (the lock is held): what is left is from our crash. */
        (void)cgroup_sweep(g, true, true);
        *ret = TAKE_PTR(g);
        return 0;
}

void cgroup_probe(Server *srv) {
        srv->cgroup_version = 0;
        if (geteuid() != 0)
                return set_why(srv, "cgroups need a daemon running as root");
        _cleanup_free_ char *ctl = NULL;
        size_t len;
        if (read_file_at(AT_FDCWD, CG_ROOT "/cgroup.controllers", 4096, &ctl, &len) == 0) {
                if (!has_word(ctl, "pids") || !has_word(ctl, "memory"))
                        return set_why(srv, "cgroup v2 lacks the pids or memory controller");
                if (write_file(CG_ROOT "/cgroup.subtree_control", "+pids +memory") < 0)
                        return set_why(srv, "cannot enable the pids and memory controllers in " CG_ROOT);
                if (make_instance_group(srv, CG_ROOT "/" CG_NAME, true, &srv->cgroup_parents[0]) < 0)
                        return set_why(srv, "cannot create and delegate " CG_ROOT "/" CG_NAME " (read-only cgroupfs?)");
                srv->cgroup_version = 2;
                return;
        }
        struct stat st;
        if (stat(CG_ROOT "/pids/cgroup.procs", &st) == 0) {
                if (make_instance_group(srv, CG_ROOT "/pids/" CG_NAME, false, &srv->cgroup_parents[0]) < 0)
                        return set_why(srv, "cannot create " CG_ROOT "/pids/" CG_NAME " (read-only cgroupfs?)");
                if (stat(CG_ROOT "/memory/cgroup.procs", &st) == 0)
                        (void)make_instance_group(srv, CG_ROOT "/memory/" CG_NAME, false, &srv->cgroup_parents[1]);
                srv->cgroup_version = 1;
                return;
        }
        set_why(srv, "no writable cgroup hierarchy with the pids controller");
}

void cgroup_kill_leftovers(Workspace *ws) {
        for (int i = 0; i < 2; i++)
                if (ws->cgroup_fds[i] >= 0)
                        (void)cgroup_kill_at(ws->cgroup_fds[i], false);
}

void cgroup_kill(Workspace *ws) {
        for (int i = 0; i < 2; i++)
                if (ws->cgroup_fds[i] >= 0 && !cgroup_kill_at(ws->cgroup_fds[i], true))
                        log_warning("workspace %s: processes remain in its %s group after SIGKILL", ws->path,
                                    srv_group_kind(ws->srv, i));
}

/* Unsandboxed workspaces' workers (and what they start) join one group of
 * the instance, with no limit (unsandboxed is as if this layer were not
 * there): only so that a daemon that ends ends them too, a clean stop here
 * and a killed daemon by the next start's sweep of dead instances. */
int cgroup_host_procs_fd(Server *srv) {
        if (!srv->cgroup_parents[0])
                return -ENOENT;
        if (!srv->host_cgroup) {
                int r = make_group(srv->cgroup_parents[0], "host", &srv->host_cgroup);
                if (r < 0)
                        return r;
        }
        _cleanup_free_ char *procs = path_join(srv->host_cgroup, "cgroup.procs");
        if (!procs)
                return -ENOMEM;
        int fd = open(procs, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

void cgroup_kill_host(Server *srv) {
        if (!srv->host_cgroup)
                return;
        if (!cgroup_kill_path(srv->host_cgroup, true))
                log_warning("unsandboxed processes remain in %s after SIGKILL", srv->host_cgroup);
        if (rmdir(srv->host_cgroup) < 0 && errno != ENOENT)
                log_warning("cannot remove %s: %m", srv->host_cgroup);
        free(srv->host_cgroup);
        srv->host_cgroup = NULL;
}

void cgroup_finish(Server *srv) {
        cgroup_kill_host(srv);
        for (int i = 0; i < 2; i++)
                if (srv->cgroup_parents[i]) {
                        if (rmdir(srv->cgroup_parents[i]) < 0 && errno != ENOENT)
                                log_warning("cannot remove %s: %m", srv->cgroup_parents[i]);
                        free(srv->cgroup_parents[i]);
                        srv->cgroup_parents[i] = NULL;
                }
}

/* Looked at after each call: the file stays open (its open, two reads and
 * close were 23 of the 141 us the daemon spent in system calls per call,
 * strace -c over 1 000 warm calls). */
/* A number read from a file of [0] kept open in *fd: pids.current's
 * whole text, or the value after "max " in pids.events. */
static bool read_pids_file(Workspace *ws, int *fd, const char *name, const char *key, uint64_t *ret) {
        if (*fd < 0 && (*fd = openat(ws->cgroup_fds[0], name, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
                *fd = -EBADF;
                return false;
        }
        char text[128];
        ssize_t n = pread(*fd, text, sizeof text - 1, 0);
        if (n <= 0)
                return false;
        text[n] = 0;
        const char *at = text;
        if (key && !(at = strstr(text, key)))
                return false;
        *ret = strtoull(at + (key ? strlen(key) : 0), NULL, 10);
        return true;
}

/* Without a cgroup only the kernel's per-user count (RLIMIT_NPROC in the
 * jail's user namespace) holds the limit, and the daemon cannot read it:
 * the threads of the jail's own pid namespace are counted instead (the
 * limit counts threads: one leftover with many holds it as well as many
 * leftovers). A fork bomb's processes at an RLIMIT_NPROC limit keep the
 * count near it (each one whose fork fails ends and makes room for
 * another's), but swing: on a loaded host one look at a bomb at pids = 64
 * found 46 to 51 threads at the median, under the mark as often as over
 * it, and the next command found the jail full. So a look past a quarter
 * of the limit looks again, up to JAIL_LOOKS times: the bomb is caught
 * when any look is near the limit, or when most of the processes of a
 * later look were not there at the first while as many still stand
 * (leftovers that keep forking and ending). The looks are spaced 1, 2, 4,
 * 8 and 16 ms apart: on a host busy enough (CI, every core taken) the
 * bomb's shells were seen barely moving over five looks a millisecond
 * apart (30 then 32 threads, 2 new) and the reply went without a restart
 * (51 shells stood after it), while the same bomb 300 ms later had 53 of
 * its 55 processes new. Looks that ended undecided after 31 ms left 46
 * shells at a reply (CI, ASan, as the user, beside the suite's load; the
 * miscounted walk below is the other way that happened), so the looks go
 * on to 32, 64 and 128 ms apart (255 ms in all) while they stay
 * undecided: only a reply whose
 * jail holds more than a quarter of its limit in processes that keep
 * running or changing waits that long. Quiet leftovers (a server) end the
 * looks at the second: the same processes, none running or runnable. The looks after
 * the first are the caller's to space (pids_looks_next after
 * pids_looks_delay, on a timer): slept through here, they held the
 * daemon's loop for every workspace. */
#define JAIL_LOOKS 9

/* The walk from the jail's pid 1 reads each process's children, then
 * their tasks: a process that ended between the two is counted among the
 * processes and not among the threads (its children, moved to pid 1
 * already walked, are missed). A starved fork bomb's walk, itself slowed
 * by the load, saw 39 processes and 5 threads, stopped at "under a
 * quarter", and 36 shells were left at the reply. So the quarter that
 * calls for more looks takes the larger of the two counts (looking again
 * costs only time); near the limit is the threads that were there. */
static size_t pids_fresh(const pid_t *was, size_t n_was, const pid_t *now, size_t n_now) {
        size_t fresh = 0, i = 0;
        for (size_t k = 0; k < n_now; k++) {
                while (i < n_was && was[i] < now[k])
                        i++;
                fresh += i == n_was || was[i] != now[k];
        }
        return fresh;
}

/* The first look of a jail without a conclusive cgroup: from its pid 1. */
static int jail_look_first(PidsLooks *st, const WorkerLink *l, uint64_t lim) {
        if (!l || l->pid <= 0 || !l->launch || !l->launch->own_pid_ns)
                return 0;
        size_t threads = 0;
        int n0 = proc_tree_pids(l->pid, &st->first, &threads);
        if (n0 <= 0 || (uint64_t)MAX(threads, (size_t)n0) < lim / 4) {
                pids_looks_done(st);
                return 0;
        }
        if ((uint64_t)threads >= lim - lim / 4) {
                pids_looks_done(st);
                return 1;
        }
        st->root = l->pid;
        st->lim = lim;
        st->n_first = (size_t)n0;
        st->look = 1;
        return -EAGAIN;
}

int pids_looks_next(PidsLooks *st) {
        if (!st->first)
                return 0;
        size_t threads = 0;
        _cleanup_free_ pid_t *now = NULL;
        int n = proc_tree_pids(st->root, &now, &threads);
        int v = -EAGAIN;
        if (n <= 0)
                v = 0;
        else if ((uint64_t)threads >= st->lim - st->lim / 4)
                v = 1;
        else {
                size_t fresh = pids_fresh(st->first, st->n_first, now, (size_t)n);
                if ((uint64_t)MAX(threads, (size_t)n) >= st->lim / 4 && fresh * 2 >= (size_t)n)
                        /* Most of the processes new since the first look
                         * while as many still stand: leftovers that keep
                         * forking. */
                        v = 1;
                else if (st->look == JAIL_LOOKS - 1 || (fresh == 0 && (size_t)n <= st->n_first && !procs_any_active(now, (size_t)n)))
                        /* The same processes or fewer, none running or
                         * waiting to run: they stand still (a bomb starved
                         * of the CPU has runnable shells) or die out (a
                         * bomb of 58 down to the idle jail's 2 was looked
                         * at for the whole 255 ms). */
                        v = 0;
        }
        st->look++;
        if (v != -EAGAIN)
                pids_looks_done(st);
        return v;
}

unsigned pids_looks_delay(const PidsLooks *st) {
        return 1u << (st->look > 0 ? st->look - 1 : 0);
}

void pids_looks_done(PidsLooks *st) {
        free(st->first);
        st->first = NULL;
        st->n_first = 0;
}

int cgroup_pids_look(Workspace *ws, const WorkerLink *l, PidsLooks *st) {
        *st = (PidsLooks){ 0 };
        if (!ws->policy || !ws->policy->limits.pids)
                return 0;
        uint64_t lim = ws->policy->limits.pids;
        if (ws->cgroup_fds[0] < 0)
                return jail_look_first(st, l, lim);
        uint64_t cur = 0, refused = 0;
        if (!read_pids_file(ws, &ws->pids_fd, "pids.current", NULL, &cur))
                return 0;
        /* Near the limit now; or forks were refused at the limit since the
         * last look while more than the idle jail (its pid 1 and the
         * worker) still runs. A fork bomb's leftovers swing between full
         * and a trough as their forks fail: a look in the trough alone
         * missed them, and the next call could not fork at all. */
        bool was_refused = false;
        if (read_pids_file(ws, &ws->pids_events_fd, "pids.events", "max ", &refused)) {
                was_refused = refused > ws->pids_refused;
                ws->pids_refused = refused;
        }
        if (cur >= lim - lim / 4 || (was_refused && cur > 2))
                return 1;
        /* The jail's RLIMIT_NPROC is set past pids.max where the group
         * holds the limit (cgroup_nproc_backstop), so the bomb's refused
         * forks are the group's and counted above: at the same value the
         * rlimit, checked first, refused them all and pids.events stayed
         * at 0 (ASan, as root: 46 shells left after a reply that did not
         * restart). Past a quarter of the limit, the looks a daemon without
         * cgroups makes decide as well. */
        return cur >= lim / 4 ? jail_look_first(st, l, lim) : 0;
}

uint64_t cgroup_nproc_backstop(uint64_t pids) {
        return pids > UINT64_MAX / 2 ? UINT64_MAX : pids * 2;
}

/* The descriptors of the workspace's groups, closed; the groups stay. */
static void drop_groups(Workspace *ws) {
        ws->pids_fd = safe_close(ws->pids_fd);
        ws->pids_events_fd = safe_close(ws->pids_events_fd);
        ws->pids_refused = 0;
        for (int i = 0; i < 2; i++)
                ws->cgroup_fds[i] = safe_close(ws->cgroup_fds[i]);
}

void cgroup_release(Workspace *ws) {
        drop_groups(ws);
        /* The monitor removes the groups it made (not while processes
         * remain: a later start reuses them, the instance's end takes
         * them). */
        monitor_link_ws_close(ws->srv, ws->monitor_ws);
        ws->monitor_ws = 0;
}

static int make_group(const char *parent, const char *name, char **ret) {
        char *p = path_join(parent, name);
        if (!p)
                return -ENOMEM;
        if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                int r = -errno;
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

int cgroup_monitor_open(Workspace *ws, uid_t *ret_owner, VsError **err) {
        Server *srv = ws->srv;
        struct stat st;
        if (stat(ws->path, &st) < 0)
                return vs_error_set(err, -errno, "%s: %m", ws->path);
        /* A directory put in the workspace's place since it was opened
         * (another one, perhaps another owner's) is opened anew: the
         * monitor's handle stands for the directory it checked. */
        if (ws->monitor_ws && (st.st_dev != ws->monitor_dev || st.st_ino != ws->monitor_ino)) {
                monitor_link_ws_close(srv, ws->monitor_ws);
                ws->monitor_ws = 0;
        }
        if (!ws->monitor_ws) {
                int r = monitor_link_ws_open(srv, ws->path, st.st_uid, st.st_gid, &ws->monitor_ws, err);
                if (r < 0)
                        return r;
                ws->monitor_dev = st.st_dev;
                ws->monitor_ino = st.st_ino;
        }
        if (ret_owner)
                *ret_owner = st.st_uid;
        return 0;
}

/* The workspace's groups, made and limited by the root monitor (the
 * server names the workspace by the handle the monitor gave when it
 * opened the directory itself; the monitor names the groups). */
static int monitor_groups(Workspace *ws, char **ret_note, VsError **err) {
        int r = cgroup_monitor_open(ws, NULL, err);
        if (r < 0)
                return r;
        const VsLimits *lim = &ws->policy->limits;
        return monitor_link_cgroup_make(ws->srv, ws->monitor_ws, lim->pids, lim->memory, ws->cgroup_fds, ret_note, err);
}

void cgroup_prepare(Workspace *ws) {
        Server *srv = ws->srv;
        const VsLimits *lim = &ws->policy->limits;
        strv_free(ws->limit_notes);
        ws->limit_notes = NULL;
        drop_groups(ws);
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *note = NULL;
        int r = srv->cgroup_version ? monitor_groups(ws, &note, &err) : -ENOENT;
        /* What the groups got (the monitor's bounds: 1 PiB of memory at
         * most, as good as none). */
        unsigned long long pids = monitor_pids_clamp(lim->pids), memory = monitor_memory_clamp(lim->memory);
        /* The refusals counted so far are an earlier jail's: a group the
         * monitor kept (processes remained) counts on from there, and taken
         * from 0 they read as this jail's at its first look (a jail with a
         * server restarted after its first call). */
        if (r >= 0 && !read_pids_file(ws, &ws->pids_events_fd, "pids.events", "max ", &ws->pids_refused))
                ws->pids_refused = 0;
        if (r >= 0 && srv->cgroup_version == 2) {
                strv_extendf(&ws->limit_notes, "pids: cgroup v2 pids.max=%llu", pids);
                strv_extendf(&ws->limit_notes, "memory: cgroup v2 memory.max=%llu", memory);
                ws->limits_degraded = false;
                return;
        }
        if (r >= 0) {
                strv_extendf(&ws->limit_notes, "pids: cgroup v1 pids.max=%llu", pids);
                if (ws->cgroup_fds[1] >= 0) {
                        strv_extendf(&ws->limit_notes, "memory: cgroup v1 memory.limit_in_bytes=%llu", memory);
                        ws->limits_degraded = false;
                } else {
                        strv_extendf(&ws->limit_notes,
                                     "memory: not enforced per workspace (%s); RLIMIT_DATA=%llu per process",
                                     note ? note : "no memory cgroup", (unsigned long long)lim->memory);
                        ws->limits_degraded = true;
                }
                return;
        }
        drop_groups(ws);
        if (srv->cgroup_version)
                log_warning("workspace %s: its cgroups: %s", ws->path, vs_error_message(err));
        const char *why = srv->cgroup_version ? vs_error_message(err) : srv->cgroup_why_not;
        strv_extendf(&ws->limit_notes, "pids: RLIMIT_NPROC=%llu per jail (cgroups unavailable: %s)",
                     (unsigned long long)lim->pids, why);
        strv_extendf(&ws->limit_notes,
                     "memory: not enforced per workspace (cgroups unavailable: %s); RLIMIT_DATA=%llu per process", why,
                     (unsigned long long)lim->memory);
        ws->limits_degraded = true;
}

void cgroup_open_procs(Workspace *ws, int *ret_fd0, int *ret_fd1) {
        int *out[2] = { ret_fd0, ret_fd1 };
        for (int g = 0; g < 2; g++) {
                *out[g] = -EBADF;
                if (ws->cgroup_fds[g] < 0)
                        continue;
                *out[g] = openat(ws->cgroup_fds[g], "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (*out[g] < 0)
                        log_warning("workspace %s: cannot open its %s's cgroup.procs: %m", ws->path,
                                    srv_group_kind(ws->srv, g));
        }
}
