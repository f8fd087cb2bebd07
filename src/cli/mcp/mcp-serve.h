/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora-sandbox mcp: how a decoded MCP tool call is served. Both ways
 * answer with a reply shaped like the daemon API's (docs/protocol.md: ok,
 * error, sandboxed, sandbox, the tool's fields, outputs and file content as
 * the raw payload), which src/cli/mcp/mcp.c turns into the tool result. */

#include <pthread.h>
#include <sys/stat.h>

#include "config.h"
#include "mcp.h"
#include "session.h"

/* Embedded: one persistent worker for the workspace, kept for the whole MCP
 * session (warm calls), restarted when it dies or when vectora.toml or
 * what its masks cover changes. Calls run on it at once, each on a thread
 * of its own (the worker serves requests in parallel, session.h); a
 * worker that must be replaced serves the calls it has to their end, and
 * the next call waits for them. */
typedef struct McpEmbedded {
        const char *workspace; /* borrowed */
        bool require_sandbox;  /* an unsandboxed workspace is refused (sandbox_required) */
        VsPolicy *policy;
        VsSession *session;
        struct stat config_st; /* vectora.toml when the session started */
        bool config_present;
        char *pending;         /* a loosening waiting for `vectora-sandbox allow` (approval.h), or NULL */
        char **masked;         /* what the masks covered when the session started (tools_masked_now) */
        struct VsHostRunScan *host_run; /* the files the host runs later as the last call left them */
        pid_t *jail_pids;      /* the jail's processes after its start (session_jail_pids), sorted */
        int n_jail_pids;       /* how many, or < 0: not counted */
        uint64_t generation;   /* workers this server started: the result's sandbox.generation */
        /* Commands need what this mode lacks (network = [...] is the
         * daemon's proxy): the message terminal is refused with, or NULL.
         * The file tools are served by a jail without a network. */
        char *no_commands;
        pthread_mutex_t lock;  /* all of the above */
        pthread_cond_t cond;   /* a call released the session */
        unsigned busy;         /* calls holding the session */
        bool ending;           /* ended once busy is 0 (dead, or stale): no new call on it */
        bool strays_looked;    /* the last call alone on it looked for what outlived it (end_strays) */
} McpEmbedded;

/* One tools/call's hold on the session (mcp_embedded_acquire()). */
typedef struct McpEmbHold {
        VsSession *session;             /* NULL: refused (code, message), or ended during the call */
        uint64_t generation;
        char *code, *message;           /* why no session */
        struct VsHostRunScan *host_run; /* the last scan, if this call took it (host_run_report()) */
        bool counted;                   /* in busy */
        bool edit_steps;                /* a multi_edit or apply_patch: its own rm runs without no_commands */
} McpEmbHold;

/* Sets up e (workspace borrowed). */
void mcp_embedded_init(McpEmbedded *e, const char *workspace, bool require_sandbox);
/* The session for one tools/call, started (or restarted) here when
 * needed: call it on a thread that lives as long as the session (its
 * worker dies with the thread that started it, PR_SET_PDEATHSIG). Waits
 * for the calls on a session that must be replaced. -ENOMEM only; a
 * workspace that cannot get a session is a hold that refuses. */
int mcp_embedded_acquire(McpEmbedded *e, McpEmbHold *h);
/* Serves call on the hold's session, from any thread, alongside other
 * calls. cancel_fd: the call's own eventfd (< 0: none). *ret_reply is
 * always set on success (a refusal is a reply with ok false); *ret_raw
 * (malloc'd, may be NULL) is its raw payload. Fails only with -ENOMEM. */
int mcp_embedded_call(McpEmbedded *e, McpEmbHold *h, const McpCall *call, int cancel_fd, json_t **ret_reply,
                      char **ret_raw, size_t *ret_raw_len);
/* The call is done with its session. */
void mcp_embedded_release(McpEmbedded *e, McpEmbHold *h);
/* Ends the worker now, under the calls that hold it (they fail, as when
 * it died); the next call starts another. */
void mcp_embedded_stop(McpEmbedded *e);
/* Ends the worker (no call holds it). */
void mcp_embedded_done(McpEmbedded *e);
