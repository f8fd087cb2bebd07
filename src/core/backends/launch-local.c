/* SPDX-License-Identifier: MIT */
/* The local backend: bubblewrap on this host, started as pid 1 of a pid
 * namespace of its own; a root-owned workspace's writable paths through
 * idmapped mounts. */
#include "backend-ops.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend-local.h"
#include "chase.h"
#include "idmap.h"
#include "jail-home.h"
#include "jail-plan.h"
#include "path-util.h"
#include "strv.h"

#define MISSING_HINT "the local backend needs bubblewrap (apt-get install bubblewrap)"

/* A writable path outside the workspace, opened by the resolver's rule
 * (no link in the workspace or a writable path followed). */
static int open_listed(const VsPolicy *p, const char *path) {
        _cleanup_strv_free_ char **untrusted = NULL;
        if (strv_extend(&untrusted, p->workspace) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved && !streq(p->rw_paths[i].resolved, path) &&
                    strv_extend(&untrusted, p->rw_paths[i].resolved) < 0)
                        return -ENOMEM;
        ChaseResult cr;
        int r = chase_path(path, untrusted, &cr);
        if (r >= 0)
                r = TAKE_FD(cr.fd);
        chase_result_done(&cr);
        return r;
}

/* A root-owned workspace: each root-owned writable path is shown to the
 * unprivileged jail through an idmapped mount, so it can write there while
 * the files stay root's on disk. The tree is attached over the path in
 * the jail's own mount namespace only (no staging directory any other
 * process could reach). Where the kernel or filesystem cannot, refuse
 * rather than run the jail as root. Each tree's path goes to
 * l->idmap_paths; its idmapped tree to l->idmap_fds when prepare, else
 * -EBADF there (the monitor, which starts the jail, makes it:
 * VsLaunchOptions.idmap_later; launch_idmap_prepare() for a start that
 * does not go through it). */
