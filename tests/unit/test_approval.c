/* test_approval.c: the approval page's pure part (approval.h): page ids, CSRF tokens, the form,
 * the records, who may decide, and the HTML (escaping, headers, no script). Plus the policy's
 * approval fields and their errors. */
#include "approval.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sl_test.h"

static struct seal_keyring *ring(uint8_t fill)
{
    uint8_t k[32];
    memset(k, fill, sizeof(k));
    struct seal_keyring *kr = seal_keyring_new(k, sizeof(k), NULL, 0);
    assert_non_null(kr);
    return kr;
}

static void test_page_id(void **state)
{
    (void)state;
    struct seal_keyring *a = ring(1), *b = ring(2);
    struct seal_claims c1 = { .nonce = { 1 } }, c2 = { .nonce = { 2 } };
    uint8_t i1[APPROVAL_ID_LEN], i1again[APPROVAL_ID_LEN], i2[APPROVAL_ID_LEN], ib[APPROVAL_ID_LEN];
    approval_page_id(a, &c1, i1);
    approval_page_id(a, &c1, i1again);
    approval_page_id(a, &c2, i2);
    approval_page_id(b, &c1, ib);
    assert_memory_equal(i1, i1again, APPROVAL_ID_LEN); /* every replica with the key agrees */
    assert_memory_not_equal(i1, i2, APPROVAL_ID_LEN);
    assert_memory_not_equal(i1, ib, APPROVAL_ID_LEN);  /* another key, another id */
    assert_memory_not_equal(i1, c1.nonce, APPROVAL_ID_LEN); /* the nonce itself never shows */
    struct sl_buf url = { 0 };
    approval_url(&url, "https://sluice.example/", i1);
    assert_int_equal(url.len, strlen("https://sluice.example/approve/") + 32);
    assert_memory_equal(url.p, "https://sluice.example/approve/", 31);
    uint8_t back[APPROVAL_ID_LEN];
    assert_int_equal(approval_id_from_path((struct sl_str){ url.p + 22, url.len - 22 }, back), 0);
    assert_memory_equal(back, i1, APPROVAL_ID_LEN);
    sl_buf_free(&url);
    seal_keyring_free(a);
    seal_keyring_free(b);
}

/* A key rotated while a page question is pending: the ring that now seals with a new key and
 * opens with the old one computes the page's id as the old ring did, from the opened state. */
static void test_page_id_across_rotation(void **state)
{
    (void)state;
    uint8_t old_key[32], new_key[32];
    memset(old_key, 5, sizeof(old_key));
    memset(new_key, 6, sizeof(new_key));
    struct seal_keyring *before = seal_keyring_new(old_key, sizeof(old_key), NULL, 0);
    struct seal_keyring *after =
        seal_keyring_new(new_key, sizeof(new_key), old_key, sizeof(old_key));
    assert_non_null(before);
    assert_non_null(after);
    struct seal_binding b = { SL_STR("tools/call"), SL_STR("write_file"), SL_STR("alice"),
                              SL_STR("up") };
    struct seal_claims c = { .kind = SEAL_KIND_PAGE, .nonce = { 7, 7 }, .iat = 100, .exp = 200 };
    struct sl_buf tok = { 0 }, inner = { 0 };
    assert_int_equal(seal_mint(before, &b, &c, &tok), 0);
    uint8_t asked[APPROVAL_ID_LEN], polled[APPROVAL_ID_LEN];
    approval_page_id(before, &c, asked); /* minted: the current key */
    struct seal_claims opened;
    assert_int_equal(seal_open(after, &b, 150, tok.p, tok.len, &opened, &inner), SEAL_OK);
    assert_int_equal(opened.key, 1); /* the previous key opened it */
    approval_page_id(after, &opened, polled);
    assert_memory_equal(asked, polled, APPROVAL_ID_LEN);
    sl_buf_reset(&tok);
    assert_int_equal(seal_mint(after, &b, &c, &tok), 0); /* the new key seals from now on */
    assert_int_equal(seal_open(after, &b, 150, tok.p, tok.len, &opened, &inner), SEAL_OK);
    assert_int_equal(opened.key, 0);
    sl_buf_free(&tok);
    sl_buf_free(&inner);
    seal_keyring_free(before);
    seal_keyring_free(after);
}

