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
 *   session_park.c     a modern client's call parked between its rounds while a legacy upstream
 *                      asks its own questions (struct park), in a process-wide table
 *   session_spend.c    calls waiting for the store (struct spend): to spend their nonce, or to
 *                      check and record a new question (approval fatigue, store_ask); and
 *                      retries waiting for the first run's outcome. Both waits are one
 *                      lifecycle: a call the store has not answered yet
 *   session_notice.c   sluice's own log notification to the client: the policy check's
 *                      findings, told once where the client accepts them
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
struct own;         /* session_own.c */
struct awaited;     /* session_spend.c */
struct park;        /* session_park.c */

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
    uint8_t legacy_can;             /* CAN_* it declared (session_legacy_can) */
    const struct session_io *io;
    void *io_arg;
    char *principal;
    char principal_buf[96];       /* principal, when it fits ("bearer:" and 64 hex digits do) */
    struct fwd *fwds;             /* forwarded, unanswered */
    /* A legacy client's initialize capabilities, as JSON text (NULL before it): parsed only
     * to make legacy_envelope, in caps_arena, at the first call to a modern upstream. A tree
     * kept from initialize cost 832 bytes of every session, idle or holding a call. */
    char *legacy_caps;
    struct sl_arena *caps_arena;
    struct json *legacy_envelope; /* era_envelope_new(legacy_caps), or NULL */
    bool started;
    bool up_ready;                /* session_upstream_ready was called: lines no longer wait */
    struct spend *spends;         /* calls waiting for the store */
    struct awaited *awaited;      /* accepted calls whose outcome the store waits for */
    /* The claimed entry the next final message settles: set by fwd_deliver just before it
     * sends the forwarded call's reply, so the outcome kept is that reply, whatever else
     * goes out under the same id (session_send). */
    struct awaited *settling;
    bool gone;                    /* the client left; approved calls still finish (zombie) */
    bool stopping;                /* sluice stops: nothing is kept running */
    struct session *zprev, *znext; /* the zombie list (session.c) */
    size_t nlistens;              /* subscriptions/listen streams it answers (session_listen.c) */
    struct own *own;              /* an upstream of its own (session_own.c), or NULL: shared */
    struct upstream *own_up;      /* that upstream (never NULL while own is set) */
    bool initialized;             /* a legacy client sent notifications/initialized */
    int8_t log_level;             /* its logging/setLevel, by rank (0: debug, also when unset) */
    uint64_t notice_gen;          /* the notice it heard (session_notice.c); 0: none */
    char *refusal;                /* session_refuse_all's text: every request gets it */
};

/* The upstream this session talks to: its own, or the one every session shares. */
static inline struct upstream *session_up(const struct session *s)
{
    return s->own ? s->own_up : s->env->up;
}

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
/* One record in the audit journal (and the decision metric). digest may be NULL. Returns 0,
 * or -1 when the journal did not take it (logged): a caller that must not act unrecorded
 * (call_forward) refuses then. */
int session_audit(struct session *s, struct sl_str tool, const uint8_t *digest,
                  enum audit_decision decision, const char *reason,
                  enum audit_upstream upstream,
                  const char *id);

/* ===== session_notice.c: sluice's own log notification ===== */

/* Request m with id (already found valid) is about to be handled: first, when s has not heard
 * the notice and accepts log notifications, the notice goes to it (not final, on id's stream).
 * A legacy logging/setLevel's level is noted here too. */
void notice_before_request(struct session *s, const struct jsonrpc_msg *m, struct sl_str id,
                           bool modern);

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
/* A gated call's forwarding record did not reach the journal: the call is not sent; it is
 * answered with an error and journaled as refused (journal-unwritable). */
void call_unjournaled(struct session *s, struct sl_str tool, const uint8_t *digest,
                      const char *idc);
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

/* Where a request of s's goes: to its upstream now; once s's own upstream, starting or opened
 * again, is ready (queued till then); or nowhere (gone for good, or it stopped reading its
 * input). A call's own upstream is opened first (park_own_upstream). */
enum fwd_route { FWD_NOW, FWD_LATER, FWD_NEVER };
enum fwd_route fwd_route(const struct session *s);
/* Answers request id of s that cannot go upstream (fwd_route FWD_NEVER) with an error saying
 * why. */
void fwd_reply_unavailable(struct session *s, struct sl_str id);
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
/* A request of s's with id (JSON text) is still forwarded and unanswered. The *_has_id below
 * say the same of their own lists: session.c refuses a request that reuses such an id. */
bool fwd_has_id(const struct session *s, struct sl_str id);
/* The client went away: cancels each forwarded request upstream, except approved calls, which
 * finish and keep their outcome for a retry. */
