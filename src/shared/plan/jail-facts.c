/* SPDX-License-Identifier: MIT */
/* The host-touching half of the jail plan: the mask walk, the protected
 * paths as they exist, the empty mount sources. The same code runs on the
 * daemon's host (local, docker) and on an ssh remote (its launcher). */
#include "jail-plan.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend-local.h"
#include "chase.h"
#include "fd-util.h"
#include "git-control.h"
#include "git-init.h"
#include "git-scan.h"
#include "glob.h"
#include "host-aside.h"
#include "mask-alias.h"
#include "mask-walk.h"
#include "path-util.h"
#include "protect-absent.h"
#include "strv.h"
#include "walk-cache.h"

static void mask_paths_free(VsMaskPath *m, size_t n) {
        for (size_t k = 0; k < n; k++)
                free(m[k].path);
        free(m);
}

void jail_facts_done(VsJailFacts *f) {
        if (!f)
                return;
        mask_paths_free(f->masks, f->n_masks);
        mask_paths_free(f->protected_missing, f->n_missing);
        strv_free(f->protected_existing);
        strv_free(f->git_controls);
        strv_free(f->protect_matches);
        put_asides_free(f->put_aside);
        if (f->git_base) {
                git_repos_done(f->git_base);
                free(f->git_base);
        }
        *f = (VsJailFacts){ 0 };
}

static int add_mask_path(VsMaskPath **a, size_t *n, char *path, bool dir) {
        if (!path)
                return -ENOMEM;
        VsMaskPath *nn = realloc(*a, (*n + 1) * sizeof *nn);
        if (!nn) {
                free(path);
                return -ENOMEM;
        }
        *a = nn;
        nn[(*n)++] = (VsMaskPath){ path, dir };
        return 0;
}

static bool under_masked_dir(const VsJailFacts *f, const char *path) {
        for (size_t k = 0; k < f->n_masks; k++)
                if (f->masks[k].dir && path_is_below_or_equal(path, f->masks[k].path))
                        return true;
        return false;
}

/* What a masked link's target is checked against (mask_link_target):
 * also_seen (jail-plan.h jail_facts_collect), and who puts a refused link
 * aside (maker, since, others: VsLinkAside). */
typedef struct LinkCtx {
        char *const *also_seen;
        const VsHostMaker *maker;
        const struct timespec *since;
        char *const *others;
} LinkCtx;

/* Other names (hard links) of masked files, masked too (mask-alias.h):
 * only when a masked file has more than one link is the tree walked. */
static int mask_link_target(const VsPolicy *p, VsJailFacts *f, const LinkCtx *lc, const char *root, const char *rel,
                            bool masked, VsError **err);

/* A symlink inside a directory masked whole: what the host writes to its
 * name (`secrets/prod.env -> ../notes/prod.env`) lands at its target,
 * which is masked in its own right as a masked name's is (an attack
 * review: the jail moved such a directory in under a masked name). It is
 * masked by where it is, whatever its own name: a directory masked as a
 * masked link's target (`.ssh -> keys`: keys/id_rsa, which no pattern
 * names, is the host's `.ssh/id_rsa`) was passed over as a name no mask
 * matched (attack review 11). */
static int mask_dir_links(const VsPolicy *p, VsJailFacts *f, const LinkCtx *lc, const char *dir, MaskList *links,
                          VsError **err) {
        int r = 0;
        /* Past a refused link, the later ones still have their put-aside
         * (collect_masks). */
        for (size_t j = 0; r != -ENOMEM && j < links->n; j++) {
                _cleanup_free_ char *abs = path_join(dir, links->items[j].relpath);
                const char *root = abs ? jail_plan_seen_through(p, abs, NULL) : NULL;
                const char *rel = root ? path_startswith(abs, root) : NULL;
                _cleanup_(vs_error_freep) VsError *more = NULL;
                int q = !abs ? -ENOMEM : rel && *rel ? mask_link_target(p, f, lc, root, rel, true, r >= 0 ? err : &more) : 0;
                if (r >= 0 || q == -ENOMEM)
                        r = q;
        }
        return r;
}

static int collect_mask_aliases(const VsPolicy *p, VsJailFacts *f, const LinkCtx *lc, VsError **err) {
        MaskInodes set = { 0 };
        int r = 0;
        /* f->masks grows meanwhile (a link's target): by index, each path
         * copied. Past a refusal the later directories' links still have
         * their put-aside (attack review 11: a decoy refused by design
         * made right after `mv stage .ssh` kept .ssh/id_rsa -> ../B/app.cfg
         * on disk); the start is refused after them. */
        for (size_t k = 0; r != -ENOMEM && k < f->n_masks; k++) {
                _cleanup_(vs_error_freep) VsError *more = NULL;
                VsError **e = r >= 0 ? err : &more;
                int q;
                if (!f->masks[k].dir)
                        q = mask_inodes_add_if_linked(&set, f->masks[k].path);
                else {
                        _cleanup_free_ char *dir = strdup(f->masks[k].path);
                        MaskList links = { 0 };
                        q = dir ? mask_inodes_add_tree(&set, dir, &links, e) : -ENOMEM;
                        if (q >= 0)
                                q = mask_dir_links(p, f, lc, dir, &links, e);
                        mask_list_done(&links);
                }
                if (r >= 0 || q == -ENOMEM)
                        r = q;
        }
        VsPath ws = { .written = (char *)".", .resolved = (char *)jail_plan_uncovered_workspace(p) };
        for (size_t pass = 0; r >= 0 && set.n > 0 && pass < 3; pass++) {
                const VsPath *list = pass == 2 ? &ws : pass ? p->ro_paths : p->rw_paths;
                size_t nl = pass == 2 ? 1 : pass ? p->n_ro : p->n_rw;
                for (size_t i = 0; r >= 0 && i < nl; i++) {
                        if (!list[i].resolved)
                                continue;
                        MaskList ml = { 0 };
                        r = mask_alias_walk(list[i].resolved, &set, &ml, err);
                        for (size_t k = 0; r >= 0 && k < ml.n; k++) {
                                _cleanup_free_ char *path = path_join(list[i].resolved, ml.items[k].relpath);
                                bool known = false;
                                for (size_t m = 0; path && m < f->n_masks && !known; m++)
                                        known = streq(f->masks[m].path, path);
                                if (!path)
                                        r = -ENOMEM;
                                else if (!known && !under_masked_dir(f, path))
                                        r = add_mask_path(&f->masks, &f->n_masks, TAKE_PTR(path), false);
                        }
                        mask_list_done(&ml);
                }
        }
        mask_inodes_done(&set);
        return r;
}