static void test_id_from_path(void **state)
{
    (void)state;
    uint8_t id[APPROVAL_ID_LEN];
    static const char *const bad[] = {
        "/approve/", "/approve/0123456789abcdef0123456789abcde",
        "/approve/0123456789abcdef0123456789abcdef0", "/approve/0123456789ABCDEF0123456789abcdef",
        "/approve/0123456789abcdef0123456789abcdeg", "/approve//123456789abcdef0123456789abcdef",
        "/mcp", "/approvx/0123456789abcdef0123456789abcdef",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        assert_int_equal(approval_id_from_path(sl_str_c(bad[i]), id), -1);
    assert_int_equal(
        approval_id_from_path(SL_STR("/approve/0123456789abcdef0123456789abcdef"), id), 0);
    assert_int_equal(id[0], 0x01);
    assert_int_equal(id[15], 0xef);
}

static void test_csrf(void **state)
{
    (void)state;
    struct seal_keyring *kr = ring(3), *other = ring(4);
    uint8_t id[APPROVAL_ID_LEN] = { 9 }, id2[APPROVAL_ID_LEN] = { 10 };
    char tok[APPROVAL_CSRF_HEX + 1];
    approval_csrf(kr, id, SL_STR("header:bob"), tok);
    assert_int_equal(strlen(tok), APPROVAL_CSRF_HEX);
    assert_true(approval_csrf_ok(kr, id, SL_STR("header:bob"), sl_str_c(tok)));
    /* bound to the page, the principal and the key */
    assert_false(approval_csrf_ok(kr, id2, SL_STR("header:bob"), sl_str_c(tok)));
    assert_false(approval_csrf_ok(kr, id, SL_STR("header:bo"), sl_str_c(tok)));
    assert_false(approval_csrf_ok(kr, id, SL_STR("header:bobb"), sl_str_c(tok)));
    assert_false(approval_csrf_ok(other, id, SL_STR("header:bob"), sl_str_c(tok)));
    /* empty, short, long, one digit off */
    assert_false(approval_csrf_ok(kr, id, SL_STR("header:bob"), SL_STR("")));
    assert_false(approval_csrf_ok(kr, id, SL_STR("header:bob"), (struct sl_str){ tok, 63 }));
    char longer[APPROVAL_CSRF_HEX + 2];
    snprintf(longer, sizeof(longer), "%s0", tok);
    assert_false(approval_csrf_ok(kr, id, SL_STR("header:bob"), sl_str_c(longer)));
    tok[10] = tok[10] == '0' ? '1' : '0';
    assert_false(approval_csrf_ok(kr, id, SL_STR("header:bob"), sl_str_c(tok)));
    /* across a rotation: a token the old key made still posts where the new one seals (a page
     * shown before, or by a replica not rotated yet); the new key's token too; another's not */
    uint8_t k3[32], k5[32];
    memset(k3, 3, sizeof(k3));
    memset(k5, 5, sizeof(k5));
    struct seal_keyring *rotated = seal_keyring_new(k5, sizeof(k5), k3, sizeof(k3));
    assert_non_null(rotated);
    char old_tok[APPROVAL_CSRF_HEX + 1], new_tok[APPROVAL_CSRF_HEX + 1];
    approval_csrf(kr, id, SL_STR("header:bob"), old_tok);
    approval_csrf(rotated, id, SL_STR("header:bob"), new_tok);
    assert_string_not_equal(old_tok, new_tok); /* the current key makes tokens */
    assert_true(approval_csrf_ok(rotated, id, SL_STR("header:bob"), sl_str_c(old_tok)));
    assert_true(approval_csrf_ok(rotated, id, SL_STR("header:bob"), sl_str_c(new_tok)));
    assert_false(approval_csrf_ok(rotated, id, SL_STR("header:bo"), sl_str_c(old_tok)));
    assert_false(approval_csrf_ok(kr, id, SL_STR("header:bob"), sl_str_c(new_tok)));
    char other_tok[APPROVAL_CSRF_HEX + 1];
    approval_csrf(other, id, SL_STR("header:bob"), other_tok);
    assert_false(approval_csrf_ok(rotated, id, SL_STR("header:bob"), sl_str_c(other_tok)));
    seal_keyring_free(rotated);
    seal_keyring_free(kr);
    seal_keyring_free(other);
}

static void test_form(void **state)
{
    (void)state;
    enum approval_decision d;
    struct sl_buf csrf = { 0 };
    assert_int_equal(approval_form_parse(SL_STR("csrf=ab%63d&decision=approve"), &d, &csrf), 0);
    assert_int_equal(d, APPROVAL_APPROVED);
    assert_bytes_equal(csrf.p, csrf.len, "abcd");
    sl_buf_reset(&csrf);
    assert_int_equal(approval_form_parse(SL_STR("decision=decline&x=1&csrf=q+r"), &d, &csrf), 0);
    assert_int_equal(d, APPROVAL_DECLINED);
    assert_bytes_equal(csrf.p, csrf.len, "q r");
    static const char *const bad[] = {
        "", "decision=approve", "csrf=abc", "csrf=a&decision=yes", "csrf=a&decision=Approve",
        "csrf=a&decision=approve&decision=decline", "csrf=a&csrf=b&decision=approve",
        "csrf=%zz&decision=approve", "csrf=%4&decision=approve", "csrf=a&decision=approve%",
        "csrf&decision=approve",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        sl_buf_reset(&csrf);
        assert_int_equal(approval_form_parse(sl_str_c(bad[i]), &d, &csrf), -1);
    }
    char big[APPROVAL_FORM_MAX + 40];
    memset(big, 'a', sizeof(big));
    memcpy(big, "decision=approve&csrf=", 22);
    sl_buf_reset(&csrf);
    assert_int_equal(approval_form_parse((struct sl_str){ big, sizeof(big) }, &d, &csrf), -1);
    sl_buf_free(&csrf);
}

/* The form's media type: exactly application/x-www-form-urlencoded (any case), then only
 * OWS and parameters. */
static void test_form_type(void **state)
{
    (void)state;
    static const char *const good[] = {
        "application/x-www-form-urlencoded", "Application/X-WWW-Form-URLEncoded",
        "application/x-www-form-urlencoded;charset=UTF-8",
        "application/x-www-form-urlencoded ; charset=utf-8",
        "application/x-www-form-urlencoded\t;",
    };
    static const char *const bad[] = {
        "application/x-www-form-urlencodedXYZ", "application/x-www-form-urlencoded-x",
        "application/x-www-form-urlencoded,text/plain", "application/x-www-form-urlencoded x",
        "application/x-www-form-urlencode", "multipart/form-data", "text/plain", "",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(good); i++)
        if (!approval_form_type(sl_str_c(good[i])))
            fail_msg("refused: %s", good[i]);
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        if (approval_form_type(sl_str_c(bad[i])))
            fail_msg("accepted: %s", bad[i]);
}

/* A POST the browser marks as cross-site is refused before the token is looked at; one
 * without those headers (curl) goes by the token. Rows: the request's extra header lines, the
 * base URL people see, whether it came in on loopback, and the reason wanted (NULL: not
 * refused). */
static void test_cross_site(void **state)
{
    (void)state;
    const char *const fetch = approval_refused_fetch_site, *const origin = approval_refused_origin;
    static const char base[] = "https://s.example:8443/prefix", plain[] = "http://s.example";
    static const char v6[] = "http://[2001:DB8:0:0::5]:9000";
    const struct {
        const char *lines, *base;
        bool local;
        const char *want;
    } rows[] = {
        { "Host: s.example:8443\r\n", base, false, NULL },                 /* curl */
        { "Host: s.example:8443\r\nSec-Fetch-Site: same-origin\r\n", base, false, NULL },
        { "Host: s.example:8443\r\nSec-Fetch-Site: none\r\n", base, false, NULL },
        { "Host: s.example:8443\r\nSec-Fetch-Site: cross-site\r\n", base, false, fetch },
        { "Host: s.example:8443\r\nSec-Fetch-Site: same-site\r\n", base, false, fetch },
        { "Host: s.example:8443\r\nSec-Fetch-Site: Same-Origin\r\n", base, false, fetch },
        { "Host: s.example:8443\r\nSec-Fetch-Site: same-origin\r\n"
          "Sec-Fetch-Site: same-origin\r\n", base, false, fetch },
        { "Host: s.example:8443\r\nOrigin: https://s.example:8443\r\n", base, false, NULL },
        { "Host: s.example:8443\r\nOrigin: https://S.Example:8443\r\n", base, false, NULL },
        { "Host: s.example\r\nOrigin: https://s.example:443\r\n", "https://s.example", false,
          NULL },
        { "Host: s.example:80\r\nOrigin: http://s.example\r\n", plain, false, NULL },
        { "Host: s.example:80\r\nOrigin: http://s.example:80\r\n", plain, false, NULL },
        { "Host: s.example\r\nOrigin: https://s.example\r\n", plain, false, origin },
        { "Host: s.example:8443\r\nOrigin: https://evil.example:8443\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: https://s.example:8444\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: https://s.example\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: https://s.example.evil:8443\r\n", base, false,
          origin },
        /* DNS rebinding: another site's Origin is its own Host, which is not the page's */
        { "Host: evil.example:8443\r\nOrigin: https://evil.example:8443\r\n", base, false,
          origin },
        { "Host: evil.example:8443\r\nOrigin: https://evil.example:8443\r\n", base, true,
          origin },
        { "Host: evil.example:8443\r\nOrigin: https://evil.example:8443\r\n", NULL, false,
          origin },
        /* what a browser sends with the page's own form (its Referrer-Policy: no-referrer) */
        { "Host: s.example:8443\r\nOrigin: null\r\nSec-Fetch-Site: same-origin\r\n", base,
          false, NULL },
        { "Host: s.example:8443\r\nOrigin: null\r\nSec-Fetch-Site: cross-site\r\n", base,
          false, fetch },
        { "Host: s.example:8443\r\nOrigin: null\r\nOrigin: null\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: nullx\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: https://s.example:8443/x\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: ftp://s.example:8443\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: https://s.example:8443\r\n"
          "Origin: https://s.example:8443\r\n", base, false, origin },
        { "Host: s.example:8443\r\nOrigin: https://s.example:8443\r\n"
          "Sec-Fetch-Site: cross-site\r\n", base, false, fetch },
        /* behind a proxy on loopback that rewrites Host: the address people see is the origin */
        { "Host: 127.0.0.1:9000\r\nOrigin: https://s.example:8443\r\n", base, true, NULL },
        { "Host: 127.0.0.1:9000\r\nOrigin: http://s.example:8443\r\n", base, true, origin },
        { "Origin: https://s.example:8443\r\n", base, false, NULL }, /* Host: approval_host_ok */
        /* over loopback the page opened under one of this machine's names: that origin */
        { "Host: localhost:9000\r\nOrigin: http://localhost:9000\r\n", base, true, NULL },
        { "Host: 127.0.0.1:9000\r\nOrigin: http://127.0.0.1:9000\r\n", NULL, true, NULL },
        { "Host: localhost:9000\r\nOrigin: http://localhost:9000\r\n", base, false, origin },
        { "Host: localhost:9000\r\nOrigin: http://localhost:9001\r\n", base, true, origin },
        { "Host: localhost:9000\r\nOrigin: http://127.0.0.1:9000\r\n", base, true, origin },
        { "Host: localhost:9000\r\nHost: localhost:9000\r\n"
          "Origin: http://localhost:9000\r\n", base, true, origin },
        { "Origin: http://localhost:9000\r\n", base, true, origin },     /* no Host */
        /* an IPv6 literal: the browser's own form of the base URL's is its origin */
        { "Host: [2001:db8::5]:9000\r\nOrigin: http://[2001:db8::5]:9000\r\n", v6, false,
          NULL },
        { "Host: [2001:db8::5]:9000\r\nOrigin: http://[2001:db8::5]:9001\r\n", v6, false,
          origin },
        { "Host: [2001:db8::5]:9000\r\nOrigin: https://[2001:db8::5]:9000\r\n", v6, false,
          origin },
        { "Host: [2001:db8::5]:9000\r\nOrigin: http://[2001:db8::6]:9000\r\n", v6, false,
          origin },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        char req[512];
        struct http1_head h;
        int n = snprintf(req, sizeof(req), "POST /approve/x HTTP/1.1\r\n%s\r\n", rows[i].lines);
        assert_true(n > 0 && (size_t)n < sizeof(req));
        assert_int_equal(http1_parse_head(req, (size_t)n, sizeof(req), &h), n);
        const char *got = approval_cross_site(&h, rows[i].base, rows[i].local);
        if (got != rows[i].want)
            fail_msg("rows[%zu]: got %s, want %s", i, got ? got : "NULL",
                     rows[i].want ? rows[i].want : "NULL");
    }
}

/* Against DNS rebinding: the page answers only under the base URL's authority, or over
 * loopback under this machine's own names. Rows: the Host lines, the base URL, whether the
 * connection came in on loopback, whether served. */
static void test_host(void **state)
{
    (void)state;
    static const char base[] = "https://approve.example.com/prefix";
    static const char v6[] = "http://[2001:DB8:0:0::5]:9000";
    const struct {
        const char *lines, *base;
        bool local, ok;
    } rows[] = {
        { "Host: 127.0.0.1:9000\r\n", NULL, true, true },
        { "Host: localhost\r\n", NULL, true, true },
        { "Host: LocalHost:1\r\n", NULL, true, true },
        { "Host: [::1]:65535\r\n", NULL, true, true },
        { "Host: approve.example.com\r\n", base, true, true },
        { "Host: approve.example.com:443\r\n", base, true, true },
        { "Host: Approve.Example.com\r\n", base, false, true },
        { "Host: approve.example.com:443\r\n", base, false, true },
        { "Host: 192.0.2.2:9000\r\n", "http://192.0.2.2:9000", false, true },
        { "Host: approve.example.com\r\n", NULL, true, false },
        { "Host: approve.example.com:8443\r\n", base, true, false },
        { "Host: approve.example.com.evil\r\n", base, true, false },
        { "Host: evil.example:9000\r\n", base, true, false },
        /* not on loopback: only the base URL's authority, whatever the Host */
        { "Host: evil.example:9000\r\n", base, false, false },
        { "Host: evil.example:9000\r\n", NULL, false, false },
        { "Host: localhost:9000\r\n", base, false, false },
        { "Host: 127.0.0.1:9000\r\n", NULL, false, false },
        { "Host: 192.0.2.2:9000\r\n", base, false, false },
        { "Host: localhost.evil.example\r\n", NULL, true, false },
        { "Host: 127.0.0.1.evil.example:9000\r\n", NULL, true, false },
        { "Host: 127.0.0.1:\r\n", NULL, true, false },
        { "Host: 127.0.0.1:123456\r\n", NULL, true, false },
        { "Host: 127.0.0.1:90a\r\n", NULL, true, false },
        { "Host: 127.0.0.2\r\n", NULL, true, false },   /* loopback, but a name DNS could give */
        { "Host: [::1]x\r\n", NULL, true, false },
        { "Host: localhost\r\nHost: localhost\r\n", NULL, true, false },
        { "Host: approve.example.com\r\nHost: approve.example.com\r\n", base, false, false },
        { "X-Other: localhost\r\n", NULL, true, false }, /* no Host */
        { "X-Other: approve.example.com\r\n", base, false, false },
        /* an IPv6 literal (--listen [ADDR]:PORT, no --approval-base-url): the browser sends its
         * own form of it (compressed, lowercase, IPv4-mapped in hex); the same address and the
         * same port are the same authority, nothing else is */
        { "Host: [2001:db8::5]:9000\r\n", v6, false, true },
        { "Host: [2001:DB8::5]:9000\r\n", v6, false, true },
        { "Host: [2001:db8:0:0:0:0:0:5]:9000\r\n", v6, false, true },
        { "Host: [2001:0db8::0005]:9000\r\n", v6, false, true },
        { "Host: [2001:db8::5]\r\n", "http://[2001:DB8:0::5]", false, true },
        { "Host: [2001:db8::5]:80\r\n", "http://[2001:DB8:0::5]", false, true },
        { "Host: [2001:db8::5]\r\n", "https://[2001:DB8:0::5]:443", false, true },
        { "Host: [::ffff:a00:1]:9000\r\n", "http://[::ffff:10.0.0.1]:9000", false, true },
        { "Host: [::1]:9000\r\n", "http://[0:0:0:0:0:0:0:1]:9000", false, true },
        { "Host: [2001:db8::5]:9001\r\n", v6, false, false },
        { "Host: [2001:db8::5]:09000\r\n", v6, false, false },
        { "Host: [2001:db8::5]\r\n", v6, false, false },
        { "Host: [2001:db8::5]:\r\n", v6, false, false },
        { "Host: [2001:db8::5]:9000x\r\n", v6, false, false },
        { "Host: [2001:db8::5]:90a\r\n", "http://[2001:DB8:0:0::5]:90a", false, false },
        { "Host: [2001:db8::5]x:9000\r\n", v6, false, false },
        { "Host: [2001:db8::6]:9000\r\n", v6, false, false },
        { "Host: [2001:db8::5%25eth0]:9000\r\n", v6, false, false },
        { "Host: [2001:db8::5:9000\r\n", v6, false, false },
        { "Host: 2001:db8::5:9000\r\n", v6, false, false },
        { "Host: [2001:db8::5]:9000\r\n", "http://[2001:db8::5%25eth0]:9000", false, false },
        { "Host: [2001:db8::5]:9000\r\n", "http://[2001:db8::5]:9000x", false, false },
        { "Host: [::ffff:10.0.0.1]:9000\r\n", "http://10.0.0.1:9000", false, false },
        { "Host: evil.example:9000\r\n", v6, false, false },
        { "Host: evil.example:9000\r\n", v6, true, false },
        /* over loopback without a base URL, only the names (a literal of ::1 is one by address
         * only where it is the base URL's) */
        { "Host: [0:0:0:0:0:0:0:1]:9000\r\n", NULL, true, false },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        char req[512];
        struct http1_head h;
        int n = snprintf(req, sizeof(req), "GET /approve/x HTTP/1.1\r\n%s\r\n", rows[i].lines);
        assert_true(n > 0 && (size_t)n < sizeof(req));
        assert_int_equal(http1_parse_head(req, (size_t)n, sizeof(req), &h), n);
        if (approval_host_ok(&h, rows[i].base, rows[i].local) != rows[i].ok)
            fail_msg("rows[%zu]: %s", i, rows[i].lines);
    }
}

/* The question's record carries the arguments' digest (for the decision's journal record);
 * without one it says null, and a record an older sluice wrote (no member) reads as none. */
static void test_record_digest(void **state)
{
    (void)state;
    struct approval_question q = {
        .server = SL_STR("s"), .tool = SL_STR("t"), .caller = SL_STR("c"), .text = SL_STR("x"),
        .exp = 5, .has_digest = true,
    }, back;
    for (size_t i = 0; i < sizeof(q.digest); i++)
        q.digest[i] = (uint8_t)(0xa0 + i);
    struct sl_buf b = { 0 };
    approval_question_encode(&b, &q);
    assert_non_null(memmem(b.p, b.len, "\"args_sha256\":\"a0a1a2", 21));
    struct sl_arena *a = sl_arena_new();
    assert_int_equal(approval_question_decode(sl_buf_str(&b), a, &back), 0);
    assert_true(back.has_digest);
    assert_memory_equal(back.digest, q.digest, sizeof(q.digest));
    sl_buf_reset(&b);
    q.has_digest = false;
    approval_question_encode(&b, &q);
    assert_non_null(memmem(b.p, b.len, "\"args_sha256\":null", 18));
    back.has_digest = true;
    assert_int_equal(approval_question_decode(sl_buf_str(&b), a, &back), 0);
    assert_false(back.has_digest);
    static const char older[] = "{\"server\":\"s\",\"tool\":\"t\",\"caller\":\"c\",\"text\":\"x\","
                                "\"exp\":5,\"irreversible\":false}";
    back.has_digest = true;
    assert_int_equal(approval_question_decode(SL_STR(older), a, &back), 0);
    assert_false(back.has_digest);
    static const char *const bad[] = { "\"abc\"", "1", "\"A0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4"
                                                      "B5B6B7B8B9BABBBCBDBEBF\"" };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct sl_buf r = { 0 };
        sl_buf_printf(&r, "{\"server\":\"s\",\"tool\":\"t\",\"caller\":\"c\",\"text\":\"x\","
                          "\"exp\":5,\"irreversible\":false,\"args_sha256\":%s}", bad[i]);
        assert_int_equal(approval_question_decode(sl_buf_str(&r), a, &back), -1);
        sl_buf_free(&r);
    }
    sl_arena_free(a);
    sl_buf_free(&b);
}

