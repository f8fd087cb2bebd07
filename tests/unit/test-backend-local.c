/* SPDX-License-Identifier: MIT */
/* The pure policy -> bwrap argv mapping. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "backend-local.h"
#include "config.h"
#include "plan-fixture.h"
#include "strv.h"

static const VsConfigEnv test_env = { .workspace = "/ws", .home = "/home/u" };

static VsPolicy *policy(const char *text) {
        return fixture_policy(text, &test_env);
}

static char *sys_dirs[] = { (char *)"/usr", (char *)"/etc", NULL };
static VsSymlink links[] = { { (char *)"usr/bin", (char *)"/bin" } };
static char *gpu[] = { (char *)"/dev/dri", (char *)"/dev/nvidia0", NULL };
static VsMaskPath masks[] = { { (char *)"/ws/.env", false }, { (char *)"/ws/x/.ssh", true } };
static char *prot[] = { (char *)"/ws/vectora.toml", (char *)"/ws/.git/hooks", NULL };
static char *envv[] = { (char *)"PATH=/usr/bin:/bin", (char *)"HOME=/home/sandbox", NULL };

static VsLocalEnv local_env(void) {
        return (VsLocalEnv){
                .bwrap = "bwrap",
                .worker_path = "/opt/vs/vectora-worker",
                .uid = 1000,
                .gid = 1000,
                .system_dirs = sys_dirs,
                .symlinks = links,
                .n_symlinks = 1,
                .gpu_nodes = gpu,
        };
}

/* Plans p from the fixed facts above and renders it. */
static int argv_for(const VsPolicy *p, VsLocalEnv *e, char ***ret, VsError **err) {
        VsJailPlan *plan = fixture_plan(p, masks, 2, prot, envv);
        e->plan = plan;
        int r = backend_local_argv(p, e, ret, err);
        e->plan = NULL;
        jail_plan_free(plan);
        return r;
}

/* Index of the first occurrence of the sequence a b c (c may be NULL). */
static int find3(char **argv, const char *a, const char *b, const char *c) {
        for (int i = 0; argv[i]; i++)
                if (streq(argv[i], a) && (!b || (argv[i + 1] && streq(argv[i + 1], b))) &&
                    (!c || (argv[i + 1] && argv[i + 2] && streq(argv[i + 2], c))))
                        return i;
        return -1;
}

static void test_namespaces_and_basics(void **state) {
        VsPolicy *p = policy("[sandbox]\n");
        VsLocalEnv e = local_env();
        char **argv = NULL;
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_string_equal(argv[0], "bwrap");
        const char *must[] = { "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
                               "--disable-userns", "--die-with-parent", "--new-session", "--as-pid-1", "--clearenv" };
        for (size_t i = 0; i < ELEMENTSOF(must); i++)
                if (find3(argv, must[i], NULL, NULL) < 0)
                        fail_msg("missing %s", must[i]);
        assert_true(find3(argv, "--unshare-net", NULL, NULL) < 0); /* network = true by default */
        assert_true(find3(argv, "--cap-drop", "ALL", NULL) >= 0);
        assert_true(find3(argv, "--uid", "1000", NULL) >= 0);
        assert_true(find3(argv, "--ro-bind", "/usr", "/usr") >= 0);
        assert_true(find3(argv, "--symlink", "usr/bin", "/bin") >= 0);
        assert_true(find3(argv, "--tmpfs", "/tmp", NULL) >= 0);
        assert_true(find3(argv, "--tmpfs", VS_JAIL_HOME, NULL) >= 0);
        assert_true(find3(argv, "--proc", "/proc", NULL) >= 0);
        assert_true(find3(argv, "--dev", "/dev", NULL) >= 0);
        assert_true(find3(argv, "--bind", "/ws", "/ws") >= 0);
        assert_true(find3(argv, "--ro-bind", "/opt/vs/vectora-worker", VS_JAIL_WORKER_PATH) >= 0);
        assert_true(find3(argv, "--setenv", "PATH", "/usr/bin:/bin") >= 0);
        assert_true(find3(argv, "--chdir", "/ws", NULL) >= 0);
        size_t n = strv_length(argv);
        assert_string_equal(argv[n - 1], VS_JAIL_WORKER_PATH);
        assert_string_equal(argv[n - 2], "--");
        /* No GPU and no /sys by default. */
        assert_true(find3(argv, "--dev-bind", "/dev/dri", NULL) < 0);
        assert_true(find3(argv, "--ro-bind", "/sys", NULL) < 0);
        strv_free(argv);
        policy_free(p);
}

