/* test_gate.c: the decision and the confirmation round, over every answer shape and every way a
 * state can be wrong. Each row drives a real round one (a real sealed state) and then a round two,
 * and asserts the verdict, so a broken check in gate.c shows up as a forwarded row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "asks.h"
#include "canon.h"
#include "gate.h"
#include "replay.h"
#include "jsonrpc.h"
#include "msg.h"

static const char policy_text[] =
    "version: 1\n"
    "defaults:\n"
    "  action: allow\n"
    "  confirm_ttl: 60\n"
    "tools:\n"
    "  write_file:\n"
    "    action: confirm\n"
    "  delete_file:\n"
    "    action: confirm\n"
    "    irreversible: true\n"
    "  drop_table:\n"
    "    action: deny\n"
    "  edit_file:\n"
    "    action: confirm\n"
    "    fallback: token\n"
    "  move_file:\n"
    "    action: confirm\n"
    "    fallback: token\n"
    "  copy_file:\n"
    "    action: allow\n"
    "    args:\n"
    "      path:\n"
    "        confirm_glob: [\"/home/**\"]\n"
    "  shred_file:\n"
    "    action: confirm\n"
    "    irreversible: true\n"
    "    strict_args: true\n"
    "    args: { path: {}, passes: {} }\n"
    "  strict_echo:\n"
    "    action: allow\n"
    "    strict_args: true\n"
    "    args: { text: {} }\n";

#define NOW 1800000000u

struct fixture {
    struct policy *policy;
    struct seal_keyring *keys, *other_keys;
    struct replay *replay;
    uint8_t origin[SEAL_ORIGIN_LEN];
    struct gate_ctx gate;
    struct sl_arena *arena;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct policy_error err;
    assert_int_equal(policy_load_buffer("test", policy_text, sizeof(policy_text) - 1, &f->policy,
                                        &err), 0);
    f->keys = seal_keyring_random();
    f->other_keys = seal_keyring_random();
    f->replay = replay_memory_new(1000, 0);
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
    seal_keyring_free(f->keys);
    seal_keyring_free(f->other_keys);
    replay_free(f->replay);
    sl_arena_free(f->arena);
    free(f);
    return 0;
}

static struct json *parse(struct fixture *f, const char *text)
{
    if (text == NULL)
        return NULL;
    struct json *v;
    char err[160];
    if (json_parse(text, strlen(text), f->arena, &v, err, sizeof(err)) != 0)
        fail_msg("bad test JSON %s: %s", text, err);
    return v;
}

/* What the session does with a verdict that names a nonce (session_spend.c), with the memory
 * store's table standing in for the store: fresh goes ahead, seen is a replay, full refuses. */
static void spend(struct replay *r, uint64_t now, struct gate_verdict *v)
{
    if (!v->spend)
        return;
    enum replay_status rs = replay_record(r, v->nonce, v->exp + 600, now);
    if (rs == REPLAY_SEEN)
        gate_refuse_spent(v, GATE_SPENT_REPLAYED);
    else if (rs == REPLAY_ERROR)
        gate_refuse_spent(v, GATE_SPENT_UNAVAILABLE);
}

static void decide_token(struct fixture *f, const char *tool, const char *args,
                         const struct json *token, uint64_t now, struct gate_verdict *v)
{
    struct gate_input in = {
        .policy = f->policy,
        .principal = SL_STR("local"),
        .tool = sl_str_c(tool),
        .args = parse(f, args),
        .token = token,
    };
    gate_decide(&f->gate, &in, now, v);
    spend(f->replay, now, v);
}

static bool journal = true; /* what decide() tells the gate: a journal reads every digest */

static void decide(struct fixture *f, const struct gate_ctx *g, const char *principal,
                   const char *tool, const char *args, bool form, const struct json *state,
                   const char *responses, uint64_t now, struct gate_verdict *v)
{
    struct gate_input in = {
        .policy = f->policy,
        .principal = sl_str_c(principal),
        .tool = sl_str_c(tool),
        .args = parse(f, args),
        .can_elicit_form = form,
        .request_state = state,
        .input_responses = parse(f, responses),
        .journal = journal,
    };
    gate_decide(g, &in, now, v);
    spend(f->replay, now, v);
}

/* The result a modern client gets for v (msg.h), kept in the fixture's arena. */
static const char *result_text(struct fixture *f, const struct gate_verdict *v)
{
    struct sl_buf b = { 0 };
    msg_verdict_result(&b, v, true);
    char *text = sl_arena_strndup(f->arena, b.p ? b.p : "", b.len);
    sl_buf_free(&b);
    return text;
}

