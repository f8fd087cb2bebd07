/* SPDX-License-Identifier: MIT */
#include "host-aside.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "path-util.h"

/* Where name in dir went: its n-th put-aside name, or NULL (removed). */
static int moved_path(const char *dir, const char *name, unsigned n, char **ret_moved) {
        if (!ret_moved)
                return 0;
        *ret_moved = NULL;
        if (n == VS_ASIDE_TRIES)
                return 0;
        char to[VS_ASIDE_NAME_SIZE];
        host_aside_name(to, name, n);
        return (*ret_moved = path_join(dir, to)) ? 0 : -ENOMEM;
}

/* Through the maker: *ret_n names the copy it made. */
static int put_aside_by(const VsHostMaker *m, const char *rel, const char *dir, const char *name, uint64_t dev,
                        uint64_t ino, char **ret_moved, VsError **err) {
        unsigned n = 0;
        int r = m->put_aside(m->userdata, rel, dev, ino, &n, err);
        if (r == -ENOTCONN)
                return r;
        if (r < 0)
                return r == -ESTALE || (err && *err) ? r : vs_error_set_kind(err, r, "internal", "cannot put %s/%s aside: %s", dir, name, strerror(-r));
        return moved_path(dir, name, n, ret_moved); /* VS_ASIDE_TRIES: removed (a link only: the maker checks it) */
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
        unsigned n = 0;
        int r = host_aside_at(dfd, name, may_remove && S_ISLNK(st.st_mode), &n);
        if (r == -ESTALE)
                return r;
        if (r == -EEXIST)
                return vs_error_set_kind(err, r, "internal", "cannot put %s/%s aside: 100 quarantined copies there already",
                                         dir, name);
        if (r < 0)
                return vs_error_set_kind(err, r, "internal", "cannot put %s/%s aside: %s", dir, name, strerror(-r));
        return moved_path(dir, name, n, ret_moved);
}

int put_asides_add(VsPutAsides **list, const char *link, const char *moved) {
        size_t n = *list ? (*list)->n : 0;
        char *l = strdup(link), *m = moved ? strdup(moved) : NULL;
        VsPutAsides *grown = l && (m || !moved) ? realloc(*list, sizeof **list + (n + 1) * sizeof(VsPutAside)) : NULL;
        if (!grown) {
                free(l);
                free(m);
                return -ENOMEM;
        }
        grown->v[n] = (VsPutAside){ .link = l, .moved = m };
        grown->n = n + 1;
        *list = grown;
        return 0;
}

void put_asides_free(VsPutAsides *list) {
        for (size_t i = 0; list && i < list->n; i++) {
                free(list->v[i].link);
                free(list->v[i].moved);
        }
        free(list);
}
