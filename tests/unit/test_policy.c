/* test_policy.c: policy/policy.c and policy/ynode.c, table by table.
 *
 * - Good policies: data/policy/ok_*.yaml, each row a lookup and the decision it must give.
 * - Bad policies: data/policy/bad_*.yaml, one error each. A fixture's first line is
 *   "# expect: LINE:COL: substring"; the load must fail at exactly that line and column with a
 *   message containing the substring. Every bad_*.yaml on disk must be listed here, so a new
 *   fixture cannot be skipped silently.
 * - What a file cannot express: buffers (length, NUL bytes, size limit), the tool limit, tool
 *   names with NUL in lookups, reference counts, error formatting, the shipped example.
 *
 * Run from tests/unit (meson sets workdir), so fixtures open as data/policy/<name>. The example
 * policy comes from $SLUICE_EXAMPLE_POLICY, else ../../policy.example.yaml. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ere.h"
#include "policy.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA "data/policy/"

/* ===== helpers (forward the caller's file:line, as apk's test helpers do) ===== */

static const char *action_name(enum policy_action a)
{
    return a == POLICY_ALLOW ? "allow" : a == POLICY_CONFIRM ? "confirm" : "deny";
}

#define load_ok(path) load_ok_at((path), __FILE__, __LINE__)
static struct policy *load_ok_at(const char *path, const char *file, int line)
{
    struct policy *p = NULL;
    struct policy_error err;
    char msg[640];

    if (policy_load_file(path, &p, &err) != 0) {
        policy_error_format(&err, msg, sizeof(msg));
        print_error("%s: unexpected load error: %s\n", path, msg);
        _fail(file, line);
    }
    _assert_true(cast_ptr_to_largest_integral_type(p), "p != NULL", file, line);
    return p;
}

#define load_buf_ok(buf, len) load_buf_ok_at((buf), (len), __FILE__, __LINE__)
static struct policy *load_buf_ok_at(const char *buf, size_t len, const char *file, int line)
{
    struct policy *p = NULL;
    struct policy_error err;
    char msg[640];

    if (policy_load_buffer("inline", buf, len, &p, &err) != 0) {
        policy_error_format(&err, msg, sizeof(msg));
        print_error("unexpected load error: %s\n", msg);
        _fail(file, line);
    }
    return p;
}

/* Loads buf, which must fail at line:col with a message containing want. */
#define assert_buf_error(buf, len, line, col, want) \
    assert_buf_error_at((buf), (len), (line), (col), (want), __FILE__, __LINE__)
static void assert_buf_error_at(const char *buf, size_t len, unsigned line, unsigned col,
                                const char *want, const char *file, int at)
{
    struct policy *p = (struct policy *)&p;  /* not NULL, so the test sees *out being reset */
    struct policy_error err;

    if (policy_load_buffer("inline", buf, len, &p, &err) == 0) {
        print_error("loaded, want %u:%u: ...%s...\n", line, col, want);
        policy_unref(p);
        _fail(file, at);
    }
    _assert_true(p == NULL, "*out reset to NULL", file, at);
    _assert_string_equal(err.file, "inline", file, at);
    if (err.line != line || err.col != col || strstr(err.msg, want) == NULL) {
        print_error("got %u:%u: %s\nwant %u:%u: ...%s...\n", err.line, err.col, err.msg, line,
                    col, want);
        _fail(file, at);
    }
}

/* Variadic so TOOL("x") can stand for the tool and its length. */
#define assert_decision(p, ...) assert_decision_at((p), __VA_ARGS__, __FILE__, __LINE__)
static void assert_decision_at(const struct policy *p, const char *tool, size_t len,
                               enum policy_action action, bool irr, unsigned ttl,
                               const char *rule, const char *file, int line)
{
    struct policy_decision d;

    memset(&d, 0xa5, sizeof(d));  /* garbage, so an unset field cannot pass by luck */
    policy_lookup(p, tool, len, &d);
    _assert_string_equal(action_name(d.action), action_name(action), file, line);
    _assert_int_equal(d.irreversible, irr, file, line);
    _assert_int_equal(d.confirm_ttl, ttl, file, line);
    _assert_string_equal(d.rule, rule, file, line);
}

/* ===== good policies ===== */

struct lookup_case {
    const char *fixture;
    const char *tool;
    size_t len;                 /* bytes of tool: a row can hold an embedded NUL */
    enum policy_action action;
    bool irreversible;
    unsigned ttl;
    const char *rule;
};

#define TOOL(s) (s), sizeof(s) - 1
#define DEFAULTS "defaults.action"

