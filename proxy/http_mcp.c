/* http_mcp.c: a request to /mcp (PROTOCOL.md §5.2, §5.3). Checked first: the Origin (DNS
 * rebinding), readiness, the principal; then a POST's media types, its body, and, for
 * 2026-07-28, the headers that mirror the body (the body is the truth; a header that disagrees
 * is refused, so a router in front cannot be shown one call while another runs). Then the era
 * decides: a modern request gets a session of its own for this one exchange; a legacy
 * one goes to its session (http_sessions.c). */
#include "http_priv.h"

#include <string.h>
#include <strings.h>

#include "era.h"
#include "log.h"
#include "metrics.h"
#include "params.h"

/* ===== the request's headers ===== */

/* Whether Origin v is http(s)://localhost, 127.0.0.1 or [::1], with any port or none. A page
 * served from this machine may talk to a sluice that only this machine can reach; DNS
 * rebinding gives a foreign page another host name in its Origin, never these. */
static bool origin_is_local(struct sl_str v)
{
    static const char *const schemes[] = { "http://", "https://" };
    for (size_t i = 0; i < SL_ARRAY_LEN(schemes); i++) {
        size_t sl = strlen(schemes[i]);
        if (v.len >= sl && strncasecmp(v.p, schemes[i], sl) == 0)
            return http1_authority_is_local((struct sl_str){ v.p + sl, v.len - sl });
    }
    return false;
}

static bool origin_allowed(const struct front_http *fh, const struct http1_head *h)
{
    struct sl_str v;
    int n = http1_field(h, HTTP1_ORIGIN, &v);
    if (n == 0)
        return true; /* not a browser */
    if (n < 0)
        return false;
    for (size_t i = 0; i < fh->o.norigins; i++)
        if (sl_str_eq_c(v, fh->o.origins[i]))
            return true;
    return fh->loopback && origin_is_local(v);
}

bool http_accepts(struct sl_str accept, const char *type, const char *major)
{
    return http1_list_has(accept, type) || http1_list_has(accept, major) ||
           http1_list_has(accept, "*/*");
}

/* A POST must send JSON and take both JSON and an event stream back. Returns whether it does;
 * if not, the refusal is answered. */
static bool post_media_ok(struct conn *c, const struct http1_head *h)
{
    struct sl_str v;
    if (http1_field(h, HTTP1_CONTENT_TYPE, &v) != 1 || !http1_list_has(v, "application/json")) {
        conn_respond_rpc_error(c, 415, NULL, JSONRPC_INVALID_REQUEST,
                               "Unsupported Media Type: Content-Type must be application/json",
                               NULL);
        return false;
    }
    if (http1_field(h, HTTP1_ACCEPT, &v) != 1 ||
        !http_accepts(v, "application/json", "application/*") ||
        !http_accepts(v, "text/event-stream", "text/*")) {
        conn_respond_rpc_error(c, 406, NULL, JSONRPC_INVALID_REQUEST,
                               "Not Acceptable: Accept must list application/json and "
                               "text/event-stream",
                               NULL);
        return false;
    }
    return true;
}

/* ===== modern: the headers mirror the body ===== */

/* Header values that mirror the body: "=?base64?...?=" is decoded first. */
/* NULL when header f is there once and equals body; else the refusal's message: missing when
 * the client did not send it (a person reading "does not match" looks for a wrong value), differs
 * when it carries another value or comes twice. */
static const char *header_refusal(const struct http1_head *h, enum http1_field f,
                                  struct sl_str body, const char *missing, const char *differs)
{
    struct sl_str v;
    int n = http1_field(h, f, &v);
    if (n == 0)
        return missing;
    return n == 1 && params_header_equals(v, body) ? NULL : differs;
}

/* The params key Mcp-Name mirrors for method, or NULL when it has none. */
static const char *mirrored_name_key(struct sl_str method)
{
    if (sl_str_eq_c(method, "tools/call") || sl_str_eq_c(method, "prompts/get"))
        return "name";
    if (sl_str_eq_c(method, "resources/read"))
        return "uri";
    return NULL;
}

