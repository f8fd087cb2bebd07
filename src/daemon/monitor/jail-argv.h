/* SPDX-License-Identifier: MIT */
#pragma once

/* The root monitor's check of a jail's argv (docs/privsep.md): the server
 * renders a workspace's plan as bubblewrap's command line
 * (backend-local.c) and sends it in a sealed memfd; the monitor starts it
 * as the workspace's owner only if it is such a command line: the bwrap
 * the monitor itself found, every namespace and setting that makes the
 * jail a jail, only options the plans use (none that takes a descriptor,
 * adds a capability or brings a namespace in), nothing writable at or
 * below a system directory or the daemon's own (but the owner's kept
 * home), no device but a GPU's, and the worker the daemon was started
 * with as the one program it runs; no link of its own that leads up or
 * into bwrap's /oldroot or /newroot, nor a path through one. It reads
 * paths as text: bwrap, running as the owner, follows the links in the
 * owner's own files, so it holds the jail's settings, not which of the
 * owner's files a path reaches; which of them the policy lists is the
 * server's reading of vectora.toml (the limits, in docs/privsep.md).
 * Pure: no OS call; the fuzz target is tests/fuzz/fuzz-jail-argv.c. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct JailArgvRules {
        const char *bwrap;  /* argv[0], exactly: the monitor's own resolution */
        const char *worker; /* the worker's host path, bound read-only at VS_JAIL_WORKER_PATH */
        const char *homes;  /* the state directory's homes/: a directory right below it may be bound writable, or NULL */
        uid_t uid;          /* --uid and --gid: the jail's ids the request named */
        gid_t gid;
} JailArgvRules;

/* 0 when argv (NULL-terminated) is a jail the rules allow; else -EPERM
 * with why (what was wrong and where) written into buf. */
int jail_argv_check(char *const *argv, const JailArgvRules *rules, char *why, size_t n);
