/* SPDX-License-Identifier: MIT */
#pragma once

/* What the proxy's engine shares between its files: a workspace's Proxy
 * and its connections (engine.c: their lifetime, answers, splicing, the
 * tunnel's ClientHello, accept, the daemon's messages; engine-request.c:
 * a request head, its checks, the name resolved and the upstream
 * connected). Not for anything outside src/proxy/engine*.c. */

#include <netdb.h>

#include "engine.h"
#include "http-rules.h"
#include "net-policy.h"
#include "proxy-parse.h"
#include "splice-link.h"
#include "tls-intercept.h"

typedef enum ConnState {
        CS_HEAD,       /* reading the request head */
        CS_RESOLVING,
        CS_CONNECTING,
        CS_HELLO,      /* CONNECT answered: reading the ClientHello */
        CS_SPLICE,     /* bytes both ways */
        CS_TLS,        /* a secret's host: TLS both ways on a thread (tls-intercept.h) */
        CS_ANSWER,     /* an answer of the proxy's own is being written; then the end */
        CS_CLOSING,
} ConnState;

typedef struct ProxyConn ProxyConn;
struct ProxyConn {
        Proxy *px;
        ProxyConn *next, *prev;
        ConnState state;
        uv_pipe_t client;
        uv_tcp_t upstream;
        uv_timer_t timer;
        uv_getaddrinfo_t gai;
        uv_connect_t creq;
        unsigned handles;      /* open handles; freed at 0 */
        bool upstream_init, gai_pending;
        bool client_reading, upstream_reading;
        bool client_eof, upstream_eof;
        char *buf;             /* head, then ClientHello (VS_HTTP_HEAD_MAX) */
        size_t len;
        size_t want;           /* CS_HEAD: bytes the head and a body to check need */
        VsHttpHead head;
        VsNetRule rule;        /* a copy of the matching entry (the policy may change meanwhile) */
        struct addrinfo *ai;
        SpliceLink *link;      /* the tunnel's bytes, moved by the kernel (splice-link.h) */
        TlsJob *tls;           /* CS_TLS: its thread */
        uv_async_t tls_done;   /* the thread is done */
        bool tls_done_init;
};

struct Proxy {
        uint64_t id;
        bool removed;
        uv_loop_t *loop;
        uv_pipe_t listener;
        bool listening;
        uid_t peer_uid;
        bool allow;
        char *config;
        VsNetRule *rules;
        size_t n_rules;
        SecretSet secrets; /* tls-intercept.h */
        HttpRuleSet http;  /* [[sandbox.http]], one a host (http-rules.h) */
        /* The set an add or rules began and its secret and http messages
         * fill; it replaces the one above whole at the commit, so that no
         * request is ever checked against half of it (before the first
         * commit the listener is not read: its connections wait). */
        struct Staged {
                bool allow;
                char *config;
                VsNetRule *rules;
                size_t n_rules;
                SecretSet secrets;
                HttpRuleSet http;
        } *staged;
        bool serving; /* committed once: the listener is read */
        ProxyConn *conns;
        unsigned open;
        uint64_t total;
        uint64_t lost; /* denials the daemon did not get yet (its socket full, or past the budget) */
        bool conns_changed; /* open or total changed since the daemon was told */
        uint64_t conns_sent_us;  /* when the daemon was last told the counts */
        unsigned denial_tokens;  /* denials it may still itemize now (DENIAL_BURST at most) */
        uint64_t denial_fill_us; /* when the tokens were last filled; 0: never (full) */
        bool accept_waits;  /* a connection waits in the listener: PROXY_ACCEPT_MAX were open */
        Proxy *next;
        ProxySend send;
};

/* engine-rules.c: the set in force and the staged one. */
/* Drops the staged set, if any. */
void proxy_staged_free(Proxy *px);
/* Drops the set in force (rules, config, secrets, http rules). */
void proxy_rules_clear(Proxy *px);
/* An add or rules begins a new staged set from m (its config and rules
 * taken); one begun and not committed is dropped. */
int proxy_rules_stage(Proxy *px, ProxyCtlMsg *m);
/* The staged set replaces the one in force, in one step of the loop;
 * -EINVAL without one. */
int proxy_rules_commit(Proxy *px, VsError **err);

/* engine.c */
void conn_close(ProxyConn *c);
/* Frees c once its handles are closed and no resolution is pending. */
void conn_free(ProxyConn *c);
/* Queues a copy of data on s; closes the connection after it if asked. */
int conn_send_copy(ProxyConn *c, uv_stream_t *s, const void *data, size_t len, bool close_after);
/* An HTTP answer of the proxy's own to the client, then the end. */
_printf_(4, 5) void conn_respond(ProxyConn *c, int status, const char *title, const char *fmt, ...);
/* A denial sent to the daemon (audited, network_denied). */
void conn_record_denial(ProxyConn *c, const char *host, uint16_t port, const char *reason);
/* A refusal: recorded, then a 403 (http) or the tunnel closed. */
void conn_deny(ProxyConn *c, const char *host, uint16_t port, const char *reason, bool http);
void conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b);
void conn_on_client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);
void conn_resume_reading(ProxyConn *c);
/* Bytes both ways, pending[0..len) first to the upstream. */
void conn_start_splice(ProxyConn *c, const char *pending, size_t len);
/* CS_HELLO: the tunnel's first bytes, checked. */
void conn_check_hello(ProxyConn *c);
/* The timer for the connection's state. */
void conn_timer_state(ProxyConn *c);

/* The request path's step for the client's bytes so far, while in
 * CS_HEAD (engine-request.c's conn_head_ready, installed by
 * engine_request_init()): the engine's read callback calls it and knows
 * nothing else of that path, which calls down into the engine. */
typedef void (*ConnHeadStep)(ProxyConn *c);
void engine_set_head_step(ConnHeadStep step);

/* engine-request.c */
void conn_head_ready(ProxyConn *c);
