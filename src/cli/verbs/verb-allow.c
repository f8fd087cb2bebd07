/* SPDX-License-Identifier: MIT */
/* allow: the host user approves the workspace's current vectora.toml,
 * after seeing what it loosens and how it differs from the approved one
 * (rule 7). Through the daemon (policy_allow) or, embedded, on the
 * caller's own approval store. */
#include <stdio.h>

#include "approval.h"
#include "cli.h"
#include "link.h"

static void print_allow(json_t *o) {
        const char *root = json_string_value(json_object_get(o, "approved"));
        size_t i;
        json_t *v;
        if (!json_is_true(json_object_get(o, "changed"))) {
                printf("nothing to approve: the approved policy of %s is already its vectora.toml\n", root);
                return;
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
}

static int print_result(const CliArgs *a, json_t *o) {
        if (a->json)
                cli_print_json(o);
        else
                print_allow(o);
        return 0;
}

/* Embedded: the approval store of the caller (approval_store_dir). */
static int allow_embedded(const CliArgs *a) {
        _cleanup_free_ char *ws = cli_workspace_abs(a);
        if (!ws)
                return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_WORKSPACE_NOT_FOUND), "allow: workspace %s: %m",
                                     a->val[OPT_WORKSPACE] ?: ".");
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *store = NULL;
        VsAllowResult res = {};
        if (approval_store_dir(NULL, &store, &err) < 0 || approval_allow(store, ws, &res, &err) < 0)
                return cli_fail_code(a, EXIT_REFUSED, vs_error_kind(err) ?: api_error_name(API_ERROR_CONFIG_INVALID), "allow: %s",
                                     vs_error_message(err));
        json_t *o = approval_allow_to_json(&res);
        approval_allow_result_done(&res);
        if (!o || json_object_set_new(o, "ok", json_true()) < 0) {
                json_decref(o);
                return cli_fail(EXIT_REFUSED, "out of memory");
        }
        int r = print_result(a, o);
        json_decref(o);
        return r;
}

int verb_allow(const CliArgs *a) {
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        if (!cli_link_daemon(l))
                return allow_embedded(a);
        JsonlMsg m = JSONL_MSG_INIT;
        if (cli_link_call(l, json_pack("{s:s}", "tool", api_tool_name(API_TOOL_POLICY_ALLOW)), NULL, 0, &m) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        int r = json_is_true(json_object_get(m.obj, "ok")) ? print_result(a, m.obj) : cli_print_error(a, m.obj);
        jsonl_msg_done(&m);
        return r;
}