/* The writable roots, each walked once before anything is made
 * (mask_walk_all): its masks (rw_masks[i]), its protect matches (prot[i])
 * and the repositories git would take there (f->git_base, with the root
 * .git's stand-in), all from one read of each directory and one cache
 * record of it. The repositories must be known before the placeholders
 * and git_init's repository are made (collect_git): what is there then is
 * the host's. */
static int walk_rw(const VsPolicy *p, VsJailFacts *f, MaskList *rw_masks, MaskList *prot, WalkCacheUse *cache,
                   VsError **err) {
        _cleanup_strv_free_ char **roots = calloc(1, sizeof(char *));
        int r = 0;
        for (size_t i = 0; roots && r >= 0 && i < p->n_rw; i++)
                if (p->rw_paths[i].resolved)
                        r = strv_extend(&roots, p->rw_paths[i].resolved);
        if (!roots || r < 0 || !(f->git_base = calloc(1, sizeof *f->git_base)))
                return -ENOMEM;
        bool protect = p->protect && p->protect[0];
        /* Every root is walked though one fails: what the others hold
         * (and what a root's walk found beside a tree too deep) still
         * has its masked links put aside (jail_facts_collect). */
        int first = 0;
        for (size_t i = 0; i < p->n_rw; i++) {
                if (!p->rw_paths[i].resolved)
                        continue;
                r = mask_walk_all(p->rw_paths[i].resolved, p->mask_set, protect ? p->protect_set : NULL,
                                  protect ? roots : NULL, p->mask, protect ? p->protect : NULL, cache, f->git_base,
                                  &rw_masks[i], &prot[i], first < 0 ? NULL : err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && first == 0)
                        first = r;
        }
        return first < 0 ? first : git_scan_base_standin(p, f->git_base);
}

/* What the host made after walk_rw (made: git_init's repository, the git
 * placeholders, the protect placeholders, each with the directories above
 * it that making it may have created) matched as a walk after the making
 * would have. Must the masks cover these? Their contents are the host's
 * own (empty placeholders, "." in a commondir, git's skeleton: HEAD,
 * config, objects/, refs/), no secret of the user's. But a mask is the
 * user's word on what the agent must not see, by name ("**" "/.git/" to
 * hide every repository, "**" "/config", "**" "/HEAD"), and until the walk
 * came first it covered these; a protect glob naming one (a placeholder
 * for "cfg/local.d") must seal it, or the jail could fill it. So what the
 * walk has not seen is matched here, each path from the root down (an
 * ancestor listed already is not listed twice, a lane stops where it
 * matched) and a made directory walked whole: a handful of names and a
 * skeleton, against a second walk of the tree. Nothing else is made below
 * a writable root before the jail starts, and nothing below a read-only
 * one, whose walk (collect_masks) comes after the making anyway. */
static int walk_made(const VsPolicy *p, char *const *made, MaskList *rw_masks, MaskList *prot, VsError **err) {
        _cleanup_strv_free_ char **roots = calloc(1, sizeof(char *));
        int r = 0;
        for (size_t i = 0; roots && r >= 0 && i < p->n_rw; i++)
                if (p->rw_paths[i].resolved)
                        r = strv_extend(&roots, p->rw_paths[i].resolved);
        if (!roots || r < 0)
                return -ENOMEM;
        bool protect = p->protect && p->protect[0];
        for (size_t i = 0; made && made[0] && i < p->n_rw; i++)
                if (p->rw_paths[i].resolved &&
                    (r = mask_walk_made(p->rw_paths[i].resolved, p->mask_set, protect ? p->protect_set : NULL,
                                        protect ? roots : NULL, made, &rw_masks[i], &prot[i], err)) < 0)
                        return r;
        return 0;
}

/* Whether path lies in a listed path of the caller's other workspaces
 * (VsLinkAside.seen_by_others): what the host writes there their jails
 * read, unmasked by this workspace's masks. */
static bool seen_by_others(const LinkCtx *lc, const char *path) {
        for (char *const *o = lc->others; o && *o; o++)
                if (path_is_below_or_equal(path, *o))
                        return true;
        return false;
}

/* A masked link the start would refuse, put aside instead where a jail of
 * the workspace could have made it: in a writable listed path, changed
 * since lc->since (jail-plan.h jail_facts_collect). Left on disk,
 * the refusal stopped this workspace's jails, yet the host's write through
 * the link still landed at its target, where another workspace's jail
 * reads it (attack review 5: a user-owned /opt directory, another kept
 * home). 1 when put aside (noted in f->put_aside), 0 when it is not one
 * to put aside or could not be (then refused), or a negative errno. */
static int put_aside_link(const VsPolicy *p, VsJailFacts *f, const LinkCtx *lc, int pfd, const char *name,
                          const char *link) {
        if (!lc->since || (lc->since->tv_sec == 0 && lc->since->tv_nsec == 0))
                return 0;
        /* Where the jail writes: the listed path holding the link
         * innermost is a writable one (not a read-only path nested in it).
         * Inside a directory masked whole too: the jail can fill one before
         * it is masked (`mv stage secrets`; attack review 8). */
        bool writable = false;
        (void)jail_plan_seen_through(p, link, &writable);
        /* The jail's own: owned by the workspace's owner (its jail's uid on
         * the host). Another account's link in a shared writable path, or
         * root's in a root-owned directory listed writable, is not the
         * jail's doing and not this daemon's to rename (attack review 7:
         * outside the workspace the daemon renames it itself, as root). */
        struct stat st, wst;
        if (!writable || stat(p->workspace, &wst) < 0 || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISLNK(st.st_mode) || st.st_uid != wst.st_uid || st.st_ctim.tv_sec < lc->since->tv_sec ||
            (st.st_ctim.tv_sec == lc->since->tv_sec && st.st_ctim.tv_nsec < lc->since->tv_nsec))
                return 0;
        _cleanup_free_ char *dir = strdup(link);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (!slash)
                return -ENOMEM;
        *slash = 0;
        _cleanup_free_ char *moved = NULL;
        _cleanup_(vs_error_freep) VsError *e = NULL;
        if (host_put_aside(lc->maker, dir, name, false, true, st.st_dev, st.st_ino, &moved, &e) < 0)
                return 0;
        int r = put_asides_add(&f->put_aside, link, moved);
        return r < 0 ? r : 1;
}

