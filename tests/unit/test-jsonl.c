/* SPDX-License-Identifier: MIT */
/* JSON-lines framing, dispatch tables and protocol codecs. Expected values
 * come from docs/protocol.md and the headers, not from running the code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "json-ascii.h"
#include "json-util.h"
#include "jsonl.h"
#include "protocol.h"
#include "utf8.h"

static JsonlReader *reader(void) {
        JsonlReader *r = NULL;
        assert_int_equal(jsonl_reader_new(&r), 0);
        return r;
}

static void feed_str(JsonlReader *r, const char *s) {
        assert_int_equal(jsonl_reader_feed(r, s, strlen(s)), 0);
}

static int next(JsonlReader *r, JsonlMsg *m) {
        VsError *err = NULL;
        int k = jsonl_reader_next(r, m, &err);
        if (k < 0 && k != -EAGAIN)
                assert_non_null(err);
        vs_error_free(err);
        return k;
}

static const char *str_field(JsonlMsg *m, const char *k) {
        return json_string_value(json_object_get(m->obj, k));
}

static void test_single(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(next(r, &m), -EAGAIN);
        feed_str(r, "{\"a\":\"b\"}\n");
        assert_int_equal(next(r, &m), 0);
        assert_string_equal(str_field(&m, "a"), "b");
        assert_false(m.has_raw);
        assert_null(m.raw);
        jsonl_msg_done(&m);
        assert_int_equal(next(r, &m), -EAGAIN);
        assert_int_equal(jsonl_reader_pending(r), 0);
        jsonl_reader_free(r);
}

/* release keeps what is not yet returned (a half line, a raw payload
 * still arriving) and frees only an empty buffer; reading goes on after. */
static void test_release(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        feed_str(r, "{\"n\":1}\n{\"n\"");
        assert_int_equal(next(r, &m), 0);
        jsonl_msg_done(&m);
        jsonl_reader_release(r);
        assert_int_equal(jsonl_reader_pending(r), 4);
        feed_str(r, ":2,\"raw\":3}\nab");
        jsonl_reader_release(r);
        assert_int_equal(next(r, &m), -EAGAIN); /* the header waits for its raw */
        jsonl_reader_release(r);
        feed_str(r, "c");
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(json_integer_value(json_object_get(m.obj, "n")), 2);
        assert_true(m.has_raw);
        assert_memory_equal(m.raw, "abc", 3);
        jsonl_msg_done(&m);
        assert_int_equal(jsonl_reader_pending(r), 0);
        jsonl_reader_release(r);
        feed_str(r, "{\"n\":3}\n");
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(json_integer_value(json_object_get(m.obj, "n")), 3);
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
}

static void test_two_in_one_feed(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        feed_str(r, "{\"n\":1}\n{\"n\":2}\n{\"n\":");
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(json_integer_value(json_object_get(m.obj, "n")), 1);
        jsonl_msg_done(&m);
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(json_integer_value(json_object_get(m.obj, "n")), 2);
        jsonl_msg_done(&m);
        assert_int_equal(next(r, &m), -EAGAIN);
        assert_int_equal(jsonl_reader_pending(r), 5);
        feed_str(r, "3}\n");
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(json_integer_value(json_object_get(m.obj, "n")), 3);
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
}

static void test_byte_by_byte_with_raw(void **state) {
        const char *s = "{\"op\":\"x\",\"raw\":5}\nhe\nlo{\"op\":\"y\"}\n";
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        int got = 0;
        for (size_t i = 0; s[i]; i++) {
                assert_int_equal(jsonl_reader_feed(r, s + i, 1), 0);
                int k;
                while ((k = next(r, &m)) == 0) {
                        if (got == 0) {
                                assert_string_equal(str_field(&m, "op"), "x");
                                assert_true(m.has_raw);
                                assert_int_equal(m.raw_len, 5);
                                assert_memory_equal(m.raw, "he\nlo", 5);
                                /* "raw" is reported in the msg, not left in the object */
                                assert_null(json_object_get(m.obj, "raw"));
                        } else {
                                assert_string_equal(str_field(&m, "op"), "y");
                                assert_false(m.has_raw);
                        }
                        got++;
                        jsonl_msg_done(&m);
                }
                assert_int_equal(k, -EAGAIN);
        }
        assert_int_equal(got, 2);
        jsonl_reader_free(r);
}

static void test_raw_zero(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        feed_str(r, "{\"raw\":0}\n{}\n");
        assert_int_equal(next(r, &m), 0);
        assert_true(m.has_raw);
        assert_int_equal(m.raw_len, 0);
        assert_int_equal(json_object_size(m.obj), 0);
        jsonl_msg_done(&m);
        assert_int_equal(next(r, &m), 0);
        assert_false(m.has_raw);
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
}

