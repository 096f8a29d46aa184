/* gate.c: policy decision and the sealed confirmation round (PROTOCOL.md §2.8). */
#include "gate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include "seal.h"

#include "approval.h"
#include "argcheck.h"
#include "canon.h"
#include "confirm.h"
#include "jsonrpc.h"
#include "namefold.h"
#include "pin.h"
#include "rules.h"

static const char invalid_state_data[] = "{\"reason\":\"invalid_request_state\"}";
static const char need_form_data[] = "{\"requiredCapabilities\":{\"elicitation\":{\"form\":{}}}}";

/* ===== verdict builders ===== */

/* A refusal as a tool error: text is what the model reads (msg_tool_error writes it). */
static void tool_error(struct gate_verdict *v, enum audit_decision decision, const char *reason,
                       const char *text)
{
    v->action = GATE_REFUSE;
    v->decision = decision;
    v->reason = reason;
    sl_buf_reset(&v->text);
    sl_buf_puts(&v->text, text);
}

static void rpc_error(struct gate_verdict *v, const char *reason, int code, const char *message,
                      const char *data)
{
    v->action = GATE_REFUSE_RPC;
    v->decision = AUDIT_REFUSED;
    v->reason = reason;
    v->rpc_code = code;
    v->rpc_message = message;
    v->rpc_data = data;
}

/* What a refused state or token says, by reason: the code and data.reason stay the same for
 * every case (clients act on those), the message tells a person what happened. */
struct bad_state_text {
    const char *reason;     /* sluice's own reason, or NULL: seal_strerror(seal) */
    enum seal_status seal;
    const char *state, *token;
};

static const struct bad_state_text bad_state_texts[] = {
    { "replayed", SEAL_OK,
      "This confirmation was already used; a requestState runs once. Call the tool again to be "
      "asked again",
      "This token was already used; a token runs once. Call the tool again without it to get a "
      "new one" },
    { NULL, SEAL_EEXPIRED,
      "This confirmation expired before it came back. Call the tool again to be asked again",
      "This token expired. Call the tool again without it to get a new one" },
    { NULL, SEAL_EAUTH,
      "This requestState was altered, or was made for another tool, principal or server",
      "This token was altered, or was made for another tool, principal or server" },
    { NULL, SEAL_EKEY,
      "This requestState was sealed under a key this sluice does not hold",
      "This token was sealed under a key this sluice does not hold" },
    { "minted-by-another-process", SEAL_OK,
      "This requestState was made by another sluice process or before a restart. Call the "
      "tool again to be asked again",
      "This token was made by another sluice process or before a restart. Call the tool again "
      "without it to get a new one" },
    { "state-kind", SEAL_OK,
      "This requestState is not a confirmation state (a token goes in "
      "params._meta.dev.sluice/token)",
      "This is not a token (a confirmation state goes in params.requestState)" },
    { "policy-now-gates", SEAL_OK,
      "This requestState continues a call that began before the policy gated its tool; nobody "
      "approved it, so it cannot go on. Call the tool again to be asked",
      "This token continues a call that began before the policy gated its tool" },
    { "state-without-observation", SEAL_OK,
      "This requestState lacks the reading this tool is checked against",
      "This token lacks the reading this tool is checked against" },
};

static void bad_state_as(struct gate_verdict *v, const char *reason, bool token)
{
    const char *message = token ? "This is not a token sluice made"
                                : "This requestState is not one sluice made";
    for (size_t i = 0; i < sizeof(bad_state_texts) / sizeof(bad_state_texts[0]); i++) {
        const struct bad_state_text *t = &bad_state_texts[i];
        if (strcmp(t->reason ? t->reason : seal_strerror(t->seal), reason) == 0)
            message = token ? t->token : t->state;
    }
    rpc_error(v, reason, JSONRPC_INVALID_PARAMS, message, invalid_state_data);
}

static void bad_state(struct gate_verdict *v, const char *reason)
{
    bad_state_as(v, reason, false);
}

/* Seals c under b with a fresh nonce, as this process's. 0 or -1. */
static int mint_state(const struct gate_ctx *g, const struct seal_binding *b,
                      struct seal_claims *c, struct sl_buf *out)
{
    memcpy(c->origin, g->origin, SEAL_ORIGIN_LEN); /* the store's epoch, at this moment */
    return seal_random_nonce(c->nonce) == 0 ? seal_mint(g->keys, b, c, out) : -1;
}

/* False while a shared store has not told us its epoch yet (all zero): nothing can be minted or
 * spent until it is reached. */
static bool epoch_known(const struct gate_ctx *g)
{
    static const uint8_t zero[SEAL_ORIGIN_LEN];
    return !g->shared_store || CRYPTO_memcmp(g->origin, zero, SEAL_ORIGIN_LEN) != 0;
}

/* ===== round one: the question ===== */

#define PAGE_TAG "\x01page:"  /* never the start of a message: confirm.c neutralizes controls */

/* The store keeps an open question as one opaque blob, for an identical call to be asked the
 * same: its state, a newline, its message. A sealed state is base64url, so the first newline
 * ends it. A page question's message is left out: it goes to the page's own record, written by
 * the round that asks it, and shows far more than the form (CONFIRM_MAX_PAGE_TEXT), while an
 * identical call sharing the question needs only its state and page id. */
static void question_pack(struct sl_buf *out, const struct gate_verdict *v)
{
    /* One allocation, not a realloc (about 400 instructions a question, issue 24). */
    sl_buf_reserve(out, v->state.len + 1 + (v->page ? sizeof(PAGE_TAG) + 2 * sizeof(v->page_id) + 1
                                                    : v->text.len));
    sl_buf_put(out, v->state.p, v->state.len);
    sl_buf_putc(out, '\n');
    if (v->page) { /* a page question: its page id comes along (PAGE_TAG, hex, newline) */
        sl_buf_puts(out, PAGE_TAG);
        sl_hex_encode(out, v->page_id, sizeof(v->page_id));
        sl_buf_putc(out, '\n');
    } else {
        sl_buf_put(out, v->text.p, v->text.len);
    }
}

