/* SPDX-License-Identifier: MIT */
/* Unit tests for the TOML 1.0.0 parser: one test per feature or error class,
 * with expected values and error locations worked out from the spec. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strbuf.h"
#include "toml.h"

/* ---- helpers ---- */

static TomlValue *parse_ok_n(const char *s, size_t len) {
        TomlValue *v = NULL;
        VsError *err = NULL;
        int r = toml_parse(s, len, &v, &err);
        if (r < 0)
                fail_msg("unexpected parse error %d: %s", r, vs_error_message(err));
        assert_null(err);
        assert_non_null(v);
        assert_int_equal(v->type, TOML_TABLE);
        return v;
}

static TomlValue *parse_ok(const char *s) {
        return parse_ok_n(s, strlen(s));
}

/* Parses s, expects failure with code and exactly the message msg. */
static void expect_error_n(const char *s, size_t len, int code, const char *msg) {
        TomlValue *v = (TomlValue *)0x1;
        VsError *err = NULL;
        int r = toml_parse(s, len, &v, &err);
        assert_int_equal(r, code);
        assert_ptr_equal(v, (TomlValue *)0x1); /* ret untouched on failure */
        assert_non_null(err);
        if (msg)
                assert_string_equal(vs_error_message(err), msg);
        vs_error_free(err);
}

static void expect_error(const char *s, const char *msg) {
        expect_error_n(s, strlen(s), -EINVAL, msg);
}

static void expect_invalid(const char *s) {
        expect_error_n(s, strlen(s), -EINVAL, NULL);
}

/* Follows a dotted path of bare keys, with [N] for array items. */
static const TomlValue *get(const TomlValue *root, const char *path) {
        const TomlValue *v = root;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, ".")) {
                char *br = strchr(tok, '[');
                if (br)
                        *br = 0;
                if (*tok) {
                        const TomlKeyValue *kv = toml_table_get(v, tok);
                        if (!kv)
                                return NULL;
                        v = kv->value;
                }
                while (br) {
                        size_t i = strtoul(br + 1, NULL, 10);
                        if (v->type != TOML_ARRAY || i >= v->array.n)
                                return NULL;
                        v = v->array.items[i];
                        br = strchr(br + 1, '[');
                }
        }
        return v;
}

static const TomlValue *get_type(const TomlValue *root, const char *path, TomlType type) {
        const TomlValue *v = get(root, path);
        if (!v)
                fail_msg("no value at %s", path);
        if (v->type != type)
                fail_msg("%s is a %s, expected a %s", path, toml_type_name(v->type), toml_type_name(type));
        return v;
}

static int64_t get_int(const TomlValue *root, const char *path) {
        return get_type(root, path, TOML_INTEGER)->integer;
}

static double get_float(const TomlValue *root, const char *path) {
        return get_type(root, path, TOML_FLOAT)->floating;
}

static const char *get_str(const TomlValue *root, const char *path) {
        return get_type(root, path, TOML_STRING)->string.ptr;
}

/* ---- documents ---- */

static void test_empty_document(void **state) {
        TomlValue *v = parse_ok("");
        assert_int_equal(v->table.n, 0);
        toml_free(v);
        v = parse_ok_n(NULL, 0);
        assert_int_equal(v->table.n, 0);
        toml_free(v);
}

static void test_comments_and_blank_lines(void **state) {
        TomlValue *v = parse_ok("# comment\n\n   \t\n# another\ta = 1 # not a key\nkey = 1 # trailing\n#end");
        assert_int_equal(v->table.n, 1);
        assert_int_equal(get_int(v, "key"), 1);
        toml_free(v);
}

static void test_keyval_needs_newline(void **state) {
        expect_error("a = 1 b = 2\n", "1:7: expected the end of the line, found 'b'");
        expect_error("a 1\n", "1:3: expected '=' after a key, found '1'");
        expect_error("a =", "1:4: expected a value, found end of input");
        expect_error("a = \n", "1:5: expected a value, found end of line");
        expect_error("= 1\n", "1:1: expected a key, found '='");
        expect_error("a = hello\n", "1:5: expected a value, found 'h'");
}

/* ---- keys ---- */

static void test_bare_quoted_dotted_keys(void **state) {
        TomlValue *v = parse_ok("bare_key-1 = 1\n"
                                "1234 = 2\n"
                                "\"a.b\" = 3\n"
                                "'x y' = 4\n"
                                "\"\" = 5\n"
                                "site . \"google.com\" = true\n"
                                "3.14 = 6\n");
        assert_int_equal(get_int(v, "bare_key-1"), 1);
        assert_int_equal(get_int(v, "1234"), 2);
        assert_int_equal(toml_table_get(v, "a.b")->value->integer, 3);
        assert_int_equal(toml_table_get(v, "x y")->value->integer, 4);
        assert_int_equal(toml_table_get(v, "")->value->integer, 5);
        const TomlValue *site = get_type(v, "site", TOML_TABLE);
        assert_true(toml_table_get(site, "google.com")->value->boolean);
        assert_int_equal(get_int(v, "3.14"), 6); /* "3" then "14" */
        toml_free(v);
}

static void test_key_with_nul(void **state) {
        TomlValue *v = parse_ok("\"a\\u0000b\" = 1\n");
        assert_int_equal(v->table.items[0].key_len, 3);
        assert_memory_equal(v->table.items[0].key, "a\0b", 4);
        toml_free(v);
}

static void test_invalid_keys(void **state) {
        expect_error("a$ = 1\n", "1:2: expected '=' after a key, found '$'");
        expect_error("a. = 1\n", "1:4: expected a key, found '='");
        expect_error("a..b = 1\n", "1:3: expected a key, found '.'");
        expect_error("\"\"\"a\"\"\" = 1\n", "1:1: a key cannot be a multi-line string");
        expect_error("a\n= 1\n", "1:2: expected '=' after a key, found end of line");
        expect_error("\"a\nb\" = 1\n", "1:1: unterminated string (newline before the closing quote)");
}

static void test_duplicate_keys(void **state) {
        expect_error("a = 1\nb = 2\na = 3\n", "3:1: duplicate key 'a' (first defined at 1:1)");
        /* Bare and quoted spellings are the same key. */
        expect_error("spelling = 1\n\"spelling\" = 2\n", "2:1: duplicate key 'spelling' (first defined at 1:1)");
        expect_error("[t]\n  x.y = 1\n  x.y = 2\n", "3:5: duplicate key 'x.y' (first defined at 2:5)");
        expect_error("\"a b\" = 1\n'a b' = 2\n", "2:1: duplicate key '\"a b\"' (first defined at 1:1)");
}

/* ---- strings ---- */

static void test_basic_string_escapes(void **state) {
        TomlValue *v = parse_ok("s = \"\\b\\t\\n\\f\\r\\\"\\\\ \\u00e9 \\U0001F600 \\u20AC\"\n");
        assert_string_equal(get_str(v, "s"), "\b\t\n\f\r\"\\ \xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac");
        toml_free(v);
}

