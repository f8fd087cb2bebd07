/* SPDX-License-Identifier: MIT */
#pragma once

/* For unit tests of the daemon's library: a daemon Server on a libuv loop
 * of its own, and a worker the test plays on one end of a socketpair. The
 * worker link spawns through link_spawn_fn (worker-link-internal.h), which
 * here hands the link the other end (pid 0: no process to signal or reap).
 * The test speaks the worker's side with the protocol's own encoders.
 * Include after <cmocka.h>. */

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval.h"
#include "jsonl.h"
#include "log.h"
#include "path-util.h"
#include "protocol.h"
#include "server.h"
#include "strbuf.h"
#include "time-util.h"
#include "worker-link-internal.h"
#include "worker-link.h"

static int fw_fd = -1;            /* the test's end: the worker's socket */
static unsigned fw_spawns;        /* how many workers were "spawned" */
static JsonlReader *fw_reader;    /* what the daemon sent the worker */

static inline int fw_spawn(const VsLaunch *l, VsWorkerProc *ret, VsError **err) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        if (fw_fd >= 0)
                close(fw_fd);
        fw_fd = sv[1];
        jsonl_reader_free(fw_reader);
        fw_reader = NULL;
        assert_int_equal(jsonl_reader_new(&fw_reader), 0);
        fw_spawns++;
        *ret = (VsWorkerProc) { .pid = 0, .fd = sv[0], .stderr_fd = -EBADF };
        return 0;
}

/* The daemon's state for a test: its loop, its options (a state directory
 * and an instance directory in tmp). */
static inline void fw_server(Server *srv, uv_loop_t *loop, const char *tmp) {
        assert_int_equal(uv_loop_init(loop), 0);
        *srv = (Server) { .loop = loop };
        srv->opt.max_workers = 8;
        srv->opt.worker_path = strdup("/nonexistent/vectora-worker");
        srv->instance_dir = strdup(tmp);
        char state[256];
        snprintf(state, sizeof state, "%s/state", tmp);
        assert_int_equal(approval_store_dir(state, &srv->opt.state_dir, NULL), 0);
        link_spawn_fn = fw_spawn;
        fw_spawns = 0;
        log_set_level(LOG_LVL_ERROR);
}

static inline void fw_server_done(Server *srv) {
        /* What closes closes on the loop. */
        for (int i = 0; i < 100 && uv_run(srv->loop, UV_RUN_NOWAIT); i++)
                ;
        assert_int_equal(uv_loop_close(srv->loop), 0);
        free(srv->opt.worker_path);
        free(srv->opt.state_dir);
        free(srv->instance_dir);
        if (fw_fd >= 0)
                close(fw_fd);
        fw_fd = -1;
        jsonl_reader_free(fw_reader);
        fw_reader = NULL;
}

/* tmp/proj with this vectora.toml: a workspace (path owned). */
static inline char *fw_workspace(const char *tmp, const char *toml) {
        char *dir = path_join(tmp, "proj");
        assert_non_null(dir);
        assert_int_equal(mkdir(dir, 0755), 0);
        _cleanup_free_ char *cfg = path_join(dir, "vectora.toml");
        FILE *f = fopen(cfg, "we");
        assert_non_null(f);
        fputs(toml, f);
        fclose(f);
        return dir;
}

/* Runs the loop until cond() holds (false after 5 s). */
static inline bool fw_run_until(uv_loop_t *loop, bool (*cond)(void)) {
        uint64_t end = now_ms() + 5000;
        while (!cond()) {
                if (now_ms() > end)
                        return false;
                uv_run(loop, UV_RUN_NOWAIT);
                usleep(1000);
        }
        return true;
}

/* The worker writes bytes as they are (a partial line, two lines, garbage). */
static inline void fw_write(const void *p, size_t n) {
        assert_int_equal(write(fw_fd, p, n), (ssize_t) n);
}

static inline void fw_send(StrBuf *b) {
        fw_write(b->data, b->len);
        strbuf_done(b);
}