/* params_check's header lookup: arg is the request's head. */
static int lookup_header(const char *name, struct sl_str *value, void *arg)
{
    return http1_header(arg, name, value);
}

/* The first header that disagrees with the body (Mcp-Param-* too, for the tools whose schemas
 * mark arguments), as the refusal's message; NULL when all agree. */
static const char *mirror_mismatch(struct front_http *fh, const struct http1_head *h,
                                   const struct jsonrpc_msg *m,
                                   const struct era_envelope *env)
{
    const char *why = header_refusal(
        h, HTTP1_MCP_PROTOCOL_VERSION, sl_str_c(env->version),
        "Header missing: MCP-Protocol-Version (it must repeat the request's _meta protocolVersion)",
        "Header mismatch: MCP-Protocol-Version does not match the request's _meta "
        "protocolVersion");
    if (why == NULL)
        why = header_refusal(h, HTTP1_MCP_METHOD, m->method,
                             "Header missing: Mcp-Method (it must repeat the body's method)",
                             "Header mismatch: Mcp-Method does not match the body's method");
    const char *key = mirrored_name_key(m->method);
    if (why || key == NULL)
        return why;
    const struct json *v = json_get(m->params, key);
    if (v == NULL || v->type != JSON_STRING)
        return "Header mismatch: Mcp-Name does not match the body";
    why = header_refusal(h, HTTP1_MCP_NAME, v->u.str,
                         "Header missing: Mcp-Name (it must repeat the body's name)",
                         "Header mismatch: Mcp-Name does not match the body");
    if (why == NULL && sl_str_eq_c(m->method, "tools/call"))
        return params_check(upstream_params(fh->env->up), v->u.str,
                            json_get(m->params, "arguments"), lookup_header, (void *)h);
    return why;
}

/* Reads the era from the body's envelope (into env) and holds the request to its rules: a
 * modern envelope must be valid and its headers must mirror the body; a request without one
 * must not claim 2026-07-28 in its header alone. Returns whether it passes; if not, sets the
 * JSON-RPC code, the message why, and data (JSON text, or left empty). */
static bool era_rules_met(struct front_http *fh, const struct http1_head *h,
                          const struct jsonrpc_msg *m, struct era_envelope *env, int *code,
                          const char **why, struct sl_buf *data)
{
    bool is_call = m->kind == JSONRPC_REQUEST || m->kind == JSONRPC_NOTIFICATION;
    struct sl_str v;
    if (is_call && era_read_envelope(m->params, env, code, why, data) != 0)
        return false;
    if (is_call && env->modern && (*why = mirror_mismatch(fh, h, m, env)) != NULL) {
        *code = MCP_HEADER_MISMATCH;
        return false;
    }
    if (!env->modern && http1_field(h, HTTP1_MCP_PROTOCOL_VERSION, &v) == 1 &&
        sl_str_eq_c(v, ERA_MODERN_VERSION)) {
        *code = JSONRPC_INVALID_PARAMS;
        *why = "Invalid _meta envelope for protocol revision 2026-07-28: "
               "io.modelcontextprotocol/protocolVersion: missing";
        return false;
    }
    return true;
}

/* ===== POST, GET, DELETE ===== */

/* The body as a JSON-RPC message, or NULL with the refusal answered. */
static struct jsonrpc_msg *parse_body(struct conn *c, const char *body, size_t len,
                                      const char *rid)
{
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error perr;
    if (jsonrpc_parse(body, len, &m, &perr) == 0)
        return m;
    sl_info("%s: refused body: %s", rid, perr.msg);
    metrics_request(SL_STR("other"), 400);
    conn_respond_rpc_error(c, 400, perr.id, perr.code,
                           perr.code == JSONRPC_PARSE_ERROR ? "Parse error" : "Invalid Request",
                           NULL);
    return NULL;
}

/* A message's name in metrics and the log: a request's method, else its kind. */
static struct sl_str method_label(const struct jsonrpc_msg *m)
{
    return m->kind == JSONRPC_REQUEST        ? m->method
           : m->kind == JSONRPC_NOTIFICATION ? SL_STR("notification")
                                             : SL_STR("response");
}

/* A modern message: a request starts its exchange and its session (which takes m); a
 * notification is accepted and dropped (none is defined over HTTP). Returns m if not taken. */
