/* SPDX-License-Identifier: MIT */
#pragma once

/* A workspace (workspace.c): its policy from vectora.toml, its worker
 * links and the calls queued for them, crash restarts, the entries freed
 * when unused. Its links report to it through LinkOps (worker-link.h). */

#include <sys/stat.h>

#include "config.h"
#include "daemon.h"

typedef struct RecordSync RecordSync;

#define WORKSPACE_MAX_QUEUE 4096      /* calls waiting for a worker per workspace */
#define MAX_CONCURRENT_SPAWNS 5       /* jails starting at once; more wait their turn (a burst of first calls
                                       * must not start hundreds of bwraps at once and time them all out) */
#define MAX_OWNER_SPAWNS 4            /* of those, one owner's at most in a root daemon: an owner who stops its
                                       * own starts holds their slots until the handshake's deadline, and must
                                       * leave a slot for the other owners' first starts */
#define RESTART_WINDOW_MS 60000       /* crash restarts counted over this window */
#define RESTART_MAX 5                 /* at most this many crash restarts per window */
#define EAGER_START_GAP_MS 1000       /* a start no call waits for that could not be made: tried again after (workspace.c) */
#define WS_GC_INTERVAL_MS 5000        /* how often unused workspace entries are looked for */
#define WS_FREE_AFTER_MS 30000        /* an unused entry (no worker, call or queue) is freed after its
                                       * idle_timeout, at least this */

typedef enum WorkspaceState {
        WS_UNSANDBOXED,
        WS_SANDBOXED,
        WS_REFUSED,
} WorkspaceState;

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

#define HOST_RUN_NOTES 32
typedef struct HostRunNote {
        char *path;
        uint64_t us; /* when the watcher saw it (now_us) */
        bool reported; /* in some call's result (and so its audit record) */
        bool keep;     /* a link a start put aside: the entry stays until a result lists it */
} HostRunNote;

/* A failed jail start is made again this many times before its calls fail. */
#define START_RETRIES 2

struct Workspace {
        Server *srv;
        Workspace *next;
        Workspace *next_spawn_wait; /* in srv->spawn_wait_* */
        bool spawn_waiting;
        bool start_eager; /* a start wanted with no call waiting (a masked link appeared: workspace.c) */
        bool eager_retry;       /* such a start could not be made: it is tried again ... */
        uint64_t eager_next_ms; /* ... then (workspace.c eager_later) */
        uid_t slot_owner;           /* the directory's owner when its start took or awaited a slot */
        char *path; /* canonical */
        WorkspaceState state;
        VsPolicy *policy;       /* NULL when refused */
        VsError *config_error;  /* when refused */
        char *pending;          /* a loosening of vectora.toml waiting for `allow` (the approved policy serves) */
        uint64_t generation;    /* bumped on each policy change */
        /* what vectora.toml looked like when read, for the cheap check */
        bool cfg_exists;
        struct stat cfg_st;
        /* A vectora.toml seen for the first time and changed less than
         * APPROVAL_STABLE_MS before it was read: its policy not taken yet,
         * nor anything served with it; read again at settle_until_ms (once,
         * however many calls wait), settle_ms after it was last read. The
         * calls wait on the timer below (tools.c), never the loop. */
        uint64_t settle_ms, settle_until_ms;
        /* The calls waiting for it (newest first), those its timer is
         * going through (oldest first), and one timer for them all
         * (tools.c; allocated, closed apart from the entry). */
        Request *settle_waiters, *settle_firing;
        struct SettleTimer *settle_timer;

        /* The approval record written and not yet known durable: no call
         * is sent to the worker meanwhile (workspace.c, record_sync_*). */
        bool record_unsynced;
        bool record_again;        /* written again while its sync ran */
        RecordSync *record_sync;  /* the fsyncs on the thread pool */

        LinkStart *starting;  /* a worker being prepared on the thread pool (no link yet) */
        WorkerLink *link;     /* current worker: spawning or ready */
        WorkerLink *draining; /* older links finishing in-flight calls */
        unsigned n_old_jails; /* ended links whose processes are not reaped yet: no new jail starts meanwhile */
        Call *queue, *queue_tail; /* waiting for the current link to be ready (and the record below durable) */
        size_t n_queued;
        uv_timer_t idle_timer;
        bool idle_timer_init;

        /* crash restarts: times of the last RESTART_MAX */
        uint64_t restarts[RESTART_MAX];
        unsigned n_restarts;
        char *last_error;
        /* The worker's last failure (what note_restart counts), quoted by
         * the refusal past the restart limit. Not last_error: any failed
         * call becomes that, the refusal itself and a call whose error
         * quotes the caller's own words (an unknown field's name). */
        char *restart_cause;
        unsigned start_retries; /* failed starts made again in a row (START_RETRIES at most) */
        uint64_t last_error_ms;
        Counters counters;

        /* watching for masked paths appearing (watch.c) */
        struct WorkspaceWatch *watch;
        struct InotifyHub *hub;  /* its inotify instance, shared with other workspaces (watch.c) */
        const struct WatchHooks *watch_hooks;
        /* what the protected paths were when the worker spawned (protect.c) */
        struct WorkspaceProtect *protect;
        /* files the host runs later that the jail wrote, most recent last (watch.c) */
        HostRunNote host_run[HOST_RUN_NOTES];
        size_t n_host_run;
        /* the repositories of the writable roots when the worker started (git-watch.c) */
        struct VsGitRepos *git_base;
        char **git_sealed; /* what the base's jail saw sealed (masked, protected): not its repositories */
        /* when its first jail's start began (CLOCK_REALTIME_COARSE): a
         * masked link changed since, which a start would refuse, is put
         * aside (launch.h links_since) */
        struct timespec links_since;
        struct GitSweep *git_sweep; /* putting aside what the last jail made: no new jail starts meanwhile */

        /* freeing unused entries (workspace.c, workspace_gc) */
        unsigned refs;          /* requests pointing here (Request.ws) */
        uint64_t last_used_ms;  /* last call or last worker activity */

        /* resource limits (cgroup.c) */
        uint64_t monitor_ws;   /* the root monitor's handle for the workspace (opened for its groups); 0: none */
        dev_t monitor_dev;     /* the directory it was opened for */
        ino_t monitor_ino;
        int cgroup_fds[2];     /* its groups' directories, from the monitor: v2 [0]; v1 [0] pids, [1] memory; -EBADF */
        int pids_fd;           /* [0]'s pids.current, kept open for the per-call look; -EBADF */
        int pids_events_fd;    /* [0]'s pids.events (forks refused at the limit), the same; -EBADF */
        uint64_t pids_refused; /* its "max" count at the last look */
        char **limit_notes;    /* how pids/memory are enforced, or degraded */
        PidsWait *pids_wait;   /* a terminal call's reply waiting for the looks at the jail's processes (tools.c) */
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
/* Cancels c: a queued call is dropped (its done hears cancelled), one in
 * flight gets the worker's cancel. False when c is neither. */
bool workspace_cancel(Workspace *ws, Call *c);
/* Recycles the current worker now: in-flight calls fail with code. */
void workspace_recycle(Workspace *ws, ApiError code, const char *why);
void workspace_set_error(Workspace *ws, const char *fmt, ...) _printf_(2, 3);
/* Those noted at or after since_us, and those no result has listed yet
 * (written by a background process or a terminal while no call was in
 * flight), each once. */
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
/* The counters as status shows them. */
json_t *daemon_counters_json(const Counters *c);
