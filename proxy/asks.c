/* asks.c: the open questions, in fixed pools with hash chains: a question is found by what was
 * asked (principal, tool, arguments) or by its state's nonce, a principal by its name, without
 * scanning the table. Chains are chosen by SipHash-2-4 keyed with a per-process salt, so a
 * client cannot choose arguments or names that pile into one chain; within a chain, entries are
 * compared exactly (the principal's name; the tool's name and the argument digest), so no two
 * calls share a question by a hash collision. Expired questions and principals that no longer
 * count are swept at most once a second (a walk over the fixed pools). */
#include "asks.h"

#include <stdlib.h>
#include <string.h>

#include "seal.h"

#define NIL (-1)
#define BUCKETS 32768         /* for questions: twice ASKS_MAX, a power of two */
#define WHO_BUCKETS 4096      /* for principals: twice ASKS_PRINCIPALS */
#define WINDOW 60             /* seconds of the per_minute rate */

struct ask {
    uint64_t what;            /* keyed hash of principal, tool and argument digest */
    uint8_t digest[32];       /* the argument digest */
    uint8_t nonce[16];
    uint64_t exp;
    char *tool;               /* the tool's name, then the question in the same allocation */
    size_t tlen;
    char *question;           /* the result JSON sent, for an identical call */
    size_t qlen;
    int32_t who;              /* its principal; NIL while the slot is free */
    int32_t next_what;        /* chain by what; the free list while free */
    int32_t next_nonce;       /* chain by nonce */
};

/* A principal that has a question open or asked one within the last minute. */
struct who {
    uint64_t id;              /* keyed hash of the principal */
    char *name;               /* the principal */
    size_t nlen;
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
    int32_t free_e, free_w;   /* places given back, chained; NIL: none */
    int32_t fresh_e, fresh_w; /* places from here on were never used (and never touched) */
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
    /* e[] and w[] (about 4 MiB) are left as calloc gave them: a place is first taken from past
     * fresh_e / fresh_w, so the memory of places never used is never touched (not resident). */
    a->free_e = a->free_w = NIL;
    a->swept = UINT64_MAX;
    return a;
}

void asks_free(struct asks *a)
{
    if (a == NULL)
        return;
    for (int32_t i = 0; i < a->fresh_e; i++)
        free(a->e[i].tool);
    for (int32_t i = 0; i < a->fresh_w; i++)
        free(a->w[i].name);
    free(a);
}

/* ===== hashing ===== */

/* SipHash-2-4 (Aumasson and Bernstein, 2012) of p[0..len) under the 128-bit key k: a keyed
 * hash made for hash tables fed by an adversary, at a tenth of a SHA-256's cost here. */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                     \
    do {                                                                             \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                    \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                       \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                       \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                    \
    } while (0)

/* One load where the machine is little-endian (the byte loop cost about 230 instructions a
 * question; issue 24), the bytes one by one elsewhere. */
static uint64_t le64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
#endif
}

