/* test_store_memory.c: the memory store's approval page records (proxy/store_memory.c) when
 * their budget is spent. A record and its value are written together or not at all, so a
 * refused question leaves no empty page behind and a refused decision can be made again; a
 * full budget is not an unreachable store; and one principal's questions hold at most their
 * share of the budget and of the table's entries (STORE_PAGE_SHARE), whatever the others do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "store.h"
#include "sl_test.h"

#define BUDGET 256 /* bytes of values per kind of record */
#define SHARE (BUDGET / STORE_PAGE_SHARE) /* of it, one principal's questions' */
#define ENTRIES 64 /* records per kind */
#define SHARE_ENTRIES (ENTRIES / STORE_PAGE_SHARE) /* of them, one principal's questions' */

static char too_big[BUDGET + 1]; /* 'q's: setup */

struct fixture {
    struct event_base *base;
    struct store *st;
};

struct answer {
    bool got;
    enum store_status status;
    char body[BUDGET * 2];
    size_t body_len;
};

static int setup(void **state)
{
    static struct fixture f;
    char err[200];
    struct store_opts o = { .url = "memory", .prefix = "t:", .timeout_ms = 1000,
                            .retention_s = 60, .max_result = BUDGET, .max_total = BUDGET,
                            .max_entries = ENTRIES };
    memset(too_big, 'q', sizeof(too_big));
    f.base = event_base_new();
    f.st = store_open(f.base, &o, err, sizeof(err));
    if (f.st == NULL)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    store_free(f->st);
    event_base_free(f->base);
    return 0;
}

static void on_answer(void *arg, enum store_status st, const struct store_record *rec)
{
    struct answer *a = arg;
    a->got = true;
    a->status = st;
    a->body_len = rec && rec->body.len <= sizeof(a->body) ? rec->body.len : 0;
    if (a->body_len)
        memcpy(a->body, rec->body.p, a->body_len);
}

/* The store delivers even an answer given at once from the event loop. */
static void wait_answer(struct fixture *f, struct answer *a)
{
    for (int i = 0; i < 100 && !a->got; i++)
        event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    assert_true(a->got);
}

static enum store_status get(struct fixture *f, enum store_page_kind kind, const uint8_t *id,
                             struct answer *a)
{
    *a = (struct answer){ 0 };
    store_page_get(f->st, kind, id, on_answer, a);
    wait_answer(f, a);
    return a->status;
}

/* store_page_question, waited for: its answer. */
static enum store_status question(struct fixture *f, struct sl_str principal, const uint8_t *id,
                                  uint64_t exp, struct sl_str value)
{
    struct answer a = { 0 };
    store_page_question(f->st, principal, id, exp, value, on_answer, &a);
    wait_answer(f, &a);
    return a.status;
}

static enum store_status decide(struct fixture *f, const uint8_t *id, uint64_t exp,
                                struct sl_str value, struct answer *a)
{
    *a = (struct answer){ 0 };
    store_page_decide(f->st, id, exp, value, on_answer, a);
    wait_answer(f, a);
    return a->status;
}

/* A question that does not fit is refused at once, leaves no record (the page says there is no
 * such approval, not that its record is unreadable), and leaves the store up. */
static void test_question_over_budget(void **state)
{
    struct fixture *f = *state;
    uint8_t id[STORE_NONCE_LEN] = { 1 }, small[STORE_NONCE_LEN] = { 2 };
    uint64_t exp = (uint64_t)time(NULL) + 60;
    struct answer a;
    assert_int_equal(question(f, SL_STR("p0"), small, exp, SL_STR("a question")), STORE_FRESH);
    /* everyone else's questions, each within its share, fill the budget */
    size_t held = strlen("a question");
    for (uint8_t i = 1; held + SHARE <= BUDGET; i++, held += SHARE) {
        uint8_t other[STORE_NONCE_LEN] = { 100, i };
        char who[8];
        snprintf(who, sizeof(who), "p%u", i);
        assert_int_equal(question(f, sl_str_c(who), other, exp, (struct sl_str){ too_big, SHARE }),
                         STORE_FRESH);
    }
    assert_int_equal(question(f, SL_STR("late"), id, exp,
                              (struct sl_str){ too_big, BUDGET - held + 1 }),
                     STORE_ERROR);
    assert_int_equal(get(f, STORE_PAGE_QUESTION, id, &a), STORE_ABSENT);
    assert_int_equal(get(f, STORE_PAGE_QUESTION, small, &a), STORE_FOUND);
    assert_bytes_equal(a.body, a.body_len, "a question");
    assert_true(store_is_up(f->st));
    assert_int_equal(store_errors(f->st), 1);
    /* nothing of the refused one is left: the same id takes a question that fits */
    assert_int_equal(question(f, SL_STR("late"), id, exp,
                              (struct sl_str){ too_big, BUDGET - held }),
                     STORE_FRESH);
    assert_int_equal(get(f, STORE_PAGE_QUESTION, id, &a), STORE_FOUND);
    assert_int_equal(a.body_len, BUDGET - held);
}

/* One principal's questions fill its share and no more: its next is refused as over its share
 * (no record, no store error: the store is fine), while another principal's question is kept. */
