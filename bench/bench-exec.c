/* SPDX-License-Identifier: MIT */
/* Warm exec: `terminal` running /bin/true through a warm sandboxed
 * workspace of the daemon, against a direct fork+exec by this process, the
 * same call in an unsandboxed workspace, and a fresh bwrap per call with
 * the same policy (seccomp included) at 0, 50 and 300 masked files.
 *
 * The alternatives are interleaved call by call (A B C A B C ...), so that
 * drift on a noisy machine lands on all of them alike; ratios are taken
 * round by round. Usage: bench-exec [ROUNDS [CALLS_PER_ROUND]]. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

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

static Warm warm_request(const char *ws, bool sandboxed) {
        json_t *o = json_pack("{s:s,s:s,s:[s]}", "tool", "terminal", "workspace", ws, "argv", "/bin/true");
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
        for (size_t i = 0; i < N_MASKS; i++)
                w_m[i] = warm_request(ws_m[i], true);
        BenchPercall pc[N_MASKS];
        for (size_t i = 0; i < N_MASKS; i++) {
                bench_percall_prepare(&pc[i], ws_m[i]);
                if (pc[i].n_masked != mask_counts[i])
                        bench_die("%s: %zu paths masked, expected %u", ws_m[i], pc[i].n_masked, mask_counts[i]);
        }

        char *truth[] = { "/bin/true", NULL };
        /* Warm up: spawns the workers, faults in the page cache and the bench itself. */
        double dummy;
        for (int k = 0; k < 20; k++) {
                warm_call(&c, &w_un, &dummy);
                for (size_t i = 0; i < N_MASKS; i++)
                        warm_call(&c, &w_m[i], &dummy);
                bench_fork_exec(truth, -1, -1);
        }
        for (size_t i = 0; i < N_MASKS; i++)
                if (bench_percall_run(&pc[i], truth, -1, -1) != 0)
                        bench_die("the per-call bwrap failed for %s (see its message above)", ws_m[i]);

        Samples direct = { 0 }, un = { 0 }, un_worker = { 0 }, warm[N_MASKS] = { 0 }, worker[N_MASKS] = { 0 },
                percall[N_MASKS] = { 0 };
        bench_log("exec: %u rounds x %u calls per alternative", rounds, calls);
        for (unsigned r = 0; r < rounds; r++) {
                for (unsigned k = 0; k < calls; k++) {
                        double t0 = now_us();
                        int st = bench_fork_exec(truth, -1, -1);
                        double t = now_us() - t0;
                        if (st != 0)
                                bench_die("/bin/true failed");
                        samples_add(&direct, r, t);

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
                                        t = now_us() - t0;
                                        if (st != 0)
                                                bench_die("per-call bwrap failed");
                                        samples_add(&percall[i], r, t);
                                }
                }
                bench_log("round %u/%u: direct %.0f us, sandboxed warm %.0f us, per-call bwrap %.0f us", r + 1, rounds,
                          samples_median(&direct), samples_median(&warm[0]), samples_median(&percall[0]));
        }

        BenchOut o;
        bench_out_init(&o, "exec");
        bench_out_figure(&o, "exec.direct", "direct fork+exec of /bin/true by the benchmark", "us", &direct);
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
        bench_out_ratio(&o, "exec.ratio.warm_direct", "warm sandboxed (0 masks) / direct fork+exec", "exec.warm.m0",
                        "exec.direct");
        bench_out_ratio(&o, "exec.ratio.unsandboxed_direct", "unsandboxed via daemon / direct fork+exec",
                        "exec.unsandboxed", "exec.direct");
        bench_out_ratio(&o, "exec.ratio.warm_unsandboxed", "warm sandboxed (0 masks) / unsandboxed via daemon",
                        "exec.warm.m0", "exec.unsandboxed");
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
        bench_out_note(&o, "The per-call model is bwrap with the daemon's own argv for the workspace (namespaces, binds, masks, uid) plus --seccomp with the same compiled filter, running /bin/true; it has no Landlock (bwrap has no option for it), which only favours it.");
        bench_out_print(&o);

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
        samples_done(&direct);
        samples_done(&un);
        samples_done(&un_worker);
        bench_scratch_cleanup();
        return 0;
}
