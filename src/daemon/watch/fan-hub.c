/* SPDX-License-Identifier: MIT */
/* One fanotify group for the daemon (fan-hub.h).
 *
 * The queue is FAN_UNLIMITED_QUEUE: an overflow would lose the event of
 * the masked file that appeared, and attributing it to a workspace is
 * impossible (a filesystem-wide mark sees every tenant and the host). The
 * events queued are the daemon's memory (fsnotify charges them to the
 * listener's memory cgroup, since Linux 4.20), the loop reads them as they come
 * (uv_poll) and before each call, and each costs a cache look when its
 * directory is not below a watched root: a stall long enough to pile up
 * gigabytes of events is a stalled daemon anyway. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "macro.h" /* before uv.h: its sys/param.h MIN/MAX are guarded */
#include "mount-util.h"
#include "path-util.h"
#include "strv.h"
#include "time-util.h"
#include "fan-hub.h"
#include "notify-subs.h"

/* Debian 12's headers have these; older ones may not (the kernel is what
 * counts: fan_new() fails on one without them and the watch uses inotify). */
#ifndef FAN_REPORT_DIR_FID
#define FAN_REPORT_DIR_FID 0x00000400
#endif
#ifndef FAN_REPORT_NAME
#define FAN_REPORT_NAME 0x00000800
#endif
#ifndef FAN_REPORT_DFID_NAME
#define FAN_REPORT_DFID_NAME (FAN_REPORT_DIR_FID | FAN_REPORT_NAME)
#endif
#ifndef FAN_MARK_FILESYSTEM
#define FAN_MARK_FILESYSTEM 0x00000100
#endif
#ifndef FAN_CREATE
#define FAN_CREATE 0x00000100
#endif
#ifndef FAN_EVENT_INFO_TYPE_DFID_NAME
#define FAN_EVENT_INFO_TYPE_DFID_NAME 2
#endif

/* FAN_RENAME (5.17) is not asked: FAN_MOVED_TO names where a move went,
 * which is all the watch needs (a move away hides nothing). */
#define FAN_EVENTS (FAN_CREATE | FAN_MOVED_TO | FAN_CLOSE_WRITE | FAN_ONDIR)
/* Directories whose paths are remembered. The table starts small and
 * doubles when half full (an idle daemon hears of few directories; a busy
 * filesystem fills the largest soon); a slot keeps its key out of line
 * (40 bytes, not the 184 of one holding the longest handle possible: a
 * fixed table of those was 736 KiB, and every flush wrote all of it). */
#define CACHE_SLOTS_MIN 64
#define CACHE_SLOTS_MAX 4096
/* A busy filesystem (a build beside the workspace) would wake the loop for
 * each event: the queue is read at once when it was last read longer ago
 * than this, else this long after that read. A drain before a call or a
 * reply reads it at once whatever. */
#define FAN_READ_GAP_US 1000
#define KEY_MAX (sizeof(fsid_t) + sizeof(int) + MAX_HANDLE_SZ)

typedef struct FanFs {
        fsid_t fsid;
        int *mfds; /* one open directory per mount the roots are on: open_by_handle_at's mount */
        int *mnt_ids;
        size_t n_mfds;
        size_t refs; /* roots of live subscribers on it */
} FanFs;

typedef struct FanMatch {
        struct FanSub *sub;
        size_t path; /* which of the directory's paths is below its roots */
} FanMatch;

typedef struct CacheEnt {
        unsigned char *key; /* fsid, handle type, handle; NULL: empty slot */
        char **paths;       /* its paths through each marked mount; none: gone */
        /* The subscribers it is below, as of subs_gen: an event in a
         * directory of no workspace (the rest of a busy filesystem) costs
         * one cache look, not a look at every workspace's roots. */
        FanMatch *matches;
        uint64_t gen;
        uint32_t n_matches;
        uint32_t len;
} CacheEnt;

struct FanSub {
        SubHead head; /* first: notify-subs.h frees it */
        FanHub *hub;
        const FanOps *ops;
        char **roots;
        size_t n_roots;
        fsid_t *fsids; /* one per root and mount below one, each a reference on its FanFs */
        size_t n_fsids;
        bool fresh; /* made during a batch: none of that batch is its */
};