static void test_records(void **state)
{
    (void)state;
    struct approval_question q = {
        .server = SL_STR("github"), .tool = SL_STR("delete_repo"),
        .caller = SL_STR("header:alice"), .text = SL_STR("Allow \"x\"?\n\xe2\x80\xa2 a: 1"),
        .exp = 1767225600, .irreversible = true,
    }, back;
    struct sl_buf b = { 0 };
    approval_question_encode(&b, &q);
    struct sl_arena *a = sl_arena_new();
    assert_int_equal(approval_question_decode(sl_buf_str(&b), a, &back), 0);
    assert_true(sl_str_eq(back.tool, q.tool));
    assert_true(sl_str_eq(back.caller, q.caller));
    assert_true(sl_str_eq(back.text, q.text));
    assert_true(sl_str_eq(back.server, q.server));
    assert_int_equal(back.exp, q.exp);
    assert_true(back.irreversible);
    assert_int_equal(approval_question_decode(SL_STR("{\"tool\":\"x\"}"), a, &back), -1);
    assert_int_equal(approval_question_decode(SL_STR("nope"), a, &back), -1);
    sl_arena_free(a);
    sl_buf_reset(&b);
    approval_decision_encode(&b, APPROVAL_APPROVED, SL_STR("header:bob"));
    enum approval_decision d;
    struct sl_str who;
    assert_int_equal(approval_decision_decode(sl_buf_str(&b), &d, &who), 0);
    assert_int_equal(d, APPROVAL_APPROVED);
    assert_true(sl_str_eq(who, SL_STR("header:bob")));
    assert_int_equal(approval_decision_decode(SL_STR("approve\nx"), &d, &who), -1);
    assert_int_equal(approval_decision_decode(SL_STR(""), &d, &who), -1);
    sl_buf_free(&b);
}

