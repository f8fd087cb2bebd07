/* SPDX-License-Identifier: MIT */
#include "approval.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "json-util.h"
#include "path-util.h"
#include "paths.h"
#include "policy-compare.h"
#include "secret-store.h"
#include "sha256.h"
#include "strv.h"
#include "time-util.h"

#define ENTRY_MAX_SIZE (1u << 20)
#define SYSTEM_STORE "/var/lib/vectora-sandbox"

/* ---- where the store lives ---- */

static int mkdir_private(const char *d, VsError **err) {
        if (mkdir(d, 0700) < 0 && errno != EEXIST)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create %s: %m", d);
        struct stat st;
        /* Another user must not own or write it: it decides what runs unsandboxed. */
        if (lstat(d, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
                return vs_error_set_kind(err, -EPERM, "sandbox_unavailable",
                                         "%s is not a directory owned by uid %u and writable only by it; remove it", d,
                                         (unsigned)geteuid());
        return 0;
}

static bool usable_dir(const char *d) {
        struct stat st;
        return d && d[0] == '/' && stat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid();
}

int approval_store_dir(const char *dir, char **ret, VsError **err) {
        _cleanup_free_ char *d = NULL;
        const char *e = dir ? dir : getenv("VECTORA_SANDBOX_STATE_DIR");
        const char *home = getenv("HOME"), *xdg = getenv("XDG_STATE_HOME");
        if (e && *e) {
                if (e[0] != '/')
                        return vs_error_set_kind(err, -EINVAL, "sandbox_unavailable",
                                                 "the state directory must be an absolute path, not '%s'", e);
                d = strdup(e);
        } else if (geteuid() == 0)
                d = strdup(SYSTEM_STORE);
        else if (usable_dir(xdg))
                d = path_join(xdg, "vectora-sandbox");
        else if (usable_dir(home)) {
                _cleanup_free_ char *local = path_join(home, ".local"), *state = path_join(home, ".local/state");
                if (!local || !state)
                        return -ENOMEM;
                if ((mkdir(local, 0700) < 0 && errno != EEXIST) || (mkdir(state, 0700) < 0 && errno != EEXIST))
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create %s: %m", state);
                d = path_join(state, "vectora-sandbox");
        } else {
                _cleanup_free_ char *rt = NULL;
                int r = vs_runtime_dir(&rt, err);
                if (r < 0)
                        return r;
                d = path_join(rt, "state");
        }
        if (!d)
                return -ENOMEM;
        int r = mkdir_private(d, err);
        if (r < 0)
                return r;
        /* The system store is one source of truth for users too: their CLI
         * and MCP server (embedded) read an entry of it by name, as the
         * daemon reads theirs (other_store_entry()); nobody lists it. */
        if (streq(d, SYSTEM_STORE) && geteuid() == 0)
                (void)chmod(d, 0711);
        *ret = TAKE_PTR(d);
        return 0;
}

/* ---- entries: STORE/approved-SHA256(root).toml, the approved text ---- */

static char *entry_path(const char *store, const char *root) {
        char hex[SHA256_HEX_LEN + 1], name[SHA256_HEX_LEN + 32];
        sha256_hex(root, strlen(root), hex);
        snprintf(name, sizeof name, "approved-%s.toml", hex);
        return path_join(store, name);
}

static bool entry_exists(const char *store, const char *root) {
        _cleanup_free_ char *p = entry_path(store, root);
        struct stat st;
        return p && lstat(p, &st) == 0;
}

/* -ENOENT when the workspace has no entry. */
static int entry_read(const char *store, const char *root, char **ret, size_t *ret_len, VsError **err) {
        _cleanup_free_ char *p = entry_path(store, root);
        if (!p)
                return -ENOMEM;
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT)
                return -ENOENT;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return vs_error_set_kind(err, fd < 0 ? -errno : -EINVAL, "sandbox_unavailable",
                                         "the approved policy of %s (%s) cannot be read; remove that file and run "
                                         "vectora-sandbox allow -w %s",
                                         root, p, root);
        int r = read_fd_all(fd, ENTRY_MAX_SIZE, ret, ret_len);
        if (r < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "reading %s: %s", p, strerror(-r));
        return 0;
}

/* Atomically: a temp file, fsync, rename, fsync of the directory (with
 * sync false: the temp file and the rename only, approval_sync() makes them
 * durable later). The temp name is this writer's own: two processes recording the same workspace at
 * once (two embedded calls starting together) must not share one, or the
 * second rename finds it gone. */
static char *index_path(const char *store, const char *root);
static bool dir_birth(const char *dir, char out[static 64]);

/* STORE/approved-SHA256(root).paths: what each listed path of the approved
 * policy resolved to when it was approved. A listed path that resolves
 * elsewhere now (a host symlink re-pointed) is a loosening like a new path
 * (paths_changed()). Written before the entry, atomically; an entry
 * without one (older stores) is compared as before. */
static char *paths_path(const char *store, const char *root) {
        _cleanup_free_ char *e = entry_path(store, root);
        char *p = NULL;
        if (!e || asprintf(&p, "%.*s.paths", (int)(strlen(e) - strlen(".toml")), e) < 0)
                return NULL;
        return p;
}

/* A path inside the workspace is recorded relative to it ("./sub"), so a
 * workspace moved whole keeps its record; others as they are. */
static char *resolved_form(const VsPolicy *p, const char *resolved) {
        const char *rel = resolved ? path_startswith(resolved, p->workspace) : NULL;
        char *s = NULL;
        if (!resolved)
                return NULL;
        if (!rel)
                return strdup(resolved);
        return asprintf(&s, "./%s", rel) < 0 ? NULL : s;
}

static json_t *resolved_json(const VsPolicy *p, const VsPath *vp) {
        _cleanup_free_ char *f = resolved_form(p, vp->resolved);
        return f ? json_string(f) : json_null();
}

static json_t *paths_of(const VsPolicy *p) {
        json_t *o = json_object();
        const VsPath *lists[2] = { p->rw_paths, p->ro_paths };
        size_t ns[2] = { p->n_rw, p->n_ro };
        const char *names[2] = { "rw_paths", "ro_paths" };
        for (int k = 0; o && k < 2; k++) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < ns[k]; i++)
                        if (json_array_append_new(a, json_pack("{s:s,s:o}", "written", lists[k][i].written, "resolved",
                                                               resolved_json(p, &lists[k][i]))) < 0) {
                                json_decref(a);
                                a = NULL;
                        }
                if (!a || json_object_set_new(o, names[k], a) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        return o;
}

static int paths_write(const char *store, const char *root, json_t *paths, bool sync, VsError **err) {
        if (!paths)
                return 0;
        _cleanup_free_ char *p = paths_path(store, root), *tmp = NULL, *text = json_dumps(paths, JSON_COMPACT);
        if (!p || !text || asprintf(&tmp, "%s.tmp.XXXXXX", p) < 0)
                return -ENOMEM;
        int r = 0;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0 || (r = write_all(fd, text, strlen(text))) < 0 || (sync && fsync(fd) < 0) || rename(tmp, p) < 0) {
                r = r < 0 ? r : -errno;
                if (fd >= 0)
                        unlink(tmp);
                return vs_error_set_kind(err, r, "sandbox_unavailable",
                                         "cannot record the approved paths of %s in %s: %s; fix the state directory", root,
                                         store, strerror(-r));
        }
        return 0;
}

