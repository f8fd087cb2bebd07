/* SPDX-License-Identifier: MIT */
/* One jail plan for every backend: from the same policy and the same host,
 * local (bwrap), docker (--mount) and ssh (the remote launcher's plan,
 * rendered by bwrap on its host) seal the same set of paths read-only and
 * empty, including a symlinked .git/hooks, a missing .git/config and the
 * other .git control files (missing ones get placeholders on the host);
 * Modal, which mounts nothing, lists the same protected set in its upload
 * manifest (never written back) and leaves the masked files out of it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend-docker.h"
#include "backend-local.h"
#include "backend-modal.h"
#include "backend-ssh.h"
#include "config.h"
#include "disk-maker.h"
#include "jail-plan.h"
#include "launch.h"
#include "path-util.h"
#include "strv.h"

static char ws[64];

static void put(const char *rel, const char *content) {
        _cleanup_free_ char *p = path_join(ws, rel);
        FILE *f = fopen(p, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static void mk(const char *rel) {
        _cleanup_free_ char *p = path_join(ws, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state) {
        strcpy(ws, "/tmp/vs-jail-plan-XXXXXX");
        assert_non_null(mkdtemp(ws));
        /* A workspace whose .git has its hooks behind a symlink and no
         * config: the two cases the ssh launcher's own copy once skipped. */
        put("vectora.toml", "[sandbox]\nrw_paths = [\".\"]\nmask = [\".env\", \"**/.ssh/**\", \"*.pem\"]\n");
        mk(".git");
        put(".git/HEAD", "ref: refs/heads/main\n");
        mk(".git/real-hooks");
        _cleanup_free_ char *hooks = path_join(ws, ".git/hooks");
        assert_int_equal(symlink("real-hooks", hooks), 0);
        put(".env", "SECRET=1\n");
        mk("sub");
        mk("sub/.ssh");
        put("sub/.ssh/id_rsa", "key\n");
        put("sub/key.pem", "pem\n");
        /* A symlink matching a mask is not mounted over (a mount follows it). */
        _cleanup_free_ char *link = path_join(ws, "link.pem");
        assert_int_equal(symlink(".env", link), 0);
        return 0;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
        return system(cmd) == 0 ? 0 : -1;
}

