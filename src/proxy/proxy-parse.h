/* SPDX-License-Identifier: MIT */
#pragma once

/* Parsers for what the jail sends the daemon's network proxy: the HTTP
 * request head (CONNECT or a plain request in absolute form) and the TLS
 * ClientHello that follows a CONNECT (for its SNI). Both read untrusted
 * bytes: pure, bounded, no allocation but the outputs; each has a fuzzer
 * (tests/fuzz/fuzz-http-head.c, fuzz-tls-sni.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The most the proxy reads before the end of a request head. */
#define VS_HTTP_HEAD_MAX 16384

typedef struct VsHttpHead {
        bool connect;   /* CONNECT host:port */
        char *method;   /* as sent */
        char *host;     /* normalized (net_host_normalize) */
        uint16_t port;
        char *path;     /* plain requests: origin-form target ("/x?y"); NULL for CONNECT */
        char *version;  /* "HTTP/1.1" or "HTTP/1.0" */
        /* plain requests: the header lines to forward (each ending CRLF),
         * minus hop-by-hop and proxy headers, plus "Connection: close" */
        char *forward_headers;
        size_t head_len; /* bytes of the head, terminating blank line included */
} VsHttpHead;

/* The length of the head in buf (up to and including CRLF CRLF), 0 when
 * it is not complete yet, -E2BIG when no head ends within
 * VS_HTTP_HEAD_MAX bytes. */
int64_t http_head_end(const char *buf, size_t len);

/* Parses a complete head (len as http_head_end returned). -EINVAL with a
 * reason in *err for a malformed head, -EPROTONOSUPPORT for a request that
 * is not meant for a proxy (origin-form target, a scheme other than http). */
int http_head_parse(const char *buf, size_t len, VsHttpHead *ret, VsError **err);
void http_head_done(VsHttpHead *h);

/* The ClientHello's server_name, from the first bytes a client sent.
 *   1: *ret_sni set (malloc'd, lowercased), or NULL when the hello carries
 *      no server_name;
 *   0: not complete yet, read more;
 *  -EPROTO: not TLS at all (the first byte is not a handshake record);
 *  -EINVAL: a TLS handshake that is malformed, or a hello longer than
 *      VS_HTTP_HEAD_MAX (err says which). */
int tls_client_hello_sni(const uint8_t *buf, size_t len, char **ret_sni, VsError **err);

/* Whether a tunnel's first bytes (not TLS) are an HTTP request: its first
 * line (after any blank lines, which a server skips) names "HTTP/", or is
 * "GET target" (HTTP/0.9). 1 yes, 0 no (a byte no request line holds
 * before its end, or a line of another protocol), -EAGAIN when the line
 * has not ended yet; full: no more will come (the buffer is full), so an
 * unended printable line counts as a request. */
int http_request_like(const char *buf, size_t len, bool full);