static void test_who(void **state)
{
    (void)state;
    static const char *const pats[] = { "header:oncall-*", "cert:CN=lead,*" };
    struct policy_decision d = { .approvers = pats, .napprovers = 2 };
    struct sl_str alice = SL_STR("header:alice");
    assert_int_equal(approval_may_decide(&d, alice, SL_STR("header:oncall-bob")), APPROVAL_MAY);
    assert_int_equal(approval_may_decide(&d, alice, SL_STR("cert:CN=lead,O=acme")), APPROVAL_MAY);
    assert_int_equal(approval_may_decide(&d, alice, SL_STR("header:oncall")),
                     APPROVAL_NOT_APPROVER);
    assert_int_equal(approval_may_decide(&d, alice, SL_STR("xheader:oncall-bob")),
                     APPROVAL_NOT_APPROVER);
    assert_int_equal(approval_may_decide(&d, alice, SL_STR("header:mallory")),
                     APPROVAL_NOT_APPROVER);
    /* the caller: only with self_approve, even when a pattern matches it */
    struct sl_str oncall = SL_STR("header:oncall-alice");
    assert_int_equal(approval_may_decide(&d, oncall, oncall), APPROVAL_SELF);
    assert_int_equal(approval_may_decide(&d, alice, alice), APPROVAL_SELF);
    d.self_approve = true;
    assert_int_equal(approval_may_decide(&d, alice, alice), APPROVAL_MAY);
    /* no approvers: nobody else */
    struct policy_decision none = { .self_approve = true };
    assert_int_equal(approval_may_decide(&none, alice, SL_STR("header:bob")),
                     APPROVAL_NOT_APPROVER);
}

