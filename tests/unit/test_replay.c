/* test_replay.c: the in-memory replay store (proxy/replay.c).
 *
 * Besides the cases by name, a differential test drives the store and a naive model (a plain
 * array, scanned in full) with the same random operations and requires the same answer every
 * time, over table sizes small enough that probes collide, sweeps run and entries shift. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "sl_test.h"

static void nonce_of(uint8_t n[REPLAY_NONCE_LEN], uint32_t i)
{
    memset(n, 0, REPLAY_NONCE_LEN);
    memcpy(n, &i, sizeof(i));
    n[15] = 0x5a;
}

/* xorshift64: reproducible "random" for the bulk tests */
static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_fresh_then_seen(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(10, 1024);
    uint8_t a[REPLAY_NONCE_LEN], b[REPLAY_NONCE_LEN];
    nonce_of(a, 1);
    nonce_of(b, 2);
    assert_int_equal(replay_record(r, a, 200, 100), REPLAY_FRESH);
    assert_int_equal(replay_record(r, a, 200, 100), REPLAY_SEEN);
    assert_int_equal(replay_record(r, a, 300, 150), REPLAY_SEEN); /* a later exp does not reset */
    assert_int_equal(replay_record(r, b, 200, 100), REPLAY_FRESH);
    assert_int_equal(replay_record(r, b, 200, 199), REPLAY_SEEN);
    replay_free(r);
}

/* Nonces differing in one byte are different nonces. */
static void test_every_byte_counts(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(64, 1024);
    uint8_t n[REPLAY_NONCE_LEN];
    nonce_of(n, 7);
    assert_int_equal(replay_record(r, n, 10, 0), REPLAY_FRESH);
    for (int i = 0; i < REPLAY_NONCE_LEN; i++) {
        n[i] ^= 0x01;
        assert_int_equal(replay_record(r, n, 10, 0), REPLAY_FRESH);
        n[i] ^= 0x01;
    }
    assert_int_equal(replay_record(r, n, 10, 0), REPLAY_SEEN);
    replay_free(r);
}

static void test_expiry_frees(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(1, 1024);
    uint8_t a[REPLAY_NONCE_LEN], b[REPLAY_NONCE_LEN];
    nonce_of(a, 1);
    nonce_of(b, 2);
    assert_int_equal(replay_record(r, a, 100, 50), REPLAY_FRESH);
    assert_int_equal(replay_record(r, b, 100, 99), REPLAY_ERROR);   /* full, a still live */
    assert_int_equal(replay_record(r, a, 100, 99), REPLAY_SEEN);
    assert_int_equal(replay_record(r, b, 200, 100), REPLAY_FRESH);  /* exp <= now: a dropped */
    assert_int_equal(replay_record(r, a, 300, 250), REPLAY_FRESH);  /* b expired at 200 */
    replay_free(r);
}

/* Full of live nonces: refuse new ones (fail closed), never forget old ones. */
static void test_full_fails_closed(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(3, 1024);
    uint8_t n[REPLAY_NONCE_LEN];
    for (uint32_t i = 0; i < 3; i++) {
        nonce_of(n, i);
        assert_int_equal(replay_record(r, n, 10 + 10 * i, 0), REPLAY_FRESH);
    }
    nonce_of(n, 99);
    assert_int_equal(replay_record(r, n, 100, 0), REPLAY_ERROR);
    assert_int_equal(replay_record(r, n, 100, 9), REPLAY_ERROR);
    for (uint32_t i = 0; i < 3; i++) {
        uint8_t old[REPLAY_NONCE_LEN];
        nonce_of(old, i);
        assert_int_equal(replay_record(r, old, 100, 9), REPLAY_SEEN);
    }
    /* at 15 only the first (exp 10) has expired: one place frees, then full again */
    assert_int_equal(replay_record(r, n, 100, 15), REPLAY_FRESH);
    nonce_of(n, 98);
    assert_int_equal(replay_record(r, n, 100, 15), REPLAY_ERROR);
    assert_int_equal(replay_record(r, n, 100, 30), REPLAY_FRESH); /* exp 20 and 30 gone */
    replay_free(r);
}

static void test_zero_capacity(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(0, 1024);
    uint8_t n[REPLAY_NONCE_LEN];
    nonce_of(n, 1);
    assert_non_null(r);
    assert_int_equal(replay_record(r, n, 10, 0), REPLAY_ERROR);
    replay_free(r);
}

/* A state already expired cannot be held until its expiry, so it is refused rather than
 * recorded and forgotten at once. */
