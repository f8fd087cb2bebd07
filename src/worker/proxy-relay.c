/* SPDX-License-Identifier: MIT */
/* The jail's end of the network allowlist: a listener on 127.0.0.1 inside
 * the jail's own (empty) network namespace whose connections are relayed,
 * byte for byte, to the daemon's proxy through the unix socket mounted at
 * init.proxy_socket. All policy is the daemon's: the relay decides nothing,
 * so a jailed process that connects to the mounted socket directly gains
 * nothing either.
 *
 * It runs in a child of the worker forked after the worker enforced its
 * policy (same seccomp, Landlock, namespaces), so a stuck or slow
 * connection never delays the worker's request loop. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "spawn-util.h"
#include "splice-half.h"
#include "worker.h"

#define RELAY_MAX_PAIRS 256
#define RELAY_BUF (64u * 1024u)  /* a half's buffer where the kernel refuses splice */

typedef struct Pair {
        int fd[2];        /* [0] the jailed client (tcp), [1] the daemon (unix) */
        SpliceHalf h[2];  /* h[i]: from fd[i] to fd[1 - i] */
} Pair;

static Pair *pairs[RELAY_MAX_PAIRS];

static void pair_close(size_t i) {
        for (int k = 0; k < 2; k++) {
                safe_close(pairs[i]->fd[k]);
                splice_half_done(&pairs[i]->h[k]);
        }
        free(pairs[i]);
        pairs[i] = NULL;
}

static void relay_accept(int lfd, const char *socket_path) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0)
                return;
        size_t slot = RELAY_MAX_PAIRS;
        for (size_t i = 0; i < RELAY_MAX_PAIRS; i++)
                if (!pairs[i]) {
                        slot = i;
                        break;
                }
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int u = -1;
        if (slot < RELAY_MAX_PAIRS && strlen(socket_path) < sizeof sa.sun_path) {
                strcpy(sa.sun_path, socket_path);
                u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                /* Blocking connect: a unix connect completes at once or
                 * fails (a full backlog is a failure, not a wait). */
                if (u >= 0 && connect(u, (struct sockaddr *)&sa, sizeof sa) < 0)
                        u = safe_close(u);
        }
        if (u < 0 || fd_set_nonblock(u, true) < 0) {
                /* No proxy to relay to: the client sees its connection closed. */
                safe_close(u);
                close(c);
                return;
        }
        Pair *p = calloc(1, sizeof *p);
        if (!p) {
                close(u);
                close(c);
                return;
        }
        p->fd[0] = c;
        p->fd[1] = u;
        pairs[slot] = p;
        p->h[0].pipe[0] = p->h[0].pipe[1] = p->h[1].pipe[0] = p->h[1].pipe[1] = -EBADF;
        if (splice_half_init(&p->h[0], RELAY_BUF) < 0 || splice_half_init(&p->h[1], RELAY_BUF) < 0)
                pair_close(slot);
}

/* Moves what it can in one direction; false when the pair is done. */
static bool half_step(Pair *p, int i, short rev_src) {
        SpliceHalf *h = &p->h[i];
        int src = p->fd[i], dst = p->fd[1 - i];
        if ((rev_src & (POLLIN | POLLHUP | POLLERR)) && splice_half_wants(h) && splice_half_take(h, src) < 0)
                return false;
        /* A pending give is always tried: non-blocking, it says if it fits. */
        if (!splice_half_give(h, dst))
                return false;
        splice_half_finish(h, dst);
        return !(p->h[0].shut && p->h[1].shut);
}

static _noreturn_ void relay_loop(int lfd, const char *socket_path) {
        struct pollfd fds[1 + 2 * RELAY_MAX_PAIRS];
        for (;;) {
                size_t idx[RELAY_MAX_PAIRS] = { 0 }; /* 0: not polled (fds[0] is the listener) */
                size_t n = 0;
                fds[n++] = (struct pollfd) { .fd = lfd, .events = POLLIN };
                for (size_t i = 0; i < RELAY_MAX_PAIRS; i++) {
                        Pair *p = pairs[i];
                        if (!p)
                                continue;
                        idx[i] = n;
                        for (int k = 0; k < 2; k++) {
                                short ev = 0;
                                if (splice_half_wants(&p->h[k]))
                                        ev |= POLLIN;
                                if (splice_half_holds(&p->h[1 - k]))
                                        ev |= POLLOUT;
                                fds[n++] = (struct pollfd) { .fd = p->fd[k], .events = ev };
                        }
                }
                if (poll(fds, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(1);
                }
                if (fds[0].revents & POLLIN)
                        relay_accept(lfd, socket_path);
                for (size_t i = 0; i < RELAY_MAX_PAIRS; i++) {
                        Pair *p = pairs[i];
                        if (!p || !idx[i])
                                continue;
                        short r0 = fds[idx[i]].revents, r1 = fds[idx[i] + 1].revents;
                        if (!half_step(p, 0, r0) || !half_step(p, 1, r1))
                                pair_close(i);
                        /* A side that hung up (it can no longer receive)
                         * and has nothing left to deliver: the pair is
                         * over, or poll would report it forever. */
                        else if (((r0 & (POLLHUP | POLLERR)) && p->h[0].eof && !splice_half_holds(&p->h[0])) ||
                                 ((r1 & (POLLHUP | POLLERR)) && p->h[1].eof && !splice_half_holds(&p->h[1])))
                                pair_close(i);
                }
        }
}

int proxy_relay_start(const char *socket_path, uint16_t port, pid_t *ret_pid, VsError **err) {
        _cleanup_close_ int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (lfd < 0)
                return vs_error_set(err, -errno, "proxy relay: socket: %m");
        int one = 1;
        (void) setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 64) < 0)
                return vs_error_set(err, -errno, "proxy relay: cannot listen on 127.0.0.1:%u in the jail: %m",
                                    (unsigned)port);
        pid_t pid = spawn_fork(SIGKILL);
        if (pid < 0)
                return vs_error_set(err, pid, "proxy relay: fork: %s", strerror(-pid));
        if (pid == 0) {
                /* Never touch the worker's peer: stdin/stdout are the
                 * protocol, only the worker may speak on them. */
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
                        _exit(1);
                signal(SIGPIPE, SIG_IGN);
                relay_loop(lfd, socket_path);
        }
        *ret_pid = pid;
        return 0;
}
