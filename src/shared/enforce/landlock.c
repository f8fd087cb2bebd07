/* SPDX-License-Identifier: MIT */
/* Landlock through raw syscalls. The uapi header is not included: Debian
 * 12's stops at ABI 2 and its struct landlock_ruleset_attr lacks the later
 * fields, so the whole interface is declared here, with vs_ names for the
 * structs so a newer system header cannot clash. What is used follows the
 * ABI version the running kernel reports. */
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#define VS_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define VS_LANDLOCK_RULE_PATH_BENEATH 1

/* ABI 1 */
#define VS_LANDLOCK_ACCESS_FS_EXECUTE (1ULL << 0)
#define VS_LANDLOCK_ACCESS_FS_WRITE_FILE (1ULL << 1)
#define VS_LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
#define VS_LANDLOCK_ACCESS_FS_READ_DIR (1ULL << 3)
#define VS_LANDLOCK_ACCESS_FS_REMOVE_DIR (1ULL << 4)
#define VS_LANDLOCK_ACCESS_FS_REMOVE_FILE (1ULL << 5)
#define VS_LANDLOCK_ACCESS_FS_MAKE_CHAR (1ULL << 6)
#define VS_LANDLOCK_ACCESS_FS_MAKE_DIR (1ULL << 7)
#define VS_LANDLOCK_ACCESS_FS_MAKE_REG (1ULL << 8)
#define VS_LANDLOCK_ACCESS_FS_MAKE_SOCK (1ULL << 9)
#define VS_LANDLOCK_ACCESS_FS_MAKE_FIFO (1ULL << 10)
#define VS_LANDLOCK_ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#define VS_LANDLOCK_ACCESS_FS_MAKE_SYM (1ULL << 12)
/* ABI 2: rename/link across directories. */
#define VS_LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
/* ABI 3 */
#define VS_LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
/* ABI 4: TCP bind/connect. Not restricted here: the network namespace and
 * seccomp handle the network. */
#define VS_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define VS_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
/* ABI 5: ioctl on device files opened after the restriction. */
#define VS_LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
/* ABI 6: the `scoped` field. */
#define VS_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define VS_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
/* ABI 7: audit logging flags for landlock_restrict_self(). */
#define VS_LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0)
#define VS_LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
#define VS_LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)

/* Layout of struct landlock_ruleset_attr as of ABI 6. The kernel accepts a
 * larger struct than it knows as long as the unknown tail is zero, so the
 * full size is passed on every ABI. */
struct vs_landlock_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net; /* ABI 4 */
        uint64_t scoped;             /* ABI 6 */
};
_Static_assert(sizeof(struct vs_landlock_ruleset_attr) == 24, "landlock_ruleset_attr layout");

struct vs_landlock_path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));
_Static_assert(sizeof(struct vs_landlock_path_beneath_attr) == 12, "landlock_path_beneath_attr layout");

#define ACCESS_FILE_WRITE (VS_LANDLOCK_ACCESS_FS_WRITE_FILE | VS_LANDLOCK_ACCESS_FS_TRUNCATE | VS_LANDLOCK_ACCESS_FS_IOCTL_DEV)

int landlock_abi_version(void) {
        long v = syscall(__NR_landlock_create_ruleset, NULL, 0, VS_LANDLOCK_CREATE_RULESET_VERSION);
        return v > 0 ? (int) v : 0;
}

/* The write-type accesses this ABI knows; reads and execute are left to the
 * mount namespace (read-only binds and masks). */
static uint64_t handled_fs(int abi) {
        uint64_t a = VS_LANDLOCK_ACCESS_FS_WRITE_FILE | VS_LANDLOCK_ACCESS_FS_REMOVE_DIR |
                     VS_LANDLOCK_ACCESS_FS_REMOVE_FILE | VS_LANDLOCK_ACCESS_FS_MAKE_CHAR |
                     VS_LANDLOCK_ACCESS_FS_MAKE_DIR | VS_LANDLOCK_ACCESS_FS_MAKE_REG |
                     VS_LANDLOCK_ACCESS_FS_MAKE_SOCK | VS_LANDLOCK_ACCESS_FS_MAKE_FIFO |
                     VS_LANDLOCK_ACCESS_FS_MAKE_BLOCK | VS_LANDLOCK_ACCESS_FS_MAKE_SYM;
        if (abi >= 2)
                a |= VS_LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                a |= VS_LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                a |= VS_LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return a;
}

/* Device nodes an ordinary shell writes to: redirections to /dev/null, the
 * terminal, PTYs (script, expect, tmux). Granted write and device ioctls
 * only, never creation. Missing ones are skipped. /dev/pts is a directory:
 * the rule covers the PTYs below it. */
static const char *const device_nodes[] = {
        "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts",
};

/* Sets *err to "WHAT: strerror(errno)" and returns -errno. */
_printf_(2, 3) static int errno_error(VsError **err, const char *fmt, ...) {
        int r = negative_errno();
        char what[PATH_MAX + 64];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        return vs_error_set(err, r, "%s: %s", what, strerror(-r));
}

