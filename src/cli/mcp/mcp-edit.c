/* SPDX-License-Identifier: MIT */
/* multi_edit and apply_patch (mcp-edit.h): read every file the call
 * touches through the jail, compute every new content here, and only then
 * write, through the jail again; a write the jail refuses (a read-only or
 * protected path, a mask) undoes the writes before it, so the call changes
 * all of its files or none. Nothing here opens a host path: the paths go
 * to the worker as the agent wrote them. */
#include "mcp-edit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "mcp-diff.h"
#include "mcp-patch.h"
#include "strbuf.h"
#include "tools.h"

#define EDITS_MAX 100

bool mcp_tool_is_edit(McpTool t) {
        return t == MCP_TOOL_MULTI_EDIT || t == MCP_TOOL_APPLY_PATCH;
}

const char *mcp_edit_check(McpCall *c, json_t *args) {
        if (c->tool == MCP_TOOL_APPLY_PATCH)
                return c->patch[0] ? NULL : "patch must not be empty";
        if (c->tool != MCP_TOOL_MULTI_EDIT)
                return NULL;
        json_t *edits = json_object_get(args, "edits");
        if (!json_is_array(edits) || json_array_size(edits) == 0 || json_array_size(edits) > EDITS_MAX)
                return "edits must be an array of 1 to 100 objects {old_string, new_string, replace_all}";
        size_t i;
        json_t *e;
        json_array_foreach(edits, i, e) {
                const char *k;
                json_t *v;
                if (!json_is_object(e))
                        return "each edit must be an object {old_string, new_string, replace_all}";
                json_object_foreach(e, k, v) {
                        bool str = streq(k, "old_string") || streq(k, "new_string");
                        if (!str && !streq(k, "replace_all"))
                                return "an edit has only old_string, new_string and replace_all";
                        if (str ? !json_is_string(v) : !json_is_boolean(v))
                                return "old_string and new_string are strings, replace_all a boolean";
                }
                if (!json_object_get(e, "new_string") || !json_string_length(json_object_get(e, "old_string")))
                        return "each edit needs a non-empty old_string and a new_string";
        }
        c->edits = edits;
        return NULL;
}

/* ---- the jail's file operations ---- */

typedef struct Ctx {
        McpFileOp op;
        void *userdata;
        json_t *last;   /* the last reply that succeeded: its sandbox fields */
        json_t *error;  /* the tool error result to answer with, once set */
        bool structured;
} Ctx;

/* The refusal to answer with: the code and message of the jail's reply
 * (or ours), and that nothing changed. */
static void fail(Ctx *x, const char *code, const char *fmt, ...) _printf_(3, 4);
static void fail(Ctx *x, const char *code, const char *fmt, ...) {
        if (x->error)
                return;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        int k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0)
                return;
        _cleanup_strbuf_ StrBuf t = STRBUF_INIT;
        if (strbuf_appendf(&t, "%s (%s): %s", api_error_is(code, API_ERROR_DENIED) ? "refused" : "error", code, msg) < 0)
                return;
        x->error = json_pack("{s:[{s:s,s:s%}],s:b}", "content", "type", "text", "text", t.data, t.len, "isError", true);
        if (x->error && x->structured)
                (void)json_object_set_new(x->error, "structuredContent",
                                          json_pack("{s:b,s:{s:s,s:s}}", "ok", false, "error", "code", code, "message", msg));
}

/* One operation; the reply when it succeeded, else NULL (x->error set,
 * or out of memory). */
static json_t *run(Ctx *x, const McpCall *c, char **ret_raw, size_t *ret_raw_len, const char *what, bool *ret_missing) {
        json_t *reply = NULL, *error = NULL;
        char *raw = NULL;
        size_t raw_len = 0;
        if (x->op(x->userdata, c, &reply, &raw, &raw_len, &error) < 0)
                return NULL;
        if (error) {
                if (!x->error)
                        x->error = error;
                else
                        json_decref(error);
                free(raw);
                return NULL;
        }
        if (!json_is_true(json_object_get(reply, "ok"))) {
                json_t *e = json_object_get(reply, "error");
                const char *code = json_string_value(json_object_get(e, "code"));
                const char *msg = json_string_value(json_object_get(e, "message"));
                if (ret_missing && streq_ptr(code, "not_found"))
                        *ret_missing = true;
                else
                        fail(x, code ?: "error", "%s: %s", what, msg ?: "failed");
                json_decref(reply);
                free(raw);
                return NULL;
        }
        json_decref(x->last);
        x->last = json_incref(reply);
        if (ret_raw) {
                *ret_raw = raw;
                *ret_raw_len = raw_len;
        } else
                free(raw);
        return reply;
}

