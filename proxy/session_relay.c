/* session_relay.c: upstream out and back. A client request goes upstream as a struct fwd,
 * and its reply comes back to the client under the client's own id, rewritten for the client's
 * era. When a modern upstream asks its own questions about a legacy client's request
 * (input_required), each question goes to the client as a request of ours (struct relayed), and
 * the call is sent again with the answers (PROTOCOL.md §7.7). A legacy upstream's own
 * requests (elicitation, sampling, roots) are relayed the same way, back under its id.
 *
 * A fwd ends with the upstream's reply (on_fwd_reply), a retry that cannot go out, the client's
 * error for a relayed question, its cancellation (fwd_cancel) or its leaving (fwd_free_all);
 * each through fwd_free, which drops the questions still out for it. */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>

#include "lint.h"
#include "log.h"
#include "msg.h"

/* A request forwarded upstream and not yet answered. It lives in its message's arena, and owns
 * the message: the request's own strings and the params as sent need no copies. */
struct fwd {
    struct session *s;
    struct jsonrpc_msg *msg;  /* the client's request, owned */
    struct up_request *req;
    char *client_id;          /* the client's id as JSON text, echoed byte for byte */
    char *method;
    bool modern;              /* the client is modern on this request */
    bool is_call;             /* tools/call: audited when the upstream answers */
    char *tool;
    size_t tool_len;
    bool has_digest;
    uint8_t digest[32];
    enum audit_decision decision;
    const char *reason;
    bool gated;               /* an approved gated call: an upstream question is wrapped */
    bool observed;            /* its tool observes: later rounds need the observation again */
    uint8_t observation[32];
    uint8_t definition[32];   /* gated: the tool's definition when it was forwarded (zero:
                               * not known), which a later round must still find */
    unsigned ttl;
    bool keep;                /* approved, its nonce spent: it runs on if the client leaves */
    struct awaited *outcome;  /* ... and the store waits for its reply: the states it spent,
                               * the accept's and each later round's (spend_claim), or NULL */
    /* A legacy client and a modern upstream: the upstream's own questions are asked
     * as requests to the client, and sluice retries with the answers (PROTOCOL.md §7.7). */
    const struct json *sent;  /* the params as forwarded (in msg's arena), kept for a retry */
    bool sent_owned;          /* ... with a _meta of its own, not the session's envelope */
    struct sl_arena *round;   /* this round's answers, and its state */
    struct json *answers;     /* inputResponses being collected */
    struct json *round_state; /* the upstream's requestState, or NULL */
    unsigned pending;         /* questions of this round still unanswered */
    unsigned rounds;
    /* The round's questions get no answer within its time (relay_round): the call ends. The
     * server waits for nothing then, so --upstream-timeout does not bound it; without this a
     * client that never answers would hold the call, its request and its session for ever. */
    struct event *round_timer;
    unsigned round_ttl;
    /* Kept after its client left (keep), and not parked: a server that keeps talking (progress)
     * is never silent, so nothing else would end it. It ends --upstream-timeout after the
     * client left (fwd_free_all), as a parked orphan does (session_park.c). */
    struct event *orphan_timer;
    /* A modern client and a legacy upstream that asks during the call (session_park.c). */
    struct park *park;        /* the call is parked between the client's rounds, or NULL */
    struct session *to;       /* the session whose request the reply answers; NULL: s */
    struct json *note_meta;   /* that request's progressToken and logLevel; NULL: msg's */
    const struct json *client_params; /* unsent: the params as the client's era has them */
    bool unsent;              /* waiting for the session's own upstream to be ready */
    struct fwd *prev, *next;
};

/* Where the reply goes: the request that took the parked call over, or the one that made it. */
static struct session *fwd_to(const struct fwd *f)
{
    return f->to ? f->to : f->s;
}

#define FWD_MAX_ROUNDS 8      /* upstream question rounds per call (as SDK2's shim) */

/* A request from a legacy upstream (elicitation, sampling, roots) passed on to the client
 * under an id of ours, so its answer can go back under the upstream's id. */
struct relayed {
    char id[32];                    /* "sluice-u-N", what the client sees */
    char *up_id;                    /* the upstream's id, JSON text; or NULL with: */
    struct fwd *fwd;                /* ... the call whose modern round this question is */
    char *key;                      /* ... and its key in inputRequests */
    /* A legacy server's question (up_id) is tied to no call sluice can name: it ends at this
     * timer, an answer or the server's withdrawal. Without it a question the client never
     * answers, after the server gave up on it, kept the session busy (never idle) for ever. */
    struct session *s;
    struct event *timer;
    struct relayed *next;
};

/* ===== replies from the upstream ===== */

void relayed_answer_error(struct session *s, struct sl_str up_id, int code, const char *message)
{
    struct sl_buf b = { 0 };
    jsonrpc_write_error(&b, up_id, code, message, NULL);
    upstream_send_line(session_up(s), sl_buf_str(&b));
    sl_buf_free(&b);
}

static void relayed_free(struct session *s, struct relayed **pp)
{
    struct relayed *r = *pp;
    *pp = r->next;
    s->nrelayed--;
    if (r->timer)
        event_free(r->timer);
    free(r->up_id);
    free(r->key);
    free(r);
}

/* The questions sent for f's round are void once f is gone. */
/* f's questions still open at the client go with f. A client still there is told (our own
 * notifications/cancelled, on the call's stream), or it would go on asking a person a question
 * nobody waits for any more: the call ended by another question's error answer or by the
 * client's cancel. Called before the call's reply, which ends its stream over HTTP. */
static void drop_relayed_for(struct session *s, struct fwd *f)
{
    struct relayed **pp = &s->relayed;
    while (*pp) {
        if ((*pp)->fwd != f) {
            pp = &(*pp)->next;
            continue;
        }
        if (!s->gone) {
            struct sl_buf b = { 0 };
            msg_cancelled(&b, (*pp)->id, "the call this request was about has ended");
            session_send_line(s, sl_str_c(f->client_id), false, sl_buf_str(&b));
            sl_buf_free(&b);
        }
        relayed_free(s, pp);
    }
}

