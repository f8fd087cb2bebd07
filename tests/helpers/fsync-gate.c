/* SPDX-License-Identifier: MIT */
/* An LD_PRELOAD for tests/integration/test_approval_sync.py only, so that
 * the daemon carries no test knob: fsync() that fails with EIO while the
 * file $VS_FSYNC_FAIL exists, and waits while the file $VS_FSYNC_GATE
 * exists (it first creates $VS_FSYNC_GATE.waiting, to say a sync is held).
 * The test decides when a sync ends, so "the sync is slow" is exact, not a
 * matter of timing. LD_PRELOAD is taken out of the environment at once:
 * bwrap and the jail never see it. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char *gate, *fail, *waiting;

__attribute__((constructor)) static void fsync_gate_init(void) {
        const char *g = getenv("VS_FSYNC_GATE"), *f = getenv("VS_FSYNC_FAIL");
        gate = g ? strdup(g) : NULL;
        fail = f ? strdup(f) : NULL;
        if (gate && asprintf(&waiting, "%s.waiting", gate) < 0)
                waiting = NULL;
        unsetenv("LD_PRELOAD");
}

int fsync(int fd) {
        static int (*real)(int);
        if (!real)
                real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
        if (fail && access(fail, F_OK) == 0) {
                errno = EIO;
                return -1;
        }
        if (gate && access(gate, F_OK) == 0) {
                if (waiting)
                        close(open(waiting, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
                struct timespec ts = { 0, 10 * 1000 * 1000 };
                while (access(gate, F_OK) == 0)
                        nanosleep(&ts, NULL);
        }
        return real(fd);
}
