/* SPDX-License-Identifier: MIT */
/* vectora-probe: run INSIDE the jail by tests/escape/test_escape.py, one
 * subcommand per escape attempt. Each attempt prints one line
 *
 *     BLOCKED: detail      exit 0: the jail held
 *     ESCAPED: detail      exit 1: the attempt worked
 *
 * (`syscalls` and `compat` print one such line per syscall and exit 1 if any
 * escaped; `compat` exits 3 with a `SKIP:` line when the kernel has no such
 * entry; tests/escape/test_peer_cases.py runs it). Exit 2 is a probe error (bad usage). Built statically so that it runs in
 * the jail whatever the jail's libraries are.
 *
 * Where a syscall is expected to be denied by seccomp, its arguments are
 * chosen (as in bubblewrap's try-syscall.c and ai-jail's escape helper) so
 * that without the filter it would either succeed harmlessly or fail with an
 * errno other than the expected one (EFAULT from a bad pointer, EBADF from a
 * bad fd): only the filter produces the expected errno. Nothing here may hurt
 * the host if the jail is broken: writes go to files named by the test, and
 * dangerous /proc files are only opened, never written. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* Syscalls from 424 on have one number on every architecture but alpha,
 * ia64 and mips; older libc headers may lack them. */
#if !defined(__alpha__) && !defined(__ia64__) && !defined(__mips__)
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef SYS_set_mempolicy_home_node
#define SYS_set_mempolicy_home_node 450
#endif
#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif
#endif

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_BLUETOOTH
#define AF_BLUETOOTH 31
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef NETLINK_SOCK_DIAG
#define NETLINK_SOCK_DIAG 4
#endif
#ifndef NETLINK_AUDIT
#define NETLINK_AUDIT 9
#endif
#ifndef NETLINK_KOBJECT_UEVENT
#define NETLINK_KOBJECT_UEVENT 15
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* A pointer the kernel cannot read: EFAULT when a call gets that far. */
#define BAD_PTR ((void *)1)

#define SECRET_READ_MAX (1u << 20)

static void say(const char *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *status, const char *fmt, ...) {
        va_list ap;
        printf("%s: ", status);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

#define BLOCKED(...) (say("BLOCKED", __VA_ARGS__), 0)
#define ESCAPED(...) (say("ESCAPED", __VA_ARGS__), 1)

static int usage_error(const char *what) {
        fprintf(stderr, "vectora-probe: %s\n", what);
        return 2;
}

/* errno's symbolic name: the test compares names, not numbers. */
static const char *errname(int e) {
        switch (e) {
        case 0: return "0";
        case EPERM: return "EPERM";
        case ENOENT: return "ENOENT";
        case ESRCH: return "ESRCH";
        case EINTR: return "EINTR";
        case EIO: return "EIO";
        case ENXIO: return "ENXIO";
        case E2BIG: return "E2BIG";
        case EBADF: return "EBADF";
        case ECHILD: return "ECHILD";
        case EAGAIN: return "EAGAIN";
        case ENOMEM: return "ENOMEM";
        case EACCES: return "EACCES";
        case EFAULT: return "EFAULT";
        case EBUSY: return "EBUSY";
        case EEXIST: return "EEXIST";
        case EXDEV: return "EXDEV";
        case ENODEV: return "ENODEV";
        case ENOTDIR: return "ENOTDIR";
        case EISDIR: return "EISDIR";
        case EINVAL: return "EINVAL";
        case ENFILE: return "ENFILE";
        case EMFILE: return "EMFILE";
        case ENOTTY: return "ENOTTY";
        case ETXTBSY: return "ETXTBSY";
        case ENOSPC: return "ENOSPC";
        case ESPIPE: return "ESPIPE";
        case EROFS: return "EROFS";
        case EMLINK: return "EMLINK";
        case ENOSYS: return "ENOSYS";
        case ENOTEMPTY: return "ENOTEMPTY";
        case ELOOP: return "ELOOP";
        case ENOTSOCK: return "ENOTSOCK";
        case EPROTOTYPE: return "EPROTOTYPE";
        case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
        case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
        case EOPNOTSUPP: return "EOPNOTSUPP";
        case EAFNOSUPPORT: return "EAFNOSUPPORT";
        case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
        case ENETDOWN: return "ENETDOWN";
        case ENETUNREACH: return "ENETUNREACH";
        case ECONNREFUSED: return "ECONNREFUSED";
        case EHOSTUNREACH: return "EHOSTUNREACH";
        case ETIMEDOUT: return "ETIMEDOUT";
        case ENOKEY: return "ENOKEY";
        case ENOMEDIUM: return "ENOMEDIUM";
        case EKEYREJECTED: return "EKEYREJECTED";
        case ENAMETOOLONG: return "ENAMETOOLONG";
        default: {
                static char buf[32];
                snprintf(buf, sizeof buf, "errno %d", e);
                return buf;
        }
        }
}

/* ---- files ----------------------------------------------------------------- */

static int read_all(int fd, char **ret, size_t *ret_len) {
        size_t cap = 4096, n = 0;
        char *buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (n == cap) {
                        if (cap >= SECRET_READ_MAX)
                                break;
                        char *nb = realloc(buf, cap * 2 + 1);
                        if (!nb) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = nb;
                        cap *= 2;
                }
                ssize_t k = read(fd, buf + n, cap - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int e = errno;
                        free(buf);
                        return -e;
                }
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        buf[n] = 0;
        *ret = buf;
        *ret_len = n;
        return 0;
}

static bool contains(const char *hay, size_t n, const char *needle) {
        return needle && *needle && memmem(hay, n, needle, strlen(needle)) != NULL;
}

/* read PATH [MARKER]: without a marker, opening the file at all escapes;
 * with one, only seeing the marker does (a masked file is there, empty). */
static int cmd_read(int argc, char **argv) {
        if (argc < 1)
                return usage_error("read PATH [MARKER]");
        const char *path = argv[0], *marker = argc > 1 ? argv[1] : NULL;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return BLOCKED("open(%s): %s", path, errname(errno));
        char *buf;
        size_t n;
        int r = read_all(fd, &buf, &n);
        close(fd);
        if (r < 0)
                return marker ? BLOCKED("read(%s): %s", path, errname(-r))
                              : ESCAPED("open(%s) succeeded (read: %s)", path, errname(-r));
        bool seen = contains(buf, n, marker);
        free(buf);
        if (!marker)
                return ESCAPED("read(%s): %zu bytes", path, n);
        if (seen)
                return ESCAPED("read(%s): %zu bytes, the secret's marker is in them", path, n);
        return BLOCKED("read(%s): %zu bytes, none of the secret", path, n);
}

/* ls DIR [EXPECTED...]: a directory that exists and shows entries other
 * than EXPECTED (the components the jail itself needs, e.g. the way down
 * to the workspace) escapes. */
static int cmd_ls(int argc, char **argv) {
        if (argc < 1)
                return usage_error("ls DIR [EXPECTED...]");
        DIR *d = opendir(argv[0]);
        if (!d)
                return BLOCKED("opendir(%s): %s", argv[0], errname(errno));
        size_t n = 0;
        char extra[256] = "";
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                bool expected = false;
                for (int i = 1; i < argc; i++)
                        if (strcmp(de->d_name, argv[i]) == 0)
                                expected = true;
                if (!expected && !n++)
                        snprintf(extra, sizeof extra, "%s", de->d_name);
        }
        closedir(d);
        if (n == 0)
                return BLOCKED("opendir(%s): nothing but the jail's own entries", argv[0]);
        return ESCAPED("opendir(%s): %zu host entries (first: %s)", argv[0], n, extra);
}

