/* SPDX-License-Identifier: MIT */
/* A taken-over vectora-sandbox-proxy, for tests/integration/test_proxy_attacks.py:
 * preloaded into the real proxy, its uv_run runs once the proxy has given
 * up its privileges (main.c: confine() comes first), and tries what code
 * of the attacker's would. Each attempt is reported on stderr as
 * "EVIL <name> <return value> <errno>", then "EVIL done 0 0". What to try
 * comes from the environment the test's wrapper sets (EVIL_*). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static void rep(const char *what, long r) {
        dprintf(2, "EVIL %s %ld %d\n", what, r, r < 0 ? errno : 0);
}

static void attack(void) {
        const char *e;
        char path[256];
        rep("open-shadow", open("/etc/shadow", O_RDONLY));
        if ((e = getenv("EVIL_READ")))
                rep("open-read-outside", open(e, O_RDONLY));
        if ((e = getenv("EVIL_WRITE")))
                rep("open-write", open(e, O_WRONLY | O_CREAT, 0644));
        if ((e = getenv("EVIL_DPID"))) {
                snprintf(path, sizeof path, "/proc/%s/environ", e);
                rep("open-daemon-environ", open(path, O_RDONLY));
                rep("kill-daemon", kill(atoi(e), 0));
                rep("ptrace-daemon", ptrace(PTRACE_ATTACH, atoi(e), 0, 0));
        }
        if ((e = getenv("EVIL_VICTIM")))
                rep("ptrace-victim", ptrace(PTRACE_ATTACH, atoi(e), 0, 0));
        rep("set-dumpable", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
        char *argv[] = { (char *)"true", NULL };
        rep("execve", execve("/bin/true", argv, argv + 1));
        rep("fork", syscall(SYS_fork));
        rep("mkdir", mkdir("/tmp/vectora-evil-proxy-dir", 0755));
        rep("socket-packet", socket(AF_PACKET, SOCK_RAW, 0));
        rep("unshare", unshare(CLONE_NEWUSER));
        if ((e = getenv("EVIL_TCP"))) {
                /* Documented as possible (docs/threat-model.md): the
                 * proxy must connect, and seccomp cannot see the address. */
                int s = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(e)) };
                inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
                rep("connect-loopback", connect(s, (struct sockaddr *)&sa, sizeof sa));
                close(s);
        }
        if ((e = getenv("EVIL_UNIX"))) {
                /* A unix socket of its uid's (a session bus, an agent,
                 * another service of nobody's). */
                int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                rep("socket-unix", s);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof sa.sun_path, "%s", e);
                rep("connect-unix", s < 0 ? -1 : connect(s, (struct sockaddr *)&sa, sizeof sa));
                if (s >= 0)
                        close(s);
        }
        if ((e = getenv("EVIL_API"))) {
                /* The daemon's own API socket, and a call through it. */
                int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof sa.sun_path, "%s", e);
                long r = s < 0 ? -1 : connect(s, (struct sockaddr *)&sa, sizeof sa);
                rep("connect-daemon-api", r);
                const char *req = getenv("EVIL_API_REQ");
                if (r == 0 && req) {
                        char reply[256] = "";
                        (void)!write(s, req, strlen(req));
                        (void)!write(s, "\n", 1);
                        ssize_t n = read(s, reply, sizeof reply - 1);
                        rep("daemon-api-reply", n);
                }
                if (s >= 0)
                        close(s);
        }
        if (getenv("EVIL_REWRITE_STDERR")) {
                /* When stderr is the daemon's log file (O_APPEND, the
                 * open file shared with the daemon): clear O_APPEND, go
                 * back to its start, write over what the daemon logged. */
                int fl = fcntl(2, F_GETFL);
                rep("fcntl-clear-append", fcntl(2, F_SETFL, fl & ~O_APPEND));
                rep("lseek-stderr", lseek(2, 0, SEEK_SET));
                static const char forged[] = "FORGED-BY-THE-PROXY\n";
                rep("write-stderr", write(2, forged, sizeof forged - 1));
                (void)fcntl(2, F_SETFL, fl);
                (void)lseek(2, 0, SEEK_END);
        }
        if ((e = getenv("EVIL_LOG_FLOOD")))
                for (int i = 0; i < atoi(e); i++)
                        dprintf(2, "FLOOD line %d, and a control character: \033[2J\n", i);
        int n = 0;
        for (int fd = 0; fd < 1024; fd++)
                if (fcntl(fd, F_GETFD) >= 0)
                        n = fd;
        rep("highest-fd", n);
        rep("done", 0);
}

int uv_run(void *loop, int mode) {
        static int done;
        if (!done) {
                done = 1;
                attack();
        }
        int (*real)(void *, int) = (int (*)(void *, int))dlsym(RTLD_NEXT, "uv_run");
        return real(loop, mode);
}
