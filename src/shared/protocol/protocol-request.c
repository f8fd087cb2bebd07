/* SPDX-License-Identifier: MIT */
/* Daemon -> worker requests: {"id":N,"op":"...", ...}, one table per op.
 * The worker decodes them from a daemon it trusts, but a request is also
 * what a compromised daemon connection or a fuzzer would send, so every
 * decoder refuses what its table does not name. */
#include <string.h>

#include "macro.h"
#include "protocol-internal.h"
#include "strv.h"

int protocol_peek_id(json_t *obj, uint64_t *ret_id) {
        json_t *v = json_object_get(obj, "id");
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -EINVAL;
        *ret_id = (uint64_t) json_integer_value(v);
        return 0;
}

int protocol_decode_request_head(json_t *obj, ProtocolRequestHead *ret, VsError **err) {
        if (!json_is_object(obj))
                return proto_bad(err, "message is not an %s", "object");
        json_t *t = json_object_get(obj, "type");
        if (t) {
                if (!json_is_string(t) || !streq(json_string_value(t), "init"))
                        return proto_bad(err, "unexpected message type '%.32s'",
                                         json_is_string(t) ? json_string_value(t) : "?");
                *ret = (ProtocolRequestHead) { .id = 0, .op = PROTOCOL_OP_INIT };
                return 0;
        }
        json_t *id = json_object_get(obj, "id");
        if (!id)
                return proto_bad(err, "missing field '%s'", "id");
        uint64_t v;
        if (protocol_peek_id(obj, &v) < 0)
                return proto_bad(err, "field '%s' must be a non-negative integer", "id");
        json_t *op = json_object_get(obj, "op");
        if (!op)
                return proto_bad(err, "missing field '%s'", "op");
        if (!json_is_string(op))
                return proto_bad(err, "field '%s' must be a string", "op");
        ProtocolOp o = protocol_op_from_string(json_string_value(op));
        if (o < 0)
                return vs_error_set_kind(err, -EOPNOTSUPP, "unknown_op", "unknown op '%.32s'",
                                         json_string_value(op));
        *ret = (ProtocolRequestHead) { .id = v, .op = o };
        return 0;
}

/* The head (which must name op want) into *head, then the whole request
 * through table into target. */
static int decode_request(json_t *obj, ProtocolOp want, const JsonField table[], ProtocolRequestHead *head,
                          void *target, VsError **err) {
        int k = protocol_decode_request_head(obj, head, err);
        if (k < 0)
                return k;
        if (head->op != want)
                return proto_bad(err, "expected op '%s'", protocol_op_to_string(want));
        return json_dispatch(obj, table, target, err);
}

static json_t *request_new(uint64_t id, ProtocolOp op) {
        return json_pack("{s:I, s:s}", "id", (json_int_t) id, "op", protocol_op_to_string(op));
}

#define OPT JSON_FIELD_OMIT_EMPTY
#define REQUIRED JSON_FIELD_REQUIRED
#define PATH_FIELD(type) { "path", JSON_FIELD_STRING, offsetof(type, path), REQUIRED | JSON_FIELD_NONEMPTY }

/* ---- exec ---- */

typedef struct ExecWire {
        ProtocolExecRequest r;
        json_t *env;
} ExecWire;

static const JsonField exec_table[] = {
        HEAD_FIELDS,
        { "argv", JSON_FIELD_STRV, offsetof(ExecWire, r.argv), REQUIRED | JSON_FIELD_NONEMPTY },
        { "cwd", JSON_FIELD_STRING_OR_NULL, offsetof(ExecWire, r.cwd), OPT },
        { "env", JSON_FIELD_STRMAP, offsetof(ExecWire, env), JSON_FIELD_NULLABLE | OPT },
        { "timeout_ms", JSON_FIELD_UINT64, offsetof(ExecWire, r.timeout_ms), OPT },
        { "max_output", JSON_FIELD_UINT64, offsetof(ExecWire, r.max_output), OPT },
        {}
};

int protocol_encode_exec_request(StrBuf *out, uint64_t id, const ProtocolExecRequest *r,
                                 const void *stdin_data, size_t stdin_len) {
        if (!r->argv || !r->argv[0])
                return -EINVAL;
        ExecWire w = { .r = *r };
        if (r->env && !(w.env = proto_env_to_json(r->env)))
                return -ENOMEM;
        int k = proto_encode(out, request_new(id, PROTOCOL_OP_EXEC), exec_table, &w, stdin_data, stdin_len);
        json_decref(w.env);
        return k;
}

