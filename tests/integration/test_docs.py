#!/usr/bin/env python3
"""Keeps the documentation true to the code: every worker operation, error
code, daemon tool, daemon error code and vectora.toml key that the code
accepts is documented. The names are read from the sources' own tables, so
adding one without documenting it fails here. TAP, a subtest per check
(tests/lib/vtest.py)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import SRC, Tap  # noqa: E402


def read(rel):
    with open(os.path.join(SRC, rel)) as f:
        return f.read()


tap = Tap()


def check(name, ok, detail=None):
    tap.ok(name, ok, detail)


protocol_c = read("src/shared/protocol.c")
protocol_md = read("docs/protocol.md")
# The key tables: [sandbox]'s own, and each backend's [sandbox.NAME] in its
# own files (the table of backends: src/shared/backend-list.h).
backend_names = re.findall(r"X\((\w+)\)", read("src/shared/backend-list.h"))
config_c = read("src/shared/config-keys.c") + "".join(
    read("src/shared/" + f) for f in sorted(os.listdir(os.path.join(SRC, "src/shared")))
    if f.startswith("backend-") and f.endswith(".c"))
config_md = read("docs/config.md")
tools_c = read("src/daemon/tools.c")
api_c = read("src/shared/api.c")
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

# The daemon API's names (src/shared/api.c): each tool has its section (a
# terminal's input, resize and close are messages of terminal_open's), each
# error code its mention.
tools = re.findall(r'\[API_TOOL_[A-Z_]+\] = "([a-z_]+)"', api_c)
check("the daemon tool table was found", len(tools) >= 10, str(tools))
for t in tools:
    if t in ("terminal_input", "terminal_resize", "terminal_close"):
        check("terminal message %s is documented" % t, '"tool":"%s"' % t in protocol_md)
    else:
        check("daemon tool %s has its section" % t, re.search(r"^#### `%s`" % t, protocol_md, re.M) is not None)

codes = re.findall(r'\[API_ERROR_[A-Z_]+\] = "([a-z_]+)"', api_c)
check("daemon error codes were found", len(codes) >= 20, str(codes))
for c in codes:
    check("daemon error code %s is documented" % c, "`%s`" % c in protocol_md)
# ... and the daemon spells none of them again: a code is an ApiError.
bare = re.findall(r'request_finish\([^;]*?, 0, "([a-z_]+)"', daemon_src) + re.findall(
    r'(?:link_end|workspace_recycle|fail_queue|tools_reply_bad_line)\([\w>-]+, "([a-z_]+)"', daemon_src) + re.findall(
    r'error_json\("([a-z_]+)"', daemon_src)
check("the daemon names error codes through api.h only", not bare, str(bare))
# The Python client's ErrorCode (and through it the benchmarks) mirrors the
# table: a code added or renamed in api.c without it fails here.
py_errors = read("clients/python/src/vectora_sandbox/errors.py")
py_codes = dict(re.findall(r'^    ([A-Z_]+) = "([a-z_]+)"$', py_errors, re.M))
py_client_only = set(re.findall(r'ErrorCode\.([A-Z_]+)', py_errors.split("CLIENT_ONLY", 1)[1]))
check("the Python client's ErrorCode has the daemon's codes, no more",
      {v for k, v in py_codes.items() if k not in py_client_only} == set(codes),
      "only in api.c: %s; only in errors.py: %s" % (sorted(set(codes) - set(py_codes.values())),
                                                   sorted(set(py_codes.values()) - set(codes))))
check("each ErrorCode is its wire name in capitals", all(k == v.upper() for k, v in py_codes.items()), str(py_codes))
check("the Python client's own codes are not the daemon's",
      py_client_only and not ({py_codes.get(k) for k in py_client_only} & set(codes)), str(py_client_only))

# vectora.toml keys: every KeyDef table row.
tables = {
    "sandbox_keys": "[sandbox]",
    "limits_keys": "[sandbox.limits]",
}
for b in backend_names:
    if re.search(r"const KeyDef %s_keys\[\] = \{" % b, config_c):
        tables[b + "_keys"] = "[sandbox.%s]" % b
check("the backend table was found, with the settings tables of docker, ssh and modal",
      {"docker_keys", "ssh_keys", "modal_keys"} <= set(tables), str(backend_names))
for table, heading in tables.items():
    m = re.search(r"(?:static )?const KeyDef (?:config_)?%s\[\] = \{(.*?)\};" % table, config_c, re.S)
    check("config table %s was found" % table, m is not None)
    if not m:
        continue
    keys = re.findall(r'\{ "([a-z_]+)",', m.group(1))
    section = config_md.split("### `%s`" % heading, 1)
    body = section[1].split("\n### ", 1)[0] if len(section) == 2 else ""
    check("docs/config.md has a section for %s" % heading, bool(body))
    for k in keys:
        if k == "limits" or k in backend_names:
            continue
        check("%s key %s is documented" % (heading, k), "| `%s` |" % k in body)

# The MCP server (docs/mcp.md): every tool of src/cli/mcp.c's table with
# its row, every argument of its dispatch tables, every revision it serves
# and the tool-error codes of its own.
mcp_c = read("src/cli/mcp.c")
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

# ---- the CLI, the daemon's start and the docs agree (issue 17) ----
readme = read("README.md")
man1 = read("docs/man/vectora-sandbox.1")
man8 = read("docs/man/vectora-sandboxd.8")
cli_main = read("src/cli/verbs.c") + read("src/cli/options.c")
cli_h = read("src/cli/cli.h")
output_c = read("src/cli/output.c")
paths_c = read("src/core/paths.c")
unit_socket = read("dist/vectora-sandboxd.socket.in")


def roff(s):
    return s.replace("-", "\\-")


def man_section(text, name):
    parts = re.split(r"^\.SH ", text, flags=re.M)
    for p in parts:
        if p.startswith(name):
            return p
    return ""


# Verbs and options: every one in the CLI's tables is in its man page.
verbs = re.findall(r'^\s*\{ "([a-z]+)", (?:verb_[a-z]+|NULL),', cli_main, re.M)
check("the CLI's verb table was found", len(verbs) >= 10, str(verbs))
man_verbs = man_section(man1, "VERBS")
for v in verbs:
    check("verb %s is in vectora-sandbox(1)" % v, re.search(r"^\.B %s$" % v, man_verbs, re.M) is not None)
opts = re.findall(r'\[OPT_[A-Z_]+\] = \{ "([a-z-]+)",', cli_main)
check("the CLI's option table was found", len(opts) >= 15, str(opts))
for o in opts:
    check("option --%s is in vectora-sandbox(1)" % o, "\\-\\-" + roff(o) in man_section(man1, "OPTIONS"))

# Exit codes: each the CLI defines, and each API code it maps to 1, in the
# man page's EXIT STATUS; the README states the same statuses.
exits = set(re.findall(r"#define EXIT_[A-Z]+ (\d+)", cli_h))
check("the CLI's exit statuses were found", exits >= {"1", "2", "125"}, str(exits))
man_exit = man_section(man1, "EXIT STATUS")
for e in sorted(exits):
    check("exit status %s is in vectora-sandbox(1)" % e, re.search(r"^\.B %s$" % e, man_exit, re.M) is not None)
tool_errors = [e.lower() for e in re.findall(r'API_ERROR_([A-Z_]+)', output_c.split("tool_errors[] = {", 1)[1].split("};", 1)[0])] \
    + re.findall(r'streq_ptr\(code, "([a-z_]+)"\)\)\s*return EXIT_TOOL', output_c)
check("the CLI's exit-1 codes were found", len(tool_errors) >= 8, str(tool_errors))
for c in tool_errors:
    check("exit-1 code %s is in vectora-sandbox(1)'s EXIT STATUS" % c, re.search(r"^\.BR? %s\b" % c, man_exit, re.M) is not None)
cli_codes = set(re.findall(r'cli_fail_code\([^,]+, EXIT_[A-Z]+, "([a-z_]+)"', read_all := "".join(
    read("src/cli/" + f) for f in os.listdir(os.path.join(SRC, "src/cli")) if f.endswith(".c")))) | set(
    re.findall(r'fail_result\(ret, "([a-z_]+)"', read_all)) | set(
    e.lower() for e in re.findall(r'(?:cli_fail_code\([^,]+, EXIT_[A-Z]+, |fail_result\(ret, )api_error_name\(API_ERROR_([A-Z_]+)\)', read_all))
check("the CLI's own error codes were found", {"usage", "sandbox_required", "daemon_unreachable"} <= cli_codes,
      str(cli_codes))
for c in sorted(cli_codes):
    check("CLI error code %s is in vectora-sandbox(1) or the daemon API's" % c, c in man1 or "`%s`" % c in protocol_md)
for status in ("125", "**2**", "**1**"):
    check("README states exit status %s" % status, status in readme)

# One default socket: what src/core/paths.c computes, everywhere.
check("paths.c's root default is /run/vectora-sandbox.sock", '"/run/vectora-sandbox.sock"' in paths_c)
check("paths.c's user default is $XDG_RUNTIME_DIR/vectora-sandbox.sock", '"vectora-sandbox.sock"' in paths_c)
check("paths.c's fallback is /tmp/vectora-sandbox-UID/sock", '"/tmp/vectora-sandbox-%u/sock"' in paths_c)
for name, text in (("README.md", readme), ("vectora-sandbox(1)", man1), ("vectora-sandboxd(8)", man8),
                   ("docs/protocol.md", protocol_md)):
    t = text.replace("\\", "")
    check("%s names the root default socket" % name, "/run/vectora-sandbox.sock" in t)
    check("%s names the user default socket" % name, "$XDG_RUNTIME_DIR/vectora-sandbox.sock" in t)
    check("%s names the fallback socket" % name, "/tmp/vectora-sandbox-UID/sock" in t)
check("the systemd socket unit listens on the default socket", "ListenStream=%t/vectora-sandbox.sock" in unit_socket)
check("the service runs in the foreground and notifies readiness",
      "--foreground" in read("dist/vectora-sandboxd.service.in") and "Type=notify" in read("dist/vectora-sandboxd.service.in"))

# Figures: the README's headline figures are quoted from docs/benchmarks.md.
bench_md = read("docs/benchmarks.md")
headline = readme.split("Headline figures", 1)[1].split("\n## ", 1)[0]
figures = re.findall(r"(\d[\d.]*)\s?(ms|us|x|kB|MB|s)\b", headline)
check("the README's headline figures were found", len(figures) >= 12, str(figures))
for num, unit in figures:
    check("README figure %s %s is in docs/benchmarks.md" % (num, unit),
          ("%s %s" % (num, unit)) in bench_md or ("%s%s" % (num, unit)) in bench_md)

# Self-contained: no document cites a file the repository does not hold.
docs = {"README.md": readme}
for f in os.listdir(os.path.join(SRC, "docs")):
    if f.endswith(".md"):
        docs["docs/" + f] = read("docs/" + f)
for f in os.listdir(os.path.join(SRC, "docs/man")):
    if f[-1].isdigit():
        docs["docs/man/" + f] = read("docs/man/" + f)
for name, text in sorted(docs.items()):
    check("%s cites no design document outside the repository" % name, "DESIGN.md" not in text)
    cited = set(re.findall(r"(?<![\w/\"-])((?:src|docs|tests|bench|scripts|dist|completion|examples|bridge)/[A-Za-z0-9_./-]*[A-Za-z0-9_])",
                           text.replace("\\", "")))
    missing = [c for c in sorted(cited) if not os.path.exists(os.path.join(SRC, c)) and "*" not in c]
    check("%s cites only files the repository holds" % name, not missing, str(missing))

sys.exit(tap.finish())
