/* SPDX-License-Identifier: MIT */
#pragma once

/* A client's request from decode to reply (request.c): every tool's code
 * ends it with request_finish. */

#include "daemon.h"
#include "json-util.h"
#include "jsonl.h"
#include "api-call.h"
#include "worker-link.h"

struct Request {
        Server *srv;
        Client *client;  /* referenced */
        json_t *id;      /* the client's id (any JSON value), referenced; NULL = no reply wanted */
        JsonlMsg msg;    /* the request: header object and raw payload */
        const char *tool;
        ApiTool which;   /* tool, _API_TOOL_INVALID when unknown */
        Workspace *ws;
        uint64_t t0_us;
        json_t *target;  /* for the audit log */
        char *dir;       /* a subdirectory of ws->path the request named: relative paths and the cwd start there */
        char *dir_path;  /* the request's path or cwd made absolute under dir */
        char *pending;   /* policy_pending of the result: what waited for approval when the call was taken */
        Call call;
        bool binary;     /* results as raw payload instead of strings */
        JsonlText texts[2]; /* result strings borrowed from the worker's reply, sent by request_finish */
        size_t n_texts;
        char *owned[2];     /* output cut to fit a reply (reply-fit.c), which texts may point into */
        void *args;      /* decoded tool arguments (tools.c) */
        const JsonField *args_table;
        void (*free_args)(void *args);
        VsApiCall ac;    /* a worker tool's call: decoded arguments, its worker requests (api-call.h) */
        size_t in_bytes; /* its line and payload, counted in the client's in_held */
        Request *next_call, **call_pprev; /* in client->calls while it may be cancelled; call_pprev: what points here */
        bool listed;        /* in client->calls */
        bool detach;        /* "detach": true: runs on when its connection closes */
        bool cancelled;     /* a cancel reached it: its result is the error cancelled */
        const char *cancel_why; /* static: the cancelled result's message, audited */
        bool limit_restarted;   /* its command found the jail at its process limit: the jail was restarted and the call sent again */
        /* Set while it waits for a first-seen vectora.toml to settle
         * (tools.c, workspace.h settle_ms): in settle_ws's settle_waiters
         * (or settle_firing) and in client->calls (a cancel finds it); no
         * r->ws yet. */
        Workspace *settle_ws;
        Request *next_settle, **settle_pprev; /* settle_pprev: what points here (a removal from either list in O(1)) */
        char *settle_path;      /* that workspace's path, for the audit of a call that ends while it waits */
        uint64_t settle_since_ms; /* since when (a second at most) */
};

/* Takes r out of its client's calls in flight: a cancel, or the
 * connection's end, no longer finds it (request_finish does this too). */
void request_unlist(Request *r);
/* Puts r in its client's calls (a cancel or the connection's close finds
 * it there), once. */
void request_list(Request *r);
/* Sends the result of r (ok when code is API_OK), audits it and frees r.
 * result: fields to add (stolen), may be NULL. */
void request_finish(Request *r, WorkerLink *l, json_t *result, const void *raw, size_t raw_len, ApiError code,
                    const char *message);
/* A session_open call's done callback: true and *ret_pid when the worker
 * started it; otherwise r was finished with the failure (code/message when
 * there is no reply m, the worker's error, or a malformed reply). */
bool request_session_opened(Request *r, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message,
                            int64_t *ret_pid);
/* Lockdown refuses a guarantee it cannot keep (masks over time, rule 5), as
 * for the one-shot tools: true when r was finished with that refusal. */
bool request_lockdown_refuses(Request *r);
/* Bytes as a base64 JSON string (new reference, NULL on OOM). */
json_t *b64_json(const void *p, size_t n);
/* An opened terminal's terminal_open audit line names it: {"pty": id}, as
 * its terminal_exit line does. */
void audit_target_pty(Request *r, uint64_t id);
