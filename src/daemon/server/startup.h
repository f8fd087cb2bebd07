/* SPDX-License-Identifier: MIT */
#pragma once

/* Start-up and exit (startup.c): logging style, detaching, readiness. */

#include "daemon.h"

/* Timestamps on each line, or syslog priorities when stderr is journald's. */
void startup_log_style(const DaemonOptions *o);
/* Detached without --log-file: o->log_path in the runtime directory. */
int startup_default_log(DaemonOptions *o, VsError **err);
/* The socket's directory must exist and be writable: say so plainly. */
int startup_check_socket_dir(const char *socket_path, VsError **err);
/* Forks; the parent waits for startup_ready()/startup_failed() and exits
 * with the outcome. The child gets its own session, /dev/null as stdin and
 * stdout, log_fd as stderr, and *ret_notify to report through. Call it
 * before any thread exists (before the loop): the child goes on as the
 * daemon in what fork() copied. */
int startup_detach(int log_fd, int *ret_notify);
/* Listening: the pidfile, systemd's READY=1, the launching shell released. */
int startup_ready(const DaemonOptions *o, int *notify, VsError **err);
void startup_failed(int *notify, const char *why);
/* Exiting: systemd's STOPPING=1, the pidfile removed. */
void startup_stopping(const DaemonOptions *o);
