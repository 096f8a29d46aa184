/* store.c: the store's requests, their time limit and their one callback; the record format
 * both engines keep; the outage log. The engines (store_memory.c, store_redis.c) do the rest. */
#include "store_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/crypto.h>

#include "gate.h"
#include "log.h"
#include "seal.h"
#include "store_url.h"

/* A request lives until both its caller is done with it (its callback ran, or it was
 * cancelled) and its engine is (store_req_done).
 *
 * An engine that answers before its call returns (the memory store, always) needs no time
 * limit: its answer waits in the store's ready queue, which one event delivers from the loop.
 * A timer of its own per request (event_new, add, del, active, free) cost about 1,000
 * instructions a request, two requests a gated pair (issue 24). Only a request still open
 * when the engine's call returns gets its timer (req_arm). */
struct store_req {
    struct store *st;
    store_cb cb;             /* one of cb and ask_cb */
    store_ask_cb ask_cb;
    void *arg;
    struct event *ev;        /* the time limit, or NULL: answered at once (or not armed yet);
                              * activated at once to deliver a later answer */
    bool queued;             /* in st->ready (answered at once): delivered from there */
    struct store_req *qnext;
    bool ready;              /* status is decided, by the engine or by the time limit */
    bool delivered;          /* the callback ran, or the caller cancelled */
    bool engine_done;
    enum store_status status;
    bool has_rec;
    enum store_mark mark;
    enum asks_status asks;   /* an ask's answer */
    struct sl_buf body;      /* the record's body, or an ask's blob */
    bool running;            /* a spend that marks its nonce running (its call's) */
    uint8_t nonce[STORE_NONCE_LEN];
    uint64_t exp;
    struct store_req *prev, *next; /* every request of st, for store_free */
};

static void req_free(struct store_req *r)
{
    struct store *st = r->st;
    if (r->prev)
        r->prev->next = r->next;
    else
        st->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (r->ev)
        event_free(r->ev);
    sl_buf_free(&r->body);
    free(r);
}

static void req_fire(evutil_socket_t fd, short what, void *arg)
{
    struct store_req *r = arg;
    (void)fd;
    (void)what;
    if (!r->ready) { /* the time limit: the engine did not answer */
        r->ready = true;
        r->status = STORE_ERROR;
        store_report(r->st, false, "an operation took longer than --store-timeout");
        if (r->st->ops->stalled) /* may end r with the engine: r stays until delivered */
            r->st->ops->stalled(r->st->impl);
    }
    r->delivered = true;
    struct store_record rec = { r->mark, sl_buf_str(&r->body) };
    if (r->ask_cb)
        r->ask_cb(r->arg, r->status, r->asks, sl_buf_str(&r->body));
    else
        r->cb(r->arg, r->status, r->has_rec ? &rec : NULL);
    if (r->engine_done)
        req_free(r);
}

/* The answers the engines gave at once, in order. One taken from the queue was either
 * cancelled since (delivered: only freed) or goes to its callback as req_fire would. */
static void on_deliver(evutil_socket_t fd, short what, void *arg)
{
    struct store *st = arg;
    struct store_req *r = st->ready; /* taken whole: answers queued from here wait a turn */
    (void)fd;
    (void)what;
    st->ready = NULL;
    st->ready_tail = &st->ready;
    while (r) {
        struct store_req *next = r->qnext;
        r->queued = false;
        if (r->delivered)
            req_free(r);
        else
            req_fire(-1, EV_TIMEOUT, r);
        r = next;
    }
}

/* After the engine's call: an answer given already is queued for delivery from the loop
 * (never before the caller's call returns); otherwise the time limit starts. */
