/* SPDX-License-Identifier: MIT */
/* The notification hubs' shared reading and subscriber list (notify-subs.h). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "notify-subs.h"
#include "time-util.h"

bool notify_read_all(int fd, char *buf, size_t size, void (*parse)(void *ctx, const char *buf, size_t n, NotifySkim skim),
                     void *ctx) {
        uint64_t t0 = now_us();
        for (;;) {
                ssize_t n = read(fd, buf, size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 && errno == EAGAIN;
                uint64_t took = now_us() - t0;
                parse(ctx, buf, (size_t)n,
                      took >= NOTIFY_ALL_MAX_US ? NOTIFY_NONE : took >= NOTIFY_DIRS_MAX_US ? NOTIFY_FILES : NOTIFY_ALL);
        }
}

void notify_sweep(SubHead **list) {
        for (SubHead **p = list; *p;) {
                SubHead *s = *p;
                if (!s->dead) {
                        p = &s->next;
                        continue;
                }
                *p = s->next;
                free(s);
        }
}

void notify_batch_done(SubHead **list) {
        for (SubHead *s = *list; s; s = s->next)
                if (s->got && !s->dead) {
                        s->got = false;
                        if (s->batch_end)
                                s->batch_end(s->userdata);
                }
        notify_sweep(list);
}
