/* SPDX-License-Identifier: MIT */
/* File operations: file_read and file_write of 4 KiB and 1 MiB through a
 * warm sandboxed workspace of the daemon, against direct read/write (+fsync)
 * by this process and against a fresh bwrap per call running cat (reads) or
 * dd conv=fsync (writes) with the same policy.
 *
 * Through the daemon both encodings are measured: text ("content", what an
 * agent's tool sends and gets) and raw bytes after the JSON header
 * ("binary": true / a raw payload); 1 MiB only as raw bytes (as text it
 * exceeds the API's 1 MiB header line). Beside them, the floor of the
 * relay design for a 4 KiB read: a request-sized message through a
 * zero-work relay process to an echo answering 4 KiB and back (4 hops);
 * and the client's own JSON work for a 4 KiB read (encoding the request,
 * decoding a reply of the same bytes), which the call's time includes.
 * Reads and writes are measured in two groups per round, the alternatives
 * of each interleaved call by call in a rotating order. Usage: bench-files [ROUNDS [CALLS_PER_ROUND]]. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fd-util.h"
#include "stats.h"

#define KIB4 4096u
#define MIB1 (1024u * 1024u)

static char *text(size_t n) {
        char *b = malloc(n + 1);
        if (!b)
                bench_die("out of memory");
        for (size_t i = 0; i < n; i++)
                b[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
        b[n] = 0;
        return b;
}

typedef enum { ENC_TEXT, ENC_RAW } Enc;

/* A file_read request, as the benchmark's client sends it. */
static json_t *read_request(const char *ws, const char *path, Enc enc) {
        return json_pack("{s:s,s:s,s:s,s:b}", "tool", api_tool_name(API_TOOL_FILE_READ), "workspace", ws, "path", path,
                         "binary", enc == ENC_RAW);
}

static double daemon_read(BenchConn *c, const char *ws, const char *path, Enc enc, size_t expect) {
        json_t *o = read_request(ws, path, enc);
        JsonlMsg m = JSONL_MSG_INIT;
        double t0 = now_us();
        bench_send(c, o, NULL, 0);
        bench_recv(c, &m);
        double t = now_us() - t0;
        json_decref(o);
        bench_check_ok(&m, "file_read");
        size_t got = enc == ENC_RAW ? m.raw_len : json_string_length(json_object_get(m.obj, "content"));
        if (got != expect)
                bench_die("file_read returned %zu bytes, expected %zu", got, expect);
        jsonl_msg_done(&m);
        return t;
}

static double daemon_write(BenchConn *c, const char *ws, const char *path, Enc enc, const char *data, size_t n) {
        json_t *o = json_pack("{s:s,s:s,s:s}", "tool", api_tool_name(API_TOOL_FILE_WRITE), "workspace", ws, "path", path);
        if (enc == ENC_TEXT)
                json_object_set_new(o, "content", json_stringn(data, n));
        JsonlMsg m = JSONL_MSG_INIT;
        double t0 = now_us();
        bench_send(c, o, enc == ENC_RAW ? data : NULL, enc == ENC_RAW ? n : 0);
        bench_recv(c, &m);
        double t = now_us() - t0;
        json_decref(o);
        bench_check_ok(&m, "file_write");
        if ((size_t)json_integer_value(json_object_get(m.obj, "size")) != n)
                bench_die("file_write wrote the wrong size");
        jsonl_msg_done(&m);
        return t;
}

/* A reply of the daemon's, as the bytes the client reads (header line and
 * raw payload), to decode again off the socket. */
typedef struct Reply {
        char *bytes;
        size_t len;
} Reply;

static Reply capture_read(BenchConn *c, const char *ws, const char *path, Enc enc) {
        json_t *o = read_request(ws, path, enc);
        JsonlMsg m = JSONL_MSG_INIT;
        bench_call(c, o, NULL, 0, &m, "file_read");
        json_decref(o);
        json_object_del(m.obj, "raw");
        StrBuf out = STRBUF_INIT;
        if (jsonl_encode_header(m.obj, m.raw_len > 0, m.raw_len, &out) < 0 ||
            (m.raw_len > 0 && strbuf_append(&out, m.raw, m.raw_len) < 0))
                bench_die("re-encoding a reply");
        jsonl_msg_done(&m);
        Reply rep = { .len = out.len };
        rep.bytes = strbuf_steal(&out);
        return rep;
}

