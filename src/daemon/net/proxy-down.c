/* SPDX-License-Identifier: MIT */
/* A workspace's proxy listener while no proxy process runs (proxy-down.h). */
#include "proxy-down.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"

static void on_closed_free(uv_handle_t *h) {
        free(h);
}

/* While no proxy runs, a connection from the jail gets this at once
 * rather than waiting in the backlog. What the client sends is read and
 * dropped, never looked at, until it closes (or 2 s): closing a unix
 * socket with unread bytes would reset the client's side before it read
 * the answer. */
#define REFUSED_MAX 64
#define REFUSED_LINGER_MS 2000

typedef struct Refused {
        uv_poll_t poll;
        uv_timer_t timer;
        int fd, handles;
} Refused;

static unsigned n_refused;

static void on_refused_closed(uv_handle_t *h) {
        Refused *f = h->data;
        if (--f->handles == 0) {
                close(f->fd);
                free(f);
                n_refused--;
        }
}

static void refused_end(Refused *f) {
        if (uv_is_closing((uv_handle_t *)&f->poll))
                return;
        uv_close((uv_handle_t *)&f->poll, on_refused_closed);
        uv_close((uv_handle_t *)&f->timer, on_refused_closed);
}

static void on_refused_timer(uv_timer_t *t) {
        refused_end(t->data);
}

static void on_refused_readable(uv_poll_t *p, int status, int events) {
        (void)events;
        Refused *f = p->data;
        char buf[4096];
        ssize_t n = 1;
        while (status >= 0 && (n = recv(f->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
                ;
        if (status < 0 || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                refused_end(f);
}

static void on_down_connection(uv_poll_t *p, int status, int events) {
        (void)status;
        (void)events;
        int lfd = (int)(intptr_t)p->data;
        static const char msg[] =
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                "Connection: close\r\nX-Vectora-Sandbox: network-policy\r\n\r\n"
                "vectora-sandbox: the network proxy is restarting; try again in a moment\n";
        for (int n = 0; n < 64; n++) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        break;
                (void)!send(fd, msg, sizeof msg - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
                (void)shutdown(fd, SHUT_WR);
                Refused *f = n_refused < REFUSED_MAX ? calloc(1, sizeof *f) : NULL;
                if (!f) {
                        close(fd);
                        continue;
                }
                f->fd = fd;
                f->poll.data = f->timer.data = f;
                if (uv_poll_init(p->loop, &f->poll, fd) < 0) {
                        close(fd);
                        free(f);
                        continue;
                }
                uv_timer_init(p->loop, &f->timer);
                f->handles = 2;
                n_refused++;
                uv_poll_start(&f->poll, UV_READABLE | UV_DISCONNECT, on_refused_readable);
                uv_timer_start(&f->timer, on_refused_timer, REFUSED_LINGER_MS, 0);
        }
}

void proxy_down_start(uv_loop_t *loop, int fd, uv_poll_t **down) {
        if (*down || !(*down = malloc(sizeof **down)))
                return;
        (*down)->data = (void *)(intptr_t)fd;
        if (uv_poll_init(loop, *down, fd) < 0 || uv_poll_start(*down, UV_READABLE, on_down_connection) < 0)
                free(TAKE_PTR(*down));
}

void proxy_down_stop(uv_poll_t **down) {
        if (*down)
                uv_close((uv_handle_t *)TAKE_PTR(*down), on_closed_free);
}
