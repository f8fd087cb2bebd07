/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "paths.h"
#include "macro.h"
#include "vs-build-config.h"

static const CliVerb verbs[] = {
        { "check", verb_check, "show the effective policy, or the config error (exit 2)" },
        { "plan", verb_plan, "print the exact backend invocation; nothing runs" },
        { "exec", verb_exec, "run a command (argv) in the workspace's jail" },
        { "run", verb_run, "run a shell command line (/bin/sh -c) in the jail" },
        { "read", verb_read, "print a file through the jail's file tool" },
        { "write", verb_write, "write stdin to a file, atomically" },
        { "edit", verb_edit, "replace exact text in a file" },
        { "shell", verb_shell, "interactive terminal (PTY)" },
        { "status", verb_status, "daemon status: workspaces, workers, counters" },
        { "mcp", verb_mcp, "an MCP server on stdio exposing the workspace's tools" },
        { "allow", verb_allow, "approve a pending loosening of the policy (shows the difference)" },
};

static const char *socket_path;

const char *cli_socket(void) {
        if (socket_path)
                return socket_path;
        const char *e = getenv("VECTORA_SANDBOX_SOCKET");
        return e && *e ? e : NULL;
}

void cli_set_socket(const char *s) {
        socket_path = s;
}

int cli_fail(int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("vectora-sandbox: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        return code;
}

static void usage(FILE *f) {
        fprintf(f,
                "usage: vectora-sandbox [--socket PATH] VERB [OPTIONS]\n\n"
                "Runs an AI agent's terminal and file tools inside the workspace's jail, as\n"
                "declared by the [sandbox] section of DIR/vectora.toml. With a daemon socket\n"
                "(--socket or VECTORA_SANDBOX_SOCKET) every verb goes through vectora-sandboxd;\n"
                "without one, the action runs in-process (embedded mode).\n\nverbs:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
        fprintf(f, "\nevery verb takes -w/--workspace DIR (default: the current directory).\n"
                   "exit status: the command's own for exec/run; 125 when the sandbox refused or\n"
                   "failed and nothing ran; 2 from check for a refused config.\n"
                   "See vectora-sandbox(1).\n");
}

int main(int argc, char **argv) {
        int i = 1;
        while (i < argc && argv[i][0] == '-') {
                if (streq(argv[i], "--help") || streq(argv[i], "-h")) {
                        usage(stdout);
                        return 0;
                }
                if (streq(argv[i], "--version")) {
                        printf("vectora-sandbox %s\n", VS_VERSION);
                        return 0;
                }
                if (streq(argv[i], "--socket") && i + 1 < argc) {
                        cli_set_socket(argv[i + 1]);
                        i += 2;
                        continue;
                }
                if (strncmp(argv[i], "--socket=", 9) == 0) {
                        cli_set_socket(argv[i] + 9);
                        i++;
                        continue;
                }
                usage(stderr);
                return cli_fail(EXIT_CONFIG, "unknown option %s", argv[i]);
        }
        if (i >= argc) {
                usage(stderr);
                return EXIT_CONFIG;
        }
        vs_reserve_own_dirs(cli_socket());
        for (size_t v = 0; v < ELEMENTSOF(verbs); v++)
                if (streq(argv[i], verbs[v].name)) {
                        optind = 1;
                        return verbs[v].run(argc - i, argv + i);
                }
        usage(stderr);
        return cli_fail(EXIT_CONFIG, "unknown verb '%s'; see vectora-sandbox --help", argv[i]);
}
