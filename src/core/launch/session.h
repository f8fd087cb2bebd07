/* SPDX-License-Identifier: MIT */
#pragma once

/* A synchronous link to one worker: spawn, handshake, then blocking
 * requests, from one thread or (shared) from several at once. The CLI's
 * embedded mode, the MCP server without a daemon and the benchmarks use
 * it; the daemon drives the same protocol asynchronously. */

#include <pthread.h>

#include "jsonl.h"
#include "protect-snapshot.h"
#include "protocol.h"
#include "worker-spawn.h"

#define SESSION_HANDSHAKE_TIMEOUT_MS 15000

typedef struct VsSession {
        VsWorkerProc proc;
        JsonlReader *reader;
        uint64_t next_id;
        bool sandboxed;
        bool local;           /* the worker runs under bwrap on this host (or directly) */
        const VsBackendDef *backend; /* NULL direct */
        bool own_pid_ns;      /* proc.pid is pid 1 of the jail's own pid namespace */
        bool have_ready;
        char **layers;        /* what the jail enforces (handshake.h) */
        char **degraded;      /* launch + worker degradations */
        uint64_t spawn_to_ready_us;
        /* What the protected paths were before the jail started, and an
         * inotify descriptor on their directories (-EBADF: none). */
        VsProtectSnapshot *protect;
        int protect_fd;
        /* The repositories of the writable roots before the jail started
         * (git-scan.h), and those roots; NULL: not looked at. */
        struct VsGitRepos *git_base;
        char **git_roots;
        /* Not the jail's to make a repository in: the read-only listed
         * paths (path_listed_writable) and what the jail sees sealed
         * (launch.h sealed_dirs). */
        char **git_ro, **git_sealed;
        /* Masked links the start put aside (launch.h put_aside): the next
         * call's host_run_files lists them (tool_call_sweep). Under
         * sweep_lock. */
        struct VsPutAsides *put_aside;
        /* tool_call_run() sweeps after each call (a warm session); a
         * one-call user (the CLI) ends the worker and sweeps itself. */
        bool no_sweep_per_call;
        /* Several threads call at once (the MCP server without a daemon):
         * the worker serves requests in parallel (docs/protocol.md), one
         * reader at a time hands each reply to its caller by id, and ending
         * the worker (session_stop(), a protected path's change, a git
         * sweep) kills it but leaves the descriptors to session_end(), when
         * no call uses them any more. Set once, before the first call. */
        bool shared;
        /* The requests in flight (session_call) and who reads for them. */
        struct VsSessionWait *waits;
        bool reading;
        pthread_mutex_t lock;  /* waits, reading */
        pthread_cond_t cond;   /* a reply was handed on, or the reader left */
        pthread_mutex_t wlock; /* one writer at a time on proc.fd */
        pthread_mutex_t sweep_lock; /* one session_git_sweep() at a time */
        const char *ended_why; /* a sweep ended the worker: what the other calls on it are told (static) */
        bool locks_init;
} VsSession;

/* Spawns the worker for l and completes hello/init/ready. On failure
 * (kind "sandbox_unavailable") nothing runs: the message includes the
 * backend's own diagnostics. */
int session_start(VsLaunch *l, VsSession **ret, VsError **err);
/* Takes snap (noted before session_start): from now on a call fails with
 * kind "worker_recycled" when a protected path changes on the host (its
 * jail lost the read-only mount), and the worker is ended. */
void session_watch_protected(VsSession *s, VsProtectSnapshot *snap);

/* Takes base (the repositories of roots before the jail started,
 * git_scan_policy()) and copies roots, ro (the read-only listed paths) and
 * sealed (the jail's sealed directories): session_git_sweep() puts aside
 * what the jail adds where it writes. */
int session_watch_git(VsSession *s, struct VsGitRepos *base, char *const *roots, char *const *ro, char *const *sealed);
/* A repository the jail made since (one the host's git would take, with
 * the jail's config and hooks): the worker is ended first (the jail could
 * undo anything while it runs), then each is put aside (git_quarantine())
 * and its path and the new one appended to *paths (may be NULL). How many
 * were put aside. Also run by session_end(). */
int session_git_sweep(VsSession *s, char ***paths);
/* The processes the jail holds now: proc.pid (pid 1 of the jail's own pid
 * namespace) and every descendant, which is every process in that
 * namespace (an orphan, a setsid'd daemon, is reparented to pid 1 there),
 * as host pids, sorted, in *ret (malloc'd). Returns how many; -EOPNOTSUPP
 * when the jail is not a pid namespace of this host (another backend, or
 * no jail); -ESRCH when it has ended. A caller compares two lists: any
 * other than after the start means something outlived its call (or
 * replaced one of the jail's own). */
int session_jail_pids(const VsSession *s, pid_t **ret);
/* The worker still runs (not ended by a call of a shared session). */
bool session_worker_alive(const VsSession *s);
/* Ends the worker now (its jail with it); the session only answers
 * errors after. */
void session_stop(VsSession *s);

/* Sends one framed request (built with the protocol encoders, its id
 * from session_next_id()) and waits for its reply. timeout_ms 0 = no
 * limit. cancel_fd (< 0: none): an eventfd another thread writes to
 * cancel this request; the worker's cancel for it is sent then, and the
 * request's own reply says "cancelled". Safe from several threads on a
 * shared session. */
int session_call(VsSession *s, uint64_t id, const StrBuf *request, uint64_t timeout_ms, int cancel_fd, JsonlMsg *ret,
                 VsError **err);
uint64_t session_next_id(VsSession *s);

/* Asks the worker to shut down, waits briefly, then kills. NULL ok. */
void session_end(VsSession *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsSession *, session_end);

/* The layers in force, e.g. ["namespaces", "seccomp", "landlock"]. */
int session_layers(const VsSession *s, char ***ret);
