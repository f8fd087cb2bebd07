/* SPDX-License-Identifier: MIT */
/* The seccomp denylist and its compiler.
 *
 * libseccomp is reached only through dlopen(): its absence must degrade the
 * sandbox, never stop the daemon from starting, and the static worker must
 * never depend on it. For the same reason <seccomp.h> is not needed to build:
 * the few types and constants used are declared below (libseccomp's ABI has
 * been stable under the soname libseccomp.so.2 since 2.0). The unit tests
 * load the compiled programs and exercise every action, comparison and
 * attribute declared here. Since nothing links -lseccomp, a direct call by
 * mistake fails to link instead of silently adding a hard dependency. (The
 * system header cannot simply be included for a cross-check: this
 * directory's own seccomp.h shadows it.) */
#include "seccomp.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"

/* ---- libseccomp ABI, declared locally ---------------------------------- */

#define VS_SCMP_ACT_KILL_PROCESS 0x80000000U
#define VS_SCMP_ACT_KILL_THREAD 0x00000000U
#define VS_SCMP_ACT_ERRNO(x) (0x00050000U | ((uint32_t)(x)&0x0000ffffU))
#define VS_SCMP_ACT_ALLOW 0x7fff0000U

#define VS_SCMP_FLTATR_ACT_BADARCH 2
#define VS_SCMP_FLTATR_CTL_OPTIMIZE 8

#define VS_NR_SCMP_ERROR (-1)

enum {
        VS_SCMP_CMP_NE = 1,
        VS_SCMP_CMP_LT = 2,
        VS_SCMP_CMP_LE = 3,
        VS_SCMP_CMP_EQ = 4,
        VS_SCMP_CMP_GE = 5,
        VS_SCMP_CMP_GT = 6,
        VS_SCMP_CMP_MASKED_EQ = 7,
};

typedef struct VsScmpArgCmp {
        unsigned int arg;
        int op; /* enum scmp_compare: int-sized */
        uint64_t datum_a;
        uint64_t datum_b;
} VsScmpArgCmp;


typedef struct Lib {
        void *handle;
        void *(*init)(uint32_t def_action);
        void (*release)(void *ctx);
        int (*attr_set)(void *ctx, int attr, uint32_t value);
        int (*resolve_name)(const char *name);
        int (*rule_add_array)(void *ctx, uint32_t action, int syscall, unsigned int arg_cnt,
                              const VsScmpArgCmp *arg_array);
        int (*export_bpf)(const void *ctx, int fd);
} Lib;

/* ---- the denylist ------------------------------------------------------- */

/* Constants that older libc headers may lack. */
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef NETLINK_ROUTE
#define NETLINK_ROUTE 0
#endif

/* clone's flags are its first argument except on s390, where the first two
 * arguments are swapped. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

typedef enum When {
        WHEN_ALWAYS,
        WHEN_NET_OFF,  /* network = false (forced by lockdown) */
        WHEN_LOCKDOWN, /* lockdown = true only */
} When;

typedef enum Cond {
        COND_NONE,
        COND_ARG_EQ32,         /* (args[arg] & 0xffffffff) == value, as the kernel truncates ints */
        COND_PERSONALITY,      /* any persona but Docker's harmless ones */
        COND_CLONE_NS,         /* any CLONE_NEW* flag */
        COND_SOCK_RAW,         /* SOCK_RAW on any family but AF_NETLINK */
        COND_NETLINK_NOT_ROUTE,
        COND_FAMILY_NOT_ALLOWED, /* families other than unix, inet, inet6, netlink */
        COND_MODE_SETID,       /* args[arg] (a mode) has S_ISUID or S_ISGID */
        COND_MODE_DEVICE,      /* args[arg] (a mode) is S_IFCHR or S_IFBLK */
        COND_CHOWN_IDS,        /* args[arg] (uid) or args[arg + 1] (gid) is neither the jail's own nor -1 */
        COND_MODE_OTHER_WRITE, /* args[arg] (a mode) has S_IWOTH */
        COND_MASK_NO_OTHER_WRITE, /* args[arg] (a umask) lacks S_IWOTH */
        COND_MODE_SEARCH_NO_READ, /* args[arg] (a mode) has S_IXUSR without S_IRUSR */
        COND_MASK_NO_OWNER_READ,  /* args[arg] (a umask) takes S_IRUSR but leaves S_IXUSR */
} Cond;

typedef struct Entry {
        const char *syscall;
        int errno_value;
        When when;
        Cond cond;
        unsigned arg;
        uint64_t value;
        /* Native number to use when the loaded libseccomp is older than the
         * syscall. Syscalls from 424 on share one number on every
         * architecture but alpha and mips, so it is only used elsewhere. */
        int fallback_nr;
        const char *threat;
} Entry;

