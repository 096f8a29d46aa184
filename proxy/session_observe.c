/* session_observe.c: gated calls waiting for their observe call (policy observe:, observe.h).
 *
 * Before the question, the observe tool reads the target and the person is asked about the
 * state it read (on_observed decides again with the observation). After the accept, it reads
 * again, and the call is forwarded only if the digest of what it reads is still the one the
 * person saw. An observation ends with its read's answer (on_observed), its timer, the client's
 * cancellation (observation_cancel) or the session's end (observation_free_all); every end goes
 * through observation_free, which cancels the read if it is still out. */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <openssl/crypto.h>

#include "observe.h"
#include "rules.h"

/* A gated call waiting for its observe call (see observe.h). */
struct observation {
    struct session *s;
    struct jsonrpc_msg *msg;        /* the call, owned */
    char *client_id;
    bool modern;
    struct gate_verdict v;          /* owned: GATE_OBSERVE, or the accepted GATE_FORWARD */
    struct up_request *req;
    struct event *timeout_ev;       /* an observe call gets OBSERVE_TIMEOUT_SECONDS */
    struct observation *prev, *next;
};

#define OBSERVE_TIMEOUT_SECONDS 30

static void observation_free(struct observation *o)
{
    struct session *s = o->s;
    if (o->prev)
        o->prev->next = o->next;
    else
        s->observations = o->next;
    if (o->next)
        o->next->prev = o->prev;
    if (o->req && session_up(s))
        upstream_cancel(session_up(s), o->req, "the call was dropped");
    if (o->timeout_ev)
        event_free(o->timeout_ev);
    gate_verdict_free(&o->v);
    jsonrpc_msg_free(o->msg);
    free(o->client_id);
    free(o);
    session_maybe_reap(s);
}

static void observation_refuse(struct observation *o, const char *reason, const char *text)
{
    struct sl_str tool = json_get(o->msg->params, "name")->u.str;
    session_audit(o->s, tool, o->v.has_digest ? o->v.digest : NULL, AUDIT_REFUSED, reason,
                  AUDIT_UP_NOT_FORWARDED, o->client_id);
    session_reply_tool_error(o->s, sl_str_c(o->client_id), o->modern, text);
    observation_free(o);
}

#define OBSERVE_FAILED_TEXT                                                                    \
    "sluice could not read the current state with the observe tool, so the call was not run."
/* Not "changed" nor "unchanged": an error other than "no such file" says nothing about the
 * target, so sluice can neither show it to the person nor check it after the accept. */
#define OBSERVE_TOOL_ERROR_TEXT                                                                \
    "sluice could not read the current state with the observe tool (it answered with an "      \
    "error), so it cannot show or check the target, and the call was not run."

static void on_observed(struct jsonrpc_msg *reply, const char *why, void *arg)
{
    struct observation *o = arg;
    struct session *s = o->s;
    o->req = NULL;
    const struct policy_observe *ob = o->v.observe;
    const struct json *res = reply && reply->kind == JSONRPC_RESULT ? reply->result : NULL;
    bool ok = observe_ok(res);
    bool tool_error = res && json_is_true(json_get(res, "isError"));
    session_audit(s, sl_str_c(ob->tool), NULL, AUDIT_OBSERVE,
                  o->v.recheck ? "after-accept" : "before-question",
                  reply == NULL ? AUDIT_UP_NO_RESPONSE : tool_error ? AUDIT_UP_TOOL_ERROR
                  : !ok ? AUDIT_UP_ERROR : AUDIT_UP_OK,
                  o->client_id);
    uint8_t digest[OBSERVE_DIGEST_LEN];
    if (!ok || observe_digest(res, digest) != 0)
        return observation_refuse(o, "observe-failed", tool_error ? OBSERVE_TOOL_ERROR_TEXT
                                                                  : OBSERVE_FAILED_TEXT);
    struct jsonrpc_msg *m = o->msg;
    struct sl_str id = sl_str_c(o->client_id);
    if (o->v.recheck) {
        if (CRYPTO_memcmp(digest, o->v.observed, sizeof(digest)) != 0)
            return observation_refuse(o, "changed-since-approved",
                                      "The target changed since you approved this call (what the "
                                      "observe tool reads is different now), so it was not run. "
                                      "Call the tool again to be asked about the current state.");
        if (call_forward(s, m, o->modern, json_get(m->params, "name")->u.str, &o->v,
                         o->client_id))
            o->msg = NULL; /* the forwarded call owns it now */
        observation_free(o);
        return;
    }
    struct gate_observation seen;
    struct sl_buf summary = { 0 };
    memcpy(seen.digest, digest, sizeof(digest));
    observe_summary(&summary, ob->tool, res, json_get(m->params, "arguments"));
    seen.summary = sl_buf_str(&summary);
    struct gate_input in;
    call_input(s, m, o->modern, call_caps(m), &in);
    in.observed = &seen;
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    sl_buf_free(&summary);
    if (v.action == GATE_OBSERVE) /* cannot happen with an observation; fail closed */
        v.action = GATE_REFUSE_RPC, v.rpc_code = JSONRPC_INTERNAL_ERROR,
        v.rpc_message = "internal error", v.rpc_data = NULL;
    if (call_act(s, m, id, o->modern, &v))
        o->msg = NULL; /* held or forwarded: that owns it now */
    gate_verdict_free(&v);
    observation_free(o);
}

