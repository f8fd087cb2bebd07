/* SPDX-License-Identifier: MIT */
/* Warm exec: `terminal` running /bin/true through a warm sandboxed
 * workspace of the daemon, against the direct paths a platform would use
 * (posix_spawn, a vfork-style clone as the worker does it, and fork+exec
 * for reference), the same call in an unsandboxed workspace, and a fresh
 * bwrap per call with the same policy (seccomp included) at 0, 50 and 300
 * masked files. Beside them, the probes of the per-stage breakdown: a
 * posix_spawn capturing output through pipes, a socket round trip to an
 * echoing process, the same through a zero-work relay process (4 hops, the
 * floor of any client -> daemon -> worker design), and a request the daemon
 * answers by itself.
 *
 * The alternatives are interleaved call by call (A B C A B C ...), so that
 * drift on a noisy machine lands on all of them alike; ratios are taken
 * round by round. Usage: bench-exec [ROUNDS [CALLS_PER_ROUND]]. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"

#include "common.h"
#include "stats.h"

#define N_MASKS 3
static const unsigned mask_counts[N_MASKS] = { 0, 50, 300 };

static char *masked_workspace(unsigned n) {
        char name[32];
        snprintf(name, sizeof name, "ws-m%u", n);
        /* One pattern in every case; only the number of files it hits changes. */
        char *ws = bench_workspace(name, "[sandbox]\nenabled = true\nmask = [\"*.secret\"]\n");
        for (unsigned i = 0; i < n; i++) {
                char f[600];
                snprintf(f, sizeof f, "%s/s%03u.secret", ws, i);
                bench_write_file(f, "x", 1);
        }
        return ws;
}

typedef struct Warm {
        char *req;
        size_t len;
        bool sandboxed;
} Warm;

static double warm_call(BenchConn *c, const Warm *w, double *ret_worker_us) {
        JsonlMsg m = JSONL_MSG_INIT;
        double t0 = now_us();
        bench_send_bytes(c, w->req, w->len);
        bench_recv(c, &m);
        double t = now_us() - t0;
        bench_check_ok(&m, "terminal /bin/true");
        if (json_is_true(json_object_get(m.obj, "sandboxed")) != w->sandboxed)
                bench_die("the daemon answered with the wrong sandbox state");
        *ret_worker_us = (double)json_integer_value(json_object_get(m.obj, "duration_us"));
        jsonl_msg_done(&m);
        return t;
}

/* A request the daemon decodes, resolves (workspace, policy, protected
 * paths) and answers itself (bad_request from the argument decoding, the
 * audit record written): the client<->daemon part of a call without the
 * worker. */
static double daemon_only_call(BenchConn *c, const Warm *w) {
        JsonlMsg m = JSONL_MSG_INIT;
        double t0 = now_us();
        bench_send_bytes(c, w->req, w->len);
        bench_recv(c, &m);
        double t = now_us() - t0;
        json_t *e = json_object_get(m.obj, "error");
        if (json_is_true(json_object_get(m.obj, "ok")) ||
            !json_equal(json_object_get(e, "code"), json_string(api_error_name(API_ERROR_BAD_REQUEST))))
                bench_die("the daemon-only probe was not answered bad_request");
        jsonl_msg_done(&m);
        return t;
}

/* Two processes passing a request-sized line and a reply-sized line over
 * a socket pair: two hops, each a wake-up of the other process, as
 * between client and daemon (and again between daemon and worker). */
typedef struct Echo {
        int fd;
        pid_t pid;
        char req[128], reply[384];
} Echo;

static void echo_start(Echo *e) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                bench_die("socketpair: %m");
        memset(e->req, 'q', sizeof e->req);
        memset(e->reply, 'r', sizeof e->reply);
        e->pid = fork();
        if (e->pid < 0)
                bench_die("fork: %m");
        if (e->pid == 0) {
                close(sv[0]);
                char buf[sizeof e->req];
                for (;;) {
                        size_t got = 0;
                        while (got < sizeof buf) {
                                ssize_t n = read(sv[1], buf + got, sizeof buf - got);
                                if (n <= 0)
                                        _exit(0);
                                got += (size_t)n;
                        }
                        if (write(sv[1], e->reply, sizeof e->reply) != (ssize_t)sizeof e->reply)
                                _exit(1);
                }
        }
        close(sv[1]);
        e->fd = sv[0];
}

