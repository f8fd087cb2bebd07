/* SPDX-License-Identifier: MIT */
/* Making a workspace's repository on the host before its jail starts
 * (git-init.h). */
#include "git-init.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "git-control.h"
#include "path-util.h"
#include "spawn-util.h"

/* git init is a few milliseconds; a hung one (a stuck network file
 * system) must not hold a daemon thread for ever. */
#define GIT_INIT_TIMEOUT_MS 30000
#define GIT_STDERR_MAX 2048

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
        int fd = openat(wfd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -ENOMEM;
        }
        int state = DOTGIT_EMPTY;
        for (struct dirent *de; state == DOTGIT_EMPTY && (de = readdir(d));)
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        state = DOTGIT_LEAVE;
        closedir(d);
        return state;
}

typedef struct GitRun {
        const char *git;
        int wfd, err_w;
        uid_t uid;
        gid_t gid;
        bool switch_user;
        pid_t parent;
} GitRun;

/* The child, after fork: only system calls until exec. */
static _noreturn_ void git_child(const GitRun *g) {
        /* Why the environment is this and nothing else: git init reads the
         * system and global config (init.templateDir copies hooks in,
         * core.sharedRepository sets modes, include.path reads further) and
         * GIT_DIR, GIT_TEMPLATE_DIR or GIT_CONFIG_* from the environment; a
         * user's ~/.gitconfig may be where the agent writes (a home listed
         * in rw_paths). --template= with nothing copies no template (no
         * sample hooks, no info/exclude); GIT_CONFIG_GLOBAL (git >= 2.32)
         * and HOME unset (older git) skip the global config. --quiet: no
         * advice about the initial branch's name. */
        static char *const envp[] = {
                (char *)"PATH=/usr/local/bin:/usr/bin:/bin", (char *)"LC_ALL=C", (char *)"GIT_CONFIG_NOSYSTEM=1",
                (char *)"GIT_CONFIG_GLOBAL=/dev/null", NULL,
        };
        char *const argv[] = { (char *)g->git, (char *)"init", (char *)"--quiet", (char *)"--template=", NULL };
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        /* In the workspace by its descriptor (reached without symlinks):
         * git makes ./.git there. */
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(g->err_w, 2) < 0 || fchdir(g->wfd) < 0)
                _exit(126);
        int keep[] = { 0, 1, 2 };
        if (close_all_fds_except(keep, ELEMENTSOF(keep)) < 0)
                _exit(126);
        /* As the workspace's owner: the repository is theirs (a root-owned
         * .git breaks their git), and git can write nothing they could
         * not. */
        if (g->switch_user && (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, g->gid, g->gid, g->gid) < 0 ||
                               syscall(SYS_setresuid, g->uid, g->uid, g->uid) < 0))
                _exit(126);
        /* After the uid change, which clears it: die with the caller. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != g->parent)
                _exit(126);
        execve(g->git, argv, envp);
        _exit(127);
}

/* Runs g; its stderr (cut) in *ret_stderr. Returns its exit status, 128 +
 * a signal, or a negative errno. */
static int git_run(GitRun *g, char **ret_stderr) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_close_ int err_r = p[0];
        g->err_w = p[1];
        g->parent = getpid();
        _cleanup_(spawn_killp) pid_t pid = spawn_fork(0);
        if (pid == 0)
                git_child(g);
        safe_close(p[1]);
        if (pid < 0)
                return pid;
        char buf[GIT_STDERR_MAX + 1];
        size_t len = 0;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                long left = GIT_INIT_TIMEOUT_MS - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
                struct pollfd pfd = { .fd = err_r, .events = POLLIN };
                int k = left > 0 ? poll(&pfd, 1, (int)left) : 0;
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -ETIMEDOUT; /* spawn_killp ends it */
                char tmp[512];
                ssize_t n = read(err_r, tmp, sizeof tmp);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                size_t take = (size_t)n < GIT_STDERR_MAX - len ? (size_t)n : GIT_STDERR_MAX - len;
                memcpy(buf + len, tmp, take);
                len += take;
        }
        while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
                len--;
        buf[len] = 0;
        if (!(*ret_stderr = strdup(buf)))
                return -ENOMEM;
        int status = spawn_wait(pid);
        pid = 0;
        return status;
}

