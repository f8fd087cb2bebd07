/* SPDX-License-Identifier: MIT */
/* The daemon's one inotify instance (src/daemon/watch/inotify-hub.c), for real on
 * a scratch directory: shared watch descriptors fan out to each holder, a
 * holder freed mid-batch hears nothing more, removed directories and freed
 * holders leave no watch behind, an overflow reaches everyone, and however
 * many holders there are the process has one inotify instance. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "inotify-hub.h"

typedef struct Heard {
        int events, creates, overflows, batches;
        char last[256];
        HubSub *sub;
        HubSub *free_other; /* freed at this one's first event */
        bool free_self;     /* frees itself at its first event */
} Heard;

static void on_event(void *u, const struct inotify_event *ev) {
        Heard *h = u;
        h->events++;
        if (ev->mask & IN_Q_OVERFLOW)
                h->overflows++;
        if (ev->mask & IN_CREATE) {
                h->creates++;
                snprintf(h->last, sizeof h->last, "%s", ev->len ? ev->name : "");
        }
        if (h->free_other) {
                hub_sub_free(h->free_other);
                h->free_other = NULL;
        }
        if (h->free_self) {
                h->free_self = false;
                hub_sub_free(h->sub);
        }
}

static void on_batch(void *u) {
        ((Heard *)u)->batches++;
}

static const HubOps ops = { .event = on_event, .batch_end = on_batch };

typedef struct Fixture {
        uv_loop_t loop;
        InotifyHub *hub;
        char dir[64];
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        assert_int_equal(uv_loop_init(&f->loop), 0);
        assert_int_equal(hub_new(&f->loop, &f->hub), 0);
        snprintf(f->dir, sizeof f->dir, "/tmp/test-inotify-hub.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        *state = f;
        return 0;
}

static void rm_tree(const char *path) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
        assert_int_equal(system(cmd), 0);
}

static int teardown(void **state) {
        Fixture *f = *state;
        hub_free(f->hub);
        uv_run(&f->loop, UV_RUN_NOWAIT);
        assert_int_equal(uv_loop_close(&f->loop), 0);
        rm_tree(f->dir);
        free(f);
        return 0;
}

static void touch(const char *dir, const char *name) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
}

static void sub_dir(const Fixture *f, const char *name, char *out, size_t n) {
        snprintf(out, n, "%s/%s", f->dir, name);
        assert_int_equal(mkdir(out, 0700), 0);
}

#define MASK (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW)

static void shared_directory_fans_out(void **state) {
        Fixture *f = *state;
        Heard a = {}, b = {}, c = {};
        assert_int_equal(hub_sub_new(f->hub, &ops, &a, &a.sub), 0);
        assert_int_equal(hub_sub_new(f->hub, &ops, &b, &b.sub), 0);
        assert_int_equal(hub_sub_new(f->hub, &ops, &c, &c.sub), 0);
        char other[256];
        sub_dir(f, "other", other, sizeof other);
        int wa = hub_add_watch(a.sub, f->dir, MASK);
        int wb = hub_add_watch(b.sub, f->dir, MASK);
        assert_true(wa >= 0);
        assert_int_equal(wa, wb); /* one inode, one descriptor on the one instance */
        assert_int_equal(hub_add_watch(a.sub, f->dir, MASK), wa); /* held once */
        assert_true(hub_add_watch(c.sub, other, MASK) >= 0);
        assert_int_equal(hub_n_watches(f->hub), 2);
        touch(f->dir, "x.env");
        assert_true(hub_drain(f->hub));
        assert_int_equal(a.creates, 1);
        assert_int_equal(b.creates, 1);
        assert_string_equal(a.last, "x.env");
        assert_int_equal(c.events, 0); /* not its directory */
        assert_int_equal(a.batches, 1);
        assert_int_equal(c.batches, 0);
        /* One holder goes: the other still hears the directory. */
        hub_sub_free(a.sub);
        touch(f->dir, "y");
        assert_true(hub_drain(f->hub));
        assert_int_equal(a.creates, 1);
        assert_int_equal(b.creates, 2);
        assert_int_equal(hub_n_watches(f->hub), 2);
        hub_sub_free(b.sub);
        hub_sub_free(c.sub);
        assert_int_equal(hub_n_watches(f->hub), 0);
        touch(f->dir, "z");
        assert_true(hub_drain(f->hub)); /* nothing to hear, nobody to tell */
        assert_int_equal(b.creates, 2);
}

