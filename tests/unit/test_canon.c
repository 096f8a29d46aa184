/* test_canon.c: RFC 8785 canonical JSON (proxy/canon.c).
 *
 * Vectors come from PROTOCOL.md §8.2 (the cyberphone/json-canonicalization reference set), the
 * edge cases RFC 8785 Appendix B is about, and fixture pairs under data/canon whose expected
 * output was computed by ECMAScript itself (data/canon/gen.js). Run from tests/unit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "canon.h"
#include "jsonrpc.h"
#include "sl_test.h"

/* ===== helpers ===== */

static int setup_arena(void **state)
{
    *state = sl_arena_new();
    return 0;
}

static int teardown_arena(void **state)
{
    sl_arena_free(*state);
    return 0;
}

static struct json *parse_at(struct sl_arena *a, const char *text, size_t len, const char *file,
                             int line)
{
    struct json *v = NULL;
    char err[200];
    if (json_parse(text, len, a, &v, err, sizeof(err)) != 0) {
        print_error("json_parse failed: %s\n", err);
        _fail(file, line);
    }
    return v;
}
#define parse(a, text) parse_at((a), (text), strlen(text), __FILE__, __LINE__)

/* canon_write(parse(in)) must be exactly want. */
static void check_canon_at(struct sl_arena *a, const char *in, const char *want, const char *file,
                           int line)
{
    struct json *v = parse_at(a, in, strlen(in), file, line);
    struct sl_buf out = { 0 };
    if (canon_write(&out, v) != 0) {
        print_error("canon_write refused %s\n", in);
        sl_buf_free(&out);
        _fail(file, line);
    }
    sl_test_bytes_equal(out.p, out.len, want, file, line);
    sl_buf_free(&out);
}
#define check_canon(a, in, want) check_canon_at((a), (in), (want), __FILE__, __LINE__)

static void digest_of_at(struct sl_arena *a, const char *in, uint8_t d[CANON_DIGEST_LEN],
                         const char *file, int line)
{
    struct json *v = parse_at(a, in, strlen(in), file, line);
    if (canon_digest(v, d) != 0) {
        print_error("canon_digest refused %s\n", in);
        _fail(file, line);
    }
}
#define digest_of(a, in, d) digest_of_at((a), (in), (d), __FILE__, __LINE__)

static double from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

static char *read_fixture(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f); /* run from tests/unit so data/ resolves */
    struct sl_buf b = { 0 };
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        sl_buf_put(&b, chunk, n);
    fclose(f);
    *len = b.len;
    return b.p;
}

/* ===== PROTOCOL.md §8.2 vectors ===== */

static void test_vector_numbers(void **state)
{
    check_canon(*state, "[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001]",
                "[333333333.3333333,1e+30,4.5,0.002,1e-27]");
}

