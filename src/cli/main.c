/* SPDX-License-Identifier: MIT */
/* vectora-sandbox: the verb table, the options (one table, parsed the same
 * way for every verb, anywhere on the line), the daemon's socket. */
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "cli.h"
#include "fd-util.h"
#include "macro.h"
#include "path-util.h"
#include "paths.h"
#include "strv.h"
#include "vs-build-config.h"

const CliOptSpec cli_options[_OPT_MAX] = {
        [OPT_WORKSPACE] = { "workspace", 'w', "DIR", "the workspace directory (default: the current directory)" },
        [OPT_JSON] = { "json", 0, NULL, "print the result as one JSON object on stdout, failures included" },
        [OPT_SOCKET] = { "socket", 0, "PATH",
                         "the daemon's socket (default: $VECTORA_SANDBOX_SOCKET, else the daemon's default socket when a daemon listens there)" },
        [OPT_NO_DAEMON] = { "no-daemon", 0, NULL, "run in-process even when a daemon listens at the default socket" },
        [OPT_HELP] = { "help", 'h', NULL, "show this help" },
        [OPT_AUDIT_LOG] = { "audit-log", 0, "FILE",
                            "append a JSON line per call served without a daemon to FILE (a daemon keeps its own)" },
        [OPT_REQUIRE_SANDBOX] = { "require-sandbox", 0, NULL,
                                  "refuse (exit 125) if the workspace would run unsandboxed; also VECTORA_REQUIRE_SANDBOX=1" },
        [OPT_TIMEOUT] = { "timeout", 0, "S", "seconds before the command's whole process group is killed (1..604800)" },
        [OPT_ENV] = { "env", 'e', "K=V", "add a variable to the command's environment (repeatable)" },
        [OPT_CWD] = { "cwd", 0, "DIR", "run in DIR, relative to the workspace or absolute" },
        [OPT_NO_STDIN] = { "no-stdin", 0, NULL,
                           "do not pass stdin to the command (it gets /dev/null; the default when stdin is a terminal)" },
        [OPT_OFFSET] = { "offset", 0, "N", "start at byte N" },
        [OPT_LIMIT] = { "limit", 0, "N", "print at most N bytes (default: the whole file)" },
        [OPT_NO_PARENTS] = { "no-parents", 0, NULL, "refuse (not_found) instead of creating missing parent directories" },
        [OPT_OLD] = { "old", 0, "TEXT", "the exact text to replace (must occur once, unless --all)" },
        [OPT_NEW] = { "new", 0, "TEXT", "the replacement text" },
        [OPT_ALL] = { "all", 0, NULL, "replace every occurrence of --old" },
        [OPT_FORCE] = { "force", 0, NULL, "replace an existing vectora.toml" },
        [OPT_FOLLOW] = { "follow", 'f', NULL, "keep printing new output until the process ends; exit with its status" },
};

#define END _OPT_MAX
static const CliOptId opts_policy[] = { OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_exec[] = { OPT_TIMEOUT, OPT_ENV, OPT_CWD, OPT_NO_STDIN, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_read[] = { OPT_OFFSET, OPT_LIMIT, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_write[] = { OPT_NO_PARENTS, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_edit[] = { OPT_OLD, OPT_NEW, OPT_ALL, OPT_REQUIRE_SANDBOX, END };
static const CliOptId opts_init[] = { OPT_FORCE, END };
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
        { "help", verb_help, "[VERB]", "every option of a verb",
          "Shows the verbs, or every option of VERB.", opts_none, 0, 1, false },
};
const size_t cli_n_verbs = ELEMENTSOF(cli_verbs);

const CliVerb *cli_verb_find(const char *name) {
        for (size_t i = 0; i < cli_n_verbs; i++)
                if (streq(name, cli_verbs[i].name))
                        return &cli_verbs[i];
        return NULL;
}

/* ---- the daemon's socket ---- */

static char *default_socket;

const char *cli_default_socket(void) {
        if (!default_socket && vs_default_socket(&default_socket) < 0)
                return "(out of memory)";
        return default_socket;
}

/* Only a socket that the caller or root made, in a directory no one else
 * may write to: in a shared /tmp another user could have planted
 * /tmp/vectora-sandbox-UID first, and a CLI that talked to their socket
 * would hand them its commands and file contents. */
static bool trusted_socket(const char *path) {
        struct stat st;
        if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0))
                return false;
        _cleanup_free_ char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (!slash)
                return false;
        *(slash == dir ? slash + 1 : slash) = 0;
        return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0) &&
               !(st.st_mode & 022);
}

