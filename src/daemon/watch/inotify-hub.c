/* SPDX-License-Identifier: MIT */
/* One inotify instance for the daemon (inotify-hub.h). Watch descriptors
 * are kept sorted (the kernel hands them out increasing, so a new one is
 * appended); each lists the subscribers that added it. Subscribers freed
 * while a batch is dispatched are only marked dead, and swept after it, so
 * a callback may end its own or another workspace's watches. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h" /* before uv.h: its sys/param.h MIN/MAX are guarded */
#include "inotify-hub.h"
#include "notify-subs.h"

typedef struct HubWatch {
        int wd;
        bool gone; /* dropped; its slot goes at the next compaction */
        HubSub **subs;
        size_t n_subs;
} HubWatch;

struct HubSub {
        SubHead head; /* first: notify-subs.h frees it */
        InotifyHub *hub;
        const HubOps *ops;
};

struct InotifyHub {
        int fd;
        uv_poll_t poll;
        /* Sorted by wd, dropped ones (gone) kept until they are half of
         * them: a jail removing 100 000 watched directories (and a sub
         * released at a daemon's stop) moved the rest of the array at
         * each one, quadratic (minutes under a sanitizer). */
        HubWatch *watches;
        size_t n_watches, n_gone, cap;
        SubHead *subs; /* of HubSubs */
        bool dispatching;
        bool skimmed; /* this read's rest is taken as an overflow (notify-subs.h) */
};

static size_t find_slot(const InotifyHub *h, int wd, bool *found) {
        size_t lo = 0, hi = h->n_watches;
        if (hi > 0 && h->watches[hi - 1].wd < wd) {
                *found = false;
                return hi;
        }
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (h->watches[mid].wd < wd)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = lo < h->n_watches && h->watches[lo].wd == wd;
        return lo;
}

/* The live watch on wd, if any. */
static HubWatch *live_watch(InotifyHub *h, int wd) {
        bool found;
        size_t i = find_slot(h, wd, &found);
        return found && !h->watches[i].gone ? &h->watches[i] : NULL;
}

static void compact(InotifyHub *h) {
        if (h->n_gone < 64 || h->n_gone * 2 < h->n_watches)
                return;
        size_t j = 0;
        for (size_t i = 0; i < h->n_watches; i++)
                if (!h->watches[i].gone)
                        h->watches[j++] = h->watches[i];
        h->n_watches = j;
        h->n_gone = 0;
}

/* Marks w dropped; compact() (which moves the array) is the caller's. */
static void drop_watch(InotifyHub *h, HubWatch *w) {
        free(TAKE_PTR(w->subs));
        w->n_subs = 0;
        w->gone = true;
        h->n_gone++;
}

/* Takes s off w; the last one out removes the watch from the instance. */
static void unsubscribe(InotifyHub *h, HubSub *s, HubWatch *w) {
        for (size_t k = 0; k < w->n_subs; k++)
                if (w->subs[k] == s) {
                        w->subs[k] = w->subs[--w->n_subs];
                        if (w->n_subs == 0) {
                                (void)inotify_rm_watch(h->fd, w->wd);
                                drop_watch(h, w);
                        }
                        return;
                }
}

/* One pass over the hub's watches, not a look-up per watch held; every
 * one is looked at (no count of s's watches to stop early on: one wrong
 * count would leave s, freed next, in a watch's list). */
static void sub_release_watches(HubSub *s) {
        InotifyHub *h = s->hub;
        for (size_t i = 0; i < h->n_watches; i++)
                if (!h->watches[i].gone)
                        unsubscribe(h, s, &h->watches[i]);
        compact(h);
}

bool hub_sub_holds(const HubSub *s, int wd) {
        const HubWatch *w = live_watch(s->hub, wd);
        for (size_t i = 0; w && i < w->n_subs; i++)
                if (w->subs[i] == s)
                        return true;
        return false;
}

void hub_release_watch(HubSub *s, int wd) {
        InotifyHub *h = s->hub;
        HubWatch *w = live_watch(h, wd);
        if (!w)
                return;
        unsubscribe(h, s, w);
        compact(h);
}

