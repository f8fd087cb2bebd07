/* SPDX-License-Identifier: MIT */
/* Worker -> daemon replies ({"id":N,"ok":...}) and session events
 * ({"event":...}), one table per message. These come from inside the jail,
 * from a worker the agent may have taken over: every decoder refuses what
 * its table does not name, and the raw payload's length is checked against
 * what the header claims. */
#include <stdint.h>
#include <string.h>

#include "jsonl.h"
#include "macro.h"
#include "protocol-internal.h"

#define REQUIRED JSON_FIELD_REQUIRED

static json_t *reply_new(uint64_t id) {
        return json_pack("{s:I, s:b}", "id", (json_int_t) id, "ok", 1);
}

/* ---- the head, errors ---- */

typedef struct ErrorWire {
        const char *code;
        const char *message;
} ErrorWire;

static const JsonField error_table[] = {
        { "code", JSON_FIELD_STRING, offsetof(ErrorWire, code), REQUIRED },
        { "message", JSON_FIELD_STRING, offsetof(ErrorWire, message), 0 },
        {}
};

/* An error reply is complete: nothing else may ride along. */
static const JsonField error_reply_table[] = {
        REPLY_FIELDS,
        { "error", JSON_FIELD_OBJECT, 0, REQUIRED, error_table },
        {}
};

int protocol_decode_reply_head(json_t *obj, ProtocolReplyHead *ret, VsError **err) {
        ProtocolReplyHead h = {};
        if (!json_is_object(obj))
                return proto_bad(err, "reply is not an %s", "object");

        json_t *id = json_object_get(obj, "id");
        if (!id)
                return proto_bad(err, "missing field '%s'", "id");
        if (!json_is_null(id)) {
                if (protocol_peek_id(obj, &h.id) < 0)
                        return proto_bad(err, "field '%s' must be a non-negative integer or null", "id");
                h.has_id = true;
        }
        json_t *ok = json_object_get(obj, "ok");
        if (!json_is_boolean(ok))
                return proto_bad(err, "field '%s' must be a boolean", "ok");
        h.ok = json_is_true(ok);
        if (!h.ok) {
                ErrorWire e = {};
                int k = json_dispatch(obj, error_reply_table, &e, err);
                if (k < 0)
                        return k;
                h.error_code_name = e.code;
                h.error_code = protocol_error_code_from_string(e.code);
                h.error_message = e.message ? e.message : "";
        }
        *ret = h;
        return 0;
}

int protocol_encode_error(StrBuf *out, bool has_id, uint64_t id, ProtocolErrorCode code,
                          const char *message) {
        const char *c = protocol_error_code_to_string(code);
        if (!c)
                return -EINVAL;
        ErrorWire e = { c, message ? message : c };
        json_t *o = json_pack("{s:o, s:b}", "id", has_id ? json_integer((json_int_t) id) : json_null(), "ok", 0);
        return proto_encode(out, o, error_reply_table, &e, NULL, 0);
}

int protocol_encode_ok(StrBuf *out, uint64_t id) {
        return proto_encode(out, reply_new(id), NULL, NULL, NULL, 0);
}

/* Decodes a successful reply through table (with "id" and "ok" ignored). */
int proto_decode_ok_reply(json_t *obj, const JsonField *table, void *target, VsError **err) {
        ProtocolReplyHead h;
        int k = protocol_decode_reply_head(obj, &h, err);
        if (k < 0)
                return k;
        if (!h.ok)
                return proto_bad(err, "reply is an error: %.200s", h.error_message);
        return json_dispatch(obj, table, target, err);
}

/* ---- exec ---- */

static const JsonField exec_reply_table[] = {
        REPLY_FIELDS,
        { "exit_code", JSON_FIELD_INT64, offsetof(ProtocolExecReply, exit_code), REQUIRED },
        { "signal", JSON_FIELD_INT64, offsetof(ProtocolExecReply, signal), 0 },
        { "timed_out", JSON_FIELD_BOOL, offsetof(ProtocolExecReply, timed_out), 0 },
        { "cancelled", JSON_FIELD_BOOL, offsetof(ProtocolExecReply, cancelled), 0 },
        { "stdout_len", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stdout_len), REQUIRED, .max = JSONL_MAX_RAW },
        { "stderr_len", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stderr_len), REQUIRED, .max = JSONL_MAX_RAW },
        { "stdout_total", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stdout_total), 0 },
        { "stderr_total", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stderr_total), 0 },
        { "duration_us", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, duration_us), 0 },
        {}
};

