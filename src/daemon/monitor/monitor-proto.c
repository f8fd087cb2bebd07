/* SPDX-License-Identifier: MIT */
#include "monitor-proto.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host-make.h"
#include "macro.h"

/* ------------------------------------------------------------ the tables */

/* What the monitor answers in each state: after hello, everything but
 * hello; once stopping, only what ends things or reports them. */
static const bool allowed[_MONITOR_STATE_MAX][_MONITOR_REQ_MAX] = {
        [MONITOR_STATE_HELLO] = { [MONITOR_REQ_HELLO] = true },
        [MONITOR_STATE_READY] = {
                [MONITOR_REQ_WS_OPEN] = true, [MONITOR_REQ_WS_CLOSE] = true,
                [MONITOR_REQ_CGROUP_MAKE] = true, [MONITOR_REQ_JAIL_SPAWN] = true,
                [MONITOR_REQ_JAIL_KILL] = true, [MONITOR_REQ_APPROVAL_WRITE] = true,
                [MONITOR_REQ_PLACEHOLDER] = true, [MONITOR_REQ_STATUS] = true,
                [MONITOR_REQ_SHUTDOWN] = true, [MONITOR_REQ_LOG_REOPEN] = true,
                [MONITOR_REQ_WS_VIEW] = true, [MONITOR_REQ_QUARANTINE] = true,
                [MONITOR_REQ_GIT_IDENTITY] = true,
        },
        [MONITOR_STATE_STOPPING] = {
                [MONITOR_REQ_WS_CLOSE] = true, [MONITOR_REQ_JAIL_KILL] = true,
                [MONITOR_REQ_STATUS] = true, [MONITOR_REQ_SHUTDOWN] = true,
        },
};

bool monitor_req_allowed(MonitorState s, MonitorReq t) {
        if ((int)s < 0 || s >= _MONITOR_STATE_MAX || t <= 0 || t >= _MONITOR_REQ_MAX)
                return false;
        return allowed[s][t];
}

static const char *const req_names[_MONITOR_REQ_MAX] = {
        [MONITOR_REQ_HELLO] = "hello",
        [MONITOR_REQ_WS_OPEN] = "ws_open",
        [MONITOR_REQ_WS_CLOSE] = "ws_close",
        [MONITOR_REQ_CGROUP_MAKE] = "cgroup_make",
        [MONITOR_REQ_JAIL_SPAWN] = "jail_spawn",
        [MONITOR_REQ_JAIL_KILL] = "jail_kill",
        [MONITOR_REQ_APPROVAL_WRITE] = "approval_write",
        [MONITOR_REQ_PLACEHOLDER] = "placeholder",
        [MONITOR_REQ_STATUS] = "status",
        [MONITOR_REQ_SHUTDOWN] = "shutdown",
        [MONITOR_REQ_LOG_REOPEN] = "log_reopen",
        [MONITOR_REQ_WS_VIEW] = "ws_view",
        [MONITOR_REQ_QUARANTINE] = "quarantine",
        [MONITOR_REQ_GIT_IDENTITY] = "git_identity",
};

const char *monitor_req_to_string(MonitorReq t) {
        return t > 0 && t < _MONITOR_REQ_MAX ? req_names[t] : NULL;
}

typedef enum Kind {
        KIND_U64,   /* 8 bytes; lo..hi the value's range */
        KIND_STR,   /* bytes, one NUL at the end; lo..hi the length without it */
        KIND_ENV,   /* a string NAME=value, NAME not empty */
        KIND_PATH,  /* a string: /, or / and normal components */
        KIND_REL,   /* a string: normal components, no leading / */
        KIND_BYTES, /* lo..hi the length */
        KIND_GROUP, /* fields of sub, to the group's end */
} Kind;

typedef struct FieldSpec {
        MonitorTag tag; /* 0 ends a schema */
        Kind kind;
        uint16_t min, max; /* how many times it comes */
        uint64_t lo, hi;
        const struct FieldSpec *sub;
} FieldSpec;

#define ID_MAX 0xfffffffeULL  /* (uid_t)-1 means "unchanged" to the kernel */
#define PATH_LEN 4095
#define ONE(t, k, l, h) { .tag = (t), .kind = (k), .min = 1, .max = 1, .lo = (l), .hi = (h) }
#define OPT(t, k, l, h) { .tag = (t), .kind = (k), .min = 0, .max = 1, .lo = (l), .hi = (h) }
#define WS ONE(MONITOR_F_WS, KIND_U64, 1, UINT64_MAX)
#define GEN ONE(MONITOR_F_GEN, KIND_U64, 1, UINT64_MAX)

