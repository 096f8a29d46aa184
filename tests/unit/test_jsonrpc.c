/* test_jsonrpc.c: the reader refuses what it must (bad UTF-8, lone surrogates, duplicate keys at
 * any depth, limits, comments, garbage) and keeps what it reads exact (ids, numbers, NUL bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "era.h"
#include "jsonrpc.h"

struct row {
    const char *in;
    size_t len;       /* 0: strlen(in) */
    int code;         /* 0: accepted; else the error code */
    const char *id;   /* the id reported with the error, or NULL */
};

#define HEAD "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":"
#define REQ(p) HEAD p "}"

static const struct row rows[] = {
    /* accepted */
    { REQ("{}"), 0, 0, NULL },
    { REQ("[1,2]"), 0, 0, NULL },
    { "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", 0, 0, NULL },
    { "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", 0, 0, NULL },
    { "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}", 0, 0,
      NULL },
    { REQ("{\"s\":\"\\ud83d\\ude02\"}"), 0, 0, NULL },
    { REQ("{\"s\":\"\\u0000\"}"), 0, 0, NULL },
    { REQ("{\"a\":{\"x\":1},\"b\":{\"x\":1}}"), 0, 0, NULL }, /* same key, other objects */
    /* whitespace (space, tab, LF, CR) before and after every token */
    { " \t\r\n{ \"jsonrpc\" :\t\"2.0\"\n,\r\"id\"\t: 1 ,\"method\":\"m\" ,\n\"params\" : { \"a\" :"
      " [ 1 , { } , [ ] , \"x\" , true\t,\tnull ] , \"b\":{\r} } } \r\n\t ", 0, 0, NULL },
    { REQ("{\"a\":[\n]}"), 0, 0, NULL },
    { REQ("[\r1,\n2,\t3, 4]"), 0, 0, NULL },                            /* each before a value */
    /* parse errors */
    { "", 0, JSONRPC_PARSE_ERROR, "null" },
    { " \t\r\n", 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\":\f1}"), 0, JSONRPC_PARSE_ERROR, "null" },       /* form feed is not whitespace */
    { REQ("{\"a\"\v:1}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\":1\f}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("[1 2]"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("[1 ;2]"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\" ;1}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("[1,]"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("[1, ]"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\":1,}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\":1, }"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\" 1}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{ , }"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("[ , ]"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\":}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\": "), 0, JSONRPC_PARSE_ERROR, "null" },
    { "{\"jsonrpc\":\"2.0\" ", 0, JSONRPC_PARSE_ERROR, "null" },
    { "{", 0, JSONRPC_PARSE_ERROR, "null" },
    { "not json", 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{}") " {}", 0, JSONRPC_PARSE_ERROR, "null" },
    { "/* c */" REQ("{}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"a\":1,\"a\":2}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"x\":{\"y\":{\"a\":1,\"b\":2,\"a\":3}}}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"m\"}", 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"name\":\"a\",\"name\":\"b\"}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"s\":\"\\ud800\"}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"s\":\"\\udc00\"}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"s\":\"\\ud800\\u0041\"}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"s\":\"\\ud800x\"}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"\\udfff\":1}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"s\":\"\xc0\xaf\"}"), 0, JSONRPC_PARSE_ERROR, "null" },     /* overlong '/' */
    { REQ("{\"s\":\"\xed\xa0\x80\"}"), 0, JSONRPC_PARSE_ERROR, "null" }, /* encoded surrogate */
    { REQ("{\"s\":\"\xf4\x90\x80\x80\"}"), 0, JSONRPC_PARSE_ERROR, "null" }, /* > U+10FFFF */
    { REQ("{\"s\":\"\xff\"}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"\xe2\x82\":1}"), 0, JSONRPC_PARSE_ERROR, "null" },         /* truncated, in a key */
    { REQ("{\"s\":\"a\nb\"}"), 0, JSONRPC_PARSE_ERROR, "null" },         /* raw control char */
    { REQ("{\"n\":01}"), 0, JSONRPC_PARSE_ERROR, "null" },
    { REQ("{\"n\":NaN}"), 0, JSONRPC_PARSE_ERROR, "null" },
    /* invalid requests: JSON, but not JSON-RPC */
    { "[" REQ("{}") "]", 0, JSONRPC_INVALID_REQUEST, "null" },
    { "[]", 0, JSONRPC_INVALID_REQUEST, "null" },
    { "42", 0, JSONRPC_INVALID_REQUEST, "null" },
    { "{\"id\":1,\"method\":\"m\"}", 0, JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"1.0\",\"id\":\"x\",\"method\":\"m\"}", 0, JSONRPC_INVALID_REQUEST, "\"x\"" },
    { "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":5}", 0, JSONRPC_INVALID_REQUEST, "7" },
    { "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\",\"params\":3}", 0, JSONRPC_INVALID_REQUEST,
      "7" },
    { "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}", 0, JSONRPC_INVALID_REQUEST, "null" },
    { "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", 0, JSONRPC_INVALID_REQUEST, "null" },
    { "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}", 0, JSONRPC_INVALID_REQUEST, "null" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1}", 0, JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", 0, JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}", 0,
      JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"result\":{}}", 0, JSONRPC_INVALID_REQUEST,
      "1" },
    /* the envelope's keys exactly (one pass compares them by length and bytes): a near miss is
     * some other member, an escaped spelling is the key itself */
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"resulT\":{}}", 0, JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"resul\":{}}", 0, JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"erroR\":{\"code\":1,\"message\":\"m\"}}", 0,
      JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"2.0\",\"iD\":1,\"result\":{}}", 0, JSONRPC_INVALID_REQUEST, "null" },
    { "{\"jsonrpC\":\"2.0\",\"id\":1,\"result\":{}}", 0, JSONRPC_INVALID_REQUEST, "1" },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"methoD\":\"m\",\"result\":{}}", 0, 0, NULL },
    { "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\",\"paramS\":3}", 0, 0, NULL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"resul\\u0074\":{}}", 0, 0, NULL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"resul\\u0074\":{},\"error\":{}}", 0,
      JSONRPC_INVALID_REQUEST, "1" },
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        size_t len = r->len ? r->len : strlen(r->in);
        struct jsonrpc_msg *m = NULL;
        struct jsonrpc_parse_error err;
        int rc = jsonrpc_parse(r->in, len, &m, &err);
        if (r->code == 0 && rc != 0)
            fail_msg("row %zu %s: refused (%d %s)", i, r->in, err.code, err.msg);
        if (r->code != 0 && (rc == 0 || err.code != r->code))
            fail_msg("row %zu %s: got rc %d code %d, want %d", i, r->in, rc, err.code, r->code);
        if (r->code != 0 && r->id)
            assert_string_equal(err.id, r->id);
        if (rc == 0) { /* the bound the gate trusts is never below what is written */
            struct sl_buf b = { 0 };
            json_write(&b, m->root);
            if (json_write_bound(m->root) < b.len)
                fail_msg("row %zu: json_write_bound %zu < %zu written", i,
                         json_write_bound(m->root), b.len);
            sl_buf_free(&b);
        }
        jsonrpc_msg_free(m);
    }
}

