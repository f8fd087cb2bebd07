/* SPDX-License-Identifier: MIT */
/* Masks that hold over time: the jail masks what existed when it started
 * (bind mounts over each matching path). A matching path that appears later
 * (a host editor writes .env, a file is renamed to key.pem, a masked file is
 * deleted and recreated) would be visible inside the running jail, so the
 * workspace's rw/ro roots are watched with inotify and such an event
 * recycles the worker: in-flight commands fail with "worker_recycled" and the
 * next call gets a jail built with the new path masked. Directories are
 * watched recursively up to WATCH_MAX_DIRS; masked directories are not
 * entered (the jail sees them empty whatever they hold). */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "jail-plan.h"
#include "log.h"
#include "mask-walk.h"
#include "path-util.h"
#include "protect-absent.h"
#include "strv.h"
#include "time-util.h"
#include "server.h"
#include "worker-link.h"
#include "watch.h"

#include "workspace.h"
/* After daemon.h, which takes uv.h's MIN/MAX out for macro.h's. */
#include "inotify-hub.h"
#include "fan-hub.h"

typedef struct WatchDir {
        int wd;
        size_t root;
        char *rel; /* "" for the root */
} WatchDir;

typedef struct WalkedDir {
        size_t root;
        char *rel;
        struct stat st;
} WalkedDir;

typedef struct WorkspaceWatch {
        Workspace *ws;
        HubSub *sub; /* on the daemon's shared inotify instance; or */
        FanSub *fsub; /* on its fanotify group (root): no watch per directory */
        char *hit;   /* the first masked path seen in the batch being read */
        bool hit_link; /* that path is a symlink or a directory (seen()): the next jail starts at once */
        char *protect_hit; /* the first protected name seen appearing unsealed */
        char **git_dirs; /* directories where a name that makes a repository appeared, in this batch */
        bool git_all;    /* events were lost: every directory */
        VsGlobSet *set;
        VsGlobSet *protect;
        char **roots;
        size_t n_roots;
        WatchDir *dirs;
        size_t n_dirs, dirs_cap;
        bool partial;
        /* Directories that appeared in this batch, walked at its end: once
         * each, however often the jail moves one back and forth. */
        WatchDir *fresh_dirs;
        size_t n_fresh_dirs;
        bool lost;      /* events were lost (an overflow): the tree is walked again */
        bool rewalking; /* that walk: what the jail masks already is no news */
        bool walk_changed; /* the tree changed under a walk: it may have missed an entry */
        bool rewalk_at_spawn; /* walked again before the next worker starts (watch_before_spawn()) */
        /* What watch_settle() holds a reply for: a walk that may have missed
         * an entry the lost events would have named. */
        bool unsettled;
        bool structural; /* a directory made or moved in, in the batch being read */
        bool batch_seen;  /* a batch reached this watch (watch_settle()'s drains) */
        /* During rewalk(): each directory read and how it was then, looked
         * at again once the walk is over. */
        struct WalkedDir *walked;
        size_t n_walked, walked_cap;
        char failed_note[320]; /* a watch that could not be added: what every result says */
} WorkspaceWatch;

#define WATCH_EVENTS (IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

/* Files the host runs later (its git, editors, agents, direnv): one that
 * a call creates or changes is listed in the results of the calls in
 * flight and in the audit log. The default protect list's names
 * (protect-defaults.c), whatever protect says, and what the workspace's
 * own protect globs match; at any depth: a host opens subdirectories as
 * projects too. The root .git's own control files are read-only in the
 * jail; a .git anywhere else is the agent's. */
static bool has_component(const char *rel, const char *name) {
        size_t k = strlen(name);
        for (const char *c = rel; c; c = strchr(c, '/')) {
                if (*c == '/')
                        c++;
                if (strncmp(c, name, k) == 0 && (c[k] == '\0' || c[k] == '/'))
                        return true;
        }
        return false;
}

static bool default_name(const char *rel) {
        for (size_t i = 0; i < VS_N_PROTECT_DEFAULTS; i++) {
                const char *g = VS_PROTECT_DEFAULTS[i].glob;
                if (has_component(rel, strncmp(g, "**/", 3) == 0 ? g + 3 : g))
                        return true;
        }
        return false;
}

/* The length of rel's prefix to report when rel is a file the host runs
 * later, else 0. Anything inside a nested repository (sub/.git itself, its
 * config, its hooks) is reported as that sub/.git: one entry however many
 * files git writes there, so a `git init` cannot push other notes out of
 * the workspace's ring. The root .git is not the agent's (read-only). */
static size_t host_runs(const WorkspaceWatch *w, const char *rel, bool is_dir) {
        if (default_name(rel) || glob_set_masks(w->protect, rel, is_dir))
                return strlen(rel);
        const char *g = strstr(rel, ".git");
        for (; g; g = strstr(g + 1, ".git")) {
                if (g == rel || g[-1] != '/' || (g[4] && g[4] != '/'))
                        continue;
                const char *rest = g + 4;
                if (!*rest || streq(rest, "/config") || strncmp(rest, "/hooks/", 7) == 0 || streq(rest, "/hooks"))
                        return (size_t) (rest - rel);
        }
        return 0;
}

/* root/rel reached from the root without following a symlink, a magic
 * link or "..": every name below a root is the jail's, and it may swap a
 * directory for a symlink between an event and this look (ATTACKS.md: the
 * host never follows a path the agent shaped). */
static int open_beneath(const WorkspaceWatch *w, size_t root, const char *rel, int flags) {
        _cleanup_close_ int rfd = chase_open_dir(w->roots[root]);
        if (rfd < 0)
                return rfd;
        return chase_beneath(rfd, rel, flags);
}

/* A placeholder the jail's launch made (protect-absent.h) at a root: not
 * the jail's doing, and sealed already. */
