/* SPDX-License-Identifier: MIT */
/* The audit log: one JSON line per call, appended with O_APPEND so lines
 * from one write() never interleave; reopened on SIGHUP for rotation. */
#include <fcntl.h>
#include <string.h>
#include <time.h>

#include "audit.h"
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

void audit_write(const AuditRecord *a) {
        if (audit_fd < 0)
                return;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char when[64];
        size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1000000);
        json_t *o = json_pack("{s:s,s:i,s:i,s:s?,s:s,s:O?,s:b,s:I,s:s,s:s?,s:s?,s:I}", "time", when, "uid", (int)a->uid,
                              "pid", (int)a->pid, "workspace", a->workspace, "tool", a->tool, "target", a->target,
                              "sandboxed", a->sandboxed, "generation", (json_int_t)a->generation, "outcome", a->outcome,
                              "error_code", a->code, "denial_reason", a->reason, "duration_ms",
                              (json_int_t)a->duration_ms);
        if (!o) {
                log_error("audit: out of memory; a record for %s was lost", a->tool);
                return;
        }
        if (a->host_run)
                json_object_set(o, "host_run_files", a->host_run);
        char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(o);
        if (!line)
                return;
        size_t len = strlen(line);
        line[len] = '\n';
        /* One write: O_APPEND keeps lines whole. */
        if (write(audit_fd, line, len + 1) < 0)
                log_error("audit: write failed: %m");
        free(line);
}
