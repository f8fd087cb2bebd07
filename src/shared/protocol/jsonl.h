/* SPDX-License-Identifier: MIT */
#pragma once

/* JSON-lines framing shared by the worker protocol and the daemon API
 * (docs/protocol.md, "Framing").
 *
 * A message is one line holding a JSON object, then '\n'. A header may carry
 * a top-level integer "raw": N; then exactly N raw bytes follow the '\n' and
 * belong to that message. The reader strips "raw" from the object it hands
 * out (so dispatch tables never see it) and reports it in JsonlMsg instead;
 * the encoder adds it. Pure: no OS calls except jsonl_reader_read_fd().
 *
 * Reader use, push style (libuv read callback, or any buffer):
 *
 *         jsonl_reader_feed(r, data, len);
 *         while ((k = jsonl_reader_next(r, &msg, &err)) == 0) {
 *                 ... use msg ...
 *                 jsonl_msg_done(&msg);
 *         }
 *         k == -EAGAIN: need more bytes; -EBADMSG: that line was malformed
 *         and skipped, the stream is still in sync (reply an error, go on);
 *         -EPROTO / -EMSGSIZE: framing lost, sticky: end the peer.
 *
 * Zero-copy style (nonblocking fd, or a libuv alloc_cb): ask for a buffer
 * with jsonl_reader_get_buffer(), read into it, then jsonl_reader_commit().
 * While the body of a large raw payload is arriving, that buffer is the
 * payload's own storage, so its bytes are copied by nobody (feed() copies
 * them exactly once). jsonl_reader_read_fd() does both for an fd.
 *
 * Call next() until -EAGAIN after each feed/commit: the reader buffers what
 * it is given. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "error.h"
#include "strbuf.h"

#define JSONL_MAX_LINE (1024u * 1024u)      /* header bytes, without the '\n' */
#define JSONL_MAX_RAW (64u * 1024u * 1024u) /* raw payload bytes */
#define JSONL_MAX_DEPTH 32                  /* nesting of [] and {}; the top object is depth 1 */

typedef struct JsonlMsg {
        json_t *obj;      /* owned: the header object, without "raw" */
        bool has_raw;     /* the header had "raw" (possibly 0) */
        char *raw;        /* has_raw: raw_len bytes (owned through raw_owner; NUL after them); else NULL */
        size_t raw_len;
        void *raw_owner;  /* what to free(); raw may point inside it */
} JsonlMsg;

#define JSONL_MSG_INIT { NULL, false, NULL, 0, NULL }

/* Releases obj and raw; accepts a zeroed or already-released msg. */
void jsonl_msg_done(JsonlMsg *m);
/* Hands the raw payload out as a malloc'd pointer (NUL-terminated,
 * *ret_len bytes) that the caller frees with free(). Never copies when raw
 * sits at the start of its storage; otherwise copies once. NULL without raw
 * or on OOM (then the msg keeps it). */
char *jsonl_msg_steal_raw(JsonlMsg *m, size_t *ret_len);

typedef struct JsonlReader JsonlReader;

int jsonl_reader_new(JsonlReader **ret);
void jsonl_reader_free(JsonlReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(JsonlReader *, jsonl_reader_free);

/* Copies len bytes in. -ENOMEM; after a sticky error, returns it. */
int jsonl_reader_feed(JsonlReader *r, const void *data, size_t len);
/* A writable area of at least 1 byte (at least hint bytes unless a raw
 * payload needs fewer) where the next bytes may be read to; valid until the
 * next call on r. */
int jsonl_reader_get_buffer(JsonlReader *r, size_t hint, void **ret_p, size_t *ret_len);
/* Declares that n bytes were written at the start of the last buffer. */
void jsonl_reader_commit(JsonlReader *r, size_t n);
/* One read(2) from fd into the reader: bytes read, 0 at EOF, -EAGAIN, or a
 * negative errno. */
ssize_t jsonl_reader_read_fd(JsonlReader *r, int fd);

/* The next complete message into *ret (owned by the caller, release with
 * jsonl_msg_done()). Returns 0, -EAGAIN (incomplete), -EBADMSG (a malformed
 * line: not JSON, not an object, too deep, duplicate key, invalid UTF-8;
 * skipped, in sync), -EPROTO ("raw" not an integer in range: framing lost,
 * sticky), -EMSGSIZE (a line over JSONL_MAX_LINE or raw over JSONL_MAX_RAW;
 * sticky), -ENOMEM. *err says why for the negative errnos other than
 * -EAGAIN. */
int jsonl_reader_next(JsonlReader *r, JsonlMsg *ret, VsError **err);

/* Whether the JSON text p[0..n) nests [] and {} at most max_depth deep
 * (checked before parsing, so a deep line costs no allocation and jansson's
 * recursion stays shallow). Exact for valid JSON. Pure. */
bool jsonl_depth_ok(const char *p, size_t n, int max_depth);

/* Frees the read buffer when it holds nothing not yet returned (an idle
 * peer's reader need not keep its largest message's storage); the next
 * read allocates again. */
void jsonl_reader_release(JsonlReader *r);

/* Bytes buffered but not yet returned as messages (for "EOF mid-message"
 * diagnostics). */
size_t jsonl_reader_pending(const JsonlReader *r);
/* Whether a sticky error has ended this reader. */
bool jsonl_reader_failed(const JsonlReader *r);

/* Appends obj as one compact line to out, then raw. "raw": raw_len is added
 * to the line when raw != NULL or raw_len > 0 (obj itself is not modified
 * and must not have "raw"). -EINVAL if obj is not an object or has "raw",
 * -EMSGSIZE past the limits, -ENOMEM / -ENOBUFS from out. On failure out is
 * left as it was. */
int jsonl_encode(json_t *obj, const void *raw, size_t raw_len, StrBuf *out);
/* A string field added to an encoded object without building a json_t for
 * it: bulk text (command output, file content) is escaped straight into the
 * line, several times faster than jansson's encoder. key is borrowed and
 * must be plain ASCII needing no escapes; data must be valid UTF-8
 * (utf8_valid(), utf8.h). */
typedef struct JsonlText {
        const char *key;
        const char *data;
        size_t len;
} JsonlText;


/* Bytes p[0..n) take escaped inside a JSON string (what
 * jsonl_encode_texts() writes, without the quotes). Pure. */
size_t jsonl_escaped_len(const char *p, size_t n);
/* The length of the longest prefix (suffix) of p[0..n) whose escaped form
 * takes at most budget bytes, never cutting a UTF-8 sequence. Pure. */
size_t jsonl_escaped_prefix(const char *p, size_t n, size_t budget);
size_t jsonl_escaped_suffix(const char *p, size_t n, size_t budget);

/* As jsonl_encode(), with the texts appended to obj's fields (obj must not
 * hold their keys). Same errors, and -EILSEQ when a text is not valid UTF-8;
 * out is left as it was on failure. */
int jsonl_encode_texts(json_t *obj, const JsonlText *texts, size_t n_texts, const void *raw, size_t raw_len,
                       StrBuf *out);

/* Same, header line only: the caller sends the raw_len bytes itself (e.g.
 * with writev from its own buffers). with_raw: add "raw" even when 0. */
int jsonl_encode_header(json_t *obj, bool with_raw, size_t raw_len, StrBuf *out);
