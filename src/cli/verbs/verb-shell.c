/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "client.h"

int verb_shell(const CliArgs *a) {
        if (a->json)
                return cli_fail_code(a, EXIT_USAGE, "usage", "shell: an interactive terminal has no JSON form");
        const char *sock = cli_socket(a);
        if (!sock)
                return cli_fail(EXIT_REFUSED,
                                "shell: interactive terminals are served by the daemon, and none listens at %s; start vectora-sandboxd (or pass --socket)",
                                cli_default_socket());
        _cleanup_free_ char *ws = cli_workspace_abs(a);
        if (!ws)
                return cli_fail(EXIT_REFUSED, "shell: workspace %s: %m", a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".");
        return client_shell(sock, ws, a->require_sandbox);
}