static void test_string_with_nul_escape(void **state) {
        TomlValue *v = parse_ok("s = \"a\\u0000b\"\n");
        const TomlValue *s = get_type(v, "s", TOML_STRING);
        assert_int_equal(s->string.len, 3);
        assert_memory_equal(s->string.ptr, "a\0b", 4);
        toml_free(v);
}

static void test_empty_strings(void **state) {
        TomlValue *v = parse_ok("a = \"\"\nb = ''\nc = \"\"\"\"\"\"\nd = ''''''\n");
        const char *keys[] = { "a", "b", "c", "d" };
        for (size_t i = 0; i < 4; i++) {
                const TomlValue *s = get_type(v, keys[i], TOML_STRING);
                assert_int_equal(s->string.len, 0);
                assert_string_equal(s->string.ptr, "");
        }
        toml_free(v);
}

static void test_invalid_escapes(void **state) {
        expect_error("a = \"\\x41\"\n", "1:6: invalid escape sequence '\\x'");
        expect_error("a = \"\\e\"\n", "1:6: invalid escape sequence '\\e'");
        expect_error("a = \"\\u12\"\n", "1:6: escape \\u needs exactly 4 hexadecimal digits");
        expect_error("a = \"\\U0001F60\"\n", "1:6: escape \\U needs exactly 8 hexadecimal digits");
        expect_error("a = \"x \\ \"\n", "1:8: invalid escape sequence");
}

static void test_escape_surrogates_and_range(void **state) {
        expect_error("a = \"\\uD800\"\n", "1:6: escape \\uD800 is not a Unicode scalar value");
        expect_error("a = \"\\uDFFF\"\n", "1:6: escape \\uDFFF is not a Unicode scalar value");
        expect_error("a = \"\\U00110000\"\n", "1:6: escape \\U00110000 is not a Unicode scalar value");
        TomlValue *v = parse_ok("a = \"\\U0010FFFF\\uD7FF\\uE000\"\n");
        assert_string_equal(get_str(v, "a"), "\xf4\x8f\xbf\xbf\xed\x9f\xbf\xee\x80\x80");
        toml_free(v);
}

static void test_literal_strings(void **state) {
        TomlValue *v = parse_ok("a = 'C:\\Users\\nodejs\\templates'\nb = '<\\i\\c*\\s*>'\nc = 'tab\there'\n");
        assert_string_equal(get_str(v, "a"), "C:\\Users\\nodejs\\templates");
        assert_string_equal(get_str(v, "b"), "<\\i\\c*\\s*>");
        assert_string_equal(get_str(v, "c"), "tab\there");
        toml_free(v);
        expect_error("a = 'no\nend'\n", "1:5: unterminated string (newline before the closing quote)");
        expect_error("a = 'abc", "1:5: unterminated string");
}

static void test_multiline_basic(void **state) {
        TomlValue *v = parse_ok("a = \"\"\"\nRoses are red\nViolets are blue\"\"\"\n"
                                "b = \"\"\"\\\n  The quick \\\n\n   brown fox.\\\n   \"\"\"\n"
                                "c = \"\"\"Here are two quotation marks: \"\". Simple enough.\"\"\"\n"
                                "d = \"\"\"Here are fifteen quotation marks: \"\"\\\"\"\"\\\"\"\"\\\"\"\"\\\"\"\"\\\".\"\"\"\n"
                                "e = \"\"\"\"This,\" she said, \"is just a pointless statement.\"\"\"\"\n"
                                "f = \"\"\"line-end backslash with trailing spaces \\   \n   ok\"\"\"\n");
        assert_string_equal(get_str(v, "a"), "Roses are red\nViolets are blue");
        assert_string_equal(get_str(v, "b"), "The quick brown fox.");
        assert_string_equal(get_str(v, "c"), "Here are two quotation marks: \"\". Simple enough.");
        assert_string_equal(get_str(v, "d"), "Here are fifteen quotation marks: \"\"\"\"\"\"\"\"\"\"\"\"\"\"\".");
        assert_string_equal(get_str(v, "e"), "\"This,\" she said, \"is just a pointless statement.\"");
        assert_string_equal(get_str(v, "f"), "line-end backslash with trailing spaces ok");
        toml_free(v);
}

static void test_multiline_literal(void **state) {
        TomlValue *v = parse_ok("regex2 = '''I [dw]on't need \\d{2} apples'''\n"
                                "lines  = '''\nThe first newline is\ntrimmed in raw strings.\n   All other whitespace\n   is preserved.\n'''\n"
                                "quot15 = '''Here are fifteen quotation marks: \"\"\"\"\"\"\"\"\"\"\"\"\"\"\"'''\n"
                                "str = ''''That,' she said, 'is still pointless.''''\n");
        assert_string_equal(get_str(v, "regex2"), "I [dw]on't need \\d{2} apples");
        assert_string_equal(get_str(v, "lines"),
                            "The first newline is\ntrimmed in raw strings.\n   All other whitespace\n   is preserved.\n");
        assert_string_equal(get_str(v, "quot15"), "Here are fifteen quotation marks: \"\"\"\"\"\"\"\"\"\"\"\"\"\"\"");
        assert_string_equal(get_str(v, "str"), "'That,' she said, 'is still pointless.'");
        toml_free(v);
}

static void test_multiline_errors(void **state) {
        expect_error("a = \"\"\"abc\n", "1:5: unterminated string");
        expect_error("a = '''abc\n\n", "1:5: unterminated string");
        /* Six quotes: three of them would be content, which needs escaping. */
        expect_error("a = \"\"\"x\"\"\"\"\"\"\n", "1:12: three quotes in a row end the string here; escape them");
        expect_error("a = '''x''''''\n", "1:12: three quotes in a row end the string here; escape them");
        expect_error("a = \"\"\"x\\ y\"\"\"\n", "1:9: a line-ending backslash must be followed only by whitespace");
}

/* ---- integers ---- */

static void test_integers(void **state) {
        TomlValue *v = parse_ok("a = +99\nb = 42\nc = 0\nd = -17\ne = 1_000\nf = 5_349_221\ng = 1_2_3_4_5\n"
                                "h = +0\ni = -0\n"
                                "max = 9223372036854775807\nmin = -9223372036854775808\n");
        assert_int_equal(get_int(v, "a"), 99);
        assert_int_equal(get_int(v, "b"), 42);
        assert_int_equal(get_int(v, "c"), 0);
        assert_int_equal(get_int(v, "d"), -17);
        assert_int_equal(get_int(v, "e"), 1000);
        assert_int_equal(get_int(v, "f"), 5349221);
        assert_int_equal(get_int(v, "g"), 12345);
        assert_int_equal(get_int(v, "h"), 0);
        assert_int_equal(get_int(v, "i"), 0);
        assert_true(get_int(v, "max") == INT64_MAX);
        assert_true(get_int(v, "min") == INT64_MIN);
        toml_free(v);
}

