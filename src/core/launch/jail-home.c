/* SPDX-License-Identifier: MIT */
#include "jail-home.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval.h"
#include "chase.h"
#include "fd-util.h"
#include "git-config.h"
#include "host-make.h"
#include "macro.h"
#include "path-util.h"
#include "sha256.h"

/* ---- the host user's identity ---- */

bool jail_git_identity_plain(const char *v) {
        size_t n = v ? strlen(v) : 0;
        if (n == 0 || n > VS_JAIL_IDENT_MAX)
                return false;
        for (const unsigned char *c = (const unsigned char *)v; *c; c++)
                if (*c < 0x20 || *c == 0x7f)
                        return false;
        return true;
}

/* One file's user.name and user.email, the last plain value of each, in
 * fixed buffers (git_config_parse allocates its own, no other system
 * call: it runs where only read, write, exit and memory calls are
 * allowed, parse-apart.c). */
static int on_ident(const char *key, const char *value, void *ctx) {
        VsJailIdent *id = ctx;
        char *slot = strcmp(key, "user.name") == 0 ? id->name : strcmp(key, "user.email") == 0 ? id->email : NULL;
        if (slot && jail_git_identity_plain(value))
                strcpy(slot, value);
        return 0;
}

/* Whether uid itself could open rel below the home (a root reader for
 * another uid, which root's rights would let past a mode the owner set:
 * a mode-0 ~/.gitconfig, a ~/.config/git of mode 0): each directory on
 * the way searchable by uid (its owner's x bit where uid owns it, else
 * others': a group's is not weighed, so a directory open to the owner's
 * group only counts as closed) and the file readable by its owner. No
 * link is on the way (chase_beneath). */
static bool searchable_by(const struct stat *st, uid_t uid) {
        return S_ISDIR(st->st_mode) && (st->st_mode & (st->st_uid == uid ? S_IXUSR : S_IXOTH));
}

