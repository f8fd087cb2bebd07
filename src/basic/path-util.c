/* SPDX-License-Identifier: MIT */
#include "path-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *path_join(const char *a, const char *b) {
        size_t la = strlen(a);
        while (la > 1 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        char *r = NULL;
        if (asprintf(&r, "%.*s%s%s", (int)la, a, (la == 1 && a[0] == '/') || !*b ? "" : "/", b) < 0)
                return NULL;
        return r;
}

char *path_normalize(const char *p) {
        if (!p || p[0] != '/')
                return NULL;
        size_t n = strlen(p);
        char *out = malloc(n + 2);
        if (!out)
                return NULL;
        size_t o = 0;
        out[o++] = '/';
        const char *s = p;
        while (*s) {
                while (*s == '/')
                        s++;
                if (!*s)
                        break;
                const char *e = strchr(s, '/');
                size_t len = e ? (size_t)(e - s) : strlen(s);
                if (len == 1 && s[0] == '.') {
                        /* skip */
                } else if (len == 2 && s[0] == '.' && s[1] == '.') {
                        /* Drop the last component and the slash before it
                         * ("/a/b" -> "/a"; "/a" -> "/"). */
                        while (o > 1 && out[o - 1] != '/')
                                o--;
                        if (o > 1)
                                o--;
                } else {
                        if (o > 1)
                                out[o++] = '/';
                        memcpy(out + o, s, len);
                        o += len;
                }
                s += len;
        }
        if (o > 1 && out[o - 1] == '/')
                o--;
        out[o] = 0;
        return out;
}

char *path_absolute_os(const char *p) {
        struct stat st;
        if (!p || stat(p, &st) < 0)
                return NULL;
        if (p[0] == '/')
                return path_normalize(p);
        _cleanup_free_ char *cwd = getcwd(NULL, 0), *j = cwd ? path_join(cwd, p) : NULL;
        return j ? path_normalize(j) : NULL;
}

const char *path_startswith(const char *path, const char *prefix) {
        if (streq(prefix, "/"))
                return path[0] == '/' ? path + 1 : NULL;
        size_t n = strlen(prefix);
        if (strncmp(path, prefix, n) != 0)
                return NULL;
        if (path[n] == 0)
                return path + n;
        if (path[n] == '/')
                return path + n + 1;
        return NULL;
}

bool path_is_below_or_equal(const char *path, const char *prefix) {
        return path_startswith(path, prefix) != NULL;
}

char *path_find_executable_os(const char *name, const char *path_env) {
        if (strchr(name, '/'))
                return access(name, X_OK) == 0 ? strdup(name) : NULL;
        char *all = NULL;
        if (asprintf(&all, "%s:/usr/bin:/bin:/usr/local/bin", path_env ? path_env : "") < 0)
                return NULL;
        char *save = NULL, *found = NULL;
        for (char *d = strtok_r(all, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
                if (d[0] != '/')
                        continue;
                char *f = path_join(d, name);
                if (f && access(f, X_OK) == 0)
                        found = f;
                else
                        free(f);
        }
        free(all);
        return found;
}

bool path_below_any(const char *path, char *const *list) {
        for (char *const *p = list; p && *p; p++)
                if (path_is_below_or_equal(path, *p))
                        return true;
        return false;
}

bool path_listed_writable(const char *path, char *const *rw, char *const *ro) {
        size_t best = 0;
        bool any = false, writable = false;
        for (size_t pass = 0; pass < 2; pass++)
                for (char *const *l = pass ? ro : rw; l && *l; l++) {
                        size_t n = strlen(*l);
                        if (path_is_below_or_equal(path, *l) && (!any || n >= best)) {
                                writable = pass == 0;
                                best = n;
                                any = true;
                        }
                }
        return any && writable;
}

bool path_jail_could_write(const char *path, char *const *rw, char *const *ro, char *const *sealed) {
        return !path_below_any(path, sealed) && path_listed_writable(path, rw, ro);
}