/* What daemon_read() does besides the socket: the request built and
 * encoded, the reply's bytes parsed and the content found. */
static double client_codec(const char *ws, const char *path, Enc enc, const Reply *rep, size_t expect) {
        double t0 = now_us();
        json_t *o = read_request(ws, path, enc);
        StrBuf out = STRBUF_INIT;
        json_object_set_new(o, "id", json_integer(1));
        if (jsonl_encode_header(o, false, 0, &out) < 0)
                bench_die("encoding a request");
        _cleanup_(jsonl_reader_freep) JsonlReader *rd = NULL;
        JsonlMsg m = JSONL_MSG_INIT;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = jsonl_reader_new(&rd);
        if (r >= 0)
                r = jsonl_reader_feed(rd, rep->bytes, rep->len);
        if (r >= 0)
                r = jsonl_reader_next(rd, &m, &err);
        if (r < 0)
                bench_die("decoding a captured reply: %s", err ? vs_error_message(err) : strerror(-r));
        size_t got = enc == ENC_RAW ? m.raw_len : json_string_length(json_object_get(m.obj, "content"));
        double t = now_us() - t0;
        if (got != expect)
                bench_die("the captured reply holds %zu bytes, expected %zu", got, expect);
        jsonl_msg_done(&m);
        strbuf_done(&out);
        json_decref(o);
        return t;
}

static double direct_read(const char *path, char *buf, size_t n) {
        double t0 = now_us();
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                bench_die("open %s: %m", path);
        ssize_t k = read_full(fd, buf, n);
        close(fd);
        double t = now_us() - t0;
        if (k != (ssize_t)n)
                bench_die("short read of %s", path);
        return t;
}

static double direct_write(const char *path, const char *data, size_t n) {
        double t0 = now_us();
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, data, n) < 0 || fsync(fd) < 0)
                bench_die("writing %s: %m", path);
        close(fd);
        return now_us() - t0;
}

/* What the worker does: temp file, write, fsync, rename. */
static double direct_atomic_write(const char *path, const char *data, size_t n) {
        char tmp[600];
        if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
                bench_die("path too long: %s", path);
        double t0 = now_us();
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, data, n) < 0 || fsync(fd) < 0 || rename(tmp, path) < 0)
                bench_die("writing %s: %m", path);
        close(fd);
        return now_us() - t0;
}

static double percall_read(BenchPercall *p, const char *path, char *buf, size_t n) {
        char *cmd[] = { "/bin/cat", (char *)path, NULL };
        int pp[2];
        double t0 = now_us();
        if (pipe2(pp, O_CLOEXEC) < 0)
                bench_die("pipe: %m");
        pid_t pid = bench_percall_spawn(p, cmd, -1, pp[1]);
        close(pp[1]);
        ssize_t k = read_full(pp[0], buf, n + 1);
        close(pp[0]);
        int st = bench_wait(pid);
        double t = now_us() - t0;
        if (st != 0 || k != (ssize_t)n)
                bench_die("per-call cat %s: status %d, %zd bytes", path, st, k);
        return t;
}

static double percall_write(BenchPercall *p, const char *path, const char *data, size_t n) {
        char of[600];
        snprintf(of, sizeof of, "of=%s", path);
        char *cmd[] = { "/bin/dd", of, "bs=1M", "conv=fsync", "status=none", NULL };
        int pp[2];
        double t0 = now_us();
        if (pipe2(pp, O_CLOEXEC) < 0)
                bench_die("pipe: %m");
        pid_t pid = bench_percall_spawn(p, cmd, pp[0], -1);
        close(pp[0]);
        int r = write_all(pp[1], data, n);
        close(pp[1]);
        int st = bench_wait(pid);
        double t = now_us() - t0;
        if (st != 0 || r < 0)
                bench_die("per-call dd of=%s failed (status %d)", path, st);
        return t;
}

