/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* One direction of a byte relay between two non-blocking sockets: what
 * was taken from the source and not yet given to the sink. The bytes go
 * through a pipe with splice(2), so the kernel moves pages and the relay
 * copies nothing; where the kernel refuses splice for these sockets, the
 * half (and every later one in the process) copies through a buffer. */
/* A half's pipe grows to SPLICE_HALF_GROWN once its source filled it;
 * the halves of one process grow by SPLICE_HALF_GROWN_MAX bytes at most
 * together (pipes are charged to their user's pipe pages). */
#define SPLICE_HALF_GROWN (1u << 20)
#define SPLICE_HALF_GROWN_MAX (8u << 20)

typedef struct SpliceHalf {
        int pipe[2];
        size_t cap;     /* what the half may hold */
        char *buf;      /* the copying fallback */
        size_t len;     /* held: in the pipe, or read into buf */
        size_t off;     /* of buf: given already */
        unsigned long long moved; /* bytes taken and given: progress */
        bool full;      /* the pipe took no more: read again once some was given */
        bool eof;       /* the source ended (or failed) */
        bool shut;      /* the sink's writing side was shut, after the last byte */
        bool grow_tried; /* the pipe was grown, or growing it was refused */
        size_t grown;   /* bytes of capacity growing added (the process's budget) */
} SpliceHalf;

/* Bytes of pipe capacity the process's live halves added by growing. */
size_t splice_half_grown_total(void);
/* buf_size: the fallback's buffer. */
int splice_half_init(SpliceHalf *h, size_t buf_size);
void splice_half_done(SpliceHalf *h);
/* Takes what there is room for from src; 0, or -ENOMEM. A source that
 * ended or failed sets eof. */
int splice_half_take(SpliceHalf *h, int src);
/* Gives what it holds to dst; false when dst failed (the relay is over). */
bool splice_half_give(SpliceHalf *h, int dst);
/* After take and give: once the source ended and all was given, shuts
 * dst's writing side (once). */
void splice_half_finish(SpliceHalf *h, int dst);
static inline bool splice_half_holds(const SpliceHalf *h) {
        return h->len > h->off;
}
static inline bool splice_half_wants(const SpliceHalf *h) {
        return !h->eof && !h->full && h->len < h->cap;
}
