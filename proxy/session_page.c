/* session_page.c: a call whose question is on sluice's approval page (approval.h).
 *
 * The gate decides that a question goes to the page (gate.h: page, page_new); here it is told
 * to the client. A new question's record goes to the store first, where whichever replica serves
 * the page reads it, and only once the store says it has it (page_keep_start) does the notifier
 * (env->on_page_pending) hear of it and the client get its URL. The client then gets
 * the page's URL: as a URL-mode elicitation in an input_required round when a modern client
 * declared elicitation.url (its retry carries requestState), else as a tool error that says
 * where to approve and how to retry (the state goes in params._meta, as the one-time token
 * does). A record the store refuses (at once, or Redis once it was sent) refuses the call
 * instead: a URL to a page that cannot be read is worth nothing to the person. An identical call that shares an open page
 * question (gate_share_question) reads that question's record first (page_look_start), and gets
 * what the call that asked it got: its page, or a refusal when its record was not kept. Nothing
 * is forwarded here: a retry comes back through the gate (page_check). */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>

#include "approval.h"
#include "confirm.h"
#include "msg.h"
#include "store.h"

/* The client declared URL-mode elicitation: for this request (2026-07-28, in its envelope), or
 * at initialize (2025-11-25; earlier revisions have no URL mode). */
static bool can_elicit_url(const struct session *s, struct jsonrpc_msg *m, bool modern)
{
    if (!modern)
        return s->legacy_mode_field && session_legacy_can(s, "elicitation.url");
    const struct json *url = json_get(json_get(call_caps(m), "elicitation"), "url");
    return url != NULL && url->type == JSON_OBJECT;
}

void page_record(struct session *s, struct sl_str tool, const struct gate_verdict *v,
                 struct sl_buf *out)
{
    struct session_env *e = s->env;
    struct approval_question q = {
        .server = e->gate->server_name,
        .tool = tool,
        .caller = sl_str_c(s->principal),
        .text = sl_buf_str(&v->text),
        .exp = v->page_exp,
        .irreversible = v->irreversible,
        .has_digest = v->has_digest,
    };
    memcpy(q.digest, v->digest, sizeof(q.digest));
    approval_question_encode(out, &q);
}

/* The question's record is not kept (share: refused as over its principal's share): nobody
 * could read the page, so no URL is handed out (fail closed). The store recorded a question
 * asked now as open (ask_start); it is never asked, so it must not hold a place under
 * max_open_confirmations, nor be shared with an identical call. */
void page_not_kept(struct session *s, struct sl_str id, bool modern, struct sl_str tool,
                   const struct gate_verdict *v, bool share, bool own)
{
    char *idc = sl_xstrndup(id.p, id.len);
    session_audit(s, tool, v->has_digest ? v->digest : NULL, AUDIT_REFUSED,
                  share ? "page-over-share" : "page-not-kept", AUDIT_UP_NOT_FORWARDED, idc);
    free(idc);
    if (own)
        store_answered(s->env->store, sl_str_c(s->principal), tool, v->digest, v->ask.nonce);
    session_reply_tool_error(s, id, modern,
                             share ? "This tool needs a person's approval on sluice's approval "
                                     "page, and your questions for the page already take up "
                                     "your share of sluice's room for them (each is kept until "
                                     "its confirmation expires, plus the result retention, "
                                     "answered or not). The call was not run. Try again once "
                                     "older ones have expired."
                                   : "This tool needs a person's approval on sluice's approval "
                                     "page, and sluice could not keep the question for the page "
                                     "(its store is full or unreachable). The call was not run. "
                                     "Try again later.");
}

/* {"resultType":"input_required","inputRequests":{"sluice.confirm":{"method":
 * "elicitation/create","params":{"mode":"url","message":...,"url":...,"elicitationId":...}}},
 * "requestState":...}. 2026-07-28 correlates through the retry's requestState and dropped
 * elicitationId (PROTOCOL.md §3.4); it is sent anyway, as the page's id (already in the URL,
 * so it tells nothing new), because clients that share their URL-mode code with 2025-11-25
 * expect one, and a field a client does not know is ignored. */
