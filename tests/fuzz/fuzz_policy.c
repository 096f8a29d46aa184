/* fuzz_policy.c: policy_load_buffer on any bytes (policy/policy.c, policy/ynode.c), then the
 * lookups and argument rules (proxy/rules.c) of whatever loaded.
 *
 * Properties: no crash, leak, undefined behaviour or hang. A refusal leaves *out NULL and says
 * why, at a line of the input (or line 0; or one past the last line, where libyaml puts the end
 * of the stream). A loaded policy answers every lookup:
 * each named tool has the rule "tools.<name>" and its own argument rules, a name the policy does
 * not hold gets "defaults.action", and rules_check on calls built from the tool's own argument
 * names always gives a verdict with a rule name when it is not a pass. */
#include "fuzz.h"

#include "jsonrpc.h"
#include "policy.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned count_lines(const uint8_t *data, size_t size)
{
    unsigned n = 1;
    for (size_t i = 0; i < size; i++)
        n += data[i] == '\n' || (data[i] == '\r' && (i + 1 == size || data[i + 1] != '\n'));
    return n;
}

/* One call for tool with each of its declared arguments set to value (JSON text). */
static void check_call(const struct policy *p, const char *tool, size_t len,
                       const struct policy_arg *args, size_t nargs, const char *value)
{
    struct sl_arena *a = sl_arena_new();
    struct json *obj = json_new_object(a), *v;
    char err[160];
    FUZZ_CHECK(json_parse(value, strlen(value), a, &v, err, sizeof(err)) == 0);
    for (size_t i = 0; i < nargs; i++)
        json_set_key(a, obj, (struct sl_str){ args[i].name, args[i].len }, v);
    struct rules_result r;
    rules_check(p, tool, len, obj, &r);
    FUZZ_CHECK(r.outcome == RULES_PASS || r.outcome == RULES_DENY || r.outcome == RULES_ESCALATE);
    FUZZ_CHECK(memchr(r.rule, '\0', sizeof(r.rule)) && memchr(r.why, '\0', sizeof(r.why)));
    if (r.outcome != RULES_PASS)
        FUZZ_CHECK(r.rule[0] != '\0');
    rules_check(p, tool, len, v, &r); /* arguments that are not an object */
    sl_arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct policy *p = (struct policy *)1;
    struct policy_error err;
    if (policy_load_buffer("fuzz.yaml", (const char *)data, size, &p, &err) != 0) {
        FUZZ_CHECK(p == NULL);
        FUZZ_CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        /* libyaml places an error at the end of the stream on the line after the last one */
        FUZZ_CHECK(err.line <= count_lines(data, size) + 1);
        char line[600];
        policy_error_format(&err, line, sizeof(line));
        FUZZ_CHECK(strncmp(line, "fuzz.yaml", 9) == 0);
        return 0;
    }
    FUZZ_CHECK(p != NULL);
    struct policy *ref = policy_ref(p);
    (void)policy_hide_denied(p);
    static const char *const values[] = { "\"/tmp/a.txt\"", "\"../../etc/passwd\"", "\"\"", "5",
                                          "-1.5e3", "true", "null", "[\"/etc\",\"x\"]", "{}",
                                          "\"a\\u0000b\"", "\"~/x\"", "\"/s/%2e%2E%5c..\\\\C:x. %2\"",
                                          "\"%252e%ff%00\"", "\"file://h/a;b/..?c#d\"" };
    size_t n = policy_tool_count(p);
    for (size_t i = 0; i < n; i++) {
        const char *name = policy_tool_name(p, i);
        FUZZ_CHECK(name != NULL && name[0] != '\0');
        size_t len = strlen(name);
        struct policy_decision d;
        policy_lookup(p, name, len, &d);
        FUZZ_CHECK(d.rule != NULL && strncmp(d.rule, "tools.", 6) == 0 &&
                   strcmp(d.rule + 6, name) == 0);
        FUZZ_CHECK(d.action == POLICY_ALLOW || d.action == POLICY_CONFIRM ||
                   d.action == POLICY_DENY);
        FUZZ_CHECK(!(d.irreversible && d.action == POLICY_ALLOW));
        FUZZ_CHECK(!(d.token_fallback && (d.irreversible || d.action != POLICY_CONFIRM)));
        FUZZ_CHECK(d.confirm_ttl >= 1 && d.confirm_ttl <= POLICY_TTL_MAX);
        size_t nargs;
        const struct policy_arg *args = policy_tool_args(p, name, len, &nargs);
        FUZZ_CHECK((args == NULL) == (nargs == 0));
        (void)policy_tool_message(p, name, len);
        for (size_t k = 0; k < SL_ARRAY_LEN(values); k++)
            check_call(p, name, len, args, nargs, values[k]);
    }
    struct policy_decision d;
    policy_lookup(p, "\x01not a tool name", 16, &d); /* control characters: never a tool */
    FUZZ_CHECK(strcmp(d.rule, "defaults.action") == 0);
    FUZZ_CHECK(policy_tool_name(p, n) == NULL);
    policy_unref(ref);
    policy_unref(p);
    return 0;
}
