/* SPDX-License-Identifier: MIT */
#include "launch.h"
#include "backend-ops.h"

#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "chase.h"
#include "git-scan.h"
#include "host-aside.h"
#include "idmap.h"
#include "jail-home.h"
#include "jail-plan.h"
#include "landlock.h"
#include "path-util.h"
#include "seccomp.h"
#include "strv.h"
#include "user-util.h"

void launch_free(VsLaunch *l) {
        if (!l)
                return;
        if (l->git_base) {
                git_repos_done(l->git_base);
                free(l->git_base);
        }
        strv_free(l->argv);
        free(l->workspace);
        strv_free(l->rw_paths);
        strv_free(l->ro_paths);
        strv_free(l->mask);
        strv_free(l->protected_paths);
        strv_free(l->protect);
        strv_free(l->verify_empty);
        strv_free(l->verify_readonly);
        strv_free(l->sealed_dirs);
        put_asides_free(l->put_aside);
        strv_free(l->env);
        free(l->bpf);
        strv_free(l->landlock_rw);
        strv_free(l->degraded);
        launch_release_staging(l);
        strv_free(l->pre_argv);
        free(l->missing_hint);
        strv_free(l->notes);
        free(l->home_dir);
        free(l->git_config);
        jail_plan_free(l->plan);
        free(l);
}

char *const *launch_host_paths(const VsLaunch *l) {
        return l && l->plan && l->backend && l->backend->host_files ? l->protected_paths : NULL;
}

void launch_release_staging(VsLaunch *l) {
        if (!l)
                return;
        jail_own_sources_remove(l->mask_sources);
        free(l->mask_sources);
        l->mask_sources = NULL;
        for (size_t i = 0; i < l->n_idmap; i++)
                safe_close(l->idmap_fds[i]);
        free(l->idmap_fds);
        strv_free(l->idmap_paths);
        l->idmap_fds = NULL;
        l->idmap_paths = NULL;
        l->n_idmap = 0;
}

void launch_trim(VsLaunch *l) {
        if (!l)
                return;
        launch_release_staging(l);
        strv_free(l->argv);
        strv_free(l->rw_paths);
        strv_free(l->ro_paths);
        strv_free(l->mask);
        strv_free(l->protected_paths);
        strv_free(l->protect);
        strv_free(l->verify_empty);
        strv_free(l->verify_readonly);
        strv_free(l->sealed_dirs);
        strv_free(l->env);
        strv_free(l->landlock_rw);
        strv_free(l->pre_argv);
        strv_free(l->notes);
        free(l->bpf);
        jail_plan_free(l->plan);
        l->plan = NULL;
        l->argv = l->rw_paths = l->ro_paths = l->mask = l->protected_paths = l->protect = l->env = l->landlock_rw = NULL;
        l->verify_empty = l->verify_readonly = l->sealed_dirs = NULL;
        l->pre_argv = l->notes = NULL;
        l->bpf = NULL;
        l->bpf_len = 0;
}

/* One compiled program per option set, for the life of the process: the
 * filter depends only on the options (network, lockdown, the jail's ids),
 * and compiling costs ~2.5 ms (1 ms without the chown rules; measured on
 * x86_64). The recompile for a worker's own ids (ssh, modal) runs on the
 * daemon's loop, once per id pair. A daemon sees few option sets (its own ids or
 * the workspace owners', an ssh remote's); past the table's size the
 * oldest is replaced. Launches are prepared on the daemon's thread pool,
 * several at once: the lock makes the first compile one, not one per
 * thread racing to store. */
static pthread_mutex_t bpf_cache_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct BpfCache {
        VsSeccompOptions o;
        void *bpf;
        size_t len;
} BpfCache;
static BpfCache bpf_cache[16];
static size_t bpf_cache_n, bpf_cache_next;

static bool options_equal(const VsSeccompOptions *a, const VsSeccompOptions *b) {
        return a->network == b->network && a->lockdown == b->lockdown && a->setid_only == b->setid_only &&
               a->own_ids == b->own_ids &&
               (!a->own_ids || (a->uid == b->uid && a->gid == b->gid));
}

