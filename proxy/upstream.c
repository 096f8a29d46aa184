/* upstream.c: the protocol with the upstream server: era detection, the handshake, request ids,
 * progress and reply routing, tools listing. Bytes move through a transport (up_transport.h):
 * a child on pipes (up_stdio.c) or a Streamable HTTP server (up_http.c). */
#include "upstream.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "msg.h"
#include "params.h"
#include "pin.h"
#include "up_http.h"
#include "up_stdio.h"
#include "up_transport.h"

#define PENDING_BUCKETS 4096
#define DISCOVER_TIMEOUT_MS_DEFAULT 10000

enum up_state {
    UP_PROBING,      /* server/discover sent, waiting for its answer or the timeout */
    UP_AWAIT_INIT,   /* legacy: waiting for upstream_initialize() */
    UP_INITIALIZING, /* legacy: initialize sent */
    UP_READY,        /* relaying */
    UP_GONE,         /* the transport closed; pending requests failed */
};

struct up_request {
    uint64_t id;
    up_reply_cb *cb;
    up_note_cb *note;         /* what the upstream says about it (upstream.h), or NULL */
    char *token;              /* the caller's progressToken, JSON text, or NULL */
    uint64_t t0_us;           /* sent at, for the latency histogram */
    bool lists_tools;         /* a tools/list: its result teaches params (x-mcp-header) */
    bool lists_from_start;    /* a tools/list without a cursor: its first page */
    bool listens;             /* a subscriptions/listen: its stream is the subscription's */
    void *arg;
    struct up_request *next;  /* bucket chain */
};

struct upstream {
    enum up_state state;
    enum era era;
    struct up_transport *tr;  /* a child on pipes or a Streamable HTTP server */
    bool transport_failed;    /* the reply being handled was made up for an undelivered request */
    bool deaf;                /* the server reads nothing more: no new request (upstream_deaf) */
    bool warned_unreachable;
    unsigned outage_failures; /* requests that found no server since it last answered; 0: up */
    unsigned outage_probes;   /* liveness probes that failed in the same outage */
    uint64_t outage_since_us; /* when the first of them failed */
    struct event *live_ev;    /* every second: a ready HTTP upstream that said nothing is probed */
    struct event *silence_ev; /* every second: a child's requests unanswered for silence_s */
    unsigned silence_s;
    uint64_t heard_us;        /* when the server last said anything */
    bool probing;             /* a probe is out */
    bool unreachable;         /* a probe failed, and the server has said nothing since */
    char *init_params;        /* the params of our initialize, JSON text, for a second one */
    struct event *retry_ev;   /* probe again, the server was not reachable yet */
    struct params *params;    /* x-mcp-header marks from the tools/list replies seen */
    struct pins *pins;        /* the tools' definition digests, from the same replies */
    struct sl_spare spare;    /* answered requests, for the next ones */
    struct up_request *probe; /* the pending server/discover */
    struct event *probe_ev;   /* its time limit: silence means the legacy era */
    struct lister *listers;   /* tools/list walks in progress (freed with the upstream) */
    uint64_t next_id;
    size_t npending;
    struct up_request *buckets[PENDING_BUCKETS];
    struct sl_arena *info_arena;
    struct json *info;      /* initialize result (legacy) or discover result (modern) */
    struct upstream_cbs cbs;
    void *arg;
};

struct lister;
static void lister_free(struct lister *l);

/* ===== pending requests ===== */

static struct up_request **pending_bucket(struct upstream *up, uint64_t id)
{
    return &up->buckets[id % PENDING_BUCKETS];
}

static struct up_request *take_pending(struct upstream *up, uint64_t id)
{
    for (struct up_request **pp = pending_bucket(up, id); *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            struct up_request *r = *pp;
            *pp = r->next;
            up->npending--;
            return r;
        }
    }
    return NULL;
}

static void request_free(struct upstream *up, struct up_request *r)
{
    free(r->token);
    if (!sl_spare_keep(&up->spare, r, sizeof(*r)))
        free(r);
}

static struct up_request *find_pending(struct upstream *up, uint64_t id)
{
    struct up_request *r = *pending_bucket(up, id);
    while (r && r->id != id)
        r = r->next;
    return r;
}

static void fail_all_pending(struct upstream *up, const char *why)
{
    for (size_t b = 0; b < PENDING_BUCKETS; b++) {
        while (up->buckets[b]) {
            struct up_request *r = up->buckets[b];
            up->buckets[b] = r->next;
            up->npending--;
            metrics_upstream_error(METRICS_UP_GONE);
            r->cb(NULL, why, r->arg);
            request_free(up, r);
        }
    }
}

/* ===== sending ===== */

/* Hands one message to the transport. A request is modern once the era is, and the probe
 * (server/discover) is a modern request whatever the era turns out to be. */
static void transport_send(struct upstream *up, const char *id, struct sl_str method,
                           const struct json *params, struct sl_str line)
{
    struct up_msg m = {
        .id = id,
        .method = method,
        .params = params,
        .modern = (up->era == ERA_MODERN || sl_str_eq_c(method, "server/discover")) && method.p,
        .line = line,
    };
    up->tr->ops->send(up->tr, &m);
}

