/* test_policy_regex.c: policy/policy_regex.c, the bound on the copies regcomp would make, and
 * the back-references the loader refuses.
 *
 * One table of patterns and whether each is over POLICY_REGEX_MAX_COPIES (500), with rows on
 * both sides of the limit for each way of repeating. The loader's use of it (the message, its
 * file:line:col) is tested with the fixtures in test_policy.c (bad_regex_*.yaml). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy_regex.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *src;
    bool too_large;
} rows[] = {
    { "", false },
    { "[a-z]+", false },
    { "a*********", false },               /* '*' and '?' copy nothing */
    { "a?????????", false },
    { "a++++++++", false },                /* '+' doubles: 2^8 = 256 */
    { "a+++++++++", true },                /* 2^9 = 512 */
    { "a{500}", false },
    { "a{501}", true },
    { "a{,500}", false },                  /* glibc reads {,n} as {0,n} */
    { "a{,501}", true },
    { "a{499,}", false },                  /* {m,} copies m + 1 */
    { "a{500,}", true },
    { "a{499}b", false },                  /* a sequence adds its atoms */
    { "a{499}bc", true },
    { "(a{9}){50}", false },               /* a group is its contents plus one: 10 * 50 */
    { "(a{10}){50}", true },
    { "((a{8}){8}){8}", true },            /* (9 * 8 + 1) * 8 = 584 */
    { "((a{,8}){,8}){,8}", true },
    { "x|a{501}", true },                  /* each branch counts */
    { "[[:alpha:]]{500}", false },         /* a bracket expression is one atom */
    { "[[:alpha:]]{501}", true },
    { "[]{999}]", false },                 /* a leading ']' is a member: "{999}" is inside */
    { "\\{999}", false },                  /* an escaped '{' starts no interval */
    { "a{x}", false },                     /* not an interval: literals, regcomp decides */
    { "(a{501}", true },                   /* an unclosed group still counts */
};

static void test_rows(void **state)
{
    bool ok = true;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (policy_regex_too_large(rows[i].src, strlen(rows[i].src)) != rows[i].too_large) {
            print_error("\"%s\": want %s\n", rows[i].src,
                        rows[i].too_large ? "too large" : "within the bound");
            ok = false;
        }
    }
    assert_true(ok);
}

/* Back-references: where the first is, or the length when there is none (SIZE_MAX below). */
static const struct {
    const char *src;
    size_t at;
} backrefs[] = {
    { "(.*)\\1", 4 },
    { "(a)(b)(c)(d)(e)(f)(g)(h)(i)\\9", 27 },
    { "\\1", 0 },
    { "(a)\\0", SIZE_MAX },                 /* \0 is not one */
    { "\\\\1", SIZE_MAX },                   /* an escaped backslash, then '1' */
    { "\\\\\\1", 2 },                      /* an escaped backslash, then \1 */
    { "[\\1]", SIZE_MAX },                  /* in a bracket expression '\' is itself */
    { "(a)[\\]\\1", 6 },                    /* ...so "[\]" ends there, and \1 follows */
    { "[]\\1]", SIZE_MAX },                 /* a leading ']' is a member */
    { "[^]\\1]", SIZE_MAX },
    { "[[:alpha:]\\1]", SIZE_MAX },         /* a class inside does not end the bracket */
    { "[[.-.]a]\\1", 8 },                /* nor does a collating symbol */
    { "(a)[\\1](b)\\2", 10 },
    { "a\\.b\\*c", SIZE_MAX },
    { "\\", SIZE_MAX },                     /* a lone trailing backslash */
    { "(a)[\\1", SIZE_MAX },                /* an unclosed bracket runs to the end */
};

static void test_backrefs(void **state)
{
    bool ok = true;
    for (size_t i = 0; i < sizeof(backrefs) / sizeof(backrefs[0]); i++) {
        size_t len = strlen(backrefs[i].src);
        size_t want = backrefs[i].at == SIZE_MAX ? len : backrefs[i].at;
        size_t got = policy_regex_backref(backrefs[i].src, len);
        if (got != want) {
            print_error("\"%s\": back-reference at %zu, want %zu\n", backrefs[i].src, got, want);
            ok = false;
        }
    }
    assert_true(ok);
}

/* The bound reads len bytes, not up to a NUL: a pattern cut short is judged as cut. */
static void test_len_is_honoured(void **state)
{
    assert_false(policy_regex_too_large("a{501}", 2));
    assert_true(policy_regex_too_large("a{501}", 6));
    assert_int_equal(policy_regex_backref("a\\1", 2), 2);
    assert_int_equal(policy_regex_backref("a\\1", 3), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_backrefs),
        cmocka_unit_test(test_len_is_honoured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