static void test_large_raw_one_feed_then_message(void **state) {
        size_t n = 200000;
        char *buf = malloc(n + 64);
        int h = sprintf(buf, "{\"raw\":%zu}\n", n);
        for (size_t i = 0; i < n; i++)
                buf[h + i] = (char) ('a' + i % 26);
        strcpy(buf + h + n, "{\"z\":1}\n");
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(jsonl_reader_feed(r, buf, h + n + 8), 0);
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(m.raw_len, n);
        assert_memory_equal(m.raw, buf + h, n);
        assert_int_equal(m.raw[n], 0);
        size_t len = 0;
        char *stolen = jsonl_msg_steal_raw(&m, &len);
        assert_non_null(stolen);
        assert_int_equal(len, n);
        assert_memory_equal(stolen, buf + h, n);
        free(stolen);
        jsonl_msg_done(&m);
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(json_integer_value(json_object_get(m.obj, "z")), 1);
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
        free(buf);
}

static void test_zero_copy_buffer(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        void *p;
        size_t room;
        const char *hdr = "{\"raw\":100000}\n";
        assert_int_equal(jsonl_reader_get_buffer(r, 16, &p, &room), 0);
        assert_true(room >= 16);
        memcpy(p, hdr, strlen(hdr));
        jsonl_reader_commit(r, strlen(hdr));
        assert_int_equal(next(r, &m), -EAGAIN);
        /* The body now goes straight into the payload: exactly what is left. */
        assert_int_equal(jsonl_reader_get_buffer(r, 0, &p, &room), 0);
        assert_int_equal(room, 100000);
        memset(p, 'x', 60000);
        jsonl_reader_commit(r, 60000);
        assert_int_equal(next(r, &m), -EAGAIN);
        assert_int_equal(jsonl_reader_get_buffer(r, 0, &p, &room), 0);
        assert_int_equal(room, 40000);
        memset(p, 'y', 40000);
        jsonl_reader_commit(r, 40000);
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(m.raw_len, 100000);
        assert_int_equal(m.raw[59999], 'x');
        assert_int_equal(m.raw[60000], 'y');
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
}

static void test_oversize_line_without_newline(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        char *big = malloc(JSONL_MAX_LINE + 1);
        memset(big, ' ', JSONL_MAX_LINE + 1);
        assert_int_equal(jsonl_reader_feed(r, big, JSONL_MAX_LINE), 0);
        assert_int_equal(next(r, &m), -EAGAIN); /* exactly the limit: still possible */
        assert_int_equal(jsonl_reader_feed(r, big, 1), 0);
        assert_int_equal(next(r, &m), -EMSGSIZE);
        assert_true(jsonl_reader_failed(r));
        assert_int_equal(next(r, &m), -EMSGSIZE); /* sticky */
        assert_int_equal(jsonl_reader_feed(r, "{}\n", 3), -EMSGSIZE);
        free(big);
        jsonl_reader_free(r);
}

static void test_line_at_limit_ok(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        char *big = malloc(JSONL_MAX_LINE + 2);
        if (!big)
                abort();
        /* {"a":"xxx...x"} of exactly JSONL_MAX_LINE bytes */
        size_t fill = JSONL_MAX_LINE - strlen("{\"a\":\"\"}");
        strcpy(big, "{\"a\":\"");
        memset(big + 6, 'x', fill);
        strcpy(big + 6 + fill, "\"}\n");
        assert_int_equal(strlen(big), JSONL_MAX_LINE + 1);
        assert_int_equal(jsonl_reader_feed(r, big, JSONL_MAX_LINE + 1), 0);
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(strlen(str_field(&m, "a")), fill);
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
        free(big);
}

static void test_oversize_raw(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        char line[64];
        snprintf(line, sizeof line, "{\"raw\":%u}\n", JSONL_MAX_RAW + 1);
        feed_str(r, line);
        assert_int_equal(next(r, &m), -EMSGSIZE);
        assert_true(jsonl_reader_failed(r));
        jsonl_reader_free(r);

        r = reader();
        snprintf(line, sizeof line, "{\"raw\":%u}\n", JSONL_MAX_RAW);
        feed_str(r, line);
        assert_int_equal(next(r, &m), -EAGAIN); /* at the limit: waits for the bytes */
        jsonl_reader_free(r);
}

static void test_bad_raw_value(void **state) {
        const char *cases[] = { "{\"raw\":-1}\n", "{\"raw\":\"5\"}\n", "{\"raw\":1.5}\n", "{\"raw\":null}\n" };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                JsonlReader *r = reader();
                JsonlMsg m = JSONL_MSG_INIT;
                feed_str(r, cases[i]);
                assert_int_equal(next(r, &m), -EPROTO);
                assert_true(jsonl_reader_failed(r));
                jsonl_reader_free(r);
        }
}

static char *nested(int depth) {
        char *s = malloc(2 * depth + 16);
        size_t o = 0;
        s[o++] = '{';
        s[o++] = '"';
        s[o++] = 'a';
        s[o++] = '"';
        s[o++] = ':';
        for (int i = 1; i < depth; i++)
                s[o++] = '[';
        s[o++] = '1';
        for (int i = 1; i < depth; i++)
                s[o++] = ']';
        s[o++] = '}';
        s[o++] = '\n';
        s[o] = 0;
        return s;
}

