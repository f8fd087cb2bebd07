/* SPDX-License-Identifier: MIT */
/* glob and grep: their requests and replies (protocol.h). A reply comes
 * from inside the jail: each result item is checked against its table. */
#include <string.h>

#include "macro.h"
#include "protocol-internal.h"

#define OPT JSON_FIELD_OMIT_EMPTY
#define REQUIRED JSON_FIELD_REQUIRED

static const JsonField glob_table[] = {
        HEAD_FIELDS,
        { "path", JSON_FIELD_STRING, offsetof(ProtocolFindRequest, path), REQUIRED | JSON_FIELD_NONEMPTY },
        { "pattern", JSON_FIELD_STRING, offsetof(ProtocolFindRequest, pattern), REQUIRED | JSON_FIELD_NONEMPTY },
        { "max_results", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, max_results), OPT },
        { "max_files", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, max_files), OPT },
        { "deadline_ms", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, deadline_ms), OPT },
        {}
};

static const JsonField grep_table[] = {
        HEAD_FIELDS,
        { "path", JSON_FIELD_STRING, offsetof(ProtocolFindRequest, path), REQUIRED | JSON_FIELD_NONEMPTY },
        { "pattern", JSON_FIELD_STRING, offsetof(ProtocolFindRequest, pattern), REQUIRED | JSON_FIELD_NONEMPTY },
        { "glob", JSON_FIELD_STRING_OR_NULL, offsetof(ProtocolFindRequest, glob), OPT },
        { "fixed", JSON_FIELD_BOOL, offsetof(ProtocolFindRequest, fixed), OPT },
        { "ignore_case", JSON_FIELD_BOOL, offsetof(ProtocolFindRequest, ignore_case), OPT },
        { "context", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, context), OPT },
        { "max_results", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, max_results), OPT },
        { "max_files", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, max_files), OPT },
        { "max_bytes", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, max_bytes), OPT },
        { "deadline_ms", JSON_FIELD_UINT64, offsetof(ProtocolFindRequest, deadline_ms), OPT },
        {}
};

static const JsonField *request_table(ProtocolOp op) {
        return op == PROTOCOL_OP_GLOB ? glob_table : op == PROTOCOL_OP_GREP ? grep_table : NULL;
}

int protocol_decode_find_request(json_t *obj, ProtocolFindRequest *ret, VsError **err) {
        ProtocolFindRequest r = {};
        int k = protocol_decode_request_head(obj, &r.head, err);
        if (k < 0)
                return k;
        const JsonField *t = request_table(r.head.op);
        if (!t)
                return proto_bad(err, "expected op '%s'", "glob\" or \"grep");
        k = json_dispatch(obj, t, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

int protocol_encode_find_request(StrBuf *out, uint64_t id, const ProtocolFindRequest *r) {
        const JsonField *t = request_table(r->head.op);
        if (!t)
                return -EINVAL;
        return proto_encode(out, json_pack("{s:I, s:s}", "id", (json_int_t)id, "op", protocol_op_to_string(r->head.op)),
                            t, r, NULL, 0);
}

/* ---- the reply ---- */

static const JsonField reply_table[] = {
        REPLY_FIELDS,
        { "results", JSON_FIELD_IGNORE, 0, REQUIRED }, /* an array, checked item by item */
        { "files", JSON_FIELD_UINT64, offsetof(ProtocolFindReply, files), 0 },
        { "matches", JSON_FIELD_UINT64, offsetof(ProtocolFindReply, matches), OPT },
        { "files_matched", JSON_FIELD_UINT64, offsetof(ProtocolFindReply, files_matched), OPT },
        { "skipped", JSON_FIELD_UINT64, offsetof(ProtocolFindReply, skipped), OPT },
        { "limit", JSON_FIELD_STRING_OR_NULL, offsetof(ProtocolFindReply, limit), OPT },
        {}
};

typedef struct ItemWire {
        const char *path, *type, *text;
        uint64_t size, line;
        bool match;
} ItemWire;

static const JsonField glob_item_table[] = {
        { "path", JSON_FIELD_STRING, offsetof(ItemWire, path), REQUIRED | JSON_FIELD_NONEMPTY },
        { "type", JSON_FIELD_STRING, offsetof(ItemWire, type), REQUIRED },
        { "size", JSON_FIELD_UINT64, offsetof(ItemWire, size), 0 },
        {}
};

static const JsonField grep_item_table[] = {
        { "path", JSON_FIELD_STRING, offsetof(ItemWire, path), REQUIRED | JSON_FIELD_NONEMPTY },
        { "line", JSON_FIELD_UINT64, offsetof(ItemWire, line), REQUIRED },
        { "text", JSON_FIELD_STRING, offsetof(ItemWire, text), REQUIRED },
        { "match", JSON_FIELD_BOOL, offsetof(ItemWire, match), REQUIRED },
        {}
};

static const char *const limit_names[] = { "max_results", "max_files", "max_bytes", "deadline", "reply_size" };

int protocol_encode_find_reply(StrBuf *out, uint64_t id, const ProtocolFindReply *r) {
        if (!json_is_array(r->results))
                return -EINVAL;
        return proto_encode(out, json_pack("{s:I, s:b, s:O}", "id", (json_int_t)id, "ok", 1, "results", r->results),
                            reply_table, r, NULL, 0);
}

int protocol_decode_find_reply(json_t *obj, ProtocolOp op, ProtocolFindReply *ret, VsError **err) {
        ProtocolFindReply r = {};
        int k = proto_decode_ok_reply(obj, reply_table, &r, err);
        if (k < 0)
                return k;
        r.results = json_object_get(obj, "results");
        if (!json_is_array(r.results))
                return proto_bad(err, "field '%s' must be an array", "results");
        const JsonField *items = op == PROTOCOL_OP_GLOB ? glob_item_table : op == PROTOCOL_OP_GREP ? grep_item_table : NULL;
        if (!items)
                return proto_bad(err, "not a find op: %s", protocol_op_to_string(op) ?: "?");
        size_t i;
        json_t *v;
        json_array_foreach(r.results, i, v) {
                ItemWire w = {};
                if ((k = json_dispatch(v, items, &w, err)) < 0)
                        return vs_error_prefix(err, "results[%zu]", i);
                if (w.type && protocol_file_type_from_string(w.type) < 0)
                        return proto_bad(err, "unknown file type '%.32s'", w.type);
        }
        bool known = !r.limit;
        for (size_t j = 0; !known && j < ELEMENTSOF(limit_names); j++)
                known = streq(r.limit, limit_names[j]);
        if (!known)
                return proto_bad(err, "unknown limit '%.32s'", r.limit);
        *ret = r;
        return 0;
}
