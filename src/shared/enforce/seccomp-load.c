/* SPDX-License-Identifier: MIT */
/* Worker side of seccomp: loads a program compiled by the host. Linked into
 * the static worker, so it must not reach dlopen() or libseccomp; that is
 * why it lives apart from seccomp.c. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <sys/prctl.h>

#include "macro.h"
#include "seccomp-load.h"

int seccomp_load_bpf(const void *bpf, size_t len) {
        /* The program comes over the wire: check its shape before the kernel
         * sees it (the kernel checks the instructions themselves). */
        if (!bpf || len == 0 || len % sizeof(struct sock_filter) != 0 ||
            len / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return -EINVAL;

        struct sock_fprog prog = {
                .len = (unsigned short) (len / sizeof(struct sock_filter)),
                .filter = (struct sock_filter *) (uintptr_t) bpf,
        };
        /* Without no_new_privs (or CAP_SYS_ADMIN) the kernel says EACCES. */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                return negative_errno();
        return 0;
}
