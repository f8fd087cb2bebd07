/* SPDX-License-Identifier: MIT */
#pragma once
/* A FUSE file system for the monitor's tests (test-monitor.c,
 * test-monitor-link.c): what a user's file system that does not answer
 * does to a root process. Include after cmocka.h. */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fuse.h>

/* A file system that never answers: /dev/fuse served
 * by a child; "f" a regular file whose GETATTR is answered until
 * *stall is set (shared memory), then never; with *stall 2 nothing is
 * answered any more (but the kernel's INIT); with *stall 3 each LOOKUP is
 * answered ENOENT 0.8 s late; with *stall 4 each READ is answered (zeros)
 * 0.9 s late. */
/* The device opened: a test may point it at a node of its own (a host's
 * /dev/fuse may be 0600, where the distribution's is 0666). */
static const char *fuse_dev_path = "/dev/fuse";
/* The mount's user_id (as fusermount writes the user's): 0, root's. */
static unsigned fuse_user_id;

static pid_t fuse_serve_mode(const char *mnt, volatile int *stall, unsigned rootmode) {
        int fd = open(fuse_dev_path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -1;
        char opts[96];
        snprintf(opts, sizeof opts, "fd=%d,rootmode=%o,user_id=%u,group_id=0,allow_other", fd, rootmode, fuse_user_id);
        if (mount("t", mnt, "fuse.t", 0, opts) < 0) {
                close(fd);
                return -1;
        }
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid > 0) {
                close(fd);
                return pid;
        }
        static char buf[1 << 20];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && (errno == EINTR || errno == ENOENT))
                        continue;
                if (n < (ssize_t)sizeof(struct fuse_in_header))
                        _exit(0);
                const struct fuse_in_header *in = (const void *)buf;
                if (*stall == 2 && in->opcode != FUSE_INIT)
                        continue; /* never answered */
                union {
                        struct fuse_init_out init;
                        struct fuse_entry_out entry;
                        struct fuse_attr_out attr;
                        struct fuse_open_out open;
                } o = {};
                size_t len = 0;
                int err = 0;
                struct fuse_attr *a = NULL;
                switch (in->opcode) {
                case FUSE_INIT:
                        o.init = (struct fuse_init_out){ .major = 7,
                                                         .minor = ((const struct fuse_init_in *)(in + 1))->minor,
                                                         .max_write = 4096 };
                        len = sizeof o.init;
                        break;
                case FUSE_LOOKUP:
                        if (*stall == 3) {
                                usleep(800 * 1000); /* each answered, late: ENOENT, 0.8 s on */
                                err = -ENOENT;
                                break;
                        }
                        o.entry.nodeid = 2;
                        a = &o.entry.attr;
                        len = sizeof o.entry;
                        break;
                case FUSE_GETATTR:
                        if (in->nodeid == 2 && *stall)
                                continue; /* never answered */
                        a = &o.attr.attr;
                        len = sizeof o.attr;
                        break;
                case FUSE_OPEN:
                        len = sizeof o.open;
                        break;
                case FUSE_FORGET:
                case FUSE_BATCH_FORGET:
                        continue;
                case FUSE_FLUSH:
                        if (*stall)
                                continue; /* never answered */
                        break;
                case FUSE_RELEASE:
                        break;
                case FUSE_READ:
                        if (*stall != 4)
                                continue; /* never answered: a mapping of the file faults until the server ends */
                        /* With *stall 4: answered, zeros, 0.9 s late. */
                        usleep(900 * 1000);
                        {
                                static char zeros[sizeof(struct fuse_out_header) + 65536];
                                uint32_t want = ((const struct fuse_read_in *)(in + 1))->size;
                                struct fuse_out_header rh = { .len = (uint32_t)sizeof rh + (want > 65536 ? 65536 : want),
                                                              .unique = in->unique };
                                memcpy(zeros, &rh, sizeof rh);
                                if (write(fd, zeros, rh.len) < 0 && errno != ENOENT)
                                        _exit(0);
                        }
                        continue;
                default:
                        err = -ENOSYS;
                }
                if (a) {
                        uint64_t ino = in->opcode == FUSE_LOOKUP ? 2 : in->nodeid;
                        *a = (struct fuse_attr){ .ino = ino, .nlink = 1, .size = ino == 1 ? 0 : 65536,
                                                 .mode = ino == 1 ? S_IFDIR | 0755 : S_IFREG | 0666 };
                }
                char out[sizeof(struct fuse_out_header) + sizeof o];
                struct fuse_out_header h = { .len = (uint32_t)(sizeof h + len), .error = err, .unique = in->unique };
                memcpy(out, &h, sizeof h);
                memcpy(out + sizeof h, &o, len);
                if (write(fd, out, h.len) < 0 && errno != ENOENT)
                        _exit(0);
        }
}

__attribute__((unused)) static pid_t fuse_serve(const char *mnt, volatile int *stall) {
        return fuse_serve_mode(mnt, stall, S_IFDIR);
}

/* fuse_serve's file system at dir/mnt (into mnt), its stall flag in
 * shared memory set to stall0 (*ret_stall, the caller's to unmap); the
 * case is skipped where it cannot mount. */
__attribute__((unused)) static pid_t fuse_mount_in(const char *dir, char mnt[static 128], volatile int **ret_stall, int stall0) {
        snprintf(mnt, 128, "%s/mnt", dir);
        assert_int_equal(mkdir(mnt, 0755), 0);
        volatile int *stall = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(stall != MAP_FAILED);
        *stall = stall0;
        pid_t fs = fuse_serve(mnt, stall);
        if (fs < 0)
                skip();
        *ret_stall = stall;
        return fs;
}
