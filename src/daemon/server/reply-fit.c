/* SPDX-License-Identifier: MIT */
/* Every reply deliverable: a result line may hold at most JSONL_MAX_LINE
 * bytes, so command output that would not fit once escaped (or base64'd)
 * is cut down here to a head and a tail with the worker's marker, instead
 * of the whole reply failing too_large and losing exit_code and timed_out.
 * Pure: no OS calls. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jsonl.h"
#include "reply-fit.h"
#include "utf8.h"

/* Room for everything in a result but the output strings: id, status
 * fields, the sandbox object. Generous: they take a few KiB. */
#define REPLY_HEADER_ROOM (64u * 1024u)
/* The marker, escaped or base64'd, and rounding. */
#define MARKER_ROOM 96u

static size_t b64_len(size_t n) {
        return (n + 2) / 3 * 4;
}

size_t reply_budget(json_t *id) {
        size_t id_len = json_is_string(id) ? jsonl_escaped_len(json_string_value(id), json_string_length(id)) : 32;
        size_t used = REPLY_HEADER_ROOM + id_len;
        return used < JSONL_MAX_LINE ? JSONL_MAX_LINE - used : 0;
}

bool reply_bytes_as_text(const char *p, size_t n, size_t budget) {
        return utf8_valid(p ? p : "", n) && jsonl_escaped_len(p ? p : "", n) <= budget;
}

size_t reply_bytes_cost(const char *p, size_t n, size_t budget) {
        if (utf8_valid(p ? p : "", n)) {
                size_t e = jsonl_escaped_len(p ? p : "", n);
                if (e <= budget)
                        return e;
        }
        return b64_len(n);
}

/* Where the worker's own cut is, when it made one (total > n): its head
 * ends and its tail starts around "\n[... K bytes omitted ...]\n" at
 * max/2, with n = max + the marker's length (src/worker/exec.c). Our cut
 * stays inside its head and its tail, so "bytes omitted" stays exact. */
static void worker_regions(const char *p, size_t n, uint64_t total, size_t *ret_head_end, size_t *ret_tail_start) {
        *ret_head_end = n;
        *ret_tail_start = 0;
        if (total <= n)
                return;
        for (size_t digits = 1; digits <= 20; digits++) {
                size_t mlen = 26 + digits;
                if (n < mlen)
                        return;
                size_t max = n - mlen;
                char m[64];
                int k = snprintf(m, sizeof m, "\n[... %llu bytes omitted ...]\n", (unsigned long long)(total - max));
                if (k < 0 || (size_t)k != mlen || memcmp(p + max / 2, m, mlen) != 0)
                        continue;
                *ret_head_end = max / 2;
                *ret_tail_start = max / 2 + mlen;
                return;
        }
}

int reply_fit_output(const char *p, size_t n, uint64_t total, size_t budget, const char **ret_p, size_t *ret_n,
                     char **ret_owned) {
        *ret_owned = NULL;
        *ret_p = p;
        *ret_n = n;
        if (reply_bytes_cost(p, n, budget) <= budget)
                return 0;
        if (total < n)
                total = n;
        size_t head_end, tail_start;
        worker_regions(p, n, total, &head_end, &tail_start);
        size_t avail = budget > MARKER_ROOM ? budget - MARKER_ROOM : 0;
        size_t h, t, tail_from;
        if (utf8_valid(p, n)) {
                /* Cut at character boundaries: the result stays text. */
                h = jsonl_escaped_prefix(p, head_end, avail / 2);
                tail_from = tail_start > h ? tail_start : h;
                t = jsonl_escaped_suffix(p + tail_from, n - tail_from, avail - jsonl_escaped_len(p, h));
        } else {
                size_t raw = avail / 4 * 3;
                h = head_end < raw / 2 ? head_end : raw / 2;
                tail_from = tail_start > h ? tail_start : h;
                t = n - tail_from < raw - h ? n - tail_from : raw - h;
        }
        char marker[64];
        int k = snprintf(marker, sizeof marker, "\n[... %llu bytes omitted ...]\n", (unsigned long long)(total - h - t));
        if (k < 0)
                return -EINVAL;
        char *buf = malloc(h + (size_t)k + t + 1);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, p, h);
        memcpy(buf + h, marker, (size_t)k);
        memcpy(buf + h + k, p + n - t, t);
        buf[h + k + t] = 0;
        *ret_p = *ret_owned = buf;
        *ret_n = h + (size_t)k + t;
        return 0;
}

void reply_split_budget(size_t budget, size_t cost_a, size_t cost_b, size_t *ret_a, size_t *ret_b) {
        if (cost_a + cost_b <= budget) {
                *ret_a = cost_a;
                *ret_b = cost_b;
        } else if (cost_b <= budget / 2) {
                *ret_a = budget - cost_b;
                *ret_b = cost_b;
        } else if (cost_a <= budget / 2) {
                *ret_a = cost_a;
                *ret_b = budget - cost_a;
        } else
                *ret_a = *ret_b = budget / 2;
}
