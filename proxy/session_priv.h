/* session_priv.h: what the files of a session share. Included only by session*.c.
 *
 * The data path reads in file order:
 *   session.c          dispatch: a client message in, to its handler; answers sluice gives
 *                      itself (initialize, server/discover, ping); the writers to the client and
 *                      the journal; the session's own lifecycle
 *   session_call.c     the gate for tools/call, once for every path that decides a call: the
 *                      client's call, a held call's answer, an observed call
 *   session_relay.c    upstream out and back: forwarded requests (struct fwd) and the rounds
 *                      relayed to the client (struct relayed)
 *   session_held.c     calls held while a legacy client's person is asked (struct held)
 *   session_observe.c  gated calls waiting for their observe call (struct observation)
 *   session_spend.c    calls waiting for the store (struct spend): to spend their nonce, or to
 *                      check and record a new question (approval fatigue, store_ask); and
 *                      retries waiting for the first run's outcome. Both waits are one
 *                      lifecycle: a call the store has not answered yet
 * Each lifecycle has its own list in struct session, and its file alone starts, finds and ends
 * its entries; the others reach them only through the functions below. */
#ifndef SL_SESSION_PRIV_H
#define SL_SESSION_PRIV_H

#include "session.h"

struct fwd;         /* session_relay.c */
struct relayed;     /* session_relay.c */
struct held;        /* session_held.c */
struct observation; /* session_observe.c */
struct spend;       /* session_spend.c */
struct awaited;     /* session_spend.c */

#define SESSION_MAX_RELAYED 256   /* upstream requests of one client waiting for its answer */
#define SESSION_MAX_HELD 32       /* calls one client may have waiting for a person */

struct session {
    struct session_env *env;
    struct event_base *base;
    struct observation *observations; /* gated calls waiting for their observe call */
    struct jsonrpc_msg *stash;      /* the first message, held until the upstream is initialized */
    struct relayed *relayed;
    size_t nrelayed;
    uint64_t next_relay;
    struct held *helds;             /* calls waiting for a person */
    uint64_t next_elicit;
    bool legacy_form;               /* the legacy client declared form elicitation */
    bool legacy_mode_field;         /* ... on 2025-11-25, where requests carry "mode" */
    const struct session_io *io;
    void *io_arg;
    char *principal;
    char principal_buf[96];       /* principal, when it fits ("bearer:" and 64 hex digits do) */
    struct fwd *fwds;             /* forwarded, unanswered */
    struct sl_arena *caps_arena;  /* a legacy client's initialize capabilities */
    struct json *legacy_caps;
    bool started;
    bool up_ready;                /* session_upstream_ready was called: lines no longer wait */
    struct spend *spends;         /* calls waiting for the store */
    struct awaited *awaited;      /* accepted calls whose outcome the store waits for */
    bool gone;                    /* the client left; approved calls still finish (zombie) */
    bool stopping;                /* sluice stops: nothing is kept running */
    struct session *zprev, *znext; /* the zombie list (session.c) */
};

/* ===== session.c: writing to the client, and the journal ===== */

/* One message for the client (see struct session_io): rel is the request it belongs to,
 * final that it is rel's response, code the JSON-RPC error code of an error response, else 0. */
void session_send(struct session *s, struct sl_str rel, bool final, int code, struct sl_str line);
static inline void session_send_line(struct session *s, struct sl_str rel, bool final,
                                     struct sl_str line)
{
    session_send(s, rel, final, 0, line);
}
/* The response to request id: a result (JSON text, or a tree), an error, or a tool error
 * (isError: true, text) as a client of that era reads it. */
void session_reply_result(struct session *s, struct sl_str id, struct sl_str result_json);
void session_reply_value(struct session *s, struct sl_str id, const struct json *result);
void session_reply_error(struct session *s, struct sl_str id, int code, const char *message,
                         const char *data);
void session_reply_tool_error(struct session *s, struct sl_str id, bool modern, const char *text);
/* A request id the client sent (a string or a number) as the JSON text it is kept by, into the
 * caller's buffer b (free it with sl_buf_free). false: not an id of a request (b untouched). */
bool session_id_text(const struct json *id, struct sl_buf *b);
/* One record in the audit journal (and the decision metric). digest may be NULL. */
void session_audit(struct session *s, struct sl_str tool, const uint8_t *digest,
                   enum audit_decision decision, const char *reason,
                   enum audit_upstream upstream,
                   const char *id);

/* ===== session_call.c: the gate for tools/call ===== */

/* Client request m (tools/call, params an object) with id: checked, decided and acted on.
 * Returns true when it kept m. */
bool call_handle(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                 const struct era_envelope *env);
/* The gate's input for call m; caps: the request's declared capabilities (modern), else the
 * legacy client's. call_caps: the capabilities call m declares in its envelope. */
void call_input(struct session *s, struct jsonrpc_msg *m, bool modern, const struct json *caps,
                struct gate_input *in);
const struct json *call_caps(struct jsonrpc_msg *m);
/* Acts on verdict v for call m: forward, observe, hold, or answer. Returns true when it kept m;
 * takes over the verdict's buffers when it keeps them (they are then zeroed). */
bool call_act(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
              struct gate_verdict *v);
/* Forwards call m as verdict v approved it. Returns true when the forwarded call took m. */
bool call_forward(struct session *s, struct jsonrpc_msg *m, bool modern, struct sl_str tool,
                  const struct gate_verdict *v, const char *idc);
