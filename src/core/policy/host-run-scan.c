/* SPDX-License-Identifier: MIT */
#include "host-run-scan.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "glob.h"
#include "mask-walk.h"
#include "path-util.h"
#include "protect-defaults.h"
#include "strv.h"

typedef struct Seen {
        char *path;
        dev_t dev;
        ino_t ino;
        mode_t mode;
        off_t size;
        struct timespec mtime, ctime;
} Seen;

struct VsHostRunScan {
        Seen *items;
        size_t n;
};

void host_run_scan_free(VsHostRunScan *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                free(s->items[i].path);
        free(s->items);
        free(s);
}

static int seen_cmp(const void *a, const void *b) {
        return strcmp(((const Seen *)a)->path, ((const Seen *)b)->path);
}

static int add(VsHostRunScan *s, char *path) {
        struct stat st;
        if (lstat(path, &st) < 0) {
                free(path);
                return 0;
        }
        Seen *n = realloc(s->items, (s->n + 1) * sizeof *n);
        if (!n) {
                free(path);
                return -ENOMEM;
        }
        s->items = n;
        n[s->n++] = (Seen){ .path = path, .dev = st.st_dev, .ino = st.st_ino, .mode = st.st_mode, .size = st.st_size,
                            .mtime = st.st_mtim, .ctime = st.st_ctim };
        return 0;
}

int host_run_scan(const VsPolicy *p, VsHostRunScan **ret) {
        *ret = NULL;
        if (!p || !p->sandboxed)
                return 0;
        if (policy_sets_check(p, NULL) < 0)
                return -EINVAL;
        const VsGlobSet *set = p->host_run_set;
        int r = 0;
        _cleanup_(host_run_scan_freep) VsHostRunScan *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        _cleanup_free_ char *root_git = path_join(p->workspace, ".git");
        if (!root_git)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_rw; i++) {
                const char *root = p->rw_paths[i].resolved;
                MaskList ml = { 0 };
                /* A tree the walk cannot finish is not reported on (the
                 * jail's own walk refused to start on it anyway). */
                if (!root || mask_walk(root, set, &ml, NULL) < 0) {
                        mask_list_done(&ml);
                        continue;
                }
                for (size_t k = 0; r >= 0 && k < ml.n; k++) {
                        char *abs = path_join(root, ml.items[k].relpath);
                        if (!abs)
                                r = -ENOMEM;
                        else if (streq(abs, root_git))
                                free(abs); /* the root's control files are read-only in the jail */
                        else
                                r = add(s, abs);
                }
                mask_list_done(&ml);
                if (r < 0)
                        return r;
        }
        if (s->n > 1)
                qsort(s->items, s->n, sizeof *s->items, seen_cmp);
        *ret = TAKE_PTR(s);
        return 0;
}

static bool same(const Seen *a, const Seen *b) {
        return a->dev == b->dev && a->ino == b->ino && a->mode == b->mode && a->size == b->size &&
               a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
               a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

json_t *host_run_scan_diff(const VsHostRunScan *before, const VsHostRunScan *after) {
        json_t *a = json_array();
        for (size_t i = 0; a && after && i < after->n; i++) {
                const Seen *now = &after->items[i];
                /* bsearch may not be handed a NULL array, even of none. */
                const Seen *was = before && before->n ? bsearch(now, before->items, before->n, sizeof *now, seen_cmp)
                                                      : NULL;
                if ((!was || !same(was, now)) && json_array_append_new(a, json_string(now->path)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

int host_run_files_add(json_t *result, json_t *list) {
        if (!list)
                return -ENOMEM;
        json_t *have = json_object_get(result, "host_run_files");
        if (!json_is_array(have)) {
                int r = json_object_set_new(result, "host_run_files", list);
                return r < 0 ? -ENOMEM : 0;
        }
        size_t i, k;
        json_t *v, *h;
        json_array_foreach(list, i, v) {
                bool dup = false;
                json_array_foreach(have, k, h) dup = dup || json_equal(h, v);
                if (!dup && json_array_append(have, v) < 0) {
                        json_decref(list);
                        return -ENOMEM;
                }
        }
        json_decref(list);
        return 0;
}

int host_run_report(const VsPolicy *p, VsHostRunScan **scan, json_t *result) {
        _cleanup_(host_run_scan_freep) VsHostRunScan *now = NULL;
        int r = *scan ? host_run_scan(p, &now) : 0;
        if (r < 0)
                return r;
        if (host_run_files_add(result, now ? host_run_scan_diff(*scan, now) : json_array()) < 0)
                return -ENOMEM;
        if (now) {
                host_run_scan_free(*scan);
                *scan = TAKE_PTR(now);
        }
        return 0;
}