static bool owner_could_read(int home_fd, const char *rel, uid_t uid, const struct stat *file) {
        if (geteuid() != 0 || uid == 0)
                return true; /* the reader's own rights decide */
        char path[PATH_MAX];
        struct stat st;
        if (!(file->st_mode & S_IRUSR) || (size_t)snprintf(path, sizeof path, "%s", rel) >= sizeof path ||
            fstat(home_fd, &st) < 0 || !searchable_by(&st, uid))
                return false;
        for (char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                bool ok = fstatat(home_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && searchable_by(&st, uid);
                *slash = '/';
                if (!ok)
                        return false;
        }
        return true;
}

/* rel below the home's descriptor: no link followed (a config the user
 * made a link to /etc/shadow is not read as root), a regular file of
 * uid's that uid could read itself, bounded. A file that cannot be read
 * is NULL (adds nothing). */
static int read_config(int home_fd, const char *rel, uid_t uid, char **ret_text, size_t *ret_len) {
        _cleanup_close_ int fd = chase_beneath(home_fd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        struct stat st;
        *ret_text = NULL;
        *ret_len = 0;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
            !owner_could_read(home_fd, rel, uid, &st))
                return 0;
        int r = read_fd_all(fd, GIT_CONFIG_MAX_BYTES, ret_text, ret_len);
        return r == -ENOMEM ? r : 0;
}

int jail_git_identity_read(uid_t uid, VsJailIdentTexts *ret) {
        struct passwd pwbuf, *pw = NULL;
        char buf[4096];
        *ret = (VsJailIdentTexts){ 0 };
        if (getpwuid_r(uid, &pwbuf, buf, sizeof buf, &pw) != 0)
                pw = NULL;
        /* The home from the password database (root's to write), not from
         * $HOME: a daemon serves many users. */
        _cleanup_close_ int hfd = pw && pw->pw_dir && pw->pw_dir[0] == '/'
                                          ? open(pw->pw_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)
                                          : -EBADF;
        int r = 0;
        if (hfd >= 0 && (r = read_config(hfd, ".config/git/config", uid, &ret->text[0], &ret->len[0])) >= 0)
                r = read_config(hfd, ".gitconfig", uid, &ret->text[1], &ret->len[1]);
        if (r < 0) {
                free(ret->text[0]);
                ret->text[0] = NULL;
        }
        return r;
}

void jail_git_identity_parse(const void *texts, void *out) {
        const VsJailIdentTexts *t = texts;
        VsJailIdent *ret = out;
        *ret = (VsJailIdent){ 0 };
        for (int i = 0; i < 2; i++) {
                VsJailIdent got = { 0 };
                /* A file git could not read either gives nothing (git would fail). */
                if (!t->text[i] || git_config_parse(t->text[i], t->len[i], on_ident, &got, NULL) < 0)
                        continue;
                if (got.name[0])
                        strcpy(ret->name, got.name);
                if (got.email[0])
                        strcpy(ret->email, got.email);
        }
        if (!ret->name[0])
                strcpy(ret->name, VS_JAIL_GIT_NAME);
        if (!ret->email[0])
                strcpy(ret->email, VS_JAIL_GIT_EMAIL);
}

int jail_git_identity(uid_t uid, char **ret_name, char **ret_email) {
        VsJailIdentTexts t;
        int r = jail_git_identity_read(uid, &t);
        if (r < 0)
                return r;
        VsJailIdent id;
        jail_git_identity_parse(&t, &id);
        free(t.text[0]);
        free(t.text[1]);
        _cleanup_free_ char *name = strdup(id.name), *email = strdup(id.email);
        if (!name || !email)
                return -ENOMEM;
        *ret_name = TAKE_PTR(name);
        *ret_email = TAKE_PTR(email);
        return 0;
}

static void put_quoted(FILE *f, const char *v) {
        fputc('"', f);
        for (; *v; v++) {
                if (*v == '"' || *v == '\\')
                        fputc('\\', f);
                fputc(*v, f);
        }
        fputc('"', f);
}

char *jail_git_identity_text(const char *name, const char *email) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        fputs("# vectora-sandbox: the host user's git identity (user.name and user.email only).\n"
              "# Read-only; `git config --global` in the jail overrides it.\n[user]\n\tname = ",
              f);
        put_quoted(f, name);
        fputs("\n\temail = ", f);
        put_quoted(f, email);
        fputc('\n', f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* ---- the files under the state directory ---- */

/* Whether uid (with gid) may walk to path: every directory on the way
 * searchable by it (supplementary groups ignored: a no here only costs
 * the persistent home, never opens one). */
static bool reachable_by(const char *path, uid_t uid, gid_t gid) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return false;
        for (char *s = p;; s++) {
                if (*s != '/' && *s != 0)
                        continue;
                char c = *s;
                *s = 0;
                struct stat st;
                if (stat(*p ? p : "/", &st) < 0)
                        return false;
                mode_t x = st.st_uid == uid ? S_IXUSR : st.st_gid == gid ? S_IXGRP : S_IXOTH;
                if (!(st.st_mode & x))
                        return false;
                *s = c;
                if (!c)
                        return true;
        }
}

/* homes/ below the state directory: the caller's, 0711, never a link. */
/* The directory name below the store, made (mode) when make and missing:
 * the store and it the caller's, none of the forbidden mode bits set on
 * it. */
static int open_store_subdir(const char *state_dir, const char *name, mode_t mode, mode_t forbidden, bool make) {
        _cleanup_close_ int sfd = open(state_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (sfd < 0 || fstat(sfd, &st) < 0)
                return -errno;
        if (st.st_uid != geteuid())
                return -EPERM;
        if (make && mkdirat(sfd, name, mode) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & forbidden)) {
                safe_close(fd);
                return -EPERM;
        }
        return fd;
}

static int open_homes(const char *state_dir, uid_t uid, gid_t gid, char **ret_note) {
        if (uid != geteuid() && !reachable_by(state_dir, uid, gid))
                return asprintf(ret_note,
                                "the jail's home is not kept and git has no identity file: uid %u cannot reach %s (make it 0711 to keep them)",
                                (unsigned)uid, state_dir) < 0
                               ? -ENOMEM
                               : -EACCES;
        /* The jail's uid must walk through the store to its home: the
         * system store is 0711 (approval.c); a store kept 0700 stays so,
         * and its jails keep a tmpfs home (the note above says why). */
        return open_store_subdir(state_dir, "homes", 0711, 022, true);
}

/* homes/HEX: made once, owned by uid, 0700. One still the caller's was
 * made here (homes/ is the caller's alone), maybe by a start racing this
 * one, and is handed over; one owned by another uid (the workspace changed
 * hands) is not handed to this one. */
static int make_home(int hfd, const char *hex, uid_t uid, gid_t gid) {
        if (mkdirat(hfd, hex, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int fd = openat(hfd, hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid == geteuid() && uid != geteuid() && fchown(fd, uid, gid) < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || st.st_uid != uid)
                return -EPERM;
        if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
                return -errno;
        return 0;
}

/* Temp names of this process's starts (the daemon starts jails on several threads). */
static unsigned tmp_seq;

/* Whether homes/NAME already holds exactly text, as uid's read-only file.
 * A file a start binds into its jail must stay in place while bwrap mounts
 * it: replaced under it, bwrap finds the mount as "(deleted)" and the start
 * fails; starts of one workspace (the daemon's, the embedded CLI's) each
 * write it, so an unchanged identity is left alone. */
static bool identity_current(int hfd, const char *name, const char *text, uid_t uid) {
        _cleanup_close_ int fd = openat(hfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        size_t n = strlen(text);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid || (st.st_mode & 07777) != 0400 ||
            st.st_nlink != 1 || (uint64_t)st.st_size != n)
                return false;
        _cleanup_free_ char *have = NULL;
        size_t len = 0;
        return read_fd_all(fd, n + 1, &have, &len) >= 0 && len == n && memcmp(have, text, n) == 0;
}

/* homes/HEX.gitconfig: left as it is when current, else replaced
 * atomically (two starts may race). */
static int write_identity(int hfd, const char *hex, uid_t uid, gid_t gid, const VsHostMaker *maker) {
        _cleanup_free_ char *name = NULL, *email = NULL, *text = NULL, *tmp = NULL, *dest = NULL;
        int r = maker && maker->identity ? maker->identity(maker->userdata, &name, &email)
                                         : jail_git_identity(uid, &name, &email);
        if (r < 0)
                return r;
        if (!(text = jail_git_identity_text(name, email)) || asprintf(&dest, "%s.gitconfig", hex) < 0 ||
            asprintf(&tmp, "%s.gitconfig.%d.%u.tmp", hex, (int)getpid(),
                     __atomic_add_fetch(&tmp_seq, 1, __ATOMIC_RELAXED)) < 0)
                return -ENOMEM;
        if (identity_current(hfd, dest, text, uid))
                return 0;
        (void)unlinkat(hfd, tmp, 0);
        _cleanup_close_ int fd = openat(hfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        if (fd < 0)
                return -errno;
        r = write_all(fd, text, strlen(text));
        if (r >= 0 && uid != geteuid() && fchown(fd, uid, gid) < 0)
                r = -errno;
        if (r >= 0 && renameat(hfd, tmp, hfd, dest) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(hfd, tmp, 0);
        return r;
}

/* homes/HEX.workspace: the workspace a home serves, for
 * jail_homes_prune(); written once (the caller's, 0600). */
static int record_workspace(int hfd, const char *hex, const char *workspace) {
        _cleanup_free_ char *name = NULL;
        if (asprintf(&name, "%s.workspace", hex) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = openat(hfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return errno == EEXIST ? 0 : -errno;
        int r = write_all(fd, workspace, strlen(workspace));
        if (r < 0)
                (void)unlinkat(hfd, name, 0);
        return r;
}

int jail_home_prepare(const char *state_dir, const char *workspace, uid_t uid, gid_t gid, bool persistent,
                      const VsHostMaker *maker, char **ret_home, char **ret_gitconfig, char **ret_note) {
        *ret_home = *ret_gitconfig = *ret_note = NULL;
        if (!state_dir)
                return 0;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(workspace, strlen(workspace), hex);
        _cleanup_close_ int hfd = open_homes(state_dir, uid, gid, ret_note);
        if (hfd == -ENOMEM)
                return hfd;
        if (hfd < 0) {
                if (!*ret_note && asprintf(ret_note, "the jail's home is not kept and git has no identity file: %s/homes: %s",
                                           state_dir, strerror(-hfd)) < 0)
                        *ret_note = NULL;
                return 0;
        }
        _cleanup_free_ char *home = NULL, *conf = NULL;
        int r = write_identity(hfd, hex, uid, gid, maker);
        if (r == -ENOMEM)
                return r;
        if (r >= 0 && asprintf(&conf, "%s/homes/%s.gitconfig", state_dir, hex) < 0)
                return -ENOMEM;
        int h = persistent ? make_home(hfd, hex, uid, gid) : 0;
        /* Without its record a home is only never pruned. */
        if (h >= 0 && persistent && record_workspace(hfd, hex, workspace) == -ENOMEM)
                return -ENOMEM;
        if (persistent && h >= 0 && asprintf(&home, "%s/homes/%s", state_dir, hex) < 0)
                return -ENOMEM;
        if ((r < 0 || h < 0) &&
            asprintf(ret_note, "%s%s%s", r < 0 ? "git has no identity file: " : "", r < 0 ? strerror(-r) : "",
                     h < 0 ? "; the jail's home is not kept (homes/ entry refused)" : "") < 0)
                *ret_note = NULL;
        *ret_home = TAKE_PTR(home);
        *ret_gitconfig = TAKE_PTR(conf);
        return 0;
}

/* ---- the first jail's time ---- */

/* first-jails/ below the store: the caller's alone (0700). */
static int open_first_jails(const char *state_dir, bool make) {
        return open_store_subdir(state_dir, "first-jails", 0700, 077, make);
}

/* The first-jail time the workspace owner's own store recorded (their
 * one-shot CLI runs and MCP servers: first-jails/HEX in their store,
 * approval_owner_store_open()), for a root daemon: 1 and *ret, or 0. Only
 * its mtime is read, and it can only move the time links count from
 * earlier (jail_first_start takes the earlier one): more masked links
 * taken for a jail's, put aside rather than refused. */
static int owner_first_start(const char *workspace, const char *hex, struct timespec *ret) {
        _cleanup_free_ char *rel = path_join("first-jails", hex);
        struct stat st;
        if (!rel)
                return 0;
        _cleanup_close_ int fd = approval_owner_store_open(workspace, rel, O_PATH);
        if (fd < 0 || fstat(fd, &st) < 0)
                return 0;
        *ret = st.st_mtim;
        return 1;
}

static bool earlier(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* jail_first_start() in state_dir alone. */
static int own_first_start(const char *state_dir, const char *hex, const char *workspace, struct timespec *ret) {
        *ret = (struct timespec){ 0 };
        _cleanup_close_ int dfd = open_first_jails(state_dir, true);
        if (dfd < 0)
                return dfd;
        /* The time is the file's mtime: nothing to parse. Two starts may
         * race to make it: the one that loses reads the winner's. */
        for (int tries = 0; tries < 2; tries++) {
                struct stat st;
                if (fstatat(dfd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
                                return -EPERM;
                        *ret = st.st_mtim;
                        return 1;
                }
                if (errno != ENOENT)
                        return -errno;
                _cleanup_close_ int fd = openat(dfd, hex, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0 && errno == EEXIST)
                        continue;
                if (fd < 0)
                        return -errno;
                /* The workspace's path, for jail_homes_prune(). */
                int r = write_all(fd, workspace, strlen(workspace));
                if (r < 0) {
                        (void)unlinkat(dfd, hex, 0);
                        return r;
                }
                return 0;
        }
        return -EAGAIN;
}

int jail_first_start(const char *state_dir, const char *workspace, struct timespec *ret) {
        *ret = (struct timespec){ 0 };
        if (!state_dir)
                return -ENOENT;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(workspace, strlen(workspace), hex);
        /* A jail the owner's own CLI or MCP server started before this
         * root daemon's first: links count from that one's start (a link
         * it made was taken for the user's own and left, the host writing
         * through it). */
        struct timespec own;
        int k = own_first_start(state_dir, hex, workspace, &own), o;
        if (k < 0)
                return k;
        struct timespec theirs;
        if ((o = owner_first_start(workspace, hex, &theirs)) > 0 && (k == 0 || earlier(&theirs, &own))) {
                *ret = theirs;
                return 1;
        }
        if (k > 0)
                *ret = own;
        return k;
}

/* first-jails/HEX whose workspace is gone: removed (a new workspace at that
 * path starts afresh). */
static void prune_first_jails(const char *state_dir) {
        _cleanup_close_ int dfd = open_first_jails(state_dir, false);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d)
                return;
        TAKE_FD(dfd);
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strlen(de->d_name) != SHA256_HEX_LEN)
                        continue;
                _cleanup_free_ char *ws = NULL;
                size_t len = 0;
                struct stat wst;
                /* The record is the caller's own file (first-jails/ is theirs alone). */
                if (read_file_at(dirfd(d), de->d_name, 8192, &ws, &len) < 0 || strlen(ws) != len || ws[0] != '/')
                        continue;
                if (lstat(ws, &wst) < 0 && errno == ENOENT)
                        (void)unlinkat(dirfd(d), de->d_name, 0);
        }
        closedir(d);
}

/* ---- pruning ---- */

#define PRUNE_MAX_DEPTH 256 /* deeper than this is left (and the home with it) */

/* Removes name below dirfd and everything in it, through descriptors only:
 * no link is followed (a link is removed as a link), so what the jail
 * left there cannot lead the host anywhere else. */
static int remove_tree_at(int parent, const char *name, unsigned depth) {
        if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth >= PRUNE_MAX_DEPTH)
                return -ELOOP;
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
        if (fd < 0 && errno == EPERM)
                fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -ENOMEM;
        }
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
                        int k = remove_tree_at(dirfd(d), de->d_name, depth + 1);
                        if (k < 0 && r == 0)
                                r = k;
                }
        closedir(d);
        if (r >= 0 && unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                r = -errno;
        return r;
}

int jail_homes_prune(const char *state_dir, unsigned *ret_removed) {
        *ret_removed = 0;
        prune_first_jails(state_dir);
        _cleanup_close_ int sfd = open(state_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int hfd = sfd < 0 ? -errno : openat(sfd, "homes", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (hfd < 0)
                return errno == ENOENT || hfd == -ENOENT ? 0 : -errno;
        struct stat st;
        if (fstat(hfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
                safe_close(hfd);
                return -EPERM;
        }
        DIR *d = fdopendir(hfd);
        if (!d) {
                safe_close(hfd);
                return -ENOMEM;
        }
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                if (n != SHA256_HEX_LEN + strlen(".workspace") || !streq(de->d_name + SHA256_HEX_LEN, ".workspace"))
                        continue;
                _cleanup_free_ char *ws = NULL, *hex = strndup(de->d_name, SHA256_HEX_LEN), *conf = NULL;
                size_t len = 0;
                if (!hex || asprintf(&conf, "%s.gitconfig", hex) < 0) {
                        r = -ENOMEM;
                        break;
                }
                /* The record is the caller's own file (homes/ is theirs alone). */
                if (read_file_at(dirfd(d), de->d_name, 8192, &ws, &len) < 0 || strlen(ws) != len || ws[0] != '/')
                        continue;
                struct stat wst;
                if (lstat(ws, &wst) == 0 || errno != ENOENT)
                        continue;
                int k = remove_tree_at(dirfd(d), hex, 0);
                if (k >= 0) {
                        (void)unlinkat(dirfd(d), conf, 0);
                        (void)unlinkat(dirfd(d), de->d_name, 0);
                        (*ret_removed)++;
                } else if (r == 0)
                        r = k;
        }
        closedir(d);
        return r;
}
