/* SPDX-License-Identifier: MIT */
/* Fuzzes the decoder of the proxy process's control messages
 * (src/core/net/proxy-ctl.h): the daemon decodes what the proxy sends, and
 * the proxy is the process that parses the jail's bytes, so a message may
 * be anything a taken-over proxy writes. Besides crashes, leaks and hangs
 * it checks: a decoded message encodes again and decodes to the same
 * fields (nothing accepted that the daemon could not also have meant);
 * the fields are within their bounds. An http message's rules are built
 * as the proxy builds them (http-rules.h) and its config text matched as
 * a request target: a target that passes has no dot segment left, and
 * as header lines and a body (http_rules_body). A commit carries ws alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-rules.h"
#include "proxy-ctl.h"
#include "secret-header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

static bool same_str(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProxyCtlMsg m;
        VsError *err = NULL;
        int r = proxy_ctl_decode((const char *)data, size, &m, &err);
        vs_error_free(err);
        err = NULL;
        if (r < 0) {
                check(r == -EBADMSG || r == -ENOMEM);
                return 0;
        }
        check(m.n_rules <= PROXY_CTL_MAX_RULES);
        check(!m.host || strlen(m.host) < 256);
        check(!m.reason || strlen(m.reason) < 400);
        char *s = proxy_ctl_encode(&m);
        check(s != NULL);
        ProxyCtlMsg m2;
        r = proxy_ctl_decode(s, strlen(s), &m2, &err);
        vs_error_free(err);
        check(r == 0);
        check(m2.op == m.op && m2.ws == m.ws && m2.n_rules == m.n_rules && m2.port == m.port);
        if (m.op == PROXY_CTL_HELLO)
                check(m.seccomp == m2.seccomp && m.landlock == m2.landlock);
        if (m.op == PROXY_CTL_DENIAL)
                check(same_str(m.host, m2.host) && same_str(m.reason, m2.reason) && m.time_us == m2.time_us);
        if (m.op == PROXY_CTL_SECRET) {
                check(same_str(m.name, m2.name) && same_str(m.placeholder, m2.placeholder));
                check(m.value_len == m2.value_len && memcmp(m.value, m2.value, m.value_len) == 0);
                /* Its headers: as sent, each one the store would take. */
                check(m.n_headers == m2.n_headers && m.n_headers <= SECRET_HEADERS_MAX);
                for (size_t i = 0; i < m.n_headers; i++)
                        check(same_str(m.headers[i], m2.headers[i]) && !secret_header_refusal(m.headers[i]));
                /* The leaf: both or neither, and as sent. */
                check(!m.cert == !m.key && same_str(m.cert, m2.cert) && same_str(m.key, m2.key));
                check(m.value_len > 0 && m.value_len <= PROXY_CTL_SECRET_VALUE_MAX && !memchr(m.value, '\n', m.value_len) &&
                      !memchr(m.value, '\r', m.value_len));
        }
        if (m.op == PROXY_CTL_SECRET_USE) {
                check(same_str(m.host, m2.host) && same_str(m.name, m2.name) && same_str(m.method, m2.method) &&
                      same_str(m.path, m2.path) && m.time_us == m2.time_us);
                check(strlen(m.name) <= PROXY_CTL_SECRET_NAME_MAX && strlen(m.method) <= PROXY_CTL_METHOD_MAX &&
                      strlen(m.path) <= PROXY_CTL_PATH_MAX);
        }
        if (m.op == PROXY_CTL_HTTP) {
                check(same_str(m.host, m2.host) && same_str(m.config, m2.config) && m.n_http_allow == m2.n_http_allow);
                for (size_t i = 0; i < m.n_http_allow; i++)
                        check(same_str(m.http_allow[i], m2.http_allow[i]));
                HttpRules *hr = NULL;
                if (http_rules_new(m.host, m.config, m.http_allow, m.n_http_allow, &hr, &err) == 0) {
                        char why[600];
                        const char *method = m.n_http_allow ? m.http_allow[0] : "GET";
                        char meth[40];
                        snprintf(meth, sizeof meth, "%.*s", (int)strcspn(method, " "), method);
                        if (http_rules_check(hr, meth, m.config, why, sizeof why)) {
                                char *path = NULL;
                                const char *bad = NULL;
                                check(http_path_normalize(m.config, &path, &bad) == 0);
                                check(!strstr(path, "/../") && !strstr(path, "/./") && !strchr(m.config, '#'));
                                free(path);
                        }
                        /* The config text as header lines, and the Host check. */
                        (void)http_rules_headers_refused(m.config, why, sizeof why);
                        /* And as a body whose _method the proxy looks for: a
                         * wait is never for more than the room given. */
                        size_t need = 0;
                        if (http_rules_body(m.config, m.config, strlen(m.config), 4096, &need, why, sizeof why) == 1)
                                check(need > strlen(m.config) && need <= 4096);
                        HttpRules *set[] = { hr };
                        (void)http_rules_fronted(set, 1, m.host, m.config, why, sizeof why);
                        http_rules_unref(hr);
                }
                vs_error_free(err);
                err = NULL;
        }
        for (size_t i = 0; i < m.n_rules; i++)
                check(m.rules[i].kind == m2.rules[i].kind && m.rules[i].port == m2.rules[i].port &&
                      same_str(m.rules[i].host, m2.rules[i].host));
        free(s);
        proxy_ctl_msg_done(&m);
        proxy_ctl_msg_done(&m2);
        return 0;
}
