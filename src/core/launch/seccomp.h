/* SPDX-License-Identifier: MIT */
#pragma once

/* The jail's seccomp-BPF denylist, compiled on the host with libseccomp
 * loaded at run time (dlopen), so that its absence degrades the sandbox
 * instead of breaking it. The worker receives the compiled program and
 * loads it with seccomp_load_bpf() (shared/enforce/seccomp-load.h). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Environment variable naming the libseccomp shared object to load instead
 * of "libseccomp.so.2" (tests point it at a missing file to force the
 * degraded path). */
#define VS_LIBSECCOMP_ENV "VECTORA_LIBSECCOMP"

typedef struct VsSeccompOptions {
        bool network;  /* false: also deny NETLINK_ROUTE and inet sockets */
        bool lockdown; /* deny the extra lockdown entries */
        /* The jail's own ids, as its processes see them (inside their user
         * namespace): chown to these or to -1 is allowed, since it grants
         * nothing a file the jail creates does not already have. false:
         * every chown is refused. */
        bool own_ids;
        uint32_t uid, gid;
        /* Only what keeps a jail from leaving a setuid or setgid file on
         * the host (the mode rules, and openat2 and io_uring, whose modes
         * no filter reads): the root monitor's guard under every jail it
         * starts, whatever filter the server has the worker load. */
        bool setid_only;
} VsSeccompOptions;

/* One row of the denylist, for documentation and tests. */
typedef struct VsSeccompRule {
        const char *syscall;
        int errno_value;      /* EPERM, or ENOSYS for clone3, or 0 for umask (answered 0, nothing done) */
        const char *threat;   /* one line: why it is denied */
        bool lockdown_only;
        bool conditional;     /* argument-filtered (ioctl, socket, chown) */
} VsSeccompRule;

const VsSeccompRule *seccomp_rules(size_t *ret_n);

/* Compiles the filter for the native architecture (other architectures are
 * killed). On success *ret_bpf holds a malloc'd array of struct sock_filter,
 * *ret_len its size in bytes. Returns -ELIBACC (and *err saying what to
 * install) when libseccomp cannot be loaded, other negative errnos on
 * failure. */
int seccomp_compile(const VsSeccompOptions *o, void **ret_bpf, size_t *ret_len, VsError **err);

/* One entry of an allowlist: the syscall, allowed when arg < 0 or when
 * (argument arg & mask) == value; errno_value not 0: answered with that
 * errno instead (clone3's ENOSYS, so that libc falls back to clone). */
typedef struct VsSeccompAllow {
        const char *syscall;
        int arg;
        uint64_t mask, value;
        int errno_value;
} VsSeccompAllow;

/* Compiles a filter that refuses (EPERM) every syscall but those listed;
 * names this architecture lacks are skipped. Same results as
 * seccomp_compile(). */
int seccomp_compile_allowlist(const VsSeccompAllow *allow, size_t n, void **ret_bpf, size_t *ret_len,
                              VsError **err);

/* True if libseccomp can be loaded (cached). */
bool seccomp_available(void);

