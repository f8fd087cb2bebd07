/* SPDX-License-Identifier: MIT */
/* One inotify instance for the daemon (inotify-hub.h). Watch descriptors
 * are kept sorted (the kernel hands them out increasing, so a new one is
 * appended); each lists the subscribers that added it. Subscribers freed
 * while a batch is dispatched are only marked dead, and swept after it, so
 * a callback may end its own or another workspace's watches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h" /* before uv.h: its sys/param.h MIN/MAX are guarded */
#include "inotify-hub.h"
#include "notify-subs.h"

typedef struct HubWatch {
        int wd;
        HubSub **subs;
        size_t n_subs;
} HubWatch;

struct HubSub {
        SubHead head; /* first: notify-subs.h frees it */
        InotifyHub *hub;
        const HubOps *ops;
        int *wds;
        size_t n_wds;
};

struct InotifyHub {
        int fd;
        uv_poll_t poll;
        HubWatch *watches; /* sorted by wd */
        size_t n_watches;
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

static void drop_watch_at(InotifyHub *h, size_t i) {
        free(h->watches[i].subs);
        memmove(&h->watches[i], &h->watches[i + 1], (h->n_watches - i - 1) * sizeof *h->watches);
        h->n_watches--;
}

/* Takes s off wd; the last one out removes the watch from the instance. */
static void unsubscribe(InotifyHub *h, HubSub *s, int wd) {
        bool found;
        size_t i = find_slot(h, wd, &found);
        if (!found)
                return;
        HubWatch *w = &h->watches[i];
        for (size_t k = 0; k < w->n_subs; k++)
                if (w->subs[k] == s) {
                        w->subs[k] = w->subs[--w->n_subs];
                        break;
                }
        if (w->n_subs == 0) {
                (void)inotify_rm_watch(h->fd, wd);
                drop_watch_at(h, i);
        }
}

static void sub_release_watches(HubSub *s) {
        for (size_t i = 0; i < s->n_wds; i++)
                unsubscribe(s->hub, s, s->wds[i]);
        free(s->wds);
        s->wds = NULL;
        s->n_wds = 0;
}

/* The kernel dropped wd (its directory went, or it was removed): nobody
 * holds it any more. */
static void forget_watch(InotifyHub *h, int wd) {
        bool found;
        size_t i = find_slot(h, wd, &found);
        if (!found)
                return;
        HubWatch *w = &h->watches[i];
        for (size_t k = 0; k < w->n_subs; k++) {
                HubSub *s = w->subs[k];
                for (size_t j = 0; j < s->n_wds; j++)
                        if (s->wds[j] == wd) {
                                s->wds[j] = s->wds[--s->n_wds];
                                break;
                        }
        }
        drop_watch_at(h, i);
}

static void deliver(HubSub *s, const struct inotify_event *ev) {
        if (s->head.dead)
                return;
        s->head.got = true;
        s->ops->event(s->head.userdata, ev);
}

static void dispatch(InotifyHub *h, const struct inotify_event *ev) {
        if (ev->mask & IN_Q_OVERFLOW) {
                for (SubHead *s = h->subs; s; s = s->next)
                        deliver((HubSub *)s, ev);
                return;
        }
        bool found;
        size_t i = find_slot(h, ev->wd, &found);
        if (!found)
                return;
        /* A callback may add watches (the array moves) or free subscribers:
         * work on a copy of who holds this one. */
        HubSub *one[4], **who = one;
        size_t n = h->watches[i].n_subs;
        if (n > ELEMENTSOF(one) && !(who = malloc(n * sizeof *who)))
                who = one, n = ELEMENTSOF(one); /* out of memory: the first few still hear it */
        memcpy(who, h->watches[i].subs, n * sizeof *who);
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
        for (SubHead *s = h->subs, *next; s; s = next) {
                next = s->next;
                sub_release_watches((HubSub *)s);
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
        if (!found) {
                HubWatch *nw = realloc(h->watches, (h->n_watches + 1) * sizeof *nw);
                if (!nw)
                        goto fail;
                h->watches = nw;
                memmove(&h->watches[i + 1], &h->watches[i], (h->n_watches - i) * sizeof *nw);
                h->watches[i] = (HubWatch){ .wd = wd };
                h->n_watches++;
        }
        HubWatch *w = &h->watches[i];
        for (size_t k = 0; k < w->n_subs; k++)
                if (w->subs[k] == s)
                        return wd; /* held already */
        HubSub **ns = realloc(w->subs, (w->n_subs + 1) * sizeof *ns);
        if (!ns)
                goto fail;
        w->subs = ns;
        int *nwds = realloc(s->wds, (s->n_wds + 1) * sizeof *nwds);
        if (!nwds)
                goto fail;
        s->wds = nwds;
        w->subs[w->n_subs++] = s;
        s->wds[s->n_wds++] = wd;
        return wd;
fail: {
        /* Not held by s: off the instance unless somebody else has it. */
        size_t j = find_slot(h, wd, &found);
        if (!found)
                (void)inotify_rm_watch(h->fd, wd);
        else if (h->watches[j].n_subs == 0) {
                (void)inotify_rm_watch(h->fd, wd);
                drop_watch_at(h, j);
        }
        return -ENOMEM;
}
}

size_t hub_n_watches(const InotifyHub *h) {
        return h->n_watches;
}
