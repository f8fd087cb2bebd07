/* SPDX-License-Identifier: MIT */
/* Scale: 200 workspaces under mixed load from several client connections
 * (each keeping a few calls in flight), sandboxed against unsandboxed,
 * alternating phases (ABAB). Calls: terminal /bin/true 45 %, file_read of
 * a 4 KiB text file 45 %, file_write of 4 KiB 10 %, on a random workspace.
 * Reports aggregate calls per second and per-call latency.
 * Usage: bench-scale [ROUNDS [SECONDS_PER_PHASE [WORKSPACES]]]. */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "stats.h"

#define N_CONN 8
#define DEPTH 4

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) {
        /* xorshift64*: the same call mix for both phases. */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 2685821657736338717u;
}

typedef struct Phase {
        char **ws;
        unsigned n_ws;
        bool sandboxed;
} Phase;

static const char *content4k;

static void send_one(BenchConn *c, const Phase *p, double *sent_at, size_t cap) {
        const char *ws = p->ws[rng() % p->n_ws];
        unsigned op = (unsigned)(rng() % 100);
        json_t *o;
        if (op < 45)
                o = json_pack("{s:s,s:s,s:[s]}", "tool", api_tool_name(API_TOOL_TERMINAL), "workspace", ws, "argv", "/bin/true");
        else if (op < 90)
                o = json_pack("{s:s,s:s,s:s}", "tool", api_tool_name(API_TOOL_FILE_READ), "workspace", ws, "path", "data.txt");
        else
                o = json_pack("{s:s,s:s,s:s,s:s}", "tool", api_tool_name(API_TOOL_FILE_WRITE), "workspace", ws, "path", "out.txt", "content",
                              content4k);
        uint64_t id = c->next_id + 1;
        if (id >= cap)
                bench_die("too many calls for the latency table");
        sent_at[id] = now_us();
        bench_send(c, o, NULL, 0);
        json_decref(o);
}

/* Runs the phase for secs seconds; returns calls per second. */
static double run_phase(BenchConn *c, const Phase *p, double secs, unsigned round, Samples *lat) {
        size_t cap = 2000000;
        double *sent[N_CONN];
        unsigned inflight[N_CONN] = { 0 };
        for (size_t i = 0; i < N_CONN; i++) {
                sent[i] = calloc(cap, sizeof(double));
                if (!sent[i])
                        bench_die("out of memory");
                c[i].next_id = 0;
        }
        double t0 = now_us(), end = t0 + secs * 1e6;
        size_t done = 0;
        for (size_t i = 0; i < N_CONN; i++)
                for (; inflight[i] < DEPTH; inflight[i]++)
                        send_one(&c[i], p, sent[i], cap);
        bool sending = true;
        for (;;) {
                unsigned total = 0;
                for (size_t i = 0; i < N_CONN; i++)
                        total += inflight[i];
                if (total == 0)
                        break;
                struct pollfd pf[N_CONN];
                for (size_t i = 0; i < N_CONN; i++)
                        pf[i] = (struct pollfd){ .fd = c[i].fd, .events = POLLIN };
                if (poll(pf, N_CONN, 10000) <= 0)
                        bench_die("no reply from the daemon in 10 s");
                for (size_t i = 0; i < N_CONN; i++) {
                        if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        ssize_t k = jsonl_reader_read_fd(c[i].rd, c[i].fd);
                        if (k == 0)
                                bench_die("the daemon closed a connection");
                        JsonlMsg m = JSONL_MSG_INIT;
                        while (bench_try_next(&c[i], &m) == 0) {
                                double t = now_us();
                                bench_check_ok(&m, "scale call");
                                if (json_is_true(json_object_get(m.obj, "sandboxed")) != p->sandboxed)
                                        bench_die("reply from the wrong kind of workspace");
                                uint64_t id = (uint64_t)json_integer_value(json_object_get(m.obj, "id"));
                                jsonl_msg_done(&m);
                                if (id == 0 || id >= cap)
                                        bench_die("reply with an unknown id");
                                if (sending) {
                                        samples_add(lat, round, t - sent[i][id]);
                                        done++;
                                }
                                inflight[i]--;
                                if (t >= end)
                                        sending = false;
                                if (sending) {
                                        send_one(&c[i], p, sent[i], cap);
                                        inflight[i]++;
                                }
                        }
                }
        }
        double elapsed = (end > t0 ? end - t0 : 1) / 1e6;
        for (size_t i = 0; i < N_CONN; i++)
                free(sent[i]);
        return (double)done / elapsed;
}

