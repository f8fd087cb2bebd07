/* SPDX-License-Identifier: MIT */
#include "mcp-find.h"

#include <string.h>

#include "macro.h"

static bool given(json_t *args, const char *name) {
        json_t *v = json_object_get(args, name);
        return v && !json_is_null(v);
}

const char *mcp_find_check(McpCall *c, json_t *args) {
        switch (c->tool) {
        case MCP_TOOL_LIST_DIR:
                if (!given(args, "max_entries"))
                        c->max_entries = MCP_LIST_DEFAULT;
                return c->max_entries == 0 || c->max_entries > MCP_LIST_MAX ? "max_entries must be 1..2000" : NULL;
        case MCP_TOOL_GLOB:
        case MCP_TOOL_GREP: {
                bool grep = c->tool == MCP_TOOL_GREP;
                if (!given(args, grep ? "max_matches" : "max_results"))
                        c->max_results = grep ? MCP_GREP_DEFAULT : MCP_GLOB_DEFAULT;
                if (c->max_results == 0 || c->max_results > MCP_FIND_MAX)
                        return grep ? "max_matches must be 1..5000" : "max_results must be 1..5000";
                if (!c->pattern[0])
                        return "pattern must not be empty";
                if (c->glob && !c->glob[0])
                        return "glob must not be empty";
                return c->context > 10 ? "context is at most 10 lines" : NULL;
        }
        default:
                return NULL;
        }
}

int mcp_find_request(const McpCall *c, json_t *o) {
        int r = 0;
        if (c->path)
                r |= json_object_set_new(o, "path", json_string(c->path));
        switch (c->tool) {
        case MCP_TOOL_LIST_DIR:
                r |= json_object_set_new(o, "max_entries", json_integer((json_int_t)c->max_entries));
                break;
        case MCP_TOOL_GLOB:
                r |= json_object_set_new(o, "pattern", json_string(c->pattern));
                r |= json_object_set_new(o, "max_results", json_integer((json_int_t)c->max_results));
                break;
        case MCP_TOOL_GREP:
                r |= json_object_set_new(o, "pattern", json_string(c->pattern));
                r |= json_object_set_new(o, "max_matches", json_integer((json_int_t)c->max_results));
                if (c->glob)
                        r |= json_object_set_new(o, "glob", json_string(c->glob));
                r |= json_object_set_new(o, "fixed", json_boolean(c->fixed));
                r |= json_object_set_new(o, "ignore_case", json_boolean(c->ignore_case));
                r |= json_object_set_new(o, "context", json_integer((json_int_t)c->context));
                break;
        default:
                break;
        }
        return r ? -ENOMEM : 0;
}

/* Past this much text the lines stop (a model's context, as terminal's
 * default); cut_note says where and how to see the rest. */
#define TEXT_BUDGET (24u * 1024u)

static bool over_budget(const StrBuf *t, size_t start, bool cap) {
        return cap && t->len - start > TEXT_BUDGET;
}

static int cut_note(StrBuf *t, size_t shown, size_t all, const char *how) {
        return strbuf_appendf(t, "[text cut at 24 KiB: %zu of %zu lines shown; %s]\n", shown, all, how);
}

/* One line per entry, as ls -F shows it, a file's size after a tab. */
static int list_dir_text(const McpCall *c, json_t *reply, bool cap, StrBuf *t) {
        json_t *entries = json_object_get(reply, "entries");
        size_t i, start = t->len;
        json_t *e;
        int r = 0;
        json_array_foreach(entries, i, e) {
                if (over_budget(t, start, cap)) {
                        r |= cut_note(t, i, json_array_size(entries), "lower max_entries or list a subdirectory");
                        break;
                }
                const char *type = json_string_value(json_object_get(e, "type"));
                const char *mark = !type ? "" : streq(type, "dir") ? "/" : streq(type, "symlink") ? "@" : "";
                r |= strbuf_appendf(t, "%s%s", json_string_value(json_object_get(e, "name")), mark);
                if (json_object_get(e, "size"))
                        r |= strbuf_appendf(t, "\t%lld", (long long)json_integer_value(json_object_get(e, "size")));
                r |= strbuf_appendc(t, '\n');
        }
        long long total = (long long)json_integer_value(json_object_get(reply, "total"));
        if (json_is_true(json_object_get(reply, "truncated")))
                r |= strbuf_appendf(t, "[%zu of %lld entries shown: raise max_entries (at most 2000), or list a "
                                       "subdirectory]", json_array_size(entries), total);
        else
                r |= strbuf_appendf(t, "[%lld entr%s in %s]", total, total == 1 ? "y" : "ies", c->path ? c->path : ".");
        return r < 0 ? -ENOMEM : 0;
}

