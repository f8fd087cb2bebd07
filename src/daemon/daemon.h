/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora-sandboxd internals: one loop, a socket server with clients, a
 * table of workspaces each owning at most one live worker link.
 *
 * Ownership: the Server owns clients and workspaces. A Workspace owns its
 * links (the current one and those draining after a policy change). A
 * Request belongs to the tool code from decode to reply; it holds a
 * reference on its Client, so a client that disconnects mid-call is freed
 * only once its last request is answered (the answer is then dropped).
 * A Call is the part of a Request queued on a workspace and sent to a
 * worker; it lives inside its Request. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>
/* uv.h pulls in <sys/param.h>; macro.h has its own MIN/MAX. */
#undef MIN
#undef MAX

#include "api.h"
#include "config.h"
#include "error.h"
#include "json-util.h"
#include "jsonl.h"
#include "handshake.h"
#include "launch.h"
#include "tool-call.h"
#include "protocol.h"
#include "strbuf.h"
#include "time-util.h"

typedef struct Server Server;
typedef struct Client Client;
typedef struct Workspace Workspace;
typedef struct WorkerLink WorkerLink;
typedef struct Call Call;
typedef struct Request Request;
typedef struct PtySession PtySession;
typedef struct Proxy Proxy;
typedef struct LinkStart LinkStart;

/* ---- limits ---- */
/* Backpressure (docs/protocol.md, "Limits"). A client's requests are taken
 * (parsed, not only read) while all of these hold: */
#define CLIENT_MAX_INFLIGHT 256       /* requests in flight per client */
#define CLIENT_OUT_HIGH (8u << 20)    /* its unsent replies under this (then resume below LOW) */
#define CLIENT_OUT_LOW (1u << 20)
#define CLIENT_IN_MAX (96u << 20)     /* input it holds: buffered + payloads of its calls in flight */
#define SERVER_IN_MAX (256u << 20)    /* all clients' input; over it only small holders go on */
#define CLIENT_IN_FREE (2u << 20)     /* ... those holding under this, and one "leader" at a time */
/* Replies past this much queued in memory go to a spool file (unlinked,
 * under /var/tmp), up to CLIENT_SPOOL_MAX; a client that leaves more unread
 * is disconnected. Over SERVER_OUT_MAX in memory for all clients, a client
 * with a backlog spools its next replies at once. */
#define CLIENT_OUT_MAX (32u << 20)
#define SERVER_OUT_MAX (256u << 20)
#define CLIENT_SPOOL_MAX (1024ull << 20)
#define SPOOL_CHUNK (1u << 20)
#define WORKSPACE_MAX_QUEUE 4096      /* calls waiting for a worker per workspace */
#define LINK_HANDSHAKE_TIMEOUT_MS 15000
#define MAX_CONCURRENT_SPAWNS 4       /* jails starting at once; more wait their turn (a burst of first calls
                                       * must not start hundreds of bwraps at once and time them all out) */
#define RESTART_WINDOW_MS 60000       /* crash restarts counted over this window */
#define RESTART_MAX 5                 /* at most this many crash restarts per window */
#define WATCH_MAX_DIRS 4096           /* inotify directories per workspace */
#define INOTIFY_HUBS 4                /* inotify instances per daemon, shared by its workspaces */
#define WS_GC_INTERVAL_MS 5000        /* how often unused workspace entries are looked for */
#define WS_FREE_AFTER_MS 30000        /* an unused entry (no worker, call or queue) is freed after its
                                       * idle_timeout, at least this */

#define INSTANCE_ID_LEN 16             /* hex digits of sha256(socket path) naming an instance's groups and dirs */

typedef struct DaemonOptions {
        char *socket_path;
        char *log_path;   /* NULL: stderr */
        char *audit_path; /* NULL: no audit log */
        unsigned max_clients;
        unsigned max_workers;
        char *worker_path;
        char *runtime_dir; /* the user's runtime directory; instances live below it */
        char *state_dir;   /* the approved-policy store (approval.h), shared by instances */
        char *pidfile_path; /* NULL: none */
        bool foreground;
} DaemonOptions;

/* What the server hands its clients' messages to, set by main.c before
 * server_start: the server knows connections, framing and backpressure,
 * not tools (so server.c calls nothing above it). */