static void url_round(struct sl_buf *out, struct sl_str message, struct sl_str url,
                      const uint8_t page_id[APPROVAL_ID_LEN], struct sl_str state)
{
    sl_buf_puts(out, "{\"resultType\":\"input_required\",\"inputRequests\":{\"" GATE_CONFIRM_KEY
                     "\":{\"method\":\"elicitation/create\",\"params\":{\"mode\":\"url\","
                     "\"message\":");
    json_write_string(out, message.p, message.len);
    sl_buf_puts(out, ",\"url\":");
    json_write_string(out, url.p, url.len);
    sl_buf_puts(out, ",\"elicitationId\":\"");
    sl_hex_encode(out, page_id, APPROVAL_ID_LEN);
    sl_buf_puts(out, "\"}}},\"requestState\":");
    json_write_string(out, state.p, state.len);
    sl_buf_putc(out, '}');
}

bool page_ask(struct session *s, struct jsonrpc_msg *m, struct sl_str id, bool modern,
              struct gate_verdict *v)
{
    bool kept = false;
    struct session_env *e = s->env;
    struct sl_str tool = json_get(m->params, "name")->u.str;
    const uint8_t *digest = v->has_digest ? v->digest : NULL;
    char *idc = sl_xstrndup(id.p, id.len);
    if (e->approval_base_url == NULL) {
        session_audit(s, tool, digest, AUDIT_REFUSED, "no-approval-page",
                      AUDIT_UP_NOT_FORWARDED, idc);
        session_reply_tool_error(s, id, modern,
                                 "This tool needs a person's approval on sluice's approval page, "
                                 "and this sluice serves no approval page. The call was not run.");
        free(idc);
        return false;
    }
    if (!v->page_kept) { /* the page's record first: written (a new question), or read back */
        if (v->page_new)
            page_keep_start(s, m, id, modern, v);
        else
            page_look_start(s, m, id, modern, v);
        free(idc);
        return true;
    }
    struct sl_buf url = { 0 }, name = { 0 }, text = { 0 }, out = { 0 };
    approval_url(&url, e->approval_base_url, v->page_id);
    if (v->page_new && e->on_page_pending)
        e->on_page_pending(e->on_page_pending_arg, e->gate->server_name, tool,
                           sl_str_c(s->principal), sl_buf_str(&url), v->page_exp);
    confirm_neutralize(&name, tool, 128);
    bool url_mode = can_elicit_url(s, m, modern);
    if (url_mode)
        sl_buf_printf(&text, "A person must approve this call of %s on sluice's approval page. "
                             "Open the page, approve or decline there, then continue.", name.p);
    if (url_mode && !modern && held_count(s) < SESSION_MAX_HELD) {
        /* held while the page decides; held_start_page journals it as asked */
        held_start_page(s, m, id, v, sl_buf_str(&text), sl_buf_str(&url));
        kept = true;
        goto out;
    }
    session_audit(s, tool, digest, AUDIT_ASKED, v->page_new ? "page" : "page-pending",
                  AUDIT_UP_NOT_FORWARDED, idc);
    if (url_mode && modern) {
        url_round(&out, sl_buf_str(&text), sl_buf_str(&url), v->page_id, sl_buf_str(&v->state));
    } else {
        sl_buf_reset(&text);
        sl_buf_printf(&text, "This call of %s needs a person's approval on sluice's approval "
                             "page: %s . It was not run. Once it is approved there, call the "
                             "tool again with exactly the same arguments and with "
                             "params._meta.%s set to this state, and it runs once: ",
                      name.p, url.p, GATE_TOKEN_META);
        sl_buf_put(&text, v->state.p, v->state.len);
        struct gate_verdict shown = { .action = GATE_REFUSE };
        shown.text = text;
        shown.token = v->state;
        msg_verdict_result(&out, &shown, modern);
    }
    session_reply_result(s, id, sl_buf_str(&out));
out:
    sl_buf_free(&out);
    sl_buf_free(&text);
    sl_buf_free(&name);
    sl_buf_free(&url);
    free(idc);
    return kept;
}