static void send_msg(struct upstream *up, const char *id, struct sl_str method,
                     const struct json *params)
{
    char store[2048]; /* most requests: transport_send copies the line */
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    if (id)
        msg_up_request(&b, id, method, params);
    else
        msg_up_notification(&b, method, params);
    transport_send(up, id, method, params, sl_buf_str(&b));
    sl_buf_free(&b);
}

struct up_request *upstream_request(struct upstream *up, struct sl_str method,
                                    const struct json *params, up_reply_cb *cb, void *arg)
{
    return upstream_request_notes(up, method, params, cb, NULL, arg);
}

/* Progress tokens are chosen by clients, so two clients may pick the same one: the upstream sees
 * our request id instead, and its progress finds the request (and the client's token) by it. */
struct up_request *upstream_request_notes(struct upstream *up, struct sl_str method,
                                          const struct json *params, up_reply_cb *cb,
                                          up_note_cb *note, void *arg)
{
    if (!upstream_takes(up))
        return NULL;
    struct up_request *r = sl_spare_take(&up->spare, sizeof(*r));
    if (r)
        memset(r, 0, sizeof(*r));
    else
        r = sl_xcalloc(1, sizeof(*r));
    r->id = ++up->next_id;
    r->cb = cb;
    r->note = note;
    r->arg = arg;
    r->t0_us = sl_mono_us();
    r->lists_tools = sl_str_eq_c(method, "tools/list");
    r->lists_from_start = r->lists_tools && json_get(params, "cursor") == NULL;
    r->listens = sl_str_eq_c(method, "subscriptions/listen");
    struct up_request **pp = pending_bucket(up, r->id);
    r->next = *pp;
    *pp = r;
    up->npending++;
    char id[24];
    sl_u64_dec(id, r->id);
    struct json *meta = json_get(params, "_meta");
    struct json *token = json_get(meta, "progressToken");
    if (note && token && (token->type == JSON_STRING || token->type == JSON_NUMBER)) {
        struct sl_buf t = { 0 };
        json_write(&t, token);
        r->token = sl_xstrndup(t.p, t.len);
        sl_buf_free(&t);
        struct sl_arena *a = sl_arena_new();
        struct json *p2 = json_copy_object(a, params), *m2 = json_copy_object(a, meta);
        json_set(a, m2, "progressToken", json_new_number(a, id));
        json_set(a, p2, "_meta", m2);
        send_msg(up, id, method, p2);
        sl_arena_free(a);
    } else {
        send_msg(up, id, method, params);
    }
    return r;
}

/* notifications/progress for one of our requests: to its owner, with the owner's token. On a
 * request's own stream (for_id) the token must be that request's: a token sent upstream
 * unmapped, or a hostile server, could otherwise name another client's request. */
static bool route_progress(struct upstream *up, struct jsonrpc_msg *m, const char *for_id)
{
    const struct json *t = json_get(m->params, "progressToken");
    if (t == NULL || t->type != JSON_NUMBER)
        return false;
    uint64_t id, on;
    if (!sl_u64_parse(t->u.num, &id))
        return false;
    if (for_id && for_id[0] && (!sl_u64_parse(sl_str_c(for_id), &on) || on != id)) {
        sl_debug("dropping an upstream progress for another request than its stream's");
        return true;
    }
    struct up_request *r = find_pending(up, id);
    if (r == NULL || r->token == NULL)
        return r != NULL; /* ours, but nobody asked for progress: dropped */
    struct json *orig;
    char err[64];
    if (json_parse(r->token, strlen(r->token), m->arena, &orig, err, sizeof(err)) != 0)
        return true;
    json_set(m->arena, m->params, "progressToken", orig);
    r->note(m, r->arg);
    return true;
}

/* Whether a notification concerns the whole session, wherever the server sent it. */
static bool session_wide(struct sl_str method)
{
    static const char *const wide[] = { "notifications/tools/list_changed",
                                        "notifications/prompts/list_changed",
                                        "notifications/resources/list_changed",
                                        "notifications/resources/updated",
                                        "notifications/cancelled" };
    for (size_t i = 0; i < SL_ARRAY_LEN(wide); i++)
        if (sl_str_eq_c(method, wide[i]))
            return true;
    return false;
}

/* A notification on the response stream of one request (for_id names it) is about that request
 * (an HTTP server's event stream for a POST: PROTOCOL.md §5.3, §7.4): to that request's owner
 * only. Where no client owns it (a request of sluice's own, or one already answered or
 * cancelled) it is dropped: sent to every client instead, a log line about one client's
 * arguments would reach the others. A progress notification whose token is not ours is no
 * client's either. */
static bool route_request_note(struct upstream *up, struct jsonrpc_msg *m, const char *for_id)
{
    uint64_t id;
    if (for_id == NULL || for_id[0] == '\0')
        return false;
    if (!sl_u64_parse(sl_str_c(for_id), &id))
        return true; /* an id that is not ours: that request's, not the session's */
    struct up_request *r = find_pending(up, id);
    /* A listen's stream carries its subscription's changes: the listener's, not everyone's. */
    if (session_wide(m->method) && !(r && r->listens))
        return false;
    if (r && r->note && !sl_str_eq_c(m->method, "notifications/progress"))
        r->note(m, r->arg);
    else
        sl_debug("dropping an upstream %.*s about a request no client waits for",
                 (int)m->method.len, m->method.p);
    return true;
}