static void fwd_free(struct fwd *f)
{
    struct session *s = f->s;
    if (f->round_timer)
        event_free(f->round_timer);
    if (f->orphan_timer)
        event_free(f->orphan_timer);
    if (f->park)
        park_forget(f->park);
    if (f->outcome) /* sluice is stopping: no reply comes, and none is kept */
        awaited_free(f->outcome);
    drop_relayed_for(f->s, f);
    sl_arena_free(f->round);
    if (f->prev)
        f->prev->next = f->next;
    else
        f->s->fwds = f->next;
    if (f->next)
        f->next->prev = f->prev;
    jsonrpc_msg_free(f->msg); /* f with it */
    session_maybe_reap(s);
}

/* A forwarded tools/call's journal record, once its outcome upstream is known. */
static void fwd_audit(struct fwd *f, enum audit_upstream outcome)
{
    if (f->is_call)
        session_audit(f->s, (struct sl_str){ f->tool, f->tool_len },
                      f->has_digest ? f->digest : NULL, f->decision, f->reason, outcome,
                      f->client_id);
}

/* asks: the result is an input_required round (the caller looked once for all). */
static enum audit_upstream call_outcome(const struct jsonrpc_msg *m, bool asks)
{
    if (m == NULL)
        return AUDIT_UP_NO_RESPONSE;
    if (m->kind == JSONRPC_ERROR)
        return AUDIT_UP_ERROR;
    if (asks)
        return AUDIT_UP_INPUT_REQUIRED;
    return json_is_true(json_get(m->result, "isError")) ? AUDIT_UP_TOOL_ERROR : AUDIT_UP_OK;
}

/* True iff v is a number written exactly as code is (the literal, as the peer sent it). */
static bool number_is(const struct json *v, int code)
{
    char text[16];
    snprintf(text, sizeof(text), "%d", code);
    return v && v->type == JSON_NUMBER && sl_str_eq_c(v->u.num, text);
}

/* The upstream's error m as f's client gets it, into b; returns its code (0: not a number). */
static int error_line(struct fwd *f, struct jsonrpc_msg *m, struct sl_buf *b)
{
    struct json *code = json_get(m->error, "code");
    /* 2026 servers never emit MCP_RESOURCE_NOT_FOUND; it became JSONRPC_INVALID_PARAMS. */
    if (f->modern && number_is(code, MCP_RESOURCE_NOT_FOUND)) {
        char text[16];
        snprintf(text, sizeof(text), "%d", JSONRPC_INVALID_PARAMS);
        json_set(m->arena, m->error, "code", json_new_number(m->arena, text));
    }
    msg_error_value(b, sl_str_c(f->client_id), m->error);
    return code && code->type == JSON_NUMBER
               ? atoi(sl_arena_strndup(m->arena, code->u.num.p, code->u.num.len)) : 0;
}