static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * n + tl + 1);
    memcpy(s, head, hl);
    for (size_t i = 0; i < n; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + ul * n, tail, tl + 1);
    return s;
}

static int parse_code(const char *s)
{
    struct jsonrpc_msg *m = NULL;
    struct jsonrpc_parse_error err;
    int rc = jsonrpc_parse(s, strlen(s), &m, &err);
    jsonrpc_msg_free(m);
    return rc == 0 ? 0 : err.code;
}

static void test_depth_limit(void **state)
{
    (void)state;
    /* the message object is depth 1, params 2: SL_MAX_DEPTH containers fit in all */
    char *s = repeat("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":", "[",
                     SL_MAX_DEPTH - 1, "");
    char *full = malloc(strlen(s) + SL_MAX_DEPTH + 2);
    strcpy(full, s);
    for (size_t i = 0; i < SL_MAX_DEPTH - 1; i++)
        strcat(full, "]");
    strcat(full, "}");
    assert_int_equal(parse_code(full), 0);
    free(s);
    free(full);
    char *deep = repeat(HEAD, "[", 1000, "");
    assert_int_equal(parse_code(deep), JSONRPC_PARSE_ERROR);
    free(deep);
}

static void test_size_limits(void **state)
{
    (void)state;
    char *big = repeat(HEAD "{\"s\":\"", "a", SL_MAX_STRING + 1, "\"}}");
    assert_int_equal(parse_code(big), JSONRPC_PARSE_ERROR);
    free(big);
    char *fits = repeat(HEAD "{\"s\":\"", "a", SL_MAX_MESSAGE - 100, "\"}}");
    assert_int_equal(parse_code(fits), 0);
    free(fits);
    char *huge = repeat("[", "1,", SL_MAX_MESSAGE / 2, "1]");
    assert_int_equal(parse_code(huge), JSONRPC_PARSE_ERROR);
    free(huge);
    char *members = repeat("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[", "0,",
                           SL_MAX_MEMBERS + 1, "0]}");
    assert_int_equal(parse_code(members), JSONRPC_PARSE_ERROR);
    free(members);
    char *number = repeat(HEAD "{\"n\":", "1", SL_MAX_NUMBER + 1, "}}");
    assert_int_equal(parse_code(number), JSONRPC_PARSE_ERROR);
    free(number);
}

/* Many distinct keys go through the sorted duplicate check; one repeat among them is found. */
static void test_duplicate_in_large_object(void **state)
{
    (void)state;
    struct sl_buf b = { 0 };
    sl_buf_puts(&b, HEAD "{");
    for (int i = 0; i < 5000; i++)
        sl_buf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
    sl_buf_puts(&b, "}}");
    assert_int_equal(parse_code(b.p), 0);
    b.len -= 2;
    sl_buf_puts(&b, ",\"k4321\":0}}");
    assert_int_equal(parse_code(b.p), JSONRPC_PARSE_ERROR);
    sl_buf_free(&b);
}

static void test_exact_values(void **state)
{
    (void)state;
    static const char in[] = "{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890123,\"method\":\"m\","
                             "\"params\":{\"s\":\"a\\u0000b\",\"n\":1.50e+3}}";
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error err;
    assert_int_equal(jsonrpc_parse(in, sizeof(in) - 1, &m, &err), 0);
    assert_int_equal(m->kind, JSONRPC_REQUEST);
    struct sl_buf b = { 0 };
    json_write(&b, m->id);
    assert_string_equal(b.p, "12345678901234567890123");
    struct json *s = json_get(m->params, "s");
    assert_int_equal(s->u.str.len, 3);
    assert_memory_equal(s->u.str.p, "a\0b", 3);
    sl_buf_reset(&b);
    json_write(&b, m->params);
    assert_string_equal(b.p, "{\"s\":\"a\\u0000b\",\"n\":1.50e+3}");
    sl_buf_free(&b);
    jsonrpc_msg_free(m);
}

static void test_writers(void **state)
{
    (void)state;
    struct sl_buf b = { 0 };
    jsonrpc_write_error(&b, SL_STR("\"x\""), -32602, "bad \"thing\"\n", "{\"reason\":1}");
    assert_string_equal(b.p, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32602,"
                             "\"message\":\"bad \\\"thing\\\"\\n\",\"data\":{\"reason\":1}}}");
    sl_buf_reset(&b);
    jsonrpc_write_result(&b, SL_STR("7"), SL_STR("{}"));
    assert_string_equal(b.p, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
    sl_buf_reset(&b);
    struct sl_arena *a = sl_arena_new();
    struct json *v;
    char err[64];
    static const char text[] = "{\"a\":[1,\"\\u00e9\"]}";
    assert_int_equal(json_parse(text, sizeof(text) - 1, a, &v, err, sizeof(err)), 0);
    /* A peer's result goes out as it was sent, escapes and all; once edited, it is written. */
    jsonrpc_write_result_value(&b, SL_STR("\"q\""), v);
    assert_string_equal(b.p, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"result\":{\"a\":[1,\"\\u00e9\"]}}");
    sl_buf_reset(&b);
    json_push(a, json_get(v, "a"), json_new_null(a));
    jsonrpc_write_result_value(&b, SL_STR("\"q\""), v);
    assert_string_equal(b.p, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"result\":{\"a\":[1,\"\xc3\xa9\",null]}}");
    sl_arena_free(a);
    sl_buf_free(&b);
}

/* The plain byte-at-a-time escaping json_write_string must match, whatever its fast path does. */
static void ref_write_string(struct sl_buf *out, const unsigned char *p, size_t len)
{
    sl_buf_putc(out, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (c == '"')
            sl_buf_puts(out, "\\\"");
        else if (c == '\\')
            sl_buf_puts(out, "\\\\");
        else if (c == '\n')
            sl_buf_puts(out, "\\n");
        else if (c == '\r')
            sl_buf_puts(out, "\\r");
        else if (c == '\t')
            sl_buf_puts(out, "\\t");
        else if (c == '\b')
            sl_buf_puts(out, "\\b");
        else if (c == '\f')
            sl_buf_puts(out, "\\f");
        else if (c < 0x20)
            sl_buf_printf(out, "\\u%04x", c);
        else
            sl_buf_putc(out, (char)c);
    }
    sl_buf_putc(out, '"');
}

static void test_string_writer_differential(void **state)
{
    (void)state;
    /* Bytes next to the ones that need escaping (0x1f/0x20, '!'/'#', '['/']'), high bytes, and
     * every position of an escape inside and across 8-byte words. */
    static const unsigned char pick[] = { 'a', 'a', 'a', 'a', 'z', 0x00, 0x01, 0x08, 0x09, 0x0a,
                                          0x0c, 0x0d, 0x1f, 0x20, '!', '"', '#', '[', '\\', ']',
                                          0x7f, 0x80, 0xa2, 0xdc, 0xff };
    uint64_t seed = 0x9e3779b97f4a7c15u;
    struct sl_buf got = { 0 }, want = { 0 };
    unsigned char s[80];
    for (int round = 0; round < 50000; round++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        size_t len = seed % sizeof(s);
        bool plain = (seed >> 8) % 4 == 0; /* long clean runs with one escape, sometimes none */
        for (size_t i = 0; i < len; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            s[i] = plain ? 'a' + seed % 26 : pick[seed % sizeof(pick)];
        }
        if (plain && len > 0 && (seed >> 20) % 2)
            s[(seed >> 24) % len] = pick[5 + (seed >> 32) % 16];
        sl_buf_reset(&got);
        sl_buf_reset(&want);
        json_write_string(&got, (const char *)s, len);
        ref_write_string(&want, s, len);
        if (got.len != want.len || memcmp(got.p, want.p, got.len) != 0)
            fail_msg("round %d (len %zu): got %s, want %s", round, len, got.p, want.p);
        struct json node = { .type = JSON_STRING, .u.str = { (const char *)s, len } };
        if (json_write_bound(&node) < got.len)
            fail_msg("round %d: json_write_bound below the %zu bytes written", round, got.len);
    }
    sl_buf_free(&got);
    sl_buf_free(&want);
}

/* UTF-8 checking one byte at a time, as sl_utf8_valid did before its ASCII fast path. */
static bool ref_utf8_valid(const unsigned char *p, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            n = 1, cp = c & 0x1F, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 2, cp = c & 0x0F, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3, cp = c & 0x07, min = 0x10000;
        else
            return false;
        if (len - i - 1 < n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

static void test_utf8_differential(void **state)
{
    (void)state;
    /* Mostly ASCII with a few lead and continuation bytes, so that valid and invalid sequences
     * start, end and get cut at every position of an 8-byte word. */
    static const unsigned char pick[] = { 'a', 'b', 'c', 'd', 0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xc2,
                                          0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff };
    static const char *const good[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x82",
                                        "\xed\x9f\xbf" };
    uint64_t seed = 0x243f6a8885a308d3u;
    unsigned char s[64];
    int valid = 0;
    for (int round = 0; round < 200000; round++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        size_t len = seed % sizeof(s), i = 0;
        while (i < len) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            if (seed % 97 == 0) {
                s[i++] = pick[(seed >> 8) % sizeof(pick)];
            } else if (seed % 13 == 0) {
                const char *g = good[(seed >> 8) % 4];
                for (size_t k = 0; g[k] && i < len; k++)
                    s[i++] = (unsigned char)g[k];
            } else {
                s[i++] = (unsigned char)('a' + (seed >> 8) % 26);
            }
        }
        bool want = ref_utf8_valid(s, len);
        valid += want;
        if (sl_utf8_valid((const char *)s, len) != want)
            fail_msg("round %d (len %zu): sl_utf8_valid says %d", round, len, !want);
    }
    assert_true(valid > 1000 && valid < 199000); /* both outcomes were exercised */
}

/* Strings cut at every position of an 8-byte word by a quote, an escape, a control character,
 * an invalid byte or a multi-byte character: the reader's word-at-a-time scan must find exactly
 * what a byte-at-a-time reading finds. A string ends in the same word as the next string's
 * non-ASCII text, so no byte of one is taken for the other's. */
static void test_string_scan_differential(void **state)
{
    (void)state;
    static const struct { const char *text, *value; bool ok; } piece[] = {
        { "a", "a", true }, { "bcdefgh", "bcdefgh", true }, { "\xc3\xa9", "\xc3\xa9", true },
        { "\\n", "\n", true }, { "\\u00e9", "\xc3\xa9", true }, { "\\\"", "\"", true },
        { "\x01", NULL, false }, { "\x1f", NULL, false }, { "\xff", "\xff", true },
        { "\x80", "\x80", true }, { "\xe2\x82", "\xe2\x82", true },
    };
    uint64_t seed = 0x13198a2e03707344u;
    int ok = 0;
    for (int round = 0; round < 100000; round++) {
        struct sl_buf text = { 0 }, want = { 0 };
        bool good = true;
        sl_buf_puts(&text, "[\"");
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        size_t n = seed % 12;
        for (size_t i = 0; i < n; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            size_t k = (seed >> 8) % 64;
            k = k < 40 ? k % 3 : k - 40 < SL_ARRAY_LEN(piece) ? k - 40 : 0;
            sl_buf_puts(&text, piece[k].text);
            if (piece[k].ok)
                sl_buf_puts(&want, piece[k].value);
            good = good && piece[k].ok;
        }
        good = good && ref_utf8_valid((const unsigned char *)want.p, want.len);
        sl_buf_puts(&text, "\",\"\xc3\xa9x\"]");
        struct sl_arena *a = sl_arena_new();
        struct json *v;
        char err[160];
        bool got = json_parse(text.p, text.len, a, &v, err, sizeof(err)) == 0;
        if (got != good)
            fail_msg("round %d: %s was %s (%s)", round, text.p, got ? "read" : "refused", err);
        if (got) {
            const struct json *s0 = v->u.arr.v[0];
            assert_int_equal(s0->u.str.len, want.len);
            assert_memory_equal(s0->u.str.p, want.len ? want.p : "", want.len);
            assert_int_equal(s0->u.str.p[want.len], '\0');
            assert_string_equal(v->u.arr.v[1]->u.str.p, "\xc3\xa9x");
            ok++;
        }
        sl_arena_free(a);
        sl_buf_free(&text);
        sl_buf_free(&want);
    }
    assert_true(ok > 10000 && ok < 90000); /* both outcomes were exercised */
}

/* A long string with one odd byte at every position of the 16-byte blocks the reader skips at
 * once: a control byte or a lone continuation byte is refused, a quote ends the string there,
 * and a valid two-byte character is kept, wherever it falls. */
static void test_long_string_blocks(void **state)
{
    (void)state;
    enum { LEN = 100 };
    static const struct { const char *odd; bool ok; } cases[] = {
        { "\x01", false }, { "\x1f", false }, { "\x80", false }, { "\xff", false },
        { "\xc3\xa9", true }, { "\\n", true }, { "\"", false },
    };
    for (size_t k = 0; k < SL_ARRAY_LEN(cases); k++) {
        for (size_t at = 0; at <= LEN; at++) {
            struct sl_buf text = { 0 };
            sl_buf_puts(&text, "[\"");
            for (size_t i = 0; i <= LEN; i++) {
                if (i == at)
                    sl_buf_puts(&text, cases[k].odd);
                if (i < LEN)
                    sl_buf_putc(&text, 'a');
            }
            sl_buf_puts(&text, "\"]");
            struct sl_arena *a = sl_arena_new();
            struct json *v;
            char err[160];
            bool got = json_parse(text.p, text.len, a, &v, err, sizeof(err)) == 0;
            if (got != cases[k].ok)
                fail_msg("case %zu at %zu: %s", k, at, got ? "read" : err);
            if (got)
                assert_int_equal(v->u.arr.v[0]->u.str.len, LEN + (k == 4 ? 2 : 1));
            sl_arena_free(a);
            sl_buf_free(&text);
        }
    }
}

/* json_get finds a member by its exact key: for every key length up to 41 (past the word steps
 * of the compare) and every position of a one-byte difference, the near key is not found and
 * the exact one is, whatever member order. */
static void test_get_exact_key(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    char key[42], near[42];
    for (size_t len = 1; len <= 41; len++) {
        for (size_t i = 0; i < len; i++)
            key[i] = (char)('a' + (i * 7 + len) % 26);
        key[len] = '\0';
        for (size_t at = 0; at < len; at++) {
            memcpy(near, key, len + 1);
            near[at] ^= 0x20; /* the same letter in the other case */
            struct json *o = json_new_object(a);
            struct json *want = json_new_number(a, "1");
            json_set(a, o, near, json_new_number(a, "2"));
            json_set(a, o, key, want);
            assert_ptr_equal(json_get(o, key), want);
            assert_ptr_equal(json_get_n(o, key, len), want);
            json_del(o, key);
            if (json_get(o, key) != NULL)
                fail_msg("key of %zu bytes matched one that differs at byte %zu", len, at);
            if (len > 1 && json_get_n(o, key, len - 1) != NULL)
                fail_msg("a %zu-byte prefix matched a longer key", len - 1);
        }
    }
    sl_arena_free(a);
}

/* Writes v with every container's raw text ignored: the tree as json_write would walk it. */
static void write_walked(struct sl_buf *out, struct json *v)
{
    if (v->type != JSON_OBJECT && v->type != JSON_ARRAY)
        return json_write(out, v);
    bool raw = v->raw;
    v->raw = false;
    sl_buf_putc(out, v->type == JSON_OBJECT ? '{' : '[');
    size_t n = v->type == JSON_OBJECT ? v->u.obj.n : v->u.arr.n;
    for (size_t i = 0; i < n; i++) {
        if (i)
            sl_buf_putc(out, ',');
        if (v->type == JSON_OBJECT) {
            json_write_string(out, v->u.obj.v[i].key.p, v->u.obj.v[i].key.len);
            sl_buf_putc(out, ':');
        }
        write_walked(out, v->type == JSON_OBJECT ? v->u.obj.v[i].val : v->u.arr.v[i]);
    }
    sl_buf_putc(out, v->type == JSON_OBJECT ? '}' : ']');
    v->raw = raw;
}

static struct json *parse_ok(struct sl_arena *a, const char *text)
{
    struct json *v = NULL;
    char err[160];
    if (json_parse(text, strlen(text), a, &v, err, sizeof(err)) != 0)
        fail_msg("refused %s: %s", text, err);
    return v;
}

/* A parsed container written from its text gives the bytes the walk would: whether it is raw,
 * and whatever its text held (empty strings and keys, a quote in an escaped string, whitespace
 * inside or around, numbers as sent). copied: json_write copies the text (raw, no escape);
 * esc: raw with escapes, which only json_write_relay copies, giving the text as it was sent. */
static void test_raw_text(void **state)
{
    (void)state;
    static const struct { const char *text; bool copied, esc; } cases[] = {
        { "{}", true, false },
        { "[]", true, false },
        { "{\"\":\"\"}", true, false },
        { "{\"a\":[1,-2.5e3,true,false,null,\"\",{},[]],\"b\":{\"c\":\"d\"}}", true, false },
        { "[\"\xc3\xa9\",\"\xf0\x9f\x98\x80\",{\"k\":\"v\"}]", true, false },
        { "{\"a\":\"x\\\"y\"}", false, true },             /* an escaped quote */
        { "{\"a\":\"\\u0041\"}", false, true },              /* \u0041: written as A */
        { "{\"\\u006b\":1}", false, true },                    /* an escape in a key */
        { "{\"a\":\"\\u0000\"}", false, true },              /* a NUL in a string, as an escape */
        { "[\"\\ud83d\\ude00\\/\\b\",[\"\\\\\"]]", false, true }, /* a pair, \/, nested */
        { "{\"a\": 1}", false, false },
        { "{\"a\":1\n}", false, false },
        { "[1,\t2]", false, false },
        { "[\r\n]", false, false },
        { "[\"\\n\", 1]", false, false },                    /* escape and whitespace */
        { " {\"a\":{\"b\":1}} ", true, false },               /* whitespace outside only */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        struct sl_arena *a = sl_arena_new();
        struct json *v = parse_ok(a, cases[i].text);
        if ((v->raw && !v->esc) != cases[i].copied || (v->raw && v->esc) != cases[i].esc)
            fail_msg("%s: raw is %d, esc %d", cases[i].text, v->raw, v->esc);
        struct sl_buf spliced = { 0 }, walked = { 0 }, relayed = { 0 };
        json_write(&spliced, v);
        write_walked(&walked, v);
        if (strcmp(spliced.p, walked.p) != 0)
            fail_msg("%s: written as %s, walked as %s", cases[i].text, spliced.p, walked.p);
        json_write_relay(&relayed, v);
        if (cases[i].esc && (relayed.len != strlen(cases[i].text) ||
                             memcmp(relayed.p, cases[i].text, relayed.len) != 0))
            fail_msg("%s: relayed as %s", cases[i].text, relayed.p);
        if (!cases[i].esc && strcmp(relayed.p, spliced.p) != 0)
            fail_msg("%s: relayed as %s, written as %s", cases[i].text, relayed.p, spliced.p);
        if (json_write_bound(v) < spliced.len || json_write_bound(v) < relayed.len)
            fail_msg("%s: bound %zu below what was written", cases[i].text, json_write_bound(v));
        sl_buf_free(&spliced);
        sl_buf_free(&walked);
        sl_buf_free(&relayed);
        sl_arena_free(a);
    }
    /* Raw inside not raw: the inner object keeps its text. */
    struct sl_arena *a = sl_arena_new();
    struct json *v = parse_ok(a, "{ \"a\":{\"b\":\"c\"},\"d\":[\"e\"] }");
    assert_false(v->raw);
    assert_true(json_get(v, "a")->raw);
    assert_true(json_get(v, "d")->raw);
    struct sl_buf b = { 0 };
    json_write(&b, v);
    assert_string_equal(b.p, "{\"a\":{\"b\":\"c\"},\"d\":[\"e\"]}");
    sl_buf_free(&b);
    sl_arena_free(a);
}

/* A peer's result relayed under the client's id is the bytes sluice checked, byte for byte:
 * escapes of every kind, U+0000, a surrogate pair, numbers no double holds, nested containers.
 * Whatever was refused before still is. */
static void test_relay_bytes(void **state)
{
    (void)state;
    static const char *ok[] = {
        "{\"content\":[{\"type\":\"text\",\"text\":\"h\xc3\xa9llo \\\"bench\\\" \\n\\t\\\\\"}]}",
        "{\"a\":\"\\u0000\",\"\\u00e9\":\"\\ud83d\\ude00\",\"s\":\"\\/\\b\\f\\r\"}",
        "[123456789012345678901234567890,-0.0e-7,1E+400,{\"x\":[[[\"\\u001f\"]]]}]",
        "{\"k\":{\"\\\"\":{\"\\\\\":[\"\",{},[]]}},\"z\":\"\\u2028\\u2029\"}",
        "12345678901234567890",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(ok); i++) {
        struct sl_buf in = { 0 }, out = { 0 }, want = { 0 };
        sl_buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":%s}", ok[i]);
        sl_buf_printf(&want, "{\"jsonrpc\":\"2.0\",\"id\":\"client-9\",\"result\":%s}", ok[i]);
        struct jsonrpc_msg *m;
        struct jsonrpc_parse_error err;
        if (jsonrpc_parse(in.p, in.len, &m, &err) != 0)
            fail_msg("refused %s: %s", ok[i], err.msg);
        jsonrpc_write_result_value(&out, SL_STR("\"client-9\""), m->result);
        if (out.len != want.len || memcmp(out.p, want.p, out.len) != 0)
            fail_msg("%s relayed as %.*s", ok[i], (int)out.len, out.p);
        /* And what went out reads as the tree that was checked. */
        struct jsonrpc_msg *again;
        if (jsonrpc_parse(out.p, out.len, &again, &err) != 0)
            fail_msg("relayed %s does not parse: %s", ok[i], err.msg);
        struct sl_buf w1 = { 0 }, w2 = { 0 };
        json_write(&w1, m->result);
        json_write(&w2, again->result);
        if (w1.len != w2.len || memcmp(w1.p, w2.p, w1.len) != 0)
            fail_msg("%s: tree changed in relay", ok[i]);
        sl_buf_free(&w1);
        sl_buf_free(&w2);
        jsonrpc_msg_free(again);
        jsonrpc_msg_free(m);
        sl_buf_free(&in);
        sl_buf_free(&out);
        sl_buf_free(&want);
    }
    static const char *bad[] = {
        "{\"a\":\"\\ud83d\"}",              /* a lone surrogate */
        "{\"a\":\"\\ude00\\ud83d\"}",        /* a pair the wrong way round */
        "{\"a\":\"\\x\"}",                   /* no such escape */
        "{\"a\":\"\\u00g0\"}",
        "{\"a\":\"x\\\"y\",\"a\":1}",        /* a duplicate key beside an escape */
        "{\"b\":{\"\\u0061\":1,\"a\":2}}",   /* a duplicate key, one escaped */
        "{\"a\":\"\\n\xc3\"}",               /* invalid UTF-8 beside an escape */
        "{\"a\":\"\\n\x01\"}",               /* a raw control byte beside an escape */
        "{\"a\":[\"\\n\"}",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct sl_buf in = { 0 };
        sl_buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":%s}", bad[i]);
        struct jsonrpc_msg *m;
        struct jsonrpc_parse_error err;
        if (jsonrpc_parse(in.p, in.len, &m, &err) == 0)
            fail_msg("accepted %s", bad[i]);
        sl_buf_free(&in);
    }
}

/* Escaped strings too large for the kept decoding buffer: the arena takes the buffer over.
 * Two in one message, then a small one in the next, each decoded right and relayed as sent. */
static void test_large_escaped(void **state)
{
    (void)state;
    const size_t n = 100000;
    for (int round = 0; round < 2; round++) {
        struct sl_buf b = { 0 };
        sl_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"\\n");
        for (size_t i = 0; i < n; i++)
            sl_buf_putc(&b, (char)('a' + i % 26));
        sl_buf_puts(&b, "\",\"b\":[\"\\u00e9");
        for (size_t i = 0; i < n; i++)
            sl_buf_putc(&b, (char)('A' + i % 26));
        sl_buf_puts(&b, "\\t\"],\"c\":\"x\\\"y\"}}");
        struct jsonrpc_msg *m;
        struct jsonrpc_parse_error err;
        assert_int_equal(jsonrpc_parse(b.p, b.len, &m, &err), 0);
        const struct json *a = json_get(m->result, "a");
        const struct json *bb = json_get(m->result, "b")->u.arr.v[0];
        assert_int_equal(a->u.str.len, n + 1);
        assert_int_equal(a->u.str.p[0], '\n');
        assert_int_equal(a->u.str.p[n], 'a' + (n - 1) % 26);
        assert_int_equal(a->u.str.p[n + 1], '\0');
        assert_int_equal(bb->u.str.len, n + 3);
        assert_memory_equal(bb->u.str.p, "\xc3\xa9" "A", 3);
        assert_int_equal(bb->u.str.p[n + 2], '\t');
        assert_string_equal(json_get(m->result, "c")->u.str.p, "x\"y");
        struct sl_buf out = { 0 };
        jsonrpc_write_result_value(&out, SL_STR("1"), m->result);
        assert_int_equal(out.len, b.len);
        assert_memory_equal(out.p, b.p, b.len);
        sl_buf_free(&out);
        jsonrpc_msg_free(m);
        sl_buf_free(&b);
    }
}

