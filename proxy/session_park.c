/* session_park.c: a 2026-07-28 client's call to a handshake-era server that asks during the call.
 *
 * A legacy server asks with requests of its own (elicitation/create, sampling/createMessage,
 * roots/list) and waits for the answers inside the call; a modern client can only be asked with
 * an input_required result, after which its request is over and the answers come back on a new
 * request (PROTOCOL.md §2, §7.7). So the call is parked: the client gets input_required whose
 * inputRequests hold the server's requests (keys "sluice-u-N") and whose requestState is sealed
 * by the gate (gate_wrap_upstream_state: tool, principal, argument digest, expiry) around a
 * random handle; the call stays in a process-wide table under that handle. The client's retry
 * (same tool and arguments, the answers, the state) opens the state, finds the call, hands each
 * answer to the server under its own id and takes the call's reply over: the server's result, or
 * its next question (another round, under a new handle). One handle, one round: a state cannot be
 * used twice. A parked call nobody resumes within its ttl ends: the server's waiting requests get
 * an error and the call is cancelled upstream.
 *
 *   upstream asks -> park_question -> round (input_required) -> client retries -> park_resume
 *     -> answers upstream -> result (fwd_deliver to the retry) | another question -> round ...
 *
 * The questions must belong to this call: over stdio the one modern call in flight (with several,
 * a question cannot be attributed and is answered with an error); over HTTP the call gets an
 * upstream of its own (park_own_upstream, with the session opener). The table lives in this
 * process: another replica cannot resume the call, and says so. */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "log.h"

#define PARK_MAX 1024           /* parked calls in this process (and see principal_full) */
#define PARK_MAX_QUESTIONS 16   /* unanswered questions of one parked call */
#define PARK_MAX_ROUNDS 64      /* rounds of one parked call: each keeps a little of the call's */

/* What a client can be asked, from its request's clientCapabilities (PROTOCOL.md §1.4), and what
 * a server's question needs: one of these bits. ASK_NONE is a question no client can answer (an
 * elicitation of a mode sluice does not know). */
enum {
    ASK_FORM = 1,       /* elicitation/create, form mode (mode absent or "form") */
    ASK_URL = 2,        /* elicitation/create, mode "url" */
    ASK_SAMPLING = 4,   /* sampling/createMessage */
    ASK_ROOTS = 8,      /* roots/list */
    ASK_NONE = 16,
};

/* One request of the server's, waiting for the client's answer. */
struct park_q {
    char key[32];               /* "sluice-u-N": its key in inputRequests and inputResponses */
    unsigned kind;              /* ASK_*: what it asks, and so what its answer must be */
    char *up_id;                /* the server's id, JSON text */
    char *request;              /* {"method":...,"params":...} as the client gets it */
    struct park_q *next;
};

#define PARK_HANDLE_LEN 37 /* "park-" and 32 hex digits */

struct park {
    char handle[PARK_HANDLE_LEN + 1]; /* "park-" and hex; "" while no round is out */
    struct fwd *fwd;            /* the call, forwarded upstream */
    struct session *home;       /* whose upstream runs it */
    struct session *waiter;     /* the session whose request waits for the call's next event */
    uint8_t digest[32];         /* the arguments the state is bound to */
    unsigned can;               /* ASK_* the request holding the call declared: round one's, then
                                 * each round's that took the call over */
    unsigned ttl;
    unsigned rounds;            /* sent to the client so far */
    uint64_t deadline_us;       /* the call ends then (monotonic): ttl after a question came
                                 * while none was open */
    struct park_q *qs;
    unsigned nq;
    char *kept;                 /* the server's reply, come while no request waited (JSON) */
    bool kept_gone;             /* ... or the server went away first */
    bool orphan;                /* approved, and the waiting client left: no round comes any
                                 * more; the call finishes for the retry (park_session_gone),
                                 * within --upstream-timeout (on_expired) */
    struct event *timer;        /* the round's expiry; an orphan's end */
    struct park *prev, *next;
};

static struct park *parks;
static size_t nparks;

/* A park's handle is the upstream state its rounds carry, in place of a 2026-07-28 server's
 * requestState; the prefix tells the two apart by the state alone. */
#define PARK_HANDLE_PREFIX "park-"

