/* SPDX-License-Identifier: MIT */
/* vectora-sandbox's verbs: what each is called, runs, takes and says. */
#include "cli.h"
#include "macro.h"

#define END _OPT_MAX
static const CliOptId opts_policy[] = { OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_exec[] = { OPT_TIMEOUT, OPT_MAX_OUTPUT, OPT_ENV, OPT_CWD, OPT_NO_STDIN, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_read[] = { OPT_OFFSET, OPT_LIMIT, OPT_START_LINE, OPT_MAX_LINES, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_write[] = { OPT_NO_PARENTS, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_edit[] = { OPT_OLD, OPT_NEW, OPT_ALL, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_ls[] = { OPT_MAX_ENTRIES, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_glob[] = { OPT_MAX_RESULTS, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_grep[] = { OPT_GLOB, OPT_IGNORE_CASE, OPT_FIXED, OPT_CONTEXT, OPT_MAX_MATCHES, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_init[] = { OPT_FORCE, END };
static const CliOptId opts_secret[] = { OPT_HOST, OPT_HEADER, OPT_FROM_ENV, OPT_FROM_FILE, END };
static const CliOptId opts_mcp[] = { OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_none[] = { END };
static const CliOptId opts_start[] = { OPT_TIMEOUT, OPT_ENV, OPT_CWD, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_logs[] = { OPT_FOLLOW, END };

const CliVerb cli_verbs[] = {
        { "check", verb_check, "[-w DIR] [--json]", "show the effective policy, or the config error (exit 2)",
          "Loads DIR/vectora.toml as the daemon would and prints the effective policy (paths resolved, defaults filled\n"
          "in), or the located reason it is refused (exit 2; every tool call in the workspace is refused meanwhile).",
          opts_policy, 0, 0, false },
        { "plan", verb_plan, "[-w DIR] [--json]", "print the exact backend invocation; nothing runs",
          "Prints the command line that starts the workspace's worker (bwrap, docker, ssh, or the modal bridge) and what\n"
          "the worker then enforces inside. Nothing is run.",
          opts_policy, 0, 0, false },
        { "exec", verb_exec, "[-w DIR] [--timeout S] [--env K=V] [--cwd DIR] [--] CMD [ARG...]",
          "run a command (argv) in the workspace's jail",
          "Runs CMD with its arguments in the workspace's jail (on the host when the workspace is unsandboxed). Options\n"
          "come before CMD; everything from CMD on is the command. stdin is passed to the command unless it is a\n"
          "terminal or --no-stdin is given. Exits with the command's status (128+N when killed by signal N).",
          opts_exec, 1, -1, true },
        { "run", verb_run, "[-w DIR] [--timeout S] [--env K=V] [--cwd DIR] 'COMMAND LINE'",
          "run a shell command line (/bin/sh -c) in the jail",
          "Runs one shell command line as /bin/sh -c LINE in the workspace's jail: the agent's terminal tool. Options\n"
          "may come before or after the line. stdin is passed to the command unless it is a terminal or --no-stdin is\n"
          "given. Exits with the command's status (128+N when killed by signal N).",
          opts_exec, 1, 1, false },
        { "read", verb_read, "[-w DIR] PATH [--offset N] [--limit N]", "print a file through the jail's file tool",
          "Prints the file at PATH (relative to the workspace, or absolute) through the jail's file tool: a masked or\n"
          "unlisted path is refused. The whole file is printed, in pieces of up to 64 MiB; a file that changes while\n"
          "it is read is an error (exit 1), never a silently mixed copy.",
          opts_read, 1, 1, false },
        { "write", verb_write, "[-w DIR] PATH [--no-parents] < CONTENT", "write stdin to a file, atomically",
          "Replaces the file at PATH with stdin (up to 64 MiB), atomically (temp file, fsync, rename). Missing parent\n"
          "directories are created unless --no-parents is given.",
          opts_write, 1, 1, false },
        { "edit", verb_edit, "[-w DIR] PATH --old TEXT --new TEXT [--all]", "replace exact text in a file",
          "Replaces the exact text --old by --new in PATH. --old must occur exactly once unless --all is given. A\n"
          "concurrent change between reading and writing is never overwritten: the edit is applied again to the new\n"
          "content (up to 16 times).",
          opts_edit, 1, 1, false },
        { "ls", verb_ls, "[-w DIR] [PATH] [--max-entries N]", "list a directory through the jail's file tool",
          "Lists the directory PATH (default: the workspace root) through the jail's file tool: one entry a line, a\n"
          "directory with / after it, a symlink with @, a file's size after a tab, sorted by name. Masked paths are\n"
          "not listed. When more entries exist than --max-entries, a last line on stderr says how many.",
          opts_ls, 0, 1, false },
        { "glob", verb_glob, "[-w DIR] PATTERN [PATH] [--max-results N]", "find paths by a glob, through the jail",
          "Prints the paths below PATH (default: the workspace root) that match PATTERN ('*', '?', '[...]' within a\n"
          "name, '**' across directories; a pattern without '/' matches the name at any depth), one a line, sorted,\n"
          "a directory with / after it. Symlinks are listed, not followed; .git and masked paths are left out. The\n"
          "last line, on stderr, counts them and says when a limit stopped the walk.",
          opts_glob, 1, 2, false },
        { "grep", verb_grep, "[-w DIR] PATTERN [PATH] [--glob G] [-i] [-F] [-C N] [--max-matches N]",
          "search file contents by a regex, through the jail",
          "Prints the lines of the files below PATH (default: the workspace root; or PATH itself, a file) that match\n"
          "the POSIX extended regex PATTERN, as path:line:text, with context lines as path-line-text. Binary files,\n"
          "files over 16 MiB, .git, symlinks and masked paths are skipped. The last line, on stderr, counts the\n"
          "matches and says when a limit stopped the search. Exits 1 when nothing matched, as grep does.",
          opts_grep, 1, 2, false },
        { "shell", verb_shell, "[-w DIR]", "interactive terminal (PTY); daemon only",
          "Opens an interactive terminal in the workspace through the daemon. In a sandboxed workspace it is a PTY in\n"
          "the jail running /bin/sh -i as the jail's user, never a shell on the host; a policy change ends it (exit\n"
          "125, with the reason). What is typed before the prompt appears is kept.",
          opts_policy, 0, 0, false },
        { "start", verb_start, "[-w DIR] [--timeout S] [--env K=V] [--cwd DIR] 'COMMAND LINE'",
          "start a background process in the jail (daemon only); prints its id",
          "Starts COMMAND LINE (/bin/sh -c) as a background process in the workspace's jail, under its limits but\n"
          "without the per-command timeout ([sandbox.limits] background_timeout, or --timeout, bound it instead),\n"
          "and prints its id at once. It runs until it exits, is stopped, or its jail ends (a policy change, the\n"
          "daemon's shutdown). Its output is kept (the last max_output bytes of each stream) for logs. The daemon\n"
          "keeps it: without one, start is refused.",
          opts_start, 1, 1, false },
        { "logs", verb_logs, "[-w DIR] ID [--follow]", "a background process's output",
          "Prints the kept stdout (to stdout) and stderr (to stderr) of background process ID, saying how many bytes\n"
          "were dropped before them. With --follow, keeps printing until the process ends and exits with its status.",
          opts_logs, 1, 1, false },
        { "stop", verb_stop, "[-w DIR] ID", "end a background process",
          "Sends SIGTERM to background process ID's process group, and SIGKILL when it has not ended 5 s later.",
          opts_none, 1, 1, false },
        { "ps", verb_ps, "[-w DIR] [--json]", "the workspace's background processes",
          "Lists the workspace's background processes: running ones and the last ended ones, with their status.",
          opts_none, 0, 0, false },
        { "status", verb_status, "[-w DIR] [--json]", "the daemon: workspaces, workers, layers, counters",
          "Shows what the daemon serves: each workspace's state, worker, enforced layers, degradations, pending\n"
          "changes and call counters. With -w, that workspace only.",
          opts_none, 0, 0, false },
        { "metrics", verb_metrics, "[--json]", "the daemon's figures in the Prometheus text format",
          "Prints what the daemon counts, in the Prometheus text exposition format: workspaces and jails by state,\n"
          "calls by tool and result, refusals by reason, a latency histogram per tool, jail starts, crashes and\n"
          "recycles, the inotify watches, the bytes held for clients, audit records lost, the proxy process. Needs\n"
          "a daemon; a textfile collector (node_exporter) can read the output.",
          opts_none, 0, 0, false },
        { "mcp", verb_mcp, "[-w DIR]", "an MCP server on stdio exposing the workspace's tools",
          "A Model Context Protocol server on stdin/stdout (JSON-RPC 2.0, one message per line) with the tools\n"
          "terminal, file_read, file_write and file_edit, acting on workspace DIR in its sandbox: through\n"
          "vectora-sandboxd when one is reachable when it starts, otherwise with one worker kept for the session.\n"
          "With --require-sandbox every call in an unsandboxed workspace is refused. See docs/mcp.md.",
          opts_mcp, 0, 0, false },
        { "allow", verb_allow, "[-w DIR] [--json]", "approve a pending loosening of the policy (shows the difference)",
          "Approves the current vectora.toml of the workspace governing DIR, after printing what it loosens and how it\n"
          "differs from the approved one. A change that loosens the policy (a mask or protected path removed, a path\n"
          "added or widened, network, limits, backend, the sandbox switched off) waits for this; until then the\n"
          "approved policy keeps serving and every result says a change is pending. Through vectora-sandboxd\n"
          "(policy_allow) when one is reachable, otherwise on the caller's own approval store.",
          opts_none, 0, 0, false },
        { "init", verb_init, "[-w DIR] [--force]", "write a commented vectora.toml with safe defaults",
          "Writes DIR/vectora.toml with a [sandbox] table of safe defaults and a comment on every key, then checks it.\n"
          "An existing vectora.toml is kept unless --force is given.",
          opts_init, 0, 0, false },
        { "secret", verb_secret, "set NAME [--host H]... [--header NAME]... | list | delete NAME", "host-held secrets: the jail sees placeholders",
          "Keeps a secret on the host, in the daemon's state directory (mode 0600), for workspaces that name it in\n"
          "sandbox.secrets: their jail gets NAME set to a placeholder, never the value, and the proxy puts the value in\n"
          "place of the placeholder only in requests to the secret's hosts, in the Authorization header and in each\n"
          "header named with --header (X-Api-Key). `set` reads the value from stdin (one trailing newline dropped),\n"
          "--from-env VAR or --from-file PATH; `list` shows names, hosts and headers, never values.\n"
          "Through vectora-sandboxd (secret_set, secret_list, secret_delete) when one is reachable, otherwise in the\n"
          "caller's own state directory.",
          opts_secret, 1, 2, false },
        /* help: run by main itself (help.c reads this table). */
        { "help", NULL, "[VERB]", "every option of a verb",
          "Shows the verbs, or every option of VERB.", opts_none, 0, 1, false },
};
const size_t cli_n_verbs = ELEMENTSOF(cli_verbs);

const CliVerb *cli_verb_find(const char *name) {
        for (size_t i = 0; i < cli_n_verbs; i++)
                if (streq(name, cli_verbs[i].name))
                        return &cli_verbs[i];
        return NULL;
}

