/* gate.h: the decision for one tools/call, and the confirmation round of MCP 2026-07-28.
 *
 * gate_decide() performs no I/O and reads no clock: the same inputs give the same verdict, which
 * is what lets the tests walk every answer shape. A verdict on a state or token that came back
 * says which nonce to spend (`spend`): the caller records it in the store (store.h) and acts on
 * the verdict only when the nonce was fresh (invariant 3); otherwise gate_refuse_spent.
 *
 * Approval fatigue (asks.h) is the store's too, so that replicas sharing a store share it: a new
 * question comes as GATE_ASK with `ask.check` set, and the caller asks the store (store_ask)
 * before sending it. ASKS_OK: send it as it is; ASKS_SAME: gate_share_question (an identical
 * question is open: hand out that one); any other status: gate_refuse_ask; a store that cannot
 * answer: gate_refuse_spent(GATE_SPENT_UNAVAILABLE). All the wording stays here.
 *
 * A verdict is data, not wire text: the gate says what to ask or why it refuses, and the session
 * writes it for the client's era (msg_verdict_result, msg_question_params in msg.h).
 *
 * Verdicts (DESIGN.md §5):
 *   GATE_FORWARD     send the call upstream. For a gated call, `args_json` holds the canonical
 *                    arguments, the very bytes that were hashed and shown, and the caller must
 *                    forward those, without inputResponses and requestState.
 *   GATE_ASK         ask the person `text` (the question's message) under `state` (the sealed
 *                    requestState). The upstream is not contacted.
 *   GATE_REFUSE      answer with a tool error (isError: true) whose text is `text`, a message the
 *                    model can act on; `token` holds a one-time token when one was issued.
 *                    Nothing is forwarded.
 *   GATE_REFUSE_RPC  answer with a JSON-RPC error (rpc_code, rpc_message, rpc_data). Nothing is
 *                    forwarded.
 *   GATE_OBSERVE     the tool observes (policy observe:): call the observe tool, then decide again
 *                    with gate_input.observed set. Nothing is forwarded.
 * Every path that is not an exact, verified accept ends in a refusal. */
#ifndef SL_GATE_H
#define SL_GATE_H

#include "asks.h"
#include "audit.h"
#include "json.h"
#include "policy.h"
#include "seal.h"

#define GATE_CONFIRM_KEY "sluice.confirm"  /* our key in inputRequests / inputResponses */
#define GATE_MAX_ARGS    (1u << 20)        /* bytes of arguments a gated call may carry */
#define GATE_TOKEN_META  "dev.sluice/token" /* params._meta key of a one-time token */

/* Long-lived context, owned by main. */
struct gate_ctx {
    const struct seal_keyring *keys;
    struct sl_str upstream_id;   /* bound into every state */
    struct sl_str server_name;   /* shown to the person */
    /* The store's epoch (store_epoch), sealed into every state. A store of this process's own
     * is random per process, so a state opens only where it was minted: another replica, or this
     * one restarted, has no record of which nonces were spent. A shared store (shared_store)
     * checks the origin itself when the nonce is spent. */
    const uint8_t *origin;
    bool shared_store;
};

/* What the observe tool returned just now, for a question (PROTOCOL: none; see observe.h). */
struct gate_observation {
    uint8_t digest[32];
    struct sl_str summary;               /* shown to the person after the arguments */
};

struct gate_input {
    const struct policy *policy;
    struct sl_str principal;
    struct sl_str tool;
    const struct json *args;             /* params.arguments, or NULL when absent */
    bool can_elicit_form;                /* form elicitation declared for this request */
    /* The approval page (approval.h): the caller's principal is in->principal; this is what
     * the page shows. */
    const struct json *request_state;    /* params.requestState, or NULL */
    const struct json *input_responses;  /* params.inputResponses, or NULL */
    const struct json *token;            /* params._meta["dev.sluice/token"], or NULL */
    const struct gate_observation *observed; /* set when the caller has observed (GATE_OBSERVE) */
    bool journal;                        /* a journal names every call by its digest */
    bool page_decided;                   /* a held call's page has decided (2025-11-25) */
    /* The tool's live definition (pin.h), as the upstream's tools/list replies gave it last:
     * listed says whether it was listed at all, has_definition whether definition holds its
     * digest. Checked against the policy's pin first; a gated call binds it into its state,
     * and a state that comes back under another definition is refused. */
    bool listed, has_definition;
    uint8_t definition[32];
};

enum gate_action { GATE_FORWARD, GATE_ASK, GATE_REFUSE, GATE_REFUSE_RPC, GATE_OBSERVE };

