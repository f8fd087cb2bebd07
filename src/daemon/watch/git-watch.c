/* SPDX-License-Identifier: MIT */
/* Repositories a jail makes, in the daemon (git-watch.h). */
#include "git-watch.h"

#include <string.h>

#include "git-scan.h"
#include "glob.h"
#include "mask-walk.h"
#include "policy.h"
#include "server.h"
#include "strv.h"
#include "time-util.h"
#include "log.h"
#include "path-util.h"
#include "launch.h"
#include "worker-link.h"
#include "workspace.h"

struct GitSweep {
        uv_work_t work;  /* first: the thread pool hands this back */
        Workspace *ws;   /* NULL once the workspace went */
        VsGitRepos *base;
        char **roots;
        char **ro; /* the read-only listed paths: a repository there is not the jail's */
        char **sealed; /* nor one where the jail saw an empty or read-only mount */
        /* The start walk's lanes and key (jail-facts.c's walk_rw), so the
         * sweep reads only the directories changed since that walk and
         * leaves the cache current for the next start: copies, the policy
         * may go meanwhile. cache NULL: not to be had, git_scan() instead. */
        VsGlobSet *mask, *protect;
        char **mask_patterns, **protect_patterns;
        WalkCacheUse *cache;
        void (*note)(Workspace *ws, const char *path);
        void (*done)(Workspace *ws);
        /* A root daemon's monitor puts aside what lies below the workspace
         * (link_monitor_maker; its workspace a copy), or NULL: this process. */
        MonitorMaker maker;
        char *workspace;
        const VsHostMaker *by;
        /* the thread's result */
        char **moved;    /* pairs: what, where it went */
        char **failed;   /* what could not be put aside */
        char **links_moved; /* pairs: a protected link's path, where what replaced it went ("": removed) */
        size_t dirs;
        uint64_t us;
};

static void base_free(Workspace *ws) {
        if (ws->git_base) {
                git_repos_done(ws->git_base);
                free(TAKE_PTR(ws->git_base));
        }
        strv_free(TAKE_PTR(ws->git_sealed));
}

void git_watch_free(Workspace *ws) {
        base_free(ws);
        if (ws->git_sweep)
                TAKE_PTR(ws->git_sweep)->ws = NULL; /* finishes on its own */
}

void git_watch_base(Workspace *ws) {
        base_free(ws);
        /* Only where the jail writes this host's files (host_files: local, docker). */
        const VsPolicy *p = ws->policy;
        if (!p || !p->sandboxed || !ws->link || !ws->link->launch ||
            !p->backend->host_files)
                return;
        /* The plan's look (git-scan.h), taken on the thread pool before
         * the repository and placeholders were made: one walk. */
        VsLaunch *l = ws->link->launch;
        if (!l->git_base) {
                log_warning("workspace %s: its repositories were not listed; repositories the jail makes are put aside "
                            "only if listed later",
                            ws->path);
                return;
        }
        log_debug("workspace %s: %zu repositories in %zu directories", ws->path, l->git_base->n, l->git_base->dirs);
        if (l->git_base->truncated)
                log_warning("workspace %s: more than %d directories, or deeper than %d: repositories below those are "
                            "not looked for (git-scan.h)",
                            ws->path, GIT_SCAN_MAX_DIRS, GIT_SCAN_MAX_DEPTH);
        ws->git_base = TAKE_PTR(l->git_base);
        /* What this jail sees sealed, it cannot make a repository in: a
         * host's repository in a masked or protected directory is left
         * alone (an attack review: the sweep put aside a host `git init`
         * in a masked secrets/ and in .vscode/). The directories that are
         * mount points in the jail only (launch.h); and only with no older
         * jail still running, which may have seen them writable. */
        if (!ws->draining && ws->n_old_jails == 0)
                ws->git_sealed = TAKE_PTR(l->sealed_dirs);
}

/* The policy's resolved listed paths of one kind, NULL-terminated (NULL:
 * out of memory). */
