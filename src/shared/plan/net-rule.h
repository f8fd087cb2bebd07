/* SPDX-License-Identifier: MIT */
#pragma once

/* One entry of the network allowlist as a policy holds it (policy.h);
 * parsing and matching are the host's (src/core/config/net-policy.h). */

#include <stdint.h>

typedef enum VsNetKind {
        VS_NET_NAME,     /* exact host name: "pypi.org" */
        VS_NET_WILDCARD, /* "*.npmjs.org": any name below npmjs.org, not npmjs.org itself */
        VS_NET_IP,       /* a literal address: "10.0.0.5", "[fd00::1]:8080" */
} VsNetKind;

typedef struct VsNetRule {
        VsNetKind kind;
        char *host;       /* lowercase; for a wildcard the suffix after "*."; for an IP its canonical text */
        uint16_t port;    /* 0: any port */
        char *written;    /* the entry as written, for messages ("the policy line to change") */
        unsigned line, col;
} VsNetRule;

/* Longest host name (RFC 1035) and its longest label. */
#define VS_NET_HOST_MAX 253
#define VS_NET_LABEL_MAX 63

/* One of this host's own addresses (an interface's), as the daemon reads
 * them (src/proxy/host-addrs.h). */
typedef struct VsNetAddr {
        int family;       /* AF_INET (addr[0..4)) or AF_INET6 */
        uint8_t addr[16];
} VsNetAddr;
