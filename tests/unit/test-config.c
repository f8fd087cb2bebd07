/* SPDX-License-Identifier: MIT */
/* Config rules 1, 2 and 5 of DESIGN.md, each with a failing example and the
 * exact located message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "backend-docker.h"
#include "backend-modal.h"
#include "backend-ssh.h"
#include "config.h"
#include "forbidden.h"
#include "path-util.h"
#include "strv.h"

static const VsConfigEnv test_env = { .workspace = "/ws", .home = "/home/u" };

static VsPolicy *parse_ok(const char *text) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        int r = config_parse(text, strlen(text), &test_env, &p, &err);
        if (r < 0)
                fail_msg("unexpected error: %s", vs_error_message(err));
        assert_non_null(p);
        return p;
}

static void expect_error(const char *text, const char *message) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        int r = config_parse(text, strlen(text), &test_env, &p, &err);
        assert_true(r < 0);
        assert_null(p);
        assert_non_null(err);
        assert_string_equal(vs_error_kind(err), "config_invalid");
        assert_string_equal(vs_error_message(err), message);
        vs_error_free(err);
}

static void expect_error_prefix(const char *text, const char *prefix) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        int r = config_parse(text, strlen(text), &test_env, &p, &err);
        assert_true(r < 0);
        assert_null(p);
        if (strncmp(vs_error_message(err), prefix, strlen(prefix)) != 0)
                fail_msg("message '%s' does not start with '%s'", vs_error_message(err), prefix);
        vs_error_free(err);
}

/* Rule 1 */
static void test_no_sandbox_table(void **state) {
        VsPolicy *p = parse_ok("[other]\nx = 1\n");
        assert_false(p->sandboxed);
        assert_string_equal(p->unsandboxed_reason, "vectora.toml has no [sandbox] table");
        policy_free(p);
}

static void test_enabled_false(void **state) {
        VsPolicy *p = parse_ok("[sandbox]\nenabled = false\nmask = [\"*.pem\"]\n");
        assert_false(p->sandboxed);
        assert_string_equal(p->unsandboxed_reason, "[sandbox] has enabled = false");
        policy_free(p);
}

static void test_defaults(void **state) {
        VsPolicy *p = parse_ok("[sandbox]\n");
        assert_true(p->sandboxed);
        assert_string_equal(vs_backend_name(p->backend), "local");
        assert_int_equal(p->n_rw, 1);
        assert_string_equal(p->rw_paths[0].written, ".");
        assert_int_equal(p->n_ro, 0);
        assert_int_equal(strv_length(p->mask), 0);
        assert_true(p->no_gpu);
        assert_false(p->lockdown);
        assert_true(p->network);
        assert_int_equal(p->idle_timeout_s, 600);
        assert_int_equal(p->limits.timeout_s, 120);
        assert_int_equal(p->limits.max_output, 1048576);
        assert_int_equal(p->limits.pids, 512);
        assert_int_equal(p->limits.background_timeout_s, 0); /* none */
        assert_int_equal(p->limits.memory, 2ull << 30);
        assert_string_equal(p->workspace, "/ws");
        assert_string_equal(p->config_path, "/ws/vectora.toml");
        policy_free(p);
}

static void test_full(void **state) {
        VsPolicy *p = parse_ok("[sandbox]\n"
                               "enabled = true\n"
                               "backend = \"ssh\"\n"
                               "rw_paths = [\".\", \"~/cache\", \"/srv/data\"]\n"
                               "ro_paths = [\"../shared-lib\"]\n"
                               "mask = [\".env\", \"**/*.pem\", \"**/.ssh/**\", \"**/.aws/**\"]\n"
                               "no_gpu = false\n"
                               "network = false\n"
                               "idle_timeout = 30\n"
                               "[sandbox.limits]\n"
                               "timeout = 5\nmax_output = 4096\npids = 64\nmemory = \"512M\"\nbackground_timeout = 3600\n"
                               "[sandbox.ssh]\nhost = \"build1\"\nuser = \"agent\"\nport = 2222\nidentity_file = \"~/.ssh/id\"\n"
                               "known_hosts = \"/etc/kh\"\nremote_root = \"/work\"\nworker_path = \"/opt/w\"\n");
        assert_string_equal(vs_backend_name(p->backend), "ssh");
        const VsSshConfig *ssh = p->backend_config;
        assert_int_equal(p->n_rw, 3);
        assert_string_equal(p->rw_paths[1].written, "~/cache");
        assert_int_equal(p->rw_paths[1].line, 4);
        assert_int_equal(p->n_ro, 1);
        assert_int_equal(strv_length(p->mask), 4);
        assert_string_equal(p->mask[1], "**/*.pem");
        assert_false(p->no_gpu);
        assert_false(p->network);
        assert_int_equal(p->idle_timeout_s, 30);
        assert_int_equal(p->limits.timeout_s, 5);
        assert_int_equal(p->limits.max_output, 4096);
        assert_int_equal(p->limits.pids, 64);
        assert_int_equal(p->limits.memory, 512ull << 20);
        assert_int_equal(p->limits.background_timeout_s, 3600);
        assert_string_equal(ssh->host, "build1");
        assert_int_equal(ssh->port, 2222);
        assert_string_equal(ssh->remote_root, "/work");
        policy_free(p);
        /* Each backend's table with its own backend. */
        p = parse_ok("[sandbox]\nbackend = \"docker\"\n"
                     "[sandbox.docker]\nimage = \"debian:12\"\ndocker = \"/usr/bin/docker\"\nhost = \"unix:///d.sock\"\n");
        const VsDockerConfig *docker = backend_config(p, &backend_docker_def);
        assert_string_equal(docker->image, "debian:12");
        assert_string_equal(docker->host, "unix:///d.sock");
        policy_free(p);
        p = parse_ok("[sandbox]\nbackend = \"modal\"\n"
                     "[sandbox.modal]\napp = \"a\"\nimage = \"python:3.12\"\ntimeout = 600\nregion = \"us-east\"\n"
                     "cpu = 2\nmemory = 4096\nsync = \"volume\"\nvolume = \"vol1\"\n");
        const VsModalConfig *modal = backend_config(p, &backend_modal_def);
        assert_string_equal(modal->sync, "volume");
        assert_true(modal->cpu == 2.0);
        assert_int_equal(modal->memory_mib, 4096);
        policy_free(p);
}

