/* SPDX-License-Identifier: MIT */
/* One daemon instance per socket.
 *
 * Several daemons may run on one host (one per user, test suites, a
 * system one): each owns what it creates, named after an instance id
 * derived from its socket path. Its runtime directory is
 * RUNTIME/d-ID (mask sources, staging, manifests) and its cgroups live
 * under vectora-sandboxd/ID, so no daemon sweeps or joins another's
 * groups. RUNTIME/d-ID/lock, held with flock() for the daemon's life,
 * makes a second daemon on the same socket refuse to start even when the
 * socket file was removed under the first one; it also tells a starting
 * daemon which other instances are gone, so their leftovers may go. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "fd-util.h"
#include "instance.h"
#include "jail-plan.h"
#include "log.h"
#include "path-util.h"
#include "server.h"
#include "sha256.h"

/* The socket's absolute path, its directory resolved (the socket file may
 * not exist yet), so that two spellings of one socket give one id. */
static int socket_identity(const char *socket_path, char **ret) {
        _cleanup_free_ char *copy = strdup(socket_path);
        if (!copy)
                return -ENOMEM;
        char *slash = strrchr(copy, '/');
        const char *dir = ".", *base = copy;
        if (slash) {
                *slash = 0;
                dir = *copy ? copy : "/";
                base = slash + 1;
        }
        char canon[PATH_MAX];
        if (!realpath(dir, canon))
                return -errno;
        *ret = path_join(canon, base);
        return *ret ? 0 : -ENOMEM;
}

int instance_id(const char *socket_path, char ret[INSTANCE_ID_LEN + 1]) {
        _cleanup_free_ char *ident = NULL;
        int r = socket_identity(socket_path, &ident);
        if (r < 0)
                return r;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(ident, strlen(ident), hex);
        memcpy(ret, hex, INSTANCE_ID_LEN);
        ret[INSTANCE_ID_LEN] = 0;
        return 0;
}

static char *instance_dir_of(const char *runtime_root, const char *id) {
        char *d = NULL;
        return asprintf(&d, "%s/d-%s", runtime_root, id) < 0 ? NULL : d;
}

/* Whether the instance may have a live daemon: only a lock file that this
 * daemon could open and lock says it has none (a daemon that was killed
 * leaves its file, free). No file says nothing: a daemon that exited
 * cleanly took its groups with it, and one whose /run is not ours (a
 * private mount namespace: test-cli runs the README's root daemon on a
 * tmpfs /run; a container) keeps its lock where this daemon cannot see
 * it. Taken for dead, that daemon's jails were SIGKILLed here ("its jail
 * was killed by signal 9"), the other way round too. */
bool instance_alive(const char *runtime_root, const char *id) {
        _cleanup_free_ char *d = instance_dir_of(runtime_root, id);
        _cleanup_free_ char *lock = d ? path_join(d, "lock") : NULL;
        if (!lock)
                return true; /* out of memory: assume alive, sweep nothing */
        _cleanup_close_ int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return true;
        if (flock(fd, LOCK_SH | LOCK_NB) < 0)
                return true;
        (void)flock(fd, LOCK_UN);
        return false;
}

static void read_owner(int fd, char *buf, size_t size) {
        buf[0] = 0;
        ssize_t n = pread(fd, buf, size - 1, 0);
        if (n <= 0)
                return;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
}

/* The mask sources a killed daemon's starts left (jail-plan.h
 * jail_own_sources: removed at each jail's hello, so only a start the
 * daemon died in leaves them). The lock is this daemon's: no other uses
 * the directory. */
static void remove_stale_sources(const char *dir) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (strncmp(de->d_name, "masks-", 6) == 0 && de->d_type == DT_DIR) {
                        _cleanup_free_ char *p = path_join(dir, de->d_name);
                        if (p)
                                jail_own_sources_remove(p);
                }
}