bool park_is_handle(struct sl_str st)
{
    return st.len == PARK_HANDLE_LEN && memcmp(st.p, PARK_HANDLE_PREFIX, 5) == 0;
}
static uint64_t next_key;

/* ===== the table ===== */

static struct park *park_find(struct sl_str handle)
{
    if (!park_is_handle(handle))
        return NULL;
    for (struct park *p = parks; p; p = p->next)
        if (p->handle[0] && CRYPTO_memcmp(p->handle, handle.p, PARK_HANDLE_LEN) == 0)
            return p;
    return NULL;
}

static void q_free(struct park_q *q)
{
    free(q->up_id);
    free(q->request);
    free(q);
}

void park_forget(struct park *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        parks = p->next;
    if (p->next)
        p->next->prev = p->prev;
    nparks--;
    while (p->qs) {
        struct park_q *q = p->qs;
        p->qs = q->next;
        q_free(q);
    }
    event_free(p->timer);
    free(p->kept);
    fwd_set_park(p->fwd, NULL);
    free(p);
}

/* ===== the server's side ===== */

static void questions_fail(struct park *p, const char *why)
{
    for (struct park_q *q = p->qs; q; q = q->next)
        relayed_answer_error(p->home, sl_str_c(q->up_id), JSONRPC_INTERNAL_ERROR, why);
}

/* Nobody resumed the call within its ttl: the server's requests get an error, the call ends. */
static void on_expired(evutil_socket_t fd, short what, void *arg)
{
    struct park *p = arg;
    (void)fd, (void)what;
    if (p->orphan) { /* its questions were failed already, and it keeps no reply */
        sl_warn("a parked call whose client left still ran %u s later (--upstream-timeout): "
                "cancelled upstream", p->home->env->outcome_wait_s);
        return fwd_end(p->fwd, "the call's client left, and it ran on too long"); /* frees p */
    }
    questions_fail(p, "the client did not answer in time; the call is cancelled");
    if (p->kept || p->kept_gone) { /* the server answered meanwhile: that is the outcome */
        sl_info("a parked call got no answer within %u s; the server's reply to it is kept "
                "for a retry", p->ttl);
        struct jsonrpc_msg *r = NULL;
        struct jsonrpc_parse_error err;
        if (p->kept && jsonrpc_parse(p->kept, strlen(p->kept), &r, &err) != 0)
            r = NULL;
        fwd_end_kept(p->fwd, r); /* frees p */
        jsonrpc_msg_free(r);
        return;
    }
    sl_info("a parked call got no answer within %u s: cancelled upstream", p->ttl);
    fwd_end(p->fwd, "the client did not answer the server's question in time"); /* frees p */
}

/* ===== rounds to the client ===== */

static void new_handle(struct park *p)
{
    uint8_t raw[16];
    SL_REQUIRE(RAND_bytes(raw, sizeof(raw)) == 1);
    memcpy(p->handle, PARK_HANDLE_PREFIX, 5);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(p->handle + 5 + 2 * i, 3, "%02x", raw[i]);
}

/* Why p may have no further round at now: too many, or its time is out (NULL: it may). */
static const char *rounds_over(const struct park *p, uint64_t now)
{
    if (p->rounds >= PARK_MAX_ROUNDS)
        return "took more rounds than sluice allows for one call";
    if (now >= p->deadline_us)
        return "were not answered in time";
    return NULL;
}

/* The waiting request gets every unanswered question, under a state for a new handle. Rounds
 * are bounded in number and, without answers, in time: a client that resumes without answering
 * would otherwise keep the call, its server session and its principal's share for ever. */
