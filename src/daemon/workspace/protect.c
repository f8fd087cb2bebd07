/* SPDX-License-Identifier: MIT */
/* Protected paths that survive host-side replacement (protect-snapshot.h):
 * the daemon notes what vectora.toml and the .git control files were when
 * each worker spawned and recycles the worker when that changes:
 *   - on every call, before it is served: no call ever runs in a jail
 *     whose protection was detached. With a complete watch (every
 *     directory on the paths watched, all below the root, no symlink) that
 *     costs one read of the inotify queue and one stat of the root: the
 *     kernel queues the event inside the host's rename, so an empty queue
 *     says what the lstats would; anything queued (an overflow too), or
 *     a change of the mount table (a mount over a path queues nothing),
 *     makes the next look compare every path. Otherwise one lstat per path;
 *   - on an inotify event in the workspace root or .git, at once: a command
 *     already running loses its jail within the loop's reaction time
 *     (measured by tests/integration/test_integrity.py, t_recycle_window).
 * A .git created on the host after the jail started changes the snapshot
 * too (absent -> present), so it is protected before the next call. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "protect-snapshot.h"
#include "protect.h"
#include "server.h"
#include "worker-link.h"
#include "watch.h"
#include "workspace.h"
/* after the daemon's headers: their macro.h MIN/MAX come before uv.h's */
#include "inotify-hub.h"

struct WorkspaceProtect {
        Workspace *ws;
        ProtectChangedFn changed; /* the workspace's: protect.c calls nothing above it */
        VsProtectSnapshot *snap;
        HubSub *sub;     /* its watches there; NULL: none (ticking instead) */
        bool complete; /* the watch covers every path (protect_snapshot_watch) */
        bool dirty;    /* something was queued since the last compare */
        uint64_t mounts_seen; /* mounts_generation() at the last compare */
        uv_timer_t timer; /* without inotify: looked at every PROTECT_POLL_MS */
        bool ticking;
};

#define PROTECT_POLL_MS 10

/* A mount made on the host over a protected path changes its identity
 * (the device) with no inotify event. The mount table says when it
 * changed: poll() on /proc/self/mountinfo reports POLLPRI once per change
 * since the last poll. Each change counts here; a workspace that saw
 * another count compares its paths. */
static int mounts_fd = -EBADF;
static uint64_t mounts_changes;

static uint64_t mounts_generation(void) {
        if (mounts_fd == -EBADF) {
                mounts_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (mounts_fd < 0)
                        mounts_fd = -errno;
        }
        /* Without it nothing says the table is unchanged. */
        if (mounts_fd < 0)
                return ++mounts_changes;
        struct pollfd pf = { .fd = mounts_fd, .events = POLLPRI };
        if (poll(&pf, 1, 0) != 0)
                mounts_changes++;
        return mounts_changes;
}

static void on_tick(uv_timer_t *t) {
        WorkspaceProtect *p = t->data;
        protect_check(p->ws);
}

static void on_event(void *userdata, const struct inotify_event *ev) {
        WorkspaceProtect *p = userdata;
        /* The instance is shared: a directory watched for masks too brings
         * writes (IN_CLOSE_WRITE) that change no identity here. */
        if (ev->mask & (PROTECT_WATCH_EVENTS | IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT))
                p->dirty = true;
}

/* After the queue was read: at once, so that a command already running
 * loses a jail whose mount was detached (may free p). */
static void on_batch_end(void *userdata) {
        WorkspaceProtect *p = userdata;
        protect_check(p->ws);
}

static const HubOps protect_ops = { .event = on_event, .batch_end = on_batch_end };

static void on_timer_closed(uv_handle_t *h) {
        free(h->data);
}

void protect_disarm(Workspace *ws) {
        WorkspaceProtect *p = TAKE_PTR(ws->protect);
        if (!p)
                return;
        protect_snapshot_free(p->snap);
        p->snap = NULL;
        hub_sub_free(p->sub);
        p->sub = NULL;
        if (p->ticking) {
                uv_timer_stop(&p->timer);
                uv_close((uv_handle_t *)&p->timer, on_timer_closed);
                return;
        }
        free(p);
}