static char **listed(const VsPolicy *p, bool ro) {
        char **l = calloc(1, sizeof(char *));
        for (size_t i = 0; l && i < (ro ? p->n_ro : p->n_rw); i++) {
                const char *r = ro ? p->ro_paths[i].resolved : p->rw_paths[i].resolved;
                if (r && strv_extend(&l, r) < 0) {
                        strv_free(l);
                        l = NULL;
                }
        }
        return l;
}

/* Whether the jail could have made the repository g: only where it writes
 * (the innermost listed path holding it a writable one). One in a
 * read-only listed path below a writable root is the host's (an attack
 * review: the host's `git init` there while a jail ran was put aside by
 * the sweep at its end). */
static bool ws_could_write(const char *dir, void *ud) {
        const Workspace *ws = ud;
        _cleanup_strv_free_ char **rw = listed(ws->policy, false), **ro = listed(ws->policy, true);
        if (!rw || !ro) /* out of memory: as before */
                return !path_below_any(dir, ws->git_sealed);
        return path_jail_could_write(dir, rw, ro, ws->git_sealed);
}

static bool jail_could_make(const Workspace *ws, const VsGitRepo *g) {
        return ws_could_write(g->dir, (void *)ws);
}

/* git_links_put_aside's filter on the thread pool: the sweep's own copies. */
static bool sweep_could_write(const char *dir, void *ud) {
        const GitSweep *s = ud;
        return path_jail_could_write(dir, s->roots, s->ro, s->sealed);
}

/* What replaced a protected link, put aside (pairs: moved), logged and
 * noted as a repository put aside is. */
static void links_note(Workspace *ws, char **moved, void (*note)(Workspace *ws, const char *path)) {
        for (char **m = moved; m && m[0] && m[1]; m += 2) {
                log_warning("workspace %s: the jail put its own entry in place of the protected symlink %s (the host "
                            "would take it for its own): %s%s",
                            ws->path, m[0], *m[1] ? "put aside as " : "removed", m[1]);
                note(ws, m[0]);
                if (*m[1])
                        note(ws, m[1]);
        }
}

static char *what_of(const VsGitRepo *g) {
        return g->kind == VS_GIT_BARE ? path_join(g->dir, "HEAD") : path_join(g->dir, ".git");
}

bool git_watch_new(Workspace *ws, const char *dir, VsGitRepos *ret_new) {
        if (!ws->git_base || !ws->policy)
                return false;
        VsGitRepos now = { 0 };
        /* The parent first: a new DIR/.git is reported as that. */
        _cleanup_free_ char *up = strdup(dir);
        char *slash = up ? strrchr(up, '/') : NULL;
        if (slash && slash != up) {
                *slash = 0;
                for (size_t i = 0; i < ws->policy->n_rw; i++)
                        if (ws->policy->rw_paths[i].resolved && path_is_below_or_equal(up, ws->policy->rw_paths[i].resolved)) {
                                (void)git_scan_dir(up, &now);
                                break;
                        }
        }
        (void)git_scan_dir(dir, &now);
        /* Those not at the base, moved out of now into *ret_new. */
        size_t k = 0;
        for (size_t i = 0; i < now.n; i++) {
                if (git_repos_has(ws->git_base, &now.items[i]) || !jail_could_make(ws, &now.items[i])) {
                        free(now.items[i].dir);
                        continue;
                }
                now.items[k++] = now.items[i];
        }
        now.n = k;
        if (!k) {
                git_repos_done(&now);
                return false;
        }
        *ret_new = now;
        return true;
}

