/* SPDX-License-Identifier: MIT */
#include "policy-json.h"
#include "json-util.h"

#include "strv.h"

static json_t *paths_json(const VsPath *l, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
                json_t *o = json_pack("{s:s, s:s?, s:b}", "written", l[i].written, "resolved", l[i].resolved, "missing",
                                      l[i].missing);
                if (!o || json_array_append_new(a, o) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

json_t *policy_to_json(const VsPolicy *p) {
        if (!p->sandboxed)
                return json_pack("{s:s, s:s, s:b, s:s}", "workspace", p->workspace, "config", p->config_path, "sandboxed",
                                 0, "reason", p->unsandboxed_reason ? p->unsandboxed_reason : "");
        _cleanup_strv_free_ char **prot = NULL;
        if (config_protected_paths(p, &prot) < 0)
                return NULL;
        json_t *o = json_pack("{s:s, s:s, s:b, s:s, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:I, s:{s:I, s:I, s:I, s:I, s:I}}",
                              "workspace", p->workspace, "config", p->config_path, "sandboxed", 1, "backend",
                              vs_backend_name(p->backend), "rw_paths", paths_json(p->rw_paths, p->n_rw), "ro_paths",
                              paths_json(p->ro_paths, p->n_ro), "mask", json_strv(p->mask), "protected", json_strv(prot),
                              "no_gpu", p->no_gpu, "lockdown", p->lockdown, "network", p->network, "idle_timeout",
                              (json_int_t)p->idle_timeout_s, "limits", "timeout", (json_int_t)p->limits.timeout_s,
                              "max_output", (json_int_t)p->limits.max_output, "pids", (json_int_t)p->limits.pids,
                              "memory", (json_int_t)p->limits.memory, "background_timeout",
                              (json_int_t)p->limits.background_timeout_s);
        if (!o)
                return NULL;
        if (json_object_set_new(o, "protect", json_strv(p->protect)) < 0 ||
            json_object_set_new(o, "git_init", json_boolean(p->git_init)) < 0 ||
            json_object_set_new(o, "persistent_home", json_boolean(p->persistent_home)) < 0) {
                json_decref(o);
                return NULL;
        }
        if (p->net_allowlist) {
                /* The entries as written: what the user reads and edits. */
                json_t *a = json_array();
                for (size_t i = 0; a && i < p->n_net_rules; i++)
                        if (json_array_append_new(a, json_string(p->net_rules[i].written)) < 0) {
                                json_decref(a);
                                a = NULL;
                        }
                if (!a || json_object_set_new(o, "network_allow", a) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        if (p->n_ports) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < p->n_ports; i++)
                        if (json_array_append_new(a, json_pack("{s:i,s:i}", "host", (int)p->ports[i].host, "jail",
                                                               (int)p->ports[i].jail)) < 0) {
                                json_decref(a);
                                a = NULL;
                        }
                if (!a || json_object_set_new(o, "ports", a) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        if (p->n_secrets) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < p->n_secrets; i++)
                        if (json_array_append_new(a, json_string(p->secrets[i].name)) < 0) {
                                json_decref(a);
                                a = NULL;
                        }
                if (!a || json_object_set_new(o, "secrets", a) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        if (p->n_http) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < p->n_http; i++) {
                        json_t *l = json_array();
                        for (size_t j = 0; l && j < p->http[i].n_allow; j++)
                                if (json_array_append_new(l, json_string(p->http[i].allow[j])) < 0)
                                        l = (json_decref(l), NULL);
                        if (!l || json_array_append_new(a, json_pack("{s:s,s:o}", "host", p->http[i].host, "allow", l)) < 0)
                                a = (json_decref(a), NULL);
                }
                if (!a || json_object_set_new(o, "http", a) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        json_t *b = p->backend->config_json && p->backend_config ? p->backend->config_json(p->backend_config) : NULL;
        if (b && json_object_set_new(o, vs_backend_name(p->backend), b) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}