/* A masked link the start leaves alone (its target where this jail sees
 * nothing): put aside all the same when a jail of the workspace could have
 * made it, since the host's write lands where another workspace's jail
 * may read (`ln -s ../B/app.cfg .env`: attack review 9), else left as the
 * host's own (a user's `.env -> ../shared-config/.env`). */
static int aside_or_leave(const VsPolicy *p, VsJailFacts *f, const LinkCtx *lc, int pfd, const char *name,
                          const char *link) {
        if (host_aside_named(name))
                return 0;
        int a = put_aside_link(p, f, lc, pfd, name, link);
        return a < 0 ? a : 0;
}

/* A masked name that is a symlink is not mounted over (bwrap would follow
 * it), yet what the host writes to that name (an editor, `echo KEY=.. >>
 * .env`) follows the link and lands at its target, which the masks may not
 * name: the jail read the secret there (attack review: `ln -s cfg/app.cfg
 * .env` in the jail, then the host's write). So the target is masked in
 * its own right where the jail sees it. The link's text is read with
 * readlinkat from its directory reached below the root without a link;
 * the target is resolved as the host's open would (chase_path: the host's
 * own links followed), stopping at any link in a writable path. A target
 * that cannot be masked so where the jail sees it (missing: the host's
 * write would create it; behind another link of a writable path, which the
 * host would follow too) refuses the start: the link must go, or lead to
 * a file that is there. */
static int mask_link_target(const VsPolicy *p, VsJailFacts *f, const LinkCtx *lc, const char *root, const char *rel,
                            bool masked, VsError **err) {
        _cleanup_free_ char *dir = strdup(rel);
        if (!dir)
                return -ENOMEM;
        char *slash = strrchr(dir, '/'), *name = slash ? slash + 1 : dir;
        if (slash)
                *slash = 0;
        _cleanup_close_ int rfd = chase_open_dir(root);
        _cleanup_close_ int pfd = rfd < 0 ? rfd : chase_beneath(rfd, slash ? dir : "", O_PATH | O_DIRECTORY);
        char text[4096];
        ssize_t n = pfd < 0 ? -1 : readlinkat(pfd, name, text, sizeof text - 1);
        if (n <= 0)
                return 0; /* no longer a link: the walk that found it was the last look */
        text[n] = 0;
        _cleanup_free_ char *link = path_join(root, rel);
        _cleanup_free_ char *link_dir = slash ? path_join(root, dir) : strdup(root);
        _cleanup_free_ char *joined = !link_dir ? NULL : text[0] == '/' ? strdup(text) : path_join(link_dir, text);
        _cleanup_free_ char *lexical = joined ? path_normalize(joined) : NULL;
        _cleanup_strv_free_ char **writable = NULL;
        if (!link || !lexical)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved && strv_extend(&writable, p->rw_paths[i].resolved) < 0)
                        return -ENOMEM;
        /* A link into /proc names a different file for each process that
         * opens it (/proc/self/cwd: the host's shell's working directory,
         * not the daemon's): not resolved here, refused. */
        bool proc = path_is_below_or_equal(lexical, "/proc") || path_is_below_or_equal(lexical, "/dev/fd") ||
                    path_is_below_or_equal(lexical, "/dev/stdin") || path_is_below_or_equal(lexical, "/dev/stdout") ||
                    path_is_below_or_equal(lexical, "/dev/stderr");
        _cleanup_(chase_result_done) ChaseResult res = { .fd = -1 };
        /* The text as the kernel reads it: ".." after the links before it
         * (lnk/../app.cfg is below where lnk leads, not beside .env). */
        int r = proc ? -EXDEV : chase_path(joined, writable, &res);
        if (r >= 0 && res.path && path_is_below_or_equal(res.path, "/proc"))
                r = -EXDEV;
        /* Where the jail sees the host's files but no mask of a host path
         * reaches (its kept home, bound at another path): refused. */
        const char *at = r >= 0 || r == -ENOENT ? res.path : NULL;
        for (char *const *a = lc->also_seen; a && *a; a++)
                if ((at && path_is_below_or_equal(at, *a)) || path_is_below_or_equal(lexical, *a))
                        r = -EREMCHG;
        struct stat st;
        /* A link the walk gave for its position, not its name (.ssh ->
         * keys, deploy/prod -> ../x/y): what the host writes below it
         * lands below its target; masked there whole unless the masks
         * match there as they do below the link. A missing target takes no
         * write (nothing below a dangling link can be made). */
        bool named = masked || glob_set_masks(p->mask_set, rel, false);
        if (!named && (r == -ENOENT || (r >= 0 && res.path && fstat(res.fd, &st) == 0 && !S_ISDIR(st.st_mode))))
                return 0;
        if (!named && r >= 0 && res.path) {
                const char *troot = jail_plan_seen_through(p, res.path, NULL);
                const char *trel = troot ? path_startswith(res.path, troot) : NULL;
                if (glob_set_link_covered(p->mask_set, rel, trel))
                        return 0;
        }
        /* In a system directory the jail binds read-only (/opt, /etc): no
         * mask is put there and nothing watches it (a user-owned /opt/tool,
         * where the host's write lands readable in the jail): refused,
         * unless a listed path holds it (then it is masked as theirs). */
        for (const char *const *sd = vs_local_system_dirs; (r >= 0 || r == -ENOENT) && *sd; sd++)
                if ((at && path_is_below_or_equal(at, *sd) && !jail_plan_seen_through(p, at, NULL)) ||
                    (path_is_below_or_equal(lexical, *sd) && !jail_plan_seen_through(p, lexical, NULL)))
                        r = -ENOTDIR;
        if (r >= 0 && res.path && fstat(res.fd, &st) == 0) {
                if (!jail_plan_seen_through(p, res.path, NULL))
                        return aside_or_leave(p, f, lc, pfd, name, link);
                /* Masked here, but another workspace's jail reads it there
                 * (a sibling's `ro_paths = ["<this>/shared"]`): a jail-made
                 * link is put aside, else masked as before (attack review
                 * 11: the jail made the file first, and the rule for a
                 * missing target alone was moot). */
                int a = !host_aside_named(name) && seen_by_others(lc, res.path) ? put_aside_link(p, f, lc, pfd, name, link) : 0;
                if (a != 0)
                        return a < 0 ? a : 0;
                if (under_masked_dir(f, res.path))
                        return 0;
                for (size_t k = 0; k < f->n_masks; k++)
                        if (streq(f->masks[k].path, res.path))
                                return 0;
                return add_mask_path(&f->masks, &f->n_masks, strdup(res.path), S_ISDIR(st.st_mode));
        }
        const char *where = r == -ELOOP && res.link ? res.link : res.path ? res.path : lexical;
        if (r == -ENOENT && res.path && under_masked_dir(f, res.path))
                return 0; /* it would be made below a directory the jail sees empty */
        if (r != -EXDEV && r != -EREMCHG && r != -ENOTDIR && !jail_plan_seen_through(p, where, NULL) && !jail_plan_seen_through(p, lexical, NULL))
                return aside_or_leave(p, f, lc, pfd, name, link); /* the jail sees neither the target nor the way to it */
        /* A link put aside already (or named as one): its target masked
         * where it can be, as any masked link's, but neither refused nor
         * put aside again: no host tool writes to that name, and where a
         * mask matched the new name too (`.env.*`) it was renamed at each
         * start, each rename a new start, without end (attack review 7). */
        if (host_aside_named(name))
                return 0;
        /* A missing target in the workspace's own tree: the host's write
         * lands there, masked at the next start; refused as before, so that
         * a user's own fresh link to a secret not written yet is not renamed
         * away from its mask (attack review 8). What lands where another
         * jail may read (another listed path, which another workspace may
         * list too: review 9; a system directory, a kept home, the runtime
         * directory, another link's target) is put aside. */
        const char *target = res.path ? res.path : lexical;
        /* ... unless another workspace lists where it would be made: the
         * host's write creates it where that jail reads it (a sibling's
         * `ro_paths = ["<this>/shared"]`; attack review 10). */
        bool own = r == -ENOENT && path_is_below_or_equal(target, p->workspace) && !seen_by_others(lc, target);
        int a = own ? 0 : put_aside_link(p, f, lc, pfd, name, link);
        if (a != 0)
                return a < 0 ? a : 0;
        return vs_error_set_kind(
                err, -ELOOP, "sandbox_unavailable",
                "%s is masked and a symlink to \"%s\", %s: what the host writes to it would be readable in the jail; "
                "remove the link, or point it at a file in the workspace that is there",
                link, text,
                r == -ENOENT  ? "which does not exist (a write through the link would create it)"
                : r == -ELOOP ? "reached through another symlink in a writable path"
                : r == -EXDEV ? "into /proc (a different file for each process that opens it)"
                : r == -EREMCHG ? "into what the jails see at another path (a kept home, the worker, the daemon's runtime files)"
                : r == -ENOTDIR ? "into a system directory the jail sees read-only, where no mask is put"
                              : "which cannot be resolved");
}

