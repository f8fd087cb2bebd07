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

/* How much of a read the hub hands its subscribers: a read that takes
 * long is one a jail floods faster than its events are handled (a big
 * tree renamed back and forth kept the loop in one read forever). */
typedef enum NotifySkim {
        NOTIFY_ALL,      /* every event */
        NOTIFY_FILES,    /* past NOTIFY_DIRS_MAX_US: not directories' (a
                          * directory event costs a walk or a rename of the
                          * watch table); those are an overflow */
        NOTIFY_NONE,     /* past NOTIFY_ALL_MAX_US: none; an overflow. Read
                          * only, events are always read faster than made */
} NotifySkim;
#define NOTIFY_DIRS_MAX_US 50000
#define NOTIFY_ALL_MAX_US 250000
/* Reads fd (nonblocking) until it is empty, each read's bytes to
 * parse(ctx, buf, n, skim). false if it could not be read (not EAGAIN).
 * An overflow from skimming: each subscriber walks its tree again at the
 * batch's end; the hub keeps its own bookkeeping whatever skim says. */
bool notify_read_all(int fd, char *buf, size_t size, void (*parse)(void *ctx, const char *buf, size_t n, NotifySkim skim),
                     void *ctx);
/* batch_end of each live subscriber that got events, then frees the dead
 * ones (free() of the SubHead: the struct that starts with it). */
void notify_batch_done(SubHead **list);
/* Frees the dead ones only. */
void notify_sweep(SubHead **list);
