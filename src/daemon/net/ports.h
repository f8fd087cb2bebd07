/* SPDX-License-Identifier: MIT */
#pragma once

/* Forwarded ports (ports.c): a listener on the host's 127.0.0.1 for each
 * port the policy forwards, each connection a session in the worker. */

#include "daemon.h"

/* Listens on 127.0.0.1 for each of ws's forwarded ports (once; the ones the
 * policy no longer has are closed). A port the host cannot bind: -errno
 * with *err (kind sandbox_unavailable) saying which and why. */
int ports_ensure(Workspace *ws, VsError **err);
/* Closes ws's listeners and connections. */
void ports_forget(Workspace *ws);
/* [{host, jail, listening, connections}], or NULL when ws forwards none. */
json_t *ports_status(Workspace *ws);