/* The whole file: 1 with its content, 0 when it does not exist, -1
 * refused (x->error), -ENOMEM. */
static int read_whole(Ctx *x, const char *path, char **ret, size_t *ret_len) {
        McpCall c = { .tool = MCP_TOOL_FILE_READ, .path = path, .limit = MCP_READ_MAX_LIMIT };
        char *raw = NULL;
        size_t raw_len = 0;
        _cleanup_free_ char *what = NULL;
        if (asprintf(&what, "reading %s", path) < 0)
                return -ENOMEM;
        bool missing = false;
        json_t *reply = run(x, &c, &raw, &raw_len, what, &missing);
        if (!reply)
                return missing ? 0 : x->error ? -1 : -ENOMEM;
        bool eof = json_is_true(json_object_get(reply, "eof"));
        json_decref(reply);
        if (!eof) {
                free(raw);
                fail(x, "too_large", "%s is over %u bytes; change it with the terminal tool", path, MCP_READ_MAX_LIMIT);
                return -1;
        }
        *ret = raw ? raw : strdup("");
        *ret_len = raw ? raw_len : 0;
        return *ret ? 1 : -ENOMEM;
}

static int write_whole(Ctx *x, const char *path, const char *p, size_t n) {
        McpCall c = { .tool = MCP_TOOL_FILE_WRITE, .path = path, .content = p, .content_len = n,
                      .create_parents = true };
        _cleanup_free_ char *what = NULL;
        if (asprintf(&what, "writing %s", path) < 0)
                return -ENOMEM;
        json_t *reply = run(x, &c, NULL, NULL, what, NULL);
        json_decref(reply);
        return reply ? 0 : x->error ? -1 : -ENOMEM;
}

/* Deleting is the jail's rm: the worker's file operations have no unlink,
 * and rm in the jail meets the same mounts, masks and Landlock rules. */
static int delete_file(Ctx *x, const char *path) {
        _cleanup_strbuf_ StrBuf cmd = STRBUF_INIT;
        int r = strbuf_appends(&cmd, "rm -- '");
        for (const char *q = path; *q; q++)
                r |= *q == '\'' ? strbuf_appends(&cmd, "'\\''") : strbuf_appendc(&cmd, *q);
        if ((r |= strbuf_appends(&cmd, "'")) < 0)
                return -ENOMEM;
        McpCall c = { .tool = MCP_TOOL_TERMINAL, .command = cmd.data, .timeout_s = 30, .max_output = 4096 };
        char *raw = NULL;
        size_t raw_len = 0;
        _cleanup_free_ char *what = NULL;
        if (asprintf(&what, "deleting %s", path) < 0)
                return -ENOMEM;
        json_t *reply = run(x, &c, &raw, &raw_len, what, NULL);
        if (!reply)
                return x->error ? -1 : -ENOMEM;
        json_int_t code = json_integer_value(json_object_get(reply, "exit_code"));
        json_decref(reply);
        if (code != 0)
                fail(x, "denied", "deleting %s: %.*s", path, (int)MIN(raw_len, (size_t)300), raw ? raw : "rm failed");
        free(raw);
        return code == 0 ? 0 : -1;
}

/* ---- what the call changes ---- */

typedef struct Change {
        char *path;        /* NULL: none (a file added has no old path) */
        char *new_path;    /* NULL: deleted */
        char *old, *new;
        size_t old_len, new_len;
        const char *action;
        bool written, removed; /* done so far, to undo */
} Change;

static void changes_free(Change *ch, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(ch[i].path);
                free(ch[i].new_path);
                free(ch[i].old);
                free(ch[i].new);
        }
        free(ch);
}

/* Writes the changes in order; on a refusal, undoes those done (best
 * effort: what could not be undone is named). */
