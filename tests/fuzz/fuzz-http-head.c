/* SPDX-License-Identifier: MIT */
/* Fuzzes the proxy's HTTP request-head parser with what a jailed process
 * may send. Besides crashes and hangs it checks what the proxy relies on:
 *  - http_head_end never reports more than it was given, nor more than
 *    VS_HTTP_HEAD_MAX;
 *  - a parsed head has a normalized host (net_host_normalize leaves it
 *    unchanged) and a port from 1 to 65535;
 *  - a plain request's forwarded headers carry no proxy or hop-by-hop
 *    header but the one "Connection: close" added last, and no bare CR/LF
 *    that could split the request on its way upstream;
 *  - its origin-form path starts with '/' and holds no space or CR/LF. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net-policy.h"
#include "proxy-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *buf = (const char *)data;
        int64_t end = http_head_end(buf, size);
        check(end <= (int64_t)size && end <= VS_HTTP_HEAD_MAX);
        if (end <= 0)
                return 0;
        VsHttpHead h = { 0 };
        VsError *err = NULL;
        int r = http_head_parse(buf, (size_t)end, &h, &err);
        if (r < 0) {
                check(err != NULL || r == -ENOMEM);
                vs_error_free(err);
                return 0;
        }
        check(h.host && h.port >= 1 && h.head_len == (size_t)end);
        char *again = strdup(h.host);
        check(again && net_host_normalize(again) == 0 && strcmp(again, h.host) == 0);
        free(again);
        if (!h.connect) {
                check(h.path && h.path[0] == '/' && !strpbrk(h.path, " \r\n"));
                check(h.forward_headers != NULL);
                size_t n = strlen(h.forward_headers);
                check(n >= 19 && strcmp(h.forward_headers + n - 19, "Connection: close\r\n") == 0);
                /* every line ends CRLF; no CR or LF elsewhere */
                for (size_t i = 0; i < n; i++) {
                        if (h.forward_headers[i] == '\r')
                                check(i + 1 < n && h.forward_headers[i + 1] == '\n');
                        if (h.forward_headers[i] == '\n')
                                check(i > 0 && h.forward_headers[i - 1] == '\r');
                }
                for (const char *l = h.forward_headers; *l; l = strstr(l, "\r\n") + 2) {
                        if (l == h.forward_headers + n - 19)
                                break;
                        check(strncasecmp(l, "proxy-", 6) != 0 && strncasecmp(l, "connection:", 11) != 0);
                }
        } else
                check(h.path == NULL);
        http_head_done(&h);
        return 0;
}
