/* test_notify.c: the --notify-url event as bytes (its JSON and its chat text) and the URL check
 * (what its errors say, and that they never show the path, query or password).
 * The sending (retries, the queue) is tested end to end: tests/e2e/approval_notify.test.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "notify.h"
#include "sl_test.h"

#define T0 1796173425 /* 2026-12-02T01:03:45Z */

static struct notify_event example(void)
{
    return (struct notify_event){
        .server = SL_STR("filesystem"),
        .tool = SL_STR("delete_file"),
        .caller = SL_STR("header:alice"),
        .url = SL_STR("https://sluice.example/approve/Zq3x"),
        .expires_at = T0,
    };
}

static void test_json_exact(void **state)
{
    (void)state;
    struct notify_event ev = example();
    struct sl_buf b = { 0 };
    notify_event_json(&b, &ev);
    assert_bytes_equal(b.p, b.len,
        "{\"event\":\"approval-pending\",\"server\":\"filesystem\",\"tool\":\"delete_file\","
        "\"caller\":\"header:alice\",\"url\":\"https://sluice.example/approve/Zq3x\","
        "\"expires_at\":\"2026-12-02T01:03:45Z\",\"text\":\"sluice: `header:alice` asks to run "
        "`delete_file` on `filesystem`; approve at https://sluice.example/approve/Zq3x before "
        "01:03:45Z\"}");
    sl_buf_free(&b);
}

static void test_text_exact(void **state)
{
    (void)state;
    struct notify_event ev = example();
    struct sl_buf b = { 0 };
    notify_event_text(&b, &ev);
    assert_bytes_equal(b.p, b.len,
        "sluice: `header:alice` asks to run `delete_file` on `filesystem`; approve at "
        "https://sluice.example/approve/Zq3x before 01:03:45Z");
    sl_buf_free(&b);
}

/* No principal: the text still reads, and says who (nobody known). */
static void test_anonymous_caller(void **state)
{
    (void)state;
    struct notify_event ev = example();
    ev.caller = SL_STR_NULL;
    struct sl_buf b = { 0 };
    notify_event_json(&b, &ev);
    assert_non_null(strstr(b.p, "\"caller\":\"anonymous\""));
    assert_non_null(strstr(b.p, "\"text\":\"sluice: `anonymous` asks to run"));
    sl_buf_free(&b);
}

/* A principal comes from a header a proxy set, perhaps from a user's name: in the text it must
 * not mention the channel, start a link, format text, or begin a new line (it sits in a code span
 * it cannot end); in the JSON it stays valid. */
static const struct {
    const char *caller, *json_caller, *text_caller;
} hostile[] = {
    { "header:<!channel>", "header:<!channel>", "header:&lt;!channel&gt;" },
    { "<!channel> *URGENT* approve http://evil.example/x `@here`",
      "<!channel> *URGENT* approve http://evil.example/x `@here`",
      "&lt;!channel&gt; *URGENT* approve http[:]//evil.example/x '@here'" },
    { "``` ~x~ _y_ <https://a.example|b> a:// ://", "``` ~x~ _y_ <https://a.example|b> a:// ://",
      "''' ~x~ _y_ &lt;https[:]//a.example|b&gt; a[:]// [:]//" },
    { "ends:/", "ends:/", "ends:/" },
    { "a&b", "a&b", "a&amp;b" },
    { "eve\napproved: yes", "eve?approved: yes", "eve?approved: yes" },
    { "q\"uote\\", "q\\\"uote\\\\", "q\"uote\\" },
    { "bad\xff utf8", "bad? utf8", "bad? utf8" },
    { "\xc3\xa9lodie", "\xc3\xa9lodie", "\xc3\xa9lodie" }, /* UTF-8 stays */
    { "del\x7f", "del?", "del?" },
    /* U+202E (right-to-left override) would turn the rest of the line around; U+200B is not
     * seen, U+0085 (C1) is a line break to some readers */
    { "eve\xe2\x80\xae txet", "eve? txet", "eve? txet" },
    { "a\xe2\x80\x8b" "b\xc2\x85" "c", "a?b?c", "a?b?c" },
};

static void test_hostile_callers(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(hostile); i++) {
        struct notify_event ev = example();
        ev.caller = sl_str_c(hostile[i].caller);
        struct sl_buf b = { 0 }, want = { 0 };
        notify_event_text(&b, &ev);
        sl_buf_printf(&want, "sluice: `%s` asks to run", hostile[i].text_caller);
        if (b.len < want.len || memcmp(b.p, want.p, want.len) != 0)
            assert_bytes_equal(b.p, b.len, want.p);
        sl_buf_reset(&b);
        sl_buf_reset(&want);
        notify_event_json(&b, &ev);
        sl_buf_printf(&want, "\"caller\":\"%s\"", hostile[i].json_caller);
        if (strstr(b.p, want.p) == NULL)
            assert_bytes_equal(b.p, b.len, want.p);
        for (size_t k = 0; k < b.len; k++) /* one line: no raw control byte */
            assert_true((unsigned char)b.p[k] >= 0x20);
        sl_buf_free(&b);
        sl_buf_free(&want);
    }
}