static int commit(Ctx *x, Change *ch, size_t n) {
        size_t i;
        int r = 0;
        for (i = 0; i < n && r == 0; i++) {
                if (ch[i].new_path) {
                        r = write_whole(x, ch[i].new_path, ch[i].new, ch[i].new_len);
                        ch[i].written = r == 0;
                }
                if (r == 0 && ch[i].path && (!ch[i].new_path || !streq(ch[i].path, ch[i].new_path))) {
                        r = delete_file(x, ch[i].path);
                        ch[i].removed = r == 0;
                }
        }
        if (r == 0)
                return 0;
        _cleanup_strbuf_ StrBuf left = STRBUF_INIT;
        json_t *saved = TAKE_PTR(x->error); /* the refusal stays the answer */
        for (size_t k = i; k-- > 0;) {
                if (ch[k].removed && write_whole(x, ch[k].path, ch[k].old, ch[k].old_len) != 0)
                        (void)strbuf_appendf(&left, " %s", ch[k].path);
                if (ch[k].written) {
                        bool same = ch[k].path && streq(ch[k].path, ch[k].new_path);
                        if ((same ? write_whole(x, ch[k].path, ch[k].old, ch[k].old_len)
                                  : delete_file(x, ch[k].new_path)) != 0)
                                (void)strbuf_appendf(&left, " %s", ch[k].new_path);
                }
                json_decref(TAKE_PTR(x->error));
        }
        x->error = saved;
        if (left.len && x->error) {
                /* Said in the text: the agent must know what changed after all. */
                json_t *blk = json_array_get(json_object_get(x->error, "content"), 0);
                _cleanup_free_ char *t = NULL;
                if (asprintf(&t, "%s\n[could not undo the change of:%s]", json_string_value(json_object_get(blk, "text")),
                             left.data) >= 0)
                        (void)json_object_set_new(blk, "text", json_string(t));
        } else if (x->error) {
                json_t *blk = json_array_get(json_object_get(x->error, "content"), 0);
                _cleanup_free_ char *t = NULL;
                if (asprintf(&t, "%s\n[no file was changed]", json_string_value(json_object_get(blk, "text"))) >= 0)
                        (void)json_object_set_new(blk, "text", json_string(t));
        }
        return -1;
}

static int answer(Ctx *x, Change *ch, size_t n, json_t **ret) {
        _cleanup_strbuf_ StrBuf diff = STRBUF_INIT, t = STRBUF_INIT;
        _cleanup_(json_decrefp) json_t *files = json_array();
        if (!files)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (mcp_unified_diff(ch[i].path, ch[i].old, ch[i].old_len, ch[i].new_path, ch[i].new, ch[i].new_len,
                                     &diff) < 0 ||
                    json_array_append_new(files, json_pack("{s:s,s:s}", "path", ch[i].new_path ?: ch[i].path, "action",
                                                           ch[i].action)) < 0)
                        return -ENOMEM;
                if (strbuf_appendf(&t, "%s%s %s", i ? ", " : "", ch[i].action, ch[i].new_path ?: ch[i].path) < 0)
                        return -ENOMEM;
        }
        if (strbuf_appends(&t, diff.len ? "\n" : "\n(no change in content)\n") < 0 ||
            (diff.len && strbuf_append(&t, diff.data, diff.len) < 0))
                return -ENOMEM;
        const char *backend = json_string_value(json_object_get(json_object_get(x->last, "sandbox"), "backend"));
        if (strbuf_appendf(&t, "[%s through the jail (%s)]", n == 1 ? "written" : "all written",
                           backend ? backend : "?") < 0)
                return -ENOMEM;
        json_t *res = json_pack("{s:[{s:s,s:s%}],s:b}", "content", "type", "text", "text", t.data, t.len, "isError", false);
        if (res && x->structured) {
                json_t *s = json_pack("{s:b,s:s%,s:O}", "ok", true, "diff", diff.data ? diff.data : "", diff.len, "files",
                                      files);
                if (s && x->last) {
                        json_object_set(s, "sandboxed", json_object_get(x->last, "sandboxed") ?: json_false());
                        if (json_object_get(x->last, "sandbox"))
                                json_object_set(s, "sandbox", json_object_get(x->last, "sandbox"));
                }
                if (!s || json_object_set_new(res, "structuredContent", s) < 0) {
                        json_decref(res);
                        return -ENOMEM;
                }
        }
        *ret = res;
        return res ? 0 : -ENOMEM;
}

static int multi_edit(Ctx *x, const McpCall *c, Change **ret, size_t *ret_n) {
        Change *ch = calloc(1, sizeof *ch);
        if (!ch || !(ch->path = strdup(c->path)) || !(ch->new_path = strdup(c->path))) {
                changes_free(ch, ch ? 1 : 0);
                return -ENOMEM;
        }
        ch->action = "edited";
        *ret = ch;
        *ret_n = 1;
        int r = read_whole(x, c->path, &ch->old, &ch->old_len);
        if (r == 0)
                fail(x, "not_found", "%s does not exist; create it with file_write", c->path);
        if (r <= 0)
                return r < -1 ? r : -1;
        size_t cur_len = ch->old_len;
        char *cur = malloc(cur_len + 1);
        if (!cur)
                return -ENOMEM;
        memcpy(cur, ch->old, cur_len);
        cur[cur_len] = 0;
        size_t i;
        json_t *e;
        json_array_foreach(c->edits, i, e) {
                _cleanup_(vs_error_freep) VsError *err = NULL;
                char *next = NULL;
                size_t next_len = 0, count = 0;
                r = tool_edit_apply(cur, cur_len, json_string_value(json_object_get(e, "old_string")),
                                    json_string_value(json_object_get(e, "new_string")),
                                    json_is_true(json_object_get(e, "replace_all")), &next, &next_len, &count, &err);
                if (r == -ENOMEM) {
                        free(cur);
                        return r;
                }
                if (r < 0) {
                        free(cur);
                        fail(x, vs_error_kind(err) ?: "edit_not_found", "edit %zu of %zu in %s: %s; no edit was made",
                             i + 1, json_array_size(c->edits), c->path, vs_error_message(err));
                        return -1;
                }
                free(cur);
                cur = next;
                cur_len = next_len;
        }
        ch->new = cur;
        ch->new_len = cur_len;
        return 0;
}

