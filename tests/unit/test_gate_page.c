/* test_gate_page.c: the gate's approval-page rounds (gate.h: page, page_check,
 * gate_page_decided). A page question is a GATE_ASK with page set; its state coming back is a
 * page_check that nothing forwards until the page's decision, by someone the policy allows,
 * turns it into a forward that spends the nonce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval.h"
#include "gate.h"
#include "jsonrpc.h"

static const char policy_text[] =
    "version: 1\n"
    "defaults:\n"
    "  action: allow\n"
    "  confirm_ttl: 60\n"
    "tools:\n"
    "  delete_file:\n"
    "    action: confirm\n"
    "    irreversible: true\n"
    "    approvers: [\"header:oncall-*\"]\n"
    "  write_file:\n"
    "    action: confirm\n"
    "  move_file:\n"
    "    action: confirm\n"
    "    approval: client-or-page\n"
    "    self_approve: true\n";

/* The same tools, write_file now on the page (a reload between the rounds). */
static const char page_policy_text[] =
    "version: 1\n"
    "defaults:\n"
    "  action: allow\n"
    "  confirm_ttl: 60\n"
    "tools:\n"
    "  delete_file:\n"
    "    action: confirm\n"
    "  write_file:\n"
    "    action: confirm\n"
    "    approval: page\n"
    "    self_approve: true\n"
    "  move_file:\n"
    "    action: confirm\n";

#define NOW 1800000000u

struct fixture {
    struct policy *policy, *page_policy;
    struct seal_keyring *keys;
    uint8_t origin[SEAL_ORIGIN_LEN];
    struct gate_ctx gate;
    struct sl_arena *arena;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t", policy_text, sizeof(policy_text) - 1, &f->policy,
                                        &err), 0);
    assert_int_equal(policy_load_buffer("p", page_policy_text, sizeof(page_policy_text) - 1,
                                        &f->page_policy, &err), 0);
    f->keys = seal_keyring_random();
    f->gate = (struct gate_ctx){ .keys = f->keys, .origin = f->origin,
                                 .upstream_id = SL_STR("stdio:test"),
                                 .server_name = SL_STR("demo") };
    f->arena = sl_arena_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    policy_unref(f->policy);
    policy_unref(f->page_policy);
    seal_keyring_free(f->keys);
    sl_arena_free(f->arena);
    free(f);
    return 0;
}

static struct json *parse(struct fixture *f, const char *text)
{
    struct json *v;
    char err[160];
    if (json_parse(text, strlen(text), f->arena, &v, err, sizeof(err)) != 0)
        fail_msg("bad test JSON %s: %s", text, err);
    return v;
}

static struct gate_input input(struct fixture *f, const char *tool, const char *args, bool form)
{
    return (struct gate_input){
        .policy = f->policy,
        .principal = SL_STR("header:alice"),
        .tool = sl_str_c(tool),
        .args = parse(f, args),
        .can_elicit_form = form,
    };
}

