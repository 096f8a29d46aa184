/* fuzz_gate.c: the gate's round two (gate.c), the decision that lets a gated call through.
 *
 * Each input is one retry of a confirmed call. Set-up as tests/unit/test_gate.c does it: a
 * policy where write_file needs confirmation, a key ring, a replay store. For every input a real
 * round one is run for a fixed call (write_file with ORIGINAL_ARGS, principal "local"), which
 * mints a real requestState; then the fuzzer's retry is decided. The input is text:
 *   line 1  four control bytes: [0] bit 0: the client declared form elicitation;
 *           [1] % 6: the requestState: 0 the minted one, 1 the minted one edited (the rest of the
 *           input is (u16 position, byte) pairs: 0 cuts there, 1 appends the next byte, else XOR),
 *           2 the rest of the input as the string's bytes, 3 the rest parsed as any JSON value,
 *           4 none, 5 the minted one with the rest appended;
 *           [2] bits 0-1: principal (0,1 local, 2 remote, 3 Local); bits 2-3: tool (0,1
 *           write_file, 2 delete_file, 3 edit_file: all confirm tools);
 *           [3]: the clock, NOW + [3] - 32 seconds (the state lives 60 s)
 *   line 2  params.arguments as JSON (empty: absent)
 *   line 3  params.inputResponses as JSON (empty: absent)
 *   rest    the state material for modes 1, 2, 3, 5
 * (Lines 2 and 3 that do not parse are not a retry a client can send; the input is skipped.)
 *
 * The oracle is written without the gate's code. The verdict may be GATE_FORWARD only if ALL of:
 *   - the answer is exactly inputResponses["sluice.confirm"] = an object whose "action" is the
 *     string "accept" and whose "content" is an object whose "approve" is JSON true;
 *   - the requestState is a string holding exactly the minted bytes;
 *   - the arguments equal ORIGINAL_ARGS as JSON values (objects unordered, numbers as doubles);
 *   - principal and tool are the ones the state was minted for, the clock is before its expiry,
 *     and the client declared form elicitation;
 * and then it must carry exactly the canonical ORIGINAL_ARGS. Any other forward abort()s.
 * Each input is then replayed: a state forwards at most once. And the nonce must be spent by
 * exactly the retries that reach the answer (state, binding, time, arguments and capability
 * good, and a "sluice.confirm" answer of any kind): afterwards the exact accept with the
 * original arguments forwards iff nothing spent the nonce before. */
#include "fuzz.h"

#include <math.h>

#include "canon.h"
#include "gate.h"
#include "replay.h"
#include "jsonrpc.h"

#define NOW 1800000000u
#define TTL 60

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
    "  edit_file:\n"
    "    action: confirm\n"
    "    fallback: token\n"
    "  drop_table:\n"
    "    action: deny\n";

static const char ORIGINAL_ARGS[] =
    "{\"path\":\"/tmp/a.txt\",\"content\":\"hello\\nworld\",\"n\":[1,2.5,-0.001,{\"deep\":null,"
    "\"flag\":true}],\"u\":\"\\u00e9\\ud83d\\ude00\"}";

static const char EXACT_ACCEPT[] =
    "{\"sluice.confirm\":{\"action\":\"accept\",\"content\":{\"approve\":true}}}";

static const uint8_t state_key[32] = "fuzz_gate: the state sealing key";

static struct policy *policy;
static struct seal_keyring *keys;
static struct sl_arena *fixed;      /* ORIGINAL_ARGS and EXACT_ACCEPT, parsed once */
static struct json *original, *exact_accept;
static struct sl_buf original_canon;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct json *parse(struct sl_arena *a, const char *p, size_t len)
{
    struct json *v;
    char err[160];
    return json_parse(p, len, a, &v, err, sizeof(err)) == 0 ? v : NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct policy_error err;
    FUZZ_CHECK(policy_load_buffer("fuzz", policy_text, sizeof(policy_text) - 1, &policy, &err) == 0);
    keys = seal_keyring_new(state_key, sizeof(state_key), NULL, 0);
    fixed = sl_arena_new();
    original = parse(fixed, ORIGINAL_ARGS, sizeof(ORIGINAL_ARGS) - 1);
    exact_accept = parse(fixed, EXACT_ACCEPT, sizeof(EXACT_ACCEPT) - 1);
    FUZZ_CHECK(keys && original && exact_accept && canon_write(&original_canon, original) == 0);
    return 0;
}

/* ===== the oracle's own reading of JSON (not json_get: the gate uses that) ===== */

