/* test_policy_name.c: policy/policy_name.c, the characters no MCP tool name has.
 *
 * One table of names and the first character refused in each (0: the name is plain). The
 * loader's use of it (the message, its file:line:col) is tested with the fixtures in
 * test_policy.c (bad_tool_name_*.yaml, bad_observe_tool_name.yaml). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy_name.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    size_t at;              /* 1-based character refused; 0 when none */
    uint32_t cp;
} rows[] = {
    { "write_file", 0, 0 },
    { "fs.read-file_2", 0, 0 },
    { "github/create_issue", 0, 0 },       /* '/' is in some servers' names */
    { "caf\xc3\xa9", 0, 0 },               /* a letter outside ASCII is a letter */
    { "\xe6\x9b\xb8\xe3\x81\x8f", 0, 0 },
    { "a~b+c@d:e", 0, 0 },                 /* other punctuation is left alone */
    { "delete_*", 8, '*' },
    { "delete_?", 8, '?' },
    { "[rw]rite", 1, '[' },
    { "write]", 6, ']' },
    { "{read,write}", 1, '{' },
    { "write}", 6, '}' },
    { "write file", 6, ' ' },
    { "write_file ", 11, ' ' },
    { "write\xc2\xa0" "file", 6, 0xA0 },    /* no-break space */
    { "write\xc2\x85", 6, 0x85 },           /* NEL (C1) */
    { "write\xe2\x80\x8b" "file", 6, 0x200B },  /* zero width space */
    { "\xe2\x80\x8d", 1, 0x200D },          /* zero width joiner alone */
    { "write\xe2\x80\xae" "elif", 6, 0x202E },  /* right-to-left override */
    { "\xe2\x81\xa6x", 1, 0x2066 },         /* left-to-right isolate */
    { "\xe3\x80\x80", 1, 0x3000 },          /* ideographic space */
    { "x\xef\xbb\xbf", 2, 0xFEFF },         /* zero width no-break space */
    { "x\xef\xb8\x8f", 2, 0xFE0F },         /* variation selector 16 */
    { "x\xf3\xa0\x80\x81", 2, 0xE0001 },    /* language tag */
    { "x\xc2\xad" "y", 2, 0xAD },           /* soft hyphen */
    { "caf\xc3\xa9 x", 5, ' ' },            /* characters, not bytes */
    /* not UTF-8 */
    { "a\x80", 2, 0 },                      /* a stray continuation byte */
    { "a\xc3", 2, 0 },                      /* a cut sequence */
    { "\xc0\xaf", 1, 0 },                   /* an overlong '/' */
    { "\xe0\x80\xaf", 1, 0 },               /* another */
    { "\xed\xa0\x80", 1, 0 },               /* a surrogate */
    { "\xf4\x90\x80\x80", 1, 0 },           /* past U+10FFFF */
    { "\xff", 1, 0 },
};

static void test_rows(void **state)
{
    bool ok = true;

    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct policy_name_flaw f = { 0 };
        bool plain = policy_name_plain(rows[i].name, strlen(rows[i].name), &f);
        if (plain != (rows[i].at == 0) || (!plain && (f.at != rows[i].at || f.cp != rows[i].cp ||
                                                      f.what == NULL))) {
            print_error("rows[%zu]: got %s at %zu U+%04X, want at %zu U+%04X\n", i,
                        plain ? "plain" : "refused", f.at, (unsigned)f.cp, rows[i].at,
                        (unsigned)rows[i].cp);
            ok = false;
        }
    }
    assert_true(ok);
}

/* What the message says of each kind. */
static void test_what(void **state)
{
    struct policy_name_flaw f;

    (void)state;
    assert_false(policy_name_plain("a*", 2, &f));
    assert_string_equal(f.what, "a glob character");
    assert_false(policy_name_plain("a b", 3, &f));
    assert_string_equal(f.what, "whitespace");
    assert_false(policy_name_plain("a\xe2\x80\x8b", 4, &f));
    assert_string_equal(f.what, "an invisible or format character");
    assert_false(policy_name_plain("a\xff", 2, &f));
    assert_string_equal(f.what, "bytes that are not UTF-8");
}

/* len is honoured: what follows it is not read. */
static void test_len_is_honoured(void **state)
{
    struct policy_name_flaw f;

    (void)state;
    assert_true(policy_name_plain("write*", 5, &f));
    assert_false(policy_name_plain("write\xe2\x80\x8b", 7, &f)); /* a cut sequence */
    assert_int_equal(f.cp, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_what),
        cmocka_unit_test(test_len_is_honoured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
