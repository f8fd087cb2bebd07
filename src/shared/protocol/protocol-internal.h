/* SPDX-License-Identifier: MIT */
#pragma once

/* What the worker protocol's three files share: protocol.c (names, the
 * allowlist, the handshake and init), protocol-request.c (daemon -> worker
 * requests) and protocol-reply.c (worker -> daemon replies and events).
 *
 * Each message is one JsonField table (json-util.h): its fields, their
 * types, which are required, which the encoder leaves out when empty, and
 * the limits a type does not say (non-empty, absolute, a numeric range).
 * The encoder writes through the table with json_build(), the decoder
 * reads through it with json_dispatch(), which refuses unknown fields. What
 * a table cannot say (one field's meaning depending on another's, enums
 * sent as names, the raw payload's length) is checked in code next to it.
 * Nothing outside those files includes this. */

#include "json-util.h"
#include "protocol.h"

/* The fields every request / reply starts with: the head decoders read
 * them, the tables only accept them. */
#define HEAD_FIELDS                                                                        \
        { "id", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },                               \
        { "op", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED }
#define REPLY_FIELDS                                                                       \
        { "id", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },                               \
        { "ok", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED }

/* -EINVAL with a "bad_request" error: fmt with one %s for arg. */
int proto_bad(VsError **err, const char *fmt, const char *arg) _printf_(2, 0);

/* Writes base (consumed; NULL means an allocation failed) with the fields
 * of table read from src, then raw (raw_len bytes, if raw or raw_len). */
int proto_encode(StrBuf *out, json_t *base, const JsonField table[], const void *src, const void *raw,
                 size_t raw_len);

/* Decodes a successful reply through table (with "id" and "ok" ignored);
 * an error reply is refused. */
int proto_decode_ok_reply(json_t *obj, const JsonField *table, void *target, VsError **err);

/* "K=V" entries as {"K":"V"} (entries without '=' skipped; NULL gives {}).
 * New reference, NULL on OOM. */
json_t *proto_env_to_json(char *const *env);
/* {"K":"V"} (values checked to be strings by the table) as an owned
 * "K=V" strv; NULL gives NULL. */
int proto_env_from_json(json_t *o, char ***ret, VsError **err);
