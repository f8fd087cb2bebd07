/* SPDX-License-Identifier: MIT */
/* The capture decision for undo (issue 32, docs/undo.md): what each way
 * of having a file's state BEFORE a call changes it costs on this machine,
 * side by side over one tree of N files (default 200 000: ten files of
 * 64 bytes a directory, a hundred directories a level above, as the mask
 * benchmarks), warm cache, R rounds (default 5), median with min and max.
 *
 *   (a) an overlay upper directory per call: mount the workspace as an
 *       overlay (lower: the tree, upper: an empty directory) in a mount
 *       namespace of its own, make the call's changes through it, unmount,
 *       merge the upper into the tree with each replaced original renamed
 *       into the store (zero copy). A no-op call, a call changing 10 files
 *       of 10 KiB, and the copy-up a 1-byte append to a 64 MiB file costs.
 *   (b) a hard-link baseline (one link() per file into the store, kept
 *       up to date from the watch's create events) that keeps unlinked and
 *       renamed-over inodes alive, plus copy-before-write: a FAN_OPEN_PERM
 *       mark on the workspace's mount, the listener reading the opener's
 *       flags from /proc/PID/syscall and answering read-only opens at once,
 *       copying a file into the store before its first write open. The
 *       baseline's cost, the cost per open, and the 10-file call.
 *   (c) a content-hash baseline: every file read and hashed once, then a
 *       stat walk per call to find what changed (no pre-image of an
 *       in-place write it did not copy before: it can only say what changed).
 *   The store (src/core/undo/): the 10 files captured and committed, a
 *   no-op checkpoint's bytes, and a restore of 1 000 files of 10 KiB.
 *
 * Root only (overlay and fanotify permission events); runs in a private
 * mount namespace. Usage: bench-undo [N [R]]. Prints a table on stdout. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"
#include "stats.h"
#include "undo-internal.h"
#include "undo-store.h"

#define PER_DIR 10

static double now(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void die(const char *what) {
        fprintf(stderr, "bench-undo: %s: %s\n", what, strerror(errno));
        exit(1);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
        char cmd[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        if (system(cmd) != 0) {
                fprintf(stderr, "bench-undo: failed: %s\n", cmd);
                exit(1);
        }
}

static void write_at(int dfd, const char *name, const void *p, size_t n, int flags) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
        if (fd < 0 || write(fd, p, n) != (ssize_t)n)
                die(name);
        close(fd);
}

static char root[] = "/var/tmp/vs-bench-undo-XXXXXX";
static char tree[128], store_dir[128];
static unsigned n_files;

static void rel_of(unsigned i, char *buf, size_t n) {
        unsigned d = i / PER_DIR;
        snprintf(buf, n, "t/a%03u/b%02u/f%u.js", d / 100, d % 100, i % PER_DIR);
}

static void make_tree(void) {
        char p[512], content[64];
        for (unsigned a = 0; a * 100 * PER_DIR < n_files; a++)
                sh("mkdir -p %s/t/a%03u && cd %s/t/a%03u && mkdir -p $(seq -f b%%02g 0 99)", tree, a, tree, a);
        int tfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (unsigned i = 0; i < n_files; i++) {
                rel_of(i, p, sizeof p);
                memset(content, 'a' + (char)(i % 26), sizeof content);
                snprintf(content, sizeof content, "%u", i); /* distinct content, 64 bytes */
                content[strlen(content)] = ' ';
                write_at(tfd, p, content, sizeof content, O_TRUNC);
        }
        close(tfd);
}

/* ---- figures ---- */

typedef struct Fig {
        const char *label, *unit;
        Samples s;
} Fig;

static Fig figs[32];
static size_t n_figs;

static Fig *fig(const char *label, const char *unit) {
        for (size_t i = 0; i < n_figs; i++)
                if (strcmp(figs[i].label, label) == 0)
                        return &figs[i];
        figs[n_figs] = (Fig){ .label = label, .unit = unit };
        return &figs[n_figs++];
}

static void add(const char *label, const char *unit, unsigned round, double v) {
        samples_add(&fig(label, unit)->s, round, v);
}

/* ---- (a) overlay per call ---- */

static void ten_changes(const char *base) {
        int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char content[10240], p[256];
        memset(content, 'x', sizeof content);
        for (unsigned i = 0; i < 10; i++) {
                rel_of(n_files - 1 - i * 97, p, sizeof p);
                write_at(fd, p, content, sizeof content, O_TRUNC);
        }
        close(fd);
}

