/* SPDX-License-Identifier: MIT */
/* The network allowlist (src/shared/net-policy.c): entries, matching, and
 * which addresses each kind of entry may reach. Also the HTTP and TLS
 * parsers the daemon's proxy applies to what the jail sends. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "net-policy.h"

static VsNetRule rule(const char *entry) {
        VsNetRule r = { 0 };
        VsError *err = NULL;
        if (net_rule_parse(entry, &r, &err) < 0)
                fail_msg("%s: unexpected error: %s", entry, vs_error_message(err));
        return r;
}

static void expect_bad(const char *entry, const char *message) {
        VsNetRule r = { 0 };
        VsError *err = NULL;
        assert_true(net_rule_parse(entry, &r, &err) < 0);
        assert_non_null(err);
        if (!strstr(vs_error_message(err), message))
                fail_msg("%s: message '%s' lacks '%s'", entry, vs_error_message(err), message);
        assert_null(r.host);
        vs_error_free(err);
}

static void test_entries(void **state) {
        VsNetRule r = rule("PyPI.org");
        assert_int_equal(r.kind, VS_NET_NAME);
        assert_string_equal(r.host, "pypi.org");
        assert_int_equal(r.port, 0);
        net_rule_done(&r);

        r = rule("*.npmjs.org");
        assert_int_equal(r.kind, VS_NET_WILDCARD);
        assert_string_equal(r.host, "npmjs.org");
        net_rule_done(&r);

        r = rule("github.com:443");
        assert_int_equal(r.kind, VS_NET_NAME);
        assert_string_equal(r.host, "github.com");
        assert_int_equal(r.port, 443);
        net_rule_done(&r);

        r = rule("10.0.0.5:5432");
        assert_int_equal(r.kind, VS_NET_IP);
        assert_string_equal(r.host, "10.0.0.5");
        assert_int_equal(r.port, 5432);
        net_rule_done(&r);

        r = rule("[FD00:0::1]:8080");
        assert_int_equal(r.kind, VS_NET_IP);
        assert_string_equal(r.host, "fd00::1");
        assert_int_equal(r.port, 8080);
        net_rule_done(&r);

        r = rule("::1");
        assert_int_equal(r.kind, VS_NET_IP);
        assert_string_equal(r.host, "::1");
        assert_int_equal(r.port, 0);
        net_rule_done(&r);

        r = rule("*.localhost:8443");
        assert_int_equal(r.kind, VS_NET_WILDCARD);
        assert_string_equal(r.host, "localhost");
        assert_int_equal(r.port, 8443);
        net_rule_done(&r);
}

static void test_bad_entries(void **state) {
        expect_bad("", "empty entry");
        expect_bad("*", "a wildcard is written");
        expect_bad("*example.com", "a wildcard is written");
        expect_bad("a.*.com", "'*' may only start an entry");
        expect_bad("pypi.org:0", "port \"0\" must be a number from 1 to 65535");
        expect_bad("pypi.org:65536", "port \"65536\"");
        expect_bad("pypi.org:http", "port \"http\"");
        expect_bad("pypi.org:", "port \"\"");
        expect_bad("https://pypi.org", "not a URL or a path");
        expect_bad("pypi.org/simple", "not a URL or a path");
        expect_bad("-pypi.org", "is not a host name");
        expect_bad("pypi-.org", "is not a host name");
        expect_bad("py pi.org", "is not a host name");
        expect_bad("a..b", "is not a host name");
        expect_bad("under_score.org", "is not a host name");
        expect_bad("[::1", "needs its ']'");
        expect_bad("[::1]x", "after ']'");
        expect_bad("[pypi.org]:80", "is not an IPv6 address");
        expect_bad("fd00::1:80:x", "an IPv6 address with a port is written [ADDR]:PORT");
        char longlabel[80];
        memset(longlabel, 'a', 64);
        strcpy(longlabel + 64, ".org");
        expect_bad(longlabel, "is not a host name");
}

static void test_match(void **state) {
        VsNetRule rules[] = { rule("pypi.org"), rule("*.npmjs.org"), rule("github.com:443"), rule("10.0.0.5:5432") };
        size_t n = sizeof rules / sizeof *rules;
        assert_ptr_equal(net_match(rules, n, "pypi.org", 443), &rules[0]);
        assert_ptr_equal(net_match(rules, n, "pypi.org", 8080), &rules[0]);
        assert_null(net_match(rules, n, "files.pypi.org", 443));
        assert_null(net_match(rules, n, "xpypi.org", 443));
        assert_ptr_equal(net_match(rules, n, "registry.npmjs.org", 443), &rules[1]);
        assert_ptr_equal(net_match(rules, n, "a.b.npmjs.org", 80), &rules[1]);
        /* A wildcard does not cover the name itself, nor a look-alike. */
        assert_null(net_match(rules, n, "npmjs.org", 443));
        assert_null(net_match(rules, n, "evilnpmjs.org", 443));
        assert_ptr_equal(net_match(rules, n, "github.com", 443), &rules[2]);
        assert_null(net_match(rules, n, "github.com", 22));
        assert_ptr_equal(net_match(rules, n, "10.0.0.5", 5432), &rules[3]);
        assert_null(net_match(rules, n, "10.0.0.5", 22));
        assert_null(net_match(rules, n, "10.0.0.6", 5432));
        for (size_t i = 0; i < n; i++)
                net_rule_done(&rules[i]);
}

