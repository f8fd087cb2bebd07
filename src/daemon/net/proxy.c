/* SPDX-License-Identifier: MIT */
/* The network allowlist's proxy, the daemon's side. The bytes the jail
 * sends through the proxy are parsed in a process of its own,
 * vectora-sandbox-proxy (src/proxy/), one per daemon, that has no
 * capability, runs as an unprivileged user when the daemon is root, and
 * is held by no_new_privs, Landlock and a seccomp allowlist
 * (docs/threat-model.md, "What runs with which privileges"). The daemon
 * keeps what is its own:
 *
 *   - each workspace's listening socket: it makes it (under the runtime
 *     directory, mode 0666, the jail's uid checked by the proxy with
 *     SO_PEERCRED), keeps it, and passes a copy to the proxy with
 *     SCM_RIGHTS, so the socket (mounted into the jail) outlives a proxy;
 *   - the rules: sent with the listener, again whenever the policy
 *     changes (proxy_policy_changed);
 *   - the denials: the proxy reports each; the daemon audits it and keeps
 *     the recent ones for the call that ran then (network_denied).
 *
 * When the proxy dies, the connections it carried end (the jail sees them
 * closed), the calls running then say so in degraded, and the daemon
 * starts another after a bounded backoff and sends every listener and its
 * rules again; connections made meanwhile wait in the listener's backlog.
 * Jails are not touched. Messages: proxy-ctl.h. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "fd-util.h"
#include "log.h"
#include "path-util.h"
#include "proxy-ctl.h"
#include "proxy-down.h"
#include "proxy-log.h"
#include "proxy-ca.h"
#include "proxy-secrets.h"
#include "proxy.h"
#include "seccomp.h"
#include "server.h"
#include "sha256.h"
#include "spawn-util.h"
#include "time-util.h"
#include "vs-build-config.h"
#include "workspace.h"

#define PROXY_RECENT_DENIALS 32
#define RESTART_MIN_MS 100
#define RESTART_MAX_MS 10000
#define STABLE_US (10 * 1000000ull) /* a proxy up this long restarts at once when it dies */

typedef struct ProxyDenial {
        uint64_t time_us;
        char host[256];
        uint16_t port;
        char reason[400];
} ProxyDenial;

struct Proxy {
        Workspace *ws;
        uint64_t id;
        int fd; /* the listener */
        char *path;
        uid_t peer_uid;
        uint64_t open, total, denied;
        uint64_t audit_window_us; /* the denials audited one by one (record_denial) */
        unsigned audit_n;
        uint64_t audit_held;
        uv_poll_t *down; /* while no proxy runs: the refusals */
        ProxyDenial recent[PROXY_RECENT_DENIALS];
        size_t n_recent, recent_next;
        ProxySecrets secrets; /* the current jail's placeholders (proxy_secrets_renew) */
        char *ca_bundle;      /* the jail's trust bundle with the workspace's CA (proxy-ca.h) */
        Proxy *next;
};

/* The proxy process; one per daemon. */
static struct {
        uv_loop_t *loop;
        Proxy *all;
        uint64_t next_id;
        pid_t pid;
        int ctl; /* the daemon's end of the control socket, -1 when no process */
        uv_poll_t *poll;
        struct Queued *queue, **queue_tail; /* what its socket did not take yet, in order */
        size_t queued;                      /* bytes in queue */
        uint64_t queue_moved_us;            /* when the queue last began or shrank */
        uv_timer_t *timer; /* the restart */
        uint64_t started_us, died_us, backoff_ms;
        unsigned restarts;
        char last_exit[64];
        bool seccomp;      /* what the running proxy said of itself */
        int landlock;
} P = { .ctl = -1 };

static int proc_start(VsError **err);
static void proc_end(const char *why);

/* ---- talking to the proxy ------------------------------------------------------ */

static Proxy *find(uint64_t id) {
        for (Proxy *px = P.all; px; px = px->next)
                if (px->id == id)
                        return px;
        return NULL;
}

/* A message its socket did not take yet: a restart hands over every
 * listener and its rules at once, before the new proxy reads a byte, and
 * that may be more than the socket's buffer holds (a few 64 KiB lists).
 * Sent in order once the socket is writable; a proxy that leaves more
 * than PROXY_QUEUE_MAX untaken, or takes nothing for PROXY_QUEUE_STUCK_US,
 * is stuck, and ended when the daemon next has something for it. */
