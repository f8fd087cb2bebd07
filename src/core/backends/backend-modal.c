/* SPDX-License-Identifier: MIT */
#include "backend-modal.h"
#include "json-util.h"

#include <jansson.h>
#include <string.h>

#include "config-internal.h"
#include "strv.h"
#include "utf8.h"

bool backend_modal_name_ok(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-'))
                        return false;
        }
        return true;
}


int backend_modal_argv(const VsPolicy *p, const VsModalEnv *env, char ***ret_argv, VsError **err) {
        const VsModalConfig *m = backend_config(p, &backend_modal_def);
        _cleanup_strv_free_ char **a = NULL;
        int r;

        if (!p->sandboxed || !m)
                return vs_error_set_kind(err, -EINVAL, "internal", "workspace %s does not use the modal backend",
                                         p->workspace);
        if (!m->image || !m->image[0])
                return vs_error_set_kind(err, -EINVAL, "config_invalid",
                                         "sandbox.modal.image is required with backend = \"modal\"");
        if (!backend_modal_name_ok(m->app))
                return vs_error_set_kind(err, -EINVAL, "config_invalid",
                                         "sandbox.modal.app \"%s\" is not a Modal App name (1-64 of letters, digits, '.', '_', '-')",
                                         m->app ? m->app : "");
        bool volume = m->sync && streq(m->sync, "volume");
        if (volume && !backend_modal_name_ok(m->volume))
                return vs_error_set_kind(err, -EINVAL, "config_invalid",
                                         "sandbox.modal.volume \"%s\" is not a Modal Volume name (1-64 of letters, digits, '.', '_', '-')",
                                         m->volume ? m->volume : "");
        if (!volume && !env->manifest_path)
                return vs_error_set_kind(err, -EINVAL, "internal", "sync = \"upload\" needs a manifest");

        if ((r = strv_extend(&a, env->node)) < 0 || (r = strv_extend(&a, env->bridge)) < 0 ||
            (r = strv_extendf(&a, "--app=%s", m->app)) < 0 || (r = strv_extendf(&a, "--image=%s", m->image)) < 0 ||
            (r = strv_extendf(&a, "--timeout=%llu", (unsigned long long)m->timeout_s)) < 0)
                return r;
        if (m->region && (r = strv_extendf(&a, "--region=%s", m->region)) < 0)
                return r;
        if (m->cpu > 0 && (r = strv_extendf(&a, "--cpu=%g", m->cpu)) < 0)
                return r;
        if (m->memory_mib > 0 && (r = strv_extendf(&a, "--memory=%llu", (unsigned long long)m->memory_mib)) < 0)
                return r;
        /* Under lockdown p->network is already false: outbound blocked. */
        if ((r = strv_extendf(&a, "--network=%s", p->network ? "on" : "off")) < 0 ||
            (r = strv_extendf(&a, "--gpu=%s", p->no_gpu ? "off" : "on")) < 0 ||
            (r = strv_extendf(&a, "--workspace=%s", p->workspace)) < 0 ||
            (r = strv_extendf(&a, "--worker=%s", env->worker_path)) < 0)
                return r;
        if ((r = strv_extendf(&a, "--sync=%s", volume ? "volume" : "upload")) < 0)
                return r;
        if (volume)
                r = strv_extendf(&a, "--volume=%s", m->volume);
        else
                r = strv_extendf(&a, "--manifest=%s", env->manifest_path);
        if (r < 0)
                return r;
        *ret_argv = TAKE_PTR(a);
        return 0;
}

