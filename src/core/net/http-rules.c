/* SPDX-License-Identifier: MIT */
#include "http-rules.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "glob.h"
#include "net-policy.h"
#include "macro.h"
#include "strv.h"
#include "utf8.h"

struct HttpRules {
        atomic_int refs;
        char *host;
        char *where;
        size_t n;
        char **written; /* the entries as given */
        char **methods;
        VsGlob **globs; /* NULL for "/" alone, which glob.h refuses */
};

static bool tchar(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Splits "METHOD /glob": the method's length, the glob's start. */
static int split(const char *entry, size_t *mlen, const char **glob, VsError **err) {
        size_t m = 0;
        while (tchar(entry[m]))
                m++;
        if (m == 0 || m > 32 || entry[m] != ' ')
                return vs_error_set(err, -EINVAL,
                                    "\"%s\" is not \"METHOD /path\": the method (GET, POST, ...) in capitals, one space, then the path glob",
                                    entry);
        const char *g = entry + m + 1;
        if (g[0] != '/')
                return vs_error_set(err, -EINVAL, "\"%s\": the path glob must start with \"/\"", entry);
        for (const char *p = g; *p; p++) {
                if (*p == '?' || *p == '#' || *p == '%' || *p == '\\' || (unsigned char)*p <= 0x20 || *p == 0x7f)
                        return vs_error_set(err, -EINVAL,
                                            "\"%s\": the path glob holds '%s' at column %zu; a rule matches the decoded path without its query, so write it plain",
                                            entry, *p == ' ' ? "a space" : (char[]) { *p, 0 }, (size_t)(p - entry) + 1);
        }
        /* A dot segment never reaches the matcher (http_path_normalize). */
        for (const char *s = g; s; s = strchr(s + 1, '/')) {
                const char *e = strchrnul(s + 1, '/');
                size_t n = (size_t)(e - s - 1);
                if ((n == 1 && s[1] == '.') || (n == 2 && s[1] == '.' && s[2] == '.'))
                        return vs_error_set(err, -EINVAL, "\"%s\": the path glob has a \".\" or \"..\" segment, which no request may have",
                                            entry);
        }
        *mlen = m;
        *glob = g;
        return 0;
}

static int compile(const char *g, VsGlob **ret, VsError **err) {
        *ret = NULL;
        if (streq(g, "/"))
                return 0;
        return glob_compile(g, ret, err);
}

int http_allow_check(const char *entry, VsError **err) {
        size_t m;
        const char *g;
        if (strlen(entry) > HTTP_RULE_MAX)
                return vs_error_set(err, -EINVAL, "longer than %d bytes", HTTP_RULE_MAX);
        int r = split(entry, &m, &g, err);
        if (r < 0)
                return r;
        _cleanup_(glob_freep) VsGlob *gl = NULL;
        _cleanup_(vs_error_freep) VsError *gerr = NULL;
        if ((r = compile(g, &gl, &gerr)) < 0)
                return r == -ENOMEM ? r : vs_error_set(err, r, "\"%s\": the path glob: %s", entry, vs_error_message(gerr));
        return 0;
}

static int hexval(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int http_path_normalize(const char *target, char **ret, const char **why) {
        size_t n = strcspn(target, "?");
        if (n == 0 || target[0] != '/') {
                *why = "the request target is not a path starting with \"/\"";
                return -EPERM;
        }
        /* A request target has no fragment: a host takes a '#' as part of
         * the path, and the dot segments after it with it. */
        if (strchr(target, '#')) {
                *why = "the request target holds a '#', which a host may read as part of the path";
                return -EPERM;
        }
        _cleanup_free_ char *out = malloc(n + 1);
        if (!out)
                return -ENOMEM;
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)target[i];
                if (c == '%') {
                        int hi = i + 2 < n ? hexval(target[i + 1]) : -1;
                        int lo = hi >= 0 ? hexval(target[i + 2]) : -1;
                        if (hi < 0 || lo < 0) {
                                *why = "the path holds a '%' that is not %XX";
                                return -EPERM;
                        }
                        c = (unsigned char)(hi * 16 + lo);
                        i += 2;
                        if (c == '/' || c == '\\') {
                                *why = "the path holds an encoded '/' or '\\' (%2F, %5C), which a host may read as a separator";
                                return -EPERM;
                        }
                        /* "%252e" is "%2e" decoded: ".", to a host that decodes twice. */
                        if (c == '%' && i + 2 < n && hexval(target[i + 1]) >= 0 && hexval(target[i + 2]) >= 0) {
                                *why = "the path holds an encoded escape (%25 and two hex digits), which a host that "
                                       "decodes twice reads as another character";
                                return -EPERM;
                        }
                }
                if (c < 0x20 || c == 0x7f || c == '\\') {
                        *why = "the path holds a '\\', a NUL or a control byte";
                        return -EPERM;
                }
                out[o++] = (char)c;
        }
        out[o] = 0;
        /* Overlong forms, surrogates, past U+10FFFF: not UTF-8, and a
         * lenient decoder on the host reads "%c0%ae" as the '.' it hides. */
        if (!utf8_valid(out, o)) {
                *why = "the path is not UTF-8 once decoded (an overlong form such as %c0%ae hides a '.' or a '/')";
                return -EPERM;
        }
        /* glob.h skips empty components; a host need not. */
        if (strstr(out, "//")) {
                *why = "the path has an empty segment (\"//\"), which the host may read otherwise than the rule";
                return -EPERM;
        }
        for (const char *s = out; s; s = strchr(s + 1, '/')) {
                /* "..;x" too: some servers drop a segment's parameters. */
                const char *e = strchrnul(s + 1, '/'), *semi = memchr(s + 1, ';', (size_t)(e - s - 1));
                size_t k = (size_t)((semi ? semi : e) - s - 1), i = 0, dots = 0;
                /* "...", "..%20": a server that trims a name's trailing
                 * dots and blanks (Windows) reads them as "..". */
                for (; i < k && (s[1 + i] == '.' || s[1 + i] == ' '); i++)
                        dots += s[1 + i] == '.';
                if (k > 0 && i == k && dots > 0) {
                        *why = "the path has a \".\" or \"..\" segment (as written, percent-encoded, or with more dots or blanks a "
                               "host may trim), which could leave what the rule allows";
                        return -EPERM;
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* Whether the parameter name p[0..n) (as sent: percent-encoded, '+' for
 * a blank) is "_method" to some framework: decoded, any case, blanks
 * before it dropped and '.' or a blank read as '_' (PHP), what follows a
 * '[' or a NUL dropped ("_method[]"). */
static bool name_is_override(const char *p, size_t n, bool plus) {
        char name[16];
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                char c = p[i];
                if (c == '+' && plus)
                        c = ' ';
                else if (c == '%' && i + 2 < n && hexval(p[i + 1]) >= 0 && hexval(p[i + 2]) >= 0) {
                        c = (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
                        i += 2;
                }
                if (c == '\0' || c == '[')
                        break;
                if (o == 0 && (c == ' ' || c == '\t'))
                        continue;
                if (o == sizeof name - 1)
                        return false;
                name[o++] = c == ' ' || c == '.' ? '_' : c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
        }
        return o == 7 && memcmp(name, "_method", 7) == 0;
}

/* Whether "a=1&b=2" params (a query, a form body; ';' separates too, as
 * some servers take it) hold a _method. */
static bool params_override(const char *p, size_t n) {
        for (size_t i = 0; i < n;) {
                size_t e = i;
                while (e < n && p[e] != '&' && p[e] != ';')
                        e++;
                const char *eq = memchr(p + i, '=', e - i);
                if (name_is_override(p + i, eq ? (size_t)(eq - p - i) : e - i, true))
                        return true;
                i = e + 1;
        }
        return false;
}

HttpRules *http_rules_ref(HttpRules *r) {
        if (r)
                atomic_fetch_add(&r->refs, 1);
        return r;
}

void http_rules_unref(HttpRules *r) {
        if (!r || atomic_fetch_sub(&r->refs, 1) > 1)
                return;
        for (size_t i = 0; i < r->n; i++) {
                free(r->methods[i]);
                glob_free(r->globs[i]);
        }
        free(r->methods);
        free(r->globs);
        strv_free(r->written);
        free(r->host);
        free(r->where);
        free(r);
}

const char *http_rules_host(const HttpRules *r) {
        return r->host;
}

int http_rules_new(const char *host, const char *where, char *const *allow, size_t n, HttpRules **ret,
                   VsError **err) {
        if (n > HTTP_RULES_MAX_ALLOW)
                return vs_error_set(err, -EINVAL, "more than %d allow entries", HTTP_RULES_MAX_ALLOW);
        HttpRules *r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        atomic_init(&r->refs, 1);
        r->host = strdup(host);
        r->where = strdup(where);
        r->written = calloc(n + 1, sizeof(char *));
        r->methods = calloc(n + 1, sizeof(char *));
        r->globs = calloc(n + 1, sizeof(VsGlob *));
        int k = r->host && r->where && r->written && r->methods && r->globs ? 0 : -ENOMEM;
        for (size_t i = 0; i < n && k >= 0; i++) {
                size_t m;
                const char *g;
                _cleanup_(vs_error_freep) VsError *gerr = NULL;
                if ((k = http_allow_check(allow[i], err)) < 0 || (k = split(allow[i], &m, &g, err)) < 0)
                        break;
                r->n++;
                if (!(r->written[i] = strdup(allow[i])) || !(r->methods[i] = strndup(allow[i], m)))
                        k = -ENOMEM;
                else if ((k = compile(g, &r->globs[i], &gerr)) < 0 && k != -ENOMEM)
                        k = vs_error_set(err, k, "%s", vs_error_message(gerr));
        }
        if (k < 0) {
                http_rules_unref(r);
                return k;
        }
        *ret = r;
        return 0;
}

HttpRules *http_rules_find(HttpRules *const *set, size_t n, const char *host) {
        for (size_t i = 0; host && i < n; i++)
                if (strcasecmp(set[i]->host, host) == 0)
                        return set[i];
        return NULL;
}

void http_rule_set_clear(HttpRuleSet *s) {
        for (size_t i = 0; i < s->n; i++)
                http_rules_unref(s->items[i]);
        free(TAKE_PTR(s->items));
        s->n = 0;
}

int http_rule_set_add(HttpRuleSet *s, const char *host, const char *where, char *const *allow, size_t n, VsError **err) {
        HttpRules *r = NULL;
        int k = http_rules_new(host, where, allow, n, &r, err);
        if (k < 0)
                return k;
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->items[i]->host, host)) {
                        http_rules_unref(s->items[i]);
                        s->items[i] = r;
                        return 0;
                }
        HttpRules **l = realloc(s->items, (s->n + 1) * sizeof *l);
        if (!l) {
                http_rules_unref(r);
                return -ENOMEM;
        }
        s->items = l;
        s->items[s->n++] = r;
        return 0;
}

bool http_rules_check(const HttpRules *r, const char *method, const char *target, char *why, size_t size) {
        _cleanup_free_ char *path = NULL;
        const char *bad = NULL;
        int k = http_path_normalize(target, &path, &bad);
        const char *q = strchr(target, '?');
        if (k == 0 && q && params_override(q + 1, strlen(q + 1))) {
                k = -EPERM;
                bad = "the query has a _method parameter, which many frameworks (Rails, Laravel, Symfony) run as the "
                      "request's method instead of the one the rule checked";
        }
        if (k == 0) {
                /* glob.h matches paths relative to the root. */
                size_t len = strlen(path);
                bool dir = len > 1 && path[len - 1] == '/';
                _cleanup_free_ char *rel = strndup(path + 1, dir ? len - 2 : len - 1);
                if (!rel)
                        k = -ENOMEM;
                for (size_t i = 0; k == 0 && i < r->n; i++)
                        if (streq(r->methods[i], method) &&
                            (r->globs[i] ? *rel && glob_match(r->globs[i], rel, dir) : streq(path, "/")))
                                return true;
        }
        snprintf(why, size, "%.32s %.120s is refused by [[sandbox.http]] host = \"%s\" (%s): %s", method, target,
                 r->host, r->where,
                 k == -EPERM ? bad : k < 0 ? "out of memory" : "no allow entry matches its method and path");
        return false;
}

bool http_next_host_header(const char **p, const char *end, const char **v, const char **e) {
        for (const char *q = *p; q && q < end;) {
                const char *le = memmem(q, (size_t)(end - q), "\r\n", 2);
                if (!le)
                        break;
                if (le - q >= 5 && strncasecmp(q, "host:", 5) == 0) {
                        const char *b = q + 5, *c = le;
                        while (b < c && (*b == ' ' || *b == '\t'))
                                b++;
                        while (c > b && (c[-1] == ' ' || c[-1] == '\t'))
                                c--;
                        *v = b;
                        *e = c;
                        *p = le + 2;
                        return true;
                }
                q = le + 2;
        }
        return false;
}

bool http_rules_fronted(HttpRules *const *set, size_t n, const char *target_host, const char *headers, char *why,
                        size_t size) {
        const char *p = headers, *end = headers + strlen(headers), *b, *c;
        /* No Host: a server fronting several names serves its default one,
         * which may be a rules host, whatever name the jail connected to. */
        if (n > 0 && !http_next_host_header(&p, end, &b, &c)) {
                snprintf(why, size,
                         "the request has no Host header: a server behind %s that serves several names would take it "
                         "for its default one, which may be a host with [[sandbox.http]] rules", target_host);
                return true;
        }
        p = headers;
        while (http_next_host_header(&p, end, &b, &c)) {
                /* The name without its port: "[v6]:port", "name:port". */
                if (b < c && *b == '[') {
                        const char *rb = memchr(b, ']', (size_t)(c - b));
                        c = rb ? rb + 1 : c;
                } else {
                        const char *colon = memchr(b, ':', (size_t)(c - b));
                        c = colon ? colon : c;
                }
                char name[260];
                snprintf(name, sizeof name, "%.*s", (int)MIN((size_t)(c - b), sizeof name - 1), b);
                /* A Host the proxy does not read as a name ("x@h", "h :80")
                 * a lenient server may still route to a rules host. */
                bool unreadable = net_host_normalize(name) < 0;
                if (unreadable && n > 0) {
                        snprintf(why, size,
                                 "the Host header \"%.255s\" is not a host name the proxy can read, and a server may route "
                                 "it to a host with [[sandbox.http]] rules", name);
                        return true;
                }
                bool other = unreadable || strcasecmp(name, target_host) != 0;
                if (other && (http_rules_find(set, n, name) || http_rules_find(set, n, target_host))) {
                        snprintf(why, size,
                                 "the Host header names %.255s, not %s, the host the request goes to; with [[sandbox.http]] "
                                 "rules for either, one would be reached unchecked", name, target_host);
                        return true;
                }
        }
        return false;
}

/* Headers with which many frameworks run another method or path than the
 * request line's, the one the rules checked. */
static const char *const override_headers[] = { "x-http-method-override", "x-http-method", "x-method-override",
                                                "x-original-url", "x-rewrite-url" };

/* Whether the header name q[0..n) is name (lowercase, '-'), with '_' for
 * '-' too: CGI, PHP and WSGI servers give both the same variable. */
static bool header_is(const char *q, size_t n, const char *name) {
        if (n != strlen(name))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = q[i] == '_' ? '-' : q[i] >= 'A' && q[i] <= 'Z' ? (char)(q[i] - 'A' + 'a') : q[i];
                if (c != name[i])
                        return false;
        }
        return true;
}

