/* SPDX-License-Identifier: MIT */
#include "tls-intercept.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "head-rewrite.h"
#include "inject.h"
#include "macro.h"
#include "net-policy.h"
#include "proxy-parse.h"
#include "strbuf.h"
#include "strv.h"
#include "time-util.h"

#define TLS_HEAD_TIMEOUT_MS 30000  /* the handshakes and the request head */
#define TLS_IDLE_TIMEOUT_MS 300000 /* no traffic either way */
#define TLS_BUF 16384
#define TLS_THREAD_STACK (512 * 1024)

static SSL_CTX *upstream_ctx;
static const unsigned char alpn_http11[] = "\x08http/1.1";

int tls_intercept_init(VsError **err) {
        if (!OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) || !(upstream_ctx = SSL_CTX_new(TLS_client_method())))
                return vs_error_set(err, -ENOMEM, "OpenSSL: cannot make a TLS context");
        SSL_CTX_set_min_proto_version(upstream_ctx, TLS1_2_VERSION);
        SSL_CTX_set_verify(upstream_ctx, SSL_VERIFY_PEER, NULL);
        /* The file is read now, before Landlock; a directory of hashed
         * names is looked up later, below /etc or /usr, which stay readable. */
        if (!SSL_CTX_set_default_verify_paths(upstream_ctx)) {
                ERR_clear_error();
                return vs_error_set(err, -EIO, "OpenSSL: cannot load the system CAs");
        }
        return 0;
}

/* Offers the jail HTTP/1.1 alone: the head rewriting reads HTTP/1.x. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
        (void)ssl;
        (void)arg;
        unsigned char *o = NULL;
        if (SSL_select_next_proto(&o, outlen, alpn_http11, sizeof alpn_http11 - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
                return SSL_TLSEXT_ERR_ALERT_FATAL;
        *out = o;
        return SSL_TLSEXT_ERR_OK;
}

int tls_leaf_ctx(const char *cert, const char *key, SSL_CTX **ret, VsError **err) {
        SSL_CTX *x = SSL_CTX_new(TLS_server_method());
        BIO *cb = BIO_new_mem_buf(cert, -1), *kb = BIO_new_mem_buf(key, -1);
        X509 *c = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
        EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
        bool ok = x && c && k && SSL_CTX_set_min_proto_version(x, TLS1_2_VERSION) && SSL_CTX_use_certificate(x, c) &&
                  SSL_CTX_use_PrivateKey(x, k) && SSL_CTX_check_private_key(x);
        X509_free(c);
        EVP_PKEY_free(k);
        BIO_free(cb);
        BIO_free(kb);
        ERR_clear_error();
        if (!ok) {
                SSL_CTX_free(x);
                return vs_error_set(err, -EINVAL, "a secret's leaf certificate or key does not load");
        }
        SSL_CTX_set_alpn_select_cb(x, alpn_select, NULL);
        *ret = x;
        return 0;
}

void secret_set_clear(SecretSet *s) {
        for (size_t i = 0; s->leaves && i < s->inject.n; i++)
                SSL_CTX_free(s->leaves[i]);
        free(TAKE_PTR(s->leaves));
        inject_set_clear(&s->inject);
}

int secret_set_add(SecretSet *s, ProxyCtlMsg *m, VsError **err) {
        SSL_CTX *ctx = NULL;
        int r;
        if (m->cert && m->key && (r = tls_leaf_ctx(m->cert, m->key, &ctx, err)) < 0)
                return r;
        size_t i = 0;
        while (i < s->inject.n && !streq(s->inject.items[i].name, m->name))
                i++;
        /* A slot for a new one first: inject_set_add() takes m's fields. */
        if (i == s->inject.n) {
                SSL_CTX **l = realloc(s->leaves, (i + 1) * sizeof *l);
                if (!l) {
                        SSL_CTX_free(ctx);
                        return -ENOMEM;
                }
                s->leaves = l;
                l[i] = NULL;
        }
        if ((r = inject_set_add(&s->inject, m)) < 0) {
                SSL_CTX_free(ctx);
                return r;
        }
        SSL_CTX_free(s->leaves[i]);
        s->leaves[i] = ctx;
        return 0;
}

SSL_CTX *secret_set_leaf(const SecretSet *s, const char *host, uint16_t port) {
        for (size_t i = 0; i < s->inject.n; i++)
                if (s->leaves[i] && inject_may_go(&s->inject.items[i], host, port))
                        return s->leaves[i];
        return NULL;
}