/* A table for another backend than the chosen one is refused, located at
 * the table, rather than silently ignored. */
static void test_other_backend_table(void **state) {
        expect_error("[sandbox]\nbackend = \"local\"\n[sandbox.docker]\nimage = \"debian:12\"\n",
                     "vectora.toml:3:10: sandbox.docker: settings for the docker backend, but backend = \"local\"; set backend = \"docker\" or remove [sandbox.docker]");
        expect_error_prefix("[sandbox]\n[sandbox.ssh]\nhost = \"h\"\n", "vectora.toml:2:10: sandbox.ssh: settings for the ssh backend, but backend = \"local\"");
        expect_error_prefix("[sandbox]\nbackend = \"ssh\"\n[sandbox.ssh]\nhost = \"h\"\n[sandbox.modal]\nimage = \"i\"\n",
                            "vectora.toml:5:10: sandbox.modal: settings for the modal backend, but backend = \"ssh\"");
}

/* Rule 2: every way a config is refused, with its exact location. */
static void test_unknown_key_typo(void **state) {
        expect_error("[sandbox]\nro_path = []\n",
                     "vectora.toml:2:1: sandbox: unknown key 'ro_path' (did you mean 'ro_paths'?); allowed keys: "
                     "enabled, backend, rw_paths, ro_paths, mask, protect, git_init, no_gpu, persistent_home, lockdown, network, idle_timeout, ports, secrets, http, limits, "
                     "docker, ssh, modal, podman");
}

static void test_unknown_key_no_suggestion(void **state) {
        expect_error("[sandbox]\n\n  completely_else = 1\n",
                     "vectora.toml:3:3: sandbox: unknown key 'completely_else'; allowed keys: enabled, backend, "
                     "rw_paths, ro_paths, mask, protect, git_init, no_gpu, persistent_home, lockdown, network, idle_timeout, ports, secrets, http, limits, docker, ssh, modal, podman");
}

static void test_unknown_key_subtable(void **state) {
        expect_error("[sandbox]\n[sandbox.limits]\ncpus = 2\n",
                     "vectora.toml:3:1: sandbox.limits: unknown key 'cpus'; allowed keys: timeout, max_output, pids, memory, "
                     "background_timeout");
}

static void test_wrong_type(void **state) {
        expect_error("[sandbox]\nenabled = \"yes\"\n",
                     "vectora.toml:2:11: sandbox.enabled must be a boolean, not a string");
        expect_error("[sandbox]\nrw_paths = \".\"\n",
                     "vectora.toml:2:12: sandbox.rw_paths must be an array, not a string");
        expect_error("[sandbox]\nidle_timeout = 1.5\n",
                     "vectora.toml:2:16: sandbox.idle_timeout must be an integer, not a float");
        expect_error("sandbox = 1\n", "vectora.toml:1:11: sandbox must be a table ([sandbox]), not integer");
}

static void test_ports(void **state) {
        VsPolicy *p = parse_ok("[sandbox]\nnetwork = false\nports = [3000, \"8080:80\", \"9000\"]\n");
        assert_int_equal(p->n_ports, 3);
        assert_int_equal(p->ports[0].host, 3000);
        assert_int_equal(p->ports[0].jail, 3000);
        assert_int_equal(p->ports[1].host, 8080);
        assert_int_equal(p->ports[1].jail, 80);
        assert_int_equal(p->ports[2].jail, 9000);
        assert_int_equal(p->ports[1].line, 3);
        policy_free(p);
        p = parse_ok("[sandbox]\nnetwork = [\"pypi.org\"]\nports = [3000]\n");
        assert_int_equal(p->n_ports, 1);
        policy_free(p);
        expect_error("[sandbox]\nnetwork = false\nports = [0]\n",
                     "vectora.toml:3:10: sandbox.ports[0]: 0 is not a port (1..65535)");
        expect_error("[sandbox]\nnetwork = false\nports = [\"80:x\"]\n",
                     "vectora.toml:3:10: sandbox.ports[0]: \"80:x\" is not PORT or \"HOST:JAIL\" (ports 1..65535)");
        expect_error("[sandbox]\nnetwork = false\nports = [true]\n",
                     "vectora.toml:3:10: sandbox.ports[0] must be a port (3000) or \"HOST:JAIL\" (\"8080:80\"), not boolean");
        expect_error("[sandbox]\nnetwork = false\nports = [3000, \"3000:80\"]\n",
                     "vectora.toml:3:16: sandbox.ports[1]: host port 3000 is already forwarded (ports[0])");
        expect_error_prefix("[sandbox]\nports = [3000]\n", "vectora.toml:2:10: sandbox.ports: with network = true");
        expect_error_prefix("[sandbox]\nlockdown = true\nports = [3000]\n", "vectora.toml:3:10: sandbox.ports: lockdown");
}