static void test_depth(void **state) {
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        char *ok = nested(JSONL_MAX_DEPTH), *deep = nested(JSONL_MAX_DEPTH + 1);
        feed_str(r, ok);
        assert_int_equal(next(r, &m), 0);
        jsonl_msg_done(&m);
        feed_str(r, deep);
        feed_str(r, "{\"after\":true}\n");
        assert_int_equal(next(r, &m), -EBADMSG);
        assert_false(jsonl_reader_failed(r));
        assert_int_equal(next(r, &m), 0); /* still in sync */
        assert_true(json_is_true(json_object_get(m.obj, "after")));
        jsonl_msg_done(&m);
        /* Brackets inside strings do not count. */
        feed_str(r, "{\"s\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[\"}\n");
        assert_int_equal(next(r, &m), 0);
        jsonl_msg_done(&m);
        free(ok);
        free(deep);
        jsonl_reader_free(r);
}

static void test_duplicates_and_non_objects(void **state) {
        const char *bad[] = { "{\"a\":1,\"a\":2}\n", "[1,2]\n", "42\n", "\"s\"\n", "\n", "{\"a\":\n",
                              "{\"a\":1} x\n", "{\"a\":\"\\u0000\"}\n", "{\"a\":\"\xff\"}\n" };
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                feed_str(r, bad[i]);
                assert_int_equal(next(r, &m), -EBADMSG);
        }
        feed_str(r, "{\"ok\":1}\r\n");
        assert_int_equal(next(r, &m), 0);
        jsonl_msg_done(&m);
        assert_false(jsonl_reader_failed(r));
        jsonl_reader_free(r);
}

static void test_encode(void **state) {
        StrBuf b = STRBUF_INIT;
        json_t *o = json_pack("{s:s, s:i}", "a", "x\ny", "b", 2);
        assert_int_equal(jsonl_encode(o, NULL, 0, &b), 0);
        assert_string_equal(b.data, "{\"a\":\"x\\ny\",\"b\":2}\n");
        strbuf_clear(&b);
        assert_int_equal(jsonl_encode(o, "hey", 3, &b), 0);
        assert_int_equal(b.len, strlen("{\"a\":\"x\\ny\",\"b\":2,\"raw\":3}\nhey"));
        assert_memory_equal(b.data, "{\"a\":\"x\\ny\",\"b\":2,\"raw\":3}\nhey", b.len);
        strbuf_clear(&b);
        json_t *e = json_object();
        assert_int_equal(jsonl_encode(e, "", 0, &b), 0);
        assert_string_equal(b.data, "{\"raw\":0}\n");
        strbuf_clear(&b);
        json_object_set_new(e, "raw", json_integer(1));
        assert_int_equal(jsonl_encode(e, NULL, 0, &b), -EINVAL);
        assert_int_equal(b.len, 0);
        json_t *arr = json_array();
        assert_int_equal(jsonl_encode(arr, NULL, 0, &b), -EINVAL);
        assert_int_equal(jsonl_encode(o, "x", (size_t) JSONL_MAX_RAW + 1, &b), -EMSGSIZE);
        json_decref(arr);
        json_decref(e);
        json_decref(o);
        strbuf_done(&b);
}

static void test_encode_roundtrip(void **state) {
        StrBuf b = STRBUF_INIT;
        json_t *o = json_pack("{s:s}", "k", "v");
        for (int i = 0; i < 3; i++)
                assert_int_equal(jsonl_encode(o, "abc\n", 4, &b), 0);
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(jsonl_reader_feed(r, b.data, b.len), 0);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(next(r, &m), 0);
                assert_string_equal(str_field(&m, "k"), "v");
                assert_int_equal(m.raw_len, 4);
                assert_memory_equal(m.raw, "abc\n", 4);
                jsonl_msg_done(&m);
        }
        assert_int_equal(next(r, &m), -EAGAIN);
        jsonl_reader_free(r);
        json_decref(o);
        strbuf_done(&b);
}

/* ---- dispatch tables ---- */

typedef struct Sub {
        uint64_t n;
} Sub;

typedef struct T {
        const char *s;
        const char *sn;
        uint64_t u;
        int64_t i;
        bool b;
        char **v;
        json_t *map;
        Sub sub;
} T;

static const JsonField sub_table[] = {
        { "n", JSON_FIELD_UINT64, offsetof(Sub, n), JSON_FIELD_REQUIRED },
        {}
};

static const JsonField t_table[] = {
        { "s", JSON_FIELD_STRING, offsetof(T, s), JSON_FIELD_REQUIRED },
        { "sn", JSON_FIELD_STRING_OR_NULL, offsetof(T, sn), 0 },
        { "u", JSON_FIELD_UINT64, offsetof(T, u), 0 },
        { "i", JSON_FIELD_INT64, offsetof(T, i), 0 },
        { "b", JSON_FIELD_BOOL, offsetof(T, b), 0 },
        { "v", JSON_FIELD_STRV, offsetof(T, v), 0 },
        { "map", JSON_FIELD_STRMAP, offsetof(T, map), 0 },
        { "sub", JSON_FIELD_OBJECT, offsetof(T, sub), 0, sub_table },
        {}
};

