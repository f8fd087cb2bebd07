/* SPDX-License-Identifier: MIT */
/* Restoring a checkpoint into its root. The tree is the agent's: every
 * parent is reached from the root with chase_beneath() (no symlink, no
 * "..", no magic link), every change is made relative to that parent's
 * descriptor, files are written to a temporary name and renamed over
 * (rename replaces a symlink, never follows it), and what a restore
 * replaces is captured first into a checkpoint of its own. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "undo-internal.h"
#include "walk-cache.h"

#define REMOVE_DEPTH_MAX 512

typedef struct Restore {
        UndoStore *s;
        int rootfd;
        const UndoRestoreOptions *o;
        UndoCheckpoint *cp;          /* pass 1: what the restore will replace, saved */
        const UndoManifest *saved;   /* pass 2: that checkpoint, committed */
        const UndoManifest *target;  /* the entries put back, sorted */
        const bool *todo;            /* which of them pass 1 found to change */
        UndoRestoreReport *rep;
} Restore;

static int problem(Restore *x, const char *path, const char *fmt, ...) _printf_(3, 4);
static int problem(Restore *x, const char *path, const char *fmt, ...) {
        UndoRestoreReport *rep = x->rep;
        UndoProblem *p = realloc(rep->problems, (rep->n_problems + 1) * sizeof *p);
        if (!p)
                return -ENOMEM;
        rep->problems = p;
        va_list ap;
        va_start(ap, fmt);
        char *reason = NULL;
        int k = vasprintf(&reason, fmt, ap);
        va_end(ap);
        char *copy = strdup(path);
        if (k < 0 || !copy) {
                free(copy);
                if (k >= 0)
                        free(reason);
                return -ENOMEM;
        }
        p[rep->n_problems++] = (UndoProblem){ .path = copy, .reason = reason };
        return 0;
}

static UndoPathClass classify(const Restore *x, const char *rel) {
        return x->o ? undo_classify(x->o->filter, x->o->userdata, rel) : UNDO_PATH_OK;
}

static const char *class_reason(UndoPathClass c) {
        switch (c) {
        case UNDO_PATH_MASKED:
                return "masked: a restore never writes a masked path";
        case UNDO_PATH_PROTECTED:
                return "protected: a restore never rewrites a protected path";
        case UNDO_PATH_OUTSIDE:
                return "outside the writable paths";
        default:
                return "";
        }
}

static void set_owner(const Restore *x, int dirfd, const char *name) {
        if (!x->o || (x->o->uid == (uid_t)-1 && x->o->gid == (gid_t)-1))
                return;
        /* Best effort: an unprivileged daemon makes files its own anyway. */
        (void)!fchownat(dirfd, name, x->o->uid, x->o->gid, AT_SYMLINK_NOFOLLOW);
}

/* The parent directory of rel, reached without a link. With create, the
 * missing directories on the way are made (0755: no checkpoint says
 * more; pass 1 saved them as absent, so an undo of the restore removes
 * them). -ELOOP / -ENOTDIR: a symlink or a non-directory on the way. */