static bool all_digits(const char *b, const char *e) {
        if (b == e || e - b > 18)
                return false;
        for (; b < e; b++)
                if (*b < '0' || *b > '9')
                        return false;
        return true;
}

bool http_rules_headers_refused(const char *headers, char *why, size_t size) {
        unsigned lengths = 0, codings = 0;
        bool bad_value = false;
        for (const char *q = headers; q && *q;) {
                const char *le = strstr(q, "\r\n"), *colon = le ? memchr(q, ':', (size_t)(le - q)) : NULL;
                if (!colon)
                        break;
                size_t n = (size_t)(colon - q);
                const char *v = colon + 1, *e = le;
                while (v < e && (*v == ' ' || *v == '\t'))
                        v++;
                while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                        e--;
                for (size_t i = 0; i < ELEMENTSOF(override_headers); i++)
                        if (header_is(q, n, override_headers[i])) {
                                snprintf(why, size,
                                         "the request carries %.*s, with which many servers run another method or path "
                                         "than the one the [[sandbox.http]] rules checked", (int)n, q);
                                return true;
                        }
                if (header_is(q, n, "content-length")) {
                        lengths++;
                        bad_value |= !all_digits(v, e);
                } else if (header_is(q, n, "transfer-encoding")) {
                        codings++;
                        bad_value |= !((size_t)(e - v) == 7 && strncasecmp(v, "chunked", 7) == 0);
                }
                q = le + 2;
        }
        if (bad_value || lengths > 1 || codings > 1 || (lengths && codings)) {
                snprintf(why, size,
                         "the request's body has no single plain length (Content-Length digits alone, or "
                         "Transfer-Encoding: chunked alone, once): a server and a front end before it could end the "
                         "body in different places and run the rest as a request the [[sandbox.http]] rules did not check");
                return true;
        }
        return false;
}

