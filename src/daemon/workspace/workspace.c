/* SPDX-License-Identifier: MIT */
/* Per-workspace state: the policy from vectora.toml (re-read when the file
 * changes, checked by one stat per call), the worker's lifecycle (none ->
 * spawning -> ready -> idle-ended), draining on policy changes, crash
 * restarts under a rate limit. */
#include <limits.h>
#include <signal.h>
#include <malloc.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "api-result.h"
#include "approval.h"
#include "audit.h"
#include "cgroup.h"
#include "git-scan.h"
#include "git-watch.h"
#include "jail-session.h"
#include "json-util.h"
#include "log.h"
#include "path-util.h"
#include "policy-json.h"
#include "protect.h"
#include "proxy.h"
#include "request.h"
#include "server.h"
#include "strv.h"
#include "watch.h"
#include "worker-link.h"
#include "workspace.h"

static const char *workspace_state_name(WorkspaceState s) {
        switch (s) {
        case WS_UNSANDBOXED: return "unsandboxed";
        case WS_SANDBOXED: return "sandboxed";
        default: return "refused";
        }
}

void workspace_set_error(Workspace *ws, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (s) {
                free(ws->last_error);
                ws->last_error = s;
                ws->last_error_ms = now_ms();
        }
}

static void fail_queue(Workspace *ws, ApiError code, const char *msg) {
        /* No start is wanted after a failed one, but an eager start that
         * could not be made (eager_later) is tried again. */
        if (!ws->eager_retry)
                ws->start_eager = false;
        while (ws->queue) {
                Call *c = ws->queue;
                ws->queue = c->next;
                c->next = NULL;
                ws->n_queued--;
                c->done(c, NULL, NULL, code, msg);
        }
        ws->queue_tail = NULL;
}

/* The current link stops taking calls; it ends once its calls are answered. */
static void drain_current(Workspace *ws, const char *why) {
        WorkerLink *l = TAKE_PTR(ws->link);
        if (!l)
                return;
        if (l->state != LINK_READY || l->n_inflight == 0) {
                /* Nothing to finish (a spawning link has no calls of its own;
                 * the queue moves on to the next link). */
                link_end(l, API_ERROR_WORKER_RECYCLED, why);
                return;
        }
        /* Terminals and background processes end now, not when the calls do. */
        jail_sessions_end(l, API_ERROR_WORKER_RECYCLED, why);
        l->draining = true;
        l->next_draining = ws->draining;
        ws->draining = l;
}

static void spawn(Workspace *ws);

static void on_eager_timer(uv_timer_t *t);

/* A jail is wanted: calls wait for one, or a masked link appeared
 * (masked_link_appeared) and the next start is to put it aside now, at
 * once: a start held back for a second left the link on disk, for the
 * host to write through, that long (attack review 10 measured it there
 * 55 % of the time against an agent calling once a second). Only a start
 * that could not be made (no worker free, the restart cap) is tried again
 * EAGER_START_GAP_MS later, instead of being dropped until the next call
 * (review 10). It waits on the idle timer, which only a running jail
 * otherwise uses (and this is wanted only while none runs); a call coming
 * meanwhile starts the jail at once, and puts aside as well. */
static bool start_wanted(Workspace *ws) {
        if (ws->link || ws->srv->shutting_down)
                return false;
        if (ws->queue)
                return true;
        if (!ws->start_eager)
                return false;
        uint64_t now = now_ms();
        if (!ws->eager_retry || now >= ws->eager_next_ms)
                return true;
        uv_timer_start(&ws->idle_timer, on_eager_timer, ws->eager_next_ms - now, 0);
        return false;
}

/* An eager start that could not be made now: tried again later. */
static void eager_later(Workspace *ws) {
        if (!ws->start_eager)
                return;
        ws->eager_retry = true;
        ws->eager_next_ms = now_ms() + EAGER_START_GAP_MS;
        log_debug("workspace %s: the start that puts aside a masked link could not be made now; trying again in %d ms",
                 ws->path, EAGER_START_GAP_MS);
        uv_timer_start(&ws->idle_timer, on_eager_timer, EAGER_START_GAP_MS, 0);
}

static void on_eager_timer(uv_timer_t *t) {
        Workspace *ws = t->data;
        if (start_wanted(ws))
                spawn(ws);
}
_Static_assert(sizeof(((Server *)0)->spawn_owners) / sizeof(uid_t) == MAX_CONCURRENT_SPAWNS,
               "a slot's owner for each slot");
static void spawn_slot_release(Server *srv, uid_t owner);
static bool spawn_slot_free_for(Server *srv, uid_t owner);