static bool is_placeholder(const WorkspaceWatch *w, size_t root, const char *rel) {
        const VsPolicy *p = w->ws->policy;
        bool lit = false, tool_dir = false;
        for (char **g = p ? p->protect : NULL; g && *g && !lit && !tool_dir; g++) {
                _cleanup_free_ char *l = NULL;
                size_t len = 0;
                lit = protect_literal(*g, &l) >= 0 && l && streq(l, rel);
                /* A tool's directory sealed whole for a file of the list. */
                tool_dir = !lit && l && protect_tool_dir(l, &len) && strlen(rel) == len && strncmp(l, rel, len) == 0;
        }
        if (!lit && !tool_dir)
                return false;
        const char *content = NULL;
        VsAbsent kind = tool_dir ? VS_ABSENT_DIR : protect_absent_kind(rel, &content);
        _cleanup_close_ int fd = open_beneath(w, root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return false;
        if (kind == VS_ABSENT_DIR) {
                if (!S_ISDIR(st.st_mode))
                        return false;
                DIR *d = fdopendir(TAKE_FD(fd));
                if (!d)
                        return false;
                struct dirent *de;
                bool empty = true;
                while (empty && (de = readdir(d)))
                        empty = streq(de->d_name, ".") || streq(de->d_name, "..");
                closedir(d);
                return empty;
        }
        size_t n = content ? strlen(content) : 0;
        char buf[64];
        if (kind != VS_ABSENT_FILE || !S_ISREG(st.st_mode) || (size_t)st.st_size != n || n > sizeof buf)
                return false;
        ssize_t got = read(fd, buf, sizeof buf);
        return got == (ssize_t)n && (n == 0 || memcmp(buf, content, n) == 0);
}

/* is_placeholder() once per name and event (its opens and the walk of
 * the protect list were done twice for each name a jail's launch made):
 * *memo is -1 until asked. */
static bool placeholder_once(const WorkspaceWatch *w, size_t root, const char *rel, int *memo) {
        if (*memo < 0)
                *memo = is_placeholder(w, root, rel);
        return *memo;
}

/* Whether the jail sees abs read-only: through a read-only listed path
 * innermost, or the workspace seen for want of one (jail-plan.h
 * jail_plan_seen_through). */
static bool below_read_only(const VsPolicy *p, const char *abs) {
        bool writable;
        return p && jail_plan_seen_through(p, abs, &writable) && !writable;
}

/* Whether the jail writes at abs: a writable listed path holds it
 * innermost (none: the workspace seen read-only for want of one). */
static bool jail_writes(const VsPolicy *p, const char *abs) {
        bool writable;
        return p && jail_plan_seen_through(p, abs, &writable) && writable;
}

/* A protected name that appeared under a running jail, made by the host
 * (or by the jail where nothing could be made first: at some depth),
 * stays writable in that jail unless a read-only mount covers it already:
 * the worker is recycled, so the next call's jail seals it. */
static bool unsealed_protect_match(const WorkspaceWatch *w, size_t root, const char *rel, bool is_dir, int *placeholder) {
        if (!glob_set_masks(w->protect, rel, is_dir) || placeholder_once(w, root, rel, placeholder))
                return false;
        Workspace *ws = w->ws;
        _cleanup_free_ char *abs = path_join(w->roots[root], rel);
        if (!abs || below_read_only(ws->policy, abs))
                return false; /* read-only in the jail whatever it is */
        if (!ws->link)
                return ws->starting != NULL; /* the start's walk may have missed it */
        /* Ready: what it kept; still starting: its launch's list. */
        char *const *sealed = ws->link->sealed ? ws->link->sealed
                              : ws->link->launch ? ws->link->launch->protected_paths : NULL;
        for (char *const *s = sealed; s && *s; s++)
                if (path_is_below_or_equal(abs, *s))
                        return false;
        return true;
}

/* A name that can make its directory (or, .git, the directory above) a
 * repository for git's discovery (git-scan.h). */
static bool git_name(const char *name) {
        return streq(name, "HEAD") || streq(name, "objects") || streq(name, "refs") || streq(name, ".git") ||
               streq(name, "commondir");
}

static bool masked_dir_link(const WorkspaceWatch *w, size_t root, const char *rel);

static void note_git(WorkspaceWatch *w, size_t root, const char *rel) {
        const char *slash = strrchr(rel, '/');
        if (!git_name(slash ? slash + 1 : rel) || w->git_all)
                return;
        _cleanup_free_ char *parent = slash ? strndup(rel, (size_t)(slash - rel)) : strdup("");
        _cleanup_free_ char *abs = parent ? (parent[0] ? path_join(w->roots[root], parent) : strdup(w->roots[root])) : NULL;
        /* Only where this jail writes can it make a repository: one in a
         * read-only listed path (another workspace's tree, the host's
         * doing or that workspace's jail's) is not this jail's to put
         * aside. Was: a workspace listing another read-only renamed that
         * one's own .git/HEAD when its jail made its placeholders. */
        if (abs && (!jail_writes(w->ws->policy, abs) || path_below_any(abs, w->ws->git_sealed)))
                return;
        if (!abs || strv_length(w->git_dirs) >= 256) {
                w->git_all = true; /* many at once: one walk instead */
                return;
        }
        if (!strv_contains(w->git_dirs, abs) && strv_extend(&w->git_dirs, abs) < 0)
                w->git_all = true;
}

static void note_host_run(WorkspaceWatch *w, size_t root, const char *rel, size_t len) {
        _cleanup_free_ char *head = strndup(rel, len);
        _cleanup_free_ char *abs = head ? path_join(w->roots[root], head) : NULL;
        if (abs)
                w->ws->watch_hooks->host_run(w->ws, abs);
}

static int add_dir(WorkspaceWatch *w, size_t root, const char *rel);

/* Whether the running jail masks root/rel already (its plan found it). */
static bool masked_in_jail(const WorkspaceWatch *w, size_t root, const char *rel) {
        const WorkerLink *l = w->ws->link;
        char *const *masked = !l ? NULL : l->masked ? l->masked : l->launch ? l->launch->verify_empty : NULL;
        _cleanup_free_ char *abs = path_join(w->roots[root], rel);
        if (!abs || !masked || !strv_contains((char **)masked, abs))
                return false;
        if (!l->spawned_ms)
                return true; /* not mounted yet: the mount takes what is there then */
        /* And still the file the jail's mount covers: one saved over it
         * (an editor writes a new file and renames it over the old) took
         * the old one's place, and the kernel dropped the jail's mount
         * with it. Changed since about the jail's start (ctime, a second's
         * margin for its granularity): not masked, whatever the list says. */
        _cleanup_close_ int fd = open_beneath(w, root, rel, O_PATH);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return false;
        struct timespec rt = now_wall();
        uint64_t age_ms = now_ms() - l->spawned_ms;
        uint64_t spawn_ms = (uint64_t)rt.tv_sec * 1000 + (uint64_t)rt.tv_nsec / 1000000 - age_ms;
        uint64_t ctime_ms = (uint64_t)st.st_ctim.tv_sec * 1000 + (uint64_t)st.st_ctim.tv_nsec / 1000000;
        return ctime_ms + 1000 < spawn_ms;
}

static int add_dir_fd(WorkspaceWatch *w, size_t root, const char *rel, int dfd);
static bool dir_holds_link(const WorkspaceWatch *w, size_t root, const char *rel);

/* A directory rewalk() read, as it was once read; false when it could
 * not be kept (the walk is then unsure). */
static bool walked_add(WorkspaceWatch *w, size_t root, const char *rel, const struct stat *st) {
        if (w->n_walked == w->walked_cap) {
                size_t cap = w->walked_cap ? w->walked_cap * 2 : 256;
                WalkedDir *n = reallocarray(w->walked, cap, sizeof *n);
                if (!n)
                        return false;
                w->walked = n;
                w->walked_cap = cap;
        }
        char *r = strdup(rel);
        if (!r)
                return false;
        w->walked[w->n_walked++] = (WalkedDir){ .root = root, .rel = r, .st = *st };
        return true;
}

static void walked_free(WorkspaceWatch *w) {
        for (size_t i = 0; i < w->n_walked; i++)
                free(w->walked[i].rel);
        free(TAKE_PTR(w->walked));
        w->n_walked = w->walked_cap = 0;
}

/* root/rel is a directory the daemon cannot read (EACCES, EPERM: a user
 * daemon is the jail's uid, and a directory of mode 0300 is the jail's to
 * make, and to make readable again at will): it cannot be watched or
 * walked, while the jail may still open names in it. Taken as a masked
 * path appearing (into *ret_match): the jail is rebuilt, and the new
 * one's plan masks the directory whole (mask-walk.c, unreadable_dir()). */
static void unreadable(WorkspaceWatch *w, size_t root, const char *rel, char **ret_match) {
        if (!ret_match || *ret_match || masked_in_jail(w, root, rel))
                return;
        log_info("workspace %s: %s is a directory the daemon cannot read under a listed path; the jail is rebuilt to hide it",
                 w->ws->path, rel);
        *ret_match = strdup(rel);
}

/* Whether a directory changed between two looks (an entry made, removed
 * or renamed in it moves its mtime and ctime; kernels since 6.13 give
 * each change after a look a fine-grained stamp). */
static bool dir_changed(const struct stat *a, const struct stat *b) {
        return a->st_mtim.tv_sec != b->st_mtim.tv_sec || a->st_mtim.tv_nsec != b->st_mtim.tv_nsec ||
               a->st_ctim.tv_sec != b->st_ctim.tv_sec || a->st_ctim.tv_nsec != b->st_ctim.tv_nsec ||
               a->st_ino != b->st_ino;
}

/* Walks the directory fd (root/rel; taken): watches subdirectories,
 * reports the first path that matches the masks (for directories moved in
 * whole). Each subdirectory is opened from its parent's descriptor, never
 * by its path from the root: a jail that renames a directory above while
 * the walk is below it changes nothing of the walk. During the walk after
 * lost events (w->rewalking), a directory whose entries changed while it
 * was read, or an entry gone or no longer a directory when opened, makes
 * the walk unsure (w->walk_changed): readdir(3) may have missed an entry
 * the jail moved past it, and the events that would have said so are
 * what was lost. */
static bool scan_fd(WorkspaceWatch *w, size_t root, const char *rel, int fd, char **ret_match, bool note) {
        /* Only a walk after lost events looks (two fstat(2) per
         * directory): elsewhere each directory's watch is in place before
         * its read, so what moves meanwhile queues its events. */
        struct stat before, after;
        if (w->rewalking && fstat(fd, &before) < 0) {
                safe_close(fd);
                return false;
        }
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return false;
        }
        /* Subdirectories are entered once the directory is read: the
         * change check covers its read alone, not the walks below. */
        _cleanup_strv_free_ char **subdirs = NULL;
        size_t n_sub = 0, cap_sub = 0;
        bool found = false;
        struct dirent *de;
        while (!found && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *sub = rel[0] ? path_join(rel, de->d_name) : strdup(de->d_name);
                if (!sub)
                        break;
                struct stat st;
                bool is_dir = de->d_type == DT_DIR ||
                              (de->d_type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                               S_ISDIR(st.st_mode));
                /* A directory that appeared may hold such files already
                 * (made before its watch was added). */
                int ph = -1;
                size_t hr = note && !w->rewalking ? host_runs(w, sub, is_dir) : 0;
                if (hr && placeholder_once(w, root, sub, &ph))
                        hr = 0;
                if (note && !w->protect_hit && unsealed_protect_match(w, root, sub, is_dir, &ph))
                        w->protect_hit = strdup(sub);
                if (hr)
                        note_host_run(w, root, sub, hr);
                if (note)
                        note_git(w, root, sub);
                if (glob_set_masks(w->set, sub, is_dir) ||
                    (!w->rewalking && de->d_type == DT_LNK && masked_dir_link(w, root, sub))) {
                        if (w->rewalking && masked_in_jail(w, root, sub))
                                continue;
                        /* As seen() does: a link named as a put-aside one
                         * is no news; a link or a directory starts the next
                         * jail at once (found in a directory moved in, made
                         * read-only before its watch came: review 8). */
                        if (de->d_type == DT_LNK && host_aside_named(de->d_name))
                                continue;
                        if (ret_match && !*ret_match) {
                                *ret_match = strdup(sub);
                                if (ret_match == &w->hit)
                                        w->hit_link = de->d_type == DT_LNK || (is_dir && dir_holds_link(w, root, sub));
                        }
                        found = ret_match != NULL;
                        continue;
                }
                if (!is_dir)
                        continue;
                if (n_sub + 1 >= cap_sub) {
                        size_t cap = cap_sub ? cap_sub * 2 : 16;
                        char **n = reallocarray(subdirs, cap, sizeof *n);
                        if (!n)
                                break;
                        subdirs = n;
                        cap_sub = cap;
                }
                if (!(subdirs[n_sub] = strdup(de->d_name)))
                        break;
                subdirs[++n_sub] = NULL;
        }
        if (w->rewalking && !found &&
            (fstat(dirfd(d), &after) < 0 || dir_changed(&before, &after) || !walked_add(w, root, rel, &after)))
                w->walk_changed = true;
        for (size_t i = 0; !found && i < n_sub; i++) {
                int sfd = chase_beneath(dirfd(d), subdirs[i], O_RDONLY | O_DIRECTORY | O_NONBLOCK);
                _cleanup_free_ char *sub = rel[0] ? path_join(rel, subdirs[i]) : strdup(subdirs[i]);
                if (sfd < 0) {
                        if ((sfd == -EACCES || sfd == -EPERM) && sub) {
                                unreadable(w, root, sub, ret_match);
                                found = ret_match && *ret_match;
                        } else
                                w->walk_changed = true; /* gone or swapped since readdir, or not walked (EMFILE) */
                        continue;
                }
                int k = sub ? add_dir_fd(w, root, sub, sfd) : -ENOMEM;
                if (k >= 0)
                        found = scan_fd(w, root, sub, sfd, ret_match, note) && ret_match;
                else {
                        /* Not walked: unsure, but for a new directory past
                         * the budget (what is below it is not watched). */
                        if (k != -ENOSPC)
                                w->walk_changed = true;
                        safe_close(sfd);
                }
        }
        closedir(d);
        return found;
}

