/* SPDX-License-Identifier: MIT */
#include "net-policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static char lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* A host name as DNS spells it: labels of letters, digits and inner
 * hyphens. Underscores and anything else are refused: no proxy or
 * resolver quirk should decide what a strange name means. */
static bool valid_hostname(const char *h) {
        size_t n = strlen(h), label = 0;
        if (n == 0 || n > VS_NET_HOST_MAX)
                return false;
        for (size_t i = 0; i <= n; i++) {
                char c = h[i];
                if (c == '.' || c == 0) {
                        if (label == 0 || h[i - 1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && !(c == '-' && label > 0))
                        return false;
                if (++label > VS_NET_LABEL_MAX)
                        return false;
        }
        return true;
}

/* The canonical text of an IP literal into buf, or false. */
static bool canonical_ip(const char *s, char buf[static INET6_ADDRSTRLEN]) {
        unsigned char a[16];
        if (inet_pton(AF_INET, s, a) == 1)
                return inet_ntop(AF_INET, a, buf, INET6_ADDRSTRLEN) != NULL;
        if (inet_pton(AF_INET6, s, a) == 1)
                return inet_ntop(AF_INET6, a, buf, INET6_ADDRSTRLEN) != NULL;
        return false;
}

int net_host_normalize(char *host) {
        size_t n = strlen(host);
        if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
                memmove(host, host + 1, n - 2);
                host[n - 2] = 0;
                n -= 2;
        }
        char ip[INET6_ADDRSTRLEN];
        if (canonical_ip(host, ip)) {
                if (strlen(ip) > n)
                        return -EINVAL;
                strcpy(host, ip);
                return 0;
        }
        if (n > 0 && host[n - 1] == '.')
                host[--n] = 0;
        for (size_t i = 0; i < n; i++)
                host[i] = lower(host[i]);
        return valid_hostname(host) ? 0 : -EINVAL;
}

static int parse_port(const char *s, uint16_t *ret) {
        unsigned long v = 0;
        if (!*s || strlen(s) > 5)
                return -EINVAL;
        for (const char *c = s; *c; c++) {
                if (*c < '0' || *c > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned long)(*c - '0');
        }
        if (v < 1 || v > 65535)
                return -ERANGE;
        *ret = (uint16_t)v;
        return 0;
}

void net_rule_done(VsNetRule *r) {
        if (!r)
                return;
        free(r->host);
        free(r->written);
        *r = (VsNetRule) { 0 };
}

int net_rule_parse(const char *entry, VsNetRule *ret, VsError **err) {
        size_t n = strlen(entry);
        if (n == 0)
                return vs_error_set(err, -EINVAL, "an empty entry; write a host name like \"pypi.org\"");
        if (n > VS_NET_HOST_MAX + 16)
                return vs_error_set(err, -EINVAL, "longer than a host name and port can be");
        if (strstr(entry, "://") || strchr(entry, '/'))
                return vs_error_set(err, -EINVAL, "write the host name alone (\"pypi.org\"), not a URL or a path");
        _cleanup_free_ char *s = strdup(entry);
        if (!s)
                return -ENOMEM;

        uint16_t port = 0;
        char *host = s, *port_text = NULL;
        if (s[0] == '[') {
                /* [v6]:port, or [v6] */
                char *close = strchr(s, ']');
                if (!close)
                        return vs_error_set(err, -EINVAL, "an IPv6 address opened with '[' needs its ']'");
                *close = 0;
                host = s + 1;
                if (close[1] == ':')
                        port_text = close + 2;
                else if (close[1])
                        return vs_error_set(err, -EINVAL, "after ']' only \":PORT\" may follow");
                unsigned char a[16];
                if (inet_pton(AF_INET6, host, a) != 1)
                        return vs_error_set(err, -EINVAL, "\"%s\" in brackets is not an IPv6 address", host);
        } else {
                char *colon = strchr(s, ':');
                if (colon && strchr(colon + 1, ':')) {
                        /* A bare IPv6 address (no port: a port needs brackets). */
                        char ip[INET6_ADDRSTRLEN];
                        if (!canonical_ip(s, ip))
                                return vs_error_set(err, -EINVAL,
                                                    "not a host name, host:port or IP address (an IPv6 address with a port is written [ADDR]:PORT)");
                } else if (colon) {
                        *colon = 0;
                        port_text = colon + 1;
                }
        }
        if (port_text) {
                int r = parse_port(port_text, &port);
                if (r < 0)
                        return vs_error_set(err, r, "port \"%s\" must be a number from 1 to 65535", port_text);
        }

        VsNetRule rule = { .port = port };
        char ip[INET6_ADDRSTRLEN];
        if (canonical_ip(host, ip)) {
                rule.kind = VS_NET_IP;
                rule.host = strdup(ip);
        } else {
                if (host[0] == '*') {
                        if (host[1] != '.' || !host[2])
                                return vs_error_set(err, -EINVAL,
                                                    "a wildcard is written \"*.example.com\" (any name below example.com); \"*\" alone or elsewhere in a name is refused");
                        rule.kind = VS_NET_WILDCARD;
                        host += 2;
                } else
                        rule.kind = VS_NET_NAME;
                for (char *c = host; *c; c++)
                        *c = lower(*c);
                if (strchr(host, '*'))
                        return vs_error_set(err, -EINVAL, "'*' may only start an entry, as in \"*.example.com\"");
                if (!valid_hostname(host))
                        return vs_error_set(err, -EINVAL,
                                            "\"%s\" is not a host name (letters, digits, inner hyphens, dot-separated labels of at most 63)",
                                            host);
                rule.host = strdup(host);
        }
        if (!rule.host)
                return -ENOMEM;
        *ret = rule;
        return 0;
}

static bool host_matches(const VsNetRule *r, const char *host) {
        switch (r->kind) {
        case VS_NET_NAME:
        case VS_NET_IP:
                return strcmp(r->host, host) == 0;
        case VS_NET_WILDCARD: {
                size_t hl = strlen(host), sl = strlen(r->host);
                return hl > sl + 1 && host[hl - sl - 1] == '.' && strcmp(host + hl - sl, r->host) == 0;
        }
        }
        return false;
}

const VsNetRule *net_match(const VsNetRule *rules, size_t n, const char *host, uint16_t port) {
        for (size_t i = 0; i < n; i++)
                if ((rules[i].port == 0 || rules[i].port == port) && host_matches(&rules[i], host))
                        return &rules[i];
        return NULL;
}

static const char *v4_class(const uint8_t a[4]) {
        if (a[0] == 127)
                return "loopback";
        if (a[0] == 169 && a[1] == 254)
                return "link-local";
        if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168))
                return "private";
        if (a[0] == 100 && (a[1] & 0xc0) == 64)
                return "shared address space (CGNAT)";
        if ((a[0] & 0xf0) == 224)
                return "multicast";
        if (a[0] == 0)
                return "unspecified";
        if ((a[0] & 0xf0) == 240)
                return "reserved";
        return NULL;
}