static int dispatch_str(const char *json, T *t, char **ret_msg) {
        json_t *o = json_loads(json, 0, NULL);
        assert_non_null(o);
        VsError *err = NULL;
        *t = (T) {};
        int k = json_dispatch(o, t_table, t, &err);
        if (ret_msg)
                *ret_msg = k < 0 ? strdup(vs_error_message(err)) : NULL;
        vs_error_free(err);
        if (k == 0)
                json_dispatch_done(t_table, t);
        json_decref(o);
        return k;
}

static void expect_error(const char *json, const char *msg) {
        T t;
        char *m = NULL;
        assert_int_equal(dispatch_str(json, &t, &m), -EINVAL);
        assert_string_equal(m, msg);
        free(m);
}

static void test_dispatch_ok(void **state) {
        json_t *o = json_loads("{\"s\":\"x\",\"sn\":null,\"u\":7,\"i\":-3,\"b\":true,\"v\":[\"a\",\"b\"],"
                               "\"map\":{\"K\":\"V\"},\"sub\":{\"n\":9}}", 0, NULL);
        T t = {};
        VsError *err = NULL;
        assert_int_equal(json_dispatch(o, t_table, &t, &err), 0);
        assert_string_equal(t.s, "x");
        assert_null(t.sn);
        assert_int_equal(t.u, 7);
        assert_int_equal(t.i, -3);
        assert_true(t.b);
        assert_string_equal(t.v[0], "a");
        assert_string_equal(t.v[1], "b");
        assert_null(t.v[2]);
        assert_string_equal(json_string_value(json_object_get(t.map, "K")), "V");
        assert_int_equal(t.sub.n, 9);
        json_dispatch_done(t_table, &t);
        assert_null(t.v);
        json_decref(o);
}

static void test_dispatch_errors(void **state) {
        expect_error("{\"s\":\"x\",\"x\":1}", "unknown field 'x'");
        expect_error("{\"s\":1}", "field 's' must be a string");
        expect_error("{}", "missing field 's'");
        expect_error("{\"s\":null}", "field 's' must be a string");
        expect_error("{\"s\":\"x\",\"u\":-1}", "field 'u' must be a non-negative integer");
        expect_error("{\"s\":\"x\",\"u\":1.0}", "field 'u' must be a non-negative integer");
        expect_error("{\"s\":\"x\",\"b\":1}", "field 'b' must be a boolean");
        expect_error("{\"s\":\"x\",\"v\":[\"a\",1]}", "field 'v' must be an array of strings");
        expect_error("{\"s\":\"x\",\"map\":{\"K\":1}}", "field 'map' must be an object of strings");
        expect_error("{\"s\":\"x\",\"sub\":{\"n\":1,\"m\":2}}", "field 'sub': unknown field 'm'");
        expect_error("{\"s\":\"x\",\"sub\":{}}", "field 'sub': missing field 'n'");
        /* an array allocated before the error is freed again (ASan checks) */
        expect_error("{\"v\":[\"a\"],\"s\":\"x\",\"y\":0}", "unknown field 'y'");
}

/* ---- protocol ---- */

static void test_allowlist(void **state) {
        assert_true(protocol_op_allowed(PROTOCOL_STATE_HELLO_SENT, PROTOCOL_OP_INIT));
        for (int op = PROTOCOL_OP_EXEC; op < _PROTOCOL_OP_MAX; op++) {
                assert_false(protocol_op_allowed(PROTOCOL_STATE_HELLO_SENT, op));
                assert_true(protocol_op_allowed(PROTOCOL_STATE_READY, op));
        }
        assert_false(protocol_op_allowed(PROTOCOL_STATE_READY, PROTOCOL_OP_INIT));
        assert_false(protocol_op_allowed(PROTOCOL_STATE_READY, _PROTOCOL_OP_INVALID));
        assert_int_equal(protocol_op_from_string("init"), _PROTOCOL_OP_INVALID);
        assert_int_equal(protocol_op_from_string("list_dir"), PROTOCOL_OP_LIST_DIR);
        assert_int_equal(protocol_op_from_string("pty_open"), _PROTOCOL_OP_INVALID);
}

static json_t *parse(const char *s) {
        json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
        assert_non_null(o);
        return o;
}