static bool same_stat(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static bool policy_same(const VsPolicy *a, const VsPolicy *b) {
        if (!a || !b)
                return false;
        json_t *ja = policy_to_json(a), *jb = policy_to_json(b);
        bool same = ja && jb && json_equal(ja, jb);
        json_decref(ja);
        json_decref(jb);
        return same;
}

/* Replaces the serving policy; a start reading the old one on the thread
 * pool keeps it until it is done (link_start_keep_policy). */
static void policy_replace(Workspace *ws, VsPolicy *p) {
        VsPolicy *old = TAKE_PTR(ws->policy);
        if (ws->starting)
                link_start_keep_policy(ws->starting, old);
        else
                policy_free(old);
        ws->policy = p;
        /* The proxy process decides with the rules it was last sent. */
        if (p)
                proxy_policy_changed(ws);
}

/* The workspace stops serving: its policy refused (or its approval record
 * not durable); each call meets err until a reload serves again. */
static void refuse(Workspace *ws, int r, VsError *e) {
        free(ws->pending);
        ws->pending = NULL;
        bool was_refused = ws->state == WS_REFUSED;
        bool same_error = was_refused && ws->config_error && e &&
                          streq(vs_error_message(ws->config_error), vs_error_message(e));
        vs_error_free(ws->config_error);
        ws->config_error = e ? e : NULL;
        if (!ws->config_error)
                vs_error_set_kind(&ws->config_error, r, api_error_name(API_ERROR_CONFIG_INVALID), "%s: %s", VS_CONFIG_FILE, strerror(-r));
        if (same_error)
                return;
        policy_replace(ws, NULL);
        ws->state = WS_REFUSED;
        ws->generation++;
        log_warning("workspace %s: refused: %s", ws->path, vs_error_message(ws->config_error));
        workspace_set_error(ws, "%s", vs_error_message(ws->config_error));
        watch_stop(ws);
        drain_current(ws, "the configuration became invalid");
        fail_queue(ws, API_ERROR_CONFIG_INVALID, vs_error_message(ws->config_error));
}

/* ---- the approval record made durable off the loop ----
 *
 * reload() records the approved policy (first sight, a tightening) written
 * and renamed at once but not synced (approval_evaluate_unsynced); its
 * fsyncs run here on the thread pool. Meanwhile the jail starts, but no
 * call is sent to the worker (workspace_submit, link_ready): an agent that
 * loosened vectora.toml before a crash took the record would make the
 * loosened file the next baseline. A failed sync refuses the workspace;
 * record_unsynced stays, so the next call's reload syncs again. */
struct RecordSync {
        uv_work_t req;
        Workspace *ws; /* NULL once the workspace is freed */
        char *store, *root;
        int r;
        VsError *err;
};

static void record_sync_start(Workspace *ws);

static void record_sync_work(uv_work_t *req) {
        RecordSync *s = req->data;
        s->r = approval_sync(s->store, s->root, &s->err);
}

static void record_sync_free(RecordSync *s) {
        if (!s)
                return;
        vs_error_free(s->err);
        free(s->store);
        free(s->root);
        free(s);
}

static void link_ready(Workspace *ws, WorkerLink *l);

static void record_sync_done(uv_work_t *req, int status) {
        RecordSync *s = req->data;
        Workspace *ws = s->ws;
        if (ws) {
                ws->record_sync = NULL;
                if (status < 0 && s->r >= 0)
                        s->r = status;
                if (s->r < 0) {
                        VsError *e = TAKE_PTR(s->err);
                        if (!e)
                                vs_error_set_kind(&e, s->r, "sandbox_unavailable",
                                                  "cannot make the approved policy of %s durable: %s", ws->path,
                                                  strerror(-s->r));
                        ws->record_again = false;
                        refuse(ws, s->r, e);
                } else if (ws->record_again)
                        record_sync_start(ws); /* written again meanwhile */
                else {
                        ws->record_unsynced = false;
                        if (ws->link && ws->link->state == LINK_READY)
                                link_ready(ws, ws->link);
                }
        }
        record_sync_free(s);
}

static void record_sync_start(Workspace *ws) {
        if (ws->record_sync) {
                ws->record_again = true;
                return;
        }
        ws->record_again = false;
        RecordSync *s = calloc(1, sizeof *s);
        int r = -ENOMEM;
        if (s && (s->store = strdup(ws->srv->opt.state_dir)) && (s->root = strdup(ws->path))) {
                s->ws = ws;
                s->req.data = s;
                r = uv_queue_work(ws->srv->loop, &s->req, record_sync_work, record_sync_done);
        }
        if (r < 0) {
                record_sync_free(s);
                VsError *e = NULL;
                vs_error_set_kind(&e, r, "sandbox_unavailable", "cannot make the approved policy of %s durable: %s",
                                  ws->path, strerror(-r));
                return refuse(ws, r, e);
        }
        ws->record_sync = s;
}

static void reload(Workspace *ws) {
        _cleanup_free_ char *cfg = path_join(ws->path, VS_CONFIG_FILE);
        struct stat st;
        bool exists = cfg && stat(cfg, &st) == 0;
        /* Noted before reading: a change during the read shows up next call. */
        ws->cfg_exists = exists;
        if (exists)
                ws->cfg_st = st;
        VsPolicy *p = NULL;
        VsError *e = NULL;
        _cleanup_free_ char *pending = NULL;
        /* What serves: the file's policy, or the approved one while a
         * loosening waits for the host's approval (approval.h). */
        bool unsynced = false;
        uint64_t wait_ms = 0;
        int r = approval_evaluate_unsynced(ws->srv->opt.state_dir, ws->path, &p, &pending, &unsynced, &wait_ms, &e);
        ws->settle_ms = 0;
        if (r == -EAGAIN && wait_ms > 0) {
                /* Perhaps half written: read again in wait_ms (not before,
                 * however many calls wait: refresh), the calls waiting on
                 * the workspace's one timer, each a second at most
                 * (tools.c). */
                ws->settle_ms = wait_ms;
                ws->settle_until_ms = now_ms() + wait_ms;
                return;
        }
        if (r >= 0 && !streq_ptr(pending, ws->pending)) {
                if (pending)
                        log_warning("workspace %s: %s", ws->path, pending);
                free(ws->pending);
                ws->pending = TAKE_PTR(pending);
        }
        if (r < 0)
                return refuse(ws, r, e);
        /* Written now (or a sync that failed before): durable before any
         * call reaches the worker. */
        if (unsynced) {
                ws->record_unsynced = true;
                record_sync_start(ws);
        } else if (ws->record_unsynced && !ws->record_sync)
                record_sync_start(ws);
        if (ws->record_unsynced && !ws->record_sync) {
                policy_free(p); /* the sync could not start: refused (record_sync_start) */
                return;
        }
        vs_error_free(ws->config_error);
        ws->config_error = NULL;
        if (ws->state != WS_REFUSED && policy_same(ws->policy, p)) {
                policy_replace(ws, p);
                return;
        }
        bool first = ws->generation == 0;
        policy_replace(ws, p);
        ws->state = p->sandboxed ? WS_SANDBOXED : WS_UNSANDBOXED;
        ws->generation++;
        if (!first)
                log_info("workspace %s: policy changed (generation %llu, %s)", ws->path,
                         (unsigned long long)ws->generation, workspace_state_name(ws->state));
        watch_stop(ws);
        drain_current(ws, "the policy changed");
        /* Masks over time, and files the host runs later being written. */
        if (p->sandboxed)
                watch_start(ws);
        if (start_wanted(ws))
                spawn(ws);
}

/* known: vectora.toml's stat made during this call already (the approval
 * memo's lstat of a regular file), or st_mode 0. */
static void refresh(Workspace *ws, const struct stat *known) {
        _cleanup_free_ char *cfg = NULL;
        struct stat st;
        bool exists;
        if (S_ISREG(known->st_mode)) {
                st = *known;
                exists = true;
        } else {
                cfg = path_join(ws->path, VS_CONFIG_FILE);
                exists = cfg && stat(cfg, &st) == 0;
        }
        /* A refused workspace is looked at again on every call: its cause
         * may have been outside the file (a full state directory), and the
         * next call after the space returns must not stay refused. */
        /* So is one with a loosening pending: the host may approve it
         * through another daemon that shares the state directory, or the
         * CLI. */
        /* Settling: read again once, when it may have settled. */
        if (ws->settle_ms && now_ms() < ws->settle_until_ms)
                return;
        if (ws->generation > 0 && ws->state != WS_REFUSED && !ws->pending && !ws->settle_ms && exists == ws->cfg_exists &&
            (!exists || same_stat(&st, &ws->cfg_st)))
                return;
        reload(ws);
}

/* Unsandboxed policies carry no [sandbox] values: the default applies. */
static uint64_t idle_timeout_ms(Workspace *ws) {
        uint64_t s = ws->policy && ws->policy->idle_timeout_s ? ws->policy->idle_timeout_s : 600;
        return s * 1000;
}

static void on_idle_timer(uv_timer_t *t) {
        Workspace *ws = t->data;
        WorkerLink *l = ws->link;
        /* An open terminal or a running background process is work. */
        if (!l || l->state != LINK_READY || l->n_inflight > 0 || l->n_sessions > 0 || !ws->policy)
                return;
        uint64_t limit = idle_timeout_ms(ws);
        uint64_t idle = now_ms() - l->last_used_ms;
        if (idle + 5 < limit) {
                uv_timer_start(&ws->idle_timer, on_idle_timer, limit - idle, 0);
                return;
        }
        log_info("workspace %s: worker pid %d idle for %llu s; ending it", ws->path, (int)l->pid,
                 (unsigned long long)(idle / 1000));
        ws->counters.idle_ends++;
        ws->srv->counters.idle_ends++;
        ws->link = NULL;
        link_end(l, API_ERROR_WORKER_RECYCLED, "idle timeout");
}

/* A file the host runs later (.git below the root, .envrc, .vscode/tasks.json,
 * ...) was created or written under the workspace's listed paths. */
/* The note of path: refreshed when noted already (a burst of writes to
 * one file keeps the ring for other files: *ret_new false), else a new
 * one. */
static HostRunNote *note_host_run(Workspace *ws, const char *path, bool *ret_new) {
        *ret_new = false;
        for (size_t i = 0; i < HOST_RUN_NOTES; i++)
                if (ws->host_run[i].path && streq(ws->host_run[i].path, path)) {
                        ws->host_run[i].us = now_us();
                        ws->host_run[i].reported = false;
                        return &ws->host_run[i];
                }
        HostRunNote *n = &ws->host_run[ws->n_host_run++ % HOST_RUN_NOTES];
        free(n->path);
        n->path = strdup(path);
        n->us = now_us();
        n->reported = false;
        n->keep = false;
        *ret_new = true;
        return n;
}

static HostRunNote *note_and_tell(Workspace *ws, const char *path);

static void workspace_note_host_run(Workspace *ws, const char *path) {
        (void)note_and_tell(ws, path);
}

/* A link a start put aside (and where it went): noted as any host-run
 * file, and kept until a result lists it (ws_notes_unlisted). */
static void note_put_aside(Workspace *ws, const char *path) {
        note_and_tell(ws, path)->keep = true;
}

static HostRunNote *note_and_tell(Workspace *ws, const char *path) {
        bool fresh;
        HostRunNote *n = note_host_run(ws, path, &fresh);
        if (!fresh)
                return n;
        log_info("workspace %s: %s was written under the listed paths (a file the host runs later)", ws->path, path);
        if (ws->refs)
                return n; /* the calls in flight list it, in their results and audit records */
        /* Written with no call in flight (a background process, a
         * terminal): the audit log has it now, the next result lists it. */
        struct stat st;
        json_t *target = json_string(path), *files = json_pack("[s]", path);
        AuditRecord a = {
                .uid = stat(ws->path, &st) == 0 ? st.st_uid : 0, /* the workspace's owner: no client asked */
                .workspace = ws->path,
                .tool = "host_run",
                .target = target,
                .sandboxed = ws->policy && ws->policy->sandboxed,
                .generation = ws->generation,
                .outcome = "ok",
                .host_run = files,
        };
        if (target && files)
                audit_write(&a);
        json_decref(target);
        json_decref(files);
        return n;
}

json_t *workspace_host_run_since(Workspace *ws, uint64_t since_us) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < HOST_RUN_NOTES; i++) {
                HostRunNote *n = &ws->host_run[i];
                /* One noted after every call in flight was answered (a
                 * repository put aside once the jail was gone): the next
                 * result says it. */
                if (!n->path || (n->us < since_us && n->reported))
                        continue;
                n->reported = true;
                bool dup = false;
                size_t k;
                json_t *v;
                json_array_foreach(a, k, v) dup = dup || streq(json_string_value(v), n->path);
                if (!dup)
                        json_array_append_new(a, json_string(n->path));
        }
        return a;
}

