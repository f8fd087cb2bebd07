/* SPDX-License-Identifier: MIT */
/* Daemon API calls, to vectora-sandboxd or embedded. The embedded side is
 * the daemon's tool semantics in synchronous form over one VsSession:
 * terminal -> exec, file_read -> read_file, file_write -> write_file,
 * file_edit -> read, apply, write with if_sha256 (re-done when another
 * writer got in between). */
#include <limits.h>
#include <string.h>

#include "client.h"
#include "fd-util.h"
#include "json-util.h"
#include "link.h"
#include "protocol.h"
#include "sha256.h"
#include "strv.h"
#include "tools.h"

#define EDIT_MAX_ATTEMPTS 16 /* as the daemon's file_edit */

struct CliLink {
        const CliArgs *args;
        char *workspace;     /* absolute; NULL when -w does not exist */
        int workspace_errno;
        /* daemon */
        const char *socket;
        int fd;
        JsonlReader *reader;
        uint64_t next_id;
        /* embedded */
        VsPolicy *policy;
        VsSession *session;
        char *pending;       /* a loosening waiting for `vectora-sandbox allow`, or NULL */
        char *open_code;     /* the embedded worker could not start: why, for every call */
        char *open_message;
};

int cli_link_new(const CliArgs *a, CliLink **ret) {
        CliLink *l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        l->args = a;
        l->fd = -EBADF;
        l->socket = cli_socket(a);
        l->workspace = cli_workspace_abs(a);
        l->workspace_errno = l->workspace ? 0 : errno;
        *ret = l;
        return 0;
}

void cli_link_free(CliLink *l) {
        if (!l)
                return;
        safe_close(l->fd);
        jsonl_reader_free(l->reader);
        session_end(l->session);
        policy_free(l->policy);
        free(l->pending);
        free(l->workspace);
        free(l->open_code);
        free(l->open_message);
        free(l);
}

bool cli_link_daemon(const CliLink *l) {
        return l->socket != NULL;
}

/* A failed result, shaped like the daemon's. */
static int fail_result(JsonlMsg *ret, const char *code, const char *message) {
        json_t *o = json_pack("{s:b,s:{s:s,s:s},s:b}", "ok", 0, "error", "code", code, "message", message, "sandboxed", 0);
        if (!o)
                return -ENOMEM;
        *ret = (JsonlMsg)JSONL_MSG_INIT;
        ret->obj = o;
        return 0;
}

/* ---- daemon ---- */

static int daemon_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        if (l->fd < 0) {
                _cleanup_free_ char *why = NULL;
                int r = client_connect(l->socket, &l->fd, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail_result(ret, "daemon_unreachable", why);
                if (jsonl_reader_new(&l->reader) < 0)
                        return -ENOMEM;
        }
        json_object_set_new(req, "id", json_integer((json_int_t)++l->next_id));
        int r = client_send(l->fd, req, raw, raw_len);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                char msg[512];
                snprintf(msg, sizeof msg, "sending to vectora-sandboxd at %s: %s", l->socket, strerror(-r));
                return fail_result(ret, "daemon_unreachable", msg);
        }
        r = client_recv(l->fd, l->reader, ret);
        if (r < 0) {
                char msg[512];
                snprintf(msg, sizeof msg, "vectora-sandboxd at %s did not answer: %s", l->socket, strerror(-r));
                return fail_result(ret, "daemon_unreachable", msg);
        }
        json_object_del(ret->obj, "id");
        return 0;
}

/* ---- embedded ---- */

static int embedded_open(CliLink *l) {
        if (l->session || l->open_code)
                return 0;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = tools_open(l->workspace ? l->workspace : (l->args->val[OPT_WORKSPACE] ?: "."),
                           l->args->require_sandbox, &l->policy, &l->session, &l->pending, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                l->open_code = strdup(vs_error_kind(err) ? vs_error_kind(err) : "sandbox_unavailable");
                l->open_message = strdup(vs_error_message(err));
                if (!l->open_code || !l->open_message)
                        return -ENOMEM;
        }
        return 0;
}

static json_t *embedded_sandbox(CliLink *l) {
        _cleanup_strv_free_ char **layers = NULL;
        if (session_layers(l->session, &layers) < 0)
                return NULL;
        json_t *o = json_pack("{s:s,s:s,s:o,s:o}", "backend",
                              l->session->sandboxed ? vs_backend_name(l->policy->backend) : "none", "state",
                              l->session->sandboxed ? "sandboxed" : "unsandboxed", "layers", json_strv(layers),
                              "degraded", json_strv(l->session->degraded));
        return o;
}

/* Sends one worker request; on a worker error fills *ret with it and
 * returns 1; on success m holds the reply. */
static int worker_call(CliLink *l, StrBuf *req, JsonlMsg *m, JsonlMsg *ret) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = session_call(l->session, req, 0, m, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail_result(ret, vs_error_kind(err) ?: "worker_crashed", vs_error_message(err)) ?: 1;
        ProtocolReplyHead h;
        if (protocol_decode_reply_head(m->obj, &h, &err) < 0) {
                jsonl_msg_done(m);
                return fail_result(ret, "worker_crashed", vs_error_message(err)) ?: 1;
        }
        if (!h.ok) {
                r = fail_result(ret, h.error_code_name ? h.error_code_name : "io",
                                h.error_message ? h.error_message : "failed");
                jsonl_msg_done(m);
                return r ?: 1;
        }
        return 0;
}

