/* test_policy_name.c: policy/policy_name.c, the characters no MCP tool name has, and the
 * syntax an approvers: pattern does not have.
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

/* approvers: patterns (policy_pattern_plain), and the first character refused in each. Real
 * principals stay writable: a cert: subject's inner spaces and its RFC 2253 escapes as OpenSSL
 * writes them (XN_FLAG_RFC2253: "\," "\\" "\ " and "\C3" for a byte outside ASCII). */
static const struct {
    const char *pat;
    size_t at;              /* 1-based character refused; 0 when none */
    uint32_t cp;
} pattern_rows[] = {
    { "header:oncall-*", 0, 0 },
    { "cert:CN=lead,*", 0, 0 },
    { "bearer:0123456789abcdef????????????????", 0, 0 },
    { "anonymous", 0, 0 },
    { "cert:CN=Jane Doe,O=Example Corp", 0, 0 },        /* inner spaces are the subject's */
    { "cert:CN=Doe\\, Jane,*", 0, 0 },
    { "cert:CN=Jos\\C3\\A9,*", 0, 0 },
    { "cert:CN=a\\\\b,*", 0, 0 },                      /* an escaped backslash */
    { "cert:CN=\\ lead\\ ,*", 0, 0 },                  /* escaped leading and trailing spaces */
    { "cert:CN=\\#1,*", 0, 0 },
    { "header:caf\xc3\xa9", 0, 0 },
    { "header:{alice,bob}", 8, '{' },
    { "header:alice}", 13, '}' },
    { "header:oncall-[12]", 15, '[' },
    { "header:oncall]", 14, ']' },
    { "header:oncall-\\*", 15, '\\' },                 /* a backslash as a glob escape */
    { "cert:CN=Jos\\c3\\a9,*", 12, '\\' },             /* OpenSSL writes the hex uppercase */
    { "cert:CN=a\\", 10, '\\' },
    { " header:alice", 1, ' ' },
    { "header:alice ", 13, ' ' },
    { "header: alice", 8, ' ' },
    { "header:al\xc2\xa0ice", 10, 0xA0 },              /* no-break space */
    { "header:al\xe2\x80\x8bice", 10, 0x200B },        /* zero width space */
    { "header:\xe2\x80\xae" "ecila", 8, 0x202E },      /* right-to-left override */
    { "header:caf\xc3\xa9\xe2\x80\x8b", 12, 0x200B },  /* characters, not bytes */
    { "cert:CN=\\C3\\A9\xe2\x80\x8b", 15, 0x200B },    /* an escape counts its characters */
    { "header:a\xff", 9, 0 },
    { "header:*?", 0, 0 },                              /* the matcher's own syntax */
};

static void test_pattern_rows(void **state)
{
    bool ok = true;

    (void)state;
    for (size_t i = 0; i < sizeof(pattern_rows) / sizeof(pattern_rows[0]); i++) {
        struct policy_name_flaw f = { 0 };
        bool plain = policy_pattern_plain(pattern_rows[i].pat, strlen(pattern_rows[i].pat), &f);
        if (plain != (pattern_rows[i].at == 0) ||
            (!plain && (f.at != pattern_rows[i].at || f.cp != pattern_rows[i].cp ||
                        f.what == NULL || f.instead == NULL ||
                        (f.cp != 0) != (strcmp(f.what, "bytes that are not UTF-8") != 0)))) {
            print_error("pattern_rows[%zu]: got %s at %zu U+%04X, want at %zu U+%04X\n", i,
                        plain ? "plain" : "refused", f.at, (unsigned)f.cp, pattern_rows[i].at,
                        (unsigned)pattern_rows[i].cp);
            ok = false;
        }
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_what),
        cmocka_unit_test(test_len_is_honoured),
        cmocka_unit_test(test_pattern_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
