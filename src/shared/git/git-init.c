/* SPDX-License-Identifier: MIT */
/* Making a workspace's repository on the host before its jail starts
 * (git-init.h). */
#include "chase.h"
#include "git-init.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "git-control.h"
#include "host-make.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"

/* How many entries the directory name in dfd holds, all of them among
 * names; -1 when one is not (or it cannot be read). Never follows a
 * symlink at name. */
static int entries_among(int dfd, const char *name, const char *const *names) {
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -1;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -1;
        }
        int n = 0;
        for (struct dirent *de; n >= 0 && (de = readdir(d));)
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n = names && strv_contains((char *const *)names, de->d_name) ? n + 1 : -1;
        closedir(d);
        return n;
}

/* How .git is now: a repository (or a .git git-control.h handles: a
 * file, a symlink, a .git without HEAD that holds something), missing, or
 * an empty directory to make the repository in. */
enum { DOTGIT_LEAVE, DOTGIT_MISSING, DOTGIT_EMPTY };

static int dotgit_state(int wfd) {
        struct stat st;
        if (fstatat(wfd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? DOTGIT_MISSING : -errno;
        if (!S_ISDIR(st.st_mode))
                return DOTGIT_LEAVE;
        return entries_among(wfd, ".git", NULL) == 0 ? DOTGIT_EMPTY : DOTGIT_LEAVE;
}

/* What `git init --template=` makes, and nothing else: a repository git
 * and the host's tools take as one, the config git writes by default
 * (host-make.h's table, which the monitor writes from too). */
#define HEAD_TEXT vs_host_texts[VS_HOST_TEXT_GIT_HEAD]
#define CONFIG_TEXT vs_host_texts[VS_HOST_TEXT_GIT_CONFIG]

typedef struct Owner {
        bool chown;
        uid_t uid;
        gid_t gid;
} Owner;

/* fd made by us: the workspace owner's (as root), mode exactly mode
 * whatever the umask. */
static int settle(int fd, mode_t mode, const Owner *o) {
        if (fchmod(fd, mode) < 0 || (o->chown && fchown(fd, o->uid, o->gid) < 0))
                return -errno;
        return 0;
}

/* A new directory name in dfd, opened: O_EXCL-like (EEXIST when anything
 * is there already) and never through a symlink put there meanwhile. */
static int new_dir(int dfd, const char *name, const Owner *o) {
        if (mkdirat(dfd, name, 0700) < 0)
                return -errno;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = settle(fd, 0755, o);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        return fd;
}

static int new_file(int dfd, const char *name, const char *text, const Owner *o) {
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, text, strlen(text));
        return r < 0 ? r : settle(fd, 0644, o);
}

static int new_dir_with(int dfd, const char *name, const char *a, const char *b, const Owner *o) {
        _cleanup_close_ int fd = new_dir(dfd, name, o);
        if (fd < 0)
                return fd;
        _cleanup_close_ int fa = new_dir(fd, a, o);
        if (fa < 0)
                return fa;
        _cleanup_close_ int fb = new_dir(fd, b, o);
        return fb < 0 ? fb : 0;
}

/* The repository's skeleton in the held, empty .git: every entry made
 * relative to a descriptor, exclusively, without following a symlink, so
 * nothing planted meanwhile (by another jail that may write this
 * workspace) is followed or reused: it makes the make fail instead. HEAD
 * last: until it exists, git-control.h seals the half-made .git whole. */
static int skeleton(int gfd, const Owner *o) {
        int r = new_dir_with(gfd, "objects", "info", "pack", o);
        if (r >= 0)
                r = new_dir_with(gfd, "refs", "heads", "tags", o);
        if (r >= 0)
                r = new_file(gfd, "config", CONFIG_TEXT, o);
        if (r >= 0)
                r = new_file(gfd, "HEAD", HEAD_TEXT, o);
        return r;
}

/* Nothing in gfd but what was made (an entry put beside it meanwhile,
 * hooks/, commondir, a second config, would be taken as part of a
 * repository the project made), and .git still gfd: r (the making's
 * result) or the refusal. */
static int made_check(int wfd, int gfd, const struct stat *gst, int r, const char *workspace, VsError **err) {
        static const char *const made[] = { "HEAD", "config", "objects", "refs", NULL };
        struct stat now;
        if (r == -EEXIST || r == -ELOOP || r == -ENOTDIR || (r >= 0 && entries_among(gfd, ".", made) != 4))
                return vs_error_set_kind(err, -ESTALE, "sandbox_unavailable",
                                         "%s/.git changed while its repository was made (something appeared in it); not starting the jail",
                                         workspace);
        if (r < 0)
                return err && *err ? r
                                   : vs_error_set_kind(err, r, "sandbox_unavailable",
                                                       "making the repository %s/.git (git_init = true): %s", workspace,
                                                       strerror(-r));
        if (fstatat(wfd, ".git", &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != gst->st_dev || now.st_ino != gst->st_ino)
                return vs_error_set_kind(err, -ESTALE, "sandbox_unavailable",
                                         "%s/.git changed while its repository was made; not starting the jail", workspace);
        return 0;
}

/* The repository made through the thread's maker (host-make.h: the root
 * monitor), rel naming .git there: the same entries in the same order,
 * each new (EXCL). */
static int repo_make_by(const VsHostMaker *m, const char *rel, int wfd, int state, const char *workspace,
                        VsError **err) {
        static const struct {
                const char *name;
                VsHostText text; /* EMPTY with dir */
                bool dir;
        } entries[] = {
                { "objects", VS_HOST_TEXT_EMPTY, true },     { "objects/info", VS_HOST_TEXT_EMPTY, true },
                { "objects/pack", VS_HOST_TEXT_EMPTY, true }, { "refs", VS_HOST_TEXT_EMPTY, true },
                { "refs/heads", VS_HOST_TEXT_EMPTY, true },   { "refs/tags", VS_HOST_TEXT_EMPTY, true },
                { "config", VS_HOST_TEXT_GIT_CONFIG, false }, { "HEAD", VS_HOST_TEXT_GIT_HEAD, false },
        };
        int r = state == DOTGIT_MISSING ? m->make(m->userdata, rel, VS_HOST_MAKE_DIR, VS_HOST_TEXT_EMPTY, err) : 0;
        if (r < 0)
                return err && *err ? r
                                   : vs_error_set_kind(err, r, "sandbox_unavailable",
                                                       "cannot make %s/.git for its repository (git_init = true): %s",
                                                       workspace, strerror(-r));
        _cleanup_close_ int gfd = openat(wfd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat gst;
        if (gfd < 0 || fstat(gfd, &gst) < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "%s/.git: %m", workspace);
        char *names[ELEMENTSOF(entries)] = { NULL };
        VsHostItem items[ELEMENTSOF(entries)];
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(entries); i++) {
                names[i] = path_join(rel, entries[i].name);
                items[i] = (VsHostItem){ .rel = names[i],
                                         .flags = VS_HOST_MAKE_EXCL | (entries[i].dir ? VS_HOST_MAKE_DIR : 0),
                                         .text = entries[i].text };
                if (!names[i])
                        r = -ENOMEM;
        }
        /* All in one request where the maker batches (one child of the
         * monitor, not eight): made in turn, the first failure ends it,
         * as the loop below. */
        if (r >= 0 && m->make_many)
                r = m->make_many(m->userdata, items, ELEMENTSOF(items), NULL);
        else
                for (size_t i = 0; r >= 0 && i < ELEMENTSOF(items); i++)
                        r = m->make(m->userdata, items[i].rel, items[i].flags, items[i].text, NULL);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                free(names[i]);
        return made_check(wfd, gfd, &gst, r, workspace, err);
}

int git_repo_make(const char *workspace, const VsHostMaker *maker, VsError **err) {
        _cleanup_close_ int wfd = chase_open_dir(workspace);
        if (wfd < 0)
                return vs_error_set_kind(err, wfd, "sandbox_unavailable",
                                         "cannot reach the workspace %s (a directory reached without symlinks) to make its repository: %s",
                                         workspace, strerror(-wfd));
        int state = dotgit_state(wfd);
        if (state < 0)
                return vs_error_set_kind(err, state, "sandbox_unavailable", "%s/.git: %s", workspace, strerror(-state));
        if (state == DOTGIT_LEAVE)
                return 0;
        _cleanup_free_ char *dotgit = path_join(workspace, ".git");
        const char *rel;
        const VsHostMaker *m = dotgit ? host_maker_for(maker, dotgit, &rel) : NULL;
        if (m)
                return repo_make_by(m, rel, wfd, state, workspace, err);
        struct stat wst;
        if (fstat(wfd, &wst) < 0)
                return -errno;
        bool root = geteuid() == 0;
        /* As root, everything made is the workspace owner's (a root-owned
         * .git breaks their git); nothing else runs. */
        Owner o = { .chown = root, .uid = wst.st_uid, .gid = wst.st_gid };
        int made = state == DOTGIT_MISSING ? host_mkdirat(wfd, ".git", 0700) : 0;
        if (made < 0 && made != -EEXIST) {
                /* A read-only file system is the jail's too; a refusal by
                 * permission is no proof the jail would meet one (it may
                 * chmod its owner's directory: host_mkdirat opened a
                 * read-only one for the make). */
                if (made == -EROFS)
                        return 0;
                return vs_error_set_kind(err, made, "sandbox_unavailable",
                                         "cannot make %s/.git for its repository (git_init = true): %s%s", workspace,
                                         strerror(-made), host_closed_hint(made));
        }
        /* The directory the repository is made in, held: afterwards .git
         * must still be it (nothing swapped a symlink in meanwhile). An
         * empty .git someone else made (the placeholder) is given to the
         * owner. */
        _cleanup_close_ int gfd = openat(wfd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat gst;
        if (gfd < 0 || fstat(gfd, &gst) < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "%s/.git: %m", workspace);
        int r = settle(gfd, 0755, &o);
        if (r >= 0)
                r = skeleton(gfd, &o);
        return made_check(wfd, gfd, &gst, r, workspace, err);
}
