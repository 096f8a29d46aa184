/* session_pin.c: tool pins (pin.h) where sessions meet them: the gate's input gets the tool's
 * live definition, a tools/list reply loses the tools whose pin refuses them, and every refusal
 * is logged and counted (the journal record comes with the call's, or is written here for a
 * listing). The same for every client: what is hidden depends only on the policy and on what
 * the upstream listed. */
#include "session_priv.h"

#include <string.h>

#include "confirm.h"
#include "log.h"
#include "metrics.h"
#include "pin.h"

void pin_input(struct session *s, struct gate_input *in)
{
    uint8_t live[PIN_LEN];
    /* The definitions this session's own upstream listed (session_own.c), else the shared
     * upstream's: a session's own server that has not listed yet is the same program. */
    int got = pins_get(upstream_pins(session_up(s)), in->tool, live);
    if (got == 0 && session_up(s) != s->env->up)
        got = pins_get(upstream_pins(s->env->up), in->tool, live);
    in->listed = got != 0;
    in->has_definition = got == 1;
    if (got == 1)
        memcpy(in->definition, live, sizeof(in->definition));
}

void pin_refused(struct session *s, struct sl_str tool, const char *reason, bool listing)
{
    struct sl_buf name = { 0 };
    confirm_neutralize(&name, tool, 128);
    sl_warn("pin: tool \"%s\" %s (%s)", name.p ? name.p : "",
            listing ? "left out of tools/list" : "call denied", reason);
    sl_buf_free(&name);
    metrics_pin_refusal(reason, listing);
}

bool pin_hides(struct session *s, const struct json *tool)
{
    const struct json *name = json_get(tool, "name");
    if (name == NULL || name->type != JSON_STRING)
        return false;
    struct policy_decision d;
    policy_lookup(s->env->policy, name->u.str.p, name->u.str.len, &d);
    if (d.action == POLICY_DENY && !policy_hide_denied(s->env->policy))
        return false; /* listed as any deny tool is; its calls are refused anyway */
    /* Judged on the very definition being relayed, which the registry also holds by now. */
    uint8_t live[PIN_LEN];
    bool ok = pin_digest(tool, live) == 0;
    enum pin_status st = pin_check(s->env->policy, name->u.str, ok ? live : NULL, true);
    if (!pin_refuses(st))
        return false;
    pin_refused(s, name->u.str, pin_reason(st), true);
    session_audit(s, name->u.str, NULL, AUDIT_DENY, pin_reason(st), AUDIT_UP_NOT_FORWARDED, NULL);
    return true;
}
