/* test_http1.c: the request head parser refuses what has smuggled requests past other proxies,
 * and reads what real clients send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* List elements: the text before ';' or ',', trimmed, compared without case. A token that
 * only occurs in another element's parameters, or as part of a longer element, is not there. */
static void test_list_has(void **state)
{
    (void)state;
    static const struct { const char *v, *token; bool has; } cases[] = {
        { "", "close", false },
        { ",", "close", false },
        { "close", "close", true },
        { "Close", "close", true },
        { " \tclose\t ", "close", true },
        { ",,close,", "close", true },
        { "keep-alive, close", "close", true },
        { "keep-alive,close;x=1", "close", true },
        { "closed", "close", false },
        { "clos", "close", false },
        { "x;close", "close", false },
        { "x;a=close, y", "close", false },
        { "x;a=\"b\";c=close", "close", false },
        { "text/html;q=0.1, APPLICATION/JSON;q=0.9", "application/json", true },
        { "text/html;x=application/json", "application/json", false },
        { "text/event-stream", "application/json", false },
        { "application/json text/event-stream", "application/json", false },
        { "close ;x=1", "close", true },
        { "close x, y", "close", false },
        { "x, close\t", "close", true },
        { "x, closeclose", "close", false },
        { "closX, close", "close", true },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (http1_list_has(sl_str_c(cases[i].v), cases[i].token) != cases[i].has)
            fail_msg("list \"%s\" has \"%s\": want %d", cases[i].v, cases[i].token,
                     cases[i].has);
}

static void test_incomplete_then_complete(void **state)
{
    (void)state;
    struct http1_head h;
    assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost: x\r\n", &h), 0);
    assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost: x\r\n\r", &h), 0);
    assert_true(parse("\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &h) > 0); /* blank line first */
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
        /* a bare LF ends no line of a request (a proxy in front may split there differently) */
        { "GET /healthz HTTP/1.1\nHost: x\r\n\r\n", -400 },       /* in the request line */
        { "GET /healthz HTTP/1.1\r\nHost: x\nX: y\r\n\r\n", -400 }, /* in a header line */
        { "GET /healthz HTTP/1.1\r\nHost: x\r\n\n", -400 },       /* the final empty line */
        { "GET /healthz HTTP/1.1\nHost: x\n\n", -400 },             /* everywhere */
        { "\nGET /healthz HTTP/1.1\r\n\r\n", -400 },               /* a blank line first */
        { "\r\n\nGET /healthz HTTP/1.1\r\n\r\n", -400 },
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

/* Every byte value at every offset of a field value and of a status line's reason (across the
 * word-at-a-time scan's 8-byte steps): controls other than HTAB, and DEL, are refused; HTAB,
 * visible ASCII, SP and obs-text are read as they are. */
static void test_every_byte_in_a_value(void **state)
{
    (void)state;
    for (int c = 0; c < 256; c++) {
        bool ok = c == '\t' || (c >= 0x20 && c != 0x7f);
        for (size_t pos = 0; pos < 40; pos++) { /* every place in two 16-byte blocks */
            char val[40];
            memset(val, 'a', sizeof(val));
            val[pos] = (char)c;
            struct sl_buf req = { 0 }, res = { 0 };
            sl_buf_puts(&req, "GET / HTTP/1.1\r\nX: b");
            sl_buf_put(&req, val, sizeof(val));
            sl_buf_puts(&req, "b\r\n\r\n");
            struct http1_head h;
            ssize_t got = http1_parse_head(req.p, req.len, 16384, &h);
            if (ok ? got != (ssize_t)req.len : got != -400)
                fail_msg("request, byte 0x%02x at %zu: got %zd", c, pos, got);
            if (ok) {
                struct sl_str v;
                assert_int_equal(http1_header(&h, "x", &v), 1);
                assert_int_equal(v.len, sizeof(val) + 2);
                assert_memory_equal(v.p + 1, val, sizeof(val));
            }
            /* The head cut right after the value: its last bytes are scanned a word and a
             * byte at a time (fewer than 16 left), where the rest went a block at a time. */
            got = http1_parse_head(req.p, req.len - 4, 16384, &h);
            if (ok ? got != 0 : got != -400)
                fail_msg("cut request, byte 0x%02x at %zu: got %zd", c, pos, got);
            sl_buf_puts(&res, "HTTP/1.1 200 O");
            sl_buf_put(&res, val, sizeof(val));
            sl_buf_puts(&res, "K\r\nContent-Length: 0\r\n\r\n");
            got = http1_parse_response_head(res.p, res.len, 16384, &h);
            if (ok ? got != (ssize_t)res.len : got != -502)
                fail_msg("response, byte 0x%02x at %zu: got %zd", c, pos, got);
            sl_buf_free(&req);
            sl_buf_free(&res);
        }
    }
}

/* Every byte at every place of a 24-byte header name (one 16-byte block read at once, the rest
 * byte by byte), on a long line and on one too short for the block: accepted exactly when it is
 * an RFC 9110 tchar (':' ends the name early, so the line has no colon where it stands next). */
static void test_every_byte_in_a_name(void **state)
{
    (void)state;
    static const char punct[] = "!#$%&'*+-.^_`|~";
    for (int c = 0; c < 256; c++) {
        bool tchar = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c != 0 && strchr(punct, c) != NULL);
        for (size_t pos = 0; pos < 24; pos++) {
            for (int longline = 0; longline < 2; longline++) {
                char name[24];
                memset(name, 'N', sizeof(name));
                name[pos] = (char)c;
                struct sl_buf req = { 0 };
                sl_buf_puts(&req, "GET / HTTP/1.1\r\n");
                sl_buf_put(&req, name, sizeof(name));
                sl_buf_puts(&req, longline ? ": a value long enough for two blocks\r\n\r\n" : ":\r\n\r\n");
                struct http1_head h;
                ssize_t got = http1_parse_head(req.p, req.len, 16384, &h);
                /* a colon ends the name there, and the rest is its value */
                bool ok = tchar || (c == ':' && pos > 0);
                if (ok ? got != (ssize_t)req.len : got >= 0)
                    fail_msg("name byte 0x%02x at %zu (%s line): got %zd", c, pos,
                             longline ? "long" : "short", got);
                sl_buf_free(&req);
            }
        }
    }
}

/* Lookups against strncasecmp, over names of every length from 1 to 20 in random case, on
 * short lines (under 8 bytes, read a byte at a time) and long ones, with near misses that differ
 * in one byte or in length. */
static void test_header_lookup_by_name(void **state)
{
    (void)state;
    static const char tch[] = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    srand(7);
    for (int round = 0; round < 4000; round++) {
        size_t len = 1 + (size_t)rand() % 20;
        char name[24], want[24];
        for (size_t i = 0; i < len; i++)
            name[i] = tch[(size_t)rand() % (sizeof(tch) - 1)];
        name[len] = '\0';
        memcpy(want, name, len + 1);
        for (size_t i = 0; i < len; i++) /* the same name in another case */
            if (rand() % 2 && want[i] >= 'a' && want[i] <= 'z')
                want[i] = (char)(want[i] - 32);
            else if (want[i] >= 'A' && want[i] <= 'Z')
                want[i] = (char)(want[i] + 32);
        int miss = rand() % 3; /* 0: same name, 1: one byte changed, 2: one byte longer */
        if (miss == 1) {
            size_t at = (size_t)rand() % len;
            want[at] = want[at] == 'q' ? 'r' : 'q';
        } else if (miss == 2) {
            want[len] = 'z';
            want[len + 1] = '\0';
        }
        bool same = strlen(want) == len && strncasecmp(want, name, len) == 0;
        struct sl_buf req = { 0 };
        sl_buf_printf(&req, "GET / HTTP/1.1\r\n%s:%s\r\n\r\n", name, rand() % 2 ? "" : " v");
        struct http1_head h;
        assert_int_equal(http1_parse_head(req.p, req.len, 16384, &h), (ssize_t)req.len);
        struct sl_str v;
        if (http1_header(&h, want, &v) != (same ? 1 : 0))
            fail_msg("%s looked up as %s", name, want);
        sl_buf_free(&req);
    }
}

/* The fields found while parsing answer as a search by name does: present once, repeated or
 * absent, in any case, next to names that differ from theirs in the last byte or the length. */
static void test_fields_as_named_lookups(void **state)
{
    (void)state;
    static const char *const names[HTTP1_FIELDS] = {
        [HTTP1_ACCEPT] = "accept", [HTTP1_AUTHORIZATION] = "authorization",
        [HTTP1_CONNECTION] = "connection", [HTTP1_CONTENT_LENGTH] = "content-length",
        [HTTP1_CONTENT_TYPE] = "content-type", [HTTP1_EXPECT] = "expect",
        [HTTP1_MCP_METHOD] = "mcp-method", [HTTP1_MCP_NAME] = "mcp-name",
        [HTTP1_MCP_PROTOCOL_VERSION] = "mcp-protocol-version",
        [HTTP1_MCP_SESSION_ID] = "mcp-session-id", [HTTP1_ORIGIN] = "origin",
        [HTTP1_TRANSFER_ENCODING] = "transfer-encoding",
    };
    srand(11);
    for (int round = 0; round < 3000; round++) {
        struct sl_buf req = { 0 };
        sl_buf_puts(&req, "GET / HTTP/1.1\r\n");
        int lines = rand() % 12;
        for (int l = 0; l < lines; l++) {
            int f = rand() % HTTP1_FIELDS;
            if (f == HTTP1_TRANSFER_ENCODING || f == HTTP1_CONTENT_LENGTH ||
                f == HTTP1_CONNECTION)
                f = HTTP1_MCP_NAME; /* those three change how the head parses */
            char name[32];
            snprintf(name, sizeof(name), "%s", names[f]);
            size_t len = strlen(name);
            int twist = rand() % 4; /* 0: other last byte, 1: one more byte */
            if (twist == 0)
                name[len - 1] = name[len - 1] == 'x' ? 'y' : 'x';
            else if (twist == 1)
                name[len] = 'x', name[len + 1] = '\0';
            for (char *q = name; *q; q++)
                if (rand() % 2 && *q >= 'a' && *q <= 'z')
                    *q = (char)(*q - 32);
            sl_buf_printf(&req, "%s: v%d\r\n", name, l);
        }
        sl_buf_puts(&req, "\r\n");
        struct http1_head h;
        assert_int_equal(http1_parse_head(req.p, req.len, 16384, &h), (ssize_t)req.len);
        for (int f = 0; f < HTTP1_FIELDS; f++) {
            struct sl_str a = SL_STR_NULL, b = SL_STR_NULL;
            int byname = http1_header(&h, names[f], &a);
            int byfield = http1_field(&h, (enum http1_field)f, &b);
            if (byname != byfield)
                fail_msg("%s in\n%s: by name %d, as a field %d", names[f], req.p, byname, byfield);
            if (byname == 1)
                assert_true(a.p == b.p && a.len == b.len);
        }
        sl_buf_free(&req);
    }
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
    assert_int_equal(o.max_sessions_per_principal, 64); /* default */
    static const char *const per[] = { "sluice", "--listen", "127.0.0.1:0",
                                       "--max-sessions-per-principal", "3", NULL };
    assert_int_equal(cli_parse(5, (char **)per, &o, err, sizeof(err)), 0);
    assert_int_equal(o.max_sessions_per_principal, 3);
    assert_int_equal(o.max_sessions, 100000);
    static const char *const bad[][6] = {
        { "sluice", "--principal", "cert", NULL },                          /* needs --listen */
        { "sluice", "--listen", "127.0.0.1:1", "--principal", "cert", NULL }, /* needs a CA */
        { "sluice", "--listen", "127.0.0.1:1", "--principal", "root", NULL },
        { "sluice", "--listen", "127.0.0.1:1", "--max-body", "12x", NULL },
        { "sluice", "--listen", "127.0.0.1:1", "--max-sessions-per-principal", "0", NULL },
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

/* ===== responses from an HTTP upstream ===== */

static ssize_t parse_resp(const char *text, struct http1_head *h)
{
    return http1_parse_response_head(text, strlen(text), 16384, h);
}

static void test_response_heads(void **state)
{
    (void)state;
    struct http1_head h;
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Transfer-Encoding: chunked\r\nMcp-Session-Id: abc\r\n\r\nX";
    assert_int_equal(parse_resp(ok, &h), (ssize_t)strlen(ok) - 1);
    assert_int_equal(h.status, 200);
    assert_true(h.chunked);
    assert_false(h.has_length);
    assert_true(h.keep_alive);
    assert_true(parse_resp("HTTP/1.1 202\r\nContent-Length: 0\r\n\r\n", &h) > 0); /* no reason */
    assert_int_equal(h.status, 202);
    assert_true(h.has_length && h.content_length == 0);
    assert_true(parse_resp("HTTP/1.0 500 Oops\r\n\r\n", &h) > 0);
    assert_false(h.keep_alive);
    /* the operator's upstream may end lines in a bare LF (lenient on purpose: http1.h) */
    assert_true(parse_resp("HTTP/1.1 200 OK\nContent-Length: 0\n\n", &h) > 0);
    assert_true(h.has_length && h.content_length == 0);
    assert_int_equal(parse_resp("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", &h), 0);
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX : y\r\n\r\n",
        "HTTP/1.1 200 OK\r\n folded\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "\r\nHTTP/1.1 200 OK\r\n\r\n", /* no leading blank lines in a response */
        "garbage\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (parse_resp(bad[i], &h) != -502)
            fail_msg("response %zu was not refused: %s", i, bad[i]);
    /* A head that never ends is refused at the limit, not buffered forever. */
    char big[300];
    memset(big, 'a', sizeof(big));
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 21);
    assert_int_equal(http1_parse_response_head(big, sizeof(big), 256, &h), -502);
}

/* Feeds text to the decoder in pieces of step bytes, as a network would. */
static int dechunk_all(const char *text, size_t step, struct sl_buf *out, size_t *rest)
{
    struct http1_chunks c = HTTP1_CHUNKS_INIT;
    size_t len = strlen(text), off = 0, have = 0;
    while (off < len && !http1_dechunk_done(&c)) {
        have = have + step > len - off ? len - off : have + step;
        ssize_t used = http1_dechunk(&c, text + off, have, out);
        if (used < 0)
            return -1;
        off += (size_t)used;
        have -= (size_t)used;
        if (have == len - off && used == 0 && !http1_dechunk_done(&c))
            break; /* everything offered and nothing more taken: incomplete */
    }
    *rest = len - off;
    return http1_dechunk_done(&c) ? 1 : 0;
}

static void test_chunked_bodies(void **state)
{
    (void)state;
    static const char body[] = "5\r\nhello\r\n7;ext=1\r\n, world\r\nA \r\n0123456789\r\n"
                               "0\r\nTrailer: x\r\n\r\nNEXT";
    for (size_t step = 1; step <= sizeof(body); step++) {
        struct sl_buf out = { 0 };
        size_t rest = 0;
        assert_int_equal(dechunk_all(body, step, &out, &rest), 1);
        assert_int_equal(out.len, 22);
        assert_memory_equal(out.p, "hello, world0123456789", 22);
        assert_int_equal(rest, 4); /* what follows the body is not taken */
        sl_buf_free(&out);
    }
    struct sl_buf out = { 0 };
    size_t rest;
    assert_int_equal(dechunk_all("5\r\nhel", 3, &out, &rest), 0); /* more to come */
    sl_buf_free(&out);
    static const char *const bad[] = {
        "x\r\n",                        /* not hex */
        "\r\n",                         /* no size */
        "5\r\nhelloX\r\n",              /* data longer than its size */
        "5 x\r\nhello\r\n0\r\n\r\n",    /* junk after the size */
        "fffffffffffffffffff\r\n",      /* overflows */
        "5\rhello\r\n",                 /* bare CR */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_buf_reset(&out);
        if (dechunk_all(bad[i], 64, &out, &rest) != -1)
            fail_msg("chunked body %zu was not refused", i);
    }
    sl_buf_free(&out);
    /* A size line that never ends is refused, not buffered forever. */
    char longline[5000];
    memset(longline, '1', sizeof(longline) - 1);
    longline[sizeof(longline) - 1] = 0;
    assert_int_equal(dechunk_all(longline, sizeof(longline), &out, &rest), -1);
    sl_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_real_request),
        cmocka_unit_test(test_list_has),
        cmocka_unit_test(test_incomplete_then_complete),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_every_byte_in_a_value),
        cmocka_unit_test(test_every_byte_in_a_name),
        cmocka_unit_test(test_header_lookup_by_name),
        cmocka_unit_test(test_fields_as_named_lookups),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_cli_http_options),
        cmocka_unit_test(test_response_heads),
        cmocka_unit_test(test_chunked_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
