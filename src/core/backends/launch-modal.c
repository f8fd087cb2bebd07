/* SPDX-License-Identifier: MIT */
/* The modal backend's half of launch_prepare(): finds node and the bridge,
 * walks rw_paths/ro_paths for what `upload` may send (the mask rules are
 * the C ones in src/shared/plan/glob.c, the same the local backend mounts by,
 * so there is one implementation of them, not two that could disagree),
 * writes that list to a private manifest file, and builds the bridge argv. */
#include "backend-ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "backend-modal.h"
#include "fd-util.h"
#include "jail-plan.h"
#include "mask-walk.h"
#include "path-util.h"
#include "paths.h"
#include "sha256.h"
#include "strv.h"
#include "utf8.h"
#include "vs-build-config.h"

static int find_node(char **ret, VsError **err) {
        const char *e = getenv("VECTORA_NODE");
        if (e && *e) {
                if (e[0] == '/' && access(e, X_OK) == 0)
                        return (*ret = strdup(e)) ? 0 : -ENOMEM;
                return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                         "VECTORA_NODE=%s is not an absolute path to an executable", e);
        }
        const char *path = getenv("PATH");
        _cleanup_free_ char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                if (d[0] != '/')
                        continue;
                _cleanup_free_ char *c = path_join(d, "node");
                if (!c)
                        return -ENOMEM;
                struct stat st;
                if (stat(c, &st) == 0 && S_ISREG(st.st_mode) && access(c, X_OK) == 0) {
                        *ret = TAKE_PTR(c);
                        return 0;
                }
        }
        return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                 "node not found in PATH: the modal backend runs its bridge under Node.js >= 18 (scripts/install-deps installs it, or set VECTORA_NODE)");
}

static int find_bridge(char **ret, VsError **err) {
        const char *e = getenv("VECTORA_MODAL_BRIDGE");
        const char *cands[] = { e, VS_LIBEXECDIR "/vectora-sandbox/modal/bridge.mjs" };
        for (size_t i = 0; i < ELEMENTSOF(cands); i++) {
                if (!cands[i] || !cands[i][0])
                        continue;
                if (cands[i][0] == '/' && access(cands[i], R_OK) == 0) {
                        /* The SDK is installed beside the bridge from the lockfile;
                         * without it the bridge could only fail later. */
                        _cleanup_free_ char *dir = strdup(cands[i]);
                        if (!dir)
                                return -ENOMEM;
                        *strrchr(dir, '/') = 0;
                        _cleanup_free_ char *pkg = path_join(dir, "node_modules/modal/package.json");
                        if (!pkg)
                                return -ENOMEM;
                        if (access(pkg, R_OK) < 0)
                                return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                                         "the modal bridge's dependencies are not installed in %s: run scripts/install-deps (npm ci --omit=dev --ignore-scripts there)",
                                                         dir);
                        return (*ret = strdup(cands[i])) ? 0 : -ENOMEM;
                }
                if (i == 0)
                        return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                                 "VECTORA_MODAL_BRIDGE=%s is not a readable absolute path", e);
        }
        return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable",
                                 "the modal bridge (bridge.mjs) is not installed in %s/vectora-sandbox/modal; reinstall vectora-sandbox or set VECTORA_MODAL_BRIDGE",
                                 VS_LIBEXECDIR);
}

typedef struct Walk {
        const VsGlobSet *set;
        VsModalEntry *entries;
        size_t n, cap;
        size_t skipped;
        uint64_t bytes;
} Walk;

static int walk_add(Walk *w, char *path, VsModalEntryKind kind, const struct stat *st, char *target) {
        if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 256;
                VsModalEntry *e = realloc(w->entries, cap * sizeof *e);
                if (!e) {
                        free(path);
                        free(target);
                        return -ENOMEM;
                }
                w->entries = e;
                w->cap = cap;
        }
        w->entries[w->n++] = (VsModalEntry){ .path = path, .kind = kind, .mode = st->st_mode & 07777,
                                              .size = kind == VS_MODAL_FILE ? (uint64_t)st->st_size : 0,
                                              .target = target };
        if (kind == VS_MODAL_FILE)
                w->bytes += (uint64_t)st->st_size;
        return 0;
}

static int walk_too_big(const Walk *w, VsError **err) {
        return vs_error_set_kind(err, -E2BIG, "sandbox_unavailable",
                                 "sync = \"upload\" refuses more than %u entries or %llu MiB below rw_paths/ro_paths (found more); use sync = \"volume\", narrow rw_paths/ro_paths, or mask large directories",
                                 VS_MODAL_UPLOAD_MAX_FILES, (unsigned long long)(VS_MODAL_UPLOAD_MAX_BYTES >> 20));
}

