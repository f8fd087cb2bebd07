/* SPDX-License-Identifier: MIT */
#pragma once

/* Masks over time (watch.c): a workspace's listed paths watched whole
 * with the daemon's fanotify group (root: one mark per filesystem,
 * fan-hub.h), else with inotify, a watch per directory within the
 * workspace's share of fs.inotify.max_user_watches (watch_budget()); a
 * masked path appearing rebuilds the jail, a file the host runs later
 * being written is noted. It reports through the WatchHooks it is given
 * and calls nothing above it. */

#include "daemon.h"

/* What watch.c reports, to the functions workspace.c gives it: watch.c
 * calls nothing above it. */
typedef struct WatchHooks {
        /* A path matching the masks appeared: the jail is rebuilt. */
        void (*masked_appeared)(Workspace *ws, const char *why);
        /* The same for a masked name that appeared as a symlink or a
         * directory (which may hold links): a new jail is started at once,
         * call or not (its start puts aside a link it would refuse). */
        void (*masked_link_appeared)(Workspace *ws, const char *why);
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
/* Before a reply of ws's jails leaves (after the queues were read): a
 * walk that may have missed an entry is confirmed by reading the queue
 * again until nothing moved (watch.c), or the jails end (the caller sees
 * its link dead: the reply is not sent, its call answers worker_recycled). */
void watch_settle(Workspace *ws);
/* Before a worker starts (no jail of the workspace runs): the walk of
 * the whole tree a jail kept changing under is done again (watch.c). */
void watch_before_spawn(Workspace *ws);
/* Reads the fanotify group's queue (before a call is served, as
 * hub_drain() does for inotify): what happened before has been handled. */
void watch_drain(Workspace *ws);
/* The inotify watches ws may hold: its even share of half of
 * fs.inotify.max_user_watches among the workspaces watched with inotify,
 * or what the others leave of that half if more. */
size_t watch_budget(Workspace *ws);
/* For status: "fanotify", "inotify" or NULL (not watched); the inotify
 * watches held and the budget (0 under fanotify). */
void watch_describe(Workspace *ws, const char **ret_kind, size_t *ret_used, size_t *ret_budget);
/* What masks over time cannot keep for a sandboxed workspace, or NULL:
 * more directories than its inotify budget (masks are not kept below the
 * ones left out; never under fanotify), or no watch at all (no inotify
 * instance left). Reported in "degraded"; refused under lockdown. */
const char *watch_gap(Workspace *ws);
#define WATCH_PARTIAL_NOTE                                                                                           \
        "masks over time: more directories under the listed paths than this workspace's share of inotify watches " \
        "(half of fs.inotify.max_user_watches, shared by the workspaces; status says the budget); a masked path "   \
        "created below the ones not watched stays readable to commands until the worker restarts (the file tools " \
        "still refuse it), and a git repository made there is put aside only when the jail ends"
#define WATCH_MISSING_NOTE                                                                                           \
        "masks over time: the listed paths are not watched (no inotify instance left: fs.inotify.max_user_instances);" \
        " a masked path created later stays readable to commands until the worker restarts (the file tools still"   \
        " refuse it), files the host runs later are not reported, and a git repository the jail makes is put aside" \
        " only when the jail ends"
