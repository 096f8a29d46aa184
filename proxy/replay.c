/* replay.c: the memory store's table of spent nonces, with what became of each (store_memory.c
 * wraps it in the store interface; replicas share a Redis store instead).
 *
 * An open-addressing table with linear probing, at most half full, so a record costs O(1) on
 * average. An entry lives until its state's expiry; after that the seal refuses the state
 * anyway, so the slot may be taken again. Expired entries are dropped lazily:
 *   - a probe that meets one may reuse its slot;
 *   - when the table holds max_entries, or a note does not fit in what is left of
 *     max_note_bytes, one sweep drops every expired entry, but only once the clock has reached
 *     the earliest expiry in the table, so a full table of live nonces answers REPLAY_ERROR in
 *     O(1) and sweeps at most once per second of clock.
 * Deletion shifts the following entries back (Knuth 6.4, Algorithm R) instead of leaving
 * tombstones, so probe chains never grow from churn. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

struct slot {
    uint8_t nonce[REPLAY_NONCE_LEN];
    uint64_t exp;   /* 0: empty. A stored exp is > the now it was stored at, so never 0. */
    /* What became of the nonce (replay_note): a note of up to NOTE_INLINE bytes is held in the
     * slot. A spend's mark is one byte, and copying it to the heap and freeing it cost about
     * 500 instructions a gated pair (issue 24). */
    union {
        char *heap;
        char in[sizeof(char *)];
    } note;
    size_t note_len;
};
#define NOTE_INLINE sizeof(((struct slot *)0)->note.in)

static const char *note_of(const struct slot *s)
{
    return s->note_len <= NOTE_INLINE ? s->note.in : s->note.heap;
}

struct memstore {
    struct slot *slots;
    size_t mask;      /* capacity - 1; capacity is a power of two >= 2 * max + 2 */
    size_t used;      /* slots holding an entry, expired or not */
    size_t max;       /* max_entries */
    uint64_t min_exp; /* <= the smallest exp in the table (exact right after a sweep) */
    size_t note_bytes;     /* held by notes now */
    size_t max_note_bytes;
};

/* Drops slot s's note, counted in m's total. */
static void note_drop(struct memstore *m, struct slot *s)
{
    m->note_bytes -= s->note_len;
    if (s->note_len > NOTE_INLINE)
        free(s->note.heap);
    s->note_len = 0;
}

/* Nonces are 16 random bytes from seal_random_nonce, authenticated inside the seal before they
 * get here, so a client cannot choose them to collide. A cheap mix is enough to spread them. */
static size_t slot_home(const struct memstore *m, const uint8_t nonce[REPLAY_NONCE_LEN])
{
    uint64_t a, b;
    memcpy(&a, nonce, 8);
    memcpy(&b, nonce + 8, 8);
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15u)) * 0xBF58476D1CE4E5B9u;
    return (size_t)(h ^ (h >> 31)) & m->mask;
}

static bool slot_live(const struct slot *s, uint64_t now)
{
    return s->exp > now;
}

/* Empties slot i and shifts back the entries after it whose probe path crosses i, so that every
 * entry stays reachable from its home slot without tombstones. */
static void slot_remove(struct memstore *m, size_t i)
{
    note_drop(m, &m->slots[i]);
    size_t j = i;
    for (;;) {
        m->slots[i].exp = 0;
        for (;;) {
            j = (j + 1) & m->mask;
            if (m->slots[j].exp == 0)
                goto done;
            size_t k = slot_home(m, m->slots[j].nonce);
            /* j may move to i unless its home k lies cyclically in (i, j] */
            bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
            if (!stays)
                break;
        }
        m->slots[i] = m->slots[j];
        m->slots[j].note_len = 0; /* its note moved to i */
        i = j;
    }
done:
    m->used--;
}

/* Drops every entry with exp <= now and recomputes min_exp. Walks the table once, starting just
 * after an empty slot so that no cluster wraps around the start of the walk; a removal pulls a
 * later entry into the current slot, which is then looked at again. */
static void sweep(struct memstore *m, uint64_t now)
{
    size_t start = 0;
    while (m->slots[start].exp != 0) /* there is always an empty slot: used <= max < cap / 2 */
        start++;
    uint64_t min = UINT64_MAX;
    for (size_t n = 1; n <= m->mask + 1; n++) {
        size_t i = (start + n) & m->mask;
        while (m->slots[i].exp != 0 && !slot_live(&m->slots[i], now))
            slot_remove(m, i);
        if (m->slots[i].exp != 0 && m->slots[i].exp < min)
            min = m->slots[i].exp;
    }
    m->min_exp = min;
}

/* Finds nonce. Returns the slot holding it (live or expired) in *found, else SIZE_MAX; and in
 * *free_slot the first slot on its path that an insert may take (expired or empty). */
static void probe(const struct memstore *m, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now,
                  size_t *found, size_t *free_slot)
{
    *found = *free_slot = SIZE_MAX;
    for (size_t i = slot_home(m, nonce);; i = (i + 1) & m->mask) {
        const struct slot *s = &m->slots[i];
        if (s->exp == 0) {
            if (*free_slot == SIZE_MAX)
                *free_slot = i;
            return;
        }
        if (memcmp(s->nonce, nonce, REPLAY_NONCE_LEN) == 0) {
            *found = i;
            return;
        }
        if (*free_slot == SIZE_MAX && !slot_live(s, now))
            *free_slot = i;
    }
}

