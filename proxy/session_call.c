/* session_call.c: the gate for tools/call, in one place. A client's call (call_handle) and an
 * observed call (session_observe.c) act on their verdict through call_act, which forwards it
 * (call_forward), observes, holds, or answers it (call_refuse); a held call's answer
 * (session_held.c) can only forward, observe or refuse, through the same call_forward and
 * call_refuse. The verdict is data (gate.h); msg.h writes it for the client's era. */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "msg.h"
#include "store.h"

/* The client's id as a C string, for the journal and the relay, which copy what they keep: on
 * the stack when it is short, as ids are. Its malloc and free cost about 170 instructions a
 * call, and a gated pair made three (issue 24). */
struct idc {
    char room[64];
    char *p;
};

static char *idc_of(struct idc *b, struct sl_str id)
{
    if (id.len >= sizeof(b->room))
        return b->p = sl_xstrndup(id.p, id.len);
    if (id.len)
        memcpy(b->room, id.p, id.len);
    b->room[id.len] = '\0';
    return b->p = b->room;
}

static void idc_free(struct idc *b)
{
    if (b->p != b->room)
        free(b->p);
}

static const char legacy_cannot_ask[] =
    "This tool needs a person's confirmation, and this client did not declare form elicitation "
    "(or has not initialized), so sluice cannot ask. The call was not run.";

/* The io.modelcontextprotocol/ members of a request's _meta that the protocol defines
 * (PROTOCOL.md §1.3), with the JSON type each holds. The prefix is reserved, not a promise: a key
 * under it that the protocol does not define means whatever the upstream makes of it, and the
 * person was never shown it. */
static const struct {
    const char *key;
    enum json_type type;
} envelope_keys[] = {
    { "io.modelcontextprotocol/protocolVersion", JSON_STRING },
    { "io.modelcontextprotocol/clientCapabilities", JSON_OBJECT },
    { "io.modelcontextprotocol/clientInfo", JSON_OBJECT },
    { "io.modelcontextprotocol/logLevel", JSON_STRING },
};

/* True for the _meta members of a gated call that reach the upstream: the progress token and the
 * envelope keys above, each with the type the protocol gives it. */
static bool meta_forwarded(const struct json_member *mb)
{
    if (sl_str_eq_c(mb->key, "progressToken"))
        return true;
    for (size_t i = 0; i < SL_ARRAY_LEN(envelope_keys); i++)
        if (sl_str_eq_c(mb->key, envelope_keys[i].key))
            return mb->val->type == envelope_keys[i].type;
    return false;
}

/* The largest integer every JSON reader holds exactly (2^53 - 1). */
#define TASK_TTL_MAX 9007199254740991ull

/* A gated call's params.task, if any, is the TaskMetadata of 2025-11-25: an object whose one
 * defined member, ttl, is an integer (milliseconds to keep the task). A task that is not an
 * object, or a ttl that is not a non-negative integer within 2^53, is refused before anyone is
 * asked: an upstream could read it as a task or not, with this ttl or another, and the person's
 * approval would be spent on a call whose form nobody knows. NULL when task is absent or well
 * formed. */
static const char *task_problem(const struct json *params)
{
    const struct json *task = json_get(params, "task");
    if (task == NULL)
        return NULL;
    if (task->type != JSON_OBJECT)
        return "params.task must be an object";
    const struct json *ttl = json_get(task, "ttl");
    uint64_t n;
    if (ttl && (ttl->type != JSON_NUMBER || !sl_u64_parse(ttl->u.num, &n) || n > TASK_TTL_MAX))
        return "params.task.ttl must be a non-negative integer of at most 2^53 - 1";
    return NULL;
}

/* The names of the members approved_params drops, for one debug line per call: printable ASCII
 * (a key is the client's text, and a log line must stay one line), each name and the whole list
 * cut short. Values are never logged: they may be anything the client sent. */
#define DROPPED_NAME_MAX 64
#define DROPPED_LIST_MAX 512