/* The kernel dropped wd (its directory went, or it was removed): nobody
 * holds it any more. */
static void forget_watch(InotifyHub *h, int wd) {
        HubWatch *w = live_watch(h, wd);
        if (!w)
                return;
        drop_watch(h, w);
        compact(h);
}

static void deliver(HubSub *s, const struct inotify_event *ev) {
        if (s->head.dead)
                return;
        s->head.got = true;
        s->ops->event(s->head.userdata, ev);
}

/* After an overflow: the watches the kernel dropped whose IN_IGNORED the
 * overflow lost (their directories removed) are forgotten, as that event
 * would have had them (their holders see it in hub_sub_holds). The
 * instance's fdinfo lists the live ones, one "inotify wd:%x ..." line
 * each (since Linux 3.8): a wd it does not list is dead (the kernel hands
 * out wds increasing, not reused meanwhile). Only the kernel's word: a
 * listing that cannot be read whole forgets nothing. */
static void reap_dead(InotifyHub *h) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", h->fd);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ bool *live = calloc(h->n_watches ? h->n_watches : 1, sizeof *live);
        if (!f || !live)
                return;
        char line[1024]; /* a longer line's rest (a file handle) does not start with "inotify wd:" */
        while (fgets(line, sizeof line, f)) {
                unsigned wd;
                bool found;
                if (sscanf(line, "inotify wd:%x ", &wd) != 1 || wd > INT_MAX)
                        continue;
                size_t i = find_slot(h, (int)wd, &found);
                if (found)
                        live[i] = true;
        }
        if (ferror(f))
                return;
        for (size_t i = 0; i < h->n_watches; i++)
                if (!h->watches[i].gone && !live[i])
                        drop_watch(h, &h->watches[i]);
        compact(h);
}

static void dispatch(InotifyHub *h, const struct inotify_event *ev) {
        if (ev->mask & IN_Q_OVERFLOW) {
                reap_dead(h);
                for (SubHead *s = h->subs; s; s = s->next)
                        deliver((HubSub *)s, ev);
                return;
        }
        const HubWatch *w = live_watch(h, ev->wd);
        if (!w)
                return;
        /* A callback may add watches (the array moves) or free subscribers:
         * work on a copy of who holds this one. */
        HubSub *one[4], **who = one;
        size_t n = w->n_subs;
        if (n > ELEMENTSOF(one) && !(who = malloc(n * sizeof *who)))
                who = one, n = ELEMENTSOF(one); /* out of memory: the first few still hear it */
        memcpy(who, w->subs, n * sizeof *who);
        for (size_t k = 0; k < n; k++)
                deliver(who[k], ev);
        if (who != one)
                free(who);
        if (ev->mask & IN_IGNORED)
                forget_watch(h, ev->wd);
}

static void parse(void *ctx, const char *buf, size_t n, NotifySkim skim) {
        InotifyHub *h = ctx;
        if (skim != NOTIFY_ALL && !h->skimmed) {
                /* Too many to handle one by one (notify-subs.h): an overflow. */
                h->skimmed = true;
                const struct inotify_event over = { .wd = -1, .mask = IN_Q_OVERFLOW };
                dispatch(h, &over);
        }
        for (const char *p = buf; p < buf + n;) {
                const struct inotify_event *ev = (const struct inotify_event *)p;
                p += sizeof *ev + ev->len;
                if (skim == NOTIFY_ALL || (skim == NOTIFY_FILES && !(ev->mask & IN_ISDIR)))
                        dispatch(h, ev);
                else if (ev->mask & IN_IGNORED)
                        forget_watch(h, ev->wd);
        }
}

bool hub_drain(InotifyHub *h) {
        if (h->dispatching)
                return true; /* inside a callback of the batch being dispatched */
        h->dispatching = true;
        h->skimmed = false;
        _Alignas(struct inotify_event) char buf[16384];
        bool ok = notify_read_all(h->fd, buf, sizeof buf, parse, h);
        notify_batch_done(&h->subs);
        h->dispatching = false;
        return ok;
}