/* false when blob is not one question_pack wrote (a shared store holds what anyone wrote). */
static bool question_unpack(struct sl_str blob, struct gate_verdict *v)
{
    const char *nl = blob.len ? memchr(blob.p, '\n', blob.len) : NULL;
    if (nl == NULL || nl == blob.p)
        return false;
    size_t n = (size_t)(nl - blob.p);
    sl_buf_reset(&v->state);
    sl_buf_put(&v->state, blob.p, n);
    struct sl_str rest = { nl + 1, blob.len - n - 1 };
    const size_t tl = sizeof(PAGE_TAG) - 1, hl = 2 * sizeof(v->page_id);
    v->page = rest.len >= tl + hl + 1 && memcmp(rest.p, PAGE_TAG, tl) == 0;
    v->page_new = false;
    if (v->page) {
        char path[sizeof(APPROVAL_PATH) + 2 * APPROVAL_ID_LEN];
        memcpy(path, APPROVAL_PATH, sizeof(APPROVAL_PATH) - 1);
        memcpy(path + sizeof(APPROVAL_PATH) - 1, rest.p + tl, hl);
        if (rest.p[tl + hl] != '\n' ||
            approval_id_from_path((struct sl_str){ path, sizeof(path) - 1 }, v->page_id) != 0)
            return false;
        rest.p += tl + hl + 1;
        rest.len -= tl + hl + 1;
    }
    sl_buf_reset(&v->text);
    sl_buf_put(&v->text, rest.p, rest.len);
    return true;
}

/* Approval fatigue is the store's (store_ask): v carries what it checks and records. */
static void ask_fatigue(const struct gate_input *in, const struct policy_decision *d,
                        const struct seal_claims *c, struct gate_verdict *v)
{
    struct gate_ask *a = &v->ask;
    a->check = true;
    memcpy(a->nonce, c->nonce, sizeof(a->nonce));
    a->exp = c->exp;
    a->max_open = d->max_open;
    a->per_minute = d->per_minute;
    sl_buf_reset(&a->blob);
    question_pack(&a->blob, v);
}

static void ask_done(struct gate_verdict *v)
{
    v->ask.check = false;
    sl_buf_free(&v->ask.blob);
}

void gate_refuse_ask(struct gate_verdict *v, enum asks_status why)
{
    char text[200];
    ask_done(v);
    sl_buf_reset(&v->state); /* the question is not asked */
    switch (why) {
    case ASKS_OPEN:
        snprintf(text, sizeof(text), "Too many confirmations are waiting for an answer (limit "
                 "%u, defaults.max_open_confirmations). The call was not run.", v->ask.max_open);
        return tool_error(v, AUDIT_REFUSED, "too-many-open", text);
    case ASKS_RATE:
        snprintf(text, sizeof(text), "Too many confirmation questions in the last minute (limit "
                 "%u, defaults.max_questions_per_minute). The call was not run.",
                 v->ask.per_minute);
        return tool_error(v, AUDIT_REFUSED, "too-many-questions", text);
    case ASKS_FULL:
        return tool_error(v, AUDIT_REFUSED, "too-many-questions",
                          "sluice has too many open confirmations. The call was not run.");
    case ASKS_PRINCIPALS_FULL: /* others' questions keep their places; this one gets none */
        snprintf(text, sizeof(text), "sluice is waiting on confirmations for too many principals "
                 "(limit %d). The call was not run; try again when some are answered.",
                 ASKS_PRINCIPALS);
        return tool_error(v, AUDIT_REFUSED, "too-many-principals", text);
    case ASKS_OK:
    case ASKS_SAME:
        break;
    }
    tool_error(v, AUDIT_REFUSED, "internal-error", /* not a refusal: fail closed anyway */
               "sluice could not prepare the confirmation; the call was not run.");
}

bool gate_share_question(struct gate_verdict *v, struct sl_str blob)
{
    bool page = v->page;
    ask_done(v);
    if (!question_unpack(blob, v)) {
        gate_refuse_spent(v, GATE_SPENT_UNAVAILABLE);
        return false;
    }
    if (v->page != page) { /* open on the page, and this client would be asked itself (or the
                            * reverse): it could not answer that question */
        v->page = false;
        sl_buf_reset(&v->state);
        tool_error(v, AUDIT_REFUSED, "same-call-waiting",
                   "An identical call is already waiting for a person's answer, asked another "
                   "way. This one was not run; call again once that one is answered or expired.");
        return false;
    }
    v->action = GATE_ASK;
    v->decision = AUDIT_ASKED;
    v->reason = "same-open-question";
    v->shared = true;
    return true;
}

/* True when a number is anywhere in v (depth: the parser's bound). */
static bool has_number(const struct json *v)
{
    if (v->type == JSON_NUMBER)
        return true;
    if (v->type == JSON_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (has_number(v->u.arr.v[i]))
                return true;
    } else if (v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->u.obj.n; i++)
            if (has_number(v->u.obj.v[i].val))
                return true;
    }
    return false;
}

/* The question for this call, from the canonical arguments: the very bytes that will be
 * forwarded. Returns -1 when not every argument can be shown (confirm_question). Before the
 * observation, room for it is kept, so a call that passes here is asked after it too.
 *
 * Canonical JSON (RFC 8785) differs from the arguments as parsed only in how strings are
 * escaped (never in what they hold), in the order of members (which the question sorts by
 * itself) and in how numbers are written. So arguments without a number are shown from their
 * own parse, and only those with one are parsed back from the canonical text: that parse cost
 * about 1,300 instructions a question (issue 24). test_question_same_as_canonical (test_gate.c)
 * holds the two to the same text. */
static int render_question(const struct gate_ctx *g, const struct gate_input *in,
                           const struct policy_decision *d, const struct gate_verdict *v,
                           unsigned ttl, uint64_t now, bool page, struct sl_buf *out)
{
    size_t ndeclared = d->nargs;
    const struct policy_arg *pa = d->args;
    struct sl_str declared[POLICY_MAX_ARGS + 1]; /* never NULL: the policy is known here */
    for (size_t i = 0; i < ndeclared && i < POLICY_MAX_ARGS; i++)
        declared[i] = (struct sl_str){ pa[i].name, pa[i].len };
    struct sl_arena *a = NULL;
    const struct json *shown = in->args;
    if (shown == NULL || has_number(shown)) {
        struct json *parsed;
        char err[64];
        a = sl_arena_new();
        SL_REQUIRE(json_parse(v->args_json.p, v->args_json.len, a, &parsed, err, sizeof(err)) ==
                   0);
        shown = parsed;
    }
    struct confirm_call c = {
        .tool = in->tool,
        .server = g->server_name,
        .args = shown,
        .declared = declared,
        .ndeclared = ndeclared < POLICY_MAX_ARGS ? ndeclared : POLICY_MAX_ARGS,
        .tmpl = policy_tool_message(in->policy, in->tool.p, in->tool.len),
        .irreversible = d->irreversible,
        .ttl = ttl,
        .expires = now + ttl,
        .observes = v->observe != NULL,
        .observed = in->observed ? in->observed->summary : (struct sl_str){ "", 0 },
        .whole = page, /* the page has no form to fit: it shows values whole, or far more */
    };
    int rc = confirm_question(out, &c);
    sl_arena_free(a);
    return rc;
}