void workspace_reload(Workspace *ws) {
        reload(ws);
}

static void masked_appeared(Workspace *ws, const char *why) {
        workspace_recycle(ws, API_ERROR_WORKER_RECYCLED, why);
}

/* A masked name appeared as a symlink (or a directory, which may hold
 * links): the jail is rebuilt at once, with
 * no call waiting too, so that the start puts aside a link it would
 * refuse (jail-facts.c, links_since) before the host writes through it;
 * left to the next call, which may come days later (the workspace's entry,
 * and its links_since, freed meanwhile), the link stayed. The jail then
 * idles out. */
static void masked_link_appeared(Workspace *ws, const char *why) {
        ws->start_eager = true;
        workspace_recycle(ws, API_ERROR_WORKER_RECYCLED, why);
}

/* A name that can make a repository appeared while a jail runs: a new
 * repository ends the jail at once; old_jail_gone() puts it aside. */
static bool git_suspect(Workspace *ws, char *const *dirs) {
        _cleanup_free_ char *what = NULL;
        if (!(ws->link || ws->draining))
                return false;
        if (!dirs) {
                /* Events were lost, or too many such names at once: no
                 * walk of the whole tree here (the loop serves every
                 * workspace, and the jail could ask for one each time);
                 * the jail ends, and the sweep once it is reaped (on the
                 * thread pool) puts aside what it made. */
                log_warning("workspace %s: names that make repositories appeared faster than they can be looked at; "
                            "ending the jail to sweep its tree",
                            ws->path);
                workspace_recycle(ws, API_ERROR_WORKER_RECYCLED,
                                  "the jail made more names that can make a git repository than can be looked at one "
                                  "by one; it was ended and its tree is swept");
                return true;
        }
        VsGitRepos fresh = { 0 };
        for (char *const *d = dirs; *d; d++) {
                VsGitRepos one = { 0 };
                if (!git_watch_new(ws, *d, &one))
                        continue;
                VsGitRepo *n = realloc(fresh.items, (fresh.n + one.n) * sizeof *n);
                if (!n) {
                        git_repos_done(&one);
                        continue;
                }
                fresh.items = n;
                memcpy(n + fresh.n, one.items, one.n * sizeof *n);
                fresh.n += one.n;
                free(one.items);
        }
        if (!fresh.n)
                return false;
        const VsGitRepo *g = &fresh.items[0];
        what = g->kind == VS_GIT_BARE ? path_join(g->dir, "HEAD") : path_join(g->dir, ".git");
        if (what)
                workspace_note_host_run(ws, what);
        log_warning("workspace %s: %s makes a repository the host's git would use; ending the jail to put it aside",
                    ws->path, what ? what : g->dir);
        /* The jail's processes are killed first (bwrap is pid 1 of their
         * namespace), then the repositories put aside, then the calls in
         * flight answered: none of their clients runs git before that.
         * What else the jail made, or a dying process still made, the
         * sweep puts aside once the jail is reaped (old_jail_gone). */
        if (ws->link && ws->link->pid > 0)
                kill(ws->link->pid, SIGKILL);
        for (WorkerLink *d = ws->draining; d; d = d->next_draining)
                if (d->pid > 0)
                        kill(d->pid, SIGKILL);
        git_watch_put_aside(ws, &fresh, workspace_note_host_run);
        git_repos_done(&fresh);
        char why[PATH_MAX + 256];
        snprintf(why, sizeof why,
                 "%s makes a repository that the host's git would use (its config and hooks would be the jail's); the jail "
                 "was ended and the repository is put aside (renamed to *.vectora-quarantine)",
                 what ? what : "a directory");
        workspace_recycle(ws, API_ERROR_WORKER_RECYCLED, why);
        return true;
}