struct FanHub {
        int fd;
        uv_poll_t poll;
        uv_timer_t later; /* the deferred read (FAN_READ_GAP_US) */
        uint64_t read_us; /* when the queue was last read */
        int handles;      /* open: freed when both are closed */
        FanFs *fss;
        size_t n_fss;
        SubHead *subs; /* of FanSubs */
        CacheEnt *cache;
        size_t cache_slots; /* a power of two, CACHE_SLOTS_MIN to _MAX */
        size_t cache_used;  /* slots filled */
        uint64_t subs_gen; /* bumped when a subscriber comes or goes: the matches remembered are stale */
        bool dispatching;
        bool delivering;    /* an event's subscribers are being told: a flush waits */
        bool flush_pending; /* asked while delivering */
        bool skimmed; /* this read's rest is taken as an overflow (notify-subs.h) */
};

static FanFs *find_fs(FanHub *h, const fsid_t *id) {
        for (size_t i = 0; i < h->n_fss; i++)
                if (memcmp(&h->fss[i].fsid, id, sizeof *id) == 0)
                        return &h->fss[i];
        return NULL;
}

static void ent_clear(CacheEnt *e) {
        strv_free(e->paths);
        free(e->matches);
        free(e->key);
        *e = (CacheEnt){};
}

static uint32_t key_hash(const unsigned char *key, size_t len) {
        uint32_t hash = 2166136261u;
        for (size_t i = 0; i < len; i++)
                hash = (hash ^ key[i]) * 16777619u;
        return hash;
}

/* Twice the slots, each entry kept: slot i's go to i or i + the old size
 * (the hash modulo a power of two), never two to one. Out of memory, the
 * table stays as it is (more directories named again). */
static void cache_grow(FanHub *h) {
        size_t n = h->cache_slots * 2;
        CacheEnt *c = calloc(n, sizeof *c);
        if (!c)
                return;
        for (size_t i = 0; i < h->cache_slots; i++)
                if (h->cache[i].key)
                        c[key_hash(h->cache[i].key, h->cache[i].len) & (n - 1)] = h->cache[i];
        free(h->cache);
        h->cache = c;
        h->cache_slots = n;
}

static void cache_flush(FanHub *h) {
        /* A subscriber ended by what it was told (its workspace recycled)
         * may unmark a filesystem: the entry being delivered stays until
         * the delivery is over. */
        if (h->delivering) {
                h->flush_pending = true;
                return;
        }
        h->flush_pending = false;
        /* Each directory move flushes: one already empty costs nothing (a
         * flood of moves, skimmed, must be read faster than it is made). */
        if (h->cache_used == 0)
                return;
        h->cache_used = 0;
        for (size_t i = 0; i < h->cache_slots; i++)
                ent_clear(&h->cache[i]);
}

static void fs_unref(FanHub *h, const fsid_t *id) {
        FanFs *fs = find_fs(h, id);
        if (!fs || --fs->refs > 0)
                return;
        if (fs->n_mfds > 0)
                (void)fanotify_mark(h->fd, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, FAN_EVENTS, fs->mfds[0], NULL);
        for (size_t i = 0; i < fs->n_mfds; i++)
                close(fs->mfds[i]);
        free(fs->mfds);
        free(fs->mnt_ids);
        *fs = h->fss[--h->n_fss];
        cache_flush(h); /* its handles could match another's after its fsid is reused */
}

