/* SPDX-License-Identifier: MIT */
/* policy_loosenings(): which changes to vectora.toml loosen the sandbox
 * (they wait for the host's approval) and which do not (they apply at
 * once). Pure: policies from config_parse(), paths as written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "config.h"
#include "policy-compare.h"
#include "strv.h"

static const VsConfigEnv env = { .workspace = "/ws", .home = "/home/u" };

#define BASE "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"/data\"]\nmask = [\".env\", \"**/*.pem\"]\nnetwork = false\n"

/* The joined loosening lines of going from a to b. */
static char *loosen(const char *a, const char *b) {
        VsPolicy *pa = NULL, *pb = NULL;
        VsError *err = NULL;
        assert_int_equal(config_parse(a, strlen(a), &env, &pa, &err), 0);
        assert_int_equal(config_parse(b, strlen(b), &env, &pb, &err), 0);
        char **l = NULL;
        assert_int_equal(policy_loosenings(pa, pb, &l), 0);
        char *j = strv_join(l, "; ");
        strv_free(l);
        policy_free(pa);
        policy_free(pb);
        return j;
}

static void expect(const char *a, const char *b, const char *want) {
        char *got = loosen(a, b);
        if (!want)
                assert_string_equal(got, "");
        else if (!strstr(got, want))
                fail_msg("want \"%s\" in \"%s\"", want, got);
        free(got);
}

static void test_same_and_tighter(void **state) {
        expect(BASE, BASE, NULL);
        expect(BASE, BASE "no_gpu = true\nlockdown = true\n", NULL);
        expect(BASE, "[sandbox]\nrw_paths = [\"src\"]\nro_paths = []\nmask = [\".env\", \"**/*.pem\", \"*.key\"]\nnetwork = false\n",
               NULL);
        expect(BASE "[sandbox.limits]\npids = 512\n", BASE "[sandbox.limits]\npids = 64\n", NULL);
        /* More protected is tighter: the default list and one more. */
        char more[8192] = BASE "protect = [";
        for (const char *const *g = VS_PROTECT_DEFAULT; *g; g++) {
                strncat(more, "\"", sizeof more - strlen(more) - 1);
                strncat(more, *g, sizeof more - strlen(more) - 1);
                strncat(more, "\", ", sizeof more - strlen(more) - 1);
        }
        strncat(more, "\"Makefile\"]\n", sizeof more - strlen(more) - 1);
        expect(BASE, more, NULL);
        /* The former default list to the present one: each file it named is
         * inside a directory now protected whole. */
        expect(BASE "protect = [\".envrc\", \"**/.vscode/tasks.json\", \"**/.vscode/settings.json\", \".mcp.json\", "
               "\"**/.claude/settings.json\", \"**/.claude/settings.local.json\"]\n",
               BASE, NULL);
        expect("[sandbox]\nprotect = [\"sub/.vscode/tasks.json\"]\n", "[sandbox]\nprotect = [\"**/.vscode\"]\n", NULL);
        expect(BASE "git_init = true\n", BASE, NULL);
        expect(BASE "ports = [3000, 4000]\n", BASE "ports = [3000]\n", NULL);
        /* A background process's timeout: none -> one, or a shorter one. */
        expect(BASE, BASE "[sandbox.limits]\nbackground_timeout = 60\n", NULL);
        expect(BASE "[sandbox.limits]\nbackground_timeout = 60\n", BASE "[sandbox.limits]\nbackground_timeout = 30\n", NULL);
        /* A path moved from rw to ro is narrower. */
        expect("[sandbox]\nrw_paths = [\".\", \"/srv\"]\n", "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"/srv\"]\n", NULL);
}

static void test_from_nothing(void **state) {
        expect("", BASE, NULL);
        expect("[sandbox]\nenabled = false\n", BASE, NULL);
}

static void test_switched_off(void **state) {
        expect(BASE, "", "the sandbox is switched off");
        expect(BASE, "[other]\nx = 1\n", "the sandbox is switched off");
        expect(BASE, "[sandbox]\nenabled = false\n", "the sandbox is switched off");
        /* A prefix of the file, as an in-place writer leaves it. */
        expect(BASE, "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"/data\"]\n", "mask: \".env\" is removed");
}

