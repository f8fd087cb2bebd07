/* SPDX-License-Identifier: MIT */
#include "mask-alias.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"

static int inodes_push(MaskInodes *set, const struct stat *st) {
        MaskInode *n = realloc(set->items, (set->n + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        set->items = n;
        set->items[set->n++] = (MaskInode){ st->st_dev, st->st_ino };
        return 0;
}

static bool inode_in(const MaskInodes *set, const struct stat *st);

/* What a second name of carries what the host writes to the masked one: a
 * regular file, and a FIFO (the jail reading the FIFO by another name got
 * the host's `echo KEY=.. >> .env`: attack review) or a socket. */
static bool aliasable(const struct stat *st) {
        return S_ISREG(st->st_mode) || S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode);
}

int mask_inodes_add_if_linked(MaskInodes *set, const char *path) {
        struct stat st;
        if (lstat(path, &st) < 0 || !aliasable(&st) || st.st_nlink < 2)
                return 0;
        for (size_t i = 0; i < set->n; i++)
                if (set->items[i].dev == st.st_dev && set->items[i].ino == st.st_ino)
                        return 0;
        return inodes_push(set, &st);
}

void mask_inodes_done(MaskInodes *set) {
        free(set->items);
        *set = (MaskInodes){ 0 };
}

static bool ino_wanted(const MaskInodes *set, ino_t ino) {
        for (size_t i = 0; i < set->n; i++)
                if (set->items[i].ino == ino)
                        return true;
        return false;
}

static bool inode_in(const MaskInodes *set, const struct stat *st) {
        for (size_t i = 0; i < set->n; i++)
                if (set->items[i].dev == st->st_dev && set->items[i].ino == st->st_ino)
                        return true;
        return false;
}

static int list_add(MaskList *l, const char *rel) {
        MaskEntry *n = realloc(l->items, (l->n + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        l->items = n;
        char *copy = strdup(rel);
        if (!copy)
                return -ENOMEM;
        l->items[l->n++] = (MaskEntry){ .relpath = copy, .kind = MASK_FILE };
        return 0;
}

static bool listed(const MaskList *l, const char *rel) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].relpath, rel))
                        return true;
        return false;
}

/* dfd is taken over. path holds the directory's relative path (len bytes).
 * With collect set, every linked regular file's inode is added to it (and
 * every symlink listed in links, when given); otherwise each file whose
 * inode is in set is listed in ret. */
static int walk(int dfd, char *path, size_t len, MaskInodes *collect, MaskList *links, const MaskInodes *set,
                MaskList *ret, VsError **err, const char *root) {
        DIR *d = fdopendir(dfd);
        if (!d) {
                safe_close(dfd);
                return vs_error_set(err, -errno, "cannot read directory %s/%s: %m", root, path);
        }
        int r = 0;
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno != 0 && errno != EACCES && errno != ENOENT)
                                r = vs_error_set(err, -errno, "cannot read directory %s/%s: %m", root, path);
                        break;
                }
                const char *name = de->d_name;
                if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
                        continue;
                size_t nlen = strlen(name);
                if (len + 1 + nlen >= PATH_MAX) {
                        r = vs_error_set(err, -ENAMETOOLONG, "path too long under %s/%s", root, path);
                        break;
                }
                if (len)
                        path[len] = '/';
                memcpy(path + len + !!len, name, nlen + 1);
                if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
                        int cfd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd >= 0) {
                                r = walk(cfd, path, len + !!len + nlen, collect, links, set, ret, err, root);
                                if (r < 0)
                                        break;
                        } else if (errno != ENOTDIR && errno != EACCES && errno != ENOENT && errno != ELOOP) {
                                r = vs_error_set(err, -errno, "cannot open directory %s/%s: %m", root, path);
                                break;
                        }
                        if (de->d_type == DT_DIR)
                                continue;
                }
                if (collect && links && de->d_type == DT_LNK) {
                        if ((r = list_add(links, path)) < 0)
                                break;
                        continue;
                }
                /* d_ino is the inode number on the directory's file system
                 * (a mount point's differs): a candidate, confirmed by stat. */
                if (de->d_type != DT_REG && de->d_type != DT_FIFO && de->d_type != DT_SOCK && de->d_type != DT_UNKNOWN)
                        continue;
                if (!collect && de->d_type != DT_UNKNOWN && !ino_wanted(set, de->d_ino))
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !aliasable(&st))
                        continue;
                if (collect) {
                        if (st.st_nlink > 1 && !inode_in(collect, &st) && (r = inodes_push(collect, &st)) < 0)
                                break;
                        continue;
                }
                if (!inode_in(set, &st))
                        continue;
                if (!listed(ret, path) && (r = list_add(ret, path)) < 0)
                        break;
        }
        path[len] = 0;
        closedir(d);
        return r;
}

int mask_alias_walk(const char *root, const MaskInodes *set, MaskList *ret, VsError **err) {
        if (!set || set->n == 0)
                return 0;
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return vs_error_set(err, -errno, "cannot open %s: %m", root);
        char path[PATH_MAX] = "";
        return walk(fd, path, 0, NULL, NULL, set, ret, err, root);
}

int mask_inodes_add_tree(MaskInodes *set, const char *dir, MaskList *links, VsError **err) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == ELOOP
                               ? 0
                               : vs_error_set(err, -errno, "cannot open %s: %m", dir);
        char path[PATH_MAX] = "";
        return walk(fd, path, 0, set, links, NULL, NULL, err, dir);
}
