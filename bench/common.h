/* SPDX-License-Identifier: MIT */
#pragma once

/* What every benchmark shares: a clock, a scratch directory that jails may
 * use (owned by nobody when we run as root: jails refuse root-owned
 * workspaces), a daemon started for the run, a connection to its socket,
 * and the per-call bwrap model built from the very same launch the daemon
 * would use. Benchmarks are programs: setup failures end them with a
 * message (bench_die), measurement code stays free of error plumbing. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "api.h"
#include "jsonl.h"
#include "launch.h"

_noreturn_ void bench_die(const char *fmt, ...) _printf_(1, 2);
void bench_log(const char *fmt, ...) _printf_(1, 2);

static inline double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Build tree: $VECTORA_BUILD_ROOT, else the one this was compiled in. */
const char *bench_build_root(void);

/* A fresh scratch directory /tmp/vectora-bench.XXXXXX (under
 * $BENCH_SCRATCH_BASE instead of /tmp when set; 0755, owned by the
 * jail user), with XDG_RUNTIME_DIR pointed inside it so nothing is left
 * elsewhere. Removed by bench_scratch_cleanup(), also on SIGINT/SIGTERM. */
const char *bench_scratch(void);
void bench_scratch_cleanup(void);

/* Owner given to everything the jails touch: nobody (65534) as root, else us. */
void bench_owner(uid_t *uid, gid_t *gid);
void bench_mkdir(const char *path);
void bench_write_file(const char *path, const void *data, size_t len);
/* Creates scratch/NAME with a vectora.toml holding toml (none when NULL). Returns the path (caller frees). */
char *bench_workspace(const char *name, const char *toml);
void bench_rm_rf(const char *path);

typedef struct BenchDaemon {
        pid_t pid;
        char *socket;
} BenchDaemon;

/* Starts vectora-sandboxd in the foreground on a socket in the scratch
 * directory (log and audit log there too) and waits until it accepts. */
void bench_daemon_start(BenchDaemon *d, unsigned max_workers);
/* SIGTERM (the daemon ends its workers), then SIGKILL after 10 s. */
void bench_daemon_stop(BenchDaemon *d);

typedef struct BenchConn {
        int fd;
        JsonlReader *rd;
        uint64_t next_id;
} BenchConn;

void bench_connect(BenchConn *c, const char *socket);
void bench_conn_close(BenchConn *c);
/* Sends obj (borrowed; "id" is set to the next id, returned) plus raw. */
uint64_t bench_send(BenchConn *c, json_t *obj, const void *raw, size_t raw_len);
/* Sends a pre-encoded request (header line and raw bytes). */
void bench_send_bytes(BenchConn *c, const void *p, size_t n);
/* Blocks for the next reply. */
void bench_recv(BenchConn *c, JsonlMsg *ret);
/* Next reply already buffered, without reading: 0, or -EAGAIN. */
int bench_try_next(BenchConn *c, JsonlMsg *ret);
/* Dies unless the reply says ok (and, for terminal, exit_code 0). */
void bench_check_ok(const JsonlMsg *m, const char *what);
/* One request, one reply; dies on failure. */
void bench_call(BenchConn *c, json_t *obj, const void *raw, size_t raw_len, JsonlMsg *ret, const char *what);
/* Pre-encodes {"id":0,...obj} as one header line (plus "raw" when raw_len). */
char *bench_encode(json_t *obj, size_t raw_len, size_t *ret_len);

/* The per-call model: a fresh bwrap per call with the workspace's policy
 * exactly as the daemon would launch its worker (same namespaces, mounts,
 * masks, uid), with the same compiled seccomp filter handed to bwrap's
 * --seccomp, running cmd directly instead of the worker. Landlock has no
 * bwrap option, so the per-call model runs without it (that only makes the
 * alternative cheaper). */
typedef struct BenchPercall {
        VsLaunch *launch;
        char **argv_prefix; /* bwrap ... --seccomp 3 -- (without the command) */
        int bpf_fd;         /* memfd holding the filter */
        char *bwrap_path;   /* argv_prefix[0] looked up in PATH */
        size_t n_masked;
} BenchPercall;

void bench_percall_prepare(BenchPercall *p, const char *workspace);
/* Runs cmd in a fresh jail; stdin/stdout from the given fds (-1: /dev/null).
 * Returns the wait status. */
int bench_percall_run(BenchPercall *p, char *const *cmd, int stdin_fd, int stdout_fd);
/* The same without waiting (the caller feeds or drains a pipe), then bench_wait(). */
pid_t bench_percall_spawn(BenchPercall *p, char *const *cmd, int stdin_fd, int stdout_fd);
/* The same, the child joining the cgroups whose cgroup.procs files are
 * given (opened O_WRONLY) before it execs bwrap, as the daemon's does;
 * with own_pid_ns (root only) bwrap is pid 1 of a pid namespace of its own
 * with that namespace's /proc, as the daemon starts it. */
pid_t bench_percall_spawn_in(BenchPercall *p, char *const *cmd, int stdin_fd, int stdout_fd, const int *cgroup_fds,
                             size_t n_cgroup_fds, bool own_pid_ns);
int bench_wait(pid_t pid);
void bench_percall_done(BenchPercall *p);

/* The direct paths, each starting argv[0] (a path) and waiting for it;
 * they return the wait status. stdin/stdout from the fds given (-1:
 * /dev/null), stderr inherited.
 *   fork + exec: copies the page tables (what the first benchmarks used);
 *   posix_spawn: glibc's, clone(CLONE_VM|CLONE_VFORK) inside (what Python's
 *     os.posix_spawn and subprocess use);
 *   vfork: clone(CLONE_VM|CLONE_VFORK) + execve by hand, as the worker does. */
int bench_fork_exec(char *const *argv, int stdin_fd, int stdout_fd);
int bench_posix_spawn_exec(char *const *argv, int stdin_fd, int stdout_fd);
int bench_vfork_exec(char *const *argv, int stdin_fd, int stdout_fd);
/* posix_spawn with stdout and stderr through pipes read to EOF, as a
 * platform capturing output does (and as the worker does). */
int bench_posix_spawn_capture(char *const *argv, size_t *ret_len);
pid_t bench_posix_spawn(char *const *argv, int stdin_fd, int stdout_fd, int stderr_fd);

/* The floor of a relay architecture: a request-sized message from this
 * process to a relay process, on to an echo process that answers with a
 * reply-sized one, back through the relay (4 hops, as client -> daemon ->
 * worker -> daemon -> client), with no work done anywhere but moving the
 * bytes. The relay polls both of its sockets as the daemon's loop does. */
typedef struct BenchRelay {
        int fd;
        pid_t relay, echo;
        char *req, *reply;
        size_t req_len, reply_len;
} BenchRelay;

void bench_relay_start(BenchRelay *r, size_t req_len, size_t reply_len);
/* One round trip through both, in us. */
double bench_relay_round_trip(BenchRelay *r);
void bench_relay_stop(BenchRelay *r);
