/* shares.c: bytes and pieces held per principal, each piece until its expiry (shares.h).
 *
 * The principals are in a hash table chained by a keyed hash (SipHash under a random key: a
 * principal is the client's own text, so it must not be able to choose collisions), grown to
 * keep about one principal a bucket. The pieces are a binary min-heap on their expiry: every
 * piece is pushed once and popped once, O(log n) each, and whatever expired goes before any
 * question about what a principal holds. */
#include "shares.h"

#include <stdlib.h>
#include <string.h>

#include "asks.h"
#include "seal.h"

struct owner {
    struct owner *next;  /* its bucket's chain */
    uint64_t hash;
    size_t bytes;        /* held now: the sum of its pieces' */
    size_t pieces;       /* in the heap; the owner goes with its last */
    size_t len;
    char name[];
};

struct piece {
    uint64_t exp;
    struct owner *o;
    size_t bytes;
};

struct shares {
    size_t cap;
    size_t max_pieces;   /* a principal's, at once */
    uint8_t key[16];
    struct owner **buckets;
    size_t nbuckets;     /* a power of two */
    size_t nowners;
    struct piece *heap;
    size_t n, alloc;
};

#define SHARES_BUCKETS_MIN 64

struct shares *shares_new(size_t cap, size_t max_pieces)
{
    struct shares *sh = sl_xcalloc(1, sizeof(*sh));
    if (seal_random_nonce(sh->key) != 0) {
        free(sh);
        return NULL;
    }
    sh->cap = cap;
    sh->max_pieces = max_pieces;
    sh->nbuckets = SHARES_BUCKETS_MIN;
    sh->buckets = sl_xcalloc(sh->nbuckets, sizeof(*sh->buckets));
    return sh;
}

void shares_free(struct shares *sh)
{
    if (sh == NULL)
        return;
    for (size_t i = 0; i < sh->nbuckets; i++) {
        struct owner *o = sh->buckets[i], *next;
        for (; o; o = next) {
            next = o->next;
            free(o);
        }
    }
    free(sh->buckets);
    free(sh->heap);
    free(sh);
}

static uint64_t hash_of(const struct shares *sh, struct sl_str principal)
{
    return asks_siphash(sh->key, principal.p ? principal.p : "", principal.len);
}

static struct owner *find(const struct shares *sh, struct sl_str principal, uint64_t h)
{
    for (struct owner *o = sh->buckets[h & (sh->nbuckets - 1)]; o; o = o->next)
        if (o->hash == h && o->len == principal.len &&
            (o->len == 0 || memcmp(o->name, principal.p, o->len) == 0))
            return o;
    return NULL;
}

static void grow(struct shares *sh)
{
    size_t nb = sh->nbuckets * 2;
    struct owner **b = sl_xcalloc(nb, sizeof(*b));
    for (size_t i = 0; i < sh->nbuckets; i++) {
        struct owner *o = sh->buckets[i], *next;
        for (; o; o = next) {
            next = o->next;
            o->next = b[o->hash & (nb - 1)];
            b[o->hash & (nb - 1)] = o;
        }
    }
    free(sh->buckets);
    sh->buckets = b;
    sh->nbuckets = nb;
}

static void owner_drop(struct shares *sh, struct owner *gone)
{
    struct owner **pp = &sh->buckets[gone->hash & (sh->nbuckets - 1)];
    while (*pp != gone)
        pp = &(*pp)->next;
    *pp = gone->next;
    sh->nowners--;
    free(gone);
}

static void heap_swap(struct shares *sh, size_t i, size_t j)
{
    struct piece t = sh->heap[i];
    sh->heap[i] = sh->heap[j];
    sh->heap[j] = t;
}

static void heap_push(struct shares *sh, struct piece p)
{
    if (sh->n == sh->alloc) {
        sh->alloc = sh->alloc ? sh->alloc * 2 : 64;
        sh->heap = sl_xrealloc(sh->heap, sh->alloc * sizeof(*sh->heap));
    }
    size_t i = sh->n++;
    sh->heap[i] = p;
    while (i > 0 && sh->heap[(i - 1) / 2].exp > sh->heap[i].exp) {
        heap_swap(sh, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_pop(struct shares *sh)
{
    sh->heap[0] = sh->heap[--sh->n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < sh->n && sh->heap[l].exp < sh->heap[m].exp)
            m = l;
        if (r < sh->n && sh->heap[r].exp < sh->heap[m].exp)
            m = r;
        if (m == i)
            return;
        heap_swap(sh, i, m);
        i = m;
    }
}

/* Gives back every piece expired by now: its owner holds its bytes no more. */
static void expire(struct shares *sh, uint64_t now)
{
    while (sh->n > 0 && sh->heap[0].exp <= now) {
        struct piece p = sh->heap[0];
        heap_pop(sh);
        p.o->bytes -= p.bytes;
        if (--p.o->pieces == 0)
            owner_drop(sh, p.o);
    }
}

/* principal's owner at now (what expired by now given back first), or NULL: it holds nothing. */
static const struct owner *owner_at(struct shares *sh, struct sl_str principal, uint64_t now)
{
    expire(sh, now);
    return find(sh, principal, hash_of(sh, principal));
}

size_t shares_held(struct shares *sh, struct sl_str principal, uint64_t now)
{
    const struct owner *o = owner_at(sh, principal, now);
    return o ? o->bytes : 0;
}

/* Pieces count as bytes do: many small ones would fill the entries of the table that keeps them,
 * which are everyone's too. */
bool shares_fits(struct shares *sh, struct sl_str principal, size_t bytes, uint64_t now)
{
    const struct owner *o = owner_at(sh, principal, now);
    size_t held = o ? o->bytes : 0, pieces = o ? o->pieces : 0;
    return bytes <= sh->cap && held <= sh->cap - bytes && pieces < sh->max_pieces;
}

void shares_take(struct shares *sh, struct sl_str principal, size_t bytes, uint64_t exp,
                 uint64_t now)
{
    if (SL_CHECK(exp > now)) /* it would be given back before anyone asked */
        return;
    uint64_t h = hash_of(sh, principal);
    struct owner *o = find(sh, principal, h);
    if (o == NULL) {
        if (sh->nowners >= sh->nbuckets)
            grow(sh);
        o = sl_xcalloc(1, sizeof(*o) + principal.len);
        o->hash = h;
        o->len = principal.len;
        if (principal.len)
            memcpy(o->name, principal.p, principal.len);
        o->next = sh->buckets[h & (sh->nbuckets - 1)];
        sh->buckets[h & (sh->nbuckets - 1)] = o;
        sh->nowners++;
    }
    o->bytes += bytes;
    o->pieces++;
    heap_push(sh, (struct piece){ .exp = exp, .o = o, .bytes = bytes });
}