static void test_decode_init_doc_example(void **state) {
        /* The example of docs/protocol.md; "AAAAAAAAAAA=" is 8 zero bytes. */
        json_t *o = parse("{\"type\":\"init\",\"mode\":\"jail\",\"workspace\":\"/home/u/proj\","
                          "\"rw_paths\":[\"/home/u/proj\"],\"ro_paths\":[],\"mask\":[\".env\",\"**/*.pem\"],"
                          "\"protected\":[\"/home/u/proj/vectora.toml\",\"/home/u/proj/.git/hooks\"],"
                          "\"env\":{\"PATH\":\"/usr/bin:/bin\",\"HOME\":\"/home/u\"},"
                          "\"seccomp_bpf\":\"AAAAAAAAAAA=\",\"landlock\":{\"rw\":[\"/home/u/proj\",\"/tmp\"]},"
                          "\"require\":[\"seccomp\",\"landlock\"],"
                          "\"limits\":{\"timeout_ms\":120000,\"max_output\":1048576}}");
        ProtocolInit init;
        VsError *err = NULL;
        assert_int_equal(protocol_decode_init(o, &init, &err), 0);
        assert_int_equal(init.mode, PROTOCOL_MODE_JAIL);
        assert_string_equal(init.workspace, "/home/u/proj");
        assert_string_equal(init.mask[1], "**/*.pem");
        assert_string_equal(init.protected_paths[1], "/home/u/proj/.git/hooks");
        assert_int_equal(init.seccomp_bpf_len, 8);
        assert_true(init.landlock);
        assert_string_equal(init.landlock_rw[1], "/tmp");
        assert_int_equal(init.limits.timeout_ms, 120000);
        assert_int_equal(init.limits.max_output, 1048576);
        bool path = false, home = false;
        for (char **e = init.env; *e; e++) {
                path |= strcmp(*e, "PATH=/usr/bin:/bin") == 0;
                home |= strcmp(*e, "HOME=/home/u") == 0;
        }
        assert_true(path && home);

        /* and back: the encoder's output decodes to the same policy */
        StrBuf b = STRBUF_INIT;
        assert_int_equal(protocol_encode_init(&b, &init), 0);
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(jsonl_reader_feed(r, b.data, b.len), 0);
        assert_int_equal(next(r, &m), 0);
        ProtocolInit again;
        assert_int_equal(protocol_decode_init(m.obj, &again, &err), 0);
        assert_int_equal(again.seccomp_bpf_len, 8);
        assert_string_equal(again.rw_paths[0], "/home/u/proj");
        protocol_init_done(&again);
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
        strbuf_done(&b);
        protocol_init_done(&init);
        json_decref(o);
}

static void expect_init_error(const char *json, const char *msg) {
        json_t *o = parse(json);
        ProtocolInit init;
        VsError *err = NULL;
        assert_int_equal(protocol_decode_init(o, &init, &err), -EINVAL);
        assert_string_equal(vs_error_message(err), msg);
        assert_string_equal(vs_error_kind(err), "bad_request");
        vs_error_free(err);
        json_decref(o);
}

static void test_decode_init_errors(void **state) {
        expect_init_error("{\"type\":\"init\",\"mode\":\"vm\",\"workspace\":\"/w\"}", "unknown mode 'vm'");
        expect_init_error("{\"type\":\"init\",\"mode\":\"jail\",\"workspace\":\"w\"}",
                          "field 'workspace' must be an absolute path");
        expect_init_error("{\"type\":\"init\",\"mode\":\"jail\",\"workspace\":\"/w\",\"rw_paths\":[\"rel\"]}",
                          "field 'rw_paths': path 'rel' is not absolute");
        expect_init_error("{\"type\":\"init\",\"mode\":\"jail\",\"workspace\":\"/w\",\"seccomp_bpf\":\"AAAA\"}",
                          "field 'seccomp_bpf' is not a whole BPF program");
        expect_init_error("{\"type\":\"init\",\"mode\":\"jail\",\"workspace\":\"/w\",\"require\":[\"apparmor\"]}",
                          "unknown layer 'apparmor' in 'require'");
        expect_init_error("{\"type\":\"init\",\"mode\":\"jail\",\"workspace\":\"/w\",\"extra\":1}",
                          "unknown field 'extra'");
        expect_init_error("{\"type\":\"init\",\"mode\":\"jail\",\"workspace\":\"/w\",\"env\":{\"A=B\":\"x\"}}",
                          "env key 'A=B' is empty or contains '='");
}

static void test_request_head(void **state) {
        ProtocolRequestHead h;
        VsError *err = NULL;
        json_t *o = parse("{\"id\":5,\"op\":\"nope\"}");
        assert_int_equal(protocol_decode_request_head(o, &h, &err), -EOPNOTSUPP);
        assert_string_equal(vs_error_kind(err), "unknown_op");
        vs_error_free(err);
        err = NULL;
        json_decref(o);
        o = parse("{\"op\":\"stat\"}");
        assert_int_equal(protocol_decode_request_head(o, &h, &err), -EINVAL);
        assert_string_equal(vs_error_message(err), "missing field 'id'");
        vs_error_free(err);
        err = NULL;
        json_decref(o);
        o = parse("{\"type\":\"init\"}");
        assert_int_equal(protocol_decode_request_head(o, &h, &err), 0);
        assert_int_equal(h.op, PROTOCOL_OP_INIT);
        json_decref(o);
}