static const struct json *member(const struct json *o, const char *key)
{
    if (o == NULL || o->type != JSON_OBJECT)
        return NULL;
    size_t len = strlen(key);
    for (size_t i = 0; i < o->u.obj.n; i++)
        if (o->u.obj.v[i].key.len == len && memcmp(o->u.obj.v[i].key.p, key, len) == 0)
            return o->u.obj.v[i].val;
    return NULL;
}

static bool is_exact_accept(const struct json *responses)
{
    const struct json *answer = member(responses, "sluice.confirm");
    const struct json *action = member(answer, "action");
    const struct json *content = member(answer, "content");
    const struct json *approve = member(content, "approve");
    return answer && answer->type == JSON_OBJECT && action && action->type == JSON_STRING &&
           action->u.str.len == 6 && memcmp(action->u.str.p, "accept", 6) == 0 && content &&
           content->type == JSON_OBJECT && approve && approve->type == JSON_BOOL && approve->u.b;
}

/* ===== one retry ===== */

struct retry {
    bool form;
    struct sl_str principal, tool;
    uint64_t now;
    const struct json *args, *responses, *state;
};

/* The memory store's table, standing in for the store the session spends nonces in. */
static struct replay *spent_table;

static void decide(const struct gate_ctx *g, const struct retry *r, struct gate_verdict *v)
{
    struct gate_input in = {
        .policy = policy,
        .principal = r->principal,
        .tool = r->tool,
        .args = r->args,
        .can_elicit_form = r->form,
        .request_state = r->state,
        .input_responses = r->responses,
    };
    gate_decide(g, &in, r->now, v);
    if (v->spend) { /* as session_spend.c: act only on a fresh nonce */
        enum replay_status rs = replay_record(spent_table, v->nonce, v->exp + 600, r->now);
        if (rs != REPLAY_FRESH)
            gate_refuse_spent(v, rs == REPLAY_SEEN ? GATE_SPENT_REPLAYED : GATE_SPENT_UNAVAILABLE);
    }
    FUZZ_CHECK(v->decision != AUDIT_NONE && v->reason != NULL);
    if (v->action != GATE_FORWARD)
        FUZZ_CHECK(v->args_json.len == 0);  /* only a forwarded call carries arguments */
    /* Every new question goes through the store's fatigue limits first (store_ask), carrying
     * the very question an identical call would be handed (who asks is the caller's input). */
    FUZZ_CHECK(v->ask.check == (v->action == GATE_ASK));
    if (v->ask.check) {
        const struct gate_ask *q = &v->ask;
        FUZZ_CHECK(q->exp > r->now && q->max_open > 0 && q->per_minute > 0);
        FUZZ_CHECK(q->blob.len == v->state.len + 1 + v->text.len &&
                   memcmp(q->blob.p, v->state.p, v->state.len) == 0 &&
                   q->blob.p[v->state.len] == '\n' &&
                   memcmp(q->blob.p + v->state.len + 1, v->text.p, v->text.len) == 0);
    }
}

/* The minted requestState of a real round one for the fixed call. */
static void round_one(const struct gate_ctx *g, struct sl_arena *a, struct sl_buf *minted)
{
    struct retry r = { .form = true, .principal = SL_STR("local"), .tool = SL_STR("write_file"),
                       .now = NOW, .args = original };
    struct gate_verdict v;
    decide(g, &r, &v);
    FUZZ_CHECK(v.action == GATE_ASK);
    FUZZ_CHECK(v.state.len > 0);
    sl_buf_put(minted, v.state.p, v.state.len);
    gate_verdict_free(&v);
}

static struct json *string_value(struct sl_arena *a, const char *p, size_t len)
{
    struct json *s = sl_arena_alloc(a, sizeof(*s));
    s->type = JSON_STRING;
    s->u.str = (struct sl_str){ sl_arena_strndup(a, p ? p : "", len), len };
    return s;
}

/* The requestState the fuzzer asks for (see the file comment), or NULL for none. */
static const struct json *make_state(struct sl_arena *a, unsigned mode, const struct sl_buf *minted,
                                     struct fuzz_in *rest, bool *skip)
{
    struct sl_buf b = { 0 };
    struct json *s = NULL;
    switch (mode) {
    case 0:
        s = string_value(a, minted->p, minted->len);
        break;
    case 1:
        sl_buf_put(&b, minted->p, minted->len);
        while (rest->len >= 3 && b.len > 0) {
            size_t at = fuzz_u16(rest) % b.len;
            uint8_t x = fuzz_u8(rest);
            if (x == 0)
                b.len = at;
            else if (x == 1)
                sl_buf_putc(&b, (char)fuzz_u8(rest));
            else
                b.p[at] = (char)(b.p[at] ^ x);
        }
        s = string_value(a, b.p, b.len);
        break;
    case 2:
        s = string_value(a, (const char *)rest->p, rest->len);
        break;
    case 3:
        s = parse(a, (const char *)rest->p, rest->len);
        *skip = s == NULL;
        break;
    case 4:
        break;
    default:
        sl_buf_put(&b, minted->p, minted->len);
        sl_buf_put(&b, rest->p, rest->len);
        s = string_value(a, b.p, b.len);
        break;
    }
    sl_buf_free(&b);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = { data, size };
    const uint8_t *ctl, *args_text, *resp_text;
    size_t nctl = fuzz_line(&in, &ctl);
    size_t nargs = fuzz_line(&in, &args_text);
    size_t nresp = fuzz_line(&in, &resp_text);
    uint8_t c[4] = { 0 };
    memcpy(c, ctl, nctl < 4 ? nctl : 4);