/* The same for root/rel, opened from the root. */
static bool scan_dir(WorkspaceWatch *w, size_t root, const char *rel, char **ret_match, bool note) {
        int fd = open_beneath(w, root, rel, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
        if (fd < 0) {
                if (fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP)
                        w->walk_changed = true;
                else if ((fd == -EACCES || fd == -EPERM) && rel[0])
                        unreadable(w, root, rel, ret_match);
                return ret_match && *ret_match;
        }
        return scan_fd(w, root, rel, fd, ret_match, note);
}

/* A watched directory moved in under a new name (mkdir d; mv d .aws):
 * inotify keeps its watch, so its events must be matched under the new
 * name, and so must those of the directories below it. */
static int rename_dir(WorkspaceWatch *w, size_t i, size_t root, const char *rel) {
        if (w->dirs[i].root == root && streq(w->dirs[i].rel, rel))
                return 0;
        _cleanup_free_ char *old = TAKE_PTR(w->dirs[i].rel);
        size_t old_root = w->dirs[i].root, n = strlen(old);
        if (!(w->dirs[i].rel = strdup(rel)))
                return -ENOMEM;
        w->dirs[i].root = root;
        for (size_t k = 0; k < w->n_dirs; k++) {
                WatchDir *d = &w->dirs[k];
                if (k == i || d->root != old_root || strncmp(d->rel, old, n) != 0 || d->rel[n] != '/')
                        continue;
                char *moved = NULL;
                if (asprintf(&moved, "%s%s", rel, d->rel + n) < 0)
                        return -ENOMEM;
                free(d->rel);
                d->rel = moved;
                d->root = root;
        }
        return 1;
}

/* w->dirs is sorted by wd: where wd is, or would go. A tree of 100 000
 * directories took a linear look per watch added and per event. */
static bool find_wd(const WorkspaceWatch *w, int wd, size_t *ret) {
        size_t lo = 0, hi = w->n_dirs;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (w->dirs[mid].wd < wd)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret = lo;
        return lo < w->n_dirs && w->dirs[lo].wd == wd;
}

/* Whether another directory may be watched (its share of the user's
 * inotify watches); past it the watch is partial, said once. */
static bool budget_left(WorkspaceWatch *w) {
        size_t budget = watch_budget(w->ws);
        if (w->n_dirs < budget)
                return true;
        if (!w->partial)
                log_warning("workspace %s: more than %zu directories (its share of fs.inotify.max_user_watches); "
                            "masked paths created deeper are caught only by the file tools",
                            w->ws->path, budget);
        w->partial = true;
        return false;
}

static int add_dir(WorkspaceWatch *w, size_t root, const char *rel) {
        if (w->fsub)
                return 1; /* the filesystem's mark covers every directory */
        _cleanup_close_ int dfd = open_beneath(w, root, rel, O_PATH | O_DIRECTORY);
        return add_dir_fd(w, root, rel, dfd);
}

/* Watches the directory dfd (root/rel; a negative errno from its open
 * passes through; the descriptor stays the caller's). */
static int add_dir_fd(WorkspaceWatch *w, size_t root, const char *rel, int dfd) {
        if (w->fsub)
                return 1;
        /* The directory beneath the root, watched through its descriptor
         * (the magic link is followed: the watch is on what was opened). */
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", dfd);
        int wd = dfd < 0 ? (dfd == -EXDEV ? -ELOOP : dfd) : hub_add_watch(w->sub, proc, WATCH_EVENTS & ~IN_DONT_FOLLOW);
        /* A directory gone or not ours meanwhile has nothing to watch; any
         * other failure (no watch left: the user's
         * fs.inotify.max_user_watches spent) is a hole, said in every
         * result and refused under lockdown (watch_gap()). */
        if (wd < 0 && wd != -ENOENT && wd != -ENOTDIR && wd != -EACCES && wd != -ELOOP && !w->failed_note[0]) {
                snprintf(w->failed_note, sizeof w->failed_note,
                         "masks over time: a directory under the listed paths could not be watched (%s%s); a masked "
                         "path created there stays readable to commands until the worker restarts (the file tools "
                         "still refuse it)",
                         strerror(-wd), wd == -ENOSPC ? ": fs.inotify.max_user_watches is spent" : "");
                log_warning("workspace %s: %s", w->ws->path, w->failed_note);
        }
        if (wd < 0)
                return wd;
        size_t at;
        if (find_wd(w, wd, &at))
                return rename_dir(w, at, root, rel);
        /* A new one, past the budget: given back. Looked at once the
         * watch is known to be new: one held already (a walk after lost
         * events meets every directory again) is never refused, or its
         * subtree would go unwalked. */
        if (!budget_left(w)) {
                hub_release_watch(w->sub, wd);
                return -ENOSPC;
        }
        /* Doubled, not grown by one: a realloc that copies (a sanitizer's
         * always does) made 100 000 directories quadratic (minutes). */
        if (w->n_dirs == w->dirs_cap) {
                size_t cap = w->dirs_cap ? w->dirs_cap * 2 : 64;
                WatchDir *nd = reallocarray(w->dirs, cap, sizeof *nd);
                if (!nd)
                        return -ENOMEM;
                w->dirs = nd;
                w->dirs_cap = cap;
        }
        char *r = strdup(rel);
        if (!r)
                return -ENOMEM;
        /* Kept in wd order (the kernel hands out rising numbers: nearly
         * always an append). */
        memmove(&w->dirs[at + 1], &w->dirs[at], (w->n_dirs - at) * sizeof *w->dirs);
        w->dirs[at] = (WatchDir){ .wd = wd, .root = root, .rel = r };
        w->n_dirs++;
        return 1;
}

static void seen(WorkspaceWatch *w, size_t root, const char *rel, bool is_dir, bool created);
static void walk_later(WorkspaceWatch *w, size_t root, const char *rel);
#define FRESH_DIRS_MAX 1024
#define SETTLE_DRAINS 8
#define SETTLE_MS 250

/* Events were lost (the queue overflowed: its instance is shared, so
 * another workspace's flood may have done it): the batch's end walks the
 * tree again instead of recycling every jail on the instance. */
static void lost(WorkspaceWatch *w) {
        w->lost = true;
}

/* A directory whose watch the kernel dropped (IN_IGNORED: it was
 * removed) leaves the list: each one made and removed again held an
 * entry, counted against the workspace's budget, for good, so a build's
 * scratch directory made and removed again and again made the watch
 * partial. Only the kernel's word frees one: a directory that moved out
 * of the listed paths may still be the jail's (its working directory, an
 * open descriptor, a mount that follows it), and keeps its watch. An
 * IN_IGNORED an overflow lost: the hub asks the kernel which watches live
 * (inotify-hub.c, reap_dead()), and the walk after it drops the rest
 * (prune_dirs()). */
static void drop_dir_at(WorkspaceWatch *w, size_t at) {
        free(w->dirs[at].rel);
        memmove(&w->dirs[at], &w->dirs[at + 1], (w->n_dirs - at - 1) * sizeof *w->dirs);
        w->n_dirs--;
}

static void prune_dirs(WorkspaceWatch *w) {
        size_t j = 0;
        for (size_t i = 0; i < w->n_dirs; i++) {
                if (hub_sub_holds(w->sub, w->dirs[i].wd))
                        w->dirs[j++] = w->dirs[i];
                else
                        free(w->dirs[i].rel);
        }
        w->n_dirs = j;
}

static void on_event(void *userdata, const struct inotify_event *ev) {
        WorkspaceWatch *w = userdata;
        if (ev->mask & IN_Q_OVERFLOW)
                return lost(w);
        if (ev->mask & IN_IGNORED) {
                size_t at;
                if (find_wd(w, ev->wd, &at))
                        drop_dir_at(w, at);
                return;
        }
        /* The instance is shared: a directory watched for other reasons too
         * (the protected paths) also brings events this watch did not ask for. */
        if (!ev->len || !(ev->mask & (IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)))
                return;
        size_t at;
        if (!find_wd(w, ev->wd, &at))
                return;
        WatchDir *wd = &w->dirs[at];
        _cleanup_free_ char *rel = wd->rel[0] ? path_join(wd->rel, ev->name) : strdup(ev->name);
        /* add_dir() may move w->dirs: keep what wd says. */
        if (rel)
                seen(w, wd->root, rel, ev->mask & IN_ISDIR, ev->mask & (IN_CREATE | IN_MOVED_TO));
}

/* A symlink made where a directory of that name would be masked (`.ssh ->
 * keys` under the default `.ssh` pattern): what the host writes below the
 * name lands in its target, which only the next jail's plan masks
 * (jail-facts.c, mask_link_target). The name is asked first
 * (glob_set_link_matters), then whether it is a link, reached without
 * following one. */
static bool masked_dir_link(const WorkspaceWatch *w, size_t root, const char *rel) {
        if (!glob_set_link_matters(w->set, rel))
                return false;
        _cleanup_close_ int fd = open_beneath(w, root, rel, O_PATH);
        return fd == -ELOOP;
}

#define LINK_LOOK_ENTRIES 4096

/* Whether the directory fd (taken) holds a symlink at any depth, read
 * without following one; a tree too big or too deep to read here, or one
 * that cannot be read, counts as holding one. *budget: entries left. */
static bool holds_link_fd(int fd, unsigned depth, unsigned *budget) {
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return true;
        }
        bool found = false;
        struct dirent *de;
        while (!found && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if ((*budget)-- == 0 || de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) {
                        found = true;
                        break;
                }
                if (de->d_type != DT_DIR)
                        continue;
                int sfd = depth < 32 ? chase_beneath(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NONBLOCK) : -ELOOP;
                found = sfd < 0 || holds_link_fd(sfd, depth + 1, budget);
        }
        closedir(d);
        return found;
}

