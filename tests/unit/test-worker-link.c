/* SPDX-License-Identifier: MIT */
/* The daemon's link to its worker (src/daemon/workspace/worker-link.c) through its
 * seams: the LinkOps its owner gives it (recorded here) and the spawn
 * (link_spawn_fn), with the worker played by the test on a socketpair
 * (fake-worker.h). The handshake, a reply in pieces, replies out of order
 * in one write, and the ways a worker breaks the protocol or dies, each of
 * which ends the link and fails its in-flight calls, never the daemon. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fake-worker.h"
#include "workspace.h"

static char tmp[64];
static uv_loop_t loop;
static Server srv;
static Workspace ws;
static LinkStart *start;

/* What the link reported (LinkOps). */
static struct {
        unsigned started, ready, failed, idle, slot_free, sessions_end;
        int started_r;
        WorkerLink *link;  /* not to be touched once failed: it is freed then */
        LinkState failed_state;
        bool failed_kept_ws;
        ApiError failed_code;
        char failed_why[512];
} rec;

static int op_prepare(Workspace *w, VsError **err) {
        return 0;
}
static void op_started(Workspace *w, WorkerLink *l, int r, const VsError *err) {
        rec.started++;
        rec.started_r = r;
        rec.link = l;
        start = NULL;
}
static void op_ready(Workspace *w, WorkerLink *l) {
        rec.ready++;
}
static void op_failed(Workspace *w, WorkerLink *l, ApiError code, const char *why) {
        rec.failed++;
        rec.failed_state = l->state;
        rec.failed_kept_ws = l->ws != NULL;
        rec.failed_code = code;
        snprintf(rec.failed_why, sizeof rec.failed_why, "%s", why);
}
static void op_idle(Workspace *w, WorkerLink *l) {
        rec.idle++;
}
static void op_slot_free(Server *s, WorkerLink *l) {
        rec.slot_free++;
}
static void op_old_jail_gone(Workspace *w) {
}
static void op_protect_changed(Workspace *w, const char *why) {
}
/* Every session event is a violation here: no session was opened. */
static bool op_session_event(WorkerLink *l, JsonlMsg *m, char **ret_why) {
        *ret_why = strdup("protocol violation: an event for no session");
        return false;
}
static void op_sessions_end(WorkerLink *l, ApiError code, const char *why) {
        rec.sessions_end++;
}

static const LinkOps ops = {
        .prepare = op_prepare,
        .started = op_started,
        .ready = op_ready,
        .failed = op_failed,
        .idle = op_idle,
        .spawn_slot_free = op_slot_free,
        .old_jail_gone = op_old_jail_gone,
        .protect_changed = op_protect_changed,
        .session_event = op_session_event,
        .sessions_end = op_sessions_end,
};

static bool started(void) {
        return rec.started > 0;
}
static bool ready(void) {
        return rec.ready > 0;
}
static bool failed(void) {
        return rec.failed > 0;
}

static int setup(void **state) {
        snprintf(tmp, sizeof tmp, "/tmp/vs-link-XXXXXX");
        assert_non_null(mkdtemp(tmp));
        fw_server(&srv, &loop, tmp);
        memset(&rec, 0, sizeof rec);
        ws = (Workspace) { .srv = &srv, .path = tmp, .generation = 1, .pids_fd = -EBADF, .pids_events_fd = -EBADF };
        static const char text[] = "[sandbox]\nenabled = false\n";
        if (config_from_text(tmp, text, sizeof text - 1, &ws.policy, NULL) < 0)
                fail_msg("config_from_text");
        return 0;
}

static int teardown(void **state) {
        if (rec.link && rec.failed == 0)
                link_end(rec.link, API_ERROR_WORKER_RECYCLED, "the test is over");
        fw_server_done(&srv);
        policy_free(ws.policy);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        return system(cmd) == 0 ? 0 : -1;
}

/* A link started, handshaken and ready. */
static WorkerLink *ready_link(void) {
        VsError *err = NULL;
        assert_int_equal(link_start(&ws, &ops, &start, &err), 0);
        assert_int_equal(rec.started, 0); /* never from within link_start */
        assert_true(fw_run_until(&loop, started));
        assert_int_equal(rec.started_r, 0);
        assert_non_null(rec.link);
        assert_int_equal(rec.link->state, LINK_SPAWNING);
        assert_int_equal(fw_spawns, 1);
        fw_handshake(&loop);
        assert_true(fw_run_until(&loop, ready));
        assert_int_equal(rec.link->state, LINK_READY);
        assert_int_equal(srv.n_workers, 1);
        return rec.link;
}

static void test_reply_in_pieces(void **state) {
        WorkerLink *l = ready_link();
        TestCall c = TEST_CALL;
        link_send(l, &c.call);
        assert_int_equal(l->n_inflight, 1);
        ProtocolOp op;
        uint64_t id = fw_request(&loop, &op);
        assert_int_equal(op, PROTOCOL_OP_STAT);
        assert_int_equal(id, c.call.wid);

        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        fw_stat_reply(id, 1234, &b);
        /* A reply split anywhere is one reply once whole. */
        size_t third = b.len / 3;
        for (size_t off = 0; off < b.len; off += third) {
                size_t n = off + third > b.len ? b.len - off : third;
                assert_int_equal(c.done, 0);
                fw_write(b.data + off, n);
                for (int i = 0; i < 20; i++) {
                        uv_run(&loop, UV_RUN_NOWAIT);
                        usleep(500);
                }
        }
        assert_int_equal(c.done, 1);
        assert_int_equal(c.code, API_OK);
        assert_int_equal(c.size, 1234);
        assert_int_equal(l->n_inflight, 0);
        assert_int_equal(rec.idle, 1); /* nothing in flight: the owner's idle clock starts */
        assert_int_equal(rec.failed, 0);
}