static void test_vector_string_escapes(void **state)
{
    check_canon(*state, "\"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\"",
                "\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"");
}

static void test_vector_ieee_bits(void **state)
{
    (void)state;
    static const struct { uint64_t bits; const char *want; } rows[] = {
        { 0x4340000000000001, "9007199254740994" },
        { 0x444b1ae4d6e2ef50, "1e+21" },
        { 0x3eb0c6f7a0b5ed8d, "0.000001" },
        { 0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7" },
        { 0x8000000000000000, "0" },                       /* -0 */
        { 0x0000000000000000, "0" },
        { 0x0000000000000001, "5e-324" },                  /* smallest subnormal */
        { 0x8000000000000001, "-5e-324" },
        { 0x000fffffffffffff, "2.225073858507201e-308" },  /* largest subnormal */
        { 0x0010000000000000, "2.2250738585072014e-308" }, /* smallest normal */
        { 0x7fefffffffffffff, "1.7976931348623157e+308" }, /* largest double */
        { 0xffefffffffffffff, "-1.7976931348623157e+308" },
        { 0x3ff0000000000000, "1" },
        { 0xbff8000000000000, "-1.5" },
        { 0x3fb999999999999a, "0.1" },
        { 0x3fd3333333333334, "0.30000000000000004" },     /* 0.1 + 0.2 */
        { 0x4430000000000000, "295147905179352830000" },   /* 2^68: 21 digits, no exponent */
        { 0x4415af1d78b58c40, "100000000000000000000" },   /* 1e20 */
        { 0x3e7ad7f29abcaf48, "1e-7" },
        { 0x3eb0000000000000, "9.5367431640625e-7" },      /* 2^-20 */
        /* Powers of two, where the doubles below are denser than above: the shortest digits are
         * not the nearest 16-digit decimal (which reads back as another double). */
        { 0x0060000000000000, "7.120236347223045e-307" },
        { 0x0100000000000000, "7.291122019556398e-304" },
        { 0x0420000000000000, "8.209073602596753e-289" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        char buf[32];
        canon_number(from_bits(rows[i].bits), buf);
        assert_bytes_equal(buf, strlen(buf), rows[i].want);
    }
}

static void test_vector_key_order(void **state)
{
    /* 😂 (U+1F602, UTF-16 D83D DE02) sorts before U+FB33 in UTF-16 order, after it in code point
     * or UTF-8 byte order (RFC 8785 §3.2.3). */
    check_canon(*state,
                "{\"\\u20ac\":\"Euro Sign\",\"1\":\"One\",\"\\u0080\":\"Control\\u007f\","
                "\"\\ud83d\\ude02\":\"Smiley\",\"\\u00f6\":\"o\",\"\\ufb33\":\"Dalet\","
                "\"</script>\":\"Browser Challenge\"}",
                "{\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\xc2\x80\":\"Control\x7f\","
                "\"\xc3\xb6\":\"o\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x82\":\"Smiley\","
                "\"\xef\xac\xb3\":\"Dalet\"}");
}

/* ===== numbers from text ===== */

static void test_number_spellings(void **state)
{
    static const struct { const char *in, *want; } rows[] = {
        { "-0", "0" },
        { "-0.0e5", "0" },
        { "0", "0" },
        { "1.0", "1" },
        { "1e0", "1" },
        { "10E-1", "1" },
        { "1E+0", "1" },
        { "0.1e1", "1" },
        { "1e21", "1e+21" },
        { "1e20", "100000000000000000000" },
        { "999999999999999999999", "1e+21" },
        { "1e-7", "1e-7" },
        { "0.000001", "0.000001" },
        { "123e-20", "1.23e-18" },
        { "5e-324", "5e-324" },
        { "4.9e-324", "5e-324" },
        { "1e-400", "0" },   /* underflows to 0: the double the text denotes (as JS Number()) */
        { "-1e-400", "0" },
        { "1.7976931348623157e308", "1.7976931348623157e+308" },
        { "0.30000000000000004", "0.30000000000000004" },
        { "0.3000000000000000444", "0.30000000000000004" },
        { "9007199254740993", "9007199254740992" }, /* 2^53 + 1 rounds to even (PROTOCOL.md §8.5) */
        { "-123.456", "-123.456" },
        { "-5", "-5" },
        { "123456789012345", "123456789012345" },    /* 15 digits: taken as written */
        { "-123456789012345", "-123456789012345" },
        { "1234567890123456", "1234567890123456" },  /* 16 digits: through the double */
        { "99999999999999999", "100000000000000000" },
        { "9007199254740991", "9007199254740991" },  /* 2^53 - 1 */
        { "18446744073709551616", "18446744073709552000" }, /* 2^64 */
        { "100", "100" },
        { "1.5E3", "1500" },
        { "12345678901234567890", "12345678901234567000" },
        { "0.00001234", "0.00001234" },
        { "0.0000001234", "1.234e-7" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        check_canon(*state, rows[i].in, rows[i].want);
}

/* I-JSON (RFC 7493 §2.2): a number that is not a finite double has no canonical form. */
static void test_number_not_finite_refused(void **state)
{
    static const char *const rows[] = { "1e400", "-1e400", "1.8e308", "[1, 1e309]",
                                        "{\"a\":{\"b\":[2e999]}}" };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct sl_buf out = { 0 };
        uint8_t d[CANON_DIGEST_LEN];
        struct json *v = parse(*state, rows[i]);
        assert_int_equal(canon_write(&out, v), -1);
        assert_int_equal(canon_digest(v, d), -1);
        sl_buf_free(&out);
    }
}

/* A built tree can hold any text in u.num; only JSON number grammar (RFC 8259 §6) is taken, so
 * strtod's extras (nan, inf, hex, blanks) cannot slip in. */
static void test_number_text_not_json_refused(void **state)
{
    static const char *const rows[] = {
        "", "nan", "NaN", "inf", "Infinity", "-Infinity", "0x10", "0x1p3", " 1", "1 ", "+1",
        "01", "-01", "1.", ".5", "1e", "1e+", "-", "1.e5", "--1", "1e5.5", "١",
        "1111111111111111111111111111111111111111111111111111111111111111111", /* > SL_MAX_NUMBER */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct sl_buf out = { 0 };
        struct json *v = json_new_number(*state, rows[i]);
        if (canon_write(&out, v) != -1)
            fail_msg("accepted number text \"%s\" as %s", rows[i], out.p);
        sl_buf_free(&out);
    }
}

/* ===== strings ===== */

static void test_string_escapes(void **state)
{
    static const struct { const char *in, *want; } rows[] = {
        { "\"\\u0000\\u0001\\u0007\\u001f\"", "\"\\u0000\\u0001\\u0007\\u001f\"" },
        { "\"\\b\\t\\n\\f\\r\"", "\"\\b\\t\\n\\f\\r\"" },
        { "\"\\u0008\\u0009\\u000A\\u000c\\u000D\"", "\"\\b\\t\\n\\f\\r\"" },
        { "\"\\u000b\\u000e\\u001B\"", "\"\\u000b\\u000e\\u001b\"" },   /* lowercase hex */
        { "\"\\/\\\"\\\\\"", "\"/\\\"\\\\\"" },
        { "\"\\u007f\\u0080\"", "\"\x7f\xc2\x80\"" },                 /* DEL is not escaped */
        { "\"\\u2028\\u2029\"", "\"\xe2\x80\xa8\xe2\x80\xa9\"" },    /* nor are LS and PS */
        { "\"\\uD83D\\uDE02\"", "\"\xf0\x9f\x98\x82\"" },
        { "\"\\ud800\\udc00\\udbff\\udfff\"", "\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"" },
        { "\"\\ufeff\\uffff\"", "\"\xef\xbb\xbf\xef\xbf\xbf\"" },
        { "\"\"", "\"\"" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        check_canon(*state, rows[i].in, rows[i].want);
}

/* RFC 8785 §3.2.2.2: strings must be valid Unicode. A parsed tree already is; a built one may not
 * be, and canon must refuse rather than hash the bytes. */
static void test_invalid_utf8_refused(void **state)
{
    static const struct { const char *p; size_t len; } rows[] = {
        { "\xff", 1 },
        { "\xc0\xaf", 2 },             /* overlong '/' */
        { "\xed\xa0\x80", 3 },         /* encoded surrogate U+D800 */
        { "\xf4\x90\x80\x80", 4 },     /* above U+10FFFF */
        { "ab\xe2\x82", 4 },           /* truncated sequence */
        { "\x80", 1 },                 /* lone continuation byte */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct sl_buf out = { 0 };
        struct json *s = json_new_string(*state, rows[i].p, rows[i].len);
        assert_int_equal(canon_write(&out, s), -1);

        /* the same bytes as a key, among valid keys */
        struct json *o = json_new_object(*state);
        json_set(*state, o, "a", json_new_null(*state));
        json_set(*state, o, "z", json_new_null(*state));
        struct json_member *m = sl_arena_alloc(*state, 3 * sizeof(*m));
        memcpy(m, o->u.obj.v, 2 * sizeof(*m));
        m[2].key = (struct sl_str){ rows[i].p, rows[i].len };
        m[2].val = json_new_null(*state);
        o->u.obj.v = m;
        o->u.obj.n = 3;
        sl_buf_reset(&out);
        assert_int_equal(canon_write(&out, o), -1);
        sl_buf_free(&out);
    }
}

/* Strings are scanned eight bytes at a time (write_string_escaped): every byte value at every
 * offset of a 17-byte string, in a word and in the tail, is escaped as a byte at a time would
 * (a control character, '"' and '\\'), copied (other ASCII), or makes a lone byte of 0x80 and
 * above refused as invalid UTF-8, as a value and as a key. */
static void test_string_every_byte_every_offset(void **state)
{
    static const char hex[] = "0123456789abcdef";
    for (int c = 0; c < 256; c++) {
        for (size_t at = 0; at < 17; at++) {
            char in[17];
            memset(in, 'a', sizeof(in));
            in[at] = (char)c;
            struct sl_buf out = { 0 }, want = { 0 };
            struct json *v = json_new_string(*state, in, sizeof(in));
            struct json *o = json_new_object(*state);
            json_set(*state, o, "k", json_new_null(*state));
            o->u.obj.v[0].key = (struct sl_str){ in, sizeof(in) };
            if (c >= 0x80) {
                assert_int_equal(canon_write(&out, v), -1);
                sl_buf_reset(&out);
                assert_int_equal(canon_write(&out, o), -1);
                sl_buf_free(&out);
                continue;
            }
            sl_buf_putc(&want, '"');
            for (size_t i = 0; i < sizeof(in); i++) {
                unsigned char b = (unsigned char)in[i];
                const char *short_esc = b == '"' ? "\\\"" : b == '\\' ? "\\\\" : b == '\b' ? "\\b"
                                      : b == '\t' ? "\\t" : b == '\n' ? "\\n" : b == '\f' ? "\\f"
                                      : b == '\r' ? "\\r" : NULL;
                if (short_esc) {
                    sl_buf_puts(&want, short_esc);
                } else if (b < 0x20) {
                    sl_buf_puts(&want, "\\u00");
                    sl_buf_putc(&want, hex[b >> 4]);
                    sl_buf_putc(&want, hex[b & 15]);
                } else {
                    sl_buf_putc(&want, (char)b);
                }
            }
            sl_buf_putc(&want, '"');
            assert_int_equal(canon_write(&out, v), 0);
            assert_string_equal(out.p, want.p);
            sl_buf_reset(&out);
            assert_int_equal(canon_write(&out, o), 0);
            assert_int_equal(out.len, want.len + 7); /* {...:null} */
            assert_memory_equal(out.p + 1, want.p, want.len);
            sl_buf_free(&out);
            sl_buf_free(&want);
        }
    }
}

static void test_embedded_nul_kept(void **state)
{
    struct sl_buf out = { 0 };
    struct json *v = json_new_string(*state, "a\0b", 3);
    assert_int_equal(canon_write(&out, v), 0);
    assert_buf_equal(out, "\"a\\u0000b\"");
    sl_buf_free(&out);
}

/* ===== structure ===== */

static void test_structures(void **state)
{
    static const struct { const char *in, *want; } rows[] = {
        { "{}", "{}" },
        { "[]", "[]" },
        { " { } ", "{}" },
        { "[ [ ] , { } ]", "[[],{}]" },
        { "null", "null" },
        { "true", "true" },
        { "false", "false" },
        { "[null, true, false]", "[null,true,false]" },
        { "{\"b\":2,\"a\":1}", "{\"a\":1,\"b\":2}" },
        { "[3,1,2]", "[3,1,2]" },                               /* arrays keep their order */
        { "{\"aa\":1,\"a\":2,\"\":3}", "{\"\":3,\"a\":2,\"aa\":1}" }, /* a prefix sorts first */
        { "{\"B\":1,\"a\":2,\"A\":3,\"b\":4}", "{\"A\":3,\"B\":1,\"a\":2,\"b\":4}" },
        { "{\"z\":{\"y\":[{\"b\":1.0,\"a\":-0}],\"x\":{}},\"a\":[]}",
          "{\"a\":[],\"z\":{\"x\":{},\"y\":[{\"a\":0,\"b\":1}]}}" },
        { "\n\t{ \"b\" :\r\n [ 1 , 2 ] , \"a\" : \"x\" }\n", "{\"a\":\"x\",\"b\":[1,2]}" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        check_canon(*state, rows[i].in, rows[i].want);
}

/* UTF-16 code unit order against code point order, at each place they can disagree. */
static void test_key_order_utf16(void **state)
{
    static const struct { const char *in, *want; } rows[] = {
        /* U+10000 is D800 DC00 in UTF-16, below U+FFFF */
        { "{\"\\uffff\":1,\"\\ud800\\udc00\":2}", "{\"\xf0\x90\x80\x80\":2,\"\xef\xbf\xbf\":1}" },
        /* U+E000 (private use, just above the surrogates) sorts after every supplementary */
        { "{\"\\ue000\":1,\"\\udbff\\udfff\":2}", "{\"\xf4\x8f\xbf\xbf\":2,\"\xee\x80\x80\":1}" },
        { "{\"\\udbff\\udfff\":2,\"\\ue000\":1}", "{\"\xf4\x8f\xbf\xbf\":2,\"\xee\x80\x80\":1}" },
        /* U+D7FF sorts before any surrogate */
        { "{\"\\ud83d\\ude02\":1,\"\\ud7ff\":2}", "{\"\xed\x9f\xbf\":2,\"\xf0\x9f\x98\x82\":1}" },
        /* same high surrogate: the low surrogates decide (U+1F602 > U+1F600) */
        { "{\"\\ud83d\\ude02\":1,\"\\ud83d\\ude00\":2}",
          "{\"\xf0\x9f\x98\x80\":2,\"\xf0\x9f\x98\x82\":1}" },
        /* the difference is after a shared prefix */
        { "{\"x\\ufb33\":1,\"x\\ud83d\\ude02\":2}",
          "{\"x\xf0\x9f\x98\x82\":2,\"x\xef\xac\xb3\":1}" },
        /* differences inside a code point: continuation bytes decide */
        { "{\"\\u00e9\":1,\"\\u00e8\":2}", "{\"\xc3\xa8\":2,\"\xc3\xa9\":1}" },
        { "{\"\\uffff\":1,\"\\uefff\":2,\"\\ue000\":3}",
          "{\"\xee\x80\x80\":3,\"\xee\xbf\xbf\":2,\"\xef\xbf\xbf\":1}" },
        /* below U+E000 code point order holds: U+0800 and ASCII before supplementary */
        { "{\"\\ud800\\udc00\":1,\"\\u0800\":2,\"~\":3}",
          "{\"~\":3,\"\xe0\xa0\x80\":2,\"\xf0\x90\x80\x80\":1}" },
        /* every supplementary plane's lead byte (F0-F4) against EF */
        { "{\"\\uffff\":1,\"\\udbff\\udfff\":2,\"\\ud8c0\\udc00\":3}",
          "{\"\xf1\x80\x80\x80\":3,\"\xf4\x8f\xbf\xbf\":2,\"\xef\xbf\xbf\":1}" },
        /* a key that is a prefix of another, with a supplementary tail */
        { "{\"a\\ud83d\\ude02\":1,\"a\":2}", "{\"a\":2,\"a\xf0\x9f\x98\x82\":1}" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        check_canon(*state, rows[i].in, rows[i].want);
}

/* More members than fit the on-stack sort index. */
static void test_large_object(void **state)
{
    struct json *o = json_new_object(*state);
    for (int i = 299; i >= 0; i--) {
        char key[16];
        snprintf(key, sizeof(key), "k%03d", i);
        json_set(*state, o, key, json_new_number(*state, "1.0"));
    }
    struct sl_buf want = { 0 }, out = { 0 };
    sl_buf_putc(&want, '{');
    for (int i = 0; i < 300; i++)
        sl_buf_printf(&want, "%s\"k%03d\":1", i ? "," : "", i);
    sl_buf_putc(&want, '}');
    assert_int_equal(canon_write(&out, o), 0);
    assert_buf_equal(out, want.p);
    sl_buf_free(&want);
    sl_buf_free(&out);
}

/* A parsed tree never has two equal keys; a built one could, and then it has no canonical form
 * (I-JSON, RFC 7493 §2.3): the two members could hash either way round. */
static void test_duplicate_keys_refused(void **state)
{
    for (size_t n = 2; n <= 40; n += 38) { /* small and large (heap) sort index */
        struct json *o = json_new_object(*state);
        for (size_t i = 0; i < n - 1; i++) {
            char key[24];
            snprintf(key, sizeof(key), "k%02zu", i);
            json_set(*state, o, key, json_new_null(*state));
        }
        struct json_member *m = sl_arena_alloc(*state, n * sizeof(*m));
        memcpy(m, o->u.obj.v, (n - 1) * sizeof(*m));
        m[n - 1] = m[0];
        o->u.obj.v = m;
        o->u.obj.n = n;
        struct sl_buf out = { 0 };
        assert_int_equal(canon_write(&out, o), -1);
        sl_buf_free(&out);
    }
}

/* A built tree with a hole in it (a NULL child) is refused, not dereferenced. */
static void test_null_child_refused(void **state)
{
    struct json *arr = json_new_array(*state);
    json_push(*state, arr, json_new_null(*state));
    json_push(*state, arr, NULL);
    struct sl_buf out = { 0 };
    assert_int_equal(canon_write(&out, arr), -1); /* logs an internal check */
    sl_buf_free(&out);
}

/* ===== digests ===== */

static void test_digest_known(void **state)
{
    /* printf '%s' '{"a":1}' | sha256sum */
    static const uint8_t want[CANON_DIGEST_LEN] = {
        0x01, 0x5a, 0xbd, 0x7f, 0x5c, 0xc5, 0x7a, 0x2d, 0xd9, 0x4b, 0x75, 0x90, 0xf0, 0x4a, 0xd8, 0x08,
        0x42, 0x73, 0x90, 0x5e, 0xe3, 0x3e, 0xc5, 0xce, 0xbe, 0xae, 0x62, 0x27, 0x6a, 0x97, 0xf8, 0x62,
    };
    uint8_t d[CANON_DIGEST_LEN];
    digest_of(*state, "{ \"a\" : 1.0 }", d);
    assert_memory_equal(d, want, CANON_DIGEST_LEN);
}

/* Spellings of one value give one digest: what a client may change between rounds. */
static void test_digest_same_value(void **state)
{
    static const struct { const char *a, *b; } rows[] = {
        { "{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}" },
        { "{\"a\":1}", "{ \"a\" :\n 1 }" },
        { "{\"a\":1}", "{\"a\":1.0}" },
        { "{\"a\":1}", "{\"a\":1e0}" },
        { "{\"a\":1}", "{\"a\":10E-1}" },
        { "{\"a\":0}", "{\"a\":-0}" },
        { "{\"a\":\"\xc3\xa9/\"}", "{\"\\u0061\":\"\\u00e9\\/\"}" },
        { "{\"x\":{\"q\":[1,{\"d\":null,\"c\":true}],\"p\":\"s\"},\"w\":false}",
          "{\"w\":false,\"x\":{\"p\":\"s\",\"q\":[1.00,{\"c\":true,\"d\":null}]}}" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        uint8_t da[CANON_DIGEST_LEN], db[CANON_DIGEST_LEN];
        digest_of(*state, rows[i].a, da);
        digest_of(*state, rows[i].b, db);
        if (memcmp(da, db, CANON_DIGEST_LEN) != 0)
            fail_msg("row %zu: %s and %s digest differently", i, rows[i].a, rows[i].b);
    }
}

/* Different values give different digests: what a confirmation must notice. */
static void test_digest_different_value(void **state)
{
    static const struct { const char *a, *b; } rows[] = {
        { "{\"a\":1}", "{\"a\":2}" },
        { "{\"a\":1}", "{\"a\":\"1\"}" },
        { "{\"a\":1}", "{\"A\":1}" },
        { "{\"a\":1}", "{\"a\":1,\"b\":1}" },
        { "{\"a\":null}", "{}" },
        { "{\"a\":true}", "{\"a\":\"true\"}" },
        { "[1,2]", "[2,1]" },
        { "[1,[2]]", "[[1],2]" },
        { "{\"a\":\"x\"}", "{\"a\":\"x\\u0000\"}" },
        { "{\"a\":\"x\"}", "{\"a\":\"x \"}" },
        { "{\"a\":{}}", "{\"a\":[]}" },
        { "{\"a\":0.1}", "{\"a\":0.10000000000000002}" },
        { "{\"repo\":\"acme/site\"}", "{\"repo\":\"acme/site2\"}" },
        { "{\"ab\":\"c\"}", "{\"a\":\"bc\"}" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        uint8_t da[CANON_DIGEST_LEN], db[CANON_DIGEST_LEN];
        digest_of(*state, rows[i].a, da);
        digest_of(*state, rows[i].b, db);
        if (memcmp(da, db, CANON_DIGEST_LEN) == 0)
            fail_msg("row %zu: %s and %s digest alike", i, rows[i].a, rows[i].b);
    }
}

static void test_digest_matches_write(void **state)
{
    struct json *v = parse(*state, "{\"b\":[1,2.50],\"a\":\"\\u20ac\"}");
    struct sl_buf out = { 0 };
    assert_int_equal(canon_write(&out, v), 0);
    uint8_t d[CANON_DIGEST_LEN], want[CANON_DIGEST_LEN];
    assert_int_equal(canon_digest(v, d), 0);
    unsigned int len = 0;
    assert_int_equal(EVP_Digest(out.p, out.len, want, &len, EVP_sha256(), NULL), 1);
    assert_memory_equal(d, want, CANON_DIGEST_LEN);
    sl_buf_free(&out);
}

/* canon_write appends; it does not reset the buffer. */
static void test_write_appends(void **state)
{
    struct sl_buf out = { 0 };
    sl_buf_puts(&out, "x=");
    assert_int_equal(canon_write(&out, parse(*state, "{\"b\":1,\"a\":2}")), 0);
    assert_buf_equal(out, "x={\"a\":2,\"b\":1}");
    sl_buf_free(&out);
}

/* ===== fixtures computed by ECMAScript (data/canon/gen.js) ===== */

static void test_fixtures(void **state)
{
    static const char *const names[] = { "numbers", "random-1", "random-2", "random-3", "random-4" };
    for (size_t i = 0; i < SL_ARRAY_LEN(names); i++) {
        char path[128];
        size_t in_len, want_len;
        snprintf(path, sizeof(path), "data/canon/%s.in.json", names[i]);
        char *in = read_fixture(path, &in_len);
        snprintf(path, sizeof(path), "data/canon/%s.out.json", names[i]);
        char *want = read_fixture(path, &want_len);
        struct json *v = parse_at(*state, in, in_len, __FILE__, __LINE__);
        struct sl_buf out = { 0 };
        assert_int_equal(canon_write(&out, v), 0);
        if (out.len != want_len || memcmp(out.p, want, want_len) != 0) {
            size_t k = 0;
            while (k < out.len && k < want_len && out.p[k] == want[k])
                k++;
            fail_msg("%s: differs at byte %zu", names[i], k);
        }
        sl_buf_free(&out);
        free(in);
        free(want);
    }
}

/* CPU seconds of reps calls of canon_number(d), the least of five runs (the others may have
 * shared the CPU). */
static double number_cost(double d, int reps)
{
    double best = 1e9;
    for (int run = 0; run < 5; run++) {
        struct timespec t0, t1;
        char buf[32];
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        for (int i = 0; i < reps; i++)
            canon_number(d, buf);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (s < best)
            best = s;
    }
    return best;
}

/* canon_write of a literal through write_number, NUL-terminated in out (or "refused"). */
static void canon_literal(struct sl_arena *a, const char *lit, char out[64])
{
    struct sl_buf b = { 0 };
    if (canon_write(&b, json_new_number(a, lit)) == 0)
        snprintf(out, 64, "%s", b.p);
    else
        snprintf(out, 64, "refused");
    sl_buf_free(&b);
}

/* Literals of 1 to 17 significant digits with leading and trailing zeros, a point anywhere and
 * exponents around both ends of the range: a literal of at most 15 digits well inside the normal
 * doubles is laid out from its own digits (write_number's short_decimal), every other one goes
 * through strtod and the digit search. Both must give what the search gives for the double. */
static void test_short_decimals_match_the_search(void **state)
{
    srand(24);
    for (int i = 0; i < 200000; i++) {
        char lit[80], *o = lit;
        if (rand() % 4 == 0)
            *o++ = '-';
        int lead = rand() % 3, k = 1 + rand() % 17, trail = rand() % 3;
        int total = lead + k + trail, point = rand() % (total + 1);
        char d[40];
        for (int j = 0; j < total; j++)
            d[j] = (char)('0' + (j < lead || j >= lead + k ? 0 : rand() % 10));
        if (k > 1 && rand() % 2) /* runs of zeros and nines, where rounding matters */
            memset(d + lead + 1, rand() % 2 ? '0' : '9', (size_t)(k - 2));
        /* JSON: no leading zero before other digits, at least one digit each side of '.' */
        int skip = 0;
        while (skip < point - 1 && d[skip] == '0')
            skip++;
        if (point == 0) {
            *o++ = '0';
            *o++ = '.';
        }
        for (int j = skip; j < total; j++) {
            if (j == point && j > 0)
                *o++ = '.';
            *o++ = d[j];
        }
        if (point == total && o[-1] == '.')
            o--;
        int r = rand() % 6;
        if (r > 0) {
            int e = r == 1 ? rand() % 21 - 10 : r < 4 ? 270 + rand() % 40 : -(270 + rand() % 60);
            o += sprintf(o, "%s%s%d", rand() % 2 ? "e" : "E", e >= 0 && rand() % 2 ? "+" : "", e);
        }
        *o = '\0';
        char got[64], want[64];
        canon_literal(*state, lit, got);
        double v = strtod(lit, NULL);
        if (isfinite(v))
            canon_number(v, want);
        else
            strcpy(want, "refused");
        if (strcmp(got, want) != 0)
            fail_msg("%s: canonical %s, the search gives %s", lit, got, want);
    }
}

/* CPU seconds of reps canon_writes of literals taken in turn, the least of five runs. */
static double literal_cost(struct sl_arena *a, const char *const *lits, size_t n, int reps)
{
    char buf[64];
    double best = 1e9;
    for (int run = 0; run < 5; run++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        for (int i = 0; i < reps; i++)
            canon_literal(a, lits[(size_t)i % n], buf);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        best = s < best ? s : best;
    }
    return best;
}

/* The literals of the usual kind cost a fraction of those of 16 digits, which need strtod and
 * the digit search: 1 MiB of "1.1," is about 260,000 numbers, and the search's 1.3 us each held
 * sluice's one thread 0.6 s per round. */
static void test_short_decimal_cost(void **state)
{
    static const char *const usual[] = { "1.1", "-273.15", "0.001", "6.02214076e23", "2.5E-3" };
    static const char *const long16[] = { "1.100000000000001", "-273.1500000000001",
                                          "0.001000000000000001", "6.022140760000001e23",
                                          "2.500000000000001E-3" };
    double fast = literal_cost(*state, usual, SL_ARRAY_LEN(usual), 3000);
    double slow = literal_cost(*state, long16, SL_ARRAY_LEN(long16), 3000);
    if (fast * 2 > slow)
        fail_msg("short literals cost %.2f of 16-digit ones (want under 1/2)", fast / slow);
}

/* A client chooses the numbers of a gated call, up to 1 MiB of them, and sluice canonicalizes
 * them on its one thread (twice for a question). Doubles whose 17 digits are a run of zeros and
 * one more digit (0.1 + 0.2) made the search try every digit count with printf and strtod: about
 * 15 times the cost of 1.1, 1.6 s of CPU for a 1 MiB call of them. They cost about what any
 * double costs now; the bound leaves room for a noisy machine. */
static void test_number_cost_bounded(void **state)
{
    (void)state;
    static const double hard[] = { 0.30000000000000004, 1.0000000000000002,
                                   100.00000000000001, 3.0000000000000004e-200 };
    const int reps = 4000;
    double base = number_cost(1.1, reps);
    for (size_t i = 0; i < SL_ARRAY_LEN(hard); i++) {
        double cost = number_cost(hard[i], reps);
        if (cost > 5 * base)
            fail_msg("canon_number(%.17g) costs %.1f times canon_number(1.1)", hard[i],
                     cost / base);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup_arena, teardown_arena)
        T(test_vector_numbers),
        T(test_vector_string_escapes),
        T(test_vector_ieee_bits),
        T(test_number_cost_bounded),
        T(test_short_decimals_match_the_search),
        T(test_short_decimal_cost),
        T(test_vector_key_order),
        T(test_number_spellings),
        T(test_number_not_finite_refused),
        T(test_number_text_not_json_refused),
        T(test_string_escapes),
        T(test_invalid_utf8_refused),
        T(test_string_every_byte_every_offset),
        T(test_embedded_nul_kept),
        T(test_structures),
        T(test_key_order_utf16),
        T(test_large_object),
        T(test_duplicate_keys_refused),
        T(test_null_child_refused),
        T(test_digest_known),
        T(test_digest_same_value),
        T(test_digest_different_value),
        T(test_digest_matches_write),
        T(test_write_appends),
        T(test_fixtures),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
