/* test_cli.c: the command line, above all where the upstream command starts (issue 21: launchers
 * drop the "--"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cli.h"


/* Parses a NULL-terminated argv; err gets the message. */
static int parse(const char **argv, struct cli_opts *o, char *err, size_t errlen)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    err[0] = '\0';
    return cli_parse(argc, (char **)argv, o, err, errlen);
}

static void test_command_without_dashdash(void **state)
{
    (void)state;
    const char *argv[] = { "sluice", "--policy", "p.yaml", "node", "srv.js", "--port", "1", NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(argv, &o, err, sizeof(err)), 0);
    assert_int_equal(o.command, CLI_RUN);
    assert_string_equal(o.policy, "p.yaml");
    assert_ptr_equal(o.upstream_argv, &argv[3]);
    /* The command's own options are its own, not sluice's. */
    assert_string_equal(o.upstream_argv[2], "--port");
    assert_null(o.upstream_argv[4]);
}

static void test_command_after_dashdash(void **state)
{
    (void)state;
    const char *argv[] = { "sluice", "--policy", "p.yaml", "--", "-weird", "x", NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(argv, &o, err, sizeof(err)), 0);
    assert_ptr_equal(o.upstream_argv, &argv[4]);
}

/* An option's value is never mistaken for the command. */
static void test_value_is_not_command(void **state)
{
    (void)state;
    const char *argv[] = { "sluice", "--log-level", "debug", "--max-body", "2048", "cat", NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(argv, &o, err, sizeof(err)), 0);
    assert_string_equal(o.log_level, "debug");
    assert_int_equal(o.max_body, 2048);
    assert_ptr_equal(o.upstream_argv, &argv[5]);
}

static void test_flags(void **state)
{
    (void)state;
    const char *argv[] = { "sluice", "--strict", "--policy", "p.yaml", "--watch-policy", "cat",
                           NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(argv, &o, err, sizeof(err)), 0);
    assert_true(o.strict);
    assert_true(o.watch_policy);
    assert_ptr_equal(o.upstream_argv, &argv[5]);
}

static void test_no_command_is_the_demo(void **state)
{
    (void)state;
    const char *argv[] = { "sluice", "--policy", "p.yaml", NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(argv, &o, err, sizeof(err)), 0);
    assert_null(o.upstream_argv);
}

static void test_check_against_without_dashdash(void **state)
{
    (void)state;
    const char *argv[] = { "sluice", "check", "--policy", "p.yaml", "--against", "node", "s.js",
                           NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(argv, &o, err, sizeof(err)), 0);
    assert_int_equal(o.command, CLI_CHECK);
    assert_true(o.against);
    assert_ptr_equal(o.upstream_argv, &argv[5]);
}

/* pin and init: like check --against, the server after the options (or --upstream URL). */
static void test_pin_and_init(void **state)
{
    (void)state;
    const char *pin[] = { "sluice", "pin", "--policy", "p.yaml", "--write", "node", "s.js", NULL };
    const char *init[] = { "sluice", "init", "--upstream", "http://127.0.0.1:1/mcp", NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(pin, &o, err, sizeof(err)), 0);
    assert_int_equal(o.command, CLI_PIN);
    assert_true(o.write);
    assert_string_equal(o.policy, "p.yaml");
    assert_ptr_equal(o.upstream_argv, &pin[5]);
    assert_int_equal(parse(init, &o, err, sizeof(err)), 0);
    assert_int_equal(o.command, CLI_INIT);
    assert_false(o.write);
    assert_string_equal(o.upstream_url, "http://127.0.0.1:1/mcp");
}

