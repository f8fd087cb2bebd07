#!/usr/bin/env python3
"""Keeps the documentation true to the code: every worker operation, error
code, daemon tool, daemon error code and vectora.toml key that the code
accepts is documented. The names are read from the sources' own tables, so
adding one without documenting it fails here. docs/architecture.md's
statements (the files and functions it names, the layers, the one fork,
clock and UTF-8 decoder, the daemon's objects and call order) are checked
against the sources. TAP, a subtest per check (tests/lib/vtest.py)."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import BUILD, SRC, Tap  # noqa: E402


def read(rel):
    with open(os.path.join(SRC, rel)) as f:
        return f.read()


tap = Tap()


def check(name, ok, detail=None):
    tap.ok(name, ok, detail)


protocol_c = read("src/shared/protocol/protocol.c")
protocol_md = read("docs/protocol.md")
# The key tables: [sandbox]'s own, and each backend's [sandbox.NAME] in its
# own files (the table of backends: src/core/backends/backend-list.h).
backend_names = re.findall(r"X\((\w+)\)", read("src/core/backends/backend-list.h"))
config_c = read("src/core/config/config-keys.c") + "".join(
    read(d + "/" + f) for d in ("src/core/backends", "src/shared/plan")
    for f in sorted(os.listdir(os.path.join(SRC, d))) if f.startswith("backend-") and f.endswith(".c"))
config_md = read("docs/config.md")
tools_c = read("src/daemon/server/tools.c")
api_c = read("src/core/api/api.c")
def layer_sources(layer):
    """Every .c file of a layer, its subdirectories' too."""
    return "".join(read(os.path.relpath(os.path.join(d, f), SRC))
                   for d, _, names in sorted(os.walk(os.path.join(SRC, "src", layer)))
                   for f in sorted(names) if f.endswith(".c"))


daemon_src = layer_sources("daemon")

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

# The daemon API's names (src/core/api/api.c): each tool has its section (a
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
# The TypeScript client's ErrorCode likewise: the daemon's codes and the
# Python client's own (daemon_unavailable), no more.
ts_codes = dict(re.findall(r'^  ([A-Z_]+): "([a-z_]+)",$', read("clients/typescript/src/results.ts"), re.M))
check("the TypeScript client's ErrorCode is the Python client's", ts_codes == py_codes,
      "only in results.ts: %s; only in errors.py: %s" % (sorted(set(ts_codes.items()) - set(py_codes.items())),
                                                        sorted(set(py_codes.items()) - set(ts_codes.items()))))

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

# The MCP server (docs/mcp.md): every tool of src/cli/mcp/mcp.c's table with
# its row, every argument of its dispatch tables, every revision it serves
# and the tool-error codes of its own.
mcp_c = read("src/cli/mcp/mcp.c")
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
cli_src = layer_sources("cli")
for c in sorted(set(re.findall(r'mcp_tool_error\("([a-z_]+)"', cli_src))):
    check("MCP tool error %s is documented" % c, "`%s`" % c in mcp_md)

# ---- the CLI, the daemon's start and the docs agree (issue 17) ----
readme = read("README.md")
man1 = read("docs/man/vectora-sandbox.1")
man8 = read("docs/man/vectora-sandboxd.8")
cli_main = read("src/cli/verbs/verbs.c") + read("src/cli/options.c")
cli_h = read("src/cli/cli.h")
output_c = read("src/cli/output.c")
paths_c = read("src/core/launch/paths.c")
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
    layer_sources("cli")))) | set(
    re.findall(r'fail_result\(ret, "([a-z_]+)"', read_all)) | set(
    e.lower() for e in re.findall(r'(?:cli_fail_code\([^,]+, EXIT_[A-Z]+, |fail_result\(ret, )api_error_name\(API_ERROR_([A-Z_]+)\)', read_all))
check("the CLI's own error codes were found", {"usage", "sandbox_required", "daemon_unreachable"} <= cli_codes,
      str(cli_codes))
for c in sorted(cli_codes):
    check("CLI error code %s is in vectora-sandbox(1) or the daemon API's" % c, c in man1 or "`%s`" % c in protocol_md)
for status in ("125", "**2**", "**1**"):
    check("README states exit status %s" % status, status in readme)

# One default socket: what src/core/launch/paths.c computes, everywhere.
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

