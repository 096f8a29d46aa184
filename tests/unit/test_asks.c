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

/* The reference vectors (key 00..0f, message 00..len-1; the paper's Appendix A is len 15). */
static void test_siphash_vectors(void **state)
{
    (void)state;
    static const struct {
        size_t len;
        uint64_t h;
    } rows[] = {
        { 0, 0x726fdb47dd0e0e31ULL },
        { 1, 0x74f839c593dc67fdULL },
        { 8, 0x93f5f5799a932462ULL },
        { 15, 0xa129ca6149be45e5ULL },
    };
    uint8_t k[16], m[16];
    for (int i = 0; i < 16; i++)
        k[i] = m[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        assert_true(asks_siphash(k, m, rows[i].len) == rows[i].h);
}

/* Two principals, tools and digests are told apart by their bytes, whatever their hashes: a
 * principal that is a prefix of another, and a tool name moved into the principal. */
static void test_exact_keys(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    struct sl_str q;
    uint8_t n[16];
    nonce(n, 9);
    assert_int_equal(asks_ask(a, SL_STR("ab"), SL_STR("c"), d1, n, 1000, 1120, 8, 100,
                              SL_STR("Q"), &q), ASKS_OK);
    assert_int_equal(asks_check(a, SL_STR("ab"), SL_STR("c"), d1, 1000, 8, 100, &q), ASKS_SAME);
    assert_int_equal(asks_check(a, SL_STR("a"), SL_STR("bc"), d1, 1000, 8, 100, &q), ASKS_OK);
    assert_int_equal(asks_check(a, SL_STR("abc"), SL_STR(""), d1, 1000, 8, 100, &q), ASKS_OK);
    assert_int_equal(asks_check(a, SL_STR("ab"), SL_STR("c"), d2, 1000, 8, 100, &q), ASKS_OK);
    asks_withdrawn(a, SL_STR("a"), SL_STR("bc"), d1); /* not the open one */
    assert_int_equal(asks_check(a, SL_STR("ab"), SL_STR("c"), d1, 1000, 8, 100, &q), ASKS_SAME);
    asks_withdrawn(a, SL_STR("ab"), SL_STR("c"), d1);
    assert_int_equal(asks_check(a, SL_STR("ab"), SL_STR("c"), d1, 1000, 8, 100, &q), ASKS_OK);
    asks_free(a);
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

static void name(char *buf, size_t len, const char *prefix, unsigned i)
{
    snprintf(buf, len, "%s%u", prefix, i);
}

/* Records a question of principal who (unique arguments per i) after asks_check said OK. */
static enum asks_status ask_one(struct asks *a, const char *who, unsigned i, uint64_t now,
                                unsigned max_open, unsigned per_minute, uint8_t n[16])
{
    uint8_t d[32] = { 0xaa };
    struct sl_str q;
    memcpy(d + 1, &i, sizeof(i));
    memset(n, 0, 16);
    memcpy(n, &i, sizeof(i));
    memcpy(n + 4, who, strlen(who) < 12 ? strlen(who) : 12);
    enum asks_status st = asks_check(a, sl_str_c(who), SL_STR("t"), d, now, max_open,
                                     per_minute, &q);
    if (st == ASKS_OK)
        asks_record(a, sl_str_c(who), SL_STR("t"), d, n, now, now + 120, SL_STR("q"));
    return st;
}

/* A flood of new principals is refused once the table is full, and evicts nobody: the pending
 * question of a principal already there stays open and answerable, and that principal can still
 * ask up to its reserve. */
static void test_flood_of_principals(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    struct sl_str q;
    uint8_t n[16], victim_nonce[16];
    char who[32];
    const uint8_t dv[32] = { 0x77 };
    struct sl_str victim = SL_STR("victim"), tool = SL_STR("write_file");
    assert_int_equal(asks_check(a, victim, tool, dv, 1000, 8, 20, &q), ASKS_OK);
    memset(victim_nonce, 0x5a, 16);
    asks_record(a, victim, tool, dv, victim_nonce, 1000, 1120, SL_STR("VQ"));
    unsigned ok = 0, refused = 0;
    for (unsigned i = 0; i < ASKS_MAX + 100; i++) {
        name(who, sizeof(who), "flood", i);
        enum asks_status st = ask_one(a, who, i, 1001, 8, 20, n);
        if (st == ASKS_OK)
            ok++;
        else if (st == ASKS_PRINCIPALS_FULL)
            refused++;
        else
            fail_msg("flood %u: status %d", i, st);
    }
    assert_int_equal(ok, ASKS_PRINCIPALS - 1); /* the victim holds the last place */
    assert_int_equal(refused, ASKS_MAX + 100 - ok);
    /* the victim's question is still the open one, and the victim can ask up to its reserve */
    assert_int_equal(asks_check(a, victim, tool, dv, 1002, 8, 20, &q), ASKS_SAME);
    assert_memory_equal(q.p, "VQ", 2);
    for (unsigned i = 1; i < ASKS_RESERVED; i++)
        assert_int_equal(ask_one(a, "victim", i, 1002, 8, 20, n), ASKS_OK);
    assert_int_equal(ask_one(a, "victim", 99, 1002, 8, 20, n), ASKS_OPEN); /* its own limit */
    /* a flooder already in the table is held to its own limits, not refused for the others */
    name(who, sizeof(who), "flood", 0);
    assert_int_equal(ask_one(a, who, 100000, 1002, 8, 20, n), ASKS_OK);
    /* the victim's answer frees its place at once */
    asks_answered(a, victim_nonce);
    assert_int_equal(asks_check(a, victim, tool, dv, 1003, 8, 20, &q), ASKS_OK);
    /* a new principal still gets no place, until the flood's questions expire and a minute
     * has passed since they were asked */
    assert_int_equal(ask_one(a, "late", 1, 1003, 8, 20, n), ASKS_PRINCIPALS_FULL);
    assert_int_equal(ask_one(a, "late", 1, 1121, 8, 20, n), ASKS_OK);
    asks_free(a);
}

/* An answered question leaves the table at once: a principal that asks and is answered many
 * times within the minute never fills it (only its own rate limits it). */
static void test_answered_frees_its_place(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    uint8_t n[16];
    for (unsigned i = 0; i < ASKS_MAX + 500; i++) {
        if (ask_one(a, "busy", i, 2000, 1, 100000, n) != ASKS_OK)
            fail_msg("question %u was refused", i);
        asks_answered(a, n);
    }
    /* the rate still counts the answered ones */
    assert_int_equal(ask_one(a, "busy", 1, 2000, 1, ASKS_MAX + 500, n), ASKS_RATE);
    assert_int_equal(ask_one(a, "busy", 1, 2059, 1, ASKS_MAX + 500, n), ASKS_RATE);
    assert_int_equal(ask_one(a, "busy", 1, 2060, 1, ASKS_MAX + 500, n), ASKS_OK);
    /* withdrawn ones too */
    struct sl_str q;
    uint8_t d[32] = { 9 };
    for (unsigned i = 0; i < ASKS_MAX + 500; i++) {
        d[1] = (uint8_t)i, d[2] = (uint8_t)(i >> 8);
        if (asks_check(a, SL_STR("w"), SL_STR("t"), d, 3000, 1, 100000, &q) != ASKS_OK)
            fail_msg("withdrawn question %u was refused", i);
        asks_record(a, SL_STR("w"), SL_STR("t"), d, n, 3000, 3100, SL_STR("q"));
        asks_withdrawn(a, SL_STR("w"), SL_STR("t"), d);
    }
    asks_free(a);
}

/* A policy with max_open above the reserve takes places from the shared pool, never from
 * another principal's reserve; the pool's end is ASKS_FULL. */
static void test_shared_pool(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    uint8_t n[16];
    assert_int_equal(ask_one(a, "small", 0, 10, 8, 100000, n), ASKS_OK);
    unsigned ok = 0;
    uint8_t big0[16];
    enum asks_status st;
    while ((st = ask_one(a, "big", ok, 10, 100000, 100000, n)) == ASKS_OK)
        if (ok++ == 0)
            memcpy(big0, n, 16);
    assert_int_equal(st, ASKS_FULL);
    assert_int_equal(ok, ASKS_MAX - ASKS_RESERVED); /* all but small's reserve */
    for (unsigned i = 1; i < ASKS_RESERVED; i++)
        assert_int_equal(ask_one(a, "small", i, 10, 8, 100000, n), ASKS_OK);
    uint8_t small_last[16];
    memcpy(small_last, n, 16);
    assert_int_equal(ask_one(a, "small", 8, 10, 8, 100000, n), ASKS_OPEN);
    assert_int_equal(ask_one(a, "new", 0, 10, 8, 100000, n), ASKS_PRINCIPALS_FULL);
    /* small's answered place stays small's (its reserve), not the pool's */
    asks_answered(a, small_last);
    assert_int_equal(ask_one(a, "big", ok + 1, 10, 100000, 100000, n), ASKS_FULL);
    assert_int_equal(ask_one(a, "small", 50, 10, 8, 100000, n), ASKS_OK);
    /* answering one of big's gives its place back to the pool */
    asks_answered(a, big0);
    assert_int_equal(ask_one(a, "big", ok + 2, 10, 100000, 100000, n), ASKS_OK);
    assert_int_equal(ask_one(a, "big", ok + 3, 10, 100000, 100000, n), ASKS_FULL);
    asks_free(a);
}

/* The rate window: a question asked at T counts through T+59. */
static void test_rate_window(void **state)
{
    (void)state;
    struct asks *a = asks_new();
    uint8_t n[16];
    assert_int_equal(ask_one(a, "r", 0, 100, 8, 2, n), ASKS_OK);
    asks_answered(a, n);
    assert_int_equal(ask_one(a, "r", 1, 130, 8, 2, n), ASKS_OK);
    asks_answered(a, n);
    assert_int_equal(ask_one(a, "r", 2, 159, 8, 2, n), ASKS_RATE);
    assert_int_equal(ask_one(a, "r", 2, 160, 8, 2, n), ASKS_OK); /* 100 left the window */
    assert_int_equal(ask_one(a, "r", 3, 189, 8, 2, n), ASKS_RATE);
    assert_int_equal(ask_one(a, "r", 3, 250, 8, 2, n), ASKS_OK); /* the principal had left */
    asks_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_vectors),
        cmocka_unit_test(test_exact_keys),
        cmocka_unit_test(test_share_and_limits),
        cmocka_unit_test(test_flood_of_principals),
        cmocka_unit_test(test_answered_frees_its_place),
        cmocka_unit_test(test_shared_pool),
        cmocka_unit_test(test_rate_window),
        cmocka_unit_test(test_withdrawn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
