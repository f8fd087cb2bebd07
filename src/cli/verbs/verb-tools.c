/* SPDX-License-Identifier: MIT */
/* exec, run, read, write, edit: each one or more daemon API calls through
 * the link (the daemon, or embedded), printed as text or JSON. */
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fd-util.h"
#include "jsonl.h"
#include "link.h"
#include "mcp-find.h"

/* A non-negative integer option; -1 when it is not one. */
static int64_t parse_count(const char *s, uint64_t max) {
        if (!s || !*s || *s == '-')
                return -1;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end || v > max)
                return -1;
        return (int64_t)v;
}

static int oom(void) {
        return cli_fail(EXIT_REFUSED, "out of memory");
}

/* One call; a failed result is printed (and its status returned), else 0
 * with *m the result. */
static int call(const CliArgs *a, CliLink *l, json_t *req, const void *raw, size_t raw_len, JsonlMsg *m) {
        int r = cli_link_call(l, req, raw, raw_len, m);
        if (r < 0)
                return oom();
        if (!json_is_true(json_object_get(m->obj, "ok"))) {
                r = cli_print_error(a, m->obj);
                jsonl_msg_done(m);
                return r;
        }
        cli_warn_degraded(m->obj);
        return 0;
}

/* ---- exec, run ---- */

static int terminal(const CliArgs *a, json_t *req) {
        if (!req)
                return oom();
        if (a->val[OPT_TIMEOUT]) {
                int64_t t = parse_count(a->val[OPT_TIMEOUT], 7 * 24 * 3600);
                if (t <= 0) {
                        json_decref(req);
                        return cli_fail_code(a, EXIT_USAGE, "usage",
                                             "%s: --timeout takes seconds (1..604800), not '%s'; see vectora-sandbox help %s",
                                             a->verb->name, a->val[OPT_TIMEOUT], a->verb->name);
                }
                json_object_set_new(req, "timeout", json_integer(t));
        }
        if (a->val[OPT_MAX_OUTPUT]) {
                int64_t n = parse_count(a->val[OPT_MAX_OUTPUT], 64 << 20);
                if (n <= 0) {
                        json_decref(req);
                        return cli_fail_code(a, EXIT_USAGE, "usage", "%s: --max-output takes bytes (1..67108864), not '%s'",
                                             a->verb->name, a->val[OPT_MAX_OUTPUT]);
                }
                json_object_set_new(req, "max_output", json_integer(n));
        }
        if (a->val[OPT_CWD])
                json_object_set_new(req, "cwd", json_string(a->val[OPT_CWD]));
        if (a->env) {
                json_t *e = json_object();
                for (char **s = a->env; e && *s; s++) {
                        char *eq = strchr(*s, '=');
                        _cleanup_free_ char *k = strndup(*s, (size_t)(eq - *s));
                        if (k)
                                json_object_set_new(e, k, json_string(eq + 1));
                }
                json_object_set_new(req, "env", e);
        }
        /* stdin goes to the command as the agent's tool would give it; a
         * terminal is not read (one-shot commands are not interactive:
         * `shell` is). */
        _cleanup_free_ char *in = NULL;
        size_t in_len = 0;
        if (!a->val[OPT_NO_STDIN] && !isatty(STDIN_FILENO)) {
                int r = read_fd_all(STDIN_FILENO, JSONL_MAX_RAW, &in, &in_len);
                if (r == -EFBIG) {
                        json_decref(req);
                        return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_TOO_LARGE),
                                             "%s: stdin is over 64 MiB; write it to a file in the workspace (vectora-sandbox write) and redirect from it in the command",
                                             a->verb->name);
                }
                if (r < 0 && r != -EBADF) {
                        json_decref(req);
                        return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_IO), "%s: reading stdin: %s", a->verb->name, strerror(-r));
                }
        }
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0) {
                json_decref(req);
                return oom();
        }
        JsonlMsg m = JSONL_MSG_INIT;
        /* No stdin read: none sent, and the command gets /dev/null. */
        int r = call(a, l, req, in, in_len, &m);
        if (r)
                return r;
        size_t out_len = (size_t)json_integer_value(json_object_get(m.obj, "stdout_len"));
        size_t err_len = (size_t)json_integer_value(json_object_get(m.obj, "stderr_len"));
        if (out_len + err_len > m.raw_len)
                out_len = err_len = 0;
        int status = (int)json_integer_value(json_object_get(m.obj, "exit_code"));
        if (a->json) {
                json_object_del(m.obj, "stdout_len");
                json_object_del(m.obj, "stderr_len");
                cli_set_bytes(m.obj, "stdout", m.raw, out_len);
                cli_set_bytes(m.obj, "stderr", m.raw ? m.raw + out_len : NULL, err_len);
                cli_print_json(m.obj);
        } else {
                fflush(stdout);
                (void)!write_all(STDOUT_FILENO, m.raw, out_len);
                (void)!write_all(STDERR_FILENO, m.raw + out_len, err_len);
                if (json_is_true(json_object_get(m.obj, "timed_out")))
                        cli_fail(0, "%s: timed out; the command's process group was killed", a->verb->name);
                /* What the output alone does not explain (a sealed file's
                 * EBUSY, no direct network), after it. */
                static const char *const notes[] = { "sealed_note", "network_note" };
                for (size_t i = 0; i < ELEMENTSOF(notes); i++)
                        if (json_string_value(json_object_get(m.obj, notes[i])))
                                fprintf(stderr, "vectora-sandbox: note: %s\n",
                                        json_string_value(json_object_get(m.obj, notes[i])));
        }
        jsonl_msg_done(&m);
        return status;
}

