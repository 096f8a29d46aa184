/* test_store_url.c: --store URLs, --store-prefix and the Redis keys (proxy/store_url.c).
 * Tables of accepted forms with what they mean, and of refusals with a fragment of the message
 * each must carry, so a refusal for the wrong reason fails too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sl_test.h"
#include "store_url.h"

static void test_memory(void **state)
{
    (void)state;
    struct store_url u;
    char err[256] = "";
    assert_int_equal(store_url_parse("memory", &u, err, sizeof(err)), 0);
    assert_int_equal(u.kind, STORE_URL_MEMORY);
}

static void test_redis_forms(void **state)
{
    (void)state;
    static const struct {
        const char *url, *host, *user;
        unsigned port, db;
    } rows[] = {
        { "redis://localhost", "localhost", "", 6379, 0 },
        { "redis://localhost:6380", "localhost", "", 6380, 0 },
        { "redis://redis.sluice.svc.cluster.local:6379/3", "redis.sluice.svc.cluster.local", "",
          6379, 3 },
        { "redis://10.0.0.7:1", "10.0.0.7", "", 1, 0 },
        { "redis://127.0.0.1:65535/15", "127.0.0.1", "", 65535, 15 },
        { "redis://[::1]", "::1", "", 6379, 0 },
        { "redis://[::1]:7000/2", "::1", "", 7000, 2 },
        { "redis://[2001:db8::7]/0", "2001:db8::7", "", 6379, 0 },
        { "redis://[::ffff:10.1.2.3]:6379", "::ffff:10.1.2.3", "", 6379, 0 },
        { "redis://sluice@redis:6379", "redis", "sluice", 6379, 0 },
        { "redis://a.b-c_d~e@[::1]:9/09", "::1", "a.b-c_d~e", 9, 9 },
        { "redis://my_redis_1", "my_redis_1", "", 6379, 0 },
        { "REDIS://Host:6379", "Host", "", 6379, 0 },
        { "redis://h:06379/00", "h", "", 6379, 0 },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct store_url u;
        char err[256] = "";
        if (store_url_parse(rows[i].url, &u, err, sizeof(err)) != 0) {
            print_error("%s: %s\n", rows[i].url, err);
            fail();
        }
        assert_int_equal(u.kind, STORE_URL_REDIS);
        assert_string_equal(u.host, rows[i].host);
        assert_string_equal(u.user, rows[i].user);
        assert_int_equal(u.port, rows[i].port);
        assert_int_equal(u.db, rows[i].db);
    }
}

/* The longest host and user are accepted; one byte more is refused. */
static void test_redis_lengths(void **state)
{
    (void)state;
    char url[600], err[256];
    struct store_url u;
    char host[STORE_URL_HOST_MAX + 2], user[STORE_URL_USER_MAX + 2];
    memset(host, 'h', sizeof(host));
    memset(user, 'u', sizeof(user));
    snprintf(url, sizeof(url), "redis://%.*s@%.*s:1", STORE_URL_USER_MAX, user,
             STORE_URL_HOST_MAX, host);
    assert_int_equal(store_url_parse(url, &u, err, sizeof(err)), 0);
    assert_int_equal(strlen(u.host), STORE_URL_HOST_MAX);
    assert_int_equal(strlen(u.user), STORE_URL_USER_MAX);
    snprintf(url, sizeof(url), "redis://%.*s:1", STORE_URL_HOST_MAX + 1, host);
    assert_int_equal(store_url_parse(url, &u, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "over 253 bytes"));
    snprintf(url, sizeof(url), "redis://%.*s@h", STORE_URL_USER_MAX + 1, user);
    assert_int_equal(store_url_parse(url, &u, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "over 64 bytes"));
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *url, *says;
    } rows[] = {
        { NULL, "empty" },
        { "", "empty" },
        { "Memory", "not understood" },
        { "memory://", "not understood" },
        { "memroy", "\"memroy\" not understood" },
        { "http://redis:6379", "not understood" },
        { "redis:/x", "not understood" },
        { "rediss://redis:6380", "hiredis 0.14 has no TLS" },
        { "REDISS://redis", "TLS sidecar" },
        { "redis://user:secret@redis", "SLUICE_STORE_PASSWORD, never the command line" },
        { "redis://:secret@redis", "SLUICE_STORE_PASSWORD" },
        { "redis://u:p@ss/w:rd@redis", "SLUICE_STORE_PASSWORD" },
        { "redis://@redis", "user before '@' is empty" },
        { "redis://us er@redis", "user may hold only" },
        { "redis://u%3a@redis", "user may hold only" },
        { "redis://", "host is missing" },
        { "redis://:6379", "host is missing" },
        { "redis:///0", "host is missing" },
        { "redis://re dis", "may hold only letters" },
        { "redis://-redis", "starts with '-'" },
        { "redis://.redis", "starts with '.'" },
        { "redis://::1", "host is missing" },
        { "redis://fe80::1:6379", "IPv6 address goes in brackets" },
        { "redis://[::1", "'[' without ']'" },
        { "redis://[]", "no IPv6 address" },
        { "redis://[10.0.0.1]", "not an IPv6 address" },
        { "redis://[::1]x", "expected ':' or '/' after ']'" },
        { "redis://[::1]:", "port after ':' is empty" },
        { "redis://redis:", "port after ':' is empty" },
        { "redis://redis:0", "not a number from 1 to 65535" },
        { "redis://redis:65536", "not a number from 1 to 65535" },
        { "redis://redis:123456", "not a number from 1 to 65535" },
        { "redis://redis:-1", "not a number from 1 to 65535" },
        { "redis://redis:+1", "not a number from 1 to 65535" },
        { "redis://redis:63 79", "not a number from 1 to 65535" },
        { "redis://redis/", "database after '/' is missing" },
        { "redis://redis/16", "not a number from 0 to 15" },
        { "redis://redis/-1", "not a number from 0 to 15" },
        { "redis://redis/1/2", "not a number from 0 to 15" },
        { "redis://redis/015", "not a number from 0 to 15" },
        { "redis://redis/0?timeout=1", "options after '?'" },
        { "redis://redis?db=1", "options after '?'" },
        { "redis://redis#x", "options after '?' or '#'" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct store_url u;
        char err[256] = "";
        if (store_url_parse(rows[i].url, &u, err, sizeof(err)) != -1 ||
            strstr(err, rows[i].says) == NULL) {
            print_error("%s: got \"%s\", want a refusal saying \"%s\"\n",
                        rows[i].url ? rows[i].url : "(null)", err, rows[i].says);
            fail();
        }
    }
}

