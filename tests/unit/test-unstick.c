/* SPDX-License-Identifier: MIT */
/* The root monitor's watch over the server's threads
 * (src/daemon/monitor/unstick.c). A user holds a directory (getdents64
 * into a buffer mapped from a file of a FUSE file system they mounted in a
 * user namespace of their own, whose read never comes) with a mkdir queued
 * in it; a process standing for the server looks a name up there and
 * waits in the kernel, uninterruptibly, as the daemon's loop did (attack
 * review 8b, N8: every workspace's calls stopped, SIGKILL could not end
 * it, a new daemon could not start). The watch must end the user's
 * connection, and with it the wait; never a FUSE file system root
 * mounted, and nothing while the server runs. Runs as root (skipped
 * otherwise, said). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "fuse-stall.h"
#include "time-util.h"
#include "unstick.h"

typedef struct Shared {
        volatile int stall;  /* fuse_serve_mode's */
        volatile int ready;  /* 1: the holder is about to read; -1: it could not mount */
        volatile pid_t fs;   /* the FUSE server (the holder's child) */
        volatile int stall2; /* a second file system's (another user's) */
} Shared;

typedef struct Fixture {
        char dir[64], ws[96], mnt[128], dev[96], mnt2[128], decoy[128];
        pid_t fs2, busy, decoys, mapper;
        Shared *sh;
        pid_t holder, queued, server;
} Fixture;

static int setup(void **state) {
        *state = NULL;
        if (geteuid() != 0)
                return 0; /* each case skips, saying why */
        Fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        snprintf(f->dir, sizeof f->dir, "/tmp/unstick.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(chmod(f->dir, 0755), 0);
        snprintf(f->ws, sizeof f->ws, "%s/ws", f->dir);
        snprintf(f->mnt, sizeof f->mnt, "%s/mnt", f->dir);
        snprintf(f->mnt2, sizeof f->mnt2, "%s/mnt2", f->dir);
        snprintf(f->decoy, sizeof f->decoy, "%s/decoy", f->dir);
        assert_int_equal(mkdir(f->decoy, 0777), 0);
        assert_int_equal(chmod(f->decoy, 0777), 0);
        assert_int_equal(mkdir(f->mnt2, 0755), 0);
        assert_int_equal(mkdir(f->ws, 0777), 0);
        assert_int_equal(chmod(f->ws, 0777), 0);
        assert_int_equal(mkdir(f->mnt, 0777), 0);
        assert_int_equal(chmod(f->mnt, 0777), 0);
        /* A device node of the test's own, open to all as a distribution's
         * /dev/fuse is (this host's may be 0600). */
        snprintf(f->dev, sizeof f->dev, "%s/fuse", f->dir);
        if (mknod(f->dev, S_IFCHR | 0666, makedev(10, 229)) == 0)
                assert_int_equal(chmod(f->dev, 0666), 0);
        fuse_dev_path = f->dev; /* none (a container's device policy): each case skips at its mount */
        f->sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(f->sh != MAP_FAILED);
        *state = f;
        return 0;
}

static void reap(pid_t *pid) {
        if (*pid > 0) {
                kill(*pid, SIGKILL);
                waitpid(*pid, NULL, 0);
        }
        *pid = 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        if (!f)
                return 0;
        /* The FUSE server's end ends every wait on it. */
        if (f->sh->fs > 0)
                kill(f->sh->fs, SIGKILL);
        if (f->fs2 > 0)
                kill(f->fs2, SIGKILL); /* first: a waiter on it waits out SIGKILL until it ends */
        reap(&f->server);
        reap(&f->mapper);
        reap(&f->decoys);
        reap(&f->busy);
        unstick_scan_ms = UNSTICK_SCAN_MS;
        if (f->fs2 > 0)
                (void)umount2(f->mnt2, MNT_DETACH);
        reap(&f->fs2);
        rmdir(f->mnt2);
        rmdir(f->decoy);
        reap(&f->queued);
        reap(&f->holder);
        rmdir(f->mnt);
        unlink(f->dev);
        char x[128];
        snprintf(x, sizeof x, "%s/x", f->ws);
        rmdir(x);
        rmdir(f->ws);
        rmdir(f->dir);
        munmap(f->sh, 4096);
        free(f);
        return 0;
}

static void need_root(const Fixture *f) {
        if (!f) {
                fprintf(stderr, "# SKIP: needs root (it mounts FUSE file systems)\n");
                skip();
        }
}

static bool write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
        if (fd >= 0)
                close(fd);
        return ok;
}