static void relay_error(struct fwd *f, struct jsonrpc_msg *m)
{
    struct sl_buf b = { 0 };
    int code = error_line(f, m, &b);
    session_send(fwd_to(f), sl_str_c(f->client_id), true, code, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* The upstream's result res as f's client's era has it. */
static struct json *result_in_era(struct fwd *f, struct jsonrpc_msg *m, struct json *res)
{
    enum era up = upstream_era(session_up(f->s));
    if (f->modern && up == ERA_LEGACY)
        return era_result_to_modern(m->arena, sl_str_c(f->method), res);
    if (!f->modern && up == ERA_MODERN)
        return era_result_to_legacy(m->arena, res);
    return res;
}

/* tools/list: without task support, with defaults.hide_denied without the denied tools and the
 * names that read as a policy tool's without being it (gate_hides_listed), and without the tools
 * whose pin refuses their listed definition (session_pin.c), for every client alike (the list
 * depends only on the policy and the upstream, never on the caller). Annotations are not
 * consulted. */
void session_log_finding(void *arg, bool missing, const char *message)
{
    static struct sl_buf seen;
    (void)arg;
    (void)missing;
    if (seen.len > (64u << 10) || (seen.p && strstr(seen.p, message)))
        return;
    sl_buf_puts(&seen, message);
    sl_buf_putc(&seen, '\n');
    sl_warn("policy check: %s", message);
}

static struct json *filter_tools(struct session *s, struct jsonrpc_msg *m, struct json *res)
{
    const struct json *tools = json_get(res, "tools");
    if (tools == NULL || tools->type != JSON_ARRAY)
        return res;
    lint_check(s->env->policy, tools, false, session_log_finding, NULL);
    struct json *kept = json_new_array(m->arena);
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        struct json *tool = tools->u.arr.v[i];
        const struct json *name = json_get(tool, "name");
        if (name && name->type == JSON_STRING && gate_hides_listed(s->env->policy, name->u.str))
            continue;
        if (pin_hides(s, tool)) /* a definition that is not the pinned one is not served */
            continue;
        if (json_get(tool, "execution")) { /* task support: see upstream_caps */
            tool = json_copy_object(m->arena, tool);
            json_del(tool, "execution");
        }
        json_push(m->arena, kept, tool);
    }
    struct json *r = json_copy_object(m->arena, res);
    json_set(m->arena, r, "tools", kept);
    return r;
}

/* The upstream asked its own question about an approved call (PROTOCOL.md §2.8): its state goes
 * inside ours, so the client's next round passes the gate again, bound to the same arguments
 * and to the tool's definition when the call was forwarded (the one the person approved), not
 * the one sluice knows now: a definition that changed while the call ran, before the server
 * asked, refuses the next round (same_definition), as a legacy client's retry is refused. */
static int wrap_upstream_question(struct fwd *f, struct jsonrpc_msg *m)
{
    struct json *res = json_copy_object(m->arena, m->result);
    const struct json *st = json_get(res, "requestState");
    struct sl_str inner = st && st->type == JSON_STRING ? st->u.str : SL_STR("");
    struct sl_buf mine = { 0 };
    int rc = gate_wrap_upstream_state(f->s->env->gate, sl_str_c(f->s->principal),
                                      (struct sl_str){ f->tool, f->tool_len }, f->digest, f->ttl,
                                      gate_clock(), f->observed ? f->observation : NULL,
                                      f->definition, inner, true, &mine);
    if (rc == 0) {
        json_set(m->arena, res, "requestState", json_new_string(m->arena, mine.p, mine.len));
        m->result = res;
    }
    sl_buf_free(&mine);
    return rc;
}

/* An upstream round of a gated call that asks under sluice's own key: the client's answer to it
 * could not be told from an answer to sluice's question (approved_params drops that key on the
 * way back), so it is never shown; the call fails instead. */
static bool round_uses_reserved_key(const struct jsonrpc_msg *m)
{
    return json_get(json_get(m->result, "inputRequests"), GATE_CONFIRM_KEY) != NULL;
}

static int relay_round(struct fwd *f, struct jsonrpc_msg *m);

/* f ends with no reply for its client (the client cancelled it, left while the server asked it
 * something, or its parked round ended), and the server may have run it: a retry of a state f
 * spent is told so now, not after polling the store for a reply that never comes
 * (session_spend.c). */
static void fwd_settle_unknown(struct fwd *f, const char *why)
{
    if (f->outcome == NULL)
        return;
    char text[400];
    snprintf(text, sizeof(text), "This call was approved and sent to the server, then ended "
             "before its result came (%s). Whether it ran is unknown; sluice did not run it "
             "again.", why ? why : "cancelled");
    struct sl_buf r = { 0 }, b = { 0 };
    msg_tool_error(&r, f->modern, sl_str_c(text));
    jsonrpc_write_result(&b, sl_str_c(f->client_id), sl_buf_str(&r));
    spend_settle_claimed(f->s, f->outcome, sl_buf_str(&b));
    f->outcome = NULL;
    sl_buf_free(&r);
    sl_buf_free(&b);
}

/* The final message sent to f's client next is f's reply, whatever ended f: kept as the outcome
 * of the states f spent, so a retry of one gets it (session_spend.c). Not matched by id text,
 * which another request of the client's may reuse while f runs. */
static void fwd_settle_next(struct fwd *f)
{
    fwd_to(f)->settling = f->outcome;
    f->outcome = NULL;
}

static void on_fwd_reply(struct jsonrpc_msg *m, const char *why, void *arg)
{
    struct fwd *f = arg;
    f->req = NULL;
    if (f->park && park_keep_reply(f->park, m, why))
        return; /* nobody is waiting for it yet: the client's next round gets it */
    fwd_deliver(f, m, why);
}

void fwd_deliver(struct fwd *f, struct jsonrpc_msg *m, const char *why)
{
    struct session *s = fwd_to(f);
    struct sl_str id = sl_str_c(f->client_id);
    f->req = NULL;
    bool asks = m && m->kind == JSONRPC_RESULT &&
                json_str_is(json_get(m->result, "resultType"), "input_required");
    if (asks && f->sent && f->rounds < FWD_MAX_ROUNDS && !f->observed && relay_round(f, m) == 0)
        return; /* the client is being asked; the call goes on */
    fwd_settle_next(f);
    bool reserved = asks && f->gated && f->modern && round_uses_reserved_key(m);
    if (reserved) { /* journaled as what sluice did with the round, not as the accept before it */
        f->decision = AUDIT_REFUSED;
        f->reason = "upstream-reserved-key";
    }
    /* queued for its own upstream, which went before it was ready: never sent */
    fwd_audit(f, m == NULL && f->unsent ? AUDIT_UP_UNAVAILABLE : call_outcome(m, asks));
    if (m == NULL) {
        session_reply_error(s, id, JSONRPC_INTERNAL_ERROR, why, NULL);
    } else if (m->kind == JSONRPC_ERROR) {
        relay_error(f, m);
    } else {
        if (asks && !f->modern) {
            /* A legacy client cannot carry a modern follow-up round, nor a gone one answer it. */
            session_reply_tool_error(s, id, false, s->gone
                ? "The server asked a follow-up question after the client went away; the call "
                  "did not complete."
                : "The server asked a follow-up question that sluice cannot relay on this "
                  "legacy connection; the call did not complete.");
            f->req = NULL;
            fwd_free(f);
            return;
        }
        if (reserved) {
            session_reply_error(s, id, JSONRPC_INTERNAL_ERROR, "the upstream asked a question "
                                "under sluice's own key \"" GATE_CONFIRM_KEY "\", which sluice "
                                "does not pass on; the call did not complete", NULL);
            fwd_free(f);
            return;
        }
        if (asks && f->gated && wrap_upstream_question(f, m) != 0) {
            session_reply_error(s, id, JSONRPC_INTERNAL_ERROR, "sluice could not seal the "
                                "upstream's question; the call must be started again", NULL);
            f->req = NULL;
            fwd_free(f);
            return;
        }
        struct json *res = m->result;
        if (strcmp(f->method, "tools/list") == 0)
            res = filter_tools(s, m, res);
        session_reply_value(s, id, result_in_era(f, m, res));
    }
    f->req = NULL;
    fwd_free(f);
}

/* ===== the upstream's own rounds, for a legacy client ===== */

const char *fwd_cap_for(struct sl_str method)
{
    if (sl_str_eq_c(method, "elicitation/create"))
        return "elicitation";
    if (sl_str_eq_c(method, "sampling/createMessage"))
        return "sampling";
    if (sl_str_eq_c(method, "roots/list"))
        return "roots";
    return NULL;
}

static struct json *copy_into(struct sl_arena *a, const struct json *v)
{
    struct sl_buf b = { 0 };
    struct json *out;
    char err[64];
    json_write(&b, v);
    SL_REQUIRE(json_parse(b.p, b.len, a, &out, err, sizeof(err)) == 0);
    sl_buf_free(&b);
    return out;
}

/* All answers are in: the same call again, with them and the upstream's state. */
static void on_fwd_note(struct jsonrpc_msg *note, void *arg);
static void round_fail(struct fwd *f, const char *why);

/* The call is sent again only as the gate would let it go now: a 2026-07-28 client's next round
 * passes the gate again (gate_decide), and a legacy client's retry is that round. So the retry
 * ends the call when the policy now refuses the tool or its arguments (a reload, a pin), when an
 * allowed call would now need a person's answer, and, for an approved call, when the tool's
 * definition changed while the server's question was open (a rug pull between rounds) or
 * sluice no longer knows it (same_definition in gate.c). Returns true when it ended f. */
static bool round_refused(struct fwd *f)
{
    if (!f->is_call)
        return false;
    struct session *s = f->s;
    struct gate_input in = {
        .policy = s->env->policy,
        .principal = sl_str_c(s->principal),
        .tool = { f->tool, f->tool_len },
        .args = json_get(f->sent, "arguments"),
        .can_elicit_form = true,
    };
    pin_input(s, &in);
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    uint8_t now[32] = { 0 };
    if (in.has_definition)
        memcpy(now, in.definition, sizeof(now));
    const char *text = NULL;
    bool refused = v.action == GATE_REFUSE || v.action == GATE_REFUSE_RPC;
    if (refused) {
        text = v.action == GATE_REFUSE && v.text.len ? v.text.p
                                                     : "The policy refuses this call now.";
        f->decision = v.decision;
        f->reason = v.reason ? v.reason : "policy-changed";
    } else if (!f->gated && (v.gated || v.action != GATE_FORWARD)) {
        text = "The policy now asks a person about this tool, and this call was not approved. "
               "It was not sent again. Call the tool again to be asked.";
        f->decision = AUDIT_REFUSED;
        f->reason = "policy-changed";
    } else if (f->gated && !sl_ct_equal(now, f->definition, sizeof(now))) {
        text = "The server changed this tool's definition (its description, input schema or "
               "annotations) after the person approved the call, so it was not sent again. Call "
               "the tool again to be asked about it as it is now.";
        f->decision = AUDIT_REFUSED;
        f->reason = "definition-changed";
    }
    if (text) {
        sl_warn("%s: a call the server asked about is refused before it is sent again (%s)",
                s->principal, f->reason);
        round_fail(f, text);
    }
    gate_verdict_free(&v);
    return text != NULL;
}

static void retry_round(struct fwd *f)
{
    struct session *s = f->s;
    if (f->round_timer) /* answered in time: the server has the call again */
        evtimer_del(f->round_timer);
    if (round_refused(f))
        return;
    struct json *params = json_copy_object(f->round, f->sent);
    json_set(f->round, params, "inputResponses", f->answers);
    if (f->round_state)
        json_set(f->round, params, "requestState", f->round_state);
    /* As the first time: the client's progressToken is replaced by our id for this request. */
    f->req = upstream_request_notes(session_up(s), sl_str_c(f->method), params, on_fwd_reply,
                                    on_fwd_note, f);
    if (f->req == NULL) {
        fwd_settle_next(f);
        session_reply_error(s, sl_str_c(f->client_id), JSONRPC_INTERNAL_ERROR,
                            "the upstream server is not running", NULL);
        fwd_free(f);
    }
}

/* f's open round ends without the client's answers (why: what the client is told): its other
 * questions are withdrawn, the call ends with an isError result, kept as the outcome of the
 * states it spent. The server is not waiting (it answered input_required): nothing to cancel. */
static void round_fail(struct fwd *f, const char *why)
{
    struct session *s = f->s;
    drop_relayed_for(s, f);
    fwd_settle_next(f);
    session_reply_tool_error(s, sl_str_c(f->client_id), false, why);
    fwd_audit(f, AUDIT_UP_INPUT_REQUIRED);
    fwd_free(f);
}

static void on_round_expired(evutil_socket_t fd, short what, void *arg)
{
    struct fwd *f = arg;
    (void)fd;
    (void)what;
    sl_info("%s: the client did not answer the server's question within %u s (confirm_ttl): "
            "the call ends", f->s->principal, f->round_ttl);
    char text[200];
    snprintf(text, sizeof(text), "The client did not answer the server's question within %u s; "
             "the call did not complete.", f->round_ttl);
    round_fail(f, text);
}

/* How long a round's questions stay open: the tool's confirm_ttl, as for a parked call
 * (session_park.c), which bounds the calls the policy allows too. */
static unsigned round_ttl(const struct fwd *f)
{
    if (f->gated)
        return f->ttl;
    struct policy_decision d;
    policy_lookup(f->s->env->policy, f->tool ? f->tool : "", f->tool ? f->tool_len : 0, &d);
    return d.confirm_ttl;
}

static void round_arm(struct fwd *f)
{
    if (f->round_timer == NULL) {
        f->round_timer = evtimer_new(f->s->base, on_round_expired, f);
        SL_REQUIRE(f->round_timer != NULL);
    }
    f->round_ttl = round_ttl(f);
    struct timeval tv = { (time_t)f->round_ttl, 0 };
    evtimer_add(f->round_timer, &tv);
}

/* Asks the client each of the upstream's questions as a request of ours. Returns -1 (nothing
 * sent) when the client cannot answer one of them, or has left (a state-only round needs no
 * answer, and goes on). */
static int relay_round(struct fwd *f, struct jsonrpc_msg *m)
{
    struct session *s = f->s;
    const struct json *reqs = json_get(m->result, "inputRequests");
    size_t n = reqs && reqs->type == JSON_OBJECT ? reqs->u.obj.n : 0;
    if ((reqs && reqs->type != JSON_OBJECT) || (s->gone && n > 0))
        return -1;
    if (s->nrelayed + n > SESSION_MAX_RELAYED)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct json *q = reqs->u.obj.v[i].val;
        const struct json *method = json_get(q, "method");
        const char *cap = method && method->type == JSON_STRING ? fwd_cap_for(method->u.str) : NULL;
        if (cap == NULL || !session_legacy_can(s, cap))
            return -1;
        /* JSON-RPC params are an object here: anything else would reach the client verbatim
         * as a request no client was written to expect. */
        const struct json *params = json_get(q, "params");
        if (params && params->type != JSON_OBJECT)
            return -1;
    }
    sl_arena_free(f->round);
    f->round = sl_arena_new();
    f->answers = json_new_object(f->round);
    const struct json *st = json_get(m->result, "requestState");
    f->round_state = st ? copy_into(f->round, st) : NULL;
    f->pending = (unsigned)n;
    f->rounds++;
    for (size_t i = 0; i < n; i++) {
        const struct json *q = reqs->u.obj.v[i].val;
        struct relayed *r = sl_xcalloc(1, sizeof(*r));
        snprintf(r->id, sizeof(r->id), "sluice-u-%llu", (unsigned long long)++s->next_relay);
        r->fwd = f;
        r->key = sl_xstrndup(reqs->u.obj.v[i].key.p, reqs->u.obj.v[i].key.len);
        r->next = s->relayed;
        s->relayed = r;
        s->nrelayed++;
        struct json *params = json_get(q, "params");
        if (params && params->type == JSON_OBJECT && !s->legacy_mode_field) {
            params = json_copy_object(m->arena, params); /* 2025-06-18 has no "mode" */
            json_del(params, "mode");
        }
        struct sl_buf b = { 0 }, pb = { 0 };
        if (params)
            json_write(&pb, params);
        msg_request(&b, r->id, json_get(q, "method")->u.str,
                    params ? sl_buf_str(&pb) : SL_STR_NULL);
        session_send_line(s, sl_str_c(f->client_id), false, sl_buf_str(&b));
        sl_buf_free(&pb);
        sl_buf_free(&b);
    }
    if (n == 0) /* a state-only round: retry at once */
        retry_round(f);
    else
        round_arm(f);
    return 0;
}

