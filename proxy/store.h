/* store.h: what sluice remembers about its sealed states beyond one message. Each state carries a
 * nonce; the store records it when the state is spent (one approval, one run) and, for an
 * approved call, keeps the call's outcome under it, so that a client which lost the reply and
 * retries the same round gets that outcome instead of a second run.
 *
 * Two engines behind one interface: "memory" (embedded, this process only) and Redis (shared by
 * every replica that points at it: a state may then be spent at any of them). Every operation is
 * asynchronous on sluice's event loop and bounded by the store timeout; its callback never runs
 * before the call that started it returns, and runs exactly once unless the caller cancels it.
 * A store that cannot answer says STORE_ERROR: the caller refuses (fail closed).
 *
 * A nonce's record lives until its state would have expired plus the result retention (in a
 * shared store, at least plus SEAL_CLOCK_SKEW: replicas' clocks differ).
 *
 * The epoch: every state carries the 16-byte origin it was minted under (seal.h), and the store
 * names the origin new states get (store_epoch). The memory store's epoch is random per process,
 * so a state opens only where it was minted. Redis keeps the epoch under a key of its own: a
 * store that comes back without it (restarted without persistence, flushed, failed over to an
 * empty replica) has forgotten which nonces were spent, so a new epoch begins and every state
 * minted under another one is refused with STORE_RESET.
 *
 * Approval fatigue (asks.h) lives in the store as well, so replicas sharing one share it: the
 * questions open per principal, the questions asked in the last minute, and the open question an
 * identical call (same principal, tool and argument digest) gets again (store_ask). The memory
 * store is asks.c; Redis keeps the same per principal (store_redis.c). */
#ifndef SL_STORE_H
#define SL_STORE_H

#include "asks.h"
#include "base.h"

struct event_base;
struct store;
struct store_req; /* one operation in flight */

#define STORE_NONCE_LEN 16

struct store_opts {
    const char *url;         /* "memory" or "redis://[user@]HOST:PORT[/DB]" */
    const char *prefix;      /* namespace of every key ("sluice:") */
    unsigned timeout_ms;     /* bound on every operation (2000) */
    unsigned replicas;       /* Redis: a spend is done once this many replicas have it (0) */
    const char *password;    /* from SLUICE_STORE_PASSWORD, or NULL */
    unsigned retention_s;    /* an outcome is kept this long after its state expires (600) */
    size_t max_result;       /* bytes of one kept outcome (1 MiB); larger: STORE_MARK_NOT_KEPT */
    size_t max_total;        /* memory store: bytes of all kept outcomes (64 MiB) */
    size_t max_entries;      /* memory store: records of each table (100,000) */
};

enum store_status {
    STORE_FRESH,  /* spend: recorded now, by this call; the caller may go on */
    STORE_SPENT,  /* spend: recorded before; the record says what became of it */
    STORE_FOUND,  /* get: the record is there */
    STORE_ABSENT, /* get: no record (never spent, or past its retention) */
    STORE_RESET,  /* the store lost its records after this state was minted: refuse */
    STORE_OK,     /* ask: the store answered (the asks status says what) */
    STORE_OVER_SHARE, /* page question: its principal's questions hold their share already */
    STORE_ERROR,  /* unreachable, too slow, full or broken: refuse (fail closed) */
};

/* What a spent nonce's record says. */
enum store_mark {
    STORE_MARK_REFUSED,  /* spent by an answer that was not an accept: nothing ran */
    STORE_MARK_RUNNING,  /* accepted and forwarded; the outcome is not in yet */
    STORE_MARK_DONE,     /* the outcome is in `body` */
    STORE_MARK_NOT_KEPT, /* the call ran; its outcome was over max_result and was not kept */
};

struct store_record {
    enum store_mark mark;
    struct sl_str body;  /* DONE: the outcome as the caller put it; valid during the callback */
};

