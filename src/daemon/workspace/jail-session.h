/* SPDX-License-Identifier: MIT */
#pragma once

/* Sessions in a worker (docs/protocol.md, "Sessions"): processes that
 * outlive their request, an interactive terminal (terminal_open in a
 * sandboxed workspace, pty-jail.c) or a background process (process.c).
 *
 * Ownership: the owner (a JailPty, a background process) embeds the
 * JailSession and keeps it alive until its ended() callback has run; that
 * callback runs exactly once, for the process's end (exit != NULL) or for
 * the end of the jail under it (exit == NULL: code and why say what ended
 * it). A session whose owner went away early is detached: the daemon keeps
 * its own small record until the worker reports the end. A link with
 * sessions is never idle. */

#include "daemon.h"
#include "jsonl.h"
#include "protocol.h"

typedef struct JailSession JailSession;

typedef struct JailSessionOps {
        /* Output bytes (borrowed). */
        void (*output)(JailSession *s, bool is_stderr, const char *data, size_t len);
        void (*ended)(JailSession *s, const ProtocolSessionEvent *exit, ApiError code, const char *why);
} JailSessionOps;

struct JailSession {
        JailSession *next;        /* in link->sessions */
        WorkerLink *link;         /* NULL before it opened and once it ended */
        uint64_t wid;             /* the worker's name for it: session_open's request id */
        int64_t pid;              /* in the jail's pid namespace */
        bool paused;
        const JailSessionOps *ops; /* NULL: detached (the owner is gone) */
};

/* Attaches s to the link that answered its session_open with wid. */
void jail_session_attach(JailSession *s, WorkerLink *l, uint64_t wid, int64_t pid);
/* Sends one session_input/resize/signal/pause request (r->session is
 * filled in). The client (may be NULL) gets the answer to its id (may be
 * NULL); data (input) is copied. Nothing is sent for an ended session. */
void jail_session_send(JailSession *s, ProtocolOp op, ProtocolSessionRequest *r, const void *data, size_t len,
                       Client *client, json_t *id);
/* The same with a callback instead of a client: acked(userdata, code,
 * message) runs exactly once (code API_OK: the worker took it), maybe at once. */
typedef void (*JailSessionAckFn)(void *userdata, ApiError code, const char *message);
void jail_session_send_acked(JailSession *s, ProtocolOp op, ProtocolSessionRequest *r, const void *data, size_t len,
                             JailSessionAckFn acked, void *userdata);
/* The owner goes away: the process is killed (its group, SIGKILL) and no
 * callback runs any more. */
void jail_session_detach(JailSession *s);
/* Stops or resumes reading its output in the worker. */
void jail_session_pause(JailSession *s, bool paused);

/* An event from the worker (LinkOps.session_event). Returns false on a
 * protocol violation (the link must end). */
bool jail_session_event(WorkerLink *l, JsonlMsg *m, char **ret_why);
/* The link ends (LinkOps.sessions_end) or starts draining: every session
 * ends (ended() with code and why); a draining link's processes are
 * killed, never moved to the next jail. */
void jail_sessions_end(WorkerLink *l, ApiError code, const char *why);
