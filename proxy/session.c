/* session.c: a client's messages, from its line to its handler: client in (parse, era and
 * envelope), then a local answer, the gate (session_call.c) or upstream out (session_relay.c).
 * Also the writers every session file answers the client and the journal with, and the
 * session's own lifecycle, which ends each lifecycle of its work in flight (session_priv.h). */
#include "session_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "chan.h" /* CHAN_HIGH_WATER */
#include "log.h"
#include "metrics.h"
#include "msg.h"

/* ===== writing to the client ===== */

/* rel: the JSON text of the client request the message belongs to, or NULL when it belongs to
 * none; final: it is that request's response. The front uses them to pick the HTTP stream. */
void session_send(struct session *s, struct sl_str rel, bool final, int code, struct sl_str line)
{
    if (final && s->settling) {
        spend_settle_claimed(s, s->settling, line);
        s->settling = NULL;
    }
    if (final && s->awaited)
        spend_settle(s, rel);
    if (s->gone)
        return;
    s->io->send(s->io_arg, rel, final, code, line);
    session_update_interest(s);
}

/* Messages are built on the stack (LINE_STACK bytes, more on the heap) and copied out by
 * session_send. */
#define LINE_STACK 2048

void session_reply_result(struct session *s, struct sl_str id, struct sl_str result_json)
{
    char store[LINE_STACK];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    jsonrpc_write_result(&b, id, result_json);
    session_send_line(s, id, true, sl_buf_str(&b));
    sl_buf_free(&b);
}

void session_reply_error(struct session *s, struct sl_str id, int code, const char *message,
                         const char *data)
{
    char store[LINE_STACK];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    jsonrpc_write_error(&b, id, code, message, data);
    session_send(s, id, true, code, sl_buf_str(&b));
    sl_buf_free(&b);
}

void session_reply_value(struct session *s, struct sl_str id, const struct json *result)
{
    char store[LINE_STACK];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    jsonrpc_write_result_value(&b, id, result);
    /* A result too large for the stack is dropped once sent: the front takes its memory
     * instead of copying it into its output (base.h, offered buffers). It counts in the
     * output's length like a copy, so backpressure (session_update_interest) still holds it
     * to CHAN_HIGH_WATER: e2e relay's client that stops reading sees the same growth either
     * way (13.3 MiB for 40 results of 1 MiB pending). */
    sl_offer(&b);
    session_send_line(s, id, true, sl_buf_str(&b));
    sl_offer(NULL);
    sl_buf_free(&b);
}

void session_reply_tool_error(struct session *s, struct sl_str id, bool modern, const char *text)
{
    char store[LINE_STACK];
    struct sl_buf r;
    sl_buf_on(&r, store, sizeof(store));
    msg_tool_error(&r, modern, sl_str_c(text));
    session_reply_result(s, id, sl_buf_str(&r));
    sl_buf_free(&r);
}

bool session_id_text(const struct json *id, struct sl_buf *b)
{
    if (id == NULL || (id->type != JSON_STRING && id->type != JSON_NUMBER))
        return false;
    json_write(b, id);
    return true;
}

/* ===== audit ===== */

static uint64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

int session_audit(struct session *s, struct sl_str tool, const uint8_t *digest,
                  enum audit_decision decision, const char *reason,
                  enum audit_upstream upstream,
                  const char *id)
{
    metrics_decision(decision);
    if (s->env->audit == NULL)
        return 0; /* no journal: not even the clock is read */
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
    if (audit_write(s->env->audit, &r) == 0)
        return 0;
    sl_error("cannot write the audit journal: %s", strerror(errno));
    return -1;
}

/* ===== answers sluice gives itself ===== */

/* The upstream's capabilities, as the client should see them: without tasks, since a task-
 * augmented call returns before it runs and sluice does not relay the tasks protocol. */
static struct json *upstream_caps(struct session *s, struct sl_arena *a)
{
    const struct json *caps = json_get(upstream_info(session_up(s)), "capabilities");
    if (caps == NULL || caps->type != JSON_OBJECT)
        return json_new_object(a);
    struct json *c = json_copy_object(a, caps);
    json_del(c, "tasks");
    return c;
}

