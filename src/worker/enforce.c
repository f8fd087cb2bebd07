/* SPDX-License-Identifier: MIT */
/* The one ordered hardening step of the worker (minijail/bubblewrap style).
 * It runs once, after init and before any request is served, and takes the
 * init policy read-only. */
#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"
#include "macro.h"
#include "seccomp-load.h"
#include "strv.h"
#include "worker.h"

char **enforce_capabilities(int *ret_landlock_abi) {
        char **l = NULL;
        int abi = landlock_abi_version();

        (void) strv_extend(&l, "no_new_privs");
        /* PR_GET_SECCOMP fails with EINVAL when the kernel lacks seccomp. */
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0)
                (void) strv_extend(&l, "seccomp");
        if (abi > 0)
                (void) strv_extend(&l, "landlock");
        *ret_landlock_abi = abi > 0 ? abi : 0;
        return l;
}

static bool required(const ProtocolInit *init, const char *layer) {
        return strv_contains(init->require, layer);
}

/* A layer could not be applied: fatal if required, else noted. */
static int layer_failed(const ProtocolInit *init, const char *layer, char ***degraded, VsError **err,
                        const char *reason) {
        if (required(init, layer))
                return vs_error_set_kind(err, -EPERM, "init_failed", "%s: %s (required)", layer, reason);
        if (strv_extendf(degraded, "%s: %s", layer, reason) < 0)
                return vs_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

/* keyctl is on the denylist unconditionally (seccomp.c); with an invalid
 * command it is harmless: EOPNOTSUPP (or ENOSYS without CONFIG_KEYS) when
 * allowed, EPERM only when the filter is live. */
static bool seccomp_self_check(void) {
        long r = syscall(SYS_keyctl, -1L, 0L, 0L, 0L, 0L);
        return r < 0 && errno == EPERM;
}

int enforce_policy(const ProtocolInit *init, ProtocolReady *ret, VsError **err) {
        _cleanup_strv_free_ char **degraded = NULL;
        ProtocolReady r = {};
        VsError *lerr = NULL;
        int k;

        /* An unsandboxed workspace: nothing to enforce, nothing degraded. */
        if (init->mode == PROTOCOL_MODE_DIRECT) {
                *ret = r;
                return 0;
        }

        /* 0. The mounts are the plan's: masked paths empty and read-only,
         * protected ones read-only, no symlink on the way (verify.c). First,
         * before any layer: a jail whose setup was raced does not start. */
        k = verify_mounts(init, err);
        if (k < 0)
                return k;

        /* 0b. Resource limits, inherited by every command. RLIMIT_NPROC is
         * counted per user namespace (Linux >= 5.14 ucounts), so it caps the
         * processes of this jail alone and a fork bomb stays inside it.
         * RLIMIT_DATA (limits.memory) is set per command in exec.c; a cgroup,
         * where the daemon has one, bounds the jail's total. */
        if (init->limits.pids) {
                struct rlimit rl = { init->limits.pids, init->limits.pids };
                if (setrlimit(RLIMIT_NPROC, &rl) < 0) {
                        k = layer_failed(init, "limits", &degraded, err, strerror(errno));
                        if (k < 0)
                                return k;
                }
        }

        /* Not dumpable: the commands of the jail run as the same uid, and
         * must not read or write the worker's memory through /proc/1/mem
         * or ptrace it (execve resets this for them, not for us). */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                k = layer_failed(init, "no_new_privs", &degraded, err, strerror(errno));
                if (k < 0)
                        return k;
        }

        /* Before the filter, which refuses a umask without S_IWOTH: what
         * the jail makes is never world-writable (another local user could
         * plant in it), whatever umask the jail was started with. */
        mode_t um = umask(S_IWOTH);
        umask(um | S_IWOTH);

        /* 1. no_new_privs first: it is what lets an unprivileged process
         * install Landlock and seccomp, and it keeps setuid binaries in the
         * jail from regaining what the next steps take away. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                k = layer_failed(init, "no_new_privs", &degraded, err, strerror(errno));
                if (k < 0)
                        return k;
                /* Without it neither of the next layers can be installed. */
                if (required(init, "landlock") || required(init, "seccomp"))
                        return vs_error_set_kind(err, -EPERM, "init_failed",
                                                 "no_new_privs failed; required layers cannot follow");
        } else
                r.no_new_privs = true;

        /* 2. Landlock before seccomp: its setup uses landlock_* syscalls and
         * open(), which the filter may restrict. */
        if (!init->landlock) {
                k = layer_failed(init, "landlock", &degraded, err, "no rules given by the daemon");
                if (k < 0)
                        return k;
        } else {
                int abi = 0;
                k = landlock_apply(init->landlock_rw, &abi, &lerr);
                if (k < 0) {
                        k = layer_failed(init, "landlock", &degraded, err, vs_error_message(lerr));
                        vs_error_free(lerr);
                        lerr = NULL;
                        if (k < 0)
                                return k;
                } else
                        r.landlock_abi = abi;
        }

        /* 3. seccomp last: from here on the forbidden syscalls are gone,
         * the worker's own included. */
        if (!init->seccomp_bpf) {
                k = layer_failed(init, "seccomp", &degraded, err, "no filter (libseccomp unavailable on the host)");
                if (k < 0)
                        return k;
        } else {
                k = seccomp_load_bpf(init->seccomp_bpf, init->seccomp_bpf_len);
                if (k < 0) {
                        k = layer_failed(init, "seccomp", &degraded, err, strerror(-k));
                        if (k < 0)
                                return k;
                } else if (!seccomp_self_check()) {
                        /* Loaded but not biting: never claim it. */
                        k = layer_failed(init, "seccomp", &degraded, err,
                                         "self-check failed: a denied syscall was not refused");
                        if (k < 0)
                                return k;
                } else
                        r.seccomp = true;
        }

        r.degraded = TAKE_PTR(degraded);
        *ret = r;
        return 0;
}
