/* SPDX-License-Identifier: MIT */
/* The pure half of the jail plan: policy + host facts -> ordered mounts. */
#include "jail-plan.h"

#include <string.h>

#include "git-scan.h"
#include "path-util.h"
#include "strv.h"

void jail_plan_free(VsJailPlan *plan) {
        if (!plan)
                return;
        for (size_t i = 0; i < plan->n_mounts; i++) {
                free(plan->mounts[i].dest);
                free(plan->mounts[i].src);
        }
        free(plan->mounts);
        free(plan->workspace);
        strv_free(plan->protected_paths);
        strv_free(plan->env);
        free(plan);
}

static int push(VsJailPlan *plan, VsMountKind kind, const char *dest, const char *src, bool dir, bool protects) {
        VsJailMount *m = realloc(plan->mounts, (plan->n_mounts + 1) * sizeof *m);
        if (!m)
                return -ENOMEM;
        plan->mounts = m;
        m[plan->n_mounts] = (VsJailMount){ .kind = kind, .dest = strdup(dest), .src = strdup(src), .dir = dir,
                                           .protects = protects };
        if (!m[plan->n_mounts].dest || !m[plan->n_mounts].src) {
                free(m[plan->n_mounts].dest);
                free(m[plan->n_mounts].src);
                return -ENOMEM;
        }
        plan->n_mounts++;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_depth(const void *a, const void *b) {
        size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
        return la < lb ? -1 : la > lb;
}

const char *jail_plan_uncovered_workspace(const VsPolicy *p) {
        for (size_t k = 0; k < 2; k++) {
                const VsPath *l = k ? p->ro_paths : p->rw_paths;
                for (size_t i = 0; i < (k ? p->n_ro : p->n_rw); i++)
                        if (l[i].resolved && path_startswith(p->workspace, l[i].resolved))
                                return NULL;
        }
        return p->workspace;
}

const char *jail_plan_seen_through(const VsPolicy *p, const char *path, bool *ret_writable) {
        const char *best = jail_plan_uncovered_workspace(p);
        bool writable = false;
        if (best && !path_is_below_or_equal(path, best))
                best = NULL;
        for (size_t pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < (pass ? p->n_ro : p->n_rw); i++) {
                        const char *r = pass ? p->ro_paths[i].resolved : p->rw_paths[i].resolved;
                        if (!r || !path_is_below_or_equal(path, r))
                                continue;
                        size_t n = strlen(r), b = best ? strlen(best) : 0;
                        if (!best || n > b || (pass == 1 && n == b)) {
                                best = r;
                                writable = pass == 0;
                        }
                }
        if (ret_writable)
                *ret_writable = writable;
        return best;
}

/* The listed paths (resolved ones) at their real paths, plus the
 * workspace read-only when no listed path covers it (rw_paths = [] makes
 * a read-only workspace), parents before children so a nested path is
 * mounted over its parent. */
static int add_listed(VsJailPlan *plan, const VsPolicy *p) {
        _cleanup_strv_free_ char **order = calloc(1, sizeof(char *));
        if (!order)
                return -ENOMEM;
        int r;
        for (size_t i = 0; i < p->n_ro; i++)
                if (p->ro_paths[i].resolved && (r = strv_extend(&order, p->ro_paths[i].resolved)) < 0)
                        return r;
        for (size_t i = 0; i < p->n_rw; i++)
                if (p->rw_paths[i].resolved && (r = strv_extend(&order, p->rw_paths[i].resolved)) < 0)
                        return r;
        if (jail_plan_uncovered_workspace(p) && (r = strv_extend(&order, p->workspace)) < 0)
                return r;
        size_t n = strv_length(order);
        /* Stable by depth: ro before rw at equal length, as listed. */
        for (size_t i = 1; i < n; i++)
                for (size_t k = i; k > 0 && cmp_depth(&order[k - 1], &order[k]) > 0; k--) {
                        char *t = order[k];
                        order[k] = order[k - 1];
                        order[k - 1] = t;
                }
        for (char **o = order; *o; o++) {
                bool rw = false;
                for (size_t i = 0; i < p->n_rw; i++)
                        rw |= p->rw_paths[i].resolved && streq(p->rw_paths[i].resolved, *o);
                /* A path listed both ways: the later (rw) entry of the
                 * same path wins, as it did when bwrap got both. */
                if ((r = push(plan, rw ? VS_MOUNT_RW : VS_MOUNT_RO, *o, *o, true, false)) < 0)
                        return r;
        }
        return 0;
}

/* The innermost listed mount holding path (strict: other than path
 * itself), or NULL. */
static const VsJailMount *listed_holding(const VsJailPlan *plan, const char *path, bool strict) {
        const VsJailMount *root = NULL;
        for (size_t i = 0; i < plan->n_mounts; i++) {
                const VsJailMount *m = &plan->mounts[i];
                if ((m->kind == VS_MOUNT_RW || m->kind == VS_MOUNT_RO) && path_is_below_or_equal(path, m->dest) &&
                    !(strict && streq(m->dest, path)) && (!root || strlen(m->dest) > strlen(root->dest)))
                        root = m;
        }
        return root;
}

static const VsJailMount *root_of(const VsJailPlan *plan, const char *path) {
        return listed_holding(plan, path, false);
}

/* Every directory strictly between root (when writable) and path, added
 * to *pins once. */
static int pin_dirs_between(char ***pins, const VsJailMount *root, const char *path) {
        if (!root || root->kind != VS_MOUNT_RW)
                return 0;
        size_t rl = streq(root->dest, "/") ? 0 : strlen(root->dest);
        for (const char *slash = strchr(path + rl + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                _cleanup_free_ char *dir = strndup(path, (size_t)(slash - path));
                if (!dir)
                        return -ENOMEM;
                int r = strv_contains(*pins, dir) ? 0 : strv_extend(pins, dir);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every directory strictly between the writable root holding path and
 * path: bound onto itself, it cannot be renamed or removed (EBUSY), so the
 * jail cannot move .git aside (taking the read-only .git/hooks with it)
 * and plant a fresh one, nor move a masked file's parent out from under
 * its mask. Under a read-only root nothing can be moved anyway. */
static int add_pin_dirs(char ***pins, const VsJailPlan *plan, const char *path) {
        return pin_dirs_between(pins, root_of(plan, path), path);
}

/* Every directory strictly between a listed path and the writable listed
 * path that holds it innermost (x for ro_paths = ["x/y"] in a writable
 * workspace): pinned too, or the jail renames x away (the nested mount
 * travels with it) and makes a directory of its own at x/y, where the host
 * takes what it finds as the listed path's (a repository there left
 * alone, a protected name there taken as read-only: an attack review). */
static int add_nested_pin_dirs(char ***pins, const VsJailPlan *plan, const char *path) {
        return pin_dirs_between(pins, listed_holding(plan, path, true), path);
}

/* The listed mounts (the first n_listed, parents first) and the pins
 * (after them, parents first) merged by depth, the listed first at equal
 * depth: bwrap binds a pin from the host's tree, so a pin bound after a
 * nested listed path below it covered that path with the host's
 * directory, writable (ro_paths = ["x/y"] and a mask at x/z/.env: x/y was
 * writable). */
static int order_pins(VsJailPlan *plan, size_t n_listed) {
        size_t n = plan->n_mounts;
        VsJailMount *merged = calloc(n ? n : 1, sizeof *merged);
        if (!merged)
                return -ENOMEM;
        size_t i = 0, j = n_listed, k = 0;
        while (i < n_listed || j < n)
                merged[k++] = j >= n || (i < n_listed && strlen(plan->mounts[i].dest) <= strlen(plan->mounts[j].dest))
                                      ? plan->mounts[i++]
                                      : plan->mounts[j++];
        free(plan->mounts);
        plan->mounts = merged;
        return 0;
}

int jail_plan_build(const VsPolicy *p, char *const *protected_paths, const VsJailFacts *f, const char *empty_file,
                    const char *empty_dir, char *const *env, VsJailPlan **ret) {
        _cleanup_(jail_plan_freep) VsJailPlan *plan = calloc(1, sizeof *plan);
        if (!plan)
                return -ENOMEM;
        plan->network = p->network;
        plan->no_gpu = p->no_gpu;
        plan->lockdown = p->lockdown;
        plan->limits = p->limits;
        plan->n_masked = f->n_masks;
        if (!(plan->workspace = strdup(p->workspace)) ||
            !(plan->protected_paths = protected_paths ? strv_copy(protected_paths) : calloc(1, sizeof(char *))) ||
            !(plan->env = env ? strv_copy(env) : calloc(1, sizeof(char *))))
                return -ENOMEM;
        int r;
        for (size_t pass = 0; pass < 2; pass++)
                for (char **g = pass ? f->protect_matches : f->git_controls; g && *g; g++)
                        if (!strv_contains(plan->protected_paths, *g) &&
                            (r = strv_extend(&plan->protected_paths, *g)) < 0)
                                return r;
        /* The protected links, those on a protected name's way too: the
         * daemon's watch ends the jail when one changes (its sweep then
         * puts aside what stands there), the file tools refuse them. */
        for (size_t i = 0; f->git_base && i < f->git_base->n_links; i++)
                if (!strv_contains(plan->protected_paths, f->git_base->links[i].path) &&
                    (r = strv_extend(&plan->protected_paths, f->git_base->links[i].path)) < 0)
                        return r;
        r = add_listed(plan, p);
        if (r < 0)
                return r;
        size_t n_listed = plan->n_mounts;

        /* What gets sealed: protected paths that exist (and are seen at
         * all), then masks and missing protected paths as empty mounts. */
        _cleanup_strv_free_ char **protect = calloc(1, sizeof(char *));
        if (!protect)
                return -ENOMEM;
        for (char **pp = f->protected_existing; pp && *pp; pp++)
                if (root_of(plan, *pp) && !strv_contains(protect, *pp) && (r = strv_extend(&protect, *pp)) < 0)
                        return r;

        _cleanup_strv_free_ char **pins = calloc(1, sizeof(char *));
        if (!pins)
                return -ENOMEM;
        for (size_t i = 0; i < n_listed; i++)
                if ((r = add_nested_pin_dirs(&pins, plan, plan->mounts[i].dest)) < 0)
                        return r;
        for (char **pp = protect; *pp; pp++)
                if ((r = add_pin_dirs(&pins, plan, *pp)) < 0)
                        return r;
        for (size_t i = 0; i < f->n_masks; i++)
                if ((r = add_pin_dirs(&pins, plan, f->masks[i].path)) < 0)
                        return r;
        /* A protected link's directories too (a link on a protected
         * name's way as well): no mount holds the link, and what the jail
         * puts at its name is put aside at its end, by that name; moving
         * a directory above it, with a link left in its place, moved the
         * link out of that look while its text led to the jail's file (an
         * attack review). */
        for (size_t i = 0; f->git_base && i < f->git_base->n_links; i++)
                if (root_of(plan, f->git_base->links[i].path) &&
                    (r = add_pin_dirs(&pins, plan, f->git_base->links[i].path)) < 0)
                        return r;
        for (size_t i = 0; i < f->n_missing; i++)
                if (root_of(plan, f->protected_missing[i].path) &&
                    (r = add_pin_dirs(&pins, plan, f->protected_missing[i].path)) < 0)
                        return r;
        qsort(pins, strv_length(pins), sizeof(char *), cmp_depth);
        for (char **pp = pins; *pp; pp++)
                if ((r = push(plan, VS_MOUNT_PIN, *pp, *pp, true, false)) < 0)
                        return r;
        if ((r = order_pins(plan, n_listed)) < 0)
                return r;

        /* Protected paths over the listed ones: the agent cannot rewrite
         * its own policy or plant code the host runs later. */
        for (char **pp = protect; *pp; pp++)
                if ((r = push(plan, VS_MOUNT_PROTECT, *pp, *pp, false, false)) < 0)
                        return r;
        /* Masks last, over everything: empty and read-only, never a tmpfs
         * (a writable tmpfs would let the agent plant a file there). */
        for (size_t i = 0; i < f->n_masks; i++)
                if ((r = push(plan, VS_MOUNT_MASK, f->masks[i].path, f->masks[i].dir ? empty_dir : empty_file,
                              f->masks[i].dir, false)) < 0)
                        return r;
        /* A missing protected path (not a .git control file: those got
         * a placeholder on the host first): the agent must not create it
         * either; the backend creates the empty mount point. */
        for (size_t i = 0; i < f->n_missing; i++) {
                const VsMaskPath *m = &f->protected_missing[i];
                if (root_of(plan, m->path) &&
                    (r = push(plan, VS_MOUNT_MASK, m->path, m->dir ? empty_dir : empty_file, m->dir, true)) < 0)
                        return r;
        }
        *ret = TAKE_PTR(plan);
        return 0;
}

int jail_plan_sealed(const VsJailPlan *plan, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_mounts; i++) {
                const VsJailMount *m = &plan->mounts[i];
                int r;
                if ((m->kind == VS_MOUNT_PROTECT || m->kind == VS_MOUNT_MASK) && !strv_contains(l, m->dest) &&
                    (r = strv_extend(&l, m->dest)) < 0)
                        return r;
        }
        qsort(l, strv_length(l), sizeof(char *), cmp_str);
        *ret = TAKE_PTR(l);
        return 0;
}