void fwd_free_all(struct session *s);
/* The client's stream for its request rel closed (HTTP, legacy): a relayed round of that call,
 * whose questions went out on it, ends (the call gets an isError result). */
void fwd_stream_lost(struct session *s, struct sl_str rel);
/* Client response m answers a request of ours that relays an upstream's: true when it did. */
bool relayed_answer(struct session *s, struct jsonrpc_msg *m);
/* The session's own upstream went away: the questions it asked the client are void. Each is
 * cancelled at the client (notifications/cancelled, reason why), and an answer that comes
 * anyway is dropped: it never reaches the upstream started in its place. */
void relayed_void_upstream(struct session *s, const char *why);
void relayed_free_all(struct session *s);
/* The upstream's request up_id (JSON text) gets JSON-RPC error code with message. */
void relayed_answer_error(struct session *s, struct sl_str up_id, int code, const char *message);
/* What it says when the client that would answer left. */
#define RELAYED_GONE "the client went away; nobody can answer this request"

/* The session's envelope (legacy_envelope) is about to be freed: the calls kept for a retry
 * take a copy of the _meta they were sent with. */
void fwd_own_envelopes(struct session *s);
/* The upstream's reply m (or NULL with why) to forwarded request f, as the client gets it. */
void fwd_deliver(struct fwd *f, struct jsonrpc_msg *m, const char *why);
/* A method a legacy upstream may ask its client: its capability name, else NULL. */
const char *fwd_cap_for(struct sl_str method);
/* The legacy client declared cap ("elicitation", "sampling", "roots", or "elicitation.url": an
 * elicitation.url object) at initialize. */
bool session_legacy_can(const struct session *s, const char *cap);
/* The session's upstream has not read 8 MiB sent to it: HTTP clients, which cannot be paused,
 * get BUSY_TEXT for new work (session.c). */
bool session_backlogged(const struct session *s);
#define BUSY_TEXT "upstream busy: the server is not reading what it was sent"
/* The session's own upstream is ready: the requests that waited for it are sent. fail: it
 * went away first; they are answered with an error. */
void fwd_send_unsent(struct session *s);
void fwd_fail_unsent(struct session *s, const char *why); /* why: NULL for the usual text */

/* ===== session_relay.c: for session_park.c ===== */

/* The modern tools/call of s that upstream request on is (*n: 1, or 0 when on is another
 * request); without on, the one running upstream (*n: how many there are; NULL unless 1). */
struct fwd *fwd_modern_call(struct session *s, const struct up_request *on, size_t *n);
/* The forwarded request of s whose upstream request is on (on not NULL), or NULL. */
struct fwd *fwd_of_request(struct session *s, const struct up_request *on);
struct fwd_call {
    struct session *s;              /* the session whose upstream runs it */
    struct session *to;             /* the session whose request its reply answers now */
    struct park *park;              /* NULL: not parked */
    struct jsonrpc_msg *msg;        /* the client's request of round one */
    struct sl_str tool, client_id;  /* client_id: the request its reply answers now */
    bool gated;
    bool kept;                      /* approved: it finishes when its client leaves */
    unsigned ttl;                   /* gated: confirm_ttl */
    const uint8_t *observation;     /* the approval's observed digest, or NULL */
    const uint8_t *definition;      /* gated: the tool's definition when it was forwarded (all
                                     * zero: not known); NULL: not gated */
};
struct fwd_call fwd_call_of(const struct fwd *f);
void fwd_set_park(struct fwd *f, struct park *p);
/* The reply now answers request id of session to (the client's next round, whose params are
 * params): its notes go there, under that request's progressToken and logLevel. */
void fwd_take_over(struct fwd *f, struct session *to, struct sl_str id,
                   const struct json *params);
/* A round of f that spent a state of its own goes on: s's awaited entry for nonce is f's, and
 * its outcome is f's reply (the session of a later round over HTTP is not f's own). */
void fwd_claim_round(struct fwd *f, struct session *s, const uint8_t *nonce);
/* No request waits for f now (its round was answered): f no longer names the session of the
 * last one, which may end before the next round comes. */
void fwd_let_go(struct fwd *f);
/* Ends f: journaled as cancelled, cancelled upstream (reason), freed (its park with it). */
void fwd_end(struct fwd *f, const char *reason);
/* Ends f, whose parked round expired after the server's reply m came (NULL: the server went
 * away first): nobody gets m now, but it is f's outcome, journaled and kept for a retry of a
 * state f spent (session_spend.c). Frees f and its park. */
void fwd_end_kept(struct fwd *f, struct jsonrpc_msg *m);

