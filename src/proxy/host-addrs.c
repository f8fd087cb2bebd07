/* SPDX-License-Identifier: MIT */
#include "host-addrs.h"

#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"

static int nl_fd = -EBADF; /* -EBADF: not tried yet; another negative errno: none to be had */
static VsNetAddr *addrs;
static size_t n_addrs;
static bool fresh; /* addrs is what getifaddrs() said after the last change noticed */

/* Subscribed before the first read, so no change slips between the two. */
static int nl_open(void) {
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
        if (fd < 0)
                return -errno;
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* Empties the queue; whether anything was in it (or lost to overflow). */
static bool nl_changed(void) {
        bool changed = false;
        char buf[8192];
        for (;;) {
                ssize_t k = recv(nl_fd, buf, sizeof buf, MSG_DONTWAIT);
                if (k >= 0) {
                        changed = true;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno == ENOBUFS) {
                        changed = true;
                        continue;
                }
                /* EAGAIN: empty. Anything else: the socket is no use;
                 * read the addresses on every call from now on. */
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                        safe_close(nl_fd);
                        nl_fd = -EIO;
                        changed = true;
                }
                return changed;
        }
}

static int read_addrs(void) {
        struct ifaddrs *list = NULL;
        if (getifaddrs(&list) < 0)
                return -errno;
        size_t n = 0;
        for (struct ifaddrs *i = list; i; i = i->ifa_next)
                n += i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6);
        VsNetAddr *a = calloc(n ? n : 1, sizeof *a);
        if (!a) {
                freeifaddrs(list);
                return -ENOMEM;
        }
        size_t k = 0;
        for (struct ifaddrs *i = list; i; i = i->ifa_next) {
                if (!i->ifa_addr)
                        continue;
                if (i->ifa_addr->sa_family == AF_INET) {
                        a[k].family = AF_INET;
                        memcpy(a[k++].addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
                } else if (i->ifa_addr->sa_family == AF_INET6) {
                        a[k].family = AF_INET6;
                        memcpy(a[k++].addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
                }
        }
        freeifaddrs(list);
        free(addrs);
        addrs = a;
        n_addrs = k;
        return 0;
}

int host_addrs_get(const VsNetAddr **ret, size_t *ret_n) {
        if (nl_fd == -EBADF) {
                nl_fd = nl_open();
                fresh = false;
        }
        if (nl_fd >= 0) {
                if (nl_changed())
                        fresh = false;
        } else
                fresh = false;
        if (!fresh) {
                int r = read_addrs();
                if (r < 0)
                        return r;
                fresh = true;
        }
        *ret = addrs;
        *ret_n = n_addrs;
        return 0;
}