/* The masks: the writable roots' from their walk (walk_rw, walk_made),
 * and every other listed root walked with the mask patterns, relative to
 * it. */
static int collect_masks(const VsPolicy *p, VsJailFacts *f, const LinkCtx *lc, MaskList *rw_masks, WalkCacheUse *cache,
                         VsError **err) {
        const VsGlobSet *set = p->mask_set;
        int r = 0;
        /* The workspace mounted read-only for want of a listed path over it
         * is masked like a listed root. */
        VsPath ws = { .written = (char *)".", .resolved = (char *)jail_plan_uncovered_workspace(p) };
        for (size_t pass = 0; pass < 3; pass++) {
                const VsPath *list = pass == 2 ? &ws : pass ? p->ro_paths : p->rw_paths;
                size_t nl = pass == 2 ? 1 : pass ? p->n_ro : p->n_rw;
                for (size_t i = 0; i < nl; i++) {
                        if (!list[i].resolved)
                                continue;
                        MaskList ml = { 0 }, pl = { 0 };
                        int w = 0;
                        if (pass == 0) {
                                ml = rw_masks[i];
                                rw_masks[i] = (MaskList){ 0 };
                        } else if ((w = mask_walk_both(list[i].resolved, set, NULL, NULL, p->mask, NULL, cache, &ml, &pl,
                                                       r >= 0 ? err : NULL)) < 0) {
                                /* The start is refused, but the links the
                                 * walk found, and every later root's, still
                                 * have their put-aside. */
                                if (w == -ENOMEM) {
                                        mask_list_done(&ml);
                                        mask_list_done(&pl);
                                        return w;
                                }
                                if (r >= 0)
                                        r = w;
                        }
                        mask_list_done(&pl);
                        for (size_t k = 0; r != -ENOMEM && k < ml.n; k++) {
                                /* Symlinks are not mounted over: bwrap would follow them.
                                 * Their targets are masked instead (mask_link_target). */
                                if (ml.items[k].kind != MASK_SYMLINK) {
                                        if (r >= 0)
                                                r = add_mask_path(&f->masks, &f->n_masks,
                                                                  path_join(list[i].resolved, ml.items[k].relpath),
                                                                  ml.items[k].kind == MASK_DIR);
                                        continue;
                                }
                                /* Past a refused link the start is refused, but every
                                 * later link still has its put-aside: a link refused by
                                 * design made first (a missing target in the
                                 * workspace's own tree) kept a link into another
                                 * workspace on disk (attack review 10). */
                                _cleanup_(vs_error_freep) VsError *more = NULL;
                                int q = mask_link_target(p, f, lc, list[i].resolved, ml.items[k].relpath, false,
                                                         r >= 0 ? err : &more);
                                if (r >= 0 || q == -ENOMEM)
                                        r = q;
                        }
                        mask_list_done(&ml);
                }
        }
        /* The links inside directories masked whole have their put-aside
         * too, though a link above refused the start. */
        _cleanup_(vs_error_freep) VsError *more = NULL;
        int a = collect_mask_aliases(p, f, lc, r >= 0 ? err : &more);
        return r < 0 && a != -ENOMEM ? r : a;
}

