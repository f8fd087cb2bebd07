/* SPDX-License-Identifier: MIT */
#include "tools.h"
#include <stdlib.h>
#include "strv.h"
#include "time-util.h"
#include "jail-plan.h"
#include "mask-walk.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "api-result.h"
#include "approval.h"
#include "git-scan.h"
#include "jail-home.h"
#include "path-util.h"
#include "paths.h"
#include "strbuf.h"
#include "strv.h"

/* s with each \n that no \r precedes made \r\n, in *ret (owned); the
 * count of those. */
static int to_crlf(const char *s, char **ret, size_t *ret_count) {
        size_t bare = 0, n = strlen(s);
        for (size_t i = 0; i < n; i++)
                if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
                        bare++;
        char *o = malloc(n + bare + 1), *q = o;
        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
                        *q++ = '\r';
                *q++ = s[i];
        }
        *q = 0;
        *ret = o;
        *ret_count = bare;
        return 0;
}

int tool_edit_apply(const char *content, size_t len, const char *old_text, const char *new_text, bool replace_all,
                    char **ret, size_t *ret_len, size_t *ret_count, VsError **err) {
        size_t lo = strlen(old_text), ln = strlen(new_text);
        if (lo == 0)
                return vs_error_set_kind(err, -EINVAL, "bad_request", "old text must not be empty");
        size_t count = 0;
        for (const char *p = content; (size_t)(p - content) + lo <= len;) {
                const char *hit = memmem(p, len - (size_t)(p - content), old_text, lo);
                if (!hit)
                        break;
                count++;
                p = hit + lo;
        }
        if (count == 0 && memmem(content, len, "\r\n", 2)) {
                /* A CRLF file and text copied with LF (the CR is invisible
                 * in what the agent read): matched and replaced in the
                 * file's line endings. */
                _cleanup_free_ char *o2 = NULL, *n2 = NULL;
                size_t bare = 0, unused;
                int r = to_crlf(old_text, &o2, &bare);
                if (r < 0 || (bare && (r = to_crlf(new_text, &n2, &unused)) < 0))
                        return r;
                if (bare)
                        return tool_edit_apply(content, len, o2, n2, replace_all, ret, ret_len, ret_count, err);
        }
        if (count == 0)
                return vs_error_set_kind(err, -ENOENT, "edit_not_found",
                                         "the old text was not found in the file; read the file again and copy the text exactly");
        if (count > 1 && !replace_all)
                return vs_error_set_kind(err, -ENOTUNIQ, "edit_not_unique",
                                         "the old text occurs %zu times; add surrounding lines to make it unique, or set replace_all",
                                         count);
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        const char *p = content, *end = content + len;
        size_t done = 0;
        int r;
        while (p < end) {
                const char *hit = (replace_all || done == 0) && (size_t)(end - p) >= lo ? memmem(p, (size_t)(end - p), old_text, lo) : NULL;
                if (!hit) {
                        if ((r = strbuf_append(&out, p, (size_t)(end - p))) < 0)
                                return r;
                        break;
                }
                if ((r = strbuf_append(&out, p, (size_t)(hit - p))) < 0 || (r = strbuf_append(&out, new_text, ln)) < 0)
                        return r;
                done++;
                p = hit + lo;
        }
        size_t out_len = out.len;
        char *s = strbuf_steal(&out);
        if (!s)
                return -ENOMEM;
        *ret = s;
        *ret_len = out_len;
        if (ret_count)
                *ret_count = done;
        return 0;
}

int tools_load_policy(const char *dir, VsPolicy **ret, char **ret_dir, char **ret_pending, VsError **err) {
        _cleanup_free_ char *store = NULL, *root = NULL, *canon = NULL, *nested = NULL, *pending = NULL;
        int r = approval_store_dir(NULL, &store, err);
        if (r < 0)
                return r;
        if ((r = approval_locate(store, dir, &root, &canon, &nested, err)) < 0)
                return r;
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        if ((r = approval_evaluate(store, root, &p, &pending, err)) < 0)
                return r;
        *ret = TAKE_PTR(p);
        if (ret_dir)
                *ret_dir = TAKE_PTR(canon);
        if (ret_pending)
                *ret_pending = nested ? TAKE_PTR(nested) : TAKE_PTR(pending);
        return 0;
}