/* The holder: as uid 65533 in a user and mount namespace of its own (or
 * as root in a mount namespace of its own: as_root), mounts the FUSE file
 * system, maps its file and reads f->ws into the mapping. */
static void hold(Fixture *f, bool as_root) {
        need_root(f);
        f->holder = fork();
        assert_true(f->holder >= 0);
        if (f->holder == 0) {
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (!as_root) {
                        /* Dumpable again after the change: its own uid_map. */
                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65533, 65533, 65533) < 0 ||
                            prctl(PR_SET_DUMPABLE, 1) < 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 || !write_file("/proc/self/uid_map", "0 65533 1") ||
                            !write_file("/proc/self/setgroups", "deny") || !write_file("/proc/self/gid_map", "0 65534 1"))
                                goto fail;
                } else if (unshare(CLONE_NEWNS) < 0)
                        goto fail;
                if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                        goto fail;
                pid_t fs = fuse_serve_mode(f->mnt, &f->sh->stall, S_IFDIR);
                if (fs <= 0)
                        goto fail;
                f->sh->fs = fs;
                char file[160];
                snprintf(file, sizeof file, "%s/file", f->mnt);
                int ff = open(file, O_RDONLY | O_CLOEXEC);
                char *map = ff < 0 ? MAP_FAILED : mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, ff, 0);
                if (map == MAP_FAILED || mprotect(map, 65536, PROT_READ | PROT_WRITE) < 0)
                        goto fail;
                int d = open(f->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                f->sh->ready = 1;
                _exit(syscall(SYS_getdents64, d, map, 65536) < 0);
        fail:
                f->sh->ready = -1;
                _exit(2);
        }
        for (int i = 0; i < 500 && !f->sh->ready; i++)
                usleep(10 * 1000);
        if (f->sh->ready < 0) {
                fprintf(stderr, "# SKIP: a FUSE file system cannot be mounted here\n");
                skip();
        }
        assert_int_equal(f->sh->ready, 1);
        usleep(300 * 1000); /* in its read, the lock held */
}

static char state_of(pid_t pid) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        char *p = strrchr(buf, ')');
        return p && p[1] == ' ' ? p[2] : 0;
}

/* A mkdir queued behind the holder, then the server's lookup of a name
 * never looked up: in 'D' once it waits. */
static void queue_and_look_up(Fixture *f) {
        f->queued = fork();
        assert_true(f->queued >= 0);
        if (f->queued == 0) {
                char x[128];
                snprintf(x, sizeof x, "%s/x", f->ws);
                _exit(mkdir(x, 0755) < 0);
        }
        usleep(200 * 1000);
        f->server = fork();
        assert_true(f->server >= 0);
        if (f->server == 0) {
                char ghost[128];
                struct stat st;
                snprintf(ghost, sizeof ghost, "%s/never-looked-up", f->ws);
                _exit(lstat(ghost, &st) == 0 ? 3 : errno == ENOENT ? 0 : 4);
        }
        char s = 0;
        for (int i = 0; i < 100 && (s = state_of(f->server)) != 'D'; i++)
                usleep(20 * 1000);
        assert_int_equal(s, 'D');
}

/* Steps the watch over pid for ms, or until pid ends: whether it did. */
static bool watch(Unstick *u, pid_t *pid, uint64_t ms) {
        uint64_t end = now_ms() + ms;
        bool gone = false;
        while (now_ms() < end && !(gone && !u->child)) {
                unstick_step(u, now_ms(), NULL, 0, NULL);
                int status;
                if (!gone && waitpid(*pid, &status, WNOHANG) == *pid) {
                        gone = true;
                        *pid = 0;
                        assert_true(WIFEXITED(status));
                        assert_int_equal(WEXITSTATUS(status), 0); /* ENOENT: the lookup was answered */
                }
                usleep(50 * 1000);
        }
        return gone;
}