#define F_SETLEASE_CMD 1024 /* F_LINUX_SPECIFIC_BASE + 0 */
#define DENY(name, threat) { name, EPERM, WHEN_ALWAYS, COND_NONE, 0, 0, 0, threat }
#define DENY_NEW(name, nr, threat) { name, EPERM, WHEN_ALWAYS, COND_NONE, 0, 0, nr, threat }
#define DENY_ARG(name, when, arg, value, threat) { name, EPERM, when, COND_ARG_EQ32, arg, value, 0, threat }
#define DENY_IF(name, when, cond, threat) { name, EPERM, when, cond, 0, 0, 0, threat }
#define DENY_LOCKDOWN(name, threat) { name, EPERM, WHEN_LOCKDOWN, COND_NONE, 0, 0, 0, threat }
#define DENY_MODE(name, cond, arg, nr, threat) { name, EPERM, WHEN_ALWAYS, cond, arg, 0, nr, threat }
/* The four calls that change a mode (the mode's register in each). */
#define DENY_CHMODS(cond, threat)                                                   \
        DENY_MODE("chmod", cond, 1, 0, threat), DENY_MODE("fchmod", cond, 1, 0, threat), \
                DENY_MODE("fchmodat", cond, 2, 0, threat), DENY_MODE("fchmodat2", cond, 2, 452, threat)
#define DENY_CHOWN(name, uid_arg, threat) { name, EPERM, WHEN_ALWAYS, COND_CHOWN_IDS, uid_arg, 0, 0, threat }