static VsPolicy *load(void) {
        VsPolicy *p = NULL;
        VsError *err = NULL;
        if (config_load(ws, &p, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        return p;
}

/* Destinations of read-only mounts strictly below the workspace from a
 * bwrap argv (--ro-bind SRC DEST). */
static char **sealed_bwrap(char **argv) {
        char **out = calloc(1, sizeof(char *));
        for (size_t i = 0; argv[i]; i++)
                if (streq(argv[i], "--ro-bind") && argv[i + 2]) {
                        const char *rest = path_startswith(argv[i + 2], ws);
                        if (rest && *rest && !strv_contains(out, argv[i + 2]))
                                assert_int_equal(strv_extend(&out, argv[i + 2]), 0);
                }
        return out;
}

/* The same from a docker argv (--mount type=bind,source=S,target=T,readonly). */
static char **sealed_docker(char **argv) {
        char **out = calloc(1, sizeof(char *));
        for (size_t i = 0; argv[i]; i++) {
                if (!streq(argv[i], "--mount") || !strstr(argv[i + 1], ",readonly"))
                        continue;
                const char *t = strstr(argv[i + 1], ",target=");
                assert_non_null(t);
                _cleanup_free_ char *target = strndup(t + 8, (size_t)(strstr(t, ",readonly") - t - 8));
                const char *rest = path_startswith(target, ws);
                if (rest && *rest && !strv_contains(out, target))
                        assert_int_equal(strv_extend(&out, target), 0);
        }
        return out;
}

static int cmp(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void assert_same_set(char **a, char **b, const char *what) {
        qsort(a, strv_length(a), sizeof(char *), cmp);
        qsort(b, strv_length(b), sizeof(char *), cmp);
        _cleanup_free_ char *ja = strv_join(a, " "), *jb = strv_join(b, " ");
        if (!streq(ja, jb))
                fail_msg("%s: [%s] != [%s]", what, ja, jb);
}

/* The upload manifest a modal launch of p wrote (--manifest=PATH in its
 * argv), parsed. The manifest is written by launch_prepare() alone: node
 * and the bridge only appear in the argv, which runs nothing here. So the
 * launch gets a stand-in bridge (bridge.mjs beside the marker of its
 * installed SDK) and a stand-in node, and this test does not depend on
 * the bridge's npm packages, which a fresh clone does not have. */
static json_t *modal_manifest(const VsPolicy *p, const char *runtime_dir) {
        _cleanup_free_ char *dir = path_join(runtime_dir, "bridge");
        _cleanup_free_ char *sdk = path_join(dir, "node_modules/modal");
        _cleanup_free_ char *bridge = path_join(dir, "bridge.mjs");
        _cleanup_free_ char *pkg = path_join(sdk, "package.json");
        char cmd[512];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s' && touch '%s' && echo '{}' >'%s'", sdk, bridge, pkg);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(setenv("VECTORA_MODAL_BRIDGE", bridge, 1), 0);
        assert_int_equal(setenv("VECTORA_NODE", "/bin/true", 1), 0);
        VsLaunchOptions o = { .worker_path = "/w", .runtime_dir = runtime_dir };
        VsLaunch *l = NULL;
        VsError *err = NULL;
        if (launch_prepare(p, &o, &l, &err) < 0)
                fail_msg("modal launch: %s", vs_error_message(err));
        assert_true(strv_contains(l->argv, bridge));
        const char *path = NULL;
        for (char **a = l->argv; a && *a && !path; a++)
                if (strncmp(*a, "--manifest=", strlen("--manifest=")) == 0)
                        path = *a + strlen("--manifest=");
        assert_non_null(path);
        json_error_t je;
        json_t *m = json_load_file(path, 0, &je);
        if (!m)
                fail_msg("%s: %s", path, je.text);
        launch_free(l);
        return m;
}

static char **json_strings(json_t *a, const char *key) {
        char **out = calloc(1, sizeof(char *));
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) {
                const char *s = json_string_value(key ? json_object_get(v, key) : v);
                assert_non_null(s);
                assert_int_equal(strv_extend(&out, s), 0);
        }
        return out;
}

static VsJailPlan *plan_here(const VsPolicy *p, char **prot) {
        VsJailFacts f = { 0 };
        VsError *err = NULL;
        if (jail_facts_collect(p, prot, NULL, NULL, NULL, NULL, &f, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        VsJailPlan *plan = NULL;
        assert_int_equal(jail_plan_build(p, prot, &f, "/e/file", "/e/dir", NULL, &plan), 0);
        jail_facts_done(&f);
        return plan;
}

/* A batching maker (a root daemon's monitor: one child for a batch) is
 * asked once for all a first start's placeholders, the git controls' and
 * the protect list's together; a batch that fails part way leaves the
 * rest to one request each; a second start asks nothing. */
static void test_placeholders_in_one_batch(void **state) {
        (void)state;
        const char *made[] = { ".git/config",       ".git/config.worktree", ".git/hooks",   ".git/info/attributes",
                               ".git/info/exclude", ".git/info/sparse-checkout", ".git/commondir", ".git/remotes",
                               ".git/branches",     ".git/objects/info/alternates", ".envrc", ".mcp.json",
                               "mise.toml",         ".mise.toml", ".gitmodules", ".ripgreprc", ".vscode", ".claude",
                               ".cursor",           ".codex", ".gemini", ".devcontainer" };
        for (int k = 0; k < 2; k++) {
                char dir[64];
                strcpy(dir, "/tmp/vs-jail-batch-XXXXXX");
                assert_non_null(mkdtemp(dir));
                char cmd[256];
                snprintf(cmd, sizeof cmd, "%s/vectora.toml", dir);
                FILE *conf = fopen(cmd, "we");
                assert_non_null(conf);
                fputs("[sandbox]\nrw_paths = [\".\"]\n", conf);
                assert_int_equal(fclose(conf), 0);
                snprintf(cmd, sizeof cmd, "cd '%s' && mkdir .git && echo 'ref: refs/heads/main' > .git/HEAD", dir);
                assert_int_equal(system(cmd), 0);
                VsPolicy *p = NULL;
                VsError *err = NULL;
                if (config_load(dir, &p, &err) < 0)
                        fail_msg("%s", vs_error_message(err));
                char **prot = NULL;
                assert_int_equal(config_protected_paths(p, &prot), 0);
                VsHostMaker m = { .workspace = dir, .make = disk_make, .make_many = disk_make_many, .userdata = dir };
                for (int round = 0; round < 2; round++) {
                        made_one = batches = batch_items = 0;
                        batch_fail_at = k ? 2 : -1;
                        VsJailFacts f = { 0 };
                        if (jail_facts_collect(p, prot, NULL, NULL, &m, NULL, &f, &err) < 0)
                                fail_msg("%s", vs_error_message(err));
                        jail_facts_done(&f);
                        if (round == 1) {
                                assert_int_equal(made_one + batches, 0);
                                continue;
                        }
                        assert_int_equal(batches, 1);
                        assert_int_equal(batch_items, (int)ELEMENTSOF(made));
                        /* The two before the failing one made by the batch. */
                        assert_int_equal(made_one, k ? (int)ELEMENTSOF(made) - 2 : 0);
                        for (size_t i = 0; i < ELEMENTSOF(made); i++) {
                                _cleanup_free_ char *path = path_join(dir, made[i]);
                                if (access(path, F_OK) < 0)
                                        fail_msg("%s: not made", made[i]);
                        }
                }
                strv_free(prot);
                policy_free(p);
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                assert_int_equal(system(cmd), 0);
        }
}

static void test_same_sealed_set_everywhere(void **state) {
        VsPolicy *p = load();
        char **prot = NULL;
        assert_int_equal(config_protected_paths(p, &prot), 0);

        /* What this workspace must seal, from its layout above. */
        char **want = NULL;
        const char *rel[] = { "vectora.toml",     ".git/real-hooks", ".git/config",    ".git/config.worktree",
                              ".git/commondir",   ".git/remotes",    ".git/branches",  ".git/objects/info/alternates",
                              ".git/info/attributes", ".git/info/exclude", ".git/info/sparse-checkout",
                              ".env", "sub/.ssh/id_rsa", "sub/key.pem" };
        /* The default protect list's placeholders (protect-absent.h),
         * made on the host by the first plan, sealed like the rest. */
        const char *placeholders[] = { ".envrc",   ".mcp.json", "mise.toml", ".mise.toml", ".gitmodules", ".ripgreprc",
                                       ".vscode",  ".claude",   ".cursor",   ".codex",     ".gemini",     ".devcontainer" };
        for (size_t i = 0; i < ELEMENTSOF(rel); i++)
                assert_int_equal(strv_consume(&want, path_join(ws, rel[i])), 0);
        for (size_t i = 0; i < ELEMENTSOF(placeholders); i++)
                assert_int_equal(strv_consume(&want, path_join(ws, placeholders[i])), 0);

        /* local */
        VsJailPlan *plan = plan_here(p, prot);
        char **planned = NULL;
        assert_int_equal(jail_plan_sealed(plan, &planned), 0);
        assert_same_set(planned, want, "plan");
        /* A missing info/grafts is not made (host git would print a
         * deprecation hint on every command); it is sealed where it exists. */
        _cleanup_free_ char *grafts = path_join(ws, ".git/info/grafts");
        assert_int_equal(access(grafts, F_OK), -1);
        VsLocalEnv le = { .bwrap = "bwrap", .worker_path = "/w", .uid = 1000, .gid = 1000, .plan = plan };
        char **bargv = NULL;
        assert_int_equal(backend_local_argv(p, &le, &bargv, NULL), 0);
        char **local = sealed_bwrap(bargv);
        assert_same_set(local, want, "local");

        /* docker, from the same plan */
        VsDockerEnv de = { .image = "debian:12", .worker_path = "/w", .name = "n", .uid = 1000, .gid = 1000, .plan = plan };
        char **dargv = NULL;
        assert_int_equal(backend_docker_argv(p, &de, &dargv, NULL), 0);
        char **docker = sealed_docker(dargv);
        assert_same_set(docker, want, "docker");

        /* ssh: what the daemon sends the remote launcher, decoded there,
         * planned there with its own walk, rendered by bwrap there. */
        char **rw = NULL, **ro = calloc(1, sizeof(char *));
        for (size_t i = 0; i < p->n_rw; i++)
                assert_int_equal(strv_extend(&rw, p->rw_paths[i].resolved), 0);
        char *envv[] = { (char *)"PATH=/bin", NULL };
        VsRemoteJail j = { .workspace = p->workspace, .rw = rw, .ro = ro, .mask = p->mask,
                           .protect = p->protect, .protected_paths = prot, .env = envv, .network = true, .no_gpu = true };
        char *hex = NULL;
        assert_int_equal(backend_ssh_jail_encode(&j, &hex), 0);
        VsRemoteJail rj = { 0 };
        json_t *obj = NULL;
        assert_int_equal(backend_ssh_jail_decode(hex, &rj, &obj, NULL), 0);
        VsJailPlan *rplan = NULL;
        VsError *err = NULL;
        if (jail_plan_remote(&rj, "/e/file", "/e/dir", &rplan, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        le.plan = rplan;
        char **rargv = NULL;
        assert_int_equal(backend_local_argv(p, &le, &rargv, NULL), 0);
        char **remote = sealed_bwrap(rargv);
        assert_same_set(remote, want, "ssh");
        assert_true(strv_contains(rargv, "PATH"));

        /* modal: nothing is mounted; the manifest's protected set (never
         * written back) is what the other backends seal read-only, plus
         * what their file tools refuse by name: the .git/hooks symlink
         * itself and the missing grafts. The masked files are not
         * uploaded. */
        VsModalConfig *mc = calloc(1, sizeof *mc);
        assert_int_equal(backend_modal_def.config_init(mc), 0);
        mc->image = strdup("debian:12");
        p->backend = &backend_modal_def;
        p->backend_config = mc;
        char rt[] = "/tmp/vs-jail-plan-rt-XXXXXX";
        assert_non_null(mkdtemp(rt));
        json_t *mf = modal_manifest(p, rt);
        char **modal_prot = json_strings(json_object_get(mf, "protected"), NULL);
        char **uploaded = json_strings(json_object_get(mf, "entries"), "path");
        char **want_prot = NULL;
        for (size_t i = 0; i < 11; i++)
                assert_int_equal(strv_consume(&want_prot, path_join(ws, rel[i])), 0);
        for (size_t i = 0; i < ELEMENTSOF(placeholders); i++)
                assert_int_equal(strv_consume(&want_prot, path_join(ws, placeholders[i])), 0);
        _cleanup_free_ char *hooks_link = path_join(ws, ".git/hooks");
        assert_int_equal(strv_extend(&want_prot, grafts), 0);
        assert_int_equal(strv_extend(&want_prot, hooks_link), 0);
        assert_same_set(modal_prot, want_prot, "modal protected");
        for (size_t i = 11; i < ELEMENTSOF(rel); i++) {
                _cleanup_free_ char *m = path_join(ws, rel[i]);
                if (strv_contains(uploaded, m))
                        fail_msg("modal uploads the masked %s", m);
        }
        _cleanup_free_ char *head = path_join(ws, ".git/HEAD"), *masked_link = path_join(ws, "link.pem");
        assert_true(strv_contains(uploaded, head));
        assert_false(strv_contains(uploaded, masked_link));
        strv_free(want_prot);
        strv_free(uploaded);
        strv_free(modal_prot);
        json_decref(mf);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", rt);
        assert_int_equal(system(cmd), 0);

        /* The missing config got an empty placeholder on the host, sealed
         * like an existing one; commondir's says "." (git refuses an empty
         * one); the symlinked hooks are sealed at their target; .git is
         * pinned below the rw root. */
        _cleanup_free_ char *cfg = path_join(ws, ".git/config"), *git = path_join(ws, ".git");
        _cleanup_free_ char *cdir = path_join(ws, ".git/commondir");
        struct stat st;
        assert_int_equal(lstat(cfg, &st), 0);
        assert_true(S_ISREG(st.st_mode) && st.st_size == 0);
        char buf[8] = { 0 };
        int fd = open(cdir, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(read(fd, buf, sizeof buf - 1), 1);
        close(fd);
        assert_string_equal(buf, ".");
        bool cfg_seen = false, git_pinned = false;
        for (size_t i = 0; i < plan->n_mounts; i++) {
                const VsJailMount *m = &plan->mounts[i];
                if (streq(m->dest, cfg)) {
                        cfg_seen = true;
                        assert_int_equal(m->kind, VS_MOUNT_PROTECT);
                }
                git_pinned |= m->kind == VS_MOUNT_PIN && streq(m->dest, git);
        }
        assert_true(cfg_seen && git_pinned);
        /* The file tools refuse every one of them (the worker's list). */
        for (size_t i = 2; i < 11; i++) {
                _cleanup_free_ char *g = path_join(ws, rel[i]);
                assert_true(strv_contains(plan->protected_paths, g));
        }
        /* grafts too, though missing: the file tools do not create it. */
        assert_true(strv_contains(plan->protected_paths, grafts));

        backend_ssh_jail_done(&rj);
        json_decref(obj);
        free(hex);
        strv_free(rw);
        strv_free(ro);
        strv_free(remote);
        strv_free(rargv);
        jail_plan_free(rplan);
        strv_free(docker);
        strv_free(dargv);
        strv_free(local);
        strv_free(bargv);
        strv_free(planned);
        jail_plan_free(plan);
        strv_free(want);
        strv_free(prot);
        policy_free(p);
}

static void test_order(void **state) {
        VsPolicy *p = load();
        char **prot = NULL;
        assert_int_equal(config_protected_paths(p, &prot), 0);
        VsJailPlan *plan = plan_here(p, prot);
        /* Listed paths, then pins, then protected, then masks. */
        for (size_t i = 1; i < plan->n_mounts; i++) {
                int a = plan->mounts[i - 1].kind == VS_MOUNT_RO ? VS_MOUNT_RW : (int)plan->mounts[i - 1].kind;
                int b = plan->mounts[i].kind == VS_MOUNT_RO ? VS_MOUNT_RW : (int)plan->mounts[i].kind;
                assert_true(a <= b);
        }
        jail_plan_free(plan);
        strv_free(prot);
        policy_free(p);
}

/* The innermost-listed-path rule (jail_plan_seen_through): a read-only
 * path nested in a writable one, the workspace seen read-only for want of
 * a listed path over it, and what the jail does not see. */
static void test_seen_through(void **state) {
        VsPath rw[] = { { .resolved = (char *)"/w" } };
        VsPath ro[] = { { .resolved = (char *)"/w/docs" }, { .resolved = (char *)"/w/docs/drafts/more" } };
        VsPolicy p = { .workspace = (char *)"/w", .rw_paths = rw, .n_rw = 1, .ro_paths = ro, .n_ro = 2 };
        bool wr = false;
        assert_string_equal(jail_plan_seen_through(&p, "/w/src/a.c", &wr), "/w");
        assert_true(wr);
        assert_string_equal(jail_plan_seen_through(&p, "/w/docs/x", &wr), "/w/docs");
        assert_false(wr);
        assert_string_equal(jail_plan_seen_through(&p, "/w/docs/drafts/more/y", &wr), "/w/docs/drafts/more");
        assert_false(wr);
        assert_null(jail_plan_seen_through(&p, "/wx/a", &wr));
        assert_false(wr);
        /* Only a subdirectory listed: the workspace is seen read-only. */
        VsPath sub[] = { { .resolved = (char *)"/w/out" } };
        VsPolicy q = { .workspace = (char *)"/w", .rw_paths = sub, .n_rw = 1 };
        assert_string_equal(jail_plan_seen_through(&q, "/w/src", &wr), "/w");
        assert_false(wr);
        assert_string_equal(jail_plan_seen_through(&q, "/w/out/b", &wr), "/w/out");
        assert_true(wr);
        /* At equal length the read-only one wins. */
        VsPolicy both = { .workspace = (char *)"/w", .rw_paths = rw, .n_rw = 1, .ro_paths = rw, .n_ro = 1 };
        assert_string_equal(jail_plan_seen_through(&both, "/w/a", &wr), "/w");
        assert_false(wr);
}

static void test_symlink_target_outside_not_exposed(void **state) {
        /* A .git/hooks leading out of every listed path: the jail does not
         * see the target, so the plan must not mount it in. */
        VsPolicy *p = load();
        char *prot[] = { (char *)"/etc", NULL };
        VsJailFacts f = { .protected_existing = prot };
        VsJailPlan *plan = NULL;
        assert_int_equal(jail_plan_build(p, prot, &f, "/e/file", "/e/dir", NULL, &plan), 0);
        for (size_t i = 0; i < plan->n_mounts; i++)
                assert_string_not_equal(plan->mounts[i].dest, "/etc");
        jail_plan_free(plan);
        policy_free(p);
}

/* The ssh launcher resolves the listed paths on the remote by the daemon
 * host's rule: a symlink the remote jail could have made in its workspace
 * (or in a writable listed path) is never followed; one the remote host
 * owns elsewhere is. */
static void test_remote_listed_link_refused(void **state) {
        char tmpl[] = "/tmp/vs-jail-plan-remote-XXXXXX";
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        char rws[512], sec[512], link[512], alias[512];
        snprintf(rws, sizeof rws, "%s/rws", d);
        snprintf(sec, sizeof sec, "%s/secret", d);
        snprintf(link, sizeof link, "%s/rws/build", d);
        snprintf(alias, sizeof alias, "%s/alias", d);
        assert_int_equal(mkdir(rws, 0755), 0);
        assert_int_equal(mkdir(sec, 0755), 0);
        assert_int_equal(symlink(sec, link), 0);
        assert_int_equal(symlink(sec, alias), 0);
        char *rw[] = { rws, link, NULL }, *ro[] = { link, NULL }, *none[] = { NULL };
        char *lists[][2] = { { (char *)"rw", NULL }, { (char *)"ro", NULL } };
        for (size_t k = 0; k < ELEMENTSOF(lists); k++) {
                char *only_ws[] = { rws, NULL };
                VsRemoteJail j = { .workspace = rws, .rw = k ? only_ws : rw, .ro = k ? ro : none, .mask = none,
                                   .protected_paths = none, .protect = none, .env = none };
                VsJailPlan *plan = NULL;
                VsError *err = NULL;
                assert_true(jail_plan_remote(&j, "/e/file", "/e/dir", &plan, &err) < 0);
                assert_non_null(strstr(vs_error_message(err), "goes through the symlink"));
                assert_non_null(strstr(vs_error_message(err), link));
                vs_error_free(err);
        }
        /* The remote's own link, outside the workspace, is followed. */
        char *only_ws[] = { rws, NULL }, *ro_alias[] = { alias, NULL };
        VsRemoteJail j = { .workspace = rws, .rw = only_ws, .ro = ro_alias, .mask = none, .protected_paths = none,
                           .protect = none, .env = none };
        VsJailPlan *plan = NULL;
        VsError *err = NULL;
        if (jail_plan_remote(&j, "/e/file", "/e/dir", &plan, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        bool bound = false;
        for (size_t i = 0; i < plan->n_mounts; i++)
                bound = bound || (plan->mounts[i].src && streq(plan->mounts[i].src, sec));
        assert_true(bound);
        jail_plan_free(plan);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", d);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_same_sealed_set_everywhere),
                cmocka_unit_test(test_placeholders_in_one_batch),
                cmocka_unit_test(test_order),
                cmocka_unit_test(test_seen_through),
                cmocka_unit_test(test_symlink_target_outside_not_exposed),
                cmocka_unit_test(test_remote_listed_link_refused),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