static void test_wrong_element_type(void **state) {
        expect_error("[sandbox]\nmask = [\".env\", 3]\n", "vectora.toml:2:17: sandbox.mask[1] must be a string, not integer");
        expect_error("[sandbox]\nro_paths = [true]\n", "vectora.toml:2:13: sandbox.ro_paths[0] must be a string, not boolean");
}

static void test_unknown_backend(void **state) {
        expect_error("[sandbox]\nbackend = \"lxc\"\n",
                     "vectora.toml:2:11: sandbox.backend: unknown backend \"lxc\"; use one of \"local\", \"docker\", \"ssh\", \"modal\", \"podman\"");
}

static void test_bad_glob(void **state) {
        expect_error_prefix("[sandbox]\nmask = [\"ok\", \"[abc\"]\n", "vectora.toml:2:15: sandbox.mask[1]: \"[abc\": column ");
        expect_error_prefix("[sandbox]\nmask = [\"!keep.pem\"]\n", "vectora.toml:2:9: sandbox.mask[0]: \"!keep.pem\": column 1: ");
}

static void test_bad_paths(void **state) {
        expect_error("[sandbox]\nrw_paths = [\"\"]\n",
                     "vectora.toml:2:13: sandbox.rw_paths[0] is empty; use \".\" for the workspace root");
        expect_error("[sandbox]\nrw_paths = [\".\", \"/usr\"]\n",
                     "vectora.toml:2:18: sandbox.rw_paths[1]: \"/usr\" is the directory /usr, a system directory that must stay read-only in the jail; list the project directories the agent needs instead");
        expect_error("[sandbox]\nrw_paths = [\"/tmp/../\"]\n",
                     "vectora.toml:2:13: sandbox.rw_paths[0]: \"/tmp/../\" (/) is the system directory / as a whole, which must stay read-only; list the project directories the agent needs instead");
        /* By prefix: anywhere below a system directory (an exact-name
         * match once let these through). */
        expect_error("[sandbox]\nrw_paths = [\".\", \"/etc/cron.d\"]\n",
                     "vectora.toml:2:18: sandbox.rw_paths[1]: \"/etc/cron.d\" is below /etc, a system directory that must stay read-only in the jail; list the project directories the agent needs instead");
        expect_error("[sandbox]\nrw_paths = [\"/usr/local/bin\"]\n",
                     "vectora.toml:2:13: sandbox.rw_paths[0]: \"/usr/local/bin\" is below /usr, a system directory that must stay read-only in the jail; list the project directories the agent needs instead");
        expect_error("[sandbox]\nrw_paths = [\"/var/lib/dpkg/x/../info\"]\n",
                     "vectora.toml:2:13: sandbox.rw_paths[0]: \"/var/lib/dpkg/x/../info\" (/var/lib/dpkg/info) is below /var/lib, a system directory that must stay read-only in the jail; list the project directories the agent needs instead");
        expect_error("[sandbox]\nrw_paths = [\"/boot/grub\"]\n",
                     "vectora.toml:2:13: sandbox.rw_paths[0]: \"/boot/grub\" is below /boot, a system directory that must stay read-only in the jail; list the project directories the agent needs instead");
        /* Read-only too where it shows the host's secrets or sockets. */
        expect_error("[sandbox]\nro_paths = [\"/proc/1\"]\n",
                     "vectora.toml:2:13: sandbox.ro_paths[0]: \"/proc/1\" is at or below /proc, the host's processes (their environments, memory maps, open files); list the project directories the agent needs instead");
        expect_error("[sandbox]\nro_paths = [\"/run/docker.sock\"]\n",
                     "vectora.toml:2:13: sandbox.ro_paths[0]: \"/run/docker.sock\" is at or below /run, the host's sockets (the sandbox daemon's, docker's, D-Bus); list the project directories the agent needs instead");
        expect_error("[sandbox]\nro_paths = [\"/\"]\n",
                     "vectora.toml:2:13: sandbox.ro_paths[0]: \"/\" is a directory containing /proc, the host's processes (their environments, memory maps, open files); list the project directories the agent needs instead");
        expect_error("[sandbox]\nro_paths = [\"/root/.ssh\"]\n",
                     "vectora.toml:2:13: sandbox.ro_paths[0]: \"/root/.ssh\" is at or below /root, root's home; list the project directories the agent needs instead");
        expect_error("[sandbox]\nro_paths = [\"~bob/x\"]\n",
                     "vectora.toml:2:13: sandbox.ro_paths[0]: \"~bob/x\": only \"~\" or \"~/...\" (the user's own home) is supported");
        /* ro of a system dir is fine */
        VsPolicy *p = parse_ok("[sandbox]\nro_paths = [\"/usr\"]\n");
        policy_free(p);
}