/* The client answered one question of an upstream round. */
static void round_answer(struct session *s, struct relayed **pp, struct jsonrpc_msg *m)
{
    struct relayed *r = *pp;
    struct fwd *f = r->fwd;
    if (m->kind == JSONRPC_ERROR) {
        relayed_free(s, pp);
        round_fail(f, "The client could not answer the server's question; the call did not "
                   "complete."); /* the round's other questions are withdrawn */
        return;
    }
    /* Each question (a distinct key of the upstream's inputRequests) is answered once: its
     * relayed entry goes now. So the key is new, and appending keeps k answers O(k). */
    json_append_key(f->round, f->answers, sl_str_c(r->key), copy_into(f->round, m->result));
    relayed_free(s, pp);
    if (--f->pending == 0)
        retry_round(f);
}

/* ===== forwarding ===== */

/* The envelope of a legacy client's requests to a modern upstream: made once per session, at
 * its first such call, from the capabilities it declared; per message before initialize. */
static const struct json *legacy_envelope(struct session *s, struct jsonrpc_msg *m)
{
    if (s->legacy_caps == NULL)
        return era_envelope_new(m->arena, NULL);
    if (s->legacy_envelope == NULL) {
        struct json *caps;
        char err[64];
        s->caps_arena = sl_arena_new_small();
        if (json_parse(s->legacy_caps, strlen(s->legacy_caps), s->caps_arena, &caps, err,
                       sizeof(err)) != 0) /* it was written from a parse: cannot fail */
            caps = json_new_object(s->caps_arena);
        s->legacy_envelope = era_envelope_new(s->caps_arena, caps);
    }
    return s->legacy_envelope;
}

