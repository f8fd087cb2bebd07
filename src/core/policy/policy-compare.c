/* SPDX-License-Identifier: MIT */
#include "policy-compare.h"

#include <string.h>

#include "path-util.h"
#include "policy-json.h"
#include "strv.h"

/* The path as the jail would see it: resolved, else (a missing path, or
 * one not resolved yet) written, made absolute against the workspace. */
static char *path_of(const char *workspace, const VsPath *p) {
        if (p->resolved)
                return strdup(p->resolved);
        if (p->written[0] == '/')
                return path_normalize(p->written);
        if (p->written[0] == '~')
                return strdup(p->written);
        _cleanup_free_ char *j = path_join(workspace, p->written);
        return j ? path_normalize(j) : NULL;
}

/* p lies at or below one of the listed paths. */
static bool covered(const char *a, const char *lws, const VsPath *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *b = path_of(lws, &l[i]);
                if (b && (a[0] == '/' && b[0] == '/' ? path_is_below_or_equal(a, b) : streq(a, b)))
                        return true;
        }
        return false;
}

static int paths_loosen(char ***out, const char *key, const char *ws, const VsPath *l, size_t n, const char *aws,
                        const VsPath *a1, size_t n1, const VsPath *a2, size_t n2, const char *what) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *a = path_of(ws, &l[i]);
                if (!a)
                        return -ENOMEM;
                if (!covered(a, aws, a1, n1) && !covered(a, aws, a2, n2)) {
                        int r = strv_extendf(out, "%s: %s is new (%s)", key, a, what);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int flag_loosens(char ***out, const char *key, bool approved, bool proposed, bool tight) {
        if (approved == tight && proposed != tight)
                return strv_extendf(out, "%s: %s -> %s", key, approved ? "true" : "false", proposed ? "true" : "false");
        return 0;
}

static int limit_loosens(char ***out, const char *key, uint64_t approved, uint64_t proposed) {
        if (proposed > approved)
                return strv_extendf(out, "limits.%s: %llu -> %llu (raised)", key, (unsigned long long)approved,
                                    (unsigned long long)proposed);
        return 0;
}

/* Keys of policy_to_json() ordered above; any other key that changes is a
 * loosening. */
static const char *const ordered_keys[] = {
        "workspace", "config", "sandboxed", "reason", "backend", "rw_paths", "ro_paths",
        "mask", "protected", "protect", "git_init", "persistent_home", "no_gpu", "lockdown", "network", "idle_timeout", "limits", "ports",
        "secrets", "http",
};

/* A host port forwarded that was not, or to another port of the jail. */
static int ports_loosen(char ***out, const VsPolicy *a, const VsPolicy *p) {
        for (size_t i = 0; i < p->n_ports; i++) {
                bool same = false;
                for (size_t j = 0; j < a->n_ports && !same; j++)
                        same = a->ports[j].host == p->ports[i].host && a->ports[j].jail == p->ports[i].jail;
                int r = same ? 0
                             : strv_extendf(out, "ports: 127.0.0.1:%u on the host is forwarded to the jail's port %u",
                                            p->ports[i].host, p->ports[i].jail);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* [[sandbox.http]]: a host's entry removed frees its requests; an
 * entry added only refuses more. Within an entry, only removing allow
 * entries tightens: any other change (one added, a glob widened or
 * rewritten) is a loosening, since comparing globs is not attempted. */
static int http_loosen(char ***out, const VsPolicy *a, const VsPolicy *p) {
        for (size_t i = 0; i < a->n_http; i++) {
                const VsHttpRule *was = &a->http[i], *now = NULL;
                for (size_t j = 0; j < p->n_http && !now; j++)
                        if (streq(p->http[j].host, was->host))
                                now = &p->http[j];
                int r = 0;
                if (!now)
                        r = strv_extendf(out, "http: the rules for %s are removed (any request to it passes)", was->host);
                for (size_t k = 0; now && r >= 0 && k < now->n_allow; k++)
                        if (!strv_contains(was->allow, now->allow[k]))
                                r = strv_extendf(out, "http: %s allows \"%s\"", now->host, now->allow[k]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool is_ordered(const char *k) {
        for (size_t i = 0; i < ELEMENTSOF(ordered_keys); i++)
                if (streq(k, ordered_keys[i]))
                        return true;
        return false;
}

static int others_loosen(char ***out, const VsPolicy *a, const VsPolicy *p) {
        json_t *ja = policy_to_json(a), *jp = policy_to_json(p);
        int r = ja && jp ? 0 : -ENOMEM;
        const char *k;
        json_t *v;
        if (r == 0)
                json_object_foreach(jp, k, v) if (!is_ordered(k) && !json_equal(v, json_object_get(ja, k)) &&
                                                  (r = strv_extendf(out, "%s: changed", k)) < 0) break;
        if (r == 0)
                json_object_foreach(ja, k, v) if (!is_ordered(k) && !json_object_get(jp, k) &&
                                                  (r = strv_extendf(out, "%s: removed", k)) < 0) break;
        json_decref(ja);
        json_decref(jp);
        return r;
}

/* A protect glob dropped is no loosening where a glob kept covers it: the
 * default list once named .vscode/tasks.json and now seals .vscode whole
 * (protect-defaults.c), so an approved policy with the old list is not
 * reported as losing an entry. Literal globs only: "**" "/D" or a
 * slash-less "D" covers any path with a component D; an anchored "a/D"
 * what is anchored at or below it. */
static bool protect_covered(char *const *kept, const char *g) {
        if (strv_contains(kept, g))
                return true;
        bool g_any = strncmp(g, "**/", 3) == 0 || !strchr(g, '/');
        const char *gl = strncmp(g, "**/", 3) == 0 ? g + 3 : g;
        for (char *const *h = kept; h && *h; h++) {
                const char *hl = strncmp(*h, "**/", 3) == 0 ? *h + 3 : *h;
                if (strpbrk(hl, "*?[\\"))
                        continue;
                bool h_any = strncmp(*h, "**/", 3) == 0 || !strchr(*h, '/');
                size_t n = strlen(hl);
                if (h_any) {
                        /* D itself, or a path with a component D. */
                        for (const char *c = gl; c; c = strchr(c, '/')) {
                                if (*c == '/')
                                        c++;
                                if (strncmp(c, hl, n) == 0 && (c[n] == '/' || c[n] == '\0'))
                                        return true;
                        }
                } else if (!g_any && strncmp(gl, hl, n) == 0 && (gl[n] == '/' || gl[n] == '\0'))
                        return true;
        }
        return false;
}

int policy_loosenings(const VsPolicy *a, const VsPolicy *p, char ***ret) {
        _cleanup_strv_free_ char **out = calloc(1, sizeof(char *)), **pa = NULL, **pp = NULL, **gone = NULL,
                                **unprotected = NULL;
        if (!out)
                return -ENOMEM;
        int r = 0;
        if (!a->sandboxed)
                goto done; /* from nothing, any sandbox is a tightening */
        if (!p->sandboxed) {
                r = strv_extendf(&out, "the sandbox is switched off (%s)",
                                 p->unsandboxed_reason ? p->unsandboxed_reason : "no [sandbox] table");
                goto done;
        }
        if (a->backend != p->backend &&
            (r = strv_extendf(&out, "backend: %s -> %s", vs_backend_name(a->backend), vs_backend_name(p->backend))) < 0)
                return r;
        /* Writable only where it was; readable only where it was readable. */
        if ((r = paths_loosen(&out, "rw_paths", p->workspace, p->rw_paths, p->n_rw, a->workspace, a->rw_paths, a->n_rw,
                              NULL, 0, "writable")) < 0 ||
            (r = paths_loosen(&out, "ro_paths", p->workspace, p->ro_paths, p->n_ro, a->workspace, a->rw_paths, a->n_rw,
                              a->ro_paths, a->n_ro, "readable")) < 0)
                return r;
        if ((r = strv_difference(a->mask, p->mask, &gone)) < 0)
                return r;
        for (char **m = gone; *m; m++)
                if ((r = strv_extendf(&out, "mask: \"%s\" is removed", *m)) < 0)
                        return r;
        if ((r = config_protected_paths(a, &pa)) < 0 || (r = config_protected_paths(p, &pp)) < 0 ||
            (r = strv_difference(pa, pp, &unprotected)) < 0)
                return r;
        for (char **s = unprotected; *s; s++)
                if ((r = strv_extendf(&out, "protected: %s is no longer read-only", *s)) < 0)
                        return r;
        for (char **g = a->protect; g && *g; g++)
                if (!protect_covered(p->protect, *g) &&
                    (r = strv_extendf(&out, "protect: \"%s\" is removed (no longer read-only)", *g)) < 0)
                        return r;
        /* A kept home carries what one session leaves to the next. */
        if ((r = flag_loosens(&out, "git_init", a->git_init, p->git_init, false)) < 0 ||
            (r = flag_loosens(&out, "persistent_home", a->persistent_home, p->persistent_home, false)) < 0)
                return r;
        if ((r = flag_loosens(&out, "no_gpu", a->no_gpu, p->no_gpu, true)) < 0 ||
            (r = flag_loosens(&out, "lockdown", a->lockdown, p->lockdown, true)) < 0 ||
            (r = flag_loosens(&out, "network", a->network, p->network, false)) < 0)
                return r;
        if ((r = limit_loosens(&out, "timeout", a->limits.timeout_s, p->limits.timeout_s)) < 0 ||
            (r = limit_loosens(&out, "max_output", a->limits.max_output, p->limits.max_output)) < 0 ||
            (r = limit_loosens(&out, "pids", a->limits.pids, p->limits.pids)) < 0 ||
            (r = limit_loosens(&out, "memory", a->limits.memory, p->limits.memory)) < 0)
                return r;
        /* 0 is "none": setting one tightens, removing one loosens. */
        if (a->limits.background_timeout_s &&
            (!p->limits.background_timeout_s || p->limits.background_timeout_s > a->limits.background_timeout_s) &&
            (r = strv_extendf(&out, "limits.background_timeout: %llu -> %s (raised)",
                              (unsigned long long)a->limits.background_timeout_s,
                              p->limits.background_timeout_s ? "more" : "none")) < 0)
                return r;
        if ((r = ports_loosen(&out, a, p)) < 0)
                return r;
        /* A secret the jail may now have sent to its hosts. */
        for (size_t i = 0; i < p->n_secrets; i++) {
                bool had = false;
                for (size_t j = 0; j < a->n_secrets && !had; j++)
                        had = streq(a->secrets[j].name, p->secrets[i].name);
                if (!had && (r = strv_extendf(&out, "secrets: %s is used (its value goes out in requests to its hosts)",
                                              p->secrets[i].name)) < 0)
                        return r;
        }
        if ((r = http_loosen(&out, a, p)) < 0)
                return r;
        r = others_loosen(&out, a, p);
done:
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        return 0;
}
