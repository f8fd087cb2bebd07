/* SPDX-License-Identifier: MIT */
/* The worker's path policy (src/worker/resolve.c) on arbitrary paths,
 * against a fixed tree made once in a temp directory: a workspace with
 * masked names, a masked directory, a protected directory, links that leave
 * it, lead onto masked or protected names or loop, and a read-only root
 * beside it. The first byte picks the flags (PATH_WRITE, PATH_FOLLOW_FINAL;
 * never PATH_CREATE_PARENTS, which would grow the tree); the rest is the
 * path. Properties of every path that resolves: it lies below a root the
 * policy lists (below the writable one for a write), it is neither masked
 * nor below a masked directory, a write never lands on or below a protected
 * path, and resolving the result again gives the same result. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glob.h"
#include "mask-walk.h"
#include "path-util.h"
#include "worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];
static char *ws, *ro, *hooks;
static Policy policy;
static VsGlobSet *masks; /* the oracle: the same patterns, compiled here */
static bool ready;

static void cleanup(void) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        (void) !system(cmd);
}

static void make(const char *rel, const char *link_target, bool dir) {
        char *p = path_join(root, rel);
        if (!p)
                abort();
        int r = link_target ? symlink(link_target, p) : dir ? mkdir(p, 0755) : close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        if (r < 0)
                abort();
        free(p);
}

static void setup(void) {
        strcpy(root, "/tmp/vs-fuzz-resolve-XXXXXX");
        if (!mkdtemp(root))
                abort();
        atexit(cleanup);
        const char *dirs[] = { "ws", "ro", "outside", "ws/sub", "ws/secrets", "ws/.git", "ws/.git/hooks", "ro/d" };
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
                make(dirs[i], NULL, true);
        const char *files[] = { "ws/a.txt", "ws/.env", "ws/sub/.env", "ws/secrets/key", "ws/.git/hooks/pre-commit",
                                "ro/doc", "ro/d/.env", "outside/secret" };
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
                make(files[i], NULL, false);
        make("ws/good", "a.txt", false);
        make("ws/up", "../outside/secret", false);
        make("ws/etc", "/etc", false);
        make("ws/alias", ".env", false);
        make("ws/hooklink", ".git/hooks", false);
        make("ws/sub/back", "..", false);
        make("ws/loop1", "loop2", false);
        make("ws/loop2", "loop1", false);
        make("ws/toro", "../ro/d", false);
        ws = path_join(root, "ws");
        ro = path_join(root, "ro");
        hooks = path_join(root, "ws/.git/hooks");
        char *rw[] = { ws, NULL }, *ros[] = { ro, NULL }, *prot[] = { hooks, NULL };
        char *mask[] = { (char *) ".env", (char *) "/secrets/", NULL }, *protect[] = { (char *) ".envrc", NULL };
        ProtocolInit init = { .mode = PROTOCOL_MODE_JAIL, .workspace = ws, .rw_paths = rw, .ro_paths = ros,
                              .mask = mask, .protected_paths = prot, .protect = protect };
        if (policy_init(&policy, &init, NULL) < 0 || mask_set_compile(mask, "mask", &masks, NULL) < 0)
                abort();
        ready = true;
}

static bool below(const char *path, const char *dir) {
        return path_startswith(path, dir) != NULL;
}

static void check(const char *path, unsigned flags) {
        Resolved r = RESOLVED_INIT;
        VsError *err = NULL;
        int k = resolve_path(&policy, path, flags, &r, &err);
        if (k < 0) {
                /* A denial says so; nothing is held. */
                if (k == -EACCES && !streq(vs_error_kind(err) ?: "", "denied"))
                        __builtin_trap();
                if (r.dir_fd >= 0 || r.path)
                        __builtin_trap();
                vs_error_free(err);
                return;
        }
        if (r.dir_fd < 0 || !r.path || !r.name)
                __builtin_trap();
        if (!below(r.path, ws) && !below(r.path, ro))
                __builtin_trap(); /* out of every root */
        if ((flags & PATH_WRITE) && (!below(r.path, ws) || below(r.path, hooks)))
                __builtin_trap(); /* a write to a read-only root or a protected path */
        struct stat st;
        bool is_dir = r.exists && fstatat(r.dir_fd, r.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        const char *rel = path_startswith(r.path, ws) ?: path_startswith(r.path, ro);
        if (rel && *rel && glob_set_masks(masks, rel, is_dir))
                __builtin_trap(); /* masked, or below a masked directory */
        /* Idempotent: the result names itself. */
        Resolved again = RESOLVED_INIT;
        if (resolve_path(&policy, r.path, flags, &again, NULL) < 0 || !streq(again.path, r.path))
                __builtin_trap();
        resolved_done(&again);
        resolved_done(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!ready)
                setup();
        if (size < 1 || size > 8192)
                return 0;
        unsigned flags = (data[0] & 1 ? PATH_WRITE : 0) | (data[0] & 2 ? PATH_FOLLOW_FINAL : 0);
        char *path = strndup((const char *) data + 1, size - 1);
        if (!path)
                return 0;
        check(path, flags);
        free(path);
        return 0;
}
