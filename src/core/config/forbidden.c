/* SPDX-License-Identifier: MIT */
#include "forbidden.h"

#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path-util.h"
#include "strv.h"

/* Writable nowhere at or below these: the host runs or trusts what is
 * there (cron.d, /usr/local/bin, systemd units, sudoers, boot loader). */
static const char *const system_dirs[] = { "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                           "/boot", "/proc", "/sys", "/dev", "/run", "/var/lib", "/root" };
/* Not writable as a whole (what is below may be a project's). */
static const char *const whole_dirs[] = { "/", "/var", "/home" };

/* Neither listed at or below nor contained, and why. */
static const struct {
        const char *dir;
        const char *why;
} exposed[] = {
        { "/proc", "the host's processes (their environments, memory maps, open files)" },
        { "/sys", "the host's kernel and device state" },
        { "/dev", "the host's devices" },
        { "/run", "the host's sockets (the sandbox daemon's, docker's, D-Bus)" },
        { "/root", "root's home" },
};

/* The daemon's own paths, registered at start-up (forbidden_reserve*()):
 * what a listed path may neither lie at or below (below) nor contain. */
static const struct {
        bool below;
        const char *what;
} reserved_kind[] = {
        { true, "runtime directory" },
        /* What is beside the socket may be listed (a test's workspaces). */
        { false, "socket directory" },
        { true, "socket" },
};
static char **reserved[ELEMENTSOF(reserved_kind)];

static int reserve(size_t kind, const char *path) {
        if (!path || path[0] != '/')
                return -EINVAL;
        _cleanup_free_ char *n = path_normalize(path);
        if (!n)
                return -ENOMEM;
        return strv_contains(reserved[kind], n) ? 0 : strv_extend(&reserved[kind], n);
}

int forbidden_reserve(const char *dir, bool below_too) {
        return reserve(below_too ? 0 : 1, dir);
}

int forbidden_reserve_socket(const char *path) {
        return reserve(2, path);
}

static bool at_or_below(const char *path, const char *dir) {
        return path_startswith(path, dir) != NULL;
}

/* path is a strict or equal ancestor of dir (listing it shows dir). */
static bool contains(const char *path, const char *dir) {
        return path_startswith(dir, path) != NULL;
}

/* One of path's components is name. */
static bool has_component(const char *path, const char *name) {
        size_t n = strlen(name);
        for (const char *c = path; (c = strstr(c, name)); c += n)
                if ((c == path || c[-1] == '/') && (c[n] == 0 || c[n] == '/'))
                        return true;
        return false;
}

const char *forbidden_lexical(const char *path, bool rw, char *buf, size_t n) {
        for (size_t i = 0; rw && i < ELEMENTSOF(whole_dirs); i++)
                if (streq(path, whole_dirs[i])) {
                        snprintf(buf, n, "the system directory %s as a whole, which must stay read-only", whole_dirs[i]);
                        return buf;
                }
        for (size_t i = 0; rw && i < ELEMENTSOF(system_dirs); i++)
                if (at_or_below(path, system_dirs[i])) {
                        snprintf(buf, n, "%s %s, a system directory that must stay read-only in the jail",
                                 streq(path, system_dirs[i]) ? "the directory" : "below", system_dirs[i]);
                        return buf;
                }
        for (size_t i = 0; i < ELEMENTSOF(exposed); i++) {
                if (at_or_below(path, exposed[i].dir)) {
                        snprintf(buf, n, "at or below %s, %s", exposed[i].dir, exposed[i].why);
                        return buf;
                }
                if (contains(path, exposed[i].dir)) {
                        snprintf(buf, n, "a directory containing %s, %s", exposed[i].dir, exposed[i].why);
                        return buf;
                }
        }
        for (size_t k = 0; k < ELEMENTSOF(reserved); k++)
                for (char **d = reserved[k]; d && *d; d++)
                        if ((reserved_kind[k].below && at_or_below(path, *d)) || contains(path, *d)) {
                                snprintf(buf, n, "%s %s, the sandbox daemon's %s (a jail reaching the socket could ask the daemon for unsandboxed commands)",
                                         streq(path, *d) && reserved_kind[k].below ? "at"
                                         : contains(path, *d)                      ? "a directory containing"
                                                                                   : "at or below",
                                         *d, reserved_kind[k].what);
                                return buf;
                        }
        /* Another instance's socket, wherever it is: the default name in
         * any runtime directory, and the fallback runtime directories in
         * /tmp (/tmp/vectora-sandbox-UID/sock), which the daemon of another
         * uid, or a user daemon beside a root one, listens in. Listing /tmp
         * as a whole would show them (and tmux's, ssh-agent's, X11's). */
        const char *tmp_rest = path_startswith(path, "/tmp");
        if ((tmp_rest && strncmp(tmp_rest, "vectora-sandbox-", 16) == 0) || has_component(path, "vectora-sandbox.sock")) {
                snprintf(buf, n, "a sandbox daemon's socket or runtime directory (a jail reaching the socket could ask the daemon for unsandboxed commands)");
                return buf;
        }
        if (streq(path, "/tmp")) {
                snprintf(buf, n, "the directory /tmp as a whole, which holds the host's sockets (a sandbox daemon's /tmp/vectora-sandbox-UID/sock, tmux's, ssh-agent's, X11's)");
                return buf;
        }
        return NULL;
}

static bool usable(const char *dir) {
        return dir && dir[0] == '/' && !streq(dir, "/");
}

const char *forbidden_resolved(const char *real, bool rw, const VsHomes *homes, char *buf, size_t n) {
        const char *why = forbidden_lexical(real, rw, buf, n);
        if (why)
                return why;
        /* The caller's and the owner's homes hold secrets: a listed path
         * may lie below them (a project in ~/src), never contain them. */
        const char *const own[] = { homes->caller_home, homes->owner_home };
        for (size_t k = 0; k < ELEMENTSOF(own); k++)
                if (usable(own[k]) && contains(real, own[k])) {
                        snprintf(buf, n, "a directory containing %s, the home directory with its ~/.ssh and ~/.aws", own[k]);
                        return buf;
                }
        /* The runtime directory holds the daemon's default socket
         * ($XDG_RUNTIME_DIR/vectora-sandbox.sock), the session bus's, the
         * keyring's and the agents': neither at or below nor contained. */
        const char *const rt[] = { homes->runtime_dir, homes->runtime_real };
        for (size_t k = 0; k < ELEMENTSOF(rt); k++)
                if (usable(rt[k]) && (at_or_below(real, rt[k]) || contains(real, rt[k]))) {
                        snprintf(buf, n, "%s %s, the runtime directory ($XDG_RUNTIME_DIR) with the sandbox daemon's socket and the session's",
                                 at_or_below(real, rt[k]) ? "at or below" : "a directory containing", rt[k]);
                        return buf;
                }
        /* Another user's home: neither at or below nor contained. */
        for (char *const *h = homes->others; h && *h; h++)
                if (at_or_below(real, *h) || contains(real, *h)) {
                        snprintf(buf, n, "%s %s, another user's home", at_or_below(real, *h) ? "at or below" : "a directory containing", *h);
                        return buf;
                }
        return NULL;
}

int forbidden_homes_of(uid_t owner, VsHomes *ret) {
        VsHomes h = { 0 };
        int r = 0;
        /* People's accounts (uid >= 1000 but nobody) and any home in /home. */
        setpwent();
        struct passwd *pw;
        while (r >= 0 && (pw = getpwent())) {
                if (!pw->pw_dir || pw->pw_dir[0] != '/' || streq(pw->pw_dir, "/"))
                        continue;
                if (pw->pw_uid != owner && !(pw->pw_uid >= 1000 && pw->pw_uid != 65534) &&
                    !at_or_below(pw->pw_dir, "/home"))
                        continue;
                char *dir = realpath(pw->pw_dir, NULL);
                if (!dir && !(dir = strdup(pw->pw_dir)))
                        r = -ENOMEM;
                else if (pw->pw_uid == owner && !h.owner_home)
                        h.owner_home = dir;
                else if (pw->pw_uid != owner)
                        r = strv_consume(&h.others, dir);
                else
                        free(dir);
        }
        endpwent();
        /* The runtime directory as the kernel names it: a listed path is
         * compared after realpath(). */
        const char *x = getenv("XDG_RUNTIME_DIR");
        if (r >= 0 && x && x[0] == '/' && !(h.runtime_real = realpath(x, NULL)) && errno == ENOMEM)
                r = -ENOMEM;
        if (r < 0) {
                forbidden_homes_done(&h);
                return r;
        }
        *ret = h;
        return 0;
}

void forbidden_homes_done(VsHomes *h) {
        free(h->owner_home);
        free(h->runtime_real);
        strv_free(h->others);
        *h = (VsHomes){ 0 };
}
