/* SPDX-License-Identifier: MIT */
#include "jail-argv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend-local.h"
#include "forbidden.h"
#include "macro.h"
#include "path-util.h"

typedef enum OptKind {
        OPT_FLAG,     /* no argument */
        OPT_CAP_DROP, /* ALL, nothing else */
        OPT_UID,      /* the rules' uid, in decimal */
        OPT_GID,
        OPT_TEXT,     /* --hostname: any text */
        OPT_SETENV,   /* a name (no '=') and a value */
        OPT_RO,       /* --ro-bind SRC DST */
        OPT_RW,       /* --bind SRC DST */
        OPT_DEV,      /* --dev-bind SRC DST: a GPU's device node, at its own path */
        OPT_SYMLINK,  /* --symlink TARGET DST: the target is resolved in the jail */
        OPT_PROC,     /* --proc /proc */
        OPT_DEVFS,    /* --dev /dev */
        OPT_TMPFS,    /* --tmpfs DST */
        OPT_CHDIR,    /* --chdir DIR (in the jail) */
} OptKind;

/* What a plan renders (backend-local.c), nothing else: none of bwrap's
 * options that take a descriptor (--seccomp, --file, --userns, --args,
 * --sync-fd, ...), add a capability, share a namespace back, or change a
 * mount's flags is here. required: the jail is no jail without it. */
static const struct {
        const char *name;
        unsigned nargs;
        OptKind kind;
        bool required;
} opts[] = {
        { "--unshare-user", 0, OPT_FLAG, true },
        { "--disable-userns", 0, OPT_FLAG, true },
        { "--unshare-pid", 0, OPT_FLAG, true },
        { "--unshare-ipc", 0, OPT_FLAG, true },
        { "--unshare-uts", 0, OPT_FLAG, true },
        { "--unshare-cgroup", 0, OPT_FLAG, true },
        { "--unshare-net", 0, OPT_FLAG, false },
        { "--as-pid-1", 0, OPT_FLAG, true },
        { "--die-with-parent", 0, OPT_FLAG, true },
        { "--new-session", 0, OPT_FLAG, true },
        { "--clearenv", 0, OPT_FLAG, true },
        { "--cap-drop", 1, OPT_CAP_DROP, true },
        { "--uid", 1, OPT_UID, true },
        { "--gid", 1, OPT_GID, true },
        { "--hostname", 1, OPT_TEXT, false },
        { "--setenv", 2, OPT_SETENV, false },
        { "--ro-bind", 2, OPT_RO, false },
        { "--bind", 2, OPT_RW, false },
        { "--dev-bind", 2, OPT_DEV, false },
        { "--symlink", 2, OPT_SYMLINK, false },
        { "--proc", 1, OPT_PROC, false },
        { "--dev", 1, OPT_DEVFS, false },
        { "--tmpfs", 1, OPT_TMPFS, false },
        { "--chdir", 1, OPT_CHDIR, false },
};

static int refuse(char *why, size_t n, const char *fmt, ...) _printf_(3, 4);
static int refuse(char *why, size_t n, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        if (n)
                vsnprintf(why, n, fmt, ap);
        va_end(ap);
        return -EPERM;
}

/* Absolute and normal: no empty, "." or ".." component, no trailing
 * slash but the root's. */
static bool plain_abs(const char *p) {
        if (p[0] != '/')
                return false;
        if (!p[1])
                return true;
        for (const char *c = p + 1;;) {
                size_t k = strcspn(c, "/");
                if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[k])
                        return true;
                c += k + 1;
        }
}

/* A ".." component anywhere in p. */
static bool has_dotdot(const char *p) {
        for (const char *c = p;; c++) {
                if (c[0] == '.' && c[1] == '.' && (c == p || c[-1] == '/') && (c[2] == '/' || c[2] == 0))
                        return true;
                if (!*c)
                        return false;
        }
}

