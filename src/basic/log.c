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
        /* Messages carry names a jail made (a file's, a directory's): a
         * newline or an escape in one would forge a line or drive the
         * terminal that shows the log. One line per message, control
         * bytes as \xNN. */
        char safe[sizeof msg * 4];
        size_t o = 0;
        for (const unsigned char *c = (const unsigned char *)msg; *c && o + 5 < sizeof safe; c++)
                if (*c < 0x20 || *c == 0x7f)
                        o += (size_t)snprintf(safe + o, sizeof safe - o, "\\x%02x", *c);
                else
                        safe[o++] = (char)*c;
        safe[o] = 0;
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
        int n = snprintf(line, sizeof line, "%s%s: %s: %s\n", head, log_ident, level_names[l], safe);
        if (n > (int)sizeof line - 1) {
                n = (int)sizeof line - 1;
                line[n - 1] = '\n'; /* cut, but still one line */
        }
        if (n > 0 && write(log_fd, line, (size_t)n) < 0) {
                /* nowhere left to report a failed log write */
        }
        errno = saved;
}