/* The tool's definition as the call sees it now goes into the state (zero: not known). */
static void bind_definition(const struct gate_input *in, struct seal_claims *c)
{
    if (in->has_definition)
        memcpy(c->def_digest, in->definition, sizeof(c->def_digest));
    else
        memset(c->def_digest, 0, sizeof(c->def_digest));
}

/* Asks the person about this call: a GATE_ASK verdict (or the refusal that stops it). */
static void ask_person(const struct gate_ctx *g, const struct gate_input *in,
                       const struct policy_decision *d, const struct seal_binding *b,
                       unsigned ttl, uint64_t now, struct gate_verdict *v, const char *reason,
                       enum seal_kind kind)
{
    struct sl_buf state = { 0 }, message = { 0 };
    /* Every argument that would be forwarded is in the question, or nobody is asked: checked
     * before anything else happens for the call (an observe read, a fatigue slot). */
    if (render_question(g, in, d, v, ttl, now, kind == SEAL_KIND_PAGE, &message) != 0) {
        rpc_error(v, "arguments-not-shown", JSONRPC_INVALID_PARAMS,
                  "arguments cannot be confirmed: they do not all fit in the question (16 KiB "
                  "for every argument name, the shortest form of every value and the policy's "
                  "message, and at least 256 bytes of a value that is cut), and nobody is asked "
                  "about arguments they cannot see",
                  NULL);
        goto out;
    }
    if (v->observe && in->observed == NULL) { /* read the current state first */
        v->action = GATE_OBSERVE;
        v->decision = AUDIT_OBSERVING;
        v->reason = reason;
        goto out;
    }
    struct seal_claims c = { .kind = kind, .iat = now, .exp = now + ttl };
    memcpy(c.args_digest, v->digest, sizeof(c.args_digest));
    bind_definition(in, &c);
    if (v->observe) /* the observed digest rides in the state, to be checked after the accept */
        c.inner = (struct sl_str){ (const char *)in->observed->digest, 32 };
    if (mint_state(g, b, &c, &state) != 0) {
        tool_error(v, AUDIT_REFUSED, "internal-error",
                   "sluice could not prepare the confirmation; the call was not run.");
        goto out;
    }
    v->action = GATE_ASK;
    v->decision = AUDIT_ASKED;
    v->reason = reason;
    sl_buf_free(&v->text);
    v->text = message; /* the verdict takes both buffers */
    sl_buf_free(&v->state);
    v->state = state;
    message = state = (struct sl_buf){ 0 };
    if (kind == SEAL_KIND_PAGE) { /* the question goes to the page, under the state's page id */
        v->page = v->page_new = true;
        v->page_exp = c.exp;
        approval_page_id(g->keys, &c, v->page_id); /* minted: c.key 0, the current */
    }
    ask_fatigue(in, d, &c, v);
out:
    sl_buf_free(&state);
    sl_buf_free(&message);
}

/* ===== round two: the answer ===== */

/* The answer decides only when it is exactly {"action":"accept","content":{"approve":true}}
 * (extra members are ignored). Everything else refuses, with a message the model can act on. */
static bool answer_accepts(const struct json *answer, struct gate_verdict *v)
{
    struct json *action = json_get(answer, "action");
    if (json_str_is(action, "accept")) {
        if (json_is_true(json_get(json_get(answer, "content"), "approve")))
            return true;
        tool_error(v, AUDIT_DECLINED, "approve-not-true",
                   "The person did not approve this call (approve was not true). It was not run.");
    } else if (json_str_is(action, "decline")) {
        tool_error(v, AUDIT_DECLINED, "declined", "The person declined this call. It was not run.");
    } else if (json_str_is(action, "cancel")) {
        tool_error(v, AUDIT_CANCELLED, "cancelled",
                   "The person dismissed the confirmation. The call was not run.");
    } else {
        tool_error(v, AUDIT_REFUSED, "malformed-answer",
                   "The confirmation answer was not understood. The call was not run.");
    }
    return false;
}

/* Opens a state or token (a JSON string) under b. On failure the verdict is already set. */
static bool open_state(const struct gate_ctx *g, const struct seal_binding *b,
                       const struct json *st, bool token, uint64_t now, struct seal_claims *c,
                       struct sl_buf *inner, struct gate_verdict *v)
{
    if (st->type != JSON_STRING || st->u.str.len > SEAL_TOKEN_MAX) {
        bad_state_as(v, "state-malformed", token);
        return false;
    }
    enum seal_status ss = seal_open(g->keys, b, now, st->u.str.p, st->u.str.len, c, inner);
    if (ss != SEAL_OK) {
        bad_state_as(v, seal_strerror(ss), token);
        return false;
    }
    /* A shared store checks the origin itself, against the epoch it has now (STORE_RESET). */
    if (!g->shared_store && CRYPTO_memcmp(c->origin, g->origin, SEAL_ORIGIN_LEN) != 0) {
        bad_state_as(v, "minted-by-another-process", token);
        return false;
    }
    return true;
}

static bool same_arguments(const struct seal_claims *c, struct gate_verdict *v)
{
    if (sl_ct_equal(c->args_digest, v->digest, sizeof(v->digest)))
        return true;
    tool_error(v, AUDIT_REFUSED, "arguments-changed",
               "The arguments changed after the person was asked about them, so the call was "
               "not run. Call the tool again to ask about these arguments.");
    return false;
}