/* ---- the job ---------------------------------------------------------------- */

struct TlsJob {
        pthread_mutex_t mu;
        int refs;         /* the thread's and the loop's */
        uv_async_t *done; /* NULL once the loop let go */
        int cfd, ufd;
        SSL_CTX *leaf;
        char *host;
        uint16_t port;
        char *hello;
        size_t hello_len;
        ProxySend send;
        uint64_t ws;
        ProxyCtlMsg *secrets;
        size_t n;
        HttpRules *http;
};

static void job_unref(TlsJob *j) {
        pthread_mutex_lock(&j->mu);
        bool last = --j->refs == 0;
        pthread_mutex_unlock(&j->mu);
        if (!last)
                return;
        safe_close(j->cfd);
        safe_close(j->ufd);
        SSL_CTX_free(j->leaf);
        free(j->host);
        free(j->hello);
        for (size_t i = 0; i < j->n; i++)
                proxy_ctl_msg_done(&j->secrets[i]);
        free(j->secrets);
        http_rules_unref(j->http);
        pthread_mutex_destroy(&j->mu);
        free(j);
}

/* What the thread needs of a secret: the rules may change meanwhile. */
static int secret_copy(const ProxyCtlMsg *s, ProxyCtlMsg *d) {
        *d = (ProxyCtlMsg) { .op = s->op, .value_len = s->value_len };
        if (!(d->name = strdup(s->name)) || !(d->placeholder = strdup(s->placeholder)) ||
            !(d->value = malloc(s->value_len + 1)) || !(d->rules = calloc(s->n_rules + 1, sizeof *d->rules)) ||
            (s->headers && !(d->headers = strv_copy(s->headers))))
                return -ENOMEM;
        d->n_headers = s->n_headers;
        memcpy(d->value, s->value, s->value_len);
        d->value[s->value_len] = '\0';
        for (size_t i = 0; i < s->n_rules; i++) {
                d->rules[i] = s->rules[i];
                d->rules[i].host = strdup(s->rules[i].host);
                d->rules[i].written = s->rules[i].written ? strdup(s->rules[i].written) : NULL;
                d->n_rules++;
                if (!d->rules[i].host || (s->rules[i].written && !d->rules[i].written))
                        return -ENOMEM;
        }
        return 0;
}

/* ---- one side's TLS over a non-blocking socket ---------------------------- */

typedef struct Side {
        SSL *ssl;
        BIO *rbio; /* what was read from fd, for OpenSSL; it writes to fd itself */
        int fd;
        bool eof;
} Side;

static int side_init(Side *s, SSL_CTX *ctx, int fd, const char *pending, size_t len) {
        BIO *w = BIO_new_socket(fd, BIO_NOCLOSE);
        s->fd = fd;
        s->ssl = SSL_new(ctx);
        s->rbio = BIO_new(BIO_s_mem());
        if (!w || !s->ssl || !s->rbio) {
                BIO_free(w);
                BIO_free(s->rbio);
                s->rbio = NULL;
                return -ENOMEM;
        }
        BIO_set_mem_eof_return(s->rbio, -1);
        SSL_set_bio(s->ssl, s->rbio, w);
        if (len && BIO_write(s->rbio, pending, (int)len) != (int)len)
                return -ENOMEM;
        return 0;
}

static void side_done(Side *s) {
        SSL_free(s->ssl); /* its BIOs with it */
}

static int io_wait(int fd, short ev, int ms) {
        struct pollfd p = { .fd = fd, .events = ev };
        int r;
        do
                r = poll(&p, 1, ms);
        while (r < 0 && errno == EINTR);
        return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

/* Reads what the socket has into the side's BIO, waiting up to ms. */
static int pump(Side *s, int ms) {
        char buf[TLS_BUF];
        int r = ms ? io_wait(s->fd, POLLIN, ms) : 0;
        if (r < 0)
                return r;
        ssize_t n = read(s->fd, buf, sizeof buf);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0) {
                s->eof = true;
                BIO_set_mem_eof_return(s->rbio, 0);
                return 0;
        }
        return BIO_write(s->rbio, buf, (int)n) == (int)n ? 0 : -ENOMEM;
}