static const WatchHooks watch_hooks = {
        .masked_appeared = masked_appeared,
        .masked_link_appeared = masked_link_appeared,
        .host_run = workspace_note_host_run,
        .git_suspect = git_suspect,
};

/* What approval_locate() answered for recent request paths: one daemon,
 * one store, one table. */
static ApprovalMemo locate_memo[APPROVAL_MEMO_SLOTS];

int workspace_get(Server *srv, const char *path, Workspace **ret, char **ret_dir, char **ret_pending, VsError **err) {
        if (!path || path[0] != '/')
                return vs_error_set_kind(err, -EINVAL, api_error_name(API_ERROR_BAD_REQUEST), "\"workspace\" must be an absolute path");
        /* A subdirectory runs in the jail of the workspace above it. */
        _cleanup_free_ char *canon = NULL, *dir = NULL, *nested = NULL;
        struct stat cfg_st;
        int r = approval_locate_memo(locate_memo, srv->opt.state_dir, path, &canon, &dir, &nested, &cfg_st, err);
        if (r == -ENOMEM)
                return vs_error_set_kind(err, r, api_error_name(API_ERROR_INTERNAL), "out of memory");
        if (r < 0)
                return r;
        Workspace *ws;
        for (ws = srv->workspaces; ws; ws = ws->next)
                if (streq(ws->path, canon))
                        break;
        if (!ws) {
                ws = calloc(1, sizeof *ws);
                if (!ws || !(ws->path = strdup(canon))) {
                        free(ws);
                        return vs_error_set_kind(err, -ENOMEM, api_error_name(API_ERROR_INTERNAL), "out of memory");
                }
                ws->srv = srv;
                ws->pids_fd = ws->pids_events_fd = -EBADF;
                ws->cgroup_fds[0] = ws->cgroup_fds[1] = -EBADF;
                ws->watch_hooks = &watch_hooks;
                uv_timer_init(srv->loop, &ws->idle_timer);
                ws->idle_timer.data = ws;
                ws->idle_timer_init = true;
                ws->next = srv->workspaces;
                srv->workspaces = ws;
        }
        ws->last_used_ms = now_ms();
        refresh(ws, &cfg_st);
        /* Before this call is served: a masked path the host made since
         * the last look rebuilds the jail (the inotify queue is read by
         * protect_check below, the fanotify group's here). */
        watch_drain(ws);
        /* A protected path replaced on the host has detached the running
         * jail's read-only mount on it. */
        protect_check(ws);
        *ret = ws;
        if (ret_dir)
                *ret_dir = streq(dir, ws->path) ? NULL : TAKE_PTR(dir);
        if (ret_pending)
                *ret_pending = TAKE_PTR(nested);
        return 0;
}

static bool restart_allowed(Workspace *ws) {
        uint64_t now = now_ms();
        unsigned recent = 0;
        for (unsigned i = 0; i < ws->n_restarts && i < RESTART_MAX; i++)
                if (now - ws->restarts[i] < RESTART_WINDOW_MS)
                        recent++;
        return recent < RESTART_MAX;
}

static void note_restart(Workspace *ws) {
        memmove(ws->restarts + 1, ws->restarts, (RESTART_MAX - 1) * sizeof ws->restarts[0]);
        ws->restarts[0] = now_ms();
        if (ws->n_restarts < RESTART_MAX)
                ws->n_restarts++;
}

/* Under the worker limit, ends the longest-idle worker of another workspace. */
static bool make_room(Server *srv) {
        if (srv->n_workers < srv->opt.max_workers)
                return true;
        Workspace *best = NULL;
        for (Workspace *w = srv->workspaces; w; w = w->next)
                if (w->link && w->link->state == LINK_READY && w->link->n_inflight == 0 && w->link->n_sessions == 0 &&
                    (!best || w->link->last_used_ms < best->link->last_used_ms))
                        best = w;
        if (!best)
                return false;
        WorkerLink *l = TAKE_PTR(best->link);
        log_info("worker limit (%u) reached: ending the idle worker of %s", srv->opt.max_workers, best->path);
        link_end(l, API_ERROR_WORKER_RECYCLED, "ended to make room under the worker limit");
        return srv->n_workers < srv->opt.max_workers;
}

