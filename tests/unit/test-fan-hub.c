/* SPDX-License-Identifier: MIT */
/* The daemon's fanotify group (src/daemon/watch/fan-hub.c), for real on a
 * scratch directory (root only: a filesystem mark needs CAP_SYS_ADMIN;
 * skipped otherwise): events below a subscriber's root reach it with the
 * directory's path, at any depth; events beside it do not; a directory
 * moved keeps its handle, and events in it come under its new path (the
 * cache is flushed), or none once it left the root; a subscriber freed
 * mid-batch hears nothing more; what was queued before a subscriber came
 * is not its; the last subscriber's end unmarks the filesystem. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "fan-hub.h"

typedef struct Heard {
        int events, batches;
        char last[512]; /* dir/name of the last event */
        FanSub *sub;
        FanSub *free_other; /* freed at this one's first event */
} Heard;

static void on_event(void *u, const char *dir, const char *name, uint64_t mask) {
        Heard *h = u;
        h->events++;
        snprintf(h->last, sizeof h->last, "%s/%s", dir ? dir : "(lost)", name ? name : "");
        if (h->free_other) {
                fan_sub_free(h->free_other);
                h->free_other = NULL;
        }
}

static void on_batch(void *u) {
        ((Heard *)u)->batches++;
}

static const FanOps ops = { .event = on_event, .batch_end = on_batch };

