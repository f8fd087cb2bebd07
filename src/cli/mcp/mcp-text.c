/* SPDX-License-Identifier: MIT */
/* The text of a tool result (mcp-text.h): what the model reads. */
#include "mcp-text.h"

#include <stdio.h>
#include <string.h>

#include "api.h"
#include "mcp-find.h"
#include "utf8.h"

/* Appends p[0..n) with every invalid UTF-8 sequence replaced by U+FFFD:
 * command output is bytes, an MCP text is a JSON string. */
static int append_lossy(StrBuf *out, const char *p, size_t n) {
        if (utf8_valid(p, n))
                return strbuf_append(out, p, n);
        size_t i = 0;
        while (i < n) {
                size_t len;
                int r;
                if (utf8_next(p + i, n - i, &len) >= 0)
                        r = strbuf_append(out, p + i, len);
                else {
                        r = strbuf_appends(out, "\xef\xbf\xbd");
                        len = 1;
                }
                if (r < 0)
                        return r;
                i += len;
        }
        return 0;
}

/* What the agent must act on, said in the text for every revision (a
 * client may show only the text, and revisions before 2025-06-18 have no
 * structuredContent): one short line each. */
static int append_notes(StrBuf *out, json_t *reply) {
        int r = 0;
        size_t i;
        json_t *v;
        json_t *denied = json_object_get(reply, "network_denied");
        json_array_foreach(denied, i, v) r |= strbuf_appendf(out, "%s%s:%lld (%s)", i ? ", " : "\n[network: the proxy refused ",
                                                             json_string_value(json_object_get(v, "host")),
                                                             (long long)json_integer_value(json_object_get(v, "port")),
                                                             json_string_value(json_object_get(v, "reason")));
        if (json_array_size(denied))
                r |= strbuf_appends(out, "; only the user can allow a host, in vectora.toml's network = [...]: ask them]");
        const char *note = json_string_value(json_object_get(reply, "network_note"));
        if (note)
                r |= strbuf_appendf(out, "\n[network: %s]", note);
        const char *sealed = json_string_value(json_object_get(reply, "sealed_note"));
        if (sealed)
                r |= strbuf_appendf(out, "\n[sealed: %s]", sealed);
        const char *pending = json_string_value(json_object_get(reply, "policy_pending"));
        if (pending)
                r |= strbuf_appendf(out, "\n[policy pending: %s]", pending);
        json_t *capped = json_object_get(reply, "timeout_capped_ms");
        if (capped)
                r |= strbuf_appendf(out, "\n[timeout capped at %lld s by the workspace's [sandbox.limits] timeout]",
                                    (long long)(json_integer_value(capped) / 1000));
        return r < 0 ? -ENOMEM : 0;
}

int mcp_append_status(StrBuf *out, json_t *reply) {
        json_t *sb = json_object_get(reply, "sandbox");
        const char *backend = json_string_value(json_object_get(sb, "backend"));
        int r;
        if (json_is_true(json_object_get(reply, "sandboxed"))) {
                r = strbuf_appendf(out, "[sandbox: %s jail", backend ? backend : "?");
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(sb, "layers"), i, v) r |= strbuf_appendf(out, "%s%s", i ? ", " : " (",
                                                                                             json_string_value(v));
                if (json_array_size(json_object_get(sb, "layers")))
                        r |= strbuf_appends(out, ")");
                json_array_foreach(json_object_get(sb, "degraded"), i, v) r |=
                        strbuf_appendf(out, "%s%s", i ? "; " : "; DEGRADED: ", json_string_value(v));
                r |= strbuf_appends(out, "]");
        } else if (backend && streq(backend, "none"))
                r = strbuf_appends(out, "[not sandboxed: the workspace has no [sandbox] in vectora.toml; this ran on the host]");
        else
                r = strbuf_appends(out, "[nothing ran]");
        /* Said in the text too: a client may show only that. */
        json_t *hr = json_object_get(reply, "host_run_files");
        size_t i;
        json_t *v;
        json_array_foreach(hr, i, v) r |= strbuf_appendf(out, "%s%s", i ? ", " : "\n[written: files the host runs later: ",
                                                         json_string_value(v));
        if (json_array_size(hr))
                r |= strbuf_appends(out, "; review them before the host's tools open this directory]");
        const char *restarted = json_string_value(json_object_get(reply, "jail_restarted"));
        if (restarted)
                r |= strbuf_appendf(out, "\n[jail restarted: %s]", restarted);
        return r < 0 ? -ENOMEM : append_notes(out, reply);
}

