/* test_shares.c: bytes and pieces held per principal until their expiry (proxy/shares.c),
 * behind the memory store's share of page questions per principal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "shares.h"
#include "sl_test.h"

/* A principal holds up to its cap; another principal's bytes are its own. */
static void test_cap_per_principal(void **state)
{
    (void)state;
    struct shares *sh = shares_new(10, 100);
    assert_non_null(sh);
    assert_true(shares_fits(sh, SL_STR("alice"), 10, 100));
    assert_false(shares_fits(sh, SL_STR("alice"), 11, 100));
    shares_take(sh, SL_STR("alice"), 6, 200, 100);
    assert_true(shares_fits(sh, SL_STR("alice"), 4, 100));
    assert_false(shares_fits(sh, SL_STR("alice"), 5, 100));
    shares_take(sh, SL_STR("alice"), 4, 300, 100);
    assert_false(shares_fits(sh, SL_STR("alice"), 1, 100));
    assert_true(shares_fits(sh, SL_STR("bob"), 10, 100));
    assert_true(shares_fits(sh, SL_STR("alic"), 10, 100));
    assert_true(shares_fits(sh, SL_STR(""), 10, 100));
    assert_int_equal(shares_held(sh, SL_STR("alice"), 100), 10);
    assert_int_equal(shares_held(sh, SL_STR("bob"), 100), 0);
    shares_free(sh);
}

/* Pieces are bounded as bytes are: a principal of many tiny pieces is refused at max_pieces,
 * whatever bytes are left; another principal is not, and an expired piece makes room. */
static void test_pieces_per_principal(void **state)
{
    (void)state;
    struct shares *sh = shares_new(1000, 3);
    assert_non_null(sh);
    for (int i = 0; i < 3; i++) {
        assert_true(shares_fits(sh, SL_STR("alice"), 1, 100));
        shares_take(sh, SL_STR("alice"), 1, 200 + (uint64_t)i, 100);
    }
    assert_false(shares_fits(sh, SL_STR("alice"), 1, 100));
    assert_false(shares_fits(sh, SL_STR("alice"), 0, 100));
    assert_int_equal(shares_held(sh, SL_STR("alice"), 100), 3);
    assert_true(shares_fits(sh, SL_STR("bob"), 1, 100));
    assert_true(shares_fits(sh, SL_STR("alice"), 1, 200));
    shares_free(sh);
    sh = shares_new(1000, 0); /* no pieces at all */
    assert_false(shares_fits(sh, SL_STR("alice"), 0, 100));
    shares_free(sh);
}

/* A piece is given back at its expiry, not before; each piece by its own. */
static void test_expiry_gives_back(void **state)
{
    (void)state;
    struct shares *sh = shares_new(10, 100);
    shares_take(sh, SL_STR("alice"), 6, 200, 100);
    shares_take(sh, SL_STR("alice"), 4, 300, 100);
    assert_int_equal(shares_held(sh, SL_STR("alice"), 199), 10);
    assert_false(shares_fits(sh, SL_STR("alice"), 1, 199));
    assert_int_equal(shares_held(sh, SL_STR("alice"), 200), 4);
    assert_true(shares_fits(sh, SL_STR("alice"), 6, 200));
    assert_false(shares_fits(sh, SL_STR("alice"), 7, 200));
    assert_int_equal(shares_held(sh, SL_STR("alice"), 300), 0);
    assert_true(shares_fits(sh, SL_STR("alice"), 10, 300));
    shares_free(sh);
}

/* Many principals, pieces out of expiry order: the table grows and the heap gives each piece
 * back at its own time (a model: each principal's sum of unexpired pieces). */
static void test_many(void **state)
{
    (void)state;
    enum { P = 300, PIECES = 3 };
    struct shares *sh = shares_new(1000, 100);
    size_t want[P][PIECES];
    uint64_t exp[P][PIECES];
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < P; i++) {
        char who[16];
        snprintf(who, sizeof(who), "principal-%d", i);
        for (int k = 0; k < PIECES; k++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            want[i][k] = 1 + seed % 300;
            exp[i][k] = 101 + (seed >> 20) % 100;
            assert_true(shares_fits(sh, sl_str_c(who), want[i][k], 100));
            shares_take(sh, sl_str_c(who), want[i][k], exp[i][k], 100);
        }
    }
    for (uint64_t now = 100; now <= 201; now += 7) {
        for (int i = 0; i < P; i++) {
            char who[16];
            snprintf(who, sizeof(who), "principal-%d", i);
            size_t sum = 0;
            for (int k = 0; k < PIECES; k++)
                sum += exp[i][k] > now ? want[i][k] : 0;
            assert_int_equal(shares_held(sh, sl_str_c(who), now), sum);
        }
    }
    shares_free(sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_per_principal),
        cmocka_unit_test(test_pieces_per_principal),
        cmocka_unit_test(test_expiry_gives_back),
        cmocka_unit_test(test_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
