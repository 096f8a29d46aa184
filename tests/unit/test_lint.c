/* test_lint.c: which server tools are reported, from their annotations and the policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "jsonrpc.h"
#include "lint.h"

struct seen {
    char text[2048];
};

static void collect(void *arg, bool missing, const char *message)
{
    struct seen *s = arg;
    strncat(s->text, missing ? "E:" : "W:", sizeof(s->text) - strlen(s->text) - 1);
    strncat(s->text, message, sizeof(s->text) - strlen(s->text) - 1);
    strncat(s->text, "\n", sizeof(s->text) - strlen(s->text) - 1);
}

static void test_findings(void **state)
{
    (void)state;
    static const char policy_text[] = "version: 1\n"
                                      "tools:\n"
                                      "  write_file: {action: confirm}\n"
                                      "  gone_tool: {action: deny}\n";
    static const char tools_text[] =
        "[{\"name\":\"write_file\"},"
        "{\"name\":\"plain\"},"                                               /* defaults: risky */
        "{\"name\":\"reader\",\"annotations\":{\"readOnlyHint\":true}},"
        "{\"name\":\"safe\",\"annotations\":{\"destructiveHint\":false}},"
        "{\"name\":\"says_true\",\"annotations\":{\"destructiveHint\":true}},"
        "{\"name\":\"truthy\",\"annotations\":{\"readOnlyHint\":\"yes\"}},"   /* not JSON true */
        "{\"name\":\"evil\\u202e\"}]";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t", policy_text, sizeof(policy_text) - 1, &p, &err), 0);
    struct sl_arena *a = sl_arena_new();
    struct json *tools;
    char perr[100];
    assert_int_equal(json_parse(tools_text, sizeof(tools_text) - 1, a, &tools, perr, sizeof(perr)),
                     0);
    struct seen s = { "" };
    struct lint_counts n = lint_check(p, tools, true, collect, &s);
    assert_int_equal(n.missing, 1);
    assert_int_equal(n.risky, 4);
    assert_non_null(strstr(s.text, "E:the policy names tool \"gone_tool\""));
    assert_non_null(strstr(s.text, "W:server tool \"plain\""));
    assert_non_null(strstr(s.text, "W:server tool \"says_true\""));
    assert_non_null(strstr(s.text, "W:server tool \"truthy\""));
    assert_non_null(strstr(s.text, "W:server tool \"evil\\u202e\""));  /* neutralized */
    assert_null(strstr(s.text, "\"reader\""));
    assert_null(strstr(s.text, "\"safe\""));
    assert_null(strstr(s.text, "W:server tool \"write_file\""));
    /* one page alone: no "missing" findings */
    struct seen s2 = { "" };
    n = lint_check(p, tools, false, collect, &s2);
    assert_int_equal(n.missing, 0);
    assert_int_equal(n.risky, 4);
    assert_null(strstr(s2.text, "E:"));
    sl_arena_free(a);
    policy_unref(p);
}

struct found {
    char text[4096];
    unsigned lines[8], cols[8];
    size_t n;
};

static void collect_where(void *arg, const struct lint_finding *f)
{
    struct found *s = arg;
    if (s->n < 8) {
        s->lines[s->n] = f->where.line;
        s->cols[s->n] = f->where.col;
    }
    s->n++;
    strncat(s->text, f->message, sizeof(s->text) - strlen(s->text) - 1);
    strncat(s->text, "\n", sizeof(s->text) - strlen(s->text) - 1);
}

static struct json *parse_tools(struct sl_arena *a, const char *text)
{
    struct json *tools;
    char perr[100];
    assert_int_equal(json_parse(text, strlen(text), a, &tools, perr, sizeof(perr)), 0);
    return tools;
}

