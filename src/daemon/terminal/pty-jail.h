/* SPDX-License-Identifier: MIT */
#pragma once

/* Terminals in a sandboxed workspace (pty-jail.c), each a session in
 * its worker (jail-session.h). */

#include "daemon.h"
#include "jsonl.h"

/* terminal_open's arguments: ApiTerminalOpenArgs, api_terminal_open_table (api.h). */

void jail_pty_open(Request *r, json_t *obj);
/* terminal_input/resize/close for one of c's jail terminals: false when
 * the pty id is not one of them. */
bool jail_pty_message(Client *c, json_t *id, const char *tool, json_t *obj, JsonlMsg *m);
void jail_pty_close_all(Client *c);
void jail_pty_resume(Client *c);