static void test_glob(void **state)
{
    (void)state;
    assert_true(policy_principal_match("*", "", 0));
    assert_true(policy_principal_match("a*c", "abbbc", 5));
    assert_true(policy_principal_match("a?c", "abc", 3));
    assert_false(policy_principal_match("a?c", "ac", 2));
    assert_true(policy_principal_match("cert:CN=*,O=acme", "cert:CN=x,y,O=acme", 18));
    assert_false(policy_principal_match("abc", "abcd", 4));
    assert_false(policy_principal_match("abc", "ab", 2));
    assert_true(policy_principal_match("**a**", "xxa", 3));
    /* bytes after a NUL are part of the principal: never a shorter match */
    assert_false(policy_principal_match("ab", "ab\0c", 4));
}

static void test_html(void **state)
{
    (void)state;
    struct approval_question q = {
        .server = SL_STR("s<1>"), .tool = SL_STR("t\"x'\xe2\x80\xae" "evil"),
        .caller = SL_STR("header:a&b\xe2\x80\x8b"),
        .text = SL_STR("<script>alert(1)</script>\n\x1b[31m"), .exp = 1000, .irreversible = true,
    };
    struct sl_buf b = { 0 };
    approval_render(&b, &q, 940, "c0ffee", "n0nce");
    sl_buf_putc(&b, '\0');
    assert_null(strstr(b.p, "<script"));
    assert_non_null(strstr(b.p, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(b.p, "s&lt;1&gt;"));
    /* the rows' names are neutralized as the question is: the RLO and the zero-width space show
     * as escapes, not as what they do */
    assert_non_null(strstr(b.p, "<td>t&quot;x&#39;\\u202eevil</td>"));
    assert_non_null(strstr(b.p, "<td>header:a&amp;b\\u200b</td>"));
    assert_null(strstr(b.p, "\xe2\x80\xae"));
    assert_null(strstr(b.p, "\xe2\x80\x8b"));
    assert_non_null(strstr(b.p, "&#x1b;[31m"));
    assert_non_null(strstr(b.p, "60 s"));
    assert_non_null(strstr(b.p, "name=\"csrf\" value=\"c0ffee\""));
    assert_non_null(strstr(b.p, "value=\"approve\""));
    assert_non_null(strstr(b.p, "value=\"decline\""));
    assert_non_null(strstr(b.p, "method=\"post\""));
    assert_non_null(strstr(b.p, "<style nonce=\"n0nce\">"));
    sl_buf_reset(&b);
    approval_render(&b, &q, 940, NULL, "n");
    sl_buf_putc(&b, '\0');
    assert_null(strstr(b.p, "<form"));
    sl_buf_reset(&b);
    approval_headers(&b, "n0nce");
    sl_buf_putc(&b, '\0');
    assert_non_null(strstr(b.p, "default-src 'none'"));
    assert_non_null(strstr(b.p, "style-src 'nonce-n0nce'"));
    assert_non_null(strstr(b.p, "form-action 'self'"));
    assert_non_null(strstr(b.p, "frame-ancestors 'none'"));
    assert_non_null(strstr(b.p, "X-Frame-Options: DENY\r\n"));
    assert_non_null(strstr(b.p, "Cache-Control: no-store\r\n"));
    assert_non_null(strstr(b.p, "Referrer-Policy: no-referrer\r\n"));
    assert_null(strstr(b.p, "unsafe"));
    sl_buf_free(&b);
}

/* The policy's approval fields and their errors at file:line:col. */
static void expect_error(const char *text, const char *want)
{
    struct policy *p = NULL;
    struct policy_error err;
    int rc = policy_load_buffer("t.yaml", text, strlen(text), &p, &err);
    char msg[600];
    policy_error_format(&err, msg, sizeof(msg));
    if (rc == 0 || strstr(msg, want) == NULL) {
        print_error("want an error containing: %s\ngot (%d): %s\n", want, rc, rc ? msg : "");
        policy_unref(p);
        fail();
    }
}

static void test_policy_fields(void **state)
{
    (void)state;
    static const char ok[] = "version: 1\n"
                             "tools:\n"
                             "  a:\n"
                             "    action: confirm\n"
                             "    irreversible: true\n"
                             "    approvers: [\"header:oncall-*\", \"cert:CN=lead,*\",\n"
                             "                'cert:CN=Doe\\, Jane,O=Example Corp', 'cert:CN=Jos\\C3\\A9']\n"
                             "  b:\n"
                             "    action: confirm\n"
                             "    approval: client-or-page\n"
                             "    self_approve: true\n"
                             "  c:\n"
                             "    action: confirm\n"
                             "    irreversible: true\n"
                             "    fallback: page\n"
                             "    self_approve: true\n"
                             "  d:\n"
                             "    action: confirm\n";
    struct policy *p = NULL;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("ok.yaml", ok, sizeof(ok) - 1, &p, &err), 0);
    struct policy_decision d;
    policy_lookup(p, "a", 1, &d);
    assert_int_equal(d.approval, POLICY_APPROVAL_PAGE);
    assert_int_equal(d.napprovers, 4);
    assert_string_equal(d.approvers[1], "cert:CN=lead,*");
    assert_string_equal(d.approvers[2], "cert:CN=Doe\\, Jane,O=Example Corp");
    assert_false(d.self_approve);
    policy_lookup(p, "b", 1, &d);
    assert_int_equal(d.approval, POLICY_APPROVAL_CLIENT_OR_PAGE);
    assert_true(d.self_approve);
    policy_lookup(p, "c", 1, &d);
    assert_int_equal(d.approval, POLICY_APPROVAL_CLIENT);
    assert_true(d.page_fallback);
    assert_false(d.token_fallback);
    policy_lookup(p, "d", 1, &d);
    assert_int_equal(d.approval, POLICY_APPROVAL_CLIENT);
    assert_false(d.page_fallback);
    assert_null(d.approvers);
    policy_unref(p);

    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    approval: pages\n",
                 "t.yaml:5:15: tools.a.approval must be client, page or client-or-page");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    approvers: []\n",
                 "t.yaml:5:16: tools.a.approvers must be a non-empty list");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    approvers: [\"\"]\n",
                 "t.yaml:5:17: tools.a.approvers entries must be non-empty strings");
    /* foreign glob syntax and invisible characters, at the pattern (policy_name.c's rows) */
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n"
                 "    approvers: [\"header:oncall\", \"header:{alice,bob}\"]\n",
                 "t.yaml:5:34: tools.a.approvers pattern \"header:{alice,bob}\" has '{' (braces "
                 "are not alternatives here) at character 8: write one pattern per entry");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n"
                 "    approvers: [\"header:oncall-[12]\"]\n",
                 "t.yaml:5:17: tools.a.approvers pattern \"header:oncall-[12]\" has '[' (brackets "
                 "are not character classes here) at character 15: write one pattern per entry, "
                 "or ? for any one character");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n"
                 "    approvers: ['header:oncall-\\*']\n",
                 "t.yaml:5:17: tools.a.approvers pattern \"header:oncall-\\\\*\" has '\\' (a "
                 "backslash escapes nothing here) at character 15: only * and ? are special");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n"
                 "    approvers: [\"header: alice\"]\n",
                 "t.yaml:5:17: tools.a.approvers pattern \"header: alice\" has ' ' (whitespace) at "
                 "character 8: remove it");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n"
                 "    approvers: [\"header:al\u200bice\"]\n",
                 "t.yaml:5:17: tools.a.approvers pattern ");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n"
                 "    approvers: [\"header:al\u200bice\"]\n",
                 "has U+200B (an invisible or format character) at character 10: write the "
                 "principal as sluice names it");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    approval: client\n"
                 "    approvers: [x]\n",
                 "t.yaml:6:5: tools.a.approvers needs approval: page");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    self_approve: yes\n",
                 "t.yaml:5:19:");
    expect_error("version: 1\ntools:\n  a:\n    action: allow\n    approvers: [x]\n",
                 "t.yaml:5:5: tools.a: approval, approvers and self_approve need action confirm");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    approval: page\n",
                 "t.yaml:4:5: tools.a sends its question to the approval page, where nobody");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    irreversible: true\n"
                 "    fallback: token\n",
                 "fallback: token is not allowed on an irreversible tool");
    expect_error("version: 1\ntools:\n  a:\n    action: confirm\n    fallback: pages\n",
                 "t.yaml:5:15: tools.a.fallback must be token or page");
}