enum {
        D_READ_4K, D_READ_4K_RAW, D_READ_1M_RAW,
        D_WRITE_4K, D_WRITE_4K_RAW, D_WRITE_1M_RAW,
        X_READ_4K, X_READ_1M, X_WRITE_4K, X_WRITE_1M, X_ATOMIC_4K, X_ATOMIC_1M,
        P_READ_4K, P_READ_1M, P_WRITE_4K, P_WRITE_1M,
        R_READ_4K, C_READ_4K, C_READ_4K_RAW,
        N_FIG,
};

static const struct {
        const char *key, *label;
} fig[N_FIG] = {
        [D_READ_4K] = { "files.read.4k", "file_read 4 KiB, text (\"content\"), warm sandboxed (daemon)" },
        [D_READ_4K_RAW] = { "files.read.4k.raw", "file_read 4 KiB, raw bytes (\"binary\"), warm sandboxed (daemon)" },
        [D_READ_1M_RAW] = { "files.read.1m", "file_read 1 MiB, raw bytes (\"binary\"), warm sandboxed (daemon)" },
        [D_WRITE_4K] = { "files.write.4k", "file_write 4 KiB, text, warm sandboxed (daemon; temp+fsync+rename)" },
        [D_WRITE_4K_RAW] = { "files.write.4k.raw", "file_write 4 KiB, raw payload, warm sandboxed (daemon)" },
        [D_WRITE_1M_RAW] = { "files.write.1m", "file_write 1 MiB, raw payload, warm sandboxed (daemon)" },
        [X_READ_4K] = { "files.direct.read.4k", "direct open+read+close 4 KiB" },
        [X_READ_1M] = { "files.direct.read.1m", "direct open+read+close 1 MiB" },
        [X_WRITE_4K] = { "files.direct.write.4k", "direct open+write+fsync+close 4 KiB" },
        [X_WRITE_1M] = { "files.direct.write.1m", "direct open+write+fsync+close 1 MiB" },
        [X_ATOMIC_4K] = { "files.direct.atomic.4k", "direct temp+write+fsync+rename 4 KiB (what the worker does)" },
        [X_ATOMIC_1M] = { "files.direct.atomic.1m", "direct temp+write+fsync+rename 1 MiB" },
        [P_READ_4K] = { "files.percall.read.4k", "fresh bwrap per call: cat 4 KiB" },
        [P_READ_1M] = { "files.percall.read.1m", "fresh bwrap per call: cat 1 MiB" },
        [P_WRITE_4K] = { "files.percall.write.4k", "fresh bwrap per call: dd conv=fsync 4 KiB" },
        [P_WRITE_1M] = { "files.percall.write.1m", "fresh bwrap per call: dd conv=fsync 1 MiB" },
        [R_READ_4K] = { "files.relay.4k", "zero-work relay floor, a 4 KiB read's sizes (4 hops: client -> relay -> echo -> relay -> client)" },
        [C_READ_4K] = { "files.client.read.4k", "the client's JSON work for file_read 4 KiB, text: request encode + reply decode (no socket)" },
        [C_READ_4K_RAW] = { "files.client.read.4k.raw", "the client's JSON work for file_read 4 KiB, raw: request encode + reply decode (no socket)" },
};