/* The session's envelope goes (a second initialize replaced the capabilities it was made
 * from, session.c): a call kept for a retry shares it in its params as sent (era_add_envelope
 * does not copy it), so each such call gets a copy of its own _meta first, once. Else the
 * retry would read, and send the upstream, freed memory. */
void fwd_own_envelopes(struct session *s)
{
    for (struct fwd *f = s->fwds; f; f = f->next) {
        const struct json *meta = json_get(f->sent, "_meta");
        if (meta == NULL || f->sent_owned)
            continue;
        struct sl_arena *a = f->msg->arena;
        struct json *p = json_copy_object(a, f->sent);
        json_set(a, p, "_meta", copy_into(a, meta));
        f->sent = p;
        f->sent_owned = true;
    }
}

/* Params as the upstream's era expects them. */
static const struct json *params_for_upstream(struct session *s, struct jsonrpc_msg *m,
                                              bool modern, const struct json *params)
{
    enum era up = upstream_era(session_up(s));
    if (modern && up == ERA_LEGACY)
        return era_strip_envelope(m->arena, params);
    if (!modern && up == ERA_MODERN)
        return era_add_envelope(m->arena, params, legacy_envelope(s, m));
    return params;
}

/* A forwarded subscriptions/listen (a 2026-07-28 server's): what comes on its stream is the
 * subscription's, tagged by the server with its id for the listen, which is sluice's; the
 * client's is the id it sent (PROTOCOL.md §6.4, §7.2). false: not an object to tag, dropped. */
static bool tag_subscription(struct fwd *f, struct jsonrpc_msg *note)
{
    struct sl_arena *a = note->arena;
    struct json *id, *meta = json_get(note->params, "_meta");
    char err[64];
    if (note->params == NULL || note->params->type != JSON_OBJECT ||
        (meta && meta->type != JSON_OBJECT) ||
        json_parse(f->client_id, strlen(f->client_id), a, &id, err, sizeof(err)) != 0)
        return false;
    struct json *m2 = meta ? json_copy_object(a, meta) : json_new_object(a);
    json_set(a, m2, "io.modelcontextprotocol/subscriptionId", id);
    json_set(a, note->params, "_meta", m2);
    return true;
}

/* What the upstream says about a forwarded request (upstream.h: its progress, with the token
 * already restored to the client's, or a notification on the request's own stream): on the
 * stream of that request. A parked call between rounds has none: the request that carried the
 * last round is answered, and the next one has not come. */
