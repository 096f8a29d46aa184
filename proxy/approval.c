/* approval.c: the approval page's ids, CSRF tokens, records, form and HTML (approval.h). */
#include "approval.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "confirm.h"
#include "json.h"
#include "jsonrpc.h"

/* ===== ids and tokens ===== */

void approval_page_id(const struct seal_keyring *kr, const struct seal_claims *c,
                      uint8_t id[APPROVAL_ID_LEN])
{
    uint8_t mac[32];
    seal_mac_key(kr, c->key, "sluice approval page id v1", c->nonce, SEAL_NONCE_LEN, mac);
    memcpy(id, mac, APPROVAL_ID_LEN);
}

void approval_url(struct sl_buf *out, const char *base, const uint8_t id[APPROVAL_ID_LEN])
{
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    sl_buf_put(out, base, bl);
    sl_buf_puts(out, APPROVAL_PATH);
    sl_hex_encode(out, id, APPROVAL_ID_LEN);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int approval_id_from_path(struct sl_str path, uint8_t id[APPROVAL_ID_LEN])
{
    const size_t pl = sizeof(APPROVAL_PATH) - 1;
    if (path.len != pl + 2 * APPROVAL_ID_LEN || memcmp(path.p, APPROVAL_PATH, pl) != 0)
        return -1;
    for (size_t i = 0; i < APPROVAL_ID_LEN; i++) {
        int hi = hexval(path.p[pl + 2 * i]), lo = hexval(path.p[pl + 2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        id[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* The token under key `key` of the ring (seal_mac_key). */
static void csrf_under(const struct seal_keyring *kr, unsigned key,
                       const uint8_t id[APPROVAL_ID_LEN], struct sl_str approver,
                       char out[APPROVAL_CSRF_HEX + 1])
{
    /* id, then the principal: the id has a fixed length, so the two cannot run together. */
    struct sl_buf m = { 0 }, hex = { 0 };
    sl_buf_put(&m, id, APPROVAL_ID_LEN);
    sl_buf_put(&m, approver.p ? approver.p : "", approver.len);
    uint8_t mac[32];
    seal_mac_key(kr, key, "sluice approval csrf v1", m.p, m.len, mac);
    sl_hex_encode(&hex, mac, sizeof(mac));
    memcpy(out, hex.p, APPROVAL_CSRF_HEX);
    out[APPROVAL_CSRF_HEX] = '\0';
    sl_buf_free(&m);
    sl_buf_free(&hex);
}

void approval_csrf(const struct seal_keyring *kr, const uint8_t id[APPROVAL_ID_LEN],
                   struct sl_str approver, char out[APPROVAL_CSRF_HEX + 1])
{
    csrf_under(kr, 0, id, approver, out);
}

/* Under either key of the ring: a page a replica still on the old key showed (or this process
 * before a rotation) posts to one where the new key seals. */
bool approval_csrf_ok(const struct seal_keyring *kr, const uint8_t id[APPROVAL_ID_LEN],
                      struct sl_str approver, struct sl_str token)
{
    bool ok = false;
    for (unsigned k = 0; k < seal_keyring_len(kr); k++) {
        char want[APPROVAL_CSRF_HEX + 1];
        csrf_under(kr, k, id, approver, want);
        ok |= token.len == APPROVAL_CSRF_HEX &&
              CRYPTO_memcmp(want, token.p, APPROVAL_CSRF_HEX) == 0;
    }
    return ok;
}

/* ===== records ===== */

void approval_question_encode(struct sl_buf *out, const struct approval_question *q)
{
    sl_buf_puts(out, "{\"server\":");
    json_write_string(out, q->server.p ? q->server.p : "", q->server.len);
    sl_buf_puts(out, ",\"tool\":");
    json_write_string(out, q->tool.p ? q->tool.p : "", q->tool.len);
    sl_buf_puts(out, ",\"caller\":");
    json_write_string(out, q->caller.p ? q->caller.p : "", q->caller.len);
    sl_buf_puts(out, ",\"text\":");
    json_write_string(out, q->text.p ? q->text.p : "", q->text.len);
    sl_buf_printf(out, ",\"exp\":%llu,\"irreversible\":%s,\"args_sha256\":",
                  (unsigned long long)q->exp, q->irreversible ? "true" : "false");
    if (q->has_digest) {
        sl_buf_putc(out, '"');
        sl_hex_encode(out, q->digest, sizeof(q->digest));
        sl_buf_puts(out, "\"}");
    } else {
        sl_buf_puts(out, "null}");
    }
}

/* "args_sha256": 64 lowercase hex digits, null, or absent (an older record): false when it is
 * anything else. */
static bool digest_member(const struct json *o, struct approval_question *q)
{
    const struct json *v = json_get(o, "args_sha256");
    q->has_digest = false;
    if (v == NULL || v->type == JSON_NULL)
        return true;
    if (v->type != JSON_STRING || v->u.str.len != 2 * sizeof(q->digest))
        return false;
    for (size_t i = 0; i < sizeof(q->digest); i++) {
        int hi = hexval(v->u.str.p[2 * i]), lo = hexval(v->u.str.p[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        q->digest[i] = (uint8_t)(hi << 4 | lo);
    }
    q->has_digest = true;
    return true;
}

static bool str_member(const struct json *o, const char *key, struct sl_str *out)
{
    const struct json *v = json_get(o, key);
    if (v == NULL || v->type != JSON_STRING)
        return false;
    *out = v->u.str;
    return true;
}

int approval_question_decode(struct sl_str blob, struct sl_arena *a, struct approval_question *q)
{
    struct json *o;
    char err[64];
    if (json_parse(blob.p, blob.len, a, &o, err, sizeof(err)) != 0 || o->type != JSON_OBJECT)
        return -1;
    const struct json *exp = json_get(o, "exp"), *irr = json_get(o, "irreversible");
    if (!str_member(o, "server", &q->server) || !str_member(o, "tool", &q->tool) ||
        !str_member(o, "caller", &q->caller) || !str_member(o, "text", &q->text) ||
        exp == NULL || exp->type != JSON_NUMBER || irr == NULL || irr->type != JSON_BOOL ||
        !digest_member(o, q))
        return -1;
    q->exp = 0;
    for (size_t i = 0; i < exp->u.num.len; i++) {
        char c = exp->u.num.p[i];
        if (c < '0' || c > '9' || i >= 19)
            return -1;
        q->exp = q->exp * 10 + (uint64_t)(c - '0');
    }
    q->irreversible = irr->u.b;
    return 0;
}

void approval_decision_encode(struct sl_buf *out, enum approval_decision d, struct sl_str approver)
{
    sl_buf_puts(out, d == APPROVAL_APPROVED ? "approved\n" : "declined\n");
    sl_buf_put(out, approver.p ? approver.p : "", approver.len);
}

int approval_decision_decode(struct sl_str blob, enum approval_decision *d,
                             struct sl_str *approver)
{
    static const char a[] = "approved\n", n[] = "declined\n";
    const size_t l = sizeof(a) - 1;
    if (blob.len < l)
        return -1;
    if (memcmp(blob.p, a, l) == 0)
        *d = APPROVAL_APPROVED;
    else if (memcmp(blob.p, n, l) == 0)
        *d = APPROVAL_DECLINED;
    else
        return -1;
    *approver = (struct sl_str){ blob.p + l, blob.len - l };
    return 0;
}

/* ===== who may decide ===== */

enum approval_who approval_may_decide(const struct policy_decision *d, struct sl_str caller,
                                      struct sl_str approver)
{
    /* The caller is never an approver of its own call by a pattern: only self_approve says so. */
    if (sl_str_eq(caller, approver))
        return d->self_approve ? APPROVAL_MAY : APPROVAL_SELF;
    if (memchr(approver.p, '\0', approver.len) != NULL)
        return APPROVAL_NOT_APPROVER;
    for (size_t i = 0; i < d->napprovers; i++)
        if (policy_principal_match(d->approvers[i], approver.p, approver.len))
            return APPROVAL_MAY;
    return APPROVAL_NOT_APPROVER;
}

/* ===== the form ===== */

/* Percent-decodes s ('+' is a space) into out. false on a broken escape. */
static bool form_decode(struct sl_buf *out, struct sl_str s)
{
    for (size_t i = 0; i < s.len; i++) {
        char c = s.p[i];
        if (c == '+') {
            sl_buf_putc(out, ' ');
        } else if (c == '%') {
            if (i + 2 >= s.len)
                return false;
            int hi = hexval((char)(s.p[i + 1] | 0x20)), lo = hexval((char)(s.p[i + 2] | 0x20));
            if (hi < 0 || lo < 0)
                return false;
            sl_buf_putc(out, (char)(hi << 4 | lo));
            i += 2;
        } else {
            sl_buf_putc(out, c);
        }
    }
    return true;
}

/* a and b, host[:port] each, are the same authority: equal ignoring case, or equal once the
 * scheme's default port is taken off (":443" for https, else ":80"); two IPv6 literals by
 * address (http1_authority_same), since a browser sends its own form of the one it was given. */
static bool authority_eq(bool https, struct sl_str a, struct sl_str b)
{
    const char *dflt = https ? ":443" : ":80";
    size_t dl = strlen(dflt);
    struct sl_str *v[2] = { &a, &b };
    for (size_t i = 0; i < 2; i++)
        if (v[i]->len > dl && memcmp(v[i]->p + v[i]->len - dl, dflt, dl) == 0)
            v[i]->len -= dl;
    return a.len > 0 && http1_authority_same(a, b);
}

/* Splits "http(s)://AUTHORITY" (a path after it only when path_ok) into *https and *auth.
 * false when s is not that (Origin "null", another scheme, no authority). */
static bool split_origin(struct sl_str s, bool path_ok, bool *https, struct sl_str *auth)
{
    static const char http[] = "http://", https_[] = "https://";
    size_t skip = s.len >= 7 && strncasecmp(s.p, http, 7) == 0     ? 7
                  : s.len >= 8 && strncasecmp(s.p, https_, 8) == 0 ? 8
                                                                   : 0;
    if (skip == 0)
        return false;
    *https = skip == 8;
    *auth = (struct sl_str){ s.p + skip, s.len - skip };
    const char *slash = memchr(auth->p, '/', auth->len);
    if (slash && !path_ok)
        return false;
    if (slash)
        auth->len = (size_t)(slash - auth->p);
    return auth->len > 0;
}

const char approval_refused_fetch_site[] =
    "The browser says this form was sent from another site (Sec-Fetch-Site); nothing was "
    "recorded. Open the approval page itself and decide there.";
const char approval_refused_origin[] =
    "This form was sent from another origin than the approval page's (Origin); nothing was "
    "recorded. Open the approval page itself and decide there.";

/* base_url's scheme and authority: false when there is none (NULL, or not http(s)://). */
static bool base_origin(const char *base_url, bool *https, struct sl_str *auth)
{
    return base_url && split_origin(sl_str_c(base_url), true, https, auth);
}

const char *approval_cross_site(const struct http1_head *h, const char *base_url, bool local)
{
    struct sl_str site, origin, host, auth, base_auth;
    bool https, base_https;
    int n = http1_header(h, "sec-fetch-site", &site);
    if (n < 0 || (n == 1 && !sl_str_eq_c(site, "same-origin") && !sl_str_eq_c(site, "none")))
        return approval_refused_fetch_site;
    n = http1_field(h, HTTP1_ORIGIN, &origin);
    /* "null" is an origin withheld, not another one: the page's own Referrer-Policy:
     * no-referrer makes a browser send it with the page's own form (Fetch, "serializing a
     * request origin"); Sec-Fetch-Site and the token decide then. */
    if (n == 0 || (n == 1 && sl_str_eq_c(origin, "null")))
        return NULL;
    if (n != 1 || !split_origin(origin, false, &https, &auth))
        return approval_refused_origin;
    /* Not the request's Host as such: a rebinding site names its own host in both. */
    if (base_origin(base_url, &base_https, &base_auth) && base_https == https &&
        authority_eq(https, auth, base_auth))
        return NULL;
    /* The page opened as localhost over loopback: its origin is that Host, which
     * approval_host_ok let through only as one of this machine's names. */
    if (local && http1_authority_is_local(auth) && http1_header(h, "host", &host) == 1 &&
        authority_eq(https, auth, host))
        return NULL;
    return approval_refused_origin;
}

const char approval_refused_host[] =
    "This page is served only at its configured address (--approval-base-url), or over "
    "loopback under this machine's own name (localhost, 127.0.0.1, [::1]): the Host this "
    "request names may be another site's, which a DNS answer pointed here. Nothing was shown "
    "or recorded.";

bool approval_host_ok(const struct http1_head *h, const char *base_url, bool local)
{
    struct sl_str host, base_auth;
    bool base_https;
    if (http1_header(h, "host", &host) != 1)
        return false;
    if (local && http1_authority_is_local(host))
        return true;
    return base_origin(base_url, &base_https, &base_auth) &&
           authority_eq(base_https, base_auth, host);
}

bool approval_form_type(struct sl_str ctype)
{
    static const char type[] = "application/x-www-form-urlencoded";
    const size_t tl = sizeof(type) - 1;
    if (ctype.len < tl || strncasecmp(ctype.p, type, tl) != 0)
        return false;
    size_t i = tl;
    while (i < ctype.len && (ctype.p[i] == ' ' || ctype.p[i] == '\t'))
        i++;
    return i == ctype.len || ctype.p[i] == ';';
}

int approval_form_parse(struct sl_str body, enum approval_decision *d, struct sl_buf *csrf)
{
    if (body.len > APPROVAL_FORM_MAX)
        return -1;
    bool have_d = false, have_c = false;
    int rc = 0;
    size_t i = 0;
    while (rc == 0 && i < body.len) {
        size_t e = i;
        while (e < body.len && body.p[e] != '&')
            e++;
        struct sl_str field = { body.p + i, e - i };
        const char *eq = field.len ? memchr(field.p, '=', field.len) : NULL;
        struct sl_buf k = { 0 }, v = { 0 };
        if (eq == NULL ||
            !form_decode(&k, (struct sl_str){ field.p, (size_t)(eq - field.p) }) ||
            !form_decode(&v, (struct sl_str){ eq + 1, field.len - (size_t)(eq - field.p) - 1 })) {
            rc = field.len == 0 ? 0 : -1;
        } else if (sl_str_eq_c(sl_buf_str(&k), "decision")) {
            if (have_d || (!sl_str_eq_c(sl_buf_str(&v), "approve") &&
                           !sl_str_eq_c(sl_buf_str(&v), "decline")))
                rc = -1;
            else
                *d = sl_str_eq_c(sl_buf_str(&v), "approve") ? APPROVAL_APPROVED
                                                            : APPROVAL_DECLINED;
            have_d = true;
        } else if (sl_str_eq_c(sl_buf_str(&k), "csrf")) {
            if (have_c)
                rc = -1;
            else
                sl_buf_put(csrf, v.p ? v.p : "", v.len);
            have_c = true;
        }
        sl_buf_free(&k);
        sl_buf_free(&v);
        i = e + 1;
    }
    return rc == 0 && have_d && have_c ? 0 : -1;
}

/* ===== HTML ===== */

void approval_headers(struct sl_buf *out, const char *style_nonce)
{
    sl_buf_printf(out,
                  "Content-Security-Policy: default-src 'none'; style-src 'nonce-%s'; "
                  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'\r\n"
                  "X-Frame-Options: DENY\r\n"
                  "Cache-Control: no-store\r\n"
                  "Referrer-Policy: no-referrer\r\n"
                  "X-Content-Type-Options: nosniff\r\n",
                  style_nonce);
}

void approval_html_escape(struct sl_buf *out, struct sl_str s)
{
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.p[i];
        switch (c) {
        case '&': sl_buf_puts(out, "&amp;"); break;
        case '<': sl_buf_puts(out, "&lt;"); break;
        case '>': sl_buf_puts(out, "&gt;"); break;
        case '"': sl_buf_puts(out, "&quot;"); break;
        case '\'': sl_buf_puts(out, "&#39;"); break;
        default:
            if ((c < 0x20 && c != '\n') || c == 0x7f)
                sl_buf_printf(out, "&#x%02x;", c); /* shown, never acted on */
            else
                sl_buf_putc(out, (char)c);
        }
    }
}

static void page_open(struct sl_buf *out, const char *title, const char *style_nonce)
{
    sl_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width\">"
                     "<meta name=\"referrer\" content=\"no-referrer\"><title>");
    approval_html_escape(out, sl_str_c(title));
    sl_buf_printf(out, " - sluice</title><style nonce=\"%s\">", style_nonce);
    sl_buf_puts(out, "body{font-family:sans-serif;max-width:50em;margin:2em auto;padding:0 1em}"
                     "pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;"
                     "padding:1em;border:1px solid #ccc}th{text-align:left;padding-right:1em}"
                     ".irr{color:#a00;font-weight:bold}button{font-size:1.1em;margin-right:1em;"
                     "padding:.4em 1.2em}</style></head><body>\n<h1>");
    approval_html_escape(out, sl_str_c(title));
    sl_buf_puts(out, "</h1>\n");
}

/* value (a server's, a tool's or a caller's name) neutralized as the question is (confirm.c): a
 * bidi control or an invisible character in it shows as its escape, not as what it does. */
static void row(struct sl_buf *out, const char *name, struct sl_str value)
{
    struct sl_buf shown = { 0 };
    confirm_neutralize(&shown, value, 0);
    sl_buf_puts(out, "<tr><th>");
    sl_buf_puts(out, name);
    sl_buf_puts(out, "</th><td>");
    approval_html_escape(out, sl_buf_str(&shown));
    sl_buf_puts(out, "</td></tr>\n");
    sl_buf_free(&shown);
}

void approval_render(struct sl_buf *out, const struct approval_question *q, uint64_t now,
                     const char *csrf, const char *style_nonce)
{
    page_open(out, "Approve a tool call", style_nonce);
    sl_buf_puts(out, "<table>\n");
    row(out, "Server", q->server);
    row(out, "Tool", q->tool);
    row(out, "Asked by", q->caller);
    char left[64];
    uint64_t s = q->exp > now ? q->exp - now : 0;
    snprintf(left, sizeof(left), "%llu s", (unsigned long long)s);
    row(out, "Time left", sl_str_c(left));
    sl_buf_puts(out, q->irreversible ? "<tr><th>Irreversible</th><td class=\"irr\">yes: its "
                                       "effect cannot be undone</td></tr>\n"
                                     : "<tr><th>Irreversible</th><td>no</td></tr>\n");
    sl_buf_puts(out, "</table>\n<p>The call, with every argument exactly as it will be "
                     "forwarded:</p>\n<pre>");
    approval_html_escape(out, q->text);
    sl_buf_puts(out, "</pre>\n");
    if (csrf) {
        sl_buf_puts(out, "<form method=\"post\"><input type=\"hidden\" name=\"csrf\" value=\"");
        approval_html_escape(out, sl_str_c(csrf));
        sl_buf_puts(out, "\"><button type=\"submit\" name=\"decision\" value=\"approve\">Approve"
                         "</button><button type=\"submit\" name=\"decision\" value=\"decline\">"
                         "Decline</button></form>\n<p>Approving runs this exact call once.</p>\n");
    }
    sl_buf_puts(out, "</body></html>\n");
}

void approval_render_notice(struct sl_buf *out, const char *title, struct sl_str text,
                            const char *style_nonce)
{
    page_open(out, title, style_nonce);
    sl_buf_puts(out, "<p>");
    approval_html_escape(out, text);
    sl_buf_puts(out, "</p>\n</body></html>\n");
}
