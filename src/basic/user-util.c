/* SPDX-License-Identifier: MIT */
#include "user-util.h"

#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* login.defs' range for prefix ("UID" or "GID"): PREFIX_MIN, PREFIX_MAX. */
static void login_defs(const char *prefix, unsigned long *min, unsigned long *max) {
        FILE *f = fopen("/etc/login.defs", "re");
        char line[256], kmin[16], kmax[16];
        snprintf(kmin, sizeof kmin, "%s_MIN", prefix);
        snprintf(kmax, sizeof kmax, "%s_MAX", prefix);
        while (f && fgets(line, sizeof line, f)) {
                char key[16];
                unsigned long v;
                if (sscanf(line, " %15s %lu", key, &v) != 2)
                        continue;
                if (streq(key, kmin))
                        *min = v;
                else if (streq(key, kmax))
                        *max = v;
        }
        if (f)
                fclose(f);
}

static unsigned long read_overflow(const char *path) {
        unsigned long v = 65534;
        FILE *f = fopen(path, "re");
        if (!f || fscanf(f, "%lu", &v) != 1)
                v = 65534;
        if (f)
                fclose(f);
        return v;
}

/* login.defs' ranges and the overflow uid, read once for the process
 * (the daemon asks from several threads: pthread_once). */
static unsigned long uid_min = 1000, uid_max = 60000, uid_overflow, gid_min = 1000, gid_max = 60000;
static pthread_once_t ranges_once = PTHREAD_ONCE_INIT;

static void read_ranges(void) {
        login_defs("UID", &uid_min, &uid_max);
        login_defs("GID", &gid_min, &gid_max);
        uid_overflow = read_overflow("/proc/sys/kernel/overflowuid");
}

bool uid_is_ordinary(uid_t uid) {
        pthread_once(&ranges_once, read_ranges);
        return uid != 0 && ((uid >= uid_min && uid <= uid_max) || uid == uid_overflow);
}

/* Whether user (primary group primary) is a member of gid. */
static bool member_of(const char *user, gid_t primary, gid_t gid) {
        if (gid == primary)
                return true;
        int n = 64;
        for (int tries = 0; tries < 4; tries++) {
                _cleanup_free_ gid_t *groups = calloc((size_t)n, sizeof *groups);
                if (!groups)
                        return false;
                int k = n;
                if (getgrouplist(user, primary, groups, &k) >= 0) {
                        for (int i = 0; i < k; i++)
                                if (groups[i] == gid)
                                        return true;
                        return false;
                }
                if (k <= n) /* no count to grow to */
                        return false;
                n = k;
        }
        return false;
}

/* An ordinary group's id: login.defs' GID_MIN..GID_MAX (1000..60000 where
 * it says neither). A system group (docker, adm, sudo, shadow, ssl-cert)
 * is none. Read once. */
static bool gid_is_ordinary(gid_t gid) {
        pthread_once(&ranges_once, read_ranges);
        return gid >= gid_min && gid <= gid_max;
}

gid_t user_jail_gid(uid_t uid, gid_t dir_gid) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) {
                /* The owner's primary group, or an ordinary group it is a
                 * supplementary member of (a project's); never a system
                 * group the owner holds only as a supplementary member
                 * (docker's socket, adm's logs), which jails otherwise
                 * drop: a chgrp of the directory would lend it. */
                if (dir_gid != 0 && res->pw_name && (dir_gid == res->pw_gid || gid_is_ordinary(dir_gid)) &&
                    member_of(res->pw_name, res->pw_gid, dir_gid))
                        return dir_gid;
                if (res->pw_gid != 0)
                        return res->pw_gid;
        }
        return (gid_t)read_overflow("/proc/sys/kernel/overflowgid");
}

void service_ids(uid_t *uid, gid_t *gid, bool *named) {
        struct passwd *pw = getpwnam(VS_SERVICE_USER);
        bool ok = pw && pw->pw_uid != 0 && pw->pw_gid != 0;
        *uid = ok ? pw->pw_uid : VS_OVERFLOW_ID;
        *gid = ok ? pw->pw_gid : VS_OVERFLOW_ID;
        if (named)
                *named = ok;
}
