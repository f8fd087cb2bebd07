/* SPDX-License-Identifier: MIT */
#include "proxy-parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "net-policy.h"
#include "strbuf.h"

/* ---- HTTP request head ------------------------------------------------- */

int64_t http_head_end(const char *buf, size_t len) {
        size_t n = len < VS_HTTP_HEAD_MAX ? len : VS_HTTP_HEAD_MAX;
        for (size_t i = 3; i < n; i++)
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
                        return (int64_t)(i + 1);
        return len >= VS_HTTP_HEAD_MAX ? -E2BIG : 0;
}

void http_head_done(VsHttpHead *h) {
        if (!h)
                return;
        free(h->method);
        free(h->host);
        free(h->path);
        free(h->version);
        free(h->forward_headers);
        *h = (VsHttpHead) { 0 };
}

/* RFC 9110 token characters, for the method and header names. */
static bool tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool ieq(const char *a, size_t la, const char *b) {
        if (la != strlen(b))
                return false;
        for (size_t i = 0; i < la; i++) {
                char x = a[i], y = b[i];
                if (x >= 'A' && x <= 'Z')
                        x = (char)(x - 'A' + 'a');
                if (x != y)
                        return false;
        }
        return true;
}

/* "host:port" or "[v6]:port" (port required when need_port) into a
 * normalized host and a port. */
static int split_authority(const char *a, size_t n, bool need_port, uint16_t default_port, char **ret_host,
                           uint16_t *ret_port) {
        if (n == 0 || n > VS_NET_HOST_MAX + 8 || memchr(a, '@', n))
                return -EINVAL;
        const char *colon = NULL;
        if (a[0] == '[') {
                const char *close = memchr(a, ']', n);
                if (!close)
                        return -EINVAL;
                if ((size_t)(close - a) + 1 < n) {
                        if (close[1] != ':')
                                return -EINVAL;
                        colon = close + 1;
                }
        } else {
                colon = memchr(a, ':', n);
                if (colon && memchr(colon + 1, ':', n - (size_t)(colon + 1 - a)))
                        return -EINVAL;
        }
        size_t hl = colon ? (size_t)(colon - a) : n;
        uint16_t port = default_port;
        if (colon) {
                const char *p = colon + 1;
                size_t pl = n - (size_t)(p - a);
                unsigned long v = 0;
                if (pl == 0 || pl > 5)
                        return -EINVAL;
                for (size_t i = 0; i < pl; i++) {
                        if (p[i] < '0' || p[i] > '9')
                                return -EINVAL;
                        v = v * 10 + (unsigned long)(p[i] - '0');
                }
                if (v < 1 || v > 65535)
                        return -EINVAL;
                port = (uint16_t)v;
        } else if (need_port)
                return -EINVAL;
        char *h = strndup(a, hl);
        if (!h)
                return -ENOMEM;
        if (net_host_normalize(h) < 0) {
                free(h);
                return -EINVAL;
        }
        *ret_host = h;
        *ret_port = port;
        return 0;
}

/* Headers the proxy does not pass on: hop-by-hop ones (RFC 9110 7.6.1),
 * and what was meant for the proxy. Connection: close is added instead, so
 * that one client connection carries one request to one checked host. */
static bool drop_header(const char *name, size_t n) {
        static const char *const drop[] = { "connection", "keep-alive", "te", "upgrade" };
        if (n >= 6 && ieq(name, 6, "proxy-")) /* Proxy-Connection, Proxy-Authorization, ... */
                return true;
        for (size_t i = 0; i < ELEMENTSOF(drop); i++)
                if (ieq(name, n, drop[i]))
                        return true;
        return false;
}