static void on_fwd_note(struct jsonrpc_msg *note, void *arg)
{
    struct fwd *f = arg;
    if (f->park && !park_has_waiter(f->park))
        return;
    /* What the waiting request asked for: a later round's own, not round one's. */
    const struct json *meta = f->note_meta ? f->note_meta : json_get(f->msg->params, "_meta");
    if (strcmp(f->method, "subscriptions/listen") == 0) {
        if (!tag_subscription(f, note))
            return;
    } else if (f->modern && !era_modern_note_wanted(meta, note)) {
        return;
    }
    if (f->note_meta && sl_str_eq_c(note->method, "notifications/progress")) {
        const struct json *tok = json_get(meta, "progressToken");
        if (tok == NULL || (tok->type != JSON_STRING && tok->type != JSON_NUMBER))
            return; /* this round asked for none: round one's token names no active request */
        json_set(note->arena, note->params, "progressToken", copy_into(note->arena, tok));
    }
    struct sl_buf b = { 0 };
    json_write(&b, note->root);
    session_send_line(fwd_to(f), sl_str_c(f->client_id), false, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* Sends f upstream; false (nothing sent) when the upstream is gone. */
static bool fwd_send(struct fwd *f, struct jsonrpc_msg *m, const struct json *params)
{
    struct session *s = f->s;
    const struct json *sent = params_for_upstream(s, m, f->modern, params);
    if (!f->modern && upstream_era(session_up(s)) == ERA_MODERN && sent &&
        sent->type == JSON_OBJECT)
        f->sent = sent; /* the upstream may ask questions: the call is sent again with answers */
    f->req = upstream_request_notes(session_up(s), m->method, sent, on_fwd_reply, on_fwd_note,
                                    f);
    return f->req != NULL;
}

enum fwd_route fwd_route(const struct session *s)
{
    if (s->own && !upstream_ready(s->own_up)) /* its own upstream is starting: sent when ready */
        return own_takes_later(s) ? FWD_LATER : FWD_NEVER;
    return upstream_takes(session_up(s)) ? FWD_NOW : FWD_NEVER;
}

void fwd_reply_unavailable(struct session *s, struct sl_str id)
{
    char err[300];
    session_reply_error(s, id, JSONRPC_INTERNAL_ERROR,
                        s->own ? own_unready_text(s, err, sizeof(err))
                               : "the upstream server is not running", NULL);
}

struct fwd *fwd_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                      bool modern, const struct json *params)
{
    struct sl_arena *a = m->arena;
    struct fwd *f = sl_arena_alloc(a, sizeof(*f));
    f->s = s;
    f->client_id = sl_arena_strndup(a, id.p, id.len);
    f->method = sl_arena_strndup(a, m->method.p, m->method.len);
    f->modern = modern;
    enum fwd_route route = fwd_route(s);
    if (route == FWD_LATER) {
        f->unsent = true;
        f->client_params = params;
    } else if (route == FWD_NEVER || !fwd_send(f, m, params)) {
        fwd_reply_unavailable(s, sl_str_c(f->client_id));
        return NULL;
    }
    f->msg = m;
    f->next = s->fwds;
    if (s->fwds)
        s->fwds->prev = f;
    s->fwds = f;
    session_update_interest(s);
    return f;
}

void fwd_mark_call(struct fwd *f, struct sl_str tool, const struct gate_verdict *v)
{
    f->is_call = true;
    f->tool = sl_arena_strndup(f->msg->arena, tool.p, tool.len);
    f->tool_len = tool.len;
    f->has_digest = v->has_digest;
    memcpy(f->digest, v->digest, sizeof(f->digest));
    f->decision = v->decision;
    /* An allowed call's reason is its rule, a string of the policy, which a reload frees while
     * the call runs: the call keeps a copy for its journal record. */
    f->reason = v->gated || v->rule == NULL
                    ? v->reason : sl_arena_strndup(f->msg->arena, v->rule, strlen(v->rule));
    f->gated = v->gated;
    if (v->gated) /* the one it was approved under, which call_forward found live */
        memcpy(f->definition, v->definition, sizeof(f->definition));
    f->ttl = v->ttl;
    f->observed = v->observe != NULL;
    memcpy(f->observation, v->observed, sizeof(f->observation));
    f->keep = v->spent;
    if (v->spent)
        spend_claim(f->s, v->nonce, &f->outcome);
}

/* f answers the client's request id of s now: a parked call between rounds answered its last
 * request, and that id is free again (a late cancel of it must not end the call). */
static bool fwd_answers(const struct fwd *f, const struct session *s, struct sl_str id)
{
    return (f->park == NULL || park_has_waiter(f->park)) && fwd_to(f) == s &&
           sl_str_eq_c(id, f->client_id);
}

static struct fwd *fwd_find(struct session *s, const struct json *client_id)
{
    struct sl_buf b = { 0 };
    if (!session_id_text(client_id, &b))
        return NULL;
    struct fwd *f = s->fwds;
    while (f && !fwd_answers(f, s, sl_buf_str(&b)))
        f = f->next;
    sl_buf_free(&b);
    return f;
}

bool fwd_cancel(struct session *s, struct jsonrpc_msg *m)
{
    struct fwd *f = fwd_find(s, json_get(m->params, "requestId"));
    if (f == NULL)
        return false;
    const struct json *why = json_get(m->params, "reason");
    char *reason = why && why->type == JSON_STRING
                       ? sl_arena_strndup(m->arena, why->u.str.p, why->u.str.len) : NULL;
    fwd_audit(f, AUDIT_UP_CANCELLED);
    if (f->req)
        upstream_cancel(session_up(s), f->req, reason);
    fwd_settle_unknown(f, "the client cancelled it");
    fwd_free(f);
    return true;
}

bool fwd_has_id(const struct session *s, struct sl_str id)
{
    for (const struct fwd *f = s->fwds; f; f = f->next)
        if (fwd_answers(f, s, id))
            return true;
    return false;
}

size_t fwd_count(const struct session *s)
{
    size_t n = 0;
    for (const struct fwd *f = s->fwds; f; f = f->next)
        n++;
    return n;
}

void fwd_stream_lost(struct session *s, struct sl_str rel)
{
    for (struct fwd *f = s->fwds; f; f = f->next) {
        if (f->pending == 0 || f->modern || fwd_to(f) != s || !sl_str_eq_c(rel, f->client_id))
            continue;
        /* The round's questions went out on that stream and are never sent again: nobody can
         * answer them now, so the call ends rather than wait for its timer. */
        sl_info("%s: the client's stream for a call closed while the server's question to it was "
                "open: the call ends", s->principal);
        round_fail(f, "The client's connection for this call closed while the server's question "
                   "was open; the call did not complete.");
        return;
    }
}

static void on_orphan_expired(evutil_socket_t fd, short what, void *arg)
{
    struct fwd *f = arg;
    (void)fd, (void)what;
    sl_warn("%s: an approved call whose client left still ran %u s later (--upstream-timeout): "
            "cancelled upstream", f->s->principal, f->s->env->outcome_wait_s);
    fwd_end(f, "the call's client left, and it ran on too long");
}

/* f runs on without its client: for at most --upstream-timeout from now, as long as a retry
 * waits for its outcome (session_spend.c). A parked call has its own bound (park_orphan). */
static void orphan_arm(struct fwd *f)
{
    if (f->park || f->orphan_timer)
        return;
    unsigned secs = f->s->env->outcome_wait_s ? f->s->env->outcome_wait_s : f->ttl;
    f->orphan_timer = evtimer_new(f->s->base, on_orphan_expired, f);
    SL_REQUIRE(f->orphan_timer != NULL);
    struct timeval tv = { (time_t)secs, 0 };
    evtimer_add(f->orphan_timer, &tv);
}

void fwd_free_all(struct session *s)
{
    struct fwd *next;
    for (struct fwd *f = s->fwds; f; f = next) {
        next = f->next;
        if (f->keep && f->pending == 0 && !s->stopping) {
            orphan_arm(f); /* the person approved it: it finishes, for the retry to find */
            continue;
        }
        if (f->park && !s->stopping)
            continue; /* parked: the client's next round, on another request, takes it over */
        if (f->req && session_up(s))
            upstream_cancel(session_up(s), f->req, "client went away");
        if (!s->stopping) /* an approved call whose relayed question nobody can answer now */
            fwd_settle_unknown(f, "the client went away while the server asked it something");
        fwd_free(f);
    }
}

/* ===== the upstream's requests, relayed to the client ===== */

/* The client answered a request the upstream made: back under the upstream's id. */
bool relayed_answer(struct session *s, struct jsonrpc_msg *m)
{
    if (m->id->type != JSON_STRING)
        return false;
    for (struct relayed **pp = &s->relayed; *pp; pp = &(*pp)->next) {
        struct relayed *r = *pp;
        if (!sl_str_eq_c(m->id->u.str, r->id))
            continue;
        if (r->fwd) {
            round_answer(s, pp, m);
            return true;
        }
        struct sl_buf b = { 0 };
        if (m->kind == JSONRPC_RESULT)
            jsonrpc_write_result_value(&b, sl_str_c(r->up_id), m->result);
        else
            msg_error_value(&b, sl_str_c(r->up_id), m->error);
        upstream_send_line(session_up(s), sl_buf_str(&b));
        sl_buf_free(&b);
        relayed_free(s, pp);
        return true;
    }
    return false;
}

void relayed_void_upstream(struct session *s, const char *why)
{
    struct relayed **pp = &s->relayed;
    while (*pp) {
        struct relayed *r = *pp;
        if (r->fwd) { /* a round's question: void with its call (fwd_free) */
            pp = &r->next;
            continue;
        }
        struct sl_buf b = { 0 };
        msg_cancelled(&b, r->id, why);
        session_send_line(s, SL_STR_NULL, false, sl_buf_str(&b));
        sl_buf_free(&b);
        relayed_free(s, pp);
    }
}

/* The session ends: the upstream's questions to its client get an error now, not at the
 * upstream's own timeout (an approved call waiting on one runs on without its client). */
void relayed_free_all(struct session *s)
{
    while (s->relayed) {
        if (s->relayed->up_id && session_up(s))
            relayed_answer_error(s, sl_str_c(s->relayed->up_id), JSONRPC_INTERNAL_ERROR,
                                 RELAYED_GONE);
        relayed_free(s, &s->relayed);
    }
}

/* A legacy server's question got no answer within --upstream-timeout: the server hears so (if
 * it still waits), the client that the question is withdrawn, and the session is free of it. */
static void on_relayed_expired(evutil_socket_t fd, short what, void *arg)
{
    struct relayed *r = arg;
    struct session *s = r->s;
    (void)fd;
    (void)what;
    struct relayed **pp = &s->relayed;
    while (*pp != r)
        pp = &(*pp)->next;
    sl_info("%s: the client did not answer the server's %s within %u s (--upstream-timeout): "
            "the question is withdrawn", s->principal, r->id, s->env->relayed_wait_s);
    if (session_up(s))
        relayed_answer_error(s, sl_str_c(r->up_id), JSONRPC_INTERNAL_ERROR,
                             "the client behind sluice did not answer in time");
    struct sl_buf b = { 0 };
    msg_cancelled(&b, r->id, "the server's request got no answer in time");
    session_send_line(s, SL_STR_NULL, false, sl_buf_str(&b));
    sl_buf_free(&b);
    relayed_free(s, pp);
    session_maybe_reap(s);
}

void session_upstream_request(struct session *s, struct jsonrpc_msg *msg,
                              const struct up_request *on)
{
    if (park_question(s, msg, on))
        return; /* a question about a modern client's call: an input_required round */
    const char *cap = fwd_cap_for(msg->method);
    struct sl_buf id = { 0 }, b = { 0 };
    json_write(&id, msg->id);
    if (s->gone) { /* kept for its approved calls: nobody can answer, nothing may wait */
        relayed_answer_error(s, sl_buf_str(&id), JSONRPC_INTERNAL_ERROR, RELAYED_GONE);
    } else if (cap == NULL || !session_legacy_can(s, cap) ||
               s->nrelayed >= SESSION_MAX_RELAYED) {
        relayed_answer_error(s, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND,
                             "the client behind sluice cannot answer this request");
    } else {
        struct relayed *r = sl_xcalloc(1, sizeof(*r));
        snprintf(r->id, sizeof(r->id), "sluice-u-%llu", (unsigned long long)++s->next_relay);
        r->up_id = sl_xstrndup(id.p, id.len);
        if (s->env->relayed_wait_s) {
            r->s = s;
            r->timer = evtimer_new(s->base, on_relayed_expired, r);
            SL_REQUIRE(r->timer != NULL);
            struct timeval tv = { (time_t)s->env->relayed_wait_s, 0 };
            evtimer_add(r->timer, &tv);
        }
        r->next = s->relayed;
        s->relayed = r;
        s->nrelayed++;
        json_set(msg->arena, msg->root, "id", json_new_string(msg->arena, r->id, strlen(r->id)));
        json_write(&b, msg->root);
        /* Asked on a client request's stream: on that request's own stream to the client too
         * (an HTTP client's POST), as the server did; else wherever the session writes. */
        struct fwd *f = fwd_of_request(s, on);
        struct sl_str rel = f && fwd_to(f) == s ? sl_str_c(f->client_id) : SL_STR_NULL;
        session_send_line(s, rel, false, sl_buf_str(&b));
    }
    sl_buf_free(&id);
    sl_buf_free(&b);
}

void session_upstream_notification(struct session *s, struct jsonrpc_msg *msg)
{
    /* A client with a listen stream gets the changes there, tagged (session_listen.c). */
    if (s->nlistens && (sl_str_eq_c(msg->method, "notifications/tools/list_changed") ||
                        sl_str_eq_c(msg->method, "notifications/prompts/list_changed") ||
                        sl_str_eq_c(msg->method, "notifications/resources/list_changed") ||
                        sl_str_eq_c(msg->method, "notifications/resources/updated")))
        return;
    if (sl_str_eq_c(msg->method, "notifications/cancelled")) {
        /* The upstream may cancel only its own requests: rewrite to the id the client saw. */
        const struct json *rid = json_get(msg->params, "requestId");
        struct sl_buf idb = { 0 };
        struct relayed **pp = &s->relayed;
        if (rid)
            json_write(&idb, rid);
        while (*pp && !(idb.len && (*pp)->up_id && strcmp((*pp)->up_id, idb.p) == 0))
            pp = &(*pp)->next;
        bool parked = *pp == NULL && idb.len && park_withdraw(s, sl_buf_str(&idb));
        sl_buf_free(&idb);
        if (parked) { /* its client asked with a result that is over: nothing to tell it */
            sl_info("the server withdrew a question of a parked call");
            return;
        }
        if (*pp == NULL) {
            sl_debug("dropping an upstream cancellation for no request it made");
            return;
        }
        json_set(msg->arena, msg->params, "requestId",
                 json_new_string(msg->arena, (*pp)->id, strlen((*pp)->id)));
        relayed_free(s, pp);
    }
    struct sl_buf b = { 0 };
    json_write(&b, msg->root);
    session_send_line(s, SL_STR_NULL, false, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* ===== for session_park.c ===== */

/* Writes queued gated call f's forwarding record; when the journal does not take it, f is not
 * sent: it is answered and journaled as call_forward's unjournaled does (its spent state's
 * outcome is that refusal), and freed. */
static bool fwd_journal_forwarding(struct fwd *f)
{
    struct sl_str tool = { f->tool, f->tool_len };
    const uint8_t *digest = f->has_digest ? f->digest : NULL;
    if (session_audit(f->s, tool, digest, AUDIT_FORWARDING, audit_decision_name(f->decision),
                      AUDIT_UP_NONE, f->client_id) == 0)
        return true;
    fwd_settle_next(f);
    call_unjournaled(f->s, tool, digest, f->client_id);
    fwd_free(f);
    return false;
}

void fwd_send_unsent(struct session *s)
{
    struct fwd *next;
    for (struct fwd *f = s->fwds; f; f = next) {
        next = f->next;
        if (!f->unsent)
            continue;
        enum fwd_route route = fwd_route(s);
        if (route == FWD_LATER)
            continue;
        if (route == FWD_NEVER) { /* gone again already: never sent */
            fwd_settle_next(f);
            fwd_reply_unavailable(s, sl_str_c(f->client_id));
            fwd_audit(f, AUDIT_UP_UNAVAILABLE);
            fwd_free(f);
            continue;
        }
        /* A gated call goes on record as forwarding only now that it goes (call_forward). */
        if (f->is_call && f->gated && !fwd_journal_forwarding(f))
            continue;
        f->unsent = false;
        if (!fwd_send(f, f->msg, f->client_params)) { /* fwd_route said it takes it */
            fwd_settle_next(f);
            fwd_reply_unavailable(s, sl_str_c(f->client_id));
            fwd_audit(f, AUDIT_UP_ERROR);
            fwd_free(f);
        }
    }
}

void fwd_fail_unsent(struct session *s, const char *why)
{
    struct fwd *next;
    for (struct fwd *f = s->fwds; f; f = next) {
        next = f->next;
        if (f->unsent)
            on_fwd_reply(NULL, why ? why : "the upstream server of this call could not be started",
                         f);
    }
}

struct fwd *fwd_of_request(struct session *s, const struct up_request *on)
{
    for (struct fwd *f = s->fwds; f && on; f = f->next)
        if (f->req == on)
            return f;
    return NULL;
}

struct fwd *fwd_modern_call(struct session *s, const struct up_request *on, size_t *n)
{
    struct fwd *one = NULL;
    *n = 0;
    if (on) { /* the stream named the request: that call, or none */
        one = fwd_of_request(s, on);
        if (one && !(one->modern && one->is_call))
            one = NULL;
        *n = one != NULL;
        return one;
    }
    for (struct fwd *f = s->fwds; f; f = f->next) {
        if (f->modern && f->is_call && f->req != NULL) {
            one = f;
            ++*n;
        }
    }
    return *n == 1 ? one : NULL;
}

struct fwd_call fwd_call_of(const struct fwd *f)
{
    return (struct fwd_call){
        .s = f->s,
        .to = fwd_to(f),
        .park = f->park,
        .msg = f->msg,
        .tool = { f->tool, f->tool_len },
        .client_id = sl_str_c(f->client_id),
        .gated = f->gated,
        .kept = f->keep,
        .ttl = f->ttl,
        .observation = f->observed ? f->observation : NULL,
        .definition = f->gated ? f->definition : NULL,
    };
}

void fwd_set_park(struct fwd *f, struct park *p)
{
    f->park = p;
}

void fwd_take_over(struct fwd *f, struct session *to, struct sl_str id,
                   const struct json *params)
{
    struct sl_arena *a = f->msg->arena;
    f->to = to == f->s ? NULL : to;
    f->client_id = sl_arena_strndup(a, id.p, id.len);
    const struct json *meta = json_get(params, "_meta");
    static const char *const kept[] = { "progressToken", META_LOG_LEVEL };
    f->note_meta = json_new_object(a);
    for (size_t i = 0; i < SL_ARRAY_LEN(kept); i++) {
        const struct json *v = json_get(meta, kept[i]);
        if (v && v->type != JSON_OBJECT && v->type != JSON_ARRAY)
            json_set(a, f->note_meta, kept[i], copy_into(a, v));
    }
}

void fwd_claim_round(struct fwd *f, struct session *s, const uint8_t *nonce)
{
    spend_claim(s, nonce, &f->outcome);
}

void fwd_let_go(struct fwd *f)
{
    f->to = NULL;
}

void fwd_end_kept(struct fwd *f, struct jsonrpc_msg *m)
{
    fwd_audit(f, call_outcome(m, false));
    if (m == NULL) {
        fwd_settle_unknown(f, "the server went away before the client's next round came");
    } else if (f->outcome) {
        struct sl_buf b = { 0 };
        if (m->kind == JSONRPC_ERROR)
            (void)error_line(f, m, &b);
        else
            jsonrpc_write_result_value(&b, sl_str_c(f->client_id), result_in_era(f, m, m->result));
        spend_settle_claimed(f->s, f->outcome, sl_buf_str(&b));
        f->outcome = NULL;
        sl_buf_free(&b);
    }
    f->req = NULL;
    fwd_free(f);
}

void fwd_end(struct fwd *f, const char *reason)
{
    fwd_audit(f, AUDIT_UP_CANCELLED);
    if (f->req)
        upstream_cancel(session_up(f->s), f->req, reason);
    f->req = NULL;
    fwd_settle_unknown(f, reason);
    fwd_free(f);
}