int verb_exec(const CliArgs *a) {
        json_t *argv = json_array();
        for (int i = 0; argv && i < a->n_pos; i++)
                json_array_append_new(argv, json_string(a->pos[i]));
        return terminal(a, json_pack("{s:s,s:o}", "tool", api_tool_name(API_TOOL_TERMINAL), "argv", argv));
}

int verb_run(const CliArgs *a) {
        return terminal(a, json_pack("{s:s,s:s}", "tool", api_tool_name(API_TOOL_TERMINAL), "command", a->pos[0]));
}

/* ---- read ---- */

/* Each call returns up to 64 MiB (the raw payload limit): the file is read
 * on from each piece's end, and must keep the sha256 of the first piece. */
int verb_read(const CliArgs *a) {
        const char *path = a->pos[0];
        int64_t offset = 0, limit = -1;
        if (a->val[OPT_OFFSET] && (offset = parse_count(a->val[OPT_OFFSET], INT64_MAX)) < 0)
                return cli_fail_code(a, EXIT_USAGE, "usage", "read: --offset takes a byte count, not '%s'",
                                     a->val[OPT_OFFSET]);
        if (a->val[OPT_LIMIT] && (limit = parse_count(a->val[OPT_LIMIT], INT64_MAX)) <= 0)
                return cli_fail_code(a, EXIT_USAGE, "usage", "read: --limit takes a positive byte count, not '%s'",
                                     a->val[OPT_LIMIT]);
        int64_t start_line = 0, max_lines = 0;
        if (a->val[OPT_START_LINE] && (start_line = parse_count(a->val[OPT_START_LINE], INT64_MAX)) <= 0)
                return cli_fail_code(a, EXIT_USAGE, "usage", "read: --start-line takes a line number (from 1), not '%s'",
                                     a->val[OPT_START_LINE]);
        if (a->val[OPT_MAX_LINES] && (max_lines = parse_count(a->val[OPT_MAX_LINES], INT64_MAX)) <= 0)
                return cli_fail_code(a, EXIT_USAGE, "usage", "read: --max-lines takes a positive count, not '%s'",
                                     a->val[OPT_MAX_LINES]);
        if (start_line && a->val[OPT_OFFSET])
                return cli_fail_code(a, EXIT_USAGE, "usage", "read: give --offset or --start-line, not both");
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return oom();
        _cleanup_free_ char *sha = NULL;
        _cleanup_free_ char *all = NULL; /* --json: the content gathered */
        size_t all_len = 0;
        json_t *last = NULL;
        uint64_t pos = (uint64_t)offset, done = 0;
        int r = 0;
        for (;;) {
                uint64_t want = JSONL_MAX_RAW;
                if (limit >= 0 && (uint64_t)limit - done < want)
                        want = (uint64_t)limit - done;
                json_t *req = json_pack("{s:s,s:s,s:I,s:I}", "tool", api_tool_name(API_TOOL_FILE_READ), "path", path, "offset",
                                        (json_int_t)pos, "limit", (json_int_t)want);
                /* By lines, the first piece finds the line; the next ones
                 * go on by offset, each asking for the lines left. */
                if (req && start_line && !done) {
                        json_object_del(req, "offset");
                        json_object_set_new(req, "start_line", json_integer(start_line));
                }
                if (req && max_lines)
                        json_object_set_new(req, "max_lines", json_integer(max_lines));
                JsonlMsg m = JSONL_MSG_INIT;
                if ((r = call(a, l, req, NULL, 0, &m)))
                        break;
                if (start_line && !done)
                        pos = (uint64_t)(offset = json_integer_value(json_object_get(m.obj, "offset")));
                if (max_lines)
                        for (const char *q = m.raw, *e = m.raw + m.raw_len; q && (q = memchr(q, '\n', (size_t)(e - q))); q++)
                                max_lines--;
                const char *s = json_string_value(json_object_get(m.obj, "sha256"));
                if (!sha)
                        sha = strdup(s ? s : "");
                else if (!s || !streq(s, sha)) {
                        jsonl_msg_done(&m);
                        r = cli_fail_code(a, EXIT_TOOL, "changed",
                                          "read: %s changed while it was read (after %llu bytes); read it again", path,
                                          (unsigned long long)done);
                        break;
                }
                if (a->json) {
                        char *n = realloc(all, all_len + m.raw_len + 1);
                        if (!n) {
                                jsonl_msg_done(&m);
                                r = oom();
                                break;
                        }
                        all = n;
                        memcpy(all + all_len, m.raw ? m.raw : "", m.raw_len);
                        all_len += m.raw_len;
                } else if (write_all(STDOUT_FILENO, m.raw, m.raw_len) < 0) {
                        jsonl_msg_done(&m);
                        r = cli_fail(EXIT_TOOL, "read: writing to stdout: %m");
                        break;
                }
                pos += m.raw_len;
                done += m.raw_len;
                bool eof = json_is_true(json_object_get(m.obj, "eof")) || m.raw_len == 0;
                json_decref(last);
                last = json_incref(m.obj);
                jsonl_msg_done(&m);
                if (eof || (limit >= 0 && done >= (uint64_t)limit) || (a->val[OPT_MAX_LINES] && max_lines <= 0))
                        break;
        }
        if (r == 0 && a->json && last) {
                json_object_set_new(last, "offset", json_integer(offset));
                json_object_set_new(last, "length", json_integer((json_int_t)all_len));
                cli_set_bytes(last, "content", all, all_len);
                cli_print_json(last);
        }
        json_decref(last);
        return r;
}