static struct json *server_info(struct session *s, struct sl_arena *a)
{
    const struct json *info = upstream_info(session_up(s));
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
    const struct json *instr = json_get(upstream_info(session_up(s)), "instructions");
    if (instr && instr->type == JSON_STRING)
        json_set(a, r, "instructions", (struct json *)instr);
    json_set(a, r, "ttlMs", json_new_number(a, "0"));
    json_set(a, r, "cacheScope", json_new_string(a, "private", 7));
    json_set(a, meta, META_SERVER_INFO, server_info(s, a));
    json_set(a, r, "_meta", meta);
    session_reply_value(s, id, r);
}

enum { CAN_ELICITATION = 1, CAN_SAMPLING = 2, CAN_ROOTS = 4, CAN_ELICITATION_URL = 8 };

/* What the relay and the approval page ask of a legacy client's capabilities, as flags, and
 * the capabilities' text for the envelope (session_relay.c). caps: an object, or NULL. */
static void keep_legacy_caps(struct session *s, const struct json *caps)
{
    const struct json *url = json_get(json_get(caps, "elicitation"), "url");
    s->legacy_can = (json_get(caps, "elicitation") ? CAN_ELICITATION : 0) |
                    (json_get(caps, "sampling") ? CAN_SAMPLING : 0) |
                    (json_get(caps, "roots") ? CAN_ROOTS : 0) |
                    (url && url->type == JSON_OBJECT ? CAN_ELICITATION_URL : 0);
    struct sl_buf b = { 0 };
    if (caps)
        json_write(&b, caps);
    free(s->legacy_caps);
    s->legacy_caps = caps ? sl_xstrndup(b.p, b.len) : sl_xstrdup("{}");
    sl_buf_free(&b);
    if (s->caps_arena)
        fwd_own_envelopes(s); /* the calls sent with its envelope keep a copy */
    sl_arena_free(s->caps_arena); /* an envelope of the last initialize's */
    s->caps_arena = NULL;
    s->legacy_envelope = NULL;
}

bool session_legacy_can(const struct session *s, const char *cap)
{
    static const struct { const char *name; uint8_t bit; } caps[] = {
        { "elicitation", CAN_ELICITATION }, { "sampling", CAN_SAMPLING },
        { "roots", CAN_ROOTS }, { "elicitation.url", CAN_ELICITATION_URL },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(caps); i++)
        if (strcmp(cap, caps[i].name) == 0)
            return (s->legacy_can & caps[i].bit) != 0;
    return false;
}

