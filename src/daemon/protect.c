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
#include "workspace.h"

struct WorkspaceProtect {
        Workspace *ws;
        ProtectChangedFn changed; /* the workspace's: protect.c calls nothing above it */
        VsProtectSnapshot *snap;
        int fd;
        bool complete; /* the watch covers every path (protect_snapshot_watch) */
        bool dirty;    /* something was queued since the last compare */
        uint64_t mounts_seen; /* mounts_generation() at the last compare */
        uv_poll_t poll;
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

static void on_event(uv_poll_t *h, int status, int events) {
        WorkspaceProtect *p = h->data;
        /* Drained here as well: the poll is level-triggered and
         * protect_check() may return before looking. */
        (void)protect_snapshot_drain(p->fd);
        p->dirty = true;
        protect_check(p->ws);
}

static void on_poll_closed(uv_handle_t *h) {
        free(h->data);
}

void protect_disarm(Workspace *ws) {
        WorkspaceProtect *p = TAKE_PTR(ws->protect);
        if (!p)
                return;
        protect_snapshot_free(p->snap);
        p->snap = NULL;
        if (p->ticking) {
                uv_timer_stop(&p->timer);
                uv_close((uv_handle_t *)&p->timer, on_poll_closed);
                return;
        }
        if (p->fd < 0) {
                free(p);
                return;
        }
        uv_poll_stop(&p->poll);
        p->fd = safe_close(p->fd);
        uv_close((uv_handle_t *)&p->poll, on_poll_closed);
}

void protect_arm(Workspace *ws, ProtectChangedFn changed) {
        protect_disarm(ws);
        if (!ws->policy || !ws->policy->sandboxed)
                return;
        /* ssh: the remote launcher makes the .git placeholders, on files
         * this host may share (remote_root unset); noted once the worker
         * is ready (worker-link.c arms it again then). */
        if (ws->policy->backend == VS_BACKEND_SSH && ws->link && ws->link->state != LINK_READY)
                return;
        WorkspaceProtect *p = calloc(1, sizeof *p);
        if (!p) {
                log_warning("workspace %s: out of memory noting the protected paths", ws->path);
                return;
        }
        p->ws = ws;
        p->changed = changed;
        p->fd = -EBADF;
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
        p->fd = protect_snapshot_watch(p->snap, &p->complete);
        if (p->fd < 0) {
                log_warning("workspace %s: cannot watch the protected paths (%s); looking at them every %d ms instead",
                            ws->path, strerror(-p->fd), PROTECT_POLL_MS);
                uv_timer_init(ws->srv->loop, &p->timer);
                p->timer.data = p;
                p->ticking = true;
                uv_timer_start(&p->timer, on_tick, PROTECT_POLL_MS, PROTECT_POLL_MS);
                return;
        }
        uv_poll_init(ws->srv->loop, &p->poll, p->fd);
        p->poll.data = p;
        uv_poll_start(&p->poll, UV_READABLE, on_event);
}

bool protect_check(Workspace *ws) {
        WorkspaceProtect *p = ws->protect;
        if (!p || !(ws->link || ws->draining))
                return false;
        const char *what = ws->path;
        if (p->snap && p->fd >= 0 && p->complete) {
                /* Drained first: an event queued after the compare below
                 * began stays dirty for the next look. */
                uint64_t mounts = mounts_generation();
                if (protect_snapshot_drain(p->fd) || mounts != p->mounts_seen)
                        p->dirty = true;
                what = p->dirty ? protect_snapshot_changed(p->snap) : protect_snapshot_root_changed(p->snap);
                if (!what) {
                        p->dirty = false;
                        p->mounts_seen = mounts;
                }
        } else if (p->snap) {
                if (p->fd >= 0)
                        (void)protect_snapshot_drain(p->fd);
                what = protect_snapshot_changed(p->snap);
        }
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
