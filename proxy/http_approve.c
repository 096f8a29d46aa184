/* http_approve.c: sluice's approval page, /approve/<id> (approval.h), on the HTTP listener or on
 * its own (--approval-listen).
 *
 *   GET   the page: server, tool, who asked, the question with every argument, irreversible,
 *         time left, and the Approve / Decline form, for someone the policy lets decide
 *   POST  the decision (application/x-www-form-urlencoded: decision, csrf), recorded once in the
 *         store, set if absent, so a second decision at any replica is refused; journaled with
 *         the approver's principal (page-approved / page-declined)
 *
 * A request whose Host is not the page's own address (approval_host_ok: the base URL's authority,
 * or localhost over loopback) is refused first, on every listener: a foreign name a DNS answer
 * points at sluice would otherwise be same-origin with the page and could read its token.
 * A POST that the browser marks as sent from another site (Sec-Fetch-Site, Origin) is refused
 * before anything else is read (approval_cross_site): the CSRF token would refuse it too, and
 * this holds should the token ever leak.
 *
 * The approver is the request's principal, by the listener's source (--principal or
 * --approval-principal), never a form field. Both methods first read the question's record
 * from the store, and refuse a page that is unknown, expired, or someone who may not decide:
 * the arguments are shown only to those who may approve them.
 *
 * A request waits for the store as an exchange of its own (no session): the connection reads
 * nothing more until it is answered. If the client goes away first, the answer is dropped. */
#include "http_priv.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "approval.h"
#include "audit.h"
#include "confirm.h"
#include "gate.h"
#include "log.h"
#include "metrics.h"
#include "store.h"

#define HTML "text/html; charset=utf-8"
#define APPROVE_LOOK_AGAIN_MS 300

struct areq {
    struct front_http *fh;
    struct xchg *x;
    uint8_t id[APPROVAL_ID_LEN];
    char *principal;
    bool post;
    enum approval_decision d;     /* post: what the person chose */
    struct sl_arena *a;
    struct approval_question q;   /* once read, in a */
    char style_nonce[33];
    struct store_req *req;        /* the store's answer pending, or NULL */
    struct event *again;          /* a second look for a page not found at the first */
    struct areq *prev, *next;     /* in fh->approvals */
};

static void areq_free(struct areq *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        r->fh->approvals = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (r->again)
        event_free(r->again);
    free(r->principal);
    sl_arena_free(r->a);
    free(r);
}

static void new_style_nonce(char out[33])
{
    uint8_t raw[16];
    struct sl_buf b = { 0 };
    SL_REQUIRE(RAND_bytes(raw, sizeof(raw)) == 1);
    sl_hex_encode(&b, raw, sizeof(raw));
    memcpy(out, b.p, 32);
    out[32] = '\0';
    sl_buf_free(&b);
}

static void respond_html(struct conn *c, int status, const char *style_nonce,
                         const struct sl_buf *body)
{
    struct sl_buf extra = { 0 };
    approval_headers(&extra, style_nonce);
    conn_respond(c, status, HTML, body->p ? body->p : "", body->len, extra.p);
    sl_buf_free(&extra);
}

/* A short page at once (no exchange). */
static void notice_now(struct conn *c, int status, const char *title, const char *text)
{
    char nonce[33];
    new_style_nonce(nonce);
    struct sl_buf b = { 0 };
    approval_render_notice(&b, title, sl_str_c(text), nonce);
    respond_html(c, status, nonce, &b);
    metrics_request(SL_STR("approve"), status);
    sl_buf_free(&b);
}

/* Ends r with body (status), unless its client went away. */
static void finish(struct areq *r, int status, const struct sl_buf *body)
{
    struct xchg *x = r->x;
    if (x->c)
        respond_html(x->c, status, r->style_nonce, body);
    xchg_finish(x, x->c ? status : 499);
    areq_free(r);
}

static void finish_notice(struct areq *r, int status, const char *title, struct sl_str text)
{
    struct sl_buf b = { 0 };
    approval_render_notice(&b, title, text, r->style_nonce);
    finish(r, status, &b);
    sl_buf_free(&b);
}

static void journal(struct areq *r)
{
    enum audit_decision dec = r->d == APPROVAL_APPROVED ? AUDIT_PAGE_APPROVED
                                                        : AUDIT_PAGE_DECLINED;
    metrics_decision(dec);
    struct audit *au = r->fh->env->audit;
    if (au == NULL)
        return;
    struct sl_buf reason = { 0 };
    sl_buf_puts(&reason, "caller:");
    sl_buf_put(&reason, r->q.caller.p, r->q.caller.len);
    struct audit_record rec = {
        .time_ms = (uint64_t)gate_clock() * 1000u,
        .principal = r->principal,
        .tool = r->q.tool,
        .args_digest = r->q.has_digest ? r->q.digest : NULL, /* which arguments were decided */
        .decision = dec,
        .reason = reason.p,
        .upstream = AUDIT_UP_NOT_FORWARDED,
    };
    if (audit_write(au, &rec) != 0)
        sl_error("cannot write the audit journal");
    sl_buf_free(&reason);
}

