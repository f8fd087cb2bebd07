/* SPDX-License-Identifier: MIT */
/* The daemon API's argument tables (src/core/api/api.c) on every request
 * line the reader accepts from arbitrary bytes: the line goes through each
 * tool's table as the daemon's tools.c and process.c dispatch it, then
 * through what builds on the decoded arguments (a command's argv,
 * environment and stdin; a write's content). Properties: what one table
 * accepts, the same table re-encodes (json_build) and accepts again to the
 * same encoding; a prepared command has an argv whose first entry exists;
 * the tool and error names round-trip through their tables. */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "json-util.h"
#include "fuzz-messages.h"
#include "jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef union AnyArgs {
        ApiRunArgs run;
        ApiTerminalOpenArgs terminal_open;
        ApiReadArgs read;
        ApiWriteArgs write;
        ApiEditArgs edit;
        ApiStatusArgs status;
        ApiOutputArgs output;
        ApiControlArgs control;
        ApiListArgs list;
        ApiFindArgs find;
} AnyArgs;

static const JsonField *const tables[] = {
        api_run_table,          api_terminal_open_table,   api_file_read_table,     api_file_write_table,
        api_file_edit_table,    api_status_table,          api_no_args_table,       api_process_output_table,
        api_process_input_table, api_process_signal_table, api_list_dir_table, api_glob_table, api_grep_table,
};

/* Decoded by table: encoded again, that encoding decodes, and encodes the
 * same. */
static void round_trip(const JsonField *table, const AnyArgs *a) {
        json_t *once = json_object(), *twice = json_object();
        if (!once || !twice || json_build(once, table, a) < 0) {
                json_decref(once);
                json_decref(twice);
                return;
        }
        AnyArgs b;
        memset(&b, 0, sizeof b);
        VsError *err = NULL;
        if (json_dispatch(once, table, &b, &err) < 0)
                __builtin_trap(); /* the table refuses what it wrote */
        if (json_build(twice, table, &b) == 0 && !json_equal(once, twice))
                __builtin_trap();
        json_dispatch_done(table, &b);
        json_decref(once);
        json_decref(twice);
}

static void prepare(const JsonField *table, AnyArgs *a, const JsonlMsg *m) {
        /* prepare takes the raw payload: each gets a message of its own. */
        JsonlMsg copy = *m;
        copy.raw = NULL;
        copy.raw_owner = NULL;
        if (m->has_raw) {
                copy.raw = copy.raw_owner = malloc(m->raw_len + 1);
                if (!copy.raw)
                        return;
                memcpy(copy.raw, m->raw, m->raw_len);
                copy.raw[m->raw_len] = 0;
        }
        copy.obj = NULL;
        VsError *err = NULL;
        if (table == api_run_table) {
                (void) api_run_terminal_only(m->obj);
                if (api_run_args_prepare(&a->run, &copy, &err) == 0) {
                        char **argv = api_run_argv(&a->run);
                        if (!argv || !argv[0])
                                __builtin_trap();
                        json_decref(api_run_target(&a->run));
                }
                api_run_args_done(&a->run);
        } else if (table == api_file_write_table) {
                if (api_write_args_prepare(&a->write, m->obj, &copy, &err) == 0 && !a->write.data && a->write.len)
                        __builtin_trap();
                free(a->write.data);
        }
        vs_error_free(err);
        free(copy.raw_owner);
}

static void decode_all(JsonlMsg *m) {
        const char *tool = json_string_value(json_object_get(m->obj, "tool"));
        if (tool) {
                ApiTool t = api_tool_from_name(tool);
                const char *back = api_tool_name(t);
                if (back && strcmp(back, tool) != 0)
                        __builtin_trap();
        }
        const char *code = json_string_value(json_object_get(m->obj, "code"));
        if (code) {
                ApiError e = api_error_from_name(code);
                const char *back = api_error_name(e);
                if (back && strcmp(back, code) != 0 && e != API_OK)
                        __builtin_trap();
                (void) api_error_outcome(e);
                json_decref(api_error_json(e, code));
        }
        for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
                AnyArgs a;
                memset(&a, 0, sizeof a);
                VsError *err = NULL;
                if (json_dispatch(m->obj, tables[i], &a, &err) == 0) {
                        round_trip(tables[i], &a);
                        prepare(tables[i], &a, m);
                }
                vs_error_free(err);
                json_dispatch_done(tables[i], &a);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_each_message(data, size, 64, decode_all);
        return 0;
}