int backend_modal_summary(const VsPolicy *p, const VsModalManifest *mf, char ***ret) {
        const VsModalConfig *m = backend_config(p, &backend_modal_def);
        if (!m)
                return -EINVAL;
        _cleanup_strv_free_ char **l = NULL;
        int r;
        char cpu[32] = "Modal's default", mem[32] = "Modal's default";
        if (m->cpu > 0)
                snprintf(cpu, sizeof cpu, "%g", m->cpu);
        if (m->memory_mib > 0)
                snprintf(mem, sizeof mem, "%llu MiB", (unsigned long long)m->memory_mib);
        if ((r = strv_extendf(&l, "modal backend: a Modal Sandbox in app \"%s\" from registry image \"%s\"", m->app,
                              m->image)) < 0 ||
            (r = strv_extendf(&l, "sandbox: lifetime %llus, region %s, cpu %s, memory %s, gpu none, outbound network %s",
                              (unsigned long long)m->timeout_s, m->region ? m->region : "Modal's default", cpu, mem,
                              p->network ? "allowed" : "blocked")) < 0 ||
            (r = strv_extendf(&l, "worker: the static vectora-worker copied to " VS_MODAL_WORKER_PATH
                                  " and run with exec; its stdin/stdout joined to the bridge's")) < 0)
                return r;
        if (m->sync && streq(m->sync, "volume"))
                r = strv_extendf(&l, "files: Modal Volume \"%s\" mounted at %s; nothing uploaded", m->volume,
                                 p->workspace);
        else if (mf) {
                size_t files = 0, dirs = 0, links = 0;
                uint64_t bytes = 0;
                for (size_t i = 0; i < mf->n_entries; i++)
                        switch (mf->entries[i].kind) {
                        case VS_MODAL_FILE: files++, bytes += mf->entries[i].size; break;
                        case VS_MODAL_DIR: dirs++; break;
                        case VS_MODAL_SYMLINK: links++; break;
                        }
                r = strv_extendf(&l, "files: upload %zu file(s) (%llu bytes), %zu directorie(s), %zu symlink(s) from rw_paths/ro_paths at the same paths; masked paths are never uploaded",
                                 files, (unsigned long long)bytes, dirs, links);
                if (r >= 0 && mf->n_skipped > 0)
                        r = strv_extendf(&l, "files: %zu name(s) that are not UTF-8 are not uploaded", mf->n_skipped);
        }
        if (r >= 0)
                r = strv_extend(&l, "credentials: MODAL_TOKEN_ID/MODAL_TOKEN_SECRET from the daemon's environment or ~/.modal.toml; never passed to the Sandbox");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

static const char *kind_name(VsModalEntryKind k) {
        switch (k) {
        case VS_MODAL_DIR: return "dir";
        case VS_MODAL_SYMLINK: return "symlink";
        default: return "file";
        }
}

int backend_modal_manifest_encode(const VsModalManifest *m, StrBuf *out) {
        for (size_t i = 0; i < m->n_entries; i++)
                if (!utf8_valid(m->entries[i].path, strlen(m->entries[i].path)) ||
                    (m->entries[i].target && !utf8_valid(m->entries[i].target, strlen(m->entries[i].target))))
                        return -EILSEQ;
        for (int pass = 0; pass < 3; pass++) {
                char *const *l = pass == 0 ? m->rw_roots : pass == 1 ? m->ro_roots : m->protected_paths;
                for (char *const *s = l; s && *s; s++)
                        if (!utf8_valid(*s, strlen(*s)))
                                return -EILSEQ;
        }
        json_t *o = json_object();
        json_t *entries = json_array();
        int r = o && entries ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < m->n_entries; i++) {
                const VsModalEntry *e = &m->entries[i];
                json_t *j = json_pack("{s:s, s:s, s:i}", "path", e->path, "kind", kind_name(e->kind), "mode",
                                      (int)(e->mode & 07777));
                if (j && e->kind == VS_MODAL_FILE && json_object_set_new(j, "size", json_integer((json_int_t)e->size)) < 0)
                        r = -ENOMEM;
                if (j && e->kind == VS_MODAL_SYMLINK &&
                    json_object_set_new(j, "target", json_string(e->target ? e->target : "")) < 0)
                        r = -ENOMEM;
                if (!j || json_array_append_new(entries, j) < 0)
                        r = -ENOMEM;
        }
        if (r >= 0 && (json_object_set_new(o, "version", json_integer(1)) < 0 ||
                       json_object_set_new(o, "rw_roots", json_strv(m->rw_roots)) < 0 ||
                       json_object_set_new(o, "ro_roots", json_strv(m->ro_roots)) < 0 ||
                       json_object_set_new(o, "protected", json_strv(m->protected_paths)) < 0 ||
                       json_object_set_new(o, "entries", entries) < 0))
                r = -ENOMEM;
        else if (r < 0)
                json_decref(entries);
        char *s = r >= 0 ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(o);
        if (r >= 0 && !s)
                r = -ENOMEM;
        if (r >= 0)
                r = strbuf_appends(out, s);
        if (r >= 0)
                r = strbuf_appendc(out, '\n');
        free(s);
        return r;
}