/* Each finding points at the tool's name in the file, and names a near server tool. */
static void test_where_and_near_names(void **state)
{
    (void)state;
    static const char policy_text[] = "version: 1\n"
                                      "defaults:\n"
                                      "  action: allow\n"
                                      "tools:\n"
                                      "  wirte_file: {action: confirm}\n"  /* distance 2 */
                                      "  READ_FILE: {action: allow}\n"     /* case */
                                      "  delete_fil: {action: deny}\n"     /* distance 1 */
                                      "  unrelated: {action: deny}\n";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("pol.yaml", policy_text, sizeof(policy_text) - 1, &p, &err),
                     0);
    struct sl_arena *a = sl_arena_new();
    struct json *tools = parse_tools(a, "[{\"name\":\"write_file\"},{\"name\":\"read_file\","
                                        "\"annotations\":{\"readOnlyHint\":true}},"
                                        "{\"name\":\"delete_file\"},{\"name\":\"delete_all\"}]");
    struct found s = { "", { 0 }, { 0 }, 0 };
    struct lint_counts n = lint_run(p, tools, true, false, collect_where, &s);
    assert_int_equal(n.missing, 4);
    assert_int_equal(n.risky, 3);
    assert_non_null(strstr(s.text, "tool \"wirte_file\", which the server does not list; did you "
                                   "mean \"write_file\"?\n"));
    assert_non_null(strstr(s.text, "\"READ_FILE\", which the server does not list; did you mean "
                                   "\"read_file\"?\n"));
    /* delete_file (1) is nearer than delete_all (3, not near at all) */
    assert_non_null(strstr(s.text, "did you mean \"delete_file\"?\n"));
    assert_non_null(strstr(s.text, "\"unrelated\", which the server does not list\n"));
    assert_int_equal(s.lines[0], 5);
    assert_int_equal(s.cols[0], 3);
    assert_int_equal(s.lines[1], 6);
    assert_int_equal(s.lines[3], 8);
    /* risky defaults point at defaults.action's value, and back at the misspelt name */
    assert_int_equal(s.lines[4], 3);
    assert_int_equal(s.cols[4], 11);
    assert_non_null(strstr(s.text, "server tool \"write_file\" may change or destroy data"));
    assert_non_null(strstr(s.text, "(did you mean it by \"wirte_file\" at line 5?)"));
    assert_non_null(strstr(s.text, "(did you mean it by \"delete_fil\" at line 7?)"));
    assert_null(strstr(s.text, "\"delete_all\" may change or destroy data; name it under "
                               "tools: (did"));

    /* lint_check appends the place to the message */
    struct seen plain = { "" };
    lint_check(p, tools, true, collect, &plain);
    assert_non_null(strstr(plain.text, "did you mean \"write_file\"? (at pol.yaml:5:3)\n"));
    sl_arena_free(a);
    policy_unref(p);
}

/* strict: any tool not annotated readOnlyHint: true that falls to allow by default; without
 * defaults.action in the file the place is the file alone. */
/* A pinned tool whose listed definition is another: a finding at the tool's name, counted
 * with the risky ones; the matching pin and an unpinned tool are not. */
static void test_pin_mismatch(void **state)
{
    (void)state;
    /* sha256 of {"name":"echo"} (test_pin.c) */
    static const char policy_text[] =
        "version: 1\ndefaults: {action: confirm}\ntools:\n"
        "  echo:\n    action: allow\n"
        "    pin: sha256:f7817751a90d6baf078dd0e2d98b278faa025d83ccee00eb9b60100ad65bdcb9\n"
        "  other:\n    action: allow\n"
        "    pin: sha256:f7817751a90d6baf078dd0e2d98b278faa025d83ccee00eb9b60100ad65bdcb9\n"
        "  free: {action: allow}\n";
    static const char tools_text[] =
        "[{\"name\":\"echo\"},{\"name\":\"other\",\"description\":\"x\"},{\"name\":\"free\","
        "\"annotations\":{\"readOnlyHint\":true}}]";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t", policy_text, sizeof(policy_text) - 1, &p, &err), 0);
    struct sl_arena *a = sl_arena_new();
    struct json *tools;
    char perr[100];
    assert_int_equal(json_parse(tools_text, sizeof(tools_text) - 1, a, &tools, perr, sizeof(perr)),
                     0);
    struct seen s = { "" };
    struct lint_counts n = lint_check(p, tools, true, collect, &s);
    assert_int_equal(n.missing, 0);
    assert_int_equal(n.risky, 1);
    assert_non_null(strstr(s.text, "W:server tool \"other\" does not match its pin"));
    assert_non_null(strstr(s.text, "(at t:7:3)"));
    assert_null(strstr(s.text, "\"echo\""));
    sl_arena_free(a);
    policy_unref(p);
}