static void dropped_add(struct sl_buf *b, const char *where, struct sl_str key)
{
    if (b->len >= DROPPED_LIST_MAX) {
        if (b->len == DROPPED_LIST_MAX)
            sl_buf_puts(b, " ...");
        return;
    }
    sl_buf_puts(b, b->len ? ", " : "");
    sl_buf_puts(b, where);
    for (size_t i = 0; i < key.len && i < DROPPED_NAME_MAX; i++) {
        unsigned char c = (unsigned char)key.p[i];
        sl_buf_putc(b, c > 0x20 && c < 0x7f ? (char)c : '?');
    }
    if (key.len > DROPPED_NAME_MAX)
        sl_buf_puts(b, "...");
    if (b->len > DROPPED_LIST_MAX)
        b->len = DROPPED_LIST_MAX;
}

/* _meta filtered to meta_forwarded's members, in one pass over a copy (its keys are distinct
 * already): no lookup per member, so a 10,000-member _meta costs 10,000 steps. sluice's own
 * token is dropped unlogged: it is sluice's, and every round two carries it. */
static struct json *forwarded_meta(struct sl_arena *a, const struct json *meta,
                                   struct sl_buf *dropped)
{
    struct json *out = json_copy_object(a, meta);
    size_t kept = 0;
    for (size_t i = 0; i < out->u.obj.n; i++) {
        const struct json_member *mb = &out->u.obj.v[i];
        if (meta_forwarded(mb))
            out->u.obj.v[kept++] = *mb;
        else if (dropped && !sl_str_eq_c(mb->key, GATE_TOKEN_META))
            dropped_add(dropped, "_meta.", mb->key);
    }
    out->u.obj.n = kept;
    return out;
}

/* The task forwarded: its ttl alone (task_problem has checked it), every other member dropped. */
static struct json *forwarded_task(struct sl_arena *a, const struct json *task,
                                   struct sl_buf *dropped)
{
    struct json *out = json_new_object(a);
    for (size_t i = 0; i < task->u.obj.n; i++) {
        const struct json_member *mb = &task->u.obj.v[i];
        if (sl_str_eq_c(mb->key, "ttl"))
            json_set(a, out, "ttl", mb->val);
        else if (dropped)
            dropped_add(dropped, "task.", mb->key);
    }
    return out;
}

/* The params a gated call is forwarded with: the arguments that were hashed and shown, as those
 * very bytes (json_verbatim), replacing the client's; none of sluice's own fields (they would reach a modern
 * upstream as state of its own). When the client is answering the upstream's question, the
 * upstream gets its own state back and the client's answers to its keys.
 *
 * _meta: only the protocol's own members go on (meta_forwarded: progressToken and the envelope
 * keys the protocol defines, not any key that merely starts with io.modelcontextprotocol/).
 * Every other member is dropped, sluice's token among them: an upstream may act on a vendor key
 * of _meta ("com.example/overwrite": true) that the person was never shown, and binding such
 * members into the state would only move the question. task: its ttl only (forwarded_task).
 * Since nothing else is forwarded, round two cannot add what round one did not have. What is
 * dropped is named (never its value) in one debug line. Ungated calls keep the client's params
 * as sent. */
static const struct json *approved_params(struct jsonrpc_msg *m, const struct gate_verdict *v,
                                          const char *idc)
{
    struct sl_arena *a = m->arena;
    struct json *p = json_new_object(a);
    struct sl_buf names = { 0 };
    struct sl_buf *dropped = sl_log_enabled(SL_LOG_DEBUG) ? &names : NULL;
    json_set(a, p, "name", json_get(m->params, "name"));
    /* The canonical bytes of the very arguments the gate read (gate_input.args): the upstream
     * gets what was hashed and shown, and a reader of the params (Mcp-Param headers) sees
     * the same values. */
    json_set(a, p, "arguments", json_verbatim(a, json_get(m->params, "arguments"),
                                              sl_buf_str(&v->args_json)));
    const struct json *meta = json_get(m->params, "_meta");
    if (meta && meta->type == JSON_OBJECT)
        json_set(a, p, "_meta", forwarded_meta(a, meta, dropped));
    const struct json *task = json_get(m->params, "task");
    if (task && task->type == JSON_OBJECT)
        json_set(a, p, "task", forwarded_task(a, task, dropped));
    struct json *answers = json_get(m->params, "inputResponses");
    if (v->continued && answers && answers->type == JSON_OBJECT) {
        answers = json_copy_object(a, answers);
        json_del(answers, GATE_CONFIRM_KEY);
        json_set(a, p, "inputResponses", answers);
    }
    if (v->continued && v->upstream_state.len > 0)
        json_set(a, p, "requestState",
                 json_new_string(a, v->upstream_state.p, v->upstream_state.len));
    if (names.len)
        sl_debug("call %s: not forwarded (not shown to the person): %.*s", idc,
                 (int)names.len, names.p);
    sl_buf_free(&names);
    return p;
}