static int add_watch(void *ctx, const char *dir, uint32_t mask) {
        int r = hub_add_watch(ctx, dir, mask);
        return r < 0 ? r : 0;
}

void protect_arm(Workspace *ws, ProtectChangedFn changed) {
        protect_disarm(ws);
        if (!ws->policy || !ws->policy->sandboxed)
                return;
        /* ssh: the remote launcher makes the .git placeholders, on files
         * this host may share (remote_root unset); noted once the worker
         * is ready (worker-link.c arms it again then). */
        if (ws->policy->backend->remote_plan && ws->link && ws->link->state != LINK_READY)
                return;
        WorkspaceProtect *p = calloc(1, sizeof *p);
        if (!p) {
                log_warning("workspace %s: out of memory noting the protected paths", ws->path);
                return;
        }
        p->ws = ws;
        p->changed = changed;
        ws->protect = p;
        int r = protect_snapshot_take(ws->policy, ws->link ? launch_host_paths(ws->link->launch) : NULL, &p->snap);
        if (r < 0) {
                /* Without a snapshot every call recycles (protect_check):
                 * fail closed rather than serve an unchecked jail. */
                log_warning("workspace %s: cannot note the protected paths: %s", ws->path, strerror(-r));
                return;
        }
        /* Without the watch (no inotify instance left: the limit is per
         * user, shared with every process of this uid) a command already
         * running would keep a jail whose mount was detached: the paths are
         * looked at on a timer instead. */
        /* Dirty until the first compare: a path replaced between the
         * snapshot and its watch is seen by that compare. */
        p->dirty = true;
        InotifyHub *hub = workspace_hub(ws);
        r = hub ? hub_sub_new(hub, &protect_ops, p, &p->sub) : -EMFILE;
        if (r >= 0)
                r = protect_snapshot_watch_with(p->snap, add_watch, p->sub, &p->complete);
        if (r < 0) {
                hub_sub_free(p->sub);
                p->sub = NULL;
                log_warning("workspace %s: cannot watch the protected paths (%s); looking at them every %d ms instead",
                            ws->path, strerror(-r), PROTECT_POLL_MS);
                uv_timer_init(ws->srv->loop, &p->timer);
                p->timer.data = p;
                p->ticking = true;
                uv_timer_start(&p->timer, on_tick, PROTECT_POLL_MS, PROTECT_POLL_MS);
        }
}

bool protect_check(Workspace *ws) {
        WorkspaceProtect *p = ws->protect;
        if (!p || !(ws->link || ws->draining))
                return false;
        const char *what = ws->path;
        if (p->snap && p->sub && p->complete) {
                /* Read first: an event queued after the compare below began
                 * stays for the next look. Reading runs what was queued,
                 * this workspace's own handlers too: one of them may have
                 * recycled its worker already (and freed p; a new p or
                 * link may even sit at the same address, so the recycle
                 * count says it, not the pointers). */
                uint64_t mounts = mounts_generation();
                uint64_t recycles = ws->counters.recycles;
                bool read = hub_drain(ws->hub);
                if (ws->counters.recycles != recycles || ws->protect != p)
                        return true;
                if (!read || mounts != p->mounts_seen)
                        p->dirty = true;
                what = p->dirty ? protect_snapshot_changed(p->snap) : protect_snapshot_root_changed(p->snap);
                if (!what) {
                        p->dirty = false;
                        p->mounts_seen = mounts;
                }
        } else if (p->snap)
                what = protect_snapshot_changed(p->snap);
        if (!what)
                return false;
        char why[PATH_MAX + 200];
        snprintf(why, sizeof why,
                 "%s changed on the host; the jail was rebuilt so its read-only mounts cover the new file, and this call was ended",
                 what);
        log_info("workspace %s: protected path %s changed on the host; recycling the worker", ws->path, what);
        p->changed(ws, why);
        if (!ws->link)
                protect_disarm(ws); /* nothing was waiting: the next spawn notes them again */
        return true;
}
