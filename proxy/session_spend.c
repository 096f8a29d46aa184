/* session_spend.c: calls waiting for the store, for one of two reasons.
 *
 * A spend: a verdict on a state or token that came back names a nonce to spend (gate.h); the
 * call acts on its verdict only once the store recorded the nonce as fresh. A nonce spent before
 * is a replay, unless this is the same accepted round again (a client that lost the reply and
 * retries): then it gets the first run's outcome, marked `dev.sluice/replayed`, and the upstream
 * is not called. If that first run is still going, here or at another replica, the retry polls
 * the store for its outcome, up to the upstream timeout. A fresh spend of a question's state
 * closes that question, in the same step (store_spend's answers).
 *
 * An ask: a new question (GATE_ASK with ask.check) is first checked against the principal's
 * approval fatigue and recorded as open, by the store (store_ask), which every replica sharing
 * it sees; then the call acts on the verdict as the store's answer made it: the question, the
 * identical one already open (shared), or a refusal. A store that cannot answer refuses the
 * call (fail closed).
 *
 * Either ends with the store's answer (on_spent, on_polled, on_asked), the client's leaving or
 * cancelling (spend_free_all, spend_cancel), each through spend_free. An ask ended before its
 * answer closes its question too, in case the store recorded it. */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "msg.h"
#include "store.h"

#define SPEND_POLL_MS 100      /* how often a retry looks for the first run's outcome */
#define PAGE_LOOK_MS 50        /* how often a shared page question's record is looked for again */

/* An accepted call whose nonce this session spent: its final message is its outcome. The id
 * lives in the same allocation, as a spend's does (one malloc and free less each: about 190
 * instructions, issue 24). */
struct awaited {
    uint8_t nonce[STORE_NONCE_LEN];
    uint64_t exp;
    struct awaited *next;
    char id[];
};

struct spend {
    struct session *s;
    struct jsonrpc_msg *m;     /* the call, owned */
    bool modern;
    bool asking;               /* waiting for store_ask, or for a new page question's record:
                              * the store may have recorded a question as open that, the wait
                              * ended early, is never handed out */
    struct gate_verdict v;     /* owned */
    struct store_req *req;     /* the store's answer pending, or NULL */
    struct event *poll;        /* a retry waiting for the first run's outcome */
    uint64_t polls_left;
    struct spend *prev, *next;
    char id[];                 /* the client's id, JSON text */
};

static struct sl_str spend_tool(const struct spend *p);

static void spend_free(struct spend *p)
{
    struct session *s = p->s;
    if (p->req)
        store_cancel(p->req);
    if (p->req && p->asking) { /* the store may have recorded the question, never to be sent */
        const struct gate_ask *a = &p->v.ask;
        store_answered(s->env->store, sl_str_c(s->principal), spend_tool(p), p->v.digest,
                       a->nonce);
    }
    if (p->poll)
        event_free(p->poll);
    if (p->prev)
        p->prev->next = p->next;
    else
        s->spends = p->next;
    if (p->next)
        p->next->prev = p->prev;
    gate_verdict_free(&p->v);
    jsonrpc_msg_free(p->m);
    free(p);
    session_maybe_reap(s);
}

static struct sl_str spend_tool(const struct spend *p)
{
    return json_get(p->m->params, "name")->u.str;
}

static struct spend *wait_new(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                              bool modern, struct gate_verdict *v)
{
    struct spend *p = sl_xcalloc(1, sizeof(*p) + id.len + 1);
    p->s = s;
    p->m = m;
    if (id.len)
        memcpy(p->id, id.p, id.len);
    p->modern = modern;
    gate_verdict_move(&p->v, v); /* the verdict's buffers are ours now */
    gate_verdict_pin(&p->v, s->env->policy); /* made in this pass, by this policy */
    p->next = s->spends;
    if (s->spends)
        s->spends->prev = p;
    s->spends = p;
    return p;
}