/* The forwarding record did not reach the journal (a full disk, an I/O error, a failed fsync
 * with --audit-sync always): the call is not run, since it would run unrecorded (DESIGN §5
 * inv. 2). The reply goes out before the call claims its spent nonce (fwd_mark_call), so the
 * store keeps it as not run and a retry is refused as a replay, never told it ran
 * (spend_settle). The refusal is journaled too, in case the journal takes it. */
void call_unjournaled(struct session *s, struct sl_str tool, const uint8_t *digest,
                      const char *idc)
{
    session_audit(s, tool, digest, AUDIT_REFUSED, "journal-unwritable", AUDIT_UP_NOT_FORWARDED,
                  idc);
    session_reply_error(s, sl_str_c(idc), JSONRPC_INTERNAL_ERROR,
                        "sluice could not write this call to its audit journal, so the call "
                        "was not run", NULL);
}

/* The upstream does not read what it is sent: a 2026-07-28 call that is no parked call's round
 * (whose answers go to the call's own upstream) is refused, as refused_backlog does the rest. */
static void refuse_busy(struct session *s, struct sl_str tool, const uint8_t *digest,
                        const char *idc)
{
    session_audit(s, tool, digest, AUDIT_REFUSED, "upstream-busy", AUDIT_UP_NOT_FORWARDED, idc);
    session_reply_error(s, sl_str_c(idc), MCP_SERVER_ERROR, BUSY_TEXT, NULL);
}

/* The reason a forwarded call's decision record gives: an allowed call's rule (fwd_mark_call). */
static const char *verdict_reason(const struct gate_verdict *v)
{
    return v->gated || v->rule == NULL ? v->reason : v->rule;
}

/* The tool's definition changed after the gate checked the one a gated call's state was bound
 * to (same_definition): while the store spent the state, or the observe tool read the target
 * again after the accept, the server listed another tool under this name (a rug pull after the
 * accept), or sluice no longer knows one (a restarted server). Nobody approved what would run:
 * the call is refused, in the gate's words. Returns the reason, or NULL: still the same. */
static const char *definition_moved(struct session *s, struct sl_str tool,
                                    const struct gate_verdict *v)
{
    struct gate_input now = { .tool = tool };
    uint8_t live[32] = { 0 };
    pin_input(s, &now);
    if (now.has_definition)
        memcpy(live, now.definition, sizeof(live));
    if (sl_ct_equal(live, v->definition, sizeof(live)))
        return NULL;
    return now.has_definition ? "definition-changed" : "definition-unknown";
}

