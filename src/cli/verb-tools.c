/* SPDX-License-Identifier: MIT */
/* exec, run, read, write, edit: through the daemon when one is configured,
 * otherwise embedded (one worker for one action). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "fd-util.h"
#include "protocol.h"
#include "sha256.h"
#include "strv.h"
#include "tools.h"

static void warn_degraded(const VsSession *s) {
        for (char **d = s->degraded; d && *d; d++)
                fprintf(stderr, "vectora-sandbox: warning: running degraded: %s\n", *d);
}

/* Embedded mode: the jail of the workspace governing ws (maybe an
 * ancestor); *dir is ws canonicalized, where relative paths start. */
static int open_or_fail(const char *ws, VsPolicy **p, VsSession **s, char **dir) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_free_ char *pending = NULL;
        int r = tools_open(ws, p, s, &pending, &err);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "%s", vs_error_message(err));
        if (pending)
                fprintf(stderr, "vectora-sandbox: warning: %s\n", pending);
        if (!(*dir = realpath(ws, NULL)))
                return cli_fail(EXIT_REFUSED, "workspace %s: %m", ws);
        warn_degraded(*s);
        return 0;
}

/* Sends a request and decodes the reply head; prints the worker's error. */
static int call(VsSession *s, StrBuf *req, const char *verb, JsonlMsg *m, ProtocolReplyHead *h) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = session_call(s, req, 0, m, &err);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "%s: %s", verb, vs_error_message(err));
        if (protocol_decode_reply_head(m->obj, h, &err) < 0) {
                jsonl_msg_done(m);
                return cli_fail(EXIT_REFUSED, "%s: bad reply from the worker: %s", verb, vs_error_message(err));
        }
        if (!h->ok) {
                int code = h->error_code == PROTOCOL_ERROR_DENIED ? EXIT_REFUSED : 1;
                cli_fail(code, "%s: %s: %s", verb, h->error_code_name ? h->error_code_name : "error",
                         h->error_message ? h->error_message : "failed");
                jsonl_msg_done(m);
                return code;
        }
        return 0;
}

typedef struct ExecOpts {
        const char *ws;
        uint64_t timeout_s;
        char **env;
        const char *cwd;
} ExecOpts;

static int do_exec(const ExecOpts *o, char **argv_cmd) {
        if (cli_socket())
                return client_exec(cli_socket(), o->ws, argv_cmd, NULL, o->cwd, o->env, o->timeout_s);
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(session_endp) VsSession *s = NULL;
        _cleanup_free_ char *dir = NULL, *cwd = NULL;
        int r = open_or_fail(o->ws, &p, &s, &dir);
        if (r)
                return r;
        ProtocolExecRequest req = { .argv = argv_cmd, .cwd = tools_in_dir(dir, o->cwd, &cwd), .env = o->env,
                                    .timeout_ms = o->timeout_s * 1000 };
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        r = protocol_encode_exec_request(&out, session_next_id(s), &req, NULL, 0);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "exec: encoding the request: %s", strerror(-r));
        JsonlMsg m = JSONL_MSG_INIT;
        ProtocolReplyHead h;
        if ((r = call(s, &out, "exec", &m, &h)))
                return r;
        ProtocolExecReply rep;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (protocol_decode_exec_reply(m.obj, m.raw_len, &rep, &err) < 0) {
                jsonl_msg_done(&m);
                return cli_fail(EXIT_REFUSED, "exec: bad reply: %s", vs_error_message(err));
        }
        fflush(stdout);
        (void)!write_all(STDOUT_FILENO, m.raw, rep.stdout_len);
        (void)!write_all(STDERR_FILENO, m.raw + rep.stdout_len, rep.stderr_len);
        jsonl_msg_done(&m);
        if (rep.timed_out)
                fprintf(stderr, "vectora-sandbox: exec: timed out; the command's process group was killed\n");
        return (int)rep.exit_code;
}

