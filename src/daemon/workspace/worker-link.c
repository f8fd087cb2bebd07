/* SPDX-License-Identifier: MIT */
/* One worker process and the asynchronous protocol to it: the handshake
 * (hello -> init -> ready), then many requests in flight, matched to their
 * replies by id. Anything the worker says out of turn ends it (never the
 * daemon): its in-flight calls fail with the link's end code. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "backend-ops.h"
#include "cgroup.h"
#include "host-aside.h"
#include "idmap.h"
#include "jail-home.h"
#include "jail-plan.h"
#include "log.h"
#include "monitor-link.h"
#include "path-util.h"
#include "protect.h"
#include "protocol.h"
#include "proxy.h"
#include "server.h"
#include "strv.h"
#include "user-util.h"
#include "watch.h"
#include "worker-link.h"
#include "worker-link-internal.h"
/* after the daemon's headers: their macro.h MIN/MAX come before uv.h's */
#include "inotify-hub.h"
#include "fan-hub.h"
#include "worker-spawn.h"
#include "workspace.h"

#define LINK_HANDSHAKE_TIMEOUT_MS 15000

static WorkerLink *all_links;

LinkSpawnFn link_spawn_fn = worker_spawn;

typedef struct LinkWrite {
        uv_write_t w;
        WorkerLink *link;
        char *data;
} LinkWrite;

