/* SPDX-License-Identifier: MIT */
#include "api-result.h"

#include "json-util.h"

json_t *api_sandbox_json(const VsApiSandbox *s) {
        return json_pack("{s:s?,s:s,s:o,s:o,s:I}", "backend", s->backend, "state", s->state, "layers",
                         json_strv(s->layers), "degraded", json_strv(s->degraded), "generation",
                         (json_int_t)s->generation);
}

json_t *api_sandbox_refused(void) {
        return api_sandbox_json(&(VsApiSandbox){ .state = "refused" });
}

json_t *api_result_close(json_t *o, const char *code, const char *message, bool sandboxed, const char *pending,
                         json_t *host_run, json_t *sandbox) {
        if (!o)
                o = json_object();
        if (!sandbox)
                sandbox = api_sandbox_refused();
        int r = o && sandbox ? 0 : -1;
        r = r < 0 ? r : json_object_set_new(o, "ok", json_boolean(!code));
        if (code)
                r = r < 0 ? r
                          : json_object_set_new(o, "error", json_pack("{s:s,s:s}", "code", code, "message",
                                                                      message ? message : code));
        r = r < 0 ? r : json_object_set_new(o, "sandboxed", json_boolean(sandboxed));
        r = r < 0 ? r : json_object_set_new(o, "policy_pending", pending ? json_string(pending) : json_null());
        if (host_run)
                r = r < 0 ? r : json_object_set(o, "host_run_files", host_run);
        else if (!json_object_get(o, "host_run_files"))
                r = r < 0 ? r : json_object_set_new(o, "host_run_files", json_array());
        r = r < 0 ? r : json_object_set_new(o, "sandbox", TAKE_PTR(sandbox));
        json_decref(sandbox);
        if (r < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}