/* The person was asked about the tool as it was defined then: a description or schema that
 * changed since (a rug pull between the question and the answer) refuses the call. So does a
 * definition sluice no longer knows (a restarted server that has not listed its tools yet, or
 * one that stopped listing the tool): nothing shows it is the one the person saw. The two are
 * told apart only in the words, so that nobody hunts a rug pull that a restart caused. */
static bool same_definition(const struct gate_input *in, const struct seal_claims *c,
                            struct gate_verdict *v)
{
    static const uint8_t unknown[sizeof(c->def_digest)];
    struct seal_claims now;
    bind_definition(in, &now);
    if (sl_ct_equal(c->def_digest, now.def_digest, sizeof(now.def_digest))) {
        memcpy(v->definition, c->def_digest, sizeof(v->definition));
        return true;
    }
    if (!in->has_definition && !sl_ct_equal(c->def_digest, unknown, sizeof(unknown)))
        tool_error(v, AUDIT_REFUSED, "definition-unknown",
                   "The server does not list this tool now (it may be restarting), so sluice "
                   "cannot check that it is the tool the person was asked about, and the call "
                   "was not run. Call the tool again once the server lists it.");
    else
        tool_error(v, AUDIT_REFUSED, "definition-changed",
                   "The server changed this tool's definition (its description, input schema "
                   "or annotations) after the person was asked, so the call was not run. Call "
                   "the tool again to be asked about it as it is now.");
    return false;
}

/* Marks the state's nonce to be spent: one state, one use. The caller records it in the store
 * before it acts on the verdict, and acts only if the nonce was fresh (invariant 3); the gate
 * itself does no I/O. */
static void spend(const struct seal_claims *c, struct gate_verdict *v)
{
    v->spend = true;
    memcpy(v->nonce, c->nonce, sizeof(v->nonce));
    memcpy(v->origin, c->origin, sizeof(v->origin));
    v->exp = c->exp;
}

static void confirm_answer(const struct gate_ctx *g, const struct gate_input *in,
                           const struct policy_decision *d, const struct seal_binding *b,
                           const struct seal_claims *c, unsigned ttl, uint64_t now,
                           struct gate_verdict *v)
{
    if (!in->can_elicit_form)
        return rpc_error(v, "missing-capability", MCP_MISSING_CAPABILITY,
                         "This tool needs confirmation: the client capability elicitation (form) "
                         "is required",
                         need_form_data);
    const struct json *answer = json_get(in->input_responses, GATE_CONFIRM_KEY);
    if (answer == NULL) /* a retry without our answer is asked again (PROTOCOL.md §2.4.6) */
        return ask_person(g, in, d, b, ttl, now, v, "no-answer", SEAL_KIND_CONFIRM);
    /* The nonce is spent whatever the answer, so a declined state cannot be replayed with an
     * accept, and an accepted one cannot run twice. */
    spend(c, v);
    v->answers = true; /* the person answered: the question is no longer open */
    if (!answer_accepts(answer, v))
        return;
    if (v->observe) {
        if (c->inner.len != sizeof(v->observed))
            return bad_state(v, "state-without-observation");
        v->recheck = true;
        memcpy(v->observed, c->inner.p, sizeof(v->observed));
    }
    v->action = GATE_FORWARD;
    v->decision = AUDIT_CLIENT_ACCEPTED;
    v->reason = "accept";
}

/* The policy lets this tool's question go to the page (for some client). */
static bool page_possible(const struct policy_decision *d)
{
    return d->approval != POLICY_APPROVAL_CLIENT || d->page_fallback;
}

/* A page state came back (as requestState, or in _meta from a client that cannot elicit): the
 * page's decision, which only the store knows, decides (gate_page_decided). Until then the
 * verdict is the same page again; nothing is spent. */
static void page_round(const struct gate_ctx *g, const struct gate_input *in,
                       const struct policy_decision *d, const struct seal_claims *c,
                       struct gate_verdict *v)
{
    if (!page_possible(d))
        return bad_state(v, "state-kind");
    if (v->observe) {
        if (c->inner.len != sizeof(v->observed))
            return bad_state(v, "state-without-observation");
        memcpy(v->observed, c->inner.p, sizeof(v->observed));
    }
    const struct json *st = in->request_state ? in->request_state : in->token;
    spend(c, v);
    v->spend = false; /* not yet: only an approval by an allowed person spends it */
    v->page = v->page_check = true;
    v->page_exp = c->exp;
    approval_page_id(g->keys, c, v->page_id);
    sl_buf_reset(&v->state);
    sl_buf_put(&v->state, st->u.str.p, st->u.str.len);
    v->action = GATE_ASK;
    v->decision = AUDIT_ASKED;
    v->reason = "page-pending";
}

void gate_page_decided(const struct policy *policy, struct sl_str caller, struct sl_str tool,
                       bool found, bool store_failed, struct sl_str decision,
                       struct gate_verdict *v)
{
    v->page_check = false;
    enum approval_decision ad;
    struct sl_str approver;
    if (store_failed)
        return gate_refuse_spent(v, GATE_SPENT_UNAVAILABLE);
    if (!found) { /* pending: the same page again, nothing spent, nothing forwarded */
        sl_buf_reset(&v->args_json);
        return;
    }
    struct policy_decision d;
    policy_lookup(policy, tool.p, tool.len, &d);
    v->spend = true; /* decided: this state is done, whatever the decision */
    v->answers = true;
    v->page = false;
    if (approval_decision_decode(decision, &ad, &approver) != 0) {
        sl_buf_reset(&v->args_json);
        return tool_error(v, AUDIT_REFUSED, "malformed-answer",
                          "The approval page's record was not understood. The call was not run.");
    }
    if (ad == APPROVAL_DECLINED) {
        sl_buf_reset(&v->args_json);
        return tool_error(v, AUDIT_PAGE_DECLINED, "page-declined",
                          "The person declined this call on sluice's approval page. It was not "
                          "run.");
    }
    /* Checked when the page took the decision, and again here: the policy may have changed. */
    if (!page_possible(&d) || approval_may_decide(&d, caller, approver) != APPROVAL_MAY) {
        sl_buf_reset(&v->args_json);
        return tool_error(v, AUDIT_REFUSED, "approver-not-allowed",
                          "The call was approved on the page by someone the policy does not "
                          "allow to approve it. It was not run.");
    }
    v->recheck = v->observe != NULL;
    v->action = GATE_FORWARD;
    v->decision = AUDIT_PAGE_APPROVED;
    v->reason = "page";
}

