/* SPDX-License-Identifier: MIT */
/* The jail's git identity file: what it renders reads back, through the
 * project's git config reader (git's syntax), as exactly the name and
 * address given, quotes and backslashes included, and nothing else. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "git-config.h"
#include "jail-home.h"
#include "macro.h"

typedef struct Seen {
        char *name, *email;
        int others;
} Seen;

static int on_key(const char *key, const char *value, void *ctx) {
        Seen *s = ctx;
        if (streq(key, "user.name"))
                s->name = strdup(value);
        else if (streq(key, "user.email"))
                s->email = strdup(value);
        else
                s->others++;
        return 0;
}

static void round_trip(const char *name, const char *email) {
        char *text = jail_git_identity_text(name, email);
        assert_non_null(text);
        Seen s = { 0 };
        assert_int_equal(git_config_parse(text, strlen(text), on_key, &s, NULL), 0);
        assert_string_equal(s.name, name);
        assert_string_equal(s.email, email);
        assert_int_equal(s.others, 0);
        free(s.name);
        free(s.email);
        free(text);
}

static void test_plain(void **state) {
        (void)state;
        round_trip(VS_JAIL_GIT_NAME, VS_JAIL_GIT_EMAIL);
        round_trip("Ada Lovelace", "ada@example.org");
}

static void test_quoting(void **state) {
        (void)state;
        round_trip("Host \"Q\" Person", "a\\b@example.org");
        round_trip("semi; colon # hash [section]", "x@y");
        round_trip("Zoë Ñandú", "zoe@example.org");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain),
                cmocka_unit_test(test_quoting),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