static void test_forbidden_homes_and_daemon(void **state) {
        char buf[512];
        char *others[] = { (char *)"/home/bob", (char *)"/srv/carol", NULL };
        VsHomes h = { .caller_home = "/home/me", .runtime_dir = "/run/user/1000", .owner_home = (char *)"/home/owner",
                      .others = others };
        /* Below the owner's own home: a project. */
        assert_null(forbidden_resolved("/home/owner/proj", true, &h, buf, sizeof buf));
        /* Another user's home, at or below, rw or ro. */
        assert_string_equal(forbidden_resolved("/home/bob/proj", true, &h, buf, sizeof buf),
                            "at or below /home/bob, another user's home");
        assert_string_equal(forbidden_resolved("/srv/carol", false, &h, buf, sizeof buf),
                            "at or below /srv/carol, another user's home");
        assert_string_equal(forbidden_resolved("/srv", false, &h, buf, sizeof buf),
                            "a directory containing /srv/carol, another user's home");
        /* Never a directory holding the owner's or the caller's home. */
        assert_string_equal(forbidden_resolved("/home/owner", false, &h, buf, sizeof buf),
                            "a directory containing /home/owner, the home directory with its ~/.ssh and ~/.aws");
        /* The daemon's socket directory may not be contained (what is
         * beside the socket may be listed); its runtime directory not even
         * entered. */
        assert_int_equal(forbidden_reserve("/var/tmp/vs-forbidden-sock", false), 0);
        assert_int_equal(forbidden_reserve("/var/tmp/vs-forbidden-rt", true), 0);
        assert_string_equal(forbidden_lexical("/var/tmp/vs-forbidden-sock", false, buf, sizeof buf),
                            "a directory containing /var/tmp/vs-forbidden-sock, the sandbox daemon's socket directory (a jail reaching the socket could ask the daemon for unsandboxed commands)");
        assert_null(forbidden_lexical("/var/tmp/vs-forbidden-sock/ws", true, buf, sizeof buf));
        assert_string_equal(forbidden_lexical("/var/tmp/vs-forbidden-rt/idmap-1", false, buf, sizeof buf),
                            "at or below /var/tmp/vs-forbidden-rt, the sandbox daemon's runtime directory (a jail reaching the socket could ask the daemon for unsandboxed commands)");
        expect_error("[sandbox]\nro_paths = [\"/var/tmp/\"]\n",
                     "vectora.toml:2:13: sandbox.ro_paths[0]: \"/var/tmp/\" (/var/tmp) is a directory containing /var/tmp/vs-forbidden-rt, the sandbox daemon's runtime directory (a jail reaching the socket could ask the daemon for unsandboxed commands); list the project directories the agent needs instead");
}

static void test_forbidden_sockets(void **state) {
        char buf[512];
        /* The socket itself (its directory only may not be contained: a
         * sibling is a workspace), rw or ro. */
        assert_int_equal(forbidden_reserve("/var/tmp/vs-forbidden-s", false), 0);
        assert_int_equal(forbidden_reserve_socket("/var/tmp/vs-forbidden-s/d.sock"), 0);
        assert_string_equal(forbidden_lexical("/var/tmp/vs-forbidden-s/d.sock", false, buf, sizeof buf),
                            "at /var/tmp/vs-forbidden-s/d.sock, the sandbox daemon's socket (a jail reaching the socket could ask the daemon for unsandboxed commands)");
        assert_non_null(forbidden_lexical("/var/tmp/vs-forbidden-s/d.sock", true, buf, sizeof buf));
        assert_null(forbidden_lexical("/var/tmp/vs-forbidden-s/ws", true, buf, sizeof buf));
        assert_null(forbidden_lexical("/var/tmp/vs-forbidden-s/d.sock2", true, buf, sizeof buf));
        /* Any instance's default socket name, and the /tmp fallbacks. */
        assert_string_equal(forbidden_lexical("/srv/xdg/vectora-sandbox.sock", false, buf, sizeof buf),
                            "a sandbox daemon's socket or runtime directory (a jail reaching the socket could ask the daemon for unsandboxed commands)");
        assert_non_null(forbidden_lexical("/tmp/vectora-sandbox-1000", false, buf, sizeof buf));
        assert_non_null(forbidden_lexical("/tmp/vectora-sandbox-1000/sock", true, buf, sizeof buf));
        assert_null(forbidden_lexical("/srv/vectora-sandbox.socket", false, buf, sizeof buf));
        assert_null(forbidden_lexical("/srv/my-vectora-sandbox.sock", false, buf, sizeof buf));
        assert_null(forbidden_lexical("/tmp/proj-vectora-sandbox-1", true, buf, sizeof buf));
        assert_string_equal(forbidden_lexical("/tmp", false, buf, sizeof buf),
                            "the directory /tmp as a whole, which holds the host's sockets (a sandbox daemon's /tmp/vectora-sandbox-UID/sock, tmux's, ssh-agent's, X11's)");
        assert_null(forbidden_lexical("/tmp/proj", true, buf, sizeof buf));
        /* $XDG_RUNTIME_DIR: not entered, not contained, as set and as
         * canonicalized. */
        VsHomes h = { .runtime_dir = "/srv/rt", .runtime_real = (char *)"/srv/real-rt" };
        assert_string_equal(forbidden_resolved("/srv/rt", false, &h, buf, sizeof buf),
                            "at or below /srv/rt, the runtime directory ($XDG_RUNTIME_DIR) with the sandbox daemon's socket and the session's");
        assert_string_equal(forbidden_resolved("/srv/real-rt/sub", true, &h, buf, sizeof buf),
                            "at or below /srv/real-rt, the runtime directory ($XDG_RUNTIME_DIR) with the sandbox daemon's socket and the session's");
        assert_string_equal(forbidden_resolved("/srv", false, &h, buf, sizeof buf),
                            "a directory containing /srv/rt, the runtime directory ($XDG_RUNTIME_DIR) with the sandbox daemon's socket and the session's");
        assert_null(forbidden_resolved("/srv/rt2", true, &h, buf, sizeof buf));
}