uint64_t asks_siphash(const uint8_t k[16], const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t k0 = le64(k), k1 = le64(k + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t m = le64(p + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t last = (uint64_t)len << 56;
    for (size_t j = 0; i + j < len; j++)
        last |= (uint64_t)p[i + j] << (8 * j);
    v3 ^= last;
    SIPROUND;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t hash_who(const struct asks *a, struct sl_str principal)
{
    return asks_siphash(a->salt, principal.p ? principal.p : "", principal.len);
}

/* Of the principal's hash, the digest and the tool: the tool comes last, so the fixed-length
 * parts before it keep every input distinct. Built on the stack (the heap only for a tool name
 * of hundreds of bytes). */
static uint64_t hash_what(const struct asks *a, uint64_t who, struct sl_str tool,
                          const uint8_t digest[32])
{
    char room[256];
    struct sl_buf b;
    sl_buf_on(&b, room, sizeof(room));
    sl_buf_put(&b, &who, sizeof(who));
    sl_buf_put(&b, digest, 32);
    sl_buf_put(&b, tool.p, tool.len);
    uint64_t h = asks_siphash(a->salt, b.p, b.len);
    sl_buf_free(&b);
    return h;
}

/* Keyed hashes and random nonces: their low bits are already evenly spread. */
static uint32_t bucket(uint64_t h, uint32_t n)
{
    return (uint32_t)h & (n - 1);
}

static uint32_t nonce_bucket(const uint8_t nonce[16])
{
    uint32_t v;
    memcpy(&v, nonce, sizeof(v));
    return v & (BUCKETS - 1);
}

/* ===== the pools ===== */

static int32_t find_who(const struct asks *a, uint64_t id, struct sl_str principal)
{
    for (int32_t i = a->who_head[bucket(id, WHO_BUCKETS)]; i != NIL; i = a->w[i].next) {
        const struct who *w = &a->w[i];
        if (w->id == id && w->nlen == principal.len &&
            (principal.len == 0 || memcmp(w->name, principal.p, principal.len) == 0))
            return i;
    }
    return NIL;
}

/* The open question of principal wi about this tool and digest, or NIL. */
static int32_t find_what(const struct asks *a, uint64_t what, int32_t wi, struct sl_str tool,
                         const uint8_t digest[32])
{
    for (int32_t i = a->what_head[bucket(what, BUCKETS)]; i != NIL; i = a->e[i].next_what) {
        const struct ask *e = &a->e[i];
        if (e->what == what && e->who == wi && e->tlen == tool.len &&
            (tool.len == 0 || memcmp(e->tool, tool.p, tool.len) == 0) &&
            memcmp(e->digest, digest, 32) == 0)
            return i;
    }
    return NIL;
}

static int32_t find_nonce(const struct asks *a, const uint8_t nonce[16])
{
    for (int32_t i = a->nonce_head[nonce_bucket(nonce)]; i != NIL; i = a->e[i].next_nonce)
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
    pp = &a->nonce_head[nonce_bucket(e->nonce)];
    while (*pp != i)
        pp = &a->e[*pp].next_nonce;
    *pp = e->next_nonce;
    struct who *w = &a->w[e->who];
    if (w->open-- > ASKS_RESERVED)
        a->claimed--; /* a place from the shared pool */
    free(e->tool);
    e->tool = e->question = NULL;
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
    free(w->name);
    w->name = NULL;
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
    for (int32_t i = 0; i < a->fresh_e; i++)
        if (a->e[i].who != NIL && now >= a->e[i].exp)
            drop(a, i);
    for (int32_t i = 0; i < a->fresh_w; i++)
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

/* A free place for a question (the caller made sure there is one): one given back, else one
 * never used. */
static int32_t take_place(struct asks *a)
{
    int32_t i = a->free_e;
    if (i != NIL) {
        a->free_e = a->e[i].next_what;
        return i;
    }
    SL_REQUIRE(a->fresh_e < ASKS_MAX);
    return a->fresh_e++;
}

/* The same for a principal. */
static int32_t take_who(struct asks *a)
{
    int32_t i = a->free_w;
    if (i != NIL) {
        a->free_w = a->w[i].next;
        return i;
    }
    SL_REQUIRE(a->fresh_w < ASKS_PRINCIPALS);
    return a->fresh_w++;
}

static int32_t admit(struct asks *a, uint64_t id, struct sl_str principal)
{
    int32_t i = take_who(a);
    struct who *w = &a->w[i];
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->name = sl_xstrndup(principal.p ? principal.p : "", principal.len);
    w->nlen = principal.len;
    w->used = true;
    int32_t *head = &a->who_head[bucket(id, WHO_BUCKETS)];
    w->next = *head;
    *head = i;
    a->nwho++;
    a->claimed += ASKS_RESERVED;
    return i;
}

/* ===== the interface ===== */

/* What a question is found by, hashed once per call. */
struct asks_key {
    struct sl_str principal, tool;
    const uint8_t *digest;
    uint64_t who, what;
};

static void key_of(const struct asks *a, struct sl_str principal, struct sl_str tool,
                   const uint8_t digest[32], struct asks_key *k)
{
    k->principal = principal;
    k->tool = tool;
    k->digest = digest;
    k->who = hash_who(a, principal);
    k->what = hash_what(a, k->who, tool, digest);
}

static enum asks_status check_key(struct asks *a, const struct asks_key *k, uint64_t now,
                                  unsigned max_open, unsigned per_minute,
                                  struct sl_str *question)
{
    sweep(a, now);
    int32_t wi = find_who(a, k->who, k->principal);
    if (wi == NIL) /* nothing open, nothing asked within the minute */
        return max_open == 0 ? ASKS_OPEN : per_minute == 0 ? ASKS_RATE
               : room_for_principal(a) ? ASKS_OK : ASKS_PRINCIPALS_FULL;
    int32_t ei = find_what(a, k->what, wi, k->tool, k->digest);
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
    int32_t wi = find_who(a, k->who, k->principal);
    if (wi == NIL) {
        if (!room_for_principal(a))
            return; /* asks_check said no first; nothing to record */
        wi = admit(a, k->who, k->principal);
    }
    struct who *w = &a->w[wi];
    count_ask(w, now);
    if (!room_for_question(a, w))
        return;
    int32_t i = take_place(a); /* there is one: open questions <= claimed <= ASKS_MAX */
    struct ask *e = &a->e[i];
    e->what = k->what;
    memcpy(e->digest, k->digest, 32);
    memcpy(e->nonce, nonce, 16);
    e->exp = exp;
    e->tool = sl_xmalloc(k->tool.len + question.len + 1);
    if (k->tool.len)
        memcpy(e->tool, k->tool.p, k->tool.len);
    e->tlen = k->tool.len;
    e->question = e->tool + k->tool.len;
    if (question.len)
        memcpy(e->question, question.p, question.len);
    e->question[question.len] = '\0';
    e->qlen = question.len;
    e->who = wi;
    if (w->open++ >= ASKS_RESERVED)
        a->claimed++;
    int32_t *head = &a->what_head[bucket(e->what, BUCKETS)];
    e->next_what = *head;
    *head = i;
    head = &a->nonce_head[nonce_bucket(nonce)];
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
    struct asks_key k;
    key_of(a, principal, tool, digest, &k);
    int32_t wi = find_who(a, k.who, principal);
    int32_t i = wi == NIL ? NIL : find_what(a, k.what, wi, tool, digest);
    if (i != NIL)
        drop(a, i);
}

void asks_answered(struct asks *a, const uint8_t nonce[16])
{
    int32_t i = find_nonce(a, nonce);
    if (i != NIL)
        drop(a, i);
}