/* Round two and later: a state of ours came back. */
static void round_two(const struct gate_ctx *g, const struct gate_input *in,
                      const struct policy_decision *d, const struct seal_binding *b,
                      unsigned ttl, uint64_t now, struct gate_verdict *v)
{
    struct seal_claims c;
    struct sl_buf inner = { 0 };
    if (!open_state(g, b, in->request_state, false, now, &c, &inner, v) ||
        !same_arguments(&c, v) || !same_definition(in, &c, v))
        goto out;
    if (c.kind == SEAL_KIND_CONFIRM && d->approval == POLICY_APPROVAL_PAGE) {
        /* Asked through the client before the policy said page: only the page decides now. */
        bad_state(v, "state-kind");
    } else if (c.kind == SEAL_KIND_CONTINUE_UNGATED) {
        /* Began while the policy did not gate the tool; a reload gates it now. Nobody approved
         * it, so its next round is not taken as approved. */
        bad_state(v, "policy-now-gates");
    } else if (c.kind == SEAL_KIND_PAGE) {
        page_round(g, in, d, &c, v);
    } else if (c.kind == SEAL_KIND_CONFIRM) {
        confirm_answer(g, in, d, b, &c, ttl, now, v);
    } else if (c.kind == SEAL_KIND_CONTINUE || c.kind == SEAL_KIND_CONTINUE_OBSERVED) {
        /* The person approved these arguments; the upstream asked its own question, and this
         * is the client's answer to it. Forward with the upstream's own state restored. The
         * state's kind, not the policy now, says whether an observation precedes it: a reload
         * between the rounds that adds or drops observe: must not read the upstream's bytes as
         * a digest, nor hand the digest to the upstream as part of its state. */
        spend(&c, v);
        struct sl_str rest = c.inner;
        bool has_observation = c.kind == SEAL_KIND_CONTINUE_OBSERVED;
        if ((has_observation && rest.len < sizeof(v->observed)) ||
            (v->observe && !has_observation)) { /* nothing to check the target against */
            bad_state(v, "state-without-observation");
            goto out;
        }
        if (has_observation) {
            if (v->observe) { /* the target is read again before this round too */
                v->recheck = true;
                memcpy(v->observed, rest.p, sizeof(v->observed));
            }
            rest.p += sizeof(v->observed);
            rest.len -= sizeof(v->observed);
        }
        v->action = GATE_FORWARD;
        v->decision = AUDIT_CLIENT_ACCEPTED;
        v->reason = "upstream-round";
        v->continued = true;
        sl_buf_put(&v->upstream_state, rest.p ? rest.p : "", rest.len);
    } else {
        bad_state(v, "state-kind");
    }
out:
    sl_buf_free(&inner);
}

/* A client that cannot ask a person, on a tool that opted into the token (policy fallback). */
static void token_round(const struct gate_ctx *g, const struct gate_input *in,
                        const struct seal_binding *b, unsigned ttl, uint64_t now,
                        struct gate_verdict *v)
{
    struct seal_claims c;
    struct sl_buf tok = { 0 };
    if (in->token == NULL) {
        c = (struct seal_claims){ .kind = SEAL_KIND_TOKEN, .iat = now, .exp = now + ttl };
        memcpy(c.args_digest, v->digest, sizeof(c.args_digest));
        bind_definition(in, &c);
        if (mint_state(g, b, &c, &tok) != 0) {
            tool_error(v, AUDIT_REFUSED, "internal-error", "sluice could not issue a token.");
        } else {
            tool_error(v, AUDIT_TOKEN_ISSUED, "no-elicitation",
                       "This call needs a person's confirmation and this client cannot ask one. "
                       "The policy allows a one-time token instead: call the tool again with "
                       "exactly the same arguments and with params._meta.dev.sluice/token set to "
                       "this token, and it runs once: ");
            sl_buf_put(&v->text, tok.p, tok.len);
            sl_buf_reset(&v->token);
            sl_buf_put(&v->token, tok.p, tok.len);
        }
        sl_buf_free(&tok);
        return;
    }
    struct sl_buf inner = { 0 };
    if (open_state(g, b, in->token, true, now, &c, &inner, v) && same_arguments(&c, v) &&
        same_definition(in, &c, v)) {
        if (c.kind != SEAL_KIND_TOKEN) {
            bad_state_as(v, "state-kind", true);
        } else {
            spend(&c, v);
            v->action = GATE_FORWARD;
            v->decision = AUDIT_TOKEN_REDEEMED;
            v->reason = "token";
        }
    }
    sl_buf_free(&inner);
}

/* The retry of a client that cannot ask: the page state in params._meta (GATE_TOKEN_META). */
static void page_retry(const struct gate_ctx *g, const struct gate_input *in,
                       const struct policy_decision *d, const struct seal_binding *b,
                       uint64_t now, struct gate_verdict *v)
{
    struct seal_claims c;
    struct sl_buf inner = { 0 };
    if (open_state(g, b, in->token, true, now, &c, &inner, v) && same_arguments(&c, v) &&
        same_definition(in, &c, v)) {
        if (c.kind != SEAL_KIND_PAGE)
            bad_state_as(v, "state-kind", true);
        else
            page_round(g, in, d, &c, v);
    }
    sl_buf_free(&inner);
}

/* True iff key is declared under the tool's args:. */
static bool declared(const struct policy_arg *pa, size_t n, struct sl_str key)
{
    for (size_t i = 0; i < n; i++)
        if (pa[i].len == key.len && memcmp(pa[i].name, key.p, key.len) == 0)
            return true;
    return false;
}

/* How many undeclared keys a refusal names; the rest are counted. */
#define UNDECLARED_NAMED 8

/* strict_args: a call carrying a top-level argument the policy does not declare is refused,
 * never asked, never forwarded. Returns true when it refused (the verdict is set). */