/* The string scan takes 32 and 16 bytes a step: a quote, backslash or control byte at any
 * offset around those steps ends the plain run exactly there. */
static void test_scan_offsets(void **state)
{
    (void)state;
    for (size_t at = 0; at < 160; at++) {
        for (int kind = 0; kind < 3; kind++) {
            struct sl_buf b = { 0 };
            sl_buf_puts(&b, "[\"");
            for (size_t i = 0; i < at; i++)
                sl_buf_putc(&b, (char)('a' + i % 26));
            sl_buf_puts(&b, kind == 0 ? "\\\"" : kind == 1 ? "\x1f" : "\"");
            for (size_t i = 0; i < 100; i++)
                sl_buf_putc(&b, (char)('A' + i % 26));
            sl_buf_puts(&b, "\"]");
            struct sl_arena *a = sl_arena_new();
            struct json *v;
            char err[160];
            int rc = json_parse(b.p, b.len, a, &v, err, sizeof(err));
            if (kind == 0) { /* an escaped quote, decoded where it was */
                assert_int_equal(rc, 0);
                const struct json *str = v->u.arr.v[0];
                assert_int_equal(str->u.str.len, at + 101);
                assert_int_equal(str->u.str.p[at], '"');
            } else if (kind == 1) { /* a raw control byte: refused */
                assert_int_equal(rc, -1);
            } else { /* the string ends there, and what follows is not JSON */
                assert_int_equal(rc, -1);
            }
            sl_arena_free(a);
            sl_buf_free(&b);
        }
    }
}