static json_t *paths_read(const char *store, const char *root) {
        _cleanup_free_ char *p = paths_path(store, root), *text = NULL;
        size_t len = 0;
        _cleanup_close_ int fd = p ? open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK) : -EBADF;
        if (fd < 0 || read_fd_all(fd, ENTRY_MAX_SIZE, &text, &len) < 0)
                return NULL;
        return json_loadb(text, len, 0, NULL);
}

/* Each listed path of approved (resolved now) that the record says
 * resolved elsewhere when approved: a loosening, and left out of what
 * serves until allowed (a path not bound grants nothing). */
static int paths_changed(json_t *rec, VsPolicy *approved, char ***loose) {
        VsPath *lists[2] = { approved->rw_paths, approved->ro_paths };
        size_t ns[2] = { approved->n_rw, approved->n_ro };
        const char *names[2] = { "rw_paths", "ro_paths" };
        for (int k = 0; rec && k < 2; k++) {
                json_t *a = json_object_get(rec, names[k]);
                for (size_t i = 0; i < ns[k] && i < json_array_size(a); i++) {
                        json_t *e = json_array_get(a, i);
                        const char *w = json_string_value(json_object_get(e, "written"));
                        const char *was = json_string_value(json_object_get(e, "resolved"));
                        VsPath *vp = &lists[k][i];
                        _cleanup_free_ char *now = resolved_form(approved, vp->resolved);
                        if (!w || !streq(w, vp->written) || !was || !now || streq(was, now))
                                continue;
                        int r = strv_extendf(loose, "sandbox.%s[%zu] \"%s\" now resolves to %s (approved: %s)", names[k], i,
                                             vp->written, vp->resolved, was);
                        if (r < 0)
                                return r;
                        free(vp->lexical);
                        vp->lexical = TAKE_PTR(vp->resolved);
                        vp->missing = true;
                }
        }
        return 0;
}

static int entry_write(const char *store, const char *root, const char *text, size_t len, json_t *paths,
                       bool *unsynced, VsError **err) {
        bool sync = !unsynced;
        int k = paths_write(store, root, paths, sync, err);
        if (k < 0)
                return k;
        _cleanup_free_ char *p = entry_path(store, root), *tmp = NULL;
        if (!p || asprintf(&tmp, "%s.tmp.XXXXXX", p) < 0)
                return -ENOMEM;
        int r = 0;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        /* Readable by name in the system store (approval_store_dir()). */
        if (fd >= 0 && streq(store, SYSTEM_STORE))
                (void)fchmod(fd, 0644);
        if (fd < 0 || (r = write_all(fd, text ? text : "", len)) < 0 || (sync && fsync(fd) < 0) || rename(tmp, p) < 0) {
                r = r < 0 ? r : -errno;
                if (fd >= 0)
                        unlink(tmp);
                return vs_error_set_kind(err, r, "sandbox_unavailable",
                                         "cannot record the approved policy of %s in %s: %s; fix the state directory",
                                         root, store, strerror(-r));
        }
        /* Which root this directory had, so that a workspace moved or
         * renamed keeps its approval (moved_from()). Best effort: without
         * it a move is seen as new, as before. */
        _cleanup_free_ char *ip = index_path(store, root), *itmp = NULL, *line = NULL;
        _cleanup_close_ int ifd = -EBADF;
        char birth[64];
        if (ip && dir_birth(root, birth) && asprintf(&line, "%s\n%s", root, birth) >= 0 &&
            asprintf(&itmp, "%s.tmp.XXXXXX", ip) >= 0 && (ifd = mkostemp(itmp, O_CLOEXEC)) >= 0) {
                if (write_all(ifd, line, strlen(line)) < 0 || (sync && fsync(ifd) < 0) || rename(itmp, ip) < 0)
                        unlink(itmp);
        }
        if (unsynced) {
                *unsynced = true;
                return 0;
        }
        _cleanup_close_ int dfd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void)fsync(dfd);
        return 0;
}