static const Entry entries[] = {
        /* Kernel code and kernel state. */
        DENY("init_module", "load a kernel module from memory: arbitrary kernel code"),
        DENY("finit_module", "load a kernel module from a file: arbitrary kernel code"),
        DENY("delete_module", "unload modules the host depends on"),
        DENY("create_module", "obsolete module interface (gone since 2.6); exists only on old kernels"),
        DENY("get_kernel_syms", "obsolete module interface; leaked kernel symbol addresses"),
        DENY("query_module", "obsolete module interface; leaked kernel symbol addresses"),
        DENY("kexec_load", "replace the running kernel"),
        DENY("kexec_file_load", "replace the running kernel"),
        DENY("reboot", "reboot or halt the host, toggle Ctrl-Alt-Del"),
        DENY("bpf", "load eBPF programs: verifier bugs are a common kernel exploit path"),
        DENY("perf_event_open", "profile the kernel and host; large exploit surface, kernel address leaks"),
        DENY("userfaultfd", "stall page faults at will: used to win kernel race conditions"),
        DENY_NEW("io_uring_setup", 425, "io_uring: large exploit surface, and its opcodes bypass this filter"),
        DENY_NEW("io_uring_enter", 426, "io_uring: large exploit surface, and its opcodes bypass this filter"),
        DENY_NEW("io_uring_register", 427, "io_uring: large exploit surface, and its opcodes bypass this filter"),
        DENY("kcmp", "compare kernel objects of two processes: kernel pointer ordering leak"),
        DENY("lookup_dcookie", "resolve profiling cookies to host paths"),
        DENY("syslog", "read or clear the kernel log: kernel addresses, host activity"),
        DENY("acct", "switch host-wide process accounting on or off"),
        DENY("ioperm", "direct I/O port access"),
        DENY("iopl", "direct I/O port access and interrupt control"),
        DENY("modify_ldt", "x86 LDT: repeated source of kernel exploits, no modern use"),
        DENY("vm86", "i386 virtual 8086 mode: old exploit surface"),
        DENY("vm86old", "i386 virtual 8086 mode: old exploit surface"),
        DENY("nfsservctl", "obsolete NFS server control (gone since 3.1)"),
        DENY("uselib", "obsolete a.out library loader; old exploit surface"),
        DENY("_sysctl", "obsolete binary sysctl (gone since 5.5)"),
        DENY("sysfs", "obsolete filesystem-type query; no use but probing"),
        DENY("ustat", "obsolete filesystem statistics by device number"),
        /* NUMA placement: Docker allows these only with CAP_SYS_NICE. A few
         * numerical runtimes call them and fall back when refused. */
        DENY("mbind", "NUMA memory policy: pins or migrates pages, host memory pressure"),
        DENY("set_mempolicy", "NUMA memory policy for the process"),
        DENY_NEW("set_mempolicy_home_node", 450, "NUMA memory policy for a range"),
        DENY("migrate_pages", "move another process's pages between NUMA nodes"),
        DENY("move_pages", "move pages between NUMA nodes; historically leaked other processes' layout"),

        /* The mount table and the filesystem behind the jail's back. */
        DENY("mount", "change the mount table: uncover masked paths, remount read-only binds writable"),
        DENY("umount2", "unmount the masks laid over secrets"),
        DENY_NEW("mount_setattr", 442, "make read-only mounts writable"),
        DENY_NEW("move_mount", 429, "new mount API: attach mounts, uncover masked paths"),
        DENY_NEW("open_tree", 428, "new mount API: clone mount trees"),
        DENY_NEW("open_tree_attr", 467, "new mount API: clone mount trees with new attributes"),
        DENY_NEW("fsopen", 430, "new mount API: create a filesystem context"),
        DENY_NEW("fsconfig", 431, "new mount API: configure a filesystem (parser exploit surface)"),
        DENY_NEW("fsmount", 432, "new mount API: create a mount"),
        DENY_NEW("fspick", 433, "new mount API: reconfigure an existing mount"),
        DENY("pivot_root", "swap the root filesystem"),
        DENY("chroot", "change root: classic escape with a directory fd kept outside"),
        DENY("swapon", "change host swap"),
        DENY("swapoff", "change host swap"),
        DENY("quotactl", "change filesystem quotas"),
        DENY_NEW("quotactl_fd", 443, "change filesystem quotas"),
        DENY("open_by_handle_at", "open any inode of a mounted filesystem by handle, bypassing the mount namespace (the 'shocker' escape)"),
        DENY("name_to_handle_at", "obtain file handles for open_by_handle_at; inode information leak"),
        DENY("fanotify_init", "watch or intercept file access filesystem-wide"),

        /* No file the jail creates may grant privileges to whoever runs or
         * opens it later on the host: a root-owned workspace is written
         * through an idmapped mount, so what the jail creates is root's on
         * disk, and `chmod 4755` there would leave a setuid-root program.
         * The mode is an argument register in every variant but openat2. */
        DENY_CHMODS(COND_MODE_SETID, "set a setuid/setgid bit: a privileged program left on the host"),
        DENY_MODE("open", COND_MODE_SETID, 2, 0, "create a file already setuid/setgid (O_CREAT with mode 04755)"),
        DENY_MODE("openat", COND_MODE_SETID, 3, 0, "create a file already setuid/setgid (O_CREAT with mode 04755)"),
        DENY_MODE("creat", COND_MODE_SETID, 1, 0, "create a file already setuid/setgid"),
        DENY_MODE("mknod", COND_MODE_SETID, 1, 0, "create a regular file already setuid/setgid"),
        DENY_MODE("mknodat", COND_MODE_SETID, 2, 0, "create a regular file already setuid/setgid"),
        /* World-writable: any local user could then plant in what the host
         * runs or trusts (a .git made 0777 by a root-owned workspace's jail
         * let another user replace its config, and root's git ran it). The
         * umask keeps S_IWOTH too (the worker sets it), so nothing is made
         * world-writable either. */
        DENY_CHMODS(COND_MODE_OTHER_WRITE, "make a file world-writable: any local user may then plant in it"),
        /* Not an error but 0, "the old mask was 0", with the mask left as it
         * was: umask() cannot fail, and tools that clear it (tar as root)
         * took -1 for a mask and made everything mode 0. */
        { "umask", 0, WHEN_ALWAYS, COND_MASK_NO_OTHER_WRITE, 0, 0, 0,
          "a umask without o-w: files made world-writable from then on (answered 0, the mask kept)" },
        /* A directory its owner may look up in but not list (0300): a
         * daemon run as the jail's user can then neither watch nor walk
         * it, while the jail still opens names in it, and can turn it
         * readable again at will: what the host writes there (a .pem) or
         * plants for the host's git would go unseen. The daemon masks such
         * a directory whole when it meets one (watch.c, mask-walk.c); the
         * jail cannot make one. */
#define UNLISTABLE "make a directory its owner can enter but not list: hidden from the daemon's watch"
        DENY_CHMODS(COND_MODE_SEARCH_NO_READ, UNLISTABLE),
        DENY_MODE("mkdir", COND_MODE_SEARCH_NO_READ, 1, 0, UNLISTABLE),
        DENY_MODE("mkdirat", COND_MODE_SEARCH_NO_READ, 2, 0, UNLISTABLE),
#undef UNLISTABLE
        { "umask", 0, WHEN_ALWAYS, COND_MASK_NO_OWNER_READ, 0, 0, 0,
          "a umask that takes u+r but leaves u+x: directories made unlistable to the daemon (answered 0, the mask kept)" },
        DENY_MODE("mknod", COND_MODE_DEVICE, 1, 0, "create a device node: raw access to a disk or device for whoever opens it"),
        DENY_MODE("mknodat", COND_MODE_DEVICE, 2, 0, "create a device node: raw access to a disk or device for whoever opens it"),
        { "openat2", ENOSYS, WHEN_ALWAYS, COND_NONE, 0, 0, 437,
          "its flags and mode sit in memory seccomp cannot inspect; ENOSYS makes callers fall back to openat" },
        /* xattr names sit in memory too, so user.* (harmless) cannot be
         * told from security.capability, security.* or trusted.*: no
         * setting at all (EOPNOTSUPP, as on a filesystem without xattrs,
         * which tools already expect: cp -a, tar, shutil.copy2). Reading
         * the name would need a supervisor (SECCOMP_RET_USER_NOTIF) that
         * performs the call itself from its own copy of the name, as
         * letting the kernel continue after a check races the agent's
         * other threads; Landlock has no xattr right. */
        { "setxattr", EOPNOTSUPP, WHEN_ALWAYS, COND_NONE, 0, 0, 0,
          "security.capability: file capabilities granted to whoever runs the file" },
        { "lsetxattr", EOPNOTSUPP, WHEN_ALWAYS, COND_NONE, 0, 0, 0,
          "security.capability: file capabilities granted to whoever runs the file" },
        { "fsetxattr", EOPNOTSUPP, WHEN_ALWAYS, COND_NONE, 0, 0, 0,
          "security.capability: file capabilities granted to whoever runs the file" },
        { "setxattrat", EOPNOTSUPP, WHEN_ALWAYS, COND_NONE, 0, 0, 463,
          "security.capability: file capabilities granted to whoever runs the file" },
        /* Ownership. Without CAP_CHOWN the kernel lets an owner "change"
         * the owner only to itself and the group only to one of its own
         * groups; the filter narrows that to the jail's own uid and gid
         * (or -1, "unchanged"), which every file the jail creates has
         * anyway: build scripts and installers (chown $(id -u):$(id -g),
         * install -o, tar --same-owner) call chown with them and fail on
         * EPERM. Refused: any other id, a supplementary group the host may
         * trust (docker, an ssh remote without bwrap keep them) included.
         * The ids are compared as the kernel reads them (uid_t, 32 bits).
         * Without the jail's ids (options.own_ids false) every chown is
         * refused. */
        DENY_CHOWN("chown", 1, "give a file to another owner or group (any id but the jail's own or -1)"),
        DENY_CHOWN("lchown", 1, "give a file to another owner or group (any id but the jail's own or -1)"),
        DENY_CHOWN("fchown", 1, "give a file to another owner or group (any id but the jail's own or -1)"),
        DENY_CHOWN("fchownat", 2, "give a file to another owner or group (any id but the jail's own or -1)"),
        DENY_CHOWN("chown32", 1, "give a file to another owner or group (any id but the jail's own or -1)"),
        DENY_CHOWN("lchown32", 1, "give a file to another owner or group (any id but the jail's own or -1)"),
        DENY_CHOWN("fchown32", 1, "give a file to another owner or group (any id but the jail's own or -1)"),

        /* Other processes, namespaces, mitigations. */
        DENY("ptrace", "read and rewrite other processes in the jail (the worker included)"),
        DENY("process_vm_readv", "read another process's memory (the worker's)"),
        DENY("process_vm_writev", "write another process's memory (the worker's)"),
        DENY_NEW("pidfd_getfd", 438, "steal another process's file descriptors (the worker's socket)"),
        DENY("unshare", "new namespaces: a user namespace grants capabilities over a large kernel surface"),
        DENY("setns", "join another namespace through a file descriptor"),
        DENY_IF("clone", WHEN_ALWAYS, COND_CLONE_NS, "clone with CLONE_NEW* flags: the same namespaces as unshare"),
        { "clone3", ENOSYS, WHEN_ALWAYS, COND_NONE, 0, 0, 435,
          "its flags sit in memory seccomp cannot inspect; ENOSYS makes libc fall back to clone" },
        DENY_IF("personality", WHEN_ALWAYS, COND_PERSONALITY,
                "personas other than Linux/Linux32/UNAME26 and the query: ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC weaken mitigations"),
        DENY("vhangup", "hang up the terminal"),

        /* Host clock. */
        DENY("settimeofday", "set the host clock"),
        DENY("clock_settime", "set the host clock"),
        DENY("clock_adjtime", "set or slew the host clock"),
        DENY("adjtimex", "set or slew the host clock"),
        DENY("stime", "set the host clock"),

        /* Kernel keyrings are not namespaced. */
        DENY("add_key", "kernel keyring: shared with the host user, exploit surface"),
        DENY("request_key", "kernel keyring: shared with the host user, upcalls to host helpers"),
        DENY("keyctl", "kernel keyring: read or join keyrings shared with the host user"),

        /* Terminals. The kernel reads ioctl's request as a 32-bit int. */
        DENY_ARG("ioctl", WHEN_ALWAYS, 1, TIOCSTI, "TIOCSTI: push input into a terminal, i.e. type commands into the host's shell"),
        DENY_ARG("ioctl", WHEN_ALWAYS, 1, TIOCLINUX, "TIOCLINUX: console selection paste, the same injection on virtual consoles"),
        DENY_ARG("ioctl", WHEN_LOCKDOWN, 1, TIOCSETD, "TIOCSETD: switch line discipline, loading rarely used kernel code (n_gsm, n_hdlc CVEs)"),

        /* File leases: the jail owns the workspace's files, and a lease on
         * one holds other processes' opens of it (the user's editor
         * blocked for the lease-break time, 45 s; a non-blocking open
         * refused), again and again (attack review 7b, through a view). */
        DENY_ARG("fcntl", WHEN_ALWAYS, 1, F_SETLEASE_CMD, "F_SETLEASE: a lease on a workspace file holds other processes' opens of it (the user's editor blocked for the lease-break time, 45 s), again and again"),
        DENY_ARG("fcntl64", WHEN_ALWAYS, 1, F_SETLEASE_CMD, "F_SETLEASE: the same through fcntl64 (32-bit)"),

        /* Sockets. The kernel reads family, type and protocol as ints.
         * Only unix, inet, inet6 and netlink are ever allowed: AF_PACKET
         * (raw frames), AF_VSOCK (the hypervisor, outside any network
         * namespace), AF_ALG (the kernel crypto API, a repeated exploit
         * path), bluetooth, can, tipc, rds, xdp and the rest serve no agent. */
        DENY_IF("socket", WHEN_ALWAYS, COND_FAMILY_NOT_ALLOWED,
                "families other than unix, inet, inet6, netlink (packet, vsock, alg, bluetooth, can, tipc, rds...): exploit surface, raw frames, the hypervisor"),
        DENY_IF("socket", WHEN_ALWAYS, COND_SOCK_RAW, "SOCK_RAW (but netlink): forge IP packets"),
        DENY_IF("socket", WHEN_ALWAYS, COND_NETLINK_NOT_ROUTE,
                "netlink other than NETLINK_ROUTE: audit, uevents, sock_diag (lists the host's sockets), netfilter, xfrm"),
        DENY_ARG("socket", WHEN_NET_OFF, 0, AF_NETLINK, "network off: no netlink at all"),
        /* With the network off (or an allowlist) the jail's own namespace has
         * only its loopback, which a test suite needs (servers on 127.0.0.1);
         * the empty namespace is what keeps the host's network out. */
        DENY_ARG("socket", WHEN_LOCKDOWN, 0, AF_INET, "lockdown: no IPv4 sockets at all, not even the jail's own loopback"),
        DENY_ARG("socket", WHEN_LOCKDOWN, 0, AF_INET6, "lockdown: no IPv6 sockets at all, not even the jail's own loopback"),

        /* Lockdown only: rare legitimate uses. */
        DENY_LOCKDOWN("mincore", "page-cache residency of shared files: a side channel on the host's activity"),
};

