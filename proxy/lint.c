/* lint.c: compare the policy with a server's tools/list. */
#include "lint.h"

#include <stdio.h>
#include <string.h>

#include "confirm.h"

static bool lists(const struct json *tools, const char *name)
{
    for (size_t i = 0; i < tools->u.arr.n; i++)
        if (json_str_is(json_get(tools->u.arr.v[i], "name"), name))
            return true;
    return false;
}

/* MCP 2025-11-25 §tools: readOnlyHint defaults to false, destructiveHint to true. */
static bool may_destroy(const struct json *tool)
{
    const struct json *ann = json_get(tool, "annotations");
    if (json_is_true(json_get(ann, "readOnlyHint")))
        return false;
    const struct json *d = json_get(ann, "destructiveHint");
    return !(d && d->type == JSON_BOOL && !d->u.b);
}

struct lint_counts lint_check(const struct policy *p, const struct json *tools, bool complete,
                              lint_cb *cb, void *arg)
{
    struct lint_counts n = { 0, 0 };
    char msg[600];
    if (tools == NULL || tools->type != JSON_ARRAY)
        return n;
    for (size_t i = 0; complete && i < policy_tool_count(p); i++) {
        const char *name = policy_tool_name(p, i);
        if (lists(tools, name))
            continue;
        n.missing++;
        struct sl_buf q = { 0 };
        confirm_neutralize(&q, sl_str_c(name), 128);
        snprintf(msg, sizeof(msg), "the policy names tool \"%s\", which the server does not list",
                 q.p ? q.p : "");
        sl_buf_free(&q);
        cb(arg, true, msg);
    }
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        const struct json *name = json_get(tools->u.arr.v[i], "name");
        if (name == NULL || name->type != JSON_STRING || !may_destroy(tools->u.arr.v[i]))
            continue;
        struct policy_decision d;
        policy_lookup(p, name->u.str.p, name->u.str.len, &d);
        if (d.action != POLICY_ALLOW || strcmp(d.rule, "defaults.action") != 0)
            continue;
        n.risky++;
        struct sl_buf q = { 0 };
        confirm_neutralize(&q, name->u.str, 128);
        snprintf(msg, sizeof(msg),
                 "server tool \"%s\" may change or destroy data (its annotations do not say "
                 "read-only) and the policy allows it by default; name it under tools:",
                 q.p ? q.p : "");
        sl_buf_free(&q);
        cb(arg, false, msg);
    }
    return n;
}