#define PROXY_QUEUE_MAX (64u << 20)
#define PROXY_QUEUE_STUCK_US (10 * 1000000ull) /* nothing taken for this long */

typedef struct Queued {
        struct Queued *next;
        int fd; /* a copy of the listener, or -1 */
        size_t len;
        char data[];
} Queued;

static void on_ctl(uv_poll_t *p, int status, int events);

static void queue_clear(void) {
        for (Queued *q = P.queue, *next; q; q = next) {
                next = q->next;
                if (q->fd >= 0)
                        close(q->fd);
                explicit_bzero(q->data, q->len);
                free(q);
        }
        P.queue = NULL;
        P.queue_tail = &P.queue;
        P.queued = 0;
}

static ssize_t send_one(const char *s, size_t len, int fd) {
        ssize_t k = send_with_fds(P.ctl, s, len, &fd, fd >= 0 ? 1 : 0, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0)
                errno = (int)-k;
        return k < 0 ? -1 : k;
}

/* What waited, in order, as far as the socket takes it; then back to
 * reading only. */
static void queue_flush(void) {
        while (P.ctl >= 0 && P.queue) {
                Queued *q = P.queue;
                if (send_one(q->data, q->len, q->fd) < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                proc_end("its control socket failed");
                        return;
                }
                P.queue = q->next;
                if (!P.queue)
                        P.queue_tail = &P.queue;
                P.queued -= q->len;
                P.queue_moved_us = now_us();
                if (q->fd >= 0)
                        close(q->fd);
                explicit_bzero(q->data, q->len);
                free(q);
        }
        if (P.ctl >= 0 && P.poll)
                uv_poll_start(P.poll, UV_READABLE | UV_DISCONNECT, on_ctl);
}

/* One message to the proxy, fd attached when >= 0: at once, or after what
 * waits already. */
static void send_text(const char *s, size_t len, int fd);
static void send_secret_text(char *s, size_t len, int fd);
static void send_ctl(const ProxyCtlMsg *m, int fd) {
        if (P.ctl < 0)
                return; /* the restart sends everything */
        _cleanup_free_ char *s = proxy_ctl_encode(m);
        if (!s) {
                proc_end("out of memory encoding a message");
                return;
        }
        size_t len = strlen(s);
        if (m->op == PROXY_CTL_SECRET)
                send_secret_text(s, len, fd);
        else
                send_text(s, len, fd);
}

/* A secret's message holds its value: no copy of it stays in freed heap. */
static void send_secret_text(char *s, size_t len, int fd) {
        send_text(s, len, fd);
        explicit_bzero(s, len);
}

static void send_text(const char *s, size_t len, int fd) {
        if (!P.queue && send_one(s, len, fd) >= 0)
                return;
        if (!P.queue && errno != EAGAIN && errno != EINTR) {
                proc_end("its control socket failed");
                return;
        }
        if (!P.queue)
                P.queue_moved_us = now_us();
        else if (P.queued + len > PROXY_QUEUE_MAX || now_us() - P.queue_moved_us > PROXY_QUEUE_STUCK_US) {
                proc_end("it stopped reading its control socket");
                return;
        }
        Queued *q = malloc(sizeof *q + len);
        int copy = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
        if (!q || (fd >= 0 && copy < 0)) {
                free(q);
                proc_end("out of memory queueing a message");
                return;
        }
        *q = (Queued) { .fd = copy, .len = len };
        memcpy(q->data, s, len);
        if (!P.queue)
                P.queue_tail = &P.queue;
        *P.queue_tail = q;
        P.queue_tail = &q->next;
        P.queued += len;
        if (P.poll)
                uv_poll_start(P.poll, UV_READABLE | UV_WRITABLE | UV_DISCONNECT, on_ctl);
}

static void fill_rules(ProxyCtlMsg *m, const Workspace *ws) {
        const VsPolicy *p = ws ? ws->policy : NULL;
        m->allow = p && p->net_allowlist;
        m->config = p ? p->config_path : NULL;
        m->rules = p && p->net_allowlist ? p->net_rules : NULL;
        m->n_rules = p && p->net_allowlist ? p->n_net_rules : 0;
}

