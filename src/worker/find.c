/* SPDX-License-Identifier: MIT */
/* glob and grep (docs/protocol.md): a walk below a directory that
 * resolve.c gave, as the file tools see the workspace. Every entry's
 * absolute path is checked against the masks before it is used (a masked
 * file is never opened, a masked directory never entered, neither is
 * listed); protected paths are read like any. Nothing is followed: the walk
 * opens each directory with O_NOFOLLOW relative to its parent's descriptor,
 * a symlink is listed by glob and skipped by grep. .git directories are not
 * entered (their objects are not the agent's text). Every limit ends the
 * walk early and the reply says which. It runs on the worker's one thread:
 * the deadline bounds how long other requests wait. */
#include <dirent.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "time-util.h"
#include "utf8.h"
#include "worker.h"

#define GLOB_DEFAULT_RESULTS 500u
#define GLOB_DEFAULT_ENTRIES 200000u
#define GREP_DEFAULT_RESULTS 200u
#define GREP_DEFAULT_FILES 20000u
#define GREP_DEFAULT_BYTES (256u * 1024u * 1024u)
#define FIND_DEFAULT_DEADLINE_MS 10000u
#define FIND_MAX_DEADLINE_MS 60000u
#define FIND_MAX_CONTEXT 10u
/* What the results may take of the reply's one line (JSONL_MAX_LINE). */
#define FIND_REPLY_BUDGET (768u * 1024u)
/* A line's bytes shown: a minified file's one line is not text to read. */
#define GREP_LINE_MAX 400u
/* Larger files are skipped (counted): a log or a dump, not source. */
#define GREP_FILE_MAX (16u * 1024u * 1024u)
/* A NUL in the first bytes: binary, skipped as grep -I does. */
#define GREP_BINARY_PROBE 8192u
#define FIND_MAX_DEPTH 128u

typedef struct Find {
        const Policy *p;
        ProtocolFindRequest req;
        char *base;        /* the walked directory, absolute */
        VsGlob *glob;      /* glob: the pattern; grep: the filter, or NULL */
        regex_t re;
        bool has_re;
        uint64_t deadline_ms;
        json_t *results;
        uint64_t files, matches, files_matched, skipped, bytes, reply;
        const char *limit;
} Find;

static void find_done(Find *f) {
        free(f->base);
        glob_free(f->glob);
        if (f->has_re)
                regfree(&f->re);
        json_decref(f->results);
}

/* What s costs in the reply, JSON-escaped. */
static uint64_t json_cost(const char *s, size_t n) {
        uint64_t c = n + 2;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x20)
                        c += 5;
                else if (s[i] == '"' || s[i] == '\\')
                        c += 1;
        return c;
}

static int add_result(Find *f, const char *rel, json_t *item, uint64_t cost) {
        if (!item)
                return -ENOMEM;
        f->reply += json_cost(rel, strlen(rel)) + cost;
        if (f->reply > FIND_REPLY_BUDGET) {
                json_decref(item);
                f->limit = "reply_size";
                return 0;
        }
        return json_array_append_new(f->results, item) < 0 ? -ENOMEM : 0;
}

static bool timed_out(Find *f) {
        if (!f->limit && now_ms() >= f->deadline_ms)
                f->limit = "deadline";
        return f->limit != NULL;
}

/* ---- grep ---- */

/* p[0..n) as text a JSON string can carry: cut to GREP_LINE_MAX bytes at a
 * character, invalid UTF-8 as U+FFFD. */
static int line_text(const char *p, size_t n, StrBuf *out) {
        if (n && p[n - 1] == '\r')
                n--;
        bool cut = n > GREP_LINE_MAX;
        if (cut) {
                n = GREP_LINE_MAX;
                while (n > 0 && utf8_is_continuation(p[n]))
                        n--;
        }
        for (size_t i = 0, len; i < n; i += len) {
                int r = utf8_next(p + i, n - i, &len) >= 0 && p[i] ? strbuf_append(out, p + i, len)
                                                                   : (len = 1, strbuf_appends(out, "\xef\xbf\xbd"));
                if (r < 0)
                        return r;
        }
        return cut ? strbuf_appends(out, " [...]") : 0;
}