/* An offered buffer is read where it is and freed with the message; any other bytes, or the
 * same after the offer ended, are copied as before. */
static void test_offer(void **state)
{
    (void)state;
    static const char text[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"t\":\"a\\nb\",\"u\":\"c\"}}";
    struct sl_buf b = { 0 }, other = { 0 };
    sl_buf_puts(&b, text);
    sl_buf_puts(&other, text);
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error err;
    sl_offer(&b);
    assert_int_equal(jsonrpc_parse(other.p, other.len, &m, &err), 0); /* not the one offered */
    assert_non_null(b.p);
    jsonrpc_msg_free(m);
    const char *was = b.p;
    assert_int_equal(jsonrpc_parse(b.p, b.len, &m, &err), 0);
    assert_null(b.p); /* taken */
    assert_int_equal(b.len, 0);
    assert_ptr_equal(json_get(m->result, "u")->u.str.p, was + strlen(text) - 4);
    assert_string_equal(json_get(m->result, "t")->u.str.p, "a\nb");
    struct sl_buf out = { 0 };
    jsonrpc_write_result_value(&out, SL_STR("3"), m->result);
    assert_string_equal(out.p, text);
    sl_buf_free(&out);
    jsonrpc_msg_free(m); /* frees the offered memory: ASan would see a leak or a double free */
    sl_buf_puts(&b, text); /* b is usable again */
    sl_offer(&b);
    sl_offer(NULL);
    assert_int_equal(jsonrpc_parse(b.p, b.len, &m, &err), 0);
    assert_non_null(b.p); /* the offer had ended: copied */
    jsonrpc_msg_free(m);
    sl_buf_free(&b);
    sl_buf_free(&other);
}

/* The UTF-8 check of a long string skips ASCII in wide steps: a bad byte, or a good sequence,
 * at every offset around those steps is still found, in strings with escapes and without. */
static void test_utf8_long(void **state)
{
    (void)state;
    static const struct { const char *seq; bool valid; } seqs[] = {
        { "\xc3\xa9", true }, { "\xf0\x9f\x98\x80", true }, { "\xe2\x82\xac", true },
        { "\xc3", false }, { "\xa9", false }, { "\xc0\x80", false }, { "\xed\xa0\x80", false },
        { "\xf0\x9f\x98", false }, { "\xf5\x80\x80\x80", false }, { "\xe2\x82", false },
    };
    for (size_t e = 0; e < 2; e++) {
        for (size_t k = 0; k < SL_ARRAY_LEN(seqs); k++) {
            for (size_t at = 0; at < 200; at++) {
                struct sl_buf b = { 0 };
                sl_buf_puts(&b, e ? "[\"\\n" : "[\"");
                for (size_t i = 0; i < at; i++)
                    sl_buf_putc(&b, (char)('a' + i % 26));
                sl_buf_puts(&b, seqs[k].seq);
                for (size_t i = 0; i < 150; i++)
                    sl_buf_putc(&b, (char)('a' + i % 26));
                if (at % 3 == 0)
                    sl_buf_puts(&b, "\xc3\xa9"); /* a good one later on */
                sl_buf_puts(&b, "\"]");
                struct sl_arena *a = sl_arena_new();
                struct json *v;
                char err[160];
                bool took = json_parse(b.p, b.len, a, &v, err, sizeof(err)) == 0;
                if (took != seqs[k].valid)
                    fail_msg("escape %zu, sequence %zu at %zu: %s", e, k, at,
                             took ? "accepted" : err);
                sl_arena_free(a);
                sl_buf_free(&b);
            }
        }
    }
}

/* An edit anywhere in a parsed tree shows when the tree is written: the edited container and
 * every one around it are walked, the untouched ones beside them still copied. */
static void test_raw_edits(void **state)
{
    (void)state;
    static const char text[] = "{\"a\":{\"b\":[1,{\"c\":\"d\"}],\"n\":{\"m\":0}},\"e\":\"f\"}";
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 };

    struct json *v = parse_ok(a, text);
    struct json *deep = json_get(json_get(v, "a"), "b")->u.arr.v[1];
    json_set(a, deep, "x", json_new_number(a, "2"));
    json_write(&b, v);
    assert_string_equal(b.p, "{\"a\":{\"b\":[1,{\"c\":\"d\",\"x\":2}],\"n\":{\"m\":0}},\"e\":\"f\"}");
    assert_true(json_get(json_get(v, "a"), "n")->raw); /* the one beside it */

    sl_buf_reset(&b);
    v = parse_ok(a, text);
    deep = json_get(json_get(v, "a"), "b")->u.arr.v[1];
    json_set(a, deep, "c", json_new_string(a, "z", 1)); /* replaces in place */
    json_write(&b, v);
    assert_string_equal(b.p, "{\"a\":{\"b\":[1,{\"c\":\"z\"}],\"n\":{\"m\":0}},\"e\":\"f\"}");

    sl_buf_reset(&b);
    v = parse_ok(a, text);
    json_push(a, json_get(json_get(v, "a"), "b"), json_new_null(a));
    json_write(&b, v);
    assert_string_equal(b.p, "{\"a\":{\"b\":[1,{\"c\":\"d\"},null],\"n\":{\"m\":0}},\"e\":\"f\"}");

    sl_buf_reset(&b);
    v = parse_ok(a, text);
    assert_true(json_del(json_get(json_get(v, "a"), "n"), "m"));
    json_write(&b, v);
    assert_string_equal(b.p, "{\"a\":{\"b\":[1,{\"c\":\"d\"}],\"n\":{}},\"e\":\"f\"}");

    /* A copy edited leaves the original as it was; the original edited shows in both (they
     * share their children). */
    sl_buf_reset(&b);
    v = parse_ok(a, text);
    struct json *c = json_copy_object(a, json_get(v, "a"));
    json_del(c, "b");
    json_write(&b, v);
    assert_string_equal(b.p, text);
    sl_buf_reset(&b);
    json_set(a, json_get(json_get(v, "a"), "n"), "m", json_new_bool(a, true));
    json_write(&b, c);
    assert_string_equal(b.p, "{\"n\":{\"m\":true}}");
    sl_buf_reset(&b);
    json_write(&b, v);
    assert_string_equal(b.p, "{\"a\":{\"b\":[1,{\"c\":\"d\"}],\"n\":{\"m\":true}},\"e\":\"f\"}");

    sl_buf_free(&b);
    sl_arena_free(a);
}