static void test_hex_oct_bin(void **state) {
        TomlValue *v = parse_ok("h1 = 0xDEADBEEF\nh2 = 0xdeadbeef\nh3 = 0xdead_beef\no1 = 0o01234567\no2 = 0o755\n"
                                "b1 = 0b11010110\nb2 = 0b1_0\nhmax = 0x7FFFFFFFFFFFFFFF\nz = 0x0\n");
        assert_int_equal(get_int(v, "h1"), 0xDEADBEEF);
        assert_int_equal(get_int(v, "h2"), 0xDEADBEEF);
        assert_int_equal(get_int(v, "h3"), 0xDEADBEEF);
        assert_int_equal(get_int(v, "o1"), 01234567);
        assert_int_equal(get_int(v, "o2"), 0755);
        assert_int_equal(get_int(v, "b1"), 214);
        assert_int_equal(get_int(v, "b2"), 2);
        assert_true(get_int(v, "hmax") == INT64_MAX);
        assert_int_equal(get_int(v, "z"), 0);
        toml_free(v);
}

static void test_integer_overflow(void **state) {
        expect_error("a = 9223372036854775808\n", "1:5: integer '9223372036854775808' does not fit in 64 bits");
        expect_error("a = -9223372036854775809\n", "1:5: integer '-9223372036854775809' does not fit in 64 bits");
        expect_error("a = 0x8000000000000000\n", "1:5: integer '0x8000000000000000' does not fit in 64 bits");
        expect_error("a = 0b1111111111111111111111111111111111111111111111111111111111111111\n", NULL);
        expect_invalid("a = 99999999999999999999999999\n");
}

static void test_integer_syntax_errors(void **state) {
        expect_error("a = 012\n", "1:5: leading zeros are not allowed in '012'");
        expect_error("a = -01\n", "1:5: leading zeros are not allowed in '-01'");
        expect_error("a = 1__2\n", "1:5: an underscore must sit between two digits in '1__2'");
        expect_error("a = 1_\n", "1:5: an underscore must sit between two digits in '1_'");
        expect_error("a = _1\n", "1:5: expected a value, found '_'");
        expect_error("a = +0x1\n", "1:5: a sign is not allowed on a hexadecimal integer");
        expect_error("a = -0o7\n", "1:5: a sign is not allowed on an octal integer");
        expect_error("a = 0x_1\n", "1:5: invalid hexadecimal integer '0x_1'");
        expect_error("a = 0b102\n", "1:5: invalid binary integer '0b102'");
        expect_error("a = 0o8\n", "1:5: invalid octal integer '0o8'");
        expect_invalid("a = 0X1F\n");
        expect_invalid("a = 0x\n");
        expect_invalid("a = 1 2\n");
        expect_invalid("a = +\n");
        expect_invalid("a = 1a\n");
}

/* ---- floats ---- */

static void test_floats(void **state) {
        TomlValue *v = parse_ok("f1 = +1.0\nf2 = 3.1415\nf3 = -0.01\nf4 = 5e+22\nf5 = 1e06\nf6 = -2E-2\n"
                                "f7 = 6.626e-34\nf8 = 224_617.445_991_228\nf9 = 0e0\nf10 = -0.0\nf11 = 1e1_0\n");
        assert_true(get_float(v, "f1") == 1.0);
        assert_true(get_float(v, "f2") == 3.1415);
        assert_true(get_float(v, "f3") == -0.01);
        assert_true(get_float(v, "f4") == 5e22);
        assert_true(get_float(v, "f5") == 1e6);
        assert_true(get_float(v, "f6") == -2e-2);
        assert_true(get_float(v, "f7") == 6.626e-34);
        assert_true(get_float(v, "f8") == 224617.445991228);
        assert_true(get_float(v, "f9") == 0.0);
        assert_true(get_float(v, "f10") == 0.0 && signbit(get_float(v, "f10")));
        assert_true(get_float(v, "f11") == 1e10);
        toml_free(v);
}

static void test_float_specials(void **state) {
        TomlValue *v = parse_ok("a = inf\nb = +inf\nc = -inf\nd = nan\ne = +nan\nf = -nan\ng = [inf,-inf]\n");
        assert_true(isinf(get_float(v, "a")) && get_float(v, "a") > 0);
        assert_true(isinf(get_float(v, "b")) && get_float(v, "b") > 0);
        assert_true(isinf(get_float(v, "c")) && get_float(v, "c") < 0);
        assert_true(isnan(get_float(v, "d")));
        assert_true(isnan(get_float(v, "e")));
        assert_true(isnan(get_float(v, "f")));
        assert_true(isinf(get_float(v, "g[1]")) && get_float(v, "g[1]") < 0);
        toml_free(v);
        expect_invalid("a = Inf\n");
        expect_invalid("a = NaN\n");
        expect_invalid("a = infinity\n");
        expect_invalid("a = in\n");
        expect_invalid("a = na\n");
}

static void test_float_syntax_errors(void **state) {
        expect_error("a = 1.\n", "1:5: a decimal point must be followed by digits in '1.'");
        expect_error("a = 1.e5\n", "1:5: a decimal point must be followed by digits in '1.e5'");
        expect_error("a = 1e\n", "1:5: an exponent needs digits in '1e'");
        expect_error("a = 1e+\n", "1:5: an exponent needs digits in '1e+'");
        expect_error("a = 1_.5\n", "1:5: an underscore must sit between two digits in '1_.5'");
        expect_error("a = 1._5\n", "1:5: a decimal point must be followed by digits in '1._5'");
        expect_error("a = 03.14\n", "1:5: leading zeros are not allowed in '03.14'");
        expect_error("a = 1.5.3\n", "1:5: invalid number '1.5.3'");
        expect_invalid("a = .5\n");
        expect_invalid("a = -.5\n");
        expect_invalid("a = 1e5.5\n");
        expect_invalid("a = 1e_5\n");
        expect_error("a = 1e400\n", "1:5: float '1e400' is out of range");
}

/* ---- booleans ---- */

static void test_booleans(void **state) {
        TomlValue *v = parse_ok("t = true\nf = false\n");
        assert_true(get_type(v, "t", TOML_BOOL)->boolean);
        assert_false(get_type(v, "f", TOML_BOOL)->boolean);
        toml_free(v);
        expect_invalid("a = True\n");
        expect_invalid("a = truex\n");
        expect_invalid("a = fals\n");
        expect_invalid("a = t\n");
}

/* ---- date-times ---- */

