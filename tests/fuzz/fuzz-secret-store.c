/* SPDX-License-Identifier: MIT */
/* Fuzzes the parser of the host-held secret store (secret-store.h). The
 * file is the daemon's own, but a store edited by hand or half-restored
 * from a backup must be refused, never crash the daemon. Besides crashes,
 * leaks and hangs it checks: what parses is within its bounds (valid
 * names, at least one host, values without line breaks), formats again,
 * and parses to the same secrets. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "secret-store.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        VsSecretStore s = {}, again = {};
        VsError *err = NULL;
        int r = secret_store_parse((const char *)data, size, &s, &err);
        vs_error_free(err);
        err = NULL;
        if (r < 0) {
                check(r == -EINVAL || r == -E2BIG || r == -ENOMEM);
                return 0;
        }
        check(s.n <= SECRET_STORE_MAX_SECRETS);
        for (size_t i = 0; i < s.n; i++) {
                check(secret_name_valid(s.items[i].name));
                check(s.items[i].hosts && s.items[i].hosts[0]);
                check(s.items[i].value_len > 0 && s.items[i].value_len <= SECRET_VALUE_MAX);
                check(!memchr(s.items[i].value, '\n', s.items[i].value_len));
                check(!memchr(s.items[i].value, '\r', s.items[i].value_len));
        }
        char *text = NULL;
        check(secret_store_format(&s, &text) == 0);
        check(secret_store_parse(text, strlen(text), &again, &err) == 0);
        check(again.n == s.n);
        for (size_t i = 0; i < s.n; i++) {
                check(strcmp(again.items[i].name, s.items[i].name) == 0);
                check(strv_equal(again.items[i].hosts, s.items[i].hosts));
                check(again.items[i].value_len == s.items[i].value_len);
                check(memcmp(again.items[i].value, s.items[i].value, s.items[i].value_len) == 0);
        }
        free(text);
        secret_store_done(&again);
        secret_store_done(&s);
        return 0;
}
