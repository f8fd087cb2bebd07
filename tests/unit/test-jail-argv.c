/* SPDX-License-Identifier: MIT */
/* The root monitor's check of a jail's argv (src/daemon/monitor/jail-argv.c):
 * the command line a plan renders passes; each change a server could make
 * to run something else as the owner, or a weaker jail, is refused with
 * its reason. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend-local.h"
#include "jail-argv.h"
#include "macro.h"

#define BWRAP "/usr/bin/bwrap"
#define WORKER "/usr/libexec/vectora-sandbox/vectora-worker"
#define HOMES "/var/lib/vectora-sandbox/homes"

static const JailArgvRules rules = { .bwrap = BWRAP, .worker = WORKER, .homes = HOMES, .uid = 1000, .gid = 1000 };

/* What backend_local_argv renders for a workspace with everything: no
 * network, a kept home, the GPU, a listed path, the proxy. */
static const char *const good[] = {
        BWRAP, "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup", "--unshare-net", "--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--uid", "1000", "--gid", "1000", "--hostname", "vectora-sandbox", "--ro-bind", "/usr", "/usr", "--symlink",
        "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp", "--bind",
        HOMES "/0123abcd", VS_JAIL_HOME, "--bind", "/srv/ws", "/srv/ws", "--ro-bind", "/srv/ws/.git", "/srv/ws/.git",
        "--ro-bind", "/tmp/empty", "/srv/ws/.env", "--dev-bind", "/dev/dri", "/dev/dri", "--ro-bind", "/sys", "/sys",
        "--ro-bind", WORKER, VS_JAIL_WORKER_PATH, "--ro-bind", "/run/vectora-sandbox/proxy.sock",
        VS_JAIL_PROXY_SOCKET, "--clearenv", "--setenv", "HOME", VS_JAIL_HOME, "--chdir", "/srv/ws", "--",
        VS_JAIL_WORKER_PATH, NULL
};

#define MAXARGS 96

/* good with the token at `at` (its first occurrence; "$0" for argv[0],
 * "END" for the place of the final NULL) replaced: drop tokens removed
 * from there, then add inserted (NULL-terminated). */
static void edit(char *out[MAXARGS], const char *at, size_t drop, const char *const *add) {
        size_t n = 0, i = 0, where = SIZE_MAX;
        for (size_t k = 0; good[k]; k++)
                if (where == SIZE_MAX && ((streq(at, "$0") && k == 0) || (!streq(at, "$0") && streq(good[k], at))))
                        where = k;
        if (streq(at, "END"))
                where = ELEMENTSOF(good) - 1;
        assert_true(where != SIZE_MAX);
        for (; i < where; i++)
                out[n++] = (char *)good[i];
        for (const char *const *a = add; a && *a; a++)
                out[n++] = (char *)*a;
        for (i = where + drop; good[i]; i++)
                out[n++] = (char *)good[i];
        assert_true(n < MAXARGS);
        out[n] = NULL;
}

static void good_passes(void **state) {
        (void)state;
        char why[640] = "";
        assert_int_equal(jail_argv_check((char *const *)good, &rules, why, sizeof why), 0);
        /* A mount over the worker's place before it binds the worker: the
         * worker's bind comes on top. */
        char *a[MAXARGS];
        edit(a, "--ro-bind", 0, (const char *const[]){ "--tmpfs", "/run", NULL });
        assert_int_equal(jail_argv_check(a, &rules, why, sizeof why), 0);
        /* The network kept (network = true) and no home kept. */
        edit(a, "--unshare-net", 1, NULL);
        assert_int_equal(jail_argv_check(a, &rules, why, sizeof why), 0);
}

