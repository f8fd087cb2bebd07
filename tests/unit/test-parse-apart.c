/* SPDX-License-Identifier: MIT */
/* The monitor's parse apart (src/daemon/monitor/parse-apart.c): what the
 * child answers comes back; while it runs it is no account's uid and gid
 * with no groups, no capability, no_new_privs, its seccomp filter and one
 * descriptor, and another user cannot stop it; it may allocate, but any
 * other system call kills it and is -EBADMSG; one that never answers is killed at its deadline. Needs
 * root (the ids); as another user parse_apart refuses, which is checked. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail-home.h"
#include "parse-apart.h"
#include "proc-util.h"

static bool root_or_skip(void) {
        if (geteuid() == 0)
                return true;
        char out[8];
        /* As another user: refused, no child. */
        assert_int_equal(parse_apart(NULL, NULL, out, sizeof out, 100), -EPERM);
        print_message("skipped: needs root (the child's ids)\n");
        return false;
}

typedef struct Pair {
        int a, b;
} Pair;

static void add(const void *arg, void *out) {
        const Pair *p = arg;
        *(long *)out = (long)p->a + p->b;
}

/* What the child computes from the caller's bytes comes back. */
static void answer_comes_back(void **state) {
        (void)state;
        if (!root_or_skip())
                skip();
        Pair p = { 40, 2 };
        long sum = 0;
        assert_int_equal(parse_apart(add, &p, &sum, sizeof sum, 3000), 0);
        assert_int_equal(sum, 42);
}

/* The two texts' identity, parsed apart. */
static VsJailIdent ident_of(const char *xdg, const char *home) {
        VsJailIdentTexts t = { { (char *)xdg, (char *)home }, { xdg ? strlen(xdg) : 0, home ? strlen(home) : 0 } };
        VsJailIdent id;
        memset(&id, 'x', sizeof id);
        assert_int_equal(parse_apart(jail_git_identity_parse, &t, &id, sizeof id, 3000), 0);
        return id;
}

/* The git identity's parse runs there (it allocates nothing and makes
 * no system call): the later file wins, a file git cannot read gives
 * nothing, what is missing is the default. */
static void git_identity_parsed_apart(void **state) {
        (void)state;
        if (!root_or_skip())
                skip();
        VsJailIdent id = ident_of("[user]\n\tname = A Person\n\temail = xdg@example.org\n",
                                  "[user]\n\temail = \"home@example.org\"\n");
        assert_string_equal(id.name, "A Person");
        assert_string_equal(id.email, "home@example.org");
        id = ident_of("[user]\n\tname = A Person\n", "[user]\n\temail = b@example.org\n[bad");
        assert_string_equal(id.name, "A Person");
        assert_string_equal(id.email, VS_JAIL_GIT_EMAIL);
        /* A value of 200 000 bytes (the parser's buffers grow to it, past
         * malloc's mmap threshold): not an identity, the earlier file's kept. */
        char *big = malloc(200100);
        assert_non_null(big);
        int n = snprintf(big, 200100, "[user]\n\tname = ");
        memset(big + n, 'a', 200000);
        strcpy(big + n + 200000, "\n");
        id = ident_of("[user]\n\tname = A Person\n", big);
        free(big);
        assert_string_equal(id.name, "A Person");
        id = ident_of(NULL, NULL);
        assert_string_equal(id.name, VS_JAIL_GIT_NAME);
        assert_string_equal(id.email, VS_JAIL_GIT_EMAIL);
}

/* A system call (getpid, open, an executable mapping) in the child:
 * killed by its filter. */
static void calls_getpid(const void *arg, void *out) {
        (void)arg;
        *(long *)out = syscall(SYS_getpid);
}

static void opens(const void *arg, void *out) {
        (void)arg;
        *(long *)out = syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
}

