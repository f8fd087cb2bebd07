/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker handshake, once for every driver: the worker says hello (its
 * protocol version), the jail's staging mounts are released, init goes
 * out, and the worker answers ready (with what it enforces) or
 * init_failed. Like tool-call.h it does no I/O: session.c feeds it from
 * blocking reads, the daemon's worker-link.c from libuv callbacks.
 *
 * What a ready worker enforces becomes the layers a result names; a layer
 * is claimed only when both sides agree on it (the worker reports it and
 * neither the launch nor the worker says it is degraded). */

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "jsonl.h"
#include "launch.h"
#include "strbuf.h"

typedef enum VsHandshakeState {
        VS_HANDSHAKE_HELLO,   /* waiting for hello */
        VS_HANDSHAKE_INIT,    /* init sent, waiting for ready */
        VS_HANDSHAKE_READY,
} VsHandshakeState;

typedef struct VsHandshake {
        VsLaunch *launch;     /* borrowed */
        VsHandshakeState state;
        pid_t worker_pid;     /* from hello: the worker's pid as it sees it (1 in its pid namespace) */
        /* READY: */
        char **layers;        /* e.g. namespaces, no_new_privs, seccomp, landlock */
        char **degraded;      /* the launch's, then the worker's (each once) */
} VsHandshake;

/* Borrows l, which must outlive h. */
void handshake_init(VsHandshake *h, VsLaunch *l);
void handshake_done(VsHandshake *h);

#define VS_HANDSHAKE_SEND 1   /* out holds init: send it */
#define VS_HANDSHAKE_OK 2     /* ready: layers and degraded are set */
/* Feeds one message from the worker. Fails with kind
 * "sandbox_unavailable": -EPROTO when the worker broke the handshake (no
 * hello, a version mismatch, no ready: the caller adds what the backend
 * wrote to stderr), -EPERM when the jail refused to start (init_failed:
 * the message is the worker's reason). */
int handshake_feed(VsHandshake *h, JsonlMsg *m, StrBuf *out, VsError **err);