/* A masked directory that appeared: whether it holds a link a start must
 * put aside (it was moved in whole: `mv stage secrets`, review 8). An
 * empty one needs no start: another workspace's jail making and removing
 * such a directory in a path both list writable started this workspace's
 * jail at each appearance, 40 a second (attack review 9). */
static bool dir_holds_link(const WorkspaceWatch *w, size_t root, const char *rel) {
        int fd = open_beneath(w, root, rel, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
        unsigned budget = LINK_LOOK_ENTRIES;
        if (fd == -ENOENT)
                return false; /* gone again: nothing to put aside */
        return fd < 0 || holds_link_fd(fd, 0, &budget);
}

/* root/rel was created or moved in (created), or written. */
static void seen(WorkspaceWatch *w, size_t root, const char *rel_in, bool is_dir, bool created) {
        _cleanup_free_ char *rel = strdup(rel_in);
        if (!rel)
                return;
        /* Asked only of a name the host runs or the protect list holds:
         * its walk of the list and its open were made for every file a
         * jail wrote. */
        int placeholder = -1;
        size_t hr = host_runs(w, rel, is_dir);
        if (hr && placeholder_once(w, root, rel, &placeholder))
                hr = 0;
        if (hr)
                note_host_run(w, root, rel, hr);
        /* A HEAD rewritten in place makes a repository too. */
        note_git(w, root, rel);
        if (!created)
                return; /* a write to an existing file: masked already if it matches */
        if (is_dir)
                w->structural = true;
        if (!w->protect_hit && unsealed_protect_match(w, root, rel, is_dir, &placeholder))
                w->protect_hit = strdup(rel);
        bool named = glob_set_masks(w->set, rel, is_dir);
        if (named || (!is_dir && masked_dir_link(w, root, rel))) {
                if (!w->hit) {
                        _cleanup_close_ int fd = named && !is_dir ? open_beneath(w, root, rel, O_PATH) : -EBADF;
                        bool link = !named || fd == -ELOOP;
                        const char *base = strrchr(rel, '/');
                        /* A link put aside (the start's own rename), or
                         * named as one: the start leaves it alone
                         * (jail-facts.c), so it is no news. */
                        if (link && host_aside_named(base ? base + 1 : rel))
                                return;
                        /* A directory too, when it holds a link: moved in
                         * whole (`mv stage secrets`). */
                        w->hit_link = link || (is_dir && dir_holds_link(w, root, rel));
                        w->hit = TAKE_PTR(rel);
                }
                return;
        }
        int r = is_dir ? add_dir(w, root, rel) : -ENOTDIR;
        if (r >= 0)
                /* A directory moved in whole may hold matches already. */
                walk_later(w, root, rel);
        else if (r == -EACCES || r == -EPERM)
                unreadable(w, root, rel, &w->hit);
}

/* The walk of a directory that appeared, at the batch's end: walked at
 * each event, a tree the jail renames back and forth kept the loop in one
 * drain (the queue never emptied) while every other workspace waited. */
static void walk_later(WorkspaceWatch *w, size_t root, const char *rel) {
        for (size_t i = 0; i < w->n_fresh_dirs; i++)
                if (w->fresh_dirs[i].root == root && streq(w->fresh_dirs[i].rel, rel))
                        return;
        WatchDir *n = w->n_fresh_dirs < FRESH_DIRS_MAX ? realloc(w->fresh_dirs, (w->n_fresh_dirs + 1) * sizeof *n) : NULL;
        char *r = n ? strdup(rel) : NULL;
        if (n)
                w->fresh_dirs = n;
        if (!r) {
                lost(w); /* many at once: the whole tree is walked instead */
                return;
        }
        w->fresh_dirs[w->n_fresh_dirs++] = (WatchDir){ .root = root, .rel = r };
}

static void fresh_dirs_free(WorkspaceWatch *w) {
        for (size_t i = 0; i < w->n_fresh_dirs; i++)
                free(w->fresh_dirs[i].rel);
        free(TAKE_PTR(w->fresh_dirs));
        w->n_fresh_dirs = 0;
}

/* The walk of the whole tree after lost events: what they would have
 * said, from the tree as it is: a masked path the jail does not mask (into
 * w->hit), a repository's names (git_suspect() tells new from old), a
 * protected name unsealed. Files the host runs later, written meanwhile,
 * are not told from old ones: not noted. Whether it missed something is
 * watch_settle()'s to tell. */
static void rewalk(WorkspaceWatch *w) {
        if (w->sub)
                prune_dirs(w); /* the removals an overflow lost (the kernel's word) */
        w->rewalking = true;
        for (size_t i = 0; i < w->n_roots; i++)
                if (add_dir(w, i, "") >= 0)
                        scan_dir(w, i, "", w->hit ? NULL : &w->hit, true);
        w->rewalking = false;
        /* Each directory read is looked at again: one that changed since
         * its read (or is no longer at its path) may have taken an entry
         * the walk had not met yet from one it had not read yet (a move
         * between two directories, between their reads). None changed:
         * the tree at the walk's end is the one read, and what changes
         * after it queues its events. */
        for (size_t i = 0; !w->walk_changed && i < w->n_walked; i++) {
                _cleanup_close_ int fd = open_beneath(w, w->walked[i].root, w->walked[i].rel, O_PATH | O_DIRECTORY);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || dir_changed(&w->walked[i].st, &st))
                        w->walk_changed = true;
        }
        walked_free(w);
}

