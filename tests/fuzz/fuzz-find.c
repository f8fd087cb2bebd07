/* SPDX-License-Identifier: MIT */
/* The worker's glob and grep (src/worker/find.c) on arbitrary requests,
 * against a fixed tree made once in a temp directory: masked files whose
 * content is SECRET, a masked directory, a binary file, a symlink out of
 * the workspace and one onto a masked name. The input is a request's JSON
 * (its id and op are set here when it has none, the op by its first byte);
 * the same bytes are also a regex for the \d translation. Properties: the
 * worker either refuses or replies with what the daemon's decoder accepts,
 * and no reply ever holds SECRET (a masked file read) or names a masked
 * path. */
#include <fcntl.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonl.h"
#include "path-util.h"
#include "worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];
static char ws[96]; /* the policy's workspace, for the process's life */
static Policy policy;
static bool ready;

static void cleanup(void) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        (void) !system(cmd);
}

static void make(const char *rel, const char *content, const char *link_target) {
        char *p = path_join(root, rel);
        if (!p)
                abort();
        int r;
        if (link_target)
                r = symlink(link_target, p);
        else if (!content)
                r = mkdir(p, 0755);
        else {
                int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                r = fd < 0 || write(fd, content, strlen(content) + (content[0] == 'B')) < 0 ? -1 : 0; /* 'B': with its NUL */
                if (fd >= 0)
                        close(fd);
        }
        if (r < 0)
                abort();
        free(p);
}

static void setup(void) {
        strcpy(root, "/tmp/vs-fuzz-find-XXXXXX");
        if (!mkdtemp(root))
                abort();
        atexit(cleanup);
        make("ws", NULL, NULL);
        make("ws/sub", NULL, NULL);
        make("ws/secrets", NULL, NULL);
        make("ws/.git", NULL, NULL);
        make("ws/a.txt", "hello world\nfoo 42\nbar\n", NULL);
        make("ws/sub/b.c", "int hello;\n", NULL);
        make("ws/sub/bin", "Binary hello", NULL);
        make("ws/.env", "SECRET=1\n", NULL);
        make("ws/sub/.env", "SECRET=2\n", NULL);
        make("ws/secrets/key", "SECRET key\n", NULL);
        make("ws/.git/config", "SECRET in git\n", NULL);
        make("ws/etc", NULL, "/etc");
        make("ws/alias", NULL, ".env");
        snprintf(ws, sizeof ws, "%s/ws", root);
        char *rw[] = { ws, NULL };
        char *mask[] = { (char *) ".env", (char *) "/secrets/", NULL };
        ProtocolInit init = { .mode = PROTOCOL_MODE_JAIL, .workspace = ws, .rw_paths = rw, .mask = mask };
        if (policy_init(&policy, &init, NULL) < 0)
                abort();
        ready = true;
}

static void regex_once(const uint8_t *data, size_t size) {
        char *s = strndup((const char *)data, size);
        if (!s)
                return;
        char *t = find_regex_translate(s);
        regex_t re;
        if (t && regcomp(&re, t, REG_EXTENDED | REG_NOSUB) == 0)
                regfree(&re);
        free(t);
        free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!ready)
                setup();
        if (size > 4096)
                return 0;
        regex_once(data, size);
        json_t *o = json_loadb((const char *)data, size, 0, NULL);
        if (!json_is_object(o)) {
                json_decref(o);
                return 0;
        }
        if (!json_object_get(o, "id"))
                json_object_set_new(o, "id", json_integer(1));
        if (!json_object_get(o, "op"))
                json_object_set_new(o, "op", json_string(size && (data[0] & 1) ? "grep" : "glob"));
        json_t *op = json_object_get(o, "op");
        ProtocolOp which = json_is_string(op) && streq(json_string_value(op), "glob") ? PROTOCOL_OP_GLOB : PROTOCOL_OP_GREP;
        StrBuf out = STRBUF_INIT;
        VsError *err = NULL;
        int k = find_run(&policy, o, &out, &err);
        if (k >= 0) {
                if (!out.data || memmem(out.data, out.len, "SECRET", 6) || memmem(out.data, out.len, ".env\"", 5) ||
                    memmem(out.data, out.len, "secrets/", 8))
                        __builtin_trap();
                json_t *rep = json_loadb(out.data, out.len, 0, NULL);
                ProtocolFindReply r;
                if (!rep || protocol_decode_find_reply(rep, which, &r, NULL) < 0)
                        __builtin_trap();
                json_decref(rep);
        } else if (out.len)
                __builtin_trap();
        vs_error_free(err);
        strbuf_done(&out);
        json_decref(o);
        return 0;
}