/* json_verbatim: written as its text, read as the value it copies, whatever its kind. */
static void test_verbatim(void **state)
{
    (void)state;
    static const struct { const char *sent, *text; } cases[] = {
        { "{ \"b\":1e2, \"a\":\"\\u0078\" }", "{\"a\":\"x\",\"b\":100}" },
        { "[ 1.0 ,{\"k\":[]}]", "[1,{\"k\":[]}]" },
        { "{}", "{}" },
        { "1e20", "100000000000000000000" },
        { "\"\\u00e9\"", "\"\xc3\xa9\"" },
        { "true", "true" },
    };
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 }, before = { 0 };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        struct json *v = parse_ok(a, cases[i].sent);
        sl_buf_reset(&before);
        json_write(&before, v);
        struct sl_str text = sl_str_c(cases[i].text);
        struct json *c = json_verbatim(a, v, text);
        assert_int_equal(c->type, v->type);
        sl_buf_reset(&b);
        json_write(&b, c);
        assert_string_equal(b.p, cases[i].text);
        assert_int_equal(json_write_bound(c), text.len);
        /* inside a built object too, and the original still writes as before */
        struct json *o = json_new_object(a);
        json_set(a, o, "arguments", c);
        sl_buf_reset(&b);
        json_write(&b, o);
        assert_true(b.len == strlen("{\"arguments\":}") + text.len);
        assert_memory_equal(b.p + strlen("{\"arguments\":"), text.p, text.len);
        sl_buf_reset(&b);
        json_write(&b, v);
        assert_string_equal(b.p, before.p);
    }
    /* Readers see the copied value. */
    struct json *v = parse_ok(a, cases[0].sent);
    struct json *c = json_verbatim(a, v, sl_str_c(cases[0].text));
    assert_int_equal(c->u.obj.n, 2);
    assert_true(sl_str_eq_c(json_get(c, "b")->u.num, "1e2"));
    assert_true(json_str_is(json_get(c, "a"), "x"));
    /* No value: an empty object. */
    c = json_verbatim(a, NULL, SL_STR("{}"));
    assert_int_equal(c->type, JSON_OBJECT);
    assert_int_equal(c->u.obj.n, 0);
    sl_buf_reset(&b);
    json_write(&b, c);
    assert_string_equal(b.p, "{}");
    /* An edit of the copy drops the text; the original is untouched. */
    c = json_verbatim(a, v, sl_str_c(cases[0].text));
    json_set(a, c, "z", json_new_null(a));
    sl_buf_reset(&b);
    json_write(&b, c);
    assert_string_equal(b.p, "{\"b\":1e2,\"a\":\"x\",\"z\":null}");
    assert_null(json_get(v, "z"));
    sl_buf_free(&b);
    sl_buf_free(&before);
    sl_arena_free(a);
}