/* Round one for tool/args; returns the requestState the client would echo. */
static struct json *round_one(struct fixture *f, const char *tool, const char *args)
{
    struct gate_verdict v;
    decide(f, &f->gate, "local", tool, args, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_int_equal(v.decision, AUDIT_ASKED);
    struct json *res = parse(f, result_text(f, &v));
    gate_verdict_free(&v);
    assert_true(json_str_is(json_get(res, "resultType"), "input_required"));
    struct json *state = json_get(res, "requestState");
    assert_non_null(state);
    assert_int_equal(state->type, JSON_STRING);
    return state;
}

static const char args_a[] = "{\"path\":\"/tmp/a.txt\",\"content\":\"hello\"}";

/* ===== names that read as a policy tool's ===== */

/* A name the policy does not hold that a loose server reads as one it does (namefold.h) is
 * refused before anything else, whatever defaults.action says, naming the policy's tool; the
 * policy's own names, and names that only resemble them, are decided as before. */
static void test_name_variants(void **state)
{
    struct fixture *f = *state;
    static const char *const variants[][2] = {
        { "Delete_File", "tool-name-variant:tools.delete_file" },
        { "delete\xe2\x80\x8b_file", "tool-name-variant:tools.delete_file" },
        { "DROP_TABLE", "tool-name-variant:tools.drop_table" },
        { "copy_\xc2\xad" "FILE", "tool-name-variant:tools.copy_file" },
        { "write_file\xef\xb8\x8f", "tool-name-variant:tools.write_file" },
        { "delete-file", "tool-name-variant:tools.delete_file" },
        { "\xef\xbd\x84\xef\xbd\x85lete_file", "tool-name-variant:tools.delete_file" },
        { "shred_\xef\xac\x81le", "tool-name-variant:tools.shred_file" },
        { "mov\xc3\xa9 file", "tool-name-variant:tools.move_file" },
        { "DROP.TABLE", "tool-name-variant:tools.drop_table" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(variants); i++) {
        struct gate_verdict v;
        decide(f, &f->gate, "local", variants[i][0], args_a, true, NULL, NULL, NOW, &v);
        assert_int_equal(v.action, GATE_REFUSE_RPC);
        assert_int_equal(v.decision, AUDIT_REFUSED);
        assert_int_equal(v.rpc_code, JSONRPC_INVALID_PARAMS);
        assert_string_equal(v.reason, "tool-name-variant");
        assert_string_equal(v.rule, variants[i][1]);
        assert_non_null(strstr(v.rpc_message, "case, width, accents, separators or invisible"));
        assert_string_equal(v.rpc_data, "{\"reason\":\"tool-name-variant\"}");
        assert_int_equal(v.args_json.len, 0);
        gate_verdict_free(&v);
    }
    struct gate_verdict v;
    decide(f, &f->gate, "local", "delete_files", args_a, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_string_equal(v.rule, "defaults.action");
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "drop_table", args_a, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE);
    assert_string_equal(v.reason, "policy");
    gate_verdict_free(&v);
}

/* With hide_denied, tools/list leaves out what every call of would be refused: denied tools
 * and names that read as a policy tool's; without it, nothing. */
static void test_hides_listed(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "version: 1\ndefaults: { action: allow, hide_denied: true }\ntools:\n"
        "  delete_file: { action: confirm }\n  drop_table: { action: deny }\n"
        "  Delete-File: { action: confirm }\n",
        "version: 1\ndefaults: { action: allow }\ntools:\n"
        "  delete_file: { action: confirm }\n  drop_table: { action: deny }\n"
        "  Delete-File: { action: confirm }\n",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(texts); i++) {
        struct policy *p;
        struct policy_error err;
        assert_int_equal(policy_load_buffer("t", texts[i], strlen(texts[i]), &p, &err), 0);
        bool hide = i == 0;
        assert_int_equal(gate_hides_listed(p, sl_str_c("drop_table")), hide);
        assert_int_equal(gate_hides_listed(p, sl_str_c("delete-file")), hide);
        assert_int_equal(gate_hides_listed(p, sl_str_c("\xef\xbd\x84" "elete_file")), hide);
        assert_int_equal(gate_hides_listed(p, sl_str_c("Drop.Table")), hide);
        assert_false(gate_hides_listed(p, sl_str_c("delete_file")));
        assert_false(gate_hides_listed(p, sl_str_c("Delete-File"))); /* named: its own */
        assert_false(gate_hides_listed(p, sl_str_c("delete_files")));
        assert_false(gate_hides_listed(p, sl_str_c("echo")));
        policy_unref(p);
    }
}

/* ===== answers ===== */

struct answer_row {
    const char *responses;      /* inputResponses JSON, NULL for absent */
    enum gate_action action;
    enum audit_decision decision;
};

static const struct answer_row answers[] = {
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":true}}}", GATE_FORWARD,
      AUDIT_CLIENT_ACCEPTED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":false}}}", GATE_REFUSE,
      AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":\"yes\"}}}", GATE_REFUSE,
      AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":\"true\"}}}",
      GATE_REFUSE, AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":1}}}", GATE_REFUSE,
      AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":null}}}", GATE_REFUSE,
      AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":[true]}}}",
      GATE_REFUSE, AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{}}}", GATE_REFUSE, AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\"}}", GATE_REFUSE, AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"Approve\":true}}}", GATE_REFUSE,
      AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"decline\"}}", GATE_REFUSE, AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"decline\",\"content\":{\"approve\":true}}}", GATE_REFUSE,
      AUDIT_DECLINED },
    { "{\"sluice.confirm\":{\"action\":\"cancel\"}}", GATE_REFUSE, AUDIT_CANCELLED },
    { "{\"sluice.confirm\":{\"action\":\"ACCEPT\",\"content\":{\"approve\":true}}}", GATE_REFUSE,
      AUDIT_REFUSED },
    { "{\"sluice.confirm\":{\"content\":{\"approve\":true}}}", GATE_REFUSE, AUDIT_REFUSED },
    { "{\"sluice.confirm\":\"accept\"}", GATE_REFUSE, AUDIT_REFUSED },
    { "{\"sluice.confirm\":true}", GATE_REFUSE, AUDIT_REFUSED },
    { "{\"other.key\":{\"action\":\"accept\",\"content\":{\"approve\":true}}}", GATE_ASK,
      AUDIT_ASKED },
    { "{}", GATE_ASK, AUDIT_ASKED },
    { NULL, GATE_ASK, AUDIT_ASKED },
    { "[{\"action\":\"accept\",\"content\":{\"approve\":true}}]", GATE_ASK, AUDIT_ASKED },
};

static void test_answers(void **state)
{
    struct fixture *f = *state;
    for (size_t i = 0; i < SL_ARRAY_LEN(answers); i++) {
        const struct answer_row *r = &answers[i];
        struct json *st = round_one(f, "write_file", args_a);
        struct gate_verdict v;
        decide(f, &f->gate, "local", "write_file", args_a, true, st, r->responses, NOW + 5, &v);
        if (v.action != r->action || v.decision != r->decision)
            fail_msg("row %zu (%s): got action %d decision %d, want %d %d", i,
                     r->responses ? r->responses : "(none)", v.action, v.decision, r->action,
                     r->decision);
        if (v.action == GATE_REFUSE) /* a tool error the model can read */
            assert_non_null(strstr(result_text(f, &v), "\"isError\":true"));
        if (v.action == GATE_FORWARD) /* exactly the canonical arguments that were asked about */
            assert_string_equal(v.args_json.p, "{\"content\":\"hello\",\"path\":\"/tmp/a.txt\"}");
        else
            assert_int_equal(v.args_json.len, 0);
        gate_verdict_free(&v);
    }
}

/* ===== states ===== */

static const char accept[] =
    "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":true}}}";

static void expect(struct gate_verdict *v, enum gate_action action, const char *reason)
{
    if (v->action != action || (reason && strcmp(v->reason, reason) != 0))
        fail_msg("got action %d reason %s, want %d %s", v->action, v->reason, action,
                 reason ? reason : "(any)");
    if (action == GATE_REFUSE_RPC && v->rpc_code == -32602)
        assert_string_equal(v->rpc_data, "{\"reason\":\"invalid_request_state\"}");
    gate_verdict_free(v);
}

