/* SPDX-License-Identifier: MIT */
/* secret_set, secret_list, secret_delete: the daemon's user's secret
 * store (secret-store.h), STATE/secrets-UID.json. Only that user and root
 * may connect (peer_uid_allowed); peers inside a jail never get here (the
 * server refuses them). No reply, log
 * line or audit record carries a value. */
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "daemon-tools.h"
#include "json-util.h"
#include "log.h"
#include "proxy.h"
#include "request.h"
#include "secret-store.h"
#include "server.h"

static void finish_err(Request *r, VsError *err, ApiError fallback) {
        request_finish(r, NULL, NULL, NULL, 0, api_error_from_kind(vs_error_kind(err), fallback),
                       vs_error_message(err) ?: "out of memory");
}

void secret_set_reply(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ApiSecretArgs a = {};
        if (json_dispatch(r->msg.obj, api_secret_set_table, &a, &err) < 0)
                return finish_err(r, err, API_ERROR_BAD_REQUEST);
        r->target = json_string(a.name);
        int k = secret_store_set(r->srv->opt.state_dir, geteuid(), a.name, a.hosts, a.headers, a.value, strlen(a.value), &err);
        /* The request's copy of the value goes with r->msg; scrub it now. */
        json_t *v = json_object_get(r->msg.obj, "value");
        if (json_is_string(v))
                explicit_bzero((char *)json_string_value(v), json_string_length(v));
        json_dispatch_done(api_secret_set_table, &a);
        if (k < 0)
                return finish_err(r, err, API_ERROR_BAD_REQUEST);
        log_info("secret %s set by uid %u", json_string_value(r->target), (unsigned)r->client->uid);
        request_finish(r, NULL, json_pack("{s:O}", "name", r->target), NULL, 0, API_OK, NULL);
}

void secret_delete_reply(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ApiSecretArgs a = {};
        if (json_dispatch(r->msg.obj, api_secret_delete_table, &a, &err) < 0)
                return finish_err(r, err, API_ERROR_BAD_REQUEST);
        r->target = json_string(a.name);
        int k = secret_store_delete(r->srv->opt.state_dir, geteuid(), a.name, &err);
        json_dispatch_done(api_secret_delete_table, &a);
        if (k < 0)
                return finish_err(r, err, API_ERROR_BAD_REQUEST);
        /* A running jail's proxy holds the value: drop it there now, not
         * at the jail's next start. */
        proxy_secret_deleted(r->srv, json_string_value(r->target));
        log_info("secret %s deleted by uid %u", json_string_value(r->target), (unsigned)r->client->uid);
        request_finish(r, NULL, json_pack("{s:O}", "name", r->target), NULL, 0, API_OK, NULL);
}

void secret_list_reply(Request *r) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        char none;
        if (json_dispatch(r->msg.obj, api_no_args_table, &none, &err) < 0)
                return finish_err(r, err, API_ERROR_BAD_REQUEST);
        r->target = json_null();
        _cleanup_(secret_store_done) VsSecretStore s = {};
        if (secret_store_load(r->srv->opt.state_dir, geteuid(), &s, &err) < 0)
                return finish_err(r, err, API_ERROR_SANDBOX_UNAVAILABLE);
        json_t *o = secret_store_list_json(&s);
        if (!o)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        request_finish(r, NULL, o, NULL, 0, API_OK, NULL);
}