int protocol_decode_exec_request(json_t *obj, ProtocolExecRequest *ret, VsError **err) {
        ExecWire w = {};
        int k = decode_request(obj, PROTOCOL_OP_EXEC, exec_table, &w.r.head, &w, err);
        if (k < 0)
                return k;
        k = proto_env_from_json(w.env, &w.r.env, err);
        if (k < 0) {
                json_dispatch_done(exec_table, &w);
                return k;
        }
        *ret = w.r;
        return 0;
}

void protocol_exec_request_done(ProtocolExecRequest *r) {
        if (!r)
                return;
        free(r->argv);
        strv_free(r->env);
        r->argv = r->env = NULL;
}

/* ---- files ---- */

static const JsonField read_file_table[] = {
        HEAD_FIELDS,
        PATH_FIELD(ProtocolReadFileRequest),
        { "offset", JSON_FIELD_UINT64, offsetof(ProtocolReadFileRequest, offset), OPT },
        { "limit", JSON_FIELD_UINT64, offsetof(ProtocolReadFileRequest, limit), OPT },
        { "start_line", JSON_FIELD_UINT64, offsetof(ProtocolReadFileRequest, start_line), OPT },
        { "max_lines", JSON_FIELD_UINT64, offsetof(ProtocolReadFileRequest, max_lines), OPT },
        {}
};

int protocol_encode_read_file_request(StrBuf *out, uint64_t id, const ProtocolReadFileRequest *r) {
        return proto_encode(out, request_new(id, PROTOCOL_OP_READ_FILE), read_file_table, r, NULL, 0);
}