/* A new question, for the store to check against the principal's limits and record as open
 * (store_ask) before it is sent: about what (the verdict's digest; who and which tool are the
 * gate_input's principal and tool, which the caller holds: copies of them here cost about 540
 * instructions a question, issue 24), the new state's nonce and expiry, the policy's limits,
 * and the question as an identical call would get it. */
struct gate_ask {
    bool check;                  /* set: the caller runs store_ask before acting */
    uint8_t nonce[SEAL_NONCE_LEN];
    uint64_t exp;
    unsigned max_open;           /* defaults.max_open_confirmations */
    unsigned per_minute;         /* defaults.max_questions_per_minute */
    struct sl_buf blob;          /* the state, a newline, the message */
};

struct gate_verdict {
    enum gate_action action;
    bool gated;                  /* the policy said confirm */
    bool pin_refused;            /* refused by the tool's pin (reason: pin_reason, pin.h) */
    bool shared;                 /* GATE_ASK: the same question as one still open */
    unsigned ttl;                /* gated: seconds a question stays answerable */
    enum audit_decision decision;/* for the audit journal and the decision metric */
    const char *reason;          /* machine-readable cause, static */
    const char *rule;            /* the policy rule that applied (owned by the policy, or
                                  * rule_buf for an argument rule) */
    char rule_buf[160];
    bool has_digest;
    uint8_t digest[32];          /* SHA-256 of the canonical arguments */
    struct sl_buf args_json;     /* GATE_FORWARD of a gated call: canonical arguments */
    const struct policy_observe *observe; /* the tool's observe rule, or NULL */
    /* The policy rule and observe point into, held while the verdict waits past the loop pass
     * that made it (gate_verdict_pin): a reload meanwhile frees the policy otherwise. */
    struct policy *pinned;
    bool recheck;                /* GATE_FORWARD: observe again, forward only if the result's
                                  * digest still equals `observed` (sealed at question time) */
    uint8_t observed[32];
    /* A state or token came back (round two and later): the tool's definition it was bound to
     * and the gate found live (all zero: not known). A gated call is forwarded only while sluice
     * still knows that one (call_forward): the store's spend or the observe tool's read again
     * comes between. */
    uint8_t definition[32];
    bool continued;              /* GATE_FORWARD answering the upstream's own question: */
    struct sl_buf upstream_state;/* ... forward with this as requestState (empty: none) */
    struct sl_buf text;          /* GATE_ASK: the question's message; GATE_REFUSE: the tool
                                  * error's text (plain text, not JSON) */
    struct sl_buf state;         /* GATE_ASK: the sealed requestState */
    struct sl_buf token;         /* GATE_REFUSE of decision token-issued: the one-time token */
    int rpc_code;                /* GATE_REFUSE_RPC */
    const char *rpc_message;     /* static */
    const char *rpc_data;        /* static JSON text or NULL */
    /* A state or token came back: spend its nonce (minted under origin, valid until exp)
     * before acting on the verdict. */
    bool spend;
    bool spent;                  /* set by the caller: the store recorded it, fresh */
    uint8_t nonce[SEAL_NONCE_LEN];
    uint8_t origin[SEAL_ORIGIN_LEN];
    uint64_t exp;
    bool answers;                /* spend: the nonce is a question's: once spent it is no longer
                                  * open (store_answered) */
    struct gate_ask ask;         /* GATE_ASK of a new question */
    /* The approval page (approval.h). page: GATE_ASK whose question is on sluice's page, not
     * the client's: state is its state, page_id its page; page_new: asked now (the session
     * writes the page's record, `text` the question with every value whole up to 128 KiB
     * (confirm_call's whole), valid until page_exp, and tells the notifier; a page question shared by an
     * identical call has no text). page_check: a page state came back; the session reads the decision under
     * page_id (store_page_get) and hands it to gate_page_decided before acting. page_kept: the
     * session read the page's record of a shared page question (page_look_start), so its URL
     * may go out. */
    bool page, page_new, page_check, page_kept;
    bool irreversible;           /* the tool's irreversible: (for the page) */
    uint8_t page_id[16];
    uint64_t page_exp;
};

/* Pins (pin.h): a tool that is not deny and whose pin_check refuses is refused first, decision
 * AUDIT_DENY, reason its pin_reason, rule "<reason>:tools.<name>" or
 * "unpinned:defaults.unpinned"; a state or token minted under another definition than the one
 * the call comes back under is refused with reason "definition-changed".
 *
 * Decides. now is unix seconds and must never go backwards between calls (a step back would let
 * the replay store forget a nonce whose state still opens): see gate_clock(). Always fills *v
 * (free with gate_verdict_free). */