/* A GPU's node (backend_local_probe's /dev/nvidia*, /dev/dri, /dev/kfd). */
static bool gpu_node(const char *p) {
        static const char *const prefixes[] = { "nvidia", "dri", "kfd" };
        const char *rest = path_startswith(p, "/dev");
        if (!rest || !*rest)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncmp(rest, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

/* A directory right below homes (the owner's kept home). */
static bool kept_home(const char *src, const char *homes) {
        const char *rest = homes ? path_startswith(src, homes) : NULL;
        return rest && *rest && !strchr(rest, '/');
}

static bool is_decimal(const char *s, unsigned long v) {
        char want[24];
        snprintf(want, sizeof want, "%lu", v);
        return streq(s, want);
}

int jail_argv_check(char *const *argv, const JailArgvRules *rules, char *why, size_t n) {
        if (!argv || !argv[0] || !rules->bwrap || !streq(argv[0], rules->bwrap))
                return refuse(why, n, "its program is not %s, the bwrap the monitor found", rules->bwrap ? rules->bwrap : "(none)");
        bool seen[ELEMENTSOF(opts)] = { false };
        /* The worker's bind: where in argv, and whether one came. */
        size_t worker_at = 0;
        /* The links made so far (their paths in the jail). */
        const char *links[64];
        size_t n_links = 0;
        size_t i = 1;
        for (; argv[i] && !streq(argv[i], "--"); i++) {
                size_t o = 0;
                while (o < ELEMENTSOF(opts) && !streq(argv[i], opts[o].name))
                        o++;
                if (o == ELEMENTSOF(opts))
                        return refuse(why, n, "argument %zu (%.64s) is no option a jail's plan uses", i, argv[i]);
                for (unsigned k = 1; k <= opts[o].nargs; k++)
                        if (!argv[i + k])
                                return refuse(why, n, "%s at argument %zu lacks its value", opts[o].name, i);
                const char *a = opts[o].nargs ? argv[i + 1] : NULL, *b = opts[o].nargs > 1 ? argv[i + 2] : NULL;
                /* The destination in the jail, for the mounts. */
                const char *dst = NULL;
                seen[o] = true;
                switch (opts[o].kind) {
                case OPT_FLAG:
                case OPT_TEXT:
                        break;
                case OPT_CAP_DROP:
                        if (!streq(a, "ALL"))
                                return refuse(why, n, "--cap-drop %.64s: a jail drops ALL", a);
                        break;
                case OPT_UID:
                case OPT_GID:
                        if (!is_decimal(a, opts[o].kind == OPT_UID ? (unsigned long)rules->uid : (unsigned long)rules->gid))
                                return refuse(why, n, "%s %.32s is not the id the request named", opts[o].name, a);
                        break;
                case OPT_SETENV:
                        if (!*a || strchr(a, '='))
                                return refuse(why, n, "--setenv at argument %zu: no variable name", i);
                        break;
                case OPT_RO:
                case OPT_RW:
                case OPT_DEV:
                        if (!plain_abs(a) || !plain_abs(b))
                                return refuse(why, n, "%s at argument %zu: its paths must be absolute and normal", opts[o].name, i);
                        dst = b;
                        break;
                case OPT_SYMLINK:
                        if (!*a || !plain_abs(b))
                                return refuse(why, n, "--symlink at argument %zu: an empty target or a path not absolute and normal", i);
                        /* bwrap makes the jail's tree at /newroot with the
                         * host's at /oldroot, and follows a link it made
                         * when a later argument's path goes through it: no
                         * way up, nor into either (attack review 5). */
                        if (has_dotdot(a) || (a[0] == '/' && !plain_abs(a)) || path_startswith(a, "/oldroot") ||
                            path_startswith(a, "/newroot"))
                                return refuse(why, n, "--symlink %.128s at argument %zu: a target with .. or into bwrap's /oldroot or /newroot", a, i);
                        dst = b;
                        break;
                case OPT_PROC:
                case OPT_DEVFS:
                        if (!streq(a, opts[o].kind == OPT_PROC ? "/proc" : "/dev"))
                                return refuse(why, n, "%s %.64s: only at %s", opts[o].name, a, opts[o].kind == OPT_PROC ? "/proc" : "/dev");
                        dst = a;
                        break;
                case OPT_TMPFS:
                case OPT_CHDIR:
                        if (!plain_abs(a))
                                return refuse(why, n, "%s at argument %zu: a path not absolute and normal", opts[o].name, i);
                        dst = opts[o].kind == OPT_TMPFS ? a : NULL;
                        break;
                }
                if (opts[o].kind == OPT_RW && !kept_home(a, rules->homes)) {
                        char buf[512];
                        const char *bad = forbidden_lexical(a, true, buf, sizeof buf);
                        if (bad)
                                return refuse(why, n, "--bind %.256s is %s", a, bad);
                }
                if (opts[o].kind == OPT_DEV && (!streq(a, b) || !gpu_node(a)))
                        return refuse(why, n, "--dev-bind %.128s: only a GPU's device node, at its own path", a);
                /* No path through a link an earlier argument made: bwrap
                 * would follow it (the worker's place reached by another
                 * name, a bind landing elsewhere than the check saw). */
                for (size_t k = 0; dst && k < n_links; k++)
                        if (path_startswith(dst, links[k]))
                                return refuse(why, n, "%s %.128s at argument %zu goes through the link %.128s an earlier argument made",
                                              opts[o].name, dst, i, links[k]);
                if (opts[o].kind == OPT_SYMLINK) {
                        if (n_links >= ELEMENTSOF(links))
                                return refuse(why, n, "more than %zu links", ELEMENTSOF(links));
                        links[n_links++] = b;
                }
                if (dst && streq(dst, VS_JAIL_WORKER_PATH)) {
                        if (worker_at || opts[o].kind != OPT_RO || !rules->worker || !streq(a, rules->worker))
                                return refuse(why, n, "argument %zu puts something else than the daemon's worker at %s", i, VS_JAIL_WORKER_PATH);
                        worker_at = i;
                } else if (dst && worker_at && path_startswith(VS_JAIL_WORKER_PATH, dst))
                        return refuse(why, n, "%s %.128s at argument %zu would hide the worker bound before it", opts[o].name, dst, i);
                i += opts[o].nargs;
        }
        for (size_t o = 0; o < ELEMENTSOF(opts); o++)
                if (opts[o].required && !seen[o])
                        return refuse(why, n, "%s is missing: the jail would lack it", opts[o].name);
        if (!worker_at)
                return refuse(why, n, "the daemon's worker is not bound at %s", VS_JAIL_WORKER_PATH);
        if (!argv[i] || !argv[i + 1] || !streq(argv[i + 1], VS_JAIL_WORKER_PATH) || argv[i + 2])
                return refuse(why, n, "the jail must run %s alone after \"--\"", VS_JAIL_WORKER_PATH);
        return 0;
}