/* Tells the server that r is cancelled, as its transport and era want it told. */
static void tell_cancelled(struct upstream *up, const struct up_request *r, const char *reason)
{
    struct sl_arena *a = sl_arena_new();
    struct json *p = json_new_object(a);
    char id[24];
    sl_u64_dec(id, r->id);
    json_set(a, p, "requestId", json_new_number(a, id));
    if (reason)
        json_set(a, p, "reason", json_new_string(a, reason, strlen(reason)));
    /* Some transports tell the server themselves (over HTTP a modern server reads the
     * closing of the request's stream as the cancellation); else the notification does. */
    bool modern = up->era == ERA_MODERN || r == up->probe;
    if (!up->tr->ops->cancel(up->tr, id, modern) && up->state != UP_GONE)
        send_msg(up, NULL, SL_STR("notifications/cancelled"), p);
    sl_arena_free(a);
}

void upstream_cancel(struct upstream *up, struct up_request *req, const char *reason)
{
    struct up_request *r = take_pending(up, req->id);
    SL_REQUIRE(r == req);
    tell_cancelled(up, r, reason);
    request_free(up, r);
}

void upstream_notify(struct upstream *up, struct sl_str method, const struct json *params)
{
    if (up->state != UP_GONE)
        send_msg(up, NULL, method, params);
}

/* ===== era detection and handshake (PROTOCOL.md §1.8) ===== */

static void keep_info(struct upstream *up, const struct json *res)
{
    struct sl_buf b = { 0 };
    char err[160];
    json_write(&b, res);
    sl_arena_free(up->info_arena);
    up->info_arena = sl_arena_new();
    if (json_parse(b.p, b.len, up->info_arena, &up->info, err, sizeof(err)) != 0)
        up->info = json_new_object(up->info_arena);
    sl_buf_free(&b);
}

static void become_ready(struct upstream *up)
{
    up->state = UP_READY;
    up->heard_us = sl_mono_us();
    struct sl_str name = upstream_name(up);
    sl_info("upstream \"%.*s\" is ready (%s era)", (int)name.len, name.p,
            up->era == ERA_MODERN ? "modern, 2026-07-28" : "legacy");
    up->cbs.on_ready(up, up->arg);
}

static void era_known(struct upstream *up, enum era era)
{
    up->era = era;
    sl_info("the upstream speaks the %s era",
            era == ERA_MODERN ? "modern (2026-07-28)" : "legacy (2025-11-25 and earlier)");
    up->cbs.on_era(up, up->arg);
}

static void on_initialize_reply(struct jsonrpc_msg *msg, const char *why, void *arg)
{
    struct upstream *up = arg;
    if (msg == NULL || msg->kind != JSONRPC_RESULT || msg->result->type != JSON_OBJECT) {
        sl_error("upstream refused initialize: %s", msg ? "error response" : why);
        upstream_terminate(up, 0);
        return;
    }
    keep_info(up, msg->result);
    const struct json *ver = json_get(up->info, "protocolVersion");
    if (ver && ver->type == JSON_STRING && ver->u.str.len < 16) {
        char v[16];
        snprintf(v, sizeof(v), "%.*s", (int)ver->u.str.len, ver->u.str.p);
        up->tr->ops->set_version(up->tr, v); /* HTTP repeats it on every later POST */
    }
    upstream_notify(up, SL_STR("notifications/initialized"), NULL);
    become_ready(up);
}

/* The params of our initialize: sluice's own, or with the client's capabilities and clientInfo
 * when the upstream is that one client's. */
static struct json *init_params(struct sl_arena *a, const struct json *caps,
                                const struct json *client_info)
{
    char err[64];
    struct json *params;
    static const char init[] = "{\"protocolVersion\":\"" ERA_LEGACY_LATEST "\","
                               "\"capabilities\":{},\"clientInfo\":{\"name\":\"sluice\","
                               "\"version\":\"" SLUICE_VERSION "\"}}";
    SL_REQUIRE(json_parse(init, sizeof(init) - 1, a, &params, err, sizeof(err)) == 0);
    if (caps && caps->type == JSON_OBJECT)
        json_set(a, params, "capabilities", (struct json *)caps);
    if (client_info && client_info->type == JSON_OBJECT)
        json_set(a, params, "clientInfo", (struct json *)client_info);
    return params;
}

static void send_initialize(struct upstream *up, const struct json *params)
{
    up->state = UP_INITIALIZING;
    upstream_request(up, SL_STR("initialize"), params, on_initialize_reply, up);
}

void upstream_initialize(struct upstream *up, const struct json *caps,
                         const struct json *client_info)
{
    if (up->state != UP_AWAIT_INIT)
        return;
    struct sl_arena *a = sl_arena_new();
    struct json *params = init_params(a, caps, client_info);
    if (up->init_params == NULL) { /* kept for a handshake done again (HTTP session lost) */
        struct sl_buf b = { 0 };
        json_write(&b, params);
        up->init_params = sl_xstrndup(b.p, b.len);
        sl_buf_free(&b);
    }
    send_initialize(up, params);
    sl_arena_free(a);
}

