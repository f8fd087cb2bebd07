/* SPDX-License-Identifier: MIT */
#pragma once

/* The CLI's daemon client: each verb as one daemon API call over the unix
 * socket (docs/protocol.md, "Daemon API"). Each returns the CLI exit status
 * (the command's own for exec; 125 when the sandbox refused; errors printed
 * as "vectora-sandbox: ..."). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* argv, or command (a shell command line) when argv is NULL. */
int client_exec(const char *socket, const char *ws, char **argv, const char *command, const char *cwd, char **env,
                uint64_t timeout_s);
int client_read(const char *socket, const char *ws, const char *path, uint64_t offset, uint64_t limit);
int client_write(const char *socket, const char *ws, const char *path, const char *data, size_t len);
int client_edit(const char *socket, const char *ws, const char *path, const char *old_text, const char *new_text,
                bool all);
int client_shell(const char *socket, const char *ws);
int client_status(const char *socket, bool json);
/* One request {"tool": tool, "workspace": ws (made absolute)}; *ret: the
 * reply object (a reference), or a CLI exit status after printing why. */
int client_request(const char *socket, const char *tool, const char *ws, json_t **ret);