static int emit_line(Find *f, const char *rel, uint64_t line, const char *p, size_t n, bool match) {
        _cleanup_strbuf_ StrBuf t = STRBUF_INIT;
        if (line_text(p, n, &t) < 0)
                return -ENOMEM;
        json_t *item = json_pack("{s:s,s:I,s:s%,s:b}", "path", rel, "line", (json_int_t)line, "text", t.data ? t.data : "",
                                 t.len, "match", match);
        return add_result(f, rel, item, json_cost(t.data ? t.data : "", t.len) + 48);
}

static bool line_matches(Find *f, char *p, size_t n) {
        if (!f->req.fixed)
                return regexec(&f->re, p, 0, NULL, 0) == 0; /* p[n] is NUL */
        size_t m = strlen(f->req.pattern);
        for (size_t i = 0; i + m <= n; i++)
                if (f->req.ignore_case ? strncasecmp(p + i, f->req.pattern, m) == 0 : memcmp(p + i, f->req.pattern, m) == 0)
                        return true;
        return false;
}

typedef struct Ring {
        uint64_t line;
        size_t off, len;
} Ring;

/* The matching lines of buf (n bytes, buf[n] writable), each with up to
 * context lines before and after, none shown twice. */
static int grep_buffer(Find *f, const char *rel, char *buf, size_t n) {
        Ring ring[FIND_MAX_CONTEXT];
        size_t nring = 0, ctx = (size_t)f->req.context;
        uint64_t line = 0, last = 0, after = 0;
        bool any = false;
        int r;
        for (size_t pos = 0; pos < n && !f->limit;) {
                char *nl = memchr(buf + pos, '\n', n - pos);
                size_t len = nl ? (size_t)(nl - (buf + pos)) : n - pos;
                char keep = buf[pos + len];
                buf[pos + len] = 0;
                line++;
                bool m = line_matches(f, buf + pos, len);
                buf[pos + len] = keep;
                if (m && f->matches >= f->req.max_results) {
                        f->limit = "max_results";
                        break;
                }
                if (m) {
                        f->matches++;
                        any = true;
                        for (size_t i = 0; i < nring; i++)
                                if (ring[i].line > last && (r = emit_line(f, rel, ring[i].line, buf + ring[i].off,
                                                                          ring[i].len, false)) < 0)
                                        return r;
                        if ((r = emit_line(f, rel, line, buf + pos, len, true)) < 0)
                                return r;
                        last = line;
                        after = ctx;
                } else if (after) {
                        if ((r = emit_line(f, rel, line, buf + pos, len, false)) < 0)
                                return r;
                        last = line;
                        after--;
                }
                if (ctx) {
                        if (nring == ctx)
                                memmove(ring, ring + 1, (--nring) * sizeof *ring);
                        ring[nring++] = (Ring){ line, pos, len };
                }
                pos += len + 1;
        }
        f->files_matched += any;
        return 0;
}

static int grep_file(Find *f, int dfd, const char *name, const char *rel, const struct stat *st) {
        if (st->st_size > GREP_FILE_MAX) {
                f->skipped++;
                return 0;
        }
        if (f->files >= f->req.max_files) {
                f->limit = "max_files";
                return 0;
        }
        if (f->bytes + (uint64_t)st->st_size > f->req.max_bytes) {
                f->limit = "max_bytes";
                return 0;
        }
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return 0; /* gone, or not ours to read: as if absent */
        struct stat now;
        if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode))
                return 0;
        f->files++;
        size_t cap = (size_t)st->st_size + 1, n = 0;
        if (cap > GREP_FILE_MAX + 1)
                cap = GREP_FILE_MAX + 1;
        _cleanup_free_ char *buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        while (n < cap) { /* one byte past the size: a file grown meanwhile is read as far as the cap */
                ssize_t k = read(fd, buf + n, cap - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t)k;
        }
        f->bytes += n;
        if (memchr(buf, 0, n < GREP_BINARY_PROBE ? n : GREP_BINARY_PROBE)) {
                f->skipped++;
                return 0;
        }
        buf[n] = 0;
        return grep_buffer(f, rel, buf, n);
}

/* ---- the walk ---- */

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of directory fd (borrowed; not closed), sorted: the same tree
 * gives the same results in the same order. */