int instance_acquire(Server *srv, VsError **err) {
        const char *sock = srv->opt.socket_path;
        int r = instance_id(sock, srv->instance_id);
        if (r < 0)
                return vs_error_set(err, r, "the directory of the socket %s: %s", sock, strerror(-r));
        /* The lock lives below the default runtime directory even with
         * --runtime-dir: every daemon of this uid looks there before it
         * sweeps an instance's cgroups. */
        _cleanup_free_ char *dir = instance_dir_of(srv->opt.runtime_dir, srv->instance_id);
        _cleanup_free_ char *ldir = instance_dir_of(srv->opt.lock_root ? srv->opt.lock_root : srv->opt.runtime_dir,
                                                    srv->instance_id);
        _cleanup_free_ char *lock = ldir ? path_join(ldir, "lock") : NULL;
        if (!lock || !dir)
                return vs_error_set(err, -ENOMEM, "out of memory");
        const char *dirs[2] = { ldir, dir };
        for (int k = 0; k < 2; k++) {
                if (mkdir(dirs[k], 0755) < 0 && errno != EEXIST)
                        return vs_error_set(err, -errno, "cannot create the instance directory %s: %m", dirs[k]);
                struct stat st;
                if (lstat(dirs[k], &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
                        return vs_error_set(err, -EPERM,
                                            "instance directory %s is not a directory owned by uid %u and writable only by it; remove it",
                                            dirs[k], (unsigned)geteuid());
        }
        /* Another starting daemon may hold the lock shared for a moment
         * while it checks whether this instance is alive: retry briefly. */
        for (int attempt = 0;; attempt++) {
                _cleanup_close_ int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
                if (fd < 0)
                        return vs_error_set(err, -errno, "opening the instance lock %s: %m", lock);
                if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                        if (errno != EWOULDBLOCK)
                                return vs_error_set(err, -errno, "locking %s: %m", lock);
                        if (attempt < 100) {
                                nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
                                continue;
                        }
                        char owner[256];
                        read_owner(fd, owner, sizeof owner);
                        /* The daemon named there is gone, yet the lock is
                         * held: by its root monitor, which keeps it until
                         * its cleanup of the daemon's groups is done (a
                         * moment), or which was stopped meanwhile. */
                        long pid = strncmp(owner, "pid ", 4) ? 0 : strtol(owner + 4, NULL, 10);
                        if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
                                return vs_error_set(err, -EADDRINUSE,
                                                    "the vectora-sandboxd that served the socket %s (pid %ld) is gone, but "
                                                    "another process still holds its lock %s: its root monitor, which lets "
                                                    "go once it has ended what the daemon left (300 ms at most) unless it "
                                                    "is stopped; `fuser -v %s` names it: resume (SIGCONT) or end it, then "
                                                    "start again",
                                                    sock, pid, lock, lock);
                        return vs_error_set(err, -EADDRINUSE,
                                            "another vectora-sandboxd is listening: %s already serves the socket %s (it holds %s); "
                                            "stop it first, or give this one another --socket",
                                            owner[0] ? owner : "pid unknown", sock, lock);
                }
                /* A daemon exiting removes its lock file: holding a lock on
                 * an unlinked file protects nothing, so take the new one. */
                struct stat a, b;
                if (fstat(fd, &a) < 0 || stat(lock, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
                        continue;
                char line[64];
                int n = snprintf(line, sizeof line, "pid %d\n", (int)getpid());
                if (ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)n, 0) != n)
                        return vs_error_set(err, -errno, "writing %s: %m", lock);
                srv->instance_lock_fd = TAKE_FD(fd);
                break;
        }
        srv->instance_dir = TAKE_PTR(dir);
        srv->instance_lock_dir = TAKE_PTR(ldir);
        remove_stale_sources(srv->instance_dir);
        return 0;
}

/* The lock says which process holds it: after detaching, that is the
 * daemon, not the launcher that took it. */
void instance_update_owner(Server *srv) {
        if (srv->instance_lock_fd < 0)
                return;
        char line[64];
        int n = snprintf(line, sizeof line, "pid %d\n", (int)getpid());
        if (ftruncate(srv->instance_lock_fd, 0) < 0 || pwrite(srv->instance_lock_fd, line, (size_t)n, 0) != n)
                log_warning("writing the daemon's pid to its instance lock: %m");
}

void instance_release(Server *srv) {
        if (!srv->instance_dir)
                return;
        /* What launch_ensure_runtime() made, then the lock while still
         * holding it, then the directory (kept if anything else is left). */
        _cleanup_free_ char *ef = path_join(srv->instance_dir, "empty-file");
        _cleanup_free_ char *lock = srv->instance_lock_dir ? path_join(srv->instance_lock_dir, "lock") : NULL;
        if (ef)
                (void)unlink(ef);
        if (lock)
                (void)unlink(lock);
        _cleanup_free_ char *ed = path_join(srv->instance_dir, "empty-dir");
        if (ed)
                (void)rmdir(ed);
        (void)rmdir(srv->instance_dir);
        if (srv->instance_lock_dir) {
                (void)rmdir(srv->instance_lock_dir);
                free(srv->instance_lock_dir);
                srv->instance_lock_dir = NULL;
        }
        srv->instance_lock_fd = safe_close(srv->instance_lock_fd);
}
