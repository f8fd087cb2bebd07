/* SPDX-License-Identifier: MIT */
/* The network proxy process's log lines, read by the daemon (proxy-log.h). */
#include "proxy-log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "time-util.h"

static struct {
        int fd; /* the read end of its stderr, -1 when none */
        uv_poll_t *poll;
        char line[1024];
        size_t len;
        uint64_t window_us;
        unsigned lines, dropped;
} L = { .fd = -1 };

static void on_closed_free(uv_handle_t *h) {
        free(h);
}

/* The proxy's stderr is a pipe the daemon reads, never the daemon's log
 * file: a proxy taken over could clear O_APPEND on a shared log file and
 * write over what the daemon logged. Each line is logged by the daemon,
 * at the level the proxy gave it, control characters made visible, cut at
 * a bound, and at most PROXY_LOG_BURST lines per PROXY_LOG_WINDOW_US (the
 * rest counted and said), so a proxy cannot fill the log either. */
#define PROXY_LOG_BURST 200
#define PROXY_LOG_WINDOW_US (10 * 1000000ull)

static void log_line(void) {
        char *l = L.line;
        l[L.len] = '\0';
        L.len = 0;
        uint64_t now = now_us();
        if (now - L.window_us > PROXY_LOG_WINDOW_US) {
                if (L.dropped)
                        log_warning("vectora-sandbox-proxy: %u log lines dropped (more than %d in %llu s)",
                                    L.dropped, PROXY_LOG_BURST,
                                    (unsigned long long)(PROXY_LOG_WINDOW_US / 1000000));
                L.window_us = now;
                L.lines = L.dropped = 0;
        }
        if (++L.lines > PROXY_LOG_BURST) {
                L.dropped++;
                return;
        }
        for (char *c = l; *c; c++)
                if ((unsigned char)*c < ' ' && *c != '\t')
                        *c = '?';
        static const char prefix[] = "vectora-sandbox-proxy: ";
        static const char *const levels[] = { "error: ", "warning: ", "info: ", "debug: " };
        if (strncmp(l, prefix, sizeof prefix - 1) == 0)
                l += sizeof prefix - 1;
        for (LogLevel v = LOG_LVL_ERROR; v <= LOG_LVL_DEBUG; v++)
                if (strncmp(l, levels[v], strlen(levels[v])) == 0) {
                        log_msg(v, "vectora-sandbox-proxy: %s", l + strlen(levels[v]));
                        return;
                }
        log_warning("vectora-sandbox-proxy: %s", l);
}

/* False once the proxy's end is closed (or the pipe failed). */
static bool log_read(void) {
        char buf[4096];
        ssize_t n = -1;
        errno = EAGAIN;
        /* Bounded per wakeup: a proxy writing without end does not hold
         * the daemon's loop. */
        for (int i = 0; i < 16 && L.fd >= 0 && (n = read(L.fd, buf, sizeof buf)) > 0; i++)
                for (ssize_t k = 0; k < n; k++) {
                        if (buf[k] == '\n') {
                                log_line();
                                continue;
                        }
                        L.line[L.len++] = buf[k];
                        if (L.len == sizeof L.line - 1)
                                log_line();
                }
        return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

void proxy_log_close(void) {
        if (L.fd < 0)
                return;
        (void)log_read();
        if (L.len)
                log_line();
        uv_close((uv_handle_t *)TAKE_PTR(L.poll), on_closed_free);
        close(L.fd);
        L.fd = -1;
}

static void on_log(uv_poll_t *p, int status, int events) {
        (void)p;
        (void)events;
        /* Its end closed: nothing more to wait for (a pipe at its end
         * stays readable). */
        if (!log_read() || status < 0)
                uv_poll_stop(L.poll);
}

void proxy_log_open(uv_loop_t *loop, int fd) {
        proxy_log_close();
        L.fd = fd;
        L.len = 0;
        if ((L.poll = malloc(sizeof *L.poll)) && uv_poll_init(loop, L.poll, L.fd) == 0)
                uv_poll_start(L.poll, UV_READABLE | UV_DISCONNECT, on_log);
        else {
                free(TAKE_PTR(L.poll));
                close(TAKE_FD(L.fd));
        }
}