/* Adds what lies below dir (fd, absolute path abs, relative rel from the
 * root) that no mask covers. Nothing is followed: symlinks are recorded as
 * links. Unreadable or vanished entries are left out, which only means they
 * are not uploaded. */
static int walk_dir(Walk *w, int fd, const char *abs, const char *rel, unsigned depth, VsError **err) {
        if (depth > 256)
                return vs_error_set_kind(err, -ELOOP, "sandbox_unavailable", "%s: directories nested too deeply", abs);
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "reading %s: %m", abs);
        }
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (errno = 0, de = readdir(d))) {
                const char *name = de->d_name;
                if (streq(name, ".") || streq(name, ".."))
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT || errno == EACCES || errno == EPERM)
                                continue;
                        r = vs_error_set_kind(err, -errno, "sandbox_unavailable", "inspecting %s/%s: %m", abs, name);
                        break;
                }
                bool is_dir = S_ISDIR(st.st_mode);
                _cleanup_free_ char *crel = *rel ? path_join(rel, name) : strdup(name);
                char *cabs = path_join(abs, name);
                if (!crel || !cabs) {
                        free(cabs);
                        r = -ENOMEM;
                        break;
                }
                if (glob_set_masks(w->set, crel, is_dir)) {
                        free(cabs);
                        continue;
                }
                if (!utf8_valid(name, strlen(name))) {
                        free(cabs);
                        w->skipped++;
                        continue;
                }
                if (w->n >= VS_MODAL_UPLOAD_MAX_FILES) {
                        free(cabs);
                        r = walk_too_big(w, err);
                        break;
                }
                if (S_ISREG(st.st_mode)) {
                        r = walk_add(w, cabs, VS_MODAL_FILE, &st, NULL);
                        if (r >= 0 && w->bytes > VS_MODAL_UPLOAD_MAX_BYTES)
                                r = walk_too_big(w, err);
                } else if (S_ISLNK(st.st_mode)) {
                        char buf[PATH_MAX];
                        ssize_t k = readlinkat(dirfd(d), name, buf, sizeof buf - 1);
                        if (k < 0) {
                                free(cabs);
                                continue;
                        }
                        buf[k] = 0;
                        if (!utf8_valid(buf, strlen(buf))) {
                                free(cabs);
                                w->skipped++;
                                continue;
                        }
                        char *t = strdup(buf);
                        r = t ? walk_add(w, cabs, VS_MODAL_SYMLINK, &st, t) : (free(cabs), -ENOMEM);
                } else if (is_dir) {
                        r = walk_add(w, cabs, VS_MODAL_DIR, &st, NULL);
                        if (r < 0)
                                break;
                        int cfd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd < 0) {
                                if (errno == ENOENT || errno == EACCES || errno == EPERM)
                                        continue;
                                r = vs_error_set_kind(err, -errno, "sandbox_unavailable", "opening %s: %m", cabs);
                                break;
                        }
                        r = walk_dir(w, cfd, cabs, crel, depth + 1, err);
                } else
                        free(cabs); /* sockets, fifos, devices: nothing to upload */
        }
        if (r >= 0 && errno != 0 && !de)
                r = vs_error_set_kind(err, -errno, "sandbox_unavailable", "reading %s: %m", abs);
        closedir(d);
        return r;
}

static int walk_root(Walk *w, const char *root, VsError **err) {
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        if (fd < 0) {
                if (errno != ENOTDIR)
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "opening %s: %m", root);
                /* A listed file rather than a directory. */
                if (lstat(root, &st) < 0 || !S_ISREG(st.st_mode))
                        return 0;
                char *p = strdup(root);
                return p ? walk_add(w, p, VS_MODAL_FILE, &st, NULL) : -ENOMEM;
        }
        if (fstat(fd, &st) < 0) {
                safe_close(fd);
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "inspecting %s: %m", root);
        }
        char *p = strdup(root);
        int r = p ? walk_add(w, p, VS_MODAL_DIR, &st, NULL) : -ENOMEM;
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        return walk_dir(w, fd, root, "", 0, err);
}

/* One manifest per workspace in the private runtime directory, replaced
 * atomically on each launch, so `plan` and failed starts leave no litter. */