int main(int argc, char **argv) {
        unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
        unsigned calls = argc > 2 ? (unsigned)atoi(argv[2]) : 30;
        unsigned percall_every = 5;

        bench_scratch();
        char *ws = bench_workspace("ws", "[sandbox]\nenabled = true\n"
                                         "mask = [\".env\", \"**/*.pem\", \"**/.ssh/**\", \"**/.aws/**\"]\n");
        _cleanup_free_ char *small = text(KIB4), *big = text(MIB1), *buf = malloc(MIB1 + 1);
        if (!buf)
                bench_die("out of memory");
        char in4k[600], in1m[600], out4k[600], out1m[600], x4k[600], x1m[600], p4k[600], p1m[600];
        snprintf(in4k, sizeof in4k, "%s/in4k.txt", ws);
        snprintf(in1m, sizeof in1m, "%s/in1m.txt", ws);
        snprintf(out4k, sizeof out4k, "%s/out4k.txt", ws);
        snprintf(out1m, sizeof out1m, "%s/out1m.txt", ws);
        snprintf(x4k, sizeof x4k, "%s/direct4k.txt", ws);
        snprintf(x1m, sizeof x1m, "%s/direct1m.txt", ws);
        snprintf(p4k, sizeof p4k, "%s/percall4k.txt", ws);
        snprintf(p1m, sizeof p1m, "%s/percall1m.txt", ws);
        bench_write_file(in4k, small, KIB4);
        bench_write_file(in1m, big, MIB1);
        /* Created up front so that they are owned by the jail's user. */
        bench_write_file(p4k, "", 0);
        bench_write_file(p1m, "", 0);

        BenchDaemon d;
        bench_daemon_start(&d, 16);
        BenchConn c;
        bench_connect(&c, d.socket);
        BenchPercall pc;
        bench_percall_prepare(&pc, ws);
        /* A file_read request's size, and a raw 4 KiB reply's (its header
         * and the bytes). */
        BenchRelay relay;
        bench_relay_start(&relay, 128, KIB4 + 128);

        Reply rep_text = capture_read(&c, ws, in4k, ENC_TEXT), rep_raw = capture_read(&c, ws, in4k, ENC_RAW);
        for (int k = 0; k < 5; k++) {
                daemon_read(&c, ws, in4k, ENC_TEXT, KIB4);
                daemon_read(&c, ws, in1m, ENC_RAW, MIB1);
                daemon_write(&c, ws, out4k, ENC_TEXT, small, KIB4);
                percall_read(&pc, in4k, buf, KIB4);
                bench_relay_round_trip(&relay);
        }

        Samples s[N_FIG] = { 0 };
        bench_log("files: %u rounds x %u calls per alternative", rounds, calls);
        for (unsigned r = 0; r < rounds; r++) {
                /* Reads, then writes, each group interleaved call by call
                 * and its order rotated every call, so that no alternative
                 * always follows the same one (a 4 KiB read right after a
                 * 1 MiB fsync'd write measured a cold machine, not the read). */
                for (unsigned k = 0; k < calls; k++)
                        for (unsigned j = 0; j < 8; j++)
                                switch ((j + k) % 8) {
                                case 0: samples_add(&s[D_READ_4K], r, daemon_read(&c, ws, in4k, ENC_TEXT, KIB4)); break;
                                case 1: samples_add(&s[X_READ_4K], r, direct_read(in4k, buf, KIB4)); break;
                                case 2: samples_add(&s[D_READ_4K_RAW], r, daemon_read(&c, ws, in4k, ENC_RAW, KIB4)); break;
                                case 3: samples_add(&s[R_READ_4K], r, bench_relay_round_trip(&relay)); break;
                                case 4:
                                        samples_add(&s[C_READ_4K], r, client_codec(ws, in4k, ENC_TEXT, &rep_text, KIB4));
                                        samples_add(&s[C_READ_4K_RAW], r, client_codec(ws, in4k, ENC_RAW, &rep_raw, KIB4));
                                        break;
                                case 5: samples_add(&s[X_READ_1M], r, direct_read(in1m, buf, MIB1)); break;
                                case 6: samples_add(&s[D_READ_1M_RAW], r, daemon_read(&c, ws, in1m, ENC_RAW, MIB1)); break;
                                default:
                                        if (k % percall_every == 0) {
                                                samples_add(&s[P_READ_4K], r, percall_read(&pc, in4k, buf, KIB4));
                                                samples_add(&s[P_READ_1M], r, percall_read(&pc, in1m, buf, MIB1));
                                        }
                                        break;
                                }
                for (unsigned k = 0; k < calls; k++)
                        for (unsigned j = 0; j < 8; j++)
                                switch ((j + k) % 8) {
                                case 0: samples_add(&s[D_WRITE_4K], r, daemon_write(&c, ws, out4k, ENC_TEXT, small, KIB4)); break;
                                case 1: samples_add(&s[X_WRITE_4K], r, direct_write(x4k, small, KIB4)); break;
                                case 2: samples_add(&s[D_WRITE_4K_RAW], r, daemon_write(&c, ws, out4k, ENC_RAW, small, KIB4)); break;
                                case 3: samples_add(&s[X_ATOMIC_4K], r, direct_atomic_write(x4k, small, KIB4)); break;
                                case 4: samples_add(&s[X_WRITE_1M], r, direct_write(x1m, big, MIB1)); break;
                                case 5: samples_add(&s[D_WRITE_1M_RAW], r, daemon_write(&c, ws, out1m, ENC_RAW, big, MIB1)); break;
                                case 6: samples_add(&s[X_ATOMIC_1M], r, direct_atomic_write(x1m, big, MIB1)); break;
                                default:
                                        if (k % percall_every == 0) {
                                                samples_add(&s[P_WRITE_4K], r, percall_write(&pc, p4k, small, KIB4));
                                                samples_add(&s[P_WRITE_1M], r, percall_write(&pc, p1m, big, MIB1));
                                        }
                                        break;
                                }
                bench_log("round %u/%u: read 4 KiB %.0f us (direct %.0f), write 4 KiB %.0f us (direct %.0f)", r + 1,
                          rounds, samples_median(&s[D_READ_4K]), samples_median(&s[X_READ_4K]),
                          samples_median(&s[D_WRITE_4K]), samples_median(&s[X_WRITE_4K]));
        }

        BenchOut o;
        bench_out_init(&o, "files");
        for (size_t i = 0; i < N_FIG; i++)
                bench_out_figure(&o, fig[i].key, fig[i].label, "us", &s[i]);
        bench_out_ratio(&o, "files.ratio.read4k_direct", "file_read 4 KiB text / direct read", "files.read.4k",
                        "files.direct.read.4k");
        bench_out_ratio(&o, "files.ratio.read1m_direct", "file_read 1 MiB raw / direct read", "files.read.1m",
                        "files.direct.read.1m");
        bench_out_ratio(&o, "files.ratio.write4k_direct", "file_write 4 KiB text / direct write+fsync",
                        "files.write.4k", "files.direct.write.4k");
        bench_out_ratio(&o, "files.ratio.write4k_atomic", "file_write 4 KiB text / direct temp+fsync+rename",
                        "files.write.4k", "files.direct.atomic.4k");
        bench_out_ratio(&o, "files.ratio.write1m_direct", "file_write 1 MiB raw / direct write+fsync",
                        "files.write.1m", "files.direct.write.1m");
        bench_out_ratio(&o, "files.ratio.percall_read4k", "per-call bwrap cat / file_read, 4 KiB",
                        "files.percall.read.4k", "files.read.4k");
        bench_out_ratio(&o, "files.ratio.percall_read1m", "per-call bwrap cat / file_read, 1 MiB",
                        "files.percall.read.1m", "files.read.1m");
        bench_out_ratio(&o, "files.ratio.percall_write4k", "per-call bwrap dd / file_write, 4 KiB",
                        "files.percall.write.4k", "files.write.4k");
        bench_out_ratio(&o, "files.ratio.percall_write1m", "per-call bwrap dd / file_write, 1 MiB",
                        "files.percall.write.1m", "files.write.1m");
        bench_out_note(&o, "Files live in the workspace on the scratch directory's file system (/tmp); reads are from the page cache. %u rounds of %u calls; per-call bwrap every %u-th call.",
                       rounds, calls, percall_every);
        bench_out_note(&o, "Through the daemon, times run from sending the request to having parsed the whole reply (text content decoded from JSON).");
        bench_out_note(&o, "1 MiB goes as raw bytes only: as JSON text it does not fit the daemon API's 1 MiB header limit (file_read answers `internal: the reply could not be encoded`, and a 1 MiB `content` in a file_write request exceeds the request limit).");
        bench_out_print(&o);

        free(rep_text.bytes);
        free(rep_raw.bytes);
        bench_percall_done(&pc);
        bench_relay_stop(&relay);
        bench_conn_close(&c);
        bench_daemon_stop(&d);
        for (size_t i = 0; i < N_FIG; i++)
                samples_done(&s[i]);
        free(ws);
        bench_scratch_cleanup();
        return 0;
}
