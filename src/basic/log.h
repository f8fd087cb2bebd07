/* SPDX-License-Identifier: MIT */
#pragma once

/* Program-level logging. Library layers (basic, shared, core) do not log;
 * they return errors. Programs log once, where they decide. */

#include "macro.h"

typedef enum { LOG_LVL_ERROR, LOG_LVL_WARNING, LOG_LVL_INFO, LOG_LVL_DEBUG } LogLevel;

/* How each line starts: bare ("IDENT: LEVEL: msg"), with the UTC time first
 * (a log file, a terminal), or with a syslog priority "<N>" that journald
 * reads (stderr connected to the journal, which adds the time itself). */
typedef enum { LOG_STYLE_PLAIN, LOG_STYLE_TIME, LOG_STYLE_JOURNAL } LogStyle;

void log_setup(const char *ident, int fd);
void log_set_style(LogStyle s);
void log_set_level(LogLevel l);
LogLevel log_get_level(void);
/* Where lines go and how they start: a helper program the caller starts
 * logs the same way into the same place. */
int log_get_fd(void);
LogStyle log_get_style(void);
/* "error" "warning" "info" "debug" -> level; -EINVAL otherwise. */
int log_level_from_string(const char *s);
void log_msg(LogLevel l, const char *fmt, ...) _printf_(2, 3);

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LVL_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
