/* SPDX-License-Identifier: MIT */
/* The proxy's engine (src/proxy/engine.h) fed the daemon's control
 * messages as JSON, as main.c feeds it, with a plain-HTTP client on the
 * workspace's listener between two messages: a workspace whose rules are
 * being sent again (add, then rules) keeps the set in force whole until
 * the commit, so a request read in between is checked against the old
 * [[sandbox.http]] rules, never against none. The host the rules name is
 * a closed port of 127.0.0.1: a request the proxy lets through gets a
 * 502 (cannot connect), one it refuses a 403. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <unistd.h>
#include <cmocka.h>

#include "engine.h"
#include "proxy-ctl.h"
#include "proxy-parse.h"
#include "time-util.h"

static char sock_path[108];
static unsigned port;
static char sent[16][1024]; /* what the engine sent the daemon */
static size_t n_sent;

static int collect(const char *msg) {
        if (n_sent < 16)
                snprintf(sent[n_sent++], sizeof sent[0], "%s", msg);
        return 0;
}

/* One control message as JSON text: decoded as main.c decodes it. */
static int feed(uv_loop_t *loop, const char *json, int fd) {
        ProxyCtlMsg m;
        VsError *err = NULL;
        int r = proxy_ctl_decode(json, strlen(json), &m, &err);
        if (r >= 0) {
                r = engine_handle(loop, &m, fd, collect, &err);
                proxy_ctl_msg_done(&m);
        }
        if (r < 0)
                print_message("# refused: %s\n", err ? vs_error_message(err) : strerror(-r));
        vs_error_free(err);
        return r;
}

_printf_(3, 4) static void feedf(uv_loop_t *loop, int fd, const char *fmt, ...) {
        char buf[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        (void)feed(loop, buf, fd);
}

static const char *net_rules(void) {
        static char buf[512];
        snprintf(buf, sizeof buf,
                 "\"allow\":true,\"config\":\"t.toml\",\"rules\":[{\"kind\":2,\"host\":\"127.0.0.1\",\"port\":%u,"
                 "\"written\":\"127.0.0.1:%u\",\"line\":1,\"col\":1}]",
                 port, port);
        return buf;
}

/* A client of the listener that sent a request for path. */
static int client(const char *path) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        char req[512];
        int n = snprintf(req, sizeof req, "GET http://127.0.0.1:%u%s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", port, path,
                         port);
        assert_int_equal(write(fd, req, (size_t)n), n);
        return fd;
}

/* Turns the loop for ms (the engine's resolver runs on libuv's pool). */
static void spin(uv_loop_t *loop, int ms) {
        uint64_t end = now_us() + (uint64_t)ms * 1000;
        while (now_us() < end) {
                uv_run(loop, UV_RUN_NOWAIT);
                usleep(1000);
        }
}

/* The status line the client got, after turning the loop until it came. */
static int answer(uv_loop_t *loop, int fd) {
        char buf[4096];
        size_t len = 0;
        uint64_t end = now_us() + 10 * 1000000ull;
        (void)fcntl(fd, F_SETFL, O_NONBLOCK);
        while (now_us() < end) {
                uv_run(loop, UV_RUN_NOWAIT);
                ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
                if (n > 0)
                        len += (size_t)n;
                if (n == 0 || len >= 12)
                        break;
                usleep(1000);
        }
        buf[len] = 0;
        close(fd);
        /* The status line only: the rest would break the TAP output. */
        print_message("# answer: %.*s\n", (int)strcspn(buf, "\r\n"), buf);
        return len >= 12 && strncmp(buf, "HTTP/1.1 ", 9) == 0 ? atoi(buf + 9) : -1;
}