/* The user's connection is ended: the server's lookup returns. */
static void user_fuse_holding_the_server_is_ended(void **state) {
        Fixture *f = *state;
        hold(f, false);
        queue_and_look_up(f);
        Unstick u;
        unstick_init(&u, f->server, 1000);
        uint64_t t0 = now_ms();
        bool gone = watch(&u, &f->server, 10000);
        uint64_t took = now_ms() - t0;
        assert_true(gone);
        assert_int_equal(u.ended, 1);
        /* Held at least after_ms (a look a second), ended at once then. */
        assert_true(took >= 1000);
        assert_true(took < 6000);
        /* The holder's read failed with the connection. */
        int status;
        assert_int_equal(waitpid(f->holder, &status, 0), f->holder);
        f->holder = 0;
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

/* A FUSE file system root mounted is never ended: the server stays held
 * (the case's end lets it go). */
static void root_fuse_is_left_alone(void **state) {
        Fixture *f = *state;
        hold(f, true);
        queue_and_look_up(f);
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 3500);
        assert_false(gone);
        assert_true(u.tried_ms != 0); /* it looked, and left it */
        assert_int_equal(u.ended, 0);
        assert_int_equal(state_of(f->server), 'D');
}

/* A user's connection with a request unanswered while the server is not
 * held: nothing is ended, no child is even started. */
static void nothing_ended_while_the_server_runs(void **state) {
        Fixture *f = *state;
        hold(f, false);
        f->server = fork();
        assert_true(f->server >= 0);
        if (f->server == 0) {
                pause();
                _exit(0);
        }
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 3500);
        assert_false(gone);
        assert_int_equal(u.tried_ms, 0);
        assert_int_equal(u.ended, 0);
        assert_int_equal(waitpid(f->holder, NULL, WNOHANG), 0); /* still in its read */
}

/* A file system a user mounted (fusermount's user_id) that answers
 * nothing: the server's lookup there waits for its answer in
 * interruptible sleep ('S', not 'D', until a signal that never comes):
 * ended all the same. */
static void user_mount_lookups(Fixture *f, int stall, bool again) {
        need_root(f);
        f->sh->stall = stall;
        fuse_user_id = 65533;
        pid_t fs = fuse_serve_mode(f->mnt, &f->sh->stall, S_IFDIR);
        fuse_user_id = 0;
        if (fs <= 0) {
                fprintf(stderr, "# SKIP: a FUSE file system cannot be mounted here\n");
                skip();
        }
        f->sh->fs = fs;
        f->server = fork();
        assert_true(f->server >= 0);
        if (f->server == 0) {
                char name[160];
                struct stat st;
                snprintf(name, sizeof name, "%s/vectora.toml", f->mnt);
                int r;
                while ((r = stat(name, &st)) < 0 && errno == ENOENT && again)
                        ;
                _exit(r < 0 && errno != ENOENT ? 0 : 5);
        }
        char s = 0;
        for (int i = 0; i < 100 && (s = state_of(f->server)) != 'S'; i++)
                usleep(20 * 1000);
        usleep(200 * 1000);
        assert_int_equal(state_of(f->server), 'S');
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 8000);
        (void)umount2(f->mnt, MNT_DETACH);
        assert_true(gone);
        assert_int_equal(u.ended, 1);
}

static void user_fuse_mount_answering_nothing_is_ended(void **state) {
        user_mount_lookups(*state, 2, false);
}

/* Each lookup answered just before the watch's bound (0.8 s of 1 s): the
 * thread runs between them, but is seen waiting at every look; after
 * twice the bound it is held all the same. */
static void user_fuse_mount_answering_late_is_ended(void **state) {
        user_mount_lookups(*state, 3, true);
}