/* In buf (a result is built on each call's own thread: no static buffer). */
static const char *process_state(json_t *p, char buf[static 64]) {
        if (json_is_true(json_object_get(p, "running")))
                return "running";
        if (json_object_get(p, "ended"))
                return "ended with its sandbox";
        snprintf(buf, 64, "exited with code %lld", (long long)json_integer_value(json_object_get(p, "exit_code")));
        return buf;
}

static int process_output_text(json_t *reply, StrBuf *t) {
        char state[64];
        int r = 0;
        static const char *const streams[] = { "stdout", "stderr" };
        for (size_t i = 0; i < 2; i++) {
                char k[32];
                const char *s = json_string_value(json_object_get(reply, streams[i]));
                snprintf(k, sizeof k, "%s_dropped", streams[i]);
                json_int_t dropped = json_integer_value(json_object_get(reply, k));
                if (dropped)
                        r |= strbuf_appendf(t, "[%s: %lld earlier bytes were dropped]\n", streams[i], (long long)dropped);
                if (i == 1 && s && *s)
                        r |= strbuf_appends(t, "[stderr]\n");
                if (s)
                        r |= strbuf_appends(t, s);
                else if (json_object_get(reply, i ? "stderr_base64" : "stdout_base64"))
                        r |= strbuf_appendf(t, "[%s: bytes that are not text, not shown]", streams[i]);
                if (t->len && t->data[t->len - 1] != '\n')
                        r |= strbuf_appendc(t, '\n');
        }
        r |= strbuf_appendf(t, "[process %lld %s; next offsets: stdout_offset %lld, stderr_offset %lld]",
                            (long long)json_integer_value(json_object_get(reply, "process")), process_state(reply, state),
                            (long long)json_integer_value(json_object_get(reply, "stdout_offset")),
                            (long long)json_integer_value(json_object_get(reply, "stderr_offset")));
        return r;
}

/* p[0..n) in at most budget bytes: the head and the tail, each cut at a
 * character, around a marker that says how much is left out. */
static int append_cut(StrBuf *t, const char *p, size_t n, size_t budget) {
        if (n <= budget)
                return append_lossy(t, p, n);
        size_t head = budget / 2, tail = n - (budget - budget / 2);
        while (head > 0 && utf8_is_continuation(p[head]))
                head--;
        while (tail < n && utf8_is_continuation(p[tail]))
                tail++;
        int r = append_lossy(t, p, head);
        r |= strbuf_appendf(t, "\n[... %zu bytes omitted ...]\n", tail - head);
        return r | append_lossy(t, p + tail, n - tail);
}

/* stdout then stderr in c->max_output bytes: a stream that needs less
 * than half leaves the rest to the other. */
static int terminal_text(const McpCall *c, json_t *reply, const char *raw, size_t raw_len, StrBuf *t) {
        size_t out_len = (size_t)json_integer_value(json_object_get(reply, "stdout_len"));
        size_t err_len = (size_t)json_integer_value(json_object_get(reply, "stderr_len"));
        if (out_len > raw_len || err_len > raw_len - out_len)
                out_len = err_len = 0;
        size_t budget = c->max_output ? (size_t)c->max_output : MCP_OUTPUT_DEFAULT;
        size_t out_b = out_len, err_b = err_len;
        bool cut = out_len + err_len > budget;
        if (cut) {
                out_b = err_len < budget / 2 ? budget - err_len : out_len < budget / 2 ? out_len : budget / 2;
                err_b = budget - out_b;
        }
        int r = append_cut(t, raw, out_len, out_b);
        if (err_len) {
                r |= strbuf_appends(t, t->len && t->data[t->len - 1] != '\n' ? "\n[stderr]\n" : "[stderr]\n");
                r |= append_cut(t, raw + out_len, err_len, err_b);
        }
        if (t->len && t->data[t->len - 1] != '\n')
                r |= strbuf_appendc(t, '\n');
        r |= strbuf_appendf(t, "[exit code %lld", (long long)json_integer_value(json_object_get(reply, "exit_code")));
        if (json_is_true(json_object_get(reply, "timed_out")))
                r |= strbuf_appends(t, "; timed out: the command's process group was killed");
        if (cut || json_is_true(json_object_get(reply, "truncated")))
                r |= strbuf_appendf(t, "; output truncated to %zu bytes: head and tail kept. For the rest, send the "
                                       "output to a file and file_read it, or raise max_output (the workspace's "
                                       "[sandbox.limits] max_output caps it)", budget);
        return r | strbuf_appends(t, "]");
}

/* Lines numbered as cat -n does, the first being first_line. */
static int append_numbered(StrBuf *t, const char *p, size_t n, uint64_t first_line) {
        int r = 0;
        uint64_t line = first_line ? first_line : 1;
        for (size_t i = 0; i < n;) {
                const char *nl = memchr(p + i, '\n', n - i);
                size_t end = nl ? (size_t)(nl - p) + 1 : n;
                r |= strbuf_appendf(t, "%6llu\t", (unsigned long long)line++);
                r |= strbuf_append(t, p + i, end - i);
                i = end;
        }
        return r;
}

