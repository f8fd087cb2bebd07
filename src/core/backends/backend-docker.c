/* SPDX-License-Identifier: MIT */
#include "backend-docker.h"

#include <string.h>

#include "config-internal.h"
#include "jail-plan.h"
#include "path-util.h"
#include "sha256.h"
#include "strbuf.h"
#include "strv.h"

int backend_docker_name(const char *workspace, char **ret) {
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(workspace, strlen(workspace), hex);
        hex[16] = 0;
        char *n = NULL;
        if (asprintf(&n, VS_DOCKER_NAME_PREFIX "%s", hex) < 0)
                return -ENOMEM;
        *ret = n;
        return 0;
}

/* docker reads --mount as one CSV record: a field with ',' or '"' is
 * wrapped in double quotes, with inner quotes doubled. */
static int csv_field(StrBuf *b, const char *key, const char *value) {
        bool quote = strpbrk(value, ",\"") != NULL;
        int r = 0;
        if (quote)
                r = strbuf_appendc(b, '"');
        if (r >= 0)
                r = strbuf_appendf(b, "%s=", key);
        for (const char *c = value; r >= 0 && *c; c++)
                r = *c == '"' && quote ? strbuf_appends(b, "\"\"") : strbuf_appendc(b, *c);
        if (r >= 0 && quote)
                r = strbuf_appendc(b, '"');
        return r;
}

char *backend_docker_mount(const char *source, const char *target, bool readonly) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        if (strbuf_appends(&b, "type=bind,") < 0 || csv_field(&b, "source", source) < 0 || strbuf_appendc(&b, ',') < 0 ||
            csv_field(&b, "target", target) < 0 || (readonly && strbuf_appends(&b, ",readonly") < 0))
                return NULL;
        return strbuf_steal(&b);
}

static int add(char ***a, const char *s) {
        return strv_extend(a, s);
}

static int add2(char ***a, const char *x, const char *y) {
        int r = strv_extend(a, x);
        return r < 0 ? r : strv_extend(a, y);
}

static int add_mount(char ***a, const char *source, const char *target, bool readonly, VsError **err) {
        /* A newline would end the CSV record early. */
        if (strchr(source, '\n') || strchr(target, '\n'))
                return vs_error_set_kind(err, -EINVAL, "sandbox_unavailable",
                                         "path %s holds a newline, which docker's --mount cannot carry; rename it or use backend = \"local\"",
                                         strchr(source, '\n') ? source : target);
        char *m = backend_docker_mount(source, target, readonly);
        if (!m)
                return -ENOMEM;
        int r = add(a, "--mount");
        return r < 0 ? (free(m), r) : strv_consume(a, m);
}