/* Answers (and journals) a verdict that does not forward, in the client's era. */
void call_refuse(struct session *s, struct sl_str id, struct sl_str tool,
                 const struct gate_verdict *v, bool modern);

/* ===== session_pin.c: tool pins (pin.h) ===== */

/* Fills in->listed, has_definition and definition for in->tool from the upstream's registry. */
void pin_input(struct session *s, struct gate_input *in);
/* A tool refused by its pin (reason: pin_reason): logged and counted. listing: left out of a
 * tools/list reply; else a call denied (journaled by the caller). */
void pin_refused(struct session *s, struct sl_str tool, const char *reason, bool listing);
/* True when tool (one entry of a tools/list reply) is to be left out because its pin refuses
 * it; logged, counted and journaled here. */
bool pin_hides(struct session *s, const struct json *tool);

/* ===== session_relay.c: forwarded requests and relayed rounds ===== */

/* Sends request m upstream with params (as the client's era has them). Returns the forwarded
 * request, which owns m from then on; or NULL (the client got an error; m is still the
 * caller's). */
struct fwd *fwd_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                      const struct json *params);
/* f is tools/call tool, forwarded on verdict v: journaled when the upstream answers, and an
 * upstream question about it is sealed as the gate asks. */
void fwd_mark_call(struct fwd *f, struct sl_str tool, const struct gate_verdict *v);
/* The client cancelled its request m->params.requestId: true when it was a forwarded one (it
 * is then journaled, cancelled upstream and gone). */
bool fwd_cancel(struct session *s, struct jsonrpc_msg *m);
size_t fwd_count(const struct session *s);
/* The client went away: cancels each forwarded request upstream, except approved calls, which
 * finish and keep their outcome for a retry. */
void fwd_free_all(struct session *s);
/* Client response m answers a request of ours that relays an upstream's: true when it did. */
bool relayed_answer(struct session *s, struct jsonrpc_msg *m);
void relayed_free_all(struct session *s);

/* ===== session_held.c: calls held for a person (legacy clients) ===== */

/* Holds call m (taking ownership) on verdict v (GATE_ASK) and asks the client's person with an
 * elicitation/create of ours. */
void held_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                const struct gate_verdict *v);
/* The held call whose client id (by_elicit: whose elicitation id of ours) is id, or NULL. */
struct held *held_find(struct session *s, const struct json *id, bool by_elicit);
/* The client answered h's question with answer: decided through the gate, h released. */
void held_answer(struct held *h, struct jsonrpc_msg *answer);
size_t held_count(const struct session *s);
/* The ways a held call ends; held_release in session_held.c does each one's part. */
enum held_end {
    HELD_ANSWERED,      /* the answer's verdict forwarded, observed or answered the call */
    HELD_REFUSED,       /* the answer cannot decide: the client's error, a stale question */
    HELD_TIMEOUT,       /* no answer within the question's ttl */
    HELD_CANCELLED,     /* the client cancelled the call (notifications/cancelled) */
    HELD_CLIENT_GONE,   /* the session ends: the client left */
    HELD_UPSTREAM_GONE, /* the upstream is gone, or sluice is stopping */
};
/* The one way out of a held call. reason and text (NULL: the end's own) are what the journal
 * and the client's tool error say. h is freed. */
void held_release(struct held *h, enum held_end why, const char *reason, const char *text);
/* Releases every held call of s the same way. */
void held_release_all(struct session *s, enum held_end why, const char *reason,
                      const char *text);

/* ===== session_observe.c: observing before the question and after the accept ===== */

/* Holds call m (taking ownership, and v's buffers) while its observe tool reads the target,
 * then decides again (GATE_OBSERVE) or forwards if nothing changed (an accept's recheck). */
void observation_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                       struct gate_verdict *v);
/* The client cancelled request m->params.requestId: true when it was waiting for its
 * observation (journaled and dropped). */
bool observation_cancel(struct session *s, struct jsonrpc_msg *m);
size_t observation_count(const struct session *s);
/* keep_approved: the client left; observations after an accept go on to forward the call. */
void observation_free_all(struct session *s, bool keep_approved);

/* ===== session_spend.c: spending a nonce before acting ===== */

/* Takes call m and verdict v (its buffers; v is zeroed): spends v's nonce in the store, then acts
 * on v (call_act), or answers a retry with the kept outcome, or refuses. */
void spend_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                 struct gate_verdict *v);
/* Takes call m and verdict v (GATE_ASK with ask.check; its buffers; v is zeroed): asks the
 * store whether the question may be asked (store_ask), then acts on v as the answer made it
 * (call_act): the new question, the identical open one, or a refusal. */
void ask_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
               struct gate_verdict *v);
/* The client cancelled request m->params.requestId: true when it was waiting for the store. */
bool spend_cancel(struct session *s, struct jsonrpc_msg *m);
size_t spend_count(const struct session *s);
/* keep_approved: the client left; accepted calls go on (their outcome is kept for a retry). */
void spend_free_all(struct session *s, bool keep_approved);

/* ===== session_relay.c: kept outcomes ===== */

/* True when request rel is an approved call forwarded upstream (the store keeps its outcome). */
bool fwd_ran(struct session *s, struct sl_str rel);
/* line is the final message for request rel: if rel is an accepted call whose nonce this
 * session spent, line is its outcome, for the store (session_spend.c). */
void spend_settle(struct session *s, struct sl_str rel, struct sl_str line);
void awaited_free_all(struct session *s);
/* A session whose client left may free itself once nothing approved is running (session.c). */
void session_maybe_reap(struct session *s);

#endif /* SL_SESSION_PRIV_H */