/* A workspace's rules, with its listener (add) or alone (rules). A list
 * too long for one control message (PROXY_CTL_MAX once encoded; the
 * config allows 1024 entries) is not sent as is: the proxy would refuse
 * the message and keep the rules it had, or leave the listener unserved.
 * It gets no rules instead, so every request is refused, and the refusal
 * (the config field, which the 403 names) and the daemon's log say why. */
/* [[sandbox.http]], one message a host, after the rules whose set they
 * join (in force at the commit, send_rules). An entry too long for one message goes with no allow
 * entry (every request to the host refused) and says why. */
static void send_http_rules(Proxy *px) {
        const VsPolicy *p = px->ws ? px->ws->policy : NULL;
        for (size_t i = 0; p && p->net_allowlist && i < p->n_http; i++) {
                char where[1024];
                snprintf(where, sizeof where, "%s line %u", p->config_path ? p->config_path : "vectora.toml", p->http[i].line);
                ProxyCtlMsg m = { .op = PROXY_CTL_HTTP, .ws = px->id, .host = p->http[i].host, .config = where,
                                  .http_allow = p->http[i].allow, .n_http_allow = p->http[i].n_allow };
                _cleanup_free_ char *s = proxy_ctl_encode(&m);
                if (s && strlen(s) > PROXY_CTL_MAX) {
                        log_error("%s: the rules for %s are longer than the proxy takes; every request to it is refused",
                                  px->ws->path, p->http[i].host);
                        snprintf(where, sizeof where, "%s line %u, whose allow list is longer than the proxy takes",
                                 p->config_path ? p->config_path : "vectora.toml", p->http[i].line);
                        m.http_allow = NULL;
                        m.n_http_allow = 0;
                }
                send_ctl(&m, -1);
        }
}

static void send_rules(Proxy *px, ProxyCtlOp op, int fd) {
        ProxyCtlMsg m = { .op = op, .ws = px->id, .peer = px->peer_uid };
        fill_rules(&m, px->ws);
        _cleanup_free_ char *s = proxy_ctl_encode(&m);
        char why[1024];
        if (s && strlen(s) > PROXY_CTL_MAX) {
                snprintf(why, sizeof why,
                         "%s (its network list of %zu entries is longer than the proxy takes: %zu bytes encoded, at most %d; every request is refused until it is shorter)",
                         m.config ? m.config : "vectora.toml", m.n_rules, strlen(s), PROXY_CTL_MAX);
                log_error("%s: %s", px->ws ? px->ws->path : "?", why);
                m.rules = NULL;
                m.n_rules = 0;
                m.config = why;
        }
        send_ctl(&m, fd);
        /* The secrets and [[sandbox.http]] rules join the new set. */
        for (size_t i = 0; i < px->secrets.n; i++) {
                px->secrets.msgs[i].ws = px->id;
                send_ctl(&px->secrets.msgs[i], -1);
        }
        send_http_rules(px);
        /* The proxy puts the whole set in force here, not message by
         * message: no request is checked against a part of it. */
        send_ctl(&(ProxyCtlMsg) { .op = PROXY_CTL_COMMIT, .ws = px->id }, -1);
}

static void send_add(Proxy *px) {
        send_rules(px, PROXY_CTL_ADD, px->fd);
}

/* Each denial is one audit record and one log line, up to
 * DENIAL_AUDIT_BURST a workspace per DENIAL_AUDIT_WINDOW_US; past that
 * they are counted, and one record says how many were not itemized. A
 * jail's loop of refused requests (some 9 000 a second through the proxy)
 * would otherwise grow the audit log by megabytes a second for as long as
 * it runs. The call's network_denied and status's count see them all. */
#define DENIAL_AUDIT_BURST 100
#define DENIAL_AUDIT_WINDOW_US (10 * 1000000ull)

static void audit_denial(Proxy *px, json_t *target, const char *reason) {
        AuditRecord a = {
                .uid = px->peer_uid,
                .workspace = px->ws->path,
                .tool = "network",
                .target = target,
                .sandboxed = true,
                .generation = px->ws->generation,
                .outcome = "denied",
                .code = api_error_name(API_ERROR_NETWORK_DENIED),
                .reason = reason,
        };
        audit_write(&a);
}

