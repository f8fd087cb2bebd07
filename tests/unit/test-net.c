/* SPDX-License-Identifier: MIT */
/* The network allowlist (src/core/config/net-policy.c): entries, matching, and
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
#include "proxy-parse.h"

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

/* This host's own addresses in the policy tests: a public IPv4 address,
 * a private one and a global IPv6 one. */
static VsNetAddr own[3];
static size_t n_own;

static void set_own(void) {
        own[0].family = AF_INET;
        inet_pton(AF_INET, "198.51.100.1", own[0].addr);
        own[1].family = AF_INET;
        inet_pton(AF_INET, "10.9.8.7", own[1].addr);
        own[2].family = AF_INET6;
        inet_pton(AF_INET6, "2001:db8:100::1", own[2].addr);
        n_own = 3;
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
        bool ok = net_address_allowed(&r, (struct sockaddr *)&ss, own, n_own, why);
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

static void test_own_addresses(void **state) {
        const char *why;
        set_own();
        /* A wildcard or an exact name resolving to one of this host's own
         * addresses (public or private, IPv4 or IPv6, or an IPv6 form of
         * the IPv4 one) reaches the host's services: refused. */
        static const struct { const char *entry, *addr; } refused[] = {
                { "*.example.com", "198.51.100.1" },   { "api.example.com", "198.51.100.1" },
                { "registry.corp", "10.9.8.7" },       { "*.example.com", "2001:db8:100::1" },
                { "api.example.com", "2001:db8:100::1" }, { "*.example.com", "::ffff:198.51.100.1" },
                { "api.example.com", "64:ff9b::c633:6401" }, { "api.example.com", "2002:c633:6401::" },
        };
        for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
                if (allowed(refused[i].entry, refused[i].addr, &why))
                        fail_msg("%s reached %s, one of this host's own addresses", refused[i].entry, refused[i].addr);
                assert_string_equal(why, "this host's own address");
        }
        /* A class refusal is named first. */
        assert_false(allowed("*.example.com", "10.9.8.7", &why));
        assert_string_equal(why, "private");
        /* Other addresses, even beside the host's, are not its own. */
        assert_true(allowed("*.example.com", "198.51.100.2", &why));
        assert_true(allowed("api.example.com", "2001:db8:100::2", &why));
        assert_true(allowed("registry.corp", "10.9.8.8", &why));
        /* A literal address is listed on purpose: that one is reached. */
        assert_true(allowed("198.51.100.1", "198.51.100.1", &why));
        assert_true(allowed("[2001:db8:100::1]:8080", "2001:db8:100::1", &why));
        n_own = 0;
}

/* ---- the proxy's parsers ---- */

static VsHttpHead head_ok(const char *text) {
        VsHttpHead h = { 0 };
        VsError *err = NULL;
        int64_t end = http_head_end(text, strlen(text));
        assert_true(end > 0);
        if (http_head_parse(text, (size_t)end, &h, &err) < 0)
                fail_msg("%s: %s", text, vs_error_message(err));
        return h;
}

static void head_bad(const char *text, int code, const char *message) {
        VsHttpHead h = { 0 };
        VsError *err = NULL;
        int64_t end = http_head_end(text, strlen(text));
        assert_true(end > 0);
        assert_int_equal(http_head_parse(text, (size_t)end, &h, &err), code);
        if (!strstr(vs_error_message(err), message))
                fail_msg("%s: message '%s' lacks '%s'", text, vs_error_message(err), message);
        vs_error_free(err);
}

static void test_http_head(void **state) {
        const char *c = "CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n\x16\x03\x01";
        assert_int_equal(http_head_end(c, strlen(c)), strlen(c) - 3);
        assert_int_equal(http_head_end(c, 20), 0);
        VsHttpHead h = head_ok(c);
        assert_true(h.connect);
        assert_string_equal(h.host, "pypi.org");
        assert_int_equal(h.port, 443);
        assert_null(h.path);
        http_head_done(&h);

        h = head_ok("CONNECT [FD00::1]:8443 HTTP/1.1\r\n\r\n");
        assert_string_equal(h.host, "fd00::1");
        assert_int_equal(h.port, 8443);
        http_head_done(&h);

        h = head_ok("GET http://Files.Example.org/a/b.whl?x=1 HTTP/1.1\r\nHost: files.example.org\r\n"
                    "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\n"
                    "Accept: */*\r\n\r\n");
        assert_false(h.connect);
        assert_string_equal(h.method, "GET");
        assert_string_equal(h.host, "files.example.org");
        assert_int_equal(h.port, 80);
        assert_string_equal(h.path, "/a/b.whl?x=1");
        assert_string_equal(h.forward_headers, "Host: files.example.org\r\nAccept: */*\r\nConnection: close\r\n");
        http_head_done(&h);

        h = head_ok("POST http://10.0.0.5:5000?q HTTP/1.0\r\n\r\n");
        assert_string_equal(h.host, "10.0.0.5");
        assert_int_equal(h.port, 5000);
        assert_string_equal(h.path, "/?q");
        http_head_done(&h);

        head_bad("GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n", -EPROTONOSUPPORT, "names its target in full");
        head_bad("GET https://pypi.org/ HTTP/1.1\r\n\r\n", -EPROTONOSUPPORT, "https goes through CONNECT");
        head_bad("CONNECT pypi.org HTTP/1.1\r\n\r\n", -EINVAL, "CONNECT needs host:port");
        head_bad("CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", -EINVAL, "CONNECT needs host:port");
        head_bad("CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n", -EINVAL, "CONNECT needs host:port");
        head_bad("GET http://evil.test@pypi.org/ HTTP/1.1\r\n\r\n", -EINVAL, "malformed host");
        head_bad("GET http://a_b.org/ HTTP/1.1\r\n\r\n", -EINVAL, "malformed host");
        head_bad("GET http://a.org/ HTTP/2.0\r\n\r\n", -EINVAL, "unsupported HTTP version");
        head_bad("GET http://a.org/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", -EINVAL, "folded header lines");
        head_bad("GET http://a.org/ HTTP/1.1\r\nBad Name: 1\r\n\r\n", -EINVAL, "malformed header name");
        head_bad("GET http://a.org/ HTTP/1.1\r\nX: a\nY: b\r\n\r\n", -EINVAL, "control character");
        head_bad("G(T http://a.org/ HTTP/1.1\r\n\r\n", -EINVAL, "malformed method");

        /* No end within the bound. */
        static char big[VS_HTTP_HEAD_MAX + 10];
        memset(big, 'a', sizeof big);
        assert_int_equal(http_head_end(big, sizeof big), -E2BIG);
}