/* What the workspace's links report (LinkOps, worker-link.c), below. */
static int link_prepare(Workspace *ws, VsError **err);
static void link_started(Workspace *ws, WorkerLink *l, int r, const VsError *err);
static void link_ready(Workspace *ws, WorkerLink *l);
static void link_failed(Workspace *ws, WorkerLink *l, ApiError code, const char *why);
static void link_idle(Workspace *ws, WorkerLink *l);
static void spawn_slot_free(Server *srv, WorkerLink *l);
static void old_jail_gone(Workspace *ws);
static void protect_changed(Workspace *ws, const char *why);

static const LinkOps link_ops = {
        .prepare = link_prepare,
        .started = link_started,
        .ready = link_ready,
        .failed = link_failed,
        .idle = link_idle,
        .spawn_slot_free = spawn_slot_free,
        .old_jail_gone = old_jail_gone,
        .protect_changed = protect_changed,
        .session_event = jail_session_event,
        .sessions_end = jail_sessions_end,
        .host_run = note_put_aside,
};

/* The start failed: nothing ran, the queued calls hear why. */
static void spawn_failed(Workspace *ws, int r, const VsError *err) {
        /* Whatever else the start said, nothing ran: the jail is unavailable. */
        ApiError code = api_error_from_kind(vs_error_kind(err), API_ERROR_SANDBOX_UNAVAILABLE);
        if (code != API_ERROR_CONFIG_INVALID)
                code = API_ERROR_SANDBOX_UNAVAILABLE;
        const char *msg = err ? vs_error_message(err) : strerror(-r);
        log_warning("workspace %s: cannot start the worker: %s", ws->path, msg);
        workspace_set_error(ws, "%s", msg);
        ws->counters.spawn_failures++;
        ws->srv->counters.spawn_failures++;
        fail_queue(ws, code, msg);
}

static void spawn(Workspace *ws) {
        Server *srv = ws->srv;
        /* One start at a time: a discarded one starts the next itself. */
        if (ws->spawn_waiting || ws->starting)
                return;
        /* No process of an old jail of the workspace runs while the next is
         * set up: a draining jail finishes its calls and is ended, its
         * processes are reaped, then the walk and the start happen
         * (old_jail_gone() comes back here). A hostile command
         * still running could otherwise race the new jail's mounts. */
        if (ws->draining || ws->n_old_jails > 0 || ws->git_sweep)
                return;
        /* Whose start it is counts in a root daemon only (one owner in a
         * user daemon's): no look at the path there. */
        struct stat dst;
        ws->slot_owner = geteuid() == 0 && stat(ws->path, &dst) == 0 ? dst.st_uid : 0;
        if (!spawn_slot_free_for(srv, ws->slot_owner)) {
                /* Wait for a slot; the calls stay queued meanwhile. */
                ws->spawn_waiting = true;
                ws->next_spawn_wait = NULL;
                if (srv->spawn_wait_tail)
                        srv->spawn_wait_tail->next_spawn_wait = ws;
                else
                        srv->spawn_wait_head = ws;
                srv->spawn_wait_tail = ws;
                return;
        }
        if (!restart_allowed(ws)) {
                eager_later(ws);
                char buf[1024];
                snprintf(buf, sizeof buf,
                         "the worker failed %d times in %d s; not restarting it for now (last error: %s)", RESTART_MAX,
                         RESTART_WINDOW_MS / 1000, ws->restart_cause ? ws->restart_cause : "unknown");
                fail_queue(ws, API_ERROR_WORKER_CRASHED, buf);
                return;
        }
        if (!make_room(ws->srv)) {
                eager_later(ws);
                fail_queue(ws, API_ERROR_BUSY, "the daemon's worker limit is reached and every worker is busy; try again later");
                return;
        }
        /* A watch that could not be made (no inotify instance left) is
         * tried again with each new worker; meanwhile watch_gap() says so. */
        if (ws->policy && ws->policy->sandboxed && !watch_active(ws))
                watch_start(ws);
        else
                watch_before_spawn(ws);
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ws->start_eager = ws->eager_retry = false; /* this start is the one wanted */
        int r = link_start(ws, &link_ops, &ws->starting, &err);
        ws->counters.spawns++;
        ws->srv->counters.spawns++;
        if (r < 0)
                return spawn_failed(ws, r, err);
        /* The spawn slot: the start's, then its link's until ready. */
        srv->spawn_owners[srv->n_spawning++] = ws->slot_owner;
}

/* Forwarded ports listen from the first worker of their policy on. */
static int link_prepare(Workspace *ws, VsError **err) {
        const WorkspaceHooks *h = ws->srv->ws_hooks;
        return h && h->starting ? h->starting(ws, err) : 0;
}

static void link_started(Workspace *ws, WorkerLink *l, int r, const VsError *err) {
        ws->starting = NULL;
        if (!l) {
                spawn_slot_release(ws->srv, ws->slot_owner);
                if (r < 0)
                        spawn_failed(ws, r, err);
                else if (start_wanted(ws))
                        spawn(ws); /* discarded: start under what holds now */
                return;
        }
        ws->link = l;
        protect_arm(ws, protect_changed);
        git_watch_base(ws);
        l->holds_spawn_slot = true;
        l->slot_owner = ws->slot_owner;
}

static void spawn_slot_free(Server *srv, WorkerLink *l) {
        if (!l->holds_spawn_slot)
                return;
        l->holds_spawn_slot = false;
        spawn_slot_release(srv, l->slot_owner);
}

/* Whether a start of owner's workspace may take a slot now: one is free
 * and, in a root daemon (many owners), that owner holds fewer than
 * MAX_OWNER_SPAWNS: an owner stopping its own starts' processes holds
 * their slots until their handshakes' deadline (15 s), and must not hold
 * every other owner's first start with them. */
