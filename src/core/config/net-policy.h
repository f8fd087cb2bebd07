/* SPDX-License-Identifier: MIT */
#pragma once

/* The network allowlist: `network = ["pypi.org", "*.npmjs.org",
 * "github.com:443", "10.0.0.5:5432"]`.
 *
 * Pure (no OS calls): entries are parsed once from the config, and the
 * daemon's proxy asks net_match() for each request's host and port, then
 * net_address_allowed() for each address the name resolved to. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "error.h"
#include "net-rule.h"

/* Parses one entry. On failure a negative errno and *err says what is
 * wrong with it (the caller adds the location). The rule's written/line/col
 * are left for the caller. */
int net_rule_parse(const char *entry, VsNetRule *ret, VsError **err);
void net_rule_done(VsNetRule *r);

/* Normalizes a host name from a request in place (lowercase, one trailing
 * dot dropped; IPv6 brackets removed). -EINVAL when it is neither a valid
 * host name nor an IP literal. */
int net_host_normalize(char *host);

/* The first rule that allows host:port, or NULL. host must be normalized. */
const VsNetRule *net_match(const VsNetRule *rules, size_t n, const char *host, uint16_t port);

/* Why an address is special (NULL: an ordinary public address):
 * "loopback", "link-local", "private", "shared address space (CGNAT)",
 * "multicast", "unspecified", "reserved". */
const char *net_address_class(const struct sockaddr *sa);

/* Whether sa is one of own[0..n): an IPv6 address with an IPv4 address
 * inside (mapped, compatible, NAT64, 6to4) is judged by that one, as
 * net_address_class() does. */
bool net_address_is_own(const struct sockaddr *sa, const VsNetAddr *own, size_t n);

/* Whether the proxy may connect to sa for a request that rule allowed: an
 * IP entry allows exactly its own address; an exact name may reach public,
 * private and CGNAT addresses but not loopback, link-local (cloud metadata),
 * multicast, unspecified or reserved ones; a wildcard only public ones.
 * Neither kind of name reaches one of this host's own addresses own[0..n)
 * (a name resolving to the host's public address reaches every service it
 * has bound to 0.0.0.0, as loopback would). On refusal *ret_why names the
 * class. */
bool net_address_allowed(const VsNetRule *rule, const struct sockaddr *sa, const VsNetAddr *own, size_t n_own,
                         const char **ret_why);