/* What a recorded decision says, for a person. */
static void describe(struct sl_buf *out, struct sl_str rec)
{
    enum approval_decision d;
    struct sl_str who;
    if (approval_decision_decode(rec, &d, &who) != 0) {
        sl_buf_puts(out, "This call was already decided.");
        return;
    }
    sl_buf_puts(out, d == APPROVAL_APPROVED ? "This call was already approved by "
                                            : "This call was already declined by ");
    confirm_neutralize(out, who, 0); /* a principal is the client's text: no bidi tricks */
    sl_buf_puts(out, ". A call is decided once; nothing else was recorded.");
}

static void on_decided(void *arg, enum store_status st, const struct store_record *rec)
{
    struct areq *r = arg;
    r->req = NULL;
    if (st == STORE_FRESH) {
        journal(r);
        sl_info("approval page: %s %s a call of %.*s by %.*s", r->principal,
                r->d == APPROVAL_APPROVED ? "approved" : "declined", (int)r->q.tool.len,
                r->q.tool.p, (int)r->q.caller.len, r->q.caller.p);
        return finish_notice(r, 200, r->d == APPROVAL_APPROVED ? "Approved" : "Declined",
                             r->d == APPROVAL_APPROVED
                                 ? SL_STR("The call is approved. It runs once, when the client "
                                          "continues or retries it.")
                                 : SL_STR("The call is declined. It will not run."));
    }
    if (st == STORE_SPENT && rec) {
        struct sl_buf t = { 0 };
        describe(&t, rec->body);
        finish_notice(r, 409, "Already decided", sl_buf_str(&t));
        sl_buf_free(&t);
        return;
    }
    finish_notice(r, 503, "Unavailable",
                  SL_STR("sluice could not record the decision (its store is unreachable, or "
                         "full); nothing was recorded. Try again."));
}

/* GET: the decision so far, then the page. */
static void on_decision_read(void *arg, enum store_status st, const struct store_record *rec)
{
    struct areq *r = arg;
    r->req = NULL;
    if (st == STORE_ERROR)
        return finish_notice(r, 503, "Unavailable",
                             SL_STR("sluice cannot reach its store. Try again."));
    if (st == STORE_FOUND && rec) {
        struct sl_buf t = { 0 };
        describe(&t, rec->body);
        finish_notice(r, 200, "Already decided", sl_buf_str(&t));
        sl_buf_free(&t);
        return;
    }
    char csrf[APPROVAL_CSRF_HEX + 1];
    approval_csrf(r->fh->env->gate->keys, r->id, sl_str_c(r->principal), csrf);
    struct sl_buf b = { 0 };
    approval_render(&b, &r->q, gate_clock(), csrf, r->style_nonce);
    finish(r, 200, &b);
    sl_buf_free(&b);
}

/* Whether r's principal may decide r->q: false when it answered (a refusal). */
static bool may_decide(struct areq *r)
{
    struct policy_decision d;
    policy_lookup(r->fh->env->policy, r->q.tool.p, r->q.tool.len, &d);
    enum approval_who who = approval_may_decide(&d, r->q.caller, sl_str_c(r->principal));
    if (who == APPROVAL_MAY)
        return true;
    struct sl_buf t = { 0 };
    sl_buf_puts(&t, "You (");
    confirm_neutralize(&t, sl_str_c(r->principal), 0);
    sl_buf_puts(&t, who == APPROVAL_SELF
                        ? ") asked for this call yourself, and the policy does not let the "
                          "caller approve its own call (self_approve). Ask one of its approvers."
                        : ") are not one of the approvers the policy names for this tool.");
    finish_notice(r, 403, "Not allowed", sl_buf_str(&t));
    sl_buf_free(&t);
    return false;
}

static void on_question(void *arg, enum store_status st, const struct store_record *rec);

static void on_look_again(evutil_socket_t fd, short what, void *arg)
{
    struct areq *r = arg;
    (void)fd, (void)what;
    r->req = store_page_get(r->fh->env->store, STORE_PAGE_QUESTION, r->id, on_question, r);
}

/* The URL goes out only once the store said it has the question's record (page_keep_start), so
 * a page opened through it finds the record, unless the store's reads lag its writes (a proxy in
 * front of Redis that reads from a replica): look once more, a moment later, before saying there
 * is none. */
static bool look_again(struct areq *r)
{
    if (r->again)
        return false; /* looked twice */
    r->again = evtimer_new(r->fh->base, on_look_again, r);
    struct timeval tv = { 0, APPROVE_LOOK_AGAIN_MS * 1000 };
    evtimer_add(r->again, &tv);
    return true;
}

