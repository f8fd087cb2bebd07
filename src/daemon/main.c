/* SPDX-License-Identifier: MIT */
/* vectora-sandboxd: options, logging, signals, the loop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "approval.h"
#include "walk-cache.h"
#include "audit.h"
#include "forbidden.h"
#include "cgroup.h"
#include "fd-util.h"
#include "monitor-link.h"
#include "daemon-tools.h"
#include "instance.h"
#include "jail-home.h"
#include "log.h"
#include "paths.h"
#include "ports.h"
#include "process.h"
#include "proxy.h"
#include "server.h"
#include "spawn-util.h"
#include "startup.h"
#include "terminal.h"
#include "vs-build-config.h"
#include "watch.h"
#include "worker-link.h"
#include "workspace.h"

static Server server;
static int log_fd = STDERR_FILENO;
static uv_signal_t sig_term, sig_int, sig_hup, sig_chld;

/* The log: a file (or a character device such as /dev/null). Opened
 * without waiting (a FIFO put at the path would hold the loop until a
 * reader came, and a reader that stops reading would hold every write);
 * anything else is refused (errno EINVAL: log_open_why). */
static int open_log(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
        if (fd < 0 && errno == ENXIO)
                errno = EINVAL; /* a FIFO without a reader */
        if (fd < 0)
                return -1;
        struct stat st;
        int e = 0;
        if (fstat(fd, &st) < 0)
                e = errno;
        else if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
                e = EINVAL;
        else
                e = -fd_set_nonblock(fd, false);
        if (e) {
                safe_close(fd);
                errno = e;
                return -1;
        }
        return fd;
}

static const char *log_open_why(void) {
        return errno == EINVAL ? "not a regular file (a FIFO or a socket could hold the daemon)" : strerror(errno);
}

static void log_reopen(void) {
        if (!server.opt.log_path)
                return;
        int fd = open_log(server.opt.log_path);
        if (fd < 0) {
                log_error("reopening the log %s: %s; the old one is kept", server.opt.log_path, log_open_why());
                return;
        }
        int old = log_fd;
        /* The new file on the old descriptor's number, in one step: a
         * thread of the pool logging meanwhile writes to the old file or
         * the new one, never to a number closed and taken by another
         * file (race review 12b). */
        if (old != STDERR_FILENO && old != fd && dup3(fd, old, O_CLOEXEC) == old) {
                safe_close(fd);
                fd = old;
        }
        log_fd = fd;
        log_setup("vectora-sandboxd", fd);
        /* Detached, stderr (the workers', bwrap's) follows the log. */
        if (!server.opt.foreground)
                dup2(fd, STDERR_FILENO);
        if (old != STDERR_FILENO && old != fd)
                safe_close(old);
        /* The root monitor's lines follow. */
        monitor_link_log_reopen(&server, fd);
}

static uv_timer_t shutdown_timer;
static uint64_t shutdown_deadline_ms;
/* main's exit status: 1 once the root monitor was lost. */
static int exit_status;

/* Replies to the failed calls go out before the clients are closed; a
 * client that does not read them is closed anyway after a while. */
static void on_shutdown_tick(uv_timer_t *t) {
        Server *srv = t->data;
        if (srv->n_clients > 0 && now_ms() < shutdown_deadline_ms)
                return;
        uv_timer_stop(t);
        uv_close((uv_handle_t *)t, NULL);
        server_stop(srv);
        uv_stop(srv->loop);
}

/* The order matters: calls in flight are answered "shutting_down" while
 * their clients are still there to read it; the jails end (every process
 * in each jail's cgroup) before their cgroups are removed, else the
 * removal fails and leaves them behind; clients go last. */
static void shutdown_now(Server *srv, const char *why) {
        if (srv->shutting_down)
                return;
        srv->shutting_down = true;
        log_info("%s: ending every worker and exiting", why);
        startup_stopping(&srv->opt);
        server_stop_listening(srv);
        workspace_gc_stop(srv);
        workspaces_free_all(srv);
        cgroup_finish(srv);
        uv_signal_stop(&sig_term);
        uv_signal_stop(&sig_int);
        uv_signal_stop(&sig_hup);
        /* Stopped, libuv puts the default action back, which for SIGHUP
         * (a log rotation's, during a stop) would kill the daemon in the
         * middle of its drain. */
        signal(SIGHUP, SIG_IGN);
        server_drain_clients(srv);
        shutdown_deadline_ms = now_ms() + 3000;
        uv_timer_init(srv->loop, &shutdown_timer);
        shutdown_timer.data = srv;
        uv_timer_start(&shutdown_timer, on_shutdown_tick, 0, 20);
}

