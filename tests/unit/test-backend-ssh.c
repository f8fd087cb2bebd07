/* SPDX-License-Identifier: MIT */
/* The pure parts of the ssh backend: path mapping, the remote launcher's
 * policy, the remote commands and the ssh command line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "backend-ssh.h"
#include "config.h"
#include "strv.h"

static const VsConfigEnv test_env = { .workspace = "/ws", .home = "/home/u" };

static VsPolicy *policy(const char *text) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        if (config_parse(text, strlen(text), &test_env, &p, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        return p;
}

#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_map_path(void **state) {
        struct {
                const char *root, *path, *want;
        } t[] = {
                { "/srv/proj", "/ws", "/srv/proj" },
                { "/srv/proj", "/ws/src/a.c", "/srv/proj/src/a.c" },
                { "/srv/proj", "/wsx/a", "/wsx/a" },   /* a sibling with the same prefix is not below */
                { "/srv/proj", "/usr/share", "/usr/share" },
                { NULL, "/ws/a", "/ws/a" },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                char *m = backend_ssh_map_path("/ws", t[i].root, t[i].path);
                assert_string_equal(m, t[i].want);
                free(m);
        }
        char *in[] = { (char *)"/ws/vectora.toml", (char *)"/tmp", NULL };
        char **out = NULL;
        assert_int_equal(backend_ssh_map_strv("/ws", "/r", in, &out), 0);
        assert_int_equal(strv_length(out), 2);
        assert_string_equal(out[0], "/r/vectora.toml");
        assert_string_equal(out[1], "/tmp");
        strv_free(out);
}

static void test_jail_roundtrip(void **state) {
        char *rw[] = { (char *)"/r", NULL }, *ro[] = { NULL }, *mask[] = { (char *)".env", (char *)"**/*.pem", NULL };
        char *prot[] = { (char *)"/r/vectora.toml", NULL }, *env[] = { (char *)"HOME=/home/sandbox", NULL };
        VsRemoteJail j = { .workspace = "/r", .rw = rw, .ro = ro, .mask = mask, .protected_paths = prot, .env = env,
                           .network = false, .no_gpu = true, .lockdown = true };
        char *hex = NULL;
        assert_int_equal(backend_ssh_jail_encode(&j, &hex), 0);
        assert_int_equal(hex[strspn(hex, "0123456789abcdef")], 0);
        VsRemoteJail d = { 0 };
        json_t *obj = NULL;
        assert_int_equal(backend_ssh_jail_decode(hex, &d, &obj, NULL), 0);
        assert_string_equal(d.workspace, "/r");
        assert_int_equal(strv_length(d.rw), 1);
        assert_string_equal(d.rw[0], "/r");
        assert_int_equal(strv_length(d.ro), 0);
        assert_int_equal(strv_length(d.mask), 2);
        assert_string_equal(d.mask[1], "**/*.pem");
        assert_string_equal(d.protected_paths[0], "/r/vectora.toml");
        assert_string_equal(d.env[0], "HOME=/home/sandbox");
        assert_false(d.network);
        assert_true(d.no_gpu);
        assert_true(d.lockdown);
        backend_ssh_jail_done(&d);
        json_decref(obj);
        free(hex);
}

static void test_jail_decode_refuses(void **state) {
        VsRemoteJail d = { 0 };
        json_t *obj = NULL;
        VsError *err = NULL;
        assert_int_equal(backend_ssh_jail_decode("7b", &d, &obj, &err), -EINVAL); /* "{" */
        vs_error_free(err);
        err = NULL;
        assert_int_equal(backend_ssh_jail_decode("zz", &d, &obj, &err), -EINVAL);
        vs_error_free(err);
        err = NULL;
        /* {"x":1}: an unknown field */
        assert_int_equal(backend_ssh_jail_decode("7b2278223a317d", &d, &obj, &err), -EINVAL);
        vs_error_free(err);
}

static void test_run_command(void **state) {
        char *c = NULL;
        assert_int_equal(backend_ssh_run_command("/opt/vw", SHA, "7b7d", &c, NULL), 0);
        assert_string_equal(c, "/bin/sh -c 'w=\"/opt/vw\"; h=$(sha256sum \"$w\" 2>/dev/null) && [ \"${h%% *}\" = " SHA
                               " ] || exit 97; exec \"$w\" --launch-jail 7b7d'");
        free(c);
        assert_int_equal(backend_ssh_run_command("~/.cache/v/vw", SHA, "00", &c, NULL), 0);
        assert_non_null(strstr(c, "w=\"$HOME/.cache/v/vw\""));
        free(c);
}