/* The server held through one user's directory while another user's
 * file system is busy (each lookup answered, 0.8 s late, to a process
 * that asks again and again: requests waiting at every look): only the
 * holder's connection is ended; the busy one, whose waiter runs between
 * its answers, is left alone (before: every user's connection with a
 * request waiting was ended). */
static void another_users_busy_fuse_is_left_alone(void **state) {
        Fixture *f = *state;
        hold(f, false);
        f->sh->stall2 = 3;
        fuse_user_id = 65532;
        f->fs2 = fuse_serve_mode(f->mnt2, &f->sh->stall2, S_IFDIR);
        fuse_user_id = 0;
        assert_true(f->fs2 > 0);
        f->busy = fork();
        assert_true(f->busy >= 0);
        if (f->busy == 0) {
                char name[160];
                struct stat st;
                snprintf(name, sizeof name, "%s/x", f->mnt2);
                while (stat(name, &st) < 0 && errno == ENOENT)
                        ;
                _exit(0);
        }
        queue_and_look_up(f);
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 10000);
        assert_true(gone);
        assert_int_equal(u.ended, 1);
        /* The busy one's waiter still asks and is answered. */
        assert_int_equal(waitpid(f->busy, NULL, WNOHANG), 0);
}

/* The server itself waits for a user's FUSE answer that never comes
 * (a workspace on their mount) while another user's file system is busy
 * with pauses between its requests (each answered 0.8 s late, asked
 * again 50 ms after): only the first is ended, the busy one had moments
 * with nothing waiting. */
static void a_busy_fuse_with_pauses_is_left_alone(void **state) {
        Fixture *f = *state;
        need_root(f);
        f->sh->stall2 = 3;
        fuse_user_id = 65532;
        f->fs2 = fuse_serve_mode(f->mnt2, &f->sh->stall2, S_IFDIR);
        fuse_user_id = 0;
        assert_true(f->fs2 > 0);
        f->busy = fork();
        assert_true(f->busy >= 0);
        if (f->busy == 0) {
                char name[160];
                struct stat st;
                snprintf(name, sizeof name, "%s/x", f->mnt2);
                while (stat(name, &st) < 0 && errno == ENOENT)
                        usleep(50 * 1000);
                _exit(0);
        }
        user_mount_lookups(f, 2, false);
        assert_int_equal(waitpid(f->busy, NULL, WNOHANG), 0);
}

/* n connections of a user's (65531) whose INIT is never read, in a user
 * namespace of theirs: requests waiting, no server (attack review 9 made
 * 30 000 to run the child past its deadline). Ended with the process. */
static void make_decoys(Fixture *f, int n) {
        f->sh->ready = 0;
        f->decoys = fork();
        assert_true(f->decoys >= 0);
        if (f->decoys == 0) {
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
                struct rlimit rl = { 4096, 4096 };
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                    setresuid(65531, 65531, 65531) < 0 || prctl(PR_SET_DUMPABLE, 1) < 0 ||
                    unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 || !write_file("/proc/self/uid_map", "0 65531 1") ||
                    !write_file("/proc/self/setgroups", "deny") || !write_file("/proc/self/gid_map", "0 65534 1"))
                        goto fail;
                for (int i = 0; i < n; i++) {
                        int fd = open(f->dev, O_RDWR | O_CLOEXEC);
                        char opts[96];
                        snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
                        if (fd < 0 || mount("decoy", f->decoy, "fuse.decoy", 0, opts) < 0)
                                goto fail;
                }
                f->sh->ready = 1;
                pause();
                _exit(0);
        fail:
                f->sh->ready = -1;
                _exit(2);
        }
        for (int i = 0; i < 1000 && !f->sh->ready; i++)
                usleep(10 * 1000);
        assert_int_equal(f->sh->ready, 1);
}

/* Stderr into a file for the case: the lines saying a connection ended. */
static int count_lines(const char *path, const char *what) {
        FILE *in = fopen(path, "re");
        char line[1024];
        int n = 0;
        while (in && fgets(line, sizeof line, in))
                n += strstr(line, what) != NULL;
        if (in)
                fclose(in);
        return n;
}

