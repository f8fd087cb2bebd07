/* SPDX-License-Identifier: MIT */
/* The pure policy -> `docker run` argv mapping. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "backend-docker.h"
#include "config.h"
#include "plan-fixture.h"
#include "strv.h"

static const VsConfigEnv test_env = { .workspace = "/ws", .home = "/home/u" };

static VsPolicy *policy(const char *text) {
        return fixture_policy(text, &test_env);
}

#define DOCKER "[sandbox]\nbackend = \"docker\"\n"
#define IMAGE "[sandbox.docker]\nimage = \"debian:12\"\n"

static VsMaskPath masks[] = { { (char *)"/ws/.env", false }, { (char *)"/ws/x/.ssh", true } };
static char *prot[] = { (char *)"/ws/vectora.toml", (char *)"/ws/.git/hooks", NULL };
static char *gpu[] = { (char *)"/dev/dri", NULL };

static VsDockerEnv docker_env(void) {
        return (VsDockerEnv){
                .worker_path = "/opt/vs/vectora-worker",
                .name = "vectora-0c65a812b078db67",
                .uid = 1000,
                .gid = 1001,
                .gpu_nodes = gpu,
        };
}

/* Plans p from the given facts and renders it. */
static int argv_for(const VsPolicy *p, VsDockerEnv *e, const VsMaskPath *m, size_t n_m, char ***ret, VsError **err) {
        VsJailPlan *plan = fixture_plan(p, m, n_m, prot, NULL);
        e->plan = plan;
        int r = backend_docker_argv(p, e, ret, err);
        e->plan = NULL;
        jail_plan_free(plan);
        return r;
}

static int find2(char **argv, const char *a, const char *b) {
        for (int i = 0; argv[i]; i++)
                if (streq(argv[i], a) && (!b || (argv[i + 1] && streq(argv[i + 1], b))))
                        return i;
        return -1;
}