/* As expect, and the refusal's message (what a person reads) contains said. */
static void expect_said(struct gate_verdict *v, const char *reason, const char *said)
{
    if (v->action != GATE_REFUSE_RPC || v->rpc_message == NULL || !strstr(v->rpc_message, said))
        fail_msg("got message \"%s\", want it to contain \"%s\"",
                 v->rpc_message ? v->rpc_message : "(none)", said);
    expect(v, GATE_REFUSE_RPC, reason);
}

static void test_swapped_arguments(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", "{\"path\":\"/etc/passwd\",\"content\":\"hello\"}",
           true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE, "arguments-changed");
    /* The state is still unspent: the right arguments go through once. */
    decide(f, &f->gate, "local", "write_file", args_a, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_FORWARD, "accept");
}

static void test_extra_and_missing_arguments(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file",
           "{\"path\":\"/tmp/a.txt\",\"content\":\"hello\",\"mode\":\"append\"}", true, st, accept,
           NOW + 1, &v);
    expect(&v, GATE_REFUSE, "arguments-changed");
    decide(f, &f->gate, "local", "write_file", NULL, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE, "arguments-changed");
    decide(f, &f->gate, "local", "write_file", "{\"path\":\"/tmp/a.txt\",\"content\":\"hello \"}",
           true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE, "arguments-changed");
}

static void test_reordered_keys_accepted(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", "{\"a\":1.0,\"b\":{\"y\":2,\"x\":1e0}}");
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", "{\"b\":{\"x\":1,\"y\":2.00},\"a\":1}", true, st,
           accept, NOW + 1, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_string_equal(v.args_json.p, "{\"a\":1,\"b\":{\"x\":1,\"y\":2}}");
    gate_verdict_free(&v);
}

static void test_state_for_another_tool(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "local", "delete_file", args_a, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE_RPC, NULL);
}

static void test_state_for_another_principal(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "mallory", "write_file", args_a, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE_RPC, NULL);
}

static void test_state_for_another_upstream_or_key(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_ctx other = f->gate;
    other.upstream_id = SL_STR("stdio:another");
    struct gate_verdict v;
    decide(f, &other, "local", "write_file", args_a, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE_RPC, NULL);
    other = f->gate;
    other.keys = f->other_keys;
    decide(f, &other, "local", "write_file", args_a, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE_RPC, NULL);
}

static void test_expired_state(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", args_a, true, st, accept, NOW + 60, &v);
    expect(&v, GATE_REFUSE_RPC, NULL);
    decide(f, &f->gate, "local", "write_file", args_a, true, st, accept, NOW + 59, &v);
    expect(&v, GATE_FORWARD, "accept");
}

/* A state opens only in the process that minted it (another origin: another replica, or this one
 * restarted, whose memory store never saw the nonce), unless the store is shared: then the store
 * checks the origin against its epoch when the nonce is spent. */
static void test_state_from_another_process(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_ctx other = f->gate;  /* same key, another epoch: a restart or another replica */
    uint8_t other_origin[SEAL_ORIGIN_LEN];
    memcpy(other_origin, f->origin, sizeof(other_origin));
    other_origin[0] ^= 1;
    other.origin = other_origin;
    struct gate_verdict v;
    decide(f, &other, "local", "write_file", args_a, true, st, accept, NOW + 1, &v);
    expect_said(&v, "minted-by-another-process", "requestState was made by another sluice");
    /* A shared store: the gate lets it through to the spend, naming the state's own origin. */
    other.shared_store = true;
    decide(f, &other, "local", "write_file", args_a, true, st, accept, NOW + 1, &v);
    assert_true(v.spend);
    assert_memory_equal(v.origin, f->origin, SEAL_ORIGIN_LEN);
    expect(&v, GATE_FORWARD, "accept");
    decide(f, &other, "local", "write_file", args_a, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE_RPC, "replayed");
}

static void test_replayed_state(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", args_a, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_FORWARD, "accept");
    decide(f, &f->gate, "local", "write_file", args_a, true, st, accept, NOW + 2, &v);
    expect_said(&v, "replayed", "This confirmation was already used");
}

/* Arguments whose digest shares its first bytes with the approved ones' are still other
 * arguments: the whole digest is compared (a truncated compare would let them run). */
static void test_digest_compared_whole(void **state)
{
    struct fixture *f = *state;
    uint8_t want[CANON_DIGEST_LEN], got[CANON_DIGEST_LEN];
    assert_int_equal(canon_digest(parse(f, args_a), want), 0);
    char args[96];
    bool found = false;
    for (unsigned i = 0; i < 4000000 && !found; i++) {
        snprintf(args, sizeof(args), "{\"path\":\"/tmp/a.txt\",\"content\":\"%u\"}", i);
        struct sl_arena *a = sl_arena_new();
        struct json *v;
        char err[64];
        assert_int_equal(json_parse(args, strlen(args), a, &v, err, sizeof(err)), 0);
        assert_int_equal(canon_digest(v, got), 0);
        found = memcmp(want, got, 2) == 0;
        sl_arena_free(a);
    }
    assert_true(found);
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", args, true, st, accept, NOW + 1, &v);
    expect(&v, GATE_REFUSE, "arguments-changed");
}

/* A replay store that cannot record (full) refuses: the nonce must be on record before a call
 * runs, so an internal error never forwards. */
static void test_store_full_refuses(void **state)
{
    struct fixture *f = *state;
    struct replay *small = replay_memory_new(1, 0);
    replay_free(f->replay);
    f->replay = small;
    struct gate_ctx g = f->gate;
    struct gate_verdict v;
    struct json *st1 = round_one(f, "write_file", args_a);
    decide(f, &g, "local", "write_file", args_a, true, st1, accept, NOW + 1, &v);
    expect(&v, GATE_FORWARD, "accept");
    struct json *st2 = round_one(f, "write_file", args_a);
    decide(f, &g, "local", "write_file", args_a, true, st2, accept, NOW + 1, &v);
    if (v.action == GATE_FORWARD)
        fail_msg("forwarded although the replay store could not record the nonce");
    gate_verdict_free(&v);
}