static bool refuse_undeclared(const struct gate_input *in, const struct policy_decision *d,
                              struct gate_verdict *v)
{
    const struct json *args = in->args;
    if (args == NULL)
        return false;
    size_t n = d->nargs, bad = 0;
    const struct policy_arg *pa = d->args;
    struct sl_buf text = { 0 }, names = { 0 };
    if (args->type != JSON_OBJECT) {
        tool_error(v, AUDIT_DENY, "undeclared-argument",
                   "The policy accepts only the arguments it declares for this tool "
                   "(strict_args), and these arguments are not an object. The call was not run.");
        return true;
    }
    for (size_t i = 0; i < args->u.obj.n; i++) {
        struct sl_str key = args->u.obj.v[i].key;
        if (declared(pa, n, key))
            continue;
        if (++bad <= UNDECLARED_NAMED) {
            struct sl_buf q = { 0 };
            json_write_string(&q, key.p, key.len);
            sl_buf_puts(&names, bad == 1 ? " " : ", ");
            confirm_neutralize(&names, sl_buf_str(&q), 64);
            sl_buf_free(&q);
        }
    }
    if (bad > UNDECLARED_NAMED)
        sl_buf_printf(&names, " and %zu more", bad - UNDECLARED_NAMED);
    if (bad) {
        sl_buf_printf(&text, "The policy accepts only the arguments it declares for this tool "
                             "(strict_args, rule %s), and this call carries %s not declared:%s. "
                             "The call was not run.", v->rule, bad == 1 ? "one" : "arguments",
                      names.p);
        tool_error(v, AUDIT_DENY, "undeclared-argument", text.p);
    }
    sl_buf_free(&text);
    sl_buf_free(&names);
    return bad > 0;
}

/* d is the tool's decision as gate_decide settled it (an escalated call's included): looked up
 * once per call and handed down, where each step looked it up again (eight lookups of about 130
 * instructions in a gated pair; issue 24). */
static void decide_confirm(const struct gate_ctx *g, const struct gate_input *in,
                           const struct policy_decision *d, uint64_t now, struct gate_verdict *v)
{
    unsigned ttl = d->confirm_ttl;
    if (in->args && in->args->type != JSON_OBJECT)
        return rpc_error(v, "arguments-not-object", JSONRPC_INVALID_PARAMS,
                         "arguments must be an object", NULL);
    if (!v->has_digest)
        return rpc_error(v, "arguments-not-canonical", JSONRPC_INVALID_PARAMS,
                         "arguments cannot be confirmed: over 1 MiB, or a number out of range",
                         NULL);
    /* What the person reads must be what every upstream reads (argcheck.h). */
    if (in->args && !argcheck_no_nul(in->args))
        return rpc_error(v, "nul-in-string", JSONRPC_INVALID_PARAMS,
                         "an argument string or key holds a NUL character (U+0000), which some "
                         "servers read as the end of the string, so the call cannot be confirmed",
                         NULL);
    if (in->args && !argcheck_keys_distinct(in->args))
        return rpc_error(v, "keys-differ-in-case-only", JSONRPC_INVALID_PARAMS,
                         "arguments hold two keys that differ only in letter case, Unicode case "
                         "folding or Unicode normalization (such as \"size\" and \"\u017fize\", "
                         "or an accented letter written as one character and as two); servers "
                         "disagree on which one counts, so the call cannot be confirmed",
                         NULL);
    if (in->args && !argcheck_integers_exact(in->args))
        return rpc_error(v, "integer-not-exact", JSONRPC_INVALID_PARAMS,
                         "an integer argument is beyond 2^53 and cannot be confirmed exactly; "
                         "send it as a string",
                         NULL);
    struct seal_binding b = {
        .method = SL_STR("tools/call"),
        .tool = in->tool,
        .principal = in->principal,
        .upstream = g->upstream_id,
    };
    if (!epoch_known(g)) /* a state minted now would be refused at its spend */
        return gate_refuse_spent(v, GATE_SPENT_UNAVAILABLE);
    if (in->request_state != NULL)
        return round_two(g, in, d, &b, ttl, now, v);
    if (in->token != NULL && page_possible(d)) /* a page state, from a client that cannot ask */
        return page_retry(g, in, d, &b, now, v);
    bool page = d->approval == POLICY_APPROVAL_PAGE ||
                (!in->can_elicit_form && (d->approval == POLICY_APPROVAL_CLIENT_OR_PAGE ||
                                          d->page_fallback));
    v->irreversible = d->irreversible;
    if (page)
        return ask_person(g, in, d, &b, ttl, now, v, "first-round", SEAL_KIND_PAGE);
    if (in->can_elicit_form)
        return ask_person(g, in, d, &b, ttl, now, v, "first-round", SEAL_KIND_CONFIRM);
    if (d->token_fallback)
        return token_round(g, in, &b, ttl, now, v);
    rpc_error(v, "missing-capability", MCP_MISSING_CAPABILITY,
              "This tool needs confirmation: the client capability elicitation (form) is required",
              need_form_data);
}

/* Canonical numbers cost real CPU, so arguments over GATE_MAX_ARGS are not canonicalized.
 * Leaves the canonical text in canon (which must be empty). */
static bool digest_into(const struct json *args, struct sl_buf *canon, uint8_t out[32])
{
    struct json empty = { .type = JSON_OBJECT };
    if (args == NULL)
        args = &empty;
    if (json_write_bound(args) > GATE_MAX_ARGS) { /* maybe large: measure it exactly */
        json_write(canon, args);
        bool small = canon->len <= GATE_MAX_ARGS;
        sl_buf_reset(canon);
        if (!small)
            return false;
    }
    if (canon_write(canon, args) != 0)
        return false;
    seal_sha256(canon->p, canon->len, out);
    return true;
}

bool gate_args_digest(const struct json *args, uint8_t out[32])
{
    struct sl_buf canon = { 0 };
    bool ok = digest_into(args, &canon, out);
    sl_buf_free(&canon);
    return ok;
}

/* A tool whose live definition is not the one the policy pinned (or that has no pin under
 * defaults.unpinned: deny) is refused before anything else about it is decided. Returns true
 * when it refused. A deny tool is left to say so itself. */
