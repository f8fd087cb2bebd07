/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "cli.h"
#include "client.h"

int verb_shell(int argc, char **argv) {
        const char *ws = ".";
        for (int i = 1; i < argc; i++) {
                if ((streq(argv[i], "-w") || streq(argv[i], "--workspace")) && i + 1 < argc)
                        ws = argv[++i];
                else if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
                        printf("usage: vectora-sandbox shell [-w DIR]\n");
                        return 0;
                } else
                        return cli_fail(EXIT_REFUSED, "shell: unexpected argument '%s'", argv[i]);
        }
        if (!cli_socket())
                return cli_fail(EXIT_REFUSED,
                                "shell: interactive terminals are served by the daemon; start vectora-sandboxd and pass --socket (or set VECTORA_SANDBOX_SOCKET)");
        return client_shell(cli_socket(), ws);
}
