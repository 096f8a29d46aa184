/* test_params.c: proxy/params.c. Marks are learned from a tools/list result; the headers written
 * for a call are exactly the marked arguments the body holds; a client's headers are checked
 * against its body; invalid marks give no headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "params.h"

#include "jsonrpc.h"
#include "sl_test.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char TOOLS[] =
    "[{\"name\":\"deploy\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
    "\"replicas\":{\"type\":\"integer\",\"x-mcp-header\":\"Replicas\"},"
    "\"dry\":{\"type\":\"boolean\",\"x-mcp-header\":\"Dry-Run\"},"
    "\"target\":{\"type\":\"object\",\"properties\":{"
    "\"zone\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"}}},"
    "\"note\":{\"type\":\"string\"}}}},"
    /* invalid: two names equal ignoring case */
    "{\"name\":\"dup\",\"inputSchema\":{\"properties\":{"
    "\"a\":{\"type\":\"string\",\"x-mcp-header\":\"X\"},"
    "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"x\"}}}},"
    /* invalid: not a token; and a number type */
    "{\"name\":\"space\",\"inputSchema\":{\"properties\":{"
    "\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A B\"}}}},"
    "{\"name\":\"float\",\"inputSchema\":{\"properties\":{"
    "\"a\":{\"type\":\"number\",\"x-mcp-header\":\"A\"}}}},"
    "{\"name\":\"plain\",\"inputSchema\":{\"properties\":{\"a\":{\"type\":\"string\"}}}}]";

struct fixture {
    struct params *ps;
    struct sl_arena *arena;
};

static struct json *parse(struct sl_arena *a, const char *text)
{
    struct json *v = NULL;
    char err[128];
    if (json_parse(text, strlen(text), a, &v, err, sizeof(err)) != 0)
        fail_msg("bad test JSON: %s: %s", err, text);
    return v;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->ps = params_new();
    f->arena = sl_arena_new();
    params_learn(f->ps, parse(f->arena, TOOLS));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    params_free(f->ps);
    sl_arena_free(f->arena);
    free(f);
    return 0;
}

static void check_written(struct fixture *f, const char *tool, const char *args, const char *want)
{
    struct sl_buf out = { 0 };
    params_write(f->ps, sl_str_c(tool), parse(f->arena, args), &out);
    assert_bytes_equal(out.p ? out.p : "", out.len, want);
    sl_buf_free(&out);
}

static void test_written_headers(void **state)
{
    struct fixture *f = *state;
    check_written(f, "deploy",
                  "{\"region\":\"eu-west-1\",\"replicas\":42.0,\"dry\":false,"
                  "\"target\":{\"zone\":\"b\"},\"note\":\"n\"}",
                  "Mcp-Param-Region: eu-west-1\r\nMcp-Param-Replicas: 42\r\n"
                  "Mcp-Param-Dry-Run: false\r\nMcp-Param-Zone: b\r\n");
    /* null and absent: no header; a fraction or an object cannot be one */
    check_written(f, "deploy", "{\"region\":null,\"replicas\":1.5,\"dry\":{}}", "");
    /* not header-safe: the base64 sentinel (non-ASCII, edge spaces, sentinel look-alikes) */
    check_written(f, "deploy", "{\"region\":\"Zürich\"}", "Mcp-Param-Region: =?base64?WsO8cmljaA==?=\r\n");
    check_written(f, "deploy", "{\"region\":\" eu\"}", "Mcp-Param-Region: =?base64?IGV1?=\r\n");
    check_written(f, "deploy", "{\"region\":\"=?base64?x\"}",
                  "Mcp-Param-Region: =?base64?PT9iYXNlNjQ/eA==?=\r\n");
    check_written(f, "deploy", "{\"region\":\"a\\r\\nX-Evil: 1\"}",
                  "Mcp-Param-Region: =?base64?YQ0KWC1FdmlsOiAx?=\r\n"); /* no header injection */
    check_written(f, "deploy", "{\"replicas\":9007199254740992}", ""); /* above 2^53-1 */
    check_written(f, "deploy", "{\"replicas\":-9007199254740991}",
                  "Mcp-Param-Replicas: -9007199254740991\r\n");
    /* invalid marks and unknown tools: nothing */
    check_written(f, "dup", "{\"a\":\"1\",\"b\":\"2\"}", "");
    check_written(f, "space", "{\"a\":\"1\"}", "");
    check_written(f, "float", "{\"a\":1}", "");
    check_written(f, "plain", "{\"a\":\"1\"}", "");
    check_written(f, "nosuch", "{\"a\":\"1\"}", "");
}