/* Merges upper/ into the tree: each original it replaces renamed into
 * the store, each upper file renamed into its place (both on one
 * filesystem: no copy). Only files and whiteouts: the bench's calls make
 * nothing else. Returns the number of files merged. */
static unsigned merge(int up, int lower, int st, const char *rel, unsigned *seq) {
        int dfd = openat(up, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                die("upper");
        DIR *d = fdopendir(dfd);
        struct dirent *de;
        unsigned n = 0;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                        continue;
                char crel[512], name[32];
                snprintf(crel, sizeof crel, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
                if (de->d_type == DT_DIR) {
                        n += merge(up, lower, st, crel, seq);
                        continue;
                }
                snprintf(name, sizeof name, "pre-%u", (*seq)++);
                if (renameat(lower, crel, st, name) < 0 && errno != ENOENT)
                        die("rename original into the store");
                if (de->d_type == DT_CHR)
                        unlinkat(up, crel, 0); /* a whiteout: the deletion is done */
                else if (renameat(up, crel, lower, crel) < 0)
                        die("rename upper file into the tree");
                n++;
        }
        closedir(d);
        return n;
}

/* One call through a fresh overlay; *ret_mount, *ret_umount, *ret_merge
 * in microseconds. volatile_: the overlay's "volatile" option (no sync
 * of the upper filesystem at unmount; a crash leaves the upper unusable). */
static void overlay_call(bool change, bool volatile_, unsigned *seq, double *ret_mount, double *ret_umount,
                         double *ret_merge) {
        char up[256], work[256], merged[256], opts[1024];
        snprintf(up, sizeof up, "%s/ovl-up", root);
        snprintf(work, sizeof work, "%s/ovl-work", root);
        snprintf(merged, sizeof merged, "%s/ovl-merged", root);
        mkdir(up, 0755);
        mkdir(work, 0755);
        mkdir(merged, 0755);
        snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s%s", tree, up, work,
                 volatile_ ? ",volatile" : "");
        double t0 = now();
        if (mount("overlay", merged, "overlay", 0, opts) < 0)
                die("mount overlay");
        double t1 = now();
        if (change)
                ten_changes(merged);
        double t2 = now();
        if (umount2(merged, 0) < 0)
                die("umount overlay");
        double t3 = now();
        int ufd = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC), lfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
            sfd = open(store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        unsigned n = merge(ufd, lfd, sfd, "", seq);
        close(ufd);
        close(lfd);
        close(sfd);
        double t4 = now();
        if (change && n != 10)
                fprintf(stderr, "bench-undo: overlay merged %u files, not 10\n", n);
        sh("rm -rf %s/ovl-up %s/ovl-work", root, root);
        *ret_mount = t1 - t0;
        *ret_umount = t3 - t2;
        *ret_merge = t4 - t3;
}

/* A 1-byte append to a 64 MiB file through the overlay: the copy-up. */
static double overlay_copy_up(void) {
        char up[256], work[256], merged[256], opts[1024], big[300];
        snprintf(big, sizeof big, "%s/t/big.bin", tree);
        snprintf(up, sizeof up, "%s/ovl-up", root);
        snprintf(work, sizeof work, "%s/ovl-work", root);
        snprintf(merged, sizeof merged, "%s/ovl-merged", root);
        mkdir(up, 0755);
        mkdir(work, 0755);
        snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s", tree, up, work);
        if (mount("overlay", merged, "overlay", 0, opts) < 0)
                die("mount overlay");
        snprintf(big, sizeof big, "%s/t/big.bin", merged);
        double t0 = now();
        int fd = open(big, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0 || write(fd, "x", 1) != 1)
                die("append");
        close(fd);
        double t1 = now();
        umount2(merged, 0);
        sh("rm -rf %s/ovl-up %s/ovl-work", root, root);
        return t1 - t0;
}

/* ---- (b) fanotify permission events ---- */

static int fan_fd = -1;
static atomic_bool listener_stop, read_flags = true;
static atomic_uint n_copied, n_events;
static int blobs_fd = -1;

/* The opener's open flags, from its registers as /proc/PID/syscall shows
 * them while it waits for the answer: openat (257) arg 2, open (2) arg 1,
 * creat (85) always writes. -1 when unknown (answered as a write). */
