/* SPDX-License-Identifier: MIT */
#include "fd-util.h"

#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "strbuf.h"

int fd_set_cloexec(int fd, bool on) {
        int f = fcntl(fd, F_GETFD);
        if (f < 0)
                return -errno;
        int n = on ? (f | FD_CLOEXEC) : (f & ~FD_CLOEXEC);
        if (n != f && fcntl(fd, F_SETFD, n) < 0)
                return -errno;
        return 0;
}

int fd_set_nonblock(int fd, bool on) {
        int f = fcntl(fd, F_GETFL);
        if (f < 0)
                return -errno;
        int n = on ? (f | O_NONBLOCK) : (f & ~O_NONBLOCK);
        if (n != f && fcntl(fd, F_SETFL, n) < 0)
                return -errno;
        return 0;
}

int write_all(int fd, const void *p, size_t n) {
        const char *c = p;
        while (n > 0) {
                ssize_t k = write(fd, c, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                c += k;
                n -= (size_t)k;
        }
        return 0;
}

ssize_t read_full(int fd, void *p, size_t n) {
        size_t got = 0;
        while (got < n) {
                ssize_t k = read(fd, (char *)p + got, n - got);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                got += (size_t)k;
        }
        return (ssize_t)got;
}

int read_fd_all(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        b.max = max + 1;
        for (;;) {
                int r = strbuf_reserve(&b, 65536);
                if (r == -ENOBUFS)
                        r = strbuf_reserve(&b, 1);
                if (r < 0)
                        return r == -ENOBUFS ? -EFBIG : r;
                size_t room = b.cap - b.len - 1;
                ssize_t k = read(fd, b.data + b.len, room);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                b.len += (size_t)k;
                b.data[b.len] = 0;
                if (b.len > max)
                        return -EFBIG;
        }
        if (ret_len)
                *ret_len = b.len;
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_fd_all(fd, max, ret, ret_len);
}

int fd_move_to(int fd, int target) {
        if (fd == target)
                return fd_set_cloexec(fd, false);
        if (dup2(fd, target) < 0)
                return -errno;
        return 0;
}

/* Async-signal-safe (no allocation): called between fork and exec. */
static int close_span(unsigned lo, unsigned hi) {
        if (lo > hi)
                return 0;
        if (syscall(SYS_close_range, lo, hi, 0) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;
        /* Kernels before 5.9: one by one, up to the descriptor limit. */
        struct rlimit rl;
        unsigned max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (unsigned)rl.rlim_cur : 65536u;
        for (unsigned fd = lo; fd <= hi && fd < max; fd++)
                (void)close((int)fd);
        return 0;
}

int close_all_fds_except(const int *keep, size_t n_keep) {
        unsigned lo = 0;
        /* keep is small: take its members in increasing order. */
        for (;;) {
                int next = -1;
                for (size_t i = 0; i < n_keep; i++)
                        if (keep[i] >= 0 && (unsigned)keep[i] >= lo && (next < 0 || keep[i] < next))
                                next = keep[i];
                if (next < 0)
                        return close_span(lo, ~0u);
                if ((unsigned)next > lo) {
                        int r = close_span(lo, (unsigned)next - 1);
                        if (r < 0)
                                return r;
                }
                lo = (unsigned)next + 1;
        }
}

ssize_t send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t n, int flags) {
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(sizeof(int) * FD_PASS_MAX)];
        } control;
        memset(&control, 0, sizeof control);
        struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (n > FD_PASS_MAX)
                return -EINVAL;
        if (n > 0) {
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        }
        ssize_t k = sendmsg(sock, &mh, flags);
        return k < 0 ? -errno : k;
}

size_t recv_take_fds(struct msghdr *mh, int *fds, size_t max, bool *overflow) {
        size_t n = 0;
        bool over = (mh->msg_flags & MSG_CTRUNC) != 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < k; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                                if (n < max)
                                        fds[n++] = fd;
                                else {
                                        close(fd);
                                        over = true;
                                }
                        }
                }
        if (overflow)
                *overflow = over;
        return n;
}
