/* SPDX-License-Identifier: MIT */
#pragma once

/* The control protocol between the daemon and its network proxy process
 * (vectora-sandbox-proxy, src/proxy/): a SOCK_SEQPACKET socketpair, one
 * JSON object per datagram (at most PROXY_CTL_MAX bytes), a listening
 * socket passed with SCM_RIGHTS alongside an "add". docs/architecture.md,
 * "The network proxy process", lists the messages.
 *
 * The daemon decodes what the proxy sends, and the proxy is the process
 * that parses the jail's bytes: the decoder treats its input as hostile
 * (bounded, every field checked); it has a fuzzer, tests/fuzz/fuzz-proxy-ctl.c. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "net-policy.h"

#define PROXY_CTL_MAX 65536
#define PROXY_CTL_MAX_RULES 1024

typedef enum ProxyCtlOp {
        /* daemon -> proxy */
        PROXY_CTL_ADD,    /* ws, peer, config, allow, rules; the listener's fd attached; a commit follows */
        PROXY_CTL_RULES,  /* ws, config, allow, rules: the policy changed; a commit follows */
        PROXY_CTL_PEER,   /* ws, peer: the jail's uid */
        PROXY_CTL_REMOVE, /* ws: close its listener and connections */
        /* proxy -> daemon */
        PROXY_CTL_DENIAL, /* ws, time_us, host, port, reason */
        PROXY_CTL_CONNS,  /* ws, open, total, lost (denials not sent; optional, 0) */
        PROXY_CTL_HELLO,  /* ws 0, seccomp, landlock: how it is confined, once, before serving */
        /* daemon -> proxy, after an add or rules (whose set it joins,
         * in force at the commit): ws, name, placeholder, value, the
         * secret's hosts as rules, and (optional) headers: the request
         * headers besides Authorization it may go in (secret-header.h). One message a secret, so that values
         * of up to SECRET_VALUE_MAX fit in PROXY_CTL_MAX. */
        PROXY_CTL_SECRET,
        /* proxy -> daemon: ws, time_us, host, port, name, method, path (as
         * the jail sent it, placeholders and all, cut at
         * PROXY_CTL_PATH_MAX): a secret's value was put into a request,
         * for the audit log. Never the value. */
        PROXY_CTL_SECRET_USE,
        /* daemon -> proxy, after an add or rules (whose set it joins,
         * in force at the commit): ws,
         * host, config (the entry's place, for the refusal's text) and
         * http_allow, one [[sandbox.http]] entry (http-rules.h). */
        PROXY_CTL_HTTP,
        /* daemon -> proxy, after an add or rules and their secret and
         * http messages: ws. The proxy keeps the workspace's rules,
         * secrets and [[sandbox.http]] rules in force until this, then
         * puts the new ones in their place in one step: a request read in
         * between is checked against the old set whole, never against a
         * part of the new one (none of its http rules yet). An add's
         * listener is read from its commit on. */
        PROXY_CTL_COMMIT,
} ProxyCtlOp;

#define PROXY_CTL_SECRET_NAME_MAX 64
#define PROXY_CTL_PLACEHOLDER_MAX 64
#define PROXY_CTL_SECRET_VALUE_MAX 8192
#define PROXY_CTL_SECRET_HOSTS_MAX 32
#define PROXY_CTL_METHOD_MAX 32
#define PROXY_CTL_PATH_MAX 1024
#define PROXY_CTL_PEM_MAX 8192

typedef struct ProxyCtlMsg {
        ProxyCtlOp op;
        uint64_t ws;         /* the daemon's id of the workspace's proxy */
        uid_t peer;          /* (uid_t)-1: nobody yet */
        bool allow;          /* the policy has an allowlist */
        char *config;        /* the policy file, for the refusal's text */
        VsNetRule *rules;
        size_t n_rules;
        uint64_t time_us;    /* CLOCK_MONOTONIC, now_us() */
        char *host;
        uint16_t port;
        char *reason;
        uint64_t open, total;
        uint64_t lost;       /* conns: denials the proxy could not send since its last conns */
        bool seccomp;        /* its seccomp filter is loaded */
        uint64_t landlock;   /* the Landlock ABI applied, 0 for none */
        char *name;          /* secret: [A-Z_][A-Z0-9_]* */
        char *placeholder;   /* secret: what the jail holds instead */
        char *value;         /* secret: value_len bytes (no CR, LF or NUL), NUL after them */
        size_t value_len;
        char *cert;          /* secret, optional: the leaf certificate (PEM) for its hosts, from the workspace's CA */
        char *key;           /* secret, with cert: the leaf's private key (PEM) */
        char **headers;      /* secret: header names besides Authorization (NULL-terminated; NULL for none) */
        size_t n_headers;
        char *method;        /* secret_use */
        char *path;          /* secret_use */
        char **http_allow;   /* http: "METHOD /glob" each (NULL-terminated) */
        size_t n_http_allow;
} ProxyCtlMsg;

/* Parses one datagram. -EBADMSG with *err saying why. */
int proxy_ctl_decode(const char *buf, size_t len, ProxyCtlMsg *ret, VsError **err);
void proxy_ctl_msg_done(ProxyCtlMsg *m);
/* Encodes m (its op's fields) as a malloc'd string. NULL on ENOMEM. */
char *proxy_ctl_encode(const ProxyCtlMsg *m);