static pthread_once_t rules_once = PTHREAD_ONCE_INIT;
static VsSeccompRule rules[ELEMENTSOF(entries)];

static void rules_build(void) {
        for (size_t i = 0; i < ELEMENTSOF(entries); i++)
                rules[i] = (VsSeccompRule) {
                        .syscall = entries[i].syscall,
                        .errno_value = entries[i].errno_value,
                        .threat = entries[i].threat,
                        .lockdown_only = entries[i].when == WHEN_LOCKDOWN,
                        .conditional = entries[i].cond != COND_NONE,
                };
}

const VsSeccompRule *seccomp_rules(size_t *ret_n) {
        pthread_once(&rules_once, rules_build);
        if (ret_n)
                *ret_n = ELEMENTSOF(rules);
        return rules;
}

/* ---- loading libseccomp --------------------------------------------------- */

static const char *lib_path(void) {
        const char *p = secure_getenv(VS_LIBSECCOMP_ENV);
        return p && *p ? p : "libseccomp.so.2";
}

static void lib_close(Lib *lib) {
        if (lib->handle)
                dlclose(lib->handle);
        *lib = (Lib) {};
}

static int lib_open(Lib *ret, VsError **err) {
        const char *path = lib_path();
        Lib lib = {};

        lib.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib.handle) {
                const char *why = dlerror();
                size_t n = strlen(path);
                /* dlerror() usually starts with the path already. */
                if (why && strncmp(why, path, n) == 0 && strncmp(why + n, ": ", 2) == 0)
                        why += n + 2;
                return vs_error_set(err, -ELIBACC,
                                    "libseccomp could not be loaded (%s: %s); install libseccomp2 (apt-get install libseccomp2)",
                                    path, why ?: "unknown error");
        }