static char **build(const char *toml) {
        VsPolicy *p = policy(toml);
        VsDockerEnv e = docker_env();
        char **argv = NULL;
        VsError *err = NULL;
        if (argv_for(p, &e, masks, 2, &argv, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        policy_free(p);
        return argv;
}

static void test_readonly_workspace(void **state) {
        /* rw_paths = []: the workspace is still there, read-only (the fix of
         * the config fuzzer's finding, shared with the local backend). */
        char **argv = build("[sandbox]\nbackend = \"docker\"\nrw_paths = []\n[sandbox.docker]\nimage = \"img\"\n");
        assert_true(find2(argv, "--mount", "type=bind,source=/ws,target=/ws,readonly") >= 0);
        assert_true(find2(argv, "--mount", "type=bind,source=/ws,target=/ws") < 0);
        strv_free(argv);
}

static void test_name_is_stable_hash(void **state) {
        char *n = NULL;
        assert_int_equal(backend_docker_name("/ws", &n), 0);
        /* sha256("/ws") = 0c65a812b078db67... */
        assert_string_equal(n, "vectora-0c65a812b078db67");
        free(n);
}

static void test_run_basics(void **state) {
        char **a = build(DOCKER IMAGE);
        assert_string_equal(a[0], "docker");
        assert_string_equal(a[1], "run");
        assert_true(find2(a, "-i", NULL) >= 0);
        assert_true(find2(a, "--rm", NULL) >= 0);
        assert_true(find2(a, "--name", "vectora-0c65a812b078db67") >= 0);
        assert_true(find2(a, "--cap-drop", "ALL") >= 0);
        assert_true(find2(a, "--security-opt", "no-new-privileges") >= 0);
        assert_true(find2(a, "--read-only", NULL) >= 0);
        assert_true(find2(a, "--user", "1000:1001") >= 0);
        assert_true(find2(a, "--pull", "never") >= 0);
        assert_true(find2(a, "--tmpfs", "/tmp:rw,nosuid,nodev,mode=1777") >= 0);
        assert_true(find2(a, "--tmpfs", "/home/sandbox:rw,nosuid,nodev,mode=0700,uid=1000,gid=1001") >= 0);
        /* Defaults of [sandbox.limits]: 512 processes, 2 GiB. */
        assert_true(find2(a, "--pids-limit", "512") >= 0);
        assert_true(find2(a, "--memory", "2147483648") >= 0);
        assert_true(find2(a, "--memory-swap", "2147483648") >= 0);
        /* network = true by default: no --network none. */
        assert_true(find2(a, "--network", NULL) < 0);
        assert_true(find2(a, "--entrypoint", "/run/vectora/vectora-worker") >= 0);
        assert_true(find2(a, "--workdir", "/ws") >= 0);
        size_t n = strv_length(a);
        assert_string_equal(a[n - 1], "debian:12");
        /* No GPU unless asked. */
        assert_true(find2(a, "--device", NULL) < 0);
        strv_free(a);
}

static void test_mounts(void **state) {
        char **a = build(DOCKER "rw_paths = [\".\", \"/data/out\"]\nro_paths = [\"/data\"]\n" IMAGE);
        int ws = find2(a, "--mount", "type=bind,source=/ws,target=/ws");
        int ro = find2(a, "--mount", "type=bind,source=/data,target=/data,readonly");
        int out = find2(a, "--mount", "type=bind,source=/data/out,target=/data/out");
        int toml = find2(a, "--mount", "type=bind,source=/ws/vectora.toml,target=/ws/vectora.toml,readonly");
        int hooks = find2(a, "--mount", "type=bind,source=/ws/.git/hooks,target=/ws/.git/hooks,readonly");
        int env = find2(a, "--mount", "type=bind,source=/run/vs/empty-file,target=/ws/.env,readonly");
        int ssh = find2(a, "--mount", "type=bind,source=/run/vs/empty-dir,target=/ws/x/.ssh,readonly");
        int w = find2(a, "--mount", "type=bind,source=/opt/vs/vectora-worker,target=/run/vectora/vectora-worker,readonly");
        assert_true(ws >= 0 && ro >= 0 && out >= 0 && toml >= 0 && hooks >= 0 && env >= 0 && ssh >= 0 && w >= 0);
        /* Parents before children; protected over the binds; masks last. */
        assert_true(ro < out);
        assert_true(ws < toml && out < toml);
        assert_true(toml < env && hooks < env && toml < ssh);
        /* The directories leading to protected and masked paths are pinned
         * (bound onto themselves, writable) before those mounts. */
        int git = find2(a, "--mount", "type=bind,source=/ws/.git,target=/ws/.git");
        int x = find2(a, "--mount", "type=bind,source=/ws/x,target=/ws/x");
        assert_true(git > ws && git < hooks);
        assert_true(x > ws && x < ssh);
        assert_true(find2(a, "--mount", "type=bind,source=/ws/x/.ssh,target=/ws/x/.ssh") < 0);
        strv_free(a);
}

static void test_lockdown_no_network(void **state) {
        char **a = build(DOCKER "lockdown = true\n" IMAGE);
        assert_true(find2(a, "--network", "none") >= 0);
        strv_free(a);
        a = build(DOCKER "network = false\n" IMAGE);
        assert_true(find2(a, "--network", "none") >= 0);
        /* The container's own loopback keeps ::1. */
        assert_true(find2(a, "--sysctl", "net.ipv6.conf.lo.disable_ipv6=0") >= 0);
        strv_free(a);

        /* An allowlist: --network none too, and the proxy socket mounted. */
        VsPolicy *p = policy(DOCKER "network = [\"pypi.org\"]\n" IMAGE);
        VsDockerEnv e = docker_env();
        e.proxy_socket = "/run/vs/proxy.sock";
        assert_int_equal(argv_for(p, &e, masks, 2, &a, NULL), 0);
        assert_true(find2(a, "--network", "none") >= 0);
        assert_true(find2(a, "--mount", "type=bind,source=/run/vs/proxy.sock,target=" VS_JAIL_PROXY_SOCKET ",readonly") >= 0);
        assert_true(find2(a, "--mount", "type=bind,source=/run/vs/H.ca.pem,target=" VS_JAIL_CA_BUNDLE ",readonly") < 0);
        strv_free(a);
        /* Secrets: the CA bundle mounted where SSL_CERT_FILE names it. */
        e.ca_bundle = "/run/vs/H.ca.pem";
        assert_int_equal(argv_for(p, &e, masks, 2, &a, NULL), 0);
        assert_true(find2(a, "--mount", "type=bind,source=/run/vs/H.ca.pem,target=" VS_JAIL_CA_BUNDLE ",readonly") >= 0);
        strv_free(a);
        policy_free(p);
}

static void test_gpu_only_when_asked(void **state) {
        char **a = build(DOCKER "no_gpu = false\n" IMAGE);
        assert_true(find2(a, "--device", "/dev/dri") >= 0);
        strv_free(a);
        /* lockdown forces no_gpu. */
        a = build(DOCKER "no_gpu = false\nlockdown = true\n" IMAGE);
        assert_true(find2(a, "--device", NULL) < 0);
        strv_free(a);
}

static void test_client_and_host(void **state) {
        char **a = build(DOCKER "[sandbox.docker]\nimage = \"img\"\ndocker = \"/opt/bin/podman\"\nhost = \"unix:///run/d.sock\"\n");
        assert_string_equal(a[0], "/opt/bin/podman");
        assert_string_equal(a[1], "--host");
        assert_string_equal(a[2], "unix:///run/d.sock");
        assert_string_equal(a[3], "run");
        strv_free(a);

        VsPolicy *p = policy(DOCKER "[sandbox.docker]\nimage = \"img\"\nhost = \"tcp://h:2375\"\n");
        char **rm = NULL, **client = NULL;
        assert_int_equal(backend_docker_client(p, &client), 0);
        assert_int_equal(backend_docker_rm_argv(client, "vectora-x", &rm), 0);
        strv_free(client);
        const char *want[] = { "docker", "--host", "tcp://h:2375", "rm", "-f", "vectora-x" };
        assert_int_equal(strv_length(rm), ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                assert_string_equal(rm[i], want[i]);
        strv_free(rm);
        policy_free(p);
}

static void test_limits_from_config(void **state) {
        char **a = build(DOCKER IMAGE "[sandbox.limits]\npids = 64\nmemory = \"512M\"\n");
        assert_true(find2(a, "--pids-limit", "64") >= 0);
        assert_true(find2(a, "--memory", "536870912") >= 0);
        strv_free(a);
}

static void test_refuses_root(void **state) {
        VsPolicy *p = policy(DOCKER IMAGE);
        VsDockerEnv e = docker_env();
        char **argv = NULL;
        VsError *err = NULL;
        e.uid = 0;
        assert_int_equal(argv_for(p, &e, masks, 2, &argv, &err), -EPERM);
        assert_string_equal(vs_error_kind(err), "sandbox_unavailable");
        assert_null(argv);
        vs_error_free(err);
        err = NULL;
        e.uid = 1000;
        e.gid = 0;
        assert_int_equal(argv_for(p, &e, masks, 2, &argv, &err), -EPERM);
        vs_error_free(err);
        policy_free(p);
}

static void test_mount_quoting(void **state) {
        char *m = backend_docker_mount("/a,b", "/t", true);
        assert_string_equal(m, "type=bind,\"source=/a,b\",target=/t,readonly");
        free(m);
        m = backend_docker_mount("/q\"x", "/t,\"u", false);
        assert_string_equal(m, "type=bind,\"source=/q\"\"x\",\"target=/t,\"\"u\"");
        free(m);
        m = backend_docker_mount("/plain", "/plain", false);
        assert_string_equal(m, "type=bind,source=/plain,target=/plain");
        free(m);
}

/* Another engine with docker's command line (podman) renders through the
 * same function: its client, image, run options and tmpfs owner. */
static void test_other_engine(void **state) {
        VsPolicy *p = policy("[sandbox]\n");
        char *client[] = { (char *)"/usr/bin/podman", (char *)"--root", (char *)"/r", NULL };
        char *opts[] = { (char *)"--userns=keep-id", NULL };
        VsDockerEnv e = docker_env();
        e.client = client;
        e.image = "img:1";
        e.home_owner = "U";
        e.run_options = opts;
        char **argv = NULL;
        VsError *err = NULL;
        if (argv_for(p, &e, masks, 2, &argv, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        assert_string_equal(argv[0], "/usr/bin/podman");
        assert_string_equal(argv[2], "/r");
        assert_string_equal(argv[3], "run");
        assert_true(find2(argv, "--userns=keep-id", NULL) > 3);
        assert_true(find2(argv, "--tmpfs", "/home/sandbox:rw,nosuid,nodev,mode=0700,U") > 3);
        assert_string_equal(argv[strv_length(argv) - 1], "img:1");
        strv_free(argv);
        policy_free(p);
}

static void test_newline_refused(void **state) {
        VsPolicy *p = policy(DOCKER IMAGE);
        VsDockerEnv e = docker_env();
        VsMaskPath bad[] = { { (char *)"/ws/a\nb", false } };
        char **argv = NULL;
        VsError *err = NULL;
        assert_int_equal(argv_for(p, &e, bad, 1, &argv, &err), -EINVAL);
        assert_non_null(strstr(vs_error_message(err), "newline"));
        vs_error_free(err);
        policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_name_is_stable_hash),
                cmocka_unit_test(test_run_basics),
                cmocka_unit_test(test_mounts),
                cmocka_unit_test(test_lockdown_no_network),
                cmocka_unit_test(test_gpu_only_when_asked),
                cmocka_unit_test(test_client_and_host),
                cmocka_unit_test(test_limits_from_config),
                cmocka_unit_test(test_refuses_root),
                cmocka_unit_test(test_mount_quoting),
                cmocka_unit_test(test_newline_refused),
                cmocka_unit_test(test_other_engine),
                cmocka_unit_test(test_readonly_workspace),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