size_t git_watch_put_aside(Workspace *ws, const VsGitRepos *repos, void (*note)(Workspace *ws, const char *path)) {
        size_t n = 0;
        MonitorMaker maker;
        bool by = repos->n && link_monitor_maker(ws, &maker);
        for (size_t i = 0; i < repos->n; i++) {
                const VsGitRepo *g = &repos->items[i];
                _cleanup_free_ char *what = what_of(g), *moved = NULL;
                _cleanup_(vs_error_freep) VsError *err = NULL;
                int r = git_quarantine(g, by ? &maker.maker : NULL, &moved, &err);
                if (r == -ESTALE)
                        continue;
                if (r < 0) {
                        log_warning("workspace %s: a repository the jail made, %s, could not be put aside: %s", ws->path,
                                    what ? what : g->dir, err ? vs_error_message(err) : strerror(-r));
                        continue;
                }
                log_warning("workspace %s: the jail made a repository the host's git would use (its config and hooks "
                            "are the agent's): %s put aside as %s",
                            ws->path, what ? what : g->dir, moved);
                if (what)
                        note(ws, what);
                note(ws, moved);
                n++;
        }
        return n;
}

size_t git_watch_sweep(Workspace *ws, void (*note)(Workspace *ws, const char *path)) {
        if (!ws->git_base || !ws->policy)
                return 0;
        VsGitRepos now = { 0 }, fresh = { 0 };
        (void)git_scan_policy(ws->policy, false, &now);
        for (size_t i = 0; i < now.n; i++)
                if (!git_repos_has(ws->git_base, &now.items[i]) && jail_could_make(ws, &now.items[i])) {
                        VsGitRepo *n = realloc(fresh.items, (fresh.n + 1) * sizeof *n);
                        if (!n)
                                break;
                        fresh.items = n;
                        n[fresh.n++] = now.items[i];
                        now.items[i].dir = NULL;
                }
        size_t k = git_watch_put_aside(ws, &fresh, note);
        git_repos_done(&fresh);
        git_repos_done(&now);
        _cleanup_strv_free_ char **moved = NULL;
        MonitorMaker maker;
        bool by = ws->git_base->n_links && link_monitor_maker(ws, &maker);
        k += git_links_put_aside(ws->git_base, by ? &maker.maker : NULL, ws_could_write, NULL, ws, &moved, NULL);
        links_note(ws, moved, note);
        return k;
}

/* ---- the sweep at a jail's end, on the thread pool ---- */

/* Reads only what the sweep owns (its base and roots): the workspace may
 * change its policy, or go, meanwhile. */
static void sweep_work(uv_work_t *w) {
        GitSweep *s = (GitSweep *)w;
        uint64_t t0 = now_us();
        VsGitRepos now = { 0 };
        for (char **r = s->roots; *r; r++) {
                /* As walk_rw walks each writable root (the same sets,
                 * patterns and other roots: the same cache key). */
                bool prot = s->protect_patterns && s->protect_patterns[0];
                MaskList m = { 0 }, p = { 0 };
                size_t before = now.n, before_dirs = now.dirs;
                bool before_cut = now.truncated;
                int k = s->cache ? mask_walk_all(*r, s->mask, prot ? s->protect : NULL, prot ? s->roots : NULL,
                                                s->mask_patterns, prot ? s->protect_patterns : NULL, s->cache, &now, &m,
                                                &p, NULL)
                                : -EINVAL;
                mask_list_done(&m);
                mask_list_done(&p);
                if (k >= 0)
                        continue;
                /* A walk the masks' lanes failed (an unreadable directory,
                 * too many matches): git's own scan, which skips those. */
                for (size_t i = before; i < now.n; i++)
                        free(now.items[i].dir);
                now.n = before;
                now.dirs = before_dirs;
                now.truncated = before_cut;
                (void)git_scan(*r, &now);
        }
        s->dirs = now.dirs;
        for (size_t i = 0; i < now.n; i++) {
                const VsGitRepo *g = &now.items[i];
                if (git_repos_has(s->base, g) || !path_jail_could_write(g->dir, s->roots, s->ro, s->sealed))
                        continue;
                _cleanup_free_ char *what = what_of(g), *moved = NULL;
                int r = git_quarantine(g, s->by, &moved, NULL);
                if (r == -ESTALE)
                        continue;
                if (r < 0 || !what) {
                        (void)strv_extend(&s->failed, what ? what : g->dir);
                        continue;
                }
                (void)strv_extend(&s->moved, what);
                (void)strv_extend(&s->moved, moved);
        }
        git_repos_done(&now);
        (void)git_links_put_aside(s->base, s->by, sweep_could_write, NULL, s, &s->links_moved, &s->failed);
        s->us = now_us() - t0;
}