/* ===== building is linear in the size of what is built (issue 17) ===== */

#define WIDE 10000 /* SL_MAX_MEMBERS: the most a client can put in one object */

/* Bytes malloc has handed out (the arenas' chunks, large ones mmapped). 0 under a sanitizer's
 * allocator, where the bounds below then hold trivially. */
static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Key i: 64 bytes alike up to the last five, so a search among them compares them whole. */
static struct sl_str wide_key(char buf[65], size_t i)
{
    memset(buf, 'k', 59);
    snprintf(buf + 59, 6, "%05zu", i % 100000);
    return (struct sl_str){ buf, 64 };
}

static struct json *wide_object(struct sl_arena *a, size_t n)
{
    struct json *o = json_new_object(a);
    char k[65];
    for (size_t i = 0; i < n; i++)
        json_append_key(a, o, wide_key(k, i), json_new_number(a, "1"));
    return o;
}

/* 10,000 appends to an object and to an array take memory in proportion: growing by one entry
 * at a time copied the whole array at each append, 800 MB for the object. */
static void test_builders_linear(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    size_t before = heap_in_use();
    struct json *o = wide_object(a, WIDE);
    struct json *arr = json_new_array(a);
    for (size_t i = 0; i < WIDE; i++)
        json_push(a, arr, o->u.obj.v[i].val);
    size_t used = heap_in_use() - before;
    assert_true(used < (8u << 20));
    assert_int_equal(o->u.obj.n, WIDE);
    assert_int_equal(arr->u.arr.n, WIDE);
    char k[65];
    for (size_t i = 0; i < WIDE; i++) {
        assert_true(sl_str_eq(o->u.obj.v[i].key, wide_key(k, i)));
        assert_ptr_equal(arr->u.arr.v[i], o->u.obj.v[i].val);
    }
    assert_non_null(json_get_n(o, wide_key(k, WIDE - 1).p, 64));

    /* Set replaces in place, delete then append reuse the room, a copy owns its own array. */
    struct json *two = json_new_number(a, "2");
    json_set_key(a, o, wide_key(k, 5), two);
    assert_int_equal(o->u.obj.n, WIDE);
    assert_ptr_equal(json_get_n(o, wide_key(k, 5).p, 64), two);
    assert_true(json_del_key(o, wide_key(k, 0)));
    json_set(a, o, "x", json_new_null(a));
    assert_int_equal(o->u.obj.n, WIDE);
    struct json *c = json_copy_object(a, o);
    json_append_key(a, o, SL_STR("in o"), json_new_null(a));
    json_append_key(a, c, SL_STR("in c"), json_new_null(a));
    assert_int_equal(o->u.obj.n, WIDE + 1);
    assert_int_equal(c->u.obj.n, WIDE + 1);
    assert_true(sl_str_eq(o->u.obj.v[WIDE].key, SL_STR("in o")));
    assert_true(sl_str_eq(c->u.obj.v[WIDE].key, SL_STR("in c")));
    assert_true(sl_str_eq(o->u.obj.v[WIDE - 1].key, SL_STR("x")));
    assert_true(sl_str_eq(c->u.obj.v[0].key, wide_key(k, 1)));

    /* Written out, the built object is every member once, in order. */
    struct sl_buf b = { 0 };
    json_write(&b, arr);
    assert_int_equal(b.len, 2 + WIDE * 2 - 1);
    sl_buf_free(&b);
    sl_arena_free(a);
}

