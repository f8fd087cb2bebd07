/* SPDX-License-Identifier: MIT */
/* The docker backend: one long-lived `docker run -i` container per
 * workspace, the static worker bind-mounted in as its entrypoint. */
#include "launch-internal.h"
#include "paths.h"

#include <string.h>
#include <sys/stat.h>

#include "backend-docker.h"
#include "strv.h"

int launch_docker_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        int r;
        _cleanup_free_ char *name = NULL, *base = NULL;
        if ((r = launch_plan(p, o, l, err)) < 0)
                return r;
        if ((r = backend_docker_name(p->workspace, &base)) < 0)
                return r;
        /* Alternate names: after a policy change the old container drains
         * its in-flight calls while the new one starts beside it. */
        if (asprintf(&name, "%s-%c", base, o->instance % 2 ? 'b' : 'a') < 0) {
                name = NULL;
                return -ENOMEM;
        }

        /* Only the GPU node list is used; the probe is cheap. */
        VsLocalEnv host = { 0 };
        if (!p->no_gpu)
                r = backend_local_probe(&host, err);
        /* The image has its own libraries: the worker must be static. */
        _cleanup_free_ char *worker = NULL;
        if (r >= 0)
                r = vs_static_worker_path(o->worker_path, &worker);
        VsDockerEnv env = {
                .worker_path = worker,
                .name = name,
                .uid = l->uid,
                .gid = l->gid,
                .plan = l->plan,
                .gpu_nodes = host.gpu_nodes,
                .proxy_socket = l->proxy_socket ? o->proxy_socket : NULL,
        };
        if (r >= 0)
                r = backend_docker_argv(p, &env, &l->argv, err);
        if (r >= 0)
                /* First start: whatever an earlier daemon left, under any
                 * name; later starts: only a stale container of this name. */
                r = o->instance == 0 ? backend_docker_rm_all_argv(p, base, &l->pre_argv)
                                     : backend_docker_rm_argv(p, name, &l->pre_argv);
        backend_local_env_done(&host);
        if (r < 0)
                return r;

        /* The docker client runs as the daemon (it needs the engine's
         * socket); the container runs as the workspace owner (--user). */
        l->switch_user = false;
        /* RLIMIT_NPROC would count the owner's processes on the whole host
         * (no user namespace): the engine's --pids-limit counts the
         * container's alone. */
        l->pids = 0;
        _cleanup_free_ char *rm = argv_quote(l->pre_argv);
        if (!rm ||
            (r = strv_extendf(&l->notes, "docker backend: container %s from image %s, --user %u:%u, %zu masked path(s)%s",
                              name, p->docker.image, (unsigned)l->uid, (unsigned)l->gid, l->n_masked,
                              p->network ? "" : ", no network")) < 0 ||
            (r = strv_extendf(&l->notes, "first (a leftover of an earlier daemon): %s", rm)) < 0 ||
            (r = strv_extendf(&l->notes, "then, inside, the worker applies: no_new_privs, Landlock, seccomp (%zu BPF instructions) over the engine's own profile",
                              l->bpf_len / 8)) < 0)
                return rm ? r : -ENOMEM;
        if (!(l->missing_hint = strdup("the docker backend needs the docker client (apt-get install docker.io, or set sandbox.docker.docker)")))
                return -ENOMEM;
        return 0;
}
