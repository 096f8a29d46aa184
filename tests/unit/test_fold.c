/* test_fold.c: proxy/fold.c, Unicode simple case folding.
 *
 * - pairs: two strings and whether Go's bytes.EqualFold (and so encoding/json's key matching)
 *   holds them equal; the tricky ones of the Unicode tables are here (long s, Kelvin sign, sharp
 *   s, the Greek sigmas, dotted and dotless i, titlecase digraphs).
 * - orbits: every fold orbit of more than two code points in Go's unicode tables (its caseOrbit
 *   list, Unicode 15.0) folds to one string.
 * - the whole table: folding is idempotent on every code point, and agrees with ASCII case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fold.h"

#include "sl_test.h"

static bool fold_equal(const char *a, const char *b)
{
    struct sl_buf fa = { 0 }, fb = { 0 };
    fold_utf8(a, strlen(a), &fa);
    fold_utf8(b, strlen(b), &fb);
    bool eq = fa.len == fb.len && (fa.len == 0 || memcmp(fa.p, fb.p, fa.len) == 0);
    sl_buf_free(&fa);
    sl_buf_free(&fb);
    return eq;
}

static const struct {
    const char *a, *b;
    bool equal;
} pairs[] = {
    /* ASCII */
    { "size", "SIZE", true },
    { "Path", "pATH", true },
    { "path", "paths", false },
    { "a_b", "a-b", false },
    { "@", "`", false },             /* 0x40 and 0x60 differ by 32 but are not letters */
    { "[", "{", false },
    /* long s: U+017F folds to s, so Go reads "\u017fize" as "size" */
    { "size", "\u017fize", true },
    { "SIZE", "\u017fize", true },
    { "\u017f", "s", true },
    { "\u017f", "S", true },
    /* Kelvin sign: U+212A folds to k */
    { "\u212a", "k", true },
    { "\u212a", "K", true },
    { "\u212aey", "key", true },
    /* Angstrom sign: U+212B with the a of a ring */
    { "\u212b", "\u00e5", true },
    { "\u212b", "\u00c5", true },
    /* sharp s: the capital U+1E9E folds simply to U+00DF; full folding (to "ss") is not used */
    { "\u00df", "\u1e9e", true },
    { "\u00df", "ss", false },
    { "\u1e9e", "SS", false },
    { "stra\u00dfe", "STRA\u1e9eE", true },
    /* Greek sigma: capital, small and final are one */
    { "\u03c3", "\u03c2", true },
    { "\u03c3", "\u03a3", true },
    { "\u03c2", "\u03a3", true },
    /* iota: the combining ypogegrammeni and the prosgegrammeni fold to iota too */
    { "\u0345", "\u03b9", true },
    { "\u1fbe", "\u0399", true },
    /* iota with dialytika and tonos: U+0390 and U+1FD3 are one from Unicode 15.1 on (S); Go
     * built on Unicode 15.0 keeps them apart, so sluice is the stricter of the two here */
    { "\u0390", "\u1fd3", true },
    { "\u03b0", "\u1fe3", true },
    { "\u0390", "\u03b9\u0308\u0301", false }, /* its full folding is not applied */
    { "\ufb05", "\ufb06", true },
    { "\ufb05", "st", false },
    /* dotted capital I and dotless small i fold only to themselves (Turkic mappings are T) */
    { "i", "\u0130", false },
    { "I", "\u0130", false },
    { "i", "\u0131", false },
    { "I", "\u0131", false },
    { "\u0130", "\u0131", false },
    /* micro sign and mu */
    { "\u00b5", "\u03bc", true },
    { "\u00b5", "\u039c", true },
    /* titlecase digraphs: three forms each */
    { "\u01c4", "\u01c5", true },
    { "\u01c5", "\u01c6", true },
    { "\u01f1", "\u01f3", true },
    { "\u01c4", "DZ\u030c", false },
    /* ohm sign and omega */
    { "\u2126", "\u03c9", true },
    /* Cyrillic and its historic small letters */
    { "\u0432", "\u1c80", true },
    { "\u0412", "\u1c80", true },
    { "\u0442", "\u1c85", true },
    /* Georgian Mtavruli folds to Mkhedruli; Cherokee small letters fold to the capitals */
    { "\u1c90", "\u10d0", true },
    { "\u13a0", "\uab70", true },
    { "\u13f0", "\u13f8", true },
    /* fullwidth Latin is its own case pair, never ASCII */
    { "\uff21", "\uff41", true },
    { "\uff21", "A", false },
    /* four-byte letters: Deseret, Adlam */
    { "\U00010400", "\U00010428", true },
    { "\U0001e900", "\U0001e922", true },
    /* a lone titlecase letter with its small form */
    { "\u1f88", "\u1f80", true },
    /* different lengths never fold together */
    { "s", "ss", false },
    { "", "", true },
    { "", "a", false },
};

