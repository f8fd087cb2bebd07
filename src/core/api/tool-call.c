/* SPDX-License-Identifier: MIT */
#include "tool-call.h"

#include <string.h>

#include "host-aside.h"
#include "host-run-scan.h"
#include "json-util.h"
#include "strv.h"
#include "tools.h"
#include "utf8.h"

void tool_call_init(VsToolCall *c, const VsToolArgs *args, const VsPolicy *policy) {
        *c = (VsToolCall){ .a = *args };
        tool_call_ceilings(c, policy);
}

void tool_call_ceilings(VsToolCall *c, const VsPolicy *policy) {
        /* Unsandboxed, the policy's limits were never asked for: the worker
         * keeps its defaults, as a host shell would not cap either. */
        bool sb = policy && policy->sandboxed;
        c->max_timeout_ms = sb ? policy->limits.timeout_s * 1000 : 0;
        c->max_output = sb ? policy->limits.max_output : 0;
}

void tool_call_done(VsToolCall *c) {
        free(c->edited);
        c->edited = NULL;
        c->edited_len = 0;
}

/* asked, lowered to ceiling; 0 (not asked) becomes the ceiling itself, so
 * the request says the limit that holds. */
static uint64_t ceiling(uint64_t asked, uint64_t max) {
        if (!max)
                return asked;
        return asked && asked < max ? asked : max;
}

int tool_call_encode(VsToolCall *c, uint64_t wid, StrBuf *out) {
        const VsToolArgs *a = &c->a;
        switch (a->tool) {
        case VS_TOOL_TERMINAL: {
                ProtocolExecRequest q = {
                        .argv = a->argv,
                        .cwd = a->cwd,
                        .env = a->env,
                        .timeout_ms = ceiling(a->timeout_ms, c->max_timeout_ms),
                        .max_output = ceiling(a->max_output, c->max_output),
                };
                return protocol_encode_exec_request(out, wid, &q, a->data, a->data_len);
        }
        case VS_TOOL_FILE_READ: {
                ProtocolReadFileRequest q = { .path = a->path, .offset = a->offset, .limit = a->limit,
                                              .start_line = a->start_line, .max_lines = a->max_lines };
                return protocol_encode_read_file_request(out, wid, &q);
        }
        case VS_TOOL_FILE_WRITE: {
                ProtocolWriteFileRequest q = {
                        .path = a->path,
                        .has_mode = a->has_mode,
                        .mode = a->mode,
                        .create_parents = a->create_parents,
                        .if_sha256 = a->if_sha256,
                };
                return protocol_encode_write_file_request(out, wid, &q, a->data ? a->data : "", a->data_len);
        }
        case VS_TOOL_LIST_DIR: {
                ProtocolListDirRequest q = { .path = a->path, .max_entries = a->max_entries };
                return protocol_encode_list_dir_request(out, wid, &q);
        }
        case VS_TOOL_GLOB:
        case VS_TOOL_GREP: {
                ProtocolFindRequest q = a->find;
                q.head.op = a->tool == VS_TOOL_GLOB ? PROTOCOL_OP_GLOB : PROTOCOL_OP_GREP;
                q.path = a->path;
                return protocol_encode_find_request(out, wid, &q);
        }
        case VS_TOOL_FILE_EDIT:
                if (c->stage == 0) {
                        ProtocolReadFileRequest q = { .path = a->path };
                        return protocol_encode_read_file_request(out, wid, &q);
                } else {
                        /* if_sha256: a change between our read and this
                         * write is never overwritten (the worker refuses). */
                        ProtocolWriteFileRequest q = { .path = a->path, .if_sha256 = c->sha };
                        return protocol_encode_write_file_request(out, wid, &q, c->edited ? c->edited : "",
                                                                  c->edited_len);
                }
        }
        return -EINVAL;
}

static int malformed(VsError **err, const char *what) {
        return vs_error_set_kind(err, -EPROTO, "worker_crashed", "the worker sent a malformed %s reply", what);
}

