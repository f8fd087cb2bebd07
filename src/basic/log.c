/* SPDX-License-Identifier: MIT */
#include "log.h"
#include "time-util.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

static const char *log_ident = "vectora";
static int log_fd = STDERR_FILENO;
static LogLevel log_level = LOG_LVL_INFO;
static LogStyle log_style = LOG_STYLE_PLAIN;

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void log_setup(const char *ident, int fd) {
        log_ident = ident;
        log_fd = fd;
}

void log_set_style(LogStyle s) {
        log_style = s;
}

void log_set_level(LogLevel l) {
        log_level = l;
}

LogLevel log_get_level(void) {
        return log_level;
}

int log_get_fd(void) {
        return log_fd;
}

LogStyle log_get_style(void) {
        return log_style;
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
        /* syslog priorities: err, warning, info, debug. */
        static const int prio[] = { 3, 4, 6, 7 };
        char head[64] = "";
        if (log_style == LOG_STYLE_JOURNAL)
                snprintf(head, sizeof head, "<%d>", prio[l]);
        else if (log_style == LOG_STYLE_TIME) {
                struct timespec ts = now_wall();
                struct tm tm;
                gmtime_r(&ts.tv_sec, &tm);
                size_t k = strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &tm);
                snprintf(head + k, sizeof head - k, ".%03ldZ ", ts.tv_nsec / 1000000);
        }
        char line[4400];
        int n = snprintf(line, sizeof line, "%s%s: %s: %s\n", head, log_ident, level_names[l], msg);
        if (n > (int)sizeof line - 1)
                n = (int)sizeof line - 1;
        if (n > 0 && write(log_fd, line, (size_t)n) < 0) {
                /* nowhere left to report a failed log write */
        }
        errno = saved;
}
