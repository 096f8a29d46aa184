/* session.c: a client's messages, from its line to its reply. */
#include "session.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include <openssl/crypto.h>

#include "chan.h" /* CHAN_HIGH_WATER */
#include "lint.h"
#include "metrics.h"
#include "msg.h"
#include "observe.h"
#include "rules.h"
#include "log.h"

/* A request forwarded upstream and not yet answered. It lives in its message's arena, and owns
 * the message: the request's own strings and the params as sent need no copies. */
struct fwd {
    struct session *s;
    struct jsonrpc_msg *msg;  /* the client's request, owned */
    struct up_request *req;
    char *client_id;          /* the client's id as JSON text, echoed byte for byte */
    char *method;
    bool modern;              /* the client spoke 2026-07-28 on this request */
    bool is_call;             /* tools/call: audited when the upstream answers */
    char *tool;
    size_t tool_len;
    bool has_digest;
    uint8_t digest[32];
    const char *decision;
    const char *reason;
    bool gated;               /* an approved gated call: an upstream question is wrapped */
    bool observed;            /* its tool observes: later rounds need the observation again */
    uint8_t observation[32];
    unsigned ttl;
    /* A handshake-era client and a 2026-07-28 upstream: the upstream's own questions are asked
     * as requests to the client, and sluice retries with the answers (PROTOCOL.md §7.7). */
    const struct json *sent;  /* the params as forwarded (in msg's arena), kept for a retry */
    struct sl_arena *round;   /* this round's answers, and its state */
    struct json *answers;     /* inputResponses being collected */
    struct json *round_state; /* the upstream's requestState, or NULL */
    unsigned pending;         /* questions of this round still unanswered */
    unsigned rounds;
    struct fwd *prev, *next;
};

#define FWD_MAX_ROUNDS 8      /* upstream question rounds per call (as SDK2's shim) */

/* A tools/call held while sluice asks a handshake-era client's person (PROTOCOL.md §4.2): the
 * "blocked client" of redis. Three ways out, each through hold_release: the answer, the timer, the
 * client cancelling or leaving. */
struct held {
    struct session *s;
    struct jsonrpc_msg *msg;        /* the held request, owned */
    char *client_id;
    char elicit_id[40];             /* our elicitation/create id, "sluice-e-N" */
    struct json *state;             /* the sealed state of this question (in msg's arena) */
    const struct json *progress_token;
    unsigned progress;
    bool has_digest;
    uint8_t digest[32];             /* of the canonical arguments, for the audit journal */
    struct event *timeout_ev, *progress_ev;
    struct held *prev, *next;
};

/* A request from a handshake-era upstream (elicitation, sampling, roots) passed on to the client
 * under an id of ours, so its answer can go back under the upstream's id. */
struct relayed {
    char id[32];                    /* "sluice-u-N", what the client sees */
    char *up_id;                    /* the upstream's id, JSON text; or NULL with: */
    struct fwd *fwd;                /* ... the call whose 2026-07-28 round this question is */
    char *key;                      /* ... and its key in inputRequests */
    struct relayed *next;
};

#define SESSION_MAX_RELAYED 256

struct observation;

struct session {
    struct session_env *env;
    struct event_base *base;
    struct observation *observations; /* gated calls waiting for their observe call */
    struct jsonrpc_msg *stash;      /* the first message, held until the upstream is initialized */
    struct relayed *relayed;
    size_t nrelayed;
    uint64_t next_relay;
    struct held *helds;             /* calls waiting for a person */
    uint64_t next_elicit;
    bool legacy_form;               /* the handshake-era client declared form elicitation */
    bool legacy_mode_field;         /* ... on 2025-11-25, where requests carry "mode" */
    const struct session_io *io;
    void *io_arg;
    char *principal;
    char principal_buf[96];       /* principal, when it fits ("bearer:" and 64 hex digits do) */
    struct fwd *fwds;             /* forwarded, unanswered */
    struct sl_arena *caps_arena;  /* a legacy client's initialize capabilities */
    struct json *legacy_caps;
    bool started;
    bool up_ready;                /* session_upstream_ready was called: lines no longer wait */
};

/* ===== writing to the client ===== */

/* rel: the JSON text of the client request the message belongs to, or NULL when it belongs to
 * none; final: it is that request's response. The front uses them to pick the HTTP stream. */
static void send_coded(struct session *s, struct sl_str rel, bool final, int code,
                       struct sl_str line)
{
    s->io->send(s->io_arg, rel, final, code, line);
    session_update_interest(s);
}

static void send_line(struct session *s, struct sl_str rel, bool final, struct sl_str line)
{
    s->io->send(s->io_arg, rel, final, 0, line);
    session_update_interest(s);
}

/* Messages are built on the stack (LINE_STACK bytes, more on the heap) and copied out by
 * send_line. */
#define LINE_STACK 2048

static void reply_result(struct session *s, struct sl_str id, struct sl_str result_json)
{
    char store[LINE_STACK];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    jsonrpc_write_result(&b, id, result_json);
    send_line(s, id, true, sl_buf_str(&b));
    sl_buf_free(&b);
}

static void reply_error(struct session *s, struct sl_str id, int code, const char *message,
                        const char *data)
{
    char store[LINE_STACK];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    jsonrpc_write_error(&b, id, code, message, data);
    send_coded(s, id, true, code, sl_buf_str(&b));
    sl_buf_free(&b);
}

