/* SPDX-License-Identifier: MIT */
/* The audit log: one JSON line per call, appended with O_APPEND so lines
 * from one write() never interleave; reopened on SIGHUP for rotation. A
 * record is whole or absent: a short or failed write (a full disk) is cut
 * back to the last complete line, counted as lost, and reported until a
 * record is written again (audit_failure()). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "audit.h"
#include "json-ascii.h"
#include "time-util.h"

static char *audit_path;
static int audit_fd = -EBADF;
static uint64_t audit_lost;
static int audit_errno; /* of the last write that failed; 0 once one succeeds again */
static void (*audit_report)(const char *message);

void audit_set_reporter(void (*report)(const char *message)) {
        audit_report = report;
}

_printf_(1, 2) static void report(const char *fmt, ...) {
        if (!audit_report)
                return;
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        audit_report(msg);
}

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

int audit_reopen(VsError **err) {
        if (!audit_path)
                return 0;
        _cleanup_free_ char *p = strdup(audit_path);
        if (!p)
                return vs_error_set(err, -ENOMEM, "out of memory");
        return audit_open(p, err);
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
        struct timespec ts = now_wall();
        char when[25];
        format_time(&ts, when);
        strbuf_clear(&line);
        if (format_record(a, when, &line) < 0) {
                report("audit: out of memory; a record for %s was lost", a->tool);
                audit_lost++;
                audit_errno = ENOMEM;
                return;
        }
        /* One write: O_APPEND keeps lines whole. A torn record is cut back
         * to where it began: O_APPEND leaves this descriptor's offset just
         * past the bytes written (only this thread writes through it), so
         * that end is found only when a write falls short, with no lseek
         * per record. */
        ssize_t n = write(audit_fd, line.data, line.len);
        if (n != (ssize_t)line.len) {
                int e = n < 0 ? errno : ENOSPC;
                off_t cur = n > 0 ? lseek(audit_fd, 0, SEEK_CUR) : -1;
                if (n > 0 && cur >= n && ftruncate(audit_fd, cur - n) < 0)
                        report("audit: cutting a torn record back failed: %s", strerror(errno));
                audit_lost++;
                if (audit_errno != e)
                        report("audit: a record for %s could not be written (%s); %llu lost so far", a->tool,
                                  strerror(e), (unsigned long long)audit_lost);
                audit_errno = e;
        } else if (audit_errno) {
                report("audit: records are written again (%llu lost)", (unsigned long long)audit_lost);
                audit_errno = 0;
        }
        /* A huge record (a long argv) does not keep its buffer. */
        if (line.cap > 64 * 1024)
                strbuf_done(&line);
}

int audit_failure(uint64_t *ret_lost) {
        if (ret_lost)
                *ret_lost = audit_lost;
        return audit_fd >= 0 ? audit_errno : 0;
}

void audit_result(const char *workspace, const char *tool, json_t *target, json_t *result, uint64_t duration_ms) {
        if (audit_fd < 0)
                return;
        json_t *err = json_object_get(result, "error");
        const char *code = json_string_value(json_object_get(err, "code"));
        json_t *host_run = json_object_get(result, "host_run_files");
        AuditRecord a = {
                .uid = getuid(),
                .pid = getpid(),
                .workspace = workspace,
                .tool = tool,
                .target = target,
                .sandboxed = json_is_true(json_object_get(result, "sandboxed")),
                .generation = (uint64_t)json_integer_value(json_object_get(json_object_get(result, "sandbox"), "generation")),
                .outcome = api_error_outcome(code ? api_error_from_name(code) : API_OK),
                .code = code,
                .reason = json_string_value(json_object_get(err, "message")),
                .duration_ms = duration_ms,
                .host_run = json_array_size(host_run) ? host_run : NULL,
        };
        audit_write(&a);
}