static int seccomp_cached_locked(const VsSeccompOptions *o, void **ret, size_t *ret_len, VsError **err) {
        BpfCache *c = NULL;
        for (size_t i = 0; i < bpf_cache_n && !c; i++)
                if (options_equal(&bpf_cache[i].o, o))
                        c = &bpf_cache[i];
        if (!c) {
                void *bpf = NULL;
                size_t len = 0;
                VsError *e = NULL;
                int r = seccomp_compile(o, &bpf, &len, &e);
                if (r < 0) {
                        /* A missing library may be installed later: only success is cached. */
                        vs_error_set_kind(err, r, "sandbox_unavailable", "%s", e ? vs_error_message(e) : "seccomp failed");
                        vs_error_free(e);
                        return r;
                }
                c = &bpf_cache[bpf_cache_n < ELEMENTSOF(bpf_cache) ? bpf_cache_n++ : bpf_cache_next++ % ELEMENTSOF(bpf_cache)];
                free(c->bpf);
                *c = (BpfCache) { .o = *o, .bpf = bpf, .len = len };
        }
        void *copy = malloc(c->len);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, c->bpf, c->len);
        *ret = copy;
        *ret_len = c->len;
        return 0;
}

static int seccomp_cached(const VsSeccompOptions *o, void **ret, size_t *ret_len, VsError **err) {
        pthread_mutex_lock(&bpf_cache_lock);
        int r = seccomp_cached_locked(o, ret, ret_len, err);
        pthread_mutex_unlock(&bpf_cache_lock);
        return r;
}

int launch_seccomp_for_ids(VsLaunch *l, int64_t uid, int64_t gid, VsError **err) {
        if (!l->bpf)
                return 0; /* degraded, known and reported before the start */
        VsSeccompOptions o = l->seccomp;
        o.own_ids = uid >= 0 && gid >= 0 && uid < UINT32_MAX && gid < UINT32_MAX;
        o.uid = o.own_ids ? (uint32_t)uid : 0;
        o.gid = o.own_ids ? (uint32_t)gid : 0;
        if (options_equal(&o, &l->seccomp))
                return 0;
        void *bpf = NULL;
        size_t len = 0;
        int r = seccomp_cached(&o, &bpf, &len, err);
        if (r < 0)
                return r;
        free(l->bpf);
        l->bpf = bpf;
        l->bpf_len = len;
        l->seccomp = o;
        return 0;
}

/* uid's user name, or "sandbox"; getpwuid_r: the daemon prepares launches
 * on its thread pool while its loop may look users up too. */
static char *user_name(uid_t uid) {
        struct passwd pwbuf, *pw = NULL;
        char buf[4096];
        if (getpwuid_r(uid, &pwbuf, buf, sizeof buf, &pw) != 0)
                pw = NULL;
        return strdup(pw && pw->pw_name ? pw->pw_name : "sandbox");
}

/* The jail never runs as host uid 0: a root caller runs it as the
 * workspace's owner; a root-owned workspace as VS_IDMAP_UID through
 * idmapped mounts (prepared by the local backend, launch-local.c). */
static int pick_identity(const VsPolicy *p, VsLaunch *l, char **ret_user, VsError **err) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (geteuid() == 0) {
                struct stat st;
                if (stat(p->workspace, &st) < 0)
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "workspace %s: %m", p->workspace);
                if (st.st_uid == 0) {
                        /* Served through idmapped mounts as an unprivileged
                         * uid (checked when the mounts are staged). */
                        l->idmapped = true;
                        l->switch_user = true;
                        l->uid = VS_IDMAP_UID;
                        l->gid = VS_IDMAP_GID;
                        char *nuser = user_name(VS_IDMAP_UID);
                        if (!nuser)
                                return -ENOMEM;
                        *ret_user = nuser;
                        return 0;
                }
                uid = st.st_uid;
                /* The directory's group only where the owner is a member:
                 * a directory chowned to its owner alone keeps root's. */
                gid = user_jail_gid(uid, st.st_gid);
                l->switch_user = true;
        }
        char *user = user_name(uid);
        if (!user)
                return -ENOMEM;
        l->uid = uid;
        l->gid = gid;
        *ret_user = user;
        return 0;
}


static int resolved_list(const VsPath *l, size_t n, char ***ret) {
        _cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (l[i].resolved) {
                        int r = strv_extend(&v, l[i].resolved);
                        if (r < 0)
                                return r;
                }
        *ret = TAKE_PTR(v);
        return 0;
}

static int launch_direct(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l) {
        /* Unsandboxed: the worker runs on the host as the caller, with the
         * caller's environment, exactly like tools without this layer. */
        int r = strv_extend(&l->argv, o->worker_path);
        if (r < 0)
                return r;
        extern char **environ;
        l->env = strv_copy(environ);
        if (!l->env)
                return -ENOMEM;
        l->workspace = strdup(p->workspace);
        if (!l->workspace)
                return -ENOMEM;
        l->timeout_ms = 0;
        l->max_output = 0;
        return 0;
}