static void test_datetime_kinds(void **state) {
        TomlValue *v = parse_ok("odt1 = 1979-05-27T07:32:00Z\n"
                                "odt2 = 1979-05-27T00:32:00-07:00\n"
                                "odt3 = 1979-05-27T00:32:00.999999+07:00\n"
                                "odt4 = 1979-05-27 07:32:00z\n"
                                "odt5 = 1979-05-27t07:32:00Z\n"
                                "ldt1 = 1979-05-27T07:32:00\n"
                                "ldt2 = 1979-05-27 00:32:00.999999\n"
                                "ld1 = 1979-05-27\n"
                                "lt1 = 07:32:00\n"
                                "lt2 = 00:32:00.999999\n"
                                "ld2 = 1979-05-27 # a date, then a comment\n");
        assert_string_equal(get_type(v, "odt1", TOML_DATETIME)->datetime, "1979-05-27T07:32:00Z");
        assert_string_equal(get_type(v, "odt2", TOML_DATETIME)->datetime, "1979-05-27T00:32:00-07:00");
        assert_string_equal(get_type(v, "odt3", TOML_DATETIME)->datetime, "1979-05-27T00:32:00.999999+07:00");
        assert_string_equal(get_type(v, "odt4", TOML_DATETIME)->datetime, "1979-05-27T07:32:00Z");
        assert_string_equal(get_type(v, "odt5", TOML_DATETIME)->datetime, "1979-05-27T07:32:00Z");
        assert_string_equal(get_type(v, "ldt1", TOML_DATETIME_LOCAL)->datetime, "1979-05-27T07:32:00");
        assert_string_equal(get_type(v, "ldt2", TOML_DATETIME_LOCAL)->datetime, "1979-05-27T00:32:00.999999");
        assert_string_equal(get_type(v, "ld1", TOML_DATE_LOCAL)->datetime, "1979-05-27");
        assert_string_equal(get_type(v, "lt1", TOML_TIME_LOCAL)->datetime, "07:32:00");
        assert_string_equal(get_type(v, "lt2", TOML_TIME_LOCAL)->datetime, "00:32:00.999999");
        assert_string_equal(get_type(v, "ld2", TOML_DATE_LOCAL)->datetime, "1979-05-27");
        toml_free(v);
}

static void test_date_validation(void **state) {
        TomlValue *v = parse_ok("a = 2024-02-29\nb = 2000-02-29\nc = 1999-12-31\nd = 2021-04-30\n");
        toml_free(v);
        expect_error("a = 2023-02-29\n", "1:5: invalid date: day 29 is out of range for 2023-02");
        expect_error("a = 1900-02-29\n", "1:5: invalid date: day 29 is out of range for 1900-02");
        expect_error("a = 2021-04-31\n", "1:5: invalid date: day 31 is out of range for 2021-04");
        expect_error("a = 2021-01-00\n", "1:5: invalid date: day 00 is out of range for 2021-01");
        expect_error("a = 2021-13-01\n", "1:5: invalid date: month 13 is out of range");
        expect_error("a = 2021-00-01\n", "1:5: invalid date: month 00 is out of range");
        expect_error("a = 2021-1-01\n", "1:5: invalid date: expected YYYY-MM-DD");
        expect_invalid("a = 10000-01-01\n");
        expect_invalid("a = 2021-01-01x\n");
}

static void test_time_validation(void **state) {
        TomlValue *v = parse_ok("a = 23:59:59\nb = 1990-12-31T23:59:60Z\nc = 00:00:00.1\n");
        toml_free(v);
        expect_error("a = 24:00:00\n", "1:5: invalid time 24:00:00: out of range");
        expect_error("a = 12:60:00\n", "1:5: invalid time 12:60:00: out of range");
        expect_error("a = 12:00:61\n", "1:5: invalid time 12:00:61: out of range");
        expect_error("a = 12:00\n", "1:5: invalid time: expected HH:MM:SS (seconds are required)");
        expect_error("a = 12:00:00.\n", "1:5: invalid time: a '.' must be followed by digits");
        expect_error("a = 1979-05-27T7:32:00Z\n", "1:5: invalid time: expected HH:MM:SS");
        expect_error("a = 1979-05-27T\n", "1:5: invalid time: expected HH:MM:SS");
        expect_invalid("a = 07:32:00Z\n");      /* a local time has no offset */
        expect_invalid("a = 07:32:00+01:00\n");
}

static void test_offset_validation(void **state) {
        expect_error("a = 1979-05-27T00:32:00+24:00\n", "1:5: invalid time offset: out of range");
        expect_error("a = 1979-05-27T00:32:00-07:60\n", "1:5: invalid time offset: out of range");
        expect_error("a = 1979-05-27T00:32:00+0700\n", "1:5: invalid time offset: expected +HH:MM");
        expect_error("a = 1979-05-27T00:32:00-7:00\n", "1:5: invalid time offset: expected +HH:MM");
        expect_error("a = 1979-05-27T00:32:00+07:\n", "1:5: invalid time offset: expected +HH:MM");
}

/* ---- arrays ---- */

static void test_arrays(void **state) {
        TomlValue *v = parse_ok("integers = [ 1, 2, 3 ]\n"
                                "nested_mixed = [ [ 1, 2 ], [\"a\", 'b', \"\"\"c\"\"\"], [] ]\n"
                                "mixed = [ 0.1, 0.2, 1, \"x\", { a = 1 }, 1979-05-27 ]\n"
                                "multi = [\n  1, # one\n\n  2, # two\n]\n"
                                "empty = []\n"
                                "spaced = [ ]\n");
        const TomlValue *a = get_type(v, "integers", TOML_ARRAY);
        assert_int_equal(a->array.n, 3);
        assert_int_equal(get_int(v, "integers[2]"), 3);
        assert_int_equal(get_type(v, "nested_mixed", TOML_ARRAY)->array.n, 3);
        assert_string_equal(get_str(v, "nested_mixed[1][2]"), "c");
        assert_int_equal(get_type(v, "nested_mixed[2]", TOML_ARRAY)->array.n, 0);
        assert_int_equal(get_int(v, "mixed[4].a"), 1);
        assert_int_equal(get(v, "mixed[5]")->type, TOML_DATE_LOCAL);
        assert_int_equal(get_type(v, "multi", TOML_ARRAY)->array.n, 2);
        assert_int_equal(get_int(v, "multi[1]"), 2);
        assert_int_equal(get_type(v, "empty", TOML_ARRAY)->array.n, 0);
        assert_int_equal(get_type(v, "spaced", TOML_ARRAY)->array.n, 0);
        toml_free(v);
}

static void test_array_errors(void **state) {
        expect_error("a = [1 2]\n", "1:8: expected ',' or ']' in array, found '2'");
        expect_error("a = [1,", "1:5: unterminated array");
        expect_error("a = [1\n", "1:5: unterminated array");
        expect_error("a = [,]\n", "1:6: expected a value, found ','");
        expect_error("a = [1,,2]\n", "1:8: expected a value, found ','");
        expect_error("a = [1] ]\n", "1:9: expected the end of the line, found ']'");
}

/* ---- inline tables ---- */