static void test_declined_state_cannot_be_reused(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", args_a, true, st,
           "{\"sluice.confirm\":{\"action\":\"decline\"}}", NOW + 1, &v);
    expect(&v, GATE_REFUSE, "declined");
    decide(f, &f->gate, "local", "write_file", args_a, true, st, accept, NOW + 2, &v);
    expect(&v, GATE_REFUSE_RPC, "replayed");
}

static void test_tampered_state(void **state)
{
    struct fixture *f = *state;
    struct json *st = round_one(f, "write_file", args_a);
    size_t len = st->u.str.len;
    char *copy = malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, st->u.str.p, len);
        copy[i] = copy[i] == 'A' ? 'B' : 'A';
        struct json t = { .type = JSON_STRING, .u.str = { copy, len } };
        struct gate_verdict v;
        decide(f, &f->gate, "local", "write_file", args_a, true, &t, accept, NOW + 1, &v);
        if (v.action == GATE_FORWARD)
            fail_msg("a state changed at byte %zu was accepted", i);
        gate_verdict_free(&v);
    }
    free(copy);
    static const char *const bad[] = { "1", "null", "{}", "[]", "\"\"", "\"s1.\"", "true",
                                       "\"garbage\"" };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct gate_verdict v;
        decide(f, &f->gate, "local", "write_file", args_a, true, parse(f, bad[i]), accept,
               NOW + 1, &v);
        expect(&v, GATE_REFUSE_RPC, NULL);
    }
}

