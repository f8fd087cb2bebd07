/* SPDX-License-Identifier: MIT */
#include "user-util.h"

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

bool uid_is_ordinary(uid_t uid) {
        static unsigned long min, max, overflow;
        static bool read;
        if (!read) {
                min = 1000;
                max = 60000;
                overflow = 65534;
                login_defs(&min, &max);
                FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");
                if (!f || fscanf(f, "%lu", &overflow) != 1)
                        overflow = 65534;
                if (f)
                        fclose(f);
                read = true;
        }
        return uid != 0 && ((uid >= min && uid <= max) || uid == overflow);
}