static int write_manifest(const char *runtime_dir, const VsLaunch *l, const StrBuf *data, char **ret,
                          VsError **err) {
        const char *workspace = l->workspace;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(workspace, strlen(workspace), hex);
        hex[16] = 0;
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        if (asprintf(&path, "%s/modal-%s.json", runtime_dir, hex) < 0 ||
            asprintf(&tmp, "%s/.modal-%s.XXXXXX", runtime_dir, hex) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "creating %s: %m", tmp);
        int r = fchmod(fd, 0600) < 0 ? -errno : 0;
        /* A root daemon runs the bridge as the workspace's owner, who must read it. */
        if (r >= 0 && l->switch_user && fchown(fd, l->uid, l->gid) < 0)
                r = -errno;
        if (r >= 0)
                r = write_all(fd, data->data, data->len);
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return vs_error_set_kind(err, r, "sandbox_unavailable", "writing the upload manifest %s: %s", path,
                                         strerror(-r));
        }
        *ret = TAKE_PTR(path);
        return 0;
}

/* The protected set is the jail plan's, as on every other backend: beyond
 * the fixed list, a symlinked one's target, the .git control files of a
 * .git file's target, of submodules and worktrees, and what the protect
 * globs match. The bridge never writes those back and the worker refuses
 * them. (With only the fixed list, a hook written in the Sandbox through a
 * symlinked .git/hooks came back to the host.) The plan's mounts are not
 * rendered here: a Sandbox has none. */
static int modal_protected_paths(const VsPolicy *p, VsLaunch *l, VsError **err) {
        _cleanup_(jail_plan_freep) VsJailPlan *plan = NULL;
        /* No empty sources: nothing is mounted. */
        int r = jail_plan_make(p, l->protected_paths, NULL, "", "", NULL, NULL, NULL, NULL, &plan, NULL, NULL, err);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **prot = strv_copy(plan->protected_paths);
        if (!prot)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_mounts; i++) {
                const VsJailMount *m = &plan->mounts[i];
                if (m->kind == VS_MOUNT_PROTECT && !strv_contains(prot, m->dest) && (r = strv_extend(&prot, m->dest)) < 0)
                        return r;
        }
        strv_free(l->protected_paths);
        l->protected_paths = TAKE_PTR(prot);
        return 0;
}

static int launch_modal(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err) {
#if !defined(__x86_64__)
        return vs_error_set_kind(err, -ENOEXEC, "sandbox_unavailable",
                                 "the modal backend runs the static worker in Modal's x86_64 containers; this build's worker is for another architecture");
#endif
        int r;
        _cleanup_free_ char *node = NULL, *bridge = NULL, *manifest_path = NULL;
        if ((r = find_node(&node, err)) < 0 || (r = find_bridge(&bridge, err)) < 0 ||
            (r = modal_protected_paths(p, l, err)) < 0)
                return r;

        const VsModalConfig *m = backend_config(p, &backend_modal_def);
        bool volume = m && m->sync && streq(m->sync, "volume");
        Walk w = { 0 };
        VsModalManifest mf = { .rw_roots = l->rw_paths, .ro_roots = l->ro_paths, .protected_paths = l->protected_paths };
        if (!volume) {
                if (!o->runtime_dir)
                        return vs_error_set_kind(err, -EINVAL, "internal", "the modal backend needs a runtime directory");
                w.set = p->mask_set;
                for (int pass = 0; r >= 0 && pass < 2; pass++)
                        for (char **root = pass ? l->ro_paths : l->rw_paths; r >= 0 && root && *root; root++)
                                r = walk_root(&w, *root, err);
                mf.entries = w.entries;
                mf.n_entries = w.n;
                mf.n_skipped = w.skipped;
                _cleanup_strbuf_ StrBuf data = STRBUF_INIT;
                if (r >= 0) {
                        r = backend_modal_manifest_encode(&mf, &data);
                        if (r == -EILSEQ)
                                r = vs_error_set_kind(err, r, "sandbox_unavailable",
                                                      "a listed path is not UTF-8; the modal backend cannot name it in the Sandbox");
                }
                if (r >= 0)
                        r = write_manifest(o->runtime_dir, l, &data, &manifest_path, err);
                if (r < 0) {
                        backend_modal_entries_free(w.entries, w.n);
                        return r;
                }
        }

        VsModalEnv env = { .node = node, .bridge = bridge, .worker_path = o->worker_path, .manifest_path = manifest_path };
        r = backend_modal_argv(p, &env, &l->argv, err);
        if (r >= 0)
                r = backend_modal_summary(p, volume ? NULL : &mf, &l->notes);
        if (r >= 0 && w.skipped > 0)
                r = strv_extendf(&l->degraded, "modal sync: %zu file name(s) that are not UTF-8 were not uploaded",
                                 w.skipped);
        backend_modal_entries_free(w.entries, w.n);
        return r;
}

const VsBackendOps backend_modal_ops = {
        .def = &backend_modal_def,
        .launch = launch_modal,
};