static bool below_rw(const VsPolicy *p, const char *path) {
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved && path_is_below_or_equal(path, p->rw_paths[i].resolved))
                        return true;
        return false;
}

/* An existing protected path is protected. A symlinked one is protected
 * where its text leads, read with readlink, never followed: only when that
 * lies below a writable root (elsewhere the jail cannot write it anyway) and
 * is reached there without another link (no host-side code follows a link
 * the jail could have made). */
static int add_existing(const VsPolicy *p, VsJailFacts *f, const char *path, const struct stat *st) {
        if (!S_ISLNK(st->st_mode))
                return strv_contains(f->protected_existing, path) ? 0 : strv_extend(&f->protected_existing, path);
        /* The link itself, where the jail writes: no mount holds it, so
         * what the jail puts in its place is put aside at the jail's end
         * (git-scan.h VsGitLink), wherever the link leads. */
        bool writable = false;
        int k = f->git_base && jail_plan_seen_through(p, path, &writable) && writable ? git_links_note(f->git_base, path, st) : 0;
        if (k < 0)
                return k;
        char target[4096];
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n <= 0)
                return 0;
        target[n] = 0;
        _cleanup_free_ char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (!slash)
                return -ENOMEM;
        slash[slash == dir] = 0;
        _cleanup_free_ char *joined = target[0] == '/' ? strdup(target) : path_join(dir, target);
        _cleanup_free_ char *lexical = joined ? path_normalize(joined) : NULL;
        if (!lexical)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_rw; i++) {
                const char *root = p->rw_paths[i].resolved;
                const char *rel = root ? path_startswith(lexical, root) : NULL;
                if (!rel)
                        continue;
                _cleanup_close_ int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                int fd = rfd < 0 ? -errno : chase_beneath(rfd, rel, O_PATH);
                if (fd < 0)
                        return 0;
                safe_close(fd);
                return strv_contains(f->protected_existing, lexical) ? 0 : strv_extend(&f->protected_existing, lexical);
        }
        return 0;
}

/* The .git control files (git-control.h): an existing one is protected;
 * a missing one where the jail could create it gets its placeholder
 * first, then is protected like the others. With git_init = true a
 * missing root .git where the jail could create one is a repository
 * first (git-init.h), whose control files are then those. */
static bool same_times(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
               a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
               a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Whether control c takes a placeholder now: missing, one git may make,
 * below a writable root. *there: whether it is there at all (*st its
 * lstat then). */
static bool git_control_missing(const VsPolicy *p, const VsGitControl *c, struct stat *st, bool *there) {
        *there = lstat(c->path, st) == 0;
        return !*there && errno == ENOENT && c->placeholder && below_rw(p, c->path);
}

/* f->git_base: the repositories there before anything is made (walk_rw),
 * the host's; their controls found (*gc), git_init's repository made
 * first. What may be made is added to *made (walk_made); what a batching
 * maker makes goes in *items (rels into gc's paths), for the batch the
 * protect placeholders are made in (one monitor child for them all);
 * make_git_controls() makes the rest. */
/* Whether dir is at or below a directory the writable roots' walk masked
 * whole (rw_masks: one list per root, relative to it). */
static bool in_masked_dir(const VsPolicy *p, const MaskList *rw_masks, const char *dir) {
        for (size_t i = 0; rw_masks && i < p->n_rw; i++) {
                const char *root = p->rw_paths[i].resolved;
                const char *rel = root ? path_startswith(dir, root) : NULL;
                for (size_t k = 0; rel && k < rw_masks[i].n; k++)
                        if (rw_masks[i].items[k].kind == MASK_DIR && path_is_below_or_equal(rel, rw_masks[i].items[k].relpath))
                                return true;
        }
        return false;
}

static int collect_git(const VsPolicy *p, const VsHostMaker *maker, VsJailFacts *f, const MaskList *rw_masks,
                       char ***made, VsGitControls *gc, VsHostItem **items, size_t *n_items, VsError **err) {
        _cleanup_free_ char *dotgit = path_join(p->workspace, ".git");
        if (!dotgit)
                return -ENOMEM;
        int r = 0;
        if (p->git_init && below_rw(p, dotgit)) {
                struct stat before, after;
                bool was = lstat(dotgit, &before) == 0;
                if ((r = git_repo_make(p->workspace, maker, err)) < 0)
                        return r;
                /* Made, or filled (an empty placeholder .git): its tree is new. */
                if (lstat(dotgit, &after) == 0 && (!was || !same_times(&before, &after)) && strv_extend(made, dotgit) < 0)
                        return -ENOMEM;
        }
        /* A repository in a masked directory is out of the jail's reach
         * (an empty read-only mount): nothing of it to seal, no placeholder
         * to make in the host's tree (was: the start refused, its
         * protected config not there to check in the jail). */
        VsGitRepos reach = { .items = calloc(f->git_base->n + 1, sizeof(VsGitRepo)), .dirs = f->git_base->dirs,
                             .truncated = f->git_base->truncated };
        if (!reach.items)
                return -ENOMEM;
        for (size_t i = 0; i < f->git_base->n; i++)
                if (!in_masked_dir(p, rw_masks, f->git_base->items[i].dir))
                        reach.items[reach.n++] = f->git_base->items[i];
        r = git_controls_collect_scan(p->workspace, &reach, gc);
        free(reach.items); /* the dirs are f->git_base's */
        if (r == -EBADMSG)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "%s",
                                         gc->error ? gc->error : "a git config cannot be read");
        if (r == -E2BIG)
                return vs_error_set_kind(err, r, "sandbox_unavailable",
                                         "%s/.git: too many nested git directories (submodules, worktrees) to protect",
                                         p->workspace);
        if (r < 0)
                return r;
        if (!(*items = calloc(gc->n + 1, sizeof **items)))
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < gc->n; i++) {
                const VsGitControl *c = &gc->items[i];
                struct stat st;
                bool there;
                if (!git_control_missing(p, c, &st, &there))
                        continue;
                if ((r = strv_extend(made, c->path)) >= 0 && maker && maker->make_many &&
                    (r = git_control_item(c, maker, &(*items)[*n_items])) > 0)
                        (*n_items)++;
        }
        return r < 0 ? r : 0;
}

