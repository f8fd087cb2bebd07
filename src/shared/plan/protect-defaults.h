/* SPDX-License-Identifier: MIT */
#pragma once

/* The default protect list (VS_PROTECT_DEFAULT, config.h) as one table:
 * each glob with the reason it is there and what takes the place of a
 * missing one below a writable root, so that a jail cannot create it
 * (protect-absent.h). docs/config.md shows the same table. */

#include <stddef.h>

typedef enum VsAbsent {
        VS_ABSENT_REPORT, /* no placeholder: created in the jail, it is reported (host_run_files) and sealed at once */
        VS_ABSENT_DIR,    /* an empty directory: the tool reads it as absent */
        VS_ABSENT_FILE,   /* a file holding content: an empty, valid configuration for the tool */
} VsAbsent;

typedef struct VsProtectDefault {
        const char *glob;
        VsAbsent absent;
        const char *content; /* VS_ABSENT_FILE: what the file holds ("" for empty) */
        const char *reason;
} VsProtectDefault;

extern const VsProtectDefault VS_PROTECT_DEFAULTS[];
extern const size_t VS_N_PROTECT_DEFAULTS;

/* The default row whose glob names literal ("mise.toml", ".vscode"), or
 * NULL. */
const VsProtectDefault *protect_default_find(const char *literal);
