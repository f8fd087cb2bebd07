/* SPDX-License-Identifier: MIT */
#include "splice-link.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "fd-util.h"
#include "splice-half.h"

#define LINK_BUF (64u * 1024u)

struct SpliceLink {
        uv_poll_t poll[2];
        int fd[2];
        SpliceHalf h[2]; /* h[k]: from fd[k] to fd[1 - k] */
        bool inited[2];  /* poll[k] was initialised (and must be closed) */
        int ev[2];       /* what poll[k] waits for now */
        unsigned open;   /* poll handles not yet closed */
        bool ended;
        SpliceLinkCb cb;
        void *userdata;
};

static void on_poll(uv_poll_t *p, int status, int events);

static void update(SpliceLink *l) {
        for (int k = 0; k < 2; k++) {
                int ev = (splice_half_wants(&l->h[k]) ? UV_READABLE : 0) |
                         (splice_half_holds(&l->h[1 - k]) ? UV_WRITABLE : 0);
                /* Unchanged: libuv would stop and start the descriptor's
                 * epoll entry again for nothing. */
                if (ev == l->ev[k])
                        continue;
                l->ev[k] = ev;
                if (!ev)
                        uv_poll_stop(&l->poll[k]);
                else if (uv_poll_start(&l->poll[k], ev, on_poll) < 0)
                        l->ended = true;
        }
}

static void on_poll(uv_poll_t *p, int status, int events) {
        SpliceLink *l = p->data;
        int k = p == &l->poll[0] ? 0 : 1;
        bool ok = status >= 0;
        unsigned long long moved = l->h[0].moved + l->h[1].moved;
        /* The side that woke may be read; what either half holds is
         * offered to its sink (non-blocking: it says if it fits). */
        if (ok && (events & (UV_READABLE | UV_DISCONNECT)) && splice_half_wants(&l->h[k]) &&
            splice_half_take(&l->h[k], l->fd[k]) < 0)
                ok = false;
        for (int i = 0; ok && i < 2; i++) {
                ok = splice_half_give(&l->h[i], l->fd[1 - i]);
                splice_half_finish(&l->h[i], l->fd[1 - i]);
        }
        if (!ok || (l->h[0].shut && l->h[1].shut))
                l->ended = true;
        if (!l->ended)
                update(l);
        /* Progress only when bytes moved: a wake that moved none must
         * not keep an idle tunnel from its timeout. */
        if (l->ended || l->h[0].moved + l->h[1].moved != moved)
                l->cb(l->userdata, l->ended);
}

int splice_link_start(uv_loop_t *loop, int fd_a, int fd_b, SpliceLinkCb cb, void *userdata, SpliceLink **ret) {
        SpliceLink *l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        l->cb = cb;
        l->userdata = userdata;
        for (int k = 0; k < 2; k++)
                l->h[k].pipe[0] = l->h[k].pipe[1] = -EBADF;
        l->fd[0] = fcntl(fd_a, F_DUPFD_CLOEXEC, 3);
        l->fd[1] = fcntl(fd_b, F_DUPFD_CLOEXEC, 3);
        int r = l->fd[0] < 0 || l->fd[1] < 0 ? -errno : 0;
        for (int k = 0; k < 2 && r >= 0; k++)
                r = splice_half_init(&l->h[k], LINK_BUF);
        for (int k = 0; k < 2 && r >= 0; k++) {
                r = uv_poll_init(loop, &l->poll[k], l->fd[k]);
                if (r >= 0) {
                        l->poll[k].data = l;
                        l->inited[k] = true;
                        l->open++;
                }
        }
        if (r >= 0) {
                update(l);
                if (l->ended)
                        r = -EIO;
        }
        if (r < 0) {
                splice_link_free(l);
                return r;
        }
        *ret = l;
        return 0;
}

static void release(SpliceLink *l) {
        for (int k = 0; k < 2; k++) {
                safe_close(l->fd[k]);
                splice_half_done(&l->h[k]);
        }
        free(l);
}

static void on_closed(uv_handle_t *h) {
        SpliceLink *l = h->data;
        if (--l->open == 0)
                release(l);
}

void splice_link_free(SpliceLink *l) {
        if (!l)
                return;
        if (!l->open) {
                release(l);
                return;
        }
        for (int k = 0; k < 2; k++)
                if (l->inited[k])
                        uv_close((uv_handle_t *)&l->poll[k], on_closed);
}
