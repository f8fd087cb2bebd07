/* SPDX-License-Identifier: MIT */
#include "backend-ssh.h"
#include "json-util.h"

#include <string.h>

#include "path-util.h"
#include "strv.h"

char *backend_ssh_map_path(const char *workspace, const char *remote_root, const char *path) {
        if (!remote_root)
                return strdup(path);
        const char *rest = path_startswith(path, workspace);
        if (!rest)
                return strdup(path);
        if (!*rest)
                return strdup(remote_root);
        return path_join(remote_root, rest);
}

int backend_ssh_map_strv(const char *workspace, const char *remote_root, char *const *in, char ***ret) {
        _cleanup_strv_free_ char **out = calloc(1, sizeof(char *));
        if (!out)
                return -ENOMEM;
        for (char *const *s = in; s && *s; s++) {
                char *m = backend_ssh_map_path(workspace, remote_root, *s);
                int r = m ? strv_consume(&out, m) : -ENOMEM;
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* ---- the remote launcher's policy ------------------------------------- */

int backend_ssh_jail_encode(const VsRemoteJail *j, char **ret_hex) {
        json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:b}", "workspace", j->workspace, "rw",
                              json_strv(j->rw), "ro", json_strv(j->ro), "mask", json_strv(j->mask),
                              "protected", json_strv(j->protected_paths), "protect", json_strv(j->protect),
                              "env", json_strv(j->env), "network",
                              j->network, "no_gpu", j->no_gpu, "lockdown", j->lockdown, "git_init", j->git_init);
        if (!o)
                return -ENOMEM;
        char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(o);
        if (!text)
                return -ENOMEM;
        size_t n = strlen(text);
        char *hex = malloc(2 * n + 1);
        if (!hex) {
                free(text);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                snprintf(hex + 2 * i, 3, "%02x", (unsigned char)text[i]);
        hex[2 * n] = 0;
        free(text);
        *ret_hex = hex;
        return 0;
}

static const JsonField jail_fields[] = {
        { "workspace", JSON_FIELD_STRING, offsetof(VsRemoteJail, workspace), JSON_FIELD_REQUIRED },
        { "rw", JSON_FIELD_STRV, offsetof(VsRemoteJail, rw), JSON_FIELD_REQUIRED },
        { "ro", JSON_FIELD_STRV, offsetof(VsRemoteJail, ro), JSON_FIELD_REQUIRED },
        { "mask", JSON_FIELD_STRV, offsetof(VsRemoteJail, mask), JSON_FIELD_REQUIRED },
        { "protected", JSON_FIELD_STRV, offsetof(VsRemoteJail, protected_paths), JSON_FIELD_REQUIRED },
        { "protect", JSON_FIELD_STRV, offsetof(VsRemoteJail, protect), JSON_FIELD_REQUIRED },
        { "env", JSON_FIELD_STRV, offsetof(VsRemoteJail, env), JSON_FIELD_REQUIRED },
        { "network", JSON_FIELD_BOOL, offsetof(VsRemoteJail, network), JSON_FIELD_REQUIRED },
        { "no_gpu", JSON_FIELD_BOOL, offsetof(VsRemoteJail, no_gpu), JSON_FIELD_REQUIRED },
        { "lockdown", JSON_FIELD_BOOL, offsetof(VsRemoteJail, lockdown), JSON_FIELD_REQUIRED },
        { "git_init", JSON_FIELD_BOOL, offsetof(VsRemoteJail, git_init), JSON_FIELD_REQUIRED },
        {},
};

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int backend_ssh_jail_decode(const char *hex, VsRemoteJail *ret, json_t **ret_obj, VsError **err) {
        size_t n = strlen(hex);
        if (n % 2 || n > 2u * 1024 * 1024)
                return vs_error_set(err, -EINVAL, "the jail policy is not valid hex");
        _cleanup_free_ char *text = malloc(n / 2 + 1);
        if (!text)
                return -ENOMEM;
        for (size_t i = 0; i < n / 2; i++) {
                int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return vs_error_set(err, -EINVAL, "the jail policy is not valid hex");
                text[i] = (char)(hi << 4 | lo);
        }
        text[n / 2] = 0;
        json_error_t je;
        json_t *o = json_loadb(text, n / 2, JSON_REJECT_DUPLICATES, &je);
        if (!o || !json_is_object(o)) {
                json_decref(o);
                return vs_error_set(err, -EINVAL, "the jail policy is not a JSON object");
        }
        VsRemoteJail j = { 0 };
        int r = json_dispatch(o, jail_fields, &j, err);
        if (r < 0) {
                json_decref(o);
                return r;
        }
        if (j.workspace[0] != '/') {
                json_dispatch_done(jail_fields, &j);
                json_decref(o);
                return vs_error_set(err, -EINVAL, "the jail workspace must be absolute");
        }
        *ret = j;
        *ret_obj = o;
        return 0;
}

void backend_ssh_jail_done(VsRemoteJail *j) {
        json_dispatch_done(jail_fields, j);
}

/* ---- remote commands --------------------------------------------------- */

/* The remote login shell may be anything: the commands are one single-quoted
 * word for /bin/sh, so what goes inside must not need quoting. */
static int remote_worker_ref(const char *worker_path, char **ret, VsError **err) {
        const char *rest = worker_path;
        bool home = false;
        if (strncmp(worker_path, "~/", 2) == 0) {
                rest = worker_path + 2;
                home = true;
        } else if (worker_path[0] != '/')
                return vs_error_set_kind(err, -EINVAL, "config_invalid",
                                         "sandbox.ssh.worker_path must be absolute or ~/...: %s", worker_path);
        if (!*rest || rest[strspn(rest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/+-")] ||
            strstr(rest, ".."))
                return vs_error_set_kind(err, -EINVAL, "config_invalid",
                                         "sandbox.ssh.worker_path may only hold letters, digits and ._/+- (got %s)",
                                         worker_path);
        char *s = NULL;
        if (asprintf(&s, "%s%s", home ? "$HOME/" : "", rest) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static bool is_hex64(const char *s) {
        if (strlen(s) != 64)
                return false;
        for (; *s; s++)
                if (unhex(*s) < 0)
                        return false;
        return true;
}

int backend_ssh_run_command(const char *worker_path, const char *sha256, const char *jail_hex, char **ret, VsError **err) {
        _cleanup_free_ char *w = NULL;
        int r = remote_worker_ref(worker_path, &w, err);
        if (r < 0)
                return r;
        if (!is_hex64(sha256) || jail_hex[strspn(jail_hex, "0123456789abcdef")])
                return vs_error_set_kind(err, -EINVAL, "internal", "bad hash or policy for the remote command");
        char *s = NULL;
        if (asprintf(&s,
                     "/bin/sh -c 'w=\"%s\"; h=$(sha256sum \"$w\" 2>/dev/null) && [ \"${h%%%% *}\" = %s ] || exit %d; "
                     "exec \"$w\" --launch-jail %s'",
                     w, sha256, VS_SSH_EXIT_DEPLOY, jail_hex) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int backend_ssh_upload_command(const char *worker_path, const char *sha256, char **ret, VsError **err) {
        _cleanup_free_ char *w = NULL;
        int r = remote_worker_ref(worker_path, &w, err);
        if (r < 0)
                return r;
        if (!is_hex64(sha256))
                return vs_error_set_kind(err, -EINVAL, "internal", "bad hash for the upload command");
        /* Written beside the target, checked, then renamed over it: a
         * concurrent start never runs a half-written worker. */
        char *s = NULL;
        if (asprintf(&s,
                     "/bin/sh -c 'set -e; umask 022; w=\"%s\"; mkdir -p \"${w%%/*}\"; t=\"$w.$$.tmp\"; cat > \"$t\"; "
                     "h=$(sha256sum \"$t\"); if [ \"${h%%%% *}\" != %s ]; then rm -f \"$t\"; "
                     "echo \"vectora-worker: the upload to $w arrived corrupted\" >&2; exit 1; fi; "
                     "chmod 0755 \"$t\"; mv -f \"$t\" \"$w\"'",
                     w, sha256) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int backend_ssh_ssh_argv(const VsSshConfig *c, char ***ret) {
        _cleanup_strv_free_ char **a = NULL;
        int r;
        /* No TTY, never a prompt, never a new or changed host key accepted;
         * a dead link is noticed within 15 s; nothing forwarded; no
         * connection sharing the user's config might set up. */
        static const char *const fixed[] = {
                "ssh", "-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ServerAliveInterval=5",
                "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=10", "-o", "ForwardAgent=no", "-o",
                "ForwardX11=no", "-o", "ClearAllForwardings=yes", "-o", "PermitLocalCommand=no", "-o",
                "ControlMaster=no", "-o", "ControlPath=none", "-o", "LogLevel=ERROR",
        };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if ((r = strv_extend(&a, fixed[i])) < 0)
                        return r;
        if (c->known_hosts &&
            ((r = strv_extend(&a, "-o")) < 0 || (r = strv_extendf(&a, "UserKnownHostsFile=%s", c->known_hosts)) < 0 ||
             (r = strv_extend(&a, "-o")) < 0 || (r = strv_extend(&a, "GlobalKnownHostsFile=/dev/null")) < 0))
                return r;
        if ((r = strv_extend(&a, "-p")) < 0 || (r = strv_extendf(&a, "%u", c->port ? c->port : 22)) < 0)
                return r;
        if (c->identity_file &&
            ((r = strv_extend(&a, "-i")) < 0 || (r = strv_extend(&a, c->identity_file)) < 0 ||
             (r = strv_extend(&a, "-o")) < 0 || (r = strv_extend(&a, "IdentitiesOnly=yes")) < 0))
                return r;
        if (c->user && ((r = strv_extend(&a, "-l")) < 0 || (r = strv_extend(&a, c->user)) < 0))
                return r;
        if ((r = strv_extend(&a, "--")) < 0 || (r = strv_extend(&a, c->host)) < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

int backend_ssh_argv(const VsSshConfig *c, const char *local_worker, const char *sha256, const VsRemoteJail *j,
                     char ***ret_argv, VsError **err) {
        if (!c->host || c->host[0] == '-')
                return vs_error_set_kind(err, -EINVAL, "config_invalid", "sandbox.ssh.host must name a host");
        _cleanup_free_ char *hex = NULL, *run = NULL, *upload = NULL;
        int r = backend_ssh_jail_encode(j, &hex);
        if (r < 0)
                return r;
        if ((r = backend_ssh_run_command(c->worker_path, sha256, hex, &run, err)) < 0 ||
            (r = backend_ssh_upload_command(c->worker_path, sha256, &upload, err)) < 0)
                return r;
        _cleanup_strv_free_ char **ssh = NULL, **a = NULL;
        if ((r = backend_ssh_ssh_argv(c, &ssh)) < 0)
                return r;
        if ((r = strv_extend(&a, local_worker)) < 0 || (r = strv_extend(&a, "--ssh-launch")) < 0 ||
            (r = strv_extend(&a, local_worker)) < 0 || (r = strv_extend(&a, upload)) < 0 || (r = strv_extend(&a, "--")) < 0)
                return r;
        for (char **s = ssh; *s; s++)
                if ((r = strv_extend(&a, *s)) < 0)
                        return r;
        if ((r = strv_extend(&a, run)) < 0)
                return r;
        *ret_argv = TAKE_PTR(a);
        return 0;
}