/* The value of the header name in the "Name: value\r\n" lines [p, end),
 * without surrounding blanks, in [*v, *e); how many such headers ('_'
 * for '-' too: gunicorn and CGI servers read Content_Type as the type). */
static unsigned header_value(const char *p, const char *end, const char *name, const char **v, const char **e) {
        unsigned count = 0;
        size_t len = strlen(name);
        for (const char *q = p; q < end;) {
                const char *le = memmem(q, (size_t)(end - q), "\r\n", 2);
                if (!le)
                        break;
                if ((size_t)(le - q) > len && header_is(q, len, name) && q[len] == ':') {
                        const char *b = q + len + 1, *c = le;
                        while (b < c && (*b == ' ' || *b == '\t'))
                                b++;
                        while (c > b && (c[-1] == ' ' || c[-1] == '\t'))
                                c--;
                        *v = b;
                        *e = c;
                        count++;
                }
                q = le + 2;
        }
        return count;
}

/* A multipart body's part headers: a Content-Disposition whose name (or
 * RFC 2231 name*) is _method. Read as leniently as the laxest parser:
 * Rack finds /Content-Disposition:.*\s+name=.../ anywhere in a part's
 * head, over a folded line and without a ';' before it. So every
 * "content-disposition" in the body, up to the blank line after it, has
 * each "name=" (not "filename=") looked at; data that merely looks like a
 * part head is refused too. */
