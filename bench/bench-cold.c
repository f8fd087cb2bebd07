/* SPDX-License-Identifier: MIT */
/* Cold start: the first call (`terminal` /bin/true) in a sandboxed
 * workspace, for workspaces of 100, 10 000 and 100 000 files with the
 * example masks of docs/config.md (4 of the files match them).
 *
 *  - cold.N: a brand-new workspace path the daemon has never seen (config
 *    parse, mask walk, bwrap, worker hello/init/ready, the call); for 100
 *    and 10 000 files, each sample a fresh copy of the tree.
 *  - cold.restart.N: the policy of a known workspace changes (limits.timeout
 *    toggles 120/121), so the next call runs in a new jail: the same chain
 *    plus ending the old worker; this is how 100 000 files is measured
 *    (copying that tree per sample would dominate the run).
 *  - cold.breakdown.*: the same steps in-process with the core library
 *    (config_load, launch_prepare with its mask walk, session_start), to
 *    show where the time goes.
 *
 * Sizes are interleaved within each round. Usage: bench-cold [ROUNDS]. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "approval.h"
#include "common.h"
#include "config.h"
#include "session.h"
#include "stats.h"

#define N_SIZES 3
static const unsigned sizes[N_SIZES] = { 100, 10000, 100000 };
static const char toml_fmt[] = "[sandbox]\nenabled = true\n"
                               "mask = [\".env\", \"**/*.pem\", \"**/.ssh/**\", \"**/.aws/**\"]\n"
                               "[sandbox.limits]\ntimeout = %u\n";

static void touch_at(int dfd, const char *name, uid_t u, gid_t g) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                bench_die("creating %s: %m", name);
        if (write(fd, "x\n", 2) != 2)
                bench_die("writing %s: %m", name);
        if (geteuid() == 0 && fchown(fd, u, g) < 0)
                bench_die("chown %s: %m", name);
        close(fd);
}

static void mkdir_at(int dfd, const char *name, uid_t u, gid_t g) {
        if (mkdirat(dfd, name, 0755) < 0)
                bench_die("mkdir %s: %m", name);
        if (geteuid() == 0 && fchownat(dfd, name, u, g, AT_SYMLINK_NOFOLLOW) < 0)
                bench_die("chown %s: %m", name);
}

/* n files in all: vectora.toml, 4 secrets matching the masks, the rest in
 * directories of 100. */
