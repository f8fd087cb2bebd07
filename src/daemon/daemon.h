/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora-sandboxd internals: one loop, a socket server with clients, a
 * table of workspaces each owning at most one live worker link. Each
 * object has its header (server.h, workspace.h, worker-link.h, request.h,
 * jail-session.h, ...); this one names them and holds what they share.
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
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>
/* uv.h pulls in <sys/param.h>; macro.h has its own MIN/MAX. */
#undef MIN
#undef MAX

#include "api.h"
#include "error.h"
#include "macro.h"
#include "time-util.h"

typedef struct Server Server;
typedef struct Client Client;
typedef struct Workspace Workspace;
typedef struct WorkerLink WorkerLink;
typedef struct Call Call;
typedef struct Request Request;
typedef struct Proxy Proxy;
typedef struct LinkStart LinkStart;
typedef struct PidsWait PidsWait;

#define INSTANCE_ID_LEN 16             /* hex digits of sha256(socket path) naming an instance's groups and dirs */

typedef struct DaemonOptions {
        char *socket_path;
        char *log_path;   /* NULL: stderr */
        char *audit_path; /* NULL: no audit log */
        unsigned max_clients;
        unsigned max_workers;
        char *worker_path;
        char *runtime_dir; /* the user's runtime directory (or --runtime-dir); instances live below it */
        char *lock_root;   /* where every instance of this uid keeps its lock: the default runtime
                            * directory whatever --runtime-dir says, so daemons with different
                            * runtime directories still see each other alive (cgroup sweep) */
        char *state_dir;   /* the approved-policy store (approval.h), shared by instances */
        char *pidfile_path; /* NULL: none */
        bool foreground;
        bool audit_required; /* sandboxed calls refused while audit records cannot be written */
} DaemonOptions;

typedef struct Counters {
        uint64_t requests, ok, errors, refused, denied;
        uint64_t spawns, spawn_failures, crashes, recycles, idle_ends;
} Counters;