static void start_legacy(struct upstream *up)
{
    up->state = UP_AWAIT_INIT;
    era_known(up, ERA_LEGACY);
}

bool upstream_reachable(const struct upstream *up)
{
    return !up->unreachable && up->outage_failures == 0;
}

bool upstream_ready(const struct upstream *up)
{
    return up->state == UP_READY;
}

bool upstream_deaf(const struct upstream *up)
{
    return up->deaf;
}

bool upstream_takes(const struct upstream *up)
{
    return up->state != UP_GONE && !up->deaf;
}

void upstream_refuse(struct upstream *up, const struct jsonrpc_msg *msg, const char *why)
{
    struct sl_buf id = { 0 }, b = { 0 };
    json_write(&id, msg->id);
    jsonrpc_write_error(&b, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND, why, NULL);
    upstream_send_line(up, sl_buf_str(&b));
    sl_buf_free(&id);
    sl_buf_free(&b);
}

void upstream_send_line(struct upstream *up, struct sl_str line)
{
    if (up->state != UP_GONE)
        transport_send(up, NULL, SL_STR_NULL, NULL, line);
}

static bool lists_modern(const struct json *versions)
{
    if (versions == NULL || versions->type != JSON_ARRAY)
        return false;
    for (size_t i = 0; i < versions->u.arr.n; i++)
        if (json_str_is(versions->u.arr.v[i], ERA_MODERN_VERSION))
            return true;
    return false;
}

static void on_discover_reply(struct jsonrpc_msg *msg, const char *why, void *arg)
{
    struct upstream *up = arg;
    (void)why;
    event_del(up->probe_ev);
    if (msg == NULL)
        return; /* gone: on_exit reports it */
    if (up->transport_failed) {
        /* A sidecar often starts before its server: ask again, the handshake is harmless. */
        if (!up->warned_unreachable)
            sl_warn("the upstream server is not reachable yet; retrying every second");
        up->warned_unreachable = true;
        up->probe = NULL;
        struct timeval tv = { 1, 0 };
        evtimer_add(up->retry_ev, &tv);
        return;
    }
    if (msg->kind == JSONRPC_RESULT && lists_modern(json_get(msg->result, "supportedVersions"))) {
        keep_info(up, msg->result);
        era_known(up, ERA_MODERN);
        become_ready(up);
        return;
    }
    /* Only MCP_UNSUPPORTED_VERSION with a supported list is evidence of a modern server; any
     * other error code means a legacy server (they answer unknown methods with arbitrary
     * codes). */
    if (msg->kind == JSONRPC_ERROR) {
        const struct json *data = json_get(msg->error, "data");
        if (lists_modern(json_get(data, "supported"))) {
            up->info_arena = sl_arena_new();
            up->info = json_new_object(up->info_arena);
            era_known(up, ERA_MODERN);
            become_ready(up);
            return;
        }
    }
    start_legacy(up);
}

static void on_probe_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct upstream *up = arg;
    (void)fd;
    (void)what;
    sl_info("upstream did not answer server/discover in time; assuming the legacy era");
    if (up->probe)
        upstream_cancel(up, up->probe, "timeout");
    up->probe = NULL;
    start_legacy(up);
}

static void start_probe(struct upstream *up)
{
    struct sl_arena *a = sl_arena_new();
    struct json *params = era_add_envelope(a, NULL, NULL);
    struct json *meta = json_get(params, "_meta");
    struct json *info = json_new_object(a);
    json_set(a, info, "name", json_new_string(a, "sluice", 6));
    json_set(a, info, "version", json_new_string(a, SLUICE_VERSION, strlen(SLUICE_VERSION)));
    json_set(a, meta, META_CLIENT_INFO, info);
    up->state = UP_PROBING;
    up->probe = upstream_request(up, SL_STR("server/discover"), params, on_discover_reply, up);
    sl_arena_free(a);
    const char *env = getenv("SLUICE_DISCOVER_TIMEOUT_MS");
    long ms = env ? strtol(env, NULL, 10) : DISCOVER_TIMEOUT_MS_DEFAULT;
    if (ms <= 0)
        ms = DISCOVER_TIMEOUT_MS_DEFAULT;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    event_add(up->probe_ev, &tv);
}

/* ===== input from the upstream ===== */

/* The request of ours whose response stream (for_id, up_transport.h) carried a request of the
 * server's: *on, or NULL when the channel names none. false when it names a request that is no
 * longer pending (answered, cancelled): the question is about a request nobody waits for, and
 * handed to whichever call is in flight it could reach a client it is not about. */
static bool asked_on(struct upstream *up, const char *for_id, const struct up_request **on)
{
    uint64_t id;
    *on = NULL;
    if (for_id == NULL || for_id[0] == '\0')
        return true;
    if (sl_u64_parse(sl_str_c(for_id), &id))
        *on = find_pending(up, id);
    return *on != NULL;
}

