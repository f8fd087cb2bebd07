/* SPDX-License-Identifier: MIT */
#include "protect-snapshot.h"

#include <fcntl.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "git-control.h"
#include "path-util.h"
#include "strv.h"

/* An inode number alone does not name a file: ext4 hands a freed number
 * to the next file made (a host that removes .git/hooks and makes it again
 * gets the same number at once once the jail's mount over the old one is
 * detached), so the birth time goes with it where the filesystem keeps
 * one (statx STATX_BTIME: ext4, xfs, btrfs, tmpfs). */
typedef struct ProtectId {
        bool exists;
        dev_t dev;
        ino_t ino;
        mode_t type;
        int64_t btime_sec; /* 0/0 where the filesystem keeps no birth time */
        uint32_t btime_nsec;
        dev_t tdev; /* a symlink's target (a symlinked .git/hooks), birth time too */
        ino_t tino;
        int64_t tbtime_sec;
        uint32_t tbtime_nsec;
} ProtectId;

struct VsProtectSnapshot {
        char *root;
        ProtectId root_id; /* followed: a moved or replaced root (or ancestor) changes it */
        char **paths;
        ProtectId *ids;
        size_t n;
};

static bool statx_id(const char *path, int flags, ProtectId *id) {
        struct statx sx;
        if (statx(AT_FDCWD, path, flags | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_INO | STATX_BTIME, &sx) < 0)
                return false;
        *id = (ProtectId){ .exists = true, .dev = makedev(sx.stx_dev_major, sx.stx_dev_minor), .ino = sx.stx_ino,
                           .type = sx.stx_mode & S_IFMT };
        if (sx.stx_mask & STATX_BTIME) {
                id->btime_sec = sx.stx_btime.tv_sec;
                id->btime_nsec = sx.stx_btime.tv_nsec;
        }
        return true;
}

static ProtectId identify(const char *path) {
        ProtectId id = {};
        if (!statx_id(path, AT_SYMLINK_NOFOLLOW, &id))
                return (ProtectId){};
        ProtectId t;
        if (id.type == S_IFLNK && statx_id(path, 0, &t)) {
                id.tdev = t.dev;
                id.tino = t.ino;
                id.tbtime_sec = t.btime_sec;
                id.tbtime_nsec = t.btime_nsec;
        }
        return id;
}

static ProtectId identify_root(const char *root) {
        ProtectId id = {};
        return statx_id(root, 0, &id) ? id : (ProtectId){};
}

static bool same_id(const ProtectId *a, const ProtectId *b) {
        return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->type == b->type &&
               a->btime_sec == b->btime_sec && a->btime_nsec == b->btime_nsec && a->tdev == b->tdev &&
               a->tino == b->tino && a->tbtime_sec == b->tbtime_sec && a->tbtime_nsec == b->tbtime_nsec;
}

void protect_snapshot_free(VsProtectSnapshot *s) {
        if (!s)
                return;
        free(s->root);
        strv_free(s->paths);
        free(s->ids);
        free(s);
}