static void test_worker_path_refused(void **state) {
        const char *bad[] = { "relative/vw", "/a b", "/a'b", "/a;b", "/a$b", "/a/../b", "~root/x", "~/" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *c = NULL;
                VsError *err = NULL;
                if (backend_ssh_run_command(bad[i], SHA, "00", &c, &err) != -EINVAL)
                        fail_msg("accepted %s", bad[i]);
                vs_error_free(err);
                err = NULL;
                if (backend_ssh_upload_command(bad[i], SHA, &c, &err) != -EINVAL)
                        fail_msg("upload accepted %s", bad[i]);
                vs_error_free(err);
        }
        char *c = NULL;
        VsError *err = NULL;
        assert_int_equal(backend_ssh_run_command("/vw", "abc", "00", &c, &err), -EINVAL);
        vs_error_free(err);
}

static void test_upload_command(void **state) {
        char *c = NULL;
        assert_int_equal(backend_ssh_upload_command("/opt/vw", SHA, &c, NULL), 0);
        /* Temp file beside the target, hash checked, then renamed over it. */
        const char *parts[] = { "w=\"/opt/vw\"", "mkdir -p \"${w%/*}\"", "t=\"$w.$$.tmp\"", "cat > \"$t\"",
                                "!= " SHA " ]", "mv -f \"$t\" \"$w\"" };
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                if (!strstr(c, parts[i]))
                        fail_msg("missing %s in %s", parts[i], c);
        assert_true(strstr(c, "cat > \"$t\"") < strstr(c, "mv -f"));
        free(c);
}

static int find2(char **argv, const char *a, const char *b) {
        for (int i = 0; argv[i]; i++)
                if (streq(argv[i], a) && (!b || (argv[i + 1] && streq(argv[i + 1], b))))
                        return i;
        return -1;
}

#define SSH "[sandbox]\nbackend = \"ssh\"\n[sandbox.ssh]\nhost = \"build1\"\n"

static void test_ssh_argv(void **state) {
        VsPolicy *p = policy(SSH "user = \"agent\"\nport = 2222\nidentity_file = \"/k/id\"\nknown_hosts = \"/k/kh\"\n");
        char **a = NULL;
        assert_int_equal(backend_ssh_ssh_argv(p->backend_config, &a), 0);
        assert_string_equal(a[0], "ssh");
        assert_true(find2(a, "-T", NULL) >= 0);
        assert_true(find2(a, "-o", "BatchMode=yes") >= 0);
        assert_true(find2(a, "-o", "StrictHostKeyChecking=yes") >= 0);
        assert_true(find2(a, "-o", "UserKnownHostsFile=/k/kh") >= 0);
        assert_true(find2(a, "-o", "ServerAliveInterval=5") >= 0);
        assert_true(find2(a, "-o", "ForwardAgent=no") >= 0);
        assert_true(find2(a, "-p", "2222") >= 0);
        assert_true(find2(a, "-i", "/k/id") >= 0);
        assert_true(find2(a, "-o", "IdentitiesOnly=yes") >= 0);
        assert_true(find2(a, "-l", "agent") >= 0);
        size_t n = strv_length(a);
        assert_string_equal(a[n - 2], "--");
        assert_string_equal(a[n - 1], "build1");
        strv_free(a);
        policy_free(p);

        /* Defaults: port 22, no identity or known_hosts override, strict all the same. */
        p = policy(SSH);
        assert_int_equal(backend_ssh_ssh_argv(p->backend_config, &a), 0);
        assert_true(find2(a, "-p", "22") >= 0);
        assert_true(find2(a, "-i", NULL) < 0);
        assert_true(find2(a, "-o", "StrictHostKeyChecking=yes") >= 0);
        strv_free(a);
        policy_free(p);
}

static void test_full_argv(void **state) {
        VsPolicy *p = policy(SSH "worker_path = \"/opt/vw\"\n");
        char *rw[] = { (char *)"/ws", NULL }, *none[] = { NULL };
        VsRemoteJail j = { .workspace = "/ws", .rw = rw, .ro = none, .mask = none, .protected_paths = none, .env = none };
        char **a = NULL;
        assert_int_equal(backend_ssh_argv(p->backend_config, "/usr/lib/vw", SHA, &j, &a, NULL), 0);
        assert_string_equal(a[0], "/usr/lib/vw");
        assert_string_equal(a[1], "--ssh-launch");
        assert_string_equal(a[2], "/usr/lib/vw");
        assert_non_null(strstr(a[3], "mv -f"));
        assert_string_equal(a[4], "--");
        assert_string_equal(a[5], "ssh");
        size_t n = strv_length(a);
        assert_string_equal(a[n - 2], "build1");
        assert_true(strncmp(a[n - 1], "/bin/sh -c 'w=\"/opt/vw\"; h=$(sha256sum", 38) == 0);
        assert_non_null(strstr(a[n - 1], "--launch-jail 7b"));
        strv_free(a);
        policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_map_path),
                cmocka_unit_test(test_jail_roundtrip),
                cmocka_unit_test(test_jail_decode_refuses),
                cmocka_unit_test(test_run_command),
                cmocka_unit_test(test_worker_path_refused),
                cmocka_unit_test(test_upload_command),
                cmocka_unit_test(test_ssh_argv),
                cmocka_unit_test(test_full_argv),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