/* The store recorded the nonce: the verdict goes ahead as the gate gave it. */
static void act_fresh(struct spend *p)
{
    struct session *s = p->s;
    struct jsonrpc_msg *m = p->m;
    p->m = NULL;
    p->v.spend = false;
    p->v.spent = true;
    if (p->v.action == GATE_FORWARD) { /* the store waits for what becomes of it */
        size_t idlen = strlen(p->id);
        struct awaited *w = sl_xcalloc(1, sizeof(*w) + idlen + 1);
        memcpy(w->id, p->id, idlen);
        memcpy(w->nonce, p->v.nonce, sizeof(w->nonce));
        w->exp = p->v.exp;
        w->next = s->awaited;
        s->awaited = w;
    }
    if (!p->modern && p->v.action == GATE_REFUSE_RPC) /* a legacy call gets a tool error */
        gate_refuse_spent(&p->v, GATE_SPENT_EXPIRED);
    if (!call_act(s, m, sl_str_c(p->id), p->modern, &p->v))
        jsonrpc_msg_free(m);
}

static void refuse(struct spend *p, enum gate_spent why)
{
    gate_refuse_spent(&p->v, why);
    if (!p->modern && p->v.action == GATE_REFUSE_RPC)
        gate_refuse_spent(&p->v, GATE_SPENT_EXPIRED);
    call_refuse(p->s, sl_str_c(p->id), spend_tool(p), &p->v, p->modern);
}

/* The first run's response, again, under this request's id and marked as a replay. */
static void replay_outcome(struct spend *p, struct sl_str body)
{
    struct session *s = p->s;
    struct sl_buf b = { 0 };
    if (msg_replayed(&b, sl_str_c(p->id), body) != 0) {
        session_reply_error(s, sl_str_c(p->id), JSONRPC_INTERNAL_ERROR,
                            "sluice could not read the kept result of this call", NULL);
    } else {
        session_audit(s, spend_tool(p), p->v.has_digest ? p->v.digest : NULL,
                      AUDIT_REPLAYED_RESULT, "retry", AUDIT_UP_NOT_FORWARDED, p->id);
        session_send_line(s, sl_str_c(p->id), true, sl_buf_str(&b));
    }
    sl_buf_free(&b);
}

static void not_kept(struct spend *p)
{
    session_audit(p->s, spend_tool(p), p->v.has_digest ? p->v.digest : NULL,
                  AUDIT_REPLAYED_RESULT, "result-not-kept", AUDIT_UP_NOT_FORWARDED, p->id);
    session_reply_tool_error(p->s, sl_str_c(p->id), p->modern,
                             "This call was approved and ran once already; its result was too "
                             "large for sluice to keep, so it cannot be shown again. It was not "
                             "run again.");
}

static void on_polled(void *arg, enum store_status st, const struct store_record *rec);

static void poll_again(evutil_socket_t fd, short what, void *arg)
{
    struct spend *p = arg;
    (void)fd;
    (void)what;
    p->req = store_get(p->s->env->store, p->v.nonce, on_polled, p);
}

/* What a spent nonce's record says, for a retry of the accepted round. true: p is done. */
static bool answer_retry(struct spend *p, enum store_status st, const struct store_record *rec)
{
    if (st == STORE_ERROR) {
        refuse(p, GATE_SPENT_UNAVAILABLE);
        return true;
    }
    if (st == STORE_ABSENT || rec->mark == STORE_MARK_REFUSED) {
        refuse(p, GATE_SPENT_REPLAYED);
        return true;
    }
    if (rec->mark == STORE_MARK_DONE) {
        replay_outcome(p, rec->body);
        return true;
    }
    if (rec->mark == STORE_MARK_NOT_KEPT) {
        not_kept(p);
        return true;
    }
    if (p->polls_left-- == 0) { /* still running after the upstream's own time limit */
        session_reply_tool_error(p->s, sl_str_c(p->id), p->modern,
                                 "This call was approved and is running (or its outcome was "
                                 "lost); sluice did not run it again. Its outcome is unknown.");
        return true;
    }
    if (p->poll == NULL)
        p->poll = evtimer_new(p->s->base, poll_again, p);
    struct timeval tv = { 0, SPEND_POLL_MS * 1000 };
    evtimer_add(p->poll, &tv);
    return false;
}

