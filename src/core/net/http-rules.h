/* SPDX-License-Identifier: MIT */
#pragma once

/* HTTP rules per host (issue 31, [[sandbox.http]] in docs/config.md): for
 * a host the proxy sees requests to in the clear (plain HTTP, or HTTPS to
 * a secret's host, which it intercepts), the methods and path globs a
 * request may have; any other request is refused there, never sent on.
 *
 * An entry is "METHOD /path/glob": METHOD an HTTP token in capitals,
 * the glob (glob.h) anchored at "/", '*' one path segment, '**' any
 * number. A request's path is matched without its query, percent-decoded
 * (a query with a _method parameter, which frameworks run as the method,
 * is refused);
 * a path with a "." or ".." segment (as written or percent-encoded, or
 * of more dots or blanks, "..." or ".. ", which a trimming host reads as
 * ".."), an
 * encoded '/' or '\' (%2F, %5C), an encoded escape ("%252e"), an empty segment ("//"), a '\', a NUL
 * or a control byte, bytes that are not UTF-8 once decoded (an overlong
 * "%c0%ae"), or a '#' anywhere in the target is refused
 * whatever the rules say: the host could resolve it to a path the glob
 * did not mean. Pure (no I/O): the config checks entries with it, the
 * proxy matches with it, tests/fuzz/fuzz-proxy-ctl.c feeds it. */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define HTTP_RULES_MAX_HOSTS 64
#define HTTP_RULES_MAX_ALLOW 256
#define HTTP_RULE_MAX 1024

/* Checks one entry: 0, or -EINVAL with *err saying what is wrong. */
int http_allow_check(const char *entry, VsError **err);

/* The path of a request target ("/a/b?q"), decoded, in *ret; or -EPERM
 * with *why saying why it is refused (static text). -ENOMEM. */
int http_path_normalize(const char *target, char **ret, const char **why);

typedef struct HttpRules HttpRules;
/* host's rules: where names the entry for the refusal's text
 * ("/w/vectora.toml line 7"). Shared by reference (the proxy's intercept
 * threads hold one); the count is atomic. */
int http_rules_new(const char *host, const char *where, char *const *allow, size_t n, HttpRules **ret,
                   VsError **err);
HttpRules *http_rules_ref(HttpRules *r);
void http_rules_unref(HttpRules *r);
const char *http_rules_host(const HttpRules *r);
/* The rules for host (normalized, exact), or NULL. */
HttpRules *http_rules_find(HttpRules *const *set, size_t n, const char *host);
/* A workspace's rules as the proxy keeps them: dropped with each rules
 * message, one host's added (replacing its old ones) by each http message. */
typedef struct HttpRuleSet {
        HttpRules **items;
        size_t n;
} HttpRuleSet;
void http_rule_set_clear(HttpRuleSet *s);
int http_rule_set_add(HttpRuleSet *s, const char *host, const char *where, char *const *allow, size_t n, VsError **err);
/* Whether method and target pass r; if not, why[size] says so, naming
 * the rule set (where) and the request. */
bool http_rules_check(const HttpRules *r, const char *method, const char *target, char *why, size_t size);

/* Whether the header lines ("Name: value\r\n") of a request to a rules
 * host let a server read another request than the one checked: a method
 * or URL override header (X-HTTP-Method-Override, X-Original-URL, ...),
 * or a body whose end two servers could put in different places
 * (Content-Length with Transfer-Encoding, either twice, a length not
 * plain digits, a coding other than chunked). why[size] says which. */
bool http_rules_headers_refused(const char *headers, char *why, size_t size);

/* A request body a framework may read a method override from, for a
 * request to a rules host: a form (application/x-www-form-urlencoded,
 * or no Content-Type, which Rack reads as one), multipart or JSON whose
 * _method parameter Rails, Laravel and Symfony run as the request's
 * method. headers: its "Name: value\r\n" lines (checked by
 * http_rules_headers_refused first); body[0..have): what of the body was
 * read; room: the most the caller can hold. 0: the request passes (no
 * body, or one of another type); 1: read the body whole first, *need
 * bytes (at most room); -EPERM with why[size]: a _method in it, or a
 * body of those types the proxy cannot read whole (chunked, longer than
 * room, two Content-Types). */
int http_rules_body(const char *headers, const char *body, size_t have, size_t room, size_t *need, char *why,
                    size_t size);

/* The next Host header in the "Name: value\r\n" lines in [*p, end): [*v,
 * *e) its value without surrounding blanks; *p moved past its line. false
 * when there is none. (head_host_ok() in the proxy reads them too.) */
bool http_next_host_header(const char **p, const char *end, const char **v, const char **e);

/* Plain HTTP names its host twice: in the target (where the proxy
 * connects, whose rules it applies) and in Host headers (where a server
 * fronting several names routes it). Whether a Host header of headers
 * ("Name: value\r\n" lines) names another host than target_host while
 * one of the two has rules in set: the request would reach a rules host
 * unchecked, or be checked against rules it does not go to. A request
 * without a Host header too, or with one that is not a host name the
 * proxy reads ("x@h", "h :80"), while set has rules: the server would
 * serve its default name, or read it leniently. why[size] says which. */
bool http_rules_fronted(HttpRules *const *set, size_t n, const char *target_host, const char *headers, char *why,
                        size_t size);