/* Held behind a lock while a user keeps 1 000 connections waiting (never
 * answered, never used by the holder): only the holder's connection is
 * ended, and the decoys cost the child nothing it cannot afford (attack
 * review 9, F2: the child spent its 3 s on 30 000 of them, the hold stayed
 * 38 s). */
static void decoys_do_not_hide_the_holder(void **state) {
        Fixture *f = *state;
        hold(f, false);
        make_decoys(f, 1000);
        queue_and_look_up(f);
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 15000);
        assert_true(gone);
        assert_int_equal(u.ended, 1);
}

/* The server itself waits on a user's FUSE answer while 80 decoys of
 * another user's wait too: too many to tell which, every one is ended
 * (each one write), and the log says it a line per user, naming both
 * (attack review 9, F3: a line each, 35 MB in 35 s; 9b F3: 8 named, all
 * the attacker's, the victim not). */
static void decoys_ended_with_a_bounded_log(void **state) {
        Fixture *f = *state;
        need_root(f);
        make_decoys(f, 80);
        char log[128];
        snprintf(log, sizeof log, "%s/log", f->dir);
        int saved = dup(2), lf = open(log, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(saved >= 0 && lf >= 0);
        assert_int_equal(dup2(lf, 2), 2);
        close(lf);
        f->sh->stall = 2;
        fuse_user_id = 65533;
        f->sh->fs = fuse_serve_mode(f->mnt, &f->sh->stall, S_IFDIR);
        fuse_user_id = 0;
        assert_true(f->sh->fs > 0);
        f->server = fork();
        assert_true(f->server >= 0);
        if (f->server == 0) {
                char name[160];
                struct stat st;
                snprintf(name, sizeof name, "%s/vectora.toml", f->mnt);
                _exit(stat(name, &st) < 0 && errno != ENOENT ? 0 : 5);
        }
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 15000);
        (void)umount2(f->mnt, MNT_DETACH);
        assert_int_equal(dup2(saved, 2), 2);
        close(saved);
        int lines = count_lines(log, "FUSE connection(s) of uid"), decoys = count_lines(log, "80 FUSE connection(s) of uid 65531"),
            holder = count_lines(log, "1 FUSE connection(s) of uid 65533");
        unlink(log);
        printf("# %llu ended; %d line(s)\n", (unsigned long long)u.ended, lines);
        assert_true(gone);
        assert_int_equal(u.ended, 81);
        assert_int_equal(lines, 2);
        assert_int_equal(decoys, 1);
        assert_int_equal(holder, 1);
}

/* A FUSE file system root mounted in the host's table (the monitor's
 * own), whose READ never comes, through which a user holds the directory:
 * it is never ended, also with no time at all to look at other processes
 * (attack review 9, F1: the deadline cut the monitor's own table too, and
 * a user's long tables made root's connection unknown, then ended). */
static void roots_own_mount_never_ended(void **state) {
        Fixture *f = *state;
        need_root(f);
        unstick_scan_ms = 0;
        f->sh->stall = 0;
        f->sh->fs = fuse_serve_mode(f->mnt, &f->sh->stall, S_IFDIR);
        assert_true(f->sh->fs > 0);
        f->holder = fork();
        assert_true(f->holder >= 0);
        if (f->holder == 0) {
                char file[160];
                snprintf(file, sizeof file, "%s/file", f->mnt);
                int ff = open(file, O_RDONLY | O_CLOEXEC);
                char *map = ff < 0 ? MAP_FAILED : mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, ff, 0);
                if (map == MAP_FAILED || mprotect(map, 65536, PROT_READ | PROT_WRITE) < 0 ||
                    setresuid(65533, 65533, 65533) < 0)
                        _exit(2);
                int d = open(f->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _exit(syscall(SYS_getdents64, d, map, 65536) < 0);
        }
        usleep(300 * 1000);
        queue_and_look_up(f);
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 4000);
        (void)umount2(f->mnt, MNT_DETACH);
        assert_false(gone);
        assert_true(u.tried_ms != 0);
        assert_int_equal(u.ended, 0);
}

