/* test_http1.c: the request head parser refuses what has smuggled requests past other proxies,
 * and reads what real clients send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cli.h"
#include "http1.h"

static ssize_t parse(const char *text, struct http1_head *h)
{
    return http1_parse_head(text, strlen(text), 16384, h);
}

static void test_a_real_request(void **state)
{
    (void)state;
    static const char req[] = "POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                              "Content-Type: application/json\r\nContent-Length: 42\r\n"
                              "Accept: application/json, text/event-stream\r\n"
                              "Mcp-Name:   write_file \t\r\n\r\nBODY";
    struct http1_head h;
    assert_int_equal(parse(req, &h), (ssize_t)strlen(req) - 4);
    assert_true(sl_str_eq_c(h.method, "POST"));
    assert_true(sl_str_eq_c(h.path, "/mcp"));
    assert_int_equal(h.minor, 1);
    assert_true(h.keep_alive);
    assert_true(h.has_length);
    assert_int_equal(h.content_length, 42);
    struct sl_str v;
    assert_int_equal(http1_header(&h, "MCP-NAME", &v), 1);
    assert_true(sl_str_eq_c(v, "write_file")); /* OWS trimmed, case-insensitive name */
    assert_int_equal(http1_header(&h, "origin", &v), 0);
    assert_true(http1_list_has(SL_STR("application/json, text/event-stream;q=0.9"),
                               "text/event-stream"));
    assert_false(http1_list_has(SL_STR("application/jsonx"), "application/json"));
}

static void test_incomplete_then_complete(void **state)
{
    (void)state;
    struct http1_head h;
    assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost: x\r\n", &h), 0);
    assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost: x\r\n\r", &h), 0);
    assert_true(parse("GET /healthz HTTP/1.1\nHost: x\n\n", &h) > 0); /* bare LF is allowed */
    assert_true(parse("GET / HTTP/1.0\r\n\r\n", &h) > 0);
    assert_false(h.keep_alive); /* 1.0 closes unless asked */
    assert_true(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &h) > 0);
    assert_false(h.keep_alive);
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct { const char *req; ssize_t want; } cases[] = {
        { "POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", -501 },
        { "POST /mcp HTTP/1.1\r\ntransfer-encoding: identity\r\n\r\n", -501 },
        { "POST /mcp HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", -400 },
        { "POST /mcp HTTP/1.1\r\nContent-Length: -1\r\n\r\n", -400 },
        { "POST /mcp HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n", -400 },
        { "POST /mcp HTTP/1.1\r\nContent-Length: 99999999999999999\r\n\r\n", -400 },
        { "POST /mcp HTTP/1.1\r\nContent-Length : 5\r\n\r\n", -400 },   /* space before colon */
        { "POST /mcp HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n", -400 },     /* obs-fold */
        { "POST /mcp HTTP/1.1\r\nX: a\rb\r\n\r\n", -400 },              /* bare CR */
        { "POST /mcp HTTP/1.1\r\nX: a\x01\r\n\r\n", -400 },             /* control char */
        { "POST /mcp HTTP/1.1\r\n: empty\r\n\r\n", -400 },
        { "POST mcp HTTP/1.1\r\n\r\n", -400 },                          /* not origin-form */
        { "POST /m cp HTTP/1.1\r\n\r\n", -400 },
        { "POST /mcp HTTP/2.0\r\n\r\n", -505 },
        { "POST /mcp FTP/1.1\r\n\r\n", -400 },
        { "P@ST /mcp HTTP/1.1\r\n\r\n", -400 },
        { " POST /mcp HTTP/1.1\r\n\r\n", -400 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct http1_head h;
        ssize_t got = parse(cases[i].req, &h);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): got %zd, want %zd", i, cases[i].req, got, cases[i].want);
    }
    /* Equal repeats of Content-Length are one value (RFC 9110 §8.6). */
    struct http1_head h;
    assert_true(parse("POST /mcp HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                      &h) > 0);
    assert_int_equal(h.content_length, 5);
    /* A header given twice is ambiguous to whoever reads it: reported, not picked. */
    assert_true(parse("POST /mcp HTTP/1.1\r\nMcp-Method: a\r\nmcp-method: b\r\n\r\n", &h) > 0);
    struct sl_str v;
    assert_int_equal(http1_header(&h, "mcp-method", &v), -1);
}

static void test_limits(void **state)
{
    (void)state;
    char big[20000];
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    memset(big + 19, 'a', sizeof(big) - 19);
    struct http1_head h;
    /* Over max_head with no end in sight: refused without waiting for more. */
    assert_int_equal(http1_parse_head(big, sizeof(big), 16384, &h), -431);
    struct sl_buf many = { 0 };
    sl_buf_puts(&many, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < HTTP1_MAX_HEADERS + 1; i++)
        sl_buf_printf(&many, "X-%d: y\r\n", i);
    sl_buf_puts(&many, "\r\n");
    assert_int_equal(http1_parse_head(many.p, many.len, 16384, &h), -431);
    sl_buf_free(&many);
}

static void test_cli_http_options(void **state)
{
    (void)state;
    struct cli_opts o;
    char err[256];
    static const char *const ok[] = { "sluice", "--listen", "127.0.0.1:0", "--principal",
                                      "header:X-User", "--allow-origin", "https://a.example",
                                      "--max-body", "2048", NULL };
    assert_int_equal(cli_parse(9, (char **)ok, &o, err, sizeof(err)), 0);
    assert_string_equal(o.listen, "127.0.0.1:0");
    assert_int_equal(o.norigins, 1);
    assert_int_equal(o.max_body, 2048);
    assert_int_equal(o.max_connections, 1024); /* default */
    static const char *const bad[][6] = {
        { "sluice", "--principal", "cert", NULL },                          /* needs --listen */
        { "sluice", "--listen", "127.0.0.1:1", "--principal", "cert", NULL }, /* needs a CA */
        { "sluice", "--listen", "127.0.0.1:1", "--principal", "root", NULL },
        { "sluice", "--listen", "127.0.0.1:1", "--max-body", "12x", NULL },
        { "sluice", "--listen", "127.0.0.1:1", "--tls-cert", "c.pem", NULL }, /* no key */
        { "sluice", "--upstream", "http://x/mcp", "--", "cmd", NULL },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int argc = 0;
        while (bad[i][argc])
            argc++;
        if (cli_parse(argc, (char **)bad[i], &o, err, sizeof(err)) == 0)
            fail_msg("case %zu was accepted", i);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_real_request),
        cmocka_unit_test(test_incomplete_then_complete),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_cli_http_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
