#!/usr/bin/env python3
"""Keeps the documentation true to the code: every worker operation, error
code, daemon tool, daemon error code and vectora.toml key that the code
accepts is documented. The names are read from the sources' own tables, so
adding one without documenting it fails here."""
import os
import re
import sys

SRC = os.environ.get("VECTORA_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "../.."))


def read(rel):
    with open(os.path.join(SRC, rel)) as f:
        return f.read()


n = 0
failed = 0


def check(name, ok, detail=""):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print("%s %d - %s%s" % ("ok" if ok else "not ok", n, name, "" if ok else "  # " + detail))


protocol_c = read("src/shared/protocol.c")
protocol_md = read("docs/protocol.md")
config_c = read("src/shared/config.c")
config_md = read("docs/config.md")
tools_c = read("src/daemon/tools.c")
daemon_src = "".join(read("src/daemon/" + f) for f in os.listdir(os.path.join(SRC, "src/daemon")) if f.endswith(".c"))

ops = re.findall(r'\[PROTOCOL_OP_[A-Z_]+\] = "([a-z_]+)"', protocol_c)
check("the worker op table was found", len(ops) >= 8, str(ops))
for op in ops:
    if op == "init":
        check("worker message init is documented", '"type":"init"' in protocol_md)
    else:
        check("worker op %s has its section" % op, re.search(r"^#### `%s`" % op, protocol_md, re.M) is not None)

errors = re.findall(r'\[PROTOCOL_ERROR_[A-Z_]+\] = "([a-z_]+)"', protocol_c)
check("the worker error table was found", len(errors) >= 10, str(errors))
for e in errors:
    check("worker error code %s is documented" % e, "`%s`" % e in protocol_md)

tools = re.findall(r'^\s*\{ "([a-z_]+)", [a-z_]+_table,', tools_c, re.M)
check("the daemon tool table was found", len(tools) >= 4, str(tools))
for t in tools + ["terminal_open", "status"]:
    check("daemon tool %s has its section" % t, re.search(r"^#### `%s`" % t, protocol_md, re.M) is not None)

codes = set(re.findall(r'error_json\("([a-z_]+)"', daemon_src)) | set(re.findall(r'"(worker_[a-z]+|pty_not_sandboxed|config_invalid|sandbox_unavailable)"', daemon_src))
check("daemon error codes were found", len(codes) >= 5, str(codes))
for c in sorted(codes):
    check("daemon error code %s is documented" % c, "`%s`" % c in protocol_md)

# vectora.toml keys: every KeyDef table row.
tables = {
    "sandbox_keys": "[sandbox]",
    "limits_keys": "[sandbox.limits]",
    "docker_keys": "[sandbox.docker]",
    "ssh_keys": "[sandbox.ssh]",
    "modal_keys": "[sandbox.modal]",
}
for table, heading in tables.items():
    m = re.search(r"static const KeyDef %s\[\] = \{(.*?)\};" % table, config_c, re.S)
    check("config table %s was found" % table, m is not None)
    if not m:
        continue
    keys = re.findall(r'\{ "([a-z_]+)",', m.group(1))
    section = config_md.split("### `%s`" % heading, 1)
    body = section[1].split("\n### ", 1)[0] if len(section) == 2 else ""
    check("docs/config.md has a section for %s" % heading, bool(body))
    for k in keys:
        if k in ("limits", "docker", "ssh", "modal"):
            continue
        check("%s key %s is documented" % (heading, k), "| `%s` |" % k in body)

# The MCP server (docs/mcp.md): every tool of src/shared/mcp.c's table with
# its row, every argument of its dispatch tables, every revision it serves
# and the tool-error codes of its own.
mcp_c = read("src/shared/mcp.c")
mcp_md = read("docs/mcp.md")
mcp_tools = re.findall(r'\[MCP_TOOL_[A-Z_]+\] = "([a-z_]+)"', mcp_c)
check("the MCP tool table was found", len(mcp_tools) >= 4, str(mcp_tools))
for t in mcp_tools:
    check("MCP tool %s has its row in docs/mcp.md" % t, "| `%s` |" % t in mcp_md)
mcp_args = set(re.findall(r'\{ "([a-z_]+)", JSON_FIELD_[A-Z0-9_]+, offsetof\(McpCall', mcp_c))
check("the MCP argument tables were found", len(mcp_args) >= 8, str(mcp_args))
for a in sorted(mcp_args):
    check("MCP argument %s is documented" % a, "`%s`" % a in mcp_md)
revs = re.findall(r'"(\d{4}-\d{2}-\d{2})"', mcp_c.split("versions[] =", 1)[1].split(";", 1)[0])
check("the MCP revision list was found", len(revs) >= 2, str(revs))
for v in revs:
    check("MCP revision %s is documented" % v, "`%s`" % v in mcp_md)
cli_src = "".join(read("src/cli/" + f) for f in os.listdir(os.path.join(SRC, "src/cli")) if f.endswith(".c"))
for c in sorted(set(re.findall(r'mcp_tool_error\("([a-z_]+)"', cli_src))):
    check("MCP tool error %s is documented" % c, "`%s`" % c in mcp_md)

print("1..%d" % n)
print("# %d passed, %d failed, 0 skipped" % (n - failed, failed))
sys.exit(1 if failed else 0)