static void test_inline_tables(void **state) {
        TomlValue *v = parse_ok("name = { first = \"Tom\", last = \"Preston-Werner\" }\n"
                                "point = {x=1,y=2}\n"
                                "animal = { type.name = \"pug\", type.size = 'small' }\n"
                                "nested = { a = { b = { c = [1, {d = true}] } } }\n"
                                "empty = {}\n");
        assert_string_equal(get_str(v, "name.last"), "Preston-Werner");
        assert_int_equal(get_int(v, "point.y"), 2);
        assert_string_equal(get_str(v, "animal.type.name"), "pug");
        assert_string_equal(get_str(v, "animal.type.size"), "small");
        assert_true(get_type(v, "nested.a.b.c[1].d", TOML_BOOL)->boolean);
        assert_int_equal(get_type(v, "empty", TOML_TABLE)->table.n, 0);
        toml_free(v);
}

static void test_inline_table_syntax_errors(void **state) {
        expect_error("a = {x = 1,}\n", "1:12: trailing comma not allowed in an inline table");
        expect_error("a = {x = 1,\ny = 2}\n", "1:12: an inline table must be on one line (opened at 1:5)");
        expect_error("a = {\n}\n", "1:6: an inline table must be on one line (opened at 1:5)");
        expect_error("a = {x = 1 y = 2}\n", "1:12: expected ',' or '}' in inline table, found 'y'");
        expect_error("a = {x = 1, x = 2}\n", "1:13: duplicate key 'x' (first defined at 1:6)");
        expect_error("a = {,}\n", "1:6: expected a key, found ','");
        expect_invalid("a = {x = 1 # c\n}\n");
}

static void test_inline_table_immutable(void **state) {
        expect_error("a = {x = 1}\n[a]\n", "2:1: cannot define table 'a': it is already an inline table (defined at 1:1)");
        expect_error("a = {x = 1}\na.y = 2\n", "2:1: cannot add keys to inline table 'a' (defined at 1:1)");
        expect_error("a = {x = {y = 1}}\n[a.x.z]\n", "2:2: cannot add keys to inline table 'a' (defined at 1:1)");
        expect_error("a = {x = {y = 1}, x.z = 2}\n", "1:19: cannot add keys to inline table 'x' (defined at 1:6)");
        expect_error("[t]\na = {}\n[t.a.b]\n", "3:4: cannot add keys to inline table 't.a' (defined at 2:1)");
}

/* ---- tables ---- */

static void test_tables(void **state) {
        TomlValue *v = parse_ok("top = 0\n"
                                "[table-1]\nkey1 = \"some string\"\nkey2 = 123\n"
                                "[table-2]\nkey1 = \"another string\"\n"
                                "[dog.\"tater.man\"]\ntype.name = \"pug\"\n"
                                "[ j . \"ʞ\" . 'l' ]\nx = 1\n"
                                "[x.y.z.w]\n"
                                "[x]\nq = 2\n");
        assert_int_equal(get_int(v, "top"), 0);
        assert_int_equal(get_int(v, "table-1.key2"), 123);
        assert_string_equal(get_str(v, "table-2.key1"), "another string");
        const TomlValue *dog = get_type(v, "dog", TOML_TABLE);
        const TomlValue *tater = toml_table_get(dog, "tater.man")->value;
        assert_string_equal(get_str(tater, "type.name"), "pug");
        const TomlValue *j = get_type(v, "j", TOML_TABLE);
        assert_int_equal(get_int(toml_table_get(j, "ʞ")->value, "l.x"), 1);
        assert_int_equal(get_type(v, "x.y.z.w", TOML_TABLE)->table.n, 0);
        assert_int_equal(get_int(v, "x.q"), 2);
        /* Definition order is kept. */
        assert_string_equal(v->table.items[0].key, "top");
        assert_string_equal(v->table.items[1].key, "table-1");
        toml_free(v);
}

static void test_table_header_errors(void **state) {
        expect_error("[]\n", "1:2: expected a key, found ']'");
        expect_error("[a\n", "1:3: expected ']' to close the table header, found end of line");
        expect_error("[a]b = 1\n", "1:4: expected the end of the line, found 'b'");
        expect_error("[[a]\n", "1:4: expected ']]' to close the table header, found ']'");
        expect_error("[[a] ]\n", "1:4: expected ']]' to close the table header, found ']'");
        expect_error("[ [a]]\n", "1:3: expected a key, found '['");
        expect_error("[a.]\n", "1:4: expected a key, found ']'");
        expect_error("[a]\n[a]\n", "2:1: table 'a' already defined at 1:1");
        expect_error("[a]\nb = 1\n[a.b]\n", "3:1: cannot define table 'a.b': it is already an integer (defined at 2:1)");
        expect_error("a = 1\n[a.b]\n", "2:2: cannot use 'a' as a table: it is already an integer (defined at 1:1)");
}

static void test_super_table_after_sub(void **state) {
        TomlValue *v = parse_ok("[x.y.z.w]\na = 1\n[x]\nb = 2\n");
        assert_int_equal(get_int(v, "x.y.z.w.a"), 1);
        assert_int_equal(get_int(v, "x.b"), 2);
        /* The table took the position of its [header] once defined. */
        const TomlValue *x = get(v, "x");
        assert_int_equal(x->line, 3);
        assert_int_equal(x->col, 1);
        toml_free(v);
        expect_error("[x.y]\n[x]\n[x]\n", "3:1: table 'x' already defined at 2:1");
}

static void test_dotted_keys_define_tables(void **state) {
        TomlValue *v = parse_ok("fruit.apple.color = \"red\"\nfruit.apple.taste.sweet = true\n"
                                "[fruit.apple.texture]\nsmooth = true\n");
        assert_string_equal(get_str(v, "fruit.apple.color"), "red");
        assert_true(get_type(v, "fruit.apple.taste.sweet", TOML_BOOL)->boolean);
        assert_true(get_type(v, "fruit.apple.texture.smooth", TOML_BOOL)->boolean);
        toml_free(v);
        /* The spec's own examples of what is invalid. */
        expect_error("[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n[fruit.apple]\n",
                     "4:1: table 'fruit.apple' already defined by dotted keys at 2:1");
        expect_error("[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n[fruit.apple.taste]\n",
                     "4:1: table 'fruit.apple.taste' already defined by dotted keys at 3:7");
        expect_error("a.b = 1\n[a]\n", "2:1: table 'a' already defined by dotted keys at 1:1");
}

static void test_dotted_key_over_value(void **state) {
        expect_error("a = 1\na.b = 2\n", "2:1: cannot use 'a' as a table: it is already an integer (defined at 1:1)");
        expect_error("a.b.c = 1\na.b = 2\n", "2:3: duplicate key 'a.b' (first defined at 1:3)");
        expect_error("a = [1]\na.b = 2\n", "2:1: cannot use 'a' as a table: it is already an array (defined at 1:1)");
        expect_error("a = \"s\"\n[a]\n", "2:1: cannot define table 'a': it is already a string (defined at 1:1)");
}