static enum replay_status mem_record(void *self, const uint8_t nonce[REPLAY_NONCE_LEN],
                                     uint64_t exp, uint64_t now)
{
    struct memstore *m = self;
    /* An entry that is expired already would be dropped at once, and a second record would find
     * nothing: at-most-once could not hold, so refuse. (The seal refuses such a state first.) */
    if (exp <= now)
        return REPLAY_ERROR;
    size_t found, slot;
    probe(m, nonce, now, &found, &slot);
    if (found != SIZE_MAX && slot_live(&m->slots[found], now))
        return REPLAY_SEEN;
    if (found != SIZE_MAX || (slot != SIZE_MAX && m->slots[slot].exp != 0)) {
        if (found != SIZE_MAX)
            slot = found;              /* the same nonce, expired: take its place */
        note_drop(m, &m->slots[slot]); /* an expired entry's note goes with it */
    } else if (m->slots[slot].exp == 0 && m->used >= m->max) {
        if (now < m->min_exp)
            return REPLAY_ERROR;       /* full of live nonces: fail closed, forget nothing */
        sweep(m, now);
        if (m->used >= m->max)
            return REPLAY_ERROR;
        probe(m, nonce, now, &found, &slot); /* the sweep moved entries */
    }
    if (m->slots[slot].exp == 0)
        m->used++;
    memcpy(m->slots[slot].nonce, nonce, REPLAY_NONCE_LEN);
    m->slots[slot].exp = exp;
    if (exp < m->min_exp)
        m->min_exp = exp;
    return REPLAY_FRESH;
}

/* The live entry of nonce, or NULL. */
static struct slot *mem_find(struct memstore *m, const uint8_t nonce[REPLAY_NONCE_LEN],
                             uint64_t now)
{
    size_t found, slot;
    probe(m, nonce, now, &found, &slot);
    if (found == SIZE_MAX || !slot_live(&m->slots[found], now))
        return NULL;
    return &m->slots[found];
}

static enum replay_status mem_note(void *self, const uint8_t nonce[REPLAY_NONCE_LEN],
                                   uint64_t now, struct sl_str note)
{
    struct memstore *m = self;
    struct slot *e = mem_find(m, nonce, now);
    if (e == NULL)
        return REPLAY_ERROR;
    if (note.len > m->max_note_bytes - (m->note_bytes - e->note_len) && now >= m->min_exp) {
        /* An expired entry's note holds its bytes until its slot is taken again or a sweep
         * drops it, and a table far from max_entries (the page records': a few hundred
         * questions fill their bytes) is never swept for its count: without this, notes gone
         * by their expiry would refuse every new one long after. At most one sweep per second
         * of clock (it leaves min_exp past now); it moves entries, so nonce is found again. */
        sweep(m, now);
        e = mem_find(m, nonce, now);
    }
    if (note.len > m->max_note_bytes - (m->note_bytes - e->note_len))
        return REPLAY_ERROR; /* the notes of all live entries are bounded together */
    note_drop(m, e);
    char *to = e->note.in;
    if (note.len > NOTE_INLINE)
        to = e->note.heap = sl_xmalloc(note.len);
    if (note.len)
        memcpy(to, note.p, note.len);
    e->note_len = note.len;
    m->note_bytes += note.len;
    return REPLAY_FRESH;
}

static bool mem_lookup(void *self, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now,
                       struct sl_str *note)
{
    struct slot *e = mem_find(self, nonce, now);
    if (e == NULL)
        return false;
    *note = (struct sl_str){ note_of(e), e->note_len };
    return true;
}

static void mem_forget(void *self, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now)
{
    struct memstore *m = self;
    struct slot *e = mem_find(m, nonce, now);
    if (e != NULL)
        slot_remove(m, (size_t)(e - m->slots));
}

static void mem_free(void *self)
{
    struct memstore *m = self;
    for (size_t i = 0; i <= m->mask; i++)
        if (m->slots[i].note_len > NOTE_INLINE)
            free(m->slots[i].note.heap);
    free(m->slots);
    free(m);
}

static const struct replay_ops memory_ops = {
    .record = mem_record,
    .note = mem_note,
    .lookup = mem_lookup,
    .forget = mem_forget,
    .free = mem_free,
};

struct replay *replay_memory_new(size_t max_entries, size_t max_note_bytes)
{
    /* capacity >= 2 * max + 2: at most half full, and always one empty slot to end a probe */
    if (max_entries > (SIZE_MAX / sizeof(struct slot)) / 4)
        return NULL;
    size_t cap = 2;
    while (cap < 2 * max_entries + 2)
        cap *= 2;
    struct memstore *m = sl_xcalloc(1, sizeof(*m));
    m->slots = sl_xcalloc(cap, sizeof(struct slot));
    m->mask = cap - 1;
    m->max = max_entries;
    m->min_exp = UINT64_MAX;
    m->max_note_bytes = max_note_bytes;
    struct replay *r = sl_xcalloc(1, sizeof(*r));
    r->ops = &memory_ops;
    r->self = m;
    return r;
}

enum replay_status replay_record(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN],
                                 uint64_t exp, uint64_t now)
{
    if (SL_CHECK(r != NULL && nonce != NULL))
        return REPLAY_ERROR;
    return r->ops->record(r->self, nonce, exp, now);
}

enum replay_status replay_note(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN],
                               uint64_t now, struct sl_str note)
{
    return r->ops->note(r->self, nonce, now, note);
}

bool replay_lookup(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now,
                   struct sl_str *note)
{
    return r->ops->lookup(r->self, nonce, now, note);
}

void replay_forget(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now)
{
    r->ops->forget(r->self, nonce, now);
}

void replay_free(struct replay *r)
{
    if (r == NULL)
        return;
    r->ops->free(r->self);
    free(r);
}