static const FieldSpec hello[] = { ONE(MONITOR_F_VERSION, KIND_U64, 1, 1), {} };
static const FieldSpec ws_open[] = {
        ONE(MONITOR_F_PATH, KIND_PATH, 1, PATH_LEN),
        ONE(MONITOR_F_UID, KIND_U64, 0, ID_MAX),
        ONE(MONITOR_F_GID, KIND_U64, 0, ID_MAX),
        {},
};
static const FieldSpec ws_only[] = { WS, {} };
static const FieldSpec ws_gen[] = { WS, GEN, {} };
static const FieldSpec cgroup_make[] = {
        WS,
        OPT(MONITOR_F_MEMORY_MAX, KIND_U64, MONITOR_MEMORY_MIN, MONITOR_MEMORY_MAX),
        OPT(MONITOR_F_PIDS_MAX, KIND_U64, 1, MONITOR_PIDS_MAX),
        {},
};
static const FieldSpec mount[] = {
        ONE(MONITOR_F_KIND, KIND_U64, 0, _MONITOR_MOUNT_MAX - 1),
        OPT(MONITOR_F_PATH, KIND_PATH, 1, PATH_LEN),
        OPT(MONITOR_F_REL, KIND_REL, 1, PATH_LEN),
        ONE(MONITOR_F_DST, KIND_PATH, 1, PATH_LEN),
        {},
};
static const FieldSpec jail_spawn[] = {
        WS, GEN,
        ONE(MONITOR_F_UID, KIND_U64, 1, ID_MAX), /* never 0 */
        ONE(MONITOR_F_GID, KIND_U64, 1, ID_MAX),
        ONE(MONITOR_F_FLAGS, KIND_U64, 0, _MONITOR_SPAWN_ALL),
        { .tag = MONITOR_F_MOUNT, .kind = KIND_GROUP, .min = 0, .max = MONITOR_MOUNTS_MAX, .sub = mount },
        { .tag = MONITOR_F_ENV, .kind = KIND_ENV, .min = 0, .max = 64, .lo = 2, .hi = 4096 },
        {},
};
static const FieldSpec approval_write[] = { WS, ONE(MONITOR_F_RECORD, KIND_BYTES, 1, 60000), {} };
static const FieldSpec item[] = {
        ONE(MONITOR_F_REL, KIND_REL, 1, PATH_LEN),
        ONE(MONITOR_F_FLAGS, KIND_U64, 0, _VS_HOST_MAKE_ALL),
        OPT(MONITOR_F_TEXT, KIND_U64, 0, _VS_HOST_TEXT_MAX - 1),
        {},
};
static const FieldSpec placeholder[] = {
        WS,
        { .tag = MONITOR_F_ITEM, .kind = KIND_GROUP, .min = 1, .max = MONITOR_ITEMS_MAX, .sub = item },
        {},
};
static const FieldSpec quarantine[] = {
        WS,
        ONE(MONITOR_F_REL, KIND_REL, 1, PATH_LEN),
        ONE(MONITOR_F_DEV, KIND_U64, 0, UINT64_MAX),
        ONE(MONITOR_F_INO, KIND_U64, 1, UINT64_MAX),
        {},
};
static const FieldSpec none[] = { {} };

static const FieldSpec *const requests[_MONITOR_REQ_MAX] = {
        [MONITOR_REQ_HELLO] = hello,
        [MONITOR_REQ_WS_OPEN] = ws_open,
        [MONITOR_REQ_WS_CLOSE] = ws_only,
        [MONITOR_REQ_CGROUP_MAKE] = cgroup_make,
        [MONITOR_REQ_JAIL_SPAWN] = jail_spawn,
        [MONITOR_REQ_JAIL_KILL] = ws_gen,
        [MONITOR_REQ_APPROVAL_WRITE] = approval_write,
        [MONITOR_REQ_PLACEHOLDER] = placeholder,
        [MONITOR_REQ_STATUS] = none,
        [MONITOR_REQ_SHUTDOWN] = none,
        [MONITOR_REQ_LOG_REOPEN] = none,
        [MONITOR_REQ_WS_VIEW] = ws_only,
        [MONITOR_REQ_QUARANTINE] = quarantine,
        [MONITOR_REQ_GIT_IDENTITY] = ws_only,
};