/* gc's controls, sealed; a placeholder still missing (no batching maker,
 * or its batch failed before it) made one at a time, each failure
 * answered for itself. */
/* Whether the jail, running as this process's uid (not root), could
 * neither make path nor replace a directory on its way: path lies in the
 * workspace's own .git (sealed or pinned in the jail: never moved), and
 * every directory from that .git down to path's nearest existing one is
 * another account's and closed to this uid (a root-owned .git a user's
 * CLI serves). A directory of its own it could chmod; one it may write
 * in, it could empty and refill; and outside the root's .git, one it
 * could move aside whole with its parent (an attack review). */
static bool jail_cannot_reach(const char *workspace, const char *path) {
        _cleanup_free_ char *dotgit = path_join(workspace, ".git");
        _cleanup_free_ char *dir = strdup(path);
        if (geteuid() == 0 || !dotgit || !dir || !path_is_below_or_equal(path, dotgit))
                return false;
        for (bool seen = false;;) {
                struct stat st;
                if (lstat(dir, &st) == 0) {
                        if (!S_ISDIR(st.st_mode) || st.st_uid == geteuid() ||
                            faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) == 0)
                                return false;
                        seen = true;
                } else if (errno != ENOENT)
                        return false;
                if (streq(dir, dotgit))
                        return seen;
                char *slash = strrchr(dir, '/');
                if (!slash || slash == dir)
                        return false;
                *slash = 0;
        }
}

static int make_git_controls(const VsPolicy *p, const VsHostMaker *maker, VsJailFacts *f, const VsGitControls *gc,
                             VsError **err) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < gc->n; i++) {
                const VsGitControl *c = &gc->items[i];
                struct stat st;
                if ((r = strv_extend(&f->git_controls, c->path)) < 0)
                        break;
                /* One lstat for a control that is there, two for one made. */
                bool there;
                if (git_control_missing(p, c, &st, &there)) {
                        _cleanup_(vs_error_freep) VsError *perr = NULL;
                        r = git_control_make_placeholder(c, maker, &perr);
                        /* A read-only file system is read-only to the jail
                         * too. A refusal by permission (a .git made
                         * read-only) is no proof the jail would meet one: it
                         * may chmod its owner's directory, or move another
                         * account's aside and make its own (an attack review
                         * planted a repository's hooks so); only in the
                         * root's own .git, closed to it all the way down, it
                         * cannot (jail_cannot_reach). */
                        if (r == -EROFS || ((r == -EACCES || r == -EPERM) && jail_cannot_reach(p->workspace, c->path)))
                                r = 0;
                        if (r < 0) {
                                if (err && perr)
                                        *err = TAKE_PTR(perr);
                                break;
                        }
                        there = lstat(c->path, &st) == 0;
                }
                if (there)
                        r = add_existing(p, f, c->path, &st);
        }
        return r;
}

/* What the protect globs name below the writable roots, found by the
 * same walk as the masks (collect_masks; a matched directory is sealed
 * whole), and
 * through a symlinked directory too (.vscode -> shared-vscode): what such
 * a name resolves to is protected and refused by the file tools as well.
 * Under a read-only root everything is read-only already. A missing one a
 * glob spells out got its placeholder first (protect-absent.h). */
