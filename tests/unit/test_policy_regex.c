/* test_policy_regex.c: policy/policy_regex.c, the bound on the copies regcomp would make.
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

/* The bound reads len bytes, not up to a NUL: a pattern cut short is judged as cut. */
static void test_len_is_honoured(void **state)
{
    assert_false(policy_regex_too_large("a{501}", 2));
    assert_true(policy_regex_too_large("a{501}", 6));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_len_is_honoured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