void backend_modal_entries_free(VsModalEntry *e, size_t n) {
        for (size_t i = 0; e && i < n; i++) {
                free(e[i].path);
                free(e[i].target);
        }
        free(e);
}

/* ---- [sandbox.modal] ----------------------------------------------------- */

#define CFG(c) ((VsModalConfig *)(c)->backend_config)

static int h_app(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->app, err);
}
static int h_image(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->image, err);
}
static int h_timeout(const KeyCtx *c, VsError **err) {
        return config_get_uint(c, 10, 24 * 3600, &CFG(c)->timeout_s, err);
}
static int h_region(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->region, err);
}
static int h_cpu(const KeyCtx *c, VsError **err) {
        const TomlValue *v = c->kv->value;
        double d = v->type == TOML_INTEGER ? (double)v->integer : v->floating;
        if (!(d >= 0.125 && d <= 64))
                return config_error(err, -ERANGE, v->line, v->col, "sandbox.modal.cpu must be between 0.125 and 64");
        CFG(c)->cpu = d;
        return 0;
}
static int h_memory(const KeyCtx *c, VsError **err) {
        return config_get_uint(c, 128, 1u << 20, &CFG(c)->memory_mib, err);
}
static int h_sync(const KeyCtx *c, VsError **err) {
        const TomlValue *v = c->kv->value;
        if (!streq(v->string.ptr, "upload") && !streq(v->string.ptr, "volume"))
                return config_error(err, -EINVAL, v->line, v->col,
                                    "sandbox.modal.sync must be \"upload\" or \"volume\", not \"%s\"", v->string.ptr);
        return config_get_string(c, false, &CFG(c)->sync, err);
}
static int h_volume(const KeyCtx *c, VsError **err) {
        return config_get_string(c, false, &CFG(c)->volume, err);
}

static const KeyDef modal_keys[] = {
        { "app", TOML_STRING, h_app },
        { "image", TOML_STRING, h_image },
        { "timeout", TOML_INTEGER, h_timeout },
        { "region", TOML_STRING, h_region },
        { "cpu", TOML_FLOAT, h_cpu },
        { "memory", TOML_INTEGER, h_memory },
        { "sync", TOML_STRING, h_sync },
        { "volume", TOML_STRING, h_volume },
};

static int config_init(void *cfg) {
        VsModalConfig *m = cfg;
        m->timeout_s = 3600;
        m->app = strdup("vectora-sandbox");
        m->sync = strdup("upload");
        return m->app && m->sync ? 0 : -ENOMEM;
}

static void config_done(void *cfg) {
        VsModalConfig *m = cfg;
        free(m->app);
        free(m->image);
        free(m->region);
        free(m->sync);
        free(m->volume);
}

static int config_check(const void *cfg, unsigned line, unsigned col, VsError **err) {
        const VsModalConfig *m = cfg;
        if (!m->image)
                return config_error(err, -EINVAL, line, col,
                                    "sandbox: backend = \"modal\" needs sandbox.modal.image (a registry image name)");
        if (m->sync && streq(m->sync, "volume") && !m->volume)
                return config_error(err, -EINVAL, line, col, "sandbox.modal: sync = \"volume\" needs volume = \"NAME\"");
        return 0;
}

static char *config_describe(const void *cfg) {
        const VsModalConfig *m = cfg;
        char *s = NULL;
        return asprintf(&s, "app=%s image=%s timeout=%llus region=%s sync=%s%s%s", m->app, m->image,
                        (unsigned long long)m->timeout_s, m->region ? m->region : "(default)", m->sync,
                        m->volume ? " volume=" : "", m->volume ? m->volume : "") < 0
                       ? NULL
                       : s;
}

static json_t *config_json(const void *cfg) {
        const VsModalConfig *m = cfg;
        return json_pack("{s:s?, s:s?, s:I, s:s?, s:f, s:I, s:s?, s:s?}", "app", m->app, "image", m->image, "timeout",
                         (json_int_t)m->timeout_s, "region", m->region, "cpu", m->cpu, "memory",
                         (json_int_t)m->memory_mib, "sync", m->sync, "volume", m->volume);
}

const VsBackendDef backend_modal_def = {
        .name = "modal",
        .config_size = sizeof(VsModalConfig),
        .keys = modal_keys,
        .n_keys = ELEMENTSOF(modal_keys),
        .config_init = config_init,
        .config_done = config_done,
        .config_check = config_check,
        .config_describe = config_describe,
        .config_json = config_json,
};
