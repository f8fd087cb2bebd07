/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "cli.h"
#include "client.h"

int verb_status(int argc, char **argv) {
        bool json = false;
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--json"))
                        json = true;
                else if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
                        printf("usage: vectora-sandbox status [--json]\n");
                        return 0;
                } else
                        return cli_fail(EXIT_REFUSED, "status: unexpected argument '%s'", argv[i]);
        }
        if (!cli_socket())
                return cli_fail(EXIT_REFUSED,
                                "status: no daemon socket; start vectora-sandboxd and pass --socket (or set VECTORA_SANDBOX_SOCKET)");
        return client_status(cli_socket(), json);
}
