/* test_base.c: the buffer that starts in the caller's storage keeps every byte when it moves to
 * the heap, and never frees what it was lent; an arena's allocations are zeroed and do not
 * overlap, also in memory that held other bytes before. base64url (the sealed state's outer
 * form) agrees with a letter-at-a-time reference at every length and offset its word-at-a-time
 * steps meet, and the decoder refuses every bad letter wherever it stands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base.h"

/* Grows a lent buffer past its storage by every route (put, putc, printf) and checks it against
 * a plain heap buffer fed the same bytes; the storage around the lent bytes is never written. */
/* Every byte value, after what the buffer held, from a lent buffer of every small size: the
 * digits, the NUL after them, nothing written past the storage, and round trips by decode. */
static void test_hex_encode(void **state)
{
    (void)state;
    uint8_t all[256], back[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    for (size_t cap = 1; cap < 40; cap++) {
        char guard[64];
        memset(guard, 0x5a, sizeof(guard));
        struct sl_buf b;
        sl_buf_on(&b, guard + 8, cap);
        sl_buf_puts(&b, "k:");
        sl_hex_encode(&b, all, 0);
        assert_int_equal(b.len, 2);
        sl_hex_encode(&b, all + 250, 6);
        assert_string_equal(b.p, "k:fafbfcfdfeff");
        sl_hex_encode(&b, all, sizeof(all));
        assert_int_equal(b.len, 14 + 512);
        assert_int_equal(b.p[b.len], '\0');
        assert_int_equal(sl_hex_decode(b.p + 14, 512, back, sizeof(back)), 256);
        assert_memory_equal(back, all, 256);
        for (size_t i = 0; i < 8; i++)
            assert_int_equal((unsigned char)guard[i], 0x5a);
        for (size_t i = 8 + cap; i < sizeof(guard); i++)
            assert_int_equal((unsigned char)guard[i], 0x5a);
        sl_buf_free(&b);
    }
}

static void test_lent_buffer_moves_to_the_heap(void **state)
{
    (void)state;
    srand(3);
    for (int round = 0; round < 200; round++) {
        char guard[96];
        memset(guard, 0x5a, sizeof(guard));
        char *storage = guard + 16;
        size_t cap = 1 + (size_t)rand() % 64;
        struct sl_buf lent, heap = { 0 };
        sl_buf_on(&lent, storage, cap);
        assert_true(lent.lent);
        assert_string_equal(sl_buf_str(&lent).p, "");
        for (int i = 0; i < 40; i++) {
            int how = rand() % 3;
            if (how == 0) {
                sl_buf_putc(&lent, (char)('a' + i % 26));
                sl_buf_putc(&heap, (char)('a' + i % 26));
            } else if (how == 1) {
                sl_buf_puts(&lent, "xyz");
                sl_buf_puts(&heap, "xyz");
            } else {
                sl_buf_printf(&lent, "<%d>", i);
                sl_buf_printf(&heap, "<%d>", i);
            }
            assert_int_equal(lent.len, heap.len);
            assert_memory_equal(lent.p, heap.p, heap.len + 1);
            if (lent.lent)
                assert_ptr_equal(lent.p, storage);
        }
        assert_false(lent.lent); /* 40 puts outgrow 64 bytes */
        for (size_t i = 0; i < 16; i++)
            assert_int_equal((unsigned char)guard[i], 0x5a);
        for (size_t i = 16 + cap; i < sizeof(guard); i++)
            assert_int_equal((unsigned char)guard[i], 0x5a);
        sl_buf_reset(&lent);
        assert_int_equal(lent.len, 0);
        sl_buf_free(&lent); /* frees the heap copy (ASan and valgrind see a leak otherwise) */
        sl_buf_free(&heap);
    }
    /* never outgrown: sl_buf_free must not free the storage (a stack address) */
    char small[32];
    struct sl_buf b;
    sl_buf_on(&b, small, sizeof(small));
    sl_buf_puts(&b, "fits");
    assert_ptr_equal(b.p, small);
    sl_buf_free(&b);
    assert_null(b.p);
    assert_false(b.lent);
}

/* Decimal ids: digits only, up to UINT64_MAX exactly. */
static void test_u64_parse(void **state)
{
    (void)state;
    static const struct { const char *s; bool ok; uint64_t v; } cases[] = {
        { "0", true, 0 }, { "7", true, 7 }, { "007", true, 7 }, { "1234567890", true, 1234567890 },
        { "18446744073709551615", true, UINT64_MAX }, { "18446744073709551616", false, 0 },
        { "99999999999999999999", false, 0 }, { "000000000000000000001", false, 0 },
        { "", false, 0 }, { "-1", false, 0 }, { "+1", false, 0 }, { " 1", false, 0 },
        { "1 ", false, 0 }, { "1.0", false, 0 }, { "1e3", false, 0 }, { "0x10", false, 0 },
        { ":", false, 0 }, { "/", false, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 12345;
        bool ok = sl_u64_parse(sl_str_c(cases[i].s), &v);
        if (ok != cases[i].ok || (ok && v != cases[i].v))
            fail_msg("\"%s\": got %d %llu", cases[i].s, ok, (unsigned long long)v);
    }
    char buf[21];
    for (uint64_t x = 1; x < UINT64_MAX / 3; x = x * 3 + 1) { /* sl_u64_dec's inverse */
        uint64_t back;
        assert_true(sl_u64_parse((struct sl_str){ buf, sl_u64_dec(buf, x) }, &back));
        assert_true(back == x);
    }
}

/* Arenas made, dirtied and freed over and over, so that malloc hands the same blocks back:
 * every allocation must still read as zero, and none may overlap another. */
static void test_arena_allocations_are_zero(void **state)
{
    (void)state;
    srand(5);
    for (int round = 0; round < 300; round++) {
        struct sl_arena *a = round % 3 == 0   ? sl_arena_new()
                             : round % 3 == 1 ? sl_arena_new_small()
                                              : sl_arena_new_sized((size_t)(rand() % 9000));
        unsigned char *got[64];
        size_t len[64];
        int n = 1 + rand() % 64;
        for (int i = 0; i < n; i++) {
            len[i] = (size_t)(rand() % 5 == 0 ? rand() % 12000 : rand() % 100);
            got[i] = sl_arena_alloc(a, len[i]);
            for (size_t j = 0; j < len[i]; j++)
                if (got[i][j] != 0)
                    fail_msg("round %d: allocation %d (%zu bytes) not zero at %zu", round, i,
                             len[i], j);
            memset(got[i], 0xA5 ^ i, len[i]);
        }
        for (int i = 0; i < n; i++)
            for (size_t j = 0; j < len[i]; j++)
                if (got[i][j] != (unsigned char)(0xA5 ^ i))
                    fail_msg("round %d: allocation %d overwritten at %zu", round, i, j);
        sl_arena_free(a);
    }
}

/* A spare stack hands back what was kept, last first, each block whole and distinct; it keeps
 * at most SL_SPARE_MAX (the rest are the caller's to free), and clearing empties it. */
static void test_spare_stack(void **state)
{
    (void)state;
    struct sl_spare s = { 0 };
    assert_null(sl_spare_take(&s, 64));
    char *blk[SL_SPARE_MAX + 1];
    for (int i = 0; i <= SL_SPARE_MAX; i++) {
        blk[i] = sl_xmalloc(64);
        memset(blk[i], i, 64);
    }
    for (int i = 0; i < SL_SPARE_MAX; i++)
        assert_true(sl_spare_keep(&s, blk[i], 64));
    assert_false(sl_spare_keep(&s, blk[SL_SPARE_MAX], 64)); /* full: still ours */
    free(blk[SL_SPARE_MAX]);
    for (int i = SL_SPARE_MAX - 1; i >= SL_SPARE_MAX / 2; i--) {
        char *p = sl_spare_take(&s, 64);
        assert_ptr_equal(p, blk[i]);
        for (int j = (int)sizeof(void *); j < 64; j++) /* the link word aside, as it was kept */
            assert_int_equal((unsigned char)p[j], i);
        assert_true(sl_spare_keep(&s, p, 64));
        assert_ptr_equal(sl_spare_take(&s, 64), p);
        free(p);
    }
    sl_spare_clear(&s, 64); /* the rest: freed (ASan and valgrind see a leak otherwise) */
    assert_null(sl_spare_take(&s, 64));
    assert_int_equal(s.n, 0);
    for (int i = 0; i < SL_SPARE_MAX; i++) /* empty again: it keeps a full stack once more */
        assert_true(sl_spare_keep(&s, sl_xmalloc(64), 64));
    sl_spare_clear(&s, 64);
}

/* sl_xcalloc clears small blocks itself (glibc's calloc is slow for them): blocks that malloc
 * hands back dirty must still read as zero, at every size around the switch to calloc. */
static void test_xcalloc_is_zero(void **state)
{
    (void)state;
    for (int round = 0; round < 3; round++) {
        for (size_t size = 1; size <= 1100; size += 7) {
            for (size_t n = 1; n <= 3; n++) {
                unsigned char *p = sl_xcalloc(n, size);
                for (size_t i = 0; i < n * size; i++)
                    if (p[i] != 0)
                        fail_msg("sl_xcalloc(%zu, %zu): byte %zu is %#x", n, size, i, p[i]);
                memset(p, 0x5A, n * size);
                free(p);
            }
        }
    }
}

/* ===== base64url ===== */

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* RFC 4648 §5 without padding, six bits at a time: the definition, not a fast form of it. */
static size_t reference_b64url(const uint8_t *d, size_t len, char *out)
{
    size_t o = 0, bits = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < len; i++) {
        acc = acc << 8 | d[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = alphabet[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        out[o++] = alphabet[(acc << (6 - bits)) & 63];
    out[o] = '\0';
    return o;
}

static void test_b64url_vectors(void **state)
{
    (void)state;
    static const struct { const char *raw, *enc; } rows[] = {
        { "", "" },           { "f", "Zg" },          { "fo", "Zm8" },
        { "foo", "Zm9v" },    { "foob", "Zm9vYg" },   { "fooba", "Zm9vYmE" },
        { "foobar", "Zm9vYmFy" }, { "foobarbaz", "Zm9vYmFyYmF6" },
        { "\xfb\xff\xbf\xfe\xff\xfe\xfa", "-_-__v_--g" }, /* both letters RFC 4648 §5 changes */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        size_t len = strlen(rows[i].raw);
        struct sl_buf b = { 0 };
        sl_buf_puts(&b, "s1.");
        sl_b64url_encode(&b, (const uint8_t *)rows[i].raw, len);
        assert_string_equal(b.p + 3, rows[i].enc);
        uint8_t back[16];
        assert_int_equal(sl_b64url_decode(rows[i].enc, strlen(rows[i].enc), back, sizeof(back)),
                         (long)len);
        assert_memory_equal(back, rows[i].raw, len);
        sl_buf_free(&b);
    }
}

/* Every length from 0 to 200 (the eight-letter step, the four-letter step and each tail), at
 * offsets that leave the input unaligned: encode agrees with the reference, decode gives back
 * the bytes and writes nothing past them. */
static void test_b64url_round_trip(void **state)
{
    (void)state;
    srand(7);
    for (size_t len = 0; len <= 200; len++) {
        for (size_t off = 0; off < 3; off++) {
            uint8_t raw[208], back[224];
            char want[300];
            for (size_t i = 0; i < len; i++)
                raw[off + i] = (uint8_t)rand();
            size_t wlen = reference_b64url(raw + off, len, want);
            struct sl_buf b = { 0 };
            sl_b64url_encode(&b, raw + off, len);
            assert_int_equal(b.len, wlen);
            assert_string_equal(b.p, want);
            memset(back, 0xA5, sizeof(back));
            long n = sl_b64url_decode(b.p, b.len, back + off, len);
            assert_int_equal(n, (long)len);
            assert_memory_equal(back + off, raw + off, len);
            for (size_t i = off + len; i < sizeof(back); i++)
                if (back[i] != 0xA5)
                    fail_msg("length %zu: decode wrote byte %zu past its end", len, i - off);
            assert_int_equal(sl_b64url_decode(b.p, b.len, back, len ? len - 1 : 0),
                             len ? -1 : 0); /* one byte short of room */
            sl_buf_free(&b);
        }
    }
}

/* Each byte that is not a letter of the alphabet ('+', '/', '=', NUL, a space, a high byte), at
 * every position of encodings that cover both steps and the tail, is refused; so are a length of
 * 4k+1 and a tail whose unused bits are not zero (two spellings of one state). */
static void test_b64url_refusals(void **state)
{
    (void)state;
    static const char bad[] = { '+', '/', '=', '\0', ' ', '.', (char)0x80, (char)0xff, '\n' };
    for (size_t len = 1; len <= 40; len++) {
        uint8_t raw[40], out[40];
        for (size_t i = 0; i < len; i++)
            raw[i] = (uint8_t)(i * 37 + 11);
        struct sl_buf b = { 0 };
        sl_b64url_encode(&b, raw, len);
        for (size_t at = 0; at < b.len; at++) {
            for (size_t k = 0; k < sizeof(bad); k++) {
                char saved = b.p[at];
                b.p[at] = bad[k];
                if (sl_b64url_decode(b.p, b.len, out, sizeof(out)) != -1)
                    fail_msg("length %zu: %#x at %zu was taken", len, (unsigned char)bad[k], at);
                b.p[at] = saved;
            }
        }
        sl_buf_free(&b);
    }
    uint8_t out[8];
    assert_int_equal(sl_b64url_decode("AAAAA", 5, out, sizeof(out)), -1);
    assert_int_equal(sl_b64url_decode("Zh", 2, out, sizeof(out)), -1);  /* "f" is Zg */
    assert_int_equal(sl_b64url_decode("Zm9", 3, out, sizeof(out)), -1); /* "fo" is Zm8 */
    assert_int_equal(sl_b64url_decode("Zg", 2, out, sizeof(out)), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64_parse),
        cmocka_unit_test(test_lent_buffer_moves_to_the_heap),
        cmocka_unit_test(test_hex_encode),
        cmocka_unit_test(test_arena_allocations_are_zero),
        cmocka_unit_test(test_xcalloc_is_zero),
        cmocka_unit_test(test_spare_stack),
        cmocka_unit_test(test_b64url_vectors),
        cmocka_unit_test(test_b64url_round_trip),
        cmocka_unit_test(test_b64url_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