static bool spawn_slot_free_for(Server *srv, uid_t owner) {
        if (srv->n_spawning >= MAX_CONCURRENT_SPAWNS)
                return false;
        if (geteuid() != 0)
                return true;
        unsigned mine = 0;
        for (unsigned i = 0; i < srv->n_spawning; i++)
                mine += srv->spawn_owners[i] == owner;
        return mine < MAX_OWNER_SPAWNS;
}

static void spawn_slot_release(Server *srv, uid_t owner) {
        unsigned i = 0;
        while (i + 1 < srv->n_spawning && srv->spawn_owners[i] != owner)
                i++;
        if (srv->n_spawning > 0)
                srv->spawn_owners[i] = srv->spawn_owners[--srv->n_spawning];
        /* The first waiting workspace whose owner may start now, in turn
         * (one at its owner's cap waits on, its place kept). */
        Workspace **at = &srv->spawn_wait_head, *prev = NULL;
        while (srv->n_spawning < MAX_CONCURRENT_SPAWNS && *at) {
                Workspace *ws = *at;
                if (!spawn_slot_free_for(srv, ws->slot_owner)) {
                        prev = ws;
                        at = &ws->next_spawn_wait;
                        continue;
                }
                *at = ws->next_spawn_wait;
                if (srv->spawn_wait_tail == ws)
                        srv->spawn_wait_tail = prev;
                ws->next_spawn_wait = NULL;
                ws->spawn_waiting = false;
                if (start_wanted(ws))
                        spawn(ws);
        }
}

void workspace_submit(Workspace *ws, Call *c) {
        c->next = NULL;
        /* Its config not read yet (tools.c waits for that before a call
         * gets here): nothing to serve it with. */
        if (ws->settle_ms && !ws->policy) {
                c->done(c, NULL, NULL, API_ERROR_SANDBOX_UNAVAILABLE,
                        "vectora.toml was just written and is not read yet; try again");
                return;
        }
        if (c->req && c->req->ac.tc.stage == 0 && c->req->ac.tc.attempts == 0) /* a call once, not each of its steps */
                ws->counters.requests++;
        if (ws->link && ws->link->state == LINK_READY && !ws->record_unsynced) {
                uv_timer_stop(&ws->idle_timer);
                link_send(ws->link, c);
                return;
        }
        if (ws->n_queued >= WORKSPACE_MAX_QUEUE) {
                c->done(c, NULL, NULL, API_ERROR_BUSY, "too many calls waiting for this workspace's worker");
                return;
        }
        if (ws->queue_tail)
                ws->queue_tail->next = c;
        else
                ws->queue = c;
        ws->queue_tail = c;
        ws->n_queued++;
        if (!ws->link)
                spawn(ws);
}

bool workspace_cancel(Workspace *ws, Call *c) {
        Call *prev = NULL;
        for (Call **p = &ws->queue; *p; prev = *p, p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        if (ws->queue_tail == c)
                                ws->queue_tail = prev;
                        ws->n_queued--;
                        c->next = NULL;
                        c->done(c, NULL, NULL, API_ERROR_CANCELLED, "cancelled before it ran");
                        return true;
                }
        if (ws->link && link_cancel(ws->link, c))
                return true;
        for (WorkerLink *l = ws->draining; l; l = l->next_draining)
                if (link_cancel(l, c))
                        return true;
        return false;
}

static void link_ready(Workspace *ws, WorkerLink *l) {
        if (ws->link == l)
                ws->start_retries = 0;
        /* The jail started while the approval record was synced: the
         * calls wait for the record (record_sync_done comes back here). */
        while (ws->queue && ws->link == l && l->state == LINK_READY && !ws->record_unsynced) {
                Call *c = ws->queue;
                ws->queue = c->next;
                if (!ws->queue)
                        ws->queue_tail = NULL;
                ws->n_queued--;
                c->next = NULL;
                link_send(l, c);
        }
        if (l->n_inflight == 0 && ws->link == l && !ws->queue)
                link_idle(ws, l);
}

static void link_failed(Workspace *ws, WorkerLink *l, ApiError code, const char *why) {
        if (ws->link == l) {
                ws->link = NULL;
                /* A start that failed may have met a plan gone stale under
                 * it (the host made or removed a masked path while bwrap
                 * mounted it): it is made again, twice at most, from a
                 * fresh plan, before the calls waiting for it fail; a retry
                 * is no restart of a crashing worker. */
                bool retry = code == API_ERROR_SANDBOX_UNAVAILABLE && ws->queue && ws->start_retries < START_RETRIES &&
                             !ws->srv->shutting_down;
                bool crashed = !retry && (code == API_ERROR_WORKER_CRASHED || code == API_ERROR_SANDBOX_UNAVAILABLE);
                if (crashed) {
                        note_restart(ws);
                        workspace_set_error(ws, "%s", why);
                        free(ws->restart_cause);
                        ws->restart_cause = strdup(why); /* NULL (out of memory): "unknown" */
                }
                /* The workspace's last jail ended: whatever is left in its
                 * cgroup (an inner bwrap that outlived its parent) goes
                 * before a new jail joins the group. */
                if (!ws->draining)
                        cgroup_kill_leftovers(ws);
                if (retry) {
                        ws->start_retries++;
                        log_info("workspace %s: the jail's start failed (%s); starting it again (%u of %u)", ws->path,
                                 why, ws->start_retries, START_RETRIES);
                        spawn(ws);
                } else if (ws->queue) {
                        /* A link that never became ready: its start failed. */
                        if (code == API_ERROR_SANDBOX_UNAVAILABLE) {
                                ws->start_retries = 0;
                                ws->counters.spawn_failures++;
                                ws->srv->counters.spawn_failures++;
                                fail_queue(ws, code, why);
                        } else if (!ws->srv->shutting_down)
                                spawn(ws);
                }
                return;
        }
        for (WorkerLink **p = &ws->draining; *p; p = &(*p)->next_draining)
                if (*p == l) {
                        *p = l->next_draining;
                        break;
                }
        if (!ws->link && !ws->draining)
                cgroup_kill_leftovers(ws);
}

static void sweep_done(Workspace *ws) {
        if (start_wanted(ws))
                spawn(ws);
}

static void old_jail_gone(Workspace *ws) {
        if (ws->n_old_jails > 0)
                ws->n_old_jails--;
        /* No process of the workspace's jails is left: what they made that
         * git takes as a repository is put aside now, before a new jail
         * (which could undo it) starts. */
        if (ws->n_old_jails == 0 && !ws->link && !ws->draining &&
            git_watch_sweep_start(ws, workspace_note_host_run, sweep_done))
                return; /* sweep_done() spawns */
        if (start_wanted(ws))
                spawn(ws);
}

