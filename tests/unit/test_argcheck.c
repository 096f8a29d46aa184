/* test_argcheck.c: proxy/argcheck.c, the checks a gated call's arguments pass before a person
 * is asked about them. Each row is argument JSON and whether the check lets it through.
 *
 * - NUL: U+0000 in any string, at any depth, as a value or a key.
 * - keys: two keys of one object equal under Unicode simple case folding or canonical
 *   equivalence, at any depth; and a 100,000-key object costs a sort, not a comparison of every
 *   pair.
 * - integers: within ±2^53, with the 16- and 17-digit boundaries, both signs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "argcheck.h"

#include "jsonrpc.h"
#include "sl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct row {
    const char *json;
    bool ok;
};

static void run_rows(const struct row *rows, size_t n, bool (*check)(const struct json *))
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        struct sl_arena *a = sl_arena_new();
        struct json *v;
        char err[128];
        if (json_parse(rows[i].json, strlen(rows[i].json), a, &v, err, sizeof(err)) != 0)
            fail_msg("row %zu does not parse (%s): %s", i, err, rows[i].json);
        if (check(v) != rows[i].ok) {
            print_error("row %zu: want %s: %s\n", i, rows[i].ok ? "ok" : "refused",
                        rows[i].json);
            failed++;
        }
        sl_arena_free(a);
    }
    assert_int_equal(failed, 0);
}

/* ===== NUL ===== */

static const struct row nul_rows[] = {
    { "{\"path\":\"/tmp/ok\"}", true },
    { "{\"path\":\"/tmp/ok\\u0000/../../etc/passwd\"}", false },
    { "{\"path\":\"\\u0000\"}", false },
    { "{\"a\":[\"ok\",{\"b\":\"x\\u0000\"}]}", false },
    { "{\"a\":{\"b\":{\"c\":[[\"\\u0000\"]]}}}", false },
    { "{\"a\":\"\\\\u0000\"}", true },           /* a backslash, then the text u0000 */
    { "{\"a\":\"\\u0001\\u001f \\u00e9\"}", true }, /* other controls are shown escaped */
    { "{\"a\":\"\\n\"}", true },
    { "{\"n\":0,\"b\":false,\"z\":null}", true },
    { "[\"\\u0000\"]", false },
    { "\"\\u0000\"", false },
};

static void test_nul(void **state)
{
    (void)state;
    run_rows(nul_rows, SL_ARRAY_LEN(nul_rows), argcheck_no_nul);
}