static void link_maybe_free(WorkerLink *l) {
        if (l->open_handles > 0 || l->pid > 0)
                return;
        for (WorkerLink **p = &all_links; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
        handshake_done(&l->hs);
        safe_close(l->exec_fd);
        launch_free(l->launch);
        jsonl_reader_free(l->reader);
        strv_free(l->layers);
        strv_free(l->sealed);
        strv_free(l->masked);
        strv_free(l->degraded);
        strbuf_done(&l->errtail);
        strbuf_done(&l->errline);
        free(l->end_reason);
        free(l);
}

static void on_handle_closed(uv_handle_t *h) {
        WorkerLink *l = h->data;
        l->open_handles--;
        link_maybe_free(l);
}

static void log_stderr_line(WorkerLink *l, const char *line) {
        log_info("worker %s[%d]: %s", l->ws ? l->ws->path : "?", (int)l->pid, line);
}

static void flush_errline(WorkerLink *l) {
        if (l->errline.len > 0) {
                log_stderr_line(l, l->errline.data);
                strbuf_clear(&l->errline);
        }
}

/* Fails every in-flight call; the callbacks may free their requests. */
static void fail_inflight(WorkerLink *l, ApiError code, const char *msg) {
        while (l->inflight) {
                Call *c = l->inflight;
                l->inflight = c->next;
                l->n_inflight--;
                c->next = NULL;
                c->done(c, l, NULL, code, msg);
        }
}

static void close_handles(WorkerLink *l) {
        if (!uv_is_closing((uv_handle_t *)&l->pipe))
                uv_close((uv_handle_t *)&l->pipe, on_handle_closed);
        if (!uv_is_closing((uv_handle_t *)&l->errpipe))
                uv_close((uv_handle_t *)&l->errpipe, on_handle_closed);
        if (!uv_is_closing((uv_handle_t *)&l->timer))
                uv_close((uv_handle_t *)&l->timer, on_handle_closed);
}

/* SIGKILL for the jail's first process: by the monitor for a jail it
 * started (as the owner: the server, once unprivileged, may not signal
 * it), else, or when the monitor could not, by the daemon. */
static void link_kill(WorkerLink *l) {
        if (l->by_monitor) {
                _cleanup_(vs_error_freep) VsError *e = NULL;
                int r = monitor_link_jail_kill(l->srv, l->monitor_ws, l->generation, &e);
                if (r >= 0 || r == -ESRCH)
                        return;
                log_warning("jail pid %d: %s; killed by the daemon", (int)l->pid, vs_error_message(e));
        }
        kill(l->pid, SIGKILL);
}

void link_end(WorkerLink *l, ApiError code, const char *reason) {
        if (l->state == LINK_DEAD)
                return;
        bool was_spawning = l->state == LINK_SPAWNING;
        l->state = LINK_DEAD;
        /* After the state change: a waiting workspace may spawn from here. */
        l->ops->spawn_slot_free(l->srv, l);
        l->end_code = code;
        free(l->end_reason);
        l->end_reason = reason ? strdup(reason) : NULL;
        /* A local jail's outer bwrap is pid 1 of its own pid namespace:
         * SIGKILL of it ends the whole jail, even one still being set up. */
        if (l->pid > 0) {
                link_kill(l);
                /* Until it is reaped (the kernel reaps pid 1 of a namespace
                 * only once everything else in it is gone), the workspace
                 * starts no new jail. */
                if (l->ws) {
                        l->old_ws = l->ws;
                        l->ws->n_old_jails++;
                }
        }
        l->srv->n_workers--;
        flush_errline(l);
        uv_read_stop((uv_stream_t *)&l->errpipe);
        close_handles(l);
        const char *msg = reason ? reason : "the worker ended";
        fail_inflight(l, code, msg);
        l->ops->sessions_end(l, code, msg);
        Workspace *ws = TAKE_PTR(l->ws);
        if (ws) {
                if (was_spawning)
                        l->ops->failed(ws, l, code, msg);
                else
                        l->ops->failed(ws, l, code, msg);
        }
        link_maybe_free(l);
}

static bool link_reaped(Server *srv, pid_t pid, int status) {
        for (WorkerLink *l = all_links; l; l = l->next)
                if (l->pid == pid) {
                        if (WIFSIGNALED(status))
                                log_debug("worker pid %d killed by signal %d", (int)pid, WTERMSIG(status));
                        else
                                log_debug("worker pid %d exited with status %d", (int)pid, WEXITSTATUS(status));
                        l->pid = 0;
                        Workspace *old = TAKE_PTR(l->old_ws);
                        if (old)
                                l->ops->old_jail_gone(old);
                        if (l->state != LINK_DEAD) {
                                char why[128];
                                if (WIFSIGNALED(status))
                                        snprintf(why, sizeof why, "the worker was killed by signal %d", WTERMSIG(status));
                                else
                                        snprintf(why, sizeof why, "the worker exited with status %d", WEXITSTATUS(status));
                                /* Pipes may still hold its last replies: let them drain
                                 * first; EOF then ends the link with this reason. */
                                free(l->end_reason);
                                l->end_reason = strdup(why);
                        } else
                                link_maybe_free(l);
                        return true;
                }
        return false;
}

static void on_link_write(uv_write_t *w, int status) {
        LinkWrite *lw = (LinkWrite *)w;
        WorkerLink *l = lw->link;
        free(lw->data);
        free(lw);
        if (status < 0 && l->state != LINK_DEAD)
                link_end(l, API_ERROR_WORKER_CRASHED, "writing to the worker failed");
}

static int link_write(WorkerLink *l, StrBuf *b) {
        /* As server.c's queue_write(): at once what the socket takes. */
        uv_buf_t now = uv_buf_init(b->data, (unsigned)b->len);
        int k = uv_try_write((uv_stream_t *)&l->pipe, &now, 1);
        size_t done = k > 0 ? (size_t)k : 0;
        if (done == b->len) {
                strbuf_done(b);
                return 0;
        }
        LinkWrite *lw = calloc(1, sizeof *lw);
        if (!lw)
                return -ENOMEM;
        size_t len = b->len - done;
        lw->data = strbuf_steal(b);
        lw->link = l;
        uv_buf_t buf = uv_buf_init(lw->data + done, (unsigned)len);
        int r = uv_write(&lw->w, (uv_stream_t *)&l->pipe, &buf, 1, on_link_write);
        if (r < 0) {
                free(lw->data);
                free(lw);
                return r;
        }
        return 0;
}

static void fail_start(WorkerLink *l, const char *what) {
        char buf[2048];
        /* A start by the monitor, which did not wait for the exec: what
         * the child said of it, in the words a start here would have. */
        int step = 0, r = l->exec_fd >= 0 ? worker_spawn_exec_result(l->exec_fd, &step) : 1;
        if (r < 0 && l->launch) {
                _cleanup_(vs_error_freep) VsError *err = NULL;
                (void)worker_spawn_error(l->launch, step, -r, &err);
                return link_end(l, API_ERROR_SANDBOX_UNAVAILABLE, vs_error_message(err));
        }
        if (r == 0)
                what = "its start never reached the exec (stopped on the way?)";
        const char *tail = l->errtail.len ? l->errtail.data : NULL;
        const char *diag = backend_diagnose(l->launch ? l->launch->backend : NULL, tail);
        if (diag)
                snprintf(buf, sizeof buf, "the jail could not start: %s (backend said: %s)", diag, tail);
        else if (tail)
                snprintf(buf, sizeof buf, "the jail could not start: %s; backend said: %s", what, tail);
        else
                snprintf(buf, sizeof buf, "the jail could not start: %s", what);
        /* one line */
        for (char *p = buf; *p; p++)
                if (*p == '\n')
                        *p = ' ';
        link_end(l, API_ERROR_SANDBOX_UNAVAILABLE, buf);
}

/* The handshake (handshake.h), fed message by message from on_read. */
static void handle_handshake(WorkerLink *l, JsonlMsg *m) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = handshake_feed(&l->hs, m, &out, &err);
        if (r == -EPERM) /* the jail refused: its own reason */
                return link_end(l, API_ERROR_SANDBOX_UNAVAILABLE, vs_error_message(err));
        if (r == -ENOMEM)
                return link_end(l, API_ERROR_INTERNAL, "out of memory");
        if (r < 0)
                return fail_start(l, vs_error_message(err));
        if (r == VS_HANDSHAKE_SEND) {
                if (link_write(l, &out) < 0)
                        return fail_start(l, "sending init failed");
                return;
        }
        l->layers = TAKE_PTR(l->hs.layers);
        l->degraded = TAKE_PTR(l->hs.degraded);
        uv_timer_stop(&l->timer);
        l->state = LINK_READY;
        l->ready_ms = l->last_used_ms = now_ms();
        /* Its start's exec-error pipe says nothing more: the worker that
         * answered has exec'd (one descriptor less for each live jail). */
        l->exec_fd = safe_close(l->exec_fd);
        /* What this jail seals, for the watch: a protected name that
         * appears outside it recycles the worker (watch.c). */
        l->sealed = l->launch ? TAKE_PTR(l->launch->protected_paths) : NULL;
        l->masked = l->launch ? TAKE_PTR(l->launch->verify_empty) : NULL;
        launch_trim(l->launch);
        for (char **d = l->degraded; d && *d; d++)
                log_warning("workspace %s: running degraded: %s", l->ws->path, *d);
        log_info("workspace %s: worker pid %d ready in %llu ms (generation %llu)", l->ws->path, (int)l->pid,
                 (unsigned long long)(l->ready_ms - l->spawned_ms), (unsigned long long)l->generation);
        if (l->ws->policy && l->ws->policy->backend->remote_plan)
                protect_arm(l->ws, l->ops->protect_changed); /* see protect_arm() */
        l->ops->ready(l->ws, l);
        /* Only now, with its queued calls in flight, can the slot go: a
         * waiting spawn may end an idle worker to make room, and this one
         * must not look idle. */
        l->ops->spawn_slot_free(l->srv, l);
}