/* fsync of the file at p when it is there; -errno of a failed fsync. */
static int sync_path(const char *p, bool must) {
        if (!p)
                return -ENOMEM;
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOENT && !must ? 0 : -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

int approval_sync(const char *store, const char *root, VsError **err) {
        _cleanup_free_ char *pp = paths_path(store, root), *ep = entry_path(store, root), *ip = index_path(store, root);
        int r;
        /* The index is best effort, as when it is written. A failed fsync of
         * the others leaves what a crash may lose: refused. */
        if (ip)
                (void)sync_path(ip, false);
        if ((r = sync_path(pp, false)) < 0 || (r = sync_path(ep, false)) < 0 || (r = sync_path(store, true)) < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable",
                                         "cannot make the approved policy of %s durable in %s: %s; fix the state directory",
                                         root, store, strerror(-r));
        return 0;
}

/* The directory's birth time as text; false where the file system keeps
 * none (no index then: a move is seen as new). */
static bool dir_birth(const char *dir, char out[static 64]) {
        struct statx stx;
        if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &stx) < 0 || !(stx.stx_mask & STATX_BTIME))
                return false;
        snprintf(out, 64, "%lld.%09u", (long long)stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec);
        return true;
}

/* STORE/root-DEV-INO: the root path last recorded for that directory, and
 * its birth time. */
static char *index_path(const char *store, const char *root) {
        struct stat st;
        char name[96];
        if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode))
                return NULL;
        snprintf(name, sizeof name, "root-%llx-%llx", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        return path_join(store, name);
}

/* The root this directory was recorded under before a move or rename,
 * when that root has an entry still; NULL otherwise. A directory number
 * reused after a deletion may name an old workspace's entry: its policy is
 * then the baseline, which can only make a change wait for approval. */
static char *moved_from(const char *store, const char *root) {
        _cleanup_free_ char *ip = index_path(store, root), *old = NULL;
        size_t len = 0;
        char birth[64];
        if (!ip || !dir_birth(root, birth) || read_file_at(AT_FDCWD, ip, 4096, &old, &len) < 0 || len == 0 ||
            old[0] != '/' || strlen(old) != len)
                return NULL;
        /* The same directory, not a new one given a freed inode number
         * (which then served the old workspace's policy): its birth time
         * must match too. */
        char *nl = strchr(old, '\n');
        if (!nl || !streq(nl + 1, birth))
                return NULL;
        *nl = 0;
        if (streq(old, root) || !entry_exists(store, old))
                return NULL;
        return TAKE_PTR(old);
}

/* ---- which workspace governs ---- */

static bool holds_config(const char *store, const char *d) {
        _cleanup_free_ char *cfg = path_join(d, VS_CONFIG_FILE);
        struct stat st;
        return (cfg && lstat(cfg, &st) == 0) || entry_exists(store, d);
}

/* The parent of an absolute canonical path ("/" stays "/"). */
static char *parent_of(const char *p) {
        char *d = strdup(p);
        char *slash = d ? strrchr(d, '/') : NULL;
        if (slash)
                slash[slash == d ? 1 : 0] = 0;
        return d;
}

/* The nearest ancestor of d (itself included) holding a config or an
 * entry; NULL when none. */
static int nearest(const char *store, const char *d, char **ret) {
        _cleanup_free_ char *cur = strdup(d);
        for (;;) {
                if (!cur)
                        return -ENOMEM;
                if (holds_config(store, cur)) {
                        *ret = TAKE_PTR(cur);
                        return 0;
                }
                if (streq(cur, "/")) {
                        *ret = NULL;
                        return 0;
                }
                char *up = parent_of(cur);
                free(cur);
                cur = up;
        }
}

/* The policy a workspace root is served by, for comparing: its entry's
 * text where it has one, else its vectora.toml. NULL when neither loads. */
static VsPolicy *served_policy(const char *store, const char *root) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        VsPolicy *p = NULL;
        if (entry_read(store, root, &text, &len, NULL) == 0) {
                if (config_from_text(root, text, len, &p, NULL) < 0)
                        return NULL;
        } else if (config_load(root, &p, NULL) < 0)
                return NULL;
        return p;
}