static void send_round(struct park *p)
{
    struct fwd_call c = fwd_call_of(p->fwd);
    struct session *to = p->waiter;
    struct sl_buf st = { 0 }, r = { 0 };
    uint64_t now_us = sl_mono_us();
    const char *over = rounds_over(p, now_us);
    if (over) {
        char text[160];
        snprintf(text, sizeof(text), "The server's questions %s; the call is cancelled", over);
        sl_warn("a parked call of %s: its questions %s; cancelled", to->principal, over);
        session_reply_error(to, c.client_id, JSONRPC_INTERNAL_ERROR, text, NULL);
        p->waiter = NULL;
        questions_fail(p, "the client did not answer in time; the call is cancelled");
        return fwd_end(p->fwd, "the client did not answer the server's question in time");
    }
    p->rounds++;
    /* The round's state and timer end with the call's time (whole seconds, rounded up). */
    unsigned ttl = (unsigned)((p->deadline_us - now_us + 999999) / 1000000);
    new_handle(p);
    /* The tool's definition is bound as every continuation's is (a gated call's next round
     * goes through the gate, which checks it): a gated call's as it was when the call was
     * forwarded, the one the person approved, so a change while the call ran refuses the next
     * round. */
    struct gate_input now = { .tool = c.tool };
    pin_input(to, &now);
    const uint8_t *def = c.definition ? c.definition : now.has_definition ? now.definition : NULL;
    if (gate_wrap_upstream_state(to->env->gate, sl_str_c(to->principal), c.tool, p->digest, ttl,
                                 gate_clock(), c.observation, def, sl_str_c(p->handle), c.gated,
                                 &st) != 0) {
        sl_buf_free(&st);
        p->handle[0] = '\0';
        session_reply_error(to, c.client_id, JSONRPC_INTERNAL_ERROR,
                            "sluice could not seal the server's question", NULL);
        p->waiter = NULL;
        return fwd_end(p->fwd, "sluice could not seal the server's question");
    }
    sl_buf_puts(&r, "{\"resultType\":\"input_required\",\"inputRequests\":{");
    for (struct park_q *q = p->qs; q; q = q->next) {
        json_write_string(&r, q->key, strlen(q->key));
        sl_buf_putc(&r, ':');
        sl_buf_puts(&r, q->request);
        if (q->next)
            sl_buf_putc(&r, ',');
    }
    sl_buf_puts(&r, "},\"requestState\":");
    json_write_string(&r, st.p, st.len);
    sl_buf_putc(&r, '}');
    /* to's request is answered now, and to may end (over HTTP, with its exchange) before the
     * client's next round: nothing may reach it through the call any more. */
    p->waiter = NULL;
    fwd_let_go(p->fwd);
    session_reply_result(to, c.client_id, sl_buf_str(&r));
    struct timeval tv = { (time_t)ttl + 1, 0 };
    evtimer_add(p->timer, &tv);
    sl_buf_free(&st);
    sl_buf_free(&r);
}

/* What a request whose clientCapabilities are caps can be asked (ASK_*). */
static unsigned caps_can(const struct json *caps)
{
    const struct json *e = json_get(caps, "elicitation"), *url = json_get(e, "url"),
                      *sampling = json_get(caps, "sampling"), *roots = json_get(caps, "roots");
    return (era_caps_form_elicitation(caps) ? ASK_FORM : 0) |
           (e && e->type == JSON_OBJECT && url && url->type == JSON_OBJECT ? ASK_URL : 0) |
           (sampling && sampling->type == JSON_OBJECT ? ASK_SAMPLING : 0) |
           (roots && roots->type == JSON_OBJECT ? ASK_ROOTS : 0);
}

/* What the server's request msg asks (ASK_*), or 0: no question for the client. */
static unsigned question_kind(const struct jsonrpc_msg *msg)
{
    if (sl_str_eq_c(msg->method, "sampling/createMessage"))
        return ASK_SAMPLING;
    if (sl_str_eq_c(msg->method, "roots/list"))
        return ASK_ROOTS;
    if (!sl_str_eq_c(msg->method, "elicitation/create"))
        return 0;
    const struct json *mode = json_get(msg->params, "mode");
    if (mode == NULL || (mode->type == JSON_STRING && sl_str_eq_c(mode->u.str, "form")))
        return ASK_FORM;
    if (mode->type == JSON_STRING && sl_str_eq_c(mode->u.str, "url"))
        return ASK_URL;
    return ASK_NONE;
}

/* One principal may hold a share of the table, not all of it: a parked call waits for a person,
 * and one principal who starts calls and never resumes them would otherwise refuse everyone
 * else's questions until its rounds expire (and a resume with no answers arms the timer again).
 * "anonymous" is every client of --principal anonymous: there the table's own limit is the only
 * one, as for legacy sessions. */
static bool principal_full(const struct session *s)
{
    size_t cap = s->env->parks_per_principal, n = 0;
    if (cap == 0 || strcmp(s->principal, "anonymous") == 0)
        return false;
    for (const struct park *p = parks; p; p = p->next)
        if (strcmp(p->home->principal, s->principal) == 0 && ++n >= cap)
            return true;
    return false;
}