/* Every reply: a status, and what the request it answers gives back. */
static const FieldSpec reply[] = {
        ONE(MONITOR_F_STATUS, KIND_U64, 0, 4095),
        OPT(MONITOR_F_MESSAGE, KIND_STR, 0, 1024),
        OPT(MONITOR_F_WS, KIND_U64, 1, UINT64_MAX),
        OPT(MONITOR_F_GEN, KIND_U64, 1, UINT64_MAX),
        OPT(MONITOR_F_PID, KIND_U64, 1, 4194304),
        { .tag = MONITOR_F_COUNT, .kind = KIND_U64, .min = 0, .max = 8, .lo = 0, .hi = UINT64_MAX },
        OPT(MONITOR_F_STEP, KIND_U64, 1, 64),
        OPT(MONITOR_F_NAME, KIND_STR, 1, MONITOR_IDENT_MAX),
        OPT(MONITOR_F_EMAIL, KIND_STR, 1, MONITOR_IDENT_MAX),
        {},
};

/* ------------------------------------------------------------ decoding */

static uint16_t get16(const uint8_t *p) {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return le16toh(v);
}

static uint32_t get32(const uint8_t *p) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return le32toh(v);
}

static uint64_t get64(const uint8_t *p) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return le64toh(v);
}

/* Components between slashes: none empty, "." or "..". */
static bool normal_components(const char *s, size_t n) {
        size_t start = 0;
        for (size_t i = 0; i <= n; i++) {
                if (i < n && s[i] != '/')
                        continue;
                size_t len = i - start;
                if (len == 0 || (len == 1 && s[start] == '.') || (len == 2 && s[start] == '.' && s[start + 1] == '.'))
                        return false;
                start = i + 1;
        }
        return true;
}

/* Whether f's bytes are what spec's kind allows; why not in *why. */
static bool value_ok(const FieldSpec *spec, MonitorField *f, const char **why) {
        const char *s = (const char *)f->data;
        size_t len = f->len ? f->len - 1 : 0; /* a string's, without its NUL */
        switch (spec->kind) {
        case KIND_U64:
                if (f->len != 8)
                        return *why = "not 8 bytes", false;
                f->u64 = get64(f->data);
                if (f->u64 < spec->lo || f->u64 > spec->hi)
                        return *why = "out of range", false;
                return true;
        case KIND_BYTES:
                if (f->len < spec->lo || f->len > spec->hi)
                        return *why = "length out of range", false;
                return true;
        case KIND_GROUP:
                return true; /* its members are checked one by one */
        case KIND_STR:
        case KIND_ENV:
        case KIND_PATH:
        case KIND_REL:
                break;
        }
        if (f->len == 0 || s[f->len - 1] != '\0' || memchr(s, '\0', len))
                return *why = "not a string (one NUL, at its end)", false;
        if (len < spec->lo || len > spec->hi)
                return *why = "length out of range", false;
        switch (spec->kind) {
        case KIND_ENV: {
                const char *eq = memchr(s, '=', len);
                if (!eq || eq == s)
                        return *why = "not NAME=value", false;
                return true;
        }
        case KIND_PATH:
                if (s[0] != '/')
                        return *why = "not an absolute path", false;
                if (len > 1 && !normal_components(s + 1, len - 1))
                        return *why = "not a normal path (an empty, . or .. component)", false;
                return true;
        case KIND_REL:
                if (s[0] == '/' || !normal_components(s, len))
                        return *why = "not a normal relative path", false;
                return true;
        default:
                return true;
        }
}

/* -EBADMSG, with what was wrong, in which field (tag 0: none) and why. */
static int bad(VsError **err, const MonitorMsg *m, const char *what, unsigned tag, const char *why) {
        char at[32] = "";
        if (tag)
                snprintf(at, sizeof at, " (tag %u)", tag);
        return vs_error_set_kind(err, -EBADMSG, "bad_request", "monitor message %u (%s): %s%s%s%s", m->type,
                                 monitor_req_to_string(m->type & ~MONITOR_REPLY) ?: "?", what, at, why ? ": " : "",
                                 why ? why : "");
}