static void handle_reply(WorkerLink *l, JsonlMsg *m) {
        /* What the call did to the tree was queued on inotify inside its
         * own syscalls, before the worker replied: handled first, so that a
         * repository it made ends the jail and is put aside before any
         * reply of this jail leaves (git-watch.h), and a masked path it
         * made ends the jail before its result is read. */
        if (l->ws && l->ws->hub) {
                hub_drain(l->ws->hub);
                if (l->state == LINK_DEAD)
                        return;
        }
        /* The same on the fanotify group (root: the masks' watch). */
        if (l->ws && l->ws->srv->fan) {
                fan_drain(l->ws->srv->fan);
                if (l->state == LINK_DEAD)
                        return;
        }
        /* A walk after lost events confirmed before any reply leaves. */
        if (l->ws) {
                watch_settle(l->ws);
                if (l->state == LINK_DEAD)
                        return;
        }
        ProtocolReplyHead h;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (protocol_decode_reply_head(m->obj, &h, &err) < 0 || !h.has_id) {
                char buf[512];
                snprintf(buf, sizeof buf, "protocol violation: %s", err ? vs_error_message(err) : "a reply without id");
                log_warning("workspace %s: worker pid %d: %s; ending it", l->ws ? l->ws->path : "?", (int)l->pid, buf);
                return link_end(l, API_ERROR_WORKER_CRASHED, buf);
        }
        Call **pp = &l->inflight;
        while (*pp && (*pp)->wid != h.id)
                pp = &(*pp)->next;
        if (!*pp) {
                log_warning("workspace %s: worker pid %d answered unknown id %llu; ending it", l->ws ? l->ws->path : "?",
                            (int)l->pid, (unsigned long long)h.id);
                return link_end(l, API_ERROR_WORKER_CRASHED, "protocol violation: a reply to no request");
        }
        Call *c = *pp;
        *pp = c->next;
        c->next = NULL;
        l->n_inflight--;
        l->last_used_ms = now_ms();
        c->done(c, l, m, API_OK, NULL);
        if (l->n_inflight == 0 && l->state == LINK_READY) {
                if (l->draining)
                        link_end(l, API_ERROR_WORKER_RECYCLED, "the policy changed");
                else if (l->ws)
                        l->ops->idle(l->ws, l);
        }
}

/* One read per turn of the loop, as for clients (server_read_turn): a jail
 * sending big replies must not hold every other workspace's. */
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
        WorkerLink *l = h->data;
        void *p = NULL;
        size_t n = 0;
        buf->base = NULL;
        buf->len = 0;
        l->yielded = !server_read_turn(l->srv, &l->read_turn);
        if (l->yielded || jsonl_reader_get_buffer(l->reader, 256 * 1024, &p, &n) < 0)
                return;
        buf->base = p;
        buf->len = n;
}

/* How the jail ended, when its end of the socket closed before the reap
 * (the usual order): its pid 1 is looked at without reaping it (WNOWAIT;
 * link_reaped() still reaps), for up to 20 ms while the namespace is torn
 * down. A crash is rare, and "killed by signal 9" (the OOM killer, a
 * SIGKILL from outside) or "exited with status 1" tells the cause where
 * "end of its output" told nothing. Empty when it is still running. */