typedef struct ServerHandlers {
        /* One decoded request line (takes m). */
        void (*request)(Client *c, JsonlMsg *m);
        /* The error reply for a line that could not be decoded at all. */
        void (*bad_line)(Client *c, ApiError code, const char *message);
        /* A client goes: what it holds open (terminals) ends. */
        void (*client_closing)(Client *c);
        /* Its replies drained below the high mark: paused output may go on. */
        void (*client_resumed)(Client *c);
} ServerHandlers;

/* What the tools keep per workspace (background processes, forwarded
 * ports), set by main.c before the first workspace: workspace.c and
 * worker-link.c reach them only through these, so they call nothing
 * above them. */
typedef struct WorkspaceHooks {
        /* A worker is about to start for ws's policy: what must be in place
         * first (forwarded ports listening). -errno with *err to refuse it. */
        int (*starting)(Workspace *ws, VsError **err);
        /* ws goes away (freed, or the daemon exits): what they keep of it
         * goes too. */
        void (*forget)(Workspace *ws);
        /* The "ports" of ws's status, or NULL when it has none. */
        json_t *(*ports_status)(Workspace *ws);
} WorkspaceHooks;

typedef struct Counters {
        uint64_t requests, ok, errors, refused, denied;
        uint64_t spawns, spawn_failures, crashes, recycles, idle_ends;
} Counters;

struct Server {
        uv_loop_t *loop;
        DaemonOptions opt;
        const ServerHandlers *handlers;
        const WorkspaceHooks *ws_hooks;
        uv_pipe_t listener;
        bool listening;
        Client *clients;
        unsigned n_clients;
        Workspace *workspaces;
        unsigned n_workers; /* live links (spawning, ready or draining) */
        unsigned n_spawning; /* links between spawn and ready (at most MAX_CONCURRENT_SPAWNS) */
        Workspace *spawn_wait_head, *spawn_wait_tail; /* waiting for a spawn slot */
        Counters counters;
        size_t in_bytes;         /* input held by all clients (server.c) */
        size_t out_bytes;        /* replies queued in memory for all clients */
        uint64_t spool_bytes;    /* replies spooled for all clients */
        Client *in_leader;       /* over SERVER_IN_MAX: the one big holder still read */
        uint64_t in_leader_ms;   /* when the leader was elected or last sent something */
        struct InotifyHub *hubs[INOTIFY_HUBS]; /* the daemon's inotify instances (watch.c) */
        unsigned hub_next;
        uv_timer_t lead_timer;   /* ends a leader that sends nothing for LEADER_STALL_MS */
        bool lead_timer_on;
        uv_timer_t gc_timer;     /* workspace_gc */
        bool gc_running;
        uint64_t ws_freed;       /* entries freed since start */
        bool resuming;
        uint64_t started_ms;
        uint64_t next_pty_id;
        bool shutting_down;
        /* cgroup support, decided once at start (cgroup.c) */
        int cgroup_version;     /* 0 none, 1 or 2 */
        char *cgroup_why_not;   /* when 0: why */
        char *cgroup_parents[2]; /* this instance's groups: v2 [0]; v1 [0] pids, [1] memory */
        /* this daemon instance (instance.c) */
        char instance_id[INSTANCE_ID_LEN + 1];
        char *instance_dir;     /* RUNTIME/d-ID: what its jails are built from */
        int instance_lock_fd;
};

/* ---- server.c ---- */
struct Client {
        Server *srv;
        Client *next, *prev;
        uv_pipe_t pipe;
        JsonlReader *reader;
        uid_t uid;
        pid_t pid;
        unsigned refs;      /* 1 while connected + one per request in flight */
        unsigned inflight;
        size_t out_bytes;   /* queued to the socket, not yet written */
        bool out_paused;    /* unsent replies went over CLIENT_OUT_HIGH, not yet under LOW */
        size_t in_held;     /* request bytes (line + payload) of its calls in flight */
        size_t in_counted;  /* its share of srv->in_bytes */
        size_t msg_bytes;   /* bytes of the message being handed to tools_handle */
        bool parsing;       /* in client_process (no re-entry) */
        bool eof;           /* the client half-closed: take what is buffered, then close */
        int spool_fd;       /* replies waiting on disk, in order after out_bytes; -EBADF: none */
        uint64_t spool_r, spool_w;
        bool reading;
        bool closing;       /* no more requests; close when writes drain */
        bool closed;        /* handle closed or closing */
        PtySession *ptys;
};

