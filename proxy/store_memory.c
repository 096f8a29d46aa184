/* store_memory.c: the embedded store, for one process: replay.c's table, with each record as
 * the entry's note, and asks.c for approval fatigue. It answers at once (store.c delivers the
 * answer from the event loop). Its epoch is random per process, so a state spent here can only
 * have been minted here. */
#include "store_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "log.h"
#include "replay.h"
#include "seal.h"
#include "shares.h"

struct memstore {
    struct store *st;
    struct replay *table;
    struct asks *asks;
    struct replay *pages[2];  /* the approval page's records, by enum store_page_kind */
    struct shares *askers;    /* the bytes and entries of page questions each principal holds */
    char **anchors;      /* the newest audit anchors, a ring; this process only */
    size_t nanchors;
    size_t anchor_next;  /* once the ring is full: the oldest, replaced next */
};

static void note_mark(struct memstore *m, const uint8_t nonce[STORE_NONCE_LEN], uint64_t now,
                      enum store_mark mark, struct sl_str body)
{
    char room[256]; /* a usual record: the table copies it, so no heap buffer (issue 24) */
    struct sl_buf b;
    sl_buf_on(&b, room, sizeof(room));
    store_record_encode(&b, mark, body);
    if (replay_note(m->table, nonce, now, sl_buf_str(&b)) != REPLAY_FRESH) {
        /* Over the total for kept outcomes: a retry is told the call ran, not what it said. */
        sl_buf_reset(&b);
        store_record_encode(&b, STORE_MARK_NOT_KEPT, SL_STR_NULL);
        if (replay_note(m->table, nonce, now, sl_buf_str(&b)) != REPLAY_FRESH)
            sl_warn("store: could not record an outcome (the nonce's record expired)");
    }
    sl_buf_free(&b);
}

static void mem_spend(void *impl, struct store_req *r, const uint8_t nonce[STORE_NONCE_LEN],
                      const uint8_t origin[STORE_NONCE_LEN], uint64_t ttl_s,
                      enum store_mark mark, const struct store_question *answers)
{
    struct memstore *m = impl;
    if (memcmp(origin, m->st->epoch, STORE_NONCE_LEN) != 0) {
        store_req_done(r, STORE_RESET, NULL); /* the gate refuses these first */
        return;
    }
    uint64_t now = gate_clock();
    enum replay_status rs = replay_record(m->table, nonce, now + ttl_s, now);
    struct sl_str note;
    struct store_record rec;
    if (rs == REPLAY_FRESH) {
        note_mark(m, nonce, now, mark, SL_STR_NULL);
        if (answers)
            asks_answered(m->asks, nonce); /* the nonce finds the question */
        store_req_done(r, STORE_FRESH, NULL);
    } else if (rs == REPLAY_SEEN && replay_lookup(m->table, nonce, now, &note) &&
               store_record_decode(note, &rec)) {
        store_req_done(r, STORE_SPENT, &rec);
    } else {
        store_report(m->st, false, "the memory store is full");
        store_req_done(r, STORE_ERROR, NULL);
        return;
    }
    store_report(m->st, true, NULL);
}

static void mem_get(void *impl, struct store_req *r, const uint8_t nonce[STORE_NONCE_LEN])
{
    struct memstore *m = impl;
    struct sl_str note;
    struct store_record rec;
    if (replay_lookup(m->table, nonce, gate_clock(), &note) && store_record_decode(note, &rec))
        store_req_done(r, STORE_FOUND, &rec);
    else
        store_req_done(r, STORE_ABSENT, NULL);
}

static void mem_put(void *impl, const uint8_t nonce[STORE_NONCE_LEN], uint64_t ttl_s,
                    enum store_mark mark, struct sl_str body)
{
    struct memstore *m = impl;
    (void)ttl_s; /* the entry lives as long as its spend said */
    note_mark(m, nonce, gate_clock(), mark, body);
}

/* Checked and, on ASKS_OK, recorded at once: nothing runs between the two. */
static void mem_ask(void *impl, struct store_req *r, struct sl_str principal, struct sl_str tool,
                    const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN], uint64_t now,
                    uint64_t exp, unsigned max_open, unsigned per_minute, struct sl_str blob)
{
    struct memstore *m = impl;
    struct sl_str same = SL_STR_NULL;
    enum asks_status as = asks_ask(m->asks, principal, tool, digest, nonce, now, exp, max_open,
                                   per_minute, blob, &same);
    store_req_asked(r, STORE_OK, as, same);
}

static void mem_answered(void *impl, struct sl_str principal, struct sl_str tool,
                         const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN])
{
    struct memstore *m = impl;
    (void)principal; /* the nonce finds the question */
    (void)tool;
    (void)digest;
    asks_answered(m->asks, nonce);
}

static void mem_withdrawn(void *impl, struct sl_str principal, struct sl_str tool,
                          const uint8_t digest[32])
{
    struct memstore *m = impl;
    asks_withdrawn(m->asks, principal, tool, digest);
}

/* Kept like Redis keeps them, so both engines answer the same; nothing outside this process
 * reads them (the log carries the anchors off the host). */
static void mem_anchor(void *impl, struct sl_str entry, unsigned cap)
{
    struct memstore *m = impl;
    char *copy = sl_xstrndup(entry.p, entry.len);
    if (m->nanchors < cap) {
        m->anchors = sl_xrealloc(m->anchors, (m->nanchors + 1) * sizeof(*m->anchors));
        m->anchors[m->nanchors++] = copy;
        return;
    }
    m->anchor_next %= m->nanchors;
    free(m->anchors[m->anchor_next]);
    m->anchors[m->anchor_next++] = copy;
}