/* dest, when it is a directory below a writable root reached there
 * without a symlink, added to *list. */
static int sealed_dir_add(const VsPolicy *p, char ***list, const char *dest) {
        for (size_t i = 0; i < p->n_rw; i++) {
                const char *root = p->rw_paths[i].resolved;
                const char *rel = root ? path_startswith(dest, root) : NULL;
                if (!rel)
                        continue;
                _cleanup_close_ int rfd = chase_open_dir(root);
                _cleanup_close_ int fd = rfd < 0 ? rfd : chase_beneath(rfd, rel, O_PATH);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
                        return 0;
                return strv_contains(*list, dest) ? 0 : strv_extend(list, dest);
        }
        return 0;
}

/* The jail plan (l->plan) from the policy and this host's facts: the
 * mask walk, the protected paths as they exist, the empty mount sources in
 * o->runtime_dir. Made here for every backend with host_files, before its
 * launch; the ssh remote launcher builds the same plan on its host. */
static int launch_plan(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        _cleanup_free_ char *empty_file = NULL, *empty_dir = NULL;
        int r = jail_own_sources(o->runtime_dir, &l->mask_sources, &empty_file, &empty_dir, err);
        if (r < 0)
                return r;
        /* What the jails see at another path than the host's, where no
         * mask of the plan's host paths reaches: the kept homes (this
         * jail's own at VS_JAIL_HOME, another workspace's of the same
         * owner: an attack review linked .env there), the worker, the
         * runtime directory (the masks' empty sources, a user daemon's CA
         * bundles), the CA bundle and the identity file. A masked link
         * into one refuses the start (jail-facts.c). */
        _cleanup_free_ char *homes = o->state_dir ? path_join(o->state_dir, "homes") : NULL;
        const char *seen[] = { homes, l->home_dir, o->worker_path, o->runtime_dir, o->runtime_root, o->ca_bundle, l->git_config };
        char *also_seen[ELEMENTSOF(seen) + 1] = { NULL };
        size_t n_seen = 0;
        for (size_t i = 0; i < ELEMENTSOF(seen); i++)
                if (seen[i] && !(also_seen[n_seen++] = realpath(seen[i], NULL)) && !(also_seen[n_seen - 1] = strdup(seen[i]))) {
                        for (size_t k = 0; k < n_seen; k++)
                                free(also_seen[k]);
                        return -ENOMEM;
                }
        const VsLinkAside aside = { .since = o->links_since, .seen_by_others = o->seen_by_others };
        r = jail_plan_make(p, l->protected_paths, also_seen, empty_file, empty_dir, l->env, o->walk_cache, o->maker,
                           &aside, &l->plan, &l->git_base, &l->put_aside, err);
        for (size_t k = 0; k < n_seen; k++)
                free(also_seen[k]);
        /* A refused start reports what it put aside too (put_aside_out). */
        if (r < 0 && o->put_aside_out)
                *o->put_aside_out = TAKE_PTR(l->put_aside);
        if (r < 0)
                return r;
        /* The file tools refuse what the plan found too (a .git file's
         * target, submodules, worktrees). */
        char **prot = strv_copy(l->plan->protected_paths);
        if (!prot)
                return -ENOMEM;
        strv_free(l->protected_paths);
        l->protected_paths = prot;
        l->n_masked = l->plan->n_masked;
        /* What the worker checks before ready (worker/verify.c). */
        for (size_t i = 0; i < l->plan->n_mounts; i++) {
                const VsJailMount *m = &l->plan->mounts[i];
                if (m->kind == VS_MOUNT_MASK && (r = strv_extend(&l->verify_empty, m->dest)) < 0)
                        return r;
                if (m->kind == VS_MOUNT_PROTECT && (r = strv_extend(&l->verify_readonly, m->dest)) < 0)
                        return r;
        }
        /* A mount's path reached through a link (lN/.vscode with lN -> d,
         * the protect walk's second name for d/.vscode) is left out: the
         * link is the jail's to swap for a directory of its own. */
        if (!(l->sealed_dirs = calloc(1, sizeof(char *))))
                return -ENOMEM;
        for (size_t i = 0; i < l->plan->n_mounts; i++) {
                const VsJailMount *m = &l->plan->mounts[i];
                if ((m->kind == VS_MOUNT_MASK && m->dir && !m->protects) || m->kind == VS_MOUNT_PROTECT)
                        if ((r = sealed_dir_add(p, &l->sealed_dirs, m->dest)) < 0)
                                return r;
        }
        return 0;
}

