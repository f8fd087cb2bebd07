/* SPDX-License-Identifier: MIT */
#include "protocol.h"

#include <string.h>
#include <sys/stat.h>

#include "base64.h"
#include "jsonl.h"
#include "macro.h"
#include "protocol-internal.h"
#include "strv.h"

/* ---- names ---- */

static const char *const op_names[_PROTOCOL_OP_MAX] = {
        [PROTOCOL_OP_INIT] = "init",
        [PROTOCOL_OP_EXEC] = "exec",
        [PROTOCOL_OP_READ_FILE] = "read_file",
        [PROTOCOL_OP_WRITE_FILE] = "write_file",
        [PROTOCOL_OP_STAT] = "stat",
        [PROTOCOL_OP_LIST_DIR] = "list_dir",
        [PROTOCOL_OP_CANCEL] = "cancel",
        [PROTOCOL_OP_SHUTDOWN] = "shutdown",
        [PROTOCOL_OP_SESSION_OPEN] = "session_open",
        [PROTOCOL_OP_SESSION_INPUT] = "session_input",
        [PROTOCOL_OP_SESSION_RESIZE] = "session_resize",
        [PROTOCOL_OP_SESSION_SIGNAL] = "session_signal",
        [PROTOCOL_OP_SESSION_PAUSE] = "session_pause",
        [PROTOCOL_OP_GLOB] = "glob",
        [PROTOCOL_OP_GREP] = "grep",
};

const char *protocol_op_to_string(ProtocolOp op) {
        return op >= 0 && op < _PROTOCOL_OP_MAX ? op_names[op] : NULL;
}

ProtocolOp protocol_op_from_string(const char *s) {
        if (!s)
                return _PROTOCOL_OP_INVALID;
        /* init is a message type, never an "op". */
        for (int i = PROTOCOL_OP_INIT + 1; i < _PROTOCOL_OP_MAX; i++)
                if (streq(op_names[i], s))
                        return (ProtocolOp) i;
        return _PROTOCOL_OP_INVALID;
}

static const char *const state_names[_PROTOCOL_STATE_MAX] = {
        [PROTOCOL_STATE_HELLO_SENT] = "hello_sent",
        [PROTOCOL_STATE_READY] = "ready",
};

const char *protocol_state_to_string(ProtocolState s) {
        return s >= 0 && s < _PROTOCOL_STATE_MAX ? state_names[s] : NULL;
}

/* What the less-trusted side may ask, per state (OpenSSH monitor.c style).
 * Before init nothing runs: the jail is not yet hardened. */
static const bool allowlist[_PROTOCOL_STATE_MAX][_PROTOCOL_OP_MAX] = {
        [PROTOCOL_STATE_HELLO_SENT] = {
                [PROTOCOL_OP_INIT] = true,
        },
        [PROTOCOL_STATE_READY] = {
                [PROTOCOL_OP_EXEC] = true,
                [PROTOCOL_OP_READ_FILE] = true,
                [PROTOCOL_OP_WRITE_FILE] = true,
                [PROTOCOL_OP_STAT] = true,
                [PROTOCOL_OP_LIST_DIR] = true,
                [PROTOCOL_OP_CANCEL] = true,
                [PROTOCOL_OP_SHUTDOWN] = true,
                [PROTOCOL_OP_SESSION_OPEN] = true,
                [PROTOCOL_OP_SESSION_INPUT] = true,
                [PROTOCOL_OP_SESSION_RESIZE] = true,
                [PROTOCOL_OP_SESSION_SIGNAL] = true,
                [PROTOCOL_OP_SESSION_PAUSE] = true,
                [PROTOCOL_OP_GLOB] = true,
                [PROTOCOL_OP_GREP] = true,
        },
};

bool protocol_op_allowed(ProtocolState s, ProtocolOp op) {
        if (s < 0 || s >= _PROTOCOL_STATE_MAX || op < 0 || op >= _PROTOCOL_OP_MAX)
                return false;
        return allowlist[s][op];
}