static void test_malformed_toml(void **state) {
        expect_error_prefix("[sandbox\nenabled = true\n", "vectora.toml:1:");
        expect_error_prefix("[sandbox]\nenabled = true\nenabled = false\n", "vectora.toml:3:");
        expect_error_prefix("[sandbox]\nmask = [\".env\"\n", "vectora.toml:");
}

static void test_limits(void **state) {
        expect_error("[sandbox.limits]\nmemory = \"lots\"\n",
                     "vectora.toml:2:10: sandbox.limits.memory: \"lots\" is not a size; write e.g. \"512M\" or \"2G\"");
        expect_error("[sandbox.limits]\nmax_output = 10\n",
                     "vectora.toml:2:14: sandbox.limits.max_output must be between 1024 and 67108864, not 10");
        expect_error("[sandbox.limits]\ntimeout = 0\n",
                     "vectora.toml:2:11: sandbox.limits.timeout must be between 1 and 604800, not 0");
        expect_error("[sandbox.limits]\nmemory = true\n",
                     "vectora.toml:2:10: sandbox.limits.memory must be a string like \"2G\" or an integer, not boolean");
        VsPolicy *p = parse_ok("[sandbox.limits]\nmemory = 33554432\n");
        assert_int_equal(p->limits.memory, 33554432);
        policy_free(p);
}

static void test_backend_requirements(void **state) {
        expect_error("x = 1\n[sandbox]\nbackend = \"docker\"\n",
                     "vectora.toml:2:1: sandbox: backend = \"docker\" needs sandbox.docker.image (a local image name, e.g. image = \"debian:12\")");
        expect_error("[sandbox]\nbackend = \"ssh\"\n", "vectora.toml:1:1: sandbox: backend = \"ssh\" needs sandbox.ssh.host");
        expect_error("[sandbox.ssh]\nhost = \"-oProxyCommand=x\"\n", "vectora.toml:2:8: sandbox.ssh.host must not start with '-'");
        expect_error("[sandbox.ssh]\nport = 70000\n", "vectora.toml:2:8: sandbox.ssh.port must be between 1 and 65535, not 70000");
        expect_error("[sandbox.modal]\nsync = \"rsync\"\n",
                     "vectora.toml:2:8: sandbox.modal.sync must be \"upload\" or \"volume\", not \"rsync\"");
}

/* Rule 5: lockdown forces network and GPU off. */
static void test_lockdown_forces(void **state) {
        VsPolicy *p = parse_ok("[sandbox]\nlockdown = true\nnetwork = true\nno_gpu = false\n");
        assert_true(p->lockdown);
        assert_false(p->network);
        assert_true(p->no_gpu);
        policy_free(p);
}

static void test_network_allowlist(void **state) {
        VsPolicy *p = parse_ok("[sandbox]\nnetwork = [\"pypi.org\", \"*.npmjs.org\", \"github.com:443\", \"10.0.0.5:5432\"]\n");
        /* The jail keeps its empty namespace; the proxy is the way out. */
        assert_false(p->network);
        assert_true(p->net_allowlist);
        assert_int_equal(p->n_net_rules, 4);
        assert_string_equal(p->net_rules[1].host, "npmjs.org");
        assert_int_equal(p->net_rules[1].kind, VS_NET_WILDCARD);
        assert_string_equal(p->net_rules[2].written, "github.com:443");
        assert_int_equal(p->net_rules[2].line, 2);
        assert_int_equal(p->net_rules[2].col, 39);
        assert_int_equal(p->net_rules[3].port, 5432);
        policy_free(p);

        /* An empty list allows nothing, visibly (every request is denied). */
        p = parse_ok("[sandbox]\nnetwork = []\n");
        assert_false(p->network);
        assert_true(p->net_allowlist);
        assert_int_equal(p->n_net_rules, 0);
        policy_free(p);

        p = parse_ok("[sandbox]\nnetwork = false\n");
        assert_false(p->network);
        assert_false(p->net_allowlist);
        policy_free(p);

        /* Lockdown forces the network off, allowlist included. */
        p = parse_ok("[sandbox]\nlockdown = true\nnetwork = [\"pypi.org\"]\n");
        assert_false(p->network);
        assert_false(p->net_allowlist);
        policy_free(p);
}