void watch_before_spawn(Workspace *ws) {
        WorkspaceWatch *w = ws->watch;
        /* Unsettled still: the last jail ended before a quiet read said
         * its walk saw everything (a masked path it found ended it, or it
         * went idle), so a directory the walk missed may not be watched. */
        if (!w || !(w->rewalk_at_spawn || w->unsettled))
                return;
        log_info("workspace %s: walking the listed paths again before the next worker starts (the last walk after lost "
                 "events saw the tree change under it)",
                 ws->path);
        w->rewalk_at_spawn = false;
        rewalk(w);
        /* What it found the new jail's plan masks at its start; what it
         * says of repositories and protected names, the start's own walks;
         * what changed meanwhile is the host's doing, and its events
         * follow. */
        free(TAKE_PTR(w->hit));
        w->hit_link = false;
        free(TAKE_PTR(w->protect_hit));
        strv_free(TAKE_PTR(w->git_dirs));
        w->git_all = false;
        w->unsettled = w->walk_changed = false;
}

/* After each read of the queue: a masked path seen recycles the worker
 * (which may end this watch: nothing of w is used after). */
static void on_batch_end(void *userdata) {
        WorkspaceWatch *w = userdata;
        w->batch_seen = true;
        w->walk_changed = false;
        /* Walked one by one, unless the whole tree is walked below. */
        for (size_t i = 0; !w->lost && i < w->n_fresh_dirs; i++)
                scan_dir(w, w->fresh_dirs[i].root, w->fresh_dirs[i].rel, w->hit ? NULL : &w->hit, true);
        fresh_dirs_free(w);
        if (w->lost) {
                w->lost = false;
                log_info("workspace %s: watch events were lost (a queue overflow), or more directories appeared at once than are "
                         "walked one by one; walking the listed paths again",
                         w->ws->path);
                rewalk(w);
        }
        /* See watch_settle(). */
        w->unsettled = w->walk_changed || (w->unsettled && w->structural);
        w->structural = w->walk_changed = false;
        _cleanup_free_ char *hit = TAKE_PTR(w->hit);
        bool hit_link = w->hit_link;
        w->hit_link = false;
        _cleanup_free_ char *protect_hit = TAKE_PTR(w->protect_hit);
        _cleanup_strv_free_ char **git_dirs = TAKE_PTR(w->git_dirs);
        bool git_all = w->git_all;
        w->git_all = false;
        Workspace *ws = w->ws;
        /* Repositories first: the hook may end the jail (and this watch
         * with it: nothing of w is used after). */
        if (git_all || git_dirs)
                ws->watch_hooks->git_suspect(ws, git_all ? NULL : git_dirs);
        if (!hit && protect_hit && (ws->link || ws->starting)) {
                log_info("workspace %s: protected name %s appeared unsealed; recycling the worker so the jail seals it",
                         ws->path, protect_hit);
                char why[512];
                snprintf(why, sizeof why,
                         "a path the protect list names appeared (%s); the jail was rebuilt to make it read-only and this call was ended",
                         protect_hit);
                ws->watch_hooks->masked_appeared(ws, why);
                return;
        }
        if (!hit)
                return;
        bool running = ws->link || ws->draining || ws->starting;
        log_info("workspace %s: masked path %s appeared%s", ws->path, hit,
                 running ? "; recycling the worker so the jail masks it" : "");
        if (running) {
                char why[512];
                snprintf(why, sizeof why,
                         "a path matching the masks appeared (%s); the jail was rebuilt to mask it and this call was ended",
                         hit);
                (hit_link ? ws->watch_hooks->masked_link_appeared : ws->watch_hooks->masked_appeared)(ws, why);
        }
}