/* write PATH: append one line (creating the file if needed). */
static int cmd_write(int argc, char **argv) {
        if (argc < 1)
                return usage_error("write PATH");
        static const char line[] = "vectora-probe was here\n";
        int fd = open(argv[0], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
                return BLOCKED("open(%s, O_WRONLY|O_CREAT): %s", argv[0], errname(errno));
        ssize_t k = write(fd, line, sizeof line - 1);
        int e = errno;
        close(fd);
        if (k < 0)
                return BLOCKED("write(%s): %s", argv[0], errname(e));
        return ESCAPED("wrote %zd bytes to %s", k, argv[0]);
}

/* openw PATH: open for writing only, never write (for /proc files where a
 * write would do harm if the jail were broken). */
static int cmd_openw(int argc, char **argv) {
        if (argc < 1)
                return usage_error("openw PATH");
        int fd = open(argv[0], O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return BLOCKED("open(%s, O_WRONLY): %s", argv[0], errname(errno));
        close(fd);
        return ESCAPED("open(%s, O_WRONLY) succeeded", argv[0]);
}

static int cmd_mkdir(int argc, char **argv) {
        if (argc < 1)
                return usage_error("mkdir PATH");
        if (mkdir(argv[0], 0755) < 0)
                return BLOCKED("mkdir(%s): %s", argv[0], errname(errno));
        return ESCAPED("mkdir(%s) succeeded", argv[0]);
}

static int cmd_mknod(int argc, char **argv) {
        if (argc < 1)
                return usage_error("mkfifo PATH");
        if (mknod(argv[0], S_IFIFO | 0644, 0) < 0)
                return BLOCKED("mknod(%s, S_IFIFO): %s", argv[0], errname(errno));
        return ESCAPED("mknod(%s, S_IFIFO) succeeded", argv[0]);
}

static int cmd_unlink(int argc, char **argv) {
        if (argc < 1)
                return usage_error("unlink PATH");
        if (unlink(argv[0]) < 0 && rmdir(argv[0]) < 0)
                return BLOCKED("unlink(%s): %s", argv[0], errname(errno));
        return ESCAPED("removed %s", argv[0]);
}

static int cmd_rename(int argc, char **argv) {
        if (argc < 2)
                return usage_error("rename FROM TO");
        if (rename(argv[0], argv[1]) < 0)
                return BLOCKED("rename(%s, %s): %s", argv[0], argv[1], errname(errno));
        return ESCAPED("rename(%s, %s) succeeded", argv[0], argv[1]);
}

/* swap-dir DIR SUB FILE: move DIR aside (the read-only mount over DIR/SUB
 * moves with it) and rebuild DIR/SUB/FILE as a plain writable file: e.g.
 * .git hooks/pre-commit, which the host would then run. */
static int cmd_swap_dir(int argc, char **argv) {
        if (argc < 3)
                return usage_error("swap-dir DIR SUB FILE");
        if (strlen(argv[0]) + strlen(argv[1]) + strlen(argv[2]) > 3000)
                return usage_error("swap-dir: paths too long");
        char moved[4096], sub[4096], file[8192];
        snprintf(moved, sizeof moved, "%s.vectora-probe-moved", argv[0]);
        snprintf(sub, sizeof sub, "%s/%s", argv[0], argv[1]);
        snprintf(file, sizeof file, "%s/%s", sub, argv[2]);
        if (rename(argv[0], moved) < 0)
                return BLOCKED("rename(%s, %s): %s", argv[0], moved, errname(errno));
        if (mkdir(argv[0], 0755) < 0)
                return BLOCKED("moved %s aside, but mkdir(%s): %s", argv[0], argv[0], errname(errno));
        if (strcmp(argv[1], ".") != 0 && mkdir(sub, 0755) < 0)
                return BLOCKED("moved %s aside, but mkdir(%s): %s", argv[0], sub, errname(errno));
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        if (fd < 0)
                return BLOCKED("moved %s aside, but open(%s): %s", argv[0], file, errname(errno));
        static const char hook[] = "#!/bin/sh\necho planted by vectora-probe\n";
        ssize_t k = write(fd, hook, sizeof hook - 1);
        close(fd);
        if (k < 0)
                return BLOCKED("moved %s aside, but write(%s) failed", argv[0], file);
        return ESCAPED("moved %s aside and planted %s", argv[0], file);
}

/* hardlink SRC DST MARKER: a second name for a masked file must not give
 * its content. */
static int cmd_hardlink(int argc, char **argv) {
        if (argc < 3)
                return usage_error("hardlink SRC DST MARKER");
        if (link(argv[0], argv[1]) < 0)
                return BLOCKED("link(%s, %s): %s", argv[0], argv[1], errname(errno));
        char *args[] = { argv[1], argv[2] };
        return cmd_read(2, args);
}

/* ---- files that grant privileges --------------------------------------------- */

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

/* privfile KIND PATH: try to leave at PATH a file that grants privileges to
 * whoever later runs or opens it on the host: a setuid/setgid bit (through
 * each chmod/open/mknod variant), a device node, file capabilities. The
 * verdict is what lies at PATH afterwards, whatever the call returned. */
static int cmd_privfile(int argc, char **argv) {
        if (argc < 2)
                return usage_error("privfile KIND PATH");
        const char *kind = argv[0], *path = argv[1];
        bool chmod_kind = strncmp(kind, "chmod", 5) == 0 || strncmp(kind, "fchmod", 6) == 0 || strstr(kind, "setxattr");
        (void)unlink(path);
        if (chmod_kind) {
                int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
                if (fd < 0)
                        return usage_error("cannot create the test file");
                close(fd);
        }
        int dfd = -1;
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        {
                char dir[4096];
                snprintf(dir, sizeof dir, "%.*s", (int)(base - path), path);
                dfd = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        /* Capability set v2: CAP_SETUID (7) permitted and effective. */
        static const uint32_t cap[5] = { 0x02000001u, 1u << 7, 0, 0, 0 };
        long r = -1;
        errno = 0;
        if (streq(kind, "chmod-suid"))
                r = chmod(path, 04755);
        else if (streq(kind, "chmod-sgid"))
                r = chmod(path, 02755);
        else if (streq(kind, "fchmod-suid")) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                r = fchmod(fd, 04755);
                close(fd);
        } else if (streq(kind, "fchmodat-suid"))
                r = syscall(SYS_fchmodat, dfd, base, 04755);
        else if (streq(kind, "fchmodat2-suid"))
                r = syscall(SYS_fchmodat2, dfd, base, 06755, 0);
        else if (streq(kind, "open-suid"))
                r = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 04755);
        else if (streq(kind, "openat-sgid"))
                r = openat(dfd, base, O_CREAT | O_WRONLY | O_CLOEXEC, 02755);
        else if (streq(kind, "creat-suid"))
                r = creat(path, 04755);
        else if (streq(kind, "openat2-suid")) {
                struct { uint64_t flags, mode, resolve; } how = { O_CREAT | O_WRONLY | O_CLOEXEC, 04755, 0 };
                r = syscall(SYS_openat2, dfd, base, &how, sizeof how);
        } else if (streq(kind, "mknod-suid"))
                r = mknod(path, S_IFREG | 04755, 0);
        else if (streq(kind, "mknodat-sgid"))
                r = mknodat(dfd, base, S_IFREG | 02755, 0);
        else if (streq(kind, "mknod-chr"))
                r = mknod(path, S_IFCHR | 0666, makedev(1, 3));
        else if (streq(kind, "mknod-blk"))
                r = mknod(path, S_IFBLK | 0666, makedev(8, 0));
        else if (streq(kind, "mknodat-chr"))
                r = mknodat(dfd, base, S_IFCHR | 0666, makedev(1, 5));
        else if (streq(kind, "setxattr-cap"))
                r = setxattr(path, "security.capability", cap, sizeof cap, 0);
        else if (streq(kind, "lsetxattr-cap"))
                r = lsetxattr(path, "security.capability", cap, sizeof cap, 0);
        else if (streq(kind, "fsetxattr-cap")) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                r = fsetxattr(fd, "security.capability", cap, sizeof cap, 0);
                close(fd);
        } else
                return usage_error("privfile: unknown kind");
        int e = errno;
        if (r >= 0 && (strncmp(kind, "open", 4) == 0 || strncmp(kind, "creat", 5) == 0))
                close((int)r);
        if (dfd >= 0)
                close(dfd);
        struct stat st;
        if (lstat(path, &st) < 0)
                return BLOCKED("%s: %s, nothing created", kind, r < 0 ? errname(e) : "succeeded");
        char xa[64];
        ssize_t xl = getxattr(path, "security.capability", xa, sizeof xa);
        if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
                return ESCAPED("%s: a device node %u:%u is at %s", kind, major(st.st_rdev), minor(st.st_rdev), path);
        if (st.st_mode & (S_ISUID | S_ISGID))
                return ESCAPED("%s: %s is mode %04o", kind, path, (unsigned)(st.st_mode & 07777));
        if (xl > 0)
                return ESCAPED("%s: %s carries security.capability", kind, path);
        return BLOCKED("%s: %s; %s is mode %04o, no capabilities", kind, r < 0 ? errname(e) : "succeeded", path,
                       (unsigned)(st.st_mode & 07777));
}

/* chown KIND PATH: try to give a file the jail created to another owner or
 * group (the filter allows only the jail's own ids and -1), or to set an
 * xattr the filter cannot tell from a harmless one. The verdict is the
 * file's ownership afterwards and the call's result. */