/* The record for the denials counted but not itemized, if any. */
static void audit_held(Proxy *px) {
        if (!px->audit_held)
                return;
        char why[200];
        snprintf(why, sizeof why,
                 "%llu more network denials were not audited one by one (more than %d in %llu s, or sent by the proxy "
                 "while the daemon's socket was full)",
                 (unsigned long long)px->audit_held, DENIAL_AUDIT_BURST, (unsigned long long)(DENIAL_AUDIT_WINDOW_US / 1000000));
        json_t *target = json_pack("{s:I}", "not_itemized", (json_int_t)px->audit_held);
        audit_denial(px, target, why);
        json_decref(target);
        log_warning("%s: %s", px->ws->path, why);
        px->audit_held = 0;
}

static void record_denial(Proxy *px, const ProxyCtlMsg *m) {
        px->denied++;
        ProxyDenial *d = &px->recent[px->recent_next];
        px->recent_next = (px->recent_next + 1) % PROXY_RECENT_DENIALS;
        if (px->n_recent < PROXY_RECENT_DENIALS)
                px->n_recent++;
        d->time_us = m->time_us;
        snprintf(d->host, sizeof d->host, "%s", m->host);
        d->port = m->port;
        snprintf(d->reason, sizeof d->reason, "%s", m->reason);
        uint64_t now = now_us();
        if (now - px->audit_window_us > DENIAL_AUDIT_WINDOW_US) {
                audit_held(px);
                px->audit_window_us = now;
                px->audit_n = 0;
        }
        if (++px->audit_n > DENIAL_AUDIT_BURST) {
                px->audit_held++;
                return;
        }
        json_t *target = json_pack("{s:s, s:i}", "host", d->host, "port", (int)d->port);
        audit_denial(px, target, d->reason);
        json_decref(target);
        log_info("%s: network denied: %s:%u: %s", px->ws->path, d->host, (unsigned)d->port, d->reason);
}

/* What the proxy has sent so far, at most max messages. Also called
 * before reading the denials: the proxy reports one before it answers the
 * jail, so a call that saw its 403 finds the denial here. The bound keeps a
 * proxy that sends without pause (a taken-over one, or a jail making
 * denied connections in a loop) from holding the loop: what is left is
 * read at the next turn, after the other clients had theirs. */
#define DRAIN_PER_TURN 64
#define DRAIN_BEFORE_READ 1024
static void drain(unsigned max) {
        for (unsigned k = 0; k < max && P.ctl >= 0; k++) {
                char buf[PROXY_CTL_MAX];
                ssize_t n = recv(P.ctl, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0) {
                        proc_end(n == 0 ? "it closed its control socket" : "its control socket failed");
                        return;
                }
                ProxyCtlMsg m;
                _cleanup_(vs_error_freep) VsError *err = NULL;
                int r = (size_t)n > sizeof buf ? -EMSGSIZE : proxy_ctl_decode(buf, (size_t)n, &m, &err);
                if (r < 0) {
                        /* It parses the jail's bytes: a malformed message
                         * may mean it is no longer the program it was. */
                        char why[300];
                        snprintf(why, sizeof why, "it sent a malformed message (%s)",
                                 err ? vs_error_message(err) : strerror(-r));
                        proc_end(why);
                        return;
                }
                Proxy *px = find(m.ws);
                if (m.op == PROXY_CTL_HELLO) {
                        P.seccomp = m.seccomp;
                        P.landlock = (int)m.landlock;
                } else if (px && m.op == PROXY_CTL_DENIAL)
                        record_denial(px, &m);
                else if (px && m.op == PROXY_CTL_SECRET_USE)
                        proxy_secret_use_audit(px->peer_uid, px->ws->path, px->ws->generation, &m);
                else if (px && m.op == PROXY_CTL_CONNS) {
                        px->open = m.open;
                        px->total = m.total;
                        /* Denials the proxy could not send (its end
                         * full): counted, and audited as not itemized. */
                        px->denied += m.lost;
                        px->audit_held += m.lost;
                }
                proxy_ctl_msg_done(&m);
        }
}

static void on_ctl(uv_poll_t *p, int status, int events) {
        (void)p;
        if (status < 0) {
                proc_end("its control socket failed");
                return;
        }
        if (events & UV_WRITABLE)
                queue_flush();
        drain(DRAIN_PER_TURN);
}

/* ---- the process ------------------------------------------------------------------ */

static void on_closed_free(uv_handle_t *h) {
        free(h);
}

static void refuse_while_down(Proxy *px, bool on) {
        if (on)
                proxy_down_start(P.loop, px->fd, &px->down);
        else
                proxy_down_stop(&px->down);
}