static void answer_server_request(struct upstream *up, struct jsonrpc_msg *m, const char *for_id)
{
    struct sl_buf id = { 0 }, out = { 0 };
    const struct up_request *on;
    json_write(&id, m->id);
    if (sl_str_eq_c(m->method, "ping")) {
        jsonrpc_write_result(&out, sl_buf_str(&id), SL_STR("{}"));
    } else if (!asked_on(up, for_id, &on)) {
        sl_info("upstream: a %.*s on the stream of request %s, which no longer runs; refused",
                (int)m->method.len, m->method.p, for_id);
        jsonrpc_write_error(&out, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND,
                            "the request this is about is over", NULL);
    } else if (up->state == UP_READY && up->cbs.on_request) {
        up->cbs.on_request(up, m, on, up->arg);
    } else {
        jsonrpc_write_error(&out, sl_buf_str(&id), JSONRPC_METHOD_NOT_FOUND,
                            "sluice cannot relay this request yet", NULL);
    }
    if (out.len)
        transport_send(up, NULL, SL_STR_NULL, NULL, sl_buf_str(&out));
    sl_buf_free(&id);
    sl_buf_free(&out);
}

static void route_reply(struct upstream *up, struct jsonrpc_msg *m)
{
    uint64_t id;
    struct up_request *r = m->id->type == JSON_NUMBER && sl_u64_parse(m->id->u.num, &id)
                               ? take_pending(up, id) : NULL;
    if (r == NULL) {
        sl_debug("dropping an upstream reply for no pending request (late or cancelled)");
        return;
    }
    /* The era probe's error is an answer, not a failure: a legacy server refuses
     * server/discover, and that refusal is how sluice learns its era. */
    bool probe = r == up->probe;
    if (probe)
        up->probe = NULL;
    metrics_upstream_latency((double)(sl_mono_us() - r->t0_us) / 1e6);
    if (r->lists_tools && m->kind == JSONRPC_RESULT) {
        params_learn(up->params, json_get(m->result, "tools"));
        const struct json *next = json_get(m->result, "nextCursor");
        pins_learn(up->pins, json_get(m->result, "tools"),
                   r->lists_from_start && (next == NULL || next->type == JSON_NULL));
    }
    if (m->kind == JSONRPC_ERROR && !probe)
        metrics_upstream_error(METRICS_UP_RPC_ERROR);
    r->cb(m, NULL, r->arg);
    request_free(up, r);
}

/* A response on a channel that answers only for_id (up_transport.h), for another request: a
 * server's mix-up, which would hand one client's result to another's call. */
static bool stray_response(const struct jsonrpc_msg *m, const char *for_id)
{
    if (for_id == NULL)
        return false;
    if (m->id->type == JSON_NUMBER && sl_str_eq_c(m->id->u.num, for_id))
        return false;
    struct sl_buf id = { 0 };
    json_write(&id, m->id);
    sl_warn("upstream: a response for id %.*s in the reply to %s; dropped", (int)id.len, id.p,
            for_id[0] ? for_id : "a message that is not a request");
    sl_buf_free(&id);
    return true;
}

static void handle_message(struct upstream *up, struct sl_str line, const char *for_id)
{
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error err;
    if (jsonrpc_parse(line.p, line.len, &m, &err) != 0) {
        sl_warn("upstream sent an invalid message (%s); dropped", err.msg);
        return;
    }
    switch (m->kind) {
    case JSONRPC_RESULT:
    case JSONRPC_ERROR:
        if (!stray_response(m, for_id))
            route_reply(up, m);
        break;
    case JSONRPC_REQUEST:
        answer_server_request(up, m, for_id);
        break;
    case JSONRPC_NOTIFICATION:
        if (sl_str_eq_c(m->method, "notifications/progress") && route_progress(up, m, for_id))
            break;
        if (route_request_note(up, m, for_id))
            break;
        if (up->state == UP_READY)
            up->cbs.on_notification(up, m, up->arg);
        break;
    }
    jsonrpc_msg_free(m);
}

/* ===== what the transport reports ===== */

/* An outage is logged twice, when it starts and when it ends, with the count in between: a
 * sidecar started before its server, or a server down for an hour, would otherwise log a line
 * for every probe and every call. A failed request or a failed liveness probe starts it (see
 * outage_starts: whether nothing failed since the server last answered). */
static bool outage_starts(struct upstream *up)
{
    if (up->outage_failures + up->outage_probes != 0)
        return false;
    up->outage_since_us = sl_mono_us();
    return true;
}

static void outage_failed(struct upstream *up, const char *id, const char *why)
{
    bool first = outage_starts(up);
    up->outage_failures++;
    if (first) {
        sl_warn("upstream request %s failed: %s; further failures are counted until the "
                "server answers again",
                id, why);
    } else {
        sl_debug("upstream request %s failed: %s (failure %u of this outage)", id, why,
                 up->outage_failures);
    }
}

static void outage_over(struct upstream *up)
{
    unsigned n = up->outage_failures, p = up->outage_probes;
    if (n == 0 && p == 0)
        return;
    up->outage_failures = 0;
    up->outage_probes = 0;
    char probes[64] = "";
    if (p)
        snprintf(probes, sizeof(probes), " (and %u failed liveness probe%s)", p,
                 p == 1 ? "" : "s");
    sl_info("the upstream server answers again, after %u failed request%s over %.0f s%s", n,
            n == 1 ? "" : "s", (double)(sl_mono_us() - up->outage_since_us) / 1e6, probes);
}