static int cmd_chown(int argc, char **argv) {
        if (argc < 2)
                return usage_error("chown KIND PATH");
        const char *kind = argv[0], *path = argv[1];
        (void)unlink(path);
        int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
        if (fd < 0)
                return usage_error("cannot create the test file");
        uid_t u = geteuid();
        gid_t g = getegid();
        uid_t ou = u == 0 ? 1 : 0;
        gid_t og = g == 0 ? 1 : 0;
        /* A supplementary group the process holds, if any: the kernel
         * would let an owner give its file to it. */
        gid_t groups[64];
        int ng = getgroups(64, groups);
        for (int i = 0; i < ng; i++)
                if (groups[i] != g && groups[i] != 65534)
                        og = groups[i];
        long r;
        errno = 0;
        if (streq(kind, "chown-uid"))
                r = chown(path, ou, -1);
        else if (streq(kind, "chown-gid"))
                r = chown(path, -1, og);
        else if (streq(kind, "lchown"))
                r = lchown(path, ou, og);
        else if (streq(kind, "fchown"))
                r = fchown(fd, -1, og);
        else if (streq(kind, "fchownat-empty-path"))
                r = syscall(SYS_fchownat, fd, "", ou, -1, AT_EMPTY_PATH);
        else if (streq(kind, "fchown-high-bits"))   /* the kernel reads the low 32 bits: root */
                r = syscall(SYS_fchown, fd, (1UL << 32) | ou, (1UL << 32) | og);
        else if (streq(kind, "setxattr-trusted"))
                r = setxattr(path, "trusted.overlay.opaque", "y", 1, 0);
        else if (streq(kind, "setxattr-security"))
                r = setxattr(path, "security.ima", "\x03\x02", 2, 0);
        else if (streq(kind, "setxattr-case"))
                r = setxattr(path, "SECURITY.capability", "\x01", 1, 0);
        else if (streq(kind, "setxattr-nodot"))
                r = setxattr(path, "capability", "\x01", 1, 0);
        else {
                close(fd);
                return usage_error("chown: unknown kind");
        }
        int e = errno;
        struct stat st;
        int k = fstat(fd, &st);
        char list[256];
        ssize_t nl = flistxattr(fd, list, sizeof list);
        close(fd);
        if (k < 0)
                return ESCAPED("%s: fstat: %s", kind, errname(errno));
        if (st.st_uid != u || st.st_gid != g)
                return ESCAPED("%s: %s is now %u:%u (the jail is %u:%u)", kind, path, (unsigned)st.st_uid,
                               (unsigned)st.st_gid, (unsigned)u, (unsigned)g);
        if (r >= 0)
                return ESCAPED("%s: succeeded (%zd bytes of xattr names now)", kind, nl);
        return BLOCKED("%s: %s; %s stays %u:%u", kind, errname(e), path, (unsigned)u, (unsigned)g);
}

/* nosuid PATH: the mount holding PATH is nosuid and nodev (a setuid file or
 * a device node there would grant nothing inside). */
static int cmd_nosuid(int argc, char **argv) {
        if (argc < 1)
                return usage_error("nosuid PATH");
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return ESCAPED("cannot read /proc/self/mountinfo: %s", errname(errno));
        char line[8192], best[4096] = "", opts[1024] = "";
        while (fgets(line, sizeof line, f)) {
                char mp[4096], o[1024];
                if (sscanf(line, "%*s %*s %*s %*s %4095s %1023s", mp, o) != 2)
                        continue;
                size_t l = strlen(mp);
                bool under = streq(mp, "/") || (strncmp(argv[0], mp, l) == 0 && (argv[0][l] == '/' || !argv[0][l]));
                /* The last matching line is the top mount of the longest prefix. */
                if (under && l >= strlen(best)) {
                        snprintf(best, sizeof best, "%s", mp);
                        snprintf(opts, sizeof opts, "%s", o);
                }
        }
        fclose(f);
        char padded[1100];
        snprintf(padded, sizeof padded, ",%s,", opts);
        bool nosuid = strstr(padded, ",nosuid,") != NULL, nodev = strstr(padded, ",nodev,") != NULL;
        if (!nosuid || !nodev)
                return ESCAPED("the mount at %s holding %s is %s (want nosuid,nodev)", best, argv[0], opts);
        return BLOCKED("the mount at %s holding %s is %s", best, argv[0], opts);
}

/* alg: the kernel crypto API socket family must be refused by the filter
 * (EPERM) before the kernel sees it: any other errno means it reached the
 * kernel, which merely lacked or refused it this time. */
static int cmd_alg(int argc, char **argv) {
        int fd = socket(38 /* AF_ALG */, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0 && errno == EPERM)
                return BLOCKED("socket(AF_ALG): EPERM");
        if (fd < 0)
                return ESCAPED("socket(AF_ALG) reached the kernel: %s", errname(errno));
        close(fd);
        return ESCAPED("socket(AF_ALG) succeeded");
}

/* ---- identity ------------------------------------------------------------- */

/* status FIELD=VALUE...: lines of /proc/self/status, compared exactly. */
static int cmd_status(int argc, char **argv) {
        if (argc < 1)
                return usage_error("status FIELD=VALUE...");
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return ESCAPED("cannot read /proc/self/status: %s", errname(errno));
        char *buf;
        size_t n;
        int r = read_all(fd, &buf, &n);
        close(fd);
        if (r < 0)
                return ESCAPED("cannot read /proc/self/status: %s", errname(-r));
        char got[2048] = "";
        size_t used = 0;
        bool bad = false;
        for (int i = 0; i < argc; i++) {
                const char *eq = strchr(argv[i], '=');
                if (!eq)
                        return usage_error("status FIELD=VALUE...");
                char key[64];
                snprintf(key, sizeof key, "\n%.*s:", (int)(eq - argv[i]), argv[i]);
                const char *at = strstr(buf, key);
                char val[128] = "(absent)";
                if (at) {
                        at += strlen(key);
                        at += strspn(at, " \t");
                        size_t l = strcspn(at, "\n");
                        snprintf(val, sizeof val, "%.*s", (int)l, at);
                }
                if (strcmp(val, eq + 1) != 0)
                        bad = true;
                used += (size_t)snprintf(got + used, sizeof got - used, "%s%.*s=%s", i ? " " : "", (int)(eq - argv[i]),
                                         argv[i], val);
                if (used >= sizeof got)
                        used = sizeof got - 1;
        }
        free(buf);
        return bad ? ESCAPED("/proc/self/status: %s", got) : BLOCKED("/proc/self/status: %s", got);
}

/* ---- processes -------------------------------------------------------------- */

static int read_small(const char *path, char *buf, size_t sz) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, buf, sz - 1);
        int e = errno;
        close(fd);
        if (k < 0)
                return -e;
        buf[k] = 0;
        return (int)k;
}

/* uidmap FILE: not uid 0 inside, no identity map of the whole id range,
 * and FILE created in the workspace so that the test can check from the
 * host which host uid the jail really writes as. (The second column of
 * uid_map, read from inside, names bwrap's intermediate namespace, not the
 * host: only the host can tell.) */
static int cmd_uidmap(int argc, char **argv) {
        if (argc < 1)
                return usage_error("uidmap FILE");
        char map[256];
        int k = read_small("/proc/self/uid_map", map, sizeof map);
        if (k < 0)
                return ESCAPED("/proc/self/uid_map: %s", errname(-k));
        for (char *c = map; *c; c++)
                if (*c == '\n')
                        *c = ';';
        unsigned in, out, count;
        if (sscanf(map, "%u %u %u", &in, &out, &count) == 3 && in == 0 && out == 0 && count == 4294967295u)
                return ESCAPED("the jail has the host's identity uid map: %s", map);
        if (getuid() == 0 || geteuid() == 0 || getgid() == 0 || getegid() == 0)
                return ESCAPED("running as uid/gid 0 inside the jail (uid_map: %s)", map);
        int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return ESCAPED("cannot create %s to show the host uid: %s", argv[0], errname(errno));
        close(fd);
        return BLOCKED("uid %u gid %u (uid_map: %s); created %s", (unsigned)getuid(), (unsigned)getgid(), map, argv[0]);
}

/* procs HOSTPID...: /proc shows only the jail; pid 1 is the worker. */
static int cmd_procs(int argc, char **argv) {
        DIR *d = opendir("/proc");
        if (!d)
                return ESCAPED("opendir(/proc): %s", errname(errno));
        size_t n = 0;
        long max = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                n++;
                if (pid > max)
                        max = pid;
                for (int i = 0; i < argc; i++)
                        if (pid == strtol(argv[i], NULL, 10)) {
                                closedir(d);
                                return ESCAPED("host pid %ld is visible in /proc", pid);
                        }
        }
        closedir(d);
        char cmd[256];
        int k = read_small("/proc/1/cmdline", cmd, sizeof cmd);
        if (k < 0)
                return ESCAPED("/proc/1/cmdline: %s", errname(-k));
        if (strcmp(cmd, "/run/vectora/vectora-worker") != 0)
                return ESCAPED("pid 1 is %s, not the worker", cmd);
        return BLOCKED("%zu processes in /proc (highest pid %ld), pid 1 is the worker", n, max);
}