static void on_restart(uv_timer_t *t) {
        (void)t;
        if (P.ctl >= 0 || !P.all)
                return;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        P.restarts++;
        if (proc_start(&err) < 0) {
                log_error("the network proxy did not start again: %s", vs_error_message(err));
                P.backoff_ms = P.backoff_ms * 2 > RESTART_MAX_MS ? RESTART_MAX_MS : P.backoff_ms * 2;
                uv_timer_start(P.timer, on_restart, P.backoff_ms, 0);
        }
}

static void reaped(int status) {
        if (WIFSIGNALED(status))
                snprintf(P.last_exit, sizeof P.last_exit, "signal %d", WTERMSIG(status));
        else
                snprintf(P.last_exit, sizeof P.last_exit, "exit %d", WEXITSTATUS(status));
        P.pid = 0;
}

/* The process is no longer of use: ended, reaped, and another one
 * scheduled while some workspace has a listener. */
static void proc_end(const char *why) {
        if (P.ctl < 0 && P.pid <= 0)
                return;
        if (P.poll) {
                uv_close((uv_handle_t *)P.poll, on_closed_free);
                P.poll = NULL;
        }
        if (P.ctl >= 0)
                close(P.ctl);
        P.ctl = -1;
        queue_clear();
        proxy_log_close();
        if (P.pid > 0) {
                int status;
                (void)kill(P.pid, SIGKILL);
                while (waitpid(P.pid, &status, 0) < 0 && errno == EINTR)
                        ;
                reaped(status);
        }
        if (!P.all) {
                if (P.timer) {
                        uv_close((uv_handle_t *)P.timer, on_closed_free);
                        P.timer = NULL;
                }
                return;
        }
        P.died_us = now_us();
        for (Proxy *px = P.all; px; px = px->next) {
                px->open = 0;
                refuse_while_down(px, true);
        }
        /* At once after a long run; backing off while it keeps dying. */
        P.backoff_ms = P.died_us - P.started_us > STABLE_US ? RESTART_MIN_MS
                       : P.backoff_ms * 2 > RESTART_MAX_MS ? RESTART_MAX_MS
                                                            : (P.backoff_ms ? P.backoff_ms * 2 : RESTART_MIN_MS);
        log_error("the network proxy (%s) ended: %s; the connections it carried are cut; starting it again in %llu ms",
                  P.last_exit, why, (unsigned long long)P.backoff_ms);
        if (!P.timer && (P.timer = malloc(sizeof *P.timer)))
                uv_timer_init(P.loop, P.timer);
        if (P.timer)
                uv_timer_start(P.timer, on_restart, P.backoff_ms, 0);
}

void proxy_reap(void) {
        int status;
        if (P.pid > 0 && waitpid(P.pid, &status, WNOHANG) == P.pid) {
                reaped(status);
                proc_end("the process exited");
        }
}

typedef struct ChildArgs {
        int fd, log_fd; /* log_fd: the pipe the daemon reads */
        const char *path;
        char *const *argv, *const *envp;
} ChildArgs;

/* From spawn_vfork(): system calls only until the exec. */
static int proxy_child(void *arg) {
        const ChildArgs *a = arg;
        /* Its log lines (and anything on stdout) into the pipe the daemon
         * reads; stdin is not the daemon's (a terminal, in the foreground)
         * either. Both pipe ends are above 3 (proc_start). */
        if (dup2(a->log_fd, STDIN_FILENO) < 0 || dup2(a->log_fd, STDOUT_FILENO) < 0 ||
            dup2(a->log_fd, STDERR_FILENO) < 0)
                _exit(126);
        if (a->fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(a->fd, 3) < 0)
                _exit(126);
        spawn_restore_nofile(); /* it raises its own (proxy/main.c) */
        execve(a->path, a->argv, a->envp);
        _exit(127);
}

static int proxy_program(char **ret, VsError **err) {
        /* VECTORA_PROXY: the build tree's (the test suite's); never a
         * path compiled in from the tree. */
        const char *e = getenv("VECTORA_PROXY");
        const char *path = e && *e ? e : VS_LIBEXECDIR "/vectora-sandbox-proxy";
        if (access(path, X_OK) < 0)
                return vs_error_set(err, -ENOENT, "%s is not an executable file; reinstall vectora-sandbox%s", path,
                                    e && *e ? " or fix VECTORA_PROXY" : "");
        *ret = strdup(path);
        return *ret ? 0 : -ENOMEM;
}

