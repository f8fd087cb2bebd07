/* SPDX-License-Identifier: MIT */
#pragma once

/* The text of a tool result (mcp-text.c), from a reply shaped like the
 * daemon API's: what the model reads, sized for its context. Pure. */

#include <jansson.h>

#include "mcp.h"
#include "strbuf.h"

/* The text of a successful reply for call c, its raw payload raw. -ENOMEM. */
int mcp_result_text(const McpCall *c, json_t *reply, const char *raw, size_t raw_len, StrBuf *t);
/* The lines saying how the call was sandboxed and what the agent must act
 * on (host-run files, a restarted jail, network refusals, a pending policy,
 * a capped timeout). -ENOMEM. */
int mcp_append_status(StrBuf *out, json_t *reply);