static int parse_exec_opts(int argc, char **argv, ExecOpts *o, _unused_ bool is_run) {
        static const struct option opts[] = {
                { "workspace", required_argument, NULL, 'w' },
                { "timeout", required_argument, NULL, 't' },
                { "env", required_argument, NULL, 'e' },
                { "cwd", required_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "+w:h", opts, NULL)) >= 0)
                switch (c) {
                case 'w': o->ws = optarg; break;
                case 't': {
                        char *end;
                        unsigned long long v = strtoull(optarg, &end, 10);
                        if (*end || v == 0 || v > 7 * 24 * 3600)
                                return cli_fail(EXIT_REFUSED, "--timeout takes seconds (1..604800), not '%s'", optarg);
                        o->timeout_s = v;
                        break;
                }
                case 'e':
                        if (!strchr(optarg, '=') || optarg[0] == '=')
                                return cli_fail(EXIT_REFUSED, "--env takes K=V, not '%s'", optarg);
                        if (strv_extend(&o->env, optarg) < 0)
                                return cli_fail(EXIT_REFUSED, "out of memory");
                        break;
                case 'c': o->cwd = optarg; break;
                case 'h':
                        printf(is_run ? "usage: vectora-sandbox run [-w DIR] [--timeout S] [--env K=V] [--cwd REL] 'command line'\n"
                                      : "usage: vectora-sandbox exec [-w DIR] [--timeout S] [--env K=V] [--cwd REL] -- CMD [ARG...]\n");
                        return -1;
                default: return EXIT_REFUSED;
                }
        return 0;
}

int verb_exec(int argc, char **argv) {
        ExecOpts o = { .ws = "." };
        int r = parse_exec_opts(argc, argv, &o, false);
        if (r)
                return r < 0 ? 0 : r;
        if (optind >= argc)
                return cli_fail(EXIT_REFUSED, "exec: no command; usage: vectora-sandbox exec [-w DIR] -- CMD [ARG...]");
        r = do_exec(&o, argv + optind);
        strv_free(o.env);
        return r;
}

int verb_run(int argc, char **argv) {
        ExecOpts o = { .ws = "." };
        int r = parse_exec_opts(argc, argv, &o, true);
        if (r)
                return r < 0 ? 0 : r;
        if (optind != argc - 1)
                return cli_fail(EXIT_REFUSED, "run: give the command line as one argument: vectora-sandbox run 'make test'");
        char *cmd[] = { (char *)"/bin/sh", (char *)"-c", argv[optind], NULL };
        r = do_exec(&o, cmd);
        strv_free(o.env);
        return r;
}

static int parse_ws_only(int argc, char **argv, const char **ws, const char *usage_line) {
        static const struct option opts[] = {
                { "workspace", required_argument, NULL, 'w' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "w:h", opts, NULL)) >= 0)
                switch (c) {
                case 'w': *ws = optarg; break;
                case 'h': printf("%s\n", usage_line); return -1;
                default: return EXIT_REFUSED;
                }
        return 0;
}

int verb_read(int argc, char **argv) {
        static const struct option opts[] = {
                { "workspace", required_argument, NULL, 'w' },
                { "offset", required_argument, NULL, 'o' },
                { "limit", required_argument, NULL, 'l' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *ws = ".";
        uint64_t offset = 0, limit = 0;
        int c;
        while ((c = getopt_long(argc, argv, "w:h", opts, NULL)) >= 0)
                switch (c) {
                case 'w': ws = optarg; break;
                case 'o': offset = strtoull(optarg, NULL, 10); break;
                case 'l': limit = strtoull(optarg, NULL, 10); break;
                case 'h': printf("usage: vectora-sandbox read [-w DIR] PATH [--offset N] [--limit N]\n"); return 0;
                default: return EXIT_REFUSED;
                }
        if (optind != argc - 1)
                return cli_fail(EXIT_REFUSED, "read: give exactly one PATH");
        const char *path = argv[optind];
        if (cli_socket())
                return client_read(cli_socket(), ws, path, offset, limit);
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(session_endp) VsSession *s = NULL;
        _cleanup_free_ char *dir = NULL, *abs = NULL;
        int r = open_or_fail(ws, &p, &s, &dir);
        if (r)
                return r;
        ProtocolReadFileRequest req = { .path = tools_in_dir(dir, path, &abs), .offset = offset, .limit = limit };
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        if ((r = protocol_encode_read_file_request(&out, session_next_id(s), &req)) < 0)
                return cli_fail(EXIT_REFUSED, "read: %s", strerror(-r));
        JsonlMsg m = JSONL_MSG_INIT;
        ProtocolReplyHead h;
        if ((r = call(s, &out, "read", &m, &h)))
                return r;
        (void)!write_all(STDOUT_FILENO, m.raw, m.raw_len);
        jsonl_msg_done(&m);
        return 0;
}

/* Reads a file's whole content through the worker: content and sha256. */
static int read_whole(VsSession *s, const char *path, char **ret, size_t *ret_len, char sha[SHA256_HEX_LEN + 1]) {
        ProtocolReadFileRequest req = { .path = path };
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = protocol_encode_read_file_request(&out, session_next_id(s), &req);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "edit: %s", strerror(-r));
        JsonlMsg m = JSONL_MSG_INIT;
        ProtocolReplyHead h;
        if ((r = call(s, &out, "edit", &m, &h)))
                return r;
        ProtocolReadFileReply rep;
        if (protocol_decode_read_file_reply(m.obj, &rep, NULL) < 0 || !rep.eof || rep.offset != 0) {
                jsonl_msg_done(&m);
                return cli_fail(EXIT_REFUSED, "edit: the file is too large to edit in one piece");
        }
        snprintf(sha, SHA256_HEX_LEN + 1, "%s", rep.sha256);
        *ret = jsonl_msg_steal_raw(&m, ret_len);
        jsonl_msg_done(&m);
        return *ret ? 0 : cli_fail(EXIT_REFUSED, "out of memory");
}

static int write_through(VsSession *s, const char *verb, const char *path, const char *data, size_t len,
                         const char *if_sha) {
        ProtocolWriteFileRequest req = { .path = path, .if_sha256 = if_sha };
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = protocol_encode_write_file_request(&out, session_next_id(s), &req, data, len);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "%s: %s", verb, strerror(-r));
        JsonlMsg m = JSONL_MSG_INIT;
        ProtocolReplyHead h;
        if ((r = call(s, &out, verb, &m, &h)))
                return r;
        jsonl_msg_done(&m);
        return 0;
}