static bool multipart_override(const char *body, size_t n) {
        static const char cd[] = "content-disposition";
        const size_t cl = sizeof cd - 1;
        for (size_t i = 0; i + cl <= n; i++) {
                if (strncasecmp(body + i, cd, cl) != 0)
                        continue;
                size_t end = i + cl;
                while (end < n && !(body[end] == '\n' && (end + 1 >= n || body[end + 1] == '\n' ||
                                                           (body[end + 1] == '\r' && end + 2 < n && body[end + 2] == '\n'))))
                        end++;
                for (size_t k = i + cl; k + 4 <= end; k++) {
                        char prev = body[k - 1];
                        if (strncasecmp(body + k, "name", 4) != 0 || (prev >= 'a' && prev <= 'z') ||
                            (prev >= 'A' && prev <= 'Z') || (prev >= '0' && prev <= '9') || prev == '_' || prev == '-')
                                continue;
                        size_t v = k + 4;
                        bool ext = v < end && body[v] == '*';
                        v += ext;
                        while (v < end && (body[v] == ' ' || body[v] == '\t'))
                                v++;
                        if (v >= end || body[v] != '=')
                                continue;
                        v++;
                        while (v < end && (body[v] == ' ' || body[v] == '\t' || body[v] == '"'))
                                v++;
                        size_t ve = v;
                        while (ve < end && body[ve] != '"' && body[ve] != ';' && body[ve] != '\r' && body[ve] != '\n' &&
                               body[ve] != ' ' && body[ve] != '\t')
                                ve++;
                        if (ext) { /* charset'lang'value */
                                const char *t = memchr(body + v, '\'', ve - v);
                                const char *t2 = t ? memchr(t + 1, '\'', (size_t)(body + ve - t - 1)) : NULL;
                                v = t2 ? (size_t)(t2 + 1 - body) : v;
                        }
                        char name[32];
                        size_t o = 0;
                        for (size_t x = v; x < ve && o < sizeof name; x++)
                                if (body[x] != '\\')
                                        name[o++] = body[x];
                        if (name_is_override(name, o, false))
                                return true;
                }
                i = end;
        }
        return false;
}