bool call_forward(struct session *s, struct jsonrpc_msg *m, bool modern, struct sl_str tool,
                  const struct gate_verdict *v, const char *idc)
{
    const char *moved = v->gated ? definition_moved(s, tool, v) : NULL;
    if (moved) {
        /* The reply goes out before the spent nonce is claimed (fwd_mark_call): a retry of the
         * state is refused as a replay, never told the call ran. */
        session_audit(s, tool, v->has_digest ? v->digest : NULL, AUDIT_REFUSED, moved,
                      AUDIT_UP_NOT_FORWARDED, idc);
        session_reply_tool_error(s, sl_str_c(idc), modern, strcmp(moved, "definition-changed") == 0
            ? "The server changed this tool's definition (its description, input schema or "
              "annotations) after the person approved the call, so it was not run. Call the tool "
              "again to be asked about it as it is now."
            : "The server does not list this tool now (it may be restarting), so sluice cannot "
              "check that it is the tool the person approved, and the call was not run. Call the "
              "tool again once the server lists it.");
        return false;
    }
    enum park_round pr = modern ? park_resume(s, m, sl_str_c(idc), v) : PARK_NOT_A_ROUND;
    if (pr != PARK_NOT_A_ROUND) { /* a round of a parked call (session_park.c) */
        if (pr == PARK_REFUSED)
            session_audit(s, tool, v->has_digest ? v->digest : NULL, AUDIT_REFUSED,
                          "parked-call-state", AUDIT_UP_NOT_FORWARDED, idc);
        return false;
    }
    const uint8_t *digest = v->has_digest ? v->digest : NULL;
    if (modern && session_backlogged(s)) /* let past refused_backlog as a possible round */
        return refuse_busy(s, tool, digest, idc), false;
    if (modern)
        park_own_upstream(s, m); /* the call's questions then come from its own upstream */
    /* On record before it can run: a crash before its outcome leaves this line. Not for a call
     * its upstream cannot take (gone, or it stopped reading its input): fwd_start refuses it,
     * and it is journaled below as never sent. A call that waits for its own upstream to be
     * ready gets the line when it goes (fwd_send_unsent). */
    if (v->gated && fwd_route(s) == FWD_NOW &&
        session_audit(s, tool, digest, AUDIT_FORWARDING, audit_decision_name(v->decision),
                      AUDIT_UP_NONE, idc) != 0) {
        call_unjournaled(s, tool, digest, idc);
        return false;
    }
    const struct json *params = v->gated ? approved_params(m, v, idc) : m->params;
    struct fwd *f = fwd_start(s, m, sl_str_c(idc), modern, params);
    /* Its upstream could not take it: nothing was sent. The reply went out before a spent nonce
     * is claimed, so a retry is refused as a replay, never told it ran (as call_unjournaled). */
    if (f == NULL) {
        session_audit(s, tool, digest, v->decision, verdict_reason(v), AUDIT_UP_UNAVAILABLE,
                      idc);
        return false;
    }
    fwd_mark_call(f, tool, v);
    return true;
}

void call_refuse(struct session *s, struct sl_str id, struct sl_str tool,
                 const struct gate_verdict *v, bool modern)
{
    const uint8_t *digest = v->has_digest ? v->digest : NULL;
    struct idc idb;
    const char *idc = idc_of(&idb, id);
    session_audit(s, tool, digest, v->decision, v->gated ? v->reason : v->rule,
                  AUDIT_UP_NOT_FORWARDED, idc);
    if (v->action == GATE_REFUSE_RPC) {
        session_reply_error(s, id, v->rpc_code, v->rpc_message, v->rpc_data);
    } else {
        /* On the stack: a question's result is about 800 bytes, and growing a heap buffer to it
         * (256, 512, 1024) cost about 650 instructions a question (issue 24). */
        char room[2048];
        struct sl_buf b;
        sl_buf_on(&b, room, sizeof(room));
        msg_verdict_result(&b, v, modern);
        session_reply_result(s, id, sl_buf_str(&b));
        sl_buf_free(&b);
    }
    idc_free(&idb);
}

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

void call_input(struct session *s, struct jsonrpc_msg *m, bool modern, const struct json *caps,
                struct gate_input *in)
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
    pin_input(s, in);
}

const struct json *call_caps(struct jsonrpc_msg *m)
{
    return json_get(json_get(m->params, "_meta"), META_CLIENT_CAPS);
}