static struct store_req *req_arm(struct store_req *r)
{
    struct store *st = r->st;
    if (r->engine_done) {
        if (st->deliver == NULL) {
            st->deliver = event_new(st->base, -1, 0, on_deliver, st);
            SL_REQUIRE(st->deliver != NULL);
            st->ready_tail = &st->ready;
        }
        r->queued = true;
        *st->ready_tail = r;
        st->ready_tail = &r->qnext;
        if (st->ready == r) /* the first since the last delivery */
            event_active(st->deliver, EV_TIMEOUT, 0);
        return r;
    }
    r->ev = evtimer_new(st->base, req_fire, r);
    SL_REQUIRE(r->ev != NULL);
    struct timeval tv = { st->o.timeout_ms / 1000, (st->o.timeout_ms % 1000) * 1000 };
    evtimer_add(r->ev, &tv);
    return r;
}

static struct store_req *req_new(struct store *st, store_cb cb, void *arg)
{
    struct store_req *r = sl_xcalloc(1, sizeof(*r));
    r->st = st;
    r->cb = cb;
    r->arg = arg;
    r->next = st->reqs;
    if (st->reqs)
        st->reqs->prev = r;
    st->reqs = r;
    return r;
}

/* The engine's answer: kept until req_fire delivers it from the event loop. false when the
 * request is over already (cancelled, or timed out). */
static bool req_answer(struct store_req *r, enum store_status s)
{
    r->engine_done = true;
    if (r->delivered) {
        req_free(r);
        return false;
    }
    if (r->ready) /* timed out: req_fire is delivering the error right now */
        return false;
    r->ready = true;
    r->status = s;
    if (r->ev == NULL) /* answered within the engine's call: req_arm queues it */
        return true;
    evtimer_del(r->ev);
    event_active(r->ev, EV_TIMEOUT, 0); /* never before the caller's call returns */
    return true;
}

bool store_req_done(struct store_req *r, enum store_status s, const struct store_record *rec)
{
    if (!req_answer(r, s))
        return false;
    if (rec) {
        r->has_rec = true;
        r->mark = rec->mark;
        sl_buf_put(&r->body, rec->body.p ? rec->body.p : "", rec->body.len);
    }
    return true;
}

void store_req_asked(struct store_req *r, enum store_status s, enum asks_status as,
                     struct sl_str blob)
{
    if (req_answer(r, s) && s == STORE_OK) {
        r->asks = as;
        if (as == ASKS_SAME)
            sl_buf_put(&r->body, blob.p ? blob.p : "", blob.len);
    }
}

void store_cancel(struct store_req *r)
{
    SL_REQUIRE(!r->delivered);
    r->delivered = true;
    /* A fresh spend given up before its answer was delivered (the client cancelled in the
     * same read): its nonce is marked running, and its call will not run. Marked not run, a
     * retry is refused at once rather than waiting for an outcome that never comes. One not
     * answered yet, the Redis engine releases itself (store_redis.c: RELEASE_LUA). */
    if (r->ready && r->status == STORE_FRESH && r->running)
        store_put_outcome(r->st, r->nonce, r->exp, false, SL_STR_NULL);
    if (r->ev)
        evtimer_del(r->ev);
    if (r->engine_done && !r->queued) /* a queued one is freed when its turn comes */
        req_free(r);
}

void store_report(struct store *st, bool reached, const char *why)
{
    if (reached) {
        if (!st->up)
            sl_info("store: %s store reachable again", st->ops->kind);
        st->up = true;
        return;
    }
    st->errors++;
    if (st->up)
        sl_warn("store: %s store unreachable (%s): gated calls are refused until it is back",
                st->ops->kind, why ? why : "no reason given");
    st->up = false;
}

#define STORE_FULL_EVERY_S 60

void store_full(struct store *st, const char *what)
{
    uint64_t now = gate_clock();
    st->errors++;
    if (st->full_said != 0 && now < st->full_said + STORE_FULL_EVERY_S) {
        st->full_unsaid++;
        return;
    }
    if (st->full_unsaid)
        sl_warn("store: %s (and %llu more refusals since the last such line)", what,
                (unsigned long long)st->full_unsaid);
    else
        sl_warn("store: %s", what);
    st->full_said = now;
    st->full_unsaid = 0;
}

/* ===== records ===== */