static int read_names(int fd, char ***ret, size_t *ret_n) {
        int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (dup_fd < 0)
                return negative_errno();
        DIR *d = fdopendir(dup_fd);
        if (!d) {
                int k = negative_errno();
                safe_close(dup_fd);
                return k;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        int k = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n == cap) {
                        size_t nc = cap ? cap * 2 : 32;
                        char **nn = realloc(names, nc * sizeof *nn);
                        if (!nn) {
                                k = -ENOMEM;
                                break;
                        }
                        names = nn;
                        cap = nc;
                }
                if (!(names[n] = strdup(de->d_name))) {
                        k = -ENOMEM;
                        break;
                }
                n++;
        }
        closedir(d);
        if (k < 0) {
                for (size_t i = 0; i < n; i++)
                        free(names[i]);
                free(names);
                return k;
        }
        if (n)
                qsort(names, n, sizeof *names, name_cmp);
        *ret = names;
        *ret_n = n;
        return 0;
}

static int walk(Find *f, int dfd, const char *rel, unsigned depth);

static int visit(Find *f, int dfd, const char *name, const char *rel, unsigned depth) {
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0; /* gone meanwhile */
        bool is_dir = S_ISDIR(st.st_mode);
        _cleanup_free_ char *abs = NULL;
        if (asprintf(&abs, "%s/%s", streq(f->base, "/") ? "" : f->base, rel) < 0)
                return -ENOMEM;
        if (policy_is_masked(f->p, abs, is_dir))
                return 0;
        if (is_dir && streq(name, ".git"))
                return 0;
        bool glob_op = f->req.head.op == PROTOCOL_OP_GLOB;
        if (glob_op) {
                if (f->files >= f->req.max_files) {
                        f->limit = "max_files";
                        return 0;
                }
                f->files++;
                if (glob_match(f->glob, rel, is_dir)) {
                        if (json_array_size(f->results) >= f->req.max_results) {
                                f->limit = "max_results";
                                return 0;
                        }
                        ProtocolFileType t = protocol_file_type_from_mode(st.st_mode);
                        json_t *item = json_pack("{s:s,s:s,s:I}", "path", rel, "type", protocol_file_type_to_string(t),
                                                 "size", (json_int_t)st.st_size);
                        int r = add_result(f, rel, item, 48);
                        if (r < 0 || f->limit)
                                return r;
                }
        } else if (S_ISREG(st.st_mode) && (!f->glob || glob_match(f->glob, rel, false)))
                return grep_file(f, dfd, name, rel, &st);
        if (!is_dir || depth >= FIND_MAX_DEPTH || (f->glob && !glob_could_match_below(f->glob, rel)))
                return 0;
        _cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
                return 0; /* not ours to read: as ls would, left out */
        return walk(f, sub, rel, depth + 1);
}