static void test_rules_replaced_whole(void **state) {
        (void)state;
        uv_loop_t *loop = uv_default_loop();
        engine_request_init();
        /* A closed port: a request let through gets 502. */
        int t = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t il = sizeof in;
        assert_int_equal(bind(t, (struct sockaddr *)&in, sizeof in), 0);
        assert_int_equal(getsockname(t, (struct sockaddr *)&in, &il), 0);
        port = ntohs(in.sin_port);
        close(t);

        char dir[] = "/tmp/vs-engine-XXXXXX";
        assert_non_null(mkdtemp(dir));
        snprintf(sock_path, sizeof sock_path, "%s/p.sock", dir);
        int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
        assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
        assert_int_equal(listen(l, 16), 0);

        /* add, then a request before its http rules arrive: it waits for
         * the set, and is refused by it. */
        feedf(loop, l, "{\"op\":\"add\",\"ws\":1,\"peer\":%u,%s}", (unsigned)getuid(), net_rules());
        int c = client("/secret");
        spin(loop, 300);
        feedf(loop, -1, "{\"op\":\"http\",\"ws\":1,\"host\":\"127.0.0.1\",\"config\":\"t.toml line 2\",\"allow\":[\"GET /ok\"]}");
        feedf(loop, -1, "{\"op\":\"commit\",\"ws\":1}");
        assert_int_equal(answer(loop, c), 403);

        /* rules again (the policy changed): until the commit the old set
         * holds, its http rules with it. */
        feedf(loop, -1, "{\"op\":\"rules\",\"ws\":1,%s}", net_rules());
        c = client("/secret");
        assert_int_equal(answer(loop, c), 403);
        feedf(loop, -1, "{\"op\":\"http\",\"ws\":1,\"host\":\"127.0.0.1\",\"config\":\"t.toml line 2\",\"allow\":[\"GET /ok\", \"GET /new\"]}");
        c = client("/new");
        assert_int_equal(answer(loop, c), 403); /* not in force yet */
        feedf(loop, -1, "{\"op\":\"commit\",\"ws\":1}");
        c = client("/new");
        assert_int_equal(answer(loop, c), 502); /* the new set: let through, to a closed port */
        c = client("/secret");
        assert_int_equal(answer(loop, c), 403);

        /* Every refusal went to the daemon, naming the rule set. */
        size_t denials = 0;
        for (size_t i = 0; i < n_sent; i++)
                if (strstr(sent[i], "\"denial\"") && strstr(sent[i], "sandbox.http"))
                        denials++;
        assert_int_equal(denials, 4);

        /* A secret or http message outside an add or rules is refused. */
        char http[256];
        snprintf(http, sizeof http, "{\"op\":\"http\",\"ws\":1,\"host\":\"127.0.0.1\",\"config\":\"x\",\"allow\":[]}");
        assert_true(feed(loop, http, -1) < 0);
        c = client("/ok");
        assert_int_equal(answer(loop, c), 502);

        feedf(loop, -1, "{\"op\":\"remove\",\"ws\":1}");
        spin(loop, 50);
        unlink(sock_path);
        rmdir(dir);
}

/* What a tunnel's first bytes (not TLS) are, while the workspace has
 * [[sandbox.http]] rules: an HTTP request is refused, another protocol
 * passes, an unended line waits. */
static void test_request_like(void **state) {
        (void)state;
        struct { const char *s; bool full; int want; } cases[] = {
                { "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false, 1 },
                { "\r\n\r\nDELETE /x HTTP/1.1\r\n", false, 1 },
                { "delete /x http/1.0\n", false, 1 },
                { "GET /\r\n", false, 1 },                      /* HTTP/0.9 */
                { "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, 1 }, /* h2c */
                { "GET / HTTP/1.1", false, -EAGAIN },
                { "\r\n", false, -EAGAIN },
                { "GET / HTTP/1.1", true, 1 },
                { "HELO x\r\n", false, 0 },
                { "SSH-2.0-OpenSSH_9.2\r\n", false, 0 },
                { "\x00\x01GET / HTTP/1.1\r\n", false, 0 },
                { "GETX / \r\n", false, 0 },
                { "DELETE /x?\xc3\xa9 HTTP/1.1\r\n", false, 1 }, /* raw UTF-8: servers take it */
                { "DELETE\v/x\fHTTP/1.1\r\n", false, 1 },       /* Python splits on any blank */
                { "\f\x1f" "DELETE /x HTTP/1.1\r\n", false, 1 },
                { "GET\v/x\xff\r\n", false, 1 },
                { "DELETE /x\x00 HTTP/1.1", false, -EAGAIN },
                { "\x16\x03\x01GET / HTTP/1.1\r\n", false, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t len = cases[i].s[0] ? strlen(cases[i].s) : 1 + strlen(cases[i].s + 1);
                int k = http_request_like(cases[i].s, len, cases[i].full);
                if (k != cases[i].want)
                        fail_msg("case %zu: %d, not %d", i, k, cases[i].want);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_request_like),
                cmocka_unit_test(test_rules_replaced_whole),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