static void maps_code(const void *arg, void *out) {
        (void)arg;
        *(long *)out = (long)mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* Memory, a lot of it (malloc's mmap, brk, free): allowed. */
static void allocates(const void *arg, void *out) {
        (void)arg;
        char *p = malloc(1 << 24), *q = malloc(100);
        *(long *)out = p && q;
        if (p)
                memset(p, 1, 1 << 24);
        free(p);
        free(q);
}

static void system_call_kills(void **state) {
        (void)state;
        if (!root_or_skip())
                skip();
        long v = -7;
        assert_int_equal(parse_apart(calls_getpid, NULL, &v, sizeof v, 3000), -EBADMSG);
        assert_int_equal(parse_apart(opens, NULL, &v, sizeof v, 3000), -EBADMSG);
        assert_int_equal(parse_apart(maps_code, NULL, &v, sizeof v, 3000), -EBADMSG);
        assert_int_equal(v, -7);
        assert_int_equal(parse_apart(allocates, NULL, &v, sizeof v, 3000), 0);
        assert_int_equal(v, 1);
}

/* Shared with the child: it says it runs, then waits for go. */
typedef struct Gate {
        volatile int running, go;
} Gate;

static void waits_at_gate(const void *arg, void *out) {
        Gate *g = *(Gate *const *)arg;
        g->running = 1;
        while (!g->go)
                ;
        *(long *)out = 7;
}

typedef struct Call {
        Gate *gate;
        long out;
        int r, timeout;
} Call;

static void *run_call(void *p) {
        Call *c = p;
        c->r = parse_apart(waits_at_gate, &c->gate, &c->out, sizeof c->out, c->timeout);
        return NULL;
}

/* The one child of this process whose uid is PARSE_APART_UID: its pid. */
static pid_t find_child(void) {
        DIR *d = opendir("/proc");
        assert_non_null(d);
        struct dirent *de;
        pid_t found = 0;
        while ((de = readdir(d))) {
                char path[300], line[256];
                snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
                FILE *f = fopen(path, "re");
                if (!f)
                        continue;
                int ppid = -1;
                long uid = -1;
                while (fgets(line, sizeof line, f)) {
                        sscanf(line, "PPid: %d", &ppid);
                        sscanf(line, "Uid: %ld", &uid);
                }
                fclose(f);
                if (ppid == getpid() && uid == PARSE_APART_UID)
                        found = (pid_t)atoi(de->d_name);
        }
        closedir(d);
        return found;
}

/* pid's /proc status line starting with key: its value (after the tab). */
static void status_line(pid_t pid, const char *key, char *val, size_t n) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        val[0] = 0;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':') {
                        const char *v = line + strlen(key) + 1;
                        v += strspn(v, " \t");
                        snprintf(val, n, "%s", v);
                        val[strcspn(val, " \n")] = 0; /* Groups: "N N \n" */
                }
        fclose(f);
}

/* kill(pid, SIGSTOP) from a process of nobody's (65534): its errno. */
static int stop_as_nobody(pid_t pid) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t k = fork();
        assert_true(k >= 0);
        if (k == 0) {
                int e = 0;
                if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        e = -1;
                else if (kill(pid, SIGSTOP) < 0)
                        e = errno;
                (void)!write(p[1], &e, sizeof e);
                _exit(0);
        }
        close(p[1]);
        int e = -2;
        assert_int_equal(read(p[0], &e, sizeof e), (ssize_t)sizeof e);
        close(p[0]);
        assert_int_equal(waitpid(k, NULL, 0), k);
        return e;
}

static Gate *shared_gate(void) {
        Gate *g = mmap(NULL, sizeof *g, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(g != MAP_FAILED);
        g->running = g->go = 0;
        return g;
}

static void child_is_no_one(void **state) {
        (void)state;
        if (!root_or_skip())
                skip();
        Call c = { .gate = shared_gate(), .timeout = 10000 };
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, run_call, &c), 0);
        for (int i = 0; i < 5000 && !c.gate->running; i++)
                usleep(1000);
        assert_true(c.gate->running);
        pid_t pid = find_child();
        assert_true(pid > 0);
        char v[128], want[64];
        snprintf(want, sizeof want, "%d\t%d\t%d\t%d", PARSE_APART_UID, PARSE_APART_UID, PARSE_APART_UID,
                 PARSE_APART_UID);
        status_line(pid, "Uid", v, sizeof v);
        assert_string_equal(v, want);
        status_line(pid, "Gid", v, sizeof v);
        assert_string_equal(v, want);
        status_line(pid, "Groups", v, sizeof v);
        assert_string_equal(v, "");
        status_line(pid, "CapEff", v, sizeof v);
        assert_string_equal(v, "0000000000000000");
        status_line(pid, "CapPrm", v, sizeof v);
        assert_string_equal(v, "0000000000000000");
        status_line(pid, "NoNewPrivs", v, sizeof v);
        assert_string_equal(v, "1");
        status_line(pid, "Seccomp", v, sizeof v); /* 2: a filter */
        assert_string_equal(v, "2");
        assert_int_equal(proc_fd_count(pid), 1);
        assert_int_equal(stop_as_nobody(pid), EPERM);
        c.gate->go = 1;
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.out, 7);
        assert_int_equal(find_child(), 0);
        munmap(c.gate, sizeof *c.gate);
}

/* One that never answers: killed at its deadline, and reaped. */
static void deadline_kills(void **state) {
        (void)state;
        if (!root_or_skip())
                skip();
        Call c = { .gate = shared_gate(), .timeout = 300 };
        run_call(&c);
        assert_int_equal(c.r, -ETIMEDOUT);
        assert_int_equal(find_child(), 0);
        munmap(c.gate, sizeof *c.gate);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(answer_comes_back),
                cmocka_unit_test(git_identity_parsed_apart),
                cmocka_unit_test(system_call_kills),
                cmocka_unit_test(child_is_no_one),
                cmocka_unit_test(deadline_kills),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