static void test_masks_protected_order(void **state) {
        VsPolicy *p = policy("[sandbox]\nrw_paths = [\".\", \"/ws/sub\"]\nro_paths = [\"/data\"]\n");
        VsLocalEnv e = local_env();
        char **argv = NULL;
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        int ws = find3(argv, "--bind", "/ws", "/ws");
        int sub = find3(argv, "--bind", "/ws/sub", "/ws/sub");
        int ro = find3(argv, "--ro-bind", "/data", "/data");
        int toml = find3(argv, "--ro-bind", "/ws/vectora.toml", "/ws/vectora.toml");
        int hooks = find3(argv, "--ro-bind", "/ws/.git/hooks", "/ws/.git/hooks");
        int env_mask = find3(argv, "--ro-bind", "/run/vs/empty-file", "/ws/.env");
        int dir_mask = find3(argv, "--ro-bind", "/run/vs/empty-dir", "/ws/x/.ssh");
        assert_true(ws >= 0 && sub >= 0 && ro >= 0 && toml >= 0 && hooks >= 0 && env_mask >= 0 && dir_mask >= 0);
        /* Parents before children; protected after the binds; masks last. */
        assert_true(ws < sub);
        assert_true(sub < toml && ro < toml);
        assert_true(toml < env_mask && hooks < dir_mask);
        /* Masks are never writable tmpfs. */
        assert_true(find3(argv, "--tmpfs", "/ws/.env", NULL) < 0);
        assert_true(find3(argv, "--tmpfs", "/ws/x/.ssh", NULL) < 0);
        strv_free(argv);
        policy_free(p);
}

static void test_network_off(void **state) {
        VsPolicy *p = policy("[sandbox]\nnetwork = false\n");
        VsLocalEnv e = local_env();
        char **argv = NULL;
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--unshare-net", NULL, NULL) >= 0);
        strv_free(argv);
        policy_free(p);

        p = policy("[sandbox]\nlockdown = true\nnetwork = true\n");
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--unshare-net", NULL, NULL) >= 0);
        /* No proxy socket without an allowlist. */
        assert_true(find3(argv, "--ro-bind", "/run/vs/proxy.sock", NULL) < 0);
        strv_free(argv);
        policy_free(p);

        /* An allowlist: the empty namespace, and the daemon's proxy socket
         * mounted read-only where the worker's relay expects it. */
        p = policy("[sandbox]\nnetwork = [\"pypi.org\"]\n");
        e.proxy_socket = "/run/vs/proxy.sock";
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--unshare-net", NULL, NULL) >= 0);
        assert_true(find3(argv, "--ro-bind", "/run/vs/proxy.sock", VS_JAIL_PROXY_SOCKET) >= 0);
        /* No CA bundle without secrets. */
        assert_true(find3(argv, "--ro-bind", NULL, VS_JAIL_CA_BUNDLE) < 0);
        strv_free(argv);

        /* Secrets: the bundle with the workspace's CA, read-only at its
         * own path and over the system file when the host has one. */
        e.ca_bundle = "/run/vs/H.ca.pem";
        e.ca_over_system = true;
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--ro-bind", "/run/vs/H.ca.pem", VS_JAIL_CA_BUNDLE) >= 0);
        assert_true(find3(argv, "--ro-bind", "/run/vs/H.ca.pem", VS_SYSTEM_CA_FILE) >= 0);
        strv_free(argv);
        e.ca_over_system = false;
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--ro-bind", "/run/vs/H.ca.pem", VS_SYSTEM_CA_FILE) < 0);
        strv_free(argv);
        policy_free(p);
}

static void test_gpu_only_when_asked(void **state) {
        VsPolicy *p = policy("[sandbox]\nno_gpu = false\n");
        VsLocalEnv e = local_env();
        char **argv = NULL;
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--dev-bind", "/dev/dri", "/dev/dri") >= 0);
        assert_true(find3(argv, "--dev-bind", "/dev/nvidia0", "/dev/nvidia0") >= 0);
        assert_true(find3(argv, "--ro-bind", "/sys", "/sys") >= 0);
        strv_free(argv);
        policy_free(p);
}