/* The warnings of a policy that loads, each "file:line:col: msg", joined by newlines. */
static void load_warnings(const char *text, struct sl_buf *out)
{
    struct policy *p = NULL;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t.yaml", text, strlen(text), &p, &err), 0);
    for (size_t i = 0; i < policy_warning_count(p); i++) {
        char msg[600];
        policy_error_format(policy_warning(p, i), msg, sizeof(msg));
        sl_buf_printf(out, "%s\n", msg);
    }
    policy_unref(p);
}

/* An approvers pattern that matches more than one bearer principal: sluice does not verify
 * bearer tokens, so a caller with a second token (any, or one of those it mints until one's
 * digest matches) is such an approver of its own call. A warning at the pattern, file:line:col
 * and its field, saying whether it matches them all; none for a pattern that names one bearer
 * principal or none, nor with self_approve (the caller may approve anyway). */
static void test_bearer_wildcard_warns(void **state)
{
    (void)state;
    static const struct {
        const char *pattern;
        const char *warns; /* "every", "more than one" or NULL */
    } rows[] = {
        { "bearer:*", "every" }, { "*", "every" }, { "b*", "every" }, { "*:*", "every" },
        { "bearer:????????????????????????????????", "every" }, { "*e*", "every" },
        { "bearer*?", "every" },
        /* a wildcard over some digits: a caller mints tokens until one matches */
        { "bearer:0*", "more than one" }, { "bearer:*f", "more than one" },
        { "bearer:0123*", "more than one" }, { "bearer:?*", "every" },
        { "*0*", "more than one" }, { "*:0*", "more than one" },
        { "bearer:0123456789abcdef0123456789abcde?", "more than one" },
        { "bearer:?123456789abcdef0123456789abcdef", "more than one" },
        { "bearer:0123456789abcdef*0123456789abcde", "more than one" },
        { "bearer:0123456789abcdef0123456789abcde*", "more than one" },
        { "*?123456789abcdef0123456789abcdef", "more than one" },
        { "bearer:0123456789abcdef0123456789abcdef", NULL },
        /* wildcards that can only take the prefix or nothing: still one principal */
        { "bearer:*0123456789abcdef0123456789abcdef", NULL },
        { "bearer:0123456789abcdef0123456789abcdef*", NULL },
        { "bearer:0123456789abcdef**0123456789abcdef", NULL },
        { "*0123456789abcdef0123456789abcdef", NULL },
        { "b?ar*:0123456789abcdef0123456789abcdef", NULL },
        { "???????0123456789abcdef0123456789abcdef", NULL },
        /* no bearer principal at all */
        { "bearer:0123456789ABCDEF0123456789ABCDEF", NULL }, { "bearer:0*g", NULL },
        { "bearer:0123456789abcdef0123456789abcdef0*", NULL }, { "bearer:0?", NULL },
        { "header:*", NULL }, { "header:alice*", NULL }, { "cert:*", NULL },
        { "bearer:???????????????????????????????", NULL }, /* 31: no principal */
        { "anonymous", NULL }, { "bearer", NULL },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        char text[400], want[64];
        snprintf(text, sizeof(text),
                 "version: 1\ntools:\n  a:\n    action: confirm\n"
                 "    approvers: [\"header:oncall\", \"%s\"]\n",
                 rows[i].pattern);
        snprintf(want, sizeof(want), "\" matches %s bearer principal: ",
                 rows[i].warns ? rows[i].warns : "");
        struct sl_buf w = { 0 };
        load_warnings(text, &w);
        /* at the pattern, naming its field (a long pattern is shown cut) */
        bool got = w.p != NULL && strncmp(w.p, "t.yaml:5:34: tools.a.approvers[1] \"", 35) == 0 &&
                   strstr(w.p, want) != NULL && strchr(w.p, '\n') == w.p + w.len - 1;
        if (got != (rows[i].warns != NULL) || (!rows[i].warns && w.len != 0)) {
            print_error("%s: want %s, got: %s\n", rows[i].pattern,
                        rows[i].warns ? want : "none", w.p ? w.p : "(none)");
            fail();
        }
        sl_buf_free(&w);
    }
    struct sl_buf w = { 0 };
    load_warnings("version: 1\ntools:\n  a:\n    action: confirm\n"
                  "    approvers: [\"bearer:*\"]\n    self_approve: true\n",
                  &w);
    assert_int_equal(w.len, 0);
    sl_buf_free(&w);
    load_warnings("version: 1\ntools:\n  a:\n    action: confirm\n"
                  "    approvers: [\"bearer:0*\"]\n    self_approve: true\n",
                  &w);
    assert_int_equal(w.len, 0);
    sl_buf_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_id),
        cmocka_unit_test(test_page_id_across_rotation),
        cmocka_unit_test(test_id_from_path),
        cmocka_unit_test(test_csrf),
        cmocka_unit_test(test_form),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_form_type),
        cmocka_unit_test(test_cross_site),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_record_digest),
        cmocka_unit_test(test_who),
        cmocka_unit_test(test_glob),
        cmocka_unit_test(test_html),
        cmocka_unit_test(test_policy_fields),
        cmocka_unit_test(test_bearer_wildcard_warns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