static void reply_value(struct session *s, struct sl_str id, const struct json *result)
{
    char store[LINE_STACK];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    jsonrpc_write_result_value(&b, id, result);
    send_line(s, id, true, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* A tool error (isError: true) with text, for a client of that era. */
static void reply_tool_error(struct session *s, struct sl_str id, bool modern, const char *text)
{
    char store[LINE_STACK];
    struct sl_buf r;
    sl_buf_on(&r, store, sizeof(store));
    msg_tool_error(&r, modern, sl_str_c(text));
    reply_result(s, id, sl_buf_str(&r));
    sl_buf_free(&r);
}

/* ===== audit ===== */

static uint64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static void audit(struct session *s, struct sl_str tool, const uint8_t *digest,
                  const char *decision, const char *reason, const char *upstream,
                  const char *id)
{
    metrics_decision(decision);
    if (s->env->audit == NULL)
        return; /* no journal: not even the clock is read */
    struct audit_record r = {
        .time_ms = now_ms(),
        .principal = s->principal,
        .tool = tool,
        .args_digest = digest,
        .decision = decision,
        .reason = reason,
        .upstream = upstream,
        .request_id = id,
    };
    if (audit_write(s->env->audit, &r) != 0)
        sl_error("cannot write the audit journal");
}

/* ===== replies from the upstream ===== */

static void relayed_free(struct session *s, struct relayed **pp)
{
    struct relayed *r = *pp;
    *pp = r->next;
    s->nrelayed--;
    free(r->up_id);
    free(r->key);
    free(r);
}

/* The questions sent for f's round are void once f is gone. */
static void drop_relayed_for(struct session *s, struct fwd *f)
{
    struct relayed **pp = &s->relayed;
    while (*pp) {
        if ((*pp)->fwd == f)
            relayed_free(s, pp);
        else
            pp = &(*pp)->next;
    }
}

static void fwd_free(struct fwd *f)
{
    drop_relayed_for(f->s, f);
    sl_arena_free(f->round);
    if (f->prev)
        f->prev->next = f->next;
    else
        f->s->fwds = f->next;
    if (f->next)
        f->next->prev = f->prev;
    jsonrpc_msg_free(f->msg); /* f with it */
}

/* asks: the result is an input_required round (the caller looked once for all). */
static const char *call_outcome(const struct jsonrpc_msg *m, bool asks)
{
    if (m == NULL)
        return "no-response";
    if (m->kind == JSONRPC_ERROR)
        return "error";
    if (asks)
        return "input-required";
    return json_is_true(json_get(m->result, "isError")) ? "tool-error" : "ok";
}

/* True iff v is a number written exactly as code is (the literal, as the peer sent it). */
static bool number_is(const struct json *v, int code)
{
    char text[16];
    snprintf(text, sizeof(text), "%d", code);
    return v && v->type == JSON_NUMBER && sl_str_eq_c(v->u.num, text);
}

static void relay_error(struct fwd *f, struct jsonrpc_msg *m)
{
    struct json *code = json_get(m->error, "code");
    /* 2026 servers never emit MCP_RESOURCE_NOT_FOUND; it became JSONRPC_INVALID_PARAMS. */
    if (f->modern && number_is(code, MCP_RESOURCE_NOT_FOUND)) {
        char text[16];
        snprintf(text, sizeof(text), "%d", JSONRPC_INVALID_PARAMS);
        json_set(m->arena, m->error, "code", json_new_number(m->arena, text));
    }
    struct sl_buf b = { 0 };
    msg_error_value(&b, sl_str_c(f->client_id), m->error);
    send_coded(f->s, sl_str_c(f->client_id), true,
               code && code->type == JSON_NUMBER ? atoi(sl_arena_strndup(m->arena, code->u.num.p,
                                                                         code->u.num.len)) : 0,
               sl_buf_str(&b));
    sl_buf_free(&b);
}

/* tools/list: without task support, and with defaults.hide_denied without the denied tools, for
 * every client alike
 * (the list depends only on the policy, never on the caller). Annotations are not consulted. */
void session_log_finding(void *arg, bool missing, const char *message)
{
    static struct sl_buf seen;
    (void)arg;
    (void)missing;
    if (seen.len > (64u << 10) || (seen.p && strstr(seen.p, message)))
        return;
    sl_buf_puts(&seen, message);
    sl_buf_putc(&seen, '\n');
    sl_warn("policy check: %s", message);
}

static struct json *filter_tools(struct session *s, struct jsonrpc_msg *m, struct json *res)
{
    const struct json *tools = json_get(res, "tools");
    if (tools == NULL || tools->type != JSON_ARRAY)
        return res;
    lint_check(s->env->policy, tools, false, session_log_finding, NULL);
    struct json *kept = json_new_array(m->arena);
    bool hide = policy_hide_denied(s->env->policy);
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        struct json *tool = tools->u.arr.v[i];
        const struct json *name = json_get(tool, "name");
        struct policy_decision d;
        if (hide && name && name->type == JSON_STRING) {
            policy_lookup(s->env->policy, name->u.str.p, name->u.str.len, &d);
            if (d.action == POLICY_DENY)
                continue;
        }
        if (json_get(tool, "execution")) { /* task support: see upstream_caps */
            tool = json_copy_object(m->arena, tool);
            json_del(tool, "execution");
        }
        json_push(m->arena, kept, tool);
    }
    struct json *r = json_copy_object(m->arena, res);
    json_set(m->arena, r, "tools", kept);
    return r;
}

/* The upstream asked its own question about an approved call (PROTOCOL.md §2.8): its state goes
 * inside ours, so the client's next round passes the gate again, bound to the same arguments. */
static int wrap_upstream_question(struct fwd *f, struct jsonrpc_msg *m)
{
    struct json *res = json_copy_object(m->arena, m->result);
    const struct json *st = json_get(res, "requestState");
    struct sl_str inner = st && st->type == JSON_STRING ? st->u.str : SL_STR("");
    struct sl_buf mine = { 0 };
    int rc = gate_wrap_upstream_state(f->s->env->gate, sl_str_c(f->s->principal),
                                      (struct sl_str){ f->tool, f->tool_len }, f->digest, f->ttl,
                                      gate_clock(), f->observed ? f->observation : NULL, inner,
                                      &mine);
    if (rc == 0) {
        json_set(m->arena, res, "requestState", json_new_string(m->arena, mine.p, mine.len));
        m->result = res;
    }
    sl_buf_free(&mine);
    return rc;
}

static int relay_round(struct fwd *f, struct jsonrpc_msg *m);

static void on_fwd_reply(struct jsonrpc_msg *m, const char *why, void *arg)
{
    struct fwd *f = arg;
    struct session *s = f->s;
    struct sl_str id = sl_str_c(f->client_id);
    f->req = NULL;
    bool asks = m && m->kind == JSONRPC_RESULT &&
                json_str_is(json_get(m->result, "resultType"), "input_required");
    if (asks && f->sent && f->rounds < FWD_MAX_ROUNDS && !f->observed && relay_round(f, m) == 0)
        return; /* the client is being asked; the call goes on */
    if (f->is_call)
        audit(s, (struct sl_str){ f->tool, f->tool_len }, f->has_digest ? f->digest : NULL,
              f->decision, f->reason, call_outcome(m, asks), f->client_id);
    if (m == NULL) {
        reply_error(s, id, JSONRPC_INTERNAL_ERROR, why, NULL);
    } else if (m->kind == JSONRPC_ERROR) {
        relay_error(f, m);
    } else {
        enum era up = upstream_era(s->env->up);
        if (asks && !f->modern) {
            /* A handshake-era client cannot carry a 2026-07-28 follow-up round. */
            reply_tool_error(s, id, false, "The server asked a follow-up question that sluice "
                                           "cannot relay on this handshake-era connection; the "
                                           "call did not complete.");
            f->req = NULL;
            fwd_free(f);
            return;
        }
        if (asks && f->gated && wrap_upstream_question(f, m) != 0) {
            reply_error(s, id, JSONRPC_INTERNAL_ERROR, "sluice could not seal the upstream's "
                        "question; the call must be started again", NULL);
            f->req = NULL;
            fwd_free(f);
            return;
        }
        struct json *res = m->result;
        if (strcmp(f->method, "tools/list") == 0)
            res = filter_tools(s, m, res);
        if (f->modern && up == ERA_LEGACY)
            res = era_result_to_modern(m->arena, sl_str_c(f->method), res);
        else if (!f->modern && up == ERA_MODERN)
            res = era_result_to_legacy(m->arena, res);
        reply_value(s, id, res);
    }
    f->req = NULL;
    fwd_free(f);
}

/* ===== the upstream's own rounds, for a handshake-era client ===== */

static const char *cap_for(struct sl_str method)
{
    if (sl_str_eq_c(method, "elicitation/create"))
        return "elicitation";
    if (sl_str_eq_c(method, "sampling/createMessage"))
        return "sampling";
    if (sl_str_eq_c(method, "roots/list"))
        return "roots";
    return NULL;
}

static struct json *copy_into(struct sl_arena *a, const struct json *v)
{
    struct sl_buf b = { 0 };
    struct json *out;
    char err[64];
    json_write(&b, v);
    SL_REQUIRE(json_parse(b.p, b.len, a, &out, err, sizeof(err)) == 0);
    sl_buf_free(&b);
    return out;
}

/* All answers are in: the same call again, with them and the upstream's state. */
static void retry_round(struct fwd *f)
{
    struct session *s = f->s;
    struct json *params = json_copy_object(f->round, f->sent);
    json_set(f->round, params, "inputResponses", f->answers);
    if (f->round_state)
        json_set(f->round, params, "requestState", f->round_state);
    f->req = upstream_request(s->env->up, sl_str_c(f->method), params, on_fwd_reply, f);
    if (f->req == NULL) {
        reply_error(s, sl_str_c(f->client_id), JSONRPC_INTERNAL_ERROR,
                    "the upstream server is not running", NULL);
        fwd_free(f);
    }
}

/* Asks the client each of the upstream's questions as a request of ours. Returns -1 (nothing
 * sent) when the client cannot answer one of them. */
static int relay_round(struct fwd *f, struct jsonrpc_msg *m)
{
    struct session *s = f->s;
    const struct json *reqs = json_get(m->result, "inputRequests");
    size_t n = reqs && reqs->type == JSON_OBJECT ? reqs->u.obj.n : 0;
    if (reqs && reqs->type != JSON_OBJECT)
        return -1;
    if (s->nrelayed + n > SESSION_MAX_RELAYED)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct json *q = reqs->u.obj.v[i].val;
        const struct json *method = json_get(q, "method");
        const char *cap = method && method->type == JSON_STRING ? cap_for(method->u.str) : NULL;
        if (cap == NULL || json_get(s->legacy_caps, cap) == NULL)
            return -1;
    }
    sl_arena_free(f->round);
    f->round = sl_arena_new();
    f->answers = json_new_object(f->round);
    const struct json *st = json_get(m->result, "requestState");
    f->round_state = st ? copy_into(f->round, st) : NULL;
    f->pending = (unsigned)n;
    f->rounds++;
    for (size_t i = 0; i < n; i++) {
        const struct json *q = reqs->u.obj.v[i].val;
        struct relayed *r = sl_xcalloc(1, sizeof(*r));
        snprintf(r->id, sizeof(r->id), "sluice-u-%llu", (unsigned long long)++s->next_relay);
        r->fwd = f;
        r->key = sl_xstrndup(reqs->u.obj.v[i].key.p, reqs->u.obj.v[i].key.len);
        r->next = s->relayed;
        s->relayed = r;
        s->nrelayed++;
        struct json *params = json_get(q, "params");
        if (params && params->type == JSON_OBJECT && !s->legacy_mode_field) {
            params = json_copy_object(m->arena, params); /* 2025-06-18 has no "mode" */
            json_del(params, "mode");
        }
        struct sl_buf b = { 0 }, pb = { 0 };
        if (params)
            json_write(&pb, params);
        msg_request(&b, r->id, json_get(q, "method")->u.str,
                    params ? sl_buf_str(&pb) : SL_STR_NULL);
        send_line(s, sl_str_c(f->client_id), false, sl_buf_str(&b));
        sl_buf_free(&pb);
        sl_buf_free(&b);
    }
    if (n == 0) /* a state-only round: retry at once */
        retry_round(f);
    return 0;
}