static const HubOps watch_ops = { .event = on_event, .batch_end = on_batch_end };

/* Whether a directory of rel (a root's) is masked: the jail sees it empty
 * whatever appears below it (the inotify watch never enters one). */
static bool below_masked(const WorkspaceWatch *w, const char *rel) {
        _cleanup_free_ char *d = strdup(rel);
        for (char *c = d; c && *c;) {
                char *slash = strchr(c, '/');
                if (slash)
                        *slash = 0;
                if (glob_set_masks(w->set, d, true))
                        return true;
                if (!slash)
                        break;
                *slash = '/';
                c = slash + 1;
        }
        return false;
}

static void on_fan_event(void *userdata, const char *dir, const char *name, uint64_t mask) {
        WorkspaceWatch *w = userdata;
        if (!dir)
                return lost(w);
        for (size_t i = 0; i < w->n_roots; i++) {
                if (!path_is_below_or_equal(dir, w->roots[i]))
                        continue;
                const char *d = dir + strlen(w->roots[i]);
                while (*d == '/')
                        d++;
                if (d[0] && below_masked(w, d))
                        continue;
                _cleanup_free_ char *rel = d[0] ? path_join(d, name) : strdup(name);
                if (rel)
                        seen(w, i, rel, mask & FAN_ONDIR, mask & (FAN_CREATE | FAN_MOVED_TO));
        }
}

