/* SPDX-License-Identifier: MIT */
#include "mcp-find.h"

#include <string.h>

#include "macro.h"

static bool given(json_t *args, const char *name) {
        json_t *v = json_object_get(args, name);
        return v && !json_is_null(v);
}

const char *mcp_find_check(McpCall *c, json_t *args) {
        if (c->tool != MCP_TOOL_LIST_DIR)
                return NULL;
        if (!given(args, "max_entries"))
                c->max_entries = MCP_LIST_DEFAULT;
        if (c->max_entries == 0 || c->max_entries > MCP_LIST_MAX)
                return "max_entries must be 1..2000";
        return NULL;
}

int mcp_find_request(const McpCall *c, json_t *o) {
        int r = 0;
        if (c->path)
                r |= json_object_set_new(o, "path", json_string(c->path));
        r |= json_object_set_new(o, "max_entries", json_integer((json_int_t)c->max_entries));
        return r ? -ENOMEM : 0;
}

/* One line per entry, as ls -F shows it, a file's size after a tab. */
static int list_dir_text(const McpCall *c, json_t *reply, StrBuf *t) {
        json_t *entries = json_object_get(reply, "entries");
        size_t i;
        json_t *e;
        int r = 0;
        json_array_foreach(entries, i, e) {
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

int mcp_find_text(const McpCall *c, json_t *reply, StrBuf *t) {
        switch (c->tool) {
        case MCP_TOOL_LIST_DIR:
                return list_dir_text(c, reply, t);
        default:
                return 0;
        }
}