static void refusals(void **state) {
        (void)state;
        static const struct {
                const char *what, *at;
                size_t drop;
                const char *add[8];
                const char *reason; /* a part of why */
        } cases[] = {
                { "another program as the owner", "$0", 1, { "/bin/sh", NULL }, "its program is not" },
                { "bwrap named otherwise", "$0", 1, { "/usr/local/bin/bwrap", NULL }, "its program is not" },
                { "the user namespace left open", "--disable-userns", 1, { NULL }, "--disable-userns is missing" },
                { "the host's pid namespace", "--unshare-pid", 1, { NULL }, "--unshare-pid is missing" },
                { "outliving the server", "--die-with-parent", 1, { NULL }, "--die-with-parent is missing" },
                { "a terminal to push input into", "--new-session", 1, { NULL }, "--new-session is missing" },
                { "the server's environment kept", "--clearenv", 1, { NULL }, "--clearenv is missing" },
                { "capabilities kept", "--cap-drop", 2, { NULL }, "--cap-drop is missing" },
                { "one capability dropped", "--cap-drop", 2, { "--cap-drop", "CAP_SYS_ADMIN", NULL }, "a jail drops ALL" },
                { "a capability added", "--cap-drop", 0, { "--cap-add", "ALL", NULL }, "no option a jail's plan uses" },
                { "uid 0 in the jail", "--uid", 2, { "--uid", "0", NULL }, "not the id the request named" },
                { "another gid", "--gid", 2, { "--gid", "27", NULL }, "not the id the request named" },
                { "a uid with a sign", "--uid", 2, { "--uid", "+1000", NULL }, "not the id the request named" },
                { "a seccomp filter of the server's", "--clearenv", 0, { "--seccomp", "3", NULL }, "no option" },
                { "an outer user namespace", "--clearenv", 0, { "--userns", "3", NULL }, "no option" },
                { "arguments from a descriptor", "--clearenv", 0, { "--args", "3", NULL }, "no option" },
                { "a file from a descriptor", "--clearenv", 0, { "--file", "3", "/x", NULL }, "no option" },
                { "the host's network namespace shared back", "--clearenv", 0, { "--share-net", NULL }, "no option" },
                { "/etc writable", "--clearenv", 0, { "--bind", "/etc/cron.d", "/x", NULL }, "below /etc" },
                { "/usr writable", "--clearenv", 0, { "--bind", "/usr", "/usr", NULL }, "/usr" },
                { "the host's /proc writable", "--clearenv", 0, { "--bind", "/proc", "/x", NULL }, "/proc" },
                { "/ writable", "--clearenv", 0, { "--bind", "/", "/", NULL }, "as a whole" },
                { "the state directory writable", "--clearenv", 0, { "--bind", "/var/lib/vectora-sandbox", "/x", NULL }, "/var/lib" },
                { "below a kept home", "--clearenv", 0, { "--bind", HOMES "/0123abcd/.ssh", "/x", NULL }, "/var/lib" },
                { "homes itself", "--clearenv", 0, { "--bind", HOMES, "/x", NULL }, "/var/lib" },
                { "a path with ..", "--clearenv", 0, { "--bind", "/srv/ws/../../etc", "/x", NULL }, "absolute and normal" },
                { "a relative source", "--clearenv", 0, { "--ro-bind", "etc", "/x", NULL }, "absolute and normal" },
                { "a trailing slash", "--clearenv", 0, { "--bind", "/srv/ws/", "/x", NULL }, "absolute and normal" },
                { "a disk", "--clearenv", 0, { "--dev-bind", "/dev/sda", "/dev/sda", NULL }, "GPU" },
                { "a GPU node elsewhere", "--clearenv", 0, { "--dev-bind", "/dev/dri", "/dev/x", NULL }, "GPU" },
                { "a device by another name", "--clearenv", 0, { "--dev-bind", "/srv/dri", "/srv/dri", NULL }, "GPU" },
                { "/proc elsewhere", "--proc", 2, { "--proc", "/srv/proc", NULL }, "only at /proc" },
                { "the worker hidden by a tmpfs", "--clearenv", 0, { "--tmpfs", "/run", NULL }, "hide the worker" },
                { "the worker hidden by a bind", "--clearenv", 0, { "--bind", "/srv/ws", "/run/vectora", NULL }, "hide the worker" },
                { "the worker hidden by a link", "--clearenv", 0, { "--symlink", "/srv", "/run", NULL }, "hide the worker" },
                { "another worker", WORKER, 1, { "/srv/ws/worker", NULL }, "something else than the daemon's worker" },
                { "a second worker bind", "--clearenv", 0, { "--ro-bind", WORKER, VS_JAIL_WORKER_PATH, NULL },
                  "something else than the daemon's worker" },
                { "a writable worker", "--clearenv", 0, { "--bind", "/srv/ws/w", VS_JAIL_WORKER_PATH, NULL },
                  "something else than the daemon's worker" },
                { "a shell after --", "END", 0, { "-c", "id", NULL }, "alone after" },
                { "no -- at all", "--", 2, { NULL }, "alone after" },
                { "another program in the jail", "--", 2, { "--", "/bin/sh", NULL }, "alone after" },
                { "an option without its value", "END", 0, { NULL }, NULL },
                { "a variable with =", "--setenv", 3, { "--setenv", "A=B", "c", NULL }, "no variable name" },
                { "an empty variable", "--setenv", 3, { "--setenv", "", "c", NULL }, "no variable name" },
                { "an empty link target", "--symlink", 3, { "--symlink", "", "/bin", NULL }, "empty target" },
                /* Attack review 5: bwrap follows the links the argv makes. */
                { "the worker's place by another name", "--clearenv", 0,
                  { "--symlink", "run", "/alias", "--ro-bind", "/srv/ws/evil", "/alias/vectora/vectora-worker", NULL },
                  "goes through the link /alias" },
                { "a link up into the host's tree", "--ro-bind", 0, { "--symlink", "../../oldroot/usr", "/o", NULL }, "a target with .." },
                { "a link into bwrap's /oldroot", "--ro-bind", 0, { "--symlink", "/oldroot/usr", "/o", NULL }, "/oldroot" },
                /* The prefix test reads text: //oldroot is /oldroot
                 * (the monitor-boundary review's F4). */
                { "a link into //oldroot", "--ro-bind", 0, { "--symlink", "//oldroot/etc", "/o", NULL }, "/oldroot" },
                { "a link into /./oldroot", "--ro-bind", 0, { "--symlink", "/./oldroot/etc", "/o", NULL }, "/oldroot" },
                { "a link into bwrap's /newroot", "--ro-bind", 0, { "--symlink", "/newroot/run", "/o", NULL }, "/newroot" },
                { "a bind through a link", "--proc", 0, { "--bind", "/srv/ws", "/bin/x", NULL }, "goes through the link /bin" },
                { "a bind over a link", "--proc", 0, { "--tmpfs", "/bin", NULL }, "goes through the link /bin" },
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                char *a[MAXARGS] = { NULL };
                char why[640] = "";
                if (!cases[c].reason) {
                        /* The argv cut after an option that takes two values. */
                        edit(a, "--chdir", 4, (const char *const[]){ "--bind", "/srv/ws", NULL });
                } else
                        edit(a, cases[c].at, cases[c].drop, cases[c].add);
                int r = jail_argv_check(a, &rules, why, sizeof why);
                printf("# %s: %s\n", cases[c].what, why);
                assert_int_equal(r, -EPERM);
                assert_non_null(strstr(why, cases[c].reason ? cases[c].reason : "lacks its value"));
        }
        /* No worker bound at all. */
        char *a[MAXARGS] = { NULL };
        char why[640] = "";
        edit(a, WORKER, 0, NULL);
        for (size_t i = 0; a[i]; i++)
                if (streq(a[i], WORKER)) {
                        memmove(&a[i - 1], &a[i + 2], (MAXARGS - i - 2) * sizeof *a);
                        break;
                }
        assert_int_equal(jail_argv_check(a, &rules, why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "worker is not bound"));
        /* Without a worker or a bwrap the monitor knows, nothing passes. */
        JailArgvRules none = rules;
        none.worker = NULL;
        assert_int_equal(jail_argv_check((char *const *)good, &none, why, sizeof why), -EPERM);
        none = rules;
        none.bwrap = NULL;
        assert_int_equal(jail_argv_check((char *const *)good, &none, why, sizeof why), -EPERM);
        /* Without homes, a kept home is below /var/lib like any path. */
        none = rules;
        none.homes = NULL;
        assert_int_equal(jail_argv_check((char *const *)good, &none, why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "/var/lib"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(good_passes),
                cmocka_unit_test(refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