static void test_network_bad_entries(void **state) {
        expect_error("[sandbox]\nnetwork = [\"pypi.org\", \"*\"]\n",
                     "vectora.toml:2:24: sandbox.network[1]: \"*\": a wildcard is written \"*.example.com\" (any name below example.com); \"*\" alone or elsewhere in a name is refused");
        expect_error("[sandbox]\nnetwork = [\"github.com:99999\"]\n",
                     "vectora.toml:2:12: sandbox.network[0]: \"github.com:99999\": port \"99999\" must be a number from 1 to 65535");
        expect_error("[sandbox]\nnetwork = [\"https://pypi.org/simple\"]\n",
                     "vectora.toml:2:12: sandbox.network[0]: \"https://pypi.org/simple\": write the host name alone (\"pypi.org\"), not a URL or a path");
        expect_error("[sandbox]\nnetwork = [1]\n", "vectora.toml:2:12: sandbox.network[0] must be a string, not integer");
        expect_error("[sandbox]\nnetwork = \"pypi.org\"\n",
                     "vectora.toml:2:11: sandbox.network must be true, false or a list of hosts like [\"pypi.org\", \"*.npmjs.org\", \"github.com:443\"], not string");
}

static void test_parse_size(void **state) {
        uint64_t v = 0;
        assert_int_equal(parse_size("2G", &v), 0);
        assert_int_equal(v, 2ull << 30);
        assert_int_equal(parse_size("512MiB", &v), 0);
        assert_int_equal(v, 512ull << 20);
        assert_int_equal(parse_size("1024", &v), 0);
        assert_int_equal(v, 1024);
        assert_int_equal(parse_size("1k", &v), 0);
        assert_int_equal(v, 1024);
        assert_int_equal(parse_size("", &v), -EINVAL);
        assert_int_equal(parse_size("G", &v), -EINVAL);
        assert_int_equal(parse_size("1X", &v), -EINVAL);
        assert_int_equal(parse_size("99999999999999999999", &v), -ERANGE);
        assert_int_equal(parse_size("17179869184T", &v), -ERANGE);
}

/* ---- resolution against a real tree (touches the OS) ---- */

static char *make_tree(void) {
        char tmpl[] = "/tmp/vs-test-config-XXXXXX";
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        char *ws = strdup(d);
        char buf[4096];
        snprintf(buf, sizeof buf, "%s/sub", ws);
        assert_int_equal(mkdir(buf, 0755), 0);
        snprintf(buf, sizeof buf, "%s/outside", ws);
        assert_int_equal(mkdir(buf, 0755), 0);
        char link[4096];
        snprintf(link, sizeof link, "%s/link", ws);
        assert_int_equal(symlink(buf, link), 0);
        return ws;
}

static void rm_tree(char *ws) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
        assert_int_equal(system(cmd), 0);
        free(ws);
}

static int load_text(const char *ws, const char *text, VsPolicy **ret, VsError **err) {
        char path[4096];
        snprintf(path, sizeof path, "%s/vectora.toml", ws);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return config_load(ws, ret, err);
}

/* A host tree outside the workspace: host/real, host/alias -> host/real,
 * host/real/inner -> host/other (made as the jail could if host/real is
 * writable). */
static char *make_host_tree(void) {
        char tmpl[] = "/tmp/vs-test-config-host-XXXXXX";
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        char *h = strdup(d), buf[4096], to[4096];
        snprintf(buf, sizeof buf, "%s/real", h);
        assert_int_equal(mkdir(buf, 0755), 0);
        snprintf(buf, sizeof buf, "%s/other", h);
        assert_int_equal(mkdir(buf, 0755), 0);
        snprintf(buf, sizeof buf, "%s/alias", h);
        snprintf(to, sizeof to, "%s/real", h);
        assert_int_equal(symlink(to, buf), 0);
        snprintf(buf, sizeof buf, "%s/real/inner", h);
        snprintf(to, sizeof to, "%s/other", h);
        assert_int_equal(symlink(to, buf), 0);
        return h;
}

static void test_resolve(void **state) {
        char *ws = make_tree(), *host = make_host_tree();
        VsPolicy *p = NULL;
        VsError *err = NULL;
        char text[8192], buf[4096];
        snprintf(text, sizeof text, "[sandbox]\nrw_paths = [\".\", \"sub/\", \"missing\"]\nro_paths = [\"%s/alias\"]\n", host);
        assert_int_equal(load_text(ws, text, &p, &err), 0);
        assert_string_equal(p->rw_paths[0].resolved, ws);
        snprintf(buf, sizeof buf, "%s/sub", ws);
        assert_string_equal(p->rw_paths[1].resolved, buf);
        assert_true(p->rw_paths[2].missing);
        assert_null(p->rw_paths[2].resolved);
        snprintf(buf, sizeof buf, "%s/real", host);
        assert_string_equal(p->ro_paths[0].resolved, buf); /* the host's own link is followed */
        policy_free(p);
        rm_tree(ws);
        rm_tree(host);
}

/* A symlink where the jail can write is never followed: in the workspace
 * (the agent's `ln -s ~/.ssh build`), whether the link is listed or on the
 * way, and in a writable listed path reached through a host link. */