/* The client answered one question of an upstream round. */
static void round_answer(struct session *s, struct relayed **pp, struct jsonrpc_msg *m)
{
    struct relayed *r = *pp;
    struct fwd *f = r->fwd;
    if (m->kind == JSONRPC_ERROR) {
        reply_tool_error(s, sl_str_c(f->client_id), false, "The client could not answer the "
                         "server's question; the call did not complete.");
        if (f->is_call)
            audit(s, (struct sl_str){ f->tool, f->tool_len }, f->has_digest ? f->digest : NULL,
                  f->decision, f->reason, "input-required", f->client_id);
        fwd_free(f); /* drops r too */
        return;
    }
    /* Each question (a distinct key of the upstream's inputRequests) is answered once: its
     * relayed entry goes now. So the key is new, and appending keeps k answers O(k). */
    json_append_key(f->round, f->answers, sl_str_c(r->key), copy_into(f->round, m->result));
    relayed_free(s, pp);
    if (--f->pending == 0)
        retry_round(f);
}

/* ===== forwarding ===== */

/* Params as the upstream's era expects them. */
static const struct json *params_for_upstream(struct session *s, struct jsonrpc_msg *m,
                                              bool modern, const struct json *params)
{
    enum era up = upstream_era(s->env->up);
    if (modern && up == ERA_LEGACY)
        return era_strip_envelope(m->arena, params);
    if (!modern && up == ERA_MODERN)
        return era_add_envelope(m->arena, params, s->legacy_caps);
    return params;
}

/* The upstream's progress on a forwarded request (its token already restored to the client's):
 * on the stream of that request. */