static struct park *park_new(struct session *s, struct fwd *f, const struct fwd_call *c)
{
    uint8_t digest[32];
    if (nparks >= PARK_MAX) {
        sl_warn("%zu calls are parked (the most this process holds): the server's question to "
                "a call of %s gets an error", nparks, s->principal);
        return NULL;
    }
    if (principal_full(s)) {
        sl_warn("%s already has %zu parked calls (--max-sessions-per-principal): the server's "
                "question to its new call gets an error", s->principal,
                s->env->parks_per_principal);
        return NULL;
    }
    if (!gate_args_digest(json_get(c->msg->params, "arguments"), digest))
        return NULL;
    struct park *p = sl_xcalloc(1, sizeof(*p));
    p->fwd = f;
    p->home = s;
    p->waiter = c->to;
    p->can = caps_can(call_caps(c->msg));
    memcpy(p->digest, digest, sizeof(digest));
    struct policy_decision d;
    policy_lookup(s->env->policy, c->tool.p, c->tool.len, &d);
    p->ttl = c->gated ? c->ttl : d.confirm_ttl;
    p->deadline_us = sl_mono_us() + (uint64_t)p->ttl * 1000000;
    p->timer = evtimer_new(s->base, on_expired, p);
    SL_REQUIRE(p->timer != NULL);
    p->next = parks;
    if (parks)
        parks->prev = p;
    parks = p;
    nparks++;
    fwd_set_park(f, p);
    return p;
}

/* The approved call of p goes on without a client to ask when the client waiting for its next
 * event leaves (leaving), and the call's home session is that one or gone too: its reply then
 * reaches no client, and is kept as the outcome of the states the call spent. */
static bool can_orphan(const struct park *p, const struct session *leaving)
{
    struct fwd_call c = fwd_call_of(p->fwd);
    return c.kept && (c.s == leaving || c.s->gone);
}

/* No round comes any more: the server's open questions get an error now, not at its timeout,
 * and its reply goes to the call's home session (fwd_let_go), which is gone. */
static void park_orphan(struct park *p)
{
    p->orphan = true;
    p->waiter = NULL;
    fwd_let_go(p->fwd);
    /* Its questions get an error at once, but a server that keeps asking, or keeps talking,
     * would hold the call, its place in the table (and its principal's share) and its upstream
     * for ever: it gets --upstream-timeout from now, as long as a retry waits for its outcome. */
    unsigned s = p->home->env->outcome_wait_s ? p->home->env->outcome_wait_s : p->ttl;
    struct timeval bound = { (time_t)s, 0 };
    evtimer_del(p->timer);
    evtimer_add(p->timer, &bound);
    while (p->qs) {
        struct park_q *q = p->qs;
        p->qs = q->next;
        p->nq--;
        relayed_answer_error(p->home, sl_str_c(q->up_id), JSONRPC_INTERNAL_ERROR,
                             RELAYED_GONE);
        q_free(q);
    }
}