/* A minimal ClientHello: each sni (NULL-terminated list) as one
 * server_name extension; split: the handshake across two records. */
static size_t client_hello(uint8_t *out, const char *const *snis, bool split) {
        uint8_t body[2048];
        size_t n = 0;
        body[n++] = 3, body[n++] = 3;          /* legacy_version */
        memset(body + n, 7, 32), n += 32;      /* random */
        body[n++] = 0;                          /* session id */
        body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 0x01; /* one suite */
        body[n++] = 1, body[n++] = 0;          /* null compression */
        size_t ext_len_at = n;
        n += 2;
        body[n++] = 0x00, body[n++] = 0x0b, body[n++] = 0, body[n++] = 2, body[n++] = 1, body[n++] = 0; /* ec_point_formats */
        for (const char *const *s = snis; s && *s; s++) {
                size_t l = strlen(*s);
                body[n++] = 0, body[n++] = 0; /* server_name */
                body[n++] = (uint8_t)((l + 5) >> 8), body[n++] = (uint8_t)(l + 5);
                body[n++] = (uint8_t)((l + 3) >> 8), body[n++] = (uint8_t)(l + 3);
                body[n++] = 0;
                body[n++] = (uint8_t)(l >> 8), body[n++] = (uint8_t)l;
                memcpy(body + n, *s, l), n += l;
        }
        size_t el = n - ext_len_at - 2;
        body[ext_len_at] = (uint8_t)(el >> 8), body[ext_len_at + 1] = (uint8_t)el;
        uint8_t hs[2100];
        hs[0] = 1, hs[1] = 0, hs[2] = (uint8_t)(n >> 8), hs[3] = (uint8_t)n;
        memcpy(hs + 4, body, n);
        size_t hl = n + 4, o = 0;
        size_t cut = split ? hl / 2 : hl;
        for (size_t at = 0; at < hl;) {
                size_t k = at == 0 ? cut : hl - at;
                out[o++] = 22, out[o++] = 3, out[o++] = 1, out[o++] = (uint8_t)(k >> 8), out[o++] = (uint8_t)k;
                memcpy(out + o, hs + at, k), o += k, at += k;
        }
        return o;
}

static void test_tls_sni(void **state) {
        uint8_t b[4096];
        char *sni = NULL;
        VsError *err = NULL;
        const char *one[] = { "Registry.NPMJS.org", NULL };
        size_t n = client_hello(b, one, false);
        assert_int_equal(tls_client_hello_sni(b, n, &sni, &err), 1);
        assert_string_equal(sni, "registry.npmjs.org");
        free(sni);
        sni = NULL;
        /* Incomplete: every proper prefix asks for more. */
        for (size_t k = 1; k < n; k++)
                assert_int_equal(tls_client_hello_sni(b, k, &sni, &err), 0);
        /* Across two records. */
        n = client_hello(b, one, true);
        assert_int_equal(tls_client_hello_sni(b, n, &sni, &err), 1);
        assert_string_equal(sni, "registry.npmjs.org");
        free(sni);
        sni = (char *)1;
        /* No server_name. */
        n = client_hello(b, NULL, false);
        assert_int_equal(tls_client_hello_sni(b, n, &sni, &err), 1);
        assert_null(sni);
        /* Two server_name extensions: refused. */
        const char *two[] = { "pypi.org", "evil.test", NULL };
        n = client_hello(b, two, false);
        assert_int_equal(tls_client_hello_sni(b, n, &sni, &err), -EINVAL);
        assert_non_null(strstr(vs_error_message(err), "two server_name"));
        vs_error_free(err);
        err = NULL;
        /* A name that is no host name. */
        const char *bad[] = { "a b", NULL };
        n = client_hello(b, bad, false);
        assert_int_equal(tls_client_hello_sni(b, n, &sni, &err), -EINVAL);
        vs_error_free(err);
        err = NULL;
        /* Not TLS. */
        assert_int_equal(tls_client_hello_sni((const uint8_t *)"SSH-2.0-x\r\n", 11, &sni, &err), -EPROTO);
        /* A handshake that is not a ClientHello. */
        n = client_hello(b, one, false);
        b[5] = 2;
        assert_int_equal(tls_client_hello_sni(b, n, &sni, &err), -EINVAL);
        vs_error_free(err);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_entries),
                cmocka_unit_test(test_bad_entries),
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_normalize),
                cmocka_unit_test(test_address_classes),
                cmocka_unit_test(test_address_policy),
                cmocka_unit_test(test_own_addresses),
                cmocka_unit_test(test_http_head),
                cmocka_unit_test(test_tls_sni),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
