/* SPDX-License-Identifier: MIT */
#pragma once

/* For unit tests that play the worker's side: one protocol line, as the
 * encoders wrote it, read back as the other side receives it. Include
 * after <cmocka.h>. */

#include "jsonl.h"
#include "strbuf.h"

static inline JsonlMsg parse(const StrBuf *b) {
        JsonlReader *r = NULL;
        assert_int_equal(jsonl_reader_new(&r), 0);
        assert_int_equal(jsonl_reader_feed(r, b->data, b->len), 0);
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(jsonl_reader_next(r, &m, NULL), 0);
        jsonl_reader_free(r);
        return m;
}