static int proc_start(VsError **err) {
        _cleanup_free_ char *path = NULL;
        int r = proxy_program(&path, err);
        if (r < 0)
                return r;
        int sv[2], lp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return vs_error_set(err, -errno, "the network proxy's control socket: %m");
        /* Above 3, so that the child's dup2s onto 0..3 never clobber one
         * it still needs. */
        int lw = -1;
        if (pipe2(lp, O_CLOEXEC) < 0 || (lw = fcntl(lp[1], F_DUPFD_CLOEXEC, 4)) < 0) {
                int k = -errno;
                close(sv[0]);
                close(sv[1]);
                return vs_error_set(err, k, "the network proxy's log pipe: %m");
        }
        close(lp[1]);
        lp[1] = lw;
        (void)fcntl(lp[0], F_SETFL, O_NONBLOCK);
        /* Its environment: none of the daemon's (its tokens stay there) but
         * what the resolver and the libseccomp loader read, the pid to
         * check after its PR_SET_PDEATHSIG, and how to log. */
        static const char *const keep[] = { "LOCALDOMAIN=", "RES_OPTIONS=", "HOSTALIASES=", VS_LIBSECCOMP_ENV "=",
                                            /* the CAs it checks a secret's host by: the daemon's, never the jail's */
                                            "SSL_CERT_FILE=", "SSL_CERT_DIR=" };
        extern char **environ;
        size_t n = 0;
        while (environ[n])
                n++;
        _cleanup_free_ char **envp = calloc(n + 4, sizeof *envp);
        char parent[64], level[64], style[64];
        snprintf(parent, sizeof parent, "VECTORA_PROXY_PARENT=%d", (int)getpid());
        static const char *const levels[] = { "error", "warning", "info", "debug" };
        snprintf(level, sizeof level, "VECTORA_PROXY_LOG_LEVEL=%s", levels[log_get_level()]);
        /* Plain lines: the daemon reads them and logs them in its style. */
        snprintf(style, sizeof style, "VECTORA_PROXY_LOG_STYLE=%d", (int)LOG_STYLE_PLAIN);
        if (!envp) {
                close(sv[0]);
                close(sv[1]);
                close(lp[0]);
                close(lp[1]);
                return -ENOMEM;
        }
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < ELEMENTSOF(keep); j++)
                        if (strncmp(environ[i], keep[j], strlen(keep[j])) == 0) {
                                envp[k++] = environ[i];
                                break;
                        }
        envp[k++] = parent;
        envp[k++] = level;
        envp[k++] = style;
        char *argv[] = { (char *)"vectora-sandbox-proxy", NULL };
        ChildArgs a = { .fd = sv[1], .log_fd = lp[1], .path = path, .argv = argv, .envp = envp };
        pid_t pid = spawn_vfork(proxy_child, &a);
        close(sv[1]);
        close(lp[1]);
        if (pid < 0) {
                close(sv[0]);
                close(lp[0]);
                return vs_error_set(err, (int)pid, "starting %s: %s", path, strerror((int)-pid));
        }
        proxy_log_open(P.loop, lp[0]);
        P.pid = pid;
        P.ctl = sv[0];
        P.seccomp = false;
        P.landlock = 0;
        P.started_us = now_us();
        P.poll = malloc(sizeof *P.poll);
        if (!P.poll || uv_poll_init(P.loop, P.poll, P.ctl) < 0) {
                free(TAKE_PTR(P.poll));
                proc_end("its control socket cannot be watched");
                return vs_error_set(err, -ENOMEM, "watching the network proxy's control socket failed");
        }
        uv_poll_start(P.poll, UV_READABLE | UV_DISCONNECT, on_ctl);
        log_info("the network proxy started (pid %d)", (int)pid);
        for (Proxy *px = P.all; px && P.ctl >= 0; px = px->next) {
                refuse_while_down(px, false);
                send_add(px);
        }
        return 0;
}

/* ---- per workspace ------------------------------------------------------------- */

