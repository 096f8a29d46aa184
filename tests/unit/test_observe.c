/* test_observe.c: the observe call's arguments, the digest of what it read, and the summary a
 * person reads (bounded, neutralized, exact about what changes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "confirm.h"
#include "jsonrpc.h"
#include "observe.h"

static struct json *parse(struct sl_arena *a, const char *text)
{
    struct json *v;
    char err[100];
    if (json_parse(text, strlen(text), a, &v, err, sizeof(err)) != 0)
        fail_msg("bad JSON %s: %s", text, err);
    return v;
}

static void test_args(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    const char *to[] = { "path" }, *from[] = { "source" };
    struct policy_observe o = { "get_file_info", 1, to, from };
    const char *why = NULL;
    struct json *args = observe_args(a, &o, parse(a, "{\"source\":\"/a\",\"x\":1}"), &why);
    struct sl_buf b = { 0 };
    json_write(&b, args);
    assert_string_equal(b.p, "{\"path\":\"/a\"}");
    assert_null(observe_args(a, &o, parse(a, "{\"destination\":\"/b\"}"), &why));
    assert_non_null(why);
    sl_buf_free(&b);
    sl_arena_free(a);
}

static void test_digest(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    uint8_t d1[32], d2[32], d3[32], d4[32];
    assert_int_equal(observe_digest(parse(a, "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],"
                                             "\"_meta\":{\"t\":1}}"), d1), 0);
    /* _meta and key order do not count */
    assert_int_equal(observe_digest(parse(a, "{\"_meta\":{\"t\":2},\"content\":[{\"text\":\"x\","
                                             "\"type\":\"text\"}]}"), d2), 0);
    assert_memory_equal(d1, d2, 32);
    /* the content does */
    assert_int_equal(observe_digest(parse(a, "{\"content\":[{\"type\":\"text\",\"text\":\"y\"}]}"),
                                    d3), 0);
    assert_memory_not_equal(d1, d3, 32);
    /* and whether it was an error */
    assert_int_equal(observe_digest(parse(a, "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],"
                                             "\"isError\":true}"), d4), 0);
    assert_memory_not_equal(d1, d4, 32);
    /* a tool error is a reading only when it says the target is missing */
    assert_true(observe_ok(parse(a, "{\"isError\":true,\"content\":[{\"type\":\"text\","
                                    "\"text\":\"ENOENT: no such file or directory\"}]}")));
    assert_false(observe_ok(parse(a, "{\"isError\":true,\"content\":[{\"type\":\"text\","
                                     "\"text\":\"EACCES: permission denied\"}]}")));
    assert_false(observe_ok(parse(a, "{\"isError\":true,\"content\":[]}")));
    assert_true(observe_ok(parse(a, "{\"isError\":false,\"content\":[]}")));
    assert_false(observe_ok(parse(a, "{\"isError\":true}")));
    assert_false(observe_ok(parse(a, "{\"resultType\":\"input_required\",\"content\":[]}")));
    assert_false(observe_ok(NULL));
    assert_false(observe_ok(parse(a, "[1]")));
    sl_arena_free(a);
}

static void test_summary_diff(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 };
    observe_summary(&b, "read_text_file",
                    parse(a, "{\"content\":[{\"type\":\"text\",\"text\":\"a\\nb\\nc\\n\"}]}"),
                    parse(a, "{\"content\":\"a\\nB\\u202e\\nc\\n\"}"));
    assert_string_equal(b.p, "What read_text_file shows now: The file now has 3 lines; this call "
                             "removes 1 and adds 1, from line 2:\n- b\n+ B\\u202e");
    sl_buf_reset(&b);
    observe_summary(&b, "read_text_file",
                    parse(a, "{\"content\":[{\"type\":\"text\",\"text\":\"same\"}]}"),
                    parse(a, "{\"content\":\"same\"}"));
    assert_non_null(strstr(b.p, "(no change)"));
    sl_buf_free(&b);
    sl_arena_free(a);
}

/* The server's text cannot write sluice's notation inside the block: its own backslashes show
 * as "\\" (so a literal "\u202e" or "\[1100 × U+0020]" reads as the text it is) and its own
 * ellipses as "\u2026" (so "…[summary truncated]" is not a mark of sluice's); a real U+202E is
 * still sluice's "\u202e". The call's content, in a diff, the same. */
