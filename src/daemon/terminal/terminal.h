/* SPDX-License-Identifier: MIT */
#pragma once

/* The terminal tools (pty.c): host terminals in an unsandboxed
 * workspace, and the dispatch to jail terminals (pty-jail.h). (Named so as
 * not to shadow <pty.h>.) */

#include "daemon.h"
#include "jsonl.h"

void pty_open(Request *r, json_t *obj);
void pty_message(Client *c, json_t *id, const char *tool, json_t *obj, JsonlMsg *m);
void pty_close_all(Client *c);
/* Restarts output of the client's PTYs paused by backpressure. */
void pty_resume(Client *c);
/* Reaps the host terminals' shells that ended (see links_reap). */
void ptys_reap(Server *srv);