/* rec is set for STORE_SPENT and STORE_FOUND, NULL otherwise. */
typedef void (*store_cb)(void *arg, enum store_status st, const struct store_record *rec);

/* st is STORE_OK or STORE_ERROR. For STORE_OK, as says what the store decided, and for ASKS_SAME
 * blob is the open question (as store_ask was given it), valid during the callback. */
typedef void (*store_ask_cb)(void *arg, enum store_status st, enum asks_status as,
                             struct sl_str blob);

/* Opens the store (a Redis store connects in the background and reconnects with backoff). NULL
 * with a message in err when the options are wrong (e.g. a rediss:// URL). */
struct store *store_open(struct event_base *base, const struct store_opts *o, char *err,
                         size_t errlen);
void store_free(struct store *st); /* pending callbacks never run; NULL is a no-op */

/* The call a question asked about (store_ask): its principal, tool and argument digest. */
struct store_question {
    struct sl_str principal, tool;
    const uint8_t *digest; /* 32 bytes */
};

/* Spends nonce of a state minted under origin and valid until exp: records it with mark
 * (RUNNING for an accept about to be forwarded, REFUSED otherwise) unless it is recorded
 * already. STORE_FRESH, STORE_SPENT (with the record), STORE_RESET (origin is not the store's
 * epoch) or STORE_ERROR. answers: the question whose state nonce is, answered by the person,
 * or NULL; a fresh spend closes it in the same step (as store_answered would, one command
 * less a confirmation with Redis). */
struct store_req *store_spend(struct store *st, const uint8_t nonce[STORE_NONCE_LEN],
                              const uint8_t origin[STORE_NONCE_LEN], uint64_t exp,
                              enum store_mark mark, const struct store_question *answers,
                              store_cb cb, void *arg);
/* Reads nonce's record: STORE_FOUND, STORE_ABSENT or STORE_ERROR. */
struct store_req *store_get(struct store *st, const uint8_t nonce[STORE_NONCE_LEN], store_cb cb,
                            void *arg);
/* Keeps the outcome of the accepted call that spent nonce (valid until exp). ran: it was
 * forwarded, and body is its response (over max_result: STORE_MARK_NOT_KEPT); else it was refused
 * after all (STORE_MARK_REFUSED: a retry is a replay). No callback: a failure is logged and
 * counted, and a retry then waits in vain and is told the outcome is unknown. */
void store_put_outcome(struct store *st, const uint8_t nonce[STORE_NONCE_LEN], uint64_t exp,
                       bool ran, struct sl_str body);
/* Before asking principal about tool with these arguments (digest): an identical question still
 * open is ASKS_SAME (with its blob); over max_open open questions ASKS_OPEN, over per_minute new
 * ones in the last 60 s ASKS_RATE (the memory store also ASKS_FULL, ASKS_PRINCIPALS_FULL);
 * otherwise ASKS_OK, and the question (its state's nonce, valid until exp, and blob) is recorded
 * as open and counted, in the same atomic step. */
struct store_req *store_ask(struct store *st, struct sl_str principal, struct sl_str tool,
                            const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN],
                            uint64_t exp, unsigned max_open, unsigned per_minute,
                            struct sl_str blob, store_ask_cb cb, void *arg);
/* The question whose state has nonce was answered (or is no longer wanted): it is no longer open
 * and no longer shared (it still counts toward the rate). principal, tool and digest are the
 * call it asked about. Fire and forget; a failure is logged and counted, and the question then
 * stays open until it expires. */
void store_answered(struct store *st, struct sl_str principal, struct sl_str tool,
                    const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN]);
/* The call that asked about tool with digest was withdrawn before an answer (cancelled, its
 * client left): its open question, whichever state it has, is no longer open. Fire and forget. */
void store_withdrawn(struct store *st, struct sl_str principal, struct sl_str tool,
                     const uint8_t digest[32]);