static int tools_embedded_degraded(const VsPolicy *p, char *const *worker_degraded, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (char *const *s = worker_degraded; s && *s; s++)
                if (strv_extend(&l, *s) < 0)
                        return -ENOMEM;
        if (p && p->sandboxed &&
            strv_extendf(&l, "memory: not enforced per workspace (served in-process, without vectora-sandboxd's cgroups); RLIMIT_DATA=%llu per process",
                         (unsigned long long)p->limits.memory) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

json_t *tools_embedded_sandbox(const VsSession *s, const VsPolicy *p, uint64_t generation) {
        _cleanup_strv_free_ char **layers = NULL, **degraded = NULL;
        if (session_layers(s, &layers) < 0 || tools_embedded_degraded(s->sandboxed ? p : NULL, s->degraded, &degraded) < 0)
                return NULL;
        return api_sandbox_json(&(VsApiSandbox){
                .state = s->sandboxed ? "sandboxed" : "unsandboxed",
                .backend = s->sandboxed ? vs_backend_name(p->backend) : "none",
                .layers = layers,
                .degraded = degraded,
                .generation = generation,
        });
}

/* When a jail of workspace first started (launch.h links_since): as the
 * store remembers it (jail_first_start: an earlier MCP server or one-shot
 * CLI run of this store, whose jails could have made a link), else when
 * this process first started one: zero the first time of all, which
 * records now. A few workspaces per process: past the table's size, what
 * the store says, or zero (nothing put aside; the start refuses the link
 * as before). */
static struct timespec first_jail_of(const char *store, const char *workspace) {
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        static struct {
                char *path;
                struct timespec at;
        } seen[16];
        struct timespec at = { 0 };
        pthread_mutex_lock(&lock);
        size_t i = 0;
        while (i < ELEMENTSOF(seen) && seen[i].path && !streq(seen[i].path, workspace))
                i++;
        if (i < ELEMENTSOF(seen) && seen[i].path) {
                at = seen[i].at;
                pthread_mutex_unlock(&lock);
                return at;
        }
        struct timespec recorded;
        bool known = jail_first_start(store, workspace, &recorded) > 0;
        if (known)
                at = recorded;
        if (i < ELEMENTSOF(seen) && (seen[i].path = strdup(workspace)))
                seen[i].at = known ? recorded : now_wall_coarse();
        pthread_mutex_unlock(&lock);
        return at;
}

int tools_open(const char *workspace, bool require_sandbox, bool allowlist_offline, VsPolicy **ret_policy,
               VsSession **ret_session, char **ret_pending, VsError **err) {
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_free_ char *pending = NULL;
        int r = tools_load_policy(workspace, &p, NULL, &pending, err);
        if (r < 0)
                return r;
        if (require_sandbox && !p->sandboxed)
                return vs_error_set_kind(err, -EPERM, "sandbox_required",
                                         "workspace %s would run unsandboxed (%s) and a sandbox is required; add a [sandbox] table to its vectora.toml (vectora-sandbox init)",
                                         p->workspace, p->unsandboxed_reason);
        _cleanup_free_ char *worker = NULL, *rt = NULL, *store = NULL;
        if ((r = vs_worker_path(&worker, err)) < 0)
                return r;
        if (p->sandboxed && (r = vs_runtime_dir(&rt, err)) < 0)
                return r;
        /* The jail's kept home lives in the caller's store, as the daemon's in its own. */
        if (p->sandboxed && (r = approval_store_dir(NULL, &store, err)) < 0)
                return r;
        VsLaunchOptions o = { .worker_path = worker, .bwrap = getenv("VECTORA_BWRAP"), .runtime_dir = rt,
                              .state_dir = store, .allowlist_offline = allowlist_offline };
        if (p->sandboxed)
                o.links_since = first_jail_of(store, p->workspace);
        _cleanup_(launch_freep) VsLaunch *l = NULL;
        if ((r = launch_prepare(p, &o, &l, err)) < 0)
                return r;
        /* Noted before the jail binds them (protect-snapshot.h); on ssh
         * once it is ready: the remote launcher makes the .git placeholders
         * there, on files this host may share (remote_root unset). */
        bool after = p->sandboxed && p->backend->remote_plan;
        _cleanup_(protect_snapshot_freep) VsProtectSnapshot *snap = NULL;
        if (p->sandboxed && !after && (r = protect_snapshot_take(p, launch_host_paths(l), &snap)) < 0)
                return r;
        /* The repositories the host has (the plan's look, git-scan.h):
         * what the jail adds is put aside. Only where the jail writes this
         * host's files. */
        _cleanup_free_ VsGitRepos *git_base = NULL;
        _cleanup_strv_free_ char **git_roots = calloc(1, sizeof(char *)), **git_ro = calloc(1, sizeof(char *));
        if (!git_roots || !git_ro)
                return -ENOMEM;
        if (p->sandboxed && p->backend->host_files && l->git_base) {
                git_base = TAKE_PTR(l->git_base);
                for (size_t i = 0; r >= 0 && i < p->n_rw; i++)
                        if (p->rw_paths[i].resolved)
                                r = strv_extend(&git_roots, p->rw_paths[i].resolved);
                for (size_t i = 0; r >= 0 && i < p->n_ro; i++)
                        if (p->ro_paths[i].resolved)
                                r = strv_extend(&git_ro, p->ro_paths[i].resolved);
                if (r < 0) {
                        git_repos_done(git_base);
                        return r;
                }
        }
        _cleanup_(session_endp) VsSession *s = NULL;
        if ((r = session_start(l, &s, err)) < 0) {
                if (git_base)
                        git_repos_done(git_base);
                return r;
        }
        if (git_base && (r = session_watch_git(s, TAKE_PTR(git_base), git_roots, git_ro, l->sealed_dirs)) < 0)
                return r;
        s->put_aside = TAKE_PTR(l->put_aside);
        if (after && (r = protect_snapshot_take(p, NULL, &snap)) < 0)
                return r;
        if (snap)
                session_watch_protected(s, TAKE_PTR(snap));
        *ret_policy = TAKE_PTR(p);
        *ret_session = TAKE_PTR(s);
        if (ret_pending)
                *ret_pending = TAKE_PTR(pending);
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int tools_masked_now(const VsPolicy *p, char ***ret, VsError **err) {
        _cleanup_strv_free_ char **out = calloc(1, sizeof(char *));
        if (!out)
                return -ENOMEM;
        int r = policy_sets_check(p, err);
        const VsGlobSet *set = p->sandboxed ? p->mask_set : NULL;
        VsPath ws = { .written = (char *)".", .resolved = p->sandboxed ? (char *)jail_plan_uncovered_workspace(p) : NULL };
        for (size_t pass = 0; r >= 0 && set && pass < 3; pass++) {
                const VsPath *list = pass == 2 ? &ws : pass ? p->ro_paths : p->rw_paths;
                size_t nl = pass == 2 ? 1 : pass ? p->n_ro : p->n_rw;
                for (size_t i = 0; r >= 0 && i < nl; i++) {
                        if (!list[i].resolved)
                                continue;
                        MaskList ml = { 0 };
                        if ((r = mask_walk(list[i].resolved, set, &ml, err)) < 0) {
                                mask_list_done(&ml);
                                break;
                        }
                        for (size_t k = 0; r >= 0 && k < ml.n; k++)
                                r = strv_consume(&out, path_join(list[i].resolved, ml.items[k].relpath));
                        mask_list_done(&ml);
                }
        }
        if (r < 0)
                return r;
        qsort(out, strv_length(out), sizeof *out, cmp_str);
        *ret = TAKE_PTR(out);
        return 0;
}