static bool refuse_pin(const struct gate_input *in, const struct policy_decision *d,
                       struct gate_verdict *v)
{
    if (d->action == POLICY_DENY)
        return false;
    enum pin_status st = pin_check(in->policy, in->tool,
                                   in->has_definition ? in->definition : NULL, in->listed);
    if (!pin_refuses(st))
        return false;
    snprintf(v->rule_buf, sizeof(v->rule_buf), "%s:%s", pin_reason(st),
             st == PIN_UNPINNED ? "defaults.unpinned" : d->rule);
    v->rule = v->rule_buf;
    const char *text =
        st == PIN_MISMATCH
            ? "The server's definition of this tool (its description, input schema or "
              "annotations) is not the one the policy pinned: it changed since it was reviewed. "
              "sluice denies the tool until the policy's pin is reviewed. The call was not run."
        : st == PIN_UNLISTED
            ? "The policy pins this tool, and the server has not listed it, so its definition "
              "cannot be checked. The call was not run."
            : "The policy denies tools it has no pin for (defaults.unpinned: deny), and this "
              "tool has none. The call was not run.";
    tool_error(v, AUDIT_DENY, pin_reason(st), text);
    v->pin_refused = true;
    sl_buf_reset(&v->args_json);
    return true;
}

static const char variant_data[] = "{\"reason\":\"tool-name-variant\"}";

/* A name the policy does not hold that reads as one it does (namefold.h): refused, as a
 * JSON-RPC error, before anything else looks at the call. A server that matches names loosely
 * would run the policy's tool under defaults.action otherwise. The rule named (and journaled) is
 * "tool-name-variant:tools.<the policy's name>", as a pin's refusal names its own. */
static bool refuse_variant(const struct gate_input *in, struct gate_verdict *v)
{
    size_t k = namefold_policy_variant(in->policy, in->tool);
    if (k == policy_tool_count(in->policy))
        return false;
    struct policy_decision d;
    const char *name = policy_tool_name(in->policy, k);
    policy_lookup(in->policy, name, strlen(name), &d);
    snprintf(v->rule_buf, sizeof(v->rule_buf), "tool-name-variant:%s", d.rule);
    v->rule = v->rule_buf;
    rpc_error(v, "tool-name-variant", JSONRPC_INVALID_PARAMS,
              "Invalid params: the tool's name differs from one the policy names only by letter "
              "case, width, accents, separators or invisible characters; sluice refuses it (the "
              "policy must name it exactly)",
              variant_data);
    return true;
}

bool gate_hides_listed(const struct policy *p, struct sl_str name)
{
    if (!policy_hide_denied(p))
        return false;
    struct policy_decision d;
    policy_lookup(p, name.p ? name.p : "", name.len, &d);
    if (d.action == POLICY_DENY)
        return true;
    /* Refused when called (refuse_variant): listed, it would only invite a refusal. */
    return !d.named && namefold_policy_variant(p, name) != policy_tool_count(p);
}

/* Whether in answers a question sluice asked: a round two with sluice's answer (2026-07-28, or a
 * held call's answer, which comes the same way) or a held call whose page decided. Such a call is
 * decided as the question it answers even when a reload has since allowed the tool: the person
 * said no, and an allowed tool runs only when called again. (A reload that denies it refuses.) */
static bool answers_question(const struct gate_input *in)
{
    return in->request_state != NULL &&
           (in->page_decided || json_get(in->input_responses, GATE_CONFIRM_KEY) != NULL);
}

void gate_decide(const struct gate_ctx *g, const struct gate_input *in, uint64_t now,
                 struct gate_verdict *v)
{
    memset(v, 0, sizeof(*v));
    struct policy_decision d;
    policy_lookup(in->policy, in->tool.p, in->tool.len, &d);
    v->rule = d.rule;
    if (!d.named && refuse_variant(in, v))
        return;
    /* Argument rules come first: a rule can refuse a call outright, or turn an allowed call into
     * one that needs confirmation (never the other way). Only a tool the policy names has any. */
    struct rules_result rr = { .outcome = RULES_PASS };
    if (d.named)
        rules_check_decided(&d, in->args, &rr);
    /* The digest of the canonical arguments: a gated call binds it into its state, and the audit
     * journal names every call by it. Canonicalizing and hashing cost a tenth of a passthrough
     * call, so an allowed call pays only when a journal reads it. Without a digest, an allowed
     * call goes on and a gated one is refused (decide_confirm). */
    bool answer = answers_question(in);
    bool confirm = d.action == POLICY_CONFIRM ||
                   (d.action == POLICY_ALLOW && (rr.outcome == RULES_ESCALATE || answer));
    if (confirm || in->journal)
        v->has_digest = digest_into(in->args, &v->args_json, v->digest);
    if (refuse_pin(in, &d, v))
        return;
    /* strict_args first: an undeclared argument refuses the call whatever else it holds. */
    if (d.action != POLICY_DENY && d.strict_args && refuse_undeclared(in, &d, v)) {
        sl_buf_reset(&v->args_json);
        return;
    }
    if (d.action != POLICY_DENY && rr.outcome == RULES_DENY) {
        snprintf(v->rule_buf, sizeof(v->rule_buf), "%s", rr.rule);
        v->rule = v->rule_buf;
        struct sl_buf text = { 0 };
        sl_buf_printf(&text, "The policy refuses these arguments: %s (rule %s). The call was not "
                             "run.", rr.why, rr.rule);
        tool_error(v, AUDIT_DENY, "argument-rule", text.p);
        sl_buf_free(&text);
        sl_buf_reset(&v->args_json);
        return;
    }
    if (d.action == POLICY_ALLOW && rr.outcome == RULES_ESCALATE) {
        snprintf(v->rule_buf, sizeof(v->rule_buf), "%s", rr.rule);
        v->rule = v->rule_buf;
        d.action = POLICY_CONFIRM;
        d.token_fallback = false; /* escalated calls ask a person or do not run */
        d.observe = NULL;
    } else if (d.action == POLICY_ALLOW && answer) {
        d.action = POLICY_CONFIRM; /* decided as asked: a reload cannot run a declined call */
        d.token_fallback = false;
        d.observe = NULL;
    }
    if (d.action != POLICY_CONFIRM)
        sl_buf_reset(&v->args_json); /* only a gated call forwards the canonical bytes */
    if (d.action == POLICY_ALLOW) {
        v->action = GATE_FORWARD;
        v->decision = AUDIT_ALLOW;
        v->reason = "policy";
        return;
    }
    if (d.action == POLICY_DENY) {
        struct sl_buf text = { 0 };
        sl_buf_puts(&text, "The policy denies this tool (rule ");
        sl_buf_puts(&text, d.rule);
        sl_buf_puts(&text, "). The call was not run.");
        tool_error(v, AUDIT_DENY, "policy", text.p);
        sl_buf_free(&text);
        return;
    }
    v->gated = true;
    v->ttl = d.confirm_ttl;
    v->observe = d.observe;
    decide_confirm(g, in, &d, now, v);
    if (v->action != GATE_FORWARD && !v->page_check) /* a page check may still forward */
        sl_buf_reset(&v->args_json);
}