/* The writable paths sandboxed workspaces list outside themselves, as the
 * store's records say they resolved when approved (STORE/approved-*.paths;
 * a path inside its workspace is recorded "./x" and needs nothing here:
 * the workspace root is found by its vectora.toml). A store that is not
 * there yet has none. */
static int store_writable(const char *store, char ***ret) {
        _cleanup_strv_free_ char **out = NULL;
        _cleanup_(closedirp) DIR *d = opendir(store);
        if (!d) {
                *ret = NULL;
                return errno == ENOENT ? 0 : -errno;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                const char *n = de->d_name;
                size_t len = strlen(n);
                if (strncmp(n, "approved-", 9) != 0 || len < 6 || !streq(n + len - 6, ".paths"))
                        continue;
                _cleanup_close_ int fd = openat(dirfd(d), n, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
                _cleanup_free_ char *text = NULL;
                size_t tlen = 0;
                if (fd < 0 || read_fd_all(fd, ENTRY_MAX_SIZE, &text, &tlen) < 0)
                        continue; /* being replaced (renamed over) meanwhile */
                json_t *rec = json_loadb(text, tlen, 0, NULL);
                json_t *a = json_object_get(rec, "rw_paths");
                for (size_t i = 0; i < json_array_size(a); i++) {
                        const char *r = json_string_value(json_object_get(json_array_get(a, i), "resolved"));
                        if (r && r[0] == '/' && !strv_contains(out, r) && strv_extend(&out, r) < 0) {
                                json_decref(rec);
                                return -ENOMEM;
                        }
                }
                json_decref(rec);
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* store_writable() for dir, only when dir as written goes through a
 * symlink (it is not its own canonical path): without one no link can be
 * met on the way, and the store is not read on every call. */
static int writable_for(const char *store, const char *dir, char ***ret) {
        *ret = NULL;
        _cleanup_free_ char *cwd = NULL, *joined = NULL, *lexical = NULL, *canon = realpath(dir, NULL);
        if (!canon)
                return 0; /* config_locate() reports it */
        if (dir[0] != '/' && !(cwd = getcwd(NULL, 0)))
                return 0;
        if (cwd && !(joined = path_join(cwd, dir)))
                return -ENOMEM;
        if (!(lexical = path_normalize(joined ? joined : dir)))
                return -ENOMEM;
        return streq(lexical, canon) ? 0 : store_writable(store, ret);
}

static bool nested_tightens(const char *store, const char *nested, const char *outer) {
        _cleanup_(policy_freep) VsPolicy *n = NULL, *o = served_policy(store, outer);
        return o && !o->sandboxed && config_load(nested, &n, NULL) >= 0 && n->sandboxed;
}

int approval_locate(const char *store, const char *dir, char **ret_root, char **ret_dir, char **ret_pending,
                    VsError **err) {
        _cleanup_free_ char *canon = NULL, *first = NULL, *pending = NULL;
        _cleanup_strv_free_ char **writable = NULL;
        /* config_locate canonicalizes and checks the directory (also
         * against the jails' writable paths outside their workspaces); its
         * answer is refined here by the entries. */
        int r = writable_for(store, dir, &writable);
        if (r == -ENOMEM)
                return r;
        r = config_locate_beneath(dir, writable, &first, &canon, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *cur = NULL;
        if ((r = nearest(store, canon, &cur)) < 0)
                return r;
        if (!cur) {
                *ret_root = TAKE_PTR(canon);
                if (ret_dir && !(*ret_dir = strdup(*ret_root)))
                        return -ENOMEM;
                if (ret_pending)
                        *ret_pending = NULL;
                return 0;
        }
        /* A vectora.toml inside another workspace (the agent can write one
         * in any directory it can write) governs only once approved. */
        for (;;) {
                if (streq(cur, "/") || entry_exists(store, cur))
                        break;
                _cleanup_free_ char *up = parent_of(cur), *outer = NULL;
                if (!up || (r = nearest(store, up, &outer)) < 0)
                        return -ENOMEM;
                if (!outer)
                        break; /* the outermost: first seen, it applies at once */
                /* A sandbox inside a workspace that has none is a tightening:
                 * it governs at once (first seen, it is recorded). */
                if (nested_tightens(store, cur, outer))
                        break;
                if (!pending &&
                    asprintf(&pending,
                             "%s/" VS_CONFIG_FILE " lies inside the workspace %s and has not been approved: %s's policy "
                             "governs here until the host user runs: vectora-sandbox allow -w %s",
                             cur, outer, outer, cur) < 0)
                        return -ENOMEM;
                free(cur);
                cur = TAKE_PTR(outer);
        }
        *ret_root = TAKE_PTR(cur);
        if (ret_dir)
                *ret_dir = TAKE_PTR(canon);
        if (ret_pending)
                *ret_pending = TAKE_PTR(pending);
        return 0;
}

/* ---- the same answer, remembered ---- */

static void memo_free(ApprovalMemo *m) {
        free(m->path);
        free(m->root);
        free(m->cfg);
        free(m->entry);
        *m = (ApprovalMemo){};
}

static bool memo_holds(const ApprovalMemo *m, const char *dir, struct stat *ret_cfg_st) {
        struct stat st;
        /* The root, as it is spelled, must still be that directory and no
         * symlink (one lstat; the realpath of a moment ago vouches for the
         * directories above it: a host that renames one of them and puts a
         * symlink to it in its place keeps the same directory here), and
         * dir, when spelled otherwise, must lead to it. */
        if (lstat(m->root, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_dev != m->dev || st.st_ino != m->ino)
                return false;
        if (!streq(dir, m->root) && (stat(dir, &st) < 0 || st.st_dev != m->dev || st.st_ino != m->ino))
                return false;
        /* The walk stops at the root while its vectora.toml is there (any
         * kind of file: config_locate() takes whatever sits at the name)
         * and its entry ends the nested-approval loop there. */
        struct stat cst;
        if (lstat(m->cfg, &cst) < 0 || lstat(m->entry, &st) < 0)
                return false;
        *ret_cfg_st = cst;
        return true;
}

/* Remembered only while what memo_holds() checks holds already: dir is
 * the root's directory, the root no symlink, its config and entry there. */
static void memo_fill(ApprovalMemo *memo, const char *store, const char *dir, const char *root) {
        struct stat st;
        if (stat(dir, &st) < 0)
                return;
        ApprovalMemo n = { .path = strdup(dir), .root = strdup(root), .cfg = path_join(root, VS_CONFIG_FILE),
                           .entry = entry_path(store, root), .dev = st.st_dev, .ino = st.st_ino };
        if (!n.path || !n.root || !n.cfg || !n.entry || !memo_holds(&n, dir, &st)) {
                memo_free(&n);
                return;
        }
        /* The oldest slot goes: slots move down, the new one is first. */
        memo_free(&memo[APPROVAL_MEMO_SLOTS - 1]);
        memmove(memo + 1, memo, (APPROVAL_MEMO_SLOTS - 1) * sizeof *memo);
        memo[0] = n;
}

int approval_locate_memo(ApprovalMemo *memo, const char *store, const char *dir, char **ret_root, char **ret_dir,
                         char **ret_pending, struct stat *ret_cfg_st, VsError **err) {
        for (size_t i = 0; i < APPROVAL_MEMO_SLOTS && memo[i].path; i++) {
                if (!streq(memo[i].path, dir))
                        continue;
                struct stat cst;
                if (!memo_holds(&memo[i], dir, &cst)) {
                        memo_free(&memo[i]);
                        memmove(memo + i, memo + i + 1, (APPROVAL_MEMO_SLOTS - 1 - i) * sizeof *memo);
                        memo[APPROVAL_MEMO_SLOTS - 1] = (ApprovalMemo){};
                        break;
                }
                _cleanup_free_ char *root = strdup(memo[i].root), *d = ret_dir ? strdup(memo[i].root) : NULL;
                if (!root || (ret_dir && !d))
                        return -ENOMEM;
                *ret_root = TAKE_PTR(root);
                if (ret_dir)
                        *ret_dir = TAKE_PTR(d);
                if (ret_pending)
                        *ret_pending = NULL;
                if (ret_cfg_st)
                        *ret_cfg_st = S_ISREG(cst.st_mode) ? cst : (struct stat){};
                return 0;
        }
        _cleanup_free_ char *root = NULL, *canon = NULL, *pending = NULL;
        int r = approval_locate(store, dir, &root, &canon, &pending, err);
        if (r < 0)
                return r;
        if (!pending && streq(root, canon))
                memo_fill(memo, store, dir, root);
        *ret_root = TAKE_PTR(root);
        if (ret_dir)
                *ret_dir = TAKE_PTR(canon);
        if (ret_pending)
                *ret_pending = TAKE_PTR(pending);
        if (ret_cfg_st)
                *ret_cfg_st = (struct stat){};
        return 0;
}

/* ---- evaluating a change ---- */

/* The store must stay out of every jail: a listed path may neither hold it
 * nor lie inside it. */
static int check_store_unlisted(const char *store, const VsPolicy *p, VsError **err) {
        if (!p->sandboxed)
                return 0;
        const VsPath *lists[2] = { p->rw_paths, p->ro_paths };
        size_t ns[2] = { p->n_rw, p->n_ro };
        const char *names[2] = { "rw_paths", "ro_paths" };
        for (int k = 0; k < 2; k++)
                for (size_t i = 0; i < ns[k]; i++) {
                        const char *rp = lists[k][i].resolved;
                        if (rp && (path_is_below_or_equal(store, rp) || path_is_below_or_equal(rp, store)))
                                return vs_error_set_kind(err, -EPERM, "config_invalid",
                                                         VS_CONFIG_FILE ":%u:%u: sandbox.%s[%zu]: %s would let the jail "
                                                         "reach the approved-policy store %s; list narrower paths",
                                                         lists[k][i].line, lists[k][i].col, names[k], i, rp, store);
                }
        return 0;
}

static char *pending_message(const char *root, char **loosenings) {
        _cleanup_free_ char *j = strv_join(loosenings, "; ");
        char *m = NULL;
        if (!j || asprintf(&m,
                           "%s/" VS_CONFIG_FILE " changed in a way that loosens the sandbox (%s); the approved policy "
                           "keeps serving until the host user runs: vectora-sandbox allow -w %s",
                           root, j, root) < 0)
                return NULL;
        return m;
}

/* A first-seen config applies at once and is recorded, so it must not be
 * a half-written file (the host rewriting it in place: a prefix without its
 * mask line would apply). Read it only once it has not changed for
 * STABLE_MS; a file that keeps changing for a second is refused for now. */
#define STABLE_MS APPROVAL_STABLE_MS
#define STABLE_TRIES (APPROVAL_STABLE_LIMIT_MS / APPROVAL_STABLE_MS)

int approval_keeps_changing(const char *root, VsError **err) {
        return vs_error_set_kind(err, -EAGAIN, "sandbox_unavailable",
                                 "%s/" VS_CONFIG_FILE " keeps changing; a workspace seen for the first time is served "
                                 "once its config is written: try again",
                                 root);
}

/* How long the file had not changed when its bytes were read (not when
 * its parse ended: a parse of a large file took 100 ms, and a file
 * changed just before the read looked settled, attack review 13). */
static uint64_t changed_ms_ago(const VsPolicy *p) {
        const struct stat *st = &p->config_stat;
        struct timespec now = p->config_read_at;
        const struct timespec *c = &st->st_ctim, *m = &st->st_mtim;
        const struct timespec *t = c->tv_sec > m->tv_sec || (c->tv_sec == m->tv_sec && c->tv_nsec > m->tv_nsec) ? c : m;
        int64_t d = (int64_t)(now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
        return d < 0 ? 0 : (uint64_t)d;
}

/* wait_ms non-NULL (the daemon, whose loop must not sleep): nothing
 * waited for; a file changed less than STABLE_MS ago gives -EAGAIN and
 * *wait_ms, how long until it may be read, and the caller asks again
 * then (and bounds how long it keeps asking). */
static int first_sight_stable(const char *root, VsPolicy **p, char **text, size_t *len, uint64_t *wait_ms,
                              VsError **err) {
        for (int tries = 0;; tries++) {
                uint64_t ago = changed_ms_ago(*p);
                if (ago >= STABLE_MS)
                        return -ENOENT; /* still "no entry": the caller records it */
                if (wait_ms) {
                        *wait_ms = STABLE_MS - ago;
                        return -EAGAIN;
                }
                if (tries == STABLE_TRIES)
                        return approval_keeps_changing(root, err);
                struct timespec ts = { 0, (long)(STABLE_MS - ago) * 1000000L };
                nanosleep(&ts, NULL);
                _cleanup_(policy_freep) VsPolicy *again = NULL;
                _cleanup_free_ char *t2 = NULL;
                size_t l2 = 0;
                int r = config_load_text(root, &again, &t2, &l2, err);
                if (r < 0)
                        return r;
                if (!again->has_config_stat)
                        return vs_error_set_kind(err, -EAGAIN, "sandbox_unavailable",
                                                 "%s/" VS_CONFIG_FILE " was removed while it was read: try again", root);
                policy_free(*p);
                *p = TAKE_PTR(again);
                free(*text);
                *text = TAKE_PTR(t2);
                *len = l2;
        }
}

/* rel below the directory dir (neither followed through a link), a
 * regular file owned by uid, opened with flags; -ENOENT for anything
 * else. */
static int open_owned_regular(const char *dir, const char *rel, int flags, uid_t uid) {
        _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (dfd < 0)
                return -ENOENT;
        /* openat2 refuses O_PATH with any flag but a few. */
        _cleanup_close_ int fd = chase_beneath(dfd, rel, flags & O_PATH ? O_PATH : flags | O_NONBLOCK | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid)
                return -ENOENT;
        return TAKE_FD(fd);
}

int approval_owner_store_open(const char *workspace, const char *rel, int flags) {
        struct stat wst;
        if (geteuid() != 0 || stat(workspace, &wst) < 0 || wst.st_uid == 0)
                return -ENOENT;
        struct passwd *pw = getpwuid(wst.st_uid);
        if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
                return -ENOENT;
        _cleanup_free_ char *path = path_join(".local/state/vectora-sandbox", rel);
        return path ? open_owned_regular(pw->pw_dir, path, flags, wst.st_uid) : -ENOENT;
}

/* The same workspace's entry in the other store that may hold it: a user's
 * CLI or MCP server reads the system store's (the root daemon's), the root
 * daemon reads the workspace owner's own (approval_owner_store_open()).
 * Then a loosening pending in one is pending in the other, not "first
 * seen". -ENOENT when there is none. */
static int other_store_entry(const char *store, const char *root, char **ret, size_t *ret_len) {
        _cleanup_free_ char *name = entry_path("", root);
        if (!name)
                return -ENOMEM;
        const char *base = name[0] == '/' ? name + 1 : name;
        _cleanup_close_ int fd = -EBADF;
        if (geteuid() != 0) {
                if (streq(store, SYSTEM_STORE))
                        return -ENOENT;
                fd = open_owned_regular(SYSTEM_STORE, base, O_RDONLY, 0);
                if (fd < 0)
                        return -ENOENT;
        } else {
                if (!streq(store, SYSTEM_STORE))
                        return -ENOENT;
                fd = approval_owner_store_open(root, base, O_RDONLY);
                if (fd < 0)
                        return -ENOENT;
        }
        return read_fd_all(fd, ENTRY_MAX_SIZE, ret, ret_len) < 0 ? -ENOENT : 0;
}

/* Every listed path of p as an absolute path: resolved, else where it
 * would be (VsPath.lexical). */
static int listed_of(const VsPolicy *p, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t k = 0; k < 2; k++)
                for (size_t i = 0; i < (k ? p->n_ro : p->n_rw); i++) {
                        const VsPath *vp = k ? &p->ro_paths[i] : &p->rw_paths[i];
                        const char *a = vs_path_where(vp);
                        if (a && !strv_contains(l, a) && strv_extend(&l, a) < 0)
                                return -ENOMEM;
                }
        *ret = TAKE_PTR(l);
        return 0;
}

static int evaluate(const char *store, const char *root, VsPolicy **ret, char **ret_pending, bool *ret_unsynced,
                    uint64_t *ret_wait_ms, VsError **err) {
        /* ret_unsynced NULL: each record written is durable before this
         * returns; else written only, and *ret_unsynced says so. */
        bool *unsynced = ret_unsynced;
        if (ret_unsynced)
                *ret_unsynced = false;
        _cleanup_(policy_freep) VsPolicy *proposed = NULL, *approved = NULL;
        _cleanup_free_ char *text = NULL, *atext = NULL;
        size_t len = 0, alen = 0;
        int r = config_load_text(root, &proposed, &text, &len, err);
        if (r < 0)
                return r;
        if ((r = check_store_unlisted(store, proposed, err)) < 0 || (r = secret_check_policy(store, proposed, err)) < 0)
                return r;
        r = entry_read(store, root, &atext, &alen, err);
        if (r == -ENOENT && proposed->has_config_stat) {
                r = first_sight_stable(root, &proposed, &text, &len, ret_wait_ms, err);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if (r == -ENOENT) {
                /* Moved or renamed: the approval it had is the baseline, and
                 * is kept under the new root (a pending loosening stays
                 * pending). */
                _cleanup_free_ char *old = moved_from(store, root);
                json_t *old_paths = old ? paths_read(store, old) : NULL;
                if (old && (r = entry_read(store, old, &atext, &alen, err)) >= 0 &&
                    (r = entry_write(store, root, atext, alen, old_paths, unsynced, err)) < 0) {
                        json_decref(old_paths);
                        return r;
                }
                json_decref(old_paths);
                if (old && r < 0)
                        return r;
        }
        if (r == -ENOENT && (r = other_store_entry(store, root, &atext, &alen)) == 0 &&
            (r = entry_write(store, root, atext, alen, NULL, unsynced, err)) < 0)
                return r;
        if (r == -ENOENT) {
                /* First seen: from nothing, any sandbox is a tightening. */
                _cleanup_(json_decrefp) json_t *paths = paths_of(proposed);
                if (proposed->sandboxed && (r = entry_write(store, root, text, len, paths, unsynced, err)) < 0)
                        return r;
                *ret_pending = NULL;
                *ret = TAKE_PTR(proposed);
                return 0;
        }
        if (r < 0)
                return r;
        if ((r = config_from_text(root, atext, alen, &approved, err)) < 0)
                return vs_error_prefix(err, "the approved policy of %s no longer loads (fix vectora.toml, then run "
                                            "vectora-sandbox allow -w %s)", root, root);
        if ((r = check_store_unlisted(store, approved, err)) < 0)
                return r;
        _cleanup_strv_free_ char **loose = NULL, **moved_paths = calloc(1, sizeof(char *));
        _cleanup_(json_decrefp) json_t *rec = paths_read(store, root);
        if (!moved_paths || (r = paths_changed(rec, approved, &moved_paths)) < 0)
                return -ENOMEM;
        if ((r = policy_loosenings(approved, proposed, &loose)) < 0)
                return r;
        for (char **m = moved_paths; *m; m++)
                if ((r = strv_extend(&loose, *m)) < 0)
                        return r;
        if (loose[0]) {
                char *m = pending_message(root, loose);
                if (!m)
                        return -ENOMEM;
                approved->config_stat = proposed->config_stat;
                approved->has_config_stat = proposed->has_config_stat;
                if ((r = listed_of(proposed, &approved->pending_listed)) < 0) {
                        free(m);
                        return r;
                }
                *ret_pending = m;
                *ret = TAKE_PTR(approved);
                return 0;
        }
        /* As tight or tighter: it applies, and becomes what is approved. */
        _cleanup_(json_decrefp) json_t *paths = paths_of(proposed);
        if ((len != alen || (len && memcmp(text, atext, len) != 0)) &&
            (r = entry_write(store, root, text, len, paths, unsynced, err)) < 0)
                return r;
        *ret_pending = NULL;
        *ret = TAKE_PTR(proposed);
        return 0;
}

int approval_evaluate(const char *store, const char *root, VsPolicy **ret, char **ret_pending, VsError **err) {
        return evaluate(store, root, ret, ret_pending, NULL, NULL, err);
}

int approval_evaluate_unsynced(const char *store, const char *root, VsPolicy **ret, char **ret_pending,
                               bool *ret_unsynced, uint64_t *ret_wait_ms, VsError **err) {
        if (ret_wait_ms)
                *ret_wait_ms = 0;
        return evaluate(store, root, ret, ret_pending, ret_unsynced, ret_wait_ms, err);
}

/* ---- approving ---- */

/* Counted first, then filled: a config may have many thousands of lines. */
static int split_lines(const char *text, char ***ret) {
        size_t lines = 1, k = 0;
        for (const char *p = text; p && (p = strchr(p, '\n')); p++)
                lines++;
        _cleanup_strv_free_ char **l = calloc(lines + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (const char *p = text; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                if (!(l[k++] = strndup(p, n)))
                        return -ENOMEM;
                p += n + !!nl;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Lines only in a ("-") then lines only in b ("+"): what a reviewer needs
 * to see for a file of a few dozen lines (and no quadratic cost for one
 * of thousands). */
static int text_diff(const char *a, const char *b, char ***ret) {
        _cleanup_strv_free_ char **la = NULL, **lb = NULL, **gone = NULL, **added = NULL,
                                **out = calloc(1, sizeof(char *));
        int r;
        if (!out || (r = split_lines(a, &la)) < 0 || (r = split_lines(b, &lb)) < 0 ||
            (r = strv_difference(la, lb, &gone)) < 0 || (r = strv_difference(lb, la, &added)) < 0)
                return -ENOMEM;
        for (char **s = gone; *s; s++)
                if ((r = strv_extendf(&out, "-%s", *s)) < 0)
                        return r;
        for (char **s = added; *s; s++)
                if ((r = strv_extendf(&out, "+%s", *s)) < 0)
                        return r;
        *ret = TAKE_PTR(out);
        return 0;
}

int approval_allow(const char *store, const char *dir, VsAllowResult *ret, VsError **err) {
        _cleanup_free_ char *first = NULL, *canon = NULL, *root = NULL, *text = NULL, *atext = NULL;
        size_t len = 0, alen = 0;
        _cleanup_strv_free_ char **writable = NULL;
        int r = writable_for(store, dir, &writable);
        if (r == -ENOMEM)
                return r;
        r = config_locate_beneath(dir, writable, &first, &canon, err);
        if (r < 0)
                return r;
        /* The nearest file, or entry: a directory whose vectora.toml is
         * gone is the workspace whose removal is approved. */
        if ((r = nearest(store, canon, &root)) < 0)
                return r;
        if (!root)
                root = TAKE_PTR(canon);
        _cleanup_(policy_freep) VsPolicy *proposed = NULL, *approved = NULL;
        if ((r = config_load_text(root, &proposed, &text, &len, err)) < 0)
                return vs_error_prefix(err, "nothing approved");
        if ((r = check_store_unlisted(store, proposed, err)) < 0)
                return vs_error_prefix(err, "nothing approved");
        r = entry_read(store, root, &atext, &alen, err);
        if (r < 0 && r != -ENOENT)
                return r;
        /* Neither a config nor an entry (whose config was removed): there is
         * no change to approve. Recording "unsandboxed" here would let every
         * workspace made below it later run unsandboxed until allowed. */
        if (!atext && !proposed->has_config_stat)
                return vs_error_set_kind(err, -ENOENT, "workspace_not_found",
                                         "nothing to approve: %s has no " VS_CONFIG_FILE " and no pending change; run "
                                         "allow in (or with -w) the workspace whose " VS_CONFIG_FILE " changed",
                                         root);
        _cleanup_strv_free_ char **loose = NULL, **diff = NULL;
        if (atext && config_from_text(root, atext, alen, &approved, NULL) >= 0)
                r = policy_loosenings(approved, proposed, &loose);
        else
                r = (loose = calloc(1, sizeof(char *))) ? 0 : -ENOMEM;
        if (r < 0 || (r = text_diff(atext ? atext : "", text ? text : "", &diff)) < 0)
                return r;
        bool changed = !atext || len != alen || (len && memcmp(text, atext, len) != 0);
        _cleanup_(json_decrefp) json_t *paths = paths_of(proposed);
        if (changed && (r = entry_write(store, root, text, len, paths, NULL, err)) < 0)
                return r;
        /* The same text, its paths re-pointed: allowing records where they lead now. */
        if (!changed && (r = paths_write(store, root, paths, true, err)) < 0)
                return r;
        *ret = (VsAllowResult){
                .root = TAKE_PTR(root),
                .loosenings = TAKE_PTR(loose),
                .diff = TAKE_PTR(diff),
                .changed = changed,
                .sandboxed = proposed->sandboxed,
        };
        return 0;
}

void approval_allow_result_done(VsAllowResult *r) {
        free(r->root);
        strv_free(r->loosenings);
        strv_free(r->diff);
        *r = (VsAllowResult){};
}

json_t *approval_allow_to_json(const VsAllowResult *a) {
        return json_pack("{s:s, s:b, s:b, s:o, s:o}", "approved", a->root, "changed", a->changed, "approved_sandboxed",
                         a->sandboxed, "loosens", json_strv(a->loosenings), "difference", json_strv(a->diff));
}
