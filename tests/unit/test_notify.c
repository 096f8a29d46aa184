/* test_notify.c: the --notify-url event as bytes (its JSON and its chat text) and the URL check.
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

static const struct {
    const char *url;
    bool ok;
} urls[] = {
    { "http://127.0.0.1:8080/hook", true },
    { "https://hooks.example.com/services/T0/B0/xyz", true },
    { "http://[::1]:9/x?y=1", true },
    { "https://[2001:db8::7]/x", true },
    { "http://host", true },
    { "ftp://host/x", false },
    { "host:80/x", false },
    { "http:///x", false },
    { "http://user:pw@host/x", false },
    { "http://host/a b", false },
    { "http://host/a\r\nX: y", false },
    { "http://[v7.x]/y", false },
    { "", false },
};

static void test_url_check(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(urls); i++) {
        char err[256] = "";
        int rc = notify_url_check(urls[i].url, err, sizeof(err));
        if ((rc == 0) != urls[i].ok)
            fail_msg("%s: got %d (%s)", urls[i].url, rc, err);
        if (!urls[i].ok)
            assert_non_null(strstr(err, "--notify-url"));
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