static void jail_end_status(pid_t pid, char *out, size_t n) {
        for (int i = 0; i < 20; i++) {
                siginfo_t si = { 0 };
                if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
                        return;
                if (si.si_pid == pid) {
                        if (si.si_code == CLD_EXITED)
                                snprintf(out, n, "its jail exited with status %d", si.si_status);
                        else
                                snprintf(out, n, "its jail was killed by signal %d (%s)", si.si_status,
                                         strsignal(si.si_status));
                        return;
                }
                struct timespec ts = { 0, 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
        WorkerLink *l = s->data;
        if (l->state == LINK_DEAD)
                return;
        if (nread == UV_ENOBUFS && l->yielded) {
                l->yielded = false;
                return;
        }
        if (nread < 0) {
                uv_read_stop(s);
                if (l->state == LINK_SPAWNING) {
                        /* bwrap's own error may still be on its way to stderr. */
                        if (!uv_is_active((uv_handle_t *)&l->errpipe))
                                fail_start(l, l->end_reason ? l->end_reason : "the worker exited during the handshake");
                        else
                                l->end_eof = true;
                        return;
                }
                char why[256], how[96] = "";
                if (!l->end_reason && l->pid > 0)
                        jail_end_status(l->pid, how, sizeof how);
                snprintf(why, sizeof why, "the worker ended unexpectedly (%s)",
                         l->end_reason ? l->end_reason
                         : how[0]      ? how
                         : nread == UV_EOF ? "end of its output"
                                           : uv_strerror((int)nread));
                log_warning("workspace %s: worker pid %d: %s", l->ws ? l->ws->path : "?", (int)l->pid, why);
                if (l->ws)
                        l->ws->counters.crashes++;
                l->srv->counters.crashes++;
                return link_end(l, API_ERROR_WORKER_CRASHED, why);
        }
        if (nread == 0)
                return;
        jsonl_reader_commit(l->reader, (size_t)nread);
        while (l->state != LINK_DEAD) {
                JsonlMsg m = JSONL_MSG_INIT;
                _cleanup_(vs_error_freep) VsError *err = NULL;
                int r = jsonl_reader_next(l->reader, &m, &err);
                if (r == -EAGAIN)
                        break;
                if (r < 0) {
                        char why[512];
                        snprintf(why, sizeof why, "protocol violation: %s", vs_error_message(err));
                        log_warning("workspace %s: worker pid %d: %s; ending it", l->ws ? l->ws->path : "?",
                                    (int)l->pid, why);
                        if (l->state == LINK_SPAWNING)
                                return fail_start(l, why);
                        return link_end(l, API_ERROR_WORKER_CRASHED, why);
                }
                if (l->state == LINK_SPAWNING)
                        handle_handshake(l, &m);
                else if (protocol_is_event(m.obj)) {
                        _cleanup_free_ char *why = NULL;
                        unsigned had = l->n_sessions;
                        if (!l->ops->session_event(l, &m, &why)) {
                                log_warning("workspace %s: worker pid %d: %s; ending it", l->ws ? l->ws->path : "?",
                                            (int)l->pid, why ? why : "protocol violation");
                                link_end(l, API_ERROR_WORKER_CRASHED, why ? why : "protocol violation: a bad session event");
                        } else if (had && l->n_sessions == 0 && l->n_inflight == 0 && l->state == LINK_READY &&
                                   !l->draining && l->ws)
                                l->ops->idle(l->ws, l); /* the last session gone: the idle clock starts */
                } else
                        handle_reply(l, &m);
                jsonl_msg_done(&m);
        }
}

static void on_err_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
        static char b[4096];
        buf->base = b;
        buf->len = sizeof b;
}

static void on_err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
        WorkerLink *l = s->data;
        if (nread < 0) {
                uv_read_stop(s);
                flush_errline(l);
                if (l->state == LINK_SPAWNING && l->end_eof)
                        fail_start(l, l->end_reason ? l->end_reason : "the worker exited during the handshake");
                return;
        }
        for (ssize_t i = 0; i < nread; i++) {
                char ch = buf->base[i];
                if (ch == '\n' || l->errline.len >= 2048) {
                        flush_errline(l);
                        if (ch == '\n')
                                continue;
                }
                (void)!strbuf_appendc(&l->errline, ch);
        }
        /* Keep the last 1 KiB for start-up diagnostics. */
        (void)!strbuf_append(&l->errtail, buf->base, (size_t)nread);
        if (l->errtail.len > 1024)
                strbuf_consume(&l->errtail, l->errtail.len - 1024);
}

static void on_handshake_timeout(uv_timer_t *t) {
        WorkerLink *l = t->data;
        if (l->state == LINK_SPAWNING)
                fail_start(l, "the worker did not finish its handshake in time");
}

void links_reap(Server *srv) {
        /* link_reaped may free the link or start another: walk again. */
        for (bool again = true; again;) {
                again = false;
                for (WorkerLink *l = all_links; l; l = l->next) {
                        int status;
                        pid_t pid = l->pid;
                        if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
                                link_reaped(srv, pid, status);
                                again = true;
                                break;
                        }
                }
        }
}

/* ---- the start: the slow part on the thread pool ---- */

struct LinkStart {
        uv_work_t work;           /* first: the thread pool hands this back */
        Server *srv;
        Workspace *ws;            /* NULL once the workspace went */
        const LinkOps *ops;
        bool stale;               /* not wanted any more: discarded when it arrives */
        const VsPolicy *policy;   /* the workspace's when the start began ... */
        VsPolicy *owned_policy;   /* ... kept here once the workspace replaced it */
        uint64_t generation;
        VsPutAsides *failed_aside; /* what a start that failed put aside (o.put_aside_out) */
        VsLaunchOptions o;        /* strings borrowed from the server, but: */
        MonitorMaker maker;       /* the monitor makes its placeholders (o.maker then points here) */
        char *proxy_socket;
        char *ca_bundle;          /* a copy: the proxy's may be freed at shutdown while the thread reads */
        char **secret_env;        /* NAME=placeholder (proxy_secrets_renew) */
        char **seen_by_others;    /* o.seen_by_others (seen_by_others()) */
        char *first_of;           /* the workspace's path while its first-jail time is to be read (on the thread) */
        int first_k;              /* jail_first_start()'s answer for it ... */
        struct timespec first;    /* ... and the time links count from */
        /* the thread's result */
        int r;
        VsLaunch *launch;
        VsError *err;
};