static void test_expired_record_refused(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(4, 1024);
    uint8_t n[REPLAY_NONCE_LEN];
    nonce_of(n, 1);
    assert_int_equal(replay_record(r, n, 100, 100), REPLAY_ERROR);
    assert_int_equal(replay_record(r, n, 100, 101), REPLAY_ERROR);
    assert_int_equal(replay_record(r, n, 0, 0), REPLAY_ERROR);
    assert_int_equal(replay_record(r, n, 101, 100), REPLAY_FRESH);
    assert_int_equal(replay_record(r, n, 101, 101), REPLAY_ERROR); /* checked before SEEN */
    nonce_of(n, 2);
    assert_int_equal(replay_record(r, n, UINT64_MAX, UINT64_MAX - 1), REPLAY_FRESH);
    assert_int_equal(replay_record(r, n, UINT64_MAX, UINT64_MAX - 1), REPLAY_SEEN);
    replay_free(r);
}

static void test_null_safety(void **state)
{
    (void)state;
    uint8_t n[REPLAY_NONCE_LEN] = { 0 };
    replay_free(NULL);
    assert_int_equal(replay_record(NULL, n, 10, 0), REPLAY_ERROR); /* logs an internal check */
    assert_null(replay_memory_new(SIZE_MAX, 1024));
    assert_null(replay_memory_new(SIZE_MAX / 2, 1024));
}

/* Many random nonces: all fresh, then all seen, then the store is full. */
static void test_many(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct replay *r = replay_memory_new(N, 1024);
    uint8_t (*n)[REPLAY_NONCE_LEN] = sl_xcalloc(N, REPLAY_NONCE_LEN);
    uint64_t s = 0x1234567887654321u;
    for (size_t i = 0; i < N; i++) {
        uint64_t a = rng(&s), b = rng(&s);
        memcpy(n[i], &a, 8);
        memcpy(n[i] + 8, &b, 8);
        assert_int_equal(replay_record(r, n[i], 1000 + i % 50, 0), REPLAY_FRESH);
    }
    for (size_t i = 0; i < N; i++)
        assert_int_equal(replay_record(r, n[i], 2000, 999), REPLAY_SEEN);
    uint8_t extra[REPLAY_NONCE_LEN] = { 1, 2, 3 };
    assert_int_equal(replay_record(r, extra, 2000, 999), REPLAY_ERROR);
    /* at 1025 the entries with exp 1000..1025 (26 of every 50) have gone */
    size_t fresh = 0;
    for (size_t i = 0; i < N; i++) {
        enum replay_status st = replay_record(r, n[i], 3000, 1025);
        assert_int_equal(st, i % 50 <= 25 ? REPLAY_FRESH : REPLAY_SEEN);
        fresh += st == REPLAY_FRESH;
    }
    assert_int_equal(fresh, N / 50 * 26);
    free(n);
    replay_free(r);
}

/* ===== differential test against a naive model ===== */

struct model {
    struct { uint8_t nonce[REPLAY_NONCE_LEN]; uint64_t exp; } *e;
    size_t n, max;
};

/* The contract, written as plainly as possible: ERROR if exp <= now (a state already expired);
 * else SEEN iff the nonce is held and unexpired; else ERROR if max_entries unexpired nonces are
 * held; else FRESH. */
static enum replay_status model_record(struct model *m, const uint8_t *nonce, uint64_t exp,
                                       uint64_t now)
{
    if (exp <= now)
        return REPLAY_ERROR;
    size_t live = 0, at = SIZE_MAX;
    for (size_t i = 0; i < m->n; i++) {
        if (m->e[i].exp <= now)
            continue;
        live++;
        if (memcmp(m->e[i].nonce, nonce, REPLAY_NONCE_LEN) == 0)
            at = i;
    }
    if (at != SIZE_MAX)
        return REPLAY_SEEN;
    if (live >= m->max)
        return REPLAY_ERROR;
    memcpy(m->e[m->n].nonce, nonce, REPLAY_NONCE_LEN);
    m->e[m->n++].exp = exp;
    return REPLAY_FRESH;
}

static void differential(size_t max, size_t pool, size_t ops, uint64_t seed)
{
    struct replay *r = replay_memory_new(max, 1024);
    struct model m = { sl_xcalloc(ops + 1, sizeof(*m.e)), 0, max };
    uint64_t now = 1000, s = seed;
    for (size_t op = 0; op < ops; op++) {
        if (rng(&s) % 4 == 0)
            now += rng(&s) % 5;              /* the clock only moves forward */
        if (rng(&s) % 64 == 0)
            now += rng(&s) % 40;             /* and sometimes leaps: many expire at once */
        uint8_t nonce[REPLAY_NONCE_LEN];
        nonce_of(nonce, (uint32_t)(rng(&s) % pool));
        /* few distinct lifetimes, so that runs of entries expire together; sometimes exp == now,
         * which is refused */
        static const uint64_t ttl[] = { 0, 1, 2, 3, 10, 30 };
        uint64_t exp = now + ttl[rng(&s) % SL_ARRAY_LEN(ttl)];
        enum replay_status want = model_record(&m, nonce, exp, now);
        enum replay_status got = replay_record(r, nonce, exp, now);
        if (got != want)
            fail_msg("max %zu seed %llu op %zu: got %d, model says %d", max,
                     (unsigned long long)seed, op, got, want);
    }
    free(m.e);
    replay_free(r);
}

