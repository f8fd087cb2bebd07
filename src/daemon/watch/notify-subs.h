/* SPDX-License-Identifier: MIT */
#pragma once

/* What the daemon's two notification hubs (inotify-hub.c, fan-hub.c)
 * share: reading a nonblocking queue to its end, and the subscribers'
 * list, whose members freed during a batch are only marked dead and swept
 * after it (a callback may end its own or another workspace's watch). A
 * hub's subscriber struct starts with a SubHead. */

#include <stdbool.h>
#include <stddef.h>

typedef struct SubHead {
        struct SubHead *next;
        void (*batch_end)(void *userdata); /* may be NULL */
        void *userdata;
        bool got;  /* events in the batch being dispatched */
        bool dead; /* freed during a batch: swept after it */
} SubHead;

/* Reads fd (nonblocking) until it is empty, each read's bytes to
 * parse(ctx, buf, n). false if it could not be read (not EAGAIN). */
bool notify_read_all(int fd, char *buf, size_t size, void (*parse)(void *ctx, const char *buf, size_t n), void *ctx);
/* batch_end of each live subscriber that got events, then frees the dead
 * ones (free() of the SubHead: the struct that starts with it). */
void notify_batch_done(SubHead **list);
/* Frees the dead ones only. */
void notify_sweep(SubHead **list);