/* Round one of a page question; its state into state (a JSON string in the arena). */
static struct json *page_round_one(struct fixture *f, const char *tool, const char *args,
                                   bool form, uint8_t page_id[16])
{
    struct gate_input in = input(f, tool, args, form);
    struct gate_verdict v;
    gate_decide(&f->gate, &in, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_true(v.page);
    assert_true(v.page_new);
    assert_true(v.ask.check); /* fatigue limits hold for page questions too */
    assert_int_equal(v.page_exp, NOW + 60);
    assert_true(v.text.len > 0);
    memcpy(page_id, v.page_id, 16);
    struct json *st = json_new_string(f->arena, v.state.p, v.state.len);
    gate_verdict_free(&v);
    return st;
}

static void round_two(struct fixture *f, const char *tool, const char *args, struct json *st,
                      struct gate_verdict *v)
{
    struct gate_input in = input(f, tool, args, true);
    in.request_state = st;
    in.input_responses = parse(f, "{\"sluice.confirm\":{\"action\":\"accept\"}}");
    gate_decide(&f->gate, &in, NOW + 1, v);
}

static void test_page_rounds(void **state)
{
    struct fixture *f = *state;
    uint8_t id[16];
    struct json *st = page_round_one(f, "delete_file", "{\"path\":\"/x\"}", true, id);
    struct sl_buf rec = { 0 };
    struct {
        const char *decision; /* NULL: none yet */
        enum gate_action want;
    } rows[] = {
        { NULL, GATE_ASK },
        { "approved\nheader:oncall-bob", GATE_FORWARD },
        { "declined\nheader:oncall-bob", GATE_REFUSE },
        { "approved\nheader:mallory", GATE_REFUSE },
        { "approved\nheader:alice", GATE_REFUSE }, /* the caller, without self_approve */
        { "maybe", GATE_REFUSE },
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct gate_verdict v;
        round_two(f, "delete_file", "{\"path\":\"/x\"}", st, &v);
        assert_true(v.page_check);
        assert_false(v.spend);
        assert_memory_equal(v.page_id, id, 16);
        gate_page_decided(f->policy, SL_STR("header:alice"), SL_STR("delete_file"),
                          rows[i].decision != NULL, false, sl_str_c(rows[i].decision), &v);
        if (rows[i].want != v.action)
            fail_msg("row %zu (%s): action %d, want %d", i, rows[i].decision, v.action,
                     rows[i].want);
        if (rows[i].decision == NULL) {
            assert_true(v.page); /* the same page again, nothing spent */
            assert_false(v.spend);
            assert_int_equal(v.args_json.len, 0);
        } else {
            assert_true(v.spend); /* decided: the state is spent either way */
        }
        if (v.action == GATE_FORWARD) {
            assert_int_equal(v.decision, AUDIT_PAGE_APPROVED);
            assert_true(v.args_json.len > 0);
        }
        gate_verdict_free(&v);
    }
    /* the store could not answer: refused */
    struct gate_verdict v;
    round_two(f, "delete_file", "{\"path\":\"/x\"}", st, &v);
    gate_page_decided(f->policy, SL_STR("header:alice"), SL_STR("delete_file"), false,
                      true, SL_STR_NULL, &v);
    assert_int_equal(v.action, GATE_REFUSE);
    assert_false(v.spend);
    gate_verdict_free(&v);
    /* other arguments under the page's state: refused before any decision */
    round_two(f, "delete_file", "{\"path\":\"/y\"}", st, &v);
    assert_false(v.page_check);
    assert_int_equal(v.action, GATE_REFUSE);
    gate_verdict_free(&v);
    sl_buf_free(&rec);
}

static void test_client_or_page(void **state)
{
    struct fixture *f = *state;
    struct gate_input in = input(f, "move_file", "{}", true);
    struct gate_verdict v;
    gate_decide(&f->gate, &in, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_false(v.page); /* the client can ask: the form question */
    gate_verdict_free(&v);
    uint8_t id[16];
    page_round_one(f, "move_file", "{}", false, id); /* it cannot: the page */
    /* write_file is client-only: a client that cannot ask is refused, no page */
    in = input(f, "write_file", "{}", false);
    gate_decide(&f->gate, &in, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    assert_false(v.page);
    gate_verdict_free(&v);
}

/* A form question asked before a reload put the tool on the page: its answer no longer runs the
 * call; only the page does. */
static void test_form_state_after_reload_to_page(void **state)
{
    struct fixture *f = *state;
    struct gate_input in = input(f, "write_file", "{\"path\":\"/a\"}", true);
    struct gate_verdict v;
    gate_decide(&f->gate, &in, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_false(v.page);
    struct json *st = json_new_string(f->arena, v.state.p, v.state.len);
    gate_verdict_free(&v);
    in.policy = f->page_policy;
    in.request_state = st;
    in.input_responses =
        parse(f, "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":true}}}");
    gate_decide(&f->gate, &in, NOW + 1, &v);
    assert_int_not_equal(v.action, GATE_FORWARD);
    assert_false(v.spend);
    gate_verdict_free(&v);
}

/* A page state never answers a form round, and a token is not a page state. */
static void test_page_state_kinds(void **state)
{
    struct fixture *f = *state;
    uint8_t id[16];
    struct json *st = page_round_one(f, "delete_file", "{}", false, id);
    /* in _meta, as a client without elicitation retries: a page check */
    struct gate_input in = input(f, "delete_file", "{}", false);
    in.token = st;
    struct gate_verdict v;
    gate_decide(&f->gate, &in, NOW + 1, &v);
    assert_true(v.page_check);
    assert_memory_equal(v.page_id, id, 16);
    gate_verdict_free(&v);
    /* another principal */
    in.principal = SL_STR("header:mallory");
    gate_decide(&f->gate, &in, NOW + 1, &v);
    assert_false(v.page_check);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    gate_verdict_free(&v);
    /* expired */
    in.principal = SL_STR("header:alice");
    gate_decide(&f->gate, &in, NOW + 61, &v);
    assert_false(v.page_check);
    assert_int_not_equal(v.action, GATE_FORWARD);
    gate_verdict_free(&v);
}

/* The page's question shows every value whole, where the client's form would cut it (to its
 * start and its end); the open question the store shares with an identical call carries no
 * copy of it. The filler is digits in turn: a run of one would be shown as its count. */
static void test_page_text_whole(void **state)
{
    struct fixture *f = *state;
    char args[3200];
    int n = snprintf(args, sizeof(args), "{\"path\":\"");
    for (int i = 0; i < 3000; i++)
        args[n++] = (char)('0' + i % 10);
    n += snprintf(args + n, sizeof(args) - (size_t)n, "; rm -rf /home\"}");
    assert_true(n > 0 && (size_t)n < sizeof(args));
    struct gate_input in = input(f, "move_file", args, false);
    struct gate_verdict v;
    gate_decide(&f->gate, &in, NOW, &v);
    assert_true(v.page && v.page_new);
    assert_non_null(memmem(v.text.p, v.text.len, "9; rm -rf /home\"", 16));
    assert_null(memmem(v.text.p, v.text.len, "sha256", 6));
    assert_null(memmem(v.ask.blob.p, v.ask.blob.len, "rm -rf", 6));
    gate_verdict_free(&v);
    in = input(f, "move_file", args, true); /* the form question of the same call: cut */
    gate_decide(&f->gate, &in, NOW, &v);
    assert_false(v.page);
    assert_true(v.text.len < 3000); /* not the whole value */
    assert_non_null(memmem(v.text.p, v.text.len, "sha256", 6));
    assert_non_null(memmem(v.text.p, v.text.len, "9; rm -rf /home\"", 16)); /* its end */
    gate_verdict_free(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_page_rounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_or_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_form_state_after_reload_to_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_page_state_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_page_text_whole, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