static void test_no_form_capability(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", args_a, false, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    assert_int_equal(v.rpc_code, -32021);
    gate_verdict_free(&v);
    /* Not even with a valid state and an accept. */
    struct json *st = round_one(f, "write_file", args_a);
    decide(f, &f->gate, "local", "write_file", args_a, false, st, accept, NOW + 1, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    assert_int_equal(v.rpc_code, -32021);
    gate_verdict_free(&v);
}

static void test_policy_actions(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    decide(f, &f->gate, "local", "read_text_file", "{\"path\":\"x\"}", false, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_false(v.gated);
    assert_string_equal(v.rule, "defaults.action");
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "drop_table", "{}", true, NULL, accept, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE);
    assert_non_null(strstr(result_text(f, &v), "tools.drop_table"));
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "write_file", "[1,2]", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    assert_int_equal(v.rpc_code, -32602);
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "write_file", "{\"n\":1e400}", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    gate_verdict_free(&v);
}

/* Integers beyond 2^53 hash like their double neighbour; a gated call refuses them. */
static void test_big_integers(void **state)
{
    struct fixture *f = *state;
    static const struct { const char *args; enum gate_action action; } rows[] = {
        { "{\"n\":9007199254740992}", GATE_ASK },
        { "{\"n\":-9007199254740992}", GATE_ASK },
        { "{\"n\":9007199254740993}", GATE_REFUSE_RPC },
        { "{\"n\":-9007199254740993}", GATE_REFUSE_RPC },
        { "{\"n\":[1,{\"m\":12345678901234567890}]}", GATE_REFUSE_RPC },
        { "{\"n\":99999999999999999}", GATE_REFUSE_RPC },
        { "{\"n\":1e30}", GATE_ASK },
        { "{\"n\":9007199254740993.5}", GATE_ASK },
        { "{\"path\":\"a\",\"Path\":\"b\"}", GATE_REFUSE_RPC },
        { "{\"x\":[{\"k\":1,\"K\":2}]}", GATE_REFUSE_RPC },
        { "{\"path\":\"a\",\"paths\":\"b\"}", GATE_ASK },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct gate_verdict v;
        decide(f, &f->gate, "local", "write_file", rows[i].args, true, NULL, NULL, NOW, &v);
        if (v.action != rows[i].action)
            fail_msg("%s: got %d want %d", rows[i].args, v.action, rows[i].action);
        gate_verdict_free(&v);
    }
    /* allowed tools are forwarded untouched, whatever their numbers */
    struct gate_verdict v;
    decide(f, &f->gate, "local", "echo", "{\"n\":9007199254740993}", false, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_true(v.has_digest);
    gate_verdict_free(&v);
}

/* Without a journal an allowed call is not canonicalized (nothing reads its digest); a gated
 * one always is, since its state binds the digest. */
static void test_digest_only_when_read(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    journal = false;
    decide(f, &f->gate, "local", "echo", "{\"a\":1}", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_false(v.has_digest);
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "write_file", "{\"a\":1}", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_true(v.has_digest);
    gate_verdict_free(&v);
    /* an allowed tool whose argument rule asks is gated */
    decide(f, &f->gate, "local", "copy_file", "{\"path\":\"/home/a\"}", true, NULL, NULL, NOW,
           &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_true(v.has_digest);
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "copy_file", "{\"path\":\"/tmp/a\"}", true, NULL, NULL, NOW,
           &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_false(v.has_digest);
    gate_verdict_free(&v);
    journal = true;
    decide(f, &f->gate, "local", "echo", "{\"a\":1}", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_true(v.has_digest);
    uint8_t want[32];
    assert_true(gate_args_digest(json_get(parse(f, "{\"x\":{\"a\":1}}"), "x"), want));
    assert_memory_equal(v.digest, want, 32);
    gate_verdict_free(&v);
}

/* Arguments over GATE_MAX_ARGS are never canonicalized: refused when gated, no digest when not. */
static void test_argument_size_limit(void **state)
{
    struct fixture *f = *state;
    struct sl_buf b = { 0 };
    sl_buf_puts(&b, "{\"content\":\"");
    for (size_t i = 0; i < GATE_MAX_ARGS; i++)
        sl_buf_putc(&b, 'x');
    sl_buf_puts(&b, "\"}");
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", b.p, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    assert_int_equal(v.rpc_code, -32602);
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "echo", b.p, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_false(v.has_digest);
    gate_verdict_free(&v);
    /* Under the limit, though past the quick bound (six bytes per string byte): measured
     * exactly, so it is canonicalized and has its digest. */
    sl_buf_reset(&b);
    sl_buf_puts(&b, "{\"content\":\"");
    for (size_t i = 0; i < GATE_MAX_ARGS / 4; i++)
        sl_buf_putc(&b, 'x');
    sl_buf_puts(&b, "\"}");
    decide(f, &f->gate, "local", "echo", b.p, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_true(v.has_digest);
    gate_verdict_free(&v);
    sl_buf_free(&b);
}

/* fallback: token. Issued to a client that cannot ask, good once for these arguments and tool. */
static struct json *issue_token(struct fixture *f, const char *tool, const char *args)
{
    struct gate_verdict v;
    decide_token(f, tool, args, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE);
    assert_int_equal(v.decision, AUDIT_TOKEN_ISSUED);
    struct json *res = parse(f, result_text(f, &v));
    gate_verdict_free(&v);
    assert_true(json_is_true(json_get(res, "isError")));
    struct json *tok = json_get(json_get(res, "_meta"), GATE_TOKEN_META);
    assert_non_null(tok);
    assert_int_equal(tok->type, JSON_STRING);
    return tok;
}

static void test_token_fallback(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    /* a tool without fallback: -32021 as always */
    decide_token(f, "write_file", args_a, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    assert_int_equal(v.rpc_code, -32021);
    gate_verdict_free(&v);

    struct json *tok = issue_token(f, "edit_file", args_a);
    decide_token(f, "edit_file", "{\"path\":\"/tmp/a.txt\",\"content\":\"bye\"}", tok, NOW + 1,
                 &v);
    expect(&v, GATE_REFUSE, "arguments-changed");
    decide_token(f, "move_file", args_a, tok, NOW + 1, &v);   /* another tool */
    expect_said(&v, NULL, "This token was altered, or was made for another tool");
    decide_token(f, "edit_file", args_a, tok, NOW + 120, &v); /* expired */
    expect_said(&v, NULL, "This token expired");
    decide_token(f, "edit_file", args_a, tok, NOW + 1, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_int_equal(v.decision, AUDIT_TOKEN_REDEEMED);
    gate_verdict_free(&v);
    decide_token(f, "edit_file", args_a, tok, NOW + 2, &v);   /* second use */
    expect_said(&v, "replayed", "This token was already used");

    /* a confirmation state is not a token, and a token is not a confirmation state */
    struct json *st = round_one(f, "edit_file", args_a);
    decide_token(f, "edit_file", args_a, st, NOW + 1, &v);
    expect_said(&v, "state-kind", "This is not a token");
    struct json *tok2 = issue_token(f, "edit_file", args_a);
    decide(f, &f->gate, "local", "edit_file", args_a, true, tok2, accept, NOW + 1, &v);
    expect_said(&v, "state-kind", "This requestState is not a confirmation state");
}

/* An approved call the upstream asked about continues only with the same arguments, once. */
static void test_continuation(void **state)
{
    struct fixture *f = *state;
    uint8_t digest[32];
    struct json *args = parse(f, args_a);
    assert_int_equal(canon_digest(args, digest), 0);
    struct sl_buf st = { 0 };
    assert_int_equal(gate_wrap_upstream_state(&f->gate, SL_STR("local"), SL_STR("write_file"),
                                              digest, 60, NOW, NULL, NULL, SL_STR("up-state-7"),
                                              true, &st),
                     0);
    struct json cont = { .type = JSON_STRING, .u.str = { st.p, st.len } };
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", "{\"path\":\"/etc/x\",\"content\":\"hello\"}", true,
           &cont, "{\"up.q\":{}}", NOW + 1, &v);
    expect(&v, GATE_REFUSE, "arguments-changed");
    decide(f, &f->gate, "mallory", "write_file", args_a, true, &cont, "{}", NOW + 1, &v);
    expect_said(&v, NULL, "made for another tool, principal or server");
    decide(f, &f->gate, "local", "write_file", args_a, false, &cont, "{\"up.q\":{}}", NOW + 1, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    assert_true(v.continued);
    assert_int_equal(v.upstream_state.len, 10);
    assert_memory_equal(v.upstream_state.p, "up-state-7", 10);
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "write_file", args_a, true, &cont, "{\"up.q\":{}}", NOW + 2, &v);
    expect(&v, GATE_REFUSE_RPC, "replayed");
    sl_buf_free(&st);
    /* The state of a call that began ungated (a parked call's round): if a reload gates the
     * tool, nobody approved it, and it does not pass as approved. */
    assert_int_equal(gate_wrap_upstream_state(&f->gate, SL_STR("local"), SL_STR("write_file"),
                                              digest, 60, NOW, NULL, NULL, SL_STR("handle-2"),
                                              false, &st),
                     0);
    struct json ungated = { .type = JSON_STRING, .u.str = { st.p, st.len } };
    decide(f, &f->gate, "local", "write_file", args_a, false, &ungated, "{\"up.q\":{}}", NOW + 1,
           &v);
    expect_said(&v, "policy-now-gates", "nobody approved it");
    sl_buf_free(&st);
}

/* A parked call's round for a tool the policy allows (session_park.c): the state opens only for
 * the tool, principal and arguments it was made for, before it expires, as a continuation. */
static void test_open_upstream_state(void **state)
{
    struct fixture *f = *state;
    uint8_t digest[32], other[32];
    assert_int_equal(canon_digest(parse(f, args_a), digest), 0);
    assert_int_equal(canon_digest(parse(f, "{\"path\":\"/etc/x\"}"), other), 0);
    struct sl_buf st = { 0 }, inner = { 0 };
    assert_int_equal(gate_wrap_upstream_state(&f->gate, SL_STR("local"), SL_STR("echo"), digest,
                                              60, NOW, NULL, NULL, SL_STR("handle-1"), false, &st),
                     0);
    struct json good = { .type = JSON_STRING, .u.str = { st.p, st.len } };
    const char *why = NULL;
    assert_int_equal(gate_open_upstream_state(&f->gate, SL_STR("local"), SL_STR("echo"), digest,
                                              NOW + 1, &good, &inner, &why),
                     0);
    assert_int_equal(inner.len, 8);
    assert_memory_equal(inner.p, "handle-1", 8);
    const struct {
        const char *principal, *tool;
        const uint8_t *digest;
        uint64_t now;
        const char *why;
    } bad[] = {
        { "local", "echo", other, NOW + 1, "arguments-changed" },
        { "local", "write_file", digest, NOW + 1, NULL },
        { "mallory", "echo", digest, NOW + 1, NULL },
        { "local", "echo", digest, NOW + 120, NULL },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_buf_reset(&inner);
        why = NULL;
        assert_int_equal(gate_open_upstream_state(&f->gate, sl_str_c(bad[i].principal),
                                                  sl_str_c(bad[i].tool), bad[i].digest,
                                                  bad[i].now, &good, &inner, &why),
                         -1);
        assert_non_null(why);
        if (bad[i].why)
            assert_string_equal(why, bad[i].why);
    }
    /* A state of another kind (a token) is not a continuation. */
    struct json *tok = issue_token(f, "edit_file", args_a);
    sl_buf_reset(&inner);
    assert_int_equal(gate_open_upstream_state(&f->gate, SL_STR("local"), SL_STR("edit_file"),
                                              digest, NOW + 1, tok, &inner, &why),
                     -1);
    assert_string_equal(why, "state-kind");
    sl_buf_free(&st);
    sl_buf_free(&inner);
}

/* The person reads the forwarded (canonical) form of the arguments. */
static void test_question_shows_canonical_form(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", "{\"n\":1.50e+3}", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_non_null(strstr(result_text(f, &v), "n (not declared in the policy): 1500"));
    assert_null(strstr(result_text(f, &v), "1.50e+3"));
    gate_verdict_free(&v);
}

/* strict_args: an argument not declared under args: refuses the call, named in the refusal,
 * before anyone is asked and whatever the action (confirm or allow); declared ones go on. */
static void test_strict_args(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    static const struct { const char *tool, *args; enum gate_action action; const char *says; }
    rows[] = {
        { "shred_file", "{\"path\":\"/a\"}", GATE_ASK, NULL },
        { "shred_file", "{\"path\":\"/a\",\"passes\":3}", GATE_ASK, NULL },
        { "shred_file", "{}", GATE_ASK, NULL },
        { "shred_file", "{\"path\":\"/a\",\"mode\":\"x\"}", GATE_REFUSE,
          "this call carries one not declared: \\\"mode\\\"." },
        { "shred_file", "{\"Path\":\"/a\"}", GATE_REFUSE, "\\\"Path\\\"" },
        { "shred_file", "{\"path\":\"/a\",\"b\\u202e\":1,\"c\":2}", GATE_REFUSE,
          "arguments not declared: \\\"b\\\\u202e\\\", \\\"c\\\"." },
        { "shred_file", "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,"
                        "\"i\":9,\"j\":10}", GATE_REFUSE, "\\\"h\\\" and 2 more." },
        { "strict_echo", "{\"text\":\"hi\"}", GATE_FORWARD, NULL },
        { "strict_echo", "{\"text\":\"hi\",\"shell\":true}", GATE_REFUSE, "\\\"shell\\\"" },
        { "strict_echo", "[1]", GATE_REFUSE, "not an object" },
        { "echo", "{\"text\":\"hi\",\"shell\":true}", GATE_FORWARD, NULL },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        decide(f, &f->gate, "local", rows[i].tool, rows[i].args, true, NULL, NULL, NOW, &v);
        if (v.action != rows[i].action)
            fail_msg("%s %s: got %d want %d", rows[i].tool, rows[i].args, v.action,
                     rows[i].action);
        if (rows[i].action == GATE_REFUSE) {
            assert_string_equal(v.reason, "undeclared-argument");
            assert_int_equal(v.decision, AUDIT_DENY);
            assert_int_equal(v.args_json.len, 0); /* nothing to forward */
            if (strstr(result_text(f, &v), rows[i].says) == NULL)
                fail_msg("%s: %s lacks %s", rows[i].args, result_text(f, &v), rows[i].says);
            assert_non_null(strstr(result_text(f, &v), "strict_args"));
        }
        gate_verdict_free(&v);
    }
    /* round two cannot smuggle one in either: the state was for the declared arguments */
    struct json *st = round_one(f, "shred_file", "{\"path\":\"/a\"}");
    decide(f, &f->gate, "local", "shred_file", "{\"path\":\"/a\",\"x\":1}", true, st, accept,
           NOW + 1, &v);
    expect(&v, GATE_REFUSE, "undeclared-argument");
    decide(f, &f->gate, "local", "shred_file", "{\"path\":\"/a\"}", true, st, accept, NOW + 1, &v);
    expect(&v, GATE_FORWARD, "accept");
}

/* Every key is in the question: 300 junk keys that sort first leave path and content in view;
 * keys too many to show refuse the call (-32602), with nothing asked or forwarded. */
static void test_question_lists_every_key(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    struct sl_buf args = { 0 };
    sl_buf_puts(&args, "{");
    for (int i = 0; i < 300; i++)
        sl_buf_printf(&args, "\"a%03d\":0,", i);
    sl_buf_puts(&args, "\"path\":\"/etc/cron.d/x\",\"content\":\"* * * * * root sh\"}");
    decide(f, &f->gate, "local", "write_file", args.p, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    /* each argument line starts with sluice's bullet, U+2022 */
    assert_non_null(strstr(result_text(f, &v), "\\n\xE2\x80\xA2 path (not declared in the "
                                            "policy): \\\"/etc/cron.d/x\\\""));
    assert_non_null(strstr(result_text(f, &v), "\\n\xE2\x80\xA2 content (not declared in the "
                                            "policy): \\\"* * * * * root sh\\\""));
    assert_non_null(strstr(result_text(f, &v), "\\n\xE2\x80\xA2 a299 (not declared in the "
                                            "policy): 0"));
    gate_verdict_free(&v);

    sl_buf_reset(&args);
    sl_buf_puts(&args, "{");
    for (int i = 0; i < 2000; i++)
        sl_buf_printf(&args, "\"a%04d\":0,", i);
    sl_buf_puts(&args, "\"path\":\"/x\"}");
    decide(f, &f->gate, "local", "write_file", args.p, true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_REFUSE_RPC);
    assert_int_equal(v.rpc_code, -32602);
    assert_string_equal(v.reason, "arguments-not-shown");
    assert_non_null(strstr(v.rpc_message, "cannot be confirmed"));
    assert_int_equal(v.args_json.len, 0);
    gate_verdict_free(&v);
    sl_buf_free(&args);
}

/* The question says when it expires, and that an irreversible tool cannot be undone. */
static void test_question_facts(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    decide(f, &f->gate, "local", "delete_file", "{\"path\":\"/a\"}", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_non_null(strstr(result_text(f, &v), "\\nThis cannot be undone.\\nThis question expires "
                                            "in 60 s (at 2027-01-15T08:01:00Z)."));
    gate_verdict_free(&v);
    decide(f, &f->gate, "local", "write_file", "{\"path\":\"/a\"}", true, NULL, NULL, NOW, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_null(strstr(result_text(f, &v), "undone"));
    assert_non_null(strstr(result_text(f, &v), "This question expires in 60 s"));
    gate_verdict_free(&v);
}

/* The question for arguments as sent reads exactly as the question for their canonical text
 * (render_question shows arguments without a number from their own parse): escapes, member
 * order, nesting, a value long enough to be abbreviated (its digest marker), declared and
 * undeclared keys. A number is shown as the canonical text writes it. */
static void test_question_same_as_canonical(void **state)
{
    struct fixture *f = *state;
    struct sl_buf big = { 0 };
    sl_buf_puts(&big, "{\"z\":[true,null,{\"b\":\"\\u0062\",\"a\":[]}],\"content\":\"");
    for (int i = 0; i < 300; i++)
        sl_buf_puts(&big, "x\\u00e9\\\"\\/");
    sl_buf_puts(&big, "\",\"path\":\"/a\"}");
    const char *rows[][2] = {
        { "write_file", "{\"path\":\"\\u002ftmp\\/a\",\"content\":\"tab\\tq\\\"b\\\\ "
                        "\\u2028\\u202e\\ud83d\\ude00\\u00e9\\u001b[31m\"}" },
        { "write_file", "{\"\\ud83d\\ude00\":\"e\",\"\\uff61\":\"f\",\"a b\":{\"y\":\"1\","
                        "\"x\":[\"\",{}]},\"path\":\"\"}" },
        { "shred_file", "{\"passes\":\"3\",\"path\":\"/a\"}" },
        { "write_file", big.p },
        { "write_file", "{\"path\":\"/a\",\"n\":1.0E2,\"m\":[1.50,-0]}" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct gate_verdict v, w;
        struct sl_buf canon = { 0 };
        assert_int_equal(canon_write(&canon, parse(f, rows[i][1])), 0);
        decide(f, &f->gate, "local", rows[i][0], rows[i][1], true, NULL, NULL, NOW, &v);
        decide(f, &f->gate, "local", rows[i][0], canon.p, true, NULL, NULL, NOW, &w);
        assert_int_equal(v.action, GATE_ASK);
        assert_int_equal(w.action, GATE_ASK);
        assert_string_equal(v.text.p, w.text.p);
        if (i == 3)
            assert_non_null(strstr(v.text.p, " bytes, sha256 "));
        if (i == 4) {
            assert_non_null(strstr(v.text.p, "n (not declared in the policy): 100\n"));
            assert_non_null(strstr(v.text.p, "m (not declared in the policy): [1.5,0]\n"));
        }
        gate_verdict_free(&v);
        gate_verdict_free(&w);
        sl_buf_free(&canon);
    }
    sl_buf_free(&big);
}

static void test_question_shape(void **state)
{
    struct fixture *f = *state;
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", args_a, true, NULL, NULL, NOW, &v);
    struct json *res = parse(f, result_text(f, &v));
    gate_verdict_free(&v);
    struct json *reqs = json_get(res, "inputRequests");
    assert_int_equal(reqs->type, JSON_OBJECT);
    assert_int_equal(reqs->u.obj.n, 1);
    struct json *req = json_get(reqs, "sluice.confirm");
    assert_true(json_str_is(json_get(req, "method"), "elicitation/create"));
    struct json *params = json_get(req, "params");
    assert_true(json_str_is(json_get(params, "mode"), "form"));
    struct json *schema = json_get(params, "requestedSchema");
    assert_true(json_str_is(json_get(json_get(json_get(schema, "properties"), "approve"),
                                     "type"), "boolean"));
    struct json *msg = json_get(params, "message");
    assert_non_null(strstr(msg->u.str.p, "write_file"));
    assert_non_null(strstr(msg->u.str.p, "/tmp/a.txt"));
    assert_non_null(strstr(msg->u.str.p, "hello"));
    /* The state carries no argument value. */
    struct json *st = json_get(res, "requestState");
    assert_null(strstr(st->u.str.p, "hello"));
}

/* ===== approval fatigue, through the store ===== */

static const char fatigue_policy[] =
    "version: 1\n"
    "defaults:\n"
    "  max_open_confirmations: 2\n"
    "  max_questions_per_minute: 3\n"
    "tools:\n"
    "  write_file:\n"
    "    action: confirm\n";

/* What the session does with a new question (session_spend.c ask_start), with asks.c (the
 * memory store's engine) standing in for the store: OK asks it, SAME hands out the open one,
 * any other status refuses. */
static void store_ask_emulated(struct asks *a, const struct gate_input *in, uint64_t now,
                               struct gate_verdict *v)
{
    if (!v->ask.check)
        return;
    struct sl_str same = SL_STR_NULL;
    enum asks_status st = asks_check(a, in->principal, in->tool, v->digest, now,
                                     v->ask.max_open, v->ask.per_minute, &same);
    if (st == ASKS_OK) {
        asks_record(a, in->principal, in->tool, v->digest, v->ask.nonce, now, v->ask.exp,
                    sl_buf_str(&v->ask.blob));
        v->ask.check = false;
    } else if (st == ASKS_SAME) {
        assert_true(gate_share_question(v, same));
    } else {
        gate_refuse_ask(v, st);
    }
}

/* Round one, then the store's say: returns the action and, for a question, its state. */
static enum gate_action fatigue_ask(struct fixture *f, const struct policy *pol, struct asks *a,
                                    const char *principal, const char *args, uint64_t now,
                                    char **state, char **text)
{
    struct gate_input in = { .policy = pol, .principal = sl_str_c(principal),
                             .tool = SL_STR("write_file"), .args = parse(f, args),
                             .can_elicit_form = true };
    struct gate_verdict v;
    gate_decide(&f->gate, &in, now, &v);
    assert_int_equal(v.action, GATE_ASK);
    assert_true(v.ask.check);
    assert_int_equal(v.ask.max_open, 2);
    assert_int_equal(v.ask.per_minute, 3);
    assert_true(v.ask.exp > now);
    store_ask_emulated(a, &in, now, &v);
    assert_false(v.ask.check);
    enum gate_action act = v.action;
    *state = sl_arena_strndup(f->arena, v.state.p ? v.state.p : "", v.state.len);
    *text = sl_arena_strndup(f->arena, v.text.p ? v.text.p : "", v.text.len);
    if (act == GATE_ASK)
        assert_string_equal(v.reason, v.shared ? "same-open-question" : "first-round");
    gate_verdict_free(&v);
    return act;
}

/* The gate no longer counts questions itself: it hands the store what to check and record, and
 * turns the store's answer into the question, the shared question, or the refusal. */
static void test_fatigue_through_store(void **state)
{
    struct fixture *f = *state;
    struct policy *pol;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("fatigue", fatigue_policy, sizeof(fatigue_policy) - 1,
                                        &pol, &err), 0);
    struct asks *a = asks_new();
    char *s1, *s2, *s3, *t1, *t2, *t3;
    const char *args_x = "{\"path\":\"/x\",\"content\":\"1\"}";
    assert_int_equal(fatigue_ask(f, pol, a, "local", args_x, NOW, &s1, &t1), GATE_ASK);
    /* identical (keys reordered): the same question, state and message */
    assert_int_equal(fatigue_ask(f, pol, a, "local", "{\"content\":\"1\",\"path\":\"/x\"}", NOW,
                                 &s2, &t2), GATE_ASK);
    assert_string_equal(s2, s1);
    assert_string_equal(t2, t1);
    /* another principal: its own question */
    assert_int_equal(fatigue_ask(f, pol, a, "remote", args_x, NOW, &s3, &t3), GATE_ASK);
    assert_string_not_equal(s3, s1);
    char *sy, *ty;
    assert_int_equal(fatigue_ask(f, pol, a, "local", "{\"path\":\"/y\"}", NOW, &sy, &ty),
                     GATE_ASK);
    /* two open: the third is refused, and says which limit */
    assert_int_equal(fatigue_ask(f, pol, a, "local", "{\"path\":\"/z\"}", NOW, &s3, &t3),
                     GATE_REFUSE);
    assert_non_null(strstr(t3, "limit 2, defaults.max_open_confirmations"));
    assert_string_equal(s3, "");
    /* the first and the second answered (declined): their places are free; each spend says it
     * answers a question, and session_spend.c then closes it (store_answered) */
    const char *answered[][2] = { { s1, args_x }, { sy, "{\"path\":\"/y\"}" } };
    for (size_t i = 0; i < 2; i++) {
        struct gate_verdict v;
        struct gate_input in = {
            .policy = pol, .principal = SL_STR("local"), .tool = SL_STR("write_file"),
            .args = parse(f, answered[i][1]), .can_elicit_form = true,
            .request_state = json_new_string(f->arena, answered[i][0], strlen(answered[i][0])),
            .input_responses = parse(f, "{\"sluice.confirm\":{\"action\":\"decline\"}}") };
        gate_decide(&f->gate, &in, NOW + 1, &v);
        assert_int_equal(v.action, GATE_REFUSE);
        assert_true(v.spend && v.answers);
        assert_false(v.ask.check);
        asks_answered(a, v.nonce);
        gate_verdict_free(&v);
    }
    assert_int_equal(fatigue_ask(f, pol, a, "local", "{\"path\":\"/z\"}", NOW + 1, &s3, &t3),
                     GATE_ASK);
    /* one open, but three asked within the minute: the fourth is over the rate */
    assert_int_equal(fatigue_ask(f, pol, a, "local", args_x, NOW + 2, &s3, &t3), GATE_REFUSE);
    assert_non_null(strstr(t3, "limit 3, defaults.max_questions_per_minute"));
    /* a minute later it is asked */
    assert_int_equal(fatigue_ask(f, pol, a, "local", args_x, NOW + 61, &s3, &t3), GATE_ASK);
    asks_free(a);
    policy_unref(pol);
}

/* The refusals and the shared question, as the gate words them. */
static void test_fatigue_verdicts(void **state)
{
    struct fixture *f = *state;
    static const struct {
        enum asks_status st;
        const char *reason, *text;
    } rows[] = {
        { ASKS_OPEN, "too-many-open", "max_open_confirmations" },
        { ASKS_RATE, "too-many-questions", "max_questions_per_minute" },
        { ASKS_FULL, "too-many-questions", "too many open confirmations" },
        { ASKS_PRINCIPALS_FULL, "too-many-principals", "too many principals" },
        { ASKS_OK, "internal-error", "could not prepare" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct gate_verdict v;
        decide(f, &f->gate, "local", "write_file", args_a, true, NULL, NULL, NOW, &v);
        assert_true(v.ask.check);
        gate_refuse_ask(&v, rows[i].st);
        assert_int_equal(v.action, GATE_REFUSE);
        assert_int_equal(v.decision, AUDIT_REFUSED);
        assert_false(v.ask.check);
        assert_int_equal(v.state.len, 0);
        assert_string_equal(v.reason, rows[i].reason);
        assert_non_null(strstr(result_text(f, &v), rows[i].text));
        gate_verdict_free(&v);
    }
    /* A blob that is not a question (a shared store holds what anyone wrote): fail closed. */
    static const char *const bad[] = { "", "no newline", "\nmessage only" };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct gate_verdict v;
        decide(f, &f->gate, "local", "write_file", args_a, true, NULL, NULL, NOW, &v);
        assert_false(gate_share_question(&v, sl_str_c(bad[i])));
        assert_int_equal(v.action, GATE_REFUSE);
        assert_string_equal(v.reason, "store-unavailable");
        gate_verdict_free(&v);
    }
    struct gate_verdict v;
    decide(f, &f->gate, "local", "write_file", args_a, true, NULL, NULL, NOW, &v);
    assert_true(gate_share_question(&v, SL_STR("STATE\nthe message")));
    assert_int_equal(v.action, GATE_ASK);
    assert_true(v.shared);
    assert_false(v.ask.check);
    assert_string_equal(v.state.p, "STATE");
    assert_string_equal(v.text.p, "the message");
    gate_verdict_free(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_name_variants, setup, teardown),
        cmocka_unit_test(test_hides_listed),
        cmocka_unit_test_setup_teardown(test_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swapped_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_and_missing_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reordered_keys_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_for_another_tool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_for_another_principal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_for_another_upstream_or_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expired_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replayed_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_from_another_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_digest_compared_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_full_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_declined_state_cannot_be_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tampered_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_form_capability, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy_actions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_question_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_integers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_upstream_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_digest_only_when_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_argument_size_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_question_shows_canonical_form, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_question_lists_every_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_question_facts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_question_same_as_canonical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fatigue_through_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fatigue_verdicts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