/* Marks root's filesystem (once) and keeps an fd on root's mount. */
static int fs_ref(FanHub *h, const char *root, fsid_t *ret_id) {
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct statfs sf;
        struct {
                struct file_handle fh;
                unsigned char b[MAX_HANDLE_SZ];
        } hb = { .fh.handle_bytes = MAX_HANDLE_SZ };
        int mnt = -1;
        static const fsid_t zero;
        if (fstatfs(fd, &sf) < 0 || name_to_handle_at(fd, "", &hb.fh, &mnt, AT_EMPTY_PATH) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        if (memcmp(&sf.f_fsid, &zero, sizeof zero) == 0) {
                close(fd);
                return -ENODEV; /* events could not be told from another filesystem's */
        }
        FanFs *fs = find_fs(h, &sf.f_fsid);
        if (!fs) {
                FanFs *n = realloc(h->fss, (h->n_fss + 1) * sizeof *n);
                if (!n) {
                        close(fd);
                        return -ENOMEM;
                }
                h->fss = n;
                if (fanotify_mark(h->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_EVENTS, fd, NULL) < 0) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                fs = &h->fss[h->n_fss++];
                *fs = (FanFs){ .fsid = sf.f_fsid };
        }
        fs->refs++;
        *ret_id = sf.f_fsid;
        for (size_t i = 0; i < fs->n_mfds; i++)
                if (fs->mnt_ids[i] == mnt) {
                        close(fd);
                        return 0;
                }
        int *nf = realloc(fs->mfds, (fs->n_mfds + 1) * sizeof *nf);
        if (nf)
                fs->mfds = nf;
        int *nm = nf ? realloc(fs->mnt_ids, (fs->n_mfds + 1) * sizeof *nm) : NULL;
        if (!nm) {
                close(fd);
                fs_unref(h, ret_id);
                return -ENOMEM;
        }
        fs->mnt_ids = nm;
        fs->mfds[fs->n_mfds] = fd;
        fs->mnt_ids[fs->n_mfds++] = mnt;
        return 0;
}

/* Every path of the directory: one through each mount marked (a bind
 * mount shows one directory at two paths, each maybe another workspace's
 * root, and the jail of each sees it). An empty list when it has none
 * (gone); NULL when out of memory. */
static char **name_dir(FanFs *fs, struct file_handle *fh) {
        char **paths = calloc(1, sizeof *paths);
        for (size_t i = 0; paths && i < fs->n_mfds; i++) {
                int fd = open_by_handle_at(fs->mfds[i], fh, O_PATH | O_CLOEXEC);
                if (fd < 0)
                        continue; /* ESTALE: gone; or not reachable from this mount */
                char proc[64], buf[PATH_MAX];
                snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
                ssize_t n = readlink(proc, buf, sizeof buf - 1);
                close(fd);
                if (n <= 0 || buf[0] != '/')
                        continue;
                buf[n] = 0;
                static const char deleted[] = " (deleted)";
                if ((size_t)n >= sizeof deleted - 1 && streq(buf + n - (sizeof deleted - 1), deleted))
                        continue;
                if (!strv_contains(paths, buf) && strv_extend(&paths, buf) < 0) {
                        strv_free(paths);
                        return NULL;
                }
        }
        return paths;
}

/* The subscribers below whose roots one of e's paths is; false when out
 * of memory (the caller looks at every subscriber instead). */
static bool entry_match(FanHub *h, CacheEnt *e) {
        free(TAKE_PTR(e->matches));
        e->n_matches = 0;
        size_t cap = 0;
        for (size_t p = 0; e->paths && e->paths[p]; p++)
                for (SubHead *x = h->subs; x; x = x->next) {
                        FanSub *s = (FanSub *)x;
                        for (size_t i = 0; !x->dead && i < s->n_roots; i++) {
                                if (!path_is_below_or_equal(e->paths[p], s->roots[i]))
                                        continue;
                                if (e->n_matches == cap) {
                                        size_t nc = cap ? cap * 2 : 4;
                                        FanMatch *m = reallocarray(e->matches, nc, sizeof *m);
                                        if (!m)
                                                return false;
                                        e->matches = m;
                                        cap = nc;
                                }
                                e->matches[e->n_matches++] = (FanMatch){ .sub = s, .path = p };
                                break;
                        }
                }
        e->gen = h->subs_gen;
        return true;
}

/* The cache entry of the directory (fsid, fh), its paths (empty: none)
 * and, unless out of memory, its subscribers current; or NULL. */
static CacheEnt *dir_entry(FanHub *h, const fsid_t *id, struct file_handle *fh, bool *ret_matched) {
        unsigned char key[KEY_MAX];
        size_t len = sizeof *id + sizeof fh->handle_type + fh->handle_bytes;
        if (fh->handle_bytes > MAX_HANDLE_SZ)
                return NULL;
        memcpy(key, id, sizeof *id);
        memcpy(key + sizeof *id, &fh->handle_type, sizeof fh->handle_type);
        memcpy(key + sizeof *id + sizeof fh->handle_type, fh->f_handle, fh->handle_bytes);
        uint32_t hash = key_hash(key, len);
        CacheEnt *e = &h->cache[hash & (h->cache_slots - 1)];
        if (!e->key || e->len != len || memcmp(e->key, key, len) != 0) {
                FanFs *fs = find_fs(h, id);
                if (!fs)
                        return NULL; /* a filesystem no longer marked */
                _cleanup_free_ unsigned char *k = malloc(len);
                if (k)
                        memcpy(k, key, len);
                char **p = k ? name_dir(fs, fh) : NULL;
                if (!p)
                        return NULL;
                if (!e->key && (h->cache_used + 1) * 2 > h->cache_slots && h->cache_slots < CACHE_SLOTS_MAX) {
                        cache_grow(h);
                        e = &h->cache[hash & (h->cache_slots - 1)];
                }
                if (!e->key)
                        h->cache_used++;
                ent_clear(e);
                *e = (CacheEnt){ .key = TAKE_PTR(k), .paths = p, .len = (uint32_t)len, .gen = h->subs_gen - 1 };
        }
        *ret_matched = e->gen == h->subs_gen || entry_match(h, e);
        return e;
}

static void deliver(FanSub *s, const char *dir, const char *name, uint64_t mask) {
        if (s->head.dead || s->fresh)
                return;
        s->head.got = true;
        s->ops->event(s->head.userdata, dir, name, mask);
}

/* md: the event's metadata, copied out; raw: the event in the buffer. */
static void dispatch(FanHub *h, const struct fanotify_event_metadata *md, const char *raw) {
        if (md->mask & FAN_Q_OVERFLOW) {
                for (SubHead *e = h->subs; e; e = e->next)
                        deliver((FanSub *)e, NULL, NULL, md->mask);
                return;
        }
        const char *p = raw + md->metadata_len, *end = raw + md->event_len;
        while (p + sizeof(struct fanotify_event_info_header) <= end) {
                const struct fanotify_event_info_fid *fid = (const void *)p;
                if (fid->hdr.len < sizeof *fid || p + fid->hdr.len > end)
                        break;
                p += fid->hdr.len;
                if (fid->hdr.info_type != FAN_EVENT_INFO_TYPE_DFID_NAME)
                        continue;
                /* The handle as open_by_handle_at wants it: aligned, ours. */
                struct {
                        struct file_handle fh;
                        unsigned char b[MAX_HANDLE_SZ];
                } hb;
                const struct file_handle *in = (const void *)fid->handle;
                memcpy(&hb.fh, in, sizeof hb.fh);
                if (hb.fh.handle_bytes > MAX_HANDLE_SZ ||
                    (const char *)in->f_handle + hb.fh.handle_bytes >= (const char *)fid + fid->hdr.len)
                        continue;
                memcpy(hb.fh.f_handle, in->f_handle, hb.fh.handle_bytes);
                const char *name = (const char *)in->f_handle + hb.fh.handle_bytes;
                bool matched = false;
                CacheEnt *ce = dir_entry(h, (const fsid_t *)&fid->fsid, &hb.fh, &matched);
                if (!ce)
                        continue;
                h->delivering = true;
                if (matched)
                        /* A subscriber ended by a delivery is marked dead
                         * and bumps subs_gen, never freed here (the sweep
                         * waits for the dispatch's end). */
                        for (size_t k = 0; k < ce->n_matches; k++) {
                                if (!ce->matches[k].sub->head.dead)
                                        deliver(ce->matches[k].sub, ce->paths[ce->matches[k].path], name, md->mask);
                        }
                else
                        for (char *const *dir = ce->paths; dir && *dir; dir++)
                                for (SubHead *e = h->subs; e; e = e->next) {
                                        FanSub *s = (FanSub *)e;
                                        for (size_t i = 0; !e->dead && i < s->n_roots; i++)
                                                if (path_is_below_or_equal(*dir, s->roots[i])) {
                                                        deliver(s, *dir, name, md->mask);
                                                        break;
                                                }
                                }
                h->delivering = false;
                if (h->flush_pending)
                        cache_flush(h);
        }
        /* A directory moved (within this filesystem: a rename never leaves
         * it) took the directories below with their handles: the paths
         * remembered may all be wrong now. */
        if ((md->mask & FAN_MOVED_TO) && (md->mask & FAN_ONDIR))
                cache_flush(h);
}

static void parse(void *ctx, const char *buf, size_t n, NotifySkim skim) {
        FanHub *h = ctx;
        if (skim != NOTIFY_ALL && !h->skimmed) {
                /* Too many to handle one by one (notify-subs.h): an overflow. */
                h->skimmed = true;
                const struct fanotify_event_metadata over = { .mask = FAN_Q_OVERFLOW };
                dispatch(h, &over, NULL);
        }
        /* Events are 4-byte aligned in the buffer (their info records are
         * padded to 4), the metadata wants 8 (its u64 mask): copied out. */
        struct fanotify_event_metadata md;
        for (size_t off = 0; off + sizeof md <= n; off += md.event_len) {
                memcpy(&md, buf + off, sizeof md);
                if (md.event_len < sizeof md || md.event_len > n - off || md.metadata_len > md.event_len)
                        break;
                if (md.vers != FANOTIFY_METADATA_VERSION)
                        continue;
                if (skim == NOTIFY_ALL || (skim == NOTIFY_FILES && !(md.mask & FAN_ONDIR)))
                        dispatch(h, &md, buf + off);
                else if ((md.mask & FAN_MOVED_TO) && (md.mask & FAN_ONDIR))
                        cache_flush(h); /* the paths it remembers, as dispatch() would */
        }
}

bool fan_drain(FanHub *h) {
        if (!h || h->dispatching)
                return true;
        h->dispatching = true;
        h->skimmed = false;
        h->read_us = now_us();
        _Alignas(struct fanotify_event_metadata) char buf[65536];
        bool ok = notify_read_all(h->fd, buf, sizeof buf, parse, h);
        notify_batch_done(&h->subs);
        for (SubHead *e = h->subs; e; e = e->next)
                ((FanSub *)e)->fresh = false;
        h->dispatching = false;
        return ok;
}

static void on_readable(uv_poll_t *p, int status, int events);

static void on_later(uv_timer_t *t) {
        FanHub *h = t->data;
        fan_drain(h);
        uv_poll_start(&h->poll, UV_READABLE, on_readable);
}

static void on_readable(uv_poll_t *p, int status, int events) {
        FanHub *h = p->data;
        uint64_t since = now_us() - h->read_us;
        if (since >= FAN_READ_GAP_US) {
                fan_drain(h);
                return;
        }
        uv_poll_stop(&h->poll);
        uv_timer_start(&h->later, on_later, 1, 0); /* libuv's timers count milliseconds */
}

int fan_new(uv_loop_t *loop, FanHub **ret) {
        /* The group first: a daemon that has none (not root) allocates
         * nothing (a big block freed at once also raises glibc's mmap
         * threshold for good, and the daemon's later blocks stay in its heap). */
        int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE,
                               O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        FanHub *h = calloc(1, sizeof *h);
        int r = h && (h->cache = calloc(CACHE_SLOTS_MIN, sizeof *h->cache)) ? uv_poll_init(loop, &h->poll, fd) : -ENOMEM;
        if (r < 0) {
                close(fd);
                if (h)
                        free(h->cache);
                free(h);
                return r;
        }
        h->fd = fd;
        h->cache_slots = CACHE_SLOTS_MIN;
        h->poll.data = h;
        uv_timer_init(loop, &h->later);
        h->later.data = h;
        h->handles = 2;
        uv_poll_start(&h->poll, UV_READABLE, on_readable);
        /* Never what keeps the loop running. */
        uv_unref((uv_handle_t *)&h->poll);
        uv_unref((uv_handle_t *)&h->later);
        *ret = h;
        return 0;
}

static void on_closed(uv_handle_t *p) {
        FanHub *h = p->data;
        if (--h->handles > 0)
                return;
        close(h->fd);
        free(h);
}

void fan_free(FanHub *h) {
        if (!h)
                return;
        for (SubHead *s = h->subs, *next; s; s = next) {
                next = s->next;
                fan_sub_free((FanSub *)s);
        }
        notify_sweep(&h->subs);
        while (h->n_fss > 0) {
                h->fss[0].refs = 1;
                fs_unref(h, &h->fss[0].fsid);
        }
        free(h->fss);
        cache_flush(h);
        free(h->cache);
        uv_poll_stop(&h->poll);
        uv_timer_stop(&h->later);
        uv_close((uv_handle_t *)&h->poll, on_closed);
        uv_close((uv_handle_t *)&h->later, on_closed);
}

static void sub_release(FanSub *s) {
        for (size_t i = 0; i < s->n_fsids; i++)
                fs_unref(s->hub, &s->fsids[i]);
        for (size_t i = 0; i < s->n_roots; i++)
                free(s->roots[i]);
        free(s->roots);
        free(s->fsids);
        s->roots = NULL;
        s->fsids = NULL;
        s->n_roots = s->n_fsids = 0;
}

typedef struct Submounts {
        char *const *roots;
        size_t n_roots;
        char ***out;
} Submounts;

static int submount_line(char *line, void *userdata) {
        Submounts *a = userdata;
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int k = 0; tok && k < 4; k++)
                tok = strtok_r(NULL, " ", &save);
        if (!tok)
                return 0;
        mountinfo_unescape(tok);
        for (size_t i = 0; i < a->n_roots; i++)
                if (!streq(tok, a->roots[i]) && path_is_below_or_equal(tok, a->roots[i]))
                        return strv_extend(a->out, tok) < 0 ? -ENOMEM : 0;
        return 0;
}