/* The tool's name comes from the client and the server's from the upstream: inert as the
 * caller's; the page's URL, sluice's own, stays a link. */
static void test_names_inert(void **state)
{
    (void)state;
    struct notify_event ev = example();
    ev.tool = SL_STR("x` *y* <!here> https://evil.example");
    ev.server = SL_STR("`srv`");
    struct sl_buf b = { 0 };
    notify_event_text(&b, &ev);
    assert_bytes_equal(b.p, b.len,
        "sluice: `header:alice` asks to run `x' *y* &lt;!here&gt; https[:]//evil.example` on "
        "`'srv'`; approve at https://sluice.example/approve/Zq3x before 01:03:45Z");
    sl_buf_free(&b);
}

/* A field is cut at NOTIFY_MAX_FIELD bytes, never inside a UTF-8 sequence. */
static void test_long_field_bounded(void **state)
{
    (void)state;
    static char caller[3 * NOTIFY_MAX_FIELD];
    for (size_t i = 0; i + 2 <= sizeof(caller); i += 2)
        memcpy(caller + i, "\xc3\xa9", 2);
    struct notify_event ev = example();
    ev.caller = (struct sl_str){ caller, sizeof(caller) };
    struct sl_buf b = { 0 };
    notify_event_json(&b, &ev);
    assert_true(b.len < 3 * NOTIFY_MAX_FIELD + 512);
    assert_true(sl_utf8_valid(b.p, b.len));
    sl_buf_free(&b);
}

/* err: what the error must say (the shown scheme://host[:port], then why), exactly. */
static const struct {
    const char *url;
    const char *err;
} urls[] = {
    { "http://127.0.0.1:8080/hook", NULL },
    { "https://hooks.example.com/services/T0/B0/xyz", NULL },
    { "http://[::1]:9/x?y=1", NULL },
    { "https://[2001:db8::7]/x", NULL },
    { "http://host", NULL },
    { "ftp://host/x", "ftp://host (path not shown): the scheme is not http:// or https://" },
    { "host:80/x", "(URL not shown): the scheme is not http:// or https://" },
    { "http:///x", "http:// (path not shown): it has no host" },
    { "http://user:pw@host/x",
      "http://host (path not shown): a user name or password (USER@HOST) is not supported" },
    { "http://host/a b",
      "http://host (path not shown): the path or query holds a space, control or non-ASCII byte "
      "(0x20)" },
    { "http://host/a\r\nX: y",
      "http://host (path not shown): the path or query holds a space, control or non-ASCII byte "
      "(0x0d)" },
    { "http://host/hook\n",
      "http://host (path not shown): the path or query holds a space, control or non-ASCII byte "
      "(0x0a, at its end)" },
    { "http://host\n",
      "http://host\\x0a: the host holds a space, control or non-ASCII byte (0x0a, at its end)" },
    { "http://[v7.x]/y",
      "http://[v7.x] (path not shown): the host in brackets is not an IPv6 address" },
    { "http://host:99999/x",
      "http://host:99999 (path not shown): it is not http(s)://HOST[:PORT]/PATH" },
    { "", "(URL not shown): it is empty" },
};

static void test_url_check(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(urls); i++) {
        char err[256] = "";
        int rc = notify_url_check(urls[i].url, err, sizeof(err));
        if ((rc == 0) != (urls[i].err == NULL))
            fail_msg("%s: got %d (%s)", urls[i].url, rc, err);
        if (urls[i].err && strcmp(err, urls[i].err) != 0)
            fail_msg("%s:\n got  %s\n want %s", urls[i].url, err, urls[i].err);
    }
}

/* The error shows scheme://host[:port] only: the path, the query and user:password@ are often
 * the webhook's secret, and the error goes to the log. */
static void test_url_error_hides_secret(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "https://hooks.example.com/services/SECRET\n",
        "https://hooks.example.com/x?token=SECRET ",
        "https://hooks.example.com/SECRET/\x7f",
        "https://me:SECRET@hooks.example.com/x",
        "https://SECRET@hooks.example.com/x",
        "https://user:SECRET/x@hooks.example.com/p", /* an '@' after the authority's end */
        "https://user:SECRET#x@hooks.example.com/p",
        "https://user:SECRET?x@hooks.example.com/p",
        "gopher://hooks.example.com/SECRET",
        "hooks.example.com/SECRET\n",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        char err[256] = "";
        assert_int_equal(notify_url_check(bad[i], err, sizeof(err)), -1);
        if (strstr(err, "SECRET") != NULL)
            fail_msg("%s: the error shows the secret: %s", bad[i], err);
        if (strchr(err, '\n') != NULL || strchr(err, '\r') != NULL)
            fail_msg("%s: the error breaks the log line: %s", bad[i], err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_exact),
        cmocka_unit_test(test_text_exact),
        cmocka_unit_test(test_anonymous_caller),
        cmocka_unit_test(test_hostile_callers),
        cmocka_unit_test(test_names_inert),
        cmocka_unit_test(test_long_field_bounded),
        cmocka_unit_test(test_url_check),
        cmocka_unit_test(test_url_error_hides_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