static int open_parent(Restore *x, const char *rel, bool create) {
        const char *slash = strrchr(rel, '/');
        if (!slash) {
                int fd = fcntl(x->rootfd, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        _cleanup_free_ char *parent = strndup(rel, (size_t)(slash - rel));
        if (!parent)
                return -ENOMEM;
        int fd = chase_beneath(x->rootfd, parent, O_PATH | O_DIRECTORY);
        if (fd != -ENOENT || !create)
                return fd;
        /* One component at a time from the root, making what is missing. */
        _cleanup_close_ int cur = fcntl(x->rootfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        for (char *c = parent;;) {
                char *next = strchr(c, '/');
                if (next)
                        *next = 0;
                if (mkdirat(cur, c, 0755) == 0)
                        set_owner(x, cur, c);
                else if (errno != EEXIST)
                        return -errno;
                int n = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (n < 0)
                        return errno == ENOTDIR ? -ENOTDIR : -errno;
                safe_close(cur);
                cur = n;
                if (!next)
                        return TAKE_FD(cur);
                c = next + 1;
        }
}

/* Whether pass 1 saved what is at rel now with its content (a restore
 * replaces or removes nothing else: not a file over the cap, not what
 * appeared after pass 1 looked). */
static const char *unsaved(const Restore *x, const char *rel) {
        const UndoEntry *e = x->saved ? undo_manifest_find(x->saved, rel) : NULL;
        if (!e || e->type == UNDO_ABSENT) /* (called for what exists now) */
                return "it appeared after the restore saved what it would replace: left as it is";
        if (e->type == UNDO_TOO_BIG)
                return "it is over the store's cap, so it could not be saved first: left as it is";
        return NULL;
}

/* Removes name (in pfd) and, for a directory, everything below it, one
 * O_NOFOLLOW step at a time. A masked or protected path below is left and
 * listed (and so is the directory holding it, which cannot go). 0 when
 * name is gone. */
static int remove_tree(Restore *x, int pfd, const char *name, const char *rel, unsigned depth) {
        UndoPathClass c = classify(x, rel);
        if (c != UNDO_PATH_OK) {
                int r = problem(x, rel, "%s; left in place", class_reason(c));
                return r < 0 ? r : -EPERM;
        }
        const char *why = unsaved(x, rel);
        if (why) {
                int r = problem(x, rel, "%s", why);
                return r < 0 ? r : -EPERM;
        }
        if (unlinkat(pfd, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth >= REMOVE_DEPTH_MAX)
                return -ELOOP;
        int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* A directory the agent made read-only still empties (its owner may). */
        struct stat st;
        if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
                (void)!fchmod(fd, (st.st_mode & 07777) | 0700);
        WalkDirReader d;
        int r = walk_dir_reader_open(&d, fd);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        const char *child;
        unsigned char type;
        bool kept = false;
        while ((r = walk_dir_reader_next(&d, &child, &type)) > 0) {
                size_t a = strlen(rel), b = strlen(child);
                _cleanup_free_ char *crel = malloc(a + b + 2);
                if (!crel) {
                        r = -ENOMEM;
                        break;
                }
                memcpy(crel, rel, a);
                crel[a] = '/';
                memcpy(crel + a + 1, child, b + 1);
                int k = remove_tree(x, d.fd, child, crel, depth + 1);
                if (k == -ENOMEM) {
                        r = k;
                        break;
                }
                if (k < 0)
                        kept = true;
        }
        walk_dir_reader_close(&d);
        if (r < 0)
                return r;
        if (kept)
                return -ENOTEMPTY;
        return unlinkat(pfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* Whether name in pfd is already what e says (then nothing is captured
 * or written: a restore of an unchanged path costs a look). */
static bool same_state(int pfd, const char *name, const struct stat *st, bool exists, const UndoEntry *e) {
        switch (e->type) {
        case UNDO_ABSENT:
                return !exists;
        case UNDO_DIR:
                return exists && S_ISDIR(st->st_mode) && (st->st_mode & 07777) == e->mode;
        case UNDO_SYMLINK: {
                if (!exists || !S_ISLNK(st->st_mode) || (uint64_t)st->st_size != strlen(e->target))
                        return false;
                char buf[UNDO_PATH_MAX + 2];
                ssize_t k = readlinkat(pfd, name, buf, sizeof buf - 1);
                return k >= 0 && (size_t)k == strlen(e->target) && memcmp(buf, e->target, (size_t)k) == 0;
        }
        case UNDO_FILE: {
                if (!exists || !S_ISREG(st->st_mode) || (st->st_mode & 07777) != e->mode ||
                    (uint64_t)st->st_size != e->size)
                        return false;
                _cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                char hash[SHA256_HEX_LEN + 1];
                uint64_t size = 0;
                return fd >= 0 && undo_copy_hashed(fd, -1, e->size, hash, &size) == 0 && streq(hash, e->hash);
        }
        default:
                return false;
        }
}

/* Writes blob e->hash into a temporary name in pfd, checking its hash as
 * it goes, and renames it over name. */
static int put_file(Restore *x, int pfd, const char *name, const UndoEntry *e) {
        _cleanup_close_ int in = undo_blob_open(x->s, e->hash);
        if (in < 0)
                return problem(x, e->path, "its content is missing from the store") < 0 ? -ENOMEM : -ENOENT;
        char tmp[32];
        /* openat on an O_PATH directory descriptor works for creation. */
        _cleanup_close_ int out = undo_tmp_create(pfd, tmp);
        if (out < 0)
                return out;
        char hash[SHA256_HEX_LEN + 1];
        uint64_t size = 0;
        int r = undo_copy_hashed(in, out, UINT64_MAX, hash, &size);
        if (r >= 0 && !streq(hash, e->hash)) {
                unlinkat(pfd, tmp, 0);
                return problem(x, e->path, "its content in the store is damaged (hash differs); not restored") < 0
                               ? -ENOMEM
                               : -EBADMSG;
        }
        /* No set-user-ID or set-group-ID file is made: a root daemon's
         * restore must not mint one (its owner is changed after, too). */
        if (r >= 0 && fchmod(out, e->mode & ~(mode_t)(S_ISUID | S_ISGID)) < 0)
                r = -errno;
        if (r >= 0)
                set_owner(x, pfd, tmp);
        if (r >= 0 && renameat(pfd, tmp, pfd, name) < 0)
                r = -errno;
        if (r < 0)
                unlinkat(pfd, tmp, 0);
        return r;
}

static int put_symlink(Restore *x, int pfd, const char *name, const UndoEntry *e) {
        char tmp[32];
        /* A free temporary name: made as a file, then replaced by the link. */
        int fd = undo_tmp_create(pfd, tmp);
        if (fd < 0)
                return fd;
        safe_close(fd);
        unlinkat(pfd, tmp, 0);
        if (symlinkat(e->target, pfd, tmp) < 0)
                return -errno;
        set_owner(x, pfd, tmp);
        if (renameat(pfd, tmp, pfd, name) < 0) {
                int r = -errno;
                unlinkat(pfd, tmp, 0);
                return r;
        }
        return 0;
}

/* Names what stands on the way to rel where a directory was: the first
 * component, looked at one O_NOFOLLOW step at a time, that is not one. */
static int blocked(Restore *x, const char *rel) {
        _cleanup_free_ char *walk = strdup(rel);
        if (!walk)
                return -ENOMEM;
        _cleanup_close_ int cur = fcntl(x->rootfd, F_DUPFD_CLOEXEC, 3);
        char *slash;
        for (char *c = walk; cur >= 0 && (slash = strchr(c, '/')); c = slash + 1) {
                *slash = 0;
                struct stat st;
                if (fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        break;
                if (!S_ISDIR(st.st_mode))
                        return problem(x, rel, "%s %s stands where a directory was: not followed",
                                       S_ISLNK(st.st_mode) ? "a symlink" : "a non-directory", walk);
                int n = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                safe_close(cur);
                cur = n;
                *slash = '/';
        }
        return problem(x, rel, "its directory changed while it was restored");
}

static const char *type_reason(UndoType t) {
        switch (t) {
        case UNDO_MASKED:
                return "was masked: its content was never stored";
        case UNDO_TOO_BIG:
                return "was a file over the store's cap: its content was not stored";
        case UNDO_OTHER:
                return "was a FIFO, socket or device node: not restored";
        case UNDO_LOST:
                return "changed through a descriptor opened before the checkpoint: its earlier content was not saved";
        default:
                return NULL;
        }
}

/* Whether an ancestor of rel is an entry pass 1 will make a directory
 * of (what stands there now, a symlink or a file, goes first). */
static bool parent_becomes_dir(const Restore *x, const char *rel) {
        char buf[UNDO_PATH_MAX + 1];
        snprintf(buf, sizeof buf, "%s", rel);
        for (char *slash = strrchr(buf, '/'); slash; slash = strrchr(buf, '/')) {
                *slash = 0;
                const UndoEntry *a = undo_manifest_find(x->target, buf);
                if (a && a->type == UNDO_DIR && x->todo[a - x->target->entries])
                        return true;
        }
        return false;
}

/* What stands at rel in its parent pfd: *ret_name (rel's last
 * component), *ret_exists and *st; or a negative errno. */
static int look_at(int pfd, const char *rel, const char **ret_name, struct stat *st, bool *ret_exists) {
        const char *slash = strrchr(rel, '/');
        *ret_name = slash ? slash + 1 : rel;
        *ret_exists = fstatat(pfd, *ret_name, st, AT_SYMLINK_NOFOLLOW) == 0;
        return *ret_exists || errno == ENOENT ? 0 : -errno;
}

/* A capture that failed: listed, the entry left (out of memory stops the
 * restore). */
static int not_saved(Restore *x, const char *rel, int r, VsError **err) {
        if (r == -ENOMEM)
                return r;
        _cleanup_(vs_error_freep) VsError *why = err ? TAKE_PTR(*err) : NULL;
        return problem(x, rel, "what is there now cannot be saved (%s): left as it is",
                       why ? vs_error_message(why) : strerror(-r));
}

/* Pass 1: whether e needs a change, and if so what is there now saved
 * into the restore's own checkpoint (parents' missing directories too, as
 * absent). Nothing in the tree changes in this pass. */
static int save_entry(Restore *x, const UndoEntry *e, bool *ret_todo, VsError **err) {
        *ret_todo = false;
        UndoPathClass c = classify(x, e->path);
        if (c != UNDO_PATH_OK)
                return problem(x, e->path, "%s", class_reason(c));
        if (type_reason(e->type))
                return problem(x, e->path, "%s", type_reason(e->type));
        UndoPathFilterFn filter = x->o ? x->o->filter : NULL;
        void *userdata = x->o ? x->o->userdata : NULL;
        _cleanup_close_ int pfd = open_parent(x, e->path, false);
        if (pfd == -ENOMEM)
                return pfd;
        if (pfd < 0 && e->type == UNDO_ABSENT && (pfd == -ENOENT || pfd == -ELOOP || pfd == -ENOTDIR))
                return 0; /* nothing at the path in the real tree */
        if ((pfd == -ELOOP || pfd == -ENOTDIR) && !parent_becomes_dir(x, e->path))
                return blocked(x, e->path);
        if (pfd == -ENOENT || pfd == -ELOOP || pfd == -ENOTDIR) {
                /* Directories to make: each ancestor saved as it is now. */
                _cleanup_free_ char *walk = strdup(e->path);
                if (!walk)
                        return -ENOMEM;
                int r = 0;
                for (char *slash = strchr(walk, '/'); r >= 0 && slash; slash = strchr(slash + 1, '/')) {
                        *slash = 0;
                        r = undo_checkpoint_capture(x->cp, x->rootfd, walk, false, filter, userdata, err);
                        *slash = '/';
                }
                if (r >= 0)
                        r = undo_checkpoint_capture(x->cp, x->rootfd, e->path, false, filter, userdata, err);
                if (r < 0)
                        return not_saved(x, e->path, r, err);
                *ret_todo = true;
                return 0;
        }
        if (pfd < 0)
                return problem(x, e->path, "its directory cannot be reached: %s", strerror(-pfd));
        const char *name;
        struct stat st;
        bool exists;
        int k = look_at(pfd, e->path, &name, &st, &exists);
        if (k < 0)
                return problem(x, e->path, "%s", strerror(-k));
        if (same_state(pfd, name, &st, exists, e))
                return 0;
        /* A directory only changing its mode keeps its entries: itself is
         * enough. Anything else replaced is saved whole. */
        bool is_dir = exists && S_ISDIR(st.st_mode);
        int r = undo_capture_at(x->cp, pfd, name, e->path, !(is_dir && e->type == UNDO_DIR), filter, userdata, err);
        if (r < 0)
                return not_saved(x, e->path, r, err);
        *ret_todo = true;
        return 0;
}

/* Pass 2: e put in place, replacing only what pass 1 saved. */
static int apply_entry(Restore *x, const UndoEntry *e) {
        _cleanup_close_ int pfd = open_parent(x, e->path, e->type != UNDO_ABSENT);
        if (pfd == -ENOMEM)
                return pfd;
        if (pfd < 0 && e->type == UNDO_ABSENT && (pfd == -ENOENT || pfd == -ELOOP || pfd == -ENOTDIR))
                return 0;
        if (pfd == -ELOOP || pfd == -ENOTDIR)
                return blocked(x, e->path);
        if (pfd < 0)
                return problem(x, e->path, "its directory cannot be reached: %s", strerror(-pfd));
        const char *name;
        struct stat st;
        bool exists;
        int k = look_at(pfd, e->path, &name, &st, &exists);
        if (k < 0)
                return problem(x, e->path, "%s", strerror(-k));
        bool is_dir = exists && S_ISDIR(st.st_mode);
        const char *why = exists ? unsaved(x, e->path) : NULL;
        if (why)
                return problem(x, e->path, "%s", why);
        int r;
        if (exists && !(e->type == UNDO_DIR && is_dir) && (e->type == UNDO_ABSENT || e->type == UNDO_DIR || is_dir)) {
                r = remove_tree(x, pfd, name, e->path, 0);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return problem(x, e->path, "what is there now cannot be removed: %s", strerror(-r));
        }
        switch (e->type) {
        case UNDO_ABSENT:
                r = 0;
                break;
        case UNDO_DIR:
                r = 0;
                if (!is_dir) {
                        r = mkdirat(pfd, name, 0700) < 0 ? -errno : 0;
                        if (r >= 0)
                                set_owner(x, pfd, name);
                }
                break;
        case UNDO_FILE:
                r = put_file(x, pfd, name, e);
                if (r == -ENOENT || r == -EBADMSG)
                        return 0; /* listed */
                break;
        case UNDO_SYMLINK:
                r = put_symlink(x, pfd, name, e);
                break;
        default:
                r = -EINVAL;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return problem(x, e->path, "%s", strerror(-r));
        x->rep->n_restored++;
        return 0;
}

/* Directory modes last and deepest first: a directory restored read-only
 * still received its entries. */
static int restore_dir_modes(Restore *x, const UndoManifest *target) {
        for (size_t i = target->n; i-- > 0;) {
                const UndoEntry *e = &target->entries[i];
                if (e->type != UNDO_DIR || classify(x, e->path) != UNDO_PATH_OK)
                        continue;
                _cleanup_close_ int fd = chase_beneath(x->rootfd, e->path, O_RDONLY | O_DIRECTORY);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & 07777) == e->mode)
                        continue;
                if (fchmod(fd, e->mode) < 0 && problem(x, e->path, "its mode: %s", strerror(errno)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int undo_restore(UndoStore *s, uint64_t seq, int rootfd, const UndoRestoreOptions *opts, UndoRestoreReport *ret,
                 VsError **err) {
        *ret = (UndoRestoreReport){ 0 };
        size_t from = s->n;
        for (size_t i = 0; i < s->n; i++)
                if (s->cps[i].seq == seq)
                        from = i;
        if (from == s->n)
                return vs_error_set(err, -ENOENT, "no checkpoint %llu", (unsigned long long)seq);
        /* Each path's state before the earliest checkpoint from seq on that
         * holds it: the state it had when checkpoint seq began. */
        _cleanup_(undo_manifest_done) UndoManifest target = { 0 };
        for (size_t i = from; i < s->n; i++)
                for (size_t j = 0; j < s->cps[i].n; j++) {
                        const UndoEntry *e = &s->cps[i].entries[j];
                        int r = undo_manifest_add(&target, e->path, e->type, e->mode, e->size,
                                                  e->type == UNDO_FILE ? e->hash : NULL, e->target);
                        if (r < 0 && r != -EEXIST)
                                return vs_error_set(err, r, "restore: %s", strerror(-r));
                }
        undo_manifest_sort(&target);
        char label[64];
        snprintf(label, sizeof label, "undo to %llu", (unsigned long long)seq);
        Restore x = { .s = s, .rootfd = rootfd, .o = opts, .rep = ret };
        int r = undo_checkpoint_begin(s, label, &x.cp);
        if (r < 0)
                return vs_error_set(err, r, "restore: %s", strerror(-r));
        _cleanup_free_ bool *todo = calloc(target.n ? target.n : 1, sizeof *todo);
        if (!todo) {
                undo_checkpoint_free(x.cp);
                return vs_error_set(err, -ENOMEM, "restore: out of memory");
        }
        x.target = &target;
        x.todo = todo;
        /* Pass 1: what will be replaced saved, and committed, before
         * anything changes: a restore that stops half way (a full disk, a
         * crash) can always be undone, and one whose save fails changes
         * nothing. */
        for (size_t i = 0; r >= 0 && i < target.n; i++)
                r = save_entry(&x, &target.entries[i], &todo[i], err);
        if (r < 0) {
                undo_checkpoint_free(x.cp);
                undo_restore_report_done(ret);
                return err && *err ? vs_error_prefix(err, "restore") : vs_error_set(err, r, "restore: %s", strerror(-r));
        }
        r = undo_checkpoint_commit(TAKE_PTR(x.cp), &ret->seq, err);
        if (r < 0) {
                undo_restore_report_done(ret);
                return vs_error_prefix(err, "restore");
        }
        x.saved = ret->seq ? undo_store_find(s, ret->seq) : NULL;
        /* Pass 2: the changes. */
        for (size_t i = 0; r >= 0 && i < target.n; i++)
                if (todo[i])
                        r = apply_entry(&x, &target.entries[i]);
        if (r >= 0)
                r = restore_dir_modes(&x, &target);
        if (r < 0) {
                uint64_t made = ret->seq;
                undo_restore_report_done(ret);
                return vs_error_set(err, r, "restore stopped (%s); what it had replaced is checkpoint %llu",
                                    strerror(-r), (unsigned long long)made);
        }
        return 0;
}

void undo_restore_report_done(UndoRestoreReport *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_problems; i++) {
                free(r->problems[i].path);
                free(r->problems[i].reason);
        }
        free(r->problems);
        *r = (UndoRestoreReport){ 0 };
}