static void test_strict(void **state)
{
    (void)state;
    static const char policy_text[] = "version: 1\ndefaults:\n  strict: true\n";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("s.yaml", policy_text, sizeof(policy_text) - 1, &p, &err),
                     0);
    assert_true(policy_strict(p));
    struct sl_arena *a = sl_arena_new();
    struct json *tools = parse_tools(
        a, "[{\"name\":\"ro\",\"annotations\":{\"readOnlyHint\":true}},"
           "{\"name\":\"notdestr\",\"annotations\":{\"destructiveHint\":false}},"
           "{\"name\":\"plain\"}]");
    struct found s = { "", { 0 }, { 0 }, 0 };
    struct lint_counts n = lint_run(p, tools, true, true, collect_where, &s);
    assert_int_equal(n.risky, 2);
    assert_non_null(strstr(s.text, "server tool \"notdestr\" is not annotated readOnlyHint: true"));
    assert_non_null(strstr(s.text, "(defaults.action is allow when left out)"));
    assert_null(strstr(s.text, "\"ro\""));
    assert_int_equal(s.lines[0], 0);
    struct found s2 = { "", { 0 }, { 0 }, 0 };
    n = lint_run(p, tools, true, false, collect_where, &s2);
    assert_int_equal(n.risky, 1); /* without strict, destructiveHint: false clears it */
    sl_arena_free(a);
    policy_unref(p);
}

/* An argument rule on a name the tool's schema does not list checks nothing: an error at the
 * tool's name, with the nearest property; a schema without properties, or one page alone, says
 * nothing; strict's verdict fails and counts it. */
static void test_unknown_args(void **state)
{
    (void)state;
    static const char policy_text[] = "version: 1\n"
                                      "tools:\n"
                                      "  write_file:\n"
                                      "    action: allow\n"
                                      "    args:\n"
                                      "      filepath: {deny_glob: [\"/etc/**\"]}\n"
                                      "      content: {max_length: 10}\n"
                                      "  loose:\n"
                                      "    action: allow\n"
                                      "    args:\n"
                                      "      anything: {max_length: 10}\n";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("a.yaml", policy_text, sizeof(policy_text) - 1, &p, &err),
                     0);
    struct sl_arena *a = sl_arena_new();
    struct json *tools = parse_tools(
        a, "[{\"name\":\"write_file\",\"annotations\":{\"readOnlyHint\":true},"
           "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{},\"content\":{}}}},"
           "{\"name\":\"loose\",\"annotations\":{\"readOnlyHint\":true},"
           "\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":true}}]");
    struct found s = { "", { 0 }, { 0 }, 0 };
    struct lint_counts n = lint_run(p, tools, true, false, collect_where, &s);
    assert_int_equal(n.unknown_args, 1);
    assert_int_equal(n.missing + n.risky, 0);
    assert_int_equal(s.n, 1);
    assert_non_null(strstr(s.text, "the rule tools.write_file.args.filepath names an argument the "
                                   "server's input schema for \"write_file\" does not list, so "
                                   "it checks nothing"));
    assert_non_null(strstr(s.text, "did you mean \"path\"?"));
    assert_int_equal(s.lines[0], 3);
    assert_int_equal(s.cols[0], 3);
    struct found page = { "", { 0 }, { 0 }, 0 };
    n = lint_run(p, tools, false, false, collect_where, &page);
    assert_int_equal(n.unknown_args, 0);
    struct lint_verdict v = lint_strict(p, tools, NULL, NULL);
    assert_false(v.pass);
    assert_non_null(strstr(v.summary, ", 1 argument rule on names the schema does not list"));
    assert_non_null(strstr(v.first, "a.yaml:3:3: the rule tools.write_file.args.filepath"));
    sl_arena_free(a);
    policy_unref(p);
}