void gate_decide(const struct gate_ctx *g, const struct gate_input *in, uint64_t now,
                 struct gate_verdict *v);
void gate_verdict_free(struct gate_verdict *v);
/* With defaults.hide_denied, whether tools/list leaves the server tool name out: a tool the
 * policy denies, or a name the policy does not hold that reads as one it does (namefold.h),
 * whose every call gate_decide refuses. Without hide_denied, false: the list passes as the
 * server sends it. */
bool gate_hides_listed(const struct policy *p, struct sl_str name);
/* v will outlive this loop pass: it holds a reference to p, the policy that made it (once). */
void gate_verdict_pin(struct gate_verdict *v, struct policy *p);
/* Moves *src into *dst: dst owns the buffers now, and src holds none (freeing it is a no-op). */
void gate_verdict_move(struct gate_verdict *dst, struct gate_verdict *src);

/* The store did not let v's nonce be spent: v becomes the refusal for why. */
enum gate_spent {
    GATE_SPENT_REPLAYED,    /* spent before (and this is not a retry of the accepted call) */
    GATE_SPENT_RESET,       /* the store lost its records after the state was minted */
    GATE_SPENT_UNAVAILABLE, /* the store cannot be reached */
    GATE_SPENT_EXPIRED,     /* (a legacy call's JSON-RPC refusal, said as a tool error) */
};
void gate_refuse_spent(struct gate_verdict *v, enum gate_spent why);

/* The store found v's question over a limit (ASKS_OPEN, ASKS_RATE, ASKS_FULL or
 * ASKS_PRINCIPALS_FULL): v becomes the refusal that says which. */
void gate_refuse_ask(struct gate_verdict *v, enum asks_status why);
/* The store holds an identical open question (ASKS_SAME), as blob (gate_ask.blob of the verdict
 * that asked it): v becomes that question, its state and message (v->shared). false when blob is
 * not one (v is then the store-unavailable refusal). */
bool gate_share_question(struct gate_verdict *v, struct sl_str blob);

/* v is a page_check verdict for tool, called by caller; the store's answer: found (decision is
 * the record, approval_decision_encode), not found (pending), or error (store_failed). v becomes
 * the forward (with `spend` set: the state runs once), the same page again (pending), or a
 * refusal (declined, or decided by someone the policy does not allow now). */
void gate_page_decided(const struct policy *policy, struct sl_str caller, struct sl_str tool,
                       bool found, bool store_failed, struct sl_str decision,
                       struct gate_verdict *v);

/* The digest the journal names a call by, as gate_decide computes it: SHA-256 of the canonical
 * arguments (absent arguments count as {}). false: none (not canonical, or over GATE_MAX_ARGS). */
bool gate_args_digest(const struct json *args, uint8_t out[32]);

/* When an approved call gets input_required from the upstream, the client must come back through
 * the gate: this seals the upstream's requestState (may be empty) inside a state of ours bound to
 * the same tool, principal and argument digest. Appends the token to out; 0 or -1. */
/* observed (may be NULL): the digest the person's approval was checked against; sealed too, so
 * the next round observes again before it is forwarded. */
/* definition (may be NULL: not known): the tool's live definition digest, bound as a question's
 * is. */
/* approved: a person approved the call (its tool is gated); a state of an ungated call is
 * refused by the gate if a reload gates the tool before the next round (no one approved it). */
int gate_wrap_upstream_state(const struct gate_ctx *g, struct sl_str principal, struct sl_str tool,
                             const uint8_t digest[32], unsigned ttl, uint64_t now,
                             const uint8_t *observed, const uint8_t *definition,
                             struct sl_str upstream_state, bool approved, struct sl_buf *out);

/* The counterpart for a call the policy does not gate (a parked call's round, session_park.c):
 * opens state under the same binding and puts the wrapped upstream part into inner (the
 * caller's, emptied first). 0, or -1 with *why (static) when the state is malformed, fails its
 * seal, was minted by another process, is not a continuation, or was bound to other arguments. */
int gate_open_upstream_state(const struct gate_ctx *g, struct sl_str principal, struct sl_str tool,
                             const uint8_t digest[32], uint64_t now, const struct json *state,
                             struct sl_buf *inner, const char **why);

/* Unix seconds from the wall clock, never less than the last value returned. */
uint64_t gate_clock(void);

#endif /* SL_GATE_H */
