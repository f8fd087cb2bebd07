/* SPDX-License-Identifier: MIT */
#pragma once

/* The request headers besides Authorization that a host-held secret may
 * go in (issue 31: `secret set NAME --host H --header X-Api-Key`). One
 * check for the store (secret-store.c), the daemon->proxy message
 * (proxy-ctl.c) and the proxy's matching (src/proxy/inject.c), so that
 * all three agree on which names are usable. Pure. */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define SECRET_HEADER_NAME_MAX 64
#define SECRET_HEADERS_MAX 8

/* NULL when name (a header's name, without ':') may carry a secret: an
 * RFC 9110 token of at most SECRET_HEADER_NAME_MAX characters that is
 * neither Authorization (always used) nor a header the proxy controls or
 * that hosts are known to hand back; else why not (static text). */
const char *secret_header_refusal(const char *name);

/* Every name of headers (NULL-terminated, may be NULL) usable, at most
 * SECRET_HEADERS_MAX, none twice (any case); -EINVAL/-E2BIG with *err
 * naming the secret. */
int secret_headers_check(const char *secret, char *const *headers, VsError **err);

/* Whether the header line line[0..len) ("Name: value", as the jail sent
 * it) is one of headers (any case; the name ends at the ':'). */
bool secret_header_line_is(char *const *headers, const char *line, size_t len);