static bool has_proxy(const VsBackendDef *b) {
        return b->has_proxy;
}

/* The network allowlist: the worker relays 127.0.0.1:VS_JAIL_PROXY_PORT
 * to the daemon's proxy, and the usual proxy variables point there (both
 * cases: curl reads http_proxy only in lower case, others the upper). */
static int launch_network_allowlist(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        if (!o->proxy_socket && o->allowlist_offline)
                return 0; /* no relay, no proxy variables: the jail has no network */
        if (!o->proxy_socket)
                return vs_error_set_kind(err, -EOPNOTSUPP, "sandbox_unavailable", LAUNCH_ALLOWLIST_NEEDS_DAEMON);
        if (!p->backend->has_proxy) {
                _cleanup_free_ char *relaying = NULL;
                int r = backend_names_with(has_proxy, &relaying);
                return r < 0 ? r
                             : vs_error_set_kind(err, -EOPNOTSUPP, "sandbox_unavailable",
                                                 "network = [...] is not supported on the %s backend yet (only %s relay the proxy into the jail); use network = false or true",
                                                 vs_backend_name(p->backend), relaying);
        }
        static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                             "http_proxy", "https_proxy", "all_proxy" };
        int r;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if ((r = strv_extendf(&l->env, "%s=http://127.0.0.1:%d", names[i], VS_JAIL_PROXY_PORT)) < 0)
                        return r;
        /* Node's fetch ignores the variables above unless asked (Node 24
         * on); without them it resolves names itself and fails with
         * EAI_AGAIN even for an allowed host. */
        if ((r = strv_extend(&l->env, "NO_PROXY=localhost,127.0.0.1")) < 0 ||
            (r = strv_extend(&l->env, "no_proxy=localhost,127.0.0.1")) < 0 ||
            (r = strv_extend(&l->env, "NODE_USE_ENV_PROXY=1")) < 0)
                return r;
        /* Placeholders, never values: a secret stays with the proxy. */
        for (char *const *e = o->secret_env; e && *e; e++)
                if ((r = strv_extend(&l->env, *e)) < 0)
                        return r;
        /* The bundle with the workspace's CA, wherever a TLS client looks
         * (OpenSSL, Node, Python's requests and pip, git). */
        static const char *const ca_names[] = { "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
                                                "GIT_SSL_CAINFO", "CURL_CA_BUNDLE" };
        for (size_t i = 0; o->ca_bundle && i < ELEMENTSOF(ca_names); i++)
                if ((r = strv_extendf(&l->env, "%s=%s", ca_names[i], VS_JAIL_CA_BUNDLE)) < 0)
                        return r;
        if (p->n_secrets && !o->secret_env)
                return vs_error_set_kind(err, -EOPNOTSUPP, "sandbox_unavailable",
                                         "sandbox.secrets: the placeholders come from the daemon's proxy; run through vectora-sandboxd");
        l->proxy_socket = VS_JAIL_PROXY_SOCKET;
        return 0;
}

/* The local jail's kept home and the host user's git identity
 * (jail-home.h). What cannot be made leaves the jail as before (a tmpfs
 * home) with a note saying why. */
static int launch_home(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l) {
        _cleanup_free_ char *note = NULL;
        int r = jail_home_prepare(o->state_dir, p->workspace, l->uid, l->gid, p->persistent_home, o->maker, &l->home_dir,
                                  &l->git_config, &note);
        if (r < 0)
                return r;
        if (note && (r = strv_extend(&l->notes, note)) < 0)
                return r;
        /* The lowest of git's levels: the jail's own --global still wins. */
        if (l->git_config && (r = strv_extend(&l->env, "GIT_CONFIG_SYSTEM=" VS_JAIL_GITCONFIG)) < 0)
                return r;
        return 0;
}

