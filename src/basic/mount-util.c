/* SPDX-License-Identifier: MIT */
#include "mount-util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

int fd_mount_id(int fd, int *ret) {
        struct statx sx;
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) < 0)
                return -errno;
        if (!(sx.stx_mask & STATX_MNT_ID) || sx.stx_mnt_id > INT_MAX)
                return -EOPNOTSUPP;
        *ret = (int)sx.stx_mnt_id;
        return 0;
}

bool mountinfo_line_parse(const char *line, int *ret_id, char *type, size_t n) {
        /* "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw":
         * the kernel escapes spaces in paths and sources (\040), so " - "
         * appears only as the separator. */
        char *end;
        errno = 0;
        long id = strtol(line, &end, 10);
        if (errno || end == line || *end != ' ' || id < 0 || id > INT_MAX)
                return false;
        const char *sep = strstr(end, " - ");
        if (!sep || n == 0)
                return false;
        const char *t = sep + 3;
        size_t len = strcspn(t, " \n");
        if (len == 0 || len >= n)
                return false;
        memcpy(type, t, len);
        type[len] = 0;
        *ret_id = (int)id;
        return true;
}

/* The n-th (from 0) space-separated field of s, its length in *ret_len;
 * NULL past the last. */
static const char *field(const char *s, unsigned n, size_t *ret_len) {
        for (;;) {
                size_t len = strcspn(s, " \n");
                if (len == 0)
                        return NULL;
                if (n-- == 0) {
                        *ret_len = len;
                        return s;
                }
                s += len;
                if (*s != ' ')
                        return NULL;
                s++;
        }
}

bool mountinfo_fuse_line(const char *line, unsigned *ret_major, unsigned *ret_minor, long long *ret_uid, char *mnt,
                         size_t n) {
        /* "36 35 0:52 / /home/u/mnt rw,nosuid shared:9 - fuse.sshfs host:/ rw,user_id=1000,group_id=1000" */
        size_t len = 0, tlen = 0, olen = 0;
        const char *dev = field(line, 2, &len), *at = field(line, 4, &tlen), *sep = strstr(line, " - ");
        unsigned major, minor;
        int used = 0;
        if (!dev || !at || !sep || sep < at || sscanf(dev, "%u:%u%n", &major, &minor, &used) != 2 ||
            (size_t)used != len)
                return false;
        const char *type = field(sep + 3, 0, &len), *opts = field(sep + 3, 2, &olen);
        char t[64];
        if (!type || len >= sizeof t)
                return false;
        memcpy(t, type, len);
        t[len] = 0;
        if (!fstype_is_user_served(t))
                return false;
        *ret_uid = -1;
        for (const char *o = opts; o && o < opts + olen;) {
                size_t k = strcspn(o, ", \n");
                if (k > 8 && strncmp(o, "user_id=", 8) == 0) {
                        char *end;
                        errno = 0;
                        unsigned long long v = strtoull(o + 8, &end, 10);
                        if (!errno && end == o + k && v <= UINT32_MAX && o[8] != '-')
                                *ret_uid = (long long)v;
                }
                o += k;
                if (*o != ',')
                        break;
                o++;
        }
        if (n > 0) {
                size_t c = tlen < n - 1 ? tlen : n - 1;
                memcpy(mnt, at, c);
                mnt[c] = 0;
        }
        *ret_major = major;
        *ret_minor = minor;
        return true;
}

int mountinfo_each(int (*fn)(char *line, void *userdata), void *userdata) {
        return mountinfo_each_of("/proc/self/mountinfo", fn, userdata);
}

static int each_line(FILE *f, int (*fn)(char *line, void *userdata), void *userdata) {
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) > 0) {
                int r = fn(line, userdata);
                if (r)
                        return r;
        }
        return ferror(f) ? -EIO : 0;
}

int mountinfo_each_at(int dirfd, const char *name, int (*fn)(char *line, void *userdata), void *userdata) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_fclose_ FILE *f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -ENOMEM;
        }
        return each_line(f, fn, userdata);
}

int mountinfo_each_of(const char *file, int (*fn)(char *line, void *userdata), void *userdata) {
        _cleanup_fclose_ FILE *f = fopen(file, "re");
        if (!f)
                return -errno;
        return each_line(f, fn, userdata);
}

void mountinfo_unescape(char *s) {
        char *o = s;
        for (; *s; s++, o++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
                        *o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else
                        *o = *s;
        }
        *o = 0;
}

typedef struct FsTypeOf {
        int mnt_id;
        char *type;
        size_t n;
} FsTypeOf;

static int fstype_line(char *line, void *userdata) {
        FsTypeOf *a = userdata;
        int id;
        return mountinfo_line_parse(line, &id, a->type, a->n) && id == a->mnt_id;
}

int mount_fstype(int mnt_id, char *type, size_t n) {
        FsTypeOf a = { mnt_id, type, n };
        int r = mountinfo_each(fstype_line, &a);
        return r < 0 ? r : r == 0 ? -ENOENT : 0;
}

bool fstype_is_user_served(const char *type) {
        return streq(type, "fuse") || streq(type, "fuseblk") || strncmp(type, "fuse.", 5) == 0;
}