static const FanOps fan_ops = { .event = on_fan_event, .batch_end = on_batch_end };

/* The daemon's fanotify group, made on first use; none (not root, a kernel
 * before 5.9, a seccomp filter) is not tried again. */
static FanHub *server_fan(Server *srv) {
        if (!srv->fan && srv->fan_error == 0) {
                int r = fan_new(srv->loop, &srv->fan);
                srv->fan_error = r < 0 ? r : 1;
                if (r < 0) {
                        srv->fan = NULL;
                        log_info("masks over time: no fanotify group (%s); each workspace's directories are watched with "
                                 "inotify, within its share of fs.inotify.max_user_watches",
                                 strerror(-r));
                }
        }
        return srv->fan;
}

/* A walk may miss an entry: readdir(3) of a directory the jail changes
 * meanwhile may pass over a name the jail moves (renamed back and forth
 * within it, or moved to a directory the walk has read already), and a
 * directory it could not open (renamed since it was listed, or since its
 * event) was not walked. Where events told of every change that does not
 * matter: each move queues its own event, read with the next batch. What
 * matters is a reply leaving between the two, after lost events (the walk
 * is all there is of them), or after a walk of a directory that moved
 * before it could be walked.
 *
 * So a walk that saw its tree change (scan_fd(): a directory changed while
 * it was read, an entry gone when opened; rewalk(): a directory changed
 * between its read and the walk's end) leaves the watch unsettled, and a
 * reply of its jails is held here: the queue is read again, and again,
 * until a read brings this watch nothing, or nothing but files' events
 * and walks that saw no change (no directory made or moved in since: the
 * tree stood still), up to SETTLE_DRAINS reads or SETTLE_MS (these reads
 * hold the loop). A tree that still moves
 * after them (a jail renaming without end) ends the jails (fail closed:
 * their calls answer worker_recycled), and the whole tree is walked again
 * before the next one starts, with no jail to move it
 * (watch_before_spawn()). A quiet workspace whose events were lost to
 * another's flood walks its tree after each overflow and is never held:
 * its walks see no change. */
void watch_settle(Workspace *ws) {
        uint64_t recycles = ws->counters.recycles, t0 = now_ms();
        /* Bounded in time too: these reads hold the loop, and each may walk
         * a big tree again (another overflow): a jail that keeps its tree
         * moving must not stall every workspace for SETTLE_DRAINS walks. */
        for (unsigned k = 0; k < SETTLE_DRAINS && now_ms() - t0 < SETTLE_MS && ws->watch && ws->watch->unsettled;
             k++) {
                ws->watch->batch_seen = false;
                if (ws->watch->fsub)
                        fan_drain(ws->srv->fan);
                else if (ws->hub)
                        hub_drain(ws->hub);
                /* A batch may have ended the jails (a masked path found),
                 * or the watch with them. */
                if (!ws->watch || ws->counters.recycles != recycles)
                        return;
                if (!ws->watch->batch_seen)
                        ws->watch->unsettled = false; /* nothing came: nothing moved */
        }
        WorkspaceWatch *w = ws->watch;
        if (!w || !w->unsettled)
                return;
        w->unsettled = false;
        w->rewalk_at_spawn = true;
        log_warning("workspace %s: its tree kept changing while the watch walked it after lost events (%llu ms of reads "
                    "of the queue); recycling the worker so that no masked path stays readable",
                    ws->path, (unsigned long long)(now_ms() - t0));
        ws->watch_hooks->masked_appeared(ws, "watch events were lost and the workspace's tree kept changing while it "
                                             "was checked again for masked paths; the jail was rebuilt so its masks "
                                             "are known and this call was ended");
}

void watch_drain(Workspace *ws) {
        if (ws->watch && ws->watch->fsub)
                fan_drain(ws->srv->fan);
}