/* The fields from p to end against schema, in the group at parent (-1:
 * the top level); *ret_count the number at this level. */
static int decode_fields(MonitorMsg *m, const uint8_t *p, const uint8_t *end, const FieldSpec *schema, int parent,
                         size_t *ret_count, VsError **err) {
        uint16_t seen[16] = {};
        size_t count = 0;
        while (p < end) {
                if ((size_t)(end - p) < 8)
                        return bad(err, m, "a field header past the end", 0, NULL);
                uint16_t tag = get16(p);
                uint32_t len = get32(p + 4);
                if (get16(p + 2) != 0)
                        return bad(err, m, "a field's reserved bytes are not zero", tag, NULL);
                if (len > (size_t)(end - p) - 8)
                        return bad(err, m, "a field longer than the message", tag, NULL);
                size_t k = 0;
                while (schema[k].tag && schema[k].tag != tag)
                        k++;
                if (!schema[k].tag)
                        return bad(err, m, "a field this request does not take", tag, NULL);
                if (k >= ELEMENTSOF(seen) || ++seen[k] > schema[k].max)
                        return bad(err, m, "a field given too often", tag, NULL);
                if (m->n_fields >= MONITOR_FIELDS_MAX)
                        return bad(err, m, "too many fields", 0, NULL);
                size_t at = m->n_fields++;
                MonitorField *f = &m->fields[at];
                *f = (MonitorField){ .tag = tag, .parent = (int16_t)parent, .len = len, .data = p + 8 };
                const char *why = NULL;
                if (!value_ok(&schema[k], f, &why))
                        return bad(err, m, "a field's value", tag, why);
                if (schema[k].kind == KIND_GROUP) {
                        size_t members;
                        if (parent >= 0)
                                return bad(err, m, "a group in a group", tag, NULL);
                        int r = decode_fields(m, f->data, f->data + len, schema[k].sub, (int)at, &members, err);
                        if (r < 0)
                                return r;
                }
                p += 8 + (size_t)len;
                count++;
        }
        for (size_t k = 0; schema[k].tag; k++)
                if (seen[k] < schema[k].min)
                        return bad(err, m, "a field missing", schema[k].tag, NULL);
        *ret_count = count;
        return 0;
}

/* What the schema cannot say: a mount's source is the one its kind takes. */
static int check_mounts(MonitorMsg *m, VsError **err) {
        for (int i = monitor_next(m, MONITOR_F_MOUNT, -1); i >= 0; i = monitor_next(m, MONITOR_F_MOUNT, i)) {
                uint64_t kind = monitor_field(m, MONITOR_F_KIND, i)->u64;
                bool path = monitor_field(m, MONITOR_F_PATH, i) != NULL, rel = monitor_field(m, MONITOR_F_REL, i) != NULL;
                bool ok = kind == MONITOR_MOUNT_RO    ? path != rel
                          : kind == MONITOR_MOUNT_RW  ? !path /* no rel: the workspace itself */
                                                      : !path && !rel;
                if (!ok)
                        return bad(err, m, "a mount whose source does not fit its kind", MONITOR_F_MOUNT, NULL);
        }
        return 0;
}

int monitor_decode(const void *buf, size_t n, bool is_reply, MonitorMsg *ret, VsError **err) {
        const uint8_t *p = buf;
        ret->n_fields = 0;
        ret->type = 0;
        if (n < 16 || n > MONITOR_MSG_MAX)
                return bad(err, ret, "a message of a size no message has", 0, NULL);
        if (get32(p) != MONITOR_MAGIC)
                return bad(err, ret, "not a monitor message (magic)", 0, NULL);
        ret->type = get16(p + 4);
        ret->id = get64(p + 8);
        unsigned base = ret->type & ~MONITOR_REPLY;
        if (!!(ret->type & MONITOR_REPLY) != is_reply || base == 0 || base >= _MONITOR_REQ_MAX)
                return bad(err, ret, is_reply ? "not a reply" : "not a request", 0, NULL);
        size_t count;
        int r = decode_fields(ret, p + 16, p + n, is_reply ? reply : requests[base], -1, &count, err);
        if (r < 0)
                return r;
        if (count != get16(p + 6))
                return bad(err, ret, "a field count that is not the fields'", 0, NULL);
        if (!is_reply && base == MONITOR_REQ_JAIL_SPAWN)
                return check_mounts(ret, err);
        return 0;
}