static void on_readable(uv_poll_t *p, int status, int events) {
        hub_drain(p->data);
}

int hub_new(uv_loop_t *loop, InotifyHub **ret) {
        InotifyHub *h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;
        h->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (h->fd < 0) {
                int r = -errno;
                free(h);
                return r;
        }
        int r = uv_poll_init(loop, &h->poll, h->fd);
        if (r < 0) {
                close(h->fd);
                free(h);
                return r;
        }
        h->poll.data = h;
        uv_poll_start(&h->poll, UV_READABLE, on_readable);
        /* Never what keeps the loop running. */
        uv_unref((uv_handle_t *)&h->poll);
        *ret = h;
        return 0;
}

static void on_poll_closed(uv_handle_t *p) {
        InotifyHub *h = p->data;
        close(h->fd);
        free(h);
}

void hub_free(InotifyHub *h) {
        if (!h)
                return;
        /* Closing the instance drops its watches: none is removed one by one. */
        for (SubHead *s = h->subs, *next; s; s = next) {
                next = s->next;
                free(s);
        }
        h->subs = NULL;
        for (size_t i = 0; i < h->n_watches; i++)
                free(h->watches[i].subs);
        free(h->watches);
        h->watches = NULL;
        h->n_watches = 0;
        uv_poll_stop(&h->poll);
        uv_close((uv_handle_t *)&h->poll, on_poll_closed);
}

int hub_sub_new(InotifyHub *h, const HubOps *ops, void *userdata, HubSub **ret) {
        HubSub *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        *s = (HubSub){ .head = { .next = h->subs, .batch_end = ops->batch_end, .userdata = userdata }, .hub = h, .ops = ops };
        h->subs = &s->head;
        *ret = s;
        return 0;
}

void hub_sub_free(HubSub *s) {
        if (!s || s->head.dead)
                return;
        InotifyHub *h = s->hub;
        sub_release_watches(s);
        s->head.dead = true;
        if (!h->dispatching)
                notify_sweep(&h->subs);
}

int hub_add_watch(HubSub *s, const char *path, uint32_t mask) {
        InotifyHub *h = s->hub;
        if (s->head.dead)
                return -ESTALE;
        int wd = inotify_add_watch(h->fd, path, mask | IN_MASK_ADD);
        if (wd < 0)
                return -errno;
        bool found;
        size_t i = find_slot(h, wd, &found);
        if (found && h->watches[i].gone) {
                /* The kernel handed out a dropped one's number again. */
                h->watches[i].gone = false;
                h->n_gone--;
        } else if (!found) {
                if (h->n_watches == h->cap) {
                        size_t cap = h->cap ? h->cap * 2 : 64;
                        HubWatch *nw = reallocarray(h->watches, cap, sizeof *nw);
                        if (!nw) {
                                (void)inotify_rm_watch(h->fd, wd);
                                return -ENOMEM;
                        }
                        h->watches = nw;
                        h->cap = cap;
                }
                memmove(&h->watches[i + 1], &h->watches[i], (h->n_watches - i) * sizeof *h->watches);
                h->watches[i] = (HubWatch){ .wd = wd };
                h->n_watches++;
        }
        HubWatch *w = &h->watches[i];
        for (size_t k = 0; k < w->n_subs; k++)
                if (w->subs[k] == s)
                        return wd; /* held already */
        HubSub **ns = reallocarray(w->subs, w->n_subs + 1, sizeof *ns);
        if (!ns) {
                /* Not held by s: off the instance unless somebody else has it. */
                if (w->n_subs == 0) {
                        (void)inotify_rm_watch(h->fd, wd);
                        drop_watch(h, w);
                        compact(h);
                }
                return -ENOMEM;
        }
        w->subs = ns;
        w->subs[w->n_subs++] = s;
        return wd;
}

size_t hub_n_watches(const InotifyHub *h) {
        return h->n_watches - h->n_gone;
}
