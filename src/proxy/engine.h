/* SPDX-License-Identifier: MIT */
#pragma once

/* The proxy's connections (engine.c): one Proxy per workspace listener the
 * daemon passed over; main.c feeds it the daemon's control messages. */

/* macro.h first: <uv.h> brings <sys/param.h>, whose MIN/MAX a system
 * header may redefine, but not the other way round. */
#include "macro.h"

#include <uv.h>

#include "error.h"
#include "proxy-ctl.h"

typedef struct Proxy Proxy;

/* Sends one encoded control message to the daemon: 0, or a negative
 * errno when it was lost (the daemon's end full). */
typedef int (*ProxySend)(const char *msg);

/* Applies one message from the daemon (add, rules, peer, remove). fd: the
 * descriptor that came with it, or -1. Returns 1 when it took fd, 0 when
 * not, a negative errno (and *err) on a refused message. */
int engine_handle(uv_loop_t *loop, ProxyCtlMsg *m, int fd, ProxySend send, VsError **err);

/* Installs the request path (engine-request.c) in the engine: once,
 * before the first message. Without it every request gets a 500. */
void engine_request_init(void);