/* After an SSL call on s returned ret: waits for what it wants. */
static int step(Side *s, int ret, int ms) {
        switch (SSL_get_error(s->ssl, ret)) {
        case SSL_ERROR_WANT_READ:
                return s->eof ? -EPIPE : pump(s, ms);
        case SSL_ERROR_WANT_WRITE:
                return io_wait(s->fd, POLLOUT, ms);
        case SSL_ERROR_ZERO_RETURN:
                return -EPIPE;
        default:
                return -EPROTO;
        }
}

static int side_write(Side *s, const void *p, size_t len) {
        while (len) {
                int n = SSL_write(s->ssl, p, (int)MIN(len, (size_t)INT_MAX));
                if (n > 0) {
                        p = (const char *)p + n;
                        len -= (size_t)n;
                        continue;
                }
                int r = step(s, n, TLS_IDLE_TIMEOUT_MS);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Moves what s has decrypted now to the other side; -EPIPE once s ended. */
static int drain(Side *from, Side *to, char *buf) {
        for (;;) {
                int n = SSL_read(from->ssl, buf, TLS_BUF);
                if (n > 0) {
                        if (side_write(to, buf, (size_t)n) < 0)
                                return -EPIPE;
                        continue;
                }
                int e = SSL_get_error(from->ssl, n);
                if (e == SSL_ERROR_WANT_READ && !from->eof)
                        return 0;
                if (e == SSL_ERROR_WANT_WRITE && io_wait(from->fd, POLLOUT, TLS_IDLE_TIMEOUT_MS) == 0)
                        continue;
                return -EPIPE;
        }
}

/* ---- the connection ----------------------------------------------------------- */

static void report_denial(TlsJob *j, const char *reason) {
        char h[256], why[400];
        snprintf(h, sizeof h, "%s", j->host);
        snprintf(why, sizeof why, "%s", reason);
        _cleanup_free_ char *s = proxy_ctl_encode(&(ProxyCtlMsg) { .op = PROXY_CTL_DENIAL, .ws = j->ws,
                                                                  .time_us = now_us(), .host = h, .port = j->port,
                                                                  .reason = why });
        if (s)
                (void)j->send(s);
}

/* An answer of the proxy's own, inside the jail's TLS. */
_printf_(4, 5) static void answer(Side *c, int status, const char *title, const char *fmt, ...) {
        char body[1024], msg[1400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(body, sizeof body, fmt, ap);
        va_end(ap);
        (void)side_write(c, msg, head_answer(msg, sizeof msg, status, title, body));
        (void)SSL_shutdown(c->ssl);
}

/* Reads the request head inside the jail's TLS: *ret_len bytes read in
 * buf (VS_HTTP_HEAD_MAX), the head ending at *ret_end. */
static int read_head(Side *c, char *buf, size_t *ret_len, size_t *ret_end) {
        size_t len = 0;
        for (;;) {
                int64_t end = http_head_end(buf, len);
                if (end > 0) {
                        *ret_len = len;
                        *ret_end = (size_t)end;
                        return 0;
                }
                if (end < 0 || len == VS_HTTP_HEAD_MAX)
                        return -E2BIG;
                int n = SSL_read(c->ssl, buf + len, (int)(VS_HTTP_HEAD_MAX - len));
                if (n > 0) {
                        len += (size_t)n;
                        continue;
                }
                int r = step(c, n, TLS_HEAD_TIMEOUT_MS);
                if (r < 0)
                        return r;
        }
}

/* The jail's head for this host, or an answer and an error; 1 when the
 * body must be read whole first (*need bytes after the head). */
static int decide(TlsJob *j, Side *c, const char *buf, size_t len, size_t end, size_t *need, StrBuf *out) {
        const char *sp = memchr(buf, ' ', end);
        if (!sp || sp + 1 >= buf + end || sp[1] != '/') {
                answer(c, 400, "Bad Request", "vectora-sandbox: inside TLS a request names its path (GET /path HTTP/1.1)");
                return -EINVAL;
        }
        /* The head in the form the parser reads (the target in full), for
         * its checks, its hop-by-hop headers dropped, Connection: close. */
        _cleanup_free_ char *full = NULL;
        bool v6 = strchr(j->host, ':') != NULL;
        if (asprintf(&full, "%.*s http://%s%s%s:%u%.*s", (int)(sp - buf), buf, v6 ? "[" : "", j->host, v6 ? "]" : "",
                     (unsigned)j->port, (int)(end - (size_t)(sp + 1 - buf)), sp + 1) < 0)
                return -ENOMEM;
        _cleanup_(http_head_done) VsHttpHead h = {};
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = http_head_parse(full, strlen(full), &h, &err);
        if (r < 0) {
                answer(c, 400, "Bad Request", "vectora-sandbox: %s", err ? vs_error_message(err) : strerror(-r));
                return r;
        }
        /* The Host header must name the host the CONNECT did (and the
         * leaf and the upstream check are for): a name fronted by the same
         * address would otherwise get the value (a CDN routes by it). */
        if (!head_host_ok(buf, end, j->host, j->port, 443)) {
                char why[400];
                snprintf(why, sizeof why, "the request's Host header is not %s, the host the CONNECT named", j->host);
                report_denial(j, why);
                answer(c, 403, "Forbidden", "vectora-sandbox: %s port %u is refused: %s.", j->host, (unsigned)j->port, why);
                return -EPERM;
        }
        char why[240];
        if (head_refused(j->secrets, j->n, buf, end, j->host, j->port, 443, why, sizeof why)) {
                report_denial(j, why);
                answer(c, 403, "Forbidden", "vectora-sandbox: %s port %u is refused: %s (vectora-sandbox secret list).",
                       j->host, (unsigned)j->port, why);
                return -EPERM;
        }
        char rule_why[600];
        int b = 0;
        if (j->http && (http_rules_headers_refused(h.forward_headers, rule_why, sizeof rule_why) ||
                        !http_rules_check(j->http, h.method, h.path, rule_why, sizeof rule_why) ||
                        (b = http_rules_body(h.forward_headers, buf + end, len - end, VS_HTTP_HEAD_MAX - end, need,
                                             rule_why, sizeof rule_why)) < 0)) {
                report_denial(j, rule_why);
                answer(c, 403, "Forbidden", "vectora-sandbox: %s.", rule_why);
                return -EPERM;
        }
        if (b > 0)
                return 1;
        const HeadRewrite x = { .send = j->send, .ws = j->ws, .secrets = j->secrets, .n = j->n };
        if ((r = head_rewrite(&x, &h, out)) < 0 || (r = strbuf_append(out, buf + end, len - end)) < 0)
                return r;
        return 0;
}

static bool is_ip(const char *host) {
        unsigned char a[16];
        return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* TLS to the host, checked against the system CAs and its name. */
static int upstream_open(TlsJob *j, Side *u, Side *c) {
        int r = side_init(u, upstream_ctx, j->ufd, NULL, 0);
        if (r < 0)
                return r;
        bool ip = is_ip(j->host);
        if (SSL_set_alpn_protos(u->ssl, alpn_http11, sizeof alpn_http11 - 1) != 0 ||
            (ip ? !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(u->ssl), j->host)
                : !SSL_set1_host(u->ssl, j->host) || !SSL_set_tlsext_host_name(u->ssl, j->host)))
                return -ENOMEM;
        for (;;) {
                int k = SSL_connect(u->ssl);
                if (k == 1)
                        return 0;
                if ((r = step(u, k, TLS_HEAD_TIMEOUT_MS)) < 0)
                        break;
        }
        char why[400];
        long v = SSL_get_verify_result(u->ssl);
        unsigned long e = ERR_peek_error();
        if (v != X509_V_OK)
                snprintf(why, sizeof why, "its TLS certificate does not verify against this host's CAs: %s",
                         X509_verify_cert_error_string(v));
        else
                snprintf(why, sizeof why, "no TLS with it: %s",
                         e ? ERR_reason_error_string(e) : r == -ETIMEDOUT ? "timed out" : "the connection closed");
        ERR_clear_error();
        report_denial(j, why);
        answer(c, 502, "Bad Gateway", "vectora-sandbox: %s port %u: %s", j->host, (unsigned)j->port, why);
        return -EPROTO;
}

static void relay(Side *c, Side *u) {
        char buf[TLS_BUF];
        bool c_done = false;
        for (;;) {
                if (!c_done && drain(c, u, buf) < 0)
                        c_done = true;
                /* The host's answer ends the connection (Connection: close). */
                if (drain(u, c, buf) < 0)
                        break;
                struct pollfd p[2] = { { .fd = u->fd, .events = POLLIN }, { .fd = c_done ? -1 : c->fd, .events = POLLIN } };
                int r = poll(p, 2, TLS_IDLE_TIMEOUT_MS);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0 || (p[0].revents & POLLNVAL) || (p[1].revents & POLLNVAL))
                        break;
                if (p[0].revents && pump(u, 0) < 0)
                        break;
                if (p[1].revents && pump(c, 0) < 0)
                        c_done = true;
        }
        (void)SSL_shutdown(c->ssl);
}

static void serve(TlsJob *j) {
        Side c = {}, u = {};
        char *buf = malloc(VS_HTTP_HEAD_MAX);
        StrBuf out = {};
        size_t len = 0, end = 0;
        if (!buf || side_init(&c, j->leaf, j->cfd, j->hello, j->hello_len) < 0)
                goto done;
        for (;;) {
                int k = SSL_accept(c.ssl);
                if (k == 1)
                        break;
                if (step(&c, k, TLS_HEAD_TIMEOUT_MS) < 0)
                        goto done; /* the jail did not trust the leaf, or went */
        }
        if (read_head(&c, buf, &len, &end) < 0) {
                answer(&c, 400, "Bad Request", "vectora-sandbox: no complete HTTP/1.1 request head (at most %d bytes)",
                       VS_HTTP_HEAD_MAX);
                goto done;
        }
        size_t need = 0;
        int r;
        /* A form body the rules look into: read whole (it fits in buf),
         * then decided again. */
        while ((r = decide(j, &c, buf, len, end, &need, &out)) > 0) {
                while (len < end + need) {
                        int n = SSL_read(c.ssl, buf + len, (int)(end + need - len));
                        if (n > 0)
                                len += (size_t)n;
                        else if (step(&c, n, TLS_HEAD_TIMEOUT_MS) < 0)
                                goto done;
                }
        }
        if (r < 0 || upstream_open(j, &u, &c) < 0)
                goto done;
        if (side_write(&u, out.data, out.len) == 0)
                relay(&c, &u);
done:
        if (out.data)
                explicit_bzero(out.data, out.len);
        strbuf_done(&out);
        if (buf)
                explicit_bzero(buf, len);
        free(buf);
        side_done(&u);
        side_done(&c);
        ERR_clear_error();
}

static void *job_run(void *arg) {
        TlsJob *j = arg;
        serve(j);
        pthread_mutex_lock(&j->mu);
        if (j->done)
                uv_async_send(j->done);
        pthread_mutex_unlock(&j->mu);
        job_unref(j);
        return NULL;
}

int tls_intercept_start(const TlsJobArgs *a, TlsJob **ret) {
        TlsJob *j = calloc(1, sizeof *j);
        if (!j) {
                close(a->client_fd);
                close(a->upstream_fd);
                return -ENOMEM;
        }
        pthread_mutex_init(&j->mu, NULL);
        j->refs = 1;
        j->cfd = a->client_fd;
        j->ufd = a->upstream_fd;
        j->port = a->port;
        j->send = a->send;
        j->ws = a->ws;
        j->done = a->done;
        SSL_CTX_up_ref(a->leaf);
        j->leaf = a->leaf;
        j->http = http_rules_ref(a->http);
        int r = 0;
        if (!(j->host = strdup(a->host)) || !(j->hello = malloc(a->hello_len + 1)) ||
            !(j->secrets = calloc(a->n_secrets + 1, sizeof *j->secrets)))
                r = -ENOMEM;
        if (r >= 0)
                memcpy(j->hello, a->hello, a->hello_len);
        j->hello_len = a->hello_len;
        for (size_t i = 0; r >= 0 && i < a->n_secrets; i++) {
                j->n++; /* a half-made copy is freed with the rest */
                r = secret_copy(&a->secrets[i], &j->secrets[i]);
        }
        pthread_attr_t at;
        pthread_t t;
        if (r >= 0) {
                pthread_attr_init(&at);
                pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
                /* Its buffers are on the heap or 16 KiB; OpenSSL needs far
                 * less than the 8 MiB default, and up to PROXY_MAX_CONNS
                 * threads a workspace would reserve that much each. */
                pthread_attr_setstacksize(&at, TLS_THREAD_STACK);
                j->refs = 2;
                r = -pthread_create(&t, &at, job_run, j);
                pthread_attr_destroy(&at);
                if (r < 0)
                        j->refs = 1;
        }
        if (r < 0) {
                j->done = NULL;
                job_unref(j);
                return r;
        }
        *ret = j;
        return 0;
}

void tls_intercept_release(TlsJob *j) {
        if (!j)
                return;
        pthread_mutex_lock(&j->mu);
        j->done = NULL;
        (void)shutdown(j->cfd, SHUT_RDWR);
        (void)shutdown(j->ufd, SHUT_RDWR);
        pthread_mutex_unlock(&j->mu);
        job_unref(j);
}