static const char *const error_names[_PROTOCOL_ERROR_MAX] = {
        [PROTOCOL_ERROR_BAD_REQUEST] = "bad_request",
        [PROTOCOL_ERROR_UNKNOWN_OP] = "unknown_op",
        [PROTOCOL_ERROR_NOT_READY] = "not_ready",
        [PROTOCOL_ERROR_DENIED] = "denied",
        [PROTOCOL_ERROR_NOT_FOUND] = "not_found",
        [PROTOCOL_ERROR_EXISTS] = "exists",
        [PROTOCOL_ERROR_PRECONDITION_FAILED] = "precondition_failed",
        [PROTOCOL_ERROR_TOO_LARGE] = "too_large",
        [PROTOCOL_ERROR_IO] = "io",
        [PROTOCOL_ERROR_CANCELLED] = "cancelled",
        [PROTOCOL_ERROR_PROCESS_LIMIT] = "process_limit",
};

const char *protocol_error_code_to_string(ProtocolErrorCode c) {
        return c >= 0 && c < _PROTOCOL_ERROR_MAX ? error_names[c] : NULL;
}

ProtocolErrorCode protocol_error_code_from_string(const char *s) {
        if (!s)
                return _PROTOCOL_ERROR_INVALID;
        for (int i = 0; i < _PROTOCOL_ERROR_MAX; i++)
                if (streq(error_names[i], s))
                        return (ProtocolErrorCode) i;
        return _PROTOCOL_ERROR_INVALID;
}

ProtocolErrorCode protocol_error_code_from_error(int code, const VsError *err) {
        if (err && err->kind) {
                ProtocolErrorCode c = protocol_error_code_from_string(err->kind);
                if (c >= 0)
                        return c;
        }
        switch (code) {
        case -ENOENT:
        case -ENOTDIR:
                return PROTOCOL_ERROR_NOT_FOUND;
        case -EEXIST:
                return PROTOCOL_ERROR_EXISTS;
        case -EFBIG:
        case -EMSGSIZE:
        case -E2BIG:
                return PROTOCOL_ERROR_TOO_LARGE;
        case -ECANCELED:
                return PROTOCOL_ERROR_CANCELLED;
        case -EINVAL:
                return PROTOCOL_ERROR_BAD_REQUEST;
        default:
                return PROTOCOL_ERROR_IO;
        }
}

static const char *const file_type_names[_PROTOCOL_FILE_MAX] = {
        [PROTOCOL_FILE_FILE] = "file",
        [PROTOCOL_FILE_DIR] = "dir",
        [PROTOCOL_FILE_SYMLINK] = "symlink",
        [PROTOCOL_FILE_OTHER] = "other",
};

const char *protocol_file_type_to_string(ProtocolFileType t) {
        return t >= 0 && t < _PROTOCOL_FILE_MAX ? file_type_names[t] : NULL;
}

ProtocolFileType protocol_file_type_from_string(const char *s) {
        if (!s)
                return _PROTOCOL_FILE_INVALID;
        for (int i = 0; i < _PROTOCOL_FILE_MAX; i++)
                if (streq(file_type_names[i], s))
                        return (ProtocolFileType) i;
        return _PROTOCOL_FILE_INVALID;
}

ProtocolFileType protocol_file_type_from_mode(unsigned mode) {
        if (S_ISREG(mode))
                return PROTOCOL_FILE_FILE;
        if (S_ISDIR(mode))
                return PROTOCOL_FILE_DIR;
        if (S_ISLNK(mode))
                return PROTOCOL_FILE_SYMLINK;
        return PROTOCOL_FILE_OTHER;
}

static const char *const mode_names[_PROTOCOL_MODE_MAX] = {
        [PROTOCOL_MODE_JAIL] = "jail",
        [PROTOCOL_MODE_DIRECT] = "direct",
};

const char *protocol_mode_to_string(ProtocolMode m) {
        return m >= 0 && m < _PROTOCOL_MODE_MAX ? mode_names[m] : NULL;
}

