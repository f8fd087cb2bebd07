/* SPDX-License-Identifier: MIT */
/* A git config reader that runs no git (git-config.h). */
#include "git-config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

typedef struct Reader {
        const char *p, *end;
        unsigned line;
} Reader;

/* One character, "\r\n" read as "\n"; -1 at the end. */
static int next(Reader *r) {
        if (r->p >= r->end)
                return -1;
        int c = (unsigned char)*r->p++;
        if (c == '\r' && r->p < r->end && *r->p == '\n')
                c = (unsigned char)*r->p++;
        if (c == '\n')
                r->line++;
        return c;
}

/* git's own isspace() (sane_ctype): not \v or \f, unlike the C library's. */
static bool git_space(int c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool name_char(int c) {
        return c >= 0 && c < 128 && (isalnum(c) || c == '-');
}

/* To the end of the line (a comment). */
static void skip_line(Reader *r) {
        int c;
        while ((c = next(r)) >= 0 && c != '\n')
                ;
}

/* git's parse_value(): up to the end of the line (or a comment outside
 * quotes); blanks outside quotes at either end dropped, kept between
 * words. */
static int parse_value(Reader *r, StrBuf *v) {
        bool quote = false, comment = false;
        size_t space = 0;
        for (;;) {
                int c = next(r);
                if (c < 0 || c == '\n') {
                        if (quote)
                                return -EINVAL;
                        return 0;
                }
                if (comment)
                        continue;
                if (git_space(c) && !quote) {
                        if (v->len)
                                space++;
                        continue;
                }
                if (!quote && (c == ';' || c == '#')) {
                        comment = true;
                        continue;
                }
                for (; space; space--)
                        if (strbuf_append(v, " ", 1) < 0)
                                return -ENOMEM;
                if (c == '\\') {
                        c = next(r);
                        switch (c) {
                        case '\n':
                                continue;
                        case 't':
                                c = '\t';
                                break;
                        case 'b':
                                c = '\b';
                                break;
                        case 'n':
                                c = '\n';
                                break;
                        case '\\':
                        case '"':
                                break;
                        default:
                                return -EINVAL;
                        }
                } else if (c == '"') {
                        quote = !quote;
                        continue;
                }
                char ch = (char)c;
                if (c == 0 || strbuf_append(v, &ch, 1) < 0)
                        return c == 0 ? -EINVAL : -ENOMEM;
        }
}

/* After '[': "name]", "name.sub]" (the old form, lower-cased whole) or
 * "name \"sub\"]" (the subsection as written, \x standing for x). */
static int parse_section(Reader *r, StrBuf *sec) {
        strbuf_clear(sec);
        int c;
        for (;;) {
                c = next(r);
                if (c == ']')
                        return sec->len ? 0 : -EINVAL;
                if (c == '.' || name_char(c)) {
                        char ch = (char)tolower(c);
                        if (strbuf_append(sec, &ch, 1) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (c == ' ' || c == '\t')
                        break;
                return -EINVAL;
        }
        while ((c = next(r)) == ' ' || c == '\t')
                ;
        if (c != '"' || !sec->len)
                return -EINVAL;
        if (strbuf_append(sec, ".", 1) < 0)
                return -ENOMEM;
        for (;;) {
                c = next(r);
                if (c < 0 || c == '\n' || c == 0)
                        return -EINVAL;
                if (c == '"')
                        break;
                if (c == '\\') {
                        c = next(r);
                        if (c < 0 || c == '\n' || c == 0)
                                return -EINVAL;
                }
                char ch = (char)c;
                if (strbuf_append(sec, &ch, 1) < 0)
                        return -ENOMEM;
        }
        return next(r) == ']' ? 0 : -EINVAL;
}

int git_config_parse(const char *text, size_t len, GitConfigFn fn, void *ctx, unsigned *ret_line) {
        if (len > GIT_CONFIG_MAX_BYTES)
                return -EFBIG;
        Reader r = { .p = text, .end = text + len, .line = 1 };
        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
                r.p += 3;
        _cleanup_strbuf_ StrBuf sec = STRBUF_INIT, key = STRBUF_INIT, val = STRBUF_INIT;
        bool have_section = false;
        int ret = 0;
        size_t work = 0; /* the sections' bytes copied into keys */
        for (;;) {
                int c = next(&r);
                if (c < 0)
                        return 0;
                if (git_space(c))
                        continue;
                if (c == '#' || c == ';') {
                        skip_line(&r);
                        continue;
                }
                unsigned line = r.line;
                if (c == '[') {
                        if ((ret = parse_section(&r, &sec)) < 0)
                                goto bad;
                        have_section = true;
                        continue;
                }
                if (!isalpha(c) || c >= 128) {
                        ret = -EINVAL;
                        goto bad;
                }
                /* section.name = value; before any section git takes the
                 * bare name (no key it obeys looks like that). */
                strbuf_clear(&key);
                /* Each key repeats its section: a long one (a 512 KiB
                 * subsection) over many short keys made the parse
                 * quadratic, 3 s for a 1 MiB file (attack review 12). */
                if (have_section && (work += sec.len + 1) > GIT_CONFIG_MAX_KEY_BYTES) {
                        ret = -E2BIG;
                        goto bad;
                }
                if (have_section && (strbuf_append(&key, sec.data, sec.len) < 0 || strbuf_append(&key, ".", 1) < 0))
                        return -ENOMEM;
                for (; name_char(c); c = next(&r)) {
                        char ch = (char)tolower(c);
                        if (strbuf_append(&key, &ch, 1) < 0)
                                return -ENOMEM;
                }
                while (c == ' ' || c == '\t')
                        c = next(&r);
                strbuf_clear(&val);
                bool has_value = false;
                if (c == '=') {
                        has_value = true;
                        if ((ret = parse_value(&r, &val)) < 0)
                                goto bad;
                } else if (c == '#' || c == ';')
                        skip_line(&r);
                else if (c != '\n' && c >= 0) {
                        ret = -EINVAL;
                        goto bad;
                }
                if ((ret = fn(key.data, has_value ? (val.data ? val.data : "") : NULL, ctx)) < 0)
                        return ret;
                continue;
        bad:
                if ((ret == -EINVAL || ret == -E2BIG) && ret_line)
                        *ret_line = line;
                return ret;
        }
}

bool git_config_names_path(const char *key, bool *ret_dir, bool *ret_include) {
        *ret_dir = *ret_include = false;
        if (strcmp(key, "core.hookspath") == 0)
                return *ret_dir = true;
        if (strcmp(key, "core.attributesfile") == 0 || strcmp(key, "core.excludesfile") == 0)
                return true;
        if (strcmp(key, "include.path") == 0)
                return *ret_include = true;
        /* includeIf.<condition>.path: whatever the condition, it may hold. */
        size_t n = strlen(key);
        if (strncmp(key, "includeif.", 10) == 0 && n > 15 && strcmp(key + n - 5, ".path") == 0)
                return *ret_include = true;
        return false;
}

/* key matches "section.*.name" (any subsection) or "section.name". */
static bool key_is(const char *key, const char *section, const char *name) {
        size_t sl = strlen(section), nl = strlen(name), kl = strlen(key);
        if (kl <= sl + nl + 1 || strncmp(key, section, sl) != 0 || key[sl] != '.')
                return false;
        return strcmp(key + kl - nl, name) == 0 && key[kl - nl - 1] == '.';
}

bool git_config_names_program(const char *key) {
        static const char *const exact[] = {
                "core.fsmonitor",  "core.sshcommand", "core.pager",      "core.editor",        "core.askpass",
                "core.gitproxy",   "sequence.editor", "diff.external",   "credential.helper",  "gpg.program",
                "interactive.difffilter", "web.browser", "uploadpack.packobjectshook", "sendemail.sendmailcmd",
                "sendemail.smtpserver", "init.templatedir",
        };
        for (size_t i = 0; i < ELEMENTSOF(exact); i++)
                if (strcmp(key, exact[i]) == 0)
                        return true;
        static const struct {
                const char *section, *name;
        } any[] = {
                { "diff", "textconv" },   { "diff", "command" },     { "merge", "driver" },   { "filter", "clean" },
                { "filter", "smudge" },   { "filter", "process" },   { "credential", "helper" }, { "gpg", "program" },
                { "remote", "uploadpack" }, { "remote", "receivepack" }, { "difftool", "cmd" }, { "difftool", "path" },
                { "mergetool", "cmd" },   { "mergetool", "path" },   { "browser", "cmd" },    { "browser", "path" },
                { "man", "cmd" },         { "man", "path" },         { "submodule", "update" },
        };
        for (size_t i = 0; i < ELEMENTSOF(any); i++)
                if (key_is(key, any[i].section, any[i].name))
                        return true;
        /* pager.<command>, alias.<name> ("!command") */
        return strncmp(key, "pager.", 6) == 0 || strncmp(key, "alias.", 6) == 0;
}