json_t *proxy_denials_since(Proxy *px, uint64_t since_us) {
        if (!px)
                return NULL;
        drain(DRAIN_BEFORE_READ);
        audit_held(px);
        json_t *a = NULL;
        for (size_t k = 0; k < px->n_recent; k++) {
                size_t i = (px->recent_next + PROXY_RECENT_DENIALS - px->n_recent + k) % PROXY_RECENT_DENIALS;
                const ProxyDenial *d = &px->recent[i];
                if (d->time_us < since_us)
                        continue;
                if (!a && !(a = json_array()))
                        return NULL;
                json_array_append_new(a, json_pack("{s:s, s:i, s:s}", "host", d->host, "port", (int)d->port,
                                                   "reason", d->reason));
        }
        return a;
}

const char *proxy_lost_since(Proxy *px, uint64_t since_us) {
        if (!px || !P.died_us || P.died_us < since_us)
                return NULL;
        return "network: the proxy process ended while the call ran (its connections were cut); the daemon started it again";
}

json_t *proxy_status(Proxy *px) {
        if (!px)
                return NULL;
        drain(DRAIN_BEFORE_READ);
        return json_pack("{s:I, s:I, s:I}", "open", (json_int_t)px->open, "connections", (json_int_t)px->total,
                         "denied", (json_int_t)px->denied);
}

/* The first number of a /proc/PID/status line ("Uid:", "Seccomp:"), -1
 * when there is none. */
static long proc_field(pid_t pid, const char *key) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof line, f))
                if (strncmp(line, key, strlen(key)) == 0)
                        return strtol(line + strlen(key), NULL, 10);
        return -1;
}

json_t *proxy_process_status(void) {
        if (!P.all && !P.restarts && !P.pid)
                return NULL;
        drain(DRAIN_BEFORE_READ);
        /* Its hello is its own word, and a proxy taken over (or a program
         * that is not the proxy) may say anything: the filter is shown
         * only when the kernel has one on it too (mode 2). The Landlock
         * ABI has no such witness in /proc; it is the proxy's word. */
        bool seccomp = P.pid > 0 && P.seccomp && proc_field(P.pid, "Seccomp:") == 2;
        return json_pack("{s:b, s:i, s:I, s:I, s:s?, s:b, s:i}", "running", P.pid > 0, "pid", (int)P.pid, "uid",
                         (json_int_t)(P.pid > 0 ? proc_field(P.pid, "Uid:") : -1), "restarts",
                         (json_int_t)P.restarts, "last_exit", P.last_exit[0] ? P.last_exit : NULL, "seccomp", seccomp,
                         "landlock_abi", P.landlock);
}

void proxy_process_counts(bool *ret_up, uint64_t *ret_restarts) {
        *ret_up = P.pid > 0;
        *ret_restarts = (uint64_t)P.restarts;
}

void proxy_set_peer(Proxy *px, uid_t uid) {
        if (!px)
                return;
        px->peer_uid = uid;
        send_ctl(&(ProxyCtlMsg) { .op = PROXY_CTL_PEER, .ws = px->id, .peer = uid }, -1);
}

void proxy_policy_changed(Workspace *ws) {
        Proxy *px = ws->proxy;
        if (!px)
                return;
        send_rules(px, PROXY_CTL_RULES, -1);
}