int backend_docker_client(const VsPolicy *p, char ***ret) {
        const VsDockerConfig *d = backend_config(p, &backend_docker_def);
        _cleanup_strv_free_ char **a = NULL;
        int r = add(&a, d && d->docker ? d->docker : "docker");
        if (r >= 0 && d && d->host)
                r = add2(&a, "--host", d->host);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

static int add_strv(char ***a, char *const *l) {
        int r = 0;
        for (char *const *s = l; r >= 0 && s && *s; s++)
                r = add(a, *s);
        return r;
}

int backend_docker_argv(const VsPolicy *p, const VsDockerEnv *env, char ***ret_argv, VsError **err) {
        _cleanup_strv_free_ char **a = NULL;
        int r;

        if (!p->sandboxed)
                return vs_error_set_kind(err, -EINVAL, "internal", "workspace %s is not sandboxed", p->workspace);
        if (env->uid == 0 || env->gid == 0)
                return vs_error_set_kind(err, -EPERM, "sandbox_unavailable",
                                         "refusing to run a container as uid/gid 0; run the jail as an unprivileged user");
        const VsDockerConfig *d = backend_config(p, &backend_docker_def);
        const char *image = env->image ? env->image : d ? d->image : NULL;
        if (!image || image[0] == '-')
                return vs_error_set_kind(err, -EINVAL, "config_invalid", "sandbox.%s.image must name a local image",
                                         vs_backend_name(p->backend));
        _cleanup_strv_free_ char **own_client = NULL;
        if (!env->client && (r = backend_docker_client(p, &own_client)) < 0)
                return r;

        char user[64];
        snprintf(user, sizeof user, "%u:%u", (unsigned)env->uid, (unsigned)env->gid);

        /* -i with --rm: the worker speaks on the attached stdin/stdout, and
         * the engine removes the container when it ends (stdin closes when
         * the client goes, so the worker sees end of input and exits). No
         * registry is ever asked: a missing image is an error, not a pull. */
        if ((r = add_strv(&a, env->client ? env->client : own_client)) < 0 || (r = add(&a, "run")) < 0 || (r = add(&a, "-i")) < 0 ||
            (r = add(&a, "--rm")) < 0 || (r = add2(&a, "--name", env->name)) < 0 ||
            (r = add2(&a, "--pull", "never")) < 0 || (r = add2(&a, "--log-driver", "none")) < 0 ||
            (r = add_strv(&a, env->run_options)) < 0)
                return r;
        /* The engine's own layers: no capabilities, no privilege gain,
         * an unprivileged uid, a read-only root with private writable
         * scratch space; the worker adds seccomp and Landlock inside. */
        if ((r = add2(&a, "--cap-drop", "ALL")) < 0 || (r = add2(&a, "--security-opt", "no-new-privileges")) < 0 ||
            (r = add2(&a, "--user", user)) < 0 || (r = add(&a, "--read-only")) < 0 ||
            (r = add2(&a, "--tmpfs", "/tmp:rw,nosuid,nodev,mode=1777")) < 0 ||
            (r = strv_extend(&a, "--tmpfs")) < 0 ||
            (r = env->home_owner ? strv_extendf(&a, "%s:rw,nosuid,nodev,mode=0700,%s", VS_JAIL_HOME, env->home_owner)
                                 : strv_extendf(&a, "%s:rw,nosuid,nodev,mode=0700,uid=%u,gid=%u", VS_JAIL_HOME,
                                                (unsigned)env->uid, (unsigned)env->gid)) < 0 ||
            (r = add2(&a, "--hostname", "vectora-sandbox")) < 0)
                return r;
        /* Network off: the container's own namespace with only its loopback.
         * The engine turns IPv6 off in it; loopback on ::1 is turned back on
         * so that a test suite serving on ::1 works as on the local backend. */
        if (!p->network && ((r = add2(&a, "--network", "none")) < 0 ||
                            (r = add2(&a, "--sysctl", "net.ipv6.conf.lo.disable_ipv6=0")) < 0))
                return r;
        /* Limits on the container's cgroup: the engine counts the
         * container's processes, not the uid's on the whole host. */
        if (p->limits.pids && ((r = add(&a, "--pids-limit")) < 0 || (r = strv_extendf(&a, "%llu", (unsigned long long)p->limits.pids)) < 0))
                return r;
        if (p->limits.memory &&
            ((r = add(&a, "--memory")) < 0 || (r = strv_extendf(&a, "%llu", (unsigned long long)p->limits.memory)) < 0 ||
             (r = add(&a, "--memory-swap")) < 0 || (r = strv_extendf(&a, "%llu", (unsigned long long)p->limits.memory)) < 0))
                return r;

        /* The jail plan's mounts, in its order: the same listed paths,
         * pins, protected paths and masks as every other backend. */
        for (size_t i = 0; i < env->plan->n_mounts; i++) {
                const VsJailMount *m = &env->plan->mounts[i];
                bool writable = m->kind == VS_MOUNT_RW || m->kind == VS_MOUNT_PIN;
                if ((r = add_mount(&a, m->src, m->dest, !writable, err)) < 0)
                        return r;
        }
        if ((r = add_mount(&a, env->worker_path, VS_JAIL_WORKER_PATH, true, err)) < 0)
                return r;
        if (env->proxy_socket && (r = add_mount(&a, env->proxy_socket, VS_JAIL_PROXY_SOCKET, true, err)) < 0)
                return r;
        /* The workspace's CA among the host's (secrets over HTTPS), where
         * SSL_CERT_FILE and the like name it; the image's own system file
         * is left as it is. */
        if (env->ca_bundle && (r = add_mount(&a, env->ca_bundle, VS_JAIL_CA_BUNDLE, true, err)) < 0)
                return r;

        /* GPU only when asked: the device nodes themselves. */
        if (!p->no_gpu)
                for (char **g = env->gpu_nodes; g && *g; g++)
                        if ((r = add2(&a, "--device", *g)) < 0)
                                return r;

        /* The worker is the entrypoint whatever the image says; pid 1 in
         * the container, it reaps orphans. */
        if ((r = add2(&a, "--workdir", p->workspace)) < 0 || (r = add2(&a, "--entrypoint", VS_JAIL_WORKER_PATH)) < 0 ||
            (r = add(&a, image)) < 0)
                return r;

        *ret_argv = TAKE_PTR(a);
        return 0;
}

int backend_docker_rm_all_argv(char *const *client, const char *base, char ***ret_argv) {
        _cleanup_strv_free_ char **a = NULL;
        int r;
        if ((r = add_strv(&a, client)) < 0 || (r = add(&a, "rm")) < 0 || (r = add(&a, "-f")) < 0 || (r = add(&a, base)) < 0 ||
            (r = strv_extendf(&a, "%s-a", base)) < 0 || (r = strv_extendf(&a, "%s-b", base)) < 0)
                return r;
        *ret_argv = TAKE_PTR(a);
        return 0;
}

int backend_docker_rm_argv(char *const *client, const char *name, char ***ret_argv) {
        _cleanup_strv_free_ char **a = NULL;
        int r;
        if ((r = add_strv(&a, client)) < 0 || (r = add(&a, "rm")) < 0 || (r = add(&a, "-f")) < 0 || (r = add(&a, name)) < 0)
                return r;
        *ret_argv = TAKE_PTR(a);
        return 0;
}

/* ---- [sandbox.docker] ---------------------------------------------------- */

static int h_image(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &((VsDockerConfig *)c->backend_config)->image, err);
}
static int h_docker(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &((VsDockerConfig *)c->backend_config)->docker, err);
}
static int h_host(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &((VsDockerConfig *)c->backend_config)->host, err);
}