static void on_polled(void *arg, enum store_status st, const struct store_record *rec)
{
    struct spend *p = arg;
    p->req = NULL;
    if (answer_retry(p, st, rec))
        spend_free(p);
}

static void on_spent(void *arg, enum store_status st, const struct store_record *rec)
{
    struct spend *p = arg;
    p->req = NULL;
    if (st == STORE_FRESH) {
        act_fresh(p);
    } else if (st == STORE_RESET) {
        refuse(p, GATE_SPENT_RESET);
    } else if (st == STORE_ERROR) {
        refuse(p, GATE_SPENT_UNAVAILABLE);
    } else if (p->v.action != GATE_FORWARD) { /* a decline cannot take back what was spent */
        refuse(p, GATE_SPENT_REPLAYED);
    } else if (!answer_retry(p, STORE_FOUND, rec)) {
        return; /* polling */
    }
    spend_free(p);
}

/* A round of a parked call this process does not hold: another replica's (a shared store opens
 * its state here too) or one that ended. Spending the nonce would burn the round for the replica
 * that holds the call, so it is only read: spent before, this is a retry of a round that was
 * taken (answer_retry); not spent, the round is refused and stays the other replica's. */
static void on_peeked(void *arg, enum store_status st, const struct store_record *rec)
{
    struct spend *p = arg;
    p->req = NULL;
    if (st == STORE_ABSENT) {
        session_audit(p->s, spend_tool(p), p->v.has_digest ? p->v.digest : NULL, AUDIT_REFUSED,
                      "parked-call-state", AUDIT_UP_NOT_FORWARDED, p->id);
        park_refuse_absent(p->s, sl_str_c(p->id));
    } else if (!answer_retry(p, st, rec)) {
        return; /* polling */
    }
    spend_free(p);
}

void spend_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                 struct gate_verdict *v)
{
    struct spend *p = wait_new(s, m, id, modern, v);
    p->polls_left = (uint64_t)s->env->outcome_wait_s * 1000 / SPEND_POLL_MS;
    if (p->v.action == GATE_FORWARD && park_round_not_here(&p->v)) {
        p->req = store_get(s->env->store, p->v.nonce, on_peeked, p);
        return;
    }
    enum store_mark mark = p->v.action == GATE_FORWARD ? STORE_MARK_RUNNING : STORE_MARK_REFUSED;
    /* the person answered: once spent, the question is no longer open, nor shared */
    struct store_question q = { sl_str_c(s->principal), spend_tool(p), p->v.digest };
    p->req = store_spend(s->env->store, p->v.nonce, p->v.origin, p->v.exp, mark,
                         p->v.answers ? &q : NULL, on_spent, p);
}

/* The store's answer to a new question: the verdict becomes what it says, then is acted on. */
static void on_asked(void *arg, enum store_status st, enum asks_status as, struct sl_str blob)
{
    struct spend *p = arg;
    p->req = NULL;
    if (st != STORE_OK)
        gate_refuse_spent(&p->v, GATE_SPENT_UNAVAILABLE);
    else if (as == ASKS_SAME)
        gate_share_question(&p->v, blob); /* a blob that is not one: unavailable */
    else if (as != ASKS_OK)
        gate_refuse_ask(&p->v, as);
    p->v.ask.check = false;
    struct jsonrpc_msg *m = p->m;
    p->m = NULL;
    if (!call_act(p->s, m, sl_str_c(p->id), p->modern, &p->v))
        jsonrpc_msg_free(m);
    spend_free(p);
}