int main(int argc, char **argv) {
        unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 3;
        double secs = argc > 2 ? atof(argv[2]) : 4;
        unsigned n_ws = argc > 3 ? (unsigned)atoi(argv[3]) : 200;

        bench_scratch();
        char *text = malloc(4097);
        if (!text)
                bench_die("out of memory");
        for (size_t i = 0; i < 4096; i++)
                text[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
        text[4096] = 0;
        content4k = text;
        Phase ph[2] = { { .sandboxed = true, .n_ws = n_ws }, { .sandboxed = false, .n_ws = n_ws } };
        for (size_t k = 0; k < 2; k++) {
                ph[k].ws = calloc(n_ws, sizeof(char *));
                if (!ph[k].ws)
                        bench_die("out of memory");
                for (unsigned i = 0; i < n_ws; i++) {
                        char name[32], f[600];
                        snprintf(name, sizeof name, "%s%03u", k ? "un" : "sb", i);
                        ph[k].ws[i] = bench_workspace(name, k ? NULL
                                                              : "[sandbox]\nenabled = true\n"
                                                                "mask = [\".env\", \"**/*.pem\", \"**/.ssh/**\", \"**/.aws/**\"]\n");
                        snprintf(f, sizeof f, "%s/data.txt", ph[k].ws[i]);
                        bench_write_file(f, text, 4096);
                        snprintf(f, sizeof f, "%s/out.txt", ph[k].ws[i]);
                        bench_write_file(f, "", 0);
                }
        }

        BenchDaemon d;
        bench_daemon_start(&d, 2 * n_ws + 16);
        BenchConn c[N_CONN];
        for (size_t i = 0; i < N_CONN; i++)
                bench_connect(&c[i], d.socket);
        /* Every workspace warm before measuring. */
        for (size_t k = 0; k < 2; k++)
                for (unsigned i = 0; i < n_ws; i++) {
                        JsonlMsg m = JSONL_MSG_INIT;
                        json_t *o = json_pack("{s:s,s:s,s:[s]}", "tool", api_tool_name(API_TOOL_TERMINAL), "workspace", ph[k].ws[i], "argv",
                                              "/bin/true");
                        bench_call(&c[0], o, NULL, 0, &m, "warm-up");
                        json_decref(o);
                        jsonl_msg_done(&m);
                }

        Samples lat[2] = { 0 }, tput[2] = { 0 };
        for (unsigned r = 0; r < rounds; r++) {
                /* ABAB, the first phase alternating between rounds. */
                for (size_t j = 0; j < 2; j++) {
                        size_t k = (j + r) % 2;
                        double cps = run_phase(c, &ph[k], secs, r, &lat[k]);
                        samples_add(&tput[k], r, cps);
                }
                bench_log("round %u/%u: sandboxed %.0f calls/s, unsandboxed %.0f calls/s", r + 1, rounds,
                          tput[0].v[tput[0].n - 1], tput[1].v[tput[1].n - 1]);
        }

        BenchOut o;
        bench_out_init(&o, "scale");
        char label[200];
        snprintf(label, sizeof label, "%u sandboxed workspaces: aggregate throughput", n_ws);
        bench_out_figure(&o, "scale.sandboxed.throughput", label, "calls/s", &tput[0]);
        snprintf(label, sizeof label, "%u unsandboxed workspaces: aggregate throughput", n_ws);
        bench_out_figure(&o, "scale.unsandboxed.throughput", label, "calls/s", &tput[1]);
        bench_out_figure(&o, "scale.sandboxed.latency", "sandboxed: per-call latency", "us", &lat[0]);
        bench_out_figure(&o, "scale.unsandboxed.latency", "unsandboxed: per-call latency", "us", &lat[1]);
        bench_out_ratio(&o, "scale.ratio.throughput", "throughput sandboxed / unsandboxed", "scale.sandboxed.throughput",
                        "scale.unsandboxed.throughput");
        bench_out_ratio(&o, "scale.ratio.latency", "median latency sandboxed / unsandboxed", "scale.sandboxed.latency",
                        "scale.unsandboxed.latency");
        bench_out_note(&o, "%u connections, each keeping %u calls in flight; mix: terminal /bin/true 45 %%, file_read 4 KiB text 45 %%, file_write 4 KiB text 10 %% (temp+fsync+rename), on a random workspace (the same pseudo-random sequence in both phases). %u rounds of %.0f s per phase, phases alternating (ABAB). The daemon serves %u workers at once (--max-workers %u).",
                       N_CONN, DEPTH, rounds, secs, 2 * n_ws, 2 * n_ws + 16);
        bench_out_print(&o);

        for (size_t i = 0; i < N_CONN; i++)
                bench_conn_close(&c[i]);
        bench_daemon_stop(&d);
        for (size_t k = 0; k < 2; k++) {
                for (unsigned i = 0; i < n_ws; i++)
                        free(ph[k].ws[i]);
                free(ph[k].ws);
                samples_done(&lat[k]);
                samples_done(&tput[k]);
        }
        free(text);
        bench_scratch_cleanup();
        return 0;
}
