/* SPDX-License-Identifier: MIT */
/* The podman backend: docker's container launch (launch-docker.h) with
 * podman as the engine; rootless when the daemon is a user. */
#include "launch-docker.h"

#include <string.h>
#include <unistd.h>

#include "backend-podman.h"
#include "strv.h"

static int launch_podman(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        const VsPodmanConfig *c = backend_config(p, &backend_podman_def);
        if (!c)
                return vs_error_set_kind(err, -EINVAL, "internal", "workspace %s does not use the podman backend", p->workspace);
        bool rootless = geteuid() != 0;
        _cleanup_strv_free_ char **client = NULL, **run_options = NULL;
        int r;
        if ((r = backend_podman_client(c, &client)) < 0 || (r = backend_podman_run_options(rootless, p->network, &run_options)) < 0)
                return r;
        VsContainerEngine e = {
                .backend = "podman",
                .client = client,
                .image = c->image,
                /* podman's tmpfs takes no uid=/gid=; U chowns it to --user. */
                .home_owner = "U",
                .run_options = run_options,
                /* Rootless, the engine's limits need a delegated cgroup v2
                 * (on cgroup v1 podman ignores them, with a warning): the
                 * worker's RLIMIT_NPROC stays as the backstop. */
                .engine_limits_pids = !rootless,
                .missing_hint = "the podman backend needs podman (apt-get install podman uidmap, or set sandbox.podman.podman)",
        };
        return launch_container(p, o, l, &e, err);
}

/* podman's start-up errors. */
static const char *diagnose(const char *t) {
        if (strstr(t, "image not known") || strstr(t, "no such image") || strstr(t, "Trying to pull"))
                return "the image named by sandbox.podman.image is not in podman's storage (nothing is pulled: podman load or podman import it first, into the storage sandbox.podman.root names)";
        if (strstr(t, "newuidmap") || strstr(t, "newgidmap") || strstr(t, "not enough IDs available") ||
            strstr(t, "cannot set up namespace using"))
                return "rootless podman needs subordinate ids for the daemon's user: install uidmap and give the user a range in /etc/subuid and /etc/subgid (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 USER), then podman system migrate";
        if (strstr(t, "database configuration mismatch"))
                return "podman's storage was made with other paths: set sandbox.podman.runroot to the one it was made with, or point sandbox.podman.root at a storage of its own";
        if (strstr(t, "error setting rlimit"))
                return "the container runtime could not set the container's rlimits: rootful podman needs CAP_SYS_RESOURCE, which this host's root lacks (a container?); run the daemon as an ordinary user (rootless podman)";
        return NULL;
}

const VsBackendOps backend_podman_ops = {
        .def = &backend_podman_def,
        .launch = launch_podman,
        .diagnose = diagnose,
};
