/* SPDX-License-Identifier: MIT */
#pragma once

/* The audit log (audit.c): one JSON line per call. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "error.h"

int audit_open(const char *path, VsError **err);
void audit_reopen(void);
typedef struct AuditRecord {
        uid_t uid;
        pid_t pid;
        const char *workspace;
        const char *tool;
        json_t *target; /* borrowed */
        bool sandboxed;
        uint64_t generation;
        const char *outcome; /* ok | error | denied | refused */
        const char *code;
        const char *reason;
        uint64_t duration_ms;
        json_t *host_run; /* borrowed: files the host runs later written while the call ran (may be NULL) */
} AuditRecord;
void audit_write(const AuditRecord *a);
void audit_close(void);
/* The errno of the last record that could not be written (0 while records
 * are written); *ret_lost (may be NULL): records lost since the start. */
int audit_failure(uint64_t *ret_lost);