bool call_act(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
              struct gate_verdict *v)
{
    /* Before a state is spent: refused then, the person's approval is not lost. */
    if (modern && v->spend && session_backlogged(s) &&
        !(v->continued && park_is_handle(sl_buf_str(&v->upstream_state)))) {
        struct idc idb;
        refuse_busy(s, json_get(m->params, "name")->u.str, v->has_digest ? v->digest : NULL,
                    idc_of(&idb, id));
        idc_free(&idb);
        return false;
    }
    if (v->page_check) { /* a page state came back: the page's decision first */
        page_check_start(s, m, id, modern, v);
        return true;
    }
    if (v->spend) { /* a state came back: its nonce is spent first (session_spend.c) */
        spend_start(s, m, id, modern, v);
        return true;
    }
    if (v->ask.check) { /* a new question: the store checks the principal's limits first */
        ask_start(s, m, id, modern, v);
        return true;
    }
    struct sl_str tool = json_get(m->params, "name")->u.str;
    const uint8_t *digest = v->has_digest ? v->digest : NULL;
    struct idc idb;
    const char *idc = idc_of(&idb, id);
    bool kept = false;
    if (v->action == GATE_OBSERVE || (v->action == GATE_FORWARD && v->recheck)) {
        observation_start(s, m, id, modern, v);
        kept = true;
    } else if (v->action == GATE_FORWARD) {
        kept = call_forward(s, m, modern, tool, v, idc);
    } else if (v->gated && v->action == GATE_ASK && v->page) {
        kept = page_ask(s, m, id, modern, v); /* the question is on sluice's approval page */
    } else if (v->gated && !modern && v->action == GATE_ASK && v->shared) {
        session_audit(s, tool, digest, AUDIT_REFUSED, "same-call-waiting",
                      AUDIT_UP_NOT_FORWARDED, idc);
        session_reply_tool_error(s, id, false, "An identical call is already waiting for the "
                                               "person's answer. This one was not run.");
    } else if (v->gated && !modern && v->action == GATE_ASK &&
               held_count(s) >= SESSION_MAX_HELD) {
        session_audit(s, tool, digest, AUDIT_REFUSED, "too-many-held",
                      AUDIT_UP_NOT_FORWARDED, idc);
        /* the store recorded the question as open (ask_start), and it is never asked */
        store_answered(s->env->store, sl_str_c(s->principal), tool, v->digest, v->ask.nonce);
        session_reply_tool_error(s, id, false, "Too many calls are waiting for confirmation on "
                                               "this connection. The call was not run.");
    } else if (v->gated && !modern && v->action == GATE_ASK) {
        held_start(s, m, id, v);
        kept = true;
    } else if (v->gated && !modern && v->action == GATE_REFUSE_RPC &&
               v->rpc_code == MCP_MISSING_CAPABILITY) {
        session_audit(s, tool, digest, AUDIT_REFUSED, "cannot-ask",
                      AUDIT_UP_NOT_FORWARDED, idc);
        session_reply_tool_error(s, id, false, legacy_cannot_ask);
    } else {
        call_refuse(s, id, tool, v, modern);
    }
    idc_free(&idb);
    return kept;
}

/* A gated call with a malformed task (task_problem): refused with -32602 before it is asked or
 * a state of it spent. Ungated calls reach the upstream as sent, which judges their task. */
static void refuse_task(struct session *s, struct sl_str id, struct sl_str tool,
                        const struct gate_verdict *v, const char *problem)
{
    struct idc idb;
    const char *idc = idc_of(&idb, id);
    session_audit(s, tool, v->has_digest ? v->digest : NULL, AUDIT_REFUSED, "malformed-task",
                  AUDIT_UP_NOT_FORWARDED, idc);
    session_reply_error(s, id, JSONRPC_INVALID_PARAMS, problem, NULL);
    idc_free(&idb);
}

bool call_handle(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                 const struct era_envelope *env)
{
    const char *problem = call_params_problem(m->params);
    if (problem) {
        session_reply_error(s, id, JSONRPC_INVALID_PARAMS, problem, NULL);
        return false;
    }
    struct gate_input in;
    call_input(s, m, env->modern, env->caps, &in);
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    if (v.pin_refused)
        pin_refused(s, in.tool, v.reason, false);
    if (v.gated && (problem = task_problem(m->params)) != NULL) {
        refuse_task(s, id, in.tool, &v, problem);
        gate_verdict_free(&v);
        return false;
    }
    bool kept = call_act(s, m, id, env->modern, &v);
    gate_verdict_free(&v);
    return kept;
}
