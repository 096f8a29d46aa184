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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_findings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
