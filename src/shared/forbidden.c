/* SPDX-License-Identifier: MIT */
#include "forbidden.h"

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

/* The daemon's directories: [0] neither at or below nor contained
 * (runtime), [1] not contained (the socket's directory, which may hold
 * other things, such as a test's workspaces). */
static char **reserved[2];

int forbidden_reserve(const char *dir, bool below_too) {
        if (!dir || dir[0] != '/')
                return -EINVAL;
        _cleanup_free_ char *n = path_normalize(dir);
        if (!n)
                return -ENOMEM;
        char ***l = &reserved[below_too ? 0 : 1];
        return strv_contains(*l, n) ? 0 : strv_extend(l, n);
}

static bool at_or_below(const char *path, const char *dir) {
        return path_startswith(path, dir) != NULL;
}

/* path is a strict or equal ancestor of dir (listing it shows dir). */
static bool contains(const char *path, const char *dir) {
        return path_startswith(dir, path) != NULL;
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
                        if ((k == 0 && at_or_below(path, *d)) || contains(path, *d)) {
                                snprintf(buf, n, "%s %s, the sandbox daemon's %s (a jail reaching the socket could ask the daemon for unsandboxed commands)",
                                         contains(path, *d) ? "a directory containing" : "at or below", *d,
                                         k == 0 ? "runtime directory" : "socket directory");
                                return buf;
                        }
        return NULL;
}

const char *forbidden_resolved(const char *real, bool rw, const VsHomes *homes, char *buf, size_t n) {
        const char *why = forbidden_lexical(real, rw, buf, n);
        if (why)
                return why;
        /* The caller's and the owner's homes and the runtime directory hold
         * secrets and the daemon's socket: a listed path may lie below them
         * (a project in ~/src), never contain them. */
        const char *const own[] = { homes->caller_home, homes->owner_home, homes->runtime_dir };
        for (size_t k = 0; k < ELEMENTSOF(own); k++)
                if (own[k] && own[k][0] == '/' && !streq(own[k], "/") && contains(real, own[k])) {
                        snprintf(buf, n, "a directory containing %s, %s", own[k],
                                 k < 2 ? "the home directory with its ~/.ssh and ~/.aws" : "the runtime directory with the daemon's socket");
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
        if (r < 0) {
                forbidden_homes_done(&h);
                return r;
        }
        *ret = h;
        return 0;
}

void forbidden_homes_done(VsHomes *h) {
        free(h->owner_home);
        strv_free(h->others);
        *h = (VsHomes){ 0 };
}
