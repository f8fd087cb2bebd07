/* SPDX-License-Identifier: MIT */
#include "handshake.h"

#include <string.h>

#include "protocol.h"
#include "worker-spawn.h"
#include "strv.h"

void handshake_init(VsHandshake *h, VsLaunch *l) {
        *h = (VsHandshake){ .launch = l };
}

void handshake_done(VsHandshake *h) {
        strv_free(TAKE_PTR(h->layers));
        strv_free(TAKE_PTR(h->degraded));
}

static bool has_prefix_in(char **l, const char *prefix) {
        for (char **d = l; d && *d; d++)
                if (strncmp(*d, prefix, strlen(prefix)) == 0)
                        return true;
        return false;
}

static int layers_of(VsHandshake *h, const ProtocolReady *rd) {
        _cleanup_strv_free_ char **layers = calloc(1, sizeof(char *)), **degraded = calloc(1, sizeof(char *));
        if (!layers || !degraded)
                return -ENOMEM;
        int r = 0;
        if (h->launch->sandboxed) {
                /* A backend that could not build namespaces (ssh to a host
                 * without bwrap) says so in degraded: never claim them. */
                if (!has_prefix_in(rd->degraded, "namespaces:") && !has_prefix_in(h->launch->degraded, "namespaces:"))
                        r = strv_extend(&layers, "namespaces");
                if (r >= 0 && rd->no_new_privs)
                        r = strv_extend(&layers, "no_new_privs");
                if (r >= 0 && rd->seccomp)
                        r = strv_extend(&layers, "seccomp");
                if (r >= 0 && rd->landlock_abi > 0)
                        r = strv_extend(&layers, "landlock");
        }
        for (char **d = h->launch->degraded; r >= 0 && d && *d; d++)
                if (!strv_contains(degraded, *d))
                        r = strv_extend(&degraded, *d);
        for (char **d = rd->degraded; r >= 0 && d && *d; d++)
                if (!strv_contains(degraded, *d))
                        r = strv_extend(&degraded, *d);
        if (r < 0)
                return r;
        strv_free(h->layers);
        strv_free(h->degraded);
        h->layers = TAKE_PTR(layers);
        h->degraded = TAKE_PTR(degraded);
        return 0;
}

static int on_hello(VsHandshake *h, JsonlMsg *m, StrBuf *out, VsError **err) {
        const char *type = protocol_message_type(m->obj);
        ProtocolHello hello = { 0 };
        if (!type || !streq(type, "hello") || protocol_decode_hello(m->obj, &hello, NULL) < 0)
                return vs_error_set_kind(err, -EPROTO, "sandbox_unavailable", "the worker did not say hello");
        /* The jail holds its own mounts now: drop any staging ones. */
        launch_release_staging(h->launch);
        bool version_ok = hello.version == PROTOCOL_VERSION;
        h->worker_pid = hello.pid > 0 ? hello.pid : 1;
        int64_t uid = hello.uid, gid = hello.gid;
        protocol_hello_done(&hello);
        if (!version_ok)
                return vs_error_set_kind(err, -EPROTO, "sandbox_unavailable",
                                         "worker protocol version mismatch; install a matching vectora-worker");
        /* The filter lets chown give the jail's own ids, which only the
         * worker knows for sure (an ssh remote's user, a container's).
         * Its hello comes before any command of the agent's runs; and
         * even wrong ids would widen chown only to what the kernel allows
         * a process without CAP_CHOWN anyway: its own uid and groups. */
        int r = h->launch->sandboxed ? launch_seccomp_for_ids(h->launch, uid, gid, err) : 0;
        if (r < 0)
                return r;
        r = launch_encode_init(h->launch, out);
        if (r < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "encoding init: %s", strerror(-r));
        h->state = VS_HANDSHAKE_INIT;
        return VS_HANDSHAKE_SEND;
}

static int on_ready(VsHandshake *h, JsonlMsg *m, VsError **err) {
        const char *type = protocol_message_type(m->obj);
        if (type && streq(type, "init_failed")) {
                const char *msg = NULL;
                (void)protocol_decode_init_failed(m->obj, &msg, NULL);
                return vs_error_set_kind(err, -EPERM, "sandbox_unavailable", "the jail refused to start: %s",
                                         msg ? msg : "unknown reason");
        }
        ProtocolReady rd = { 0 };
        if (!type || !streq(type, "ready") || protocol_decode_ready(m->obj, &rd, NULL) < 0)
                return vs_error_set_kind(err, -EPROTO, "sandbox_unavailable", "the worker did not become ready");
        int r = layers_of(h, &rd);
        protocol_ready_done(&rd);
        if (r < 0)
                return r;
        h->state = VS_HANDSHAKE_READY;
        return VS_HANDSHAKE_OK;
}

int handshake_feed(VsHandshake *h, JsonlMsg *m, StrBuf *out, VsError **err) {
        switch (h->state) {
        case VS_HANDSHAKE_HELLO:
                return on_hello(h, m, out, err);
        case VS_HANDSHAKE_INIT:
                return on_ready(h, m, err);
        case VS_HANDSHAKE_READY:
                break;
        }
        return vs_error_set_kind(err, -EPROTO, "sandbox_unavailable", "a handshake message after ready");
}
