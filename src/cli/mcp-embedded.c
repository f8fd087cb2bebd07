/* SPDX-License-Identifier: MIT */
/* vectora-sandbox mcp without a daemon: the MCP process keeps one worker
 * for its workspace over the core's blocking session, so calls after the
 * first are warm. Replies are built in the daemon API's shape. */
#include <string.h>

#include "fd-util.h"
#include "json-util.h"
#include "mcp-serve.h"
#include "path-util.h"
#include "protocol.h"
#include "sha256.h"
#include "strv.h"
#include "tools.h"

/* Like the daemon's file_edit: re-read and re-apply when another writer
 * changed the file between our read and our write. */
#define EDIT_MAX_RETRIES 16

void mcp_embedded_done(McpEmbedded *e) {
        session_end(TAKE_PTR(e->session));
        policy_free(TAKE_PTR(e->policy));
        free(TAKE_PTR(e->pending));
}

static char *config_path(const McpEmbedded *e) {
        if (e->policy && e->policy->config_path)
                return strdup(e->policy->config_path);
        return path_join(e->policy ? e->policy->workspace : e->workspace, "vectora.toml");
}

/* Whether vectora.toml is still the file the session's policy came from. */
static bool config_unchanged(const McpEmbedded *e) {
        _cleanup_free_ char *p = config_path(e);
        struct stat st;
        bool present = p && stat(p, &st) == 0;
        if (present != e->config_present)
                return false;
        return !present || (st.st_dev == e->config_st.st_dev && st.st_ino == e->config_st.st_ino &&
                            st.st_size == e->config_st.st_size && st.st_mtim.tv_sec == e->config_st.st_mtim.tv_sec &&
                            st.st_mtim.tv_nsec == e->config_st.st_mtim.tv_nsec &&
                            st.st_ctim.tv_sec == e->config_st.st_ctim.tv_sec &&
                            st.st_ctim.tv_nsec == e->config_st.st_ctim.tv_nsec);
}

static json_t *error_reply(const char *code, const char *message) {
        return json_pack("{s:b,s:{s:s,s:s},s:b,s:{s:n,s:s}}", "ok", false, "error", "code", code, "message", message,
                         "sandboxed", false, "sandbox", "backend", "state", "refused");
}

/* The sandbox fields every reply carries (docs/protocol.md). */
static int add_sandbox(const McpEmbedded *e, json_t *reply) {
        _cleanup_strv_free_ char **layers = NULL;
        if (session_layers(e->session, &layers) < 0)
                return -ENOMEM;
        bool sb = e->policy->sandboxed;
        json_t *s = json_pack("{s:s,s:s,s:o,s:o}", "backend", sb ? vs_backend_name(e->policy->backend) : "none", "state",
                              sb ? "sandboxed" : "unsandboxed", "layers", json_strv(layers), "degraded",
                              json_strv(e->session->degraded));
        if (!s || json_object_set_new(reply, "sandbox", s) < 0 || json_object_set_new(reply, "sandboxed", json_boolean(sb)) < 0 ||
            json_object_set_new(reply, "policy_pending", e->pending ? json_string(e->pending) : json_null()) < 0)
                return -ENOMEM;
        return 0;
}

static int ensure_session(McpEmbedded *e, json_t **ret_refusal) {
        if (e->session && config_unchanged(e))
                return 0;
        mcp_embedded_done(e);
        _cleanup_(vs_error_freep) VsError *err = NULL;
        /* The file as it is now: a change after this point is seen next call. */
        _cleanup_free_ char *cp = config_path(e);
        e->config_present = cp && stat(cp, &e->config_st) == 0;
        int r = tools_open(e->workspace, e->require_sandbox, &e->policy, &e->session, &e->pending, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                const char *kind = vs_error_kind(err);
                *ret_refusal = error_reply(kind ? kind : "sandbox_unavailable", vs_error_message(err));
                return *ret_refusal ? 0 : -ENOMEM;
        }
        /* tools_open may have found the workspace root above the directory. */
        _cleanup_free_ char *cp2 = config_path(e);
        if (cp2 && (!cp || !streq(cp, cp2)))
                e->config_present = stat(cp2, &e->config_st) == 0;
        return 0;
}

