/* SPDX-License-Identifier: MIT */
#pragma once

/* The network allowlist's proxy, the daemon's side (proxy.c): a listener
 * per workspace that has one, served by the proxy process
 * (vectora-sandbox-proxy). */

#include "daemon.h"

/* Starts ws's proxy if it has none (its socket under the runtime
 * directory, the proxy process if none runs) and lets peer_uid (the
 * jail's) connect. *ret_path borrowed. */
int proxy_ensure(Workspace *ws, uid_t peer_uid, const char **ret_path, VsError **err);
/* Ends the listener and every connection; with the last one, the process. */
void proxy_stop(Proxy *px);
/* The denials recorded at or after since_us, as [{host, port, reason}],
 * or NULL when none (or no proxy). */
json_t *proxy_denials_since(Proxy *px, uint64_t since_us);
/* A sentence for degraded when the proxy process ended at or after
 * since_us, else NULL. */
const char *proxy_lost_since(Proxy *px, uint64_t since_us);
/* {open, connections, denied}, or NULL without a proxy. */
json_t *proxy_status(Proxy *px);
/* {running, pid, uid, restarts, last_exit, seccomp, landlock_abi}, or
 * NULL when none ever ran. */
json_t *proxy_process_status(void);
/* Whether the proxy process runs now, and how often it was started again
 * after it ended (for metrics). */
void proxy_process_counts(bool *ret_up, uint64_t *ret_restarts);
/* Sets the uid allowed to connect (the jail's, known once the launch is). */
void proxy_set_peer(Proxy *px, uid_t uid);
/* ws's policy changed: the proxy gets its rules again. */
void proxy_policy_changed(Workspace *ws);
/* A jail of ws is about to start: its secrets are read from the store
 * again (a value set meanwhile applies), with new placeholders; the proxy
 * gets them, and NAME=placeholder is appended to *env for the jail. */
int proxy_secrets_renew(Workspace *ws, char ***env, VsError **err);
/* Secret name left the store (secret_delete): every workspace's proxy
 * drops it at once, so that no request of a running jail (a background
 * process, the next call) gets its value in; its placeholder stays in
 * the jail's environment and goes on as written. */
void proxy_secret_deleted(Server *srv, const char *name);
/* With secrets: the host path of the jail's CA bundle (proxy-ca.h),
 * rewritten by proxy_secrets_renew(); NULL without. Owned by the proxy. */
const char *proxy_ca_bundle(Workspace *ws);
/* SIGCHLD: reaps the proxy process if it ended. */
void proxy_reap(void);