static const char mark_byte[] = { [STORE_MARK_REFUSED] = 'X', [STORE_MARK_RUNNING] = 'R',
                                  [STORE_MARK_DONE] = 'D', [STORE_MARK_NOT_KEPT] = 'N' };

size_t store_record_encode(struct sl_buf *out, enum store_mark mark, struct sl_str body)
{
    size_t start = out->len;
    sl_buf_putc(out, mark_byte[mark]);
    if (mark == STORE_MARK_DONE)
        sl_buf_put(out, body.p ? body.p : "", body.len);
    return out->len - start;
}

bool store_record_decode(struct sl_str bytes, struct store_record *rec)
{
    if (bytes.len == 0)
        return false;
    for (size_t m = 0; m < SL_ARRAY_LEN(mark_byte); m++) {
        if (bytes.p[0] != mark_byte[m])
            continue;
        /* a running record may carry its spend's tag (store_redis.c: RELEASE_LUA) */
        if (m != STORE_MARK_DONE && m != STORE_MARK_RUNNING && bytes.len != 1)
            return false;
        rec->mark = (enum store_mark)m;
        rec->body = (struct sl_str){ bytes.p + 1, bytes.len - 1 };
        return true;
    }
    return false;
}

uint64_t store_ttl(const struct store *st, uint64_t exp, uint64_t now)
{
    uint64_t keep = st->o.retention_s;
    /* A replica whose clock is behind the spender's by s still takes the state until exp + s by
     * this clock: a record gone before would let the same accept run there again. */
    if (st->ops->shared && keep < SEAL_CLOCK_SKEW)
        keep = SEAL_CLOCK_SKEW;
    return (exp > now ? exp - now : 1) + keep;
}

/* ===== the interface ===== */

struct store *store_open(struct event_base *base, const struct store_opts *o, char *err,
                         size_t errlen)
{
    struct store_url u;
    if (store_url_parse(o->url, &u, err, errlen) != 0 || !store_prefix_ok(o->prefix, err, errlen))
        return NULL;
    struct store *st = sl_xcalloc(1, sizeof(*st));
    st->base = base;
    st->o = *o;
    st->o.url = sl_xstrndup(o->url, strlen(o->url));
    st->o.prefix = sl_xstrndup(o->prefix, strlen(o->prefix));
    st->o.password = o->password ? sl_xstrndup(o->password, strlen(o->password)) : NULL;
    st->up = true;
    st->ops = u.kind == STORE_URL_REDIS ? &store_redis_ops : &store_memory_ops;
    st->impl = u.kind == STORE_URL_REDIS ? store_redis_open(st, err, errlen)
                                         : store_memory_open(st, err, errlen);
    if (st->impl == NULL) {
        st->ops = NULL;
        store_free(st);
        return NULL;
    }
    return st;
}

void store_free(struct store *st)
{
    if (st == NULL)
        return;
    for (struct store_req *r = st->reqs; r; r = r->next) { /* no callback runs from now on */
        r->delivered = true;
        if (r->ev)
            evtimer_del(r->ev);
    }
    if (st->ops)
        st->ops->free(st->impl); /* ends the requests it still had */
    while (st->reqs)
        req_free(st->reqs);
    if (st->deliver)
        event_free(st->deliver);
    free((char *)st->o.url);
    free((char *)st->o.prefix);
    if (st->o.password) {
        OPENSSL_cleanse((char *)st->o.password, strlen(st->o.password));
        free((char *)st->o.password);
    }
    free(st);
}

struct store_req *store_spend(struct store *st, const uint8_t nonce[STORE_NONCE_LEN],
                              const uint8_t origin[STORE_NONCE_LEN], uint64_t exp,
                              enum store_mark mark, const struct store_question *answers,
                              store_cb cb, void *arg)
{
    struct store_req *r = req_new(st, cb, arg);
    r->running = mark == STORE_MARK_RUNNING;
    memcpy(r->nonce, nonce, STORE_NONCE_LEN);
    r->exp = exp;
    st->ops->spend(st->impl, r, nonce, origin, store_ttl(st, exp, gate_clock()), mark, answers);
    return req_arm(r);
}