static int add_path_rule(int ruleset_fd, int fd, uint64_t access) {
        struct vs_landlock_path_beneath_attr pb = {
                .allowed_access = access,
                .parent_fd = fd,
        };
        if (syscall(__NR_landlock_add_rule, ruleset_fd, VS_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                return negative_errno();
        return 0;
}

static int add_rw(int ruleset_fd, const char *path, uint64_t handled, VsError **err) {
        if (!path || path[0] != '/')
                return vs_error_set(err, -EINVAL, "landlock: rw path '%s' is not absolute", path ?: "(null)");

        _cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return errno_error(err, "landlock: opening rw path %s", path);

        struct stat st;
        if (fstat(fd, &st) < 0)
                return errno_error(err, "landlock: stat %s", path);

        /* A rule on a non-directory may only carry file accesses. */
        uint64_t access = S_ISDIR(st.st_mode) ? handled : handled & ACCESS_FILE_WRITE;
        int r = add_path_rule(ruleset_fd, fd, access);
        if (r < 0)
                return vs_error_set(err, r, "landlock_add_rule(%s): %s", path, strerror(-r));
        return 0;
}

static int add_device(int ruleset_fd, const char *path, uint64_t handled, VsError **err) {
        _cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return errno_error(err, "landlock: opening %s", path);
        }
        uint64_t access = handled & (VS_LANDLOCK_ACCESS_FS_WRITE_FILE | VS_LANDLOCK_ACCESS_FS_IOCTL_DEV);
        int r = add_path_rule(ruleset_fd, fd, access);
        if (r < 0)
                return vs_error_set(err, r, "landlock_add_rule(%s): %s", path, strerror(-r));
        return 0;
}

int landlock_apply(char *const *rw_dirs, int *ret_abi, VsError **err) {
        int abi = landlock_abi_version();
        if (abi <= 0)
                return vs_error_set(err, -EOPNOTSUPP,
                                    "Landlock is not available (needs Linux >= 5.13 with landlock in the lsm= list)");

        uint64_t handled = handled_fs(abi);
        struct vs_landlock_ruleset_attr attr = {
                .handled_access_fs = handled,
                /* Abstract unix sockets and signals outside the jail's
                 * domain: the host's sessions (D-Bus, X11, ssh-agent
                 * forwarding on abstract names) and processes. */
                .scoped = abi >= 6 ? VS_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | VS_LANDLOCK_SCOPE_SIGNAL : 0,
        };

        _cleanup_close_ int ruleset_fd = (int) syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
        if (ruleset_fd < 0)
                return errno_error(err, "landlock_create_ruleset (ABI %d)", abi);

        for (char *const *p = rw_dirs; p && *p; p++) {
                int r = add_rw(ruleset_fd, *p, handled, err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(device_nodes); i++) {
                int r = add_device(ruleset_fd, device_nodes[i], handled, err);
                if (r < 0)
                        return r;
        }

        /* ABI 7: denials by the commands the worker runs (a new exec) are
         * not audited by default; they are the interesting ones. */
        unsigned flags = abi >= 7 ? VS_LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON : 0;
        if (syscall(__NR_landlock_restrict_self, ruleset_fd, flags) < 0)
                return errno_error(err, "landlock_restrict_self%s",
                                   errno == EPERM ? " (no_new_privs must be set first)" : "");

        if (ret_abi)
                *ret_abi = abi;
        return 0;
}

int landlock_apply_read_only(char *const *ro_paths, int *ret_abi, VsError **err) {
        int abi = landlock_abi_version();
        if (abi <= 0)
                return vs_error_set(err, -EOPNOTSUPP,
                                    "Landlock is not available (needs Linux >= 5.13 with landlock in the lsm= list)");
        const uint64_t read = VS_LANDLOCK_ACCESS_FS_READ_FILE | VS_LANDLOCK_ACCESS_FS_READ_DIR;
        struct vs_landlock_ruleset_attr attr = {
                .handled_access_fs = handled_fs(abi) | read | VS_LANDLOCK_ACCESS_FS_EXECUTE,
                .scoped = abi >= 6 ? VS_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | VS_LANDLOCK_SCOPE_SIGNAL : 0,
        };
        _cleanup_close_ int ruleset_fd = (int) syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
        if (ruleset_fd < 0)
                return errno_error(err, "landlock_create_ruleset (ABI %d)", abi);
        for (char *const *p = ro_paths; p && *p; p++) {
                _cleanup_close_ int fd = open(*p, O_PATH | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT)
                        continue;
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0)
                        return errno_error(err, "landlock: opening %s", *p);
                int r = add_path_rule(ruleset_fd, fd, S_ISDIR(st.st_mode) ? read : VS_LANDLOCK_ACCESS_FS_READ_FILE);
                if (r < 0)
                        return vs_error_set(err, r, "landlock_add_rule(%s): %s", *p, strerror(-r));
        }
        if (syscall(__NR_landlock_restrict_self, ruleset_fd, 0) < 0)
                return errno_error(err, "landlock_restrict_self%s",
                                   errno == EPERM ? " (no_new_privs must be set first)" : "");
        if (ret_abi)
                *ret_abi = abi;
        return 0;
}