static char *make_tree(const char *name, unsigned n, unsigned timeout) {
        char toml[512];
        snprintf(toml, sizeof toml, toml_fmt, timeout);
        char *ws = bench_workspace(name, toml);
        uid_t u;
        gid_t g;
        bench_owner(&u, &g);
        int root = open(ws, O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                bench_die("open %s: %m", ws);
        touch_at(root, ".env", u, g);
        mkdir_at(root, "keys", u, g);
        touch_at(root, "keys/server.pem", u, g);
        mkdir_at(root, ".ssh", u, g);
        touch_at(root, ".ssh/id_ed25519", u, g);
        mkdir_at(root, ".aws", u, g);
        touch_at(root, ".aws/credentials", u, g);
        /* A few inodes, each linked up to 50 000 times (ext4 allows 65 000):
         * creating inodes is slow on this machine, links are not. */
        unsigned left = n - 5, links = 0;
        char proto[64] = "";
        for (unsigned d = 0; left > 0; d++) {
                char dn[32];
                snprintf(dn, sizeof dn, "src%04u", d);
                mkdir_at(root, dn, u, g);
                int dfd = openat(root, dn, O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        bench_die("open %s: %m", dn);
                for (unsigned f = 0; f < 100 && left > 0; f++, left--) {
                        char fn[32];
                        snprintf(fn, sizeof fn, "file%03u.c", f);
                        if (links == 0) {
                                touch_at(dfd, fn, u, g);
                                snprintf(proto, sizeof proto, "%s/%s", dn, fn);
                        } else if (linkat(root, proto, dfd, fn, 0) < 0)
                                bench_die("link %s/%s: %m", dn, fn);
                        links = (links + 1) % 50000;
                }
                close(dfd);
        }
        close(root);
        return ws;
}

/* A config younger than APPROVAL_STABLE_MS is waited for before it is
 * read (it may be half written: approval.h); a workspace's config is
 * written long before its first call in use, so the figures wait it out
 * before they start the clock instead of measuring that wait. */
static void config_settled(void) {
        struct timespec ts = { 0, (APPROVAL_STABLE_MS + 10) * 1000000L };
        nanosleep(&ts, NULL);
}

static double first_call(BenchConn *c, const char *ws, int64_t *ret_generation) {
        json_t *o = json_pack("{s:s,s:s,s:[s]}", "tool", api_tool_name(API_TOOL_TERMINAL), "workspace", ws, "argv", "/bin/true");
        JsonlMsg m = JSONL_MSG_INIT;
        double t0 = now_us();
        bench_send(c, o, NULL, 0);
        bench_recv(c, &m);
        double t = now_us() - t0;
        json_decref(o);
        bench_check_ok(&m, "first call");
        if (!json_is_true(json_object_get(m.obj, "sandboxed")))
                bench_die("%s: not sandboxed", ws);
        if (ret_generation)
                *ret_generation = json_integer_value(json_object_get(json_object_get(m.obj, "sandbox"), "generation"));
        jsonl_msg_done(&m);
        return t;
}

static void set_timeout(const char *ws, unsigned timeout) {
        char toml[512], path[600], tmp[600];
        snprintf(toml, sizeof toml, toml_fmt, timeout);
        snprintf(path, sizeof path, "%s/vectora.toml", ws);
        snprintf(tmp, sizeof tmp, "%s/.vectora.toml.new", ws);
        /* A new inode: the daemon's stat check sees the change for sure. */
        bench_write_file(tmp, toml, strlen(toml));
        if (rename(tmp, path) < 0)
                bench_die("rename %s: %m", tmp);
}

typedef struct Breakdown {
        Samples config, prepare, start, total;
} Breakdown;

static void in_process(const char *ws, unsigned r, Breakdown *b, size_t *ret_masked) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        char worker[512];
        snprintf(worker, sizeof worker, "%s/src/worker/vectora-worker", bench_build_root());
        _cleanup_free_ char *rt = NULL;
        if (asprintf(&rt, "%s/vectora-sandbox", getenv("XDG_RUNTIME_DIR")) < 0)
                bench_die("out of memory");
        double t0 = now_us();
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        if (config_load(ws, &p, &err) < 0)
                bench_die("%s: %s", ws, vs_error_message(err));
        double t1 = now_us();
        VsLaunchOptions o = { .worker_path = worker, .bwrap = getenv("VECTORA_BWRAP"), .runtime_dir = rt };
        _cleanup_(launch_freep) VsLaunch *l = NULL;
        if (launch_prepare(p, &o, &l, &err) < 0)
                bench_die("%s: %s", ws, vs_error_message(err));
        double t2 = now_us();
        _cleanup_(session_endp) VsSession *s = NULL;
        if (session_start(l, &s, &err) < 0)
                bench_die("%s: %s", ws, vs_error_message(err));
        double t3 = now_us();
        samples_add(&b->config, r, t1 - t0);
        samples_add(&b->prepare, r, t2 - t1);
        samples_add(&b->start, r, t3 - t2);
        samples_add(&b->total, r, t3 - t0);
        *ret_masked = l->n_masked;
}

int main(int argc, char **argv) {
        unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 8;
        unsigned fresh_per_round[N_SIZES] = { 2, 1, 0 };

        bench_scratch();
        double t0 = now_us();
        char *ws[N_SIZES];
        for (size_t i = 0; i < N_SIZES; i++) {
                char name[32];
                snprintf(name, sizeof name, "tree-%u", sizes[i]);
                ws[i] = make_tree(name, sizes[i], 120);
        }
        bench_log("cold: trees built in %.1f s", (now_us() - t0) / 1e6);

        BenchDaemon d;
        bench_daemon_start(&d, 64);
        BenchConn c;
        bench_connect(&c, d.socket);

        /* The daemon's first jail pays dlopen(libseccomp) and the filter
         * compile once per process; a long-running daemon has done that. */
        _cleanup_free_ char *warm = make_tree("warmup", 10, 120);
        first_call(&c, warm, NULL);
        Breakdown bd[N_SIZES] = { 0 };
        size_t masked[N_SIZES] = { 0 };
        Breakdown scratch_bd = { 0 };
        size_t ignored;
        in_process(warm, 0, &scratch_bd, &ignored);
        int64_t gen[N_SIZES];
        for (size_t i = 0; i < N_SIZES; i++)
                first_call(&c, ws[i], &gen[i]);

        Samples fresh[N_SIZES] = { 0 }, restart[N_SIZES] = { 0 };
        unsigned timeout[N_SIZES] = { 120, 120, 120 }, serial = 0;
        for (unsigned r = 0; r < rounds; r++) {
                for (size_t i = 0; i < N_SIZES; i++) {
                        for (unsigned k = 0; k < fresh_per_round[i]; k++) {
                                char name[48];
                                snprintf(name, sizeof name, "fresh-%u-%u", sizes[i], serial++);
                                _cleanup_free_ char *f = make_tree(name, sizes[i], 120);
                                config_settled();
                                samples_add(&fresh[i], r, first_call(&c, f, NULL));
                        }
                        /* Down by one each round: a tightening applies at
                         * once, where a loosening would wait for the host's
                         * approval (approval.h) and start no new jail. */
                        timeout[i]--;
                        set_timeout(ws[i], timeout[i]);
                        config_settled();
                        int64_t g;
                        double t = first_call(&c, ws[i], &g);
                        if (g == gen[i])
                                bench_die("%s: the policy change did not start a new generation", ws[i]);
                        gen[i] = g;
                        samples_add(&restart[i], r, t);
                        in_process(ws[i], r, &bd[i], &masked[i]);
                }
                bench_log("round %u/%u: cold 100 files %.1f ms, 10 000 %.1f ms, restart 100 000 %.1f ms", r + 1, rounds,
                          samples_median(&fresh[0]) / 1e3, samples_median(&fresh[1]) / 1e3,
                          samples_median(&restart[2]) / 1e3);
        }

        BenchOut o;
        bench_out_init(&o, "cold");
        for (size_t i = 0; i < N_SIZES; i++) {
                char key[64], label[200];
                if (fresh[i].n) {
                        snprintf(key, sizeof key, "cold.%u", sizes[i]);
                        snprintf(label, sizeof label, "%u files: first call in a new workspace (daemon)", sizes[i]);
                        bench_out_figure(&o, key, label, "us", &fresh[i]);
                }
                snprintf(key, sizeof key, "cold.restart.%u", sizes[i]);
                snprintf(label, sizeof label, "%u files: first call after a policy change (new jail, daemon)", sizes[i]);
                bench_out_figure(&o, key, label, "us", &restart[i]);
                snprintf(key, sizeof key, "cold.inproc.%u.config", sizes[i]);
                bench_out_figure(&o, key, "  in-process: config_load (parse vectora.toml)", "us", &bd[i].config);
                snprintf(key, sizeof key, "cold.inproc.%u.prepare", sizes[i]);
                bench_out_figure(&o, key, "  in-process: launch_prepare (mask walk, argv; seccomp cached)", "us",
                                 &bd[i].prepare);
                snprintf(key, sizeof key, "cold.inproc.%u.start", sizes[i]);
                bench_out_figure(&o, key, "  in-process: session_start (bwrap, hello, init, ready)", "us", &bd[i].start);
                snprintf(key, sizeof key, "cold.inproc.%u.total", sizes[i]);
                bench_out_figure(&o, key, "  in-process: total to a ready worker", "us", &bd[i].total);
                snprintf(key, sizeof key, "cold.masked.%u", sizes[i]);
                bench_out_value(&o, key, (double)masked[i]);
        }
        bench_out_note(&o, "Trees: vectora.toml, `.env`, `keys/server.pem`, `.ssh/id_ed25519`, `.aws/credentials` (%zu, %zu and %zu paths masked) and the rest in directories of 100 files; masks `[\".env\", \"**/*.pem\", \"**/.ssh/**\", \"**/.aws/**\"]`. The regular files are hard links of one file (creating 100 000 distinct inodes on this machine's ext4 takes up to 40 s under load); the walk sees them as the regular files they are. Dentries cached (the trees were just built). Each config is written more than APPROVAL_STABLE_MS (100 ms) before its timed call: the daemon waits for a younger one to settle (it may be half written), which a workspace configured ahead of its first call never meets.",
                       masked[0], masked[1], masked[2]);
        bench_out_note(&o, "%u rounds; sizes interleaved in each round. The daemon's seccomp filter is compiled once per process (a warm-up workspace pays it before measuring).",
                       rounds);
        bench_out_print(&o);

        bench_conn_close(&c);
        bench_daemon_stop(&d);
        for (size_t i = 0; i < N_SIZES; i++) {
                samples_done(&fresh[i]);
                samples_done(&restart[i]);
                samples_done(&bd[i].config);
                samples_done(&bd[i].prepare);
                samples_done(&bd[i].start);
                samples_done(&bd[i].total);
                free(ws[i]);
        }
        samples_done(&scratch_bd.config);
        samples_done(&scratch_bd.prepare);
        samples_done(&scratch_bd.start);
        samples_done(&scratch_bd.total);
        bench_scratch_cleanup();
        return 0;
}