const MonitorField *monitor_field(const MonitorMsg *m, MonitorTag tag, int parent) {
        for (size_t i = parent < 0 ? 0 : (size_t)parent + 1; i < m->n_fields; i++) {
                if (parent >= 0 && m->fields[i].parent != parent)
                        break; /* a group's members follow it */
                if (m->fields[i].tag == tag && m->fields[i].parent == parent)
                        return &m->fields[i];
        }
        return NULL;
}

int monitor_next(const MonitorMsg *m, MonitorTag tag, int after) {
        for (size_t i = after < 0 ? 0 : (size_t)after + 1; i < m->n_fields; i++)
                if (m->fields[i].tag == tag && m->fields[i].parent < 0)
                        return (int)i;
        return -1;
}

/* ------------------------------------------------------------ encoding */

static void put(MonitorEnc *e, const void *p, size_t n) {
        if (e->error >= 0)
                e->error = strbuf_append(&e->buf, p, n);
}

static void patch16(MonitorEnc *e, size_t at, uint16_t v) {
        v = htole16(v);
        if (e->error >= 0)
                memcpy(e->buf.data + at, &v, sizeof v);
}

static void patch32(MonitorEnc *e, size_t at, uint32_t v) {
        v = htole32(v);
        if (e->error >= 0)
                memcpy(e->buf.data + at, &v, sizeof v);
}

void monitor_enc_begin(MonitorEnc *e, uint16_t type, uint64_t id) {
        *e = (MonitorEnc){ .buf = { .max = MONITOR_MSG_MAX } };
        uint32_t magic = htole32(MONITOR_MAGIC);
        uint16_t t = htole16(type), zero = 0;
        uint64_t i = htole64(id);
        put(e, &magic, 4);
        put(e, &t, 2);
        put(e, &zero, 2);
        put(e, &i, 8);
}

static void field_header(MonitorEnc *e, MonitorTag tag, size_t len) {
        if (e->error >= 0 && (++e->n_fields > MONITOR_FIELDS_MAX || len > MONITOR_MSG_MAX))
                e->error = -ENOBUFS;
        if (!e->group_at)
                e->top_fields++;
        uint16_t t = htole16((uint16_t)tag), zero = 0;
        uint32_t l = htole32((uint32_t)len);
        put(e, &t, 2);
        put(e, &zero, 2);
        put(e, &l, 4);
}

void monitor_put_u64(MonitorEnc *e, MonitorTag tag, uint64_t v) {
        v = htole64(v);
        field_header(e, tag, 8);
        put(e, &v, 8);
}

void monitor_put_str(MonitorEnc *e, MonitorTag tag, const char *s) {
        size_t n = strlen(s) + 1;
        field_header(e, tag, n);
        put(e, s, n);
}

void monitor_put_bytes(MonitorEnc *e, MonitorTag tag, const void *p, size_t n) {
        field_header(e, tag, n);
        put(e, p, n);
}

void monitor_group_begin(MonitorEnc *e, MonitorTag tag) {
        if (e->group_at && e->error >= 0)
                e->error = -EINVAL; /* one level */
        size_t at = e->buf.len;
        field_header(e, tag, 0);
        e->group_at = at;
}

void monitor_group_end(MonitorEnc *e) {
        if (!e->group_at) {
                if (e->error >= 0)
                        e->error = -EINVAL;
                return;
        }
        patch32(e, e->group_at + 4, (uint32_t)(e->buf.len - e->group_at - 8));
        e->group_at = 0;
}

void monitor_put_item(MonitorEnc *e, const char *rel, unsigned flags, int text) {
        monitor_group_begin(e, MONITOR_F_ITEM);
        monitor_put_str(e, MONITOR_F_REL, rel);
        monitor_put_u64(e, MONITOR_F_FLAGS, flags);
        if (text >= 0)
                monitor_put_u64(e, MONITOR_F_TEXT, (uint64_t)text);
        monitor_group_end(e);
}

int monitor_enc_end(MonitorEnc *e) {
        if (e->group_at && e->error >= 0)
                e->error = -EINVAL;
        if (e->top_fields > UINT16_MAX && e->error >= 0)
                e->error = -ENOBUFS;
        patch16(e, 6, (uint16_t)e->top_fields);
        return e->error;
}

void monitor_enc_done(MonitorEnc *e) {
        strbuf_done(&e->buf);
}