static double echo_round_trip(Echo *e) {
        char buf[sizeof e->reply];
        double t0 = now_us();
        if (write(e->fd, e->req, sizeof e->req) != (ssize_t)sizeof e->req)
                bench_die("echo write: %m");
        size_t got = 0;
        while (got < sizeof buf) {
                ssize_t n = read(e->fd, buf + got, sizeof buf - got);
                if (n <= 0)
                        bench_die("echo read: %m");
                got += (size_t)n;
        }
        return now_us() - t0;
}

static void echo_stop(Echo *e) {
        e->fd = safe_close(e->fd);
        bench_wait(e->pid);
}

static Warm warm_request(const char *ws, bool sandboxed) {
        json_t *o = json_pack("{s:s,s:s,s:[s]}", "tool", api_tool_name(API_TOOL_TERMINAL), "workspace", ws, "argv", "/bin/true");
        Warm w = { .sandboxed = sandboxed };
        w.req = bench_encode(o, 0, &w.len);
        json_decref(o);
        return w;
}

int main(int argc, char **argv) {
        unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 20;
        unsigned calls = argc > 2 ? (unsigned)atoi(argv[2]) : 50;
        /* One per-call bwrap of each kind every this many warm calls: it is
         * 5-30x slower, and its spread is narrow. */
        unsigned percall_every = 6;

        bench_scratch();
        char *ws_m[N_MASKS];
        for (size_t i = 0; i < N_MASKS; i++)
                ws_m[i] = masked_workspace(mask_counts[i]);
        char *ws_un = bench_workspace("ws-unsandboxed", NULL);

        BenchDaemon d;
        bench_daemon_start(&d, 16);
        BenchConn c;
        bench_connect(&c, d.socket);

        Warm w_un = warm_request(ws_un, false), w_m[N_MASKS];
        json_t *bad = json_pack("{s:s,s:s,s:s}", "tool", api_tool_name(API_TOOL_TERMINAL), "workspace", ws_m[0], "argv", "/bin/true");
        Warm w_bad = { 0 };
        w_bad.req = bench_encode(bad, 0, &w_bad.len);
        json_decref(bad);
        Echo echo;
        echo_start(&echo);
        BenchRelay relay;
        bench_relay_start(&relay, sizeof echo.req, sizeof echo.reply);
        for (size_t i = 0; i < N_MASKS; i++)
                w_m[i] = warm_request(ws_m[i], true);
        BenchPercall pc[N_MASKS];
        for (size_t i = 0; i < N_MASKS; i++) {
                bench_percall_prepare(&pc[i], ws_m[i]);
                if (pc[i].n_masked != mask_counts[i])
                        bench_die("%s: %zu paths masked, expected %u", ws_m[i], pc[i].n_masked, mask_counts[i]);
        }

        char *truth[] = { "/bin/true", NULL };
        size_t captured;
        /* Warm up: spawns the workers, faults in the page cache and the bench itself. */
        double dummy;
        for (int k = 0; k < 20; k++) {
                warm_call(&c, &w_un, &dummy);
                for (size_t i = 0; i < N_MASKS; i++)
                        warm_call(&c, &w_m[i], &dummy);
                bench_fork_exec(truth, -1, -1);
                bench_posix_spawn_exec(truth, -1, -1);
                bench_vfork_exec(truth, -1, -1);
                bench_posix_spawn_capture(truth, &captured);
                daemon_only_call(&c, &w_bad);
                echo_round_trip(&echo);
                bench_relay_round_trip(&relay);
        }
        for (size_t i = 0; i < N_MASKS; i++)
                if (bench_percall_run(&pc[i], truth, -1, -1) != 0)
                        bench_die("the per-call bwrap failed for %s (see its message above)", ws_m[i]);

        Samples d_fork = { 0 }, d_spawn = { 0 }, d_vfork = { 0 }, d_pipes = { 0 }, daemon_only = { 0 }, hop = { 0 }, relay4 = { 0 },
                un = { 0 }, un_worker = { 0 }, warm[N_MASKS] = { 0 }, worker[N_MASKS] = { 0 }, percall[N_MASKS] = { 0 };
        bench_log("exec: %u rounds x %u calls per alternative", rounds, calls);
        for (unsigned r = 0; r < rounds; r++) {
                for (unsigned k = 0; k < calls; k++) {
                        double t0 = now_us();
                        int st = bench_fork_exec(truth, -1, -1);
                        samples_add(&d_fork, r, now_us() - t0);
                        t0 = now_us();
                        st |= bench_posix_spawn_exec(truth, -1, -1);
                        samples_add(&d_spawn, r, now_us() - t0);
                        t0 = now_us();
                        st |= bench_vfork_exec(truth, -1, -1);
                        samples_add(&d_vfork, r, now_us() - t0);
                        t0 = now_us();
                        st |= bench_posix_spawn_capture(truth, &captured);
                        samples_add(&d_pipes, r, now_us() - t0);
                        if (st != 0)
                                bench_die("/bin/true failed");
                        samples_add(&hop, r, echo_round_trip(&echo));
                        samples_add(&relay4, r, bench_relay_round_trip(&relay));
                        samples_add(&daemon_only, r, daemon_only_call(&c, &w_bad));

                        double wk;
                        samples_add(&un, r, warm_call(&c, &w_un, &wk));
                        samples_add(&un_worker, r, wk);
                        for (size_t i = 0; i < N_MASKS; i++) {
                                samples_add(&warm[i], r, warm_call(&c, &w_m[i], &wk));
                                samples_add(&worker[i], r, wk);
                        }
                        if (k % percall_every == 0)
                                for (size_t i = 0; i < N_MASKS; i++) {
                                        t0 = now_us();
                                        st = bench_percall_run(&pc[i], truth, -1, -1);
                                        double t = now_us() - t0;
                                        if (st != 0)
                                                bench_die("per-call bwrap failed");
                                        samples_add(&percall[i], r, t);
                                }
                }
                bench_log("round %u/%u: posix_spawn %.0f us, sandboxed warm %.0f us, per-call bwrap %.0f us", r + 1,
                          rounds, samples_median(&d_spawn), samples_median(&warm[0]), samples_median(&percall[0]));
        }
        /* The honest baseline is the faster of the two a platform would
         * use; which one it was is said on the page. */
        bool vfork_faster = samples_median(&d_vfork) < samples_median(&d_spawn);

        BenchOut o;
        bench_out_init(&o, "exec");
        const struct {
                const char *key, *label;
                const Samples *s;
        } direct[] = {
                { "exec.direct.spawn", "direct posix_spawn of /bin/true by the benchmark (glibc)", &d_spawn },
                { "exec.direct.vfork", "direct vfork-style clone (CLONE_VM + CLONE_VFORK) + execve of /bin/true", &d_vfork },
                { "exec.direct.fork", "direct fork+exec of /bin/true (reference: what platforms do not use)", &d_fork },
                { "exec.direct.pipes", "direct posix_spawn, stdout+stderr through pipes read to EOF", &d_pipes },
                { "exec.hop", "socket round trip to an echoing process (2 hops, request/reply-sized)", &hop },
                { "exec.relay", "the same through a zero-work relay process (4 hops: client -> relay -> echo -> relay -> client)",
                  &relay4 },
                { "exec.daemon_only", "request answered by the daemon itself (decode, resolve, bad_request)", &daemon_only },
        };
        for (size_t i = 0; i < ELEMENTSOF(direct); i++)
                bench_out_figure(&o, direct[i].key, direct[i].label, "us", direct[i].s);
        bench_out_figure(&o, "exec.unsandboxed", "terminal /bin/true, unsandboxed workspace (daemon)", "us", &un);
        bench_out_figure(&o, "exec.unsandboxed.worker", "  of which the worker's own exec (duration_us)", "us", &un_worker);
        for (size_t i = 0; i < N_MASKS; i++) {
                char key[64], label[160];
                snprintf(key, sizeof key, "exec.warm.m%u", mask_counts[i]);
                snprintf(label, sizeof label, "terminal /bin/true, warm sandboxed workspace, %u masked files (daemon)",
                         mask_counts[i]);
                bench_out_figure(&o, key, label, "us", &warm[i]);
                snprintf(key, sizeof key, "exec.warm.m%u.worker", mask_counts[i]);
                bench_out_figure(&o, key, "  of which the worker's own exec (duration_us)", "us", &worker[i]);
                snprintf(key, sizeof key, "exec.percall.m%u", mask_counts[i]);
                snprintf(label, sizeof label, "fresh bwrap per call, same policy + seccomp, %u masked files", mask_counts[i]);
                bench_out_figure(&o, key, label, "us", &percall[i]);
        }
        const char *best = vfork_faster ? "exec.direct.vfork" : "exec.direct.spawn";
        bench_out_ratio(&o, "exec.ratio.warm_direct", "warm sandboxed (0 masks) / direct posix_spawn", "exec.warm.m0",
                        "exec.direct.spawn");
        bench_out_ratio(&o, "exec.ratio.warm_vfork", "warm sandboxed (0 masks) / direct vfork-style clone",
                        "exec.warm.m0", "exec.direct.vfork");
        bench_out_ratio(&o, "exec.ratio.warm_best", vfork_faster
                                ? "warm sandboxed (0 masks) / fastest direct path (this run: the vfork-style clone)"
                                : "warm sandboxed (0 masks) / fastest direct path (this run: posix_spawn)",
                        "exec.warm.m0", best);
        bench_out_ratio(&o, "exec.ratio.warm_fork", "warm sandboxed (0 masks) / direct fork+exec (reference)",
                        "exec.warm.m0", "exec.direct.fork");
        bench_out_ratio(&o, "exec.ratio.unsandboxed_direct", "unsandboxed via daemon / direct posix_spawn",
                        "exec.unsandboxed", "exec.direct.spawn");
        bench_out_ratio(&o, "exec.ratio.warm_unsandboxed", "warm sandboxed (0 masks) / unsandboxed via daemon",
                        "exec.warm.m0", "exec.unsandboxed");
        bench_out_value(&o, "exec.best_is_vfork", vfork_faster);
        for (size_t i = 0; i < N_MASKS; i++) {
                char key[64], label[128], num[64], den[64];
                snprintf(key, sizeof key, "exec.ratio.percall_warm.m%u", mask_counts[i]);
                snprintf(label, sizeof label, "per-call bwrap / warm sandboxed, %u masked files", mask_counts[i]);
                snprintf(num, sizeof num, "exec.percall.m%u", mask_counts[i]);
                snprintf(den, sizeof den, "exec.warm.m%u", mask_counts[i]);
                bench_out_ratio(&o, key, label, num, den);
        }
        bench_out_note(&o, "Each round interleaves the alternatives call by call; %u rounds of %u calls (per-call bwrap every %u-th call).",
                       rounds, calls, percall_every);
        bench_out_note(&o, "Direct paths: posix_spawn is glibc's (clone(CLONE_VM|CLONE_VFORK) inside, what Python's os.posix_spawn and subprocess use); the vfork-style clone is clone(CLONE_VM|CLONE_VFORK) + execve by hand, as the worker starts commands; fork+exec copies the page tables and is kept for reference only. Each starts /bin/true with stdin/stdout on /dev/null and waits for it. Ratios against the direct path use posix_spawn, and the fastest of the two where said.");
        bench_out_note(&o, "The per-call model is started the same cheap way (clone(CLONE_VM|CLONE_VFORK)); it is bwrap with the daemon's own argv for the workspace (namespaces, binds, masks, uid) plus --seccomp with the same compiled filter, running /bin/true; it has no Landlock (bwrap has no option for it), which only favours it.");
        bench_out_print(&o);

        echo_stop(&echo);
        bench_relay_stop(&relay);
        free(w_bad.req);
        bench_conn_close(&c);
        bench_daemon_stop(&d);
        for (size_t i = 0; i < N_MASKS; i++) {
                bench_percall_done(&pc[i]);
                free(ws_m[i]);
                free(w_m[i].req);
                samples_done(&warm[i]);
                samples_done(&worker[i]);
                samples_done(&percall[i]);
        }
        free(w_un.req);
        free(ws_un);
        Samples *all[] = { &d_fork, &d_spawn, &d_vfork, &d_pipes, &daemon_only, &hop, &relay4 };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                samples_done(all[i]);
        samples_done(&un);
        samples_done(&un_worker);
        bench_scratch_cleanup();
        return 0;
}