/* Every file of the patch read and its new content made, before any
 * write. */
static int patch_changes(Ctx *x, const char *text, Change **ret, size_t *ret_n) {
        _cleanup_free_ char *why = NULL;
        _cleanup_(mcp_patch_done) McpPatch p = {};
        int r = mcp_patch_parse(text, &p, &why);
        if (r == -EINVAL)
                fail(x, "bad_patch", "%s; no file was changed", why);
        if (r < 0)
                return r == -EINVAL ? -1 : r;
        Change *ch = calloc(p.n_files, sizeof *ch);
        if (!ch)
                return -ENOMEM;
        *ret = ch;
        *ret_n = p.n_files;
        for (size_t i = 0; i < p.n_files; i++) {
                const McpPatchFile *f = &p.files[i];
                Change *c = &ch[i];
                for (size_t k = 0; k < i; k++)
                        if (streq_ptr(p.files[k].path, f->path) || streq_ptr(p.files[k].move_to, f->path)) {
                                fail(x, "bad_patch", "%s is named twice in the patch; give each file once", f->path);
                                return -1;
                        }
                if (f->kind != MCP_PATCH_ADD && !(c->path = strdup(f->path)))
                        return -ENOMEM;
                if (f->kind != MCP_PATCH_DELETE && !(c->new_path = strdup(f->move_to ?: f->path)))
                        return -ENOMEM;
                c->action = f->kind == MCP_PATCH_ADD ? "added" : f->kind == MCP_PATCH_DELETE ? "deleted"
                          : f->move_to                ? "moved" : "updated";
                r = read_whole(x, f->path, &c->old, &c->old_len);
                if (r < -1)
                        return r;
                if (r < 0)
                        return -1;
                if (r == 1 && f->kind == MCP_PATCH_ADD) {
                        fail(x, "exists", "%s exists already; change it with '*** Update File:'", f->path);
                        return -1;
                }
                if (r == 0 && f->kind != MCP_PATCH_ADD) {
                        fail(x, "not_found", "%s does not exist; create it with '*** Add File:'", f->path);
                        return -1;
                }
                if (f->move_to) {
                        _cleanup_free_ char *other = NULL;
                        size_t other_len;
                        r = read_whole(x, f->move_to, &other, &other_len);
                        if (r < -1)
                                return r;
                        if (r == 1)
                                fail(x, "exists", "%s exists already; a move does not replace a file", f->move_to);
                        if (r != 0)
                                return -1;
                }
                if (f->kind == MCP_PATCH_ADD)
                        r = mcp_patch_added(&p, f, &c->new, &c->new_len);
                else if (f->kind == MCP_PATCH_UPDATE) {
                        r = mcp_patch_update(&p, f, c->old, c->old_len, &c->new, &c->new_len, &why);
                        if (r == -EINVAL) {
                                fail(x, "patch_mismatch", "%s; no file was changed", why);
                                return -1;
                        }
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int mcp_edit_serve(const McpCall *c, McpFileOp op, void *userdata, bool structured, json_t **ret) {
        Ctx x = { .op = op, .userdata = userdata, .structured = structured };
        Change *ch = NULL;
        size_t n = 0;
        int r = c->tool == MCP_TOOL_MULTI_EDIT ? multi_edit(&x, c, &ch, &n) : patch_changes(&x, c->patch, &ch, &n);
        if (r == 0)
                r = commit(&x, ch, n);
        if (r == 0)
                r = answer(&x, ch, n, ret);
        else if (r == -1 && x.error) {
                *ret = TAKE_PTR(x.error);
                r = 0;
        } else if (r == -1)
                r = -ENOMEM;
        changes_free(ch, n);
        json_decref(x.error);
        json_decref(x.last);
        return r;
}
