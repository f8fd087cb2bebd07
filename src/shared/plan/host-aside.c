/* SPDX-License-Identifier: MIT */
#include "host-aside.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "path-util.h"

/* Through the maker: *ret_n names the copy it made. */
static int put_aside_by(const VsHostMaker *m, const char *rel, const char *dir, const char *name, uint64_t dev,
                        uint64_t ino, char **ret_moved, VsError **err) {
        unsigned n = 0;
        int r = m->put_aside(m->userdata, rel, dev, ino, &n, err);
        if (r == -ENOTCONN)
                return r;
        if (r < 0)
                return r == -ESTALE || (err && *err) ? r : vs_error_set_kind(err, r, "internal", "cannot put %s/%s aside: %s", dir, name, strerror(-r));
        if (n >= VS_ASIDE_TRIES) {
                if (ret_moved)
                        *ret_moved = NULL; /* removed (a link only: the maker checks it) */
                return 0;
        }
        char to[VS_ASIDE_NAME_SIZE];
        host_aside_name(to, name, n);
        if (ret_moved && !(*ret_moved = path_join(dir, to)))
                return -ENOMEM;
        return 0;
}

int host_put_aside(const VsHostMaker *maker, const char *dir, const char *name, bool dir_identity, bool may_remove,
                   uint64_t dev, uint64_t ino, char **ret_moved, VsError **err) {
        _cleanup_free_ char *entry = path_join(dir, name);
        if (!entry)
                return -ENOMEM;
        const char *rel;
        const VsHostMaker *m = host_maker_for(maker, entry, &rel);
        if (m && m->put_aside) {
                int k = put_aside_by(m, rel, dir, name, dev, ino, ret_moved, err);
                if (k != -ENOTCONN)
                        return k;
                if (err)
                        vs_error_free(TAKE_PTR(*err));
        }
        _cleanup_close_ int dfd = chase_open_dir(dir);
        if (dfd == -ENOENT || dfd == -ENOTDIR || dfd == -ELOOP)
                return -ESTALE;
        if (dfd < 0)
                return vs_error_set_kind(err, dfd, "internal", "%s: %s", dir, strerror(-dfd));
        struct stat st;
        /* Still the one noted. */
        if (fstatat(dfd, dir_identity ? "" : name, &st, AT_SYMLINK_NOFOLLOW | (dir_identity ? AT_EMPTY_PATH : 0)) < 0 ||
            st.st_dev != dev || st.st_ino != ino)
                return -ESTALE;
        char to[VS_ASIDE_NAME_SIZE];
        for (unsigned n = 0; n < VS_ASIDE_TRIES; n++) {
                host_aside_name(to, name, n);
                if (syscall(SYS_renameat2, dfd, name, dfd, to, RENAME_NOREPLACE) == 0) {
                        if (ret_moved && !(*ret_moved = path_join(dir, to)))
                                return -ENOMEM;
                        return 0;
                }
                if (errno == ENOENT)
                        return -ESTALE;
                if (errno != EEXIST)
                        return vs_error_set_kind(err, -errno, "internal", "cannot put %s/%s aside: %m", dir, name);
        }
        if (may_remove && S_ISLNK(st.st_mode)) {
                if (unlinkat(dfd, name, 0) < 0)
                        return errno == ENOENT ? -ESTALE : vs_error_set_kind(err, -errno, "internal", "cannot remove %s/%s: %m", dir, name);
                if (ret_moved)
                        *ret_moved = NULL;
                return 0;
        }
        return vs_error_set_kind(err, -EEXIST, "internal", "cannot put %s/%s aside: 100 quarantined copies there already",
                                 dir, name);
}