static int collect_protect_globs(const VsPolicy *p, VsJailFacts *f, MaskList *prot) {
        if (!(f->protect_matches = calloc(1, sizeof(char *))))
                return -ENOMEM;
        int r = 0;
        for (size_t i = 0; i < p->n_rw; i++) {
                if (!p->rw_paths[i].resolved)
                        continue;
                MaskList ml = prot[i];
                prot[i] = (MaskList){ 0 };
                for (size_t k = 0; r >= 0 && k < ml.n; k++) {
                        _cleanup_free_ char *path = path_join(p->rw_paths[i].resolved, ml.items[k].relpath);
                        _cleanup_free_ char *real = path ? realpath(path, NULL) : NULL;
                        struct stat st;
                        if (!path)
                                r = -ENOMEM;
                        else if (lstat(path, &st) < 0)
                                continue;
                        /* Reached through a symlinked directory: protected
                         * where it leads, like a symlinked match, when that
                         * is below a writable root (mask_walk_links follows
                         * only such links; a link re-pointed since is not
                         * followed out of the roots). */
                        else if (real && !streq(real, path) && !S_ISLNK(st.st_mode) && (!below_rw(p, real) || stat(real, &st) < 0))
                                continue;
                        else if ((r = add_existing(p, f, real && !S_ISLNK(st.st_mode) ? real : path, &st)) >= 0 &&
                                 !strv_contains(f->protect_matches, path))
                                r = strv_extend(&f->protect_matches, path);
                        if (r >= 0 && real && !strv_contains(f->protect_matches, real))
                                r = strv_extend(&f->protect_matches, real);
                }
                mask_list_done(&ml);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Each protected path: an existing one is protected (a symlinked one where
 * it leads); a missing one whose parent directory exists is recorded, so
 * the plan seals it with an empty mount and the agent cannot create it.
 * Those under .git are the git controls' (collect_git). */
static int collect_protected(const VsPolicy *p, char *const *protected_paths, const VsHostMaker *maker, VsJailFacts *f,
                             const MaskList *rw_masks, char ***ret_sealed,
                             char ***made, VsError **err) {
        if (!(f->protected_existing = calloc(1, sizeof(char *))) || !(f->git_controls = calloc(1, sizeof(char *))))
                return -ENOMEM;
        _cleanup_free_ char *dotgit = path_join(p->workspace, ".git");
        if (!dotgit)
                return -ENOMEM;
        for (char *const *pp = protected_paths; pp && *pp; pp++) {
                struct stat st;
                int r = 0;
                if (path_startswith(*pp, dotgit))
                        continue;
                if (lstat(*pp, &st) == 0)
                        r = add_existing(p, f, *pp, &st);
                else if (errno == ENOENT) {
                        _cleanup_free_ char *parent = strdup(*pp);
                        char *slash = parent ? strrchr(parent, '/') : NULL;
                        if (!slash)
                                return -ENOMEM;
                        *slash = 0;
                        /* Not a deleted vectora.toml: its mount point would
                         * be a new empty file in the user's tree. The jail
                         * may make one; it is then a config like any, whose
                         * loosening waits for approval, and a deleted one is
                         * a pending loosening already (approval.h). */
                        if (streq(slash + 1, VS_CONFIG_FILE) && streq(parent, p->workspace))
                                continue;
                        if (lstat(parent, &st) == 0 && S_ISDIR(st.st_mode))
                                r = add_mask_path(&f->protected_missing, &f->n_missing, strdup(*pp), false);
                }
                if (r < 0)
                        return r;
        }
        VsGitControls gc = { 0 };
        _cleanup_free_ VsHostItem *items = NULL;
        size_t n_items = 0;
        int r = collect_git(p, maker, f, rw_masks, made, &gc, &items, &n_items, err);
        _cleanup_strv_free_ char **absent = NULL, **links = NULL;
        if (r >= 0)
                r = protect_absent_fill(p, maker, items, n_items, ret_sealed, &absent, &links, err);
        /* The links on the way to a placeholder made where they lead: what
         * the jail puts in their place is put aside at its end. */
        for (char **l = links; r >= 0 && f->git_base && l && *l; l++) {
                bool writable = false;
                if (jail_plan_seen_through(p, *l, &writable) && writable)
                        r = git_links_note(f->git_base, *l, NULL);
        }
        if (r >= 0)
                r = make_git_controls(p, maker, f, &gc, err);
        git_controls_done(&gc);
        for (char **a = absent; r >= 0 && a && *a; a++)
                r = strv_extend(made, *a);
        return r;
}

/* The facts in the order they depend on each other: the writable roots'
 * walk (masks, protect globs, repositories) before anything is made; the
 * placeholders and git_init's repository, which need those repositories;
 * then what was made matched as the walk would have matched it, and the
 * read-only roots walked. */
int jail_facts_collect(const VsPolicy *p, char *const *protected_paths, char *const *also_seen, WalkCacheUse *cache,
                       const VsHostMaker *maker, const VsLinkAside *aside, VsJailFacts *ret, VsError **err) {
        VsJailFacts f = { 0 };
        const LinkCtx lc = { .also_seen = also_seen, .maker = maker, .since = aside ? &aside->since : NULL,
                             .others = aside ? aside->seen_by_others : NULL };
        int r = policy_sets_check(p, err);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **sealed = NULL, **made = calloc(1, sizeof(char *));
        MaskList *prot = calloc(p->n_rw + 1, sizeof *prot), *rw_masks = calloc(p->n_rw + 1, sizeof *rw_masks);
        if (!prot || !rw_masks || !made)
                r = -ENOMEM;
        if (r >= 0 && (r = walk_rw(p, &f, rw_masks, prot, cache, err)) < 0) {
                vs_error_prefix(err, "finding the paths to mask");
                /* The start is refused, but the masked links the walk
                 * found still get their put-aside: a tree too deep for
                 * the walk, made by the jail beside `.env ->
                 * ../B/app.cfg`, kept the link on disk while the host
                 * wrote through it (attack review 10). */
                _cleanup_(vs_error_freep) VsError *more = NULL;
                if (r != -ENOMEM)
                        (void)collect_masks(p, &f, &lc, rw_masks, cache, &more);
        }
        if (r >= 0)
                r = collect_protected(p, protected_paths, maker, &f, rw_masks, &sealed, &made, err);
        if (r >= 0 && ((r = walk_made(p, made, rw_masks, prot, err)) < 0 || (r = collect_masks(p, &f, &lc, rw_masks, cache, err)) < 0))
                vs_error_prefix(err, "finding the paths to mask");
        if (r >= 0)
                r = collect_protect_globs(p, &f, prot);
        for (size_t i = 0; (prot || rw_masks) && i < p->n_rw; i++) {
                if (prot)
                        mask_list_done(&prot[i]);
                if (rw_masks)
                        mask_list_done(&rw_masks[i]);
        }
        free(prot);
        free(rw_masks);
        /* Tool directories sealed whole for a missing file of the user's list. */
        for (char *const *s = sealed; r >= 0 && s && *s; s++) {
                struct stat st;
                if (lstat(*s, &st) == 0 && (r = add_existing(p, &f, *s, &st)) >= 0 && !strv_contains(f.protect_matches, *s))
                        r = strv_extend(&f.protect_matches, *s);
        }
        if (r < 0) {
                /* What was put aside before the refusal is the caller's to
                 * report (renamed whatever becomes of the start). */
                VsPutAsides *moved = TAKE_PTR(f.put_aside);
                jail_facts_done(&f);
                *ret = (VsJailFacts){ .put_aside = moved };
                return r;
        }
        *ret = f;
        return 0;
}

int jail_empty_sources(const char *dir, char **ret_file, char **ret_dir, VsError **err) {
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create runtime directory %s: %m", dir);
        _cleanup_free_ char *f = path_join(dir, "empty-file");
        _cleanup_free_ char *d = path_join(dir, "empty-dir");
        if (!f || !d)
                return -ENOMEM;
        struct stat st;
        if (lstat(f, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != 0) {
                unlink(f);
                int fd = open(f, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
                if (fd < 0 && errno != EEXIST)
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create %s: %m", f);
                safe_close(fd);
        }
        if (lstat(d, &st) < 0 || !S_ISDIR(st.st_mode)) {
                unlink(d);
                if (mkdir(d, 0555) < 0 && errno != EEXIST)
                        return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create %s: %m", d);
        }
        /* The jail may run as another uid than the daemon: keep them readable. */
        chmod(dir, 0755);
        *ret_file = TAKE_PTR(f);
        *ret_dir = TAKE_PTR(d);
        return 0;
}

int jail_own_sources(const char *dir, char **ret_holder, char **ret_file, char **ret_dir, VsError **err) {
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create runtime directory %s: %m", dir);
        _cleanup_free_ char *holder = path_join(dir, "masks-XXXXXX");
        if (!holder)
                return -ENOMEM;
        if (!mkdtemp(holder))
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot create a directory in %s: %m", dir);
        _cleanup_free_ char *f = path_join(holder, "empty-file");
        _cleanup_free_ char *d = path_join(holder, "empty-dir");
        int fd = f && d ? open(f, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444) : -ENOMEM;
        if (fd < 0 || mkdir(d, 0555) < 0 || chmod(holder, 0755) < 0) {
                int e = fd == -ENOMEM ? ENOMEM : errno;
                safe_close(fd);
                jail_own_sources_remove(holder);
                return e == ENOMEM ? -ENOMEM
                                   : vs_error_set_kind(err, -e, "sandbox_unavailable", "cannot create the mask sources in %s: %s",
                                                       holder, strerror(e));
        }
        safe_close(fd);
        /* The jail may run as another uid than the daemon: keep them readable. */
        chmod(dir, 0755);
        *ret_holder = TAKE_PTR(holder);
        *ret_file = TAKE_PTR(f);
        *ret_dir = TAKE_PTR(d);
        return 0;
}

void jail_own_sources_remove(const char *holder) {
        if (!holder)
                return;
        _cleanup_close_ int fd = open(holder, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        (void)unlinkat(fd, "empty-file", 0);
        (void)unlinkat(fd, "empty-dir", AT_REMOVEDIR);
        (void)rmdir(holder);
}

/* The listed paths as this host resolves them, by the same rule as the
 * daemon's host (config-load.c): a symlink in the workspace or a writable
 * listed path is never followed (the remote jail could have made it), and
 * refuses the start; a missing path is left out, or refused under
 * lockdown (rule 5), as is one that goes through a symlink here. */
static int resolve_remote_one(const char *path, char *const *untrusted, bool lockdown, char **ret, VsError **err) {
        ChaseResult cr;
        int r = chase_path(path, untrusted, &cr);
        if (r == -ENOENT && !lockdown) {
                chase_result_done(&cr);
                *ret = NULL;
                return 0;
        }
        if (r == -ELOOP && cr.link)
                r = vs_error_set_kind(err, r, "sandbox_unavailable",
                                      "%s goes through the symlink %s -> %s on the remote host, in the workspace or a "
                                      "writable path, where the jail can make links; it is never followed: remove it",
                                      path, cr.link, cr.link_target);
        else if (r < 0)
                r = vs_error_set_kind(err, r, "sandbox_unavailable", "%s%s on the remote host: %s",
                                      lockdown ? "lockdown: " : "", path, strerror(-r));
        else if (lockdown && !streq(cr.path, path))
                r = vs_error_set_kind(err, -ELOOP, "sandbox_unavailable", "lockdown: %s is a symlink on the remote host (to %s)",
                                      path, cr.path);
        if (r >= 0)
                *ret = TAKE_PTR(cr.path);
        chase_result_done(&cr);
        return r;
}

static int resolve_remote_list(char *const *in, char *const *untrusted, bool lockdown, VsPath **ret, size_t *ret_n,
                               VsError **err) {
        size_t n = strv_length(in), k = 0;
        VsPath *out = calloc(n + 1, sizeof *out);
        if (!out)
                return -ENOMEM;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                char *real = NULL;
                if ((r = resolve_remote_one(in[i], untrusted, lockdown, &real, err)) < 0 || !real)
                        continue;
                out[k].written = in[i];
                out[k++].resolved = real;
        }
        if (r < 0) {
                for (size_t i = 0; i < k; i++)
                        free(out[i].resolved);
                free(out);
                return r;
        }
        *ret = out;
        *ret_n = k;
        return 0;
}

static void remote_list_free(VsPath *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                free(l[i].resolved);
        free(l);
}

int jail_plan_make(const VsPolicy *p, char *const *protected_paths, char *const *also_seen, const char *empty_file,
                   const char *empty_dir, char *const *env, WalkCacheUse *cache, const VsHostMaker *maker,
                   const VsLinkAside *aside, VsJailPlan **ret, struct VsGitRepos **ret_git_base,
                   VsPutAsides **ret_put_aside, VsError **err) {
        VsJailFacts f = { 0 };
        int r = jail_facts_collect(p, protected_paths, also_seen, cache, maker, aside, &f, err);
        if (r >= 0)
                r = jail_plan_build(p, protected_paths, &f, empty_file, empty_dir, env, ret);
        if (r >= 0 && ret_git_base)
                *ret_git_base = TAKE_PTR(f.git_base);
        if (ret_put_aside)
                *ret_put_aside = TAKE_PTR(f.put_aside);
        jail_facts_done(&f);
        return r;
}

int jail_plan_remote(const VsRemoteJail *j, const char *empty_file, const char *empty_dir, VsJailPlan **ret,
                     VsError **err) {
        VsPolicy p = {
                .workspace = (char *)j->workspace,
                .sandboxed = true,
                .mask = j->mask,
                .protect = j->protect,
                .git_init = j->git_init,
                .no_gpu = j->no_gpu,
                .lockdown = j->lockdown,
                .network = j->network,
        };
        /* The writable trees grow with each writable path resolved, until
         * they stop growing (config_resolve() does the same). */
        _cleanup_strv_free_ char **untrusted = NULL;
        int r = strv_extend(&untrusted, j->workspace);
        for (size_t round = 0; r >= 0 && round <= strv_length(j->rw); round++) {
                remote_list_free(p.rw_paths, p.n_rw);
                p.rw_paths = NULL;
                p.n_rw = 0;
                size_t before = strv_length(untrusted);
                r = resolve_remote_list(j->rw, untrusted, j->lockdown, &p.rw_paths, &p.n_rw, err);
                for (size_t i = 0; r >= 0 && i < p.n_rw; i++)
                        if (!strv_contains(untrusted, p.rw_paths[i].resolved))
                                r = strv_extend(&untrusted, p.rw_paths[i].resolved);
                if (r < 0 || strv_length(untrusted) == before)
                        break;
        }
        if (r >= 0)
                r = resolve_remote_list(j->ro, untrusted, j->lockdown, &p.ro_paths, &p.n_ro, err);
        /* Its patterns compiled as every policy's are (config.h). */
        if (r >= 0)
                r = policy_compile_sets(&p, err);
        if (r >= 0)
                r = jail_plan_make(&p, j->protected_paths, NULL, empty_file, empty_dir, j->env, NULL, NULL, NULL, ret, NULL, NULL,
                                   err);
        policy_sets_done(&p);
        remote_list_free(p.rw_paths, p.n_rw);
        remote_list_free(p.ro_paths, p.n_ro);
        return r;
}