/* One request to the worker; a dead worker is ended so the next call
 * starts a fresh one. *ret_reply: the worker's reply, or a refusal. */
static int worker_call(McpEmbedded *e, StrBuf *req, JsonlMsg *m, json_t **ret_refusal) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = session_call(e->session, req, 0, m, &err);
        if (r < 0) {
                mcp_embedded_done(e);
                const char *kind = vs_error_kind(err);
                *ret_refusal = error_reply(kind ? kind : "worker_crashed", vs_error_message(err));
                return *ret_refusal ? 0 : -ENOMEM;
        }
        return 0;
}

/* The worker's reply as the daemon would pass it on. */
static int pass_on(McpEmbedded *e, JsonlMsg *m, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        json_t *reply = json_deep_copy(m->obj);
        if (!reply || add_sandbox(e, reply) < 0) {
                json_decref(reply);
                return -ENOMEM;
        }
        json_object_del(reply, "id");
        if (m->has_raw && json_is_true(json_object_get(reply, "ok")) &&
            !json_object_get(reply, "length") && json_object_set_new(reply, "length", json_integer((json_int_t)m->raw_len)) < 0) {
                json_decref(reply);
                return -ENOMEM;
        }
        *ret_raw = m->has_raw ? jsonl_msg_steal_raw(m, ret_raw_len) : NULL;
        if (m->has_raw && !*ret_raw) {
                json_decref(reply);
                return -ENOMEM;
        }
        *ret_reply = reply;
        return 0;
}

static int do_exec(McpEmbedded *e, const McpCall *c, StrBuf *req) {
        uint64_t timeout_ms = c->timeout_s * 1000;
        /* The workspace's limit caps what a call asks for, as in the daemon. */
        if (e->policy->sandboxed && (timeout_ms == 0 || timeout_ms > e->policy->limits.timeout_s * 1000))
                timeout_ms = e->policy->limits.timeout_s * 1000;
        char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)c->command, NULL };
        ProtocolExecRequest x = { .argv = argv, .cwd = c->cwd, .timeout_ms = timeout_ms };
        const char *in = c->stdin_text;
        return protocol_encode_exec_request(req, session_next_id(e->session), &x, in, in ? strlen(in) : 0);
}

/* file_edit: read with the hash, apply, write only if the hash still
 * holds; lost-update safe like the daemon's. */
static int do_edit(McpEmbedded *e, const McpCall *c, json_t **ret_reply) {
        for (unsigned retries = 0;; retries++) {
                _cleanup_strbuf_ StrBuf req = STRBUF_INIT;
                ProtocolReadFileRequest rq = { .path = c->path };
                int r = protocol_encode_read_file_request(&req, session_next_id(e->session), &rq);
                if (r < 0)
                        return r;
                JsonlMsg m = JSONL_MSG_INIT;
                json_t *refusal = NULL;
                if ((r = worker_call(e, &req, &m, &refusal)) < 0 || refusal) {
                        *ret_reply = refusal;
                        return r;
                }
                ProtocolReplyHead h;
                ProtocolReadFileReply rf;
                if (protocol_decode_reply_head(m.obj, &h, NULL) < 0 || !h.ok ||
                    protocol_decode_read_file_reply(m.obj, &rf, NULL) < 0 || !rf.eof || rf.offset != 0) {
                        char *raw = NULL;
                        size_t n = 0;
                        if (h.ok)
                                *ret_reply = error_reply("too_large", "the file is too large to edit in one piece");
                        else if ((r = pass_on(e, &m, ret_reply, &raw, &n)) < 0) {
                                jsonl_msg_done(&m);
                                return r;
                        }
                        free(raw);
                        jsonl_msg_done(&m);
                        return *ret_reply ? 0 : -ENOMEM;
                }
                char sha[SHA256_HEX_LEN + 1];
                snprintf(sha, sizeof sha, "%s", rf.sha256);
                _cleanup_free_ char *edited = NULL;
                size_t elen = 0, count = 0;
                _cleanup_(vs_error_freep) VsError *err = NULL;
                r = tool_edit_apply(m.raw ? m.raw : "", m.raw_len, c->old_string, c->new_string, c->replace_all, &edited,
                                    &elen, &count, &err);
                jsonl_msg_done(&m);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        *ret_reply = error_reply(vs_error_kind(err) ? vs_error_kind(err) : "bad_request", vs_error_message(err));
                        if (*ret_reply && add_sandbox(e, *ret_reply) < 0)
                                return -ENOMEM;
                        return *ret_reply ? 0 : -ENOMEM;
                }
                strbuf_clear(&req);
                ProtocolWriteFileRequest wq = { .path = c->path, .if_sha256 = sha };
                if ((r = protocol_encode_write_file_request(&req, session_next_id(e->session), &wq, edited, elen)) < 0)
                        return r;
                if ((r = worker_call(e, &req, &m, &refusal)) < 0 || refusal) {
                        *ret_reply = refusal;
                        return r;
                }
                if (protocol_decode_reply_head(m.obj, &h, NULL) == 0 && !h.ok && h.error_code_name &&
                    streq(h.error_code_name, "precondition_failed") && retries < EDIT_MAX_RETRIES) {
                        jsonl_msg_done(&m);
                        continue;
                }
                char *raw = NULL;
                size_t n = 0;
                if (h.ok && !json_object_get(m.obj, "replacements") &&
                    (json_object_set_new(m.obj, "replacements", json_integer((json_int_t)count)) < 0 ||
                     json_object_set_new(m.obj, "retries", json_integer(retries)) < 0)) {
                        jsonl_msg_done(&m);
                        return -ENOMEM;
                }
                if (!h.ok && h.error_code_name && streq(h.error_code_name, "precondition_failed")) {
                        jsonl_msg_done(&m);
                        *ret_reply = error_reply("conflict", "the file kept changing under the edit; read it again and retry");
                        return *ret_reply ? 0 : -ENOMEM;
                }
                r = pass_on(e, &m, ret_reply, &raw, &n);
                free(raw);
                jsonl_msg_done(&m);
                return r;
        }
}

