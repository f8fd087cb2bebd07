/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER until the daemon API lands. */
#include "cli.h"
#include "client.h"

int client_exec(const char *socket, const char *ws, char **argv, const char *command, const char *cwd, char **env,
                uint64_t timeout_s) {
        return cli_fail(EXIT_REFUSED, "the daemon client is not built yet; unset VECTORA_SANDBOX_SOCKET");
}
int client_read(const char *socket, const char *ws, const char *path, uint64_t offset, uint64_t limit) {
        return client_exec(socket, ws, NULL, NULL, NULL, NULL, 0);
}
int client_write(const char *socket, const char *ws, const char *path, const char *data, size_t len) {
        return client_exec(socket, ws, NULL, NULL, NULL, NULL, 0);
}
int client_edit(const char *socket, const char *ws, const char *path, const char *old_text, const char *new_text,
                bool all) {
        return client_exec(socket, ws, NULL, NULL, NULL, NULL, 0);
}
int client_shell(const char *socket, const char *ws) {
        return client_exec(socket, ws, NULL, NULL, NULL, NULL, 0);
}
int client_status(const char *socket, bool json) {
        return client_exec(socket, NULL, NULL, NULL, NULL, NULL, 0);
}