static void link_idle(Workspace *ws, WorkerLink *l) {
        if (ws->link != l || !ws->policy)
                return;
        uv_timer_start(&ws->idle_timer, on_idle_timer, idle_timeout_ms(ws), 0);
}

static void protect_changed(Workspace *ws, const char *why) {
        workspace_recycle(ws, API_ERROR_WORKER_RECYCLED, why);
}

void workspace_recycle(Workspace *ws, ApiError code, const char *why) {
        ws->counters.recycles++;
        ws->srv->counters.recycles++;
        /* A start under way prepared what no longer holds (a masked path
         * that appeared meanwhile is not in its plan). */
        if (ws->starting)
                link_start_discard(ws->starting);
        WorkerLink *l = TAKE_PTR(ws->link);
        if (l)
                link_end(l, code, why);
        while (ws->draining) {
                WorkerLink *d = ws->draining;
                ws->draining = d->next_draining;
                link_end(d, code, why);
        }
        if (start_wanted(ws))
                spawn(ws);
}

json_t *workspace_sandbox_json(Workspace *ws, WorkerLink *l) {
        /* With a link: the worker that served the call, not the workspace
         * as it is at reply time (a draining worker finishing a call after
         * the config became invalid still served it sandboxed). */
        bool sandboxed = l ? l->launch->sandboxed : ws->state == WS_SANDBOXED;
        const char *backend = !sandboxed                   ? "none"
                              : l && l->launch->backend_name ? l->launch->backend_name
                              : ws->policy                   ? vs_backend_name(ws->policy->backend)
                                                             : "none";
        _cleanup_strv_free_ char **deg = NULL;
        for (char **s = l ? l->degraded : NULL; s && *s; s++)
                if (strv_extend(&deg, *s) < 0)
                        return NULL;
        for (char **s = ws->limit_notes; sandboxed && s && *s; s++)
                if (strstr(*s, "not enforced") && strv_extend(&deg, *s) < 0)
                        return NULL;
        const char *gap = sandboxed ? watch_gap(ws) : NULL;
        if (gap && strv_extend(&deg, gap) < 0)
                return NULL;
        VsApiSandbox s = {
                .state = l ? workspace_state_name(sandboxed ? WS_SANDBOXED : WS_UNSANDBOXED) : workspace_state_name(ws->state),
                .backend = ws->state == WS_REFUSED && !l ? NULL : backend,
                .layers = l ? l->layers : NULL,
                .degraded = deg,
                .generation = l ? l->generation : ws->generation,
        };
        return api_sandbox_json(&s);
}

static json_t *counters_json(const Counters *c) {
        return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "requests", (json_int_t)c->requests, "ok",
                         (json_int_t)c->ok, "errors", (json_int_t)c->errors, "refused", (json_int_t)c->refused,
                         "denied", (json_int_t)c->denied, "spawns", (json_int_t)c->spawns, "spawn_failures",
                         (json_int_t)c->spawn_failures, "crashes", (json_int_t)c->crashes, "recycles",
                         (json_int_t)c->recycles, "idle_ends", (json_int_t)c->idle_ends);
}

json_t *daemon_counters_json(const Counters *c) {
        return counters_json(c);
}

json_t *workspace_status(Workspace *ws) {
        json_t *o = json_object();
        if (!o)
                return NULL;
        json_object_set_new(o, "path", json_string(ws->path));
        json_object_set_new(o, "state", json_string(workspace_state_name(ws->state)));
        json_object_set_new(o, "generation", json_integer((json_int_t)ws->generation));
        /* First seen, its vectora.toml still changing: not read yet, so
         * its state above is no reading of it (calls wait, tools.c). */
        json_object_set_new(o, "config_settling", json_boolean(ws->settle_ms && !ws->policy));
        if (ws->config_error)
                json_object_set_new(o, "config_error", json_string(vs_error_message(ws->config_error)));
        json_object_set_new(o, "policy_pending", ws->pending ? json_string(ws->pending) : json_null());
        if (ws->policy)
                json_object_set_new(o, "policy", policy_to_json(ws->policy));
        json_object_set_new(o, "worker", ws->link ? link_status(ws->link) : json_null());
        json_t *d = json_array();
        for (WorkerLink *l = ws->draining; d && l; l = l->next_draining)
                json_array_append_new(d, link_status(l));
        json_object_set_new(o, "draining", d);
        json_object_set_new(o, "queued", json_integer((json_int_t)ws->n_queued));
        json_object_set_new(o, "sandbox", workspace_sandbox_json(ws, ws->link && ws->link->state == LINK_READY ? ws->link : NULL));
        json_object_set_new(o, "limits", json_strv(ws->limit_notes));
        /* Watching wholly: a watch with a gap (a directory it could not
         * add) does not count. */
        json_object_set_new(o, "watching_masks", json_boolean(watch_active(ws) && !watch_gap(ws)));
        /* How: fanotify (root, the whole filesystem) or inotify (a watch
         * per directory, within the workspace's budget). */
        const char *kind;
        size_t used, budget;
        watch_describe(ws, &kind, &used, &budget);
        json_object_set_new(o, "masks_watch",
                            kind ? json_pack("{s:s, s:I, s:I}", "kind", kind, "used", (json_int_t)used, "budget",
                                             (json_int_t)budget)
                                 : json_null());
        json_object_set_new(o, "counters", counters_json(&ws->counters));
        if (ws->policy && ws->policy->net_allowlist) {
                /* The allowlist as written, and what its proxy carried. */
                json_t *n = proxy_status(ws->proxy);
                if (!n)
                        n = json_pack("{s:i, s:i, s:i}", "open", 0, "connections", 0, "denied", 0);
                json_t *allow = json_array();
                for (size_t i = 0; allow && i < ws->policy->n_net_rules; i++)
                        json_array_append_new(allow, json_string(ws->policy->net_rules[i].written));
                if (n && allow)
                        json_object_set_new(n, "allow", allow);
                else
                        json_decref(allow);
                json_object_set_new(o, "network", n);
        }
        json_t *fwd = ws->srv->ws_hooks && ws->srv->ws_hooks->ports_status ? ws->srv->ws_hooks->ports_status(ws) : NULL;
        if (fwd)
                json_object_set_new(o, "ports", fwd);
        unsigned recent = 0;
        for (unsigned i = 0; i < ws->n_restarts; i++)
                if (now_ms() - ws->restarts[i] < RESTART_WINDOW_MS)
                        recent++;
        json_object_set_new(o, "restarts_last_minute", json_integer(recent));
        json_object_set_new(o, "restart_blocked", json_boolean(!restart_allowed(ws)));
        if (ws->last_error) {
                json_object_set_new(o, "last_error", json_string(ws->last_error));
                json_object_set_new(o, "last_error_age_ms", json_integer((json_int_t)(now_ms() - ws->last_error_ms)));
        } else
                json_object_set_new(o, "last_error", json_null());
        return o;
}

