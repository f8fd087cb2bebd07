/* SPDX-License-Identifier: MIT */
#include "splice-half.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"

static bool no_splice;
/* Bytes of pipe capacity this process's halves added by growing, so that
 * the pipes of one relay never take more than SPLICE_HALF_GROWN_MAX of
 * their user's pipe pages (pipe-user-pages-soft, which every process of
 * that user shares: past it, the user's new pipes get two pages). */
static size_t grown_total;

size_t splice_half_grown_total(void) {
        return grown_total;
}

/* A half whose source filled its pipe carries a stream: one larger pipe
 * moves it in fewer splices and wake-ups (docs/benchmarks.md, 6). Within
 * the process's budget; refused (EPERM: pipe-max-size or the user's pipe
 * pages), the half keeps its pipe and never asks again. */
static bool grow(SpliceHalf *h) {
        h->grow_tried = true;
        if (h->cap >= SPLICE_HALF_GROWN || grown_total + SPLICE_HALF_GROWN - h->cap > SPLICE_HALF_GROWN_MAX)
                return false;
        int sz = fcntl(h->pipe[1], F_SETPIPE_SZ, (int)SPLICE_HALF_GROWN);
        if (sz <= 0 || (size_t)sz <= h->cap)
                return false;
        h->grown = (size_t)sz - h->cap;
        grown_total += h->grown;
        h->cap = (size_t)sz;
        return true;
}

static int use_buffer(SpliceHalf *h, size_t buf_size) {
        h->pipe[0] = safe_close(h->pipe[0]);
        h->pipe[1] = safe_close(h->pipe[1]);
        h->cap = buf_size;
        h->buf = malloc(buf_size);
        return h->buf ? 0 : -ENOMEM;
}

int splice_half_init(SpliceHalf *h, size_t buf_size) {
        *h = (SpliceHalf) { .pipe = { -EBADF, -EBADF } };
        if (no_splice || pipe2(h->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return use_buffer(h, buf_size);
        /* The pipe's own size (64 KiB by default): pipes count against
         * their user's pipe pages (pipe-user-pages-soft), a pool every
         * process of that user shares, so only a half that fills it grows
         * it (grow), within SPLICE_HALF_GROWN_MAX a process. */
        int sz = fcntl(h->pipe[1], F_GETPIPE_SZ);
        h->cap = sz > 0 ? (size_t)sz : 4096;
        return 0;
}

void splice_half_done(SpliceHalf *h) {
        grown_total -= h->grown;
        h->grown = 0;
        h->pipe[0] = safe_close(h->pipe[0]);
        h->pipe[1] = safe_close(h->pipe[1]);
        free(h->buf);
        h->buf = NULL;
}

int splice_half_take(SpliceHalf *h, int src) {
        ssize_t n;
        if (h->buf)
                n = read(src, h->buf + h->len, h->cap - h->len);
        else {
                n = splice(src, NULL, h->pipe[1], NULL, h->cap - h->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) && h->len == 0) {
                        /* Refused for this kind of socket: nothing is in
                         * the pipe yet, so copying takes over here. */
                        no_splice = true;
                        int r = use_buffer(h, h->cap);
                        return r < 0 ? r : splice_half_take(h, src);
                }
        }
        if (n > 0) {
                h->len += (size_t)n;
                h->moved += (size_t)n;
                if (!h->buf && !h->grow_tried && h->len >= h->cap)
                        grow(h);
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                h->eof = true;
        else if (errno == EAGAIN && !h->buf && h->len > 0)
                /* A pipe holds 16 pages whatever their fill: small
                 * segments use it up long before cap bytes, and splice
                 * then says EAGAIN while the source stays readable. Polled
                 * for reading, the source would wake the loop forever
                 * (the sink that does not take is what keeps it so): the
                 * half waits for a give instead, which the sink's
                 * writability brings (something is held). */
                h->full = !(!h->grow_tried && grow(h)); /* grown: room again */
        return 0;
}

bool splice_half_give(SpliceHalf *h, int dst) {
        if (!splice_half_holds(h))
                return true;
        ssize_t n;
        if (h->buf)
                n = send(dst, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        else
                n = splice(h->pipe[0], NULL, dst, NULL, h->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        if (n > 0)
                h->full = false;
        h->moved += (size_t)n;
        if (!h->buf)
                h->len -= (size_t)n;
        else if ((h->off += (size_t)n) == h->len)
                h->off = h->len = 0;
        return true;
}

void splice_half_finish(SpliceHalf *h, int dst) {
        if (h->eof && !splice_half_holds(h) && !h->shut) {
                (void) shutdown(dst, SHUT_WR);
                h->shut = true;
        }
}