# ---- docs/architecture.md against the code (issue: its statements) ----
# Each statement the code can contradict is read from the doc and checked
# against the sources, so a change that breaks one fails here until the
# code or the doc is put right.
arch = read("docs/architecture.md")
LAYERS = ("basic", "shared", "core", "daemon", "cli", "worker", "proxy")


def c_code(text):
    """C text without comments and string or character literals (their
    places kept, so line numbers hold)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


sources = {}
for layer in LAYERS:
    for d, _, names in sorted(os.walk(os.path.join(SRC, "src", layer))):
        for f in sorted(names):
            if f.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(d, f), os.path.join(SRC, "src"))
                sources[rel] = read("src/" + rel)
code = {k: c_code(v) for k, v in sources.items()}


def calls_of(pattern, allowed=()):
    """[file:line: text] of each match of pattern in the code (not in a
    comment or string) outside the allowed files."""
    hits = []
    for f, text in sorted(code.items()):
        if f in allowed:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            if re.search(pattern, line):
                hits.append("%s:%d: %s" % (f, n, sources[f].split("\n")[n - 1].strip()))
    return hits


# Every file the doc names is there: layer/file, a bare file.c of some
# layer, or a pattern such as backend-*.c that matches one.
named = set(re.findall(r"`((?:[\w*-]+/)*[\w*.-]+\.[ch])`", arch)) | set(
    re.findall(r"[(`]((?:%s)/[\w./-]+\.[ch])\b" % "|".join(LAYERS), arch))
check("docs/architecture.md names source files", len(named) >= 60, str(len(named)))
missing = []
for n in sorted(named):
    # A bare name may sit in any subdirectory of its layer.
    if "/" in n and n.split("/")[0] in LAYERS:
        cands = [os.path.join(SRC, "src", n)]
    elif "/" in n and n.split("/")[0] in ("tests", "bench", "docs", "scripts"):
        cands = [os.path.join(SRC, n)]
    else:
        cands = [os.path.join(SRC, "src", layer, "**", n) for layer in LAYERS]
    # A pattern such as backend-NAME.c names every backend's file.
    if not any(glob.glob(c.replace("NAME", "*"), recursive=True) for c in cands):
        missing.append(n)
check("every file docs/architecture.md names exists", not missing, str(missing))

# Every function, table or type it names exists: defined somewhere in
# src/ (a protocol name such as exit_code as a string at least), and where
# it is named with its file (`daemon/server/tools.c` (`tools_handle`), or
# `core/api/audit.c` `audit_result`), defined in that file.
def defines(text, name):
    n = re.escape(name)
    return re.search(r"^(?!\s)[^;\n]*\b%s\s*(?:\(|\[\]?\s*=|\[[\w ]*\]\s*=)|^\}\s*%s;|^(?:typedef )?(?:struct|enum) %s\b|"
                     r"^#define %s\b|\(\*%s\)|^\s+%s,?\s*(?:/\*.*)?$|^\s+%s = [^;]*$|"
                     r"^\s+(?:const )?\w+[\s*]+(?:\w+, )*%s(?:, \w+)*;" % (n, n, n, n, n, n, n, n),
                     text, re.M) is not None


idents = set(t.rstrip("()") for t in re.findall(r"`([A-Za-z_]\w*(?:\(\))?)`", arch))
idents = {i for i in idents if "_" in i or re.match(r"[A-Z][a-z]+[A-Z]", i) or re.match(r"[A-Z][a-z]+$", i)}
idents -= {"O_NOFOLLOW", "O_PATH", "RESOLVE_BENEATH", "RESOLVE_NO_SYMLINKS", "RESOLVE_NO_MAGICLINKS"}
all_code = "\n".join(sources.values())
undefined = [i for i in sorted(idents)
             if not any(defines(t, i) for t in sources.values()) and '"%s"' % i not in all_code]
check("docs/architecture.md names identifiers", len(idents) >= 50, str(len(idents)))
check("every identifier docs/architecture.md names is defined in src/", not undefined, str(undefined))
pairs = re.findall(r"`((?:%s)/[\w./-]+\.c)`\s*\(?`(\w+)`" % "|".join(LAYERS), arch)
check("docs/architecture.md names functions with their files", len(pairs) >= 15, str(len(pairs)))
pairs = [(f, i) for f, i in pairs if i in idents]  # not a protocol name such as `exec`
misplaced = ["%s %s" % (f, i) for f, i in pairs if f in sources and not defines(sources[f], i)]
check("each function docs/architecture.md names with its file is defined there", not misplaced, str(misplaced))

# The layers point one way: a layer includes only its own headers and
# those of the layers below it.
below = {"basic": {"basic"}, "shared": {"basic", "shared"}, "core": {"basic", "shared", "core"},
         "daemon": {"basic", "shared", "core", "daemon"}, "cli": {"basic", "shared", "core", "cli"},
         "worker": {"basic", "shared", "worker"},
         # the proxy process compiles in the daemon's parsers and codec
         "proxy": {"basic", "shared", "core", "proxy"}}
header_layer = {}
for f in sources:
    if f.endswith(".h"):
        header_layer.setdefault(os.path.basename(f), set()).add(f.split("/")[0])
check("docs/architecture.md states the layers", "`basic <- shared <- core <- {daemon, cli}`" in arch and
      "uses `basic` and `shared` only" in arch)
upward = []
for f, text in sorted(sources.items()):
    for h in re.findall(r'^#include "([\w.-]+)"', text, re.M):
        layers = header_layer.get(h, set())
        if layers and not layers & below[f.split("/")[0]]:
            upward.append("%s includes %s (%s)" % (f, h, "/".join(sorted(layers))))
check("no layer includes a header of a layer above it", not upward, str(upward))
check("core/ neither logs nor depends on an event loop",
      not calls_of(r"\blog_(?:error|warning|info|debug)\s*\(|\buv_\w+\s*\(|\bfprintf\s*\(\s*stderr",
                   [f for f in code if not f.startswith("core/")]),
      str(calls_of(r"\blog_(?:error|warning|info|debug)\s*\(|\buv_\w+\s*\(|\bfprintf\s*\(\s*stderr",
                   [f for f in code if not f.startswith("core/")])))

# The one fork: basic/spawn-util.c, but for the worker's clone (child.c)
# and the daemon's detach (startup.c), which the doc names as such; no
# forkpty(), whose child would run what the caller's threads may hold
# locked, anywhere.
FORK = r"\b(?:fork|vfork|forkpty|clone|clone3|posix_spawnp?|daemon|system|popen)\s*\("
fork_exceptions = {"worker/child.c": r"\bclone\s*\(", "daemon/server/startup.c": r"\bfork\s*\("}
check("docs/architecture.md names the fork exceptions",
      all("`%s`" % f in arch.split("the one fork", 1)[1].split("| know what", 1)[0] for f in fork_exceptions))
forks = calls_of(FORK, ["basic/spawn-util.c"] + list(fork_exceptions))
for f, pat in fork_exceptions.items():
    forks += [h for h in calls_of(FORK, [g for g in code if g != f]) if not re.search(pat, h.split(": ", 1)[1])]
check("the one fork: nothing forks outside basic/spawn-util.c and the doc's exceptions", not forks, str(forks))

# The one clock: basic/time-util.c; the readings left elsewhere are
# exactly those the doc names.
CLOCK = r"\b(?:clock_gettime|gettimeofday|time|uv_now|uv_hrtime|timespec_get|ftime|clock)\s*\("
clock_left = set(re.findall(r"`([\w-]+/[\w./-]+\.c)`", arch.split("the one clock", 1)[1].split("the one fork", 1)[0]))
clock_calls = calls_of(CLOCK, ["basic/time-util.c"])
check("the one clock: time is read in basic/time-util.c, and elsewhere only where the doc says",
      {h.split(":")[0] for h in clock_calls} == clock_left,
      "read in %s; the doc names %s" % (clock_calls, sorted(clock_left)))

# The one UTF-8 decoder: no lead-byte classes, continuation-byte masks or
# code point accumulation outside basic/utf8.c and .h. (net-policy.c's
# fe80::/10 test has the continuation mask's shape; it is no UTF-8.)
UTF8 = (r"&\s*0x[cC]0\s*\)\s*[!=]=\s*0x80|&\s*0x[eE]0\s*\)\s*==\s*0x[cC]0|&\s*0x[fF]0\s*\)\s*==\s*0x[eE]0|"
        r"&\s*0x[fF]8\s*\)\s*==\s*0x[fF]0|<<\s*6\s*\)\s*\||>=\s*0x[cC]2\b|\b(?:mbrtowc|mbtowc|mbrlen|iconv)\s*\(")
decoders = [h for h in calls_of(UTF8, ["basic/utf8.c", "basic/utf8.h"])
            if not h.startswith("core/config/net-policy.c:") or "a[0] == 0xfe" not in h]
check("the one UTF-8 decoder: no other code decodes UTF-8 by hand", not decoders, str(decoders))

# shared/ does not spawn, and keeps state only in the tables the doc
# names.
check("shared/ spawns nothing", not calls_of(r"\b(?:exec[lv]p?e?|spawn_\w+)\s*\(", [f for f in code if not f.startswith("shared/")]))
stateful = set()
for f, text in code.items():
    if f.startswith("shared/") and f.endswith(".c"):
        for line in text.split("\n"):
            if re.match(r"\s*static\s+(?!const\b|inline\b)[\w\s*]+?\b\w+\s*(?:\[[^\]]*\])?\s*(?:=[^=(][^;]*)?;\s*$", line):
                stateful.add(f)
shared_row = arch.split("| `shared/` |", 1)[1].split("\n", 1)[0].split("|")[1]
check("shared/ keeps state only in the tables the doc names",
      stateful == {"shared/" + f for f in re.findall(r"`([\w-]+\.c)`", shared_row)},
      "static state in %s; the doc names %s" % (sorted(stateful), shared_row))

# The client -> daemon boundary is daemon/server/peer.c's: the uid and the
# namespaces are decided there, the server only asks.
check("the peer's uid is decided in daemon/server/peer.c", defines(sources["daemon/server/peer.c"], "peer_uid_allowed") and
      not calls_of(r"\bcred\.uid\s*[!=]=|[!=]=\s*cred\.uid\b", [f for f in code if f != "daemon/server/server.c"]))

# The daemon's objects: daemon.h names what the doc says; each header has
# its row (a test seam, *-internal.h, is no object's), with its file.
daemon_h_names = set(re.findall(r"^typedef struct (\w+) \1;", sources["daemon/daemon.h"], re.M))
doc_names = set(re.findall(r"`(\w+)`", arch.split("`daemon/daemon.h` only names the objects", 1)[1].split(") and holds", 1)[0]))
check("daemon.h names the objects the doc lists", daemon_h_names == doc_names,
      "daemon.h: %s; doc: %s" % (sorted(daemon_h_names), sorted(doc_names)))
rows = dict(re.findall(r"^\| `([\w-]+\.h)` \|[^|\n]*\| `([\w-]+\.c)` \|$", arch, re.M))
daemon_files = {os.path.basename(f): f for f in sources if f.startswith("daemon/")}
headers = {h for h in daemon_files if h.endswith(".h")} - {"daemon.h"}
check("each daemon header has its row in docs/architecture.md",
      set(rows) == {h for h in headers if not h.endswith("-internal.h")},
      "headers: %s; rows: %s" % (sorted(headers), sorted(rows)))
check("each daemon header's row names a file there is", all(c in daemon_files for c in rows.values()), str(rows))
check("each daemon test seam is named", all("`%s`" % h in arch for h in headers if h.endswith("-internal.h")))

# The daemon's call order from the top names every file, and no file
# calls one named before it (from the objects' symbols, as
# tests/check-calls.py reads them).
order_text = arch.split("From the top", 1)[1].split("\n\n", 1)[0]
order = [f[:-2] for f in re.findall(r"`([\w-]+\.c)`", order_text)]
daemon_c = {f[:-2] for f in daemon_files if f.endswith(".c")}
check("the daemon's call order names every daemon file once", sorted(order) == sorted(daemon_c),
      "missing %s, extra %s" % (sorted(daemon_c - set(order)), sorted(set(order) - daemon_c)))
objs = sorted(glob.glob(os.path.join(BUILD, "src/daemon/**/*.c.o"), recursive=True))
if not objs:
    tap.skip("the daemon's calls follow the order from the top", "no daemon objects under %s" % BUILD)
else:
    ns = {"__name__": "check_calls"}
    exec(compile(read("tests/check-calls.py"), "check-calls.py", "exec"), ns)
    _defs, edges, why = ns["calls"](objs)
    rank = {f: i for i, f in enumerate(order)}
    back = ["%s calls %s (%s)" % (f, g, why[(f, g)]) for f in edges for g in edges[f]
            if f in rank and g in rank and rank[g] < rank[f]]
    check("the daemon's calls follow the order from the top", not back, str(back))

sys.exit(tap.finish())