/* ===== session_park.c: a modern client's call, parked while a legacy upstream asks ===== */

/* Upstream request msg on s's upstream: true when it became a question of a modern call (an
 * input_required round for its client): the call whose upstream request is on, or without on
 * the one modern call in flight; or was answered with an error because it cannot be attributed
 * to one call. false: not about a modern call (relayed as before). */
bool park_question(struct session *s, struct jsonrpc_msg *msg, const struct up_request *on);
/* The upstream's reply (m, or NULL and why) to parked call p: true when p keeps it because no
 * round of the client waits yet (the next round gets it). */
bool park_keep_reply(struct park *p, struct jsonrpc_msg *m, const char *why);
/* The upstream of s cancelled its request up_id (JSON text): true when that was a question of a
 * parked call, which then no longer waits for an answer and is not asked again. */
bool park_withdraw(struct session *s, struct sl_str up_id);
/* A request of the client waits for p's next event (a round or the result). */
bool park_has_waiter(const struct park *p);
/* Whether st (an upstream state from a sealed requestState) is a parked call's handle. */
bool park_is_handle(struct sl_str st);
/* Whether verdict v continues a parked call this process does not hold (any more): with a
 * shared store its state opens on every replica (session_spend.c reads its nonce then, and
 * does not spend it). */
bool park_round_not_here(const struct gate_verdict *v);
/* Refuses the round id of s: no parked call here for its state. */
void park_refuse_absent(struct session *s, struct sl_str id);
/* p's call ends (fwd_free): p leaves the table. */
void park_forget(struct park *p);
/* Modern call m of s (its tools/call, verdict v to forward): when it is a round of a parked
 * call (a legacy upstream, a requestState of ours) it is resumed, refused (answered, and the
 * reason is journaled by the caller), or ended with the call when s's client has left or one of
 * its answers is not a result of the kind its question asks (-32602; the call is journaled
 * cancelled); m stays the caller's. */
enum park_round { PARK_NOT_A_ROUND, PARK_RESUMED, PARK_REFUSED, PARK_ENDED };
enum park_round park_resume(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                            const struct gate_verdict *v);
/* Session s ends: a parked call whose round s was waiting for ends too. */
void park_session_gone(struct session *s);
/* A parked call of s waits for its client's next round (stdio: which can no longer come). */
bool park_awaits_client(const struct session *s);
/* With an opener, modern call m with verdict v to forward gets an upstream of its own first
 * when its envelope declares what a legacy server may ask (so its questions are its own). */
void park_own_upstream(struct session *s, struct jsonrpc_msg *m);

/* ===== session_held.c: calls held for a person (legacy clients) ===== */

/* Holds call m (taking ownership) on verdict v (GATE_ASK) and asks the client's person with an
 * elicitation/create of ours. */
void held_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                const struct gate_verdict *v);
/* The same for a question on the approval page (v->page): the client gets a URL-mode
 * elicitation/create (message, url, an elicitationId) and the page's decision is polled from the
 * store; once decided, notifications/elicitation/complete, then the gate decides. */
void held_start_page(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                     const struct gate_verdict *v, struct sl_str message, struct sl_str url);
/* The held call whose client id (by_elicit: whose elicitation id of ours) is id, or NULL. */
struct held *held_find(struct session *s, const struct json *id, bool by_elicit);
/* The client answered h's question with answer: decided through the gate, h released. */
void held_answer(struct held *h, struct jsonrpc_msg *answer);
size_t held_count(const struct session *s);
bool held_has_id(const struct session *s, struct sl_str id);
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
bool observation_has_id(const struct session *s, struct sl_str id);
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
/* Takes call m and verdict v (page_check; its buffers; v is zeroed): reads the page's decision
 * from the store, hands it to gate_page_decided, then acts on v as it became (call_act). */
void page_check_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                      struct gate_verdict *v);
/* Takes call m and verdict v (a page question asked now: page_new; its buffers; v is zeroed):
 * writes the question's page record (page_record) and waits for the store to have it. Kept, v
 * is acted on with page_kept set (call_act: page_ask hands out the page); refused, or not
 * confirmed in time, the call is refused (page_not_kept) and its question closed. */
void page_keep_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                     struct gate_verdict *v);
/* Takes call m and verdict v (a page question an identical call asked, shared with this one:
 * gate_share_question; its buffers; v is zeroed): reads the question's page record first. There,
 * v is acted on with page_kept set (call_act: page_ask hands out the page); not there (the
 * first call's record was refused, so it was refused itself) or unreadable, this call is
 * refused as the first was (page_not_kept), rather than handed a URL to a page never written.
 * With a shared store an absent record is looked for again for up to --store-timeout: the first
 * call may be at another replica, its write still on its way. */
