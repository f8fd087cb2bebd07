/* SPDX-License-Identifier: MIT */
#pragma once

/* Where a listed path may not lead, by prefix, not by exact name: an exact
 * match let `rw_paths = ["/etc/cron.d"]` or `["/usr/local/bin"]` through.
 *
 * rw_paths: nowhere at or below a system directory (/etc, /usr, /bin,
 * /sbin, /lib*, /boot, /proc, /sys, /dev, /run, /var/lib, /root), and not
 * "/", "/var" or "/home" themselves.
 * rw_paths and ro_paths: nowhere at or below what exposes the host's
 * secrets or the daemon (/proc, /sys, /dev, /run, /root, another user's
 * home, $XDG_RUNTIME_DIR, the daemon's socket and runtime directory, any
 * sandbox daemon's default socket or /tmp fallback directory), and never a
 * directory that contains one of those (or the caller's home, or the
 * daemon's socket directory, or /tmp as a whole).
 *
 * forbidden_lexical() and forbidden_resolved() are pure (the homes come
 * from forbidden_homes_of(), which reads passwd). Both return NULL when
 * the path is allowed, else a reason that completes "PATH is ...". */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* path absolute and normalized. The reason is written into buf. */
const char *forbidden_lexical(const char *path, bool rw, char *buf, size_t n);

/* The homes a listed path is checked against. Borrowed strings, except
 * what forbidden_homes_of() fills (owner_home, runtime_real, others). */
typedef struct VsHomes {
        const char *caller_home; /* $HOME of this process, or NULL: may not be contained */
        const char *runtime_dir; /* $XDG_RUNTIME_DIR as set, or NULL: neither at or below nor contained */
        char *owner_home;        /* the workspace owner's: may not be contained */
        char *runtime_real;      /* $XDG_RUNTIME_DIR canonicalized, or NULL: as runtime_dir */
        char **others;           /* other people's homes: neither at or below nor contained */
} VsHomes;

/* Pure: real is the resolved path. */
const char *forbidden_resolved(const char *real, bool rw, const VsHomes *homes, char *buf, size_t n);

/* Reads passwd: owner_home (the workspace owner's) and others (accounts
 * with uid >= 1000 but nobody, and any home in /home), canonicalized; and
 * runtime_real, $XDG_RUNTIME_DIR canonicalized (when it exists).
 * Release with forbidden_homes_done(). */
int forbidden_homes_of(uid_t owner, VsHomes *ret);
void forbidden_homes_done(VsHomes *h);

/* Registers a directory of the daemon's that no listed path may contain
 * (and, below_too, lie below): its runtime directory (below_too) and its
 * socket's directory. Process-wide, set at start-up before any policy is
 * resolved (vs_reserve_own_dirs()); copies dir. */
int forbidden_reserve(const char *dir, bool below_too);
/* Registers the daemon's socket itself (the path it listens on, or the
 * default one the CLI would reach): no listed path may be it or contain
 * it. Process-wide, as forbidden_reserve(); copies path. */
int forbidden_reserve_socket(const char *path);
