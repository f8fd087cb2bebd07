/* SPDX-License-Identifier: MIT */
#pragma once

/* A parse of bytes someone else wrote, done apart from the root monitor
 * (docs/privsep.md): the monitor reads a file with its owner's rights,
 * then hands the bytes to a child that can do nothing but parse them and
 * answer. The child:
 *
 * - runs as PARSE_APART_UID, its group the same, no supplementary group,
 *   so no capability: no account's uid, so neither the file's owner nor
 *   any other user can stop, signal or read it (not nobody's, which every
 *   daemon shares; not the idmap identity's, a root-owned workspace's
 *   jails');
 * - holds no descriptor but its answer's pipe, has no_new_privs, is not
 *   dumpable, and dies with its parent;
 * - runs fn under a seccomp filter of its own: read, write, exit,
 *   sigreturn, and memory got and given back (brk, mmap, mremap, munmap,
 *   madvise, mprotect, never executable); any other call kills it (the
 *   caller then gets -EBADMSG, fails closed). So fn may allocate but
 *   makes no other system call: git-config.h's parser is such.
 *
 * A parse bug so reaches a process that can read nothing, write nothing
 * but its answer, and start nothing. */

#include <stddef.h>
#include <sys/types.h>

/* A uid/gid no account should have (below VS_IDMAP_UID). */
#define PARSE_APART_UID 2147483645
#define PARSE_APART_GID 2147483645

/* Runs fn(arg, out) in such a child, which fills out (out_len bytes, in
 * its own copy of this process's memory) and sends it back: 0 with out
 * the child's, -EBADMSG when it died or answered short (a forbidden
 * system call included), -ETIMEDOUT past timeout_ms (the child killed),
 * or a negative errno (no child: the ids could not be taken when this
 * process is not root; -EOPNOTSUPP on an architecture the filter was
 * not written for). arg and what it points to are the child's copy:
 * read them as they were at the call. */
int parse_apart(void (*fn)(const void *arg, void *out), const void *arg, void *out, size_t out_len,
                int timeout_ms);