static void test_relearning_replaces(void **state)
{
    struct fixture *f = *state;
    params_learn(f->ps, parse(f->arena, "[{\"name\":\"deploy\",\"inputSchema\":{\"properties\":{"
                                        "\"region\":{\"type\":\"string\"}}}}]"));
    check_written(f, "deploy", "{\"region\":\"eu\"}", ""); /* the mark was removed */
    params_learn(f->ps, parse(f->arena, "[{\"name\":\"plain\",\"inputSchema\":{\"properties\":{"
                                        "\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}]"));
    check_written(f, "plain", "{\"a\":\"1\"}", "Mcp-Param-A: 1\r\n");
}

/* Headers as a client sent them: "Name: value" pairs, names case-insensitive. */
struct headers {
    const char *const *kv;
};

static int get(const char *name, struct sl_str *value, void *arg)
{
    const struct headers *h = arg;
    int found = 0;
    for (size_t i = 0; h->kv[i]; i += 2) {
        if (strcasecmp(h->kv[i], name) == 0) {
            if (found)
                return -1;
            found = 1;
            *value = sl_str_c(h->kv[i + 1]);
        }
    }
    return found;
}

static const char *check(struct fixture *f, const char *args, const char *const *kv)
{
    struct headers h = { kv };
    return params_check(f->ps, SL_STR("deploy"), parse(f->arena, args), get, &h);
}

static void test_checked_headers(void **state)
{
    struct fixture *f = *state;
    const char *args = "{\"region\":\"Zürich\",\"replicas\":42,\"dry\":true}";
    assert_null(check(f, args, (const char *const[]){ "mcp-param-region", "=?base64?WsO8cmljaA==?=",
                                                      "MCP-PARAM-REPLICAS", "42.0",
                                                      "mcp-param-dry-run", "true", NULL }));
    /* each way to disagree */
    const char *const *const bad[] = {
        (const char *const[]){ "mcp-param-replicas", "42", "mcp-param-dry-run", "true", NULL },
        (const char *const[]){ "mcp-param-region", "Zurich", "mcp-param-replicas", "42",
                               "mcp-param-dry-run", "true", NULL },
        (const char *const[]){ "mcp-param-region", "=?base64?WsO8cmljaA?=", /* unpadded */
                               "mcp-param-replicas", "42", "mcp-param-dry-run", "true", NULL },
        (const char *const[]){ "mcp-param-region", "=?base64?WsO8cmljaA==?=",
                               "mcp-param-replicas", "43", "mcp-param-dry-run", "true", NULL },
        (const char *const[]){ "mcp-param-region", "=?base64?WsO8cmljaA==?=",
                               "mcp-param-replicas", "42", "mcp-param-dry-run", "True", NULL },
        (const char *const[]){ "mcp-param-region", "=?base64?WsO8cmljaA==?=",
                               "mcp-param-replicas", "42x", "mcp-param-dry-run", "true", NULL },
        (const char *const[]){ "mcp-param-region", "=?base64?WsO8cmljaA==?=",
                               "mcp-param-replicas", "42", "mcp-param-replicas", "42",
                               "mcp-param-dry-run", "true", NULL },
        (const char *const[]){ "mcp-param-region", "=?base64?WsO8cmljaA==?=",
                               "mcp-param-replicas", "42", "mcp-param-dry-run", "true",
                               "mcp-param-zone", "a", NULL }, /* no zone in the body */
    };
    static const char *const why[] = { "missing", "does not match", "does not match",
                                       "does not match", "does not match", "does not match",
                                       "repeated", "no argument" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *got = check(f, args, bad[i]);
        if (got == NULL || strstr(got, why[i]) == NULL)
            fail_msg("disagreeing headers %zu: got %s, want \"%s\"", i, got ? got : "(accepted)",
                     why[i]);
    }
    /* a tool without marks ignores stray headers */
    struct headers h = { (const char *const[]){ "mcp-param-a", "zzz", NULL } };
    assert_null(params_check(f->ps, SL_STR("plain"), parse(f->arena, "{\"a\":\"1\"}"), get, &h));
}

