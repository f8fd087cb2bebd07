/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

static const char *log_ident = "vectora";
static int log_fd = STDERR_FILENO;
static LogLevel log_level = LOG_LVL_INFO;

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void log_setup(const char *ident, int fd) {
        log_ident = ident;
        log_fd = fd;
}

void log_set_level(LogLevel l) {
        log_level = l;
}

LogLevel log_get_level(void) {
        return log_level;
}

int log_level_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int)i;
        return -EINVAL;
}

void log_msg(LogLevel l, const char *fmt, ...) {
        if (l > log_level)
                return;
        int saved = errno;
        char msg[4096];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        char line[4400];
        int n = snprintf(line, sizeof line, "%s: %s: %s\n", log_ident, level_names[l], msg);
        if (n > (int)sizeof line - 1)
                n = (int)sizeof line - 1;
        if (n > 0 && write(log_fd, line, (size_t)n) < 0) {
                /* nowhere left to report a failed log write */
        }
        errno = saved;
}
