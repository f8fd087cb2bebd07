/* SPDX-License-Identifier: MIT */
/* Protected names that do not exist yet (src/shared/plan/protect-absent.c) and
 * the protect walk through symlinked directories (mask_walk_links): which
 * globs name a path that can be made, what stands in for each, made where
 * missing and never through a symlink or over something there already. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk-maker.h"
#include "host-make.h"
#include "mask-walk.h"
#include "path-util.h"
#include "protect-absent.h"
#include "strv.h"

static char ws[128];

static int setup(void **state) {
        (void)state;
        snprintf(ws, sizeof ws, "/tmp/vs-protect-absent-XXXXXX");
        return mkdtemp(ws) ? 0 : -1;
}

static int teardown(void **state) {
        (void)state;
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
        return system(cmd);
}

static void assert_literal(const char *glob, const char *want) {
        char *got = NULL;
        assert_int_equal(protect_literal(glob, &got), 0);
        if (!want)
                assert_null(got);
        else {
                assert_non_null(got);
                assert_string_equal(got, want);
        }
        free(got);
}

static void test_literal(void **state) {
        (void)state;
        assert_literal(".envrc", ".envrc");
        assert_literal("**/.vscode", ".vscode");
        assert_literal("/a/b", "a/b");
        assert_literal("a/b/", "a/b");
        assert_literal("**/.vscode/*.json", NULL);
        assert_literal("*.sh", NULL);
        assert_literal("a/[bc]", NULL);
        assert_literal("**/x/**", NULL);
        assert_literal("a/../b", NULL);
}

static void test_kind(void **state) {
        (void)state;
        const char *content = "unset";
        assert_int_equal(protect_absent_kind(".envrc", &content), VS_ABSENT_DIR);
        assert_int_equal(protect_absent_kind(".mcp.json", &content), VS_ABSENT_FILE);
        assert_string_equal(content, "{\"mcpServers\":{}}\n");
        assert_int_equal(protect_absent_kind(".gitmodules", &content), VS_ABSENT_FILE);
        assert_string_equal(content, "");
        assert_int_equal(protect_absent_kind(".vscode", &content), VS_ABSENT_DIR);
        assert_int_equal(protect_absent_kind(".idea", &content), VS_ABSENT_REPORT);
        /* A default name below a directory of the user's glob. */
        assert_int_equal(protect_absent_kind("tools/mise.toml", &content), VS_ABSENT_FILE);
        /* A name of the user's own: an empty directory. */
        assert_int_equal(protect_absent_kind("Makefile", &content), VS_ABSENT_DIR);
        assert_null(content);
        /* Every default row has a reason, and a file row its content. */
        for (size_t i = 0; i < VS_N_PROTECT_DEFAULTS; i++) {
                assert_non_null(VS_PROTECT_DEFAULTS[i].reason);
                assert_true(VS_PROTECT_DEFAULTS[i].absent != VS_ABSENT_FILE || VS_PROTECT_DEFAULTS[i].content);
                assert_string_equal(VS_PROTECT_DEFAULT[i], VS_PROTECT_DEFAULTS[i].glob);
        }
        assert_null(VS_PROTECT_DEFAULT[VS_N_PROTECT_DEFAULTS]);
}

static char *at(const char *rel) {
        static char p[512];
        snprintf(p, sizeof p, "%s/%s", ws, rel);
        return p;
}

/* The links on a protected name's way, read below the root: a dangling
 * one and one on the way lead where its placeholder is made; out of the
 * root, climbing after a name, or a loop: nothing. */
