/* SPDX-License-Identifier: MIT */
/* vs-fuse-hold DEV MNT DIR UID GID: holds directory DIR as UID/GID, the
 * way attack review 8b held a workspace's directory against a root
 * daemon (tests/integration/test_held_server.py
 * t_held_directory_ended). Started as root, it becomes UID/GID, makes a
 * user and a mount namespace of its own (as any user may), mounts a FUSE
 * file system at MNT from device node DEV (a test's own node: a host's
 * /dev/fuse may be 0600) whose reads are never answered, maps a file of
 * it and reads DIR's entries into the mapping: the read waits for the
 * file system with DIR's lock held. It prints "holding PID" (the FUSE
 * server's pid: killing it lets go) and exits 1 once the read fails (the
 * connection ended), 2 when something before the read failed. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define assert_true(x)                   \
        do {                             \
                if (!(x))                \
                        _exit(3);        \
        } while (0)
#define assert_int_equal(a, b) assert_true((a) == (b))
#define skip() _exit(2)
#include "../unit/fuse-stall.h"

static int write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
        if (fd >= 0)
                close(fd);
        return ok;
}

int main(int argc, char **argv) {
        if (argc != 6) {
                fprintf(stderr, "usage: vs-fuse-hold DEV MNT DIR UID GID\n");
                return 2;
        }
        unsigned uid = (unsigned)strtoul(argv[4], NULL, 10), gid = (unsigned)strtoul(argv[5], NULL, 10);
        char map_u[64], map_g[64];
        snprintf(map_u, sizeof map_u, "0 %u 1", uid);
        snprintf(map_g, sizeof map_g, "0 %u 1", gid);
        fuse_dev_path = argv[1];
        static int stall;
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0 ||
            prctl(PR_SET_DUMPABLE, 1) < 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 ||
            !write_file("/proc/self/uid_map", map_u) || !write_file("/proc/self/setgroups", "deny") ||
            !write_file("/proc/self/gid_map", map_g) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                perror("vs-fuse-hold: a namespace of its own");
                return 2;
        }
        pid_t fs = fuse_serve_mode(argv[2], &stall, S_IFDIR);
        if (fs <= 0) {
                perror("vs-fuse-hold: mount");
                return 2;
        }
        char file[4096];
        snprintf(file, sizeof file, "%s/file", argv[2]);
        int ff = open(file, O_RDONLY | O_CLOEXEC);
        char *map = ff < 0 ? MAP_FAILED : mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, ff, 0);
        int d = open(argv[3], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (map == MAP_FAILED || mprotect(map, 65536, PROT_READ | PROT_WRITE) < 0 || d < 0) {
                perror("vs-fuse-hold: the file or the directory");
                return 2;
        }
        printf("holding %d\n", (int)fs);
        fflush(stdout);
        return syscall(SYS_getdents64, d, map, 65536) < 0 ? 1 : 0;
}