/* 3 000 entries in the workspace, for a read of many pages. */
static void many_entries(Fixture *f, bool make) {
        for (int i = 0; i < 3000; i++) {
                char name[160];
                snprintf(name, sizeof name, "%s/entry-with-a-longer-name-%04d", f->ws, i);
                if (!make)
                        unlink(name);
                else {
                        int fd = open(name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
                        assert_true(fd >= 0);
                        close(fd);
                }
        }
}

/* The holder's file system answers each READ 0.9 s late, and its read
 * of a directory of 3 000 entries spans many pages, a READ each: the
 * holder runs between them (never stalled through the child's second)
 * and holds the lock for as long all the same. Its connection is ended
 * (before: nothing was, and the server waited out every page). */
static void a_holder_answered_just_in_time_is_ended(void **state) {
        Fixture *f = *state;
        need_root(f);
        many_entries(f, true);
        f->sh->stall = 4;
        hold(f, false);
        queue_and_look_up(f);
        Unstick u;
        unstick_init(&u, f->server, 1000);
        uint64_t t0 = now_ms();
        /* Well within the 16 pages' 14 s the holder would hold it. */
        bool gone = watch(&u, &f->server, 9000);
        uint64_t took = now_ms() - t0;
        many_entries(f, false);
        printf("# the lookup answered after %llu ms\n", (unsigned long long)took);
        assert_true(gone);
        assert_int_equal(u.ended, 1);
}

/* The holder answered just in time (as above) while a bystander waits,
 * stalled, on a FUSE file system root mounted (never ended): the first
 * try finds only the bystander and ends nothing; the next, the hold going
 * on, looks at every waiter and ends the holder's (attack review 9b F1:
 * a holder that ran between its pages was never taken for one). */
static void escalates_past_a_stalled_bystander(void **state) {
        Fixture *f = *state;
        need_root(f);
        many_entries(f, true);
        f->sh->stall2 = 0;
        f->fs2 = fuse_serve_mode(f->mnt2, &f->sh->stall2, S_IFDIR); /* root's: user_id 0 */
        assert_true(f->fs2 > 0);
        f->busy = fork();
        assert_true(f->busy >= 0);
        if (f->busy == 0) {
                char file[160];
                snprintf(file, sizeof file, "%s/file", f->mnt2);
                int ff = open(file, O_RDONLY | O_CLOEXEC);
                char *map = ff < 0 ? MAP_FAILED : mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, ff, 0);
                if (map == MAP_FAILED || setresuid(65532, 65532, 65532) < 0)
                        _exit(2);
                _exit(map[0]); /* the fault waits for root's file system */
        }
        f->sh->stall = 4;
        hold(f, false);
        queue_and_look_up(f);
        Unstick u;
        unstick_init(&u, f->server, 1000);
        bool gone = watch(&u, &f->server, 11000);
        (void)umount2(f->mnt2, MNT_DETACH);
        many_entries(f, false);
        assert_true(gone);
        assert_int_equal(u.ended, 1);
        assert_int_equal(waitpid(f->busy, NULL, WNOHANG), 0); /* root's file system not ended */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(user_fuse_holding_the_server_is_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(root_fuse_is_left_alone, setup, teardown),
                cmocka_unit_test_setup_teardown(nothing_ended_while_the_server_runs, setup, teardown),
                cmocka_unit_test_setup_teardown(user_fuse_mount_answering_nothing_is_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(user_fuse_mount_answering_late_is_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(another_users_busy_fuse_is_left_alone, setup, teardown),
                cmocka_unit_test_setup_teardown(a_busy_fuse_with_pauses_is_left_alone, setup, teardown),
                cmocka_unit_test_setup_teardown(decoys_do_not_hide_the_holder, setup, teardown),
                cmocka_unit_test_setup_teardown(decoys_ended_with_a_bounded_log, setup, teardown),
                cmocka_unit_test_setup_teardown(roots_own_mount_never_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(a_holder_answered_just_in_time_is_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(escalates_past_a_stalled_bystander, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