int server_start(Server *srv, VsError **err);
/* Closes the listening socket and removes the socket file. */
void server_stop_listening(Server *srv);
/* Every client stops sending and is closed once its replies are out. */
void server_drain_clients(Server *srv);
/* Stops listening and closes every client now. */
void server_stop(Server *srv);
/* Queues one framed message (takes the buffer's content). Dropped when the
 * client is gone. */
void client_send(Client *c, StrBuf *msg);
/* Sends a JSON object as one line (steals the reference), raw optional. */
void client_send_json(Client *c, json_t *obj, const void *raw, size_t raw_len);
/* Same, with bulk text fields escaped straight into the line (jsonl.h). */
void client_send_json_texts(Client *c, json_t *obj, const JsonlText *texts, size_t n_texts, const void *raw,
                            size_t raw_len);
void client_ref(Client *c);
void client_unref(Client *c);
/* Re-evaluates backpressure (after inflight or out_bytes changed) and
 * takes buffered requests that may now go. */
void client_update_reading(Client *c);
/* A request of c ended: its bytes no longer count against the budgets. */
void client_release_input(Client *c, size_t bytes);
/* A client that stopped sending is closed once answered and flushed. */
void client_maybe_close(Client *c);

/* ---- workspace.c ---- */
typedef enum WorkspaceState {
        WS_UNSANDBOXED,
        WS_SANDBOXED,
        WS_REFUSED,
} WorkspaceState;

const char *workspace_state_name(WorkspaceState s);

/* What watch.c reports, to the functions workspace.c gives it: watch.c
 * calls nothing above it. */
typedef struct WatchHooks {
        /* A path matching the masks appeared: the jail is rebuilt. */
        void (*masked_appeared)(Workspace *ws, const char *why);
        /* A file the host runs later was written (workspace_note_host_run). */
        void (*host_run)(Workspace *ws, const char *path);
} WatchHooks;

#define HOST_RUN_NOTES 32
typedef struct HostRunNote {
        char *path;
        uint64_t us; /* when the watcher saw it (now_us) */
} HostRunNote;

struct Workspace {
        Server *srv;
        Workspace *next;
        Workspace *next_spawn_wait; /* in srv->spawn_wait_* */
        bool spawn_waiting;
        char *path; /* canonical */
        WorkspaceState state;
        VsPolicy *policy;       /* NULL when refused */
        VsError *config_error;  /* when refused */
        char *pending;          /* a loosening of vectora.toml waiting for `allow` (the approved policy serves) */
        uint64_t generation;    /* bumped on each policy change */
        /* what vectora.toml looked like when read, for the cheap check */
        bool cfg_exists;
        struct stat cfg_st;

        LinkStart *starting;  /* a worker being prepared on the thread pool (no link yet) */
        WorkerLink *link;     /* current worker: spawning or ready */
        WorkerLink *draining; /* older links finishing in-flight calls */
        unsigned n_old_jails; /* ended links whose processes are not reaped yet: no new jail starts meanwhile */
        Call *queue, *queue_tail; /* waiting for the current link to be ready */
        size_t n_queued;
        uv_timer_t idle_timer;
        bool idle_timer_init;

        /* crash restarts: times of the last RESTART_MAX */
        uint64_t restarts[RESTART_MAX];
        unsigned n_restarts;
        char *last_error;
        uint64_t last_error_ms;
        Counters counters;

        /* watching for masked paths appearing (watch.c) */
        struct WorkspaceWatch *watch;
        struct InotifyHub *hub;  /* its inotify instance, shared with other workspaces (watch.c) */
        const WatchHooks *watch_hooks;
        /* what the protected paths were when the worker spawned (protect.c) */
        struct WorkspaceProtect *protect;
        /* files the host runs later that the jail wrote, most recent last (watch.c) */
        HostRunNote host_run[HOST_RUN_NOTES];
        size_t n_host_run;

        /* freeing unused entries (workspace.c, workspace_gc) */
        unsigned refs;          /* requests pointing here (Request.ws) */
        uint64_t last_used_ms;  /* last call or last worker activity */