int http_head_parse(const char *buf, size_t len, VsHttpHead *ret, VsError **err) {
        if (len < 4 || len > VS_HTTP_HEAD_MAX || memcmp(buf + len - 4, "\r\n\r\n", 4) != 0)
                return vs_error_set(err, -EINVAL, "incomplete request head");
        if (memchr(buf, 0, len))
                return vs_error_set(err, -EINVAL, "NUL byte in the request head");

        /* Request line: METHOD SP TARGET SP VERSION CRLF */
        const char *eol = memchr(buf, '\r', len);
        if (!eol || eol[1] != '\n')
                return vs_error_set(err, -EINVAL, "the request line must end with CRLF");
        const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
        if (!sp1 || sp1 == buf)
                return vs_error_set(err, -EINVAL, "malformed request line");
        const char *target = sp1 + 1;
        const char *sp2 = memchr(target, ' ', (size_t)(eol - target));
        if (!sp2 || sp2 == target)
                return vs_error_set(err, -EINVAL, "malformed request line");
        const char *version = sp2 + 1;
        size_t vl = (size_t)(eol - version);
        if (!((vl == 8 && memcmp(version, "HTTP/1.1", 8) == 0) || (vl == 8 && memcmp(version, "HTTP/1.0", 8) == 0)))
                return vs_error_set(err, -EINVAL, "unsupported HTTP version");
        for (const char *c = buf; c < sp1; c++)
                if (!tchar(*c))
                        return vs_error_set(err, -EINVAL, "malformed method");
        size_t tl = (size_t)(sp2 - target);
        for (size_t i = 0; i < tl; i++)
                if ((unsigned char)target[i] <= ' ' || (unsigned char)target[i] >= 0x7f)
                        return vs_error_set(err, -EINVAL, "malformed request target");

        _cleanup_(http_head_done) VsHttpHead h = { 0 };
        h.head_len = len;
        if (!(h.method = strndup(buf, (size_t)(sp1 - buf))) || !(h.version = strndup(version, vl)))
                return -ENOMEM;
        h.connect = streq(h.method, "CONNECT");
        int r;
        if (h.connect) {
                r = split_authority(target, tl, true, 0, &h.host, &h.port);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return vs_error_set(err, -EINVAL, "CONNECT needs host:port");
        } else {
                static const char scheme[] = "http://";
                if (tl < sizeof scheme - 1 || !ieq(target, sizeof scheme - 1, scheme))
                        return vs_error_set(err, -EPROTONOSUPPORT,
                                            "a proxy request names its target in full (http://host/path); https goes through CONNECT");
                const char *auth = target + sizeof scheme - 1;
                const char *end = target + tl;
                const char *slash = auth;
                while (slash < end && *slash != '/' && *slash != '?')
                        slash++;
                r = split_authority(auth, (size_t)(slash - auth), false, 80, &h.host, &h.port);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return vs_error_set(err, -EINVAL, "malformed host in the request target");
                if (slash == end)
                        h.path = strdup("/");
                else if (*slash == '?')
                        r = asprintf(&h.path, "/%.*s", (int)(end - slash), slash) < 0 ? -ENOMEM : 0;
                else
                        h.path = strndup(slash, (size_t)(end - slash));
                if (r < 0 || !h.path)
                        return -ENOMEM;
        }

        /* Header lines: NAME ":" OWS VALUE CRLF; no obsolete line folding. */
        _cleanup_strbuf_ StrBuf fwd = { 0 };
        const char *p = eol + 2, *end = buf + len - 2;
        while (p < end) {
                const char *le = memchr(p, '\r', (size_t)(end - p) + 1);
                if (!le || le[1] != '\n')
                        return vs_error_set(err, -EINVAL, "a header line must end with CRLF");
                if (*p == ' ' || *p == '\t')
                        return vs_error_set(err, -EINVAL, "folded header lines are refused");
                const char *colon = memchr(p, ':', (size_t)(le - p));
                if (!colon || colon == p)
                        return vs_error_set(err, -EINVAL, "malformed header line");
                for (const char *c = p; c < colon; c++)
                        if (!tchar(*c))
                                return vs_error_set(err, -EINVAL, "malformed header name");
                for (const char *c = colon + 1; c < le; c++)
                        if ((unsigned char)*c < ' ' && *c != '\t')
                                return vs_error_set(err, -EINVAL, "control character in a header value");
                if (!h.connect && !drop_header(p, (size_t)(colon - p)) &&
                    (r = strbuf_append(&fwd, p, (size_t)(le + 2 - p))) < 0)
                        return r;
                p = le + 2;
        }
        if (!h.connect) {
                if ((r = strbuf_append(&fwd, "Connection: close\r\n", 19)) < 0)
                        return r;
                if (!(h.forward_headers = strndup(fwd.data, fwd.len)))
                        return -ENOMEM;
        }
        *ret = h;
        h = (VsHttpHead) { 0 };
        return 0;
}