static void test_resolve_refuses_links_the_jail_made(void **state) {
        char *ws = make_tree(), *host = make_host_tree();
        char text[8192], want[8192], buf[4096];
        const char *cases[] = {
                "[sandbox]\nrw_paths = [\".\", \"link\"]\n",
                "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"link\"]\n",
                "[sandbox]\nrw_paths = [\"sub\"]\nro_paths = [\"link/deeper\"]\n",
        };
        snprintf(buf, sizeof buf, "%s/outside/deeper", ws);
        assert_int_equal(mkdir(buf, 0755), 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                VsPolicy *p = NULL;
                VsError *err = NULL;
                assert_true(load_text(ws, cases[i], &p, &err) < 0);
                snprintf(want, sizeof want, "goes through the symlink %s/link -> %s/outside, which lies in the workspace", ws, ws);
                assert_non_null(strstr(vs_error_message(err), want));
                vs_error_free(err);
        }
        /* host/alias is the host's and is followed; what it leads to is
         * writable, so host/real/inner is a link the jail could have made. */
        VsPolicy *p = NULL;
        VsError *err = NULL;
        snprintf(text, sizeof text, "[sandbox]\nrw_paths = [\".\", \"%s/alias\"]\nro_paths = [\"%s/alias/inner\"]\n", host, host);
        assert_true(load_text(ws, text, &p, &err) < 0);
        snprintf(want, sizeof want, "sandbox.ro_paths[0]: \"%s/alias/inner\" goes through the symlink %s/real/inner -> %s/other", host, host, host);
        assert_non_null(strstr(vs_error_message(err), want));
        vs_error_free(err);
        /* The same link, with host/real read-only, is the host's. */
        snprintf(text, sizeof text, "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"%s/alias\", \"%s/alias/inner\"]\n", host, host);
        assert_int_equal(load_text(ws, text, &p, &err), 0);
        snprintf(buf, sizeof buf, "%s/other", host);
        assert_string_equal(p->ro_paths[1].resolved, buf);
        policy_free(p);
        rm_tree(ws);
        rm_tree(host);
}

static void test_lockdown_refuses_missing(void **state) {
        char *ws = make_tree();
        VsPolicy *p = NULL;
        VsError *err = NULL;
        assert_true(load_text(ws, "[sandbox]\nlockdown = true\nrw_paths = [\".\", \"missing\"]\n", &p, &err) < 0);
        char want[8192];
        snprintf(want, sizeof want,
                 "vectora.toml:3:18: sandbox.rw_paths[1]: \"missing\" (%s/missing) does not exist; lockdown refuses a listed path that is missing: create it or remove it from the list",
                 ws);
        assert_string_equal(vs_error_message(err), want);
        vs_error_free(err);
        rm_tree(ws);
}

static void test_lockdown_refuses_symlink(void **state) {
        char *ws = make_tree(), *host = make_host_tree();
        VsPolicy *p = NULL;
        VsError *err = NULL;
        char text[8192], want[8192];
        snprintf(text, sizeof text, "[sandbox]\nlockdown = true\nro_paths = [\"%s/alias\"]\n", host);
        assert_true(load_text(ws, text, &p, &err) < 0);
        snprintf(want, sizeof want,
                 "vectora.toml:3:13: sandbox.ro_paths[0]: \"%s/alias\" goes through a symlink (%s/alias -> %s/real); lockdown refuses ambiguous paths: list the real path",
                 host, host, host);
        assert_string_equal(vs_error_message(err), want);
        vs_error_free(err);
        rm_tree(ws);
        rm_tree(host);
}

/* A path in both lists: the jail bound it writable while the daemon
 * took it for read-only; ro_paths = ["."] alone left the workspace
 * writable (the default rw_paths). Refused, saying how to say it. */
static void test_refuses_path_in_both_lists(void **state) {
        char *ws = make_tree();
        VsPolicy *p = NULL;
        VsError *err = NULL;
        char want[8192];
        assert_true(load_text(ws, "[sandbox]\nro_paths = [\".\"]\n", &p, &err) < 0);
        snprintf(want, sizeof want,
                 "vectora.toml:2:13: sandbox.ro_paths[0]: \".\" resolves to %s, which rw_paths lists too (rw_paths is "
                 "[\".\"] when not given: rw_paths = [] makes the workspace read-only); a path is writable or read-only, "
                 "not both: list it in one of them",
                 ws);
        assert_string_equal(vs_error_message(err), want);
        vs_error_free(err);
        err = NULL;
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/x", ws);
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_true(load_text(ws, "[sandbox]\nrw_paths = [\".\", \"x\"]\nro_paths = [\"./x/\"]\n", &p, &err) < 0);
        snprintf(want, sizeof want,
                 "vectora.toml:3:13: sandbox.ro_paths[0]: \"./x/\" resolves to %s, which rw_paths lists too; a path is "
                 "writable or read-only, not both: list it in one of them",
                 sub);
        assert_string_equal(vs_error_message(err), want);
        vs_error_free(err);
        err = NULL;
        /* Nested (not the same path) and rw_paths = []: as before. */
        assert_int_equal(load_text(ws, "[sandbox]\nrw_paths = [\".\"]\nro_paths = [\"x\"]\n", &p, &err), 0);
        policy_free(p);
        p = NULL;
        assert_int_equal(load_text(ws, "[sandbox]\nrw_paths = []\nro_paths = [\".\"]\n", &p, &err), 0);
        policy_free(p);
        rm_tree(ws);
}