int proxy_secrets_renew(Workspace *ws, char ***env, VsError **err) {
        Proxy *px = ws->proxy;
        if (!px || !ws->policy->n_secrets)
                return 0;
        ProxySecrets ps = {};
        int r = proxy_secrets_load(&ps, ws->srv->opt.state_dir, ws->policy, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *bundle = NULL;
        if (asprintf(&bundle, "%.*s.ca.pem", (int)(strlen(px->path) - strlen(".sock")), px->path) < 0)
                bundle = NULL;
        if (!bundle || (r = proxy_ca_prepare(ws->srv->opt.state_dir, ws->path, bundle, &ps, err)) < 0 ||
            (r = proxy_secrets_env(&ps, env)) < 0) {
                proxy_secrets_done(&ps);
                return bundle ? r : -ENOMEM;
        }
        free(px->ca_bundle);
        px->ca_bundle = TAKE_PTR(bundle);
        proxy_secrets_done(&px->secrets);
        px->secrets = ps;
        send_rules(px, PROXY_CTL_RULES, -1);
        return 0;
}

void proxy_secret_deleted(Server *srv, const char *name) {
        for (Workspace *w = srv->workspaces; w; w = w->next) {
                ProxySecrets *ps = w->proxy ? &w->proxy->secrets : NULL;
                for (size_t i = 0; ps && i < ps->n; i++) {
                        if (!streq(ps->msgs[i].name, name))
                                continue;
                        proxy_ctl_msg_done(&ps->msgs[i]); /* wipes the value */
                        ps->msgs[i] = ps->msgs[--ps->n];
                        ps->msgs[ps->n] = (ProxyCtlMsg){};
                        /* The rules message drops the proxy's copies; the
                         * remaining secrets follow it. */
                        send_rules(w->proxy, PROXY_CTL_RULES, -1);
                        break;
                }
        }
}

const char *proxy_ca_bundle(Workspace *ws) {
        return ws->proxy && ws->policy->n_secrets ? ws->proxy->ca_bundle : NULL;
}

static int listen_on(const char *path, VsError **err) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path)
                return vs_error_set(err, -ENAMETOOLONG, "%s: path too long for a unix socket", path);
        strcpy(sa.sun_path, path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return vs_error_set(err, -errno, "socket: %m");
        (void)unlink(path);
        /* The jail's uid must connect; the proxy's SO_PEERCRED check
         * keeps others out. */
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(path, 0666) < 0 || listen(fd, 64) < 0)
                return vs_error_set(err, -errno, "%s: %m", path);
        return TAKE_FD(fd);
}

int proxy_ensure(Workspace *ws, uid_t peer_uid, const char **ret_path, VsError **err) {
        Server *srv = ws->srv;
        Proxy *px = ws->proxy;
        if (px) {
                if (px->peer_uid != peer_uid)
                        proxy_set_peer(px, peer_uid);
                *ret_path = px->path;
                return 0;
        }
        _cleanup_free_ char *dir = path_join(srv->opt.runtime_dir, "proxy");
        if (!dir)
                return -ENOMEM;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return vs_error_set(err, -errno, "creating %s: %m", dir);
        /* One socket per workspace, named by a hash of its path. */
        char hex[SHA256_HEX_LEN + 1], name[40];
        sha256_hex(ws->path, strlen(ws->path), hex);
        snprintf(name, sizeof name, "%.32s.sock", hex);
        px = calloc(1, sizeof *px);
        if (!px || !(px->path = path_join(dir, name))) {
                free(px);
                return -ENOMEM;
        }
        _cleanup_(vs_error_freep) VsError *e = NULL;
        px->fd = listen_on(px->path, &e);
        if (px->fd < 0) {
                int k = vs_error_set(err, px->fd, "the network proxy for %s cannot listen: %s", ws->path,
                                     vs_error_message(e));
                free(px->path);
                free(px);
                return k;
        }
        px->ws = ws;
        px->id = ++P.next_id;
        px->peer_uid = peer_uid;
        P.loop = srv->loop;
        px->next = P.all;
        P.all = px;
        ws->proxy = px;
        if (P.ctl >= 0)
                send_add(px);
        else if (!P.timer || !uv_is_active((uv_handle_t *)P.timer)) {
                int r = proc_start(&e);
                if (r < 0) {
                        int k = vs_error_set(err, r, "the network proxy process cannot start: %s",
                                             vs_error_message(e));
                        proxy_stop(px);
                        return k;
                }
        } else
                refuse_while_down(px, true); /* until the restart */
        *ret_path = px->path;
        return 0;
}

void proxy_stop(Proxy *px) {
        if (!px)
                return;
        if (px->ws)
                px->ws->proxy = NULL;
        for (Proxy **p = &P.all; *p; p = &(*p)->next)
                if (*p == px) {
                        *p = px->next;
                        break;
                }
        send_ctl(&(ProxyCtlMsg) { .op = PROXY_CTL_REMOVE, .ws = px->id }, -1);
        if (px->ws)
                audit_held(px);
        refuse_while_down(px, false);
        (void)unlink(px->path);
        close(px->fd);
        free(px->path);
        proxy_secrets_done(&px->secrets);
        if (px->ca_bundle)
                (void)unlink(px->ca_bundle);
        free(px->ca_bundle);
        free(px);
        /* No listener left: no process either (none is left behind when
         * the daemon stops). */
        if (!P.all) {
                proc_end("no workspace has a network allowlist now");
                if (P.timer) {
                        uv_close((uv_handle_t *)P.timer, on_closed_free);
                        P.timer = NULL;
                }
        }
}