/* The git to run: VECTORA_GIT (tests point it at a missing one; an
 * operator at another git), else PATH's. */
static int find_git(const char *workspace, char **ret, VsError **err) {
        const char *e = secure_getenv("VECTORA_GIT");
        char *git = e && *e ? (e[0] == '/' ? path_find_executable_os(e, NULL) : NULL)
                            : path_find_executable_os("git", getenv("PATH"));
        if (!git && e && *e)
                return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                         "git_init = true: %s has no repository, which is made on the host before the jail starts, and VECTORA_GIT=%s is not an absolute path to an executable; point it at git, or set git_init = false",
                                         workspace, e);
        if (!git)
                return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                         "git_init = true: %s has no repository, which is made on the host before the jail starts (so the jail cannot write its config and hooks), and git is not installed on this host; install git (apt-get install git), or set git_init = false",
                                         workspace);
        *ret = git;
        return 0;
}

int git_repo_make(const char *workspace, VsError **err) {
        _cleanup_close_ int wfd = git_control_open_dir(workspace);
        if (wfd < 0)
                return vs_error_set_kind(err, wfd, "sandbox_unavailable",
                                         "cannot reach the workspace %s (a directory reached without symlinks) to make its repository: %s",
                                         workspace, strerror(-wfd));
        int state = dotgit_state(wfd);
        if (state < 0)
                return vs_error_set_kind(err, state, "sandbox_unavailable", "%s/.git: %s", workspace, strerror(-state));
        if (state == DOTGIT_LEAVE)
                return 0;
        _cleanup_free_ char *git = NULL;
        int r = find_git(workspace, &git, err);
        if (r < 0)
                return r;
        struct stat wst;
        if (fstat(wfd, &wst) < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "%s: %m", workspace);
        bool root = geteuid() == 0;
        if (state == DOTGIT_MISSING) {
                if (mkdirat(wfd, ".git", 0755) < 0 && errno != EEXIST) {
                        /* Not root: what this uid may not create, the jail
                         * (the same uid, with less) may not either. */
                        if (!root && (errno == EACCES || errno == EPERM || errno == EROFS))
                                return 0;
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable",
                                                 "cannot make %s/.git for its repository (git_init = true): %m", workspace);
                }
        }
        /* The directory git will run on, held: afterwards .git must still
         * be it (nothing swapped a symlink in meanwhile). */
        _cleanup_close_ int gfd = openat(wfd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat gst, now;
        if (gfd < 0 || fstat(gfd, &gst) < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "%s/.git: %m", workspace);
        /* git runs as the owner: a .git this process made, or an empty one
         * someone else did (root), is given to them first. */
        if (root && fchown(gfd, wst.st_uid, wst.st_gid) < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable",
                                         "cannot give %s/.git to the workspace's owner: %m", workspace);
        GitRun g = { .git = git, .wfd = wfd, .uid = wst.st_uid, .gid = wst.st_gid, .switch_user = root };
        _cleanup_free_ char *errtext = NULL;
        int status = git_run(&g, &errtext);
        if (status < 0)
                return vs_error_set_kind(err, status, "sandbox_unavailable", "running %s init in %s: %s", git, workspace,
                                         status == -ETIMEDOUT ? "no answer in 30 s" : strerror(-status));
        if (status != 0)
                return vs_error_set_kind(err, -EIO, "sandbox_unavailable",
                                         "%s init in %s (git_init = true) failed with status %d%s%s", git, workspace, status,
                                         errtext && *errtext ? ": " : status == 127 ? ": cannot execute it" : "",
                                         errtext ? errtext : "");
        if (fstatat(wfd, ".git", &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != gst.st_dev || now.st_ino != gst.st_ino ||
            fstatat(gfd, "HEAD", &now, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(now.st_mode))
                return vs_error_set_kind(err, -ESTALE, "sandbox_unavailable",
                                         "%s/.git changed while git made the repository there; not starting the jail", workspace);
        return 0;
}
