/* SPDX-License-Identifier: MIT */
/* How the CLI speaks: error lines, exit statuses for API error codes, JSON
 * on stdout, colour only where a person reads it. */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>


#include "base64.h"
#include "cli.h"
#include "utf8.h"

const char *cli_color(FILE *f, const char *sgr) {
        /* https://no-color.org: present and not empty disables colour. */
        const char *nc = getenv("NO_COLOR");
        const char *term = getenv("TERM");
        if ((nc && *nc) || (term && streq(term, "dumb")) || !isatty(fileno(f)))
                return "";
        return sgr;
}

#define RED "\033[1;31m"
#define YELLOW "\033[33m"
#define RESET "\033[0m"

/* An error line quotes what a workspace's files say (a vectora.toml the
 * agent wrote): a control byte in it would reach the host user's terminal
 * (escape sequences). Each is shown as \xNN instead; one line. */
_printf_(1, 0) static void vfail(const char *fmt, va_list ap) {
        char msg[4096];
        vsnprintf(msg, sizeof msg, fmt, ap);
        const char *on = cli_color(stderr, RED);
        fprintf(stderr, "%svectora-sandbox:%s ", on, *on ? RESET : "");
        for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
                if (*p < 0x20 || *p == 0x7f)
                        fprintf(stderr, "\\x%02x", *p);
                else
                        fputc(*p, stderr);
        }
        fputc('\n', stderr);
}

int cli_fail(int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vfail(fmt, ap);
        va_end(ap);
        return code;
}

int cli_fail_code(const CliArgs *a, int exit, const char *code, const char *fmt, ...) {
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (a && a->json) {
                json_t *o = json_pack("{s:b,s:{s:s,s:s}}", "ok", 0, "error", "code", code, "message", msg);
                if (o)
                        cli_print_json(o);
                json_decref(o);
        }
        return cli_fail(exit, "%s", msg);
}

int cli_exit_for_code(const char *code) {
        /* The tool ran in a working sandbox and failed on its own terms:
         * the same status a shell tool gives for it. Anything else means
         * the sandbox layer refused or failed, and nothing ran. */
        static const ApiError tool_errors[] = {
                API_ERROR_NOT_FOUND, API_ERROR_EXISTS, API_ERROR_PRECONDITION_FAILED, API_ERROR_TOO_LARGE,
                API_ERROR_IO, API_ERROR_EDIT_NOT_FOUND, API_ERROR_EDIT_NOT_UNIQUE, API_ERROR_CONFLICT,
                API_ERROR_CANCELLED,
        };
        /* The CLI's own: read's file changed between its pages. */
        if (streq_ptr(code, "changed"))
                return EXIT_TOOL;
        /* The daemon ended after the request was sent, or stopped while
         * it ran: it may have run. */
        if (streq_ptr(code, "daemon_lost") || streq_ptr(code, "interrupted"))
                return EXIT_LOST;
        ApiError e = api_error_from_name(code);
        for (size_t i = 0; e >= 0 && i < ELEMENTSOF(tool_errors); i++)
                if (e == tool_errors[i])
                        return EXIT_TOOL;
        return EXIT_REFUSED;
}

void cli_print_json(json_t *obj) {
        json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        fputc('\n', stdout);
        fflush(stdout);
}

/* How the CLI's own words differ from the API's in a message. */
static const char *const api_words[][2] = {
        { "replace_all", "--all" },
        { "create_parents", "creating parents (drop --no-parents)" },
};

int cli_print_error(const CliArgs *a, json_t *result) {
        json_t *e = json_object_get(result, "error");
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        if (a->json)
                cli_print_json(result);
        _cleanup_free_ char *m = strdup(msg ? msg : "failed");
        for (size_t i = 0; m && i < ELEMENTSOF(api_words); i++) {
                char *hit = strstr(m, api_words[i][0]);
                if (!hit)
                        continue;
                char *n = NULL;
                if (asprintf(&n, "%.*s%s%s", (int)(hit - m), m, api_words[i][1], hit + strlen(api_words[i][0])) < 0)
                        break;
                free(m);
                m = n;
        }
        return cli_fail(cli_exit_for_code(code), "%s: %s: %s", a->verb->name, code ? code : "error", m ? m : "failed");
}

void cli_warn_degraded(json_t *result) {
        size_t i;
        json_t *v;
        const char *on = cli_color(stderr, YELLOW);
        json_array_foreach(json_object_get(json_object_get(result, "sandbox"), "degraded"), i, v)
                fprintf(stderr, "vectora-sandbox: %swarning:%s running degraded: %s\n", on, *on ? RESET : "",
                        json_string_value(v));
        const char *pending = json_string_value(json_object_get(result, "policy_pending"));
        if (pending)
                cli_warn_pending(pending);
}

void cli_warn_pending(const char *pending) {
        const char *on = cli_color(stderr, YELLOW);
        fprintf(stderr, "vectora-sandbox: %swarning:%s %s\n", on, *on ? RESET : "", pending);
}

void cli_set_bytes(json_t *o, const char *key, const char *p, size_t n) {
        if (utf8_valid(p ? p : "", n)) {
                json_object_set_new(o, key, json_stringn(p ? p : "", n));
                return;
        }
        char k[64];
        snprintf(k, sizeof k, "%s_base64", key);
        size_t len = 0;
        _cleanup_free_ char *b = base64_encode_alloc(p, n, &len);
        if (b)
                json_object_set_new(o, k, json_stringn(b, len));
}
