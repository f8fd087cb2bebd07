/* SPDX-License-Identifier: MIT */
#pragma once

/* A worker process and the protocol to it (worker-link.c). It reports to
 * its owner, the workspace, only through the LinkOps given at link_start. */

#include "daemon.h"
#include "handshake.h"
#include "jsonl.h"
#include "launch.h"
#include "monitor-link.h"
#include "strbuf.h"

typedef enum LinkState {
        LINK_SPAWNING,
        LINK_READY,
        LINK_DEAD,
} LinkState;

/* What a link reports to its owner (the workspace, which fills these in
 * at link_start): worker-link.c calls nothing above it. */
typedef struct LinkOps {
        /* Before the start: what must be in place first (forwarded ports). */
        int (*prepare)(Workspace *ws, VsError **err);
        /* The start ended: l is the spawning link, or NULL when it failed
         * (r < 0, err says why) or was discarded (r == 0: start again).
         * Never from within link_start. */
        void (*started)(Workspace *ws, WorkerLink *l, int r, const VsError *err);
        void (*ready)(Workspace *ws, WorkerLink *l);
        void (*failed)(Workspace *ws, WorkerLink *l, ApiError code, const char *why);
        /* Nothing in flight and no session open any more. */
        void (*idle)(Workspace *ws, WorkerLink *l);
        /* l left the spawning state (ready or ended): its spawn slot frees. */
        void (*spawn_slot_free)(Server *srv, WorkerLink *l);
        /* The last process of an ended jail of ws was reaped: a waiting
         * start may go. */
        void (*old_jail_gone)(Workspace *ws);
        /* Given to protect_arm() for an ssh backend's jail, once ready. */
        void (*protect_changed)(Workspace *ws, const char *why);
        /* An event from the worker for one of its sessions: false on a
         * protocol violation (the link then ends). */
        bool (*session_event)(WorkerLink *l, JsonlMsg *m, char **ret_why);
        /* The link ends: every session ends with it. */
        void (*sessions_end)(WorkerLink *l, ApiError code, const char *why);
        /* A path the host would use was changed for the workspace (a
         * masked link the start put aside, and where it went): the next
         * result's host_run_files lists it. */
        void (*host_run)(Workspace *ws, const char *path);
} LinkOps;

struct WorkerLink {
        Server *srv;
        Workspace *ws;
        const LinkOps *ops;
        bool holds_spawn_slot;     /* counted in srv->n_spawning until ready or ended */
        uid_t slot_owner;          /* whose start it counts as (spawn_owners) */
        WorkerLink *next;          /* all links (worker-link.c) */
        WorkerLink *next_draining; /* in ws->draining */
        Workspace *old_ws;         /* ended, not yet reaped: counted in old_ws->n_old_jails */
        LinkState state;
        bool draining;
        uint64_t generation;
        VsLaunch *launch;
        pid_t pid;        /* backend process; 0 once reaped */
        bool by_monitor;     /* started by the root monitor (jail_spawn): it kills it too */
        uint64_t monitor_ws; /* the monitor's handle it was started under */
        VsHandshake hs;   /* hello, init, ready (handshake.h) */
        uv_pipe_t pipe;
        uv_pipe_t errpipe;
        unsigned open_handles;
        uv_timer_t timer;
        JsonlReader *reader;
        uint64_t read_turn;        /* the loop turn of its last read (server_read_turn) */
        bool yielded;              /* its read was put off to the next turn */
        uint64_t next_id;
        Call *inflight;
        size_t n_inflight;
        char **layers;
        char **degraded;
        char **sealed;    /* the launch's protected paths, kept past launch_trim (watch.c) */
        char **masked;    /* the paths its jail masks (the launch's verify_empty), likewise */
        StrBuf errtail;   /* last bytes of the worker's stderr */
        StrBuf errline;   /* partial stderr line */
        uint64_t spawned_ms, ready_ms, last_used_ms;
        ApiError end_code; /* why in-flight calls fail when it ends */
        bool end_eof;      /* it ended on the worker closing its socket */
        int exec_fd;       /* a monitor's start: its exec-error pipe (read end), or -EBADF */
        char *end_reason;
        bool freed_notified;
        struct JailSession *sessions; /* terminals and background processes in it (jail-session.h) */
        unsigned n_sessions;
};

/* Starts a worker for ws's current policy. What touches the host at length
 * (launch_prepare's mask walk, probes and idmap forks; a docker backend's
 * removal of a leftover container, up to 10 s) runs on the libuv thread
 * pool, so one slow start does not stall the other workspaces; the fork
 * follows on the loop. The outcome comes through ops->started (never from
 * within this call); the link then reports through the other ops. The
 * start reads ws->policy meanwhile: a workspace replacing it hands it over
 * with link_start_keep_policy. */
int link_start(Workspace *ws, const LinkOps *ops, LinkStart **ret, VsError **err);
/* In a root daemon, the maker (host-make.h) through which the monitor
 * makes what the host puts in ws and puts aside what its jail made there
 * (monitor_maker_init, ret's workspace borrowed from ws's policy): for an
 * ordinary owner's workspace, or a root-owned one with a local jail
 * (which the monitor starts only with root's vectora.toml in it); the
 * workspace opened in the monitor first. false: none (no monitor, not
 * sandboxed, a system account's: this process does that work, as it
 * starts that jail itself; docs/privsep.md). */
bool link_monitor_maker(Workspace *ws, MonitorMaker *ret);
/* Its result is not wanted (a masked path appeared, a recycle): it is
 * discarded when it arrives and the workspace starts again. */
void link_start_discard(LinkStart *s);
/* The workspace goes: the start ends unseen. */
void link_start_detach(LinkStart *s);
/* Takes p (the workspace's policy being replaced): kept while the start
 * reads it when it is that one, else freed. */
void link_start_keep_policy(LinkStart *s, VsPolicy *p);
/* Sends a call (the link must be ready). */
void link_send(WorkerLink *l, Call *c);
/* Asks the worker to cancel c, one of l's calls in flight (an exec's
 * process group is killed; it replies "cancelled": true). False when c is
 * not in flight on l, or on OOM. */
bool link_cancel(WorkerLink *l, Call *c);
/* Ends the link: kills the process; in-flight calls fail with code. */
void link_end(WorkerLink *l, ApiError code, const char *reason);
/* Called from the SIGCHLD handler: reaps the workers that ended. Only
 * these (and ptys_reap's): a start on the thread pool waits for its own
 * helpers, and reaping one here would leave it signalling a reused pid. */
void links_reap(Server *srv);
json_t *link_status(WorkerLink *l);
/* Kills every worker synchronously (daemon exit). */
void links_kill_all(Server *srv);

/* ---- calls ---- */
/* Builds the worker request for worker id wid into out. */
typedef int (*CallBuildFn)(Call *c, uint64_t wid, StrBuf *out);
/* reply != NULL: the worker's reply (ownership stays with the caller);
 * else the call failed before or without a reply: code/message say why. */
typedef void (*CallDoneFn)(Call *c, WorkerLink *l, JsonlMsg *reply, ApiError code, const char *message);

struct Call {
        Call *next;
        uint64_t wid;
        bool cancel_on_end;
        CallBuildFn build;
        CallDoneFn done;
        Request *req;
};