static void on_fwd_progress(struct jsonrpc_msg *note, void *arg)
{
    struct fwd *f = arg;
    struct sl_buf b = { 0 };
    json_write(&b, note->root);
    send_line(f->s, sl_str_c(f->client_id), false, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* Sends request m upstream. Returns the forwarded request, which owns m from then on; or NULL
 * (the client got an error, and m is still the caller's). */
static struct fwd *forward(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                           bool modern, const struct json *params)
{
    struct sl_arena *a = m->arena;
    struct fwd *f = sl_arena_alloc(a, sizeof(*f));
    f->s = s;
    f->client_id = sl_arena_strndup(a, id.p, id.len);
    f->method = sl_arena_strndup(a, m->method.p, m->method.len);
    f->modern = modern;
    const struct json *sent = params_for_upstream(s, m, modern, params);
    if (!modern && upstream_era(s->env->up) == ERA_MODERN && sent && sent->type == JSON_OBJECT)
        f->sent = sent; /* the upstream may ask questions: the call is sent again with answers */
    f->req = upstream_request_progress(s->env->up, m->method, sent, on_fwd_reply,
                                       on_fwd_progress, f);
    if (f->req == NULL) {
        reply_error(s, sl_str_c(f->client_id), JSONRPC_INTERNAL_ERROR,
                    "the upstream server is not running", NULL);
        return NULL;
    }
    f->msg = m;
    f->next = s->fwds;
    if (s->fwds)
        s->fwds->prev = f;
    s->fwds = f;
    session_update_interest(s);
    return f;
}

/* ===== tools/call: the gate ===== */

static const char legacy_cannot_ask[] =
    "This tool needs a person's confirmation, and this client did not declare form elicitation "
    "(or has not initialized), so sluice cannot ask. The call was not run.";

/* True for the _meta members of a gated call that reach the upstream: the protocol's own (the
 * progress token and the io.modelcontextprotocol/ envelope). */
static bool meta_forwarded(struct sl_str key)
{
    static const char envelope[] = "io.modelcontextprotocol/";
    return sl_str_eq_c(key, "progressToken") ||
           (key.len >= sizeof(envelope) - 1 && memcmp(key.p, envelope, sizeof(envelope) - 1) == 0);
}

/* The params a gated call is forwarded with: the arguments that were hashed and shown, from the
 * same parse, replacing the client's; none of sluice's own fields (they would reach a modern
 * upstream as state of its own). When the client is answering the upstream's question, the
 * upstream gets its own state back and the client's answers to its keys.
 *
 * _meta: only the protocol's own members go on (meta_forwarded: progressToken and the keys that
 * start with io.modelcontextprotocol/). Every other member is dropped, sluice's token among them:
 * an upstream may act on a vendor key of _meta ("com.example/overwrite": true) that the person
 * was never shown, and binding such members into the state would only move the question. Since
 * nothing else is forwarded, round two cannot add what round one did not have. Ungated calls
 * keep the client's _meta as sent. */
static const struct json *approved_params(struct jsonrpc_msg *m, const struct gate_verdict *v)
{
    struct sl_arena *a = m->arena;
    struct json *p = json_new_object(a), *args;
    char err[64];
    SL_REQUIRE(json_parse(v->args_json.p, v->args_json.len, a, &args, err, sizeof(err)) == 0);
    json_set(a, p, "name", json_get(m->params, "name"));
    json_set(a, p, "arguments", args);
    struct json *meta = json_get(m->params, "_meta");
    if (meta && meta->type == JSON_OBJECT) {
        /* Filtered in one pass over a copy (its keys are distinct already): no lookup per
         * member, so a 10,000-member _meta costs 10,000 steps. */
        meta = json_copy_object(a, meta);
        size_t kept = 0;
        for (size_t i = 0; i < meta->u.obj.n; i++)
            if (meta_forwarded(meta->u.obj.v[i].key))
                meta->u.obj.v[kept++] = meta->u.obj.v[i];
        meta->u.obj.n = kept;
        json_set(a, p, "_meta", meta);
    }
    struct json *task = json_get(m->params, "task");
    if (task)
        json_set(a, p, "task", task);
    struct json *answers = json_get(m->params, "inputResponses");
    if (v->continued && answers && answers->type == JSON_OBJECT) {
        answers = json_copy_object(a, answers);
        json_del(answers, GATE_CONFIRM_KEY);
        json_set(a, p, "inputResponses", answers);
    }
    if (v->continued && v->upstream_state.len > 0)
        json_set(a, p, "requestState",
                 json_new_string(a, v->upstream_state.p, v->upstream_state.len));
    return p;
}

/* Returns true when the forwarded call took m (see forward). */
static bool forward_call(struct session *s, struct jsonrpc_msg *m, bool modern,
                         struct sl_str tool, const struct gate_verdict *v, const char *idc)
{
    const struct json *params = v->gated ? approved_params(m, v) : m->params;
    struct fwd *f = forward(s, m, sl_str_c(idc), modern, params);
    if (f == NULL) {
        audit(s, tool, v->has_digest ? v->digest : NULL, v->decision, v->reason, "error", idc);
        return false;
    }
    f->is_call = true;
    f->tool = sl_arena_strndup(m->arena, tool.p, tool.len);
    f->tool_len = tool.len;
    f->has_digest = v->has_digest;
    memcpy(f->digest, v->digest, sizeof(f->digest));
    f->decision = v->decision;
    f->reason = v->gated ? v->reason : v->rule;
    f->gated = v->gated;
    f->ttl = v->ttl;
    f->observed = v->observe != NULL;
    memcpy(f->observation, v->observed, sizeof(f->observation));
    return true;
}

/* Answers a verdict that does not forward, in the client's era (msg_verdict_result). */
static void refuse_call(struct session *s, struct sl_str id, struct sl_str tool,
                        const struct gate_verdict *v, bool modern)
{
    const uint8_t *digest = v->has_digest ? v->digest : NULL;
    char *idc = sl_xstrndup(id.p, id.len);
    audit(s, tool, digest, v->decision, v->gated ? v->reason : v->rule,
          "not-forwarded", idc);
    if (v->action == GATE_REFUSE_RPC) {
        reply_error(s, id, v->rpc_code, v->rpc_message, v->rpc_data);
    } else {
        struct sl_buf b = { 0 };
        msg_verdict_result(&b, v, modern);
        reply_result(s, id, sl_buf_str(&b));
        sl_buf_free(&b);
    }
    free(idc);
}

static void start_observation(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                              bool modern, struct gate_verdict *v);

/* ===== held calls (handshake-era clients) ===== */

static void send_progress(evutil_socket_t fd, short what, void *arg);

static void held_free(struct held *h)
{
    struct session *s = h->s;
    if (h->prev)
        h->prev->next = h->next;
    else
        s->helds = h->next;
    if (h->next)
        h->next->prev = h->prev;
    metrics_held(-1);
    event_free(h->timeout_ev);
    if (h->progress_ev)
        event_free(h->progress_ev);
    jsonrpc_msg_free(h->msg);
    free(h->client_id);
    free(h);
}

static struct sl_str held_tool(const struct held *h)
{
    return json_get(h->msg->params, "name")->u.str;
}

static const uint8_t *held_digest(const struct held *h)
{
    return h->has_digest ? h->digest : NULL;
}

/* Tells the client to stop asking (2025 lets either side cancel its own request). */
static void cancel_elicitation(struct held *h, const char *reason)
{
    struct sl_buf b = { 0 }, params = { 0 };
    sl_buf_puts(&params, "{\"requestId\":");
    json_write_string(&params, h->elicit_id, strlen(h->elicit_id));
    sl_buf_puts(&params, ",\"reason\":");
    json_write_string(&params, reason, strlen(reason));
    sl_buf_putc(&params, '}');
    msg_notification(&b, "notifications/cancelled", sl_buf_str(&params));
    send_line(h->s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&params);
    sl_buf_free(&b);
}

/* The held call's question stops counting as open (asks.h): a cancelled call must not block
 * the same call asked again, nor hold a place under max_open_confirmations. */
static void withdraw_question(struct held *h)
{
    struct asks *a = h->s->env->gate->asks;
    if (a && h->has_digest)
        asks_withdrawn(a, sl_str_c(h->s->principal), held_tool(h), h->digest);
}

static void refuse_held(struct held *h, const char *decision, const char *reason,
                        const char *text)
{
    audit(h->s, held_tool(h), held_digest(h), decision, reason, "not-forwarded", h->client_id);
    reply_tool_error(h->s, sl_str_c(h->client_id), false, text);
    held_free(h);
}

static void on_hold_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct held *h = arg;
    cancel_elicitation(h, "timeout");
    refuse_held(h, "refused", "timeout",
                "No answer came from the person in time. The call was not run.");
}

static void send_progress(evutil_socket_t fd, short what, void *arg)
{
    struct held *h = arg;
    struct sl_buf b = { 0 }, params = { 0 };
    sl_buf_puts(&params, "{\"progressToken\":");
    json_write(&params, h->progress_token);
    sl_buf_printf(&params, ",\"progress\":%u,\"message\":\"waiting for a person to confirm\"}",
                  ++h->progress);
    msg_notification(&b, "notifications/progress", sl_buf_str(&params));
    send_line(h->s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&params);
    sl_buf_free(&b);
}

#define HOLD_PROGRESS_SECONDS 10
#define SESSION_MAX_HELD 32   /* calls one client may have waiting for a person */

static size_t count_held(const struct session *s)
{
    size_t n = 0;
    for (const struct held *h = s->helds; h; h = h->next)
        n++;
    return n;
}

/* Holds m (taking ownership) and sends the question as our own elicitation/create. */
static void hold_call(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                      const struct gate_verdict *v)
{
    struct held *h = sl_xcalloc(1, sizeof(*h));
    h->s = s;
    h->msg = m;
    h->client_id = sl_xstrndup(id.p, id.len);
    h->has_digest = v->has_digest;
    memcpy(h->digest, v->digest, sizeof(h->digest));
    snprintf(h->elicit_id, sizeof(h->elicit_id), "sluice-e-%llu",
             (unsigned long long)++s->next_elicit);
    h->state = json_new_string(m->arena, v->state.p, v->state.len);
    struct sl_buf b = { 0 }, q = { 0 };
    /* 2025-06-18 has no "mode" */
    msg_question_params(&q, sl_buf_str(&v->text), s->legacy_mode_field);
    msg_request(&b, h->elicit_id, SL_STR("elicitation/create"), sl_buf_str(&q));
    sl_buf_free(&q);
    h->timeout_ev = evtimer_new(s->base, on_hold_timeout, h);
    struct timeval tv = { (time_t)v->ttl, 0 };
    evtimer_add(h->timeout_ev, &tv);
    h->progress_token = json_get(json_get(m->params, "_meta"), "progressToken");
    if (h->progress_token) {
        h->progress_ev = event_new(s->base, -1, EV_PERSIST, send_progress, h);
        struct timeval every = { HOLD_PROGRESS_SECONDS, 0 };
        event_add(h->progress_ev, &every);
    }
    h->next = s->helds;
    if (s->helds)
        s->helds->prev = h;
    s->helds = h;
    metrics_held(+1);
    audit(s, held_tool(h), v->has_digest ? v->digest : NULL, v->decision, v->reason,
          "not-forwarded", h->client_id);
    send_line(s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* The client answered our elicitation/create: decide through the same gate as round two. */
static void hold_answer(struct held *h, struct jsonrpc_msg *answer)
{
    struct session *s = h->s;
    if (answer->kind == JSONRPC_ERROR)
        return refuse_held(h, "refused", "elicitation-error",
                           "The client could not ask the person (it answered with an error). "
                           "The call was not run.");
    struct json *responses = json_new_object(answer->arena);
    json_set(answer->arena, responses, GATE_CONFIRM_KEY, answer->result);
    struct gate_input in = {
        .policy = s->env->policy,
        .principal = sl_str_c(s->principal),
        .tool = held_tool(h),
        .args = json_get(h->msg->params, "arguments"),
        .can_elicit_form = true,
        .request_state = h->state,
        .input_responses = responses,
        .journal = s->env->audit != NULL,
    };
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    struct sl_str id = sl_str_c(h->client_id);
    if (v.action == GATE_FORWARD && v.recheck) {
        struct jsonrpc_msg *m = h->msg;
        h->msg = NULL; /* the observation owns the call now */
        start_observation(s, m, id, false, &v);
    } else if (v.action == GATE_FORWARD) {
        if (forward_call(s, h->msg, false, in.tool, &v, h->client_id))
            h->msg = NULL; /* the forwarded call owns it now */
    } else if (v.action != GATE_REFUSE) { /* expired meanwhile, or cannot happen: fail closed */
        refuse_held(h, "refused", v.reason ? v.reason : "internal-error",
                    "The confirmation is no longer valid. The call was not run.");
        gate_verdict_free(&v);
        return;
    } else {
        refuse_call(s, id, in.tool, &v, false);
    }
    gate_verdict_free(&v);
    held_free(h);
}

static struct held *find_held(struct session *s, const struct json *id, bool by_elicit)
{
    if (id == NULL || (id->type != JSON_STRING && id->type != JSON_NUMBER))
        return NULL;
    struct sl_buf b = { 0 };
    json_write(&b, id);
    struct held *h = s->helds;
    for (; h; h = h->next) {
        if (by_elicit ? (id->type == JSON_STRING && sl_str_eq_c(id->u.str, h->elicit_id))
                      : strcmp(h->client_id, b.p) == 0)
            break;
    }
    sl_buf_free(&b);
    return h;
}

/* ===== tools/call: the gate ===== */

/* Returns true when it kept m (a held call). */
/* tools/call params may hold only the members MCP defines, spelled exactly. Peers differ in
 * how they read near-misses (Go's encoding/json matches "Name" and "ARGUMENTS" to name and
 * arguments, a C parser stops a key at NUL), so a near-miss could make the upstream run another
 * tool or other arguments than the ones checked and shown. Refused, for every tool. */
static const char *call_params_problem(const struct json *params)
{
    static const char *const known[] = { "name", "arguments", "_meta", "task", "requestState",
                                         "inputResponses" };
    for (size_t i = 0; i < params->u.obj.n; i++) {
        struct sl_str k = params->u.obj.v[i].key;
        size_t j = 0;
        while (j < SL_ARRAY_LEN(known) && !sl_str_eq_c(k, known[j]))
            j++;
        if (j == SL_ARRAY_LEN(known))
            return "tools/call params may contain only name, arguments, _meta, task, "
                   "requestState and inputResponses";
    }
    const struct json *name = json_get(params, "name");
    if (name == NULL || name->type != JSON_STRING)
        return "params.name must be a string";
    if (memchr(name->u.str.p, '\0', name->u.str.len))
        return "params.name must not contain NUL";
    return NULL;
}

/* The gate's input for call m. caps: the request's declared capabilities (2026-07-28), else
 * the handshake-era client's. */
static void call_input(struct session *s, struct jsonrpc_msg *m, bool modern,
                       const struct json *caps, struct gate_input *in)
{
    *in = (struct gate_input){
        .policy = s->env->policy,
        .principal = sl_str_c(s->principal),
        .tool = json_get(m->params, "name")->u.str,
        .args = json_get(m->params, "arguments"),
        .can_elicit_form = modern ? era_caps_form_elicitation(caps) : s->legacy_form,
        .request_state = modern ? json_get(m->params, "requestState") : NULL,
        .input_responses = modern ? json_get(m->params, "inputResponses") : NULL,
        .token = json_get(json_get(m->params, "_meta"), GATE_TOKEN_META),
        .journal = s->env->audit != NULL,
    };
}

static const struct json *call_caps(struct jsonrpc_msg *m)
{
    return json_get(json_get(m->params, "_meta"), META_CLIENT_CAPS);
}

/* Acts on a verdict for call m (id: the client's id). Returns true when it kept m. Takes over
 * the verdict's buffers when it keeps them (v is then zeroed). */
static bool act(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
                struct gate_verdict *v)
{
    struct sl_str tool = json_get(m->params, "name")->u.str;
    const uint8_t *digest = v->has_digest ? v->digest : NULL;
    char *idc = sl_xstrndup(id.p, id.len);
    bool kept = false;
    if (v->action == GATE_OBSERVE || (v->action == GATE_FORWARD && v->recheck)) {
        start_observation(s, m, id, modern, v);
        kept = true;
    } else if (v->action == GATE_FORWARD) {
        kept = forward_call(s, m, modern, tool, v, idc);
    } else if (v->gated && !modern && v->action == GATE_ASK && v->shared) {
        audit(s, tool, digest, "refused", "same-call-waiting", "not-forwarded", idc);
        reply_tool_error(s, id, false, "An identical call is already waiting for the person's "
                                       "answer. This one was not run.");
    } else if (v->gated && !modern && v->action == GATE_ASK &&
               count_held(s) >= SESSION_MAX_HELD) {
        audit(s, tool, digest, "refused", "too-many-held", "not-forwarded", idc);
        reply_tool_error(s, id, false, "Too many calls are waiting for confirmation on this "
                                       "connection. The call was not run.");
    } else if (v->gated && !modern && v->action == GATE_ASK) {
        hold_call(s, m, id, v);
        kept = true;
    } else if (v->gated && !modern && v->action == GATE_REFUSE_RPC &&
               v->rpc_code == MCP_MISSING_CAPABILITY) {
        audit(s, tool, digest, "refused", "cannot-ask", "not-forwarded", idc);
        reply_tool_error(s, id, false, legacy_cannot_ask);
    } else {
        refuse_call(s, id, tool, v, modern);
    }
    free(idc);
    return kept;
}

static bool handle_call(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                        const struct era_envelope *env)
{
    const char *problem = call_params_problem(m->params);
    if (problem) {
        reply_error(s, id, JSONRPC_INVALID_PARAMS, problem, NULL);
        return false;
    }
    struct gate_input in;
    call_input(s, m, env->claimed, env->caps, &in);
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    bool kept = act(s, m, id, env->claimed, &v);
    gate_verdict_free(&v);
    return kept;
}

/* ===== observing before the question and after the accept ===== */

/* A gated call waiting for its observe call (see observe.h). */
struct observation {
    struct session *s;
    struct jsonrpc_msg *msg;        /* the call, owned */
    char *client_id;
    bool modern;
    struct gate_verdict v;          /* owned: GATE_OBSERVE, or the accepted GATE_FORWARD */
    struct up_request *req;
    struct event *timeout_ev;       /* an observe call gets OBSERVE_TIMEOUT_SECONDS */
    struct policy *policy;          /* a reference: o->v.observe points into it */
    struct observation *prev, *next;
};

#define OBSERVE_TIMEOUT_SECONDS 30

static void observation_free(struct observation *o)
{
    struct session *s = o->s;
    if (o->prev)
        o->prev->next = o->next;
    else
        s->observations = o->next;
    if (o->next)
        o->next->prev = o->prev;
    if (o->req && s->env->up)
        upstream_cancel(s->env->up, o->req, "the call was dropped");
    if (o->timeout_ev)
        event_free(o->timeout_ev);
    gate_verdict_free(&o->v);
    jsonrpc_msg_free(o->msg);
    free(o->client_id);
    policy_unref(o->policy);
    free(o);
}

static void observation_refuse(struct observation *o, const char *reason, const char *text)
{
    struct sl_str tool = json_get(o->msg->params, "name")->u.str;
    audit(o->s, tool, o->v.has_digest ? o->v.digest : NULL, "refused", reason, "not-forwarded",
          o->client_id);
    reply_tool_error(o->s, sl_str_c(o->client_id), o->modern, text);
    observation_free(o);
}

static void on_observed(struct jsonrpc_msg *reply, const char *why, void *arg)
{
    struct observation *o = arg;
    struct session *s = o->s;
    o->req = NULL;
    const struct policy_observe *ob = o->v.observe;
    const struct json *res = reply && reply->kind == JSONRPC_RESULT ? reply->result : NULL;
    bool ok = observe_ok(res);
    audit(s, sl_str_c(ob->tool), NULL, "observe", o->v.recheck ? "after-accept" : "before-question",
          reply == NULL ? "no-response" : !ok ? "error"
          : json_is_true(json_get(res, "isError")) ? "tool-error" : "ok", o->client_id);
    uint8_t digest[OBSERVE_DIGEST_LEN];
    if (!ok || observe_digest(res, digest) != 0)
        return observation_refuse(o, "observe-failed",
                                  "sluice could not read the current state with the observe "
                                  "tool, so the call was not run.");
    struct jsonrpc_msg *m = o->msg;
    struct sl_str id = sl_str_c(o->client_id);
    if (o->v.recheck) {
        if (CRYPTO_memcmp(digest, o->v.observed, sizeof(digest)) != 0)
            return observation_refuse(o, "changed-since-approved",
                                      "The target changed since you approved this call (what the "
                                      "observe tool reads is different now), so it was not run. "
                                      "Call the tool again to be asked about the current state.");
        if (forward_call(s, m, o->modern, json_get(m->params, "name")->u.str, &o->v,
                         o->client_id))
            o->msg = NULL; /* the forwarded call owns it now */
        observation_free(o);
        return;
    }
    struct gate_observation seen;
    struct sl_buf summary = { 0 };
    memcpy(seen.digest, digest, sizeof(digest));
    observe_summary(&summary, ob->tool, res, json_get(m->params, "arguments"));
    seen.summary = sl_buf_str(&summary);
    struct gate_input in;
    call_input(s, m, o->modern, call_caps(m), &in);
    in.observed = &seen;
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    sl_buf_free(&summary);
    if (v.action == GATE_OBSERVE) /* cannot happen with an observation; fail closed */
        v.action = GATE_REFUSE_RPC, v.rpc_code = JSONRPC_INTERNAL_ERROR,
        v.rpc_message = "internal error", v.rpc_data = NULL;
    if (act(s, m, id, o->modern, &v))
        o->msg = NULL; /* held or forwarded: that owns it now */
    gate_verdict_free(&v);
    observation_free(o);
}

static void on_observe_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct observation *o = arg;
    observation_refuse(o, "observe-timeout", "The observe tool did not answer in time, so the "
                                             "call was not run.");
}

#define SESSION_MAX_OBSERVING 32  /* gated calls of one client waiting for their observe call */

static void start_observation(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                              bool modern, struct gate_verdict *v)
{
    size_t busy = 0;
    for (struct observation *x = s->observations; x; x = x->next)
        busy++;
    struct observation *o = sl_xcalloc(1, sizeof(*o));
    o->policy = policy_ref(s->env->policy); /* its verdict points into it; a reload may come */
    o->timeout_ev = evtimer_new(s->base, on_observe_timeout, o);
    struct timeval tv = { OBSERVE_TIMEOUT_SECONDS, 0 };
    evtimer_add(o->timeout_ev, &tv);
    o->s = s;
    o->msg = m;
    o->client_id = sl_xstrndup(id.p, id.len);
    o->modern = modern;
    o->v = *v;                     /* take the verdict's buffers */
    memset(&v->args_json, 0, sizeof(v->args_json));
    memset(&v->text, 0, sizeof(v->text));
    memset(&v->state, 0, sizeof(v->state));
    memset(&v->token, 0, sizeof(v->token));
    memset(&v->upstream_state, 0, sizeof(v->upstream_state));
    o->next = s->observations;
    if (s->observations)
        s->observations->prev = o;
    s->observations = o;
    if (busy >= SESSION_MAX_OBSERVING)
        return observation_refuse(o, "too-many-observing",
                                  "Too many calls of this client are waiting for their observe "
                                  "call. The call was not run.");
    const char *why = "the upstream is gone";
    struct json *args = observe_args(m->arena, o->v.observe, json_get(m->params, "arguments"),
                                     &why);
    struct json *params = json_new_object(m->arena);
    json_set(m->arena, params, "name",
             json_new_string(m->arena, o->v.observe->tool, strlen(o->v.observe->tool)));
    /* The observe call is a call like any other: the read tool must be allowed, and allowed
     * for these arguments (its own rules), or what it reads would leak into the question. */
    struct policy_decision d;
    struct rules_result rr;
    const char *ob = o->v.observe->tool;
    policy_lookup(s->env->policy, ob, strlen(ob), &d);
    if (args)
        rules_check(s->env->policy, ob, strlen(ob), args, &rr);
    if (args && (d.action != POLICY_ALLOW || rr.outcome != RULES_PASS))
        return observation_refuse(o, "observe-denied",
                                  "The policy does not allow reading the target with the observe "
                                  "tool for these arguments, so the call was not run.");
    if (args) {
        json_set(m->arena, params, "arguments", args);
        if (upstream_era(s->env->up) == ERA_MODERN)
            params = era_add_envelope(m->arena, params, NULL);
        o->req = upstream_request(s->env->up, SL_STR("tools/call"), params, on_observed, o);
    }
    if (o->req == NULL)
        observation_refuse(o, "observe-failed", "sluice could not run the observe tool, so "
                                                "the call was not run.");
}

static struct observation *find_observation(struct session *s, const struct json *client_id)
{
    if (client_id == NULL || (client_id->type != JSON_STRING && client_id->type != JSON_NUMBER))
        return NULL;
    struct sl_buf b = { 0 };
    json_write(&b, client_id);
    struct observation *o = s->observations;
    while (o && strcmp(o->client_id, b.p) != 0)
        o = o->next;
    sl_buf_free(&b);
    return o;
}

/* ===== answers sluice gives itself ===== */

/* The upstream's capabilities, as the client should see them: without tasks, since a task-
 * augmented call returns before it runs and sluice does not relay the tasks protocol. */
static struct json *upstream_caps(struct session *s, struct sl_arena *a)
{
    const struct json *caps = json_get(upstream_info(s->env->up), "capabilities");
    if (caps == NULL || caps->type != JSON_OBJECT)
        return json_new_object(a);
    struct json *c = json_copy_object(a, caps);
    json_del(c, "tasks");
    return c;
}

static struct json *server_info(struct session *s, struct sl_arena *a)
{
    const struct json *info = upstream_info(s->env->up);
    const struct json *si = json_get(info, "serverInfo");
    if (si == NULL)
        si = json_get(json_get(info, "_meta"), META_SERVER_INFO);
    if (si && si->type == JSON_OBJECT)
        return (struct json *)si;
    struct json *o = json_new_object(a);
    json_set(a, o, "name", json_new_string(a, "sluice", 6));
    json_set(a, o, "version", json_new_string(a, SLUICE_VERSION, strlen(SLUICE_VERSION)));
    return o;
}

/* server/discover (PROTOCOL.md §1.7), answered from the upstream's initialize or discover. */
static void answer_discover(struct session *s, struct jsonrpc_msg *m, struct sl_str id)
{
    struct sl_arena *a = m->arena;
    struct json *r = json_new_object(a), *versions = json_new_array(a), *meta = json_new_object(a);
    json_set(a, r, "resultType", json_new_string(a, "complete", 8));
    json_push(a, versions, json_new_string(a, ERA_MODERN_VERSION, strlen(ERA_MODERN_VERSION)));
    json_push(a, versions, json_new_string(a, ERA_LEGACY_LATEST, strlen(ERA_LEGACY_LATEST)));
    json_set(a, r, "supportedVersions", versions);
    json_set(a, r, "capabilities", upstream_caps(s, a));
    const struct json *instr = json_get(upstream_info(s->env->up), "instructions");
    if (instr && instr->type == JSON_STRING)
        json_set(a, r, "instructions", (struct json *)instr);
    json_set(a, r, "ttlMs", json_new_number(a, "0"));
    json_set(a, r, "cacheScope", json_new_string(a, "private", 7));
    json_set(a, meta, META_SERVER_INFO, server_info(s, a));
    json_set(a, r, "_meta", meta);
    reply_value(s, id, r);
}

/* initialize from a handshake-era client (PROTOCOL.md §4.1). */
static void answer_initialize(struct session *s, struct jsonrpc_msg *m, struct sl_str id)
{
    struct sl_arena *a = m->arena;
    const struct json *caps = json_get(m->params, "capabilities");
    sl_arena_free(s->caps_arena);
    s->caps_arena = sl_arena_new_small(); /* kept while the session lives: 10,000 idle ones */
    s->legacy_caps = json_new_object(s->caps_arena);
    if (caps && caps->type == JSON_OBJECT) {
        struct sl_buf b = { 0 };
        char err[64];
        json_write(&b, caps);
        if (json_parse(b.p, b.len, s->caps_arena, &s->legacy_caps, err, sizeof(err)) != 0)
            s->legacy_caps = json_new_object(s->caps_arena);
        sl_buf_free(&b);
    }
    const char *ver = era_negotiate_legacy(json_get(m->params, "protocolVersion"));
    /* Elicitation exists from 2025-06-18 on; "mode" from 2025-11-25 on (PROTOCOL.md §3.1). */
    bool has_elicitation = strcmp(ver, "2025-06-18") >= 0;
    s->legacy_form = has_elicitation && era_caps_form_elicitation(s->legacy_caps);
    s->legacy_mode_field = strcmp(ver, "2025-11-25") >= 0;
    struct json *r = json_new_object(a);
    json_set(a, r, "protocolVersion", json_new_string(a, ver, strlen(ver)));
    json_set(a, r, "capabilities", upstream_caps(s, a));
    json_set(a, r, "serverInfo", server_info(s, a));
    const struct json *instr = json_get(upstream_info(s->env->up), "instructions");
    if (instr && instr->type == JSON_STRING)
        json_set(a, r, "instructions", (struct json *)instr);
    reply_value(s, id, r);
}

/* ===== dispatch ===== */

/* MCP method names are plain ASCII words and slashes. Anything else, and any near-miss of
 * tools/call, is refused rather than passed to an upstream that might read it as tools/call and
 * run it without the gate: a server that routes without case, trims a separator or maps '.' and
 * '_' to '/' would take "Tools/call", "tools/call/", "tools.call" or "tools//call" for it. So a
 * method whose letters and digits spell "toolscall" (without case) must be exactly "tools/call". */
static const bool method_char[256] = {
    ['a' ... 'z'] = true, ['A' ... 'Z'] = true, ['0' ... '9'] = true,
    ['/'] = true, ['_'] = true, ['.'] = true, ['-'] = true,
};

/* True iff the letters and digits of m, lower-cased, read "toolscall". */
static bool spells_tools_call(struct sl_str m)
{
    static const char want[] = "toolscall";
    size_t k = 0;
    for (size_t i = 0; i < m.len; i++) {
        char c = m.p[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        else if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9'))
            continue;
        if (k == sizeof(want) - 1 || c != want[k])
            return false;
        k++;
    }
    return k == sizeof(want) - 1;
}

static bool method_ok(struct sl_str m)
{
    if (m.len == 0 || m.len > 128)
        return false;
    for (size_t i = 0; i < m.len; i++)
        if (!method_char[(unsigned char)m.p[i]])
            return false;
    return !spells_tools_call(m) || sl_str_eq_c(m, "tools/call");
}

/* m's envelope into *env: read, when the caller has read it already, else read here. */
static bool envelope_ok(const struct jsonrpc_msg *m, const struct era_envelope *read,
                        struct era_envelope *env, int *code, const char **message,
                        struct sl_buf *data)
{
    if (read) {
        *env = *read;
        return true;
    }
    return era_read_envelope(m->params, env, code, message, data) == 0;
}

/* Returns true when it kept m. read: m's envelope, when the caller has read it already. */
static bool handle_request(struct session *s, struct jsonrpc_msg *m,
                           const struct era_envelope *read)
{
    bool kept = false;
    char idstore[64];
    struct sl_buf idb, data = { 0 };
    sl_buf_on(&idb, idstore, sizeof(idstore));
    json_write(&idb, m->id);
    struct sl_str id = sl_buf_str(&idb);
    struct era_envelope env;
    int code;
    const char *message;
    if (!method_ok(m->method)) {
        reply_error(s, id, JSONRPC_METHOD_NOT_FOUND, "Method not found", NULL);
    } else if (!envelope_ok(m, read, &env, &code, &message, &data)) {
        reply_error(s, id, code, message, data.len ? data.p : NULL);
    } else if (sl_str_eq_c(m->method, "tools/call")) {
        if (m->params == NULL || m->params->type != JSON_OBJECT)
            reply_error(s, id, JSONRPC_INVALID_PARAMS, "params must be an object", NULL);
        else
            kept = handle_call(s, m, id, &env);
    } else if (env.claimed && sl_str_eq_c(m->method, "server/discover")) {
        answer_discover(s, m, id);
    } else if (env.claimed && (sl_str_eq_c(m->method, "initialize") ||
                               sl_str_eq_c(m->method, "ping"))) {
        reply_error(s, id, JSONRPC_METHOD_NOT_FOUND, "Method not found", NULL);
    } else if (sl_str_eq_c(m->method, "initialize")) {
        answer_initialize(s, m, id);
    } else if (sl_str_eq_c(m->method, "ping")) {
        reply_result(s, id, SL_STR("{}"));
    } else {
        kept = forward(s, m, id, env.claimed, m->params) != NULL;
    }
    sl_buf_free(&idb);
    sl_buf_free(&data);
    return kept;
}

static struct fwd *find_fwd(struct session *s, const struct json *client_id)
{
    if (client_id == NULL || (client_id->type != JSON_STRING && client_id->type != JSON_NUMBER))
        return NULL;
    struct sl_buf b = { 0 };
    json_write(&b, client_id);
    struct fwd *f = s->fwds;
    while (f && strcmp(f->client_id, b.p) != 0)
        f = f->next;
    sl_buf_free(&b);
    return f;
}

static void handle_notification(struct session *s, struct jsonrpc_msg *m)
{
    if (sl_str_eq_c(m->method, "notifications/initialized"))
        return; /* the handshake with the upstream is sluice's own */
    if (sl_str_eq_c(m->method, "notifications/cancelled")) {
        struct observation *o = find_observation(s, json_get(m->params, "requestId"));
        if (o) {
            audit(s, json_get(o->msg->params, "name")->u.str,
                  o->v.has_digest ? o->v.digest : NULL, "cancelled", "client-cancelled",
                  "not-forwarded", o->client_id);
            observation_free(o);
            return;
        }
        struct held *h = find_held(s, json_get(m->params, "requestId"), false);
        if (h) { /* dropped before anything was forwarded; no response (PROTOCOL.md §7.5) */
            cancel_elicitation(h, "the request was cancelled");
            withdraw_question(h);
            if (s->io->ended)
                s->io->ended(s->io_arg, sl_str_c(h->client_id));
            audit(s, held_tool(h), held_digest(h), "cancelled", "client-cancelled",
                  "not-forwarded", h->client_id);
            held_free(h);
            return;
        }
        struct fwd *f = find_fwd(s, json_get(m->params, "requestId"));
        if (f == NULL)
            return; /* unknown or finished: MAY be ignored (PROTOCOL.md §4.4) */
        const struct json *why = json_get(m->params, "reason");
        char *reason = why && why->type == JSON_STRING
                           ? sl_arena_strndup(m->arena, why->u.str.p, why->u.str.len) : NULL;
        if (f->is_call)
            audit(s, (struct sl_str){ f->tool, f->tool_len }, f->has_digest ? f->digest : NULL,
                  f->decision, f->reason, "cancelled", f->client_id);
        if (f->req)
            upstream_cancel(s->env->up, f->req, reason);
        fwd_free(f);
        return;
    }
    /* Only the notifications a client may send are passed on: a "tools/call" without an id
     * would otherwise reach an upstream that runs it without the gate. */
    static const char *const relayed[] = { "notifications/progress",
                                           "notifications/roots/list_changed" };
    for (size_t i = 0; i < SL_ARRAY_LEN(relayed); i++) {
        if (sl_str_eq_c(m->method, relayed[i])) {
            upstream_notify(s->env->up, m->method, m->params);
            return;
        }
    }
    sl_debug("dropping a client notification sluice does not relay");
}

/* The client answered a request the upstream made: back under the upstream's id. */
static bool answer_relayed(struct session *s, struct jsonrpc_msg *m)
{
    if (m->id->type != JSON_STRING)
        return false;
    for (struct relayed **pp = &s->relayed; *pp; pp = &(*pp)->next) {
        struct relayed *r = *pp;
        if (!sl_str_eq_c(m->id->u.str, r->id))
            continue;
        if (r->fwd) {
            round_answer(s, pp, m);
            return true;
        }
        struct sl_buf b = { 0 };
        if (m->kind == JSONRPC_RESULT)
            jsonrpc_write_result_value(&b, sl_str_c(r->up_id), m->result);
        else
            msg_error_value(&b, sl_str_c(r->up_id), m->error);
        upstream_send_line(s->env->up, sl_buf_str(&b));
        sl_buf_free(&b);
        relayed_free(s, pp);
        return true;
    }
    return false;
}

static void process_msg(struct session *s, struct jsonrpc_msg *m,
                        const struct era_envelope *read)
{
    bool kept = false;
    if (m->kind == JSONRPC_REQUEST) {
        kept = handle_request(s, m, read);
    } else if (m->kind == JSONRPC_NOTIFICATION) {
        handle_notification(s, m);
    } else {
        struct held *h = find_held(s, m->id, true);
        if (h)
            hold_answer(h, m);
        else if (!answer_relayed(s, m))
            sl_debug("dropping a response from the client for no question of ours");
    }
    if (!kept)
        jsonrpc_msg_free(m);
}

/* What a handshake-era upstream may ask of us: what this client can answer (on stdio there is
 * one client, so every question the upstream asks is this client's). */
static struct json *routable_caps(struct sl_arena *a, const struct json *caps)
{
    static const char *const keep[] = { "elicitation", "sampling", "roots" };
    struct json *c = json_new_object(a);
    for (size_t i = 0; i < SL_ARRAY_LEN(keep); i++) {
        struct json *v = json_get(caps, keep[i]);
        if (v && v->type == JSON_OBJECT)
            json_set(a, c, keep[i], v);
    }
    return c;
}

/* A line from a byte-stream client (stdio). Before the upstream is initialized, the first
 * message waits: a handshake-era upstream is initialized with what that message says the client
 * can do (and reading pauses meanwhile). */
void session_input_line(struct session *s, struct sl_str line)
{
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error err;
    if (jsonrpc_parse(line.p, line.len, &m, &err) != 0) {
        sl_warn("client message refused: %s", err.msg);
        reply_error(s, sl_str_c(err.id), err.code,
                    err.code == JSONRPC_PARSE_ERROR ? "Parse error" : "Invalid Request", NULL);
        return;
    }
    if (!s->up_ready || !upstream_ready(s->env->up)) {
        s->stash = m;
        struct era_envelope env;
        int code;
        const char *msg;
        struct sl_buf data = { 0 };
        bool legacy_init = m->kind == JSONRPC_REQUEST && sl_str_eq_c(m->method, "initialize") &&
                           era_read_envelope(m->params, &env, &code, &msg, &data) == 0 &&
                           !env.claimed;
        sl_buf_free(&data);
        upstream_initialize(s->env->up,
                            legacy_init ? routable_caps(m->arena,
                                                        json_get(m->params, "capabilities"))
                                        : NULL);
        session_update_interest(s);
        return;
    }
    process_msg(s, m, NULL);
}

void session_input(struct session *s, struct jsonrpc_msg *m)
{
    process_msg(s, m, NULL);
}

void session_input_modern(struct session *s, struct jsonrpc_msg *m,
                          const struct era_envelope *env)
{
    SL_REQUIRE(env->claimed);
    process_msg(s, m, env);
}

void session_input_oversize(struct session *s)
{
    sl_warn("client message over %u bytes refused", SL_MAX_MESSAGE);
    reply_error(s, SL_STR("null"), JSONRPC_PARSE_ERROR, "Parse error: message too large", NULL);
}

/* ===== lifecycle ===== */

struct session *session_new(struct event_base *base, struct session_env *env,
                            const struct session_io *io, void *io_arg, struct sl_str principal)
{
    struct session *s = sl_xcalloc(1, sizeof(*s));
    s->env = env;
    s->base = base;
    if (principal.len < sizeof(s->principal_buf)) {
        memcpy(s->principal_buf, principal.p, principal.len);
        s->principal_buf[principal.len] = '\0';
        s->principal = s->principal_buf;
    } else {
        s->principal = sl_xstrndup(principal.p, principal.len);
    }
    s->io = io;
    s->io_arg = io_arg;
    return s;
}

void session_start(struct session *s)
{
    s->started = true;
    session_update_interest(s);
}

/* Backpressure, computed in one place: read from the client only while the upstream keeps up,
 * and from the upstream only while the client keeps up. */
void session_update_interest(struct session *s)
{
    if (s == NULL || s->env->up == NULL || s->io->pause == NULL)
        return;
    s->io->pause(s->io_arg, !s->started || s->stash != NULL ||
                                upstream_out_len(s->env->up) > CHAN_HIGH_WATER);
    upstream_pause(s->env->up, s->io->out_len(s->io_arg) > CHAN_HIGH_WATER);
}

void session_upstream_ready(struct session *s)
{
    s->up_ready = true;
    struct jsonrpc_msg *m = s->stash;
    s->stash = NULL;
    if (m)
        process_msg(s, m, NULL);
    session_update_interest(s);
}

void session_upstream_request(struct session *s, struct jsonrpc_msg *msg)
{
    static const struct { const char *method, *cap; } needs[] = {
        { "elicitation/create", "elicitation" },
        { "sampling/createMessage", "sampling" },
        { "roots/list", "roots" },
    };
    const char *cap = NULL;
    for (size_t i = 0; i < SL_ARRAY_LEN(needs); i++)
        if (sl_str_eq_c(msg->method, needs[i].method))
            cap = needs[i].cap;
    struct sl_buf id = { 0 }, b = { 0 };
    json_write(&id, msg->id);
    if (cap == NULL || json_get(s->legacy_caps, cap) == NULL ||
        s->nrelayed >= SESSION_MAX_RELAYED) {
        jsonrpc_write_error(&b, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND,
                            "the client behind sluice cannot answer this request", NULL);
        upstream_send_line(s->env->up, sl_buf_str(&b));
    } else {
        struct relayed *r = sl_xcalloc(1, sizeof(*r));
        snprintf(r->id, sizeof(r->id), "sluice-u-%llu", (unsigned long long)++s->next_relay);
        r->up_id = sl_xstrndup(id.p, id.len);
        r->next = s->relayed;
        s->relayed = r;
        s->nrelayed++;
        json_set(msg->arena, msg->root, "id", json_new_string(msg->arena, r->id, strlen(r->id)));
        json_write(&b, msg->root);
        send_line(s, SL_STR_NULL, false, sl_buf_str(&b));
    }
    sl_buf_free(&id);
    sl_buf_free(&b);
}

void session_upstream_notification(struct session *s, struct jsonrpc_msg *msg)
{
    if (sl_str_eq_c(msg->method, "notifications/cancelled")) {
        /* The upstream may cancel only its own requests: rewrite to the id the client saw. */
        const struct json *rid = json_get(msg->params, "requestId");
        struct sl_buf idb = { 0 };
        struct relayed **pp = &s->relayed;
        if (rid)
            json_write(&idb, rid);
        while (*pp && !(idb.len && (*pp)->up_id && strcmp((*pp)->up_id, idb.p) == 0))
            pp = &(*pp)->next;
        sl_buf_free(&idb);
        if (*pp == NULL) {
            sl_debug("dropping an upstream cancellation for no request it made");
            return;
        }
        json_set(msg->arena, msg->params, "requestId",
                 json_new_string(msg->arena, (*pp)->id, strlen((*pp)->id)));
        relayed_free(s, pp);
    }
    struct sl_buf b = { 0 };
    json_write(&b, msg->root);
    send_line(s, SL_STR_NULL, false, sl_buf_str(&b));
    sl_buf_free(&b);
}

size_t session_busy(const struct session *s)
{
    size_t n = s->nrelayed + (s->stash != NULL);
    for (const struct fwd *f = s->fwds; f; f = f->next)
        n++;
    for (const struct held *h = s->helds; h; h = h->next)
        n++;
    for (const struct observation *o = s->observations; o; o = o->next)
        n++;
    return n;
}

/* The first message, still waiting for the upstream's handshake, will not run either. A call is
 * refused and journaled as a held one is (every answered call has its record); any other request
 * gets a JSON-RPC error; a notification needs nothing. */
static void refuse_stash(struct session *s, const char *reason)
{
    struct jsonrpc_msg *m = s->stash;
    s->stash = NULL;
    if (m == NULL || m->kind != JSONRPC_REQUEST) {
        jsonrpc_msg_free(m);
        return;
    }
    struct sl_buf id = { 0 };
    json_write(&id, m->id);
    const char *why = strcmp(reason, "upstream-gone") == 0
                          ? "The server stopped before the call could be sent. The call was not run."
                          : "sluice is shutting down; the call was not run.";
    const struct json *name = json_get(m->params, "name");
    if (sl_str_eq_c(m->method, "tools/call") && name && name->type == JSON_STRING) {
        uint8_t digest[32];
        bool has = gate_args_digest(json_get(m->params, "arguments"), digest);
        audit(s, (struct sl_str){ name->u.str.p, name->u.str.len }, has ? digest : NULL,
              "refused", reason, "not-forwarded", id.p);
        reply_tool_error(s, sl_buf_str(&id), false, why);
    } else {
        reply_error(s, sl_buf_str(&id), JSONRPC_INTERNAL_ERROR, why, NULL);
    }
    sl_buf_free(&id);
    jsonrpc_msg_free(m);
}

void session_refuse_held(struct session *s, const char *reason, const char *text)
{
    while (s->helds) {
        cancel_elicitation(s->helds, reason);
        refuse_held(s->helds, "refused", reason, text);
    }
    refuse_stash(s, reason);
}

void session_stream_lost(struct session *s, struct sl_str rel)
{
    for (struct held *h = s->helds; h; h = h->next) {
        if (sl_str_eq_c(rel, h->client_id)) {
            withdraw_question(h);
            return;
        }
    }
}

void session_free(struct session *s)
{
    if (s == NULL)
        return;
    while (s->helds) {
        withdraw_question(s->helds);
        audit(s, held_tool(s->helds), held_digest(s->helds), "cancelled", "client-gone",
              "not-forwarded", s->helds->client_id);
        held_free(s->helds);
    }
    while (s->observations)
        observation_free(s->observations);
    while (s->relayed)
        relayed_free(s, &s->relayed);
    while (s->fwds) {
        struct fwd *f = s->fwds;
        if (f->req && s->env->up)
            upstream_cancel(s->env->up, f->req, "client went away");
        fwd_free(f);
    }
    jsonrpc_msg_free(s->stash);
    sl_arena_free(s->caps_arena);
    if (s->principal != s->principal_buf)
        free(s->principal);
    free(s);
}