/* A refusal never repeats a password, whatever part of the URL is wrong. */
static void test_password_never_echoed(void **state)
{
    (void)state;
    static const char *const urls[] = {
        "redis://u:hunter2@redis", "redis://u:hunter2@redis:0", "http://u:hunter2@redis",
        "rediss://u:hunter2@redis", "unknown://hunter2@x", "redis://hunter2@red is",
        "redis://:hunter2@",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(urls); i++) {
        struct store_url u;
        char err[256] = "";
        assert_int_equal(store_url_parse(urls[i], &u, err, sizeof(err)), -1);
        if (strstr(err, "hunter2") != NULL) {
            print_error("%s: the message repeats the secret: %s\n", urls[i], err);
            fail();
        }
    }
}

/* A short err buffer is filled, cut and terminated; a NULL one is allowed. */
static void test_err_buffer(void **state)
{
    (void)state;
    struct store_url u;
    char err[8];
    memset(err, 'x', sizeof(err));
    assert_int_equal(store_url_parse("rediss://x", &u, err, sizeof(err)), -1);
    assert_int_equal(strlen(err), sizeof(err) - 1);
    assert_int_equal(store_url_parse("rediss://x", &u, NULL, 0), -1);
    assert_false(store_prefix_ok("a b", NULL, 0));
}

static void test_prefix(void **state)
{
    (void)state;
    char err[256];
    char p[STORE_PREFIX_MAX + 2];
    assert_true(store_prefix_ok("sluice:", err, sizeof(err)));
    assert_true(store_prefix_ok("", err, sizeof(err)));
    assert_true(store_prefix_ok("!~{app}/x:", err, sizeof(err)));
    memset(p, 'p', sizeof(p));
    p[STORE_PREFIX_MAX] = '\0';
    assert_true(store_prefix_ok(p, err, sizeof(err)));
    p[STORE_PREFIX_MAX] = 'p';
    p[STORE_PREFIX_MAX + 1] = '\0';
    assert_false(store_prefix_ok(p, err, sizeof(err)));
    assert_non_null(strstr(err, "65 bytes; at most 64"));
    static const char *const bad[] = { "a b", "a\tb", "a\nb", "caf\xc3\xa9", "x\x7f", "\x01" };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        err[0] = '\0';
        assert_false(store_prefix_ok(bad[i], err, sizeof(err)));
        assert_non_null(strstr(err, "printable ASCII without spaces"));
    }
    assert_false(store_prefix_ok(NULL, err, sizeof(err)));
}

static void test_keys(void **state)
{
    (void)state;
    static const uint8_t nonce[16] = { 0x00, 0x01, 0x0a, 0x10, 0x7f, 0x80, 0xab, 0xcd,
                                       0xef, 0xff, 0x20, 0x30, 0x40, 0x50, 0x60, 0x99 };
    struct sl_buf b = { 0 };
    store_key_nonce(&b, "sluice:", nonce);
    assert_buf_equal(b, "sluice:nonce:00010a107f80abcdefff203040506099");
    sl_buf_reset(&b);
    store_key_epoch(&b, "sluice:");
    assert_buf_equal(b, "sluice:epoch");
    sl_buf_reset(&b);
    store_key_nonce(&b, "", nonce);
    assert_buf_equal(b, "nonce:00010a107f80abcdefff203040506099");
    /* appends: a caller may build a key after something else */
    sl_buf_reset(&b);
    sl_buf_puts(&b, "K=");
    store_key_epoch(&b, "p/");
    assert_buf_equal(b, "K=p/epoch");
    sl_buf_free(&b);
}

/* Two nonces that differ in any one bit have different keys. */
static void test_keys_distinct(void **state)
{
    (void)state;
    uint8_t n[16] = { 0 };
    struct sl_buf a = { 0 }, b = { 0 };
    store_key_nonce(&a, "s:", n);
    for (int i = 0; i < 128; i++) {
        n[i / 8] ^= (uint8_t)(1u << (i % 8));
        sl_buf_reset(&b);
        store_key_nonce(&b, "s:", n);
        assert_int_equal(a.len, b.len);
        assert_memory_not_equal(a.p, b.p, a.len);
        n[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    sl_buf_free(&a);
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_redis_forms),
        cmocka_unit_test(test_redis_lengths),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_password_never_echoed),
        cmocka_unit_test(test_err_buffer),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_keys_distinct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
