/* SPDX-License-Identifier: MIT */
#pragma once

/* The tools (tools.c): a decoded request to its tool, through the table
 * of tools. (Named so as not to shadow core's tools.h.) */

#include "daemon.h"
#include "jsonl.h"

void tools_handle(Client *c, JsonlMsg *m);
/* The client's connection goes: its worker calls are cancelled (but for
 * those that asked "detach": true), its terminals closed. */
void tools_client_closing(Client *c);
/* The workspace entry goes: a terminal call whose reply waits for the
 * looks at its jail's processes is answered now, the jail left as it is. */
void tools_forget_workspace(Workspace *ws);
/* Error reply for a line that could not be decoded at all. */
void tools_reply_bad_line(Client *c, ApiError code, const char *message);

/* secret_set, secret_list, secret_delete (secrets.c). */
void secret_set_reply(Request *r);
void secret_list_reply(Request *r);
void secret_delete_reply(Request *r);