/* ---- TLS ClientHello ---------------------------------------------------- */

typedef struct Reader {
        const uint8_t *p;
        size_t n;
} Reader;

static bool take(Reader *r, size_t k, const uint8_t **ret) {
        if (r->n < k)
                return false;
        if (ret)
                *ret = r->p;
        r->p += k;
        r->n -= k;
        return true;
}
static bool u8(Reader *r, size_t *v) {
        const uint8_t *b;
        if (!take(r, 1, &b))
                return false;
        *v = b[0];
        return true;
}
static bool u16(Reader *r, size_t *v) {
        const uint8_t *b;
        if (!take(r, 2, &b))
                return false;
        *v = (size_t)b[0] << 8 | b[1];
        return true;
}
static bool u24(Reader *r, size_t *v) {
        const uint8_t *b;
        if (!take(r, 3, &b))
                return false;
        *v = (size_t)b[0] << 16 | (size_t)b[1] << 8 | b[2];
        return true;
}
static bool vec(Reader *r, size_t len_bytes, Reader *ret) {
        size_t l;
        if (!(len_bytes == 1 ? u8(r, &l) : u16(r, &l)))
                return false;
        ret->p = r->p;
        ret->n = l;
        return take(r, l, NULL);
}

/* The server_name extension body: a list with one host_name entry. */
static int parse_sni(Reader ext, char **ret, VsError **err) {
        Reader list;
        if (!vec(&ext, 2, &list) || ext.n != 0)
                return vs_error_set(err, -EINVAL, "malformed server_name extension");
        while (list.n) {
                size_t type;
                Reader name;
                if (!u8(&list, &type) || !vec(&list, 2, &name))
                        return vs_error_set(err, -EINVAL, "malformed server_name entry");
                if (type != 0)
                        continue;
                if (name.n == 0 || name.n > VS_NET_HOST_MAX || memchr(name.p, 0, name.n))
                        return vs_error_set(err, -EINVAL, "malformed server name");
                char *s = strndup((const char *)name.p, name.n);
                if (!s)
                        return -ENOMEM;
                if (net_host_normalize(s) < 0) {
                        free(s);
                        return vs_error_set(err, -EINVAL, "the server name is not a host name");
                }
                *ret = s;
                return 1;
        }
        return 0;
}