bool park_question(struct session *s, struct jsonrpc_msg *msg, const struct up_request *on)
{
    size_t n;
    struct fwd *f = fwd_modern_call(s, on, &n);
    if (n == 0)
        return false;
    struct sl_buf id = { 0 };
    json_write(&id, msg->id);
    unsigned kind = question_kind(msg);
    struct fwd_call c = f ? fwd_call_of(f) : (struct fwd_call){ 0 };
    struct park *p = c.park;
    /* What the request that holds the call now declared: round one's, or the last round's. */
    unsigned can = p ? p->can : f ? caps_can(call_caps(c.msg)) : 0;
    bool taken = true;
    if (f == NULL) {
        sl_warn("the server asked %.*s while %zu calls of 2026-07-28 clients were in flight; it "
                "cannot be told which one it is about, so it gets an error",
                (int)msg->method.len, msg->method.p, n);
        relayed_answer_error(s, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND,
                             "the client behind sluice cannot answer this request: several "
                             "calls are in flight");
    } else if (kind == 0 || (p == NULL && (kind & can) == 0)) {
        taken = false; /* not declared by this call: answered as before */
    } else if (msg->params && msg->params->type != JSON_OBJECT) {
        /* As relay_round: a request whose params are not an object would reach the client as
         * an inputRequests entry no client was written to expect. */
        relayed_answer_error(s, sl_buf_str(&id), JSONRPC_INVALID_PARAMS,
                             "sluice passes on only requests whose params are an object");
    } else if ((p == NULL && (p = park_new(s, f, &c)) == NULL) || p->nq >= PARK_MAX_QUESTIONS) {
        relayed_answer_error(s, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND,
                             "the client behind sluice cannot answer this request: sluice "
                             "cannot park more calls or questions");
    } else if (p->orphan || (p->waiter && p->waiter->gone && can_orphan(p, p->waiter))) {
        /* The approved call's client left, before this question or since: nobody can answer,
         * and the server hears so now, not at the round's expiry (which would cancel the
         * call and lose its outcome). */
        if (!p->orphan)
            park_orphan(p);
        relayed_answer_error(s, sl_buf_str(&id), JSONRPC_INTERNAL_ERROR,
                             RELAYED_GONE);
    } else if ((kind & can) == 0) {
        /* A later round's: the request that took the call over did not declare it. */
        relayed_answer_error(s, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND,
                             "the client behind sluice cannot answer this request");
    } else {
        struct park_q *q = sl_xcalloc(1, sizeof(*q)), **tail = &p->qs;
        snprintf(q->key, sizeof(q->key), "sluice-u-%llu", (unsigned long long)++next_key);
        q->up_id = sl_xstrndup(id.p, id.len);
        q->kind = kind;
        struct sl_buf r = { 0 };
        sl_buf_puts(&r, "{\"method\":");
        json_write_string(&r, msg->method.p, msg->method.len);
        sl_buf_puts(&r, ",\"params\":");
        const struct json *params = json_get(msg->root, "params");
        if (params)
            json_write(&r, params);
        else
            sl_buf_puts(&r, "{}");
        sl_buf_putc(&r, '}');
        q->request = sl_xstrndup(r.p, r.len);
        sl_buf_free(&r);
        while (*tail)
            tail = &(*tail)->next;
        *tail = q;
        /* The first open question starts the call's time: the client had nothing to answer
         * while the server worked, however long. Later ones while it is open do not. */
        if (p->nq++ == 0)
            p->deadline_us = sl_mono_us() + (uint64_t)p->ttl * 1000000;
        if (p->waiter)
            send_round(p);
    }
    sl_buf_free(&id);
    return taken;
}

bool park_withdraw(struct session *s, struct sl_str up_id)
{
    for (struct park *p = parks; p; p = p->next) {
        if (p->home != s)
            continue;
        for (struct park_q **pp = &p->qs; *pp; pp = &(*pp)->next) {
            struct park_q *q = *pp;
            if (strlen(q->up_id) != up_id.len || memcmp(q->up_id, up_id.p, up_id.len) != 0)
                continue;
            /* An answer the client sends for it anyway is dropped (hand_over finds no key). */
            *pp = q->next;
            p->nq--;
            q_free(q);
            return true;
        }
    }
    return false;
}

bool park_has_waiter(const struct park *p)
{
    return p->waiter != NULL;
}

bool park_keep_reply(struct park *p, struct jsonrpc_msg *m, const char *why)
{
    if (p->waiter || p->orphan)
        return false;
    if (m == NULL) {
        p->kept_gone = true;
    } else {
        struct sl_buf b = { 0 };
        json_write(&b, m->root);
        free(p->kept);
        p->kept = sl_xstrndup(b.p, b.len);
        sl_buf_free(&b);
    }
    (void)why;
    return true;
}

/* ===== the client's next round ===== */

/* Refuses a round whose state opens no parked call here, saying why. */
static void refuse_round(struct session *s, struct sl_str id, const char *why)
{
    static const struct { const char *why, *text; } texts[] = {
        { "no parked call for the state",
          "No call waits for this requestState in this sluice process: it was answered "
          "already, it expired, or it was parked by another sluice replica (a parked call runs "
          "in a server session only the replica that asked holds, so only that one can resume "
          "it). Call the tool again" },
        { "arguments-changed", "This requestState continues a call with other arguments" },
        { "state expired", "This requestState expired: the call it continued has ended, "
                           "cancelled or finished with nobody to take its result" },
        { "minted-by-another-process",
          "This requestState was made by another sluice process or before a restart; a parked "
          "call can only be resumed by the replica that asked. Call the tool again" },
    };
    const char *text = "This requestState was altered, or was not made by sluice for this call";
    for (size_t i = 0; i < SL_ARRAY_LEN(texts); i++)
        if (strcmp(texts[i].why, why) == 0)
            text = texts[i].text;
    sl_info("a round of a parked call refused: %s", why);
    session_reply_error(s, id, JSONRPC_INVALID_PARAMS, text,
                        "{\"reason\":\"invalid_request_state\"}");
}