/* The IPv4 address inside an IPv6 one that reaches it (mapped,
 * compatible, NAT64, 6to4), or NULL. */
static const uint8_t *embedded_v4(const uint8_t a[16]) {
        static const uint8_t zero[12];
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (memcmp(a, mapped, 12) == 0 || (memcmp(a, zero, 12) == 0 && (a[12] | a[13] | a[14]) != 0))
                return a + 12;
        if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b)
                return a + 12;
        if (a[0] == 0x20 && a[1] == 0x02)
                return a + 2;
        return NULL;
}

const char *net_address_class(const struct sockaddr *sa) {
        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
                uint8_t a[4];
                memcpy(a, &in->sin_addr, 4);
                return v4_class(a);
        }
        if (sa->sa_family != AF_INET6)
                return "reserved";
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        const uint8_t *a = in6->sin6_addr.s6_addr;
        static const uint8_t zero[16];
        /* IPv4-mapped and -compatible addresses reach the IPv4 address
         * inside, and NAT64 (64:ff9b::/96) and 6to4 (2002::/16) the one a
         * gateway would reach: judge that one. */
        const uint8_t *v4 = embedded_v4(a);
        if (v4)
                return v4_class(v4);
        if (memcmp(a, zero, 15) == 0)
                return a[15] == 1 ? "loopback" : "unspecified";
        if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
                return "link-local";
        if ((a[0] & 0xfe) == 0xfc)
                return "private";
        if (a[0] == 0xff)
                return "multicast";
        return NULL;
}

static bool same_address(const char *text, const struct sockaddr *sa) {
        char buf[INET6_ADDRSTRLEN];
        const void *addr = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                                                    : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        return inet_ntop(sa->sa_family, addr, buf, sizeof buf) && strcmp(buf, text) == 0;
}

bool net_address_is_own(const struct sockaddr *sa, const VsNetAddr *own, size_t n) {
        const uint8_t *v4 = NULL, *v6 = NULL;
        if (sa->sa_family == AF_INET)
                v4 = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
        else if (sa->sa_family == AF_INET6) {
                v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
                v4 = embedded_v4(v6);
        } else
                return false;
        for (size_t i = 0; i < n; i++)
                if ((own[i].family == AF_INET && v4 && memcmp(own[i].addr, v4, 4) == 0) ||
                    (own[i].family == AF_INET6 && v6 && memcmp(own[i].addr, v6, 16) == 0))
                        return true;
        return false;
}

bool net_address_allowed(const VsNetRule *rule, const struct sockaddr *sa, const VsNetAddr *own, size_t n_own,
                         const char **ret_why) {
        if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) {
                *ret_why = "not an IP address";
                return false;
        }
        const char *cls = net_address_class(sa);
        switch (rule->kind) {
        case VS_NET_IP:
                if (same_address(rule->host, sa))
                        return true;
                *ret_why = "not the listed address";
                return false;
        case VS_NET_NAME:
                if (cls && !streq(cls, "private") && !streq(cls, "shared address space (CGNAT)")) {
                        *ret_why = cls;
                        return false;
                }
                break;
        case VS_NET_WILDCARD:
                if (cls) {
                        *ret_why = cls;
                        return false;
                }
                break;
        }
        if (net_address_is_own(sa, own, n_own)) {
                *ret_why = "this host's own address";
                return false;
        }
        return true;
}
