/* SPDX-License-Identifier: MIT */
#pragma once

/* Files the host runs later, written by an embedded-mode call (the CLI's
 * --no-daemon, the MCP server without a daemon): the daemon's watch lists
 * them in host_run_files (src/daemon/watch/watch.c); embedded mode has no watch
 * between calls, so it looks before and after. A scan notes the identity
 * and change time of every path below the writable roots that the default
 * protect list names (protect-defaults.c), the workspace's protect globs
 * match, or that is a .git below the root, by the same walk as the jail's
 * (a matched directory is one entry: its change time moves when a file is
 * made or renamed in it). */

#include <jansson.h>

#include "config.h"

typedef struct VsHostRunScan VsHostRunScan;

/* NULL in *ret for an unsandboxed policy (nothing to report). */
int host_run_scan(const VsPolicy *p, VsHostRunScan **ret);
void host_run_scan_free(VsHostRunScan *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsHostRunScan *, host_run_scan_free);

/* The absolute paths new or changed in after since before (either may be
 * NULL: nothing), sorted; NULL on -ENOMEM. */
json_t *host_run_scan_diff(const VsHostRunScan *before, const VsHostRunScan *after);

/* Adds the paths of list (taken) to result's "host_run_files", after what
 * it holds already (a repository the call's sweep put aside), once each. */
int host_run_files_add(json_t *result, json_t *list);

/* What a call wrote of the files the host runs later, as the daemon's
 * watch reports it: the paths new or changed since *scan (the scan the
 * last call left; NULL: unsandboxed, nothing to report) added to result's
 * "host_run_files" ([] when none), and *scan replaced by the scan now. */
int host_run_report(const VsPolicy *p, VsHostRunScan **scan, json_t *result);
