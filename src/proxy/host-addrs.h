/* SPDX-License-Identifier: MIT */
#pragma once

/* This host's own addresses (every interface's, IPv4 and IPv6, up or
 * down), for the network allowlist's proxy: a name that resolves to one
 * of them reaches every service the host has bound to 0.0.0.0 or ::, as
 * loopback would, so no name entry may (net_address_allowed()).
 *
 * Read with getifaddrs() and kept until the kernel says an address
 * changed: a NETLINK_ROUTE socket subscribed to address changes is drained,
 * without blocking, on every call. The kernel queues the notice inside the
 * change itself, so an address added (an interface that came up) before
 * the call is in the answer; a notice lost to an overflowing queue counts
 * as a change. Without that socket every call reads the addresses again.
 * Process-wide; the loop's thread only. */

#include <stddef.h>

#include "net-policy.h"

/* The current addresses, borrowed until the next call. A negative errno
 * when they cannot be read: the caller refuses, as it cannot tell the
 * host's own addresses apart. */
int host_addrs_get(const VsNetAddr **ret, size_t *ret_n);
