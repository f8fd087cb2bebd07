/* SPDX-License-Identifier: MIT */
#pragma once

/* HTTPS to a secret's hosts (issue 31): after a CONNECT to such a host,
 * whose ClientHello names it, the proxy speaks TLS to the jail with the
 * leaf the daemon minted for that secret's hosts (proxy-ca.h; the proxy
 * never holds the workspace's CA key), opens TLS to the host checked
 * against the system CAs and the host's name, and sends the request head
 * on as head-rewrite.h makes it (the placeholders of the secrets that may
 * go there replaced; one of another secret refused). HTTP/1.1 only: the
 * jail is offered no other ALPN protocol. One request a connection
 * (Connection: close), as for plain HTTP.
 *
 * Each intercepted connection runs on a thread of its own over copies of
 * the connection's descriptors; the loop keeps the connection's handles
 * and is told (an async handle) when the thread is done. */

#include <openssl/types.h>

#include "engine.h"
#include "error.h"
#include "http-rules.h"
#include "inject.h"

/* Before the proxy is confined: the client context for the hosts, with
 * the CAs OpenSSL reads by default in this process's environment
 * (SSL_CERT_FILE, SSL_CERT_DIR: the daemon's, never the jail's). */
int tls_intercept_init(VsError **err);

/* A server context for one secret's leaf (PEM certificate and key). */
int tls_leaf_ctx(const char *cert, const char *key, SSL_CTX **ret, VsError **err);

/* A workspace's secrets as the proxy keeps them (inject.h), each with
 * the leaf for its hosts when the daemon sent one (same index). */
typedef struct SecretSet {
        InjectSet inject;
        SSL_CTX **leaves;
} SecretSet;
void secret_set_clear(SecretSet *s);
/* One secret (its fields taken from m), replacing one of its name. */
int secret_set_add(SecretSet *s, ProxyCtlMsg *m, VsError **err);
/* The leaf of a secret that may go to host:port (its connections are
 * intercepted), or NULL. */
SSL_CTX *secret_set_leaf(const SecretSet *s, const char *host, uint16_t port);

typedef struct TlsJob TlsJob;

typedef struct TlsJobArgs {
        int client_fd, upstream_fd; /* the job's own copies; it closes them */
        SSL_CTX *leaf;              /* a reference is taken */
        const char *host;           /* normalized, as the CONNECT named it */
        uint16_t port;
        const char *hello;          /* the client's bytes already read (its ClientHello) */
        size_t hello_len;
        ProxySend send;
        uint64_t ws;
        const ProxyCtlMsg *secrets; /* copied */
        size_t n_secrets;
        HttpRules *http;            /* the host's [[sandbox.http]] or NULL; a reference is taken */
        uv_async_t *done;           /* sent once the thread is done, until released */
} TlsJobArgs;

/* Starts the thread; on failure the descriptors are closed. */
int tls_intercept_start(const TlsJobArgs *a, TlsJob **ret);
/* The loop lets go: done is not sent after this returns; the thread's
 * sockets are shut, so it ends soon, and frees what it holds. */
void tls_intercept_release(TlsJob *j);