static void test_usage_errors_are_one_line(void **state)
{
    (void)state;
    static const struct {
        const char *argv[8];
        const char *want;
    } cases[] = {
        { { "sluice", "--foo", NULL }, "unknown option \"--foo\"" },
        { { "sluice", "--policy", NULL }, "option --policy needs a value" },
        { { "sluice", "--", NULL }, "-- must be followed by the upstream command" },
        { { "sluice", "--upstream", "http://h:1/mcp", "cat", NULL }, "exclude each other" },
        { { "sluice", "--max-body", "x", NULL }, "not a number" },
        { { "sluice", "check", "--policy", "p.yaml", "cat", NULL }, "--against" },
        { { "sluice", "--watch-policy", NULL }, "--watch-policy needs --policy FILE" },
        { { "sluice", "check", "--policy", "p.yaml", "--watch-policy", NULL },
          "check does not use --watch-policy" },
        { { "sluice", "--audit", "a", "--audit-sync", "never", NULL }, "always or interval" },
        { { "sluice", "--audit-anchor-every", "5", NULL }, "need --audit FILE" },
        { { "sluice", "audit", NULL }, "audit needs a subcommand: verify" },
        { { "sluice", "audit", "verify", NULL }, "needs the journal FILE" },
        { { "sluice", "audit", "verify", "--policy", "p", "a", NULL },
          "audit verify does not use --policy" },
        { { "sluice", "pin", NULL }, "pin needs UPSTREAM_CMD or --upstream URL" },
        { { "sluice", "pin", "--write", "cat", NULL }, "pin --write needs --policy FILE" },
        { { "sluice", "pin", "--strict", "cat", NULL }, "pin does not use --strict" },
        { { "sluice", "init", "--policy", "p.yaml", "cat", NULL }, "init does not use --policy" },
        { { "sluice", "init", "--write", "cat", NULL }, "init does not use --write" },
        { { "sluice", "--write", "cat", NULL }, "unknown option \"--write\"" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cli_opts o;
        char err[256];
        assert_int_equal(parse((const char **)cases[i].argv, &o, err, sizeof(err)), -1);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].want);
        assert_null(strchr(err, '\n'));
    }
}

/* --upstream-wait: 10 s unless given; 0 (answer at once) is allowed, a negative wait is not. */
static void test_upstream_wait(void **state)
{
    (void)state;
    struct cli_opts o;
    char err[256];
    const char *dflt[] = { "sluice", NULL };
    assert_int_equal(parse(dflt, &o, err, sizeof(err)), 0);
    assert_int_equal(o.upstream_wait, 10);
    const char *zero[] = { "sluice", "--upstream-wait", "0", NULL };
    assert_int_equal(parse(zero, &o, err, sizeof(err)), 0);
    assert_int_equal(o.upstream_wait, 0);
    const char *neg[] = { "sluice", "--upstream-wait", "-1", NULL };
    assert_int_equal(parse(neg, &o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "--upstream-wait"));
    const char *big[] = { "sluice", "--upstream-wait", "3601", NULL };
    assert_int_equal(parse(big, &o, err, sizeof(err)), -1);
}

/* Everything after the options is a journal file, one that starts with "-" after "--". */
static void test_audit_verify(void **state)
{
    (void)state;
    const char *argv[] = { "sluice", "audit", "verify", "--anchors", "redis://h", "--store-prefix",
                           "x:", "--", "-a.jsonl", "b.jsonl", NULL };
    struct cli_opts o;
    char err[256];
    assert_int_equal(parse(argv, &o, err, sizeof(err)), 0);
    assert_int_equal(o.command, CLI_AUDIT_VERIFY);
    assert_string_equal(o.anchors, "redis://h");
    assert_string_equal(o.store_prefix, "x:");
    assert_int_equal(o.nverify_files, 2);
    assert_ptr_equal(o.verify_files, &argv[8]);
    const char *run[] = { "sluice", "--audit", "a.jsonl", "--audit-sync", "always",
                          "--audit-anchor-every", "10", "--audit-anchor-seconds", "0", NULL };
    assert_int_equal(parse(run, &o, err, sizeof(err)), 0);
    assert_string_equal(o.audit_sync, "always");
    assert_int_equal(o.audit_anchor_every, 10);
    assert_int_equal(o.audit_anchor_seconds, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_command_without_dashdash),
        cmocka_unit_test(test_command_after_dashdash),
        cmocka_unit_test(test_value_is_not_command),
        cmocka_unit_test(test_no_command_is_the_demo),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_check_against_without_dashdash),
        cmocka_unit_test(test_pin_and_init),
        cmocka_unit_test(test_usage_errors_are_one_line),
        cmocka_unit_test(test_upstream_wait),
        cmocka_unit_test(test_audit_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
