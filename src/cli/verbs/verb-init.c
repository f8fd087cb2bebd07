/* SPDX-License-Identifier: MIT */
/* init: a commented vectora.toml with safe defaults, checked after writing
 * by the same loader the daemon uses. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "fd-util.h"
#include "path-util.h"

static const char template[] =
        "# vectora.toml: the sandbox policy of this workspace. Every key is described in\n"
        "# vectora-sandbox(1) and docs/config.md; `vectora-sandbox check` shows the effective\n"
        "# policy, or the located error (a broken file refuses every tool call: it never\n"
        "# runs unsandboxed).\n"
        "\n"
        "[sandbox]\n"
        "# false: the workspace runs unsandboxed, as if this table were absent.\n"
        "enabled = true\n"
        "# local: bubblewrap on this machine (Linux); docker, ssh, modal: docs/backends.md.\n"
        "backend = \"local\"\n"
        "# Writable inside the jail: relative to this directory, absolute, or ~/...\n"
        "rw_paths = [\".\"]\n"
        "# Readable but not writable inside the jail.\n"
        "ro_paths = []\n"
        "# Never readable inside the jail: gitignore-style globs, relative to this\n"
        "# directory; a pattern without '/' matches at any depth.\n"
        "mask = [\".env\", \".env.*\", \"**/*.pem\", \"**/*.key\", \"**/.ssh/**\", \"**/.aws/**\", \"**/.netrc\"]\n"
        "# GPU device nodes stay outside the jail.\n"
        "no_gpu = true\n"
        "# The jail's $HOME (caches, git config --global) is kept for this workspace,\n"
        "# outside it, from one jail to the next; false: an empty home each time.\n"
        "# persistent_home = true\n"
        "# true: refuse on any ambiguity (a listed path missing, a symlink leading\n"
        "# elsewhere, a degraded layer); network off.\n"
        "lockdown = false\n"
        "# No network in the jail. true opens it; a list opens only those hosts:\n"
        "# network = [\"pypi.org\", \"*.npmjs.org\", \"github.com:443\"]\n"
        "network = false\n"
        "# Read-only inside the jail besides vectora.toml and .git's control files\n"
        "# (files the host runs later); a list replaces the default, which is:\n"
        "# protect = [\".envrc\", \".mcp.json\", \"mise.toml\", \".mise.toml\", \".gitmodules\", \".ripgreprc\",\n"
        "#            \"**/.vscode\", \"**/.claude\", \"**/.cursor\", \"**/.codex\", \"**/.gemini\",\n"
        "#            \"**/.devcontainer\", \"**/.idea\"]\n"
        "# A missing one gets a placeholder the tool takes for absent, so the jail\n"
        "# cannot create it (docs/config.md lists them).\n"
        "# true: where there is no repository, the host's git makes one before the jail\n"
        "# starts (its config and hooks read-only there). Default: a read-only empty .git.\n"
        "# git_init = false\n"
        "# Seconds without calls before the jail ends (the next call starts a new one).\n"
        "idle_timeout = 600\n"
        "\n"
        "[sandbox.limits]\n"
        "timeout = 120         # seconds per command; its whole process group is killed\n"
        "max_output = 1048576  # bytes kept per output stream (head and tail)\n"
        "pids = 512            # processes in the jail\n"
        "memory = \"2G\"         # memory of the jail\n";

int verb_init(const CliArgs *a) {
        const char *ws = a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".";
        _cleanup_free_ char *written = cli_workspace_abs(a), *root = NULL, *dir = NULL;
        if (!written)
                return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_WORKSPACE_NOT_FOUND), "init: workspace %s: %m", ws);
        /* Written where the path leads, once config_locate() has checked
         * that no agent's link inside a workspace leads it elsewhere. */
        _cleanup_(vs_error_freep) VsError *lerr = NULL;
        if (config_locate(written, &root, &dir, &lerr) < 0)
                return cli_fail_code(a, EXIT_REFUSED, api_error_name(API_ERROR_WORKSPACE_NOT_FOUND), "init: %s",
                                     vs_error_message(lerr));
        _cleanup_free_ char *path = path_join(dir, VS_CONFIG_FILE), *tmp = NULL;
        if (!path || asprintf(&tmp, "%s.init-XXXXXX", path) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        if (!a->val[OPT_FORCE] && access(path, F_OK) == 0)
                return cli_fail_code(a, EXIT_TOOL, api_error_name(API_ERROR_EXISTS),
                                     "init: %s exists; it is kept (vectora-sandbox check shows it; --force replaces it)", path);
        /* A temp file renamed over: never a half-written policy. */
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return cli_fail_code(a, EXIT_TOOL, api_error_name(API_ERROR_IO), "init: creating %s: %m", tmp);
        int r = write_all(fd, template, sizeof template - 1);
        if (r >= 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
                r = -errno;
        if (r >= 0 && (a->val[OPT_FORCE] ? rename(tmp, path) : link(tmp, path)) < 0)
                r = -errno;
        unlink(tmp);
        if (r == -EEXIST)
                return cli_fail_code(a, EXIT_TOOL, api_error_name(API_ERROR_EXISTS), "init: %s appeared meanwhile; it is kept", path);
        if (r < 0)
                return cli_fail_code(a, EXIT_TOOL, api_error_name(API_ERROR_IO), "init: writing %s: %s", path, strerror(-r));
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (config_load(dir, &p, &err) < 0)
                return cli_fail_code(a, EXIT_CONFIG, api_error_name(API_ERROR_CONFIG_INVALID), "init: wrote %s, but it is refused: %s", path,
                                     vs_error_message(err));
        if (a->json) {
                json_t *o = json_pack("{s:b,s:s,s:b}", "ok", 1, "path", path, "sandboxed", p->sandboxed);
                if (o)
                        cli_print_json(o);
                json_decref(o);
        } else
                printf("wrote %s: sandboxed, %s backend, network off; vectora-sandbox check -w %s shows the effective policy\n",
                       path, vs_backend_name(p->backend), dir);
        return 0;
}