/* On a thread pool thread: the mask walk, the probes, the idmap forks,
 * then the docker removal. Reads s->policy (kept alive for it, see
 * link_start_keep_policy) and nothing of the loop's. */
static void start_work(uv_work_t *w) {
        LinkStart *s = (LinkStart *)w;
        /* Several at once, one per thread of the pool: what launch_prepare
         * keeps for the process is taken under locks of its own (the
         * seccomp programs, seccomp.c's probes, the owners' identities),
         * so one owner's slow start (a walk of a big tree, a monitor child
         * held 3 s in a FUSE home) holds no other owner's: one lock for
         * them all made an owner's slow git config hold every start behind
         * it for 36-54 s (attack review 12). */
        if (s->first_of) {
                /* File I/O and, as root, the owner's password entry (NSS):
                 * off the loop. A store that had no record counts from now,
                 * taken before the record is made: no later link is missed. */
                struct timespec now = now_wall_coarse();
                s->first_k = jail_first_start(s->o.state_dir, s->first_of, &s->o.links_since);
                s->first = s->first_k > 0 ? s->o.links_since : now;
        }
        s->r = launch_prepare(s->policy, &s->o, &s->launch, &s->err);
        if (s->r >= 0)
                worker_spawn_pre(s->launch);
}

static void start_free(LinkStart *s) {
        free(s->first_of);
        launch_free(s->launch);
        put_asides_free(s->failed_aside);
        vs_error_free(s->err);
        policy_free(s->owned_policy);
        free(s->proxy_socket);
        free(s->ca_bundle);
        strv_free(s->secret_env);
        strv_free(s->seen_by_others);
        free(s);
}

/* Whether ws is open in the root monitor (opened now if it was not): its
 * owner in *ret_owner; else false, said in the log. */
static bool monitor_opened(Workspace *ws, uid_t *ret_owner) {
        _cleanup_(vs_error_freep) VsError *e = NULL;
        if (cgroup_monitor_open(ws, ret_owner, &e) >= 0)
                return true;
        log_warning("workspace %s: not opened in the root monitor: %s", ws->path, vs_error_message(e));
        return false;
}

/* Whether the root monitor starts ws's jail: a local one (bwrap, as the
 * workspace's owner, who owns the directory the monitor opened; a
 * root-owned workspace's idmapped trees are still made here), with
 * the monitor running. It joins the groups it made, so the ones opened
 * here are not passed; its child is still this process's. */
static bool via_monitor(Workspace *ws, const VsLaunch *l) {
        /* A local jail only: the other backends' clients (docker, ssh,
         * Modal's bridge) are no bwrap jail, and the monitor starts none. */
        if (!ws->srv->monitor || link_spawn_fn != worker_spawn || !l->sandboxed || !l->switch_user ||
            !l->backend_name || !streq(l->backend_name, "local") || (l->pre_argv && l->pre_argv[0]))
                return false;
        uid_t owner;
        if (!monitor_opened(ws, &owner))
                return false;
        /* The monitor starts an ordinary account's jails only, always in
         * the groups it made: a system account's workspace, or one whose
         * groups could not be made (its limits degraded, said), is
         * started here as before. */
        bool grouped = !ws->srv->cgroup_version || ws->cgroup_fds[0] >= 0;
        /* A root-owned workspace's jail runs as the idmap identity, its
         * trees idmapped by the monitor (only below the directory it
         * opened). */
        if (l->idmapped)
                return owner == 0 && l->uid == VS_IDMAP_UID && l->gid == VS_IDMAP_GID && grouped;
        return owner == l->uid && uid_is_ordinary(owner) && !l->n_idmap && grouped;
}

/* On the loop, with the prepared launch: the fork (quick), the pipes, the
 * handshake's timer. Takes *launchp on success. */