/* ===== liveness: an HTTP upstream that went away while nobody called it ===== */

/* Without a probe, a server that goes away is found only by the next request that fails, so
 * /readyz keeps saying 200 to a load balancer for a server that is not there. The probe asks
 * the transport for a bare connection (no request: the server's session and the error metrics
 * stay untouched), only when the server said nothing in the last LIVE_INTERVAL_MS (traffic
 * proves it is there), and every LIVE_INTERVAL_MS while it is unreachable. The transport bounds
 * each probe, so a server gone is seen within about 1 s + the probe's limit. */
#define LIVE_INTERVAL_MS 1000

/* What a probe (or a message) said. It joins the outage log: one line when the outage starts,
 * one with the counts when it ends. */
static void set_reachable(struct upstream *up, bool reachable, const char *why)
{
    if (reachable) {
        up->heard_us = sl_mono_us();
        if (!up->unreachable)
            return;
        up->unreachable = false;
        outage_over(up);
    } else {
        if (outage_starts(up))
            sl_warn("the upstream server cannot be reached (%s); sluice is not ready until it "
                    "answers again, and further failures are counted until then",
                    why);
        up->outage_probes++;
        if (up->unreachable)
            return;
        up->unreachable = true;
        sl_debug("the upstream server is unreachable now: %s", why);
    }
    if (up->cbs.on_reachable)
        up->cbs.on_reachable(up, reachable, up->arg);
}

static void on_live_tick(evutil_socket_t fd, short what, void *arg)
{
    struct upstream *up = arg;
    (void)fd, (void)what;
    if (up->state != UP_READY || up->probing)
        return;
    if (!up->unreachable && sl_mono_us() - up->heard_us < LIVE_INTERVAL_MS * 1000u)
        return;
    up->probing = true;
    up->tr->ops->liveness(up->tr);
}

static void on_transport_liveness(bool reachable, const char *why, void *arg)
{
    struct upstream *up = arg;
    up->probing = false;
    if (up->state == UP_READY)
        set_reachable(up, reachable, why);
}

/* ===== silence: a child's reply that never comes ===== */

/* A child cannot be probed (it is there while it runs), and a reply it garbles (invalid UTF-8,
 * a line over the limit) is dropped whole, its id with it: without a bound, the call it
 * answered would wait for ever. So a request that has heard nothing from the server for
 * silence_s since it was sent is failed, as an HTTP upstream's silent reply is
 * (--upstream-timeout). Any message counts, so a long call that sends progress goes on. */
#define SILENCE_BATCH 64 /* requests failed per tick: the rest the next second */

static void on_silence_tick(evutil_socket_t fd, short what, void *arg)
{
    struct upstream *up = arg;
    (void)fd, (void)what;
    if (up->state != UP_READY || up->npending == 0)
        return;
    uint64_t now = sl_mono_us(), limit = (uint64_t)up->silence_s * 1000000u, ids[SILENCE_BATCH];
    size_t n = 0;
    for (size_t b = 0; b < PENDING_BUCKETS && n < SILENCE_BATCH; b++) {
        for (struct up_request *r = up->buckets[b]; r && n < SILENCE_BATCH; r = r->next) {
            uint64_t since = r->t0_us > up->heard_us ? r->t0_us : up->heard_us;
            if (now - since >= limit)
                ids[n++] = r->id;
        }
    }
    char why[96];
    snprintf(why, sizeof(why), "the upstream server said nothing for %u s (--upstream-timeout)",
             up->silence_s);
    for (size_t i = 0; i < n; i++) { /* a reply may end others, or the upstream: look again */
        struct up_request *r = up->state == UP_READY ? find_pending(up, ids[i]) : NULL;
        if (r == NULL)
            continue;
        char id[24];
        struct sl_buf b = { 0 };
        sl_u64_dec(id, ids[i]);
        sl_warn("upstream request %s failed: %s", id, why);
        /* Its client is told it failed: the server is told to stop it, not left to run it. */
        tell_cancelled(up, r, why);
        jsonrpc_write_error(&b, sl_str_c(id), JSONRPC_INTERNAL_ERROR, why, NULL);
        handle_message(up, sl_buf_str(&b), NULL);
        sl_buf_free(&b);
    }
}

static void on_transport_message(struct sl_str msg, const char *for_id, void *arg)
{
    set_reachable(arg, true, NULL);
    outage_over(arg);
    handle_message(arg, msg, for_id);
}

