/* SPDX-License-Identifier: MIT */
/* Help, made from the verb and option tables so that it lists every option
 * a verb takes (and nothing it does not). */
#include <string.h>

#include "cli.h"

static void print_option(FILE *f, const CliOptSpec *o) {
        char flag[64];
        if (o->short_name)
                snprintf(flag, sizeof flag, "-%c, --%s%s%s", o->short_name, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        else
                snprintf(flag, sizeof flag, "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "  %-24s %s\n", flag, o->help);
}

static const char *const exit_status_text =
        "exit status:\n"
        "  0     success\n"
        "  1     the tool failed on its own terms: not_found, exists, precondition_failed, too_large, io,\n"
        "        edit_not_found, edit_not_unique, conflict, cancelled (the message names the code)\n"
        "  2     usage error; for check, the config is refused\n"
        "  125   the sandbox layer refused or failed and nothing ran (config_invalid, sandbox_unavailable,\n"
        "        denied, sandbox_required, workspace_not_found, daemon_unreachable, ...)\n"
        "  126, 127, 128+N   exec/run: the command could not run, was not found, was killed by signal N;\n"
        "        otherwise exec/run exit with the command's own status\n";

void cli_help_verb(FILE *f, const CliVerb *v) {
        fprintf(f, "usage: vectora-sandbox %s %s\n\n%s\n\noptions:\n", v->name, v->synopsis, v->description);
        for (const CliOptId *o = v->opts; *o != _OPT_MAX; o++)
                print_option(f, &cli_options[*o]);
        for (int id = 0; id <= OPT_LAST_COMMON; id++)
                print_option(f, &cli_options[id]);
        if (!streq(v->name, "help"))
                fprintf(f, "\n%s", exit_status_text);
        fprintf(f, "\nSee vectora-sandbox(1).\n");
}

void cli_help_main(FILE *f) {
        fprintf(f,
                "usage: vectora-sandbox [OPTIONS] VERB [OPTIONS] [ARGS]\n\n"
                "Runs an AI agent's terminal and file tools inside the workspace's jail, as declared by the\n"
                "[sandbox] table of DIR/vectora.toml. Through vectora-sandboxd when one is reachable (--socket,\n"
                "$VECTORA_SANDBOX_SOCKET, or the daemon's default socket, %s);\n"
                "otherwise in-process, one worker for one action (embedded mode).\n\nverbs:\n",
                cli_default_socket());
        for (size_t i = 0; i < cli_n_verbs; i++)
                fprintf(f, "  %-8s %s\n", cli_verbs[i].name, cli_verbs[i].summary);
        fprintf(f, "\noptions every verb takes, before or after it:\n");
        for (int id = 0; id <= OPT_LAST_COMMON; id++)
                print_option(f, &cli_options[id]);
        fprintf(f, "      --version                the version\n\n%s\n"
                   "vectora-sandbox help VERB shows every option of VERB. See vectora-sandbox(1).\n",
                exit_status_text);
}

static json_t *option_json(const CliOptSpec *o) {
        json_t *j = json_pack("{s:s,s:s}", "name", o->name, "help", o->help);
        if (j && o->arg)
                json_object_set_new(j, "arg", json_string(o->arg));
        if (j && o->short_name)
                json_object_set_new(j, "short", json_sprintf("%c", o->short_name));
        return j;
}

json_t *cli_help_json(void) {
        json_t *verbs = json_array();
        for (size_t i = 0; verbs && i < cli_n_verbs; i++) {
                const CliVerb *v = &cli_verbs[i];
                json_t *opts = json_array();
                for (const CliOptId *o = v->opts; opts && *o != _OPT_MAX; o++)
                        json_array_append_new(opts, option_json(&cli_options[*o]));
                for (int id = 0; opts && id <= OPT_LAST_COMMON; id++)
                        json_array_append_new(opts, option_json(&cli_options[id]));
                json_array_append_new(verbs, json_pack("{s:s,s:s,s:s,s:o}", "name", v->name, "synopsis", v->synopsis,
                                                       "summary", v->summary, "options", opts));
        }
        return json_pack("{s:b,s:o}", "ok", 1, "verbs", verbs);
}

int verb_help(const CliArgs *a) {
        if (a->n_pos == 0) {
                if (a->json) {
                        json_t *o = cli_help_json();
                        if (!o)
                                return cli_fail(EXIT_REFUSED, "out of memory");
                        cli_print_json(o);
                        json_decref(o);
                        return 0;
                }
                cli_help_main(stdout);
                return 0;
        }
        const CliVerb *v = cli_verb_find(a->pos[0]);
        if (!v)
                return cli_fail_code(a, EXIT_USAGE, "usage", "help: unknown verb '%s'; the verbs are listed by vectora-sandbox help",
                                     a->pos[0]);
        if (a->json) {
                json_t *all = cli_help_json();
                json_t *verbs = json_object_get(all, "verbs");
                size_t i;
                json_t *e;
                json_array_foreach(verbs, i, e) if (streq(json_string_value(json_object_get(e, "name")), v->name)) {
                        json_object_set_new(e, "ok", json_true());
                        cli_print_json(e);
                }
                json_decref(all);
                return 0;
        }
        cli_help_verb(stdout, v);
        return 0;
}
