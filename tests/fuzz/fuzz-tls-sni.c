/* SPDX-License-Identifier: MIT */
/* Fuzzes the ClientHello/SNI parser with what a jailed process may send
 * after CONNECT. Besides crashes and hangs it checks: a result is stable
 * when more bytes follow (a complete hello is decided on its own bytes);
 * a server name is a normalized host name; "need more" only while the
 * input is shorter than the parser's bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net-policy.h"
#include "proxy-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond) {
        if (!cond)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *sni = NULL;
        VsError *err = NULL;
        int r = tls_client_hello_sni(data, size, &sni, &err);
        vs_error_free(err);
        err = NULL;
        if (r == 0)
                return 0; /* incomplete: nothing decided */
        if (r == 1 && sni) {
                char *again = strdup(sni);
                check(again && net_host_normalize(again) == 0 && strcmp(again, sni) == 0);
                free(again);
        }
        /* The same bytes with trailing data decide the same way. */
        uint8_t *more = malloc(size + 7);
        check(more != NULL);
        memcpy(more, data, size);
        memset(more + size, 0x16, 7);
        char *sni2 = NULL;
        int r2 = tls_client_hello_sni(more, size + 7, &sni2, &err);
        vs_error_free(err);
        if (r == -EPROTO || r == 1) {
                check(r2 == r);
                check((sni == NULL) == (sni2 == NULL) && (!sni || strcmp(sni, sni2) == 0));
        }
        free(more);
        free(sni);
        free(sni2);
        return 0;
}