        /* resource limits (cgroup.c) */
        char *cgroup_paths[2]; /* v2: [0]; v1: [0] pids, [1] memory */
        char **limit_notes;    /* how pids/memory are enforced, or degraded */
        bool limits_degraded;

        /* network allowlist (proxy.c): created with the first worker of a
         * policy that has one, ended with the workspace */
        Proxy *proxy;
};

/* Finds or creates the workspace governing an absolute path (the nearest
 * ancestor holding a vectora.toml, approval_locate()) and brings its
 * policy up to date with vectora.toml (cheap stat check). *ret_dir (may be
 * NULL): the canonical path asked for when it is a subdirectory of the
 * workspace, else NULL. *ret_pending (may be NULL): set when a nested
 * vectora.toml waits for approval. */
int workspace_get(Server *srv, const char *path, Workspace **ret, char **ret_dir, char **ret_pending, VsError **err);
/* Re-reads vectora.toml and the approved policy now (after an approval). */
void workspace_reload(Workspace *ws);
/* Queues a call: sent when the workspace's worker is ready (spawned on
 * demand). On failure the call's done callback runs (maybe later). */
void workspace_submit(Workspace *ws, Call *c);
/* Recycles the current worker now: in-flight calls fail with code. */
void workspace_recycle(Workspace *ws, ApiError code, const char *why);
void workspace_set_error(Workspace *ws, const char *fmt, ...) _printf_(2, 3);
/* A file the host runs later (.git below the root, .envrc, .vscode/tasks.json,
 * ...) was created or written under the workspace's listed paths. */
void workspace_note_host_run(Workspace *ws, const char *path);
/* Those noted at or after since_us, each once. */
json_t *workspace_host_run_since(Workspace *ws, uint64_t since_us);
json_t *workspace_status(Workspace *ws);
/* The "sandbox" object of results: backend, layers, degraded, generation. */
json_t *workspace_sandbox_json(Workspace *ws, WorkerLink *l);
void workspaces_free_all(Server *srv);
/* Frees, every WS_GC_INTERVAL_MS, the entries with no worker, call or
 * queue: at once when their directory is gone, else once unused for their
 * idle_timeout (at least WS_FREE_AFTER_MS); their cgroups and watches go
 * with them. */
void workspace_gc_start(Server *srv);
void workspace_gc_stop(Server *srv);

/* ---- worker-link.c ---- */
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
} LinkOps;

struct WorkerLink {
        Server *srv;
        Workspace *ws;
        const LinkOps *ops;
        bool holds_spawn_slot;     /* counted in srv->n_spawning until ready or ended */
        WorkerLink *next;          /* all links (worker-link.c) */
        WorkerLink *next_draining; /* in ws->draining */
        Workspace *old_ws;         /* ended, not yet reaped: counted in old_ws->n_old_jails */
        LinkState state;
        bool draining;
        uint64_t generation;
        VsLaunch *launch;
        pid_t pid;        /* backend process; 0 once reaped */
        VsHandshake hs;   /* hello, init, ready (handshake.h) */
        uv_pipe_t pipe;
        uv_pipe_t errpipe;
        unsigned open_handles;
        uv_timer_t timer;
        JsonlReader *reader;
        uint64_t next_id;
        Call *inflight;
        size_t n_inflight;
        char **layers;
        char **degraded;
        StrBuf errtail;   /* last bytes of the worker's stderr */
        StrBuf errline;   /* partial stderr line */
        uint64_t spawned_ms, ready_ms, last_used_ms;
        ApiError end_code; /* why in-flight calls fail when it ends */
        bool end_eof;      /* it ended on the worker closing its socket */
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
 * within this call); the link then reports through the other ops. The start reads ws->policy meanwhile: a
 * workspace replacing it hands it over with link_start_keep_policy. */
int link_start(Workspace *ws, const LinkOps *ops, LinkStart **ret, VsError **err);
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
/* Ends the link: kills the process; in-flight calls fail with code. */
void link_end(WorkerLink *l, ApiError code, const char *reason);
/* Asks a drained link to go: shutdown request then close. */
void link_retire(WorkerLink *l);
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