static bool daemon_listens(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path || !trusted_socket(path))
                return false;
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        return fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
}

const char *cli_socket(const CliArgs *a) {
        static int probed = -1;
        if (a->val[OPT_NO_DAEMON])
                return NULL;
        if (a->val[OPT_SOCKET])
                return a->val[OPT_SOCKET];
        const char *e = getenv("VECTORA_SANDBOX_SOCKET");
        if (e && *e)
                return e;
        /* Nothing named: the daemon's default socket, if a daemon is there. */
        if (probed < 0)
                probed = daemon_listens(cli_default_socket());
        return probed ? cli_default_socket() : NULL;
}

char *cli_workspace_abs(const CliArgs *a) {
        /* As written: config_locate() checks a path through a symlink against
         * the workspace it lies in as spelled. */
        return path_absolute_os(a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".");
}

/* ---- options ---- */

static bool verb_has(const CliVerb *v, CliOptId id) {
        if (id <= OPT_LAST_COMMON)
                return true;
        for (const CliOptId *o = v->opts; *o != END; o++)
                if (*o == id)
                        return true;
        return false;
}

static bool require_from_env(void) {
        const char *e = getenv("VECTORA_REQUIRE_SANDBOX");
        /* Fail closed: anything but empty or "0" asks for the sandbox. */
        return e && *e && !streq(e, "0");
}

static int usage_error(const CliArgs *a, const char *fmt, ...) _printf_(2, 3);
static int usage_error(const CliArgs *a, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (a->verb)
                return cli_fail_code(a, EXIT_USAGE, "usage", "%s: %s; see vectora-sandbox help %s", a->verb->name, msg,
                                     a->verb->name);
        return cli_fail_code(a, EXIT_USAGE, "usage", "%s; see vectora-sandbox --help", msg);
}

/* argv is the verb's arguments with the options given before the verb
 * first. */
static int parse_verb_args(CliArgs *a, int argc, char **argv) {
        const CliVerb *v = a->verb;
        struct option lo[_OPT_MAX + 1] = {};
        char shorts[32] = "";
        size_t n = 0, k = 0;
        /* exec: options end at the command; elsewhere they go anywhere
         * (getopt permutes). */
        if (v->command_follows)
                shorts[k++] = '+';
        shorts[k++] = ':';
        for (int id = 0; id < _OPT_MAX; id++) {
                if (!verb_has(v, (CliOptId)id))
                        continue;
                const CliOptSpec *s = &cli_options[id];
                lo[n++] = (struct option){ s->name, s->arg ? required_argument : no_argument, NULL, 256 + id };
                if (s->short_name) {
                        shorts[k++] = s->short_name;
                        if (s->arg)
                                shorts[k++] = ':';
                }
        }
        shorts[k] = 0;
        opterr = 0;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, shorts, lo, NULL)) >= 0) {
                int id = -1;
                if (c >= 256)
                        id = c - 256;
                else if (c == '?' || c == ':') {
                        const char *bad = argv[optind - 1];
                        if (c == ':')
                                return usage_error(a, "%s needs an argument", bad);
                        /* Name the option as the user wrote it. */
                        if (optopt && bad[0] == '-' && bad[1] != '-')
                                return usage_error(a, "unknown option -%c", optopt);
                        return usage_error(a, "unknown option %s", bad);
                } else
                        for (int i = 0; i < _OPT_MAX; i++)
                                if (cli_options[i].short_name == c && verb_has(v, (CliOptId)i))
                                        id = i;
                if (id < 0)
                        return usage_error(a, "unexpected option");
                if (id == OPT_ENV) {
                        if (!strchr(optarg, '=') || optarg[0] == '=')
                                return usage_error(a, "--env takes K=V, not '%s'", optarg);
                        if (strv_extend(&a->env, optarg) < 0)
                                return cli_fail(EXIT_REFUSED, "out of memory");
                }
                a->val[id] = cli_options[id].arg ? optarg : "";
        }
        a->pos = argv + optind;
        a->n_pos = argc - optind;
        a->json = a->val[OPT_JSON] != NULL;
        a->require_sandbox = verb_has(v, OPT_REQUIRE_SANDBOX) && (a->val[OPT_REQUIRE_SANDBOX] || require_from_env());
        if (a->val[OPT_HELP])
                return 0;
        if (a->n_pos < v->min_pos) {
                const char *want = v->command_follows ? "a command" : v->max_pos == 1 ? "one argument" : "arguments";
                return usage_error(a, "missing %s (usage: vectora-sandbox %s %s)", want, v->name, v->synopsis);
        }
        if (v->max_pos >= 0 && a->n_pos > v->max_pos) {
                if (streq(v->name, "run"))
                        return usage_error(a, "give the command line as one argument, quoted: vectora-sandbox run 'make test'");
                return usage_error(a, "unexpected argument '%s' (usage: vectora-sandbox %s %s)", a->pos[v->max_pos],
                                   v->name, v->synopsis);
        }
        return 0;
}

