/* SPDX-License-Identifier: MIT */
/* The ssh backend's definition and [sandbox.ssh] keys (backend.h), apart
 * from backend-ssh.c, which the remote launcher links. */
#include "backend-ssh.h"

#include <string.h>

#include "config-internal.h"

#define CFG(c) ((VsSshConfig *)(c)->backend_config)

static int h_host(const KeyCtx *c, VsError **err) {
        int r = config_get_string(c, false, &CFG(c)->host, err);
        if (r >= 0 && CFG(c)->host[0] == '-')
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.host must not start with '-'");
        return r;
}
static int h_user(const KeyCtx *c, VsError **err) {
        int r = config_get_string(c, false, &CFG(c)->user, err);
        if (r >= 0 && (CFG(c)->user[0] == '-' || strpbrk(CFG(c)->user, "@ \t")))
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.user must be a plain user name");
        return r;
}
static int h_port(const KeyCtx *c, VsError **err) {
        uint64_t p = 0;
        int r = config_get_uint(c, 1, 65535, &p, err);
        if (r >= 0)
                CFG(c)->port = (unsigned)p;
        return r;
}
static int h_identity(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->identity_file, err);
}
static int h_known_hosts(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->known_hosts, err);
}
static int h_remote_root(const KeyCtx *c, VsError **err) {
        int r = config_get_string(c, false, &CFG(c)->remote_root, err);
        if (r >= 0 && CFG(c)->remote_root[0] != '/')
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.remote_root must be an absolute path on the remote host");
        return r;
}
static int h_worker_path(const KeyCtx *c, VsError **err) {
        int r = config_get_string(c, false, &CFG(c)->worker_path, err);
        if (r >= 0 && CFG(c)->worker_path[0] != '/')
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col,
                                    "sandbox.ssh.worker_path must be an absolute path on the remote host");
        return r;
}

static const KeyDef ssh_keys[] = {
        { "host", TOML_STRING, h_host },
        { "user", TOML_STRING, h_user },
        { "port", TOML_INTEGER, h_port },
        { "identity_file", TOML_STRING, h_identity },
        { "known_hosts", TOML_STRING, h_known_hosts },
        { "remote_root", TOML_STRING, h_remote_root },
        { "worker_path", TOML_STRING, h_worker_path },
};

static int config_init(void *cfg) {
        VsSshConfig *c = cfg;
        c->port = 22;
        return (c->worker_path = strdup("~/.cache/vectora-sandbox/vectora-worker")) ? 0 : -ENOMEM;
}

static void config_done(void *cfg) {
        VsSshConfig *c = cfg;
        free(c->host);
        free(c->user);
        free(c->identity_file);
        free(c->known_hosts);
        free(c->remote_root);
        free(c->worker_path);
}

static int config_check(const void *cfg, unsigned line, unsigned col, VsError **err) {
        const VsSshConfig *c = cfg;
        if (!c->host)
                return config_error(err, -EINVAL, line, col, "sandbox: backend = \"ssh\" needs sandbox.ssh.host");
        return 0;
}

static char *config_describe(const void *cfg) {
        const VsSshConfig *c = cfg;
        char *s = NULL;
        return asprintf(&s, "host=%s user=%s port=%u identity_file=%s known_hosts=%s remote_root=%s worker_path=%s",
                        c->host, c->user ? c->user : "(default)", c->port,
                        c->identity_file ? c->identity_file : "(default)", c->known_hosts ? c->known_hosts : "(default)",
                        c->remote_root ? c->remote_root : "(same paths)", c->worker_path) < 0
                       ? NULL
                       : s;
}

static json_t *config_json(const void *cfg) {
        const VsSshConfig *c = cfg;
        return json_pack("{s:s?, s:s?, s:i, s:s?, s:s?, s:s?, s:s?}", "host", c->host, "user", c->user, "port",
                         (int)c->port, "identity_file", c->identity_file, "known_hosts", c->known_hosts, "remote_root",
                         c->remote_root, "worker_path", c->worker_path);
}

const VsBackendDef backend_ssh_def = {
        .name = "ssh",
        .remote_plan = true,
        .config_size = sizeof(VsSshConfig),
        .keys = ssh_keys,
        .n_keys = ELEMENTSOF(ssh_keys),
        .config_init = config_init,
        .config_done = config_done,
        .config_check = config_check,
        .config_describe = config_describe,
        .config_json = config_json,
};