void gate_refuse_spent(struct gate_verdict *v, enum gate_spent why)
{
    bool token = v->decision == AUDIT_TOKEN_REDEEMED; /* what was spent, said by its name */
    sl_buf_reset(&v->args_json); /* only a forwarded call carries arguments */
    v->recheck = v->continued = false;
    if (why == GATE_SPENT_REPLAYED)
        return bad_state_as(v, "replayed", token);
    if (why == GATE_SPENT_EXPIRED)
        return tool_error(v, AUDIT_REFUSED, v->reason ? v->reason : "state-invalid",
                          token ? "The token is no longer valid. The call was not run."
                                : "The confirmation is no longer valid. The call was not run.");
    if (why == GATE_SPENT_RESET)
        return tool_error(v, AUDIT_REFUSED, "store-reset",
                          "sluice's store lost its records after this confirmation was made, so "
                          "sluice cannot tell whether it was used. The call was not run; call "
                          "the tool again to be asked again.");
    tool_error(v, AUDIT_REFUSED, "store-unavailable",
               "sluice cannot reach its store; the call was not run.");
}

void gate_verdict_free(struct gate_verdict *v)
{
    sl_buf_free(&v->upstream_state);
    sl_buf_free(&v->args_json);
    sl_buf_free(&v->text);
    sl_buf_free(&v->state);
    sl_buf_free(&v->token);
    sl_buf_free(&v->ask.blob);
    policy_unref(v->pinned);
    v->pinned = NULL;
}

void gate_verdict_pin(struct gate_verdict *v, struct policy *p)
{
    if (v->pinned == NULL)
        v->pinned = policy_ref(p);
}

/* Only the buffers gate_verdict_free frees are cleared: zeroing the whole verdict (about
 * 700 bytes) cost about 180 instructions, twice a gated pair (issue 24). */
void gate_verdict_move(struct gate_verdict *dst, struct gate_verdict *src)
{
    *dst = *src;
    src->upstream_state = src->args_json = src->text = src->state = src->token =
        src->ask.blob = (struct sl_buf){ 0 };
    src->pinned = NULL;
}

uint64_t gate_clock(void)
{
    static uint64_t last;
    uint64_t now = (uint64_t)time(NULL);
    if (now > last)
        last = now;
    return last;
}

int gate_wrap_upstream_state(const struct gate_ctx *g, struct sl_str principal, struct sl_str tool,
                             const uint8_t digest[32], unsigned ttl, uint64_t now,
                             const uint8_t *observed, const uint8_t *definition,
                             struct sl_str upstream_state, bool approved, struct sl_buf *out)
{
    struct seal_binding b = {
        .method = SL_STR("tools/call"),
        .tool = tool,
        .principal = principal,
        .upstream = g->upstream_id,
    };
    /* inner = [observed digest, when the tool observes] + the upstream's own state; the kind
     * says which. Only an approval has an observation. */
    if (!approved)
        observed = NULL;
    struct sl_buf inner = { 0 };
    if (observed)
        sl_buf_put(&inner, observed, 32);
    sl_buf_put(&inner, upstream_state.p, upstream_state.len);
    struct seal_claims c = { .kind = !approved ? SEAL_KIND_CONTINUE_UNGATED
                                     : observed ? SEAL_KIND_CONTINUE_OBSERVED
                                                : SEAL_KIND_CONTINUE,
                             .iat = now, .exp = now + ttl, .inner = sl_buf_str(&inner) };
    memcpy(c.args_digest, digest, sizeof(c.args_digest));
    if (definition)
        memcpy(c.def_digest, definition, sizeof(c.def_digest));
    int rc = mint_state(g, &b, &c, out);
    sl_buf_free(&inner);
    return rc;
}

int gate_open_upstream_state(const struct gate_ctx *g, struct sl_str principal, struct sl_str tool,
                             const uint8_t digest[32], uint64_t now, const struct json *state,
                             struct sl_buf *inner, const char **why)
{
    struct seal_binding b = {
        .method = SL_STR("tools/call"),
        .tool = tool,
        .principal = principal,
        .upstream = g->upstream_id,
    };
    struct seal_claims c;
    if (state == NULL || state->type != JSON_STRING || state->u.str.len > SEAL_TOKEN_MAX) {
        *why = "state-malformed";
        return -1;
    }
    enum seal_status ss = seal_open(g->keys, &b, now, state->u.str.p, state->u.str.len, &c, inner);
    if (ss != SEAL_OK) {
        *why = seal_strerror(ss);
        return -1;
    }
    if (!g->shared_store && CRYPTO_memcmp(c.origin, g->origin, SEAL_ORIGIN_LEN) != 0) {
        *why = "minted-by-another-process";
        return -1;
    }
    if (c.kind != SEAL_KIND_CONTINUE && c.kind != SEAL_KIND_CONTINUE_UNGATED &&
        c.kind != SEAL_KIND_CONTINUE_OBSERVED) {
        *why = "state-kind";
        return -1;
    }
    if (CRYPTO_memcmp(c.args_digest, digest, SEAL_DIGEST_LEN) != 0) {
        *why = "arguments-changed";
        return -1;
    }
    struct sl_str rest = c.inner; /* the upstream's part: after the observation, if any */
    if (c.kind == SEAL_KIND_CONTINUE_OBSERVED) {
        if (rest.len < SEAL_DIGEST_LEN) {
            *why = "state-without-observation";
            return -1;
        }
        rest.p += SEAL_DIGEST_LEN;
        rest.len -= SEAL_DIGEST_LEN;
    }
    /* rest points into inner: moved to its start, so inner holds exactly the wrapped part. */
    if (rest.len)
        memmove(inner->p, rest.p, rest.len);
    inner->len = rest.len;
    return 0;
}