static void sweep_after(uv_work_t *w, int status) {
        GitSweep *s = (GitSweep *)w;
        Workspace *ws = s->ws;
        if (ws) {
                ws->git_sweep = NULL;
                for (char **f = s->failed; f && *f; f++)
                        log_warning("workspace %s: what the jail made at %s could not be put aside", ws->path, *f);
                for (char **m = s->moved; m && m[0] && m[1]; m += 2) {
                        log_warning("workspace %s: the jail made a repository the host's git would use (its config and "
                                    "hooks are the agent's): %s put aside as %s",
                                    ws->path, m[0], m[1]);
                        s->note(ws, m[0]);
                        s->note(ws, m[1]);
                }
                links_note(ws, s->links_moved, s->note);
                log_debug("workspace %s: repositories swept in %zu directories (%.1f ms, on the thread pool)", ws->path,
                          s->dirs, (double)s->us / 1000.0);
        }
        git_repos_done(s->base);
        free(s->base);
        strv_free(s->roots);
        strv_free(s->ro);
        strv_free(s->sealed);
        glob_set_free(s->mask);
        glob_set_free(s->protect);
        strv_free(s->mask_patterns);
        strv_free(s->protect_patterns);
        strv_free(s->moved);
        strv_free(s->failed);
        strv_free(s->links_moved);
        free(s->workspace);
        void (*done)(Workspace *) = s->done;
        free(s);
        if (ws)
                done(ws);
}

bool git_watch_sweep_start(Workspace *ws, void (*note)(Workspace *ws, const char *path), void (*done)(Workspace *ws)) {
        if (!ws->git_base || !ws->policy || ws->git_sweep)
                return false;
        GitSweep *s = calloc(1, sizeof *s);
        char **roots = calloc(1, sizeof(char *));
        int r = s && roots ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < ws->policy->n_rw; i++)
                if (ws->policy->rw_paths[i].resolved)
                        r = strv_extend(&roots, ws->policy->rw_paths[i].resolved);
        char **ro = r >= 0 ? listed(ws->policy, true) : NULL;
        if (r >= 0 && !ro)
                r = -ENOMEM;
        if (r >= 0) {
                *s = (GitSweep){ .ws = ws, .base = ws->git_base, .roots = roots, .ro = TAKE_PTR(ro), .note = note, .done = done };
                s->sealed = strv_copy(ws->git_sealed); /* NULL (none, or out of memory): every new one put aside */
                const VsPolicy *p = ws->policy;
                if (ws->srv->walk_cache.dir && policy_sets_check(p, NULL) >= 0 &&
                    (!p->mask || (s->mask_patterns = strv_copy(p->mask))) &&
                    (!p->protect || (s->protect_patterns = strv_copy(p->protect)))) {
                        s->mask = p->mask_set ? glob_set_ref(p->mask_set) : NULL;
                        s->protect = p->protect_set ? glob_set_ref(p->protect_set) : NULL;
                        s->cache = &ws->srv->walk_cache;
                }
                if (link_monitor_maker(ws, &s->maker) && (s->workspace = strdup(p->workspace))) {
                        s->maker.maker.workspace = s->workspace;
                        s->by = &s->maker.maker;
                }
                r = uv_queue_work(ws->srv->loop, &s->work, sweep_work, sweep_after);
        }
        if (r < 0) {
                /* On the loop, then. */
                strv_free(ro);
                if (s) {
                        strv_free(s->ro);
                        strv_free(s->sealed);
                        glob_set_free(s->mask);
                        glob_set_free(s->protect);
                        strv_free(s->mask_patterns);
                        strv_free(s->protect_patterns);
                        free(s->workspace);
                }
                free(s);
                strv_free(roots);
                git_watch_sweep(ws, note);
                return false;
        }
        ws->git_base = NULL; /* the sweep's now; the next jail brings its own */
        ws->git_sweep = s;
        return true;
}