/* A JSON body: "_method" anywhere once its escapes are read (a key of
 * the top-level object is what Laravel takes; any place is refused). */
static bool json_override(const char *body, size_t n) {
        char win[8] = "";
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
                char c = body[i];
                if (c == '\\' && i + 1 < n) {
                        c = body[++i];
                        if (c == 'u' && i + 4 < n) {
                                int v = 0;
                                for (int k = 1; k <= 4; k++)
                                        v = hexval(body[i + k]) < 0 || v < 0 ? -1 : v * 16 + hexval(body[i + k]);
                                if (v >= 0) {
                                        c = v < 0x80 ? (char)v : '?';
                                        i += 4;
                                }
                        }
                }
                c = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
                if (w == 7)
                        memmove(win, win + 1, --w);
                win[w++] = c;
                if (w == 7 && memcmp(win, "_method", 7) == 0)
                        return true;
        }
        return false;
}

int http_rules_body(const char *headers, const char *body, size_t have, size_t room, size_t *need, char *why,
                    size_t size) {
        const char *end = headers + strlen(headers), *v = NULL, *e = NULL;
        uint64_t length = 0;
        bool chunked = header_value(headers, end, "transfer-encoding", &v, &e) > 0;
        if (header_value(headers, end, "content-length", &v, &e) == 1)
                for (; v < e && *v >= '0' && *v <= '9' && length < UINT64_MAX / 16; v++)
                        length = length * 10 + (uint64_t)(*v - '0');
        if (!chunked && length == 0)
                return 0;
        unsigned types = header_value(headers, end, "content-type", &v, &e);
        if (types > 1) {
                snprintf(why, size,
                         "the request has %u Content-Type headers: a server may read its body as a form carrying a _method "
                         "parameter the proxy did not look for", types);
                return -EPERM;
        }
        /* What frameworks read parameters from: a form (Rack takes a POST
         * without a Content-Type for one), multipart, JSON (Laravel). */
        char type[128] = "";
        if (types == 1)
                snprintf(type, sizeof type, "%.*s", (int)MIN((size_t)(e - v), sizeof type - 1), v);
        /* Rack and PHP end the media type at ',' as at ';'. */
        type[strcspn(type, ";, \t")] = 0;
        for (char *t = type; *t; t++)
                *t = *t >= 'A' && *t <= 'Z' ? (char)(*t - 'A' + 'a') : *t;
        bool form = !*type || streq(type, "application/x-www-form-urlencoded");
        /* Laravel reads a body as JSON when the whole Content-Type,
         * parameters too, holds "/json" or "+json". */
        bool json = false;
        for (const char *x = v; types == 1 && x + 4 <= e && !json; x++)
                json = strncasecmp(x, "json", 4) == 0;
        bool multipart = strncmp(type, "multipart/", 10) == 0;
        if (!form && !multipart && !json)
                return 0;
        const char *kind = form ? "form" : multipart ? "multipart" : "JSON";
        /* A server that inflates request bodies (Apache's DEFLATE input
         * filter, ASP.NET Core's request decompression) reads a _method
         * the proxy would look for in compressed bytes. */
        unsigned codings = header_value(headers, end, "content-encoding", &v, &e);
        if (codings > 1 || (codings == 1 && !((size_t)(e - v) == 8 && strncasecmp(v, "identity", 8) == 0))) {
                snprintf(why, size,
                         "the request's %s body has a Content-Encoding: a server that inflates it could read a _method "
                         "parameter the proxy cannot see in the encoded bytes",
                         kind);
                return -EPERM;
        }
        if (chunked || length > room) {
                snprintf(why, size,
                         "the request's %s body (%s) is not one the proxy reads whole (at most %zu bytes with a Content-Length), "
                         "and a _method parameter in it would make many frameworks run another method than the rule checked",
                         kind, chunked ? "chunked" : "too long", room);
                return -EPERM;
        }
        if (have < length) {
                *need = (size_t)length;
                return 1;
        }
        if ((form && params_override(body, (size_t)length)) || (multipart && multipart_override(body, (size_t)length)) ||
            (json && json_override(body, (size_t)length))) {
                snprintf(why, size,
                         "the request's %s body has a _method parameter, which many frameworks (Rails, Laravel, Symfony) "
                         "run as the request's method instead of the one the [[sandbox.http]] rule checked", kind);
                return -EPERM;
        }
        return 0;
}
