/* SPDX-License-Identifier: MIT */
#pragma once

/* The CLI's side of a vectora-sandboxd connection: connect, one framed
 * message out, the next reply in; and `shell`, which attaches a PTY. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jsonl.h"

/* Connects to socket. On failure *ret_why says what went wrong and what to
 * do (-ENOMEM: nothing). */
int client_connect(const char *socket, int *ret_fd, char **ret_why);
int client_send(int fd, json_t *obj, const void *raw, size_t raw_len);
/* The next message that is not a PTY event. */
int client_recv(int fd, JsonlReader *rd, JsonlMsg *ret);
/* One call: req gets "id": id, goes out with its raw payload, and the
 * reply with that id comes back (events and other replies skipped).
 * -errno: sending (nothing was read by the daemon, or part of it) or
 * receiving (the call was sent: it may have run) failed; *ret_sent says
 * which. */
int client_call(int fd, JsonlReader *rd, uint64_t id, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret,
                bool *ret_sent);
/* The interactive terminal (terminal_open): returns the exit status. */
int client_shell(const char *socket, const char *workspace, bool require_sandbox);