static void test_pairs(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < SL_ARRAY_LEN(pairs); i++) {
        if (fold_equal(pairs[i].a, pairs[i].b) != pairs[i].equal ||
            fold_equal(pairs[i].b, pairs[i].a) != pairs[i].equal) {
            print_error("row %zu: want %s\n", i, pairs[i].equal ? "equal" : "different");
            sl_test_print_escaped("  a", pairs[i].a, strlen(pairs[i].a));
            sl_test_print_escaped("  b", pairs[i].b, strlen(pairs[i].b));
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

/* Go's caseOrbit (Unicode 15.0), as orbits: each list folds to one code point. */
static const uint32_t orbits[][5] = {
    { 0x004B, 0x006B, 0x212A },
    { 0x0053, 0x0073, 0x017F },
    { 0x00B5, 0x039C, 0x03BC },
    { 0x00C5, 0x00E5, 0x212B },
    { 0x00DF, 0x1E9E },
    { 0x01C4, 0x01C5, 0x01C6 },
    { 0x01C7, 0x01C8, 0x01C9 },
    { 0x01CA, 0x01CB, 0x01CC },
    { 0x01F1, 0x01F2, 0x01F3 },
    { 0x0345, 0x0399, 0x03B9, 0x1FBE },
    { 0x0392, 0x03B2, 0x03D0 },
    { 0x0395, 0x03B5, 0x03F5 },
    { 0x0398, 0x03B8, 0x03D1, 0x03F4 },
    { 0x039A, 0x03BA, 0x03F0 },
    { 0x03A0, 0x03C0, 0x03D6 },
    { 0x03A1, 0x03C1, 0x03F1 },
    { 0x03A3, 0x03C2, 0x03C3 },
    { 0x03A6, 0x03C6, 0x03D5 },
    { 0x03A9, 0x03C9, 0x2126 },
    { 0x0412, 0x0432, 0x1C80 },
    { 0x0414, 0x0434, 0x1C81 },
    { 0x041E, 0x043E, 0x1C82 },
    { 0x0421, 0x0441, 0x1C83 },
    { 0x0422, 0x0442, 0x1C84, 0x1C85 },
    { 0x042A, 0x044A, 0x1C86 },
    { 0x0462, 0x0463, 0x1C87 },
    { 0x1C88, 0xA64A, 0xA64B },
    { 0x1E60, 0x1E61, 0x1E9B },
};

static void test_go_orbits(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(orbits); i++) {
        uint32_t want = fold_rune(orbits[i][0]);
        for (size_t k = 1; k < 5 && orbits[i][k]; k++)
            if (fold_rune(orbits[i][k]) != want)
                fail_msg("orbit %zu: U+%04X folds to U+%04X, U+%04X to U+%04X", i,
                         orbits[i][0], want, orbits[i][k], fold_rune(orbits[i][k]));
    }
    /* and the two that Go pins to themselves */
    assert_int_equal(fold_rune(0x0130), 0x0130);
    assert_int_equal(fold_rune(0x0131), 0x0131);
}

static void test_whole_range(void **state)
{
    (void)state;
    size_t folded = 0;
    for (uint32_t c = 0; c <= 0x10FFFF; c++) {
        if (c >= 0xD800 && c <= 0xDFFF)
            continue;
        uint32_t f = fold_rune(c);
        if (fold_rune(f) != f)
            fail_msg("U+%04X folds to U+%04X, which folds again", c, f);
        if (f > 0x10FFFF || (f >= 0xD800 && f <= 0xDFFF))
            fail_msg("U+%04X folds to no code point", c);
        if (c < 0x80 && f != (c >= 'A' && c <= 'Z' ? c + 32 : c))
            fail_msg("ASCII U+%04X folds to U+%04X", c, f);
        if (c >= 0x80 && f < 0x80 && c != 0x017F && c != 0x212A)
            fail_msg("U+%04X folds into ASCII", c); /* only long s and Kelvin do */
        folded += f != c;
    }
    /* CaseFolding.txt 15.0 has 1454 simple mappings (26 of them the ASCII capitals), and the
     * table adds the 3 of Unicode 15.1 */
    assert_int_equal(folded, 1457);
}

/* A byte that starts no well-formed sequence is copied as it is; the bytes after it still fold. */
static void test_invalid_bytes_copied(void **state)
{
    (void)state;
    struct sl_buf out = { 0 };
    fold_utf8("A\xff" "B\xc5", 4, &out);
    assert_bytes_equal(out.p, out.len, "a\xff" "b\xc5");
    sl_buf_reset(&out);
    fold_utf8("\xed\xa0\x80\xc5\xbf", 5, &out); /* an encoded surrogate, then long s */
    assert_bytes_equal(out.p, out.len, "\xed\xa0\x80s");
    sl_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_go_orbits),
        cmocka_unit_test(test_whole_range),
        cmocka_unit_test(test_invalid_bytes_copied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