static void on_timer_closed(uv_handle_t *h) {
        free(h->data);
}

/* ---- freeing unused entries ---- */

/* Kept however long it is idle: an entry with a loosening waiting for the
 * host's approval, so status keeps listing it (policy_pending) until it is
 * allowed or reverted. A protected-path snapshot (protect.c) is in use
 * exactly while a jail lives (a link, ready or draining), which keeps the
 * entry too; an idle entry's snapshot is stale and the next spawn takes a
 * new one, so it goes with the entry. */
/* A record not known durable keeps the entry: a new one would find the
 * record on disk and serve from it unsynced. */
/* A note no result has listed yet (a link the eager start put aside):
 * it keeps the entry until a result does, while its directory lives. */
static bool ws_notes_unlisted(const Workspace *ws) {
        for (size_t i = 0; i < HOST_RUN_NOTES; i++)
                if (ws->host_run[i].path && ws->host_run[i].keep && !ws->host_run[i].reported)
                        return true;
        return false;
}

static bool ws_unused(const Workspace *ws) {
        return !ws->pending && !ws->link && !ws->starting && !ws->draining && !ws->queue && !ws->start_eager && !ws->spawn_waiting &&
               ws->refs == 0 && !ws->git_sweep && !ws->record_sync && !ws->record_unsynced && !ws->settle_waiters &&
               !ws->settle_firing;
}

static void forget(Workspace *ws) {
        const WorkspaceHooks *h = ws->srv->ws_hooks;
        if (h && h->forget)
                h->forget(ws);
}

static void workspace_free(Workspace *ws) {
        /* Ended background processes kept for their output point here, and
         * so do the forwarded ports' listeners. */
        forget(ws);
        watch_stop(ws);
        git_watch_free(ws);
        proxy_stop(ws->proxy);
        protect_disarm(ws);
        cgroup_kill(ws);
        cgroup_release(ws);
        policy_replace(ws, NULL);
        if (ws->starting)
                link_start_detach(TAKE_PTR(ws->starting));
        if (ws->record_sync)
                TAKE_PTR(ws->record_sync)->ws = NULL; /* freed when its work is done */
        vs_error_free(ws->config_error);
        free(ws->pending);
        for (size_t i = 0; i < HOST_RUN_NOTES; i++)
                free(ws->host_run[i].path);
        free(ws->last_error);
        free(ws->restart_cause);
        strv_free(ws->limit_notes);
        free(ws->path);
        uv_close((uv_handle_t *)&ws->idle_timer, on_timer_closed);
}

static void on_gc(uv_timer_t *t) {
        Server *srv = t->data;
        uint64_t now = now_ms();
        for (Workspace **p = &srv->workspaces; *p;) {
                Workspace *ws = *p;
                struct stat st;
                /* An entry lives as long as its worker would (at least
                 * WS_FREE_AFTER_MS), or not at all once its directory is gone. */
                uint64_t keep = idle_timeout_ms(ws) > WS_FREE_AFTER_MS ? idle_timeout_ms(ws) : WS_FREE_AFTER_MS;
                if (ws_unused(ws) && ((now - ws->last_used_ms >= keep && !ws_notes_unlisted(ws)) || stat(ws->path, &st) < 0 ||
                                      !S_ISDIR(st.st_mode))) {
                        log_debug("workspace %s: unused, entry freed", ws->path);
                        *p = ws->next;
                        srv->ws_freed++;
                        workspace_free(ws);
                        continue;
                }
                p = &ws->next;
        }
        /* Replies and payloads of a burst are large blocks the allocator
         * keeps: give the unused ones back, so a long uptime does not
         * carry the peak of its busiest minute. */
        malloc_trim(0);
}

void workspace_gc_start(Server *srv) {
        uv_timer_init(srv->loop, &srv->gc_timer);
        srv->gc_timer.data = srv;
        uv_timer_start(&srv->gc_timer, on_gc, WS_GC_INTERVAL_MS, WS_GC_INTERVAL_MS);
        srv->gc_running = true;
}

void workspace_gc_stop(Server *srv) {
        if (!srv->gc_running)
                return;
        srv->gc_running = false;
        uv_timer_stop(&srv->gc_timer);
        uv_close((uv_handle_t *)&srv->gc_timer, NULL);
}

void workspaces_free_all(Server *srv) {
        srv->spawn_wait_head = srv->spawn_wait_tail = NULL;
        /* Calls first, so their clients hear "shutting_down"; then every
         * process of every jail; only then can the cgroups go. */
        for (Workspace *ws = srv->workspaces; ws; ws = ws->next) {
                /* In flight: sent to the worker, so it may have run. */
                workspace_recycle(ws, API_ERROR_INTERRUPTED,
                                  "the daemon is shutting down: the call was running and was ended (it may have run in part)");
                fail_queue(ws, API_ERROR_SHUTTING_DOWN, "the daemon is shutting down; nothing ran");
                forget(ws);
                watch_stop(ws);
                proxy_stop(ws->proxy);
                protect_disarm(ws);
        }
        for (Workspace *ws = srv->workspaces; ws; ws = ws->next)
                cgroup_kill(ws);
        /* What unsandboxed workspaces started (setsid grandchildren too). */
        cgroup_kill_host(srv);
        links_kill_all(srv);
        while (srv->workspaces) {
                Workspace *ws = srv->workspaces;
                srv->workspaces = ws->next;
                workspace_free(ws);
        }
}