static void test_question_over_share(void **state)
{
    (void)state;
    struct fixture g;
    char err[200];
    struct store_opts o = { .url = "memory", .prefix = "t:", .timeout_ms = 1000,
                            .retention_s = 60, .max_result = BUDGET, .max_total = BUDGET,
                            .max_entries = ENTRIES };
    g.base = event_base_new();
    g.st = store_open(g.base, &o, err, sizeof(err));
    assert_non_null(g.st);
    uint64_t exp = (uint64_t)time(NULL) + 60;
    uint8_t a1[STORE_NONCE_LEN] = { 1 }, a2[STORE_NONCE_LEN] = { 2 }, a3[STORE_NONCE_LEN] = { 3 },
            b1[STORE_NONCE_LEN] = { 4 };
    struct answer a;
    assert_int_equal(question(&g, SL_STR("alice"), a1, exp, (struct sl_str){ too_big, SHARE - 1 }),
                     STORE_FRESH);
    assert_int_equal(question(&g, SL_STR("alice"), a2, exp, SL_STR("q")), STORE_FRESH);
    assert_int_equal(question(&g, SL_STR("alice"), a3, exp, SL_STR("q")), STORE_OVER_SHARE);
    assert_int_equal(get(&g, STORE_PAGE_QUESTION, a3, &a), STORE_ABSENT);
    assert_int_equal(question(&g, SL_STR("bob"), b1, exp, (struct sl_str){ too_big, SHARE }),
                     STORE_FRESH);
    assert_int_equal(get(&g, STORE_PAGE_QUESTION, b1, &a), STORE_FOUND);
    /* a principal whose name only starts like alice's is another principal */
    assert_int_equal(question(&g, SL_STR("alice2"), a3, exp, SL_STR("q")), STORE_FRESH);
    /* one larger than a whole share is never kept */
    uint8_t c1[STORE_NONCE_LEN] = { 5 };
    assert_int_equal(question(&g, SL_STR("carol"), c1, exp, (struct sl_str){ too_big, SHARE + 1 }),
                     STORE_OVER_SHARE);
    assert_true(store_is_up(g.st));
    assert_int_equal(store_errors(g.st), 0);
    store_free(g.st);
    event_base_free(g.base);
}

/* One principal's many tiny questions fill its share of the table's entries and no more: its
 * next is refused as over its share, though its bytes are far from theirs, while another
 * principal's question is kept. */
static void test_question_over_entry_share(void **state)
{
    (void)state;
    struct fixture g;
    char err[200];
    struct store_opts o = { .url = "memory", .prefix = "t:", .timeout_ms = 1000,
                            .retention_s = 60, .max_result = BUDGET, .max_total = BUDGET,
                            .max_entries = ENTRIES };
    g.base = event_base_new();
    g.st = store_open(g.base, &o, err, sizeof(err));
    assert_non_null(g.st);
    uint64_t exp = (uint64_t)time(NULL) + 60;
    struct answer a;
    uint8_t i = 0;
    for (; i < SHARE_ENTRIES; i++) {
        uint8_t id[STORE_NONCE_LEN] = { 1, i };
        assert_int_equal(question(&g, SL_STR("alice"), id, exp, SL_STR("q")), STORE_FRESH);
    }
    assert_true(SHARE_ENTRIES < SHARE); /* bytes left: the entries refuse it */
    uint8_t over[STORE_NONCE_LEN] = { 1, i };
    assert_int_equal(question(&g, SL_STR("alice"), over, exp, SL_STR("q")), STORE_OVER_SHARE);
    assert_int_equal(get(&g, STORE_PAGE_QUESTION, over, &a), STORE_ABSENT);
    uint8_t b1[STORE_NONCE_LEN] = { 2 };
    assert_int_equal(question(&g, SL_STR("bob"), b1, exp, SL_STR("q")), STORE_FRESH);
    assert_int_equal(get(&g, STORE_PAGE_QUESTION, b1, &a), STORE_FOUND);
    assert_true(store_is_up(g.st));
    assert_int_equal(store_errors(g.st), 0);
    store_free(g.st);
    event_base_free(g.base);
}

/* A decision that could not be written is not a decision: the next one is written, once. */
static void test_decision_retried(void **state)
{
    struct fixture *f = *state;
    uint8_t id[STORE_NONCE_LEN] = { 3 };
    uint64_t exp = (uint64_t)time(NULL) + 60;
    struct answer a;
    assert_int_equal(decide(f, id, exp, (struct sl_str){ too_big, sizeof(too_big) }, &a),
                     STORE_ERROR);
    assert_int_equal(get(f, STORE_PAGE_DECISION, id, &a), STORE_ABSENT);
    assert_true(store_is_up(f->st));
    assert_int_equal(decide(f, id, exp, SL_STR("approved"), &a), STORE_FRESH);
    assert_int_equal(decide(f, id, exp, SL_STR("declined"), &a), STORE_SPENT);
    assert_bytes_equal(a.body, a.body_len, "approved");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_question_over_budget),
        cmocka_unit_test(test_question_over_share),
        cmocka_unit_test(test_question_over_entry_share),
        cmocka_unit_test(test_decision_retried),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