static const KeyDef docker_keys[] = {
        { "image", TOML_STRING, h_image },
        { "docker", TOML_STRING, h_docker },
        { "host", TOML_STRING, h_host },
};

static int config_init(void *cfg) {
        VsDockerConfig *d = cfg;
        return (d->docker = strdup("docker")) ? 0 : -ENOMEM;
}

static void config_done(void *cfg) {
        VsDockerConfig *d = cfg;
        free(d->image);
        free(d->docker);
        free(d->host);
}

static int config_check(const void *cfg, unsigned line, unsigned col, VsError **err) {
        const VsDockerConfig *d = cfg;
        if (!d->image)
                return config_error(err, -EINVAL, line, col,
                                    "sandbox: backend = \"docker\" needs sandbox.docker.image (a local image name, e.g. image = \"debian:12\")");
        return 0;
}

static char *config_describe(const void *cfg) {
        const VsDockerConfig *d = cfg;
        char *s = NULL;
        return asprintf(&s, "image=%s docker=%s host=%s", d->image, d->docker, d->host ? d->host : "(default)") < 0 ? NULL : s;
}

static json_t *config_json(const void *cfg) {
        const VsDockerConfig *d = cfg;
        return json_pack("{s:s?, s:s?, s:s?}", "image", d->image, "docker", d->docker, "host", d->host);
}

const VsBackendDef backend_docker_def = {
        .name = "docker",
        .host_files = true,
        .has_proxy = true,
        .config_size = sizeof(VsDockerConfig),
        .keys = docker_keys,
        .n_keys = ELEMENTSOF(docker_keys),
        .config_init = config_init,
        .config_done = config_done,
        .config_check = config_check,
        .config_describe = config_describe,
        .config_json = config_json,
};
