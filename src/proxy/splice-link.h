/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "macro.h" /* before uv.h, whose sys/param.h defines MIN and MAX only when missing */
#include <uv.h>


/* A tunnel's bytes both ways between two connected sockets, moved by the
 * kernel (splice-half.h) instead of read into the proxy and written out:
 * the proxy's share of a download's cost is a few system calls per
 * quarter MiB. The link polls its own copies of the descriptors; the
 * caller keeps (and closes) its own. */
typedef struct SpliceLink SpliceLink;

/* ended: false on progress (an idle timer's cue), true once both ways are
 * shut or one side failed: the caller then frees the link. */
typedef void (*SpliceLinkCb)(void *userdata, bool ended);

int splice_link_start(uv_loop_t *loop, int fd_a, int fd_b, SpliceLinkCb cb, void *userdata, SpliceLink **ret);
/* Stops it; the memory goes once libuv has closed its handles. */
void splice_link_free(SpliceLink *l);
