/* SPDX-License-Identifier: MIT */
/* The audit log: one JSON line per call, appended with O_APPEND so lines
 * from one write() never interleave; reopened on SIGHUP for rotation. */
#include <fcntl.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "json-ascii.h"
#include "log.h"

static char *audit_path;
static int audit_fd = -EBADF;

int audit_open(const char *path, VsError **err) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return vs_error_set(err, -errno, "opening the audit log %s: %m", path);
        char *p = strdup(path);
        if (!p) {
                safe_close(fd);
                return vs_error_set(err, -ENOMEM, "out of memory");
        }
        safe_close(audit_fd);
        free(audit_path);
        audit_fd = fd;
        audit_path = p;
        return 0;
}

void audit_reopen(void) {
        if (!audit_path)
                return;
        _cleanup_free_ char *p = strdup(audit_path);
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (p && audit_open(p, &err) < 0)
                log_error("%s", vs_error_message(err));
}

void audit_close(void) {
        audit_fd = safe_close(audit_fd);
        free(audit_path);
        audit_path = NULL;
}

/* "2025-01-01T12:00:00.123Z": 24 bytes. */
static void format_time(const struct timespec *ts, char out[static 25]) {
        struct tm tm;
        gmtime_r(&ts->tv_sec, &tm);
        unsigned v[7] = { (unsigned)(tm.tm_year + 1900), (unsigned)tm.tm_mon + 1, (unsigned)tm.tm_mday, (unsigned)tm.tm_hour,
                          (unsigned)tm.tm_min,           (unsigned)tm.tm_sec,   (unsigned)(ts->tv_nsec / 1000000) };
        static const char sep[7] = { '-', '-', 'T', ':', ':', '.', 'Z' };
        static const int width[7] = { 4, 2, 2, 2, 2, 2, 3 };
        char *q = out;
        for (int i = 0; i < 7; i++) {
                for (int k = width[i] - 1; k >= 0; k--, v[i] /= 10)
                        q[k] = (char)('0' + v[i] % 10);
                q += width[i];
                *q++ = sep[i];
        }
        *q = 0;
}

/* The record as one line, in the order docs/protocol.md shows ("Audit
 * log"): the same bytes as jansson's compact, ASCII-only dump of it, built
 * without a json_t per call. */
static int format_record(const AuditRecord *a, const char *when, StrBuf *b) {
        int r = 0;
#define KEY(k) (r = r < 0 ? r : strbuf_append(b, "\"" k "\":", sizeof(k) + 2))
#define STR(s) (r = r < 0 ? r : json_ascii_append_cstr(b, (s)))
#define INT(v) (r = r < 0 ? r : json_ascii_append_int(b, (int64_t)(v)))
#define SEP() (r = r < 0 ? r : strbuf_appendc(b, ','))
        r = strbuf_appendc(b, '{');
        KEY("time"), STR(when), SEP();
        KEY("uid"), INT((int)a->uid), SEP();
        KEY("pid"), INT((int)a->pid), SEP();
        KEY("workspace"), STR(a->workspace), SEP();
        KEY("tool"), STR(a->tool), SEP();
        KEY("target");
        r = r < 0 ? r : a->target ? json_ascii_append(b, a->target) : strbuf_append(b, "null", 4);
        SEP();
        KEY("sandboxed");
        r = r < 0 ? r : a->sandboxed ? strbuf_append(b, "true", 4) : strbuf_append(b, "false", 5);
        SEP();
        KEY("generation"), INT(a->generation), SEP();
        KEY("outcome"), STR(a->outcome), SEP();
        KEY("error_code"), STR(a->code), SEP();
        KEY("denial_reason"), STR(a->reason), SEP();
        KEY("duration_ms"), INT(a->duration_ms);
        if (a->host_run) {
                SEP();
                KEY("host_run_files");
                r = r < 0 ? r : json_ascii_append(b, a->host_run);
        }
#undef KEY
#undef STR
#undef INT
#undef SEP
        return r < 0 ? r : strbuf_append(b, "}\n", 2);
}

void audit_write(const AuditRecord *a) {
        /* One buffer kept for the daemon's life: a line costs no allocation. */
        static StrBuf line = STRBUF_INIT;
        if (audit_fd < 0)
                return;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        char when[25];
        format_time(&ts, when);
        strbuf_clear(&line);
        if (format_record(a, when, &line) < 0) {
                log_error("audit: out of memory; a record for %s was lost", a->tool);
                return;
        }
        /* One write: O_APPEND keeps lines whole. */
        if (write(audit_fd, line.data, line.len) < 0)
                log_error("audit: write failed: %m");
        /* A huge record (a long argv) does not keep its buffer. */
        if (line.cap > 64 * 1024)
                strbuf_done(&line);
}