static struct jsonrpc_msg *post_modern(struct conn *c, struct jsonrpc_msg *m,
                                       const struct era_envelope *env, const struct sl_buf *id,
                                       struct sl_str method, const char *rid,
                                       const char *principal)
{
    if (m->kind == JSONRPC_NOTIFICATION) {
        metrics_request(method, 202);
        conn_respond(c, 202, NULL, NULL, 0, NULL);
        return m;
    }
    struct xchg *x = xchg_new_modern(c, rid, method, id, principal);
    session_input_modern(x->s, m, env);
    return NULL;
}

/* 503: sluice drains, or its upstream is not ready. */
static void refuse_unavailable(struct conn *c)
{
    const struct front_http *fh = c->fh;
    c->keep_alive = false;
    conn_respond_rpc_error(c, 503, NULL, MCP_SERVER_ERROR,
                           fh->draining      ? "Service Unavailable: shutting down"
                           : fh->unready_why ? fh->unready_why
                                             : "Service Unavailable: upstream not ready",
                           NULL);
}

/* A person's answer to one of sluice's questions, or a client's cancel: what a held call waits
 * for, and neither needs the upstream. While the upstream is not ready they still wait for it
 * first (--upstream-wait: an accepted call can then run on it), and are then taken, not
 * refused: a refusal would lose the answer (clients do not send a response again), and the
 * held call would end at its confirm_ttl as unanswered. */
static bool answers_only(const struct jsonrpc_msg *m)
{
    return m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR ||
           (m->kind == JSONRPC_NOTIFICATION && sl_str_eq_c(m->method, "notifications/cancelled"));
}

static void mcp_post(struct conn *c, const struct http1_head *h, const char *body, size_t len,
                     const char *rid, const char *principal)
{
    struct front_http *fh = c->fh;
    if (!post_media_ok(c, h))
        return;
    struct jsonrpc_msg *m = parse_body(c, body, len, rid);
    if (m == NULL)
        return;
    char idstore[64];
    struct sl_buf idb, data = { 0 };
    sl_buf_on(&idb, idstore, sizeof(idstore));
    if (m->id)
        json_write(&idb, m->id);
    const char *id = idb.len ? idb.p : NULL;
    struct sl_str method = method_label(m);
    struct era_envelope env = { 0 };
    int code = 0;
    const char *why = NULL;
    if (!era_rules_met(fh, h, m, &env, &code, &why, &data)) {
        metrics_request(method, 400);
        sl_info("%s: refused %.*s: %s", rid, (int)method.len, method.p, why);
        conn_respond_rpc_error(c, 400, id, code, why, data.len ? data.p : NULL);
    } else if (fh->draining && (env.modern || m->kind == JSONRPC_REQUEST)) {
        /* New work is refused; answers that let work in flight finish are not (below). */
        c->keep_alive = false;
        conn_refuse_rpc(c, method, 503, id, MCP_SERVER_ERROR,
                        "Service Unavailable: shutting down");
    } else if (!http_serving(fh) &&
               (env.modern ||
                (!answers_only(m) && !http_sessions_gone(fh->sessions, h, principal)))) {
        refuse_unavailable(c); /* a legacy one to a session that is gone: 404 (hsess_post) */
    } else if (env.modern) {
        m = post_modern(c, m, &env, &idb, method, rid, principal);
    } else {
        hsess_post(c, h, m, &idb, method, rid, principal);
        m = NULL;
    }
    jsonrpc_msg_free(m);
    sl_buf_free(&idb);
    sl_buf_free(&data);
}

/* A request may go further when the upstream is ready and we are not draining, except that a
 * POST to an existing session still may (the answer to a held call's question must arrive;
 * mcp_post refuses new requests, and while the upstream is not ready everything but answers),
 * and that while the upstream is not ready a request that needs none still may: one naming a
 * session that is gone gets 404 (the client must initialize again; a 503 would have it retry a
 * session that will never answer), and a DELETE ends its session. Returns whether it was
 * refused (503, answered). */
