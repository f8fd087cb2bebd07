/* SPDX-License-Identifier: MIT */
/* vectora-sandbox: the command line parsed against the verb and option
 * tables (verbs.c, options.c), then the verb run. */
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

#define END _OPT_MAX

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
                if ((id == OPT_HOST && strv_extend(&a->hosts, optarg) < 0) ||
                    (id == OPT_HEADER && strv_extend(&a->headers, optarg) < 0))
                        return cli_fail(EXIT_REFUSED, "out of memory");
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
         * directory (src/core/launch/paths.h). */
        if (r == 0)
                vs_reserve_own_dirs(a.val[OPT_NO_DAEMON] ? NULL : a.val[OPT_SOCKET]);
        if (r == 0 && a.val[OPT_HELP]) {
                cli_help_verb(stdout, a.verb);
                r = 0;
        } else if (r == 0)
                r = a.verb->run ? a.verb->run(&a) : verb_help(&a);
        strv_free(a.env);
        strv_free(a.hosts);
        strv_free(a.headers);
        cli_options_done();
        return r;
}
