/* SPDX-License-Identifier: MIT */
/* The podman backend: [sandbox.podman], its client and run options, and
 * the `podman run` argv rendered through docker's renderer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "backend-docker.h"
#include "backend-podman.h"
#include "config.h"
#include "plan-fixture.h"
#include "strv.h"

static const VsConfigEnv test_env = { .workspace = "/ws", .home = "/home/u" };

#define PODMAN "[sandbox]\nbackend = \"podman\"\n"
#define IMAGE "[sandbox.podman]\nimage = \"localhost/busybox:1\"\n"

static VsPolicy *policy(const char *text) {
        return fixture_policy(text, &test_env);
}

static void expect_error(const char *text, const char *want) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        assert_true(config_parse(text, strlen(text), &test_env, &p, &err) < 0);
        assert_string_equal(vs_error_message(err), want);
        vs_error_free(err);
}

static int find2(char **argv, const char *a, const char *b) {
        for (int i = 0; argv[i]; i++)
                if (streq(argv[i], a) && (!b || (argv[i + 1] && streq(argv[i + 1], b))))
                        return i;
        return -1;
}

static void test_config(void **state) {
        VsPolicy *p = policy(PODMAN "[sandbox.podman]\nimage = \"img\"\npodman = \"/opt/podman\"\nroot = \"/s/root\"\n"
                                    "runroot = \"/s/run\"\n");
        assert_string_equal(vs_backend_name(p->backend), "podman");
        const VsPodmanConfig *c = backend_config(p, &backend_podman_def);
        assert_non_null(c);
        assert_string_equal(c->image, "img");
        assert_string_equal(c->podman, "/opt/podman");
        assert_string_equal(c->root, "/s/root");
        assert_string_equal(c->runroot, "/s/run");
        assert_true(backend_podman_def.host_files && backend_podman_def.has_proxy && !backend_podman_def.remote_plan);
        policy_free(p);
        /* Defaults: the podman on PATH, podman's own storage. */
        p = policy(PODMAN IMAGE);
        c = p->backend_config;
        assert_string_equal(c->podman, "podman");
        assert_null(c->root);
        assert_null(c->runroot);
        policy_free(p);
}

static void test_config_errors(void **state) {
        expect_error(PODMAN, "vectora.toml:1:1: sandbox: backend = \"podman\" needs sandbox.podman.image (a local image name, e.g. image = \"debian:12\")");
        expect_error(PODMAN IMAGE "root = \"rel/dir\"\n", "vectora.toml:5:8: sandbox.podman.root must be an absolute path");
        expect_error(PODMAN IMAGE "pull = true\n",
                     "vectora.toml:5:1: sandbox.podman: unknown key 'pull'; allowed keys: image, podman, root, runroot");
        /* Another backend's table, and podman's under another backend. */
        expect_error(PODMAN IMAGE "[sandbox.docker]\nimage = \"x\"\n",
                     "vectora.toml:5:10: sandbox.docker: settings for the docker backend, but backend = \"podman\"; set backend = \"docker\" or remove [sandbox.docker]");
        expect_error("[sandbox]\n" IMAGE,
                     "vectora.toml:2:10: sandbox.podman: settings for the podman backend, but backend = \"local\"; set backend = \"podman\" or remove [sandbox.podman]");
}

static void test_client_and_options(void **state) {
        VsPodmanConfig c = { .image = (char *)"img", .podman = (char *)"podman", .root = (char *)"/s/root",
                             .runroot = (char *)"/s/run" };
        char **a = NULL;
        assert_int_equal(backend_podman_client(&c, &a), 0);
        const char *want[] = { "podman", "--root", "/s/root", "--runroot", "/s/run", "--tmpdir", "/s/run/tmp" };
        assert_int_equal(strv_length(a), ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                assert_string_equal(a[i], want[i]);
        strv_free(a);
        c.root = c.runroot = NULL;
        assert_int_equal(backend_podman_client(&c, &a), 0);
        assert_int_equal(strv_length(a), 1);
        strv_free(a);

        assert_int_equal(backend_podman_run_options(true, false, &a), 0);
        assert_true(strv_contains(a, "--userns=keep-id"));
        assert_false(strv_contains(a, "--network=host"));
        strv_free(a);
        assert_int_equal(backend_podman_run_options(false, false, &a), 0);
        assert_int_equal(strv_length(a), 0);
        strv_free(a);
        /* network = true: the host's network, as on the local backend. */
        assert_int_equal(backend_podman_run_options(true, true, &a), 0);
        assert_true(strv_contains(a, "--network=host"));
        strv_free(a);
}

/* The argv the launch renders: docker's jail, podman's client, keep-id,
 * the home owned through U, the worker as the entrypoint. */
static void test_run_argv(void **state) {
        VsPolicy *p = policy(PODMAN "network = false\n" IMAGE "root = \"/s/root\"\n");
        const VsPodmanConfig *c = p->backend_config;
        char **client = NULL, **opts = NULL, *prot[] = { (char *)"/ws/vectora.toml", NULL };
        assert_int_equal(backend_podman_client(c, &client), 0);
        assert_int_equal(backend_podman_run_options(true, p->network, &opts), 0);
        VsMaskPath masks[] = { { (char *)"/ws/.env", false } };
        VsJailPlan *plan = fixture_plan(p, masks, 1, prot, NULL);
        VsDockerEnv e = { .client = client, .image = c->image, .home_owner = "U", .run_options = opts,
                          .worker_path = "/opt/vs/vectora-worker", .name = "vectora-x-a", .uid = 1001, .gid = 1001,
                          .plan = plan };
        char **a = NULL;
        VsError *err = NULL;
        if (backend_docker_argv(p, &e, &a, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        assert_string_equal(a[0], "podman");
        assert_int_equal(find2(a, "--root", "/s/root"), 1);
        assert_int_equal(find2(a, "run", NULL), 3);
        assert_true(find2(a, "--userns=keep-id", NULL) > 3);
        assert_true(find2(a, "--pull", "never") > 3);
        assert_true(find2(a, "--cap-drop", "ALL") > 3);
        assert_true(find2(a, "--security-opt", "no-new-privileges") > 3);
        assert_true(find2(a, "--user", "1001:1001") > 3);
        assert_true(find2(a, "--read-only", NULL) > 3);
        assert_true(find2(a, "--network", "none") > 3);
        assert_true(find2(a, "--tmpfs", "/home/sandbox:rw,nosuid,nodev,mode=0700,U") > 3);
        assert_true(find2(a, "--mount", "type=bind,source=/ws,target=/ws") > 3);
        assert_true(find2(a, "--entrypoint", "/run/vectora/vectora-worker") > 3);
        assert_string_equal(a[strv_length(a) - 1], "localhost/busybox:1");
        strv_free(a);
        /* Root is refused as the jail's ids, as on docker. */
        e.uid = 0;
        assert_true(backend_docker_argv(p, &e, &a, NULL) < 0);
        jail_plan_free(plan);
        strv_free(client);
        strv_free(opts);
        policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config),
                cmocka_unit_test(test_config_errors),
                cmocka_unit_test(test_client_and_options),
                cmocka_unit_test(test_run_argv),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