/* The state of a round of an ungated call: opened here (the gate opened a gated one). */
static bool open_ungated(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                         struct sl_buf *handle, bool quiet)
{
    uint8_t digest[32];
    const char *why = "arguments-not-canonical";
    if (gate_args_digest(json_get(m->params, "arguments"), digest) &&
        gate_open_upstream_state(s->env->gate, sl_str_c(s->principal),
                                 json_get(m->params, "name")->u.str, digest, gate_clock(),
                                 json_get(m->params, "requestState"), handle, &why) == 0) {
        if (park_is_handle(sl_buf_str(handle)))
            return true;
        why = "no parked call for the state";
    }
    if (!quiet) /* quiet: the server's era is not known, and the state may be its own */
        refuse_round(s, id, why);
    return false;
}

bool park_round_not_here(const struct gate_verdict *v)
{
    struct sl_str handle = sl_buf_str(&v->upstream_state);
    return v->continued && park_is_handle(handle) && park_find(handle) == NULL;
}

void park_refuse_absent(struct session *s, struct sl_str id)
{
    refuse_round(s, id, "no parked call for the state");
}

/* A value of a form elicitation's content: string, number, boolean or an array of strings
 * (PROTOCOL.md §3.3). */
static bool form_value_ok(const struct json *v)
{
    if (v->type == JSON_STRING || v->type == JSON_NUMBER || v->type == JSON_BOOL)
        return true;
    if (v->type != JSON_ARRAY)
        return false;
    for (size_t i = 0; i < v->u.arr.n; i++)
        if (v->u.arr.v[i]->type != JSON_STRING)
            return false;
    return true;
}

static bool is_string(const struct json *v, const char *const *one_of)
{
    if (v == NULL || v->type != JSON_STRING)
        return false;
    if (one_of == NULL)
        return true;
    for (; *one_of; one_of++)
        if (sl_str_eq_c(v->u.str, *one_of))
            return true;
    return false;
}

/* An ElicitResult: an action; for accept in form mode a content object of the values a form
 * holds; otherwise content absent, null for decline and cancel, or such an object. */
static const char *elicit_problem(unsigned kind, const struct json *a)
{
    static const char *const actions[] = { "accept", "decline", "cancel", NULL };
    const struct json *action = json_get(a, "action"), *content = json_get(a, "content");
    if (!is_string(action, actions))
        return "its action must be \"accept\", \"decline\" or \"cancel\"";
    bool accept = sl_str_eq_c(action->u.str, "accept");
    if (content == NULL)
        return accept && kind == ASK_FORM ? "an accepted form needs its content, an object"
                                          : NULL;
    if (content->type == JSON_NULL && !accept)
        return NULL;
    if (content->type != JSON_OBJECT)
        return "its content must be an object";
    for (size_t i = 0; i < content->u.obj.n; i++)
        if (!form_value_ok(content->u.obj.v[i].val))
            return "its content's values must be strings, numbers, booleans or arrays of "
                   "strings";
    return NULL;
}

/* Why a cannot answer a question of kind (ASK_*), or NULL: the bare result the protocol gives
 * each kind (PROTOCOL.md §2.3): ElicitResult, CreateMessageResult, ListRootsResult. Whatever
 * passes here is the client's, and the server reads it as its client's answer. */
static const char *answer_problem(unsigned kind, const struct json *a)
{
    static const char *const roles[] = { "user", "assistant", NULL };
    if (a->type != JSON_OBJECT)
        return "it must be an object";
    if (kind == ASK_FORM || kind == ASK_URL)
        return elicit_problem(kind, a);
    if (kind == ASK_SAMPLING) {
        const struct json *content = json_get(a, "content");
        if (!is_string(json_get(a, "role"), roles) || !is_string(json_get(a, "model"), NULL) ||
            content == NULL || (content->type != JSON_OBJECT && content->type != JSON_ARRAY))
            return "it must have a role (\"user\" or \"assistant\"), a model (a string) and "
                   "content (an object or an array)";
        return NULL;
    }
    const struct json *roots = json_get(a, "roots"); /* ASK_ROOTS */
    if (roots == NULL || roots->type != JSON_ARRAY)
        return "its roots must be an array";
    for (size_t i = 0; i < roots->u.arr.n; i++)
        if (!is_string(json_get(roots->u.arr.v[i], "uri"), NULL))
            return "each of its roots must be an object with a uri (a string)";
    return NULL;
}

