/* SPDX-License-Identifier: MIT */
#pragma once

/* The audit log (audit.c): one JSON line per call, in every mode (the
 * daemon's --audit-log, the CLI's and the MCP server's --audit-log when
 * they serve a call themselves). One log per process. Library code: it
 * does not log; a program that wants to hear of lost records and of their
 * recovery sets a reporter. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "error.h"

int audit_open(const char *path, VsError **err);
/* Opens the same path again (after rotation); 0 when none is open. */
int audit_reopen(VsError **err);
/* Told (borrowed message) when a record is lost and when records are
 * written again after a loss. NULL: nobody is told. */
void audit_set_reporter(void (*report)(const char *message));
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

/* The record of a call this process served itself (the CLI's and the MCP
 * server's embedded calls), read from its result envelope (api-result.h):
 * sandboxed, generation, the error's code and message, host_run_files.
 * The caller's uid and pid. target: borrowed (may be NULL). */
void audit_result(const char *workspace, const char *tool, json_t *target, json_t *result, uint64_t duration_ms);