/* fs.inotify.max_user_watches is per user, and shared with the user's
 * other programs (editors, language servers: the kernel says nothing of
 * what they hold) and the jails (a quarter, in their user namespace: see
 * docs/threat-model.md): the daemon takes half, shared by the sandboxed
 * workspaces it watches with inotify. Each may hold its even share, or
 * what the others leave of the half if that is more (most trees are
 * small: one big tree among many small ones is watched whole). A late
 * workspace still gets its share, so the daemon's total stays below the
 * whole limit. The limit is read once. */
size_t watch_budget(Workspace *ws) {
        static size_t limit;
        if (!limit) {
                _cleanup_fclose_ FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "re");
                unsigned long v = 0;
                limit = f && fscanf(f, "%lu", &v) == 1 && v > 0 ? v : 8192;
        }
        size_t n = 0, others = 0;
        for (Workspace *o = ws->srv->workspaces; o; o = o->next) {
                bool inotify = o->watch && !o->watch->fsub;
                n += o == ws || inotify;
                others += o != ws && inotify ? o->watch->n_dirs : 0;
        }
        size_t half = limit / 2, share = half / (n ? n : 1), left = half > others ? half - others : 0;
        share = share > left ? share : left;
        return share ? share : 1;
}

void watch_describe(Workspace *ws, const char **ret_kind, size_t *ret_used, size_t *ret_budget) {
        WorkspaceWatch *w = ws->watch;
        *ret_kind = !w ? NULL : w->fsub ? "fanotify" : "inotify";
        *ret_used = w && !w->fsub ? w->n_dirs : 0;
        *ret_budget = w && !w->fsub ? watch_budget(ws) : 0;
}

bool watch_active(Workspace *ws) {
        return ws->watch != NULL;
}

const char *watch_gap(Workspace *ws) {
        if (!ws->policy || !ws->policy->sandboxed)
                return NULL;
        /* watch_start() runs for every sandboxed policy: none means it failed. */
        if (!ws->watch)
                return WATCH_MISSING_NOTE;
        if (ws->watch->failed_note[0])
                return ws->watch->failed_note;
        return ws->watch->partial ? WATCH_PARTIAL_NOTE : NULL;
}

static void watch_stop_one(WorkspaceWatch *w) {
        hub_sub_free(w->sub);
        fan_sub_free(w->fsub);
        free(w->hit);
        free(w->protect_hit);
        fresh_dirs_free(w);
        walked_free(w);
        strv_free(w->git_dirs);
        glob_set_free(w->set);
        glob_set_free(w->protect);
        for (size_t i = 0; i < w->n_dirs; i++)
                free(w->dirs[i].rel);
        free(w->dirs);
        for (size_t i = 0; i < w->n_roots; i++)
                free(w->roots[i]);
        free(w->roots);
        free(w);
}

void watch_stop(Workspace *ws) {
        WorkspaceWatch *w = TAKE_PTR(ws->watch);
        if (w)
                watch_stop_one(w);
}

int watch_start(Workspace *ws) {
        const VsPolicy *p = ws->policy;
        WorkspaceWatch *w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->ws = ws;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        /* The policy's own compiled sets, kept by reference: the policy
         * may be replaced by an equal one while this watch lives. */
        int r = policy_sets_check(p, &err);
        if (r >= 0) {
                w->set = glob_set_ref(p->mask_set);
                w->protect = glob_set_ref(p->protect_set);
        }
        if (r < 0 ||
            !(w->roots = calloc(p->n_rw + p->n_ro + 1, sizeof(char *)))) {
                log_warning("workspace %s: cannot watch for masked paths: %s", ws->path,
                            err ? vs_error_message(err) : r < 0 ? strerror(-r) : "out of memory");
                hub_sub_free(w->sub);
                glob_set_free(w->set);
                glob_set_free(w->protect);
                free(w);
                return -EIO;
        }
        for (size_t pass = 0; pass < 2; pass++) {
                const VsPath *l = pass ? p->ro_paths : p->rw_paths;
                size_t n = pass ? p->n_ro : p->n_rw;
                for (size_t i = 0; i < n; i++)
                        if (l[i].resolved && (w->roots[w->n_roots] = strdup(l[i].resolved)))
                                w->n_roots++;
        }
        /* The workspace the jail sees read-only for want of a listed path. */
        if (jail_plan_uncovered_workspace(p) && (w->roots[w->n_roots] = strdup(p->workspace)))
                w->n_roots++;
        /* One mark per filesystem where the kernel lets the daemon (root);
         * else a watch per directory. */
        FanHub *fan = server_fan(ws->srv);
        r = fan ? fan_sub_new(fan, &fan_ops, w, w->roots, w->n_roots, &w->fsub) : -EPERM;
        if (r < 0 && fan)
                log_warning("workspace %s: its filesystem cannot be watched whole (%s); watching each directory with inotify",
                            ws->path, strerror(-r));
        if (r < 0) {
                InotifyHub *hub = workspace_hub(ws);
                r = hub ? hub_sub_new(hub, &watch_ops, w, &w->sub) : -EMFILE;
        }
        if (r < 0) {
                log_warning("workspace %s: cannot watch for masked paths: %s", ws->path, strerror(-r));
                watch_stop_one(w);
                return -EIO;
        }
        for (size_t i = 0; !w->fsub && i < w->n_roots; i++)
                if (add_dir(w, i, "") >= 0)
                        scan_dir(w, i, "", NULL, false);
        ws->watch = w;
        log_debug("workspace %s: watching %s for masked paths", ws->path,
                  w->fsub ? "the filesystem (fanotify)" : "each directory (inotify)");
        return 0;
}

/* The daemon's inotify instances are few and shared (inotify-hub.h): a
 * workspace takes the next of INOTIFY_HUBS in turn, so a queue overflow
 * caused by one busy tree touches only the workspaces on its instance.
 * Made on first use; one that could not be made is tried again next time. */
InotifyHub *workspace_hub(Workspace *ws) {
        if (ws->hub)
                return ws->hub;
        Server *srv = ws->srv;
        unsigned k = srv->hub_next++ % INOTIFY_HUBS;
        if (!srv->hubs[k] && hub_new(srv->loop, &srv->hubs[k]) < 0) {
                srv->hubs[k] = NULL;
                return NULL;
        }
        return ws->hub = srv->hubs[k];
}

void watch_hubs_free(Server *srv) {
        for (size_t k = 0; k < INOTIFY_HUBS; k++)
                hub_free(TAKE_PTR(srv->hubs[k]));
        fan_free(TAKE_PTR(srv->fan));
}