/* ---- tools.c ---- */
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
        VsToolCall tc;   /* its worker requests and their replies (tool-call.h) */
        size_t in_bytes; /* its line and payload, counted in the client's in_held */
};

/* request.c: sends the result of r (ok when code is API_OK), audits it and frees r.
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

void tools_handle(Client *c, JsonlMsg *m);
/* Error reply for a line that could not be decoded at all. */
void tools_reply_bad_line(Client *c, ApiError code, const char *message);

/* ---- reply-fit.c ---- */
/* Bytes a reply line has for its output strings, given the client's id. */
size_t reply_budget(json_t *id);
/* Whether p[0..n) goes out as text (valid UTF-8 fitting budget escaped)
 * rather than base64. */
bool reply_bytes_as_text(const char *p, size_t n, size_t budget);
/* What p[0..n) takes in the line, as text or base64 (as above). */
size_t reply_bytes_cost(const char *p, size_t n, size_t budget);
/* Cuts captured output (p[0..n) kept of total produced, maybe already cut
 * by the worker) to a head and a tail with the marker so that it costs at
 * most budget; *ret_owned is the new buffer (NULL when nothing was cut),
 * the caller frees it. */
int reply_fit_output(const char *p, size_t n, uint64_t total, size_t budget, const char **ret_p, size_t *ret_n,
                     char **ret_owned);
/* Shares budget between two strings costing a and b: each keeps what it
 * needs when the other leaves room, else half. */
void reply_split_budget(size_t budget, size_t cost_a, size_t cost_b, size_t *ret_a, size_t *ret_b);

/* ---- pty.c ---- */
void pty_open(Request *r, json_t *obj);
void pty_message(Client *c, json_t *id, const char *tool, json_t *obj, JsonlMsg *m);
void pty_close_all(Client *c);
/* Restarts output of the client's PTYs paused by backpressure. */
void pty_resume(Client *c);
/* Reaps the host terminals' shells that ended (see links_reap). */
void ptys_reap(Server *srv);

/* ---- audit.c ---- */
int audit_open(const char *path, VsError **err);
void audit_reopen(void);
typedef struct AuditRecord {
        uid_t uid;
        pid_t pid;
        const char *workspace;
        const char *tool;
        json_t *target; /* borrowed */
        bool sandboxed;
        uint64_t generation;
        const char *outcome; /* ok | error | denied | refused */
        const char *code;
        const char *reason;
        uint64_t duration_ms;
        json_t *host_run; /* borrowed: files the host runs later written while the call ran (may be NULL) */
} AuditRecord;
void audit_write(const AuditRecord *a);
void audit_close(void);

/* ---- proxy.c ---- */
#define PROXY_RECENT_DENIALS 32
typedef struct ProxyDenial {
        uint64_t time_us;
        char host[256];
        uint16_t port;
        char reason[400];
} ProxyDenial;
/* Starts ws's proxy if it has none (its socket under the runtime
 * directory) and lets peer_uid (the jail's) connect. *ret_path borrowed. */
int proxy_ensure(Workspace *ws, uid_t peer_uid, const char **ret_path, VsError **err);
/* Ends the listener and every connection; frees once they are closed. */
void proxy_stop(Proxy *px);
/* The denials recorded at or after since_us, as [{host, port, reason}],
 * or NULL when none (or no proxy). */
json_t *proxy_denials_since(Proxy *px, uint64_t since_us);
/* {open, connections, denied}, or NULL without a proxy. */
json_t *proxy_status(Proxy *px);
/* Sets the uid allowed to connect (the jail's, known once the launch is). */
void proxy_set_peer(Proxy *px, uid_t uid);

/* ---- watch.c ---- */
int watch_start(Workspace *ws);
/* The workspace's inotify instance (one of INOTIFY_HUBS), or NULL when none can be made. */
struct InotifyHub *workspace_hub(Workspace *ws);
void watch_hubs_free(Server *srv);
void watch_stop(Workspace *ws);
bool watch_active(Workspace *ws);
/* What masks over time cannot keep for a sandboxed workspace, or NULL:
 * more directories than WATCH_MAX_DIRS (masks are not kept below the ones
 * left out), or no watch at all (no inotify instance left). Reported in
 * "degraded"; refused under lockdown. */
