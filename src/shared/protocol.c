/* SPDX-License-Identifier: MIT */
#include "protocol.h"

#include <string.h>
#include <sys/stat.h>


#include "base64.h"
#include "json-util.h"
#include "jsonl.h"
#include "macro.h"
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

static bool layer_known(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(layer_names); i++)
                if (streq(layer_names[i], s))
                        return true;
        return false;
}

/* ---- helpers ---- */

static int bad(VsError **err, const char *fmt, const char *arg) _printf_(2, 0);
static int bad(VsError **err, const char *fmt, const char *arg) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        return vs_error_set_kind(err, -EINVAL, "bad_request", fmt, arg);
#pragma GCC diagnostic pop
}

/* Encodes obj (consumed; NULL means an allocation failed) and raw. */
static int emit(StrBuf *out, json_t *obj, const void *raw, size_t raw_len) {
        if (!obj)
                return -ENOMEM;
        int k = jsonl_encode(obj, raw, raw_len, out);
        json_decref(obj);
        return k;
}

/* Sets key to v (consumed) on obj; false on failure (v released). */
static bool set(json_t *obj, const char *key, json_t *v) {
        return v && json_object_set_new(obj, key, v) == 0;
}

/* "K=V" entries as {"K":"V"}; entries without '=' are skipped. */
static json_t *env_to_json(char *const *env) {
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

/* {"K":"V"} (values checked to be strings) as an owned "K=V" strv. */
static int env_from_json(json_t *o, char ***ret, VsError **err) {
        _cleanup_strv_free_ char **l = NULL;
        const char *k;
        json_t *v;

        if (!o) {
                *ret = NULL;
                return 0;
        }
        json_object_foreach(o, k, v) {
                if (!*k || strchr(k, '='))
                        return bad(err, "env key '%.64s' is empty or contains '='", k);
                if (strv_extendf(&l, "%s=%s", k, json_string_value(v)) < 0)
                        return vs_error_set(err, -ENOMEM, "out of memory");
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static bool strv_all_absolute(char *const *l, const char **ret_bad) {
        for (char *const *s = l; s && *s; s++)
                if ((*s)[0] != '/') {
                        *ret_bad = *s;
                        return false;
                }
        return true;
}

static bool is_sha256_hex(const char *s) {
        size_t n = 0;
        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == 64;
}

const char *protocol_message_type(json_t *obj) {
        json_t *t = json_object_get(obj, "type");
        return json_is_string(t) ? json_string_value(t) : NULL;
}

/* Checks "type" against want (as a table field it is then ignored). */
static int check_type(json_t *obj, const char *want, VsError **err) {
        const char *t = protocol_message_type(obj);
        if (!t || !streq(t, want))
                return bad(err, "expected a message of type '%s'", want);
        return 0;
}

/* ---- hello / ready / init_failed ---- */

int protocol_encode_hello(StrBuf *out, const ProtocolHello *h) {
        json_t *o = json_pack("{s:s, s:I, s:s, s:I, s:I}", "type", "hello", "version",
                              (json_int_t) h->version, "arch", h->arch ? h->arch : "unknown", "pid",
                              (json_int_t) h->pid, "landlock_abi", (json_int_t) h->landlock_abi);
        if (o && !set(o, "can", json_strv(h->can)))
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

static const JsonField hello_table[] = {
        { "type", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        { "version", JSON_FIELD_UINT64, offsetof(ProtocolHello, version), JSON_FIELD_REQUIRED },
        { "arch", JSON_FIELD_STRING, offsetof(ProtocolHello, arch), JSON_FIELD_REQUIRED },
        { "pid", JSON_FIELD_INT64, offsetof(ProtocolHello, pid), JSON_FIELD_REQUIRED },
        { "landlock_abi", JSON_FIELD_INT64, offsetof(ProtocolHello, landlock_abi), 0 },
        { "can", JSON_FIELD_STRV, offsetof(ProtocolHello, can), 0 },
        {}
};

int protocol_decode_hello(json_t *obj, ProtocolHello *ret, VsError **err) {
        ProtocolHello h = {};
        int k = check_type(obj, "hello", err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, hello_table, &h, err);
        if (k < 0)
                return k;
        *ret = h;
        return 0;
}

void protocol_hello_done(ProtocolHello *h) {
        if (h)
                json_dispatch_done(hello_table, h);
}

int protocol_encode_ready(StrBuf *out, const ProtocolReady *r) {
        json_t *o = json_pack("{s:s, s:{s:b, s:b, s:I}}", "type", "ready", "enforced", "no_new_privs",
                              r->no_new_privs, "seccomp", r->seccomp, "landlock",
                              (json_int_t) r->landlock_abi);
        if (o && !set(o, "degraded", json_strv(r->degraded)))
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

static const JsonField enforced_table[] = {
        { "no_new_privs", JSON_FIELD_BOOL, offsetof(ProtocolReady, no_new_privs), JSON_FIELD_REQUIRED },
        { "seccomp", JSON_FIELD_BOOL, offsetof(ProtocolReady, seccomp), JSON_FIELD_REQUIRED },
        { "landlock", JSON_FIELD_INT64, offsetof(ProtocolReady, landlock_abi), JSON_FIELD_REQUIRED },
        {}
};

static const JsonField ready_table[] = {
        { "type", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        /* offset 0: the enforced fields live at the top of ProtocolReady */
        { "enforced", JSON_FIELD_OBJECT, 0, JSON_FIELD_REQUIRED, enforced_table },
        { "degraded", JSON_FIELD_STRV, offsetof(ProtocolReady, degraded), 0 },
        {}
};

int protocol_decode_ready(json_t *obj, ProtocolReady *ret, VsError **err) {
        ProtocolReady r = {};
        int k = check_type(obj, "ready", err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, ready_table, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

void protocol_ready_done(ProtocolReady *r) {
        if (r)
                json_dispatch_done(ready_table, r);
}

int protocol_encode_init_failed(StrBuf *out, const char *message) {
        return emit(out, json_pack("{s:s, s:s}", "type", "init_failed", "error", message ? message : ""),
                    NULL, 0);
}

typedef struct InitFailedWire {
        const char *error;
} InitFailedWire;

static const JsonField init_failed_table[] = {
        { "type", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        { "error", JSON_FIELD_STRING, offsetof(InitFailedWire, error), JSON_FIELD_REQUIRED },
        {}
};

int protocol_decode_init_failed(json_t *obj, const char **ret_message, VsError **err) {
        InitFailedWire w = {};
        int k = check_type(obj, "init_failed", err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, init_failed_table, &w, err);
        if (k < 0)
                return k;
        *ret_message = w.error;
        return 0;
}

/* ---- init ---- */

int protocol_encode_init(StrBuf *out, const ProtocolInit *init) {
        const char *mode = protocol_mode_to_string(init->mode);
        if (!mode || !init->workspace)
                return -EINVAL;

        json_t *o = json_pack("{s:s, s:s, s:s}", "type", "init", "mode", mode, "workspace", init->workspace);
        if (!o)
                return -ENOMEM;
        bool ok = set(o, "rw_paths", json_strv(init->rw_paths)) &&
                  set(o, "ro_paths", json_strv(init->ro_paths)) &&
                  set(o, "mask", json_strv(init->mask)) &&
                  set(o, "protected", json_strv(init->protected_paths)) &&
                  set(o, "protect", json_strv(init->protect)) &&
                  set(o, "verify_empty", json_strv(init->verify_empty)) &&
                  set(o, "verify_readonly", json_strv(init->verify_readonly)) &&
                  set(o, "env", env_to_json(init->env));
        if (ok && init->seccomp_bpf) {
                _cleanup_free_ char *b = base64_encode_alloc(init->seccomp_bpf, init->seccomp_bpf_len, NULL);
                ok = b && set(o, "seccomp_bpf", json_string(b));
        } else if (ok)
                ok = set(o, "seccomp_bpf", json_null());
        if (ok && init->landlock)
                ok = set(o, "landlock", json_pack("{s:o}", "rw", json_strv(init->landlock_rw)));
        else if (ok)
                ok = set(o, "landlock", json_null());
        ok = ok && set(o, "require", json_strv(init->require)) &&
             set(o, "limits", json_pack("{s:I, s:I, s:I, s:I}", "timeout_ms", (json_int_t) init->limits.timeout_ms,
                                        "max_output", (json_int_t) init->limits.max_output,
                                        "pids", (json_int_t) init->limits.pids,
                                        "memory", (json_int_t) init->limits.memory));
        if (ok && init->proxy_socket)
                ok = set(o, "proxy", json_pack("{s:s, s:i}", "socket", init->proxy_socket, "port",
                                               (int) init->proxy_port));
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

typedef struct InitWire {
        const char *mode;
        const char *workspace;
        char **rw_paths, **ro_paths, **mask, **protected_paths, **protect, **verify_empty, **verify_readonly;
        json_t *env;
        const char *seccomp_bpf;
        json_t *landlock;
        char **require;
        ProtocolLimits limits;
        json_t *proxy;
} InitWire;

typedef struct ProxyWire {
        const char *socket;
        uint64_t port;
} ProxyWire;

static const JsonField proxy_table[] = {
        { "socket", JSON_FIELD_STRING, offsetof(ProxyWire, socket), JSON_FIELD_REQUIRED },
        { "port", JSON_FIELD_UINT64, offsetof(ProxyWire, port), JSON_FIELD_REQUIRED },
        {}
};

static const JsonField limits_table[] = {
        { "timeout_ms", JSON_FIELD_UINT64, offsetof(ProtocolLimits, timeout_ms), 0 },
        { "max_output", JSON_FIELD_UINT64, offsetof(ProtocolLimits, max_output), 0 },
        { "pids", JSON_FIELD_UINT64, offsetof(ProtocolLimits, pids), 0 },
        { "memory", JSON_FIELD_UINT64, offsetof(ProtocolLimits, memory), 0 },
        {}
};

static const JsonField init_table[] = {
        { "type", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        { "mode", JSON_FIELD_STRING, offsetof(InitWire, mode), JSON_FIELD_REQUIRED },
        { "workspace", JSON_FIELD_STRING, offsetof(InitWire, workspace), JSON_FIELD_REQUIRED },
        { "rw_paths", JSON_FIELD_STRV, offsetof(InitWire, rw_paths), 0 },
        { "ro_paths", JSON_FIELD_STRV, offsetof(InitWire, ro_paths), 0 },
        { "mask", JSON_FIELD_STRV, offsetof(InitWire, mask), 0 },
        { "protected", JSON_FIELD_STRV, offsetof(InitWire, protected_paths), 0 },
        { "protect", JSON_FIELD_STRV, offsetof(InitWire, protect), 0 },
        { "verify_empty", JSON_FIELD_STRV, offsetof(InitWire, verify_empty), 0 },
        { "verify_readonly", JSON_FIELD_STRV, offsetof(InitWire, verify_readonly), 0 },
        { "env", JSON_FIELD_STRMAP, offsetof(InitWire, env), 0 },
        { "seccomp_bpf", JSON_FIELD_STRING_OR_NULL, offsetof(InitWire, seccomp_bpf), 0 },
        { "landlock", JSON_FIELD_OBJECT, offsetof(InitWire, landlock), JSON_FIELD_NULLABLE },
        { "require", JSON_FIELD_STRV, offsetof(InitWire, require), 0 },
        { "limits", JSON_FIELD_OBJECT, offsetof(InitWire, limits), 0, limits_table },
        { "proxy", JSON_FIELD_OBJECT, offsetof(InitWire, proxy), 0 },
        {}
};

typedef struct LandlockWire {
        char **rw;
} LandlockWire;

static const JsonField landlock_table[] = {
        { "rw", JSON_FIELD_STRV, offsetof(LandlockWire, rw), JSON_FIELD_REQUIRED },
        {}
};

static int decode_bpf(const char *b64, void **ret, size_t *ret_len, VsError **err) {
        _cleanup_free_ char *p = NULL;
        size_t len = 0;
        int r = base64_decode_alloc(b64, strlen(b64), &p, &len);
        if (r == -ENOMEM)
                return vs_error_set(err, -ENOMEM, "out of memory");
        if (r < 0)
                return bad(err, "field '%s' is not valid base64", "seccomp_bpf");
        /* struct sock_filter is 8 bytes; the kernel takes at most 4096. */
        if (len == 0 || len % 8 != 0 || len / 8 > 4096)
                return bad(err, "field '%s' is not a whole BPF program", "seccomp_bpf");
        *ret = TAKE_PTR(p);
        *ret_len = len;
        return 0;
}

int protocol_decode_init(json_t *obj, ProtocolInit *ret, VsError **err) {
        InitWire w = {};
        LandlockWire lw = {};
        ProtocolInit init = {};
        const char *p;
        int k;

        k = check_type(obj, "init", err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, init_table, &w, err);
        if (k < 0)
                return k;

        init.mode = protocol_mode_from_string(w.mode);
        if (init.mode < 0) {
                k = bad(err, "unknown mode '%.32s'", w.mode);
                goto fail;
        }
        if (w.workspace[0] != '/') {
                k = bad(err, "field '%s' must be an absolute path", "workspace");
                goto fail;
        }
        if (!strv_all_absolute(w.rw_paths, &p) || !strv_all_absolute(w.ro_paths, &p) ||
            !strv_all_absolute(w.protected_paths, &p) || !strv_all_absolute(w.verify_empty, &p) ||
            !strv_all_absolute(w.verify_readonly, &p)) {
                k = bad(err, "path '%.256s' is not absolute", p);
                goto fail;
        }
        for (char **s = w.require; s && *s; s++)
                if (!layer_known(*s)) {
                        k = bad(err, "unknown layer '%.32s' in 'require'", *s);
                        goto fail;
                }
        if (w.landlock) {
                k = json_dispatch(w.landlock, landlock_table, &lw, err);
                if (k < 0) {
                        vs_error_prefix(err, "field 'landlock'");
                        goto fail;
                }
                if (!strv_all_absolute(lw.rw, &p)) {
                        k = bad(err, "path '%.256s' is not absolute", p);
                        goto fail;
                }
        }
        if (w.seccomp_bpf) {
                k = decode_bpf(w.seccomp_bpf, &init.seccomp_bpf, &init.seccomp_bpf_len, err);
                if (k < 0)
                        goto fail;
        }
        if (w.proxy) {
                ProxyWire pw = {};
                k = json_dispatch(w.proxy, proxy_table, &pw, err);
                if (k < 0) {
                        vs_error_prefix(err, "field 'proxy'");
                        goto fail;
                }
                if (pw.socket[0] != '/' || pw.port < 1 || pw.port > 65535) {
                        k = bad(err, "field '%s' needs an absolute socket path and a port from 1 to 65535", "proxy");
                        goto fail;
                }
                init.proxy_socket = pw.socket;
                init.proxy_port = (uint16_t) pw.port;
        }
        k = env_from_json(w.env, &init.env, err);
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

/* ---- requests ---- */

int protocol_peek_id(json_t *obj, uint64_t *ret_id) {
        json_t *v = json_object_get(obj, "id");
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -EINVAL;
        *ret_id = (uint64_t) json_integer_value(v);
        return 0;
}

int protocol_decode_request_head(json_t *obj, ProtocolRequestHead *ret, VsError **err) {
        if (!json_is_object(obj))
                return bad(err, "message is not an %s", "object");
        json_t *t = json_object_get(obj, "type");
        if (t) {
                if (!json_is_string(t) || !streq(json_string_value(t), "init"))
                        return bad(err, "unexpected message type '%.32s'",
                                   json_is_string(t) ? json_string_value(t) : "?");
                *ret = (ProtocolRequestHead) { .id = 0, .op = PROTOCOL_OP_INIT };
                return 0;
        }
        json_t *id = json_object_get(obj, "id");
        if (!id)
                return bad(err, "missing field '%s'", "id");
        uint64_t v;
        if (protocol_peek_id(obj, &v) < 0)
                return bad(err, "field '%s' must be a non-negative integer", "id");
        json_t *op = json_object_get(obj, "op");
        if (!op)
                return bad(err, "missing field '%s'", "op");
        if (!json_is_string(op))
                return bad(err, "field '%s' must be a string", "op");
        ProtocolOp o = protocol_op_from_string(json_string_value(op));
        if (o < 0)
                return vs_error_set_kind(err, -EOPNOTSUPP, "unknown_op", "unknown op '%.32s'",
                                         json_string_value(op));
        *ret = (ProtocolRequestHead) { .id = v, .op = o };
        return 0;
}

static int decode_head_as(json_t *obj, ProtocolOp want, ProtocolRequestHead *ret, VsError **err) {
        int k = protocol_decode_request_head(obj, ret, err);
        if (k < 0)
                return k;
        if (ret->op != want)
                return bad(err, "expected op '%s'", protocol_op_to_string(want));
        return 0;
}

#define HEAD_FIELDS                                                                        \
        { "id", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },                               \
        { "op", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED }

typedef struct ExecWire {
        ProtocolExecRequest r;
        json_t *env;
} ExecWire;

static const JsonField exec_table[] = {
        HEAD_FIELDS,
        { "argv", JSON_FIELD_STRV, offsetof(ExecWire, r.argv), JSON_FIELD_REQUIRED },
        { "cwd", JSON_FIELD_STRING_OR_NULL, offsetof(ExecWire, r.cwd), 0 },
        { "env", JSON_FIELD_STRMAP, offsetof(ExecWire, env), JSON_FIELD_NULLABLE },
        { "timeout_ms", JSON_FIELD_UINT64, offsetof(ExecWire, r.timeout_ms), 0 },
        { "max_output", JSON_FIELD_UINT64, offsetof(ExecWire, r.max_output), 0 },
        {}
};

int protocol_decode_exec_request(json_t *obj, ProtocolExecRequest *ret, VsError **err) {
        ExecWire w = {};
        int k = decode_head_as(obj, PROTOCOL_OP_EXEC, &w.r.head, err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, exec_table, &w, err);
        if (k < 0)
                return k;
        if (!w.r.argv[0] || !w.r.argv[0][0]) {
                json_dispatch_done(exec_table, &w);
                return bad(err, "field '%s' must be a non-empty array", "argv");
        }
        k = env_from_json(w.env, &w.r.env, err);
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

static const JsonField read_file_table[] = {
        HEAD_FIELDS,
        { "path", JSON_FIELD_STRING, offsetof(ProtocolReadFileRequest, path), JSON_FIELD_REQUIRED },
        { "offset", JSON_FIELD_UINT64, offsetof(ProtocolReadFileRequest, offset), 0 },
        { "limit", JSON_FIELD_UINT64, offsetof(ProtocolReadFileRequest, limit), 0 },
        {}
};

static int check_path(const char *p, VsError **err) {
        if (!p[0])
                return bad(err, "field '%s' must not be empty", "path");
        return 0;
}

int protocol_decode_read_file_request(json_t *obj, ProtocolReadFileRequest *ret, VsError **err) {
        ProtocolReadFileRequest r = {};
        int k = decode_head_as(obj, PROTOCOL_OP_READ_FILE, &r.head, err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, read_file_table, &r, err);
        if (k < 0)
                return k;
        k = check_path(r.path, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

typedef struct WriteWire {
        ProtocolWriteFileRequest r;
        json_t *mode; /* to tell "absent" from 0 */
} WriteWire;

static const JsonField write_file_table[] = {
        HEAD_FIELDS,
        { "path", JSON_FIELD_STRING, offsetof(WriteWire, r.path), JSON_FIELD_REQUIRED },
        { "mode", JSON_FIELD_IGNORE, 0, 0 },
        { "create_parents", JSON_FIELD_BOOL, offsetof(WriteWire, r.create_parents), 0 },
        { "if_sha256", JSON_FIELD_STRING_OR_NULL, offsetof(WriteWire, r.if_sha256), 0 },
        {}
};

int protocol_decode_write_file_request(json_t *obj, ProtocolWriteFileRequest *ret, VsError **err) {
        WriteWire w = {};
        int k = decode_head_as(obj, PROTOCOL_OP_WRITE_FILE, &w.r.head, err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, write_file_table, &w, err);
        if (k < 0)
                return k;
        k = check_path(w.r.path, err);
        if (k < 0)
                return k;
        json_t *m = json_object_get(obj, "mode");
        if (m && !json_is_null(m)) {
                if (!json_is_integer(m) || json_integer_value(m) < 0 || json_integer_value(m) > 07777)
                        return bad(err, "field '%s' must be an integer from 0 to 4095 (07777)", "mode");
                w.r.has_mode = true;
                w.r.mode = (uint64_t) json_integer_value(m);
        }
        if (w.r.if_sha256 && w.r.if_sha256[0] && !is_sha256_hex(w.r.if_sha256))
                return bad(err, "field '%s' must be \"\" or 64 lowercase hex digits", "if_sha256");
        *ret = w.r;
        return 0;
}

static const JsonField path_table[] = {
        HEAD_FIELDS,
        { "path", JSON_FIELD_STRING, offsetof(ProtocolPathRequest, path), JSON_FIELD_REQUIRED },
        {}
};

static int decode_path_request(json_t *obj, ProtocolOp op, ProtocolPathRequest *ret, VsError **err) {
        ProtocolPathRequest r = {};
        int k = decode_head_as(obj, op, &r.head, err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, path_table, &r, err);
        if (k < 0)
                return k;
        k = check_path(r.path, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

int protocol_decode_stat_request(json_t *obj, ProtocolPathRequest *ret, VsError **err) {
        return decode_path_request(obj, PROTOCOL_OP_STAT, ret, err);
}

int protocol_decode_list_dir_request(json_t *obj, ProtocolPathRequest *ret, VsError **err) {
        return decode_path_request(obj, PROTOCOL_OP_LIST_DIR, ret, err);
}

static const JsonField cancel_table[] = {
        HEAD_FIELDS,
        { "target", JSON_FIELD_UINT64, offsetof(ProtocolCancelRequest, target), JSON_FIELD_REQUIRED },
        {}
};

int protocol_decode_cancel_request(json_t *obj, ProtocolCancelRequest *ret, VsError **err) {
        ProtocolCancelRequest r = {};
        int k = decode_head_as(obj, PROTOCOL_OP_CANCEL, &r.head, err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, cancel_table, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

static const JsonField head_only_table[] = {
        HEAD_FIELDS,
        {}
};

int protocol_decode_shutdown_request(json_t *obj, ProtocolRequestHead *ret, VsError **err) {
        ProtocolRequestHead h;
        int k = decode_head_as(obj, PROTOCOL_OP_SHUTDOWN, &h, err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, head_only_table, NULL, err);
        if (k < 0)
                return k;
        *ret = h;
        return 0;
}

static json_t *request_new(uint64_t id, ProtocolOp op) {
        return json_pack("{s:I, s:s}", "id", (json_int_t) id, "op", protocol_op_to_string(op));
}

int protocol_encode_exec_request(StrBuf *out, uint64_t id, const ProtocolExecRequest *r,
                                 const void *stdin_data, size_t stdin_len) {
        if (!r->argv || !r->argv[0])
                return -EINVAL;
        json_t *o = request_new(id, PROTOCOL_OP_EXEC);
        bool ok = o && set(o, "argv", json_strv(r->argv));
        if (ok && r->cwd)
                ok = set(o, "cwd", json_string(r->cwd));
        if (ok && r->env)
                ok = set(o, "env", env_to_json(r->env));
        if (ok && r->timeout_ms)
                ok = set(o, "timeout_ms", json_integer((json_int_t) r->timeout_ms));
        if (ok && r->max_output)
                ok = set(o, "max_output", json_integer((json_int_t) r->max_output));
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, stdin_data, stdin_len);
}

int protocol_encode_read_file_request(StrBuf *out, uint64_t id, const ProtocolReadFileRequest *r) {
        json_t *o = request_new(id, PROTOCOL_OP_READ_FILE);
        bool ok = o && set(o, "path", json_string(r->path)) &&
                  (!r->offset || set(o, "offset", json_integer((json_int_t) r->offset))) &&
                  (!r->limit || set(o, "limit", json_integer((json_int_t) r->limit)));
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

int protocol_encode_write_file_request(StrBuf *out, uint64_t id, const ProtocolWriteFileRequest *r,
                                       const void *data, size_t len) {
        json_t *o = request_new(id, PROTOCOL_OP_WRITE_FILE);
        bool ok = o && set(o, "path", json_string(r->path)) &&
                  (!r->has_mode || set(o, "mode", json_integer((json_int_t) r->mode))) &&
                  (!r->create_parents || set(o, "create_parents", json_true())) &&
                  (!r->if_sha256 || set(o, "if_sha256", json_string(r->if_sha256)));
        if (!ok)
                o = (json_decref(o), NULL);
        /* Always send "raw" (0 for an empty file) so the content is explicit. */
        return emit(out, o, data ? data : "", len);
}

static int encode_path_request(StrBuf *out, uint64_t id, ProtocolOp op, const char *path) {
        json_t *o = request_new(id, op);
        if (o && !set(o, "path", json_string(path)))
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

int protocol_encode_stat_request(StrBuf *out, uint64_t id, const char *path) {
        return encode_path_request(out, id, PROTOCOL_OP_STAT, path);
}

int protocol_encode_list_dir_request(StrBuf *out, uint64_t id, const char *path) {
        return encode_path_request(out, id, PROTOCOL_OP_LIST_DIR, path);
}

int protocol_encode_cancel_request(StrBuf *out, uint64_t id, uint64_t target) {
        json_t *o = request_new(id, PROTOCOL_OP_CANCEL);
        if (o && !set(o, "target", json_integer((json_int_t) target)))
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

int protocol_encode_shutdown_request(StrBuf *out, uint64_t id) {
        return emit(out, request_new(id, PROTOCOL_OP_SHUTDOWN), NULL, 0);
}

/* ---- replies ---- */

static json_t *reply_new(uint64_t id) {
        return json_pack("{s:I, s:b}", "id", (json_int_t) id, "ok", 1);
}

typedef struct ErrorWire {
        const char *code;
        const char *message;
} ErrorWire;

static const JsonField error_table[] = {
        { "code", JSON_FIELD_STRING, offsetof(ErrorWire, code), JSON_FIELD_REQUIRED },
        { "message", JSON_FIELD_STRING, offsetof(ErrorWire, message), 0 },
        {}
};

#define REPLY_FIELDS                                                                       \
        { "id", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },                               \
        { "ok", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED }

static const JsonField error_reply_table[] = {
        REPLY_FIELDS,
        { "error", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        {}
};

int protocol_decode_reply_head(json_t *obj, ProtocolReplyHead *ret, VsError **err) {
        ProtocolReplyHead h = {};
        if (!json_is_object(obj))
                return bad(err, "reply is not an %s", "object");

        json_t *id = json_object_get(obj, "id");
        if (!id)
                return bad(err, "missing field '%s'", "id");
        if (!json_is_null(id)) {
                if (protocol_peek_id(obj, &h.id) < 0)
                        return bad(err, "field '%s' must be a non-negative integer or null", "id");
                h.has_id = true;
        }
        json_t *ok = json_object_get(obj, "ok");
        if (!json_is_boolean(ok))
                return bad(err, "field '%s' must be a boolean", "ok");
        h.ok = json_is_true(ok);
        if (!h.ok) {
                ErrorWire e = {};
                json_t *eo = json_object_get(obj, "error");
                if (!eo)
                        return bad(err, "missing field '%s'", "error");
                int k = json_dispatch(eo, error_table, &e, err);
                if (k < 0)
                        return vs_error_prefix(err, "field 'error'");
                h.error_code_name = e.code;
                h.error_code = protocol_error_code_from_string(e.code);
                h.error_message = e.message ? e.message : "";
                /* An error reply is complete: nothing else may ride along. */
                k = json_dispatch(obj, error_reply_table, NULL, err);
                if (k < 0)
                        return k;
        }
        *ret = h;
        return 0;
}

int protocol_encode_error(StrBuf *out, bool has_id, uint64_t id, ProtocolErrorCode code,
                          const char *message) {
        const char *c = protocol_error_code_to_string(code);
        if (!c)
                return -EINVAL;
        json_t *o = json_pack("{s:o, s:b, s:{s:s, s:s}}", "id",
                              has_id ? json_integer((json_int_t) id) : json_null(), "ok", 0, "error", "code",
                              c, "message", message ? message : c);
        return emit(out, o, NULL, 0);
}

/* Decodes a successful reply through table (with "id" and "ok" ignored). */
static int decode_ok_reply(json_t *obj, const JsonField *table, void *target, VsError **err) {
        ProtocolReplyHead h;
        int k = protocol_decode_reply_head(obj, &h, err);
        if (k < 0)
                return k;
        if (!h.ok)
                return bad(err, "reply is an error: %.200s", h.error_message);
        return json_dispatch(obj, table, target, err);
}

int protocol_encode_exec_reply(StrBuf *out, uint64_t id, const ProtocolExecReply *r,
                               const void *stdout_data, const void *stderr_data) {
        size_t len = (size_t) (r->stdout_len + r->stderr_len);
        if (len > JSONL_MAX_RAW)
                return -EMSGSIZE;
        json_t *o = reply_new(id);
        bool ok = o && set(o, "exit_code", json_integer((json_int_t) r->exit_code)) &&
                  set(o, "signal", json_integer((json_int_t) r->signal)) &&
                  set(o, "timed_out", json_boolean(r->timed_out)) &&
                  set(o, "cancelled", json_boolean(r->cancelled)) &&
                  set(o, "stdout_len", json_integer((json_int_t) r->stdout_len)) &&
                  set(o, "stderr_len", json_integer((json_int_t) r->stderr_len)) &&
                  set(o, "stdout_total", json_integer((json_int_t) r->stdout_total)) &&
                  set(o, "stderr_total", json_integer((json_int_t) r->stderr_total)) &&
                  set(o, "duration_us", json_integer((json_int_t) r->duration_us));
        if (!ok) {
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

static const JsonField exec_reply_table[] = {
        REPLY_FIELDS,
        { "exit_code", JSON_FIELD_INT64, offsetof(ProtocolExecReply, exit_code), JSON_FIELD_REQUIRED },
        { "signal", JSON_FIELD_INT64, offsetof(ProtocolExecReply, signal), 0 },
        { "timed_out", JSON_FIELD_BOOL, offsetof(ProtocolExecReply, timed_out), 0 },
        { "cancelled", JSON_FIELD_BOOL, offsetof(ProtocolExecReply, cancelled), 0 },
        { "stdout_len", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stdout_len), JSON_FIELD_REQUIRED },
        { "stderr_len", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stderr_len), JSON_FIELD_REQUIRED },
        { "stdout_total", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stdout_total), 0 },
        { "stderr_total", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, stderr_total), 0 },
        { "duration_us", JSON_FIELD_UINT64, offsetof(ProtocolExecReply, duration_us), 0 },
        {}
};

int protocol_decode_exec_reply(json_t *obj, size_t raw_len, ProtocolExecReply *ret, VsError **err) {
        ProtocolExecReply r = {};
        int k = decode_ok_reply(obj, exec_reply_table, &r, err);
        if (k < 0)
                return k;
        if (r.stdout_len > JSONL_MAX_RAW || r.stderr_len > JSONL_MAX_RAW ||
            r.stdout_len + r.stderr_len != raw_len)
                return bad(err, "%s does not match the raw payload", "stdout_len + stderr_len");
        *ret = r;
        return 0;
}

int protocol_encode_read_file_reply(StrBuf *out, uint64_t id, const ProtocolReadFileReply *r,
                                    const void *data, size_t len) {
        json_t *o = reply_new(id);
        bool ok = o && set(o, "size", json_integer((json_int_t) r->size)) &&
                  set(o, "sha256", json_string(r->sha256 ? r->sha256 : "")) &&
                  set(o, "offset", json_integer((json_int_t) r->offset)) && set(o, "eof", json_boolean(r->eof));
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, data ? data : "", len);
}

static const JsonField read_file_reply_table[] = {
        REPLY_FIELDS,
        { "size", JSON_FIELD_UINT64, offsetof(ProtocolReadFileReply, size), JSON_FIELD_REQUIRED },
        { "sha256", JSON_FIELD_STRING, offsetof(ProtocolReadFileReply, sha256), JSON_FIELD_REQUIRED },
        { "offset", JSON_FIELD_UINT64, offsetof(ProtocolReadFileReply, offset), 0 },
        { "eof", JSON_FIELD_BOOL, offsetof(ProtocolReadFileReply, eof), 0 },
        {}
};

int protocol_decode_read_file_reply(json_t *obj, ProtocolReadFileReply *ret, VsError **err) {
        ProtocolReadFileReply r = {};
        int k = decode_ok_reply(obj, read_file_reply_table, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

int protocol_encode_write_file_reply(StrBuf *out, uint64_t id, const ProtocolWriteFileReply *r) {
        json_t *o = reply_new(id);
        bool ok = o && set(o, "size", json_integer((json_int_t) r->size)) &&
                  set(o, "sha256", json_string(r->sha256 ? r->sha256 : "")) &&
                  set(o, "created", json_boolean(r->created));
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

static const JsonField write_file_reply_table[] = {
        REPLY_FIELDS,
        { "size", JSON_FIELD_UINT64, offsetof(ProtocolWriteFileReply, size), JSON_FIELD_REQUIRED },
        { "sha256", JSON_FIELD_STRING, offsetof(ProtocolWriteFileReply, sha256), JSON_FIELD_REQUIRED },
        { "created", JSON_FIELD_BOOL, offsetof(ProtocolWriteFileReply, created), 0 },
        {}
};

int protocol_decode_write_file_reply(json_t *obj, ProtocolWriteFileReply *ret, VsError **err) {
        ProtocolWriteFileReply r = {};
        int k = decode_ok_reply(obj, write_file_reply_table, &r, err);
        if (k < 0)
                return k;
        *ret = r;
        return 0;
}

int protocol_encode_stat_reply(StrBuf *out, uint64_t id, const ProtocolStatReply *r) {
        const char *t = protocol_file_type_to_string(r->type);
        if (!t)
                return -EINVAL;
        json_t *o = reply_new(id);
        bool ok = o && set(o, "type", json_string(t)) && set(o, "size", json_integer((json_int_t) r->size)) &&
                  set(o, "mode", json_integer((json_int_t) r->mode)) &&
                  set(o, "mtime_ns", json_integer((json_int_t) r->mtime_ns));
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

typedef struct StatWire {
        ProtocolStatReply r;
        const char *type;
} StatWire;

static const JsonField stat_reply_table[] = {
        REPLY_FIELDS,
        { "type", JSON_FIELD_STRING, offsetof(StatWire, type), JSON_FIELD_REQUIRED },
        { "size", JSON_FIELD_UINT64, offsetof(StatWire, r.size), 0 },
        { "mode", JSON_FIELD_UINT64, offsetof(StatWire, r.mode), 0 },
        { "mtime_ns", JSON_FIELD_INT64, offsetof(StatWire, r.mtime_ns), 0 },
        {}
};

int protocol_decode_stat_reply(json_t *obj, ProtocolStatReply *ret, VsError **err) {
        StatWire w = {};
        int k = decode_ok_reply(obj, stat_reply_table, &w, err);
        if (k < 0)
                return k;
        w.r.type = protocol_file_type_from_string(w.type);
        if (w.r.type < 0)
                return bad(err, "unknown file type '%.32s'", w.type);
        *ret = w.r;
        return 0;
}

int protocol_encode_list_dir_reply(StrBuf *out, uint64_t id, const ProtocolListDirReply *r) {
        json_t *o = reply_new(id);
        json_t *a = json_array();
        bool ok = o && a;
        for (size_t i = 0; ok && i < r->n_entries; i++) {
                const char *t = protocol_file_type_to_string(r->entries[i].type);
                ok = t && json_array_append_new(a, json_pack("{s:s, s:s}", "name", r->entries[i].name,
                                                             "type", t)) == 0;
        }
        if (ok)
                ok = set(o, "entries", TAKE_PTR(a));
        json_decref(a);
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

typedef struct ListDirWire {
        json_t *entries;
} ListDirWire;

static const JsonField list_dir_reply_table[] = {
        REPLY_FIELDS,
        { "entries", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        {}
};

typedef struct EntryWire {
        const char *name;
        const char *type;
} EntryWire;

static const JsonField entry_table[] = {
        { "name", JSON_FIELD_STRING, offsetof(EntryWire, name), JSON_FIELD_REQUIRED },
        { "type", JSON_FIELD_STRING, offsetof(EntryWire, type), JSON_FIELD_REQUIRED },
        {}
};

int protocol_decode_list_dir_reply(json_t *obj, ProtocolListDirReply *ret, VsError **err) {
        int k = decode_ok_reply(obj, list_dir_reply_table, NULL, err);
        if (k < 0)
                return k;
        json_t *a = json_object_get(obj, "entries");
        if (!json_is_array(a))
                return bad(err, "field '%s' must be an array", "entries");
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
                e[i].type = protocol_file_type_from_string(w.type);
                if (e[i].type < 0)
                        return bad(err, "unknown file type '%.32s'", w.type);
        }
        *ret = (ProtocolListDirReply) { .entries = TAKE_PTR(e), .n_entries = n };
        return 0;
}

void protocol_list_dir_reply_done(ProtocolListDirReply *r) {
        if (!r)
                return;
        free(r->entries);
        *r = (ProtocolListDirReply) {};
}

int protocol_encode_cancel_reply(StrBuf *out, uint64_t id, bool found) {
        json_t *o = reply_new(id);
        if (o && !set(o, "found", json_boolean(found)))
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

typedef struct CancelReplyWire {
        bool found;
} CancelReplyWire;

static const JsonField cancel_reply_table[] = {
        REPLY_FIELDS,
        { "found", JSON_FIELD_BOOL, offsetof(CancelReplyWire, found), JSON_FIELD_REQUIRED },
        {}
};

int protocol_decode_cancel_reply(json_t *obj, bool *ret_found, VsError **err) {
        CancelReplyWire w = {};
        int k = decode_ok_reply(obj, cancel_reply_table, &w, err);
        if (k < 0)
                return k;
        *ret_found = w.found;
        return 0;
}

int protocol_encode_ok(StrBuf *out, uint64_t id) {
        return emit(out, reply_new(id), NULL, 0);
}

/* ---- sessions ---- */

typedef struct SessionOpenWire {
        ProtocolSessionOpenRequest r;
        json_t *env;
} SessionOpenWire;

static const JsonField session_open_table[] = {
        HEAD_FIELDS,
        { "argv", JSON_FIELD_STRV, offsetof(SessionOpenWire, r.argv), 0 },
        { "connect", JSON_FIELD_UINT64, offsetof(SessionOpenWire, r.connect), 0 },
        { "cwd", JSON_FIELD_STRING_OR_NULL, offsetof(SessionOpenWire, r.cwd), 0 },
        { "env", JSON_FIELD_STRMAP, offsetof(SessionOpenWire, env), JSON_FIELD_NULLABLE },
        { "pty", JSON_FIELD_BOOL, offsetof(SessionOpenWire, r.pty), 0 },
        { "cols", JSON_FIELD_UINT64, offsetof(SessionOpenWire, r.cols), 0 },
        { "rows", JSON_FIELD_UINT64, offsetof(SessionOpenWire, r.rows), 0 },
        { "timeout_ms", JSON_FIELD_UINT64, offsetof(SessionOpenWire, r.timeout_ms), 0 },
        {}
};

static bool winsize_ok(uint64_t cols, uint64_t rows) {
        return cols >= 1 && rows >= 1 && cols <= PROTOCOL_SESSION_MAX_WINSIZE && rows <= PROTOCOL_SESSION_MAX_WINSIZE;
}

int protocol_decode_session_open_request(json_t *obj, ProtocolSessionOpenRequest *ret, VsError **err) {
        SessionOpenWire w = {};
        int k = decode_head_as(obj, PROTOCOL_OP_SESSION_OPEN, &w.r.head, err);
        if (k < 0)
                return k;
        k = json_dispatch(obj, session_open_table, &w, err);
        if (k < 0)
                return k;
        if (!w.r.argv == !w.r.connect)
                k = bad(err, "give exactly one of 'argv' and '%s'", "connect");
        else if (w.r.connect && (w.r.connect > 65535 || w.r.pty || w.r.cwd || w.r.env || w.r.timeout_ms))
                k = bad(err, "'connect' is a port (1..65535) and takes no '%s'", "pty, cwd, env or timeout_ms");
        else if (w.r.argv && (!w.r.argv[0] || !w.r.argv[0][0]))
                k = bad(err, "field '%s' must be a non-empty array", "argv");
        else if (w.r.pty && !winsize_ok(w.r.cols, w.r.rows))
                k = bad(err, "fields 'cols' and 'rows' must be 1..%s for a pty", "10000");
        else if (!w.r.pty && (w.r.cols || w.r.rows))
                k = bad(err, "fields 'cols' and 'rows' are for a %s only", "pty");
        else
                k = env_from_json(w.env, &w.r.env, err);
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

int protocol_encode_session_open_request(StrBuf *out, uint64_t id, const ProtocolSessionOpenRequest *r) {
        if (r->connect ? r->connect > 65535 || r->argv : !r->argv || !r->argv[0] ||
                                 (r->pty && !winsize_ok(r->cols, r->rows)))
                return -EINVAL;
        json_t *o = request_new(id, PROTOCOL_OP_SESSION_OPEN);
        bool ok = o && (r->connect ? set(o, "connect", json_integer((json_int_t) r->connect))
                                   : set(o, "argv", json_strv(r->argv))) &&
                  (!r->cwd || set(o, "cwd", json_string(r->cwd))) &&
                  (!r->env || set(o, "env", env_to_json(r->env))) &&
                  (!r->timeout_ms || set(o, "timeout_ms", json_integer((json_int_t) r->timeout_ms)));
        if (ok && r->pty)
                ok = set(o, "pty", json_true()) && set(o, "cols", json_integer((json_int_t) r->cols)) &&
                     set(o, "rows", json_integer((json_int_t) r->rows));
        if (!ok)
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

static const JsonField session_input_table[] = {
        HEAD_FIELDS,
        { "session", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, session), JSON_FIELD_REQUIRED },
        { "eof", JSON_FIELD_BOOL, offsetof(ProtocolSessionRequest, eof), 0 },
        {}
};

static const JsonField session_resize_table[] = {
        HEAD_FIELDS,
        { "session", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, session), JSON_FIELD_REQUIRED },
        { "cols", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, cols), JSON_FIELD_REQUIRED },
        { "rows", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, rows), JSON_FIELD_REQUIRED },
        {}
};

static const JsonField session_signal_table[] = {
        HEAD_FIELDS,
        { "session", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, session), JSON_FIELD_REQUIRED },
        { "signal", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, signal), JSON_FIELD_REQUIRED },
        {}
};

static const JsonField session_pause_table[] = {
        HEAD_FIELDS,
        { "session", JSON_FIELD_UINT64, offsetof(ProtocolSessionRequest, session), JSON_FIELD_REQUIRED },
        { "paused", JSON_FIELD_BOOL, offsetof(ProtocolSessionRequest, paused), JSON_FIELD_REQUIRED },
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

int protocol_decode_session_request(json_t *obj, ProtocolSessionRequest *ret, VsError **err) {
        ProtocolSessionRequest r = {};
        int k = protocol_decode_request_head(obj, &r.head, err);
        if (k < 0)
                return k;
        const JsonField *t = session_table(r.head.op);
        if (!t)
                return bad(err, "expected a session op, not '%s'", protocol_op_to_string(r.head.op));
        k = json_dispatch(obj, t, &r, err);
        if (k < 0)
                return k;
        if (r.head.op == PROTOCOL_OP_SESSION_RESIZE && !winsize_ok(r.cols, r.rows))
                return bad(err, "fields 'cols' and 'rows' must be 1..%s", "10000");
        if (r.head.op == PROTOCOL_OP_SESSION_SIGNAL && (r.signal < 1 || r.signal > 64))
                return bad(err, "field '%s' must be a signal number, 1..64", "signal");
        *ret = r;
        return 0;
}

int protocol_encode_session_request(StrBuf *out, uint64_t id, ProtocolOp op, const ProtocolSessionRequest *r,
                                    const void *data, size_t len) {
        if (!session_table(op))
                return -EINVAL;
        json_t *o = request_new(id, op);
        bool ok = o && set(o, "session", json_integer((json_int_t) r->session));
        switch (op) {
        case PROTOCOL_OP_SESSION_INPUT:
                ok = ok && (!r->eof || set(o, "eof", json_true()));
                break;
        case PROTOCOL_OP_SESSION_RESIZE:
                ok = ok && set(o, "cols", json_integer((json_int_t) r->cols)) &&
                     set(o, "rows", json_integer((json_int_t) r->rows));
                break;
        case PROTOCOL_OP_SESSION_SIGNAL:
                ok = ok && set(o, "signal", json_integer((json_int_t) r->signal));
                break;
        default:
                ok = ok && set(o, "paused", json_boolean(r->paused));
                break;
        }
        if (!ok)
                o = (json_decref(o), NULL);
        bool input = op == PROTOCOL_OP_SESSION_INPUT && len > 0;
        return emit(out, o, input ? data : NULL, input ? len : 0);
}

int protocol_encode_session_open_reply(StrBuf *out, uint64_t id, int64_t pid) {
        json_t *o = reply_new(id);
        if (o && !set(o, "pid", json_integer((json_int_t) pid)))
                o = (json_decref(o), NULL);
        return emit(out, o, NULL, 0);
}

typedef struct SessionOpenReplyWire {
        int64_t pid;
} SessionOpenReplyWire;

static const JsonField session_open_reply_table[] = {
        REPLY_FIELDS,
        { "pid", JSON_FIELD_INT64, offsetof(SessionOpenReplyWire, pid), JSON_FIELD_REQUIRED },
        {}
};

int protocol_decode_session_open_reply(json_t *obj, int64_t *ret_pid, VsError **err) {
        SessionOpenReplyWire w = {};
        int k = decode_ok_reply(obj, session_open_reply_table, &w, err);
        if (k < 0)
                return k;
        *ret_pid = w.pid;
        return 0;
}

static const char *const session_event_names[_PROTOCOL_SESSION_EVENT_MAX] = {
        [PROTOCOL_SESSION_OUTPUT] = "session_output",
        [PROTOCOL_SESSION_EXIT] = "session_exit",
};

bool protocol_is_event(json_t *obj) {
        return json_object_get(obj, "event") != NULL;
}

int protocol_encode_session_event(StrBuf *out, const ProtocolSessionEvent *e, const void *data, size_t len) {
        if (e->type < 0 || e->type >= _PROTOCOL_SESSION_EVENT_MAX)
                return -EINVAL;
        json_t *o = json_pack("{s:s, s:I}", "event", session_event_names[e->type], "session", (json_int_t) e->session);
        bool ok = o != NULL;
        if (ok && e->type == PROTOCOL_SESSION_OUTPUT)
                ok = set(o, "stream", json_string(e->is_stderr ? "stderr" : "stdout"));
        else if (ok)
                ok = set(o, "exit_code", json_integer((json_int_t) e->exit_code)) &&
                     set(o, "signal", json_integer((json_int_t) e->signal)) &&
                     set(o, "timed_out", json_boolean(e->timed_out));
        if (!ok)
                o = (json_decref(o), NULL);
        bool output = e->type == PROTOCOL_SESSION_OUTPUT;
        return emit(out, o, output ? (data ? data : "") : NULL, output ? len : 0);
}

typedef struct SessionEventWire {
        ProtocolSessionEvent e;
        const char *stream;
} SessionEventWire;

static const JsonField session_output_table[] = {
        { "event", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        { "session", JSON_FIELD_UINT64, offsetof(SessionEventWire, e.session), JSON_FIELD_REQUIRED },
        { "stream", JSON_FIELD_STRING, offsetof(SessionEventWire, stream), JSON_FIELD_REQUIRED },
        {}
};

static const JsonField session_exit_table[] = {
        { "event", JSON_FIELD_IGNORE, 0, JSON_FIELD_REQUIRED },
        { "session", JSON_FIELD_UINT64, offsetof(SessionEventWire, e.session), JSON_FIELD_REQUIRED },
        { "exit_code", JSON_FIELD_INT64, offsetof(SessionEventWire, e.exit_code), JSON_FIELD_REQUIRED },
        { "signal", JSON_FIELD_INT64, offsetof(SessionEventWire, e.signal), JSON_FIELD_REQUIRED },
        { "timed_out", JSON_FIELD_BOOL, offsetof(SessionEventWire, e.timed_out), 0 },
        {}
};

int protocol_decode_session_event(json_t *obj, ProtocolSessionEvent *ret, VsError **err) {
        SessionEventWire w = {};
        json_t *ev = json_object_get(obj, "event");
        if (!json_is_string(ev))
                return bad(err, "field '%s' must be a string", "event");
        if (streq(json_string_value(ev), "session_output"))
                w.e.type = PROTOCOL_SESSION_OUTPUT;
        else if (streq(json_string_value(ev), "session_exit"))
                w.e.type = PROTOCOL_SESSION_EXIT;
        else
                return bad(err, "unknown event '%.32s'", json_string_value(ev));
        int k = json_dispatch(obj, w.e.type == PROTOCOL_SESSION_OUTPUT ? session_output_table : session_exit_table, &w,
                              err);
        if (k < 0)
                return k;
        if (w.e.type == PROTOCOL_SESSION_OUTPUT) {
                if (streq(w.stream, "stderr"))
                        w.e.is_stderr = true;
                else if (!streq(w.stream, "stdout"))
                        return bad(err, "field '%s' must be \"stdout\" or \"stderr\"", "stream");
        } else if (w.e.exit_code < 0 || w.e.exit_code > 255 || w.e.signal < 0 || w.e.signal > 64)
                return bad(err, "fields 'exit_code' and 'signal' out of %s", "range");
        *ret = w.e;
        return 0;
}