/* The reader refuses a NUL in a key already; a tree built by code is checked too. */
static void test_nul_in_built_key(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    struct json *o = json_new_object(a), *inner = json_new_object(a);
    json_set_key(a, inner, (struct sl_str){ "path\0x", 6 }, json_new_string(a, "v", 1));
    json_set(a, o, "ok", inner);
    assert_false(argcheck_no_nul(o));
    struct json *clean = json_new_object(a);
    json_set(a, clean, "path", json_new_string(a, "v", 1));
    assert_true(argcheck_no_nul(clean));
    sl_arena_free(a);
    /* and the reader does refuse it */
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error perr;
    static const char msg[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"w\",\"arguments\":{\"p\\u0000\":1}}}";
    assert_int_not_equal(jsonrpc_parse(msg, sizeof(msg) - 1, &m, &perr), 0);
}

/* ===== keys ===== */

static const struct row key_rows[] = {
    { "{\"path\":\"a\",\"content\":\"b\"}", true },
    { "{\"path\":\"a\",\"Path\":\"b\"}", false },
    { "{\"size\":1,\"\\u017fize\":1000000}", false },   /* long s */
    { "{\"size\":1,\"\u017fize\":1000000}", false },     /* the same, sent as UTF-8 */
    { "{\"SIZE\":1,\"\\u017fize\":2}", false },
    { "{\"key\":1,\"\\u212aey\":2}", false },           /* Kelvin sign */
    { "{\"\\u03c3\":1,\"\\u03c2\":2}", false },          /* small and final sigma */
    { "{\"\\u03a3\":1,\"\\u03c2\":2}", false },
    { "{\"\\u00df\":1,\"\\u1e9e\":2}", false },          /* sharp s, small and capital */
    { "{\"\\u00df\":1,\"ss\":2}", true },                /* full folding is not Go's */
    { "{\"i\":1,\"\\u0131\":2,\"\\u0130\":3}", true },   /* dotless and dotted i stand alone */
    { "{\"\\u00b5\":1,\"\\u03bc\":2}", false },          /* micro sign and mu */
    { "{\"path\":\"a\",\"paths\":\"b\"}", true },
    { "{\"a\":{\"x\":1},\"b\":{\"X\":2}}", true },        /* different objects */
    /* every depth, objects in arrays too */
    { "{\"x\":[{\"k\":1,\"K\":2}]}", false },
    { "{\"x\":[1,[2,{\"o\":{\"size\":1,\"\\u017fize\":2}}]]}", false },
    { "{\"a\":{\"b\":{\"c\":{\"d\":{\"key\":1,\"\\u212aEY\":2}}}}}", false },
    { "[{\"a\":1,\"A\":2}]", false },
    { "{\"a\":1,\"b\":2,\"c\":3,\"B\":4,\"d\":5}", false },
    { "{}", true },
    { "{\"\":1,\"a\":2}", true },
    /* canonical equivalence (NFD), with and without folding */
    { "{\"caf\\u00e9\":1,\"cafe\\u0301\":2}", false },
    { "{\"caf\\u00c9\":1,\"cafe\\u0301\":2}", false },     /* and case */
    { "{\"\\u212b\":1,\"\\u00e5\":2}", false },              /* angstrom sign, a ring */
    { "{\"\\u1e69\":1,\"s\\u0307\\u0323\":2}", false },      /* marks in another order */
    { "{\"\\uac00\":1,\"\\u1100\\u1161\":2}", false },       /* Hangul, and its jamo */
    { "{\"e\":1,\"\\u00e9\":2}", true },                       /* another letter */
    { "{\"\\ufb01\":1,\"fi\":2}", true },                      /* compatibility only */
    { "{\"x\":[{\"o\":{\"\\u00f1\":1,\"n\\u0303\":2}}]}", false },
    /* U+0130 has no simple folding, but its decomposition (I and a dot above) folds: caseless
     * canonical matching decomposes before folding too (NFD(fold(NFD(k)))) */
    { "{\"\\u0130\":1,\"i\\u0307\":2}", false },
};

static void test_keys(void **state)
{
    (void)state;
    run_rows(key_rows, SL_ARRAY_LEN(key_rows), argcheck_keys_distinct);
}

/* An object of n keys "k<i>", built without json_set (which looks each key up). Key last, when
 * not NULL, replaces the last one. */
static struct json *many_keys(struct sl_arena *a, size_t n, const char *last)
{
    struct json *o = json_new_object(a);
    o->u.obj.v = sl_arena_alloc(a, n * sizeof(*o->u.obj.v));
    o->u.obj.n = n;
    for (size_t i = 0; i < n; i++) {
        char k[32];
        int len = snprintf(k, sizeof(k), "k%zu", i);
        if (i == n - 1 && last)
            len = snprintf(k, sizeof(k), "%s", last);
        struct json *s = json_new_string(a, k, (size_t)len);
        o->u.obj.v[i] = (struct json_member){ s->u.str, json_new_null(a) };
    }
    return o;
}

static void test_many_keys(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    clock_t t0 = clock();
    assert_true(argcheck_keys_distinct(many_keys(a, 100000, NULL)));
    /* "\u212a7" is "k7" to Go: the last key of 100,000 meets the eighth */
    assert_false(argcheck_keys_distinct(many_keys(a, 100000, "\xe2\x84\xaa" "7")));
    assert_false(argcheck_keys_distinct(many_keys(a, 100000, "K99998")));
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    /* A sort takes milliseconds (seconds under valgrind); comparing every pair, 5e9 steps. */
    if (s > 20)
        fail_msg("100,000 keys took %.1f s of CPU", s);
    sl_arena_free(a);
}

/* ===== integers ===== */

static const struct row int_rows[] = {
    { "{\"n\":0}", true },
    { "{\"n\":-0}", true },
    { "{\"n\":1}", true },
    /* 16 digits: up to 2^53 = 9007199254740992 */
    { "{\"n\":1000000000000000}", true },
    { "{\"n\":9007199254740991}", true },
    { "{\"n\":9007199254740992}", true },
    { "{\"n\":-9007199254740992}", true },
    { "{\"n\":9007199254740993}", false },
    { "{\"n\":-9007199254740993}", false },
    { "{\"n\":9007199254741000}", false },
    { "{\"n\":9999999999999999}", false },
    { "{\"n\":-9999999999999999}", false },
    /* 17 digits and more: every one is beyond, whatever its leading digits */
    { "{\"n\":10000000000000000}", false },
    { "{\"n\":-10000000000000000}", false },
    { "{\"n\":12345678901234567}", false },
    { "{\"n\":-12345678901234567}", false },
    { "{\"n\":90071992547409920}", false },
    { "{\"n\":-90071992547409920}", false },
    { "{\"n\":99999999999999999}", false },
    { "{\"n\":100000000000000000}", false },
    { "{\"n\":-100000000000000000}", false },
    { "{\"n\":18446744073709551617}", false },
    { "{\"n\":1000000000000000000000000000000}", false },
    /* 15 digits */
    { "{\"n\":999999999999999}", true },
    { "{\"n\":-999999999999999}", true },
    /* a fraction or an exponent makes a double to every peer */
    { "{\"n\":9007199254740993.5}", true },
    { "{\"n\":10000000000000000.0}", true },
    { "{\"n\":1e30}", true },
    { "{\"n\":1E30}", true },
    { "{\"n\":-12345678901234567e0}", true },
    /* any depth */
    { "{\"n\":[1,{\"m\":10000000000000000}]}", false },
    { "{\"a\":{\"b\":[[-12345678901234567]]}}", false },
    { "[10000000000000000]", false },
    { "10000000000000000", false },
    { "{\"s\":\"10000000000000000\"}", true },  /* as a string it is exact */
};

static void test_integers(void **state)
{
    (void)state;
    run_rows(int_rows, SL_ARRAY_LEN(int_rows), argcheck_integers_exact);
}

/* A leading zero is not JSON, so an integer's digit count orders it: the reader refuses these
 * before any check sees them. */
static void test_leading_zeros_not_json(void **state)
{
    (void)state;
    static const char *const bad[] = { "{\"n\":09007199254740993}", "{\"n\":-09007199254740993}",
                                       "{\"n\":00000000000000001}", "{\"n\":-0000000000000000001}" };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct sl_arena *a = sl_arena_new();
        struct json *v;
        char err[128];
        if (json_parse(bad[i], strlen(bad[i]), a, &v, err, sizeof(err)) == 0)
            fail_msg("parsed: %s", bad[i]);
        sl_arena_free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nul),
        cmocka_unit_test(test_nul_in_built_key),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_leading_zeros_not_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
