/* session_held.c: tools/calls held while sluice asks a legacy client's person
 * (PROTOCOL.md §4.2), the "blocked client" of redis (src/blocked.c).
 *
 * A legacy client has no input_required round, so a call that needs a person's answer is
 * held here, and sluice asks with an elicitation/create request of its own (held_start). While
 * it waits, a progress notification goes out every HOLD_PROGRESS_SECONDS when the call asked
 * for progress.
 *
 * There is one way out of a held call: held_release(h, why, reason, text). It does, in this
 * order and as the table held_ends says for each end:
 *   1. tell the client to stop asking (notifications/cancelled for our elicitation/create);
 *   2. withdraw the question from the store's approval fatigue (store_withdrawn: it no longer
 *      counts as open, so the same call can be asked again and it holds no place under
 *      max_open_confirmations);
 *   3. tell the front the request ended without a response (HTTP ends its POST's stream);
 *   4. journal the call;
 *   5. answer the call with a tool error (isError: true);
 *   6. free it (its timers with it).
 * The ends:
 *   HELD_ANSWERED       the answer's verdict forwarded, observed or answered the call: that path
 *                       journaled and answered it, so only 6
 *   HELD_REFUSED        the answer cannot decide (the client answered with an error, or the
 *                       question is no longer valid): 2, 4, 5, 6
 *   HELD_TIMEOUT        no answer within the question's ttl: 1, 4, 5, 6
 *   HELD_CANCELLED      the client cancelled the call: 1, 2, 3, 4, 6 (no response, PROTOCOL §7.5)
 *   HELD_CLIENT_GONE    the session ends: 2, 4, 6
 *   HELD_UPSTREAM_GONE  the upstream is gone or sluice is stopping: 1, 2, 4, 5, 6
 * Not an end: the client's stream for the call is lost (session_stream_lost, HTTP): the call
 * keeps waiting for an answer, but its question is withdrawn (2). */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "log.h"
#include "metrics.h"
#include "msg.h"
#include "store.h"

struct held {
    struct session *s;
    /* The held request as the JSON text written from its parse, not the parse itself: a parsed
     * message keeps an arena of about six times its text (4 KiB for a small call), and
     * thousands of calls may be held at once (as many as the question table has places). The answer parses it again, and the gate checks those
     * arguments against the digest sealed in the question's state like any round two's. */
    char *request;
    size_t request_len;
    char *tool;                     /* params.name */
    char *client_id;
    char elicit_id[40];             /* our elicitation/create id, "sluice-e-N" */
    char *state;                    /* the sealed state of this question */
    char *progress_token;           /* its JSON text, or NULL */
    unsigned progress;
    bool has_digest;
    uint8_t digest[32];             /* of the canonical arguments, for the audit journal */
    struct event *timeout_ev, *progress_ev;
    /* A question on the approval page (URL mode): the page's decision is polled from the
     * store, which every replica writes, every HELD_PAGE_POLL_MS. */
    bool page;
    uint8_t page_id[16];
    struct event *poll_ev;
    struct store_req *poll_req;
    struct held *prev, *next;
};

#define HELD_PAGE_POLL_MS 250

#define HOLD_PROGRESS_SECONDS 10

/* What each end does (see the file comment). */
static const struct held_end_row {
    bool cancel;             /* 1: notifications/cancelled for our question ... */
    const char *cancel_why;  /* ... with this reason (NULL: the journal's reason) */
    bool withdraw;           /* 2 */
    bool ended;              /* 3 */
    enum audit_decision decision; /* 4: the journal's decision; NONE: not journaled here */
    const char *reason;      /* ... and its reason, unless the caller gives one */
    bool reply;              /* 5 */
    const char *text;        /* ... the tool error's text, unless the caller gives one */
} held_ends[] = {
    [HELD_ANSWERED] = { 0 },
    [HELD_REFUSED] = { .withdraw = true, .decision = AUDIT_REFUSED, .reply = true },
    [HELD_TIMEOUT] = { .cancel = true, .decision = AUDIT_REFUSED, .reason = "timeout",
                       .reply = true,
                       .text = "No answer came from the person in time. The call was not run." },
    [HELD_CANCELLED] = { .cancel = true, .cancel_why = "the request was cancelled",
                         .withdraw = true, .ended = true, .decision = AUDIT_CANCELLED,
                         .reason = "client-cancelled" },
    [HELD_CLIENT_GONE] = { .withdraw = true, .decision = AUDIT_CANCELLED, .reason = "client-gone" },
    [HELD_UPSTREAM_GONE] = { .cancel = true, .withdraw = true, .decision = AUDIT_REFUSED,
                             .reply = true },
};

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
    if (h->poll_req)
        store_cancel(h->poll_req);
    if (h->poll_ev)
        event_free(h->poll_ev);
    event_free(h->timeout_ev);
    if (h->progress_ev)
        event_free(h->progress_ev);
    free(h->request);
    free(h->tool);
    free(h->state);
    free(h->progress_token);
    free(h->client_id);
    free(h);
}

