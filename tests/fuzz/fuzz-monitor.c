/* SPDX-License-Identifier: MIT */
/* Fuzzes the monitor protocol's decoder (src/daemon/monitor/monitor-proto.h):
 * the root monitor decodes what the unprivileged server sends, so a
 * request may be anything a taken-over server writes; the server decodes
 * the monitor's replies with the same code. The first byte says which
 * (request or reply); the rest is the datagram. Besides crashes, leaks
 * and hangs it checks what the monitor will rely on: every string and
 * path ends in its NUL with none before it, a path is normal, a group's
 * members follow it, and a decoded message encodes again to the same
 * bytes (nothing accepted that the encoder could not have written). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "monitor-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

static bool is_string_tag(uint16_t tag) {
        return tag == MONITOR_F_PATH || tag == MONITOR_F_REL || tag == MONITOR_F_DST || tag == MONITOR_F_ENV ||
               tag == MONITOR_F_MESSAGE || tag == MONITOR_F_NAME || tag == MONITOR_F_EMAIL;
}

static void reencode(const MonitorMsg *m, const uint8_t *buf, size_t n) {
        MonitorEnc e;
        monitor_enc_begin(&e, m->type, m->id);
        for (size_t i = 0; i < m->n_fields; i++) {
                const MonitorField *f = &m->fields[i];
                if (f->parent >= 0)
                        continue; /* written with its group */
                if (f->tag != MONITOR_F_MOUNT && f->tag != MONITOR_F_ITEM) {
                        monitor_put_bytes(&e, f->tag, f->data, f->len);
                        continue;
                }
                monitor_group_begin(&e, f->tag);
                for (size_t k = i + 1; k < m->n_fields && m->fields[k].parent == (int)i; k++)
                        monitor_put_bytes(&e, m->fields[k].tag, m->fields[k].data, m->fields[k].len);
                monitor_group_end(&e);
        }
        check(monitor_enc_end(&e) == 0);
        check(e.buf.len == n && memcmp(e.buf.data, buf, n) == 0);
        monitor_enc_done(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        bool is_reply = data[0] & 1;
        /* A copy of exactly the datagram's size: reads past it are caught. */
        uint8_t *buf = malloc(size - 1 ? size - 1 : 1);
        check(buf != NULL);
        memcpy(buf, data + 1, size - 1);
        MonitorMsg *m = malloc(sizeof *m);
        check(m != NULL);
        VsError *err = NULL;
        int r = monitor_decode(buf, size - 1, is_reply, m, &err);
        if (r < 0) {
                check(r == -EBADMSG && err && err->message);
                vs_error_free(err);
        } else {
                check(!err);
                for (size_t i = 0; i < m->n_fields; i++) {
                        const MonitorField *f = &m->fields[i];
                        check(f->data >= buf + 16 && f->data + f->len <= buf + size - 1);
                        if (is_string_tag(f->tag)) {
                                check(f->len >= 1 && f->data[f->len - 1] == '\0');
                                check(strlen((const char *)f->data) == f->len - 1);
                        }
                        if (f->tag == MONITOR_F_PATH || f->tag == MONITOR_F_DST) {
                                const char *s = (const char *)f->data;
                                check(s[0] == '/' && !strstr(s, "//") && !strstr(s, "/../") && !strstr(s, "/./"));
                                size_t l = strlen(s);
                                check(l == 1 || (s[l - 1] != '/' && strcmp(s + l - 2, "/.") != 0 &&
                                                 (l < 3 || strcmp(s + l - 3, "/..") != 0)));
                        }
                        if (f->tag == MONITOR_F_REL)
                                check(f->data[0] != '/' && strcmp((const char *)f->data, "..") != 0 &&
                                      strncmp((const char *)f->data, "../", 3) != 0);
                        if (f->parent >= 0)
                                check((size_t)f->parent < i && (m->fields[f->parent].tag == MONITOR_F_MOUNT || m->fields[f->parent].tag == MONITOR_F_ITEM));
                }
                if (!is_reply)
                        check(monitor_req_to_string(m->type) != NULL);
                reencode(m, buf, size - 1);
        }
        free(m);
        free(buf);
        return 0;
}
