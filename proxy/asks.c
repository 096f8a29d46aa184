/* asks.c: the open questions, in fixed pools with hash chains: a question is found by what was
 * asked (principal, tool, arguments) or by its state's nonce, a principal by its hash, without
 * scanning the table. Hashes are keyed with a per-process salt, so a client cannot choose
 * arguments or tokens that pile into one chain. Expired questions and principals that no longer
 * count are swept at most once a second (a walk over the fixed pools). */
#include "asks.h"

#include <stdlib.h>
#include <string.h>

#include "seal.h"

#define NIL (-1)
#define BUCKETS 8192          /* for questions: twice ASKS_MAX, a power of two */
#define WHO_BUCKETS 1024      /* for principals: twice ASKS_PRINCIPALS */
#define WINDOW 60             /* seconds of the per_minute rate */

struct ask {
    uint8_t what[16];         /* keyed hash of principal, tool and argument digest */
    uint8_t nonce[16];
    uint64_t exp;
    char *question;           /* the result JSON sent, for an identical call */
    size_t qlen;
    int32_t who;              /* its principal; NIL while the slot is free */
    int32_t next_what;        /* chain by what; the free list while free */
    int32_t next_nonce;       /* chain by nonce */
};

/* A principal that has a question open or asked one within the last minute. */
struct who {
    uint8_t id[16];           /* keyed hash of the principal */
    bool used;
    unsigned open;            /* its open questions */
    uint64_t last_ask;        /* the second of its latest question */
    struct {
        uint64_t sec;
        unsigned n;
    } rate[WINDOW];           /* questions asked per second, by second % WINDOW */
    int32_t next;             /* chain by id; the free list while free */
};

struct asks {
    uint8_t salt[16];
    struct ask e[ASKS_MAX];
    struct who w[ASKS_PRINCIPALS];
    int32_t what_head[BUCKETS], nonce_head[BUCKETS], who_head[WHO_BUCKETS];
    int32_t free_e, free_w;
    size_t nwho;
    size_t claimed;           /* sum over principals of max(open, ASKS_RESERVED) <= ASKS_MAX */
    uint64_t swept;           /* the second of the last sweep */
};

struct asks *asks_new(void)
{
    struct asks *a = sl_xcalloc(1, sizeof(struct asks));
    SL_REQUIRE(seal_random_nonce(a->salt) == 0);
    for (size_t i = 0; i < BUCKETS; i++)
        a->what_head[i] = a->nonce_head[i] = NIL;
    for (size_t i = 0; i < WHO_BUCKETS; i++)
        a->who_head[i] = NIL;
    for (int32_t i = 0; i < ASKS_MAX; i++) {
        a->e[i].who = NIL;
        a->e[i].next_what = i + 1 < ASKS_MAX ? i + 1 : NIL;
    }
    for (int32_t i = 0; i < ASKS_PRINCIPALS; i++)
        a->w[i].next = i + 1 < ASKS_PRINCIPALS ? i + 1 : NIL;
    a->free_e = a->free_w = 0;
    a->swept = UINT64_MAX;
    return a;
}

void asks_free(struct asks *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < ASKS_MAX; i++)
        free(a->e[i].question);
    free(a);
}

/* ===== hashing ===== */

/* The hashed input is built on the stack (it moves to the heap only for a principal or tool
 * name of hundreds of bytes). */
static void hash_who(const struct asks *a, struct sl_str principal, uint8_t out[16])
{
    uint8_t h[SEAL_DIGEST_LEN];
    char room[256];
    struct sl_buf b;
    sl_buf_on(&b, room, sizeof(room));
    sl_buf_put(&b, a->salt, sizeof(a->salt));
    sl_buf_put(&b, principal.p, principal.len);
    seal_sha256(b.p, b.len, h);
    sl_buf_free(&b);
    memcpy(out, h, 16);
}

/* Length-prefixed, so no two (principal, tool) pairs hash the same input. */
static void hash_what(const struct asks *a, struct sl_str principal, struct sl_str tool,
                      const uint8_t digest[32], uint8_t out[16])
{
    uint8_t h[SEAL_DIGEST_LEN];
    uint64_t pl = principal.len, tl = tool.len;
    char room[256];
    struct sl_buf b;
    sl_buf_on(&b, room, sizeof(room));
    sl_buf_put(&b, a->salt, sizeof(a->salt));
    sl_buf_put(&b, &pl, sizeof(pl));
    sl_buf_put(&b, principal.p, principal.len);
    sl_buf_put(&b, &tl, sizeof(tl));
    sl_buf_put(&b, tool.p, tool.len);
    sl_buf_put(&b, digest, 32);
    seal_sha256(b.p, b.len, h);
    sl_buf_free(&b);
    memcpy(out, h, 16);
}