typedef struct Fixture {
        uv_loop_t loop;
        FanHub *hub;
        char dir[64];
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        assert_int_equal(uv_loop_init(&f->loop), 0);
        snprintf(f->dir, sizeof f->dir, "/var/tmp/test-fan-hub.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        if (fan_new(&f->loop, &f->hub) < 0)
                f->hub = NULL; /* not root: each case skips */
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        fan_free(f->hub);
        uv_run(&f->loop, UV_RUN_NOWAIT);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(uv_loop_close(&f->loop), 0);
        free(f);
        return 0;
}

static void path(const Fixture *f, const char *rel, char *buf, size_t n) {
        snprintf(buf, n, "%s/%s", f->dir, rel);
}

static void make(const Fixture *f, const char *rel, bool dir) {
        char p[512];
        path(f, rel, p, sizeof p);
        if (dir)
                assert_int_equal(mkdir(p, 0755), 0);
        else {
                int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                assert_true(fd >= 0);
                close(fd);
        }
}

static void below_the_root_only(void **state) {
        Fixture *f = *state;
        if (!f->hub)
                skip();
        make(f, "ws", true);
        make(f, "ws/a", true);
        make(f, "ws/a/b", true);
        make(f, "beside", true);
        char root[512], want[600];
        path(f, "ws", root, sizeof root);
        Heard h = {};
        char *roots[] = { root };
        assert_int_equal(fan_sub_new(f->hub, &ops, &h, roots, 1, &h.sub), 0);
        assert_int_equal(fan_n_filesystems(f->hub), 1);
        make(f, "beside/x.pem", false);
        assert_true(fan_drain(f->hub));
        assert_int_equal(h.events, 0);
        make(f, "ws/a/b/key.pem", false);
        assert_true(fan_drain(f->hub));
        assert_true(h.events >= 1); /* the create, and its close after writing */
        assert_int_equal(h.batches, 1);
        snprintf(want, sizeof want, "%s/a/b/key.pem", root);
        assert_string_equal(h.last, want);
        fan_sub_free(h.sub);
        assert_int_equal(fan_n_filesystems(f->hub), 0);
}

static void moved_directory_follows(void **state) {
        Fixture *f = *state;
        if (!f->hub)
                skip();
        make(f, "ws", true);
        make(f, "ws/d", true);
        make(f, "out", true);
        char root[512], want[600];
        path(f, "ws", root, sizeof root);
        Heard h = {};
        char *roots[] = { root };
        assert_int_equal(fan_sub_new(f->hub, &ops, &h, roots, 1, &h.sub), 0);
        make(f, "ws/d/one", false);
        assert_true(fan_drain(f->hub)); /* d's path is remembered now */
        char from[512], to[512];
        path(f, "ws/d", from, sizeof from);
        path(f, "ws/.aws", to, sizeof to);
        assert_int_equal(rename(from, to), 0);
        make(f, "ws/.aws/credentials", false);
        h.events = 0;
        assert_true(fan_drain(f->hub));
        assert_true(h.events >= 2); /* the move, then the file */
        snprintf(want, sizeof want, "%s/.aws/credentials", root);
        assert_string_equal(h.last, want);
        /* Out of the root: nothing more. */
        path(f, "out/aws", from, sizeof from);
        assert_int_equal(rename(to, from), 0);
        assert_true(fan_drain(f->hub));
        h.events = 0;
        make(f, "out/aws/later", false);
        assert_true(fan_drain(f->hub));
        assert_int_equal(h.events, 0);
        fan_sub_free(h.sub);
}

static void freed_mid_batch_hears_nothing_more(void **state) {
        Fixture *f = *state;
        if (!f->hub)
                skip();
        make(f, "ws", true);
        char root[512];
        path(f, "ws", root, sizeof root);
        Heard a = {}, b = {};
        char *roots[] = { root };
        assert_int_equal(fan_sub_new(f->hub, &ops, &a, roots, 1, &a.sub), 0);
        assert_int_equal(fan_sub_new(f->hub, &ops, &b, roots, 1, &b.sub), 0);
        assert_int_equal(fan_n_filesystems(f->hub), 1); /* one mark for both */
        /* b was added last: it hears first and frees a. */
        b.free_other = a.sub;
        make(f, "ws/x", false);
        assert_true(fan_drain(f->hub));
        assert_true(b.events >= 1);
        assert_int_equal(a.events, 0);
        assert_int_equal(a.batches, 0);
        assert_int_equal(fan_n_filesystems(f->hub), 1);
        fan_sub_free(b.sub);
        assert_int_equal(fan_n_filesystems(f->hub), 0);
}

/* A directory remembers which subscribers it is below (an event beside
 * every workspace costs one cache look): a subscriber freed in between is
 * no longer among them, and the one left still hears. */
static void remembered_matches_follow_the_subscribers(void **state) {
        Fixture *f = *state;
        if (!f->hub)
                skip();
        make(f, "ws", true);
        make(f, "ws/inner", true);
        make(f, "other", true);
        char ra[512], rb[512], rc[512];
        path(f, "ws", ra, sizeof ra);
        path(f, "ws/inner", rb, sizeof rb);
        path(f, "other", rc, sizeof rc);
        Heard a = {}, b = {}, c = {};
        char *roots_a[] = { ra }, *roots_b[] = { rb }, *roots_c[] = { rc };
        assert_int_equal(fan_sub_new(f->hub, &ops, &a, roots_a, 1, &a.sub), 0);
        assert_int_equal(fan_sub_new(f->hub, &ops, &b, roots_b, 1, &b.sub), 0);
        assert_int_equal(fan_sub_new(f->hub, &ops, &c, roots_c, 1, &c.sub), 0);
        make(f, "ws/inner/one", false);
        assert_true(fan_drain(f->hub));
        assert_true(a.events >= 1 && b.events >= 1);
        assert_int_equal(c.events, 0);
        /* c's end unmarks nothing (a and b hold the filesystem) and
         * flushes nothing: the directory's entry stays remembered. */
        fan_sub_free(c.sub);
        fan_sub_free(b.sub);
        int before = b.events;
        a.events = 0;
        make(f, "ws/inner/two", false);
        assert_true(fan_drain(f->hub));
        assert_true(a.events >= 1);
        assert_int_equal(b.events, before);
        char want[600];
        snprintf(want, sizeof want, "%s/inner/two", ra);
        assert_string_equal(a.last, want);
        fan_sub_free(a.sub);
}

/* The mark is the filesystem's: the host making a workspace's files
 * before its watch starts queues events; they are not its news. */
static void queued_before_is_not_news(void **state) {
        Fixture *f = *state;
        if (!f->hub)
                skip();
        make(f, "one", true);
        make(f, "two", true);
        char one[512], two[512];
        path(f, "one", one, sizeof one);
        path(f, "two", two, sizeof two);
        Heard a = {}, b = {};
        char *ra[] = { one }, *rb[] = { two };
        assert_int_equal(fan_sub_new(f->hub, &ops, &a, ra, 1, &a.sub), 0);
        make(f, "two/.envrc", false);
        assert_int_equal(fan_sub_new(f->hub, &ops, &b, rb, 1, &b.sub), 0);
        assert_true(fan_drain(f->hub));
        assert_int_equal(b.events, 0);
        make(f, "two/later", false);
        assert_true(fan_drain(f->hub));
        assert_true(b.events >= 1);
        fan_sub_free(a.sub);
        fan_sub_free(b.sub);
}

#define N_DIRS 600

typedef struct Dirs {
        char root[512];
        int created[N_DIRS]; /* FAN_CREATEs heard in root/dN */
        int astray;          /* events elsewhere */
        int overflows;       /* the hub's word that events were lost */
} Dirs;

static void on_dir_event(void *u, const char *dir, const char *name, uint64_t mask) {
        Dirs *d = u;
        size_t n = strlen(d->root);
        unsigned k;
        char end;
        if (mask & FAN_Q_OVERFLOW)
                d->overflows++;
        else if (!dir || strncmp(dir, d->root, n) != 0 || sscanf(dir + n, "/d%u%c", &k, &end) != 1 || k >= N_DIRS)
                d->astray++;
        else if (mask & FAN_CREATE)
                d->created[k]++;
}

static const FanOps dir_ops = { .event = on_dir_event };

/* The cache starts small and grows with the directories it is told of:
 * each directory remembered across the growth keeps its paths and its
 * subscribers (the second file in each is heard by the same path), and a
 * subscriber beside hears none of it. */
static void many_directories_outgrow_the_first_table(void **state) {
        Fixture *f = *state;
        if (!f->hub)
                skip();
        make(f, "ws", true);
        make(f, "beside", true);
        char rel[64];
        for (int i = 0; i < N_DIRS; i++) {
                snprintf(rel, sizeof rel, "ws/d%d", i);
                make(f, rel, true);
        }
        Dirs *d = calloc(1, sizeof *d), *other = calloc(1, sizeof *other);
        assert_true(d && other);
        path(f, "ws", d->root, sizeof d->root);
        path(f, "beside", other->root, sizeof other->root);
        FanSub *sd, *so;
        char *rd[] = { d->root }, *ro[] = { other->root };
        assert_int_equal(fan_sub_new(f->hub, &dir_ops, d, rd, 1, &sd), 0);
        assert_int_equal(fan_sub_new(f->hub, &dir_ops, other, ro, 1, &so), 0);
        /* A read that takes too long under the machine's load is taken as
         * an overflow (notify-subs.h: the hub's word that events were
         * lost, which a watch answers with a walk); such a round proves
         * nothing of the table and is made again, with new files. */
        for (int round = 1; round <= 2; round++) {
                bool clean = false;
                for (int attempt = 0; attempt < 5 && !clean; attempt++) {
                        memset(d->created, 0, sizeof d->created);
                        d->overflows = other->overflows = 0;
                        for (int i = 0; i < N_DIRS; i++) {
                                snprintf(rel, sizeof rel, "ws/d%d/f%d.%d", i, round, attempt);
                                make(f, rel, false);
                        }
                        assert_true(fan_drain(f->hub));
                        clean = d->overflows == 0;
                        if (!clean)
                                print_message("# round %d: the read was taken as an overflow; made again\n", round);
                }
                assert_true(clean);
                for (int i = 0; i < N_DIRS; i++)
                        assert_int_equal(d->created[i], 1);
                assert_int_equal(d->astray, 0);
                assert_int_equal(other->astray, 0);
        }
        fan_sub_free(so);
        fan_sub_free(sd);
        free(d);
        free(other);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(below_the_root_only, setup, teardown),
                cmocka_unit_test_setup_teardown(moved_directory_follows, setup, teardown),
                cmocka_unit_test_setup_teardown(freed_mid_batch_hears_nothing_more, setup, teardown),
                cmocka_unit_test_setup_teardown(queued_before_is_not_news, setup, teardown),
                cmocka_unit_test_setup_teardown(remembered_matches_follow_the_subscribers, setup, teardown),
                cmocka_unit_test_setup_teardown(many_directories_outgrow_the_first_table, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
