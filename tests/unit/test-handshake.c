/* SPDX-License-Identifier: MIT */
/* The worker handshake (handshake.h), fed the messages the worker's own
 * encoders write: hello then init then ready; init_failed; a version
 * mismatch; messages out of turn; which layers a result may claim and the
 * degraded list merged from both sides. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "msg-fixture.h"
#include "handshake.h"
#include "protocol.h"
#include "strv.h"

static int feed(VsHandshake *h, const StrBuf *msg, StrBuf *out, VsError **err) {
        JsonlMsg m = parse(msg);
        int r = handshake_feed(h, &m, out, err);
        jsonl_msg_done(&m);
        return r;
}

static JsonlMsg hello_msg(int64_t version) {
        StrBuf b = STRBUF_INIT;
        ProtocolHello h = { .version = version, .arch = (char *)"x86_64", .pid = 1 };
        assert_int_equal(protocol_encode_hello(&b, &h), 0);
        JsonlMsg m = parse(&b);
        strbuf_done(&b);
        return m;
}

static void hello(VsHandshake *h) {
        JsonlMsg m = hello_msg(PROTOCOL_VERSION);
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        assert_int_equal(handshake_feed(h, &m, &out, NULL), VS_HANDSHAKE_SEND);
        jsonl_msg_done(&m);
        /* What goes out is an init the worker decodes. */
        JsonlMsg i = parse(&out);
        ProtocolInit init;
        assert_int_equal(protocol_decode_init(i.obj, &init, NULL), 0);
        assert_string_equal(init.workspace, "/ws");
        protocol_init_done(&init);
        jsonl_msg_done(&i);
        assert_int_equal(h->state, VS_HANDSHAKE_INIT);
}

static int ready(VsHandshake *h, bool seccomp, int64_t landlock, char **degraded) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        ProtocolReady rd = { .no_new_privs = true, .seccomp = seccomp, .landlock_abi = landlock, .degraded = degraded };
        assert_int_equal(protocol_encode_ready(&b, &rd), 0);
        return feed(h, &b, NULL, NULL);
}

static VsLaunch launch(bool sandboxed, char **degraded) {
        static char *empty[] = { NULL };
        return (VsLaunch){ .sandboxed = sandboxed, .workspace = (char *)"/ws", .rw_paths = empty, .ro_paths = empty,
                           .mask = empty, .protected_paths = empty, .env = empty, .degraded = degraded };
}

static void test_ready(void **state) {
        char *ld[] = { (char *)"gpu: no device", NULL };
        VsLaunch l = launch(true, ld);
        VsHandshake h;
        handshake_init(&h, &l);
        hello(&h);
        char *wd[] = { (char *)"landlock: kernel without Landlock", (char *)"gpu: no device", NULL };
        assert_int_equal(ready(&h, true, 0, wd), VS_HANDSHAKE_OK);
        assert_int_equal(h.state, VS_HANDSHAKE_READY);
        _cleanup_free_ char *layers = strv_join(h.layers, ",");
        assert_string_equal(layers, "namespaces,no_new_privs,seccomp");
        /* The launch's first, then the worker's, each once. */
        _cleanup_free_ char *deg = strv_join(h.degraded, ";");
        assert_string_equal(deg, "gpu: no device;landlock: kernel without Landlock");
        /* Nothing after ready is the handshake's. */
        VsError *err = NULL;
        JsonlMsg m = hello_msg(PROTOCOL_VERSION);
        assert_true(handshake_feed(&h, &m, NULL, &err) < 0);
        jsonl_msg_done(&m);
        vs_error_free(err);
        handshake_done(&h);
}

/* A backend that could not build namespaces says so: the layer is not
 * claimed, whichever side said it (the daemon's copy had this check, the
 * embedded one did not). */
