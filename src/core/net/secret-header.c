/* SPDX-License-Identifier: MIT */
#include "secret-header.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 5.1, 5.6.2: field-name = token; tchar. */
static bool tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Names the proxy must control (framing, routing, hop-by-hop), or that a
 * host hands back by design, so that a value put in them would reach the
 * jail or another site. Any case. */
static const struct {
        const char *name;
        bool prefix;
        const char *why;
} refused[] = {
        { "authorization", false, "Authorization always carries the secret; name other headers only" },
        { "host", false, "Host names the site the request goes to; the proxy checks it" },
        { "content-length", false, "the proxy frames the request; a value there would change its length" },
        { "transfer-encoding", false, "the proxy frames the request" },
        { "te", false, "a hop-by-hop header the proxy controls" },
        { "trailer", false, "a hop-by-hop header the proxy controls" },
        { "connection", false, "a hop-by-hop header the proxy sets (Connection: close)" },
        { "keep-alive", false, "a hop-by-hop header the proxy drops" },
        { "upgrade", false, "a hop-by-hop header the proxy drops" },
        { "expect", false, "the proxy controls the request's flow" },
        { "proxy-", true, "Proxy-* headers are for the jail's proxy, which drops them" },
        { "cookie", false, "a Cookie header is a list whose other names the jail picks, and hosts hand cookie values back "
                          "(pages, CSRF tokens); not a place for a secret" },
        { "origin", false, "hosts hand Origin back in Access-Control-Allow-Origin" },
        { "referer", false, "hosts hand Referer back (redirects, error pages)" },
        { "forwarded", false, "a routing header hosts log and hand back" },
        { "x-forwarded-", true, "routing headers hosts log and hand back" },
        { "via", false, "a routing header hosts log and hand back" },
        { "max-forwards", false, "a routing header (TRACE hands the whole head back)" },
};

const char *secret_header_refusal(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > SECRET_HEADER_NAME_MAX)
                return "a header name has 1 to 64 characters";
        for (const char *p = name; *p; p++)
                if (!tchar(*p))
                        return "a header name is a token (letters, digits and !#$%&'*+-.^_`|~; no space or ':')";
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
                size_t k = strlen(refused[i].name);
                if (refused[i].prefix ? n >= k && strncasecmp(name, refused[i].name, k) == 0
                                      : strcasecmp(name, refused[i].name) == 0)
                        return refused[i].why;
        }
        return NULL;
}

int secret_headers_check(const char *secret, char *const *headers, VsError **err) {
        size_t n = 0;
        for (char *const *h = headers; h && *h; h++, n++) {
                const char *why = secret_header_refusal(*h);
                if (why)
                        return vs_error_set(err, -EINVAL, "secret %s: header \"%s\": %s", secret, *h, why);
                for (char *const *o = headers; o < h; o++)
                        if (strcasecmp(*o, *h) == 0)
                                return vs_error_set(err, -EINVAL, "secret %s: header \"%s\" is listed twice", secret, *h);
        }
        if (n > SECRET_HEADERS_MAX)
                return vs_error_set(err, -E2BIG, "secret %s has more than %d headers", secret, SECRET_HEADERS_MAX);
        return 0;
}

bool secret_header_line_is(char *const *headers, const char *line, size_t len) {
        const char *colon = memchr(line, ':', len);
        if (!colon)
                return false;
        size_t k = (size_t)(colon - line);
        for (char *const *h = headers; h && *h; h++)
                if (strlen(*h) == k && strncasecmp(line, *h, k) == 0)
                        return true;
        return false;
}