static const struct lookup_case lookups[] = {
    { "ok_minimal.yaml", TOOL("write_file"), POLICY_ALLOW, false, 120, DEFAULTS },
    { "ok_minimal.yaml", TOOL("drop_table"), POLICY_ALLOW, false, 120, DEFAULTS },

    { "ok_pins.yaml", TOOL("read_file"), POLICY_ALLOW, false, 120, "tools.read_file" },
    { "ok_pins.yaml", TOOL("other"), POLICY_CONFIRM, false, 120, DEFAULTS },
    { "ok_full.yaml", TOOL("write_file"), POLICY_CONFIRM, false, 120, "tools.write_file" },
    { "ok_full.yaml", TOOL("delete_file"), POLICY_CONFIRM, true, 120, "tools.delete_file" },
    { "ok_full.yaml", TOOL("drop_table"), POLICY_DENY, false, 120, "tools.drop_table" },
    { "ok_full.yaml", TOOL("read_text_file"), POLICY_ALLOW, false, 120, DEFAULTS },
    /* names are bytes, compared exactly: no case folding, trimming or prefix match */
    { "ok_full.yaml", TOOL("Write_File"), POLICY_ALLOW, false, 120, DEFAULTS },
    { "ok_full.yaml", TOOL("write_file "), POLICY_ALLOW, false, 120, DEFAULTS },
    { "ok_full.yaml", TOOL("write_fil"), POLICY_ALLOW, false, 120, DEFAULTS },
    { "ok_full.yaml", TOOL("delete_files"), POLICY_ALLOW, false, 120, DEFAULTS },
    { "ok_full.yaml", TOOL(""), POLICY_ALLOW, false, 120, DEFAULTS },
    /* a NUL inside the name does not end it: "delete_file\0" is a different name */
    { "ok_full.yaml", TOOL("delete_file\0"), POLICY_ALLOW, false, 120, DEFAULTS },
    { "ok_full.yaml", TOOL("delete_file\0x"), POLICY_ALLOW, false, 120, DEFAULTS },
    { "ok_full.yaml", TOOL("\0delete_file"), POLICY_ALLOW, false, 120, DEFAULTS },

    { "ok_flow_quoted.yaml", TOOL("read_file"), POLICY_ALLOW, false, 86400, "tools.read_file" },
    { "ok_flow_quoted.yaml", TOOL("db.query"), POLICY_CONFIRM, false, 86400, "tools.db.query" },
    { "ok_flow_quoted.yaml", TOOL("rm--rf"), POLICY_DENY, true, 86400, "tools.rm--rf" },
    { "ok_flow_quoted.yaml", TOOL("\xc3\xbc" "n\xc3\xaf" "code_tool"), POLICY_CONFIRM, true, 86400,
      "tools.\xc3\xbc" "n\xc3\xaf" "code_tool" },
    { "ok_flow_quoted.yaml", TOOL("123"), POLICY_ALLOW, false, 86400, "tools.123" },
    { "ok_flow_quoted.yaml", TOOL("null"), POLICY_CONFIRM, false, 86400, "tools.null" },
    { "ok_flow_quoted.yaml", TOOL("write_file"), POLICY_DENY, false, 86400, DEFAULTS },

    { "ok_sections_empty.yaml", TOOL("write_file"), POLICY_ALLOW, false, 1, DEFAULTS },

    { "ok_bom.yaml", TOOL("write_file"), POLICY_CONFIRM, false, 120, "tools.write_file" },
    { "ok_rules.yaml", TOOL("delete_file"), POLICY_CONFIRM, true, 120, "tools.delete_file" },
    { "ok_rules.yaml", TOOL("write_file"), POLICY_ALLOW, false, 120, "tools.write_file" },
    { "ok_bom.yaml", TOOL("\xef\xbb\xbfwrite_file"), POLICY_ALLOW, false, 120, DEFAULTS },
};

/* Returns true when row c decides as it says; otherwise says what it got. */
static bool lookup_matches(const struct lookup_case *c, size_t row)
{
    struct policy_decision d;
    struct policy_error err;
    struct policy *p;
    char path[256], msg[640];
    bool ok;

    snprintf(path, sizeof(path), DATA "%s", c->fixture);
    if (policy_load_file(path, &p, &err) != 0) {
        policy_error_format(&err, msg, sizeof(msg));
        print_error("lookups[%zu]: %s\n", row, msg);
        return false;
    }
    memset(&d, 0xa5, sizeof(d));
    policy_lookup(p, c->tool, c->len, &d);
    ok = d.action == c->action && d.irreversible == c->irreversible && d.confirm_ttl == c->ttl &&
         strcmp(d.rule, c->rule) == 0;
    if (!ok)
        print_error("lookups[%zu] (%s, %zu-byte tool): got %s%s ttl %u rule %s, want %s%s ttl %u "
                    "rule %s\n", row, c->fixture, c->len, action_name(d.action),
                    d.irreversible ? " irreversible" : "", d.confirm_ttl, d.rule,
                    action_name(c->action), c->irreversible ? " irreversible" : "", c->ttl,
                    c->rule);
    policy_unref(p);
    return ok;
}

static void test_lookups(void **state)
{
    size_t failed = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(lookups) / sizeof(lookups[0]); i++)
        failed += !lookup_matches(&lookups[i], i);
    assert_int_equal(failed, 0);
}

/* A name counts only with the length the caller gives, not up to a NUL. */
static void test_lookup_uses_len(void **state)
{
    struct policy *p = load_ok(DATA "ok_full.yaml");

    (void)state;
    assert_decision(p, "write_file_and_more", 10, POLICY_CONFIRM, false, 120, "tools.write_file");
    assert_decision(p, "write_file", 5, POLICY_ALLOW, false, 120, DEFAULTS);
    policy_unref(p);
}

static void test_tool_list(void **state)
{
    struct policy *p = load_ok(DATA "ok_full.yaml");
    struct policy *empty = load_ok(DATA "ok_minimal.yaml");

    (void)state;
    assert_int_equal(policy_tool_count(p), 3);
    assert_string_equal(policy_tool_name(p, 0), "write_file");  /* file order */
    assert_string_equal(policy_tool_name(p, 1), "delete_file");
    assert_string_equal(policy_tool_name(p, 2), "drop_table");
    assert_null(policy_tool_name(p, 3));
    assert_int_equal(policy_tool_count(empty), 0);
    assert_null(policy_tool_name(empty, 0));
    policy_unref(p);
    policy_unref(empty);
}