/* params with a _meta of n keys (the envelope's first), as a modern client sends them. */
static struct json *wide_params(struct sl_arena *a, size_t n)
{
    struct json *meta = json_new_object(a);
    json_set(a, meta, META_PROTOCOL_VERSION, json_new_string(a, ERA_MODERN_VERSION, 10));
    json_set(a, meta, META_CLIENT_CAPS, json_new_object(a));
    struct json *w = wide_object(a, n);
    for (size_t i = 0; i < w->u.obj.n; i++)
        json_append_key(a, meta, w->u.obj.v[i].key, w->u.obj.v[i].val);
    struct json *p = json_new_object(a);
    json_set(a, p, "name", json_new_string(a, "echo", 4));
    json_set(a, p, "_meta", meta);
    return p;
}

/* The fastest of five strips of a _meta of n keys, in ms. */
static double strip_ms(size_t n)
{
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        struct sl_arena *a = sl_arena_new();
        struct json *p = wide_params(a, n);
        double t0 = now_ms();
        struct json *q = era_strip_envelope(a, p);
        double t = now_ms() - t0;
        assert_int_equal(json_get(q, "_meta")->u.obj.n, n);
        best = t < best ? t : best;
        sl_arena_free(a);
    }
    return best;
}

/* The envelope strip (modern client, legacy upstream) is linear: eight times the keys
 * take about eight times as long, where a search per member took sixty-four (3 s and 1.2 GB for
 * 10,000 keys when each append also copied). The other era rewrites keep every member, once. */
static void test_era_rewrites_linear(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    struct json *p = wide_params(a, WIDE - 2);
    size_t before = heap_in_use();
    struct json *q = era_strip_envelope(a, p);
    assert_true(heap_in_use() - before < (4u << 20));
    const struct json *m = json_get(q, "_meta");
    assert_int_equal(m->u.obj.n, WIDE - 2);
    char k[65];
    for (size_t i = 0; i < WIDE - 2; i++)
        assert_true(sl_str_eq(m->u.obj.v[i].key, wide_key(k, i)));
    assert_null(json_get(m, META_PROTOCOL_VERSION));
    assert_non_null(json_get(json_get(p, "_meta"), META_PROTOCOL_VERSION)); /* a copy */

    before = heap_in_use();
    struct json *back = era_add_envelope(a, q, NULL);
    struct json *res = era_result_to_modern(a, SL_STR("tools/list"), wide_object(a, WIDE - 3));
    struct json *old = era_result_to_legacy(a, res);
    assert_true(heap_in_use() - before < (8u << 20));
    assert_int_equal(json_get(back, "_meta")->u.obj.n, WIDE);
    assert_int_equal(res->u.obj.n, WIDE);
    assert_true(json_str_is(json_get(res, "resultType"), "complete"));
    assert_int_equal(old->u.obj.n, WIDE - 3);
    sl_arena_free(a);

    double small = strip_ms(WIDE / 8), big = strip_ms(WIDE);
    assert_true(big < 24 * small + 2.0);
}

/* jsonrpc_cut_response_id: whose reply a line too large to read was, from its ends alone. */
static bool cut(const char *head, const char *tail, uint64_t *id)
{
    return jsonrpc_cut_response_id(sl_str_c(head), sl_str_c(tail), id);
}

