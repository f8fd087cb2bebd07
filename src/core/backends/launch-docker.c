/* SPDX-License-Identifier: MIT */
/* The docker backend: one long-lived `docker run -i` container per
 * workspace, the static worker bind-mounted in as its entrypoint. The
 * container launch itself (launch_container) serves any engine with
 * docker's command line. */
#include "launch-docker.h"
#include "paths.h"

#include <string.h>
#include <sys/stat.h>

#include "strv.h"

int launch_container(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, const VsContainerEngine *e,
                     VsError **err) {
        int r;
        _cleanup_free_ char *name = NULL, *base = NULL;
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
                .client = e->client,
                .image = e->image,
                .home_owner = e->home_owner,
                .run_options = e->run_options,
                .worker_path = worker,
                .name = name,
                .uid = l->uid,
                .gid = l->gid,
                .plan = l->plan,
                .gpu_nodes = host.gpu_nodes,
                .proxy_socket = l->proxy_socket ? o->proxy_socket : NULL,
                .ca_bundle = l->proxy_socket ? o->ca_bundle : NULL,
        };
        if (r >= 0)
                r = backend_docker_argv(p, &env, &l->argv, err);
        if (r >= 0)
                /* First start: whatever an earlier daemon left, under any
                 * name; later starts: only a stale container of this name. */
                r = o->instance == 0 ? backend_docker_rm_all_argv(e->client, base, &l->pre_argv)
                                     : backend_docker_rm_argv(e->client, name, &l->pre_argv);
        backend_local_env_done(&host);
        if (r < 0)
                return r;

        /* The engine's client runs as the daemon (it needs the engine's
         * socket, or is the user's own rootless engine); the container runs
         * as the workspace owner (--user). */
        l->switch_user = false;
        /* RLIMIT_NPROC would count the owner's processes on the whole host
         * (no user namespace): the engine's --pids-limit counts the
         * container's alone, where the engine can limit. */
        if (e->engine_limits_pids)
                l->pids = 0;
        _cleanup_free_ char *rm = argv_quote(l->pre_argv);
        if (!rm ||
            (r = strv_extendf(&l->notes, "%s backend: container %s from image %s, --user %u:%u, %zu masked path(s)%s",
                              e->backend, name, e->image, (unsigned)l->uid, (unsigned)l->gid, l->n_masked,
                              p->network ? "" : ", no network")) < 0 ||
            (r = strv_extendf(&l->notes, "first (a leftover of an earlier daemon): %s", rm)) < 0 ||
            (r = strv_extendf(&l->notes, "then, inside, the worker applies: no_new_privs, Landlock, seccomp (%zu BPF instructions) over the engine's own profile",
                              l->bpf_len / 8)) < 0)
                return rm ? r : -ENOMEM;
        if (!(l->missing_hint = strdup(e->missing_hint)))
                return -ENOMEM;
        return 0;
}

static int launch_docker(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        const VsDockerConfig *d = backend_config(p, &backend_docker_def);
        if (!d)
                return vs_error_set_kind(err, -EINVAL, "internal", "workspace %s does not use the docker backend", p->workspace);
        _cleanup_strv_free_ char **client = NULL;
        int r = backend_docker_client(p, &client);
        if (r < 0)
                return r;
        VsContainerEngine e = {
                .backend = "docker",
                .client = client,
                .image = d->image,
                .engine_limits_pids = true,
                .missing_hint = "the docker backend needs the docker client (apt-get install docker.io, or set sandbox.docker.docker)",
        };
        return launch_container(p, o, l, &e, err);
}

/* The engine's and its client's start-up errors. */
static const char *diagnose(const char *t) {
        if (strstr(t, "Cannot connect to the Docker daemon") || strstr(t, "Is the docker daemon running"))
                return "the Docker engine is not running or not reachable at sandbox.docker.host (start it: systemctl start docker, or fix DOCKER_HOST)";
        if (strstr(t, "permission denied while trying to connect to the Docker daemon socket") ||
            (strstr(t, "docker.sock") && strstr(t, "permission denied")))
                return "permission denied on the Docker engine's socket: the daemon's user must be allowed to use it (add it to the docker group, or run the daemon as root)";
        if (strstr(t, "No such image") || strstr(t, "Unable to find image") || strstr(t, "pull access denied") ||
            strstr(t, "image not known"))
                return "the image named by sandbox.docker.image is not on the engine (nothing is pulled: docker pull or docker load it first)";
        return NULL;
}

const VsBackendOps backend_docker_ops = {
        .def = &backend_docker_def,
        .launch = launch_docker,
        .diagnose = diagnose,
};