/* Keyed hashes and random nonces: their first bytes are already evenly spread. */
static uint32_t bucket(const uint8_t h[16], uint32_t n)
{
    uint32_t v;
    memcpy(&v, h, sizeof(v));
    return v & (n - 1);
}

/* ===== the pools ===== */

static int32_t find_who(const struct asks *a, const uint8_t id[16])
{
    for (int32_t i = a->who_head[bucket(id, WHO_BUCKETS)]; i != NIL; i = a->w[i].next)
        if (memcmp(a->w[i].id, id, 16) == 0)
            return i;
    return NIL;
}

static int32_t find_what(const struct asks *a, const uint8_t what[16])
{
    for (int32_t i = a->what_head[bucket(what, BUCKETS)]; i != NIL; i = a->e[i].next_what)
        if (memcmp(a->e[i].what, what, 16) == 0)
            return i;
    return NIL;
}

static int32_t find_nonce(const struct asks *a, const uint8_t nonce[16])
{
    for (int32_t i = a->nonce_head[bucket(nonce, BUCKETS)]; i != NIL; i = a->e[i].next_nonce)
        if (memcmp(a->e[i].nonce, nonce, 16) == 0)
            return i;
    return NIL;
}

/* Frees question i: its place goes back at once (the rate still counts it). */
static void drop(struct asks *a, int32_t i)
{
    struct ask *e = &a->e[i];
    int32_t *pp = &a->what_head[bucket(e->what, BUCKETS)];
    while (*pp != i)
        pp = &a->e[*pp].next_what;
    *pp = e->next_what;
    pp = &a->nonce_head[bucket(e->nonce, BUCKETS)];
    while (*pp != i)
        pp = &a->e[*pp].next_nonce;
    *pp = e->next_nonce;
    struct who *w = &a->w[e->who];
    if (w->open-- > ASKS_RESERVED)
        a->claimed--; /* a place from the shared pool */
    free(e->question);
    e->question = NULL;
    e->who = NIL;
    e->next_what = a->free_e;
    a->free_e = i;
}

static void drop_who(struct asks *a, int32_t i)
{
    struct who *w = &a->w[i];
    int32_t *pp = &a->who_head[bucket(w->id, WHO_BUCKETS)];
    while (*pp != i)
        pp = &a->w[*pp].next;
    *pp = w->next;
    w->used = false;
    w->next = a->free_w;
    a->free_w = i;
    a->nwho--;
    a->claimed -= ASKS_RESERVED;
}

/* Questions that expired, and principals with nothing open and nothing asked in the last
 * minute, leave; once per second is enough, as now has that resolution. */
static void sweep(struct asks *a, uint64_t now)
{
    if (a->swept == now)
        return;
    a->swept = now;
    for (int32_t i = 0; i < ASKS_MAX; i++)
        if (a->e[i].who != NIL && now >= a->e[i].exp)
            drop(a, i);
    for (int32_t i = 0; i < ASKS_PRINCIPALS; i++)
        if (a->w[i].used && a->w[i].open == 0 && now >= a->w[i].last_ask + WINDOW)
            drop_who(a, i);
}

/* Questions a principal was asked in the WINDOW seconds up to now. */
static unsigned recent(const struct who *w, uint64_t now)
{
    unsigned n = 0;
    for (size_t k = 0; k < WINDOW; k++)
        if (now < w->rate[k].sec + WINDOW)
            n += w->rate[k].n;
    return n;
}

static void count_ask(struct who *w, uint64_t now)
{
    size_t k = now % WINDOW;
    if (w->rate[k].sec != now) {
        w->rate[k].sec = now;
        w->rate[k].n = 0;
    }
    w->rate[k].n++;
    if (now > w->last_ask)
        w->last_ask = now;
}

/* A principal new to the table takes a place only while every principal there keeps its
 * reserve: a flood of principals is refused here, and evicts nobody. */
static bool room_for_principal(const struct asks *a)
{
    return a->nwho < ASKS_PRINCIPALS && a->claimed + ASKS_RESERVED <= ASKS_MAX;
}

/* A principal's next question fits in its reserve, or in what no principal holds. */
static bool room_for_question(const struct asks *a, const struct who *w)
{
    return w->open < ASKS_RESERVED || a->claimed < ASKS_MAX;
}

static int32_t admit(struct asks *a, const uint8_t id[16])
{
    int32_t i = a->free_w;
    struct who *w = &a->w[i];
    a->free_w = w->next;
    memset(w, 0, sizeof(*w));
    memcpy(w->id, id, 16);
    w->used = true;
    int32_t *head = &a->who_head[bucket(id, WHO_BUCKETS)];
    w->next = *head;
    *head = i;
    a->nwho++;
    a->claimed += ASKS_RESERVED;
    return i;
}

