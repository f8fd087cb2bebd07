/* SPDX-License-Identifier: MIT */
#pragma once

/* Where the programs find their parts at run time. */

#include "error.h"

#include <stdbool.h>

/* The static worker: $VECTORA_WORKER (how the test suite and `meson
 * devenv` name the build tree's), else the installed libexec copy. */
int vs_worker_path(char **ret, VsError **err);
/* The worker to ship into a container image or onto a remote host: it must
 * be statically linked. $VECTORA_WORKER_STATIC, else a
 * "vectora-worker-static" beside worker (what a sanitizer build makes), else
 * worker itself (static in a normal build). */
int vs_static_worker_path(const char *worker, char **ret);
/* A private runtime directory owned by the caller, 0755, never a symlink:
 * $XDG_RUNTIME_DIR/vectora-sandbox, else /tmp/vectora-sandbox-UID. */
int vs_runtime_dir(char **ret, VsError **err);
/* The same checks for a directory named (vectora-sandboxd --runtime-dir);
 * want NULL: the default above. */
int vs_runtime_dir_named(const char *want, char **ret, VsError **err);
/* The daemon's default socket, the one path the daemon listens on and the
 * CLI looks for: $VECTORA_SANDBOX_SOCKET, else /run/vectora-sandbox.sock for
 * root, $XDG_RUNTIME_DIR/vectora-sandbox.sock for another user (when that is a
 * directory of theirs; without the variable, /run/user/UID when that is
 * theirs), else /tmp/vectora-sandbox-UID/sock (the runtime
 * directory's). Computed only: nothing is created. */
int vs_default_socket(char **ret);
/* Registers this program's runtime directory and the daemon socket's
 * directory (socket_path, or the default one) with forbidden_reserve(), and
 * the socket itself with forbidden_reserve_socket(), so
 * that no policy may list them: a jail that reaches the socket could ask
 * the daemon for unsandboxed commands. Best effort; called at start-up by
 * the daemon and the CLI. */
void vs_reserve_own_dirs(const char *socket_path);