void ask_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
               struct gate_verdict *v)
{
    struct spend *p = wait_new(s, m, id, modern, v);
    const struct gate_ask *a = &p->v.ask;
    p->asking = true;
    p->req = store_ask(s->env->store, sl_str_c(s->principal), spend_tool(p),
                       p->v.digest, a->nonce, a->exp, a->max_open, a->per_minute,
                       sl_buf_str(&a->blob), on_asked, p);
}

/* The page's record is in the store: the call goes on to hand out its page. */
static void page_go_on(struct spend *p)
{
    struct jsonrpc_msg *m = p->m;
    p->m = NULL;
    p->v.page_kept = true;
    if (!call_act(p->s, m, sl_str_c(p->id), p->modern, &p->v))
        jsonrpc_msg_free(m);
}

static void on_page_looked(void *arg, enum store_status st, const struct store_record *rec);

static void page_look_again(evutil_socket_t fd, short what, void *arg)
{
    struct spend *p = arg;
    (void)fd;
    (void)what;
    p->req = store_page_get(p->s->env->store, STORE_PAGE_QUESTION, p->v.page_id, on_page_looked,
                            p);
}

/* The shared question's page record, read: there, the call gets that page; else it is refused as
 * the call that asked it was (its record was refused, or the store cannot say). Not there yet
 * may also be a record on its way: with a shared store the call that asked may be at another
 * replica, whose write lands after this read (it was sent once its ask was answered, which is
 * before this call's ask was). So an absent record is looked for again every PAGE_LOOK_MS, for
 * as long as that replica waits for its write (--store-timeout, polls_left), before refusing. */
static void on_page_looked(void *arg, enum store_status st, const struct store_record *rec)
{
    struct spend *p = arg;
    (void)rec;
    p->req = NULL;
    if (st == STORE_ABSENT && p->polls_left > 0) {
        p->polls_left--;
        if (p->poll == NULL)
            p->poll = evtimer_new(p->s->base, page_look_again, p);
        struct timeval tv = { 0, PAGE_LOOK_MS * 1000 };
        evtimer_add(p->poll, &tv);
        return;
    }
    if (st == STORE_FOUND)
        page_go_on(p);
    else
        page_not_kept(p->s, sl_str_c(p->id), p->modern, spend_tool(p), &p->v, false, false);
    spend_free(p);
}

/* A new page question's record, written or not: kept, the call gets its page; else it is refused
 * (its question closed: page_not_kept). */
static void on_page_kept(void *arg, enum store_status st, const struct store_record *rec)
{
    struct spend *p = arg;
    (void)rec;
    p->req = NULL;
    if (st == STORE_FRESH) /* written: the page reads it */
        page_go_on(p);
    else
        page_not_kept(p->s, sl_str_c(p->id), p->modern, spend_tool(p), &p->v,
                      st == STORE_OVER_SHARE, true);
    spend_free(p);
}

void page_keep_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                     struct gate_verdict *v)
{
    struct spend *p = wait_new(s, m, id, modern, v);
    struct sl_buf rec = { 0 };
    page_record(s, spend_tool(p), &p->v, &rec);
    p->asking = true; /* closed should the client leave first */
    p->req = store_page_question(s->env->store, sl_str_c(s->principal), p->v.page_id,
                                 p->v.page_exp, sl_buf_str(&rec), on_page_kept, p);
    sl_buf_free(&rec);
}

void page_look_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                     struct gate_verdict *v)
{
    struct spend *p = wait_new(s, m, id, modern, v);
    /* Within one process the store answers in order, so the asker's write came first: absent
     * is final there. */
    if (store_shared(s->env->store))
        p->polls_left = store_timeout_ms(s->env->store) / PAGE_LOOK_MS;
    p->req = store_page_get(s->env->store, STORE_PAGE_QUESTION, p->v.page_id, on_page_looked, p);
}