static int embedded_terminal(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        const char *command = json_string_value(json_object_get(req, "command"));
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        if (command) {
                if (strv_extend(&argv, "/bin/sh") < 0 || strv_extend(&argv, "-c") < 0 || strv_extend(&argv, command) < 0)
                        return -ENOMEM;
        } else {
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(req, "argv"), i, v) if (strv_extend(&argv, json_string_value(v)) < 0) return -ENOMEM;
        }
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(req, "env"), k, v) if (strv_extendf(&env, "%s=%s", k, json_string_value(v)) < 0) return -ENOMEM;
        /* Relative to the directory asked about, which may lie below the
         * workspace root (the nearest vectora.toml above it governs). */
        _cleanup_free_ char *cwd = NULL;
        ProtocolExecRequest er = {
                .argv = argv,
                .cwd = tools_in_dir(l->workspace, json_string_value(json_object_get(req, "cwd")), &cwd),
                .env = env,
                .timeout_ms = (uint64_t)json_integer_value(json_object_get(req, "timeout")) * 1000,
        };
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = protocol_encode_exec_request(&out, session_next_id(l->session), &er, raw, raw_len);
        if (r < 0)
                return r;
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = worker_call(l, &out, &m, ret)))
                return r < 0 ? r : 0;
        ProtocolExecReply rep;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (protocol_decode_exec_reply(m.obj, m.raw_len, &rep, &err) < 0) {
                jsonl_msg_done(&m);
                return fail_result(ret, "worker_crashed", vs_error_message(err));
        }
        json_t *o = json_pack("{s:b,s:I,s:I,s:b,s:b,s:I,s:I,s:I,s:I,s:b,s:I}", "ok", 1, "exit_code",
                              (json_int_t)rep.exit_code, "signal", (json_int_t)rep.signal, "timed_out", rep.timed_out,
                              "cancelled", rep.cancelled, "stdout_len", (json_int_t)rep.stdout_len, "stderr_len",
                              (json_int_t)rep.stderr_len, "stdout_total", (json_int_t)rep.stdout_total, "stderr_total",
                              (json_int_t)rep.stderr_total, "truncated",
                              rep.stdout_total > rep.stdout_len || rep.stderr_total > rep.stderr_len, "duration_us",
                              (json_int_t)rep.duration_us);
        json_decref(m.obj);
        m.obj = o;
        *ret = m;
        return o ? 0 : -ENOMEM;
}

static int embedded_read(CliLink *l, json_t *req, JsonlMsg *ret) {
        _cleanup_free_ char *abs = NULL;
        ProtocolReadFileRequest rr = {
                .path = tools_in_dir(l->workspace, json_string_value(json_object_get(req, "path")), &abs),
                .offset = (uint64_t)json_integer_value(json_object_get(req, "offset")),
                .limit = (uint64_t)json_integer_value(json_object_get(req, "limit")),
        };
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = protocol_encode_read_file_request(&out, session_next_id(l->session), &rr);
        if (r < 0)
                return r;
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = worker_call(l, &out, &m, ret)))
                return r < 0 ? r : 0;
        ProtocolReadFileReply rep;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (protocol_decode_read_file_reply(m.obj, &rep, &err) < 0) {
                jsonl_msg_done(&m);
                return fail_result(ret, "worker_crashed", vs_error_message(err));
        }
        json_t *o = json_pack("{s:b,s:I,s:I,s:s,s:I,s:b}", "ok", 1, "length", (json_int_t)m.raw_len, "size",
                              (json_int_t)rep.size, "sha256", rep.sha256, "offset", (json_int_t)rep.offset, "eof",
                              rep.eof);
        json_decref(m.obj);
        m.obj = o;
        *ret = m;
        return o ? 0 : -ENOMEM;
}

/* 0 and *ret the worker's write reply as a result, or 1 with *ret the
 * failure. */
static int write_once(CliLink *l, const char *path, bool parents, const char *if_sha, const void *data, size_t len,
                      JsonlMsg *ret) {
        _cleanup_free_ char *abs = NULL;
        ProtocolWriteFileRequest wr = { .path = tools_in_dir(l->workspace, path, &abs), .create_parents = parents,
                                        .if_sha256 = if_sha };
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = protocol_encode_write_file_request(&out, session_next_id(l->session), &wr, data, len);
        if (r < 0)
                return r;
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = worker_call(l, &out, &m, ret)))
                return r;
        ProtocolWriteFileReply rep;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (protocol_decode_write_file_reply(m.obj, &rep, &err) < 0) {
                jsonl_msg_done(&m);
                return fail_result(ret, "worker_crashed", vs_error_message(err)) ?: 1;
        }
        json_t *o = json_pack("{s:b,s:I,s:s,s:b}", "ok", 1, "size", (json_int_t)rep.size, "sha256", rep.sha256,
                              "created", rep.created);
        jsonl_msg_done(&m);
        if (!o)
                return -ENOMEM;
        *ret = (JsonlMsg)JSONL_MSG_INIT;
        ret->obj = o;
        return 0;
}