static void test_no_namespaces_claimed_when_degraded(void **state) {
        char *ld[] = { (char *)"namespaces: bwrap missing on the remote host", NULL };
        VsLaunch l = launch(true, ld);
        VsHandshake h;
        handshake_init(&h, &l);
        hello(&h);
        assert_int_equal(ready(&h, true, 3, NULL), VS_HANDSHAKE_OK);
        _cleanup_free_ char *layers = strv_join(h.layers, ",");
        assert_string_equal(layers, "no_new_privs,seccomp,landlock");
        handshake_done(&h);

        VsLaunch l2 = launch(true, NULL);
        handshake_init(&h, &l2);
        hello(&h);
        char *wd[] = { (char *)"namespaces: not in a user namespace", NULL };
        assert_int_equal(ready(&h, false, 0, wd), VS_HANDSHAKE_OK);
        _cleanup_free_ char *layers2 = strv_join(h.layers, ",");
        assert_string_equal(layers2, "no_new_privs");
        handshake_done(&h);
}

/* Direct mode (unsandboxed): no layer is claimed. */
static void test_direct(void **state) {
        VsLaunch l = launch(false, NULL);
        VsHandshake h;
        handshake_init(&h, &l);
        hello(&h);
        assert_int_equal(ready(&h, false, 0, NULL), VS_HANDSHAKE_OK);
        assert_non_null(h.layers);
        assert_null(h.layers[0]);
        handshake_done(&h);
}

static void test_init_failed(void **state) {
        VsLaunch l = launch(true, NULL);
        VsHandshake h;
        handshake_init(&h, &l);
        hello(&h);
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        assert_int_equal(protocol_encode_init_failed(&b, "lockdown: seccomp unavailable"), 0);
        VsError *err = NULL;
        assert_int_equal(feed(&h, &b, NULL, &err), -EPERM);
        assert_string_equal(vs_error_kind(err), "sandbox_unavailable");
        assert_string_equal(vs_error_message(err), "the jail refused to start: lockdown: seccomp unavailable");
        vs_error_free(err);
        handshake_done(&h);
}

static void test_version_mismatch(void **state) {
        VsLaunch l = launch(true, NULL);
        VsHandshake h;
        handshake_init(&h, &l);
        JsonlMsg m = hello_msg(PROTOCOL_VERSION + 1);
        VsError *err = NULL;
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        assert_int_equal(handshake_feed(&h, &m, &out, &err), -EPROTO);
        assert_non_null(strstr(vs_error_message(err), "version mismatch"));
        assert_int_equal(out.len, 0); /* no init to a worker that speaks another protocol */
        jsonl_msg_done(&m);
        vs_error_free(err);
        handshake_done(&h);
}

/* A reply, or ready before hello: the worker broke the handshake. */
static void test_out_of_turn(void **state) {
        VsLaunch l = launch(true, NULL);
        VsHandshake h;
        handshake_init(&h, &l);
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        assert_int_equal(protocol_encode_ok(&b, 1), 0);
        VsError *err = NULL;
        assert_int_equal(feed(&h, &b, NULL, &err), -EPROTO);
        assert_string_equal(vs_error_message(err), "the worker did not say hello");
        vs_error_free(TAKE_PTR(err));
        strbuf_clear(&b);
        ProtocolReady rd = { 0 };
        assert_int_equal(protocol_encode_ready(&b, &rd), 0);
        assert_int_equal(feed(&h, &b, NULL, &err), -EPROTO);
        vs_error_free(TAKE_PTR(err));
        /* After hello, anything but ready or init_failed. */
        hello(&h);
        strbuf_clear(&b);
        assert_int_equal(protocol_encode_ok(&b, 1), 0);
        assert_int_equal(feed(&h, &b, NULL, &err), -EPROTO);
        assert_string_equal(vs_error_message(err), "the worker did not become ready");
        vs_error_free(err);
        handshake_done(&h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ready),
                cmocka_unit_test(test_no_namespaces_claimed_when_degraded),
                cmocka_unit_test(test_direct),
                cmocka_unit_test(test_init_failed),
                cmocka_unit_test(test_version_mismatch),
                cmocka_unit_test(test_out_of_turn),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