/* What store_full says when a page record does not fit: the budget, and what it costs. */
static const char *const page_full[] = {
    [STORE_PAGE_QUESTION] = "the memory store's budget for approval page records is full: a "
                            "question was refused (records expire confirm_ttl plus "
                            "--result-retention after they are written)",
    [STORE_PAGE_DECISION] = "the memory store's budget for approval page decisions is full: a "
                            "decision was not recorded",
};

/* A record and its value are written together or not at all: a record left without its value
 * would read as a question with no text, or as a decision nobody made, refusing every later
 * decision as already made. */
static bool page_set(void *impl, struct store_req *r, enum store_page_kind kind,
                         const uint8_t id[STORE_NONCE_LEN], uint64_t ttl_s, struct sl_str value,
                         bool if_absent)
{
    struct memstore *m = impl;
    struct replay *t = m->pages[kind];
    uint64_t now = gate_clock();
    enum replay_status rs = replay_record(t, id, now + ttl_s, now);
    struct store_record rec = { .mark = STORE_MARK_DONE };
    if (rs == REPLAY_SEEN && if_absent) {
        if (replay_lookup(t, id, now, &rec.body))
            store_req_done(r, STORE_SPENT, &rec);
        else
            store_req_done(r, STORE_ERROR, NULL);
        return true;
    }
    bool ok = rs != REPLAY_ERROR && replay_note(t, id, now, value) == REPLAY_FRESH;
    if (!ok && rs == REPLAY_FRESH)
        replay_forget(t, id, now); /* recorded just now, for this value alone */
    if (!ok)
        store_full(m->st, page_full[kind]);
    if (r)
        store_req_done(r, ok ? STORE_FRESH : STORE_ERROR, NULL);
    return ok;
}

static void mem_page_decide(void *impl, struct store_req *r, const uint8_t id[STORE_NONCE_LEN],
                            uint64_t ttl_s, struct sl_str value)
{
    page_set(impl, r, STORE_PAGE_DECISION, id, ttl_s, value, true);
}

/* A principal over its share is refused before anything is written: the budget and the table's
 * entries are everyone's, and what one principal holds of either is bounded (STORE_PAGE_SHARE).
 * Its record and its share
 * expire together (the same ttl by the same clock). */
static enum store_status page_question(struct memstore *m, struct sl_str principal,
                                       const uint8_t id[STORE_NONCE_LEN], uint64_t ttl_s,
                                       struct sl_str value)
{
    uint64_t now = gate_clock();
    if (!shares_fits(m->askers, principal, value.len, now))
        return STORE_OVER_SHARE;
    if (!page_set(m, NULL, STORE_PAGE_QUESTION, id, ttl_s, value, false))
        return STORE_ERROR;
    shares_take(m->askers, principal, value.len, now + ttl_s, now);
    return STORE_FRESH;
}

static void mem_page_question(void *impl, struct store_req *r, struct sl_str principal,
                              const uint8_t id[STORE_NONCE_LEN], uint64_t ttl_s,
                              struct sl_str value)
{
    store_req_done(r, page_question(impl, principal, id, ttl_s, value), NULL);
}

static void mem_page_get(void *impl, struct store_req *r, enum store_page_kind kind,
                         const uint8_t id[STORE_NONCE_LEN])
{
    struct memstore *m = impl;
    struct store_record rec = { .mark = STORE_MARK_DONE };
    if (replay_lookup(m->pages[kind], id, gate_clock(), &rec.body))
        store_req_done(r, STORE_FOUND, &rec);
    else
        store_req_done(r, STORE_ABSENT, NULL);
}

static void mem_free(void *impl)
{
    struct memstore *m = impl;
    replay_free(m->pages[0]);
    replay_free(m->pages[1]);
    shares_free(m->askers);
    for (size_t i = 0; i < m->nanchors; i++)
        free(m->anchors[i]);
    free(m->anchors);
    asks_free(m->asks);
    replay_free(m->table);
    free(m);
}

const struct store_ops store_memory_ops = {
    .kind = "memory",
    .shared = false,
    .spend = mem_spend,
    .get = mem_get,
    .put = mem_put,
    .ask = mem_ask,
    .answered = mem_answered,
    .withdrawn = mem_withdrawn,
    .page_decide = mem_page_decide,
    .page_question = mem_page_question,
    .page_get = mem_page_get,
    .anchor = mem_anchor,
    .stalled = NULL,
    .free = mem_free,
};

void *store_memory_open(struct store *st, char *err, size_t errlen)
{
    struct memstore *m = sl_xcalloc(1, sizeof(*m));
    m->st = st;
    m->table = replay_memory_new(st->o.max_entries, st->o.max_total);
    m->asks = asks_new();
    m->pages[0] = replay_memory_new(st->o.max_entries, st->o.max_total);
    m->pages[1] = replay_memory_new(st->o.max_entries, st->o.max_total);
    m->askers = shares_new(st->o.max_total / STORE_PAGE_SHARE,
                           st->o.max_entries / STORE_PAGE_SHARE);
    if (m->table == NULL || m->pages[0] == NULL || m->pages[1] == NULL || m->askers == NULL ||
        seal_random_nonce(st->epoch) != 0) {
        snprintf(err, errlen, "the memory store could not be made");
        replay_free(m->table);
        replay_free(m->pages[0]);
        replay_free(m->pages[1]);
        shares_free(m->askers);
        asks_free(m->asks);
        free(m);
        return NULL;
    }
    return m;
}