/* Without the root monitor the daemon does not go on: it ends every jail
 * and exits non-zero (a unit's Restart=on-failure starts both again). */
static void monitor_gone(Server *srv) {
        exit_status = 1;
        shutdown_now(srv, "the root monitor is gone");
}

/* A start that fails once the monitor runs: the monitor stopped and
 * reaped first, then the instance's groups and lock released. Left to
 * itself the monitor would take the daemon's exit for a crash and clean
 * the instance's groups holding a lock this exit unlinks: a daemon
 * started again at once on the same socket could then lose its new
 * groups to that cleanup. */
static int failed_start(Server *srv) {
        (void)monitor_link_stop(srv);
        cgroup_finish(srv);
        instance_release(srv);
        return 1;
}

/* A workspace entry goes: a terminal call's reply waiting for the looks
 * at its jail, its ended background processes (kept for their output) and
 * its forwarded ports' listeners point at it. */
static void forget_workspace(Workspace *ws) {
        tools_forget_workspace(ws);
        process_forget_workspace(ws);
        ports_forget(ws);
}

/* The audit log's lost records, and their end, in the daemon's log. */
static void audit_told(const char *message) {
        log_warning("%s", message);
}

static void on_signal(uv_signal_t *h, int signum) {
        Server *srv = h->data;
        switch (signum) {
        case SIGTERM:
        case SIGINT:
                shutdown_now(srv, signum == SIGTERM ? "SIGTERM" : "SIGINT");
                break;
        case SIGHUP: {
                log_reopen();
                _cleanup_(vs_error_freep) VsError *err = NULL;
                if (audit_reopen(&err) < 0)
                        log_error("%s", vs_error_message(err));
                log_info("SIGHUP: logs reopened");
                break;
        }
        case SIGCHLD:
                /* Its own children only, by pid: never waitpid(-1), which
                 * would take the thread pool's helpers (worker-link.c). */
                links_reap(srv);
                ptys_reap(srv);
                proxy_reap();
                monitor_link_reap(srv);
                break;
        }
}

static void usage(FILE *f) {
        fprintf(f,
                "usage: vectora-sandboxd [OPTIONS]\n\n"
                "Serves the terminal and file tools of many workspaces over a unix socket,\n"
                "each sandboxed workspace through its own persistent jailed worker.\n\n"
                "  --socket PATH        listen here (default: /run/vectora-sandbox.sock for root,\n"
                "                       $XDG_RUNTIME_DIR/vectora-sandbox.sock for a user, else\n"
                "                       /tmp/vectora-sandbox-UID/sock; $VECTORA_SANDBOX_SOCKET overrides)\n"
                "  --foreground         stay attached, log to stderr (what systemd and tests use);\n"
                "                       otherwise return once listening, log to --log-file\n"
                "  --log-level LEVEL    error, warning, info (default) or debug\n"
                "  --log-file FILE      log here (reopened on SIGHUP); default: stderr in the\n"
                "                       foreground, RUNTIME_DIR/vectora-sandboxd.log detached\n"
                "  --pidfile FILE       write the daemon's pid here once it listens\n"
                "  --audit-log FILE     one JSON line per call (reopened on SIGHUP)\n"
                "  --audit-required     refuse sandboxed calls while audit records cannot be written\n"
                "  --runtime-dir DIR    sockets, empty mask sources and instance state here (default:\n"
                "                       /run/vectora-sandbox as root, $XDG_RUNTIME_DIR/vectora-sandbox)\n"
                "  --max-clients N      connections at once (default 256)\n"
                "  --max-workers N      live workers at once (default 64)\n"
                "  --worker PATH        the vectora-worker binary\n"
                "  --state-dir DIR      the approved-policy store (default /var/lib/vectora-sandbox as root)\n"
                "  --version, --help\n\n"
                "See vectora-sandboxd(8).\n");
}

/* --runtime-dir DIR, or the default, checked alike (owned by us, not
 * writable by others). */
