/* SPDX-License-Identifier: MIT */
/* The pure policy -> modal bridge argv, plan summary and upload manifest. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <string.h>

#include "backend-modal.h"
#include "config.h"
#include "strv.h"
#include "utf8.h"

static const VsConfigEnv test_env = { .workspace = "/ws", .home = "/home/u" };

static VsPolicy *policy(const char *text) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        if (config_parse(text, strlen(text), &test_env, &p, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        return p;
}

static const VsModalEnv menv = { .node = "/usr/bin/node", .bridge = "/opt/vs/bridge.mjs",
                                 .worker_path = "/opt/vs/vectora-worker", .manifest_path = "/run/vs/modal-1.json" };

static char *argv_join(char **a) {
        return strv_join(a, " ");
}

static void test_upload_argv(void **state) {
        VsPolicy *p = policy("[sandbox]\nbackend = \"modal\"\n[sandbox.modal]\napp = \"my-app\"\nimage = \"python:3.12\"\n"
                             "timeout = 600\nregion = \"us-east\"\ncpu = 1.5\nmemory = 2048\n");
        char **a = NULL;
        assert_int_equal(backend_modal_argv(p, &menv, &a, NULL), 0);
        char *j = argv_join(a);
        assert_string_equal(j, "/usr/bin/node /opt/vs/bridge.mjs --app=my-app --image=python:3.12 --timeout=600 "
                               "--region=us-east --cpu=1.5 --memory=2048 --network=on --gpu=off --workspace=/ws "
                               "--worker=/opt/vs/vectora-worker --sync=upload --manifest=/run/vs/modal-1.json");
        free(j);
        strv_free(a);
        policy_free(p);
}

static void test_defaults_and_lockdown(void **state) {
        /* Lockdown forces network off: the Sandbox gets outbound blocked. */
        VsPolicy *p = policy("[sandbox]\nbackend = \"modal\"\nlockdown = true\nnetwork = true\n[sandbox.modal]\nimage = \"debian:12\"\n");
        char **a = NULL;
        assert_int_equal(backend_modal_argv(p, &menv, &a, NULL), 0);
        char *j = argv_join(a);
        assert_string_equal(j, "/usr/bin/node /opt/vs/bridge.mjs --app=vectora-sandbox --image=debian:12 --timeout=3600 "
                               "--network=off --gpu=off --workspace=/ws --worker=/opt/vs/vectora-worker --sync=upload "
                               "--manifest=/run/vs/modal-1.json");
        free(j);
        strv_free(a);
        policy_free(p);
}

static void test_volume_argv(void **state) {
        VsPolicy *p = policy("[sandbox]\nbackend = \"modal\"\nnetwork = false\n[sandbox.modal]\nimage = \"debian:12\"\n"
                             "sync = \"volume\"\nvolume = \"ws-data\"\n");
        VsModalEnv e = menv;
        e.manifest_path = NULL;
        char **a = NULL;
        assert_int_equal(backend_modal_argv(p, &e, &a, NULL), 0);
        char *j = argv_join(a);
        assert_string_equal(j, "/usr/bin/node /opt/vs/bridge.mjs --app=vectora-sandbox --image=debian:12 --timeout=3600 "
                               "--network=off --gpu=off --workspace=/ws --worker=/opt/vs/vectora-worker --sync=volume "
                               "--volume=ws-data");
        free(j);
        strv_free(a);
        policy_free(p);
}

static void test_no_credentials_on_argv(void **state) {
        /* Whatever the environment holds, the argv is built from the policy alone. */
        setenv("MODAL_TOKEN_ID", "ak-unit", 1);
        setenv("MODAL_TOKEN_SECRET", "as-unit", 1);
        VsPolicy *p = policy("[sandbox]\nbackend = \"modal\"\n[sandbox.modal]\nimage = \"debian:12\"\n");
        char **a = NULL;
        assert_int_equal(backend_modal_argv(p, &menv, &a, NULL), 0);
        for (char **s = a; *s; s++) {
                assert_null(strstr(*s, "ak-unit"));
                assert_null(strstr(*s, "as-unit"));
                assert_null(strstr(*s, "token"));
        }
        strv_free(a);
        policy_free(p);
        unsetenv("MODAL_TOKEN_ID");
        unsetenv("MODAL_TOKEN_SECRET");
}

