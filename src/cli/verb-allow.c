/* SPDX-License-Identifier: MIT */
/* allow: the host user approves the workspace's current vectora.toml,
 * after seeing what it loosens and how it differs from the approved one
 * (rule 7). Through the daemon (policy_allow) or, embedded, on the
 * caller's own approval store. */
#include <getopt.h>
#include <stdio.h>

#include "approval.h"
#include "cli.h"
#include "client.h"

static int print_allow(json_t *o, bool as_json) {
        if (as_json) {
                json_dumpf(o, stdout, JSON_INDENT(2));
                printf("\n");
                return 0;
        }
        const char *root = json_string_value(json_object_get(o, "approved"));
        size_t i;
        json_t *v;
        if (!json_is_true(json_object_get(o, "changed"))) {
                printf("nothing to approve: the approved policy of %s is already its vectora.toml\n", root);
                return 0;
        }
        json_t *loose = json_object_get(o, "loosens");
        if (json_array_size(loose) > 0) {
                printf("this approval loosens the sandbox of %s:\n", root);
                json_array_foreach(loose, i, v) printf("  %s\n", json_string_value(v));
        }
        json_t *diff = json_object_get(o, "difference");
        if (json_array_size(diff) > 0) {
                printf("difference from the approved vectora.toml (- approved, + now):\n");
                json_array_foreach(diff, i, v) printf("  %s\n", json_string_value(v));
        }
        printf("approved: %s now runs %s\n", root,
               json_is_true(json_object_get(o, "approved_sandboxed")) ? "under its vectora.toml as it is"
                                                                      : "UNSANDBOXED (its vectora.toml has no sandbox)");
        return 0;
}

int verb_allow(int argc, char **argv) {
        static const struct option opts[] = {
                { "workspace", required_argument, NULL, 'w' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *ws = ".";
        bool as_json = false;
        int c;
        while ((c = getopt_long(argc, argv, "w:h", opts, NULL)) >= 0)
                switch (c) {
                case 'w': ws = optarg; break;
                case 'j': as_json = true; break;
                case 'h':
                        printf("usage: vectora-sandbox allow [-w DIR] [--json]\n"
                               "approves the current vectora.toml of the workspace of DIR, after printing\n"
                               "what it loosens and how it differs from the approved one\n");
                        return 0;
                default: return EXIT_CONFIG;
                }
        if (optind < argc)
                return cli_fail(EXIT_CONFIG, "allow: unexpected argument '%s'", argv[optind]);

        json_t *o = NULL;
        int r;
        if (cli_socket()) {
                if ((r = client_request(cli_socket(), "policy_allow", ws, &o)))
                        return r;
                json_t *e = json_object_get(o, "error");
                r = e ? cli_fail(EXIT_REFUSED, "allow: %s", json_string_value(json_object_get(e, "message")))
                      : print_allow(o, as_json);
                json_decref(o);
                return r;
        }
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *store = NULL;
        VsAllowResult a = {};
        if (approval_store_dir(NULL, &store, &err) < 0 || approval_allow(store, ws, &a, &err) < 0)
                return cli_fail(EXIT_REFUSED, "allow: %s", vs_error_message(err));
        o = approval_allow_to_json(&a);
        approval_allow_result_done(&a);
        if (!o)
                return cli_fail(EXIT_REFUSED, "out of memory");
        r = print_allow(o, as_json);
        json_decref(o);
        return r;
}
