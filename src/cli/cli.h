/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora-sandbox: a table of verbs (verbs.c), one file per verb, each thin
 * over one transport (link.c: the daemon's API, or embedded through
 * src/core). Every verb builds a daemon API request, gets back an
 * API-shaped result (the daemon's own, or one made the same way in
 * embedded mode), and prints it as text or, with --json, as JSON.
 *
 * A new verb: a row in cli_verbs (verbs.c) naming its options (a new one in
 * cli_options, options.c), a line in each completion script (completion/), and its
 * entry in docs/man/vectora-sandbox.1; test-cli and test-docs check that
 * help, completion and the man page list every verb and option. */

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "api.h"
#include "error.h"
#include "jsonl.h"

/* Exit statuses (vectora-sandbox(1), "EXIT STATUS"). exec/run return the
 * command's own status otherwise. */
#define EXIT_TOOL 1      /* the tool itself failed: no such file, edit text not found ... */
#define EXIT_USAGE 2     /* a usage error: unknown option, missing argument */
#define EXIT_CONFIG 2    /* check: the config is refused */
#define EXIT_REFUSED 125 /* the sandbox layer refused or failed; nothing ran */
#define EXIT_LOST 255    /* the daemon ended with the call in flight: it may have run */

typedef enum CliOptId {
        /* common to every verb */
        OPT_WORKSPACE,
        OPT_JSON,
        OPT_SOCKET,
        OPT_NO_DAEMON,
        OPT_HELP,
        OPT_AUDIT_LOG,
        /* verb options */
        OPT_REQUIRE_SANDBOX,
        OPT_TIMEOUT,
        OPT_ENV,
        OPT_CWD,
        OPT_NO_STDIN,
        OPT_OFFSET,
        OPT_LIMIT,
        OPT_START_LINE,
        OPT_MAX_OUTPUT,
        OPT_MAX_LINES,
        OPT_NO_PARENTS,
        OPT_OLD,
        OPT_NEW,
        OPT_ALL,
        OPT_FORCE,
        OPT_FOLLOW,
        OPT_MAX_ENTRIES,
        OPT_MAX_RESULTS,
        OPT_MAX_MATCHES,
        OPT_GLOB,
        OPT_IGNORE_CASE,
        OPT_FIXED,
        OPT_CONTEXT,
        OPT_HOST,
        OPT_HEADER,
        OPT_FROM_ENV,
        OPT_FROM_FILE,
        _OPT_MAX,
} CliOptId;
/* The last of the options common to every verb. */
#define OPT_LAST_COMMON OPT_AUDIT_LOG

typedef struct CliOptSpec {
        const char *name;  /* long name, without "--" */
        char short_name;   /* 0: none */
        const char *arg;   /* NULL: a flag; else the argument's name in help */
        const char *help;
} CliOptSpec;

extern const CliOptSpec cli_options[_OPT_MAX];

typedef struct CliVerb CliVerb;

typedef struct CliArgs {
        const CliVerb *verb;
        const char *val[_OPT_MAX]; /* NULL: not given; a flag given: "" */
        char **env;                /* every --env K=V, in order */
        char **hosts;              /* every --host H, in order (secret set) */
        char **headers;            /* every --header NAME, in order (secret set) */
        char **pos;                /* positional arguments (borrowed from argv) */
        int n_pos;
        bool json;                 /* --json */
        bool require_sandbox;      /* --require-sandbox or VECTORA_REQUIRE_SANDBOX=1 */
} CliArgs;

struct CliVerb {
        const char *name;
        int (*run)(const CliArgs *a);
        const char *synopsis;    /* what follows "vectora-sandbox VERB" */
        const char *summary;     /* one line for the verb list */
        const char *description; /* what help VERB says first */
        const CliOptId *opts;    /* verb options, ending with _OPT_MAX */
        int min_pos, max_pos;    /* positional arguments; max -1: any */
        bool command_follows;    /* exec: options end at the first argument (or --) */
};

extern const CliVerb cli_verbs[];
extern const size_t cli_n_verbs;
const CliVerb *cli_verb_find(const char *name);

int verb_check(const CliArgs *a);
int verb_secret(const CliArgs *a);
int verb_plan(const CliArgs *a);
int verb_exec(const CliArgs *a);
int verb_run(const CliArgs *a);
int verb_read(const CliArgs *a);
int verb_write(const CliArgs *a);
int verb_edit(const CliArgs *a);
int verb_ls(const CliArgs *a);
int verb_glob(const CliArgs *a);
int verb_grep(const CliArgs *a);
int verb_shell(const CliArgs *a);
int verb_status(const CliArgs *a);
int verb_metrics(const CliArgs *a);
int verb_init(const CliArgs *a);
int verb_help(const CliArgs *a);
int verb_mcp(const CliArgs *a);
int verb_allow(const CliArgs *a);
int verb_start(const CliArgs *a);
int verb_logs(const CliArgs *a);
int verb_stop(const CliArgs *a);
int verb_ps(const CliArgs *a);

/* help.c: the verb's full help (synopsis, description, every option). */
void cli_help_verb(FILE *f, const CliVerb *v);
void cli_help_main(FILE *f);
/* The verbs and their options as JSON (help --json; completion scripts are
 * checked against it). */
json_t *cli_help_json(void);

/* output.c */
/* Prints "vectora-sandbox: MSG" to stderr (the prefix red on a colour
 * terminal); returns code. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failure before or instead of an API result (usage, a local check):
 * with --json, also {"ok":false,"error":{"code":CODE,"message":MSG}} on
 * stdout. Returns exit. */
int cli_fail_code(const CliArgs *a, int exit, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* The exit status for an API error code (EXIT_TOOL or EXIT_REFUSED). */
int cli_exit_for_code(const char *code);
/* A failed API result: the error on stderr as "VERB: code: message" (and
 * the whole result on stdout with --json). Returns its exit status. */
int cli_print_error(const CliArgs *a, json_t *result);
/* Prints obj on stdout, indented, keys sorted. */
void cli_print_json(json_t *obj);
/* "warning: running degraded: ..." for each entry of sandbox.degraded,
 * and the result's policy_pending (cli_warn_pending). */
void cli_warn_degraded(json_t *result);
/* "warning: MSG" for a loosening of the policy that waits for
 * `vectora-sandbox allow` (approval.h). */
void cli_warn_pending(const char *pending);
/* Colour escape for stream f, or "" (no TTY, NO_COLOR set, TERM=dumb). */
const char *cli_color(FILE *f, const char *sgr);
/* Text as a JSON value under key (or key_base64 when not UTF-8) in o. */
void cli_set_bytes(json_t *o, const char *key, const char *p, size_t n);

/* verb-check.c: refuses (125, "sandbox_required") an unsandboxed policy
 * under --require-sandbox. */
struct VsPolicy;
int cli_refuse_unsandboxed(const CliArgs *a, const struct VsPolicy *p);

/* The daemon socket to use: --socket, VECTORA_SANDBOX_SOCKET, or the
 * default socket when a daemon answers there; NULL: embedded mode
 * (--no-daemon, or no daemon at the default socket). */
const char *cli_socket(const CliArgs *a);
/* The default socket (vs_default_socket), for messages. */
const char *cli_default_socket(void);
/* The workspace as an absolute path (-w, default "."): NULL and errno set
 * when it does not exist. */
char *cli_workspace_abs(const CliArgs *a);
/* Frees what the options kept (the default socket's path). */
void cli_options_done(void);
