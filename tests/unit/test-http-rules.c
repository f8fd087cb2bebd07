/* SPDX-License-Identifier: MIT */
/* HTTP rules per host (src/core/net/http-rules.h): the entry's form, the
 * path's normalization (query dropped, percent-decoding, escapes refused)
 * and the match ('*' one segment, '**' any). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http-rules.h"

static HttpRules *rules(char *const *allow, size_t n) {
        HttpRules *r = NULL;
        VsError *err = NULL;
        if (http_rules_new("api.github.com", "/w/vectora.toml line 3", allow, n, &r, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        return r;
}

static bool pass(const HttpRules *r, const char *method, const char *target) {
        char why[600];
        return http_rules_check(r, method, target, why, sizeof why);
}

static void test_entries(void **state) {
        const char *good[] = { "GET /", "GET /repos/me/**", "POST /repos/me/*/pulls", "DELETE /a/b", "M-SEARCH /x" };
        const char *bad[] = { "get /x", "GET", "GET x", "GET  /x", "GET /x?y", "GET /x#y", "GET /%2e", "GET /a/../b",
                              "GET /a/./b", "GET /a\\b", "GET /a b", "GET /a//b", "GET /[z-a]", "/x" };
        for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
                VsError *err = NULL;
                if (http_allow_check(good[i], &err) < 0)
                        fail_msg("%s: %s", good[i], vs_error_message(err));
        }
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
                VsError *err = NULL;
                if (http_allow_check(bad[i], &err) == 0)
                        fail_msg("%s was taken", bad[i]);
                vs_error_free(err);
        }
}

static void test_match(void **state) {
        char *allow[] = { "GET /repos/me/**", "POST /repos/me/*/pulls", "GET /" };
        HttpRules *r = rules(allow, 3);
        assert_true(pass(r, "GET", "/repos/me/a"));
        assert_true(pass(r, "GET", "/repos/me/a/b/c?x=/../y"));
        assert_true(pass(r, "GET", "/repos/m%65/a"));
        assert_true(pass(r, "POST", "/repos/me/p/pulls"));
        assert_true(pass(r, "GET", "/"));
        assert_false(pass(r, "GET", "/repos/me"));
        assert_false(pass(r, "POST", "/repos/me/a"));
        assert_false(pass(r, "get", "/repos/me/a"));
        assert_false(pass(r, "POST", "/repos/me/a/b/pulls"));
        assert_false(pass(r, "GET", "/repos/other/a"));
        assert_false(pass(r, "GET", "/repos/me/../other"));
        assert_false(pass(r, "GET", "/repos/me/%2e%2E/other"));
        assert_false(pass(r, "GET", "/repos/me/.%2e/other"));
        assert_false(pass(r, "GET", "/repos/me/x/..;/..;/other"));
        assert_false(pass(r, "GET", "/repos/me/a%2F..%2F..%2Fother"));
        assert_false(pass(r, "GET", "/repos/me/a%5c..%5cother"));
        assert_false(pass(r, "GET", "/repos/me/a\\..\\other"));
        assert_false(pass(r, "GET", "/repos/me/a%00"));
        assert_false(pass(r, "GET", "/repos//me/a"));
        assert_false(pass(r, "GET", "//repos/me/a"));
        assert_false(pass(r, "GET", "/repos/me/a%2f%2fb"));
        assert_false(pass(r, "GET", "/repos/me/a%zz"));
        /* No fragment in a target: a host reads "#/../.." as path. */
        assert_false(pass(r, "GET", "/repos/me/x#/../../other"));
        assert_false(pass(r, "GET", "/repos/me/x?q#/../../other"));
        /* Not UTF-8 once decoded: overlong '.' and '/', a lone byte,
         * a surrogate, past U+10FFFF; well-formed UTF-8 passes. */
        assert_false(pass(r, "GET", "/repos/me/%c0%ae%c0%ae/other"));
        assert_false(pass(r, "GET", "/repos/me/%e0%80%ae/other"));
        assert_false(pass(r, "GET", "/repos/me/a%c0%afb"));
        assert_false(pass(r, "GET", "/repos/me/%ff"));
        assert_false(pass(r, "GET", "/repos/me/%ed%a0%80"));
        assert_false(pass(r, "GET", "/repos/me/%f4%90%80%80"));
        assert_false(pass(r, "GET", "/repos/me/%c3"));
        assert_true(pass(r, "GET", "/repos/me/caf%c3%a9/%e2%82%ac%f0%9f%98%80"));
        /* An encoded escape: decoded twice, another character. */
        assert_false(pass(r, "GET", "/repos/me/%252e%252e/other"));
        assert_false(pass(r, "GET", "/repos/me/a%252fb"));
        assert_true(pass(r, "GET", "/repos/me/100%25"));
        assert_true(pass(r, "GET", "/repos/me/100%25off?x=%2541"));
        /* Dots and blanks alone: trimmed to ".." by some hosts. */
        assert_false(pass(r, "GET", "/repos/me/..%20/other"));
        assert_false(pass(r, "GET", "/repos/me/.../other"));
        assert_false(pass(r, "GET", "/repos/me/.%20./other"));
        assert_false(pass(r, "GET", "/repos/me/%20./other"));
        assert_false(pass(r, "GET", "/repos/me/x/..."));
        assert_true(pass(r, "GET", "/repos/me/.x/a.b/%20/v1."));
        assert_false(pass(r, "GET", "/repos/me/a%2"));
        assert_false(pass(r, "GET", "http://api.github.com/repos/me/a"));
        assert_false(pass(r, "OPTIONS", "*"));
        char why[600];
        assert_false(http_rules_check(r, "POST", "/repos/me/a", why, sizeof why));
        assert_non_null(strstr(why, "[[sandbox.http]] host = \"api.github.com\" (/w/vectora.toml line 3)"));
        assert_non_null(strstr(why, "no allow entry matches"));
        http_rules_unref(r);
        /* No entry: nothing passes. */
        r = rules(NULL, 0);
        assert_false(pass(r, "GET", "/"));
        http_rules_unref(r);
}