int protocol_decode_read_file_request(json_t *obj, ProtocolReadFileRequest *ret, VsError **err) {
        ProtocolReadFileRequest r = {};
        int k = decode_request(obj, PROTOCOL_OP_READ_FILE, read_file_table, &r.head, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

/* "mode" is the one optional field where 0 is a value, not "absent": it is
 * accepted here and written and checked beside the table (has_mode). */
static const JsonField write_file_table[] = {
        HEAD_FIELDS,
        PATH_FIELD(ProtocolWriteFileRequest),
        { "mode", JSON_FIELD_IGNORE, 0, 0 },
        { "create_parents", JSON_FIELD_BOOL, offsetof(ProtocolWriteFileRequest, create_parents), OPT },
        { "if_sha256", JSON_FIELD_STRING_OR_NULL, offsetof(ProtocolWriteFileRequest, if_sha256), OPT },
        {}
};

static bool is_sha256_hex(const char *s) {
        size_t n = 0;
        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == 64;
}

int protocol_encode_write_file_request(StrBuf *out, uint64_t id, const ProtocolWriteFileRequest *r,
                                       const void *data, size_t len) {
        json_t *o = request_new(id, PROTOCOL_OP_WRITE_FILE);
        if (o && r->has_mode && json_object_set_new(o, "mode", json_integer((json_int_t) r->mode)) < 0)
                o = (json_decref(o), NULL);
        /* Always send "raw" (0 for an empty file) so the content is explicit. */
        return proto_encode(out, o, write_file_table, r, data ? data : "", len);
}

int protocol_decode_write_file_request(json_t *obj, ProtocolWriteFileRequest *ret, VsError **err) {
        ProtocolWriteFileRequest r = {};
        int k = decode_request(obj, PROTOCOL_OP_WRITE_FILE, write_file_table, &r.head, &r, err);
        if (k < 0)
                return k;
        json_t *m = json_object_get(obj, "mode");
        if (m && !json_is_null(m)) {
                if (!json_is_integer(m) || json_integer_value(m) < 0 || json_integer_value(m) > 07777)
                        return proto_bad(err, "field '%s' must be an integer from 0 to 4095 (07777)", "mode");
                r.has_mode = true;
                r.mode = (uint64_t) json_integer_value(m);
        }
        if (r.if_sha256 && r.if_sha256[0] && !is_sha256_hex(r.if_sha256))
                return proto_bad(err, "field '%s' must be \"\" or 64 lowercase hex digits", "if_sha256");
        *ret = r;
        return 0;
}

static const JsonField path_table[] = {
        HEAD_FIELDS,
        PATH_FIELD(ProtocolPathRequest),
        {}
};

static int decode_path_request(json_t *obj, ProtocolOp op, ProtocolPathRequest *ret, VsError **err) {
        ProtocolPathRequest r = {};
        int k = decode_request(obj, op, path_table, &r.head, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

int protocol_decode_stat_request(json_t *obj, ProtocolPathRequest *ret, VsError **err) {
        return decode_path_request(obj, PROTOCOL_OP_STAT, ret, err);
}

static const JsonField list_dir_table[] = {
        HEAD_FIELDS,
        PATH_FIELD(ProtocolListDirRequest),
        { "max_entries", JSON_FIELD_UINT64, offsetof(ProtocolListDirRequest, max_entries), OPT },
        {}
};

int protocol_decode_list_dir_request(json_t *obj, ProtocolListDirRequest *ret, VsError **err) {
        ProtocolListDirRequest r = {};
        int k = decode_request(obj, PROTOCOL_OP_LIST_DIR, list_dir_table, &r.head, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

int protocol_encode_stat_request(StrBuf *out, uint64_t id, const char *path) {
        return proto_encode(out, request_new(id, PROTOCOL_OP_STAT), path_table, &(ProtocolPathRequest){ .path = path },
                            NULL, 0);
}

int protocol_encode_list_dir_request(StrBuf *out, uint64_t id, const ProtocolListDirRequest *r) {
        return proto_encode(out, request_new(id, PROTOCOL_OP_LIST_DIR), list_dir_table, r, NULL, 0);
}

/* ---- cancel, shutdown ---- */

static const JsonField cancel_table[] = {
        HEAD_FIELDS,
        { "target", JSON_FIELD_UINT64, offsetof(ProtocolCancelRequest, target), REQUIRED },
        {}
};

int protocol_encode_cancel_request(StrBuf *out, uint64_t id, uint64_t target) {
        return proto_encode(out, request_new(id, PROTOCOL_OP_CANCEL), cancel_table,
                            &(ProtocolCancelRequest){ .target = target }, NULL, 0);
}

int protocol_decode_cancel_request(json_t *obj, ProtocolCancelRequest *ret, VsError **err) {
        ProtocolCancelRequest r = {};
        int k = decode_request(obj, PROTOCOL_OP_CANCEL, cancel_table, &r.head, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

static const JsonField head_only_table[] = {
        HEAD_FIELDS,
        {}
};

int protocol_encode_shutdown_request(StrBuf *out, uint64_t id) {
        return proto_encode(out, request_new(id, PROTOCOL_OP_SHUTDOWN), NULL, NULL, NULL, 0);
}

int protocol_decode_shutdown_request(json_t *obj, ProtocolRequestHead *ret, VsError **err) {
        ProtocolRequestHead h;
        int k = decode_request(obj, PROTOCOL_OP_SHUTDOWN, head_only_table, &h, NULL, err);
        if (k < 0)
                return k;
        *ret = h;
        return 0;
}

/* ---- sessions ---- */

#define WINSIZE(name, type, member, flags) \
        { name, JSON_FIELD_UINT64, offsetof(type, member), flags, .min = 1, .max = PROTOCOL_SESSION_MAX_WINSIZE }

typedef struct SessionOpenWire {
        ProtocolSessionOpenRequest r;
        json_t *env;
} SessionOpenWire;

static const JsonField session_open_table[] = {
        HEAD_FIELDS,
        /* exactly one of argv and connect, checked beside the table */
        { "argv", JSON_FIELD_STRV, offsetof(SessionOpenWire, r.argv), OPT | JSON_FIELD_NONEMPTY },
        { "connect", JSON_FIELD_UINT64, offsetof(SessionOpenWire, r.connect), OPT, .min = 1, .max = 65535 },
        { "cwd", JSON_FIELD_STRING_OR_NULL, offsetof(SessionOpenWire, r.cwd), OPT },
        { "env", JSON_FIELD_STRMAP, offsetof(SessionOpenWire, env), JSON_FIELD_NULLABLE | OPT },
        { "pty", JSON_FIELD_BOOL, offsetof(SessionOpenWire, r.pty), OPT },
        WINSIZE("cols", SessionOpenWire, r.cols, OPT),
        WINSIZE("rows", SessionOpenWire, r.rows, OPT),
        { "timeout_ms", JSON_FIELD_UINT64, offsetof(SessionOpenWire, r.timeout_ms), OPT },
        {}
};

/* cols and rows go with a pty, and only with one. */
static bool winsize_ok(bool pty, uint64_t cols, uint64_t rows) {
        return pty ? cols >= 1 && rows >= 1 && cols <= PROTOCOL_SESSION_MAX_WINSIZE &&
                                     rows <= PROTOCOL_SESSION_MAX_WINSIZE
                   : !cols && !rows;
}

int protocol_encode_session_open_request(StrBuf *out, uint64_t id, const ProtocolSessionOpenRequest *r) {
        if (r->connect ? r->connect > 65535 || r->argv : !r->argv || !r->argv[0] || !winsize_ok(r->pty, r->cols, r->rows))
                return -EINVAL;
        SessionOpenWire w = { .r = *r };
        if (r->env && !(w.env = proto_env_to_json(r->env)))
                return -ENOMEM;
        int k = proto_encode(out, request_new(id, PROTOCOL_OP_SESSION_OPEN), session_open_table, &w, NULL, 0);
        json_decref(w.env);
        return k;
}

int protocol_decode_session_open_request(json_t *obj, ProtocolSessionOpenRequest *ret, VsError **err) {
        SessionOpenWire w = {};
        int k = decode_request(obj, PROTOCOL_OP_SESSION_OPEN, session_open_table, &w.r.head, &w, err);
        if (k < 0)
                return k;
        if (!w.r.argv == !w.r.connect)
                k = proto_bad(err, "give exactly one of 'argv' and '%s'", "connect");
        else if (w.r.connect && (w.r.pty || w.r.cwd || w.env || w.r.timeout_ms))
                k = proto_bad(err, "'connect' is a port (1..65535) and takes no '%s'", "pty, cwd, env or timeout_ms");
        else if (!winsize_ok(w.r.pty, w.r.cols, w.r.rows))
                k = proto_bad(err, w.r.pty ? "fields 'cols' and 'rows' must be 1..%s for a pty"
                                           : "fields 'cols' and 'rows' are for a %s only",
                              w.r.pty ? "10000" : "pty");
        else
                k = proto_env_from_json(w.env, &w.r.env, err);
        if (k < 0) {
                json_dispatch_done(session_open_table, &w);
                return k;
        }
        *ret = w.r;
        return 0;
}

void protocol_session_open_request_done(ProtocolSessionOpenRequest *r) {
        if (!r)
                return;
        free(r->argv);
        strv_free(r->env);
        r->argv = r->env = NULL;
}

#define SESSION_FIELD { "session", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, session), REQUIRED }

static const JsonField session_input_table[] = {
        HEAD_FIELDS,
        SESSION_FIELD,
        { "eof", JSON_FIELD_BOOL, offsetof(ProtocolSessionRequest, eof), OPT },
        {}
};

static const JsonField session_resize_table[] = {
        HEAD_FIELDS,
        SESSION_FIELD,
        WINSIZE("cols", ProtocolSessionRequest, cols, REQUIRED),
        WINSIZE("rows", ProtocolSessionRequest, rows, REQUIRED),
        {}
};

static const JsonField session_signal_table[] = {
        HEAD_FIELDS,
        SESSION_FIELD,
        { "signal", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, signal), REQUIRED, .min = 1, .max = 64 },
        {}
};

static const JsonField session_pause_table[] = {
        HEAD_FIELDS,
        SESSION_FIELD,
        { "paused", JSON_FIELD_BOOL, offsetof(ProtocolSessionRequest, paused), REQUIRED },
        {}
};

static const JsonField *session_table(ProtocolOp op) {
        switch (op) {
        case PROTOCOL_OP_SESSION_INPUT:
                return session_input_table;
        case PROTOCOL_OP_SESSION_RESIZE:
                return session_resize_table;
        case PROTOCOL_OP_SESSION_SIGNAL:
                return session_signal_table;
        case PROTOCOL_OP_SESSION_PAUSE:
                return session_pause_table;
        default:
                return NULL;
        }
}

int protocol_encode_session_request(StrBuf *out, uint64_t id, ProtocolOp op, const ProtocolSessionRequest *r,
                                    const void *data, size_t len) {
        const JsonField *t = session_table(op);
        if (!t)
                return -EINVAL;
        bool input = op == PROTOCOL_OP_SESSION_INPUT && len > 0;
        return proto_encode(out, request_new(id, op), t, r, input ? data : NULL, input ? len : 0);
}

int protocol_decode_session_request(json_t *obj, ProtocolSessionRequest *ret, VsError **err) {
        ProtocolSessionRequest r = {};
        int k = protocol_decode_request_head(obj, &r.head, err);
        if (k < 0)
                return k;
        const JsonField *t = session_table(r.head.op);
        if (!t)
                return proto_bad(err, "expected a session op, not '%s'", protocol_op_to_string(r.head.op));
        k = json_dispatch(obj, t, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}