static void test_refuses_home_ancestor(void **state) {
        char *ws = make_tree();
        char *old = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
        char home[4096];
        snprintf(home, sizeof home, "%s/sub", ws);
        setenv("HOME", home, 1);
        VsPolicy *p = NULL;
        VsError *err = NULL;
        /* The workspace contains HOME: refused, whether rw or ro. */
        assert_true(load_text(ws, "[sandbox]\nrw_paths = []\nro_paths = [\".\"]\n", &p, &err) < 0);
        char want[8192];
        snprintf(want, sizeof want,
                 "vectora.toml:3:13: sandbox.ro_paths[0]: \".\" resolves to %s, which is a directory containing %s, the home directory with its ~/.ssh and ~/.aws; list the project directories the agent needs instead",
                 ws, home);
        assert_string_equal(vs_error_message(err), want);
        vs_error_free(err);
        err = NULL;
        /* A path below HOME is fine. */
        assert_int_equal(load_text(ws, "[sandbox]\nrw_paths = [\"~\"]\n", &p, &err) < 0, true);
        vs_error_free(err);
        err = NULL;
        char sub[8200];
        snprintf(sub, sizeof sub, "%s/x", home);
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(load_text(ws, "[sandbox]\nrw_paths = [\"~/x\"]\n", &p, &err), 0);
        assert_string_equal(p->rw_paths[0].resolved, sub);
        policy_free(p);
        if (old)
                setenv("HOME", old, 1);
        else
                unsetenv("HOME");
        free(old);
        rm_tree(ws);
}

static void test_load_missing_file(void **state) {
        char *ws = make_tree();
        VsPolicy *p = NULL;
        VsError *err = NULL;
        assert_int_equal(config_load(ws, &p, &err), 0);
        assert_false(p->sandboxed);
        assert_string_equal(p->unsandboxed_reason, "no vectora.toml in the workspace");
        /* A policy always names a backend (the default), sandboxed or not:
         * the daemon asks its capabilities without checking. */
        assert_non_null(p->backend);
        assert_string_equal(vs_backend_name(p->backend), "local");
        policy_free(p);
        rm_tree(ws);
}

static void test_load_symlinked_config(void **state) {
        char *ws = make_tree();
        char a[4096], b[4096];
        snprintf(a, sizeof a, "%s/outside/real.toml", ws);
        FILE *f = fopen(a, "w");
        assert_non_null(f);
        fputs("[sandbox]\nenabled = false\n", f);
        fclose(f);
        snprintf(b, sizeof b, "%s/vectora.toml", ws);
        assert_int_equal(symlink(a, b), 0);
        VsPolicy *p = NULL;
        VsError *err = NULL;
        assert_true(config_load(ws, &p, &err) < 0);
        assert_string_equal(vs_error_message(err),
                            "vectora.toml: is a symlink; the policy file must be a regular file in the workspace");
        vs_error_free(err);
        rm_tree(ws);
}

static void test_protected_paths(void **state) {
        VsPolicy *p = parse_ok("[sandbox]\n");
        char **l = NULL;
        assert_int_equal(config_protected_paths(p, &l), 0);
        assert_int_equal(strv_length(l), 12);
        assert_string_equal(l[0], "/ws/vectora.toml");
        const char *git[] = { "hooks", "config", "config.worktree", "info/attributes", "info/exclude", "commondir",
                              "remotes", "branches", "objects/info/alternates" };
        for (size_t i = 0; i < ELEMENTSOF(git); i++) {
                char want[64];
                snprintf(want, sizeof want, "/ws/.git/%s", git[i]);
                assert_true(strv_contains(l, want));
        }
        strv_free(l);
        policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_sandbox_table),
                cmocka_unit_test(test_enabled_false),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_full),
                cmocka_unit_test(test_unknown_key_typo),
                cmocka_unit_test(test_unknown_key_no_suggestion),
                cmocka_unit_test(test_unknown_key_subtable),
                cmocka_unit_test(test_wrong_type),
                cmocka_unit_test(test_wrong_element_type),
                cmocka_unit_test(test_unknown_backend),
                cmocka_unit_test(test_bad_glob),
                cmocka_unit_test(test_bad_paths),
                cmocka_unit_test(test_forbidden_homes_and_daemon),
                cmocka_unit_test(test_forbidden_sockets),
                cmocka_unit_test(test_malformed_toml),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_ports),
                cmocka_unit_test(test_backend_requirements),
                cmocka_unit_test(test_other_backend_table),
                cmocka_unit_test(test_lockdown_forces),
                cmocka_unit_test(test_parse_size),
                cmocka_unit_test(test_resolve),
                cmocka_unit_test(test_resolve_refuses_links_the_jail_made),
                cmocka_unit_test(test_lockdown_refuses_missing),
                cmocka_unit_test(test_lockdown_refuses_symlink),
                cmocka_unit_test(test_refuses_path_in_both_lists),
                cmocka_unit_test(test_refuses_home_ancestor),
                cmocka_unit_test(test_load_missing_file),
                cmocka_unit_test(test_load_symlinked_config),
                cmocka_unit_test(test_protected_paths),
                cmocka_unit_test(test_network_allowlist),
                cmocka_unit_test(test_network_bad_entries),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