/* What strict says and what a client is told: short places (no directories), the first finding,
 * the count, and at most LINT_NOTICE_MAX lines. */
static void test_verdict_and_notice(void **state)
{
    (void)state;
    struct sl_buf text = { 0 };
    sl_buf_puts(&text, "version: 1\ndefaults:\n  action: allow\ntools:\n"
                       "  wirte_file: {action: confirm}\n");
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("/etc/sluice/pol.yaml", text.p, text.len, &p, &err), 0);
    struct sl_arena *a = sl_arena_new();
    struct json *tools = parse_tools(a, "[{\"name\":\"write_file\"},{\"name\":\"ro\","
                                        "\"annotations\":{\"readOnlyHint\":true}}]");
    struct lint_verdict v = lint_strict(p, tools, NULL, NULL);
    assert_false(v.pass);
    assert_string_equal(v.summary,
                        "1 tool named but not listed, 1 not read-only allowed by default");
    assert_string_equal(v.first, "pol.yaml:5:3: the policy names tool \"wirte_file\", which the "
                                 "server does not list; did you mean \"write_file\"?");
    struct sl_buf out = { 0 };
    assert_int_equal(lint_notice(p, tools, NULL, NULL, &out), 2);
    sl_buf_putc(&out, '\0');
    assert_non_null(
        strstr(out.p, "sluice: the policy does not match the server's tools (2 findings; "));
    assert_non_null(strstr(out.p, "\npol.yaml:5:3: the policy names tool \"wirte_file\""));
    assert_non_null(strstr(out.p, "\npol.yaml:3:11: server tool \"write_file\" may change"));
    assert_null(strstr(out.p, "/etc/"));
    policy_unref(p);

    /* Many findings: the client is told LINT_NOTICE_MAX of them and the count of the rest. */
    sl_buf_reset(&text);
    sl_buf_puts(&text, "version: 1\ntools:\n");
    for (int i = 0; i < LINT_NOTICE_MAX + 5; i++)
        sl_buf_printf(&text, "  gone_%d: {action: deny}\n", i);
    assert_int_equal(policy_load_buffer("q.yaml", text.p, text.len, &p, &err), 0);
    sl_buf_reset(&out);
    assert_int_equal(lint_notice(p, tools, NULL, NULL, &out), LINT_NOTICE_MAX + 6);
    sl_buf_putc(&out, '\0');
    size_t lines = 0;
    for (const char *c = out.p; (c = strchr(c, '\n')) != NULL; c++)
        lines++;
    assert_int_equal(lines, LINT_NOTICE_MAX + 1);
    assert_non_null(strstr(out.p, "\n... and 6 more in sluice's log"));
    v = lint_strict(p, parse_tools(a, "[]"), NULL, NULL);
    assert_false(v.pass);
    assert_string_equal(v.summary,
                        "25 tools named but not listed, 0 not read-only allowed by default");
    char at[64];
    lint_where_short(&(struct policy_where){ "/a/b/c.yaml", 0, 0 }, at, sizeof(at));
    assert_string_equal(at, "c.yaml");
    sl_buf_free(&out);
    sl_buf_free(&text);
    sl_arena_free(a);
    policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_findings),
        cmocka_unit_test(test_where_and_near_names),
        cmocka_unit_test(test_strict),
        cmocka_unit_test(test_unknown_args),
        cmocka_unit_test(test_verdict_and_notice),
        cmocka_unit_test(test_pin_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