/* ---- write ---- */

int verb_write(const CliArgs *a) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = read_fd_all(STDIN_FILENO, JSONL_MAX_RAW, &data, &len);
        if (r == -EFBIG)
                return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_TOO_LARGE), "write: stdin is over 64 MiB, the most one write carries");
        if (r < 0)
                return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_IO), "write: reading stdin: %s", strerror(-r));
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return oom();
        json_t *req = json_pack("{s:s,s:s,s:b}", "tool", api_tool_name(API_TOOL_FILE_WRITE), "path", a->pos[0], "create_parents",
                                !a->val[OPT_NO_PARENTS]);
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = call(a, l, req, data ? data : "", len, &m)))
                return r;
        if (a->json)
                cli_print_json(m.obj);
        jsonl_msg_done(&m);
        return 0;
}

/* ---- ls, glob, grep ---- */

/* m's result as the MCP server shows it, its last line (the summary) on
 * stderr; or the JSON. Consumes m. */
static int find_print(const CliArgs *a, McpTool tool, JsonlMsg *m) {
        if (a->json) {
                cli_print_json(m->obj);
                jsonl_msg_done(m);
                return 0;
        }
        McpCall c = { .tool = tool, .path = a->n_pos > (tool == MCP_TOOL_LIST_DIR ? 0 : 1) ? a->pos[tool == MCP_TOOL_LIST_DIR ? 0 : 1] : NULL };
        _cleanup_strbuf_ StrBuf t = STRBUF_INIT;
        int r = mcp_find_text(&c, m->obj, false, &t);
        jsonl_msg_done(m);
        if (r < 0 || !t.data)
                return oom();
        char *last = strrchr(t.data, '\n');
        last = last ? last + 1 : t.data;
        fwrite(t.data, 1, (size_t)(last - t.data), stdout);
        fprintf(stderr, "%s\n", last);
        return 0;
}