static void test_resolve(void **state) {
        (void)state;
        char *res = NULL, **links = NULL;
        struct stat st;
        assert_int_equal(mkdir(at("rcfg"), 0755), 0);
        assert_int_equal(symlink("rcfg/envrc", at("r-envrc")), 0);
        assert_int_equal(protect_absent_resolve(ws, "r-envrc", &res, &links), 1);
        assert_string_equal(res, "rcfg/envrc");
        assert_non_null(links);
        assert_string_equal(links[0], at("r-envrc"));
        assert_null(links[1]);
        free(res);
        strv_free(links);
        links = NULL;
        /* Made there by protect_absent_make, the link left as it is. */
        assert_int_equal(protect_absent_make(ws, "r-envrc", VS_ABSENT_DIR, NULL, NULL), 1);
        assert_int_equal(lstat(at("rcfg/envrc"), &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(lstat(at("r-envrc"), &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        /* A link on the way, then one in its target's tree; ".." at the
         * start of a text read from a real directory. */
        assert_int_equal(mkdir(at("rreal"), 0755), 0);
        assert_int_equal(symlink("rreal", at("rsub")), 0);
        assert_int_equal(mkdir(at("rreal/in"), 0755), 0);
        assert_int_equal(symlink("../../rcfg/x.json", at("rreal/in/m.json")), 0);
        assert_int_equal(protect_absent_resolve(ws, "rsub/in/m.json", &res, &links), 1);
        assert_string_equal(res, "rcfg/x.json");
        assert_string_equal(links[0], at("rsub"));
        assert_string_equal(links[1], at("rreal/in/m.json"));
        free(res);
        strv_free(links);
        /* No link: rel itself, whatever stands there. */
        assert_int_equal(protect_absent_resolve(ws, "nothing/here", &res, NULL), 1);
        assert_string_equal(res, "nothing/here");
        free(res);
        /* Out of the root (absolute or climbing: where it leads, for the
         * caller to weigh), onto the root, climbing after a name (what it
         * climbs from may be a link), a loop; protect_absent_make makes
         * nothing for any, and each link read is noted. */
        assert_int_equal(symlink("/etc/passwd", at("r-abs")), 0);
        assert_int_equal(symlink("../elsewhere", at("r-up")), 0);
        assert_int_equal(symlink(".", at("r-dot")), 0);
        assert_int_equal(symlink("rsub/../rcfg/y", at("r-mid")), 0);
        assert_int_equal(symlink("r-loop", at("r-loop")), 0);
        static const struct {
                const char *name;
                int r;
        } odd[] = { { "r-abs", -EXDEV }, { "r-up", -EXDEV }, { "r-dot", 0 }, { "r-mid", -ELOOP }, { "r-loop", -ELOOP } };
        for (size_t i = 0; i < ELEMENTSOF(odd); i++) {
                res = NULL;
                links = NULL;
                assert_int_equal(protect_absent_resolve(ws, odd[i].name, &res, &links), odd[i].r);
                assert_non_null(links);
                assert_string_equal(links[0], at(odd[i].name));
                if (odd[i].r == -EXDEV)
                        assert_true(res && res[0] == '/' && !path_startswith(res, ws));
                else
                        assert_null(res);
                free(res);
                strv_free(links);
                assert_int_equal(protect_absent_make(ws, odd[i].name, VS_ABSENT_DIR, NULL, NULL), 0);
        }
        /* An absolute text below the root is read as its place there. */
        char abs[300];
        snprintf(abs, sizeof abs, "%s/rcfg/abs", ws);
        assert_int_equal(symlink(abs, at("r-inabs")), 0);
        assert_int_equal(protect_absent_resolve(ws, "r-inabs", &res, NULL), 1);
        assert_string_equal(res, "rcfg/abs");
        free(res);
}

static void test_make(void **state) {
        (void)state;
        struct stat st;
        assert_int_equal(protect_absent_make(ws, ".envrc", VS_ABSENT_DIR, NULL, NULL), 1);
        assert_int_equal(lstat(at(".envrc"), &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(protect_absent_make(ws, ".envrc", VS_ABSENT_DIR, NULL, NULL), 0); /* there already */
        assert_int_equal(protect_absent_make(ws, ".mcp.json", VS_ABSENT_FILE, "{}\n", NULL), 1);
        char buf[16] = { 0 };
        int fd = open(at(".mcp.json"), O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(read(fd, buf, sizeof buf - 1), 3);
        close(fd);
        assert_string_equal(buf, "{}\n");
        /* A file there already is left as it is, whatever the kind. */
        assert_int_equal(protect_absent_make(ws, ".mcp.json", VS_ABSENT_DIR, NULL, NULL), 0);
        /* Missing parents are made (plain directories), then the name. */
        assert_int_equal(protect_absent_make(ws, "scripts/deploy/run.sh", VS_ABSENT_DIR, NULL, NULL), 1);
        assert_int_equal(lstat(at("scripts/deploy/run.sh"), &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        /* Never through a symlink: nothing is made where it leads. */
        char out[256];
        snprintf(out, sizeof out, "%s-out", ws);
        assert_int_equal(mkdir(out, 0755), 0);
        assert_int_equal(symlink(out, at("link")), 0);
        assert_int_equal(protect_absent_make(ws, "link/.envrc", VS_ABSENT_DIR, NULL, NULL), 0);
        char leaked[300];
        snprintf(leaked, sizeof leaked, "%s/.envrc", out);
        assert_int_equal(access(leaked, F_OK), -1);
        assert_int_equal(symlink(out, at(".codex")), 0);
        assert_int_equal(protect_absent_make(ws, ".codex", VS_ABSENT_DIR, NULL, NULL), 0);
        assert_int_equal(lstat(at(".codex"), &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        rmdir(out);
        /* Below a file: nothing. */
        assert_int_equal(protect_absent_make(ws, ".mcp.json/x", VS_ABSENT_DIR, NULL, NULL), 0);
        assert_int_equal(protect_absent_make(ws, ".idea", VS_ABSENT_REPORT, NULL, NULL), 0);
        assert_int_equal(access(at(".idea"), F_OK), -1);
}

/* A maker that records what it was asked (host-make.h). */
static char asked_rel[256];
static unsigned asked_flags;
static int asked_text = -1, asked_n;
static int record_make(void *userdata, const char *rel, unsigned flags, VsHostText text, VsError **err) {
        (void)err;
        snprintf(asked_rel, sizeof asked_rel, "%s", rel);
        asked_flags = flags;
        asked_text = (int)text;
        asked_n++;
        return *(int *)userdata;
}

/* With a maker set for the thread (a root daemon's server: the monitor's
 * placeholder), what lies below its workspace is asked of it, by a text
 * of the table, never made here; what lies elsewhere is made here; a
 * symlink or a file on the way is "nothing to make", as here. Every text
 * a default row or a git control file holds is in the table (else the
 * server could not ask for it). */
static void test_make_by_maker(void **state) {
        (void)state;
        for (size_t i = 0; i < VS_N_PROTECT_DEFAULTS; i++)
                if (VS_PROTECT_DEFAULTS[i].absent == VS_ABSENT_FILE)
                        assert_true(host_text_index(VS_PROTECT_DEFAULTS[i].content) >= 0);
        assert_int_equal(host_text_index("."), VS_HOST_TEXT_DOT);
        assert_int_equal(host_text_index(NULL), VS_HOST_TEXT_EMPTY);
        assert_int_equal(host_text_index("{}\n"), -1);
        int result = 1;
        VsHostMaker m = { .workspace = ws, .make = record_make, .userdata = &result };
        asked_n = 0;
        assert_int_equal(protect_absent_make(ws, "sub/.mcp.json", VS_ABSENT_FILE, "{\"mcpServers\":{}}\n", &m), 1);
        assert_string_equal(asked_rel, "sub/.mcp.json");
        assert_int_equal(asked_flags, VS_HOST_MAKE_PARENTS);
        assert_int_equal(asked_text, VS_HOST_TEXT_MCP);
        assert_int_equal(access(at("sub"), F_OK), -1); /* not made here */
        assert_int_equal(protect_absent_make(ws, ".claude", VS_ABSENT_DIR, NULL, &m), 1);
        assert_int_equal(asked_flags, VS_HOST_MAKE_PARENTS | VS_HOST_MAKE_DIR);
        /* There already: not asked (every start after the first). */
        assert_int_equal(mkdir(at(".cursor"), 0755), 0);
        assert_int_equal(protect_absent_make(ws, ".cursor", VS_ABSENT_DIR, NULL, &m), 0);
        assert_int_equal(asked_n, 2);
        /* A text the table lacks is never sent as bytes. */
        assert_int_equal(protect_absent_make(ws, "x.json", VS_ABSENT_FILE, "{}\n", &m), -EINVAL);
        assert_int_equal(asked_n, 2);
        result = -ELOOP;
        assert_int_equal(protect_absent_make(ws, "link/.envrc", VS_ABSENT_DIR, NULL, &m), 0);
        result = -EPERM;
        assert_int_equal(protect_absent_make(ws, ".envrc2", VS_ABSENT_DIR, NULL, &m), -EPERM);
        /* Elsewhere (a writable root outside the workspace): made here. */
        char out[256];
        snprintf(out, sizeof out, "%s-else", ws);
        assert_int_equal(mkdir(out, 0755), 0);
        int n = asked_n;
        assert_int_equal(protect_absent_make(out, ".envrc", VS_ABSENT_DIR, NULL, &m), 1);
        assert_int_equal(asked_n, n);
        char made[300];
        snprintf(made, sizeof made, "%s/.envrc", out);
        assert_int_equal(rmdir(made), 0);
        assert_int_equal(rmdir(out), 0);
        /* No maker: made here. */
        assert_int_equal(protect_absent_make(ws, "sub2/.envrc", VS_ABSENT_DIR, NULL, NULL), 1);
        assert_int_equal(asked_n, n);
        assert_int_equal(access(at("sub2/.envrc"), F_OK), 0);
}

static void test_fill(void **state) {
        (void)state;
        char root[200];
        snprintf(root, sizeof root, "%s/fill", ws);
        assert_int_equal(mkdir(root, 0755), 0);
        char *protect[] = { (char *)".envrc", (char *)"**/.vscode", (char *)"**/*.sh", (char *)".idea",
                            (char *)"docs/Makefile", NULL };
        VsPath rw = { .written = (char *)".", .resolved = root };
        VsPolicy p = { .workspace = root, .sandboxed = true, .rw_paths = &rw, .n_rw = 1, .protect = protect };
        char **sealed = NULL;
        assert_int_equal(protect_absent_fill(&p, NULL, NULL, 0, &sealed, NULL, NULL, NULL), 0);
        assert_int_equal(strv_length(sealed), 0);
        strv_free(sealed);
        struct stat st;
        assert_int_equal(lstat(at("fill/.envrc"), &st), 0);
        assert_int_equal(lstat(at("fill/.vscode"), &st), 0);
        assert_int_equal(lstat(at("fill/docs/Makefile"), &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(access(at("fill/.idea"), F_OK), -1);

        /* A file of the user's list in a tool's directory: the directory is
         * sealed whole, made where missing (but .idea), never a placeholder
         * named tasks.json. */
        char *mine[] = { (char *)".vscode/tasks.json", (char *)"sub/.claude/settings.json", (char *)".idea/x.xml",
                         (char *)".cursor/mcp.json", NULL };
        assert_int_equal(mkdir(at("fill/.cursor"), 0755), 0);
        p.protect = mine;
        assert_int_equal(protect_absent_fill(&p, NULL, NULL, 0, &sealed, NULL, NULL, NULL), 0);
        assert_int_equal(strv_length(sealed), 3);
        assert_true(strv_contains(sealed, at("fill/.vscode")));
        assert_true(strv_contains(sealed, at("fill/sub/.claude")));
        assert_true(strv_contains(sealed, at("fill/.cursor")));
        assert_int_equal(access(at("fill/.vscode/tasks.json"), F_OK), -1);
        assert_int_equal(access(at("fill/sub/.claude/settings.json"), F_OK), -1);
        assert_int_equal(access(at("fill/.idea"), F_OK), -1);
        strv_free(sealed);
}

/* A maker that takes a batch (a root daemon's monitor: one child for
 * them all) is asked once for every placeholder a start makes, and the
 * result is what one request each makes: the same entries, the same
 * sealed and missing lists; a batch that fails part way leaves the rest
 * to one request each; nothing missing, nothing asked. */
static void test_fill_batch(void **state) {
        (void)state;
        char *protect[] = { (char *)".envrc", (char *)"**/.vscode", (char *)".mcp.json", (char *)"docs/Makefile",
                            (char *)".claude/settings.json", (char *)"sub/.cursor/mcp.json", NULL };
        char roots[3][200];
        char **sealed[3] = {}, **missing[3] = {};
        for (int k = 0; k < 3; k++) {
                snprintf(roots[k], sizeof roots[k], "%s/batch%d", ws, k);
                assert_int_equal(mkdir(roots[k], 0755), 0);
                VsPath rw = { .written = (char *)".", .resolved = roots[k] };
                VsPolicy p = { .workspace = roots[k], .sandboxed = true, .rw_paths = &rw, .n_rw = 1, .protect = protect };
                /* 0: one request each; 1: a batch; 2: a batch failing at its third. */
                VsHostMaker m = { .workspace = roots[k], .make = disk_make, .make_many = k ? disk_make_many : NULL,
                                  .userdata = roots[k] };
                made_one = batches = batch_items = 0;
                batch_fail_at = k == 2 ? 2 : -1;
                assert_int_equal(protect_absent_fill(&p, &m, NULL, 0, &sealed[k], &missing[k], NULL, NULL), 0);
                if (k == 0)
                        assert_int_equal(made_one, 6);
                if (k == 1) {
                        assert_int_equal(batches, 1);
                        assert_int_equal(batch_items, 6);
                        assert_int_equal(made_one, 0);
                }
                if (k == 2) {
                        assert_int_equal(batches, 1);
                        assert_int_equal(made_one, 4); /* the four the batch did not make */
                }
                /* Every start after: nothing asked. */
                made_one = batches = 0;
                char **again = NULL;
                assert_int_equal(protect_absent_fill(&p, &m, NULL, 0, &again, NULL, NULL, NULL), 0);
                assert_int_equal(made_one + batches, 0);
                assert_int_equal(strv_length(again), strv_length(sealed[k]));
                strv_free(again);
        }
        const char *entries[] = { ".envrc", ".vscode", ".mcp.json", "docs/Makefile", ".claude", "sub/.cursor", NULL };
        for (int k = 0; k < 3; k++) {
                for (size_t i = 0; entries[i]; i++) {
                        char p[800];
                        struct stat st;
                        snprintf(p, sizeof p, "%s/%s", roots[k], entries[i]);
                        assert_int_equal(lstat(p, &st), 0);
                }
                assert_int_equal(strv_length(sealed[k]), 2); /* .claude and sub/.cursor */
                assert_int_equal(strv_length(missing[k]), 6);
                for (size_t i = 0; missing[0][i]; i++) {
                        const char *rel = missing[0][i] + strlen(roots[0]);
                        char want[800];
                        snprintf(want, sizeof want, "%s%s", roots[k], rel);
                        assert_true(strv_contains(missing[k], want));
                }
        }
        for (int k = 0; k < 3; k++) {
                strv_free(sealed[k]);
                strv_free(missing[k]);
        }
}

static void test_walk_links(void **state) {
        (void)state;
        char root[200];
        snprintf(root, sizeof root, "%s/links", ws);
        assert_int_equal(mkdir(root, 0755), 0);
        assert_int_equal(mkdir(at("links/shared-vscode"), 0755), 0);
        int fd = open(at("links/shared-vscode/tasks.json"), O_CREAT | O_WRONLY, 0644);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(symlink("shared-vscode", at("links/.vscode")), 0);
        assert_int_equal(symlink(".", at("links/loop")), 0);
        assert_int_equal(symlink("/etc", at("links/out")), 0);
        char *pat[] = { (char *)"**/.vscode/tasks.json", NULL };
        VsGlobSet *set = NULL;
        assert_int_equal(mask_set_compile(pat, "protect", &set, NULL), 0);
        MaskList plain = { 0 }, linked = { 0 };
        assert_int_equal(mask_walk(root, set, &plain, NULL), 0);
        /* A plain walk follows no link; one whose name leads matches below
         * it (.vscode) is reported as the link (its target is masked whole
         * where masks are meant: jail-facts.c, mask_link_target). */
        assert_int_equal(plain.n, 1);
        assert_string_equal(plain.items[0].relpath, ".vscode");
        assert_int_equal(plain.items[0].kind, MASK_SYMLINK);
        assert_int_equal(mask_walk_links(root, set, NULL, &linked, NULL), 0);
        assert_int_equal(linked.n, 1);
        assert_string_equal(linked.items[0].relpath, ".vscode/tasks.json");
        mask_list_done(&plain);
        mask_list_done(&linked);
        /* A link into another root the jail sees (rw_paths = [".", "~/shared"]). */
        char other[200];
        snprintf(other, sizeof other, "%s/other-root", ws);
        assert_int_equal(mkdir(other, 0755), 0);
        assert_int_equal(mkdir(at("other-root/vsc"), 0755), 0);
        fd = open(at("other-root/vsc/tasks.json"), O_CREAT | O_WRONLY, 0644);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(unlink(at("links/.vscode")), 0);
        char target[300];
        snprintf(target, sizeof target, "%s/vsc", other);
        assert_int_equal(symlink(target, at("links/.vscode")), 0);
        assert_int_equal(mask_walk_links(root, set, NULL, &linked, NULL), 0);
        assert_int_equal(linked.n, 0); /* not a root it may lead into */
        char *also[] = { root, other, NULL };
        assert_int_equal(mask_walk_links(root, set, also, &linked, NULL), 0);
        assert_int_equal(linked.n, 1);
        assert_string_equal(linked.items[0].relpath, ".vscode/tasks.json");
        mask_list_done(&linked);
        glob_set_free(set);
        /* A pattern for directories only names the link to one. */
        char *dirpat[] = { (char *)".vscode/", NULL };
        assert_int_equal(mask_set_compile(dirpat, "protect", &set, NULL), 0);
        assert_int_equal(mask_walk_links(root, set, NULL, &linked, NULL), 0);
        assert_int_equal(linked.n, 1);
        assert_string_equal(linked.items[0].relpath, ".vscode");
        assert_int_equal(linked.items[0].kind, MASK_SYMLINK);
        mask_list_done(&linked);
        glob_set_free(set);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_literal),    cmocka_unit_test(test_kind),       cmocka_unit_test(test_make),
                cmocka_unit_test(test_resolve),
                cmocka_unit_test(test_fill),       cmocka_unit_test(test_walk_links),
                cmocka_unit_test(test_make_by_maker), cmocka_unit_test(test_fill_batch),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
