/* SPDX-License-Identifier: MIT */
#include "splice-half.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"

static bool no_splice;

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
         * relay of that user shares, so none is grown. */
        int sz = fcntl(h->pipe[1], F_GETPIPE_SZ);
        h->cap = sz > 0 ? (size_t)sz : 4096;
        return 0;
}

void splice_half_done(SpliceHalf *h) {
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
                h->full = true;
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