static void test_readonly_workspace(void **state) {
        /* rw_paths = []: the workspace is still visible, read-only. */
        VsPolicy *p = policy("[sandbox]\nrw_paths = []\n");
        VsLocalEnv e = local_env();
        char **argv = NULL;
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--ro-bind", "/ws", "/ws") >= 0);
        assert_true(find3(argv, "--bind", "/ws", "/ws") < 0);
        strv_free(argv);
        policy_free(p);
        /* Covered by a listed parent: no extra bind of the workspace. */
        static const VsConfigEnv nested = { .workspace = "/srv/projects/ws", .home = "/home/u" };
        VsError *err = NULL;
        p = NULL;
        const char *text = "[sandbox]\nrw_paths = []\nro_paths = [\"/srv/projects\"]\n";
        if (config_parse(text, strlen(text), &nested, &p, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        p->ro_paths[0].resolved = strdup("/srv/projects");
        assert_int_equal(argv_for(p, &e, &argv, NULL), 0);
        assert_true(find3(argv, "--ro-bind", "/srv/projects", "/srv/projects") >= 0);
        assert_true(find3(argv, "--ro-bind", "/srv/projects/ws", "/srv/projects/ws") < 0);
        strv_free(argv);
        policy_free(p);
}

static void test_refuses_root(void **state) {
        VsPolicy *p = policy("[sandbox]\n");
        VsLocalEnv e = local_env();
        e.uid = 0;
        char **argv = NULL;
        VsError *err = NULL;
        assert_int_equal(argv_for(p, &e, &argv, &err), -EPERM);
        assert_null(argv);
        assert_string_equal(vs_error_message(err),
                            "refusing to run a jail as host uid/gid 0; run the jail as an unprivileged user");
        vs_error_free(err);
        policy_free(p);
}

static void test_jail_env(void **state) {
        char **e = NULL;
        assert_int_equal(backend_local_jail_env("alice", &e), 0);
        assert_true(strv_contains(e, "HOME=" VS_JAIL_HOME));
        assert_true(strv_contains(e, "USER=alice"));
        for (char **i = e; *i; i++) {
                /* nothing secret-looking: only the allowlisted names */
                const char *ok[] = { "PATH=", "HOME=", "USER=", "LOGNAME=", "SHELL=", "TERM=", "LANG=", "TMPDIR=" };
                bool found = false;
                for (size_t k = 0; k < ELEMENTSOF(ok); k++)
                        found |= strncmp(*i, ok[k], strlen(ok[k])) == 0;
                assert_true(found);
        }
        strv_free(e);
}

static void test_argv_quote(void **state) {
        char *argv[] = { (char *)"bwrap", (char *)"--setenv", (char *)"A", (char *)"it's a b", (char *)"", NULL };
        char *q = argv_quote(argv);
        assert_string_equal(q, "bwrap --setenv A 'it'\\''s a b' ''");
        free(q);
}

/* The kept home is bound where the tmpfs would be, the identity file
 * read-only at its place; without them the tmpfs as before. */
static void test_home_and_identity(void **state) {
        (void)state;
        _cleanup_(policy_freep) VsPolicy *p = policy("[sandbox]\nenabled = true\n");
        VsLocalEnv e = local_env();
        _cleanup_strv_free_ char **a = NULL, **b = NULL;
        assert_int_equal(argv_for(p, &e, &a, NULL), 0);
        assert_true(find3(a, "--tmpfs", VS_JAIL_HOME, NULL) >= 0);
        assert_true(find3(a, "--ro-bind", "/state/homes/H.gitconfig", NULL) < 0);
        e.home_dir = "/state/homes/H";
        e.git_config = "/state/homes/H.gitconfig";
        e.git_config_dest = "/run/vectora/gitconfig";
        assert_int_equal(argv_for(p, &e, &b, NULL), 0);
        assert_true(find3(b, "--tmpfs", VS_JAIL_HOME, NULL) < 0);
        assert_true(find3(b, "--bind", "/state/homes/H", VS_JAIL_HOME) >= 0);
        assert_true(find3(b, "--ro-bind", "/state/homes/H.gitconfig", "/run/vectora/gitconfig") >= 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_namespaces_and_basics), cmocka_unit_test(test_masks_protected_order),
                cmocka_unit_test(test_network_off),           cmocka_unit_test(test_gpu_only_when_asked),
                cmocka_unit_test(test_refuses_root), cmocka_unit_test(test_readonly_workspace),          cmocka_unit_test(test_jail_env),
                cmocka_unit_test(test_argv_quote), cmocka_unit_test(test_home_and_identity),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