static long opener_flags(pid_t pid) {
        char p[64], buf[256];
        snprintf(p, sizeof p, "/proc/%d/syscall", (int)pid);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t k = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (k <= 0)
                return -1;
        buf[k] = 0;
        long nr = strtol(buf, NULL, 10);
        unsigned long a[4] = { 0 };
        char *s = strchr(buf, ' ');
        for (int i = 0; i < 4 && s; i++) {
                a[i] = strtoul(s + 1, &s, 16);
        }
        if (nr == 257)
                return (long)a[2];
        if (nr == 2)
                return (long)a[1];
        return -1;
}

static void *listener(void *arg) {
        (void)arg;
        char buf[8192] __attribute__((aligned(8)));
        while (!atomic_load(&listener_stop)) {
                struct pollfd pf = { .fd = fan_fd, .events = POLLIN };
                if (poll(&pf, 1, 50) <= 0)
                        continue;
                ssize_t len = read(fan_fd, buf, sizeof buf);
                if (len <= 0)
                        continue;
                for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
                        atomic_fetch_add(&n_events, 1);
                        long flags = atomic_load(&read_flags) ? opener_flags(m->pid) : O_RDONLY;
                        if (flags < 0 || (flags & (O_WRONLY | O_RDWR | O_TRUNC))) {
                                /* Copy before write: the file as it is, into the store. */
                                struct stat st;
                                if (fstat(m->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
                                        char tmp[32], hash[SHA256_HEX_LEN + 1];
                                        uint64_t size;
                                        int out = undo_tmp_create(blobs_fd, tmp);
                                        if (out >= 0 && undo_copy_hashed(m->fd, out, UINT64_MAX, hash, &size) == 0)
                                                renameat(blobs_fd, tmp, blobs_fd, hash);
                                        if (out >= 0)
                                                close(out);
                                        atomic_fetch_add(&n_copied, 1);
                                }
                        }
                        struct fanotify_response r = { .fd = m->fd, .response = FAN_ALLOW };
                        if (write(fan_fd, &r, sizeof r) != sizeof r)
                                die("fanotify response");
                        close(m->fd);
                }
        }
        return NULL;
}

/* n opens (and closes) of files of the tree below base, with flags. */
static double opens(const char *base, unsigned n, int flags) {
        int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char p[256];
        double t0 = now();
        for (unsigned i = 0; i < n; i++) {
                rel_of(i * 7 % n_files, p, sizeof p);
                int f = openat(fd, p, flags | O_CLOEXEC);
                if (f < 0)
                        die("open");
                close(f);
        }
        double t1 = now();
        close(fd);
        return t1 - t0;
}

static double open_many(const char *base, unsigned n) {
        return opens(base, n, O_RDONLY);
}

/* ---- (b') seccomp user notification: the path without root ---- */

/* A filter trapping openat when its flags write (O_WRONLY, O_RDWR,
 * O_TRUNC, O_CREAT: a register, which BPF reads; openat2 is ENOSYS in the
 * jail already), every other call allowed. Returns the listener. */
static int notify_filter(void) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
                BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_WRONLY | O_RDWR | O_TRUNC | O_CREAT, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -1;
        return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

static double write_opens(unsigned n) {
        return opens(tree, n, O_WRONLY);
}

/* A child under the filter opens n files for writing and n for reading,
 * batch after batch; the parent answers each notification at once
 * (CONTINUE: the cost of the trap alone, before any copy), and before
 * each batch makes the same opens unfiltered itself. Adds the extra per
 * write open and per read open of each batch, in microseconds. */