#define SEALED_NOTE                                                                                                  \
        "\"Device or resource busy\" (EBUSY) is how the jail refuses a change to a sealed file: .git/config, "        \
        ".git/hooks, vectora.toml and the other protected paths are mounted read-only over themselves, so they "     \
        "cannot be written, replaced or removed from inside. For git settings use `git config --global` (kept in "    \
        "the jail's home); anything else is the user's to change on the host"

static int exec_result(const VsToolCall *c, JsonlMsg *m, json_t **ret, VsError **err) {
        ProtocolExecReply e;
        if (protocol_decode_exec_reply(m->obj, m->raw_len, &e, NULL) < 0)
                return malformed(err, "exec");
        json_t *o = json_pack("{s:I,s:I,s:b,s:b,s:I,s:I,s:I,s:I,s:b,s:I}", "exit_code", (json_int_t)e.exit_code,
                              "signal", (json_int_t)e.signal, "timed_out", e.timed_out, "cancelled", e.cancelled,
                              "stdout_len", (json_int_t)e.stdout_len, "stderr_len", (json_int_t)e.stderr_len,
                              "stdout_total", (json_int_t)e.stdout_total, "stderr_total", (json_int_t)e.stderr_total,
                              "truncated", e.stdout_total > e.stdout_len || e.stderr_total > e.stderr_len,
                              "duration_us", (json_int_t)e.duration_us);
        /* The agent asked for longer than the policy allows: said, so a
         * command killed at the limit is not retried with a longer one. */
        if (o && c->max_timeout_ms && c->a.timeout_ms > c->max_timeout_ms &&
            json_object_set_new(o, "timeout_capped_ms", json_integer((json_int_t)c->max_timeout_ms)) < 0)
                json_decref(TAKE_PTR(o));
        /* A write to a sealed file fails EBUSY (it is a mount point: the
         * rename over it, or its removal, cannot happen), which tools print
         * without a word of why: the agent is told. */
        if (o && e.exit_code != 0 && m->raw && memmem(m->raw, m->raw_len, "Device or resource busy", 23) &&
            json_object_set_new(o, "sealed_note", json_string(SEALED_NOTE)) < 0)
                json_decref(TAKE_PTR(o));
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* A text read: a window cut inside a character is trimmed to whole
 * characters (the result's offset and length say what is shown, and the
 * next read starts at offset + length); only content that is not UTF-8
 * for other reasons stays as it is (binary). */
static void read_trim(JsonlMsg *m, ProtocolReadFileReply *rf) {
        size_t skip, len;
        if (!m->raw || !utf8_whole_window(m->raw, m->raw_len, rf->eof, &skip, &len))
                return;
        if (skip)
                memmove(m->raw, m->raw + skip, len);
        rf->offset += skip;
        m->raw_len = len;
}

static int read_result(const VsToolCall *c, JsonlMsg *m, json_t **ret, VsError **err) {
        ProtocolReadFileReply rf;
        if (protocol_decode_read_file_reply(m->obj, &rf, NULL) < 0)
                return malformed(err, "read");
        if (c->a.text)
                read_trim(m, &rf);
        json_t *o = json_pack("{s:I,s:s,s:I,s:b,s:I,s:I}", "size", (json_int_t)rf.size, "sha256", rf.sha256, "offset",
                              (json_int_t)rf.offset, "eof", rf.eof, "length", (json_int_t)m->raw_len, "start_line",
                              (json_int_t)rf.start_line);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

static int write_result(JsonlMsg *m, json_t **ret, VsError **err) {
        ProtocolWriteFileReply w;
        if (protocol_decode_write_file_reply(m->obj, &w, NULL) < 0)
                return malformed(err, "write");
        json_t *o = json_pack("{s:I,s:s,s:b}", "size", (json_int_t)w.size, "sha256", w.sha256, "created", w.created);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* Sizes are said for files only: a directory's st_size means nothing to
 * an agent. */
static int list_result(JsonlMsg *m, json_t **ret, VsError **err) {
        _cleanup_(protocol_list_dir_reply_done) ProtocolListDirReply l = {};
        if (protocol_decode_list_dir_reply(m->obj, &l, NULL) < 0)
                return malformed(err, "list_dir");
        json_t *a = json_array();
        for (size_t i = 0; a && i < l.n_entries; i++) {
                json_t *e = json_pack("{s:s,s:s}", "name", l.entries[i].name, "type",
                                      protocol_file_type_to_string(l.entries[i].type));
                if (e && l.entries[i].type == PROTOCOL_FILE_FILE &&
                    json_object_set_new(e, "size", json_integer((json_int_t)l.entries[i].size)) < 0)
                        json_decref(TAKE_PTR(e));
                if (!e || json_array_append_new(a, e) < 0)
                        json_decref(TAKE_PTR(a));
        }
        json_t *o = a ? json_pack("{s:o,s:I,s:b}", "entries", a, "total", (json_int_t)l.total, "truncated", l.truncated)
                      : NULL;
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* The worker's results as they are (each item checked by the decoder),
 * with what was counted and whether a limit cut the walk short. */
static int find_result(const VsToolCall *c, JsonlMsg *m, json_t **ret, VsError **err) {
        ProtocolFindReply f;
        bool grep = c->a.tool == VS_TOOL_GREP;
        if (protocol_decode_find_reply(m->obj, grep ? PROTOCOL_OP_GREP : PROTOCOL_OP_GLOB, &f, NULL) < 0)
                return malformed(err, grep ? "grep" : "glob");
        json_t *o = json_pack("{s:O,s:I,s:b,s:s?}", grep ? "matches" : "paths", f.results, grep ? "files_searched" : "entries_visited",
                              (json_int_t)f.files, "truncated", f.limit != NULL, "limit", f.limit);
        if (o && grep &&
            (json_object_set_new(o, "match_count", json_integer((json_int_t)f.matches)) < 0 ||
             json_object_set_new(o, "files_matched", json_integer((json_int_t)f.files_matched)) < 0 ||
             json_object_set_new(o, "files_skipped", json_integer((json_int_t)f.skipped)) < 0))
                json_decref(TAKE_PTR(o));
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* file_edit, stage 0: the whole file read; apply the edit to it. */
static int edit_apply(VsToolCall *c, JsonlMsg *m, VsError **err) {
        ProtocolReadFileReply rf;
        if (protocol_decode_read_file_reply(m->obj, &rf, NULL) < 0)
                return malformed(err, "read");
        if (!rf.eof || rf.offset != 0)
                return vs_error_set_kind(err, -EFBIG, "too_large",
                                         "the file is over 64 MiB, too large to edit in one piece");
        snprintf(c->sha, sizeof c->sha, "%s", rf.sha256);
        free(c->edited);
        c->edited = NULL;
        return tool_edit_apply(m->raw ? m->raw : "", m->raw_len, c->a.old_text, c->a.new_text, c->a.replace_all,
                               &c->edited, &c->edited_len, &c->count, err);
}

int tool_call_feed(VsToolCall *c, JsonlMsg *m, json_t **ret_result, VsError **err) {
        ProtocolReplyHead h;
        if (protocol_decode_reply_head(m->obj, &h, NULL) < 0)
                return malformed(err, "");
        if (c->a.tool == VS_TOOL_FILE_EDIT && c->stage == 1 && !h.ok &&
            h.error_code == PROTOCOL_ERROR_PRECONDITION_FAILED) {
                /* Another writer changed the file between our read and our
                 * write: apply the edit again to the new content, so that
                 * neither change is lost. */
                if (++c->attempts >= TOOL_EDIT_MAX_ATTEMPTS)
                        return vs_error_set_kind(err, -EBUSY, "conflict",
                                                 "the file kept changing during the edit; read it again and retry");
                c->stage = 0;
                return TOOL_CALL_AGAIN;
        }
        if (!h.ok)
                return vs_error_set_kind(err, -EIO, h.error_code_name ? h.error_code_name : "io", "%s",
                                         h.error_message ? h.error_message : "the worker refused the request");
        int r;
        switch (c->a.tool) {
        case VS_TOOL_TERMINAL:
                return exec_result(c, m, ret_result, err);
        case VS_TOOL_FILE_READ:
                return read_result(c, m, ret_result, err);
        case VS_TOOL_FILE_WRITE:
                return write_result(m, ret_result, err);
        case VS_TOOL_LIST_DIR:
                return list_result(m, ret_result, err);
        case VS_TOOL_GLOB:
        case VS_TOOL_GREP:
                return find_result(c, m, ret_result, err);
        case VS_TOOL_FILE_EDIT:
                if (c->stage == 0) {
                        if ((r = edit_apply(c, m, err)) < 0)
                                return r;
                        c->stage = 1;
                        return TOOL_CALL_AGAIN;
                }
                if ((r = write_result(m, ret_result, err)) < 0)
                        return r;
                json_object_del(*ret_result, "created");
                if (json_object_set_new(*ret_result, "replacements", json_integer((json_int_t)c->count)) < 0 ||
                    json_object_set_new(*ret_result, "retries", json_integer((json_int_t)c->attempts)) < 0) {
                        json_decref(TAKE_PTR(*ret_result));
                        return -ENOMEM;
                }
                return 0;
        }
        return -EINVAL;
}

static int tool_call_run_one(VsSession *s, VsToolCall *c, int cancel_fd, json_t **ret_result, JsonlMsg *ret_msg,
                             VsError **err);

/* After each call: a repository the jail made is put aside (its worker
 * ended first) and listed in the result's host_run_files. */
int tool_call_run(VsSession *s, VsToolCall *c, int cancel_fd, json_t **ret_result, JsonlMsg *ret_msg, VsError **err) {
        int r = tool_call_run_one(s, c, cancel_fd, ret_result, ret_msg, err);
        if (!s->no_sweep_per_call && tool_call_sweep(s, r >= 0 ? *ret_result : NULL) == -ENOMEM)
                return -ENOMEM;
        return r;
}

int tool_call_sweep(VsSession *s, json_t *result) {
        _cleanup_strv_free_ char **moved = NULL;
        if (session_git_sweep(s, &moved) > 0 && result && host_run_files_add(result, json_strv(moved)) < 0)
                return -ENOMEM;
        /* What the start put aside, once, in the first result after it. */
        if (s->locks_init)
                pthread_mutex_lock(&s->sweep_lock);
        _cleanup_(put_asides_freep) VsPutAsides *aside = result ? TAKE_PTR(s->put_aside) : NULL;
        if (s->locks_init)
                pthread_mutex_unlock(&s->sweep_lock);
        /* Each link, and where it went unless it was removed. */
        _cleanup_strv_free_ char **listed = NULL;
        for (size_t i = 0; aside && i < aside->n; i++)
                if (strv_extend(&listed, aside->v[i].link) < 0 ||
                    (aside->v[i].moved && strv_extend(&listed, aside->v[i].moved) < 0))
                        return -ENOMEM;
        if (listed && host_run_files_add(result, json_strv(listed)) < 0)
                return -ENOMEM;
        return 0;
}

static int tool_call_run_one(VsSession *s, VsToolCall *c, int cancel_fd, json_t **ret_result, JsonlMsg *ret_msg,
                             VsError **err) {
        for (;;) {
                _cleanup_strbuf_ StrBuf req = STRBUF_INIT;
                uint64_t wid = session_next_id(s);
                int r = tool_call_encode(c, wid, &req);
                if (r == -EMSGSIZE || r == -ENOBUFS)
                        return vs_error_set_kind(err, r, "too_large", "the request is over the protocol's 64 MiB limit");
                if (r < 0)
                        return r;
                JsonlMsg m = JSONL_MSG_INIT;
                if ((r = session_call(s, wid, &req, 0, cancel_fd, &m, err)) < 0)
                        return r;
                json_t *result = NULL;
                r = tool_call_feed(c, &m, &result, err);
                if (r == TOOL_CALL_AGAIN) {
                        jsonl_msg_done(&m);
                        continue;
                }
                if (r < 0) {
                        jsonl_msg_done(&m);
                        return r;
                }
                *ret_result = result;
                *ret_msg = m;
                return 0;
        }
}