int protect_snapshot_take(const VsPolicy *p, char *const *extra, VsProtectSnapshot **ret) {
        _cleanup_(protect_snapshot_freep) VsProtectSnapshot *s = calloc(1, sizeof *s);
        _cleanup_strv_free_ char **prot = NULL;
        if (!s || !(s->root = strdup(p->workspace)) || !(s->paths = calloc(1, sizeof(char *))))
                return -ENOMEM;
        int r = config_protected_paths(p, &prot);
        if (r < 0)
                return r;
        /* And the .git control files the jail plan found (a .git file's
         * target, submodules, worktrees, nested repositories, what the
         * configs name): a host save over one detaches its mount the same
         * way. The plan's protected list (extra) holds them all; only
         * without it are they looked for again (a walk of the tree). */
        VsGitControls gc = { 0 };
        if (!extra && (r = git_controls_collect(p->workspace, &gc)) < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < gc.n; i++)
                if (!strv_contains(prot, gc.items[i].path))
                        r = strv_extend(&prot, gc.items[i].path);
        git_controls_done(&gc);
        for (char *const *e = extra; r >= 0 && e && *e; e++)
                if (!strv_contains(prot, *e))
                        r = strv_extend(&prot, *e);
        if (r < 0)
                return r;
        /* Each path and its parents up to the root: a .git replaced or
         * created whole changes its own identity. */
        for (char **pp = prot; *pp; pp++) {
                _cleanup_free_ char *cur = strdup(*pp);
                while (cur && !streq(cur, s->root) && path_is_below_or_equal(cur, s->root)) {
                        if (!strv_contains(s->paths, cur) && (r = strv_extend(&s->paths, cur)) < 0)
                                return r;
                        *strrchr(cur, '/') = 0;
                }
                if (!cur)
                        return -ENOMEM;
                /* One outside the workspace (a .git file's target) is noted
                 * by itself. */
                if (!path_is_below_or_equal(*pp, s->root) && !strv_contains(s->paths, *pp) &&
                    (r = strv_extend(&s->paths, *pp)) < 0)
                        return r;
        }
        s->n = strv_length(s->paths);
        if (!(s->ids = calloc(s->n + 1, sizeof *s->ids)))
                return -ENOMEM;
        for (size_t i = 0; i < s->n; i++)
                s->ids[i] = identify(s->paths[i]);
        s->root_id = identify_root(s->root);
        *ret = TAKE_PTR(s);
        return 0;
}

const char *protect_snapshot_root_changed(const VsProtectSnapshot *s) {
        ProtectId now = identify_root(s->root);
        return same_id(&now, &s->root_id) ? NULL : s->root;
}

const char *protect_snapshot_changed(const VsProtectSnapshot *s) {
        const char *r = protect_snapshot_root_changed(s);
        if (r)
                return r;
        for (size_t i = 0; i < s->n; i++) {
                ProtectId now = identify(s->paths[i]);
                if (!same_id(&now, &s->ids[i]))
                        return s->paths[i];
        }
        return NULL;
}

int protect_snapshot_watch_with(const VsProtectSnapshot *s, ProtectWatchAddFn add, void *ctx, bool *ret_complete) {
        uint32_t mask = PROTECT_WATCH_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW;
        int r = add(ctx, s->root, mask);
        if (r < 0)
                return r;
        /* Complete when every change that can alter an identity of the
         * snapshot queues an event: each path lies below the root with
         * every existing directory on its way watched (the paths hold their
         * parents up to the root). A path outside the root (a .git file's
         * target: its parents are not watched) or a symlink (its target can
         * change with no event here) is not covered. */
        bool complete = true;
        for (size_t i = 0; i < s->n; i++) {
                if (!path_is_below_or_equal(s->paths[i], s->root) || s->ids[i].type == S_IFLNK)
                        complete = false;
                /* One outside the root (a protected link in another
                 * writable path): its directory watched all the same, so
                 * a jail's rename over it ends the jail at once, not at
                 * the next call (an attack review). */
                if (!path_is_below_or_equal(s->paths[i], s->root)) {
                        _cleanup_free_ char *dir = strdup(s->paths[i]);
                        char *slash = dir ? strrchr(dir, '/') : NULL;
                        if (slash && slash != dir) {
                                *slash = 0;
                                (void)add(ctx, dir, mask);
                        }
                }
                if (s->ids[i].exists && s->ids[i].type == S_IFDIR && add(ctx, s->paths[i], mask) < 0)
                        complete = false;
        }
        if (ret_complete)
                *ret_complete = complete;
        return 0;
}

static int add_to_fd(void *ctx, const char *dir, uint32_t mask) {
        return inotify_add_watch(*(int *)ctx, dir, mask) < 0 ? -errno : 0;
}

int protect_snapshot_watch(const VsProtectSnapshot *s, bool *ret_complete) {
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = protect_snapshot_watch_with(s, add_to_fd, &fd, ret_complete);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

bool protect_snapshot_drain(int fd) {
        _Alignas(struct inotify_event) char buf[4096];
        bool any = false;
        for (;;) {
                ssize_t k = read(fd, buf, sizeof buf);
                if (k > 0) {
                        any = true;
                        continue;
                }
                /* Nothing queued; anything else (an error, EOF) says
                 * nothing about the paths: treated as a change. */
                return any || !(k < 0 && errno == EAGAIN);
        }
}
