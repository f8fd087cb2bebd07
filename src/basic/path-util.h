/* SPDX-License-Identifier: MIT */
#pragma once

/* Lexical path helpers (no OS calls unless named so). */

#include "macro.h"

/* a + "/" + b, collapsing duplicate slashes at the seam. */
char *path_join(const char *a, const char *b);
/* Lexically normalizes an absolute path: collapses //, removes ".",
 * resolves ".." (never above "/"). Returns NULL on OOM or relative input. */
char *path_normalize(const char *p);
/* If path equals prefix or lies below it, returns the remainder ("" when
 * equal, never with a leading slash); else NULL. Both must be normalized. */
const char *path_startswith(const char *path, const char *prefix);
bool path_is_below_or_equal(const char *path, const char *prefix);
/* Whether path is at or below one of list (NULL-terminated, or NULL). */
bool path_below_any(const char *path, char *const *list);
/* Whether the innermost of the listed paths (rw, ro: normalized,
 * NULL-terminated or NULL) holding path is one of rw; at equal length ro
 * wins; none holds it: false. */
bool path_listed_writable(const char *path, char *const *rw, char *const *ro);
/* Whether a jail could have written at path: a writable listed path holds
 * it innermost (path_listed_writable) and no directory of sealed (what it
 * saw as mounts it could neither write below nor move) holds it. */
bool path_jail_could_write(const char *path, char *const *rw, char *const *ro, char *const *sealed);
/* Touches the process state: p made absolute against the current
 * directory and normalized lexically, its symlinks kept as written (a
 * workspace named through a link must be checked as written). NULL with
 * errno set when p does not exist or on OOM. */
char *path_absolute_os(const char *p);
/* Touches the file system: name if it holds a slash and is executable,
 * else the first executable name in path_env's absolute directories, then
 * /usr/bin, /bin, /usr/local/bin. NULL when none (or on OOM). */
char *path_find_executable_os(const char *name, const char *path_env);