/* initialize from a legacy client (PROTOCOL.md §4.1). */
static void answer_initialize(struct session *s, struct jsonrpc_msg *m, struct sl_str id)
{
    struct sl_arena *a = m->arena;
    const struct json *caps = json_get(m->params, "capabilities");
    if (caps && caps->type != JSON_OBJECT)
        caps = NULL; /* declares nothing */
    keep_legacy_caps(s, caps);
    const char *ver = era_negotiate_legacy(json_get(m->params, "protocolVersion"));
    /* Elicitation exists from 2025-06-18 on; "mode" from 2025-11-25 on (PROTOCOL.md §3.1). */
    bool has_elicitation = strcmp(ver, "2025-06-18") >= 0;
    s->legacy_form = has_elicitation && era_caps_form_elicitation(caps);
    s->legacy_mode_field = strcmp(ver, "2025-11-25") >= 0;
    struct json *r = json_new_object(a);
    json_set(a, r, "protocolVersion", json_new_string(a, ver, strlen(ver)));
    json_set(a, r, "capabilities", upstream_caps(s, a));
    json_set(a, r, "serverInfo", server_info(s, a));
    const struct json *instr = json_get(upstream_info(session_up(s)), "instructions");
    if (instr && instr->type == JSON_STRING)
        json_set(a, r, "instructions", (struct json *)instr);
    session_reply_value(s, id, r);
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

/* A valid request m with id, to its handler. Returns true when it kept m. */
static bool dispatch_request(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                             const struct era_envelope *env)
{
    notice_before_request(s, m, id, env->modern);
    if (sl_str_eq_c(m->method, "tools/call")) {
        if (m->params != NULL && m->params->type == JSON_OBJECT)
            return call_handle(s, m, id, env);
        session_reply_error(s, id, JSONRPC_INVALID_PARAMS, "params must be an object", NULL);
    } else if (env->modern && sl_str_eq_c(m->method, "server/discover")) {
        answer_discover(s, m, id);
    } else if (env->modern && (sl_str_eq_c(m->method, "initialize") ||
                                sl_str_eq_c(m->method, "ping"))) {
        session_reply_error(s, id, JSONRPC_METHOD_NOT_FOUND, "Method not found", NULL);
    } else if (sl_str_eq_c(m->method, "initialize")) {
        answer_initialize(s, m, id);
    } else if (sl_str_eq_c(m->method, "ping")) {
        session_reply_result(s, id, SL_STR("{}"));
    } else if (env->modern && sl_str_eq_c(m->method, "subscriptions/listen") &&
               upstream_era(session_up(s)) == ERA_LEGACY) {
        return listen_start(s, m, id);
    } else {
        return fwd_start(s, m, id, env->modern, m->params) != NULL;
    }
    return false;
}

/* A call refused before the gate saw it is journaled as refused, as every answered call is. */
static void audit_unheard_call(struct session *s, const struct jsonrpc_msg *m, struct sl_str id,
                               const char *reason)
{
    const struct json *name = json_get(m->params, "name");
    if (sl_str_eq_c(m->method, "tools/call") && name && name->type == JSON_STRING) {
        uint8_t digest[32];
        bool has = gate_args_digest(json_get(m->params, "arguments"), digest);
        char *idc = sl_xstrndup(id.p, id.len);
        struct sl_str tool = { name->u.str.p, name->u.str.len };
        session_audit(s, tool, has ? digest : NULL, AUDIT_REFUSED, reason,
                      AUDIT_UP_NOT_FORWARDED, idc);
        free(idc);
    }
}

/* sluice does not serve (session_refuse_all): a JSON-RPC error. */
static void refuse_request(struct session *s, const struct jsonrpc_msg *m, struct sl_str id)
{
    audit_unheard_call(s, m, id, "strict");
    session_reply_error(s, id, MCP_SERVER_ERROR, s->refusal, NULL);
}

/* A request of the client's with this id is still outstanding. Both eras forbid reusing it
 * (PROTOCOL.md §1.1); sluice relies on that: a reply is matched to its request, its HTTP
 * stream and an approved call's kept outcome by the id. */
static bool id_in_flight(const struct session *s, struct sl_str id)
{
    return fwd_has_id(s, id) || held_has_id(s, id) || observation_has_id(s, id) ||
           spend_has_id(s, id) || listen_has_id(s, id);
}

/* An error that is no outcome of the request its id names: sent without session_send, whose
 * final reply settles an approved call's kept outcome by id (session_spend.c), and would keep
 * this error as the outcome of the call in flight under the same id. On HTTP the newest POST
 * with the id gets it: the request answered (http_sessions.c). */
static void reply_error_aside(struct session *s, struct sl_str id, int code, const char *message)
{
    char store[LINE_STACK];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    jsonrpc_write_error(&b, id, code, message, NULL);
    if (!s->gone) {
        s->io->send(s->io_arg, id, true, code, sl_buf_str(&b));
        session_update_interest(s);
    }
    sl_buf_free(&b);
}

static void refuse_reused_id(struct session *s, const struct jsonrpc_msg *m, struct sl_str id)
{
    audit_unheard_call(s, m, id, "id-in-use");
    size_t shown = id.len > 64 ? 64 : id.len;
    while (shown < id.len && shown > 0 && ((unsigned char)id.p[shown] & 0xC0) == 0x80)
        shown--; /* not inside a UTF-8 sequence: a --log-json line stays valid UTF-8 */
    sl_warn("a request reuses id %.*s%s while the request with that id is in flight; refused",
            (int)shown, id.p, shown < id.len ? "..." : "");
    reply_error_aside(s, id, JSONRPC_INVALID_REQUEST,
                      "Invalid Request: a request with this id is still in flight");
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
    if (id_in_flight(s, id)) {
        refuse_reused_id(s, m, id);
    } else if (s->refusal) {
        refuse_request(s, m, id);
    } else if (!method_ok(m->method)) {
        session_reply_error(s, id, JSONRPC_METHOD_NOT_FOUND, "Method not found", NULL);
    } else if (!envelope_ok(m, read, &env, &code, &message, &data)) {
        session_reply_error(s, id, code, message, data.len ? data.p : NULL);
    } else {
        kept = dispatch_request(s, m, id, &env);
    }
    sl_buf_free(&idb);
    sl_buf_free(&data);
    return kept;
}

/* A request of the client's ended without a response (its cancel dropped it, PROTOCOL.md
 * §7.5): over HTTP its POST's stream ends, or it would wait for ever. */
static void request_ended(struct session *s, const struct json *id)
{
    struct sl_buf b = { 0 };
    if (s->io->ended && session_id_text(id, &b))
        s->io->ended(s->io_arg, sl_buf_str(&b));
    sl_buf_free(&b);
}

static void handle_notification(struct session *s, struct jsonrpc_msg *m)
{
    if (sl_str_eq_c(m->method, "notifications/initialized")) {
        s->initialized = true; /* the handshake with the upstream is sluice's own */
        return;
    }
    if (s->refusal)
        return; /* nothing reaches the upstream any more */
    if (sl_str_eq_c(m->method, "notifications/cancelled")) {
        const struct json *id = json_get(m->params, "requestId");
        if (listen_cancel(s, m))
            return;
        if (observation_cancel(s, m) || spend_cancel(s, m))
            return request_ended(s, id);
        struct held *h = held_find(s, id, false);
        if (h) /* dropped before anything was forwarded; no response (PROTOCOL.md §7.5) */
            return held_release(h, HELD_CANCELLED, NULL, NULL);
        if (fwd_cancel(s, m)) /* unknown or finished: MAY be ignored (PROTOCOL.md §4.4) */
            request_ended(s, id);
        return;
    }
    /* Only the notifications a client may send are passed on: a "tools/call" without an id
     * would otherwise reach an upstream that runs it without the gate. */
    static const char *const relayed[] = { "notifications/progress",
                                           "notifications/roots/list_changed" };
    for (size_t i = 0; i < SL_ARRAY_LEN(relayed); i++) {
        if (sl_str_eq_c(m->method, relayed[i])) {
            upstream_notify(session_up(s), m->method, m->params);
            return;
        }
    }
    sl_debug("dropping a client notification sluice does not relay");
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
        struct held *h = held_find(s, m->id, true);
        if (h)
            held_answer(h, m);
        else if (!relayed_answer(s, m))
            sl_debug("dropping a response from the client for no question of ours");
    }
    if (!kept)
        jsonrpc_msg_free(m);
}