static void test_differential(void **state)
{
    (void)state;
    static const struct { size_t max, pool, ops; } rows[] = {
        { 1, 4, 3000 },
        { 2, 6, 3000 },
        { 3, 8, 3000 },
        { 7, 20, 5000 },
        { 16, 64, 5000 },
        { 64, 400, 8000 },
        { 500, 2000, 8000 },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        for (uint64_t seed = 1; seed <= 5; seed++)
            differential(rows[i].max, rows[i].pool, rows[i].ops, seed * 0x9E3779B97F4A7C15u);
}

/* Notes: what became of a nonce (the memory store keeps its records here). A note needs a live
 * entry, the notes of all entries share one bound, and a note goes with its entry. */
static void test_notes(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(4, 10);
    uint8_t a[REPLAY_NONCE_LEN], b[REPLAY_NONCE_LEN], c[REPLAY_NONCE_LEN];
    nonce_of(a, 1);
    nonce_of(b, 2);
    nonce_of(c, 3);
    struct sl_str note;
    assert_int_equal(replay_note(r, a, 100, SL_STR("R")), REPLAY_ERROR); /* no entry yet */
    assert_false(replay_lookup(r, a, 100, &note));
    assert_int_equal(replay_record(r, a, 200, 100), REPLAY_FRESH);
    assert_true(replay_lookup(r, a, 100, &note));
    assert_int_equal(note.len, 0);
    assert_int_equal(replay_note(r, a, 100, SL_STR("Dsix b")), REPLAY_FRESH);
    assert_true(replay_lookup(r, a, 100, &note));
    assert_memory_equal(note.p, "Dsix b", 6);
    assert_int_equal(replay_record(r, b, 200, 100), REPLAY_FRESH);
    /* 6 + 5 > 10: refused, and b keeps no note; replacing a's own note counts only the change */
    assert_int_equal(replay_note(r, b, 100, SL_STR("Dfive")), REPLAY_ERROR);
    assert_int_equal(replay_note(r, b, 100, SL_STR("Dfou")), REPLAY_FRESH);
    assert_int_equal(replay_note(r, a, 100, SL_STR("Dsix b")), REPLAY_FRESH);
    assert_int_equal(replay_note(r, a, 100, SL_STR("Dseven!")), REPLAY_ERROR);
    /* a expires: its note goes with it, and its bytes are free again (the sweep on a full
     * table, or the slot's reuse, drops it) */
    assert_int_equal(replay_record(r, c, 400, 300), REPLAY_FRESH);
    assert_false(replay_lookup(r, a, 300, &note));
    assert_int_equal(replay_record(r, a, 500, 300), REPLAY_FRESH); /* the same nonce, expired */
    assert_true(replay_lookup(r, a, 300, &note));
    assert_int_equal(note.len, 0);
    assert_int_equal(replay_note(r, c, 300, SL_STR("Dsix b")), REPLAY_FRESH);
    replay_free(r);
}

/* A note of up to 8 bytes lives in its slot, a longer one on the heap: each keeps its bytes
 * when it is replaced by one of the other kind, and when a removal moves its entry. */
static void note_bytes_of(char *out, uint32_t i, size_t len)
{
    for (size_t k = 0; k < len; k++)
        out[k] = (char)('a' + (i * 7 + k) % 26);
}

static void check_notes(struct replay *r, uint8_t n[][REPLAY_NONCE_LEN], size_t count,
                        size_t shift)
{
    for (uint32_t i = 0; i < count; i++) {
        struct sl_str note;
        char want[16];
        if (i % 3 == 0) {
            assert_false(replay_lookup(r, n[i], 100, &note));
            continue;
        }
        assert_true(replay_lookup(r, n[i], 100, &note));
        size_t len = (i + shift) % 13;
        note_bytes_of(want, i + (uint32_t)shift, len);
        assert_int_equal(note.len, len);
        if (len)
            assert_memory_equal(note.p, want, len);
    }
}

static void test_notes_inline(void **state)
{
    (void)state;
    enum { N = 48 };
    struct replay *r = replay_memory_new(N, 4096);
    uint8_t n[N][REPLAY_NONCE_LEN];
    for (size_t shift = 0; shift < 2; shift++) {
        for (uint32_t i = 0; i < N; i++) {
            char b[16];
            size_t len = (i + shift) % 13; /* 0 to 12: both sides of 8 */
            nonce_of(n[i], i + 1);
            if (shift == 0)
                assert_int_equal(replay_record(r, n[i], 200, 100), REPLAY_FRESH);
            else if (i % 3 == 0)
                continue;
            note_bytes_of(b, i + (uint32_t)shift, len);
            assert_int_equal(replay_note(r, n[i], 100, (struct sl_str){ b, len }), REPLAY_FRESH);
        }
        for (uint32_t i = 0; shift == 0 && i < N; i += 3) /* moves the entries after them */
            replay_forget(r, n[i], 100);
        check_notes(r, n, N, shift);
    }
    replay_free(r);
}

/* A forgotten entry is gone with its note (store_memory.c drops a page record whose value did not
 * fit): its nonce records fresh again, its note's bytes are free, the other entries stay. */
static void test_forget(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(8, 10);
    uint8_t n[5][REPLAY_NONCE_LEN];
    struct sl_str note;
    for (uint32_t i = 0; i < 5; i++) {
        nonce_of(n[i], i + 1);
        assert_int_equal(replay_record(r, n[i], 200, 100), REPLAY_FRESH);
    }
    assert_int_equal(replay_note(r, n[1], 100, SL_STR("Dnine byt")), REPLAY_FRESH);
    replay_forget(r, n[1], 100);
    assert_false(replay_lookup(r, n[1], 100, &note));
    for (uint32_t i = 0; i < 5; i++)
        if (i != 1)
            assert_true(replay_lookup(r, n[i], 100, &note));
    /* its note's bytes are free again */
    assert_int_equal(replay_note(r, n[0], 100, SL_STR("Dten bytes")), REPLAY_FRESH);
    assert_int_equal(replay_record(r, n[1], 200, 100), REPLAY_FRESH);
    replay_forget(r, n[1], 300); /* expired, or never there: nothing to do */
    uint8_t none[REPLAY_NONCE_LEN];
    nonce_of(none, 99);
    replay_forget(r, none, 100);
    assert_true(replay_lookup(r, n[1], 100, &note));
    replay_free(r);
}

/* Expired notes give their bytes back even in a table far from full by count (the page
 * records': max_entries a million, bytes for a few hundred questions): a note that does not fit
 * sweeps the expired ones first. Live notes still count: no sweep frees those. */
static void test_expired_notes_free_bytes(void **state)
{
    (void)state;
    struct replay *r = replay_memory_new(1000, 10);
    uint8_t n[4][REPLAY_NONCE_LEN];
    for (uint32_t i = 0; i < 4; i++)
        nonce_of(n[i], i + 1);
    assert_int_equal(replay_record(r, n[0], 200, 100), REPLAY_FRESH);
    assert_int_equal(replay_note(r, n[0], 100, SL_STR("Dsix b")), REPLAY_FRESH);
    assert_int_equal(replay_record(r, n[1], 500, 100), REPLAY_FRESH);
    assert_int_equal(replay_note(r, n[1], 100, SL_STR("Dfou")), REPLAY_FRESH);
    /* n[0] expired at 200: its six bytes are free at 300, n[1]'s four are not */
    assert_int_equal(replay_record(r, n[2], 600, 300), REPLAY_FRESH);
    assert_int_equal(replay_note(r, n[2], 300, SL_STR("Dsix b")), REPLAY_FRESH);
    assert_int_equal(replay_record(r, n[3], 600, 300), REPLAY_FRESH);
    assert_int_equal(replay_note(r, n[3], 300, SL_STR("D")), REPLAY_ERROR);
    struct sl_str note;
    assert_true(replay_lookup(r, n[1], 300, &note));
    assert_bytes_equal(note.p, note.len, "Dfou");
    assert_true(replay_lookup(r, n[2], 300, &note));
    assert_bytes_equal(note.p, note.len, "Dsix b");
    replay_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_then_seen),
        cmocka_unit_test(test_every_byte_counts),
        cmocka_unit_test(test_expiry_frees),
        cmocka_unit_test(test_full_fails_closed),
        cmocka_unit_test(test_zero_capacity),
        cmocka_unit_test(test_expired_record_refused),
        cmocka_unit_test(test_null_safety),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_differential),
        cmocka_unit_test(test_notes),
        cmocka_unit_test(test_notes_inline),
        cmocka_unit_test(test_forget),
        cmocka_unit_test(test_expired_notes_free_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
