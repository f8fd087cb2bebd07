/* SPDX-License-Identifier: MIT */
#pragma once

/* The network allowlist's HTTP proxy, one per workspace that has one
 * (proxy.c). */

#include "daemon.h"

/* Starts ws's proxy if it has none (its socket under the runtime
 * directory) and lets peer_uid (the jail's) connect. *ret_path borrowed. */
int proxy_ensure(Workspace *ws, uid_t peer_uid, const char **ret_path, VsError **err);
/* Ends the listener and every connection; frees once they are closed. */
void proxy_stop(Proxy *px);
/* The denials recorded at or after since_us, as [{host, port, reason}],
 * or NULL when none (or no proxy). */
json_t *proxy_denials_since(Proxy *px, uint64_t since_us);
/* {open, connections, denied}, or NULL without a proxy. */
json_t *proxy_status(Proxy *px);
/* Sets the uid allowed to connect (the jail's, known once the launch is). */
void proxy_set_peer(Proxy *px, uid_t uid);