static void test_replies_out_of_order(void **state) {
        WorkerLink *l = ready_link();
        TestCall a = TEST_CALL, b = TEST_CALL;
        link_send(l, &a.call);
        link_send(l, &b.call);
        uint64_t ia = fw_request(&loop, NULL), ib = fw_request(&loop, NULL);
        assert_int_not_equal(ia, ib);
        /* Both in one write, the second request's first. */
        StrBuf out = STRBUF_INIT;
        fw_stat_reply(ib, 2, &out);
        fw_stat_reply(ia, 1, &out);
        fw_send(&out);
        fw_run_until_done(&loop, &a);
        fw_run_until_done(&loop, &b);
        assert_int_equal(a.size, 1);
        assert_int_equal(b.size, 2);
        assert_int_equal(rec.idle, 1); /* once, after the last */
}

/* Ended: the call failed with code and a message holding why; the owner
 * heard it once; the link closed its end of the socket. */
static void assert_ended(TestCall *c, ApiError code, const char *why) {
        assert_true(fw_run_until(&loop, failed));
        assert_int_equal(rec.failed, 1);
        assert_int_equal(rec.failed_code, code);
        assert_int_equal(rec.sessions_end, 1);
        if (c) {
                assert_int_equal(c->done, 1);
                assert_int_equal(c->code, code);
                if (!strstr(c->message, why))
                        fail_msg("the call failed with \"%s\", not \"%s\"", c->message, why);
        }
        if (!strstr(rec.failed_why, why))
                fail_msg("the link ended with \"%s\", not \"%s\"", rec.failed_why, why);
        assert_int_equal(rec.failed_state, LINK_DEAD);
        assert_false(rec.failed_kept_ws); /* it let go of its workspace */
        assert_int_equal(srv.n_workers, 0);
        JsonlMsg m;
        if (fw_fd >= 0)
                assert_int_equal(fw_recv(&loop, &m), -EPIPE);
}

static void test_reply_to_no_request(void **state) {
        WorkerLink *l = ready_link();
        TestCall c = TEST_CALL;
        link_send(l, &c.call);
        uint64_t id = fw_request(&loop, NULL);
        StrBuf out = STRBUF_INIT;
        fw_stat_reply(id + 100, 1, &out);
        fw_send(&out);
        assert_ended(&c, API_ERROR_WORKER_CRASHED, "a reply to no request");
}

static void test_dies_mid_reply(void **state) {
        WorkerLink *l = ready_link();
        TestCall c = TEST_CALL;
        link_send(l, &c.call);
        uint64_t id = fw_request(&loop, NULL);
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        fw_stat_reply(id, 1, &out);
        fw_write(out.data, out.len / 2);
        for (int i = 0; i < 20; i++) {
                uv_run(&loop, UV_RUN_NOWAIT);
                usleep(500);
        }
        assert_int_equal(c.done, 0); /* half a reply is no reply */
        close(fw_fd);
        fw_fd = -1;
        assert_ended(&c, API_ERROR_WORKER_CRASHED, "ended unexpectedly (end of its output)");
}

static void test_garbage_line(void **state) {
        WorkerLink *l = ready_link();
        TestCall c = TEST_CALL;
        link_send(l, &c.call);
        (void) fw_request(&loop, NULL);
        fw_write("this is not json\n", 17);
        assert_ended(&c, API_ERROR_WORKER_CRASHED, "protocol violation");
}

static void test_bad_session_event(void **state) {
        (void) ready_link();
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        ProtocolSessionEvent e = { .type = PROTOCOL_SESSION_OUTPUT, .session = 99 };
        assert_int_equal(protocol_encode_session_event(&b, &e, "x", 1), 0);
        fw_write(b.data, b.len);
        assert_ended(NULL, API_ERROR_WORKER_CRASHED, "an event for no session");
}

/* The worker goes before its handshake: the start failed, the jail is
 * unavailable, and the spawn slot is given back. */
static void test_dies_before_hello(void **state) {
        VsError *err = NULL;
        assert_int_equal(link_start(&ws, &ops, &start, &err), 0);
        assert_true(fw_run_until(&loop, started));
        assert_int_equal(rec.ready, 0);
        close(fw_fd);
        fw_fd = -1;
        assert_ended(NULL, API_ERROR_SANDBOX_UNAVAILABLE, "the jail could not start");
        assert_true(rec.slot_free >= 1);
}

/* A message out of turn in the handshake (a reply before hello). */
static void test_reply_during_handshake(void **state) {
        VsError *err = NULL;
        assert_int_equal(link_start(&ws, &ops, &start, &err), 0);
        assert_true(fw_run_until(&loop, started));
        StrBuf out = STRBUF_INIT;
        fw_stat_reply(1, 1, &out);
        fw_send(&out);
        assert_ended(NULL, API_ERROR_SANDBOX_UNAVAILABLE, "the jail could not start");
        assert_int_equal(rec.ready, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_reply_in_pieces, setup, teardown),
                cmocka_unit_test_setup_teardown(test_replies_out_of_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reply_to_no_request, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dies_mid_reply, setup, teardown),
                cmocka_unit_test_setup_teardown(test_garbage_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_session_event, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dies_before_hello, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reply_during_handshake, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