#define RESOLVE(field, sym)                                                              \
        do {                                                                             \
                *(void **)&lib.field = dlsym(lib.handle, sym);                           \
                if (!lib.field) {                                                        \
                        lib_close(&lib);                                                 \
                        return vs_error_set(err, -ELIBACC,                               \
                                            "libseccomp could not be loaded (%s: no symbol %s); " \
                                            "install libseccomp2 (apt-get install libseccomp2)", \
                                            path, sym);                                  \
                }                                                                        \
        } while (0)

        RESOLVE(init, "seccomp_init");
        RESOLVE(release, "seccomp_release");
        RESOLVE(attr_set, "seccomp_attr_set");
        RESOLVE(resolve_name, "seccomp_syscall_resolve_name");
        RESOLVE(rule_add_array, "seccomp_rule_add_array");
        RESOLVE(export_bpf, "seccomp_export_bpf");
#undef RESOLVE

        *ret = lib;
        return 0;
}

static pthread_mutex_t available_lock = PTHREAD_MUTEX_INITIALIZER;
static char *available_path;
static bool available_result;

bool seccomp_available(void) {
        /* Cached per path so that a changed VECTORA_LIBSECCOMP is honoured. */
        const char *path = lib_path();
        bool result;

        pthread_mutex_lock(&available_lock);
        if (available_path && streq(available_path, path))
                result = available_result;
        else {
                Lib lib;
                result = lib_open(&lib, NULL) >= 0;
                if (result)
                        lib_close(&lib);
                free(available_path);
                available_path = strdup(path);
                available_result = result;
        }
        pthread_mutex_unlock(&available_lock);
        return result;
}

/* ---- compiling ---------------------------------------------------------- */

static void ctx_releasep(Lib *lib, void **ctx) {
        if (*ctx)
                lib->release(*ctx);
        *ctx = NULL;
}

static int add(const Lib *lib, void *ctx, const Entry *e, int nr, unsigned n, const VsScmpArgCmp *cmp,
               VsError **err) {
        int r = lib->rule_add_array(ctx, VS_SCMP_ACT_ERRNO(e->errno_value), nr, n, cmp);
        if (r < 0)
                return vs_error_set(err, r, "seccomp rule for %s: %s", e->syscall, strerror(-r));
        return 0;
}

static VsScmpArgCmp masked_eq(unsigned arg, uint64_t mask, uint64_t value) {
        return (VsScmpArgCmp) { .arg = arg, .op = VS_SCMP_CMP_MASKED_EQ, .datum_a = mask, .datum_b = value };
}