static void test_summary_not_forged(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 };
    observe_summary(&b, "stat",
                    parse(a, "{\"content\":[{\"type\":\"text\",\"text\":"
                             "\"x\\\\u202ey\\n\\\\[1100 \u00d7 U+0020]\\n\u2026[summary truncated]"
                             "\\nreal\u202e\"}]}"),
                    parse(a, "{}"));
    assert_string_equal(b.p, "What stat shows now:\n  x\\\\u202ey\n  \\\\[1100 \u00d7 U+0020]\n"
                             "  \\u2026[summary truncated]\n  real\\u202e");
    sl_buf_reset(&b);
    observe_summary(&b, "read_text_file",
                    parse(a, "{\"content\":[{\"type\":\"text\",\"text\":\"a\\\\u0041\\nb\\n\"}]}"),
                    parse(a, "{\"content\":\"a\\\\u0041\\nB\u2026[+3 bytes]\\n\"}"));
    assert_string_equal(b.p, "What read_text_file shows now: The file now has 2 lines; this call "
                             "removes 1 and adds 1, from line 2:\n- b\n+ B\\u2026[+3 bytes]");
    sl_buf_free(&b);
    sl_arena_free(a);
}

/* A result with no text block is shown as its JSON, and its ellipses as "\u2026" there too: a
 * server's "…[summary truncated]" in any string of it is no mark of sluice's. */
static void test_summary_json_not_forged(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 };
    observe_summary(&b, "stat",
                    parse(a, "{\"content\":[{\"type\":\"image\",\"data\":\"x\u2026[summary "
                             "truncated]\",\"\u2026[+9 bytes]\":\"a\\\\u202e\"}]}"),
                    parse(a, "{}"));
    assert_string_equal(b.p, "What stat shows now: {\"content\":[{\"type\":\"image\",\"data\":"
                             "\"x\\u2026[summary truncated]\",\"\\u2026[+9 bytes]\":"
                             "\"a\\\\u202e\"}]}");
    sl_buf_free(&b);
    sl_arena_free(a);
}

/* The summary's 1,200-byte cut falls between whole units of the text as shown: an escape that
 * does not fit before it is left out whole, never shown as its first bytes ("\u2", or the "\"
 * of a server's "\\", which would read as sluice's own escape of what follows). For each escape,
 * the eighth line is padded so that the escape ends at, or one to a few bytes past, the cut. */
static void test_summary_cut_whole_units(void **state)
{
    (void)state;
    static const struct {
        const char *raw;   /* in the server's text (JSON) */
        const char *shown; /* in the summary */
    } escs[] = {
        { "\u2026", "\\u2026" },
        { "\\\\", "\\\\" },
        { "\u202e", "\\u202e" },
        { "\U000E0041", "\\u{e0041}" },
    };
    /* "What stat shows now:" and seven lines of "\n  " and 160 bytes: the eighth line's text
     * starts at byte 1164, so 36 of its bytes fit before the cut at OBSERVE_SUMMARY_MAX. */
    const size_t room = OBSERVE_SUMMARY_MAX - 20 - 8 * 3 - 7 * 160;
    struct sl_arena *a = sl_arena_new();
    struct sl_buf r = { 0 }, want = { 0 }, b = { 0 };
    for (size_t e = 0; e < SL_ARRAY_LEN(escs); e++) {
        size_t elen = strlen(escs[e].shown);
        for (size_t pad = room - elen; pad <= room; pad++) {
            sl_buf_reset(&r);
            sl_buf_reset(&want);
            sl_buf_puts(&r, "{\"content\":[{\"type\":\"text\",\"text\":\"");
            sl_buf_puts(&want, "What stat shows now:");
            for (int i = 0; i < 7; i++) {
                for (int j = 0; j < 160; j++)
                    sl_buf_putc(&r, (char)('x' + j % 2));
                sl_buf_puts(&r, "\\n");
            }
            for (int i = 0; i < 7; i++) {
                sl_buf_puts(&want, "\n  ");
                for (int j = 0; j < 160; j++)
                    sl_buf_putc(&want, (char)('x' + j % 2));
            }
            sl_buf_puts(&want, "\n  ");
            for (size_t j = 0; j < pad; j++) {
                sl_buf_putc(&r, 'a');
                sl_buf_putc(&want, 'a');
            }
            sl_buf_puts(&r, escs[e].raw);
            if (pad + elen <= room) {
                sl_buf_puts(&want, escs[e].shown);
                for (size_t j = pad + elen; j < room; j++)
                    sl_buf_putc(&want, 'b');
            }
            for (int j = 0; j < 100; j++)
                sl_buf_putc(&r, 'b');
            sl_buf_puts(&r, "\"}]}");
            sl_buf_puts(&want, "\xE2\x80\xA6[summary truncated]");
            sl_buf_putc(&want, '\0');
            sl_buf_reset(&b);
            observe_summary(&b, "stat", parse(a, r.p), parse(a, "{}"));
            if (b.len != want.len - 1 || memcmp(b.p, want.p, b.len) != 0)
                fail_msg("escape %zu, pad %zu: ends with \"%s\", want \"%s\"", e, pad,
                         b.p + (b.len > 60 ? b.len - 60 : 0),
                         want.p + (want.len > 61 ? want.len - 61 : 0));
        }
    }
    sl_buf_free(&r);
    sl_buf_free(&want);
    sl_buf_free(&b);
    sl_arena_free(a);
}

