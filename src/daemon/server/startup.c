/* SPDX-License-Identifier: MIT */
/* How vectora-sandboxd starts: where it logs and in what shape, the socket's
 * directory, detaching from the terminal, and saying "ready" (to the
 * launching shell, to systemd, in a pidfile). */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "fd-util.h"
#include "log.h"
#include "path-util.h"
#include "startup.h"

/* journald sets JOURNAL_STREAM to the device and inode of the stream it
 * gave us as stderr; only then is stderr the journal. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void startup_log_style(const DaemonOptions *o) {
        /* The journal stamps each line itself and reads "<N>" as its priority;
         * anywhere else a line carries its own time. */
        log_set_style(!o->log_path && o->foreground && stderr_is_journal() ? LOG_STYLE_JOURNAL : LOG_STYLE_TIME);
}

int startup_default_log(DaemonOptions *o, VsError **err) {
        if (o->log_path || o->foreground)
                return 0;
        /* Detached without --log-file: beside the daemon's other runtime
         * files, so the terminal it started from stays quiet. */
        o->log_path = path_join(o->runtime_dir, "vectora-sandboxd.log");
        return o->log_path ? 0 : vs_error_set(err, -ENOMEM, "out of memory");
}

int startup_check_socket_dir(const char *socket_path, VsError **err) {
        /* Under socket activation systemd made the socket already. */
        if (getenv("LISTEN_FDS"))
                return 0;
        _cleanup_free_ char *dir = strdup(socket_path);
        if (!dir)
                return vs_error_set(err, -ENOMEM, "out of memory");
        char *slash = strrchr(dir, '/');
        if (!slash)
                return 0; /* relative to the current directory, which exists */
        if (slash == dir)
                slash[1] = 0;
        else
                *slash = 0;
        struct stat st;
        if (stat(dir, &st) < 0) {
                if (errno == ENOENT)
                        return vs_error_set(err, -ENOENT,
                                            "cannot listen on %s: the directory %s does not exist; create it (mkdir -p %s) or pass another --socket",
                                            socket_path, dir, dir);
                return vs_error_set(err, -errno, "cannot listen on %s: %s: %m", socket_path, dir);
        }
        if (!S_ISDIR(st.st_mode))
                return vs_error_set(err, -ENOTDIR, "cannot listen on %s: %s is not a directory", socket_path, dir);
        if (access(dir, W_OK | X_OK) < 0)
                return vs_error_set(err, -errno,
                                    "cannot listen on %s: the directory %s is not writable by uid %u; pass another --socket",
                                    socket_path, dir, (unsigned)geteuid());
        return 0;
}

int startup_detach(int log_fd, int *ret_notify) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        /* Not a spawn: the child goes on as the daemon and execs nothing,
         * so spawn_fork()'s reset of the signals would undo the daemon's
         * (SIGPIPE ignored). Safe only because no thread exists yet (main.c
         * starts the loop after this): a lock another thread held would
         * stay held in the child. */
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid > 0) {
                /* The launching process returns once the daemon listens, or
                 * says why it could not (once, here: the daemon's own stderr
                 * is its log by now). */
                close(p[1]);
                char buf[1024];
                ssize_t n;
                do
                        n = read(p[0], buf, sizeof buf - 1);
                while (n < 0 && errno == EINTR);
                if (n > 0 && buf[0] == 0) {
                        buf[n] = 0;
                        printf("vectora-sandboxd: pid %d %s\n", (int)pid, buf + 1);
                        fflush(stdout);
                        _exit(0);
                }
                if (n > 0) {
                        buf[n] = 0;
                        fprintf(stderr, "vectora-sandboxd: %s\n", buf);
                } else
                        fprintf(stderr, "vectora-sandboxd: the daemon exited before listening; see its log\n");
                _exit(1);
        }
        close(p[0]);
        setsid();
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, STDIN_FILENO);
                dup2(null, STDOUT_FILENO);
                safe_close(null);
        }
        /* Everything that writes to stderr (the daemon, bwrap, the workers)
         * goes to the log from now on. */
        if (log_fd >= 0 && log_fd != STDERR_FILENO)
                dup2(log_fd, STDERR_FILENO);
        *ret_notify = p[1];
        return 0;
}

/* The systemd readiness protocol (sd_notify(3)), without libsystemd. */
static void notify_systemd(const char *msg) {
        const char *e = getenv("NOTIFY_SOCKET");
        if (!e || (e[0] != '/' && e[0] != '@'))
                return;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(e);
        if (n >= sizeof sa.sun_path)
                return;
        memcpy(sa.sun_path, e, n);
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = 0; /* abstract namespace */
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return;
        (void)!sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
        safe_close(fd);
}

static int write_pidfile(const char *path, VsError **err) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return vs_error_set(err, -errno, "writing the pidfile %s: %m", path);
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
        int r = write_all(fd, buf, (size_t)n);
        if (r < 0)
                return vs_error_set(err, r, "writing the pidfile %s: %s", path, strerror(-r));
        return 0;
}

int startup_ready(const DaemonOptions *o, int *notify, VsError **err) {
        if (o->pidfile_path) {
                int r = write_pidfile(o->pidfile_path, err);
                if (r < 0)
                        return r;
        }
        notify_systemd("READY=1\nSTATUS=listening");
        if (*notify >= 0) {
                char msg[1024];
                int n = snprintf(msg, sizeof msg, "%clistening on %s; log: %s", 0, o->socket_path,
                                 o->log_path ? o->log_path : "stderr");
                (void)!write(*notify, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
                *notify = safe_close(*notify);
        }
        return 0;
}

void startup_failed(int *notify, const char *why) {
        if (*notify >= 0) {
                (void)!write(*notify, why, strlen(why));
                *notify = safe_close(*notify);
        }
}

void startup_stopping(const DaemonOptions *o) {
        notify_systemd("STOPPING=1");
        if (o->pidfile_path)
                unlink(o->pidfile_path);
}