const char *watch_gap(Workspace *ws);
#define WATCH_PARTIAL_NOTE                                                                                           \
        "masks over time: more than 4096 directories under the listed paths; a masked path created below the "     \
        "ones not watched stays readable to commands until the worker restarts (the file tools still refuse it)"
#define WATCH_MISSING_NOTE                                                                                           \
        "masks over time: the listed paths are not watched (no inotify instance left: fs.inotify.max_user_instances);" \
        " a masked path created later stays readable to commands until the worker restarts (the file tools still"   \
        " refuse it), and files the host runs later are not reported"


/* ---- protect.c ---- */
typedef struct WorkspaceProtect WorkspaceProtect;
/* A protected path changed on the host since the worker spawned: the
 * workspace recycles it. */
typedef void (*ProtectChangedFn)(Workspace *ws, const char *why);
/* Notes what the protected paths are now (the worker being spawned binds
 * these) and watches their directories; changed runs on a change. */
void protect_arm(Workspace *ws, ProtectChangedFn changed);
void protect_disarm(Workspace *ws);
/* Recycles the worker when a protected path changed on the host since it
 * spawned; true when it did. */
bool protect_check(Workspace *ws);

/* ---- instance.c ---- */
/* The id of the daemon serving socket_path. */
int instance_id(const char *socket_path, char ret[INSTANCE_ID_LEN + 1]);
/* Takes this instance's lock (refusing when another daemon holds it) and
 * sets instance_id, instance_dir and instance_lock_fd. */
int instance_acquire(Server *srv, VsError **err);
/* Whether the instance id under runtime_root has a live daemon. */
bool instance_alive(const char *runtime_root, const char *id);
/* Removes the instance directory and lets the lock go (clean exit). */
/* After detaching: the lock names the daemon's own pid. */
void instance_update_owner(Server *srv);
void instance_release(Server *srv);

/* ---- cgroup.c ---- */
/* Finds a writable hierarchy, creates this instance's groups, removes what
 * an earlier run of this instance (or a dead other instance) left. */
void cgroup_probe(Server *srv);
/* Kills every process in the workspace's groups (the whole jail, also what
 * escaped the worker's sight), waiting until they are empty. */
void cgroup_kill(Workspace *ws);
/* The same in one pass, without waiting: for when a workspace's last jail
 * ended (a process that escaped the worker's tree must not outlive it). */
void cgroup_kill_leftovers(Workspace *ws);
/* Removes this instance's groups (clean exit, after every cgroup_kill). */
void cgroup_finish(Server *srv);
/* Prepares ws's limits (creating cgroups). Notes what is degraded. */
void cgroup_prepare(Workspace *ws);
/* Moves the backend process tree of pid into ws's cgroups (or applies
 * rlimits); called before init, when nothing untrusted runs yet. */
/* Opens the workspace's cgroup.procs files (O_WRONLY|O_CLOEXEC) for the
 * spawned child to join; -EBADF where there is none. */
void cgroup_open_procs(Workspace *ws, int *ret_fd0, int *ret_fd1);
void cgroup_release(Workspace *ws);
/* The workspace's pids cgroup is (nearly) full. */
bool cgroup_pids_saturated(Workspace *ws);

/* ---- main.c ---- */
void log_reopen(void);

/* ---- startup.c ---- */
/* Timestamps on each line, or syslog priorities when stderr is journald's. */
void startup_log_style(const DaemonOptions *o);
/* Detached without --log-file: o->log_path in the runtime directory. */
int startup_default_log(DaemonOptions *o, VsError **err);
/* The socket's directory must exist and be writable: say so plainly. */
int startup_check_socket_dir(const char *socket_path, VsError **err);
/* Forks; the parent waits for startup_ready()/startup_failed() and exits
 * with the outcome. The child gets its own session, /dev/null as stdin and
 * stdout, log_fd as stderr, and *ret_notify to report through. */
int startup_detach(int log_fd, int *ret_notify);
/* Listening: the pidfile, systemd's READY=1, the launching shell released. */
int startup_ready(const DaemonOptions *o, int *notify, VsError **err);
void startup_failed(int *notify, const char *why);
/* Exiting: systemd's STOPPING=1, the pidfile removed. */
void startup_stopping(const DaemonOptions *o);