static int file_read_text(const McpCall *c, json_t *reply, const char *raw, size_t raw_len, StrBuf *t) {
        uint64_t off = (uint64_t)json_integer_value(json_object_get(reply, "offset"));
        uint64_t size = (uint64_t)json_integer_value(json_object_get(reply, "size"));
        uint64_t line = (uint64_t)json_integer_value(json_object_get(reply, "start_line"));
        int r = 0;
        if (!utf8_valid(raw, raw_len))
                r |= strbuf_appendf(t, "[binary content: %zu bytes at offset %llu of %llu; not shown as text, inspect it with the terminal tool]",
                                    raw_len, (unsigned long long)off, (unsigned long long)size);
        else if (c->line_numbers)
                r |= append_numbered(t, raw, raw_len, line);
        else
                r |= strbuf_append(t, raw, raw_len);
        if (json_is_true(json_object_get(reply, "eof")))
                return r;
        uint64_t next = off + raw_len;
        r |= strbuf_appendf(t, "%s[%llu more bytes: call file_read with offset %llu", t->len && t->data[t->len - 1] != '\n' ? "\n" : "",
                            (unsigned long long)(size > next ? size - next : 0), (unsigned long long)next);
        /* A window that ends a line can go on by lines too. */
        if (line && raw_len && raw[raw_len - 1] == '\n' && utf8_valid(raw, raw_len)) {
                uint64_t nls = 0;
                for (const char *q = raw, *e = raw + raw_len; (q = memchr(q, '\n', (size_t)(e - q))); q++)
                        nls++;
                r |= strbuf_appendf(t, " (or start_line %llu)", (unsigned long long)(line + nls));
        }
        return r | strbuf_appends(t, " to go on]");
}

int mcp_result_text(const McpCall *c, json_t *reply, const char *raw, size_t raw_len, StrBuf *t) {
        int r = 0;
        switch (c->tool) {
        case MCP_TOOL_TERMINAL:
                r |= terminal_text(c, reply, raw, raw_len, t);
                break;
        case MCP_TOOL_FILE_READ:
                r |= file_read_text(c, reply, raw, raw_len, t);
                break;
        case MCP_TOOL_FILE_WRITE:
                r |= strbuf_appendf(t, "%s %s: %lld bytes", json_is_true(json_object_get(reply, "created")) ? "created" : "replaced",
                                    c->path, (long long)json_integer_value(json_object_get(reply, "size")));
                break;
        case MCP_TOOL_FILE_EDIT: {
                long long n = (long long)json_integer_value(json_object_get(reply, "replacements"));
                r |= strbuf_appendf(t, "edited %s: %lld replacement%s", c->path, n, n == 1 ? "" : "s");
                break;
        }
        case MCP_TOOL_LIST_DIR:
        case MCP_TOOL_GLOB:
        case MCP_TOOL_GREP:
                r |= mcp_find_text(c, reply, true, t);
                break;
        case MCP_TOOL_PROCESS_START:
                r |= strbuf_appendf(t, "started background process %lld; read its output with process_output",
                                    (long long)json_integer_value(json_object_get(reply, "process")));
                break;
        case MCP_TOOL_PROCESS_OUTPUT:
                r |= process_output_text(reply, t);
                break;
        case MCP_TOOL_PROCESS_INPUT:
                r |= strbuf_appendf(t, "written to process %llu%s", (unsigned long long)c->process,
                                    c->eof ? "; its input is closed" : "");
                break;
        case MCP_TOOL_PROCESS_SIGNAL:
                r |= strbuf_appendf(t, "sent SIG%s to process %llu", c->signal ? c->signal : "TERM",
                                    (unsigned long long)c->process);
                break;
        case MCP_TOOL_PROCESS_LIST: {
                char state[64];
                size_t i;
                json_t *p;
                json_array_foreach(json_object_get(reply, "processes"), i, p) {
                        _cleanup_free_ char *cmd = json_dumps(json_object_get(p, "command"), JSON_ENCODE_ANY);
                        r |= strbuf_appendf(t, "%lld: %s: %s\n", (long long)json_integer_value(json_object_get(p, "process")),
                                            process_state(p, state), cmd ? cmd : "?");
                }
                if (!json_array_size(json_object_get(reply, "processes")))
                        r |= strbuf_appends(t, "no background processes");
                break;
        }
        default:
                break;
        }
        return r < 0 ? -ENOMEM : 0;
}