/* What a legacy upstream may ask of us: what this client can answer (on stdio there is
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

/* A legacy upstream is initialized as the stdio client's first message says it can answer: a
 * legacy client's initialize, or a modern client's envelope (session_park.c); else as none. */
static void initialize_for(struct session *s, struct jsonrpc_msg *m)
{
    struct era_envelope env = { 0 };
    int code;
    const char *msg;
    struct sl_buf data = { 0 };
    bool read = m->kind == JSONRPC_REQUEST &&
                era_read_envelope(m->params, &env, &code, &msg, &data) == 0;
    sl_buf_free(&data);
    const struct json *caps = NULL, *info = NULL;
    if (read && !env.modern && sl_str_eq_c(m->method, "initialize")) {
        caps = json_get(m->params, "capabilities");
        info = json_get(m->params, "clientInfo");
    } else if (read && env.modern) {
        caps = env.caps;
        info = json_get(json_get(m->params, "_meta"), META_CLIENT_INFO);
    }
    upstream_initialize(session_up(s), caps ? routable_caps(m->arena, caps) : NULL, info);
}

/* A line from a byte-stream client (stdio). Before the upstream is initialized, the first
 * message waits: a legacy upstream is initialized with what that message says the client
 * can do (and reading pauses meanwhile). */
void session_input_line(struct session *s, struct sl_str line)
{
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error err;
    if (jsonrpc_parse(line.p, line.len, &m, &err) != 0) {
        sl_warn("client message refused: %s", err.msg);
        reply_error_aside(s, sl_str_c(err.id), err.code,
                          err.code == JSONRPC_PARSE_ERROR ? "Parse error" : "Invalid Request");
        return;
    }
    if (s->refusal) {
        process_msg(s, m, NULL);
        return;
    }
    if (!s->up_ready || !upstream_ready(session_up(s))) {
        s->stash = m;
        initialize_for(s, m);
        session_update_interest(s);
        return;
    }
    process_msg(s, m, NULL);
}