/* A mirrored header is the body's text as it is, or its canonical base64 sentinel; nothing else
 * (another case, a sentinel that is not canonical or not UTF-8, a near sentinel taken as plain
 * text that happens to differ) stands for it. */
/* Arguments of 10,000 keys (the reader's limit), the marked ones last: the headers written and
 * checked are those of the marked arguments, found in one pass each. */
static void test_wide_arguments(void **state)
{
    struct fixture *f = *state;
    struct sl_buf text = { 0 };
    sl_buf_putc(&text, '{');
    for (int i = 0; i < 9996; i++)
        sl_buf_printf(&text, "\"pad-%05d\":%d,", i, i);
    sl_buf_puts(&text, "\"region\":\"eu\",\"replicas\":3,\"dry\":false,\"target\":{\"zone\":\"z1\"}}");
    struct json *args = parse(f->arena, text.p);
    assert_int_equal(args->u.obj.n, 10000);
    struct sl_buf out = { 0 };
    params_write(f->ps, SL_STR("deploy"), args, &out);
    assert_bytes_equal(out.p, out.len, "Mcp-Param-Region: eu\r\nMcp-Param-Replicas: 3\r\n"
                                        "Mcp-Param-Dry-Run: false\r\nMcp-Param-Zone: z1\r\n");
    struct headers h = { (const char *const[]){ "mcp-param-region", "eu", "mcp-param-replicas",
                                                "3", "mcp-param-dry-run", "false",
                                                "mcp-param-zone", "z1", NULL } };
    assert_null(params_check(f->ps, SL_STR("deploy"), args, get, &h));
    h.kv = (const char *const[]){ "mcp-param-region", "eu", "mcp-param-replicas", "4",
                                  "mcp-param-dry-run", "false", "mcp-param-zone", "z1", NULL };
    assert_non_null(params_check(f->ps, SL_STR("deploy"), args, get, &h));
    sl_buf_free(&out);
    sl_buf_free(&text);
}

static void test_header_equals(void **state)
{
    (void)state;
    static const struct { const char *v, *want; bool same; } cases[] = {
        { "write_file", "write_file", true },
        { "write_file", "write_filE", false },
        { "write_file", "write_file ", false },
        { "", "", true },
        { "=?base64?d3JpdGVfZmlsZQ==?=", "write_file", true },   /* base64 of write_file */
        { "=?base64?d3JpdGVfZmlsZQ==?=", "=?base64?d3JpdGVfZmlsZQ==?=", false },
        { "=?base64?d3JpdGVfZmlsZQ?=", "write_file", false },    /* padding missing */
        { "=?base64?d3JpdGVfZmlsZR==?=", "write_file", false },  /* not canonical */
        { "=?base64?/w==?=", "\xff", false },                    /* not UTF-8 */
        { "=?base64?w6k=?=", "\xc3\xa9", true },                 /* e-acute */
        { "=?base64?d3JpdGVfZmlsZQ==", "=?base64?d3JpdGVfZmlsZQ==", true }, /* no "?=": plain */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (params_header_equals(sl_str_c(cases[i].v), sl_str_c(cases[i].want)) != cases[i].same)
            fail_msg("header \"%s\" stands for \"%s\": want %d", cases[i].v, cases[i].want,
                     cases[i].same);
    /* A decoded value longer than the stack buffer of the compare. */
    char text[700], enc[1000];
    memset(text, 'a', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    struct sl_buf b = { 0 };
    params_header_value(&b, SL_STR("\xc3\xa9"));
    assert_true(params_header_equals(sl_buf_str(&b), SL_STR("\xc3\xa9")));
    sl_buf_reset(&b);
    char with_e[702];
    snprintf(with_e, sizeof(with_e), "\xc3\xa9%s", text);
    params_header_value(&b, sl_str_c(with_e));
    assert_true(b.len > 256 && b.len < sizeof(enc));
    assert_true(params_header_equals(sl_buf_str(&b), sl_str_c(with_e)));
    with_e[500] = 'b';
    assert_false(params_header_equals(sl_buf_str(&b), sl_str_c(with_e)));
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_written_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relearning_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checked_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wide_arguments, setup, teardown),
        cmocka_unit_test(test_header_equals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
