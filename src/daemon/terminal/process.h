/* SPDX-License-Identifier: MIT */
#pragma once

/* Background processes (process.c): process_start and the tools on them,
 * each a session in the workspace's worker (jail-session.h). */

#include "daemon.h"

/* process_start/output/input/signal/list, the workspace resolved. */
void process_tool(Request *r);
/* The workspace goes away (daemon exit): its processes' records too. */
void process_forget_workspace(Workspace *ws);
