/* SPDX-License-Identifier: MIT */
#include "user-util.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static void login_defs(unsigned long *min, unsigned long *max) {
        FILE *f = fopen("/etc/login.defs", "re");
        char line[256];
        while (f && fgets(line, sizeof line, f)) {
                char key[16];
                unsigned long v;
                if (sscanf(line, " %15s %lu", key, &v) != 2)
                        continue;
                if (streq(key, "UID_MIN"))
                        *min = v;
                else if (streq(key, "UID_MAX"))
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

bool uid_is_ordinary(uid_t uid) {
        static unsigned long min, max, overflow;
        static bool read;
        if (!read) {
                min = 1000;
                max = 60000;
                login_defs(&min, &max);
                overflow = read_overflow("/proc/sys/kernel/overflowuid");
                read = true;
        }
        return uid != 0 && ((uid >= min && uid <= max) || uid == overflow);
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

gid_t user_jail_gid(uid_t uid, gid_t dir_gid) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) {
                if (dir_gid != 0 && res->pw_name && member_of(res->pw_name, res->pw_gid, dir_gid))
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