static struct sl_str held_tool(const struct held *h)
{
    return sl_str_c(h->tool);
}

/* Tells the client to stop asking. */
static void cancel_elicitation(struct held *h, const char *reason)
{
    struct sl_buf b = { 0 };
    msg_cancelled(&b, h->elicit_id, reason);
    session_send_line(h->s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* The held call's question stops counting as open (store.h): a cancelled call must not block
 * the same call asked again, nor hold a place under max_open_confirmations. */
static void withdraw_question(struct held *h)
{
    if (h->has_digest)
        store_withdrawn(h->s->env->store, sl_str_c(h->s->principal), held_tool(h), h->digest);
}

void held_release(struct held *h, enum held_end why, const char *reason, const char *text)
{
    const struct held_end_row *e = &held_ends[why];
    struct session *s = h->s;
    reason = reason ? reason : e->reason;
    text = text ? text : e->text;
    if (e->cancel)
        cancel_elicitation(h, e->cancel_why ? e->cancel_why : reason);
    if (e->withdraw)
        withdraw_question(h);
    if (e->ended && s->io->ended)
        s->io->ended(s->io_arg, sl_str_c(h->client_id));
    if (e->decision != AUDIT_NONE)
        session_audit(s, held_tool(h), h->has_digest ? h->digest : NULL, e->decision, reason,
                      AUDIT_UP_NOT_FORWARDED, h->client_id);
    if (e->reply)
        session_reply_tool_error(s, sl_str_c(h->client_id), false, text);
    held_free(h);
}

void held_release_all(struct session *s, enum held_end why, const char *reason,
                      const char *text)
{
    while (s->helds)
        held_release(s->helds, why, reason, text);
}

static void on_hold_timeout(evutil_socket_t fd, short what, void *arg)
{
    held_release(arg, HELD_TIMEOUT, NULL, NULL);
}

static void on_hold_progress(evutil_socket_t fd, short what, void *arg)
{
    struct held *h = arg;
    struct sl_buf b = { 0 }, params = { 0 };
    sl_buf_puts(&params, "{\"progressToken\":");
    sl_buf_puts(&params, h->progress_token);
    sl_buf_printf(&params, ",\"progress\":%u,\"message\":\"waiting for a person to confirm\"}",
                  ++h->progress);
    msg_notification(&b, "notifications/progress", sl_buf_str(&params));
    session_send_line(h->s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&params);
    sl_buf_free(&b);
}

void held_warn_ttl(const struct policy *p)
{
    struct policy_decision d;
    policy_lookup(p, "", 0, &d); /* confirm_ttl is the policy's, the same for every tool */
    if (d.confirm_ttl <= HELD_SDK_TIMEOUT_SECONDS)
        return;
    sl_warn("policy: confirm_ttl is %u s; clients built on the MCP SDK 1.x time out after %d s "
            "unless they reset on progress: sluice sends notifications/progress every %d s to a "
            "held call that carries a progressToken (TypeScript: callTool with onprogress and "
            "resetTimeoutOnProgress: true; Python: leave read_timeout_seconds unset or above "
            "confirm_ttl)",
            d.confirm_ttl, HELD_SDK_TIMEOUT_SECONDS, HOLD_PROGRESS_SECONDS);
}

bool held_has_id(const struct session *s, struct sl_str id)
{
    for (const struct held *h = s->helds; h; h = h->next)
        if (sl_str_eq_c(id, h->client_id))
            return true;
    return false;
}

size_t held_count(const struct session *s)
{
    size_t n = 0;
    for (const struct held *h = s->helds; h; h = h->next)
        n++;
    return n;
}

/* Keeps what the held call needs of m as text, and frees m. */
static void hold_request(struct held *h, struct jsonrpc_msg *m)
{
    struct sl_buf b = { 0 };
    json_write(&b, m->root);
    h->request_len = b.len;
    h->request = b.p; /* the buffer's memory, taken */
    struct sl_str tool = json_get(m->params, "name")->u.str; /* the gate checked it */
    h->tool = sl_xstrndup(tool.p, tool.len);
    const struct json *token = json_get(json_get(m->params, "_meta"), "progressToken");
    if (token) {
        struct sl_buf t = { 0 };
        json_write(&t, token);
        h->progress_token = t.p;
    }
    jsonrpc_msg_free(m);
}

/* Holds m as held_start does, without sending a question; h is s->helds afterwards. */
static void held_hold(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                      const struct gate_verdict *v, bool ask)
{
    struct held *h = sl_xcalloc(1, sizeof(*h));
    h->s = s;
    hold_request(h, m);
    h->client_id = sl_xstrndup(id.p, id.len);
    h->has_digest = v->has_digest;
    memcpy(h->digest, v->digest, sizeof(h->digest));
    snprintf(h->elicit_id, sizeof(h->elicit_id), "sluice-e-%llu",
             (unsigned long long)++s->next_elicit);
    h->state = sl_xstrndup(v->state.p, v->state.len);
    struct sl_buf b = { 0 }, q = { 0 };
    /* 2025-06-18 has no "mode" */
    msg_question_params(&q, sl_buf_str(&v->text), s->legacy_mode_field);
    msg_request(&b, h->elicit_id, SL_STR("elicitation/create"), sl_buf_str(&q));
    sl_buf_free(&q);
    h->timeout_ev = evtimer_new(s->base, on_hold_timeout, h);
    struct timeval tv = { (time_t)v->ttl, 0 };
    evtimer_add(h->timeout_ev, &tv);
    if (h->progress_token) {
        h->progress_ev = event_new(s->base, -1, EV_PERSIST, on_hold_progress, h);
        struct timeval every = { HOLD_PROGRESS_SECONDS, 0 };
        event_add(h->progress_ev, &every);
    }
    h->next = s->helds;
    if (s->helds)
        s->helds->prev = h;
    s->helds = h;
    metrics_held(+1);
    session_audit(s, held_tool(h), v->has_digest ? v->digest : NULL, v->decision, v->reason,
                  AUDIT_UP_NOT_FORWARDED, h->client_id);
    if (ask)
        session_send_line(s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&b);
}

void held_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                const struct gate_verdict *v)
{
    held_hold(s, m, id, v, true);
}

static void held_start_quiet(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                             const struct gate_verdict *v)
{
    held_hold(s, m, id, v, false);
}

/* The held call, parsed again from its text (it parsed once: this cannot fail, but fails
 * closed if it does). NULL when h was released. */
static struct jsonrpc_msg *held_reparse(struct held *h)
{
    struct jsonrpc_msg *m = NULL;
    struct jsonrpc_parse_error perr;
    if (jsonrpc_parse(h->request, h->request_len, &m, &perr) == 0)
        return m;
    held_release(h, HELD_REFUSED, "internal-error",
                 "sluice could not read the held call again. The call was not run.");
    return NULL;
}

/* Acts on the verdict v (for the gate input in) that decides held call h, whose request m is
 * (parsed again), and releases h. m is taken. */
static void held_act(struct held *h, struct jsonrpc_msg *m, const struct gate_input *in,
                     struct gate_verdict *v)
{
    struct session *s = h->s;
    struct sl_str id = sl_str_c(h->client_id);
    if (v->spend) { /* the usual case: the state's nonce is spent first, then acted on */
        spend_start(s, m, id, false, v); /* the spend owns the call now */
        m = NULL;
    } else if (v->action == GATE_FORWARD && v->recheck) {
        observation_start(s, m, id, false, v); /* the observation owns the call now */
        m = NULL;
    } else if (v->action == GATE_FORWARD) {
        if (call_forward(s, m, false, in->tool, v, h->client_id))
            m = NULL; /* the forwarded call owns it now */
    } else if (v->action != GATE_REFUSE) { /* expired meanwhile, or cannot happen: fail closed */
        jsonrpc_msg_free(m);
        held_release(h, HELD_REFUSED, v->reason ? v->reason : "internal-error",
                     "The confirmation is no longer valid. The call was not run.");
        gate_verdict_free(v);
        return;
    } else {
        call_refuse(s, id, in->tool, v, false);
    }
    if (!v->spend) /* nothing spent, so nothing closed the question (a reload, a new definition) */
        withdraw_question(h);
    jsonrpc_msg_free(m);
    gate_verdict_free(v);
    held_release(h, HELD_ANSWERED, NULL, NULL);
}

/* The client answered our elicitation/create: decided through the same gate as round two. */
void held_answer(struct held *h, struct jsonrpc_msg *answer)
{
    struct session *s = h->s;
    if (answer->kind == JSONRPC_ERROR)
        return held_release(h, HELD_REFUSED, "elicitation-error",
                            "The client could not ask the person (it answered with an error). "
                            "The call was not run.");
    if (h->page) { /* URL mode: accept only says the person went to the page; it decides */
        if (json_str_is(json_get(answer->result, "action"), "accept"))
            return;
        return held_release(h, HELD_REFUSED, "page-not-opened",
                            "The person did not open the approval page. The call was not run.");
    }
    struct jsonrpc_msg *m = held_reparse(h);
    if (m == NULL)
        return;
    struct json *responses = json_new_object(answer->arena);
    json_set(answer->arena, responses, GATE_CONFIRM_KEY, answer->result);
    struct gate_input in = {
        .policy = s->env->policy,
        .principal = sl_str_c(s->principal),
        .tool = held_tool(h),
        .args = json_get(m->params, "arguments"),
        .can_elicit_form = true,
        .request_state = json_new_string(m->arena, h->state, strlen(h->state)),
        .input_responses = responses,
        .journal = s->env->audit != NULL,
    };
    pin_input(s, &in); /* the definition now, against the one the question was asked under */
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    held_act(h, m, &in, &v);
}

struct held *held_find(struct session *s, const struct json *id, bool by_elicit)
{
    struct sl_buf b = { 0 };
    if (!session_id_text(id, &b))
        return NULL;
    struct held *h = s->helds;
    for (; h; h = h->next) {
        if (by_elicit ? (id->type == JSON_STRING && sl_str_eq_c(id->u.str, h->elicit_id))
                      : strcmp(h->client_id, b.p) == 0)
            break;
    }
    sl_buf_free(&b);
    return h;
}

void session_stream_lost(struct session *s, struct sl_str rel)
{
    for (struct held *h = s->helds; h; h = h->next) {
        if (sl_str_eq_c(rel, h->client_id)) {
            withdraw_question(h);
            return;
        }
    }
    fwd_stream_lost(s, rel);
}

/* ===== a question on the approval page (URL mode, 2025-11-25) ===== */

static void page_poll_arm(struct held *h);

/* The page decided: the client hears the elicitation is complete, then the gate decides with
 * the decision (gate_page_decided), as a 2026-07-28 round two would. */
static void page_decided(struct held *h, struct sl_str decision)
{
    struct session *s = h->s;
    struct sl_buf b = { 0 }, params = { 0 };
    sl_buf_puts(&params, "{\"elicitationId\":");
    json_write_string(&params, h->elicit_id, strlen(h->elicit_id));
    sl_buf_putc(&params, '}');
    msg_notification(&b, "notifications/elicitation/complete", sl_buf_str(&params));
    session_send_line(s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&params);
    sl_buf_free(&b);
    struct jsonrpc_msg *m = held_reparse(h);
    if (m == NULL)
        return;
    struct gate_input in = {
        .policy = s->env->policy,
        .principal = sl_str_c(s->principal),
        .tool = held_tool(h),
        .args = json_get(m->params, "arguments"),
        .request_state = json_new_string(m->arena, h->state, strlen(h->state)),
        .journal = s->env->audit != NULL,
        .page_decided = true,
    };
    pin_input(s, &in);
    struct gate_verdict v;
    gate_decide(s->env->gate, &in, gate_clock(), &v);
    if (v.page_check)
        gate_page_decided(s->env->policy, in.principal, in.tool, true, false,
                          decision, &v);
    held_act(h, m, &in, &v);
}

static void on_page_polled(void *arg, enum store_status st, const struct store_record *rec)
{
    struct held *h = arg;
    h->poll_req = NULL;
    if (st == STORE_FOUND && rec)
        return page_decided(h, rec->body);
    page_poll_arm(h); /* pending, or the store did not answer: look again (the ttl bounds it) */
}

static void on_page_poll(evutil_socket_t fd, short what, void *arg)
{
    struct held *h = arg;
    (void)fd;
    (void)what;
    h->poll_req = store_page_get(h->s->env->store, STORE_PAGE_DECISION, h->page_id,
                                 on_page_polled, h);
}

static void page_poll_arm(struct held *h)
{
    if (h->poll_ev == NULL)
        h->poll_ev = evtimer_new(h->s->base, on_page_poll, h);
    struct timeval tv = { 0, HELD_PAGE_POLL_MS * 1000 };
    evtimer_add(h->poll_ev, &tv);
}

void held_start_page(struct session *s, struct jsonrpc_msg *m, struct sl_str id,
                     const struct gate_verdict *v, struct sl_str message, struct sl_str url)
{
    /* held like any question, but the page's URL-mode request goes out instead of the form */
    held_start_quiet(s, m, id, v);
    struct held *h = s->helds;
    h->page = true;
    memcpy(h->page_id, v->page_id, sizeof(h->page_id));
    struct sl_buf b = { 0 }, q = { 0 };
    sl_buf_puts(&q, "{\"mode\":\"url\",\"message\":");
    json_write_string(&q, message.p, message.len);
    sl_buf_puts(&q, ",\"url\":");
    json_write_string(&q, url.p, url.len);
    sl_buf_puts(&q, ",\"elicitationId\":");
    json_write_string(&q, h->elicit_id, strlen(h->elicit_id));
    sl_buf_putc(&q, '}');
    msg_request(&b, h->elicit_id, SL_STR("elicitation/create"), sl_buf_str(&q));
    session_send_line(s, sl_str_c(h->client_id), false, sl_buf_str(&b));
    sl_buf_free(&q);
    sl_buf_free(&b);
    page_poll_arm(h);
}
