/* approval.h: sluice's own approval page, the pure part (no I/O, no clock of its own).
 *
 * A tool with `approval: page` (or `client-or-page` / `fallback: page` for a client that cannot
 * ask) is not asked through the caller's client: its question goes to a page sluice serves at
 * /approve/<id>, where a person allowed by the policy (approvers:, self_approve:) approves or
 * declines it. The page id is a MAC of the question's state nonce under the state key that
 * sealed it, so it is unguessable, tied to one state, and any replica holding the key computes
 * the same one, after a rotation too; the nonce itself never leaves the sealed state.
 *
 * The store keeps two records per page (store.h, STORE_PAGE_QUESTION / STORE_PAGE_DECISION):
 * what the page shows (approval_question_encode) and the one decision (approval_decision_encode,
 * written set-if-absent, so a second decision is refused and every replica sees the first).
 *
 * The page has no JavaScript. Approve and Decline are one POST form carrying a CSRF token, a MAC
 * of the page id and the approver's principal: a form posted from another site cannot know it,
 * and a token shown to one principal is worth nothing to another. Every response carries
 * approval_headers (strict CSP, no framing, no caching, no referrer). */
#ifndef SL_APPROVAL_H
#define SL_APPROVAL_H

#include "base.h"
#include "http1.h"
#include "policy.h"
#include "seal.h"

#define APPROVAL_ID_LEN   16
#define APPROVAL_PATH     "/approve/"
#define APPROVAL_CSRF_HEX 64
#define APPROVAL_FORM_MAX 512   /* bytes of a decision form body */

/* The id of the page for the state c: a MAC of its nonce under the key that sealed it (c->key,
 * which seal_open sets), not the current one, so that a key rotated while the question is
 * pending leaves the page under the id it was stored and handed out with. */
void approval_page_id(const struct seal_keyring *kr, const struct seal_claims *c,
                      uint8_t id[APPROVAL_ID_LEN]);
/* base (no trailing '/' needed) + "/approve/" + the id in lowercase hex, appended to out. */
void approval_url(struct sl_buf *out, const char *base, const uint8_t id[APPROVAL_ID_LEN]);
/* The id from a request path: "/approve/" and exactly 32 lowercase hex digits. 0 or -1. */
int approval_id_from_path(struct sl_str path, uint8_t id[APPROVAL_ID_LEN]);

/* The CSRF token of page id for approver, as NUL-terminated hex. */
void approval_csrf(const struct seal_keyring *kr, const uint8_t id[APPROVAL_ID_LEN],
                   struct sl_str approver, char out[APPROVAL_CSRF_HEX + 1]);
/* Constant-time check of token against approval_csrf, under the current or the previous key:
 * a page shown before a rotation, or by a replica not yet rotated, still posts. */
bool approval_csrf_ok(const struct seal_keyring *kr, const uint8_t id[APPROVAL_ID_LEN],
                      struct sl_str approver, struct sl_str token);

/* What the page shows, as the store keeps it. Slices borrow the decoded blob's arena. */
struct approval_question {
    struct sl_str server, tool, caller;
    struct sl_str text;      /* the question as confirm.c renders it for the page: every
                              * argument, every value whole up to 128 KiB (confirm_call's whole) */
    uint64_t exp;            /* unix seconds: the state's expiry */
    bool irreversible;
    bool has_digest;         /* the arguments' digest (gate_args_digest), which the state binds
                              * and the journal names the call by: the decision's record says
                              * which arguments were approved */
    uint8_t digest[32];
};
void approval_question_encode(struct sl_buf *out, const struct approval_question *q);
/* 0, or -1 when blob is not one approval_question_encode wrote. a owns what q points at. A
 * record without "args_sha256" (one an older sluice wrote) decodes without a digest. */
int approval_question_decode(struct sl_str blob, struct sl_arena *a, struct approval_question *q);