static void test_each_loosening(void **state) {
        expect(BASE, "[sandbox]\nrw_paths = [\".\", \"/srv\"]\nro_paths = [\"/data\"]\nmask = [\".env\", \"**/*.pem\"]\nnetwork = false\n",
               "rw_paths: /srv is new (writable)");
        expect(BASE, "[sandbox]\nrw_paths = [\".\", \"/data\"]\nmask = [\".env\", \"**/*.pem\"]\nnetwork = false\n",
               "rw_paths: /data is new (writable)");
        expect(BASE, "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"/data\", \"/etc/ssl\"]\nmask = [\".env\", \"**/*.pem\"]\nnetwork = false\n",
               "ro_paths: /etc/ssl is new (readable)");
        expect(BASE, "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"/data\"]\nmask = [\".env\"]\nnetwork = false\n",
               "mask: \"**/*.pem\" is removed");
        expect(BASE, "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"/data\"]\nmask = [\".env\", \"**/*.pem\"]\n",
               "network: false -> true");
        expect(BASE "lockdown = true\n", BASE, "lockdown: true -> false");
        expect(BASE, BASE "no_gpu = false\n", "no_gpu: true -> false");
        /* protect: the default set, then an entry dropped from a list. */
        expect(BASE, BASE "protect = [\".envrc\"]\n", "protect: \".mcp.json\" is removed");
        expect("[sandbox]\nprotect = [\"**/.vscode\"]\n", "[sandbox]\nprotect = [\"**/.vscode/tasks.json\"]\n",
               "protect: \"**/.vscode\" is removed");
        expect("[sandbox]\nprotect = [\"**/.vscode/tasks.json\"]\n", "[sandbox]\nprotect = [\".vscode/x\"]\n",
               "protect: \"**/.vscode/tasks.json\" is removed");
        expect(BASE "protect = [\".envrc\", \"Makefile\"]\n", BASE "protect = [\".envrc\"]\n",
               "protect: \"Makefile\" is removed");
        expect(BASE, BASE "git_init = true\n", "git_init: false -> true");
        expect(BASE, BASE "[sandbox.limits]\ntimeout = 100000\n", "limits.timeout: 120 -> 100000 (raised)");
        expect(BASE, BASE "[sandbox.limits]\nmemory = \"64G\"\n", "limits.memory");
        expect(BASE "[sandbox.limits]\nbackground_timeout = 60\n", BASE "[sandbox.limits]\nbackground_timeout = 90\n",
               "limits.background_timeout: 60 -> more (raised)");
        expect(BASE "[sandbox.limits]\nbackground_timeout = 60\n", BASE, "limits.background_timeout: 60 -> none (raised)");
        expect(BASE, BASE "ports = [3000]\n", "ports: 127.0.0.1:3000 on the host is forwarded to the jail's port 3000");
        expect(BASE "ports = [3000]\n", BASE "ports = [\"3000:22\"]\n", "forwarded to the jail's port 22");
        expect(BASE, BASE "backend = \"docker\"\n[sandbox.docker]\nimage = \"x\"\n", "backend: local -> docker");
        expect(BASE "backend = \"docker\"\n[sandbox.docker]\nimage = \"a\"\n",
               BASE "backend = \"docker\"\n[sandbox.docker]\nimage = \"b\"\n", "docker: changed");
}

/* [[sandbox.http]]: adding a host's rules or removing allow entries
 * tightens; removing a host's rules or any other change to allow loosens. */
#define NET "[sandbox]\nnetwork = [\"api.example.org\", \"b.example.org\"]\n"
#define HTTP(host, allow) "[[sandbox.http]]\nhost = \"" host "\"\nallow = [" allow "]\n"
static void test_http_rules(void **state) {
        const char *two = NET HTTP("api.example.org", "\"GET /a/**\", \"GET /b/*\"");
        expect(NET, two, NULL);
        expect(two, NET HTTP("api.example.org", "\"GET /a/**\""), NULL);
        expect(two, NET HTTP("api.example.org", "\"GET /a/**\", \"GET /b/*\"") HTTP("b.example.org", ""), NULL);
        expect(two, NET, "http: the rules for api.example.org are removed");
        expect(two, NET HTTP("api.example.org", "\"GET /a/**\", \"GET /b/*\", \"POST /a/x\""),
               "http: api.example.org allows \"POST /a/x\"");
        expect(two, NET HTTP("api.example.org", "\"GET /a/**\", \"GET /b/**\""), "allows \"GET /b/**\"");
        expect(two, NET HTTP("b.example.org", "\"GET /a/**\", \"GET /b/*\""), "the rules for api.example.org are removed");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_same_and_tighter),
                cmocka_unit_test(test_from_nothing),
                cmocka_unit_test(test_switched_off),
                cmocka_unit_test(test_each_loosening),
                cmocka_unit_test(test_http_rules),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