static void test_bad_names_refused(void **state) {
        VsPolicy *p = policy("[sandbox]\nbackend = \"modal\"\n[sandbox.modal]\napp = \"my app\"\nimage = \"debian:12\"\n");
        char **a = NULL;
        VsError *err = NULL;
        assert_int_equal(backend_modal_argv(p, &menv, &a, &err), -EINVAL);
        assert_string_equal(vs_error_kind(err), "config_invalid");
        assert_string_equal(vs_error_message(err),
                            "sandbox.modal.app \"my app\" is not a Modal App name (1-64 of letters, digits, '.', '_', '-')");
        assert_null(a);
        vs_error_free(err);
        policy_free(p);
        assert_true(backend_modal_name_ok("a.b_c-1"));
        assert_false(backend_modal_name_ok(""));
        assert_false(backend_modal_name_ok("-"
                                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
        assert_false(backend_modal_name_ok("a/b"));
}

/* What the manifest may carry: its names and targets are checked with the
 * project's one UTF-8 decoder (utf8.h), as NUL-terminated strings. */
#define utf8_ok(s) utf8_valid((s), strlen(s))

static void test_utf8(void **state) {
        assert_true(utf8_ok("plain"));
        assert_true(utf8_ok("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
        assert_false(utf8_ok("\xff"));
        assert_false(utf8_ok("\xc3"));         /* truncated */
        assert_false(utf8_ok("\xc0\xaf"));     /* overlong '/' */
        assert_false(utf8_ok("\xed\xa0\x80")); /* surrogate */
}

static char *rw[] = { (char *)"/ws", NULL };
static char *ro[] = { (char *)"/data", NULL };
static char *prot[] = { (char *)"/ws/vectora.toml", NULL };

static void test_manifest_encode(void **state) {
        VsModalEntry e[] = {
                { .path = (char *)"/ws", .kind = VS_MODAL_DIR, .mode = 0755 },
                { .path = (char *)"/ws/run.sh", .kind = VS_MODAL_FILE, .mode = 0755, .size = 12 },
                { .path = (char *)"/ws/l", .kind = VS_MODAL_SYMLINK, .mode = 0777, .target = (char *)"run.sh" },
        };
        VsModalManifest m = { .rw_roots = rw, .ro_roots = ro, .protected_paths = prot, .entries = e, .n_entries = 3 };
        StrBuf b = STRBUF_INIT;
        assert_int_equal(backend_modal_manifest_encode(&m, &b), 0);
        json_t *o = json_loads(b.data, 0, NULL);
        assert_non_null(o);
        json_t *want = json_loads("{\"version\":1,\"rw_roots\":[\"/ws\"],\"ro_roots\":[\"/data\"],"
                                  "\"protected\":[\"/ws/vectora.toml\"],\"entries\":["
                                  "{\"path\":\"/ws\",\"kind\":\"dir\",\"mode\":493},"
                                  "{\"path\":\"/ws/run.sh\",\"kind\":\"file\",\"mode\":493,\"size\":12},"
                                  "{\"path\":\"/ws/l\",\"kind\":\"symlink\",\"mode\":511,\"target\":\"run.sh\"}]}",
                                  0, NULL);
        assert_true(json_equal(o, want));
        json_decref(o);
        json_decref(want);
        strbuf_done(&b);

        /* A name JSON cannot carry is the caller's to leave out. */
        e[1].path = (char *)"/ws/\xff";
        assert_int_equal(backend_modal_manifest_encode(&m, &b), -EILSEQ);
        strbuf_done(&b);
}

static void test_summary(void **state) {
        VsPolicy *p = policy("[sandbox]\nbackend = \"modal\"\nnetwork = false\n[sandbox.modal]\nimage = \"debian:12\"\n");
        VsModalEntry e[] = {
                { .path = (char *)"/ws", .kind = VS_MODAL_DIR },
                { .path = (char *)"/ws/a", .kind = VS_MODAL_FILE, .size = 100 },
                { .path = (char *)"/ws/b", .kind = VS_MODAL_FILE, .size = 23 },
        };
        VsModalManifest m = { .entries = e, .n_entries = 3, .n_skipped = 2 };
        char **l = NULL;
        assert_int_equal(backend_modal_summary(p, &m, &l), 0);
        assert_int_equal(strv_length(l), 6);
        assert_string_equal(l[0], "modal backend: a Modal Sandbox in app \"vectora-sandbox\" from registry image \"debian:12\"");
        assert_string_equal(l[1], "sandbox: lifetime 3600s, region Modal's default, cpu Modal's default, memory Modal's default, gpu none, outbound network blocked");
        assert_string_equal(l[3], "files: upload 2 file(s) (123 bytes), 1 directorie(s), 0 symlink(s) from rw_paths/ro_paths at the same paths; masked paths are never uploaded");
        assert_string_equal(l[4], "files: 2 name(s) that are not UTF-8 are not uploaded");
        strv_free(l);
        policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_upload_argv),
                cmocka_unit_test(test_defaults_and_lockdown),
                cmocka_unit_test(test_volume_argv),
                cmocka_unit_test(test_no_credentials_on_argv),
                cmocka_unit_test(test_bad_names_refused),
                cmocka_unit_test(test_utf8),
                cmocka_unit_test(test_manifest_encode),
                cmocka_unit_test(test_summary),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
