/* SPDX-License-Identifier: MIT */
#pragma once

/* The CLI's one transport: daemon API calls (docs/protocol.md, "Daemon
 * API"), answered by vectora-sandboxd when one is reachable, or in-process
 * through src/core (embedded mode: one worker for this invocation, started
 * on the first call). Either way a call's result is API-shaped: "ok",
 * "error":{"code","message"}, "sandboxed", "sandbox", the tool's fields,
 * and the raw payload (command output, file content). */

#include "cli.h"

typedef struct CliLink CliLink;

/* Borrows a (which must outlive the link). */
int cli_link_new(const CliArgs *a, CliLink **ret);
void cli_link_free(CliLink *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(CliLink *, cli_link_free);

/* True when calls go to a daemon. */
bool cli_link_daemon(const CliLink *l);

/* One call. req is a daemon API request without "workspace" (set here from
 * -w) and "id"; tool results carry their bulk data as the raw payload
 * ("binary"). Takes ownership of req. *ret is always a result (failures of
 * the transport or of the workspace's sandbox included), except on -ENOMEM.
 * Release it with jsonl_msg_done(). */
int cli_link_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret);
