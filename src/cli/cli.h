/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora-sandbox: one file per verb, each thin over src/core. */

#include "error.h"

#define EXIT_REFUSED 125 /* the sandbox layer refused or failed; nothing ran */
#define EXIT_CONFIG 2    /* check: the config is refused */

typedef struct CliVerb {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
} CliVerb;

int verb_check(int argc, char **argv);
int verb_plan(int argc, char **argv);
int verb_exec(int argc, char **argv);
int verb_run(int argc, char **argv);
int verb_read(int argc, char **argv);
int verb_write(int argc, char **argv);
int verb_edit(int argc, char **argv);
int verb_shell(int argc, char **argv);
int verb_status(int argc, char **argv);
int verb_mcp(int argc, char **argv);
int verb_allow(int argc, char **argv);

/* Prints "vectora-sandbox: MSG" to stderr; returns code. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The daemon socket to use if one is configured and reachable (--socket or
 * VECTORA_SANDBOX_SOCKET), else NULL (embedded mode). */
const char *cli_socket(void);
void cli_set_socket(const char *s);
