/* SPDX-License-Identifier: MIT */
/* The ssh backend: the worker on a remote host, started through the local
 * launcher (vectora-worker --ssh-launch), which deploys the worker there
 * when its sha256 differs. The workspace's paths map to remote_root. */
#include "backend-ops.h"
#include "paths.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "backend-ssh.h"
#include "fd-util.h"
#include "sha256.h"
#include "strv.h"

/* The worker's hash, recomputed only when the file changes; starts are
 * prepared on several threads at once: taken under its lock. */
static pthread_mutex_t hash_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        char hex[SHA256_HEX_LEN + 1];
} hash_cache;

static int worker_sha256(const char *path, char hex[SHA256_HEX_LEN + 1], VsError **err) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot read the worker %s: %m", path);
        pthread_mutex_lock(&hash_lock);
        bool kept = hash_cache.hex[0] && hash_cache.dev == st.st_dev && hash_cache.ino == st.st_ino &&
                    hash_cache.size == st.st_size && hash_cache.mtime.tv_sec == st.st_mtim.tv_sec &&
                    hash_cache.mtime.tv_nsec == st.st_mtim.tv_nsec;
        if (kept)
                memcpy(hex, hash_cache.hex, sizeof hash_cache.hex);
        pthread_mutex_unlock(&hash_lock);
        if (kept)
                return 0;
        Sha256 s;
        sha256_begin(&s);
        char buf[65536];
        for (;;) {
                ssize_t k = read(fd, buf, sizeof buf);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "reading the worker %s: %m", path);
                if (k == 0)
                        break;
                sha256_feed(&s, buf, (size_t)k);
        }
        sha256_end_hex(&s, hex);
        pthread_mutex_lock(&hash_lock);
        hash_cache.dev = st.st_dev;
        hash_cache.ino = st.st_ino;
        hash_cache.size = st.st_size;
        hash_cache.mtime = st.st_mtim;
        memcpy(hash_cache.hex, hex, sizeof hash_cache.hex);
        pthread_mutex_unlock(&hash_lock);
        return 0;
}

static int remap(const VsPolicy *p, const VsSshConfig *c, char ***l) {
        char **m = NULL;
        int r = backend_ssh_map_strv(p->workspace, c->remote_root, *l, &m);
        if (r < 0)
                return r;
        strv_free(*l);
        *l = m;
        return 0;
}

static int launch_ssh(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
        const VsSshConfig *c = backend_config(p, &backend_ssh_def);
        if (!c)
                return vs_error_set_kind(err, -EINVAL, "internal", "workspace %s does not use the ssh backend", p->workspace);
        char hex[SHA256_HEX_LEN + 1];
        /* What is deployed must be static (a sanitizer build's is not). */
        _cleanup_free_ char *worker = NULL;
        int r = vs_static_worker_path(o->worker_path, &worker);
        if (r < 0)
                return r;
        r = worker_sha256(worker, hex, err);
        if (r < 0)
                return r;

        /* The init message speaks of the remote's paths. */
        char *ws = backend_ssh_map_path(p->workspace, c->remote_root, p->workspace);
        if (!ws)
                return -ENOMEM;
        free(l->workspace);
        l->workspace = ws;
        if ((r = remap(p, c, &l->rw_paths)) < 0 || (r = remap(p, c, &l->ro_paths)) < 0 ||
            (r = remap(p, c, &l->protected_paths)) < 0 || (r = remap(p, c, &l->landlock_rw)) < 0)
                return r;

        VsRemoteJail j = {
                .workspace = l->workspace,
                .rw = l->rw_paths,
                .ro = l->ro_paths,
                .mask = l->mask,
                .protected_paths = l->protected_paths,
                .protect = l->protect,
                .git_init = p->git_init,
                .env = l->env,
                .network = p->network,
                .no_gpu = p->no_gpu,
                .lockdown = p->lockdown,
        };
        r = backend_ssh_argv(c, worker, hex, &j, &l->argv, err);
        if (r < 0)
                return r;
        if ((r = strv_extendf(&l->notes, "ssh backend: %s%s%s port %u, host key checked against %s", c->user ? c->user : "",
                              c->user ? "@" : "", c->host, c->port ? c->port : 22,
                              c->known_hosts ? c->known_hosts : "~/.ssh/known_hosts")) < 0 ||
            (r = strv_extendf(&l->notes, "the worker at %s on the remote, uploaded when its sha256 is not %s", c->worker_path, hex)) < 0 ||
            (r = strv_extendf(&l->notes, "workspace on the remote: %s; under bubblewrap there when the remote has it, else the worker alone (degraded; refused under lockdown)",
                              l->workspace)) < 0 ||
            (r = strv_extendf(&l->notes, "then, inside, the worker applies: no_new_privs, Landlock, seccomp (%zu BPF instructions)",
                              l->bpf_len / 8)) < 0)
                return r;
        /* argv[0] is the local launcher (the worker binary itself). */
        if (!(l->missing_hint = strdup("the ssh backend starts through the static worker; build or install vectora-worker")))
                return -ENOMEM;
        return 0;
}

/* ssh's own start-up errors (the remote's bubblewrap says what the local
 * one would: backend_diagnose() asks the others next). */
static const char *diagnose(const char *t) {
        if (strstr(t, "Host key verification failed") || strstr(t, "No ED25519 host key is known") ||
            strstr(t, "No RSA host key is known") || strstr(t, "No ECDSA host key is known") ||
            strstr(t, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
                return "the remote host's key is not in sandbox.ssh.known_hosts (or changed); unknown keys are never accepted: verify it and add it (ssh-keyscan -p PORT HOST >> KNOWN_HOSTS, after checking the fingerprint)";
        if (strstr(t, "Permission denied (publickey"))
                return "the remote host refused the key: check sandbox.ssh.user and sandbox.ssh.identity_file (BatchMode: no passwords)";
        if (strstr(t, "Connection refused") || strstr(t, "Connection timed out") || strstr(t, "No route to host") ||
            strstr(t, "Could not resolve hostname") || strstr(t, "Connection closed by") || strstr(t, "Network is unreachable"))
                return "the remote host named by sandbox.ssh.host is unreachable (check host, port and that sshd runs there)";
        return NULL;
}

const VsBackendOps backend_ssh_ops = {
        .def = &backend_ssh_def,
        .launch = launch_ssh,
        .diagnose = diagnose,
};