/* The options that take an argument, for finding the verb among them. */
static bool takes_arg(const char *s) {
        for (int i = 0; i < _OPT_MAX; i++) {
                const CliOptSpec *o = &cli_options[i];
                if (!o->arg)
                        continue;
                if (s[0] == '-' && s[1] == '-' && streq(s + 2, o->name))
                        return true;
                if (o->short_name && s[0] == '-' && s[1] == o->short_name && !s[2])
                        return true;
        }
        return false;
}

int main(int argc, char **argv) {
        CliArgs a = {};
        int vi = 1;
        while (vi < argc && argv[vi][0] == '-' && !streq(argv[vi], "--")) {
                if (streq(argv[vi], "--version")) {
                        printf("vectora-sandbox %s\n", VS_VERSION);
                        return 0;
                }
                vi += takes_arg(argv[vi]) && vi + 1 < argc ? 2 : 1;
        }
        if (vi >= argc || streq(argv[vi], "--")) {
                for (int i = 1; i < vi; i++)
                        if (streq(argv[i], "--help") || streq(argv[i], "-h")) {
                                cli_help_main(stdout);
                                return 0;
                        }
                for (int i = 1; i < vi; i++)
                        a.json |= streq(argv[i], "--json");
                cli_help_main(stderr);
                return usage_error(&a, "no verb given");
        }
        a.verb = cli_verb_find(argv[vi]);
        if (!a.verb) {
                for (int i = 1; i < argc; i++)
                        a.json |= streq(argv[i], "--json");
                return usage_error(&a, "unknown verb '%s'", argv[vi]);
        }
        /* The verb's own argv: argv[0], the options given before the verb,
         * then what follows it. */
        _cleanup_free_ char **va = calloc((size_t)argc + 1, sizeof(char *));
        if (!va)
                return cli_fail(EXIT_REFUSED, "out of memory");
        int vn = 0;
        va[vn++] = argv[0];
        for (int i = 1; i < vi; i++)
                va[vn++] = argv[i];
        for (int i = vi + 1; i < argc; i++)
                va[vn++] = argv[i];
        for (int i = 1; i < vn && !streq(va[i], "--"); i++)
                a.json |= streq(va[i], "--json");
        int r = parse_verb_args(&a, vn, va);
        /* No policy may list the daemon socket's directory or our runtime
         * directory (src/core/paths.h). */
        if (r == 0)
                vs_reserve_own_dirs(a.val[OPT_NO_DAEMON] ? NULL : a.val[OPT_SOCKET]);
        if (r == 0 && a.val[OPT_HELP]) {
                cli_help_verb(stdout, a.verb);
                r = 0;
        } else if (r == 0)
                r = a.verb->run(&a);
        strv_free(a.env);
        free(default_socket);
        return r;
}