static int idmap_trees(const VsPolicy *p, VsLaunch *l, bool prepare, VsError **err) {
        int r;
        for (size_t i = 0; i < p->n_rw; i++) {
                struct stat st;
                const char *rw = p->rw_paths[i].resolved;
                if (!rw)
                        continue;
                /* Opened without following a link the jail may have made
                 * since the policy was resolved: below the workspace from
                 * its descriptor, elsewhere by the resolver's rule; the
                 * owner and the idmapped tree come from that descriptor. */
                const char *rel = path_startswith(rw, p->workspace);
                _cleanup_close_ int wfd = open(p->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                _cleanup_close_ int src = wfd < 0 ? -errno : rel ? chase_beneath(wfd, rel, O_PATH | O_DIRECTORY) : open_listed(p, rw);
                if (src < 0)
                        return vs_error_set_kind(err, src, "sandbox_unavailable",
                                                 "rw_paths: %s cannot be opened without following a link the jail could have made (%s); the workspace changed while the jail was prepared: try again",
                                                 rw, strerror(-src));
                if (fstat(src, &st) < 0 || st.st_uid != 0)
                        continue;
                /* Only the workspace's own tree: an idmapped mount writes as
                 * host root, so a root-owned path elsewhere (a listed
                 * /var/spool/...) is refused, never served that way. */
                if (!rel)
                        return vs_error_set_kind(err, -EPERM, "sandbox_unavailable",
                                                 "rw_paths: %s is owned by root and lies outside the workspace %s; a root-owned workspace is served through an idmapped mount of its own tree only, which writes as root: list paths inside the workspace, or chown %s to the user the agent works for",
                                                 rw, p->workspace, rw);
                _cleanup_(vs_error_freep) VsError *ierr = NULL;
                int fd = -EBADF;
                int k = prepare ? idmap_prepare_fd(src, rw, VS_IDMAP_UID, VS_IDMAP_GID, &fd, &ierr) : 0;
                if (k < 0)
                        return vs_error_set_kind(err, k, "sandbox_unavailable",
                                                 "%s is owned by root and the jail never runs as host root; serving it through an idmapped mount failed (%s): chown the workspace to the user the agent works for (chown -R USER %s), or run the daemon as that user",
                                                 rw, vs_error_message(ierr), p->workspace);
                int *nf = realloc(l->idmap_fds, (l->n_idmap + 1) * sizeof *nf);
                if (!nf) {
                        safe_close(fd);
                        return -ENOMEM;
                }
                l->idmap_fds = nf;
                l->idmap_fds[l->n_idmap++] = fd;
                if ((r = strv_extend(&l->idmap_paths, rw)) < 0)
                        return r;
        }
        return 0;
}

int launch_idmap_prepare(VsLaunch *l, VsError **err) {
        for (size_t i = 0; i < l->n_idmap; i++) {
                if (l->idmap_fds[i] >= 0)
                        continue;
                /* Its path as recorded (checked root-owned and inside the
                 * workspace then), opened again from / without following a
                 * link. */
                _cleanup_close_ int src = chase_open_dir(l->idmap_paths[i]);
                if (src < 0)
                        return vs_error_set_kind(err, src, "sandbox_unavailable",
                                                 "rw_paths: %s cannot be opened without following a link (%s); try again",
                                                 l->idmap_paths[i], strerror(-src));
                int r = idmap_prepare_fd(src, l->idmap_paths[i], VS_IDMAP_UID, VS_IDMAP_GID, &l->idmap_fds[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The local backend: bubblewrap on this host. */
static int launch_local(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        int r;

        if (l->idmapped && (r = idmap_trees(p, l, !o->idmap_later, err)) < 0)
                return r;

        VsLocalEnv env = {
                .bwrap = o->bwrap ? o->bwrap : "bwrap",
                .worker_path = o->worker_path,
                .uid = l->uid,
                .gid = l->gid,
                .plan = l->plan,
                .proxy_socket = l->proxy_socket ? o->proxy_socket : NULL,
                .home_dir = l->home_dir,
                .git_config = l->git_config,
                .git_config_dest = VS_JAIL_GITCONFIG,
                .ca_bundle = l->proxy_socket ? o->ca_bundle : NULL,
                /* Bound over only when there: bwrap cannot make a file in the read-only /etc. */
                .ca_over_system = o->ca_bundle && access(VS_SYSTEM_CA_FILE, F_OK) == 0,
        };
        _cleanup_free_ char *bwrap = path_find_executable_os(env.bwrap, getenv("PATH"));
        if (!bwrap)
                return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable", "%s not found: %s", env.bwrap, MISSING_HINT);
        env.bwrap = bwrap;
        _cleanup_strv_free_ char **bargv = NULL;
        r = backend_local_probe(&env, err);
        if (r >= 0)
                r = backend_local_argv(p, &env, &bargv, err);
        backend_local_env_done(&env);
        if (r < 0)
                return r;
        /* bwrap's --die-with-parent reaches the inner bwrap (pid 1 of the
         * jail) only once its setup is done: a starter that dies, or ends
         * the jail, while the mounts are still being made would leave it
         * running on (measured: ~10 s with hundreds of masks). So the outer
         * bwrap is pid 1 of a pid namespace of its own: when it ends, the
         * kernel ends the inner one with it (worker_spawn). */
        l->argv = TAKE_PTR(bargv);
        l->own_pid_ns = true;
        if (!(l->missing_hint = strdup(MISSING_HINT)))
                return -ENOMEM;
        return 0;
}

/* bubblewrap's own start-up errors. */
static const char *diagnose(const char *t) {
        if (strstr(t, "setting up uid map") || strstr(t, "No permissions to create new namespace") ||
            strstr(t, "Creating new namespace failed") || strstr(t, "unshare failed"))
                return "user namespaces are refused on this host; enable them: sysctl -w kernel.unprivileged_userns_clone=1 (Debian), "
                       "sysctl -w user.max_user_namespaces=15000, and on Ubuntu >= 23.10 either sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
                       "or an AppArmor profile that allows userns for bwrap";
        if (strstr(t, "Can't mount proc") || strstr(t, "Can't mount devpts"))
                return "the kernel refused to mount /proc or /dev/pts in the jail (running inside a restricted container?); run the daemon on the host or in a VM";
        return NULL;
}

const VsBackendOps backend_local_ops = {
        .def = &backend_local_def,
        .launch = launch_local,
        .diagnose = diagnose,
};
