/* SPDX-License-Identifier: MIT */
#pragma once

/* The CLI's side of a vectora-sandboxd connection: connect, one framed
 * message out, the next reply in; and `shell`, which attaches a PTY. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "jsonl.h"

/* Connects to socket. On failure *ret_why says what went wrong and what to
 * do (-ENOMEM: nothing). */
int client_connect(const char *socket, int *ret_fd, char **ret_why);
int client_send(int fd, json_t *obj, const void *raw, size_t raw_len);
/* The next message that is not a PTY event. */
int client_recv(int fd, JsonlReader *rd, JsonlMsg *ret);
/* The interactive terminal (terminal_open): returns the exit status. */
int client_shell(const char *socket, const char *workspace, bool require_sandbox);
