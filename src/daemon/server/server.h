/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon's state (Server) and the socket server (server.c): clients,
 * framing, backpressure. It calls nothing above it: what clients send goes
 * to the ServerHandlers main.c sets. */

#include <stddef.h>

#include "daemon.h"
#include "jsonl.h"
#include "metrics.h"
#include "strbuf.h"
#include "walk-cache.h"

/* ---- limits ---- */
/* Backpressure (docs/protocol.md, "Limits"). A client's requests are taken
 * (parsed, not only read) while all of these hold: */
#define CLIENT_MAX_INFLIGHT 256       /* requests in flight per client */
#define CLIENT_OUT_HIGH (8u << 20)    /* its unsent replies under this (then resume below LOW) */
#define CLIENT_OUT_LOW (1u << 20)
#define CLIENT_IN_MAX (96u << 20)     /* input it holds: buffered + payloads of its calls in flight */
#define SERVER_IN_MAX (256u << 20)    /* all clients' input; over it only small holders go on */
#define CLIENT_IN_FREE (2u << 20)     /* ... those holding under this, and one "leader" at a time */
#define CLIENT_READ_MAX (64u << 10)   /* one read of a client but the leader (the bounds count one each) */
#define LEADER_READ_MAX (1u << 20)    /* one read of the leader */
/* Requests taken per loop turn: of one client before the others' (then it
 * waits in the server's queue of those holding more), and of all (server.c
 * "taking in turn"). */
#define CLIENT_TURN_TAKE 4
#define SERVER_TURN_TAKE 32
#define SERVER_DRAIN_TAKE 4096 /* requests read, not yet taken, answered shutting_down at a stop */
/* Replies past this much queued in memory go to a spool file (unlinked,
 * under /var/tmp), up to CLIENT_SPOOL_MAX; a client that leaves more unread
 * is disconnected. Over SERVER_OUT_MAX in memory for all clients, a client
 * with a backlog spools its next replies at once. */
#define CLIENT_OUT_MAX (32u << 20)
#define SERVER_OUT_MAX (256u << 20)
#define CLIENT_SPOOL_MAX (1024ull << 20)
#define SPOOL_CHUNK (1u << 20)
#define INOTIFY_HUBS 4                /* inotify instances per daemon, shared by its workspaces */

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

struct Server {
        uv_loop_t *loop;
        DaemonOptions opt;
        const ServerHandlers *handlers;
        const struct WorkspaceHooks *ws_hooks; /* workspace.h */
        uv_pipe_t listener;
        bool listening;
        Client *clients;
        unsigned n_clients;
        Workspace *workspaces;
        unsigned n_workers; /* live links (spawning, ready or draining) */
        unsigned n_spawning; /* links between spawn and ready (at most MAX_CONCURRENT_SPAWNS) */
        uid_t spawn_owners[5]; /* whose each of those n_spawning starts is (MAX_CONCURRENT_SPAWNS) */
        Workspace *spawn_wait_head, *spawn_wait_tail; /* waiting for a spawn slot */
        Counters counters;
        Metrics metrics;         /* calls by tool and result, latencies (metrics.c) */
        size_t in_bytes;         /* input held by all clients (server.c) */
        size_t out_bytes;        /* replies queued in memory for all clients */
        uint64_t spool_bytes;    /* replies spooled for all clients */
        Client *in_leader;       /* over SERVER_IN_MAX: the one big holder still read */
        uint64_t in_leader_ms;   /* when the leader was elected or last sent something */
        struct InotifyHub *hubs[INOTIFY_HUBS]; /* the daemon's inotify instances (watch.c) */
        unsigned hub_next;
        struct FanHub *fan;      /* the daemon's fanotify group, root only (watch.c) */
        int fan_error;           /* 0: not tried yet; -errno: why there is none */
        uv_prepare_t turn_prep;  /* counts the loop's turns (server_read_turn) */
        uint64_t turn;
        unsigned took;           /* requests taken in this turn (SERVER_TURN_TAKE) */
        unsigned drained;        /* requests taken since the stop began (SERVER_DRAIN_TAKE) */
        uv_idle_t take_idle;     /* takes the queued clients' requests while any wait */
        Client *take_head, *take_tail; /* clients holding requests past their share, oldest first */
        uv_timer_t lead_timer;   /* ends a leader that sends nothing for LEADER_STALL_MS */
        bool lead_timer_on;
        uv_timer_t hup_timer;    /* looks whether half-closed clients with calls in flight or queued went away */
        bool hup_timer_on;
        uv_timer_t gc_timer;     /* workspace_gc */
        bool gc_running;
        uint64_t ws_freed;       /* entries freed since start */
        bool resuming;
        uint64_t started_ms;
        /* Random at each start (status "boot_id"): what a client compares to
         * know the daemon it talked to is still the one running. */
        char boot_id[33];
        uint64_t next_pty_id;
        bool shutting_down;
        /* cgroup support, decided once at start (cgroup.c) */
        int cgroup_version;     /* 0 none, 1 or 2 */
        char *cgroup_why_not;   /* when 0: why */
        char *cgroup_parents[2]; /* this instance's groups: v2 [0]; v1 [0] pids, [1] memory */
        char *host_cgroup;       /* [0]/host: unsandboxed workers, ended with the daemon */
        /* this daemon instance (instance.c) */
        char instance_id[INSTANCE_ID_LEN + 1];
        char *instance_dir;     /* RUNTIME/d-ID: what its jails are built from */
        char *instance_lock_dir; /* LOCK_ROOT/d-ID: holds the lock (instance_dir without --runtime-dir) */
        int instance_lock_fd;
        /* The root monitor (monitor-link.h); NULL for a daemon not run as
         * root, monitor_why_not saying so. */
        struct MonitorLink *monitor;
        const char *monitor_why_not;
        WalkCacheUse walk_cache; /* the start walks' cache (walk-cache.h) */
};

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
        StrBuf after_spool; /* small replies (a failed spool's error) that follow the spool once drained */
        bool reading;
        uint64_t read_turn; /* the loop turn of its last read (server_read_turn) */
        bool yielded;       /* its read was put off to the next turn: not out of memory */
        uint64_t take_turn; /* the turn its requests were last taken in, and how many then */
        unsigned took;
        bool take_queued;   /* in the server's take queue: its buffered requests wait their turn */
        Client *take_next, *take_prev;
        bool closing;       /* no more requests; close when writes drain */
        bool closed;        /* handle closed or closing */
        struct PtySession *ptys; /* pty.c */
        struct Request *calls;   /* its worker tool calls in flight, cancelled when it goes (tools.c) */
};

int server_start(Server *srv, VsError **err);
/* Closes the listening socket and removes the socket file. */
void server_stop_listening(Server *srv);
/* Every client stops sending and is closed once its replies are out. */
void server_drain_clients(Server *srv);
/* Stops listening and closes every client now. */
void server_stop(Server *srv);
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
/* Whether a stream whose last read was in turn *last may read again in this
 * turn of the loop (then *last becomes it): one read per stream and turn.
 * libuv reads a readable stream up to 32 times in a row while each read
 * fills its buffer, so 20 clients pushing uploads took 40 MiB of copies
 * (and page faults) per turn before a small client's request was read,
 * and each hop of its call waited for such a turn (a second on a quiet
 * host, 8 s on a loaded one). A stream put off stays readable and is read
 * in the next turn. */
bool server_read_turn(Server *srv, uint64_t *last);
