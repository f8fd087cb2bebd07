/* SPDX-License-Identifier: MIT */
#pragma once

/* Masks over time (watch.c): inotify on a workspace's listed paths; a
 * masked path appearing rebuilds the jail, a file the host runs later
 * being written is noted. It reports through the WatchHooks it is given
 * and calls nothing above it. */

#include "daemon.h"

#define WATCH_MAX_DIRS 4096           /* inotify directories per workspace */

/* What watch.c reports, to the functions workspace.c gives it: watch.c
 * calls nothing above it. */
typedef struct WatchHooks {
        /* A path matching the masks appeared: the jail is rebuilt. */
        void (*masked_appeared)(Workspace *ws, const char *why);
        /* A file the host runs later (.git below the root, .envrc,
         * .vscode/tasks.json, ...) was written under the listed paths. */
        void (*host_run)(Workspace *ws, const char *path);
        /* A name that can make a repository (HEAD, objects, refs, .git,
         * commondir) appeared in each of dirs (absolute; NULL: events were
         * lost, or too many: any directory): whether that ended the jail. */
        bool (*git_suspect)(Workspace *ws, char *const *dirs);
} WatchHooks;

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
        "ones not watched stays readable to commands until the worker restarts (the file tools still refuse it), "  \
        "and a git repository made there is put aside only when the jail ends"
#define WATCH_MISSING_NOTE                                                                                           \
        "masks over time: the listed paths are not watched (no inotify instance left: fs.inotify.max_user_instances);" \
        " a masked path created later stays readable to commands until the worker restarts (the file tools still"   \
        " refuse it), files the host runs later are not reported, and a git repository the jail makes is put aside" \
        " only when the jail ends"