/* Appends entry (an audit anchor's text, audit.h) to the store's list of anchors, keeping the
 * newest cap: with Redis the list PREFIX "audit:anchors", off this host; the memory store keeps
 * them in this process only. Fire and forget: a failure is logged and counted. */
void store_anchor_push(struct store *st, struct sl_str entry, unsigned cap);
/* Reads the anchor list of the Redis store o->url at once, without an event loop (for `sluice
 * audit verify`): its entries, one per line, appended to out. 0, or -1 with a message in err
 * (a memory store has no list outside its process). */
int store_anchor_fetch(const struct store_opts *o, struct sl_buf *out, char *err,
                       size_t errlen);
/* The approval page's records (approval.h), keyed by a page id (16 bytes), living until exp
 * plus the retention, seen by every replica sharing the store.
 *   STORE_PAGE_QUESTION  what the page shows: written when the question is asked
 *   STORE_PAGE_DECISION  the person's decision: written once (set if absent) */
enum store_page_kind { STORE_PAGE_QUESTION, STORE_PAGE_DECISION };
/* One principal's page questions may hold at most this fraction of the memory store's budget
 * for them (max_total / STORE_PAGE_SHARE: 4 MiB of the default 64 MiB), and of its table's
 * entries (max_entries / STORE_PAGE_SHARE: 6,250 of the 100,000). A question's record is at most
 * about 260 KB, so a share holds sixteen of the largest, twice the default
 * max_open_confirmations (8) (records outlive their answers by the retention), and hundreds of
 * usual ones; and it takes sixteen principals asking the largest questions they can, or the
 * most questions they can, not one, to fill the budget or the table for everyone else. */
#define STORE_PAGE_SHARE 16
/* Writes value, the question principal asked, under id as its STORE_PAGE_QUESTION record
 * (overwriting), and answers once the store has it: STORE_FRESH (written: the page reads it at
 * every replica sharing the store), or not there, so the question must not be handed out:
 * STORE_OVER_SHARE (the memory store: principal's questions already hold its share of the
 * budget; the others' are untouched) or STORE_ERROR (the memory store's budget for page records
 * is spent; Redis is not connected, refused the write, or did not answer in time: it may have
 * taken it all the same, a record then nobody is sent to). */
struct store_req *store_page_question(struct store *st, struct sl_str principal,
                                      const uint8_t id[STORE_NONCE_LEN], uint64_t exp,
                                      struct sl_str value, store_cb cb, void *arg);
/* Writes value under id unless a value is there: STORE_FRESH (written now, by this call),
 * STORE_SPENT (rec->body: the value that was there) or STORE_ERROR. */
struct store_req *store_page_decide(struct store *st, const uint8_t id[STORE_NONCE_LEN],
                                    uint64_t exp, struct sl_str value, store_cb cb, void *arg);
/* Reads the value under id: STORE_FOUND (rec->body), STORE_ABSENT or STORE_ERROR. */
struct store_req *store_page_get(struct store *st, enum store_page_kind kind,
                                 const uint8_t id[STORE_NONCE_LEN], store_cb cb, void *arg);

/* The callback of r will not run. r must be one whose callback has not run yet. A spend that
 * marked its nonce running is marked not run instead: its caller gave up, and the call does not
 * run. */
void store_cancel(struct store_req *r);

/* The origin new states are minted under: the store's epoch. The bytes stay at this address
 * and change when a new epoch begins; all zero while a Redis store has not been reached yet. */
const uint8_t *store_epoch(const struct store *st);
/* True when every replica pointing at the same store sees the same records (Redis). */
bool store_shared(const struct store *st);
/* --store-timeout: the bound on every operation, in milliseconds. */
unsigned store_timeout_ms(const struct store *st);
/* For /metrics: whether the last operation reached the store, and how many failed. */
bool store_is_up(const struct store *st);
uint64_t store_errors(const struct store *st);
/* "memory" or "redis", for logs. */
const char *store_kind(const struct store *st);

#endif /* SL_STORE_H */