/* The next message the daemon sent the worker, running the loop meanwhile.
 * 0, or -EPIPE when the daemon closed its end (the link ended), or
 * -ETIMEDOUT after 5 s. */
static inline int fw_recv(uv_loop_t *loop, JsonlMsg *ret) {
        uint64_t end = now_ms() + 5000;
        for (;;) {
                JsonlMsg m = JSONL_MSG_INIT;
                int k = jsonl_reader_next(fw_reader, &m, NULL);
                if (k == 0) {
                        *ret = m;
                        return 0;
                }
                assert_int_equal(k, -EAGAIN);
                if (now_ms() > end)
                        return -ETIMEDOUT;
                uv_run(loop, UV_RUN_NOWAIT);
                struct pollfd p = { .fd = fw_fd, .events = POLLIN };
                if (poll(&p, 1, 1) > 0) {
                        char buf[65536];
                        ssize_t n = read(fw_fd, buf, sizeof buf);
                        if (n <= 0)
                                return -EPIPE;
                        assert_int_equal(jsonl_reader_feed(fw_reader, buf, (size_t) n), 0);
                }
        }
}

/* The worker's side of the handshake: hello, the daemon's init, ready. */
static inline void fw_handshake(uv_loop_t *loop) {
        StrBuf b = STRBUF_INIT;
        ProtocolHello h = { .version = PROTOCOL_VERSION, .arch = (char *) "x86_64", .pid = 2 };
        assert_int_equal(protocol_encode_hello(&b, &h), 0);
        fw_send(&b);
        JsonlMsg m;
        assert_int_equal(fw_recv(loop, &m), 0);
        ProtocolInit init;
        assert_int_equal(protocol_decode_init(m.obj, &init, NULL), 0);
        protocol_init_done(&init);
        jsonl_msg_done(&m);
        ProtocolReady rd = { .no_new_privs = true };
        assert_int_equal(protocol_encode_ready(&b, &rd), 0);
        fw_send(&b);
}

/* The next request the daemon sent: its id and op. */
static inline uint64_t fw_request(uv_loop_t *loop, ProtocolOp *ret_op) {
        JsonlMsg m;
        assert_int_equal(fw_recv(loop, &m), 0);
        ProtocolRequestHead head;
        assert_int_equal(protocol_decode_request_head(m.obj, &head, NULL), 0);
        jsonl_msg_done(&m);
        if (ret_op)
                *ret_op = head.op;
        return head.id;
}

/* A stat reply as the worker's encoder writes it (size tells replies
 * apart). */
static inline void fw_stat_reply(uint64_t id, uint64_t size, StrBuf *out) {
        ProtocolStatReply r = { .type = PROTOCOL_FILE_FILE, .size = size, .mode = 0644 };
        assert_int_equal(protocol_encode_stat_reply(out, id, &r), 0);
}

/* A call as a tool makes one (worker-link.h): a stat request; its outcome
 * (TEST_CALL initializes it). */
typedef struct TestCall {
        Call call;
        unsigned done;
        ApiError code;
        char message[512];
        uint64_t size; /* the reply's */
} TestCall;

static inline int call_build(Call *c, uint64_t wid, StrBuf *out) {
        return protocol_encode_stat_request(out, wid, "/x");
}

static inline void call_done(Call *c, WorkerLink *l, JsonlMsg *reply, ApiError code, const char *message) {
        TestCall *t = (TestCall *) c;
        t->done++;
        t->code = code;
        snprintf(t->message, sizeof t->message, "%s", message ? message : "");
        if (reply) {
                ProtocolStatReply r;
                assert_int_equal(protocol_decode_stat_reply(reply->obj, &r, NULL), 0);
                t->size = r.size;
        }
}

#define TEST_CALL { .call = { .build = call_build, .done = call_done } }

/* Runs the loop until c is done (it fails after 5 s). */
static inline void fw_run_until_done(uv_loop_t *loop, TestCall *c) {
        for (int i = 0; i < 5000 && !c->done; i++) {
                uv_run(loop, UV_RUN_NOWAIT);
                usleep(1000);
        }
        assert_int_equal(c->done, 1);
}