/* The first answer among answers (the client's inputResponses) to a question of p that is not
 * an answer to it: written into text, for the client. False: every one is well formed. */
static bool answers_malformed(const struct park *p, const struct json *answers, char *text,
                              size_t len)
{
    if (answers == NULL || answers->type != JSON_OBJECT)
        return false; /* nothing is handed over: the questions are asked again */
    for (const struct park_q *q = p->qs; q; q = q->next) {
        const struct json *a = json_get(answers, q->key);
        const char *why = a ? answer_problem(q->kind, a) : NULL;
        if (why) {
            snprintf(text, len, "inputResponses[\"%s\"] is not an answer to the server's "
                     "question: %s. The call is cancelled", q->key, why);
            return true;
        }
    }
    return false;
}

/* The request that took p over did not declare what some of p's open questions ask (left from
 * its last round, or asked since): each gets an error, as the first round's would. */
static void questions_undeclared(struct park *p)
{
    for (struct park_q **pp = &p->qs; *pp;) {
        struct park_q *q = *pp;
        if (q->kind & p->can) {
            pp = &q->next;
            continue;
        }
        relayed_answer_error(p->home, sl_str_c(q->up_id), JSONRPC_METHOD_NOT_FOUND,
                             "the client behind sluice cannot answer this request");
        *pp = q->next;
        p->nq--;
        q_free(q);
    }
}

/* The client's answers go to the server's waiting requests, each under its own id. */
static void hand_over(struct park *p, const struct json *answers)
{
    struct park_q **pp = &p->qs;
    while (*pp) {
        struct park_q *q = *pp;
        const struct json *a = answers && answers->type == JSON_OBJECT
                                   ? json_get(answers, q->key) : NULL;
        if (a == NULL) {
            pp = &q->next; /* asked again in the next round */
            continue;
        }
        struct sl_buf b = { 0 };
        jsonrpc_write_result_value(&b, sl_str_c(q->up_id), a);
        upstream_send_line(session_up(p->home), sl_buf_str(&b));
        sl_buf_free(&b);
        *pp = q->next;
        p->nq--;
        q_free(q);
    }
}