ProtocolMode protocol_mode_from_string(const char *s) {
        if (!s)
                return _PROTOCOL_MODE_INVALID;
        for (int i = 0; i < _PROTOCOL_MODE_MAX; i++)
                if (streq(mode_names[i], s))
                        return (ProtocolMode) i;
        return _PROTOCOL_MODE_INVALID;
}

static const char *const layer_names[] = { "no_new_privs", "seccomp", "landlock" };

/* ---- helpers ---- */

int proto_bad(VsError **err, const char *fmt, const char *arg) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        return vs_error_set_kind(err, -EINVAL, "bad_request", fmt, arg);
#pragma GCC diagnostic pop
}

int proto_encode(StrBuf *out, json_t *base, const JsonField table[], const void *src, const void *raw,
                 size_t raw_len) {
        if (!base)
                return -ENOMEM;
        int k = table ? json_build(base, table, src) : 0;
        if (k >= 0)
                k = jsonl_encode(base, raw, raw_len, out);
        json_decref(base);
        return k;
}

json_t *proto_env_to_json(char *const *env) {
        json_t *o = json_object();
        if (!o)
                return NULL;
        for (char *const *e = env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq || eq == *e)
                        continue;
                json_t *v = json_string(eq + 1);
                if (!v || json_object_setn_new(o, *e, (size_t) (eq - *e), v) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        return o;
}

int proto_env_from_json(json_t *o, char ***ret, VsError **err) {
        _cleanup_strv_free_ char **l = NULL;
        const char *k;
        json_t *v;

        if (!o) {
                *ret = NULL;
                return 0;
        }
        json_object_foreach(o, k, v) {
                if (!*k || strchr(k, '='))
                        return proto_bad(err, "env key '%.64s' is empty or contains '='", k);
                if (strv_extendf(&l, "%s=%s", k, json_string_value(v)) < 0)
                        return vs_error_set(err, -ENOMEM, "out of memory");
        }
        *ret = TAKE_PTR(l);
        return 0;
}

const char *protocol_message_type(json_t *obj) {
        json_t *t = json_object_get(obj, "type");
        return json_is_string(t) ? json_string_value(t) : NULL;
}

/* Checks "type" against want (as a table field it is then ignored). */
static int check_type(json_t *obj, const char *want, VsError **err) {
        const char *t = protocol_message_type(obj);
        if (!t || !streq(t, want))
                return proto_bad(err, "expected a message of type '%s'", want);
        return 0;
}

/* A message {"type": type, ...} through table into target (zeroed). */
static int decode_typed(json_t *obj, const char *type, const JsonField table[], void *target, VsError **err) {
        int k = check_type(obj, type, err);
        if (k < 0)
                return k;
        return json_dispatch(obj, table, target, err);
}

/* ---- hello / ready / init_failed ---- */

#define TYPE_FIELD { "type", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED }

static const JsonField hello_table[] = {
        TYPE_FIELD,
        { "version", JSON_FIELD_UINT64, offsetof(ProtocolHello, version), JSON_FIELD_REQUIRED },
        { "arch", JSON_FIELD_STRING, offsetof(ProtocolHello, arch), JSON_FIELD_REQUIRED },
        { "pid", JSON_FIELD_INT64, offsetof(ProtocolHello, pid), JSON_FIELD_REQUIRED },
        { "landlock_abi", JSON_FIELD_INT64, offsetof(ProtocolHello, landlock_abi), 0 },
        { "can", JSON_FIELD_STRV, offsetof(ProtocolHello, can), 0 },
        { "uid", JSON_FIELD_INT64, offsetof(ProtocolHello, uid), 0 },
        { "gid", JSON_FIELD_INT64, offsetof(ProtocolHello, gid), 0 },
        {}
};

int protocol_encode_hello(StrBuf *out, const ProtocolHello *h) {
        ProtocolHello w = *h;
        if (!w.arch)
                w.arch = "unknown";
        return proto_encode(out, json_pack("{s:s}", "type", "hello"), hello_table, &w, NULL, 0);
}

int protocol_decode_hello(json_t *obj, ProtocolHello *ret, VsError **err) {
        ProtocolHello h = { .uid = -1, .gid = -1 };
        int k = decode_typed(obj, "hello", hello_table, &h, err);
        if (k < 0)
                return k;
        /* (uid_t) -1 is "unchanged" to chown, never an id. */
        if (h.uid < -1 || h.uid >= UINT32_MAX || h.gid < -1 || h.gid >= UINT32_MAX) {
                json_dispatch_done(hello_table, &h);
                return proto_bad(err, "field '%s' is not an id", h.uid < -1 || h.uid >= UINT32_MAX ? "uid" : "gid");
        }
        *ret = h;
        return 0;
}

void protocol_hello_done(ProtocolHello *h) {
        if (h)
                json_dispatch_done(hello_table, h);
}

static const JsonField enforced_table[] = {
        { "no_new_privs", JSON_FIELD_BOOL, offsetof(ProtocolReady, no_new_privs), JSON_FIELD_REQUIRED },
        { "seccomp", JSON_FIELD_BOOL, offsetof(ProtocolReady, seccomp), JSON_FIELD_REQUIRED },
        { "landlock", JSON_FIELD_INT64, offsetof(ProtocolReady, landlock_abi), JSON_FIELD_REQUIRED },
        {}
};

static const JsonField ready_table[] = {
        TYPE_FIELD,
        /* offset 0: the enforced fields live at the top of ProtocolReady */
        { "enforced", JSON_FIELD_OBJECT, 0, JSON_FIELD_REQUIRED, enforced_table },
        { "degraded", JSON_FIELD_STRV, offsetof(ProtocolReady, degraded), 0 },
        {}
};

int protocol_encode_ready(StrBuf *out, const ProtocolReady *r) {
        return proto_encode(out, json_pack("{s:s}", "type", "ready"), ready_table, r, NULL, 0);
}

int protocol_decode_ready(json_t *obj, ProtocolReady *ret, VsError **err) {
        ProtocolReady r = {};
        int k = decode_typed(obj, "ready", ready_table, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

void protocol_ready_done(ProtocolReady *r) {
        if (r)
                json_dispatch_done(ready_table, r);
}

typedef struct InitFailedWire {
        const char *error;
} InitFailedWire;

static const JsonField init_failed_table[] = {
        TYPE_FIELD,
        { "error", JSON_FIELD_STRING, offsetof(InitFailedWire, error), JSON_FIELD_REQUIRED },
        {}
};

int protocol_encode_init_failed(StrBuf *out, const char *message) {
        InitFailedWire w = { message };
        return proto_encode(out, json_pack("{s:s}", "type", "init_failed"), init_failed_table, &w, NULL, 0);
}

int protocol_decode_init_failed(json_t *obj, const char **ret_message, VsError **err) {
        InitFailedWire w = {};
        int k = decode_typed(obj, "init_failed", init_failed_table, &w, err);
        if (k < 0)
                return k;
        *ret_message = w.error;
        return 0;
}

/* ---- init ---- */

typedef struct InitWire {
        const char *mode;
        const char *workspace;
        char **rw_paths, **ro_paths, **mask, **protected_paths, **protect, **verify_empty, **verify_readonly;
        json_t *env;
        const char *seccomp_bpf; /* base64 */
        json_t *landlock;        /* landlock_table, or NULL for null */
        char **require;
        ProtocolLimits limits;
        json_t *proxy;           /* proxy_table, or NULL for none */
} InitWire;

typedef struct ProxyWire {
        const char *socket;
        uint64_t port;
} ProxyWire;

static const JsonField proxy_table[] = {
        { "socket", JSON_FIELD_STRING, offsetof(ProxyWire, socket), JSON_FIELD_REQUIRED | JSON_FIELD_ABSOLUTE },
        { "port", JSON_FIELD_UINT64, offsetof(ProxyWire, port), JSON_FIELD_REQUIRED, .min = 1, .max = 65535 },
        {}
};

typedef struct LandlockWire {
        char **rw;
} LandlockWire;

static const JsonField landlock_table[] = {
        { "rw", JSON_FIELD_STRV, offsetof(LandlockWire, rw), JSON_FIELD_REQUIRED | JSON_FIELD_ABSOLUTE },
        {}
};

static const JsonField limits_table[] = {
        { "timeout_ms", JSON_FIELD_UINT64, offsetof(ProtocolLimits, timeout_ms), 0 },
        { "max_output", JSON_FIELD_UINT64, offsetof(ProtocolLimits, max_output), 0 },
        { "pids", JSON_FIELD_UINT64, offsetof(ProtocolLimits, pids), 0 },
        { "memory", JSON_FIELD_UINT64, offsetof(ProtocolLimits, memory), 0 },
        {}
};

#define ABS_STRV(name, member) \
        { name, JSON_FIELD_STRV, offsetof(InitWire, member), JSON_FIELD_ABSOLUTE }

static const JsonField init_table[] = {
        TYPE_FIELD,
        { "mode", JSON_FIELD_STRING, offsetof(InitWire, mode), JSON_FIELD_REQUIRED },
        { "workspace", JSON_FIELD_STRING, offsetof(InitWire, workspace), JSON_FIELD_REQUIRED | JSON_FIELD_ABSOLUTE },
        ABS_STRV("rw_paths", rw_paths),
        ABS_STRV("ro_paths", ro_paths),
        { "mask", JSON_FIELD_STRV, offsetof(InitWire, mask), 0 },
        ABS_STRV("protected", protected_paths),
        { "protect", JSON_FIELD_STRV, offsetof(InitWire, protect), 0 },
        ABS_STRV("verify_empty", verify_empty),
        ABS_STRV("verify_readonly", verify_readonly),
        { "env", JSON_FIELD_STRMAP, offsetof(InitWire, env), 0 },
        { "seccomp_bpf", JSON_FIELD_STRING_OR_NULL, offsetof(InitWire, seccomp_bpf), 0 },
        { "landlock", JSON_FIELD_OBJECT, offsetof(InitWire, landlock), JSON_FIELD_NULLABLE },
        { "require", JSON_FIELD_STRV, offsetof(InitWire, require), 0 },
        { "limits", JSON_FIELD_OBJECT, offsetof(InitWire, limits), 0, limits_table },
        { "proxy", JSON_FIELD_OBJECT, offsetof(InitWire, proxy), JSON_FIELD_OMIT_EMPTY },
        {}
};

/* A nested object through its table, for the encoder. */
static json_t *build_object(const JsonField table[], const void *src) {
        json_t *o = json_object();
        if (o && json_build(o, table, src) < 0)
                o = (json_decref(o), NULL);
        return o;
}

int protocol_encode_init(StrBuf *out, const ProtocolInit *init) {
        const char *mode = protocol_mode_to_string(init->mode);
        if (!mode || !init->workspace)
                return -EINVAL;

        InitWire w = {
                .mode = mode, .workspace = init->workspace, .rw_paths = init->rw_paths, .ro_paths = init->ro_paths,
                .mask = init->mask, .protected_paths = init->protected_paths, .protect = init->protect,
                .verify_empty = init->verify_empty, .verify_readonly = init->verify_readonly,
                .require = init->require, .limits = init->limits,
        };
        _cleanup_free_ char *bpf = NULL;
        int k = -ENOMEM;
        if (init->seccomp_bpf && !(w.seccomp_bpf = bpf = base64_encode_alloc(init->seccomp_bpf, init->seccomp_bpf_len, NULL)))
                goto done;
        if (!(w.env = proto_env_to_json(init->env)))
                goto done;
        if (init->landlock && !(w.landlock = build_object(landlock_table, &(LandlockWire){ init->landlock_rw })))
                goto done;
        if (init->proxy_socket &&
            !(w.proxy = build_object(proxy_table, &(ProxyWire){ init->proxy_socket, init->proxy_port })))
                goto done;
        k = proto_encode(out, json_pack("{s:s}", "type", "init"), init_table, &w, NULL, 0);
done:
        json_decref(w.env);
        json_decref(w.landlock);
        json_decref(w.proxy);
        return k;
}

static bool layer_known(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(layer_names); i++)
                if (streq(layer_names[i], s))
                        return true;
        return false;
}

static int decode_bpf(const char *b64, void **ret, size_t *ret_len, VsError **err) {
        _cleanup_free_ char *p = NULL;
        size_t len = 0;
        int r = base64_decode_alloc(b64, strlen(b64), &p, &len);
        if (r == -ENOMEM)
                return vs_error_set(err, -ENOMEM, "out of memory");
        if (r < 0)
                return proto_bad(err, "field '%s' is not valid base64", "seccomp_bpf");
        /* struct sock_filter is 8 bytes; the kernel takes at most 4096. */
        if (len == 0 || len % 8 != 0 || len / 8 > 4096)
                return proto_bad(err, "field '%s' is not a whole BPF program", "seccomp_bpf");
        *ret = TAKE_PTR(p);
        *ret_len = len;
        return 0;
}

/* A nested object of init through its table, with the field named in errors. */
static int decode_nested(json_t *v, const char *name, const JsonField table[], void *target, VsError **err) {
        int k = json_dispatch(v, table, target, err);
        if (k < 0)
                return vs_error_prefix(err, "field '%s'", name);
        return 0;
}

int protocol_decode_init(json_t *obj, ProtocolInit *ret, VsError **err) {
        InitWire w = {};
        LandlockWire lw = {};
        ProxyWire pw = {};
        ProtocolInit init = {};
        int k;

        k = decode_typed(obj, "init", init_table, &w, err);
        if (k < 0)
                return k;

        init.mode = protocol_mode_from_string(w.mode);
        if (init.mode < 0) {
                k = proto_bad(err, "unknown mode '%.32s'", w.mode);
                goto fail;
        }
        for (char **s = w.require; s && *s; s++)
                if (!layer_known(*s)) {
                        k = proto_bad(err, "unknown layer '%.32s' in 'require'", *s);
                        goto fail;
                }
        if (w.landlock && (k = decode_nested(w.landlock, "landlock", landlock_table, &lw, err)) < 0)
                goto fail;
        if (w.seccomp_bpf && (k = decode_bpf(w.seccomp_bpf, &init.seccomp_bpf, &init.seccomp_bpf_len, err)) < 0)
                goto fail;
        if (w.proxy && (k = decode_nested(w.proxy, "proxy", proxy_table, &pw, err)) < 0)
                goto fail;
        k = proto_env_from_json(w.env, &init.env, err);
        if (k < 0)
                goto fail;

        init.workspace = w.workspace;
        init.rw_paths = w.rw_paths;
        init.ro_paths = w.ro_paths;
        init.mask = w.mask;
        init.protected_paths = w.protected_paths;
        init.protect = w.protect;
        init.verify_empty = w.verify_empty;
        init.verify_readonly = w.verify_readonly;
        init.landlock = w.landlock != NULL;
        init.landlock_rw = lw.rw;
        init.require = w.require;
        init.limits = w.limits;
        init.proxy_socket = pw.socket;
        init.proxy_port = (uint16_t) pw.port;
        *ret = init;
        return 0;

fail:
        free(init.seccomp_bpf);
        json_dispatch_done(landlock_table, &lw);
        json_dispatch_done(init_table, &w);
        return k;
}

void protocol_init_done(ProtocolInit *init) {
        if (!init)
                return;
        free(init->rw_paths);
        free(init->ro_paths);
        free(init->mask);
        free(init->protected_paths);
        free(init->protect);
        free(init->verify_empty);
        free(init->verify_readonly);
        strv_free(init->env);
        free(init->seccomp_bpf);
        free(init->landlock_rw);
        free(init->require);
        *init = (ProtocolInit) {};
}
