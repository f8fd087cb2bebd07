/* SPDX-License-Identifier: MIT */
#include "mcp-edit.h"

bool mcp_tool_is_edit(McpTool t) {
        (void)t;
        return false;
}

int mcp_edit_serve(const McpCall *c, McpFileOp op, void *userdata, bool structured, json_t **ret) {
        (void)c; (void)op; (void)userdata; (void)structured;
        *ret = mcp_tool_error("unknown_tool", "not yet");
        return *ret ? 0 : -ENOMEM;
}

const char *mcp_edit_check(McpCall *c, json_t *args) {
        (void)c; (void)args;
        return NULL;
}