static void on_question(void *arg, enum store_status st, const struct store_record *rec)
{
    struct areq *r = arg;
    r->req = NULL;
    struct store *store = r->fh->env->store;
    if (r->x->c == NULL) /* the client went away: nothing to answer */
        return finish(r, 499, &(struct sl_buf){ 0 });
    if (st == STORE_ERROR)
        return finish_notice(r, 503, "Unavailable",
                             SL_STR("sluice cannot reach its store. Try again."));
    if (st == STORE_ABSENT && look_again(r))
        return;
    if (st != STORE_FOUND || rec == NULL)
        return finish_notice(r, 404, "No such approval",
                             SL_STR("There is no approval at this address: it expired, or it "
                                    "never existed."));
    r->a = sl_arena_new();
    if (approval_question_decode(rec->body, r->a, &r->q) != 0)
        return finish_notice(r, 500, "Unreadable",
                             SL_STR("sluice cannot read this approval's record."));
    if (r->q.exp <= gate_clock())
        return finish_notice(r, 410, "Expired",
                             SL_STR("This approval expired; nothing can be decided any more. "
                                    "The call was not run."));
    if (!may_decide(r))
        return;
    if (!r->post)
        return (void)(r->req = store_page_get(store, STORE_PAGE_DECISION, r->id,
                                              on_decision_read, r));
    struct sl_buf v = { 0 };
    approval_decision_encode(&v, r->d, sl_str_c(r->principal));
    r->req = store_page_decide(store, r->id, r->q.exp, sl_buf_str(&v), on_decided, r);
    sl_buf_free(&v);
}

void approve_handle(struct conn *c, const struct http1_head *h, const char *body,
                    const char *rid)
{
    struct front_http *fh = c->fh;
    uint8_t id[APPROVAL_ID_LEN];
    bool post = sl_str_eq_c(h->method, "POST");
    if (approval_id_from_path(h->path, id) != 0)
        return notice_now(c, 404, "No such approval",
                          "There is no approval at this address.");
    if (!post && !sl_str_eq_c(h->method, "GET"))
        return conn_respond_status(c, 405, "Allow: GET, POST\r\n");
    /* On every listener, not only loopback: a LAN address is as easy a target for a foreign
     * name a DNS answer points at it. */
    bool local = http_conn_local(c);
    const char *base = fh->env->approval_base_url;
    if (!approval_host_ok(h, base, local)) {
        sl_warn("%s: refused a request to the approval page for another host name: Host is "
                "not the authority of %s%s (DNS rebinding? or a proxy in front that rewrites "
                "Host)", rid, base ? base : "--approval-base-url", local ? " nor localhost" : "");
        return notice_now(c, 403, "Refused", approval_refused_host);
    }
    const char *cross = post ? approval_cross_site(h, base, local) : NULL;
    if (cross) { /* before any token (the principal's, the form's) is looked at */
        sl_warn("%s: refused a POST to the approval page from another site (%s)", rid,
                cross == approval_refused_fetch_site ? "Sec-Fetch-Site" : "Origin");
        return notice_now(c, 403, "Refused", cross);
    }
    if (fh->env->store == NULL || fh->env->gate == NULL)
        return notice_now(c, 503, "Unavailable", "sluice is not ready.");
    struct sl_buf who = { 0 };
    if (http_principal_of(c, h, &who) != 0) {
        sl_buf_free(&who);
        return notice_now(c, 401, "Who are you?",
                          "This page needs the same authentication as sluice's MCP endpoint.");
    }
    enum approval_decision d = APPROVAL_DECLINED;
    if (post) {
        struct sl_str ctype;
        struct sl_buf token = { 0 };
        bool form = http1_field(h, HTTP1_CONTENT_TYPE, &ctype) == 1 && approval_form_type(ctype);
        int bad = !form ? 415
                  : approval_form_parse((struct sl_str){ body, h->content_length }, &d,
                                        &token) != 0
                      ? 400
                  : !approval_csrf_ok(fh->env->gate->keys, id, sl_buf_str(&who),
                                      sl_buf_str(&token))
                      ? 403
                      : 0;
        sl_buf_free(&token);
        if (bad) {
            sl_buf_free(&who);
            return notice_now(c, bad, "Refused",
                              bad == 403 ? "The form's token is missing or wrong; nothing was "
                                           "recorded. Open the approval page again."
                                         : "This is not the approval page's form; nothing was "
                                           "recorded.");
        }
    }
    struct areq *r = sl_xcalloc(1, sizeof(*r));
    r->fh = fh;
    memcpy(r->id, id, sizeof(id));
    r->principal = sl_xstrndup(who.p, who.len);
    r->post = post;
    r->d = d;
    new_style_nonce(r->style_nonce);
    sl_buf_free(&who);
    r->x = xchg_new(c, rid, SL_STR("approve"));
    r->next = fh->approvals;
    if (fh->approvals)
        fh->approvals->prev = r;
    fh->approvals = r;
    r->req = store_page_get(fh->env->store, STORE_PAGE_QUESTION, id, on_question, r);
}

void approve_free_all(struct front_http *fh)
{
    while (fh->approvals) {
        struct areq *r = fh->approvals;
        if (r->req)
            store_cancel(r->req);
        xchg_kill(r->x); /* the reaper frees it */
        areq_free(r);
    }
}
