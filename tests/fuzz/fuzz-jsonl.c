/* SPDX-License-Identifier: MIT */
/* The JSON-lines reader on arbitrary bytes: fed whole, then in uneven
 * pieces through both input paths; both must yield the same messages. */
#include <stdint.h>
#include <string.h>

#include "jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Drains r; returns a digest of what came out (count, raw bytes, codes). */
static uint64_t drain(JsonlReader *r, uint64_t h) {
        for (;;) {
                JsonlMsg m = JSONL_MSG_INIT;
                VsError *err = NULL;
                int k = jsonl_reader_next(r, &m, &err);
                vs_error_free(err);
                if (k == -EAGAIN)
                        return h;
                h = h * 31 + (uint64_t) (k < 0 ? -k : 1000);
                if (k == -EBADMSG)
                        continue;
                if (k < 0)
                        return h;
                h = h * 31 + m.raw_len + json_object_size(m.obj);
                for (size_t i = 0; i < m.raw_len; i++)
                        h = h * 131 + (uint8_t) m.raw[i];
                /* re-encode: must always be possible for what was accepted */
                StrBuf b = STRBUF_INIT;
                /* (numbers may re-encode longer, so EMSGSIZE is possible) */
                int e = jsonl_encode(m.obj, m.has_raw ? m.raw : NULL, m.raw_len, &b);
                if (e != 0 && e != -EMSGSIZE)
                        __builtin_trap();
                strbuf_done(&b);
                jsonl_msg_done(&m);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        JsonlReader *a = NULL, *b = NULL;
        if (jsonl_reader_new(&a) < 0 || jsonl_reader_new(&b) < 0)
                return 0;

        uint64_t ha = 0, hb = 0;
        (void) jsonl_reader_feed(a, data, size);
        ha = drain(a, ha);

        /* Pieces of 1..7 bytes, alternating feed() and get_buffer(). */
        size_t off = 0, step = 1;
        while (off < size && !jsonl_reader_failed(b)) {
                size_t n = size - off < step ? size - off : step;
                if (step % 2) {
                        (void) jsonl_reader_feed(b, data + off, n);
                } else {
                        void *p;
                        size_t room;
                        if (jsonl_reader_get_buffer(b, n, &p, &room) < 0)
                                break;
                        if (n > room)
                                n = room;
                        memcpy(p, data + off, n);
                        jsonl_reader_commit(b, n);
                }
                off += n;
                hb = drain(b, hb);
                step = step % 7 + 1;
        }
        if (!jsonl_reader_failed(a) && !jsonl_reader_failed(b) && ha != hb)
                __builtin_trap();

        jsonl_reader_free(a);
        jsonl_reader_free(b);
        return 0;
}