static bool refused_unavailable(struct conn *c, const struct http1_head *h)
{
    struct front_http *fh = c->fh;
    struct sl_str sid;
    bool answering =
        sl_str_eq_c(h->method, "POST") && http1_field(h, HTTP1_MCP_SESSION_ID, &sid) == 1;
    if (!answering && (fh->draining || (!http_serving(fh) &&
                                        !http_sessions_upstream_unneeded(c, h)))) {
        refuse_unavailable(c);
        return true;
    }
    return false;
}

/* Whether body, a POST to a session whose own upstream is coming, must wait for it: a request
 * (the session takes none before its upstream serves, session.c own_first) or a notification
 * passed on to the server. An answer and a cancellation go on at once: an answer to sluice's
 * question is for a call held in sluice, and a call held there is refused when the upstream
 * goes, so waiting would only keep the person's answer from it; an answer to the server's own
 * question belongs to the server that asked, and the session voids those questions when that
 * server goes (session_relay.c), so it is dropped rather than kept for the next one, which never
 * asked it; a cancellation must end its call now, not once another server is up. A body that
 * does not parse is refused at once (mcp_post). Parsed only for such a session: rare. */
static bool own_wait_needed(const char *body, size_t len)
{
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error perr;
    if (jsonrpc_parse(body, len, &m, &perr) != 0)
        return false;
    bool needed = !answers_only(m);
    jsonrpc_msg_free(m);
    return needed;
}

bool mcp_should_wait(struct conn *c, const struct http1_head *h, const char *body, size_t len)
{
    const struct front_http *fh = c->fh;
    /* A refusal with a reason (strict) is not a wait: nothing will change it soon. Nor is a
     * request to the approval page's own listener, which never serves /mcp (http_route). */
    if (fh->o.upstream_wait_s == 0 || fh->draining || fh->unready_why != NULL ||
        fh->o.approval_only)
        return false;
    bool shared = !http_serving(fh);
    /* Only a POST needs a session's own upstream (its GET stream does not): with one of its own
     * starting, restarting or deaf, its requests wait for the next as others wait for the shared
     * one, rather than fail at once. */
    if (!shared && (fh->env->opener == NULL || !sl_str_eq_c(h->method, "POST")))
        return false;
    if (!sl_str_eq_c(h->path, "/mcp") || !origin_allowed(fh, h))
        return false;
    /* A request that needs no upstream does not wait for the shared one: woken when its session
     * ends (http_sessions.c), one that waited is answered 404 at once, not 503 at its deadline. */
    if (shared)
        return !http_sessions_upstream_unneeded(c, h);
    return http_sessions_own_coming(c, h) && own_wait_needed(body, len);
}

void mcp_handle(struct conn *c, const struct http1_head *h, const char *body, size_t len,
                const char *rid)
{
    struct front_http *fh = c->fh;
    if (!origin_allowed(fh, h)) {
        sl_warn("%s: refused a request from Origin not in --allow-origin", rid);
        return conn_respond_rpc_error(c, 403, NULL, JSONRPC_INVALID_REQUEST,
                                      "Forbidden: Origin not allowed", NULL);
    }
    if (refused_unavailable(c, h))
        return;
    char pstore[160]; /* "bearer:" and a digest's hex, or a short name: no allocation */
    struct sl_buf principal;
    sl_buf_on(&principal, pstore, sizeof(pstore));
    int st = http_principal_of(c, h, &principal);
    if (st) {
        sl_info("%s: no principal (%s)", rid, fh->o.principal == PRINCIPAL_CERT
                                                  ? "no verified client certificate"
                                                  : "no credentials");
        conn_respond_rpc_error(c, st, NULL, MCP_SERVER_ERROR, "Unauthorized", NULL);
    } else if (sl_str_eq_c(h->method, "POST")) {
        mcp_post(c, h, body, len, rid, principal.p);
    } else if (sl_str_eq_c(h->method, "GET")) {
        hsess_get(c, h, rid, principal.p);
    } else if (sl_str_eq_c(h->method, "DELETE")) {
        hsess_delete(c, h, principal.p);
    } else {
        conn_respond_status(c, 405, "Allow: POST, GET, DELETE\r\n");
    }
    sl_buf_free(&principal);
}