static int runtime_dir(DaemonOptions *o, VsError **err) {
        _cleanup_free_ char *want = TAKE_PTR(o->runtime_dir);
        int r = vs_runtime_dir_named(want, &o->runtime_dir, err);
        return r < 0 ? r : vs_runtime_dir(&o->lock_root, err);
}

static int parse_uint(const char *s, unsigned *ret) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (!*s || *end || v == 0 || v > 1000000)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

static int parse_args(int argc, char **argv, DaemonOptions *o) {
        enum { O_SOCKET = 256, O_FG, O_LEVEL, O_LOGFILE, O_AUDIT, O_MAXC, O_MAXW, O_WORKER, O_STATE, O_VERSION, O_PIDFILE,
               O_AUDIT_REQ, O_RUNTIME };
        static const struct option opts[] = {
                { "socket", required_argument, NULL, O_SOCKET },
                { "foreground", no_argument, NULL, O_FG },
                { "log-level", required_argument, NULL, O_LEVEL },
                { "log-file", required_argument, NULL, O_LOGFILE },
                { "audit-log", required_argument, NULL, O_AUDIT },
                { "audit-required", no_argument, NULL, O_AUDIT_REQ },
                { "runtime-dir", required_argument, NULL, O_RUNTIME },
                { "max-clients", required_argument, NULL, O_MAXC },
                { "max-workers", required_argument, NULL, O_MAXW },
                { "worker", required_argument, NULL, O_WORKER },
                { "state-dir", required_argument, NULL, O_STATE },
                { "pidfile", required_argument, NULL, O_PIDFILE },
                { "version", no_argument, NULL, O_VERSION },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
                switch (c) {
                case O_SOCKET: o->socket_path = strdup(optarg); break;
                case O_FG: o->foreground = true; break;
                case O_LEVEL:
                        if ((r = log_level_from_string(optarg)) < 0) {
                                fprintf(stderr, "vectora-sandboxd: --log-level takes error, warning, info or debug\n");
                                return 2;
                        }
                        log_set_level((LogLevel)r);
                        break;
                case O_LOGFILE: o->log_path = strdup(optarg); break;
                case O_AUDIT: o->audit_path = strdup(optarg); break;
                case O_AUDIT_REQ: o->audit_required = true; break;
                case O_RUNTIME: o->runtime_dir = strdup(optarg); break;
                case O_MAXC:
                case O_MAXW:
                        if (parse_uint(optarg, c == O_MAXC ? &o->max_clients : &o->max_workers) < 0) {
                                fprintf(stderr, "vectora-sandboxd: %s takes a positive number\n",
                                        c == O_MAXC ? "--max-clients" : "--max-workers");
                                return 2;
                        }
                        break;
                case O_WORKER: o->worker_path = strdup(optarg); break;
                case O_STATE: o->state_dir = strdup(optarg); break;
                case O_PIDFILE: o->pidfile_path = strdup(optarg); break;
                case O_VERSION: printf("vectora-sandboxd %s\n", VS_VERSION); return -1;
                case 'h': usage(stdout); return -1;
                default: usage(stderr); return 2;
                }
        if (optind < argc) {
                fprintf(stderr, "vectora-sandboxd: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        return 0;
}

/* The kept homes of workspaces that are gone (jail-home.h), removed off
 * the loop once at start: a store that served many workspaces may hold
 * large caches. */
typedef struct PruneWork {
        uv_work_t work;
        char *state_dir; /* a copy: the work may outlive a loop stopped at shutdown */
        unsigned removed;
        int r;
} PruneWork;

static void prune_work(uv_work_t *w) {
        PruneWork *p = w->data;
        p->r = jail_homes_prune(p->state_dir, &p->removed);
}

static void prune_done(uv_work_t *w, int status) {
        PruneWork *p = w->data;
        if (status == 0 && p->r < 0)
                log_warning("removing the homes of workspaces that are gone from %s/homes: %s", p->state_dir,
                            strerror(-p->r));
        else if (status == 0 && p->removed)
                log_info("removed the kept homes of %u workspace(s) that are gone", p->removed);
        free(p->state_dir);
        free(p);
}

static void prune_homes_start(Server *srv) {
        PruneWork *p = calloc(1, sizeof *p);
        if (!p)
                return;
        p->state_dir = strdup(srv->opt.state_dir);
        p->work.data = p;
        if (!p->state_dir || uv_queue_work(srv->loop, &p->work, prune_work, prune_done) < 0) {
                free(p->state_dir);
                free(p);
        }
}

static void pool_nothing(uv_work_t *w) {
        (void)w;
}

static void pool_nothing_done(uv_work_t *w, int status) {
        (void)w;
        (void)status;
}

/* The thread pool (starts, sweeps, the approval record's syncs) made now,
 * at 16 threads: libuv's 4 were one owner's whole share of starts
 * (MAX_OWNER_SPAWNS), so four slow starts of one owner held every other
 * owner's (race review 12b). libuv reads UV_THREADPOOL_SIZE once, at its
 * first work: set around that, so that no host terminal or unsandboxed
 * worker inherits it. An operator's own is kept. */
static void pool_start(uv_loop_t *loop) {
        static uv_work_t w;
        bool set = !getenv("UV_THREADPOOL_SIZE") && setenv("UV_THREADPOOL_SIZE", "16", 0) == 0;
        if (uv_queue_work(loop, &w, pool_nothing, pool_nothing_done) < 0)
                log_warning("the thread pool could not start now; it starts at its first work");
        if (set)
                (void)unsetenv("UV_THREADPOOL_SIZE");
}

int main(int argc, char **argv) {
        Server *srv = &server;
        DaemonOptions *o = &srv->opt;
        o->max_clients = 256;
        o->max_workers = 64;
        /* A closed standard descriptor would be the next file opened (the
         * instance lock, the log, the audit log), which a write meant for
         * stderr, the detach's /dev/null or the monitor's would then hit. */
        for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
                if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
                        int null = open("/dev/null", O_RDWR | O_NOCTTY);
                        if (null < 0 || (null != fd && (dup2(null, fd) < 0 || close(null) < 0)))
                                return 1;
                }
        log_setup("vectora-sandboxd", STDERR_FILENO);
        int r = parse_args(argc, argv, o);
        if (r)
                return r < 0 ? 0 : r;
        signal(SIGPIPE, SIG_IGN);
        /* Two malloc arenas for the pool's 16 threads (pool_start): an
         * arena per thread (glibc's default, up to 8 a core) kept what
         * concurrent starts freed, and an idle workspace cost the daemon
         * 105-113 kB of RSS instead of 70 (t_idle_workspace_memory). An
         * operator's MALLOC_ARENA_MAX is kept. */
        if (!getenv("MALLOC_ARENA_MAX"))
                (void)mallopt(M_ARENA_MAX, 2);
        /* Five to seven descriptors a workspace with a jail: at the 1 024
         * a service starts with, a daemon refused jails past about 200
         * workspaces ("pipe: Too many open files"). Its children start at
         * the limit it was given. */
        (void)spawn_raise_nofile();

        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (!o->socket_path && vs_default_socket(&o->socket_path) < 0) {
                fprintf(stderr, "vectora-sandboxd: out of memory\n");
                return 1;
        }
        if ((!o->worker_path && vs_worker_path(&o->worker_path, &err) < 0) ||
            runtime_dir(o, &err) < 0 || startup_check_socket_dir(o->socket_path, &err) < 0 ||
            startup_default_log(o, &err) < 0) {
                fprintf(stderr, "vectora-sandboxd: %s\n", vs_error_message(err));
                return 1;
        }
        vs_reserve_own_dirs(o->socket_path);
        /* A runtime directory named elsewhere is as much off limits. */
        (void)forbidden_reserve(o->runtime_dir, true);
        _cleanup_free_ char *state = TAKE_PTR(o->state_dir);
        if (approval_store_dir(state, &o->state_dir, &err) < 0) {
                fprintf(stderr, "vectora-sandboxd: %s\n", vs_error_message(err));
                return 1;
        }
        /* What the start walks learnt, kept for the next run (walk-cache.h).
         * Without it (a state directory not the daemon's own) each start
         * reads every directory: slower, as safe. */
        if ((r = walk_cache_use_init(&srv->walk_cache, o->state_dir)) < 0)
                fprintf(stderr, "vectora-sandboxd: no walk cache in %s: %s\n", o->state_dir, strerror(-r));
        /* Before anything of this instance is touched: another daemon on
         * the same socket holds the lock and is left alone. */
        srv->instance_lock_fd = -EBADF;
        if (instance_acquire(srv, &err) < 0) {
                fprintf(stderr, "vectora-sandboxd: %s\n", vs_error_message(err));
                return 1;
        }
        startup_log_style(o);
        /* The log opens before detaching, so a bad --log-file is reported
         * to the terminal that asked for it. */
        if (o->log_path) {
                if ((log_fd = open_log(o->log_path)) < 0) {
                        fprintf(stderr, "vectora-sandboxd: opening the log %s: %s\n", o->log_path, log_open_why());
                        return 1;
                }
                log_setup("vectora-sandboxd", log_fd);
        }
        int notify = -EBADF;
        if (!o->foreground && (r = startup_detach(log_fd, &notify)) < 0) {
                fprintf(stderr, "vectora-sandboxd: cannot detach: %s\n", strerror(-r));
                return 1;
        }
        if (!o->foreground)
                instance_update_owner(srv);
        audit_set_reporter(audit_told);
        if (o->audit_path && audit_open(o->audit_path, &err) < 0) {
                log_error("%s", vs_error_message(err));
                startup_failed(&notify, vs_error_message(err));
                return 1;
        }

        /* The instance's cgroups before the monitor, which removes them,
         * and what is left in them, once the daemon's process is gone. */
        cgroup_probe(srv);
        /* The root monitor first, while the process holds no socket, jail
         * or thread: it inherits none (monitor-link.h). */
        if (monitor_link_start(srv, &err) < 0) {
                log_error("%s", vs_error_message(err));
                startup_failed(&notify, vs_error_message(err));
                return failed_start(srv);
        }
        srv->loop = uv_default_loop();
        pool_start(srv->loop);
        monitor_link_watch(srv, monitor_gone);
        srv->started_ms = now_ms();
        uint8_t rnd[16] = { 0 };
        if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
                uint64_t t = now_us() ^ ((uint64_t)getpid() << 32);
                memcpy(rnd, &t, sizeof t);
        }
        for (size_t i = 0; i < sizeof rnd; i++)
                snprintf(srv->boot_id + 2 * i, 3, "%02x", rnd[i]);
        uv_signal_t *sigs[] = { &sig_term, &sig_int, &sig_hup, &sig_chld };
        int signums[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD };
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
                uv_signal_init(srv->loop, sigs[i]);
                sigs[i]->data = srv;
                uv_signal_start(sigs[i], on_signal, signums[i]);
        }
        static const ServerHandlers handlers = {
                .request = tools_handle,
                .bad_line = tools_reply_bad_line,
                .client_closing = tools_client_closing,
                .client_resumed = pty_resume,
        };
        srv->handlers = &handlers;
        static const WorkspaceHooks ws_hooks = {
                .starting = ports_ensure,
                .forget = forget_workspace,
                .ports_status = ports_status,
        };
        srv->ws_hooks = &ws_hooks;
        if (server_start(srv, &err) < 0) {
                log_error("%s", vs_error_message(err));
                startup_failed(&notify, vs_error_message(err));
                return failed_start(srv);
        }
        if (startup_ready(o, &notify, &err) < 0) {
                log_error("%s", vs_error_message(err));
                startup_failed(&notify, vs_error_message(err));
                server_stop(srv); /* our own socket: removed */
                return failed_start(srv);
        }
        workspace_gc_start(srv);
        prune_homes_start(srv);
        log_info("listening on %s (pid %d, uid %u, worker %s%s%s)", o->socket_path, (int)getpid(), (unsigned)geteuid(),
                 o->worker_path, srv->cgroup_version ? ", cgroups v" : "",
                 srv->cgroup_version ? (srv->cgroup_version == 2 ? "2" : "1") : "");
        if (!srv->cgroup_version)
                log_warning("per-workspace pids/memory limits: %s", srv->cgroup_why_not);
        uv_run(srv->loop, UV_RUN_DEFAULT);
        if (!srv->shutting_down) {
                shutdown_now(srv, "loop ended");
                uv_run(srv->loop, UV_RUN_DEFAULT);
        }
        /* Let close callbacks run; handles of dead links go away here. */
        watch_hubs_free(srv); /* every workspace is gone: nobody holds a watch */
        if (monitor_link_stop(srv) < 0)
                exit_status = 1;
        uv_run(srv->loop, UV_RUN_NOWAIT);
        instance_release(srv);
        walk_cache_use_done(&srv->walk_cache);
        audit_close();
        if (exit_status)
                return exit_status;
        log_info("exited cleanly");
        return 0;
}