/* ===== the interface ===== */

/* What a question is found by, hashed once per call: the hashes were most of what the table
 * cost (SHA-256 of the principal, and of principal, tool and digest). */
struct asks_key {
    uint8_t who[16], what[16];
};

static void key_of(const struct asks *a, struct sl_str principal, struct sl_str tool,
                   const uint8_t digest[32], struct asks_key *k)
{
    hash_who(a, principal, k->who);
    hash_what(a, principal, tool, digest, k->what);
}

static enum asks_status check_key(struct asks *a, const struct asks_key *k, uint64_t now,
                                  unsigned max_open, unsigned per_minute,
                                  struct sl_str *question)
{
    sweep(a, now);
    int32_t wi = find_who(a, k->who);
    if (wi == NIL) /* nothing open, nothing asked within the minute */
        return max_open == 0 ? ASKS_OPEN : per_minute == 0 ? ASKS_RATE
               : room_for_principal(a) ? ASKS_OK : ASKS_PRINCIPALS_FULL;
    int32_t ei = find_what(a, k->what);
    if (ei != NIL) { /* open: the sweep of this second dropped the expired */
        *question = (struct sl_str){ a->e[ei].question, a->e[ei].qlen };
        return ASKS_SAME;
    }
    const struct who *w = &a->w[wi];
    if (w->open >= max_open)
        return ASKS_OPEN;
    if (recent(w, now) >= per_minute)
        return ASKS_RATE;
    return room_for_question(a, w) ? ASKS_OK : ASKS_FULL;
}

static void record_key(struct asks *a, const struct asks_key *k, const uint8_t nonce[16],
                       uint64_t now, uint64_t exp, struct sl_str question)
{
    sweep(a, now);
    int32_t wi = find_who(a, k->who);
    if (wi == NIL) {
        if (!room_for_principal(a))
            return; /* asks_check said no first; nothing to record */
        wi = admit(a, k->who);
    }
    struct who *w = &a->w[wi];
    count_ask(w, now);
    if (!room_for_question(a, w))
        return;
    int32_t i = a->free_e; /* there is one: open questions <= claimed <= ASKS_MAX */
    struct ask *e = &a->e[i];
    a->free_e = e->next_what;
    memcpy(e->what, k->what, 16);
    memcpy(e->nonce, nonce, 16);
    e->exp = exp;
    e->question = sl_xstrndup(question.p, question.len);
    e->qlen = question.len;
    e->who = wi;
    if (w->open++ >= ASKS_RESERVED)
        a->claimed++;
    int32_t *head = &a->what_head[bucket(e->what, BUCKETS)];
    e->next_what = *head;
    *head = i;
    head = &a->nonce_head[bucket(nonce, BUCKETS)];
    e->next_nonce = *head;
    *head = i;
}

enum asks_status asks_check(struct asks *a, struct sl_str principal, struct sl_str tool,
                            const uint8_t digest[32], uint64_t now, unsigned max_open,
                            unsigned per_minute, struct sl_str *question)
{
    struct asks_key k;
    key_of(a, principal, tool, digest, &k);
    return check_key(a, &k, now, max_open, per_minute, question);
}

void asks_record(struct asks *a, struct sl_str principal, struct sl_str tool,
                 const uint8_t digest[32], const uint8_t nonce[16], uint64_t now, uint64_t exp,
                 struct sl_str question)
{
    struct asks_key k;
    key_of(a, principal, tool, digest, &k);
    record_key(a, &k, nonce, now, exp, question);
}

enum asks_status asks_ask(struct asks *a, struct sl_str principal, struct sl_str tool,
                          const uint8_t digest[32], const uint8_t nonce[16], uint64_t now,
                          uint64_t exp, unsigned max_open, unsigned per_minute,
                          struct sl_str question, struct sl_str *same)
{
    struct asks_key k;
    key_of(a, principal, tool, digest, &k);
    enum asks_status as = check_key(a, &k, now, max_open, per_minute, same);
    if (as == ASKS_OK)
        record_key(a, &k, nonce, now, exp, question);
    return as;
}

void asks_withdrawn(struct asks *a, struct sl_str principal, struct sl_str tool,
                    const uint8_t digest[32])
{
    uint8_t what[16];
    hash_what(a, principal, tool, digest, what);
    int32_t i = find_what(a, what);
    if (i != NIL)
        drop(a, i);
}

void asks_answered(struct asks *a, const uint8_t nonce[16])
{
    int32_t i = find_nonce(a, nonce);
    if (i != NIL)
        drop(a, i);
}