/* Every ok_*.yaml on disk is used by some lookup row. */
static void test_ok_fixtures_all_used(void **state)
{
    glob_t g;

    (void)state;
    assert_int_equal(glob(DATA "ok_*.yaml", 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *name = g.gl_pathv[i] + strlen(DATA);
        bool used = false;
        for (size_t j = 0; j < sizeof(lookups) / sizeof(lookups[0]) && !used; j++)
            used = strcmp(lookups[j].fixture, name) == 0;
        if (!used)
            print_error("%s has no row in lookups[]\n", g.gl_pathv[i]);
        assert_true(used);
    }
    globfree(&g);
}

/* ===== the shipped example ===== */

static void test_example_policy(void **state)
{
    const char *path = getenv("SLUICE_EXAMPLE_POLICY");
    struct policy *p;
    struct policy_decision d;

    (void)state;
    p = load_ok(path && *path ? path : "../../policy.example.yaml");
    assert_decision(p, TOOL("write_file"), POLICY_CONFIRM, false, 120, "tools.write_file");
    assert_decision(p, TOOL("edit_file"), POLICY_CONFIRM, false, 120, "tools.edit_file");
    assert_decision(p, TOOL("move_file"), POLICY_CONFIRM, true, 120, "tools.move_file");
    assert_decision(p, TOOL("delete_file"), POLICY_CONFIRM, true, 120, "tools.delete_file");
    assert_decision(p, TOOL("create_directory"), POLICY_CONFIRM, false, 120,
                    "tools.create_directory");
    assert_decision(p, TOOL("drop_table"), POLICY_DENY, false, 120, "tools.drop_table");
    assert_decision(p, TOOL("read_text_file"), POLICY_ALLOW, false, 120, DEFAULTS);
    assert_decision(p, TOOL("list_directory"), POLICY_ALLOW, false, 120, DEFAULTS);
    assert_decision(p, TOOL("get_file_info"), POLICY_ALLOW, false, 120, DEFAULTS);
    /* DESIGN.md §4: the example opts no tool into anything weaker than confirm */
    assert_int_equal(policy_tool_count(p), 6);
    for (size_t i = 0; i < policy_tool_count(p); i++) {
        const char *name = policy_tool_name(p, i);
        policy_lookup(p, name, strlen(name), &d);
        if (d.action == POLICY_ALLOW)
            print_error("example policy allows %s\n", name);
        assert_int_not_equal(d.action, POLICY_ALLOW);
        /* an irreversible tool refuses arguments its policy does not declare */
        if (d.irreversible)
            assert_true(d.strict_args);
    }
    assert_int_equal(policy_warning_count(p), 0);
    /* strict tools declare every argument of their server's tool: delete_file (sluice's demo
     * server, proxy/demo.c) takes path; move_file (the filesystem server) source and
     * destination */
    static const struct {
        const char *tool;
        const char *args[3];
    } strict[] = {
        { "delete_file", { "path" } },
        { "move_file", { "source", "destination" } },
    };
    for (size_t i = 0; i < sizeof(strict) / sizeof(strict[0]); i++) {
        size_t n, want = 0;
        const struct policy_arg *a = policy_tool_args(p, strict[i].tool, strlen(strict[i].tool), &n);
        while (want < 3 && strict[i].args[want])
            want++;
        assert_int_equal(n, want);
        for (size_t j = 0; j < n; j++)
            assert_string_equal(a[j].name, strict[i].args[j]);
    }
    policy_unref(p);
}

/* pin: the 32 bytes of the hex, quoted or plain alike; defaults.unpinned reaches every lookup. */
static void test_pins(void **state)
{
    struct policy *p;
    struct policy_error err;
    struct policy_decision d;
    (void)state;
    assert_int_equal(policy_load_file(DATA "ok_pins.yaml", &p, &err), 0);
    assert_true(policy_unpinned_deny(p));
    policy_lookup(p, "read_file", 9, &d);
    assert_non_null(d.pin);
    assert_true(d.unpinned_deny);
    assert_int_equal(d.pin[0], 0x01);
    assert_int_equal(d.pin[31], 0xef);
    policy_lookup(p, "write_file", 10, &d);
    assert_non_null(d.pin);
    assert_int_equal(d.pin[0], 0xfe);
    assert_int_equal(d.pin[31], 0x10);
    policy_lookup(p, "other", 5, &d);
    assert_null(d.pin);
    assert_true(d.unpinned_deny);
    policy_unref(p);
    assert_int_equal(policy_load_file(DATA "ok_minimal.yaml", &p, &err), 0);
    assert_false(policy_unpinned_deny(p));
    policy_lookup(p, "write_file", 10, &d);
    assert_null(d.pin);
    assert_false(d.unpinned_deny);
    policy_unref(p);
}

/* ===== bad policies: one fixture per error ===== */

static const char *const bad_fixtures[] = {
    /* version and the shape of the file */
    "bad_version_missing.yaml", "bad_version_string.yaml", "bad_version_2.yaml",
    "bad_version_float.yaml", "bad_root_sequence.yaml", "bad_root_scalar.yaml", "bad_empty.yaml",
    /* unknown keys, at each level */
    "bad_unknown_key_top.yaml", "bad_unknown_key_defaults.yaml", "bad_unknown_key_tool.yaml",
    /* wrong types */
    "bad_defaults_sequence.yaml", "bad_tools_sequence.yaml", "bad_tools_empty.yaml",
    "bad_tool_scalar.yaml", "bad_action_mapping.yaml", "bad_action_empty.yaml",
    "bad_complex_key.yaml",
    /* actions */
    "bad_action_unknown.yaml", "bad_action_capitalised.yaml", "bad_default_action_unknown.yaml",
    "bad_missing_action.yaml", "bad_missing_action_flow.yaml",
    /* confirm_ttl */
    "bad_ttl_quoted.yaml", "bad_ttl_units.yaml", "bad_ttl_leading_zero.yaml", "bad_ttl_zero.yaml",
    "bad_ttl_too_big.yaml", "bad_ttl_negative.yaml", "bad_ttl_huge.yaml",
    /* irreversible */
    "bad_irreversible_yes.yaml", "bad_irreversible_capitalised.yaml",
    "bad_irreversible_quoted.yaml", "bad_irreversible_allow.yaml",
    /* strict_args */
    "bad_strict_args_yes.yaml",
    /* pin and defaults.unpinned */
    "bad_pin_short.yaml", "bad_pin_uppercase.yaml", "bad_pin_sequence.yaml",
    "bad_unpinned_value.yaml",
    /* fallback and hide_denied */
    "bad_fallback_irreversible.yaml", "bad_observe_with_token.yaml", "bad_fallback_value.yaml", "bad_fallback_allow.yaml",
    "bad_fallback_deny_value.yaml",
    "bad_hide_denied_not_bool.yaml",
    /* duplicates, at each level */
    "bad_duplicate_tool.yaml", "bad_duplicate_tool_quoted.yaml", "bad_duplicate_key_top.yaml",
    "bad_duplicate_key_defaults.yaml", "bad_duplicate_key_tool.yaml",
    "bad_duplicate_section.yaml",
    /* tool names */
    "bad_empty_tool_name.yaml", "bad_tool_name_control.yaml", "bad_tool_name_nul.yaml",
    "bad_tool_name_glob.yaml", "bad_tool_name_braces.yaml", "bad_tool_name_space.yaml",
    "bad_tool_name_zero_width.yaml", "bad_tool_name_nbsp.yaml", "bad_tool_name_bidi.yaml",
    "bad_observe_tool_name.yaml",
    /* YAML a policy refuses */
    "bad_anchor.yaml", "bad_alias.yaml", "bad_tag.yaml", "bad_tag_mapping.yaml",
    "bad_two_documents.yaml", "bad_directive.yaml", "bad_depth.yaml",
    /* argument rules: shape */
    "bad_args_unknown_rule.yaml", "bad_args_empty_value.yaml", "bad_args_empty.yaml",
    "bad_args_duplicate.yaml", "bad_args_scalar.yaml", "bad_rules_mixed_types.yaml",
    /* globs */
    "bad_glob_empty_list.yaml", "bad_glob_scalar.yaml", "bad_glob_empty_string.yaml",
    "bad_glob_dotdot.yaml", "bad_glob_double_slash.yaml", "bad_glob_trailing_slash.yaml",
    "bad_glob_partial_globstar.yaml", "bad_glob_mapping.yaml", "bad_glob_braces.yaml",
    "bad_glob_brackets.yaml", "bad_glob_closing_bracket.yaml", "bad_glob_backslash.yaml",
    "bad_glob_tilde.yaml",
    /* regex, max_length, min/max, enum */
    "bad_regex_compile.yaml", "bad_regex_empty.yaml", "bad_regex_sequence.yaml",
    "bad_regex_stacked_repeats.yaml", "bad_regex_nested_intervals.yaml",
    "bad_regex_interval_no_min.yaml", "bad_regex_backref.yaml",
    "bad_regex_backref_after_bracket.yaml",
    "bad_max_length_negative.yaml", "bad_max_length_quoted.yaml", "bad_max_length_too_big.yaml",
    "bad_min_gt_max.yaml", "bad_min_quoted.yaml", "bad_max_hex.yaml", "bad_max_too_long.yaml",
    "bad_enum_empty.yaml", "bad_enum_mapping_entry.yaml", "bad_enum_ambiguous.yaml",
    "bad_enum_null.yaml", "bad_enum_duplicate.yaml",
    /* message templates */
    "bad_message_unknown_field.yaml", "bad_message_no_args.yaml", "bad_message_unclosed.yaml",
    "bad_message_unmatched_close.yaml", "bad_message_empty_field.yaml",
    "bad_message_field_chars.yaml", "bad_message_control.yaml", "bad_message_sequence.yaml",
    /* observe: only on confirm tools (on deny a warning, test_deny_leftovers_warn, but still
     * validated), naming an allow tool, strict shape */
    "bad_observe_on_allow.yaml", "bad_observe_on_deny_malformed.yaml",
    "bad_observe_tool_confirm.yaml",
    "bad_observe_tool_deny.yaml", "bad_observe_tool_default.yaml",
    "bad_observe_tool_default_deny.yaml", "bad_observe_tool_self.yaml",
    "bad_observe_missing_tool.yaml", "bad_observe_unknown_key.yaml", "bad_observe_scalar.yaml",
    "bad_observe_tool_not_scalar.yaml", "bad_observe_args_not_mapping.yaml",
    "bad_observe_args_sequence.yaml", "bad_observe_args_mapping.yaml",
    "bad_observe_args_empty_value.yaml", "bad_observe_args_null.yaml",
    "bad_observe_args_duplicate.yaml", "bad_observe_args_control.yaml",
    /* YAML that does not parse */
    "bad_syntax_unclosed_quote.yaml", "bad_syntax_tab.yaml", "bad_syntax_indent.yaml",
    "bad_syntax_utf8.yaml",
};

#define NBAD (sizeof(bad_fixtures) / sizeof(bad_fixtures[0]))

struct expect {
    unsigned line, col;
    char want[256];
};

/* Reads "# expect: LINE:COL: substring" from the first line of path. */
static int read_expect(const char *path, struct expect *e)
{
    char first[512];
    int off = 0;
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return -1;
    if (fgets(first, sizeof(first), f) == NULL)
        first[0] = '\0';
    fclose(f);
    first[strcspn(first, "\n")] = '\0';
    if (sscanf(first, "# expect: %u:%u: %n", &e->line, &e->col, &off) != 2 || off == 0 ||
        first[off] == '\0')
        return -1;
    snprintf(e->want, sizeof(e->want), "%s", first + off);
    return 0;
}

/* Returns true when path fails exactly as its first line says; otherwise says why. */
static bool bad_fixture_fails_as_expected(const char *path)
{
    struct policy *p = (struct policy *)&p;
    struct policy_error err;
    struct expect e;
    char got[640], prefix[300];
    int rc;

    if (read_expect(path, &e) < 0) {
        print_error("%s: cannot read its \"# expect: LINE:COL: text\" line\n", path);
        return false;
    }
    rc = policy_load_file(path, &p, &err);
    if (rc == 0) {
        print_error("%s: loaded, want %u:%u: %s\n", path, e.line, e.col, e.want);
        policy_unref(p);
        return false;
    }
    policy_error_format(&err, got, sizeof(got));
    snprintf(prefix, sizeof(prefix), "%s:%u:%u: ", path, e.line, e.col);
    if (rc != -1 || p != NULL || strcmp(err.file, path) != 0 || err.line != e.line ||
        err.col != e.col || strstr(err.msg, e.want) == NULL ||
        strncmp(got, prefix, strlen(prefix)) != 0 || strcmp(got + strlen(prefix), err.msg) != 0) {
        print_error("%s:\n   got %s\n  want %s...%s...\n", path, got, prefix, e.want);
        return false;
    }
    return true;
}

static void test_bad_fixtures(void **state)
{
    size_t failed = 0;

    (void)state;
    assert_true(NBAD >= 20);
    for (size_t i = 0; i < NBAD; i++) {
        char path[256];
        snprintf(path, sizeof(path), DATA "%s", bad_fixtures[i]);
        failed += !bad_fixture_fails_as_expected(path);
    }
    /* all fixtures run before this, so one run lists every broken one */
    assert_int_equal(failed, 0);
}

/* Every bad_*.yaml on disk is in bad_fixtures[], and every entry is on disk. */
static void test_bad_fixtures_all_listed(void **state)
{
    glob_t g;
    size_t listed = 0;

    (void)state;
    assert_int_equal(glob(DATA "bad_*.yaml", 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *name = g.gl_pathv[i] + strlen(DATA);
        bool found = false;
        for (size_t j = 0; j < NBAD && !found; j++)
            found = strcmp(bad_fixtures[j], name) == 0;
        if (!found)
            print_error("%s is not listed in bad_fixtures[]\n", g.gl_pathv[i]);
        listed += found;
    }
    assert_int_equal(listed, g.gl_pathc);
    assert_int_equal(g.gl_pathc, NBAD);
    globfree(&g);
}

/* ===== buffers ===== */

static void test_buffer_good(void **state)
{
    static const char text[] = "version: 1\ntools: {x: {action: deny}}\n";
    struct policy *p = load_buf_ok(text, sizeof(text) - 1);

    (void)state;
    assert_decision(p, TOOL("x"), POLICY_DENY, false, 120, "tools.x");
    policy_unref(p);
}

/* The loader reads len bytes and no more: the copy has no NUL after it (ASan would see a read
 * past the end), and the garbage after len is never looked at. */
static void test_buffer_len_is_honoured(void **state)
{
    static const char text[] = "version: 1\ntools: [this is not read";
    size_t len = strlen("version: 1\n");
    char *exact = malloc(len);
    struct policy *p;

    (void)state;
    assert_non_null(exact);
    memcpy(exact, text, len);
    p = load_buf_ok(exact, len);
    assert_int_equal(policy_tool_count(p), 0);
    policy_unref(p);
    free(exact);
}

static void test_buffer_errors(void **state)
{
    static const char nul[] = "version: 1\nx: a\0b\n";

    (void)state;
    assert_buf_error("", 0, 1, 1, "the policy is empty");
    assert_buf_error(nul, sizeof(nul) - 1, 2, 5, "control characters are not allowed");
    assert_buf_error("version: 1\ndefaults: {action: deny, extra: 1}", 45, 2, 26,
                     "unknown key \"extra\" in defaults (expected: action, confirm_ttl, hide_denied, max_open_confirmations, max_questions_per_minute, strict, unpinned)");
    assert_buf_error("version: 1\ndefaults:\n  strict: yes\n", 34, 3, 11, "defaults.strict");
    /* UTF-16 is not sniffed: the BOM is not UTF-8 */
    assert_buf_error("\xff\xfev\0", 4, 1, 1, "invalid leading UTF-8 octet");
}

/* The depth limit is exact: root + 7 brackets loads far enough to hit the unknown key, root +
 * 8 does not. */
static void test_depth_limit(void **state)
{
    static const char ok[] = "version: 1\nx: [[[[[[[1]]]]]]]\n";
    static const char deep[] = "version: 1\nx: [[[[[[[[1]]]]]]]]\n";

    (void)state;
    assert_buf_error(ok, sizeof(ok) - 1, 2, 1, "unknown key \"x\" at top level");
    assert_buf_error(deep, sizeof(deep) - 1, 2, 11, "nesting deeper than 8 levels");
}

/* Error messages quote user text with escapes and a length cap, so a policy cannot put terminal
 * control sequences or a megabyte into `sluice check` output. */
static void test_error_quoting(void **state)
{
    static const char esc[] = "version: 1\n\"\\e[31mred\": 1\n";
    char longkey[200];

    (void)state;
    assert_buf_error(esc, sizeof(esc) - 1, 2, 1, "unknown key \"\\x1b[31mred\" at top level");
    memset(longkey, 'k', sizeof(longkey));
    memcpy(longkey, "version: 1\n", 11);
    memcpy(longkey + sizeof(longkey) - 4, ": 1", 3);
    longkey[sizeof(longkey) - 1] = '\n';
    assert_buf_error(longkey, sizeof(longkey), 2, 1,
                     "unknown key \"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...\" at top level");
}

static void test_buffer_size_limit(void **state)
{
    char *buf = malloc(POLICY_MAX_BYTES + 1);
    struct policy *p;

    (void)state;
    assert_non_null(buf);
    /* exactly POLICY_MAX_BYTES: the version, then one long comment */
    memset(buf, 'x', POLICY_MAX_BYTES + 1);
    memcpy(buf, "version: 1\n#", 12);
    buf[POLICY_MAX_BYTES - 1] = '\n';
    p = load_buf_ok(buf, POLICY_MAX_BYTES);
    policy_unref(p);
    assert_buf_error(buf, POLICY_MAX_BYTES + 1, 0, 0, "larger than 1048576 bytes");
    free(buf);
}

static void test_buffer_null_name_and_err(void **state)
{
    struct policy *p;
    struct policy_error err;

    (void)state;
    assert_int_equal(policy_load_buffer(NULL, "version: 2", 10, &p, &err), -1);
    assert_string_equal(err.file, "<policy>");
    assert_int_equal(policy_load_buffer("x", "version: 2", 10, &p, NULL), -1);
    assert_null(p);
}

/* ===== the tool limit ===== */

/* "version: 1\ntools:\n" and then n tools t0..t<n-1>, one per line from line 3. */
static char *many_tools(size_t n, size_t *len)
{
    size_t cap = 32 + n * 32, o;
    char *buf = malloc(cap);

    assert_non_null(buf);
    o = (size_t)snprintf(buf, cap, "version: 1\ntools:\n");
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, cap - o, "  t%zu: {action: %s}\n", i,
                              i % 2 ? "deny" : "confirm");
    *len = o;
    return buf;
}

static void test_max_tools(void **state)
{
    size_t len;
    char *buf = many_tools(POLICY_MAX_TOOLS, &len);
    struct policy *p = load_buf_ok(buf, len);
    char name[32], rule[40];

    (void)state;
    assert_int_equal(policy_tool_count(p), POLICY_MAX_TOOLS);
    for (size_t i = 0; i < POLICY_MAX_TOOLS; i++) {  /* every name lands in the index */
        snprintf(name, sizeof(name), "t%zu", i);
        snprintf(rule, sizeof(rule), "tools.t%zu", i);
        assert_string_equal(policy_tool_name(p, i), name);
        assert_decision(p, name, strlen(name), i % 2 ? POLICY_DENY : POLICY_CONFIRM, false, 120,
                        rule);
    }
    assert_decision(p, TOOL("t4096"), POLICY_ALLOW, false, 120, DEFAULTS);
    policy_unref(p);
    free(buf);

    /* one more: the error is at the first tool past the limit, on line 3 + 4096 */
    buf = many_tools(POLICY_MAX_TOOLS + 1, &len);
    assert_buf_error(buf, len, 3 + POLICY_MAX_TOOLS, 3, "more than 4096 tools");
    free(buf);
}

/* ===== files ===== */

static void test_file_missing(void **state)
{
    const char *path = DATA "does_not_exist.yaml";
    struct policy *p = (struct policy *)&p;
    struct policy_error err;
    char got[640], want[640];

    (void)state;
    assert_int_equal(policy_load_file(path, &p, &err), -1);
    assert_null(p);
    assert_string_equal(err.file, path);
    assert_int_equal(err.line, 0);
    assert_int_equal(err.col, 0);
    assert_non_null(strstr(err.msg, strerror(ENOENT)));
    policy_error_format(&err, got, sizeof(got));
    snprintf(want, sizeof(want), "%s: cannot open: %s", path, strerror(ENOENT));
    assert_string_equal(got, want);
}

static void test_file_directory(void **state)
{
    struct policy *p;
    struct policy_error err;

    (void)state;
    assert_int_equal(policy_load_file("data/policy", &p, &err), -1);
    assert_int_equal(err.line, 0);
    assert_non_null(strstr(err.msg, strerror(EISDIR)));
}

static void test_file_size_limit(void **state)
{
    const char *dir = getenv("TMPDIR");
    char path[512];
    struct policy *p;
    struct policy_error err;
    char *buf = malloc(POLICY_MAX_BYTES + 1);
    FILE *f;
    int fd;

    (void)state;
    assert_non_null(buf);
    snprintf(path, sizeof(path), "%s/test_policy.XXXXXX", dir && *dir ? dir : "/tmp");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    memset(buf, 'x', POLICY_MAX_BYTES + 1);
    memcpy(buf, "version: 1\n#", 12);
    buf[POLICY_MAX_BYTES - 1] = '\n';
    assert_int_equal(fwrite(buf, 1, POLICY_MAX_BYTES, f), POLICY_MAX_BYTES);
    assert_int_equal(fflush(f), 0);
    p = load_ok(path);  /* exactly the limit */
    policy_unref(p);
    assert_int_equal(fwrite("x", 1, 1, f), 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(policy_load_file(path, &p, &err), -1);
    assert_int_equal(err.line, 0);
    assert_non_null(strstr(err.msg, "larger than 1048576 bytes"));
    unlink(path);
    free(buf);
}

/* ===== error formatting ===== */

static void test_error_format(void **state)
{
    struct policy_error err = { .file = "p.yaml", .line = 7, .col = 5, .msg = "unknown key" };
    char buf[64];

    (void)state;
    policy_error_format(&err, buf, sizeof(buf));
    assert_string_equal(buf, "p.yaml:7:5: unknown key");
    err.line = err.col = 0;
    policy_error_format(&err, buf, sizeof(buf));
    assert_string_equal(buf, "p.yaml: unknown key");
    policy_error_format(&err, buf, 7);  /* truncates, still terminated */
    assert_string_equal(buf, "p.yaml");
    buf[0] = '!';
    policy_error_format(&err, buf, 0);  /* writes nothing */
    assert_int_equal(buf[0], '!');
}

/* ===== reference counting ===== */

static void test_ref_unref(void **state)
{
    struct policy *p = load_ok(DATA "ok_full.yaml");
    struct policy *q;

    (void)state;
    q = policy_ref(p);
    assert_ptr_equal(q, p);
    policy_unref(p);  /* one reference left: still usable (ASan would catch a free) */
    assert_decision(q, TOOL("delete_file"), POLICY_CONFIRM, true, 120, "tools.delete_file");
    policy_unref(q);  /* last one: freed (LeakSanitizer would catch a leak) */
    policy_unref(NULL);
}

/* A reload swaps the global policy; a session that took a reference keeps deciding, rule
 * strings included, by the policy it started with. */
static void test_reload_keeps_old_policy(void **state)
{
    struct policy *global = load_ok(DATA "ok_full.yaml");
    struct policy *session = policy_ref(global);
    struct policy_decision d;

    (void)state;
    policy_lookup(session, TOOL("write_file"), &d);
    policy_unref(global);
    global = load_ok(DATA "ok_flow_quoted.yaml");
    assert_string_equal(d.rule, "tools.write_file");  /* still owned by session's policy */
    assert_decision(session, TOOL("write_file"), POLICY_CONFIRM, false, 120, "tools.write_file");
    assert_decision(global, TOOL("write_file"), POLICY_DENY, false, 86400, DEFAULTS);
    policy_unref(session);
    policy_unref(global);
}

/* fallback: token and hide_denied reach the lookup. */
static void test_fallback_and_hide_denied(void **state)
{
    (void)state;
    static const char text[] = "version: 1\n"
                               "defaults:\n  hide_denied: true\n"
                               "tools:\n"
                               "  write_file:\n    action: confirm\n    fallback: token\n"
                               "  edit_file:\n    action: confirm\n";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t", text, sizeof(text) - 1, &p, &err), 0);
    assert_true(policy_hide_denied(p));
    struct policy_decision d;
    policy_lookup(p, "write_file", 10, &d);
    assert_true(d.token_fallback);
    policy_lookup(p, "edit_file", 9, &d);
    assert_false(d.token_fallback);
    policy_lookup(p, "other", 5, &d);
    assert_false(d.token_fallback);
    policy_unref(p);
    static const char plain[] = "version: 1\n";
    assert_int_equal(policy_load_buffer("t", plain, sizeof(plain) - 1, &p, &err), 0);
    assert_false(policy_hide_denied(p));
    policy_unref(p);
}

/* defaults.strict, and where the tools and defaults.action were written (for lint findings). */
static void test_strict_and_where(void **state)
{
    (void)state;
    static const char text[] = "version: 1\n"
                               "defaults:\n  strict: true\n  action:   deny\n"
                               "tools:\n"
                               "  a: {action: allow}\n"
                               "  \"b.c\":\n    action: deny\n";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("w.yaml", text, sizeof(text) - 1, &p, &err), 0);
    assert_true(policy_strict(p));
    struct policy_where w = policy_default_where(p);
    assert_string_equal(w.file, "w.yaml");
    assert_int_equal(w.line, 4);
    assert_int_equal(w.col, 13);
    w = policy_tool_where(p, 1);
    assert_int_equal(w.line, 7);
    assert_int_equal(w.col, 3);
    w = policy_tool_where(p, 2); /* out of range: no place */
    assert_int_equal(w.line, 0);
    policy_unref(p);
    static const char plain[] = "version: 1\n";
    assert_int_equal(policy_load_buffer("t", plain, sizeof(plain) - 1, &p, &err), 0);
    assert_false(policy_strict(p));
    assert_int_equal(policy_default_where(p).line, 0);
    policy_unref(p);
}

/* ===== argument rules and templates reach the accessors ===== */

static void test_tool_args(void **state)
{
    struct policy *p = load_ok(DATA "ok_rules.yaml");
    const struct policy_arg *a;
    size_t n = 99;

    (void)state;
    a = policy_tool_args(p, TOOL("delete_file"), &n);
    assert_int_equal(n, 1);
    assert_string_equal(a[0].name, "path");
    assert_int_equal(a[0].len, 4);
    assert_string_equal(a[0].rule, "tools.delete_file.args.path");
    assert_int_equal(a[0].n_deny_glob, 2);
    assert_string_equal(a[0].deny_glob[1], "**/.ssh/**");
    assert_int_equal(a[0].n_allow_glob, 1);
    assert_string_equal(a[0].allow_glob[0], "/tmp/demo/**");
    assert_int_equal(a[0].n_confirm_glob, 0);
    assert_string_equal(a[0].regex, "[^ ]+");
    assert_non_null(a[0].regex_re);
    assert_true(a[0].has_max_length);
    assert_int_equal(a[0].max_length, 4096);
    assert_null(a[0].min);
    assert_int_equal(a[0].n_enum, 0);
    assert_string_equal(policy_tool_message(p, TOOL("delete_file")),
                        "Delete {path} ({{really}})");

    a = policy_tool_args(p, TOOL("write_file"), &n);
    assert_int_equal(n, 4);
    assert_string_equal(a[0].confirm_glob[0], "/home/**");
    assert_int_equal(a[1].n_enum, 4);
    assert_int_equal(a[1].enum_values[0].type, POLICY_VALUE_STRING);
    assert_string_equal(a[1].enum_values[0].text, "fast");
    assert_int_equal(a[1].enum_values[1].type, POLICY_VALUE_STRING);
    assert_int_equal(a[1].enum_values[2].type, POLICY_VALUE_NUMBER);
    assert_int_equal(a[1].enum_values[3].type, POLICY_VALUE_BOOL);
    assert_string_equal(a[2].min, "-1.5");
    assert_string_equal(a[2].max, "2e3");
    assert_false(a[3].has_max_length);
    assert_null(a[3].regex);
    assert_null(policy_tool_message(p, TOOL("write_file")));

    assert_null(policy_tool_args(p, TOOL("unnamed"), &n));
    assert_int_equal(n, 0);
    assert_null(policy_tool_message(p, TOOL("unnamed")));
    assert_null(policy_tool_args(p, TOOL("delete_file\0"), &n));
    policy_unref(p);
}

struct number_case {
    const char *a, *b;
    int want;  /* -1, 0, 1, or 2: not comparable */
};

static const struct number_case number_cases[] = {
    { "0", "0", 0 }, { "-0", "0", 0 }, { "0.0", "-0e5", 0 }, { "1", "1.0", 0 },
    { "100", "1e2", 0 }, { "100", "1E+2", 0 }, { "0.1", "1e-1", 0 }, { "0.05", "5e-2", 0 },
    { "-1.5", "-15e-1", 0 }, { "1", "2", -1 }, { "2", "10", -1 }, { "-2", "-10", 1 },
    { "-1", "0", -1 }, { "0", "1e-400", -1 }, { "-1e-400", "0", -1 },
    { "1e400", "1e399", 1 }, { "1e999999999999999999999", "1e30", 1 },
    { "-1e999999999999999999999", "-1e30", -1 },
    { "100.0000000000000001", "100", 1 }, { "99.99999999999999999", "100", -1 },
    { "123456789012345678901234567890", "123456789012345678901234567891", -1 },
    { "9007199254740993", "9007199254740992", 1 },  /* equal as doubles */
    { "0.00000001e10", "100", 0 },
    { "", "0", 2 }, { "01", "1", 2 }, { "+1", "1", 2 }, { ".5", "0.5", 2 }, { "1.", "1", 2 },
    { "1e", "1", 2 }, { "0x10", "16", 2 }, { "1 ", "1", 2 }, { "NaN", "1", 2 }, { "-", "1", 2 },
    { "1", "--1", 2 },
    { "1111111111111111111111111111111111111111111111111111111111111111", "1", 1 },
    { "11111111111111111111111111111111111111111111111111111111111111111", "1", 2 },
};

static void test_number_cmp(void **state)
{
    size_t failed = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(number_cases) / sizeof(number_cases[0]); i++) {
        const struct number_case *c = &number_cases[i];
        int cmp = 42, back = 42;
        int rc = policy_number_cmp(c->a, strlen(c->a), c->b, strlen(c->b), &cmp);
        int rb = policy_number_cmp(c->b, strlen(c->b), c->a, strlen(c->a), &back);
        int got = rc < 0 ? 2 : (cmp > 0) - (cmp < 0);
        if (got != c->want || (rc == 0 && (rb != 0 || (back > 0) - (back < 0) != -got))) {
            print_error("number_cases[%zu]: %s vs %s: got %d, want %d\n", i, c->a, c->b, got,
                        c->want);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

/* ===== strict_args, and a deny tool's leftovers ===== */

static void test_strict_args(void **state)
{
    static const char text[] = "version: 1\n"
                               "tools:\n"
                               "  a:\n"
                               "    action: confirm\n"
                               "    strict_args: true\n"
                               "    args: { path: {} }\n"
                               "  b:\n"
                               "    action: allow\n"
                               "    strict_args: false\n"
                               "  c:\n"
                               "    action: allow\n"
                               "    strict_args: true\n";
    struct policy *p = load_buf_ok(text, sizeof(text) - 1);
    struct policy_decision d;

    (void)state;
    policy_lookup(p, TOOL("a"), &d);
    assert_true(d.strict_args);
    policy_lookup(p, TOOL("b"), &d);
    assert_false(d.strict_args);
    policy_lookup(p, TOOL("c"), &d); /* no args: then every argument is refused */
    assert_true(d.strict_args);
    policy_lookup(p, TOOL("unnamed"), &d);
    assert_false(d.strict_args);
    assert_int_equal(policy_warning_count(p), 0);
    policy_unref(p);
}

/* Tightening to deny always loads: a deny tool's message, observe and fallback are ignored,
 * each with a warning at its key, file:line:col; the decision is a plain deny. */
static void test_deny_leftovers_warn(void **state)
{
    struct policy *p = load_ok(DATA "warn_deny_leftovers.yaml");
    struct policy_decision d;
    char got[640];
    static const char *const want[] = {
        DATA "warn_deny_leftovers.yaml:11:5: tools.delete_file.message is ignored: "
             "tools.delete_file is deny, nobody is asked",
        DATA "warn_deny_leftovers.yaml:14:5: tools.delete_file.observe is ignored: "
             "tools.delete_file is deny, nothing is observed",
        DATA "warn_deny_leftovers.yaml:18:5: tools.write_file.observe is ignored: "
             "tools.write_file is deny, nothing is observed",
        DATA "warn_deny_leftovers.yaml:17:5: tools.write_file.fallback is ignored: "
             "tools.write_file is deny, no token is issued",
    };

    (void)state;
    assert_int_equal(policy_warning_count(p), 4);
    for (size_t i = 0; i < 4; i++) {
        policy_error_format(policy_warning(p, i), got, sizeof(got));
        assert_string_equal(got, want[i]);
    }
    assert_null(policy_warning(p, 4));
    for (size_t i = 0; i < 2; i++) {
        policy_lookup(p, i ? "write_file" : "delete_file", i ? 10 : 11, &d);
        assert_int_equal(d.action, POLICY_DENY);
        assert_null(d.observe);
        assert_false(d.token_fallback);
    }
    policy_unref(p);

    /* the same keys on an allow tool are still errors */
    static const char allow[] = "version: 1\n"
                                "tools:\n"
                                "  t:\n"
                                "    action: allow\n"
                                "    fallback: token\n";
    struct policy_error err;
    assert_int_equal(policy_load_buffer("inline", allow, sizeof(allow) - 1, &p, &err), -1);
    assert_int_equal(err.line, 5);
}

/* What only looks like a back-reference loads, and means what glibc reads: an escaped
 * backslash then '1', and '\' or '1' in a bracket expression, which the whole value must match (bad_regex_backref*.yaml refuse
 * the real ones). */
static void test_regex_backref_lookalikes(void **state)
{
    static const char text[] = "version: 1\n"
                               "tools:\n"
                               "  t:\n"
                               "    action: confirm\n"
                               "    args:\n"
                               "      a: {regex: '\\\\1[\\1]'}\n";
    struct policy *p = load_buf_ok(text, sizeof(text) - 1);
    size_t n = 0;
    const struct policy_arg *a = policy_tool_args(p, "t", 1, &n);

    (void)state;
    assert_int_equal(n, 1);
    assert_string_equal(a[0].regex, "\\\\1[\\1]");
    size_t steps = 1000;
    assert_int_equal(ere_match(a[0].regex_re, "\\1\\", 3, &steps), ERE_MATCH);
    assert_int_equal(ere_match(a[0].regex_re, "\\11", 3, &steps), ERE_MATCH);
    assert_int_equal(ere_match(a[0].regex_re, "\\1", 2, &steps), ERE_NOMATCH);
    policy_unref(p);
}

/* A '~' that does not start a pattern is an ordinary byte (editor backups, "~user" dirs); the
 * refused glob syntax is tested by bad_glob_{braces,brackets,backslash,tilde}.yaml. */
static void test_glob_tilde_inside_loads(void **state)
{
    static const char text[] = "version: 1\n"
                               "tools:\n"
                               "  t:\n"
                               "    action: confirm\n"
                               "    args:\n"
                               "      a: {deny_glob: [\"**/*~\", \"/home/~u/**\", \"/?.txt\"]}\n";
    struct policy *p = load_buf_ok(text, sizeof(text) - 1);
    size_t n = 0;
    const struct policy_arg *a = policy_tool_args(p, "t", 1, &n);

    (void)state;
    assert_int_equal(n, 1);
    assert_int_equal(a[0].n_deny_glob, 3);
    assert_string_equal(a[0].deny_glob[1], "/home/~u/**");
    policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fallback_and_hide_denied),
        cmocka_unit_test(test_strict_and_where),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_lookup_uses_len),
        cmocka_unit_test(test_tool_list),
        cmocka_unit_test(test_ok_fixtures_all_used),
        cmocka_unit_test(test_example_policy),
        cmocka_unit_test(test_bad_fixtures),
        cmocka_unit_test(test_bad_fixtures_all_listed),
        cmocka_unit_test(test_buffer_good),
        cmocka_unit_test(test_buffer_len_is_honoured),
        cmocka_unit_test(test_buffer_errors),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_error_quoting),
        cmocka_unit_test(test_buffer_size_limit),
        cmocka_unit_test(test_buffer_null_name_and_err),
        cmocka_unit_test(test_max_tools),
        cmocka_unit_test(test_file_missing),
        cmocka_unit_test(test_file_directory),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_error_format),
        cmocka_unit_test(test_ref_unref),
        cmocka_unit_test(test_reload_keeps_old_policy),
        cmocka_unit_test(test_tool_args),
        cmocka_unit_test(test_number_cmp),
        cmocka_unit_test(test_strict_args),
        cmocka_unit_test(test_deny_leftovers_warn),
        cmocka_unit_test(test_pins),
        cmocka_unit_test(test_regex_backref_lookalikes),
        cmocka_unit_test(test_glob_tilde_inside_loads),
    };

    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
