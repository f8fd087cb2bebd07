/* SPDX-License-Identifier: MIT */
#include "host-make.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

const char *const vs_host_texts[_VS_HOST_TEXT_MAX] = {
        [VS_HOST_TEXT_EMPTY] = "",
        [VS_HOST_TEXT_MCP] = "{\"mcpServers\":{}}\n",
        [VS_HOST_TEXT_DOT] = ".",
        [VS_HOST_TEXT_GIT_CONFIG] = "[core]\n"
                                    "\trepositoryformatversion = 0\n"
                                    "\tfilemode = true\n"
                                    "\tbare = false\n"
                                    "\tlogallrefupdates = true\n",
        [VS_HOST_TEXT_GIT_HEAD] = "ref: refs/heads/master\n",
};

int host_text_index(const char *text) {
        for (int i = 0; i < _VS_HOST_TEXT_MAX; i++)
                if (streq(text ? text : "", vs_host_texts[i]))
                        return i;
        return -1;
}

bool rel_is_normal(const char *rel) {
        if (!rel || !*rel || *rel == '/')
                return false;
        for (const char *c = rel;;) {
                const char *slash = strchr(c, '/');
                size_t n = slash ? (size_t)(slash - c) : strlen(c);
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!slash)
                        return true;
                c = slash + 1;
        }
}

const VsHostMaker *host_maker_for(const VsHostMaker *m, const char *path, const char **ret_rel) {
        if (!m || !m->workspace || !path)
                return NULL;
        size_t n = strlen(m->workspace);
        /* "/" holds no workspace a maker serves. */
        if (n <= 1 || strncmp(path, m->workspace, n) != 0 || path[n] != '/' || !path[n + 1])
                return NULL;
        *ret_rel = path + n + 1;
        return m;
}

void host_aside_name(char to[VS_ASIDE_NAME_SIZE], const char *name, unsigned n) {
        if (n == 0)
                snprintf(to, VS_ASIDE_NAME_SIZE, "%.200s.vectora-quarantine", name);
        else
                snprintf(to, VS_ASIDE_NAME_SIZE, "%.200s.vectora-quarantine-%u", name, n);
}

bool host_aside_named(const char *name) {
        const char *at = strstr(name, ".vectora-quarantine");
        if (!at)
                return false;
        /* The last such part ends the name, or "-" and digits do. */
        for (const char *n; (n = strstr(at + 1, ".vectora-quarantine"));)
                at = n;
        const char *end = at + strlen(".vectora-quarantine");
        if (!*end)
                return true;
        if (*end != '-' || !end[1])
                return false;
        for (const char *c = end + 1; *c; c++)
                if (*c < '0' || *c > '9')
                        return false;
        return true;
}

static int aside_try(int pfd, const char *name, bool may_remove, unsigned *ret_n) {
        char to[VS_ASIDE_NAME_SIZE];
        int r = -EEXIST;
        for (unsigned n = 0; n < VS_ASIDE_TRIES && r == -EEXIST; n++) {
                host_aside_name(to, name, n);
                if (renameat2(pfd, name, pfd, to, RENAME_NOREPLACE) == 0) {
                        *ret_n = n;
                        return 0;
                }
                r = errno == ENOENT ? -ESTALE : -errno;
        }
        if (r == -EEXIST && may_remove) {
                if (unlinkat(pfd, name, 0) == 0) {
                        *ret_n = VS_ASIDE_TRIES;
                        return 0;
                }
                r = errno == ENOENT ? -ESTALE : -errno;
        }
        /* Anything else past them: a name the jail cannot have taken
         * beforehand (it kept its file at a protected name, its HEAD in a
         * repository, by making the hundred first: an attack review). */
        for (int k = 0; k < 16 && r == -EEXIST; k++) {
                uint32_t x;
                if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
                        return -errno;
                unsigned n = VS_ASIDE_TRIES + 1 + x % (UINT32_MAX - VS_ASIDE_TRIES - 1);
                host_aside_name(to, name, n);
                if (renameat2(pfd, name, pfd, to, RENAME_NOREPLACE) == 0) {
                        *ret_n = n;
                        return 0;
                }
                r = errno == ENOENT ? -ESTALE : -errno;
        }
        return r;
}

int host_dir_open_up(int dirfd, mode_t *ret_was) {
        struct stat st;
        if (fstat(dirfd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || (st.st_mode & S_IRWXU) == S_IRWXU || (st.st_mode & S_ISGID))
                return 0;
        /* Through the descriptor's own /proc link: dirfd may be O_PATH,
         * on which fchmod fails. Only the directory's owner may. */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", dirfd);
        if (chmod(self, (st.st_mode | S_IRWXU) & 07777) < 0)
                return -errno;
        *ret_was = st.st_mode & 07777;
        return 1;
}

void host_dir_restore(int dirfd, mode_t was) {
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", dirfd);
        (void)chmod(self, was);
}

const char *host_closed_hint(int r) {
        return r == -EACCES || r == -EPERM ? "; a directory on its way is another account's, or closed to the "
                                             "workspace's owner in a way the host does not open for a moment (a "
                                             "setgid one, an attribute): make it the owner's, writable for it"
                                           : "";
}

int host_mkdirat(int dirfd, const char *name, mode_t mode) {
        if (mkdirat(dirfd, name, mode) == 0)
                return 0;
        int r = -errno;
        mode_t was;
        if (r == -EACCES && host_dir_open_up(dirfd, &was) > 0) {
                r = mkdirat(dirfd, name, mode) == 0 ? 0 : -errno;
                host_dir_restore(dirfd, was);
        }
        return r;
}

int host_create_at(int dirfd, const char *name, int flags, mode_t mode) {
        int fd = openat(dirfd, name, flags, mode);
        if (fd >= 0)
                return fd;
        int r = -errno;
        mode_t was;
        if (r == -EACCES && host_dir_open_up(dirfd, &was) > 0) {
                fd = openat(dirfd, name, flags, mode);
                r = fd >= 0 ? fd : -errno;
                host_dir_restore(dirfd, was);
        }
        return r;
}

int host_aside_at(int pfd, const char *name, bool may_remove, unsigned *ret_n) {
        int r = aside_try(pfd, name, may_remove, ret_n);
        mode_t was;
        if (r != -EACCES || host_dir_open_up(pfd, &was) <= 0)
                return r;
        r = aside_try(pfd, name, may_remove, ret_n);
        host_dir_restore(pfd, was);
        return r;
}