static void test_cut_response_id(void **state)
{
    (void)state;
    uint64_t id = 0;
    /* The id before the result (the head ends inside the result's value). */
    assert_true(cut("{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":[{\"text\":\"xxx", "", &id));
    assert_int_equal(id, 42);
    assert_true(cut(" { \"id\" : 7 , \"error\" : {\"message\":\"aaa", "", &id));
    assert_int_equal(id, 7);
    /* The id as the last member (the TypeScript SDK). */
    assert_true(cut("{\"result\":{\"content\":[{\"text\":\"xx", "xxxx\"}]},\"jsonrpc\":\"2.0\",\"id\":9}", &id));
    assert_int_equal(id, 9);
    assert_true(cut("{\"result\":{\"a\":\"b", "bbb\"}, \"id\" : 12 }\r\n", &id));
    assert_int_equal(id, 12);
    /* Not known: nothing is failed on a guess. */
    assert_false(cut("{\"result\":{\"content\":\"xx", "xx\"},\"id\":3,\"jsonrpc\":\"2.0\"}", &id)); /* middle */
    assert_false(cut("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"sampling/createMessage\",\"params\":{\"x", "", &id));
    assert_false(cut("{\"params\":{\"x", "x\"},\"method\":\"m\",\"id\":5}", &id)); /* no result seen */
    assert_false(cut("{\"id\":5,\"method\":\"m\",\"result\":{\"x", "", &id)); /* not a response */
    assert_false(cut("{\"jsonrpc\":\"2.0\",\"id\":\"5\",\"result\":{\"x", "", &id)); /* a string id */
    assert_false(cut("{\"jsonrpc\":\"2.0\",\"id\":-5,\"result\":{\"x", "", &id));
    assert_false(cut("{\"jsonrpc\":\"2.0\",\"id\":05,\"result\":{\"x", "", &id));
    assert_false(cut("{\"jsonrpc\":\"2.0\",\"id\":5.0,\"result\":{\"x", "", &id));
    assert_false(cut("{\"id\":1,\"id\":2,\"result\":{\"x", "", &id)); /* two ids */
    assert_false(cut("{\"id\":1,\"result\":{\"x", "x\"},\"id\":1}", &id)); /* head and tail */
    assert_false(cut("{\"jsonrpc\":\"2.0\",\"id\":5", "", &id)); /* the id may go on: 5, 50... */
    /* An "id" inside a nested value or a string is not the message's. */
    assert_false(cut("{\"result\":{\"id\":4,\"content\":\"x", "", &id));
    assert_false(cut("{\"result\":\"\\\",\\\"id\\\":4,\\\"x", "", &id));
    assert_false(cut("{\"result\":{\"x", "xx\",\\\"id\\\":8}", &id)); /* an escaped quote before */
    assert_false(cut("{\"result\":{\"x", "xx\"},\"id\":8}}", &id));  /* the last brace nested */
    assert_false(cut("{\"result\":{\"x", "xx\"},\"id\":8", &id));    /* no brace at the end */
    assert_false(cut("[{\"id\":1,\"result\":{\"x", "", &id));
    assert_false(cut("", "", &id));
}

/* jsonrpc_cut_request_id: the id of the peer's own request too large to read, as JSON text. */
static bool cut_req(const char *head, const char *tail, const char *want)
{
    struct sl_buf b = { 0 };
    bool ok = jsonrpc_cut_request_id(sl_str_c(head), sl_str_c(tail), &b);
    if (ok && want)
        assert_true(sl_str_eq_c(sl_buf_str(&b), want));
    if (!ok)
        assert_int_equal(b.len, 0);
    sl_buf_free(&b);
    return ok;
}

static void test_cut_request_id(void **state)
{
    (void)state;
    /* The id before the params (Python's SDK), or last (the TypeScript SDK). */
    assert_true(cut_req("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"sampling/createMessage\","
                        "\"params\":{\"x", "", "5"));
    assert_true(cut_req("{\"method\":\"elicitation/create\",\"params\":{\"m\":\"xx",
                        "xx\"},\"jsonrpc\":\"2.0\",\"id\":17}", "17"));
    /* A string id that is echoed as written. */
    assert_true(cut_req("{\"id\":\"srv-1\",\"method\":\"roots/list\",\"params\":{\"x", "", "\"srv-1\""));
    /* Not guessed: a notification, a response, both, an id in the middle, two ids. */
    assert_false(cut_req("{\"method\":\"notifications/message\",\"params\":{\"x", "x\"}}", NULL));
    assert_false(cut_req("{\"id\":5,\"result\":{\"x", "", NULL));
    assert_false(cut_req("{\"id\":5,\"method\":\"m\",\"result\":{\"x", "", NULL));
    assert_false(cut_req("{\"method\":\"m\",\"params\":{\"x", "x\"},\"id\":5,\"jsonrpc\":\"2.0\"}", NULL));
    assert_false(cut_req("{\"id\":5,\"method\":\"m\",\"params\":{\"x", "x\"},\"id\":5}", NULL));
    assert_false(cut_req("{\"id\":5,\"id\":6,\"method\":\"m\",\"params\":{\"x", "", NULL));
    /* A string id that might not be valid as written, and other ids: not echoed. */
    assert_false(cut_req("{\"id\":\"a\\\"b\",\"method\":\"m\",\"params\":{\"x", "", NULL));
    assert_false(cut_req("{\"id\":\"a\xc3\xa9\",\"method\":\"m\",\"params\":{\"x", "", NULL));
    assert_false(cut_req("{\"id\":\"a\tb\",\"method\":\"m\",\"params\":{\"x", "", NULL));
    assert_false(cut_req("{\"id\":-5,\"method\":\"m\",\"params\":{\"x", "", NULL));
    assert_false(cut_req("{\"id\":null,\"method\":\"m\",\"params\":{\"x", "", NULL));
    assert_false(cut_req("{\"id\":{},\"method\":\"m\",\"params\":{\"x", "", NULL));
    assert_false(cut_req("{\"method\":\"m\",\"id\":5", "", NULL)); /* the id may go on */
    assert_false(cut_req("", "", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_duplicate_in_large_object),
        cmocka_unit_test(test_exact_values),
        cmocka_unit_test(test_writers),
        cmocka_unit_test(test_string_writer_differential),
        cmocka_unit_test(test_utf8_differential),
        cmocka_unit_test(test_string_scan_differential),
        cmocka_unit_test(test_long_string_blocks),
        cmocka_unit_test(test_get_exact_key),
        cmocka_unit_test(test_raw_text),
        cmocka_unit_test(test_relay_bytes),
        cmocka_unit_test(test_utf8_long),
        cmocka_unit_test(test_large_escaped),
        cmocka_unit_test(test_scan_offsets),
        cmocka_unit_test(test_offer),
        cmocka_unit_test(test_raw_edits),
        cmocka_unit_test(test_verbatim),
        cmocka_unit_test(test_builders_linear),
        cmocka_unit_test(test_era_rewrites_linear),
        cmocka_unit_test(test_cut_response_id),
        cmocka_unit_test(test_cut_request_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