void page_look_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                     struct gate_verdict *v);
/* The client cancelled request m->params.requestId: true when it was waiting for the store. */
bool spend_cancel(struct session *s, struct jsonrpc_msg *m);
size_t spend_count(const struct session *s);
/* Also an accepted call whose outcome the store still waits for (struct awaited). */
bool spend_has_id(const struct session *s, struct sl_str id);
/* keep_approved: the client left; accepted calls go on (their outcome is kept for a retry). */
void spend_free_all(struct session *s, bool keep_approved);

/* ===== session_page.c: the approval page's question (approval.h) ===== */

/* Answers call m (request id) whose verdict v is a page question (GATE_ASK with page): a new
 * one's record goes to the store and the notifier is told; the client gets the page's URL as a
 * URL elicitation when it declared one (modern), else a tool error saying where to approve and
 * how to retry. Journaled. */
/* Returns true when it kept m (a legacy client's call held while the page decides, or a call
 * whose page record is written or read first: page_keep_start, page_look_start). */
bool page_ask(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
              struct gate_verdict *v);
/* The page's record of v's question (tool's, asked by s's principal), appended to out. */
void page_record(struct session *s, struct sl_str tool, const struct gate_verdict *v,
                 struct sl_buf *out);
/* Refuses call id (of tool) whose page question's record is not in the store (over_share: the
 * store refused it as over its principal's share, STORE_OVER_SHARE; else full, unreachable or
 * not there): journaled, and no URL handed out. own: the question is this call's (asked now),
 * so it is closed (store_answered); a question shared with an identical call is that call's. */
void page_not_kept(struct session *s, struct sl_str id, bool modern, struct sl_str tool,
                   const struct gate_verdict *v, bool over_share, bool own);

/* ===== session_own.c: an upstream of the session's own ===== */

/* Opens s's own upstream with env->opener, to be initialized as legacy client request init
 * (initialize) says. -1 with err when it cannot. */
int own_open(struct session *s, const struct jsonrpc_msg *init, char *err, size_t errlen);
/* The same for one modern call: initialized with caps (routable ones are kept) and
 * client_info (either may be NULL); never opened again if it goes away. */
int own_open_call(struct session *s, const struct json *caps, const struct json *client_info,
                  char *err, size_t errlen);
/* The session ends: its upstream is ended and freed once gone. */
void own_release(struct session *s);
/* s's own upstream (s has one), not ready now, will be: it is starting, or it went and is
 * opened again. false: it stopped reading its input, or it is gone for good. */
bool own_takes_later(const struct session *s);
/* Why s's own upstream (s has one) takes no request now, as the error a request gets: starting,
 * stopped reading its input, or gone (before it was ever ready or after; opened again in N s,
 * or not again). The text is static or in buf[len]. */
const char *own_unready_text(const struct session *s, char *buf, size_t len);

/* ===== session_listen.c: subscriptions/listen toward a legacy server ===== */

/* Modern request m (subscriptions/listen) with id, the upstream legacy: acknowledged and kept
 * open; the upstream's notifications follow. Returns whether it kept m (never). */
bool listen_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id);
/* The client cancelled request m->params.requestId: true when it was a listen stream (ended). */
bool listen_cancel(struct session *s, const struct jsonrpc_msg *m);
bool listen_has_id(const struct session *s, struct sl_str id);
void listen_free_all(struct session *s);

/* ===== session_relay.c: kept outcomes ===== */

/* The final message for request rel goes out: if rel is an accepted call whose nonce this
 * session spent and no forwarded call claimed, the call was not run (refused after the accept:
 * the target changed, the upstream was down; or cancelled first), and the store says so: a
 * retry is a replay (session_spend.c). */
void spend_settle(struct session *s, struct sl_str rel);
/* The accepted call that spent nonce is being forwarded (or, a round of a parked call, goes
 * on): s's awaited entry for it moves onto list, the call's (so no message matched by id text
 * settles it). Nothing moves if s has none. */
void spend_claim(struct session *s, const uint8_t *nonce, struct awaited **list);
/* line is the reply of the forwarded call that claimed list: the outcome of every state it
 * spent, for the store; list is freed. */
void spend_settle_claimed(struct session *s, struct awaited *list, struct sl_str line);
void awaited_free(struct awaited *list);
void awaited_free_all(struct session *s);
/* A session whose client left may free itself once nothing approved is running (session.c). */
void session_maybe_reap(struct session *s);

#endif /* SL_SESSION_PRIV_H */