static int embedded_write(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        int r = write_once(l, json_string_value(json_object_get(req, "path")),
                           json_is_true(json_object_get(req, "create_parents")), NULL, raw, raw_len, ret);
        return r < 0 ? r : 0;
}

static int embedded_edit(CliLink *l, json_t *req, JsonlMsg *ret) {
        const char *path = json_string_value(json_object_get(req, "path"));
        const char *old_text = json_string_value(json_object_get(req, "old_string"));
        const char *new_text = json_string_value(json_object_get(req, "new_string"));
        bool all = json_is_true(json_object_get(req, "replace_all"));
        for (int attempt = 0; attempt < EDIT_MAX_ATTEMPTS; attempt++) {
                json_t *rq = json_pack("{s:s}", "path", path);
                if (!rq)
                        return -ENOMEM;
                int r = embedded_read(l, rq, ret);
                json_decref(rq);
                if (r < 0)
                        return r;
                if (!json_is_true(json_object_get(ret->obj, "ok")))
                        return 0;
                if (!json_is_true(json_object_get(ret->obj, "eof"))) {
                        jsonl_msg_done(ret);
                        return fail_result(ret, "too_large", "the file is over 64 MiB, too large to edit in one piece");
                }
                char sha[SHA256_HEX_LEN + 1];
                snprintf(sha, sizeof sha, "%s", json_string_value(json_object_get(ret->obj, "sha256")));
                _cleanup_free_ char *edited = NULL;
                size_t elen = 0, count = 0;
                _cleanup_(vs_error_freep) VsError *err = NULL;
                r = tool_edit_apply(ret->raw ? ret->raw : "", ret->raw_len, old_text, new_text, all, &edited, &elen,
                                    &count, &err);
                jsonl_msg_done(ret);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail_result(ret, vs_error_kind(err) ? vs_error_kind(err) : "bad_request",
                                           vs_error_message(err));
                /* if_sha256: a change between read and write is never
                 * overwritten; the edit is applied again to the new content. */
                r = write_once(l, path, false, sha, edited, elen, ret);
                if (r < 0)
                        return r;
                if (r == 0) {
                        json_object_set_new(ret->obj, "replacements", json_integer((json_int_t)count));
                        json_object_set_new(ret->obj, "retries", json_integer(attempt));
                        return 0;
                }
                const char *code = json_string_value(json_object_get(json_object_get(ret->obj, "error"), "code"));
                if (!code || !streq(code, "precondition_failed"))
                        return 0;
                jsonl_msg_done(ret);
        }
        return fail_result(ret, "conflict", "the file kept changing under the edit; try again");
}

static int embedded_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        int r = embedded_open(l);
        if (r < 0)
                return r;
        if (l->open_code)
                return fail_result(ret, l->open_code, l->open_message);
        const char *tool = json_string_value(json_object_get(req, "tool"));
        if (streq(tool, "terminal"))
                r = embedded_terminal(l, req, raw, raw_len, ret);
        else if (streq(tool, "file_read"))
                r = embedded_read(l, req, ret);
        else if (streq(tool, "file_write"))
                r = embedded_write(l, req, raw, raw_len, ret);
        else if (streq(tool, "file_edit"))
                r = embedded_edit(l, req, ret);
        else
                r = fail_result(ret, "unknown_tool", "this tool is served by the daemon only");
        if (r < 0)
                return r;
        json_object_set_new(ret->obj, "sandboxed", json_boolean(l->session->sandboxed));
        json_object_set_new(ret->obj, "sandbox", embedded_sandbox(l));
        json_object_set_new(ret->obj, "policy_pending", l->pending ? json_string(l->pending) : json_null());
        return 0;
}

static int link_call(CliLink *l, json_t *q, const void *raw, size_t raw_len, JsonlMsg *ret) {
        const char *tool = json_string_value(json_object_get(q, "tool"));
        if (!streq(tool, "status")) {
                if (!l->workspace) {
                        char msg[PATH_MAX + 128];
                        snprintf(msg, sizeof msg, "workspace %s: %s", l->args->val[OPT_WORKSPACE] ?: ".",
                                 strerror(l->workspace_errno));
                        return fail_result(ret, "workspace_not_found", msg);
                }
                json_object_set_new(q, "workspace", json_string(l->workspace));
        }
        if (l->socket) {
                if (l->args->require_sandbox)
                        json_object_set_new(q, "require_sandbox", json_true());
                if (streq(tool, "terminal") || streq(tool, "file_read"))
                        json_object_set_new(q, "binary", json_true());
                return daemon_call(l, q, raw, raw_len, ret);
        }
        return embedded_call(l, q, raw, raw_len, ret);
}

int cli_link_call(CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        if (!req)
                return -ENOMEM;
        int r = link_call(l, req, raw, raw_len, ret);
        json_decref(req);
        return r;
}