/* With an opener, the client's initialize opens the session's own upstream and waits for it
 * (session_own.c); until it is ready nothing else is taken, nor while it is a child that stopped
 * reading its stdin: a request sent there would wait in a pipe nobody reads and fail unrun when
 * the child is gone. (Over HTTP such a request first waits for the next one, --upstream-wait.)
 * Returns true when it took m. */
static bool own_first(struct session *s, struct jsonrpc_msg *m)
{
    if (s->env->opener == NULL)
        return false;
    bool deaf = s->own && upstream_deaf(s->own_up);
    if (s->own && (m->kind != JSONRPC_REQUEST || (upstream_ready(s->own_up) && !deaf)))
        return false;
    struct sl_buf id = { 0 };
    json_write(&id, m->id);
    char err[300];
    if (s->own) { /* before its first answer, while it is opened again, or while it is deaf */
        session_reply_error(s, sl_buf_str(&id), MCP_SERVER_ERROR,
                            own_unready_text(s, err, sizeof(err)), NULL);
    } else if (!sl_str_eq_c(m->method, "initialize")) {
        return sl_buf_free(&id), false;
    } else if (own_open(s, m, err, sizeof(err)) != 0) {
        sl_error("cannot open the %s of a new session: %s", s->env->opener->what, err);
        char msg[400];
        snprintf(msg, sizeof(msg), "sluice cannot start the server for this session: %s", err);
        session_reply_error(s, sl_buf_str(&id), MCP_SERVER_ERROR, msg, NULL);
    } else {
        s->stash = m;
        sl_buf_free(&id);
        return true;
    }
    sl_buf_free(&id);
    jsonrpc_msg_free(m);
    return true;
}

bool session_backlogged(const struct session *s)
{
    struct upstream *up = session_up(s);
    return up != NULL && upstream_out_len(up) > CHAN_HIGH_WATER;
}

/* Whether m answers or ends work already held: a response, a cancellation, or a 2026-07-28
 * call that continues a round (a parked call's answers go to its own upstream, not this one:
 * call_forward checks the rest once the state is opened). */
static bool ends_held_work(const struct jsonrpc_msg *m, bool modern)
{
    return m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR ||
           (m->kind == JSONRPC_NOTIFICATION &&
            sl_str_eq_c(m->method, "notifications/cancelled")) ||
           (modern && m->kind == JSONRPC_REQUEST && sl_str_eq_c(m->method, "tools/call") &&
            json_get(m->params, "requestState") != NULL);
}

/* Whether the upstream has not read what it was sent (a child that stopped reading its stdin).
 * A client on a pipe is paused then (session_update_interest); one over HTTP cannot be, so its
 * new requests and notifications are refused rather than queued without bound. What ends held
 * work still passes. */
static bool refused_backlog(struct session *s, struct jsonrpc_msg *m, bool modern)
{
    if (!session_backlogged(s) || ends_held_work(m, modern))
        return false;
    sl_debug("refusing %.*s: the upstream server has %zu bytes it has not read",
             (int)m->method.len, m->method.p, upstream_out_len(session_up(s)));
    if (m->kind == JSONRPC_REQUEST) {
        struct sl_buf id = { 0 };
        json_write(&id, m->id);
        session_reply_error(s, sl_buf_str(&id), MCP_SERVER_ERROR, BUSY_TEXT, NULL);
        sl_buf_free(&id);
    }
    jsonrpc_msg_free(m);
    return true;
}

void session_input(struct session *s, struct jsonrpc_msg *m)
{
    if (own_first(s, m) || refused_backlog(s, m, false))
        return;
    process_msg(s, m, NULL);
}

void session_input_modern(struct session *s, struct jsonrpc_msg *m,
                          const struct era_envelope *env)
{
    SL_REQUIRE(env->modern);
    if (refused_backlog(s, m, true))
        return;
    process_msg(s, m, env);
}