/* kill PID...: signal 0 probes reachability without touching anything. */
static int cmd_kill(int argc, char **argv) {
        if (argc < 1)
                return usage_error("kill PID...");
        char detail[1024] = "";
        size_t used = 0;
        for (int i = 0; i < argc; i++) {
                long pid = strtol(argv[i], NULL, 10);
                if (pid <= 1)
                        return usage_error("kill: give host pids > 1");
                if (kill((pid_t)pid, 0) == 0)
                        return ESCAPED("kill(%ld, 0) succeeded: the process is reachable", pid);
                used += (size_t)snprintf(detail + used, sizeof detail - used, "%skill(%ld): %s", i ? ", " : "", pid,
                                         errname(errno));
                if (used >= sizeof detail)
                        used = sizeof detail - 1;
        }
        return BLOCKED("%s", detail);
}

/* kill-all: SIGKILL to every process the jail can signal; the test checks
 * that its own processes of the same uid outside the jail survive. */
static int cmd_kill_all(int argc, char **argv) {
        int r = kill(-1, SIGKILL);
        return BLOCKED("kill(-1, SIGKILL): %s (the test checks the host side)", r == 0 ? "0" : errname(errno));
}

/* worker-mem: the worker (pid 1) holds the socket to the daemon; its memory
 * must not be writable from the commands it runs. */
static int cmd_worker_mem(int argc, char **argv) {
        int fd = open("/proc/1/mem", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return BLOCKED("open(/proc/1/mem, O_RDWR): %s", errname(errno));
        close(fd);
        return ESCAPED("open(/proc/1/mem, O_RDWR) succeeded: the worker's memory is writable");
}

/* worker-fds: the worker's descriptors (each terminal's master and the
 * open of its slave held until the reap, the link to the daemon) stay the
 * worker's: none is inherited past fd 2, and none opens again through
 * /proc/1/fd (the worker is not dumpable). */
static int cmd_worker_fds(int argc, char **argv) {
        (void)argc;
        (void)argv;
        char p[64], link[256];
        for (int fd = 3; fd < 1024; fd++) {
                if (fcntl(fd, F_GETFD) < 0)
                        continue;
                snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
                ssize_t n = readlink(p, link, sizeof link - 1);
                link[n > 0 ? n : 0] = 0;
                if (isatty(fd) || strstr(link, "ptmx") || strncmp(link, "/dev/pts/", 9) == 0 ||
                    strncmp(link, "socket:", 7) == 0)
                        return ESCAPED("fd %d is inherited: %s", fd, link);
        }
        DIR *d = opendir("/proc/1/fd");
        if (d) {
                closedir(d);
                return ESCAPED("/proc/1/fd of the worker is listable");
        }
        int list_err = errno;
        for (int fd = 0; fd < 256; fd++) {
                snprintf(p, sizeof p, "/proc/1/fd/%d", fd);
                int f = open(p, O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (f < 0)
                        f = open(p, O_RDONLY | O_NOCTTY | O_CLOEXEC);
                if (f >= 0) {
                        snprintf(p, sizeof p, "/proc/self/fd/%d", f);
                        ssize_t n = readlink(p, link, sizeof link - 1);
                        link[n > 0 ? n : 0] = 0;
                        close(f);
                        return ESCAPED("opened the worker's fd %d again through /proc/1/fd: %s", fd, link);
                }
                if (errno != EACCES && errno != EPERM && errno != ENOENT)
                        return ESCAPED("open(/proc/1/fd/%d): %s (expected EACCES)", fd, errname(errno));
        }
        return BLOCKED("no terminal or socket past fd 2; opendir(/proc/1/fd): %s; /proc/1/fd/0..255: none opens",
                       errname(list_err));
}

/* ---- sockets and network ------------------------------------------------------ */

static int connect_report(int fd, const struct sockaddr *sa, socklen_t len, const char *what) {
        if (connect(fd, sa, len) < 0) {
                int e = errno;
                close(fd);
                return BLOCKED("connect(%s): %s", what, errname(e));
        }
        close(fd);
        return ESCAPED("connect(%s) succeeded", what);
}

static int cmd_unix(int argc, char **argv, bool abstract) {
        if (argc < 1)
                return usage_error("unix PATH | abstract NAME");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t l = strlen(argv[0]);
        if (l + 1 >= sizeof sa.sun_path)
                return usage_error("socket name too long");
        memcpy(sa.sun_path + (abstract ? 1 : 0), argv[0], l);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return BLOCKED("socket(AF_UNIX): %s", errname(errno));
        char what[160];
        snprintf(what, sizeof what, "%s%s", abstract ? "@" : "", argv[0]);
        return connect_report(fd, (struct sockaddr *)&sa,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l + 1), what);
}

static int cmd_tcp(int argc, char **argv) {
        if (argc < 2)
                return usage_error("tcp ADDR PORT");
        char what[160];
        snprintf(what, sizeof what, "tcp %s port %s", argv[0], argv[1]);
        uint16_t port = (uint16_t)strtoul(argv[1], NULL, 10);
        if (strchr(argv[0], ':')) {
                struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
                if (inet_pton(AF_INET6, argv[0], &sa.sin6_addr) != 1)
                        return usage_error("bad address");
                int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return BLOCKED("socket(AF_INET6, SOCK_STREAM): %s", errname(errno));
                return connect_report(fd, (struct sockaddr *)&sa, sizeof sa, what);
        }
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
        if (inet_pton(AF_INET, argv[0], &sa.sin_addr) != 1)
                return usage_error("bad address");
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return BLOCKED("socket(AF_INET, SOCK_STREAM): %s", errname(errno));
        return connect_report(fd, (struct sockaddr *)&sa, sizeof sa, what);
}

static int cmd_udp(int argc, char **argv) {
        if (argc < 2)
                return usage_error("udp ADDR PORT");
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)strtoul(argv[1], NULL, 10)) };
        if (inet_pton(AF_INET, argv[0], &sa.sin_addr) != 1)
                return usage_error("bad address");
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return BLOCKED("socket(AF_INET, SOCK_DGRAM): %s", errname(errno));
        ssize_t k = sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, sizeof sa);
        int e = errno;
        close(fd);
        if (k < 0)
                return BLOCKED("sendto(udp %s port %s): %s", argv[0], argv[1], errname(e));
        return ESCAPED("sendto(udp %s port %s) sent a datagram", argv[0], argv[1]);
}

/* loopback ADDR: serve and connect on ADDR (127.0.0.1 or ::1) inside the
 * jail's own network namespace, as a test suite's fixtures do. ESCAPED
 * means it worked (a control where the network is off but loopback is
 * the jail's own); BLOCKED under lockdown, where inet sockets are refused. */
static int cmd_loopback(int argc, char **argv) {
        if (argc < 1)
                return usage_error("loopback ADDR");
        struct sockaddr_storage ss = { 0 };
        socklen_t len;
        int family = strchr(argv[0], ':') ? AF_INET6 : AF_INET;
        if (family == AF_INET6) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
                a->sin6_family = AF_INET6;
                if (inet_pton(AF_INET6, argv[0], &a->sin6_addr) != 1)
                        return usage_error("bad address");
                len = sizeof *a;
        } else {
                struct sockaddr_in *a = (struct sockaddr_in *)&ss;
                a->sin_family = AF_INET;
                if (inet_pton(AF_INET, argv[0], &a->sin_addr) != 1)
                        return usage_error("bad address");
                len = sizeof *a;
        }
        int l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l < 0)
                return BLOCKED("socket(%s): %s", argv[0], errname(errno));
        if (bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, 1) < 0 ||
            getsockname(l, (struct sockaddr *)&ss, &len) < 0) {
                int e = errno;
                close(l);
                return BLOCKED("bind/listen(%s): %s", argv[0], errname(e));
        }
        int c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&ss, len) < 0) {
                int e = errno;
                close(l);
                if (c >= 0)
                        close(c);
                return BLOCKED("connect(%s): %s", argv[0], errname(e));
        }
        int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        char buf[8] = "";
        bool ok = a >= 0 && write(c, "ping", 4) == 4 && read(a, buf, sizeof buf) == 4 && memcmp(buf, "ping", 4) == 0;
        int e = errno;
        close(l);
        close(c);
        if (a >= 0)
                close(a);
        if (!ok)
                return BLOCKED("accept/exchange(%s): %s", argv[0], errname(e));
        return ESCAPED("served and connected on %s inside the jail", argv[0]);
}