static void test_exec_roundtrip(void **state) {
        char *argv[] = { "/bin/sh", "-c", "cat", NULL };
        char *env[] = { "K=V", NULL };
        ProtocolExecRequest req = { .argv = argv, .cwd = "sub", .env = env, .timeout_ms = 5 };
        StrBuf b = STRBUF_INIT;
        assert_int_equal(protocol_encode_exec_request(&b, 42, &req, "in", 2), 0);
        JsonlReader *r = reader();
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(jsonl_reader_feed(r, b.data, b.len), 0);
        assert_int_equal(next(r, &m), 0);
        assert_int_equal(m.raw_len, 2);
        ProtocolExecRequest d;
        VsError *err = NULL;
        assert_int_equal(protocol_decode_exec_request(m.obj, &d, &err), 0);
        assert_int_equal(d.head.id, 42);
        assert_int_equal(d.head.op, PROTOCOL_OP_EXEC);
        assert_string_equal(d.argv[2], "cat");
        assert_string_equal(d.cwd, "sub");
        assert_string_equal(d.env[0], "K=V");
        assert_int_equal(d.timeout_ms, 5);
        assert_int_equal(d.max_output, 0);
        protocol_exec_request_done(&d);
        jsonl_msg_done(&m);

        /* reply: raw must be stdout then stderr */
        strbuf_clear(&b);
        ProtocolExecReply rep = { .exit_code = 137, .signal = 9, .timed_out = true, .stdout_len = 3,
                                  .stderr_len = 2, .stdout_total = 3, .stderr_total = 2 };
        assert_int_equal(protocol_encode_exec_reply(&b, 42, &rep, "out", "er"), 0);
        assert_int_equal(jsonl_reader_feed(r, b.data, b.len), 0);
        assert_int_equal(next(r, &m), 0);
        assert_memory_equal(m.raw, "outer", 5);
        ProtocolExecReply dr;
        assert_int_equal(protocol_decode_exec_reply(m.obj, m.raw_len, &dr, &err), 0);
        assert_int_equal(dr.signal, 9);
        assert_int_equal(dr.exit_code, 137);
        assert_true(dr.timed_out);
        assert_int_equal(protocol_decode_exec_reply(m.obj, 4, &dr, &err), -EINVAL);
        vs_error_free(err);
        jsonl_msg_done(&m);
        jsonl_reader_free(r);
        strbuf_done(&b);
}

static void test_error_reply(void **state) {
        StrBuf b = STRBUF_INIT;
        assert_int_equal(protocol_encode_error(&b, false, 0, PROTOCOL_ERROR_NOT_READY, "init first"), 0);
        assert_string_equal(b.data,
                            "{\"id\":null,\"ok\":false,\"error\":{\"code\":\"not_ready\",\"message\":\"init first\"}}\n");
        json_t *o = parse("{\"id\":null,\"ok\":false,\"error\":{\"code\":\"not_ready\",\"message\":\"init first\"}}");
        ProtocolReplyHead h;
        VsError *err = NULL;
        assert_int_equal(protocol_decode_reply_head(o, &h, &err), 0);
        assert_false(h.has_id);
        assert_false(h.ok);
        assert_int_equal(h.error_code, PROTOCOL_ERROR_NOT_READY);
        assert_string_equal(h.error_message, "init first");
        json_decref(o);
        strbuf_done(&b);

        VsError e = { .code = -EACCES, .kind = (char *) "denied", .message = (char *) "x" };
        assert_int_equal(protocol_error_code_from_error(-EACCES, &e), PROTOCOL_ERROR_DENIED);
        assert_int_equal(protocol_error_code_from_error(-ENOENT, NULL), PROTOCOL_ERROR_NOT_FOUND);
        assert_int_equal(protocol_error_code_from_error(-EIO, NULL), PROTOCOL_ERROR_IO);
}

static void test_write_request_checks(void **state) {
        ProtocolWriteFileRequest w;
        VsError *err = NULL;
        json_t *o = parse("{\"id\":1,\"op\":\"write_file\",\"path\":\"a\",\"mode\":4096}");
        assert_int_equal(protocol_decode_write_file_request(o, &w, &err), -EINVAL);
        vs_error_free(err);
        err = NULL;
        json_decref(o);
        o = parse("{\"id\":1,\"op\":\"write_file\",\"path\":\"a\",\"if_sha256\":\"abc\"}");
        assert_int_equal(protocol_decode_write_file_request(o, &w, &err), -EINVAL);
        vs_error_free(err);
        err = NULL;
        json_decref(o);
        o = parse("{\"id\":1,\"op\":\"write_file\",\"path\":\"a\",\"mode\":420,\"if_sha256\":\"\"}");
        assert_int_equal(protocol_decode_write_file_request(o, &w, &err), 0);
        assert_true(w.has_mode);
        assert_int_equal(w.mode, 0644);
        assert_string_equal(w.if_sha256, "");
        json_decref(o);
}

/* ---- jsonl_encode_texts / utf8_valid ---- */