static int walk(Find *f, int dfd, const char *rel, unsigned depth) {
        char **names = NULL;
        size_t n = 0;
        int k = read_names(dfd, &names, &n);
        if (k < 0)
                return k == -ENOMEM ? k : 0;
        for (size_t i = 0; i < n && k >= 0 && !timed_out(f); i++) {
                _cleanup_free_ char *child = NULL;
                if (asprintf(&child, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0)
                        k = -ENOMEM;
                else
                        k = visit(f, dfd, names[i], child, depth);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return k;
}

/* pattern with \d and \D (outside brackets) as [0-9] and [^0-9]: the
 * GNU regex engine knows \w, \s and \b but takes \d for a plain d, and an
 * agent used to PCRE would search for the wrong thing without a word. */
char *find_regex_translate(const char *pattern) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        bool bracket = false;
        int r = 0;
        for (const char *s = pattern; *s && r >= 0; s++) {
                if (bracket) {
                        /* "[]" and "[^]" start with a literal ']'; a class
                         * such as [:digit:] holds one too. */
                        if (*s == '[' && (s[1] == ':' || s[1] == '=' || s[1] == '.')) {
                                const char *end = strchr(s + 2, s[1]);
                                while (end && end[1] != ']')
                                        end = strchr(end + 1, s[1]);
                                size_t n = end ? (size_t)(end + 2 - s) : strlen(s);
                                r = strbuf_append(&b, s, n);
                                s += n - 1;
                                continue;
                        }
                        bracket = *s != ']';
                        r = strbuf_appendc(&b, *s);
                } else if (*s == '\\' && (s[1] == 'd' || s[1] == 'D')) {
                        r = strbuf_appends(&b, s[1] == 'd' ? "[0-9]" : "[^0-9]");
                        s++;
                } else if (*s == '\\' && s[1]) {
                        r = strbuf_append(&b, s, 2);
                        s++;
                } else if (*s == '[') {
                        bracket = true;
                        r = strbuf_appendc(&b, '[');
                        if (r >= 0 && s[1] == '^')
                                r = strbuf_appendc(&b, *++s);
                        if (r >= 0 && s[1] == ']')
                                r = strbuf_appendc(&b, *++s);
                } else
                        r = strbuf_appendc(&b, *s);
        }
        if (r < 0 || strbuf_appendc(&b, 0) < 0)
                return NULL;
        return TAKE_PTR(b.data);
}

static uint64_t or_default(uint64_t v, uint64_t def) {
        return v ? v : def;
}

int find_run(const Policy *p, json_t *obj, StrBuf *out, VsError **err) {
        _cleanup_(find_done) Find f = { .p = p };
        _cleanup_(resolved_done) Resolved r = RESOLVED_INIT;
        int k = protocol_decode_find_request(obj, &f.req, err);
        if (k < 0)
                return k;
        bool glob_op = f.req.head.op == PROTOCOL_OP_GLOB;
        f.req.max_results = or_default(f.req.max_results, glob_op ? GLOB_DEFAULT_RESULTS : GREP_DEFAULT_RESULTS);
        f.req.max_files = or_default(f.req.max_files, glob_op ? GLOB_DEFAULT_ENTRIES : GREP_DEFAULT_FILES);
        f.req.max_bytes = or_default(f.req.max_bytes, GREP_DEFAULT_BYTES);
        uint64_t deadline = or_default(f.req.deadline_ms, FIND_DEFAULT_DEADLINE_MS);
        f.deadline_ms = now_ms() + (deadline < FIND_MAX_DEADLINE_MS ? deadline : FIND_MAX_DEADLINE_MS);
        if (f.req.context > FIND_MAX_CONTEXT)
                return vs_error_set_kind(err, -EINVAL, "bad_request", "context is at most %u lines", FIND_MAX_CONTEXT);
        const char *pattern = glob_op ? f.req.pattern : f.req.glob;
        if (pattern) {
                _cleanup_(vs_error_freep) VsError *e = NULL;
                if ((k = glob_compile(pattern, &f.glob, &e)) == -ENOMEM)
                        return k;
                if (k < 0)
                        return vs_error_set_kind(err, k, "bad_request", "%s: %s", glob_op ? "pattern" : "glob",
                                                 vs_error_message(e));
        }
        if (!glob_op && !f.req.fixed) {
                _cleanup_free_ char *re = find_regex_translate(f.req.pattern);
                if (!re)
                        return -ENOMEM;
                int rc = regcomp(&f.re, re, REG_EXTENDED | REG_NOSUB | (f.req.ignore_case ? REG_ICASE : 0));
                if (rc != 0) {
                        char msg[256];
                        regerror(rc, &f.re, msg, sizeof msg);
                        return vs_error_set_kind(err, -EINVAL, "bad_request", "pattern: %s", msg);
                }
                f.has_re = true;
        }
        if (!(f.results = json_array()))
                return -ENOMEM;
        k = resolve_path(p, f.req.path, PATH_FOLLOW_FINAL, &r, err);
        if (k < 0)
                return k;
        if (!r.exists)
                return vs_error_set_kind(err, -ENOENT, "not_found", "%s: %s", r.path, strerror(ENOENT));
        struct stat st;
        if (fstatat(r.dir_fd, r.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return vs_error_set(err, negative_errno(), "%s: %s", r.path, strerror(errno));
        if (!(f.base = strdup(r.path)))
                return -ENOMEM;
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int fd = openat(r.dir_fd, r.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return vs_error_set(err, negative_errno(), "%s: %s", r.path, strerror(errno));
                k = walk(&f, fd, "", 0);
        } else if (!glob_op && S_ISREG(st.st_mode)) {
                /* grep in one file: its name is the path given. */
                k = grep_file(&f, r.dir_fd, r.name, r.name, &st);
        } else
                return vs_error_set_kind(err, -ENOTDIR, "bad_request", "%s: not a directory", r.path);
        if (k < 0)
                return k;
        ProtocolFindReply rep = { .results = f.results, .files = f.files, .matches = f.matches,
                                  .files_matched = f.files_matched, .skipped = f.skipped, .limit = f.limit };
        return protocol_encode_find_reply(out, f.req.head.id, &rep);
}