/* proxy-connect HOST PORT: through the network allowlist's proxy (the
 * relay on 127.0.0.1:3128 in the jail), ask for a tunnel to HOST:PORT.
 * ESCAPED when the proxy answers 200 (a tunnel was opened), BLOCKED with
 * its status line otherwise. */
static int cmd_proxy_connect(int argc, char **argv) {
        if (argc < 2)
                return usage_error("proxy-connect HOST PORT");
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(3128),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return BLOCKED("socket: %s", errname(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                int e = errno;
                close(fd);
                return BLOCKED("connect(127.0.0.1:3128): %s (no proxy in this jail)", errname(e));
        }
        char req[512], resp[512];
        int n = snprintf(req, sizeof req, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", argv[0], argv[1], argv[0],
                         argv[1]);
        size_t got = 0;
        if (write(fd, req, (size_t)n) != n) {
                int e = errno;
                close(fd);
                return BLOCKED("write: %s", errname(e));
        }
        while (got < sizeof resp - 1) {
                ssize_t k = read(fd, resp + got, sizeof resp - 1 - got);
                if (k <= 0)
                        break;
                got += (size_t)k;
                resp[got] = 0;
                if (strstr(resp, "\r\n"))
                        break;
        }
        close(fd);
        resp[got] = 0;
        char *eol = strstr(resp, "\r\n");
        if (eol)
                *eol = 0;
        if (strncmp(resp, "HTTP/1.1 200", 12) == 0)
                return ESCAPED("the proxy opened a tunnel to %s:%s: %s", argv[0], argv[1], resp);
        return BLOCKED("the proxy answered: %s", got ? resp : "(nothing)");
}

/* ifaces: /proc/net/dev lists the network namespace's interfaces. */
static int cmd_ifaces(int argc, char **argv) {
        FILE *f = fopen("/proc/net/dev", "re");
        if (!f)
                return BLOCKED("/proc/net/dev: %s", errname(errno));
        char line[512], names[1024] = "";
        size_t used = 0;
        bool other = false;
        while (fgets(line, sizeof line, f)) {
                char *colon = strchr(line, ':');
                if (!colon)
                        continue;
                *colon = 0;
                char *name = line + strspn(line, " ");
                if (strcmp(name, "lo") != 0)
                        other = true;
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? "," : "", name);
                if (used >= sizeof names)
                        used = sizeof names - 1;
        }
        fclose(f);
        return other ? ESCAPED("interfaces: %s", names) : BLOCKED("interfaces: %s", names[0] ? names : "(none)");
}

/* ---- environment and devices ------------------------------------------------------ */

extern char **environ;

/* env MARKER NAME...: only the allowlisted names; no value contains MARKER. */
static int cmd_env(int argc, char **argv) {
        if (argc < 1)
                return usage_error("env MARKER NAME...");
        char names[2048] = "";
        size_t used = 0;
        for (char **e = environ; e && *e; e++) {
                size_t kl = strcspn(*e, "=");
                if (strstr(*e, argv[0]))
                        return ESCAPED("the host's secret is in the environment: %.*s=...", (int)kl, *e);
                bool ok = false;
                for (int i = 1; i < argc; i++)
                        if (strlen(argv[i]) == kl && strncmp(argv[i], *e, kl) == 0)
                                ok = true;
                if (!ok)
                        return ESCAPED("variable %.*s is not on the allowlist", (int)kl, *e);
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%.*s", used ? "," : "", (int)kl, *e);
                if (used >= sizeof names)
                        used = sizeof names - 1;
        }
        return BLOCKED("environment: %s", names);
}

/* devices: no GPU nodes, no /sys (no_gpu = true). */
static int cmd_devices(int argc, char **argv) {
        static const char *const prefixes[] = { "nvidia", "dri", "kfd", "renderD", "card" };
        DIR *d = opendir("/dev");
        if (d) {
                struct dirent *de;
                while ((de = readdir(d)))
                        for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
                                if (strncmp(de->d_name, prefixes[i], strlen(prefixes[i])) == 0) {
                                        closedir(d);
                                        return ESCAPED("/dev/%s is present", de->d_name);
                                }
                closedir(d);
        }
        struct stat st;
        if (stat("/sys", &st) == 0)
                return ESCAPED("/sys is present");
        return BLOCKED("no GPU nodes in /dev, no /sys");
}

/* tiocsti: push a character into a terminal: on stdin, on the controlling
 * terminal if any, and on a fresh pty. */
static int cmd_tiocsti(int argc, char **argv) {
        char c = '#';
        char detail[512] = "";
        size_t used = 0;
        int fds[3] = { 0, -1, -1 };
        const char *names[3] = { "stdin", "/dev/tty", "a pty" };
        fds[1] = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (fds[1] < 0)
                used += (size_t)snprintf(detail + used, sizeof detail - used, "open(/dev/tty): %s; ", errname(errno));
        int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0) {
                const char *slave = ptsname(master);
                if (slave)
                        fds[2] = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
        }
        for (int i = 0; i < 3; i++) {
                if (fds[i] < 0)
                        continue;
                if (ioctl(fds[i], TIOCSTI, &c) == 0)
                        return ESCAPED("ioctl(%s, TIOCSTI) pushed a character", names[i]);
                int e = errno;
                if (e != EPERM)
                        return ESCAPED("ioctl(%s, TIOCSTI): %s, not EPERM: the filter did not stop it", names[i],
                                       errname(e));
                used += (size_t)snprintf(detail + used, sizeof detail - used, "ioctl(%s, TIOCSTI): EPERM; ", names[i]);
                if (used >= sizeof detail)
                        used = sizeof detail - 1;
        }
        if (master >= 0)
                close(master);
        return BLOCKED("%s", detail);
}

/* ---- the seccomp denylist (docs/seccomp-table.md) ------------------------------- */

enum { G_ALWAYS = 1, G_NET_OFF = 2, G_LOCKDOWN = 4 };

typedef struct Row {
        const char *name;
        int group;
        int expect; /* EPERM, or ENOSYS for clone3 */
        long (*call)(void);
} Row;

static long sc(long nr, long a, long b, long c, long d, long e, long f) {
        return syscall(nr, a, b, c, d, e, f);
}
#define P(x) ((long)(uintptr_t)(x))
#define ROW(nm, grp, exp) { #nm, grp, exp, call_##nm }
#define DEF(nm, expr) \
        static long call_##nm(void) { return (expr); }

#ifdef SYS_create_module
DEF(create_module, sc(SYS_create_module, P(BAD_PTR), 0, 0, 0, 0, 0))
#endif
#ifdef SYS_get_kernel_syms
DEF(get_kernel_syms, sc(SYS_get_kernel_syms, P(BAD_PTR), 0, 0, 0, 0, 0))
#endif
#ifdef SYS_query_module
DEF(query_module, sc(SYS_query_module, P(BAD_PTR), 0, 0, 0, 0, 0))
#endif
#ifdef SYS_vm86
DEF(vm86, sc(SYS_vm86, 0, P(BAD_PTR), 0, 0, 0, 0))
#endif
#ifdef SYS_vm86old
DEF(vm86old, sc(SYS_vm86old, P(BAD_PTR), 0, 0, 0, 0, 0))
#endif
#ifdef SYS_nfsservctl
DEF(nfsservctl, sc(SYS_nfsservctl, 0, P(BAD_PTR), P(BAD_PTR), 0, 0, 0))
#endif
#ifdef SYS_uselib
DEF(uselib, sc(SYS_uselib, P(BAD_PTR), 0, 0, 0, 0, 0))
#endif
#ifdef SYS__sysctl
DEF(_sysctl, sc(SYS__sysctl, P(BAD_PTR), 0, 0, 0, 0, 0))
#endif
#ifdef SYS_sysfs
DEF(sysfs, sc(SYS_sysfs, 1, P(BAD_PTR), 0, 0, 0, 0))
#endif
#ifdef SYS_ustat
DEF(ustat, sc(SYS_ustat, 0, P(BAD_PTR), 0, 0, 0, 0))
#endif
#ifdef SYS_ioperm
DEF(ioperm, sc(SYS_ioperm, 0, 0, 0, 0, 0, 0))
#endif
#ifdef SYS_iopl
DEF(iopl, sc(SYS_iopl, 0, 0, 0, 0, 0, 0))
#endif
#ifdef SYS_modify_ldt
DEF(modify_ldt, sc(SYS_modify_ldt, 0, P(BAD_PTR), 16, 0, 0, 0))
#endif
#ifdef SYS_stime
DEF(stime, sc(SYS_stime, P(BAD_PTR), 0, 0, 0, 0, 0))
#endif