static int link_spawn(Workspace *ws, const LinkOps *ops, VsLaunch **launchp, bool proxied, WorkerLink **ret,
                      VsError **err) {
        Server *srv = ws->srv;
        VsLaunch *launch = *launchp;
        int r;
        /* Only the jail's uid may use the proxy. */
        if (proxied && ws->proxy)
                proxy_set_peer(ws->proxy, launch->uid);
        /* The child joins the workspace's cgroups before it execs. */
        _cleanup_close_ int cg0 = -EBADF, cg1 = -EBADF;
        if (launch->sandboxed) {
                cgroup_prepare(ws);
                cgroup_open_procs(ws, &cg0, &cg1);
                if (cg0 >= 0) {
                        launch->cgroup_fds[launch->n_cgroup_fds++] = cg0;
                        if (launch->pids)
                                launch->pids = cgroup_nproc_backstop(launch->pids);
                }
                if (cg1 >= 0)
                        launch->cgroup_fds[launch->n_cgroup_fds++] = cg1;
        } else if ((cg0 = cgroup_host_procs_fd(srv)) >= 0)
                /* Unsandboxed: no limits, but ended with the daemon. */
                launch->cgroup_fds[launch->n_cgroup_fds++] = cg0;
        WorkerLink *l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        l->exec_fd = -EBADF;
        if ((r = jsonl_reader_new(&l->reader)) < 0) {
                free(l);
                return r;
        }
        VsWorkerProc proc = { .fd = -EBADF, .stderr_fd = -EBADF };
        /* As another uid (a root daemon's jail, the monitor's or its own
         * start), the exec is not awaited on the loop: that uid's owner
         * can stop the child before it. */
        bool monitors = via_monitor(ws, launch);
        /* Left to the monitor, which does not start this one (its groups
         * could not be made): made here, on the loop (a fork, rarely). */
        if (!monitors && launch->n_idmap && (r = launch_idmap_prepare(launch, err)) < 0) {
                jsonl_reader_free(l->reader);
                free(l);
                return r;
        }
        if (monitors)
                r = monitor_link_jail_spawn(srv, ws->monitor_ws, ws->path, ws->generation, launch, &proc, &l->exec_fd, err);
        else if (launch->switch_user && link_spawn_fn == worker_spawn)
                r = worker_spawn_detached(launch, &proc, &l->exec_fd, err);
        else
                r = link_spawn_fn(launch, &proc, err);
        if (r < 0) {
                jsonl_reader_free(l->reader);
                free(l);
                return r;
        }
        l->srv = srv;
        l->ws = ws;
        l->ops = ops;
        l->state = LINK_SPAWNING;
        l->generation = ws->generation;
        l->launch = TAKE_PTR(*launchp);
        l->by_monitor = monitors;
        l->monitor_ws = ws->monitor_ws;
        handshake_init(&l->hs, l->launch);
        l->pid = proc.pid;
        l->spawned_ms = now_ms();
        l->next = all_links;
        all_links = l;
        /* srv->n_workers counted it since link_start. */

        uv_pipe_init(srv->loop, &l->pipe, 0);
        uv_pipe_init(srv->loop, &l->errpipe, 0);
        uv_timer_init(srv->loop, &l->timer);
        l->pipe.data = l->errpipe.data = l->timer.data = l;
        l->open_handles = 3;
        int r1 = uv_pipe_open(&l->pipe, proc.fd);
        int r2 = proc.stderr_fd >= 0 ? uv_pipe_open(&l->errpipe, proc.stderr_fd) : UV_EBADF;
        if (r1 < 0)
                safe_close(proc.fd);
        if (r2 < 0)
                safe_close(proc.stderr_fd);
        if (r1 < 0) {
                srv->n_workers++; /* link_end counts it out */
                link_end(l, API_ERROR_SANDBOX_UNAVAILABLE, "cannot watch the worker's socket");
                return vs_error_set_kind(err, r1, api_error_name(API_ERROR_SANDBOX_UNAVAILABLE),
                                         "cannot watch the worker's socket: %s", uv_strerror(r1));
        }
        uv_read_start((uv_stream_t *)&l->pipe, on_alloc, on_read);
        if (r2 == 0)
                uv_read_start((uv_stream_t *)&l->errpipe, on_err_alloc, on_err_read);
        uv_timer_start(&l->timer, on_handshake_timeout, LINK_HANDSHAKE_TIMEOUT_MS, 0);
        log_info("workspace %s: spawned %s worker pid %d", ws->path, l->launch->sandboxed ? "jailed" : "direct",
                 (int)l->pid);
        *ret = l;
        return 0;
}

static void start_done(uv_work_t *w, int status) {
        LinkStart *s = (LinkStart *)w;
        Workspace *ws = s->ws;
        if (!ws) {
                /* The workspace went meanwhile (daemon exit). */
                s->srv->n_workers--;
                start_free(s);
                return;
        }
        Server *srv = ws->srv;
        WorkerLink *l = NULL;
        _cleanup_(vs_error_freep) VsError *err = TAKE_PTR(s->err);
        if (s->first_of) {
                if (s->first_k < 0)
                        log_warning("workspace %s: %s/first-jails: %s; a masked link a jail made before this daemon "
                                    "started is refused, not put aside",
                                    ws->path, srv->opt.state_dir, strerror(-s->first_k));
                if (ws->links_since.tv_sec == 0 && ws->links_since.tv_nsec == 0)
                        ws->links_since = s->first;
        }
        int r = s->r;
        if (status < 0)
                r = vs_error_set_kind(&err, status, api_error_name(API_ERROR_SANDBOX_UNAVAILABLE),
                                      "the start was cancelled: %s", uv_strerror(status));
        /* A policy change, a masked path appearing, a recycle or the daemon
         * exiting while it was prepared: what it prepared is not what
         * holds now. */
        bool stale = s->stale || s->generation != ws->generation || srv->shutting_down;
        /* Renamed by the start, whatever becomes of it. */
        const VsPutAsides *aside = r >= 0 && s->launch ? s->launch->put_aside : s->failed_aside;
        for (size_t i = 0; aside && i < aside->n; i++) {
                const VsPutAside *a = &aside->v[i];
                log_warning("workspace %s: %s, a masked symlink changed since its first jail started, leads where no "
                            "mask reaches what the host writes through it; %s%s",
                            ws->path, a->link, a->moved ? "put aside as " : "removed (its put-aside names were all taken)",
                            a->moved ? a->moved : "");
                s->ops->host_run(ws, a->link);
                if (a->moved)
                        s->ops->host_run(ws, a->moved);
        }
        if (r >= 0 && !stale)
                r = link_spawn(ws, s->ops, &s->launch, !!s->proxy_socket, &l, &err);
        if (!l)
                srv->n_workers--;
        const LinkOps *ops = s->ops;
        start_free(s);
        ops->started(ws, l, stale && r >= 0 ? 0 : r, err);
}

