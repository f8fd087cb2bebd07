/* SPDX-License-Identifier: MIT */
#pragma once

/* The fuzz targets that decode messages (fuzz-api, fuzz-protocol) read
 * their input the one way: arbitrary bytes through the JSONL reader, each
 * message it accepts handed on, a malformed one skipped as the daemon
 * skips it. */

#include <stddef.h>
#include <stdint.h>

#include "jsonl.h"

/* Calls each(m) for every message the reader takes from data, at most max
 * of them (0: no limit; a bound keeps a run's time linear in its input).
 * m is freed after each returns. */
static inline void fuzz_each_message(const uint8_t *data, size_t size, unsigned max, void (*each)(JsonlMsg *m)) {
        JsonlReader *r = NULL;
        if (jsonl_reader_new(&r) < 0)
                return;
        if (jsonl_reader_feed(r, data, size) < 0) {
                jsonl_reader_free(r);
                return;
        }
        for (unsigned n = 0; max == 0 || n < max; n++) {
                JsonlMsg m = JSONL_MSG_INIT;
                VsError *err = NULL;
                int k = jsonl_reader_next(r, &m, &err);
                vs_error_free(err);
                if (k == -EBADMSG)
                        continue;
                if (k < 0)
                        break;
                each(&m);
                jsonl_msg_done(&m);
        }
        jsonl_reader_free(r);
}