DEF(init_module, sc(SYS_init_module, P(BAD_PTR), 0, P(""), 0, 0, 0))
DEF(finit_module, sc(SYS_finit_module, -1, P(""), 0, 0, 0, 0))
DEF(delete_module, sc(SYS_delete_module, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(kexec_load, sc(SYS_kexec_load, 0, 0, 0, 0, 0, 0))
#ifdef SYS_kexec_file_load
DEF(kexec_file_load, sc(SYS_kexec_file_load, -1, -1, 0, 0, 0, 0))
#endif
/* A bad magic: EINVAL if it ever reached the kernel's reboot code. */
DEF(reboot, sc(SYS_reboot, 0, 0, 0, 0, 0, 0))
DEF(bpf, sc(SYS_bpf, 0, P(BAD_PTR), 16, 0, 0, 0))
DEF(perf_event_open, sc(SYS_perf_event_open, P(BAD_PTR), 0, -1, -1, 0, 0))
DEF(userfaultfd, sc(SYS_userfaultfd, O_CLOEXEC, 0, 0, 0, 0, 0))
DEF(io_uring_setup, sc(SYS_io_uring_setup, 1, P(BAD_PTR), 0, 0, 0, 0))
DEF(io_uring_enter, sc(SYS_io_uring_enter, -1, 0, 0, 0, 0, 0))
DEF(io_uring_register, sc(SYS_io_uring_register, -1, 0, 0, 0, 0, 0))
/* kcmp of a process with itself succeeds when allowed. */
DEF(kcmp, sc(SYS_kcmp, getpid(), getpid(), 0 /* KCMP_FILE */, 0, 0, 0))
DEF(lookup_dcookie, sc(SYS_lookup_dcookie, 0, P(BAD_PTR), 16, 0, 0, 0))
/* SYSLOG_ACTION_SIZE_BUFFER succeeds when allowed and dmesg is not restricted. */
DEF(syslog, sc(SYS_syslog, 10, 0, 0, 0, 0, 0))
DEF(acct, sc(SYS_acct, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(mbind, sc(SYS_mbind, 0, 0, 0, 0, 0, 0))
DEF(set_mempolicy, sc(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, 0, 0, 0, 0, 0))
DEF(set_mempolicy_home_node, sc(SYS_set_mempolicy_home_node, 0, 0, 0, 0, 0, 0))
DEF(migrate_pages, sc(SYS_migrate_pages, 0, 0, 0, 0, 0, 0))
DEF(move_pages, sc(SYS_move_pages, 0, 0, 0, 0, 0, 0))
DEF(mount, sc(SYS_mount, P("none"), P("/tmp"), P("tmpfs"), 0, 0, 0))
DEF(umount2, sc(SYS_umount2, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(mount_setattr, sc(SYS_mount_setattr, -1, P(BAD_PTR), 0, 0, 0, 0))
DEF(move_mount, sc(SYS_move_mount, -1, P(BAD_PTR), -1, P(BAD_PTR), 0, 0))
DEF(open_tree, sc(SYS_open_tree, -1, P(BAD_PTR), 0, 0, 0, 0))
DEF(open_tree_attr, sc(SYS_open_tree_attr, -1, P(BAD_PTR), 0, 0, 0, 0))
DEF(fsopen, sc(SYS_fsopen, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(fsconfig, sc(SYS_fsconfig, -1, 0, 0, 0, 0, 0))
DEF(fsmount, sc(SYS_fsmount, -1, 0, 0, 0, 0, 0))
DEF(fspick, sc(SYS_fspick, -1, P(BAD_PTR), 0, 0, 0, 0))
DEF(pivot_root, sc(SYS_pivot_root, P(BAD_PTR), P(BAD_PTR), 0, 0, 0, 0))
DEF(chroot, sc(SYS_chroot, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(swapon, sc(SYS_swapon, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(swapoff, sc(SYS_swapoff, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(quotactl, sc(SYS_quotactl, 0, P(BAD_PTR), 0, 0, 0, 0))
DEF(quotactl_fd, sc(SYS_quotactl_fd, -1, 0, 0, 0, 0, 0))
DEF(open_by_handle_at, sc(SYS_open_by_handle_at, -1, P(BAD_PTR), 0, 0, 0, 0))
/* name_to_handle_at on "/" succeeds when allowed (given real buffers). */
static long call_name_to_handle_at(void) {
        struct {
                unsigned int bytes;
                int type;
                unsigned char h[128];
        } fh = { .bytes = 128 };
        int mnt;
        return sc(SYS_name_to_handle_at, AT_FDCWD, P("/"), P(&fh), P(&mnt), 0, 0);
}
DEF(fanotify_init, sc(SYS_fanotify_init, 0, 0, 0, 0, 0, 0))
/* PTRACE_TRACEME succeeds for any process when allowed. */
DEF(ptrace, sc(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0, 0, 0))
/* Zero iovecs on ourselves: returns 0 when allowed. */
DEF(process_vm_readv, sc(SYS_process_vm_readv, getpid(), 0, 0, 0, 0, 0))
DEF(process_vm_writev, sc(SYS_process_vm_writev, getpid(), 0, 0, 0, 0, 0))
DEF(pidfd_getfd, sc(SYS_pidfd_getfd, -1, 0, 0, 0, 0, 0))
DEF(unshare, sc(SYS_unshare, CLONE_NEWUSER, 0, 0, 0, 0, 0))
DEF(setns, sc(SYS_setns, -1, 0, 0, 0, 0, 0))
/* clone with a new user namespace: fork-like when allowed (the child exits
 * at once), so the parent reaps it. */
static long call_clone_newuser(void) {
        long r = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L);
        if (r == 0)
                _exit(0);
        if (r > 0) {
                int e = 0;
                waitpid((pid_t)r, &e, 0);
        }
        return r;
}
static long call_clone_newns(void) {
        long r = syscall(SYS_clone, (long)(CLONE_NEWNS | SIGCHLD), 0L, 0L, 0L, 0L);
        if (r == 0)
                _exit(0);
        if (r > 0) {
                int e = 0;
                waitpid((pid_t)r, &e, 0);
        }
        return r;
}
DEF(clone3, sc(SYS_clone3, P(BAD_PTR), 88, 0, 0, 0, 0))
/* READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE; the persona is put back. */
static long call_personality_rie(void) {
        long r = syscall(SYS_personality, 0x0400000L);
        int e = errno;
        syscall(SYS_personality, 0L);
        errno = e;
        return r;
}
static long call_personality_norandom(void) {
        long r = syscall(SYS_personality, 0x0040000L);
        int e = errno;
        syscall(SYS_personality, 0L);
        errno = e;
        return r;
}
DEF(vhangup, sc(SYS_vhangup, 0, 0, 0, 0, 0, 0))
DEF(settimeofday, sc(SYS_settimeofday, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(clock_settime, sc(SYS_clock_settime, CLOCK_REALTIME, P(BAD_PTR), 0, 0, 0, 0))
DEF(clock_adjtime, sc(SYS_clock_adjtime, CLOCK_REALTIME, P(BAD_PTR), 0, 0, 0, 0))
DEF(adjtimex, sc(SYS_adjtimex, P(BAD_PTR), 0, 0, 0, 0, 0))
DEF(add_key, sc(SYS_add_key, P(BAD_PTR), P(BAD_PTR), 0, 0, 0, 0))
DEF(request_key, sc(SYS_request_key, P(BAD_PTR), P(BAD_PTR), 0, 0, 0, 0))
/* KEYCTL_GET_KEYRING_ID of the user keyring (shared with the host user)
 * succeeds when allowed. */
DEF(keyctl, sc(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -4 /* KEY_SPEC_USER_KEYRING */, 0, 0, 0, 0))
DEF(ioctl_TIOCSTI, sc(SYS_ioctl, -1, TIOCSTI, P("x"), 0, 0, 0))
/* CVE-2019-10063: the kernel ignores the upper 32 bits of the request. */
DEF(ioctl_TIOCSTI_high_bits, sc(SYS_ioctl, -1, (long)((0x123UL << 32) | TIOCSTI), P("x"), 0, 0, 0))
DEF(ioctl_TIOCLINUX, sc(SYS_ioctl, -1, TIOCLINUX, P(BAD_PTR), 0, 0, 0))
DEF(fcntl_SETLEASE, sc(SYS_fcntl, -1, 1024 /* F_SETLEASE */, 1 /* F_WRLCK */, 0, 0, 0))
DEF(ioctl_TIOCSETD, sc(SYS_ioctl, -1, TIOCSETD, P(BAD_PTR), 0, 0, 0))

static long sock(int family, int type, int proto) {
        int fd = socket(family, type | SOCK_CLOEXEC, proto);
        if (fd >= 0)
                close(fd);
        return fd;
}
DEF(socket_AF_PACKET, sock(AF_PACKET, SOCK_RAW, 0))
DEF(socket_AF_PACKET_dgram, sock(AF_PACKET, SOCK_DGRAM, 0))
DEF(socket_AF_VSOCK, sock(AF_VSOCK, SOCK_STREAM, 0))
DEF(socket_AF_INET_SOCK_RAW, sock(AF_INET, SOCK_RAW, IPPROTO_ICMP))
DEF(socket_AF_INET6_SOCK_RAW, sock(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6))
DEF(socket_NETLINK_AUDIT, sock(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT))
DEF(socket_NETLINK_SOCK_DIAG, sock(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG))
DEF(socket_NETLINK_KOBJECT_UEVENT, sock(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT))
DEF(socket_NETLINK_ROUTE, sock(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE))
DEF(socket_AF_INET, sock(AF_INET, SOCK_STREAM, 0))
DEF(socket_AF_INET_udp, sock(AF_INET, SOCK_DGRAM, 0))
DEF(socket_AF_INET6, sock(AF_INET6, SOCK_STREAM, 0))
DEF(socket_AF_BLUETOOTH, sock(AF_BLUETOOTH, SOCK_STREAM, 0))
DEF(socket_AF_ALG, sock(AF_ALG, SOCK_SEQPACKET, 0))
DEF(socket_AF_UNSPEC, sock(AF_UNSPEC, SOCK_STREAM, 0))
DEF(mincore, sc(SYS_mincore, 0, 4096, P(BAD_PTR), 0, 0, 0))

#define A G_ALWAYS
static const Row rows[] = {
        ROW(init_module, A, EPERM),
        ROW(finit_module, A, EPERM),
        ROW(delete_module, A, EPERM),
#ifdef SYS_create_module
        ROW(create_module, A, EPERM),
#endif
#ifdef SYS_get_kernel_syms
        ROW(get_kernel_syms, A, EPERM),
#endif
#ifdef SYS_query_module
        ROW(query_module, A, EPERM),
#endif
        ROW(kexec_load, A, EPERM),
#ifdef SYS_kexec_file_load
        ROW(kexec_file_load, A, EPERM),
#endif
        ROW(reboot, A, EPERM),
        ROW(bpf, A, EPERM),
        ROW(perf_event_open, A, EPERM),
        ROW(userfaultfd, A, EPERM),
        ROW(io_uring_setup, A, EPERM),
        ROW(io_uring_enter, A, EPERM),
        ROW(io_uring_register, A, EPERM),
        ROW(kcmp, A, EPERM),
        ROW(lookup_dcookie, A, EPERM),
        ROW(syslog, A, EPERM),
        ROW(acct, A, EPERM),
#ifdef SYS_ioperm
        ROW(ioperm, A, EPERM),
#endif
#ifdef SYS_iopl
        ROW(iopl, A, EPERM),
#endif
#ifdef SYS_modify_ldt
        ROW(modify_ldt, A, EPERM),
#endif
#ifdef SYS_vm86
        ROW(vm86, A, EPERM),
#endif
#ifdef SYS_vm86old
        ROW(vm86old, A, EPERM),
#endif
#ifdef SYS_nfsservctl
        ROW(nfsservctl, A, EPERM),
#endif
#ifdef SYS_uselib
        ROW(uselib, A, EPERM),
#endif
#ifdef SYS__sysctl
        ROW(_sysctl, A, EPERM),
#endif
#ifdef SYS_sysfs
        ROW(sysfs, A, EPERM),
#endif
#ifdef SYS_ustat
        ROW(ustat, A, EPERM),
#endif
        ROW(mbind, A, EPERM),
        ROW(set_mempolicy, A, EPERM),
        ROW(set_mempolicy_home_node, A, EPERM),
        ROW(migrate_pages, A, EPERM),
        ROW(move_pages, A, EPERM),
        ROW(mount, A, EPERM),
        ROW(umount2, A, EPERM),
        ROW(mount_setattr, A, EPERM),
        ROW(move_mount, A, EPERM),
        ROW(open_tree, A, EPERM),
        ROW(open_tree_attr, A, EPERM),
        ROW(fsopen, A, EPERM),
        ROW(fsconfig, A, EPERM),
        ROW(fsmount, A, EPERM),
        ROW(fspick, A, EPERM),
        ROW(pivot_root, A, EPERM),
        ROW(chroot, A, EPERM),
        ROW(swapon, A, EPERM),
        ROW(swapoff, A, EPERM),
        ROW(quotactl, A, EPERM),
        ROW(quotactl_fd, A, EPERM),
        ROW(open_by_handle_at, A, EPERM),
        ROW(name_to_handle_at, A, EPERM),
        ROW(fanotify_init, A, EPERM),
        ROW(ptrace, A, EPERM),
        ROW(process_vm_readv, A, EPERM),
        ROW(process_vm_writev, A, EPERM),
        ROW(pidfd_getfd, A, EPERM),
        ROW(unshare, A, EPERM),
        ROW(setns, A, EPERM),
        ROW(clone_newuser, A, EPERM),
        ROW(clone_newns, A, EPERM),
        ROW(clone3, A, ENOSYS),
        ROW(personality_rie, A, EPERM),
        ROW(personality_norandom, A, EPERM),
        ROW(vhangup, A, EPERM),
        ROW(settimeofday, A, EPERM),
        ROW(clock_settime, A, EPERM),
        ROW(clock_adjtime, A, EPERM),
        ROW(adjtimex, A, EPERM),
#ifdef SYS_stime
        ROW(stime, A, EPERM),
#endif
        ROW(add_key, A, EPERM),
        ROW(request_key, A, EPERM),
        ROW(keyctl, A, EPERM),
        ROW(ioctl_TIOCSTI, A, EPERM),
        ROW(ioctl_TIOCSTI_high_bits, A, EPERM),
        ROW(ioctl_TIOCLINUX, A, EPERM),
        ROW(fcntl_SETLEASE, A, EPERM),
        ROW(socket_AF_PACKET, A, EPERM),
        ROW(socket_AF_PACKET_dgram, A, EPERM),
        ROW(socket_AF_VSOCK, A, EPERM),
        ROW(socket_AF_INET_SOCK_RAW, A, EPERM),
        ROW(socket_AF_INET6_SOCK_RAW, A, EPERM),
        ROW(socket_NETLINK_AUDIT, A, EPERM),
        ROW(socket_NETLINK_SOCK_DIAG, A, EPERM),
        ROW(socket_NETLINK_KOBJECT_UEVENT, A, EPERM),
        ROW(socket_NETLINK_ROUTE, G_NET_OFF, EPERM),
        ROW(socket_AF_INET, G_LOCKDOWN, EPERM),
        ROW(socket_AF_INET_udp, G_LOCKDOWN, EPERM),
        ROW(socket_AF_INET6, G_LOCKDOWN, EPERM),
        ROW(ioctl_TIOCSETD, G_LOCKDOWN, EPERM),
        ROW(socket_AF_BLUETOOTH, G_LOCKDOWN, EPERM),
        ROW(socket_AF_ALG, G_LOCKDOWN, EPERM),
        ROW(socket_AF_UNSPEC, G_LOCKDOWN, EPERM),
        ROW(mincore, G_LOCKDOWN, EPERM),
};
#undef A

/* syscalls GROUP...: GROUP is always, net-off or lockdown. One line per
 * row: "BLOCKED: name: EPERM" or "ESCAPED: name: ...". */
static int cmd_syscalls(int argc, char **argv) {
        int groups = 0;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "always") == 0)
                        groups |= G_ALWAYS;
                else if (strcmp(argv[i], "net-off") == 0)
                        groups |= G_NET_OFF;
                else if (strcmp(argv[i], "lockdown") == 0)
                        groups |= G_LOCKDOWN;
                else
                        return usage_error("syscalls [always] [net-off] [lockdown]");
        }
        if (!groups)
                groups = G_ALWAYS;
        int escaped = 0;
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
                if (!(rows[i].group & groups))
                        continue;
                errno = 0;
                long r = rows[i].call();
                int e = errno;
                if (r == -1 && e == rows[i].expect)
                        say("BLOCKED", "%s: %s", rows[i].name, errname(e));
                else if (r == -1)
                        escaped |= 1, say("ESCAPED", "%s: %s, not %s: the filter did not answer", rows[i].name,
                                          errname(e), errname(rows[i].expect));
                else
                        escaped |= 1, say("ESCAPED", "%s: returned %ld", rows[i].name, r);
        }
        return escaped;
}

/* ---- other syscall ABIs (peer cases: the seccomp filter and the i386 / x32 entries) -- */

/* compat i386|x32 [control|sigsys]: the denied calls through the other system-call
 * entries an x86_64 process can reach (int $0x80 as i386, the x32 bit).
 * Each call's arguments are such that the kernel itself would answer
 * something other than EPERM or ENOSYS had the filter let it through. Each
 * runs in a child: the filter may kill it (SIGSYS) instead of answering. */
#if defined(__x86_64__)
typedef struct Compat {
        const char *name;
        long i386_nr, x32_nr; /* -1: none in that ABI */
        long a, b, c, d, e;
} Compat;

static long int80(long nr, long a, long b, long c, long d, long e) {
        long r;
        __asm__ volatile("int $0x80"
                         : "=a"(r)
                         : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
                         : "memory", "r8", "r9", "r10", "r11", "cc");
        return r;
}

static int compat_one(const Compat *row, bool x32, bool sigsys_only) {
        long nr = x32 ? row->x32_nr : row->i386_nr;
        if (nr < 0)
                return 0;
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
                return ESCAPED("%s: fork: %s", row->name, errname(errno));
        if (pid == 0) {
                long r;
                if (x32) {
                        r = syscall(nr | 0x40000000L, row->a, row->b, row->c, row->d, row->e, 0L);
                        r = r == -1 ? -errno : r;
                } else
                        r = int80(nr, row->a, row->b, row->c, row->d, row->e);
                if (!sigsys_only && (r == -EPERM || r == -ENOSYS))
                        _exit(BLOCKED("%s: %s", row->name, errname((int) -r)));
                if (r < 0 && r > -4096)
                        _exit(ESCAPED("%s: %s: the filter did not answer", row->name, errname((int) -r)));
                _exit(ESCAPED("%s: returned %ld", row->name, r));
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return ESCAPED("%s: waitpid: %s", row->name, errname(errno));
        if (WIFSIGNALED(st))
                return WTERMSIG(st) == SIGSYS ? BLOCKED("%s: killed by SIGSYS", row->name)
                                              : ESCAPED("%s: killed by signal %d, not by the filter", row->name,
                                                        WTERMSIG(st));
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int cmd_compat(int argc, char **argv) {
        if (argc < 1 || argc > 2 || (strcmp(argv[0], "i386") != 0 && strcmp(argv[0], "x32") != 0) ||
            (argc == 2 && strcmp(argv[1], "control") != 0 && strcmp(argv[1], "sigsys") != 0))
                return usage_error("compat i386|x32 [control|sigsys]");
        bool x32 = strcmp(argv[0], "x32") == 0;
        static const Compat compat_rows[] = {
                { "unshare", 310, 272, 0, 0, 0, 0, 0 },                     /* 0 if it ran */
                { "setns", 346, 308, -1, 0, 0, 0, 0 },                      /* EBADF */
                { "mount", 21, 165, 0, 0, 0, 0, 0 },                        /* EFAULT */
                { "ptrace", 26, 521, 0x7fff, 0, 0, 0, 0 },                  /* ESRCH */
                { "keyctl", 288, 250, 9999, 0, 0, 0, 0 },                   /* EOPNOTSUPP */
                { "add_key", 286, 248, 0, 0, 0, 0, 0 },                     /* EFAULT */
                { "request_key", 287, 249, 0, 0, 0, 0, 0 },                 /* EFAULT */
                { "bpf", 357, 321, 9999, 0, 0, 0, 0 },                      /* EINVAL */
                { "userfaultfd", 374, 323, 0x11, 0, 0, 0, 0 },              /* EINVAL */
                { "perf_event_open", 336, 298, 0, 0, -1, -1, 0 },           /* EFAULT */
                { "io_uring_setup", 425, 425, 1, 0, 0, 0, 0 },              /* EFAULT */
                { "kcmp", 349, 312, 0, 0, 9999, 0, 0 },                     /* ESRCH/EINVAL */
                { "process_vm_readv", 347, 539, 0, 0, 0, 0, 0 },            /* ESRCH */
                { "pidfd_getfd", 438, 438, -1, 0, 0, 0, 0 },                /* EBADF */
                { "open_tree", 428, 428, -1, 0, 0, 0, 0 },                  /* EFAULT */
                { "name_to_handle_at", 341, 303, -1, 0, 0, 0, 0 },          /* EFAULT */
                { "chroot", 61, 161, 0, 0, 0, 0, 0 },                       /* EFAULT */
                { "personality_rie", 136, 135, 0x0400000, 0, 0, 0, 0 },     /* the old persona */
                { "socket_AF_ALG", 359, 41, 38, 5, 0, 0, 0 },               /* a descriptor */
                { "socket_AF_VSOCK", 359, 41, 40, 1, 0, 0, 0 },             /* a descriptor or EAFNOSUPPORT */
                { "socket_NETLINK_AUDIT", 359, 41, 16, 3, 9, 0, 0 },        /* a descriptor */
                { "ioctl_TIOCSTI", 54, 514, 0, 0x5412, 0, 0, 0 },            /* EFAULT/ENOTTY/EIO */
        };
        /* sigsys: only the filter's kill counts (a kernel without the x32
         * entry answers ENOSYS itself, after a filter that let it through). */
        bool sigsys_only = argc == 2 && strcmp(argv[1], "sigsys") == 0;
        if (argc == 2 && !sigsys_only) {
                /* The control, run outside the jail by the test: getpid
                 * through that entry. A kernel without it (ia32_emulation=0,
                 * no x32) kills or answers ENOSYS; inside the jail the filter
                 * kills it either way, so it tells nothing there. */
                fflush(stdout);
                pid_t pid = fork();
                if (pid < 0)
                        return ESCAPED("fork: %s", errname(errno));
                if (pid == 0) {
                        long r = x32 ? syscall(39 | 0x40000000L) : int80(20, 0, 0, 0, 0, 0);
                        _exit(r == (long) getpid() ? 0 : 3);
                }
                int st;
                while (waitpid(pid, &st, 0) < 0)
                        if (errno != EINTR)
                                return ESCAPED("waitpid: %s", errname(errno));
                if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                        printf("ABI: %s\n", argv[0]);
                        return 0;
                }
                printf("SKIP: this kernel has no %s system-call entry (getpid through it %s)\n",
                       x32 ? "x32" : "i386", WIFSIGNALED(st) ? "was killed" : "failed");
                return 3;
        }
        int escaped = 0;
        for (size_t i = 0; i < sizeof compat_rows / sizeof *compat_rows; i++)
                escaped |= compat_one(&compat_rows[i], x32, sigsys_only);
        return escaped;
}
#else
static int cmd_compat(int argc, char **argv) {
        (void) argc, (void) argv;
        printf("SKIP: the i386 and x32 entries exist on x86_64 only\n");
        return 3;
}
#endif

/* ---- main ----------------------------------------------------------------------- */

typedef struct Cmd {
        const char *name;
        int (*run)(int argc, char **argv);
} Cmd;

static int cmd_unix_path(int argc, char **argv) {
        return cmd_unix(argc, argv, false);
}
static int cmd_unix_abstract(int argc, char **argv) {
        return cmd_unix(argc, argv, true);
}

static const Cmd cmds[] = {
        { "read", cmd_read },         { "ls", cmd_ls },
        { "write", cmd_write },       { "openw", cmd_openw },
        { "mkdir", cmd_mkdir },       { "mkfifo", cmd_mknod },
        { "unlink", cmd_unlink },     { "rename", cmd_rename },
        { "swap-dir", cmd_swap_dir }, { "hardlink", cmd_hardlink },
        { "status", cmd_status },     { "uidmap", cmd_uidmap },
        { "procs", cmd_procs },       { "kill", cmd_kill },
        { "kill-all", cmd_kill_all }, { "worker-mem", cmd_worker_mem },
        { "worker-fds", cmd_worker_fds },
        { "unix", cmd_unix_path },    { "abstract", cmd_unix_abstract },
        { "tcp", cmd_tcp },           { "udp", cmd_udp },
        { "ifaces", cmd_ifaces },     { "env", cmd_env },
        { "loopback", cmd_loopback },  { "proxy-connect", cmd_proxy_connect },
        { "devices", cmd_devices },   { "tiocsti", cmd_tiocsti },
        { "syscalls", cmd_syscalls }, { "privfile", cmd_privfile }, { "chown", cmd_chown },
        { "nosuid", cmd_nosuid },     { "alg", cmd_alg },
        { "compat", cmd_compat },
};

int main(int argc, char **argv) {
        if (argc < 2)
                return usage_error("usage: vectora-probe ATTEMPT [ARG...]");
        for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
                if (strcmp(argv[1], cmds[i].name) == 0)
                        return cmds[i].run(argc - 2, argv + 2);
        return usage_error("unknown attempt");
}