enum park_round park_resume(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                            const struct gate_verdict *v)
{
    /* A round is a park's by its state, not by the shared upstream's era: a parked call runs
     * on an upstream of its own, and the shared one may be starting again (ERA_UNKNOWN until
     * its probe ends). Forwarded as a new call, an approved round would run the call a second
     * time; refused, a 2026-07-28 server's round would lose its approval. One whose park is
     * gone is refused, never forwarded. */
    enum era era = upstream_era(s->env->up);
    struct sl_buf handle = { 0 };
    if (v->continued) {
        if (!park_is_handle(sl_buf_str(&v->upstream_state)))
            return PARK_NOT_A_ROUND; /* a 2026-07-28 server's own requestState */
        sl_buf_put(&handle, v->upstream_state.p, v->upstream_state.len);
    } else if (era == ERA_MODERN || v->gated || json_get(m->params, "requestState") == NULL) {
        return PARK_NOT_A_ROUND;
    } else if (!open_ungated(s, m, id, &handle, era != ERA_LEGACY)) {
        sl_buf_free(&handle);
        return era == ERA_LEGACY ? PARK_REFUSED : PARK_NOT_A_ROUND;
    }
    /* The state that carried the handle is bound by its seal to the tool, arguments and
     * principal of the parked call (send_round minted it from them), and it was opened for this
     * round's: they are the call's. */
    struct park *p = park_find(sl_buf_str(&handle));
    sl_buf_free(&handle);
    if (p == NULL) {
        refuse_round(s, id, "no parked call for the state");
        return PARK_REFUSED;
    }
    p->handle[0] = '\0'; /* this round is taken: the state opens nothing any more */
    evtimer_del(p->timer);
    /* s's client may have left while this round's state was spent or its target read again:
     * as if it had left waiting (park_session_gone). s is not kept for the call then. */
    if (s->gone && !can_orphan(p, s)) {
        /* Nothing was handed over: the reply, to nobody, keeps the state as not run. */
        session_reply_error(s, id, JSONRPC_INTERNAL_ERROR, "the client went away", NULL);
        fwd_end(p->fwd, "client went away"); /* frees p */
        return PARK_ENDED;
    }
    /* A malformed answer ends the call, before any answer is handed over: the server never
     * reads it, and one state still serves one round (a gated round's is spent by now, so
     * the round could not stay open for a corrected answer; the reply goes out before this
     * round's nonce is claimed, so a retry of it is refused as a replay). */
    const struct json *answers = json_get(m->params, "inputResponses");
    char text[256];
    if (answers_malformed(p, answers, text, sizeof(text))) {
        sl_info("a round of a parked call of %s: %s", s->principal, text);
        session_reply_error(s, id, JSONRPC_INVALID_PARAMS, text, NULL);
        questions_fail(p, "the client's answer was malformed; the call is cancelled");
        fwd_end(p->fwd, "the client's answer to the server's question was malformed");
        return PARK_ENDED; /* frees p */
    }
    hand_over(p, answers);
    if (v->spent)
        fwd_claim_round(p->fwd, s, v->nonce);
    if (s->gone) {
        park_orphan(p);
    } else {
        p->waiter = s;
        fwd_take_over(p->fwd, s, id, m->params);
        /* This request answers the call's questions from now on: what it can answer, not
         * what round one could. */
        p->can = caps_can(call_caps(m));
        questions_undeclared(p);
    }
    if (p->kept || p->kept_gone) {
        struct jsonrpc_msg *r = NULL;
        struct jsonrpc_parse_error err;
        if (p->kept && jsonrpc_parse(p->kept, strlen(p->kept), &r, &err) != 0)
            r = NULL;
        fwd_deliver(p->fwd, r, "the server went away"); /* frees p */
        jsonrpc_msg_free(r);
    } else if (p->qs && p->waiter) {
        send_round(p);
    }
    return PARK_RESUMED;
}

/* ===== sessions ===== */

void park_session_gone(struct session *s)
{
    struct park *next;
    for (struct park *p = parks; p; p = next) {
        next = p->next;
        if (p->waiter != s)
            continue;
        p->waiter = NULL;
        if (can_orphan(p, s)) /* approved: it finishes, as any approved call whose client left */
            park_orphan(p);
        else
            fwd_end(p->fwd, "client went away"); /* a modern client that leaves cancels it */
    }
}

bool park_awaits_client(const struct session *s)
{
    for (const struct park *p = parks; p; p = p->next)
        if (p->home == s && p->waiter == NULL && !p->orphan)
            return true;
    return false;
}

/* What a legacy server may ask its client about a call. */
static bool asks_possible(const struct json *caps)
{
    static const char *const kinds[] = { "elicitation", "sampling", "roots" };
    for (size_t i = 0; i < SL_ARRAY_LEN(kinds); i++) {
        const struct json *v = json_get(caps, kinds[i]);
        if (v && v->type == JSON_OBJECT)
            return true;
    }
    return false;
}

void park_own_upstream(struct session *s, struct jsonrpc_msg *m)
{
    const struct session_opener *op = s->env->opener;
    /* A server the shared upstream cannot reach now gets the call there, which fails at once,
     * rather than on an upstream of its own that would wait for the server to come back. */
    if (op == NULL || s->own || upstream_era(s->env->up) != ERA_LEGACY ||
        !upstream_reachable(s->env->up) || !asks_possible(call_caps(m)))
        return;
    char err[300];
    if (session_own_full(s->env)) {
        sl_warn("a call of a 2026-07-28 client runs on the shared server: %zu %ss are open or "
                "ending (--max-children), so the server cannot ask it anything",
                session_own_count(), op->what);
    } else if (own_open_call(s, call_caps(m),
                             json_get(json_get(m->params, "_meta"), META_CLIENT_INFO), err,
                             sizeof(err)) != 0) {
        sl_error("cannot open the %s of a call: %s; it runs on the shared server", op->what, err);
    }
}