int verb_write(int argc, char **argv) {
        const char *ws = ".";
        int r = parse_ws_only(argc, argv, &ws, "usage: vectora-sandbox write [-w DIR] PATH   (content on stdin)");
        if (r)
                return r < 0 ? 0 : r;
        if (optind != argc - 1)
                return cli_fail(EXIT_REFUSED, "write: give exactly one PATH; the content comes on stdin");
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        if ((r = read_fd_all(STDIN_FILENO, 64u << 20, &data, &len)) < 0)
                return cli_fail(EXIT_REFUSED, "write: reading stdin: %s", strerror(-r));
        if (cli_socket())
                return client_write(cli_socket(), ws, argv[optind], data, len);
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(session_endp) VsSession *s = NULL;
        _cleanup_free_ char *dir = NULL, *abs = NULL;
        if ((r = open_or_fail(ws, &p, &s, &dir)))
                return r;
        return write_through(s, "write", tools_in_dir(dir, argv[optind], &abs), data, len, NULL);
}

int verb_edit(int argc, char **argv) {
        static const struct option opts[] = {
                { "workspace", required_argument, NULL, 'w' },
                { "old", required_argument, NULL, 'o' },
                { "new", required_argument, NULL, 'n' },
                { "all", no_argument, NULL, 'a' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *ws = ".", *old_text = NULL, *new_text = NULL;
        bool all = false;
        int c;
        while ((c = getopt_long(argc, argv, "w:h", opts, NULL)) >= 0)
                switch (c) {
                case 'w': ws = optarg; break;
                case 'o': old_text = optarg; break;
                case 'n': new_text = optarg; break;
                case 'a': all = true; break;
                case 'h': printf("usage: vectora-sandbox edit [-w DIR] PATH --old TEXT --new TEXT [--all]\n"); return 0;
                default: return EXIT_REFUSED;
                }
        if (optind != argc - 1 || !old_text || !new_text)
                return cli_fail(EXIT_REFUSED, "edit: usage: vectora-sandbox edit [-w DIR] PATH --old TEXT --new TEXT [--all]");
        if (cli_socket())
                return client_edit(cli_socket(), ws, argv[optind], old_text, new_text, all);
        _cleanup_(policy_freep) VsPolicy *p = NULL;
        _cleanup_(session_endp) VsSession *s = NULL;
        _cleanup_free_ char *dir = NULL, *abs = NULL;
        int r = open_or_fail(ws, &p, &s, &dir);
        if (r)
                return r;
        const char *path = tools_in_dir(dir, argv[optind], &abs);
        _cleanup_free_ char *content = NULL, *edited = NULL;
        size_t len = 0, elen = 0, count = 0;
        char sha[SHA256_HEX_LEN + 1];
        if ((r = read_whole(s, path, &content, &len, sha)))
                return r;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (tool_edit_apply(content, len, old_text, new_text, all, &edited, &elen, &count, &err) < 0)
                return cli_fail(1, "edit: %s", vs_error_message(err));
        /* if_sha256: a concurrent change between read and write is refused,
         * never silently overwritten. */
        if ((r = write_through(s, "edit", path, edited, elen, sha)))
                return r;
        fprintf(stderr, "vectora-sandbox: edit: %zu replacement%s\n", count, count == 1 ? "" : "s");
        return 0;
}