enum approval_decision { APPROVAL_APPROVED, APPROVAL_DECLINED };
/* "approved\n<approver>" or "declined\n<approver>". */
void approval_decision_encode(struct sl_buf *out, enum approval_decision d, struct sl_str approver);
int approval_decision_decode(struct sl_str blob, enum approval_decision *d,
                             struct sl_str *approver);

/* Whether approver may decide a call of caller's under decision d (the tool's policy). */
enum approval_who {
    APPROVAL_MAY,          /* an approver, or the caller with self_approve */
    APPROVAL_SELF,         /* the caller, without self_approve */
    APPROVAL_NOT_APPROVER, /* matches none of approvers: */
};
enum approval_who approval_may_decide(const struct policy_decision *d, struct sl_str caller,
                                      struct sl_str approver);

/* Defense in depth beside the CSRF token, for a POST to the page: whether the browser's own
 * headers say it comes from another site. NULL when not (and when they are absent: curl and
 * older browsers go by the token alone), else a short reason to refuse with (403):
 * Sec-Fetch-Site present with a value other than same-origin or none, or Origin present with
 * another scheme://host[:port] than base_url's (the address people open, NULL for none), or,
 * on a loopback connection (local), than the request's Host when that is one of this
 * machine's names. Not any Host: a site a DNS answer pointed here names its own host as both.
 * Either header given twice is a refusal too. A default port (:80 for http, :443 for https)
 * written or left out is the same. Origin "null" counts as absent: browsers send it for the
 * page's own form, whose Referrer-Policy is no-referrer. */
const char *approval_cross_site(const struct http1_head *h, const char *base_url, bool local);
/* Its two reasons, to tell apart by address. */
extern const char approval_refused_fetch_site[], approval_refused_origin[];

/* Against DNS rebinding, for every request to the page: whether its Host is base_url's
 * authority (NULL: none), or, on a connection that came in on a loopback address (local,
 * http_conn_local: a wildcard listener too), one of this machine's names
 * (http1_authority_is_local). A foreign page whose name came to resolve to sluice's address
 * (127.0.0.1 or a LAN one alike) is same-origin with what it fetched there: its Origin would
 * match its Host, and it could read the form's token. It cannot make its Host one of these. A
 * proxy in front passes on the Host people opened, base_url's, or listens on loopback. */
bool approval_host_ok(const struct http1_head *h, const char *base_url, bool local);
extern const char approval_refused_host[];

/* Whether a Content-Type value (without surrounding SP/HTAB) is the form's media type:
 * application/x-www-form-urlencoded in any case, then only optional SP/HTAB and ';' parameters
 * (RFC 9110 §8.3.1). A longer type that merely starts so ("...urlencodedXYZ") is not. */
bool approval_form_type(struct sl_str ctype);

/* An application/x-www-form-urlencoded body with decision=approve|decline and csrf=<token>
 * (each exactly once; other fields are ignored). 0, or -1 when it is not one. The token is
 * appended to csrf. */
int approval_form_parse(struct sl_str body, enum approval_decision *d, struct sl_buf *csrf);

/* The headers of every response under /approve/ (each line ends in CRLF). style_nonce is the
 * response's nonce for its one inline style. */
void approval_headers(struct sl_buf *out, const char *style_nonce);

/* The page for q, at now, with the form for csrf (NULL: no form, e.g. for someone who may not
 * decide). Every value is HTML-escaped; the question text is shown whole, in a <pre>. */
void approval_render(struct sl_buf *out, const struct approval_question *q, uint64_t now,
                     const char *csrf, const char *style_nonce);
/* A short page: a title and one paragraph (escaped), for outcomes and refusals. */
void approval_render_notice(struct sl_buf *out, const char *title, struct sl_str text,
                            const char *style_nonce);

/* Appends p[0..len) HTML-escaped (& < > " ' and control characters other than newline). */
void approval_html_escape(struct sl_buf *out, struct sl_str s);

#endif /* SL_APPROVAL_H */