    struct sl_arena *a = sl_arena_new();
    static const uint8_t origin[SEAL_ORIGIN_LEN];
    spent_table = replay_memory_new(8, 0);
    struct gate_ctx g = { .keys = keys, .origin = origin,
                          .upstream_id = SL_STR("stdio:fuzz"), .server_name = SL_STR("fuzz") };
    struct sl_buf minted = { 0 };
    struct gate_verdict v1, v2, v3;
    static const char *const principals[] = { "local", "local", "remote", "Local" };
    static const char *const tools[] = { "write_file", "write_file", "delete_file", "edit_file" };
    struct retry r = {
        .form = c[0] & 1,
        .principal = sl_str_c(principals[c[2] & 3]),
        .tool = sl_str_c(tools[(c[2] >> 2) & 3]),
        .now = NOW + c[3] - 32,
    };
    bool skip = false;
    if (nargs > 0 && (r.args = parse(a, (const char *)args_text, nargs)) == NULL)
        skip = true;
    if (nresp > 0 && (r.responses = parse(a, (const char *)resp_text, nresp)) == NULL)
        skip = true;
    if (!skip)
        round_one(&g, a, &minted);
    if (!skip)
        r.state = make_state(a, c[1] % 6, &minted, &in, &skip);
    if (skip)
        goto out;

    struct json empty = { .type = JSON_OBJECT };
    bool state_ok = r.state && r.state->type == JSON_STRING && sl_str_eq(r.state->u.str,
                                                                          sl_buf_str(&minted));
    bool bound = sl_str_eq_c(r.principal, "local") && sl_str_eq_c(r.tool, "write_file");
    bool in_time = r.now < NOW + TTL;
    bool args_ok = fuzz_same_value(r.args ? r.args : &empty, original);
    bool answer = member(r.responses, "sluice.confirm") != NULL;
    bool may_forward = is_exact_accept(r.responses) && state_ok && bound && in_time && args_ok &&
                       r.form;

    decide(&g, &r, &v1);
    if (v1.action == GATE_FORWARD) {
        if (!may_forward) {
            fprintf(stderr, "FORWARDED: form %d state_ok %d bound %d in_time %d args_ok %d "
                    "exact_accept %d (reason %s)\n", r.form, state_ok, bound, in_time, args_ok,
                    is_exact_accept(r.responses), v1.reason);
            FUZZ_CHECK(!"the gate forwarded a retry it must refuse");
        }
        FUZZ_CHECK(v1.gated && v1.decision == AUDIT_CLIENT_ACCEPTED);
        FUZZ_CHECK(v1.args_json.len == original_canon.len &&
                   memcmp(v1.args_json.p, original_canon.p, original_canon.len) == 0);
    }

    /* The same retry again: one state, one use. */
    decide(&g, &r, &v2);
    FUZZ_CHECK(!(v1.action == GATE_FORWARD && v2.action == GATE_FORWARD));

    /* The nonce is spent by every retry that reaches the answer, and by no other. */
    bool spent = state_ok && bound && in_time && args_ok && r.form && answer;
    struct retry good = { .form = true, .principal = SL_STR("local"), .tool = SL_STR("write_file"),
                          .now = NOW + 1, .args = original, .responses = exact_accept,
                          .state = string_value(a, minted.p, minted.len) };
    decide(&g, &good, &v3);
    if ((v3.action == GATE_FORWARD) == spent) {
        fprintf(stderr, "after a retry that %s reach the answer, the exact accept %s forwarded "
                "(first verdict: %s)\n", spent ? "did" : "did not",
                v3.action == GATE_FORWARD ? "was" : "was not", v1.reason);
        FUZZ_CHECK(!"the nonce was spent when it must not be, or not when it must");
    }
    gate_verdict_free(&v1);
    gate_verdict_free(&v2);
    gate_verdict_free(&v3);
out:
    sl_buf_free(&minted);
    replay_free(spent_table);
    sl_arena_free(a);
    return 0;
}