static void test_dotted_keys_into_header_table(void **state) {
        expect_error("[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n",
                     "4:3: cannot add keys to table 'b.c' with dotted keys here: it was defined at 1:1");
        expect_error("[[a.b]]\n[a]\nb.y = 2\n",
                     "3:1: cannot use 'b' as a table: it is already an array of tables (defined at 1:5)");
        /* A dotted-key table from an earlier section is closed too. */
        expect_error("[a]\nb.c = 1\n[a.b.d]\n[a]\n", "4:1: table 'a' already defined at 1:1");
        TomlValue *v = parse_ok("[a]\nb.c = 1\nb.d = 2\n");
        assert_int_equal(get_int(v, "a.b.d"), 2);
        toml_free(v);
}

/* ---- arrays of tables ---- */

static void test_array_of_tables(void **state) {
        TomlValue *v = parse_ok("[[products]]\nname = \"Hammer\"\nsku = 738594937\n\n"
                                "[[products]]  # empty table within the array\n\n"
                                "[[products]]\nname = \"Nail\"\ncolor = \"gray\"\n");
        const TomlValue *p = get_type(v, "products", TOML_ARRAY);
        assert_int_equal(p->array.n, 3);
        assert_string_equal(get_str(v, "products[0].name"), "Hammer");
        assert_int_equal(get_type(v, "products[1]", TOML_TABLE)->table.n, 0);
        assert_string_equal(get_str(v, "products[2].color"), "gray");
        toml_free(v);
}

static void test_array_of_tables_nested(void **state) {
        TomlValue *v = parse_ok("[[fruits]]\nname = \"apple\"\n"
                                "[fruits.physical]\ncolor = \"red\"\n"
                                "[[fruits.varieties]]\nname = \"red delicious\"\n"
                                "[[fruits.varieties]]\nname = \"granny smith\"\n"
                                "[[fruits]]\nname = \"banana\"\n"
                                "[[fruits.varieties]]\nname = \"plantain\"\n");
        assert_string_equal(get_str(v, "fruits[0].physical.color"), "red");
        assert_string_equal(get_str(v, "fruits[0].varieties[1].name"), "granny smith");
        assert_string_equal(get_str(v, "fruits[1].name"), "banana");
        assert_int_equal(get_type(v, "fruits[1].varieties", TOML_ARRAY)->array.n, 1);
        toml_free(v);
}

static void test_array_of_tables_errors(void **state) {
        expect_error("a = [1]\n[[a]]\n", "2:1: cannot append to static array 'a' (defined at 1:1)");
        expect_error("a = []\n[[a]]\n", "2:1: cannot append to static array 'a' (defined at 1:1)");
        expect_error("[[a]]\n[a]\n", "2:1: cannot define table 'a': it is already an array of tables (defined at 1:3)");
        expect_error("[a]\n[[a]]\n", "2:1: cannot define array of tables 'a': it is already a table (defined at 1:2)");
        expect_error("a = 1\n[[a]]\n", "2:1: cannot define array of tables 'a': it is already an integer (defined at 1:1)");
        /* [fruit.physical] is defined in the current element, then redefined. */
        expect_error("[[fruits]]\nname = \"apple\"\n[[fruits.varieties]]\nname = \"red\"\n[fruits.varieties]\n",
                     "5:1: cannot define table 'fruits.varieties': it is already an array of tables (defined at 3:10)");
        expect_error("[[fruits]]\n[fruits.physical]\n[fruits.physical]\n",
                     "3:1: table 'fruits.physical' already defined at 2:1");
        expect_error("a = [{b = 1}]\n[a.c]\n", "2:2: cannot use 'a' as a table: it is already an array (defined at 1:1)");
}

/* ---- positions ---- */

static void test_positions(void **state) {
        TomlValue *v = parse_ok("\n  key = \"v\"\n[t]\nx = [1,\n     22]\n  [[arr]]\n  y.z = {q = 7}\n");
        const TomlKeyValue *kv = toml_table_get(v, "key");
        assert_int_equal(kv->line, 2);
        assert_int_equal(kv->col, 3);
        assert_int_equal(kv->value->line, 2);
        assert_int_equal(kv->value->col, 9);

        kv = toml_table_get(v, "t");
        assert_int_equal(kv->line, 3);
        assert_int_equal(kv->col, 2);
        assert_int_equal(kv->value->line, 3);
        assert_int_equal(kv->value->col, 1);

        const TomlValue *x = get(v, "t.x");
        assert_int_equal(x->line, 4);
        assert_int_equal(x->col, 5);
        assert_int_equal(x->array.items[0]->line, 4);
        assert_int_equal(x->array.items[0]->col, 6);
        assert_int_equal(x->array.items[1]->line, 5);
        assert_int_equal(x->array.items[1]->col, 6);

        const TomlValue *el = get(v, "arr[0]");
        assert_int_equal(el->line, 6);
        assert_int_equal(el->col, 3);
        kv = toml_table_get(el, "y");
        assert_int_equal(kv->line, 7);
        assert_int_equal(kv->col, 3);
        kv = toml_table_get(kv->value, "z");
        assert_int_equal(kv->line, 7);
        assert_int_equal(kv->col, 5);
        assert_int_equal(kv->value->col, 9);
        kv = toml_table_get(kv->value, "q");
        assert_int_equal(kv->col, 10);
        assert_int_equal(kv->value->col, 14);
        toml_free(v);
}

static void test_positions_after_multiline_string(void **state) {
        expect_error("a = \"\"\"\none\ntwo\"\"\"\nb = 1\nb = 2\n", "5:1: duplicate key 'b' (first defined at 4:1)");
        expect_error("a = '''\n\n'''\n  x = [\n\n ?]\n", "6:2: expected a value, found '?'");
}

/* ---- text-level rules ---- */

static void test_control_characters(void **state) {
        expect_error("a = \"x\x01\"\n", "1:7: control character U+0001 is not allowed");
        expect_error("# comment \x7f\n", "1:11: control character U+007F is not allowed");
        expect_error("a = 'x\x1f'\n", "1:7: control character U+001F is not allowed");
        expect_error_n("a = \"\0\"\n", 8, -EINVAL, "1:6: control character U+0000 is not allowed");
        expect_error("a = \"\"\"\n\x0b\"\"\"\n", "2:1: control character U+000B is not allowed");
        TomlValue *v = parse_ok("a = \"tab\there\" # tab\tin comment\n");
        assert_string_equal(get_str(v, "a"), "tab\there");
        toml_free(v);
}

static void test_crlf(void **state) {
        TomlValue *v = parse_ok("a = 1\r\nb = \"\"\"\r\nx\r\ny\"\"\"\r\n[t]\r\nc = [\r\n1,\r\n]\r\nd = '''\r\nz\r\n'''\r\n"
                                "e = \"\"\"\\\r\n   w\"\"\"\r\n");
        assert_int_equal(get_int(v, "a"), 1);
        assert_string_equal(get_str(v, "b"), "x\ny");
        assert_int_equal(get_int(v, "t.c[0]"), 1);
        assert_string_equal(get_str(v, "t.d"), "z\n");
        assert_string_equal(get_str(v, "t.e"), "w");
        assert_int_equal(toml_table_get(get(v, "t"), "c")->line, 6);
        toml_free(v);
        expect_error("a = 1\r\nb = 2\r\na = 3\r\n", "3:1: duplicate key 'a' (first defined at 1:1)");
}