static void on_observe_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct observation *o = arg;
    observation_refuse(o, "observe-timeout", "The observe tool did not answer in time, so the "
                                             "call was not run.");
}

#define SESSION_MAX_OBSERVING 32  /* gated calls of one client waiting for their observe call */

bool observation_has_id(const struct session *s, struct sl_str id)
{
    for (const struct observation *o = s->observations; o; o = o->next)
        if (sl_str_eq_c(id, o->client_id))
            return true;
    return false;
}

size_t observation_count(const struct session *s)
{
    size_t n = 0;
    for (const struct observation *o = s->observations; o; o = o->next)
        n++;
    return n;
}

void observation_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                       struct gate_verdict *v)
{
    size_t busy = observation_count(s);
    struct observation *o = sl_xcalloc(1, sizeof(*o));
    o->timeout_ev = evtimer_new(s->base, on_observe_timeout, o);
    struct timeval tv = { OBSERVE_TIMEOUT_SECONDS, 0 };
    evtimer_add(o->timeout_ev, &tv);
    o->s = s;
    o->msg = m;
    o->client_id = sl_xstrndup(id.p, id.len);
    o->modern = modern;
    /* v.observe points into the policy that made v: this one, unless v waited for the store
     * (then v holds its own, from then) */
    gate_verdict_pin(v, s->env->policy);
    o->v = *v;                     /* take the verdict's buffers and its policy */
    v->pinned = NULL;
    memset(&v->args_json, 0, sizeof(v->args_json));
    memset(&v->text, 0, sizeof(v->text));
    memset(&v->state, 0, sizeof(v->state));
    memset(&v->token, 0, sizeof(v->token));
    memset(&v->upstream_state, 0, sizeof(v->upstream_state));
    o->next = s->observations;
    if (s->observations)
        s->observations->prev = o;
    s->observations = o;
    if (busy >= SESSION_MAX_OBSERVING)
        return observation_refuse(o, "too-many-observing",
                                  "Too many calls of this client are waiting for their observe "
                                  "call. The call was not run.");
    const char *why = "the upstream is gone";
    struct json *args = observe_args(m->arena, o->v.observe, json_get(m->params, "arguments"),
                                     &why);
    struct json *params = json_new_object(m->arena);
    json_set(m->arena, params, "name",
             json_new_string(m->arena, o->v.observe->tool, strlen(o->v.observe->tool)));
    /* The observe call is a call like any other: the read tool must be allowed, and allowed
     * for these arguments (its own rules), or what it reads would leak into the question. */
    struct policy_decision d;
    struct rules_result rr;
    const char *ob = o->v.observe->tool;
    policy_lookup(s->env->policy, ob, strlen(ob), &d);
    if (args)
        rules_check(s->env->policy, ob, strlen(ob), args, &rr);
    if (args && (d.action != POLICY_ALLOW || rr.outcome != RULES_PASS))
        return observation_refuse(o, "observe-denied",
                                  "The policy does not allow reading the target with the observe "
                                  "tool for these arguments, so the call was not run.");
    if (args) {
        json_set(m->arena, params, "arguments", args);
        if (upstream_era(session_up(s)) == ERA_MODERN)
            params = era_add_envelope(m->arena, params, NULL);
        o->req = upstream_request(session_up(s), SL_STR("tools/call"), params, on_observed, o);
    }
    if (o->req == NULL)
        observation_refuse(o, "observe-failed", "sluice could not run the observe tool, so "
                                                "the call was not run.");
}

static struct observation *observation_find(struct session *s, const struct json *client_id)
{
    struct sl_buf b = { 0 };
    if (!session_id_text(client_id, &b))
        return NULL;
    struct observation *o = s->observations;
    while (o && strcmp(o->client_id, b.p) != 0)
        o = o->next;
    sl_buf_free(&b);
    return o;
}

bool observation_cancel(struct session *s, struct jsonrpc_msg *m)
{
    struct observation *o = observation_find(s, json_get(m->params, "requestId"));
    if (o == NULL)
        return false;
    session_audit(s, json_get(o->msg->params, "name")->u.str,
                  o->v.has_digest ? o->v.digest : NULL, AUDIT_CANCELLED, "client-cancelled",
                  AUDIT_UP_NOT_FORWARDED, o->client_id);
    /* Cancelled during the re-check: its state is spent and nothing ran. Said so in the store,
     * a retry of the accept is refused as a replay at once, as after any refusal that follows
     * an accept, instead of waiting for an outcome that never comes. */
    if (o->v.recheck)
        spend_settle(s, sl_str_c(o->client_id));
    observation_free(o);
    return true;
}

void observation_free_all(struct session *s, bool keep_approved)
{
    struct observation *next;
    for (struct observation *o = s->observations; o; o = next) {
        next = o->next;
        if (!(keep_approved && o->v.recheck)) /* a recheck follows an accept: it goes on */
            observation_free(o);
    }
}