struct store_req *store_get(struct store *st, const uint8_t nonce[STORE_NONCE_LEN], store_cb cb,
                            void *arg)
{
    struct store_req *r = req_new(st, cb, arg);
    st->ops->get(st->impl, r, nonce);
    return req_arm(r);
}

struct store_req *store_ask(struct store *st, struct sl_str principal, struct sl_str tool,
                            const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN],
                            uint64_t exp, unsigned max_open, unsigned per_minute,
                            struct sl_str blob, store_ask_cb cb, void *arg)
{
    struct store_req *r = req_new(st, NULL, arg);
    r->ask_cb = cb;
    st->ops->ask(st->impl, r, principal, tool, digest, nonce, gate_clock(), exp, max_open,
                 per_minute, blob);
    return req_arm(r);
}

void store_answered(struct store *st, struct sl_str principal, struct sl_str tool,
                    const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN])
{
    st->ops->answered(st->impl, principal, tool, digest, nonce);
}

void store_withdrawn(struct store *st, struct sl_str principal, struct sl_str tool,
                     const uint8_t digest[32])
{
    st->ops->withdrawn(st->impl, principal, tool, digest);
}

void store_put_outcome(struct store *st, const uint8_t nonce[STORE_NONCE_LEN], uint64_t exp,
                       bool ran, struct sl_str body)
{
    enum store_mark mark = !ran                        ? STORE_MARK_REFUSED
                           : body.len > st->o.max_result ? STORE_MARK_NOT_KEPT
                                                         : STORE_MARK_DONE;
    st->ops->put(st->impl, nonce, store_ttl(st, exp, gate_clock()), mark, body);
}

struct store_req *store_page_question(struct store *st, struct sl_str principal,
                                      const uint8_t id[STORE_NONCE_LEN], uint64_t exp,
                                      struct sl_str value, store_cb cb, void *arg)
{
    struct store_req *r = req_new(st, cb, arg);
    st->ops->page_question(st->impl, r, principal, id, store_ttl(st, exp, gate_clock()), value);
    return req_arm(r);
}

struct store_req *store_page_decide(struct store *st, const uint8_t id[STORE_NONCE_LEN],
                                    uint64_t exp, struct sl_str value, store_cb cb, void *arg)
{
    struct store_req *r = req_new(st, cb, arg);
    st->ops->page_decide(st->impl, r, id, store_ttl(st, exp, gate_clock()), value);
    return req_arm(r);
}

struct store_req *store_page_get(struct store *st, enum store_page_kind kind,
                                 const uint8_t id[STORE_NONCE_LEN], store_cb cb, void *arg)
{
    struct store_req *r = req_new(st, cb, arg);
    st->ops->page_get(st->impl, r, kind, id);
    return req_arm(r);
}

void store_anchor_push(struct store *st, struct sl_str entry, unsigned cap)
{
    st->ops->anchor(st->impl, entry, cap ? cap : 1);
}

int store_anchor_fetch(const struct store_opts *o, struct sl_buf *out, char *err,
                       size_t errlen)
{
    struct store_url u;
    if (store_url_parse(o->url, &u, err, errlen) != 0 || !store_prefix_ok(o->prefix, err, errlen))
        return -1;
    if (u.kind != STORE_URL_REDIS) {
        snprintf(err, errlen, "the memory store keeps anchors only inside its sluice process: "
                 "read them from the log");
        return -1;
    }
    return store_redis_anchor_fetch(o, out, err, errlen);
}

const uint8_t *store_epoch(const struct store *st)
{
    return st->epoch;
}

bool store_shared(const struct store *st)
{
    return st->ops->shared;
}

unsigned store_timeout_ms(const struct store *st)
{
    return st->o.timeout_ms;
}

bool store_is_up(const struct store *st)
{
    return st->up;
}

uint64_t store_errors(const struct store *st)
{
    return st->errors;
}

const char *store_kind(const struct store *st)
{
    return st->ops->kind;
}