static void freed_mid_batch_hears_nothing_more(void **state) {
        Fixture *f = *state;
        Heard a = {}, b = {}, c = {};
        assert_int_equal(hub_sub_new(f->hub, &ops, &a, &a.sub), 0);
        assert_int_equal(hub_sub_new(f->hub, &ops, &b, &b.sub), 0);
        assert_int_equal(hub_sub_new(f->hub, &ops, &c, &c.sub), 0);
        assert_true(hub_add_watch(a.sub, f->dir, MASK) >= 0);
        assert_true(hub_add_watch(b.sub, f->dir, MASK) >= 0);
        assert_true(hub_add_watch(c.sub, f->dir, MASK) >= 0);
        a.free_self = true;     /* a workspace recycled by its own event */
        /* Whichever of b and c hears the first event first frees the other:
         * the freed one must hear nothing after that. */
        b.free_other = c.sub;
        for (int i = 0; i < 5; i++) {
                char n[16];
                snprintf(n, sizeof n, "f%d", i);
                touch(f->dir, n);
        }
        assert_true(hub_drain(f->hub));
        assert_int_equal(a.events, 1);
        assert_int_equal(a.batches, 0); /* freed: no end-of-batch call either */
        assert_int_equal(b.creates, 5);
        assert_true(c.events <= 1);
        assert_int_equal(c.batches, 0);
        assert_int_equal(hub_n_watches(f->hub), 1); /* b's */
        hub_sub_free(b.sub);
        assert_int_equal(hub_n_watches(f->hub), 0);
}

static void removed_directory_forgotten(void **state) {
        Fixture *f = *state;
        Heard a = {};
        char gone[256];
        sub_dir(f, "gone", gone, sizeof gone);
        assert_int_equal(hub_sub_new(f->hub, &ops, &a, &a.sub), 0);
        assert_true(hub_add_watch(a.sub, gone, MASK) >= 0);
        assert_int_equal(hub_n_watches(f->hub), 1);
        assert_int_equal(rmdir(gone), 0);
        assert_true(hub_drain(f->hub));
        assert_int_equal(hub_n_watches(f->hub), 0); /* IN_IGNORED: the kernel dropped it */
        assert_true(a.events >= 1);
        hub_sub_free(a.sub); /* holds nothing any more: no stale rm_watch */
        /* A path that is not a directory is refused, not half-added. */
        touch(f->dir, "file");
        char file[256];
        snprintf(file, sizeof file, "%s/file", f->dir);
        Heard b = {};
        assert_int_equal(hub_sub_new(f->hub, &ops, &b, &b.sub), 0);
        assert_int_equal(hub_add_watch(b.sub, file, MASK), -ENOTDIR);
        assert_int_equal(hub_n_watches(f->hub), 0);
        hub_sub_free(b.sub);
}

/* Hundreds of directories held by two holders: the dropped ones (removed
 * by the kernel, released by a holder) are compacted away in passes, and
 * whatever is left still reaches who holds it. */
static void many_dropped_and_compacted(void **state) {
        Fixture *f = *state;
        enum { N = 300 };
        Heard a = {}, b = {};
        assert_int_equal(hub_sub_new(f->hub, &ops, &a, &a.sub), 0);
        assert_int_equal(hub_sub_new(f->hub, &ops, &b, &b.sub), 0);
        char dirs[N][256];
        for (int i = 0; i < N; i++) {
                char n[16];
                snprintf(n, sizeof n, "d%03d", i);
                sub_dir(f, n, dirs[i], sizeof dirs[i]);
                assert_true(hub_add_watch(a.sub, dirs[i], MASK) >= 0);
                if (i % 2 == 0)
                        assert_true(hub_add_watch(b.sub, dirs[i], MASK) >= 0);
        }
        assert_int_equal(hub_n_watches(f->hub), N);
        /* The kernel drops the first 200 (IN_IGNORED): past the compaction's threshold. */
        for (int i = 0; i < 200; i++)
                assert_int_equal(rmdir(dirs[i]), 0);
        assert_true(hub_drain(f->hub));
        assert_int_equal(hub_n_watches(f->hub), N - 200);
        /* a lets go of everything: only b's even ones stay. */
        hub_sub_free(a.sub);
        assert_int_equal(hub_n_watches(f->hub), 50);
        touch(dirs[N - 2], "still.env");
        touch(dirs[N - 1], "unheard.env"); /* odd: nobody holds it now */
        assert_true(hub_drain(f->hub));
        assert_int_equal(b.creates, 1);
        assert_string_equal(b.last, "still.env");
        /* A directory made now is watched afresh and heard. */
        char fresh[256];
        sub_dir(f, "fresh", fresh, sizeof fresh);
        assert_true(hub_add_watch(b.sub, fresh, MASK) >= 0);
        assert_int_equal(hub_n_watches(f->hub), 51);
        touch(fresh, "x");
        assert_true(hub_drain(f->hub));
        assert_int_equal(b.creates, 2);
        hub_sub_free(b.sub);
        assert_int_equal(hub_n_watches(f->hub), 0);
}