static void test_headers(void **state) {
        char why[600];
        const char *good[] = { "", "Host: a\r\n", "Content-Length: 12\r\n", "Transfer-Encoding: Chunked\r\n",
                               "X-HTTP-Method-Overrides: x\r\nContent-Length:0\r\n" };
        const char *bad[] = { "X-HTTP-Method-Override: DELETE\r\n", "x-http-method: PUT\r\n", "X-Method-Override: x\r\n",
                              "X-Original-URL: /admin\r\n", "X-Rewrite-Url: /admin\r\n",
                              "X_HTTP_METHOD_OVERRIDE: PUT\r\n", "x-original_url: /admin\r\n",
                              "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n",
                              "Content-Length: 1\r\nContent-Length: 1\r\n", "Content-Length: 1, 1\r\n",
                              "Content-Length: +1\r\n", "Content-Length: \r\n",
                              "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                              "Transfer-Encoding: gzip, chunked\r\n", "Transfer-Encoding: xchunked\r\n" };
        for (size_t i = 0; i < sizeof good / sizeof *good; i++)
                if (http_rules_headers_refused(good[i], why, sizeof why))
                        fail_msg("%s was refused: %s", good[i], why);
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
                if (!http_rules_headers_refused(bad[i], why, sizeof why))
                        fail_msg("%s was taken", bad[i]);
        assert_true(http_rules_headers_refused("A: b\r\nX-HTTP-Method-Override: DELETE\r\n", why, sizeof why));
        assert_non_null(strstr(why, "X-HTTP-Method-Override"));
}

static void test_fronted(void **state) {
        char *allow[] = { "GET /a/**" };
        HttpRules *r = rules(allow, 1);
        HttpRules *set[] = { r };
        char why[600];
        assert_false(http_rules_fronted(set, 1, "api.github.com", "Host: api.github.com\r\nX: y\r\n", why, sizeof why));
        assert_false(http_rules_fronted(set, 1, "api.github.com", "host:  API.github.com:80 \r\n", why, sizeof why));
        assert_false(http_rules_fronted(set, 1, "cdn.example", "Host: other.example\r\n", why, sizeof why));
        /* No Host: the server's default name, perhaps the rules host. */
        assert_true(http_rules_fronted(set, 1, "cdn.example", "", why, sizeof why));
        assert_non_null(strstr(why, "no Host header"));
        assert_true(http_rules_fronted(set, 1, "api.github.com", "X: y\r\n", why, sizeof why));
        assert_false(http_rules_fronted(set, 0, "cdn.example", "", why, sizeof why));
        /* A Host the proxy cannot read as a name. */
        assert_true(http_rules_fronted(set, 1, "cdn.example", "Host: x@api.github.com\r\n", why, sizeof why));
        assert_non_null(strstr(why, "not a host name"));
        assert_true(http_rules_fronted(set, 1, "cdn.example", "Host: api.github.com :80\r\n", why, sizeof why));
        assert_false(http_rules_fronted(set, 0, "cdn.example", "Host: x@y\r\n", why, sizeof why));
        assert_true(http_rules_fronted(set, 1, "cdn.example", "Host: api.github.com\r\n", why, sizeof why));
        assert_non_null(strstr(why, "names api.github.com, not cdn.example"));
        assert_true(http_rules_fronted(set, 1, "cdn.example", "X: y\r\nHOST: api.github.com.:8080\r\n", why, sizeof why));
        assert_true(http_rules_fronted(set, 1, "api.github.com", "Host: cdn.example\r\n", why, sizeof why));
        assert_true(http_rules_fronted(set, 1, "api.github.com", "Host: api.github.com\r\nHost: x\r\n", why, sizeof why));
        assert_true(http_rules_fronted(set, 1, "api.github.com", "Host: [::1]:80\r\n", why, sizeof why));
        http_rules_unref(r);
}

/* _method, the override Rails, Laravel and Symfony read from the query
 * or a form body: refused in every spelling a framework decodes. */
static void test_method_param(void **state) {
        (void)state;
        HttpRules *r = rules((char *[]) { "POST /x" }, 1);
        char why[600];
        const char *bad[] = { "/x?_method=DELETE", "/x?a=1&_method=DELETE", "/x?_METHOD=delete", "/x?%5Fmethod=DELETE",
                              "/x?_%6Dethod=DELETE", "/x?.method=DELETE", "/x?+_method=DELETE", "/x?_method[]=DELETE",
                              "/x?a=1;_method=DELETE", "/x?_method", "/x?%20_Method=PUT", "/x?_method%00x=DELETE" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (http_rules_check(r, "POST", bad[i], why, sizeof why))
                        fail_msg("%s passed", bad[i]);
                assert_non_null(strstr(why, "_method"));
        }
        const char *good[] = { "/x", "/x?a=_method", "/x?my_method=1", "/x?method=1", "/x?_methods=1", "/x?_method_=1" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!http_rules_check(r, "POST", good[i], why, sizeof why))
                        fail_msg("%s refused: %s", good[i], why);
        http_rules_unref(r);

        size_t need = 0;
        /* No body, or one of a type no framework reads parameters from. */
        assert_int_equal(http_rules_body("Host: h\r\n", "", 0, 100, &need, why, sizeof why), 0);
        assert_int_equal(http_rules_body("Content-Length: 15\r\nContent-Type: application/octet-stream\r\n",
                                         "_method=DELETE", 14, 100, &need, why, sizeof why), 0);
        assert_int_equal(http_rules_body("Transfer-Encoding: chunked\r\nContent-Type: application/x-git-receive-pack-request\r\n",
                                         "", 0, 100, &need, why, sizeof why), 0);
        /* A form (or no Content-Type: Rack reads one) not read whole yet. */
        assert_int_equal(http_rules_body("Content-Length: 14\r\n", "_met", 4, 100, &need, why, sizeof why), 1);
        assert_int_equal(need, 14);
        struct { const char *type, *body; bool refused; } cases[] = {
                { "", "_method=DELETE", true },
                { "Content-Type: application/x-www-form-urlencoded\r\n", "a=1&%5Fmethod=DELETE", true },
                { "Content-Type: Application/X-WWW-Form-Urlencoded; charset=utf-8\r\n", "a=1&_Method=PUT", true },
                { "Content-Type: application/x-www-form-urlencoded\r\n", "a=_method&b=2", false },
                { "Content-Type: multipart/form-data; boundary=b\r\n",
                  "--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--b--\r\n", true },
                { "Content-Type: multipart/form-data; boundary=b\r\n",
                  "--b\r\ncontent-disposition: form-data ; NAME = _METHOD\r\n\r\nDELETE\r\n--b--\r\n", true },
                { "Content-Type: multipart/form-data; boundary=b\r\n",
                  "--b\r\nContent-Disposition: form-data; name*=utf-8''%5Fmethod\r\n\r\nDELETE\r\n--b--\r\n", true },
                { "Content-Type: multipart/form-data; boundary=b\r\n",
                  "--b\r\nContent-Disposition: form-data; name=\"title\"; filename=\"_method\"\r\n\r\nx\r\n--b--\r\n",
                  false },
                /* Rack's lenient reading: folded, no ';' before name=. */
                { "Content-Type: multipart/form-data; boundary=b\r\n",
                  "--b\r\nContent-Disposition: form-data\r\n name=_method\r\n\r\nDELETE\r\n--b--\r\n", true },
                { "Content-Type: multipart/form-data; boundary=b\r\n",
                  "--b\r\nContent-Disposition: form-data name=\"_method\"\r\n\r\nDELETE\r\n--b--\r\n", true },
                { "Content-Type: multipart/form-data; boundary=b\r\n",
                  "--b\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nname=_method\r\n--b--\r\n", false },
                { "Content-Type: application/json\r\n", "{\"_method\": \"DELETE\"}", true },
                { "Content-Type: application/vnd.api+json\r\n", "{\"\\u005fmethod\": \"DELETE\"}", true },
                { "Content-Type: application/json\r\n", "{\"title\": \"x\"}", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char headers[256];
                snprintf(headers, sizeof headers, "%sContent-Length: %zu\r\n", cases[i].type, strlen(cases[i].body));
                int k = http_rules_body(headers, cases[i].body, strlen(cases[i].body), 4096, &need, why, sizeof why);
                if (k != (cases[i].refused ? -EPERM : 0))
                        fail_msg("case %zu (%s): %d %s", i, cases[i].body, k, why);
        }
        /* A form it cannot read whole: chunked, or past room; two types. */
        assert_int_equal(http_rules_body("Transfer-Encoding: chunked\r\n", "", 0, 100, &need, why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "chunked"));
        assert_int_equal(http_rules_body("Content-Type: multipart/form-data\r\nContent-Length: 101\r\n", "", 0, 100, &need,
                                         why, sizeof why), -EPERM);
        assert_int_equal(http_rules_body("Content-Type: a/b\r\nContent-Type: c/d\r\nContent-Length: 1\r\n", "x", 1, 100,
                                         &need, why, sizeof why), -EPERM);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_method_param),
                cmocka_unit_test(test_entries),
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_headers),
                cmocka_unit_test(test_fronted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