/* Which limit stopped the walk, and how to get further. */
static int limit_note(json_t *reply, const char *more, StrBuf *t) {
        const char *limit = json_string_value(json_object_get(reply, "limit"));
        if (!limit)
                return 0;
        if (streq(limit, "max_results"))
                return strbuf_appendf(t, "; stopped at the limit: raise %s (at most 5000) or narrow the search", more);
        if (streq(limit, "deadline"))
                return strbuf_appends(t, "; stopped after the time limit: narrow the search (path, glob)");
        return strbuf_appendf(t, "; stopped at the %s limit: narrow the search (path, glob)", limit);
}

static int glob_text(json_t *reply, bool cap, StrBuf *t) {
        json_t *paths = json_object_get(reply, "paths");
        size_t i, start = t->len;
        json_t *e;
        int r = 0;
        json_array_foreach(paths, i, e) {
                if (over_budget(t, start, cap)) {
                        r |= cut_note(t, i, json_array_size(paths), "lower max_results or narrow the pattern or path");
                        break;
                }
                const char *type = json_string_value(json_object_get(e, "type"));
                r |= strbuf_appendf(t, "%s%s\n", json_string_value(json_object_get(e, "path")),
                                    !type ? "" : streq(type, "dir") ? "/" : streq(type, "symlink") ? "@" : "");
        }
        r |= strbuf_appendf(t, "[%zu path%s", json_array_size(paths), json_array_size(paths) == 1 ? "" : "s");
        r |= limit_note(reply, "max_results", t);
        r |= strbuf_appends(t, "]");
        return r < 0 ? -ENOMEM : 0;
}

/* As grep -n shows them: path:line:text for a match, path-line-text for
 * context and, when there is context, "--" between groups that do not
 * touch. */
static int grep_text(json_t *reply, bool cap, StrBuf *t) {
        json_t *lines = json_object_get(reply, "matches");
        const char *prev_path = NULL;
        json_int_t prev_line = 0;
        size_t i;
        json_t *e;
        int r = 0;
        bool context = false;
        size_t start = t->len;
        json_array_foreach(lines, i, e) context = context || !json_is_true(json_object_get(e, "match"));
        json_array_foreach(lines, i, e) {
                if (over_budget(t, start, cap)) {
                        r |= cut_note(t, i, json_array_size(lines), "lower context or max_matches, or narrow the search (path, glob)");
                        break;
                }
                const char *path = json_string_value(json_object_get(e, "path"));
                json_int_t line = json_integer_value(json_object_get(e, "line"));
                bool match = json_is_true(json_object_get(e, "match"));
                if (context && prev_path && !(streq(prev_path, path) && line == prev_line + 1))
                        r |= strbuf_appends(t, "--\n");
                r |= strbuf_appendf(t, "%s%c%lld%c%s\n", path, match ? ':' : '-', (long long)line, match ? ':' : '-',
                                    json_string_value(json_object_get(e, "text")));
                prev_path = path;
                prev_line = line;
        }
        long long n = (long long)json_integer_value(json_object_get(reply, "match_count"));
        r |= strbuf_appendf(t, "[%lld matching line%s in %lld file%s; %lld searched", n, n == 1 ? "" : "s",
                            (long long)json_integer_value(json_object_get(reply, "files_matched")),
                            json_integer_value(json_object_get(reply, "files_matched")) == 1 ? "" : "s",
                            (long long)json_integer_value(json_object_get(reply, "files_searched")));
        long long skipped = (long long)json_integer_value(json_object_get(reply, "files_skipped"));
        if (skipped)
                r |= strbuf_appendf(t, ", %lld binary or over 16 MiB skipped", skipped);
        r |= limit_note(reply, "max_matches", t);
        r |= strbuf_appends(t, "]");
        return r < 0 ? -ENOMEM : 0;
}

int mcp_find_text(const McpCall *c, json_t *reply, bool cap, StrBuf *t) {
        switch (c->tool) {
        case MCP_TOOL_LIST_DIR:
                return list_dir_text(c, reply, cap, t);
        case MCP_TOOL_GLOB:
                return glob_text(reply, cap, t);
        case MCP_TOOL_GREP:
                return grep_text(reply, cap, t);
        default:
                return 0;
        }
}