static void overflow_reaches_everyone(void **state) {
        Fixture *f = *state;
        FILE *q = fopen("/proc/sys/fs/inotify/max_queued_events", "re");
        long max = 16384;
        if (q) {
                if (fscanf(q, "%ld", &max) != 1)
                        max = 16384;
                fclose(q);
        }
        if (max > 200000)
                skip(); /* cmocka prints it as skipped */
        Heard a = {}, b = {};
        char other[256];
        sub_dir(f, "quiet", other, sizeof other);
        assert_int_equal(hub_sub_new(f->hub, &ops, &a, &a.sub), 0);
        assert_int_equal(hub_sub_new(f->hub, &ops, &b, &b.sub), 0);
        assert_true(hub_add_watch(a.sub, f->dir, IN_CREATE | IN_ONLYDIR) >= 0);
        assert_true(hub_add_watch(b.sub, other, IN_CREATE | IN_ONLYDIR) >= 0);
        for (long i = 0; i < max + 16; i++) {
                char n[32];
                snprintf(n, sizeof n, "n%ld", i);
                touch(f->dir, n);
        }
        assert_true(hub_drain(f->hub));
        assert_int_equal(a.overflows, 1);
        assert_int_equal(b.overflows, 1); /* events were lost: b cannot know they were not its own */
        assert_int_equal(b.creates, 0);
        hub_sub_free(a.sub);
        hub_sub_free(b.sub);
}

static int count_inotify_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                char p[300], t[64];
                snprintf(p, sizeof p, "/proc/self/fd/%s", de->d_name);
                ssize_t k = readlink(p, t, sizeof t - 1);
                if (k > 0) {
                        t[k] = 0;
                        n += strcmp(t, "anon_inode:inotify") == 0;
                }
        }
        closedir(d);
        return n;
}

/* 300 workspaces' worth of holders (more than max_user_instances' default
 * 128): still one instance, each hearing its own directory. */
static void one_instance_for_many(void **state) {
        Fixture *f = *state;
        enum { N = 300 };
        Heard *h = calloc(N, sizeof *h);
        assert_non_null(h);
        char dirs[N][256];
        for (int i = 0; i < N; i++) {
                char n[16];
                snprintf(n, sizeof n, "w%d", i);
                sub_dir(f, n, dirs[i], sizeof dirs[i]);
                assert_int_equal(hub_sub_new(f->hub, &ops, &h[i], &h[i].sub), 0);
                assert_true(hub_add_watch(h[i].sub, dirs[i], MASK) >= 0);
        }
        assert_int_equal(count_inotify_fds(), 1);
        touch(dirs[N - 1], "last");
        touch(dirs[7], "seventh");
        assert_true(hub_drain(f->hub));
        for (int i = 0; i < N; i++)
                assert_int_equal(h[i].creates, i == 7 || i == N - 1 ? 1 : 0);
        assert_string_equal(h[7].last, "seventh");
        for (int i = 0; i < N; i++)
                hub_sub_free(h[i].sub);
        assert_int_equal(hub_n_watches(f->hub), 0);
        free(h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(shared_directory_fans_out, setup, teardown),
                cmocka_unit_test_setup_teardown(freed_mid_batch_hears_nothing_more, setup, teardown),
                cmocka_unit_test_setup_teardown(removed_directory_forgotten, setup, teardown),
                cmocka_unit_test_setup_teardown(many_dropped_and_compacted, setup, teardown),
                cmocka_unit_test_setup_teardown(overflow_reaches_everyone, setup, teardown),
                cmocka_unit_test_setup_teardown(one_instance_for_many, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