static void seccomp_probe(unsigned n, unsigned batches, unsigned round) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                die("socketpair");
        pid_t pid = fork();
        if (pid == 0) {
                close(sp[0]);
                int l = notify_filter();
                if (l < 0)
                        _exit(1);
                char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b = 'l';
                struct iovec iov = { .iov_base = &b, .iov_len = 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &l, sizeof l);
                if (sendmsg(sp[1], &mh, 0) != 1)
                        _exit(1);
                close(l);
                while (read(sp[1], &b, 1) == 1) {
                        double t[2] = { write_opens(n), open_many(tree, n) };
                        if (write(sp[1], t, sizeof t) != sizeof t)
                                _exit(1);
                }
                _exit(0);
        }
        close(sp[1]);
        char cbuf[CMSG_SPACE(sizeof(int))], b;
        struct iovec iov = { .iov_base = &b, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
        if (recvmsg(sp[0], &mh, 0) != 1)
                die("listener");
        int l;
        memcpy(&l, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof l);
        for (unsigned k = 0; k < batches; k++) {
                double plain_w = write_opens(n), plain_r = open_many(tree, n);
                if (write(sp[0], "g", 1) != 1)
                        die("seccomp probe");
                unsigned done = 0;
                while (done < n) {
                        struct seccomp_notif req;
                        memset(&req, 0, sizeof req);
                        if (ioctl(l, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
                                continue;
                        struct seccomp_notif_resp resp = { .id = req.id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
                        if (ioctl(l, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
                                die("notif send");
                        done++;
                }
                double t[2];
                if (read(sp[0], t, sizeof t) != sizeof t)
                        die("seccomp probe result");
                add("(b') seccomp user notification on write opens: extra per write open (trap and CONTINUE, no copy)",
                    "us", round, (t[0] - plain_w) / n);
                add("(b') the same filter: extra per read-only open (never trapped)", "us", round, (t[1] - plain_r) / n);
        }
        close(sp[0]);
        waitpid(pid, NULL, 0);
        close(l);
}

/* ---- (b) and (c) baselines ---- */

static double link_baseline(void) {
        char p[256], name[32];
        int tfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        sh("rm -rf %s/links && mkdir %s/links", root, root);
        snprintf(p, sizeof p, "%s/links", root);
        int lfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        double t0 = now();
        for (unsigned i = 0; i < n_files; i++) {
                rel_of(i, p, sizeof p);
                snprintf(name, sizeof name, "%u", i);
                if (linkat(tfd, p, lfd, name, 0) < 0)
                        die("link");
        }
        double t1 = now();
        close(tfd);
        close(lfd);
        return t1 - t0;
}

static double hash_baseline(void) {
        char p[256], hash[SHA256_HEX_LEN + 1];
        int tfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        double t0 = now();
        for (unsigned i = 0; i < n_files; i++) {
                rel_of(i, p, sizeof p);
                int fd = openat(tfd, p, O_RDONLY | O_CLOEXEC);
                uint64_t size;
                if (fd < 0 || undo_copy_hashed(fd, -1, UINT64_MAX, hash, &size) < 0)
                        die("hash");
                close(fd);
        }
        double t1 = now();
        close(tfd);
        return t1 - t0;
}

static double stat_walk(void) {
        char p[256];
        struct stat st;
        int tfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        double t0 = now();
        for (unsigned i = 0; i < n_files; i++) {
                rel_of(i, p, sizeof p);
                if (fstatat(tfd, p, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        die("stat");
        }
        double t1 = now();
        close(tfd);
        return t1 - t0;
}

/* ---- the store ---- */

static double store_ten(UndoStore *s, int tfd, uint64_t *seq) {
        char p[256];
        UndoCheckpoint *cp;
        double t0 = now();
        if (undo_checkpoint_begin(s, "bench", &cp) < 0)
                die("begin");
        for (unsigned i = 0; i < 10; i++) {
                rel_of(n_files - 1 - i * 97, p, sizeof p);
                if (undo_checkpoint_capture(cp, tfd, p, false, NULL, NULL, NULL) < 0)
                        die("capture");
        }
        if (undo_checkpoint_commit(cp, seq, NULL) < 0)
                die("commit");
        return now() - t0;
}

static double store_restore_1000(UndoStore *s, int tfd, unsigned round) {
        char p[256], content[10240];
        sh("rm -rf %s/r && mkdir -p %s/r", tree, tree);
        for (unsigned d = 0; d < 10; d++) {
                snprintf(p, sizeof p, "%s/r/d%u", tree, d);
                mkdir(p, 0755);
        }
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(p, sizeof p, "r/d%u/f%u", i % 10, i);
                memset(content, 'a' + (char)((i + round) % 26), sizeof content);
                snprintf(content, 32, "%u %u", i, round);
                write_at(tfd, p, content, sizeof content, O_TRUNC);
        }
        UndoCheckpoint *cp;
        uint64_t seq = 0;
        if (undo_checkpoint_begin(s, "rm -rf r", &cp) < 0 ||
            undo_checkpoint_capture(cp, tfd, "r", true, NULL, NULL, NULL) < 0 || undo_checkpoint_commit(cp, &seq, NULL) < 0)
                die("capture r");
        sh("rm -rf %s/r", tree);
        UndoRestoreOptions o = { .uid = (uid_t)-1, .gid = (gid_t)-1 };
        UndoRestoreReport rep;
        double t0 = now();
        if (undo_restore(s, seq, tfd, &o, &rep, NULL) < 0)
                die("restore");
        double t1 = now();
        if (rep.n_restored != 1011 || rep.n_problems)
                fprintf(stderr, "bench-undo: restored %zu, %zu problems\n", rep.n_restored, rep.n_problems);
        undo_restore_report_done(&rep);
        return t1 - t0;
}

static double spawn_true(void) {
        double t0 = now();
        pid_t pid = fork();
        if (pid == 0) {
                execl("/bin/true", "true", (char *)NULL);
                _exit(127);
        }
        waitpid(pid, NULL, 0);
        return now() - t0;
}

static int cmpd(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void print_fig(const Fig *f) {
        double *v = malloc(f->s.n * sizeof *v);
        memcpy(v, f->s.v, f->s.n * sizeof *v);
        qsort(v, f->s.n, sizeof *v, cmpd);
        double scale = strcmp(f->unit, "ms") == 0 ? 1e3 : strcmp(f->unit, "s") == 0 ? 1e6 : 1;
        printf("| %s | %.3g | %.3g | %.3g | %s |\n", f->label, v[f->s.n / 2] / scale, v[0] / scale,
               v[f->s.n - 1] / scale, f->unit);
        free(v);
}

int main(int argc, char **argv) {
        n_files = argc > 1 ? (unsigned)atoi(argv[1]) : 200000;
        unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 5;
        if (n_files < 2000 || rounds < 1 || rounds > 50 || geteuid() != 0) {
                fprintf(stderr, "usage (as root): bench-undo [N>=2000 [ROUNDS]]\n");
                return 2;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                die("private mount namespace");
        if (!mkdtemp(root))
                die("mkdtemp");
        snprintf(tree, sizeof tree, "%s/ws", root);
        snprintf(store_dir, sizeof store_dir, "%s/store", root);
        mkdir(tree, 0755);
        mkdir(store_dir, 0700);
        double t0 = now();
        make_tree();
        sh("head -c 67108864 /dev/zero > %s/t/big.bin", tree);
        fprintf(stderr, "bench-undo: %u files made in %.1f s\n", n_files, (now() - t0) / 1e6);
        sync();

        /* The store the (b) listener and the store figures use. */
        char p[256];
        snprintf(p, sizeof p, "%s/undo", root);
        mkdir(p, 0700);
        int ufd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        UndoStore *s;
        if (undo_store_open(ufd, NULL, &s, NULL) < 0)
                die("store");
        blobs_fd = s->blobs_fd;
        int tfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        /* (b): the workspace's mount as the jail has it (a bind mount of
         * its own), marked for open permission events. */
        char mnt[256];
        snprintf(mnt, sizeof mnt, "%s/mnt", root);
        mkdir(mnt, 0755);
        if (mount(tree, mnt, NULL, MS_BIND, NULL) < 0)
                die("bind mount");
        unsigned seq_pre = 0;
        for (unsigned r = 0; r < rounds; r++) {
                /* Interleaved, so the machine's load falls on each alike. */
                double sp = 0;
                for (int i = 0; i < 20; i++)
                        sp += spawn_true();
                add("fork+exec /bin/true (for scale; a warm `terminal true` is 1.22 ms, docs/benchmarks.md)", "us", r,
                    sp / 20);
                for (int v = 0; v < 2; v++)
                        for (int c = 0; c < 2; c++) {
                                double m, u, g;
                                overlay_call(c, v, &seq_pre, &m, &u, &g);
                                static const char *const what[2][2][4] = {
                                        { { "(a) overlay, no-op call: mount", "(a) overlay, no-op call: umount (syncs the upper filesystem)",
                                            "(a) overlay, no-op call: merge of the empty upper", "(a) overlay, no-op call: all" },
                                          { "(a) overlay, 10 files of 10 KiB: mount", "(a) overlay, 10 files of 10 KiB: umount",
                                            "(a) overlay, 10 files of 10 KiB: merge (originals renamed into the store)",
                                            "(a) overlay, 10 files of 10 KiB: all" } },
                                        { { "(a') volatile overlay, no-op call: mount", "(a') volatile overlay, no-op call: umount",
                                            "(a') volatile overlay, no-op call: merge", "(a') volatile overlay, no-op call: all" },
                                          { "(a') volatile overlay, 10 files of 10 KiB: mount", "(a') volatile overlay, 10 files of 10 KiB: umount",
                                            "(a') volatile overlay, 10 files of 10 KiB: merge", "(a') volatile overlay, 10 files of 10 KiB: all" } },
                                };
                                add(what[v][c][0], "us", r, m);
                                add(what[v][c][1], "us", r, u);
                                add(what[v][c][2], "us", r, g);
                                add(what[v][c][3], "us", r, m + u + g);
                        }
                add("(a) overlay, a 1-byte append to a 64 MiB file: the copy-up", "ms", r, overlay_copy_up());

                add("(b) hard-link baseline of every file (once per workspace; then per new file)", "s", r,
                    link_baseline());
                /* The mark is on the bind mount only: the same files opened
                 * through the tree's own path are the unmarked baseline, in
                 * alternation with the marked ones. */
                fan_fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
                if (fan_fd < 0 || fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN_PERM, AT_FDCWD, mnt) < 0)
                        die("fanotify");
                atomic_store(&listener_stop, false);
                pthread_t th;
                pthread_create(&th, NULL, listener, NULL);
                for (int k = 0; k < 5; k++) {
                        double plain = open_many(tree, 5000);
                        atomic_store(&read_flags, false);
                        double bare = open_many(mnt, 5000);
                        atomic_store(&read_flags, true);
                        double marked = open_many(mnt, 5000);
                        add("(b) a read-only open under FAN_OPEN_PERM (listener reads the opener's flags), extra per open",
                            "us", r, (marked - plain) / 5000);
                        add("(b) the same, the listener answering without reading the flags (the fanotify round trip alone)",
                            "us", r, (bare - plain) / 5000);
                        add("(b) read-only open without a mark (for scale)", "us", r, plain / 5000);
                }
                for (int k = 0; k < 3; k++) {
                        unsigned copied0 = atomic_load(&n_copied);
                        double t1 = now();
                        ten_changes(mnt);
                        double with_copy = now() - t1;
                        unsigned copied = atomic_load(&n_copied) - copied0;
                        double t2 = now();
                        ten_changes(tree);
                        double without = now() - t2;
                        if (copied != 10)
                                fprintf(stderr, "bench-undo: copied %u files before their write, not 10\n", copied);
                        add("(b) 10 files of 10 KiB changed: copy-before-write, extra", "us", r, with_copy - without);
                }
                atomic_store(&listener_stop, true);
                pthread_join(th, NULL);
                close(fan_fd);

                seccomp_probe(2000, 5, r);

                add("(c) content-hash baseline of every file (once per workspace)", "s", r, hash_baseline());
                add("(c) stat walk of every file, per call (what changed, without events)", "ms", r, stat_walk());

                uint64_t seq = 0;
                uint64_t bytes0 = undo_store_bytes(s);
                UndoCheckpoint *cp;
                double t3 = now();
                if (undo_checkpoint_begin(s, "true", &cp) < 0 || undo_checkpoint_commit(cp, &seq, NULL) < 0)
                        die("noop");
                add("store: a no-op call's checkpoint (begin + commit of nothing)", "us", r, now() - t3);
                add("store: bytes a no-op call adds", "B", r, (double)(undo_store_bytes(s) - bytes0));
                ten_changes(tree); /* fresh content each round: no dedup */
                add("store: capture + commit of 10 files of 10 KiB", "us", r, store_ten(s, tfd, &seq));
                add("store: restore of 1 000 files of 10 KiB (after rm -rf of their tree)", "ms", r,
                    store_restore_1000(s, tfd, r));
                fprintf(stderr, "bench-undo: round %u done\n", r + 1);
        }
        printf("bench-undo: %u files, %u rounds, warm cache\n\n", n_files, rounds);
        printf("| figure | median | min | max | unit |\n|---|---|---|---|---|\n");
        for (size_t i = 0; i < n_figs; i++)
                print_fig(&figs[i]);
        umount2(mnt, MNT_DETACH);
        undo_store_free(s);
        close(ufd);
        close(tfd);
        sh("rm -rf %s", root);
        return 0;
}
