/* SPDX-License-Identifier: MIT */
#include "backend-podman.h"

#include <string.h>

#include "config-internal.h"
#include "path-util.h"
#include "strv.h"

int backend_podman_client(const VsPodmanConfig *c, char ***ret) {
        _cleanup_strv_free_ char **a = NULL;
        int r = strv_extend(&a, c->podman ? c->podman : "podman");
        if (r >= 0 && c->root && (r = strv_extend(&a, "--root")) >= 0)
                r = strv_extend(&a, c->root);
        /* libpod keeps the tmpdir it first ran with in its database and
         * refuses another; the default follows $XDG_RUNTIME_DIR, which
         * differs between a user's login and the daemon's service. */
        if (r >= 0 && c->runroot && (r = strv_extend(&a, "--runroot")) >= 0 && (r = strv_extend(&a, c->runroot)) >= 0 &&
            (r = strv_extend(&a, "--tmpdir")) >= 0)
                r = strv_consume(&a, path_join(c->runroot, "tmp"));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

int backend_podman_run_options(bool rootless, bool network, char ***ret) {
        _cleanup_strv_free_ char **a = calloc(1, sizeof(char *));
        if (!a)
                return -ENOMEM;
        /* The user's own uid is itself in the container: the jail's files
         * in the workspace stay the owner's, not a subordinate id's. */
        int r = rootless ? strv_extend(&a, "--userns=keep-id") : 0;
        /* network = true is the host's network, as the local backend
         * shares it: rootless podman's own (slirp4netns) needs /dev/net/tun,
         * which a host may not give a user, and would put a NAT of its own
         * between the jail and the host's loopback. */
        if (r >= 0 && network)
                r = strv_extend(&a, "--network=host");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

/* ---- [sandbox.podman] ---------------------------------------------------- */

#define CFG(c) ((VsPodmanConfig *)(c)->backend_config)

static int h_image(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->image, err);
}
static int h_podman(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->podman, err);
}
/* A storage path: absolute, as podman would not resolve it against the
 * workspace. */
static int h_dir(const KeyCtx *c, char **ret, VsError **err) {
        int r = config_get_string(c, false, ret, err);
        if (r >= 0 && (*ret)[0] != '/')
                return config_error(err, -EINVAL, c->kv->value->line, c->kv->value->col, "%s.%s must be an absolute path",
                                    c->table, c->key);
        return r;
}
static int h_root(const KeyCtx *c, VsError **err) {
        return h_dir(c, &CFG(c)->root, err);
}
static int h_runroot(const KeyCtx *c, VsError **err) {
        return h_dir(c, &CFG(c)->runroot, err);
}

static const KeyDef podman_keys[] = {
        { "image", TOML_STRING, h_image },
        { "podman", TOML_STRING, h_podman },
        { "root", TOML_STRING, h_root },
        { "runroot", TOML_STRING, h_runroot },
};

static int config_init(void *cfg) {
        VsPodmanConfig *c = cfg;
        return (c->podman = strdup("podman")) ? 0 : -ENOMEM;
}

static void config_done(void *cfg) {
        VsPodmanConfig *c = cfg;
        free(c->image);
        free(c->podman);
        free(c->root);
        free(c->runroot);
}

static int config_check(const void *cfg, unsigned line, unsigned col, VsError **err) {
        const VsPodmanConfig *c = cfg;
        if (!c->image)
                return config_error(err, -EINVAL, line, col,
                                    "sandbox: backend = \"podman\" needs sandbox.podman.image (a local image name, e.g. image = \"debian:12\")");
        return 0;
}

static char *config_describe(const void *cfg) {
        const VsPodmanConfig *c = cfg;
        char *s = NULL;
        return asprintf(&s, "image=%s podman=%s root=%s runroot=%s", c->image, c->podman,
                        c->root ? c->root : "(default)", c->runroot ? c->runroot : "(default)") < 0
                       ? NULL
                       : s;
}

static json_t *config_json(const void *cfg) {
        const VsPodmanConfig *c = cfg;
        return json_pack("{s:s?, s:s?, s:s?, s:s?}", "image", c->image, "podman", c->podman, "root", c->root, "runroot",
                         c->runroot);
}

const VsBackendDef backend_podman_def = {
        .name = "podman",
        .host_files = true,
        .has_proxy = true,
        .config_size = sizeof(VsPodmanConfig),
        .keys = podman_keys,
        .n_keys = ELEMENTSOF(podman_keys),
        .config_init = config_init,
        .config_done = config_done,
        .config_check = config_check,
        .config_describe = config_describe,
        .config_json = config_json,
};