int verb_ls(const CliArgs *a) {
        int64_t max = API_LIST_DEFAULT;
        if (a->val[OPT_MAX_ENTRIES] && (max = parse_count(a->val[OPT_MAX_ENTRIES], API_LIST_MAX)) <= 0)
                return cli_fail_code(a, EXIT_USAGE, api_error_name(API_ERROR_BAD_REQUEST),
                                     "ls: --max-entries takes 1..%u, not '%s'", API_LIST_MAX, a->val[OPT_MAX_ENTRIES]);
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return oom();
        json_t *req = json_pack("{s:s,s:s,s:I}", "tool", api_tool_name(API_TOOL_LIST_DIR), "path",
                                a->n_pos ? a->pos[0] : ".", "max_entries", (json_int_t)max);
        JsonlMsg m = JSONL_MSG_INIT;
        int r;
        if ((r = call(a, l, req, NULL, 0, &m)))
                return r;
        return find_print(a, MCP_TOOL_LIST_DIR, &m);
}

/* ---- glob, grep ---- */

static int find_opt(const CliArgs *a, CliOptId o, uint64_t max, json_t *req, const char *key) {
        if (!a->val[o])
                return 0;
        int64_t v = parse_count(a->val[o], max);
        if (v < 0 || (v == 0 && o != OPT_CONTEXT))
                return cli_fail_code(a, EXIT_USAGE, api_error_name(API_ERROR_BAD_REQUEST), "%s: --%s takes %s..%llu, not '%s'",
                                     a->verb->name, cli_options[o].name, o == OPT_CONTEXT ? "0" : "1",
                                     (unsigned long long)max, a->val[o]);
        return json_object_set_new(req, key, json_integer((json_int_t)v)) < 0 ? oom() : 0;
}

static int find_verb(const CliArgs *a, ApiTool tool) {
        bool grep = tool == API_TOOL_GREP;
        json_t *req = json_pack("{s:s,s:s,s:s}", "tool", api_tool_name(tool), "pattern", a->pos[0], "path",
                                a->n_pos > 1 ? a->pos[1] : ".");
        if (!req)
                return oom();
        int r = find_opt(a, grep ? OPT_MAX_MATCHES : OPT_MAX_RESULTS, API_FIND_MAX_RESULTS, req,
                         grep ? "max_matches" : "max_results");
        if (!r && grep)
                r = find_opt(a, OPT_CONTEXT, 10, req, "context");
        if (!r && grep && (json_object_set_new(req, "ignore_case", json_boolean(a->val[OPT_IGNORE_CASE])) < 0 ||
                           json_object_set_new(req, "fixed", json_boolean(a->val[OPT_FIXED])) < 0 ||
                           (a->val[OPT_GLOB] && json_object_set_new(req, "glob", json_string(a->val[OPT_GLOB])) < 0)))
                r = oom();
        if (r) {
                json_decref(req);
                return r;
        }
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return oom();
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = call(a, l, req, NULL, 0, &m)))
                return r;
        bool none = grep && !json_integer_value(json_object_get(m.obj, "match_count"));
        r = find_print(a, grep ? MCP_TOOL_GREP : MCP_TOOL_GLOB, &m);
        return r ? r : none ? EXIT_TOOL : 0;
}

int verb_glob(const CliArgs *a) {
        return find_verb(a, API_TOOL_GLOB);
}

int verb_grep(const CliArgs *a) {
        return find_verb(a, API_TOOL_GREP);
}

/* ---- edit ---- */

int verb_edit(const CliArgs *a) {
        if (!a->val[OPT_OLD] || !a->val[OPT_NEW])
                return cli_fail_code(a, EXIT_USAGE, "usage",
                                     "edit: give both --old TEXT and --new TEXT; see vectora-sandbox help edit");
        if (!a->val[OPT_OLD][0])
                return cli_fail_code(a, EXIT_USAGE, "usage", "edit: --old must not be empty");
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return oom();
        json_t *req = json_pack("{s:s,s:s,s:s,s:s,s:b}", "tool", api_tool_name(API_TOOL_FILE_EDIT), "path", a->pos[0], "old_string",
                                a->val[OPT_OLD], "new_string", a->val[OPT_NEW], "replace_all", a->val[OPT_ALL] != NULL);
        JsonlMsg m = JSONL_MSG_INIT;
        int r = call(a, l, req, NULL, 0, &m);
        if (r)
                return r;
        if (a->json)
                cli_print_json(m.obj);
        else {
                json_int_t n = json_integer_value(json_object_get(m.obj, "replacements"));
                fprintf(stderr, "vectora-sandbox: edit: %lld replacement%s\n", (long long)n, n == 1 ? "" : "s");
        }
        jsonl_msg_done(&m);
        return 0;
}