void session_input_oversize(struct session *s)
{
    sl_warn("client message over %u bytes refused", SL_MAX_MESSAGE);
    session_reply_error(s, SL_STR("null"), JSONRPC_PARSE_ERROR, "Parse error: message too large",
                        NULL);
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
    if (s == NULL || s->gone || session_up(s) == NULL || s->io->pause == NULL)
        return;
    s->io->pause(s->io_arg, !s->started || s->stash != NULL ||
                                upstream_out_len(session_up(s)) > CHAN_HIGH_WATER);
    upstream_pause(session_up(s), s->io->out_len(s->io_arg) > CHAN_HIGH_WATER);
}

void session_upstream_ready(struct session *s)
{
    s->up_ready = true;
    struct jsonrpc_msg *m = s->stash;
    s->stash = NULL;
    if (m)
        process_msg(s, m, NULL);
    session_update_interest(s);
    fwd_send_unsent(s); /* a call waiting for its own upstream (session_park.c); last: a
                         * session whose client left may end with it */
}

size_t session_busy(const struct session *s)
{
    return s->nrelayed + (s->stash != NULL) + fwd_count(s) + held_count(s) +
           observation_count(s) + spend_count(s);
}

bool session_awaits_client(const struct session *s)
{
    return held_count(s) > 0 || s->nrelayed > 0 || park_awaits_client(s);
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
        session_audit(s, (struct sl_str){ name->u.str.p, name->u.str.len }, has ? digest : NULL,
                      AUDIT_REFUSED, reason, AUDIT_UP_NOT_FORWARDED, id.p);
        session_reply_tool_error(s, sl_buf_str(&id), false, why);
    } else {
        session_reply_error(s, sl_buf_str(&id), JSONRPC_INTERNAL_ERROR, why, NULL);
    }
    sl_buf_free(&id);
    jsonrpc_msg_free(m);
}

void session_refuse_held(struct session *s, const char *reason, const char *text)
{
    held_release_all(s, HELD_UPSTREAM_GONE, reason, text);
    refuse_stash(s, reason);
}

void session_refuse_all(struct session *s, const char *text)
{
    free(s->refusal);
    s->refusal = sl_xstrdup(text);
    held_release_all(s, HELD_UPSTREAM_GONE, "strict", text);
    struct jsonrpc_msg *m = s->stash;
    s->stash = NULL;
    if (m)
        process_msg(s, m, NULL); /* answered with the refusal (handle_request) */
    session_update_interest(s);
}

/* Sessions whose client left while an approved call ran: each frees itself when its last such
 * call ends (session_maybe_reap); session_stop_all ends them when sluice stops. */
static struct session *zombies;

static void session_destroy(struct session *s)
{
    awaited_free_all(s);
    own_release(s);
    if (s->gone) {
        if (s->zprev)
            s->zprev->znext = s->znext;
        else
            zombies = s->znext;
        if (s->znext)
            s->znext->zprev = s->zprev;
    }
    sl_arena_free(s->caps_arena);
    free(s->legacy_caps);
    free(s->refusal);
    if (s->principal != s->principal_buf)
        free(s->principal);
    free(s);
}

void session_maybe_reap(struct session *s)
{
    if (s->gone && !s->stopping && session_busy(s) == 0)
        session_destroy(s);
}

void session_free(struct session *s)
{
    if (s == NULL)
        return;
    park_session_gone(s);
    held_release_all(s, HELD_CLIENT_GONE, NULL, NULL);
    observation_free_all(s, true);
    spend_free_all(s, true);
    relayed_free_all(s);
    listen_free_all(s);
    fwd_free_all(s);
    jsonrpc_msg_free(s->stash);
    s->stash = NULL;
    if (session_busy(s) == 0) {
        session_destroy(s);
        return;
    }
    s->gone = true; /* approved calls still run: their outcomes are kept for a retry */
    s->io = NULL;
    s->znext = zombies;
    if (zombies)
        zombies->zprev = s;
    zombies = s;
}

void session_stop_all(void)
{
    while (zombies) {
        struct session *s = zombies;
        s->stopping = true; /* nothing reaps it meanwhile */
        observation_free_all(s, false);
        spend_free_all(s, false);
        fwd_free_all(s);
        session_destroy(s);
    }
}

