/* SPDX-License-Identifier: MIT */
/* Protected paths that survive host-side replacement. The jail makes
 * vectora.toml and the .git control files read-only with bind mounts over
 * the inodes there when it started. Editors and git save by writing a temp
 * file and renaming it over the original; a rename in the host's mount
 * namespace detaches the jail's bind mount on that path, and the jail then
 * sees the new file through its writable workspace. So the daemon notes
 * what each protected path (and its parent inside the workspace) was when
 * the worker was spawned, and recycles the worker when that changes:
 *   - on every call, before it is served (one lstat per path): no call ever
 *     runs in a jail whose protection was detached;
 *   - on an inotify event in the parents, at once: a command already
 *     running loses the jail within the loop's reaction time (measured in
 *     tests/integration/test_integrity.py, t_host_save_keeps_protection).
 * A .git created on the host after the jail started changes the snapshot
 * too (absent -> present), so it is protected before the next call. */
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "daemon.h"
#include "log.h"
#include "path-util.h"
#include "strv.h"

typedef struct ProtectId {
        bool exists;
        dev_t dev;
        ino_t ino;
        mode_t type;
        dev_t tdev; /* a symlink's target (a symlinked .git/hooks) */
        ino_t tino;
} ProtectId;

struct WorkspaceProtect {
        Workspace *ws;
        char **paths; /* protected paths and their parents below the workspace root */
        ProtectId *ids;
        size_t n;
        int fd;
        uv_poll_t poll;
        bool poll_init;
};

static ProtectId identify(const char *path) {
        ProtectId id = {};
        struct stat st;
        if (lstat(path, &st) < 0)
                return id;
        id = (ProtectId){ .exists = true, .dev = st.st_dev, .ino = st.st_ino, .type = st.st_mode & S_IFMT };
        if (S_ISLNK(st.st_mode) && stat(path, &st) == 0) {
                id.tdev = st.st_dev;
                id.tino = st.st_ino;
        }
        return id;
}

static bool same_id(const ProtectId *a, const ProtectId *b) {
        return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->type == b->type &&
               a->tdev == b->tdev && a->tino == b->tino;
}

/* The protected paths, plus each parent between them and the root (.git):
 * a .git replaced or created whole changes its own identity. */
static int collect(const Workspace *ws, char ***ret) {
        _cleanup_strv_free_ char **prot = NULL, **out = NULL;
        int r = config_protected_paths(ws->policy, &prot);
        if (r < 0)
                return r;
        for (char **p = prot; *p; p++) {
                _cleanup_free_ char *cur = strdup(*p);
                while (cur && !streq(cur, ws->path) && path_is_below_or_equal(cur, ws->path)) {
                        if (!strv_contains(out, cur) && (r = strv_extend(&out, cur)) < 0)
                                return r;
                        char *slash = strrchr(cur, '/');
                        if (!slash)
                                break;
                        *slash = 0;
                }
                if (!cur)
                        return -ENOMEM;
        }
        if (!out && !(out = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

static const char *changed_path(WorkspaceProtect *p) {
        for (size_t i = 0; i < p->n; i++) {
                ProtectId now = identify(p->paths[i]);
                if (!same_id(&now, &p->ids[i]))
                        return p->paths[i];
        }
        return NULL;
}

static void on_event(uv_poll_t *h, int status, int events) {
        WorkspaceProtect *p = h->data;
        _Alignas(struct inotify_event) char buf[4096];
        while (read(p->fd, buf, sizeof buf) > 0)
                ; /* which name changed does not matter: the snapshot says */
        protect_check(p->ws);
}

static void on_poll_closed(uv_handle_t *h) {
        free(h->data);
}

void protect_disarm(Workspace *ws) {
        WorkspaceProtect *p = TAKE_PTR(ws->protect);
        if (!p)
                return;
        strv_free(p->paths);
        free(p->ids);
        if (!p->poll_init) {
                safe_close(p->fd);
                free(p);
                return;
        }
        uv_poll_stop(&p->poll);
        p->fd = safe_close(p->fd);
        uv_close((uv_handle_t *)&p->poll, on_poll_closed);
}

void protect_arm(Workspace *ws) {
        protect_disarm(ws);
        if (!ws->policy || !ws->policy->sandboxed)
                return;
        WorkspaceProtect *p = calloc(1, sizeof *p);
        if (!p)
                goto fail;
        p->ws = ws;
        p->fd = -EBADF;
        ws->protect = p;
        if (collect(ws, &p->paths) < 0)
                goto fail;
        p->n = strv_length(p->paths);
        if (!(p->ids = calloc(p->n + 1, sizeof *p->ids)))
                goto fail;
        for (size_t i = 0; i < p->n; i++)
                p->ids[i] = identify(p->paths[i]);
        /* Watch the directories that hold them (the root and .git): a
         * rename, creation or removal there is the replacement itself. */
        p->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (p->fd < 0)
                goto fail;
        uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF |
                        IN_ONLYDIR | IN_DONT_FOLLOW;
        if (inotify_add_watch(p->fd, ws->path, mask) < 0)
                goto fail;
        for (size_t i = 0; i < p->n; i++)
                if (p->ids[i].exists && p->ids[i].type == S_IFDIR)
                        (void)inotify_add_watch(p->fd, p->paths[i], mask);
        uv_poll_init(ws->srv->loop, &p->poll, p->fd);
        p->poll_init = true;
        p->poll.data = p;
        uv_poll_start(&p->poll, UV_READABLE, on_event);
        return;
fail:
        /* The per-call check still holds without the watch (p->ids set);
         * without a snapshot, every call recycles: fail closed. */
        log_warning("workspace %s: cannot watch the protected paths: %m; the per-call check remains", ws->path);
}

bool protect_check(Workspace *ws) {
        WorkspaceProtect *p = ws->protect;
        if (!p || !(ws->link || ws->draining))
                return false;
        const char *what = p->ids ? changed_path(p) : ws->path;
        if (!what)
                return false;
        char why[PATH_MAX + 200];
        snprintf(why, sizeof why,
                 "%s changed on the host; the jail was rebuilt so its read-only mounts cover the new file, and this call was ended",
                 what);
        log_info("workspace %s: protected path %s changed on the host; recycling the worker", ws->path, what);
        workspace_recycle(ws, "worker_recycled", why);
        if (ws->link)
                return true;
        /* Nothing was waiting: the next spawn takes a new snapshot. */
        protect_disarm(ws);
        return true;
}