/* A request that got no answer is answered as if the server had said so, under our id. */
static void on_transport_undelivered(const char *id, int status, const char *why, void *arg)
{
    struct upstream *up = arg;
    /* up_http reports a POST that ended without an answer even when the answer came first in
     * its event stream; only a request still waiting is failed. */
    uint64_t n;
    if (!sl_u64_parse(sl_str_c(id), &n) || !find_pending(up, n))
        return;
    struct sl_buf b = { 0 };
    /* A failing status to the era probe is a legacy HTTP server refusing server/discover (an
     * answer, see route_reply); no answer at all is an outage, and counts. */
    if (status == 0 || up->probe == NULL || up->probe->id != n)
        metrics_upstream_error(status ? METRICS_UP_HTTP_STATUS : METRICS_UP_UNREACHABLE);
    if (status == 0) {
        outage_failed(up, id, why);
    } else {
        set_reachable(up, true, NULL); /* an error status is an answer */
        outage_over(up);
        if (up->state == UP_READY)
            sl_warn("upstream request %s failed: %s", id, why);
    }
    jsonrpc_write_error(&b, sl_str_c(id), JSONRPC_INTERNAL_ERROR, why, NULL);
    /* No answer at all: the server is not there (yet). An HTTP error status is an answer: a
     * legacy server refusing server/discover, for one. */
    up->transport_failed = status == 0;
    handle_message(up, sl_buf_str(&b), NULL);
    up->transport_failed = false;
    sl_buf_free(&b);
}

static bool on_transport_waits_for(const char *id, void *arg)
{
    uint64_t n;
    return sl_u64_parse(sl_str_c(id), &n) && find_pending(arg, n) != NULL;
}

static void on_transport_session_lost(void *arg)
{
    struct upstream *up = arg;
    if (up->state != UP_READY)
        return;
    sl_warn("the upstream server lost sluice's session; initializing again");
    struct sl_arena *a = sl_arena_new();
    struct json *params = NULL;
    char err[64];
    if (up->init_params == NULL ||
        json_parse(up->init_params, strlen(up->init_params), a, &params, err, sizeof(err)) != 0)
        params = init_params(a, NULL, NULL);
    send_initialize(up, params);
    sl_arena_free(a);
}

static void on_transport_drained(void *arg)
{
    struct upstream *up = arg;
    if (up->cbs.on_drained)
        up->cbs.on_drained(up, up->arg);
}

/* A request sent now would wait in a pipe nobody reads until the child is gone, seconds later,
 * and then fail unrun: it is refused at once instead. Those already sent wait for their
 * answers, which may still come. */
static void on_transport_deaf(void *arg)
{
    struct upstream *up = arg;
    up->deaf = true;
}

static void on_transport_closed(const char *why, void *arg)
{
    struct upstream *up = arg;
    up->state = UP_GONE;
    event_del(up->probe_ev);
    if (up->live_ev)
        event_del(up->live_ev);
    up->probe = NULL;
    fail_all_pending(up, why);
}

static void on_transport_exit(const char *why, void *arg)
{
    struct upstream *up = arg;
    up->cbs.on_exit(up, why, up->arg);
}

static const struct up_transport_cbs transport_cbs = {
    .on_message = on_transport_message,
    .on_undelivered = on_transport_undelivered,
    .on_session_lost = on_transport_session_lost,
    .on_drained = on_transport_drained,
    .on_deaf = on_transport_deaf,
    .on_closed = on_transport_closed,
    .on_exit = on_transport_exit,
    .on_liveness = on_transport_liveness,
    .waits_for = on_transport_waits_for,
};

void upstream_terminate(struct upstream *up, int grace_ms)
{
    up->tr->ops->stop(up->tr, grace_ms);
}

/* ===== starting and freeing ===== */

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start_probe(arg);
}

static struct upstream *upstream_new(struct event_base *base, const struct upstream_cbs *cbs,
                                     void *arg)
{
    struct upstream *up = sl_xcalloc(1, sizeof(*up));
    up->params = params_new();
    up->pins = pins_new();
    up->cbs = *cbs;
    up->arg = arg;
    up->probe_ev = evtimer_new(base, on_probe_timeout, up);
    up->retry_ev = evtimer_new(base, on_retry, up);
    return up;
}

struct upstream *upstream_spawn(struct event_base *base, char *const argv[],
                                int reply_timeout_s, const struct upstream_cbs *cbs, void *arg,
                                char *err, size_t errlen)
{
    struct upstream *up = upstream_new(base, cbs, arg);
    up->tr = up_stdio_spawn(base, argv, &transport_cbs, up, err, errlen);
    if (up->tr == NULL) {
        upstream_free(up);
        return NULL;
    }
    start_probe(up);
    if (reply_timeout_s > 0) {
        up->silence_s = (unsigned)reply_timeout_s;
        up->silence_ev = event_new(base, -1, EV_PERSIST, on_silence_tick, up);
        struct timeval tv = { 1, 0 };
        event_add(up->silence_ev, &tv);
    }
    return up;
}

struct upstream *upstream_connect(struct event_base *base, const char *url, SSL_CTX *tls,
                                  int reply_timeout_s, const struct upstream_cbs *cbs, void *arg,
                                  char *err, size_t errlen)
{
    struct upstream *up = upstream_new(base, cbs, arg);
    up->tr = up_http_new(base, url, tls, reply_timeout_s, up->params, &transport_cbs, up, err,
                         errlen);
    if (up->tr == NULL) {
        upstream_free(up);
        return NULL;
    }
    sl_info("upstream %s", url);
    start_probe(up);
    if (up->tr->ops->liveness && cbs->on_reachable) { /* the shared one: per-session ones
                                                        * would probe once each per second */
        up->live_ev = event_new(base, -1, EV_PERSIST, on_live_tick, up);
        struct timeval tv = { LIVE_INTERVAL_MS / 1000, (LIVE_INTERVAL_MS % 1000) * 1000 };
        event_add(up->live_ev, &tv);
    }
    return up;
}