static void test_normalize(void **state) {
        char a[] = "PyPI.Org.";
        assert_int_equal(net_host_normalize(a), 0);
        assert_string_equal(a, "pypi.org");
        char b[] = "[FD00:0:0::1]";
        assert_int_equal(net_host_normalize(b), 0);
        assert_string_equal(b, "fd00::1");
        char c[] = "bad host";
        assert_int_equal(net_host_normalize(c), -EINVAL);
        char d[] = "";
        assert_int_equal(net_host_normalize(d), -EINVAL);
        char e[] = "a_b.org";
        assert_int_equal(net_host_normalize(e), -EINVAL);
}

static const char *cls(const char *text) {
        static struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, text, &in->sin_addr) == 1)
                in->sin_family = AF_INET;
        else if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1)
                in6->sin6_family = AF_INET6;
        else
                fail_msg("bad test address %s", text);
        const char *c = net_address_class((struct sockaddr *)&ss);
        return c ? c : "public";
}

static void test_address_classes(void **state) {
        static const struct { const char *addr, *cls; } cases[] = {
                { "127.0.0.1", "loopback" },        { "127.255.0.9", "loopback" },
                { "::1", "loopback" },              { "169.254.169.254", "link-local" },
                { "fe80::1", "link-local" },        { "10.1.2.3", "private" },
                { "172.16.0.1", "private" },        { "172.31.255.255", "private" },
                { "172.32.0.1", "public" },         { "192.168.1.1", "private" },
                { "fd00::1", "private" },           { "100.64.0.1", "shared address space (CGNAT)" },
                { "100.127.255.254", "shared address space (CGNAT)" },
                { "100.128.0.1", "public" },        { "224.0.0.1", "multicast" },
                { "ff02::1", "multicast" },         { "0.0.0.0", "unspecified" },
                { "::", "unspecified" },            { "240.0.0.1", "reserved" },
                { "255.255.255.255", "reserved" },  { "8.8.8.8", "public" },
                { "2606:4700::1111", "public" },
                /* Embedded IPv4 is judged as IPv4. */
                { "::ffff:127.0.0.1", "loopback" }, { "::ffff:169.254.169.254", "link-local" },
                { "::127.0.0.1", "loopback" },      { "64:ff9b::a9fe:a9fe", "link-local" },
                { "2002:7f00:1::", "loopback" },    { "::ffff:8.8.8.8", "public" },
        };
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
                if (strcmp(cls(cases[i].addr), cases[i].cls) != 0)
                        fail_msg("%s: %s, expected %s", cases[i].addr, cls(cases[i].addr), cases[i].cls);
}

static bool allowed(const char *entry, const char *addr, const char **why) {
        VsNetRule r = rule(entry);
        struct sockaddr_storage ss = { 0 };
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, addr, &in->sin_addr) == 1)
                in->sin_family = AF_INET;
        else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1)
                in6->sin6_family = AF_INET6;
        *why = NULL;
        bool ok = net_address_allowed(&r, (struct sockaddr *)&ss, why);
        net_rule_done(&r);
        return ok;
}

static void test_address_policy(void **state) {
        const char *why;
        /* Wildcards: public only. */
        assert_true(allowed("*.example.com", "93.184.216.34", &why));
        assert_false(allowed("*.localhost", "127.0.0.1", &why));
        assert_string_equal(why, "loopback");
        assert_false(allowed("*.example.com", "10.0.0.1", &why));
        assert_string_equal(why, "private");
        assert_false(allowed("*.example.com", "100.64.1.1", &why));
        assert_false(allowed("*.example.com", "::ffff:169.254.169.254", &why));
        assert_string_equal(why, "link-local");
        /* Exact names: public, private, CGNAT; never loopback or metadata. */
        assert_true(allowed("registry.corp", "10.0.0.7", &why));
        assert_true(allowed("registry.corp", "100.64.0.9", &why));
        assert_false(allowed("localhost", "127.0.0.1", &why));
        assert_string_equal(why, "loopback");
        assert_false(allowed("metadata.google.internal", "169.254.169.254", &why));
        assert_string_equal(why, "link-local");
        assert_false(allowed("pypi.org", "224.0.0.1", &why));
        assert_string_equal(why, "multicast");
        /* Literal addresses: exactly that one, whatever its range. */
        assert_true(allowed("127.0.0.1:8080", "127.0.0.1", &why));
        assert_true(allowed("169.254.169.254", "169.254.169.254", &why));
        assert_false(allowed("10.0.0.5", "10.0.0.6", &why));
        assert_string_equal(why, "not the listed address");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_entries),
                cmocka_unit_test(test_bad_entries),
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_normalize),
                cmocka_unit_test(test_address_classes),
                cmocka_unit_test(test_address_policy),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