static void test_utf8_valid(void **state) {
        struct {
                const char *s;
                size_t n;
                bool ok;
        } cases[] = {
                { "plain ascii", 11, true },
                { "\xc3\xa9", 2, true },                 /* é */
                { "\xe2\x82\xac", 3, true },             /* € */
                { "\xf0\x9f\x98\x80", 4, true },         /* U+1F600 */
                { "a\0b", 3, true },                     /* NUL is valid (escaped) */
                { "\xc0\xaf", 2, false },                /* overlong '/' */
                { "\xe0\x80\xaf", 3, false },            /* overlong */
                { "\xed\xa0\x80", 3, false },            /* surrogate U+D800 */
                { "\xf4\x90\x80\x80", 4, false },        /* > U+10FFFF */
                { "\xc3", 1, false },                    /* truncated */
                { "\x80", 1, false },                    /* stray continuation */
                { "abcdefgh\xff", 9, false },            /* after an 8-byte ASCII run */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                if (utf8_valid(cases[i].s, cases[i].n) != cases[i].ok)
                        fail_msg("case %zu", i);
}

static void test_escaped_len(void **state) {
        /* The predicted size is what the encoder writes: {"s":"..."}\n is
         * 9 bytes around the escaped text. */
        unsigned seed = 777;
        for (int round = 0; round < 500; round++) {
                char buf[200];
                size_t n = (size_t) (rand_r(&seed) % sizeof buf);
                for (size_t i = 0; i < n; i++) {
                        int r = rand_r(&seed) % 4;
                        buf[i] = r == 0 ? (char) (rand_r(&seed) % 0x20) : r == 1 ? '"' : r == 2 ? '\\' : 'a';
                }
                json_t *o = json_object();
                JsonlText t = { "s", buf, n };
                StrBuf out = STRBUF_INIT;
                assert_int_equal(jsonl_encode_texts(o, &t, 1, NULL, 0, &out), 0);
                assert_int_equal(out.len, jsonl_escaped_len(buf, n) + 9);
                /* A prefix and a suffix within a budget stay within it. */
                size_t budget = (size_t) (rand_r(&seed) % 300);
                size_t h = jsonl_escaped_prefix(buf, n, budget), tl = jsonl_escaped_suffix(buf, n, budget);
                assert_true(h <= n && jsonl_escaped_len(buf, h) <= budget);
                assert_true(tl <= n && jsonl_escaped_len(buf + n - tl, tl) <= budget);
                if (h < n)
                        assert_true(jsonl_escaped_len(buf, h + 1) > budget);
                json_decref(o);
                strbuf_done(&out);
        }
        /* Never inside a UTF-8 sequence: "é" is two bytes. */
        assert_int_equal(jsonl_escaped_prefix("a\xc3\xa9" "b", 4, 2), 1);
        assert_int_equal(jsonl_escaped_suffix("a\xc3\xa9" "b", 4, 2), 1);
        assert_int_equal(jsonl_escaped_suffix("a\xc3\xa9" "b", 4, 3), 3);
        assert_int_equal(jsonl_escaped_len("\x01\n\"x", 4), 6 + 2 + 2 + 1);
}

static void test_encode_texts_roundtrip(void **state) {
        /* Random text with every control character and quote/backslash:
         * jansson must decode exactly what went in. */
        unsigned seed = 12345;
        for (int round = 0; round < 2000; round++) {
                char buf[300];
                size_t n = (size_t) (rand_r(&seed) % sizeof buf);
                for (size_t i = 0; i < n; i++) {
                        int r = rand_r(&seed) % 5;
                        buf[i] = r == 0 ? (char) (rand_r(&seed) % 0x20) : r == 1 ? '"' : r == 2 ? '\\' : (char) (0x20 + rand_r(&seed) % 0x5f);
                }
                json_t *o = json_pack("{s:i}", "id", round);
                JsonlText t[2] = { { "stdout", buf, n }, { "stderr", "\xc3\xa9\n", 3 } };
                StrBuf out = STRBUF_INIT;
                assert_int_equal(jsonl_encode_texts(o, t, 2, NULL, 0, &out), 0);
                assert_true(out.len > 0 && out.data[out.len - 1] == '\n');
                json_error_t e;
                json_t *back = json_loadb(out.data, out.len - 1, JSON_ALLOW_NUL, &e);
                if (!back)
                        fail_msg("round %d: %s in %s", round, e.text, out.data);
                json_t *so = json_object_get(back, "stdout");
                assert_true(json_is_string(so));
                assert_int_equal(json_string_length(so), n);
                assert_memory_equal(json_string_value(so), buf, n);
                assert_string_equal(json_string_value(json_object_get(back, "stderr")), "\xc3\xa9\n");
                assert_int_equal(json_integer_value(json_object_get(back, "id")), round);
                json_decref(back);
                json_decref(o);
                strbuf_done(&out);
        }
}

static void test_encode_texts_errors(void **state) {
        json_t *o = json_pack("{s:i}", "id", 1);
        StrBuf out = STRBUF_INIT;
        JsonlText bad = { "stdout", "\xff", 1 };
        assert_int_equal(jsonl_encode_texts(o, &bad, 1, NULL, 0, &out), -EILSEQ);
        assert_int_equal(out.len, 0);
        JsonlText dup = { "id", "x", 1 };
        assert_int_equal(jsonl_encode_texts(o, &dup, 1, NULL, 0, &out), -EINVAL);
        /* Over the line limit: refused, out untouched. */
        size_t big = JSONL_MAX_LINE / 6 + 10;
        char *ctl = calloc(1, big);
        if (!ctl)
                abort();
        memset(ctl, 1, big);
        JsonlText huge = { "content", ctl, big };
        assert_int_equal(jsonl_encode_texts(o, &huge, 1, NULL, 0, &out), -EMSGSIZE);
        assert_int_equal(out.len, 0);
        /* Empty object plus raw: still one valid header with "raw". */
        json_t *e = json_object();
        JsonlText t = { "content", "hi", 2 };
        assert_int_equal(jsonl_encode_texts(e, &t, 1, "RAW", 3, &out), 0);
        assert_int_equal(out.len, strlen("{\"raw\":3,\"content\":\"hi\"}\nRAW"));
        assert_memory_equal(out.data, "{\"raw\":3,\"content\":\"hi\"}\nRAW", out.len);
        free(ctl);
        json_decref(e);
        json_decref(o);
        strbuf_done(&out);
}

/* json-ascii.h: the bytes jansson's compact ASCII dump writes. */
static void ascii_same_as_jansson(const json_t *v) {
        char *want = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
        assert_non_null(want);
        StrBuf b = STRBUF_INIT;
        assert_int_equal(json_ascii_append(&b, v), 0);
        assert_string_equal(b.data, want);
        strbuf_done(&b);
        free(want);
}

static void test_json_ascii(void **state) {
        static const struct {
                const char *in;
                size_t n;
                const char *out;
        } hand[] = {
                { "plain", 5, "\"plain\"" },
                { "q\"b\\s/", 6, "\"q\\\"b\\\\s/\"" },
                { "\b\f\n\r\t\x01\x1f\x7f", 8, "\"\\b\\f\\n\\r\\t\\u0001\\u001F\x7f\"" },
                { "a\0b", 3, "\"a\\u0000b\"" },
                { "\xc3\xa9\xe2\x82\xac", 5, "\"\\u00E9\\u20AC\"" },
                { "\xf0\x9f\x98\x80", 4, "\"\\uD83D\\uDE00\"" },
                /* Not UTF-8: each offending byte is U+FFFD, the rest kept. */
                { "a\xff" "b\xc3", 4, "\"a\\uFFFDb\\uFFFD\"" },
                { "\xed\xa0\x80", 3, "\"\\uFFFD\\uFFFD\\uFFFD\"" },
        };
        for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
                StrBuf b = STRBUF_INIT;
                assert_int_equal(json_ascii_append_string(&b, hand[i].in, hand[i].n), 0);
                assert_string_equal(b.data, hand[i].out);
                strbuf_done(&b);
        }
        const int64_t ints[] = { 0, 7, -1, 1000, INT64_MAX, INT64_MIN, -9000000000 };
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
                json_t *v = json_integer(ints[i]);
                ascii_same_as_jansson(v);
                json_decref(v);
        }
        json_t *o = json_pack("{s:[s,s,s],s:{s:i,s:b,s:n,s:f},s:[],s:{}}", "argv", "sh", "-c", "echo \xc3\xa9\t\"x\"",
                              "target", "pty", 3, "timed_out", 0, "signal", "real", 1.25, "empty", "obj");
        assert_non_null(o);
        ascii_same_as_jansson(o);
        json_decref(o);
        /* Random valid UTF-8 (every class of byte sequence), against jansson. */
        unsigned seed = 4242;
        static const char *pieces[] = { "a", "\"", "\\", "\n", "\x01", "\x7f", "\xc3\xa9", "\xe2\x82\xac",
                                        "\xef\xbf\xbf", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", " ", "/" };
        for (int round = 0; round < 300; round++) {
                char buf[256];
                size_t n = 0, k = (size_t)(rand_r(&seed) % 40);
                for (size_t j = 0; j < k; j++) {
                        const char *p = pieces[rand_r(&seed) % (sizeof pieces / sizeof pieces[0])];
                        memcpy(buf + n, p, strlen(p));
                        n += strlen(p);
                }
                json_t *v = json_stringn(buf, n);
                assert_non_null(v);
                ascii_same_as_jansson(v);
                json_decref(v);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_single),
                cmocka_unit_test(test_release),
                cmocka_unit_test(test_two_in_one_feed),
                cmocka_unit_test(test_byte_by_byte_with_raw),
                cmocka_unit_test(test_raw_zero),
                cmocka_unit_test(test_large_raw_one_feed_then_message),
                cmocka_unit_test(test_zero_copy_buffer),
                cmocka_unit_test(test_oversize_line_without_newline),
                cmocka_unit_test(test_line_at_limit_ok),
                cmocka_unit_test(test_oversize_raw),
                cmocka_unit_test(test_bad_raw_value),
                cmocka_unit_test(test_depth),
                cmocka_unit_test(test_duplicates_and_non_objects),
                cmocka_unit_test(test_encode),
                cmocka_unit_test(test_encode_roundtrip),
                cmocka_unit_test(test_dispatch_ok),
                cmocka_unit_test(test_dispatch_errors),
                cmocka_unit_test(test_allowlist),
                cmocka_unit_test(test_decode_init_doc_example),
                cmocka_unit_test(test_decode_init_errors),
                cmocka_unit_test(test_request_head),
                cmocka_unit_test(test_exec_roundtrip),
                cmocka_unit_test(test_error_reply),
                cmocka_unit_test(test_write_request_checks),
                cmocka_unit_test(test_utf8_valid),
                cmocka_unit_test(test_escaped_len),
                cmocka_unit_test(test_encode_texts_roundtrip),
                cmocka_unit_test(test_encode_texts_errors),
                cmocka_unit_test(test_json_ascii),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
