/* SPDX-License-Identifier: MIT */
#pragma once

/* JSON-RPC 2.0 over a byte stream of lines (the MCP stdio transport: one
 * message or batch per line, no embedded newlines). Pure: parsing,
 * validation and encoding only; the caller reads and writes the stream.
 *
 * Untrusted input is read in the project's two steps: jsonrpc_parse_line()
 * builds the tree under size and depth limits (duplicate keys refused), then
 * jsonrpc_decode() checks one message's envelope and hands out borrowed
 * pointers into it. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "json-util.h"
#include "strbuf.h"

#define JSONRPC_MAX_LINE (80u * 1024u * 1024u) /* a 64 MiB file write, escaped, still fits */
#define JSONRPC_MAX_DEPTH 32
#define JSONRPC_MAX_BATCH 64

/* The error codes of the JSON-RPC 2.0 specification. */
enum {
        JSONRPC_PARSE_ERROR = -32700,
        JSONRPC_INVALID_REQUEST = -32600,
        JSONRPC_METHOD_NOT_FOUND = -32601,
        JSONRPC_INVALID_PARAMS = -32602,
        JSONRPC_INTERNAL_ERROR = -32603,
};

typedef enum JsonRpcKind {
        JSONRPC_REQUEST,      /* method and id: wants a response */
        JSONRPC_NOTIFICATION, /* method, no id: no response, ever */
        JSONRPC_RESPONSE,     /* result or error, and id: a reply to something we sent */
} JsonRpcKind;

typedef struct JsonRpcMessage {
        JsonRpcKind kind;
        json_t *id;         /* borrowed: an integer or a string (NULL for a notification) */
        const char *method; /* borrowed; requests and notifications */
        json_t *params;     /* borrowed: an object or an array, or NULL when absent */
} JsonRpcMessage;

/* Parses one line (without its '\n'). On success *ret is a new reference
 * to an object (one message) or a non-empty array of at most
 * JSONRPC_MAX_BATCH elements (a batch). Errors: -EMSGSIZE (over
 * JSONRPC_MAX_LINE), -EBADMSG (not JSON, nested deeper than
 * JSONRPC_MAX_DEPTH, duplicate key, not an object or array; answer
 * JSONRPC_PARSE_ERROR), -EINVAL (an empty or oversized batch; answer
 * JSONRPC_INVALID_REQUEST), -ENOMEM. */
int jsonrpc_parse_line(const char *p, size_t n, json_t **ret, VsError **err);
/* For a line jsonrpc_parse_line() refused: valid JSON but for a string
 * holding \u0000 or a lone UTF-16 surrogate (escapes that jansson, and so
 * this server, cannot carry), the message's id (a new reference), so the
 * error answers the request rather than leave its client waiting; NULL
 * otherwise. */
json_t *jsonrpc_salvage_id(const char *p, size_t n);

/* Checks one message's envelope ("jsonrpc":"2.0", a string method, an id
 * that is an integer or a string, params an object or an array, nothing
 * else at the top level). On -EINVAL *ret_id (when non-NULL) is the id if
 * the message had a usable one, for the error response, else NULL. */
int jsonrpc_decode(json_t *msg, JsonRpcMessage *ret, json_t **ret_id, VsError **err);

/* Appends {"jsonrpc":"2.0","id":ID,"result":RESULT} and '\n' to out. id
 * NULL gives "id":null. Borrows id and result. */
int jsonrpc_encode_result(StrBuf *out, json_t *id, json_t *result);
/* Appends {"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MSG}}
 * and '\n'. */
int jsonrpc_encode_error(StrBuf *out, json_t *id, int code, const char *message);
/* A response object, for building a batch's array. New reference, NULL on
 * OOM. result NULL: an error response with code and message. */
json_t *jsonrpc_response(json_t *id, json_t *result, int code, const char *message);
/* Appends any JSON value as one compact line and '\n'. */
int jsonrpc_encode_line(StrBuf *out, json_t *v);