bool link_monitor_maker(Workspace *ws, MonitorMaker *ret) {
        if (!ws->srv->monitor || !ws->policy || !ws->policy->sandboxed)
                return false;
        uid_t owner;
        if (!monitor_opened(ws, &owner))
                return false;
        bool local = streq(ws->policy->backend->name, "local");
        if (!uid_is_ordinary(owner) && !(owner == 0 && local))
                return false;
        monitor_maker_init(ret, ws->srv, ws->monitor_ws, ws->policy->workspace);
        ret->owner_known = true;
        ret->owner = owner;
        return true;
}

/* The listed paths of the daemon's other sandboxed workspaces that lie in
 * ws's tree (and the workspace itself where a jail sees it for want of a
 * listed path over it): a masked link's missing target there is put
 * aside, not refused (jail-plan.h VsLinkAside). */
static int seen_by_others(Workspace *ws, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (Workspace *o = ws->srv->workspaces; o; o = o->next) {
                const VsPolicy *p = o->policy;
                if (o == ws || !p || !p->sandboxed)
                        continue;
                const char *ws_seen = jail_plan_uncovered_workspace(p);
                for (size_t pass = 0; pass < 3; pass++) {
                        size_t n = pass == 2 ? 1 : pass ? p->n_ro : p->n_rw;
                        for (size_t i = 0; i < n; i++) {
                                const VsPath *vp = pass == 2 ? NULL : pass ? &p->ro_paths[i] : &p->rw_paths[i];
                                /* A listed path missing when its config was
                                 * read, or waiting for approval, where it
                                 * would be: the host's write through a link
                                 * there lands where that jail sees once it
                                 * is made or approved (attack review 11's
                                 * L and N). */
                                const char *r = vp ? vs_path_where(vp) : ws_seen;
                                if (r && path_is_below_or_equal(r, ws->policy->workspace) && !strv_contains(l, r) && strv_extend(&l, r) < 0)
                                        return -ENOMEM;
                        }
                }
                /* What a change waiting for approval lists: bound once
                 * the host allows it. */
                for (char **q = p->pending_listed; q && *q; q++)
                        if (path_is_below_or_equal(*q, ws->policy->workspace) && !strv_contains(l, *q) && strv_extend(&l, *q) < 0)
                                return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int link_start(Workspace *ws, const LinkOps *ops, LinkStart **ret, VsError **err) {
        Server *srv = ws->srv;
        _cleanup_free_ LinkStart *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->o = (VsLaunchOptions){
                .worker_path = srv->opt.worker_path,
                .runtime_dir = srv->instance_dir,
                .runtime_root = srv->opt.runtime_dir,
                .instance = ws->counters.spawns,
                .state_dir = srv->opt.state_dir,
                .walk_cache = srv->walk_cache.dir ? &srv->walk_cache : NULL,
                /* A root-owned workspace's trees: the monitor idmaps them. */
                .idmap_later = srv->monitor != NULL,
                .links_since = ws->links_since,
                .put_aside_out = &s->failed_aside,
        };
        /* The first start of the workspace's jails ever (as the store
         * remembers it: jail_first_start) puts nothing aside; every later
         * one, in this daemon or after a restart, what changed since that
         * began. Before, only this daemon's first start counted: a link a
         * jail made before a restart was taken for the user's own and
         * left, refusing each start, while the host wrote through it.
         * Read on the thread (s->first_of, below). */
        const char *proxy_socket = NULL;
        int r;
        if (ws->policy->net_allowlist && (r = proxy_ensure(ws, (uid_t)-1, &proxy_socket, err)) < 0)
                return r;
        if (proxy_socket && !(s->proxy_socket = strdup(proxy_socket)))
                return -ENOMEM;
        if (proxy_socket && (r = proxy_secrets_renew(ws, &s->secret_env, err)) < 0) {
                free(s->proxy_socket);
                strv_free(s->secret_env);
                return r;
        }
        /* Forwarded ports listen from the first worker of their policy on. */
        if ((r = ops->prepare(ws, err)) < 0) {
                free(s->proxy_socket);
                strv_free(s->secret_env);
                return r;
        }
        s->o.proxy_socket = s->proxy_socket;
        s->o.secret_env = s->secret_env;
        const char *ca = proxy_ca_bundle(ws);
        if (ca && !(s->ca_bundle = strdup(ca))) {
                free(s->proxy_socket);
                strv_free(s->secret_env);
                return -ENOMEM;
        }
        s->o.ca_bundle = s->ca_bundle;
        s->srv = srv;
        s->ws = ws;
        s->ops = ops;
        s->policy = ws->policy;
        if (link_monitor_maker(ws, &s->maker))
                s->o.maker = &s->maker.maker;
        s->generation = ws->generation;
        /* Set before the thread pool may read it. */
        bool first = ws->links_since.tv_sec == 0 && ws->links_since.tv_nsec == 0;
        if (first && !(s->first_of = strdup(ws->path)))
                r = -ENOMEM;
        else if ((r = seen_by_others(ws, &s->seen_by_others)) >= 0) {
                s->o.seen_by_others = s->seen_by_others;
                r = uv_queue_work(srv->loop, &s->work, start_work, start_done);
        }
        if (r < 0) {
                free(s->proxy_socket);
                free(s->ca_bundle);
                strv_free(s->secret_env);
                strv_free(s->seen_by_others);
                free(s->first_of);
                return r == -ENOMEM ? r : vs_error_set_kind(err, r, api_error_name(API_ERROR_SANDBOX_UNAVAILABLE),
                                         "cannot start the worker: %s", uv_strerror(r));
        }
        srv->n_workers++;
        *ret = TAKE_PTR(s);
        return 0;
}

void link_start_discard(LinkStart *s) {
        s->stale = true;
}

void link_start_detach(LinkStart *s) {
        s->ws = NULL;
}

void link_start_keep_policy(LinkStart *s, VsPolicy *p) {
        if (p && p == s->policy && !s->owned_policy)
                s->owned_policy = p;
        else
                policy_free(p);
}

void link_send(WorkerLink *l, Call *c) {
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        c->wid = ++l->next_id;
        int r = c->build(c, c->wid, &out);
        if (r < 0) {
                c->done(c, l, NULL, r == -EMSGSIZE || r == -ENOBUFS ? API_ERROR_TOO_LARGE : API_ERROR_INTERNAL,
                        r == -EMSGSIZE || r == -ENOBUFS ? "the request is too large for the worker protocol"
                                                        : "the request could not be encoded");
                return;
        }
        if (link_write(l, &out) < 0) {
                c->done(c, l, NULL, API_ERROR_INTERNAL, "out of memory");
                return;
        }
        c->next = l->inflight;
        l->inflight = c;
        l->n_inflight++;
        l->last_used_ms = now_ms();
}

/* The worker's cancel for a call of this link: its own request, answered
 * by the worker with found true or false (the exec may have ended first),
 * which says nothing more; the cancelled exec replies on its own, with
 * "cancelled": true. */
typedef struct CancelCall {
        Call call; /* first: the link hands this back */
        uint64_t target;
} CancelCall;

static int cancel_build(Call *c, uint64_t wid, StrBuf *out) {
        return protocol_encode_cancel_request(out, wid, ((CancelCall *)c)->target);
}

static void cancel_done(Call *c, WorkerLink *l, JsonlMsg *reply, ApiError code, const char *message) {
        free(c);
}

bool link_cancel(WorkerLink *l, Call *c) {
        if (l->state != LINK_READY)
                return false;
        Call *i = l->inflight;
        while (i && i != c)
                i = i->next;
        if (!i)
                return false;
        CancelCall *k = calloc(1, sizeof *k);
        if (!k)
                return false;
        k->target = c->wid;
        k->call.build = cancel_build;
        k->call.done = cancel_done;
        link_send(l, &k->call);
        return true;
}

json_t *link_status(WorkerLink *l) {
        static const char *const names[] = { "spawning", "ready", "dead" };
        json_t *o = json_object();
        if (!o)
                return NULL;
        json_object_set_new(o, "state", json_string(l->draining ? "draining" : names[l->state]));
        json_object_set_new(o, "pid", json_integer(l->pid));
        json_object_set_new(o, "generation", json_integer((json_int_t)l->generation));
        json_object_set_new(o, "in_flight", json_integer((json_int_t)l->n_inflight));
        json_object_set_new(o, "sandboxed", json_boolean(l->launch->sandboxed));
        json_object_set_new(o, "age_ms", json_integer((json_int_t)(now_ms() - l->spawned_ms)));
        json_object_set_new(o, "idle_ms", json_integer((json_int_t)(now_ms() - l->last_used_ms)));
        json_t *a = json_array();
        for (char **s = l->layers; a && s && *s; s++)
                json_array_append_new(a, json_string(*s));
        json_object_set_new(o, "layers", a);
        a = json_array();
        for (char **s = l->degraded; a && s && *s; s++)
                json_array_append_new(a, json_string(*s));
        json_object_set_new(o, "degraded", a);
        return o;
}

void links_kill_all(Server *srv) {
        for (WorkerLink *l = all_links; l; l = l->next)
                if (l->pid > 0)
                        link_kill(l);
        for (WorkerLink *l = all_links; l; l = l->next)
                if (l->pid > 0) {
                        while (waitpid(l->pid, NULL, 0) < 0 && errno == EINTR)
                                ;
                        l->pid = 0;
                }
}