static void test_bare_carriage_return(void **state) {
        expect_error("a = 1\rb = 2\n", "1:6: carriage return not followed by line feed");
        expect_error("a = \"x\ry\"\n", "1:7: carriage return not followed by line feed");
        expect_error("# c\r", "1:4: carriage return not followed by line feed");
}

static void test_utf8_validation(void **state) {
        expect_error("a = \"\xc0\xaf\"\n", "1:6: invalid UTF-8 (byte 0xc0)");
        expect_error("a = \"\xe0\x80\xaf\"\n", "1:6: invalid UTF-8 (overlong encoding)");
        expect_error("a = \"\xf0\x80\x80\xaf\"\n", "1:6: invalid UTF-8 (overlong encoding)");
        expect_error("a = \"\xed\xa0\x80\"\n", "1:6: invalid UTF-8 (encoded surrogate U+D800)");
        expect_error("a = \"\xf4\x90\x80\x80\"\n", "1:6: invalid UTF-8 (code point beyond U+10FFFF)");
        expect_error("a = \"\xf5\x80\x80\x80\"\n", "1:6: invalid UTF-8 (byte 0xf5)");
        expect_error("a = \"\xc3\"\n", "1:6: invalid UTF-8 (byte 0x22)");
        expect_error("a = 1\n# \xe2\x82", "2:3: invalid UTF-8 (truncated sequence)");
        expect_error("\xff", "1:1: invalid UTF-8 (byte 0xff)");
        TomlValue *v = parse_ok("a = \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\" # \xe2\x82\xac\n\"\xc3\xa9\" = 1\n");
        assert_string_equal(get_str(v, "a"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
        assert_non_null(toml_table_get(v, "\xc3\xa9"));
        toml_free(v);
}

static void test_bom(void **state) {
        TomlValue *v = parse_ok("\xef\xbb\xbf" "a = 1\n");
        assert_int_equal(get_int(v, "a"), 1);
        /* Columns count from after the mark. */
        assert_int_equal(toml_table_get(v, "a")->col, 1);
        assert_int_equal(toml_table_get(v, "a")->value->col, 5);
        toml_free(v);
        expect_error("a = 1\n\xef\xbb\xbf" "b = 2\n", "2:1: expected a key, found byte 0xef");
        v = parse_ok("a = \"\xef\xbb\xbf\"\n"); /* U+FEFF is fine inside a string */
        assert_string_equal(get_str(v, "a"), "\xef\xbb\xbf");
        toml_free(v);
}

/* ---- limits ---- */

static void test_input_limit(void **state) {
        size_t n = TOML_MAX_INPUT + 1;
        char *big = malloc(n);
        assert_non_null(big);
        memset(big, '\n', n);
        expect_error_n(big, n, -E2BIG, "1:1: input is 8388609 bytes, more than the limit of 8388608");
        /* Exactly at the limit is accepted. */
        TomlValue *v = parse_ok_n(big, n - 1);
        toml_free(v);
        free(big);
}

static char *nested_arrays(size_t depth) {
        char *s = malloc(depth * 2 + 8);
        assert_non_null(s);
        strcpy(s, "a = ");
        memset(s + 4, '[', depth);
        memset(s + 4 + depth, ']', depth);
        s[4 + 2 * depth] = 0;
        return s;
}

static void test_depth_limit_arrays(void **state) {
        char *s = nested_arrays(TOML_MAX_DEPTH);
        TomlValue *v = parse_ok(s);
        toml_free(v);
        free(s);
        s = nested_arrays(TOML_MAX_DEPTH + 1);
        /* The 65th '[' is at column 4 + 65. */
        expect_error_n(s, strlen(s), -E2BIG, "1:69: nesting deeper than 64 levels");
        free(s);
        s = nested_arrays(200000); /* hostile: must fail cleanly, not blow the stack */
        expect_error_n(s, strlen(s), -E2BIG, "1:69: nesting deeper than 64 levels");
        free(s);
}

static void test_depth_limit_inline_tables(void **state) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        assert_int_equal(strbuf_appends(&b, "a = "), 0);
        for (int i = 0; i < 100000; i++)
                assert_int_equal(strbuf_appends(&b, "{b="), 0);
        expect_error_n(b.data, b.len, -E2BIG, NULL);
}

static void test_depth_limit_keys(void **state) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        assert_int_equal(strbuf_appendc(&b, '['), 0);
        for (int i = 0; i < TOML_MAX_DEPTH; i++)
                assert_int_equal(strbuf_appends(&b, i ? ".k" : "k"), 0);
        assert_int_equal(strbuf_appends(&b, "]\n"), 0);
        TomlValue *v = parse_ok_n(b.data, b.len);
        toml_free(v);
        /* One more component: the 65th key starts at column 2 + 64 * 2. */
        strbuf_clear(&b);
        assert_int_equal(strbuf_appendc(&b, '['), 0);
        for (int i = 0; i <= TOML_MAX_DEPTH; i++)
                assert_int_equal(strbuf_appends(&b, i ? ".k" : "k"), 0);
        assert_int_equal(strbuf_appends(&b, "]\n"), 0);
        expect_error_n(b.data, b.len, -E2BIG, "1:130: nesting deeper than 64 levels");
        /* Header depth plus dotted keys count together. */
        strbuf_clear(&b);
        assert_int_equal(strbuf_appendc(&b, '['), 0);
        for (int i = 0; i < TOML_MAX_DEPTH; i++)
                assert_int_equal(strbuf_appends(&b, i ? ".k" : "k"), 0);
        assert_int_equal(strbuf_appends(&b, "]\nx = 1\n"), 0);
        expect_error_n(b.data, b.len, -E2BIG, "2:1: nesting deeper than 64 levels");
}