static int add_personality(const Lib *lib, void *ctx, const Entry *e, int nr, VsError **err) {
        /* Allowed, as in Docker's profile: PER_LINUX (0), PER_LINUX32 (8),
         * UNAME26 (0x20000), both (0x20008), and the query 0xffffffff. A rule
         * may compare an argument only once, so "not one of these" is built
         * from single masked comparisons on the low 32 bits (the kernel reads
         * an unsigned int), each of the form "bit b set and bit c clear":
         * along a cycle through the 30 bits other than 3 and 17, any value
         * with some of those bits set and some clear has a 1 followed by a 0;
         * values with all 30 set are the query itself or have bit 3 or 17
         * clear, caught by the last two rules. None matches an allowed
         * value: each needs a bit outside {3, 17} set and some bit clear. */
        unsigned bits[30], nbits = 0;
        for (unsigned b = 0; b < 32; b++)
                if (b != 3 && b != 17)
                        bits[nbits++] = b;

        for (unsigned i = 0; i < nbits; i++) {
                uint64_t set = UINT64_C(1) << bits[i], clear = UINT64_C(1) << bits[(i + 1) % nbits];
                VsScmpArgCmp c = masked_eq(0, set | clear, set);
                int r = add(lib, ctx, e, nr, 1, &c, err);
                if (r < 0)
                        return r;
        }
        const unsigned special[] = { 3, 17 };
        for (size_t i = 0; i < ELEMENTSOF(special); i++) {
                VsScmpArgCmp c = masked_eq(0, (UINT64_C(1) << special[i]) | 1, 1);
                int r = add(lib, ctx, e, nr, 1, &c, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

_Static_assert(AF_UNIX == 1 && AF_INET == 2 && AF_INET6 == 10 && AF_NETLINK == 16, "socket family numbering");

/* Denies when the low 32 bits of args[arg] (what the kernel reads as a
 * uid_t or gid_t) are neither own nor 0xffffffff (-1, "unchanged"). A rule
 * may compare an argument only once, and equality is all a masked
 * comparison gives, so "not one of two values" is a cover by masked rules:
 * one per bit set in own ("this bit clear": not own, and not -1), and,
 * along a cycle through the bits clear in own, "this bit set and the next
 * clear": not own (a bit own lacks), not -1 (a clear bit). A value outside
 * both with no clear bit where own has one set has the bits clear in own
 * neither all clear (it would be own) nor all set (it would be -1), so
 * somewhere on the cycle a set bit is followed by a clear one. 32 rules,
 * the fewest possible: each of the 32 values one bit away from own needs a
 * rule of its own. High garbage is ignored, as by the kernel: Go passes -1
 * as 0xffffffffffffffff. */
static int add_not_id(const Lib *lib, void *ctx, const Entry *e, int nr, unsigned arg, uint32_t own,
                      VsError **err) {
        unsigned clear[32], nclear = 0;
        int r;
        for (unsigned b = 0; b < 32; b++) {
                if (own & (UINT32_C(1) << b)) {
                        VsScmpArgCmp c = masked_eq(arg, UINT64_C(1) << b, 0);
                        if ((r = add(lib, ctx, e, nr, 1, &c, err)) < 0)
                                return r;
                } else
                        clear[nclear++] = b;
        }
        /* With one clear bit the cycle would be that bit alone, and the
         * rule "set and clear" would read "set", matching -1: a single
         * clear bit can only be own's value or -1's, nothing to deny. */
        for (unsigned i = 0; nclear >= 2 && i < nclear; i++) {
                uint64_t set = UINT64_C(1) << clear[i], next = UINT64_C(1) << clear[(i + 1) % nclear];
                VsScmpArgCmp c = masked_eq(arg, set | next, set);
                if ((r = add(lib, ctx, e, nr, 1, &c, err)) < 0)
                        return r;
        }
        return 0;
}

/* On architectures with chown32 (i386, arm...), plain chown, lchown and
 * fchown take 16-bit ids (0xffff is -1 there): they stay refused, libc
 * uses the 32-bit calls. */
static bool chown_16bit(const Lib *lib, const Entry *e) {
        return strstr(e->syscall, "32") == NULL && !streq(e->syscall, "fchownat") &&
               lib->resolve_name("chown32") >= 0;
}

static int add_entry(const Lib *lib, void *ctx, const Entry *e, int nr, const VsSeccompOptions *o, VsError **err) {
        static const uint64_t ns_flags[] = {
                CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP,
        };
        static const int lt_gt[] = { VS_SCMP_CMP_LT, VS_SCMP_CMP_GT };
        VsScmpArgCmp c[2];
        int r;

        switch (e->cond) {
        case COND_NONE:
                return add(lib, ctx, e, nr, 0, NULL, err);

        case COND_ARG_EQ32:
                c[0] = masked_eq(e->arg, 0xffffffffu, e->value);
                return add(lib, ctx, e, nr, 1, c, err);

        case COND_PERSONALITY:
                return add_personality(lib, ctx, e, nr, err);

        case COND_CLONE_NS:
                for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
                        c[0] = masked_eq(CLONE_FLAGS_ARG, ns_flags[i], ns_flags[i]);
                        r = add(lib, ctx, e, nr, 1, c, err);
                        if (r < 0)
                                return r;
                }
                return 0;

        case COND_SOCK_RAW:
                /* The socket type is the low 4 bits; SOCK_NONBLOCK and
                 * SOCK_CLOEXEC sit above them. Netlink sockets are SOCK_RAW
                 * by convention (getifaddrs, ip); their protocols are
                 * filtered separately. "Family != AF_NETLINK" is written as
                 * two rules, < and >, because libseccomp 2.5.4 miscompiles
                 * SCMP_CMP_NE followed by a deeper comparison when the
                 * syscall has other rules (the accumulator is not reloaded
                 * for the next rule). A family with high bits set compares
                 * greater, which only denies more. */
                for (size_t i = 0; i < ELEMENTSOF(lt_gt); i++) {
                        c[0] = (VsScmpArgCmp) { .arg = 0, .op = lt_gt[i], .datum_a = AF_NETLINK };
                        c[1] = masked_eq(1, 0xf, SOCK_RAW);
                        r = add(lib, ctx, e, nr, 2, c, err);
                        if (r < 0)
                                return r;
                }
                return 0;

        case COND_NETLINK_NOT_ROUTE:
                /* protocol != NETLINK_ROUTE (0), as "> 0" for the reason
                 * above; high garbage only denies more. */
                c[0] = masked_eq(0, 0xffffffffu, AF_NETLINK);
                c[1] = (VsScmpArgCmp) { .arg = 2, .op = VS_SCMP_CMP_GT, .datum_a = NETLINK_ROUTE };
                return add(lib, ctx, e, nr, 2, c, err);

        case COND_FAMILY_NOT_ALLOWED:
                /* Allowed: AF_UNIX (1), AF_INET (2), AF_INET6 (10),
                 * AF_NETLINK (16). Everything at or above 17 in 64 bits,
                 * high garbage included, plus each gap below. */
                for (uint64_t f = 0; f < 17; f++) {
                        if (f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK)
                                continue;
                        c[0] = (VsScmpArgCmp) { .arg = 0, .op = VS_SCMP_CMP_EQ, .datum_a = f };
                        r = add(lib, ctx, e, nr, 1, c, err);
                        if (r < 0)
                                return r;
                }
                c[0] = (VsScmpArgCmp) { .arg = 0, .op = VS_SCMP_CMP_GE, .datum_a = 17 };
                return add(lib, ctx, e, nr, 1, c, err);

        case COND_MODE_SETID:
        case COND_MODE_DEVICE: {
                /* Setid: either bit alone (bits above the 16 the kernel
                 * reads only deny more when they match). Device: the file
                 * type is a character or block device. */
                static const uint64_t setid[2][2] = { { S_ISUID, S_ISUID }, { S_ISGID, S_ISGID } };
                static const uint64_t device[2][2] = { { S_IFMT, S_IFCHR }, { S_IFMT, S_IFBLK } };
                const uint64_t (*rows)[2] = e->cond == COND_MODE_SETID ? setid : device;
                for (size_t i = 0; i < 2; i++) {
                        c[0] = masked_eq(e->arg, rows[i][0], rows[i][1]);
                        if ((r = add(lib, ctx, e, nr, 1, c, err)) < 0)
                                return r;
                }
                return 0;
        }

        case COND_MODE_OTHER_WRITE:
                c[0] = masked_eq(e->arg, S_IWOTH, S_IWOTH);
                return add(lib, ctx, e, nr, 1, c, err);

        case COND_MASK_NO_OTHER_WRITE:
                c[0] = masked_eq(e->arg, S_IWOTH, 0);
                return add(lib, ctx, e, nr, 1, c, err);

        case COND_MODE_SEARCH_NO_READ:
                c[0] = masked_eq(e->arg, S_IRUSR | S_IXUSR, S_IXUSR);
                return add(lib, ctx, e, nr, 1, c, err);

        case COND_MASK_NO_OWNER_READ:
                c[0] = masked_eq(e->arg, S_IRUSR | S_IXUSR, S_IRUSR);
                return add(lib, ctx, e, nr, 1, c, err);

        case COND_CHOWN_IDS:
                if (!o->own_ids || chown_16bit(lib, e))
                        return add(lib, ctx, e, nr, 0, NULL, err);
                if ((r = add_not_id(lib, ctx, e, nr, e->arg, o->uid, err)) < 0)
                        return r;
                return add_not_id(lib, ctx, e, nr, e->arg + 1, o->gid, err);
        }
        return vs_error_set(err, -EINVAL, "seccomp rule for %s: unknown condition", e->syscall);
}

/* An entry of the setid guard (VsSeccompOptions.setid_only). */
static bool setid_guard_entry(const Entry *e) {
        return e->cond == COND_MODE_SETID || streq(e->syscall, "openat2") || strncmp(e->syscall, "io_uring_", 9) == 0;
}

static bool entry_applies(const Entry *e, const VsSeccompOptions *o) {
        switch (e->when) {
        case WHEN_ALWAYS:
                return true;
        case WHEN_NET_OFF:
                /* Lockdown forces the network off, whatever the options say. */
                return !o->network || o->lockdown;
        case WHEN_LOCKDOWN:
                return o->lockdown;
        }
        return true;
}

/* The native number of a syscall, or -ENOENT when the architecture does not
 * have it (libseccomp reports those as negative pseudo numbers). */
static int resolve(const Lib *lib, const Entry *e, VsError **err) {
        int nr = lib->resolve_name(e->syscall);
        if (nr >= 0)
                return nr;
        if (nr != VS_NR_SCMP_ERROR)
                return -ENOENT;
#if !defined(__alpha__) && !defined(__mips__)
        if (e->fallback_nr > 0)
                return e->fallback_nr;
#endif
        return vs_error_set(err, -ENOSYS, "the loaded libseccomp does not know the syscall %s; upgrade libseccomp2",
                            e->syscall);
}

static int export(const Lib *lib, void *ctx, void **ret_bpf, size_t *ret_len, VsError **err) {
        /* libseccomp 2.5 can only write the program to a descriptor
         * (seccomp_export_bpf_mem() arrived in 2.6); a memfd keeps one code
         * path for every version. */
        _cleanup_close_ int fd = memfd_create("vectora-seccomp", MFD_CLOEXEC);
        if (fd < 0) {
                int e = negative_errno();
                return vs_error_set(err, e, "seccomp: memfd_create: %s", strerror(-e));
        }

        int r = lib->export_bpf(ctx, fd);
        if (r < 0)
                return vs_error_set(err, r, "seccomp_export_bpf: %s", strerror(-r));
        if (lseek(fd, 0, SEEK_SET) < 0) {
                int e = negative_errno();
                return vs_error_set(err, e, "seccomp: lseek: %s", strerror(-e));
        }

        _cleanup_free_ char *bpf = NULL;
        size_t len = 0;
        r = read_fd_all(fd, BPF_MAXINSNS * sizeof(struct sock_filter), &bpf, &len);
        if (r == -EFBIG)
                return vs_error_set(err, -E2BIG, "seccomp: program longer than %d instructions", BPF_MAXINSNS);
        if (r < 0)
                return vs_error_set(err, r, "seccomp: reading the compiled program: %s", strerror(-r));
        if (len == 0 || len % sizeof(struct sock_filter) != 0)
                return vs_error_set(err, -EBADMSG, "seccomp: compiled program has %zu bytes", len);

        *ret_bpf = TAKE_PTR(bpf);
        *ret_len = len;
        return 0;
}

/* libseccomp loaded and a filter begun with def as its default action.
 * Only the native architecture is in the filter: libseccomp kills on any
 * other audit arch (i386 via int 0x80 on x86_64) and, for x86_64, also on
 * x32 syscall numbers (>= __X32_SYSCALL_BIT), which share x86_64's audit
 * arch. Tests check both. */
static int open_ctx(Lib *lib, uint32_t def, void **ret_ctx, VsError **err) {
        int r = lib_open(lib, err);
        if (r < 0)
                return r;
        void *ctx = lib->init(def);
        if (!ctx) {
                lib_close(lib);
                return vs_error_set(err, -ENOMEM, "seccomp_init failed");
        }
        /* Kill the whole process, not only the thread, on a foreign arch;
         * libseccomp before API level 3 only has thread kill. */
        r = lib->attr_set(ctx, VS_SCMP_FLTATR_ACT_BADARCH, VS_SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                r = lib->attr_set(ctx, VS_SCMP_FLTATR_ACT_BADARCH, VS_SCMP_ACT_KILL_THREAD);
        if (r < 0) {
                r = vs_error_set(err, r, "seccomp: setting the bad-arch action: %s", strerror(-r));
                ctx_releasep(lib, &ctx);
                lib_close(lib);
                return r;
        }
        *ret_ctx = ctx;
        return 0;
}

int seccomp_compile(const VsSeccompOptions *o, void **ret_bpf, size_t *ret_len, VsError **err) {
        if (!o || !ret_bpf || !ret_len)
                return vs_error_set(err, -EINVAL, "seccomp_compile: missing argument");

        Lib lib;
        void *ctx = NULL;
        int r = open_ctx(&lib, VS_SCMP_ACT_ALLOW, &ctx, err);
        if (r < 0)
                return r;
        /* With a default of allow, every allowed syscall walks the whole
         * list; a binary tree keeps that short on kernels without the
         * seccomp action cache (< 5.11). Best effort: older libseccomp lacks it. */
        (void) lib.attr_set(ctx, VS_SCMP_FLTATR_CTL_OPTIMIZE, 2);

        for (size_t i = 0; i < ELEMENTSOF(entries); i++) {
                const Entry *e = &entries[i];
                if (!entry_applies(e, o) || (o->setid_only && !setid_guard_entry(e)))
                        continue;
                int nr = resolve(&lib, e, err);
                if (nr == -ENOENT)
                        continue; /* not on this architecture */
                if (nr < 0) {
                        r = nr;
                        goto finish;
                }
                r = add_entry(&lib, ctx, e, nr, o, err);
                if (r < 0)
                        goto finish;
        }

        r = export(&lib, ctx, ret_bpf, ret_len, err);
finish:
        ctx_releasep(&lib, &ctx);
        lib_close(&lib);
        return r;
}

/* ---- an allowlist (the network proxy's) ---------------------------------------- */

int seccomp_compile_allowlist(const VsSeccompAllow *allow, size_t n, void **ret_bpf, size_t *ret_len,
                              VsError **err) {
        Lib lib;
        void *ctx = NULL;
        int r = open_ctx(&lib, VS_SCMP_ACT_ERRNO(EPERM), &ctx, err);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const VsSeccompAllow *a = &allow[i];
                int nr = lib.resolve_name(a->syscall);
                if (nr == VS_NR_SCMP_ERROR || nr < 0)
                        continue; /* not on this architecture (open, poll on arm64...) */
                VsScmpArgCmp cmp = { .arg = (unsigned)a->arg, .op = VS_SCMP_CMP_MASKED_EQ, .datum_a = a->mask,
                                     .datum_b = a->value };
                r = lib.rule_add_array(ctx, a->errno_value ? VS_SCMP_ACT_ERRNO(a->errno_value) : VS_SCMP_ACT_ALLOW,
                                       nr, a->arg >= 0 ? 1 : 0, &cmp);
                if (r < 0)
                        r = vs_error_set(err, r, "seccomp: allowing %s: %s", a->syscall, strerror(-r));
        }
        if (r >= 0)
                r = export(&lib, ctx, ret_bpf, ret_len, err);
        ctx_releasep(&lib, &ctx);
        lib_close(&lib);
        return r;
}