void upstream_free(struct upstream *up)
{
    if (up == NULL)
        return;
    if (up->silence_ev)
        event_free(up->silence_ev);
    if (up->tr) /* NULL only when the transport could not start */
        up->tr->ops->free(up->tr);
    for (size_t b = 0; b < PENDING_BUCKETS; b++) {
        while (up->buckets[b]) {
            struct up_request *r = up->buckets[b];
            up->buckets[b] = r->next;
            free(r->token);
            free(r);
        }
    }
    sl_spare_clear(&up->spare, sizeof(struct up_request));
    while (up->listers)
        lister_free(up->listers);
    event_free(up->retry_ev);
    event_free(up->probe_ev);
    if (up->live_ev)
        event_free(up->live_ev);
    sl_arena_free(up->info_arena);
    free(up->init_params);
    params_free(up->params);
    pins_free(up->pins);
    free(up);
}

void upstream_base_free(struct event_base *base)
{
    if (base == NULL)
        return;
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_free(base);
}

/* ===== listing tools (sluice's own requests) ===== */

#define LIST_MAX_PAGES 100
#define LIST_MAX_TOOLS 10000

struct lister {
    struct lister *next;      /* the upstream's list of listings in progress */
    struct upstream *up;
    up_tools_cb *cb;
    void *arg;
    struct sl_arena *arena;
    struct json *tools;
    unsigned pages;
};

static void list_page(struct lister *l, const struct json *cursor);

static void lister_free(struct lister *l)
{
    for (struct lister **pp = &l->up->listers; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    sl_arena_free(l->arena);
    free(l);
}

static void list_done(struct lister *l, const struct json *tools, const char *why)
{
    l->cb(l->up, tools, why, l->arg);
    lister_free(l);
}

static void on_list_reply(struct jsonrpc_msg *m, const char *why, void *arg)
{
    struct lister *l = arg;
    if (m == NULL || m->kind != JSONRPC_RESULT)
        return list_done(l, NULL, m ? "tools/list failed" : why);
    const struct json *tools = json_get(m->result, "tools");
    if (tools == NULL || tools->type != JSON_ARRAY)
        return list_done(l, NULL, "tools/list returned no tools array");
    struct sl_buf b = { 0 };
    char err[64];
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        struct json *copy;
        sl_buf_reset(&b);
        json_write(&b, tools->u.arr.v[i]);
        if (json_parse(b.p, b.len, l->arena, &copy, err, sizeof(err)) == 0)
            json_push(l->arena, l->tools, copy);
    }
    sl_buf_free(&b);
    const struct json *next = json_get(m->result, "nextCursor");
    if (next && next->type == JSON_STRING && ++l->pages < LIST_MAX_PAGES &&
        l->tools->u.arr.n < LIST_MAX_TOOLS)
        return list_page(l, next);
    list_done(l, l->tools, NULL);
}

static void list_page(struct lister *l, const struct json *cursor)
{
    struct sl_arena *a = sl_arena_new();
    struct json *params = l->up->era == ERA_MODERN ? era_add_envelope(a, NULL, NULL)
                                                   : json_new_object(a);
    if (cursor)
        json_set(a, params, "cursor", json_new_string(a, cursor->u.str.p, cursor->u.str.len));
    if (upstream_request(l->up, SL_STR("tools/list"), params, on_list_reply, l) == NULL)
        list_done(l, NULL, "the upstream is gone");
    sl_arena_free(a);
}

void upstream_list_tools(struct upstream *up, up_tools_cb *cb, void *arg)
{
    struct lister *l = sl_xcalloc(1, sizeof(*l));
    l->up = up;
    l->cb = cb;
    l->arg = arg;
    l->arena = sl_arena_new();
    l->tools = json_new_array(l->arena);
    l->next = up->listers;
    up->listers = l;
    list_page(l, NULL);
}

/* ===== accessors ===== */

enum era upstream_era(const struct upstream *up)
{
    return up->era;
}

struct pins *upstream_pins(const struct upstream *up)
{
    return up->pins;
}

struct params *upstream_params(const struct upstream *up)
{
    return up->params;
}

const struct json *upstream_info(const struct upstream *up)
{
    return up->state == UP_READY ? up->info : NULL;
}

struct sl_str upstream_name(const struct upstream *up)
{
    const struct json *name = json_get(json_get(up->info, "serverInfo"), "name");
    if (name == NULL)
        name = json_get(json_get(json_get(up->info, "_meta"), META_SERVER_INFO), "name");
    return name && name->type == JSON_STRING ? name->u.str : SL_STR("");
}

size_t upstream_out_len(const struct upstream *up)
{
    return up->tr->ops->out_len(up->tr);
}

void upstream_pause(struct upstream *up, bool paused)
{
    up->tr->ops->pause(up->tr, paused);
}

size_t upstream_pending(const struct upstream *up)
{
    return up->npending;
}