int tls_client_hello_sni(const uint8_t *buf, size_t len, char **ret_sni, VsError **err) {
        /* Gather the handshake bytes from consecutive handshake records
         * (a ClientHello may be split across records). */
        uint8_t *hs = NULL;
        char *sni = NULL;
        size_t hs_len = 0;
        size_t off = 0;
        int r = 0;
        if (len >= 1 && buf[0] != 22)
                return -EPROTO;
        hs = malloc(VS_HTTP_HEAD_MAX);
        if (!hs)
                return -ENOMEM;
        for (;;) {
                if (len - off < 5) {
                        r = 0;
                        goto out;
                }
                const uint8_t *rec = buf + off;
                size_t rl = (size_t)rec[3] << 8 | rec[4];
                if (rec[0] != 22 || rec[1] != 3 || rl == 0) {
                        r = vs_error_set(err, -EINVAL, "not a TLS handshake record");
                        goto out;
                }
                if (hs_len + rl > VS_HTTP_HEAD_MAX) {
                        r = vs_error_set(err, -EINVAL, "the ClientHello is larger than %d bytes", VS_HTTP_HEAD_MAX);
                        goto out;
                }
                if (len - off - 5 < rl) {
                        r = 0;
                        goto out;
                }
                memcpy(hs + hs_len, rec + 5, rl);
                hs_len += rl;
                off += 5 + rl;
                if (hs_len >= 4) {
                        size_t ml = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
                        if (hs[0] != 1) {
                                r = vs_error_set(err, -EINVAL, "the first handshake message is not a ClientHello");
                                goto out;
                        }
                        if (ml + 4 > VS_HTTP_HEAD_MAX) {
                                r = vs_error_set(err, -EINVAL, "the ClientHello is larger than %d bytes",
                                                 VS_HTTP_HEAD_MAX);
                                goto out;
                        }
                        if (hs_len >= ml + 4)
                                break;
                }
        }

        Reader m = { hs, hs_len }, body, skip;
        size_t type, blen, version;
        if (!u8(&m, &type) || !u24(&m, &blen) || !take(&m, blen, &body.p)) {
                r = vs_error_set(err, -EINVAL, "malformed ClientHello");
                goto out;
        }
        body.n = blen;
        /* legacy_version, random, session_id, cipher_suites, compression */
        if (!u16(&body, &version) || !take(&body, 32, NULL) || !vec(&body, 1, &skip) || !vec(&body, 2, &skip) ||
            !vec(&body, 1, &skip)) {
                r = vs_error_set(err, -EINVAL, "malformed ClientHello");
                goto out;
        }
        if (body.n == 0) {
                *ret_sni = NULL; /* no extensions at all */
                r = 1;
                goto out;
        }
        Reader exts;
        if (!vec(&body, 2, &exts) || body.n != 0) {
                r = vs_error_set(err, -EINVAL, "malformed ClientHello extensions");
                goto out;
        }
        bool seen = false;
        while (exts.n) {
                size_t et;
                Reader ext;
                if (!u16(&exts, &et) || !vec(&exts, 2, &ext)) {
                        r = vs_error_set(err, -EINVAL, "malformed ClientHello extension");
                        goto out;
                }
                if (et != 0)
                        continue;
                /* Two server_name extensions: which one would the server
                 * believe? Refuse rather than guess. */
                if (seen) {
                        r = vs_error_set(err, -EINVAL, "two server_name extensions");
                        goto out;
                }
                seen = true;
                int k = parse_sni(ext, &sni, err);
                if (k < 0) {
                        r = k;
                        goto out;
                }
        }
        *ret_sni = TAKE_PTR(sni);
        r = 1;
out:
        free(sni);
        free(hs);
        return r;
}

/* A byte a server skips before a request line or splits its words on:
 * Python's http.server splits on any whitespace of its latin-1 reading
 * (vertical tab, form feed, 0x1c-0x1f, 0x85, 0xa0). */
static bool line_blank(unsigned char c) {
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0;
}

/* A method's first byte: an RFC 9110 token character. */
static bool token_char(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The first line is not checked for bytes a request line should not
 * hold: servers take raw UTF-8 and other bytes in the target, so only a
 * first byte that cannot begin a method says "another protocol" at once. */
int http_request_like(const char *buf, size_t len, bool full) {
        size_t i = 0;
        while (i < len && line_blank((unsigned char)buf[i]))
                i++;
        if (i < len && !token_char((unsigned char)buf[i]))
                return 0;
        size_t start = i;
        while (i < len && buf[i] != '\n')
                i++;
        if (i == len && !full)
                return -EAGAIN;
        size_t n = i - start;
        const char *line = buf + start;
        if (n >= 4 && strncasecmp(line, "GET", 3) == 0 && line_blank((unsigned char)line[3]))
                return 1;
        for (size_t k = 0; k + 5 <= n; k++)
                if (strncasecmp(line + k, "HTTP/", 5) == 0)
                        return 1;
        return i == len ? 1 : 0;
}
