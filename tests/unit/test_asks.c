/* test_asks.c: approval fatigue: identical open questions are shared, limits per principal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "asks.h"

static const uint8_t d1[32] = { 1 }, d2[32] = { 2 }, d3[32] = { 3 };

static void nonce(uint8_t n[16], int i)
{
    memset(n, 0, 16);
    n[0] = (uint8_t)i;
}

static void test_share_and_limits(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    struct sl_str q;
    uint8_t n[16];
    struct sl_str alice = SL_STR("alice"), bob = SL_STR("bob"), tool = SL_STR("write_file");
    assert_int_equal(asks_check(a, alice, tool, d1, 1000, 2, 3, &q), ASKS_OK);
    nonce(n, 1);
    asks_record(a, alice, tool, d1, n, 1000, 1120, SL_STR("Q1"));
    /* the identical call: the same question */
    assert_int_equal(asks_check(a, alice, tool, d1, 1001, 2, 3, &q), ASKS_SAME);
    assert_int_equal(q.len, 2);
    assert_memory_equal(q.p, "Q1", 2);
    /* another principal, same call: not shared */
    assert_int_equal(asks_check(a, bob, tool, d1, 1001, 2, 3, &q), ASKS_OK);
    /* another tool, same digest: not shared */
    assert_int_equal(asks_check(a, alice, SL_STR("edit_file"), d1, 1001, 2, 3, &q), ASKS_OK);
    nonce(n, 2);
    asks_record(a, alice, tool, d2, n, 1002, 1122, SL_STR("Q2"));
    /* two open: the third is refused */
    assert_int_equal(asks_check(a, alice, tool, d3, 1003, 2, 3, &q), ASKS_OPEN);
    /* answering one frees a slot, but the answered one no longer shares */
    nonce(n, 1);
    asks_answered(a, n);
    assert_int_equal(asks_check(a, alice, tool, d1, 1004, 2, 3, &q), ASKS_OK);
    nonce(n, 3);
    asks_record(a, alice, tool, d3, n, 1004, 1124, SL_STR("Q3"));
    /* three asked within a minute: the rate limit (3) holds even with room to open */
    nonce(n, 2);
    asks_answered(a, n);
    assert_int_equal(asks_check(a, alice, tool, d1, 1005, 5, 3, &q), ASKS_RATE);
    /* a minute later the rate window has moved; expired questions are not open */
    assert_int_equal(asks_check(a, alice, tool, d1, 1200, 2, 3, &q), ASKS_OK);
    asks_free(a);
}

/* A withdrawn call (cancelled, client gone) frees its question: the same call is asked afresh,
 * and the slot under max_open is free; another principal's identical question stays open. */
static void test_withdrawn(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    struct sl_str q;
    uint8_t n[16];
    struct sl_str alice = SL_STR("alice"), bob = SL_STR("bob"), tool = SL_STR("write_file");
    nonce(n, 1);
    asks_record(a, alice, tool, d1, n, 1000, 1120, SL_STR("Q1"));
    nonce(n, 2);
    asks_record(a, bob, tool, d1, n, 1000, 1120, SL_STR("Q2"));
    assert_int_equal(asks_check(a, alice, tool, d1, 1001, 1, 9, &q), ASKS_SAME);
    assert_int_equal(asks_check(a, alice, tool, d2, 1001, 1, 9, &q), ASKS_OPEN);
    asks_withdrawn(a, alice, tool, d1);
    assert_int_equal(asks_check(a, alice, tool, d1, 1002, 1, 9, &q), ASKS_OK);
    assert_int_equal(asks_check(a, alice, tool, d2, 1002, 1, 9, &q), ASKS_OK);
    assert_int_equal(asks_check(a, bob, tool, d1, 1002, 1, 9, &q), ASKS_SAME);
    asks_free(a);
}

static void test_full_table_refuses(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    struct sl_str q;
    uint8_t n[16] = { 0 }, d[32] = { 0 };
    for (unsigned i = 0; i < ASKS_MAX; i++) {
        memcpy(d, &i, sizeof(i));
        memcpy(n, &i, sizeof(i));
        char who[16];
        snprintf(who, sizeof(who), "p%u", i);
        assert_int_equal(asks_check(a, sl_str_c(who), SL_STR("t"), d, 10, 8, 20, &q), ASKS_OK);
        asks_record(a, sl_str_c(who), SL_STR("t"), d, n, 10, 100, SL_STR("q"));
    }
    d[31] = 9;
    assert_int_equal(asks_check(a, SL_STR("new"), SL_STR("t"), d, 11, 8, 20, &q), ASKS_FULL);
    assert_int_equal(asks_check(a, SL_STR("new"), SL_STR("t"), d, 100, 8, 20, &q), ASKS_OK);
    asks_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share_and_limits),
        cmocka_unit_test(test_full_table_refuses),
        cmocka_unit_test(test_withdrawn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