/* The worker's own log (its stderr pipe) goes to ours: nobody else reads
 * it in a long session, and a full pipe would stall the worker. */
static void forward_worker_log(McpEmbedded *e) {
        if (!e->session || e->session->proc.stderr_fd < 0)
                return;
        fd_set_nonblock(e->session->proc.stderr_fd, true);
        char buf[4096];
        ssize_t k;
        while ((k = read(e->session->proc.stderr_fd, buf, sizeof buf)) > 0)
                (void)!write_all(STDERR_FILENO, buf, (size_t)k);
}

static int embedded_call(McpEmbedded *e, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        *ret_raw = NULL;
        *ret_raw_len = 0;
        json_t *refusal = NULL;
        int r = ensure_session(e, &refusal);
        if (r < 0 || refusal) {
                *ret_reply = refusal;
                return r;
        }
        if (c->tool == MCP_TOOL_FILE_EDIT)
                return do_edit(e, c, ret_reply);
        _cleanup_strbuf_ StrBuf req = STRBUF_INIT;
        switch (c->tool) {
        case MCP_TOOL_TERMINAL:
                r = do_exec(e, c, &req);
                break;
        case MCP_TOOL_FILE_READ: {
                ProtocolReadFileRequest q = { .path = c->path, .offset = c->offset, .limit = c->limit };
                r = protocol_encode_read_file_request(&req, session_next_id(e->session), &q);
                break;
        }
        case MCP_TOOL_FILE_WRITE: {
                ProtocolWriteFileRequest q = { .path = c->path, .create_parents = c->create_parents };
                r = protocol_encode_write_file_request(&req, session_next_id(e->session), &q, c->content, c->content_len);
                break;
        }
        default:
                r = -EINVAL;
        }
        if (r == -EMSGSIZE || r == -ENOBUFS) {
                *ret_reply = error_reply("too_large", "the request is over the protocol's 64 MiB limit");
                return *ret_reply ? 0 : -ENOMEM;
        }
        if (r < 0)
                return -ENOMEM;
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = worker_call(e, &req, &m, &refusal)) < 0 || refusal) {
                *ret_reply = refusal;
                return r;
        }
        r = pass_on(e, &m, ret_reply, ret_raw, ret_raw_len);
        jsonl_msg_done(&m);
        return r;
}

int mcp_embedded_call(McpEmbedded *e, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len) {
        int r = embedded_call(e, c, ret_reply, ret_raw, ret_raw_len);
        forward_worker_log(e);
        return r;
}