static void append_many_keys(StrBuf *b, size_t n) {
        strbuf_clear(b);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(strbuf_appendf(b, "key%zu = %zu\n", i, i), 0);
        assert_int_equal(strbuf_appends(b, "[t]\n"), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(strbuf_appendf(b, "k.\"%zu\" = %zu\n", i, i), 0);
}

/* The thread's CPU time, not the wall clock: time spent descheduled on a
 * loaded machine (other jobs, CI neighbours) is not the parser's cost and
 * made the comparison below flaky. */
static double parse_seconds(const StrBuf *b) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        TomlValue *v = parse_ok_n(b->data, b->len);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        toml_free(v);
        return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

static void test_many_keys_is_linear(void **state) {
        const size_t n = 100000;
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;

        /* Ten times the keys must cost about ten times the time, not a
         * hundred: compared against a smaller run so that slow machines,
         * sanitizers and valgrind do not make the test flaky. */
        _cleanup_strbuf_ StrBuf small_doc = STRBUF_INIT;
        append_many_keys(&small_doc, n / 10);
        append_many_keys(&b, n);
        /* The least of seven of each, the two sizes alternating: a busy
         * machine (the suite's other tests, a CI neighbour) only ever adds,
         * and a busy spell then touches both. A quadratic parse is about
         * 100 times the smaller one; a linear one about 10. */
        double small = 1e9, big = 1e9;
        for (int i = 0; i < 7; i++) {
                small = MIN(small, parse_seconds(&small_doc));
                big = MIN(big, parse_seconds(&b));
        }
        if (getenv("TOML_TEST_VERBOSE"))
                fprintf(stderr, "10k keys: %.4f s, 100k keys: %.4f s\n", small, big);
        assert_true(big < 50 * small + 0.05);

        TomlValue *v = parse_ok_n(b.data, b.len);
        assert_int_equal(v->table.n, n + 1);
        assert_int_equal(get_int(v, "key0"), 0);
        assert_int_equal(get_int(v, "key99999"), 99999);
        assert_int_equal(get_int(v, "key54321"), 54321);
        assert_null(toml_table_get(v, "key100000"));
        const TomlValue *k = get(v, "t.k");
        assert_int_equal(k->table.n, n);
        assert_int_equal(toml_table_get(k, "77777")->value->integer, 77777);
        toml_free(v);

        /* A duplicate at the end of a large table is still caught. */
        assert_int_equal(strbuf_appends(&b, "k.\"5\" = 0\n"), 0);
        expect_error_n(b.data, b.len, -EINVAL, "200002:3: duplicate key 'k.5' (first defined at 100007:3)");
}

/* ---- API ---- */

static void test_api_helpers(void **state) {
        assert_string_equal(toml_type_name(TOML_TABLE), "table");
        assert_string_equal(toml_type_name(TOML_ARRAY), "array");
        assert_string_equal(toml_type_name(TOML_STRING), "string");
        assert_string_equal(toml_type_name(TOML_INTEGER), "integer");
        assert_string_equal(toml_type_name(TOML_FLOAT), "float");
        assert_string_equal(toml_type_name(TOML_BOOL), "boolean");
        assert_string_equal(toml_type_name(TOML_DATETIME), "offset date-time");
        assert_string_equal(toml_type_name(TOML_DATETIME_LOCAL), "local date-time");
        assert_string_equal(toml_type_name(TOML_DATE_LOCAL), "local date");
        assert_string_equal(toml_type_name(TOML_TIME_LOCAL), "local time");

        TomlValue *v = parse_ok("a = [1]\n");
        assert_null(toml_table_get(NULL, "a"));
        assert_null(toml_table_get(v, "b"));
        assert_null(toml_table_get(toml_table_get(v, "a")->value, "a")); /* not a table */
        toml_free(v);
        toml_free(NULL);
        _cleanup_(toml_freep) TomlValue *w = parse_ok("x = 1\n");
        assert_non_null(w);
}

static void test_vectora_config_shape(void **state) {
        TomlValue *v = parse_ok("[sandbox]\n"
                                "enabled = true\n"
                                "backend = \"local\"          # local | docker\n"
                                "rw_paths = [\".\"]\n"
                                "ro_paths = []\n"
                                "mask = [\".env\", \"**/*.pem\", \"**/.ssh/**\", \"**/.aws/**\"]\n"
                                "idle_timeout = 600\n"
                                "\n"
                                "[sandbox.limits]\n"
                                "timeout = 120\n"
                                "max_output = 1_048_576\n"
                                "memory = \"2G\"\n");
        assert_true(get_type(v, "sandbox.enabled", TOML_BOOL)->boolean);
        assert_string_equal(get_str(v, "sandbox.mask[3]"), "**/.aws/**");
        const TomlValue *m = get(v, "sandbox.mask[2]");
        assert_int_equal(m->line, 6);
        assert_int_equal(m->col, 29);
        assert_int_equal(get_int(v, "sandbox.limits.max_output"), 1048576);
        toml_free(v);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty_document),
                cmocka_unit_test(test_comments_and_blank_lines),
                cmocka_unit_test(test_keyval_needs_newline),
                cmocka_unit_test(test_bare_quoted_dotted_keys),
                cmocka_unit_test(test_key_with_nul),
                cmocka_unit_test(test_invalid_keys),
                cmocka_unit_test(test_duplicate_keys),
                cmocka_unit_test(test_basic_string_escapes),
                cmocka_unit_test(test_string_with_nul_escape),
                cmocka_unit_test(test_empty_strings),
                cmocka_unit_test(test_invalid_escapes),
                cmocka_unit_test(test_escape_surrogates_and_range),
                cmocka_unit_test(test_literal_strings),
                cmocka_unit_test(test_multiline_basic),
                cmocka_unit_test(test_multiline_literal),
                cmocka_unit_test(test_multiline_errors),
                cmocka_unit_test(test_integers),
                cmocka_unit_test(test_hex_oct_bin),
                cmocka_unit_test(test_integer_overflow),
                cmocka_unit_test(test_integer_syntax_errors),
                cmocka_unit_test(test_floats),
                cmocka_unit_test(test_float_specials),
                cmocka_unit_test(test_float_syntax_errors),
                cmocka_unit_test(test_booleans),
                cmocka_unit_test(test_datetime_kinds),
                cmocka_unit_test(test_date_validation),
                cmocka_unit_test(test_time_validation),
                cmocka_unit_test(test_offset_validation),
                cmocka_unit_test(test_arrays),
                cmocka_unit_test(test_array_errors),
                cmocka_unit_test(test_inline_tables),
                cmocka_unit_test(test_inline_table_syntax_errors),
                cmocka_unit_test(test_inline_table_immutable),
                cmocka_unit_test(test_tables),
                cmocka_unit_test(test_table_header_errors),
                cmocka_unit_test(test_super_table_after_sub),
                cmocka_unit_test(test_dotted_keys_define_tables),
                cmocka_unit_test(test_dotted_key_over_value),
                cmocka_unit_test(test_dotted_keys_into_header_table),
                cmocka_unit_test(test_array_of_tables),
                cmocka_unit_test(test_array_of_tables_nested),
                cmocka_unit_test(test_array_of_tables_errors),
                cmocka_unit_test(test_positions),
                cmocka_unit_test(test_positions_after_multiline_string),
                cmocka_unit_test(test_control_characters),
                cmocka_unit_test(test_crlf),
                cmocka_unit_test(test_bare_carriage_return),
                cmocka_unit_test(test_utf8_validation),
                cmocka_unit_test(test_bom),
                cmocka_unit_test(test_input_limit),
                cmocka_unit_test(test_depth_limit_arrays),
                cmocka_unit_test(test_depth_limit_inline_tables),
                cmocka_unit_test(test_depth_limit_keys),
                cmocka_unit_test(test_many_keys_is_linear),
                cmocka_unit_test(test_api_helpers),
                cmocka_unit_test(test_vectora_config_shape),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