/* The page's decision (or its absence): the verdict becomes what it says, then is acted on. */
static void on_page_decision(void *arg, enum store_status st, const struct store_record *rec)
{
    struct spend *p = arg;
    p->req = NULL;
    struct session *s = p->s;
    gate_page_decided(s->env->policy, sl_str_c(s->principal), spend_tool(p),
                      st == STORE_FOUND, st == STORE_ERROR,
                      st == STORE_FOUND && rec ? rec->body : SL_STR_NULL, &p->v);
    struct jsonrpc_msg *m = p->m;
    p->m = NULL;
    if (!call_act(s, m, sl_str_c(p->id), p->modern, &p->v))
        jsonrpc_msg_free(m);
    spend_free(p);
}

void page_check_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                      struct gate_verdict *v)
{
    struct spend *p = wait_new(s, m, id, modern, v);
    p->req = store_page_get(s->env->store, STORE_PAGE_DECISION, p->v.page_id, on_page_decision,
                            p);
}

bool spend_cancel(struct session *s, struct jsonrpc_msg *m)
{
    struct sl_buf b = { 0 };
    if (!session_id_text(json_get(m->params, "requestId"), &b))
        return false;
    struct spend *p = s->spends;
    while (p && strcmp(p->id, b.p) != 0)
        p = p->next;
    sl_buf_free(&b);
    if (p == NULL)
        return false;
    session_audit(s, spend_tool(p), p->v.has_digest ? p->v.digest : NULL, AUDIT_REFUSED,
                  "cancelled", AUDIT_UP_CANCELLED, p->id);
    spend_free(p);
    return true;
}

bool spend_has_id(const struct session *s, struct sl_str id)
{
    for (const struct spend *p = s->spends; p; p = p->next)
        if (sl_str_eq_c(id, p->id))
            return true;
    for (const struct awaited *w = s->awaited; w; w = w->next)
        if (sl_str_eq_c(id, w->id))
            return true;
    return false;
}

size_t spend_count(const struct session *s)
{
    size_t n = 0;
    for (const struct spend *p = s->spends; p; p = p->next)
        n++;
    return n;
}

void spend_free_all(struct session *s, bool keep_approved)
{
    struct spend *next;
    for (struct spend *p = s->spends; p; p = next) {
        next = p->next;
        /* An accept whose nonce may be spent already: it goes on, or its retry would wait for
         * an outcome that never comes. */
        if (!(keep_approved && p->v.action == GATE_FORWARD))
            spend_free(p);
    }
}

/* Only an entry no forwarded call claimed (spend_claim) is matched by its id: a request that
 * reuses the id of a running approved call must not have its answer kept as that call's. A
 * call that is forwarded, or goes on as a parked call's round, claims its entry at once, so an
 * entry still here is a call that was not run. */
void spend_settle(struct session *s, struct sl_str rel)
{
    for (struct awaited **pp = &s->awaited; *pp; pp = &(*pp)->next) {
        struct awaited *w = *pp;
        if (!sl_str_eq_c(rel, w->id))
            continue;
        store_put_outcome(s->env->store, w->nonce, w->exp, false, SL_STR_NULL);
        *pp = w->next;
        free(w);
        return;
    }
}

void spend_claim(struct session *s, const uint8_t *nonce, struct awaited **list)
{
    for (struct awaited **pp = &s->awaited; *pp; pp = &(*pp)->next) {
        struct awaited *w = *pp;
        if (memcmp(w->nonce, nonce, sizeof(w->nonce)) != 0)
            continue;
        *pp = w->next;
        w->next = *list;
        *list = w;
        return;
    }
}

void spend_settle_claimed(struct session *s, struct awaited *list, struct sl_str line)
{
    while (list) {
        struct awaited *w = list;
        list = w->next;
        store_put_outcome(s->env->store, w->nonce, w->exp, true, line);
        free(w);
    }
}

void awaited_free(struct awaited *list)
{
    while (list) {
        struct awaited *w = list;
        list = w->next;
        free(w);
    }
}

void awaited_free_all(struct session *s)
{
    awaited_free(s->settling); /* set only until the reply it waits for is sent, which always follows */
    s->settling = NULL;
    while (s->awaited) {
        struct awaited *w = s->awaited;
        s->awaited = w->next;
        free(w);
    }
}
