/* store_priv.h: what store.c shares with its engines (store_memory.c, store_redis.c). Included
 * only by store*.c.
 *
 * store.c owns requests: their callback, their timeout and their memory. An engine gets a
 * request, does its work and ends it with store_req_done exactly once (from its reply callback,
 * or at once); store.c then runs the caller's callback from the event loop, unless the caller
 * cancelled or the timeout already answered STORE_ERROR. A reply that comes after the timeout is
 * dropped; the engine still calls store_req_done so the request's memory is freed. */
#ifndef SL_STORE_PRIV_H
#define SL_STORE_PRIV_H

#include "store.h"

struct store_ops {
    const char *kind;  /* "memory", "redis" */
    bool shared;       /* see store_shared */
    /* Record nonce with mark unless present (its record lives ttl_s seconds), if origin is the
     * engine's epoch (else STORE_RESET, and the engine learns the epoch it has now, or begins
     * one); when answers is not NULL, close that question too (as answered): the memory store
     * when the nonce was recorded now, Redis whatever it finds (a nonce spent before closed
     * its question then; one of another epoch is refused for good). */
    void (*spend)(void *impl, struct store_req *r, const uint8_t nonce[STORE_NONCE_LEN],
                  const uint8_t origin[STORE_NONCE_LEN], uint64_t ttl_s, enum store_mark mark,
                  const struct store_question *answers);
    void (*get)(void *impl, struct store_req *r, const uint8_t nonce[STORE_NONCE_LEN]);
    /* Overwrites nonce's record (no request: fire and forget). */
    void (*put)(void *impl, const uint8_t nonce[STORE_NONCE_LEN], uint64_t ttl_s,
                enum store_mark mark, struct sl_str body);
    /* Approval fatigue (store_ask, store_answered, store_withdrawn); now is sluice's clock. The
     * ask checks and, on ASKS_OK, records in one atomic step, and ends r with
     * store_req_asked. */
    void (*ask)(void *impl, struct store_req *r, struct sl_str principal, struct sl_str tool,
                const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN], uint64_t now,
                uint64_t exp, unsigned max_open, unsigned per_minute, struct sl_str blob);
    void (*answered)(void *impl, struct sl_str principal, struct sl_str tool,
                     const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN]);
    void (*withdrawn)(void *impl, struct sl_str principal, struct sl_str tool,
                      const uint8_t digest[32]);
    /* store_page_decide: id's STORE_PAGE_DECISION record, value for ttl_s seconds, set only
     * when absent: ends r with STORE_FRESH, or STORE_SPENT with the value there as the record's
     * body, or STORE_ERROR (the memory store's budget is spent, Redis is not connected). */
    void (*page_decide)(void *impl, struct store_req *r, const uint8_t id[STORE_NONCE_LEN],
                        uint64_t ttl_s, struct sl_str value);
    /* store_page_question: principal's question as id's STORE_PAGE_QUESTION record, for ttl_s
     * seconds; ends r with STORE_FRESH once it is written, or STORE_OVER_SHARE or STORE_ERROR,
     * as there. */
    void (*page_question)(void *impl, struct store_req *r, struct sl_str principal,
                          const uint8_t id[STORE_NONCE_LEN], uint64_t ttl_s, struct sl_str value);
    /* Ends r with STORE_FOUND (body: the value), STORE_ABSENT or STORE_ERROR. */
    void (*page_get)(void *impl, struct store_req *r, enum store_page_kind kind,
                     const uint8_t id[STORE_NONCE_LEN]);
    /* store_anchor_push (no request: fire and forget). */
    void (*anchor)(void *impl, struct sl_str entry, unsigned cap);
    /* A request timed out: the connection may be stalled. The engine may drop it and
     * reconnect (its pending requests then end with STORE_ERROR). NULL: nothing to do. */
    void (*stalled)(void *impl);
    void (*free)(void *impl);
};

struct store {
    const struct store_ops *ops;
    void *impl;
    struct event_base *base;
    struct store_opts o;     /* strings copied */
    uint8_t epoch[STORE_NONCE_LEN]; /* see store_epoch; the engine writes it */
    bool up;                 /* the last operation reached the engine */
    uint64_t errors;
    uint64_t full_said;      /* when store_full last logged (gate_clock), 0: never */
    uint64_t full_unsaid;    /* refusals since then, not logged one by one */
    struct store_req *reqs;  /* in flight (store.c) */
    struct event *deliver;   /* delivers the answers given at once (store.c) */
    struct store_req *ready, **ready_tail; /* those answers, oldest first */
};

/* Engines. Each returns its impl, or NULL with err set. */
void *store_memory_open(struct store *st, char *err, size_t errlen);
extern const struct store_ops store_memory_ops;
void *store_redis_open(struct store *st, char *err, size_t errlen);
extern const struct store_ops store_redis_ops;

/* store_anchor_fetch for a Redis URL. */
int store_redis_anchor_fetch(const struct store_opts *o, struct sl_buf *out, char *err,
                             size_t errlen);

/* Ends request r (see above). rec may be NULL; its body is copied. Returns whether the caller
 * gets this answer: false when r was cancelled or timed out (it got, or gets, STORE_ERROR). */
bool store_req_done(struct store_req *r, enum store_status s, const struct store_record *rec);
/* Ends ask request r: s is STORE_OK (as is the answer; blob for ASKS_SAME, copied) or
 * STORE_ERROR. */
void store_req_asked(struct store_req *r, enum store_status s, enum asks_status as,
                     struct sl_str blob);
/* An engine reports whether it reaches its store: logged once per change ("store unreachable:
 * why", "store reachable again"), and counted as an error each time it is false. */
void store_report(struct store *st, bool reached, const char *why);

/* An engine refused a write because its own budget is spent (the memory store's bytes for
 * notes: what is the limit of what). The store is reachable, so this is not an outage: `up`
 * stays, the refusal counts as an error, and the warning says which budget, at most once a
 * minute (a full budget refuses every write of its kind until records expire). */
void store_full(struct store *st, const char *what);

/* The encoded record: one mark byte, then the body (DONE only). Engines store these bytes. */
size_t store_record_encode(struct sl_buf *out, enum store_mark mark, struct sl_str body);
bool store_record_decode(struct sl_str bytes, struct store_record *rec);

/* Seconds a record for a state valid until exp lives, from now: to exp plus the retention, and
 * with a shared store at least SEAL_CLOCK_SKEW past exp. */
uint64_t store_ttl(const struct store *st, uint64_t exp, uint64_t now);

#endif /* SL_STORE_PRIV_H */
