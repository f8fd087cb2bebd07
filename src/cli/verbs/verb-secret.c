/* SPDX-License-Identifier: MIT */
/* secret set NAME [--host H]... [--header X-Api-Key]... | list | delete NAME: the caller's
 * host-held secrets (secret-store.h), through the daemon (secret_set,
 * secret_list, secret_delete) or, embedded, in the caller's own state
 * directory (approval_store_dir(), where approvals are kept too). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approval.h"
#include "cli.h"
#include "fd-util.h"
#include "link.h"
#include "secret-store.h"

static void value_freep(char **p) {
        if (*p)
                explicit_bzero(*p, strlen(*p));
        free(*p);
}

/* The value from --from-env, --from-file or stdin; a line read from a
 * file or a pipe loses one trailing newline (`echo TOKEN |`). */
static int read_value(const CliArgs *a, char **ret) {
        const char *env = a->val[OPT_FROM_ENV], *file = a->val[OPT_FROM_FILE];
        if (env && file)
                return cli_fail(EXIT_USAGE, "secret set: give --from-env or --from-file, not both");
        if (env) {
                const char *v = getenv(env);
                if (!v || !*v)
                        return cli_fail(EXIT_USAGE, "secret set: environment variable %s is not set or empty", env);
                if (!(*ret = strdup(v)))
                        return cli_fail(EXIT_REFUSED, "out of memory");
                return 0;
        }
        _cleanup_close_ int fd = file ? open(file, O_RDONLY | O_CLOEXEC) : -EBADF;
        if (file && fd < 0)
                return cli_fail(EXIT_USAGE, "secret set: cannot open %s: %m", file);
        if (!file && isatty(STDIN_FILENO))
                fprintf(stderr, "secret value (then Ctrl-D): ");
        char *v = NULL;
        size_t n = 0;
        int r = read_fd_all(file ? fd : STDIN_FILENO, SECRET_VALUE_MAX + 2, &v, &n);
        if (r < 0)
                return cli_fail(EXIT_USAGE, "secret set: cannot read the value (at most %d bytes): %s", SECRET_VALUE_MAX,
                                strerror(-r));
        if (n && v[n - 1] == '\n')
                v[--n] = 0;
        if (n && v[n - 1] == '\r')
                v[--n] = 0;
        if (strlen(v) != n) {
                explicit_bzero(v, n);
                free(v);
                return cli_fail(EXIT_USAGE, "secret set: the value holds a NUL byte");
        }
        *ret = v;
        return 0;
}

static int print_list(const CliArgs *a, json_t *o) {
        if (a->json) {
                cli_print_json(o);
                return 0;
        }
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(o, "secrets"), i, s) {
                printf("%s", json_string_value(json_object_get(s, "name")));
                size_t k;
                json_t *h;
                json_array_foreach(json_object_get(s, "hosts"), k, h) printf("%s%s", k ? ", " : "  ", json_string_value(h));
                json_array_foreach(json_object_get(s, "headers"), k, h)
                        printf("%s%s", k ? ", " : "  headers: ", json_string_value(h));
                printf("\n");
        }
        return 0;
}

static int print_done(const CliArgs *a, json_t *o, const char *what) {
        if (a->json)
                cli_print_json(o);
        else
                printf("secret %s %s\n", json_string_value(json_object_get(o, "name")), what);
        return 0;
}

static int embedded(const CliArgs *a, const char *sub, const char *name, const char *value) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *store = NULL;
        _cleanup_(secret_store_done) VsSecretStore s = {};
        int r = approval_store_dir(NULL, &store, &err);
        if (r >= 0 && streq(sub, "set"))
                r = secret_store_set(store, geteuid(), name, a->hosts, a->headers, value, strlen(value), &err);
        else if (r >= 0 && streq(sub, "delete"))
                r = secret_store_delete(store, geteuid(), name, &err);
        else if (r >= 0)
                r = secret_store_load(store, geteuid(), &s, &err);
        if (r < 0)
                return cli_fail_code(a, EXIT_REFUSED, vs_error_kind(err) ?: "bad_request", "secret %s: %s", sub,
                                     vs_error_message(err) ?: strerror(-r));
        _cleanup_(json_decrefp) json_t *o = streq(sub, "list") ? secret_store_list_json(&s) : json_pack("{s:s}", "name", name);
        if (!o || json_object_set_new(o, "ok", json_true()) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        return streq(sub, "list") ? print_list(a, o) : print_done(a, o, streq(sub, "set") ? "stored" : "deleted");
}

int verb_secret(const CliArgs *a) {
        const char *sub = a->pos[0], *name = a->n_pos > 1 ? a->pos[1] : NULL;
        bool set = streq(sub, "set"), del = streq(sub, "delete"), list = streq(sub, "list");
        if (!set && !del && !list)
                return cli_fail(EXIT_USAGE, "secret: unknown action '%s' (set NAME, list, delete NAME)", sub);
        if ((set || del) && !name)
                return cli_fail(EXIT_USAGE, "secret %s: missing NAME", sub);
        if (list && name)
                return cli_fail(EXIT_USAGE, "secret list takes no NAME");
        if (!set && (a->hosts || a->headers || a->val[OPT_FROM_ENV] || a->val[OPT_FROM_FILE]))
                return cli_fail(EXIT_USAGE, "secret %s: --host, --header, --from-env and --from-file belong to secret set",
                                sub);
        if (set && !secret_name_valid(name))
                return cli_fail(EXIT_USAGE, "secret set: NAME must match [A-Z_][A-Z0-9_]* (at most %d characters), not '%s'",
                                SECRET_NAME_MAX, name);
        if (set && !a->hosts)
                return cli_fail(EXIT_USAGE, "secret set: name at least one --host the secret may be sent to");
        _cleanup_(value_freep) char *value = NULL;
        int r;
        if (set && (r = read_value(a, &value)) != 0)
                return r;
        _cleanup_(cli_link_freep) CliLink *l = NULL;
        if (cli_link_new(a, &l) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        if (!cli_link_daemon(l))
                return embedded(a, sub, name, value);
        json_t *req = set    ? json_pack("{s:s,s:s,s:o,s:o,s:s}", "tool", "secret_set", "name", name, "hosts", json_array(),
                                         "headers", json_array(), "value", value)
                      : del  ? json_pack("{s:s,s:s}", "tool", "secret_delete", "name", name)
                             : json_pack("{s:s}", "tool", "secret_list");
        for (char **h = a->hosts; set && req && *h; h++)
                json_array_append_new(json_object_get(req, "hosts"), json_string(*h));
        for (char **h = a->headers; set && req && h && *h; h++)
                json_array_append_new(json_object_get(req, "headers"), json_string(*h));
        JsonlMsg m = JSONL_MSG_INIT;
        if (!req || cli_link_call(l, req, NULL, 0, &m) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        r = !json_is_true(json_object_get(m.obj, "ok")) ? cli_print_error(a, m.obj)
            : list                                       ? print_list(a, m.obj)
                                                         : print_done(a, m.obj, set ? "stored" : "deleted");
        jsonl_msg_done(&m);
        return r;
}