static void test_summary_bounded(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    struct sl_buf big = { 0 }, b = { 0 };
    sl_buf_puts(&big, "{\"content\":[{\"type\":\"text\",\"text\":\"");
    for (int i = 0; i < 5000; i++)
        sl_buf_puts(&big, "\\u001b[31mline\\n");
    sl_buf_puts(&big, "\"}]}");
    observe_summary(&b, "stat", parse(a, big.p), parse(a, "{}"));
    assert_true(b.len <= OBSERVE_SUMMARY_MAX + 40);
    assert_null(memchr(b.p, 0x1b, b.len));
    assert_true(sl_utf8_valid(b.p, b.len));
    assert_non_null(strstr(b.p, "more lines]"));
    sl_buf_reset(&b);
    observe_summary(&b, "read_text_file",
                    parse(a, "{\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"EACCES\"}]}"),
                    parse(a, "{\"content\":\"x\\ny\\n\"}"));
    assert_non_null(strstr(b.p, "answered with an error"));
    assert_non_null(strstr(b.p, "This call writes 2 lines."));
    sl_buf_free(&b);
    sl_buf_free(&big);
    sl_arena_free(a);
}

/* A target the server says does not exist is a new file, in those words, not the server's raw
 * ENOENT; any other error is shown as the server wrote it. */
static void test_summary_new_file(void **state)
{
    (void)state;
    static const char *const missing[] = {
        "Error: ENOENT: no such file or directory, open '/tmp/x/new.txt'",
        "no such file: \"/data/new.txt\"",
    };
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 }, r = { 0 };
    for (size_t i = 0; i < 2; i++) {
        sl_buf_reset(&r);
        sl_buf_puts(&r, "{\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"");
        for (const char *p = missing[i]; *p; p++) {
            if (*p == '"')
                sl_buf_putc(&r, '\\');
            sl_buf_putc(&r, *p);
        }
        sl_buf_puts(&r, "\"}]}");
        sl_buf_reset(&b);
        observe_summary(&b, "read_text_file", parse(a, r.p), parse(a, "{\"content\":\"one\"}"));
        assert_string_equal(b.p, "What read_text_file shows now: no such file (new file).\n"
                                 "This call writes 1 line.");
    }
    sl_buf_free(&r);
    sl_buf_free(&b);
    sl_arena_free(a);
}

/* Counts of one are singular: "1 line", "1 more line", "[+1 byte]". */
static void test_summary_singular(void **state)
{
    (void)state;
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 };
    observe_summary(&b, "read_text_file",
                    parse(a, "{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}"),
                    parse(a, "{\"content\":\"b\"}"));
    assert_string_equal(b.p, "What read_text_file shows now: The file now has 1 line; this call "
                             "removes 1 and adds 1, from line 1:\n- a\n+ b");
    sl_buf_reset(&b);
    confirm_count(&b, 0, "line", "lines");
    sl_buf_putc(&b, ',');
    confirm_count(&b, 1, "line", "lines");
    sl_buf_putc(&b, ',');
    confirm_count(&b, 2, "line", "lines");
    assert_string_equal(b.p, "0 lines,1 line,2 lines");
    sl_buf_reset(&b);
    confirm_neutralize(&b, SL_STR("abcd"), 3);
    assert_string_equal(b.p, "abc\xE2\x80\xA6[+1 byte]");
    sl_buf_free(&b);
    sl_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_summary_diff),
        cmocka_unit_test(test_summary_not_forged),
        cmocka_unit_test(test_summary_json_not_forged),
        cmocka_unit_test(test_summary_cut_whole_units),
        cmocka_unit_test(test_summary_bounded),
        cmocka_unit_test(test_summary_new_file),
        cmocka_unit_test(test_summary_singular),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