/* The mount points strictly below any of roots (their filesystems are
 * marked too: a mark covers one filesystem). Mounts made later are not. */
static int submounts(char *const *roots, size_t n_roots, char ***ret) {
        Submounts a = { roots, n_roots, ret };
        int r = mountinfo_each(submount_line, &a);
        return r < 0 ? r : 0;
}

int fan_sub_new(FanHub *h, const FanOps *ops, void *userdata, char *const *roots, size_t n_roots, FanSub **ret) {
        /* The mark is the filesystem's: what is queued now happened before
         * this subscriber watched (the host making the workspace's files),
         * and inotify would never have told it. Read first, for the others;
         * made inside a batch, it skips the rest of that batch. */
        fan_drain(h);
        _cleanup_strv_free_ char **mounts = NULL;
        int r = submounts(roots, n_roots, &mounts);
        size_t n_mounts = strv_length(mounts);
        FanSub *s = r < 0 ? NULL : calloc(1, sizeof *s);
        if (!s || !(s->roots = calloc(n_roots + 1, sizeof *s->roots)) ||
            !(s->fsids = calloc(n_roots + n_mounts + 1, sizeof *s->fsids))) {
                if (s)
                        free(s->roots);
                free(s);
                return r < 0 ? r : -ENOMEM;
        }
        *s = (FanSub){ .head = { .batch_end = ops->batch_end, .userdata = userdata }, .hub = h, .ops = ops,
                       .roots = s->roots, .fsids = s->fsids, .fresh = h->dispatching };
        for (size_t i = 0; r >= 0 && i < n_roots; i++)
                if ((s->roots[i] = strdup(roots[i])))
                        s->n_roots++;
                else
                        r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n_roots + n_mounts; i++)
                if ((r = fs_ref(h, i < n_roots ? roots[i] : mounts[i - n_roots], &s->fsids[s->n_fsids])) >= 0)
                        s->n_fsids++;
                else if (r == -ENOTDIR && i >= n_roots)
                        r = 0; /* a file mounted over a file: nothing can appear in it */
        if (r < 0) {
                sub_release(s);
                free(s);
                return r;
        }
        s->head.next = h->subs;
        h->subs = &s->head;
        h->subs_gen++;
        /* Its roots' mounts may be new: a directory remembered without
         * them lacks the paths this subscriber sees it by. */
        cache_flush(h);
        *ret = s;
        return 0;
}

void fan_sub_free(FanSub *s) {
        if (!s || s->head.dead)
                return;
        FanHub *h = s->hub;
        sub_release(s);
        s->head.dead = true;
        h->subs_gen++;
        if (!h->dispatching)
                notify_sweep(&h->subs);
}

size_t fan_n_filesystems(const FanHub *h) {
        return h ? h->n_fss : 0;
}