int protocol_encode_exec_reply(StrBuf *out, uint64_t id, const ProtocolExecReply *r,
                               const void *stdout_data, const void *stderr_data) {
        size_t len = (size_t) (r->stdout_len + r->stderr_len);
        if (r->stdout_len > JSONL_MAX_RAW || r->stderr_len > JSONL_MAX_RAW || len > JSONL_MAX_RAW)
                return -EMSGSIZE;
        json_t *o = reply_new(id);
        if (!o || json_build(o, exec_reply_table, r) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        /* One header, then both streams: no intermediate copy. */
        size_t old = out->len;
        int k = jsonl_encode_header(o, true, len, out);
        json_decref(o);
        if (k < 0)
                return k;
        if ((k = strbuf_append(out, stdout_data, (size_t) r->stdout_len)) < 0 ||
            (k = strbuf_append(out, stderr_data, (size_t) r->stderr_len)) < 0) {
                out->len = old;
                out->data[old] = 0;
                return k;
        }
        return 0;
}

int protocol_decode_exec_reply(json_t *obj, size_t raw_len, ProtocolExecReply *ret, VsError **err) {
        ProtocolExecReply r = {};
        int k = proto_decode_ok_reply(obj, exec_reply_table, &r, err);
        if (k < 0)
                return k;
        if (r.stdout_len + r.stderr_len != raw_len)
                return proto_bad(err, "%s does not match the raw payload", "stdout_len + stderr_len");
        *ret = r;
        return 0;
}

/* ---- files ---- */

static const JsonField read_file_reply_table[] = {
        REPLY_FIELDS,
        { "size", JSON_FIELD_UINT64, offsetof(ProtocolReadFileReply, size), REQUIRED },
        { "sha256", JSON_FIELD_STRING, offsetof(ProtocolReadFileReply, sha256), REQUIRED },
        { "offset", JSON_FIELD_UINT64, offsetof(ProtocolReadFileReply, offset), 0 },
        { "eof", JSON_FIELD_BOOL, offsetof(ProtocolReadFileReply, eof), 0 },
        { "start_line", JSON_FIELD_UINT64, offsetof(ProtocolReadFileReply, start_line), 0 },
        {}
};

int protocol_encode_read_file_reply(StrBuf *out, uint64_t id, const ProtocolReadFileReply *r,
                                    const void *data, size_t len) {
        return proto_encode(out, reply_new(id), read_file_reply_table, r, data ? data : "", len);
}

int protocol_decode_read_file_reply(json_t *obj, ProtocolReadFileReply *ret, VsError **err) {
        ProtocolReadFileReply r = {};
        int k = proto_decode_ok_reply(obj, read_file_reply_table, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

static const JsonField write_file_reply_table[] = {
        REPLY_FIELDS,
        { "size", JSON_FIELD_UINT64, offsetof(ProtocolWriteFileReply, size), REQUIRED },
        { "sha256", JSON_FIELD_STRING, offsetof(ProtocolWriteFileReply, sha256), REQUIRED },
        { "created", JSON_FIELD_BOOL, offsetof(ProtocolWriteFileReply, created), 0 },
        {}
};

int protocol_encode_write_file_reply(StrBuf *out, uint64_t id, const ProtocolWriteFileReply *r) {
        return proto_encode(out, reply_new(id), write_file_reply_table, r, NULL, 0);
}

int protocol_decode_write_file_reply(json_t *obj, ProtocolWriteFileReply *ret, VsError **err) {
        ProtocolWriteFileReply r = {};
        int k = proto_decode_ok_reply(obj, write_file_reply_table, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

/* File types travel as names ("file", "dir"...). */
typedef struct StatWire {
        ProtocolStatReply r;
        const char *type;
} StatWire;

static const JsonField stat_reply_table[] = {
        REPLY_FIELDS,
        { "type", JSON_FIELD_STRING, offsetof(StatWire, type), REQUIRED },
        { "size", JSON_FIELD_UINT64, offsetof(StatWire, r.size), 0 },
        { "mode", JSON_FIELD_UINT64, offsetof(StatWire, r.mode), 0 },
        { "mtime_ns", JSON_FIELD_INT64, offsetof(StatWire, r.mtime_ns), 0 },
        {}
};

int protocol_encode_stat_reply(StrBuf *out, uint64_t id, const ProtocolStatReply *r) {
        StatWire w = { .r = *r, .type = protocol_file_type_to_string(r->type) };
        if (!w.type)
                return -EINVAL;
        return proto_encode(out, reply_new(id), stat_reply_table, &w, NULL, 0);
}

int protocol_decode_stat_reply(json_t *obj, ProtocolStatReply *ret, VsError **err) {
        StatWire w = {};
        int k = proto_decode_ok_reply(obj, stat_reply_table, &w, err);
        if (k < 0)
                return k;
        w.r.type = protocol_file_type_from_string(w.type);
        if (w.r.type < 0)
                return proto_bad(err, "unknown file type '%.32s'", w.type);
        *ret = w.r;
        return 0;
}

/* "entries" is an array of entry_table objects, read beside the table. */
static const JsonField list_dir_reply_table[] = {
        REPLY_FIELDS,
        { "entries", JSON_FIELD_IGNORE, 0, REQUIRED },
        { "total", JSON_FIELD_UINT64, offsetof(ProtocolListDirReply, total), 0 },
        { "truncated", JSON_FIELD_BOOL, offsetof(ProtocolListDirReply, truncated), 0 },
        {}
};

typedef struct EntryWire {
        const char *name;
        const char *type;
        uint64_t size;
} EntryWire;

static const JsonField entry_table[] = {
        { "name", JSON_FIELD_STRING, offsetof(EntryWire, name), REQUIRED },
        { "type", JSON_FIELD_STRING, offsetof(EntryWire, type), REQUIRED },
        { "size", JSON_FIELD_UINT64, offsetof(EntryWire, size), 0 },
        {}
};

int protocol_encode_list_dir_reply(StrBuf *out, uint64_t id, const ProtocolListDirReply *r) {
        json_t *o = reply_new(id), *a = json_array();
        int k = o && a && json_object_set(o, "entries", a) == 0 && json_build(o, list_dir_reply_table, r) == 0 ? 0 : -ENOMEM;
        for (size_t i = 0; k >= 0 && i < r->n_entries; i++) {
                EntryWire w = { r->entries[i].name, protocol_file_type_to_string(r->entries[i].type), r->entries[i].size };
                json_t *e = json_object();
                if (!w.type)
                        k = -EINVAL;
                else if (!e || json_build(e, entry_table, &w) < 0 || json_array_append(a, e) < 0)
                        k = -ENOMEM;
                json_decref(e);
        }
        json_decref(a);
        if (k < 0) {
                json_decref(o);
                return k;
        }
        return proto_encode(out, o, NULL, NULL, NULL, 0);
}

int protocol_decode_list_dir_reply(json_t *obj, ProtocolListDirReply *ret, VsError **err) {
        ProtocolListDirReply r = {};
        int k = proto_decode_ok_reply(obj, list_dir_reply_table, &r, err);
        if (k < 0)
                return k;
        json_t *a = json_object_get(obj, "entries");
        if (!json_is_array(a))
                return proto_bad(err, "field '%s' must be an array", "entries");
        size_t n = json_array_size(a);
        _cleanup_free_ ProtocolDirEntry *e = calloc(n ? n : 1, sizeof *e);
        if (!e)
                return vs_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
                EntryWire w = {};
                k = json_dispatch(json_array_get(a, i), entry_table, &w, err);
                if (k < 0)
                        return vs_error_prefix(err, "entries[%zu]", i);
                e[i].name = w.name;
                e[i].size = w.size;
                e[i].type = protocol_file_type_from_string(w.type);
                if (e[i].type < 0)
                        return proto_bad(err, "unknown file type '%.32s'", w.type);
        }
        r.entries = TAKE_PTR(e);
        r.n_entries = n;
        *ret = r;
        return 0;
}

void protocol_list_dir_reply_done(ProtocolListDirReply *r) {
        if (!r)
                return;
        free(r->entries);
        *r = (ProtocolListDirReply) {};
}

/* ---- cancel, session_open ---- */

typedef struct CancelReplyWire {
        bool found;
} CancelReplyWire;

static const JsonField cancel_reply_table[] = {
        REPLY_FIELDS,
        { "found", JSON_FIELD_BOOL, offsetof(CancelReplyWire, found), REQUIRED },
        {}
};

int protocol_encode_cancel_reply(StrBuf *out, uint64_t id, bool found) {
        return proto_encode(out, reply_new(id), cancel_reply_table, &(CancelReplyWire){ found }, NULL, 0);
}

int protocol_decode_cancel_reply(json_t *obj, bool *ret_found, VsError **err) {
        CancelReplyWire w = {};
        int k = proto_decode_ok_reply(obj, cancel_reply_table, &w, err);
        if (k < 0)
                return k;
        *ret_found = w.found;
        return 0;
}

typedef struct SessionOpenReplyWire {
        int64_t pid;
} SessionOpenReplyWire;

static const JsonField session_open_reply_table[] = {
        REPLY_FIELDS,
        { "pid", JSON_FIELD_INT64, offsetof(SessionOpenReplyWire, pid), REQUIRED, .min = 0, .max = INT32_MAX }, /* 0: a connection */
        {}
};

int protocol_encode_session_open_reply(StrBuf *out, uint64_t id, int64_t pid) {
        return proto_encode(out, reply_new(id), session_open_reply_table, &(SessionOpenReplyWire){ pid }, NULL, 0);
}

int protocol_decode_session_open_reply(json_t *obj, int64_t *ret_pid, VsError **err) {
        SessionOpenReplyWire w = {};
        int k = proto_decode_ok_reply(obj, session_open_reply_table, &w, err);
        if (k < 0)
                return k;
        *ret_pid = w.pid;
        return 0;
}

/* ---- session events ---- */

static const char *const session_event_names[_PROTOCOL_SESSION_EVENT_MAX] = {
        [PROTOCOL_SESSION_OUTPUT] = "session_output",
        [PROTOCOL_SESSION_EXIT] = "session_exit",
};

bool protocol_is_event(json_t *obj) {
        return json_object_get(obj, "event") != NULL;
}

/* The stream travels as a name ("stdout" or "stderr"). */
typedef struct SessionEventWire {
        ProtocolSessionEvent e;
        const char *stream;
} SessionEventWire;

#define EVENT_FIELDS                                                                                \
        { "event", JSON_FIELD_IGNORE, 0, REQUIRED },                                                \
        { "session", JSON_FIELD_UINT64, offsetof(SessionEventWire, e.session), REQUIRED }

static const JsonField session_output_table[] = {
        EVENT_FIELDS,
        { "stream", JSON_FIELD_STRING, offsetof(SessionEventWire, stream), REQUIRED },
        {}
};

static const JsonField session_exit_table[] = {
        EVENT_FIELDS,
        /* min 0 with max: a negative exit code or signal is refused too */
        { "exit_code", JSON_FIELD_INT64, offsetof(SessionEventWire, e.exit_code), REQUIRED, .min = 0, .max = 255 },
        { "signal", JSON_FIELD_INT64, offsetof(SessionEventWire, e.signal), REQUIRED, .min = 0, .max = 64 },
        { "timed_out", JSON_FIELD_BOOL, offsetof(SessionEventWire, e.timed_out), 0 },
        {}
};

static const JsonField *const session_event_tables[_PROTOCOL_SESSION_EVENT_MAX] = {
        [PROTOCOL_SESSION_OUTPUT] = session_output_table,
        [PROTOCOL_SESSION_EXIT] = session_exit_table,
};

int protocol_encode_session_event(StrBuf *out, const ProtocolSessionEvent *e, const void *data, size_t len) {
        if (e->type < 0 || e->type >= _PROTOCOL_SESSION_EVENT_MAX)
                return -EINVAL;
        SessionEventWire w = { .e = *e, .stream = e->is_stderr ? "stderr" : "stdout" };
        bool output = e->type == PROTOCOL_SESSION_OUTPUT;
        return proto_encode(out, json_pack("{s:s}", "event", session_event_names[e->type]),
                            session_event_tables[e->type], &w, output ? (data ? data : "") : NULL, output ? len : 0);
}

int protocol_decode_session_event(json_t *obj, ProtocolSessionEvent *ret, VsError **err) {
        SessionEventWire w = {};
        json_t *ev = json_object_get(obj, "event");
        if (!json_is_string(ev))
                return proto_bad(err, "field '%s' must be a string", "event");
        int type = -1;
        for (int i = 0; i < _PROTOCOL_SESSION_EVENT_MAX; i++)
                if (streq(json_string_value(ev), session_event_names[i]))
                        type = i;
        if (type < 0)
                return proto_bad(err, "unknown event '%.32s'", json_string_value(ev));
        w.e.type = (ProtocolSessionEventType) type;
        int k = json_dispatch(obj, session_event_tables[type], &w, err);
        if (k < 0)
                return k;
        if (w.e.type == PROTOCOL_SESSION_OUTPUT) {
                if (streq(w.stream, "stderr"))
                        w.e.is_stderr = true;
                else if (!streq(w.stream, "stdout"))
                        return proto_bad(err, "field '%s' must be \"stdout\" or \"stderr\"", "stream");
        }
        *ret = w.e;
        return 0;
}