int launch_prepare(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch **ret, VsError **err) {
        _cleanup_(launch_freep) VsLaunch *l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        int r;
        l->sandboxed = p->sandboxed;
        l->backend_name = p->sandboxed ? vs_backend_name(p->backend) : "direct";
        l->backend = p->sandboxed ? p->backend : NULL;
        if (!p->sandboxed) {
                r = launch_direct(p, o, l);
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(l);
                return 0;
        }
        _cleanup_free_ char *user = NULL;
        r = pick_identity(p, l, &user, err);
        if (r < 0)
                return r;

        if (!(l->workspace = strdup(p->workspace)) || !(l->mask = strv_copy(p->mask)) ||
            !(l->protect = p->protect ? strv_copy(p->protect) : calloc(1, sizeof(char *))))
                return -ENOMEM;
        if ((r = resolved_list(p->rw_paths, p->n_rw, &l->rw_paths)) < 0 ||
            (r = resolved_list(p->ro_paths, p->n_ro, &l->ro_paths)) < 0 ||
            (r = config_protected_paths(p, &l->protected_paths)) < 0 || (r = backend_local_jail_env(user, &l->env)) < 0)
                return r;
        l->timeout_ms = p->limits.timeout_s * 1000;
        l->max_output = p->limits.max_output;
        l->pids = p->limits.pids;
        l->memory = p->limits.memory;
        l->require_seccomp = l->require_landlock = p->lockdown;
        if (p->net_allowlist && (r = launch_network_allowlist(p, o, l, err)) < 0)
                return r;
        if (p->backend == &backend_local_def && (r = launch_home(p, o, l)) < 0)
                return r;

        /* Seccomp: compiled here, loaded by the worker. Missing libseccomp
         * degrades (rule 4), or refuses under lockdown. */
        _cleanup_(vs_error_freep) VsError *serr = NULL;
        /* For the ids the jail is started with; a worker whose own differ
         * (an ssh remote's user, a modal sandbox's) gets a program for its
         * own once it says hello (launch_seccomp_for_ids). */
        l->seccomp = (VsSeccompOptions) { .network = p->network, .lockdown = p->lockdown, .own_ids = true,
                                          .uid = l->uid, .gid = l->gid };
        r = seccomp_cached(&l->seccomp, &l->bpf, &l->bpf_len, &serr);
        if (r < 0) {
                if (p->lockdown)
                        return vs_error_set_kind(err, r, "sandbox_unavailable",
                                                 "lockdown refuses to run without seccomp: %s", vs_error_message(serr));
                if ((r = strv_extendf(&l->degraded, "seccomp: %s", vs_error_message(serr))) < 0)
                        return r;
        }

        /* Landlock: writable are the rw_paths, /tmp, /dev/shm and the private home. */
        if ((l->landlock_rw = strv_copy(l->rw_paths)) == NULL || (r = strv_extend(&l->landlock_rw, "/tmp")) < 0 ||
            (r = strv_extend(&l->landlock_rw, "/dev/shm")) < 0 ||
            (r = strv_extend(&l->landlock_rw, VS_JAIL_HOME)) < 0)
                return l->landlock_rw ? r : -ENOMEM;
        /* VECTORA_NO_LANDLOCK=1 acts as a kernel without Landlock (and no
         * rules reach the worker), so the degraded path can be tested. */
        const char *no_landlock = secure_getenv("VECTORA_NO_LANDLOCK");
        if (no_landlock && streq(no_landlock, "1")) {
                if (p->lockdown)
                        return vs_error_set_kind(err, -EOPNOTSUPP, "sandbox_unavailable",
                                                 "lockdown refuses to run without Landlock: Landlock is disabled by VECTORA_NO_LANDLOCK=1");
                if ((r = strv_extend(&l->degraded, "landlock: disabled by VECTORA_NO_LANDLOCK=1")) < 0)
                        return r;
                strv_free(l->landlock_rw);
                l->landlock_rw = NULL;
        } else if (landlock_abi_version() <= 0) {
                if (p->lockdown)
                        return vs_error_set_kind(err, -EOPNOTSUPP, "sandbox_unavailable",
                                                 "lockdown refuses to run without Landlock: this kernel has no Landlock (boot with lsm=...,landlock or use a kernel >= 5.13 with CONFIG_SECURITY_LANDLOCK)");
                if ((r = strv_extend(&l->degraded, "landlock: the kernel has no Landlock")) < 0)
                        return r;
        }

        const VsBackendOps *ops = backend_ops(p->backend);
        if (!ops)
                return vs_error_set_kind(err, -EINVAL, "internal", "unknown backend");
        if (p->backend->host_files && (r = launch_plan(p, o, l, err)) < 0)
                return r;
        r = ops->launch(p, o, l, err);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(l);
        return 0;
}
